/* Allocation contexts (runtime/context.c, runtime/heap.c), white-box: enumeration keeps
 * combined_limit in sync (the stale-limit test), retirement at collect and at thread exit,
 * 8 threads allocating and freeing while sampling is toggled, the OS-failure seam, and the
 * debug checks (bad frees, enumeration while an owner is allocating). */
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

struct exit_arg {
	rasp_heap_t *h;
	const rasp_type_t *t;
	void *objs[64];
};

static void *alloc_and_exit(void *p)
{
	struct exit_arg *a = p;
	int i;

	for (i = 0; i < 64; i++)
		a->objs[i] = rasp_alloc(a->h, a->t, 200, 0);
	return NULL;
}

/* A thread's exit retires its context: it leaves the heap's list, and its chunk's region
 * is released once its objects are freed. */
static void test_thread_exit_retires_context(void **state)
{
	rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 4096);
	struct exit_arg a = {h, rasp_type_register(h, "t"), {0}};
	rasp_heap_stats_t st;
	pthread_t th;
	int i;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, alloc_and_exit, &a), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.contexts, 0);
	assert_true(st.regions >= 1);
	for (i = 0; i < 64; i++) {
		assert_non_null(a.objs[i]);
		rasp_free(h, a.objs[i]);
	}
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
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

/* One thread, several heaps: the thread cache follows the heap used, and a heap created at
 * the address of a destroyed one gets a new context (destroy clears the cache's key). */
static void test_several_heaps_and_reused_address(void **state)
{
	rasp_heap_t *a = make_heap(RASP_SAMPLING_OFF, 1024), *b = make_heap(RASP_SAMPLING_ON, 64);
	const rasp_type_t *ta = rasp_type_register(a, "a"), *tb = rasp_type_register(b, "b");
	rasp_heap_stats_t st;
	rasp_heap_t *old;
	int i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		void *x = rasp_alloc(a, ta, 24, 0), *y = rasp_alloc(b, tb, 24, 0);

		assert_ptr_equal(rasp__segment_of(x)->heap, a);
		assert_ptr_equal(rasp__segment_of(y)->heap, b);
	}
	errno = 0;
	assert_null(rasp_alloc(a, tb, 24, 0)); /* a type of another heap */
	assert_int_equal(errno, EINVAL);
	assert_ptr_not_equal(rasp_context_get(a), rasp_context_get(b));
	old = a;
	rasp_heap_destroy(a);
	for (i = 0; i < 64; i++) {
		a = make_heap(RASP_SAMPLING_OFF, 1024);
		if (a == old)
			break;
		rasp_heap_destroy(a);
		a = NULL;
	}
	if (a) { /* malloc gave the same address back: the cache must not hand out the old one */
		ta = rasp_type_register(a, "a");
		assert_non_null(rasp_alloc(a, ta, 24, 0));
		rasp_heap_stats(a, &st);
		assert_int_equal(st.contexts, 1);
		assert_ptr_equal(rasp_context_get(a)->heap, a);
		rasp_heap_destroy(a);
	}
	rasp_heap_destroy(b);
}

/* Another thread's cache: a thread that allocated from a heap another thread destroys, then
 * allocates from a heap created at the same address, gets a context of the new heap, not the
 * freed one of the old (rasp_heap_destroy clears every owner's cache key that names the
 * heap; the key is the address alone). */
struct reuse_arg {
	rasp_heap_t *h;
	const rasp_type_t *t;
	pthread_barrier_t bar;
	void *before, *after;
	struct rasp_context *ctx;
};

static void *reuse_thread(void *p)
{
	struct reuse_arg *a = p;

	a->before = rasp_alloc(a->h, a->t, 24, 0); /* caches the heap */
	pthread_barrier_wait(&a->bar);		   /* main destroys it, makes another */
	pthread_barrier_wait(&a->bar);
	if (a->h) {
		a->after = rasp_alloc(a->h, a->t, 24, 0);
		a->ctx = rasp_context_get(a->h);
	}
	pthread_barrier_wait(&a->bar); /* main has checked */
	return NULL;
}

