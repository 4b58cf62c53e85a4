/* rasp record (cli/cmd-record.c, child.c, session.c) through the real session daemon: setup
 * failures exit at once and leave no session; buffers too large are refused and too small
 * warned about; a full file system neither stalls the program nor passes for a complete
 * trace; a session never outlives a killed rasp record (guard) and stale ones are destroyed;
 * the summary's counts are the report's (a large trace's, its packet indexes'); -a records
 * only the caller's user; an output directory of another user is refused. Each check is about
 * the sessions of the rasp record it ran (rasp-record-<its pid>): other rasp records may run
 * on the same session daemon. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
	(void)state;
	snprintf(work, sizeof(work), "%s/test-traces/cmd-record-%ld", RASP_TEST_BUILD_DIR,
		 (long)getpid());
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};
	const char *mk[] = {"/bin/mkdir", "-p", work, NULL};

	rasp_test_run(NULL, 0, rm, NULL);
	return rasp_test_run(NULL, 0, mk, NULL);
}

static int teardown(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};

	(void)state;
	rasp_test_run(NULL, 0, rm, NULL);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Whether `lttng list` names session `name` (not merely a longer name it begins). */
static int session_listed(const char *name)
{
	static char list[65536];
	const char *ls[] = {"list", NULL};
	size_t len = strlen(name);

	rasp_test_lttng(list, sizeof(list), ls);
	for (const char *p = list; (p = strstr(p, name)); p += len)
		if (p[len] < '0' || p[len] > '9')
			return 1;
	return 0;
}

/* The session of the rasp record with this pid. */
static const char *session_of(pid_t pid)
{
	static char name[64];

	snprintf(name, sizeof(name), "rasp-record-%ld", (long)pid);
	return name;
}

/* One output buffer for every check: a failed check jumps out of its test, and a buffer of
 * its own would leak there. */
static char out[OUT];
static pid_t last_pid;
static int runs;

/* Runs argv (rasp and its arguments), its pid in last_pid and its output (stdout and stderr)
 * in out; fails the test unless it exits with status and says message (if not NULL). */
