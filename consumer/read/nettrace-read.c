/* The NetTrace reader (nettrace-read.h): the V4/V5 container and V6 blocks, read a block at a
 * time and parsed through the cursor, an event block one event per step. Events go out in
 * timestamp order: within a capture thread they already are, and an IsSorted event, a sequence
 * point or the end says when nothing older can follow (TraceEvent's rule). Memory: what waits
 * until then, the region's stacks, the metadata and threads in use and one block, each within
 * a limit (rasp_nt_limits) past which a file is refused. */
#include "nettrace-read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "index.h"
#include "nettrace-format.h"
#include "nettrace-internal.h"

/* Reads exactly n bytes; 0, 1 at a clean end of file (nothing read), -1 cut short. */
static int read_exact(struct rasp_nt_reader *r, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, r->f);

	r->off += got;
	if (got == n)
		return 0;
	return got == 0 && feof(r->f) ? 1 : -1;
}

static uint8_t *block_buffer(struct rasp_nt_reader *r, size_t n)
{
	if (n > r->capblock) {
		uint8_t *b = realloc(r->block, n);

		if (!b)
			return NULL;
		r->block = b;
		r->capblock = n;
	}
	return r->block;
}

/* ---- The containers
 * ------------------------------------------------------------------------------- */

/* Reads the next V4/V5 object; processes blocks. 1 at the end marker, 0 after an object,
 * -1 on error; a file cut short ends without the marker. */
static int v4_object(struct rasp_nt_reader *r)
{
	uint8_t tag, hdr[3 * 4], end;
	uint64_t at = r->off;
	uint32_t version, namelen, size;
	char name[40];
	int rc = read_exact(r, &tag, 1);

	if (rc)
		return rc > 0 ? 2 : -1; /* no end marker */
	if (tag == RASP_NT_TAG_NULL)
		return 1;
	if (tag != RASP_NT_TAG_BEGIN_PRIVATE)
		return rasp__nt_fail(
		    r, at, "expected an object (tag 5) or the end (tag 1), found %u", tag);
	if (read_exact(r, hdr, 2) || hdr[0] != RASP_NT_TAG_BEGIN_PRIVATE ||
	    hdr[1] != RASP_NT_TAG_NULL)
		return r->failed ? -1 : feof(r->f) ? 2 : rasp__nt_fail(r, at, "bad object header");
	if (read_exact(r, hdr, 12))
		return feof(r->f) ? 2 : rasp__nt_fail(r, at, "object header cut short");
	version = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
		  (uint32_t)hdr[3] << 24;
	namelen = (uint32_t)hdr[8] | (uint32_t)hdr[9] << 8 | (uint32_t)hdr[10] << 16 |
		  (uint32_t)hdr[11] << 24;
	if (namelen > 38)
		return rasp__nt_fail(r, at + 11, "object type name of %" PRIu32 " bytes", namelen);
	if (read_exact(r, name, namelen) || read_exact(r, &end, 1))
		return feof(r->f) ? 2 : -1;
	name[namelen] = '\0';
	if (end != RASP_NT_TAG_END)
		return rasp__nt_fail(r, r->off - 1, "type of object %s not closed", name);
	if (strcmp(name, "Trace") == 0) {
		uint8_t body[48];
		struct rasp_cursor c = rasp_cursor_make(body, sizeof(body), r->off);

		if (read_exact(r, body, sizeof(body)))
			return feof(r->f) ? 2 : -1;
		if (rasp__nt_trace_header(r, &c))
			return -1;
	} else {
		bool meta = strcmp(name, "MetadataBlock") == 0,
		     stack = strcmp(name, "StackBlock") == 0;
		bool events = strcmp(name, "EventBlock") == 0, sp = strcmp(name, "SPBlock") == 0;
		uint8_t pad[3], sz[4], *buf;
		struct rasp_cursor c;

		if (!meta && !stack && !events && !sp)
			return rasp__nt_fail(r, at, "unknown object type '%s'", name);
		if (r->info.frequency == 0) /* blocks need its pointer size */
			return rasp__nt_fail(r, at, "no trace header (%s first)", name);
		if (version > 2)
			return rasp__nt_fail(r, at, "%s version %" PRIu32 " (this reader knows 2)",
					     name, version);
		if (read_exact(r, sz, 4))
			return feof(r->f) ? 2 : -1;
		size = (uint32_t)sz[0] | (uint32_t)sz[1] << 8 | (uint32_t)sz[2] << 16 |
		       (uint32_t)sz[3] << 24;
		if (size > r->lim.block_bytes)
			return rasp__nt_fail(r, r->off - 4,
					     "%s of %" PRIu32 " bytes (limit block_bytes = %" PRIu32
					     ")",
					     name, size, r->lim.block_bytes);
		/* Content is 4-byte aligned from the start of the stream. */
		if (read_exact(r, pad, (4 - r->off % 4) % 4))
			return feof(r->f) ? 2 : -1;
		buf = block_buffer(r, size ? size : 1);
		if (!buf)
			return rasp__nt_fail(r, r->off, "out of memory");
		c = rasp_cursor_make(buf, size, r->off);
		if (read_exact(r, buf, size))
			return feof(r->f) ? 2 : -1;
		rc = meta || events ? rasp__nt_event_block(r, &c, meta)
		     : stack	    ? rasp__nt_stack_block(r, &c)
				    : rasp__nt_sequence_point(r, &c);
		if (rc)
			return -1;
	}
	if (read_exact(r, &end, 1))
		return feof(r->f) ? 2 : -1;
	if (end != RASP_NT_TAG_END)
		return rasp__nt_fail(r, r->off - 1, "object %s not closed (tag %u)", name, end);
	return 0;
}

