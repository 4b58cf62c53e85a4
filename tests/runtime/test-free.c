/* Frees (runtime/free.c, runtime/remote.c), white-box: the owner's frees reused and cached on
 * its list up to the bound, then flushed to their pages (random frees leave few pages, a flush
 * never raises the bound, alternating allocations and frees keep full windows), frees while
 * another thread collects, other threads' frees reused and pushed in batches, and the frees of
 * sampled objects told once each, by their owner or another thread, never for an unsampled
 * object at a sampled one's address; invalid pointers counted by kind, logged rate-limited,
 * called back or aborted on (rasp_heap_set_error_handler). The threaded tests run under TSan
 * in CI. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/test-heap.h"
#include "internal.h"
#include "ledger.h"

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

/* Freed blocks come back: the second round of the same allocations takes no new page and
 * hands out exactly the blocks the first round freed. */
static void test_owner_frees_are_reused(void **state)
{
	enum { N = 20000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **a = malloc(N * sizeof(void *));
	uint64_t pages;
	int i, same = 0;

	(void)state;
	for (i = 0; i < N; i++)
		a[i] = rasp_alloc(h, t, 40, 0);
	pages = stats(h).pages;
	for (i = 0; i < N; i++)
		rasp_free(h, a[i]);
	for (i = 0; i < N; i++) {
		void *p = rasp_alloc(h, t, 40, 0);

		assert_non_null(p);
		same += rasp__segment_of(p) == rasp__segment_of(a[0]);
	}
	assert_int_equal(stats(h).pages, pages);
	assert_int_equal(same, N);
	free(a);
	rasp_heap_destroy(h);
}

/* The owner's frees go onto its context's list of the class (free.c), up to its bound, and
 * the next allocation takes the block freed last. Many frees past the bound give the whole
 * list back to its pages and turn the cache off until the class's next refill, which turns
 * it on at half its bound: a thread freeing far more than it allocates keeps no block, each
 * of which would keep its page from emptying. Live bytes stay exact, the pages empty and go
 * (all but the context's RASP__KEEP_EMPTY and its current one), and a collect leaves no
 * page. */
static void test_owner_frees_cached_up_to_the_bound(void **state)
{
	enum { N = 8000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **a = malloc(N * sizeof(void *)), *p;
	struct rasp__window *w;
	uint64_t pages;

	(void)state;
	assert_non_null(a);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, 200, 0));
	w = &rasp__context_peek(h)->win[rasp__page_cls(page_of(a[0]))];
	assert_true(w->cache == w->cache_max && w->cache > RASP__CACHE_MIN && w->cache < N / 4);
	rasp_free(h, a[N - 1]);
	p = rasp_alloc(h, t, 200, 0);
	assert_ptr_equal(p, a[N - 1]); /* the block freed last comes back first */
	pages = stats(h).pages;
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	/* One flush, then the cache off: the rest of the run went to the pages. */
	assert_int_equal(w->cache, 0);
	assert_int_equal(w->cache_after, w->cache_max / 2);
	assert_int_equal(w->rest, 0);
	assert_int_equal(stats(h).live_bytes, 0);
	printf("%d frees of %llu pages: bound %u (then %u) of %u, %u blocks kept, %llu pages "
	       "left\n",
	       N, (unsigned long long)pages, w->cache, w->cache_after, w->cache_max, w->rest,
	       (unsigned long long)stats(h).pages);
	assert_true(stats(h).pages <= RASP__KEEP_EMPTY + 1);
	/* The next refill turns it on at half the bound it had. */
	assert_non_null(p = rasp_alloc(h, t, 200, 0));
	assert_int_equal(w->cache, w->cache_max / 2);
	/* The refill's list may be longer than the bound (a page formatted while the class
	 * grew: rasp__page_extend): allocated down below it, so that the next free is cached. */
	int more = 0;

	while (w->rest >= w->cache)
		assert_non_null(a[more++] = rasp_alloc(h, t, 200, 0));
	rasp_free(h, p);
	assert_ptr_equal(rasp_alloc(h, t, 200, 0), p); /* cached again: back first */
	rasp_free(h, p);
	while (more > 0)
		rasp_free(h, a[--more]);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_int_equal(stats(h).live_bytes, 0);
	assert_int_equal(stats(h).pages, 0);
	/* Allocating again: refills raise the bound back to its most. */
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, 200, 0));
	assert_int_equal(w->cache, w->cache_max);
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	free(a);
	rasp_heap_destroy(h);
}

