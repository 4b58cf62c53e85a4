/* Segments and large objects (runtime/segment.c), white-box through the OS seam and its clock:
 * empty pages are kept committed up to RASP__RETAIN_SLOTS and purged past it once they stayed
 * empty from one purge tick to the next, collect purges the rest and unmaps empty segments;
 * large objects are carved from arenas whose free spans split and merge (their tags checked
 * whole after every step), or past RASP__ARENA_MAX_PAGES (and with the heap's arena_max_z
 * set to 0, as the mapping tests here do) mapped and unmapped one by one, so memory goes back
 * as it is freed. */
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

static _Atomic uint64_t purged, maps, unmaps;
static void *counting_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	atomic_fetch_add(&maps, 1);
	return p == MAP_FAILED ? NULL : p;
}
static void counting_unmap(void *p, size_t size)
{
	atomic_fetch_add(&unmaps, 1);
	munmap(p, size);
}
static void counting_purge(void *p, size_t size)
{
	atomic_fetch_add(&purged, size);
	madvise(p, size, MADV_DONTNEED);
}
static _Atomic uint64_t no_huge_calls;
static _Atomic uintptr_t no_huge_addr, no_huge_size;
static void counting_no_huge(void *p, size_t size)
{
	atomic_fetch_add(&no_huge_calls, 1);
	atomic_store(&no_huge_addr, (uintptr_t)p);
	atomic_store(&no_huge_size, size);
	madvise(p, size, MADV_NOHUGEPAGE);
}
/* The purge ticks' clock, moved by the tests (advance). */
static _Atomic uint64_t fake_now = 1000000000u;
static uint64_t fake_clock(void)
{
	return atomic_load(&fake_now);
}
static void advance(uint64_t ns)
{
	atomic_fetch_add(&fake_now, ns);
}
/* mremap in place, counted; refused (as where the addresses past a mapping are taken) while
 * resize_refused is set. */
static _Atomic uint64_t resizes;
static _Atomic bool resize_refused;
static int counting_resize(void *p, size_t old_size, size_t new_size)
{
	if (atomic_load(&resize_refused))
		return -1;
	atomic_fetch_add(&resizes, 1);
	return mremap(p, old_size, new_size, 0) == MAP_FAILED ? -1 : 0;
}
/* mremap to a fixed address, counted; refused while move_refused is set. */
static _Atomic uint64_t moves;
static _Atomic bool move_refused;
static int counting_move(void *p, size_t old_size, size_t new_size, void *to)
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

static rasp_heap_t *make_heap(void)
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
static void *page_op(rasp_heap_t *h, const rasp_type_t *t, size_t z)
{
	void *p = rasp_alloc(h, t, z, 0);

	assert_non_null(p);
	return p;
}

/* 64 MiB of 1000-byte objects freed but the first of each segment (so no segment empties and
 * is unmapped): pages empty one after another, and nothing is purged while the clock stands
 * still. Two purge ticks on (the first marks what is empty, the next purges what stayed so),
 * at most RASP__RETAIN_SLOTS slots are still committed: the committed figure is down to that
 * bound plus a page and the metadata per segment. */
static void test_empty_pages_purged_past_the_bound(void **state)
{
	enum { N = 65536 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **objs = malloc(N * sizeof(void *));
	rasp_heap_stats_t st;
	struct rasp__segment *prev = NULL;
	void *ops[2];

	(void)state;
	rasp__os_set_ops(&counting);
	atomic_store(&purged, 0);
	for (int i = 0; i < N; i++)
		assert_non_null(objs[i] = rasp_alloc(h, t, 1000, 0));
	rasp_heap_stats(h, &st);
	assert_true(st.committed_bytes >= (uint64_t)N * 1024);
	assert_true(st.live_bytes >= (uint64_t)(N - 1024) * 1024);
	for (int i = 1; i < N; i++) {
		if (rasp__segment_of(objs[i]) != rasp__segment_of(objs[0]) &&
		    rasp__segment_of(objs[i]) != prev) {
			prev = rasp__segment_of(objs[i]);
			continue; /* the first of its segment stays */
		}
		rasp_free(h, objs[i]);
		objs[i] = NULL;
	}
	assert_int_equal(atomic_load(&purged), 0); /* not at once */
	advance(RASP__PURGE_DELAY_NS);
	ops[0] = page_op(h, t, 100);
	advance(RASP__PURGE_DELAY_NS);
	ops[1] = page_op(h, t, 200);
	rasp_heap_stats(h, &st);
	printf("%llu segments, committed %llu, purged %llu\n", (unsigned long long)st.regions,
	       (unsigned long long)st.committed_bytes, (unsigned long long)atomic_load(&purged));
	assert_true(st.regions >= 16);
	assert_true(atomic_load(&purged) > 32u << 20);
	assert_int_equal(st.purged_bytes, atomic_load(&purged));
	assert_true(st.committed_bytes <=
		    (RASP__RETAIN_SLOTS + RASP__KEEP_EMPTY + 2) * RASP__SLOT_SIZE +
			st.regions * (RASP__SLOT_SIZE + 16384));
	for (int i = 0; i < N; i++)
		rasp_free(h, objs[i]);
	rasp_free(h, ops[0]);
	rasp_free(h, ops[1]);
	/* collect: everything back. */
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.committed_bytes, 0);
	assert_int_equal(st.reserved_bytes, 0);
	rasp__os_set_ops(NULL);
	free(objs);
	rasp_heap_destroy(h);
}

/* A burst freed and allocated again within the purge delay faults nothing in again: 32 MiB
 * of 1000-byte objects (8 segments) allocated, all freed, allocated again with the clock
 * standing still: nothing purged, no segment unmapped or mapped anew. (Purged at once, as
 * before, a program doing this in 10 MiB bursts ran 3.7x glibc's time, 100 page faults a
 * burst's MiB.) Then all freed and two ticks on, the empty segments go back to the OS but
 * one, and at most RASP__RETAIN_SLOTS slots stay committed; a slot used again between two
 * ticks is not purged by the second. */
