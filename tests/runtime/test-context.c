/* Allocation contexts (runtime/context.c, with the windows of runtime/alloc.c), white-box:
 * enumeration keeps combined_limit in sync (the stale-limit test), retirement at collect, 8
 * threads allocating and freeing while sampling is toggled, frees concurrent with collect, an
 * inline miss refused, the OS-failure seam, and the debug checks (bad frees, enumeration while
 * an owner is allocating). */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/test-heap.h"
#include "internal.h"
#include "rasp/inline.h"

static rasp_heap_t *make_heap(int sampling, uint64_t mean)
{
	rasp_heap_t *h = test_heap(sampling, mean, 2024);

	assert_non_null(h);
	return h;
}

static bool windows_all_ended(const struct rasp_context *c)
{
	for (unsigned k = 0; k < RASP__NCLASS; k++)
		if (c->hot[k].n || c->win[k].gap)
			return false;
	return true;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Another thread ends a context's windows through the enumeration (as collect does): the next
 * allocation of every class must take the slow path, and the blocks the window still covered
 * must neither be lost nor handed out twice. Both with sampling off and on. */
static void check_retire_keeps_blocks(int sampling)
{
	enum { N = 3000 };
	rasp_heap_t *h = make_heap(sampling, 1u << 30);
	const rasp_type_t *t = rasp_type_register(h, "t");
	struct rasp_context *c = rasp_context_get(h);
	uintptr_t *objs = malloc(sizeof(uintptr_t) * N);
	rasp_heap_stats_t st;
	uint64_t refills;
	unsigned k = rasp__class_of(32);
	int i;

	assert_non_null(objs);
	objs[0] = (uintptr_t)rasp_alloc(h, t, 24, 0); /* z = 32: the class now has a window */
	assert_true(c->hot[k].n >= 1);
	pthread_mutex_lock(&h->lock);
	rasp__contexts_enumerate(h, rasp__context_retire, NULL);
	pthread_mutex_unlock(&h->lock);
	assert_true(windows_all_ended(c));
	rasp_heap_stats(h, &st);
	refills = st.refills;
	for (i = 1; i < N; i++) {
		objs[i] = (uintptr_t)rasp_alloc(h, t, 24, 0);
		assert_true(objs[i] != 0);
	}
	/* The first allocation after retiring took the slow path, and it reused the list the
	 * window had (no new list needed for it: the trim asked for returned it to its page,
	 * which gave it back). */
	rasp_heap_stats(h, &st);
	assert_true(st.refills >= refills + 1);
	qsort(objs, N, sizeof(objs[0]), cmp_ptr);
	for (i = 1; i < N; i++)
		if (objs[i] == objs[i - 1])
			fail_msg("block %p handed out twice after retiring", (void *)objs[i]);
	for (i = 0; i < N; i++)
		rasp_free(h, (void *)objs[i]);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.pages, 0);
	free(objs);
	rasp_heap_destroy(h);
}

static void test_enumeration_retire_keeps_blocks(void **state)
{
	(void)state;
	check_retire_keeps_blocks(RASP_SAMPLING_OFF);
	check_retire_keeps_blocks(RASP_SAMPLING_ON);
}

/* collect ends every window (the next allocation takes the slow path and takes a list again)
 * and, once everything is freed, every segment goes back to the OS. */
static void test_collect_retires_contexts(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 1u << 30);
	const rasp_type_t *t = rasp_type_register(h, "t");
	struct rasp_context *c = rasp_context_get(h);
	rasp_heap_stats_t st;
	void *a, *b;

	(void)state;
	a = rasp_alloc(h, t, 100, 0);
	assert_non_null(a);
	assert_int_equal(rasp_heap_collect(h), 0);
	assert_true(windows_all_ended(c));
	rasp_heap_stats(h, &st);
	assert_int_equal(st.refills, 1);
	b = rasp_alloc(h, t, 100, 0);
	assert_non_null(b);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.refills, 2);
	/* Everything freed and collected: every segment goes back to the OS. */
	rasp_free(h, a);
	rasp_free(h, b);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.mapped_bytes, 0);
	assert_int_equal(st.committed_bytes, 0);
	rasp_heap_destroy(h);
}

