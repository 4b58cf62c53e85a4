/* The owner's free of a checked small block as one inline function that either completes it or
 * writes nothing: librasp-malloc's free (malloc/block.c) runs it in its own frame, with no
 * call into librasp, and calls rasp_free for everything it declines. It keeps free.c's
 * accounting to the word (free_block: the list's `rest` and its bound, `flush_in`, the page's
 * list and `used`), so the windows the sampling relies on see the same frees either way. */
#ifndef RASP_RUNTIME_OWNER_FREE_H
#define RASP_RUNTIME_OWNER_FREE_H

#include "internal.h"

/* hdr: the start of a live, unsampled block of page pg of heap h (rasp_free's fast checks
 * passed). True: freed as free_block would. False, nothing written: the page is another
 * thread's, the thread's cache names another heap, or the free is past the list's bound and
 * would flush the list or empty (or wake) the page: rasp_free's work. */
static inline __attribute__((always_inline)) bool
rasp__owner_free_try(struct rasp_heap *h, struct rasp__page *pg, struct rasp__header *hdr)
{
	struct rasp_context *c;
	struct rasp__window *w;
	struct rasp__hot *hc;
	struct rasp__header *head;
	uintptr_t off;
	uint32_t rest;

	if (RASP__UNLIKELY(atomic_load_explicit(&pg->owner, memory_order_relaxed) !=
			       rasp__thread_token() ||
			   !rasp__context_cache_is(h)))
		return false;
	c = rasp__context_cache_ctx();
	off = pg->hot_off;
	w = (struct rasp__window *)((char *)c->win + off * (sizeof(*w) / sizeof(*c->hot)));
	hc = (struct rasp__hot *)((char *)c->hot + off);
	rest = rasp__rest(w);
	if (RASP__LIKELY(rest < w->cache)) {
		/* free_block's push onto the class's list, below its bound. */
		rasp__hdr_link(hdr, hc->free);
		hc->free = hdr;
#ifdef RASP__OWNER_ASM
		/* rest + 1 added in memory: one instruction, where the register's copy took an
		 * add and a store (the same store as rasp__rest_set's, the owner alone writes). */
		__asm__("addl $1, %0" : "+m"(*(uint32_t *)&w->rest));
#else
		rasp__rest_set(w, rest + 1);
#endif
		w->flush_in--;
		return true;
	}
	/* free_past_bound: the last free before a flush, a page's last block out or a full
	 * page's first back are rasp_free's (they call into page.c). */
	if (RASP__UNLIKELY(w->flush_in <= 1 || pg->in_full ||
			   rasp__relaxed_load32(&pg->used) <= 1))
		return false;
	w->flush_in--;
	head = pg->local_free;
	rasp__hdr_link(hdr, head);
	pg->local_free = hdr;
	pg->local_n++;
	if (!head)
		pg->local_tail = hdr;
	rasp__owner_dec32(&pg->used);
	return true;
}

#endif /* RASP_RUNTIME_OWNER_FREE_H */
