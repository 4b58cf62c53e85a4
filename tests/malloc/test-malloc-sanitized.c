/* librasp-malloc's own code under AddressSanitizer and ThreadSanitizer, which are the process's
 * malloc there: malloc/'s C sources are linked in with their exported names renamed raspm_*
 * (raspm-names.h), and this test calls them by those names while the sanitizer keeps its own
 * malloc and fork. The scenarios of test-malloc-process.c: threads that allocate and exit
 * without freeing (their blocks freed by another thread) or allocate in a key destructor after
 * the runtime ended their context, blocks handed from thread to thread, fork (the sanitizer's)
 * while other threads allocate, exec after fork while the parent allocates, dlopen and dlclose
 * of a module that allocates in its constructor and frees in its destructor (through the names
 * this program exports). Registered with LTTng-UST, so under ASan a fork's child restarts its
 * listener threads, which allocate (TSan builds leave LTTng-UST's fork handling out:
 * docs/architecture.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* librasp-malloc's API under its renamed names (raspm-names.h). */
void *raspm_malloc(size_t n);
void raspm_free(void *p);
void *raspm_calloc(size_t count, size_t n);
void *raspm_realloc(void *p, size_t n);
void *raspm_reallocarray(void *p, size_t count, size_t n);
int raspm_posix_memalign(void **out, size_t alignment, size_t n);
void *raspm_aligned_alloc(size_t alignment, size_t n);
void *raspm_memalign(size_t alignment, size_t n);
size_t raspm_malloc_usable_size(void *p);
/* The sanitizer's: whether p is its allocator's (GCC ships no header of it). It takes a lock
 * of ASan's allocator for any pointer not its own, a lock GCC 12's ASan does not take around
 * fork: called where no fork can come (a child once hung on it, taken by a thread of its
 * parent at the fork). */
int __sanitizer_get_ownership(const volatile void *p);

/* A block of n bytes, each byte seed + its index (mod 256), checked before it is freed: a
 * block handed out twice, or written by another, fails the check. */
static unsigned char *filled(size_t n, unsigned seed)
{
	unsigned char *p = raspm_malloc(n);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i);
	return p;
}

static void check_and_free(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i))
			fail_msg("block %p byte %zu: %u, not %u", (void *)p, i, p[i],
				 (unsigned char)(seed + i));
	raspm_free(p);
}

#define THREADS	   4
#define PER_THREAD 5000

static unsigned char *blocks[THREADS][PER_THREAD];

static size_t size_of(int i)
{
	return (size_t)(i * 7 % 700) + 1;
}

static void *alloc_and_exit(void *arg)
{
	unsigned char **mine = arg;

	for (int i = 0; i < PER_THREAD; i++)
		mine[i] = filled(size_of(i), (unsigned)i);
	return NULL; /* never frees */
}

