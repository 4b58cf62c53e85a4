/* Segments (runtime/segment.c), white-box through the OS seam and its clock: empty pages are
 * kept committed up to RASP__RETAIN_SLOTS and purged past it once they stayed empty from one
 * purge tick to the next, collect purges the rest and unmaps empty segments; segments with room
 * come first; released pages keep their blocks formatted; a cross-thread free in flight keeps its
 * segment mapped; a heap's blocks at 8 mod 16 (rasp__heap_block_offset). */
#define _GNU_SOURCE
#include <errno.h>
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

/* Checks that every object of objs[0..n) still holds its own byte (fill): no two objects share
 * memory. */
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
 * mapped, though a collect meanwhile finds the page empty and releases it: else an exited
 * thread's last object, freed by another thread while the heap's owner runs
 * rasp_heap_collect, has that thread read the unmapped page record (SIGSEGV). The next
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

static int count_object(void *obj, const rasp_type_t *type, size_t object_size, int kind, void *arg)
{
	(void)obj, (void)type, (void)object_size, (void)kind;
	++*(size_t *)arg;
	return 0;
}

/* librasp-malloc's placement: with the offset at 8, every block starts at 8 mod 16, so the
 * payload of every class whose blocks are multiples of 16 bytes is 16-aligned, for each block
 * of its pages (20 a class: past the 7 that a 64 KiB page of 8 KiB blocks holds now), and the
 * objects are whole, freed and walked as any. The offset is fixed once the heap has a
 * segment; 0 and 8 only. A heap left at 0 keeps its blocks 16-aligned. */
static void test_block_offset_places_blocks_at_8_mod_16(void **state)
{
	enum { PER = 20 };
	rasp_heap_t *h = make_heap(), *plain = make_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	const rasp_type_t *tp = rasp_type_register(plain, "t");
	static void *objs[RASP__NCLASS][PER];
	size_t classes = 0, walked = 0;
	void *q;

	(void)state;
	assert_int_equal(rasp__heap_block_offset(h, 4), -EINVAL);
	assert_int_equal(rasp__heap_block_offset(h, 16), -EINVAL);
	assert_int_equal(rasp__heap_block_offset(NULL, 8), -EINVAL);
	assert_int_equal(rasp__heap_block_offset(h, 8), 0);
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		size_t z = rasp__class_size[k];

		if (z % 16)
			continue;
		classes++;
		for (int i = 0; i < PER; i++) {
			void *p = rasp_alloc(h, t, z - RASP_OBJECT_HEADER_SIZE, 0);

			assert_non_null(p);
			assert_int_equal((uintptr_t)p % 16, 0);
			assert_int_equal(rasp_object_size(p), z);
			memset(p, (int)k, z - RASP_OBJECT_HEADER_SIZE);
			objs[k][i] = p;
		}
	}
	assert_int_equal(classes, RASP__NCLASS - 1 - 7); /* all but 24, 40, ..., 120 */
	assert_int_equal(rasp_heap_walk(h, count_object, &walked), 0);
	assert_int_equal(walked, classes * PER);
	assert_int_equal(rasp__heap_block_offset(h, 0), -EBUSY);
	assert_int_equal(rasp__heap_block_offset(h, 8), 0); /* (as it is) */
	for (unsigned k = 1; k < RASP__NCLASS; k++)
		for (int i = 0; i < PER && objs[k][i]; i++) {
			const unsigned char *b = objs[k][i];

			assert_true(b[0] == (unsigned char)k &&
				    b[rasp__class_size[k] - RASP_OBJECT_HEADER_SIZE - 1] ==
					(unsigned char)k);
			rasp_free(h, objs[k][i]);
		}
	/* A heap at the default offset: blocks 16-aligned, payloads 8 past. */
	q = rasp_alloc(plain, tp, 24, 0);
	assert_int_equal((uintptr_t)q % 16, 8);
	rasp_free(plain, q);
	rasp_heap_destroy(plain);
	rasp_heap_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_pages_purged_past_the_bound),
	    cmocka_unit_test(test_burst_reused_within_the_delay),
	    cmocka_unit_test(test_segments_with_room_first),
	    cmocka_unit_test(test_released_pages_keep_their_format),
	    cmocka_unit_test(test_remote_free_in_flight_keeps_segment),
	    cmocka_unit_test(test_block_offset_places_blocks_at_8_mod_16),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
