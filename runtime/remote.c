/* Other threads' frees reaching a page: the push of a chain of blocks onto its thread_free list
 * (one atomic exchange), the pin that keeps the page's segment mapped while the pushing thread
 * still reads its record, the owner told when the page sits on its full list, and the freeing
 * thread's batch of one page's blocks (free.c fills it) pushed at once. */
#include "internal.h"

/* Once the blocks are on thread_free, the owner (or a collect) may take them, find the page
 * empty, release it and unmap its segment, while this thread still has the page's `full` and
 * `ctx` to read: a pin keeps the mapping (segment.c, maybe_unmap). The pin is a plain store
 * in the freeing thread's context, made visible to whoever collects the blocks by the push's
 * release (then the heap lock up to the unmap): no locked instruction, where an atomic count
 * on the segment made `prodcons`, whose consumer pushes every free alone, 20% slower. A
 * thread that could not get a context counts on the segment instead. A page released and
 * reused meanwhile is still mapped memory: its words then at worst wake a context that finds
 * nothing to rescue. */
static inline void push_begin(struct rasp_context *c, struct rasp__page *pg,
			      struct rasp__header *first, struct rasp__header *last)
{
	struct rasp__header *old = atomic_load_explicit(&pg->thread_free, memory_order_relaxed);
	struct rasp__segment *s = rasp__segment_of(pg);

	/* Release: a pin for another segment, read instead of NULL by an unmap, still orders
	 * the reads of the last push before it. */
	if (c)
		atomic_store_explicit(&c->pin, s, memory_order_release);
	else
		atomic_fetch_add_explicit(&s->remote_pins, 1, memory_order_relaxed);
	do
		rasp__hdr_link(last, old);
	while (!atomic_compare_exchange_weak(&pg->thread_free, &old, first));
}

static inline void push_end(struct rasp_context *c, struct rasp__page *pg)
{
	struct rasp_context *owner;

	/* The owner parked this page as full: tell it (see the file comment). */
	if (atomic_load(&pg->full) && (owner = atomic_load(&pg->ctx)))
		atomic_store(&owner->full_dirty, 1);
	/* Release: the reads above come before an unmap that sees the pin gone. */
	if (c)
		atomic_store_explicit(&c->pin, NULL, memory_order_release);
	else
		atomic_fetch_sub_explicit(&rasp__segment_of(pg)->remote_pins, 1,
					  memory_order_release);
}

void rasp__page_push_remote(struct rasp_context *c, struct rasp__page *pg,
			    struct rasp__header *first, struct rasp__header *last)
{
	push_begin(c, pg, first, last);
	push_end(c, pg);
}

/* The two steps apart, for tests. */
void rasp__page_push_begin(struct rasp_context *c, struct rasp__page *pg,
			   struct rasp__header *first, struct rasp__header *last)
{
	push_begin(c, pg, first, last);
}

void rasp__page_push_end(struct rasp_context *c, struct rasp__page *pg)
{
	push_end(c, pg);
}

/* A freeing thread's queue of blocks of one page (free.c fills it) goes out as one push. */
void rasp__batch_flush(struct rasp_context *c)
{
	if (!c->batch_n)
		return;
	rasp__page_push_remote(c, c->batch_page, c->batch_head, c->batch_tail);
	c->batch_page = NULL;
	c->batch_head = c->batch_tail = NULL;
	c->batch_n = 0;
}
