/* rasp report's regressions (cli/cmd-report.c, inputs.c, args.c, graph.c), each a defect a
 * user hit: huge sampling means, the confidence range, one trace given twice, incomplete
 * traces, a mean that had to be assumed, exit codes, inputs without samples or without a
 * trace, -o on failure, and text cells that are never cut. Traces are the committed ones
 * (tests/consumer/traces, docs/consumer.md) or recorded here through lttng-sessiond. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <pty.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "cmd-support.h"
#include "lttng-session.h"

extern char **environ;

/* 2^48: the largest sampling mean the runtime and the report accept. */
#define HUGE_MEAN   "281474976710656"
#define HUGE_MEAN_D 281474976710656.0

/* The session recorded without contexts, and the relay daemon: both ended in teardown. */
static char bare_session[96];
static pid_t relayd_pid;

static int setup(void **state)
{
	(void)state;
	return cmd_work_setup("cmd-report");
}

static void stop_relayd(void)
{
	if (relayd_pid > 0) {
		kill(relayd_pid, SIGTERM);
		waitpid(relayd_pid, NULL, 0);
	}
	relayd_pid = 0;
}

static void destroy_bare_session(void)
{
	if (bare_session[0]) {
		const char *destroy[] = {"destroy", bare_session, NULL};

		rasp_test_lttng(NULL, 0, destroy);
		bare_session[0] = '\0';
	}
}

static int teardown(void **state)
{
	(void)state;
	destroy_bare_session();
	stop_relayd();
	cmd_work_remove();
	return 0;
}

static void lttng_ok(const char *const *args)
{
	char out[8192];
	int rc = rasp_test_lttng(out, sizeof(out), args);

	if (rc != 0)
		fail_msg("lttng %s failed (%d):\n%s", args[0], rc, out);
}

/* Records prog into dir under a session that enables only AllocationSampled and adds no
 * context: the trace has no SamplingConfigured event and no vpid or vtid. The session records
 * every process; other AllocationSampled events that run meanwhile join the trace. */
static void record_bare(const char *dir, const char *const *prog)
{
	char output[4200], out[4096];
	int rc;

	snprintf(bare_session, sizeof(bare_session), "rasp-cmd-report-%ld", (long)getpid());
	snprintf(output, sizeof(output), "--output=%s", dir);
	const char *create[] = {"create", bare_session, output, NULL};
	const char *enable[] = {
	    "enable-event", "-u", "-s", bare_session, "DotNETRuntime:AllocationSampled", NULL};
	const char *start[] = {"start", bare_session, NULL};
	const char *stop[] = {"stop", bare_session, NULL};

	lttng_ok(create);
	lttng_ok(enable);
	lttng_ok(start);
	rc = rasp_test_run(out, sizeof(out), prog, NULL);
	if (rc != 0)
		fail_msg("%s exited with %d:\n%s", prog[0], rc, out);
	lttng_ok(stop);
	destroy_bare_session();
}

/* ---- Checks on a report ---------------------------------------------------------------- */

static double finite_num(json_object *o, const char *key)
{
	double v = cmd_num(o, key);

	if (!isfinite(v))
		fail_msg("\"%s\" is not finite in %s", key, json_object_to_json_string(o));
	return v;
}

/* Every row's and the total's bytes lie in their interval. */
static void check_intervals(json_object *rep)
{
	json_object *rows = cmd_get(rep, "rows");
	size_t n = json_object_array_length(rows);

	for (size_t i = 0; i <= n; i++) {
		json_object *r = i < n ? json_object_array_get_idx(rows, i) : cmd_get(rep, "total");
		double lo = finite_num(r, "bytes_low"), b = finite_num(r, "bytes"),
		       hi = finite_num(r, "bytes_high");

		if (!(lo <= b && b <= hi))
			fail_msg("bytes %.17g outside [%.17g, %.17g] in %s", b, lo, hi,
				 json_object_to_json_string(r));
	}
}

/* A human-unit cell of the text report ("3.00 PiB", "512 B" for bytes; "12.4 T", "11.7" for
 * counts) as a number; `unit` (or NULL) is used when the cell has none (the left end of
 * "1.55 - 5.24 PiB"). -1 if it is not a number with a unit of its kind. */
static int human_value(const char *cell, const char *unit, int bytes, double *v)
{
	static const char *const byte_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	static const char *const count_units[] = {"", "k", "M", "G", "T", "P", "E"};
	const char *const *units = bytes ? byte_units : count_units;
	char *end;
	double x = strtod(cell, &end);

	if (end == cell)
		return -1;
	if (*end == ' ')
		unit = end + 1;
	else if (*end)
		return -1;
	/* Bytes always show a unit; small counts show none. */
	if (!unit || !*unit) {
		*v = x;
		return bytes ? -1 : 0;
	}
	for (int u = 0; u < 7; u++)
		if (strcmp(unit, units[u]) == 0) {
			*v = x * pow(bytes ? 1024.0 : 1000.0, u);
			return 0;
		}
	return -1;
}

/* "~1.55 - 5.24 PiB", "884 TiB - 3.94 PiB" or "9 - 32.5 T" (counts) into its two ends. */
static int interval_values(const char *cell, int bytes, double *lo, double *hi)
{
	char left[128];
	const char *dash, *unit;

	if (*cell == '~' || *cell == '?')
		cell++;
	dash = strstr(cell, " - ");
	if (!dash || (size_t)(dash - cell) >= sizeof(left))
		return -1;
	snprintf(left, sizeof(left), "%.*s", (int)(dash - cell), cell);
	/* Only a bytes interval writes a shared unit once (a bare count is a count). */
	unit = bytes ? strchr(dash + 3, ' ') : NULL;
	return human_value(dash + 3, NULL, bytes, hi) ||
		       human_value(left, unit ? unit + 1 : "", bytes, lo)
		   ? -1
		   : 0;
}

/* Splits a table line into cells (separated by two spaces or more); returns the count. */
static size_t cells_of(char *line, char **cells, size_t max)
{
	size_t n = 0;
	char *p = line;

	while (*p && n < max) {
		char *end;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		cells[n++] = p;
		end = strstr(p, "  ");
		if (!end)
			break;
		*end = '\0';
		p = end + 2;
	}
	return n;
}

