/* Tests of consumer/write/write-folded.c on real stacks: the frames are return addresses of this
 * program's own functions (glibc's backtrace from fixture_alloc,
 * tests/consumer/stacks/stack-fixture.c), this executable is the process's module (found with
 * dl_iterate_phdr, with its build id), and the report symbolizes them from its DWARF (stacks.cmake
 * builds it with -g). Every line is parsed back: frames outermost first, function names, escaped
 * names, the estimate in bytes (the rows' estimates summed and rounded, and the model's formula),
 * one line per (stack, type), sorted. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stack-fixture.h"
#include "write/writer.h"

#define PID  4242
#define PID2 4343
#define MEAN 4096.0

/* Where no object was recorded for the address: a file that does not exist, named with a
 * space and a ';' that the writer must replace. */
#define ODD_BASE UINT64_C(0x7f0000000000)
#define ODD_PATH "/nonexistent/lib odd;name.so"

struct smp {
	const char *type;
	uint64_t kind;
	int64_t pid, tid;
	uint64_t size, offset;
	int stack;	  /* 0: none, 1: A, 2: B1, 3: B2, 4: the odd object's frame under root */
	const char *line; /* the folded line it belongs to, without the count */
};

#define A_LINE	 "fixture_root;fixture_mid_a;fixture_alloc"
#define B_LINE	 "fixture_root;fixture_mid_b;fixture_alloc"
#define ODD_LINE "fixture_root;lib_odd_name.so+0xff"

static const struct smp samples[] = {
    {"Demo.Node", 0, PID, PID + 1, 72, 5, 1, A_LINE ";Demo.Node"},
    {"Demo.Node", 0, PID, PID + 1, 96, 0, 1, A_LINE ";Demo.Node"},
    /* Another kind, thread and process: other rows, the same line. */
    {"Demo.Node", 1, PID, PID + 2, 90000, 12345, 1, A_LINE ";Demo.Node"},
    {"Demo.Node", 0, PID2, PID2 + 1, 72, 70, 1, A_LINE ";Demo.Node"},
    {"System.String", 0, PID, PID + 1, 30, 29, 2, B_LINE ";System.String"},
    {"System.String", 0, PID, PID + 1, 1000, 999, 3, B_LINE ";System.String"},
    {"System.String", 0, PID, PID + 1, 64, 8, 1, A_LINE ";System.String"},
    {"Weird; Type\tName\n\x01", 0, PID, PID + 1, 24, 3, 1, A_LINE ";Weird__Type_Name__"},
    /* What a terminal acts on (ESC, RLO, CSI, a byte that is not UTF-8): '_' per byte. */
    {"Esc\x1b[2J\xe2\x80\xae"
     "Rlo\xc2\x9b\xff",
     0, PID, PID + 1, 24, 5, 1, A_LINE ";Esc_[2J___Rlo___"},
    {"", 0, PID, PID + 1, 24, 3, 1, A_LINE ";(no name)"},
    {"Demo.Leaf", 2, PID, PID + 1, 4096, 100, 0, "(no stack);Demo.Leaf"},
    {"Demo.Leaf", 0, PID, PID + 1, 200000, 1500, 4, ODD_LINE ";Demo.Leaf"},
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))

struct fixture {
	struct rasp_tally *t;
	struct rasp_report_options opt;
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
	struct rasp_test_object m = rasp_test_object_of((const void *)fixture_root);

