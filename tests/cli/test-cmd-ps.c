/* What rasp ps (cli/cmd-ps.c) and rasp record -p print of a process's own names: a program
 * (named-prog.c) whose thread name (prctl(PR_SET_NAME)) and command line hold ESC sequences,
 * BEL, a C1 control and a bidirectional override is listed and recorded with none of those
 * bytes reaching the output, each shown as \xNN. The program's socket and rasp's view of it
 * live in a directory of the test's own (TMPDIR), so nothing else on the machine is listed. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd-support.h"
#include "lttng-session.h"
#include "write/sanitize.h"

/* 12 bytes (comm holds 15): ESC[2J, BEL, U+202E (RLO), then text. */
#define NAME                                                                                       \
	"\x1b[2J\x07\xe2\x80\xae"                                                                  \
	"evil"
#define NAME_SAFE "\\x1b[2J\\x07\\xe2\\x80\\xaeevil"
#define ARG1	  "=cmd|' /C calc'!A0"
#define ARG2                                                                                       \
	"\x1b]0;title\x07\xc2\x9b"                                                                 \
	"31m"
#define ARG2_SAFE "\\x1b]0;title\\x07\\xc2\\x9b31m"

static pid_t child;
static char tmpdir_env[4200];

/* Fails unless out holds no byte a terminal acts on: C0 but LF, DEL, a UTF-8 C1 control, a
 * bidirectional control (checked byte by byte). */
static void expect_inert(const char *out, const char *what)
{
	const unsigned char *p = (const unsigned char *)out;

	for (size_t i = 0; p[i]; i++)
		if ((p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f ||
		    (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) ||
		    (p[i] == 0xe2 && p[i + 1] == 0x80 && p[i + 2] >= 0xaa && p[i + 2] <= 0xae)) {
			char safe[CMD_OUT];

			rasp_safe_text(safe, sizeof(safe), out);
			fail_msg("%s: byte 0x%02x at offset %zu reaches the terminal; the output "
				 "(as safe text):\n%s",
				 what, p[i], i, safe);
		}
}

static void expect_has(const char *out, const char *needle, const char *what)
{
	if (!strstr(out, needle)) {
		char safe[CMD_OUT];

		rasp_safe_text(safe, sizeof(safe), out);
		fail_msg("%s: no '%s' in the output (as safe text):\n%s", what, needle, safe);
	}
}

static void stop_child(void)
{
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
	child = 0;
}

static int setup(void **state)
{
	extern char **environ;
	const char *argv[] = {rasp_test_build_path("bin/rasp-test-named-prog"), NAME, ARG1, ARG2,
			      NULL};
	char *envp[256], comm[64], pattern[4200];
	size_t n = 0;

	(void)state;
	if (cmd_work_setup("cmd-ps"))
		return -1;
	snprintf(tmpdir_env, sizeof(tmpdir_env), "TMPDIR=%s", cmd_work(""));
	for (char **e = environ; *e && n < 250; e++)
		if (strncmp(*e, "TMPDIR=", 7) && strncmp(*e, "RASP_", 5) &&
		    strncmp(*e, "DOTNET_", 7))
			envp[n++] = *e;
	envp[n++] = tmpdir_env;
	envp[n++] = "RASP_DIAGNOSTICS=1";
	envp[n++] = "RASP_LTTNG=0";
	envp[n] = NULL;
	if (posix_spawn(&child, argv[0], NULL, NULL, (char *const *)argv, envp) != 0)
		return -1;
	/* Ready when it has named itself and its socket is there (10 s at most). */
	snprintf(pattern, sizeof(pattern), "%s/dotnet-diagnostic-%d-*-socket", cmd_work(""),
		 (int)child);
	for (int i = 0; i < 1000; i++) {
		char path[64];
		FILE *f;
		glob_t g;
		bool named = false, socket;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)child);
		f = fopen(path, "r");
		if (f) {
			named = fgets(comm, sizeof(comm), f) && strcmp(comm, NAME "\n") == 0;
			fclose(f);
		}
		socket = glob(pattern, 0, NULL, &g) == 0;
		globfree(&g);
		if (named && socket)
			return 0;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	fprintf(stderr, "named-prog %d: not named, or no socket in %s, after 10 s\n", (int)child,
		cmd_work(""));
	stop_child();
	return -1;
}

static int teardown(void **state)
{
	(void)state;
	stop_child();
	cmd_work_remove();
	return 0;
}

static void test_ps_prints_names_inert(void **state)
{
	(void)state;
	const char *args[] = {"ps", NULL};
	const char *env[] = {tmpdir_env, NULL};
	char out[CMD_OUT], line[256];
	int rc = cmd_rasp(out, sizeof(out), args, env);

	assert_int_equal(rc, 0);
	expect_inert(out, "rasp ps");
	snprintf(line, sizeof(line), "%8d  " NAME_SAFE "  ", (int)child);
	expect_has(out, line, "rasp ps: pid and name");
	expect_has(out, "named-prog " NAME_SAFE " " ARG1 " " ARG2_SAFE "\n",
		   "rasp ps: command line");
}

static void test_record_p_prints_names_inert(void **state)
{
	(void)state;
	char pid[16], out[CMD_OUT], line[256];
	const char *env[] = {tmpdir_env, "RASP_LTTNG=0", NULL};
	const char *args[] = {
	    "record", "-p", pid, "--duration", "1", "-o", cmd_work("named.nettrace"), NULL};
	int rc;

	snprintf(pid, sizeof(pid), "%d", (int)child);
	rc = cmd_rasp(out, sizeof(out), args, env);
	expect_inert(out, "rasp record -p");
	snprintf(line, sizeof(line), "recording process %d (", (int)child);
	expect_has(out, line, "rasp record -p: its first line");
	expect_has(out, NAME_SAFE " " ARG1 " " ARG2_SAFE ")", "rasp record -p: command line");
	assert_true(rc == 0 || rc == 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ps_prints_names_inert),
	    cmocka_unit_test(test_record_p_prints_names_inert),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
