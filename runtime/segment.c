/* Segments and large objects: the memory of a heap, mapped from the OS (os.c) aligned to
 * 4 MiB so that the segment of any object is its address masked. A segment's 64 slots of
 * 64 KiB are handed out as pages (runs of 1..16 slots, aligned to their length) and come back
 * when a page empties. The purge policy: a slot that comes back stays committed while the heap
 * keeps at most RASP__RETAIN_SLOTS (4 MiB) of empty committed slots, so a program whose live
 * set breathes reuses memory it already faulted in. Past that, a slot is purged (MADV_DONTNEED:
 * it leaves the resident set, the mapping stays) once it has stayed empty from one purge tick
 * to the next, and a segment whose slots all stayed empty so is unmapped unless it is the
 * heap's only segment with room. Ticks are RASP__PURGE_DELAY_NS apart, run at page operations
 * while anything waits (purge_check), so memory goes back between one and two delays after it
 * empties, if the heap is still in use; a program that frees a burst and reuses it within the
 * delay faults nothing in again. rasp_heap_collect purges every empty slot and unmaps every
 * empty segment at once. A large object (object size >= 85000 bytes) never shares a segment
 * with small ones: up to RASP__ARENA_MAX_PAGES pages it is a span of an arena (struct
 * rasp__arena: free spans split and merged, purged past the live large bytes once they stay
 * free from one tick to the next); past that it has a mapping of its own, kept at its free
 * for a later large object (the large-object cache, bounded by the live large bytes:
 * RASP__LARGE_CACHE_BYTES) or returned. Every function here runs with heap->lock held unless
 * it says otherwise. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define PAGE_SIZE_ASSUMED ((size_t)4096)
#define ALL_SLOTS	  (~UINT64_C(0))
/* A large object's header follows the common prefix of struct rasp__segment; the object
 * starts 80 bytes into its mapping, 16-aligned. */
#define LARGE_HEADER_OFFSET ((size_t)80 - RASP_OBJECT_HEADER_SIZE)

/* Everything a large mapping uses of the header ends before its object's header, which the
 * object's owner writes without the heap lock (large_purged, in the union with free_slots,
 * is the last). */
_Static_assert(offsetof(struct rasp__segment, free_slots) + sizeof(uint64_t) <= LARGE_HEADER_OFFSET,
	       "a large mapping's prefix overlaps its object");

_Atomic uint8_t rasp__segment_map[RASP__MAP_SIZE];

struct rasp__page rasp__no_page = {.slot = UINT8_MAX};

/* Written under the owning heap's lock; heaps never share a byte (a mapping's units are its
 * own). Set once the header is written (an arena's maps and tags too: arena_new), cleared
 * before the unmap: the first unit RASP__MAP_START, an arena's unit k RASP__MAP_START + k
 * (internal.h). A large object's mapping marks its first unit only, whatever its size (a
 * mapping grown in place was never checked against the map's end: reserve_aligned). */
static void map_mark(const struct rasp__segment *s, bool on)
{
	uintptr_t i = (uintptr_t)s >> RASP__SEGMENT_SHIFT;
	uintptr_t n = s->kind == RASP__SEG_ARENA ? RASP__ARENA_UNITS : 1;

	for (uintptr_t k = n; k-- > 0;) /* the first unit last: mapped once all are */
		atomic_store_explicit(&rasp__segment_map[i + k],
				      on ? (uint8_t)(RASP__MAP_START + k) : 0,
				      memory_order_relaxed);
}

static size_t round_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static uint64_t span_mask(unsigned first, unsigned span)
{
	return (span == 64 ? ALL_SLOTS : ((UINT64_C(1) << span) - 1)) << first;
}

/* Whether small-object segments may be backed by transparent huge pages: RASP_THP=1 leaves
 * them to the system's policy; unset or 0 (the default) advises against huge pages. Where the
 * policy is `always` (the kernel's own default), a segment's first touch in each 2 MiB faulted
 * in the whole 2 MiB, and pages formatted as they are reached (page.c) no longer kept the
 * resident set to what is used: peak RSS `mixed` 15.1 against 13.5 MiB, `prodcons` 4.6
 * against 3.3 (docs/performance.md, "Transparent huge pages"). Where it is `madvise` or
 * `never` and no huge-page size is enabled `always` (6.8+ kernels), the advice changes nothing.
 * Large objects keep the system's policy, as glibc's mapped chunks do: their pages are the
 * program's, touched as it uses them. Read by rasp_heap_create, for the heap's life; another value
 * is reported once and taken as 0. */
