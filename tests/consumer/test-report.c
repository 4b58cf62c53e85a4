/* Unit tests of consumer/report.c: parameter validation and its messages, grouping into
 * per-thread cells, sorting, the text/csv/json writers and JSON string escaping. Linked
 * with test-report-estimate.c (exact sums) instead of the real estimator. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

extern size_t fake_est_last_n;

/* The whole output of f(r) as a string (caller frees). */
static char *render(struct rasp_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(rasp_report_write(r, f), 0);
	fclose(f);
	return buf;
}

static struct rasp_report *make(const char *const *kv)
{
	struct rasp_report_options opt;
	struct rasp_report *r;
	char err[256];

	rasp_report_options_init(&opt);
	for (size_t i = 0; kv && kv[i]; i += 2)
		assert_int_equal(
		    rasp_report_option_set_string(&opt, kv[i], kv[i + 1], err, sizeof(err)), 0);
	r = rasp_report_create(&opt);
	rasp_report_options_fini(&opt);
	assert_non_null(r);
	return r;
}

static void json_escape(const char *in, char *out, size_t outlen)
{
	FILE *f = fmemopen(out, outlen, "w");

	assert_non_null(f);
	rasp_report_json_string(f, in);
	fclose(f);
}

static void test_report_json_escaping(void **state)
{
	char out[256];

	(void)state;
	json_escape("System.String", out, sizeof(out));
	assert_string_equal(out, "\"System.String\"");
	json_escape("a\"b\\c", out, sizeof(out));
	assert_string_equal(out, "\"a\\\"b\\\\c\"");
	json_escape("t\tn\nr\r\x01\x1f", out, sizeof(out));
	assert_string_equal(out, "\"t\\tn\\nr\\r\\u0001\\u001f\"");
	/* Valid UTF-8 (2, 3 and 4 bytes) is kept as is. */
	json_escape("Dictionary<\xc3\xa9,\xe2\x82\xac,\xf0\x9f\x98\x80>", out, sizeof(out));
	assert_string_equal(out, "\"Dictionary<\xc3\xa9,\xe2\x82\xac,\xf0\x9f\x98\x80>\"");
	/* Invalid bytes, a truncated sequence, an overlong and a surrogate become U+FFFD. */
	json_escape("x\xff\xc3y\xc0\xaf\xed\xa0\x80", out, sizeof(out));
	assert_string_equal(out, "\"x\\ufffd\\ufffdy\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

static void test_report_params_accepts(void **state)
{
	struct rasp_report_options o;
	char err[256];

	(void)state;
	rasp_report_options_init(&o);
	assert_int_equal(o.format, RASP_REPORT_FORMAT_TEXT);
	assert_int_equal(o.group_by, RASP_REPORT_BY_TYPE);
	assert_true(o.confidence == 0.95);
	assert_true(o.sampling_mean == 102400.0);
	assert_true(o.strict);
	assert_int_equal(rasp_report_option_set_string(&o, "format", "json", err, sizeof(err)), 0);
	assert_int_equal(o.format, RASP_REPORT_FORMAT_JSON);
	assert_int_equal(
	    rasp_report_option_set_string(&o, "group-by", "process, thread,kind", err, sizeof(err)),
	    0);
	assert_int_equal(o.group_by,
			 RASP_REPORT_BY_PROCESS | RASP_REPORT_BY_THREAD | RASP_REPORT_BY_KIND);
	assert_int_equal(
	    rasp_report_option_set_number(&o, "confidence", 0.99, false, err, sizeof(err)), 0);
	assert_int_equal(
	    rasp_report_option_set_number(&o, "sampling-mean", 4096, true, err, sizeof(err)), 0);
	assert_int_equal(rasp_report_option_set_number(&o, "top", 10, true, err, sizeof(err)), 0);
	assert_int_equal(o.top, 10);
	assert_int_equal(rasp_report_option_set_bool(&o, "strict", false, err, sizeof(err)), 0);
	assert_false(o.strict);
	assert_int_equal(rasp_report_option_set_string(&o, "output", "r.txt", err, sizeof(err)), 0);
	assert_string_equal(o.output, "r.txt");
	rasp_report_options_fini(&o);
}

struct bad {
	int kind; /* 0 string, 1 real, 2 integer, 3 bool, 4 other */
	const char *name, *s;
	double d;
	const char *message;
};

static void test_report_params_messages(void **state)
{
	static const struct bad cases[] = {
	    {0, "format", "xml", 0,
	     "bad parameter: name=format value=\"xml\" accepted=text|csv|json"},
	    {0, "group-by", "type,,kind", 0,
	     "bad parameter: name=group-by value=\"type,,kind\" accepted=comma-separated list or "
	     "array of type|kind|thread|process"},
	    {0, "group-by", "", 0, "name=group-by value=\"\""},
	    {1, "confidence", NULL, 1.0,
	     "bad parameter: name=confidence value=1 accepted=real number in (0, 1)"},
	    {1, "confidence", NULL, -0.5, "name=confidence value=-0.5"},
	    {2, "sampling-mean", NULL, 0,
	     "bad parameter: name=sampling-mean value=0 accepted=number >= 1"},
	    {1, "top", NULL, 2.5,
	     "bad parameter: name=top value=2.5 accepted=integer >= 0 (0 = all rows)"},
	    {2, "top", NULL, -3, "name=top value=-3"},
	    {0, "confidence", "high", 0,
	     "bad parameter: name=confidence value-kind=string accepted=real number in (0, 1)"},
	    {3, "format", NULL, 0,
	     "bad parameter: name=format value-kind=boolean accepted=string text|csv|json"},
	    {2, "strict", NULL, 1,
	     "bad parameter: name=strict value-kind=integer accepted=boolean true|false"},
	    {0, "output", "", 0, "bad parameter: name=output value-kind=empty-string"},
	    {4, "group-by", NULL, 0, "name=group-by value-kind=other"},
	    {0, "Format", "text", 0,
	     "unknown parameter: name=Format "
	     "accepted=format|group-by|confidence|sampling-mean|top|output|strict"},
	    {3, "verbose", NULL, 0, "unknown parameter: name=verbose"},
	};
	struct rasp_report_options o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad *c = &cases[i];
		int ret = 0;

		rasp_report_options_init(&o);
		err[0] = '\0';
		switch (c->kind) {
		case 0:
			ret = rasp_report_option_set_string(&o, c->name, c->s, err, sizeof(err));
			break;
		case 1:
		case 2:
			ret = rasp_report_option_set_number(&o, c->name, c->d, c->kind == 2, err,
							    sizeof(err));
			break;
		case 3:
			ret = rasp_report_option_set_bool(&o, c->name, true, err, sizeof(err));
			break;
		default:
			ret = rasp_report_option_bad_kind(c->name, err, sizeof(err));
			break;
		}
		if (!strstr(err, c->message))
			fprintf(stderr, "case %zu: got '%s'\n", i, err);
		assert_int_equal(ret, -EINVAL);
		assert_non_null(strstr(err, c->message));
		rasp_report_options_fini(&o);
	}
}

static void test_report_bad_samples(void **state)
{
	struct rasp_report *r = make(NULL);
	char *s;

	(void)state;
	assert_int_equal(rasp_report_add_sample(r, "T", 0, 1, 1, 0, 0), -EINVAL);
	assert_int_equal(rasp_report_add_sample(r, "T", 0, 1, 1, 24, 24), -EINVAL);
	assert_int_equal(rasp_report_set_mean(r, 1, 0.0), -EINVAL);
	s = render(r);
	assert_non_null(strstr(s, "TOTAL        0      0  -         0.0\n"));
	free(s);
	rasp_report_destroy(r);
}

/* By type: rows sorted by bytes, ties by name; the total merges a thread's cells of all
 * types first (unbias per thread), so rasp_est_sum sees one cell per thread. */
static void test_report_group_by_type_json(void **state)
{
	const char *kv[] = {"format", "json", NULL};
	struct rasp_report *r = make(kv);
	char *s;

	(void)state;
	assert_int_equal(rasp_report_add_sample(r, "B", 0, 10, 11, 100, 5), 0);
	assert_int_equal(rasp_report_add_sample(r, "A", 1, 10, 12, 300, 5), 0);
	assert_int_equal(rasp_report_add_sample(r, "C", 0, 10, 11, 200, 5), 0);
	assert_int_equal(rasp_report_add_sample(r, "B", 0, 10, 12, 100, 5), 0);
	assert_int_equal(rasp_report_add_sample(r, NULL, 2, 10, 12, 8, 0), 0);
	s = render(r);
	assert_int_equal(fake_est_last_n, 2); /* the total: threads 11 and 12 */
	assert_string_equal(
	    s, "{\n"
	       "  \"sampling_mean\": 102400,\n"
	       "  \"sampling_means\": [],\n"
	       "  \"confidence\": 0.95,\n"
	       "  \"group_by\": [\"type\"],\n"
	       "  \"discarded_events\": 0,\n"
	       "  \"discarded_events_unknown\": 0,\n"
	       "  \"discarded_packets\": 0,\n"
	       "  \"discarded_packets_unknown\": 0,\n"
	       "  \"skipped_events\": 0,\n"
	       "  \"estimates_too_low\": false,\n"
	       "  \"rows\": [\n"
	       "    {\"type\": \"A\", \"samples\": 1, \"bytes\": 300, \"bytes_low\": 299, "
	       "\"bytes_high\": 102700, \"objects\": 1.0},\n"
	       "    {\"type\": \"B\", \"samples\": 2, \"bytes\": 200, \"bytes_low\": 198, "
	       "\"bytes_high\": 205000, \"objects\": 2.0},\n"
	       "    {\"type\": \"C\", \"samples\": 1, \"bytes\": 200, \"bytes_low\": 199, "
	       "\"bytes_high\": 102600, \"objects\": 1.0},\n"
	       "    {\"type\": \"NULL\", \"samples\": 1, \"bytes\": 8, \"bytes_low\": 7, "
	       "\"bytes_high\": 102408, \"objects\": 1.0}\n"
	       "  ],\n"
	       "  \"total\": {\"samples\": 5, \"bytes\": 708, \"bytes_low\": 703, \"bytes_high\": "
	       "205508, \"objects\": 5.0},\n"
	       "  \"allocation_ticks\": {\n"
	       "    \"note\": \"GCAllocationTick_V2/V3/V4: fixed ~100 KB stride, biased, not "
	       "estimates, not in rows or total\",\n"
	       "    \"rows\": [],\n"
	       "    \"ticks\": 0,\n"
	       "    \"allocation_amount\": 0\n"
	       "  }\n"
	       "}\n");
	free(s);
	rasp_report_destroy(r);
}

/* Per-process means: a SamplingConfigured mean applies to its process only, the option's
 * mean to the others; process and thread keys, unknown ids as null. */
static void test_report_group_by_process_thread(void **state)
{
	const char *kv[] = {"format", "json", "group-by", "process,thread", NULL};
	struct rasp_report *r = make(kv);
	char *s;

	(void)state;
	assert_int_equal(rasp_report_set_mean(r, 7, 4096), 0);
	assert_int_equal(rasp_report_add_sample(r, "A", 0, 7, 70, 1000, 1), 0);
	assert_int_equal(rasp_report_add_sample(r, "B", 0, 7, 70, 1000, 1), 0);
	assert_int_equal(rasp_report_add_sample(r, "A", 0, 8, 80, 500, 1), 0);
	assert_int_equal(rasp_report_add_sample(r, "A", 0, RASP_REPORT_ID_UNKNOWN,
						RASP_REPORT_ID_UNKNOWN, 10, 1),
			 0);
	s = render(r);
	assert_non_null(strstr(s, "\"group_by\": [\"thread\", \"process\"]"));
	assert_non_null(
	    strstr(s, "\"sampling_means\": [{\"process\": 7, \"sampling_mean\": 4096}]"));
	assert_non_null(strstr(s,
			       "{\"thread\": 70, \"process\": 7, \"samples\": 2, \"bytes\": 2000, "
			       "\"bytes_low\": 1998, \"bytes_high\": 6096,"));
	assert_non_null(strstr(s,
			       "{\"thread\": 80, \"process\": 8, \"samples\": 1, \"bytes\": 500, "
			       "\"bytes_low\": 499, \"bytes_high\": 102900,"));
	assert_non_null(strstr(s, "{\"thread\": null, \"process\": null, \"samples\": 1, "));
	assert_non_null(strstr(s, "\"total\": {\"samples\": 4, \"bytes\": 2510,"));
	free(s);
	rasp_report_destroy(r);
}

static void test_report_text_table(void **state)
{
	const char *kv[] = {"group-by", "type,kind", NULL};
	struct rasp_report *r = make(kv);
	char *s;

	(void)state;
	assert_int_equal(rasp_report_add_sample(r, "System.String", 0, 1, 1, 1000, 0), 0);
	assert_int_equal(rasp_report_add_sample(r, "System.Byte[]", 1, 1, 1, 90000, 0), 0);
	assert_int_equal(rasp_report_add_sample(r, "Bad\nName", 2, 1, 1, 10, 0), 0);
	s = render(r);
	assert_string_equal(
	    s, "rasp allocation report: 3 DotNETRuntime:AllocationSampled samples; sampling mean "
	       "102400 bytes; 95% confidence intervals.\n"
	       "\n"
	       "TYPE           KIND    SAMPLES  BYTES  ±95%                OBJECTS\n"
	       "System.Byte[]  Large         1  90000  -0.0%/+113.8%           1.0\n"
	       "System.String  Small         1   1000  -0.1%/+10240.0%         1.0\n"
	       "Bad?Name       Pinned        1     10  -10.0%/+1024000.0%      1.0\n"
	       "TOTAL                        3  91010  -0.0%/+112.5%           3.0\n");
	free(s);
	rasp_report_destroy(r);
}

static void test_report_text_top_and_warnings(void **state)
{
	struct rasp_report_options opt;
	struct rasp_report *r;
	char err[128], *s;

	(void)state;
	rasp_report_options_init(&opt);
	assert_int_equal(rasp_report_option_set_number(&opt, "top", 1, true, err, sizeof(err)), 0);
	r = rasp_report_create(&opt);
	assert_non_null(r);
	assert_int_equal(rasp_report_add_sample(r, "A", 0, 1, 1, 100, 0), 0);
	assert_int_equal(rasp_report_add_sample(r, "B", 0, 1, 1, 50, 0), 0);
	assert_int_equal(rasp_report_add_sample(r, "C", 0, 1, 1, 20, 0), 0);
	rasp_report_add_discarded_events(r, 12, true);
	rasp_report_add_discarded_packets(r, 1, true);
	rasp_report_add_skipped(r);
	s = render(r);
	/* The warnings come before the table. */
	assert_non_null(strstr(s, "WARNING: the tracer discarded 12 events and 1 packet.\n"));
	assert_non_null(strstr(s, "too low by an unknown amount"));
	assert_non_null(strstr(s, "WARNING: 1 malformed AllocationSampled event was skipped"));
	assert_true(strstr(s, "WARNING") < strstr(s, "TYPE"));
	assert_non_null(strstr(s, "\nA  "));
	assert_null(strstr(s, "\nB  "));
	if (!strstr(
		s, "\n... 2 more rows (top=1)\nTOTAL        3    170  -1.8%/+60235.3%       3.0\n"))
		fail_msg("%s", s);
	free(s);
	rasp_report_destroy(r);
	rasp_report_options_fini(&opt);
}

static void test_report_csv_quoting_and_ticks(void **state)
{
	const char *kv[] = {"format", "csv", NULL};
	struct rasp_report *r = make(kv);
	char *s;

	(void)state;
	assert_int_equal(rasp_report_add_sample(r, "Dictionary<int, \"x\">", 0, 1, 1, 64, 3), 0);
	assert_int_equal(rasp_report_add_tick(r, "System.Int32[]", 106736), 0);
	assert_int_equal(rasp_report_add_tick(r, "System.Int32[]", 100000), 0);
	assert_int_equal(rasp_report_add_tick(r, "X", 99999), 0);
	s = render(r);
	assert_string_equal(s, "scope,type,samples,bytes,bytes_low,bytes_high,objects\n"
			       "group,\"Dictionary<int, \"\"x\"\">\",1,64,63,102464,1.0\n"
			       "total,,1,64,63,102464,1.0\n"
			       "allocation-tick-biased,System.Int32[],2,206736,,,\n"
			       "allocation-tick-biased,X,1,99999,,,\n");
	free(s);
	rasp_report_destroy(r);
}

/* Ticks never enter the estimates; the JSON section says why. */
static void test_report_json_ticks_and_discards(void **state)
{
	const char *kv[] = {"format", "json", NULL};
	struct rasp_report *r = make(kv);
	char *s;

	(void)state;
	assert_int_equal(rasp_report_add_tick(r, "System.Int32[]", 106736), 0);
	rasp_report_add_discarded_events(r, 0, false);
	s = render(r);
	assert_non_null(strstr(s, "\"rows\": [],\n  \"total\": {\"samples\": 0, \"bytes\": 0,"));
	assert_non_null(strstr(s, "{\"type\": \"System.Int32[]\", \"ticks\": 1, "
				  "\"allocation_amount\": 106736}"));
	assert_non_null(strstr(s, "\"discarded_events_unknown\": 1,"));
	assert_non_null(strstr(s, "\"estimates_too_low\": true,"));
	free(s);
	rasp_report_destroy(r);
}

/* Many groups: the hash tables grow and every sample still lands in its own cell. */
static void test_report_many_groups(void **state)
{
	const char *kv[] = {"format", "csv", "group-by", "type,thread", NULL};
	struct rasp_report *r = make(kv);
	char name[32], *s, *p;
	size_t lines = 0;

	(void)state;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 500; i++) {
			snprintf(name, sizeof(name), "T%d", i);
			assert_int_equal(rasp_report_add_sample(r, name, 0, 1, i % 7, 8 + i, 0), 0);
		}
	s = render(r);
	for (p = s; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 1 + 500 + 1);
	assert_non_null(strstr(s, "\ngroup,T499,2,3,1521,1518,"));
	assert_non_null(strstr(s, "\ntotal,,,1500,"));
	free(s);
	rasp_report_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_json_escaping),
	    cmocka_unit_test(test_report_params_accepts),
	    cmocka_unit_test(test_report_params_messages),
	    cmocka_unit_test(test_report_bad_samples),
	    cmocka_unit_test(test_report_group_by_type_json),
	    cmocka_unit_test(test_report_group_by_process_thread),
	    cmocka_unit_test(test_report_text_table),
	    cmocka_unit_test(test_report_text_top_and_warnings),
	    cmocka_unit_test(test_report_csv_quoting_and_ticks),
	    cmocka_unit_test(test_report_json_ticks_and_discards),
	    cmocka_unit_test(test_report_many_groups),
	};

	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
