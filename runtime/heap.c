/* Heaps and types: creation and teardown, type registration, object accessors, the
 * whole-heap operations (collect, walk: contexts retired through context.c, regions through
 * region.c), statistics and sampling control. The heap lock guards the lists; it is never
 * taken on the allocation fast path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rasp/events.h"

static _Atomic uint64_t next_heap_id = 1;

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
	rasp__regions_unmap_all(h);
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

static void retire_one(struct rasp_context *c, void *arg)
{
	(void)arg;
	rasp__context_retire(c);
}

int rasp_heap_collect(rasp_heap_t *h)
{
	if (!h)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, retire_one, NULL);
	rasp__regions_trim(h);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

int rasp_heap_walk(rasp_heap_t *h, rasp_walk_fn fn, void *arg)
{
	int rc;

	if (!h || !fn)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, retire_one, NULL);
	rc = rasp__regions_walk(h, fn, arg);
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
