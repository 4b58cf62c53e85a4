/* Blocks as malloc hands them out. rasp's objects are 8-aligned (an 8-byte header before
 * each), malloc's must be 16-aligned. The heap's small blocks start at 8 mod 16 (heap.c,
 * rasp__heap_block_offset), and malloc asks for blocks of multiples of 16 bytes (n + 8 rounded
 * up to 16: each multiple of 16 up to 128 is a class, and every class past 128 a multiple of
 * 16, sizeclass.c), so a small object's payload is 16-aligned as it is; a large one is
 * 16-aligned in its span or mapping (arena.c, large.c), an aligned one placed so. The pointer
 * returned is the object, its header before it, as rasp_free takes it. The cost: the class's
 * rounding to 16 (a word of 0 before each object at 8 mod 16 took 8 bytes more and 2 to 4
 * instructions a malloc). The heap counts sizes asked (heap.c), so a sample counts n, not the
 * block. */
#include <errno.h>
#include <string.h>

#include "heap.h"
#include "rasp/inline.h"

/* Past this, n and the runtime's rounding could overflow; it refuses less than this too. */
#define MAX_REQUEST ((size_t)PTRDIFF_MAX / 2)

/* The payload asked of the runtime for n bytes: that of a small block of a multiple of 16
 * bytes (its payload 16-aligned), else (a large object) n. n is at most MAX_REQUEST. */
static size_t payload_of(size_t n)
{
	size_t z = (n + RASP_OBJECT_HEADER_SIZE + 15) & ~(size_t)15;

	return z <= RASP__SMALL_MAX_Z ? z - RASP_OBJECT_HEADER_SIZE : n;
}

/* One call into the runtime, with the guard up: what it allocates itself goes to glibc. Not
 * cold: the inline path's misses come here (every few allocations of a large class). n is the
 * size asked; the heap counts the size it is given less its pad of 8: n. */
__attribute__((noinline)) static void *heap_alloc(enum rasp__family fam, size_t n, size_t alignment)
{
	void *obj;

	/* The heap is ready (rasp__malloc_usable_heap's acquire load came first): the inline
	 * paths may use it from now on. The same value from every thread, relaxed. */
	__atomic_store_n(&rasp__malloc_fast_heap, rasp__malloc_heap, __ATOMIC_RELAXED);
	rasp__malloc_tls_heap = NULL; /* (it may be set: a miss of the inline path) */
	rasp__malloc_busy = 1;
	if (alignment)
		obj = rasp_alloc_aligned(rasp__malloc_heap, rasp__malloc_types[fam], n + 8,
					 alignment, 0);
	else
		obj = rasp__alloc_asked(rasp__malloc_heap, rasp__malloc_types[fam], payload_of(n),
					0, n + 8);
	rasp__malloc_busy = 0;
	rasp__malloc_tls_heap = rasp__malloc_heap;
	return obj;
}

#ifdef RASP__INLINE_ON
/* The class of each malloc size up to RASP_INLINE_MAX_SIZE - 8, by the eighths of n + 8 rounded
 * up (k = (n + 15) / 8), as a byte offset into the context's hot entries: the class of blocks
 * of 8k bytes rounded up to 16 (payload_of's), one load instead of its 20 instructions. */
uint16_t rasp__malloc_class_hot[RASP_INLINE_MAX_SIZE / 8 + 1];

__attribute__((constructor(101))) static void class_hot_init(void)
{
	for (size_t k = 1; k <= RASP_INLINE_MAX_SIZE / 8; k++)
		rasp__malloc_class_hot[k] =
		    (uint16_t)(rasp_inline_class(((8 * k + 15) & ~(size_t)15) -
						 RASP_OBJECT_HEADER_SIZE) *
			       sizeof(struct rasp_inline_hot));
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

/* n bytes of the family (with alignment > 16, an aligned object) past the inline path: glibc's
 * while the heap cannot be used (or the alignment is past its largest), ENOMEM past MAX_REQUEST or
 * when the heap has no memory. The one body of both callers below; alignment is a constant in each.
 */
static inline __attribute__((always_inline)) void *checked_alloc(enum rasp__family fam, size_t n,
								 size_t alignment)
{
	void *obj;

	if (!rasp__malloc_usable_heap() || alignment > RASP__MALLOC_MAX_ALIGN)
		return alignment ? __libc_memalign(alignment, n) : __libc_malloc(n);
	if (n > MAX_REQUEST) {
		errno = ENOMEM;
		return NULL;
	}
	obj = heap_alloc(fam, n, alignment);
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	return obj;
}

/* The inline path's miss (malloc/heap.h), which would find that path's answer again (a miss
 * of 1 KiB blocks took 25 instructions more through it, callgrind). */
void *rasp__malloc_alloc_miss(enum rasp__family fam, size_t n)
{
	return checked_alloc(fam, n, 0);
}

void *rasp__malloc_alloc(enum rasp__family fam, size_t n)
{
	return rasp__malloc_fast(fam, n, rasp__malloc_alloc_miss);
}

/* Alignments up to 16 are malloc's own; larger ones the runtime's aligned objects, whose
 * pointer is the object (its own header before it). */
void *rasp__malloc_aligned(enum rasp__family fam, size_t n, size_t alignment)
{
	if (alignment <= RASP__MALLOC_ALIGN)
		return rasp__malloc_alloc(fam, n);
	return checked_alloc(fam, n, alignment);
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
	rasp_free(rasp__malloc_heap, p);
	rasp__malloc_busy--;
	rasp__malloc_tls_heap = inline_heap;
}

size_t rasp__malloc_usable(void *p)
{
	if (!p)
		return 0;
	if (!rasp__malloc_ours(p))
		return rasp__malloc_glibc_usable ? rasp__malloc_glibc_usable(p) : 0;
	return rasp_usable_size(p);
}
