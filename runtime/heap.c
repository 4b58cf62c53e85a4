/* Heaps and types: creation and teardown, type registration, object accessors, the
 * whole-heap operations (collect, walk: contexts retired through context.c, pages through
 * page.c, segments, arenas and large objects through segment.c), statistics and sampling
 * control. The heap lock guards the lists; it is never taken on the allocation fast path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rasp/events.h"

static _Atomic uint64_t next_heap_id = 1;

/* The heap this thread is walking (rasp_heap_walk holds its lock while calling back): its
 * callback may read the heap (stats, types) without taking the lock again, which hung, and
 * may not collect or walk it (test_walk_callback_reads_the_heap). */
static __thread struct rasp_heap *walking __attribute__((tls_model("initial-exec")));

/* The heap's lock, unless this thread's walk of it holds it already; returns whether taken. */
static bool lock_unless_walking(struct rasp_heap *h)
{
	if (walking == h)
		return false;
	pthread_mutex_lock(&h->lock);
	return true;
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
	rasp__classes_init();
	h->id = atomic_fetch_add(&next_heap_id, 1);
	h->cfg = c;
	h->thp = rasp__segment_thp_allowed();
	h->arena_max_z =
	    ((size_t)RASP__ARENA_MAX_PAGES << RASP__ARENA_PAGE_SHIFT) - RASP__ARENA_HDR_OFFSET;
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
	struct rasp_type *t, *tn;

	if (!h)
		return;
	if (walking == h) {
		fprintf(stderr, "rasp: rasp_heap_destroy called from a walk of the same heap; "
				"refused\n");
		return;
	}
	/* Every sampled object still live dies with the heap: one event says so, before the
	 * heap's ClrInstanceID can go to a heap created after (unregistering frees it), so a
	 * consumer ends them all. One per live sample would need them found: every header read. */
	rasp__invalid_summary(h);
	/* The frees threads kept go out first (their blocks die with the heap), from this
	 * thread: the other threads are done with the heap (rasp.h). */
	for (c = h->contexts; c; c = c->next)
		rasp__freed_tell(h, c);
	if (atomic_load_explicit(&h->marked, memory_order_relaxed))
		rasp_event_heap_destroyed(h->cfg.clr_instance_id);
	rasp__heap_unregister(h);
	rasp__thread_forget_heap(h);
	/* A heap that announced sampling says it stopped, so a consumer can close its window. */
	if (atomic_load(&h->announced))
		rasp_event_sampling_stopped(h->cfg.clr_instance_id);
	for (c = h->contexts; c; c = cn) {
		cn = c->next;
		free(c);
	}
	for (c = h->spare_contexts; c; c = cn) {
		cn = c->next;
		free(c);
	}
	rasp__segments_unmap_all(h);
	rasp__large_unmap_all(h);
	rasp__arenas_unmap_all(h);
	for (t = h->types; t; t = tn) {
		tn = t->next;
		free((char *)t->name);
		free(t);
	}
	pthread_mutex_destroy(&h->lock);
	free(h);
	/* Its events reach the EventPipe file before the heap's owner goes on (a no-op, one load,
	 * without a session). */
	rasp_events_flush();
}

const rasp_type_t *rasp_type_register(rasp_heap_t *h, const char *name)
{
	struct rasp_type *t;
	bool locked;

	if (!h || !name) {
		errno = EINVAL;
		return NULL;
	}
	locked = lock_unless_walking(h);
	for (t = h->types; t; t = t->next)
		if (strcmp(t->name, name) == 0)
			goto out;
	/* 16-aligned whatever malloc's alignment: a header's bit 3 is the SAMPLED mark. */
	t = aligned_alloc(RASP__TYPE_ALIGN, (sizeof(*t) + RASP__TYPE_ALIGN - 1) / RASP__TYPE_ALIGN *
						RASP__TYPE_ALIGN);
	if (t) {
		memset(t, 0, sizeof(*t));
		t->name = strdup(name);
	}
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
	if (locked)
		pthread_mutex_unlock(&h->lock);
	return t;
}

const rasp_type_t *rasp_heap_default_type(rasp_heap_t *h)
{
	const struct rasp_type *t;

	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	t = atomic_load_explicit(&h->default_type, memory_order_acquire);
	if (t)
		return t;
	/* Registering a name twice gives the same type: two threads racing here agree. */
	t = rasp_type_register(h, "untyped");
	if (t)
		atomic_store_explicit(&h->default_type, t, memory_order_release);
	return t;
}

int rasp_heap_set_default_type(rasp_heap_t *h, const rasp_type_t *type)
{
	if (!h || !type || type->heap != h)
		return -EINVAL;
	atomic_store_explicit(&h->default_type, type, memory_order_release);
	return 0;
}

const char *rasp_type_name(const rasp_type_t *type)
{
	return type ? type->name : NULL;
}

/* The block of a live object (its own, or for an aligned object the one it was placed in)
 * and the block's size: the page's block by position, or the mapping's one object. */