/* 8 threads allocate (small, overflowing, large, pinned) and free, half of their frees for
 * objects another thread allocated, while the main thread toggles sampling and its mean. */
#define NTHREADS 8
#define SLOTS	 256
static _Atomic uint64_t hook_calls, hook_bad;
static _Atomic int stop_flag;
static void *shared_slots[SLOTS];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_hook(void *arg, uint32_t kind, const rasp_type_t *type, void *addr, uint64_t z,
		       uint64_t offset, uint64_t mean)
{
	(void)arg;
	(void)mean;
	(void)type;
	if (offset >= z || kind > 2 || rasp_object_size(addr) != z)
		atomic_fetch_add(&hook_bad, 1);
	atomic_fetch_add(&hook_calls, 1);
}

struct worker_arg {
	rasp_heap_t *h;
	const rasp_type_t *t;
	unsigned seed;
	long iters;
};

static void *worker(void *p)
{
	struct worker_arg *w = p;
	void *mine[64] = {0};
	unsigned x = w->seed;
	long i;

	for (i = 0; i < w->iters; i++) {
		size_t size;
		unsigned flags = 0;
		void *o, *old;
		int slot;

		x = x * 1103515245u + 12345u;
		switch ((x >> 16) % 100) {
		case 0:
			size = 100000; /* large */
			break;
		case 1:
			size = 300;
			flags = RASP_ALLOC_PINNED;
			break;
		case 2:
		case 3:
			size = 10000; /* overflows the 8 KiB context */
			break;
		default:
			size = 1 + (x >> 20) % 200;
		}
		o = rasp_alloc(w->h, w->t, size, flags);
		if (!o) {
			fprintf(stderr, "allocation failed: %s\n", strerror(errno));
			abort();
		}
		memset(o, 0xab, size < 64 ? size : 64);
		if (i & 1) {
			slot = (int)((x >> 8) % SLOTS);
			pthread_mutex_lock(&shared_lock);
			old = shared_slots[slot];
			shared_slots[slot] = o;
			pthread_mutex_unlock(&shared_lock);
		} else {
			slot = (int)((x >> 8) % 64);
			old = mine[slot];
			mine[slot] = o;
		}
		if (old)
			rasp_free(w->h, old);
	}
	for (i = 0; i < 64; i++)
		rasp_free(w->h, mine[i]);
	return NULL;
}

static int print_obj(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	(void)arg;
	fprintf(stderr, "live: %p %s z=%zu kind=%d\n", obj, rasp_type_name(type), z, kind);
	return 0;
}

static void test_threads_alloc_free_with_toggling(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 2048);
	struct worker_arg w[NTHREADS];
	pthread_t th[NTHREADS];
	rasp_heap_stats_t st;
	int i, round = 0;

	(void)state;
	h->sample_hook = count_hook;
	for (i = 0; i < NTHREADS; i++) {
		w[i].h = h;
		w[i].t = rasp_type_register(h, "mt");
		w[i].seed = 1000u + (unsigned)i;
		w[i].iters = 30000;
		assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
	}
	for (round = 0; round < 200; round++) {
		static const int modes[] = {RASP_SAMPLING_ON, RASP_SAMPLING_OFF,
					    RASP_SAMPLING_AUTO};

		assert_int_equal(
		    rasp_heap_set_sampling(h, modes[round % 3], (uint64_t)(512 << (round % 4))), 0);
		usleep(500);
	}
	atomic_store(&stop_flag, 1);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (i = 0; i < SLOTS; i++) {
		rasp_free(h, shared_slots[i]);
		shared_slots[i] = NULL;
	}
	assert_int_equal(atomic_load(&hook_bad), 0);
	rasp_heap_stats(h, &st);
	/* The workers' contexts went with them; this thread's frees into their abandoned pages
	 * gave it one (a freeing thread batches its frees and pins through it, free.c). */
	assert_int_equal(st.contexts, 1);
	assert_int_equal(st.invalid_frees, 0);
	assert_int_equal(st.samples, atomic_load(&hook_calls));
	assert_true(st.samples > 0);
	assert_true(st.sampling_starts >= 1);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	if (st.regions) {
		rasp_heap_walk(h, print_obj, NULL);
		fail_msg("%llu mappings left (%llu pages, %llu live bytes)",
			 (unsigned long long)st.regions, (unsigned long long)st.pages,
			 (unsigned long long)st.live_bytes);
	}
	rasp_heap_destroy(h);
}

