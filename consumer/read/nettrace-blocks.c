/* The contents of NetTrace blocks (nettrace-internal.h): stacks, event headers (compressed and
 * not, one event at a time) and sequence points with the losses their sequence numbers show
 * (the threads' tables are nettrace-threads.c's); the stacks' table, hashed and within its
 * limits. Everything reads through the cursor; the first malformed byte fails the reader with
 * its offset. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "nettrace-format.h"
#include "nettrace-internal.h"
#include "utf.h"

#define fail rasp__nt_fail

/* ---- Stacks ------------------------------------------------------------------------------------
 */

/* What a table entry costs besides its frames: the entry and up to four index slots. */
#define STACK_ENTRY_BYTES (sizeof(struct stack_ent) + 4 * sizeof(uint32_t))

static void stack_bytes_add(struct rasp_nt_reader *r, uint64_t n)
{
	r->st.stack_bytes += n;
	if (r->st.stack_bytes > r->st.stack_bytes_peak)
		r->st.stack_bytes_peak = r->st.stack_bytes;
}

void rasp__nt_stacks_clear(struct rasp_nt_reader *r)
{
	for (size_t i = 0; i < r->nstacks; i++)
		rasp__nt_stack_unref(r, r->stacks[i].s);
	r->st.stack_bytes -= r->nstacks * STACK_ENTRY_BYTES;
	r->nstacks = 0;
	rasp_index_free(&r->stack_ix);
	if (r->capstacks > 1024) { /* the table follows the region */
		free(r->stacks);
		r->stacks = NULL;
		r->capstacks = 0;
	}
}

static uint64_t stack_hash(const void *ctx, size_t i)
{
	return rasp__nt_key_hash(ctx, ((const struct rasp_nt_reader *)ctx)->stacks[i].id);
}

static int stack_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct rasp_nt_reader *)ctx)->stacks[i].id == *(const uint32_t *)key;
}

/* A stack block: each stack's first kept_frames frames are kept (once, shared by the events
 * that use it), the rest skipped. An id defined twice in a region is an error (TraceEvent's
 * too). */
int rasp__nt_stack_block(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	uint32_t first = 0, count = 0, ptr = r->info.pointer_size;

	if (!rasp_cursor_u32le(c, &first) || !rasp_cursor_u32le(c, &count))
		return fail(r, rasp_cursor_offset(c), "stack block cut short");
	for (uint32_t i = 0; i < count; i++) {
		uint64_t at = rasp_cursor_offset(c), cost;
		uint32_t size = 0, id = first + i, frames, keep;
		struct stack_rec *s = NULL;
		size_t slot;

		if (!rasp_cursor_u32le(c, &size) || size % ptr || rasp_cursor_left(c) < size)
			return fail(r, at, "bad stack %" PRIu32 " (%" PRIu32 " bytes)", id, size);
		frames = size / ptr;
		if (frames > r->lim.stack_frames)
			return fail(r, at,
				    "stack %" PRIu32 " of %" PRIu32 " frames (limit stack_frames = "
				    "%" PRIu32 ")",
				    id, frames, r->lim.stack_frames);
		if (rasp_index_reserve(&r->stack_ix, r->nstacks, stack_hash, r) ||
		    rasp_array_grow((void **)&r->stacks, &r->capstacks, r->nstacks,
				    sizeof(*r->stacks)))
			return fail(r, at, "out of memory (%zu stacks)", r->nstacks);
		if (rasp_index_find(&r->stack_ix, rasp__nt_key_hash(r, id), stack_eq, r, &id,
				    &slot) != SIZE_MAX)
			return fail(r, at,
				    "stack id %" PRIu32 " defined twice before a sequence point",
				    id);
		keep = frames < r->lim.kept_frames ? frames : r->lim.kept_frames;
		cost = STACK_ENTRY_BYTES + (keep ? rasp__nt_stack_rec_bytes(keep) : 0);
		if (r->st.stack_bytes + cost > r->lim.stack_bytes)
			return fail(r, at,
				    "stack %" PRIu32 ": the stacks held would take %" PRIu64
				    " bytes (limit stack_bytes = %" PRIu64 ")",
				    id, r->st.stack_bytes + cost, r->lim.stack_bytes);
		if (keep) {
			s = malloc(rasp__nt_stack_rec_bytes(keep));
			if (!s)
				return fail(r, at, "out of memory (%zu stacks)", r->nstacks);
			*s = (struct stack_rec){.refs = 1, .n = keep, .dropped = frames - keep};
			for (uint32_t k = 0; k < keep; k++) {
				uint32_t ip32 = 0;

				if (ptr == 8)
					rasp_cursor_u64le(c, &s->ips[k]);
				else
					rasp_cursor_u32le(c, &ip32), s->ips[k] = ip32;
			}
		}
		rasp_cursor_skip(c, (size_t)(frames - keep) * ptr);
		r->stacks[r->nstacks] = (struct stack_ent){id, s};
		rasp_index_put(&r->stack_ix, slot, r->nstacks);
		r->nstacks++;
		stack_bytes_add(r, cost);
		r->st.frames_read += frames;
		r->st.frames_kept += keep;
	}
	return 0;
}