	fixture_root(&f->a, &f->b1, &f->b2);
	fixture_own_frames(&f->a, &m);
	fixture_own_frames(&f->b1, &m);
	fixture_own_frames(&f->b2, &m);
	/* The two call sites of fixture_mid_b give different return addresses there only. */
	assert_int_equal(f->b1.pc[0], f->b2.pc[0]);
	assert_true(f->b1.pc[1] != f->b2.pc[1]);
	f->odd[0] = ODD_BASE + 0x100;
	f->odd[1] = f->a.pc[2];
	rasp_report_options_init(&f->opt);
	snprintf(f->opt.format, sizeof(f->opt.format), "folded");
	f->opt.group_by = group_by;
	f->t = rasp_tally_create(rasp_report_keys(&f->opt), RASP_DEFAULT_SAMPLING_MEAN);
	assert_non_null(f->t);
	assert_int_equal(f->t->group_by, group_by | RASP_GROUP_TYPE | RASP_GROUP_STACK);
	rasp_test_add_object(f->t, &m, PID);
	rasp_test_add_object(f->t, &m, PID2);
	assert_int_equal(rasp_modules_add(&f->t->modules, PID, ODD_BASE, 0x1000, ODD_PATH, true),
			 0);
	assert_int_equal(rasp_tally_set_mean(f->t, PID, RASP_ID_UNKNOWN, MEAN), 0);
	assert_int_equal(rasp_tally_set_mean(f->t, PID2, RASP_ID_UNKNOWN, MEAN), 0);
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

/* The report, rendered into a temporary file and read back whole (NUL-terminated). */
static char *render(struct fixture *f, size_t *len)
{
	FILE *tmp = tmpfile();
	char *text;
	long n;

	assert_non_null(tmp);
	assert_int_equal(rasp_report_render(f->t, &f->opt, "--sampling-mean", tmp), 0);
	n = ftell(tmp);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	rewind(tmp);
	assert_int_equal(fread(text, 1, (size_t)n, tmp), (size_t)n);
	fclose(tmp);
	*len = (size_t)n;
	return text;
}

struct line {
	char *stack; /* up to the last space */
	double bytes;
};

/* Splits the output into lines "FRAMES COUNT", checking the format as flamegraph.pl and
 * speedscope read it: a count of digits after the last space, no other whitespace (but in the
 * writer's markers "(no stack)" and "(no name)"), no empty frame, no control character, every
 * line ended by '\n'. */
static size_t parse(char *text, size_t len, struct line *out, size_t max)
{
	size_t n = 0;

	assert_true(len == 0 || text[len - 1] == '\n');
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');

		assert_true(n < max);
		assert_non_null(sp);
		assert_true(sp[1] != '\0');
		for (const char *d = sp + 1; *d; d++)
			assert_true(isdigit((unsigned char)*d));
		*sp = '\0';
		for (const char *c = l; *c; c++)
			assert_false((*c == ' ' && strncmp(c - 3, "(no ", 4) != 0) ||
				     (unsigned char)*c < 0x20 || *c == 0x7f);
		assert_null(strstr(l, ";;"));
		assert_true(l[0] != ';' && l[strlen(l) - 1] != ';');
		out[n++] = (struct line){l, strtod(sp + 1, NULL)};
	}
	return n;
}

/* The fixture's line of a row: the sample whose stack and type it has. */
static const char *line_of_row(const struct fixture *f, const struct rasp_row *row)
{
	const struct rasp_stack *st = rasp_stacks_get(&f->t->stacks, row->stack);
	const char *type = rasp_row_type(f->t, row);

	for (size_t i = 0; i < NSAMPLES; i++) {
		const uint64_t *frames;
		size_t n;

		frames_of(f, samples[i].stack, &frames, &n);
		if (strcmp(samples[i].type, type) == 0 && (st ? st->n : 0) == n &&
		    (!n || memcmp(rasp_stacks_frames(&f->t->stacks, st), frames, n * 8) == 0))
			return samples[i].line;
	}
	fail_msg("row of type %s matches no sample", type);
	return NULL;
}

/* What the model says a sample of z bytes stands for: z / (1 - (1 - p)^z). */
static double expected_bytes(const char *line)
{
	double sum = 0, p = 1 / MEAN;

	for (size_t i = 0; i < NSAMPLES; i++)
		if (strcmp(samples[i].line, line) == 0)
			sum +=
			    (double)samples[i].size / -expm1((double)samples[i].size * log1p(-p));
	return sum;
}