static void close_to(const char *what, const char *cell, double shown, double exact,
		     const char *line)
{
	/* Three significant digits: at most half a unit of the third digit off. */
	if (!(fabs(shown - exact) <= 0.006 * fabs(exact) + 0.5))
		fail_msg("%s: the text shows '%s' (%.6g), the json %.17g; line:\n%s", what, cell,
			 shown, exact, line);
}

/* The text table says what the json says: every row (same order) and the total, each number
 * whole (a cut cell either does not parse or no longer matches), and no key cell shows an
 * internal placeholder for an unknown process or thread. */
static void check_text_matches_json(const char *text, json_object *rep)
{
	json_object *rows = cmd_get(rep, "rows");
	size_t n = json_object_array_length(rows), row = 0;
	char *copy = strdup(text), *save = NULL, *line;
	int in_table = 0, total_seen = 0;

	assert_non_null(copy);
	cmd_expect_not_in(text, "922337203685477580", "a placeholder pid or tid (INT64_MIN)");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char whole[1024], *cells[16];
		size_t nc;
		json_object *r;
		double v, lo, hi;

		if (!in_table) {
			in_table = strncmp(line, "TYPE ", 5) == 0 || strncmp(line, "KIND ", 5) == 0;
			continue;
		}
		if (strncmp(line, "~ ", 2) == 0 || strncmp(line, "... ", 4) == 0)
			continue;
		if (total_seen)
			break;
		snprintf(whole, sizeof(whole), "%s", line);
		nc = cells_of(line, cells, 16);
		if (nc < 7)
			fail_msg("table line with %zu cells:\n%s", nc, whole);
		total_seen = strcmp(cells[0], "TOTAL") == 0;
		if (!total_seen && row >= n)
			fail_msg("more table lines than json rows (%zu):\n%s", n, text);
		r = total_seen ? cmd_get(rep, "total") : json_object_array_get_idx(rows, row++);
		/* The last six cells: bytes, interval, share, objects, interval, samples. */
		char **c = cells + nc - 6;

		if (human_value(c[0], NULL, 1, &v))
			fail_msg("BYTES cell '%s' is not a whole number:\n%s", c[0], whole);
		close_to("bytes", c[0], v, cmd_num(r, "bytes"), whole);
		if (interval_values(c[1], 1, &lo, &hi))
			fail_msg("interval cell '%s' is not whole:\n%s", c[1], whole);
		close_to("bytes_low", c[1], lo, cmd_num(r, "bytes_low"), whole);
		close_to("bytes_high", c[1], hi, cmd_num(r, "bytes_high"), whole);
		if (human_value(c[3], NULL, 0, &v))
			fail_msg("OBJECTS cell '%s' is not a whole number:\n%s", c[3], whole);
		close_to("objects", c[3], v, cmd_num(r, "objects"), whole);
		if (interval_values(c[4], 0, &lo, &hi))
			fail_msg("interval cell '%s' is not whole:\n%s", c[4], whole);
		close_to("objects_low", c[4], lo, cmd_num(r, "objects_low"), whole);
		close_to("objects_high", c[4], hi, cmd_num(r, "objects_high"), whole);
		if (strtod(c[5], NULL) != cmd_num(r, "samples"))
			fail_msg("SAMPLES cell '%s' differs from the json:\n%s", c[5], whole);
	}
	if (!total_seen || row != n)
		fail_msg("the table shows %zu of %zu rows%s:\n%s", row, n,
			 total_seen ? "" : " and no TOTAL", text);
	free(copy);
}

/* ---- 1. Huge sampling means -------------------------------------------------------------- */

/* Old: the quantile search looped forever once the interval's ends passed 2^53. */
static void test_huge_sampling_mean_recorded(void **state)
{
	char *out = malloc(CMD_OUT), *text = malloc(CMD_OUT);
	const char *dir = cmd_work("huge");
	const char *rec[] = {
	    "record", "-o",  dir,  "--",      rasp_test_build_path("bin/rasp-emit"),
	    "-n",     "100", "-m", HUGE_MEAN, NULL};
	const char *report[] = {"report", dir, NULL};
	const char *args[] = {dir, NULL};
	json_object *rep, *total;

	(void)state;
	if (cmd_rasp(out, CMD_OUT, rec, NULL) != 0)
		fail_msg("rasp record failed:\n%s", out);
	assert_int_equal(cmd_rasp(text, CMD_OUT, report, NULL), 0);
	rep = cmd_report_json(out, CMD_OUT, args);
	total = cmd_get(rep, "total");
	assert_int_equal(cmd_num(total, "samples"), 100);
	/* Objects far below the mean weigh the mean each. */
	assert_true(fabs(cmd_num(total, "bytes") / (100 * HUGE_MEAN_D) - 1) < 1e-6);
	check_intervals(rep);
	check_text_matches_json(text, rep);
	json_object_put(rep);
	free(text);
	free(out);
}

/* The same past 2^53 with the mean given to the report, on a trace without SamplingConfigured
 * and without vpid or vtid: the text never shows a placeholder for the unknown process. */
static void test_huge_assumed_mean_without_vpid(void **state)
{
	char *out = malloc(CMD_OUT), *text = malloc(CMD_OUT);
	const char *dir = cmd_work("bare");
	const char *prog[] = {rasp_test_build_path("bin/rasp-emit"), "-n", "40", NULL};
	const char *args[] = {"--sampling-mean", HUGE_MEAN, dir, NULL};
	static const char *const groups[] = {"type", "process,thread,type", "kind,process"};
	json_object *rep, *total, *procs;

	(void)state;
	record_bare(dir, prog);
	rep = cmd_report_json(out, CMD_OUT, args);
	total = cmd_get(rep, "total");
	/* 40 from rasp-emit, more if another program sampled meanwhile. */
	assert_true(cmd_num(total, "samples") >= 40);
	assert_true(fabs(cmd_num(total, "bytes") / (cmd_num(total, "samples") * HUGE_MEAN_D) - 1) <
		    1e-6);
	check_intervals(rep);
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		const char *report[] = {
		    "report", "--sampling-mean", HUGE_MEAN, "--group-by", groups[g], dir, NULL};
		const char *jargs[] = {"--sampling-mean", HUGE_MEAN, "--group-by",
				       groups[g],	  dir,	     NULL};
		json_object *grouped;

		assert_int_equal(cmd_rasp(text, CMD_OUT, report, NULL), 0);
		grouped = cmd_report_json(out, CMD_OUT, jargs);
		check_text_matches_json(text, grouped);
		json_object_put(grouped);
	}
	/* All samples are one unknown process; json says so with null. */
	procs = cmd_get(rep, "processes");
	assert_int_equal(json_object_array_length(procs), 1);
	assert_true(json_object_is_type(cmd_get(json_object_array_get_idx(procs, 0), "pid"),
					json_type_null));
	json_object_put(rep);
	free(text);
	free(out);
}