static int v6_block(struct rasp_nt_reader *r)
{
	uint8_t h[4], *buf;
	uint64_t at = r->off;
	uint32_t size, kind;
	struct rasp_cursor c;
	int rc = read_exact(r, h, 4);

	if (rc)
		return rc > 0 ? 2 : (feof(r->f) ? 2 : -1);
	size = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16;
	kind = h[3];
	if (size > r->lim.block_bytes)
		return rasp__nt_fail(r, at,
				     "block of kind %" PRIu32 " of %" PRIu32
				     " bytes (limit block_bytes = %" PRIu32 ")",
				     kind, size, r->lim.block_bytes);
	buf = block_buffer(r, size ? size : 1);
	if (!buf)
		return rasp__nt_fail(r, at, "out of memory");
	c = rasp_cursor_make(buf, size, r->off);
	if (read_exact(r, buf, size))
		return feof(r->f) ? 2 : -1;
	if (r->info.frequency == 0 && kind != RASP_NT6_TRACE) /* blocks need its pointer size */
		return rasp__nt_fail(r, at, "no trace header (a block of kind %" PRIu32 " first)",
				     kind);
	switch (kind) {
	case RASP_NT6_END:
		return 1;
	case RASP_NT6_TRACE:
		return rasp__nt_trace_header(r, &c);
	case RASP_NT6_EVENT:
	case RASP_NT6_METADATA:
		return rasp__nt_event_block(r, &c, kind == RASP_NT6_METADATA);
	case RASP_NT6_SP:
		return rasp__nt_sequence_point(r, &c);
	case RASP_NT6_STACK:
		return rasp__nt_stack_block(r, &c);
	case RASP_NT6_THREAD:
		return rasp__nt_v6_threads(r, &c);
	case RASP_NT6_REMOVE_THREAD:
		return rasp__nt_v6_remove_threads(r, &c);
	default:
		return 0; /* label lists and unknown kinds: skipped, as V6 allows */
	}
}

/* ---- The public face
 * ------------------------------------------------------------------------------ */

bool rasp_nt_is_nettrace(const char *path)
{
	FILE *f = fopen(path, "rbe");
	char magic[RASP_NT_MAGIC_LEN];
	bool yes = f && fread(magic, 1, sizeof(magic), f) == sizeof(magic) &&
		   memcmp(magic, RASP_NT_MAGIC, RASP_NT_MAGIC_LEN) == 0;

	if (f)
		fclose(f);
	return yes;
}

