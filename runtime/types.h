/* The runtime's data model alone: its structures and the constants that size them. The map:
 *
 *   rasp_heap -+- segments (4 MiB, aligned): 64 slots of 64 KiB; a page is 1..16 slots
 *              |    holding blocks of one size class, each with an 8-byte header
 *              +- arenas (32 MiB, aligned): spans of 4 KiB pages, each a large object or free
 *              +- large mappings: one object each, past RASP__ARENA_MAX_PAGES, and their cache
 *              +- types (rasp_type: a name at a stable address)
 *              +- contexts, one per thread that allocates from it (rasp_context):
 *                   hot[class]  the fast path's words: blocks left, the list, the block size
 *                   win[class]  the window over that list: the sampling budget, the list's
 *                               rest, the owner's free cache, the class's pages
 *
 * Every mapping starts with struct rasp__segment (kind SMALL, ARENA or LARGE), found from any
 * address in it by a mask and the process-wide segment map. The functions and the inline
 * helpers are in internal.h. Nothing here is installed or exported. */
#ifndef RASP_RUNTIME_TYPES_H
#define RASP_RUNTIME_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rasp/inline.h"
#include "rasp/rasp.h"

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
/* The OS page the layout assumes: a segment's metadata and a large mapping are rounded to it. */
#define RASP__OS_PAGE ((size_t)4096)
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
 * a program uses). Counting leading zeros past 1 KiB instead costs the fast path 12
 * instructions more, and a branch that sizes on both sides of 1 KiB mispredict. Class 0 is
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
 * tick), and grows in place for larger ones (large.c, large_cache_take). Measured in
 * docs/performance.md, "Large objects": 2, 3, 4, 6 and 8 tried. */
#define RASP__LARGE_REUSE 4
/* Large objects of up to this many 4 KiB pages (their 8-byte size word included: ObjectSize
 * up to 16,744,440 bytes) are carved from arenas (arena.c); larger ones have a mapping of
 * their own. An arena has 8183 pages past its header, so two of the largest fit in one, as
 * mimalloc's segments hold objects of up to half their size. With arenas of one 4 MiB unit and
 * this at 1000 pages (objects of 4 to 16 MB each in a mapping of its own), 8 live buffers of
 * 85 KB..16 MB took 4.2x mimalloc's time, faulting in 2.5 million pages against its 41,000
 * (docs/performance.md, "Arenas of 32 MiB"). */
#define RASP__ARENA_MAX_PAGES 4088u
/* How long after announcing to a new LTTng listener a thread announces again (sample.c), and
 * how many times, each wait twice the one before (0.1, 0.3, 0.7, 1.5 and 3.1 s after): past
 * the moment LTTng starts recording the session whose events it enabled, which `lttng start`
 * may do well after `lttng enable-event` on a loaded machine (over 100 ms under TSan). */
#define RASP__LTTNG_CONFIRM_NS ((uint64_t)100 * 1000 * 1000)
#define RASP__LTTNG_CONFIRMS   5u
/* Cross-thread frees of one page queued by the freeing thread before one atomic push. */
#define RASP__BATCH_MAX 64

/* Object header: one word, 8 bytes before the pointer handed out (glibc's chunks carry as
 * much; a second word, the block size, cost the demo's 17..24-byte objects 40-byte blocks
 * instead of 32, 4.9 MiB of its 37). The block size comes from the page (a small object) or
 * the mapping (a large one). Low four bits: FREE, then the kind, then SAMPLED (types are
 * 16-aligned).
 * - A live object: its type | kind << 1, | SAMPLED if its AllocationSampled was emitted
 *   (sample.c): the free, which reads this word anyway for FREE, tests both bits in one
 *   instruction, so an unsampled object's free costs nothing more and touches no other line
 *   (docs/runtime.md, "Frees of sampled objects"). Every allocation writes the word whole, so
 *   a block handed out again unsampled has no mark.
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
#define RASP__HDR_SAMPLED    UINT64_C(8)
#define RASP__KIND_ALIGNED   3u

struct rasp__header {
	uintptr_t word;
};

/* An aligned object's block header keeps the log2 of its alignment from this bit on. */
#define RASP__ALIGN_SHIFT 56

