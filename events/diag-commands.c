/* The diagnostic server's command thread: CollectTracing and StopTracing, which wait for the
 * sessions' writer (a stop until its client has read the stream's end, up to 5 s), run here one
 * after another from a queue the connection thread (diag-server.c) fills, so that it goes on
 * answering everyone else. The queue's lock also guards every client descriptor against a fork
 * (diag-server.c's fork handlers take it). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "diag-commands.h"
#include "diag-protocol.h"
#include "eventpipe-config.h"
#include "eventpipe.h"

/* A client's session queue: its circular buffer size, within these bounds. */
#define MIN_QUEUE_MB 4
#define MAX_QUEUE_MB 1024

/* The CollectTracing being parsed: 64 providers' names and filters, too big for the command
 * thread's 256 KiB stack to hold without need; only that thread uses it. */
static struct rasp_diag_collect parsed;

/* ---- replies ------------------------------------------------------------------------------- */

int64_t rasp__diag_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Sends b on fd (non-blocking) until done, the client gone, or the deadline (ms). For the
 * command thread's short replies; the connection thread never waits on one client. */
static void send_until(int fd, const uint8_t *b, size_t n, int64_t deadline)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int64_t left;

		if (w > 0) {
			b += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return; /* the client is gone: nothing to do */
		left = deadline - rasp__diag_now_ms();
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			return;
	}
}

static void reply_error(int fd, uint32_t hresult)
{
	uint8_t b[RASP_DIAG_HEADER_SIZE + 4];

	send_until(fd, b, rasp_diag_error_write(b, sizeof(b), hresult),
		   rasp__diag_now_ms() + RASP__DIAG_IO_TIMEOUT_MS);
}

/* ---- the commands that wait for the sessions' writer (the command thread) ------------------ */

/* CollectTracing: true when the connection now belongs to a session. */
static bool collect(int fd, uint8_t id, const uint8_t *p, size_t n)
{
	struct rasp_diag_collect *c = &parsed;
	struct rasp__ep_provider ps[RASP_DIAG_MAX_PROVIDERS];
	uint8_t reply[RASP_DIAG_HEADER_SIZE + 8], sid[8];
	char why[160];
	uint64_t mask, session;
	size_t mb;
	int rc = rasp_diag_collect_parse(id, p, n, c, why, sizeof(why));

	if (rc) {
		fprintf(stderr, "rasp: diagnostics: CollectTracing refused: %s\n", why);
		reply_error(fd, RASP_DIAG_E_BAD_ENCODING);
		return false;
	}
	if (c->session_type != 0 || c->format != 1) {
		fprintf(stderr,
			"rasp: diagnostics: CollectTracing refused: session type %u, format %u "
			"(rasp streams NetTrace (1) over the connection (0) only)\n",
			c->session_type, c->format);
		reply_error(fd, RASP_DIAG_E_NOT_SUPPORTED);
		return false;
	}
	for (size_t i = 0; i < c->nproviders; i++)
		ps[i] = (struct rasp__ep_provider){c->providers[i].name, c->providers[i].keywords,
						   c->providers[i].level};
	mask = rasp__ep_providers_mask(ps, c->nproviders, c->stackwalk);
	mb = c->buffer_mb < MIN_QUEUE_MB   ? MIN_QUEUE_MB
	     : c->buffer_mb > MAX_QUEUE_MB ? MAX_QUEUE_MB
					   : c->buffer_mb;
	session = rasp__ep_session_new_id();
	for (int i = 0; i < 8; i++)
		sid[i] = (uint8_t)(session >> (8 * i));
	rasp_diag_ok_write(reply, sizeof(reply), sid, sizeof(sid));
	/* The connection is non-blocking (accept4): the session's writer sends on its own
	 * schedule and must not block on it. */
	rc = rasp__ep_session_start(fd, session, mask, mb << 20, reply, sizeof(reply));
	if (rc) {
		fprintf(stderr, "rasp: diagnostics: cannot start a session: %s\n", strerror(-rc));
		reply_error(fd, RASP_DIAG_E_FAIL);
		return false;
	}
	return true;
}

static void stop(int fd, const uint8_t *p, size_t n)
{
	uint8_t reply[RASP_DIAG_HEADER_SIZE + 8];
	uint64_t id = 0;
	int rc;

	if (n != 8) {
		reply_error(fd, RASP_DIAG_E_BAD_ENCODING);
		return;
	}
	for (int i = 0; i < 8; i++)
		id |= (uint64_t)p[i] << (8 * i);
	rc = rasp__ep_session_stop(id);
	if (rc == -ENOENT || rc == -ESHUTDOWN) {
		reply_error(fd, RASP_DIAG_E_FAIL);
		return;
	}
	/* Ended, even on a late write error of the stream: say so as .NET does. */
	send_until(fd, reply, rasp_diag_ok_write(reply, sizeof(reply), p, 8),
		   rasp__diag_now_ms() + RASP__DIAG_IO_TIMEOUT_MS);
}

/* A command handed to the command thread: the connection and its message's payload. */
struct job {
	struct job *next;
	int fd;
	uint8_t id;
	uint8_t *payload; /* malloc'd, n bytes */
	size_t n;
};

/* The lock guards the queue and, against a fork, every descriptor of a client: a forked
 * child gets copies of them, and closes them (fork_child), so it must see none half made or
 * half closed. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct job *head, **tail;
	size_t n;    /* queued, at most MAX_CONNS */
	int current; /* the connection of the command being run, or -1 */
} Q = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .tail = &Q.head,
       .current = -1};

void *rasp__diag_command_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct job *j;
		bool kept = false;

		pthread_mutex_lock(&Q.lock);
		while (!Q.head)
			pthread_cond_wait(&Q.wake, &Q.lock);
		j = Q.head;
		Q.head = j->next;
		if (!Q.head)
			Q.tail = &Q.head;
		Q.n--;
		Q.current = j->fd;
		pthread_mutex_unlock(&Q.lock);
		if (j->id == RASP_DIAG_EP_STOP)
			stop(j->fd, j->payload, j->n);
		else
			kept = collect(j->fd, j->id, j->payload, j->n); /* kept: the session's */
		pthread_mutex_lock(&Q.lock);
		if (!kept)
			close(j->fd);
		Q.current = -1;
		pthread_mutex_unlock(&Q.lock);
		free(j->payload);
		free(j);
	}
	return NULL;
}

void rasp__diag_lock(void)
{
	pthread_mutex_lock(&Q.lock);
}

void rasp__diag_unlock(void)
{
	pthread_mutex_unlock(&Q.lock);
}

bool rasp__diag_enqueue(int fd, uint8_t id, uint8_t *payload, size_t n, size_t max)
{
	struct job *j = Q.n < max ? malloc(sizeof(*j)) : NULL;

	if (!j)
		return false;
	*j = (struct job){.fd = fd, .id = id, .payload = payload, .n = n};
	*Q.tail = j;
	Q.tail = &j->next;
	Q.n++;
	pthread_cond_signal(&Q.wake);
	return true;
}

void rasp__diag_commands_fork_child(bool close_fds)
{
	struct job *j;

	if (close_fds) {
		for (j = Q.head; j; j = j->next)
			close(j->fd);
		if (Q.current >= 0)
			close(Q.current);
	}
	while (Q.head) {
		j = Q.head;
		Q.head = j->next;
		free(j->payload);
		free(j);
	}
	Q.tail = &Q.head;
	Q.n = 0;
	Q.current = -1;
}
