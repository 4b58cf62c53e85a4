/* NetTrace metadata and headers (nettrace-internal.h): the Trace object or block, metadata
 * records of both formats, and their strings (UTF-16Z in V4/V5, length-prefixed UTF-8 in V6).
 * Layouts are matched to the generated descriptors by (provider, event id, version). A
 * definition lives while its id names it or a held event uses it (metadata_bytes bounds them). */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "nettrace-internal.h"
#include "utf.h"

#define fail rasp__nt_fail

/* ---- Metadata ----------------------------------------------------------------------- */

/* A string of the file not yet converted: UTF-16LE units (V4/V5) or bytes (V6). */
struct raw {
	const uint8_t *p;
	size_t n;
	bool utf16;
};

/* A UTF-16Z string at the cursor; false when its terminator is missing. */
static bool raw_utf16z(struct rasp_cursor *c, struct raw *s)
{
	size_t k = 0, left = rasp_cursor_left(c);
	const uint8_t *p = c->base + c->pos;

	while (k + 2 <= left && (p[k] | p[k + 1]))
		k += 2;
	*s = (struct raw){p, k / 2, true};
	return rasp_cursor_skip(c, k + 2);
}

/* A V6 string (varuint32 byte length + UTF-8); false when cut short. */
static bool raw_utf8v(struct rasp_cursor *c, struct raw *s)
{
	uint32_t n;
	const uint8_t *p;

	if (!rasp_cursor_varuint32(c, &n) || !(p = rasp_cursor_take(c, n)))
		return false;
	*s = (struct raw){p, n, false};
	return true;
}

/* Room for a string as UTF-8: 3 bytes per unit or byte at most, and its NUL. */
static size_t raw_room(const struct raw *s)
{
	return 3 * s->n + 1;
}

static size_t raw_put(const struct raw *s, char *out, size_t cap)
{
	return s->utf16 ? rasp_utf16le_to_utf8(s->p, s->n, out, cap)
			: rasp_bytes_to_utf8(s->p, s->n, out, cap);
}

/* A definition and its two strings in one allocation (a row costs one malloc and one free);
 * NULL without memory. */
static struct meta_rec *rec_make(const struct raw *provider, const struct raw *name)
{
	size_t room = raw_room(provider) + raw_room(name), l1, l2;
	struct meta_rec *rec = malloc(sizeof(*rec) + room), *fit;

	if (!rec)
		return NULL;
	*rec = (struct meta_rec){.refs = 1};
	l1 = raw_put(provider, rec->strings, raw_room(provider));
	l2 = raw_put(name, rec->strings + l1 + 1, room - l1 - 1);
	rec->bytes = sizeof(*rec) + room;
	/* Strings that were not the worst case give back what they did not use. */
	if (room - (l1 + l2 + 2) > 64 && (fit = realloc(rec, sizeof(*rec) + l1 + l2 + 2))) {
		rec = fit;
		rec->bytes = sizeof(*rec) + l1 + l2 + 2;
	}
	rec->m.provider = rec->strings;
	rec->m.name = rec->strings + l1 + 1;
	return rec;
}

struct rasp_nt_meta *rasp__nt_meta_get(const struct rasp_nt_reader *r, uint32_t id)
{
	return id < r->nmeta && r->meta[id] ? &r->meta[id]->m : NULL;
}

const struct rasp_nt_meta *rasp_nt_meta_of_desc(const struct rasp_nt_reader *r,
						const struct rasp_event_desc *d)
{
	for (size_t i = 0; i < r->nmeta; i++)
		if (r->meta[i] && r->meta[i]->m.desc == d)
			return &r->meta[i]->m;
	return NULL;
}

void rasp__nt_meta_flush(struct rasp_nt_reader *r)
{
	for (size_t i = 0; i < r->nmeta; i++)
		if (r->meta[i]) {
			rasp__nt_meta_unref(r, &r->meta[i]->m);
			r->meta[i] = NULL;
		}
	free(r->meta);
	r->meta = NULL;
	r->nmeta = 0;
}

/* Puts a definition under its id: made from the strings and m's other fields; the table
 * holds it from then on. A V6 redefinition replaces the definition: the old one goes once
 * the events still held of it have. */
