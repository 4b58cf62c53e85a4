/* Large objects with a mapping of their own (runtime/large.c), white-box through the OS seam
 * and its clock (the heap's arena_max_z set to 0, so every large object is one): mapped and
 * unmapped one by one, so memory goes back as it is freed, but for the bounded large-object
 * cache; a cached mapping reused, grown in place or moved for a larger object, its tail purged
 * at the second purge tick. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "internal.h"
#include "counting-os.h"

/* Large objects on mappings of their own (the heap's arena_max_z at 0): each given back at its
 * free without a collect, but for the bounded cache, which collect empties. */
static void test_large_objects_mapped_and_unmapped(void **state)
{
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	void *objs[100];
	rasp_heap_stats_t st;

	(void)state;
	h->arena_max_z = 0; /* each large object on a mapping of its own */
	rasp__os_set_ops(&counting);
	atomic_store(&unmaps, 0);
	for (int i = 0; i < 100; i++) {
		objs[i] = rasp_alloc(h, t, 100000 + (size_t)i * 5000, 0);
		assert_non_null(objs[i]);
		assert_int_equal(rasp_object_kind(objs[i]), RASP_KIND_LARGE);
	}
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 100);
	assert_true(st.live_bytes >= 100 * 100000);
	for (int i = 0; i < 100; i++)
		rasp_free(h, objs[i]);
	/* Freed: unmapped, but for the few the large-object cache keeps (bounded). */
	rasp_heap_stats(h, &st);
	assert_true(st.regions <= RASP__LARGE_CACHE_MAX);
	assert_true(st.reserved_bytes <= RASP__LARGE_CACHE_BYTES);
	assert_int_equal(st.live_bytes, 0);
	assert_true(atomic_load(&unmaps) >= 100 - RASP__LARGE_CACHE_MAX);
	/* Collect gives the cache back. */
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.reserved_bytes, 0);
	assert_int_equal(st.committed_bytes, 0);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* Are the addresses [a, a + len) free, so that a mapping ending at a can grow into them in
 * place? Probed with a mapping that may not replace one (a kernel without
 * MAP_FIXED_NOREPLACE, which places it elsewhere, reads as taken). */