/* rasp_free may run while rasp_heap_collect retires contexts and releases regions: 4 threads
 * free objects allocated beforehand while the main thread collects in a loop. Every region
 * goes back exactly once (the release count reaches 0 once), checked by the final count. */
struct free_arg {
	rasp_heap_t *h;
	void **objs;
	long n;
};

static void *free_all(void *p)
{
	struct free_arg *f = p;
	long i;

	for (i = 0; i < f->n; i++)
		rasp_free(f->h, f->objs[i]);
	return NULL;
}

static void test_free_concurrent_with_collect(void **state)
{
	enum { PER = 20000, NT = 4 };
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1024);
	const rasp_type_t *t = rasp_type_register(h, "t");
	struct free_arg f[NT];
	pthread_t th[NT];
	rasp_heap_stats_t st;
	void **objs = malloc(sizeof(void *) * PER * NT);
	int i;

	(void)state;
	assert_non_null(objs);
	for (i = 0; i < PER * NT; i++) {
		objs[i] = rasp_alloc(h, t, (size_t)(16 + (i % 7) * 100),
				     i % 50 == 0 ? RASP_ALLOC_PINNED : 0);
		assert_non_null(objs[i]);
	}
	for (i = 0; i < NT; i++) {
		/* Interleaved: every region has objects of every thread. */
		f[i].h = h;
		f[i].n = PER;
		f[i].objs = malloc(sizeof(void *) * PER);
		assert_non_null(f[i].objs);
		for (long k = 0; k < PER; k++)
			f[i].objs[k] = objs[k * NT + i];
	}
	for (i = 0; i < NT; i++)
		assert_int_equal(pthread_create(&th[i], NULL, free_all, &f[i]), 0);
	for (i = 0; i < 200; i++)
		assert_int_equal(rasp_heap_collect(h), 0);
	for (i = 0; i < NT; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		free(f[i].objs);
	}
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_int_equal(st.mapped_bytes, 0);
	assert_int_equal(st.invalid_frees, 0);
	free(objs);
	rasp_heap_destroy(h);
}

/* rasp/inline.h's miss when the call refuses it before its own decrement (a debug build's
 * check of the type's heap): the class's count is not left at -1, and a collect after it
 * gives the window back whole (a count left at -1 makes the retired list's length wrap, and
 * the collect fault). This file's runtime is a debug build. */
static void test_inline_miss_refused_keeps_count(void **state)
{
	rasp_heap_t *a = make_heap(RASP_SAMPLING_OFF, 102400),
		    *b = make_heap(RASP_SAMPLING_OFF, 64);
	const rasp_type_t *ta = rasp_type_register(a, "A"), *tb = rasp_type_register(b, "B");
	unsigned k = rasp_inline_class(24);
	struct rasp_context *c;
	void **keep = calloc(1 << 16, sizeof(*keep));
	size_t n = 0;

	(void)state;
	assert_non_null(keep);
	keep[n++] = rasp_alloc_inline(a, ta, 24);
	c = rasp_context_get(a);
	while (!(c->hot[k].n == 0 && c->win[k].rest == 0 && c->win[k].gap == 0) && n < (1 << 16))
		keep[n++] = rasp_alloc_inline(a, ta, 24);
	assert_true(n < (1 << 16)); /* the list used up: the next allocation is a miss */
	errno = 0;
	assert_null(rasp_alloc_inline(a, tb, 24)); /* a type of another heap */
	assert_int_equal(errno, EINVAL);
	assert_true(c->hot[k].n >= 0);
	assert_int_equal(rasp_heap_collect(a), 0);
	for (int i = 0; i < 1000; i++)
		keep[n++] = rasp_alloc_inline(a, ta, 24);
	for (size_t i = 0; i < n; i++)
		rasp_free(a, keep[i]);
	free(keep);
	rasp_heap_destroy(a);
	rasp_heap_destroy(b);
}

/* OS seam: when mmap fails, allocation returns NULL with ENOMEM and the heap is intact. */
static _Atomic int fail_maps;
static void *failing_map(size_t size)
{
	void *p;

	if (atomic_load(&fail_maps))
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}
static void plain_unmap(void *p, size_t size)
{
	munmap(p, size);
}
static const struct rasp__os_ops failing_ops = {failing_map, plain_unmap, NULL, NULL,
						NULL,	     NULL,	  NULL};

