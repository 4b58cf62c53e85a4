/* NetTrace payloads (nettrace-payload.h): UTF-16 strings to UTF-8, and events decoded through
 * the descriptors generated from the manifests. */
#include "nettrace-payload.h"

#include <string.h>

#include "cursor.h"
#include "utf.h"

const struct rasp_event_desc *rasp_nt_find_desc(const char *provider, uint32_t id, uint32_t version)
{
	const struct rasp_event_desc *best = NULL;

	for (size_t i = 0; i < rasp_event_ndescs; i++) {
		const struct rasp_event_desc *d = &rasp_event_descs[i];

		if (d->id != id || d->version > version || strcmp(d->provider, provider) != 0)
			continue;
		if (!best || d->version > best->version)
			best = d;
	}
	return best;
}

int rasp_nt_decode(const struct rasp_event_desc *d, const uint8_t *payload, size_t len,
		   uint32_t pointer_size, union rasp_nt_value *vals, char *strbuf, size_t strcap)
{
	struct rasp_cursor c = rasp_cursor_make(payload, len, 0);
	size_t used = 0;

	for (size_t i = 0; i < d->nfields; i++) {
		enum rasp_field_type t = d->fields[i].type;
		size_t n;

		if (d->fields[i].count >= 0) {
			/* The count field comes earlier and has been decoded. */
			uint64_t count = vals[d->fields[i].count].u;

			n = rasp_nt_field_size(t, pointer_size);
			if (count > rasp_cursor_left(&c) / n)
				return -1;
			vals[i].p = rasp_cursor_take(&c, (size_t)count * n);
			continue;
		}
		if (t == RASP_FT_UTF16Z || t == RASP_FT_ANSIZ) {
			size_t unit = t == RASP_FT_UTF16Z ? 2 : 1, k = 0, out;
			const uint8_t *start = payload + c.pos;
			size_t left = rasp_cursor_left(&c);

			/* The terminator, within the payload. */
			while (k + unit <= left && (start[k] | (unit == 2 ? start[k + 1] : 0)))
				k += unit;
			if (k + unit > left)
				return -1;
			out = unit == 2
				  ? rasp_utf16le_to_utf8(start, k / 2, strbuf + used, strcap - used)
				  : rasp_bytes_to_utf8(start, k, strbuf + used, strcap - used);
			if (out == (size_t)-1)
				return -1;
			vals[i].s = strbuf + used;
			used += out + 1;
			rasp_cursor_skip(&c, k + unit);
			continue;
		}
		n = rasp_nt_field_size(t, pointer_size);
		if (!rasp_cursor_uint_le(&c, n, &vals[i].u))
			return -1;
		switch (t) {
		case RASP_FT_I8:
			vals[i].i = (int8_t)vals[i].u;
			break;
		case RASP_FT_I16:
			vals[i].i = (int16_t)vals[i].u;
			break;
		case RASP_FT_I32:
			vals[i].i = (int32_t)vals[i].u;
			break;
		case RASP_FT_F32: {
			uint32_t bits = (uint32_t)vals[i].u;
			float f;

			memcpy(&f, &bits, sizeof(f));
			vals[i].f = f;
			break;
		}
		case RASP_FT_F64: {
			double f;

			memcpy(&f, &vals[i].u, sizeof(f));
			vals[i].f = f;
			break;
		}
		default:
			break;
		}
	}
	return 0;
}