static void test_burst_reused_within_the_delay(void **state)
{
	enum { N = 32768 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **objs = malloc(N * sizeof(void *));
	uint64_t maps0 = 0, purged0;
	rasp_heap_stats_t st;
	void *ops[2];

	(void)state;
	rasp__os_set_ops(&counting);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++)
			assert_non_null(objs[i] = rasp_alloc(h, t, 1000, 0));
		if (round == 0) {
			maps0 = atomic_load(&maps);
			atomic_store(&purged, 0);
			atomic_store(&unmaps, 0);
		}
		for (int i = 0; i < N; i++)
			rasp_free(h, objs[i]);
	}
	assert_int_equal(atomic_load(&maps), maps0);
	assert_int_equal(atomic_load(&purged), 0);
	assert_int_equal(atomic_load(&unmaps), 0);
	rasp_heap_stats(h, &st);
	assert_true(st.regions >= 8);
	/* A tick marks the empty slots; one segment's worth is used again before the next. The
	 * first tick since the bursts purges and unmaps nothing: what the last tick marked was
	 * used again by the second burst. */
	advance(RASP__PURGE_DELAY_NS);
	ops[0] = page_op(h, t, 100);
	assert_int_equal(atomic_load(&purged), 0);
	assert_int_equal(atomic_load(&unmaps), 0);
	for (int i = 0; i < 4000; i++)
		assert_non_null(objs[i] = rasp_alloc(h, t, 1000, 0));
	advance(RASP__PURGE_DELAY_NS);
	ops[1] = page_op(h, t, 200);
	rasp_heap_stats(h, &st);
	printf("%llu segments, committed %llu, purged %llu, unmapped %llu\n",
	       (unsigned long long)st.regions, (unsigned long long)st.committed_bytes,
	       (unsigned long long)atomic_load(&purged), (unsigned long long)atomic_load(&unmaps));
	/* The segment in use and the one with room stay; the others were unmapped. */
	assert_true(st.regions <= 3);
	assert_true(atomic_load(&unmaps) >= 5);
	assert_true(st.committed_bytes <=
		    (RASP__RETAIN_SLOTS + RASP__KEEP_EMPTY + 2) * RASP__SLOT_SIZE +
			st.regions * (RASP__SLOT_SIZE + 16384) + (uint64_t)4000 * 1024);
	/* The reused blocks kept their slots committed: writing them faults nothing new. */
	purged0 = atomic_load(&purged);
	for (int i = 0; i < 4000; i++)
		rasp_free(h, objs[i]);
	assert_int_equal(atomic_load(&purged), purged0);
	rasp_free(h, ops[0]);
	rasp_free(h, ops[1]);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	rasp__os_set_ops(NULL);
	free(objs);
	rasp_heap_destroy(h);
}

/* Every released page kept formatted (segment.c) is on its class's list exactly when its bit
 * is set, its slots are free and committed, and no two records share a slot. Returns how many
 * of class k there are. */
static unsigned check_formatted(struct rasp_heap *h, unsigned k)
{
	unsigned on_lists = 0, bits = 0, of_k = 0;

	for (unsigned c = 1; c < RASP__NCLASS; c++)
		for (struct rasp__page *pg = h->formatted[c]; pg; pg = pg->next) {
			struct rasp__segment *s = rasp__segment_of(pg);
			uint64_t m = (pg->span == 64 ? ~UINT64_C(0) : (UINT64_C(1) << pg->span) - 1)
				     << pg->slot;

			assert_int_equal(rasp__page_cls(pg), c);
			assert_ptr_equal(pg, &s->pages[pg->slot]);
			assert_true(s->formatted_slots & (UINT64_C(1) << pg->slot));
			assert_int_equal(s->free_slots & m, m);
			assert_int_equal(s->committed_slots & m, m);
			for (uint64_t f = s->formatted_slots & ~(UINT64_C(1) << pg->slot); f;
			     f &= f - 1) {
				const struct rasp__page *o = &s->pages[__builtin_ctzll(f)];

				assert_true(o->slot + o->span <= pg->slot ||
					    pg->slot + pg->span <= o->slot);
			}
			on_lists++;
			of_k += c == k;
		}
	for (struct rasp__segment *s = h->segments; s; s = s->next)
		bits += (unsigned)__builtin_popcountll(s->formatted_slots);
	assert_int_equal(bits, on_lists);
	return of_k;
}

static uint64_t refills(rasp_heap_t *h)
{
	rasp_heap_stats_t st;

	assert_int_equal(rasp_heap_stats(h, &st), 0);
	return st.refills;
}

/* Fills objs[0..n) with its own byte each; then checks every one still holds it (no two
 * objects share memory). */
static void fill(void **objs, int n, size_t z, unsigned char tag)
{
	for (int i = 0; i < n; i++)
		memset(objs[i], (unsigned char)(tag + i), z);
}
static void check_fill(void **objs, int n, size_t z, unsigned char tag)
{
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < z; j++)
			if (((unsigned char *)objs[i])[j] != (unsigned char)(tag + i))
				fail_msg("object %d (%p) byte %zu overwritten", i, objs[i], j);
}

/* A page released empty keeps its blocks formatted on its list, and the next page of its
 * class takes it whole: allocating a burst again after freeing it refills about once a page
 * (a page new to its class formats 4 KiB a refill: 16 a page of 200-byte blocks) and maps
 * nothing. A page of another class on those slots, and a purge, make the record go: the
 * class's next pages are formatted anew, and no object shares memory with another. */
static void test_released_pages_keep_their_format(void **state)
{
	enum { N = 20000, Z = 200, M = 12000 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **a = malloc(N * sizeof(void *)), **b = malloc(M * sizeof(void *));
	struct rasp__page *pg;
	uint64_t maps0, r0, pages;
	unsigned k, kept;
	rasp_heap_stats_t st;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	rasp__os_set_ops(&counting);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, Z, 0));
	pg = rasp__page_of(rasp__segment_of(rasp__header_of(a[0])), rasp__header_of(a[0]));
	k = rasp__page_cls(pg);
	rasp_heap_stats(h, &st);
	pages = st.pages;
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	kept = check_formatted(h, k);
#ifdef RASP__ASAN
	/* Kept, their free blocks stay poisoned: a write through a stale pointer is caught. */
	for (struct rasp__page *p = h->formatted[k]; p; p = p->next)
		assert_true(
		    __asan_address_is_poisoned((const void *)(p->start + RASP_OBJECT_HEADER_SIZE)));
