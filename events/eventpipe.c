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
 * At exit (library destructor) the session stops, the rest is written and the end tag closes
 * the file. A write error is reported once and ends the session; the program goes on. A forked
 * child has no session. */
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "eventpipe-config.h"
#include "nettrace-write.h"
#include "rasp-event-desc.h"
#include "rasp/events.h"

#define BUF_SIZE	((uint32_t)64 << 10)
#define PERIOD_NS	(100 * 1000000L)
#define FLUSH_WAIT_S	5
/* Retries of a flush held back by a record in flight before the writer waits a period. */
#define MAX_RETRIES	1000
#define TLS_MODEL	__attribute__((tls_model("initial-exec")))

_Atomic uint64_t rasp__ep_mask;

enum { B_FREE, B_OWNED, B_SEALED };

struct buf {
	_Atomic int state;
	_Atomic uint32_t committed; /* bytes of complete records */
	/* While the owner writes a record: a lower bound of its timestamp (never 0); else 0. */
	_Atomic int64_t pending;
	uint64_t tid;		    /* the owner's; set before state becomes B_OWNED */
	uint32_t consumed;	    /* writer only: bytes written out */
	uint32_t scan_end;	    /* writer only: where this flush stops */
	int scan_state;		    /* writer only */
};

/* A record in a buffer: this header, then the encoded payload; 8-byte aligned. */
struct rec {
	uint32_t size; /* header and payload, rounded up to 8 */
	uint32_t payload;
	uint32_t seq;
	uint32_t desc;
	int64_t ts;
};

struct item {
	const struct rec *r;
	uint64_t tid;
};

struct tseq {
	uint64_t tid; /* 0: empty slot */
	uint32_t seq;
};

static struct {
	_Atomic bool on; /* writers may record (pool ready) */
	bool started;	 /* the writer thread runs (this process, not a forked child) */
	int fd;
	char path[4096];
	uint8_t *pool;
	size_t pool_bytes;
	struct buf *bufs;
	size_t nbufs;
	_Atomic uint64_t *free_bits; /* bit set: buffer free */
	size_t nwords;
	_Atomic uint64_t hint;
	_Atomic uint64_t dropped;
	pthread_key_t key;
	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	/* Under lock. */
	bool stop;
	int err;	    /* the write error that ended the session */
	int64_t want;	    /* latest time a flush was asked to reach */
	int64_t flushed_to; /* every record older than this is written */
	/* The writer's (one thread at a time: the writer, then the destructor). */
	struct rasp_nt_out out;
	uint32_t meta_id[RASP_EVENT_NDESCS], next_meta;
	struct item *items;
	size_t cap_items;
	struct tseq *seqs; /* open addressing, power-of-two size */
	size_t cap_seqs, nseqs;
	uint8_t block[BUF_SIZE + 256];
} S = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct {
	struct buf *buf;
	uint64_t tid;
	int64_t last_ts;
	uint32_t seq;
	bool keyed;
} tls TLS_MODEL;

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static uint8_t *buf_data(const struct buf *b)
{
	return S.pool + (size_t)(b - S.bufs) * BUF_SIZE;
}

/* ---- the emitting threads ------------------------------------------------------------------ */

static struct buf *acquire(void)
{
	size_t start = (size_t)atomic_fetch_add_explicit(&S.hint, 1, memory_order_relaxed);

	for (size_t k = 0; k < S.nwords; k++) {
		_Atomic uint64_t *w = &S.free_bits[(start + k) % S.nwords];
		uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

		/* Bounded: a failed exchange means another thread took or freed a buffer. */
		for (int tries = 0; v && tries < 64; tries++) {
			uint64_t bit = v & -v;

			if (atomic_compare_exchange_weak_explicit(w, &v, v & ~bit,
								  memory_order_acquire,
								  memory_order_relaxed)) {
				struct buf *b = &S.bufs[(size_t)(w - S.free_bits) * 64 +
							(size_t)__builtin_ctzll(bit)];

				atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
				atomic_store_explicit(&b->pending, 0, memory_order_relaxed);
				b->tid = tls.tid;
				atomic_store_explicit(&b->state, B_OWNED, memory_order_release);
				return b;
			}
		}
	}
	return NULL;
}

