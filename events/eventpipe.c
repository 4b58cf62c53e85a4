/* The runtime's EventPipe sessions: the one a program started with DOTNET_EnableEventPipe=1
 * writes to its .nettrace file (as .NET 10's runtime writes it: a streaming file session,
 * NetTrace V4), and those diagnostic clients start over the IPC socket (diag-server.c), each
 * streamed back on its connection. Any number run at once (up to MAX_SESSIONS); the event
 * mask is the union of theirs, and sampling (auto mode) follows it: on when the first
 * session wanting AllocationSampled starts, off when the last ends.
 *
 * Threads that emit events write records (a small header and the payload already encoded) into
 * buffers they own, taken from a pool mapped when a session starts while none runs: no lock, no
 * system call (clock_gettime is the vDSO; gettid is called once per thread). A full buffer is
 * sealed and the next taken; when the pool is empty the event is dropped and its thread's
 * sequence number still advances, so readers see the loss (TraceEvent's EventsLost, rasp's
 * lost-data note).
 *
 * A writer thread wakes every 100 ms (10 ms while a client has bytes waiting, or when
 * rasp_events_flush asks), takes every complete record older than a cut, sorts them by time
 * and hands them to every session (eventpipe-session.c: each keeps the events it wants and
 * numbers them for itself), then a sequence point. The cut is "now", lowered to a bound below
 * any record being written at that moment: a writing thread first publishes a lower bound of
 * the timestamp it is about to take (its previous one), so a record the writer cannot see yet
 * is never older than what it writes out. Streams are therefore in time order, and readers
 * need not hold events back. Fully written sealed buffers go back to the pool.
 *
 * Sessions start and stop on the writer thread only (callers queue a request and wait): a
 * session starting opens a new epoch, and every thread's first record of an epoch starts
 * its numbering for the sessions of that epoch. A client that hangs up ends its session;
 * one that reads too slowly loses events of its own session (gaps in its numbers), never
 * the program's time.
 *
 * A thread whose last events were dropped leaves a marker record (no event) when it exits or
 * flushes, so the sequence point shows its final number and readers count the tail it lost.
 *
 * At exit (library destructor) every session ends: the writer writes the rest and the end
 * tag, and gives all clients together CLOSE_TIMEOUT_MS to read their last bytes. Every write after
 * a header happens on the writer thread, which blocks all signals (a pipe's reader gone or a file
 * size limit is an error code there, not a signal that ends the program). A write error is reported
 * once and ends that session; the program goes on. A forked child has no session. Starting
 * and ending the writer, the sessions' requests and the start-up file session are
 * eventpipe-control.c's. */
#define _GNU_SOURCE
#include "eventpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventpipe-buffers.h"
#include "eventpipe-config.h"
#include "eventpipe-session.h"
#include "eventpipe-writer.h"
#include "rasp-event-desc.h"
#include "rasp/events.h"

#define PERIOD_NS	  (100 * 1000000L)
#define BACKLOG_PERIOD_NS (10 * 1000000L)
#define FLUSH_WAIT_S	  5
/* Retries of a flush held back by a record in flight before the writer waits a period. */
#define MAX_RETRIES 1000
/* A client's last bytes at the end of its session: how long it has to read them. At exit, how
 * long all clients have together (their ends are sent at once). */
#define CLOSE_TIMEOUT_MS 5000

_Atomic uint64_t rasp__ep_mask;
_Atomic uint64_t rasp__ep_state;

_Static_assert(RASP_EVENT_NDESCS <= 32, "the mask fits rasp__ep_state's low half");

/* Release: a thread that reads the new state word reads the epoch and mask it was made of. */
void rasp__ep_state_publish(void)
{
	uint64_t epoch = atomic_load_explicit(&rasp__ep_epoch, memory_order_relaxed);
	uint32_t mask = (uint32_t)atomic_load_explicit(&rasp__ep_mask, memory_order_relaxed);

	atomic_store_explicit(&rasp__ep_state, epoch << 32 | mask, memory_order_release);
}

static _Atomic uint64_t next_id = 1;

uint64_t rasp__ep_session_new_id(void)
{
	return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
}

