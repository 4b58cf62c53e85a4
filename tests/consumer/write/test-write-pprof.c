/* Tests of consumer/write/write-pprof.c on real stacks: the frames are return addresses of this
 * program's own functions (glibc's backtrace from fixture_alloc,
 * tests/consumer/stacks/stack-fixture.c), this executable is the process's module (found with
 * dl_iterate_phdr, with its build id), and the report symbolizes them from its DWARF (stacks.cmake
 * builds it with -g). The output is gunzipped and decoded with the code protoc-c generated from
 * consumer/write/profile.proto, and every field is checked against the rows and the fixture: sample
 * types, values (the estimates, rounded), labels, locations per (process, address) with their
 * lines, functions per (name, file), mappings with build ids. Then `go tool pprof` reads it (-raw,
 * -top); without Go that part says it skipped. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "stack-fixture.h"
#include "test-tools.h"
#include "write/writer.h"

#define PID  4242
#define PID2 4343
#define MEAN 4096.0

/* Where no object was recorded for the address: a file that does not exist. */
#define ODD_BASE UINT64_C(0x7f0000000000)
#define ODD_PATH "/nonexistent/lib odd;name.so"
#define ODD_NAME "lib odd;name.so+0xff"

struct smp {
	const char *type;
	uint64_t kind;
	int64_t pid, tid;
	uint64_t size, offset;
	int stack; /* 0: none, 1: A, 2: B1, 3: B2, 4: the odd object's frame under root */
};

static const struct smp samples[] = {
    {"Demo.Node", 0, PID, PID + 1, 72, 5, 1},
    {"Demo.Node", 0, PID, PID + 1, 96, 0, 1},
    {"Demo.Node", 1, PID, PID + 2, 90000, 12345, 1},
    {"Demo.Node", 0, PID2, PID2 + 1, 72, 70, 1},
    {"System.String", 0, PID, PID + 1, 30, 29, 2},
    {"System.String", 0, PID, PID + 1, 1000, 999, 3},
    {"System.String", 0, PID, PID + 1, 64, 8, 1},
    {"Demo.Leaf", 2, PID, PID + 1, 4096, 100, 0},
    {"Demo.Leaf", 0, PID, PID + 1, 200000, 1500, 4},
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))

struct fixture {
	struct rasp_tally *t;
	struct rasp_report_options opt;
	struct rasp_test_object self;
	struct stack a, b1, b2;
	uint64_t odd[2];
};

static void frames_of(const struct fixture *f, int which, const uint64_t **frames, size_t *n)
{
	*n = which == 0 ? 0 : which == 4 ? 2 : 3;
	*frames = which == 1 ? f->a.pc : which == 2 ? f->b1.pc : which == 3 ? f->b2.pc : f->odd;
}

static void fixture_init(struct fixture *f, unsigned group_by)
{
	memset(f, 0, sizeof(*f));
	f->self = rasp_test_object_of((const void *)fixture_root);
	fixture_root(&f->a, &f->b1, &f->b2);
	fixture_own_frames(&f->a, &f->self);
	fixture_own_frames(&f->b1, &f->self);
	fixture_own_frames(&f->b2, &f->self);
	assert_int_equal(f->b1.pc[0], f->b2.pc[0]);
	assert_true(f->b1.pc[1] != f->b2.pc[1]);
	f->odd[0] = ODD_BASE + 0x100;
	f->odd[1] = f->a.pc[2];
	rasp_report_options_init(&f->opt);
	snprintf(f->opt.format, sizeof(f->opt.format), "pprof");
	f->opt.group_by = group_by;
	f->t = rasp_tally_create(rasp_report_keys(&f->opt), RASP_DEFAULT_SAMPLING_MEAN);
	assert_non_null(f->t);
	/* The odd object recorded before the executable, as a state dump may: the executable
	 * still comes first, found by the process's name (a procname: 15 bytes at most). */
	assert_int_equal(rasp_modules_add(&f->t->modules, PID, ODD_BASE, 0x1000, ODD_PATH, true),
			 0);
	rasp_test_add_object(f->t, &f->self, PID);
	rasp_test_add_object(f->t, &f->self, PID2);
	{
		const char *base = strrchr(f->self.path, '/');
		const char *name = base ? base + 1 : f->self.path;
		char comm[16];
		size_t len = strlen(name) < sizeof(comm) - 1 ? strlen(name) : sizeof(comm) - 1;

		memcpy(comm, name, len);
		comm[len] = '\0';
		assert_int_equal(rasp_tally_set_process_name(f->t, PID, comm), 0);
	}
	assert_int_equal(rasp_tally_set_mean(f->t, PID, RASP_ID_UNKNOWN, MEAN), 0);
	assert_int_equal(rasp_tally_set_mean(f->t, PID2, RASP_ID_UNKNOWN, MEAN), 0);
	rasp_tally_note_time(f->t, 1000000000);
	rasp_tally_note_time(f->t, 2500000000);
	for (size_t i = 0; i < NSAMPLES; i++) {
		const struct smp *s = &samples[i];
		const uint64_t *frames;
		size_t n;

		frames_of(f, s->stack, &frames, &n);
		assert_int_equal(rasp_tally_add_sample_stack(f->t, s->type, s->kind, s->pid, s->tid,
							     s->size, s->offset, frames, n),
				 0);
	}
}

