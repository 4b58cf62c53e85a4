/* Internal data model of the runtime, shared by the runtime sources and the white-box tests.
 * A heap owns regions (1 MiB-aligned mmaps: small, pinned, or one large object each), types,
 * and one allocation context per thread that allocates from it. Declarations are grouped by
 * the file that defines them. Nothing here is installed or exported. */
#ifndef RASP_RUNTIME_INTERNAL_H
#define RASP_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rasp/rasp.h"

#define RASP__LIKELY(x)	  __builtin_expect(!!(x), 1)
#define RASP__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RASP__NOINLINE	  __attribute__((noinline, cold))

/* ASan builds poison the payload of freed objects, so a use after rasp_free is reported;
 * memory is unpoisoned before it is reused (spare regions) or given back to the OS. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define RASP__POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define RASP__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RASP__POISON(p, n)   ((void)(p), (void)(n))
#define RASP__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Debug builds (no NDEBUG) check the concurrency contract and frees. */
#ifndef NDEBUG
#define RASP__DEBUG 1
#else
#define RASP__DEBUG 0
#endif

/* Region geometry. Every region is aligned to its size so an object's region is found by
 * masking its address; large regions are aligned the same and may be longer. */
#define RASP__REGION_SIZE	 ((size_t)1 << 20)
#define RASP__REGION_HEADER_SIZE ((size_t)128)
#define RASP__REGION_MAGIC	 UINT64_C(0x72617370726567e1)
/* Largest payload that makes a small object: round8(size + header) < 85000. */
#define RASP__SMALL_MAX_PAYLOAD ((size_t)RASP_LARGE_OBJECT_SIZE - RASP_OBJECT_HEADER_SIZE - 8)
/* Sizes past this are refused with ENOMEM before any arithmetic can overflow. */
#define RASP__MAX_PAYLOAD ((size_t)PTRDIFF_MAX / 2)
/* Empty small regions a heap keeps mapped for reuse (rasp_heap_collect unmaps them): reuse
 * avoids the page faults of fresh memory, which dominate a bump allocator's cost. */
#define RASP__MAX_SPARE 8
/* Larger than any chunk or region, so biased counts never reach 0 early. */
#define RASP__REF_BIAS (INT64_C(1) << 40)

/* Object header, 16 bytes before the pointer handed out. word0 = object size (multiple of 8)
 * | flags. A filler (the dropped tail of a retired context) is a header with FREE set whose
 * size covers the tail; an 8-byte filler has only word0. */
#define RASP__HDR_FREE	     UINT64_C(1)
#define RASP__HDR_KIND_SHIFT 1
#define RASP__HDR_KIND_MASK  UINT64_C(6)
#define RASP__HDR_FLAGS	     UINT64_C(7)

struct rasp__header {
	uint64_t size_flags;
	const struct rasp_type *type;
};

struct rasp_type {
	const char *name; /* owned copy */
	struct rasp_heap *heap;
	struct rasp_type *next; /* heap->types, under heap->lock */
};

enum rasp__region_kind { RASP__REGION_SMALL, RASP__REGION_PINNED, RASP__REGION_LARGE };

struct rasp__region {
	uint64_t magic;
	struct rasp_heap *heap;
	struct rasp__region *next, *prev; /* heap region list, heap->lock */
	size_t map_size;		  /* bytes mapped at this address */
	int kind;			  /* enum rasp__region_kind */
	uintptr_t start;		  /* first object byte */
	uintptr_t carve;		  /* next byte not handed out (heap->lock) */
	uintptr_t end;			  /* end of the object area */
	/* Release count: RASP__REF_BIAS per context chunk held here and for being the heap's
	 * current region, plus bytes of objects allocated and not freed (a context adds what it
	 * used when it gives its chunk back; frees subtract at once). The bias keeps it above 0
	 * while anything may still allocate here, so it reaches 0 exactly once: whoever's
	 * atomic update makes it 0 is the only one allowed to release the region. */
	_Atomic int64_t live_bytes;
	bool released; /* heap->lock */
};