bool rasp__segment_thp_allowed(void)
{
	static atomic_bool reported;
	const char *v = getenv("RASP_THP");

	if (!v || strcmp(v, "0") == 0)
		return false;
	if (strcmp(v, "1") == 0)
		return true;
	if (!atomic_exchange(&reported, true))
		fprintf(stderr,
			"rasp: RASP_THP=%s is not 0 or 1; small-object segments are advised "
			"against transparent huge pages (0)\n",
			v);
	return false;
}

/* Maps `size` bytes aligned to RASP__SEGMENT_SIZE: over-map by one segment, trim both ends
 * (three system calls, once per segment or large object; a small segment's advice makes four).
 * reserve_aligned maps them; map_aligned also writes the header and counts them. */
static uintptr_t reserve_aligned(size_t size)
{
	size_t total = size + RASP__SEGMENT_SIZE;
	uintptr_t raw, a, lead, trail;

	if (total < size)
		return 0;
	raw = (uintptr_t)rasp__os_map(total);
	if (!raw)
		return 0;
	a = round_up(raw, RASP__SEGMENT_SIZE);
	lead = a - raw;
	trail = total - lead - size;
	if (lead)
		rasp__os_unmap((void *)raw, lead);
	if (trail)
		rasp__os_unmap((void *)(a + size), trail);
	/* Past the map (Linux maps above 47 bits only when asked to): its objects' frees would
	 * be refused. */
	if (((a + size - 1) >> RASP__SEGMENT_SHIFT) >= RASP__MAP_SIZE) {
		rasp__os_unmap((void *)a, size);
		return 0;
	}
	return a;
}

static struct rasp__segment *map_aligned(struct rasp_heap *h, size_t size, int kind)
{
	uintptr_t a = reserve_aligned(size);
	struct rasp__segment *s;

	if (!a)
		return NULL;
	if (kind != RASP__SEG_LARGE && !h->thp)
		rasp__os_no_huge((void *)a, size);
	s = (struct rasp__segment *)a;
	s->magic = RASP__SEGMENT_MAGIC;
	s->heap = h;
	s->small_heap = kind == RASP__SEG_SMALL ? h : RASP__NOT_SMALL;
	s->kind = kind;
	s->map_size = size;
	s->prev = NULL;
	if (kind == RASP__SEG_LARGE) {
		s->large_purged = 0;
		s->large_tail = 0;
	}
	if (kind != RASP__SEG_ARENA) /* arena_new marks it once its header is whole */
		map_mark(s, true);
	atomic_fetch_add(&h->regions_n, 1);
	atomic_fetch_add(&h->reserved_bytes, size);
	return s;
}

static void link_seg(struct rasp__segment **head, struct rasp__segment *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head)
		(*head)->prev = s;
	*head = s;
}