static const struct rasp__header *block_header(const void *obj, size_t *z)
{
	const struct rasp__header *hdr = rasp__header_of(obj);
	struct rasp__segment *s = rasp__mapping_of(hdr);
	const struct rasp__page *pg;

	if (s->kind == RASP__SEG_LARGE) {
		*z = s->large_z;
		return rasp__large_header(s);
	}
	if (s->kind == RASP__SEG_ARENA) {
		const char *why;

		return rasp__arena_block(s, hdr, z, &why);
	}
	pg = rasp__page_of(s, hdr);
	*z = pg->bsize;
	return rasp__page_block_at(pg, hdr);
}

size_t rasp_object_size(const void *obj)
{
	size_t z = 0;

	if (obj)
		block_header(obj, &z);
	return z;
}

size_t rasp_usable_size(const void *obj)
{
	const struct rasp__header *b;
	size_t z = 0;

	if (!obj)
		return 0;
	b = block_header(obj, &z);
	return b ? (uintptr_t)b + z - (uintptr_t)obj : 0;
}

/* An object's own header holds its type and kind, an aligned one's too (its block's holds the
 * offset to it). */
const rasp_type_t *rasp_object_type(const void *obj)
{
	return obj ? rasp__hdr_type(rasp__header_of(obj)) : NULL;
}

int rasp_object_kind(const void *obj)
{
	return obj ? (int)rasp__hdr_kind(rasp__header_of(obj)) : -EINVAL;
}

/* Every context's windows end (rasp__context_retire); the calling thread's own lists go back
 * at once and its empty pages to their segments; other threads do the same at their next
 * allocation slow path (their lists and pages are theirs to touch: they may be freeing right
 * now). Abandoned pages are swept, then every empty slot purged and every empty segment
 * unmapped. */
int rasp_heap_collect(rasp_heap_t *h)
{
	struct rasp_context *self;

	if (!h)
		return -EINVAL;
	if (walking == h) {
		fprintf(stderr, "rasp: rasp_heap_collect called from a walk of the same heap; "
				"refused\n");
		return -EDEADLK;
	}
	self = rasp__context_peek(h);
	if (self)
		rasp__batch_flush(self);
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, rasp__context_retire, NULL);
	if (self) {
		atomic_store_explicit(&self->trim, 0, memory_order_relaxed);
		rasp__pages_release_empty(self);
	}
	rasp__abandoned_trim(h);
	rasp__large_trim(h);
	rasp__arena_tick(h, true);
	rasp__segments_trim(h);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

int rasp_heap_walk(rasp_heap_t *h, rasp_walk_fn fn, void *arg)
{
	int rc;

	if (!h || !fn)
		return -EINVAL;
	if (walking == h) {
		fprintf(stderr, "rasp: rasp_heap_walk called from a walk of the same heap; "
				"refused\n");
		return -EDEADLK;
	}
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, rasp__context_retire, NULL);
	walking = h;
	rc = rasp__segments_walk(h, fn, arg);
	if (!rc)
		rc = rasp__large_walk(h, fn, arg);
	if (!rc)
		rc = rasp__arenas_walk(h, fn, arg);
	walking = NULL;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int rasp_heap_stats(rasp_heap_t *h, rasp_heap_stats_t *out)
{
	uint64_t samples, refills, held = 0, used;
	bool locked;

	if (!h || !out)
		return -EINVAL;
	locked = lock_unless_walking(h);
	samples = atomic_load(&h->samples_gone);
	refills = atomic_load(&h->refills_gone);
	for (struct rasp_context *c = h->contexts; c; c = c->next) {
		samples += atomic_load_explicit(&c->n_samples, memory_order_relaxed);
		refills += atomic_load_explicit(&c->n_refills, memory_order_relaxed);
		/* Each class's list: its window at the owner's last slow path and the blocks past
		 * it, read while the owner may be changing them (each word is atomic, the pair is
		 * not: the figure is as of about now, as the pages' counts are). */
		for (unsigned k = 1; k < RASP__NCLASS; k++)
			held += ((uint64_t)atomic_load_explicit(&c->win[k].window_held,
								memory_order_relaxed) +
				 rasp__rest(&c->win[k])) *
				rasp__class_size[k];
	}
	used = rasp__segments_used_bytes(h);
	out->samples = samples;
	out->refills = refills;
	out->regions = atomic_load(&h->regions_n);
	out->mapped_bytes = atomic_load(&h->reserved_bytes);
	out->contexts = atomic_load(&h->contexts_n);
	out->sampling_starts = atomic_load(&h->starts);
	out->invalid_frees = atomic_load(&h->invalid_frees);
	out->reserved_bytes = out->mapped_bytes;
	out->committed_bytes = atomic_load(&h->committed_bytes);
	out->live_bytes = (used > held ? used - held : 0) + atomic_load(&h->large_live_bytes);
	out->wasted_bytes =
	    out->committed_bytes > out->live_bytes ? out->committed_bytes - out->live_bytes : 0;
	out->pages = atomic_load(&h->pages_n);
	out->purged_bytes = atomic_load(&h->purged_bytes);
	if (locked)
		pthread_mutex_unlock(&h->lock);
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
	atomic_fetch_add_explicit(&h->state_gen, 1, memory_order_release);
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