#endif
	printf("%llu pages of class %u; %u kept formatted after the frees\n",
	       (unsigned long long)pages, k, kept);
	assert_true(kept + RASP__KEEP_EMPTY + 2 >= pages);
	/* Again: the kept pages are taken whole. */
	maps0 = atomic_load(&maps);
	r0 = refills(h);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, Z, 0));
	printf("burst again: %llu refills for %llu pages\n", (unsigned long long)(refills(h) - r0),
	       (unsigned long long)pages);
	assert_true(refills(h) - r0 <= pages + 8);
	assert_int_equal(atomic_load(&maps), maps0);
	assert_int_equal(check_formatted(h, k), 0);
	fill(a, N, Z, 1);
	check_fill(a, N, Z, 1);
	/* Another class on the released slots: the records there go, and the class formats
	 * again where it lands; nothing overlaps. */
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	assert_true(check_formatted(h, k) > 0);
	for (int i = 0; i < M; i++)
		assert_non_null(b[i] = rasp_alloc(h, t, 2 * Z, 0));
	check_formatted(h, k);
	fill(b, M, 2 * Z, 7);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, Z, 0));
	fill(a, N, Z, 3);
	check_fill(b, M, 2 * Z, 7);
	check_fill(a, N, Z, 3);
	/* A purge: the purged slots' records go (their memory reads back as zeros). */
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	for (int i = 0; i < M; i++)
		rasp_free(h, b[i]);
	assert_true(check_formatted(h, k) > 0);
	atomic_store(&purged, 0);
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, page_op(h, t, 5000));
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, page_op(h, t, 6000));
	assert_true(atomic_load(&purged) > 0);
	check_formatted(h, k);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, Z, 0));
	fill(a, N, Z, 5);
	check_fill(a, N, Z, 5);
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	/* A collect unmaps every segment: no record is left. */
	assert_int_equal(rasp_heap_collect(h), 0);
	check_formatted(h, k);
	for (unsigned c = 1; c < RASP__NCLASS; c++)
		assert_null(h->formatted[c]);
	rasp__os_set_ops(NULL);
	free(a);
	free(b);
	rasp_heap_destroy(h);
}

/* The segment list keeps segments with free slots before full ones (a page search stops at
 * the first full one). Fill 5 segments, free one page's objects in the oldest (now at the
 * tail): it moves to the head, and the next new page of that class lands in its freed slot
 * instead of a new segment's. The invariant is checked along the way. */
static void check_order(struct rasp_heap *h)
{
	struct rasp__segment *s, *last = NULL;
	bool full_seen = false;

	for (s = h->segments; s; last = s, s = s->next) {
		if (!s->free_slots)
			full_seen = true;
		else
			assert_false(full_seen); /* a segment with room after a full one */
		assert_ptr_equal(s->prev, last);
	}
	assert_ptr_equal(h->segments_tail, last);
}

static void test_segments_with_room_first(void **state)
{
	enum { N = 5 * 4096 }; /* 1000-byte objects: ~4,000 per 4 MiB segment */
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **objs = malloc(N * sizeof(void *));
	struct rasp__segment *first;
	uint64_t before;

	(void)state;
	assert_non_null(objs);
	for (int i = 0; i < N; i++) {
		objs[i] = rasp_alloc(h, t, 1000, 0);
		assert_non_null(objs[i]);
		if (i % 1024 == 0)
			check_order(h);
	}
	check_order(h);
	first = rasp__segment_of(objs[0]);
	assert_int_equal(first->free_slots, 0); /* full, so on the tail side */
	assert_ptr_not_equal(h->segments, first);
	/* Free every object of the oldest segment's second page. */
	struct rasp__page *pg = rasp__page_of(first, objs[0]);
	uintptr_t lo = (uintptr_t)first + (size_t)(pg->slot + pg->span) * RASP__SLOT_SIZE;
	struct rasp__page *second = rasp__page_of(first, (void *)(lo + 64));

	for (int i = 0; i < N; i++)
		if (objs[i] && rasp__segment_of(objs[i]) == first &&
		    rasp__page_of(first, objs[i]) == second) {
			rasp_free(h, objs[i]);
			objs[i] = NULL;
		}
	assert_int_equal(rasp_heap_collect(h), 0); /* the thread's lists go back: page empties */
	check_order(h);
	assert_ptr_equal(h->segments, first);
	before = h->regions_n;
	/* Allocate until the class needs a new page: it must come from the freed slot. */
	for (int i = 0; i < N; i++)
		if (!objs[i]) {
			objs[i] = rasp_alloc(h, t, 1000, 0);
			assert_non_null(objs[i]);
		}
	check_order(h);
	assert_int_equal(h->regions_n, before);
	for (int i = 0; i < N; i++)
		rasp_free(h, objs[i]);
	free(objs);
	rasp_heap_destroy(h);
}

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

/* ---- Arenas ------------------------------------------------------------------------------- */

static struct rasp__segment *arena_of(const void *obj)
{
	struct rasp__segment *s = rasp__mapping_of(rasp__header_of(obj));

	assert_int_equal(s->kind, RASP__SEG_ARENA);
	return s;
}

static uint32_t page_in(const void *obj)
{
	return (uint32_t)(((uintptr_t)obj - (uintptr_t)arena_of(obj)) >> RASP__ARENA_PAGE_SHIFT);
}

/* Pages a large object of `payload` bytes spans: its size word, header and payload. */
static uint32_t pages_for(size_t payload)
{
	size_t z = (payload + RASP_OBJECT_HEADER_SIZE + 7) & ~(size_t)7;

	return (uint32_t)((RASP__ARENA_HDR_OFFSET + z + 4095) >> RASP__ARENA_PAGE_SHIFT);
}

static bool bit(const uint64_t *map, uint32_t i)
{
	return (map[i / 64] >> (i % 64)) & 1;
}

/* Every invariant of arena s, read from its tags and maps: its spans tile the pages past the
 * header, tagged at both ends with the same length and state and 0 between; no two free spans
 * touch; the free map is the free spans; the counters agree. Returns the number of spans. */