static void unlink_seg(struct rasp__segment **head, struct rasp__segment *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

/* The small segments' list keeps those with free slots before the full ones: a segment
 * that fills goes to the tail, one that gets a slot back from full to the head. Each move is
 * O(1), and a page search never walks past the first full segment (before this, every new
 * page walked every segment twice: ~5,000 instructions a page at 12 segments). */
static void seg_unlink(struct rasp_heap *h, struct rasp__segment *s)
{
	if (h->segments_tail == s)
		h->segments_tail = s->prev;
	unlink_seg(&h->segments, s);
}

static void seg_push_head(struct rasp_heap *h, struct rasp__segment *s)
{
	link_seg(&h->segments, s);
	if (!h->segments_tail)
		h->segments_tail = s;
}

static void seg_push_tail(struct rasp_heap *h, struct rasp__segment *s)
{
	s->next = NULL;
	s->prev = h->segments_tail;
	if (h->segments_tail)
		h->segments_tail->next = s;
	else
		h->segments = s;
	h->segments_tail = s;
}

static void unmap_seg(struct rasp_heap *h, struct rasp__segment *s)
{
	atomic_fetch_sub(&h->regions_n, 1);
	atomic_fetch_sub(&h->reserved_bytes, s->map_size);
	map_mark(s, false);
	s->magic = 0;
	RASP__UNPOISON((void *)s, s->map_size);
	rasp__os_unmap(s, s->map_size);
}

static size_t meta_size(void)
{
	return round_up(sizeof(struct rasp__segment), PAGE_SIZE_ASSUMED);
}

static void purge_check(struct rasp_heap *h, struct rasp__segment *freed);

static struct rasp__segment *segment_new(struct rasp_heap *h)
{
	struct rasp__segment *s = map_aligned(h, RASP__SEGMENT_SIZE, RASP__SEG_SMALL);

	if (!s)
		return NULL;
	s->free_slots = ALL_SLOTS;
	s->committed_slots = 0;
	s->purge_old = 0;
	s->slot0_start = (uintptr_t)s + meta_size();
	s->formatted_slots = 0;
	for (unsigned i = 0; i < RASP__SLOTS; i++)
		s->slot_page[i] = &rasp__no_page;
	memset(s->pages, 0, sizeof(s->pages));
	seg_push_head(h, s);
	atomic_fetch_add(&h->committed_bytes, meta_size());
	return s;
}

/* The slots of s that the formatted page records cover (see "Released pages kept formatted"
 * below). */
static uint64_t formatted_cover(const struct rasp__segment *s)
{
	uint64_t cover = 0;

	for (uint64_t f = s->formatted_slots; f; f &= f - 1) {
		const struct rasp__page *pg = &s->pages[__builtin_ctzll(f)];

		cover |= span_mask(pg->slot, pg->span);
	}
	return cover;
}

/* First aligned run of `span` free slots of s that pass `pass` may take, -1 if none: 0,
 * committed slots no formatted page record covers; 1, committed slots (a record there is
 * forgotten: formatting again touches no new memory); 2, any. Taking another class's record
 * while a bare committed slot was free made a class of `bulk` format its pages anew at nearly
 * every burst (276859 formattings of 4 KiB in 200 bursts, callgrind). */
static int find_run(const struct rasp__segment *s, unsigned span, int pass)
{
	uint64_t avail = s->free_slots;

	if (pass < 2)
		avail &= s->committed_slots;
	if (pass == 0 && s->formatted_slots)
		avail &= ~formatted_cover(s);

	if (span == 1)
		return avail ? __builtin_ctzll(avail) : -1;
	for (unsigned i = 0; i + span <= RASP__SLOTS; i += span)
		if ((avail & span_mask(i, span)) == span_mask(i, span))
			return (int)i;
	return -1;
}

static size_t slot_bytes(const struct rasp__segment *s, unsigned first, unsigned span)
{
	uintptr_t start = first ? (uintptr_t)s + first * RASP__SLOT_SIZE : s->slot0_start;

	return (uintptr_t)s + (first + span) * RASP__SLOT_SIZE - start;
}

/* ---- Released pages kept formatted ----
 * A page released empty (rasp__segment_page_free) has every block it ever formatted free on
 * its local list, in memory nothing writes while its slots are free: a later page of the same
 * class at those slots can take the list as it is. Taking one whole, where a page new to its
 * class is formatted 4 KiB at a refill (RASP__EXTEND_BYTES, so that memory is touched as it
 * is used), saves `bulk` (bursts of 100000 objects allocated, then freed, whose pages empty
 * and go) 16 refills and the formatting of every block a page, each burst. The record stays
 * valid while its slots stay free and committed: a page taking any of them for another class,
 * a purge and an unmap forget it (formatted_forget). No memory is kept for it that the purge
 * policy would not keep anyway: it is an empty committed slot like any other. */

static void formatted_unlink(struct rasp_heap *h, struct rasp__segment *s, struct rasp__page *pg)
{
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		h->formatted[rasp__page_cls(pg)] = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	pg->next = pg->prev = NULL;
	s->formatted_slots &= ~(UINT64_C(1) << pg->slot);
}

/* Every formatted page record of s with a slot in mask (not 0) is forgotten. Only records
 * starting from 15 slots before mask's first to its last can hold one (a page spans at most
 * 16 slots, sizeclass.c's span_for): a walk of all of them was 0.7% of `bulk`'s
 * instructions. */
static void formatted_forget(struct rasp_heap *h, struct rasp__segment *s, uint64_t mask)
{
	unsigned lo = (unsigned)__builtin_ctzll(mask), hi = 63u - (unsigned)__builtin_clzll(mask);

	lo = lo > 15 ? lo - 15 : 0;
	for (uint64_t f = s->formatted_slots & span_mask(lo, hi - lo + 1); f; f &= f - 1) {
		struct rasp__page *pg = &s->pages[__builtin_ctzll(f)];

		if (span_mask(pg->slot, pg->span) & mask) {
			formatted_unlink(h, s, pg);
			/* Its memory is for any page now (ASan builds: kept poisoned till here). */
			RASP__UNPOISON((void *)pg->start, pg->bytes);
		}
	}
}

/* pg, released (its list whole: used 0, every formatted block on it), kept for its class. */
static bool formatted_keep(struct rasp_heap *h, struct rasp__segment *s, struct rasp__page *pg)
{
	if (!pg->formatted || atomic_load_explicit(&pg->thread_free, memory_order_relaxed) ||
	    rasp__relaxed_load32(&pg->used) || (uint64_t)pg->local_n * pg->bsize != pg->formatted)
		return false; /* cannot be (page.c releases empty pages only): formatted again */
	pg->prev = NULL;
	pg->next = h->formatted[rasp__page_cls(pg)];
	if (pg->next)
		pg->next->prev = pg;
	h->formatted[rasp__page_cls(pg)] = pg;
	s->formatted_slots |= UINT64_C(1) << pg->slot;
	return true;
}

struct rasp__page *rasp__segment_page_new(struct rasp_heap *h, unsigned cls)
{
	unsigned span = rasp__class_span[cls];
	struct rasp__segment *s = NULL;
	struct rasp__page *pg;
	struct rasp__header *kept_free = NULL, *kept_tail = NULL;
	uint32_t kept_n = 0, kept_formatted = 0;
	uint64_t mask, fresh;
	int i = -1;

	/* A released page of the class with its blocks formatted first, then committed empty
	 * slots (no page faults: first those no such page covers), then any room, then a new
	 * segment. */
	if ((pg = h->formatted[cls])) {
		s = rasp__segment_of(pg);
		i = pg->slot;
		formatted_unlink(h, s, pg);
		kept_free = pg->local_free;
		kept_tail = pg->local_tail;
		kept_n = pg->local_n;
		kept_formatted = pg->formatted;
	}
	for (int pass = 0; pass < 3 && i < 0; pass++)
		for (s = h->segments; s && s->free_slots; s = s->next)
			if ((i = find_run(s, span, pass)) >= 0)
				break;
	if (i < 0) {
		s = segment_new(h);
		if (!s)
			return NULL;
		i = find_run(s, span, 2);
	}
	mask = span_mask((unsigned)i, span);
	if (!kept_formatted) /* (records never overlap: none but the taken one is on them) */
		formatted_forget(h, s, mask); /* records these slots' memory no longer matches */
	fresh = mask & ~s->committed_slots;
	s->free_slots &= ~mask;
	s->purge_old &= ~mask; /* used again: not purged at the next tick */
	h->free_committed_slots -= (uint64_t)__builtin_popcountll(mask & s->committed_slots);
	s->committed_slots |= mask;
	for (uint64_t m = fresh; m; m &= m - 1)
		atomic_fetch_add(&h->committed_bytes,
				 slot_bytes(s, (unsigned)__builtin_ctzll(m), 1));
	if (!s->free_slots) {
		seg_unlink(h, s);
		seg_push_tail(h, s);
	}
	pg = &s->pages[i];
	memset(pg, 0, sizeof(*pg));
	pg->bsize = (uint32_t)rasp__class_size[cls];
	pg->hot_off = (uint16_t)(cls * sizeof(struct rasp__hot));
	pg->div = rasp__class_div[cls];
	pg->span = (uint8_t)span;
	pg->slot = (uint8_t)i;
	pg->start = i ? (uintptr_t)s + (size_t)i * RASP__SLOT_SIZE : s->slot0_start;
	pg->bytes = slot_bytes(s, (unsigned)i, span) / pg->bsize * pg->bsize;
	if (kept_formatted) {
		pg->local_free = kept_free;
		pg->local_tail = kept_tail;
		pg->local_n = kept_n;
		pg->formatted = kept_formatted;
	}
	for (unsigned j = 0; j < span; j++)
		s->slot_page[i + j] = pg;
	atomic_fetch_add(&h->pages_n, 1);
	if (h->purge_wait) /* after taking the page: committed slots were reused first */
		purge_check(h, NULL);
	return pg;
}

static void purge_slots(struct rasp_heap *h, struct rasp__segment *s, uint64_t mask)
{
	if (mask)
		formatted_forget(h, s, mask); /* their memory reads back as zeros */
	for (unsigned j = 0; j < RASP__SLOTS; j++) {
		size_t n;
		uintptr_t a;

		if (!(mask & (UINT64_C(1) << j)))
			continue;
		a = j ? (uintptr_t)s + j * RASP__SLOT_SIZE : s->slot0_start;
		n = slot_bytes(s, j, 1);
		rasp__os_purge((void *)a, n);
		atomic_fetch_sub(&h->committed_bytes, n);
		atomic_fetch_add(&h->purged_bytes, n);
	}
	s->committed_slots &= ~mask;
	h->free_committed_slots -= (uint64_t)__builtin_popcountll(mask);
}

bool rasp__segment_pinned(struct rasp_heap *h, struct rasp__segment *s)
{
	/* Contexts of exited threads (spare) pushed their last batch before leaving. */
	for (struct rasp_context *c = h->contexts; c; c = c->next)
		if (atomic_load_explicit(&c->pin, memory_order_acquire) == s)
			return true;
	return atomic_load_explicit(&s->remote_pins, memory_order_acquire) != 0;
}

/* An empty segment goes back to the OS unless no other segment has room (then the next page
 * would map a new one at once). Returns 1 if it was unmapped, -1 if it stays for now (pinned:
 * the next tick or collect tries again), 0 if it stays for good (not empty, or the only one
 * with room). */
static int maybe_unmap(struct rasp_heap *h, struct rasp__segment *s, bool always)
{
	struct rasp__segment *o;

	if (s->free_slots != ALL_SLOTS)
		return 0;
	/* A cross-thread free still reading one of its page records (page.c,
	 * rasp__page_push_begin): the segment stays mapped, empty. */
	if (rasp__segment_pinned(h, s))
		return -1;
	if (!always) {
		/* Segments with room come first: the first one other than s is the candidate. */
		o = h->segments == s ? s->next : h->segments;
		if (!o || !o->free_slots)
			return 0;
	}
	h->free_committed_slots -= (uint64_t)__builtin_popcountll(s->committed_slots);
	for (uint64_t m = s->committed_slots; m; m &= m - 1)
		atomic_fetch_sub(&h->committed_bytes,
				 slot_bytes(s, (unsigned)__builtin_ctzll(m), 1));
	atomic_fetch_sub(&h->committed_bytes, meta_size());
	formatted_forget(h, s, ALL_SLOTS);
	seg_unlink(h, s);
	unmap_seg(h, s);
	return 1;
}

/* The tail of large mapping s past its object, purged (as far as it is not already), and the
 * committed figure with it. */
static void large_tail_purge(struct rasp_heap *h, struct rasp__segment *s)
{
	size_t size = round_up(LARGE_HEADER_OFFSET + s->large_z, PAGE_SIZE_ASSUMED);
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
		unmap_seg(h, s);
	}
	*list = NULL;
}

