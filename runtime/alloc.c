/* Allocation: the fast path first (a class's hot entry popped after one test), then what runs
 * when it misses: the lean misses (the next window over the class's list, a refill, the sampled
 * block), the generic slow path (large and pinned objects, pending work, a new sampling state)
 * and the windows they set, with the sampling budget folded in, and rasp_alloc last. Every call
 * here but rasp_alloc's lookup is the allocating thread's, on its own context. What it costs:
 * rasp_alloc runs 24 instructions of its own per small allocation, sampling on or off, and the
 * misses about 52 each, once per ~8 allocations of 2 KiB (`bench/runtime/run.sh BUILD
 * callgrind` and `slowpath`; docs/performance.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exponential.h"
#include "internal.h"
#include "rasp/inline.h"

_Static_assert(sizeof(struct rasp__window) == 128, "a window's index is its class shifted");
/* rasp__alloc_miss finds a class's window from its hot entry's offset in the context. */
#define RASP__WIN_PER_HOT (sizeof(struct rasp__window) / sizeof(struct rasp__hot))
_Static_assert(offsetof(struct rasp_context, hot) == 0 &&
		   sizeof(struct rasp__window) == RASP__WIN_PER_HOT * sizeof(struct rasp__hot),
	       "a class's window is at c->win plus its hot entry's offset times the ratio");

/* ---- The fast path ---- */

/* The fast path: the arguments' one branch, the object's size class, then one test, --n < 0
 * (CoreCLR's alloc_ptr + z > combined_limit, counted in blocks), which covers: window used up,
 * sample due, list empty, context retired, and, folded in, every size the pop cannot take (0
 * or past the small range select class 0, whose window is always empty). Sampling on or off,
 * an allocation that is not sampled runs exactly these instructions. A flag or a missing type
 * (rare, and always the same way at a call site) takes a separate, predictable branch: folding
 * it into the class as well cost 5 more instructions on every allocation. */