static bool range_free(uintptr_t a, size_t len)
{
	void *m = mmap((void *)a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	if (m == MAP_FAILED)
		return false;
	munmap(m, len);
	return m == (void *)a;
}

/* A large buffer allocated and freed in a loop maps once (the cache hands its mapping back),
 * reads as written by this round only (a zeroed allocation is zero over a dirty mapping), and a
 * much smaller large object does not take a big cached mapping (under half of it). A free
 * of a cached object is refused as a double free. */
static void test_large_mappings_reused(void **state)
{
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	uint64_t before;
	unsigned char *p, *q;
	uint64_t grown, moved;
	rasp_heap_stats_t st;

	(void)state;
	h->arena_max_z = 0; /* each large object on a mapping of its own */
	rasp__os_set_ops(&counting);
	before = atomic_load(&maps);
	for (int i = 0; i < 1000; i++) {
		p = rasp_alloc_zeroed(h, t, 1, 300000, 0);
		assert_non_null(p);
		assert_int_equal(rasp_object_kind(p), RASP_KIND_LARGE);
		for (size_t j = 0; j < 300000; j += 4096)
			assert_int_equal(p[j], 0);
		memset(p, 0xab, 300000);
		rasp_free(h, p);
	}
	printf("1000 rounds of a 300000-byte object: %llu mappings\n",
	       (unsigned long long)(atomic_load(&maps) - before));
	assert_int_equal(atomic_load(&maps) - before, 1);
	/* p's mapping is cached now: freeing p again is refused and counted. */
	rasp_heap_stats(h, &st);
	rasp_free(h, p);
	before = st.invalid_frees;
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, before + 1);
	/* The cached 300 KB mapping serves a 100 KB object (at most 4x its size), and grows in
	 * place for a 1 MB one: the same address, no new mapping, every byte writable. Where it
	 * cannot grow, a new mapping, and the cached one stays. Growing in place needs the
	 * addresses past the mapping free, which the process's other mappings decide (a TSan
	 * run once had one there): where they are taken, the mapping moves instead (the move is
	 * tested on its own below). */
	before = atomic_load(&maps);
	q = rasp_alloc(h, t, 100000, 0);
	assert_ptr_equal(q, p);
	rasp_free(h, q);
	grown = atomic_load(&resizes);
	moved = atomic_load(&moves);
	{
		struct rasp__segment *s = rasp__segment_of(p);
		uintptr_t end = (uintptr_t)s + s->map_size;
		bool room = range_free(end, (uintptr_t)s + 1000000 + 8192 - end);

		q = rasp_alloc_zeroed(h, t, 1, 1000000, 0);
		assert_non_null(q);
		assert_int_equal(atomic_load(&resizes), grown + 1); /* tried in place first */
		if (room) {
			assert_ptr_equal(q, p);
			assert_int_equal(atomic_load(&moves), moved);
			assert_int_equal(atomic_load(&maps), before);
		} else {
			printf(
			    "note: the addresses past the cached mapping were taken; it moved\n");
			assert_int_equal(atomic_load(&moves), moved + 1);
			p = q; /* the cached mapping's address from here on */
		}
	}
	memset(q, 0xcd, 1000000);
	rasp_heap_stats(h, &st);
	assert_true(st.reserved_bytes >= 1000000 && st.reserved_bytes < 1000000 + 8192);
	assert_int_equal(st.committed_bytes, st.reserved_bytes); /* the one mapping, all used */
	rasp_free(h, q);
	/* Growth and the move refused: a fresh mapping (after the move's range was mapped and
	 * given back), and the cached one stays. */
	before = atomic_load(&maps);
	atomic_store(&resize_refused, true);
	atomic_store(&move_refused, true);
	q = rasp_alloc(h, t, 5000000, 0);
	assert_non_null(q);
	assert_ptr_not_equal(q, p);
	assert_int_equal(atomic_load(&maps) - before, 2);
	rasp_free(h, q);
	q = rasp_alloc(h, t, 1000000, 0);
	assert_ptr_equal(q, p); /* still cached */
	rasp_free(h, q);
	atomic_store(&resize_refused, false);
	atomic_store(&move_refused, false);
	assert_int_equal(atomic_load(&maps) - before, 2);
	/* Growth refused, the move not: a cached 1 MB mapping moves whole to a fresh aligned
	 * range and grows there (one range mapped, one move), its old address no longer mapped
	 * (a second free of the old object is refused, not read), every byte of the new one
	 * writable, committed as reserved. */
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_non_null(p = rasp_alloc(h, t, 1000000, 0));
	memset(p, 0x11, 1000000);
	rasp_free(h, p);
	atomic_store(&resize_refused, true);
	before = atomic_load(&maps);
	moved = atomic_load(&moves);
	q = rasp_alloc(h, t, 3000000, 0);
	atomic_store(&resize_refused, false);
	assert_non_null(q);
	assert_ptr_not_equal(q, p);
	assert_int_equal(((uintptr_t)q - 80) % RASP__SEGMENT_SIZE, 0);
	assert_int_equal(atomic_load(&maps) - before, 1);
	assert_int_equal(atomic_load(&moves) - moved, 1);
	assert_false(rasp__segment_mapped(rasp__segment_of(p)));
	assert_int_equal(rasp_object_kind(q), RASP_KIND_LARGE);
	memset(q, 0x22, 3000000);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 1);
	assert_true(st.reserved_bytes >= 3000000 && st.reserved_bytes < 3000000 + 8192);
	assert_int_equal(st.committed_bytes, st.reserved_bytes);
	before = st.invalid_frees;
	rasp_free(h, p);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, before + 1);
	rasp_free(h, q);
	/* Pinned: the same cache, its own kind. */
	p = rasp_alloc(h, t, 300000, RASP_ALLOC_PINNED);
	assert_non_null(p);
	assert_int_equal(rasp_object_kind(p), RASP_KIND_PINNED);
	rasp_free(h, p);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* The large-object cache scales with the large objects live: with 10 MiB of them live, 20
 * freed 1 MiB objects are all kept (the bound is 3x the live bytes, at most 32 MiB) and 20 new
 * ones map nothing; with none live, at most RASP__LARGE_CACHE_MIN is kept (the bound is
 * checked as a mapping joins the cache; what is there leaves at the ticks). A cached mapping
 * goes to the best fit of at least a quarter of its size, its tail purged two ticks on, and
 * back to the OS two purge ticks after it was cached. */