static unsigned check_arena(const struct rasp__segment *s)
{
	const struct rasp__arena *a = &s->arena;
	uint32_t free_pages = 0, free_committed = 0, longest = 0, i;
	unsigned spans = 0;
	bool last_free = false;

	for (i = 0; i < a->first; i++) {
		assert_int_equal(a->tag[i], 0);
		assert_false(bit(a->free_map, i));
	}
	for (i = a->first; i < RASP__ARENA_PAGES;) {
		uint32_t t = a->tag[i], n = t >> RASP__ARENA_LEN_SHIFT, fr = t & RASP__ARENA_FREE;

		assert_true(t & RASP__ARENA_START);
		assert_true(n >= 1 && i + n <= RASP__ARENA_PAGES);
		assert_true(a->tag[i + n - 1] & RASP__ARENA_END);
		assert_int_equal(a->tag[i + n - 1] >> RASP__ARENA_LEN_SHIFT, n);
		assert_int_equal(a->tag[i + n - 1] & RASP__ARENA_FREE, fr);
		if (n > 1)
			assert_false(a->tag[i] & RASP__ARENA_END);
		for (uint32_t j = i + 1; j + 1 < i + n; j++)
			assert_int_equal(a->tag[j], 0);
		assert_false(fr && last_free); /* merged */
		for (uint32_t j = i; j < i + n; j++) {
			assert_int_equal(bit(a->free_map, j), fr != 0);
			if (!fr)
				assert_true(bit(a->committed_map, j)); /* a live span whole */
			else if (bit(a->committed_map, j))
				free_committed++;
		}
		if (fr) {
			free_pages += n;
			longest = n > longest ? n : longest;
		}
		last_free = fr != 0;
		spans++;
		i += n;
	}
	assert_int_equal(i, RASP__ARENA_PAGES);
	assert_int_equal(a->free_pages, free_pages);
	assert_int_equal(a->free_committed, free_committed);
	assert_true(a->max_free >= longest);
	return spans;
}

/* A heap of arenas only: its committed figure is each arena's header and committed pages, and
 * its free committed pages the arenas' sum. */
static void check_arenas(struct rasp_heap *h)
{
	uint64_t committed = 0, free_committed = 0;
	rasp_heap_stats_t st;

	for (struct rasp__segment *s = h->arenas; s; s = s->next) {
		check_arena(s);
		committed += s->arena.first;
		for (unsigned w = 0; w < RASP__ARENA_WORDS; w++)
			committed += (uint64_t)__builtin_popcountll(s->arena.committed_map[w]);
		free_committed += s->arena.free_committed;
	}
	assert_int_equal(h->arena_free_committed, free_committed);
	assert_int_equal(rasp_heap_stats(h, &st), 0);
	assert_int_equal(st.committed_bytes, committed << RASP__ARENA_PAGE_SHIFT);
}

/* Spans split and merge: objects laid end to end, a freed span taken again by a smaller
 * object (its rest a free span of its own), frees merging with free neighbours on either side
 * until the arena is one free span again; collect purges it and gives the arena back. */
static void test_arena_spans_split_and_merge(void **state)
{
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	unsigned char *a, *b, *c, *d;
	uint64_t purged0, unmaps0;
	rasp_heap_stats_t st;

	(void)state;
	rasp__os_set_ops(&counting);
	assert_non_null(a = rasp_alloc(h, t, 100000, 0));
	assert_non_null(b = rasp_alloc(h, t, 200000, 0));
	assert_non_null(c = rasp_alloc(h, t, 300000, RASP_ALLOC_PINNED));
	assert_int_equal(rasp_object_kind(a), RASP_KIND_LARGE);
	assert_int_equal(rasp_object_kind(c), RASP_KIND_PINNED);
	assert_int_equal((uintptr_t)a % 16, 0);
	assert_ptr_equal(arena_of(a), arena_of(c));
	assert_int_equal(page_in(a), arena_of(a)->arena.first);
	assert_int_equal(page_in(b), page_in(a) + pages_for(100000));
	assert_int_equal(page_in(c), page_in(b) + pages_for(200000));
	assert_int_equal(rasp_object_size(b), 200008);
	memset(a, 1, 100000);
	memset(b, 2, 200000);
	memset(c, 3, 300000);
	assert_int_equal(check_arena(arena_of(a)), 4); /* a, b, c, the free rest */
	check_arenas(h);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.live_bytes, 100008 + 200008 + 300008);
	assert_int_equal(st.regions, 1);

	rasp_free(h, b);
	assert_int_equal(check_arena(arena_of(a)), 4); /* a, free, c, free */
	check_arenas(h);
	assert_non_null(d = rasp_alloc(h, t, 150000, 0));
	assert_ptr_equal(d, b);			       /* the freed span, not the fresh rest */
	assert_int_equal(check_arena(arena_of(a)), 5); /* a, d, free, c, free */
	check_arenas(h);
	assert_int_equal(a[99999], 1);
	assert_int_equal(c[0], 3);

	rasp_free(h, a); /* before d: no free neighbour on its left, d on its right */
	assert_int_equal(check_arena(arena_of(c)), 5);
	rasp_free(h, d); /* a's span, d's and b's rest: one */
	assert_int_equal(check_arena(arena_of(c)), 3);
	assert_int_equal(arena_of(c)->arena.tag[arena_of(c)->arena.first] >> RASP__ARENA_LEN_SHIFT,
			 page_in(c) - arena_of(c)->arena.first);
	check_arenas(h);
	rasp_free(h, c); /* both sides */
	assert_int_equal(check_arena(h->arenas), 1);
	assert_int_equal(h->arenas->arena.free_pages, RASP__ARENA_PAGES - h->arenas->arena.first);
	check_arenas(h);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.live_bytes, 0);

	/* Nothing purged yet (the pages may serve the next objects); collect purges the free
	 * committed pages, then gives the arena back. */
	purged0 = atomic_load(&purged);
	unmaps0 = atomic_load(&unmaps);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_int_equal(atomic_load(&purged) - purged0,
			 (uint64_t)(pages_for(100000) + pages_for(200000) + pages_for(300000))
			     << RASP__ARENA_PAGE_SHIFT);
	assert_int_equal(atomic_load(&unmaps), unmaps0 + 1);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.committed_bytes, 0);
	assert_int_equal(st.reserved_bytes, 0);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* A free span with committed pages is taken before a tighter one whose pages were purged:
 * reusing them costs no page fault. */
