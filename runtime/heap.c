/* Heaps, types and regions: creation and teardown, carving allocation quanta for contexts,
 * large and pinned objects, frees and region release, collect and heap walk, statistics.
 * The heap lock guards the lists and region carving; it is never taken on the allocation
 * fast path, and a free takes it only when a region becomes empty. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rasp/events.h"

#define PAGE_SIZE_ASSUMED ((size_t)4096)

static _Atomic uint64_t next_heap_id = 1;

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

/* A fresh current region of `kind` (small or pinned), a spare one if there is one. */
static struct rasp__region *region_new_current(struct rasp_heap *h, int kind)
{
	struct rasp__region *r;

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
	return r;
}

/* heap->lock held. Gives the chunk back: the bytes used become live bytes of the region,
 * the unused tail becomes a filler so the region stays walkable. Leaves alloc_ptr and
 * alloc_limit at 0; combined_limit is the caller's job (refill redraws, enumeration syncs). */
void rasp__context_retire(struct rasp_context *c)
{
	struct rasp__region *r = c->region;
	uintptr_t tail;

	if (r) {
		tail = c->alloc_limit - c->alloc_ptr;
		if (tail >= 8)
			*(uint64_t *)c->alloc_ptr = (uint64_t)tail | RASP__HDR_FREE;
		c->region = NULL;
		rasp__region_adjust(r, (int64_t)(c->alloc_ptr - c->chunk_start) - RASP__REF_BIAS);
	}
	c->alloc_ptr = c->alloc_limit = c->chunk_start = 0;
}

/* Slow path of the owning thread: swap the chunk for a new one of max(quantum, z) bytes (or
 * what is left of the current region, if that still holds z: less waste at region ends). */
int rasp__refill(struct rasp_context *c, size_t z)
{
	struct rasp_heap *h = c->heap;
	struct rasp__region *r, *old;
	size_t want = z > h->cfg.alloc_quantum ? z : h->cfg.alloc_quantum;
	size_t size;

	pthread_mutex_lock(&h->lock);
	rasp__context_retire(c);
	r = h->cur_small;
	if (!r || r->end - r->carve < z) {
		old = r;
		r = region_new_current(h, RASP__REGION_SMALL);
		if (!r) {
			pthread_mutex_unlock(&h->lock);
			return -ENOMEM;
		}
		h->cur_small = r;
		if (old)
			rasp__region_adjust(old, -RASP__REF_BIAS);
	}
	size = r->end - r->carve;
	if (size > want)
		size = want;
	c->region = r;
	c->chunk_start = c->alloc_ptr = r->carve;
	c->alloc_limit = r->carve + size;
	r->carve += size;
	atomic_fetch_add_explicit(&r->live_bytes, RASP__REF_BIAS, memory_order_relaxed);
	pthread_mutex_unlock(&h->lock);
	atomic_fetch_add_explicit(&h->refills, 1, memory_order_relaxed);
	return 0;
}

/* Large objects get a region each; small pinned objects are bump-allocated under the lock
 * from the pinned region (pinned allocation is rare in the programs this models). */
void *rasp__alloc_outside(struct rasp_heap *h, size_t z, int kind)
{
	struct rasp__region *r, *old;
	uintptr_t p;

	pthread_mutex_lock(&h->lock);
	if (z >= RASP_LARGE_OBJECT_SIZE) {
		size_t size = RASP__REGION_HEADER_SIZE + z;

		if (size < z) {
			r = NULL;
		} else {
			size = round_up(size, PAGE_SIZE_ASSUMED);
			r = region_map(h, size, RASP__REGION_LARGE);
		}
		if (!r) {
			pthread_mutex_unlock(&h->lock);
			return NULL;
		}
		p = r->start;
		r->carve = p + z;
	} else {
		r = h->cur_pinned;
		if (!r || r->end - r->carve < z) {
			old = r;
			r = region_new_current(h, RASP__REGION_PINNED);
			if (!r) {
				pthread_mutex_unlock(&h->lock);
				return NULL;
			}
			h->cur_pinned = r;
			if (old)
				rasp__region_adjust(old, -RASP__REF_BIAS);
		}
		p = r->carve;
		r->carve += z;
		atomic_fetch_add_explicit(&r->live_bytes, (int64_t)z, memory_order_relaxed);
	}
	((struct rasp__header *)p)->size_flags =
	    (uint64_t)z | ((uint64_t)kind << RASP__HDR_KIND_SHIFT);
	((struct rasp__header *)p)->type = NULL; /* the caller sets it */
	pthread_mutex_unlock(&h->lock);
	return (void *)(p + RASP_OBJECT_HEADER_SIZE);
}

