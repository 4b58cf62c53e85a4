/* The contents of NetTrace blocks (nettrace-internal.h): stacks, V6 threads, event headers
 * (compressed and not) and sequence points with the losses their sequence numbers show. Everything
 * reads through the cursor; the first malformed byte fails the reader with its offset. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "nettrace-format.h"
#include "nettrace-internal.h"
#include "utf.h"

#define fail rasp__nt_fail

/* ---- Threads and sequence numbers ----------------------------------------------------------- */

static struct thread_seq *seq_of(struct rasp_nt_reader *r, uint64_t tid)
{
	/* Few threads per file: a linear look with the last one first would do, but a file may
	 * name many; sorted insertion keeps lookups logarithmic. */
	size_t lo = 0, hi = r->nseqs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->seqs[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nseqs && r->seqs[lo].tid == tid)
		return &r->seqs[lo];
	if (rasp_array_grow((void **)&r->seqs, &r->capseqs, r->nseqs, sizeof(*r->seqs)))
		return NULL;
	memmove(&r->seqs[lo + 1], &r->seqs[lo], (r->nseqs - lo) * sizeof(*r->seqs));
	r->nseqs++;
	r->seqs[lo] = (struct thread_seq){tid, 0};
	return &r->seqs[lo];
}

/* A sequence number seen for a capture thread: a jump is lost events (TraceEvent's rule:
 * not counted after 0, a thread id's first use or reuse). */
static int note_seq(struct rasp_nt_reader *r, uint64_t tid, uint32_t seq)
{
	struct thread_seq *t = seq_of(r, tid);

	if (!t)
		return -1;
	if (t->last && seq != t->last + 1 && seq - t->last - 1 < UINT32_C(0x80000000))
		r->lost += (uint32_t)(seq - t->last - 1);
	if (!t->last || seq - t->last < UINT32_C(0x80000000))
		t->last = seq;
	return 0;
}

static const struct v6_thread *v6_thread(const struct rasp_nt_reader *r, uint64_t index)
{
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].index == index)
			return &r->threads[i];
	return NULL;
}

/* ---- Stacks ------------------------------------------------------------------------------------
 */

void rasp__nt_stacks_clear(struct rasp_nt_reader *r)
{
	for (size_t i = 0; i < r->nstacks; i++)
		free(r->stacks[i].ips);
	r->nstacks = 0;
}

int rasp__nt_stack_block(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	uint32_t first = 0, count = 0;

	if (!rasp_cursor_u32le(c, &first) || !rasp_cursor_u32le(c, &count))
		return fail(r, rasp_cursor_offset(c), "stack block cut short");
	for (uint32_t i = 0; i < count; i++) {
		uint32_t size = 0;
		uint32_t ptr = r->info.pointer_size;
		struct stack *s;

		if (!rasp_cursor_u32le(c, &size) || size % ptr || size / ptr > MAX_STACK ||
		    rasp_cursor_left(c) < size)
			return fail(r, rasp_cursor_offset(c),
				    "bad stack %" PRIu32 " (%" PRIu32 " bytes)", first + i, size);
		if (rasp_array_grow((void **)&r->stacks, &r->capstacks, r->nstacks,
				    sizeof(*r->stacks)))
			return fail(r, rasp_cursor_offset(c), "out of memory");
		s = &r->stacks[r->nstacks];
		s->id = first + i;
		s->n = size / ptr;
		s->ips = s->n ? malloc(s->n * sizeof(*s->ips)) : NULL;
		if (s->n && !s->ips)
			return fail(r, rasp_cursor_offset(c), "out of memory");
		for (size_t k = 0; k < s->n; k++) {
			uint64_t ip = 0;
			uint32_t ip32 = 0;

			if (ptr == 8)
				rasp_cursor_u64le(c, &ip);
			else
				rasp_cursor_u32le(c, &ip32), ip = ip32;
			s->ips[k] = ip;
		}
		r->nstacks++;
	}
	return 0;
}

static const struct stack *stack_get(const struct rasp_nt_reader *r, uint32_t id)
{
	/* Ids of a region are consecutive from the block's first id: a binary search. */
	size_t lo = 0, hi = r->nstacks;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->stacks[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nstacks && r->stacks[lo].id == id ? &r->stacks[lo] : NULL;
}

/* ---- Events ------------------------------------------------------------------------------------
 */

/* The header state compressed headers are relative to; reset at every block. */
struct hdr {
	uint32_t meta, seq, proc, stack;
	uint64_t tid, capture;
	int64_t ts;
	uint32_t payload;
	bool sorted;
};

/* One event of an event block: queued for ordering, or (metadata blocks) a metadata record. */
static int take_event(struct rasp_nt_reader *r, const struct hdr *h, const uint8_t *payload,
		      uint64_t at, bool metadata_block)
{
	const struct rasp_nt_meta *m;
	const struct stack *st;
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
		const struct v6_thread *t = v6_thread(r, h->capture);

		if (!t)
			return fail(r, at, "event of unknown thread index %" PRIu64, h->capture);
		capture = t->tid;
	}
	if (note_seq(r, capture, h->seq))
		return fail(r, at, "out of memory");
	q.ev = (struct rasp_nt_event){.meta = m,
				      .timestamp = h->ts,
				      .thread_id = h->tid,
				      .pid = r->info.pid,
				      .sequence = h->seq,
				      .payload_len = h->payload,
				      .offset = at};
	if (r->info.format == 6) {
		const struct v6_thread *t = v6_thread(r, h->tid);

		if (!t)
			return fail(r, at, "event of unknown thread index %" PRIu64, h->tid);
		q.ev.thread_id = t->tid;
		q.ev.pid = t->pid >= 0 ? t->pid : r->info.pid;
	}
	q.payload = malloc(h->payload ? h->payload : 1);
	st = h->stack ? stack_get(r, h->stack) : NULL;
	if (st && st->n) {
		q.stack = malloc(st->n * sizeof(*q.stack));
		if (q.stack)
			memcpy(q.stack, st->ips, st->n * sizeof(*q.stack));
		q.ev.stack_len = q.stack ? st->n : 0;
	}
	if (!q.payload) {
		free(q.stack);
		return fail(r, at, "out of memory");
	}
	memcpy(q.payload, payload, h->payload);
	q.arrival = r->arrival++;
	r->events++;
	if (rasp__nt_queue(r, &q)) {
		free(q.payload);
		free(q.stack);
		return fail(r, at, "out of memory");
	}
	return 0;
}

