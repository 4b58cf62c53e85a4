/* Starting and ending the EventPipe writer (eventpipe.c) and its sessions: the pool and the
 * writer thread once per process, a session's start or stop queued to the writer and waited
 * for, the file session DOTNET_EnableEventPipe asks for at load, everything written at exit,
 * and a forked child left with no session. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventpipe-config.h"
#include "eventpipe-writer.h"
#include "eventpipe.h"

/* The pool when a client's session starts it (mapped, not committed: untouched pages cost
 * nothing). */
#define CLIENT_POOL_BYTES ((uint64_t)256 << 20)

struct rasp__ep_writer rasp__ep_w = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *env(const char *name)
{
	return getenv(name);
}

static void after_fork_child(void)
{
	/* The parent's sessions are the parent's; the child's copies of their descriptors go. */
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	rasp__ep_state_publish();
	atomic_store_explicit(&P.on, false, memory_order_relaxed);
	S.started = false;
	S.nsessions = 0;
	S.file_id = 0;
	S.requests = NULL;
	pthread_mutex_init(&S.lock, NULL);
	/* The child's copies of the sessions' descriptors go (a client must see its stream end
	 * when the parent ends it); the records stay reachable, untouched, with no writer. */
	for (size_t j = 0; j < MAX_SESSIONS; j++)
		if (S.sessions[j])
			rasp__ep_session_drop_fd(S.sessions[j]);
}

static void print_warnings(const char *w)
{
	while (*w) {
		const char *nl = strchr(w, '\n');
		int len = nl ? (int)(nl - w) : (int)strlen(w);

		fprintf(stderr, "rasp: EventPipe: %.*s\n", len, w);
		w += len + (nl != NULL);
	}
}

/* The pool and the writer thread, once per process. Under S.lock. */
static int start_writer(uint64_t pool_bytes)
{
	pthread_condattr_t ca;
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	if (S.started)
		return 0;
	if (S.stop)
		return -ESHUTDOWN;
	rc = rasp__ep_pool_init(pool_bytes);
	if (rc)
		return rc;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S.wake, &ca);
	pthread_cond_init(&S.done, &ca);
	pthread_condattr_destroy(&ca);
	S.flushed_to = rasp__ep_now();
	S.want = INT64_MIN;
	/* The program's signal handlers never run on the writer thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	rc = pthread_create(&S.writer, &attr, rasp__ep_writer_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	pthread_atfork(NULL, NULL, after_fork_child);
	S.started = true;
	atomic_store_explicit(&P.on, true, memory_order_release);
	return 0;
}

/* Queues q for the writer and waits until it is handled. */
static int submit(struct request *q)
{
	int rc;

	pthread_mutex_lock(&S.lock);
	if (!S.started || S.stop) {
		pthread_mutex_unlock(&S.lock);
		return -ESHUTDOWN;
	}
	if (q->start && !q->stream)
		S.file_id = q->id;
	q->next = S.requests;
	S.requests = q;
	pthread_cond_signal(&S.wake);
	while (!q->done)
		pthread_cond_wait(&S.done, &S.lock);
	rc = q->rc;
	pthread_mutex_unlock(&S.lock);
	return rc;
}

int rasp__ep_session_start(int fd, uint64_t id, uint64_t mask, size_t queue_bytes, const void *pre,
			   size_t npre)
{
	struct request q = {.start = true,
			    .fd = fd,
			    .stream = true,
			    .mask = mask,
			    .queue_max = queue_bytes,
			    .pre = pre,
			    .npre = npre,
			    .id = id};
	int rc;

	if (fd < 0 || !id)
		return -EINVAL;
	pthread_mutex_lock(&S.lock);
	rc = start_writer(CLIENT_POOL_BYTES);
	pthread_mutex_unlock(&S.lock);
	return rc ? rc : submit(&q);
}

int rasp__ep_session_stop(uint64_t id)
{
	struct request q = {.start = false, .id = id};

	return submit(&q);
}

__attribute__((constructor)) static void rasp__ep_init(void)
{
	struct rasp__ep_config c;
	struct request q = {.start = true, .stream = false, .id = rasp__ep_session_new_id()};
	int rc;

	rasp__ep_config_read(&c, env, (long)getpid());
	print_warnings(c.warnings);
	if (!c.enabled)
		return;
	snprintf(S.path, sizeof(S.path), "%s", c.path);
	q.fd = open(S.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	q.mask = c.mask;
	rc = q.fd < 0 ? -errno : 0;
	if (!rc) {
		pthread_mutex_lock(&S.lock);
		rc = start_writer(c.buffer_bytes);
		pthread_mutex_unlock(&S.lock);
		if (!rc)
			rc = submit(&q);
		if (rc)
			close(q.fd);
	}
	if (rc) {
		pthread_mutex_lock(&S.lock);
		S.file_id = 0;
		pthread_mutex_unlock(&S.lock);
		fprintf(stderr,
			"rasp: EventPipe: cannot start the session writing '%s' (%s); "
			"no EventPipe trace\n",
			c.path, strerror(-rc));
	}
}

__attribute__((destructor)) static void rasp__ep_fini(void)
{
	if (!S.started)
		return;
	rasp__ep_mark_tail();
	pthread_mutex_lock(&S.lock);
	S.stop = true;
	pthread_cond_signal(&S.wake);
	pthread_mutex_unlock(&S.lock);
	pthread_join(S.writer, NULL); /* it writes the rest and the ends */
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	rasp__ep_state_publish();
	atomic_store_explicit(&P.on, false, memory_order_relaxed);
	S.started = false;
}
