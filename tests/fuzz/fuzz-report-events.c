/* libFuzzer target: decoded events, as any source hands them to the consumer, applied to a
 * tally and rendered by every writer. Whatever the events (sizes, offsets, means, ids, type
 * and process names of any bytes; stacks, loaded objects, build ids and .NET methods at any
 * * addresses; frees, one at a time or in batches of any age, and heaps destroyed at addresses
 * in a small window, so that they meet
 * samples), nothing may crash or hang, every json report must parse, in-use reports at the
 * end, the peak or a time included, and rasp diff's statistics must take two such tallies. Objects
 * are named from a fixed list of paths (this program itself, a missing file, a directory, a
 * device), never from the input, so a fuzz run reads no arbitrary file. */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/diff.h"
#include "report/event.h"
#include "write/writer.h"

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes && in->n; i++, in->n--)
		v = v << 8 | *in->p++;
	return v;
}

/* A NUL-terminated string of up to 40 bytes from the input (any bytes but NUL). */
static const char *str(struct in *in, char *buf)
{
	size_t len = take(in, 1) % 41, k = 0;

	for (size_t i = 0; i < len && in->n; i++) {
		uint8_t c = (uint8_t)take(in, 1);

		if (c)
			buf[k++] = (char)c;
	}
	buf[k] = '\0';
	return buf;
}

static const char *const paths[] = {"/proc/self/exe", "/nonexistent/librasp-fuzz.so", "/",
				    "/dev/null", ""};

static struct rasp_tally *fill(struct in *in, unsigned group_by, double mean,
			       const struct rasp_report_options *moment)
{
	struct rasp_tally *t = rasp_tally_create(group_by, mean);
	char type[48], proc[48], why[160], ns[48], name[48];
	uint64_t frames[70];
	uint64_t addresses[RASP_FREES_MAX], sizes[RASP_FREES_MAX], ages[RASP_FREES_MAX];
	uint8_t id[24];

	if (!t || rasp_report_prepare(t, moment))
		abort();
	for (int i = 0; i < 2000 && in->n; i++) {
		uint8_t op = (uint8_t)take(in, 1);
		struct rasp_event e = {.pid = RASP_ID_UNKNOWN, .tid = RASP_ID_UNKNOWN};
		const char *field;

		if (op >= 0xf0) {
			if (op & 1)
				rasp_tally_add_discarded_events(t, take(in, 2), op & 2);
			else
				rasp_tally_add_discarded_packets(t, take(in, 1), op & 2);
			continue;
		}
		e.role = (enum rasp_role)(op % (RASP_ROLE_FREES + 1));
		e.type = op & 0x10 ? str(in, type) : NULL;
		e.kind = take(in, 1) % 5;
		/* Sizes across the whole range, but mostly small. */
		e.size = op & 0x20 ? take(in, 8) : take(in, 2);
		e.offset = op & 0x40 ? take(in, 8) : take(in, 1);
		e.mean = op & 0x80 ? take(in, 8) : take(in, 3);
		e.amount = take(in, 4);
		if (op & 0x04)
			e.pid = (int64_t)(take(in, 1) % 8);
		if (op & 0x08)
			e.tid = (int64_t)(take(in, 1) % 16);
		e.procname = op & 0x02 ? str(in, proc) : NULL;
		e.timed = op & 0x01;
		e.ns = (int64_t)take(in, 8);
		{
			/* Where the object was: 32 addresses of 3 heaps, or none. */
			uint8_t a = (uint8_t)take(in, 1);

			e.has_address = a & 1;
			e.address = (uint64_t)(a >> 3) << 4;
			e.instance = (a >> 1) % 3;
		}
		if (e.role >= RASP_ROLE_STACK) {
			/* Addresses in a small window, so that frames, objects and methods meet. */
			e.nframes = take(in, 1) % 70;
			for (size_t k = 0; k < e.nframes; k++)
				frames[k] = take(in, 2) << 4;
			e.frames = frames;
			e.base = take(in, 2) << 4;
			e.memsz = take(in, 2) << 2;
			e.path = paths[take(in, 1) % 5];
			e.pic = op & 0x20;
			e.build_id_len = take(in, 1) % 25;
			for (size_t k = 0; k < e.build_id_len; k++)
				id[k] = (uint8_t)take(in, 1);
			e.build_id = id;
			e.method_namespace = op & 0x40 ? str(in, ns) : NULL;
			e.method_name = op & 0x80 ? str(in, name) : NULL;
		}
		if (e.role == RASP_ROLE_FREES) {
			/* A batch of frees at the samples' addresses, of any age: Frees up to 69
			 * (past the limit), an array now and then of another length. */
			uint8_t lens = (uint8_t)take(in, 1);

			e.nfrees = take(in, 1) % 70;
			for (size_t k = 0; k < e.nfrees && k < RASP_FREES_MAX; k++) {
				uint8_t a = (uint8_t)take(in, 1);

				addresses[k] = (uint64_t)(a >> 3) << 4;
				sizes[k] = a & 1 ? take(in, 2) : take(in, 1);
				ages[k] = a & 2 ? take(in, 8) : take(in, 3);
			}
			e.free_addresses = addresses;
			e.free_sizes = sizes;
			e.free_ages = ages;
			e.free_addresses_len = e.nfrees + (lens == 1);
			e.free_sizes_len = e.nfrees - (lens == 2 && e.nfrees);
			e.free_ages_len = e.nfrees + 2 * (lens == 3);
		}
		if (rasp_event_apply(t, &e, &field, why, sizeof(why)) == -EINVAL)
			rasp_tally_add_skipped(t);
	}
	return t;
}

