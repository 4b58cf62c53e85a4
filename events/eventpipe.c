/* The runtime's EventPipe session: what a program started with DOTNET_EnableEventPipe=1 writes
 * to its .nettrace file, as .NET 10's runtime writes it (a streaming file session, NetTrace V4).
 *
 * Threads that emit events write records (a small header and the payload already encoded) into
 * buffers they own, taken from a pool mapped at start: no lock, no system call (clock_gettime
 * is the vDSO; gettid is called once per thread). A full buffer is sealed and the next taken;
 * when the pool is empty the event is dropped and its thread's sequence number still advances,
 * so readers see the loss (TraceEvent's EventsLost, rasp's lost-data note).
 *
 * A writer thread wakes every 100 ms (or when rasp_events_flush asks), takes every complete
 * record older than a cut, sorts them by time and writes them as EventBlocks, every event
 * marked sorted, then a sequence point listing each thread's last sequence number. The cut is
 * "now", lowered to a bound below any record being written at that moment: a writing thread
 * first publishes a lower bound of the timestamp it is about to take (its previous one), so a
 * record the writer cannot see yet is never older than what it writes out. The file is
 * therefore in time order, and readers need not hold events back. Fully written sealed
 * buffers go back to the pool.
 *
 * A thread whose last events were dropped leaves a marker record (no event) when it exits or
 * flushes, so the sequence point shows its final number and readers count the tail it lost.
 *
 * At exit (library destructor) the session stops, the writer writes the rest and the end tag
 * closes the file. Every write after the header happens on the writer thread, which blocks all
 * signals (a pipe's reader gone or a file size limit is an error code there, not a signal that
 * ends the program). A write error is reported once and ends the session; the program goes
 * on. A forked child has no session. */
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

#include "eventpipe-config.h"
#include "eventpipe-buffers.h"
#include "nettrace-stream.h"
#include "rasp-event-desc.h"
#include "rasp/events.h"

/* The EventBlocks written: the runtime's size. */
#define BLOCK_CAP    ((size_t)100 << 10)
#define PERIOD_NS    (100 * 1000000L)
#define FLUSH_WAIT_S 5
/* Retries of a flush held back by a record in flight before the writer waits a period. */
#define MAX_RETRIES 1000
#define P	    rasp__ep_pool

_Atomic uint64_t rasp__ep_mask;

struct item {
	const struct rasp__ep_rec *r;
	uint64_t tid;
};

static struct {
	bool started; /* the writer thread runs (this process, not a forked child) */
	int fd;
	char path[4096];
	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	/* Under lock. */
	bool stop;
	int err;	    /* the write error that ended the session */
	int64_t want;	    /* latest time a flush was asked to reach */
	int64_t flushed_to; /* every record older than this is written */
	/* The writer thread's. */
	struct rasp_nt_out out;
	struct rasp_nt_stream stream;
	struct item *items;
	size_t cap_items;
} S = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the writer ---------------------------------------------------------------------------- */

static int fd_write(void *ctx, const void *p, size_t n)
{
	const uint8_t *q = p;
	int fd = *(const int *)ctx;

	while (n) {
		ssize_t w = write(fd, q, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		q += w;
		n -= (size_t)w;
	}
	return 0;
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->r->ts != y->r->ts)
		return x->r->ts < y->r->ts ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->r->seq < y->r->seq ? -1 : x->r->seq > y->r->seq;
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

	for (size_t k = 0; k < n && !*rc; k++) {
		const struct rasp__ep_rec *r = S.items[k].r;

		*rc = r->desc == RASP__EP_MARKER
			  ? rasp_nt_stream_note(&S.stream, S.items[k].tid, r->seq)
			  : rasp_nt_stream_event(&S.stream, r->desc, S.items[k].tid, r->seq, r->ts,
						 r + 1, r->payload, rasp__ep_rec_frames(r),
						 r->nframes);
	}
	if (!*rc && n)
		*rc = rasp_nt_stream_sequence_point(&S.stream, S.items[n - 1].r->ts);
	if (*rc)
		return INT64_MIN;

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

/* The session ends on a write error: once, on stderr; the program goes on. */
static void fail(int rc)
{
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	atomic_store_explicit(&P.on, false, memory_order_relaxed);
	fprintf(stderr, "rasp: EventPipe: writing '%s' failed (%s); the trace stops here\n", S.path,
		strerror(-rc));
}

static void deadline_in(struct timespec *t, long ns)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_nsec += ns % 1000000000;
	t->tv_sec += ns / 1000000000 + t->tv_nsec / 1000000000;
	t->tv_nsec %= 1000000000;
}