/* ---- 2. The confidence range ------------------------------------------------------------ */

/* Old: 0.9999999999999999 was accepted and the quantile search never ended. */
static void test_confidence_out_of_range_is_usage(void **state)
{
	static const char *const bad[] = {"0.9999999999999999", "1", "0", "nan"};
	char *out = malloc(CMD_OUT);
	const char *trace = cmd_golden("emit-two-procs");

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = {"report", "--confidence", bad[i], trace, NULL};
		int rc = cmd_rasp(out, CMD_OUT, a, NULL);

		if (rc != 2)
			fail_msg("--confidence %s: status %d, want 2 (bad usage):\n%s", bad[i], rc,
				 out);
		cmd_expect_in(out, "--confidence", bad[i]);
		cmd_expect_in(out, "(0, 0.999999999]", bad[i]);
		cmd_expect_not_in(out, "TOTAL", bad[i]);
	}
	{
		const char *a[] = {"report", "--confidence", "0.999999999", trace, NULL};
		const char *j[] = {"--confidence", "0.999999999", trace, NULL};
		json_object *rep;

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 0);
		cmd_expect_in(out, "TOTAL", "--confidence 0.999999999");
		rep = cmd_report_json(out, CMD_OUT, j);
		assert_true(fabs(cmd_num(rep, "confidence") - 0.999999999) < 1e-15);
		json_object_put(rep);
	}
	free(out);
}

/* ---- 3. One trace given twice ------------------------------------------------------------ */

static void expect_twice(const char *const *args, const char *message, const char *what)
{
	char *out = malloc(CMD_OUT);
	int rc = cmd_rasp(out, CMD_OUT, args, NULL);

	if (rc == 0 || rc == 2)
		fail_msg("%s: status %d, want 1 (refused):\n%s", what, rc, out);
	cmd_expect_in(out, message, what);
	cmd_expect_not_in(out, "TOTAL", what);
	free(out);
}

/* Old: every sample counted twice. Operands naming one directory twice, or one inside the
 * other, are caught before reading, naming both operands; a copy (same trace UUID) while
 * reading. */
static void test_same_trace_twice_is_refused(void **state)
{
	char msg[8192];
	const char *t = cmd_golden("emit-two-procs");
	const char *doc = cmd_golden("docstore-small"), *doc_ust = cmd_golden("docstore-small/ust");
	const char *copy = cmd_work("copy"), *holder = cmd_work("holder");

	(void)state;
	{
		const char *a[] = {"report", t, t, NULL};

		snprintf(msg, sizeof(msg), "is in the input twice (from '%s' and '%s')", t, t);
		expect_twice(a, msg, "rasp report T T");
	}
	{
		const char *a[] = {"report", doc, doc_ust, NULL};

		snprintf(msg, sizeof(msg), "is in the input twice (from '%s' and '%s')", doc,
			 doc_ust);
		expect_twice(a, msg, "rasp report T T/ust");
	}
	{
		const char *mk[] = {"/bin/mkdir", "-p", holder, NULL};
		const char *a[] = {"report", t, copy, NULL};
		const char *b[] = {"report", holder, t, NULL};
		const char *j[] = {"report", "--format", "json", t, copy, NULL};

		cmd_copy(t, copy);
		cmd_tool(mk);
		cmd_copy(t, holder);
		expect_twice(a, "same trace is in the input twice", "rasp report T COPY");
		expect_twice(b, "same trace is in the input twice",
			     "rasp report DIR-HOLDING-COPY T");
		expect_twice(j, "same trace is in the input twice", "rasp report --format json");
	}
	/* The same recording in two formats (a trace and its rasp convert) has no common UUID:
	 * its samples give it away, also for a trace of fewer samples than the signature. */
	for (int k = 0; k < 2; k++) {
		const char *src = k ? t : doc, *nt = cmd_work(k ? "two.nettrace" : "doc.nettrace");
		const char *conv[] = {"convert",	 "-o",		 nt,  k ? "--pid" : src,
				      k ? "6189" : NULL, k ? src : NULL, NULL};
		const char *a[] = {"report", src, nt, NULL};
		char out[4096];

		assert_int_equal(cmd_rasp(out, sizeof(out), conv, NULL), 0);
		expect_twice(a, "same recording is in the input twice", "rasp report T T.nettrace");
	}
	/* A recording of fewer samples than the signature: compared whole at the end. */
	{
		const char *small = cmd_work("small.nettrace"), *again = cmd_work("again.nettrace");
		char path[512], out[4096];
		const char *conv[] = {"convert", "-o", again, small, NULL};
		const char *a[] = {"report", small, again, NULL};

		snprintf(path, sizeof(path), "DOTNET_EventPipeOutputPath=%s", small);
		{
			const char *run[] = {
			    "/usr/bin/env",
			    "DOTNET_EnableEventPipe=1",
			    path,
			    "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:"
			    "0x80000000000:4",
			    "RASP_SAMPLING_MEAN=1048576",
			    "RASP_SEED=7",
			    RASP_TEST_BUILD_DIR "/bin/rasp-ep-prog",
			    "1",
			    "40",
			    NULL};

			cmd_tool(run);
		}
		assert_int_equal(cmd_rasp(out, sizeof(out), conv, NULL), 0);
		{
			const char *ops[] = {small, NULL};
			json_object *j = cmd_report_json(out, sizeof(out), ops);
			double n = cmd_num(cmd_get(j, "total"), "samples");

			if (!(n >= 1 && n < 8))
				fail_msg("want 1 to 7 samples for this case, got %g", n);
			json_object_put(j);
		}
		expect_twice(a, "same recording is in the input twice",
			     "rasp report SMALL SMALL-CONVERTED");
	}
}

