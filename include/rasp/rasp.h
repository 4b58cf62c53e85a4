/* rasp: a C allocator with .NET-style per-thread allocation contexts whose samples are
 * per-byte Bernoulli trials, emitted as the LTTng event DotNETRuntime:AllocationSampled.
 * This is the whole public API of the runtime; docs/runtime.md describes the model.
 * Conventions: allocation functions return NULL and set errno; the others return 0 or a
 * negative errno code (rasp_strerror() turns it into text). */
#ifndef RASP_RASP_H
#define RASP_RASP_H

#include <stddef.h>
#include <stdint.h>

#include "rasp/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rasp_heap rasp_heap_t;
typedef struct rasp_type rasp_type_t;
/* The calling thread's allocation context on one heap (CoreCLR's ee_alloc_context). */
typedef struct rasp_context rasp_context_t;

/* Sampling modes (RASP_SAMPLING=auto|on|off). */
enum rasp_sampling_mode {
	/* On while a session wants DotNETRuntime:AllocationSampled: an LTTng session that
	 * enables it, or the runtime's EventPipe session (DOTNET_EnableEventPipe=1 with its
	 * keyword). Checked at every context refill, so a session takes effect within one
	 * allocation context. */
	RASP_SAMPLING_AUTO = 0,
	RASP_SAMPLING_ON = 1, /* always sample (events still go only where a session listens) */
	RASP_SAMPLING_OFF = 2,
};

/* AllocationKind of the event (GCAllocationKindMap). */
enum rasp_alloc_kind {
	RASP_KIND_SMALL = 0,  /* object size < RASP_LARGE_OBJECT_SIZE, from a size class */
	RASP_KIND_LARGE = 1,  /* object size >= RASP_LARGE_OBJECT_SIZE, not in a size class */
	RASP_KIND_PINNED = 2, /* allocated with RASP_ALLOC_PINNED */
};

/* Allocation flags. */
#define RASP_ALLOC_PINNED 0x1u

/* Objects whose size (header included, rounded to 8) reaches this are large (.NET's LOH).
 * A smaller object gets a block of its size class (8 classes per doubling: less than 1/8 more
 * than it asked for past 64 bytes), and the block's size is its ObjectSize. */
#define RASP_LARGE_OBJECT_SIZE 85000u
/* Bytes of header before each object: its type and kind, one word (the block size comes from
 * where the block lies). ObjectSize includes them. */
#define RASP_OBJECT_HEADER_SIZE 8u
/* The smallest ObjectSize: the header and 8 bytes (the smallest size class). */
#define RASP_MIN_OBJECT_SIZE 16u

/* The default mean bytes between samples: .NET's, which its runtime fixes, so that a .NET
 * trace and a rasp one at the default weigh samples alike. Written without a suffix, so that
 * stringizing it gives its text ("102400") for help and messages. */
#define RASP_DEFAULT_SAMPLING_MEAN   102400
#define RASP_DEFAULT_ALLOC_QUANTUM   8192u
#define RASP_MIN_ALLOC_QUANTUM	     256u
#define RASP_MAX_ALLOC_QUANTUM	     262144u
#define RASP_MAX_SAMPLING_MEAN	     (UINT64_C(1) << 48)
#define RASP_DEFAULT_CLR_INSTANCE_ID 0u
/* Call-stack frames captured per sample while a session wants stacks (ClrStackWalk). */
#define RASP_DEFAULT_STACK_DEPTH 64u
#define RASP_MAX_STACK_DEPTH	 64u
/* The most rasp_config_t.request_pad takes: a user's word or two, not a size. */
#define RASP_MAX_REQUEST_PAD 4096u

/* Heap configuration. Initialise with rasp_config_init() (defaults), optionally apply the
 * environment with rasp_config_from_env(), then change fields. */
