/* sink.rasp.report on a live session: lttng-relayd on loopback ports of its own, a session
 * created with --live, babeltrace2 -i lttng-live attached before rasp-emit runs; the sink
 * must pass AGAIN through until the session is destroyed, then report every event. With
 * stacks, the state dump, dlopen events and ClrStackWalk events flow live too: rasp report
 * --by site on the live session names the sites of stack-prog, the one in a dlopened library
 * included. Every child runs under a timeout and is killed by pid on the way out, so the test
 * cannot hang. */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lttng-session.h"
#include "plugin-cli.h"

extern char **environ;

static pid_t relayd_pid, reader_pid;
static char session[96];

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Starts argv in the background with stdout+stderr to `log`. */
static pid_t spawn_bg(const char *const *argv, const char *log)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc ? -1 : pid;
}

/* Waits up to ms for pid; its exit status, or -1 if it is still running. */
static int wait_ms(pid_t pid, long ms)
{
	int status;

	for (long t = 0; t <= ms; t += 50) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		sleep_ms(50);
	}
	return -1;
}

static void stop_child(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGTERM);
		if (wait_ms(*pid, 3000) < 0) {
			kill(*pid, SIGKILL);
			waitpid(*pid, NULL, 0);
		}
	}
	*pid = 0;
}

static int teardown(void **state)
{
	const char *destroy[] = {"destroy", session, NULL};

	(void)state;
	if (session[0])
		rasp_test_lttng(NULL, 0, destroy);
	stop_child(&reader_pid);
	stop_child(&relayd_pid);
	return 0;
}

static int lttng(const char *const *args)
{
	char out[4096];
	int rc = rasp_test_lttng(out, sizeof(out), args);

	if (rc)
		fprintf(stderr, "lttng %s failed (%d): %s\n", args[0], rc, out);
	return rc;
}

/* The live reader: the babeltrace2 CLI with the plugin, or the rasp command (which builds
 * the same graph in process from a net:// URL). */
enum reader_kind { READER_BABELTRACE2, READER_RASP };

/* babeltrace2 2.0.4's lttng-live iterator, under ASan, once in many runs releases an object
 * twice when the session ends: a free of a pointer glib never handed out, from
 * g_ptr_array_free in libbabeltrace2, under the sink's bt_message_put_ref of a message it
 * owns. Upstream (no rasp frame between the free and babeltrace2): said, and the run retried
 * once in a new session. */
static bool upstream_bad_free(const char *log)
{
	const char *e = strstr(log, "attempting free on address which was not malloc()-ed");
	const char *f1 = e ? strstr(e, "#1 ") : NULL, *f2 = f1 ? strstr(f1, "#2 ") : NULL;
	const char *f3 = f2 ? strstr(f2, "#3 ") : NULL;

	if (!f1 || !f2 || !f3)
		return false;
	return memmem(f1, (size_t)(f2 - f1), "libglib-2.0.so", 14) &&
	       memmem(f2, (size_t)(f3 - f2), "libbabeltrace2.so", 17);
}