int rasp_heap_create(rasp_heap_t **out, const rasp_config_t *cfg)
{
	rasp_config_t c;
	struct rasp_heap *h;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (cfg) {
		c = *cfg;
	} else {
		rasp_config_init(&c);
		err = rasp_config_from_env(&c);
		if (err)
			return err;
	}
	err = rasp_config_validate(&c);
	if (err)
		return err;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->id = atomic_fetch_add(&next_heap_id, 1);
	h->cfg = c;
	pthread_mutex_init(&h->lock, NULL);
	atomic_init(&h->sampling_mode, c.sampling);
	atomic_init(&h->sampling_mean, c.sampling_mean);
	rasp__heap_register(h);
	*out = h;
	return 0;
}

void rasp_heap_destroy(rasp_heap_t *h)
{
	struct rasp_context *c, *cn;
	struct rasp__region *r, *rn;
	struct rasp_type *t, *tn;

	if (!h)
		return;
	rasp__heap_unregister(h);
	rasp__thread_forget_heap(h);
	/* A heap that announced sampling says it stopped, so a consumer can close its window. */
	if (atomic_load(&h->announced))
		rasp_event_sampling_stopped(h->cfg.clr_instance_id);
	for (c = h->contexts; c; c = cn) {
		cn = c->next;
		free(c);
	}
	for (r = h->regions; r; r = rn) {
		rn = r->next;
		region_unmap(h, r);
	}
	for (r = h->spare; r; r = rn) {
		rn = r->next;
		region_unmap(h, r);
	}
	for (t = h->types; t; t = tn) {
		tn = t->next;
		free((char *)t->name);
		free(t);
	}
	pthread_mutex_destroy(&h->lock);
	free(h);
}

const rasp_type_t *rasp_type_register(rasp_heap_t *h, const char *name)
{
	struct rasp_type *t;

	if (!h || !name) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&h->lock);
	for (t = h->types; t; t = t->next)
		if (strcmp(t->name, name) == 0)
			goto out;
	t = calloc(1, sizeof(*t));
	if (t)
		t->name = strdup(name);
	if (!t || !t->name) {
		free(t);
		t = NULL;
		errno = ENOMEM;
		goto out;
	}
	t->heap = h;
	t->next = h->types;
	h->types = t;
out:
	pthread_mutex_unlock(&h->lock);
	return t;
}

const char *rasp_type_name(const rasp_type_t *type)
{
	return type ? type->name : NULL;
}

size_t rasp_object_size(const void *obj)
{
	return obj ? (size_t)(rasp__header_of(obj)->size_flags & ~RASP__HDR_FLAGS) : 0;
}

const rasp_type_t *rasp_object_type(const void *obj)
{
	return obj ? rasp__header_of(obj)->type : NULL;
}

int rasp_object_kind(const void *obj)
{
	if (!obj)
		return -EINVAL;
	return (int)((rasp__header_of(obj)->size_flags & RASP__HDR_KIND_MASK) >>
		     RASP__HDR_KIND_SHIFT);
}

/* Debug builds: is obj the start of an object of h? Walks the region list under the lock,
 * then the objects of the region up to obj: O(region), acceptable for a debug check. */
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
 * the object must start a region's object area where its region says objects start, and its
 * header must be one this heap wrote. Catches interior pointers of large objects (which would
 * otherwise unmap a live object) and most interior pointers of small ones; a pointer into
 * memory rasp never mapped is outside the contract (rasp.h). NULL when the free may go on. */
