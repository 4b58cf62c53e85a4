/* The C allocation API of librasp-malloc: malloc, free, calloc, realloc, reallocarray and
 * malloc_usable_size, on rasp's heap (block.c), with glibc's behaviour at the edges:
 * malloc(0) a unique pointer, realloc(p, 0) frees p and returns NULL, requests past
 * PTRDIFF_MAX and overflowing products fail with ENOMEM, glibc's own pointers stay glibc's. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "heap.h"

RASP_MALLOC_API void *malloc(size_t n)
{
	return rasp__malloc_fast(RASP__FAM_MALLOC, n, rasp__malloc_alloc_miss);
}

RASP_MALLOC_API void free(void *p)
{
	rasp__malloc_free(p);
}

RASP_MALLOC_API void *calloc(size_t count, size_t n)
{
	size_t total;
	void *p;

	if (__builtin_mul_overflow(count, n, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!rasp__malloc_usable_heap())
		return __libc_calloc(count, n);
	p = rasp__malloc_alloc(RASP__FAM_CALLOC, total);
	if (p)
		memset(p, 0, total);
	return p;
}

/* p, of rasp's heap, resized in place to n bytes: to the runtime, an allocation of n bytes
 * of the family realloc with trials of its own, and the old allocation's end (its sample's
 * free, if it was sampled). The size given is 8 bytes more, as block.c's are (heap.c's pad). */
static void resized(void *p, size_t n)
{
	rasp__malloc_busy++;
	rasp__resized(rasp__malloc_heap, p, n + 8, rasp__malloc_types[RASP__FAM_REALLOC]);
	rasp__malloc_busy--;
}

/* Every realloc that returns memory is an allocation of the new size, of the family realloc,
 * and the old one's end (docs/usage.md, "What is estimated"). A resize that keeps the block
 * (the new size fits and uses at least half of it) is done in place: no block moves, but its
 * n bytes are trials as any allocation's (resized); any other allocates a block and frees
 * the old one. */
RASP_MALLOC_API void *realloc(void *p, size_t n)
{
	size_t have;
	void *q;

	if (!p)
		return rasp__malloc_alloc(RASP__FAM_REALLOC, n);
	if (n == 0) {
		rasp__malloc_free(p);
		return NULL;
	}
	have = rasp__malloc_usable(p);
	if (!rasp__malloc_ours(p)) {
		/* glibc's block (made before the heap was ready, or while this thread ran inside
		 * the runtime): the call is an allocation of n bytes all the same, so the block
		 * moves to rasp's heap below, where they are trials (free hands the old one to
		 * glibc). Kept on glibc's realloc, a block made at start and grown all run long
		 * was never sampled: realloc's estimates of perl and python3 fell 1-2% short of
		 * the truth (malloc-record-real). */
		if (!rasp__malloc_usable_heap() || !rasp__malloc_glibc_usable)
			return __libc_realloc(p, n);
	} else if (n <= have && n >= have / 2) {
		resized(p, n);
		return p;
	}
	q = rasp__malloc_alloc(RASP__FAM_REALLOC, n);
	if (!q)
		return NULL;
	memcpy(q, p, n < have ? n : have);
	rasp__malloc_free(p);
	return q;
}

RASP_MALLOC_API void *reallocarray(void *p, size_t count, size_t n)
{
	size_t total;

	if (__builtin_mul_overflow(count, n, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

RASP_MALLOC_API size_t malloc_usable_size(void *p)
{
	return rasp__malloc_usable(p);
}