/* Two different traces are reported together: the samples of both, each once. */
static void test_two_traces_together(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *a = cmd_golden("emit-two-procs"), *b = cmd_golden("emit-discarded");
	const char *ja[] = {a, NULL}, *jb[] = {b, NULL}, *jab[] = {a, b, NULL};
	json_object *ra, *rb, *rab;

	(void)state;
	ra = cmd_report_json(out, CMD_OUT, ja);
	rb = cmd_report_json(out, CMD_OUT, jb);
	rab = cmd_report_json(out, CMD_OUT, jab);
	assert_int_equal(cmd_num(cmd_get(rab, "total"), "samples"),
			 cmd_num(cmd_get(ra, "total"), "samples") +
			     cmd_num(cmd_get(rb, "total"), "samples"));
	assert_int_equal(json_object_array_length(cmd_get(rab, "inputs")), 2);
	json_object_put(ra);
	json_object_put(rb);
	json_object_put(rab);
	free(out);
}

/* ---- 4. Incomplete traces ---------------------------------------------------------------- */

static void expect_incomplete(const char *dir, int incomplete, const char *what)
{
	char *out = malloc(CMD_OUT);
	const char *text[] = {"report", dir, NULL};
	const char *args[] = {dir, NULL};
	json_object *rep;
	int rc = cmd_rasp(out, CMD_OUT, text, NULL);

	if (rc != 0)
		fail_msg("%s: status %d:\n%s", what, rc, out);
	if (incomplete)
		cmd_expect_in(out, "trace incomplete", what);
	else
		cmd_expect_not_in(out, "trace incomplete", what);
	rep = cmd_report_json(out, CMD_OUT, args);
	if (json_object_get_boolean(cmd_get(rep, "incomplete_input")) != incomplete)
		fail_msg("%s: \"incomplete_input\" is not %s:\n%s", what,
			 incomplete ? "true" : "false", json_object_to_json_string(rep));
	json_object_put(rep);
	free(out);
}

/* Old: a stream file cut short, emptied or deleted was read as if whole. emit-discarded has
 * several packets in ch0_0; index/ch0_0.idx lists them. */
static void test_incomplete_trace_is_reported(void **state)
{
	const char *src = cmd_golden("emit-discarded");
	const char *whole = cmd_work("whole"), *cut = cmd_work("cut"), *empty = cmd_work("empty"),
		   *gone = cmd_work("gone");
	char stream[4200];
	uint64_t offsets[64];
	size_t packets;

	(void)state;
	cmd_copy(src, whole);
	cmd_copy(src, cut);
	cmd_copy(src, empty);
	cmd_copy(src, gone);
	expect_incomplete(whole, 0, "an intact copy");

	snprintf(stream, sizeof(stream), "%s/index/ch0_0.idx", cut);
	packets = cmd_index_packets(stream, offsets, 64);
	assert_true(packets >= 2);
	/* At a packet boundary: what is left reads cleanly, only the index tells. */
	snprintf(stream, sizeof(stream), "%s/ch0_0", cut);
	assert_int_equal(truncate(stream, (off_t)offsets[packets - 1]), 0);
	expect_incomplete(cut, 1, "stream cut at its last packet");

	snprintf(stream, sizeof(stream), "%s/ch0_0", empty);
	assert_int_equal(truncate(stream, 0), 0);
	expect_incomplete(empty, 1, "stream file emptied");

	snprintf(stream, sizeof(stream), "%s/ch0_0", gone);
	assert_int_equal(unlink(stream), 0);
	expect_incomplete(gone, 1, "stream file deleted, its index kept");
}

/* ---- 5. An assumed sampling mean ---------------------------------------------------------- */

static json_object *process_of(json_object *rep, long pid)
{
	json_object *procs = cmd_get(rep, "processes");

	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		json_object *p = json_object_array_get_idx(procs, i), *v = cmd_get(p, "pid");

		if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) == pid)
			return p;
	}
	fail_msg("process %ld not in the report: %s", pid, json_object_to_json_string(procs));
	return NULL;
}

/* rasp-alloc-prog sampling at 16384 under a session enabling `events`; the report of its
 * trace (text into `text`, json returned) and its pid. The trace is moved into the work
 * directory before anything can fail, so teardown removes it whatever happens. */
static json_object *record_alloc_prog(const char *const *events, const char *name, char *text,
				      long *pid)
{
	struct rasp_test_session s;
	const char *prog[] = {rasp_test_build_path("bin/rasp-alloc-prog"), "500", NULL};
	const char *env[] = {"RASP_SAMPLING_MEAN=16384", NULL};
	const char *dir = cmd_work(name);
	const char *mv[] = {"/bin/mv", s.dir, dir, NULL};
	const char *report[] = {"report", dir, NULL};
	const char *args[] = {dir, NULL};
	char *out = malloc(CMD_OUT);
	const char *pid_at;
	json_object *rep;
	int rc, moved;

	if (rasp_test_session_start(&s, events) != 0) {
		rasp_test_session_destroy(&s, 0);
		fail_msg("cannot start an lttng session");
	}
	rc = rasp_test_run(out, CMD_OUT, prog, env);
	rasp_test_session_stop(&s);
	moved = rasp_test_run(NULL, 0, mv, NULL);
	rasp_test_session_destroy(&s, 0);
	pid_at = strstr(out, " pid=");
	if (rc != 0 || !pid_at || moved != 0)
		fail_msg("rasp-alloc-prog exited with %d (trace moved: %d):\n%s", rc, moved, out);
	*pid = strtol(pid_at + 5, NULL, 10);
	assert_int_equal(cmd_rasp(text, CMD_OUT, report, NULL), 0);
	rep = cmd_report_json(out, CMD_OUT, args);
	free(out);
	return rep;
}