static void test_os_failure_gives_enomem(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 1024);
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *a, *b;
	int i;

	(void)state;
	rasp__os_set_ops(&failing_ops);
	atomic_store(&fail_maps, 1);
	errno = 0;
	assert_null(rasp_alloc(h, t, 10, 0));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(rasp_alloc(h, t, 200000, 0));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(rasp_alloc(h, t, 10, RASP_ALLOC_PINNED));
	assert_int_equal(errno, ENOMEM);
	atomic_store(&fail_maps, 0);
	a = rasp_alloc(h, t, 10, 0);
	assert_non_null(a);
	/* Fill the region, then fail the next one: the failure leaves earlier objects valid. */
	atomic_store(&fail_maps, 1);
	for (i = 0; i < 100000; i++)
		if (!rasp_alloc(h, t, 1000, 0))
			break;
	assert_true(i < 100000);
	assert_int_equal(errno, ENOMEM);
	atomic_store(&fail_maps, 0);
	b = rasp_alloc(h, t, 1000, 0);
	assert_non_null(b);
	assert_int_equal(rasp_object_size(a), 24);
	rasp_free(h, a);
	rasp_free(h, b);
	rasp__os_set_ops(NULL);
	rasp_heap_destroy(h);
}

/* Debug checks: a double free and a foreign pointer are reported and ignored. */
static void test_debug_bad_frees_rejected(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1024), *h2 = make_heap(RASP_SAMPLING_OFF, 1);
	const rasp_type_t *t = rasp_type_register(h, "t");
	char *foreign = malloc(64);
	rasp_heap_stats_t st;
	void *a = rasp_alloc(h, t, 10, 0), *big = rasp_alloc(h, t, 100000, 0);

	(void)state;
	assert_non_null(a);
	rasp_free(h, a);
	errno = 0;
	rasp_free(h, a);
	assert_int_equal(errno, EINVAL);
	rasp_free(h, foreign + 32);
	rasp_free(h, big);
	rasp_free(h, big);			/* its region is gone: caught by the region check */
	rasp_free(h2, rasp_alloc(h, t, 10, 0)); /* object of another heap */
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, 3);
	rasp_heap_stats(h2, &st);
	assert_int_equal(st.invalid_frees, 1);
	free(foreign);
	rasp_heap_destroy(h);
	rasp_heap_destroy(h2);
}

/* Debug check of the concurrency contract: collect while another thread is inside an
 * allocation aborts with a message (run in a child process). */
static pthread_barrier_t bar;
static void *busy_owner(void *p)
{
	rasp_heap_t *h = p;
	struct rasp_context *c = rasp_context_get(h);

	atomic_store(&c->busy, 1); /* as if stopped inside rasp_alloc */
	pthread_barrier_wait(&bar);
	pause();
	return NULL;
}

static void test_debug_enumeration_detects_busy_owner(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 1024);
		pthread_t th;

		(void)!freopen("/dev/null", "w", stderr);
		pthread_barrier_init(&bar, NULL, 2);
		pthread_create(&th, NULL, busy_owner, h);
		pthread_barrier_wait(&bar);
		rasp_heap_collect(h);
		_exit(0); /* not reached when the check works */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
#ifdef __SANITIZE_THREAD__
	/* TSan turns the abort of a multi-threaded child into its own exit code. */
	if (WIFEXITED(status)) {
		assert_int_not_equal(WEXITSTATUS(status), 0);
		return;
	}
#endif
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		fail_msg("child status 0x%x: expected SIGABRT from the contract check", status);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_enumeration_retire_keeps_blocks),
	    cmocka_unit_test(test_collect_retires_contexts),
	    cmocka_unit_test(test_threads_alloc_free_with_toggling),
	    cmocka_unit_test(test_free_concurrent_with_collect),
	    cmocka_unit_test(test_inline_miss_refused_keeps_count),
	    cmocka_unit_test(test_os_failure_gives_enomem),
	    cmocka_unit_test(test_debug_bad_frees_rejected),
	    cmocka_unit_test(test_debug_enumeration_detects_busy_owner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
