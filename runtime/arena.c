/* Large-object arenas: 32 MiB mappings (struct rasp__arena) whose 4 KiB pages are spans, each a
 * large object of up to RASP__ARENA_MAX_PAGES or free. Free spans split at an allocation and
 * merge with their free neighbours at a free; a new object takes the free span that faults
 * in the fewest pages, then the shortest. Free committed pages past the heap's bound are
 * purged at the purge ticks (segment.c), and an arena empty and purged whole is unmapped.
 * Every function here runs with heap->lock held unless it says otherwise. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "internal.h"

#define ALL_PAGES  (~UINT64_C(0)) /* a map word's 64 pages */
#define ARENA_PAGE ((size_t)1 << RASP__ARENA_PAGE_SHIFT)

/* An arena's header: the segment header, then its maps and tags (struct rasp__arena). */
#define ARENA_MAPS_AT                                                                              \
	((offsetof(struct rasp__segment, arena) + sizeof(struct rasp__arena) + 63) & ~(size_t)63)
#define ARENA_TAGS_AT	(ARENA_MAPS_AT + 3 * RASP__ARENA_WORDS * sizeof(uint64_t))
#define ARENA_HDR_PAGES ((ARENA_TAGS_AT + RASP__ARENA_PAGES * sizeof(uint32_t) + 4095) / 4096)
/* The header pages and two of the largest spans fit an arena's pages (arena_take splits a span
 * of at least k pages); 255 units at most (the segment map's byte). */
_Static_assert(ARENA_HDR_PAGES + 2 * RASP__ARENA_MAX_PAGES <= RASP__ARENA_PAGES &&
		   RASP__ARENA_UNITS + RASP__MAP_START <= 255 && RASP__ARENA_PAGES % 64 == 0,
	       "an arena's largest spans do not fit past its header");

static uintptr_t arena_page(const struct rasp__segment *s, uint32_t i)
{
	return (uintptr_t)s + ((uintptr_t)i << RASP__ARENA_PAGE_SHIFT);
}

static uint32_t tag_len(uint32_t t)
{
	return t >> RASP__ARENA_LEN_SHIFT;
}

/* The mask of bits [b, b + k) of a word, 0 < k, b + k <= 64. */
static uint64_t bits_mask(uint32_t b, uint32_t k)
{
	return (k == 64 ? ALL_PAGES : ((UINT64_C(1) << k) - 1)) << b;
}

/* Bits [i, i + n) of map set (v) or cleared; returns how many were set before. */
static uint32_t bits_put(uint64_t *map, uint32_t i, uint32_t n, bool v)
{
	uint32_t had = 0;

	while (n) {
		uint32_t b = i % 64, k = 64 - b < n ? 64 - b : n;
		uint64_t m = bits_mask(b, k);

		had += (uint32_t)__builtin_popcountll(map[i / 64] & m);
		map[i / 64] = v ? map[i / 64] | m : map[i / 64] & ~m;
		i += k;
		n -= k;
	}
	return had;
}

/* Bits set in [i, i + n) of map. */
static uint32_t bits_count(const uint64_t *map, uint32_t i, uint32_t n)
{
	uint32_t had = 0;

	while (n) {
		uint32_t b = i % 64, k = 64 - b < n ? 64 - b : n;

		had += (uint32_t)__builtin_popcountll(map[i / 64] & bits_mask(b, k));
		i += k;
		n -= k;
	}
	return had;
}

/* Span [i, i + n) tagged at both ends, free or not. */
static void span_set(struct rasp__arena *a, uint32_t i, uint32_t n, uint32_t free)
{
	uint32_t t = n << RASP__ARENA_LEN_SHIFT | free;

	if (n == 1) {
		a->tag[i] = t | RASP__ARENA_START | RASP__ARENA_END;
	} else {
		a->tag[i] = t | RASP__ARENA_START;
		a->tag[i + n - 1] = t | RASP__ARENA_END;
	}
}

static struct rasp__segment *arena_new(struct rasp_heap *h)
{
	struct rasp__segment *s = rasp__mapping_new(h, RASP__ARENA_SIZE, RASP__SEG_ARENA);
	struct rasp__arena *a;
	uint32_t first = (uint32_t)ARENA_HDR_PAGES;

	if (!s)
		return NULL;
	a = &s->arena;
	memset(a, 0, sizeof(*a));
	/* The maps and tags are the fresh mapping's zeros. */
	a->free_map = (uint64_t *)((uintptr_t)s + ARENA_MAPS_AT);
	a->committed_map = a->free_map + RASP__ARENA_WORDS;
	a->old_map = a->committed_map + RASP__ARENA_WORDS;
	a->tag = (uint32_t *)((uintptr_t)s + ARENA_TAGS_AT);
	a->first = first;
	a->free_pages = a->max_free = RASP__ARENA_PAGES - first;
	span_set(a, first, a->free_pages, RASP__ARENA_FREE);
	bits_put(a->free_map, first, a->free_pages, true);
	rasp__mapping_link(&h->arenas, s);
	atomic_fetch_add(&h->committed_bytes, (uint64_t)first << RASP__ARENA_PAGE_SHIFT);
	RASP__POISON((void *)arena_page(s, first), (size_t)a->free_pages << RASP__ARENA_PAGE_SHIFT);
	rasp__mapping_mark(s, true);
	return s;
}