/* Old: samples that no SamplingConfigured preceded were weighed with 102400 without a word. */
static void test_assumed_mean_is_said(void **state)
{
	static const char *const only[] = {"DotNETRuntime:AllocationSampled", NULL};
	static const char *const both[] = {"DotNETRuntime:AllocationSampled", "Rasp_Runtime:*",
					   NULL};
	char *text = malloc(CMD_OUT), note[256];
	json_object *rep, *p;
	long pid;

	(void)state;
	rep = record_alloc_prog(only, "only-sampled", text, &pid);
	p = process_of(rep, pid);
	assert_true(cmd_num(p, "samples") > 0);
	assert_true(cmd_num(p, "samples_assumed_mean") > 0);
	assert_int_equal(cmd_num(p, "sampling_mean_low"), 102400);
	assert_true(json_object_get_boolean(cmd_get(rep, "assumed_mean")));
	snprintf(note, sizeof(note), "process %ld (rasp-alloc-prog): %s", pid,
		 "sampling mean 102400 bytes ASSUMED");
	cmd_expect_in(text, note, "AllocationSampled only");
	json_object_put(rep);

	rep = record_alloc_prog(both, "with-runtime", text, &pid);
	p = process_of(rep, pid);
	assert_true(cmd_num(p, "samples") > 0);
	assert_int_equal(cmd_num(p, "samples_assumed_mean"), 0);
	assert_int_equal(cmd_num(p, "sampling_mean_low"), 16384);
	assert_int_equal(cmd_num(p, "sampling_mean_high"), 16384);
	snprintf(note, sizeof(note), "process %ld (rasp-alloc-prog)", pid);
	cmd_expect_not_in(text, note, "with Rasp_Runtime:* (no note on the process)");
	/* Other programs traced meanwhile may have samples of their own that are assumed. */
	if (json_object_array_length(cmd_get(rep, "processes")) == 1) {
		assert_false(json_object_get_boolean(cmd_get(rep, "assumed_mean")));
		cmd_expect_not_in(text, "ASSUMED", "with Rasp_Runtime:*");
	}
	json_object_put(rep);
	free(text);
}

/* ---- 6. Exit codes ------------------------------------------------------------------------ */

static void expect_status(const char *const *args, int status, const char *message)
{
	char *out = malloc(CMD_OUT);
	int rc = cmd_rasp(out, CMD_OUT, args, NULL);

	if (rc != status)
		fail_msg("'rasp %s %s': status %d, want %d:\n%s", args[0], args[1] ? args[1] : "",
			 rc, status, out);
	if (message)
		cmd_expect_in(out, message, args[1] ? args[1] : args[0]);
	free(out);
}

static void test_usage_errors_exit_2(void **state)
{
	const char *t = cmd_golden("emit-two-procs");

	(void)state;
	{
		const char *a[] = {"report", "--colour", "x", t, NULL};
		expect_status(a, 2, "'--colour' is unknown");
	}
	{
		const char *a[] = {"report", "--format", "yaml", t, NULL};
		expect_status(a, 2, "--format 'yaml' is not accepted");
	}
	{
		const char *a[] = {"report", "--top", "x", t, NULL};
		expect_status(a, 2, "--top 'x' is not accepted");
	}
	{
		const char *a[] = {"report", "--top", "-1", t, NULL};
		expect_status(a, 2, "--top '-1' is not accepted");
	}
	{
		/* A format that writes every row refuses --top rather than ignore it. */
		const char *a[] = {"report", "--format", "csv", "--top", "2", t, NULL};
		expect_status(a, 2, "--top shows the largest rows with --format text only");
	}
	{
		const char *a[] = {"report", NULL};
		expect_status(a, 2, "no TRACE given");
	}
	{
		const char *a[] = {"report", "--format", "json", NULL};
		expect_status(a, 2, "no TRACE given");
	}
}

/* Old: the CLI refused --top 0 while the plugin accepted it (0 = every row). */
static void test_top_zero_shows_every_row(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *t = cmd_golden("emit-two-procs");
	const char *zero[] = {"report", "--top", "0", t, NULL};
	const char *two[] = {"report", "--top", "2", t, NULL};
	static const char *const types[] = {"Demo.Node ", "System.String ", "System.Int32[] ",
					    "System.Byte[] "};

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, zero, NULL), 0);
	for (size_t i = 0; i < 4; i++)
		cmd_expect_in(out, types[i], "--top 0");
	cmd_expect_not_in(out, "more row", "--top 0");
	cmd_expect_in(out, "\nTOTAL ", "--top 0");
	/* The control: --top 2 does hide rows, so the check above can fail. */
	assert_int_equal(cmd_rasp(out, CMD_OUT, two, NULL), 0);
	cmd_expect_in(out, "\u2026 2 more rows (--top 0 for all)", "--top 2");
	free(out);
}

/* rasp report with its output on a pseudo-terminal of cols x rows: what it wrote (line ends
 * as "\n") into out; its exit status. A watchdog kills it after 30 s. */
