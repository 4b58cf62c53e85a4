/* Tests of the NetTrace reader (consumer/read/nettrace-read.c, -blocks.c, -meta.c, -state.c)
 * through its pull API. The files come from tests/consumer/read/nettrace/make-nettrace.py at test
 * time (fixture nettrace-files), each with a NAME.expect saying what a correct reader gives:
 * V4, V5 and V6 forms of one list of events, the guide's 618-byte test vector, files cut
 * short, with lost events, with bad UTF-16, and corrupt at known offsets. With --dotnet, the
 * real .NET Core 3.0 file against TraceEvent's baseline (skipped without ../shared). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "read/nettrace-read.h"

#define DOTNET "Microsoft-Windows-DotNETRuntime"
/* The generated trace (make-nettrace.py main_trace): 18 events, sequence points at 2 ms and
 * 3 ms after the sync time (1e9 ticks of 1 ns). */
#define NT_EVENTS 18
#define NT_SP1	  INT64_C(1002000000)
/* "Ünïcødé.Тип<😀>": two-byte, Cyrillic and a surrogate pair (U+1F600) in UTF-16. */
#define UNICODE_UTF8                                                                               \
	"\xC3\x9Cn\xC3\xAF"                                                                        \
	"c\xC3\xB8"                                                                                \
	"d\xC3\xA9.\xD0\xA2\xD0\xB8\xD0\xBF<\xF0\x9F\x98\x80>"

static const char *dir; /* where the fixture wrote the files */
static const char *const forms[] = {"v4", "v5", "v6"};

/* ---- Expectations and what the reader gives ----------------------------------------------- */

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n] = strdup(s);
	assert_non_null(l->v[l->n]);
	l->n++;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	*l = (struct lines){0};
}

struct expect {
	long size, error, first_sp;
	int complete;
	struct lines items; /* "event ..." and "lost ..." lines, in order */
};

static const char *nt_path(const char *name)
{
	static char paths[4][4096];
	static unsigned next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s.nettrace", dir, name);
	return p;
}

static void expect_load(const char *name, struct expect *e)
{
	char path[4096], line[8192];
	FILE *f;

	*e = (struct expect){.error = -1, .first_sp = -1};
	snprintf(path, sizeof(path), "%s/%s.expect", dir, name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s (does the fixture nettrace-files run first?)", path);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "size\t", 5))
			e->size = atol(line + 5);
		else if (!strncmp(line, "complete\t", 9))
			e->complete = atoi(line + 9);
		else if (!strncmp(line, "error\t", 6))
			e->error = atol(line + 6);
		else if (!strncmp(line, "first-sp\t", 9))
			e->first_sp = atol(line + 9);
		else if (!strncmp(line, "event\t", 6) || !strncmp(line, "lost\t", 5))
			lines_add(&e->items, line);
	}
	fclose(f);
}

static void app(char *buf, size_t cap, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *o, cap - *o, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < cap - *o);
	*o += (size_t)n;
}

/* A payload as the .expect files write it: Name=value;... by the manifest's layout, or hex. */
static void render_payload(const struct rasp_nt_reader *r, const struct rasp_nt_event *e, char *buf,
			   size_t cap, size_t *o)
{
	const struct rasp_event_desc *d = e->meta->desc;
	union rasp_nt_value v[32];
	char strs[4096];

	if (!d) {
		app(buf, cap, o, "hex:");
		for (size_t i = 0; i < e->payload_len; i++)
			app(buf, cap, o, "%02x", e->payload[i]);
		return;
	}
	assert_true(d->nfields <= 32);
	if (rasp_nt_decode(d, e->payload, e->payload_len, rasp_nt_info(r)->pointer_size, v, strs,
			   sizeof(strs))) {
		app(buf, cap, o, "undecodable(%zu bytes)", e->payload_len);
		return;
	}
	for (size_t i = 0; i < d->nfields; i++) {
		app(buf, cap, o, "%s%s=", i ? ";" : "", d->fields[i].name);
		switch (d->fields[i].type) {
		case RASP_FT_UTF16Z:
		case RASP_FT_ANSIZ:
			app(buf, cap, o, "%s", v[i].s);
			break;
		case RASP_FT_I8:
		case RASP_FT_I16:
		case RASP_FT_I32:
		case RASP_FT_I64:
			app(buf, cap, o, "%" PRId64, v[i].i);
			break;
		case RASP_FT_F32:
		case RASP_FT_F64:
			app(buf, cap, o, "%.17g", v[i].f);
			break;
		default:
			app(buf, cap, o, "%" PRIu64, v[i].u);
			break;
		}
	}
}

static void render(const struct rasp_nt_reader *r, const struct rasp_nt_item *it, char *buf,
		   size_t cap)
{
	const struct rasp_nt_event *e = &it->event;
	const struct rasp_nt_meta *m = e->meta;
	size_t o = 0;

	if (it->kind == RASP_NT_ITEM_LOST) {
		app(buf, cap, &o, "lost\t%" PRIu64 "\t%" PRId64, it->lost, it->lost_at);
		return;
	}
	assert_int_equal(it->kind, RASP_NT_ITEM_EVENT);
	app(buf, cap, &o,
	    "event\t%" PRId64 "\t%" PRId64 "\t%" PRIu64 "\t%" PRIu32 "\t%s\t%" PRIu32 "\t%" PRIu32
	    "\t0x%" PRIx64 "\t%" PRIu32 "\t",
	    e->timestamp, e->pid, e->thread_id, e->sequence, m->provider, m->event_id, m->version,
	    m->keywords, m->level);
	if (!e->stack_len)
		app(buf, cap, &o, "-");
	for (size_t i = 0; i < e->stack_len; i++)
		app(buf, cap, &o, "%s%" PRIx64, i ? "," : "", e->stack[i]);
	app(buf, cap, &o, "\t");
	render_payload(r, e, buf, cap, &o);
}

struct got {
	int rc; /* of the last rasp_nt_next: 0 at the end, -1 on error */
	bool complete;
	uint64_t events, end_offset;
	char err[512];
	struct lines items;
	size_t lost_items;
	bool ts_ordered; /* events in non-decreasing timestamp order */
};

/* Reads a file to its end (or its error), rendering every item. */
static void read_all(const char *path, struct got *g)
{
	char err[512], line[8192];
	struct rasp_nt_reader *r = rasp_nt_open(path, err, sizeof(err));
	struct rasp_nt_item it;
	int64_t last = INT64_MIN;

	*g = (struct got){.ts_ordered = true};
	if (!r)
		fail_msg("rasp_nt_open(%s): %s", path, err);
	while ((g->rc = rasp_nt_next(r, &it)) == 1) {
		render(r, &it, line, sizeof(line));
		lines_add(&g->items, line);
		if (it.kind == RASP_NT_ITEM_LOST) {
			g->lost_items++;
			continue;
		}
		if (it.event.timestamp < last)
			g->ts_ordered = false;
		last = it.event.timestamp;
	}
	g->complete = rasp_nt_complete(r);
	g->events = rasp_nt_events(r);
	g->end_offset = rasp_nt_end_offset(r);
	snprintf(g->err, sizeof(g->err), "%s", rasp_nt_error(r));
	/* After the end or an error, the reader stays there. */
	assert_int_equal(rasp_nt_next(r, &it), g->rc);
	rasp_nt_close(r);
}

