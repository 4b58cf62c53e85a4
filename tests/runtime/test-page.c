/* Pages (runtime/page.c), white-box: every class's page record, a steady-state program does not
 * grow, short lists gathered across pages, woken pages taken in turn, sparse pages passed over, an
 * emptied current page kept or released, random replacement refilling rarely, remote frees into
 * full pages found before the class grows, an exited thread's pages adopted, and sampling exact
 * across reuse. The threaded tests run under TSan in CI. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/test-heap.h"
#include "internal.h"

static rasp_heap_t *make_heap(int sampling, uint64_t mean)
{
	rasp_heap_t *h = test_heap(sampling, mean, 77);

	assert_non_null(h);
	return h;
}

static rasp_heap_stats_t stats(rasp_heap_t *h)
{
	rasp_heap_stats_t st;

	assert_int_equal(rasp_heap_stats(h, &st), 0);
	return st;
}

static struct rasp__page *page_of(void *obj)
{
	return rasp__page_of(rasp__segment_of(obj), rasp__header_of(obj));
}

/* Every class's page record carries what the free's block check reads (the class's inverse,
 * on the record's first line): the block's start passes it, 8 bytes on and the next block
 * less 8 do not, the next block's start does; each object is freed, none refused. */
static void test_page_record_checks_every_class(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");

	(void)state;
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		size_t payload = rasp__class_size[k] - RASP_OBJECT_HEADER_SIZE;
		void *p = rasp_alloc(h, t, payload, 0);
		struct rasp__page *pg;
		char *hdr;

		assert_non_null(p);
		pg = page_of(p);
		hdr = (char *)rasp__header_of(p);
		assert_int_equal(rasp__page_cls(pg), k);
		assert_int_equal(pg->bsize, rasp__class_size[k]);
		assert_true(pg->div == rasp__page_div(rasp__class_size[k]));
		assert_true(rasp__page_has_block(pg, (struct rasp__header *)hdr));
		assert_false(rasp__page_has_block(pg, (struct rasp__header *)(hdr + 8)));
		if ((uintptr_t)hdr + 2 * pg->bsize <= pg->start + pg->bytes) {
			assert_false(
			    rasp__page_has_block(pg, (struct rasp__header *)(hdr + pg->bsize - 8)));
			assert_true(
			    rasp__page_has_block(pg, (struct rasp__header *)(hdr + pg->bsize)));
		}
		rasp_free(h, p);
	}
	assert_int_equal(stats(h).invalid_frees, 0);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_int_equal(stats(h).live_bytes, 0);
	rasp_heap_destroy(h);
}

/* A steady state (mixed sizes, a live set of 5000 replaced at random 2 million times) stays
 * within a bound of its live bytes: committed memory at the end is less than twice what it
 * was after the first 100000 replacements. */
static void test_steady_state_does_not_grow(void **state)
{
	enum { LIVE = 5000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 4096);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *live[LIVE] = {0};
	uint64_t x = 1, early = 0, late;

	(void)state;
	for (long i = 0; i < 2000000; i++) {
		size_t k, n;

		x = x * 6364136223846793005u + 1442695040888963407u;
		k = (x >> 33) % LIVE;
		n = 8 + (x >> 13) % ((x >> 60) ? 200 : 3000);
		rasp_free(h, live[k]);
		live[k] = rasp_alloc(h, t, n, 0);
		assert_non_null(live[k]);
		if (i == 100000)
			early = stats(h).committed_bytes;
	}
	late = stats(h).committed_bytes;
	printf("committed after 1e5 replacements %llu, after 2e6 %llu\n", (unsigned long long)early,
	       (unsigned long long)late);
	assert_true(late < 2 * early);
	for (int k = 0; k < LIVE; k++)
		rasp_free(h, live[k]);
	rasp_heap_destroy(h);
}

/* rounds replacements of a random one of n live objects by a new one of size z (x: the
 * generator's state, a 64-bit LCG). */
static void replace_at_random(rasp_heap_t *h, const rasp_type_t *t, void **live, int n, size_t z,
			      long rounds, uint64_t *x)
{
	for (long i = 0; i < rounds; i++) {
		*x = *x * 6364136223846793005u + 1442695040888963407u;
		int k = (int)((*x >> 33) % (uint64_t)n);

		rasp_free(h, live[k]);
		assert_non_null(live[k] = rasp_alloc(h, t, z, 0));
	}
}

