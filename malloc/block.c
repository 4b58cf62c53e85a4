/* Blocks as malloc hands them out. rasp's objects are 8-aligned (an 8-byte header before
 * each), malloc's must be 16-aligned: each takes 8 bytes more, and where the object is at 8
 * mod 16 the pointer returned is 8 bytes into it, its first word 0. free tells the two
 * apart by the word before the pointer: 0 there, else the object's own header (a type's
 * address, never 0). The cost: 8 bytes an allocation; the heap counts sizes asked
 * (heap.c), so a sample counts n, not them. */
#include <errno.h>
#include <string.h>

#include "heap.h"
#include "rasp/inline.h"

/* Past this, n + alignment words could overflow; the runtime refuses less than this too. */
#define MAX_REQUEST ((size_t)PTRDIFF_MAX / 2)

static void *from_object(void *obj)
{
	uintptr_t *w = obj;

	if (((uintptr_t)obj & (RASP__MALLOC_ALIGN - 1)) == 0)
		return obj;
	w[0] = 0;
	return w + 1;
}

/* The object of a pointer of ours (malloc's or an aligned one's, which is its own). */
static void *to_object(void *p)
{
	uintptr_t *w = p;

	return w[-1] == 0 ? (void *)(w - 1) : p;
}

/* One call into the runtime, with the guard up: what it allocates itself goes to glibc. Not
 * cold: the inline path's misses come here (every few allocations of a large class). */
__attribute__((noinline)) static void *heap_alloc(enum rasp__family fam, size_t n, size_t alignment)
{
	void *obj;

	/* The heap is ready (rasp__malloc_usable_heap's acquire load came first): the inline
	 * paths may use it from now on. The same value from every thread, relaxed. */
	__atomic_store_n(&rasp__malloc_fast_heap, rasp__malloc_heap, __ATOMIC_RELAXED);
	rasp__malloc_tls_heap = NULL; /* (it may be set: a miss of the inline path) */
	rasp__malloc_busy = 1;
	if (alignment)
		obj =
		    rasp_alloc_aligned(rasp__malloc_heap, rasp__malloc_types[fam], n, alignment, 0);
	else
		obj = rasp_alloc(rasp__malloc_heap, rasp__malloc_types[fam], n, 0);
	rasp__malloc_busy = 0;
	rasp__malloc_tls_heap = rasp__malloc_heap;
	return obj;
}

/* rasp_alloc's fast path inline (rasp/inline.h's, for a size known only now): the thread's
 * context on the heap, its class's list popped under the same window, so sampling is as
 * rasp_alloc's; anything else (another heap last used, the window used up, a sample due, a
 * large size) is rasp_alloc's. Saves the call and its argument checks: 13 instructions a
 * malloc (callgrind, bench/malloc/pair.sh). */
#ifdef RASP__INLINE_ON
/* rasp_inline_class of each payload up to RASP_INLINE_MAX_SIZE, by its eighths rounded up,
 * as a byte offset into the context's hot entries: one load instead of its 20 instructions. */
uint16_t rasp__malloc_class_hot[RASP_INLINE_MAX_SIZE / 8 + 1];

__attribute__((constructor(101))) static void class_hot_init(void)
{
	for (size_t k = 1; k <= RASP_INLINE_MAX_SIZE / 8; k++)
		rasp__malloc_class_hot[k] =
		    (uint16_t)(rasp_inline_class(8 * k) * sizeof(struct rasp_inline_hot));
}
#endif

/* Until the first call that reaches the heap, an address no heap has: the inline paths'
 * compares with it fail, for every thread's cache and every segment, so neither needs a test
 * of its own that the heap is ready. */
static const char not_yet;
rasp_heap_t *rasp__malloc_fast_heap = (rasp_heap_t *)&not_yet;
__thread rasp_heap_t *rasp__malloc_tls_heap __attribute__((tls_model("initial-exec")));
const uint8_t *rasp__malloc_map;
uintptr_t rasp__malloc_map_units;

/* The map's address from librasp (loaded first: a dependency), then its length, which lets
 * the inline free use it; the compiler barrier keeps the two stores in that order (one thread
 * runs constructors; a byte map read plainly is read as rasp_free reads it). */