/* One live run; false when the reader died of the upstream crash above (the caller retries). */
static bool run_live_once(enum reader_kind kind, bool stacks, int attempt)
{
	static char out[65536];
	char dir[PATH_MAX - 64], log[PATH_MAX], relay_log[PATH_MAX], report[PATH_MAX];
	char ctl[64], data[64], live[64], url[64], live_url[512], host[128], params[PATH_MAX + 64];
	char timeout_s[] = "120";
	/* Three ports per attempt, from 20000; the last run (rasp, stacks) adds 1800, a retry
	 * 30 and five attempts 15: at most 20000 + 13999 * 3 + 1845 = 63842, under 65536. */
	int base = 20000 + (int)(getpid() % 14000) * 3, rc;
	FILE *f;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/live-%ld-%d%s-%d", RASP_TEST_OUT, (long)getpid(), (int)kind,
		 stacks ? "-stacks" : "", attempt);
	assert_int_equal(plugin_mkdirs(dir), 0);
	snprintf(log, sizeof(log), "%s/reader.log", dir);
	snprintf(relay_log, sizeof(relay_log), "%s/relayd.log", dir);
	snprintf(report, sizeof(report), "%s/report.json", dir);
	snprintf(session, sizeof(session), "rasp-live-%ld-%d%s-%d", (long)getpid(), (int)kind,
		 stacks ? "-stacks" : "", attempt);
	/* an earlier run's relay daemon may still hold its ports (a retry: 30 ports on) */
	base += 600 * (int)kind + 1200 * stacks + 30 * attempt;
	assert_int_equal(gethostname(host, sizeof(host)), 0);

	/* A port already taken makes the relay daemon exit at once: move on to the next
	 * three ports, a few times. */
	for (int attempt = 0; attempt < 5; attempt++, base += 3) {
		char out_opt[PATH_MAX + 8];
		const char *relayd[] = {RASP_TEST_TIMEOUT,
					"240",
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

		snprintf(ctl, sizeof(ctl), "tcp://127.0.0.1:%d", base);
		snprintf(data, sizeof(data), "tcp://127.0.0.1:%d", base + 1);
		snprintf(live, sizeof(live), "tcp://127.0.0.1:%d", base + 2);
		snprintf(out_opt, sizeof(out_opt), "%s/relay", dir);
		/* timeout runs lttng-relayd through PATH, like the lttng client. */
		relayd_pid = spawn_bg(relayd, relay_log);
		assert_true(relayd_pid > 0);
		if (wait_ms(relayd_pid, 500) < 0)
			break;
		relayd_pid = 0;
	}
	assert_true(relayd_pid > 0);
	snprintf(url, sizeof(url), "--set-url=net://127.0.0.1:%d:%d", base, base + 1);
	snprintf(live_url, sizeof(live_url), "net://127.0.0.1:%d/host/%s/%s", base + 2, host,
		 session);
	{
		const char *create[] = {"create", session, "--live=100000", url, NULL};
		const char *channel[] = {"enable-channel", "-u",  "-s", session, "--subbuf-size=1M",
					 "--num-subbuf=4", "ch0", NULL};
		/* Only the test's program: other programs of this user may fire the same events
		 * now. With stacks, also the objects programs load (state dump, dlopen), as rasp
		 * record enables them, unfiltered: LTTng-UST emits the state dump from its own
		 * thread, whose procname is not the program's (other programs' objects are kept
		 * apart by vpid). */
		const char *enable[] = {"enable-event",
					"-u",
					"-s",
					session,
					"-c",
					"ch0",
					"DotNETRuntime:*,Rasp_Runtime:*",
					"--filter",
					stacks ? "$ctx.procname == \"rasp-stack-prog\""
					       : "$ctx.procname == \"rasp-emit\"",
					NULL};
		const char *enable_objects[] = {"enable-event",
						"-u",
						"-s",
						session,
						"-c",
						"ch0",
						"lttng_ust_statedump:*,lttng_ust_dl:*",
						NULL};
		const char *context[] = {"add-context", "-u",	"-s", session, "-c", "ch0",
					 "-t",		"vpid", "-t", "vtid",  NULL};
		const char *start[] = {"start", session, NULL};

		/* The relay daemon may need a moment to listen: retry create briefly. */
		for (int i = 0; i < 20 && (rc = rasp_test_lttng(out, sizeof(out), create)); i++)
			sleep_ms(250);
		if (rc)
			fprintf(stderr, "lttng create failed: %s\n", out);
		assert_int_equal(rc, 0);
		assert_int_equal(lttng(channel), 0);
		assert_int_equal(lttng(enable), 0);
		if (stacks)
			assert_int_equal(lttng(enable_objects), 0);
		assert_int_equal(lttng(context), 0);
		assert_int_equal(lttng(start), 0);
	}
	{
		char plugin_path[PATH_MAX + 16];
		const char *reader[] = {RASP_TEST_TIMEOUT,
					"-k",
					"5",
					timeout_s,
					RASP_TEST_BABELTRACE2,
					"--omit-home-plugin-path",
					plugin_path,
					"-i",
					"lttng-live",
					live_url,
					"-c",
					"sink.rasp.report",
					"-p",
					params,
					NULL};

		const char *rasp_reader[] = {RASP_TEST_TIMEOUT,
					     "-k",
					     "5",
					     timeout_s,
					     rasp_test_build_path("bin/rasp"),
					     "report",
					     "--format",
					     "json",
					     "--by",
					     stacks ? "site" : "type",
					     "-o",
					     report,
					     live_url,
					     NULL};

		snprintf(plugin_path, sizeof(plugin_path), "--plugin-path=%s",
			 RASP_TEST_PLUGIN_DIR);
		snprintf(params, sizeof(params), "format=\"json\",output=\"%s\"", report);
		if (kind == READER_RASP) {
			/* The rasp command is built like the tests: no preload needed. */
			reader_pid = spawn_bg(rasp_reader, log);
			assert_true(reader_pid > 0);
			goto attached;
		}
#ifdef RASP_TEST_BT2_PRELOAD
		setenv("LD_PRELOAD", RASP_TEST_BT2_PRELOAD, 1);
		{
			char opt[] = RASP_TEST_BT2_SANITIZER_OPTIONS; /* NAME=VALUE */
			char *eq = strchr(opt, '=');

			*eq = '\0';
			setenv(opt, eq + 1, 1);
		}
#endif
		reader_pid = spawn_bg(reader, log);
#ifdef RASP_TEST_BT2_PRELOAD
		unsetenv("LD_PRELOAD");
#endif
		assert_true(reader_pid > 0);
	}
attached:
	/* Let the reader attach and receive the metadata before anything can end the session
	 * (babeltrace2 2.0.4 races on a session closed before its first metadata). */
	sleep_ms(1500);
	if (!stacks) {
		const char *emit[] = {rasp_test_build_path("bin/rasp-emit"), "-n", "50", NULL};
		const char *env[] = {"LTTNG_UST_REGISTER_TIMEOUT=-1", NULL};
		char prog[PATH_MAX];

		snprintf(prog, sizeof(prog), "%s", emit[0]);
		emit[0] = prog;
		rc = rasp_test_run(out, sizeof(out), emit, env);
		if (rc)
			fprintf(stderr, "rasp-emit: %s\n", out);
		assert_int_equal(rc, 0);
	} else {
		/* stack-prog as rasp record runs it: the dlopen wrapper preloaded, stacks on (the
		 * runtime's default). */
		char prog[PATH_MAX], plugin[PATH_MAX], asan[4096];
		const char *run[] = {prog, plugin, "300", NULL};
		/* As rasp record, let a sanitized build start with the wrapper preloaded first. */
		const char *env[] = {"LTTNG_UST_REGISTER_TIMEOUT=-1",
				     "LD_PRELOAD=liblttng-ust-dl.so.1",
				     "RASP_SAMPLING_MEAN=4096",
				     "RASP_SEED=1",
				     asan,
				     NULL};
		const char *asan_now = getenv("ASAN_OPTIONS");

		snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
			 asan_now ? asan_now : "", asan_now && *asan_now ? ":" : "");

		snprintf(prog, sizeof(prog), "%s", rasp_test_build_path("bin/rasp-stack-prog"));
		snprintf(plugin, sizeof(plugin), "%s",
			 rasp_test_build_path("lib/librasp-stack-plugin.so"));
		rc = rasp_test_run(out, sizeof(out), run, env);
		if (rc)
			fprintf(stderr, "rasp-stack-prog: %s\n", out);
		assert_int_equal(rc, 0);
	}
	/* The reader keeps running (AGAIN) while the session lives: it must not have ended. */
	sleep_ms(1000);
	assert_int_equal(wait_ms(reader_pid, 0), -1);
	{
		const char *stop[] = {"stop", session, NULL};
		const char *destroy[] = {"destroy", session, NULL};

		assert_int_equal(lttng(stop), 0);
		assert_int_equal(lttng(destroy), 0);
		session[0] = '\0';
	}
	/* A hang guard, generous: on a loaded machine the reader has taken over 30 s to see the
	 * session's end. (Its own timeout(1) ends it at 120 s.) */
	rc = wait_ms(reader_pid, 110000);
	reader_pid = 0;
	if (rc != 0) {
		f = fopen(log, "r");
		n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		out[n] = '\0';
		if (f)
			fclose(f);
		fprintf(stderr, "live reader exited %d:\n%s\n", rc, out);
		if (attempt == 0 && upstream_bad_free(out)) {
			printf("# babeltrace2's lttng-live freed a pointer it never allocated "
			       "(upstream, above): retrying once in a new session\n");
			return false;
		}
	}
	assert_int_equal(rc, 0);
	f = fopen(report, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	if (!strstr(out, "\"discarded_events\": 0,"))
		fail_msg("events were lost: %s", out);
	if (!stacks) {
		/* Exactly rasp-emit's 50: another process of that name recording at the same
		 * time (the suite run twice at once) would add its own. */
		if (!strstr(out, "\"total\": {\"samples\": 50,"))
			fail_msg("not rasp-emit's 50 samples: %s", out);
		return true;
	}
	/* Every site of stack-prog named from the live trace's state dump and dlopen events:
	 * the recursion's bottom, the two sites of one type, the dlopened library's. */
	{
		static const char *const sites[] = {"\"site\": \"descend (", "\"site\": \"site_a (",
						    "\"site\": \"site_b (",
						    "\"site\": \"plugin_alloc ("};

		for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
			if (!strstr(out, sites[i]))
				fail_msg("no site %s in the live report: %s", sites[i], out);
		if (strstr(out, "[no object]") || strstr(out, "unplaced-frames"))
			fail_msg("a site in no recorded object: %s", out);
	}
	return true;
}

static void run_live(enum reader_kind kind, bool stacks)
{
	if (!run_live_once(kind, stacks, 0)) {
		teardown(NULL);
		run_live_once(kind, stacks, 1);
	}
}

static void test_plugin_live(void **state)
{
	(void)state;
	run_live(READER_BABELTRACE2, false);
}

/* `rasp report net://...`: the same live session through the rasp command. */
static void test_rasp_report_live(void **state)
{
	(void)state;
	run_live(READER_RASP, false);
}

/* Stacks over lttng-live: rasp report --by site on the live session. */
static void test_rasp_report_live_stacks(void **state)
{
	(void)state;
	run_live(READER_RASP, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_plugin_live, teardown),
	    cmocka_unit_test_teardown(test_rasp_report_live, teardown),
	    cmocka_unit_test_teardown(test_rasp_report_live_stacks, teardown),
	};

	return cmocka_run_group_tests_name("plugin-live", tests, NULL, NULL);
}