static void test_arena_prefers_committed_pages(void **state)
{
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	void *x, *w, *v, *y, *p;
	uint32_t rest;

	(void)state;
	rasp__os_set_ops(&counting);
	assert_non_null(x = rasp_alloc(h, t, 300000, 0)); /* 74 pages */
	/* w and v fill the arena but for 30 pages, which y commits and collect purges. */
	rest = RASP__ARENA_PAGES - arena_of(x)->arena.first - pages_for(300000);
	assert_true(rest - 30 <= 2 * RASP__ARENA_MAX_PAGES);
	assert_non_null(w = rasp_alloc(h, t, (size_t)RASP__ARENA_MAX_PAGES * 4096 - 64, 0));
	assert_int_equal(pages_for((size_t)RASP__ARENA_MAX_PAGES * 4096 - 64),
			 RASP__ARENA_MAX_PAGES);
	assert_non_null(
	    v = rasp_alloc(h, t, (size_t)(rest - 30 - RASP__ARENA_MAX_PAGES) * 4096 - 64, 0));
	assert_ptr_equal(arena_of(w), arena_of(x));
	assert_ptr_equal(arena_of(v), arena_of(x));
	assert_non_null(y = rasp_alloc(h, t, 30 * 4096 - 64, 0));
	assert_ptr_equal(arena_of(y), arena_of(x));
	rasp_free(h, y);
	assert_int_equal(arena_of(x)->arena.free_committed, 30);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_int_equal(arena_of(x)->arena.free_committed, 0);
	rasp_free(h, x);
	check_arenas(h);
	/* 25 pages: the 30 purged pages fit tighter; x's 74 committed pages are taken. */
	assert_non_null(p = rasp_alloc(h, t, 100000, 0));
	assert_ptr_equal(p, x);
	check_arenas(h);
	rasp_free(h, p);
	rasp_free(h, w);
	rasp_free(h, v);
	check_arenas(h);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* An arena spans RASP__ARENA_UNITS units of 4 MiB: the segment map marks each, so objects
 * whose address is past the first unit are found, sized, resized and freed like any other, a
 * pointer inside one is refused, and once the arena is gone every unit of it is unmarked (a
 * stale pointer is refused without being read). Objects of up to RASP__ARENA_MAX_PAGES pages
 * (16 MB) are spans; one page more has a mapping of its own. */
static void test_arena_units_past_the_first(void **state)
{
	enum { N = 6 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	unsigned char *o[N], *r, *big;
	struct rasp__segment *s;
	rasp_heap_stats_t st;
	uint64_t bad;
	unsigned past = 0;

	(void)state;
	for (int i = 0; i < N; i++) { /* 1221 pages each: six of them reach unit 7 */
		assert_non_null(o[i] = rasp_alloc(h, t, 5000000, 0));
		memset(o[i] + 4999000, i + 1, 1000);
	}
	s = arena_of(o[0]);
	for (unsigned k = 0; k < RASP__ARENA_UNITS; k++)
		assert_int_equal(rasp__map_at((uintptr_t)s + ((uintptr_t)k << RASP__SEGMENT_SHIFT)),
				 RASP__MAP_START + k);
	for (int i = 0; i < N; i++) {
		assert_ptr_equal(arena_of(o[i]), s);
		past += rasp__segment_of(o[i]) != s;
		assert_int_equal(rasp_object_size(o[i]), 5000008);
		assert_ptr_equal(rasp_object_type(o[i]), t);
	}
	assert_true(past >= 4);
	rasp_heap_stats(h, &st);
	bad = st.invalid_frees;
	rasp_free(h, o[N - 1] + 4096); /* inside an object past the first unit */
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, bad + 1);
	assert_int_equal(check_arena(s), N + 1);
	/* Resized in place (shrunk) and moved (grown past its neighbour), its bytes kept. */
	assert_ptr_equal(rasp_realloc(h, o[N - 1], 4999999 + 1), o[N - 1]);
	assert_non_null(r = rasp_realloc(h, o[2], 6000000));
	for (int j = 4999000; j < 5000000; j++)
		assert_int_equal(r[j], 3);
	o[2] = r;
	check_arenas(h);
	/* The largest span, and one page more on a mapping of its own. */
	assert_non_null(big = rasp_alloc(h, t, (size_t)RASP__ARENA_MAX_PAGES * 4096 - 64, 0));
	assert_int_equal(rasp__mapping_of(rasp__header_of(big))->kind, RASP__SEG_ARENA);
	rasp_free(h, big);
	assert_non_null(big = rasp_alloc(h, t, (size_t)RASP__ARENA_MAX_PAGES * 4096, 0));
	assert_int_equal(rasp__mapping_of(rasp__header_of(big))->kind, RASP__SEG_LARGE);
	/* A mapping of its own marks its first unit only: a pointer 5 MiB in is refused unread. */
	assert_int_equal(rasp__map_at((uintptr_t)big), RASP__MAP_START);
	for (unsigned k = 1; k < 4; k++)
		assert_int_equal(rasp__map_at((uintptr_t)rasp__segment_of(big) +
					      ((uintptr_t)k << RASP__SEGMENT_SHIFT)),
				 0);
	rasp_free(h, big + (5u << 20));
	rasp_free(h, big);
	for (int i = 0; i < N; i++)
		rasp_free(h, o[i]);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, bad + 2);
	assert_int_equal(st.live_bytes, 0);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_null(h->arenas);
	for (unsigned k = 0; k < RASP__ARENA_UNITS; k++)
		assert_int_equal(rasp__map_at((uintptr_t)s + ((uintptr_t)k << RASP__SEGMENT_SHIFT)),
				 0);
	rasp_free(h, o[N - 1]); /* its unit unmarked: refused, not read */
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, bad + 3);
	rasp_heap_destroy(h);
}

/* Frees an arena cannot take are refused, named and counted, and change nothing: a double
 * free, a pointer inside a live object, one inside a free span, one in the arena's header, a
 * misaligned one. The live objects stay whole and freeable. */