static void check_report(unsigned group_by)
{
	struct fixture f;
	struct rasp_rows rows;
	struct line lines[NSAMPLES];
	size_t len, n, distinct = 0;
	char *text;

	fixture_init(&f, group_by);
	text = render(&f, &len);
	n = parse(text, len, lines, NSAMPLES);

	/* One line per distinct expected line, sorted bytewise, none twice. */
	for (size_t i = 0; i < NSAMPLES; i++) {
		size_t j = 0;

		while (j < i && strcmp(samples[j].line, samples[i].line) != 0)
			j++;
		distinct += j == i;
	}
	assert_int_equal(n, distinct);
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(lines[i - 1].stack, lines[i].stack) < 0);

	/* Each line's count: the rows' estimates summed, then rounded; and the model's. */
	assert_int_equal(rasp_rows_build(f.t, f.opt.confidence, &rows), 0);
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		size_t nrows = 0;

		for (size_t r = 0; r < rows.n; r++)
			if (strcmp(line_of_row(&f, &rows.v[r]), lines[i].stack) == 0) {
				sum += rows.v[r].est.bytes;
				nrows++;
			}
		if (!nrows)
			fail_msg("unexpected line: %s", lines[i].stack);
		assert_true(lines[i].bytes == round(sum));
		assert_true(fabs(lines[i].bytes - expected_bytes(lines[i].stack)) <= 1);
		/* Never a sample count: every estimate here is far above its samples. */
		assert_true(lines[i].bytes > 2.0 * (double)nrows);
	}
	/* Rows that differ in kind, thread or process, and stacks that differ in a call site
	 * only, made fewer lines than rows. */
	assert_true(rows.n > n);
	rasp_rows_free(&rows);
	free(text);
	fixture_fini(&f);
}

static void test_write_folded_lines(void **state)
{
	(void)state;
	check_report(0);
}

static void test_write_folded_merges_other_keys(void **state)
{
	(void)state;
	check_report(RASP_GROUP_KIND | RASP_GROUP_THREAD | RASP_GROUP_PROCESS);
}

/* The frames of a line are the stack's, outermost first, named by function. */
static void test_write_folded_frame_order(void **state)
{
	(void)state;
	struct fixture f;
	size_t len;
	char *text, *want;

	fixture_init(&f, 0);
	text = render(&f, &len);
	printf("%s", text);
	want = strstr(text, "\n" A_LINE ";Demo.Node ");
	assert_non_null(want);
	assert_non_null(strstr(text, "\n" B_LINE ";System.String "));
	assert_non_null(strstr(text, "\n" ODD_LINE ";Demo.Leaf "));
	assert_non_null(strstr(text, "\n" A_LINE ";Weird__Type_Name__ "));
	assert_non_null(strstr(text, "\n" A_LINE ";(no name) "));
	assert_true(strncmp(text, "(no stack);Demo.Leaf ", 21) == 0);
	/* Nothing of the names as they were. */
	assert_null(strstr(text, "Weird;"));
	assert_null(strstr(text, "lib odd"));
	free(text);
	fixture_fini(&f);
}

/* The same tally gives the same bytes; an empty one, nothing. */
static void test_write_folded_reproducible_and_empty(void **state)
{
	(void)state;
	struct fixture f;
	size_t len1, len2;
	char *one, *two;
	struct rasp_tally *t;

	fixture_init(&f, RASP_GROUP_KIND);
	one = render(&f, &len1);
	two = render(&f, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(one, two, len1);
	free(one);
	free(two);
	t = rasp_tally_create(rasp_report_keys(&f.opt), RASP_DEFAULT_SAMPLING_MEAN);
	assert_non_null(t);
	rasp_tally_destroy(f.t);
	f.t = t;
	one = render(&f, &len1);
	assert_int_equal(len1, 0);
	free(one);
	fixture_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_folded_lines),
	    cmocka_unit_test(test_write_folded_merges_other_keys),
	    cmocka_unit_test(test_write_folded_frame_order),
	    cmocka_unit_test(test_write_folded_reproducible_and_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