static void same_lines(const struct lines *got, const struct lines *want, const char *what)
{
	for (size_t i = 0; i < got->n || i < want->n; i++) {
		const char *a = i < got->n ? got->v[i] : "(nothing)";
		const char *b = i < want->n ? want->v[i] : "(nothing)";

		if (strcmp(a, b) != 0)
			fail_msg("%s: item %zu differs\n got: %s\nwant: %s", what, i, a, b);
	}
}

static long file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (long)st.st_size;
}

/* ---- The generated files --------------------------------------------------------------------- */

/* V4 (compressed headers), V5 (uncompressed, V1 fields and V5 tags, a longer block header)
 * and V6 (blocks, threads by index, label lists): the same events, in timestamp order, with
 * the same payloads, stacks (ids restart after the sequence point) and metadata. */
static void test_nettrace_read_forms_agree(void **state)
{
	struct lines first = {0};

	(void)state;
	for (size_t f = 0; f < 3; f++) {
		const char *path = nt_path(forms[f]);
		char err[512];
		struct rasp_nt_reader *r = rasp_nt_open(path, err, sizeof(err));
		const struct rasp_nt_info *in;
		struct expect e;
		struct got g;

		assert_non_null(r);
		in = rasp_nt_info(r);
		assert_int_equal(in->format, f == 2 ? 6 : 4);
		assert_int_equal(in->pointer_size, 8);
		assert_int_equal(in->pid, 4242);
		assert_int_equal(in->processors, 8);
		assert_int_equal(in->sync_ticks, INT64_C(1000000000));
		assert_int_equal(in->frequency, INT64_C(1000000000));
		assert_int_equal(in->sync_utc_ns,
				 INT64_C(1786104000000000000)); /* 2026-08-07 12:00Z */
		rasp_nt_close(r);

		expect_load(forms[f], &e);
		read_all(path, &g);
		if (g.rc != 0)
			fail_msg("%s: %s", forms[f], g.err);
		assert_true(g.complete);
		assert_true(g.ts_ordered);
		assert_int_equal(g.events, NT_EVENTS);
		assert_int_equal(g.items.n, NT_EVENTS);
		assert_int_equal(g.end_offset, e.size);
		assert_int_equal(file_size(path), e.size);
		same_lines(&g.items, &e.items, forms[f]);
		if (f == 0)
			first = g.items, g.items = (struct lines){0};
		else
			same_lines(&g.items, &first, "this form against V4");
		lines_free(&g.items);
		lines_free(&e.items);
	}
	lines_free(&first);
}

/* The 618-byte reference file: three AllocationSampled, read back as their values were written. */
static void test_nettrace_read_vector(void **state)
{
	const char *path = nt_path("vector");
	char want[3][512];
	struct lines w = {0};
	struct expect e;
	struct got g;
	static const struct {
		int64_t ts;
		uint64_t tid, type_id, address, size, offset;
		uint32_t seq, kind;
		const char *type;
	} ev[] = {
	    {1001500000, 4242, 0x7f0000001000, 0x7f00dead0000, 104, 17, 1, 0, "System.Object[]"},
	    {1002000000, 4242, 0x7f0000002000, 0x7f00beef0000, 90000, 4096, 2, 1, "System.Byte[]"},
	    {1002500000, 4243, 0x7f0000001000, 0x7f00dead0100, 104, 3, 1, 0, "System.Object[]"},
	};

	(void)state;
	assert_int_equal(file_size(path), 618);
	for (size_t i = 0; i < 3; i++) {
		snprintf(want[i], sizeof(want[i]),
			 "event\t%" PRId64 "\t4242\t%" PRIu64 "\t%" PRIu32 "\t" DOTNET
			 "\t303\t0\t0x80000000000\t4\t-\tAllocationKind=%" PRIu32
			 ";ClrInstanceID=0;TypeID=%" PRIu64 ";TypeName=%s;Address=%" PRIu64
			 ";ObjectSize=%" PRIu64 ";SampledByteOffset=%" PRIu64,
			 ev[i].ts, ev[i].tid, ev[i].seq, ev[i].kind, ev[i].type_id, ev[i].type,
			 ev[i].address, ev[i].size, ev[i].offset);
		lines_add(&w, want[i]);
	}
	read_all(path, &g);
	assert_int_equal(g.rc, 0);
	assert_true(g.complete);
	assert_int_equal(g.events, 3);
	assert_int_equal(g.end_offset, 618);
	same_lines(&g.items, &w, "vector");
	expect_load("vector", &e);
	same_lines(&e.items, &w, "vector.expect");
	lines_free(&e.items);
	lines_free(&g.items);
	lines_free(&w);
}

/* Events go out as soon as an IsSorted event says nothing older can follow, not only at the
 * sequence point: the first one before the reader has read that far. */
static void test_nettrace_read_streams(void **state)
{
	(void)state;
	for (size_t f = 0; f < 3; f++) {
		char err[512], line[8192];
		struct rasp_nt_reader *r = rasp_nt_open(nt_path(forms[f]), err, sizeof(err));
		struct rasp_nt_item it;
		struct expect e;

		assert_non_null(r);
		expect_load(forms[f], &e);
		assert_true(e.first_sp > 0);
		assert_int_equal(rasp_nt_next(r, &it), 1);
		render(r, &it, line, sizeof(line));
		assert_string_equal(line, e.items.v[0]);
		if (rasp_nt_end_offset(r) >= (uint64_t)e.first_sp)
			fail_msg(
			    "%s: the first event came out only after reading to offset %" PRIu64
			    " (the first sequence point is at %ld)",
			    forms[f], rasp_nt_end_offset(r), e.first_sp);
		rasp_nt_close(r);
		lines_free(&e.items);
	}
}

/* The first event of thread 4243 names a type in UTF-16 with non-ASCII characters and a
 * surrogate pair; in v4-bad-utf16 the name has a lone surrogate, which becomes U+FFFD. */
static void test_nettrace_read_utf16_names(void **state)
{
	static const struct {
		const char *file, *type;
	} cases[] = {
	    {"v4", UNICODE_UTF8},
	    {"v5", UNICODE_UTF8},
	    {"v6", UNICODE_UTF8},
	    {"v4-bad-utf16", "Bad\xEF\xBF\xBDName"},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char err[512], strs[1024];
		struct rasp_nt_reader *r = rasp_nt_open(nt_path(cases[c].file), err, sizeof(err));
		struct rasp_nt_item it;
		union rasp_nt_value v[8];
		int found = 0;

		assert_non_null(r);
		while (rasp_nt_next(r, &it) == 1) {
			const struct rasp_nt_event *e = &it.event;

			if (it.kind != RASP_NT_ITEM_EVENT || e->thread_id != 4243 ||
			    e->sequence != 1)
				continue;
			assert_non_null(e->meta->desc);
			assert_string_equal(e->meta->desc->lttng,
					    "DotNETRuntime:AllocationSampled");
			assert_int_equal(rasp_nt_decode(e->meta->desc, e->payload, e->payload_len,
							8, v, strs, sizeof(strs)),
					 0);
			assert_string_equal(v[3].s, cases[c].type);
			assert_int_equal(v[5].u, 48);
			found++;
		}
		assert_int_equal(found, 1);
		rasp_nt_close(r);
	}
}

/* Lost events: a sequence number jumping by 5 in the middle of thread 4243, and thread 4250
 * dropping 3 after its last event, both told by the first sequence point: one LOST item, after
 * every event before that point and before any after it, counting exactly. */