typedef struct rasp_config {
	int sampling;		/* enum rasp_sampling_mode */
	uint64_t sampling_mean; /* mean bytes between samples (1/p), 1..RASP_MAX_SAMPLING_MEAN */
	size_t alloc_quantum;	/* bytes a thread allocates per size class between two slow
				 * paths (at least 8 objects), multiple of 8, MIN..MAX above */
	int has_seed;		/* 1: seed the per-thread PRNGs from `seed` (reproducible) */
	uint64_t seed;		/* context n of the heap (attach order) gets a seed mixed from it */
	uint16_t clr_instance_id; /* ClrInstanceID of the events: a heap created while a live
				   * heap of the process has this id takes the lowest free one,
				   * so a consumer weighs each heap's samples with its own mean */
	/* Frames of the call stack captured for each sample, 0..RASP_MAX_STACK_DEPTH, when a
	 * session wants stacks (DotNETRuntime:ClrStackWalk enabled); 0: never. */
	unsigned stack_depth;
	/* With a runtime's frames callback (rasp_heap_set_frames): 1 appends the native stack
	 * after the runtime's frames (outer to them in the stack event), stack_depth frames in
	 * all; 0, the default: the runtime's frames alone. */
	int native_frames;
	/* What a sample counts. 0, the default: the object's block, as .NET counts an object
	 * (its header and size class included: ObjectSize, docs/runtime.md). 1: the bytes the
	 * heap's caller asked for, each size given to rasp_alloc or rasp_alloc_aligned less
	 * `request_pad`, the bytes its user adds of its own (librasp-malloc's alignment word: 8);
	 * the trials cover those bytes only (a sample's SampledByteOffset is below them, its
	 * ObjectSize is them), and a resize in place is an allocation too (librasp-malloc's
	 * realloc, rasp_realloc): docs/usage.md, "What is estimated". */
	int requested_sizes;
	size_t request_pad; /* 0..RASP_MAX_REQUEST_PAD; only with requested_sizes */
} rasp_config_t;

/* Sets the defaults: auto sampling, mean 102400, quantum 8 KiB, seeds from the OS, stacks of
 * up to 64 frames. */
RASP_API void rasp_config_init(rasp_config_t *cfg);
/* Applies RASP_SAMPLING (auto|on|off), RASP_SAMPLING_MEAN (bytes), RASP_SEED (decimal or
 * 0x hex), RASP_ALLOC_QUANTUM (bytes), RASP_STACKS (0|1), RASP_STACK_DEPTH (frames) and
 * RASP_NATIVE_FRAMES (0|1). An
 * invalid value is reported on stderr with the accepted range and -EINVAL returned; nothing is
 * clamped. */
RASP_API int rasp_config_from_env(rasp_config_t *cfg);
/* 0 if cfg is valid, else -EINVAL (with the reason on stderr). */
RASP_API int rasp_config_validate(const rasp_config_t *cfg);

/* Creates a heap. cfg NULL: defaults plus the RASP_* environment; otherwise cfg as given
 * (RASP_THP, which is not in rasp_config_t, is read either way: docs/runtime.md).
 * Returns 0, -EINVAL (bad configuration or out == NULL) or -ENOMEM. */
RASP_API int rasp_heap_create(rasp_heap_t **out, const rasp_config_t *cfg);
/* Returns all memory of the heap to the OS. No thread may use the heap during or after. A heap
 * whose samples were emitted emits Rasp_Runtime:HeapDestroyed first: its sampled objects still
 * live die with it (docs/events.md). */
RASP_API void rasp_heap_destroy(rasp_heap_t *heap);

/* Registers a type (its address is the event's TypeID, its name TypeName). Registering a
 * name twice returns the same type. NULL + errno (EINVAL, ENOMEM) on error. */
RASP_API const rasp_type_t *rasp_type_register(rasp_heap_t *heap, const char *name);
RASP_API const char *rasp_type_name(const rasp_type_t *type);

/* Allocates `size` payload bytes (>= 1) of `type`; flags 0 or RASP_ALLOC_PINNED. The result
 * is 8-byte aligned and uninitialised. NULL + errno: EINVAL (NULL heap/type, size 0, unknown
 * flag; a type registered on another heap, detected on slow paths and always in debug
 * builds), ENOMEM (size too large, OS out of memory). Thread-safe. */
RASP_API void *rasp_alloc(rasp_heap_t *heap, const rasp_type_t *type, size_t size, unsigned flags);
/* As rasp_alloc for count * size bytes; EOVERFLOW if the product overflows. */
RASP_API void *rasp_alloc_array(rasp_heap_t *heap, const rasp_type_t *type, size_t count,
				size_t size, unsigned flags);
/* As rasp_alloc_array, with the count * size bytes set to zero (calloc). */
RASP_API void *rasp_alloc_zeroed(rasp_heap_t *heap, const rasp_type_t *type, size_t count,
				 size_t size, unsigned flags);
