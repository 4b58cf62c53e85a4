/* The rasp command end to end: `rasp record` of the demo workload through the real session
 * daemon, `rasp report` of the trace with the real babeltrace2 plugin, `rasp diff` of two
 * recordings, and every failure path with its one-line message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lttng-session.h"

extern char **environ;

#define OUT 65536

static char work[4096];

static const char *rasp(void)
{
	return rasp_test_build_path("bin/rasp");
}

static const char *in_work(const char *name)
{
	static char paths[8][4200];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", work, name);
	return p;
}

static int setup(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};

	(void)state;
	snprintf(work, sizeof(work), "%s/test-traces/cli-%ld", RASP_TEST_BUILD_DIR, (long)getpid());
	rasp_test_run(NULL, 0, rm, NULL);
	const char *mk[] = {"/bin/mkdir", "-p", work, NULL};
	return rasp_test_run(NULL, 0, mk, NULL);
}

static int teardown(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};

	(void)state;
	rasp_test_run(NULL, 0, rm, NULL);
	return 0;
}

/* Records the demo into work/<name> with a fixed sampling seed; returns rasp's status. The
 * demo's threads attach in any order, so which thread gets which seeded stream varies: the
 * tests' statistics hold for any samples, with tolerances stated where they are checked.
 * 20000 documents give the type doubled in the diff test ~180 samples (z > 4 for a 2x change). */
static int record_demo(const char *name, const char *seed, const char *truth, const char *scale,
		       char *out)
{
	const char *argv[16] = {rasp(),	  "record", "-o", in_work(name),
				"--seed", seed,	    "--", rasp_test_build_path("bin/rasp-docstore"),
				"--docs", "20000"};
	int n = 10;

	if (truth) {
		argv[n++] = "--truth";
		argv[n++] = truth;
	}
	if (scale) {
		argv[n++] = "--scale";
		argv[n++] = scale;
	}
	argv[n] = NULL;
	int rc = rasp_test_run(out, OUT, argv, NULL);

	if (rc != 0)
		fprintf(stderr, "rasp record %s failed (%d):\n%s\n", name, rc, out);
	return rc;
}

static json_object *report_json_at(const char *trace, const char *confidence)
{
	const char *argv[] = {rasp(),	      "report",	  "--format", "json",
			      "--confidence", confidence, "-o",	      in_work("report.json"),
			      trace,	      NULL};
	char out[OUT];

	if (rasp_test_run(out, sizeof(out), argv, NULL) != 0) {
		fprintf(stderr, "rasp report failed: %s\n", out);
		return NULL;
	}
	return json_object_from_file(in_work("report.json"));
}

static double get_num(json_object *o, const char *key)
{
	json_object *v;

	assert_true(json_object_object_get_ex(o, key, &v));
	return json_object_get_double(v);
}

static void test_record_then_report_the_demo(void **state)
{
	char *out = malloc(OUT);
	json_object *rep, *truth, *rows, *trows, *total, *ttotal;
	const char *truth_path = in_work("truth.json");

	(void)state;
	assert_int_equal(record_demo("demo", "11", truth_path, NULL, out), 0);
	assert_non_null(strstr(out, "rasp record: trace in "));
	assert_non_null(strstr(out, " 0 discarded"));
	assert_null(strstr(out, "warning"));

	/* The 99.9% interval (about 3.3 standard errors): sampling differs run to run. */
	rep = report_json_at(in_work("demo"), "0.999");
	truth = json_object_from_file(truth_path);
	assert_non_null(rep);
	assert_non_null(truth);
	assert_int_equal(get_num(rep, "discarded_events"), 0);
	assert_true(json_object_object_get_ex(rep, "rows", &rows));
	assert_true(json_object_object_get_ex(truth, "rows", &trows));
	/* Every type the demo allocated appears in the report. */
	for (size_t i = 0; i < json_object_array_length(trows); i++) {
		json_object *t = json_object_array_get_idx(trows, i), *name;
		const char *type;
		int found = 0;

		assert_true(json_object_object_get_ex(t, "type", &name));
		type = json_object_get_string(name);
		for (size_t k = 0; k < json_object_array_length(rows) && !found; k++) {
			json_object *r = json_object_array_get_idx(rows, k), *rn;

			found = json_object_object_get_ex(r, "type", &rn) &&
				strcmp(json_object_get_string(rn), type) == 0;
		}
		if (!found)
			fail_msg("type %s the demo allocated is missing from the report", type);
	}
	/* The total's interval holds the demo's true total. */
	assert_true(json_object_object_get_ex(rep, "total", &total));
	assert_true(json_object_object_get_ex(truth, "total", &ttotal));
	double t = get_num(ttotal, "bytes");

	if (!(get_num(total, "bytes_low") <= t && t <= get_num(total, "bytes_high")))
		fail_msg("true total %.0f outside [%.0f, %.0f]", t, get_num(total, "bytes_low"),
			 get_num(total, "bytes_high"));
	json_object_put(rep);
	json_object_put(truth);
	free(out);
}

