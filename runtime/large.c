/* Large objects past RASP__ARENA_MAX_PAGES: a mapping each, aligned like a segment, its object
 * 80 bytes in. At its free the mapping is kept for a later large object (the large-object
 * cache, at most RASP__LARGE_CACHE_MAX mappings and three times the live large bytes within
 * [RASP__LARGE_CACHE_MIN, RASP__LARGE_CACHE_BYTES]); a cached mapping serves an object of a
 * quarter of its size up to all of it (RASP__LARGE_REUSE), or grows in place or moves for a
 * larger one. The purge ticks (segment.c) purge the tails objects leave and unmap what stays
 * cached. Smaller large objects go to arenas (arena.c). Every function here runs with
 * heap->lock held unless it says otherwise. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "internal.h"

/* A large object's header follows the common prefix of struct rasp__segment; the object
 * starts 80 bytes into its mapping, 16-aligned. */
#define LARGE_HEADER_OFFSET ((size_t)80 - RASP_OBJECT_HEADER_SIZE)

/* Everything a large mapping uses of the header ends before its object's header, which the
 * object's owner writes without the heap lock (large_purged, in the union with free_slots,
 * is the last). */
_Static_assert(offsetof(struct rasp__segment, free_slots) + sizeof(uint64_t) <= LARGE_HEADER_OFFSET,
	       "a large mapping's prefix overlaps its object");

/* The tail of large mapping s past its object, purged (as far as it is not already), and the
 * committed figure with it. */
static void large_tail_purge(struct rasp_heap *h, struct rasp__segment *s)
{
	size_t size = rasp__round_up(LARGE_HEADER_OFFSET + s->large_z, RASP__OS_PAGE);
	size_t tail = s->map_size - size, was = s->large_purged;

	if (tail > was) {
		rasp__os_purge((void *)((uintptr_t)s + size), tail - was);
		s->large_purged = tail;
		atomic_fetch_sub(&h->committed_bytes, tail - was);
		atomic_fetch_add(&h->purged_bytes, tail - was);
	}
}

/* The tail's mark comes off (the object freed, or its tail purged). */
static void large_tail_clear(struct rasp_heap *h, struct rasp__segment *s)
{
	if (s->large_tail) {
		s->large_tail = 0;
		h->large_tails--;
	}
}

/* The mappings of a large-object cache list back to the OS. */
static void large_cache_unmap(struct rasp_heap *h, struct rasp__segment **list)
{
	struct rasp__segment *s, *sn;

	for (s = *list; s; s = sn) {
		sn = s->next;
		h->large_cache_bytes -= s->map_size;
		h->large_cache_n--;
		atomic_fetch_sub(&h->committed_bytes, s->map_size - s->large_purged);
		rasp__mapping_unmap(h, s);
	}
	*list = NULL;
}

/* The large-object cache's mappings back to the OS. */
static void large_cache_drop(struct rasp_heap *h)
{
	large_cache_unmap(h, &h->large_cache);
	large_cache_unmap(h, &h->large_cache_old);
}

/* s, in cache list *list, out of the cache. */
static void large_cache_unlink(struct rasp_heap *h, struct rasp__segment **list,
			       struct rasp__segment *s)
{
	rasp__mapping_unlink(list, s);
	h->large_cache_bytes -= s->map_size;
	h->large_cache_n--;
}

/* Cached mapping s (in list *list), smaller than `size`, out of the cache and grown in place to
 * `size` bytes (where the addresses past it are free: rasp__mapping_reserve leaves up to a
 * segment's worth after each mapping, as long as nothing else is mapped there): its resident pages
 * are the head of the next object, and only the rest faults in. NULL if it cannot grow (s still
 * cached, as it was). */
static struct rasp__segment *large_grow(struct rasp_heap *h, struct rasp__segment **list,
					struct rasp__segment *s, size_t size)
{
	size_t have = s->map_size, was = s->map_size - s->large_purged;

	uintptr_t to;