static void fixture_fini(struct fixture *f)
{
	rasp_tally_destroy(f->t);
	rasp_report_options_fini(&f->opt);
}

/* A new temporary file's name in path ("...XXXXXX"), for go tool pprof to read. */
static void temp_path(char *path)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
}

/* The report rendered into the file at path (emptied first), read back whole. */
static uint8_t *render(struct fixture *f, const char *path, size_t *len)
{
	int fd = open(path, O_RDWR | O_TRUNC);
	FILE *out;
	uint8_t *bytes;
	long n;

	assert_true(fd >= 0);
	out = fdopen(fd, "w+b");
	assert_non_null(out);
	assert_int_equal(rasp_report_render(f->t, &f->opt, "--sampling-mean", out), 0);
	n = ftell(out);
	assert_true(n > 0);
	bytes = malloc((size_t)n);
	assert_non_null(bytes);
	rewind(out);
	assert_int_equal(fread(bytes, 1, (size_t)n, out), (size_t)n);
	assert_int_equal(fclose(out), 0);
	*len = (size_t)n;
	return bytes;
}

/* Gunzips and decodes; fails unless the bytes are one gzip member holding a Profile. */
static Perftools__Profiles__Profile *decode(const uint8_t *gz, size_t len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *raw = malloc(cap);
	z_stream z = {0};
	Perftools__Profiles__Profile *p;
	int zr;

	assert_non_null(raw);
	assert_true(len > 2 && gz[0] == 0x1f && gz[1] == 0x8b);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	do {
		if (n == cap) {
			raw = realloc(raw, cap *= 2);
			assert_non_null(raw);
		}
		z.next_out = raw + n;
		z.avail_out = (uInt)(cap - n);
		zr = inflate(&z, Z_NO_FLUSH);
		assert_true(zr == Z_OK || zr == Z_STREAM_END);
		n = cap - z.avail_out;
	} while (zr != Z_STREAM_END);
	assert_int_equal(z.avail_in, 0);
	inflateEnd(&z);
	p = perftools__profiles__profile__unpack(NULL, n, raw);
	free(raw);
	assert_non_null(p);
	return p;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const Perftools__Profiles__Label *
label(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (strcmp(str(p, s->label[i]->key), key) == 0)
			return s->label[i];
	return NULL;
}

/* What frame k of a stack must read: function, line (0: none), whether in the executable. */
static void expect_frame(const struct fixture *f, int which, size_t k, const char **fn, int *line)
{
	static const char *const a[] = {"fixture_alloc", "fixture_mid_a", "fixture_root"};
	static const char *const b[] = {"fixture_alloc", "fixture_mid_b", "fixture_root"};
	const struct stack *st = which == 1 ? &f->a : which == 2 ? &f->b1 : &f->b2;

	if (which == 4) {
		*fn = k ? "fixture_root" : ODD_NAME;
		*line = k ? f->a.line[2] : 0;
		return;
	}
	*fn = which == 1 ? a[k] : b[k];
	*line = st->line[k];
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The row's stack as one of the fixture's (1..4, 0: none). */
static int which_stack(const struct fixture *f, const struct rasp_row *row)
{
	const struct rasp_stack *st = rasp_stacks_get(&f->t->stacks, row->stack);

	for (int w = 0; w <= 4; w++) {
		const uint64_t *frames;
		size_t n;

		frames_of(f, w, &frames, &n);
		if ((st ? st->n : 0) == n &&
		    (!n || memcmp(rasp_stacks_frames(&f->t->stacks, st), frames, n * 8) == 0))
			return w;
	}
	fail_msg("row with an unknown stack");
	return -1;
}

static void test_write_pprof_fields(void **state)
{
	(void)state;
	struct fixture f;
	struct rasp_rows rows;
	char path[] = "/tmp/rasp-test-pprof-XXXXXX", hex[2 * RASP_BUILD_ID_MAX + 1] = "";
	size_t len;
	uint8_t *bytes;
	Perftools__Profiles__Profile *p;
	size_t self_maps = 0;

	fixture_init(&f, RASP_GROUP_KIND | RASP_GROUP_PROCESS);
	temp_path(path);
	bytes = render(&f, path, &len);
	unlink(path);
	p = decode(bytes, len);
	assert_int_equal(rasp_rows_build(f.t, f.opt.confidence, &rows), 0);

	/* The header. */
	assert_string_equal(str(p, 0), "");
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->sample_type[0]->type), "alloc_objects");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "alloc_space");
	assert_string_equal(str(p, p->sample_type[1]->unit), "bytes");
	assert_string_equal(str(p, p->default_sample_type), "alloc_space");
	assert_non_null(p->period_type);
	assert_string_equal(str(p, p->period_type->type), "space");
	assert_string_equal(str(p, p->period_type->unit), "bytes");
	assert_int_equal(p->period, 4096);
	assert_int_equal(p->duration_nanos, 1500000000);
	assert_int_equal(p->n_comment, 0);
	/* Every string once. */
	for (size_t i = 0; i < p->n_string_table; i++)
		for (size_t j = i + 1; j < p->n_string_table; j++)
			assert_string_not_equal(p->string_table[i], p->string_table[j]);

	/* Ids are 1..n in order, so the checks below index by id - 1. */
	for (size_t i = 0; i < p->n_location; i++)
		assert_int_equal(p->location[i]->id, i + 1);
	for (size_t i = 0; i < p->n_function; i++)
		assert_int_equal(p->function[i]->id, i + 1);
	for (size_t i = 0; i < p->n_mapping; i++)
		assert_int_equal(p->mapping[i]->id, i + 1);

	/* Mappings: the executable once per process, the odd object once; the program (pprof's
	 * "File:") first. */
	if (f.self.build_id_len)
		for (size_t i = 0; i < f.self.build_id_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", f.self.build_id[i]);
	assert_int_equal(p->n_mapping, 3);
	assert_string_equal(str(p, p->mapping[0]->filename), f.self.path);
	for (size_t i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = p->mapping[i];

		assert_false(m->has_inline_frames);
		if (strcmp(str(p, m->filename), ODD_PATH) == 0) {
			assert_int_equal(m->memory_start, ODD_BASE);
			assert_int_equal(m->memory_limit, ODD_BASE + 0x1000);
			assert_string_equal(str(p, m->build_id), "");
			assert_false(m->has_functions);
			assert_false(m->has_filenames);
			assert_false(m->has_line_numbers);
			continue;
		}
		self_maps++;
		assert_string_equal(str(p, m->filename), f.self.path);
		assert_int_equal(m->memory_start, f.self.base);
		assert_int_equal(m->memory_limit, f.self.base + f.self.size);
		assert_string_equal(str(p, m->build_id), hex);
		assert_true(m->has_functions);
		assert_true(m->has_filenames);
		assert_true(m->has_line_numbers);
	}
	assert_int_equal(self_maps, 2);

	/* Functions per (name, file): four of this file, the odd frame's and "(no stack)". */
	assert_int_equal(p->n_function, 6);
	for (size_t i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *fn = p->function[i];
		const char *name = str(p, fn->name);

		assert_string_equal(str(p, fn->system_name), name);
		if (strncmp(name, "fixture_", 8) == 0)
			assert_true(ends_with(str(p, fn->filename), "stack-fixture.c"));
		else
			assert_string_equal(str(p, fn->filename), "");
		for (size_t j = i + 1; j < p->n_function; j++)
			assert_false(fn->name == p->function[j]->name &&
				     fn->filename == p->function[j]->filename);
	}

	/* Locations per (process, address): the executable's mapping differs by process.
	 * Process 4242: six addresses of A, B1, B2 and the odd frame; 4343: A's three; and
	 * "(no stack)". */
	assert_int_equal(p->n_location, 11);
	for (size_t i = 0; i < p->n_location; i++)
		for (size_t j = i + 1; j < p->n_location; j++)
			assert_false(p->location[i]->mapping_id == p->location[j]->mapping_id &&
				     p->location[i]->address == p->location[j]->address);

	/* One sample per row, in the rows' order, each checked against its row. */
	assert_int_equal(p->n_sample, rows.n);
	for (size_t i = 0; i < rows.n; i++) {
		const struct rasp_row *row = &rows.v[i];
		const Perftools__Profiles__Sample *s = p->sample[i];
		const Perftools__Profiles__Label *l;
		int which = which_stack(&f, row);
		const uint64_t *frames;
		size_t depth;
		char kind[32];

		frames_of(&f, which, &frames, &depth);
		assert_int_equal(s->n_value, 2);
		assert_int_equal(s->value[0], llround(row->est.objects));
		assert_int_equal(s->value[1], llround(row->est.bytes));
		/* Estimates, not sample counts. */
		assert_true(s->value[1] > (int64_t)(2 * row->est.samples));

		assert_int_equal(s->n_label, 6);
		assert_non_null(l = label(p, s, "type"));
		assert_string_equal(str(p, l->str), rasp_row_type(f.t, row));
		assert_non_null(l = label(p, s, "bytes_low"));
		assert_int_equal(l->num, llround(row->est.bytes_low));
		assert_string_equal(str(p, l->num_unit), "bytes");
		assert_non_null(l = label(p, s, "bytes_high"));
		assert_int_equal(l->num, llround(row->est.bytes_high));
		assert_string_equal(str(p, l->num_unit), "bytes");
		assert_true(label(p, s, "bytes_low")->num <= s->value[1] && s->value[1] <= l->num);
		assert_non_null(l = label(p, s, "samples"));
		assert_int_equal(l->num, row->est.samples);
		assert_non_null(l = label(p, s, "kind"));
		assert_string_equal(str(p, l->str), rasp_kind_name(row->kind, kind, sizeof(kind)));
		assert_non_null(l = label(p, s, "process"));
		assert_int_equal(l->num, row->process);

		if (!depth) {
			const Perftools__Profiles__Location *loc;

			assert_int_equal(s->n_location_id, 1);
			loc = p->location[s->location_id[0] - 1];
			assert_int_equal(loc->mapping_id, 0);
			assert_int_equal(loc->address, 0);
			assert_int_equal(loc->n_line, 1);
			assert_string_equal(
			    str(p, p->function[loc->line[0]->function_id - 1]->name), "(no stack)");
			continue;
		}
		/* Innermost first, as the stack holds them. */
		assert_int_equal(s->n_location_id, depth);
		for (size_t k = 0; k < depth; k++) {
			const Perftools__Profiles__Location *loc;
			const Perftools__Profiles__Mapping *m;
			const char *fn;
			int line;

			assert_true(s->location_id[k] >= 1 && s->location_id[k] <= p->n_location);
			loc = p->location[s->location_id[k] - 1];
			expect_frame(&f, which, k, &fn, &line);
			/* The call instruction: the return address less one. */
			assert_int_equal(loc->address, frames[k] - 1);
			assert_false(loc->is_folded);
			assert_true(loc->mapping_id >= 1 && loc->mapping_id <= p->n_mapping);
			m = p->mapping[loc->mapping_id - 1];
			assert_true(m->memory_start <= loc->address &&
				    loc->address < m->memory_limit);
			assert_int_equal(loc->n_line, 1);
			assert_string_equal(
			    str(p, p->function[loc->line[0]->function_id - 1]->name), fn);
			assert_int_equal(loc->line[0]->line, line);
			if (strcmp(fn, ODD_NAME) != 0)
				assert_string_equal(str(p, m->filename), f.self.path);
		}
	}
	rasp_rows_free(&rows);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(bytes);
	fixture_fini(&f);
}

