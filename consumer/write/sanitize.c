/* Terminal-safe text (sanitize.h): one decoder of UTF-8, one rule for what a terminal may act
 * on, one way to show it (\xNN per byte). Hand-written: vis(3) of libbsd escapes by the
 * locale's idea of printable, which depends on the user's settings and knows nothing of the
 * bidirectional controls; this is the same for everyone. */
#include "sanitize.h"

#include <stdlib.h>
#include <string.h>

size_t rasp_utf8_next(const char *s, int32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len;
	int32_t c;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		c = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		c = p[0] & 0x07;
	} else {
		goto bad;
	}
	/* A NUL is no continuation byte: the loop stops at it. */
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			goto bad;
		c = c << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms (two-byte ones start with 0xc0 or 0xc1, refused above), surrogates,
	 * past U+10FFFF. */
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || (c >= 0xd800 && c <= 0xdfff) ||
	    c > 0x10ffff)
		goto bad;
	*cp = c;
	return len;
bad:
	*cp = -1;
	return 1;
}

bool rasp_char_unsafe(int32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* The safe text of the character at s into out (at most four escapes of four bytes); the
 * bytes of s it took. */
static size_t safe_char(const char *s, char out[17], size_t *outlen, size_t *width)
{
	static const char hex[] = "0123456789abcdef";
	int32_t cp;
	size_t n = rasp_utf8_next(s, &cp);

	if (!rasp_char_unsafe(cp)) {
		memcpy(out, s, n);
		*outlen = n;
		*width = 1;
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		out[4 * i] = '\\';
		out[4 * i + 1] = 'x';
		out[4 * i + 2] = hex[c >> 4];
		out[4 * i + 3] = hex[c & 15];
	}
	*outlen = *width = 4 * n;
	return n;
}

void rasp_safe_put(FILE *out, const char *s)
{
	char buf[17];
	size_t n, w;

	while (*s) {
		s += safe_char(s, buf, &n, &w);
		fwrite(buf, 1, n, out);
	}
}

size_t rasp_safe_text(char *buf, size_t len, const char *s)
{
	size_t total = 0, used = 0, n, w;
	char c[17];
	bool cut = false;

	while (*s) {
		s += safe_char(s, c, &n, &w);
		/* Once one does not fit, no later (shorter) one is written after the gap. */
		if (!cut && used + n < len) {
			memcpy(buf + used, c, n);
			used += n;
		} else {
			cut = true;
		}
		total += n;
	}
	if (len)
		buf[used] = '\0';
	return total;
}

size_t rasp_safe_width(const char *s)
{
	size_t width = 0, n, w;
	char c[17];

	while (*s) {
		s += safe_char(s, c, &n, &w);
		width += w;
	}
	return width;
}

char *rasp_safe_in_place(char *s, size_t cap)
{
	char *copy;

	if (!cap)
		return s;
	copy = strdup(s);
	if (copy) {
		rasp_safe_text(s, cap, copy);
		free(copy);
		return s;
	}
	/* No memory for a copy: every byte that is not printable ASCII becomes '?'. */
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return s;
}