/* The large-object cache's mappings back to the OS. */
static void large_cache_drop(struct rasp_heap *h)
{
	large_cache_unmap(h, &h->large_cache);
	large_cache_unmap(h, &h->large_cache_old);
}

static bool arena_tick(struct rasp_heap *h, bool all);
static uint64_t arena_bound(struct rasp_heap *h);

/* A purge tick: every slot that was empty at the last tick and has not been used since is
 * purged while the heap holds more than RASP__RETAIN_SLOTS empty committed slots, and every
 * segment that was all empty then and still is goes back to the OS (maybe_unmap). What is
 * empty now is marked for the next. Returns whether anything is left for a next tick. One walk
 * of the segments, at most once a delay. */
static bool purge_tick(struct rasp_heap *h)
{
	struct rasp__segment *s, *sn;
	bool again = false;

	for (s = h->segments; s; s = sn) {
		uint64_t old = s->purge_old & s->free_slots;
		uint64_t cand = old & s->committed_slots;

		sn = s->next;
		if (s->free_slots == ALL_SLOTS) {
			int r = old == ALL_SLOTS ? maybe_unmap(h, s, false) : -1;

			if (r > 0)
				continue;
			again |= r < 0;
		}
		for (; cand && h->free_committed_slots > RASP__RETAIN_SLOTS; cand &= cand - 1)
			purge_slots(h, s, cand & -cand);
		s->purge_old = s->free_slots;
	}
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
	again |= arena_tick(h, false);
	return again || h->free_committed_slots > RASP__RETAIN_SLOTS || h->large_cache_n ||
	       h->large_tails;
}