/* The region's stack of that id; NULL when it has none, or no frames. */
static struct stack_rec *stack_get(const struct rasp_nt_reader *r, uint32_t id)
{
	size_t slot, i;

	if (!r->stack_ix.size)
		return NULL;
	i = rasp_index_find(&r->stack_ix, rasp__nt_key_hash(r, id), stack_eq, r, &id, &slot);
	return i == SIZE_MAX ? NULL : r->stacks[i].s;
}

/* ---- Events ------------------------------------------------------------------------------------
 */

/* One event of an event block: queued for ordering, or (metadata blocks) a metadata record.
 * A queued event holds a reference to its metadata and its stack, and a copy of its payload
 * only. */
static int take_event(struct rasp_nt_reader *r, const struct blob_hdr *h, const uint8_t *payload,
		      uint64_t at, bool metadata_block)
{
	struct rasp_nt_meta *m;
	struct stack_rec *st;
	struct queued q = {0};
	uint64_t capture = h->capture;

	if (metadata_block)
		return r->info.format == 4 ? rasp__nt_v4_metadata(r, payload, h->payload, at) : 0;
	m = rasp__nt_meta_get(r, h->meta);
	if (!m)
		return fail(r, at, "event of undefined metadata id %" PRIu32, h->meta);
	if (r->info.format == 6) {
		/* Sequence numbers by OS thread id, as sequence points and RemoveThread count them
		 * (V6 headers carry thread indexes). */
		const struct v6_thread *t = rasp__nt_v6_thread(r, h->capture);

		if (!t)
			return fail(r, at, "event of unknown thread index %" PRIu64, h->capture);
		capture = t->tid;
	}
	if (rasp__nt_note_seq(r, capture, h->seq, at))
		return -1;
	q.ev = (struct rasp_nt_event){.timestamp = h->ts,
				      .thread_id = h->tid,
				      .pid = r->info.pid,
				      .sequence = h->seq,
				      .payload_len = h->payload,
				      .offset = at};
	if (r->info.format == 6) {
		const struct v6_thread *t = rasp__nt_v6_thread(r, h->tid);

		if (!t)
			return fail(r, at, "event of unknown thread index %" PRIu64, h->tid);
		q.ev.thread_id = t->tid;
		q.ev.pid = t->pid >= 0 ? t->pid : r->info.pid;
	}
	if (h->payload) {
		q.payload = malloc(h->payload);
		if (!q.payload)
			return fail(r, at, "out of memory (a payload of %" PRIu32 " bytes)",
				    h->payload);
		memcpy(q.payload, payload, h->payload);
	}
	rasp__nt_meta_ref(m);
	q.ev.meta = m;
	st = h->stack ? stack_get(r, h->stack) : NULL;
	if (st) {
		st->refs++;
		q.stack = st;
		q.ev.stack_len = st->n;
		q.ev.stack_dropped = st->dropped;
	}
	q.arrival = r->arrival++;
	r->events++;
	return rasp__nt_queue(r, &q);
}