static void render(struct rasp_tally *t, const struct rasp_writer *w, double confidence,
		   const struct rasp_report_options *moment)
{
	struct rasp_report_options opt;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		abort();
	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "%s", w->name);
	opt.confidence = confidence;
	opt.top = len % 3;
	opt.inuse = moment->inuse;
	opt.at = moment->at;
	opt.lifetimes = moment->lifetimes;
	rc = rasp_report_render(t, &opt, "--sampling-mean", f);
	/* In use, from events that cannot say what died: refused, nothing written. */
	if (rc == -ENODATA && opt.inuse) {
		fclose(f);
		if (len)
			abort(); /* nothing may be written then */
		free(buf);
		return;
	}
	/* A valid tally always renders; a format of 64-bit integers (pprof) alone refuses an
	 * estimate past them (-ERANGE) rather than write a clamped, wrong one. */
	if (rc != 0 && !(rc == -ERANGE && w->integers)) {
		fprintf(stderr, "the %s writer failed: %s\n", w->name, strerror(-rc));
		abort();
	}
	fclose(f);
	if (w == &rasp_writer_json) {
		json_object *j = json_tokener_parse(buf);

		if (!j)
			abort(); /* the json writer must always write json */
		json_object_put(j);
	}
	free(buf);
}

static void side(struct rasp_tally *t, double confidence, struct rasp_rows *rows,
		 struct rasp_diff_item **items, struct rasp_diff_side *s)
{
	if (rasp_rows_build(t, confidence, rows))
		abort();
	*items = calloc(rows->n + 1, sizeof(**items));
	if (!*items)
		abort();
	for (size_t i = 0; i < rows->n; i++)
		(*items)[i] =
		    (struct rasp_diff_item){rasp_row_type(t, &rows->v[i]), rows->v[i].est};
	*s = (struct rasp_diff_side){"side", *items, rows->n, t->default_mean};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	unsigned group_by = (unsigned)take(&in, 1) & (RASP_GROUP_ALL | RASP_GROUP_WHERE);
	double mean = 1.0 + (double)(take(&in, 6) % (UINT64_C(1) << 48));
	double confidence = 0.5 + 0.499 * (double)take(&in, 1) / 255.0;
	uint8_t when = (uint8_t)take(&in, 1);
	struct rasp_report_options moment = {.inuse = when & 1,
					     .lifetimes = when & 2,
					     .at = when >> 2 == 0   ? RASP_AT_END
						   : when >> 2 == 1 ? RASP_AT_PEAK
								    : 1e-6 * (when >> 2)};
	struct rasp_tally *a = fill(&in, group_by, mean, &moment), *b;
	struct rasp_rows ra, rb;
	struct rasp_diff_item *ia, *ib;
	struct rasp_diff_side sa, sb;
	struct rasp_diff_change *changes;
	size_t n;

	for (const struct rasp_writer *const *w = rasp_writers; *w; w++)
		render(a, *w, confidence, &moment);
	/* The rest of the input is the other side of a diff (by type, as rasp diff reads it). */
	b = fill(&in, RASP_GROUP_TYPE, mean, &moment);
	rasp_tally_destroy(a);
	a = fill(&(struct in){data, size}, RASP_GROUP_TYPE, mean, &moment);
	side(a, confidence, &ra, &ia, &sa);
	side(b, confidence, &rb, &ib, &sb);
	if (rasp_diff_compute(&sa, &sb, confidence, &changes, &n))
		abort();
	free(changes);
	free(ia);
	free(ib);
	rasp_rows_free(&ra);
	rasp_rows_free(&rb);
	rasp_tally_destroy(a);
	rasp_tally_destroy(b);
	return 0;
}