/* 16-aligned (heap.c allocates it so), so that a header's bit 3 is free for SAMPLED. */
#define RASP__TYPE_ALIGN 16
struct rasp_type {
	const char *name; /* owned copy */
	struct rasp_heap *heap;
	struct rasp_type *next; /* heap->types, under heap->lock */
};
_Static_assert(RASP__TYPE_ALIGN > RASP__HDR_SAMPLED, "a type's address leaves SAMPLED clear");

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
	/* The free's block check in one multiplication and one compare, on the page's line
	 * (rasp__page_has_block): div = floor(2^64 / bsize) + 1, lim = blocks * (bsize * div
	 * mod 2^64). 3 instructions a free fewer than a bound's compare and a divisibility
	 * test apart (callgrind). */
	uint64_t div;
	uint64_t lim;
	/* Second line. */
	uint64_t bytes;		 /* the blocks' bytes: blocks * bsize (rasp__page_capacity) */
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

/* A class's window is four times as far into a context's windows as its hot entry is into
 * the hot entries (the owner's free finds both from a page's hot_off with a scaled `lea`). */
_Static_assert(sizeof(struct rasp__hot) == 32 && sizeof(struct rasp__window) == 4 * 32,
	       "a page's hot_off finds its class's hot entry and window");

/* CoreCLR's ee_alloc_context, one per size class, plus sampling state. Written by the owning
 * thread only, except by context enumeration while the owner is quiescent and at the owner's
 * exit. Contexts are never freed before their heap (a stale wake-up of the full list of an
 * exited thread's recycled context is harmless), and are reused by later threads. */
/* A thread's frees of sampled objects kept for one Rasp_Runtime:SampledObjectsFreed (freed.c):
 * each block, its mapping, its ObjectSize and the time of its free. The blocks stay off every
 * free list (marked free, so a second free is refused) until their event is out. */
#define RASP__FREED_MAX 64
/* A batch goes out when its blocks hold this much (memory the program gave back and cannot
 * reuse yet). */
#define RASP__FREED_HOLD_MAX (1u << 20)
struct rasp__freed {
	uint32_t n;    /* kept */
	uint32_t skip; /* the first `skip` are a fork's parent's: freed here, not told */
	uint64_t bytes;
	struct rasp__header *blk[RASP__FREED_MAX];
	struct rasp__segment *seg[RASP__FREED_MAX];
	uint64_t size[RASP__FREED_MAX];
	uint64_t ns[RASP__FREED_MAX]; /* the frees' times (rasp__os_now_ns) */
};

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
	 * (0: nothing pending), `lttng_confirms` more times. LTTng enables a session's events in a
	 * process before the session records there; an announcement in between is lost
	 * (sample.c). */
	uint64_t lttng_confirm_ns;
	uint32_t lttng_confirms, lttng_confirm_wait_ms;
	uint32_t confirm_tick; /* samples while confirmations are pending (sample.c) */
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
	/* The owner thread's one-entry heap cache key (thread.c), which rasp_heap_destroy
	 * clears if it names the heap: a heap created later at the same address then misses it.
	 * Set only while the owner is sure to unset it at its exit (thread.c, publish_owner),
	 * NULL otherwise. registry_lock held to use it. */
	struct rasp_heap **owner_cache; /* accessed with __atomic builtins (rasp/inline.h) */
	uint64_t owner_epoch;		/* the fork epoch it was set in (thread.c) */
	struct rasp__window win[RASP__NCLASS];
	/* Debug builds only (kept in every build so the layout never depends on NDEBUG). */
	pthread_t owner;
	_Atomic int busy; /* owner is inside an allocation call */
	/* Requested sizes: the trials of resizes in place (alloc.c, rasp__resized), a stream of
	 * their own: the failed trials left before its next success, while `resize_known` (a draw
	 * under the thread's sampling state; windows_redraw forgets it). */
	uint64_t resize_left;
	bool resize_known;
	/* Last: read and written by its thread's frees of sampled objects only. */
	struct rasp__freed freed;
};

