/* The heap's state as the allocation paths read it (heap.c owns it). */
#ifndef RASP_MALLOC_HEAP_H
#define RASP_MALLOC_HEAP_H

#include <stdatomic.h>

#include "../runtime/owner-free.h"
#include "internal.h"
#include "rasp/inline.h"

/* The library's own (hidden): each read is one load, not a GOT load and a load. */
#pragma GCC visibility push(hidden)
extern rasp_heap_t *rasp__malloc_heap;
extern const rasp_type_t *rasp__malloc_types[RASP__FAM_COUNT];
/* Set once the heap and its types exist (release; read acquire). */
extern atomic_bool rasp__malloc_ready;
/* Non-zero while this thread runs inside the runtime: its allocations then go to glibc. */
extern __thread unsigned char rasp__malloc_busy __attribute__((tls_model("initial-exec")));
/* glibc's malloc_usable_size (NULL if dlsym found none). */
extern size_t (*rasp__malloc_glibc_usable)(void *);

/* Whether this call may use the heap: it exists and this thread is not inside the runtime. */
static inline bool rasp__malloc_usable_heap(void)
{
	return __builtin_expect(atomic_load_explicit(&rasp__malloc_ready, memory_order_acquire) &&
				    !rasp__malloc_busy,
				1);
}

/* rasp__malloc_heap once a call has reached it (block.c), until then an address no heap or
 * segment names: what the inline paths compare with. */
extern rasp_heap_t *rasp__malloc_fast_heap;
/* The heap while this thread may pop its lists inline (a call reached the heap, and the thread
 * is not inside the runtime: block.c clears it around each call in), else NULL, which no
 * thread's cache holds (librasp's empty cache names a heap of its own). malloc's one test of
 * the thread's state: its cache against this, where it took the cache against the heap and
 * the busy byte apart (2 instructions more a malloc, callgrind). */
extern __thread rasp_heap_t *rasp__malloc_tls_heap __attribute__((tls_model("initial-exec")));
/* librasp's segment map (rasp__segment_map_base) and its length in units, 0 until block.c's
 * constructor has them: until then every free is the checked path's. The length compared
 * in memory costs what the constant did, and the address one load, as a GOT entry would. */
extern const uint8_t *rasp__malloc_map;
extern uintptr_t rasp__malloc_map_units;
#pragma GCC visibility pop

#ifdef RASP__INLINE_ON
/* Offsets of each malloc size's class into a context's hot entries, by eighths of n + 8
 * (block.c). */
extern uint16_t rasp__malloc_class_hot[RASP_INLINE_MAX_SIZE / 8 + 1]
    __attribute__((visibility("hidden")));
#endif

/* malloc's fast path, in each entry point's own frame (no call, no frame): n bytes of the
 * family popped off the thread's list of their class under its window, as rasp_alloc's fast
 * path would (rasp/inline.h). The class is that of n + 8 rounded up to 16 (block.c's
 * payload_of), whose blocks, at 8 mod 16, have 16-aligned payloads: no word to write, no test
 * (they took 2 instructions, 4 for an object 8 bytes off 16). Else (a size past the inline
 * ones, the thread inside the runtime, its cache on another heap or none, the window used up)
 * slow(fam, n), in tail position. A cache that names the heap implies it is ready: the thread
 * reached it through block.c's heap_alloc. 22 instructions (callgrind, bench/malloc/pair.sh). */
static inline __attribute__((always_inline)) void *
rasp__malloc_fast(enum rasp__family fam, size_t n, void *(*slow)(enum rasp__family, size_t))
{
#ifdef RASP__INLINE_ON
	if (__builtin_expect(n <= RASP_INLINE_MAX_SIZE - 8, 1)) {
		struct rasp_inline_cache *tc = &rasp_inline_cache_v1;

		if (__builtin_expect(tc->heap == rasp__malloc_tls_heap, 1)) {
			struct rasp_inline_hot *hc =
			    (struct rasp_inline_hot *)((char *)tc->ctx +
						       rasp__malloc_class_hot[(n + 15) / 8]);

			if (__builtin_expect(--hc->n >= 0, 1)) {
				uintptr_t *b = (uintptr_t *)hc->free;

				hc->free = (void *)(*b & ~(uintptr_t)1);
				*b = (uintptr_t)rasp__malloc_types[fam];
				return b + 1;
			}
			hc->n = 0; /* as it was, for rasp_alloc (rasp/inline.h says why) */
		}
	}
#endif
	return slow(fam, n);
}

/* free's fast path, in each entry point's own frame: rasp_free's checks on the pointer
 * (a small segment of this heap in the segment map, before any word at it is read; a block's
 * start, by its position, before its header is read; not free, not sampled), then the owner's
 * free inline (runtime/owner-free.h). Anything else (NULL, glibc's pointers, large and aligned
 * objects, sampled ones, double frees, another thread's block, a free that flushes or empties
 * a page) is rasp__malloc_free_slow's, which checks and explains as rasp_free does. The header
 * is the word before the pointer (block.c: no word of malloc's own). 43 instructions onto the
 * thread's list, 51 onto the page's past its bound (callgrind, bench/malloc/pair.sh;
 * docs/performance.md, "librasp-malloc", says where they go). */
static inline __attribute__((always_inline)) void rasp__malloc_free(void *p)
{
	uintptr_t *w = p;
	uintptr_t i = (uintptr_t)(w - 1) >> RASP__SEGMENT_SHIFT;
	struct rasp__segment *s = (struct rasp__segment *)(i << RASP__SEGMENT_SHIFT);

	/* The map's byte read plainly (a byte's load is atomic on every target; read once
	 * here), so that it is compared in memory (the atomic load took two instructions
	 * more). */
	if (!RASP__DEBUG &&
	    __builtin_expect(i < rasp__malloc_map_units && rasp__malloc_map[i] == RASP__MAP_START,
			     1)) {
		rasp_heap_t *h = __atomic_load_n(&rasp__malloc_fast_heap, __ATOMIC_RELAXED);

		if (__builtin_expect(s->small_heap == h, 1)) {
			struct rasp__header *hdr = (struct rasp__header *)(w - 1);
			struct rasp__page *pg = rasp__page_at(s, hdr);

			if (__builtin_expect(
				rasp__page_has_block(pg, hdr) &&
				    !(hdr->word & (RASP__HDR_FREE | RASP__HDR_SAMPLED)) &&
				    rasp__owner_free_try(h, pg, hdr),
				1))
				return;
		}
	}
	rasp__malloc_free_slow(p);
}

#endif /* RASP_MALLOC_HEAP_H */
