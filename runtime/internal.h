/* Internal data model of the runtime, shared by the runtime sources and the white-box tests.
 * A heap owns segments (4 MiB-aligned mmaps cut into pages of one size class each), large
 * objects (spans of arenas, or past ~4 MB a mapping each), types, and one allocation context
 * per thread that allocates from it. Declarations are grouped by
 * the file that defines them. Nothing here is installed or exported. */
#ifndef RASP_RUNTIME_INTERNAL_H
#define RASP_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rasp-events-inline.h"
#include "rasp/inline.h"
#include "rasp/rasp.h"

#define RASP__LIKELY(x)	  __builtin_expect(!!(x), 1)
#define RASP__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RASP__NOINLINE	  __attribute__((noinline, cold))
/* Out of line but not cold: a path that runs every few allocations (the fast path's miss),
 * compiled for speed. `cold` compiles for size, and GCC then left the static inline helpers
 * it calls (the state check) as calls. */
#define RASP__OUTLINE __attribute__((noinline))

/* ASan builds poison the payload of freed objects, so a use after rasp_free is reported;
 * a block is unpoisoned when it is handed out again, and memory before it goes to the OS.
 * GCC says ASan with __SANITIZE_ADDRESS__, clang with __has_feature (clang 14 does not define
 * the former: its builds, the fuzz targets', poisoned nothing until this test). */