/* The blobs of an event or metadata block (the same encoding). V6 uses thread indexes and
 * a label list id where V4 has thread ids and activity GUIDs. */
static int blobs(struct rasp_nt_reader *r, struct rasp_cursor *c, bool compressed, bool metadata)
{
	struct hdr h = {0};
	bool v6 = r->info.format == 6;

	while (rasp_cursor_left(c)) {
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
		payload = rasp_cursor_take(c, h.payload);
		if (c->failed || !payload)
			return fail(r, at, "event cut short (payload %" PRIu32 " bytes)",
				    h.payload);
		if (take_event(r, &h, payload, at, metadata))
			return -1;
		if (!metadata && h.sorted && h.ts > r->mark)
			r->mark = h.ts;
	}
	return 0;
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
	return blobs(r, c, flags & 1, metadata);
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
		uint64_t tid = 0;
		uint32_t seq = 0;
		struct thread_seq *t;

		if (r->info.format == 6) {
			const struct v6_thread *th;

			rasp_cursor_varuint64(c, &tid);
			rasp_cursor_varuint32(c, &seq);
			th = v6_thread(r, tid);
			tid = th ? th->tid : tid;
		} else {
			rasp_cursor_u64le(c, &tid);
			rasp_cursor_u32le(c, &seq);
		}
		if (c->failed)
			return fail(r, rasp_cursor_offset(c), "sequence point cut short");
		t = seq_of(r, tid);
		if (!t)
			return fail(r, rasp_cursor_offset(c), "out of memory");
		if (t->last && seq - t->last - 1 < UINT32_C(0x80000000) && seq != t->last) {
			r->lost += (uint32_t)(seq - t->last);
			t->last = seq;
		}
	}
	r->last_ts = (int64_t)ts;
	r->mark = INT64_MAX;
	rasp__nt_stacks_clear(r); /* stack ids are scoped to a region (queued events hold copies) */
	if (flags & 1)
		r->nthreads = 0; /* V6: flush the thread cache */
	return 0;
}

int rasp__nt_v6_threads(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	while (rasp_cursor_left(c)) {
		uint16_t size = 0;
		const uint8_t *p;
		struct rasp_cursor t;
		struct v6_thread th = {.pid = -1};

		if (!rasp_cursor_u16le(c, &size) || !(p = rasp_cursor_take(c, size)))
			return fail(r, rasp_cursor_offset(c), "thread row cut short");
		t = rasp_cursor_make(p, size, rasp_cursor_offset(c) - size);
		if (!rasp_cursor_varuint64(&t, &th.index))
			return fail(r, t.origin, "thread row cut short");
		while (rasp_cursor_left(&t)) {
			uint8_t kind = 0;
			uint64_t v = 0;

			rasp_cursor_u8(&t, &kind);
			if (kind == 1 || kind == 4) {
				free(rasp__nt_utf8v(&t));
				if (kind == 4)
					free(rasp__nt_utf8v(&t));
			} else if (kind == 2 || kind == 3) {
				rasp_cursor_varuint64(&t, &v);
				if (kind == 2)
					th.pid = (int64_t)v;
				else
					th.tid = v;
			} else {
				return fail(r, rasp_cursor_offset(&t) - 1,
					    "unknown thread field %u", kind);
			}
			if (t.failed)
				return fail(r, t.origin, "thread row cut short");
		}
		if (rasp_array_grow((void **)&r->threads, &r->capthreads, r->nthreads,
				    sizeof(*r->threads)))
			return fail(r, t.origin, "out of memory");
		r->threads[r->nthreads++] = th;
	}
	return 0;
}

int rasp__nt_v6_remove_threads(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	while (rasp_cursor_left(c)) {
		uint64_t index = 0;
		uint32_t seq = 0;
		const struct v6_thread *t;

		if (!rasp_cursor_varuint64(c, &index) || !rasp_cursor_varuint32(c, &seq))
			return fail(r, rasp_cursor_offset(c), "remove-thread block cut short");
		t = v6_thread(r, index);
		if (t && note_seq(r, t->tid, seq + 1) == 0)
			seq_of(r, t->tid)->last = seq; /* a final number, not an event */
	}
	return 0;
}
