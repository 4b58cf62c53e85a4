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
#ifdef RASP__ASAN
	/* AddressSanitizer builds: a freed block is poisoned, which free_block does and this
	 * would not, and librasp keeps the thread's cache to itself there (internal.h): every
	 * free is rasp_free's. */
	(void)h, (void)pg, (void)hdr;
	return false;
#else
	struct rasp_context *c;
	struct rasp__window *w;
	struct rasp__hot *hc;
	struct rasp__header *head;
	uintptr_t off;
	uint32_t rest;

	/* The thread's context on h, and the page's owner: that context (so the thread's, as
	 * free_block's token test asks: ctx and owner are set together and cleared together,
	 * page.c). A fork's child thread with a dead thread's token fails here and gets
	 * free_block's answer from rasp_free. Two instructions fewer than the token's test and
	 * the cache's apart, and two more saved by reading both words plainly (aligned words,
	 * read once: the compiler compares them in memory; the atomic loads took a register
	 * each; callgrind). */
	if (RASP__UNLIKELY(rasp__tcache.heap != h))
		return false;
	c = rasp__context_cache_ctx();
#ifdef RASP__TSAN
	/* An atomic load where ThreadSanitizer watches: the page's owner may be exiting and
	 * clearing ctx meanwhile (page.c), which either read finds is not c. */
	if (RASP__UNLIKELY(atomic_load_explicit(&pg->ctx, memory_order_relaxed) != c))
		return false;
#else
	if (RASP__UNLIKELY(*(struct rasp_context *const *)&pg->ctx != c))
		return false;
#endif
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
	/* free_past_bound: a full page's first block back, the page's last block out and the
	 * last free before a flush are rasp_free's (they call into page.c). flush_in is
	 * decremented and tested at once, and put back on that rare way. */
	if (RASP__UNLIKELY(pg->in_full || *(const uint32_t *)&pg->used <= 1))
		return false;
	if (RASP__UNLIKELY(rasp__owner_dec_le0(&w->flush_in))) {
		w->flush_in++;
		return false;
	}
	head = pg->local_free;
	/* The link and the free flag in one store: head + 1, as head is 8-aligned (an add
	 * into another register, which keeps head for its test). */
	hdr->word = (uintptr_t)head + RASP__HDR_FREE;
	pg->local_free = hdr;
	pg->local_n++;
	if (!head)
		pg->local_tail = hdr;
	rasp__owner_dec32(&pg->used);
	return true;
#endif
}

#endif /* RASP_RUNTIME_OWNER_FREE_H */