/* Frees in random order, so that the blocks a cache keeps are each on another
 * page. 400000 objects of 8 bytes (98 pages), all freed: with the bound kept at its most
 * (4096 blocks of 16 bytes) every page kept a block and none emptied; now a flush turns the
 * cache off until the next refill, and few pages are left. */
static void random_frees(bool interleave, int collect_every)
{
	enum { N = 400000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **a = malloc(N * sizeof(void *));
	uint64_t x = 3, pages;

	assert_non_null(a);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, 8, 0));
	pages = stats(h).pages;
	for (int i = N - 1; i > 0; i--) {
		int j;
		void *o;

		x = x * 6364136223846793005u + 1442695040888963407u;
		j = (int)((x >> 33) % (uint64_t)(i + 1));
		o = a[i];
		a[i] = a[j];
		a[j] = o;
	}
	for (int i = 0; i < N; i++) {
		rasp_free(h, a[i]);
		/* With an allocation now and then (freed at once): a top-up raising the bound
		 * back 4x each time would leave 400 of 980 pages. */
		if (interleave && i % 1000 == 999)
			rasp_free(h, rasp_alloc(h, t, 8, 0));
		/* A collect empties the list between a flush's countdown and the next: the
		 * cache's pushes that refill it take the count past 0 untested, and a flush
		 * due at exactly 0 never comes (99 of 99 pages kept, a collect every 6000). */
		if (collect_every && i % collect_every == collect_every - 1)
			assert_int_equal(rasp_heap_collect(h), 0);
	}
	printf("%d random frees%s%s: pages %llu -> %llu\n", N,
	       interleave ? ", an allocation every 1000" : "",
	       collect_every ? ", a collect every 6000" : "", (unsigned long long)pages,
	       (unsigned long long)stats(h).pages);
	assert_true(pages > 60);
	assert_true(stats(h).pages <= RASP__CACHE_MIN + RASP__KEEP_EMPTY + 2);
	assert_int_equal(stats(h).live_bytes, 0);
	free(a);
	rasp_heap_destroy(h);
}

static void test_random_frees_leave_few_pages(void **state)
{
	(void)state;
	random_frees(false, 0);
	random_frees(true, 0);
	random_frees(false, 6000);
}

/* A flush leaves half the bound for the next refill, down to 8 blocks, or to the class's most
 * where that is less: for blocks of 9 KiB and up (a bound of 4 to 7) a floor of 8 raised it
 * to 8. */
static void test_flush_never_raises_the_bound(void **state)
{
	enum { N = 400 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *a[N];
	struct rasp__window *w;

	(void)state;
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, 16000, 0));
	w = &rasp__context_peek(h)->win[rasp__page_cls(page_of(a[0]))];
	assert_true(w->cache_max < RASP__CACHE_MIN);
	for (int i = 0; i < N; i++)
		rasp_free(h, a[i]);
	printf("16000-byte blocks: bound %u (then %u) of %u after %d frees\n", w->cache,
	       w->cache_after, w->cache_max, N);
	assert_int_equal(w->cache, 0); /* off after the flush */
	assert_true(w->cache_after > 0 && w->cache_after <= w->cache_max);
	assert_int_equal(stats(h).live_bytes, 0);
	rasp_heap_destroy(h);
}

/* Allocations and frees alternating at one size keep full windows: after the list is topped
 * up to a window (one refill per RASP__EXTEND_BYTES its fresh page formats), the owner's
 * frees keep it at `keep` blocks, so a miss comes once per window (wb allocations) and no
 * refill after. Without the top-up the list stays as short as it was when the alternation
 * began (here 3 blocks: a miss every 2 allocations). */
