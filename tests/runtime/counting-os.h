/* The OS seam of the segment, arena and large-object tests (test-segment.c, test-arena.c,
 * test-large.c): mmap, munmap, madvise and mremap counted, huge-page advice recorded, resizes and
 * moves refused on demand, and the purge ticks' clock moved by the test; a heap with sampling
 * off; a page operation; objects filled with their own bytes. */
#ifndef RASP_TEST_COUNTING_OS_H
#define RASP_TEST_COUNTING_OS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

static _Atomic uint64_t purged, maps, unmaps;
static inline void *counting_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	atomic_fetch_add(&maps, 1);
	return p == MAP_FAILED ? NULL : p;
}
static inline void counting_unmap(void *p, size_t size)
{
	atomic_fetch_add(&unmaps, 1);
	munmap(p, size);
}
static inline void counting_purge(void *p, size_t size)
{
	atomic_fetch_add(&purged, size);
	madvise(p, size, MADV_DONTNEED);
}
static _Atomic uint64_t no_huge_calls;
static _Atomic uintptr_t no_huge_addr, no_huge_size;
static inline void counting_no_huge(void *p, size_t size)
{
	atomic_fetch_add(&no_huge_calls, 1);
	atomic_store(&no_huge_addr, (uintptr_t)p);
	atomic_store(&no_huge_size, size);
	madvise(p, size, MADV_NOHUGEPAGE);
}
/* The purge ticks' clock, moved by the tests (advance). */
static _Atomic uint64_t fake_now = 1000000000u;
static inline uint64_t fake_clock(void)
{
	return atomic_load(&fake_now);
}
static inline void advance(uint64_t ns)
{
	atomic_fetch_add(&fake_now, ns);
}
/* mremap in place, counted; refused (as where the addresses past a mapping are taken) while
 * resize_refused is set. */
static _Atomic uint64_t resizes;
static _Atomic bool resize_refused;
static inline int counting_resize(void *p, size_t old_size, size_t new_size)
{
	if (atomic_load(&resize_refused))
		return -1;
	atomic_fetch_add(&resizes, 1);
	return mremap(p, old_size, new_size, 0) == MAP_FAILED ? -1 : 0;
}
/* mremap to a fixed address, counted; refused while move_refused is set. */
static _Atomic uint64_t moves;
static _Atomic bool move_refused;
static inline int counting_move(void *p, size_t old_size, size_t new_size, void *to)
{
	if (atomic_load(&move_refused))
		return -1;
	atomic_fetch_add(&moves, 1);
	return mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED ? -1
											      : 0;
}
static const struct rasp__os_ops counting = {counting_map,     counting_unmap, counting_purge,
					     counting_no_huge, fake_clock,     counting_resize,
					     counting_move};

static inline rasp_heap_t *make_heap(void)
{
	rasp_config_t cfg;
	rasp_heap_t *h;

	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_OFF;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	return h;
}

/* A page operation of the heap, where purge ticks run: the first object of a class not used
 * before (a new page). Returns the object. */
static inline void *page_op(rasp_heap_t *h, const rasp_type_t *t, size_t z)
{
	void *p = rasp_alloc(h, t, z, 0);

	assert_non_null(p);
	return p;
}

/* Fills objs[0..n) with its own byte each (check_fill, in test-segment.c, checks them). */
static inline void fill(void **objs, int n, size_t z, unsigned char tag)
{
	for (int i = 0; i < n; i++)
		memset(objs[i], (unsigned char)(tag + i), z);
}

#endif /* RASP_TEST_COUNTING_OS_H */