#if defined(__SANITIZE_ADDRESS__)
#define RASP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RASP__ASAN 1
#endif
#endif
#ifdef RASP__ASAN
#include <sanitizer/asan_interface.h>
#define RASP__POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define RASP__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RASP__POISON(p, n)   ((void)(p), (void)(n))
#define RASP__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ThreadSanitizer builds: the owner's counters below keep their C11 atomics, which TSan sees
 * (stack.c also keeps glibc's unwinder there). */
#if defined(__SANITIZE_THREAD__)
#define RASP__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RASP__TSAN 1
#endif
#endif

/* Debug builds (no NDEBUG) check the concurrency contract and frees. */
#ifndef NDEBUG
#define RASP__DEBUG 1
#else
#define RASP__DEBUG 0
#endif

/* Geometry. A segment is a 4 MiB mapping aligned to its size, so the segment of an object is
 * its address masked; it is cut into 64 slots of 64 KiB, and a page (the unit a thread owns)
 * is a run of 1 to 16 slots holding blocks of one size class. Its first slot starts after
 * the segment's own metadata. An arena (large objects of up to RASP__ARENA_MAX_PAGES) and the
 * mapping of a larger object are aligned the same and start with a segment header saying so. */
#define RASP__SEGMENT_SHIFT 22
#define RASP__SEGMENT_SIZE  ((size_t)1 << RASP__SEGMENT_SHIFT)
#define RASP__SLOT_SHIFT    16
#define RASP__SLOT_SIZE	    ((size_t)1 << RASP__SLOT_SHIFT)
#define RASP__SLOTS	    64
#define RASP__SEGMENT_MAGIC UINT64_C(0x72617370736567e2)
/* Object sizes (header included, rounded to 8) below RASP_LARGE_OBJECT_SIZE are small; the
 * largest small size class is this, so no small object reports a large ObjectSize. */
#define RASP__SMALL_MAX_Z ((size_t)RASP_LARGE_OBJECT_SIZE - 8)
/* Largest payload that makes a small object. */
#define RASP__SMALL_MAX_PAYLOAD (RASP__SMALL_MAX_Z - RASP_OBJECT_HEADER_SIZE)
/* Sizes past this are refused with ENOMEM before any arithmetic can overflow. */
#define RASP__MAX_PAYLOAD ((size_t)PTRDIFF_MAX / 2)
/* Size classes: 16..64 by 8, then 8 classes per doubling up to RASP__SMALL_MAX_Z: internal
 * waste below 1/8 of the object size past 64 bytes. A table gives the class of every small
 * size (RASP__TABLE_MAX: 31 KiB of tables, of which the fast path reads the lines of the sizes
 * a program uses). The count of leading zeros it replaced past 1 KiB cost the fast path 12
 * instructions more, and a branch that sizes on both sides of 1 KiB mispredicted. Class 0 is
 * no class: its block size is all ones, so the fast path always falls through. */
#define RASP__NCLASS	91
#define RASP__TABLE_MAX RASP__SMALL_MAX_Z
/* Empty slots kept committed per heap for reuse without page faults; past this, a slot that
 * stays empty from one purge tick to the next is purged (MADV_DONTNEED). rasp_heap_collect
 * purges them all. */
#define RASP__RETAIN_SLOTS 64
/* Purge ticks' spacing (segment.c): an empty slot past the retained ones, and an empty segment,
 * goes back to the OS after staying empty between one and two of these, at the heap's next
 * page operation. Purged at once (the policy before), a program allocating and freeing 10 MiB
 * bursts faulted every page back in at each burst: 3.7x glibc's time (docs/performance.md). */
#define RASP__PURGE_DELAY_NS (50u * 1000 * 1000)
/* Empty pages a context keeps in its class queues for reuse: a class whose live count breathes
 * around a page boundary would otherwise give a page back and take a new one (heap lock,
 * formatting) over and over. */
#define RASP__KEEP_EMPTY 8
/* Freed large objects' mappings (objects past RASP__ARENA_MAX_PAGES; arenas keep free committed
 * pages up to the live large bytes within the same MIN and BYTES) a heap keeps for reuse: at
 * most RASP__LARGE_CACHE_MAX mappings
 * and three times the bytes of its live large objects, within [RASP__LARGE_CACHE_MIN,
 * RASP__LARGE_CACHE_BYTES] (resident: the objects touched them; a program with more large
 * objects live churns through more sizes, and needs more to find a fit, as glibc's mmap
 * threshold rises with the chunks it frees). A mapping is reused for an object of at least
 * half its size (the best fit); past 1/8 of it, the tail the object leaves is purged at the
 * second purge tick the object lives through, so what stays resident past a long-lived object
 * is within the size classes' 1/8 (purged at once, a short-lived object's tail was faulted in
 * again by the next bigger one: 3.7x mimalloc's time on the suite's `large`). A mapping is
 * unmapped at the second purge tick that finds it still cached. rasp_heap_collect unmaps
 * them. */
#define RASP__LARGE_CACHE_MIN	((uint64_t)4 << 20)
#define RASP__LARGE_CACHE_BYTES ((uint64_t)32 << 20)
#define RASP__LARGE_CACHE_MAX	64
/* A cached large mapping serves objects down to 1/RASP__LARGE_REUSE of its size (what lies past
 * the object and past 1/8 of the mapping is purged once the object has lived through a purge
 * tick), and grows in place for larger ones (segment.c, large_cache_take). Measured in
 * docs/performance.md, "Large objects": 2, 3, 4, 6 and 8 tried. */
#define RASP__LARGE_REUSE 4
/* Large objects of up to this many 4 KiB pages (their 8-byte size word included: ObjectSize
 * up to 16,744,440 bytes) are carved from arenas (segment.c); larger ones have a mapping of
 * their own. An arena has 8183 pages past its header, so two of the largest fit in one, as
 * mimalloc's segments hold objects of up to half their size. Up to the eighteenth session arenas
 * were one 4 MiB unit and this was 1000 pages: objects of 4 to 16 MB had mappings of their own, and
 * 8 live buffers of 85 KB..16 MB took 4.2x mimalloc's time, faulting in 2.5 million pages against
 * its 41,000 (docs/performance.md, "Arenas of 32 MiB"). */
#define RASP__ARENA_MAX_PAGES 4088u
/* How long after announcing to a new LTTng listener a thread announces again (sample.c):
 * past the moment LTTng starts recording the session whose events it enabled. */
#define RASP__LTTNG_CONFIRM_NS ((uint64_t)100 * 1000 * 1000)
/* Cross-thread frees of one page queued by the freeing thread before one atomic push. */
#define RASP__BATCH_MAX 64

/* Object header: one word, 8 bytes before the pointer handed out (glibc's chunks carry as
 * much; a second word, the block size, cost the demo's 17..24-byte objects 40-byte blocks
 * instead of 32, 4.9 MiB of its 37). The block size comes from the page (a small object) or
 * the mapping (a large one). Low three bits: FREE, then the kind (types are 8-aligned).
 * - A live object: its type | kind << 1.
 * - A free block: the next free block's address | FREE.
 * - An aligned object placed inside its block (rasp_alloc_aligned): the word before the
 *   object is its own header (type | kind, as any object's); the block's header holds the
 *   offset from itself to that one | KIND_ALIGNED << 1 (offsets are multiples of 8, >= 8,
 *   under 2^21), and in its top byte the log2 of the alignment asked, which a move by
 *   rasp_realloc keeps. */
#define RASP__HDR_FREE	     UINT64_C(1)
#define RASP__HDR_KIND_SHIFT 1
#define RASP__HDR_KIND_MASK  UINT64_C(6)
#define RASP__HDR_FLAGS	     UINT64_C(7)
#define RASP__KIND_ALIGNED   3u

struct rasp__header {
	uintptr_t word;
};

static inline struct rasp__header *rasp__hdr_next(const struct rasp__header *h)
{
	return (struct rasp__header *)(h->word & ~RASP__HDR_FREE);
}

/* Makes h a free block linking to next. */
static inline void rasp__hdr_link(struct rasp__header *h, const struct rasp__header *next)
{
	h->word = (uintptr_t)next | RASP__HDR_FREE;
}

static inline const struct rasp_type *rasp__hdr_type(const struct rasp__header *h)
{
	return (const struct rasp_type *)(h->word & ~RASP__HDR_FLAGS);
}

static inline unsigned rasp__hdr_kind(const struct rasp__header *h)
{
	return (unsigned)((h->word & RASP__HDR_KIND_MASK) >> RASP__HDR_KIND_SHIFT);
}

/* The block header of an aligned object placed off + 8 bytes into its block, asked for
 * alignment 2^lg. */
#define RASP__ALIGN_SHIFT 56
static inline uintptr_t rasp__hdr_aligned(uintptr_t off, unsigned lg)
{
	return off | ((uintptr_t)lg << RASP__ALIGN_SHIFT) |
	       ((uintptr_t)RASP__KIND_ALIGNED << RASP__HDR_KIND_SHIFT);
}

/* Of such a block header: the offset to the object's own header, and the alignment. */
static inline uintptr_t rasp__hdr_aligned_off(const struct rasp__header *b)
{
	return b->word & ~RASP__HDR_FLAGS & (((uintptr_t)1 << RASP__ALIGN_SHIFT) - 1);
}

static inline size_t rasp__hdr_aligned_alignment(const struct rasp__header *b)
{
	return (size_t)1 << (b->word >> RASP__ALIGN_SHIFT);
}

struct rasp_type {
	const char *name; /* owned copy */
	struct rasp_heap *heap;
	struct rasp_type *next; /* heap->types, under heap->lock */
};

/* SMALL: pages of size classes. LARGE: one large object of its own mapping (past
 * RASP__ARENA_MAX_PAGES). ARENA: large objects carved from the mapping's pages (segment.c). */
enum rasp__segment_kind { RASP__SEG_SMALL = 1, RASP__SEG_LARGE = 2, RASP__SEG_ARENA = 3 };

/* A large-object arena: a segment-sized mapping whose 4 KiB pages are spans, each a large
 * object or free. Boundary tags: the first and the last page of every span hold its length
 * and flags; every other page's tag is 0, so a pointer's page says at once whether it starts
 * a span. Free spans merge with free neighbours at each free, so a freed buffer serves any
 * smaller object and adjacent ones a larger, without a page fault while their pages stay
 * committed (the purge policy, segment.c). A span's first 8 bytes hold its object's
 * ObjectSize, the object's header follows. All under heap->lock. */
#define RASP__ARENA_PAGE_SHIFT 12
/* An arena is this many 4 MiB units (the segment map marks each, so the arena of a pointer is
 * found from its unit: rasp__mapping_of). */
#define RASP__ARENA_UNITS     8u
#define RASP__ARENA_SIZE      ((size_t)RASP__ARENA_UNITS << RASP__SEGMENT_SHIFT)
#define RASP__ARENA_PAGES     ((uint32_t)(RASP__ARENA_SIZE >> RASP__ARENA_PAGE_SHIFT))
#define RASP__ARENA_WORDS     (RASP__ARENA_PAGES / 64)
#define RASP__ARENA_START     1u /* tag flags */
#define RASP__ARENA_END	      2u
#define RASP__ARENA_FREE      4u
#define RASP__ARENA_LEN_SHIFT 8
/* A span's first 8 bytes hold its object's ObjectSize; the object's header follows, so the
 * object is 16 bytes into its span, 16-aligned. */
#define RASP__ARENA_HDR_OFFSET ((size_t)16 - RASP_OBJECT_HEADER_SIZE)
struct rasp__arena {
	uint32_t first;		 /* first page past the header */
	uint32_t free_pages;	 /* pages in free spans */
	uint32_t max_free;	 /* an upper bound on the longest free span, in pages */
	uint32_t free_committed; /* pages in free spans and committed */
	/* In the arena's header pages, from just past this struct (arena_new): 35 KiB for 8192
	 * pages, over the bytes a small segment's members of the union would hold (no arena
	 * reads those), and more than a small segment's header, whose size the union sets. A
	 * fresh mapping is zero, so only the words a span's tags and bits reach are touched. */
	uint64_t *free_map;	 /* RASP__ARENA_WORDS; bit i: page i is in a free span */
	uint64_t *committed_map; /* bit i: handed out and not purged since */
	uint64_t *old_map;	 /* bit i: free at the last purge tick */
	uint32_t *tag;		 /* RASP__ARENA_PAGES */
};

/* A page: blocks of one size class in 1..16 slots, owned by one thread's context (or by
 * none: abandoned at thread exit). Aligned to a cache line and padded to two, so the records
 * of two threads' pages side by side in a segment never share a line (their owners write
 * them on every free). Fields marked "owner" are written by the owning thread only
 * (or by a whole-heap operation while it is quiescent); the atomics are for other threads. */
struct rasp__page {
	/* First line: what a free and a refill touch (one cache line per page visited where
	 * frees land at random; the second line is for other threads and rare paths). */
	struct rasp__header *local_free; /* owner: blocks freed by the owner, not yet reused */
	struct rasp__header *local_tail; /* owner: its last block (valid while local_n > 0):
					  * a refill joins lists without walking them */
	uint32_t local_n;		 /* owner: blocks in local_free */
	_Atomic uint32_t used;		 /* owner: blocks out (live, held by the context, or
					  * freed by another thread and not yet collected) */
	uint32_t bsize;			 /* block size; 0: not a page (free slot) */
	/* Its size class's byte offset in a context's hot entries (class * 32: rasp__page_cls),
	 * so that the owner's free finds the class's hot entry with an add and its window with
	 * one scaled `lea` (3 instructions fewer a free than from the class, callgrind). */
	uint16_t hot_off;
	bool in_full;		 /* owner: on the full list, not the queue */
	bool kept_empty;	 /* owner: empty, kept in its queue for reuse */
	_Atomic uintptr_t owner; /* owning thread's token; 0 when abandoned */
	uintptr_t start;	 /* first block (a free checks that it is given a block's start) */
	/* rasp__class_div[cls], here so that a free's block check reads the page's line only
	 * (2 instructions and a table's line fewer per free than the table, callgrind). */
	uint64_t div;
	/* The blocks' bytes: blocks * bsize (rasp__page_capacity). A word, so that the free
	 * compares it with memory, and before the multiplication, which then needs no copy of
	 * the offset (3 instructions fewer a free, callgrind). */
	uint64_t bytes;
	/* Second line. */
	uint32_t formatted;	 /* bytes of blocks formatted so far (the rest never touched) */
	struct rasp__page *next; /* owner's class queue or full list; abandoned list */
	struct rasp__page *prev;
	uint8_t span;  /* slots */
	uint8_t slot;  /* index of its first slot */
	bool unfenced; /* owner: on the full list, not yet checked after a fence (page.c) */
	_Atomic(struct rasp_context *) ctx; /* owner's context (for the full-page wake-up) */
	_Atomic(struct rasp__header *) thread_free; /* blocks freed by other threads */
	_Atomic int full;			    /* on the owner's full list */
} __attribute__((aligned(128)));

/* small_heap of a mapping that holds no small objects: neither a heap nor NULL. */
#define RASP__NOT_SMALL ((struct rasp_heap *)(uintptr_t)1)

/* The first bytes of every mapping: a segment of pages, or one large object. */
struct rasp__segment {
	uint64_t magic;
	struct rasp_heap *heap;
	/* heap if the segment holds small objects, else RASP__NOT_SMALL: the owner's free tests
	 * both in one compare (2 instructions fewer than heap and kind apart), and a NULL heap
	 * argument with them, since no segment's is NULL (2 fewer than a test of its own). */
	struct rasp_heap *small_heap;
	int kind; /* enum rasp__segment_kind */
	/* A live large object's mapping with a resident tail past 1/8 of it (a cached mapping
	 * reused for a smaller object), heap->lock: 1 since its allocation, 2 since the purge
	 * tick after; the next tick purges the tail. 0: none. In the padding before map_size. */
	uint32_t large_tail;
	size_t map_size;		   /* bytes mapped at this address */
	size_t large_z;			   /* a large object's ObjectSize (header included) */
	struct rasp__segment *next, *prev; /* heap->segments or heap->large, heap->lock */
	union {
		/* Small segments (heap->lock): bit i: slot i holds no page. */
		uint64_t free_slots;
		/* Large mappings (heap->lock): bytes at the end purged and not touched since, so
		 * not counted committed (a cached mapping reused for a smaller object). */
		size_t large_purged;
	};
	union {
		struct {
			/* Small segments only (heap->lock): */
			uint64_t committed_slots; /* bit i: slot i was used and not purged since */
			uint64_t purge_old; /* bit i: slot i free at the last purge tick, not used
					       since */
			uintptr_t slot0_start; /* first usable byte of slot 0 (after this header) */
			/* bit i: pages[i] is a released page on heap->formatted (its slots free,
			 * committed, untouched since) */
			uint64_t formatted_slots;
			struct rasp__page
			    *slot_page[RASP__SLOTS]; /* page holding slot i, or &rasp__no_page */
			/* Cross-thread frees by threads without a context of the heap (out of
			 * memory for one) still reading a page record after publishing their
			 * blocks; the others pin in their context (rasp_context.pin). Alone on its
			 * line: only such frees write it. */
			_Alignas(64) _Atomic uint32_t remote_pins;
			struct rasp__page pages[RASP__SLOTS]; /* page i starts at slot i */
		};
		struct rasp__arena arena; /* arenas only */
	};
};

/* One size class of a context: the hot words the fast path reads, then its window. The
 * context holds a free list taken from its current page; the window is the part of it the fast
 * path may use: `n` blocks before the slow path must run (combined_limit - alloc_ptr in
 * CoreCLR's terms, counted in blocks, the sampling budget folded in: the blocks wholly before
 * the byte where the next sample falls), `gap` blocks of the window from the block that
 * holds that byte on (0 when the budget reaches past the window; the byte is `off` into that
 * block), `rest` blocks of the list past the window. In bytes, CoreCLR's budget is
 * n * b + off and its alloc_limit - alloc_ptr is (n + gap) * b. */
struct rasp__hot {
	/* Blocks the fast path may still take (0: the next one is a miss). Signed: the fast path
	 * decrements it and tests the sign, one read-modify-write and a branch (-3 instructions
	 * against a test before the decrement), so a miss finds it at -1; rasp__alloc_miss puts
	 * it back to 0 first. */
	intptr_t n;
	struct rasp__header *free;
	/* The class's block size, a copy on the hot line (ASan builds unpoison by it). */
	uintptr_t bsize;
	uintptr_t spare; /* to 32 bytes: a class's offset is its index shifted */
};

struct rasp__window {
	uintptr_t gap; /* blocks, in blocks so that no miss divides by the block size */
	uintptr_t off; /* gap > 0: the sampled byte's offset in its block */
	/* Sampling on, gap 0 and `known`: `after` failed trials follow the window's end before
	 * the next success (the rest of the draw that covered the window). The next window
	 * continues that draw instead of drawing again (docs/runtime.md, "Sampling"). Not
	 * `known`: `after` is 0 (rasp__window_forget). */
	uint64_t after;
	bool known;
	/* Blocks of the list past the window. The owner's alone, atomic for rasp_heap_stats,
	 * which reads it (relaxed) beside `window_held`: a plain load and store each way, no
	 * lock prefix (rasp__rest, rasp__rest_set). */
	_Atomic uint32_t rest;
	/* The window's blocks at its last slow path (0 once the list went back): with `rest`,
	 * the list as rasp_heap_stats counts it. One store a miss; a context-wide byte count
	 * kept at each miss and each free took 6 instructions a miss and 3 a free. */
	_Atomic uint32_t window_held;
	uint32_t wb; /* blocks a window may cover (window_blocks, computed at attach) */
	/* The owner's frees go onto the list while rest < cache, else to their page's (free.c);
	 * a lean miss finding rest < keep tops the list up (keep_blocks and cache_blocks, set
	 * at attach; keep 1 and cache 0: the cache off and no top-up, as test-page's
	 * page-policy tests run). keep is at least 1 (the lean miss's test relies on it). */
	uint32_t keep;
	uint32_t cache, cache_max; /* the bound now, and the most it grows back to */
	/* The owner's frees of the class left before one past the bound flushes the list
	 * (free.c): flush_at at each miss and wherever the bound is set, one less at each free.
	 * Not set again where a collect or a redraw lowers the list's rest: frees are counted
	 * from the class's last miss (set again there, a collect every 6000 frees kept the count
	 * from ever coming down, test_random_frees_leave_few_pages). Many frees with no miss (a
	 * thread freeing, not allocating) flush it; a miss tops the list up only while frees
	 * come back to it (flush_in below flush_at). Counted down, so that the free past the
	 * bound decrements and tests one word (3 instructions fewer a free than a count compared
	 * with flush_at, callgrind); tested for 0 or below, since the cache's pushes do not test
	 * it. */
	int32_t flush_in;
	/* Blocks of a window a whole-heap operation ended (rasp__context_retire, run by another
	 * thread while this one may be freeing): part of the list, counted back at the owner's
	 * next slow path, which returns the list (return_list). */
	uint32_t retired;
	/* The page the list was first taken from (a gathered list also holds blocks of the next
	 * ones): not released while it is the current one. */
	struct rasp__page *page;
	struct rasp__page *queue;      /* pages with blocks to reuse, in the order they woke */
	struct rasp__page *queue_last; /* its tail, where woken pages go (page.c) */
	struct rasp__page *full;       /* pages with none, until another thread frees into them */
	uint32_t unfenced;	       /* pages at the head of `full` not yet swept (page.c) */
	/* Frees since a miss at which a free past the bound flushes the list: 2 * (cache + wb),
	 * or never (INT32_MAX: 2^31 frees with no miss) while the cache is off; kept by
	 * rasp__window_set_cache. */
	int32_t flush_at;
	/* The bound a flush leaves for the class's next refill: the flush turns the cache off
	 * (bound 0), so that the rest of a run of frees goes straight to the pages, and the
	 * refill that ends the run turns it on at half its bound before (page.c). */
	uint32_t cache_after;
	/* To 128 bytes: a class's window is then its index shifted, one instruction where 112
	 * bytes took three (lea, sub, shl), and the misses compute it up to four times. */
	uint32_t spare[4];
};

/* A page's size class, and its window: a class's window is four times as far into a
 * context's windows as its hot entry is into the hot entries (the free's scaled `lea`). */
_Static_assert(sizeof(struct rasp__hot) == 32 && sizeof(struct rasp__window) == 4 * 32,
	       "a page's hot_off finds its class's hot entry and window");
static inline unsigned rasp__page_cls(const struct rasp__page *pg)
{
	return pg->hot_off / (unsigned)sizeof(struct rasp__hot);
}

/* Drops the window's draw: `known` false and `after` 0 together, always, so that the lean
 * miss's one test of after < block size (the sample falls in this object) also catches a
 * window with no draw going on, and tests `known` only then (2 instructions a miss fewer with
 * sampling on, callgrind). */
static inline void rasp__window_forget(struct rasp__window *w)
{
	w->known = false;
	w->after = 0;
}

/* The owner's free cache's bound of window w set to `cache` blocks (0: the cache off). */
static inline void rasp__window_set_cache(struct rasp__window *w, uint32_t cache)
{
	w->cache = cache;
	w->flush_at = cache ? (int32_t)(2 * (cache + w->wb)) : INT32_MAX;
	w->flush_in = w->flush_at;
}

/* CoreCLR's ee_alloc_context, one per size class, plus sampling state. Written by the owning
 * thread only, except by context enumeration while the owner is quiescent and at the owner's
 * exit. Contexts are never freed before their heap (a stale wake-up of the full list of an
 * exited thread's recycled context is harmless), and are reused by later threads. */
struct rasp_context {
	struct rasp__hot hot[RASP__NCLASS]; /* first: the fast path's only data */
	struct rasp_heap *heap;
	uintptr_t token; /* owner thread's token (page ownership) */
	uint64_t rng[4]; /* xoshiro256++ state */
	bool sampling;	 /* windows were drawn with sampling on */
	/* At its last update, a session wanted AllocationSampled (LTTng or EventPipe): its
	 * samples go to rasp__emit_listened, which adds a stack where one is wanted. What a
	 * sample checks instead of the event words (16 instructions): a session that starts is
	 * seen at the thread's next state check, within a quantum of its allocation, where the
	 * thread announces its mean to it; its samples before that check are not sent (up to
	 * one quantum's per thread; LTTng's before it went out ahead of their announcement).
	 * A session that wants stacks alone gets none (they describe the sample that follows). */
	bool listened; /* in sampling's padding: no field after it moves */
	/* The event-state words at its last update, as read (rasp-events-inline.h): any change
	 * makes the next check a full update. */
	int seen_sampled, seen_configured;
	/* A new LTTng listener of SamplingConfigured was announced to: announce again at this time
	 * (0: nothing pending). LTTng enables a session's events in a process before the session
	 * records there; an announcement in between is lost (sample.c). */
	uint64_t lttng_confirm_ns;
	uint64_t seen_mask;
	/* The EventPipe epoch and mask in one word (rasp__events_state_peek) as its last update
	 * read it first: the inline check compares this, not the two. */
	uint64_t seen_ep_state;
	uint32_t ep_epoch;	/* EventPipe sessions' epoch it last announced in */
	uint32_t state_gen;	/* the heap's state_gen at its last state check */
	uint64_t unchecked;	/* window bytes the generic path handed out since its last
				 * state check (the lean miss checks at every entry) */
	uint64_t mean;		/* sampling mean the budgets were drawn with (announced) */
	double draw_scale;	/* -1 / ln(1 - 1/mean), +0 at mean 1: the draw multiplies */
	uint64_t index;		/* attach order in the heap (seeding) */
	_Atomic int full_dirty; /* another thread freed into a page on a full list */
	_Atomic int trim;	/* collect asked: release empty pages at the next slow path */
	uint32_t kept_empty;	/* pages kept empty in the queues (<= RASP__KEEP_EMPTY) */
	/* Cross-thread frees queued for one page (RASP__BATCH_MAX at most), pushed at once. */
	struct rasp__page *batch_page;
	struct rasp__header *batch_head, *batch_tail;
	uint32_t batch_n;
	/* The segment this thread's cross-thread free is reading a page record of, after
	 * publishing its blocks (rasp__page_push_begin .. _end); NULL between pushes. Written by
	 * the owner with plain release stores, read by an unmap under heap->lock. */
	_Atomic(struct rasp__segment *) pin;
	/* Counters, written by the owner only (relaxed), summed by rasp_heap_stats. */
	_Atomic uint64_t n_samples, n_refills;
	struct rasp_context *next, *prev; /* heap->contexts or heap->spare_contexts, heap->lock */
	/* The owner thread's one-entry heap cache key (context.c), which rasp_heap_destroy
	 * clears if it names the heap: a heap created later at the same address then misses it.
	 * Set only while the owner is sure to unset it at its exit (context.c, publish_owner),
	 * NULL otherwise. registry_lock held to use it. */
	struct rasp_heap **owner_cache; /* accessed with __atomic builtins (rasp/inline.h) */
	uint64_t owner_epoch;		/* the fork epoch it was set in (context.c) */
	struct rasp__window win[RASP__NCLASS];
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
	/* Bumped (release) after every rasp_heap_set_sampling: a thread that sees it change
	 * checks its sampling state at its next slow path instead of within a quantum. */
	_Atomic uint32_t state_gen;
	_Atomic int announced;	       /* a thread announced sampling on (SamplingConfigured) */
	struct rasp_context *contexts; /* attached, lock */
	struct rasp_context *spare_contexts; /* of exited threads, for reuse, lock */
	/* Small segments, lock: those with free slots first, full ones after (segment.c), so a
	 * page search stops at the first full one. */
	struct rasp__segment *segments, *segments_tail;
	/* RASP_THP=1: segments not advised against huge pages; set by rasp_heap_create, read-only
	 * after. */
	bool thp;
	struct rasp__segment *large; /* large objects, lock */
	/* Freed large objects' mappings kept for reuse (segment.c), lock. */
	struct rasp__segment *large_cache;
	struct rasp__segment *large_cache_old; /* the part cached at the last purge tick */
	unsigned large_tails;		       /* live mappings with large_tail set, lock */
	uint64_t large_cache_bytes;
	unsigned large_cache_n;
	/* Large-object arenas (segment.c), lock, and their free committed pages. */
	struct rasp__segment *arenas;
	uint64_t arena_free_committed;
	/* The largest ObjectSize carved from arenas (RASP__ARENA_MAX_PAGES; set by
	 * rasp_heap_create; a test seam: 0 maps every large object on its own). */
	size_t arena_max_z;
	struct rasp__page *abandoned[RASP__NCLASS]; /* pages of exited threads, lock */
	/* Released pages of each class whose blocks are all still formatted and free on their
	 * local list (segment.c, "formatted"), lock: a page of the class is taken from here
	 * first, whole, instead of formatted again 4 KiB a refill. */
	struct rasp__page *formatted[RASP__NCLASS];
	uint64_t free_committed_slots; /* empty slots not purged, lock */
	/* Purge ticks (segment.c), lock: the earliest the next may run (rasp__os_coarse_ns), and
	 * whether anything waits for one (page operations then read the clock). */
	uint64_t purge_tick;
	bool purge_wait;
	struct rasp_type *types; /* lock */
	uint64_t next_ctx_index; /* lock */
	/* Written under the lock, read by stats at any time. */
	_Atomic uint64_t regions_n, reserved_bytes, committed_bytes, large_live_bytes, pages_n,
	    purged_bytes;
	_Atomic uint64_t contexts_n, starts, invalid_frees;
	/* Counters of contexts gone (their threads exited), folded in at their exit. */
	_Atomic uint64_t samples_gone, refills_gone;
	struct rasp_heap *reg_next;	  /* registry of live heaps (context.c) */
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
/* Gives the pages' memory back (the range reads as zeros afterwards); keeps the mapping. */
void rasp__os_purge(void *addr, size_t size);
/* The mapping at addr, old_size bytes, made new_size bytes at the same address (mremap without
 * moving): 0, or -1 where it cannot be (the addresses past it are taken), the mapping as it
 * was. A shrink gives the tail back. */
int rasp__os_resize(void *addr, size_t old_size, size_t new_size);
/* The mapping at addr, old_size bytes, moved to `to` (which must be mapped, new_size bytes: it
 * is replaced) and made new_size bytes there (mremap with MREMAP_FIXED): its pages go along,
 * resident ones without a fault, and addr is unmapped. 0, or -1 with nothing changed. */
int rasp__os_move(void *addr, size_t old_size, size_t new_size, void *to);
/* Asks the kernel not to back the range with transparent huge pages (MADV_NOHUGEPAGE). */
void rasp__os_no_huge(void *addr, size_t size);
void rasp__os_random(void *buf, size_t len);
/* A monotonic clock, in nanoseconds. */
uint64_t rasp__os_now_ns(void);
/* The purge ticks' clock (segment.c): monotonic, in nanoseconds, to the kernel's tick (a few
 * ms; a vDSO read, no system call). Through the seam, so tests can move time. */
uint64_t rasp__os_coarse_ns(void);
/* Test seam: replaces mmap/munmap/madvise (NULL restores them). map returns NULL on failure;
 * purge and no_huge may be NULL (then they are no-ops), resize and move NULL (then they always
 * fail). */
struct rasp__os_ops {
	void *(*map)(size_t size);
	void (*unmap)(void *addr, size_t size);
	void (*purge)(void *addr, size_t size);
	void (*no_huge)(void *addr, size_t size);		     /* NULL: no advice given */
	uint64_t (*coarse_ns)(void);				     /* NULL: the real clock */
	int (*resize)(void *addr, size_t old_size, size_t new_size); /* NULL: always fails */
	int (*move)(void *addr, size_t old_size, size_t new_size, void *to); /* NULL: fails */
};
void rasp__os_set_ops(const struct rasp__os_ops *ops);

/* sizeclass.c: the class tables the fast path reads (filled once, before any heap exists). */
extern uintptr_t rasp__class_size[RASP__NCLASS];
extern uint8_t rasp__table_class[RASP__TABLE_MAX / 8 + 1];
/* The same lookup as byte offsets into a context's hot array (class x 32): the fast path's. */
extern uint16_t rasp__table_hot[RASP__TABLE_MAX / 8 + 1];
extern uint8_t rasp__class_span[RASP__NCLASS];
/* ceil(2^64 / block size) per class: n is a multiple of the block size, for n < 2^32, exactly
 * when n * it (mod 2^64) is below it (Lemire, Kaser and Kurz, "Faster remainder by direct
 * computation", 2019): a free's check that it was given a block's start, without a division. */
extern uint64_t rasp__class_div[RASP__NCLASS];
void rasp__classes_init(void);
/* Class of object size z (multiple of 8, <= RASP__SMALL_MAX_Z); 0 if z < 16. */
unsigned rasp__class_of(size_t z);

/* segment.c: segments, their slots and the purge policy, large objects. heap->lock held
 * unless said. */
/* RASP_THP: may small-object segments get transparent huge pages (else they are advised
 * against them)? Any thread, no lock (rasp_heap_create). */
bool rasp__segment_thp_allowed(void);
/* A run of `span` free slots formatted as an empty page of class cls, or NULL. */
struct rasp__page *rasp__segment_page_new(struct rasp_heap *h, unsigned cls);
/* An empty page back to its segment (purged past RASP__RETAIN_SLOTS, and an empty segment
 * unmapped when the heap has another with free slots, once they stayed empty from one purge
 * tick to the next; the ticks run here and at rasp__segment_page_new). */
void rasp__segment_page_free(struct rasp_heap *h, struct rasp__page *pg);
/* Purges every empty committed slot and unmaps every empty segment (collect). */
void rasp__segments_trim(struct rasp_heap *h);
/* A large object of object size z, its header written with kind; takes heap->lock. */
void *rasp__large_alloc(struct rasp_heap *h, size_t z, int kind, const rasp_type_t *type);
/* The header of the large object of mapping s. */
struct rasp__header *rasp__large_header(struct rasp__segment *s);
/* Takes heap->lock. */
void rasp__large_free(struct rasp_heap *h, struct rasp__segment *s);
/* The block header of arena s's span holding hdr, and its object size; NULL (and *why) if hdr
 * is in no live object's span. No lock: for a live object's pointer, or under heap->lock. */
struct rasp__header *rasp__arena_block(struct rasp__segment *s, const void *hdr, size_t *z,
				       const char **why);
/* The live object whose block header is hdr, in arena s, freed; takes heap->lock. -EINVAL
 * (nothing changed) if its span is no longer live under the lock (a racing second free). */
int rasp__arena_free(struct rasp_heap *h, struct rasp__segment *s, struct rasp__header *hdr);
int rasp__segments_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg);
void rasp__segments_unmap_all(struct rasp_heap *h);
/* Bytes of blocks out in pages (used x block size) of every page, relaxed reads. */
uint64_t rasp__segments_used_bytes(struct rasp_heap *h);

/* page.c: pages of a context. Owner thread (or quiescent owner) unless said. */
/* Bytes of never-used blocks formatted at a time (at least one block): one OS page, so that
 * the resident set follows what each class has used. Formatting writes every block's link,
 * so what is formatted is resident: at 16 KiB, `mixed`'s 55 classes each held up to 16 KiB
 * touched and unused, and its peak RSS was 0.38 MiB higher (13.28 against 12.90 MiB; the
 * `request` loop, which formats the most, 1.6% faster; docs/performance.md). */
#define RASP__EXTEND_BYTES ((size_t)4096)
/* Formats up to RASP__EXTEND_BYTES of never-used blocks into local_free. */
void rasp__page_extend(struct rasp__page *pg);
/* Moves the blocks other threads freed into local_free. Returns how many. */
uint32_t rasp__page_collect(struct rasp__page *pg);
/* A page of class cls with free blocks for context c, its free blocks in local_free: the
 * class queue, pages freed into while full, abandoned pages, a new page. NULL: no memory. */
struct rasp__page *rasp__page_find(struct rasp_context *c, unsigned cls);
/* Takes pg's local list (pg from rasp__page_find), and short ones of the next pages, in front
 * of the list at *list (a top-up keeps the blocks it had); returns the blocks taken. */
uint32_t rasp__page_take_list(struct rasp_context *c, struct rasp__page *pg,
			      struct rasp__header **list);
/* The owner freed the last block out: release the page unless it is current. */
void rasp__page_empty(struct rasp_context *c, struct rasp__page *pg);
/* The owner's free found class k's list at its bound (free.c): the whole list goes back to
 * its pages, pages that empty go as rasp__page_empty lets them, the window ends, and the
 * cache is off until the class's next refill, which turns it on at half its bound (down to
 * RASP__CACHE_MIN). Takes heap->lock. */
void rasp__list_flush(struct rasp_context *c, unsigned k);
/* The least bound of the owner's free cache, in blocks (context.c, cache_blocks). */
#define RASP__CACHE_MIN 8u
/* Every page of c to the heap's abandoned lists (or freed, if empty); heap->lock NOT held. */
void rasp__pages_abandon(struct rasp_context *c);
/* heap->lock held: empty pages of c that are not current go back to their segments. */
void rasp__pages_release_empty(struct rasp_context *c);
/* heap->lock held: collects abandoned pages' cross-thread frees, frees the empty ones. */
void rasp__abandoned_trim(struct rasp_heap *h);
/* Pushes a chain of blocks of pg (first..last) freed by a thread that does not own pg; c is
 * that thread's context of pg's heap (NULL if it could not have one): rasp__page_push_begin
 * (the segment pinned, the blocks published), then rasp__page_push_end (the owner told if
 * the page is on its full list, the pin dropped). Two steps so that tests can stop between
 * them. */
void rasp__page_push_remote(struct rasp_context *c, struct rasp__page *pg,
			    struct rasp__header *first, struct rasp__header *last);
void rasp__page_push_begin(struct rasp_context *c, struct rasp__page *pg,
			   struct rasp__header *first, struct rasp__header *last);
void rasp__page_push_end(struct rasp_context *c, struct rasp__page *pg);
/* heap->lock held: is a cross-thread free still reading a page record of s? */
bool rasp__segment_pinned(struct rasp_heap *h, struct rasp__segment *s);

/* Pushes the calling thread's queued cross-thread frees (c is its context). */
void rasp__batch_flush(struct rasp_context *c);

/* free.c */
/* The object's block header and its page (NULL for a large object), after the checks every
 * build makes; NULL header (errno EINVAL, reported) when obj is not one of h's objects. */
struct rasp__header *rasp__block_of(struct rasp_heap *h, void *obj, const char *op,
				    struct rasp__segment **seg);

/* stack.c: the caller's call stack, innermost first, the runtime's own frames left out; up to
 * max (<= RASP_MAX_STACK_DEPTH) frames. Slow path only. */
size_t rasp__stack_capture(uintptr_t *frames, size_t max);

/* sample.c */
void rasp__rng_seed(struct rasp_context *c, const rasp_config_t *cfg);
/* xoshiro256++ (Blackman and Vigna): inline, as every draw takes one or more. */
static inline uint64_t rasp__rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rasp__rng_next(uint64_t s[4])
{
	uint64_t result = rasp__rotl(s[0] + s[3], 23) + s[0], t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rasp__rotl(s[3], 45);
	return result;
}
/* logarithm.c: log within 1.3 ulp and log1p within 1.6 ulp (measured), without libm. */
double rasp__log(double x);
/* log x for a positive, finite, normal x only (the draw's V), without rasp__log's checks. */
double rasp__log_normal(double x);
double rasp__log1p(double x);

/* Sets the mean a context draws with (and the constant its draws need). */
void rasp__context_set_mean(struct rasp_context *c, uint64_t mean);
/* Adopts the heap's sampling state (mode, mean, listener) for the calling thread's next
 * trials, announcing a change for this thread. Returns true if sampling or the mean changed:
 * the caller redraws then, and only then (an announcement of an unchanged state to a new
 * listener keeps the draws, so a seeded thread's samples never depend on the clock). */
bool rasp__sampling_update_full(struct rasp_context *c);
/* The same, inline where nothing it follows changed since the thread's last update: the
 * heap's generation, the EventPipe session epoch and events (one word), and the LTTng states
 * of AllocationSampled and SamplingConfigured, compared as words. The lean miss runs it at
 * every entry (four compares, 12 instructions), the generic path when due: no call, against
 * three calls and 62 instructions when it always ran the full update. */
static inline bool rasp__sampling_unchanged(const struct rasp_context *c)
{
	return atomic_load_explicit(&c->heap->state_gen, memory_order_acquire) == c->state_gen &&
	       rasp__events_state_peek() == c->seen_ep_state &&
	       rasp__event_allocation_sampled_word() == c->seen_sampled &&
	       rasp__event_sampling_configured_word() == c->seen_configured;
}
static inline bool rasp__sampling_update(struct rasp_context *c)
{
	if (rasp__sampling_unchanged(c)) {
		c->unchecked = 0;
		return false;
	}
	return rasp__sampling_update_full(c);
}
/* Whether the generic path's check of the thread's sampling state is due: a quantum of the
 * window bytes the generic path handed out since the last one (the lean miss checks at every
 * entry and counts none; it sets a quantum here when its check found a change), or a
 * rasp_heap_set_sampling since (seen at once). Two loads. */
static inline bool rasp__state_check_due(const struct rasp_context *c)
{
	return c->unchecked >= c->heap->cfg.alloc_quantum ||
	       atomic_load_explicit(&c->heap->state_gen, memory_order_relaxed) != c->state_gen;
}
/* The sample's announcement if due, hook, stack and event (sample.c), under the mean the
 * thread drew it with, c->mean (a thread adopts a new one only after its sample is out).
 * Returns obj, so that a caller returning the object calls it last: six arguments and a tail
 * call, nothing of the caller's lives across it. */
void *rasp__emit_listened(struct rasp_context *c, uint32_t kind, const rasp_type_t *type, void *obj,
			  uint64_t z, uint64_t offset);
/* context.c */
typedef void (*rasp__context_fn)(struct rasp_context *c, void *arg);
/* Calls fn for every context of the heap with heap->lock held. The owners must be quiescent
 * (debug builds abort if one is not). */
void rasp__contexts_enumerate(struct rasp_heap *h, rasp__context_fn fn, void *arg);
/* Ends every window of c: its unused blocks stay on its lists (counted in `retired`, not in
 * `rest`, which the owner's frees may be raising), and its next allocation of every class
 * takes the slow path. The one way another thread changes c's windows. */
void rasp__context_retire(struct rasp_context *c, void *arg);
struct rasp_context *rasp__context_attach(struct rasp_heap *h);
/* Words one thread writes and others read (relaxed): a page's count of blocks out, a
 * context's sample count. The writer's read-modify-write is one instruction on
 * memory on x86-64, which a relaxed load and store cannot be compiled to (gcc keeps them
 * apart: 2 instructions more each, on the owner's free). An aligned word's store is atomic
 * there and the writer is alone, so a reader sees the old value or the new, as with the
 * atomics. Elsewhere, and under TSan (which must see the accesses), the atomics. */
#if defined(__x86_64__) && !defined(RASP__TSAN)
#define RASP__OWNER_ASM 1
#endif

static inline void rasp__owner_add64(_Atomic uint64_t *p, uint64_t v)
{
#ifdef RASP__OWNER_ASM
	__asm__("addq %1, %0" : "+m"(*(uint64_t *)p) : "er"(v));
#else
	atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + v,
			      memory_order_relaxed);
#endif
}

