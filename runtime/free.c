/* rasp_free: the checks every build makes, the owner's free (a push on its context's list of
 * the class up to a bound, else on the page's local list; no atomic, no shared write;
 * docs/runtime.md, "The owner's free cache") and another thread's free, queued per page and
 * pushed onto the page's thread_free list with one atomic exchange per batch (remote.c). The
 * queue holds at most RASP__BATCH_MAX blocks of one page; it is pushed when a block of another
 * page comes, when it is full, at the freeing thread's next allocation slow path and at its
 * exit: a thread that stops freeing and allocating holds at most one batch. A sampled object
 * (its header marked) takes the slow path, which emits SampledObjectFreed first. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Log lines of the default action are the 1st, 10th, 100th... of a kind: a few lines for a
 * state that switched allocators (one a pointer was 1,280 lines for one Lua state). */
static bool is_power_of_10(uint64_t n)
{
	while (n >= 10 && n % 10 == 0)
		n /= 10;
	return n == 1;
}

static const char *const kind_names[RASP_INVALID_KINDS] = {
    "foreign pointer", "pointer of another heap", "interior pointer", "double free"};

/* A refused pointer: counted, told to the embedder's callback, then logged or aborted on as
 * the heap's action says (rasp_heap_set_error_handler). Never on a fast path. */
RASP__NOINLINE static void bad_free(struct rasp_heap *h, const void *obj, const char *op, int kind,
				    const char *why)
{
	rasp_invalid_t what = {op, obj, kind, why, 0};
	int action = h->invalid_action;

	atomic_fetch_add(&h->invalid_frees, 1);
	what.count = atomic_fetch_add(&h->invalid_by_kind[kind], 1) + 1;
	if (h->invalid_fn)
		h->invalid_fn(h->invalid_arg, &what);
	if (action == RASP_ON_INVALID_LOG_EACH || action == RASP_ON_INVALID_ABORT)
		fprintf(stderr, "rasp: %s(%p): %s; ignored\n", op, obj, why);
	else if (action == RASP_ON_INVALID_LOG && is_power_of_10(what.count))
		fprintf(stderr,
			"rasp: %s(%p): %s; ignored (%s #%llu on this heap; the 10th, 100th... "
			"are logged, all counted: rasp_heap_set_error_handler)\n",
			op, obj, why, kind_names[kind], (unsigned long long)what.count);
	if (action == RASP_ON_INVALID_ABORT)
		abort();
	errno = EINVAL;
}

int rasp_heap_set_error_handler(rasp_heap_t *h, int action, rasp_invalid_fn fn, void *arg)
{
	if (!h || action < RASP_ON_INVALID_LOG || action > RASP_ON_INVALID_ABORT)
		return -EINVAL;
	h->invalid_action = action;
	h->invalid_fn = fn;
	h->invalid_arg = arg;
	return 0;
}

uint64_t rasp_heap_invalid_count(rasp_heap_t *h, int kind)
{
	if (!h || kind < 0 || kind >= RASP_INVALID_KINDS)
		return 0;
	return atomic_load(&h->invalid_by_kind[kind]);
}

void rasp__invalid_summary(struct rasp_heap *h)
{
	for (int k = 0; k < RASP_INVALID_KINDS; k++) {
		uint64_t n = atomic_load(&h->invalid_by_kind[k]);

		if (h->invalid_action == RASP_ON_INVALID_LOG && n && !is_power_of_10(n))
			fprintf(stderr, "rasp: heap %llu refused %llu pointers as %s in all\n",
				(unsigned long long)h->id, (unsigned long long)n, kind_names[k]);
	}
}

/* Debug builds: is hdr the block header of a live-or-free block of h? Walks the heap's
 * segment lists under the lock: O(segments), acceptable for a debug check. */
