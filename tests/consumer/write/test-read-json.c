/* Unit tests of consumer/write/read-json.c: a report the json writer wrote reads back as the
 * rows, the largest sampling mean and the notes it was made of; by site as by type; and every
 * file a comparison must not trust is refused with the file, the row and the reason: missing,
 * not JSON, another confidence, other keys, a row without its numbers, inconsistent numbers
 * (a samples count below 0, fractional or past 2^64 had no uint64_t value and was converted
 * anyway), a sampling mean outside [1, 2^48]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "golden.h"
#include "write/read-json.h"
#include "write/writer.h"

static char dir[] = "/tmp/rasp-test-read-json-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* dir/name holding text; returns the path (static: one at a time). */
static const char *file_with(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* A report rendered by the json writer into dir/name. */
static const char *report_of(struct rasp_tally *t, unsigned group_by, const char *name)
{
	struct rasp_report_options opt;
	struct golden_out g;
	const char *path;

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "json");
	opt.group_by = group_by;
	golden_render(t, &opt, &g);
	path = file_with(name, g.out);
	golden_out_free(&g);
	rasp_report_options_fini(&opt);
	return path;
}

/* Reading path fails with rc, the message holding each of want (NULL-terminated). */
static void refused(const char *path, bool by_site, int rc, const char *const *want)
{
	struct rasp_json_report r;
	char err[512];

	assert_int_equal(rasp_json_report_read(path, 0.95, by_site, &r, err, sizeof(err)), rc);
	for (; *want; want++)
		if (!strstr(err, *want)) {
			printf("no '%s' in: %s\n", *want, err);
			fail();
		}
	rasp_json_report_free(&r);
}

/* a and b printed with fmt read the same. */
static void same(const char *fmt, double a, double b)
{
	char x[64], y[64];

	snprintf(x, sizeof(x), fmt, a);
	snprintf(y, sizeof(y), fmt, b);
	assert_string_equal(x, y);
}

/* Written by write-json.c, read back: the same rows, means and notes. */
static void test_read_json_round_trip(void **state)
{
	struct rasp_tally *t = golden_two_procs(RASP_GROUP_TYPE);
	struct rasp_rows rows;
	struct rasp_notes notes;
	struct rasp_json_report r;
	const char *path = report_of(t, RASP_GROUP_TYPE, "two-procs.json");
	char err[512];

	(void)state;
	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	assert_int_equal(rasp_notes_build(t, &rows, "--sampling-mean", &notes), 0);
	assert_int_equal(rasp_json_report_read(path, 0.95, false, &r, err, sizeof(err)), 0);
	assert_int_equal(r.n, rows.n);
	for (size_t i = 0; i < rows.n; i++) {
		assert_string_equal(r.items[i].type, rasp_row_type(t, &rows.v[i]));
		/* As the writer prints them: bytes whole, objects to a tenth. */
		same("%.0f", r.items[i].est.bytes, rows.v[i].est.bytes);
		same("%.0f", r.items[i].est.bytes_low, rows.v[i].est.bytes_low);
		same("%.0f", r.items[i].est.bytes_high, rows.v[i].est.bytes_high);
		same("%.1f", r.items[i].est.objects, rows.v[i].est.objects);
		assert_int_equal(r.items[i].est.samples, rows.v[i].est.samples);
	}
	assert_int_equal(r.samples, t->samples);
	/* The largest mean the samples were weighed with: 6192's assumed 102400. */
	assert_true(r.mean == 102400);
	assert_int_equal(r.notes.n, notes.n);
	assert_int_equal(r.notes.lost_data, notes.lost_data);
	for (size_t i = 0; i < notes.n; i++) {
		assert_string_equal(r.notes.v[i].code, notes.v[i].code);
		assert_string_equal(r.notes.v[i].text, notes.v[i].text);
	}
	rasp_json_report_free(&r);
	assert_null(r.doc);
	rasp_notes_free(&notes);
	rasp_rows_free(&rows);
	rasp_tally_destroy(t);

	/* Lost data is read back as such. */
	t = golden_awkward(RASP_GROUP_TYPE);
	path = report_of(t, RASP_GROUP_TYPE, "awkward.json");
	assert_int_equal(rasp_json_report_read(path, 0.95, false, &r, err, sizeof(err)), 0);
	assert_true(r.notes.lost_data);
	rasp_json_report_free(&r);
	rasp_tally_destroy(t);
}

