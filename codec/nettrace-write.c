/* Writing NetTrace V4 streams (nettrace-write.h). The layout follows what .NET runtimes write
 * (docs/eventpipe.md has it byte by byte): compressed headers decided field by field against
 * the previous header of the block, exactly as the runtime decides them, so a reader sees the
 * same shapes from rasp as from .NET. */
#include "nettrace-write.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "utf.h"

/* ---- the stream ---------------------------------------------------------------------------- */

static int put(struct rasp_nt_out *o, const void *buf, size_t len)
{
	int rc;

	if (o->err)
		return o->err;
	if (len == 0)
		return 0;
	rc = o->write(o->ctx, buf, len);
	if (rc < 0) {
		o->err = rc;
		return rc;
	}
	o->off += len;
	return 0;
}

/* The low n bytes of v, little-endian (n is 1, 2, 4 or 8): one store on little-endian
 * machines, since a payload is encoded per sample on the allocating thread. */
static inline void le(uint8_t *p, uint64_t v, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	switch (n) {
	case 8:
		memcpy(p, &v, 8);
		return;
	case 4: {
		uint32_t w = (uint32_t)v;

		memcpy(p, &w, 4);
		return;
	}
	case 2: {
		uint16_t w = (uint16_t)v;

		memcpy(p, &w, 2);
		return;
	}
	default:
		break;
	}
#endif
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int put_i32(struct rasp_nt_out *o, uint32_t v)
{
	uint8_t b[4];

	le(b, v, 4);
	return put(o, b, 4);
}

static int put_u8(struct rasp_nt_out *o, uint8_t v)
{
	return put(o, &v, 1);
}

/* BeginPrivateObject, its type (BeginPrivateObject, NullReference, version, minimum reader
 * version, name, EndObject): the opening of every top-level object. */
static int put_object_start(struct rasp_nt_out *o, const char *name, uint32_t version)
{
	size_t n = strlen(name);

	put_u8(o, RASP_NT_TAG_BEGIN_PRIVATE);
	put_u8(o, RASP_NT_TAG_BEGIN_PRIVATE);
	put_u8(o, RASP_NT_TAG_NULL);
	put_i32(o, version);
	put_i32(o, version);
	put_i32(o, (uint32_t)n);
	put(o, name, n);
	return put_u8(o, RASP_NT_TAG_END);
}

int rasp_nt_write_header(struct rasp_nt_out *o, const struct rasp_nt_trace_header *h)
{
	uint8_t body[48] = {0};
	struct tm tm;
	time_t secs;
	int64_t ms;

	if (!o || !o->write || !h || (h->pointer_size != 4 && h->pointer_size != 8) ||
	    h->frequency <= 0 || h->sync_utc_ns < 0)
		return -EINVAL;
	/* SyncTimeUTC is a SYSTEMTIME: readers build a date from it and refuse an invalid one. */
	secs = (time_t)(h->sync_utc_ns / 1000000000);
	ms = h->sync_utc_ns % 1000000000 / 1000000;
	if (!gmtime_r(&secs, &tm) || tm.tm_year + 1900 > 9999)
		return -EINVAL;
	le(body + 0, (uint64_t)(tm.tm_year + 1900), 2);
	le(body + 2, (uint64_t)(tm.tm_mon + 1), 2);
	le(body + 4, (uint64_t)tm.tm_wday, 2);
	le(body + 6, (uint64_t)tm.tm_mday, 2);
	le(body + 8, (uint64_t)tm.tm_hour, 2);
	le(body + 10, (uint64_t)tm.tm_min, 2);
	le(body + 12, (uint64_t)(tm.tm_sec > 59 ? 59 : tm.tm_sec), 2); /* no leap second */
	le(body + 14, (uint64_t)ms, 2);
	le(body + 16, (uint64_t)h->sync_ticks, 8);
	le(body + 24, (uint64_t)h->frequency, 8);
	le(body + 32, h->pointer_size, 4);
	le(body + 36, h->pid, 4);
	le(body + 40, h->processors, 4);
	/* ExpectedCPUSamplingRate: the sample profiler's period; rasp has none, and 0 would be a
	 * divisor in tools that derive a CPU rate, so the runtime's default (1 ms in ns). */
	le(body + 44, 1000000, 4);

	put(o, RASP_NT_MAGIC, RASP_NT_MAGIC_LEN);
	put_i32(o, RASP_NT_FS_HEADER_LEN);
	put(o, RASP_NT_FS_HEADER, RASP_NT_FS_HEADER_LEN);
	put_object_start(o, "Trace", 4);
	put(o, body, sizeof(body));
	return put_u8(o, RASP_NT_TAG_END);
}

int rasp_nt_write_block(struct rasp_nt_out *o, const char *name, const void *content, size_t len)
{
	static const uint8_t zeros[3];

	if (!o || !o->write || !name || (!content && len) || len > INT32_MAX)
		return -EINVAL;
	put_object_start(o, name, 2);
	put_i32(o, (uint32_t)len);
	/* Content starts 4-byte aligned, counted from the stream's first byte. */
	put(o, zeros, (size_t)((4 - (o->off & 3)) & 3));
	put(o, content, len);
	return put_u8(o, RASP_NT_TAG_END);
}

int rasp_nt_write_end(struct rasp_nt_out *o)
{
	if (!o || !o->write)
		return -EINVAL;
	return put_u8(o, RASP_NT_TAG_NULL);
}

/* ---- blocks -------------------------------------------------------------------------------- */

static size_t varuint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* The longest compressed header: flags, metadata id, sequence delta, capture thread,
 * processor, thread, stack, timestamp delta, payload size. */
#define MAX_HEADER (1 + 5 + 5 + 10 + 5 + 10 + 5 + 10 + 5)

void rasp_nt_block_init(struct rasp_nt_block *b, uint8_t *buf, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->buf = buf;
	b->cap = cap;
	b->min_ts = INT64_MAX;
	b->max_ts = INT64_MIN;
	le(buf, RASP_NT_BLOCK_HEADER_SIZE, 2);
	le(buf + 2, 1, 2); /* header compression */
	memset(buf + 4, 0, 16);
	b->len = RASP_NT_BLOCK_HEADER_SIZE;
}

int rasp_nt_block_add(struct rasp_nt_block *b, const struct rasp_nt_hdr *h, const void *payload,
		      size_t len)
{
	struct rasp_nt_hdr *prev = &b->prev;
	uint8_t *start, *p, flags = 0;

	if (len > UINT32_MAX || (len && !payload))
		return -EINVAL;
	if (b->cap - b->len < MAX_HEADER || b->cap - b->len - MAX_HEADER < len)
		return -ENOSPC;
	start = b->buf + b->len;
	p = start + 1;
	if (h->meta != prev->meta) {
		flags |= RASP_NT_F_METADATA_ID;
		p += varuint(p, h->meta);
	}
	/* The sequence number is implied (previous + 1 for events, unchanged for metadata) unless
	 * it jumped or the capture thread or processor changed; the runtime's rule. */
	if (prev->seq + (h->meta != 0) != h->seq || h->capture != prev->capture ||
	    h->proc != prev->proc) {
		flags |= RASP_NT_F_CAPTURE_SEQ;
		p += varuint(p, (uint32_t)(h->seq - prev->seq - 1));
		p += varuint(p, h->capture);
		p += varuint(p, h->proc);
	}
	if (h->tid != prev->tid) {
		flags |= RASP_NT_F_THREAD_ID;
		p += varuint(p, h->tid);
	}
	if (h->stack != prev->stack) {
		flags |= RASP_NT_F_STACK_ID;
		p += varuint(p, h->stack);
	}
	p += varuint(p, (uint64_t)h->ts - (uint64_t)prev->ts); /* wraps when negative */
	if (h->sorted)
		flags |= RASP_NT_F_SORTED;
	if ((uint32_t)len != prev->payload) {
		flags |= RASP_NT_F_PAYLOAD_SIZE;
		p += varuint(p, len);
	}
	*start = flags;
	if (len)
		memcpy(p, payload, len);
	p += len;
	b->len = (size_t)(p - b->buf);
	*prev = *h;
	prev->payload = (uint32_t)len;
	if (h->ts < b->min_ts)
		b->min_ts = h->ts;
	if (h->ts > b->max_ts)
		b->max_ts = h->ts;
	b->events++;
	return 0;
}

void rasp_nt_block_finish(struct rasp_nt_block *b)
{
	le(b->buf + 4, (uint64_t)(b->events ? b->min_ts : 0), 8);
	le(b->buf + 12, (uint64_t)(b->events ? b->max_ts : 0), 8);
}

/* ---- payloads ------------------------------------------------------------------------------ */

size_t rasp_nt_encode_payload(const struct rasp_event_desc *d, const union rasp_nt_value *vals,
			      uint32_t pointer_size, uint8_t *out, size_t cap)
{
	size_t used = 0;

	if (!d || (!vals && d->nfields) || !out || (pointer_size != 4 && pointer_size != 8))
		return 0;
	for (size_t i = 0; i < d->nfields; i++) {
		enum rasp_field_type t = d->fields[i].type;
		uint64_t v = vals[i].u;
		size_t n;

		if (d->fields[i].count >= 0) {
			size_t count = (size_t)vals[d->fields[i].count].u;
			size_t in = rasp_nt_field_size(t, sizeof(void *));

			n = rasp_nt_field_size(t, pointer_size);
			if (count && !vals[i].p)
				return 0;
			if ((cap - used) / n < count)
				return 0;
			for (size_t k = 0; k < count; k++) {
				uint64_t e = 0;

				/* Native memory of the C type, written little-endian. */
				memcpy(&e, (const uint8_t *)vals[i].p + k * in, in);
				le(out + used, e, n);
				used += n;
			}
			continue;
		}
		if (t == RASP_FT_UTF16Z) {
			n = rasp_utf8_to_utf16le(vals[i].s ? vals[i].s : "", out + used,
						 cap - used);
			if (n == (size_t)-1)
				return 0;
			used += n;
			continue;
		}
		if (t == RASP_FT_ANSIZ) {
			const char *s = vals[i].s ? vals[i].s : "";

			n = strlen(s) + 1;
			if (cap - used < n)
				return 0;
			memcpy(out + used, s, n);
			used += n;
			continue;
		}
		if (t == RASP_FT_F32) {
			float f = (float)vals[i].f;
			uint32_t bits;

			memcpy(&bits, &f, sizeof(bits));
			v = bits;
		} else if (t == RASP_FT_F64) {
			memcpy(&v, &vals[i].f, sizeof(v));
		}
		n = rasp_nt_field_size(t, pointer_size);
		if (cap - used < n)
			return 0;
		le(out + used, v, n);
		used += n;
	}
	return used;
}

/* The System.TypeCode a V1 field list gives each field type; 0 when there is none (an ANSI
 * string), and then the record carries no field list at all. */
static uint32_t type_code(enum rasp_field_type t)
{
	switch (t) {
	case RASP_FT_I8:
		return 5;
	case RASP_FT_U8:
		return 6;
	case RASP_FT_I16:
		return 7;
	case RASP_FT_U16:
		return 8;
	case RASP_FT_I32:
		return 9;
	case RASP_FT_U32:
		return 10;
	case RASP_FT_I64:
		return 11;
	case RASP_FT_U64:
	case RASP_FT_PTR: /* no pointer code: managed EventSources describe them as UInt64 */
		return 12;
	case RASP_FT_BOOL32:
		return 3;
	case RASP_FT_F32:
		return 13;
	case RASP_FT_F64:
		return 14;
	case RASP_FT_UTF16Z:
		return 18;
	default:
		return 0;
	}
}

static bool put_buf(uint8_t *out, size_t cap, size_t *used, const void *src, size_t n)
{
	if (cap - *used < n)
		return false;
	memcpy(out + *used, src, n);
	*used += n;
	return true;
}

static bool put_le(uint8_t *out, size_t cap, size_t *used, uint64_t v, size_t n)
{
	uint8_t b[8];

	le(b, v, n);
	return put_buf(out, cap, used, b, n);
}

static bool put_utf16(uint8_t *out, size_t cap, size_t *used, const char *s)
{
	size_t n = rasp_utf8_to_utf16le(s, out + *used, cap - *used);

	if (n == (size_t)-1)
		return false;
	*used += n;
	return true;
}

size_t rasp_nt_encode_metadata(uint32_t id, const struct rasp_event_desc *d, bool described,
			       uint8_t *out, size_t cap)
{
	size_t used = 0;
	bool fields = described;

	if (!d || !out || id == 0 || id > INT32_MAX)
		return 0;
	/* A V1 field list has no array type: such an event goes without one. */
	for (size_t i = 0; i < d->nfields; i++)
		if (!type_code(d->fields[i].type) || d->fields[i].count >= 0)
			fields = false;
	/* The symbol as the name: TraceEvent derives nothing from it unless it ends in Start or
	 * Stop (no rasp event does), and generic readers show it. */
	if (!put_le(out, cap, &used, id, 4) || !put_utf16(out, cap, &used, d->provider) ||
	    !put_le(out, cap, &used, d->id, 4) ||
	    !put_utf16(out, cap, &used, described ? d->symbol : "") ||
	    !put_le(out, cap, &used, d->keywords, 8) || !put_le(out, cap, &used, d->version, 4) ||
	    !put_le(out, cap, &used, d->level, 4) ||
	    !put_le(out, cap, &used, fields ? d->nfields : 0, 4))
		return 0;
	for (size_t i = 0; fields && i < d->nfields; i++)
		if (!put_le(out, cap, &used, type_code(d->fields[i].type), 4) ||
		    !put_utf16(out, cap, &used, d->fields[i].name))
			return 0;
	return used;
}

size_t rasp_nt_encode_sp(int64_t ts, const uint64_t *tids, const uint32_t *seqs, size_t n,
			 uint8_t *out, size_t cap)
{
	size_t used = 0;

	if (!out || (n && (!tids || !seqs)) || n > INT32_MAX)
		return 0;
	if (!put_le(out, cap, &used, (uint64_t)ts, 8) || !put_le(out, cap, &used, n, 4))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!put_le(out, cap, &used, tids[i], 8) || !put_le(out, cap, &used, seqs[i], 4))
			return 0;
	return used;
}