/* Counts a sample; true when someone may take it (then rasp__emit_listened goes on): a
 * session as of the thread's last state update (`listened`), or a hook. Nobody to tell
 * (sampling forced on with no session: a benchmark's, or a program that reads its counts
 * through rasp_heap_stats): the count only, in a few loads and no call. */
static inline bool rasp__sample_counted_listened(struct rasp_context *c)
{
	/* One instruction: a relaxed load and store took 3. */
	rasp__owner_add64(&c->n_samples, 1);
	return c->listened || c->heap->sample_hook;
}
/* Counts a sample and fires AllocationSampled. */
static inline void rasp__emit_sample(struct rasp_context *c, uint32_t kind, const rasp_type_t *type,
				     void *obj, uint64_t z, uint64_t offset)
{
	if (rasp__sample_counted_listened(c))
		rasp__emit_listened(c, kind, type, obj, z, offset);
}

/* One less in the owner's count *p (a word no other thread reads); true when it is 0 or
 * below after. On x86-64 a subtraction on memory and the flags' `le` (the old value at most
 * 1), two instructions where gcc compiled `--*p <= 0` to five; `== 0` would take two as
 * well, but a count can pass 0 without a test (the free cache's pushes, after a collect or
 * a redraw lowered the list: a review found the flush then never came, 99 pages of 99
 * kept). */