/* CoreCLR's ee_alloc_context plus sampling state. The first three fields are the fast path;
 * all fields are written by the owning thread only, except by context enumeration while the
 * owner is quiescent (see rasp.h) and at the owner's exit. */
struct rasp_context {
	uintptr_t alloc_ptr;	  /* next free byte of the current chunk */
	uintptr_t alloc_limit;	  /* end of the current chunk (0: no chunk) */
	uintptr_t combined_limit; /* min(alloc_limit, alloc_ptr + sampling budget) */
	struct rasp_heap *heap;
	struct rasp__region *region; /* region of the current chunk, NULL if none */
	uintptr_t chunk_start;
	uint64_t rng[4];		  /* xoshiro256++ state */
	bool sampling;			  /* combined_limit was computed with sampling on */
	bool listening;			  /* a SamplingConfigured listener, at the last update */
	uint64_t mean;			  /* sampling mean the budget was drawn with (announced) */
	double inv_log_q;		  /* 1 / ln(1 - 1/mean) */
	double neg_log_q;		  /* -ln(1 - 1/mean): the bounded draw multiplies */
	uint64_t index;			  /* attach order in the heap (seeding) */
	struct rasp_context *next, *prev; /* heap->contexts, heap->lock */
	/* Debug builds only (kept in every build so the layout never depends on NDEBUG). */
	pthread_t owner;
	_Atomic int busy; /* owner is inside an allocation call */
};

/* Test seams: every sample with the mean it was drawn under; every announcement (mean, or 0
 * for SamplingStopped). Both run in the allocating thread, before its event. */
typedef void (*rasp__sample_hook_fn)(void *arg, uint32_t kind, const rasp_type_t *type, void *addr,
				     uint64_t object_size, uint64_t offset, uint64_t mean);
typedef void (*rasp__announce_hook_fn)(void *arg, uint64_t mean);

struct rasp_heap {
	uint64_t id; /* unique in the process, never reused: thread caches key on it */
	pthread_mutex_t lock;
	rasp_config_t cfg;
	_Atomic int sampling_mode;	/* enum rasp_sampling_mode */
	_Atomic uint64_t sampling_mean; /* bytes */
	_Atomic int announced;		/* a thread announced sampling on (SamplingConfigured) */
	struct rasp_context *contexts;	 /* lock */
	struct rasp__region *regions;	 /* every mapped region, lock */
	struct rasp__region *cur_small;	 /* region chunks are carved from, lock */
	struct rasp__region *cur_pinned; /* region pinned small objects come from, lock */
	struct rasp__region *spare;	 /* empty small regions kept for reuse (next), lock */
	unsigned nspare;		 /* lock */
	struct rasp_type *types;	 /* lock */
	uint64_t next_ctx_index;	 /* lock */
	_Atomic uint64_t samples, refills, regions_n, mapped_bytes, contexts_n, starts,
	    invalid_frees;
	struct rasp_heap *reg_next; /* registry of live heaps (context.c) */
	rasp__sample_hook_fn sample_hook; /* test seams (see above), NULL in programs */
	rasp__announce_hook_fn announce_hook;
	void *sample_hook_arg;
};

/* stack.c: the caller's call stack, innermost first, the runtime's own frames left out; up to
 * max (<= RASP_MAX_STACK_DEPTH) frames. Slow path only. */
size_t rasp__stack_capture(uintptr_t *frames, size_t max);

/* os.c: the only file that talks to the OS for memory and entropy. */
void *rasp__os_map(size_t size);
void rasp__os_unmap(void *addr, size_t size);
void rasp__os_random(void *buf, size_t len);
/* Test seam: replaces mmap/munmap (NULL restores them). map returns NULL on failure. */
struct rasp__os_ops {
	void *(*map)(size_t size);
	void (*unmap)(void *addr, size_t size);
};
void rasp__os_set_ops(const struct rasp__os_ops *ops);

/* A chunk carved from a small region for a context: [start, end). */
struct rasp__chunk {
	struct rasp__region *region;
	uintptr_t start, end;
};

