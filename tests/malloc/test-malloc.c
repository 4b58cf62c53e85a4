/* librasp-malloc's C API, each edge case a test, in a process that runs with the library
 * preloaded (CTest sets LD_PRELOAD): blocks come from rasp's heap with the family's type,
 * 16-aligned; malloc(0), sizes near SIZE_MAX, overflowing products, bad alignments; glibc's
 * own pointers freed and resized by glibc; errno across free; the library quiet. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* A failed realloc leaves its block alive, which GCC's use-after-free check does not know. */
#pragma GCC diagnostic ignored "-Wuse-after-free"

#include "rasp/rasp.h"

extern void *__libc_malloc(size_t n);

/* Sizes the compiler cannot see, so that its checks of allocation sizes let the deliberate
 * overflows through. */
static size_t opaque(size_t n)
{
	volatile size_t v = n;

	return v;
}

static void *opaque_null(void)
{
	void *volatile v = NULL;

	return v;
}

/* The rasp object behind a pointer malloc returned: the pointer itself, its header before it
 * (malloc/block.c: no word of malloc's own). */
static void *object_of(void *p)
{
	return p;
}

static void *opaque_ptr(void *p)
{
	void *volatile v = p;

	return v;
}

static const char *family(void *p)
{
	const rasp_type_t *t = rasp_object_type(object_of(p));

	return t ? rasp_type_name(t) : "(none)";
}

static void check_block(void *p, size_t n, const char *fam)
{
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 16, 0);
	assert_true(malloc_usable_size(p) >= n);
	assert_string_equal(family(p), fam);
	memset(p, 0xa5, n); /* writable to its end */
}

static void test_preloaded(void **state)
{
	void *p = malloc(24);

	(void)state;
	assert_non_null(getenv("LD_PRELOAD"));
	check_block(p, 24, "malloc");
	free(p);
}

/* Every size up to past the inline path's (8184) and around the last small class (84992:
 * n + 8 rounded up to 16 at it and past it), each 16-aligned in its own class. */
static void test_sizes_aligned_and_usable(void **state)
{
	static const size_t big[] = {8192, 65536, 85000, 100000, 1 << 20, 5 << 20};

	(void)state;
	for (size_t n = 0; n <= 8300; n++) {
		void *p = malloc(n);

		check_block(p, n, "malloc");
		free(p);
	}
	for (size_t n = 84992 - 40; n <= 84992 + 40; n++) {
		void *p = malloc(n);

		check_block(p, n, "malloc");
		free(p);
	}
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		void *p = malloc(big[i]);

		check_block(p, big[i], "malloc");
		free(p);
	}
}

static void test_malloc_zero_is_unique(void **state)
{
	void *a = malloc(0), *b = malloc(0);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal((uintptr_t)a % 16, 0);
	free(a);
	free(b);
}

static void test_huge_sizes_enomem(void **state)
{
	static const size_t sizes[] = {SIZE_MAX,
				       SIZE_MAX - 7,
				       SIZE_MAX - 16,
				       PTRDIFF_MAX,
				       (size_t)PTRDIFF_MAX + 1u,
				       (size_t)PTRDIFF_MAX / 2,
				       (size_t)1 << 62};

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		assert_null(malloc(sizes[i]));
		assert_int_equal(errno, ENOMEM);
		errno = 0;
		assert_null(calloc(1, sizes[i]));
		assert_int_equal(errno, ENOMEM);
		errno = 0;
		assert_null(aligned_alloc(64, sizes[i]));
		assert_int_equal(errno, ENOMEM);
		errno = 0;
		assert_null(memalign(4096, sizes[i]));
		assert_int_equal(errno, ENOMEM);
	}
}

static void test_calloc_zeroes_and_overflow(void **state)
{
	unsigned char *p;

	(void)state;
	/* A dirty block of the size first, so calloc's has to be cleared. */
	for (size_t n = 1; n < 3000; n += 97) {
		p = malloc(n);
		memset(p, 0xff, n);
		free(p);
		p = calloc(n, 1);
		check_block(p, 0, "calloc");
		for (size_t i = 0; i < n; i++)
			assert_int_equal(p[i], 0);
		free(p);
	}
	errno = 0;
	assert_null(calloc(opaque(SIZE_MAX / 2), 3));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(calloc(opaque((size_t)1 << 33), (size_t)1 << 33));
	assert_int_equal(errno, ENOMEM);
	p = calloc(0, 0);
	assert_non_null(p);
	free(p);
}