/* The free span of at least k pages over the heap's arenas whose first k pages need the fewest
 * page faults (are committed), the shortest of those (its arena, *at its first page); NULL if
 * none. Each arena whose bound on its longest free span allows k is walked span by
 * span (at most 2 spans per object it holds, plus one), and its bound made exact. */
static struct rasp__segment *arena_find(struct rasp_heap *h, uint32_t k, uint32_t *at)
{
	struct rasp__segment *best = NULL;
	uint32_t best_n = UINT32_MAX, best_fresh = UINT32_MAX;

	for (struct rasp__segment *s = h->arenas; s && (best_n != k || best_fresh); s = s->next) {
		struct rasp__arena *a = &s->arena;
		uint32_t longest = 0;

		if (a->max_free < k)
			continue;
		for (uint32_t i = a->first, n, fresh; i < RASP__ARENA_PAGES; i += n) {
			n = tag_len(a->tag[i]);
			if (!n)
				break; /* cannot be: the tags are the heap's own */
			if (!(a->tag[i] & RASP__ARENA_FREE))
				continue;
			if (n > longest)
				longest = n;
			if (n < k)
				continue;
			fresh = k - bits_count(a->committed_map, i, k);
			if (fresh < best_fresh || (fresh == best_fresh && n < best_n))
				best = s, *at = i, best_n = n, best_fresh = fresh;
		}
		a->max_free = longest;
	}
	return best;
}

/* The first k pages of free span i of arena s taken; the rest stays a free span. */
static void arena_take(struct rasp_heap *h, struct rasp__segment *s, uint32_t i, uint32_t k)
{
	struct rasp__arena *a = &s->arena;
	uint32_t n = tag_len(a->tag[i]), had;

	if (n > k)
		span_set(a, i + k, n - k, RASP__ARENA_FREE);
	span_set(a, i, k, 0);
	bits_put(a->free_map, i, k, false);
	bits_put(a->old_map, i, k, false);
	had = bits_put(a->committed_map, i, k, true);
	a->free_pages -= k;
	a->free_committed -= had;
	h->arena_free_committed -= had;
	atomic_fetch_add(&h->committed_bytes, (uint64_t)(k - had) << RASP__ARENA_PAGE_SHIFT);
	RASP__UNPOISON((void *)arena_page(s, i), (size_t)k << RASP__ARENA_PAGE_SHIFT);
}

void *rasp__arena_alloc(struct rasp_heap *h, size_t z, int kind, const rasp_type_t *type)
{
	uint32_t k =
	    (uint32_t)((RASP__ARENA_HDR_OFFSET + z + ARENA_PAGE - 1) >> RASP__ARENA_PAGE_SHIFT);
	uint32_t i = 0;
	struct rasp__segment *s;
	struct rasp__header *hdr;

	pthread_mutex_lock(&h->lock);
	s = arena_find(h, k, &i);
	if (!s && (s = arena_new(h)) != NULL)
		i = s->arena.first;
	if (!s) {
		pthread_mutex_unlock(&h->lock);
		return NULL;
	}
	arena_take(h, s, i, k);
	atomic_fetch_add(&h->large_live_bytes, z);
	/* The size word and the header under the lock: a span's first page may hold what an
	 * earlier object wrote there, which a walk (under the lock) must never read as a
	 * header. */
	*(size_t *)arena_page(s, i) = z;
	hdr = (struct rasp__header *)(arena_page(s, i) + RASP__ARENA_HDR_OFFSET);
	hdr->word = (uintptr_t)type | ((uintptr_t)kind << RASP__HDR_KIND_SHIFT);
	rasp__purge_check(h, NULL);
	pthread_mutex_unlock(&h->lock);
	return hdr + 1;
}

struct rasp__header *rasp__arena_block(struct rasp__segment *s, const void *hdr, size_t *z,
				       const char **why)
{
	const struct rasp__arena *a = &s->arena;
	uint32_t i = (uint32_t)(((uintptr_t)hdr - (uintptr_t)s) >> RASP__ARENA_PAGE_SHIFT), j = i;
	uintptr_t b;

	*why = "not the start of an object";
	if (i < a->first)
		return NULL;
	/* The span's first page: the nearest start tag at or before i (every page between a span's
	 * ends has tag 0). At most i - first steps, only for an aligned object's own header or a
	 * bad pointer. */
	while (!(a->tag[j] & RASP__ARENA_START))
		if (j-- == a->first)
			return NULL;
	if (a->tag[j] & RASP__ARENA_FREE) {
		*why = "double free (or a pointer inside a free block)";
		return NULL;
	}
	b = arena_page(s, j) + RASP__ARENA_HDR_OFFSET;
	if ((uintptr_t)hdr < b)
		return NULL;
	*z = *(const size_t *)arena_page(s, j);
	return (struct rasp__header *)b;
}