/* Random replacement leaves a block or two free in each page. A refill gathers the lists of
 * several pages (at least 16 blocks when the queue has them), and a drained page leaves the
 * queue: 200000 replacements among 8000 live 1000-byte objects (~125 pages) take fewer than
 * one refill per 6 allocations (8.2 measured) and not a single new page. Before: one per 1.02
 * allocations without gathering; with it but the drained first page left on the queue, 135
 * pages became 366 (searches met SEARCH_MAX drained pages and mapped new ones). */
static void test_short_lists_are_gathered(void **state)
{
	enum { LIVE = 8000, ROUNDS = 200000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 102400);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **live = malloc(LIVE * sizeof(void *));
	uint64_t x = 7, pages, refills;

	(void)state;
	assert_non_null(live);
	for (int i = 0; i < LIVE; i++)
		assert_non_null(live[i] = rasp_alloc(h, t, 1000, 0));
	/* Replace a tenth at random: every page gets a few free blocks. */
	replace_at_random(h, t, live, LIVE, 1000, LIVE / 10, &x);
	pages = stats(h).pages;
	refills = stats(h).refills;
	replace_at_random(h, t, live, LIVE, 1000, ROUNDS, &x);
	refills = stats(h).refills - refills;
	printf("%d replacements: %llu refills, pages %llu -> %llu\n", ROUNDS,
	       (unsigned long long)refills, (unsigned long long)pages,
	       (unsigned long long)stats(h).pages);
	assert_true(refills < ROUNDS / 6);
	assert_true(stats(h).pages <= pages);
	for (int i = 0; i < LIVE; i++)
		rasp_free(h, live[i]);
	free(live);
	rasp_heap_destroy(h);
}

/* The owner's free cache (free.c) off for obj's class: its frees go to their pages' lists, as
 * frees past the cache's bound do, and the list is refilled only when used up (no top-up:
 * keep 1),
 * so that the page policy below is what a test sees. */
static void cache_off(rasp_heap_t *h, void *obj)
{
	struct rasp__window *w = &rasp__context_peek(h)->win[rasp__page_cls(page_of(obj))];

	w->keep = 1; /* (refilled when empty only: the least keep, rasp__alloc_miss) */
	w->cache_max = 0;
	rasp__window_set_cache(w, 0); /* and its flush bound: never */
	assert_int_equal(w->flush_at, INT32_MAX);
}

/* Three full pages of 1000-byte objects, A, B and C, in order (a segment's first page holds
 * fewer blocks than the others): their objects are a[at[i]] .. a[at[i + 1] - 1]. The
 * context's list is empty after it, and its free cache off for the class. */
static void **three_full_pages(rasp_heap_t *h, const rasp_type_t *t, uint32_t at[4])
{
	void **a = malloc(4096 * sizeof(void *));
	int pg = 0;
	uint32_t n = 0;

	assert_non_null(a);
	at[0] = 0;
	for (;;) {
		assert_true(n < 4096);
		assert_non_null(a[n] = rasp_alloc(h, t, 1000, 0));
		if (n == 0)
			cache_off(h, a[0]);
		if (n > 0 && page_of(a[n]) != page_of(a[n - 1]))
			at[++pg] = n;
		assert_true(pg < 3);
		n++;
		if (pg == 2 && n - at[2] == rasp__page_capacity(page_of(a[at[2]])))
			break;
	}
	at[3] = n;
	assert_int_equal(stats(h).pages, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(at[i + 1] - at[i], rasp__page_capacity(page_of(a[at[i]])));
		assert_true(page_of(a[at[i]])->in_full);
	}
	return a;
}

/* Pages woken by frees wait their turn: the page a free woke first is used first, having had
 * the longest to gather frees (mimalloc does the same). Taking the latest woken page first
 * took a page with one free block at nearly every refill under random replacement. A (20
 * frees) is woken before B (20 frees): the next allocation comes from A. */
static void test_woken_pages_wait_their_turn(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	uint32_t at[4];
	void **a = three_full_pages(h, t, at), *p;

	(void)state;
	for (uint32_t i = 0; i < 20; i++)
		rasp_free(h, a[at[0] + i]);
	for (uint32_t i = 0; i < 20; i++)
		rasp_free(h, a[at[1] + i]);
	p = rasp_alloc(h, t, 1000, 0);
	assert_ptr_equal(page_of(p), page_of(a[at[0]]));
	assert_int_equal(stats(h).pages, 3);
	free(a);
	rasp_heap_destroy(h);
}

/* A page with under a quarter of its blocks in use is passed over while another has blocks,
 * so it can empty and go back to its segment: with A nearly empty (all but 4 of its blocks
 * freed) and B woken after it with 1 free block, the next allocation comes from B, whose
 * blocks are then all in use. */
