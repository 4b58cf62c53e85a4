/* The LTTng seam of the rasp command (session.h): a recording session through liblttng-ctl,
 * a session daemon started when none answers, the guard that destroys a session whose rasp
 * record died, and the cleanup of sessions left by earlier ones. */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <lttng/lttng.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "rasp/event-meta.h"

extern char **environ;

#define CHANNEL	       "rasp"
#define SESSION_PREFIX "rasp-record-"

/* What rasp record enables: .NET's event, rasp's own provider (the sampling mean, and the
 * frees of sampled objects and heaps' destruction: what is still live), and the older
 * fixed-stride ticks a .NET runtime may emit, which the report shows apart. */
static const char *const recorded_events[] = {
    RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
    RASP_PROVIDER_DOTNETRUNTIME_LTTNG ":GCAllocationTick*",
    RASP_PROVIDER_RASP_RUNTIME_LTTNG ":*",
    /* With stacks: each sample's stack, and where the process's code was (LTTng-UST's state
     * dump of the objects loaded, and its dlopen wrapper's events). */
    RASP_EVENT_DOTNETRUNTIME_CLRSTACKWALK_LTTNG,
    /* Where an embedding runtime's frames stand (rasp_heap_set_frames) */
    RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_LTTNG,
    "lttng_ust_statedump:*",
    "lttng_ust_dl:*",
};
#define STACK_EVENTS 3 /* recorded_events[STACK_EVENTS..]: only with stacks */

static int start_daemon(const char *cmd)
{
	const char *daemon = getenv("RASP_LTTNG_SESSIOND");
	char *argv[] = {(char *)(daemon && *daemon ? daemon : "lttng-sessiond"), "--daemonize",
			"--no-kernel", NULL};
	pid_t pid;
	int status, rc;

	rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (rc != 0) {
		rasp_cli_error(cmd, "no LTTng session daemon is running and '%s' cannot start: %s",
			       argv[0], strerror(rc));
		return -rc;
	}
	/* --daemonize returns once the daemon accepts commands. */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rasp_cli_error(cmd,
			       "no LTTng session daemon is running and '%s' failed to start "
			       "one (status %d)",
			       argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -ECHILD;
	}
	return 0;
}

int rasp_session_daemon_ensure(const char *cmd)
{
	int rc;

	if (lttng_session_daemon_alive() == 1)
		return 0;
	rc = start_daemon(cmd);
	if (rc)
		return rc;
	for (int i = 0; i < 50; i++) {
		struct timespec ts = {0, 100 * 1000 * 1000};

		if (lttng_session_daemon_alive() == 1)
			return 0;
		nanosleep(&ts, NULL);
	}
	rasp_cli_error(cmd, "started lttng-sessiond but it does not answer");
	return -ETIMEDOUT;
}

/* Is pid a live rasp record? Its session is then its own business. Its name ("rasp") says so,
 * or, for one run under a wrapper that renames the process (valgrind's tools are named
 * callgrind-amd64-linux and so on), its command line: an argument named rasp... followed by
 * "record". A pid reused by another program is neither. */
static bool rasp_alive(long pid)
{
	char path[64], comm[32] = "", cmdline[8192];
	size_t n;
	FILE *f;

	if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return true; /* cannot tell: leave it alone */
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	if (strncmp(comm, "rasp", 4) == 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	n = fread(cmdline, 1, sizeof(cmdline) - 1, f);
	fclose(f);
	cmdline[n] = '\0';
	/* NUL-separated arguments, at most n bytes of them. */
	for (size_t i = 0; i < n; i += strlen(cmdline + i) + 1) {
		const char *arg = cmdline + i, *slash = strrchr(arg, '/');
		size_t next = i + strlen(arg) + 1;

		if (strncmp(slash ? slash + 1 : arg, "rasp", 4) == 0 && next < n &&
		    strcmp(cmdline + next, "record") == 0)
			return true;
	}
	return false;
}

void rasp_session_prepare(const char *cmd, struct rasp_session *s)
{
	struct lttng_session *list = NULL;
	int n;

	snprintf(s->name, sizeof(s->name), SESSION_PREFIX "%ld", (long)getpid());
	s->guard = 0;
	s->guard_fd = -1;
	n = lttng_list_sessions(&list);
	for (int i = 0; i < n; i++) {
		const char *name = list[i].name;
		char *end;
		long pid;

		if (strncmp(name, SESSION_PREFIX, strlen(SESSION_PREFIX)) != 0)
			continue;
		pid = strtol(name + strlen(SESSION_PREFIX), &end, 10);
		if (*end || pid == (long)getpid() || rasp_alive(pid))
			continue;
		if (lttng_destroy_session(name) == 0)
			fprintf(stderr,
				"rasp %s: destroyed the stale session %s: the rasp record that "
				"made it (pid %ld) is gone\n",
				cmd, name, pid);
	}
	free(list);
}

/* The guard: waits on a pipe whose only write end is rasp record's. A byte means rasp
 * record destroyed the session itself; end of file means rasp record died first. */
static void guard_main(int fd, const char *name, pid_t owner)
{
	char byte;
	ssize_t r;

	/* Ctrl-C and hangups reach the whole group; the guard must outlive rasp record to clean
	 * up after it. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	do
		r = read(fd, &byte, 1);
	while (r < 0 && errno == EINTR);
	if (r == 1)
		_exit(0);
	if (lttng_destroy_session(name) == 0)
		fprintf(stderr,
			"rasp record: the recording process %ld ended without stopping its "
			"session; its guard destroyed %s (the trace written so far is kept)\n",
			(long)owner, name);
	_exit(0);
}

int rasp_session_guard(const char *cmd, struct rasp_session *s)
{
	int p[2], e;
	pid_t pid, owner = getpid();

	if (pipe2(p, O_CLOEXEC) != 0) {
		e = errno;
		rasp_cli_error(cmd, "warning: no session guard (pipe: %s)", strerror(e));
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(p[0]);
		close(p[1]);
		rasp_cli_error(cmd, "warning: no session guard (fork: %s)", strerror(e));
		return -e;
	}
	if (pid == 0) {
		close(p[1]);
		/* Its own group: a signal sent to rasp record's group leaves it running. */
		setpgid(0, 0);
		guard_main(p[0], s->name, owner);
	}
	close(p[0]);
	s->guard = pid;
	s->guard_fd = p[1];
	return 0;
}

