/* The emitting side of the runtime's EventPipe session (eventpipe.c has the protocol): each
 * thread writes records into a 16 KiB buffer it owns, taken from the pool with one
 * compare-and-swap; a full buffer is sealed and the next taken; no lock, no system call (the
 * clock is the vDSO, gettid is called once per thread). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "eventpipe-buffers.h"
#include "eventpipe.h"
#include "nettrace-write.h"

/* Attempts (10 ms apart) to find a buffer for a marker at thread exit: up to 2 s while the
 * pool stays full (only when the thread's last events were dropped). At 200 ms, eight threads
 * dropping into a 1 MB pool under ASan on a loaded machine exited before the writer freed a
 * buffer, and their trailing losses went uncounted (test-eventpipe's drops_are_losses). */
#define MARKER_TRIES 200
#define TLS_MODEL    __attribute__((tls_model("initial-exec")))

struct rasp__ep_pool rasp__ep_pool;
_Atomic uint32_t rasp__ep_epoch;
#define P rasp__ep_pool

static __thread struct {
	struct rasp__ep_buf *buf;
	uint64_t tid;
	int64_t last_ts;
	uint32_t seq;
	uint32_t epoch; /* of the thread's records */
	uint32_t pin;	/* the epoch its records take, when pinned (rasp__ep_pin_epoch) */
	bool pinned;
	bool keyed;
	bool lost_tail;	    /* events dropped since the last one recorded */
	bool recorded;	    /* the thread has recorded an event */
	uint32_t head_lost; /* dropped before its first recorded event */
	/* A ClrStackWalk's frames, for the thread's next event (EventPipe carries stacks with
	 * their events, not as events). */
	uint32_t nframes;
	uint64_t frames[RASP_EVENT_MAX_FRAMES];
} tls TLS_MODEL;

static struct rasp__ep_buf *acquire(void)
{
	size_t start;

	/* Past the reserve only for a thread's first event (a race may lend one more). */
	if (tls.recorded && atomic_load_explicit(&P.nfree, memory_order_relaxed) <= P.reserve)
		return NULL;
	start = (size_t)atomic_fetch_add_explicit(&P.hint, 1, memory_order_relaxed);

	for (size_t k = 0; k < P.nwords; k++) {
		_Atomic uint64_t *w = &P.free_bits[(start + k) % P.nwords];
		uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

		/* Bounded: a failed exchange means another thread took or freed a buffer. */
		for (int tries = 0; v && tries < 64; tries++) {
			uint64_t bit = v & -v;

			if (atomic_compare_exchange_weak_explicit(
				w, &v, v & ~bit, memory_order_acquire, memory_order_relaxed)) {
				struct rasp__ep_buf *b = &P.bufs[(size_t)(w - P.free_bits) * 64 +
								 (size_t)__builtin_ctzll(bit)];

				atomic_fetch_sub_explicit(&P.nfree, 1, memory_order_relaxed);
				atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
				atomic_store_explicit(&b->pending, 0, memory_order_relaxed);
				b->tid = tls.tid;
				atomic_store_explicit(&b->state, RASP__EP_OWNED,
						      memory_order_release);
				return b;
			}
		}
	}
	return NULL;
}

static void seal(struct rasp__ep_buf *b)
{
	atomic_store_explicit(&b->pending, 0, memory_order_release);
	atomic_store_explicit(&b->state, RASP__EP_SEALED, memory_order_release);
}

/* Thread exit: the buffer goes back once written out. */
static void thread_exit(void *arg)
{
	(void)arg;
	rasp__ep_mark_tail();
	if (tls.buf) {
		seal(tls.buf);
		tls.buf = NULL;
	}
	tls.keyed = false; /* a later event (another destructor) registers again */
}