/* ---- the writer ---------------------------------------------------------------------------- */
static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->r->ts != y->r->ts)
		return x->r->ts < y->r->ts ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->r->seq < y->r->seq ? -1 : x->r->seq > y->r->seq;
}

/* The union of the sessions' masks is what threads record. Writer thread, lock not needed. */
static void update_mask(void)
{
	uint64_t m = 0;

	for (size_t j = 0; j < MAX_SESSIONS; j++)
		if (S.sessions[j])
			m |= rasp__ep_session_mask(S.sessions[j]);
	atomic_store_explicit(&rasp__ep_mask, m, memory_order_release);
}

/* Ends session j: clean (a stop or the exit) with its end tag, its client given timeout_ms to
 * read the rest, else (an error, a client gone) at once, said once on stderr unless the client
 * just went away. */
static int end_session(size_t j, int err, bool clean, int timeout_ms)
{
	struct rasp__ep_session *x = S.sessions[j];
	uint64_t id = rasp__ep_session_id(x), dropped = rasp__ep_session_dropped(x);
	bool file = id == S.file_id;
	int rc;

	if (err && err != -EPIPE && file)
		fprintf(stderr, "rasp: EventPipe: writing '%s' failed (%s); the trace stops here\n",
			S.path, strerror(-err));
	else if (err && err != -EPIPE)
		fprintf(stderr, "rasp: EventPipe: writing %s failed (%s); it ends here\n",
			rasp__ep_session_name(x), strerror(-err));
	else if (dropped)
		fprintf(stderr,
			"rasp: EventPipe: %s lost %llu events: its reader did not keep up (the "
			"trace shows the gaps)\n",
			rasp__ep_session_name(x), (unsigned long long)dropped);
	S.sessions[j] = NULL;
	update_mask();
	rasp__ep_state_publish(); /* (a start publishes once, after its epoch) */
	rc = rasp__ep_session_close(x, clean && !err, rasp__ep_now(), timeout_ms);
	pthread_mutex_lock(&S.lock);
	S.nsessions--;
	if (file) {
		S.file_id = 0;
		S.file_err = err ? err : rc;
	}
	pthread_mutex_unlock(&S.lock);
	return err ? err : rc;
}

/* Writes out every complete record older than the cut, in time order. Returns the cut (every
 * record older than it is now written) and sets *rc. */
static int64_t flush(bool final, int *rc)
{
	int64_t cut = rasp__ep_now();
	size_t n = 0;

	*rc = 0;
	atomic_thread_fence(memory_order_seq_cst);
	if (final)
		cut = INT64_MAX;
	else
		for (size_t i = 0; i < P.nbufs; i++) {
			int64_t p = atomic_load_explicit(&P.bufs[i].pending, memory_order_seq_cst);

			if (p && p < cut)
				cut = p;
		}
	for (size_t i = 0; i < P.nbufs; i++) {
		struct rasp__ep_buf *bf = &P.bufs[i];
		uint32_t end, off;

		bf->scan_state = atomic_load_explicit(&bf->state, memory_order_acquire);
		if (bf->scan_state == RASP__EP_FREE)
			continue;
		end = atomic_load_explicit(&bf->committed, memory_order_acquire);
		for (off = bf->consumed; off < end;) {
			const struct rasp__ep_rec *r =
			    (const struct rasp__ep_rec *)(rasp__ep_buf_data(bf) + off);

			if (r->ts >= cut || r->size < sizeof(*r) || r->size > end - off)
				break;
			if (n == S.cap_items) {
				size_t cap = S.cap_items ? 2 * S.cap_items : 1024;
				struct item *it = realloc(S.items, cap * sizeof(*it));

				if (!it) {
					*rc = -ENOMEM;
					break;
				}
				S.items = it;
				S.cap_items = cap;
			}
			S.items[n++] = (struct item){r, bf->tid};
			off += r->size;
		}
		/* A sealed buffer is released only when written to its end. */
		bf->scan_end = off;
		if (off != end)
			bf->scan_state = RASP__EP_OWNED;
	}
	if (*rc)
		return INT64_MIN;
	/* Each buffer's records are in time order already; one thread's alone need no sort. */
	for (size_t k = 1; k < n; k++)
		if (cmp_item(&S.items[k - 1], &S.items[k]) > 0) {
			qsort(S.items, n, sizeof(*S.items), cmp_item);
			break;
		}

	/* Every session gets every record; a session that fails ends alone (end_session). */
	for (size_t j = 0; j < MAX_SESSIONS; j++) {
		struct rasp__ep_session *x = S.sessions[j];
		int e = 0;

		if (!x)
			continue;
		for (size_t k = 0; k < n && !e; k++)
			e = rasp__ep_session_record(x, S.items[k].r, S.items[k].tid);
		if (!e && n)
			e = rasp__ep_session_sequence_point(x, S.items[n - 1].r->ts);
		if (!e)
			e = rasp__ep_session_send(x);
		if (e)
			end_session(j, e, false, 0);
	}

	for (size_t i = 0; i < P.nbufs; i++) {
		struct rasp__ep_buf *bf = &P.bufs[i];

		if (bf->scan_state == RASP__EP_FREE)
			continue;
		bf->consumed = bf->scan_end;
		if (bf->scan_state == RASP__EP_SEALED)
			rasp__ep_pool_release(i);
	}
	return cut;
}
static void deadline_in(struct timespec *t, long ns)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_nsec += ns % 1000000000;
	t->tv_sec += ns / 1000000000 + t->tv_nsec / 1000000000;
	t->tv_nsec %= 1000000000;
}