static inline bool rasp__owner_dec_le0(int32_t *p)
{
#if defined(__x86_64__)
	bool le;

	__asm__("subl $1, %0" : "+m"(*p), "=@ccle"(le));
	return le;
#else
	return --*p <= 0;
#endif
}

/* One less in the owner's word *p; true when it is 0 after. */
static inline bool rasp__owner_dec32(_Atomic uint32_t *p)
{
#ifdef RASP__OWNER_ASM
	bool zero;

	__asm__("subl $1, %0" : "+m"(*(uint32_t *)p), "=@ccz"(zero));
	return zero;
#else
	uint32_t v = atomic_load_explicit(p, memory_order_relaxed) - 1;

	atomic_store_explicit(p, v, memory_order_relaxed);
	return v == 0;
#endif
}

/* The list's blocks past the window, and their count set (the owner's). */
static inline uint32_t rasp__rest(const struct rasp__window *w)
{
	return atomic_load_explicit(&w->rest, memory_order_relaxed);
}
static inline void rasp__rest_set(struct rasp__window *w, uint32_t n)
{
	atomic_store_explicit(&w->rest, n, memory_order_relaxed);
}
/* The owner publishes the window's blocks for rasp_heap_stats. */
static inline void rasp__window_publish(struct rasp__window *w, uint32_t blocks)
{
	atomic_store_explicit(&w->window_held, blocks, memory_order_relaxed);
}
/* The calling thread's context on h, if it has one (no attach). */
struct rasp_context *rasp__context_peek(struct rasp_heap *h);
/* The thread's one-entry cache of its last heap and that heap's context (context.c), exported
 * as rasp_inline_cache_v1 for rasp/inline.h except in AddressSanitizer builds. */
