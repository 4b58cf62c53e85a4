/* sink.rasp.report through the real babeltrace2 CLI on committed traces recorded with
 * rasp-emit (tests/consumer/traces/, golden .expect files as babeltrace2 keeps for its own
 * sinks), on the CoreCLR trace in ../shared/data/dotnet, and with bad parameters.
 * Regenerate the .expect files: RASP_UPDATE_EXPECT=1 ctest -R plugin-cli (then review). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lttng-session.h"
#include "plugin-cli.h"

#define OUTLEN 65536

struct golden {
	const char *trace;  /* under tests/consumer/traces/, or an absolute path */
	const char *params; /* without output= */
	const char *expect; /* under tests/consumer/traces/ */
};

/* Runs one case with output= a file in the build tree and compares it. */
static void run_golden(const struct golden *g)
{
	static char out[OUTLEN];
	char trace[PATH_MAX], file[PATH_MAX], params[PATH_MAX + 1024];
	const char *pre[] = {trace, NULL};
	int rc;

	assert_int_equal(plugin_mkdirs(RASP_TEST_OUT), 0);
	if (g->trace[0] == '/')
		snprintf(trace, sizeof(trace), "%s", g->trace);
	else
		snprintf(trace, sizeof(trace), "%s/%s", RASP_TEST_TRACES, g->trace);
	snprintf(file, sizeof(file), "%s/%s", RASP_TEST_OUT, g->expect);
	unlink(file);
	snprintf(params, sizeof(params), "%s%soutput=\"%s\"", g->params, g->params[0] ? "," : "",
		 file);
	rc = plugin_run(out, sizeof(out), pre, params, 60);
	if (rc != 0)
		fprintf(stderr, "babeltrace2 exited %d:\n%s\n", rc, out);
	assert_int_equal(rc, 0);
	assert_int_equal(plugin_compare(file, g->expect), 0);
}

