/* What the NetTrace reader's files share (nettrace-read.c: containers and the public face;
 * nettrace-blocks.c: the contents of blocks; nettrace-meta.c: the trace header and metadata;
 * nettrace-state.c: the first error and the events held for time order). Not for other
 * files. */
#ifndef RASP_CONSUMER_NETTRACE_INTERNAL_H
#define RASP_CONSUMER_NETTRACE_INTERNAL_H

#include <stdio.h>

#include "cursor.h"
#include "nettrace-read.h"

/* Limits on what a file may ask for: past them it is corrupt or hostile, not big. */
#define MAX_BLOCK    (64u << 20)	 /* the runtime flushes at 100 KiB */
#define MAX_METADATA (1u << 20)		 /* metadata ids */
#define MAX_STACK    4096		 /* frames (the runtime keeps 100) */
#define MAX_QUEUE    (UINT64_C(8) << 20) /* events held for ordering before a forced release */

struct queued {
	struct rasp_nt_event ev;
	uint64_t arrival;
	uint64_t *stack;  /* owned copy */
	uint8_t *payload; /* owned copy */
};

struct thread_seq {
	uint64_t tid;
	uint32_t last; /* last sequence number seen, 0: none */
};

struct v6_thread {
	uint64_t index, tid;
	int64_t pid;
};

struct stack {
	uint32_t id;
	uint64_t *ips;
	size_t n;
};

struct rasp_nt_reader {
	FILE *f;
	char *path;
	uint64_t off; /* file offset of the next byte to read */
	struct rasp_nt_info info;
	char err[512];
	bool failed, done, complete;
	uint64_t events, arrival;

	struct rasp_nt_meta **meta; /* by id (sparse), V6 ids may be reused after a flush */
	size_t nmeta;
	/* Metadata an id no longer names: events held for time order may still point to it, so
	 * it is freed only at close. */
	struct rasp_nt_meta **retired;
	size_t nretired, capretired;

	struct stack *stacks;
	size_t nstacks, capstacks;

	struct thread_seq *seqs;
	size_t nseqs, capseqs;
	uint64_t lost; /* found since the last LOST item */
	int64_t last_ts;

	struct v6_thread *threads;
	size_t nthreads, capthreads;

	struct queued *heap; /* min-heap by (timestamp, arrival) */
	size_t nheap, capheap;
	struct queued out; /* the item handed out last (its memory lives until the next call) */
	bool have_out;
	/* Queued events up to this timestamp may go out: the newest IsSorted event's, or all
	 * (INT64_MAX) after a sequence point. */
	int64_t mark;

	uint8_t *block; /* the block being read */
	size_t capblock;
};

/* nettrace-state.c */
/* Records the first error, with the file and the offset; returns -1. */
int rasp__nt_fail(struct rasp_nt_reader *r, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Holds an event for time order (q's memory is the reader's from then on); 0 or -1. */
int rasp__nt_queue(struct rasp_nt_reader *r, struct queued *q);
/* The oldest held event (there must be one). */
struct queued rasp__nt_dequeue(struct rasp_nt_reader *r);
void rasp__nt_queued_free(struct queued *q);

/* nettrace-meta.c: the trace header and metadata; 0 or -1 (failed). */
int rasp__nt_trace_header(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_v4_metadata(struct rasp_nt_reader *r, const uint8_t *p, size_t len, uint64_t at);
int rasp__nt_v6_metadata_row(struct rasp_nt_reader *r, struct rasp_cursor *c);
const struct rasp_nt_meta *rasp__nt_meta_get(const struct rasp_nt_reader *r, uint32_t id);
void rasp__nt_meta_free(struct rasp_nt_meta *m);
/* A V6 string (varuint32 length + UTF-8) as fresh valid UTF-8; NULL when cut short. */
char *rasp__nt_utf8v(struct rasp_cursor *c);

/* nettrace-blocks.c: each parses one block's content at the cursor; 0 or -1 (failed). */
int rasp__nt_event_block(struct rasp_nt_reader *r, struct rasp_cursor *c, bool metadata);
int rasp__nt_stack_block(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_sequence_point(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_v6_threads(struct rasp_nt_reader *r, struct rasp_cursor *c);
int rasp__nt_v6_remove_threads(struct rasp_nt_reader *r, struct rasp_cursor *c);
void rasp__nt_stacks_clear(struct rasp_nt_reader *r);

#endif /* RASP_CONSUMER_NETTRACE_INTERNAL_H */