#ifdef RASP__ASAN /* GCC's or clang's: freed blocks are poisoned, no caller may pop them */
extern __thread struct rasp_inline_cache rasp__tcache
    __attribute__((visibility("hidden"), tls_model("initial-exec")));
#else
/* Declared here as well: rasp/inline.h declares it only where callers may inline, and
 * librasp defines it in every build but AddressSanitizer's. */
RASP_API extern __thread struct rasp_inline_cache rasp_inline_cache_v1
    __attribute__((tls_model("initial-exec")));
#define rasp__tcache rasp_inline_cache_v1
#endif
/* Whether the thread's cache names h (a load and a compare, no call); then
 * rasp__context_cache_ctx() is the thread's context on h (never NULL). */
static inline bool rasp__context_cache_is(const struct rasp_heap *h)
{
	return __atomic_load_n(&rasp__tcache.heap, __ATOMIC_RELAXED) == h;
}
static inline struct rasp_context *rasp__context_cache_ctx(void)
{
	return (struct rasp_context *)(void *)rasp__tcache.ctx;
}
/* The thread's token (page ownership): unique among live threads. The thread pointer where
 * the compiler gives it (gcc 11 on: %fs:0 on x86-64, which the owner's free compares in one
 * instruction; a thread-local byte's address, which is the thread pointer plus a constant,
 * took a GOT load and an add more, every free); else that byte's address. */
