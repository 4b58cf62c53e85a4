/* Regions: the memory of a heap, mapped from the OS (os.c) 1 MiB-aligned so an object's region
 * is found by masking its address. Small regions are carved into chunks for allocation
 * contexts; pinned regions hold small pinned objects; a large object has a region of its own.
 * A region's release count says when it holds nothing (see internal.h); empty small regions
 * are kept as spares. Frees, the heap walk and teardown are here; contexts are context.c's.
 * Functions marked "heap->lock held" are called with the heap lock taken. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define PAGE_SIZE_ASSUMED ((size_t)4096)

static size_t round_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* heap->lock held. Puts an empty region (new or spare) at the head of the heap's list, ready
 * to carve from its start. */
static void region_link(struct rasp_heap *h, struct rasp__region *r)
{
	r->carve = r->start;
	r->released = false;
	r->prev = NULL;
	r->next = h->regions;
	if (h->regions)
		h->regions->prev = r;
	h->regions = r;
}

/* Maps `size` bytes aligned to RASP__REGION_SIZE: over-map by one region, trim both ends.
 * Costs three system calls; regions are 1 MiB, so this is rare next to allocations. */
static struct rasp__region *region_map(struct rasp_heap *h, size_t size, int kind)
{
	size_t total = size + RASP__REGION_SIZE;
	uintptr_t raw, a, lead, trail;
	struct rasp__region *r;

	if (total < size)
		return NULL;
	raw = (uintptr_t)rasp__os_map(total);
	if (!raw)
		return NULL;
	a = round_up(raw, RASP__REGION_SIZE);
	lead = a - raw;
	trail = total - lead - size;
	if (lead)
		rasp__os_unmap((void *)raw, lead);
	if (trail)
		rasp__os_unmap((void *)(a + size), trail);
	r = (struct rasp__region *)a;
	r->magic = RASP__REGION_MAGIC;
	r->heap = h;
	r->map_size = size;
	r->kind = kind;
	r->start = a + RASP__REGION_HEADER_SIZE;
	r->end = a + size;
	atomic_init(&r->live_bytes, 0);
	region_link(h, r);
	atomic_fetch_add(&h->regions_n, 1);
	atomic_fetch_add(&h->mapped_bytes, size);
	return r;
}

static void region_unlink(struct rasp_heap *h, struct rasp__region *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		h->regions = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
}

static void region_unmap(struct rasp_heap *h, struct rasp__region *r)
{
	atomic_fetch_sub(&h->regions_n, 1);
	atomic_fetch_sub(&h->mapped_bytes, r->map_size);
	r->magic = 0;
	RASP__UNPOISON((void *)r, r->map_size);
	rasp__os_unmap(r, r->map_size);
}

/* heap->lock held; the release count just reached 0. Up to RASP__MAX_SPARE empty small
 * regions are kept for reuse: a program whose live set is steady then recycles memory it
 * already faulted in instead of paying mmap, munmap and a page fault per 4 KiB. */
static void region_release(struct rasp__region *r)
{
	struct rasp_heap *h = r->heap;

	if (r->released)
		return;
	r->released = true;
	region_unlink(h, r);
	if (r->kind == RASP__REGION_SMALL && h->nspare < RASP__MAX_SPARE) {
		r->next = h->spare;
		h->spare = r;
		h->nspare++;
	} else
		region_unmap(h, r);
}

void rasp__region_adjust(struct rasp__region *r, int64_t delta)
{
	if (atomic_fetch_add(&r->live_bytes, delta) + delta == 0)
		region_release(r);
}

/* heap->lock held. The current region of `kind` (small or pinned) if it still has z bytes,
 * else a fresh one (a spare if there is one), which becomes current; NULL without memory. */
static struct rasp__region *region_current(struct rasp_heap *h, struct rasp__region **cur,
					   int kind, size_t z)
{
	struct rasp__region *r = *cur;

	if (r && r->end - r->carve >= z)
		return r;
	if (kind == RASP__REGION_SMALL && h->spare) {
		r = h->spare;
		h->spare = r->next;
		h->nspare--;
		RASP__UNPOISON((void *)r->start, r->end - r->start);
		region_link(h, r);
	} else {
		r = region_map(h, RASP__REGION_SIZE, kind);
		if (!r)
			return NULL;
	}
	atomic_store(&r->live_bytes, RASP__REF_BIAS); /* the "current" reference */
	if (*cur)
		rasp__region_adjust(*cur, -RASP__REF_BIAS);
	*cur = r;
	return r;
}