/* The user-space domain with per-UID buffers: they outlive short programs and are shared by
 * their threads. */
static void ust_domain(struct lttng_domain *dom)
{
	memset(dom, 0, sizeof(*dom));
	dom->type = LTTNG_DOMAIN_UST;
	dom->buf_type = LTTNG_BUFFER_PER_UID;
}

static int fail(const char *cmd, const char *what, const char *arg, int code)
{
	rasp_cli_error(cmd, "%s%s%s: %s", what, arg ? " " : "", arg ? arg : "",
		       lttng_strerror(code));
	return -EIO;
}

/* Records only `pid` (vpid tracker) or, with all_processes, only uid's processes (vuid
 * tracker): other processes that emit the same events stay out of the trace and do not start
 * sampling. */
static int track(const char *cmd, const struct rasp_session *s)
{
	struct lttng_process_attr_tracker_handle *t = NULL;
	enum lttng_process_attr attr = s->all_processes ? LTTNG_PROCESS_ATTR_VIRTUAL_USER_ID
							: LTTNG_PROCESS_ATTR_VIRTUAL_PROCESS_ID;
	enum lttng_error_code ec;
	int rc = 0;

	if (s->all_processes && s->all_users)
		return 0;
	ec = lttng_session_get_tracker_handle(s->name, LTTNG_DOMAIN_UST, attr, &t);
	if (ec != LTTNG_OK)
		return fail(cmd, "cannot get the process tracker of session", s->name, -(int)ec);
	if (lttng_process_attr_tracker_handle_set_tracking_policy(
		t, LTTNG_TRACKING_POLICY_INCLUDE_SET) !=
		LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK ||
	    (s->all_processes ? lttng_process_attr_virtual_user_id_tracker_handle_add_uid(t, s->uid)
			      : lttng_process_attr_virtual_process_id_tracker_handle_add_pid(
				    t, s->pid)) != LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK) {
		rasp_cli_error(cmd, "cannot restrict session %s to %s %d", s->name,
			       s->all_processes ? "user" : "process",
			       s->all_processes ? (int)s->uid : s->pid);
		rc = -EIO;
	}
	lttng_process_attr_tracker_handle_destroy(t);
	return rc;
}