static inline void *alloc_fast(struct rasp_context *c, const rasp_type_t *type, size_t size,
			       unsigned flags)
{
	uintptr_t q = (size + RASP_OBJECT_HEADER_SIZE + 7) >> 3, k;
	struct rasp__header *p;
	struct rasp__hot *hc;

	if (RASP__UNLIKELY(flags != 0 || type == NULL))
		return rasp__alloc_slow(c, type, size, flags);
	k = RASP__LIKELY(q <= RASP__TABLE_MAX / 8) ? rasp__table_hot[q] : 0;
	hc = (struct rasp__hot *)((char *)c->hot + k);
	if (RASP__UNLIKELY(--hc->n < 0))
		return rasp__alloc_miss(c, type, size, hc);
	p = hc->free;
	hc->free = rasp__hdr_next(p);
	/* The next block's line, for the class's next allocation: its link was written when it
	 * was freed, often long ago (a burst freed, then allocated again), and the pop's load
	 * of it missed. One instruction on the fast path; `bulk` 5.5% faster, its allocations
	 * 0.178 to 0.167 s, the other workloads unchanged (docs/performance.md). */
	__builtin_prefetch(hc->free, 1);
	RASP__UNPOISON(p + 1, hc->bsize - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type; /* RASP_KIND_SMALL: the type is the whole header */
	return p + 1;
}

#if RASP__DEBUG
static void *alloc_checked(struct rasp_context *c, const rasp_type_t *type, size_t size,
			   unsigned flags)
{
	void *obj;

	if (!pthread_equal(c->owner, pthread_self())) {
		fprintf(stderr,
			"rasp: allocation context %p used by a thread that does not own "
			"it\n",
			(void *)c);
		abort();
	}
	if (type && type->heap != c->heap) { /* release builds catch it on slow paths only */
		errno = EINVAL;
		return NULL;
	}
	atomic_store(&c->busy, 1);
	obj = alloc_fast(c, type, size, flags);
	atomic_store(&c->busy, 0);
	return obj;
}
#define ALLOC alloc_checked
#else
#define ALLOC alloc_fast
#endif

/* ---- Windows ---- */

/* A new window of class k over its list: `avail` blocks still in the current window plus its
 * rest, at most window_blocks; the sampling budget folded in (CoreCLR's combined_limit =
 * min(budget, window): docs/runtime.md, "Sampling"; here n = the blocks wholly before the sampled
 * byte, gap = the window's blocks from its block on). The budget is `r`, the exact count of failed
 * trials before the next success from here, when the caller knows it (`known`: the draw that
 * covered the last window or object goes on), else a fresh draw. A budget past the window's end
 * keeps its remainder in `after` for the next window: one draw per sample, not one per window
 * (CoreCLR redraws at every slow path, which is the same distribution: the remainder of a geometric
 * past a point is a fresh geometric). `sampling` is c->sampling, a constant in the sampled
 * block's short path. Inlined into its three callers. */
static inline __attribute__((always_inline)) void
window_set_at(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc, uintptr_t avail,
	      bool sampling, bool known, uint64_t r)
{
	uintptr_t b = hc->bsize, bytes;
	uint32_t blocks = (uint32_t)avail + rasp__rest(w), wb = w->wb;

	if (wb > blocks)
		wb = blocks;
	rasp__rest_set(w, blocks - wb);
	bytes = (uintptr_t)wb * b;
	c->unchecked += bytes;
	if (!sampling) {
		hc->n = wb;
		w->gap = 0;
		rasp__window_forget(w);
	} else {
		if (!known)
			r = rasp__geometric(c);
		if (r >= bytes) {
			hc->n = wb;
			w->gap = 0;
			w->after = r - bytes;
			w->known = true;
		} else { /* the sample falls in block n, off bytes in (a division per sample) */
			uintptr_t n = (uintptr_t)r / b;

			hc->n = n;
			w->gap = wb - n;
			w->off = (uintptr_t)r - n * b;
			rasp__window_forget(w);
		}
	}
	rasp__window_publish(w, wb);
}

/* Class k's window, from `avail` blocks left of it and the list's rest (window_set_at). */
static inline __attribute__((always_inline)) void window_set(struct rasp_context *c, unsigned k,
							     uintptr_t avail, bool sampling,
							     bool known, uint64_t r)
{
	window_set_at(c, &c->win[k], &c->hot[k], avail, sampling, known, r);
}

/* The thread adopted a new sampling state: every window is redrawn under it at once, so no
 * class goes on with trials of the old state (the announcement covers them all). */
static void windows_redraw(struct rasp_context *c)
{
	c->resize_known = false; /* resizes' trials: drawn under the old state too */
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		rasp__window_forget(&c->win[k]); /* an empty window's remainder too: drawn under the
						  * old state */
		uintptr_t avail = c->hot[k].n + c->win[k].gap;

		if (avail || rasp__rest(&c->win[k]))
			window_set(c, k, avail, c->sampling, false, 0);
	}
}

/* ---- The slow paths ---- */

/* Collect asked (trim): every list goes back to its page and empty pages to their segments. */
static void context_trim(struct rasp_context *c)
{
	atomic_store_explicit(&c->trim, 0, memory_order_relaxed);
	pthread_mutex_lock(&c->heap->lock);
	rasp__pages_release_empty(c);
	pthread_mutex_unlock(&c->heap->lock);
}

/* The class's list is used up: the next page with free blocks gives its whole local list.
 * `grow`: no free of the class came back to it since its last miss (rasp__page_extend). */