/* The blobs of an event or metadata block (the same encoding). V6 uses thread indexes and
 * a label list id where V4 has thread ids and activity GUIDs. */
static int blob(struct rasp_nt_reader *r, struct rasp_cursor *c, struct blob_hdr *hp,
		bool compressed, bool metadata)
{
	struct blob_hdr h = *hp;
	bool v6 = r->info.format == 6;

	{
		uint64_t at = rasp_cursor_offset(c);
		const uint8_t *payload;

		if (compressed) {
			uint8_t flags = 0;
			uint64_t dts = 0;

			rasp_cursor_u8(c, &flags);
			if (flags & RASP_NT_F_METADATA_ID)
				rasp_cursor_varuint32(c, &h.meta);
			if (flags & RASP_NT_F_CAPTURE_SEQ) {
				uint32_t d = 0;

				rasp_cursor_varuint32(c, &d);
				h.seq += d + 1;
				rasp_cursor_varuint64(c, &h.capture);
				rasp_cursor_varuint32(c, &h.proc);
			} else if (h.meta != 0) {
				h.seq++;
			}
			if (flags & RASP_NT_F_THREAD_ID)
				rasp_cursor_varuint64(c, &h.tid);
			if (flags & RASP_NT_F_STACK_ID)
				rasp_cursor_varuint32(c, &h.stack);
			rasp_cursor_varuint64(c, &dts);
			h.ts =
			    (int64_t)((uint64_t)h.ts + dts); /* deltas wrap: "negative" is fine */
			if (flags & RASP_NT_F_ACTIVITY_ID) {
				uint32_t label;

				if (v6)
					rasp_cursor_varuint32(c, &label);
				else
					rasp_cursor_skip(c, 16);
			}
			if (!v6 && (flags & RASP_NT_F_RELATED_ID))
				rasp_cursor_skip(c, 16);
			h.sorted = flags & RASP_NT_F_SORTED;
			if (flags & RASP_NT_F_PAYLOAD_SIZE)
				rasp_cursor_varuint32(c, &h.payload);
		} else {
			uint32_t size = 0, meta = 0, seq = 0, u32 = 0;
			uint64_t tid = 0, cap = 0, ts = 0;

			rasp_cursor_u32le(c, &size);
			rasp_cursor_u32le(c, &meta);
			rasp_cursor_u32le(c, &seq);
			rasp_cursor_u64le(c, &tid);
			rasp_cursor_u64le(c, &cap);
			rasp_cursor_u32le(c, &h.proc);
			rasp_cursor_u32le(c, &h.stack);
			rasp_cursor_u64le(c, &ts);
			rasp_cursor_skip(c, v6 ? 4 : 32); /* label list id, or two activity ids */
			rasp_cursor_u32le(c, &u32);
			h.meta = meta & 0x7fffffffu;
			h.sorted = !(meta & 0x80000000u); /* bit 31 means NOT sorted */
			h.seq = seq;
			h.tid = tid;
			h.capture = cap;
			h.ts = (int64_t)ts;
			h.payload = u32;
		}
		if (!c->failed && h.payload > r->lim.event_bytes)
			return fail(r, at,
				    "event of %" PRIu32
				    " payload bytes (limit event_bytes = %" PRIu32 ")",
				    h.payload, r->lim.event_bytes);
		payload = rasp_cursor_take(c, h.payload);
		if (c->failed || !payload)
			return fail(r, at, "event cut short (payload %" PRIu32 " bytes)",
				    h.payload);
		*hp = h;
		if (take_event(r, &h, payload, at, metadata))
			return -1;
		if (!metadata && h.sorted) {
			if (h.ts > r->mark)
				r->mark = h.ts;
			r->region_at = at;
		}
	}
	return 0;
}