static void seal(struct buf *b)
{
	atomic_store_explicit(&b->pending, 0, memory_order_release);
	atomic_store_explicit(&b->state, B_SEALED, memory_order_release);
}

/* Thread exit: the buffer goes back once written out. */
static void thread_exit(void *arg)
{
	(void)arg;
	if (tls.buf) {
		seal(tls.buf);
		tls.buf = NULL;
	}
	tls.keyed = false; /* a later event (another destructor) registers again */
}

/* Writes one record in b: 1, or 0 when it does not fit. */
static int put_record(struct buf *b, unsigned desc, const union rasp_nt_value *vals, uint32_t seq)
{
	uint32_t used = atomic_load_explicit(&b->committed, memory_order_relaxed);
	struct rec *r = (struct rec *)(buf_data(b) + used);
	size_t n = 0;
	int64_t ts;

	/* Publish a bound below the timestamp about to be taken, and make it visible before
	 * taking it (the writer reads the clock, then the bounds: see the top of the file). */
	atomic_store_explicit(&b->pending, tls.last_ts ? tls.last_ts : 1, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	ts = now_ns();
	if (BUF_SIZE - used > sizeof(*r))
		n = rasp_nt_encode_payload(&rasp_event_descs[desc], vals, sizeof(void *),
					   (uint8_t *)(r + 1), BUF_SIZE - used - sizeof(*r));
	if (!n && rasp_event_descs[desc].nfields)
		return 0;
	/* BUF_SIZE and used are multiples of 8, so the rounded size still fits. */
	r->size = (uint32_t)((sizeof(*r) + n + 7) & ~(size_t)7);
	r->payload = (uint32_t)n;
	r->seq = seq;
	r->desc = desc;
	r->ts = ts;
	atomic_store_explicit(&b->committed, used + r->size, memory_order_release);
	atomic_store_explicit(&b->pending, 0, memory_order_release);
	tls.last_ts = ts;
	return 1;
}

void rasp__ep_write(unsigned desc, const union rasp_nt_value *vals)
{
	struct buf *b, *next;
	uint32_t seq;

	if (!atomic_load_explicit(&S.on, memory_order_acquire) || desc >= RASP_EVENT_NDESCS)
		return;
	if (!tls.tid)
		tls.tid = (uint64_t)gettid();
	if (!tls.keyed) {
		pthread_setspecific(S.key, &tls); /* non-NULL: the exit destructor runs */
		tls.keyed = true;
	}
	seq = ++tls.seq; /* dropped or not: a gap is how readers learn of a loss */
	b = tls.buf;
	if (!b && !(b = tls.buf = acquire()))
		goto drop;
	if (put_record(b, desc, vals, seq))
		return;
	if (atomic_load_explicit(&b->committed, memory_order_relaxed) == 0)
		goto drop_pending; /* larger than a whole buffer */
	/* Full: the next buffer first, then this one sealed, so a bound is published on one of
	 * them at every moment of the switch. */
	next = acquire();
	if (!next)
		goto drop_pending;
	tls.buf = next;
	if (!put_record(next, desc, vals, seq)) {
		seal(b);
		goto drop_pending;
	}
	seal(b);
	return;
drop_pending:
	atomic_store_explicit(&b->pending, 0, memory_order_release);
drop:
	atomic_fetch_add_explicit(&S.dropped, 1, memory_order_relaxed);
}

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

/* Each thread's last sequence number written since the last sequence point. */
static int note_seq(uint64_t tid, uint32_t seq)
{
	size_t i;

	if (2 * (S.nseqs + 1) > S.cap_seqs) {
		size_t cap = S.cap_seqs ? 2 * S.cap_seqs : 64;
		struct tseq *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (size_t k = 0; k < S.cap_seqs; k++)
			if (S.seqs[k].tid) {
				for (i = S.seqs[k].tid & (cap - 1); t[i].tid; i = (i + 1) & (cap - 1))
					;
				t[i] = S.seqs[k];
			}
		free(S.seqs);
		S.seqs = t;
		S.cap_seqs = cap;
	}
	for (i = tid & (S.cap_seqs - 1); S.seqs[i].tid && S.seqs[i].tid != tid;
	     i = (i + 1) & (S.cap_seqs - 1))
		;
	if (!S.seqs[i].tid) {
		S.seqs[i].tid = tid;
		S.nseqs++;
	}
	S.seqs[i].seq = seq;
	return 0;
}

static int write_metadata(unsigned desc, uint64_t tid, int64_t ts)
{
	uint8_t rec[1024], blk[1200];
	struct rasp_nt_block b;
	const struct rasp_event_desc *d = &rasp_event_descs[desc];
	/* .NET's own events go out as its runtime writes them (no name, no fields); rasp's own
	 * carry their names and fields so that any reader decodes them. */
	bool described = strcmp(d->provider, "Microsoft-Windows-DotNETRuntime") != 0;
	size_t n = rasp_nt_encode_metadata(S.next_meta + 1, d, described, rec, sizeof(rec));

	if (!n)
		return -EOVERFLOW;
	rasp_nt_block_init(&b, blk, sizeof(blk));
	if (rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.tid = tid, .ts = ts, .sorted = true}, rec,
			      n) != 0)
		return -EOVERFLOW;
	rasp_nt_block_finish(&b);
	S.meta_id[desc] = ++S.next_meta;
	return rasp_nt_write_block(&S.out, "MetadataBlock", b.buf, b.len);
}