/* As rasp_alloc, the result aligned to `alignment` (a power of 2, up to 1 MiB; EINVAL
 * otherwise). Freed with rasp_free. The object takes a block of size + alignment + 8 bytes:
 * that block is what sampling counts (its ObjectSize; with requested_sizes, size less the
 * pad), and what a sample names (its
 * Address is the block's, before the pointer returned; docs/runtime.md). rasp_realloc keeps
 * the alignment asked. */
RASP_API void *rasp_alloc_aligned(rasp_heap_t *heap, const rasp_type_t *type, size_t size,
				  size_t alignment, unsigned flags);
/* C's realloc on this heap. obj NULL: rasp_alloc(heap, default type, size, 0), the default
 * type being rasp_heap_default_type's; size 0: rasp_free(heap, obj) and NULL returned
 * (errno untouched; obj NULL and size 0 together do nothing). Otherwise resizes an object of
 * this heap to `size` payload bytes, keeping its type, kind and alignment and the first
 * min(old, new) bytes. In place when the new size keeps its size class (a large object:
 * shrinks to no less than half; an aligned one: fits and uses half), else a new object is
 * allocated and obj freed. NULL + errno on error, obj then untouched: EINVAL when obj is
 * refused (not an object of this heap, a double free: handled as rasp_free does,
 * rasp_heap_set_error_handler) or heap is NULL, ENOMEM only when memory ran out or size is
 * too large, so that a runtime can tell its own bug from out of memory. Sampling: a resize in
 * place allocates nothing, so it is not a trial, and a sampled object stays the sample it
 * was; a move allocates a new object, whose bytes are trials like any other's, and frees obj
 * as rasp_free does (docs/runtime.md). */
RASP_API void *rasp_realloc(rasp_heap_t *heap, void *obj, size_t size);
/* Frees an object of this heap (any thread). NULL is ignored. An object whose
 * AllocationSampled was emitted emits Rasp_Runtime:SampledObjectFreed before its memory can be
 * reused (docs/events.md). obj must be a pointer rasp_alloc returned on this heap and not yet
 * freed. Every build refuses, with errno = EINVAL, invalid_frees counted and the heap's
 * error handler told (by default a message on stderr, rate-limited:
 * rasp_heap_set_error_handler), and without touching the heap: a double
 * free, a pointer inside a large object instead of its start, and a pointer inside a small
 * object's block (by its position in its page: exact) that is not an aligned object's
 * start; and a pointer whose 4 MiB-aligned block starts no mapping of rasp's (memory rasp
 * never mapped, or gave back to the OS), looked up before anything at the pointer is read.
 * A double free is thus caught while the object's block is free, or its memory gone back
 * to the OS; once the block is handed out again, a second free frees the new object (as
 * with free()). Debug builds (no NDEBUG) also check that obj is a live object of this heap,
 * whatever it points to; release builds take a pointer into a mapping of rasp's at its
 * word: a block start in a page's part never handed out, or a pointer into another
 * allocator's memory inside such a 4 MiB block, is undefined behaviour there, as for
 * free(). */
RASP_API void rasp_free(rasp_heap_t *heap, void *obj);

/* The type rasp_realloc(heap, NULL, n) allocates: the one set by rasp_heap_set_default_type,
 * else the heap's type named "untyped" (registered at the first call). NULL + errno (EINVAL,
 * ENOMEM) on error. */
RASP_API const rasp_type_t *rasp_heap_default_type(rasp_heap_t *heap);
/* Sets it: a type of this heap (-EINVAL otherwise). */
RASP_API int rasp_heap_set_default_type(rasp_heap_t *heap, const rasp_type_t *type);

/* Invalid pointers given to rasp_free or rasp_realloc, each refused without touching the heap
 * (see rasp_free), by kind. */
enum rasp_invalid_kind {
	/* Not in memory rasp mapped: another allocator's, or an object whose memory went back
	 * to the OS (debug builds: any pointer that is not a live object of this heap). */
	RASP_INVALID_FOREIGN = 0,
	RASP_INVALID_OTHER_HEAP = 1,  /* in memory of another rasp heap */
	RASP_INVALID_INTERIOR = 2,    /* inside an object or block, not its start (misaligned
				       * included) */
	RASP_INVALID_DOUBLE_FREE = 3, /* its block is free already */
	RASP_INVALID_KINDS = 4,
};
/* What the heap does with each refused pointer, besides counting it (per kind, and in
 * rasp_heap_stats' invalid_frees) and setting errno = EINVAL. */
