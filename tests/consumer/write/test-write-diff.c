/* Golden tests of consumer/write/write-diff.c (tests/consumer/write/expect/diff-*.expect;
 * regenerate with RASP_UPDATE_EXPECT=1 ctest -R write-diff, then review the diff): two sides built
 * by hand the way rasp diff builds them (rows of a tally grouped by type, the notes, the largest
 * mean), compared by rasp_diff_compute and written as text and json. The json parses and reads back
 * (changes, flags, both sides' notes); the text marks significant rows and prints no control
 * characters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "write/write-diff.h"

struct side {
	struct rasp_tally *t;
	struct rasp_rows rows;
	struct rasp_notes notes;
	struct rasp_diff_item *items;
	double mean;
};

/* As cli/cmd-diff.c: one item per row, the side's largest mean. */
static void side_init(struct side *s, struct rasp_tally *t, double confidence)
{
	s->t = t;
	assert_int_equal(rasp_rows_build(t, confidence, &s->rows), 0);
	assert_int_equal(rasp_notes_build(t, NULL, "--sampling-mean", &s->notes), 0);
	s->items = calloc(s->rows.n + 1, sizeof(*s->items));
	assert_non_null(s->items);
	for (size_t i = 0; i < s->rows.n; i++)
		s->items[i] =
		    (struct rasp_diff_item){rasp_row_type(t, &s->rows.v[i]), s->rows.v[i].est};
	s->mean = t->default_mean;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].samples && t->procs[i].mean_high > s->mean)
			s->mean = t->procs[i].mean_high;
}

static void side_fini(struct side *s)
{
	free(s->items);
	rasp_notes_free(&s->notes);
	rasp_rows_free(&s->rows);
	rasp_tally_destroy(s->t);
}

/* The new side: Demo.Node grown about tenfold (600 samples at 4096), System.String about the same,
 * Demo.Leaf and System.Byte[] gone, a new type with a control character and an invalid byte; 5
 * events lost. */
static struct rasp_tally *new_side(void)
{
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, RASP_DEFAULT_SAMPLING_MEAN);

	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean(t, 7000, RASP_ID_UNKNOWN, 4096), 0);
	for (uint64_t i = 0; i < 600; i++)
		assert_int_equal(rasp_tally_add_sample(t, "Demo.Node", 0, 7000, 7001, 72, i % 72),
				 0);
	assert_int_equal(rasp_tally_add_sample(t, "System.String", 0, 7000, 7001, 30, 3), 0);
	assert_int_equal(rasp_tally_add_sample(t, "System.String", 0, 7000, 7001, 64, 8), 0);
	assert_int_equal(rasp_tally_add_sample(t, "Demo.New\x01\xff", 0, 7000, 7001, 40, 1), 0);
	rasp_tally_add_discarded_events(t, 5, true);
	return t;
}

struct diff {
	struct side base, new_;
	struct rasp_diff_change *c;
	size_t n;
	struct rasp_diff_view v;
};

static void diff_init(struct diff *d, double confidence)
{
	side_init(&d->base, golden_two_procs(RASP_GROUP_TYPE), confidence);
	side_init(&d->new_, new_side(), confidence);
	assert_int_equal(
	    rasp_diff_compute(
		&(struct rasp_diff_side){"base", d->base.items, d->base.rows.n, d->base.mean},
		&(struct rasp_diff_side){"new", d->new_.items, d->new_.rows.n, d->new_.mean},
		confidence, &d->c, &d->n),
	    0);
	d->v = (struct rasp_diff_view){.base_name = "runs/base \"A\"",
				       .new_name = "runs/new",
				       .changes = d->c,
				       .n = d->n,
				       .confidence = confidence,
				       .base_notes = &d->base.notes,
				       .new_notes = &d->new_.notes};
}

static void diff_fini(struct diff *d)
{
	free(d->c);
	side_fini(&d->base);
	side_fini(&d->new_);
}

