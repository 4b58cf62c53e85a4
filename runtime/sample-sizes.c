/* The ObjectSize of each live sample of a heap that counts requested sizes
 * (rasp_config_t.requested_sizes: librasp-malloc's), kept by Address for its free: its block
 * does not tell it (the block's size is not the size asked). A table under the heap's lock,
 * open addressing at most half full; a put at each such sample, a take at its free (slow
 * paths only, about one allocation in a thousand at the default mean). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "internal.h"
#include "os.h"

/* The table's home slot of an address (Fibonacci hashing: blocks are 8-aligned and often
 * evenly spaced, which the multiplication spreads). */
static size_t size_slot(uintptr_t addr, size_t cap)
{
	return (size_t)(((uint64_t)addr * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (cap - 1);
}

/* Twice the slots (256 the first time), rehashed; heap->lock held. 0 or -ENOMEM. */
static int sizes_grow(struct rasp_heap *h)
{
	size_t cap = h->sizes_cap ? 2 * h->sizes_cap : 256, i, j;
	struct rasp__sample_size *t;

	if (cap > SIZE_MAX / 2 / sizeof(*t))
		return -ENOMEM;
	t = rasp__os_map(cap * sizeof(*t)); /* zeroed: every slot empty */
	if (!t)
		return -ENOMEM;
	for (i = 0; i < h->sizes_cap; i++) {
		if (!h->sizes[i].addr)
			continue;
		for (j = size_slot(h->sizes[i].addr, cap); t[j].addr; j = (j + 1) & (cap - 1))
			;
		t[j] = h->sizes[i];
	}
	if (h->sizes)
		rasp__os_unmap(h->sizes, h->sizes_cap * sizeof(*t));
	h->sizes = t;
	h->sizes_cap = cap;
	return 0;
}

/* The table is at most half full, so every probe below ends at an empty slot. */
int rasp__sample_size_put(struct rasp_heap *h, const void *addr, uint64_t z)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i;
	int err = 0;

	pthread_mutex_lock(&h->lock);
	if ((h->sizes_n + 1) * 2 > h->sizes_cap && (err = sizes_grow(h)) != 0)
		goto out;
	for (i = size_slot(a, h->sizes_cap); h->sizes[i].addr && h->sizes[i].addr != a;
	     i = (i + 1) & (h->sizes_cap - 1))
		;
	if (!h->sizes[i].addr)
		h->sizes_n++;
	h->sizes[i].addr = a;
	h->sizes[i].z = z;
out:
	pthread_mutex_unlock(&h->lock);
	return err;
}

/* Deleted by shifting back the entries of the same probe run after it (no tombstones: a
 * long-running program's table would fill with them). */
uint64_t rasp__sample_size_take(struct rasp_heap *h, const void *addr, uint64_t z)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i, j, k, mask;

	if (!h->cfg.requested_sizes)
		return z;
	pthread_mutex_lock(&h->lock);
	if (!h->sizes_cap)
		goto out;
	mask = h->sizes_cap - 1;
	for (i = size_slot(a, h->sizes_cap); h->sizes[i].addr && h->sizes[i].addr != a;
	     i = (i + 1) & mask)
		;
	if (!h->sizes[i].addr)
		goto out;
	z = h->sizes[i].z;
	for (j = (i + 1) & mask; h->sizes[j].addr; j = (j + 1) & mask) {
		k = size_slot(h->sizes[j].addr, h->sizes_cap);
		/* j's entry stays where its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		h->sizes[i] = h->sizes[j];
		i = j;
	}
	h->sizes[i].addr = 0;
	h->sizes_n--;
out:
	pthread_mutex_unlock(&h->lock);
	return z;
}

void rasp__sample_sizes_drop(struct rasp_heap *h)
{
	if (h->sizes)
		rasp__os_unmap(h->sizes, h->sizes_cap * sizeof(*h->sizes));
	h->sizes = NULL;
	h->sizes_cap = h->sizes_n = 0;
}