static void test_plugin_golden_two_procs(void **state)
{
	static const struct golden cases[] = {
	    {"emit-two-procs", "", "emit-two-procs.text.expect"},
	    {"emit-two-procs", "format=\"csv\"", "emit-two-procs.csv.expect"},
	    {"emit-two-procs", "format=\"json\"", "emit-two-procs.json.expect"},
	    {"emit-two-procs", "group-by=\"kind,process\"",
	     "emit-two-procs.kind-process.text.expect"},
	    {"emit-two-procs",
	     "format=\"json\",group-by=[\"type\",\"kind\",\"thread\",\"process\"]",
	     "emit-two-procs.all-keys.json.expect"},
	    {"emit-two-procs", "top=2,confidence=0.5", "emit-two-procs.top2.text.expect"},
	    {"emit-two-procs", "format=\"csv\",group-by=\"thread\",sampling-mean=1000",
	     "emit-two-procs.thread.csv.expect"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_golden(&cases[i]);
}

/* No AllocationSampled event at all: an empty report, and success. */
static void test_plugin_golden_no_samples(void **state)
{
	static const struct golden cases[] = {
	    {"emit-none", "", "emit-none.text.expect"},
	    {"emit-none", "format=\"json\"", "emit-none.json.expect"},
	    {"emit-none", "format=\"csv\"", "emit-none.csv.expect"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_golden(&cases[i]);
}

/* Recorded with 2 x 4 KiB sub-buffers: LTTng discarded 257 of 400 events. */
static void test_plugin_golden_discarded(void **state)
{
	static const struct golden cases[] = {
	    {"emit-discarded", "", "emit-discarded.text.expect"},
	    {"emit-discarded", "format=\"json\"", "emit-discarded.json.expect"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_golden(&cases[i]);
}

/* A trace recorded from the runtime itself: `rasp record --mean 16384 --seed 3 -- rasp-docstore
 * --threads 2 --docs 520` (two threads, small, large and pinned objects, one process). */
static void test_plugin_golden_runtime(void **state)
{
	static const struct golden cases[] = {
	    {"docstore-small", "", "docstore-small.text.expect"},
	    {"docstore-small", "format=\"json\",group-by=\"type,kind\"",
	     "docstore-small.type-kind.json.expect"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_golden(&cases[i]);
}

/* Text to stdout, with the table and its total line. */
static void test_plugin_stdout(void **state)
{
	static char out[OUTLEN];
	const char *pre[] = {RASP_TEST_TRACES "/emit-two-procs", NULL};

	(void)state;
	assert_int_equal(plugin_run(out, sizeof(out), pre, "", 60), 0);
	assert_non_null(strstr(out, "rasp report: 28 "));
	assert_non_null(strstr(out, "\nTOTAL "));
	assert_non_null(strstr(out, "System.Byte[]"));
}

/* A real CoreCLR 3.1 trace (perfcollect): no AllocationSampled, one GCAllocationTick_V3
 * for System.Int32[] that must land in the biased tick section only. */
static void test_plugin_coreclr_allocation_tick(void **state)
{
	static char out[OUTLEN];
	char dir[PATH_MAX - 64], trace[PATH_MAX];
	const char *unzip[] = {RASP_TEST_PYTHON,
			       "-m",
			       "zipfile",
			       "-e",
			       RASP_TEST_SHARED_DIR "/data/dotnet/netcoreapp31.trace.zip",
			       dir,
			       NULL};
	struct golden cases[] = {
	    {trace, "format=\"json\"", "netcoreapp31.json.expect"},
	    {trace, "", "netcoreapp31.text.expect"},
	};

	(void)state;
	if (access(RASP_TEST_SHARED_DIR "/data/dotnet/netcoreapp31.trace.zip", R_OK) != 0)
		skip();
	snprintf(dir, sizeof(dir), "%s/coreclr", RASP_TEST_OUT);
	assert_int_equal(plugin_mkdirs(dir), 0);
	assert_int_equal(rasp_test_run(out, sizeof(out), unzip, NULL), 0);
	/* Only the ust/ tree: the kernel trace in the archive is irrelevant and large. */
	snprintf(trace, sizeof(trace), "%s/netcoreapp31.trace/auto-20200310-161654/ust", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_golden(&cases[i]);

	/* And the claims themselves, so a regenerated .expect cannot hide a regression. */
	{
		char file[PATH_MAX];
		FILE *f;
		static char json[OUTLEN];
		size_t n;

		snprintf(file, sizeof(file), "%s/netcoreapp31.json.expect", RASP_TEST_OUT);
		f = fopen(file, "r");
		assert_non_null(f);
		n = fread(json, 1, sizeof(json) - 1, f);
		json[n] = '\0';
		fclose(f);
		assert_non_null(strstr(json, "\"rows\": []"));
		assert_non_null(strstr(json, "\"total\": {\"samples\": 0,"));
		/* A .NET trace: its types as C# writes them, and the report says so. */
		assert_non_null(strstr(json, "{\"type\": \"int[]\", \"ticks\": 1, "));
		assert_non_null(strstr(json, "\"names\": \"csharp\""));
	}
}

/* The CLI wraps error causes at 80 columns: compare with whitespace runs as one space. */
static void squeeze(char *s)
{
	char *d = s, *start = s;

	for (; *s; s++) {
		bool space = *s == ' ' || *s == '\n' || *s == '\t';

		if (space && d > start && d[-1] == ' ')
			continue;
		*d++ = space ? ' ' : *s;
	}
	*d = '\0';
}

struct bad_param {
	const char *params;
	const char *expect[3]; /* substrings of the error */
};

/* Every bad parameter fails the run with a message naming it and what it accepts. */
static void test_plugin_bad_params(void **state)
{
	static const struct bad_param cases[] = {
	    {"format=\"xml\"", {"name=format", "value=\"xml\"", "accepted=text|csv|json"}},
	    {"format=3", {"name=format", "value-kind=integer", "text|csv|json"}},
	    {"colour=\"red\"",
	     {"unknown parameter: name=colour", "accepted=format|group-by", NULL}},
	    {"group-by=\"type,colour\"",
	     {"name=group-by", "value=\"type,colour\"", "type|kind|thread|process"}},
	    {"group-by=[\"type\",3]", {"name=group-by", "value-kind=other", NULL}},
	    {"confidence=1.5",
	     {"name=confidence", "value=1.5", "accepted=real number in (0, 0.999999999]"}},
	    {"confidence=0.0", {"name=confidence", "(0, 0.999999999]", NULL}},
	    {"confidence=0.9999999999999999", {"name=confidence", "(0, 0.999999999]", NULL}},
	    {"sampling-mean=0",
	     {"name=sampling-mean", "accepted=number of bytes in [1, 2^48]", NULL}},
	    {"sampling-mean=281474976710657",
	     {"name=sampling-mean", "accepted=number of bytes in [1, 2^48]", NULL}},
	    {"top=-1", {"name=top", "accepted=integer >= 0", NULL}},
	    {"top=1.5", {"name=top", "accepted=integer >= 0", NULL}},
	    /* Not ignored: csv writes every row. */
	    {"top=2,format=\"csv\"", {"top=2 with format=csv", "only format=text", NULL}},
	    {"strict=1", {"name=strict", "accepted=boolean true|false", NULL}},
	    {"output=\"\"", {"name=output", "non-empty file path", NULL}},
	    {"output=\"/nonexistent-dir/x/report.txt\"",
	     {"cannot create the output file", "output=\"/nonexistent-dir/x/report.txt\"", NULL}},
	};
	static char out[OUTLEN];
	const char *pre[] = {RASP_TEST_TRACES "/emit-two-procs", NULL};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = plugin_run(out, sizeof(out), pre, cases[i].params, 60);

		squeeze(out);

		if (rc == 0)
			fprintf(stderr, "params %s: accepted:\n%s\n", cases[i].params, out);
		assert_int_not_equal(rc, 0);
		for (int k = 0; k < 3 && cases[i].expect[k]; k++) {
			if (!strstr(out, cases[i].expect[k]))
				fprintf(stderr, "params %s: no '%s' in:\n%s\n", cases[i].params,
					cases[i].expect[k], out);
			assert_non_null(strstr(out, cases[i].expect[k]));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plugin_golden_two_procs),
	    cmocka_unit_test(test_plugin_golden_no_samples),
	    cmocka_unit_test(test_plugin_golden_discarded),
	    cmocka_unit_test(test_plugin_golden_runtime),
	    cmocka_unit_test(test_plugin_stdout),
	    cmocka_unit_test(test_plugin_coreclr_allocation_tick),
	    cmocka_unit_test(test_plugin_bad_params),
	};

	return cmocka_run_group_tests_name("plugin-cli", tests, NULL, NULL);
}
