/* Text conversions for trace formats (utf.h). */
#include "utf.h"

#include <stdbool.h>

/* Appends code point cp as UTF-8; false when it does not fit (one byte kept for the NUL). */
static bool put(char *dst, size_t cap, size_t *o, uint32_t cp)
{
	unsigned n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

	if (*o + n + 1 > cap)
		return false;
	if (n == 1) {
		dst[(*o)++] = (char)cp;
		return true;
	}
	for (unsigned i = n - 1; i > 0; i--)
		dst[*o + i] = (char)(0x80 | ((cp >> (6 * (n - 1 - i))) & 0x3f));
	dst[*o] = (char)((0xf00 >> n) | (cp >> (6 * (n - 1))));
	*o += n;
	return true;
}

size_t rasp_utf16le_to_utf8(const uint8_t *src, size_t n, char *dst, size_t cap)
{
	size_t o = 0;

	if (cap == 0)
		return (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8, cp = u;

		if (u >= 0xd800 && u < 0xdc00 && i + 1 < n) {
			uint32_t l = (uint32_t)src[2 * i + 2] | (uint32_t)src[2 * i + 3] << 8;

			if (l >= 0xdc00 && l < 0xe000) {
				cp = 0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00);
				i++;
			} else {
				cp = 0xfffd;
			}
		} else if (u >= 0xd800 && u < 0xe000) {
			cp = 0xfffd; /* a lone surrogate */
		}
		if (cp == 0)
			cp = 0xfffd; /* an embedded NUL would cut the string short */
		if (!put(dst, cap, &o, cp))
			return (size_t)-1;
	}
	dst[o] = '\0';
	return o;
}

size_t rasp_bytes_to_utf8(const uint8_t *src, size_t n, char *dst, size_t cap)
{
	size_t o = 0;

	if (cap == 0)
		return (size_t)-1;
	for (size_t i = 0; i < n;) {
		uint8_t c = src[i];
		size_t len = c < 0x80		      ? 1
			     : c >= 0xc2 && c <= 0xdf ? 2
			     : c >= 0xe0 && c <= 0xef ? 3
			     : c >= 0xf0 && c <= 0xf4 ? 4
						      : 0;
		bool ok = len > 0 && i + len <= n && c != 0;

		for (size_t k = 1; ok && k < len; k++)
			ok = (src[i + k] & 0xc0) == 0x80;
		if (ok && len > 2)
			ok = !(c == 0xe0 && src[i + 1] < 0xa0) &&
			     !(c == 0xed && src[i + 1] >= 0xa0) &&
			     !(c == 0xf0 && src[i + 1] < 0x90) &&
			     !(c == 0xf4 && src[i + 1] >= 0x90);
		if (!ok) {
			if (!put(dst, cap, &o, 0xfffd))
				return (size_t)-1;
			i++;
			continue;
		}
		if (o + len + 1 > cap)
			return (size_t)-1;
		for (size_t k = 0; k < len; k++)
			dst[o++] = (char)src[i + k];
		i += len;
	}
	dst[o] = '\0';
	return o;
}

size_t rasp_utf8_to_utf16le(const char *src, uint8_t *dst, size_t cap)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	while (*s) {
		uint32_t cp;

		/* ASCII (type names mostly are): two bytes a character, nothing to check. */
		if (*s < 0x80) {
			if (o + 2 + 2 > cap)
				return (size_t)-1;
			dst[o++] = *s++;
			dst[o++] = 0;
			continue;
		}
		size_t len = *s < 0x80			? 1
			     : *s >= 0xc2 && *s <= 0xdf ? 2
			     : *s >= 0xe0 && *s <= 0xef ? 3
			     : *s >= 0xf0 && *s <= 0xf4 ? 4
							: 0;
		bool ok = len > 0;

		for (size_t k = 1; ok && k < len; k++)
			ok = (s[k] & 0xc0) == 0x80;
		if (!ok) {
			cp = 0xfffd;
			len = 1;
		} else if (len == 1) {
			cp = s[0];
		} else {
			cp = s[0] & (0x7f >> len);
			for (size_t k = 1; k < len; k++)
				cp = cp << 6 | (s[k] & 0x3f);
			/* Overlongs, surrogates and past U+10FFFF are not characters. */
			if ((len == 3 && cp < 0x800) ||
			    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
			    (cp >= 0xd800 && cp < 0xe000))
				cp = 0xfffd;
		}
		if (cp >= 0x10000) {
			uint32_t v = cp - 0x10000, hi = 0xd800 | v >> 10, lo = 0xdc00 | (v & 0x3ff);

			if (o + 4 + 2 > cap)
				return (size_t)-1;
			dst[o++] = (uint8_t)hi;
			dst[o++] = (uint8_t)(hi >> 8);
			dst[o++] = (uint8_t)lo;
			dst[o++] = (uint8_t)(lo >> 8);
		} else {
			if (o + 2 + 2 > cap)
				return (size_t)-1;
			dst[o++] = (uint8_t)cp;
			dst[o++] = (uint8_t)(cp >> 8);
		}
		s += len;
	}
	if (o + 2 > cap)
		return (size_t)-1;
	dst[o++] = 0;
	dst[o++] = 0;
	return o;
}
