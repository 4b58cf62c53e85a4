/* Writing EventPipe .nettrace streams (NetTrace V4, as .NET runtimes write them): the
 * container (magic, FastSerialization header, Trace object, blocks framed as objects with
 * their 4-byte alignment, the end tag), and the contents of blocks (compressed event headers,
 * payloads and metadata records encoded through the generated descriptors, sequence points).
 * One encoder for the runtime's EventPipe output (eventpipe.c) and sink.rasp.nettrace. No
 * allocation, no locks: callers own the buffers; output goes through a write function. */
#ifndef RASP_CODEC_NETTRACE_WRITE_H
#define RASP_CODEC_NETTRACE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nettrace-format.h"
#include "rasp-event-desc.h"

/* Where a stream goes. `off` counts bytes since the stream's first byte (block alignment is
 * counted from it); the first write error sticks in `err` and later writes do nothing. */
struct rasp_nt_out {
	int (*write)(void *ctx, const void *buf, size_t len); /* 0 or a negative errno */
	void *ctx;
	uint64_t off;
	int err;
};

struct rasp_nt_trace_header {
	int64_t sync_utc_ns;   /* wall-clock time of sync_ticks, ns since the Unix epoch */
	int64_t sync_ticks;    /* clock value at that time */
	int64_t frequency;     /* clock ticks per second (1e9 for CLOCK_MONOTONIC ns) */
	uint32_t pointer_size; /* 8 on 64-bit */
	uint32_t pid;
	uint32_t processors;
};

/* "Nettrace", the FastSerialization header and the Trace object. */
int rasp_nt_write_header(struct rasp_nt_out *o, const struct rasp_nt_trace_header *h);
/* A block (name: MetadataBlock, StackBlock, EventBlock, SPBlock) around its content. */
int rasp_nt_write_block(struct rasp_nt_out *o, const char *name, const void *content, size_t len);
/* The end-of-stream tag. */
int rasp_nt_write_end(struct rasp_nt_out *o);

/* An event header (what compressed headers encode relative to the previous one). */
struct rasp_nt_hdr {
	uint32_t meta;	  /* metadata id, 0 in metadata blocks */
	uint32_t seq;	  /* per capture thread, from 1; 0 in metadata blocks */
	uint64_t tid;	  /* OS thread id */
	uint64_t capture; /* thread whose buffer held it: the same for rasp */
	uint32_t proc;
	uint32_t stack;
	int64_t ts;
	bool sorted; /* every later event in the stream has ts >= this one */
	uint32_t payload;
};

/* The content of an event or metadata block being built in a caller's buffer. */
struct rasp_nt_block {
	uint8_t *buf;
	size_t len, cap;
	struct rasp_nt_hdr prev; /* compressed-header state: zero at each block */
	int64_t min_ts, max_ts;
	uint32_t events;
};

/* Starts a block in buf (cap >= 64): its 20-byte header, compression on. */
void rasp_nt_block_init(struct rasp_nt_block *b, uint8_t *buf, size_t cap);
/* Appends one event; -ENOSPC (nothing written) when it does not fit. */
int rasp_nt_block_add(struct rasp_nt_block *b, const struct rasp_nt_hdr *h, const void *payload,
		      size_t len);
/* Writes the block's timestamp range into its header; the content is buf[0..len). */
void rasp_nt_block_finish(struct rasp_nt_block *b);

/* A payload by its descriptor (strings from UTF-8 to UTF-16Z): its size, or 0 when it does
 * not fit in cap. */
size_t rasp_nt_encode_payload(const struct rasp_event_desc *d, const union rasp_nt_value *vals,
			      uint32_t pointer_size, uint8_t *out, size_t cap);
/* The metadata record of event d under id: its size, or 0 when it does not fit. described:
 * with the event's name and a V1 field list, so generic readers can decode it (rasp's own
 * events); else as .NET runtimes write their native events, nameless and without fields
 * (readers know those layouts by provider, id and version). */
size_t rasp_nt_encode_metadata(uint32_t id, const struct rasp_event_desc *d, bool described,
			       uint8_t *out, size_t cap);
/* An SPBlock's content: timestamp and each thread's last sequence number; its size, or 0. */
size_t rasp_nt_encode_sp(int64_t ts, const uint64_t *tids, const uint32_t *seqs, size_t n,
			 uint8_t *out, size_t cap);

#endif /* RASP_CODEC_NETTRACE_WRITE_H */