static void test_destroy_clears_other_threads_cache(void **state)
{
	struct reuse_arg a = {0};
	rasp_heap_t *old;
	pthread_t th;
	int i;

	(void)state;
	a.h = make_heap(RASP_SAMPLING_OFF, 1024);
	a.t = rasp_type_register(a.h, "old");
	assert_int_equal(pthread_barrier_init(&a.bar, NULL, 2), 0);
	assert_int_equal(pthread_create(&th, NULL, reuse_thread, &a), 0);
	pthread_barrier_wait(&a.bar);
	assert_non_null(a.before);
	old = a.h;
	rasp_heap_destroy(old);
	for (i = 0; i < 64; i++) {
		a.h = make_heap(RASP_SAMPLING_OFF, 1024);
		if (a.h == old)
			break;
		rasp_heap_destroy(a.h);
		a.h = NULL;
	}
	if (a.h)
		a.t = rasp_type_register(a.h, "new");
	pthread_barrier_wait(&a.bar);
	pthread_barrier_wait(&a.bar);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_destroy(&a.bar);
	if (!a.h) {
		printf("malloc never gave the destroyed heap's address back: nothing to check\n");
		return;
	}
	assert_non_null(a.after);
	assert_ptr_equal(rasp__segment_of(a.after)->heap, a.h);
	assert_non_null(a.ctx);
	assert_ptr_equal(a.ctx->heap, a.h);
	rasp_heap_destroy(a.h);
}

/* A program's key destructor that allocates in every round of thread-exit destructors: in
 * the last round it runs after rasp's thread_exit, attaching the thread to the heap again.
 * The thread's stack (its TLS) is the test's, unmapped after the join: destroy must not
 * write into it (found by review: it cleared the dead thread's cache key there and
 * faulted, which kills this test binary). In this process: ThreadSanitizer refuses new
 * threads in a fork's child. */
static rasp_heap_t *late_h;
static const rasp_type_t *late_t;
static pthread_key_t late_key;
static int late_rounds;

static void late_dtor(void *v)
{
	late_rounds++;
	(void)rasp_alloc(late_h, late_t, 24, 0);
	pthread_setspecific(late_key, v); /* and again next round */
}

static void *late_worker(void *a)
{
	(void)rasp_alloc(late_h, late_t, 24, 0);
	pthread_setspecific(late_key, (void *)1);
	return a;
}

/* Runs fn in a child process; its exit status, 128 + the signal that killed it, or 255 if it
 * was still running after 20 s (then killed: a hang fails the test instead of holding it;
 * the parent's clock, because a child can hang before it could set an alarm, e.g. in
 * another library's fork handler). */