/* Test seams: every sample with the mean it was drawn under; every announcement (mean, or 0
 * for SamplingStopped). Both run in the allocating thread, before its event. */
typedef void (*rasp__sample_hook_fn)(void *arg, uint32_t kind, const rasp_type_t *type, void *addr,
				     uint64_t object_size, uint64_t offset, uint64_t mean);
typedef void (*rasp__announce_hook_fn)(void *arg, uint64_t mean);
/* Every free of a sampled object (its SampledObjectFreed's Address and ObjectSize), in the
 * freeing thread, before its event. */
typedef void (*rasp__free_hook_fn)(void *arg, void *addr, uint64_t object_size);

/* One live sampled object's ObjectSize (requested sizes), by its Address; addr 0: empty. */
struct rasp__sample_size {
	uintptr_t addr;
	uint64_t z;
};

struct rasp_heap {
	uint64_t id; /* unique in the process, never reused: thread caches key on it */
	pthread_mutex_t lock;
	rasp_config_t cfg;
	/* Where each small page's blocks start past its slots' 16-aligned start: 0, or 8 for
	 * librasp-malloc's heap (rasp__heap_block_offset). Fixed before the first segment. */
	size_t block_offset;
	_Atomic int sampling_mode;	/* enum rasp_sampling_mode */
	_Atomic uint64_t sampling_mean; /* bytes */
	/* Bumped (release) after every rasp_heap_set_sampling: a thread that sees it change
	 * checks its sampling state at its next slow path instead of within a quantum. */
	_Atomic uint32_t state_gen;
	_Atomic int announced; /* a thread announced sampling on (SamplingConfigured) */
	/* A sample of it was emitted (its object marked SAMPLED): its destruction emits
	 * HeapDestroyed. Set once (a relaxed load per sample, a store the first time). */
	_Atomic int marked;
	struct rasp_context *contexts;	     /* attached, lock */
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
	/* Invalid pointers (free.c): counted per kind; the embedder's policy, set before the heap
	 * is shared (rasp_heap_set_error_handler). */
	_Atomic uint64_t invalid_by_kind[RASP_INVALID_KINDS];
	int invalid_action;
	rasp_invalid_fn invalid_fn;
	void *invalid_arg;
	/* The embedding runtime's frames (rasp_heap_set_frames), read on a sample's stack only. */
	rasp_frames_fn frames_fn;
	void *frames_arg;
	/* rasp_realloc(heap, NULL, n)'s type: set, or "untyped" registered at its first use. */
	_Atomic(const struct rasp_type *) default_type;
	/* Counters of contexts gone (their threads exited), folded in at their exit. */
	_Atomic uint64_t samples_gone, refills_gone;
	struct rasp_heap *reg_next;	  /* registry of live heaps (thread.c) */
	rasp__sample_hook_fn sample_hook; /* test seams (see above), NULL in programs */
	rasp__announce_hook_fn announce_hook;
	rasp__free_hook_fn free_hook;
	void *sample_hook_arg; /* the three hooks' argument */
	/* Requested sizes (cfg.requested_sizes): the ObjectSize of each live sampled object, by
	 * its Address (sample.c), heap->lock: open addressing, `sizes_cap` slots (a power of 2, 0
	 * until the first sample), `sizes_n` used. */
	struct rasp__sample_size *sizes;
	size_t sizes_cap, sizes_n;
};

#endif /* RASP_RUNTIME_TYPES_H */