static void test_alternating_keeps_full_windows(void **state)
{
	enum { ROUNDS = 100000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	struct rasp_context *c;
	struct rasp__hot *hc;
	void *keep[3], *q;
	uint64_t refills, per_extend;
	intptr_t last;
	long misses = 0;
	unsigned k;

	(void)state;
	q = rasp_alloc(h, t, 100, 0);
	c = rasp__context_peek(h);
	k = rasp__page_cls(page_of(q));
	hc = &c->hot[k];
	/* Leave the list 3 blocks long: use it up, then free 3 blocks taken before. */
	for (int i = 0; i < 3; i++)
		assert_non_null(keep[i] = rasp_alloc(h, t, 100, 0));
	while (hc->n + c->win[k].rest > 0)
		assert_non_null(rasp_alloc(h, t, 100, 0));
	for (int i = 0; i < 3; i++)
		rasp_free(h, keep[i]);
	assert_int_equal(hc->n + c->win[k].rest, 3);
	refills = stats(h).refills;
	last = hc->n;
	for (long i = 0; i < ROUNDS; i++) {
		void *p = rasp_alloc(h, t, 100, 0);

		assert_non_null(p);
		misses += hc->n > last; /* a miss set a new window */
		last = hc->n;
		rasp_free(h, q);
		q = p;
	}
	refills = stats(h).refills - refills;
	printf("%d alternations: %ld misses (window %u blocks), %llu refills\n", ROUNDS, misses,
	       c->win[k].wb, (unsigned long long)refills);
	assert_true(misses <= ROUNDS / (long)c->win[k].wb + 2);
	/* The top-ups: a window's blocks, formatted RASP__EXTEND_BYTES at a time. */
	per_extend = RASP__EXTEND_BYTES / hc->bsize * hc->bsize;
	if (per_extend < hc->bsize) /* blocks past RASP__EXTEND_BYTES: one at a time */
		per_extend = hc->bsize;
	assert_true(refills <= (c->win[k].wb * (uint64_t)hc->bsize + per_extend - 1) / per_extend);
	rasp_free(h, q);
	rasp_heap_destroy(h);
}

/* rasp_free may run while another thread collects (rasp.h): the collect ends the freeing
 * thread's windows while its frees push onto the same context's lists (free.c), so a window
 * ended is counted apart from the blocks pushed (rasp__window.retired). Under TSan in CI a
 * shared count would be a reported race; here every block must come back: live bytes 0 and
 * no page left once the freeing thread's next slow path and a last collect have run. */
struct free_while_collect {
	rasp_heap_t *h;
	const rasp_type_t *t;
	atomic_int phase; /* 1: allocated, 2: freed, 3: may allocate again */
};

static void *free_while_collected(void *arg)
{
	struct free_while_collect *f = arg;
	enum { N = 20000 };
	void **a = malloc(N * sizeof(void *));

	assert_non_null(a);
	for (int i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(f->h, f->t, 24 + (size_t)(i % 7) * 40, 0));
	atomic_store(&f->phase, 1);
	for (int i = 0; i < N; i++)
		rasp_free(f->h, a[i]);
	atomic_store(&f->phase, 2);
	while (atomic_load(&f->phase) != 3)
		;
	for (int i = 0; i < N; i++) /* through the trim the collects asked for */
		assert_non_null(a[i] = rasp_alloc(f->h, f->t, 24 + (size_t)(i % 7) * 40, 0));
	for (int i = 0; i < N; i++)
		rasp_free(f->h, a[i]);
	free(a);
	return NULL;
}

static void test_frees_concurrent_with_collect(void **state)
{
	struct free_while_collect f = {.h = make_heap(RASP_SAMPLING_ON, 4096)};
	pthread_t th;
	int collects = 0;

	(void)state;
	f.t = rasp_type_register(f.h, "t");
	atomic_init(&f.phase, 0);
	assert_int_equal(pthread_create(&th, NULL, free_while_collected, &f), 0);
	while (atomic_load(&f.phase) == 0)
		;
	do { /* the other thread frees meanwhile */
		assert_int_equal(rasp_heap_collect(f.h), 0);
		collects++;
	} while (atomic_load(&f.phase) == 1);
	atomic_store(&f.phase, 3);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(rasp_heap_collect(f.h), 0);
	printf("%d collects during the frees\n", collects);
	assert_int_equal(stats(f.h).live_bytes, 0);
	rasp_heap_destroy(f.h);
}

/* Producer/consumer: the consumer frees what the producer allocated (cross-thread frees, in
 * batches). The producer's pages fill, go to its full list, and come back when the consumer's
 * frees reach them: after 2 million objects through a window of at most 4096 live ones, the
 * heap holds a handful of pages, not the 2 million objects' worth. */
#define RING 4096
static void *ring[RING];
static _Atomic long prod_n, cons_n;

static void *consume(void *arg)
{
	rasp_heap_t *h = arg;
	long total = 2000000;

	/* This thread also allocates (so it has a context and batches its frees). */
	rasp_free(h, rasp_alloc(h, rasp_type_register(h, "c"), 8, 0));
	for (long i = 0; i < total; i++) {
		while (atomic_load(&prod_n) == i)
			;
		rasp_free(h, ring[i % RING]);
		atomic_store(&cons_n, i + 1);
	}
	return NULL;
}

static void test_cross_thread_frees_are_reused(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 4096);
	const rasp_type_t *t = rasp_type_register(h, "t");
	rasp_heap_stats_t st;
	pthread_t th;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, consume, h), 0);
	for (long i = 0; i < 2000000; i++) {
		void *p = rasp_alloc(h, t, 24 + (size_t)(i % 5) * 8, 0);

		assert_non_null(p);
		while (i - atomic_load(&cons_n) >= RING)
			;
		ring[i % RING] = p;
		atomic_store(&prod_n, i + 1);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	st = stats(h);
	printf("pages %llu, committed %llu bytes\n", (unsigned long long)st.pages,
	       (unsigned long long)st.committed_bytes);
	/* 4096 live objects of <= 64 bytes fit in 5 pages; the slack covers one batch and one
	 * list per class per thread. */
	assert_true(st.pages <= 32);
	assert_int_equal(st.invalid_frees, 0);
	rasp_heap_destroy(h);
}