static int on_terminal(char *out, size_t cap, unsigned short cols, unsigned short rows,
		       const char *const *args)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	const char *argv[32] = {rasp_test_build_path("bin/rasp")};
	size_t n = 0, k = 1;
	int master, status;
	pid_t pid;
	time_t start = time(NULL);

	for (size_t i = 0; args[i] && k + 1 < 32; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	pid = forkpty(&master, NULL, NULL, &ws);
	assert_true(pid >= 0);
	if (pid == 0) {
		unsetenv("COLUMNS");
		unsetenv("LINES");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (;;) {
		char buf[4096];
		ssize_t r = read(master, buf, sizeof(buf));

		if (r <= 0)
			break; /* EIO once the child's side is closed */
		for (ssize_t i = 0; i < r && n + 1 < cap; i++)
			if (buf[i] != '\r')
				out[n++] = buf[i];
		if (time(NULL) - start > 30) {
			kill(pid, SIGKILL);
			fail_msg("rasp report on a terminal did not end within 30 s");
		}
	}
	out[n] = '\0';
	close(master);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The columns of the widest line of s (wcwidth's, in C.UTF-8), and its lines in *lines. */
static size_t widest_line(const char *s, size_t *lines)
{
	mbstate_t st = {0};
	size_t most = 0, w = 0;
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0), old;

	assert_non_null(utf8);
	old = uselocale(utf8);
	*lines = 0;
	for (size_t i = 0, len = strlen(s); i < len;) {
		wchar_t c;
		size_t b = mbrtowc(&c, s + i, len - i, &st);

		assert_true(b != (size_t)-1 && b != (size_t)-2 && b != 0);
		if (c == L'\n') {
			(*lines)++;
			w = 0;
		} else {
			w += wcwidth(c) < 0 ? 1 : (size_t)wcwidth(c);
			most = w > most ? w : most;
		}
		i += b;
	}
	uselocale(old);
	freelocale(utf8);
	return most;
}

/* On a terminal the report fits it: at 80x24, 120x40 and 60x14 every line within the width,
 * the header's long warning wrapped; on the small one, with four keys, names shortened in
 * the middle and the largest rows only (5 at least) with "… N more rows (--top 0 for all)";
 * on the large one all of it on the screen; --top 0 --wide gives everything back. (Lines
 * were as long as their cells, and every row was printed.) */
static void test_report_fits_the_terminal(void **state)
{
	static char out[CMD_OUT];
	const char *t = cmd_golden("emit-two-procs");
	const char *by_type[] = {"report", t, NULL};
	const char *by_four[] = {"report", "--group-by", "type,kind,process,thread", t, NULL};
	const char *all[] = {
	    "report", "--group-by", "type,kind,process,thread", "--top", "0", "--wide", t, NULL};
	static const unsigned short sizes[][2] = {{80, 24}, {120, 40}, {60, 14}};
	size_t lines;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(on_terminal(out, sizeof(out), sizes[i][0], sizes[i][1],
					     sizes[i][0] == 60 ? by_four : by_type),
				 0);
		if (widest_line(out, &lines) > sizes[i][0])
			fail_msg("a line wider than %u columns (%zu):\n%s", sizes[i][0],
				 widest_line(out, &lines), out);
		if (sizes[i][1] == 40 && lines >= 40)
			fail_msg("%zu lines on a terminal of 40:\n%s", lines, out);
		cmd_expect_in(out, "\nTOTAL ", "rasp report on a terminal");
		if (sizes[i][0] != 60)
			cmd_expect_in(out, "\nDemo.Node ", "rasp report on a terminal");
	}
	cmd_expect_in(out, "\u2026", "rasp report on 60x14");
	cmd_expect_in(out, "\u2026 3 more rows (--top 0 for all)", "rasp report on 60x14");
	/* The objects interval left out, and with it the legend of its "?" mark. */
	cmd_expect_in(out, "left out to fit the width", "rasp report on 60x14");
	cmd_expect_not_in(out, "? too few samples", "rasp report on 60x14");
	assert_int_equal(on_terminal(out, sizeof(out), 60, 14, all), 0);
	cmd_expect_not_in(out, "more row", "--top 0 --wide");
	cmd_expect_in(out, "\nDemo.Node ", "--top 0 --wide");
	if (widest_line(out, &lines) <= 60)
		fail_msg("--wide kept to the terminal's 60 columns:\n%s", out);
}

/* A TCP port on loopback that nothing accepts on: bound, not listening. */
static int refusing_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

static int accepts(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* lttng-relayd on three loopback ports of its own, under timeout(1); its live port. */
static int start_relayd(void)
{
	const char *log = cmd_work("relayd.log"), *out_dir = cmd_work("relay");
	int base = 21000 + (int)(getpid() % 9000) * 3;

	for (int attempt = 0; attempt < 8; attempt++, base += 3) {
		char ctl[64], data[64], live[64], out_opt[4200];
		const char *argv[] = {RASP_TEST_TIMEOUT,
				      "120",
				      "lttng-relayd",
				      "-C",
				      ctl,
				      "-D",
				      data,
				      "-L",
				      live,
				      "-o",
				      out_opt,
				      NULL};
		posix_spawn_file_actions_t fa;
		int status;

		snprintf(ctl, sizeof(ctl), "tcp://127.0.0.1:%d", base);
		snprintf(data, sizeof(data), "tcp://127.0.0.1:%d", base + 1);
		snprintf(live, sizeof(live), "tcp://127.0.0.1:%d", base + 2);
		snprintf(out_opt, sizeof(out_opt), "%s", out_dir);
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		assert_int_equal(
		    posix_spawn(&relayd_pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
		posix_spawn_file_actions_destroy(&fa);
		/* Ready when its live port accepts; gone at once when a port was taken. */
		for (int i = 0; i < 200; i++) {
			if (accepts(base + 2))
				return base + 2;
			if (waitpid(relayd_pid, &status, WNOHANG) == relayd_pid) {
				relayd_pid = 0;
				break;
			}
			sleep_ms(50);
		}
		stop_relayd();
	}
	fail_msg("lttng-relayd did not start (log in %s)", log);
	return -1;
}

/* A live URL naming a session that does not exist is an error, not an empty report (and
 * not a wait for a session that never comes). */
static void test_live_session_that_does_not_exist(void **state)
{
	char *out = malloc(CMD_OUT), url[512], host[256];
	int fd, port, rc;

	(void)state;
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	port = refusing_port(&fd);
	snprintf(url, sizeof(url), "net://127.0.0.1:%d/host/%s/nosession-%ld", port, host,
		 (long)getpid());
	{
		const char *a[] = {"report", url, NULL};

		rc = cmd_rasp(out, CMD_OUT, a, NULL);
	}
	close(fd);
	if (rc != 1)
		fail_msg("%s with no relay daemon: status %d, want 1:\n%s", url, rc, out);
	cmd_expect_not_in(out, "TOTAL", "no relay daemon");

	port = start_relayd();
	snprintf(url, sizeof(url), "net://127.0.0.1:%d/host/%s/nosession-%ld", port, host,
		 (long)getpid());
	{
		const char *a[] = {"report", url, NULL};

		rc = cmd_rasp(out, CMD_OUT, a, NULL);
	}
	stop_relayd();
	if (rc != 1)
		fail_msg("%s, a relay daemon without that session: status %d, want 1:\n%s", url, rc,
			 out);
	cmd_expect_in(out, "nosession", "the error names the session's URL");
	cmd_expect_not_in(out, "TOTAL", "relay daemon without the session");
	free(out);
}

/* ---- 7. Inputs without samples, directories without a trace ------------------------------- */

static void test_no_samples_is_explained(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *t = cmd_golden("emit-none");
	const char *text[] = {"report", t, NULL};
	const char *args[] = {t, NULL};
	json_object *rep, *notes;
	int found = 0;

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, text, NULL), 0);
	cmd_expect_in(out, "NOTE: no DotNETRuntime:AllocationSampled events", "emit-none");
	cmd_expect_in(out, "was the event enabled", "emit-none");
	cmd_expect_not_in(out, "TOTAL", "emit-none: a bare zero table");
	rep = cmd_report_json(out, CMD_OUT, args);
	notes = cmd_get(rep, "notes");
	for (size_t i = 0; i < json_object_array_length(notes); i++)
		found |= strcmp(json_object_get_string(
				    cmd_get(json_object_array_get_idx(notes, i), "code")),
				"no-samples") == 0;
	if (!found)
		fail_msg("no \"no-samples\" note: %s", json_object_to_json_string(rep));
	json_object_put(rep);
	free(out);
}

/* What `rasp record --no-stacks --no-malloc` leaves for a program that emits nothing (not
 * even LTTng-UST's registration, which librasp-malloc would bring): no trace at all
 * (with stacks on, the state dump of its loaded objects makes a trace with no sample: see
 * test_no_samples_is_explained). */
static void test_directory_without_trace_is_explained(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *dir = cmd_work("nothing"), *empty = cmd_work("empty-dir");
	const char *rec[] = {"record", "--no-stacks", "--no-malloc", "-o",
			     dir,      "--",	      "/bin/true",   NULL};
	const char *mk[] = {"/bin/mkdir", "-p", empty, NULL};

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, rec, NULL), 0);
	cmd_tool(mk);
	for (int i = 0; i < 2; i++) {
		const char *a[] = {"report", i ? empty : dir, NULL};
		int rc = cmd_rasp(out, CMD_OUT, a, NULL);

		if (rc != 1)
			fail_msg("%s: status %d, want 1:\n%s", a[1], rc, out);
		cmd_expect_in(out, "holds no CTF trace", a[1]);
		cmd_expect_in(out, "was anything recorded?", a[1]);
		cmd_expect_in(out, "A program that emits no event", a[1]);
		cmd_expect_not_in(out, "TOTAL", a[1]);
	}
	free(out);
}