static void test_threads_that_never_free(void **state)
{
	pthread_t t[THREADS];

	(void)state;
	for (int k = 0; k < THREADS; k++)
		assert_int_equal(pthread_create(&t[k], NULL, alloc_and_exit, blocks[k]), 0);
	for (int k = 0; k < THREADS; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	/* The threads are gone; their blocks are freed from here. */
	for (int k = 0; k < THREADS; k++)
		for (int i = 0; i < PER_THREAD; i++) {
			/* rasp's heap's, not the sanitizer's */
			assert_false(__sanitizer_get_ownership(blocks[k][i]));
			check_and_free(blocks[k][i], size_of(i), (unsigned)i);
		}
}

/* A key made after the thread's first allocation (so after the runtime's exit key): its
 * destructor runs after the runtime has ended the thread's context, and still allocates. */
static pthread_key_t late_key;

static void late_destructor(void *p)
{
	check_and_free(filled(300, 1), 300, 1);
	check_and_free(p, 100, 2);
}

static void *alloc_in_key_destructor(void *arg)
{
	(void)arg;
	check_and_free(filled(64, 3), 64, 3);
	pthread_setspecific(late_key, filled(100, 2));
	return NULL;
}

static void test_allocation_after_thread_exit(void **state)
{
	pthread_t t[8];

	(void)state;
	raspm_free(raspm_malloc(10));
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	for (int k = 0; k < 8; k++)
		assert_int_equal(pthread_create(&t[k], NULL, alloc_in_key_destructor, NULL), 0);
	for (int k = 0; k < 8; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	pthread_key_delete(late_key);
}

/* Blocks handed from producers to consumers through a queue under a lock: each is allocated
 * by one thread (malloc, calloc, an aligned form or a realloc'd block, small and large),
 * checked, resized and freed by another while the first allocates again. */
#define QUEUE  64
#define HANDED 4000
#define PAIRS  2

struct handed {
	unsigned char *p;
	size_t n;
	unsigned seed;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct handed q[QUEUE];
	unsigned head, tail;
} queue = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

static void *produce(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;

	for (unsigned i = 0; i < HANDED; i++) {
		unsigned seed = id * 100003u + i;
		/* Up to 40 KB now and then: large objects take the heap's lock. */
		size_t n = i % 97 == 0 ? 40000 : (size_t)(seed * 2654435761u % 2000u) + 1;
		struct handed h = {NULL, n, seed};
		void *v = NULL;

		switch (i % 4) {
		case 0:
			h.p = filled(n, seed);
			break;
		case 1:
			h.p = raspm_calloc(1, n);
			assert_non_null(h.p);
			for (size_t k = 0; k < n; k++)
				assert_int_equal(h.p[k], 0);
			for (size_t k = 0; k < n; k++)
				h.p[k] = (unsigned char)(seed + k);
			break;
		case 2:
			assert_int_equal(raspm_posix_memalign(&v, 64u << (i % 7), n), 0);
			assert_int_equal((uintptr_t)v % (64u << (i % 7)), 0);
			h.p = v;
			for (size_t k = 0; k < n; k++)
				h.p[k] = (unsigned char)(seed + k);
			break;
		default:
			h.p = raspm_realloc(filled(n / 2, seed), n);
			assert_non_null(h.p);
			for (size_t k = n / 2; k < n; k++)
				h.p[k] = (unsigned char)(seed + k);
		}
		pthread_mutex_lock(&queue.lock);
		while (queue.tail - queue.head == QUEUE)
			pthread_cond_wait(&queue.changed, &queue.lock);
		queue.q[queue.tail++ % QUEUE] = h;
		pthread_cond_broadcast(&queue.changed);
		pthread_mutex_unlock(&queue.lock);
	}
	return NULL;
}

static void *consume(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < HANDED; i++) {
		struct handed h;
		unsigned char *p;

		pthread_mutex_lock(&queue.lock);
		while (queue.tail == queue.head)
			pthread_cond_wait(&queue.changed, &queue.lock);
		h = queue.q[queue.head++ % QUEUE];
		pthread_cond_broadcast(&queue.changed);
		pthread_mutex_unlock(&queue.lock);
		assert_true(h.n == 0 || raspm_malloc_usable_size(h.p) >= h.n);
		/* Every other one grown here first: a block of another thread moved or resized. */
		if (i % 2 == 0 && h.n > 0) {
			p = raspm_realloc(h.p, h.n + 100);
			assert_non_null(p);
			check_and_free(p, h.n, h.seed);
		} else {
			check_and_free(h.p, h.n, h.seed);
		}
	}
	return NULL;
}

static void test_blocks_freed_by_other_threads(void **state)
{
	pthread_t prod[PAIRS], cons[PAIRS];

	(void)state;
	for (int k = 0; k < PAIRS; k++) {
		assert_int_equal(pthread_create(&prod[k], NULL, produce, (void *)(uintptr_t)k), 0);
		assert_int_equal(pthread_create(&cons[k], NULL, consume, NULL), 0);
	}
	for (int k = 0; k < PAIRS; k++) {
		assert_int_equal(pthread_join(prod[k], NULL), 0);
		assert_int_equal(pthread_join(cons[k], NULL), 0);
	}
}

static atomic_bool stop;
static atomic_int started;
/* Blocks of each churning thread that it keeps: a fork's child, where that thread does not
 * exist, frees them (their pages are a dead thread's there), the parent after the join. */
#define LEFT 32
static unsigned char *left[2][LEFT];

static void *churn(void *arg)
{
	unsigned char **mine = arg;
	unsigned char *keep[64] = {0};
	unsigned i = 0;

	for (unsigned k = 0; k < LEFT; k++)
		mine[k] = filled(k * 97 + 1, k);
	while (!atomic_load(&stop)) {
		if (keep[i % 64])
			check_and_free(keep[i % 64], (i - 64) * 3037u % 120000u + 1u, i - 64);
		/* Up to 120 KB: a large object's allocation and free take the heap's lock. */
		keep[i % 64] = filled((size_t)(i * 3037u % 120000u + 1u), i);
		if (i++ == 0)
			atomic_fetch_add(&started, 1);
	}
	for (unsigned k = i < 64 ? 0 : i - 64; k < i; k++)
		check_and_free(keep[k % 64], k * 3037u % 120000u + 1u, k);
	return NULL;
}

/* The parent allocates across classes while a child runs (fork's or exec's). */
static void allocate_a_while(void)
{
	unsigned char *p[100];

	for (unsigned i = 0; i < 100; i++)
		p[i] = filled((size_t)i * 331 + 1, i);
	for (unsigned i = 0; i < 100; i++)
		check_and_free(p[i], (size_t)i * 331 + 1, i);
}

/* The child's exit status, 128 + the signal that killed it, or 255 if it still ran after 60 s
 * (then killed: a hang fails the test instead of holding it). */
static int wait_child(pid_t pid)
{
	int st;

	for (int ms = 0;; ms += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		assert_true(r >= 0);
		if (r == pid)
			break;
		if (ms >= 60000) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("child still running after 60 s: killed\n");
			return 255;
		}
		usleep(10000);
	}
	if (WIFSIGNALED(st))
		printf("child killed by signal %d\n", WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define FORKS 40

static void test_fork_while_threads_allocate(void **state)
{
	pthread_t t[2];

	(void)state;
	atomic_store(&stop, false);
	atomic_store(&started, 0);
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&t[k], NULL, churn, left[k]), 0);
	/* Each has its context (the runtime's own allocation, the sanitizer's malloc, which GCC
	 * 12's ASan does not guard across fork) before the first fork. */
	while (atomic_load(&started) < 2)
		sched_yield();
	/* Forks while two threads take the heap's lock often: the runtime's fork handlers take
	 * every heap's lock, so no child waits for one held at the fork. */
	for (int round = 0; round < FORKS; round++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			/* Only this thread lives here: allocate across classes and sizes, and free
			 * blocks of the threads left behind. */
			allocate_a_while();
			for (unsigned k = 0; k < 2 * LEFT; k++)
				check_and_free(left[k / LEFT][k % LEFT], k % LEFT * 97 + 1,
					       k % LEFT);
			_exit(0);
		}
		allocate_a_while(); /* and the parent goes on */
		assert_int_equal(wait_child(pid), 0);
	}
	atomic_store(&stop, true);
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	for (unsigned k = 0; k < 2 * LEFT; k++)
		check_and_free(left[k / LEFT][k % LEFT], k % LEFT * 97 + 1, k % LEFT);
}