/* Notes that something may wait for a purge tick (empty committed slots past the retained
 * ones, or `freed`, a segment that has just emptied; NULL: none), and runs the tick if one is
 * due: ticks are at least RASP__PURGE_DELAY_NS apart. A tick marks what is empty and purges
 * what was marked at the last and stayed empty since. */
static void purge_check(struct rasp_heap *h, struct rasp__segment *freed)
{
	uint64_t now;

	if (!h->purge_wait && h->free_committed_slots <= RASP__RETAIN_SLOTS &&
	    (!freed || freed->free_slots != ALL_SLOTS) && !h->large_cache_n && !h->large_tails &&
	    h->arena_free_committed <= arena_bound(h))
		return;
	h->purge_wait = true;
	now = rasp__os_coarse_ns();
	if (now < h->purge_tick)
		return;
	h->purge_wait = purge_tick(h);
	h->purge_tick = now + RASP__PURGE_DELAY_NS;
}

void rasp__segment_page_free(struct rasp_heap *h, struct rasp__page *pg)
{
	struct rasp__segment *s = rasp__segment_of(pg);
	uint64_t mask = span_mask(pg->slot, pg->span);

	for (unsigned j = 0; j < pg->span; j++)
		s->slot_page[pg->slot + j] = &rasp__no_page;
	if (!s->free_slots) {
		seg_unlink(h, s);
		seg_push_head(h, s);
	}
	s->free_slots |= mask;
	h->free_committed_slots += (uint64_t)__builtin_popcountll(mask);
	atomic_fetch_sub(&h->pages_n, 1);
	/* Kept, its free blocks stay poisoned (ASan builds) until it is forgotten, so that a
	 * write through a pointer freed long ago is caught, not handed out in a list. */
	if (!formatted_keep(h, s, pg))
		RASP__UNPOISON((void *)pg->start, pg->bytes);
	pg->bsize = 0;
	purge_check(h, s);
}

