/* The inline helpers on the data model (types.h): an object's header word (its next block, type,
 * kind, sampled mark, aligned offset), the segment and page an address lies in, a class
 * window's cached counts, and the walk's visit of one block. Included by internal.h. */
#ifndef RASP_RUNTIME_MODEL_H
#define RASP_RUNTIME_MODEL_H

#include "types.h"

/* The object header. */
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
	return (const struct rasp_type *)(h->word & ~(RASP__HDR_FLAGS | RASP__HDR_SAMPLED));
}

static inline unsigned rasp__hdr_kind(const struct rasp__header *h)
{
	return (unsigned)((h->word & RASP__HDR_KIND_MASK) >> RASP__HDR_KIND_SHIFT);
}

/* A live object's own header (not free, not an aligned object's block, whose offset may
 * have bit 3 set) marked SAMPLED: its free emits SampledObjectFreed. */
static inline bool rasp__hdr_sampled(const struct rasp__header *h)
{
	return (h->word & (RASP__HDR_SAMPLED | RASP__HDR_FREE)) == RASP__HDR_SAMPLED &&
	       rasp__hdr_kind(h) != RASP__KIND_ALIGNED;
}

/* The block header of an aligned object placed off + 8 bytes into its block, asked for
 * alignment 2^lg. */
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

static inline struct rasp__header *rasp__header_of(const void *obj)
{
	return (struct rasp__header *)((uintptr_t)obj - RASP_OBJECT_HEADER_SIZE);
}

static inline struct rasp__segment *rasp__segment_of(const void *p)
{
	return (struct rasp__segment *)((uintptr_t)p & ~(RASP__SEGMENT_SIZE - 1));
}

/* A page's size class (its hot_off is the class's offset in a context's hot entries). */
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

/* The walk's call of fn for the object whose block header is hdr (an aligned object's own
 * header resolved); 0 for a free block. */
static inline int rasp__walk_visit(struct rasp__header *hdr, size_t bsize, rasp_walk_fn fn,
				   void *arg)
{
	if (hdr->word & RASP__HDR_FREE)
		return 0;
	if (rasp__hdr_kind(hdr) == RASP__KIND_ALIGNED)
		hdr = (struct rasp__header *)((uintptr_t)hdr + rasp__hdr_aligned_off(hdr));
	return fn(hdr + 1, rasp__hdr_type(hdr), bsize, (int)rasp__hdr_kind(hdr), arg);
}

#endif