/* The notes as comments; no common sampling mean, no period; a second render is identical; an
 * empty report is still a profile. */
static void test_write_pprof_comments_and_reproducible(void **state)
{
	(void)state;
	struct fixture f;
	char path[] = "/tmp/rasp-test-pprof-XXXXXX";
	size_t len1, len2;
	uint8_t *one, *two;
	Perftools__Profiles__Profile *p;
	int found = 0;

	fixture_init(&f, 0);
	/* A process with no SamplingConfigured: its mean is assumed, and the report says so. */
	assert_int_equal(
	    rasp_tally_add_sample_stack(f.t, "Demo.Other", 0, 999, 1000, 48, 7, NULL, 0), 0);
	temp_path(path);
	one = render(&f, path, &len1);
	two = render(&f, path, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(one, two, len1);
	p = decode(one, len1);
	assert_int_equal(p->period, 0);
	assert_true(p->n_comment >= 1);
	for (size_t i = 0; i < p->n_comment; i++)
		found |= strstr(str(p, p->comment[i]), "--sampling-mean") != NULL;
	assert_true(found);
	/* Not grouped by kind or process: no such labels. */
	for (size_t i = 0; i < p->n_sample; i++) {
		assert_int_equal(p->sample[i]->n_label, 4);
		assert_null(label(p, p->sample[i], "kind"));
		assert_null(label(p, p->sample[i], "process"));
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(one);
	free(two);

	/* An empty report: a profile with its header, no sample, and the note. */
	rasp_tally_destroy(f.t);
	f.t = rasp_tally_create(rasp_report_keys(&f.opt), RASP_DEFAULT_SAMPLING_MEAN);
	assert_non_null(f.t);
	one = render(&f, path, &len1);
	unlink(path);
	p = decode(one, len1);
	assert_int_equal(p->n_sample, 0);
	assert_int_equal(p->n_location, 0);
	assert_int_equal(p->n_mapping, 0);
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->default_sample_type), "alloc_space");
	assert_int_equal(p->n_comment, 1);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(one);
	fixture_fini(&f);
}