static void test_nettrace_read_losses(void **state)
{
	static const struct {
		const char *suffix;
		uint64_t lost;
	} cases[] = {{"gap", 5}, {"drop-tail", 3}};

	(void)state;
	for (size_t f = 0; f < 3; f++)
		for (size_t c = 0; c < 2; c++) {
			char name[64];
			struct expect e;
			struct got g;
			bool after = false;

			snprintf(name, sizeof(name), "%s-%s", forms[f], cases[c].suffix);
			expect_load(name, &e);
			read_all(nt_path(name), &g);
			if (g.rc != 0)
				fail_msg("%s: %s", name, g.err);
			assert_true(g.complete);
			assert_int_equal(g.events, NT_EVENTS);
			if (g.lost_items != 1)
				fail_msg("%s: %zu LOST items, want 1", name, g.lost_items);
			for (size_t i = 0; i < g.items.n; i++) {
				uint64_t n;
				int64_t at;

				if (sscanf(g.items.v[i], "lost\t%" SCNu64 "\t%" SCNd64, &n, &at) ==
				    2) {
					if (n != cases[c].lost || at != NT_SP1)
						fail_msg("%s: %s, want %" PRIu64
							 " lost at %" PRId64,
							 name, g.items.v[i], cases[c].lost, NT_SP1);
					after = true;
				} else {
					int64_t ts = strtoll(g.items.v[i] + 6, NULL, 10);

					if ((ts < NT_SP1) == after)
						fail_msg("%s: %s on the wrong side of the loss",
							 name, g.items.v[i]);
				}
			}
			same_lines(&g.items, &e.items, name);
			lines_free(&g.items);
			lines_free(&e.items);
		}
	/* Whole files lose nothing. */
	for (size_t f = 0; f < 3; f++) {
		struct got g;

		read_all(nt_path(forms[f]), &g);
		assert_int_equal(g.lost_items, 0);
		lines_free(&g.items);
	}
}

/* Cut after a complete block, without its end marker: every event read, no error, and the
 * reader says the file is incomplete. */
static void test_nettrace_read_truncated(void **state)
{
	(void)state;
	for (size_t f = 0; f < 3; f++) {
		char name[64];
		struct expect e;
		struct got g;

		snprintf(name, sizeof(name), "%s-truncated", forms[f]);
		expect_load(name, &e);
		assert_int_equal(e.complete, 0);
		read_all(nt_path(name), &g);
		if (g.rc != 0)
			fail_msg("%s: %s", name, g.err);
		assert_false(g.complete);
		assert_string_equal(g.err, "");
		assert_int_equal(g.end_offset, e.size);
		assert_true(g.ts_ordered);
		same_lines(&g.items, &e.items, name);
		lines_free(&g.items);
		lines_free(&e.items);
	}
}

/* Every prefix of every form: no error once the trace header is there (an incomplete file,
 * ever more events as it grows), a refusal naming the offset before; only the whole file is
 * complete. */
static void test_nettrace_read_every_prefix(void **state)
{
	static const char *const files[] = {"v4", "v5", "v6", "vector"};

	(void)state;
	for (size_t f = 0; f < 4; f++) {
		char cut[4096], err[512];
		const char *path = nt_path(files[f]);
		long size = file_size(path);
		uint8_t *data = malloc((size_t)size);
		FILE *in = fopen(path, "rb");
		uint64_t before = 0;
		bool opened = false;

		assert_non_null(data);
		assert_non_null(in);
		assert_int_equal(fread(data, 1, (size_t)size, in), (size_t)size);
		fclose(in);
		snprintf(cut, sizeof(cut), "%s/prefix-%s.nettrace", dir, files[f]);
		for (long n = 0; n <= size; n++) {
			FILE *out = fopen(cut, "wb");
			struct rasp_nt_reader *r;
			struct rasp_nt_item it;
			int rc;

			assert_non_null(out);
			assert_int_equal(fwrite(data, 1, (size_t)n, out), (size_t)n);
			assert_int_equal(fclose(out), 0);
			r = rasp_nt_open(cut, err, sizeof(err));
			if (!r) {
				if (opened || !strstr(err, cut) || !strstr(err, "at offset"))
					fail_msg("%s cut to %ld bytes: %s", files[f], n, err);
				continue;
			}
			opened = true;
			while ((rc = rasp_nt_next(r, &it)) == 1)
				;
			if (rc != 0)
				fail_msg("%s cut to %ld bytes: %s", files[f], n, rasp_nt_error(r));
			if (rasp_nt_complete(r) != (n == size))
				fail_msg("%s cut to %ld of %ld bytes: complete %d", files[f], n,
					 size, rasp_nt_complete(r));
			if (rasp_nt_events(r) < before)
				fail_msg("%s cut to %ld bytes: %" PRIu64 " events, %" PRIu64
					 " with fewer bytes",
					 files[f], n, rasp_nt_events(r), before);
			before = rasp_nt_events(r);
			rasp_nt_close(r);
		}
		assert_true(opened);
		assert_int_equal(before, f == 3 ? 3 : NT_EVENTS);
		unlink(cut);
		free(data);
	}
}

/* Each corrupt file fails with -1 and a message naming the file and the offset of the bad
 * byte, and stays failed. */
static void test_nettrace_read_corrupt(void **state)
{
	static const struct {
		const char *name, *why;
	} cases[] = {
	    {"v4-corrupt-tag", "found 7"},
	    {"v4-corrupt-name-length", "200 bytes"},
	    {"v4-corrupt-block-size", "limit block_bytes = 67108864"},
	    {"v4-corrupt-payload-size", "cut short"},
	    {"v4-corrupt-undefined-metadata", "undefined metadata id 9"},
	    {"v5-corrupt-tag", "found 7"},
	    {"v5-corrupt-name-length", "200 bytes"},
	    {"v5-corrupt-block-size", "limit block_bytes = 67108864"},
	    {"v5-corrupt-payload-size", "cut short"},
	    {"v5-corrupt-undefined-metadata", "undefined metadata id 9"},
	    {"v6-corrupt-payload-size", "cut short"},
	    {"v6-corrupt-undefined-metadata", "undefined metadata id 9"},
	    {"v6-corrupt-unknown-thread", "unknown thread index 77"},
	    /* An event of a removed thread (TraceEvent refuses it too). */
	    {"v6-thread-removed", "unknown thread index 1"},
	    {"v4-stack-twice", "stack id 1 defined twice"},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *path = nt_path(cases[c].name);
		char where[4200];
		struct expect e;
		struct got g;

		expect_load(cases[c].name, &e);
		assert_true(e.error > 0);
		read_all(path, &g);
		if (g.rc != -1)
			fail_msg("%s: read to its end (rc %d) without an error", cases[c].name,
				 g.rc);
		snprintf(where, sizeof(where), "%s: at offset %ld: ", path, e.error);
		if (strncmp(g.err, where, strlen(where)) != 0 || !strstr(g.err, cases[c].why))
			fail_msg("%s: error '%s', want '%s...%s...'", cases[c].name, g.err, where,
				 cases[c].why);
		assert_false(g.complete);
		lines_free(&g.items);
		lines_free(&e.items);
	}
}

/* SyncTimeUTC as ns since the epoch, up to the limits of int64 ns (1677-09-21 00:12:43.145 to
 * 2262-04-11 23:47:16.854); a date past them, like an invalid one, is the epoch (0). The
 * fuzzer found year 9706 overflowing the conversion. */