static int list_refill(struct rasp_context *c, unsigned k, bool grow)
{
	struct rasp__window *w = &c->win[k];
	struct rasp__page *pg = rasp__page_find(c, k, grow), *old = w->page;
	uint32_t n;

	if (!pg)
		return -ENOMEM;
	/* The owner's free cache's bound grows back when the list had run dry: a flush turned
	 * it off, and it comes back at half its bound before; then 4x a refill, so that a class
	 * that allocates again has it whole after a few refills. Not at a top-up: a thread freeing
	 * much and allocating now and then got one at each allocation, and its bound settled at 512
	 * blocks of 16 bytes on as many pages (400 of 980 pages left after 4 million frees, where
	 * 17 are left this way). At its most, the common case, it is a compare. */
	if (!rasp__rest(w) && w->cache < w->cache_max)
		rasp__window_set_cache(w, !w->cache			? w->cache_after
					  : w->cache_max / 4 < w->cache ? w->cache_max
									: w->cache * 4);
	n = rasp__page_take_list(c, pg, &c->hot[k].free);
	rasp__rest_set(w, rasp__rest(w) + n);
	w->page = pg;
	/* The page left behind may have emptied while it was current, when rasp__page_empty
	 * let it be: now it is kept under the context's bound or released like any other. */
	if (old && old != pg && !rasp__relaxed_load32(&old->used))
		rasp__page_empty(c, old);
	atomic_store_explicit(&c->n_refills,
			      atomic_load_explicit(&c->n_refills, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	return 0;
}

/* zs: what a sample counts (rasp__asked_z), the trials' bytes. */
static void *alloc_large(struct rasp_context *c, const rasp_type_t *type, size_t z, int kind,
			 uint64_t zs)
{
	bool sampled = false;
	uint64_t budget = 0;
	void *obj;

	/* A large object's trials come from a fresh draw (memoryless: any point may start one). */
	if (rasp__sampling_update(c))
		windows_redraw(c);
	if (c->sampling) {
		budget = rasp__geometric(c);
		sampled = budget < zs;
	}
	obj = rasp__large_alloc(c->heap, z, kind, type);
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	if (sampled)
		rasp__emit_sample(c, (uint32_t)kind, type, obj, zs, budget);
	return obj;
}

/* A small object of class k and kind: the sampling decision (docs/runtime.md, "Sampling"), the
 * block from the window, the list's rest or a refill, the event, the thread's adoption of a new
 * sampling state, and the next window. zs: what a sample counts (rasp__asked_z), the first zs
 * of the block's trials: a success in the block past them samples nothing, and, as a success
 * does, ends the draw (the next one starts after the block: memoryless, so no bytes are
 * favoured). Inlined into both slow paths below. */
static inline __attribute__((always_inline)) void *
alloc_small(struct rasp_context *c, const rasp_type_t *type, unsigned k, int kind, uint64_t zs)
{
	uint64_t budget = 0, r = 0;
	uintptr_t b = rasp__class_size[k], avail; /* blocks left in the window */
	bool was_sampling, sampled = false, hit = false;
	struct rasp__hot *hc = &c->hot[k];
	struct rasp__window *w = &c->win[k];
	bool grow = w->flush_in == w->flush_at; /* (before the count starts again) */
	struct rasp__header *p;

	was_sampling = c->sampling;
	w->flush_in = w->flush_at; /* a miss: the owner's frees are counted from here (free.c) */
	/* No trials pending: adopt the heap's state first, so that sampling switched on covers
	 * this object too (its announcement precedes any sample). Otherwise this object is
	 * decided by the trials the thread already drew, under the mean it announced; a change of
	 * state is adopted after its sample is out. */
	if (!was_sampling && rasp__state_check_due(c) && rasp__sampling_update(c))
		windows_redraw(c);
	avail = hc->n + w->gap;
	if (c->sampling) {
		/* r: failed trials from here to the next success. A sample pending in the window
		 * (gap > 0) is n blocks and off bytes on; with none, the window's bytes then its
		 * draw's remainder; unknown (a retired window), a fresh draw from here. */
		if (w->gap)
			r = hc->n * b + w->off;
		else if (w->known)
			r = hc->n * b + w->after;
		else
			r = rasp__geometric(c);
		hit = r < b;
		sampled = r < zs; /* (zs <= b) */
		budget = r;
		if (!hit)
			r -= b;
	}

	/* The block: from the window, else from the list's rest, else from a page. */
	if (avail) {
		avail--;
	} else if (!rasp__rest(w) && list_refill(c, k, grow) != 0) {
		hc->n = w->gap = 0;
		rasp__window_forget(w);
		rasp__window_publish(w, 0); /* (no window: rasp_heap_stats counts none held) */
		errno = ENOMEM;
		return NULL;
	} else {
		rasp__rest_set(w, rasp__rest(w) - 1);
	}
	p = hc->free;
	hc->free = rasp__hdr_next(p);
	/* The window as it stands, its pending draw dropped: consistent for a redraw. */
	hc->n = avail;
	w->gap = 0;
	rasp__window_forget(w);
	RASP__UNPOISON(p + 1, b - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type | ((uintptr_t)kind << RASP__HDR_KIND_SHIFT);
	if (sampled)
		rasp__emit_sample(c, (uint32_t)kind, type, p + 1, zs, budget);
	/* The draw goes on into the next window unless it was spent on this object. */
	if (!was_sampling || !rasp__state_check_due(c) || !rasp__sampling_update(c))
		window_set(c, k, avail, c->sampling, c->sampling && !hit, r);
	else
		windows_redraw(c); /* class k's included */
	return p + 1;
}

/* What a slow path does first: push the thread's queued cross-thread frees, and give lists
 * and empty pages back if a collect asked. */
static inline void pending_work(struct rasp_context *c)
{
	if (c->batch_n)
		rasp__batch_flush(c);
	if (RASP__UNLIKELY(atomic_load_explicit(&c->trim, memory_order_relaxed)))
		context_trim(c);
}

/* Everything else before it: argument errors, queued frees, a collect's trim, large and
 * pinned objects; `asked` the size whose bytes a sample counts on a heap of requested sizes
 * (rasp__asked_z). Inlined into the two below. */
static inline __attribute__((always_inline)) void *alloc_slow(struct rasp_context *c,
							      const rasp_type_t *type, size_t size,
							      unsigned flags, size_t asked)
{
	struct rasp_heap *h = c->heap;
	size_t z;

	if (!type || size == 0 || (flags & ~RASP_ALLOC_PINNED) || type->heap != h) {
		errno = EINVAL;
		return NULL;
	}
	z = rasp__object_size_raw(size);
	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	pending_work(c);
	if (z > RASP__SMALL_MAX_Z)
		return alloc_large(c, type, z,
				   (flags & RASP_ALLOC_PINNED) ? RASP_KIND_PINNED : RASP_KIND_LARGE,
				   rasp__asked_z(h, asked, z));
	return alloc_small(c, type, rasp__class_of(z),
			   (flags & RASP_ALLOC_PINNED) ? RASP_KIND_PINNED : RASP_KIND_SMALL,
			   rasp__asked_z(h, asked, rasp__class_size[rasp__class_of(z)]));
}

/* The fast path's way for flags, a missing type, sizes past the small classes. Cold and never
 * inlined. */
RASP__NOINLINE void *rasp__alloc_slow(struct rasp_context *c, const rasp_type_t *type, size_t size,
				      unsigned flags)
{
	return alloc_slow(c, type, size, flags, size);
}

/* rasp__alloc_asked's miss: the generic path, which knows the size asked. */
RASP__NOINLINE static void *alloc_asked_slow(struct rasp_context *c, const rasp_type_t *type,
					     size_t size, unsigned flags, size_t asked)
{
	return alloc_slow(c, type, size, flags, asked);
}

/* ---- The misses ---- */

/* The miss's generic way: apart from the lean miss, so that it keeps few registers (the
 * generic path inlined beside it cost every miss 14 instructions of saved registers). */
RASP__NOINLINE static void *miss_generic(struct rasp_context *c, const rasp_type_t *type,
					 size_t size, struct rasp__hot *hc)
{
	pending_work(c);
	return alloc_small(c, type, (unsigned)(hc - c->hot), RASP_KIND_SMALL,
			   rasp__asked_z(c->heap, size, hc->bsize));
}

/* The lean miss found the thread's sampling state changed: the generic way adopts it, told
 * that a check is due (the lean misses do not count `unchecked`). */
RASP__NOINLINE static void *miss_changed(struct rasp_context *c, const rasp_type_t *type,
					 size_t size, struct rasp__hot *hc)
{
	c->unchecked = c->heap->cfg.alloc_quantum;
	return miss_generic(c, type, size, hc);
}

/* An argument error: errno EINVAL, no object (cold, called last). */
RASP__NOINLINE static void *einval(void)
{
	errno = EINVAL;
	return NULL;
}

/* The list's next block, made a small object of `type` (the lean misses' pop). */
static inline struct rasp__header *take_block(struct rasp__hot *hc, const rasp_type_t *type)
{
	struct rasp__header *p = hc->free;

	hc->free = rasp__hdr_next(p);
	RASP__UNPOISON(p + 1, hc->bsize - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type; /* RASP_KIND_SMALL */
	return p;
}

/* The lean miss at the sampled block, from its draw on: the class's next window starts with
 * that draw (window_set, `avail` blocks left of the window, then the list's rest), as
 * alloc_small does for a sampled object whose thread has no state to adopt, and the event
 * goes out with the sample's offset in it, last, as a tail call; unless the success fell past
 * the zs bytes a sample counts (requested sizes: alloc_small says why that is no sample). */
static inline __attribute__((always_inline)) void *
sampled_finish(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc,
	       const rasp_type_t *type, uintptr_t avail, uint64_t off, struct rasp__header *p,
	       double e, uint64_t zs)
{
	w->gap = 0;
	w->flush_in = w->flush_at; /* a miss: the owner's frees are counted from here (free.c) */
	window_set_at(c, w, hc, avail, true, true, rasp__geometric_of(c, e));
	if (off >= zs)
		return p + 1;
	if (RASP__UNLIKELY(rasp__sample_counted_listened(c)))
		return rasp__emit_listened(c, RASP_KIND_SMALL, type, p + 1, zs, off);
	return p + 1;
}

/* The draw the ziggurat's tables do not decide (1.1%), and the rest, out of line. */
RASP__NOINLINE static void *sampled_slow(struct rasp_context *c, struct rasp__window *w,
					 struct rasp__hot *hc, const rasp_type_t *type,
					 uintptr_t avail, uint64_t off, struct rasp__header *p,
					 uint64_t u, uint64_t zs)
{
	return sampled_finish(c, w, hc, type, avail, off, p, rasp__exponential_slow(c->rng, u), zs);
}

/* The lean miss at the sampled block: the object takes the list's next block, the next
 * window a fresh draw, the event goes out. Out of line, one call per sample, and with no call
 * but in tail position, so that it saves no registers (with the draw's slow path and the
 * event called in its middle, it saved six: 14 instructions a sample, callgrind). The hot
 * entry from the window (six arguments in registers, `size` one of them). Returns the
 * object. */
RASP__OUTLINE __attribute__((returns_nonnull)) static void *
miss_sampled(struct rasp_context *c, struct rasp__window *w, const rasp_type_t *type, size_t size,
	     uintptr_t avail, uint64_t off)
{
	struct rasp__hot *hc = &c->hot[w - c->win];
	struct rasp__header *p = take_block(hc, type);
	uint64_t zs = rasp__asked_z(c->heap, size, hc->bsize), u;
	double e;

	if (RASP__UNLIKELY(!rasp__exponential_fast(c->rng, &u, &e)))
		return sampled_slow(c, w, hc, type, avail, off, p, u, zs);
	return sampled_finish(c, w, hc, type, avail, off, p, e, zs);
}

/* The lean miss with sampling on whose draw ends in this object or in the next window, or that
 * has no draw going on (`after` 0): the sample in this object (miss_sampled), no draw (the
 * generic way), or the next window cut before the block where the sample falls, as
 * window_set cuts it. Out of line: about one miss in six at 2 KiB blocks and the default mean,
 * fewer at smaller ones, and the others test one sign for all three. */
RASP__OUTLINE static void *miss_near(struct rasp_context *c, struct rasp__window *w,
				     const rasp_type_t *type, size_t size, uint32_t left,
				     uint32_t wb)
{
	/* The hot entry from the window: six arguments in registers, `size` one of them
	 * (recomputing left and wb instead cost 9 instructions a call, callgrind). */
	struct rasp__hot *hc = &c->hot[w - c->win];
	uintptr_t b = hc->bsize, n;
	uint64_t r;
	struct rasp__header *p;

	if (w->after < b) { /* the sample falls in this object, the list's next block */
		if (!w->known)
			return miss_generic(c, type, size, hc);
		rasp__rest_set(w, left);
		return miss_sampled(c, w, type, size, 0, w->after);
	}
	p = take_block(hc, type);
	rasp__rest_set(w, left - wb);
	rasp__window_publish(w, wb);
	r = w->after - b; /* below the window's bytes: the sample falls in block n, off bytes in */
	n = r / b;
	hc->n = n;
	w->gap = wb - n;
	w->off = r - n * b;
	rasp__window_forget(w);
	return p + 1;
}

/* The lean miss's taking of its block and its next window, once its list has one; `sampling`
 * is c->sampling, a constant in each of miss_take_any's two copies. */
static inline __attribute__((always_inline)) void *
miss_take(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc,
	  const rasp_type_t *type, size_t size, const bool sampling)
{
	uintptr_t b = hc->bsize;
	uint64_t r = 0;	    /* trials, as alloc_small counts them: up to ~37 means, past 32 bits */
	uintptr_t wb, left; /* (32-bit counts, held as words: no copy to widen one for hc->n) */
	struct rasp__header *p;

	w->flush_in = w->flush_at;
	left = (uint32_t)(rasp__rest(w) - 1); /* the object takes one */
	wb = w->wb < left ? w->wb : left;
	/* With sampling on, the draw going on past this object and a whole next window: below
	 * 0 (a draw is far below 2^63 trials), the sample falls in one of them, or no draw goes
	 * on, which miss_near sorts out; else the next window is whole, `after` what is left.
	 * (Two tests, this object's and the window's, took 4 instructions more a miss.) */
	if (sampling) {
		r = w->after - b - (uint64_t)wb * b;
		if (RASP__UNLIKELY((int64_t)r < 0))
			return miss_near(c, w, type, size, (uint32_t)left, (uint32_t)wb);
	}
	/* Then in an order that keeps few values live (each value held past here took a saved
	 * register, 12 instructions a miss for six): the block, the list and its account, and
	 * the window last. */
	p = take_block(hc, type);
	rasp__rest_set(w, (uint32_t)(left - wb));
	rasp__window_publish(w, (uint32_t)wb);
	hc->n = wb;
	if (sampling)
		w->after = r;
	return p + 1;
}

/* miss_take, its sampling test made once: a copy for each way (two tests of c->sampling took
 * 4 instructions a miss). */
static inline __attribute__((always_inline)) void *
miss_take_any(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc,
	      const rasp_type_t *type, size_t size)
{
	if (c->sampling)
		return miss_take(c, w, hc, type, size, true);
	return miss_take(c, w, hc, type, size, false);
}

/* The lean miss whose list needs blocks first: refilled, or topped up, then taken as any. */
RASP__OUTLINE static void *miss_refill(struct rasp_context *c, const rasp_type_t *type, size_t size,
				       struct rasp__hot *hc)
{
	unsigned k = (unsigned)(hc - c->hot);

	if (list_refill(c, k, c->win[k].flush_in == c->win[k].flush_at) != 0 &&
	    !rasp__rest(&c->win[k]))
		return miss_generic(c, type, size, hc); /* it says ENOMEM */
	return miss_take_any(c, &c->win[k], hc, type, size);
}

/* The fast path's miss: flags 0, a type, and the hot entry of the size's class, whose window
 * is used up; class 0 (a size of 0 or past the small range) goes the generic way. The
 * generic path's checks that the fast path already made are left out. Then the miss most
 * misses are (alloc_small decides the same, in fewer instructions), when no cross-thread
 * frees are queued, no trim is asked, and the check of the thread's sampling state, at every
 * lean miss, finds nothing changed. If the window ended at its sampled block (gap > 0),
 * that block is this object: miss_sampled. Else the window ran out at its end: the list is
 * refilled if it is empty (miss_refill), the object takes its next block and the next window
 * covers the blocks after it, as window_set would draw it. With sampling on, the draw that
 * covered the last window goes on (`known`): if the sample falls in this object, miss_sampled
 * takes it; else the window is cut before the block where the sample falls, if it falls in
 * it. Everything else goes to alloc_small (miss_generic): queued frees or a trim, a state to
 * adopt, no memory, or no draw going on (a class's first window, or a window retired or
 * redrawn). Every call here is a tail call, so the miss saves no registers (it saved six,
 * 14 instructions a miss, while the refill was a call in its middle). */
RASP__OUTLINE void *rasp__alloc_miss(struct rasp_context *c, const rasp_type_t *type, size_t size,
				     struct rasp__hot *hc)
{
	/* The class's window from its hot entry's offset, with no class index: the hot array
	 * is the context's first field, and a window is four hot entries' size, so w is
	 * c->win plus four times that offset (a subtraction and an lea; the index and then the
	 * window took six). The misses' other ways find the index from hc. */
	uintptr_t off = (uintptr_t)hc - (uintptr_t)c;
	struct rasp__window *w = (struct rasp__window *)((char *)c->win + off * RASP__WIN_PER_HOT);

	/* w computed once and kept: gcc otherwise recomputed it at each use and, short of
	 * registers for the values that recomputing kept live, saved three more. The empty asm
	 * makes w opaque, so it cannot be rebuilt; with w passed down to miss_take, an entry
	 * costs 11 instructions fewer (callgrind, bench/runtime/run.sh slowpath at 2 KiB: 97 ->
	 * 86 sampling off). */
	__asm__("" : "+r"(w));

	hc->n = 0; /* the fast path's decrement took it to -1 */
	if (off == 0)
		return rasp__alloc_slow(c, type, size, 0);
	if (RASP__UNLIKELY(type->heap != c->heap))
		return einval();
	/* One test of both words (a load, an `or` from memory, a branch: 3 instructions fewer
	 * than two tests). */
	if (RASP__UNLIKELY(
		(c->batch_n | (uint32_t)atomic_load_explicit(&c->trim, memory_order_relaxed)) != 0))
		return miss_generic(c, type, size, hc);
	/* The thread's sampling state, at every lean miss: a full window is at least a quantum
	 * (window_blocks), so that is about once a quantum of the class's allocation, and a
	 * separate test of whether a quantum had passed (with its count kept at every miss) took
	 * 5 instructions a miss to save none where a window is a quantum or more. */
	if (RASP__UNLIKELY(!rasp__sampling_unchanged(c)))
		return miss_changed(c, type, size, hc);
	if (w->gap) { /* the window ended at its sampled block: this object */
		if (c->sampling)
			return miss_sampled(c, w, type, size, w->gap - 1, w->off);
		return miss_generic(c, type, size, hc);
	}
	/* Refilled when used up, and topped up (the page's list before the blocks left) while
	 * the window would be short and the owner's frees come back to the list: alternating
	 * allocations and frees then keep `keep` blocks here (free.c), so that is rare. Not
	 * when no frees come back (a producer whose objects another thread frees): topped up at
	 * every such miss, `prodcons` ran 1.3x slower. */
	uint32_t rest = rasp__rest(w);

	/* keep is at least 1, so an empty list is a short one: where the list is long enough,
	 * one compare (an empty list tested first took two more a miss). */
	if (rest < w->keep && (!rest || w->flush_in != w->flush_at))
		return miss_refill(c, type, size, hc);
	return miss_take_any(c, w, hc, type, size);
}

/* ---- The entry points ---- */

RASP__NOINLINE static void *alloc_lookup(rasp_heap_t *h, const rasp_type_t *type, size_t size,
					 unsigned flags)
{
	struct rasp_context *c;

	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	c = rasp__context_attach(h);
	if (!c)
		return NULL;
	return ALLOC(c, type, size, flags);
}

void *rasp_alloc(rasp_heap_t *h, const rasp_type_t *type, size_t size, unsigned flags)
{
	if (RASP__UNLIKELY(!rasp__context_cache_is(h)))
		return alloc_lookup(h, type, size, flags);
	return ALLOC(rasp__context_cache_ctx(), type, size, flags);
}

void *rasp_context_alloc(rasp_context_t *c, const rasp_type_t *type, size_t size, unsigned flags)
{
	if (RASP__UNLIKELY(!c)) {
		errno = EINVAL;
		return NULL;
	}
	return ALLOC(c, type, size, flags);
}

/* ---- Requested sizes ---- */

/* rasp_alloc for `size` bytes whose sample counts `asked` (rasp__asked_z): rasp_alloc_aligned's
 * block on a heap of requested sizes, where the block's size is not what was asked. */
void *rasp__alloc_asked(rasp_heap_t *h, const rasp_type_t *type, size_t size, unsigned flags,
			size_t asked)
{
	/* (A size within 15 of SIZE_MAX wraps to class 0, as in alloc_fast: the generic way.) */
	uintptr_t q = (size + RASP_OBJECT_HEADER_SIZE + 7) >> 3, k;
	struct rasp_context *c;
	struct rasp__header *p;
	struct rasp__hot *hc;

	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	if (!h->cfg.requested_sizes)
		return rasp_alloc(h, type, size, flags);
	c = rasp__context_cache_is(h) ? rasp__context_cache_ctx() : rasp__context_attach(h);
	if (!c)
		return NULL;
	/* alloc_fast's pop (a window's blocks before its sampled one are no sample, whatever
	 * size is asked), its miss the generic way with the size asked (through the generic way
	 * every time, an aligned allocation and free took 205 instructions more, callgrind:
	 * 592 against 387 counting blocks; 420 with the pop). */
	if (flags != 0 || type == NULL)
		return alloc_asked_slow(c, type, size, flags, asked);
	k = RASP__LIKELY(q <= RASP__TABLE_MAX / 8) ? rasp__table_hot[q] : 0;
	hc = (struct rasp__hot *)((char *)c->hot + k);
	if (RASP__UNLIKELY(--hc->n < 0)) {
		/* A small class's miss is the lean miss's, given the size asked: it reads the size
		 * for nothing but what a sample counts, its class being hc's (the generic way took
		 * librasp-malloc's 1 KiB pairs 67 instructions more, callgrind). */
		if (k)
			return rasp__alloc_miss(c, type, asked, hc);
		hc->n = 0; /* as the lean miss puts it back */
		return alloc_asked_slow(c, type, size, flags, asked);
	}
	p = hc->free;
	hc->free = rasp__hdr_next(p);
	RASP__UNPOISON(p + 1, hc->bsize - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type; /* RASP_KIND_SMALL */
	return p + 1;
}

/* The old allocation ends (its sample's free, told as any free's: before anything else can
 * happen at its address) and the new one is drawn from the thread's resize stream: a geometric
 * countdown of failed trials of its own, which resizes in place draw from and nothing else
 * (the trials are memoryless and independent, so a separate stream of them is the same model
 * as the windows' one). Its sample carries the block's Address, as the object's first sample
 * did, and goes under the kind the object has. Out of line: rasp__resized's way for anything
 * but a resize whose trials all fail within the thread's quantum. */
RASP__NOINLINE static void resized_slow(struct rasp_heap *h, void *obj, size_t size,
					const rasp_type_t *type)
{
	struct rasp_context *c;
	struct rasp__segment *s;
	struct rasp__header *blk, *own;
	uint64_t z, r;

	if (!h || !h->cfg.requested_sizes || !type)
		return;
	/* The block (for the Address, an aligned object's being its block's) only where an event
	 * needs it: the callers' own checks (rasp_realloc's, librasp-malloc's usable size) read
	 * the header already. */
	own = rasp__header_of(obj);
	if (rasp__hdr_sampled(own)) {
		blk = rasp__block_of(h, obj, "realloc", &s);
		if (!blk)
			return;
		rasp__emit_freed_in_place(
		    h, own, blk + 1, rasp__sample_size_take(h, blk + 1, rasp_object_size(obj)));
	}
	c = rasp__context_cache_is(h) ? rasp__context_cache_ctx() : rasp__context_attach(h);
	if (!c)
		return;
	/* As alloc_small: no trials pending, the heap's state first; else this allocation is
	 * decided by the trials drawn, and a new state adopted after its sample is out. */
	if (!c->sampling && rasp__state_check_due(c) && rasp__sampling_update(c))
		windows_redraw(c);
	z = rasp__asked_z(h, size, 0);
	c->unchecked += z; /* (a quantum of them, and the state is checked: below) */
	if (c->sampling && z) {
		if (!c->resize_known) {
			c->resize_left = rasp__geometric(c);
			c->resize_known = true;
		}
		if (c->resize_left >= z) {
			c->resize_left -= z;
		} else {
			r = c->resize_left;
			c->resize_known = false; /* the next resize draws afresh after a success */
			if (rasp__sample_counted_listened(c) &&
			    (blk = rasp__block_of(h, obj, "realloc", &s)) != NULL)
				rasp__emit_listened_at(c, (uint32_t)rasp__hdr_kind(own), type,
						       blk + 1, own, z, r);
		}
	}
	if (rasp__state_check_due(c) && rasp__sampling_update(c))
		windows_redraw(c);
}

/* The common resize: an object not sampled, the thread's context cached, and, within the
 * quantum of bytes after which the thread checks its sampling state (as a window's bytes
 * are: a resize sees a new state within a quantum of resizes, as an allocation within a
 * window), no success in its bytes. A few loads and no call (the whole way, with its
 * checks and saved registers, took 69 instructions a resize, callgrind). */
RASP_API void rasp__resized(rasp_heap_t *h, void *obj, size_t size, const rasp_type_t *type)
{
	struct rasp_context *c;
	uint64_t z;

	if (RASP__UNLIKELY(!h || !h->cfg.requested_sizes || !type || !rasp__context_cache_is(h) ||
			   rasp__hdr_sampled(rasp__header_of(obj))))
		return resized_slow(h, obj, size, type);
	c = rasp__context_cache_ctx();
	z = rasp__asked_z(h, size, 0);
	if (RASP__UNLIKELY(c->unchecked + z >= h->cfg.alloc_quantum))
		return resized_slow(h, obj, size, type);
	if (c->sampling) {
		if (RASP__UNLIKELY(!c->resize_known || c->resize_left < z))
			return resized_slow(h, obj, size, type);
		c->resize_left -= z;
	}
	c->unchecked += z;
}
