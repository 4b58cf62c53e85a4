/* Test support: a real LTTng session driven through the lttng command-line client, and
 * programs run under it. Each session has a unique name and its own output directory under
 * the build tree; rasp_test_session_destroy() always runs (call it from teardown).
 * Functions return 0 or -1 and print why on stderr. */
#ifndef RASP_TEST_LTTNG_SESSION_H
#define RASP_TEST_LTTNG_SESSION_H

#include <limits.h>
#include <stddef.h>

struct rasp_test_session {
	char name[96];	    /* unique: rasp-test-<pid>-<n> */
	char dir[PATH_MAX]; /* trace output directory (babeltrace2 reads it whole) */
	int created, started;
};

/* Creates and starts a session recording `events` (NULL-terminated lttng event names or
 * globs) in one channel sized for loss-free runs (1 MiB x 8 sub-buffers), with contexts
 * vpid, vtid and procname. */
int rasp_test_session_start(struct rasp_test_session *s, const char *const *events);

/* Stops the session (flushes the buffers). */
int rasp_test_session_stop(struct rasp_test_session *s);

/* Discarded events of the session as `lttng list` reports them after stop; -1 on error. */
long rasp_test_session_discarded(struct rasp_test_session *s);

/* Destroys the session (if created) and keeps or removes its output directory. */
void rasp_test_session_destroy(struct rasp_test_session *s, int keep_trace);

/* Runs lttng with the given arguments (NULL-terminated); returns its exit status, and its
 * output (stdout and stderr) in `out` when out != NULL. */
int rasp_test_lttng(char *out, size_t outlen, const char *const *args);

/* Runs argv[0] (a path) with `env_extra` (NULL-terminated NAME=VALUE strings, or NULL)
 * added to the environment; returns its exit status (-1 if it could not run, 128+signal
 * if it was killed) and its output (stdout and stderr together) in `out` if non-NULL. */
int rasp_test_run(char *out, size_t outlen, const char *const *argv, const char *const *env_extra);

/* Path of a built program or library: RASP_TEST_BUILD_DIR "/" rel, in one of 8 static
 * buffers used in turn (so a few can appear in one argv; not thread-safe). */
const char *rasp_test_build_path(const char *rel);

#endif /* RASP_TEST_LTTNG_SESSION_H */