static char *render_diff(int (*fn)(FILE *, const struct rasp_diff_view *),
			 const struct rasp_diff_view *v, size_t *len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, len);

	assert_non_null(f);
	assert_int_equal(fn(f, v), 0);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void test_write_diff_text(void **state)
{
	(void)state;
	struct diff d;
	size_t len;
	char *out;

	diff_init(&d, 0.95);
	assert_int_equal(d.n, 5);
	out = render_diff(rasp_diff_write_text, &d.v, &len);
	golden_check(out, len, "diff-text.expect");
	golden_check_inert(out, len, false, "diff text");
	assert_non_null(strstr(out, "WARNING (base): process 6192 (emit2)"));
	assert_non_null(strstr(out, "WARNING (new): the tracer discarded 5 events"));
	/* Names as their safe text (sanitize.h): \xNN for a control or a byte that is not UTF-8. */
	assert_non_null(strstr(out, "\nDemo.New\\x01\\xff "));
	/* One line per change, '*' exactly on the significant ones. */
	for (size_t i = 0; i < d.n; i++) {
		char name[64];
		const char *line;
		size_t end;

		snprintf(name, sizeof(name), "\n%s ", d.c[i].type);
		line = strstr(out, name);
		if (strchr(d.c[i].type, '\x01'))
			continue; /* printed as Demo.New\x01\xff, found above */
		assert_non_null(line);
		end = strcspn(line + 1, "\n");
		assert_int_equal(line[end] == '*', d.c[i].significant);
	}
	free(out);
	diff_fini(&d);
}

static void test_write_diff_json(void **state)
{
	(void)state;
	static const char script[] =
	    "import json, sys\n"
	    "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	    "rows = d['rows']\n"
	    "print(d['base'], d['new'], d['confidence'], d['base_estimates_too_low'],\n"
	    "      d['new_estimates_too_low'], [n['code'] for n in d['base_notes']],\n"
	    "      [n['code'] for n in d['new_notes']])\n"
	    "print(json.dumps([r['type'] for r in rows]))\n"
	    "print(all(r['bytes_change'] == r['bytes_new'] - r['bytes_base'] for r in rows),\n"
	    "      all(isinstance(r['significant'], bool) for r in rows),\n"
	    "      all(0 <= r['p_value'] <= 1 for r in rows),\n"
	    "      [r['type'] for r in rows if r['significant']],\n"
	    "      [(r['samples_base'], r['samples_new']) for r in rows])\n";
	struct diff d;
	char pyout[1024];
	size_t len;
	char *out;

	diff_init(&d, 0.95);
	out = render_diff(rasp_diff_write_json, &d.v, &len);
	golden_check(out, len, "diff-json.expect");
	golden_check_json(out, len);
	assert_int_equal(golden_python(out, len, script, pyout, sizeof(pyout)), 0);
	assert_string_equal(
	    pyout, "runs/base \"A\" runs/new 0.95 False True ['assumed-mean'] "
		   "['lost-data']\n"
		   "[\"Demo.Node\", \"System.Byte[]\", \"Demo.Leaf\", \"System.String\", "
		   "\"Demo.New\\u0001\\ufffd\"]\n"
		   "True True True ['Demo.Node'] [(6, 600), (3, 0), (3, 0), (3, 2), (0, 1)]\n");
	free(out);
	diff_fini(&d);
}

/* The longest line's characters (code points: the names here are ASCII but for "…"). */
static size_t widest_chars(const char *s)
{
	size_t most = 0, w = 0;

	for (; *s; s++) {
		if (*s == '\n')
			w = 0;
		else if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
		most = w > most ? w : most;
	}
	return most;
}

/* Within a width: every line fits (the notes wrapped, the names shortened in the middle, the
 * objects columns left out at 80), the same rows and marks; 0 is no limit. (rasp diff --by
 * site lines were as long as the longest .NET method name.) */
static void test_write_diff_text_width(void **state)
{
	(void)state;
	static const size_t widths[] = {80, 100, 120};
	struct diff d;
	size_t len;
	char *full, *out;

	diff_init(&d, 0.95);
	full = render_diff(rasp_diff_write_text, &d.v, &len);
	assert_true(widest_chars(full) > 120); /* the notes' lines */
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		d.v.width = widths[i];
		out = render_diff(rasp_diff_write_text, &d.v, &len);
		if (widest_chars(out) > widths[i])
			fail_msg("a line wider than %zu:\n%s", widths[i], out);
		assert_non_null(strstr(out, "\nDemo.Node "));
		assert_true((strstr(out, "BASE OBJECTS") != NULL) == (widths[i] >= 100));
		golden_check_inert(out, len, false, "diff text in a width");
		free(out);
	}
	free(full);
	diff_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_diff_text),
	    cmocka_unit_test(test_write_diff_text_width),
	    cmocka_unit_test(test_write_diff_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