static void test_record_short_program_and_exit_status(void **state)
{
	/* rasp-emit runs for well under 10 ms; its events must all be there. */
	const char *emit[] = {
	    rasp(), "record", "-o", in_work("short"), "--", rasp_test_build_path("bin/rasp-emit"),
	    "-n",   "5",      NULL};
	const char *fails[] = {rasp(), "record", "-o", in_work("status"), "--", "/bin/sh",
			       "-c",   "exit 3", NULL};
	char out[OUT];

	(void)state;
	assert_int_equal(rasp_test_run(out, sizeof(out), emit, NULL), 0);
	/* The 5 samples, the SamplingConfigured events and, stacks being on, the state dump
	 * of the loaded objects (their number depends on the system): none lost. */
	if (!strstr(out, " events, 0 discarded (5 AllocationSampled samples)"))
		fail_msg("want 5 samples, none discarded:\n%s", out);
	assert_int_equal(rasp_test_run(out, sizeof(out), fails, NULL), 3);
	assert_non_null(strstr(out, "exited with status 3"));
}

static void expect_failure(const char *const *argv, const char *const *env, int status,
			   const char *message)
{
	char out[OUT];
	int rc = rasp_test_run(out, sizeof(out), argv, env);

	if (rc != status || !strstr(out, message))
		fail_msg("'%s %s' gave status %d (want %d) and:\n%s\n(want: %s)", argv[1],
			 argv[2] ? argv[2] : "", rc, status, out, message);
}

static void test_failure_messages(void **state)
{
	(void)state;
	{
		const char *a[] = {rasp(), "record", "--", "no-such-program-here", NULL};
		expect_failure(a, NULL, 127,
			       "rasp record: PROGRAM 'no-such-program-here' not found");
	}
	{
		const char *a[] = {rasp(), "report", in_work("missing-dir"), NULL};
		expect_failure(a, NULL, 1, "missing-dir': No such file or directory");
	}
	{
		const char *a[] = {rasp(), "report", RASP_TEST_SOURCE_DIR "/docs", NULL};
		expect_failure(a, NULL, 1, "holds no CTF trace (no metadata file)");
	}
	{
		const char *a[] = {rasp(), "report", "--colour", "x", NULL};
		expect_failure(a, NULL, 2, "rasp report: option '--colour' is unknown");
	}
	{
		const char *a[] = {rasp(), "record", "--bogus", "--", "true", NULL};
		expect_failure(a, NULL, 2, "rasp record: option '--bogus' is unknown");
	}
	{
		const char *a[] = {rasp(), "frobnicate", NULL};
		expect_failure(a, NULL, 2, "rasp: unknown command 'frobnicate'");
	}
	{
		/* No plugin lookup: the command carries its own sink, so a broken plugin path
		 * (or no installed plugin at all) changes nothing. */
		const char *a[] = {rasp(), "report", in_work("demo"), NULL};
		const char *env[] = {"BABELTRACE_PLUGIN_PATH=/nonexistent-plugin-dir", NULL};
		expect_failure(a, env, 0, "TOTAL ");
	}
	{
		const char *a[] = {rasp(), "report", "--format", "xml", in_work("demo"), NULL};
		expect_failure(a, NULL, 2, "--format 'xml' is not accepted: text|csv|json");
	}
	{
		const char *a[] = {rasp(), "record", "--mean", "0", "--", "true", NULL};
		expect_failure(a, NULL, 2, "--mean '0' is not an integer in [1, ");
	}
	{
		const char *a[] = {rasp(), "diff", in_work("demo"), NULL};
		expect_failure(a, NULL, 2, "needs exactly two inputs");
	}
}

/* Copies `from` to dir/name with `mode`; 0 on success. */
static int copy_file(const char *from, const char *dir, const char *name, mode_t mode)
{
	char to[4200];
	const char *cp[] = {"/bin/cp", from, to, NULL};

	snprintf(to, sizeof(to), "%s/%s", dir, name);
	return rasp_test_run(NULL, 0, cp, NULL) == 0 ? chmod(to, mode) : -1;
}