	RASP__UNPOISON((void *)s, have);
	if (rasp__os_resize(s, have, size) == 0) {
		large_cache_unlink(h, list, s);
	} else if ((to = rasp__mapping_reserve(size)) != 0) {
		/* The addresses past it are taken (the kernel places each new mapping just below
		 * the last): moved whole to a fresh aligned range, its resident pages with it, so
		 * only the new tail faults in, as growing in place would. 521 of 899 growths
		 * were refused on 8 live buffers of 85 KB..16 MB (docs/performance.md). */
		large_cache_unlink(h, list, s);
		rasp__mapping_mark(s, false);
		if (rasp__os_move(s, have, size, (void *)to) != 0) {
			rasp__mapping_mark(s, true);
			rasp__mapping_link(list, s);
			h->large_cache_bytes += have;
			h->large_cache_n++;
			rasp__os_unmap((void *)to, size);
			RASP__POISON((void *)(rasp__large_header(s) + 1),
				     have - LARGE_HEADER_OFFSET - sizeof(struct rasp__header));
			return NULL;
		}
		s = (struct rasp__segment *)to;
		rasp__mapping_mark(s, true);
	} else {
		RASP__POISON((void *)(rasp__large_header(s) + 1),
			     have - LARGE_HEADER_OFFSET - sizeof(struct rasp__header));
		return NULL;
	}
	atomic_fetch_add(&h->reserved_bytes, size - have);
	atomic_fetch_add(&h->committed_bytes, size - was);
	s->map_size = size;
	s->large_purged = 0;
	return s;
}

/* A cached mapping for an object of `size` bytes, out of the cache; NULL if none will do: the
 * smallest of at least `size` and at most RASP__LARGE_REUSE times that, else the largest
 * smaller one, grown (large_grow). Growing lets a freed buffer's resident pages serve a larger
 * object, so the cache holds fewer, larger mappings for the same hit rate: with whole mappings
 * of at most twice the object only, buffers of 100 KB..1 MB replaced at random kept three
 * times the live bytes cached (docs/performance.md, "Large objects"). */
static struct rasp__segment *large_cache_take(struct rasp_heap *h, size_t size)
{
	struct rasp__segment **lists[2] = {&h->large_cache, &h->large_cache_old};
	struct rasp__segment *fit = NULL, *below = NULL;
	int fit_l = 0, below_l = 0;

	for (int l = 0; l < 2; l++)
		for (struct rasp__segment *s = *lists[l]; s; s = s->next) {
			if (s->map_size < size) {
				if (!below || s->map_size > below->map_size)
					below = s, below_l = l;
			} else if (!fit || s->map_size < fit->map_size) {
				fit = s, fit_l = l;
			}
		}
	if (fit && fit->map_size / RASP__LARGE_REUSE <= size) {
		large_cache_unlink(h, lists[fit_l], fit);
		return fit;
	}
	return below ? large_grow(h, lists[below_l], below, size) : NULL;
}

/* A cached mapping s taken for an object of `size` bytes (page-rounded, its header included):
 * a tail past 1/8 of the mapping is marked for the purge ticks (large_tail); an object that
 * reaches into what an earlier one left purged counts those bytes committed again. */
static void large_fit(struct rasp_heap *h, struct rasp__segment *s, size_t size)
{
	size_t tail = s->map_size - size;

	if (tail > s->map_size / 8 && tail > s->large_purged) {
		s->large_tail = 1;
		h->large_tails++;
	} else if (s->large_purged > tail) {
		atomic_fetch_add(&h->committed_bytes, s->large_purged - tail);
		s->large_purged = tail;
	}
}

void *rasp__large_alloc(struct rasp_heap *h, size_t z, int kind, const rasp_type_t *type)
{
	size_t size = LARGE_HEADER_OFFSET + z;
	struct rasp__segment *s;
	struct rasp__header *hdr;

	if (size < z)
		return NULL;
	if (z <= h->arena_max_z)
		return rasp__arena_alloc(h, z, kind, type);
	size = rasp__round_up(size, RASP__OS_PAGE);
	pthread_mutex_lock(&h->lock);
	s = large_cache_take(h, size);
	if (s) {
		RASP__UNPOISON((void *)s, s->map_size);
		large_fit(h, s, size);
	} else {
		s = rasp__mapping_new(h, size, RASP__SEG_LARGE);
		if (s)
			atomic_fetch_add(&h->committed_bytes, size);
	}
	hdr = NULL;
	if (s) {
		s->large_z = z; /* before a tick can read it */
		rasp__mapping_link(&h->large, s);
		atomic_fetch_add(&h->large_live_bytes, z);
		hdr = (struct rasp__header *)((uintptr_t)s + LARGE_HEADER_OFFSET);
		hdr->word = (uintptr_t)type | ((uintptr_t)kind << RASP__HDR_KIND_SHIFT);
	}
	rasp__purge_check(h, NULL);
	pthread_mutex_unlock(&h->lock);
	return hdr ? hdr + 1 : NULL;
}

