/* rasp report --inuse end to end: rasp-test-lifetimes-prog (leaks, churn, a bounded cache,
 * cross-thread frees, realloc moves, large objects, a phase built then freed) recorded through
 * the real session daemon; its own exact live bytes and objects per type, at the end and at
 * its peak, against --inuse and --inuse --at peak (within 4 standard errors, the interval's
 * half-width / 1.96; a fixed seed). An input without free events is refused with the reason,
 * never shown as zeros. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd-support.h"
#include "lttng-session.h"
#include "test-tools.h"

static char trace[4096], truth[4096];

static int setup(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *rec[] = {
	    "record", "-o",    trace,
	    "--mean", "16384", "--seed",
	    "40",     "--",    rasp_test_build_path("bin/rasp-test-lifetimes-prog"),
	    truth,    NULL};

	(void)state;
	if (cmd_work_setup("report-inuse"))
		return -1;
	snprintf(trace, sizeof(trace), "%s", cmd_work("trace"));
	snprintf(truth, sizeof(truth), "%s", cmd_work("truth.json"));
	if (cmd_rasp(out, CMD_OUT, rec, NULL) != 0) {
		fprintf(stderr, "rasp record failed:\n%s", out);
		free(out);
		return -1;
	}
	free(out);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cmd_work_remove();
	return 0;
}

/* One estimate against the truth: inside its interval, or within 4 standard errors of it (a
 * type whose every object was sampled has an interval of one point). */
static void near(const char *what, const char *type, double est, double low, double high,
		 double truth_value)
{
	double se = (high - low) / (2 * 1.96);

	printf("%-6s %-13s truth %12.0f estimate %14.1f [%.1f, %.1f] (%+.2f se)\n", what, type,
	       truth_value, est, low, high, se > 0 ? (est - truth_value) / se : 0.0);
	if ((truth_value == 0 && est == 0) || (low <= truth_value && truth_value <= high))
		return;
	if (!(fabs(est - truth_value) <= 4 * se))
		fail_msg("%s %s: truth %.0f, estimate %.1f [%.1f, %.1f]", what, type, truth_value,
			 est, low, high);
}

static void compare(const char *moment, const char *const *args)
{
	char *out = malloc(CMD_OUT);
	json_object *rep = cmd_report_json(out, CMD_OUT, args), *rows, *inuse;
	json_object *truth_json = json_object_from_file(truth), *want;
	size_t n;

	if (!truth_json)
		fail_msg("%s is not JSON", truth);
	want = cmd_get(truth_json, moment);
	inuse = cmd_get(rep, "inuse");
	assert_true(json_object_get_boolean(cmd_get(inuse, "known")));
	assert_string_equal(json_object_get_string(cmd_get(inuse, "moment")), moment);
	/* Every free found its sample; none was lost. */
	assert_true(cmd_num(inuse, "frees") > 1000);
	assert_true(cmd_num(inuse, "frees_unmatched") == 0);
	assert_true(cmd_num(inuse, "lost_frees") == 0);
	assert_true(cmd_num(inuse, "size_mismatches") == 0);
	assert_true(json_object_array_length(cmd_get(rep, "timeline")) >= 100);
	rows = cmd_get(rep, "rows");
	n = json_object_array_length(rows);
	assert_int_equal(n, json_object_object_length(want));
	for (size_t i = 0; i < n; i++) {
		json_object *row = json_object_array_get_idx(rows, i);
		const char *type = json_object_get_string(cmd_get(row, "type"));
		json_object *t = cmd_get(want, type);
		double bytes = json_object_get_double(json_object_array_get_idx(t, 0));
		double objects = json_object_get_double(json_object_array_get_idx(t, 1));

		near(moment, type, cmd_num(row, "inuse_bytes"), cmd_num(row, "inuse_bytes_low"),
		     cmd_num(row, "inuse_bytes_high"), bytes);
		near(moment, type, cmd_num(row, "inuse_objects"), cmd_num(row, "inuse_objects_low"),
		     cmd_num(row, "inuse_objects_high"), objects);
	}
	json_object_put(rep);
	json_object_put(truth_json);
	free(out);
}