static void test_arena_bad_frees_refused(void **state)
{
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	unsigned char *a, *b, *c, *d;
	struct rasp__segment *s;
	rasp_heap_stats_t st;
	uint64_t bad;
	void *bads[6];

	(void)state;
	assert_non_null(a = rasp_alloc(h, t, 100000, 0));
	assert_non_null(b = rasp_alloc(h, t, 100000, 0));
	memset(b, 7, 100000);
	s = arena_of(a);
	rasp_free(h, a);
	bads[0] = a;			       /* double free */
	bads[1] = b + 4096;		       /* inside b */
	bads[2] = (unsigned char *)b + 200000; /* the free rest */
	bads[3] = (unsigned char *)s + 256;    /* the header */
	bads[4] = b + 8;		       /* inside, 8 in */
	bads[5] = b + 3;		       /* misaligned */
	rasp_heap_stats(h, &st);
	bad = st.invalid_frees;
	for (int i = 0; i < 6; i++) {
		rasp_free(h, bads[i]);
		rasp_heap_stats(h, &st);
		assert_int_equal(st.invalid_frees, bad + 1 + (uint64_t)i);
		assert_int_equal(check_arena(s), 3); /* free (a), b, free */
	}
	assert_int_equal(st.live_bytes, 100008);
	/* A free span's first page may hold what an object wrote there, such as a word that
	 * reads as a live header: its span's tag refuses it. c zeroed, freed, and split by d;
	 * the rest starts inside c's old bytes. */
	assert_non_null(c = rasp_alloc(h, t, 300000, 0));
	memset(c, 0, 300000);
	rasp_free(h, c);
	assert_non_null(d = rasp_alloc(h, t, 200000, 0));
	assert_ptr_equal(d, c);
	rasp_free(h, (unsigned char *)s +
			 ((size_t)(page_in(d) + pages_for(200000)) << RASP__ARENA_PAGE_SHIFT) + 16);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, bad + 7);
	assert_int_equal(st.live_bytes, 100008 + 200008);
	assert_int_equal(check_arena(s), 4); /* free (a), b, d, free */
	rasp_free(h, d);
	assert_null(rasp_realloc(h, b + 4096, 10));
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, bad + 8);
	for (size_t j = 0; j < 100000; j += 4096)
		assert_int_equal(b[j], 7);
	rasp_free(h, b);
	assert_int_equal(check_arena(s), 1);
	check_arenas(h);
	rasp_heap_destroy(h);
}

/* An aligned large object sits inside its span (its own header there); its size, its walk
 * and its free find the span. A large object shrinks in place by up to half and moves to
 * grow, its bytes copied; a walk visits each live arena object once with its size. */
struct walked {
	int n;
	size_t bytes;
	void *want[2]; /* the objects the walk must report, each once */
	int seen[2];
};

static int count_walk(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	struct walked *w = arg;

	(void)type, (void)kind;
	for (int i = 0; i < 2; i++)
		w->seen[i] += obj == w->want[i];
	w->n++;
	w->bytes += z;
	return 0;
}

static void test_arena_aligned_and_resized(void **state)
{
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	unsigned char *p, *q, *r;
	struct walked w = {0, 0, {NULL, NULL}, {0, 0}};
	struct rasp__header *blk;
	const char *why;
	size_t pz = 0;

	(void)state;
	assert_non_null(p = rasp_alloc_aligned(h, t, 200000, 65536, 0));
	assert_int_equal((uintptr_t)p % 65536, 0);
	assert_int_equal(arena_of(p)->kind, RASP__SEG_ARENA);
	assert_true(rasp_object_size(p) >= 200000);
	memset(p, 9, 200000);
	assert_non_null(q = rasp_alloc(h, t, 400000, 0));
	for (int i = 0; i < 400000; i++)
		q[i] = (unsigned char)i;
	assert_ptr_equal(rasp_realloc(h, q, 250000), q); /* shrinks in place */
	assert_non_null(r = rasp_realloc(h, q, 900000));
	assert_ptr_not_equal(r, q);
	for (int i = 0; i < 250000; i++)
		assert_int_equal(r[i], (unsigned char)i);
	/* p's block: the span's, before p's own header, found from p's page back. */
	blk = rasp__arena_block(arena_of(p), rasp__header_of(p), &pz, &why);
	assert_non_null(blk);
	assert_ptr_not_equal(blk, rasp__header_of(p));
	assert_int_equal(((uintptr_t)blk & 4095), RASP__ARENA_HDR_OFFSET);
	assert_true(pz >= 200000 + 8);
	w.want[0] = p;
	w.want[1] = r;
	assert_int_equal(rasp_heap_walk(h, count_walk, &w), 0);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.seen[0], 1);
	assert_int_equal(w.seen[1], 1);
	assert_int_equal(w.bytes, rasp_object_size(r) + pz);
	check_arenas(h);
	rasp_free(h, p);
	rasp_free(h, r);
	assert_int_equal(check_arena(h->arenas), 1);
	check_arenas(h);
	rasp_heap_destroy(h);
}

/* The purge policy: free committed arena pages past arena_bound (the live large bytes, at
 * least RASP__LARGE_CACHE_MIN) that stayed free from one purge tick to the next are purged,
 * and an arena empty and purged whole is unmapped; a burst freed and taken again within the
 * delay purges nothing. */
static void test_arena_purge_ticks(void **state)
{
	enum { N = 16 };
	rasp_heap_t *h = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "big");
	void *objs[N];
	uint64_t purged0, unmaps0, maps0;
	unsigned arenas = 0;

	(void)state;
	rasp__os_set_ops(&counting);
	for (int i = 0; i < N; i++) /* 977 pages each: 8 to an arena */
		assert_non_null(objs[i] = rasp_alloc(h, t, 4000000, 0));
	for (struct rasp__segment *s = h->arenas; s; s = s->next)
		arenas++;
	assert_true(arenas >= 2);
	/* A burst freed and taken again at once: no purge, no mapping. */
	purged0 = atomic_load(&purged);
	maps0 = atomic_load(&maps);
	for (int i = 1; i < N; i++)
		rasp_free(h, objs[i]);
	check_arenas(h);
	assert_true(h->arena_free_committed > RASP__LARGE_CACHE_MIN >> RASP__ARENA_PAGE_SHIFT);
	for (int i = 1; i < N; i++)
		assert_non_null(objs[i] = rasp_alloc(h, t, 4000000, 0));
	assert_int_equal(atomic_load(&purged), purged0);
	assert_int_equal(atomic_load(&maps), maps0);
	/* Freed and left: the first tick marks, the second purges down to the bound. */
	for (int i = 1; i < N; i++)
		rasp_free(h, objs[i]);
	unmaps0 = atomic_load(&unmaps);
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, rasp_alloc(h, t, 100000, 0)); /* a large operation runs the tick */
	assert_int_equal(atomic_load(&purged), purged0);
	advance(RASP__PURGE_DELAY_NS);
	rasp_free(h, rasp_alloc(h, t, 100000, 0));
	assert_true(atomic_load(&purged) > purged0);
	assert_true(h->arena_free_committed <= RASP__LARGE_CACHE_MIN >> RASP__ARENA_PAGE_SHIFT);
	assert_true(atomic_load(&unmaps) > unmaps0); /* emptied arenas, purged whole, unmapped */
	check_arenas(h);
	rasp_free(h, objs[0]);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_null(h->arenas);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* Threads allocating and freeing large objects in shared arenas, half of their frees of the
 * other thread's objects (a mutex-guarded stack hands them over), while each reads a fixed live
 * object's size and usable size: those read its span's tags without the heap lock, and its
 * neighbours split and merge meanwhile. The sizes never change, every object keeps its bytes,
 * and the arenas' invariants hold after (TSan runs this test too). */