/* The first object (V4) or block (V6) must be the trace header: everything after it depends
 * on its pointer size and clock. */
static struct rasp_nt_reader *trace_first(struct rasp_nt_reader *r, char *err, size_t errlen)
{
	uint64_t at = r->off;
	int rc = r->info.format == 6 ? v6_block(r) : v4_object(r);

	r->region_at = r->off;
	if (rc != 0 || r->info.frequency == 0) {
		if (r->failed)
			snprintf(err, errlen, "%s", r->err);
		else
			snprintf(err, errlen, "%s: at offset %" PRIu64 ": no trace header (%s)",
				 r->path, at,
				 rc > 0 ? "the file ends first" : "another block first");
		rasp_nt_close(r);
		return NULL;
	}
	return r;
}

void rasp_nt_limits_default(struct rasp_nt_limits *l)
{
	*l = (struct rasp_nt_limits){
	    .block_bytes = UINT32_C(64) << 20,
	    .event_bytes = UINT32_C(1) << 20,
	    .stack_frames = 4096,
	    .kept_frames = 100,
	    .stack_bytes = UINT64_C(64) << 20,
	    .held_events = UINT64_C(1) << 20,
	    .held_bytes = UINT64_C(256) << 20,
	    .metadata_ids = UINT32_C(1) << 20,
	    .metadata_bytes = UINT64_C(64) << 20,
	    .threads = UINT32_C(1) << 22,
	};
}

/* The caller's limits, each 0 replaced by its default. */
static struct rasp_nt_limits limits_of(const struct rasp_nt_limits *l)
{
	struct rasp_nt_limits d, o;

	rasp_nt_limits_default(&d);
	if (!l)
		return d;
	o = *l;
#define DEFAULT(f) (o.f = o.f ? o.f : d.f)
	DEFAULT(block_bytes);
	DEFAULT(event_bytes);
	DEFAULT(stack_frames);
	DEFAULT(kept_frames);
	DEFAULT(stack_bytes);
	DEFAULT(held_events);
	DEFAULT(held_bytes);
	DEFAULT(metadata_ids);
	DEFAULT(metadata_bytes);
	DEFAULT(threads);
#undef DEFAULT
	return o;
}

struct rasp_nt_reader *rasp_nt_open(const char *path, char *err, size_t errlen)
{
	return rasp_nt_open_limited(path, NULL, err, errlen);
}

struct rasp_nt_reader *rasp_nt_open_limited(const char *path, const struct rasp_nt_limits *l,
					    char *err, size_t errlen)
{
	struct rasp_nt_reader *r = calloc(1, sizeof(*r));
	uint8_t head[RASP_NT_MAGIC_LEN + 4 + RASP_NT_FS_HEADER_LEN];

	if (!r || !(r->path = strdup(path))) {
		free(r);
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->lim = limits_of(l);
	/* Ids from the file go through the hash tables: with a seed it cannot know, it cannot
	 * choose ids that collide. The clock and an address when getrandom fails. */
	if (getrandom(&r->seed, sizeof(r->seed), GRND_NONBLOCK) != (ssize_t)sizeof(r->seed))
		r->seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)r ^ (uint64_t)clock();
	r->f = fopen(path, "rbe");
	if (!r->f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rasp_nt_close(r);
		return NULL;
	}
	r->last_ts = INT64_MIN;
	r->mark = INT64_MIN;
	if (read_exact(r, head, RASP_NT_MAGIC_LEN + 4) ||
	    memcmp(head, RASP_NT_MAGIC, RASP_NT_MAGIC_LEN) != 0) {
		snprintf(err, errlen,
			 "%s: at offset 0: not a NetTrace file (no \"Nettrace\" magic)", path);
		rasp_nt_close(r);
		return NULL;
	}
	if (!memcmp(head + RASP_NT_MAGIC_LEN, "\0\0\0\0", 4)) {
		uint8_t ver[8];

		r->info.format = 6;
		if (read_exact(r, ver, 8) || ver[0] != 6 || ver[1] | ver[2] | ver[3]) {
			snprintf(err, errlen,
				 "%s: at offset 12: NetTrace major version %u (this "
				 "reader knows 4 to 6)",
				 path, ver[0]);
			rasp_nt_close(r);
			return NULL;
		}
		return trace_first(r, err, errlen);
	}
	r->info.format = 4;
	if (memcmp(head + RASP_NT_MAGIC_LEN, "\x14\0\0\0", 4) != 0 ||
	    read_exact(r, head + 12, RASP_NT_FS_HEADER_LEN) ||
	    memcmp(head + 12, RASP_NT_FS_HEADER, RASP_NT_FS_HEADER_LEN) != 0) {
		snprintf(err, errlen, "%s: at offset 8: no FastSerialization header", path);
		rasp_nt_close(r);
		return NULL;
	}
	return trace_first(r, err, errlen);
}