static int write_block(struct rasp_nt_block *b)
{
	rasp_nt_block_finish(b);
	return rasp_nt_write_block(&S.out, "EventBlock", b->buf, b->len);
}

static int write_sequence_point(int64_t ts)
{
	uint64_t *tids = malloc(S.nseqs * sizeof(*tids) + 1);
	uint32_t *seqs = malloc(S.nseqs * sizeof(*seqs) + 1);
	size_t n = 0, len, cap = 12 + 12 * S.nseqs;
	uint8_t *out = malloc(cap);
	int rc = -ENOMEM;

	if (tids && seqs && out) {
		for (size_t k = 0; k < S.cap_seqs; k++)
			if (S.seqs[k].tid) {
				tids[n] = S.seqs[k].tid;
				seqs[n++] = S.seqs[k].seq;
			}
		len = rasp_nt_encode_sp(ts, tids, seqs, n, out, cap);
		rc = len ? rasp_nt_write_block(&S.out, "SPBlock", out, len) : -EOVERFLOW;
		memset(S.seqs, 0, S.cap_seqs * sizeof(*S.seqs));
		S.nseqs = 0;
	}
	free(tids);
	free(seqs);
	free(out);
	return rc;
}

/* Writes out every complete record older than the cut, in time order. Returns the cut (every
 * record older than it is now written) and sets *rc. */