/* A report by site reads by site, and only so; one by type only by type. */
static void test_read_json_keys(void **state)
{
	struct rasp_tally *t = golden_hostile(RASP_GROUP_SITE);
	struct rasp_json_report r;
	const char *path = report_of(t, RASP_GROUP_SITE, "site.json");
	char err[512];

	(void)state;
	assert_int_equal(rasp_json_report_read(path, 0.95, true, &r, err, sizeof(err)), 0);
	assert_true(r.n > 0);
	rasp_json_report_free(&r);
	refused(
	    path, false, -EINVAL,
	    (const char *const[]){path, "row 0 is not a per-type row", "--group-by type", NULL});
	rasp_tally_destroy(t);

	t = golden_two_procs(RASP_GROUP_TYPE | RASP_GROUP_KIND);
	path = report_of(t, RASP_GROUP_TYPE | RASP_GROUP_KIND, "type-kind.json");
	refused(path, false, -EINVAL, (const char *const[]){"not a per-type row", NULL});
	rasp_tally_destroy(t);
	t = golden_two_procs(RASP_GROUP_TYPE);
	path = report_of(t, RASP_GROUP_TYPE, "type.json");
	refused(path, true, -EINVAL, (const char *const[]){"row 0 is not a per-site row", NULL});
	rasp_tally_destroy(t);
}

/* Files that are not a report, or not one to compare at this confidence. */
static void test_read_json_refusals(void **state)
{
	char missing[256];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/none.json", dir);
	refused(missing, false, -ENOENT, (const char *const[]){"cannot read", missing, NULL});
	refused(file_with("text.json", "TYPE BYTES\n"), false, -EINVAL,
		(const char *const[]){"nor a rasp JSON report", NULL});
	refused(file_with("norows.json", "{\"total\": {}}"), false, -EINVAL,
		(const char *const[]){"nor a rasp JSON report", NULL});
	refused(file_with("rowsobj.json", "{\"rows\": {}}"), false, -EINVAL,
		(const char *const[]){"nor a rasp JSON report", NULL});
	refused(file_with("conf.json", "{\"confidence\": 0.9, \"rows\": []}"), false, -EINVAL,
		(const char *const[]){"reported at confidence 0.9, not 0.95", "--confidence 0.9",
				      NULL});
	refused(file_with("lacks.json", "{\"rows\": [{\"type\": \"A\", \"bytes\": 1, "
					"\"bytes_low\": 1, \"bytes_high\": 2, \"samples\": 1}]}"),
		false, -EINVAL, (const char *const[]){"row 0 lacks", NULL});
	refused(file_with("name.json", "{\"rows\": [{\"type\": 3}]}"), false, -EINVAL,
		(const char *const[]){"row 0 is not a per-type row", NULL});
}