/* Writes one record in b: 1, or 0 when it does not fit. */
static int put_record(struct rasp__ep_buf *b, unsigned desc, const union rasp_nt_value *vals,
		      uint32_t seq)
{
	uint32_t used = atomic_load_explicit(&b->committed, memory_order_relaxed);
	struct rasp__ep_rec *r = (struct rasp__ep_rec *)(rasp__ep_buf_data(b) + used);
	size_t n = 0;
	int64_t ts;

	/* Publish a bound below the timestamp about to be taken, and make it visible before
	 * taking it (the writer reads the clock, then the bounds: see the top of the file). */
	atomic_store_explicit(&b->pending, tls.last_ts ? tls.last_ts : 1, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
	ts = rasp__ep_now();
	if (RASP__EP_BUF_SIZE - used < sizeof(*r))
		return 0;
	if (desc != RASP__EP_MARKER) {
		n = rasp_nt_encode_payload(&rasp_event_descs[desc], vals, sizeof(void *),
					   (uint8_t *)(r + 1),
					   RASP__EP_BUF_SIZE - used - sizeof(*r));
		if (!n && rasp_event_descs[desc].nfields)
			return 0;
	}
	/* The stack after the payload, 8-byte aligned; RASP__EP_BUF_SIZE and used are
	 * multiples of 8, so the rounded size still fits when it does. */
	r->nframes = desc == RASP__EP_MARKER ? 0 : tls.nframes;
	r->payload = (uint32_t)n;
	r->size = (uint32_t)(sizeof(*r) + ((n + 7) & ~(size_t)7) + 8 * (size_t)r->nframes);
	if (r->size > RASP__EP_BUF_SIZE - used)
		return 0;
	memcpy((uint8_t *)(r + 1) + ((n + 7) & ~(size_t)7), tls.frames, 8 * (size_t)r->nframes);
	r->seq = seq;
	r->desc = desc;
	r->ts = ts;
	r->epoch = tls.epoch;
	atomic_store_explicit(&b->committed, used + r->size, memory_order_release);
	atomic_store_explicit(&b->pending, 0, memory_order_release);
	tls.last_ts = ts;
	tls.lost_tail = false;
	if (desc != RASP__EP_MARKER)
		tls.nframes = 0;
	return 1;
}

/* Records in the thread's buffer, or the next one when it is full: 1, or 0 (not recorded). */
static int record(unsigned desc, const union rasp_nt_value *vals, uint32_t seq)
{
	struct rasp__ep_buf *b = tls.buf, *next;

	if (!b && !(b = tls.buf = acquire()))
		return 0;
	if (put_record(b, desc, vals, seq))
		return 1;
	if (atomic_load_explicit(&b->committed, memory_order_relaxed) == 0)
		goto fail; /* larger than a whole buffer */
	/* Full: the next buffer first, then this one sealed, so a bound is published on one of
	 * them at every moment of the switch. */
	next = acquire();
	if (!next)
		goto fail;
	tls.buf = next;
	if (!put_record(next, desc, vals, seq)) {
		seal(b);
		b = next;
		goto fail;
	}
	seal(b);
	return 1;
fail:
	atomic_store_explicit(&b->pending, 0, memory_order_release);
	return 0;
}

uint32_t rasp__ep_pin_epoch(void)
{
	/* Acquire: a session's start stores its events in the mask before its epoch, so a reader
	 * of the new epoch reads the new mask after this (runtime/sample.c relies on it). */
	tls.pin = atomic_load_explicit(&rasp__ep_epoch, memory_order_acquire);
	tls.pinned = true;
	return tls.pin;
}

void rasp__ep_write(unsigned desc, const union rasp_nt_value *vals)
{
	if (!atomic_load_explicit(&P.on, memory_order_acquire) || desc >= RASP_EVENT_NDESCS)
		return;
	if (!tls.tid)
		tls.tid = (uint64_t)gettid();
	if (!tls.keyed) {
		pthread_setspecific(P.key, &tls); /* non-NULL: the exit destructor runs */
		tls.keyed = true;
	}
	if (desc == RASP_DESC_DOTNETRUNTIME_CLRSTACKWALK) {
		/* Not an event here: the frames of the thread's next one (FrameCount, Stack). */
		uint32_t n = (uint32_t)vals[3].u;
		const uintptr_t *f = vals[4].p;

		tls.nframes = n < RASP_EVENT_MAX_FRAMES ? n : RASP_EVENT_MAX_FRAMES;
		for (uint32_t i = 0; i < tls.nframes; i++)
			tls.frames[i] = f[i];
		return;
	}
	{
		uint32_t e = tls.pinned
				 ? tls.pin
				 : atomic_load_explicit(&rasp__ep_epoch, memory_order_relaxed);

		/* A session started: this thread's next record starts it for that session. */
		if (__builtin_expect(e != tls.epoch, 0)) {
			tls.epoch = e;
			tls.recorded = false;
		}
	}
	if (__builtin_expect(!tls.recorded, 0)) {
		/* Readers take a thread's first number as its start (TraceEvent: a thread id
		 * reused), so a gap before it would go uncounted: the first recorded event (of the
		 * process, or of an epoch) gets the number after the last and the losses before it
		 * show as a gap after it. */
		if (!record(desc, vals, tls.seq + 1)) {
			tls.head_lost++;
			atomic_fetch_add_explicit(&P.dropped, 1, memory_order_relaxed);
			return;
		}
		tls.recorded = true;
		tls.seq += 1 + tls.head_lost;
		tls.lost_tail = tls.head_lost != 0;
		tls.head_lost = 0;
		return;
	}
	/* Dropped or not, the number advances: a gap is how readers learn of a loss. */
	if (!record(desc, vals, ++tls.seq)) {
		tls.lost_tail = true;
		atomic_fetch_add_explicit(&P.dropped, 1, memory_order_relaxed);
	}
}

/* The calling thread's final sequence number, when its last events were lost (a thread that
 * recorded nothing shows its losses to rasp's reader only: TraceEvent takes a thread first
 * seen in a sequence point as new). */
void rasp__ep_mark_tail(void)
{
	if (!tls.recorded && tls.head_lost) {
		tls.seq += tls.head_lost;
		tls.head_lost = 0;
		tls.lost_tail = true;
	}
	for (int i = 0; tls.lost_tail && i < MARKER_TRIES; i++) {
		if (!atomic_load_explicit(&P.on, memory_order_acquire))
			return;
		if (record(RASP__EP_MARKER, NULL, tls.seq))
			return;
		nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
	}
}

void rasp__ep_pool_release(size_t i)
{
	P.bufs[i].consumed = 0;
	atomic_store_explicit(&P.bufs[i].state, RASP__EP_FREE, memory_order_relaxed);
	atomic_fetch_add_explicit(&P.nfree, 1, memory_order_relaxed);
	atomic_fetch_or_explicit(&P.free_bits[i / 64], UINT64_C(1) << (i % 64),
				 memory_order_release);
}

int rasp__ep_pool_init(uint64_t bytes)
{
	P.nbufs = (size_t)(bytes / RASP__EP_BUF_SIZE);
	P.nwords = (P.nbufs + 63) / 64;
	/* Untouched pages cost nothing: only buffers in use become resident. */
	P.mem = mmap(NULL, P.nbufs * RASP__EP_BUF_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	P.bufs = calloc(P.nbufs, sizeof(*P.bufs));
	P.free_bits = calloc(P.nwords, sizeof(*P.free_bits));
	if (P.mem == MAP_FAILED || !P.bufs || !P.free_bits)
		return -ENOMEM;
	for (size_t i = 0; i < P.nbufs; i++)
		atomic_fetch_or(&P.free_bits[i / 64], UINT64_C(1) << (i % 64));
	atomic_init(&P.nfree, (int64_t)P.nbufs);
	P.reserve = (int64_t)P.nbufs / 4;
	return pthread_key_create(&P.key, thread_exit) == 0 ? 0 : -EAGAIN;
}