/* Batching: another thread's frees of one page are queued and pushed as one list; the owner
 * sees them only after the push (at the freeing thread's next slow path or batch end). */
static void *free_some(void *arg)
{
	void **objs = arg;
	rasp_heap_t *h = objs[0];
	const rasp_type_t *t = rasp_type_register(h, "f");
	struct rasp_context *c;
	struct rasp__page *pg;

	rasp_free(h, rasp_alloc(h, t, 8, 0)); /* a context of its own: frees are batched */
	c = rasp__context_peek(h);
	pg = rasp__page_of(rasp__segment_of(objs[1]), rasp__header_of(objs[1]));
	for (int i = 1; i <= 10; i++)
		rasp_free(h, objs[i]);
	/* Queued, not pushed. */
	assert_int_equal(c->batch_n, 10);
	assert_null(atomic_load(&pg->thread_free));
	rasp__batch_flush(c);
	assert_non_null(atomic_load(&pg->thread_free));
	return NULL;
}

static void test_cross_thread_frees_are_batched(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *objs[11];
	pthread_t th;

	(void)state;
	objs[0] = h;
	for (int i = 1; i <= 10; i++)
		objs[i] = rasp_alloc(h, t, 32, 0);
	assert_int_equal(pthread_create(&th, NULL, free_some, objs), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* The owner collects them at its next list refill: all ten come back. */
	struct rasp__page *pg = rasp__page_of(rasp__segment_of(objs[1]), rasp__header_of(objs[1]));
	assert_int_equal(rasp__page_collect(pg), 10);
	rasp_heap_destroy(h);
}

/* The mark of an object whose sample was seen (the hook here, a session in a program) says
 * whether its free is told: checked against the ledger before each free. For an aligned object
 * the sample names its block (rasp__block_of finds it). */
static bool marked_as_sampled(struct ledger *l, rasp_heap_t *h, void *obj)
{
	struct rasp__segment *s;
	struct rasp__header *b = rasp__block_of(h, obj, "test", &s);

	assert_non_null(b);
	return rasp__hdr_sampled(rasp__header_of(obj)) == ledger_live(l, b + 1);
}

/* A walk's view of every live object: its type (a marked header's type is read without its
 * mark) and its kind. */
static int walk_type(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	(void)z;
	return type != arg || rasp_object_type(obj) != arg || kind != rasp_object_kind(obj) ||
	       kind < 0 || kind > RASP_KIND_PINNED;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One object of a mix the free paths take apart: small (the owner's cache and its pages),
 * pinned, large in an arena, large in a mapping of its own, aligned inside a small block and
 * inside a large one. */
static void *alloc_mixed(rasp_heap_t *h, const rasp_type_t *t, uint64_t r)
{
	switch (r % 16) {
	case 0:
		return rasp_alloc(h, t, 200, RASP_ALLOC_PINNED);
	case 1:
		return rasp_alloc(h, t, 90000 + (size_t)(r >> 8) % 200000, 0);
	case 2:
		return (r >> 8) % 64 ? rasp_alloc(h, t, 3000, 0)
				     : rasp_alloc(h, t, (size_t)17 << 20, 0); /* own mapping */
	case 3:
		return rasp_alloc_aligned(h, t, 100, 64, 0);
	case 4:
		return rasp_alloc_aligned(h, t, 100000, 4096, 0);
	default:
		return rasp_alloc(h, t, 16 + (size_t)(r >> 8) % 2000, 0);
	}
}

/* Every sampled object's free is told exactly once, with its sample's Address and
 * ObjectSize, whatever path frees it, and an object's mark says exactly whether it was
 * sampled. Then, sampling off, the same blocks handed out again unsampled: their frees are
 * never told (a mark left on a block would tell a free no sample precedes). */
static void test_sampled_frees_told_once(void **state)
{
	enum { N = 6000, ROUNDS = 3 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 4096);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **a = malloc(N * sizeof(void *));
	uint64_t x = 88172645463325252u, samples, reused = 0;
	struct ledger l;
	int i, r;

	(void)state;
	ledger_attach(&l, h);
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < N; i++)
			assert_non_null(a[i] = alloc_mixed(h, t, xorshift(&x)));
		assert_int_equal(rasp_heap_walk(h, walk_type, (void *)t), 0);
		for (i = N - 1; i > 0; i--) { /* freed in random order */
			int j = (int)(xorshift(&x) % (uint64_t)(i + 1));
			void *o = a[i];

			a[i] = a[j];
			a[j] = o;
		}
		for (i = 0; i < N; i++) {
			assert_true(marked_as_sampled(&l, h, a[i]));
			rasp_free(h, a[i]);
		}
	}
	printf("%llu samples, %llu frees told\n", (unsigned long long)l.samples,
	       (unsigned long long)l.frees);
	assert_true(l.samples > 1000);
	assert_int_equal(l.frees, l.samples);
	assert_int_equal(l.live, 0);
	assert_int_equal(l.free_unpaired + l.free_bad_size + l.sample_over_live, 0);

	/* Sampling off: from the thread's next state check, nothing is sampled; the blocks the
	 * sampled objects had are handed out again (small ones at once: the owner's cache). */
	samples = l.samples;
	assert_int_equal(rasp_heap_set_sampling(h, RASP_SAMPLING_OFF, 0), 0);
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < N; i++) {
			a[i] = alloc_mixed(h, t, xorshift(&x));
			assert_non_null(a[i]);
		}
		for (i = 0; i < N; i++) {
			struct rasp__segment *s;
			struct rasp__header *b = rasp__block_of(h, a[i], "test", &s);
			struct ledger_slot *sl = ledger_find(&l, (uintptr_t)(b + 1));

			reused +=
			    sl->addr && !sl->live; /* a sampled object's address, unsampled now */
			assert_true(marked_as_sampled(&l, h, a[i]));
			rasp_free(h, a[i]);
		}
	}
	printf("after sampling off: %llu more samples, %llu blocks of sampled objects reused\n",
	       (unsigned long long)(l.samples - samples), (unsigned long long)reused);
	assert_true(l.samples - samples < 10); /* the windows drawn before the state check */
	assert_true(reused > samples / 4);
	assert_int_equal(l.frees, l.samples);
	assert_int_equal(l.free_unpaired + l.free_bad_size + l.sample_over_live, 0);
	rasp_heap_destroy(h);
	ledger_fini(&l);
	free(a);
}

