/* NetTrace metadata and headers (nettrace-internal.h): the Trace object or block, metadata
 * records of both formats, and their strings (UTF-16Z in V4/V5, length-prefixed UTF-8 in V6).
 * Layouts are matched to the generated descriptors by (provider, event id, version). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "nettrace-internal.h"
#include "utf.h"

#define fail rasp__nt_fail

/* ---- Metadata and stacks --------------------------------------------------------------------- */

void rasp__nt_meta_free(struct rasp_nt_meta *m)
{
	if (m) {
		free(m->provider);
		free(m->name);
	}
	free(m);
}

const struct rasp_nt_meta *rasp__nt_meta_get(const struct rasp_nt_reader *r, uint32_t id)
{
	return id < r->nmeta ? r->meta[id] : NULL;
}

static int meta_put(struct rasp_nt_reader *r, uint64_t at, struct rasp_nt_meta *m)
{
	uint32_t id = m->id;

	if (id == 0 || id >= MAX_METADATA) {
		rasp__nt_meta_free(m);
		return fail(r, at, "metadata id %" PRIu32 " out of range 1..%u", id,
			    MAX_METADATA - 1);
	}
	if (m->id >= r->nmeta) {
		size_t n = (size_t)m->id + 64;
		struct rasp_nt_meta **v = realloc(r->meta, n * sizeof(*v));

		if (!v) {
			rasp__nt_meta_free(m);
			return fail(r, at, "out of memory");
		}
		memset(v + r->nmeta, 0, (n - r->nmeta) * sizeof(*v));
		r->meta = v;
		r->nmeta = n;
	}
	if (r->meta[id] && r->info.format == 4) {
		rasp__nt_meta_free(m);
		return fail(r, at, "metadata id %" PRIu32 " defined twice", id);
	}
	if (r->meta[m->id]) {
		if (rasp_array_grow((void **)&r->retired, &r->capretired, r->nretired,
				    sizeof(*r->retired))) {
			rasp__nt_meta_free(m);
			return fail(r, at, "out of memory");
		}
		r->retired[r->nretired++] = r->meta[m->id];
	}
	m->desc = rasp_nt_find_desc(m->provider, m->event_id, m->version);
	r->meta[m->id] = m;
	return 0;
}

/* A UTF-16Z string at the cursor as fresh UTF-8. */
static char *utf16z(struct rasp_cursor *c)
{
	size_t k = 0, left = rasp_cursor_left(c);
	const uint8_t *s = c->base + c->pos;
	char *out;

	while (k + 2 <= left && (s[k] | s[k + 1]))
		k += 2;
	if (k + 2 > left) {
		c->failed = true;
		return NULL;
	}
	out = malloc(3 * (k / 2) + 1);
	if (out)
		rasp_utf16le_to_utf8(s, k / 2, out, 3 * (k / 2) + 1);
	rasp_cursor_skip(c, k + 2);
	return out;
}

/* A V6 string (varuint32 byte length + UTF-8) as fresh, valid UTF-8. */
char *rasp__nt_utf8v(struct rasp_cursor *c)
{
	uint32_t n;
	const uint8_t *s;
	char *out;

	if (!rasp_cursor_varuint32(c, &n) || !(s = rasp_cursor_take(c, n)))
		return NULL;
	out = malloc(3 * (size_t)n + 1);
	if (out)
		rasp_bytes_to_utf8(s, n, out, 3 * (size_t)n + 1);
	return out;
}

/* The V4/V5 metadata record that a MetadataBlock blob carries. Field lists and V5 tags are
 * not needed (layouts come from the manifests) and are left unread. */
int rasp__nt_v4_metadata(struct rasp_nt_reader *r, const uint8_t *p, size_t len, uint64_t at)
{
	struct rasp_cursor c = rasp_cursor_make(p, len, at);
	struct rasp_nt_meta *m = calloc(1, sizeof(*m));
	uint32_t id = 0, eid = 0, version = 0, level = 0;
	uint64_t kw = 0;

	if (!m)
		return fail(r, at, "out of memory");
	rasp_cursor_u32le(&c, &id);
	m->provider = utf16z(&c);
	rasp_cursor_u32le(&c, &eid);
	m->name = utf16z(&c);
	rasp_cursor_u64le(&c, &kw);
	rasp_cursor_u32le(&c, &version);
	rasp_cursor_u32le(&c, &level);
	if (c.failed || !m->provider || !m->name) {
		rasp__nt_meta_free(m);
		return fail(r, rasp_cursor_offset(&c), "metadata record cut short");
	}
	*m = (struct rasp_nt_meta){id, m->provider, m->name, eid, version, level, kw, NULL};
	return meta_put(r, at, m);
}