static int64_t flush(bool final, int *rc)
{
	struct rasp_nt_block b;
	int64_t cut = now_ns();
	size_t n = 0;

	*rc = 0;
	atomic_thread_fence(memory_order_seq_cst);
	if (final)
		cut = INT64_MAX;
	else
		for (size_t i = 0; i < S.nbufs; i++) {
			int64_t p = atomic_load_explicit(&S.bufs[i].pending, memory_order_seq_cst);

			if (p && p < cut)
				cut = p;
		}
	for (size_t i = 0; i < S.nbufs; i++) {
		struct buf *bf = &S.bufs[i];
		uint32_t end, off;

		bf->scan_state = atomic_load_explicit(&bf->state, memory_order_acquire);
		if (bf->scan_state == B_FREE)
			continue;
		end = atomic_load_explicit(&bf->committed, memory_order_acquire);
		for (off = bf->consumed; off < end;) {
			const struct rec *r = (const struct rec *)(buf_data(bf) + off);

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
			bf->scan_state = B_OWNED;
	}
	if (*rc)
		return INT64_MIN;
	qsort(S.items, n, sizeof(*S.items), cmp_item);

	rasp_nt_block_init(&b, S.block, sizeof(S.block));
	for (size_t k = 0; k < n && !*rc; k++) {
		const struct rec *r = S.items[k].r;
		struct rasp_nt_hdr h = {.seq = r->seq,
					.tid = S.items[k].tid,
					.capture = S.items[k].tid,
					.ts = r->ts,
					.sorted = true};

		if (!S.meta_id[r->desc] && (*rc = write_metadata(r->desc, h.tid, h.ts)) != 0)
			break;
		h.meta = S.meta_id[r->desc];
		if (rasp_nt_block_add(&b, &h, r + 1, r->payload) == -ENOSPC) {
			if ((*rc = write_block(&b)) != 0)
				break;
			rasp_nt_block_init(&b, S.block, sizeof(S.block));
			if (rasp_nt_block_add(&b, &h, r + 1, r->payload) != 0) {
				*rc = -EOVERFLOW;
				break;
			}
		}
		if (note_seq(h.tid, h.seq) != 0)
			*rc = -ENOMEM;
	}
	if (!*rc && b.events)
		*rc = write_block(&b);
	if (!*rc && n)
		*rc = write_sequence_point(S.items[n - 1].r->ts);
	if (*rc)
		return INT64_MIN;

	for (size_t i = 0; i < S.nbufs; i++) {
		struct buf *bf = &S.bufs[i];

		if (bf->scan_state == B_FREE)
			continue;
		bf->consumed = bf->scan_end;
		if (bf->scan_state == B_SEALED) {
			bf->consumed = 0;
			atomic_store_explicit(&bf->state, B_FREE, memory_order_relaxed);
			atomic_fetch_or_explicit(&S.free_bits[i / 64], UINT64_C(1) << (i % 64),
						 memory_order_release);
		}
	}
	return cut;
}

/* The session ends on a write error: once, on stderr; the program goes on. */
static void fail(int rc)
{
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	atomic_store_explicit(&S.on, false, memory_order_relaxed);
	fprintf(stderr, "rasp: EventPipe: writing '%s' failed (%s); the trace stops here\n",
		S.path, strerror(-rc));
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
	pthread_mutex_unlock(&S.lock);
	if (S.err)
		fail(S.err);
	return NULL;
}

int rasp_events_flush(void)
{
	struct timespec t;
	int64_t at = now_ns();
	int rc = 0;

	if (!S.started)
		return -ENODEV;
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
	atomic_store_explicit(&S.on, false, memory_order_relaxed);
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
	struct rasp_nt_trace_header h = {.frequency = 1000000000,
					 .pointer_size = sizeof(void *),
					 .pid = (uint32_t)getpid()};
	struct timespec mono, real;
	pthread_condattr_t ca;
	pthread_attr_t attr;
	sigset_t all, old;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	snprintf(S.path, sizeof(S.path), "%s", c->path);
	S.nbufs = (size_t)(c->buffer_bytes / BUF_SIZE);
	S.nwords = (S.nbufs + 63) / 64;
	S.pool_bytes = S.nbufs * BUF_SIZE;
	/* Untouched pages cost nothing: only buffers in use become resident. */
	S.pool = mmap(NULL, S.pool_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	S.bufs = calloc(S.nbufs, sizeof(*S.bufs));
	S.free_bits = calloc(S.nwords, sizeof(*S.free_bits));
	if (S.pool == MAP_FAILED || !S.bufs || !S.free_bits)
		return -ENOMEM;
	for (size_t i = 0; i < S.nbufs; i++)
		atomic_fetch_or(&S.free_bits[i / 64], UINT64_C(1) << (i % 64));
	if (pthread_key_create(&S.key, thread_exit) != 0)
		return -EAGAIN;

	S.fd = open(S.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (S.fd < 0)
		return -errno;
	S.out = (struct rasp_nt_out){.write = fd_write, .ctx = &S.fd};
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
	atomic_store_explicit(&S.on, true, memory_order_release);
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
		fprintf(stderr, "rasp: EventPipe: cannot start the session writing '%s' (%s); "
				"no EventPipe trace\n",
			c.path, strerror(-rc));
		if (S.fd >= 0)
			close(S.fd);
		S.fd = -1;
	}
}

__attribute__((destructor)) static void rasp__ep_fini(void)
{
	int rc = 0;

	if (!S.started)
		return;
	atomic_store_explicit(&rasp__ep_mask, 0, memory_order_relaxed);
	pthread_mutex_lock(&S.lock);
	S.stop = true;
	pthread_cond_signal(&S.wake);
	pthread_mutex_unlock(&S.lock);
	pthread_join(S.writer, NULL);
	atomic_store_explicit(&S.on, false, memory_order_relaxed);
	if (!S.err) {
		flush(true, &rc);
		if (!rc)
			rc = rasp_nt_write_end(&S.out);
		if (rc)
			fail(rc);
	}
	close(S.fd);
	S.started = false;
}