static void test_nettrace_read_sync_time(void **state)
{
	static const struct {
		uint16_t t[8]; /* year, month, day of week, day, h, min, s, ms */
		int64_t ns;
	} cases[] = {
	    {{2026, 8, 5, 7, 12, 0, 0, 0}, INT64_C(1786104000000000000)},
	    {{1970, 1, 4, 1, 0, 0, 0, 1}, INT64_C(1000000)},
	    {{2262, 4, 5, 11, 23, 47, 16, 854}, INT64_C(9223372036854000000)},
	    {{2262, 4, 5, 11, 23, 47, 17, 0}, 0},
	    {{1677, 9, 2, 21, 0, 12, 44, 0}, -INT64_C(9223372036000000000)},
	    {{1677, 9, 2, 21, 0, 12, 43, 0}, 0},
	    {{9706, 8, 5, 7, 12, 0, 0, 0}, 0},
	    {{65535, 12, 0, 31, 23, 59, 59, 999}, 0},
	    {{0, 1, 0, 1, 0, 0, 0, 0}, 0},
	    {{2026, 13, 5, 7, 12, 0, 0, 0}, 0}, /* month 13 */
	};
	const char *path = nt_path("vector");
	char cut[4096], err[512];
	uint8_t data[618];
	FILE *f = fopen(path, "rb");

	(void)state;
	assert_non_null(f);
	assert_int_equal(fread(data, 1, sizeof(data), f), sizeof(data));
	fclose(f);
	snprintf(cut, sizeof(cut), "%s/sync-time.nettrace", dir);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct rasp_nt_reader *r;

		for (int i = 0; i < 8; i++) { /* the Trace object's body starts at 0x35 */
			data[0x35 + 2 * i] = (uint8_t)cases[c].t[i];
			data[0x35 + 2 * i + 1] = (uint8_t)(cases[c].t[i] >> 8);
		}
		f = fopen(cut, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(data, 1, sizeof(data), f), sizeof(data));
		fclose(f);
		r = rasp_nt_open(cut, err, sizeof(err));
		if (!r)
			fail_msg("case %zu: %s", c, err);
		if (rasp_nt_info(r)->sync_utc_ns != cases[c].ns)
			fail_msg("case %zu (year %u): %" PRId64 " ns, want %" PRId64, c,
				 cases[c].t[0], rasp_nt_info(r)->sync_utc_ns, cases[c].ns);
		rasp_nt_close(r);
	}
	unlink(cut);
}

