/* rasp/inline.h: rasp_alloc's fast path compiled into the caller, for allocation sites whose
 * size is a compile-time constant (a runtime's `new T`). It pops the calling thread's free
 * list of the size's class inline, under the same window as rasp_alloc (the sampling budget
 * folded into the count), so sampling stays exact: every object it cannot take inline (the
 * window used up, a sample due, a heap other than the thread's last, a size not constant,
 * flags, no type) goes to rasp_alloc, which decides as it always does.
 *
 * What it costs: the layout below (the context's per-class counts and lists, the thread's
 * heap cache, the free-block link's low bit, the size classes) is compiled into the caller.
 * It is version 1 of that layout, and its thread-local symbol carries the version: a librasp
 * with another layout does not define rasp_inline_cache_v1, so a program built against this
 * one fails to load instead of corrupting memory. What it saves: the call, the arguments'
 * set-up, and the class lookup, which a constant size folds away (docs/performance.md).
 *
 * Define RASP_NO_INLINE to compile every call as rasp_alloc; so does a build without
 * optimization (-O0, -Og), where no size is a constant to the compiler, and one with
 * AddressSanitizer (librasp keeps free blocks poisoned there; its own fast path unpoisons
 * them). A librasp built with AddressSanitizer does not define rasp_inline_cache_v1, so a
 * caller built without it fails to load. Debug builds of librasp check more in rasp_alloc
 * than this path does (a context used while another thread enumerates it, a type of another
 * heap): build the caller with RASP_NO_INLINE to have them. GCC and clang on x86-64 and
 * AArch64 only (thread-local storage in the initial-exec model, which librasp itself
 * uses). */
#ifndef RASP_INLINE_H
#define RASP_INLINE_H

#include "rasp/rasp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest payload the inline path takes; larger constant sizes call rasp_alloc. */
#define RASP_INLINE_MAX_SIZE 8192u

/* One size class of a context (librasp's struct rasp__hot, which it checks against this):
 * n blocks may still be taken before the slow path must run; `free` is the list, each free
 * block's first word its successor with the low bit set. The context begins with one of
 * these per class, class 0 never taken. */
struct rasp_inline_hot {
	intptr_t n;
	void *free;
	uintptr_t bsize;
	uintptr_t spare;
};

/* The calling thread's last heap and its context on it (librasp's one-entry cache).
 * rasp_heap_destroy clears `heap` in every thread that holds it, hence the atomic loads. */
struct rasp_inline_cache {
	rasp_heap_t *heap;
	struct rasp_inline_hot *ctx;
};

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__)) &&                          \
    !defined(RASP_NO_INLINE) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RASP__INLINE_OFF 1
#endif
#endif
#ifndef RASP__INLINE_OFF
#define RASP__INLINE_ON 1
#endif
#endif

#ifdef RASP__INLINE_ON
RASP_API extern __thread struct rasp_inline_cache rasp_inline_cache_v1
    __attribute__((tls_model("initial-exec")));
#endif

/* The size class of `size` payload bytes (1..RASP_INLINE_MAX_SIZE), as librasp's table gives
 * it: object sizes (payload + 8-byte header, rounded up to 8) 16..64 by 8 are classes 1..7,
 * then each doubling (2^e, 2^(e+1)] is cut into eight classes of 2^(e-3) bytes. Pure, so a
 * constant size folds to a constant; test-sizeclass.c checks it against the table for every
 * size. */
static inline unsigned rasp_inline_class(size_t size)
{
	size_t z = (size + 8 + 7) & ~(size_t)7;
	unsigned e;
	size_t step;

	if (z <= 64)
		return (unsigned)((z - 16) / 8 + 1);
	e = 63u - (unsigned)__builtin_clzll((unsigned long long)(z - 1));
	step = (size_t)1 << (e - 3);
	return 8u * (e - 5u) + (unsigned)((z - ((size_t)1 << e) + step - 1) / step) - 1u;
}

/* As rasp_alloc(heap, type, size, 0), inline where `size` is a constant of 1 to
 * RASP_INLINE_MAX_SIZE bytes and the heap is the thread's last; else the call. */
static inline void *rasp_alloc_inline(rasp_heap_t *heap, const rasp_type_t *type, size_t size)
{
#ifdef RASP__INLINE_ON
	if (__builtin_constant_p(size) && size >= 1 && size <= RASP_INLINE_MAX_SIZE) {
		struct rasp_inline_cache *tc = &rasp_inline_cache_v1;

		if (__builtin_expect(__atomic_load_n(&tc->heap, __ATOMIC_RELAXED) == heap, 1) &&
		    __builtin_expect(type != NULL, 1)) {
			struct rasp_inline_hot *hc = tc->ctx + rasp_inline_class(size);

			if (__builtin_expect(--hc->n >= 0, 1)) {
				uintptr_t *p = (uintptr_t *)hc->free;

				hc->free = (void *)(*p & ~(uintptr_t)1);
				/* The next block's line, for the class's next allocation (its link
				 * was written when it was freed, maybe long ago): one instruction,
				 * which took 5% off `bulk` (docs/performance.md). */
				__builtin_prefetch(hc->free, 1);
				*p = (uintptr_t)type; /* the header: a small object's kind is 0 */
				return p + 1;
			}
			/* A miss: the count back as it was, so that rasp_alloc finds the state
			 * its own path would (a debug build may refuse the call before its
			 * decrement; a count left at -1 would break the next collect). It
			 * was 0: a count is never below 0 between calls. Stored, not
			 * incremented, so the decrement above stays one instruction on memory
			 * (hc->n++ cost every inline allocation 3 more, callgrind). */
			hc->n = 0;
		}
	}
#endif
	return rasp_alloc(heap, type, size, 0);
}

#ifdef __cplusplus
}
#endif

#endif /* RASP_INLINE_H */
