/* The white-box tests' ledger of a heap's samples and their frees, through the runtime's
 * hooks (types.h): which sampled objects are live, by Address, as a consumer would pair
 * AllocationSampled with SampledObjectFreed. Counts what a consumer must never see: a free
 * with no live sample at its address or of another size, and a sample at an address whose
 * last sample was not freed yet. Thread-safe (one lock: the hooks run in the allocating or
 * freeing thread, in the order the runtime calls them). */
#ifndef RASP_TEST_LEDGER_H
#define RASP_TEST_LEDGER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LEDGER_SLOTS ((size_t)1 << 20) /* a power of 2, above the live samples of any test */

struct ledger_slot {
	uintptr_t addr; /* 0: empty */
	uint64_t size;
	bool live;
};

struct ledger {
	pthread_mutex_t lock;
	struct ledger_slot *slot;
	uint64_t samples, frees, live;
	uint64_t free_unpaired, free_bad_size, sample_over_live;
};

static struct ledger_slot *ledger_find(struct ledger *l, uintptr_t addr)
{
	size_t i = (size_t)((addr * UINT64_C(0x9e3779b97f4a7c15)) >> 44) & (LEDGER_SLOTS - 1);

	while (l->slot[i].addr && l->slot[i].addr != addr)
		i = (i + 1) & (LEDGER_SLOTS - 1);
	return &l->slot[i];
}

static void ledger_sample(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
			  uint64_t offset, uint64_t mean)
{
	struct ledger *l = arg;
	struct ledger_slot *s;

	(void)kind, (void)type, (void)offset, (void)mean;
	pthread_mutex_lock(&l->lock);
	s = ledger_find(l, (uintptr_t)addr);
	if (s->addr && s->live)
		l->sample_over_live++;
	else
		l->live++;
	*s = (struct ledger_slot){(uintptr_t)addr, z, true};
	l->samples++;
	pthread_mutex_unlock(&l->lock);
}

static void ledger_free(void *arg, void *addr, uint64_t z)
{
	struct ledger *l = arg;
	struct ledger_slot *s;

	pthread_mutex_lock(&l->lock);
	s = ledger_find(l, (uintptr_t)addr);
	l->frees++;
	if (!s->addr || !s->live) {
		l->free_unpaired++;
	} else {
		l->free_bad_size += s->size != z;
		s->live = false;
		l->live--;
	}
	pthread_mutex_unlock(&l->lock);
}

/* Hooks h's samples and sampled frees into l (the sample hook also makes every sample a
 * marked one, as a session would). */
static inline void ledger_attach(struct ledger *l, struct rasp_heap *h)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->slot = calloc(LEDGER_SLOTS, sizeof(*l->slot));
	h->sample_hook_arg = l;
	h->sample_hook = ledger_sample;
	h->free_hook = ledger_free;
}

/* Whether obj was sampled: its latest sample has not been freed. */
static inline bool ledger_live(struct ledger *l, const void *obj)
{
	bool live;

	pthread_mutex_lock(&l->lock);
	live = ledger_find(l, (uintptr_t)obj)->live;
	pthread_mutex_unlock(&l->lock);
	return live;
}

static inline void ledger_fini(struct ledger *l)
{
	free(l->slot);
	pthread_mutex_destroy(&l->lock);
}

#endif /* RASP_TEST_LEDGER_H */