enum rasp_invalid_action {
	/* The default: the first refusal of each kind logged on stderr, then the 10th, 100th,
	 * 1000th... with the count so far, and at rasp_heap_destroy the counts not yet logged:
	 * a state that switched allocators logs a few lines, not one per pointer. */
	RASP_ON_INVALID_LOG = 0,
	RASP_ON_INVALID_LOG_EACH = 1, /* every refusal logged */
	RASP_ON_INVALID_COUNT = 2,    /* nothing logged: counted (and the callback, if any) */
	RASP_ON_INVALID_ABORT = 3,    /* logged, then abort(): for tests and debugging */
};
/* One refused pointer, as the error handler's callback sees it. */
typedef struct rasp_invalid {
	const char *op;	    /* "rasp_free" or "rasp_realloc" */
	const void *ptr;    /* the pointer given */
	int kind;	    /* enum rasp_invalid_kind */
	const char *reason; /* text for a message */
	uint64_t count;	    /* refusals of this kind on this heap, this one included */
} rasp_invalid_t;
/* Called on the refusing thread, before the action's log or abort; it must not free into or
 * allocate from this heap (it may read it: rasp_heap_stats, rasp_heap_invalid_count). */
typedef void (*rasp_invalid_fn)(void *arg, const rasp_invalid_t *what);
/* Sets the heap's handling of invalid pointers: action (enum rasp_invalid_action) and an
 * optional callback fn(arg, what), NULL for none. Call it before other threads use the heap
 * (its fields are read without a lock). -EINVAL for an unknown action or a NULL heap. */
RASP_API int rasp_heap_set_error_handler(rasp_heap_t *heap, int action, rasp_invalid_fn fn,
					 void *arg);
/* Refusals of one kind (enum rasp_invalid_kind) on this heap so far; 0 for a bad kind. */
RASP_API uint64_t rasp_heap_invalid_count(rasp_heap_t *heap, int kind);

/* The ObjectSize its AllocationSampled event carries: its block, header included (its size
 * class, or for a large object its size rounded up to 8). */
RASP_API size_t rasp_object_size(const void *obj);
/* Bytes usable from obj on (its block past its header): at least what was asked. */
RASP_API size_t rasp_usable_size(const void *obj);
RASP_API const rasp_type_t *rasp_object_type(const void *obj);
/* AllocationKind of the object (enum rasp_alloc_kind). */
RASP_API int rasp_object_kind(const void *obj);

/* The faster entry point: the calling thread's context on `heap` (attached on first use;
 * NULL + errno on error). It is valid until the thread exits or the heap is destroyed and
 * must only be used by the thread that got it. rasp_context_alloc skips rasp_alloc's
 * thread lookup (a thread-local compare). */
RASP_API rasp_context_t *rasp_context_get(rasp_heap_t *heap);
RASP_API void *rasp_context_alloc(rasp_context_t *ctx, const rasp_type_t *type, size_t size,
				  unsigned flags);

/* Sampling control. mode: enum rasp_sampling_mode; mean 0 keeps the current one. Safe while
 * other threads allocate: each thread applies it at its next context refill (within one
 * allocation quantum of its allocations). -EINVAL on bad values. */
RASP_API int rasp_heap_set_sampling(rasp_heap_t *heap, int mode, uint64_t mean);
/* 1 if the heap samples now (auto mode: an LTTng or EventPipe session wants the event),
 * else 0. */
RASP_API int rasp_heap_sampling_active(rasp_heap_t *heap);

/* A frame of an embedding runtime's own stack (an interpreter's function, a VM's method). */
typedef struct rasp_frame {
	const char *function; /* the runtime's name for the code, e.g. "bottomUpTree" */
	const char *file;     /* its source file, or NULL */
	uint32_t line;	      /* its line, 0 when unknown */
} rasp_frame_t;
/* Called on the allocating thread when an allocation of this heap is sampled; writes up to
 * max frames of the runtime's own stack, innermost first, and returns how many. It must not
 * allocate from this heap. */