static void test_sparse_pages_are_passed_over(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	uint32_t at[4];
	void **a = three_full_pages(h, t, at), *p;
	struct rasp__page *b;

	(void)state;
	for (uint32_t i = at[0] + 4; i < at[1]; i++)
		rasp_free(h, a[i]);
	rasp_free(h, a[at[1]]);
	p = rasp_alloc(h, t, 1000, 0);
	b = page_of(a[at[1]]);
	assert_ptr_equal(page_of(p), b);
	assert_int_equal(rasp__relaxed_load32(&b->used), rasp__page_capacity(b));
	/* Nor did the refill gather A's free blocks: A's only blocks out are its four. */
	assert_int_equal(rasp__relaxed_load32(&page_of(a[at[0]])->used), 4);
	free(a);
	rasp_heap_destroy(h);
}

/* A page that empties while it is its class's current page stays (the next refill may take
 * it again); when a refill moves to another page instead, the empty page is kept under the
 * context's bound or released, as any other empty page, not left in the queue, empty and
 * uncounted, outside RASP__KEEP_EMPTY. A woken with one free block, then C
 * (current) emptied: the refill takes A, and C goes under the bound. */
static void test_empty_current_page_kept_or_released(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	uint32_t at[4];
	void **a = three_full_pages(h, t, at), *p;
	struct rasp__page *pc = page_of(a[at[2]]);
	struct rasp_context *c = rasp__context_peek(h);

	(void)state;
	assert_ptr_equal(c->win[rasp__page_cls(pc)].page, pc);
	rasp_free(h, a[at[0]]);
	for (uint32_t i = at[2]; i < at[3]; i++)
		rasp_free(h, a[i]);
	assert_int_equal(rasp__relaxed_load32(&pc->used), 0);
	assert_false(pc->kept_empty); /* current: not counted yet */
	p = rasp_alloc(h, t, 1000, 0);
	assert_ptr_equal(page_of(p), page_of(a[at[0]]));
	assert_ptr_not_equal(c->win[rasp__page_cls(pc)].page, pc);
	assert_true(pc->kept_empty);
	assert_int_equal(c->kept_empty, 1);
	free(a);
	rasp_heap_destroy(h);
}

/* Under random replacement of small objects a refill finds pages that gathered frees while
 * they waited, not one block each: 4096 live 240-byte objects replaced 200000 times take
 * fewer than one refill per 16 allocations (one per 23.2 measured; with the latest woken
 * page taken first, one per 12.4) and no new page. Deterministic: one thread, fixed seeds. */
static void test_random_replacement_refills_rarely(void **state)
{
	enum { LIVE = 4096, ROUNDS = 200000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 102400);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **live = malloc(LIVE * sizeof(void *));
	uint64_t x = 11, pages, refills;

	(void)state;
	assert_non_null(live);
	for (int i = 0; i < LIVE; i++)
		assert_non_null(live[i] = rasp_alloc(h, t, 240, 0));
	replace_at_random(h, t, live, LIVE, 240, LIVE, &x); /* to a steady state */
	pages = stats(h).pages;
	refills = stats(h).refills;
	replace_at_random(h, t, live, LIVE, 240, ROUNDS, &x);
	refills = stats(h).refills - refills;
	printf("%d replacements: %llu refills (one per %.1f), pages %llu -> %llu\n", ROUNDS,
	       (unsigned long long)refills, (double)ROUNDS / (double)refills,
	       (unsigned long long)pages, (unsigned long long)stats(h).pages);
	assert_true(refills < ROUNDS / 16);
	assert_true(stats(h).pages <= pages);
	for (int i = 0; i < LIVE; i++)
		rasp_free(h, live[i]);
	free(live);
	rasp_heap_destroy(h);
}

/* Allocates n objects of `size` into keep (each followed by the free of the one before it if
 * `churn`, which then keeps every other one); returns the most bytes one allocation's refill
 * formatted on the page it took. */
static uint32_t formatted_steps(rasp_heap_t *h, const rasp_type_t *t, size_t size, void **keep,
				int n, bool churn)
{
	enum { PAGES = 64 };
	struct rasp__page *seen[PAGES];
	uint32_t before[PAGES], most = 0;
	int np = 0;

	for (int i = 0; i < n; i++) {
		struct rasp__page *pg;
		int j = 0;

		assert_non_null(keep[i] = rasp_alloc(h, t, size, 0));
		pg = page_of(keep[i]);
		while (j < np && seen[j] != pg)
			j++;
		if (j == np) { /* a page new to this run: nothing formatted before */
			assert_true(np < PAGES);
			seen[np] = pg;
			before[np++] = 0;
		}
		if (pg->formatted - before[j] > most)
			most = pg->formatted - before[j];
		before[j] = pg->formatted;
		if (churn && i % 2) {
			rasp_free(h, keep[i - 1]);
			keep[i - 1] = NULL;
		}
	}
	return most;
}