void rasp__segments_trim(struct rasp_heap *h)
{
	struct rasp__segment *s, *sn;

	large_cache_drop(h);
	arena_tick(h, true);
	for (s = h->large; s && h->large_tails; s = s->next)
		if (s->large_tail) {
			large_tail_purge(h, s);
			large_tail_clear(h, s);
		}
	for (s = h->segments; s; s = sn) {
		sn = s->next;
		if (s->free_slots == ALL_SLOTS && maybe_unmap(h, s, true) != 0)
			continue;
		purge_slots(h, s, s->free_slots & s->committed_slots);
	}
}

/* ---- Large-object arenas ------------------------------------------------------------------ */

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
	return (k == 64 ? ALL_SLOTS : ((UINT64_C(1) << k) - 1)) << b;
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

/* Free committed arena pages the heap keeps past two purge ticks: the live large bytes, at most
 * RASP__LARGE_CACHE_BYTES, less what the large-object cache holds (one budget for the two), at
 * least RASP__LARGE_CACHE_MIN. With a budget each, 8 live buffers of 85 KB..16 MB peaked at
 * 126.7 MiB against 119.5 (docs/performance.md, "Large objects in arenas"). */
static uint64_t arena_bound(struct rasp_heap *h)
{
	uint64_t b = atomic_load_explicit(&h->large_live_bytes, memory_order_relaxed);

	b = b > RASP__LARGE_CACHE_BYTES ? RASP__LARGE_CACHE_BYTES : b;
	b = b > h->large_cache_bytes + RASP__LARGE_CACHE_MIN ? b - h->large_cache_bytes
							     : RASP__LARGE_CACHE_MIN;
	return b >> RASP__ARENA_PAGE_SHIFT;
}