static void *writer_main(void *arg)
{
	int retries = 0;

	(void)arg;
	pthread_mutex_lock(&S.lock);
	while (!S.stop && !S.err) {
		int64_t cut;
		int rc;

		/* Someone waits for a flush that an in-flight record held back: go again at once,
		 * a bounded number of times. */
		if (S.want < S.flushed_to || retries >= MAX_RETRIES) {
			struct timespec t;

			deadline_in(&t, PERIOD_NS);
			pthread_cond_timedwait(&S.wake, &S.lock, &t);
			retries = 0;
			if (S.stop)
				break;
		} else if (retries++) {
			pthread_mutex_unlock(&S.lock);
			sched_yield();
			pthread_mutex_lock(&S.lock);
		}
		pthread_mutex_unlock(&S.lock);
		cut = flush(false, &rc);
		pthread_mutex_lock(&S.lock);
		if (rc)
			S.err = rc;
		else if (cut > S.flushed_to)
			S.flushed_to = cut;
		pthread_cond_broadcast(&S.done);
	}
	if (!S.err) {
		/* The end: what is left, then the end tag. */
		int rc;

		pthread_mutex_unlock(&S.lock);
		flush(true, &rc);
		if (!rc)
			rc = rasp_nt_write_end(&S.out);
		pthread_mutex_lock(&S.lock);
		S.err = rc;
	}
	pthread_mutex_unlock(&S.lock);
	if (S.err)
		fail(S.err);
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
	if (at > S.want)
		S.want = at;
	pthread_cond_signal(&S.wake);
	while (S.flushed_to <= at && !S.stop && !S.err)
		if (pthread_cond_timedwait(&S.done, &S.lock, &t) == ETIMEDOUT) {
			rc = S.flushed_to <= at ? -ETIMEDOUT : 0;
			break;
		}
	if (S.err)
		rc = S.err;
	else if (S.stop && S.flushed_to <= at)
		rc = -ENODEV;
	pthread_mutex_unlock(&S.lock);
	return rc;
}

const char *rasp_events_eventpipe_path(void)
{
	return S.started ? S.path : NULL;
}

/* ---- start and end ------------------------------------------------------------------------- */

static const char *env(const char *name)
{
	return getenv(name);
}

static void after_fork_child(void)
{
	/* The parent's session and file are the parent's. */
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	atomic_store_explicit(&P.on, false, memory_order_relaxed);
	if (S.started)
		close(S.fd);
	S.started = false;
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

static int start(const struct rasp__ep_config *c)
{
	struct rasp_nt_trace_header h = {
	    .frequency = 1000000000, .pointer_size = sizeof(void *), .pid = (uint32_t)getpid()};
	struct timespec mono, real;
	pthread_condattr_t ca;
	pthread_attr_t attr;
	sigset_t all, old;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	snprintf(S.path, sizeof(S.path), "%s", c->path);
	rc = rasp__ep_pool_init(c->buffer_bytes);
	if (rc)
		return rc;

	S.fd = open(S.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (S.fd < 0)
		return -errno;
	S.out = (struct rasp_nt_out){.write = fd_write, .ctx = &S.fd};
	rc = rasp_nt_stream_init(&S.stream, &S.out, BLOCK_CAP);
	if (rc)
		return rc;
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	h.sync_utc_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec;
	h.sync_ticks = (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec;
	h.processors = cpus > 0 ? (uint32_t)cpus : 1;
	rc = rasp_nt_write_header(&S.out, &h);
	if (rc)
		return rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S.wake, &ca);
	pthread_cond_init(&S.done, &ca);
	pthread_condattr_destroy(&ca);
	S.flushed_to = h.sync_ticks;
	S.want = INT64_MIN;
	/* The program's signal handlers never run on the writer thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	rc = pthread_create(&S.writer, &attr, writer_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	pthread_atfork(NULL, NULL, after_fork_child);
	S.started = true;
	atomic_store_explicit(&P.on, true, memory_order_release);
	atomic_store_explicit(&rasp__ep_mask, c->mask, memory_order_release);
	return 0;
}

__attribute__((constructor)) static void rasp__ep_init(void)
{
	struct rasp__ep_config c;
	int rc;

	rasp__ep_config_read(&c, env, (long)getpid());
	print_warnings(c.warnings);
	if (!c.enabled)
		return;
	rc = start(&c);
	if (rc) {
		fprintf(stderr,
			"rasp: EventPipe: cannot start the session writing '%s' (%s); "
			"no EventPipe trace\n",
			c.path, strerror(-rc));
		if (S.fd >= 0)
			close(S.fd);
		S.fd = -1;
	}
}

__attribute__((destructor)) static void rasp__ep_fini(void)
{
	if (!S.started)
		return;
	rasp__ep_mark_tail();
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	pthread_mutex_lock(&S.lock);
	S.stop = true;
	pthread_cond_signal(&S.wake);
	pthread_mutex_unlock(&S.lock);
	pthread_join(S.writer, NULL); /* it writes the rest and the end */
	atomic_store_explicit(&P.on, false, memory_order_relaxed);
	close(S.fd);
	S.started = false;
}