/* Files that are no NetTrace files: refused at open, the file and the offset named. */
static void test_nettrace_read_not_nettrace(void **state)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *why;
	} cases[] = {
	    {"", 0, "at offset 0: not a NetTrace file"},
	    {"Nettrace", 8, "at offset 0: not a NetTrace file"},
	    {"NETTRACE\x14\0\0\0!FastSerialization.1", 32, "at offset 0: not a NetTrace file"},
	    {"Nettrace\x14\0\0\0!FastSerialization.2", 32, "at offset 8: no FastSerialization"},
	    {"Nettrace\0\0\0\0\x07\0\0\0\0\0\0\0", 20, "at offset 12: NetTrace major version 7"},
	    {"Nettrace\0\0\0\0\x06\0\0\0\0\0\0\0\0\0\0\0", 24, "at offset 20: no trace header"},
	    /* A stack block before the trace header (whose pointer size it needs): the fuzzer
	     * found both dividing by a pointer size of 0. */
	    {"Nettrace\0\0\0\0\x06\0\0\0\0\0\0\0"
	     "\x14\0\0\x05\x01\0\0\0\x01\0\0\0\x08\0\0\0\x10\0\0\0\0\0\0\0",
	     44, "at offset 20: no trace header"},
	    {"Nettrace\x14\0\0\0!FastSerialization.1"
	     "\x05\x05\x01\x02\0\0\0\x02\0\0\0\x0a\0\0\0StackBlock\x06\x14\0\0\0\0\0"
	     "\x01\0\0\0\x01\0\0\0\x08\0\0\0\x10\0\0\0\0\0\0\0\x06\x01",
	     86, "at offset 32: no trace header"},
	};
	char path[4096], err[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/not-nettrace.bin", dir);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		FILE *f = fopen(path, "wb");

		assert_non_null(f);
		assert_int_equal(fwrite(cases[c].bytes, 1, cases[c].len, f), cases[c].len);
		fclose(f);
		assert_null(rasp_nt_open(path, err, sizeof(err)));
		if (strncmp(err, path, strlen(path)) != 0 || !strstr(err, cases[c].why))
			fail_msg("case %zu: '%s', want '%s: ...%s'", c, err, path, cases[c].why);
	}
	unlink(path);
	assert_null(rasp_nt_open("/nonexistent/x.nettrace", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/x.nettrace"));
	assert_false(rasp_nt_is_nettrace("/nonexistent/x.nettrace"));
	assert_true(rasp_nt_is_nettrace(nt_path("v6")));
}

/* ---- Files that cost a careless reader far more than their size --------------------------- */

/* ASan and TSan reserve terabytes of shadow: no address-space limit under them, and more CPU
 * time (they slow the reader down up to tenfold). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

/* Address space a bounded read may map past what the process maps before it, and the CPU
 * seconds it may take: each bomb costs a careless reader several times the first (or is
 * refused for lack of it) and several times the second; the reader needs a few MiB and well
 * under a second. */
#define BOUND_MEMORY (UINT64_C(256) << 20)
#ifdef UNDER_SANITIZER
#define BOUND_CPU 60
#else
#define BOUND_CPU 10
#endif

#ifndef UNDER_SANITIZER
/* The address space this process maps (VmSize), in bytes; 0 if unknown. */
static uint64_t mapped_now(void)
{
	char line[256];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %" SCNu64, &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}
#endif

/* What a bounded read must have given: 0, or -1 with the reason in why. */
typedef int (*bounded_check)(struct rasp_nt_reader *r, char *why, size_t cap);

/* Reads the generated file `name` in a child limited to BOUND_MEMORY more address space and
 * BOUND_CPU seconds of CPU; check says whether what it read is right. A reader whose memory
 * follows what it saw rather than what it keeps fails an allocation (an error, or a stack
 * silently dropped); one that is quadratic is killed by SIGXCPU. */
static void read_bounded(const char *name, bounded_check check)
{
	const char *path = nt_path(name);
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char why[512] = "", err[512];
		struct rasp_nt_reader *r;

		setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
		if (setrlimit(RLIMIT_CPU, &(struct rlimit){BOUND_CPU, BOUND_CPU + 1}) != 0)
			_exit(3);
#ifndef UNDER_SANITIZER
		{
			uint64_t now = mapped_now(), cap = now + BOUND_MEMORY;

			if (now && setrlimit(RLIMIT_AS, &(struct rlimit){cap, cap}) != 0)
				_exit(3);
		}
#endif
		r = rasp_nt_open(path, err, sizeof(err));
		if (!r) {
			fprintf(stderr, "%s: %s\n", name, err);
			_exit(1);
		}
		if (check(r, why, sizeof(why))) {
			fprintf(stderr, "%s: %s\n", name, why);
			_exit(1);
		}
		rasp_nt_close(r);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		fail_msg("%s: the reader was killed by signal %d (%s; SIGXCPU: over %d s of CPU)",
			 name, WTERMSIG(st), strsignal(WTERMSIG(st)), BOUND_CPU);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s: wrong within %" PRIu64 " MiB more address space and %d s of CPU "
			 "(status %d; the reason above)",
			 name, BOUND_MEMORY >> 20, BOUND_CPU, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

#define WHY(...) (snprintf(why, cap, __VA_ARGS__), -1)

/* make-nettrace.py bomb_stacks: 40,000 unsorted events held until the sequence point, each
 * with the same 4096-frame stack (1.3 GB when every held event copied it). Each comes out
 * with its stack's innermost frames, in order. */
static int bomb_stacks_read(struct rasp_nt_reader *r, char *why, size_t cap)
{
	struct rasp_nt_item it;
	uint64_t n = 0;
	int rc;

	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_nt_event *e = &it.event;

		if (it.kind != RASP_NT_ITEM_EVENT)
			return WHY("a loss item (%" PRIu64 ")", it.lost);
		if (e->stack_len == 0)
			return WHY("event %" PRIu64 " (offset %" PRIu64 ") without its stack", n,
				   e->offset);
		for (size_t k = 0; k < e->stack_len; k++)
			if (e->stack[k] != UINT64_C(0x7F0000000000) + 16 * k)
				return WHY("event %" PRIu64 ": frame %zu is 0x%" PRIx64, n, k,
					   e->stack[k]);
		n++;
	}
	if (rc != 0)
		return WHY("%s", rasp_nt_error(r));
	return n == 40000 ? 0 : WHY("%" PRIu64 " events, want 40000", n);
}

static void test_nettrace_read_bomb_stacks(void **state)
{
	(void)state;
	read_bounded("bomb-stacks", bomb_stacks_read);
}

/* bomb_metadata: 3.2 million rows redefining metadata id 1 (430 MB when every retired
 * definition was kept to the end), then the definition the one event uses. */
static int bomb_metadata_read(struct rasp_nt_reader *r, char *why, size_t cap)
{
	struct rasp_nt_item it;
	const struct rasp_nt_meta *m;
	int rc = rasp_nt_next(r, &it);

	if (rc != 1)
		return WHY("no event: %s", rc ? rasp_nt_error(r) : "the end");
	m = it.event.meta;
	if (strcmp(m->provider, "Contoso-Final") || strcmp(m->name, "Last") || m->event_id != 9 ||
	    m->version != 1 || m->keywords != 0x20)
		return WHY("the event's metadata is %s/%s %" PRIu32 " v%" PRIu32, m->provider,
			   m->name, m->event_id, m->version);
	rc = rasp_nt_next(r, &it);
	if (rc != 0)
		return WHY("after the event: %d %s", rc, rasp_nt_error(r));
	return rasp_nt_complete(r) ? 0 : WHY("not complete");
}

static void test_nettrace_read_bomb_metadata(void **state)
{
	(void)state;
	read_bounded("bomb-metadata", bomb_metadata_read);
}

/* bomb_threads: 100,000 V6 threads, 600,000 sorted events of the last one (182 s when each
 * event looked its thread up one by one). */
static int bomb_threads_read(struct rasp_nt_reader *r, char *why, size_t cap)
{
	struct rasp_nt_item it;
	uint64_t n = 0;
	int rc;

	while ((rc = rasp_nt_next(r, &it)) == 1) {
		if (it.kind != RASP_NT_ITEM_EVENT)
			return WHY("a loss item (%" PRIu64 ")", it.lost);
		if (it.event.thread_id != 200000 || it.event.pid != 4242 ||
		    it.event.sequence != n + 1)
			return WHY("event %" PRIu64 ": thread %" PRIu64 ", pid %" PRId64
				   ", sequence %" PRIu32,
				   n, it.event.thread_id, it.event.pid, it.event.sequence);
		n++;
	}
	if (rc != 0)
		return WHY("%s", rasp_nt_error(r));
	return n == 600000 ? 0 : WHY("%" PRIu64 " events, want 600000", n);
}

static void test_nettrace_read_bomb_threads(void **state)
{
	(void)state;
	read_bounded("bomb-threads", bomb_threads_read);
}

/* bomb_sequence_point: one V4 sequence point of 300,000 threads, ids descending (57 s when
 * each was inserted into a sorted array). Nothing lost: no thread had an event. */
static int bomb_sequence_point_read(struct rasp_nt_reader *r, char *why, size_t cap)
{
	struct rasp_nt_item it;
	int rc = rasp_nt_next(r, &it);

	if (rc != 0)
		return WHY("%s", rc < 0 ? rasp_nt_error(r) : "an item");
	return rasp_nt_complete(r) ? 0 : WHY("not complete");
}

static void test_nettrace_read_bomb_sequence_point(void **state)
{
	(void)state;
	read_bounded("bomb-sequence-point", bomb_sequence_point_read);
}

/* bomb_hash_flood: a sequence point of 200,000 thread ids whose hashes, were they not seeded
 * by the reader, would share their low 32 bits (one probe sequence of them all). */
static void test_nettrace_read_bomb_hash_flood(void **state)
{
	(void)state;
	read_bounded("bomb-hash-flood", bomb_sequence_point_read);
}

/* The same bombs read in process: what the reader's own accounting says it held. The stack is
 * kept once, its first 100 frames (kept_frames); the records of the held events and nothing
 * per event besides; one metadata definition at a time; a thread table as large as its
 * threads. */
static void test_nettrace_read_bomb_counters(void **state)
{
	char err[512];
	struct rasp_nt_item it;
	const struct rasp_nt_stats *st;
	struct rasp_nt_reader *r = rasp_nt_open(nt_path("bomb-stacks"), err, sizeof(err));
	uint64_t n = 0;
	int rc;

	(void)state;
	assert_non_null(r);
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		assert_int_equal(it.event.stack_len, 100);
		assert_int_equal(it.event.stack_dropped, 3996);
		assert_int_equal(it.event.stack[99], UINT64_C(0x7F0000000000) + 16 * 99);
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, 40000);
	st = rasp_nt_stats(r);
	assert_int_equal(st->frames_read, 4096);
	assert_int_equal(st->frames_kept, 100);
	assert_true(st->stack_bytes_peak <= 100 * 8 + 64);
	assert_int_equal(st->stack_bytes, 0); /* all released */
	assert_int_equal(st->held_events_peak, 40000);
	/* 40,000 records of about 100 bytes, in an array that doubles: 8 MiB at most. */
	assert_true(st->held_bytes_peak <= UINT64_C(8) << 20);
	assert_int_equal(st->held_events, 0);
	rasp_nt_close(r);

	r = rasp_nt_open(nt_path("bomb-metadata"), err, sizeof(err));
	assert_non_null(r);
	while ((rc = rasp_nt_next(r, &it)) == 1)
		;
	assert_int_equal(rc, 0);
	st = rasp_nt_stats(r);
	assert_int_equal(st->metadata_defined, 3200001);
	assert_int_equal(st->metadata_freed, 3200000);
	/* One definition at a time: the limit metadata_bytes could be 512. */
	assert_true(st->metadata_bytes_peak < 512);
	rasp_nt_close(r);

	r = rasp_nt_open(nt_path("bomb-threads"), err, sizeof(err));
	assert_non_null(r);
	while ((rc = rasp_nt_next(r, &it)) == 1)
		;
	assert_int_equal(rc, 0);
	st = rasp_nt_stats(r);
	assert_int_equal(st->threads_peak, 100000);
	assert_int_equal(st->capture_threads, 1);
	/* Sorted events go out one by one, not a block (100,000 of them) at a time. */
	assert_int_equal(st->held_events_peak, 1);
	rasp_nt_close(r);

	r = rasp_nt_open(nt_path("bomb-sequence-point"), err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(rasp_nt_next(r, &it), 0);
	assert_int_equal(rasp_nt_stats(r)->capture_threads, 300000);
	rasp_nt_close(r);
}

/* V6 metadata id 1 defined four times (make-nettrace.py redefine_held): held events keep the
 * definition they were read with, and each definition is freed once its id names another one
 * and its last event has gone out; a sequence point's flag 2 forgets the current one, its
 * flag 1 the threads. */
static void test_nettrace_read_redefine_held(void **state)
{
	static const struct {
		int ms;
		const char *provider, *name;
		uint32_t event_id;
	} want[] = {
	    {10, "Contoso-First", "First", 1},	 {15, "Contoso-Second", "Second", 2},
	    {20, "Contoso-First", "First", 1},	 {25, "Contoso-Second", "Second", 2},
	    {30, "Contoso-First", "First", 1},	 {35, "Contoso-Second", "Second", 2},
	    {40, "Contoso-Fourth", "Fourth", 4},
	};
	char err[512];
	struct rasp_nt_item it;
	struct rasp_nt_reader *r = rasp_nt_open(nt_path("v6-redefine-held"), err, sizeof(err));
	const struct rasp_nt_stats *st;
	size_t n = 0;
	int rc;

	(void)state;
	assert_non_null(r);
	st = rasp_nt_stats(r);
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_nt_meta *m = it.event.meta;

		assert_int_equal(it.kind, RASP_NT_ITEM_EVENT);
		assert_true(n < 7);
		assert_int_equal(it.event.timestamp, INT64_C(1000000000) + want[n].ms * 1000000);
		assert_string_equal(m->provider, want[n].provider);
		assert_string_equal(m->name, want[n].name);
		assert_int_equal(m->event_id, want[n].event_id);
		assert_int_equal(m->id, 1);
		/* Thread index 1 is defined again after the flush, for another thread. */
		assert_int_equal(it.event.thread_id, n < 6 ? 4242 : 4243);
		if (n == 0) /* all six held together: both definitions alive, Third freed */
			assert_int_equal(st->metadata_freed, 1);
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, 7);
	assert_int_equal(st->metadata_defined, 4);
	assert_int_equal(st->metadata_freed, 3);
	assert_int_equal(st->held_events_peak, 6);
	rasp_nt_close(r);
}

/* V6 thread index 1 defined, used and removed 1000 times for 1000 OS threads: each event gets
 * the thread of its time, and the table holds one thread at most. */
static void test_nettrace_read_thread_churn(void **state)
{
	char err[512];
	struct rasp_nt_item it;
	struct rasp_nt_reader *r = rasp_nt_open(nt_path("v6-thread-churn"), err, sizeof(err));
	uint64_t n = 0;
	int rc;

	(void)state;
	assert_non_null(r);
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		assert_int_equal(it.kind, RASP_NT_ITEM_EVENT);
		assert_int_equal(it.event.thread_id, 1000 + n);
		assert_int_equal(it.event.pid, 4242);
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, 1000);
	assert_int_equal(rasp_nt_stats(r)->threads_peak, 1);
	assert_int_equal(rasp_nt_stats(r)->threads, 0);
	assert_int_equal(rasp_nt_stats(r)->capture_threads, 1000);
	rasp_nt_close(r);
}