/* pprof's own reader: the sample types, the functions and every sample's values in -raw, and
 * -top's total equal to the report's total estimate (each sample rounded: within a byte per
 * row). */
static void test_write_pprof_go_tool(void **state)
{
	(void)state;
	struct fixture f;
	struct rasp_rows rows;
	char path[] = "/tmp/rasp-test-pprof-XXXXXX", gobuf[4096], want[64];
	const char *go = rasp_test_on_path("go", gobuf, sizeof(gobuf));
	size_t len;
	uint8_t *bytes;
	char *raw, *top, *at;
	double total;

	if (!go) {
		printf("skipped: go not found\n");
		skip();
	}
	fixture_init(&f, RASP_GROUP_KIND);
	temp_path(path);
	bytes = render(&f, path, &len);
	free(bytes);
	assert_int_equal(rasp_rows_build(f.t, f.opt.confidence, &rows), 0);

	raw = rasp_test_go_pprof(go, "-raw", path);
	printf("go tool pprof -raw:\n%s", raw);
	assert_non_null(strstr(raw, "alloc_objects/count alloc_space/bytes"));
	assert_non_null(strstr(raw, "PeriodType: space bytes"));
	assert_non_null(strstr(raw, "Period: 4096"));
	for (size_t i = 0; i < 4; i++) {
		static const char *const fn[] = {"fixture_alloc", "fixture_mid_a", "fixture_mid_b",
						 "fixture_root"};

		assert_non_null(strstr(raw, fn[i]));
	}
	assert_non_null(strstr(raw, ODD_NAME));
	assert_non_null(strstr(raw, "(no stack)"));
	assert_non_null(strstr(raw, f.self.path));
	/* Each sample line reads "OBJECTS BYTES: LOCATION IDS". */
	for (size_t i = 0; i < rows.n; i++) {
		snprintf(want, sizeof(want), " %lld %lld: ", llround(rows.v[i].est.objects),
			 llround(rows.v[i].est.bytes));
		for (at = raw; (at = strstr(at, "\n")); at++) {
			long long o, b;
			int n = 0;

			if (sscanf(at + 1, " %lld %lld:%n", &o, &b, &n) == 2 && n &&
			    o == llround(rows.v[i].est.objects) &&
			    b == llround(rows.v[i].est.bytes))
				break;
		}
		if (!at)
			fail_msg("no sample line like '%s' in -raw", want);
	}
	free(raw);

	top = rasp_test_go_pprof(go, "-top -sample_index=alloc_space -unit=byte", path);
	printf("go tool pprof -top:\n%s", top);
	at = strstr(top, "% of ");
	assert_non_null(at);
	total = strtod(at + 5, NULL);
	assert_true(fabs(total - rows.total.bytes) <= (double)rows.n);
	assert_non_null(strstr(top, "fixture_alloc"));
	assert_non_null(strstr(top, "File: test-write-pprof\n"));
	free(top);

	unlink(path);
	rasp_rows_free(&rows);
	fixture_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_pprof_fields),
	    cmocka_unit_test(test_write_pprof_comments_and_reproducible),
	    cmocka_unit_test(test_write_pprof_go_tool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