static int meta_put(struct rasp_nt_reader *r, uint64_t at, const struct rasp_nt_meta *m,
		    const struct raw *provider, const struct raw *name)
{
	uint32_t id = m->id;
	struct meta_rec *rec;

	if (id == 0 || id >= r->lim.metadata_ids)
		return fail(r, at,
			    "metadata id %" PRIu32 " out of range 1..%" PRIu32
			    " (limit metadata_ids = %" PRIu32 ")",
			    id, r->lim.metadata_ids - 1, r->lim.metadata_ids);
	if (id < r->nmeta && r->meta[id] && r->info.format == 4)
		return fail(r, at, "metadata id %" PRIu32 " defined twice", id);
	rec = rec_make(provider, name);
	if (!rec)
		return fail(r, at, "out of memory");
	if (r->st.metadata_bytes + rec->bytes > r->lim.metadata_bytes) {
		uint64_t want = r->st.metadata_bytes + rec->bytes;

		free(rec);
		return fail(r, at,
			    "metadata id %" PRIu32 ": the definitions held would take %" PRIu64
			    " bytes (limit metadata_bytes = %" PRIu64 ")",
			    id, want, r->lim.metadata_bytes);
	}
	if (id >= r->nmeta) {
		size_t n =
		    (size_t)id + 64 < r->lim.metadata_ids ? (size_t)id + 64 : r->lim.metadata_ids;
		struct meta_rec **v = realloc(r->meta, n * sizeof(*v));

		if (!v) {
			free(rec);
			return fail(r, at, "out of memory");
		}
		memset(v + r->nmeta, 0, (n - r->nmeta) * sizeof(*v));
		r->meta = v;
		r->nmeta = n;
	}
	rec->m = (struct rasp_nt_meta){
	    .id = id,
	    .provider = rec->m.provider,
	    .name = rec->m.name,
	    .event_id = m->event_id,
	    .version = m->version,
	    .level = m->level,
	    .keywords = m->keywords,
	    .desc = rasp_nt_find_desc(rec->m.provider, m->event_id, m->version),
	};
	r->st.metadata_defined++;
	r->st.metadata_bytes += rec->bytes;
	if (r->st.metadata_bytes > r->st.metadata_bytes_peak)
		r->st.metadata_bytes_peak = r->st.metadata_bytes;
	if (r->meta[id])
		rasp__nt_meta_unref(r, &r->meta[id]->m);
	r->meta[id] = rec;
	return 0;
}

/* A V6 string (varuint32 byte length + UTF-8) as fresh, valid UTF-8. */
char *rasp__nt_utf8v(struct rasp_cursor *c)
{
	struct raw s;
	char *out;

	if (!raw_utf8v(c, &s))
		return NULL;
	out = malloc(raw_room(&s));
	if (out)
		raw_put(&s, out, raw_room(&s));
	return out;
}

/* The V4/V5 metadata record that a MetadataBlock blob carries. Field lists and V5 tags are
 * not needed (layouts come from the manifests) and are left unread. */
int rasp__nt_v4_metadata(struct rasp_nt_reader *r, const uint8_t *p, size_t len, uint64_t at)
{
	struct rasp_cursor c = rasp_cursor_make(p, len, at);
	struct rasp_nt_meta m = {0};
	struct raw provider, name;

	rasp_cursor_u32le(&c, &m.id);
	raw_utf16z(&c, &provider);
	rasp_cursor_u32le(&c, &m.event_id);
	raw_utf16z(&c, &name);
	rasp_cursor_u64le(&c, &m.keywords);
	rasp_cursor_u32le(&c, &m.version);
	rasp_cursor_u32le(&c, &m.level);
	if (c.failed)
		return fail(r, rasp_cursor_offset(&c), "metadata record cut short");
	return meta_put(r, at, &m, &provider, &name);
}

/* A V6 string skipped; false when cut short. */
static bool skip_utf8v(struct rasp_cursor *c)
{
	struct raw s;

	return raw_utf8v(c, &s);
}

int rasp__nt_v6_metadata_row(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	struct rasp_nt_meta m = {0};
	struct raw provider, name;
	uint16_t nfields = 0, optsize = 0;
	uint64_t at = rasp_cursor_offset(c);
	const uint8_t *opt;
	struct rasp_cursor o;

	if (!rasp_cursor_varuint32(c, &m.id) || !raw_utf8v(c, &provider) ||
	    !rasp_cursor_varuint32(c, &m.event_id) || !raw_utf8v(c, &name) ||
	    !rasp_cursor_u16le(c, &nfields))
		goto cut;
	for (uint16_t i = 0; i < nfields; i++) {
		uint16_t size;

		if (!rasp_cursor_u16le(c, &size) || !rasp_cursor_skip(c, size))
			goto cut;
	}
	if (!rasp_cursor_u16le(c, &optsize) || !(opt = rasp_cursor_take(c, optsize)))
		goto cut;
	o = rasp_cursor_make(opt, optsize, rasp_cursor_offset(c) - optsize);
	while (rasp_cursor_left(&o)) {
		uint8_t kind = 0, b = 0;

		rasp_cursor_u8(&o, &kind);
		switch (kind) {
		case 1: /* opcode */
			rasp_cursor_u8(&o, &b);
			break;
		case 3:
			rasp_cursor_u64le(&o, &m.keywords);
			break;
		case 4: /* message template */
		case 5: /* description */
			skip_utf8v(&o);
			break;
		case 6: /* a key and a value */
			skip_utf8v(&o);
			skip_utf8v(&o);
			break;
		case 7: /* provider GUID */
			rasp_cursor_skip(&o, 16);
			break;
		case 8:
			rasp_cursor_u8(&o, &b);
			m.level = b;
			break;
		case 9:
			rasp_cursor_u8(&o, &b);
			m.version = b;
			break;
		default:
			return fail(r, rasp_cursor_offset(&o) - 1,
				    "unknown optional metadata kind %u", kind);
		}
		if (o.failed)
			goto cut;
	}
	return meta_put(r, at, &m, &provider, &name);
cut:
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