extern __thread char rasp__tls_anchor __attribute__((tls_model("initial-exec")));
static inline uintptr_t rasp__thread_token(void)
{
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
	return (uintptr_t)__builtin_thread_pointer();
#endif
#endif
	return (uintptr_t)&rasp__tls_anchor;
}
void rasp__heap_unregister(struct rasp_heap *h);
int rasp__heap_register(struct rasp_heap *h);
void rasp__thread_forget_heap(struct rasp_heap *h);
/* The calling thread's entries (one per heap it attached to and that is alive, give or take
 * the heaps destroyed since its last attach): for tests. */
size_t rasp__thread_entries(void);
/* The fast path's miss (flags 0, a type; hc: the size's class's hot entry). */
void *rasp__alloc_miss(struct rasp_context *c, const rasp_type_t *type, size_t size,
		       struct rasp__hot *hc);
void *rasp__alloc_slow(struct rasp_context *c, const rasp_type_t *type, size_t size,
		       unsigned flags);

/* Object size (header included) rounded to 8 after checking overflow; 0 if too large. */
static inline size_t rasp__object_size_raw(size_t payload)
{
	if (payload > RASP__MAX_PAYLOAD)
		return 0;
	return (payload + RASP_OBJECT_HEADER_SIZE + 7) & ~(size_t)7;
}