static void test_realloc_edges(void **state)
{
	char *p, *q;

	(void)state;
	/* realloc(NULL, n) is malloc(n), of the family realloc (a NULL the compiler cannot
	 * see: GCC turns realloc(NULL, n) into malloc(n)). */
	p = realloc(opaque_null(), 10);
	check_block(p, 10, "realloc");
	memcpy(p, "0123456789", 10);
	for (size_t n = 11; n < 200000; n = n * 3 / 2) { /* grows, moves, keeps the bytes */
		p = realloc(p, n);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		assert_true(malloc_usable_size(p) >= n);
		assert_memory_equal(p, "0123456789", 10);
	}
	p = realloc(p, 5); /* shrinks far: a new block */
	assert_memory_equal(p, "01234", 5);
	/* Within its block and using half of it: in place. */
	q = realloc(p, malloc_usable_size(p));
	assert_ptr_equal(q, p);
	/* Too large: NULL, ENOMEM, the block untouched. */
	errno = 0;
	assert_null(realloc(q, opaque(SIZE_MAX - 4)));
	assert_int_equal(errno, ENOMEM);
	assert_memory_equal(q, "01234", 5);
	/* Size 0 frees, as glibc's does, and returns NULL. */
	assert_null(realloc(q, 0));
}

static void test_reallocarray(void **state)
{
	char *p = reallocarray(opaque_null(), 4, 8);

	(void)state;
	check_block(p, 32, "realloc");
	strcpy(p, "keep");
	errno = 0;
	assert_null(reallocarray(p, opaque(SIZE_MAX / 2), 4));
	assert_int_equal(errno, ENOMEM);
	assert_string_equal(p, "keep");
	p = reallocarray(p, 100, 10);
	assert_string_equal(p, "keep");
	free(p);
}

static void test_posix_memalign(void **state)
{
	void *p = (void *)1;
	int saved;

	(void)state;
	for (size_t a = sizeof(void *); a <= ((size_t)4 << 20); a <<= 1) {
		for (size_t n = 0; n < 70000; n = n * 4 + 1) {
			assert_int_equal(posix_memalign(&p, a, n), 0);
			assert_int_equal((uintptr_t)p % a, 0);
			assert_true(malloc_usable_size(p) >= n);
			memset(p, 1, n);
			/* Up to 1 MiB on rasp's heap; larger alignments are glibc's. */
			if (a <= ((size_t)1 << 20))
				assert_string_equal(family(p), "aligned");
			free(p);
		}
	}
	p = (void *)1;
	assert_int_equal(posix_memalign(&p, 0, 8), EINVAL);
	assert_int_equal(posix_memalign(&p, 4, 8), EINVAL);  /* not a multiple of void * */
	assert_int_equal(posix_memalign(&p, 24, 8), EINVAL); /* not a power of 2 */
	assert_ptr_equal(p, (void *)1);			     /* left alone */
	errno = 12345;
	saved = posix_memalign(&p, 64, SIZE_MAX - 100);
	assert_int_equal(saved, ENOMEM);
	assert_int_equal(errno, 12345);
}

static void test_aligned_alloc_memalign(void **state)
{
	void *p;

	(void)state;
	p = aligned_alloc(256, 1000);
	check_block(p, 1000, "aligned");
	assert_int_equal((uintptr_t)p % 256, 0);
	free(p);
	errno = 0;
	assert_null(aligned_alloc(48, 96));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(aligned_alloc(0, 96));
	assert_int_equal(errno, EINVAL);
	p = memalign(48, 100); /* rounded up to 64, as glibc does */
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 64, 0);
	free(p);
	p = memalign(1, 10);
	check_block(p, 10, "aligned");
	free(p);
}

static void test_valloc_pvalloc(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	(void)state;
	p = valloc(10);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % (uintptr_t)pg, 0);
	assert_true(malloc_usable_size(p) >= 10);
	free(p);
	p = pvalloc(0);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % (uintptr_t)pg, 0);
	assert_true(malloc_usable_size(p) >= (size_t)pg);
	memset(p, 1, (size_t)pg);
	free(p);
	p = pvalloc((size_t)pg + 1);
	assert_true(malloc_usable_size(p) >= 2 * (size_t)pg);
	free(p);
	errno = 0;
	assert_null(pvalloc(SIZE_MAX - 10));
	assert_int_equal(errno, ENOMEM);
}

/* glibc's pointers (from before the heap existed, or from glibc's internals) are glibc's to
 * free: no refusal, no crash. A realloc of one is an allocation of the program's all the same:
 * it moves to rasp's heap (where its bytes are trials), its contents kept, and glibc's arena
 * does not grow by 40 KB (mallinfo2 is glibc's own count; its freed chunk stays counted in its
 * thread cache). */
static void test_glibc_pointers(void **state)
{
	char *p = __libc_malloc(40);
	size_t before;

	(void)state;
	assert_non_null(p);
	strcpy(p, "glibc");
	assert_true(malloc_usable_size(p) >= 40);
	before = mallinfo2().uordblks;
	p = realloc(p, 40000);
	assert_non_null(p);
	assert_string_equal(p, "glibc");
	assert_true(mallinfo2().uordblks < before + 20000);
	assert_true(malloc_usable_size(p) >= 40000);
	free(p);
	free(__libc_malloc(100000));
}

static void test_free_keeps_errno(void **state)
{
	void *p = malloc(100), *g = __libc_malloc(100);

	(void)state;
	errno = EDOM;
	free(p);
	free(g);
	free(NULL);
	assert_int_equal(errno, EDOM);
}

/* errno as free left it: GCC knows free keeps errno (POSIX says so) and would reuse the value
 * from before the call. */
static int errno_now(void)
{
	return *(volatile int *)&errno;
}