/* A class that grows (no free of it between misses) has its pages formatted in chunks that
 * double, up to RASP__EXTEND_MAX: blocks of 1152 bytes, 56 a page, took 19 refills a page at
 * 4 KiB a chunk, here at most 8 (3, 3, 6, 14, 14, 14 and 2 blocks). A class whose frees come
 * back between its misses is formatted RASP__EXTEND_BYTES at a time, so that what it
 * formatted and did not use stays as small as before (`mixed`'s peak RSS). */
static void test_growing_class_formats_more_at_a_time(void **state)
{
	enum { N = 560 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **keep = calloc(N, sizeof(void *));
	uint64_t refills, pages;
	uint32_t most, b;

	(void)state;
	assert_non_null(keep);
	refills = stats(h).refills;
	most = formatted_steps(h, t, 1100, keep, N, false);
	b = page_of(keep[0])->bsize;
	refills = stats(h).refills - refills;
	pages = stats(h).pages;
	printf("growing, %u-byte blocks: %llu refills for %d objects on %llu pages, at most %u "
	       "bytes formatted at a time\n",
	       b, (unsigned long long)refills, N, (unsigned long long)pages, most);
	assert_int_equal(b, 1152);
	assert_int_equal(most, RASP__EXTEND_MAX / b * b);
	assert_true(refills <= 8 * pages);
	for (int i = 0; i < N; i++)
		rasp_free(h, keep[i]);
	rasp_heap_destroy(h);

	/* A heap of its own: none of its pages was formatted before (segment.c keeps released
	 * pages formatted for their class). */
	h = make_heap(RASP_SAMPLING_OFF, 1);
	t = rasp_type_register(h, "t");
	most = formatted_steps(h, t, 1100, keep, N, true);
	printf("frees between misses: at most %u bytes formatted at a time\n", most);
	assert_true(most <= RASP__EXTEND_BYTES && most > 0);
	for (int i = 0; i < N; i++)
		if (keep[i])
			rasp_free(h, keep[i]);
	assert_int_equal(stats(h).live_bytes, 0);
	free(keep);
	rasp_heap_destroy(h);
}

/* The full list without a fence per move (page.c): a page drained while another thread's
 * frees sat unseen on its thread_free list goes to the full list anyway, and the owner finds
 * them before it grows the class. Here the page's own blocks are all out, ten come back to the
 * owner and ten through another thread while the page is on the queue (so no wake-up); the
 * refill that takes the owner's ten drains the page to the full list with the other ten still
 * on it. The ten allocations after those must be exactly the other thread's ten, from the same
 * page, and no second page may be taken. */
static void *free_ten(void *arg)
{
	void **a = arg;
	rasp_heap_t *h = a[0];

	for (int i = 1; i <= 10; i++)
		rasp_free(h, a[i]);
	return NULL; /* the batch goes out at thread exit at the latest */
}

static int cmp_ptr(const void *x, const void *y)
{
	uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;

	return a < b ? -1 : a > b;
}

static void test_unseen_remote_frees_found_before_growing(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	struct rasp__page *pg;
	void **a, *remote[11], *got[10];
	uint32_t cap;
	pthread_t th;

	(void)state;
	a = malloc(sizeof(void *));
	a[0] = rasp_alloc(h, t, 48, 0);
	cache_off(h, a[0]);
	pg = rasp__page_of(rasp__segment_of(a[0]), rasp__header_of(a[0]));
	cap = rasp__page_capacity(pg);
	a = realloc(a, cap * sizeof(void *));
	for (uint32_t i = 1; i < cap; i++) {
		a[i] = rasp_alloc(h, t, 48, 0);
		assert_ptr_equal(rasp__page_of(rasp__segment_of(a[i]), rasp__header_of(a[i])), pg);
	}
	assert_int_equal(stats(h).pages, 1);
	assert_true(pg->in_full);
	for (int i = 0; i < 10; i++) /* the owner's: the page back on the queue */
		rasp_free(h, a[i]);
	assert_false(pg->in_full);
	remote[0] = h;
	for (int i = 1; i <= 10; i++)
		remote[i] = a[10 + i - 1];
	assert_int_equal(pthread_create(&th, NULL, free_ten, remote), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_non_null(atomic_load(&pg->thread_free));
	assert_int_equal(atomic_load(&rasp__context_peek(h)->full_dirty), 0); /* no wake-up */
	for (int i = 0; i < 10; i++) /* the owner's ten; the refill drains the page */
		assert_non_null(rasp_alloc(h, t, 48, 0));
	assert_true(pg->in_full);
	for (int i = 0; i < 10; i++)
		got[i] = rasp_alloc(h, t, 48, 0);
	assert_int_equal(stats(h).pages, 1);
	qsort(got, 10, sizeof(void *), cmp_ptr);
	qsort(remote + 1, 10, sizeof(void *), cmp_ptr);
	for (int i = 0; i < 10; i++)
		assert_ptr_equal(got[i], remote[1 + i]);
	free(a);
	rasp_heap_destroy(h);
}

/* An exited thread's pages are adopted by the next thread needing their class: allocating
 * again after a thread allocated 10000 objects and exited, and half of them were freed, takes
 * no new page until the freed blocks are used. */
static void *alloc_many(void *arg)
{
	void **objs = arg;
	rasp_heap_t *h = objs[0];
	const rasp_type_t *t = rasp_type_register(h, "t");

	for (int i = 1; i <= 10000; i++)
		objs[i] = rasp_alloc(h, t, 100, 0);
	return NULL;
}

static void test_exited_threads_pages_are_adopted(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **objs = calloc(10001, sizeof(void *));
	uint64_t pages;
	pthread_t th;

	(void)state;
	objs[0] = h;
	assert_int_equal(pthread_create(&th, NULL, alloc_many, objs), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	for (int i = 1; i <= 10000; i += 2)
		rasp_free(h, objs[i]);
	pages = stats(h).pages;
	for (int i = 1; i <= 10000; i += 2)
		objs[i] = rasp_alloc(h, t, 100, 0);
	assert_int_equal(stats(h).pages, pages);
	for (int i = 1; i <= 10000; i++)
		rasp_free(h, objs[i]);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_int_equal(stats(h).pages, 0);
	free(objs);
	rasp_heap_destroy(h);
}

/* Sampling stays exact across reuse: objects freed (by this thread, in random order) and
 * allocated again, and objects another thread frees, are sampled at the model's rate
 * sum(1 - q^b) within 4 standard errors. */
static _Atomic uint64_t sampled_n;
static void count(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
		  uint64_t offset, uint64_t mean)
{
	(void)arg, (void)kind, (void)type, (void)addr, (void)z, (void)offset, (void)mean;
	atomic_fetch_add(&sampled_n, 1);
}

static void test_sampling_exact_across_reuse(void **state)
{
	enum { LIVE = 3000, N = 600000 };
	const uint64_t mean = 8192;
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, mean);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *live[LIVE] = {0};
	double expect = 0, var = 0;
	uint64_t x = 5;

	(void)state;
	h->sample_hook = count;
	atomic_store(&sampled_n, 0);
	for (long i = 0; i < N; i++) {
		size_t k, n;
		double p;

		x = x * 6364136223846793005u + 1442695040888963407u;
		k = (x >> 33) % LIVE;
		n = 1 + (x >> 17) % 700;
		rasp_free(h, live[k]);
		live[k] = rasp_alloc(h, t, n, i % 97 == 0 ? RASP_ALLOC_PINNED : 0);
		p = -expm1((double)rasp_object_size(live[k]) * log1p(-1.0 / (double)mean));
		expect += p;
		var += p * (1 - p);
	}
	printf("%llu samples, model %.1f +- %.1f\n", (unsigned long long)atomic_load(&sampled_n),
	       expect, sqrt(var));
	assert_true(fabs((double)atomic_load(&sampled_n) - expect) <= 4 * sqrt(var));
	for (int k = 0; k < LIVE; k++)
		rasp_free(h, live[k]);
	rasp_heap_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page_record_checks_every_class),
	    cmocka_unit_test(test_steady_state_does_not_grow),
	    cmocka_unit_test(test_short_lists_are_gathered),
	    cmocka_unit_test(test_woken_pages_wait_their_turn),
	    cmocka_unit_test(test_sparse_pages_are_passed_over),
	    cmocka_unit_test(test_empty_current_page_kept_or_released),
	    cmocka_unit_test(test_random_replacement_refills_rarely),
	    cmocka_unit_test(test_growing_class_formats_more_at_a_time),
	    cmocka_unit_test(test_unseen_remote_frees_found_before_growing),
	    cmocka_unit_test(test_exited_threads_pages_are_adopted),
	    cmocka_unit_test(test_sampling_exact_across_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
