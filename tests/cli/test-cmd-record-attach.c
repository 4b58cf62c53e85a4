/* rasp record -p and rasp report --live -p (cli/attach.c, cli/diag-client.c) against a real
 * rasp program's diagnostic server and against hostile ones (fake-diag-server.c): a socket
 * is used only when it is the target's (its key, its owner, its server); a server that never
 * accepts the stop, never answers it or floods cannot hold rasp past a second signal nor
 * fill the disk after the first; --live's temporary file is 0600 and removed. Each rasp runs
 * under a watchdog: a hang fails the check that waited, and the process is killed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lttng-session.h"

extern char **environ;

/* What rasp may write after StopTracing (attach.c's TAIL_LIMIT), and one read more. */
#define TAIL_LIMIT ((64L << 20) + 65536)
/* The watchdog of one wait: far above what any check needs (the bound the tests state is
 * 5 s after a second signal). */
#define WATCHDOG_S 20

static char work[4096];
static pid_t helpers[8];
static int nhelpers;

static const char *in_work(const char *name)
{
	static char paths[8][4200];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", work, name);
	return p;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* argv[0] with stdout and stderr into file; its environment is this process's. */
static pid_t spawn_to(const char *const *argv, const char *file)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0)
		fail_msg("cannot run %s", argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

static char *slurp(const char *file)
{
	static char buf[65536];
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

static void wait_text(const char *file, const char *text)
{
	for (int i = 0; i < WATCHDOG_S * 20; i++) {
		if (strstr(slurp(file), text))
			return;
		sleep_ms(50);
	}
	fail_msg("no '%s' in %s after %d s:\n%s", text, file, WATCHDOG_S, slurp(file));
}

/* Waits for pid: its exit status, or the test fails (pid killed) after the watchdog. */
static int wait_exit(pid_t pid, const char *out)
{
	int status;

	for (int i = 0; i < WATCHDOG_S * 100; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fail_msg("rasp still ran %d s later (killed); it said:\n%s", WATCHDOG_S, slurp(out));
	return -1;
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Until process pid's socket is in work. */
static void wait_socket(pid_t pid)
{
	char name[64];

	snprintf(name, sizeof(name), "dotnet-diagnostic-%ld-", (long)pid);
	for (int i = 0; i < WATCHDOG_S * 20; i++) {
		DIR *d = opendir(work);
		struct dirent *e;
		int found = 0;

		while (d && (e = readdir(d)))
			found |= strncmp(e->d_name, name, strlen(name)) == 0;
		if (d)
			closedir(d);
		if (found)
			return;
		sleep_ms(50);
	}
	fail_msg("no %s* in %s after %d s", name, work, WATCHDOG_S);
}

/* Runs a helper (killed at teardown) with its output in work/<log>. */
static pid_t helper(const char *const *argv, const char *log)
{
	pid_t pid = spawn_to(argv, in_work(log));

	if (nhelpers < 8)
		helpers[nhelpers++] = pid;
	return pid;
}

/* The fake server in mode (for process for_pid, or itself when 0); its pid, once ready. */
static pid_t fake_server(const char *mode, pid_t for_pid, char *socket, size_t cap)
{
	char arg[32], log[64];
	const char *argv[] = {rasp_test_build_path("bin/rasp-test-fake-diag"), mode,
			      for_pid ? arg : NULL, NULL};
	pid_t pid;
	char *ready;

	snprintf(arg, sizeof(arg), "%ld", (long)for_pid);
	snprintf(log, sizeof(log), "fake-%s-%d.out", mode, nhelpers);
	pid = helper(argv, log);
	wait_text(in_work(log), "ready ");
	ready = strstr(slurp(in_work(log)), "ready ");
	if (socket)
		snprintf(socket, cap, "%.*s", (int)strcspn(ready + 6, "\n"), ready + 6);
	return pid;
}

static int setup(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", NULL, NULL};
	const char *mk[] = {"/bin/mkdir", "-p", NULL, NULL};

	(void)state;
	snprintf(work, sizeof(work), "%s/test-traces/cmd-record-attach-%ld", RASP_TEST_BUILD_DIR,
		 (long)getpid());
	rm[2] = mk[2] = work;
	rasp_test_run(NULL, 0, rm, NULL);
	if (rasp_test_run(NULL, 0, mk, NULL) != 0)
		return -1;
	/* The servers' sockets, and rasp's temporary files, go here: the test's own. */
	setenv("TMPDIR", work, 1);
	/* Their environment is read through /proc: a rasp program's server turned on. */
	setenv("RASP_DIAGNOSTICS", "1", 1);
	return 0;
}

static int teardown(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};

	(void)state;
	rasp_test_run(NULL, 0, rm, NULL);
	return 0;
}

static int each_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < nhelpers; i++) {
		kill(helpers[i], SIGKILL);
		waitpid(helpers[i], NULL, 0);
	}
	nhelpers = 0;
	unsetenv("FAKE_KEY_OFFSET");
	return 0;
}

static pid_t record(pid_t target, const char *output, const char *log)
{
	char pid[32];
	const char *argv[] = {
	    rasp_test_build_path("bin/rasp"), "record", "-p", pid, "-o", output, NULL};

	snprintf(pid, sizeof(pid), "%ld", (long)target);
	return spawn_to(argv, log);
}

/* A real rasp program's socket passes every check: recorded, reported, exit 0. */
static void test_a_rasp_program_is_recorded(void **state)
{
	const char *prog[] = {rasp_test_build_path("bin/rasp-diag-prog"), "1", "60", NULL};
	const char *log = in_work("real.out");
	char pid[32];
	const char *argv[] = {
	    rasp_test_build_path("bin/rasp"), "record", "-p", pid, "--duration", "1", "-o",
	    in_work("real.nettrace"),	      NULL};
	pid_t target = helper(prog, "prog.out"), r;

	(void)state;
	snprintf(pid, sizeof(pid), "%ld", (long)target);
	wait_socket(target);
	r = spawn_to(argv, log);
	if (wait_exit(r, log) != 0)
		fail_msg("rasp record -p failed:\n%s", slurp(log));
	assert_non_null(strstr(slurp(log), "Diag.Large"));
}

/* A socket whose key is not the target's start time (an earlier process's, or planted) is
 * refused with the reason, and nothing is created. */
static void test_a_wrong_key_is_refused(void **state)
{
	const char *log = in_work("key.out");
	pid_t server, r;

	(void)state;
	setenv("FAKE_KEY_OFFSET", "1", 1);
	server = fake_server("silent", 0, NULL, 0);
	r = record(server, in_work("key.nettrace"), log);
	assert_int_equal(wait_exit(r, log), 1);
	if (!strstr(slurp(log), "is not the process's start time"))
		fail_msg("no refusal for the key:\n%s", slurp(log));
	assert_int_equal(file_size(in_work("key.nettrace")), -1);
}

/* A socket file of another user (root's target, a file chowned to nobody) is refused. */
static void test_another_users_socket_is_refused(void **state)
{
	char socket[4200];
	const char *log = in_work("owner.out");
	pid_t server, r;

	(void)state;
	if (geteuid() != 0) {
		printf("skipped: only root can give a socket file to another user\n");
		skip();
	}
	server = fake_server("silent", 0, socket, sizeof(socket));
	assert_int_equal(chown(socket, 65534, 65534), 0);
	r = record(server, in_work("owner.nettrace"), log);
	assert_int_equal(wait_exit(r, log), 1);
	if (!strstr(slurp(log), "belongs to uid 65534"))
		fail_msg("no refusal for the owner:\n%s", slurp(log));
	assert_int_equal(file_size(in_work("owner.nettrace")), -1);
}

/* A socket named for the target, with its key and user, but served by another process (a
 * file replaced after the checks looks the same): its server's credentials refuse it. */
static void test_a_socket_served_by_another_process_is_refused(void **state)
{
	const char *sleeper[] = {"/bin/sleep", "60", NULL};
	const char *log = in_work("peer.out");
	pid_t target = helper(sleeper, "sleep.out"), server, r;
	char expect[128];

	(void)state;
	server = fake_server("silent", target, NULL, 0);
	r = record(target, in_work("peer.nettrace"), log);
	assert_int_equal(wait_exit(r, log), 1);
	snprintf(expect, sizeof(expect), "its server is process %ld, not process %ld", (long)server,
		 (long)target);
	if (!strstr(slurp(log), expect))
		fail_msg("no '%s' in:\n%s", expect, slurp(log));
	assert_int_equal(file_size(in_work("peer.nettrace")), -1);
}

/* The first signal sends StopTracing; the server never ends the stream (it never accepts
 * the stop, or never answers it): rasp waits, and the second signal ends it within 5 s,
 * status 1, the output unchanged since the first. */
static void stop_never_served(const char *mode, int sig)
{
	char name[64], logname[64];
	const char *out, *log;
	pid_t server, r;
	long size;
	double t;
	int status;

	snprintf(name, sizeof(name), "%s-%d.nettrace", mode, sig);
	snprintf(logname, sizeof(logname), "%s-%d.out", mode, sig);
	out = in_work(name);
	log = in_work(logname);
	server = fake_server(mode, 0, NULL, 0);
	r = record(server, out, log);
	wait_text(log, "recording process");
	assert_int_equal(kill(r, sig), 0);
	wait_text(log, "stopping the session");
	size = file_size(out);
	sleep_ms(500);
	assert_int_equal(waitpid(r, &status, WNOHANG), 0); /* still waiting for the end */
	t = now_s();
	assert_int_equal(kill(r, sig), 0);
	assert_int_equal(wait_exit(r, log), 1);
	t = now_s() - t;
	if (t > 5)
		fail_msg("rasp took %.1f s after the second signal:\n%s", t, slurp(log));
	assert_int_equal(file_size(out), size);
	if (!strstr(slurp(log), "not waiting for the end of the stream"))
		fail_msg("no word of the abandoned stream:\n%s", slurp(log));
}

static void test_a_stop_never_accepted_ends_at_the_second_signal(void **state)
{
	(void)state;
	stop_never_served("noaccept", SIGINT);
	stop_never_served("noaccept", SIGTERM);
}

static void test_a_stop_never_answered_ends_at_the_second_signal(void **state)
{
	(void)state;
	stop_never_served("silent", SIGINT);
	stop_never_served("silent", SIGTERM);
}

/* A server that floods and never ends its stream: after the first signal rasp writes at
 * most its limit for a session's end, then stops on its own, status 1, saying why. */
static void test_a_flood_stops_being_written_after_the_first_signal(void **state)
{
	const char *out = in_work("flood.nettrace"), *log = in_work("flood.out");
	pid_t server, r;
	long size, end;

	(void)state;
	server = fake_server("flood", 0, NULL, 0);
	r = record(server, out, log);
	wait_text(log, "recording process");
	assert_int_equal(kill(r, SIGINT), 0);
	size = file_size(out);
	assert_int_equal(wait_exit(r, log), 1);
	end = file_size(out);
	if (end - size > TAIL_LIMIT)
		fail_msg("%ld bytes written after the signal (limit %ld):\n%s", end - size,
			 (long)TAIL_LIMIT, slurp(log));
	if (!strstr(slurp(log), "MiB after StopTracing"))
		fail_msg("no word of the flood:\n%s", slurp(log));
	sleep_ms(200);
	assert_int_equal(file_size(out), end);
}

/* Two signals at once against a flood: out within 5 s. The flood may pass the tail limit
 * between the two signals (the test sees the first one's word at most 50 ms late, in which
 * 64 MiB can arrive): rasp then stops reading, reports what came, and the second signal,
 * arriving outside the stream's loop, ends it as Ctrl-C ends any program. */
static void test_a_flood_ends_at_the_second_signal(void **state)
{
	const char *out = in_work("flood2.nettrace"), *log = in_work("flood2.out");
	pid_t server, r;
	double t;
	int status;

	(void)state;
	server = fake_server("flood", 0, NULL, 0);
	r = record(server, out, log);
	wait_text(log, "recording process");
	t = now_s();
	assert_int_equal(kill(r, SIGINT), 0);
	wait_text(log, "stopping the session");
	assert_int_equal(kill(r, SIGINT), 0);
	status = wait_exit(r, log);
	if (status == 128 + SIGINT && !strstr(slurp(log), "not writing more"))
		fail_msg("killed by the second signal inside the stream's loop:\n%s", slurp(log));
	if (status != 1 && status != 128 + SIGINT)
		fail_msg("exit status %d after two signals:\n%s", status, slurp(log));
	t = now_s() - t;
	if (t > 5)
		fail_msg("rasp took %.1f s after two signals:\n%s", t, slurp(log));
}

/* The temporary file of a running rasp report --live: its path, once it exists. */
static void live_file(char *found, size_t cap)
{
	found[0] = '\0';
	for (int i = 0; i < WATCHDOG_S * 20 && !found[0]; i++) {
		DIR *d = opendir(work);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (strncmp(e->d_name, "rasp-live-", 10) == 0)
				snprintf(found, cap, "%s/%.255s", work, e->d_name);
		if (d)
			closedir(d);
		if (!found[0])
			sleep_ms(50);
	}
	if (!found[0])
		fail_msg("no rasp-live-* file in %s while --live runs", work);
}

/* rasp report --live keeps the stream in a temporary file: 0600 while it runs, gone after
 * Ctrl-C (status 0, the report printed) and after a hangup that kills rasp. (It was
 * $TMPDIR/rasp-live-PID-PID.nettrace, 0644, and stayed.) */
static void test_live_temporary_file_is_private_and_removed(void **state)
{
	const char *prog[] = {rasp_test_build_path("bin/rasp-diag-prog"), "1", "60", NULL};
	const char *log = in_work("live.out");
	char pid[32], found[4400];
	const char *argv[] = {rasp_test_build_path("bin/rasp"),
			      "report",
			      "--live",
			      "-p",
			      pid,
			      "--interval",
			      "1",
			      NULL};
	pid_t target = helper(prog, "live-prog.out"), r;
	struct stat st;

	(void)state;
	snprintf(pid, sizeof(pid), "%ld", (long)target);
	wait_socket(target);
	r = spawn_to(argv, log);
	wait_text(log, "recording process");
	live_file(found, sizeof(found));
	assert_int_equal(stat(found, &st), 0);
	if ((st.st_mode & 0777) != 0600)
		fail_msg("%s has mode %o, not 0600", found, (unsigned)(st.st_mode & 0777));
	assert_int_equal(kill(r, SIGINT), 0);
	assert_int_equal(wait_exit(r, log), 0);
	if (!strstr(slurp(log), "Diag.Large"))
		fail_msg("no report after --live:\n%s", slurp(log));
	if (stat(found, &st) == 0)
		fail_msg("%s is still there after rasp report --live", found);

	r = spawn_to(argv, log);
	wait_text(log, "recording process");
	live_file(found, sizeof(found));
	assert_int_equal(kill(r, SIGHUP), 0);
	assert_int_equal(wait_exit(r, log), 128 + SIGHUP);
	if (stat(found, &st) == 0)
		fail_msg("%s is still there after a hangup killed rasp report --live", found);
}

/* rasp report --live honours --top in every redraw and in the last report, and a stream still
 * being written is not a loss: no "unknown number of events" note while it grows. (--live
 * showed every row and warned of lost events on each redraw.) */
static void test_live_honours_top_and_reports_no_loss(void **state)
{
	const char *prog[] = {rasp_test_build_path("bin/rasp-diag-prog"), "1", "60", NULL};
	const char *log = in_work("live-top.out");
	char pid[32];
	const char *argv[] = {rasp_test_build_path("bin/rasp"),
			      "report",
			      "--live",
			      "-p",
			      pid,
			      "--interval",
			      "1",
			      "--top",
			      "1",
			      NULL};
	pid_t target = helper(prog, "live-top-prog.out"), r;
	const char *out, *p;
	int redraws = 0;

	(void)state;
	snprintf(pid, sizeof(pid), "%ld", (long)target);
	wait_socket(target);
	r = spawn_to(argv, log);
	wait_text(log, "recording process");
	/* A redraw with all three types sampled: one shown, two more. */
	wait_text(log, "\u2026 2 more rows (--top 0 for all)");
	assert_int_equal(kill(r, SIGINT), 0);
	assert_int_equal(wait_exit(r, log), 0);
	out = slurp(log);
	for (p = out; (p = strstr(p, "rasp report --live: process")) != NULL; p++)
		redraws++;
	if (redraws < 1)
		fail_msg("no redraw in:\n%s", out);
	if (strstr(out, "unknown number"))
		fail_msg("a growing stream reported as a loss:\n%s", out);
	/* The last report, after the screen's clear: one row and the line saying so. */
	p = strrchr(out, '\033');
	assert_non_null(p);
	if (!strstr(p, "\u2026 2 more rows (--top 0 for all)") || !strstr(p, "\nTOTAL"))
		fail_msg("the last report does not honour --top 1:\n%s", p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_a_rasp_program_is_recorded, each_teardown),
	    cmocka_unit_test_teardown(test_a_wrong_key_is_refused, each_teardown),
	    cmocka_unit_test_teardown(test_another_users_socket_is_refused, each_teardown),
	    cmocka_unit_test_teardown(test_a_socket_served_by_another_process_is_refused,
				      each_teardown),
	    cmocka_unit_test_teardown(test_a_stop_never_accepted_ends_at_the_second_signal,
				      each_teardown),
	    cmocka_unit_test_teardown(test_a_stop_never_answered_ends_at_the_second_signal,
				      each_teardown),
	    cmocka_unit_test_teardown(test_a_flood_stops_being_written_after_the_first_signal,
				      each_teardown),
	    cmocka_unit_test_teardown(test_a_flood_ends_at_the_second_signal, each_teardown),
	    cmocka_unit_test_teardown(test_live_temporary_file_is_private_and_removed,
				      each_teardown),
	    cmocka_unit_test_teardown(test_live_honours_top_and_reports_no_loss, each_teardown),
	};

	return cmocka_run_group_tests_name("cmd-record-attach", tests, setup, teardown);
}
