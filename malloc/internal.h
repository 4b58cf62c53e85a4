/* librasp-malloc's shared state: the heap every call allocates from, one type per family of
 * calls (the event's TypeName), and the guard that sends the runtime's own allocations and
 * those made before the heap exists to glibc.
 * Nothing here is exported: the library's only exports are the C and C++ allocation API. */
#ifndef RASP_MALLOC_INTERNAL_H
#define RASP_MALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rasp/rasp.h"

#define RASP_MALLOC_API __attribute__((visibility("default")))

/* The families, in the order of their types (rasp__malloc_types). */
enum rasp__family {
	RASP__FAM_MALLOC,
	RASP__FAM_CALLOC,
	RASP__FAM_REALLOC,
	RASP__FAM_ALIGNED,
	RASP__FAM_NEW,
	RASP__FAM_NEW_ARRAY,
	RASP__FAM_COUNT,
};

/* glibc's own allocator under its internal names (exported by libc.so.6 for this use), so
 * that the fallback needs no dlsym, which allocates. */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t count, size_t n);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t alignment, size_t n);
void __libc_free(void *p);

/* The runtime's hooks: runtime/mapping.c's: whether p's unit is one of rasp's mappings. */
bool rasp__mapped(const void *p);
/* And runtime/stack.c's: loads the unwinder of the samples' stacks now. */
void rasp__stack_load(void);
/* And runtime/alloc.c's: obj, of heap h, resized in place to `size` bytes (the pad of 8 that
 * heap.c sets included): the old allocation freed, the new one of `type` drawn (requested
 * sizes). */
void rasp__resized(rasp_heap_t *h, void *obj, size_t size, const rasp_type_t *type);
/* And segment.c's: small blocks of h at 8 mod 16 (before its first allocation). */
int rasp__heap_block_offset(rasp_heap_t *h, size_t offset);
/* And alloc.c's: a block for `size` payload bytes whose sample counts `asked` less the pad. */
void *rasp__alloc_asked(rasp_heap_t *h, const rasp_type_t *type, size_t size, unsigned flags,
			size_t asked);

/* The largest alignment the heap takes (rasp_alloc_aligned); larger ones go to glibc. */
#define RASP__MALLOC_MAX_ALIGN ((size_t)1 << 20)
/* What malloc promises: alignof(max_align_t) on x86-64 and AArch64. */
#define RASP__MALLOC_ALIGN 16u

/* Allocates n bytes (0 gives a unique pointer) of the family, 16-aligned; glibc's while the
 * heap is not there or this thread is inside the runtime. NULL with errno ENOMEM. */
void *rasp__malloc_alloc(enum rasp__family fam, size_t n);
/* The same without its inline path: where that path has just missed (heap.h). */
void *rasp__malloc_alloc_miss(enum rasp__family fam, size_t n);
/* As rasp__malloc_alloc with an alignment (a power of 2, any size; above the heap's largest,
 * glibc's). NULL with errno ENOMEM. */
void *rasp__malloc_aligned(enum rasp__family fam, size_t n, size_t alignment);
/* Frees any pointer this library returned, glibc's included (NULL ignored); errno kept.
 * rasp__malloc_free (heap.h) is its inline fast path. */
void rasp__malloc_free_slow(void *p);
/* Usable bytes at p (0 for NULL); glibc's pointers as glibc says. */
size_t rasp__malloc_usable(void *p);
/* Whether p is on rasp's heap (else glibc's). */
static inline bool rasp__malloc_ours(const void *p)
{
	return rasp__mapped(p);
}

#endif /* RASP_MALLOC_INTERNAL_H */
