/* Test support: real LTTng sessions through the lttng client, and programs run under them.
 * Uses the command-line client on purpose: it is what users run, and what the issue's
 * acceptance criteria name (`lttng list` reporting 0 discarded events). */
#define _GNU_SOURCE
#include "lttng-session.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int session_counter;

/* Sessions created and not yet destroyed: a failed assertion jumps out of a test before its
 * destroy call, so whatever is left is destroyed when the test program exits. */
#define MAX_LIVE 64
static char live_names[MAX_LIVE][96];

static void forget_session(const char *name)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (strcmp(live_names[i], name) == 0)
			live_names[i][0] = '\0';
}

static void destroy_leftovers(void)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (live_names[i][0]) {
			const char *destroy[] = {"destroy", live_names[i], NULL};

			rasp_test_lttng(NULL, 0, destroy);
			live_names[i][0] = '\0';
		}
}

static void remember_session(const char *name)
{
	static int registered;

	if (!registered && atexit(destroy_leftovers) == 0)
		registered = 1;
	for (int i = 0; i < MAX_LIVE; i++)
		if (!live_names[i][0]) {
			snprintf(live_names[i], sizeof(live_names[i]), "%s", name);
			return;
		}
}

/* Reads all of fd into out (NUL-terminated, truncated to outlen - 1). */
static void drain(int fd, char *out, size_t outlen)
{
	size_t used = 0;
	char sink[4096];

	for (;;) {
		char *dst = out && used + 1 < outlen ? out + used : sink;
		size_t room = out && used + 1 < outlen ? outlen - 1 - used : sizeof(sink);
		ssize_t n = read(fd, dst, room);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (dst != sink)
			used += (size_t)n;
	}
	if (out && outlen)
		out[used] = '\0';
}

static int spawn_wait(char *out, size_t outlen, const char *const *argv, char *const *envp,
		      int use_path)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2], status, rc;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	rc = (use_path ? posix_spawnp : posix_spawn)(&pid, argv[0], &fa, NULL, (char *const *)argv,
						     envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		fprintf(stderr, "test-support: cannot run '%s': %s\n", argv[0], strerror(rc));
		if (out && outlen)
			snprintf(out, outlen, "cannot run '%s': %s", argv[0], strerror(rc));
		return -1;
	}
	drain(pipefd[0], out, outlen);
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int rasp_test_lttng(char *out, size_t outlen, const char *const *args)
{
	const char *argv[32];
	size_t n = 0;

	argv[n++] = "lttng";
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	return spawn_wait(out, outlen, argv, environ, 1);
}

int rasp_test_run(char *out, size_t outlen, const char *const *argv, const char *const *env_extra)
{
	size_t n_env = 0, n_extra = 0, i, j;
	char **envp;
	int rc;

	while (environ[n_env])
		n_env++;
	while (env_extra && env_extra[n_extra])
		n_extra++;
	envp = calloc(n_env + n_extra + 1, sizeof(*envp));
	if (!envp)
		return -1;
	/* Extra variables replace inherited ones of the same name. */
	for (i = j = 0; i < n_env; i++) {
		size_t k, len = strcspn(environ[i], "=");
		int overridden = 0;

		for (k = 0; k < n_extra; k++)
			if (strncmp(env_extra[k], environ[i], len + 1) == 0)
				overridden = 1;
		if (!overridden)
			envp[j++] = environ[i];
	}
	for (i = 0; i < n_extra; i++)
		envp[j++] = (char *)env_extra[i];
	envp[j] = NULL;
	rc = spawn_wait(out, outlen, argv, envp, 0);
	free(envp);
	return rc;
}

const char *rasp_test_build_path(const char *rel)
{
	/* Several paths are often used in one argv: rotate through a few buffers. */
	static char paths[8][PATH_MAX];
	static unsigned next;
	char *path = paths[next++ % 8];

	snprintf(path, PATH_MAX, "%s/%s", RASP_TEST_BUILD_DIR, rel);
	return path;
}

static int lttng_ok(const char *what, const char *const *args)
{
	char out[8192];
	int rc = rasp_test_lttng(out, sizeof(out), args);

	if (rc != 0) {
		fprintf(stderr, "test-support: lttng %s failed (status %d):\n%s\n", what, rc, out);
		return -1;
	}
	return 0;
}

int rasp_test_session_start(struct rasp_test_session *s, const char *const *events)
{
	char output[PATH_MAX + 16];

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "rasp-test-%ld-%d", (long)getpid(), session_counter++);
	snprintf(s->dir, sizeof(s->dir), "%s/test-traces/%s", RASP_TEST_BUILD_DIR, s->name);
	snprintf(output, sizeof(output), "--output=%s", s->dir);

	const char *create[] = {"create", s->name, output, NULL};
	const char *channel[] = {"enable-channel", "-u",  "-s", s->name, "--subbuf-size=1M",
				 "--num-subbuf=8", "ch0", NULL};
	const char *context[] = {"add-context", "-u", "-s",   s->name, "-c",	   "ch0", "-t",
				 "vpid",	"-t", "vtid", "-t",    "procname", NULL};
	const char *start[] = {"start", s->name, NULL};

	if (lttng_ok("create", create))
		return -1;
	s->created = 1;
	remember_session(s->name);
	if (lttng_ok("enable-channel", channel))
		return -1;
	for (size_t i = 0; events && events[i]; i++) {
		const char *enable[] = {"enable-event", "-u",  "-s",	  s->name,
					"-c",		"ch0", events[i], NULL};

		if (lttng_ok("enable-event", enable))
			return -1;
	}
	if (lttng_ok("add-context", context) || lttng_ok("start", start))
		return -1;
	s->started = 1;
	return 0;
}

int rasp_test_session_stop(struct rasp_test_session *s)
{
	const char *stop[] = {"stop", s->name, NULL};

	if (!s->started)
		return 0;
	s->started = 0;
	return lttng_ok("stop", stop);
}

long rasp_test_session_discarded(struct rasp_test_session *s)
{
	char out[16384];
	const char *list[] = {"list", s->name, NULL};
	const char *p;
	long total = 0;
	int found = 0;

	if (rasp_test_lttng(out, sizeof(out), list) != 0) {
		fprintf(stderr, "test-support: lttng list %s failed:\n%s\n", s->name, out);
		return -1;
	}
	for (p = out; (p = strstr(p, "Discarded events:")) != NULL; p++) {
		total += strtol(p + strlen("Discarded events:"), NULL, 10);
		found = 1;
	}
	if (!found) {
		fprintf(stderr, "test-support: no 'Discarded events:' in lttng list output:\n%s\n",
			out);
		return -1;
	}
	return total;
}

void rasp_test_session_destroy(struct rasp_test_session *s, int keep_trace)
{
	const char *destroy[] = {"destroy", s->name, NULL};

	if (s->created) {
		rasp_test_session_stop(s);
		lttng_ok("destroy", destroy);
		forget_session(s->name);
		s->created = 0;
	}
	if (!keep_trace && s->dir[0]) {
		const char *rm[] = {"/bin/rm", "-rf", s->dir, NULL};

		rasp_test_run(NULL, 0, rm, NULL);
	}
}
