/* Large-object arenas (runtime/arena.c), white-box through the OS seam and its clock: objects
 * carved as spans whose free neighbours merge, every tag, map and counter checked against the
 * pages after each step; committed pages taken first; objects in units past the first; bad
 * frees refused; aligned and resized objects; purge ticks; two threads sharing arenas. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_arena_spans_split_and_merge),
	    cmocka_unit_test(test_arena_prefers_committed_pages),
	    cmocka_unit_test(test_arena_units_past_the_first),
	    cmocka_unit_test(test_arena_bad_frees_refused),
	    cmocka_unit_test(test_arena_aligned_and_resized),
	    cmocka_unit_test(test_arena_purge_ticks),
	    cmocka_unit_test(test_arena_cross_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