int rasp__arena_free(struct rasp_heap *h, struct rasp__segment *s, struct rasp__header *hdr)
{
	struct rasp__arena *a = &s->arena;
	uint32_t i = (uint32_t)(((uintptr_t)hdr - (uintptr_t)s) >> RASP__ARENA_PAGE_SHIFT);
	uint32_t k, start, n, j, had;

	pthread_mutex_lock(&h->lock);
	/* Checked again under the lock: two threads freeing one object at once both passed the
	 * checks without it; the second finds the span free (or merged away) here. */
	if (!(a->tag[i] & RASP__ARENA_START) || (a->tag[i] & RASP__ARENA_FREE)) {
		pthread_mutex_unlock(&h->lock);
		return -EINVAL;
	}
	k = tag_len(a->tag[i]);
	atomic_fetch_sub(&h->large_live_bytes, *(size_t *)arena_page(s, i));
	start = i;
	n = k;
	/* Merged with free neighbours: the tags that end up inside the merged span cleared. */
	if (i > a->first && (a->tag[i - 1] & RASP__ARENA_FREE)) {
		uint32_t l = tag_len(a->tag[i - 1]);

		a->tag[i - 1] = 0;
		a->tag[i] = 0;
		start = i - l;
		n += l;
	}
	j = i + k;
	if (j < RASP__ARENA_PAGES && (a->tag[j] & RASP__ARENA_FREE)) {
		n += tag_len(a->tag[j]);
		a->tag[j] = 0;
		a->tag[j - 1] = 0;
	}
	span_set(a, start, n, RASP__ARENA_FREE);
	bits_put(a->free_map, i, k, true);
	had = k; /* a live span is committed whole: taken so, never purged while live */
	a->free_pages += k;
	a->free_committed += had;
	h->arena_free_committed += had;
	if (n > a->max_free)
		a->max_free = n;
	RASP__POISON((void *)arena_page(s, i), (size_t)k << RASP__ARENA_PAGE_SHIFT);
	rasp__purge_check(h, NULL);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* A run of free committed pages purged per system call (internal.h says what a tick does). */
bool rasp__arena_tick(struct rasp_heap *h, bool all)
{
	uint64_t bound = all ? 0 : rasp__arena_bound(h);
	struct rasp__segment *s, *sn;

	for (s = h->arenas; s; s = sn) {
		struct rasp__arena *a = &s->arena;

		sn = s->next;
		for (uint32_t w = 0; w < RASP__ARENA_WORDS && h->arena_free_committed > bound;
		     w++) {
			uint64_t cand = a->free_map[w] & a->committed_map[w] &
					(all ? ALL_PAGES : a->old_map[w]);

			while (cand && h->arena_free_committed > bound) {
				uint32_t b = (uint32_t)__builtin_ctzll(cand);
				uint64_t rest = ~(cand >> b);
				uint32_t k = rest ? (uint32_t)__builtin_ctzll(rest) : 64 - b;

				rasp__os_purge((void *)arena_page(s, w * 64 + b),
					       (size_t)k << RASP__ARENA_PAGE_SHIFT);
				a->committed_map[w] &= ~bits_mask(b, k);
				cand &= ~bits_mask(b, k);
				a->free_committed -= k;
				h->arena_free_committed -= k;
				atomic_fetch_sub(&h->committed_bytes,
						 (uint64_t)k << RASP__ARENA_PAGE_SHIFT);
				atomic_fetch_add(&h->purged_bytes,
						 (uint64_t)k << RASP__ARENA_PAGE_SHIFT);
			}
		}
		if (a->free_pages == RASP__ARENA_PAGES - a->first && !a->free_committed) {
			rasp__mapping_unlink(&h->arenas, s);
			atomic_fetch_sub(&h->committed_bytes,
					 (uint64_t)a->first << RASP__ARENA_PAGE_SHIFT);
			rasp__mapping_unmap(h, s);
			continue;
		}
		memcpy(a->old_map, a->free_map, RASP__ARENA_WORDS * sizeof(uint64_t));
	}
	return h->arena_free_committed > bound;
}

int rasp__arenas_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg)
{
	struct rasp__segment *s;
	int rc = 0;

	for (s = h->arenas; s && !rc; s = s->next) {
		struct rasp__arena *a = &s->arena;

		for (uint32_t i = a->first, n; i < RASP__ARENA_PAGES && !rc; i += n) {
			n = a->tag[i] >> RASP__ARENA_LEN_SHIFT;
			if (!n)
				break; /* cannot be: the tags are the heap's own */
			if (!(a->tag[i] & RASP__ARENA_FREE))
				rc = rasp__walk_visit(
				    (struct rasp__header *)(arena_page(s, i) +
							    RASP__ARENA_HDR_OFFSET),
				    *(size_t *)arena_page(s, i), fn, arg);
		}
	}
	return rc;
}

void rasp__arenas_unmap_all(struct rasp_heap *h)
{
	struct rasp__segment *s, *sn;

	for (s = h->arenas; s; s = sn) {
		sn = s->next;
		rasp__mapping_unmap(h, s);
	}
	h->arenas = NULL;
	h->arena_free_committed = 0;
}
