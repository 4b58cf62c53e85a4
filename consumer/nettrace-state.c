/* The NetTrace reader's shared state (nettrace-internal.h), below the files that parse: its
 * first error, with the file and the offset, and the events it holds for time order (a
 * min-heap by timestamp, then arrival, so equal timestamps keep the file's order). */
#include <inttypes.h>
#include <stdarg.h>
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

static bool before(const struct queued *a, const struct queued *b)
{
	return a->ev.timestamp < b->ev.timestamp ||
	       (a->ev.timestamp == b->ev.timestamp && a->arrival < b->arrival);
}

int rasp__nt_queue(struct rasp_nt_reader *r, struct queued *q)
{
	size_t i;

	if (rasp_array_grow((void **)&r->heap, &r->capheap, r->nheap, sizeof(*r->heap)))
		return -1;
	i = r->nheap++;
	while (i > 0 && before(q, &r->heap[(i - 1) / 2])) {
		r->heap[i] = r->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	r->heap[i] = *q;
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
	return top;
}

void rasp__nt_queued_free(struct queued *q)
{
	free(q->payload);
	free(q->stack);
	q->payload = NULL;
	q->stack = NULL;
}