/* A start: the session joins before any thread can write a record of its epoch, so it sees
 * each thread's first. */
static void start_session(struct request *q)
{
	uint32_t epoch = atomic_load_explicit(&rasp__ep_epoch, memory_order_relaxed) + 1;
	char name[64];
	size_t j;

	for (j = 0; j < MAX_SESSIONS && S.sessions[j]; j++)
		;
	if (j == MAX_SESSIONS) {
		q->rc = -EBUSY;
		return;
	}
	if (q->stream)
		snprintf(name, sizeof(name), "the diagnostic session %llu",
			 (unsigned long long)q->id);
	else
		snprintf(name, sizeof(name), "the startup session");
	q->rc = rasp__ep_session_open(&S.sessions[j], q->fd, q->stream, q->id, q->mask, epoch,
				      q->queue_max, name, q->pre, q->npre);
	if (q->rc)
		return;
	rasp__ep_session_send(S.sessions[j]); /* the reply now; errors show at the next flush */
	/* The mask before the epoch (release): a thread that reads the new epoch (acquire, as the
	 * runtime's state update does) then reads the new mask, so it never pairs the new epoch
	 * with the old mask and records into this session unannounced. A thread that reads the
	 * new mask with the old epoch is pinned before this session, which takes none of its
	 * records until it reads the epoch again, and announces. */
	update_mask();
	atomic_store_explicit(&rasp__ep_epoch, epoch, memory_order_release);
	rasp__ep_state_publish();
	pthread_mutex_lock(&S.lock);
	S.nsessions++;
	pthread_mutex_unlock(&S.lock);
}

/* A stop: what every thread recorded before the request is written, then the end. */
static void stop_session(struct request *q, int64_t asked)
{
	size_t j;
	int rc = 0;

	for (j = 0; j < MAX_SESSIONS; j++)
		if (S.sessions[j] && rasp__ep_session_id(S.sessions[j]) == q->id)
			break;
	if (j == MAX_SESSIONS) {
		q->rc = -ENOENT;
		return;
	}
	for (int tries = 0; tries < MAX_RETRIES; tries++) {
		if (flush(false, &rc) > asked || rc)
			break;
		sched_yield();
	}
	/* flush may have ended it on an error (or its client left) */
	if (S.sessions[j] && rasp__ep_session_id(S.sessions[j]) == q->id)
		q->rc = end_session(j, rc, true, CLOSE_TIMEOUT_MS);
}

/* The requests waiting, taken under the lock; each done when handled. */
static void handle_requests(void)
{
	struct request *q = S.requests;
	int64_t now = rasp__ep_now();

	S.requests = NULL;
	pthread_mutex_unlock(&S.lock);
	for (struct request *r = q; r; r = r->next) {
		if (r->start)
			start_session(r);
		else
			stop_session(r, now);
	}
	pthread_mutex_lock(&S.lock);
	for (struct request *r = q, *next; r; r = next) {
		next = r->next;
		r->done = true;
	}
	pthread_cond_broadcast(&S.done);
}