int rasp__nt_v6_metadata_row(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	struct rasp_nt_meta *m = calloc(1, sizeof(*m));
	uint16_t nfields = 0, optsize = 0;
	uint64_t at = rasp_cursor_offset(c);

	if (!m)
		return fail(r, at, "out of memory");
	if (!rasp_cursor_varuint32(c, &m->id) || !(m->provider = rasp__nt_utf8v(c)) ||
	    !rasp_cursor_varuint32(c, &m->event_id) || !(m->name = rasp__nt_utf8v(c)) ||
	    !rasp_cursor_u16le(c, &nfields))
		goto cut;
	for (uint16_t i = 0; i < nfields; i++) {
		uint16_t size;

		if (!rasp_cursor_u16le(c, &size) || !rasp_cursor_skip(c, size))
			goto cut;
	}
	if (!rasp_cursor_u16le(c, &optsize))
		goto cut;
	{
		const uint8_t *opt = rasp_cursor_take(c, optsize);
		struct rasp_cursor o =
		    rasp_cursor_make(opt, opt ? optsize : 0, rasp_cursor_offset(c));

		if (!opt)
			goto cut;
		while (rasp_cursor_left(&o)) {
			uint8_t kind = 0, b = 0;
			char *s1, *s2;

			rasp_cursor_u8(&o, &kind);
			switch (kind) {
			case 1: /* opcode */
				rasp_cursor_u8(&o, &b);
				break;
			case 3:
				rasp_cursor_u64le(&o, &m->keywords);
				break;
			case 4: /* message template */
			case 5: /* description */
				free(rasp__nt_utf8v(&o));
				break;
			case 6:
				s1 = rasp__nt_utf8v(&o);
				s2 = rasp__nt_utf8v(&o);
				free(s1);
				free(s2);
				break;
			case 7:
				rasp_cursor_skip(&o, 16);
				break;
			case 8:
				rasp_cursor_u8(&o, &b);
				m->level = b;
				break;
			case 9:
				rasp_cursor_u8(&o, &b);
				m->version = b;
				break;
			default:
				rasp__nt_meta_free(m);
				return fail(r, rasp_cursor_offset(&o) - 1,
					    "unknown optional metadata kind %u", kind);
			}
			if (o.failed)
				goto cut;
		}
	}
	return meta_put(r, at, m);
cut:
	rasp__nt_meta_free(m);
	return fail(r, at, "metadata row cut short");
}

/* The 48-byte V4 Trace object body, or the V6 Trace block. */
int rasp__nt_trace_header(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	uint16_t t[8] = {0};
	uint64_t qpc = 0, freq = 0;
	uint32_t ptr = 0, pid = 0, cpus = 0, kv = 0;
	for (int i = 0; i < 8; i++)
		rasp_cursor_u16le(c, &t[i]);
	rasp_cursor_u64le(c, &qpc);
	rasp_cursor_u64le(c, &freq);
	rasp_cursor_u32le(c, &ptr);
	if (r->info.format == 4) {
		rasp_cursor_u32le(c, &pid);
		rasp_cursor_u32le(c, &cpus);
		rasp_cursor_skip(c, 4); /* expected CPU sampling rate */
		r->info.pid = pid;
		r->info.processors = cpus;
	} else {
		r->info.pid = -1;
		rasp_cursor_u32le(c, &kv);
		for (uint32_t i = 0; i < kv && !c->failed; i++) {
			char *k = rasp__nt_utf8v(c), *v = rasp__nt_utf8v(c);

			if (k && v && strcmp(k, "ProcessId") == 0)
				r->info.pid = strtoll(v, NULL, 10);
			if (k && v && strcmp(k, "HardwareThreadCount") == 0)
				r->info.processors = (uint32_t)strtoul(v, NULL, 10);
			free(k);
			free(v);
		}
	}
	if (c->failed)
		return fail(r, rasp_cursor_offset(c), "trace header cut short");
	if ((ptr != 4 && ptr != 8) || freq == 0 || freq > INT64_MAX)
		return fail(r, c->origin,
			    "bad trace header: pointer size %" PRIu32 ", clock frequency %" PRIu64,
			    ptr, freq);
	r->info.pointer_size = ptr;
	r->info.sync_ticks = (int64_t)qpc;
	r->info.frequency = (int64_t)freq;
	/* SyncTimeUTC (year, month, day of week, day, h, min, s, ms) as ns since the epoch:
	 * days from the civil date (Howard Hinnant's algorithm). A date out of range is the
	 * writer's mistake, not the data's: keep 0 (the epoch). */
	if (t[1] >= 1 && t[1] <= 12 && t[3] >= 1 && t[3] <= 31 && t[4] < 24 && t[5] < 60 &&
	    t[6] < 61 && t[7] < 1000) {
		int64_t y = (int64_t)t[0] - (t[1] <= 2), era = (y >= 0 ? y : y - 399) / 400;
		int64_t yoe = y - era * 400, mp = (t[1] + 9) % 12;
		int64_t doy = (153 * mp + 2) / 5 + t[3] - 1,
			doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
		int64_t days = era * 146097 + doe - 719468;

		int64_t ms = (days * 86400 + t[4] * 3600 + t[5] * 60 + t[6]) * 1000 + t[7];

		/* int64 ns end in 1677 and 2262: a year past them is kept as the epoch too. */
		if (__builtin_mul_overflow(ms, INT64_C(1000000), &r->info.sync_utc_ns))
			r->info.sync_utc_ns = 0;
	}
	return 0;
}