/* The offset of the first occurrence of bytes in a file, or -1. */
static long find_bytes(const char *path, const void *bytes, size_t len)
{
	FILE *f = fopen(path, "rb");
	long size = file_size(path), at = -1;
	char *data = malloc((size_t)size);
	void *p;

	assert_non_null(f);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	p = memmem(data, (size_t)size, bytes, len);
	if (p)
		at = (long)((char *)p - data);
	free(data);
	return at;
}

/* Reads a file within limits l to its error; the message must start with the file and
 * `at offset N: ` (N = at, or any offset when at < 0) and name the limit and its value. */
static void refused(const char *name, const struct rasp_nt_limits *l, long at, const char *why,
		    long *got_at)
{
	const char *path = nt_path(name);
	char err[512], prefix[4200];
	struct rasp_nt_item it;
	struct rasp_nt_reader *r = rasp_nt_open_limited(path, l, err, sizeof(err));
	const char *msg = err;
	int rc = -1;

	if (r) {
		while ((rc = rasp_nt_next(r, &it)) == 1)
			;
		msg = rasp_nt_error(r);
	}
	if (rc != -1)
		fail_msg("%s: read to its end within limits it should pass (want '%s')", name, why);
	snprintf(prefix, sizeof(prefix), "%s: at offset ", path);
	if (strncmp(msg, prefix, strlen(prefix)) != 0 || !strstr(msg, why))
		fail_msg("%s: '%s', want '%s...%s'", name, msg, prefix, why);
	*got_at = atol(msg + strlen(prefix));
	if (at >= 0 && *got_at != at)
		fail_msg("%s: '%s', want offset %ld", name, msg, at);
	rasp_nt_close(r);
}

/* Each limit refuses a file past it with the limit's name, its value and the offset; below
 * every limit the same files read (the tests above), and a redefined id's definitions do not
 * add up. */
