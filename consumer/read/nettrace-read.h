/* Reading EventPipe .nettrace files (NetTrace V4, V5 and V6; docs/eventpipe.md): a pull
 * reader that hands out events in timestamp order, with the losses its sequence numbers show,
 * and payload decoding through the generated event descriptors. No babeltrace2 types: the
 * source component (source-nettrace.c) and the tests drive it. Every byte goes through the
 * bounds-checked cursor; a malformed file gives an error naming the file and the offset, a
 * file cut short reads to its last complete block and says it is incomplete. Memory follows
 * what the reader keeps, within limits a file cannot pass (struct rasp_nt_limits). */
#ifndef RASP_CONSUMER_NETTRACE_READ_H
#define RASP_CONSUMER_NETTRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nettrace-format.h"
#include "nettrace-payload.h" /* rasp_nt_decode: what a reader's events are decoded by */
#include "rasp-event-desc.h"

struct rasp_nt_info {
	int format;	       /* 4: the V4 container (also "V5"), 6: V6 */
	uint32_t pointer_size; /* 4 or 8 */
	int64_t pid;	       /* the traced process (V6: ProcessId key, -1 if absent) */
	int64_t sync_ticks;    /* clock value at sync_utc_ns */
	int64_t frequency;     /* clock ticks per second */
	int64_t sync_utc_ns;   /* the sync time, ns since the Unix epoch */
	uint32_t processors;
};

struct rasp_nt_meta {
	uint32_t id;
	char *provider; /* UTF-8 */
	char *name;	/* UTF-8, often empty (runtime events) */
	uint32_t event_id, version, level;
	uint64_t keywords;
	const struct rasp_event_desc
	    *desc; /* the known layout (highest version <= this), or NULL */
};

struct rasp_nt_event {
	const struct rasp_nt_meta *meta;
	int64_t timestamp;	/* clock ticks */
	uint64_t thread_id;	/* OS thread id */
	int64_t pid;		/* the process (V6: the thread's, else the trace's) */
	uint32_t sequence;	/* per capture thread */
	const uint64_t *stack;	/* instruction pointers, leaf first; NULL: none */
	size_t stack_len;	/* at most the limit kept_frames */
	uint32_t stack_dropped; /* frames of the file's stack past those (the outermost) */
	const uint8_t *payload;
	size_t payload_len;
	uint64_t offset; /* file offset of the event, for messages */
};

enum rasp_nt_item_kind {
	RASP_NT_ITEM_EVENT = 1,
	RASP_NT_ITEM_LOST = 2, /* events the sequence numbers say were dropped */
};

struct rasp_nt_item {
	enum rasp_nt_item_kind kind;
	struct rasp_nt_event event; /* RASP_NT_ITEM_EVENT: valid until the next call */
	uint64_t lost;		    /* RASP_NT_ITEM_LOST */
	int64_t lost_at;	    /* RASP_NT_ITEM_LOST: timestamp of the sequence point or end */
};

struct rasp_nt_reader;

/* What a file may make the reader hold or do (docs/eventpipe.md, "Limits"). A file past one
 * is refused: the read fails with a message naming the limit, its value and the offset. The
 * defaults are far above what .NET and rasp write; 0 in a field means its default. */
struct rasp_nt_limits {
	uint32_t block_bytes;	 /* one V4 object's or V6 block's content (64 MiB) */
	uint32_t event_bytes;	 /* one event's payload (1 MiB; .NET's are below 64 KiB) */
	uint32_t stack_frames;	 /* frames of one stack in a stack block (4096) */
	uint32_t kept_frames;	 /* frames kept of each stack, innermost first (100, .NET's
				    most); the rest are dropped at read, not refused */
	uint64_t stack_bytes;	 /* the stacks held, one region's and held events' (64 MiB) */
	uint64_t held_events;	 /* events held for time order at once (2^20) */
	uint64_t held_bytes;	 /* their records and payloads (256 MiB) */
	uint32_t metadata_ids;	 /* metadata ids are below this (2^20) */
	uint64_t metadata_bytes; /* the definitions held: current ones and redefined ones held
				    events still use (64 MiB) */
	uint32_t threads;	 /* capture threads with sequence numbers, and V6 threads
				    defined at once (2^22, Linux's most thread ids) */
};

/* What the reader holds now and held at most, and what it dropped: a file's cost, for tests
 * and the curious. Memory figures are the reader's own accounting (records, payloads,
 * strings and frames; not allocator overhead). */
struct rasp_nt_stats {
	uint64_t held_events, held_events_peak;
	uint64_t held_bytes, held_bytes_peak;
	uint64_t stack_bytes, stack_bytes_peak;
	uint64_t frames_read, frames_kept;	   /* over every stack of the stack blocks */
	uint64_t metadata_defined, metadata_freed; /* definitions read, and freed already */
	uint64_t metadata_bytes, metadata_bytes_peak;
	uint64_t threads, threads_peak; /* V6 threads defined and not removed */
	uint64_t capture_threads;	/* threads with sequence numbers */
};

/* The default limits. */
void rasp_nt_limits_default(struct rasp_nt_limits *l);

/* Opens a file and reads its header (and, V4, its Trace object). NULL with the reason in err
 * (the file and the offset named) when it cannot be opened or is not a NetTrace file. */
struct rasp_nt_reader *rasp_nt_open(const char *path, char *err, size_t errlen);
/* The same, within the limits l (NULL or 0 fields: the defaults). */
struct rasp_nt_reader *rasp_nt_open_limited(const char *path, const struct rasp_nt_limits *l,
					    char *err, size_t errlen);
void rasp_nt_close(struct rasp_nt_reader *r);

const struct rasp_nt_info *rasp_nt_info(const struct rasp_nt_reader *r);

/* The next item in timestamp order: 1 and *item, 0 at the end, -1 on a malformed file
 * (rasp_nt_error says where and why). */
int rasp_nt_next(struct rasp_nt_reader *r, struct rasp_nt_item *item);
const char *rasp_nt_error(const struct rasp_nt_reader *r);

/* After the end: whether the end-of-stream marker was there (else the file was cut short at
 * rasp_nt_end_offset), and how many events were read. */
bool rasp_nt_complete(const struct rasp_nt_reader *r);
uint64_t rasp_nt_end_offset(const struct rasp_nt_reader *r);
uint64_t rasp_nt_events(const struct rasp_nt_reader *r);
const struct rasp_nt_stats *rasp_nt_stats(const struct rasp_nt_reader *r);

/* Whether the file at path starts with the NetTrace magic. */
bool rasp_nt_is_nettrace(const char *path);
/* The current metadata definition of known event d read so far, or NULL: a file may declare
 * an event none of whose kind it holds (a rasp program's session declares its free events at
 * its start). */
const struct rasp_nt_meta *rasp_nt_meta_of_desc(const struct rasp_nt_reader *r,
						const struct rasp_event_desc *d);

#endif /* RASP_CONSUMER_NETTRACE_READ_H */