struct arena_share {
	rasp_heap_t *h;
	const rasp_type_t *t;
	unsigned char *fixed;
	size_t fixed_size, fixed_usable;
	pthread_mutex_t mu;
	unsigned char *stack[256];
	int n;
	_Atomic int bad;
};

static void *arena_churn(void *arg)
{
	struct arena_share *sh = arg;
	uint64_t x = (uint64_t)(uintptr_t)&x;

	for (int i = 0; i < 3000; i++) {
		size_t z = 85000 + (size_t)((x = x * 6364136223846793005u + 1) >> 40) % 400000;
		unsigned char *p = rasp_alloc(sh->h, sh->t, z, 0), *q = NULL;

		if (!p) {
			atomic_store(&sh->bad, 1);
			break;
		}
		memcpy(p, &z, sizeof(z)); /* its size at its start, its low byte at its end */
		p[z - 1] = (unsigned char)z;
		if (rasp_object_size(sh->fixed) != sh->fixed_size ||
		    rasp_usable_size(sh->fixed) != sh->fixed_usable || sh->fixed[0] != 0x77)
			atomic_store(&sh->bad, 1);
		pthread_mutex_lock(&sh->mu);
		if (sh->n < 256 && (x >> 63))
			sh->stack[sh->n++] = p, p = NULL;
		if (sh->n && (x >> 62 & 1))
			q = sh->stack[--sh->n];
		pthread_mutex_unlock(&sh->mu);
		if (p)
			rasp_free(sh->h, p);
		if (q) {
			size_t qz;

			memcpy(&qz, q, sizeof(qz));
			if (qz < 85000 || qz > rasp_usable_size(q) ||
			    q[qz - 1] != (unsigned char)qz)
				atomic_store(&sh->bad, 1);
			rasp_free(sh->h, q);
		}
	}
	return NULL;
}

static void test_arena_cross_thread(void **state)
{
	struct arena_share sh = {.h = make_heap()};
	pthread_t th[2];
	rasp_heap_stats_t st;

	(void)state;
	sh.t = rasp_type_register(sh.h, "big");
	pthread_mutex_init(&sh.mu, NULL);
	assert_non_null(sh.fixed = rasp_alloc(sh.h, sh.t, 200000, 0));
	memset(sh.fixed, 0x77, 200000);
	sh.fixed_size = rasp_object_size(sh.fixed);
	sh.fixed_usable = rasp_usable_size(sh.fixed);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, arena_churn, &sh), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(atomic_load(&sh.bad), 0);
	while (sh.n)
		rasp_free(sh.h, sh.stack[--sh.n]);
	for (size_t j = 0; j < 200000; j += 4096)
		assert_int_equal(sh.fixed[j], 0x77);
	check_arenas(sh.h);
	rasp_free(sh.h, sh.fixed);
	rasp_heap_stats(sh.h, &st);
	assert_int_equal(st.live_bytes, 0);
	assert_int_equal(st.invalid_frees, 0);
	pthread_mutex_destroy(&sh.mu);
	rasp_heap_destroy(sh.h);
}

struct one {
	rasp_heap_t *h;
	const rasp_type_t *t;
	void *obj;
};

static void *alloc_one(void *arg)
{
	struct one *o = arg;

	o->obj = rasp_alloc(o->h, o->t, 1000, 0);
	return NULL;
}

/* A cross-thread free that has put its block on the page's thread_free list but not yet read
 * the page's `full` and `ctx` (between rasp__page_push_begin and _end) keeps the segment
 * mapped, though a collect meanwhile finds the page empty and releases it: found by review,
 * where an exited thread's last object, freed by another thread while the heap's owner ran
 * rasp_heap_collect, had that thread read the unmapped page record (SIGSEGV). The next
 * collect unmaps it. Both pins: the freeing thread's context, and the segment's count for a
 * thread without one. */