int rasp__region_carve(struct rasp_heap *h, size_t z, size_t want, struct rasp__chunk *out)
{
	struct rasp__region *r = region_current(h, &h->cur_small, RASP__REGION_SMALL, z);
	size_t size;

	if (!r)
		return -ENOMEM;
	size = r->end - r->carve;
	if (size > want)
		size = want;
	out->region = r;
	out->start = r->carve;
	out->end = r->carve + size;
	r->carve += size;
	atomic_fetch_add_explicit(&r->live_bytes, RASP__REF_BIAS, memory_order_relaxed);
	return 0;
}

void *rasp__alloc_outside(struct rasp_heap *h, size_t z, int kind)
{
	struct rasp__region *r;
	uintptr_t p;

	pthread_mutex_lock(&h->lock);
	if (z >= RASP_LARGE_OBJECT_SIZE) {
		size_t size = RASP__REGION_HEADER_SIZE + z;

		r = size < z ? NULL
			     : region_map(h, round_up(size, PAGE_SIZE_ASSUMED), RASP__REGION_LARGE);
		if (r) {
			p = r->start;
			r->carve = p + z;
		}
	} else {
		r = region_current(h, &h->cur_pinned, RASP__REGION_PINNED, z);
		if (r) {
			p = r->carve;
			r->carve += z;
			atomic_fetch_add_explicit(&r->live_bytes, (int64_t)z, memory_order_relaxed);
		}
	}
	if (!r) {
		pthread_mutex_unlock(&h->lock);
		return NULL;
	}
	((struct rasp__header *)p)->size_flags =
	    (uint64_t)z | ((uint64_t)kind << RASP__HDR_KIND_SHIFT);
	((struct rasp__header *)p)->type = NULL; /* the caller sets it */
	pthread_mutex_unlock(&h->lock);
	return (void *)(p + RASP_OBJECT_HEADER_SIZE);
}

/* ---- Frees ---------------------------------------------------------------------------------- */

/* Debug builds: is obj the start of an object of h? Walks the region list under the lock:
 * O(regions), acceptable for a debug check. */