static void test_inuse_at_end(void **state)
{
	const char *args[] = {"--inuse", trace, NULL};

	(void)state;
	compare("end", args);
}

static void test_inuse_at_peak(void **state)
{
	const char *args[] = {"--inuse", "--at", "peak", trace, NULL};

	(void)state;
	compare("peak", args);
}

/* The text report says what the figures are of, with the FREED share. */
static void test_inuse_text(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *args[] = {"report", "--inuse", "--at", "peak", "--lifetimes", trace, NULL};

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, args, NULL), 0);
	cmd_expect_in(out, "in use:    at the peak of the estimated live bytes", "the moment");
	cmd_expect_in(out, "FREED", "the FREED column");
	cmd_expect_in(out, "NEVER", "the lifetimes");
	cmd_expect_in(out, "Life.Phase", "the phase");
	free(out);
}

/* A trace without free events (recorded before they existed, or from .NET): --inuse says
 * why and what it would take, exits 1, writes no report. */
static void test_inuse_without_frees_is_refused(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *args[] = {"report", "--inuse", cmd_golden("docstore-small"), NULL};

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, args, NULL), 1);
	cmd_expect_in(out, "holds no Rasp_Runtime:SampledObjectFreed", "the reason");
	cmd_expect_in(out, ".NET emits no event when an object is collected", "the .NET case");
	cmd_expect_not_in(out, "TOTAL", "no table");
	free(out);
}

/* rasp diff --inuse: the peak against the end of one recording (JSON reports, and the trace
 * itself as NEW): the phase freed between them is the one significant change, the rest held
 * the same samples. */
static void test_inuse_diff(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *peak = cmd_work("peak.json"), *end = cmd_work("end.json");
	const char *rp[] = {"report", "--inuse", "--at", "peak", "--format",
			    "json",   "-o",	 peak,	 trace,	 NULL};
	const char *re[] = {"report", "--inuse", "--format", "json", "-o", end, trace, NULL};
	const char *news[] = {end, trace};

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, rp, NULL), 0);
	assert_int_equal(cmd_rasp(out, CMD_OUT, re, NULL), 0);
	for (int k = 0; k < 2; k++) {
		const char *d[] = {"diff", "--inuse", "--format", "json", peak, news[k], NULL};
		json_object *j, *rows;
		size_t n;

		assert_int_equal(cmd_rasp(out, CMD_OUT, d, NULL), 0);
		j = json_tokener_parse(out);
		if (!j)
			fail_msg("rasp diff --inuse wrote no JSON:\n%s", out);
		assert_true(json_object_get_boolean(cmd_get(j, "inuse")));
		rows = cmd_get(j, "rows");
		n = json_object_array_length(rows);
		assert_int_equal(n, 7);
		for (size_t i = 0; i < n; i++) {
			json_object *row = json_object_array_get_idx(rows, i);
			const char *type = json_object_get_string(cmd_get(row, "type"));
			bool sig = json_object_get_boolean(cmd_get(row, "significant"));

			if (sig != (strcmp(type, "Life.Phase") == 0))
				fail_msg("%s: significant %d\n%s", type, sig, out);
		}
		json_object_put(j);
	}
	/* Without free events, refused as rasp report refuses it. */
	{
		const char *d[] = {"diff", "--inuse", cmd_golden("docstore-small"), trace, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, d, NULL), 1);
		cmd_expect_in(out, "holds no Rasp_Runtime:SampledObjectFreed", "the reason");
	}
	free(out);
}

/* The HTML page of --inuse --at peak in headless Chromium: its script ran without error
 * ("ok:"), drew the chart of live bytes (the total and the types, a band each, the moment's
 * rule) and titled the flame graph with the moment. */