static struct rasp__segment *arena_new(struct rasp_heap *h)
{
	struct rasp__segment *s = map_aligned(h, RASP__ARENA_SIZE, RASP__SEG_ARENA);
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
	link_seg(&h->arenas, s);
	atomic_fetch_add(&h->committed_bytes, (uint64_t)first << RASP__ARENA_PAGE_SHIFT);
	RASP__POISON((void *)arena_page(s, first), (size_t)a->free_pages << RASP__ARENA_PAGE_SHIFT);
	map_mark(s, true);
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

static void *arena_alloc(struct rasp_heap *h, size_t z, int kind, const rasp_type_t *type)
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
	 * header (found by review). */
	*(size_t *)arena_page(s, i) = z;
	hdr = (struct rasp__header *)(arena_page(s, i) + RASP__ARENA_HDR_OFFSET);
	hdr->word = (uintptr_t)type | ((uintptr_t)kind << RASP__HDR_KIND_SHIFT);
	purge_check(h, NULL);
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
	purge_check(h, NULL);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* Arenas at a purge tick (all: at rasp_heap_collect): while the heap holds more free
 * committed arena pages than arena_bound, those free since the last tick (all of them) are
 * purged, a run of pages per system call; an arena empty and purged whole goes back to the
 * OS. Returns whether the heap is still over its bound. */
static bool arena_tick(struct rasp_heap *h, bool all)
{
	uint64_t bound = all ? 0 : arena_bound(h);
	struct rasp__segment *s, *sn;

	for (s = h->arenas; s; s = sn) {
		struct rasp__arena *a = &s->arena;

		sn = s->next;
		for (uint32_t w = 0; w < RASP__ARENA_WORDS && h->arena_free_committed > bound;
		     w++) {
			uint64_t cand = a->free_map[w] & a->committed_map[w] &
					(all ? ALL_SLOTS : a->old_map[w]);

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
			unlink_seg(&h->arenas, s);
			atomic_fetch_sub(&h->committed_bytes,
					 (uint64_t)a->first << RASP__ARENA_PAGE_SHIFT);
			unmap_seg(h, s);
			continue;
		}
		memcpy(a->old_map, a->free_map, RASP__ARENA_WORDS * sizeof(uint64_t));
	}
	return h->arena_free_committed > bound;
}

/* ---- Large objects ------------------------------------------------------------------------ */

/* s, in cache list *list, out of the cache. */
static void large_cache_unlink(struct rasp_heap *h, struct rasp__segment **list,
			       struct rasp__segment *s)
{
	unlink_seg(list, s);
	h->large_cache_bytes -= s->map_size;
	h->large_cache_n--;
}

/* Cached mapping s (in list *list), smaller than `size`, out of the cache and grown in place to
 * `size` bytes (where the addresses past it are free: map_aligned leaves up to a segment's
 * worth after each mapping, as long as nothing else is mapped there): its resident pages are
 * the head of the next object, and only the rest faults in. NULL if it cannot grow (s still
 * cached, as it was). */
static struct rasp__segment *large_grow(struct rasp_heap *h, struct rasp__segment **list,
					struct rasp__segment *s, size_t size)
{
	size_t have = s->map_size, was = s->map_size - s->large_purged;

	uintptr_t to;