static void test_large_cache_bounds(void **state)
{
	enum { LIVE = 10, CHURN = 20, MB = 1 << 20 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	void *live[LIVE], *churn[CHURN], *p, *q, *first, *ops[2];
	uint64_t maps0, unmaps0, purged0, stat0, tail;
	rasp_heap_stats_t st;

	(void)state;
	h->arena_max_z = 0; /* each large object on a mapping of its own */
	rasp__os_set_ops(&counting);
	for (int i = 0; i < LIVE; i++)
		assert_non_null(live[i] = rasp_alloc(h, t, MB, 0));
	for (int i = 0; i < CHURN; i++)
		assert_non_null(churn[i] = rasp_alloc(h, t, MB, 0));
	unmaps0 = atomic_load(&unmaps);
	for (int i = 0; i < CHURN; i++)
		rasp_free(h, churn[i]);
	assert_int_equal(atomic_load(&unmaps), unmaps0);
	maps0 = atomic_load(&maps);
	for (int i = 0; i < CHURN; i++)
		assert_non_null(churn[i] = rasp_alloc(h, t, MB, 0));
	assert_int_equal(atomic_load(&maps), maps0);
	for (int i = 0; i < LIVE; i++)
		rasp_free(h, live[i]);
	for (int i = 0; i < CHURN; i++)
		rasp_free(h, churn[i]);
	assert_int_equal(rasp_heap_collect(h), 0);
	/* None live: the cache keeps RASP__LARGE_CACHE_MIN (growing sizes, no growing in place:
	 * none fits the last). */
	unmaps0 = atomic_load(&unmaps);
	atomic_store(&resize_refused, true);
	atomic_store(&move_refused, true);
	for (int i = 0; i < 8; i++)
		rasp_free(h, rasp_alloc(h, t, (size_t)MB + (size_t)i * MB / 8, 0));
	atomic_store(&resize_refused, false);
	atomic_store(&move_refused, false);
	rasp_heap_stats(h, &st);
	assert_true(st.reserved_bytes <= RASP__LARGE_CACHE_MIN);
	assert_true(st.regions <= 3); /* 1 + 1 1/8 + 1 1/4 MiB: the next does not fit */
	assert_int_equal(rasp_heap_collect(h), 0);
	/* Best fit within 4x: a 600 KB mapping serves 200 KB, not 140 KB. The 400 KB tail it
	 * leaves resident is purged at the second tick the object lives through, not at once;
	 * a 600 KB object taking the mapping again counts it committed again (the committed
	 * figure is 0 after the last collect only if every step kept it right). */
	assert_non_null(first = rasp_alloc(h, t, 600000, 0));
	memset(first, 0x5a, 600000);
	rasp_free(h, first);
	assert_non_null(q = rasp_alloc(h, t, 140000, 0));
	assert_ptr_not_equal(q, first);
	purged0 = atomic_load(&purged);
	rasp_heap_stats(h, &st);
	stat0 = st.purged_bytes;
	assert_non_null(p = rasp_alloc(h, t, 200000, 0));
	assert_ptr_equal(p, first);			 /* the same mapping */
	assert_int_equal(atomic_load(&purged), purged0); /* it may die young */
	advance(RASP__PURGE_DELAY_NS);
	ops[0] = page_op(h, t, 100);
	assert_int_equal(atomic_load(&purged), purged0); /* one tick: marked */
	advance(RASP__PURGE_DELAY_NS);
	ops[1] = page_op(h, t, 200);
	tail = atomic_load(&purged) - purged0;
	assert_true(tail >= 388 * 1024 && tail <= 396 * 1024);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.purged_bytes - stat0, tail);
	rasp_free(h, p);
	assert_non_null(p = rasp_alloc(h, t, 600000, 0));
	assert_ptr_equal(p, first); /* the same mapping, whole again */
	memset(p, 0x5a, 600000);
	rasp_free(h, q);
	rasp_free(h, p);
	rasp_free(h, ops[0]);
	rasp_free(h, ops[1]);
	/* Both cached now; two ticks on, both unmapped. */
	unmaps0 = atomic_load(&unmaps);
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, rasp_alloc(h, t, 500000, 0)); /* a large operation runs the tick */
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, rasp_alloc(h, t, 500000, 0));
	/* Left: the 600 KB mapping the 500000-byte objects took, cached at its last free, and the
	 * small pages' segment; the 140 KB mapping was unmapped. */
	assert_true(h->large_cache_n <= 1);
	rasp_heap_stats(h, &st);
	assert_true(st.reserved_bytes <= RASP__SEGMENT_SIZE + 600 * 1024);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.committed_bytes, 0);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* What a heap of large objects only counts committed: each mapping's size less its purged
 * tail, on every list (live, cached, cached at the last tick). */