static bool debug_owns(struct rasp_heap *h, const struct rasp__header *hdr)
{
	struct rasp__segment *s, *want = rasp__mapping_of(hdr);
	bool ok = false;

	pthread_mutex_lock(&h->lock);
	for (s = h->segments; s && s != want; s = s->next)
		;
	if (s) {
		struct rasp__page *pg = rasp__page_of(s, hdr);

		ok = pg && rasp__page_has_block(pg, hdr);
	} else {
		for (s = h->large; s && s != want; s = s->next)
			;
		ok = s && hdr == rasp__large_header(s);
		for (s = ok ? NULL : h->arenas; s && s != want; s = s->next)
			;
		if (s) {
			const char *why;
			size_t z;

			ok = rasp__arena_block(s, hdr, &z, &why) == hdr;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return ok;
}

/* Debug builds: is s one of h's mappings? */
static bool debug_mapped(struct rasp_heap *h, const struct rasp__segment *s)
{
	const struct rasp__segment *o;

	pthread_mutex_lock(&h->lock);
	for (o = h->segments; o && o != s; o = o->next)
		;
	if (!o)
		for (o = h->large; o && o != s; o = o->next)
			;
	if (!o)
		for (o = h->arenas; o && o != s; o = o->next)
			;
	pthread_mutex_unlock(&h->lock);
	return o != NULL;
}

/* Is hdr the own header of an aligned object placed inside block b (rasp_alloc_aligned)? */
static bool aligned_inside(const struct rasp__header *b, const struct rasp__header *hdr)
{
	uintptr_t off = (uintptr_t)hdr - (uintptr_t)b;

	return hdr > b && !(b->word & RASP__HDR_FREE) && rasp__hdr_kind(b) == RASP__KIND_ALIGNED &&
	       rasp__hdr_aligned_off(b) == off;
}

struct rasp__header *rasp__block_of(struct rasp_heap *h, void *obj, const char *op,
				    struct rasp__segment **segp)
{
	struct rasp__header *hdr = rasp__header_of(obj), *b;
	struct rasp__segment *s = rasp__mapping_of(hdr);
	struct rasp__page *pg;
	uintptr_t n;

	/* Before reading anything at the pointer: its 4 MiB block must start a rasp mapping or
	 * lie inside an arena (segment.c's map), so memory rasp never mapped, or gave back to the
	 * OS, is reported, not read (a fault). Found from a unit past its first, the mapping must
	 * be an arena: the map is read twice without the lock, and a stale pointer's arena may
	 * have been replaced meanwhile by a mapping that does not reach it.
	 * Debug builds also look the mapping up in this heap's lists. */
	if (!rasp__segment_mapped(s) ||
	    (s != rasp__segment_of(hdr) && s->kind != RASP__SEG_ARENA)) {
		bad_free(h, obj, op, RASP_INVALID_FOREIGN,
			 "not in memory rasp has mapped (a foreign pointer, or a double free "
			 "after the object's memory went back to the OS)");
		return NULL;
	}
	if (RASP__DEBUG && !debug_mapped(h, s)) {
		bad_free(h, obj, op,
			 s->magic == RASP__SEGMENT_MAGIC && s->heap != h ? RASP_INVALID_OTHER_HEAP
									 : RASP_INVALID_FOREIGN,
			 "not a live object of this heap (foreign pointer or double "
			 "free)");
		return NULL;
	}
	if (s->magic != RASP__SEGMENT_MAGIC || s->heap != h) {
		bad_free(h, obj, op,
			 s->magic != RASP__SEGMENT_MAGIC ? RASP_INVALID_FOREIGN
							 : RASP_INVALID_OTHER_HEAP,
			 "not an object of this heap");
		return NULL;
	}
	/* Before reading the would-be header: a misaligned one cannot be read as one. */
	if ((uintptr_t)hdr & 7) {
		bad_free(h, obj, op, RASP_INVALID_INTERIOR,
			 "not the start of an object (misaligned)");
		return NULL;
	}
	/* The block holding hdr: the mapping's one object, or the page's block by position. */
	if (s->kind == RASP__SEG_LARGE) {
		b = rasp__large_header(s);
		if (hdr < b) {
			bad_free(h, obj, op, RASP_INVALID_INTERIOR, "not the start of an object");
			return NULL;
		}
	} else if (s->kind == RASP__SEG_ARENA) {
		const char *why;
		size_t z;

		b = rasp__arena_block(s, hdr, &z, &why);
		if (!b) {
			bad_free(h, obj, op,
				 strncmp(why, "double", 6) ? RASP_INVALID_INTERIOR
							   : RASP_INVALID_DOUBLE_FREE,
				 why);
			return NULL;
		}
	} else {
		pg = rasp__page_of(s, hdr);
		if (!pg || (uintptr_t)hdr < pg->start ||
		    (n = (uintptr_t)hdr - pg->start) >= pg->bytes) {
			bad_free(h, obj, op, RASP_INVALID_INTERIOR, "not the start of an object");
			return NULL;
		}
		b = rasp__page_block_at(pg, hdr);
	}
	if (b->word & RASP__HDR_FREE) {
		bad_free(h, obj, op, RASP_INVALID_DOUBLE_FREE,
			 hdr == b ? "double free"
				  : "double free (or a pointer inside a free block)");
		return NULL;
	}
	/* A block's start, or an aligned object's own header inside its block. */
	if (hdr != b && !aligned_inside(b, hdr)) {
		bad_free(h, obj, op, RASP_INVALID_INTERIOR,
			 s->kind != RASP__SEG_SMALL
			     ? "inside a large object, not its start"
			     : "not the start of an object (inside a block)");
		return NULL;
	}
	if (RASP__DEBUG && !debug_owns(h, b)) {
		bad_free(h, obj, op, RASP_INVALID_FOREIGN,
			 "not a live object of this heap (foreign pointer)");
		return NULL;
	}
	*segp = s;
	return b;
}

/* Another thread owns pg (or nobody: its thread exited). */
RASP__OUTLINE static void free_remote(struct rasp_heap *h, struct rasp__page *pg,
				      struct rasp__header *hdr)
{
	struct rasp_context *c = rasp__context_peek(h);

	/* A thread that only frees into this heap gets a context too: its frees are batched, and
	 * it has where to pin (remote.c). Without memory for one, its blocks go alone. */
	if (!c && !(c = rasp__context_attach(h))) {
		rasp__page_push_remote(NULL, pg, hdr, hdr);
		return;
	}
	if (c->batch_page != pg) {
		rasp__batch_flush(c);
		c->batch_page = pg;
		c->batch_tail = hdr;
	}
	rasp__hdr_link(hdr, c->batch_head);
	c->batch_head = hdr;
	if (++c->batch_n >= RASP__BATCH_MAX)
		rasp__batch_flush(c);
}

/* The owner's free onto its page's local list. */
static inline __attribute__((always_inline)) void free_to_page(struct rasp__page *pg,
							       struct rasp__header *hdr)
{
	struct rasp__header *head = pg->local_free;

	rasp__hdr_link(hdr, head); /* the link and the free flag, one store */
	pg->local_free = hdr;
	pg->local_n++; /* 0 exactly when local_free is NULL: the tail from the head's test */
	if (!head)
		pg->local_tail = hdr;
	if (RASP__UNLIKELY(rasp__owner_dec32(&pg->used) || pg->in_full))
		rasp__page_empty(atomic_load_explicit(&pg->ctx, memory_order_relaxed), pg);
}

/* free_past_bound's flush, apart and called in tail position, so that the common way saves no
 * registers (it saved three around the flush's call: 5.9 instructions a free past the bound,
 * callgrind, which a thread freeing a burst of a class pays at most of its frees). */
RASP__NOINLINE static void flush_then_free(struct rasp__window *w, struct rasp__page *pg,
					   struct rasp__header *hdr)
{
	unsigned k = rasp__page_cls(pg);
	/* w is &c->win[k]: the context back from it (the common way passes one pointer). */
	struct rasp_context *c =
	    (struct rasp_context *)((char *)(w - k) - offsetof(struct rasp_context, win));

	rasp__list_flush(c, k); /* (the cache off: flush_in set again) */
	free_to_page(pg, hdr);
}

/* The owner's free past its cache's bound (class k of context c): the block goes to its page.
 * A thread freeing far more of a class than it allocates (twice the bound and two windows
 * since its last miss) first gives the whole list back to its pages and turns the cache off
 * until its next refill (page.c), so that it keeps none of those blocks, each of which would
 * keep a whole page from emptying (without the flush, 970 pages, 62.7 MiB, held by 4096
 * cached 16-byte blocks after 4 million random frees, against 9 pages with no cache). Flushing at
 * every free past the bound made `fixed` 1.5x slower (a flush and a refill at each turn).
 * Inline, as its count is two instructions: a call's set-up would be four, and the flush, out
 * of line, still keeps the push from saving registers. */
static inline __attribute__((always_inline)) void
free_past_bound(struct rasp__window *w, struct rasp__page *pg, struct rasp__header *hdr)
{
	/* The empty asm keeps gcc from merging this decrement with the cache's push's into a
	 * load, a subtraction and a store before the branch (2 instructions more on each way). */
	__asm__("" : "+r"(w));
	if (RASP__UNLIKELY(rasp__owner_dec_le0(&w->flush_in))) {
		flush_then_free(w, pg, hdr);
		return;
	}
	free_to_page(pg, hdr);
}

/* The block hdr of page pg, checked: free it. */
static inline __attribute__((always_inline)) void
free_block(struct rasp_heap *h, struct rasp__page *pg, struct rasp__header *hdr)
{
	RASP__POISON(hdr + 1, pg->bsize - RASP_OBJECT_HEADER_SIZE);
	if (atomic_load_explicit(&pg->owner, memory_order_relaxed) != rasp__thread_token()) {
		free_remote(h, pg, hdr);
		return;
	}
	if (RASP__LIKELY(rasp__context_cache_is(h))) {
		/* The owner's context: its cache names h, and the page's owner is this thread.
		 * (In a fork's child, a thread may have the thread pointer of a parent's thread
		 * that is not there and owned the page: the block then joins this thread's list,
		 * which gives it back to its own page when it returns the list.) */
		struct rasp_context *c = rasp__context_cache_ctx();
		uintptr_t off = pg->hot_off; /* the class's hot entry's offset; its window's / 4 */
		struct rasp__window *w =
		    (struct rasp__window *)((char *)c->win + off * (sizeof(*w) / sizeof(*c->hot)));
		struct rasp__hot *hc = (struct rasp__hot *)((char *)c->hot + off);
		uint32_t rest;

		__asm__("" : "+r"(w)); /* (else gcc recomputed w from k below: 4 instructions) */
		rest = rasp__rest(w);
		if (RASP__UNLIKELY(rest >= w->cache)) {
			free_past_bound(w, pg, hdr);
			return;
		}
		/* Each field once, through w and hc computed once (gcc recomputed both from k
		 * for every field: 7 instructions a free more, callgrind). */
		rasp__hdr_link(hdr, hc->free);
		hc->free = hdr;
		rasp__rest_set(w, rest + 1); /* (rasp_heap_stats counts it held from here) */
		w->flush_in--; /* (to 0 or below: the next free past the bound flushes) */
		return;
	}
	free_to_page(pg, hdr);
}

RASP__NOINLINE static void free_slow(struct rasp_heap *h, void *obj)
{
	struct rasp__segment *s;
	struct rasp__header *hdr, *own;

	if (!h) {
		errno = EINVAL;
		return;
	}
	/* A sampled small object, by rasp_free's own test but for its mark: nothing else to
	 * check (rasp__block_of's checks cost 80 instructions a sampled free, a quarter of it). */
	hdr = rasp__header_of(obj);
	s = rasp__segment_of(hdr);
	if (!RASP__DEBUG && rasp__segment_mapped(s) && s->small_heap == h) {
		struct rasp__page *pg = rasp__page_at(s, hdr);

		if (rasp__page_has_block(pg, hdr) &&
		    (hdr->word & (RASP__HDR_FREE | RASP__HDR_SAMPLED)) == RASP__HDR_SAMPLED) {
			/* ObjectSize: its sample's, the block's (without rasp_object_size's
			 * lookups: 43 instructions), or the size asked the heap kept. */
			uint64_t z = h->cfg.requested_sizes
					 ? rasp__sample_size_take(h, hdr + 1, pg->bsize)
					 : pg->bsize;

			if (!rasp__freed_keep_small(h, hdr, s, z) &&
			    !rasp__emit_freed(h, hdr, hdr, s, z))
				free_block(h, pg, hdr);
			return;
		}
	}
	hdr = rasp__block_of(h, obj, "rasp_free", &s);
	if (!hdr)
		return;
	/* A sampled object (the mark is on its own header: an aligned object's, inside its
	 * block): its free is told before the block goes back to any list, so no later object
	 * at that address can be sampled ahead of it, whichever thread takes the block. Address
	 * and ObjectSize are its sample's: the block's, or the size asked that the heap kept. */
	own = rasp__header_of(obj);
	if (RASP__UNLIKELY(rasp__hdr_sampled(own)) &&
	    rasp__emit_freed(h, own, hdr, s,
			     rasp__sample_size_take(h, hdr + 1, rasp_object_size(obj))))
		return; /* kept until its event is out (freed.c) */
	rasp__free_block(h, s, hdr);
}

void rasp__free_block(struct rasp_heap *h, struct rasp__segment *s, struct rasp__header *hdr)
{
	if (s->kind == RASP__SEG_LARGE) {
		hdr->word |= RASP__HDR_FREE;
		rasp__large_free(h, s);
		return;
	}
	hdr->word &= ~(uintptr_t)RASP__HDR_FREE; /* a kept block's mark (freed.c) */
	if (s->kind == RASP__SEG_ARENA) {
		if (rasp__arena_free(h, s, hdr) != 0)
			bad_free(h, hdr + 1, "rasp_free", RASP_INVALID_DOUBLE_FREE,
				 "double free (another thread freed it meanwhile)");
		return;
	}
	free_block(h, rasp__page_of(s, hdr), hdr);
}

/* The common case inline: the start of a small block of this heap (by its position in its
 * page, without a division: rasp__page_has_block) whose header is neither free nor marked
 * sampled. Anything else (large, aligned, sampled, freed, foreign, debug builds) takes
 * free_slow, which checks and explains, and tells a sampled object's free. */
void rasp_free(rasp_heap_t *h, void *obj)
{
	struct rasp__header *hdr;
	struct rasp__segment *s;
	struct rasp__page *pg;

	if (!obj)
		return;
	hdr = rasp__header_of(obj);
	s = rasp__segment_of(hdr);
	/* Mapped by rasp (the map is set only while a mapping's header is valid, so its magic
	 * needs no compare here; free_slow checks it), of small objects of this heap (a NULL h
	 * matches no segment: free_slow refuses it). */
	if (RASP__DEBUG || RASP__UNLIKELY(!rasp__segment_mapped(s) || s->small_heap != h))
		goto slow;
	pg = rasp__page_at(s, hdr); /* rasp__no_page, where no page is, fails the test below */
	/* The position first: a misaligned pointer fails it (blocks and their size are multiples
	 * of 8), so the header is read only at a block's start. The header's free bit and its
	 * SAMPLED mark in one test (the same instruction as the free bit's alone): a sampled
	 * object's free is told on the slow path. */
	if (RASP__UNLIKELY(!rasp__page_has_block(pg, hdr) ||
			   (hdr->word & (RASP__HDR_FREE | RASP__HDR_SAMPLED))))
		goto slow;
	free_block(h, pg, hdr);
	return;
slow:
	free_slow(h, obj);
}