static int run_in_child(void (*fn)(void))
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* A fault is the child's death, not cmocka's handler going on with the tests. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0);
	}
	for (int ms = 0;; ms += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		assert_true(r >= 0);
		if (r == pid)
			break;
		if (ms >= 20000) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("child still running after 20 s: killed\n");
			return 255;
		}
		usleep(10000);
	}
	if (WIFSIGNALED(st))
		printf("child killed by signal %d\n", WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_destroy_after_allocation_past_thread_exit(void **state)
{
	size_t sz = 1 << 20;
	void *stk = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_attr_t at;
	pthread_t th;

	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer's own per-thread state is gone by the last rounds of destructors:
	 * its lock interceptor faults there, before anything of rasp's runs. */
	printf("skipped under ThreadSanitizer: it faults in locks taken in the last key "
	       "destructor rounds\n");
	munmap(stk, sz);
	return;
#endif
	assert_true(stk != MAP_FAILED);
	assert_int_equal(rasp_heap_create(&late_h, NULL), 0);
	late_t = rasp_type_register(late_h, "Late");
	(void)rasp_context_get(late_h); /* rasp's exit key before late_key: its destructor first */
	assert_int_equal(pthread_key_create(&late_key, late_dtor), 0);
	assert_int_equal(pthread_attr_init(&at), 0);
	assert_int_equal(pthread_attr_setstack(&at, stk, sz), 0);
	assert_int_equal(pthread_create(&th, &at, late_worker, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(late_rounds, PTHREAD_DESTRUCTOR_ITERATIONS);
	munmap(stk, sz);
	rasp_heap_destroy(late_h);
	pthread_key_delete(late_key);
}

/* A fork's child, where the threads that allocated from a heap do not exist, destroys it
 * after one such thread's stack (its TLS) is gone. */
static pthread_barrier_t fork_bar;

static void *fork_worker(void *a)
{
	(void)rasp_alloc(late_h, late_t, 24, 0);
	pthread_barrier_wait(&fork_bar);
	pthread_barrier_wait(&fork_bar);
	return a;
}

static void *fork_stack;

static void fork_child_destroys(void)
{
	munmap(fork_stack, 1 << 20);
	rasp_heap_destroy(late_h);
}

/* A heap (type `name`) and a thread running fn on fork_stack (1 MiB, mapped here), past the
 * first wait of fork_bar: fn waits twice, so the thread is alive at a fork in between. */
static pthread_t start_on_fork_stack(void *(*fn)(void *), const char *name)
{
	pthread_attr_t at;
	pthread_t th;

	fork_stack =
	    mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(fork_stack != MAP_FAILED);
	assert_int_equal(rasp_heap_create(&late_h, NULL), 0);
	late_t = rasp_type_register(late_h, name);
	assert_int_equal(pthread_barrier_init(&fork_bar, NULL, 2), 0);
	assert_int_equal(pthread_attr_init(&at), 0);
	assert_int_equal(pthread_attr_setstack(&at, fork_stack, 1 << 20), 0);
	assert_int_equal(pthread_create(&th, &at, fn, NULL), 0);
	pthread_barrier_wait(&fork_bar);
	return th;
}

/* The thread's second wait, and its end. */
static void end_on_fork_stack(pthread_t th)
{
	pthread_barrier_wait(&fork_bar);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_destroy(&fork_bar);
}

static void test_fork_child_destroys_heap_of_absent_threads(void **state)
{
	pthread_t th;

	(void)state;
	th = start_on_fork_stack(fork_worker, "Forked");
	assert_int_equal(run_in_child(fork_child_destroys), 0);
	end_on_fork_stack(th);
	/* The parent's heap is intact, and its forking thread still allocates from it. */
	assert_non_null(rasp_alloc(late_h, late_t, 24, 0));
	rasp_heap_destroy(late_h);
	munmap(fork_stack, 1 << 20);
}

/* A fork's child where a new thread has the thread pointer of a parent's thread that is not
 * there (the same stack, so the same TCB): the pages that thread owned pass the new thread's
 * owner check, so its frees of their blocks go onto its own list (free.c), and the flushes
 * of that list empty those pages through their own context, the absent thread's, not the
 * freeing one's (found by review: moving another context's pages on this context's lists
 * broke both). After the frees and a collect, the heap holds nothing, a walk finds
 * nothing, and every page on a context's lists is that context's, its count of empty pages
 * kept right (with the defect put back, the absent thread's pages were marked kept on the
 * freeing thread's count). */
enum { ABSENT_N = 4000 };
static void *absent_objs[ABSENT_N];
static uintptr_t absent_token;

static void *absent_owner(void *a)
{
	for (int i = 0; i < ABSENT_N; i++)
		absent_objs[i] = rasp_alloc(late_h, late_t, 1000, 0);
	absent_token = rasp__thread_token();
	pthread_barrier_wait(&fork_bar);
	pthread_barrier_wait(&fork_bar);
	return a;
}

static void *same_tcb_freer(void *a)
{
	void *own;

	(void)a;
	if (rasp__thread_token() != absent_token)
		return (void *)"the new thread does not have the absent thread's thread pointer";
	own = rasp_alloc(late_h, late_t, 1000, 0); /* a context, and the heap cached */
	if (!own)
		return (void *)"allocation failed";
	for (int i = 0; i < ABSENT_N; i++)
		rasp_free(late_h, absent_objs[i]);
	rasp_free(late_h, own);
	return NULL;
}

static int count_objects(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	(void)obj, (void)type, (void)z, (void)kind;
	++*(long *)arg;
	return 0;
}

/* Every page on a context's queue and full list is that context's, of that class, and in
 * use (not a slot given back), and the context's count of empty pages kept is the number
 * of its pages so marked; the walk is bounded. Counts what is not. */
static void count_strays(struct rasp_context *c, void *arg)
{
	long *bad = arg, kept = 0;

	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		struct rasp__page *lists[2] = {c->win[k].queue, c->win[k].full};

		for (int l = 0; l < 2; l++) {
			int steps = 0;

			for (struct rasp__page *pg = lists[l]; pg && steps < 100000;
			     pg = pg->next, steps++) {
				*bad += pg->bsize != rasp__class_size[k] ||
					rasp__page_cls(pg) != k || atomic_load(&pg->ctx) != c ||
					pg->in_full != (l == 1);
				kept += pg->kept_empty;
			}
			*bad += steps == 100000;
		}
	}
	*bad += kept != c->kept_empty; /* the context's count of its empty pages kept */
}

static void fork_child_frees_on_same_tcb(void)
{
	pthread_attr_t at;
	pthread_t th;
	rasp_heap_stats_t st;
	void *why;
	long n = 0, strays = 0;

	if (pthread_attr_init(&at) || pthread_attr_setstack(&at, fork_stack, 1 << 20) ||
	    pthread_create(&th, &at, same_tcb_freer, NULL) || pthread_join(th, &why))
		_exit(2);
	if (why) {
		fprintf(stderr, "child: %s\n", (const char *)why); /* _exit drops stdout */
		_exit(3);
	}
	if (rasp_heap_collect(late_h) != 0 || rasp_heap_stats(late_h, &st) != 0 ||
	    rasp_heap_walk(late_h, count_objects, &n) != 0)
		_exit(4);
	if (st.live_bytes != 0 || n != 0)
		_exit(5);
	pthread_mutex_lock(&late_h->lock);
	rasp__contexts_enumerate(late_h, count_strays, &strays);
	pthread_mutex_unlock(&late_h->lock);
	if (strays) {
		fprintf(stderr,
			"child: %ld pages on a context's lists not its own, or kept-empty "
			"counts off\n",
			strays);
		_exit(6);
	}
	rasp_heap_destroy(late_h);
}

static void test_fork_child_frees_absent_threads_pages(void **state)
{
	pthread_t th;

	(void)state;
#if defined(__SANITIZE_THREAD__)
	printf("skipped under ThreadSanitizer: it refuses new threads in a fork's child\n");
	return;
#endif
	th = start_on_fork_stack(absent_owner, "Absent");
	for (int i = 0; i < ABSENT_N; i++)
		assert_non_null(absent_objs[i]);
	assert_int_equal(run_in_child(fork_child_frees_on_same_tcb), 0);
	end_on_fork_stack(th);
	for (int i = 0; i < ABSENT_N; i++)
		rasp_free(late_h, absent_objs[i]);
	rasp_heap_destroy(late_h);
	munmap(fork_stack, 1 << 20);
}

/* A fork while other threads come and go (their exits hold the registry lock): each child's
 * first allocation, from a heap its forking thread uses, completes (found by review: 34 of
 * 300 children hung on the lock a thread of the parent held at the fork). */
static _Atomic int churn_stop;

static void *churn_worker(void *a)
{
	for (int i = 0; i < 100; i++)
		rasp_free(late_h, rasp_alloc(late_h, late_t, 24 + (size_t)(i % 50) * 16, 0));
	return a;
}

static void *churn(void *a)
{
	while (!atomic_load(&churn_stop)) {
		pthread_t th;

		if (pthread_create(&th, NULL, churn_worker, NULL) == 0)
			pthread_join(th, NULL);
	}
	return a;
}

static void fork_child_allocates(void)
{
	_exit(rasp_alloc(late_h, late_t, 32, 0) ? 0 : 1);
}

static void test_fork_child_allocates_while_threads_exit(void **state)
{
	pthread_t s;
	int bad = 0;

	(void)state;
	late_h = make_heap(RASP_SAMPLING_OFF, 102400);
	late_t = rasp_type_register(late_h, "Churn");
	assert_non_null(rasp_alloc(late_h, late_t, 32, 0)); /* attached, the heap cached */
	atomic_store(&churn_stop, 0);
	assert_int_equal(pthread_create(&s, NULL, churn, NULL), 0);
	for (int i = 0; i < 200; i++)
		bad += run_in_child(fork_child_allocates) != 0;
	atomic_store(&churn_stop, 1);
	assert_int_equal(pthread_join(s, NULL), 0);
	assert_int_equal(bad, 0);
	rasp_heap_destroy(late_h);
}

/* rasp/inline.h's miss when the call refuses it before its own decrement (a debug build's
 * check of the type's heap): the class's count is not left at -1, and a collect after it
 * gives the window back whole (found by review: the count at -1 made the retired list's
 * length wrap, and the collect faulted). This file's runtime is a debug build. */
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

/* A thread that used heaps another thread destroyed keeps no entry for them once it attaches
 * to a heap again (found by review: one entry per destroyed heap stayed until the thread
 * exited, unbounded in a thread pool serving short-lived heaps). The worker attaches to 100
 * heaps; the main thread destroys them; the worker's next attach leaves it one entry. */
enum { DEAD_HEAPS = 100 };
static rasp_heap_t *dead[DEAD_HEAPS];
static pthread_barrier_t dead_barrier;
static size_t entries_before, entries_after;

static void *use_then_attach(void *arg)
{
	rasp_heap_t *fresh = arg;

	for (int i = 0; i < DEAD_HEAPS; i++)
		rasp_free(dead[i], rasp_alloc(dead[i], rasp_type_register(dead[i], "d"), 16, 0));
	entries_before = rasp__thread_entries();
	pthread_barrier_wait(&dead_barrier); /* the main thread destroys them */
	pthread_barrier_wait(&dead_barrier);
	rasp_free(fresh, rasp_alloc(fresh, rasp_type_register(fresh, "f"), 16, 0));
	entries_after = rasp__thread_entries();
	return NULL;
}

static void test_entries_of_destroyed_heaps_dropped(void **state)
{
	rasp_heap_t *fresh = make_heap(RASP_SAMPLING_OFF, 1);
	pthread_t th;

	(void)state;
	for (int i = 0; i < DEAD_HEAPS; i++)
		dead[i] = make_heap(RASP_SAMPLING_OFF, 1);
	assert_int_equal(pthread_barrier_init(&dead_barrier, NULL, 2), 0);
	assert_int_equal(pthread_create(&th, NULL, use_then_attach, fresh), 0);
	pthread_barrier_wait(&dead_barrier);
	for (int i = 0; i < DEAD_HEAPS; i++)
		rasp_heap_destroy(dead[i]);
	pthread_barrier_wait(&dead_barrier);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_destroy(&dead_barrier);
	assert_int_equal(entries_before, DEAD_HEAPS);
	assert_int_equal(entries_after, 1);
	rasp_heap_destroy(fresh);
}

/* Live heaps of a process carry distinct ClrInstanceIDs, so a consumer can weigh each heap's
 * samples with its own mean: the first keeps the configured id, the next take the lowest free
 * ones, and a destroyed heap's id is free again. */
static void test_heaps_get_distinct_instance_ids(void **state)
{
	rasp_heap_t *a = make_heap(RASP_SAMPLING_OFF, 1), *b = make_heap(RASP_SAMPLING_OFF, 1);
	rasp_heap_t *c, *d;
	rasp_config_t cfg;

	(void)state;
	assert_int_equal(a->cfg.clr_instance_id, 0);
	assert_int_equal(b->cfg.clr_instance_id, 1);
	rasp_config_init(&cfg);
	cfg.clr_instance_id = 7; /* free: kept */
	assert_int_equal(rasp_heap_create(&c, &cfg), 0);
	assert_int_equal(c->cfg.clr_instance_id, 7);
	rasp_heap_destroy(a);
	assert_int_equal(rasp_heap_create(&d, &cfg), 0); /* 7 taken: the lowest free, 0 */
	assert_int_equal(d->cfg.clr_instance_id, 0);
	rasp_heap_destroy(b);
	rasp_heap_destroy(c);
	rasp_heap_destroy(d);
}

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
	    cmocka_unit_test(test_thread_exit_retires_context),
	    cmocka_unit_test(test_threads_alloc_free_with_toggling),
	    cmocka_unit_test(test_free_concurrent_with_collect),
	    cmocka_unit_test(test_several_heaps_and_reused_address),
	    cmocka_unit_test(test_destroy_clears_other_threads_cache),
	    cmocka_unit_test(test_destroy_after_allocation_past_thread_exit),
	    cmocka_unit_test(test_fork_child_destroys_heap_of_absent_threads),
	    cmocka_unit_test(test_fork_child_frees_absent_threads_pages),
	    cmocka_unit_test(test_fork_child_allocates_while_threads_exit),
	    cmocka_unit_test(test_inline_miss_refused_keeps_count),
	    cmocka_unit_test(test_entries_of_destroyed_heaps_dropped),
	    cmocka_unit_test(test_heaps_get_distinct_instance_ids),
	    cmocka_unit_test(test_os_failure_gives_enomem),
	    cmocka_unit_test(test_debug_bad_frees_rejected),
	    cmocka_unit_test(test_debug_enumeration_detects_busy_owner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