int rasp__nt_next_event(struct rasp_nt_reader *r)
{
	if (!rasp_cursor_left(&r->blk)) {
		r->blk_active = false;
		return 0;
	}
	return blob(r, &r->blk, &r->hdr, r->blk_compressed, false);
}

/* Event and metadata blocks of both formats start with HeaderSize (including itself, >= 20)
 * and Flags; V6 metadata blocks instead with a u16 header size excluding itself. */
int rasp__nt_event_block(struct rasp_nt_reader *r, struct rasp_cursor *c, bool metadata)
{
	uint16_t hsize = 0, flags = 0;

	if (metadata && r->info.format == 6) {
		if (!rasp_cursor_u16le(c, &hsize) || !rasp_cursor_skip(c, hsize))
			return fail(r, rasp_cursor_offset(c), "metadata block header cut short");
		while (rasp_cursor_left(c)) {
			uint16_t row = 0;
			const uint8_t *p;
			struct rasp_cursor rc;

			if (!rasp_cursor_u16le(c, &row) || !(p = rasp_cursor_take(c, row)))
				return fail(r, rasp_cursor_offset(c), "metadata row cut short");
			rc = rasp_cursor_make(p, row, rasp_cursor_offset(c) - row);
			if (rasp__nt_v6_metadata_row(r, &rc))
				return -1;
		}
		return 0;
	}
	if (!rasp_cursor_u16le(c, &hsize) || !rasp_cursor_u16le(c, &flags) || hsize < 20 ||
	    !rasp_cursor_skip(c, hsize - 4u))
		return fail(r, rasp_cursor_offset(c), "block header size %u below 20 or cut short",
			    hsize);
	if (metadata) { /* definitions come whole: the events after them need them */
		struct blob_hdr h = {0};

		while (rasp_cursor_left(c))
			if (blob(r, c, &h, flags & 1, true))
				return -1;
		return 0;
	}
	/* Events are read one at a time, between which the reader hands out what is ready. */
	r->blk = *c;
	r->hdr = (struct blob_hdr){0};
	r->blk_compressed = flags & 1;
	r->blk_active = true;
	return 0;
}

/* A sequence point: everything queued may go out; the listed sequence numbers show losses. */
int rasp__nt_sequence_point(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	uint64_t ts = 0;
	uint32_t n = 0, flags = 0;

	rasp_cursor_u64le(c, &ts);
	if (r->info.format == 6)
		rasp_cursor_u32le(c, &flags);
	if (!rasp_cursor_u32le(c, &n))
		return fail(r, rasp_cursor_offset(c), "sequence point cut short");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t tid = 0, at = rasp_cursor_offset(c);
		uint32_t seq = 0;
		struct thread_seq *t;

		if (r->info.format == 6) {
			const struct v6_thread *th;

			rasp_cursor_varuint64(c, &tid);
			rasp_cursor_varuint32(c, &seq);
			th = rasp__nt_v6_thread(r, tid);
			tid = th ? th->tid : tid;
		} else {
			rasp_cursor_u64le(c, &tid);
			rasp_cursor_u32le(c, &seq);
		}
		if (c->failed)
			return fail(r, rasp_cursor_offset(c), "sequence point cut short");
		t = rasp__nt_seq_of(r, tid, at);
		if (!t)
			return -1;
		if (t->last && seq - t->last - 1 < UINT32_C(0x80000000) && seq != t->last) {
			r->lost += (uint32_t)(seq - t->last);
			t->last = seq;
		}
	}
	r->last_ts = (int64_t)ts;
	r->mark = INT64_MAX;
	r->region_at = c->origin;
	rasp__nt_stacks_clear(r); /* stack ids are scoped to a region (held events keep theirs) */
	if (r->info.format == 6 && (flags & 1))
		rasp__nt_threads_flush(r);
	if (r->info.format == 6 && (flags & 2))
		rasp__nt_meta_flush(r); /* held events keep their definitions */
	return 0;
}

/* A V6 string skipped: 0, or false when cut short. */
