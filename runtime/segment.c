/* Small-object segments: 4 MiB mappings (mapping.c) whose 64 slots of 64 KiB are handed out as
 * pages (runs of 1..16 slots, aligned to their length) and come back when a page empties,
 * released pages kept formatted, and the purge policy over all of a heap's memory (its ticks
 * run arena.c's and large.c's parts). Every function here runs with heap->lock held unless it
 * says otherwise.
 *
 * The purge policy: a slot that comes back stays committed while the heap keeps at most
 * RASP__RETAIN_SLOTS (4 MiB) of empty committed slots, so a program whose live set breathes
 * reuses memory it already faulted in. Past that, a slot is purged (MADV_DONTNEED: it leaves
 * the resident set, the mapping stays) once it has stayed empty from one purge tick to the
 * next, and a segment whose slots all stayed empty so is unmapped unless it is the heap's only
 * segment with room. Ticks are RASP__PURGE_DELAY_NS apart, run at page operations while
 * anything waits (rasp__purge_check), so memory goes back between one and two delays after it
 * empties, if the heap is still in use; a program that frees a burst and reuses it within the
 * delay faults nothing in again. The same ticks purge arenas' free pages (arena.c) and large
 * mappings' tails and cache (large.c). rasp_heap_collect purges every empty slot and unmaps
 * every empty segment at once. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ALL_SLOTS (~UINT64_C(0))

struct rasp__page rasp__no_page = {.slot = UINT8_MAX};

static uint64_t span_mask(unsigned first, unsigned span)
{
	return (span == 64 ? ALL_SLOTS : ((UINT64_C(1) << span) - 1)) << first;
}

/* The small segments' list keeps those with free slots before the full ones: a segment
 * that fills goes to the tail, one that gets a slot back from full to the head. Each move is
 * O(1), and a page search never walks past the first full segment (in a list of any order,
 * every new page walks every segment twice: ~5,000 instructions a page at 12 segments). */
static void seg_unlink(struct rasp_heap *h, struct rasp__segment *s)
{
	if (h->segments_tail == s)
		h->segments_tail = s->prev;
	rasp__mapping_unlink(&h->segments, s);
}

static void seg_push_head(struct rasp_heap *h, struct rasp__segment *s)
{
	rasp__mapping_link(&h->segments, s);
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

static size_t meta_size(void)
{
	return rasp__round_up(sizeof(struct rasp__segment), RASP__OS_PAGE);
}

static struct rasp__segment *segment_new(struct rasp_heap *h)
{
	struct rasp__segment *s = rasp__mapping_new(h, RASP__SEGMENT_SIZE, RASP__SEG_SMALL);

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
 * class is formatted 4-16 KiB at a refill (rasp__page_extend, so that memory is touched as it
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

int rasp__heap_block_offset(struct rasp_heap *h, size_t offset)
{
	int rc = 0;

	if (!h || (offset != 0 && offset != 8))
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	if (h->segments) /* pages may be placed already, and records kept of them */
		rc = h->block_offset == offset ? 0 : -EBUSY;
	else
		h->block_offset = offset;
	pthread_mutex_unlock(&h->lock);
	return rc;
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
	pg->div = rasp__page_div(pg->bsize);
	pg->span = (uint8_t)span;
	pg->slot = (uint8_t)i;
	/* Past the heap's block offset (rasp__heap_block_offset), within the page's own slots:
	 * a purge of a neighbour's slot never touches its blocks. */
	pg->start =
	    (i ? (uintptr_t)s + (size_t)i * RASP__SLOT_SIZE : s->slot0_start) + h->block_offset;
	pg->bytes = (slot_bytes(s, (unsigned)i, span) - h->block_offset) / pg->bsize * pg->bsize;
	pg->lim = pg->bytes / pg->bsize * (pg->bsize * pg->div);
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
		rasp__purge_check(h, NULL);
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
	/* A cross-thread free still reading one of its page records (remote.c,
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
	rasp__mapping_unmap(h, s);
	return 1;
}

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
	rasp__large_tick(h);
	again |= rasp__arena_tick(h, false);
	return again || h->free_committed_slots > RASP__RETAIN_SLOTS || h->large_cache_n ||
	       h->large_tails;
}

/* Notes that something may wait for a purge tick (empty committed slots past the retained
 * ones, or `freed`, a segment that has just emptied; NULL: none), and runs the tick if one is
 * due: ticks are at least RASP__PURGE_DELAY_NS apart. A tick marks what is empty and purges
 * what was marked at the last and stayed empty since. */
void rasp__purge_check(struct rasp_heap *h, struct rasp__segment *freed)
{
	uint64_t now;

	if (!h->purge_wait && h->free_committed_slots <= RASP__RETAIN_SLOTS &&
	    (!freed || freed->free_slots != ALL_SLOTS) && !h->large_cache_n && !h->large_tails &&
	    h->arena_free_committed <= rasp__arena_bound(h))
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
	rasp__purge_check(h, s);
}

void rasp__segments_trim(struct rasp_heap *h)
{
	struct rasp__segment *s, *sn;

	for (s = h->segments; s; s = sn) {
		sn = s->next;
		if (s->free_slots == ALL_SLOTS && maybe_unmap(h, s, true) != 0)
			continue;
		purge_slots(h, s, s->free_slots & s->committed_slots);
	}
}

/* ---- Whole-heap operations ---- */

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
				rc = rasp__walk_visit(
				    (struct rasp__header *)(pg->start + (size_t)j * pg->bsize),
				    pg->bsize, fn, arg);
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
		rasp__mapping_unmap(h, s);
	}
	memset(h->formatted, 0, sizeof(h->formatted));
	h->segments = h->segments_tail = NULL;
}