int rasp_session_start(const char *cmd, struct rasp_session *s)
{
	struct lttng_domain dom;
	struct lttng_channel *chan = NULL;
	struct lttng_handle *h = NULL;
	static const enum lttng_event_context_type contexts[] = {
	    LTTNG_EVENT_CONTEXT_VPID, LTTNG_EVENT_CONTEXT_VTID, LTTNG_EVENT_CONTEXT_PROCNAME};
	int rc = 0, ret;

	ret = lttng_create_session(s->name, s->output);
	if (ret < 0)
		return fail(cmd, "cannot create LTTng session writing to", s->output, ret);
	s->created = true;

	ust_domain(&dom);
	h = lttng_create_handle(s->name, &dom);
	chan = lttng_channel_create(&dom);
	if (!h || !chan) {
		rc = fail(cmd, "cannot set up the session", NULL, -LTTNG_ERR_NOMEM);
		goto out;
	}
	snprintf(chan->name, sizeof(chan->name), "%s", CHANNEL);
	chan->enabled = 1;
	/* Discard mode, never blocking: a full buffer (a slow consumer daemon, a full disk)
	 * loses events, which the trace counts and the report states, instead of stalling the
	 * program for up to the blocking timeout per event. */
	chan->attr.overwrite = 0;
	chan->attr.subbuf_size = s->subbuf_size;
	chan->attr.num_subbuf = s->num_subbuf;
	ret = lttng_enable_channel(h, chan);
	if (ret < 0) {
		rc = fail(cmd, "cannot enable channel", CHANNEL, ret);
		goto out;
	}
	for (size_t i = 0; i < sizeof(recorded_events) / sizeof(recorded_events[0]); i++) {
		struct lttng_event *ev;

		if (i >= STACK_EVENTS && !s->stacks)
			break;
		ev = lttng_event_create();

		if (!ev) {
			rc = fail(cmd, "cannot enable events", NULL, -LTTNG_ERR_NOMEM);
			goto out;
		}
		ev->type = LTTNG_EVENT_TRACEPOINT;
		ev->loglevel_type = LTTNG_EVENT_LOGLEVEL_ALL;
		snprintf(ev->name, sizeof(ev->name), "%s", recorded_events[i]);
		ret = lttng_enable_event(h, ev, CHANNEL);
		lttng_event_destroy(ev);
		if (ret < 0) {
			rc = fail(cmd, "cannot enable event", recorded_events[i], ret);
			goto out;
		}
	}
	for (size_t i = 0; i < sizeof(contexts) / sizeof(contexts[0]); i++) {
		struct lttng_event_context ctx;

		memset(&ctx, 0, sizeof(ctx));
		ctx.ctx = contexts[i];
		ret = lttng_add_context(h, &ctx, NULL, CHANNEL);
		if (ret < 0) {
			rc = fail(cmd, "cannot add context to channel", CHANNEL, ret);
			goto out;
		}
	}
	rc = track(cmd, s);
	if (rc)
		goto out;
	ret = lttng_start_tracing(s->name);
	if (ret < 0) {
		rc = fail(cmd, "cannot start session", s->name, ret);
		goto out;
	}
	s->started = true;
out:
	lttng_channel_destroy(chan);
	lttng_destroy_handle(h);
	return rc;
}

int rasp_session_track_pid(const char *cmd, struct rasp_session *s, int pid)
{
	struct lttng_process_attr_tracker_handle *t = NULL;
	enum lttng_process_attr_tracker_handle_status st;
	enum lttng_error_code ec;

	ec = lttng_session_get_tracker_handle(s->name, LTTNG_DOMAIN_UST,
					      LTTNG_PROCESS_ATTR_VIRTUAL_PROCESS_ID, &t);
	if (ec != LTTNG_OK)
		return fail(cmd, "cannot get the process tracker of session", s->name, -(int)ec);
	st = lttng_process_attr_virtual_process_id_tracker_handle_add_pid(t, pid);
	lttng_process_attr_tracker_handle_destroy(t);
	if (st != LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK &&
	    st != LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_EXISTS) {
		rasp_cli_error(cmd, "cannot add process %d to session %s", pid, s->name);
		return -EIO;
	}
	return 0;
}

int rasp_session_stop(const char *cmd, struct rasp_session *s)
{
	int ret;

	if (!s->started)
		return 0;
	/* Then waits until the consumer daemon has written every buffer. lttng_stop_tracing
	 * waits too, but sleeps 200 ms whenever data is still pending at its first check (as
	 * it was, for every recording with stacks: their state dump's events), so rasp polls
	 * itself: 1 ms, doubling to 20 ms, for at most 60 s. */
	ret = lttng_stop_tracing_no_wait(s->name);
	if (ret < 0)
		return fail(cmd, "cannot stop session", s->name, ret);
	s->started = false;
	for (long waited_ms = 0, step = 1; waited_ms < 60000; waited_ms += step) {
		struct timespec ts = {0, step * 1000000L};

		ret = lttng_data_pending(s->name);
		if (ret < 0)
			return fail(cmd, "cannot tell whether the trace is complete for session",
				    s->name, ret);
		if (ret == 0)
			return 0;
		nanosleep(&ts, NULL);
		step = step < 20 ? step * 2 : 20;
	}
	rasp_cli_error(cmd,
		       "warning: the consumer daemon still had data of session %s to write "
		       "after 60 s; the trace may be incomplete",
		       s->name);
	return 0;
}

void rasp_session_destroy(struct rasp_session *s)
{
	if (s->created) {
		lttng_destroy_session_no_wait(s->name);
		s->created = false;
		s->started = false;
	}
	if (s->guard > 0) {
		/* Done: the guard exits without touching anything. */
		if (write(s->guard_fd, "d", 1) != 1)
			kill(s->guard, SIGKILL);
		close(s->guard_fd);
		while (waitpid(s->guard, NULL, 0) < 0 && errno == EINTR)
			;
		s->guard = 0;
		s->guard_fd = -1;
	}
}