/* A .nettrace without samples gets EventPipe's advice, not LTTng's: a rasp program's own file
 * from a session without the AllocationSampling keyword (no event at all), and a file of
 * events without samples (rasp convert of emit-none). Old: lttng enable-event and
 * DOTNET_EnableEventLog, which do nothing for an EventPipe session. */
static void test_nettrace_without_samples_gets_eventpipe_advice(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *nokw = cmd_work("nokw.nettrace"), *none = cmd_work("none.nettrace");
	const char *conv[] = {"convert", "-o", none, cmd_golden("emit-none"), NULL};
	char path[4200];

	(void)state;
	snprintf(path, sizeof(path), "DOTNET_EventPipeOutputPath=%s", nokw);
	{
		const char *run[] = {"/usr/bin/env",
				     "DOTNET_EnableEventPipe=1",
				     path,
				     "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x1:4",
				     "RASP_LTTNG=0",
				     RASP_TEST_BUILD_DIR "/bin/rasp-ep-prog",
				     "1",
				     "20",
				     NULL};

		cmd_tool(run);
	}
	assert_int_equal(cmd_rasp(out, CMD_OUT, conv, NULL), 0);
	for (int i = 0; i < 2; i++) {
		const char *a[] = {"report", i ? none : nokw, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 0);
		cmd_expect_in(out,
			      i ? "NOTE: no AllocationSampled events among the 2 events of the "
				  "EventPipe input"
				: "NOTE: the EventPipe input holds no events at all",
			      a[1]);
		cmd_expect_in(out,
			      "dotnet-trace collect --providers "
			      "Microsoft-Windows-DotNETRuntime:0x80000000000:4",
			      a[1]);
		cmd_expect_in(
		    out, "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4",
		    a[1]);
		cmd_expect_not_in(out, "lttng enable-event", a[1]);
		cmd_expect_not_in(out, "DOTNET_EnableEventLog", a[1]);
	}
	free(out);
}

/* A rasp program's EventPipe session that recorded the frees' keyword but saw no sampled
 * object freed (it exits holding all it allocated): the file declares the free events, so
 * --inuse reports every sample live. Old: the metadata came with the first free, and such a
 * file was refused as one without frees. */
static void test_nettrace_without_frees_declares_them(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *file = cmd_work("nofrees.nettrace");
	char path[4200];

	(void)state;
	snprintf(path, sizeof(path), "DOTNET_EventPipeOutputPath=%s", file);
	{
		const char *run[] = {"/usr/bin/env", "DOTNET_EnableEventPipe=1", path,
				     "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:"
				     "0x80000000000:4,Rasp-Runtime:0x3:4",
				     "RASP_LTTNG=0",
				     /* samples, no free, no heap destroyed */
				     "RASP_SAMPLING_MEAN=65536",
				     RASP_TEST_BUILD_DIR "/bin/rasp-ep-prog", "1", "100", "keep",
				     NULL};

		cmd_tool(run);
	}
	{
		const char *a[] = {"report", "--inuse", file, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 0);
		cmd_expect_not_in(out, "holds no Rasp_Runtime:SampledObjectFreed", file);
		cmd_expect_in(out, "Ep.Large", file);
	}
	free(out);
}

/* Operands that are no trace, each named for what it is. Old: a missing .nettrace file was
 * "cannot read trace directory", and a FIFO blocked rasp report forever (its check opened
 * it for reading). */
static void test_operands_named_for_what_they_are(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *nosuch = cmd_work("nosuch.nettrace"), *fifo = cmd_work("fifo"),
		   *dir = cmd_work("files"), *none = cmd_work("files/none.nettrace");
	const char *mk[] = {"/bin/mkdir", "-p", dir, NULL};
	const char *mkfifo[] = {"/usr/bin/mkfifo", fifo, NULL};
	const char *conv[] = {"convert", "-o", none, cmd_golden("emit-none"), NULL};
	char want[4400];

	(void)state;
	{
		const char *a[] = {"report", nosuch, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 1);
		snprintf(want, sizeof(want),
			 "rasp report: cannot read '%s': No such file or directory\n", nosuch);
		cmd_expect_in(out, want, "a missing .nettrace file");
		cmd_expect_not_in(out, "trace directory", "a missing .nettrace file");
	}
	cmd_tool(mkfifo);
	{
		const char *a[] = {"report", fifo, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 1);
		cmd_expect_in(out, "is neither a trace directory nor a regular file", "a FIFO");
	}
	cmd_tool(mk);
	assert_int_equal(cmd_rasp(out, CMD_OUT, conv, NULL), 0);
	{
		const char *a[] = {"report", dir, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 1);
		cmd_expect_in(out,
			      "holds no CTF trace (no metadata file) but holds EventPipe "
			      ".nettrace files: give each file as an operand",
			      "a directory of .nettrace files");
	}
	free(out);
}