void rasp_nt_close(struct rasp_nt_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	while (r->nheap) {
		struct queued q = rasp__nt_dequeue(r);

		rasp__nt_queued_free(r, &q);
	}
	free(r->heap);
	if (r->have_out)
		rasp__nt_queued_free(r, &r->out);
	rasp__nt_stacks_clear(r);
	free(r->stacks);
	rasp__nt_meta_flush(r);
	rasp__nt_threads_free(r);
	free(r->block);
	free(r->path);
	free(r);
}

const struct rasp_nt_info *rasp_nt_info(const struct rasp_nt_reader *r)
{
	return &r->info;
}

const char *rasp_nt_error(const struct rasp_nt_reader *r)
{
	return r->err;
}

bool rasp_nt_complete(const struct rasp_nt_reader *r)
{
	return r->complete;
}

uint64_t rasp_nt_end_offset(const struct rasp_nt_reader *r)
{
	return r->off;
}

uint64_t rasp_nt_events(const struct rasp_nt_reader *r)
{
	return r->events;
}

const struct rasp_nt_stats *rasp_nt_stats(const struct rasp_nt_reader *r)
{
	return &r->st;
}

int rasp_nt_next(struct rasp_nt_reader *r, struct rasp_nt_item *item)
{
	static const uint8_t empty[1];

	if (r->have_out) {
		rasp__nt_queued_free(r, &r->out);
		r->have_out = false;
	}
	for (;;) {
		int rc;

		if (r->failed)
			return -1;
		/* Ready: the oldest queued event, once nothing older can come. */
		if (r->nheap && (r->done || r->heap[0].ev.timestamp <= r->mark)) {
			r->out = rasp__nt_dequeue(r);
			r->have_out = true;
			r->out.ev.payload = r->out.payload ? r->out.payload : empty;
			r->out.ev.stack = r->out.stack ? r->out.stack->ips : NULL;
			rasp__nt_queue_shrink(r);
			*item =
			    (struct rasp_nt_item){.kind = RASP_NT_ITEM_EVENT, .event = r->out.ev};
			return 1;
		}
		/* Losses found up to here go out once the events before them have. */
		if (r->lost && (r->done || r->mark == INT64_MAX)) {
			*item = (struct rasp_nt_item){
			    .kind = RASP_NT_ITEM_LOST, .lost = r->lost, .lost_at = r->last_ts};
			r->lost = 0;
			return 1;
		}
		/* The block being read first, also after the end of a file cut short. */
		if (r->blk_active) {
			if (rasp__nt_next_event(r))
				return -1;
			continue;
		}
		if (r->done)
			return 0;
		if (r->mark == INT64_MAX)
			r->mark = INT64_MIN; /* drained: the next region starts */
		rc = r->info.format == 6 ? v6_block(r) : v4_object(r);
		if (rc < 0)
			return -1;
		if (rc >= 1) {
			r->done = true;
			r->complete = rc == 1;
		}
	}
}