/* A sample no one saw (sampling forced on, no session, no sample hook) leaves no mark: its
 * free is not told and takes the owner's way, as any object's. */
static void test_unseen_samples_unmarked(void **state)
{
	enum { N = 20000 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 64);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void **a = malloc(N * sizeof(void *));
	struct ledger l;
	int i, marked = 0;

	(void)state;
	ledger_attach(&l, h);
	h->sample_hook = NULL; /* the free hook alone */
	for (i = 0; i < N; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, 100, 0));
	for (i = 0; i < N; i++) {
		marked += rasp__hdr_sampled(rasp__header_of(a[i]));
		rasp_free(h, a[i]);
	}
	assert_true(stats(h).samples > N / 2); /* mean 64, 112-byte blocks: nearly all */
	assert_int_equal(marked, 0);
	assert_int_equal(l.frees, 0);
	rasp_heap_destroy(h);
	ledger_fini(&l);
	free(a);
}

/* Another thread frees sampled objects (small ones through its batches, large ones at once)
 * while the owner allocates the blocks again: each free is told once, before any sample at
 * its address (the ledger's lock orders the hooks as the runtime calls them). */
static _Atomic long xfer_prod, xfer_cons;
static void *xfer_ring[RING];

static void *xfer_consume(void *arg)
{
	rasp_heap_t *h = arg;
	long total = 400000;

	for (long i = 0; i < total; i++) {
		while (atomic_load(&xfer_prod) == i)
			;
		rasp_free(h, xfer_ring[i % RING]);
		atomic_store(&xfer_cons, i + 1);
	}
	return NULL;
}