/* exec: the program runs again as a child (argument "child"), allocates and exits 0, while
 * the parent allocates; the child allocates between fork and exec too. */
static const char *self_path;

static void test_exec_after_fork(void **state)
{
	(void)state;
	for (int round = 0; round < 3; round++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			raspm_free(raspm_malloc(100));
			execl(self_path, self_path, "child", (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 20; i++)
			allocate_a_while();
		assert_int_equal(wait_child(pid), 0);
	}
}

/* The module (dl-module.c, its malloc and free renamed) allocates in its constructor and
 * frees in its destructor, through the names this program exports (ENABLE_EXPORTS). */
static void test_dlopen_dlclose(void **state)
{
	for (int round = 0; round < 5; round++) {
		void *h = dlopen(*state, RTLD_NOW | RTLD_LOCAL);
		char *(*make)(const char *);
		char *s;

		if (!h)
			fail_msg("dlopen %s: %s", (const char *)*state, dlerror());
		make = (char *(*)(const char *))dlsym(h, "dl_module_make");
		assert_non_null(make);
		s = make("abc");
		assert_string_equal(s, "abc:module");
		raspm_free(s);
		assert_int_equal(dlclose(h), 0);
	}
}

static int child(void)
{
	char *p = raspm_malloc(6);
	void *a = raspm_aligned_alloc(4096, 5000);
	int *v = raspm_reallocarray(NULL, 1000, sizeof(int));

	if (!p || !a || !v || (uintptr_t)a % 4096 != 0 || __sanitizer_get_ownership(p) ||
	    __sanitizer_get_ownership(a))
		return 1;
	memcpy(p, "child", 6);
	for (int i = 0; i < 10000; i++)
		raspm_free(raspm_malloc((size_t)i));
	for (int i = 0; i < 1000; i++)
		v[i] = i;
	v = raspm_reallocarray(v, 100000, sizeof(int));
	if (!v || v[999] != 999 || strcmp(p, "child") != 0)
		return 1;
	raspm_free(v);
	raspm_free(a);
	raspm_free(raspm_memalign(64, 10));
	raspm_free(p);
	return 0;
}

int main(int argc, char **argv)
{
	static char module[4096];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_threads_that_never_free),
	    cmocka_unit_test(test_allocation_after_thread_exit),
	    cmocka_unit_test(test_blocks_freed_by_other_threads),
	    cmocka_unit_test(test_fork_while_threads_allocate),
	    cmocka_unit_test(test_exec_after_fork),
	    cmocka_unit_test_prestate(test_dlopen_dlclose, module),
	};

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	self_path = argv[0];
	snprintf(module, sizeof(module), "%s", RASP_TEST_MODULE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