static void remote_free_in_flight(bool with_context)
{
	struct one o = {make_heap(), NULL, NULL};
	struct rasp_context *c = NULL;
	struct rasp__header *hdr;
	struct rasp__segment *s;
	struct rasp__page *pg;
	pthread_t th;
	uint64_t before;

	rasp__os_set_ops(&counting);
	o.t = rasp_type_register(o.h, "t");
	/* Allocated by a thread that exits: its page is abandoned with one block out, the only
	 * page of the heap's only segment. */
	assert_int_equal(pthread_create(&th, NULL, alloc_one, &o), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_non_null(o.obj);
	if (with_context)
		assert_non_null(c = rasp__context_attach(o.h));
	hdr = rasp__header_of(o.obj);
	s = rasp__segment_of(hdr);
	pg = rasp__page_of(s, hdr);
	before = atomic_load(&unmaps);
	rasp__page_push_begin(c, pg, hdr, hdr); /* free_remote's push, stopped halfway */
	assert_int_equal(rasp_heap_collect(o.h), 0);
	assert_int_equal(pg->bsize, 0);			/* the page was released... */
	assert_int_equal(atomic_load(&unmaps), before); /* ...but its segment kept */
	rasp__page_push_end(c, pg);			/* reads the page record: mapped */
	assert_int_equal(rasp_heap_collect(o.h), 0);
	assert_int_equal(atomic_load(&unmaps), before + 1);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(o.h);
}

static void test_remote_free_in_flight_keeps_segment(void **state)
{
	(void)state;
	remote_free_in_flight(true);
	remote_free_in_flight(false);
}

static uint64_t stats_regions(rasp_heap_t *h)
{
	rasp_heap_stats_t st;

	assert_int_equal(rasp_heap_stats(h, &st), 0);
	return st.regions;
}

/* Small-object segments are advised against transparent huge pages (where the system's
 * policy is `always`, a first touch faulted in 2 MiB and the resident set stopped following
 * use): each new segment gets the advice over its whole range, unless RASP_THP=1; a value
 * other than 0 or 1 is taken as 0. Large objects' mappings keep the system's policy. */
static void test_segments_advised_against_huge_pages(void **state)
{
	const struct {
		const char *env;
		bool advised;
	} cases[] = {{NULL, true}, {"0", true}, {"1", false}, {"yes", true}};
	static void *more[5120];

	(void)state;
	rasp__os_set_ops(&counting);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rasp_heap_t *h;
		const rasp_type_t *t;
		void *small, *large;

		if (cases[i].env)
			setenv("RASP_THP", cases[i].env, 1);
		else
			unsetenv("RASP_THP");
		atomic_store(&no_huge_calls, 0);
		h = make_heap();
		t = rasp_type_register(h, "t");
		assert_non_null(small = rasp_alloc(h, t, 100, 0));
		assert_int_equal(atomic_load(&no_huge_calls), cases[i].advised);
		if (cases[i].advised) {
			assert_int_equal(atomic_load(&no_huge_addr),
					 (uintptr_t)rasp__segment_of(small));
			assert_int_equal(atomic_load(&no_huge_size), RASP__SEGMENT_SIZE);
		}
		assert_non_null(large = rasp_alloc(h, t, 17u << 20, 0)); /* past the arenas */
		assert_int_equal(atomic_load(&no_huge_calls), cases[i].advised);
		rasp_free(h, large);
		/* The heap keeps the value it was created with: a second segment after the
		 * variable changed (5 MiB of 1000-byte objects) gets the same treatment. */
		setenv("RASP_THP", cases[i].advised ? "1" : "0", 1);
		for (int j = 0; j < 5120; j++)
			assert_non_null(more[j] = rasp_alloc(h, t, 1000, 0));
		assert_true(stats_regions(h) >= 2);
		assert_int_equal(atomic_load(&no_huge_calls) > 1, cases[i].advised);
		assert_int_equal(atomic_load(&no_huge_calls) == 0, !cases[i].advised);
		for (int j = 0; j < 5120; j++)
			rasp_free(h, more[j]);
		rasp_free(h, small);
		rasp_heap_destroy(h);
	}
	unsetenv("RASP_THP");
	rasp__os_set_ops(NULL);
}

/* The same through the real OS: the kernel records the advice on the segment's mapping
 * (VmFlags "nh" in /proc/self/smaps), and not with RASP_THP=1. */
static bool mapping_has_flag(uintptr_t addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, found = false, seen = false;

	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = addr >= lo && addr < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			char *tok = strtok(line + 8, " \n");

			seen = true;
			for (; tok; tok = strtok(NULL, " \n"))
				found |= strcmp(tok, flag) == 0;
		}
	}
	fclose(f);
	assert_true(seen || !found); /* found implies seen; a kernel without VmFlags shows none */
	return found;
}

/* Whether this kernel takes the advice and shows it: a probe mapping advised by hand. */
static const char *kernel_refuses_advice(void)
{
	size_t z = 4u << 20;
	void *p = mmap(NULL, z, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const char *why = NULL;

	assert_true(p != MAP_FAILED);
	if (madvise(p, z, MADV_NOHUGEPAGE) != 0)
		why = "madvise(MADV_NOHUGEPAGE) refused (a kernel without transparent huge pages)";
	else if (!mapping_has_flag((uintptr_t)p, "nh"))
		why = "the kernel shows no VmFlags nh for an advised mapping";
	munmap(p, z);
	return why;
}

static void test_segment_mapping_carries_the_advice(void **state)
{
	const char *why = kernel_refuses_advice();

	(void)state;
	if (why) {
		printf("skipped: %s\n", why);
		skip();
	}
	for (int allow = 0; allow < 2; allow++) {
		rasp_heap_t *h;
		void *small;

		/* Before Linux 5.0 a process with THP disabled by prctl had nh on every mapping. */
		if (allow && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1) {
			printf("RASP_THP=1 half skipped: THP disabled for this process (prctl)\n");
			break;
		}
		setenv("RASP_THP", allow ? "1" : "0", 1);
		h = make_heap();
		assert_non_null(small = rasp_alloc(h, rasp_type_register(h, "t"), 100, 0));
		assert_int_equal(mapping_has_flag((uintptr_t)small, "nh"), !allow);
		rasp_free(h, small);
		rasp_heap_destroy(h);
	}
	unsetenv("RASP_THP");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_pages_purged_past_the_bound),
	    cmocka_unit_test(test_burst_reused_within_the_delay),
	    cmocka_unit_test(test_large_cache_bounds),
	    cmocka_unit_test(test_large_tail_accounting),
	    cmocka_unit_test(test_segments_with_room_first),
	    cmocka_unit_test(test_released_pages_keep_their_format),
	    cmocka_unit_test(test_large_objects_mapped_and_unmapped),
	    cmocka_unit_test(test_large_mappings_reused),
	    cmocka_unit_test(test_arena_spans_split_and_merge),
	    cmocka_unit_test(test_arena_prefers_committed_pages),
	    cmocka_unit_test(test_arena_units_past_the_first),
	    cmocka_unit_test(test_arena_bad_frees_refused),
	    cmocka_unit_test(test_arena_aligned_and_resized),
	    cmocka_unit_test(test_arena_purge_ticks),
	    cmocka_unit_test(test_arena_cross_thread),
	    cmocka_unit_test(test_remote_free_in_flight_keeps_segment),
	    cmocka_unit_test(test_segments_advised_against_huge_pages),
	    cmocka_unit_test(test_segment_mapping_carries_the_advice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