static void test_sampled_frees_by_another_thread(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 2048);
	const rasp_type_t *t = rasp_type_register(h, "t");
	uint64_t x = 7;
	struct ledger l;
	pthread_t th;

	(void)state;
	ledger_attach(&l, h);
	assert_int_equal(pthread_create(&th, NULL, xfer_consume, h), 0);
	for (long i = 0; i < 400000; i++) {
		uint64_t r = xorshift(&x);
		void *p = r % 64 ? rasp_alloc(h, t, 24 + (size_t)(r >> 16) % 200, 0)
				 : rasp_alloc(h, t, 90000, 0);

		assert_non_null(p);
		while (i - atomic_load(&xfer_cons) >= RING)
			;
		xfer_ring[i % RING] = p;
		atomic_store(&xfer_prod, i + 1);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	printf("%llu samples, %llu frees told\n", (unsigned long long)l.samples,
	       (unsigned long long)l.frees);
	assert_true(l.samples > 10000);
	assert_int_equal(l.frees, l.samples);
	assert_int_equal(l.free_unpaired + l.free_bad_size + l.sample_over_live, 0);
	assert_int_equal(stats(h).invalid_frees, 0);
	rasp_heap_destroy(h);
	ledger_fini(&l);
}

/* stderr into a temporary file while fn runs; returns the lines written. */
static unsigned stderr_lines(void (*fn)(void *), void *arg, char *text, size_t cap)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	unsigned lines = 0;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(text, 1, cap - 1, tmp);
	text[n] = 0;
	fclose(tmp);
	for (size_t i = 0; i < n; i++)
		lines += text[i] == '\n';
	return lines;
}

struct seen {
	unsigned calls;
	int kind[8];
	uint64_t count[8];
	const void *ptr[8];
	const char *op[8];
};

static void record_invalid(void *arg, const rasp_invalid_t *w)
{
	struct seen *s = arg;

	if (s->calls < 8) {
		s->kind[s->calls] = w->kind;
		s->count[s->calls] = w->count;
		s->ptr[s->calls] = w->ptr;
		s->op[s->calls] = w->op;
	}
	s->calls++;
}

/* 1280 double frees (a state that switched allocators) and one pointer of each other kind. */
static void many_invalid(void *arg)
{
	rasp_heap_t *h = arg, *other = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	char *p = rasp_alloc(h, t, 40, 0),
	     *q = rasp_alloc(other, rasp_type_register(other, "o"), 40, 0);
	static uint64_t foreign[4];

	rasp_free(h, p);
	for (int i = 0; i < 1280; i++)
		rasp_free(h, p);
	rasp_free(h, &foreign[2]);
	rasp_free(h, q);
	assert_null(rasp_realloc(h, rasp_alloc(h, t, 40, 0) + 8, 10));
	rasp_free(other, q);
	rasp_heap_destroy(other);
	rasp_heap_destroy(h);
}