static void expect(const char *const *argv, int status, const char *message)
{
	posix_spawn_file_actions_t fa;
	char log[64];
	FILE *f;
	size_t n;
	int st, rc;

	snprintf(log, sizeof(log), "run-%d.out", runs++);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, in_work(log), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	rc = posix_spawn(&last_pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		fail_msg("cannot run %s: %s", argv[0], strerror(rc));
	while (waitpid(last_pid, &st, 0) < 0)
		if (errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	f = fopen(in_work(log), "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	if (f)
		fclose(f);
	out[n] = '\0';
	if (rc != status || (message && !strstr(out, message)))
		fail_msg("'rasp %s' gave status %d (want %d) and:\n%s\n(want: %s)", argv[1], rc,
			 status, out, message ? message : "");
}

/* The session cannot be created (the output cannot be made): rasp record says why, exits
 * at once and leaves no session (it hung: the held program kept a pipe end open). */
static void test_setup_failure_exits_and_leaves_no_session(void **state)
{
	const char *argv[] = {rasp(), "record",	   "-o", "/proc/rasp-no/trace",
			      "--",   "/bin/true", NULL};

	(void)state;
	expect(argv, 2, "cannot start session rasp-record-");
	assert_false(session_listed(session_of(last_pid)));
}

static void test_buffer_sizes(void **state)
{
	const char *huge[] = {rasp(),
			      "record",
			      "-o",
			      in_work("huge"),
			      "--subbuf-size",
			      "256M",
			      "--num-subbuf",
			      "1024",
			      "--",
			      "/bin/true",
			      NULL};
	const char *over[] = {rasp(), "record", "--subbuf-size", "4G", "--", "/bin/true", NULL};

	(void)state;
	expect(huge, 2, "exceed half of this machine's memory");
	assert_false(session_listed(session_of(last_pid)));
	expect(over, 2, "--subbuf-size '4G' is not an integer in [4096, 268435456]");
	assert_false(session_listed(session_of(last_pid)));
}

/* Two 4 KiB sub-buffers: events are lost, never waited for (blocking mode slowed a program
 * 70x), the user is warned, and the summary's count of lost events is the report's, whether
 * the summary read the events (5,000 fired: at most 420 KiB, under what it reads, however fast
 * the consumer daemon) or took the packet indexes' (1,500,000: 1.7 MiB written here, the
 * consumer daemon keeping up with a fraction; more where the program is slower, as under the
 * sanitizers). The indexes count from each stream's start;
 * where a stream's first packet already lost events, babeltrace2 cannot say how many
 * ("unknown") and the report's count is then a lower bound. */
static void small_buffers(const char *events, const char *name, const char *json, bool indexes)
{
	const char *argv[] = {
	    rasp(), "record",	    "-o", in_work(name), "--subbuf-size",
	    "4096", "--num-subbuf", "2",  "--",		 rasp_test_build_path("bin/rasp-emit"),
	    "-n",   events,	    NULL};
	const char *report[] = {rasp(), "report",      "--format",    "json",
				"-o",	in_work(json), in_work(name), NULL};
	json_object *rep, *v, *unknown;
	uint64_t discarded;
	const char *line;

	expect(argv, 0, "buffers of 8 KiB per CPU are small");
	if (indexes != (strstr(out, " MiB of event streams, ") != NULL))
		fail_msg("the summary %s the events:\n%s", indexes ? "read" : "did not read", out);
	line = strstr(out, " discarded");
	assert_non_null(line);
	while (line > out && line[-1] != ' ')
		line--;
	assert_int_equal(sscanf(line, "%" SCNu64 " discarded", &discarded), 1);
	assert_true(discarded > 0);
	assert_non_null(strstr(out, "the tracer discarded"));
	expect(report, 0, NULL);
	rep = json_object_from_file(in_work(json));
	assert_non_null(rep);
	assert_true(json_object_object_get_ex(rep, "discarded_events", &v));
	assert_true(json_object_object_get_ex(rep, "discarded_events_unknown", &unknown));
	if (indexes && json_object_get_int64(unknown))
		assert_true((uint64_t)json_object_get_int64(v) <= discarded);
	else
		assert_int_equal((uint64_t)json_object_get_int64(v), discarded);
	json_object_put(rep);
}

static void test_small_buffers_warn_and_count_like_the_report(void **state)
{
	(void)state;
	small_buffers("5000", "small", "small.json", false);
	small_buffers("1500000", "small-large", "small-large.json", true);
}

/* The summary reads a small trace's events and counts them; a large one (over 512 KiB of
 * streams) it sums up from the packet indexes, which rasp report then reads whole: the
 * recording's end does not wait for a read that grows with it. 10,000 events make some 840 KiB,
 * which the default buffers (1 MiB per CPU) hold without the consumer daemon's help: none is
 * discarded, however slow it is. */
static void test_summary_reads_small_traces_only(void **state)
{
	const char *small[] = {rasp(), "record",
			       "-o",   in_work("sum-small"),
			       "--",   rasp_test_build_path("bin/rasp-emit"),
			       "-n",   "2000",
			       NULL};
	const char *large[] = {rasp(), "record",
			       "-o",   in_work("sum-large"),
			       "--",   rasp_test_build_path("bin/rasp-emit"),
			       "-n",   "10000",
			       NULL};
	const char *report[] = {rasp(),
				"report",
				"--format",
				"json",
				"-o",
				in_work("sum-large.json"),
				in_work("sum-large"),
				NULL};
	json_object *rep, *v, *total;
	double mib = 0;
	uint64_t discarded = 1;
	const char *line;

	(void)state;
	expect(small, 0, "(2000 AllocationSampled samples)");
	expect(large, 0, " MiB of event streams, ");
	assert_null(strstr(out, "AllocationSampled samples"));
	line = strstr(out, " MiB of event streams, ");
	assert_non_null(line);
	while (line > out && line[-1] != ' ')
		line--;
	assert_int_equal(
	    sscanf(line, "%lf MiB of event streams, %" SCNu64 " discarded", &mib, &discarded), 2);
	assert_true(mib > 0.5);
	assert_int_equal(discarded, 0);
	expect(report, 0, NULL);
	rep = json_object_from_file(in_work("sum-large.json"));
	assert_non_null(rep);
	assert_true(json_object_object_get_ex(rep, "total", &total));
	assert_true(json_object_object_get_ex(total, "samples", &v));
	assert_int_equal(json_object_get_int64(v), 10000);
	assert_true(json_object_object_get_ex(rep, "discarded_events", &v));
	assert_int_equal(json_object_get_int64(v), 0);
	json_object_put(rep);
}

/* A file system that fills up: the program runs at full speed (events are discarded, not
 * waited for) and the trace is called incomplete; exit 1 although the program succeeded. */
static void test_full_file_system(void **state)
{
	const char *argv[] = {rasp(), "record",	 "-o",
			      NULL,   "--",	 rasp_test_build_path("bin/rasp-emit"),
			      "-n",   "2000000", NULL};
	char mnt[4200], dir[4300];

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s", in_work("tiny-fs"));
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (geteuid() != 0 || mount("tmpfs", mnt, "tmpfs", 0, "size=256k") != 0) {
		printf("skipped: cannot mount a small tmpfs here (%s)\n", strerror(errno));
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/trace", mnt);
	argv[3] = dir;
	expect(argv, 1, "INCOMPLETE");
	assert_non_null(strstr(out, "is full"));
	assert_false(session_listed(session_of(last_pid)));
	/* Lazily: the consumer daemon may still hold the trace's files open for a moment after
	 * the session is gone, and a plain umount then fails (EBUSY), leaving the mount behind
	 * and the build tree impossible to remove. */
	assert_int_equal(umount2(mnt, MNT_DETACH), 0);
}

static pid_t spawn(const char *const *argv)
{
	pid_t pid;

	assert_int_equal(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ), 0);
	return pid;
}

static void wait_listed(const char *session, int present)
{
	for (int i = 0; i < 200 && session_listed(session) != present; i++)
		sleep_ms(50);
	if (session_listed(session) != present)
		fail_msg("session %s %s after 10 s", session, present ? "absent" : "still there");
}

/* kill -9 of rasp record: its guard destroys the session (it recorded forever). */
static void test_killed_record_leaves_no_session(void **state)
{
	const char *argv[] = {rasp(), "record",	    "-o", in_work("killed"),
			      "--",   "/bin/sleep", "3",  NULL};
	char session[64];
	int status;
	pid_t pid = spawn(argv);

	(void)state;
	snprintf(session, sizeof(session), "rasp-record-%ld", (long)pid);
	wait_listed(session, 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	wait_listed(session, 0);
}

/* A session left by a rasp record that is gone (its guard killed too) is destroyed by the
 * next rasp record, which says so. */
static void test_stale_session_destroyed(void **state)
{
	const char *argv[] = {rasp(), "record", "-o", NULL, "--", "/bin/true", NULL};
	char name[64], output[4300], created[256], next[64];
	long dead = 4194000;

	(void)state;
	while (dead > 1000 && (kill((pid_t)dead, 0) == 0 || errno != ESRCH))
		dead--;
	snprintf(name, sizeof(name), "rasp-record-%ld", dead);
	/* Any rasp record starting on the daemon destroys it: one of another test that starts
	 * between its creation and this rasp record leaves this one nothing to say. Tried
	 * again then, up to 5 times. */
	for (int attempt = 0; attempt < 5; attempt++) {
		snprintf(output, sizeof(output), "--output=%s/stale-%d", work, attempt);
		snprintf(next, sizeof(next), "next-%d", attempt);
		argv[3] = in_work(next);
		const char *create[] = {"create", name, output, NULL};
		assert_int_equal(rasp_test_lttng(created, sizeof(created), create), 0);
		assert_true(session_listed(name));
		expect(argv, 0, NULL);
		assert_false(session_listed(name));
		if (strstr(out, "destroyed the stale session") && strstr(out, name))
			return;
	}
	fail_msg("rasp record never said it destroyed %s:\n%s", name, out);
}

/* The session of a rasp record that runs under a wrapper renaming its process (valgrind's
 * tools: callgrind-amd64-linux ...) is not stale: its command line still reads
 * ".../rasp record". It was destroyed by the next rasp record to start, failing the first. A
 * shell stands for the wrapper: named sh, with "/opt/x/rasp record" among its arguments. */
static void test_session_of_a_wrapped_record_is_kept(void **state)
{
	const char *argv[] = {rasp(), "record",	   "-o", in_work("beside-wrapped"),
			      "--",   "/bin/true", NULL};
	char *const wrapper[] = {"sh", "-c", "sleep 60; :", "/opt/x/rasp", "record", NULL};
	char name[64], output[4300], created[256];
	pid_t pid;
	bool listed;

	(void)state;
	posix_spawnattr_t attr;

	/* Its own group, killed whole: its sleep would hold the test's output open. */
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	assert_int_equal(posix_spawn(&pid, "/bin/sh", NULL, &attr, wrapper, environ), 0);
	posix_spawnattr_destroy(&attr);
	snprintf(name, sizeof(name), "rasp-record-%ld", (long)pid);
	snprintf(output, sizeof(output), "--output=%s/wrapped", work);
	const char *create[] = {"create", name, output, NULL};
	const char *destroy[] = {"destroy", name, NULL};
	assert_int_equal(rasp_test_lttng(created, sizeof(created), create), 0);
	expect(argv, 0, NULL);
	listed = session_listed(name);
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
	rasp_test_lttng(created, sizeof(created), destroy);
	if (!listed)
		fail_msg("rasp record destroyed %s, whose rasp record runs:\n%s", name, out);
}

/* A program that emits nothing (no librasp, and librasp-malloc not preloaded) gets an
 * explanation, not "0 events". */
static void test_program_without_events_explained(void **state)
{
	const char *argv[] = {rasp(),	       "record", "--no-malloc", "-o",
			      in_work("none"), "--",	 "/bin/true",	NULL};

	(void)state;
	expect(argv, 0, "emitted no allocation events: does it allocate through librasp");
}

/* -a records the caller's user only (as root it recorded every user's processes). */
static void test_all_is_limited_to_the_user(void **state)
{
	const char *argv[] = {rasp(), "record",	    "-a", "-o", in_work("all"),
			      "--",   "/bin/sleep", "2",  NULL};
	char session[64], list[8192], uid[64];
	int status;
	pid_t pid = spawn(argv);

	(void)state;
	snprintf(session, sizeof(session), "rasp-record-%ld", (long)pid);
	wait_listed(session, 1);
	/* The session is listed from its creation, before its tracker is set and it starts:
	 * read it once it is active (10 s at most). */
	const char *ls[] = {"list", session, NULL};
	for (int i = 0; i < 200; i++) {
		rasp_test_lttng(list, sizeof(list), ls);
		if (strstr(list, "[active]"))
			break;
		sleep_ms(50);
	}
	snprintf(uid, sizeof(uid), "Virtual user IDs:     %ld", (long)getuid());
	if (!strstr(list, uid))
		fail_msg("no '%s' tracker in:\n%s", uid, list);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* An empty output directory another user made (in a shared directory, say) is refused: its
 * owner could read or replace the trace. The same directory once it is the caller's is
 * used; one that does not exist is made by rasp, the caller's. */
static void test_output_directory_of_another_user_refused(void **state)
{
	const char *dir = in_work("theirs"), *made = in_work("made");
	const char *argv[] = {rasp(), "record", "-o", dir, "--", "/bin/true", NULL};
	const char *argv_made[] = {rasp(), "record", "-o", made, "--", "/bin/true", NULL};
	char message[4400];
	struct stat st;

	(void)state;
	expect(argv_made, 0, NULL);
	assert_int_equal(stat(made, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	if (geteuid() != 0) {
		printf("skipped: only root can make a directory of another user\n");
		skip();
	}
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chown(dir, 65534, 65534), 0);
	snprintf(message, sizeof(message), "output directory '%s' belongs to uid 65534", dir);
	expect(argv, 2, message);
	assert_false(session_listed(session_of(last_pid)));
	assert_int_equal(chown(dir, geteuid(), getegid()), 0);
	expect(argv, 0, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_setup_failure_exits_and_leaves_no_session),
	    cmocka_unit_test(test_buffer_sizes),
	    cmocka_unit_test(test_small_buffers_warn_and_count_like_the_report),
	    cmocka_unit_test(test_summary_reads_small_traces_only),
	    cmocka_unit_test(test_full_file_system),
	    cmocka_unit_test(test_killed_record_leaves_no_session),
	    cmocka_unit_test(test_stale_session_destroyed),
	    cmocka_unit_test(test_session_of_a_wrapped_record_is_kept),
	    cmocka_unit_test(test_program_without_events_explained),
	    cmocka_unit_test(test_all_is_limited_to_the_user),
	    cmocka_unit_test(test_output_directory_of_another_user_refused),
	};

	return cmocka_run_group_tests_name("cmd-record", tests, setup, teardown);
}
