/* The runtime's EventPipe session, inside (not for other files): the per-thread buffers the
 * emitting threads write records into (eventpipe-buffers.c) and the writer thread reads from
 * (eventpipe.c). The protocol between them is described at the top of eventpipe.c. */
#ifndef RASP_EVENTS_EVENTPIPE_BUFFERS_H
#define RASP_EVENTS_EVENTPIPE_BUFFERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "eventpipe.h"
#include "rasp/rasp.h" /* RASP_MAX_STACK_DEPTH */
#include "rasp-event-desc.h"

/* Small buffers, many of them: a thread holds one at a time, so the pool serves many threads,
 * and the writer frees each soon. A record (a type name of up to ~8,000 characters) fits. */
#define RASP__EP_BUF_SIZE ((uint32_t)16 << 10)
/* Frames of an event's stack kept at most (the runtime captures up to RASP_MAX_STACK_DEPTH). */
#define RASP_EVENT_MAX_FRAMES RASP_MAX_STACK_DEPTH

/* A record that carries no event: its thread's sequence number, for the sequence point. */
#define RASP__EP_MARKER RASP_EVENT_NDESCS

enum { RASP__EP_FREE, RASP__EP_OWNED, RASP__EP_SEALED };

struct rasp__ep_buf {
	_Atomic int state;
	_Atomic uint32_t committed; /* bytes of complete records */
	/* While the owner writes a record: a lower bound of its timestamp (never 0); else 0. */
	_Atomic int64_t pending;
	uint64_t tid;	   /* the owner's; set before state becomes OWNED */
	uint32_t consumed; /* writer only: bytes written out */
	uint32_t scan_end; /* writer only: where this flush stops */
	int scan_state;	   /* writer only */
};

/* A record in a buffer: this header, then the encoded payload; 8-byte aligned. */
struct rasp__ep_rec {
	uint32_t size; /* header, payload and stack, rounded up to 8 */
	uint32_t payload;
	uint32_t seq;
	uint32_t desc;
	int64_t ts;
	uint32_t nframes; /* the event's stack: 64-bit instruction pointers after the payload */
	/* The session epoch the thread wrote it in (rasp__ep_epoch): a session started in epoch
	 * e takes records of epochs e and later. A thread's first record of an epoch is
	 * numbered one past its previous number (losses just before it show after it). */
	uint32_t epoch;
};

/* The stack of a record: after its payload, 8-byte aligned. */
static inline const uint64_t *rasp__ep_rec_frames(const struct rasp__ep_rec *r)
{
	return (const uint64_t *)((const uint8_t *)(r + 1) + ((r->payload + 7) & ~(uint32_t)7));
}

struct rasp__ep_pool {
	_Atomic bool on; /* threads may record (the pool is ready, the session runs) */
	uint8_t *mem;
	struct rasp__ep_buf *bufs;
	size_t nbufs;
	_Atomic uint64_t *free_bits; /* bit set: buffer free */
	size_t nwords;
	/* Free buffers, and how many of them only a thread's first event may take: its number
	 * starts the thread for readers, so losing it would hide the thread's losses from
	 * TraceEvent (which takes a thread first seen in a sequence point as new). */
	_Atomic int64_t nfree;
	int64_t reserve;
	_Atomic uint64_t hint;
	_Atomic uint64_t dropped;
	pthread_key_t key;
};

extern struct rasp__ep_pool rasp__ep_pool;

static inline int64_t rasp__ep_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline uint8_t *rasp__ep_buf_data(const struct rasp__ep_buf *b)
{
	return rasp__ep_pool.mem + (size_t)(b - rasp__ep_pool.bufs) * RASP__EP_BUF_SIZE;
}

/* eventpipe-buffers.c */
/* Maps the pool (bytes of buffers) and sets the exit hook of threads; 0 or -errno. */
int rasp__ep_pool_init(uint64_t bytes);
/* Gives a written-out sealed buffer back (the writer). */
void rasp__ep_pool_release(size_t i);
/* The calling thread's final sequence number, when its last events were lost. */
void rasp__ep_mark_tail(void);

#endif /* RASP_EVENTS_EVENTPIPE_BUFFERS_H */