__attribute__((constructor(101))) static void map_init(void)
{
	rasp__malloc_map = (const uint8_t *)rasp__segment_map_base();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rasp__malloc_map_units = RASP__MAP_SIZE;
}

/* z: the object's payload, 8 bytes more than asked (block.c's word). */
static inline void *fast_alloc(enum rasp__family fam, size_t z)
{
#ifdef RASP__INLINE_ON
	if (z <= RASP_INLINE_MAX_SIZE) {
		struct rasp_inline_cache *tc = &rasp_inline_cache_v1;

		if (__builtin_expect(
			__atomic_load_n(&tc->heap, __ATOMIC_RELAXED) == rasp__malloc_heap, 1)) {
			struct rasp_inline_hot *hc =
			    (struct rasp_inline_hot *)((char *)tc->ctx +
						       rasp__malloc_class_hot[(z + 7) / 8]);

			if (__builtin_expect(--hc->n >= 0, 1)) {
				uintptr_t *p = (uintptr_t *)hc->free;

				hc->free = (void *)(*p & ~(uintptr_t)1);
				*p = (uintptr_t)rasp__malloc_types[fam];
				return p + 1;
			}
			hc->n = 0; /* as it was, for rasp_alloc (rasp/inline.h says why) */
		}
	}
#endif
	return heap_alloc(fam, z, 0);
}

void *rasp__malloc_alloc(enum rasp__family fam, size_t n)
{
	void *obj;

	if (!rasp__malloc_usable_heap())
		return __libc_malloc(n);
	if (n > MAX_REQUEST) {
		errno = ENOMEM;
		return NULL;
	}
	obj = fast_alloc(fam, n + 8);
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	return from_object(obj);
}

/* As rasp__malloc_alloc, less its inline path: the inline paths' miss (malloc/heap.h), which
 * would find that path's answer again (a miss of 1 KiB blocks took 25 instructions more,
 * callgrind). */
void *rasp__malloc_alloc_miss(enum rasp__family fam, size_t n)
{
	void *obj;

	if (!rasp__malloc_usable_heap())
		return __libc_malloc(n);
	if (n > MAX_REQUEST) {
		errno = ENOMEM;
		return NULL;
	}
	obj = heap_alloc(fam, n + 8, 0);
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	return from_object(obj);
}

void *rasp__malloc_aligned(enum rasp__family fam, size_t n, size_t alignment)
{
	void *obj;

	if (alignment <= RASP__MALLOC_ALIGN)
		return rasp__malloc_alloc(fam, n);
	if (!rasp__malloc_usable_heap() || alignment > RASP__MALLOC_MAX_ALIGN)
		return __libc_memalign(alignment, n);
	if (n > MAX_REQUEST) {
		errno = ENOMEM;
		return NULL;
	}
	/* Its own object, the aligned pointer (the word before it its header, never 0), 8 bytes
	 * more than asked as malloc's are (the heap counts the size less 8: n, 0 included). */
	obj = heap_alloc(fam, n + 8, alignment);
	if (!obj)
		errno = ENOMEM;
	return obj;
}

void rasp__malloc_free_slow(void *p)
{
	if (!p)
		return;
	if (!rasp__malloc_ours(p)) {
		__libc_free(p);
		return;
	}
	/* Possible even before the heap exists: another heap of the process (a program linked
	 * with librasp) owns the mapping, and rasp_free refuses it with a message. errno only
	 * changes when it refuses (EINVAL). */
	rasp_heap_t *inline_heap = rasp__malloc_tls_heap; /* NULL if already inside */

	rasp__malloc_tls_heap = NULL;
	rasp__malloc_busy++;
	rasp_free(rasp__malloc_heap, to_object(p));
	rasp__malloc_busy--;
	rasp__malloc_tls_heap = inline_heap;
}

size_t rasp__malloc_usable(void *p)
{
	void *obj;

	if (!p)
		return 0;
	if (!rasp__malloc_ours(p))
		return rasp__malloc_glibc_usable ? rasp__malloc_glibc_usable(p) : 0;
	obj = to_object(p);
	return rasp_usable_size(obj) - (size_t)((char *)p - (char *)obj);
}