static void test_nettrace_read_limits(void **state)
{
	/* bomb-stacks' stack block: FirstId 1, Count 1, 4096 frames of 8 bytes. */
	static const uint8_t stack_head[] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 0x80, 0, 0};
	/* bomb-sequence-point's 1001st thread: id 10,000,000 - 1000, number 1. */
	static const uint8_t sp_1001[] = {0x98, 0x92, 0x98, 0, 0, 0, 0, 0, 1, 0, 0, 0};
	char stacks[4096];
	long stack_at, at;
	struct rasp_nt_limits l;
	struct rasp_nt_item it;
	uint64_t offsets[1001];
	struct rasp_nt_reader *r;
	char err[512], why[128];
	size_t n = 0;
	int rc;

	(void)state;
	snprintf(stacks, sizeof(stacks), "%s", nt_path("bomb-stacks")); /* nt_path's rotate */
	stack_at = find_bytes(stacks, stack_head, sizeof(stack_head)) + 8;
	assert_true(stack_at > 8);
	/* Where bomb-stacks' events are (they come out in file order). */
	r = rasp_nt_open(stacks, err, sizeof(err));
	assert_non_null(r);
	while (n < 1001 && rasp_nt_next(r, &it) == 1)
		offsets[n++] = it.event.offset;
	assert_int_equal(n, 1001);
	rasp_nt_close(r);

	memset(&l, 0, sizeof(l));
	l.held_events = 1000;
	refused("bomb-stacks", &l, (long)offsets[1000], "limit held_events = 1000", &at);
	memset(&l, 0, sizeof(l));
	l.held_bytes = 65536;
	refused("bomb-stacks", &l, -1, "limit held_bytes = 65536", &at);
	for (n = 0; n < 1001 && offsets[n] != (uint64_t)at; n++)
		;
	assert_true(n < 1001); /* an event's offset */
	memset(&l, 0, sizeof(l));
	l.stack_frames = 1000;
	refused("bomb-stacks", &l, stack_at, "stack 1 of 4096 frames (limit stack_frames = 1000)",
		&at);
	memset(&l, 0, sizeof(l));
	l.stack_bytes = 512;
	refused("bomb-stacks", &l, stack_at, "limit stack_bytes = 512", &at);

	memset(&l, 0, sizeof(l));
	l.threads = 1000;
	refused("bomb-threads", &l, -1,
		"thread index 1001: more than 1000 threads defined at once (limit threads = 1000)",
		&at);
	refused("bomb-sequence-point", &l,
		find_bytes(nt_path("bomb-sequence-point"), sp_1001, sizeof(sp_1001)),
		"capture thread 9999000: more than 1000 threads with sequence numbers (limit "
		"threads = 1000)",
		&at);

	memset(&l, 0, sizeof(l));
	l.metadata_ids = 2;
	refused("v6", &l, -1, "metadata id 2 out of range 1..1 (limit metadata_ids = 2)", &at);
	memset(&l, 0, sizeof(l));
	l.metadata_bytes = 100;
	refused("v4", &l, -1, "limit metadata_bytes = 100", &at);
	memset(&l, 0, sizeof(l));
	l.event_bytes = 32;
	refused("v4", &l, -1, "payload bytes (limit event_bytes = 32)", &at);
	memset(&l, 0, sizeof(l));
	l.block_bytes = 64;
	refused("v4", &l, -1, "bytes (limit block_bytes = 64)", &at);
	{
		/* The offset is the block's size field: the size the message gives. */
		FILE *f = fopen(nt_path("v4"), "rb");
		uint8_t b[4];

		assert_non_null(f);
		assert_int_equal(fseek(f, at, SEEK_SET), 0);
		assert_int_equal(fread(b, 1, 4, f), 4);
		fclose(f);
		snprintf(why, sizeof(why), " of %u bytes (limit block_bytes = 64)",
			 (unsigned)(b[0] | b[1] << 8 | b[2] << 16 | (unsigned)b[3] << 24));
		refused("v4", &l, at, why, &at);
	}

	/* 600,000 sorted events in blocks of 100,000, holding two at most. */
	memset(&l, 0, sizeof(l));
	l.held_events = 2;
	r = rasp_nt_open_limited(nt_path("bomb-threads"), &l, err, sizeof(err));
	assert_non_null(r);
	while ((rc = rasp_nt_next(r, &it)) == 1)
		;
	if (rc != 0)
		fail_msg("%s", rasp_nt_error(r));
	rasp_nt_close(r);

	/* Frames past kept_frames are dropped, not refused, and counted. */
	memset(&l, 0, sizeof(l));
	l.kept_frames = 10;
	r = rasp_nt_open_limited(stacks, &l, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(rasp_nt_next(r, &it), 1);
	assert_int_equal(it.event.stack_len, 10);
	assert_int_equal(it.event.stack_dropped, 4086);
	rasp_nt_close(r);

	/* The defaults, as docs/eventpipe.md gives them. */
	rasp_nt_limits_default(&l);
	assert_int_equal(l.block_bytes, 64 << 20);
	assert_int_equal(l.event_bytes, 1 << 20);
	assert_int_equal(l.stack_frames, 4096);
	assert_int_equal(l.kept_frames, 100);
	assert_int_equal(l.stack_bytes, 64 << 20);
	assert_int_equal(l.held_events, 1 << 20);
	assert_int_equal(l.held_bytes, 256 << 20);
	assert_int_equal(l.metadata_ids, 1 << 20);
	assert_int_equal(l.metadata_bytes, 64 << 20);
	assert_int_equal(l.threads, 1 << 22);
}

/* ---- The real .NET Core 3.0 file ------------------------------------------------------------ */

static const char *dotnet_file, *dotnet_baseline;

/* TraceEvent's baseline row names and the (provider, event ids) behind them (as TraceEvent names
 * them). */
static const struct row {
	const char *name, *provider;
	uint32_t ids[2];
} rows[] = {
    {"Microsoft-DotNETCore-SampleProfiler/Thread/Sample",
     "Microsoft-DotNETCore-SampleProfiler",
     {0, 0}},
    {DOTNET "/AppDomainResourceManagement/ThreadCreated", DOTNET, {85, 85}},
    {DOTNET "/Contention/Start", DOTNET, {81, 81}},
    {DOTNET "/Contention/Stop", DOTNET, {91, 91}},
    {DOTNET "/GC", DOTNET, {200, 201}}, /* no typed template: both named "GC" */
    {DOTNET "/GC/AllocationTick", DOTNET, {10, 10}},
    {DOTNET "/GC/BulkMovedObjectRanges", DOTNET, {22, 22}},
    {DOTNET "/GC/FinalizersStart", DOTNET, {14, 14}},
    {DOTNET "/GC/FinalizersStop", DOTNET, {13, 13}},
    {DOTNET "/GC/GenerationRange", DOTNET, {23, 23}},
    {DOTNET "/GC/GlobalHeapHistory", DOTNET, {205, 205}},
    {DOTNET "/GC/HeapStats", DOTNET, {4, 4}},
    {DOTNET "/GC/MarkWithType", DOTNET, {202, 202}},
    {DOTNET "/GC/PerHeapHistory", DOTNET, {204, 204}},
    {DOTNET "/GC/PinObjectAtGCTime", DOTNET, {33, 33}},
    {DOTNET "/GC/RestartEEStart", DOTNET, {7, 7}},
    {DOTNET "/GC/RestartEEStop", DOTNET, {3, 3}},
    {DOTNET "/GC/Start", DOTNET, {1, 1}},
    {DOTNET "/GC/Stop", DOTNET, {2, 2}},
    {DOTNET "/GC/SuspendEEStart", DOTNET, {9, 9}},
    {DOTNET "/GC/SuspendEEStop", DOTNET, {8, 8}},
    {DOTNET "/GC/Triggered", DOTNET, {35, 35}},
    {DOTNET "/Loader/AssemblyLoad", DOTNET, {154, 154}},
    {DOTNET "/Loader/DomainModuleLoad", DOTNET, {151, 151}},
    {DOTNET "/Loader/ModuleLoad", DOTNET, {152, 152}},
    {DOTNET "/Method/JittingStarted", DOTNET, {145, 145}},
    {DOTNET "/Method/LoadVerbose", DOTNET, {143, 143}},
    {DOTNET "/Method/R2RGetEntryPoint", DOTNET, {159, 159}},
    {DOTNET "/ThreadPool/Dequeue", DOTNET, {62, 62}},
    {DOTNET "/ThreadPool/Enqueue", DOTNET, {61, 61}},
    {DOTNET "/ThreadPoolWorkerThread/Start", DOTNET, {50, 50}},
    {DOTNET "/ThreadPoolWorkerThread/Wait", DOTNET, {57, 57}},
    {DOTNET "/ThreadPoolWorkerThreadAdjustment/Adjustment", DOTNET, {55, 55}},
    {DOTNET "/ThreadPoolWorkerThreadAdjustment/Sample", DOTNET, {54, 54}},
    {DOTNET "/ThreadPoolWorkerThreadAdjustment/Stats", DOTNET, {56, 56}},
    {"Microsoft-Windows-DotNETRuntimePrivate/GC/PinPlugAtGCTime",
     "Microsoft-Windows-DotNETRuntimePrivate",
     {199, 199}},
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

struct tally {
	uint64_t count;
	char first[32]; /* MSec of the first, as TraceEvent prints it */
	uint64_t tid;
};

static int row_of(const struct rasp_nt_meta *m)
{
	for (size_t i = 0; i < NROWS; i++)
		if (!strcmp(m->provider, rows[i].provider) &&
		    (m->event_id == rows[i].ids[0] || m->event_id == rows[i].ids[1]))
			return (int)i;
	return -1;
}

/* The baseline: "Name, count, <Event MSec=  "18.1697" ... TID="7532" ...". */
static void baseline_load(struct tally *want)
{
	FILE *f = fopen(dotnet_baseline, "r");
	static char line[1 << 16];
	size_t found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *name = line, *comma = strstr(line, ", "), *ms, *tid;

		if (!strncmp(name, "\xEF\xBB\xBF", 3))
			name += 3;
		if (!comma)
			continue;
		*comma = '\0';
		for (size_t i = 0; i < NROWS; i++) {
			if (strcmp(name, rows[i].name) != 0)
				continue;
			want[i].count = strtoull(comma + 2, NULL, 10);
			ms = strstr(comma + 2, "MSec=");
			tid = strstr(comma + 2, " TID=\"");
			assert_non_null(ms);
			assert_non_null(tid);
			ms += strspn(ms + 5, " \"") + 5;
			snprintf(want[i].first, sizeof(want[i].first), "%.*s",
				 (int)strcspn(ms, "\""), ms);
			want[i].tid = strtoull(tid + 6, NULL, 10);
			found++;
		}
	}
	fclose(f);
	if (found != NROWS)
		fail_msg("%s: %zu of the %zu rows found", dotnet_baseline, found, NROWS);
}