/* free's inline path (malloc/heap.h) hands every pointer it cannot prove a live block's start
 * of this heap to the checked path: a double free and an interior pointer are refused with
 * EINVAL, never pushed on a list, so the next allocations are distinct blocks. */
static void test_free_refuses_double_and_interior(void **state)
{
	char *p = malloc(32), *q = malloc(64), *a, *b;

	(void)state;
	assert_non_null(p);
	assert_non_null(q);
	free(p);
	errno = 0;
	free(opaque_ptr(p));
	assert_int_equal(errno_now(), EINVAL);
	/* (A 0 word before an interior pointer would read as block.c's word before an object
	 * 8 bytes in: the pointer 16 bytes in is then taken for its object's, as the checked
	 * path always did. Not 0 here.) */
	memset(q, 0xff, 64);
	errno = 0;
	free(q + opaque(16));
	assert_int_equal(errno_now(), EINVAL);
	a = malloc(32);
	b = malloc(32);
	assert_ptr_not_equal(a, b);
	memset(a, 1, 32);
	memset(b, 2, 32);
	assert_int_equal(a[31], 1);
	free(a);
	free(b);
	memset(q, 3, 64); /* still q's */
	errno = 0;
	free(q);
	assert_int_equal(errno_now(), 0);
}

/* An object of the program's own heap passed to free is refused (another heap's), and stays
 * its heap's, alive. */
static void test_free_refuses_other_heap(void **state)
{
	rasp_heap_t *h;
	const rasp_type_t *t;
	char *o;

	(void)state;
	assert_int_equal(rasp_heap_create(&h, NULL), 0);
	t = rasp_type_register(h, "other");
	assert_non_null(t);
	o = rasp_alloc(h, t, 48, 0);
	assert_non_null(o);
	errno = 0;
	free(o);
	assert_int_equal(errno_now(), EINVAL);
	assert_ptr_equal(rasp_object_type(o), t);
	errno = 0;
	rasp_free(h, o);
	assert_int_equal(errno_now(), 0);
	rasp_heap_destroy(h);
}

/* A block freed by another thread than its allocator's, and blocks of many sizes freed by
 * their own thread past the free cache's bound: each comes back once. */
static void *free_all(void *arg)
{
	void **v = arg;

	for (int i = 0; i < 1000; i++)
		free(v[i]);
	return NULL;
}

static void test_free_cross_thread_and_bulk(void **state)
{
	static void *v[1000];
	pthread_t t;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		v[i] = malloc((size_t)(i % 300) + 1);
		assert_non_null(v[i]);
		memset(v[i], 0x5a, (size_t)(i % 300) + 1);
	}
	assert_int_equal(pthread_create(&t, NULL, free_all, v), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 1000; i++)
			v[i] = malloc(40);
		for (int i = 0; i < 1000; i++)
			for (int j = i + 1; j < i + 4 && j < 1000; j++)
				assert_ptr_not_equal(v[i], v[j]);
		errno = 0;
		for (int i = 0; i < 1000; i++)
			free(v[i]);
		assert_int_equal(errno_now(), 0);
	}
}

static void test_usable_size_null(void **state)
{
	(void)state;
	assert_int_equal(malloc_usable_size(NULL), 0);
}

/* Without a session the library prints nothing: a program run with it preloaded (inherited
 * LD_PRELOAD) writes only its own output. */
static void test_quiet(void **state)
{
	int fd[2];
	char buf[256];
	ssize_t n;
	pid_t pid;
	int st;

	(void)state;
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		execl("/bin/sh", "sh", "-c", "ls / >/dev/null; echo done", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	n = read(fd[0], buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = 0;
	close(fd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_string_equal(buf, "done\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_preloaded),
	    cmocka_unit_test(test_sizes_aligned_and_usable),
	    cmocka_unit_test(test_malloc_zero_is_unique),
	    cmocka_unit_test(test_huge_sizes_enomem),
	    cmocka_unit_test(test_calloc_zeroes_and_overflow),
	    cmocka_unit_test(test_realloc_edges),
	    cmocka_unit_test(test_reallocarray),
	    cmocka_unit_test(test_posix_memalign),
	    cmocka_unit_test(test_aligned_alloc_memalign),
	    cmocka_unit_test(test_valloc_pvalloc),
	    cmocka_unit_test(test_glibc_pointers),
	    cmocka_unit_test(test_free_keeps_errno),
	    cmocka_unit_test(test_free_refuses_double_and_interior),
	    cmocka_unit_test(test_free_refuses_other_heap),
	    cmocka_unit_test(test_free_cross_thread_and_bulk),
	    cmocka_unit_test(test_usable_size_null),
	    cmocka_unit_test(test_quiet),
	};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* The sanitizers are the process's malloc themselves (their runtime is first in the
	 * link order and intercepts every allocation call): a preloaded malloc cannot be
	 * tested under them. */
	printf("skipped: a preloaded malloc cannot run under ASan or TSan, which replace "
	       "malloc themselves\n");
	return 77;
#endif
	return cmocka_run_group_tests(tests, NULL, NULL);
}
