/* What the NetTrace reader's files share (nettrace-read.c: containers and the public face;
 * nettrace-blocks.c: the contents of blocks; nettrace-threads.c: the threads' tables and
 * blocks; nettrace-meta.c: the trace header and metadata;
 * nettrace-state.c, below the others: the first error, the events held for time order and the
 * references to the records they share). Metadata and stacks are reference-counted so that a
 * held event costs its payload and one record, never a copy of what it points to. Not for
 * other files. */
#ifndef RASP_CONSUMER_NETTRACE_INTERNAL_H
#define RASP_CONSUMER_NETTRACE_INTERNAL_H

#include <stdio.h>

#include "cursor.h"
#include "index.h"
#include "nettrace-read.h"

/* A metadata definition and who uses it: the id's table while the id names it, and each held
 * event of it. Freed at the last release, so a redefined id costs only while events of the
 * old definition wait to go out. */
struct meta_rec {
	struct rasp_nt_meta m; /* first: events point to it */
	uint32_t refs;
	size_t bytes;	/* counted against the metadata_bytes limit */
	char strings[]; /* the provider's and the name's, UTF-8 */
};

/* A stack as kept: the first kept_frames frames of the file's (innermost first), shared by
 * the region's stack table and each held event that uses it. */
struct stack_rec {
	uint32_t refs;
	uint32_t n;	  /* frames kept */
	uint32_t dropped; /* frames of the file's stack past them */
	uint64_t ips[];
};

/* What a stack record of n frames costs (counted against the stack_bytes limit). */
static inline size_t rasp__nt_stack_rec_bytes(uint32_t n)
{
	return sizeof(struct stack_rec) + (size_t)n * sizeof(uint64_t);
}

struct stack_ent {
	uint32_t id;
	struct stack_rec *s; /* NULL: a stack of no frames */
};

struct queued {
	struct rasp_nt_event ev; /* .meta is a meta_rec's, .stack a stack_rec's (a reference) */
	uint64_t arrival;
	struct stack_rec *stack; /* a reference, or NULL */
	uint8_t *payload;	 /* owned copy, NULL when empty */
};

struct thread_seq {
	uint64_t tid;
	uint32_t last; /* last sequence number seen, 0: none */
};

struct v6_thread {
	uint64_t index, tid;
	int64_t pid;
	bool live; /* false: removed (a RemoveThread block), its slot reused if defined again */
};

/* The header state compressed event headers are relative to; reset at every block. */
struct blob_hdr {
	uint32_t meta, seq, proc, stack;
	uint64_t tid, capture;
	int64_t ts;
	uint32_t payload;
	bool sorted;
};

struct rasp_nt_reader {
	FILE *f;
	char *path;
	uint64_t off; /* file offset of the next byte to read */
	struct rasp_nt_info info;
	struct rasp_nt_limits lim;
	struct rasp_nt_stats st;
	uint64_t seed; /* of the hash tables' keys (rasp__nt_key_hash) */
	char err[512];
	bool failed, done, complete;
	uint64_t events, arrival;

	struct meta_rec **meta; /* by id (sparse); V6 ids may be redefined */
	size_t nmeta;

	/* The region's stacks (ids are scoped to a sequence-point region), hashed by id. */
	struct stack_ent *stacks;
	size_t nstacks, capstacks;
	struct rasp_index stack_ix;

	/* Sequence numbers by capture thread (OS thread id), hashed. */
	struct thread_seq *seqs;
	size_t nseqs, capseqs;
	struct rasp_index seq_ix;
	uint64_t lost; /* found since the last LOST item */
	int64_t last_ts;

	/* V6 threads by index, hashed; removed ones stay as dead slots until compacted. */
	struct v6_thread *threads;
	size_t nthreads, capthreads, deadthreads;
	struct rasp_index thread_ix;

	struct queued *heap; /* min-heap by (timestamp, arrival) */
	size_t nheap, capheap;
	uint64_t held_payload; /* payload bytes of the held events */
	uint64_t region_at;    /* offset of the first block since the last release point */
	struct queued out;     /* the item handed out last (its memory lives until the next call) */
	bool have_out;
	/* Queued events up to this timestamp may go out: the newest IsSorted event's, or all
	 * (INT64_MAX) after a sequence point. */
	int64_t mark;

	uint8_t *block; /* the block being read */
	size_t capblock;
	/* The event block being read, one event at a time (rasp__nt_next_event), so that events
	 * go out as soon as nothing older can follow: what is held follows the file's order, not
	 * the size of its blocks. */
	struct rasp_cursor blk;
	struct blob_hdr hdr;
	bool blk_active, blk_compressed;
};