/* The default action logs the 1st, 10th, 100th and 1000th refusal of a kind, and at destroy
 * the count not yet logged: 1280 double frees make 5 lines, not 1280; each other kind one. */
static void test_invalid_pointers_logged_rate_limited(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	char text[8192];
	unsigned lines;

	(void)state;
	lines = stderr_lines(many_invalid, h, text, sizeof(text));
	if (lines != 8)
		fail_msg("%u lines:\n%s", lines, text);
	assert_non_null(strstr(text, "double free #1000 "));
	assert_non_null(strstr(text, "refused 1280 pointers as double free in all"));
	assert_non_null(strstr(text, "rasp_realloc("));
	assert_non_null(strstr(text, "foreign pointer #1 "));
	assert_non_null(strstr(text, "pointer of another heap #1 "));
	assert_non_null(strstr(text, "interior pointer #1 "));
}

/* Counted per kind and in invalid_frees; the callback sees each one with its kind and count;
 * COUNT logs nothing; a refused realloc sets EINVAL, not ENOMEM. */
static void counted_quietly(void *arg)
{
	rasp_heap_t *h = arg;
	struct seen seen = {0};
	const rasp_type_t *t = rasp_type_register(h, "t");
	char *p = rasp_alloc(h, t, 24, 0);
	static uint64_t foreign[4];
	rasp_heap_stats_t st;

	assert_int_equal(
	    rasp_heap_set_error_handler(h, RASP_ON_INVALID_COUNT, record_invalid, &seen), 0);
	rasp_free(h, p);
	rasp_free(h, p);
	errno = 0;
	assert_null(rasp_realloc(h, p, 100));
	assert_int_equal(errno, EINVAL);
	rasp_free(h, &foreign[1]);
	assert_int_equal(seen.calls, 3);
	assert_int_equal(seen.kind[0], RASP_INVALID_DOUBLE_FREE);
	assert_int_equal(seen.count[1], 2);
	assert_string_equal(seen.op[1], "rasp_realloc");
	assert_ptr_equal(seen.ptr[2], &foreign[1]);
	assert_int_equal(seen.kind[2], RASP_INVALID_FOREIGN);
	assert_int_equal(rasp_heap_invalid_count(h, RASP_INVALID_DOUBLE_FREE), 2);
	assert_int_equal(rasp_heap_invalid_count(h, RASP_INVALID_FOREIGN), 1);
	assert_int_equal(rasp_heap_invalid_count(h, RASP_INVALID_KINDS), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, 3);
	rasp_heap_destroy(h);
}

static void test_invalid_pointers_counted_and_called_back(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
	char text[4096];

	(void)state;
	assert_int_equal(rasp_heap_set_error_handler(h, 7, NULL, NULL), -EINVAL);
	assert_int_equal(rasp_heap_set_error_handler(NULL, 0, NULL, NULL), -EINVAL);
	assert_int_equal(stderr_lines(counted_quietly, h, text, sizeof(text)), 0);
}

/* ABORT: logged, then abort() (in a child). */
static void test_invalid_pointer_aborts_when_asked(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1);
		static uint64_t foreign[2];

		rasp_heap_set_error_handler(h, RASP_ON_INVALID_ABORT, NULL, NULL);
		close(2);
		rasp_free(h, &foreign[1]);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_owner_frees_are_reused),
	    cmocka_unit_test(test_owner_frees_cached_up_to_the_bound),
	    cmocka_unit_test(test_random_frees_leave_few_pages),
	    cmocka_unit_test(test_flush_never_raises_the_bound),
	    cmocka_unit_test(test_alternating_keeps_full_windows),
	    cmocka_unit_test(test_frees_concurrent_with_collect),
	    cmocka_unit_test(test_cross_thread_frees_are_reused),
	    cmocka_unit_test(test_cross_thread_frees_are_batched),
	    cmocka_unit_test(test_sampled_frees_told_once),
	    cmocka_unit_test(test_unseen_samples_unmarked),
	    cmocka_unit_test(test_sampled_frees_by_another_thread),
	    cmocka_unit_test(test_invalid_pointers_logged_rate_limited),
	    cmocka_unit_test(test_invalid_pointers_counted_and_called_back),
	    cmocka_unit_test(test_invalid_pointer_aborts_when_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