/* region.c: regions and the objects in them. */
/* heap->lock held. Carves a chunk of up to `want` (at least z) bytes for a context. 0 or
 * -ENOMEM. */
int rasp__region_carve(struct rasp_heap *h, size_t z, size_t want, struct rasp__chunk *out);
/* A large (own region) or pinned object of object size z; its header's type is the caller's
 * to set. Takes heap->lock. NULL without memory. */
void *rasp__alloc_outside(struct rasp_heap *h, size_t z, int kind);
/* Adds delta to the release count; releases the region if that made it 0. heap->lock held. */
void rasp__region_adjust(struct rasp__region *r, int64_t delta);
/* heap->lock held: the current regions stop being current, spares are unmapped (collect). */
void rasp__regions_trim(struct rasp_heap *h);
/* heap->lock held, contexts retired: fn for every live object. */
int rasp__regions_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg);
/* Teardown: every region and spare back to the OS. */
void rasp__regions_unmap_all(struct rasp_heap *h);

/* sample.c */
void rasp__rng_seed(struct rasp_context *c, const rasp_config_t *cfg);
uint64_t rasp__rng_next(uint64_t s[4]);
double rasp__inv_log_q(uint64_t mean);
/* Sets the mean a context draws with (and the constants its draws need). */
void rasp__context_set_mean(struct rasp_context *c, uint64_t mean);
/* The full inversion draw. The runtime's paths use rasp__geometric_at_least; this is the
 * reference it is tested against draw for draw. */
uint64_t rasp__geometric(struct rasp_context *c);
/* One draw of the same inversion: true when it is >= k (its value is then not computed),
 * else false with the value in *g. Decisions and values equal rasp__geometric's for the
 * same generator state; most calls skip the log (sample.c). */
bool rasp__geometric_at_least(struct rasp_context *c, uint64_t k, uint64_t *g);
/* Adopts the heap's sampling state (mode, mean, listener) for the calling thread's next
 * trials, announcing a change for this thread. */
void rasp__sampling_update(struct rasp_context *c);
/* Fires AllocationSampled for an object whose trials were drawn under `mean`. */
void rasp__emit_sample(struct rasp_context *c, uint32_t kind, const rasp_type_t *type, void *obj,
		       uint64_t z, uint64_t offset, uint64_t mean);

/* context.c */
/* heap->lock held: gives the context's chunk back to its region (collect, walk). */
void rasp__context_retire(struct rasp_context *c);
typedef void (*rasp__context_fn)(struct rasp_context *c, void *arg);
/* The one way to change alloc_ptr/alloc_limit of contexts the caller does not own: calls fn
 * for every context of the heap with heap->lock held, then makes combined_limit consistent
 * with what fn left (clamped if only alloc_limit moved, redrawn if alloc_ptr moved, 0 for a
 * retired context). The owners must be quiescent (debug builds abort if one is not). */
void rasp__contexts_enumerate(struct rasp_heap *h, rasp__context_fn fn, void *arg);
struct rasp_context *rasp__context_attach(struct rasp_heap *h);
void rasp__heap_unregister(struct rasp_heap *h);
int rasp__heap_register(struct rasp_heap *h);
void rasp__thread_forget_heap(struct rasp_heap *h);
void *rasp__alloc_slow(struct rasp_context *c, const rasp_type_t *type, size_t size,
		       unsigned flags);

/* Round up to 8 after checking overflow: returns 0 if size is too large. */
static inline size_t rasp__object_size_for(size_t payload)
{
	size_t z;

	if (payload > RASP__MAX_PAYLOAD)
		return 0;
	z = payload + RASP_OBJECT_HEADER_SIZE + 7;
	return z & ~(size_t)7;
}

static inline struct rasp__header *rasp__header_of(const void *obj)
{
	return (struct rasp__header *)((uintptr_t)obj - RASP_OBJECT_HEADER_SIZE);
}

static inline struct rasp__region *rasp__region_of(const void *obj)
{
	return (struct rasp__region *)((uintptr_t)rasp__header_of(obj) & ~(RASP__REGION_SIZE - 1));
}

#endif /* RASP_RUNTIME_INTERNAL_H */