	RASP__UNPOISON((void *)s, have);
	if (rasp__os_resize(s, have, size) == 0) {
		large_cache_unlink(h, list, s);
	} else if ((to = reserve_aligned(size)) != 0) {
		/* The addresses past it are taken (the kernel places each new mapping just below
		 * the last): moved whole to a fresh aligned range, its resident pages with it, so
		 * only the new tail faults in, as growing in place would. 521 of 899 growths
		 * were refused on 8 live buffers of 85 KB..16 MB (docs/performance.md). */
		large_cache_unlink(h, list, s);
		map_mark(s, false);
		if (rasp__os_move(s, have, size, (void *)to) != 0) {
			map_mark(s, true);
			link_seg(list, s);
			h->large_cache_bytes += have;
			h->large_cache_n++;
			rasp__os_unmap((void *)to, size);
			RASP__POISON((void *)(rasp__large_header(s) + 1),
				     have - LARGE_HEADER_OFFSET - sizeof(struct rasp__header));
			return NULL;
		}
		s = (struct rasp__segment *)to;
		map_mark(s, true);
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
		return arena_alloc(h, z, kind, type);
	size = round_up(size, PAGE_SIZE_ASSUMED);
	pthread_mutex_lock(&h->lock);
	s = large_cache_take(h, size);
	if (s) {
		RASP__UNPOISON((void *)s, s->map_size);
		large_fit(h, s, size);
	} else {
		s = map_aligned(h, size, RASP__SEG_LARGE);
		if (s)
			atomic_fetch_add(&h->committed_bytes, size);
	}
	hdr = NULL;
	if (s) {
		s->large_z = z; /* before a tick can read it */
		link_seg(&h->large, s);
		atomic_fetch_add(&h->large_live_bytes, z);
		hdr = (struct rasp__header *)((uintptr_t)s + LARGE_HEADER_OFFSET);
		hdr->word = (uintptr_t)type | ((uintptr_t)kind << RASP__HDR_KIND_SHIFT);
	}
	purge_check(h, NULL);
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
	unlink_seg(&h->large, s);
	large_tail_clear(h, s);
	atomic_fetch_sub(&h->large_live_bytes, z);
	/* Kept for the next large object of about its size (a program that allocates and frees
	 * large buffers in a loop would otherwise pay three system calls and the page faults of a
	 * fresh mapping each time), within the cache's bounds; its header keeps the free flag, so
	 * a second free of the object is still refused. Under ASan the mapping is poisoned. */
	if (h->large_cache_n < RASP__LARGE_CACHE_MAX &&
	    h->large_cache_bytes + s->map_size <= large_cache_bound(h)) {
		link_seg(&h->large_cache, s);
		h->large_cache_bytes += s->map_size;
		h->large_cache_n++;
		RASP__POISON((void *)(rasp__large_header(s) + 1),
			     s->map_size - LARGE_HEADER_OFFSET - sizeof(struct rasp__header));
	} else {
		atomic_fetch_sub(&h->committed_bytes, s->map_size - s->large_purged);
		unmap_seg(h, s);
	}
	purge_check(h, NULL);
	pthread_mutex_unlock(&h->lock);
}

/* ---- Whole-heap operations ---------------------------------------------------------------- */

/* fn for the object whose block header is hdr (resolving an aligned object's own header). */
static int visit(struct rasp__header *hdr, size_t bsize, rasp_walk_fn fn, void *arg)
{
	if (hdr->word & RASP__HDR_FREE)
		return 0;
	if (rasp__hdr_kind(hdr) == RASP__KIND_ALIGNED)
		hdr = (struct rasp__header *)((uintptr_t)hdr + rasp__hdr_aligned_off(hdr));
	return fn(hdr + 1, rasp__hdr_type(hdr), bsize, (int)rasp__hdr_kind(hdr), arg);
}

int rasp__segments_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg)
{
	struct rasp__segment *s;
	int rc = 0;

	for (s = h->segments; s && !rc; s = s->next) {
		for (unsigned i = 0; i < RASP__SLOTS && !rc; i++) {
			struct rasp__page *pg = s->slot_page[i];

			if (pg->slot != i) /* rasp__no_page's slot is none */
				continue;
			for (uint32_t j = 0; j < pg->formatted / pg->bsize && !rc; j++)
				rc = visit(
				    (struct rasp__header *)(pg->start + (size_t)j * pg->bsize),
				    pg->bsize, fn, arg);
		}
	}
	for (s = h->large; s && !rc; s = s->next) {
		struct rasp__header *hdr = rasp__large_header(s);

		rc = visit(hdr, s->large_z, fn, arg);
	}
	for (s = h->arenas; s && !rc; s = s->next) {
		struct rasp__arena *a = &s->arena;

		for (uint32_t i = a->first, n; i < RASP__ARENA_PAGES && !rc; i += n) {
			n = a->tag[i] >> RASP__ARENA_LEN_SHIFT;
			if (!n)
				break; /* cannot be: the tags are the heap's own */
			if (!(a->tag[i] & RASP__ARENA_FREE))
				rc = visit((struct rasp__header *)(arena_page(s, i) +
								   RASP__ARENA_HDR_OFFSET),
					   *(size_t *)arena_page(s, i), fn, arg);
		}
	}
	return rc;
}

uint64_t rasp__segments_used_bytes(struct rasp_heap *h)
{
	uint64_t n = 0;

	for (struct rasp__segment *s = h->segments; s; s = s->next)
		for (unsigned i = 0; i < RASP__SLOTS; i++) {
			struct rasp__page *pg = s->slot_page[i];

			if (pg->slot == i) /* (not rasp__no_page: its slot is none) */
				n += rasp__relaxed_load32(&pg->used) * (uint64_t)pg->bsize;
		}
	return n;
}

void rasp__segments_unmap_all(struct rasp_heap *h)
{
	struct rasp__segment *s, *sn;

	for (s = h->segments; s; s = sn) {
		sn = s->next;
		unmap_seg(h, s);
	}
	for (s = h->large; s; s = sn) {
		sn = s->next;
		unmap_seg(h, s);
	}
	for (s = h->arenas; s; s = sn) {
		sn = s->next;
		unmap_seg(h, s);
	}
	large_cache_drop(h);
	memset(h->formatted, 0, sizeof(h->formatted));
	h->segments = h->segments_tail = h->large = h->arenas = NULL;
	h->arena_free_committed = 0;
}