struct rasp__header *rasp__large_header(struct rasp__segment *s)
{
	return (struct rasp__header *)((uintptr_t)s + LARGE_HEADER_OFFSET);
}

/* The large-object cache's bound in bytes now (RASP__LARGE_CACHE_BYTES). */
static uint64_t large_cache_bound(struct rasp_heap *h)
{
	uint64_t b = 3 * atomic_load_explicit(&h->large_live_bytes, memory_order_relaxed);

	return b < RASP__LARGE_CACHE_MIN     ? RASP__LARGE_CACHE_MIN
	       : b > RASP__LARGE_CACHE_BYTES ? RASP__LARGE_CACHE_BYTES
					     : b;
}

void rasp__large_free(struct rasp_heap *h, struct rasp__segment *s)
{
	size_t z = s->large_z;

	pthread_mutex_lock(&h->lock);
	rasp__mapping_unlink(&h->large, s);
	large_tail_clear(h, s);
	atomic_fetch_sub(&h->large_live_bytes, z);
	/* Kept for the next large object of about its size (a program that allocates and frees
	 * large buffers in a loop would otherwise pay three system calls and the page faults of a
	 * fresh mapping each time), within the cache's bounds; its header keeps the free flag, so
	 * a second free of the object is still refused. Under ASan the mapping is poisoned. */
	if (h->large_cache_n < RASP__LARGE_CACHE_MAX &&
	    h->large_cache_bytes + s->map_size <= large_cache_bound(h)) {
		rasp__mapping_link(&h->large_cache, s);
		h->large_cache_bytes += s->map_size;
		h->large_cache_n++;
		RASP__POISON((void *)(rasp__large_header(s) + 1),
			     s->map_size - LARGE_HEADER_OFFSET - sizeof(struct rasp__header));
	} else {
		atomic_fetch_sub(&h->committed_bytes, s->map_size - s->large_purged);
		rasp__mapping_unmap(h, s);
	}
	rasp__purge_check(h, NULL);
	pthread_mutex_unlock(&h->lock);
}

void rasp__large_tick(struct rasp_heap *h)
{
	struct rasp__segment *s;

	/* Live large objects' tails marked since before the last tick are purged. */
	for (s = h->large; s && h->large_tails; s = s->next) {
		if (s->large_tail == 1) {
			s->large_tail = 2;
		} else if (s->large_tail == 2) {
			large_tail_purge(h, s);
			large_tail_clear(h, s);
		}
	}
	/* Large mappings cached at the last tick and not reused since go back; the rest wait. */
	large_cache_unmap(h, &h->large_cache_old);
	h->large_cache_old = h->large_cache;
	h->large_cache = NULL;
}

void rasp__large_trim(struct rasp_heap *h)
{
	large_cache_drop(h);
	for (struct rasp__segment *s = h->large; s && h->large_tails; s = s->next)
		if (s->large_tail) {
			large_tail_purge(h, s);
			large_tail_clear(h, s);
		}
}

int rasp__large_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg)
{
	struct rasp__segment *s;
	int rc = 0;

	for (s = h->large; s && !rc; s = s->next) {
		struct rasp__header *hdr = rasp__large_header(s);

		rc = rasp__walk_visit(hdr, s->large_z, fn, arg);
	}
	return rc;
}

void rasp__large_unmap_all(struct rasp_heap *h)
{
	struct rasp__segment *s, *sn;

	for (s = h->large; s; s = sn) {
		sn = s->next;
		rasp__mapping_unmap(h, s);
	}
	h->large = NULL;
	large_cache_drop(h);
}