static void check_large_committed(struct rasp_heap *h)
{
	struct rasp__segment *lists[3] = {h->large, h->large_cache, h->large_cache_old};
	rasp_heap_stats_t st;
	uint64_t sum = 0;
	unsigned tails = 0;

	for (int l = 0; l < 3; l++)
		for (struct rasp__segment *s = lists[l]; s; s = s->next) {
			sum += s->map_size - s->large_purged;
			tails += s->large_tail != 0;
		}
	assert_int_equal(rasp_heap_stats(h, &st), 0);
	assert_int_equal(st.committed_bytes, sum);
	assert_int_equal(h->large_tails, tails);
}

/* A reused large mapping's resident tail, step by step, with the committed figure checked
 * against the mappings at each: marked when an object leaves one (not when what it leaves is
 * already purged), unmarked at its free, purged at the second tick or at a collect, counted
 * committed again when an object reaches into it, and a purged mapping freed past the cache's
 * bound taken off exactly. The best fit, not the first: a 220 KB object takes a cached 250 KB
 * mapping, not a 400 KB one cached after it. */
static void test_large_tail_accounting(void **state)
{
	enum { MB = 1 << 20 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	void *p, *q, *first, *fill[4];
	uint64_t purged0;

	(void)state;
	h->arena_max_z = 0; /* each large object on a mapping of its own */
	rasp__os_set_ops(&counting);
	assert_non_null(first = rasp_alloc(h, t, 300000, 0));
	memset(first, 0x5a, 300000);
	rasp_free(h, first);
	check_large_committed(h);
	assert_non_null(q = rasp_alloc(h, t, 200000, 0)); /* leaves ~100 KB resident */
	assert_ptr_equal(q, first);
	assert_int_equal(h->large_tails, 1);
	check_large_committed(h);
	purged0 = atomic_load(&purged);
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, rasp_alloc(h, t, 2 * MB, 0)); /* large operations run the ticks */
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, rasp_alloc(h, t, 2 * MB, 0));
	assert_true(atomic_load(&purged) - purged0 >= 96 * 1024);
	assert_int_equal(h->large_tails, 0);
	check_large_committed(h);
	rasp_free(h, q);
	/* 230 KB leaves a tail over 1/8 of the mapping, all of it purged already: not marked,
	 * and the part it reaches into counts committed again. */
	assert_non_null(p = rasp_alloc(h, t, 230000, 0));
	assert_ptr_equal(p, first);
	assert_int_equal(h->large_tails, 0);
	check_large_committed(h);
	rasp_free(h, p);
	/* 200 KB again: marked (its tail reaches past what was purged), freed before a tick. */
	assert_non_null(p = rasp_alloc(h, t, 200000, 0));
	assert_ptr_equal(p, first);
	assert_int_equal(h->large_tails, 1);
	rasp_free(h, p);
	assert_int_equal(h->large_tails, 0);
	check_large_committed(h);
	/* Marked again, then a collect purges the tail at once. */
	assert_non_null(p = rasp_alloc(h, t, 200000, 0));
	assert_int_equal(h->large_tails, 1);
	purged0 = atomic_load(&purged);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_true(atomic_load(&purged) - purged0 >= 16 * 1024);
	assert_int_equal(h->large_tails, 0);
	check_large_committed(h);
	/* The cache filled to within 32 KiB of its bound (4 MiB once nothing else is live: three
	 * 1 MiB mappings and one of 1000000 bytes): p's purged mapping is unmapped at its free,
	 * and taken off the committed figure exactly. */
	for (int i = 0; i < 4; i++)
		assert_non_null(fill[i] = rasp_alloc(h, t, i < 3 ? MB : 1000000, 0));
	for (int i = 0; i < 4; i++)
		rasp_free(h, fill[i]);
	assert_int_equal(h->large_cache_n, 4);
	rasp_free(h, p);
	assert_int_equal(h->large_cache_n, 4);
	check_large_committed(h);
	assert_int_equal(rasp_heap_collect(h), 0);
	check_large_committed(h);
	/* Best fit: 250 KB cached, then 400 KB (the head of the list); 220 KB takes the 250. */
	assert_non_null(p = rasp_alloc(h, t, 250000, 0));
	assert_non_null(q = rasp_alloc(h, t, 400000, 0));
	first = p;
	rasp_free(h, p);
	rasp_free(h, q);
	assert_non_null(p = rasp_alloc(h, t, 220000, 0));
	assert_ptr_equal(p, first);
	rasp_free(h, p);
	assert_int_equal(rasp_heap_collect(h), 0);
	check_large_committed(h);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_large_cache_bounds),
	    cmocka_unit_test(test_large_tail_accounting),
	    cmocka_unit_test(test_large_objects_mapped_and_unmapped),
	    cmocka_unit_test(test_large_mappings_reused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