static const char *free_problem(const struct rasp__region *r, uintptr_t hdr, uint64_t sf)
{
	size_t z = (size_t)(sf & ~RASP__HDR_FLAGS);
	uint64_t kind = (sf & RASP__HDR_KIND_MASK) >> RASP__HDR_KIND_SHIFT;

	if (hdr & 7)
		return "not the start of an object (misaligned)";
	if (r->kind == RASP__REGION_LARGE)
		return hdr == r->start ? NULL : "inside a large object, not its start";
	if (hdr < r->start || z < RASP_OBJECT_HEADER_SIZE + 8 || z >= RASP_LARGE_OBJECT_SIZE ||
	    z > r->end - hdr || kind != (r->kind == RASP__REGION_PINNED ? RASP_KIND_PINNED
								      : RASP_KIND_SMALL))
		return "not the start of an object (the words before it are no object header)";
	return NULL;
}

void rasp_free(rasp_heap_t *h, void *obj)
{
	const char *why;
	struct rasp__header *hdr;
	struct rasp__region *r;
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
	if (r->kind == RASP__REGION_LARGE) {
		pthread_mutex_lock(&h->lock);
		region_release(r);
		pthread_mutex_unlock(&h->lock);
		return;
	}
	if (atomic_fetch_sub(&r->live_bytes, (int64_t)z) == (int64_t)z) {
		pthread_mutex_lock(&h->lock);
		region_release(r);
		pthread_mutex_unlock(&h->lock);
	}
}

static void retire_one(struct rasp_context *c, void *arg)
{
	(void)arg;
	rasp__context_retire(c);
}

int rasp_heap_collect(rasp_heap_t *h)
{
	struct rasp__region *spare, *cur;

	if (!h)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, retire_one, NULL);
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
	pthread_mutex_unlock(&h->lock);
	return 0;
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

int rasp_heap_walk(rasp_heap_t *h, rasp_walk_fn fn, void *arg)
{
	struct rasp__region *r;
	int rc = 0;

	if (!h || !fn)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, retire_one, NULL);
	for (r = h->regions; r && !rc; r = r->next)
		rc = walk_region(r, fn, arg);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int rasp_heap_stats(rasp_heap_t *h, rasp_heap_stats_t *out)
{
	if (!h || !out)
		return -EINVAL;
	out->samples = atomic_load(&h->samples);
	out->refills = atomic_load(&h->refills);
	out->regions = atomic_load(&h->regions_n);
	out->mapped_bytes = atomic_load(&h->mapped_bytes);
	out->contexts = atomic_load(&h->contexts_n);
	out->sampling_starts = atomic_load(&h->starts);
	out->invalid_frees = atomic_load(&h->invalid_frees);
	return 0;
}

int rasp_heap_set_sampling(rasp_heap_t *h, int mode, uint64_t mean)
{
	if (!h)
		return -EINVAL;
	if (mode != RASP_SAMPLING_AUTO && mode != RASP_SAMPLING_ON && mode != RASP_SAMPLING_OFF) {
		fprintf(stderr, "rasp: sampling mode %d is not auto (0), on (1) or off (2)\n",
			mode);
		return -EINVAL;
	}
	if (mean > RASP_MAX_SAMPLING_MEAN) {
		fprintf(stderr, "rasp: sampling mean %llu is out of range: 1..%llu bytes\n",
			(unsigned long long)mean, (unsigned long long)RASP_MAX_SAMPLING_MEAN);
		return -EINVAL;
	}
	if (mean)
		atomic_store(&h->sampling_mean, mean);
	atomic_store(&h->sampling_mode, mode);
	return 0;
}

int rasp_heap_sampling_active(rasp_heap_t *h)
{
	int mode;

	if (!h)
		return -EINVAL;
	mode = atomic_load(&h->sampling_mode);
	if (mode == RASP_SAMPLING_AUTO)
		return rasp_event_allocation_sampled_enabled();
	return mode == RASP_SAMPLING_ON;
}
