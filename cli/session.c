/* The LTTng seam of the rasp command: a recording session through liblttng-ctl (the library
 * the lttng client is built on), and a session daemon started when none answers. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <lttng/lttng.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CHANNEL "rasp"

/* What `rasp record` enables: .NET's event, and rasp's own provider (sampling mean), plus the
 * older fixed-stride ticks a .NET runtime may emit, which the report shows apart. */
static const char *const recorded_events[] = {
    "DotNETRuntime:AllocationSampled",
    "DotNETRuntime:GCAllocationTick*",
    "Rasp_Runtime:*",
};

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

/* Records only `pid` (vpid tracker, include set): other processes of the user that emit the
 * same events while the program runs stay out of the trace and do not start sampling. */
static int track_only(const char *cmd, const char *session, int pid)
{
	struct lttng_process_attr_tracker_handle *t = NULL;
	enum lttng_error_code ec;
	int rc = 0;

	ec = lttng_session_get_tracker_handle(session, LTTNG_DOMAIN_UST,
					      LTTNG_PROCESS_ATTR_VIRTUAL_PROCESS_ID, &t);
	if (ec != LTTNG_OK)
		return fail(cmd, "cannot get the process tracker of session", session, -(int)ec);
	if (lttng_process_attr_tracker_handle_set_tracking_policy(
		t, LTTNG_TRACKING_POLICY_INCLUDE_SET) !=
		LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK ||
	    lttng_process_attr_virtual_process_id_tracker_handle_add_pid(t, pid) !=
		LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK) {
		rasp_cli_error(cmd, "cannot restrict session %s to process %d", session, pid);
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

	snprintf(s->name, sizeof(s->name), "rasp-record-%ld", (long)getpid());
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
	chan->attr.overwrite = 0; /* discard mode: losses are counted, never silent */
	chan->attr.subbuf_size = s->subbuf_size;
	chan->attr.num_subbuf = s->num_subbuf;
	/* Block (up to 1 s per full buffer, with LTTNG_UST_ALLOW_BLOCKING=1 in the program)
	 * rather than lose events when the consumer daemon falls behind: buffers are sized so
	 * this is a safety net, not the normal case. */
	lttng_channel_set_blocking_timeout(chan, 1000000);
	ret = lttng_enable_channel(h, chan);
	if (ret < 0) {
		rc = fail(cmd, "cannot enable channel", CHANNEL, ret);
		goto out;
	}
	for (size_t i = 0; i < sizeof(recorded_events) / sizeof(recorded_events[0]); i++) {
		struct lttng_event *ev = lttng_event_create();

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
	if (!s->all_processes) {
		rc = track_only(cmd, s->name, s->pid);
		if (rc)
			goto out;
	}
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

int rasp_session_stop(const char *cmd, struct rasp_session *s, uint64_t *discarded)
{
	struct lttng_domain dom;
	struct lttng_channel *chans = NULL;
	struct lttng_handle *h;
	int n, ret;

	*discarded = 0;
	if (s->started) {
		/* Waits until the consumer daemon has written every buffer. */
		ret = lttng_stop_tracing(s->name);
		if (ret < 0)
			return fail(cmd, "cannot stop session", s->name, ret);
		s->started = false;
	}
	ust_domain(&dom);
	h = lttng_create_handle(s->name, &dom);
	if (!h)
		return fail(cmd, "cannot query session", s->name, -LTTNG_ERR_NOMEM);
	n = lttng_list_channels(h, &chans);
	lttng_destroy_handle(h);
	if (n < 0)
		return fail(cmd, "cannot list channels of", s->name, n);
	for (int i = 0; i < n; i++) {
		uint64_t d = 0;

		if (lttng_channel_get_discarded_event_count(&chans[i], &d) == 0)
			*discarded += d;
	}
	free(chans);
	return 0;
}

void rasp_session_destroy(struct rasp_session *s)
{
	if (s->created) {
		lttng_destroy_session(s->name);
		s->created = false;
		s->started = false;
	}
}