typedef unsigned (*rasp_frames_fn)(void *arg, rasp_frame_t *frames, unsigned max);
/* Sets the heap's frames callback (fn NULL: none, the default). It is called only for a
 * sample whose stack a session wants (ClrStackWalk enabled, stack_depth > 0), with max =
 * stack_depth; the frames it writes replace the sample's native stack (cfg.native_frames:
 * the native frames follow them, within stack_depth). The strings need to
 * live only until it returns: each distinct (function, file, line) is copied once (at most
 * 240 bytes of each name) into a process-wide table and stands in the stack event for a code
 * address of its own, named by a DotNETRuntime:MethodLoadVerbose_V1 event as .NET names its
 * JIT-compiled methods (docs/embedding.md). No cost without a callback; with one, a lookup
 * per frame under a lock, per sample. Set it before other threads allocate from the heap.
 * 0, -EINVAL (NULL heap), -ENOMEM (the table's address range could not be reserved). */
RASP_API int rasp_heap_set_frames(rasp_heap_t *heap, rasp_frames_fn fn, void *arg);

/* Concurrency contract of the whole-heap operations below (CoreCLR's "GC suspension"):
 * rasp_heap_collect and rasp_heap_walk visit every thread's allocation context and change
 * it, so every other thread that has allocated from the heap must be quiescent (not inside
 * rasp_alloc / rasp_context_alloc on this heap) for their duration. rasp_free may run
 * concurrently with rasp_heap_collect, not with rasp_heap_walk (which reads every header).
 * Debug builds detect a context in use and abort with a message. rasp_heap_set_sampling,
 * rasp_heap_sampling_active, rasp_heap_stats and rasp_type_register are safe at any time. */

/* Ends every thread's allocation windows, returns the calling thread's empty pages (other
 * threads' at their next allocation), purges empty memory (MADV_DONTNEED) and unmaps empty
 * segments and the mappings of freed large objects kept for reuse (4 to 32 MiB a heap, with
 * its live large objects), all at once. Returns 0. (Without a collect, a heap keeps 4 MiB of
 * empty memory and gives the rest back 50 to 100 ms after it empties, at its next page
 * operation or large allocation: docs/runtime.md, "Giving memory back".) */
RASP_API int rasp_heap_collect(rasp_heap_t *heap);

/* Calls fn for every live object (retires contexts first, as collect does). fn returning
 * non-zero stops the walk and is returned. fn must not allocate or free on this heap; it may
 * read it (rasp_heap_stats, rasp_type_register, the object accessors), and its calls to
 * rasp_heap_collect, rasp_heap_walk or rasp_heap_destroy on this heap are refused (-EDEADLK,
 * or nothing done, with a message on stderr). */
typedef int (*rasp_walk_fn)(void *obj, const rasp_type_t *type, size_t object_size, int kind,
			    void *arg);
RASP_API int rasp_heap_walk(rasp_heap_t *heap, rasp_walk_fn fn, void *arg);

/* Memory figures are exact when the other threads are quiescent after rasp_heap_collect;
 * while they allocate, live_bytes lags by what each thread took from its current window of
 * each size class since its last slow path. */
typedef struct rasp_heap_stats {
	uint64_t samples;	  /* AllocationSampled events fired */
	uint64_t refills;	  /* free lists a context took from a page */
	uint64_t regions;	  /* mappings: segments and large objects */
	uint64_t mapped_bytes;	  /* bytes currently mapped from the OS (= reserved_bytes) */
	uint64_t contexts;	  /* contexts currently attached: threads that allocated or freed
				   * into another thread's pages, until they exit */
	uint64_t sampling_starts; /* times sampling turned on (SamplingConfigured events) */
	uint64_t invalid_frees;	  /* rasp_free calls refused (see rasp_free) */
	uint64_t reserved_bytes;  /* address space mapped */
	uint64_t committed_bytes; /* mapped and handed out, not purged since */
	uint64_t live_bytes;	  /* blocks of live objects (ObjectSize), large ones included */
	uint64_t wasted_bytes;	  /* committed_bytes - live_bytes: free blocks, page tails,
				   * metadata, empty slots kept for reuse */
	uint64_t pages;		  /* pages of small objects */
	uint64_t purged_bytes;	  /* bytes given back with MADV_DONTNEED so far */
} rasp_heap_stats_t;
RASP_API int rasp_heap_stats(rasp_heap_t *heap, rasp_heap_stats_t *out);

/* Text for an error code (negative or positive errno value). Never NULL. */
RASP_API const char *rasp_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* RASP_RASP_H */
