/* librasp-malloc across a process's life, preloaded (CTest sets LD_PRELOAD): threads that
 * allocate and exit without freeing (their blocks freed by another thread) or allocate in a
 * key destructor after the runtime ended their context, fork while other
 * threads allocate (parent and child keep allocating), exec of a program that allocates,
 * dlopen and dlclose of a module that allocates in its constructor and frees in its
 * destructor; the unwinder loaded at start where stacks may be taken. Registered with LTTng-UST
 * waiting for its daemon, so a fork's child restarts LTTng-UST's listener threads, which allocate
 * (the fork test hung 3 s a fork, or forever with LTTNG_UST_REGISTER_TIMEOUT=-1, before the
 * runtime's fork handlers were installed at load). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
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

#define THREADS	   4
#define PER_THREAD 20000

static void *blocks[THREADS][PER_THREAD];

static void *alloc_and_exit(void *arg)
{
	void **mine = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		mine[i] = malloc((size_t)(i % 700) + 1);
		memset(mine[i], i & 0xff, (size_t)(i % 700) + 1);
	}
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
			assert_int_equal(((unsigned char *)blocks[k][i])[0], i & 0xff);
			free(blocks[k][i]);
		}
}

/* A key made after the thread's first allocation (so after the runtime's exit key): its
 * destructor runs after the runtime has ended the thread's context, and still allocates. */
static pthread_key_t late_key;

static void late_destructor(void *p)
{
	char *q = malloc(300);

	memset(q, 1, 300);
	free(q);
	free(p);
}

static void *alloc_in_key_destructor(void *arg)
{
	(void)arg;
	free(malloc(64));
	pthread_setspecific(late_key, malloc(100));
	return NULL;
}

static void test_allocation_after_thread_exit(void **state)
{
	pthread_t t[8];

	(void)state;
	free(malloc(10));
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	for (int k = 0; k < 8; k++)
		assert_int_equal(pthread_create(&t[k], NULL, alloc_in_key_destructor, NULL), 0);
	for (int k = 0; k < 8; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
	pthread_key_delete(late_key);
}

static atomic_bool stop;

static void *churn(void *arg)
{
	void *keep[64] = {0};
	unsigned i = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		free(keep[i % 64]);
		/* Up to 120 KB: a large object's allocation and free take the heap's lock. */
		keep[i % 64] = malloc((i * 3037u) % 120000u + 1u);
		i++;
	}
	for (i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

static void test_fork_while_threads_allocate(void **state)
{
	pthread_t t[2];

	(void)state;
	atomic_store(&stop, false);
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&t[k], NULL, churn, NULL), 0);
	/* 200 forks while two threads take the heap's lock often: a fork's child waited forever
	 * for a lock held at the fork before the runtime's fork handlers took every heap's. */
	for (int round = 0; round < 200; round++) {
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (pid == 0) {
			/* Only this thread lives here: allocate across classes and sizes. */
			void *p[300];

			for (int i = 0; i < 300; i++)
				p[i] = malloc((size_t)i * 331 + 1);
			for (int i = 0; i < 300; i++)
				free(p[i]);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		free(malloc(100)); /* and the parent goes on */
	}
	atomic_store(&stop, true);
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_join(t[k], NULL), 0);
}

/* exec: the program runs again as a child (argument "child"), preloaded as LD_PRELOAD
 * passes on, allocates and exits 0. */
static const char *self_path;

static void test_exec(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(self_path, self_path, "child", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_dlopen_dlclose(void **state)
{
	for (int round = 0; round < 5; round++) {
		void *h = dlopen(*state, RTLD_NOW | RTLD_LOCAL);
		char *(*make)(const char *);
		char *s;

		assert_non_null(h);
		make = (char *(*)(const char *))dlsym(h, "dl_module_make");
		assert_non_null(make);
		s = make("abc");
		assert_string_equal(s, "abc:module");
		free(s);
		assert_int_equal(dlclose(h), 0);
	}
}

/* Whether libunwind is mapped into this process. */
static bool unwinder_mapped(void)
{
	static char maps[1 << 20];
	FILE *f = fopen("/proc/self/maps", "re");
	size_t n = f ? fread(maps, 1, sizeof(maps) - 1, f) : 0;

	if (f)
		fclose(f);
	maps[n] = '\0';
	return strstr(maps, "libunwind") != NULL;
}

/* This program run again with one more variable: its exit status ("maps": 0 when libunwind is
 * not mapped, 1 when it is). */
static int run_maps_child(const char *var)
{
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		putenv((char *)var);
		execl(self_path, self_path, "maps", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The unwinder is loaded with the heap, before main, wherever a sample may take a stack: at a
 * sample it would be loaded inside a malloc that may hold the loader's locks (LTTng-UST's state
 * dump allocates inside dl_iterate_phdr), and its dlopen in another thread then deadlocked
 * against it (malloc/heap.c). Not where no stack can be taken: RASP_STACKS=0, RASP_SAMPLING=off. */
static void test_unwinder_loaded_at_start(void **state)
{
	(void)state;
#ifndef RASP_TEST_LIBUNWIND
	printf("skipped: this build has no libunwind (its stacks come from glibc's backtrace)\n");
	return;
#endif
	assert_true(unwinder_mapped());
	assert_int_equal(run_maps_child("RASP_STACKS=0"), 0);
	assert_int_equal(run_maps_child("RASP_SAMPLING=off"), 0);
	assert_int_equal(run_maps_child("RASP_STACKS=1"), 1);
}

static int child(void)
{
	char *p = strdup("child");

	for (int i = 0; i < 10000; i++)
		free(malloc((size_t)i));
	if (!p || strcmp(p, "child") != 0)
		return 1;
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	static char module[4096];
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_threads_that_never_free),
	    cmocka_unit_test(test_allocation_after_thread_exit),
	    cmocka_unit_test(test_fork_while_threads_allocate),
	    cmocka_unit_test(test_exec),
	    cmocka_unit_test_prestate(test_dlopen_dlclose, module),
	    cmocka_unit_test(test_unwinder_loaded_at_start),
	};

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	if (argc > 1 && strcmp(argv[1], "maps") == 0)
		return unwinder_mapped() ? 1 : 0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	printf("skipped: a preloaded malloc cannot run under ASan or TSan, which replace "
	       "malloc themselves\n");
	return 77;
#endif
	self_path = argv[0];
	snprintf(module, sizeof(module), "%s", RASP_TEST_MODULE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
