/* A thread's side of its contexts (runtime/thread.c), white-box: thread exit, the one-entry cache
 * across heaps and a heap re-created at a destroyed one's address, destroy clearing other
 * threads' caches and after a thread's last key destructor, fork's handlers (a child destroying
 * a heap, freeing an absent thread's objects, allocating while its parent's threads exit),
 * entries of destroyed heaps dropped, instance ids kept distinct. */
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
 * write into it (clearing the dead thread's cache key there faults, which kills this test
 * binary). In this process: ThreadSanitizer refuses new
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
 * freeing one's (moving another context's pages on this context's lists breaks both). After the
 * frees and a collect, the heap holds nothing, a walk finds nothing, and every page on a context's
 * lists is that context's, its count of empty pages kept right (with the defect put back, the
 * absent thread's pages were marked kept on the freeing thread's count). */
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
 * first allocation, from a heap its forking thread uses, completes (without the fork
 * handlers, 34 of 300 children hung on the lock a thread of the parent held at the fork). */
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

/* A thread that used heaps another thread destroyed keeps no entry for them once it attaches
 * to a heap again (else one entry per destroyed heap stays until the thread exits,
 * unbounded in a thread pool serving short-lived heaps). The worker attaches to 100
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_thread_exit_retires_context),
	    cmocka_unit_test(test_several_heaps_and_reused_address),
	    cmocka_unit_test(test_destroy_clears_other_threads_cache),
	    cmocka_unit_test(test_destroy_after_allocation_past_thread_exit),
	    cmocka_unit_test(test_fork_child_destroys_heap_of_absent_threads),
	    cmocka_unit_test(test_fork_child_frees_absent_threads_pages),
	    cmocka_unit_test(test_fork_child_allocates_while_threads_exit),
	    cmocka_unit_test(test_entries_of_destroyed_heaps_dropped),
	    cmocka_unit_test(test_heaps_get_distinct_instance_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