/* Every baseline row: count, and time (ms since the sync time, 4 decimals) and thread of its
 * first event in timestamp order. The file is complete, loses nothing, comes out in order;
 * its 35 Method/ILToNativeMap events are the ones TraceLog drops from the baseline. And the
 * first AllocationTick decodes as the baseline shows it. */
static void test_nettrace_read_dotnet_baseline(void **state)
{
	struct tally want[NROWS] = {0}, got[NROWS] = {0};
	char err[512], strs[1024];
	struct rasp_nt_reader *r = rasp_nt_open(dotnet_file, err, sizeof(err));
	const struct rasp_nt_info *in;
	struct rasp_nt_item it;
	uint64_t events = 0, il_maps = 0, baseline_total = 0;
	int64_t last = INT64_MIN;
	bool decoded = false;
	int rc;

	(void)state;
	baseline_load(want);
	if (!r)
		fail_msg("%s", err);
	in = rasp_nt_info(r);
	assert_int_equal(in->format, 4);
	assert_int_equal(in->pid, 10064);
	assert_int_equal(in->pointer_size, 8);
	assert_int_equal(in->frequency, 3124099);
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_nt_event *e = &it.event;
		int row;

		if (it.kind != RASP_NT_ITEM_EVENT)
			fail_msg("a LOST item of %" PRIu64 " events", it.lost);
		events++;
		if (e->timestamp < last)
			fail_msg("event %" PRIu64 " at offset %" PRIu64 " goes back in time",
				 events, e->offset);
		last = e->timestamp;
		if (!strcmp(e->meta->provider, DOTNET) && e->meta->event_id == 190)
			il_maps++;
		row = row_of(e->meta);
		if (row < 0)
			continue;
		if (!got[row].count++) {
			snprintf(got[row].first, sizeof(got[row].first), "%.4f",
				 (double)(e->timestamp - in->sync_ticks) * 1000.0 /
				     (double)in->frequency);
			got[row].tid = e->thread_id;
		}
		if (row == 5 && !decoded) {
			union rasp_nt_value v[16];

			decoded = true;
			assert_int_equal(e->meta->version, 3);
			assert_non_null(e->meta->desc);
			assert_int_equal(rasp_nt_decode(e->meta->desc, e->payload, e->payload_len,
							8, v, strs, sizeof(strs)),
					 0);
			assert_int_equal(v[0].u, 0x196A0);		    /* AllocationAmount */
			assert_int_equal(v[1].u, 0);			    /* Small */
			assert_int_equal(v[2].u, 3);			    /* ClrInstanceID */
			assert_int_equal(v[3].u, 104096);		    /* AllocationAmount64 */
			assert_int_equal(v[4].u, UINT64_C(0x7FFEA911EA28)); /* TypeID */
			assert_string_equal(v[5].s, "System.Object[]");
			assert_int_equal(v[6].u, 0);			   /* HeapIndex */
			assert_int_equal(v[7].u, UINT64_C(0x19A00017FE8)); /* Address */
		}
	}
	if (rc != 0)
		fail_msg("%s", rasp_nt_error(r));
	assert_true(rasp_nt_complete(r));
	assert_int_equal(rasp_nt_events(r), events);
	for (size_t i = 0; i < NROWS; i++) {
		if (got[i].count != want[i].count || strcmp(got[i].first, want[i].first) != 0 ||
		    got[i].tid != want[i].tid)
			fail_msg("%s: %" PRIu64 " events, first at %s ms on %" PRIu64
				 "; the baseline: %" PRIu64 ", %s ms on %" PRIu64,
				 rows[i].name, got[i].count, got[i].first, got[i].tid,
				 want[i].count, want[i].first, want[i].tid);
		baseline_total += want[i].count;
	}
	assert_int_equal(il_maps, 35);
	assert_int_equal(events, baseline_total + il_maps);
	/* The figures of the guide, in case the baseline file itself changed. */
	assert_int_equal(events, 105540);
	assert_int_equal(got[5].count, 35458);
	assert_string_equal(got[5].first, "2331.8048");
	assert_int_equal(got[5].tid, 6920);
	assert_int_equal(got[0].count, 35161);
	rasp_nt_close(r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest generated[] = {
	    cmocka_unit_test(test_nettrace_read_forms_agree),
	    cmocka_unit_test(test_nettrace_read_vector),
	    cmocka_unit_test(test_nettrace_read_streams),
	    cmocka_unit_test(test_nettrace_read_utf16_names),
	    cmocka_unit_test(test_nettrace_read_losses),
	    cmocka_unit_test(test_nettrace_read_truncated),
	    cmocka_unit_test(test_nettrace_read_every_prefix),
	    cmocka_unit_test(test_nettrace_read_corrupt),
	    cmocka_unit_test(test_nettrace_read_sync_time),
	    cmocka_unit_test(test_nettrace_read_not_nettrace),
	    cmocka_unit_test(test_nettrace_read_bomb_stacks),
	    cmocka_unit_test(test_nettrace_read_bomb_metadata),
	    cmocka_unit_test(test_nettrace_read_bomb_threads),
	    cmocka_unit_test(test_nettrace_read_bomb_sequence_point),
	    cmocka_unit_test(test_nettrace_read_bomb_hash_flood),
	    cmocka_unit_test(test_nettrace_read_bomb_counters),
	    cmocka_unit_test(test_nettrace_read_redefine_held),
	    cmocka_unit_test(test_nettrace_read_thread_churn),
	    cmocka_unit_test(test_nettrace_read_limits),
	};
	const struct CMUnitTest dotnet[] = {
	    cmocka_unit_test(test_nettrace_read_dotnet_baseline),
	};

	/* test-nettrace-read DIR, or test-nettrace-read --dotnet FILE BASELINE ZIP */
	if (argc == 5 && !strcmp(argv[1], "--dotnet")) {
		if (access(argv[4], R_OK) != 0) {
			printf("skipped: ../shared/data/dotnet not present\n");
			return 77;
		}
		dotnet_file = argv[2];
		dotnet_baseline = argv[3];
		return cmocka_run_group_tests(dotnet, NULL, NULL);
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR | --dotnet FILE BASELINE ZIP\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	return cmocka_run_group_tests(generated, NULL, NULL);
}