/* Numbers a comparison would trust: each inconsistent one refused with its row. */
static void test_read_json_inconsistent_numbers(void **state)
{
	static const char *const rows[] = {
	    /* bytes_low above bytes_high */
	    "\"bytes\": 5, \"bytes_low\": 9, \"bytes_high\": 8, \"objects\": 1, \"samples\": 1",
	    "\"bytes\": -1, \"bytes_low\": 0, \"bytes_high\": 8, \"objects\": 1, \"samples\": 1",
	    "\"bytes\": 5, \"bytes_low\": 1, \"bytes_high\": 8, \"objects\": -2, \"samples\": 1",
	    /* samples: below 0, fractional, past 2^64 */
	    "\"bytes\": 5, \"bytes_low\": 1, \"bytes_high\": 8, \"objects\": 1, \"samples\": -1",
	    "\"bytes\": 5, \"bytes_low\": 1, \"bytes_high\": 8, \"objects\": 1, \"samples\": 1.5",
	    "\"bytes\": 5, \"bytes_low\": 1, \"bytes_high\": 8, \"objects\": 1, \"samples\": 1e30",
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(
		    text, sizeof(text),
		    "{\"rows\": [{\"type\": \"A\", \"bytes\": 1, \"bytes_low\": 1, "
		    "\"bytes_high\": 1, \"objects\": 1, \"samples\": 1}, {\"type\": \"B\", %s}]}",
		    rows[i]);
		refused(file_with("bad.json", text), false, -EINVAL,
			(const char *const[]){"row 1 (B) has inconsistent numbers", NULL});
	}
	/* The same rows with consistent numbers read, and say their samples. */
	{
		struct rasp_json_report r;
		char err[512];
		const char *path = file_with(
		    "good.json", "{\"rows\": [{\"type\": \"A\", \"bytes\": 1, \"bytes_low\": 1, "
				 "\"bytes_high\": 1, \"objects\": 1, \"samples\": 1}, {\"type\": "
				 "\"B\", \"bytes\": 5, \"bytes_low\": 1, \"bytes_high\": 8, "
				 "\"objects\": 1, \"samples\": 4}]}");

		assert_int_equal(rasp_json_report_read(path, 0.95, false, &r, err, sizeof(err)), 0);
		assert_int_equal(r.n, 2);
		assert_int_equal(r.samples, 5);
		/* No process and no mean named: the default's. */
		assert_true(r.mean == RASP_DEFAULT_SAMPLING_MEAN);
		rasp_json_report_free(&r);
	}
}

/* The mean a comparison weighs with: the largest of the processes with samples, else the
 * report's; one outside [1, 2^48] refused (a side at 0 or infinity has no interval). */
static void test_read_json_means(void **state)
{
	static const char rows[] = "\"rows\": [{\"type\": \"A\", \"bytes\": 1, \"bytes_low\": 1, "
				   "\"bytes_high\": 1, \"objects\": 1, \"samples\": 1}]";
	static const struct {
		const char *keys, *refusal;
		double mean;
	} cases[] = {
	    {"\"processes\": [{\"samples\": 3, \"sampling_mean_high\": 4096}, {\"samples\": 0, "
	     "\"sampling_mean_high\": 0}, {\"samples\": 1, \"sampling_mean_high\": 16384}]",
	     NULL, 16384},
	    {"\"sampling_mean\": 1024, \"sampling_means\": [{\"sampling_mean\": 2048}]", NULL,
	     2048},
	    {"\"sampling_mean\": 1024", NULL, 1024},
	    {"\"processes\": [{\"samples\": 3, \"sampling_mean_high\": 0}]",
	     "process 0 has sampling mean 0, outside [1, 2^48]", 0},
	    {"\"processes\": [{\"samples\": 3, \"sampling_mean_high\": 1e300}]",
	     "process 0 has sampling mean 1e+300", 0},
	    {"\"sampling_mean\": 0.5", "report 0 has sampling mean 0.5", 0},
	    {"\"sampling_means\": [{\"sampling_mean\": 4096}, {\"sampling_mean\": -1}]",
	     "sampling_means entry 1 has sampling mean -1", 0},
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rasp_json_report r;
		char err[512];
		const char *path;
		int rc;

		snprintf(text, sizeof(text), "{%s, %s}", cases[i].keys, rows);
		path = file_with("means.json", text);
		rc = rasp_json_report_read(path, 0.95, false, &r, err, sizeof(err));
		if (cases[i].refusal) {
			assert_int_equal(rc, -EINVAL);
			if (!strstr(err, cases[i].refusal))
				fail_msg("case %zu: no '%s' in: %s", i, cases[i].refusal, err);
		} else {
			assert_int_equal(rc, 0);
			assert_true(r.mean == cases[i].mean);
		}
		rasp_json_report_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_json_round_trip),
	    cmocka_unit_test(test_read_json_keys),
	    cmocka_unit_test(test_read_json_refusals),
	    cmocka_unit_test(test_read_json_inconsistent_numbers),
	    cmocka_unit_test(test_read_json_means),
	};

	return cmocka_run_group_tests_name("read-json", tests, setup, teardown);
}