/* The ObjectSize an object of this payload gets: its size class when small, its size rounded
 * to 8 when large. 0 if too large. */
static inline size_t rasp__object_size_for(size_t payload)
{
	size_t z = rasp__object_size_raw(payload);

	return z && z <= RASP__SMALL_MAX_Z ? rasp__class_size[rasp__class_of(z)] : z;
}

static inline struct rasp__header *rasp__header_of(const void *obj)
{
	return (struct rasp__header *)((uintptr_t)obj - RASP_OBJECT_HEADER_SIZE);
}

static inline struct rasp__segment *rasp__segment_of(const void *p)
{
	return (struct rasp__segment *)((uintptr_t)p & ~(RASP__SEGMENT_SIZE - 1));
}

/* Which 4 MiB-aligned addresses start a rasp mapping (a segment or a large object) of any
 * heap in the process: a byte each over the 47-bit user address space (segment.c). rasp_free
 * reads it before any word at a pointer, so a pointer whose 4 MiB block starts no mapping
 * (memory rasp never mapped, or gave back to the OS: a double free after an unmap) is refused
 * instead of read. 32 MiB of .bss, untouched but for one 4 KiB page per 16 GiB of addresses
 * that hold mappings; costs a free five instructions and a load that stays in cache.
 * RASP__MAP_START marks a mapping's first unit; unit k of an arena (k >= 1, RASP__ARENA_UNITS)
 * holds RASP__MAP_START + k, so its header is found k units back (rasp__mapping_of). A large
 * object's own mapping marks its first unit only: a pointer past it is no object's start. */