static bool debug_owns(struct rasp_heap *h, const void *obj)
{
	struct rasp__region *r, *want = rasp__region_of(obj);
	uintptr_t hdr = (uintptr_t)rasp__header_of(obj);
	bool ok = false;

	pthread_mutex_lock(&h->lock);
	for (r = h->regions; r; r = r->next)
		if (r == want)
			break;
	if (r && hdr >= r->start && hdr < r->carve) {
		if (r->kind == RASP__REGION_LARGE) {
			ok = hdr == r->start;
		} else {
			/* Chunks held by contexts are not walkable; accept 8-aligned headers there.
			 */
			ok = (hdr & 7) == 0;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return ok;
}

static void bad_free(struct rasp_heap *h, const void *obj, const char *why)
{
	atomic_fetch_add(&h->invalid_frees, 1);
	fprintf(stderr, "rasp: rasp_free(%p): %s; ignored\n", obj, why);
	errno = EINVAL;
}

/* The checks every build makes before freeing (a few compares on data the free reads anyway):
 * the object must start where its region says objects start, and its header must be one this
 * heap wrote. Catches interior pointers of large objects (which would otherwise unmap a live
 * object) and most interior pointers of small ones; a pointer into memory rasp never mapped
 * is outside the contract (rasp.h). NULL when the free may go on. */
static const char *free_problem(const struct rasp__region *r, uintptr_t hdr, uint64_t sf)
{
	size_t z = (size_t)(sf & ~RASP__HDR_FLAGS);
	uint64_t kind = (sf & RASP__HDR_KIND_MASK) >> RASP__HDR_KIND_SHIFT;

	if (r->kind == RASP__REGION_LARGE)
		return hdr == r->start ? NULL : "inside a large object, not its start";
	if (hdr < r->start || z < RASP_OBJECT_HEADER_SIZE + 8 || z >= RASP_LARGE_OBJECT_SIZE ||
	    z > r->end - hdr ||
	    kind != (r->kind == RASP__REGION_PINNED ? RASP_KIND_PINNED : RASP_KIND_SMALL))
		return "not the start of an object (the words before it are no object header)";
	return NULL;
}

void rasp_free(rasp_heap_t *h, void *obj)
{
	struct rasp__header *hdr;
	struct rasp__region *r;
	const char *why;
	uint64_t sf;
	size_t z;

	if (!obj)
		return;
	if (!h) {
		errno = EINVAL;
		return;
	}
	if (RASP__DEBUG && !debug_owns(h, obj)) {
		bad_free(h, obj, "not a live object of this heap (foreign pointer or double free)");
		return;
	}
	hdr = rasp__header_of(obj);
	r = rasp__region_of(obj);
	if (r->magic != RASP__REGION_MAGIC || r->heap != h) {
		bad_free(h, obj, "not an object of this heap");
		return;
	}
	/* Before reading the would-be header: a misaligned one cannot be read as one. */
	if ((uintptr_t)hdr & 7) {
		bad_free(h, obj, "not the start of an object (misaligned)");
		return;
	}
	sf = hdr->size_flags;
	if (sf & RASP__HDR_FREE) {
		bad_free(h, obj, "double free");
		return;
	}
	why = free_problem(r, (uintptr_t)hdr, sf);
	if (why) {
		bad_free(h, obj, why);
		return;
	}
	hdr->size_flags = sf | RASP__HDR_FREE;
	z = (size_t)(sf & ~RASP__HDR_FLAGS);
	RASP__POISON(obj, z - RASP_OBJECT_HEADER_SIZE);
	/* A large region holds one object; a small one is released by whoever empties it. */
	if (r->kind == RASP__REGION_LARGE ||
	    atomic_fetch_sub(&r->live_bytes, (int64_t)z) == (int64_t)z) {
		pthread_mutex_lock(&h->lock);
		region_release(r);
		pthread_mutex_unlock(&h->lock);
	}
}

/* ---- Whole-heap operations ---------------------------------------------------------------- */

void rasp__regions_trim(struct rasp_heap *h)
{
	struct rasp__region *spare, *cur;

	/* The current regions stop being current, so empty ones can go too; the next refill
	 * or pinned allocation starts a new one (or reuses a spare). */
	cur = h->cur_small;
	h->cur_small = NULL;
	if (cur)
		rasp__region_adjust(cur, -RASP__REF_BIAS);
	cur = h->cur_pinned;
	h->cur_pinned = NULL;
	if (cur)
		rasp__region_adjust(cur, -RASP__REF_BIAS);
	while ((spare = h->spare)) {
		h->spare = spare->next;
		region_unmap(h, spare);
	}
	h->nspare = 0;
}

static int walk_region(struct rasp__region *r, rasp_walk_fn fn, void *arg)
{
	uintptr_t p = r->start;
	uint64_t sf;
	size_t z;
	int rc;

	while (p < r->carve) {
		sf = *(uint64_t *)p;
		z = (size_t)(sf & ~RASP__HDR_FLAGS);
		if (z == 0) /* never written: cannot happen after retiring; stop rather than loop */
			return -EINVAL;
		if (!(sf & RASP__HDR_FREE)) {
			rc = fn((void *)(p + RASP_OBJECT_HEADER_SIZE),
				((struct rasp__header *)p)->type, z,
				(int)((sf & RASP__HDR_KIND_MASK) >> RASP__HDR_KIND_SHIFT), arg);
			if (rc)
				return rc;
		}
		if (r->kind == RASP__REGION_LARGE)
			break;
		p += z;
	}
	return 0;
}

int rasp__regions_walk(struct rasp_heap *h, rasp_walk_fn fn, void *arg)
{
	int rc = 0;

	for (struct rasp__region *r = h->regions; r && !rc; r = r->next)
		rc = walk_region(r, fn, arg);
	return rc;
}

void rasp__regions_unmap_all(struct rasp_heap *h)
{
	struct rasp__region *r, *rn;

	for (r = h->regions; r; r = rn) {
		rn = r->next;
		region_unmap(h, r);
	}
	for (r = h->spare; r; r = rn) {
		rn = r->next;
		region_unmap(h, r);
	}
	h->regions = h->spare = h->cur_small = h->cur_pinned = NULL;
}