static void test_inuse_html_chart(void **state)
{
	char *out = malloc(CMD_OUT), buf[4096], cmd[12288], *dom = NULL;
	const char *exe = rasp_test_on_path("chromium", buf, sizeof(buf)),
		   *page = cmd_work("inuse.html");
	const char *args[] = {"report", "--inuse", "--at", "peak", "--format",
			      "html",	"-o",	   page,   trace,  NULL};
	size_t len = 0;
	FILE *pipe, *mem;
	int c;

	(void)state;
	if (!exe) {
		printf("skipped: chromium not found\n");
		free(out);
		skip();
	}
	assert_int_equal(cmd_rasp(out, CMD_OUT, args, NULL), 0);
	snprintf(cmd, sizeof(cmd),
		 "timeout -k 10 120 '%s' --headless=new --no-sandbox --disable-gpu --no-first-run "
		 "--user-data-dir='%s' --virtual-time-budget=5000 --dump-dom 'file://%s' "
		 "2>/dev/null",
		 exe, cmd_work("chromium-profile"), page);
	mem = open_memstream(&dom, &len);
	assert_non_null(mem);
	pipe = popen(cmd, "r");
	assert_non_null(pipe);
	while ((c = fgetc(pipe)) != EOF)
		fputc(c, mem);
	assert_int_equal(pclose(pipe), 0);
	assert_int_equal(fclose(mem), 0);
	cmd_expect_in(dom, "id=\"rasp-status\">ok:", "the script ran");
	cmd_expect_in(dom, "id=\"rasp-live-chart\"", "the chart");
	cmd_expect_in(dom, "Live bytes over time", "its title");
	cmd_expect_in(dom, "Flame graph of estimated bytes in use at ", "the flame graph's moment");
	cmd_expect_in(dom, "Estimated bytes in use by type", "the table");
	/* The total and the seven types' largest six: a line and a band each. */
	{
		size_t lines = 0;

		for (const char *p = dom; (p = strstr(p, "<polyline")); p++)
			lines++;
		assert_int_equal(lines, 7);
	}
	cmd_expect_in(dom, "stroke-dasharray", "the moment's rule");
	free(dom);
	free(out);
}

/* pprof with Go's four heap sample types, inuse_space the default with --inuse: go tool
 * pprof -sample_index=inuse_space totals what the JSON report's in-use total says (each row
 * rounded: within a byte per row). */
static void test_inuse_pprof_go_tool(void **state)
{
	char *out = malloc(CMD_OUT), gobuf[4096], *raw, *top, *at;
	const char *go = rasp_test_on_path("go", gobuf, sizeof(gobuf)),
		   *pb = cmd_work("inuse.pb.gz");
	const char *args[] = {"report", "--inuse", "--format", "pprof", "-o", pb, trace, NULL};
	const char *jargs[] = {"--inuse", trace, NULL};
	json_object *rep;
	double total;

	(void)state;
	if (!go) {
		printf("skipped: go not found\n");
		free(out);
		skip();
	}
	assert_int_equal(cmd_rasp(out, CMD_OUT, args, NULL), 0);
	raw = rasp_test_go_pprof(go, "-raw", pb);
	assert_non_null(strstr(raw, "alloc_objects/count alloc_space/bytes inuse_objects/count "
				    "inuse_space/bytes[dflt]"));
	free(raw);
	top = rasp_test_go_pprof(go, "-top -sample_index=inuse_space -unit=byte", pb);
	printf("go tool pprof -top -sample_index=inuse_space:\n%.600s\n", top);
	at = strstr(top, "% of ");
	assert_non_null(at);
	total = strtod(at + 5, NULL);
	rep = cmd_report_json(out, CMD_OUT, jargs);
	if (fabs(total - cmd_num(cmd_get(rep, "total"), "inuse_bytes")) >
	    (double)json_object_array_length(cmd_get(rep, "rows")))
		fail_msg("pprof's inuse_space total %.0f, the report's %.0f", total,
			 cmd_num(cmd_get(rep, "total"), "inuse_bytes"));
	json_object_put(rep);
	free(top);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inuse_at_end),
	    cmocka_unit_test(test_inuse_at_peak),
	    cmocka_unit_test(test_inuse_text),
	    cmocka_unit_test(test_inuse_pprof_go_tool),
	    cmocka_unit_test(test_inuse_diff),
	    cmocka_unit_test(test_inuse_html_chart),
	    cmocka_unit_test(test_inuse_without_frees_is_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