static bool backlog(void)
{
	for (size_t j = 0; j < MAX_SESSIONS; j++)
		if (S.sessions[j] && rasp__ep_session_backlog(S.sessions[j]))
			return true;
	return false;
}

void *rasp__ep_writer_main(void *arg)
{
	int retries = 0;

	(void)arg;
	pthread_mutex_lock(&S.lock);
	while (!S.stop) {
		int64_t cut;
		int rc;

		if (S.requests) {
			handle_requests();
			continue;
		}
		/* Someone waits for a flush that an in-flight record held back: go again at once,
		 * a bounded number of times. */
		if (S.want < S.flushed_to || retries >= MAX_RETRIES) {
			struct timespec t;

			deadline_in(&t, backlog() ? BACKLOG_PERIOD_NS : PERIOD_NS);
			pthread_cond_timedwait(&S.wake, &S.lock, &t);
			retries = 0;
			if (S.stop)
				break;
			if (S.requests)
				continue;
		} else if (retries++) {
			pthread_mutex_unlock(&S.lock);
			sched_yield();
			pthread_mutex_lock(&S.lock);
		}
		pthread_mutex_unlock(&S.lock);
		cut = flush(false, &rc);
		pthread_mutex_lock(&S.lock);
		if (!rc && cut > S.flushed_to)
			S.flushed_to = cut;
		pthread_cond_broadcast(&S.done);
	}
	/* The end: what is left, then every session's end, their last bytes sent to all clients
	 * at once: CLOSE_TIMEOUT_MS in all however many do not read (one after another, 16 such
	 * clients would hold it 80 s). Requests still queued fail. */
	{
		int64_t ts;
		int rc;

		pthread_mutex_unlock(&S.lock);
		flush(true, &rc);
		ts = rasp__ep_now();
		for (size_t j = 0; j < MAX_SESSIONS; j++)
			if (S.sessions[j])
				rasp__ep_session_end(S.sessions[j], ts);
		rasp__ep_sessions_drain(S.sessions, MAX_SESSIONS, CLOSE_TIMEOUT_MS);
		for (size_t j = 0; j < MAX_SESSIONS; j++)
			if (S.sessions[j])
				end_session(j, 0, true, 0);
		pthread_mutex_lock(&S.lock);
		for (struct request *r = S.requests; r; r = r->next) {
			r->rc = -ESHUTDOWN;
			r->done = true;
		}
		S.requests = NULL;
		pthread_cond_broadcast(&S.done);
	}
	pthread_mutex_unlock(&S.lock);
	return NULL;
}

int rasp_events_flush(void)
{
	struct timespec t;
	int64_t at = rasp__ep_now();
	int rc = 0;

	if (!S.started)
		return -ENODEV;
	rasp__ep_mark_tail();
	deadline_in(&t, FLUSH_WAIT_S * 1000000000L);
	pthread_mutex_lock(&S.lock);
	if (!S.nsessions) {
		rc = S.file_err ? S.file_err : -ENODEV;
		pthread_mutex_unlock(&S.lock);
		return rc;
	}
	if (at > S.want)
		S.want = at;
	pthread_cond_signal(&S.wake);
	while (S.flushed_to <= at && !S.stop && S.nsessions)
		if (pthread_cond_timedwait(&S.done, &S.lock, &t) == ETIMEDOUT) {
			rc = S.flushed_to <= at ? -ETIMEDOUT : 0;
			break;
		}
	if (!rc && S.flushed_to <= at)
		rc = S.file_err ? S.file_err : -ENODEV;
	pthread_mutex_unlock(&S.lock);
	return rc;
}

unsigned rasp_events_session_epoch(void)
{
	return rasp__ep_pin_epoch();
}

const char *rasp_events_eventpipe_path(void)
{
	const char *p;

	pthread_mutex_lock(&S.lock);
	p = S.started && S.file_id ? S.path : NULL;
	pthread_mutex_unlock(&S.lock);
	return p;
}
