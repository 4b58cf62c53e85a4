/* The heap's state as the allocation paths read it (heap.c owns it). */
#ifndef RASP_MALLOC_HEAP_H
#define RASP_MALLOC_HEAP_H

#include <stdatomic.h>

#include "internal.h"

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

#endif /* RASP_MALLOC_HEAP_H */
