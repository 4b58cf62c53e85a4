/* The NetTrace reader's shared state (nettrace-internal.h), below the files that parse: its
 * first error, with the file and the offset, the events it holds for time order (a min-heap
 * by timestamp, then arrival, so equal timestamps keep the file's order) within the limits
 * held_events and held_bytes, and the references to the metadata and stack records they and
 * the tables share. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "index.h"
#include "nettrace-internal.h"

int rasp__nt_fail(struct rasp_nt_reader *r, uint64_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->failed)
		return -1;
	r->failed = true;
	n = snprintf(r->err, sizeof(r->err), "%s: at offset %" PRIu64 ": ", r->path, at);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(r->err))
		vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- Shared records ---------------------------------------------------------------------- */

static struct meta_rec *rec_of(const struct rasp_nt_meta *m)
{
	return (struct meta_rec *)((char *)m - offsetof(struct meta_rec, m));
}

void rasp__nt_meta_ref(struct rasp_nt_meta *m)
{
	rec_of(m)->refs++;
}

void rasp__nt_meta_unref(struct rasp_nt_reader *r, const struct rasp_nt_meta *m)
{
	struct meta_rec *rec = rec_of(m);

	if (--rec->refs)
		return;
	r->st.metadata_bytes -= rec->bytes;
	r->st.metadata_freed++;
	free(rec);
}

void rasp__nt_stack_unref(struct rasp_nt_reader *r, struct stack_rec *s)
{
	if (!s || --s->refs)
		return;
	r->st.stack_bytes -= rasp__nt_stack_rec_bytes(s->n);
	free(s);
}

/* ---- Events held for time order ---------------------------------------------------------- */

static bool before(const struct queued *a, const struct queued *b)
{
	return a->ev.timestamp < b->ev.timestamp ||
	       (a->ev.timestamp == b->ev.timestamp && a->arrival < b->arrival);
}

/* The held events' cost: the heap's array (its capacity: it follows the peak until it
 * drains) and their payloads. */
static uint64_t held_bytes(const struct rasp_nt_reader *r, size_t cap)
{
	return (uint64_t)cap * sizeof(struct queued) + r->held_payload;
}

static void note_held(struct rasp_nt_reader *r)
{
	r->st.held_events = r->nheap;
	r->st.held_bytes = held_bytes(r, r->capheap);
	if (r->st.held_events > r->st.held_events_peak)
		r->st.held_events_peak = r->st.held_events;
	if (r->st.held_bytes > r->st.held_bytes_peak)
		r->st.held_bytes_peak = r->st.held_bytes;
}

int rasp__nt_queue(struct rasp_nt_reader *r, struct queued *q)
{
	size_t i, cap = r->capheap;
	uint64_t at = q->ev.offset;

	if (r->nheap >= r->lim.held_events) {
		rasp__nt_queued_free(r, q);
		return rasp__nt_fail(r, at,
				     "more than %" PRIu64 " events held for time order (limit "
				     "held_events = %" PRIu64 "): no sorted event or sequence "
				     "point since offset %" PRIu64 " lets them go",
				     r->lim.held_events, r->lim.held_events, r->region_at);
	}
	if (r->nheap == cap)
		cap = cap ? 2 * cap : 16;
	if (held_bytes(r, cap) + q->ev.payload_len > r->lim.held_bytes) {
		uint64_t want = held_bytes(r, cap) + q->ev.payload_len;

		rasp__nt_queued_free(r, q);
		return rasp__nt_fail(r, at,
				     "%" PRIu64 " events held for time order would take %" PRIu64
				     " bytes (limit held_bytes = %" PRIu64 "): no sorted event or "
				     "sequence point since offset %" PRIu64 " lets them go",
				     (uint64_t)r->nheap + 1, want, r->lim.held_bytes, r->region_at);
	}
	if (rasp_array_grow((void **)&r->heap, &r->capheap, r->nheap, sizeof(*r->heap))) {
		rasp__nt_queued_free(r, q);
		return rasp__nt_fail(r, at, "out of memory (%zu events held)", r->nheap);
	}
	r->held_payload += q->ev.payload_len;
	i = r->nheap++;
	while (i > 0 && before(q, &r->heap[(i - 1) / 2])) {
		r->heap[i] = r->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	r->heap[i] = *q;
	note_held(r);
	return 0;
}

struct queued rasp__nt_dequeue(struct rasp_nt_reader *r)
{
	struct queued top = r->heap[0], last = r->heap[--r->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= r->nheap)
			break;
		if (c + 1 < r->nheap && before(&r->heap[c + 1], &r->heap[c]))
			c++;
		if (!before(&r->heap[c], &last))
			break;
		r->heap[i] = r->heap[c];
		i = c;
	}
	if (r->nheap)
		r->heap[i] = last;
	r->held_payload -= top.ev.payload_len;
	note_held(r);
	return top;
}

void rasp__nt_queue_shrink(struct rasp_nt_reader *r)
{
	/* A small array stays: most regions hold a few events. */
	if (r->nheap == 0 && r->capheap > 1024) {
		free(r->heap);
		r->heap = NULL;
		r->capheap = 0;
		note_held(r);
	}
}

void rasp__nt_queued_free(struct rasp_nt_reader *r, struct queued *q)
{
	free(q->payload);
	q->payload = NULL;
	rasp__nt_stack_unref(r, q->stack);
	q->stack = NULL;
	if (q->ev.meta)
		rasp__nt_meta_unref(r, q->ev.meta);
	q->ev.meta = NULL;
}