/* nettrace-state.c */
/* Records the first error, with the file and the offset; returns -1. */
int rasp__nt_fail(struct rasp_nt_reader *r, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Holds an event for time order (q's references are the reader's from then on, also when
 * it fails: over a limit, or out of memory); 0 or -1 (failed, the offset named). */
int rasp__nt_queue(struct rasp_nt_reader *r, struct queued *q);
/* The oldest held event (there must be one). */
struct queued rasp__nt_dequeue(struct rasp_nt_reader *r);
/* Releases a held event's payload, stack and metadata. */
void rasp__nt_queued_free(struct rasp_nt_reader *r, struct queued *q);
/* Frees the held events' array once none is held (its size follows the peak). */
void rasp__nt_queue_shrink(struct rasp_nt_reader *r);
/* References to the shared records: a definition (the id's table and each held event of it)
 * and a stack (the region's table and each held event), freed at the last release. */
void rasp__nt_meta_ref(struct rasp_nt_meta *m);
void rasp__nt_meta_unref(struct rasp_nt_reader *r, const struct rasp_nt_meta *m);
void rasp__nt_stack_unref(struct rasp_nt_reader *r, struct stack_rec *s);

/* nettrace-meta.c: the trace header and metadata; 0 or -1 (failed). */
int rasp__nt_trace_header(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_v4_metadata(struct rasp_nt_reader *r, const uint8_t *p, size_t len, uint64_t at);
int rasp__nt_v6_metadata_row(struct rasp_nt_reader *r, struct rasp_cursor *c);
/* The current definition of id (a reference the caller takes with rasp__nt_meta_ref), or
 * NULL. */
struct rasp_nt_meta *rasp__nt_meta_get(const struct rasp_nt_reader *r, uint32_t id);
/* Forgets every definition (V6: a sequence point's flag 2; the end). */
void rasp__nt_meta_flush(struct rasp_nt_reader *r);
/* A V6 string (varuint32 length + UTF-8) as fresh valid UTF-8; NULL when cut short. */
char *rasp__nt_utf8v(struct rasp_cursor *c);

/* A key of the file hashed with the reader's random seed, so that no file can be made of ids
 * that collide in the tables' hash indexes (index.h). */
static inline uint64_t rasp__nt_key_hash(const struct rasp_nt_reader *r, uint64_t key)
{
	return rasp_hash_mix64(key ^ r->seed);
}

/* nettrace-threads.c: the thread blocks (0 or -1, failed), and the tables the event headers
 * and sequence points use. */
int rasp__nt_v6_threads(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_v6_remove_threads(struct rasp_nt_reader *r, struct rasp_cursor *c);
/* The sequence state of a capture thread, made at its first use; NULL (failed: over the
 * limit threads, or out of memory). */
struct thread_seq *rasp__nt_seq_of(struct rasp_nt_reader *r, uint64_t tid, uint64_t at);
/* A sequence number seen for a capture thread, a jump counted as lost events; 0 or -1. */
int rasp__nt_note_seq(struct rasp_nt_reader *r, uint64_t tid, uint32_t seq, uint64_t at);
/* A live V6 thread by its index, or NULL. */
const struct v6_thread *rasp__nt_v6_thread(const struct rasp_nt_reader *r, uint64_t index);
/* Forgets every V6 thread (a sequence point's flag 1). */
void rasp__nt_threads_flush(struct rasp_nt_reader *r);
/* The thread tables' memory, at close. */
void rasp__nt_threads_free(struct rasp_nt_reader *r);

/* nettrace-blocks.c: each parses one block's content at the cursor; 0 or -1 (failed). An
 * event block's events are left for rasp__nt_next_event. */
int rasp__nt_event_block(struct rasp_nt_reader *r, struct rasp_cursor *c, bool metadata);
/* The next event of the event block being read (blk_active): 0 (one read, or the block's end
 * reached: blk_active false) or -1 (failed). */
int rasp__nt_next_event(struct rasp_nt_reader *r);
int rasp__nt_stack_block(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_sequence_point(struct rasp_nt_reader *r, struct rasp_cursor *c);
/* Forgets the region's stacks (held events keep theirs). */
void rasp__nt_stacks_clear(struct rasp_nt_reader *r);

#endif /* RASP_CONSUMER_NETTRACE_INTERNAL_H */
