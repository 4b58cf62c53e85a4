/* rasp record's children (follow.h): `perf record` records a program's children, and so does
 * rasp record. The session tracks one pid; a child has another. librasp-malloc in each process
 * of the program (malloc/follow.c) sends its pid on the socket named by RASP_RECORD_FOLLOW, in
 * the parent right after a fork and in a process's constructor after an exec, and waits for
 * the answer, which comes once the pid is in the session's vpid tracker. One thread here
 * serves them, one message each, bounded (poll with a stop pipe). */
#define _GNU_SOURCE
#include "follow.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lttng/lttng.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

struct rasp_follow {
	char dir[96], path[104], session[64];
	int fd, stop[2];
	pthread_t thread;
	bool running;
	unsigned added;
	struct lttng_process_attr_tracker_handle *tracker;
	pid_t when_pid; /* rasp_follow_when_announced */
	void (*when_fn)(void *);
	void *when_arg;
};

struct rasp_follow *rasp_follow_open(const char *cmd, char *env, size_t len)
{
	struct rasp_follow *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	if (!f)
		return NULL;
	f->fd = f->stop[0] = f->stop[1] = -1;
	if (!tmp || !*tmp || strlen(tmp) > 64) /* the socket's path fits sun_path's 108 */
		tmp = "/tmp";
	snprintf(f->dir, sizeof(f->dir), "%s/rasp-follow-XXXXXX", tmp);
	if (!mkdtemp(f->dir)) { /* 0700: only this user can connect */
		rasp_cli_error(cmd, "cannot make %s: %s; children are not recorded", f->dir,
			       strerror(errno));
		free(f);
		return NULL;
	}
	snprintf(f->path, sizeof(f->path), "%s/socket", f->dir);
	memcpy(a.sun_path, f->path, strlen(f->path) + 1); /* under 108 bytes: tmp is short */
	f->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(f->fd, 64) != 0 || pipe2(f->stop, O_CLOEXEC) != 0 ||
	    snprintf(env, len, "RASP_RECORD_FOLLOW=%s", f->path) >= (int)len) {
		rasp_cli_error(cmd, "cannot listen on %s: %s; children are not recorded", f->path,
			       strerror(errno));
		rasp_follow_close(f);
		return NULL;
	}
	return f;
}

/* One announcement: "PID\n" in, "ok" out once the pid is tracked ("no" if it cannot be). */
static void serve(struct rasp_follow *f, int c)
{
	char buf[32];
	ssize_t n;
	long pid;
	char *end;
	enum lttng_process_attr_tracker_handle_status st;
	struct pollfd p = {.fd = c, .events = POLLIN};

	if (poll(&p, 1, 1000) != 1)
		return;
	n = recv(c, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = 0;
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || pid <= 0 || pid > INT32_MAX || (*end && *end != '\n'))
		return;
	st = lttng_process_attr_virtual_process_id_tracker_handle_add_pid(f->tracker, (pid_t)pid);
	if (st == LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK)
		f->added++;
	(void)!send(c,
		    st == LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_OK ||
			    st == LTTNG_PROCESS_ATTR_TRACKER_HANDLE_STATUS_EXISTS
			? "ok"
			: "no",
		    2, MSG_NOSIGNAL);
	if (f->when_fn && pid == f->when_pid) { /* after the answer: the process goes on */
		void (*fn)(void *) = f->when_fn;

		f->when_fn = NULL;
		fn(f->when_arg);
	}
}

static void *run(void *arg)
{
	struct rasp_follow *f = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = f->fd, .events = POLLIN},
				      {.fd = f->stop[0], .events = POLLIN}};
		int c;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve(f, c);
		close(c);
	}
	return NULL;
}

void rasp_follow_when_announced(struct rasp_follow *f, pid_t pid, void (*fn)(void *), void *arg)
{
	f->when_pid = pid;
	f->when_fn = fn;
	f->when_arg = arg;
}

int rasp_follow_start(struct rasp_follow *f, const char *session)
{
	enum lttng_error_code ec;
	int rc;

	snprintf(f->session, sizeof(f->session), "%s", session);
	ec = lttng_session_get_tracker_handle(f->session, LTTNG_DOMAIN_UST,
					      LTTNG_PROCESS_ATTR_VIRTUAL_PROCESS_ID, &f->tracker);
	if (ec != LTTNG_OK)
		return -EIO;
	rc = pthread_create(&f->thread, NULL, run, f);
	if (rc)
		return -rc;
	f->running = true;
	return 0;
}

unsigned rasp_follow_close(struct rasp_follow *f)
{
	unsigned added;

	if (!f)
		return 0;
	if (f->running) {
		(void)!write(f->stop[1], "x", 1);
		pthread_join(f->thread, NULL);
	}
	if (f->tracker)
		lttng_process_attr_tracker_handle_destroy(f->tracker);
	if (f->fd >= 0)
		close(f->fd);
	for (int i = 0; i < 2; i++)
		if (f->stop[i] >= 0)
			close(f->stop[i]);
	unlink(f->path);
	rmdir(f->dir);
	added = f->added;
	free(f);
	return added;
}