static void test_no_session_daemon_and_none_can_start(void **state)
{
	/* As an unprivileged user the root daemon is out of reach (not in the tracing group),
	 * and the daemon rasp would start does not exist. The checkout may sit in a directory
	 * only root can read (CI clones into mktemp -d): the user gets its own copies of the
	 * command and of the sanitizer's suppressions, in a directory it can read. */
	char home[4200], dir[] = "/tmp/rasp-nodaemon-XXXXXX", prog[4200], tsan[4300], lsan[4300];
	const char *a[] = {"/usr/bin/setpriv",
			   "--reuid=65534",
			   "--regid=65534",
			   "--clear-groups",
			   prog,
			   "record",
			   "-o",
			   "/tmp/rasp-test-nodaemon",
			   "--",
			   "/bin/true",
			   NULL};
	const char *rm[] = {"/bin/rm", "-rf", dir, NULL};

	(void)state;
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
		printf("skipped: needs root and setpriv to run as nobody\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(copy_file(rasp(), dir, "rasp", 0755), 0);
	assert_int_equal(copy_file(RASP_TEST_SOURCE_DIR "/tests/tsan.supp", dir, "tsan.supp", 0644),
			 0);
	assert_int_equal(copy_file(RASP_TEST_SOURCE_DIR "/tests/lsan.supp", dir, "lsan.supp", 0644),
			 0);
	snprintf(prog, sizeof(prog), "%s/rasp", dir);
	snprintf(home, sizeof(home), "LTTNG_HOME=/nonexistent-rasp-home-%ld", (long)getpid());
	snprintf(tsan, sizeof(tsan),
		 "TSAN_OPTIONS=halt_on_error=1:exitcode=66:suppressions=%s/tsan.supp", dir);
	snprintf(lsan, sizeof(lsan), "LSAN_OPTIONS=suppressions=%s/lsan.supp:print_suppressions=0",
		 dir);
	const char *env[] = {home, "RASP_LTTNG_SESSIOND=/nonexistent/lttng-sessiond", tsan, lsan,
			     NULL};
	expect_failure(a, env, 2,
		       "no LTTng session daemon is running and '/nonexistent/lttng-sessiond' "
		       "cannot start");
	rasp_test_run(NULL, 0, rm, NULL);
}

static void test_help_on_every_command(void **state)
{
	static const char *const cmds[] = {"record", "report", "diff"};
	char out[OUT];

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		const char *a[] = {rasp(), cmds[i], "--help", NULL};

		assert_int_equal(rasp_test_run(out, sizeof(out), a, NULL), 0);
		assert_non_null(strstr(out, "usage: rasp "));
	}
	const char *a[] = {rasp(), "--help", NULL};
	assert_int_equal(rasp_test_run(out, sizeof(out), a, NULL), 0);
}

static json_object *diff_json(const char *base, const char *new_)
{
	const char *argv[] = {rasp(), "diff", "--format", "json", base, new_, NULL};
	char *out = malloc(OUT);
	json_object *j;

	assert_int_equal(rasp_test_run(out, OUT, argv, NULL), 0);
	/* Only stdout is JSON; rasp_test_run merges stderr, which diff leaves empty. */
	j = json_tokener_parse(out);
	if (!j)
		fail_msg("diff output is not JSON:\n%s", out);
	free(out);
	return j;
}

static int flagged(json_object *diff, const char *type, size_t *n_types, size_t *n_flagged)
{
	json_object *rows;
	int result = -1;

	assert_true(json_object_object_get_ex(diff, "rows", &rows));
	*n_types = json_object_array_length(rows);
	*n_flagged = 0;
	for (size_t i = 0; i < *n_types; i++) {
		json_object *r = json_object_array_get_idx(rows, i), *t, *sig;

		assert_true(json_object_object_get_ex(r, "type", &t));
		assert_true(json_object_object_get_ex(r, "significant", &sig));
		*n_flagged += json_object_get_boolean(sig);
		if (type && strcmp(json_object_get_string(t), type) == 0)
			result = json_object_get_boolean(sig);
	}
	return result;
}

static void test_diff_same_program_and_doubled_type(void **state)
{
	char *out = malloc(OUT);
	size_t n, f;
	json_object *same, *doubled;

	(void)state;
	assert_int_equal(record_demo("same", "12", NULL, NULL, out), 0);
	assert_int_equal(record_demo("doubled", "13", NULL, "Index.Posting=2", out), 0);
	/* demo (seed 11) against same (seed 12): only the sampling differs. */
	same = diff_json(in_work("demo"), in_work("same"));
	flagged(same, NULL, &n, &f);
	assert_true(n >= 10);
	if (f * 10 > n)
		fail_msg("%zu of %zu types flagged between two recordings of one program", f, n);
	doubled = diff_json(in_work("demo"), in_work("doubled"));
	assert_int_equal(flagged(doubled, "Index.Posting", &n, &f), 1);
	json_object_put(same);
	json_object_put(doubled);
	free(out);
}