/* Operands are paths anyone may name (a glob in a shared directory): a name holding ESC and
 * BEL, missing or a cut .nettrace file, reaches the terminal as \xNN in rasp's messages and
 * in babeltrace2's error causes, never as those bytes. */
static void test_operand_names_inert(void **state)
{
	char *out = malloc(CMD_OUT);
	const char *whole = cmd_work("whole.nettrace"), *cut = cmd_work("cut\x1b]0;t\x07.nettrace");
	const char *conv[] = {"convert", "-o", whole, cmd_golden("emit-none"), NULL};
	const char *trunc[] = {"/usr/bin/truncate", "-s", "60", whole, NULL};
	const char *mv[] = {"/bin/mv", whole, cut, NULL};
	const char *missing = cmd_work("gone\x1b[2J.nettrace");

	(void)state;
	assert_int_equal(cmd_rasp(out, CMD_OUT, conv, NULL), 0);
	cmd_tool(trunc);
	cmd_tool(mv);
	for (int i = 0; i < 2; i++) {
		const char *a[] = {"report", i ? missing : cut, NULL};

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 1);
		if (strpbrk(out, "\x1b\x07"))
			fail_msg("an ESC or BEL of the operand's name reached the output");
		cmd_expect_in(out, i ? "gone\\x1b[2J.nettrace" : "cut\\x1b]0;t\\x07.nettrace",
			      a[1]);
	}
	free(out);
}

/* ---- 8. -o FILE ---------------------------------------------------------------------------- */

static void expect_kept(const char *const *args, const char *file, const char *what)
{
	char *out = malloc(CMD_OUT), *kept;
	int rc = cmd_rasp(out, CMD_OUT, args, NULL);

	if (rc == 0)
		fail_msg("%s: the report succeeded:\n%s", what, out);
	kept = cmd_read_file(file);
	if (!kept || strcmp(kept, "keep me\n") != 0)
		fail_msg("%s: %s now holds '%s', not 'keep me'", what, file,
			 kept ? kept : "(nothing: removed)");
	if (cmd_dir_has_prefix(cmd_work("out"), "report.txt."))
		fail_msg("%s: a temporary file is left beside %s", what, file);
	free(kept);
	free(out);
}

/* Old: a failed report truncated FILE, or left a partial one. */
static void test_output_file_kept_on_failure(void **state)
{
	const char *dir = cmd_work("out"), *file = cmd_work("out/report.txt");
	const char *corrupt = cmd_work("corrupt"), *t = cmd_golden("emit-discarded");
	const char *mk[] = {"/bin/mkdir", "-p", dir, NULL};
	char stream[4200], *got;
	uint64_t offsets[64];
	size_t packets;
	int fd;

	(void)state;
	cmd_tool(mk);
	cmd_write_file(file, "keep me\n");
	{
		const char *a[] = {"report", "-o", file, cmd_work("no-such-dir"), NULL};
		expect_kept(a, file, "a missing input");
	}
	{
		const char *a[] = {"report", "--format", "json", "-o", file, dir, NULL};
		expect_kept(a, file, "a directory without a trace");
	}
	/* A packet header broken in the middle of the stream: the read fails part way. */
	cmd_copy(t, corrupt);
	snprintf(stream, sizeof(stream), "%s/index/ch0_0.idx", corrupt);
	packets = cmd_index_packets(stream, offsets, 64);
	assert_true(packets >= 2);
	snprintf(stream, sizeof(stream), "%s/ch0_0", corrupt);
	fd = open(stream, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "garbage!", 8, (off_t)offsets[1]), 8);
	close(fd);
	{
		const char *a[] = {"report", "-o", file, corrupt, NULL};
		expect_kept(a, file, "a corrupt trace");
	}
	{
		const char *a[] = {"report", "-o", file, t, NULL};
		char *out = malloc(CMD_OUT);

		assert_int_equal(cmd_rasp(out, CMD_OUT, a, NULL), 0);
		got = cmd_read_file(file);
		assert_non_null(got);
		cmd_expect_in(got, "\nTOTAL ", "the report written to FILE");
		cmd_expect_not_in(got, "keep me", "the report written to FILE");
		if (cmd_dir_has_prefix(dir, "report.txt."))
			fail_msg("a temporary file is left beside %s", file);
		free(got);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_huge_sampling_mean_recorded),
	    cmocka_unit_test(test_huge_assumed_mean_without_vpid),
	    cmocka_unit_test(test_confidence_out_of_range_is_usage),
	    cmocka_unit_test(test_same_trace_twice_is_refused),
	    cmocka_unit_test(test_two_traces_together),
	    cmocka_unit_test(test_incomplete_trace_is_reported),
	    cmocka_unit_test(test_assumed_mean_is_said),
	    cmocka_unit_test(test_usage_errors_exit_2),
	    cmocka_unit_test(test_top_zero_shows_every_row),
	    cmocka_unit_test(test_report_fits_the_terminal),
	    cmocka_unit_test(test_live_session_that_does_not_exist),
	    cmocka_unit_test(test_no_samples_is_explained),
	    cmocka_unit_test(test_directory_without_trace_is_explained),
	    cmocka_unit_test(test_nettrace_without_samples_gets_eventpipe_advice),
	    cmocka_unit_test(test_nettrace_without_frees_declares_them),
	    cmocka_unit_test(test_operands_named_for_what_they_are),
	    cmocka_unit_test(test_operand_names_inert),
	    cmocka_unit_test(test_output_file_kept_on_failure),
	};

	return cmocka_run_group_tests_name("cmd-report", tests, setup, teardown);
}