#define RASP__MAP_SIZE	((uintptr_t)1 << (47 - RASP__SEGMENT_SHIFT))
#define RASP__MAP_START 1u
extern _Atomic uint8_t rasp__segment_map[RASP__MAP_SIZE];

static inline unsigned rasp__map_at(uintptr_t p)
{
	uintptr_t i = p >> RASP__SEGMENT_SHIFT;

	return i < RASP__MAP_SIZE
		   ? atomic_load_explicit(&rasp__segment_map[i], memory_order_relaxed)
		   : 0;
}

/* Whether s (4 MiB-aligned) starts a mapping, so that its header may be read. */
static inline bool rasp__segment_mapped(const struct rasp__segment *s)
{
	return rasp__map_at((uintptr_t)s) == RASP__MAP_START;
}

/* The mapping holding p, for the slow paths: p's unit, or for a unit inside an arena the
 * arena's first. Unchecked: rasp__segment_mapped says whether it starts a mapping. */
static inline struct rasp__segment *rasp__mapping_of(const void *p)
{
	struct rasp__segment *s = rasp__segment_of(p);
	unsigned v = rasp__map_at((uintptr_t)s);

	if (v > RASP__MAP_START)
		s = (struct rasp__segment *)((uintptr_t)s - ((uintptr_t)(v - RASP__MAP_START)
							     << RASP__SEGMENT_SHIFT));
	return s;
}

/* What an empty slot's entry points to: a page record that holds no block (its bytes are 0,
 * so every block check fails on it, and its slot is none), so that the owner's free reads an
 * entry without a NULL test (2 instructions fewer a free, callgrind). */
extern struct rasp__page rasp__no_page;

/* The page record of the slot holding p: rasp__no_page for an empty slot. */
static inline struct rasp__page *rasp__page_at(const struct rasp__segment *s, const void *p)
{
	return s->slot_page[((uintptr_t)p - (uintptr_t)s) >> RASP__SLOT_SHIFT];
}

/* The page holding p, or NULL. */
static inline struct rasp__page *rasp__page_of(const struct rasp__segment *s, const void *p)
{
	struct rasp__page *pg = rasp__page_at(s, p);

	return pg == &rasp__no_page ? NULL : pg;
}

/* Is hdr the header of one of pg's blocks (formatted or not)? hdr is in one of pg's slots.
 * n below the page's bytes also refuses an hdr before pg->start (n wraps); below that bound
 * (1 MiB) the multiplication's test is exact (test-sizeclass.c checks it against `%`). */
static inline bool rasp__page_has_block(const struct rasp__page *pg, const struct rasp__header *hdr)
{
	uint64_t n = (uintptr_t)hdr - pg->start;

	return n < pg->bytes && n * pg->div < pg->div;
}

/* Blocks the page holds. */
static inline uint32_t rasp__page_capacity(const struct rasp__page *pg)
{
	return (uint32_t)(pg->bytes / pg->bsize);
}

/* The block of pg holding hdr (hdr in the page's blocks). */
static inline struct rasp__header *rasp__page_block_at(const struct rasp__page *pg, const void *hdr)
{
	return (struct rasp__header *)(pg->start +
				       ((uintptr_t)hdr - pg->start) / pg->bsize * pg->bsize);
}

/* Every block of pg formatted. */
static inline bool rasp__page_all_formatted(const struct rasp__page *pg)
{
	return pg->formatted == pg->bytes;
}

static inline uint64_t rasp__relaxed_load32(_Atomic uint32_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

#endif /* RASP_RUNTIME_INTERNAL_H */