/* The sampling mean changes while the program runs: the trace must say so, and each type be
 * unbiased with the mean it was sampled at. One mean for both would be 16x off for one type;
 * the 99.9% interval (about 3.3 standard errors) keeps a chance failure rare. */
static void record_means_and_check(const char *dir, const char *mode)
{
	const char *argv[] = {
	    rasp(),   "record", "-o", in_work(dir),
	    "--seed", "5",	"--", rasp_test_build_path("bin/rasp-test-mean-switch"),
	    mode,     NULL};
	char *out = malloc(OUT);
	json_object *rep, *rows, *truth;
	const char *brace;

	assert_int_equal(rasp_test_run(out, OUT, argv, NULL), 0);
	brace = strchr(out, '{');
	assert_non_null(brace);
	truth = json_tokener_parse(brace);
	assert_non_null(truth);
	rep = report_json_at(in_work(dir), "0.999");
	assert_non_null(rep);
	assert_true(json_object_object_get_ex(rep, "rows", &rows));
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *t, *tv;
		double want;

		assert_true(json_object_object_get_ex(r, "type", &t));
		assert_true(json_object_object_get_ex(truth, json_object_get_string(t), &tv));
		want = json_object_get_double(tv);
		if (!(get_num(r, "bytes_low") <= want && want <= get_num(r, "bytes_high")))
			fail_msg("%s: true %.0f outside [%.0f, %.0f] (estimate %.0f)",
				 json_object_get_string(t), want, get_num(r, "bytes_low"),
				 get_num(r, "bytes_high"), get_num(r, "bytes"));
	}
	assert_int_equal(json_object_array_length(rows), 2);
	json_object_put(rep);
	json_object_put(truth);
	free(out);
}

static void test_mean_change_while_recording(void **state)
{
	(void)state;
	record_means_and_check("switch", NULL);
}

/* One thread allocating from two heaps at two means: each heap's events carry its own
 * ClrInstanceID and the report weighs each heap's samples with its own mean (the thread's last
 * announced mean would weigh both, 256x off at 4096 against 2^20). */
static void test_two_heaps_at_two_means(void **state)
{
	(void)state;
	record_means_and_check("heaps", "heaps");
}

/* A signal sent to `rasp record` reaches the program, and rasp still stops and destroys its
 * session before exiting with 128 + the signal. */
static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static void record_then_signal(int sig)
{
	char name[32], session[64], list[16384];
	const char *argv[] = {rasp(), "record", "-o", NULL, "--", "/bin/sleep", "30", NULL};
	const char *ls[] = {"list", NULL};
	int status, rc;
	pid_t pid;

	snprintf(name, sizeof(name), "signal-%d", sig);
	argv[3] = in_work(name);
	assert_int_equal(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
	snprintf(session, sizeof(session), "rasp-record-%ld", (long)pid);
	/* Wait until the session exists (the program is running under it). */
	for (int i = 0; i < 100; i++) {
		rasp_test_lttng(list, sizeof(list), ls);
		if (strstr(list, session))
			break;
		sleep_ms(50);
	}
	assert_non_null(strstr(list, session));
	sleep_ms(200);
	assert_int_equal(kill(pid, sig), 0);
	while ((rc = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	assert_int_equal(rc, pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + sig);
	rasp_test_lttng(list, sizeof(list), ls);
	if (strstr(list, session))
		fail_msg("session %s still exists after rasp record ended:\n%s", session, list);
}

static void test_record_passes_signals_on(void **state)
{
	(void)state;
	record_then_signal(SIGINT);
	record_then_signal(SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_then_report_the_demo),
	    cmocka_unit_test(test_record_short_program_and_exit_status),
	    cmocka_unit_test(test_failure_messages),
	    cmocka_unit_test(test_no_session_daemon_and_none_can_start),
	    cmocka_unit_test(test_help_on_every_command),
	    cmocka_unit_test(test_diff_same_program_and_doubled_type),
	    cmocka_unit_test(test_mean_change_while_recording),
	    cmocka_unit_test(test_two_heaps_at_two_means),
	    cmocka_unit_test(test_record_passes_signals_on),
	};

	return cmocka_run_group_tests_name("rasp-cli", tests, setup, teardown);
}
