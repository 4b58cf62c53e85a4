/* Test support: pairs a trace's frees of sampled objects with their samples as a consumer must
 * (docs/events.md, Rasp_Runtime:SampledObjectFreed): in time order, one process's events, a
 * free ends the latest sample of its ClrInstanceID and Address, HeapDestroyed ends every
 * sample of its ClrInstanceID. Counts what must never happen in a whole trace of a rasp
 * program: a free with no live sample there or of another ObjectSize, a sample at an address
 * whose last sample is still live. Header-only; open addressing over a fixed table. */
#ifndef RASP_TEST_LIVE_SAMPLES_H
#define RASP_TEST_LIVE_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define LIVE_SAMPLES_SLOTS ((size_t)1 << 21) /* a power of 2, past any test's samples */

struct live_sample {
	uint64_t key; /* Address | ClrInstanceID << 48 (user addresses are below 2^47); 0 empty */
	uint64_t size;
	bool dead; /* freed: a tombstone, taken again by the next sample there */
};

struct live_samples {
	struct live_sample *slot;
	uint64_t sampled, freed, destroyed;
	uint64_t free_unpaired, free_bad_size, sample_over_live;
	uint64_t ended_by_destroy; /* samples live at a HeapDestroyed of their heap */
};

/* 0, or -1 without memory. */
static inline int live_samples_init(struct live_samples *t)
{
	*t = (struct live_samples){0};
	t->slot = calloc(LIVE_SAMPLES_SLOTS, sizeof(*t->slot));
	return t->slot ? 0 : -1;
}

static inline struct live_sample *live_samples_find(struct live_samples *t, uint64_t key)
{
	size_t i = (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 43) & (LIVE_SAMPLES_SLOTS - 1);

	while (t->slot[i].key && t->slot[i].key != key)
		i = (i + 1) & (LIVE_SAMPLES_SLOTS - 1);
	return &t->slot[i];
}

static inline uint64_t live_samples_key(uint64_t clr_instance_id, uint64_t address)
{
	return address | clr_instance_id << 48;
}

/* AllocationSampled. */
static inline void live_samples_sampled(struct live_samples *t, uint64_t id, uint64_t addr,
					uint64_t size)
{
	uint64_t key = live_samples_key(id, addr);
	struct live_sample *s = live_samples_find(t, key);

	t->sampled++;
	if (s->key && !s->dead)
		t->sample_over_live++;
	*s = (struct live_sample){key, size, false};
}

/* SampledObjectFreed. */
static inline void live_samples_freed(struct live_samples *t, uint64_t id, uint64_t addr,
				      uint64_t size)
{
	struct live_sample *s = live_samples_find(t, live_samples_key(id, addr));

	t->freed++;
	if (!s->key || s->dead) {
		t->free_unpaired++;
		return;
	}
	t->free_bad_size += s->size != size;
	s->dead = true;
}

/* HeapDestroyed. */
static inline void live_samples_destroyed(struct live_samples *t, uint64_t id)
{
	t->destroyed++;
	for (size_t i = 0; i < LIVE_SAMPLES_SLOTS; i++)
		if (t->slot[i].key && !t->slot[i].dead && (t->slot[i].key >> 48) == id) {
			t->slot[i].dead = true;
			t->ended_by_destroy++;
		}
}

/* Samples neither freed nor ended by their heap's destruction. */
static inline uint64_t live_samples_live(const struct live_samples *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < LIVE_SAMPLES_SLOTS; i++)
		n += t->slot[i].key && !t->slot[i].dead;
	return n;
}

static inline void live_samples_fini(struct live_samples *t)
{
	free(t->slot);
	t->slot = NULL;
}

#endif /* RASP_TEST_LIVE_SAMPLES_H */
