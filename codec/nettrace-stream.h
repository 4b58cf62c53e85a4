/* A NetTrace event stream being written, for writers that hand over events in time order (the
 * runtime's EventPipe session, sink.rasp.nettrace): each descriptor's metadata record before
 * its first event, events packed into EventBlocks (compressed headers, every event marked
 * sorted), each thread's sequence numbers kept, events' stacks interned into stack blocks
 * (ids restart after every sequence point, as readers expect), and sequence points listing
 * the threads seen since the last one. Built on nettrace-write.h; owns its memory. */
#ifndef RASP_CODEC_NETTRACE_STREAM_H
#define RASP_CODEC_NETTRACE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nettrace-write.h"
#include "rasp-event-desc.h"

struct rasp_nt_thread; /* internal */
struct rasp_nt_stack;  /* internal */

struct rasp_nt_stream {
	struct rasp_nt_out *out;
	uint32_t meta_id[RASP_EVENT_NDESCS], next_meta;
	uint8_t *buf; /* the EventBlock being filled */
	size_t cap;
	struct rasp_nt_block blk;
	struct rasp_nt_thread *threads; /* open addressing by thread id */
	size_t nthreads, capthreads;
	int64_t last_ts;
	uint64_t events;
	/* The stacks of this sequence-point region: stack i has id i + 1. */
	struct rasp_nt_stack *stacks;
	size_t nstacks, capstacks, written_stacks; /* written: already in a stack block */
	uint32_t *stack_slots;			   /* open addressing: stack index + 1 */
	size_t capslots;
	uint64_t *frames; /* every stack's frames, one after the other */
	size_t nframes, capframes;
};

/* block_cap: the largest EventBlock content (the runtime's are 100 KiB at most); payloads
 * larger than block_cap - 128 are refused. 0 or -ENOMEM. */
int rasp_nt_stream_init(struct rasp_nt_stream *s, struct rasp_nt_out *out, size_t block_cap);
void rasp_nt_stream_fini(struct rasp_nt_stream *s);

/* One event of descriptor desc, encoded payload, thread tid with sequence number seq, at ts
 * (not older than the previous event's), with its call stack (nframes instruction pointers,
 * innermost first; 0: none). 0, -EINVAL (desc, order, size), -ENOMEM, or the output's
 * error. */
int rasp_nt_stream_event(struct rasp_nt_stream *s, unsigned desc, uint64_t tid, uint32_t seq,
			 int64_t ts, const void *payload, size_t len, const uint64_t *stack,
			 size_t nframes);
/* The metadata of descriptor desc, unless written already (as its first event writes it): a
 * reader then knows the event may occur, whether or not one does. 0, -EOVERFLOW or the
 * output's error. */
int rasp_nt_stream_declare(struct rasp_nt_stream *s, unsigned desc, uint64_t tid, int64_t ts);
/* A thread's sequence number without an event (events it lost last): for the next sequence
 * point. 0 or -ENOMEM. */
int rasp_nt_stream_note(struct rasp_nt_stream *s, uint64_t tid, uint32_t seq);
/* The last sequence number of tid (0 when never seen). */
uint32_t rasp_nt_stream_seq(const struct rasp_nt_stream *s, uint64_t tid);
/* Writes the pending EventBlock, then a sequence point at ts listing every thread with events
 * or notes since the last one (nothing when there is none). 0 or an error. */
int rasp_nt_stream_sequence_point(struct rasp_nt_stream *s, int64_t ts);

#endif /* RASP_CODEC_NETTRACE_STREAM_H */
