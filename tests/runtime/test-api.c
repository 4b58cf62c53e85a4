/* The public API of the runtime (include/rasp/rasp.h) through librasp, as a program outside
 * the project sees it: configuration and its rejection of bad values, allocation errors,
 * object queries, the array form, types, the context entry point, walk and collect. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rasp/rasp.h"

static void test_config_env_and_validation(void **state)
{
	rasp_config_t cfg;
	rasp_heap_t *h = (rasp_heap_t *)&cfg;

	(void)state;
	rasp_config_init(&cfg);
	assert_int_equal(cfg.sampling, RASP_SAMPLING_AUTO);
	assert_int_equal(cfg.sampling_mean, 102400);
	assert_int_equal(cfg.alloc_quantum, 8192);
	assert_int_equal(rasp_config_validate(&cfg), 0);

	setenv("RASP_SAMPLING", "on", 1);
	setenv("RASP_SAMPLING_MEAN", "4096", 1);
	setenv("RASP_SEED", "0x2a", 1);
	setenv("RASP_ALLOC_QUANTUM", "16384", 1);
	assert_int_equal(rasp_config_from_env(&cfg), 0);
	assert_int_equal(cfg.sampling, RASP_SAMPLING_ON);
	assert_int_equal(cfg.sampling_mean, 4096);
	assert_int_equal(cfg.has_seed, 1);
	assert_int_equal(cfg.seed, 42);
	assert_int_equal(cfg.alloc_quantum, 16384);
	assert_int_equal(rasp_heap_create(&h, NULL), 0);
	assert_int_equal(rasp_heap_sampling_active(h), 1);
	rasp_heap_destroy(h);

	/* Each bad value is refused, not clamped; heap creation fails with -EINVAL. */
	static const char *const bad[][2] = {
	    {"RASP_SAMPLING", "yes"},
	    {"RASP_SAMPLING_MEAN", "0"},
	    {"RASP_SAMPLING_MEAN", "-5"},
	    {"RASP_SAMPLING_MEAN", "12kb"},
	    {"RASP_SAMPLING_MEAN", "999999999999999999999"},
	    {"RASP_SEED", "seed"},
	    {"RASP_ALLOC_QUANTUM", "100"},
	    {"RASP_ALLOC_QUANTUM", "8193"},
	    {"RASP_ALLOC_QUANTUM", "99999999"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(bad[i][0], bad[i][1], 1);
		h = (rasp_heap_t *)&cfg;
		assert_int_equal(rasp_heap_create(&h, NULL), -EINVAL);
		assert_null(h);
		unsetenv(bad[i][0]);
	}
	unsetenv("RASP_SAMPLING");
	unsetenv("RASP_SAMPLING_MEAN");
	unsetenv("RASP_SEED");
	unsetenv("RASP_ALLOC_QUANTUM");

	rasp_config_init(&cfg);
	cfg.sampling = 7;
	assert_int_equal(rasp_heap_create(&h, &cfg), -EINVAL);
	rasp_config_init(&cfg);
	cfg.sampling_mean = 0;
	assert_int_equal(rasp_heap_create(&h, &cfg), -EINVAL);
	assert_int_equal(rasp_heap_create(NULL, NULL), -EINVAL);
	assert_string_equal(rasp_strerror(-EINVAL), "invalid argument");
	assert_string_equal(rasp_strerror(-ENOMEM), "out of memory");
	assert_non_null(rasp_strerror(-12345));
	/* -INT_MIN overflows: UBSan (the ASan build) reports it if negation is tried. */
	assert_string_equal(rasp_strerror(INT_MIN), "unknown error");
	assert_string_equal(rasp_strerror(INT_MAX), "unknown error");
}

static rasp_heap_t *heap_off(void)
{
	rasp_config_t cfg;
	rasp_heap_t *h;

	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_OFF;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	return h;
}

static void test_alloc_errors(void **state)
{
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "Foo");
	rasp_heap_stats_t st;

	(void)state;
	assert_non_null(t);
	errno = 0;
	assert_null(rasp_alloc(h, t, 0, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_alloc(h, NULL, 8, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_alloc(NULL, t, 8, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_alloc(h, t, 8, 0x80));
	assert_int_equal(errno, EINVAL);
	for (size_t s = SIZE_MAX - 40; s != 0; s++) {
		errno = 0;
		assert_null(rasp_alloc(h, t, s, 0));
		assert_int_equal(errno, ENOMEM);
	}
	errno = 0;
	assert_null(rasp_alloc(h, t, (size_t)1 << 62, RASP_ALLOC_PINNED));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(rasp_alloc_array(h, t, SIZE_MAX / 2, 3, 0));
	assert_int_equal(errno, EOVERFLOW);
	errno = 0;
	assert_null(rasp_type_register(h, NULL));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_type_register(NULL, "x"));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_context_get(NULL));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(rasp_context_alloc(NULL, t, 8, 0));
	assert_int_equal(errno, EINVAL);
	/* Nothing was corrupted: the heap still allocates, and nothing was mapped. */
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0);
	assert_non_null(rasp_alloc(h, t, 8, 0));
	rasp_heap_destroy(h);
}

static void test_objects_and_types(void **state)
{
	rasp_heap_t *h = heap_off();
	const rasp_type_t *a = rasp_type_register(h, "A"), *b = rasp_type_register(h, "B");
	rasp_context_t *c = rasp_context_get(h);
	char *p, *q, *big, *pin, *arr;

	(void)state;
	assert_ptr_equal(rasp_type_register(h, "A"), a);
	assert_ptr_not_equal(a, b);
	assert_string_equal(rasp_type_name(b), "B");
	p = rasp_alloc(h, a, 1, 0);
	q = rasp_alloc(h, b, 100, 0);
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal((uintptr_t)p % 8, 0);
	assert_int_equal(rasp_object_size(p), 16); /* 1 + the 8-byte header, rounded to 8 */
	assert_int_equal(rasp_object_size(q), 112);
	assert_ptr_equal(rasp_object_type(q), b);
	assert_int_equal(rasp_object_kind(q), RASP_KIND_SMALL);
	memset(q, 0x5a, 100);
	assert_ptr_equal(rasp_context_get(h), c);
	p = rasp_context_alloc(c, a, 50, 0);
	assert_non_null(p);
	assert_int_equal(rasp_object_size(p), 64);
	big = rasp_alloc(h, a, 84985, 0); /* 84993 with its header: large */
	assert_int_equal(rasp_object_kind(big), RASP_KIND_LARGE);
	assert_int_equal(rasp_object_size(big), 85000);
	assert_int_equal(rasp_object_kind(rasp_alloc(
			     h, a, RASP_LARGE_OBJECT_SIZE - 8 - RASP_OBJECT_HEADER_SIZE, 0)),
			 RASP_KIND_SMALL);
	memset(big, 1, 84985);
	pin = rasp_alloc(h, b, 64, RASP_ALLOC_PINNED);
	assert_int_equal(rasp_object_kind(pin), RASP_KIND_PINNED);
	arr = rasp_alloc_array(h, a, 10, 12, 0);
	assert_int_equal(rasp_object_size(arr), 128); /* 128: a class */
	rasp_free(h, big);
	rasp_free(h, pin);
	rasp_free(h, NULL);
	rasp_heap_destroy(h);
}

struct walk_count {
	long n[3];
	size_t bytes;
	const rasp_type_t *t;
};

static int count_walk(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	struct walk_count *w = arg;

	if (type != w->t || rasp_object_size(obj) != z)
		return -1;
	w->n[kind]++;
	w->bytes += z;
	return 0;
}

static void test_walk_and_collect(void **state)
{
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "W");
	struct walk_count w = {.t = t};
	rasp_heap_stats_t st;
	void *objs[3000], *large;
	int i;

	(void)state;
	for (i = 0; i < 3000; i++)
		objs[i] = rasp_alloc(h, t, (size_t)(i % 5 == 0 ? 5000 : 40),
				     i % 100 == 1 ? RASP_ALLOC_PINNED : 0);
	large = rasp_alloc(h, t, 100000, 0);
	for (i = 0; i < 3000; i += 2)
		rasp_free(h, objs[i]);
	assert_int_equal(rasp_heap_walk(h, count_walk, &w), 0);
	assert_int_equal(w.n[0] + w.n[1] + w.n[2], 1501);
	assert_int_equal(w.n[1], 1);
	assert_int_equal(w.n[2], 30);
	/* The walk retired this thread's context; allocation resumes with a refill. */
	assert_non_null(rasp_alloc(h, t, 8, 0));
	for (i = 1; i < 3000; i += 2)
		rasp_free(h, objs[i]);
	rasp_free(h, large);
	rasp_heap_collect(h);
	rasp_heap_stats(h, &st);
	/* One small object is still live (the 8-byte one): at most its region stays. */
	assert_true(st.regions <= 1);
	rasp_heap_destroy(h);
}

/* A walk's callback may read the heap it walks: stats, types (the walk holds the heap's
 * lock: rasp_heap_stats taking it again would wait forever); collecting, walking or
 * destroying that heap from the callback is refused (-EDEADLK), not a hang. */
struct walk_reads {
	rasp_heap_t *h;
	int calls, stats_ok, types_ok, collect_rc, walk_rc;
};

static int reading_walk(void *obj, const rasp_type_t *type, size_t z, int kind, void *arg)
{
	struct walk_reads *r = arg;
	rasp_heap_stats_t st;

	(void)obj;
	(void)z;
	(void)kind;
	if (r->calls++)
		return 0;
	r->stats_ok = rasp_heap_stats(r->h, &st) == 0 && st.live_bytes > 0;
	r->types_ok = rasp_type_register(r->h, rasp_type_name(type)) == type &&
		      rasp_type_register(r->h, "NewInWalk") != NULL;
	r->collect_rc = rasp_heap_collect(r->h);
	r->walk_rc = rasp_heap_walk(r->h, reading_walk, r);
	rasp_heap_destroy(r->h); /* refused: the walk goes on */
	return 0;
}

static void test_walk_callback_reads_the_heap(void **state)
{
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "R");
	struct walk_reads r = {.h = h};
	void *objs[100];

	(void)state;
	for (int i = 0; i < 100; i++)
		assert_non_null(objs[i] = rasp_alloc(h, t, 40, 0));
	assert_int_equal(rasp_heap_walk(h, reading_walk, &r), 0);
	assert_int_equal(r.calls, 100);
	assert_true(r.stats_ok);
	assert_true(r.types_ok);
	assert_int_equal(r.collect_rc, -EDEADLK);
	assert_int_equal(r.walk_rc, -EDEADLK);
	/* After the walk, all of it works again. */
	assert_int_equal(rasp_heap_collect(h), 0);
	for (int i = 0; i < 100; i++)
		rasp_free(h, objs[i]);
	rasp_heap_destroy(h);
}

/* ASan builds: a write to a freed object is reported (the runtime poisons freed payloads).
 * Runs in a child; the suite's ASAN_OPTIONS make ASan exit with 99. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang's way of saying it */
#define TEST_ASAN 1
#endif
#endif
static void test_use_after_free_reported_under_asan(void **state)
{
#ifdef TEST_ASAN
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "U");
	volatile char *p = rasp_alloc(h, t, 64, 0);
	int status;
	pid_t pid;

	(void)state;
	rasp_free(h, (void *)p);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)!freopen("/dev/null", "w", stderr);
		p[10] = 1;
		_exit(0);
	}
	/* Bounded: a child forked while another thread held the dynamic linker's lock would
	 * hang in ASan's report (the suite runs this test without LTTng's threads). */
	for (int waited = 0;; waited++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		assert_int_equal(r, 0);
		if (waited == 600) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("the child did not end within 60 s (ASan's report hung)");
		}
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	/* ASan's report exits with the exitcode the suite sets (ASAN_OPTIONS exitcode=99). */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 99);
	/* The heap still allocates, and reuses memory, with nothing reported. */
	for (int i = 0; i < 100000; i++)
		rasp_free(h, rasp_alloc(h, t, 64, 0));
	rasp_heap_destroy(h);
#else
	(void)state;
	skip();
#endif
}

/* A pointer inside an object is refused by every build, release included (this test links
 * the release librasp): a large object stays mapped and usable, a small one intact. */
static void test_free_refuses_interior_pointers(void **state)
{
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "Blob");
	rasp_heap_stats_t st;
	char *big = rasp_alloc(h, t, 300000, 0), *small = rasp_alloc(h, t, 256, 0);

	(void)state;
	assert_non_null(big);
	assert_non_null(small);
	memset(big, 0, 300000);
	memset(small, 0, 256);
	errno = 0;
	rasp_free(h, big + 4096);
	assert_int_equal(errno, EINVAL);
	rasp_free(h, big + 64);
	rasp_free(h, small + 64); /* inside the block: not its start */
	rasp_free(h, small + 3);  /* misaligned */
	/* A word that reads as a live object's header (a type, the free flag clear) before a
	 * pointer inside a block: still refused, by the pointer's position in its page. */
	memcpy(small + 120, &t, sizeof(t));
	rasp_free(h, small + 128);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, 5);
	/* Still mapped and ours: writing the whole objects must not fault. */
	memset(big, 0xab, 300000);
	memset(small, 0xcd, 256);
	assert_int_equal(rasp_object_size(small), 288); /* 264 in the class of 257..288 */
	rasp_free(h, big);
	rasp_free(h, small);
	rasp_free(h, small); /* double free */
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, 6);
	rasp_heap_destroy(h);
}

/* Pointers into memory rasp never mapped or has given back are refused by every build, not
 * read (a release librasp reading an unmapped header faults): a second
 * free of a large object past the large-object cache (unmapped at its first free), of a
 * small object whose segment rasp_heap_collect unmapped, and of memory rasp never mapped
 * (the program's own data and malloc's). */
static void test_free_refuses_unmapped_and_foreign(void **state)
{
	static char not_ours[64];
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "Blob");
	rasp_heap_stats_t st;
	char *huge = rasp_alloc(h, t, 20 << 20, 0), *small = rasp_alloc(h, t, 256, 0);
	char *theirs = malloc(4096);

	(void)state;
	assert_non_null(huge);
	assert_non_null(small);
	assert_non_null(theirs);
	rasp_free(h, huge);
	rasp_free(h, small);
	assert_int_equal(rasp_heap_collect(h), 0);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.regions, 0); /* both mappings gone */
	errno = 0;
	rasp_free(h, huge);
	assert_int_equal(errno, EINVAL);
	rasp_free(h, small);
	rasp_free(h, not_ours + 16);
	rasp_free(h, theirs);
	rasp_heap_stats(h, &st);
	assert_int_equal(st.invalid_frees, 4);
	free(theirs);
	rasp_heap_destroy(h);
}

/* An object freed through another heap (the release library's fast free tests the
 * segment's heap and kind in one word): refused there, with its heap untouched, whose own
 * free then succeeds (a free that tested only the kind would put it into its heap silently,
 * and the real free would then be a "double free"). Small and large objects. */
static void test_free_through_another_heap_refused(void **state)
{
	rasp_heap_t *a = heap_off(), *b = heap_off();
	const rasp_type_t *t = rasp_type_register(a, "A");
	/* Small (two classes), in an arena, and on a mapping of its own. */
	size_t sizes[] = {24, 1000, 200000, 20000000};
	rasp_heap_stats_t st;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = rasp_alloc(a, t, sizes[i], 0);

		assert_non_null(p);
		errno = 0;
		rasp_free(b, p);
		assert_int_equal(errno, EINVAL);
		rasp_heap_stats(b, &st);
		assert_int_equal(st.invalid_frees, i + 1);
		/* No heap at all: refused before anything is read or counted (the free's heap
		 * compare also stands for the NULL test, free.c), the object still live. */
		errno = 0;
		rasp_free(NULL, p);
		assert_int_equal(errno, EINVAL);
		rasp_heap_stats(a, &st);
		assert_int_equal(st.invalid_frees, 0);
		assert_true(st.live_bytes >= sizes[i]);
		rasp_free(a, p);
		rasp_heap_stats(a, &st);
		assert_int_equal(st.invalid_frees, 0);
		assert_int_equal(st.live_bytes, 0);
	}
	rasp_heap_destroy(a);
	rasp_heap_destroy(b);
}

/* rasp_heap_stats's live bytes follow allocations and frees, the frees the owner's list keeps
 * included (counted from its per-class words, heap.c): never above the blocks of the objects
 * alive, and short of them by no more than the fast path took from each class's window since
 * its last slow path (a window is at most max(8, ceil(quantum / block)) blocks). */
static void test_stats_live_bytes_follow_frees(void **state)
{
	enum { N = 3000 };
	static void *objs[N];
	rasp_heap_t *h = heap_off();
	const rasp_type_t *t = rasp_type_register(h, "Foo");
	const size_t sizes[2] = {100, 1000};
	uint64_t truth = 0, slack = 0;
	rasp_heap_stats_t st;

	(void)state;
	assert_non_null(t);
	for (size_t i = 0; i < N; i++) {
		objs[i] = rasp_alloc(h, t, sizes[i & 1], 0);
		assert_non_null(objs[i]);
		truth += rasp_object_size(objs[i]);
	}
	for (size_t j = 0; j < 2; j++) {
		uint64_t b = rasp_object_size(objs[j]), blocks = (8192 + b - 1) / b;

		slack += (blocks > 8 ? blocks : 8) * b; /* the default quantum, 8 KiB */
	}
	/* Frees in three rounds: every third object, then the rest of the even ones, then all
	 * (four checks, the first before any free);
	 * the first stay on the owner's lists, later ones go past the lists' bounds. */
	for (int round = 0; round < 4; round++) {
		assert_int_equal(rasp_heap_stats(h, &st), 0);
		assert_true(st.live_bytes <= truth);
		assert_true(st.live_bytes + slack >= truth);
		for (size_t i = 0; i < N; i++) {
			int go = round == 0 ? i % 3 == 0 : round == 1 ? i % 2 == 0 : round == 2;

			if (go && objs[i]) {
				truth -= rasp_object_size(objs[i]);
				rasp_free(h, objs[i]);
				objs[i] = NULL;
			}
		}
	}
	assert_int_equal(truth, 0);
	assert_int_equal(rasp_heap_stats(h, &st), 0);
	assert_int_equal(st.live_bytes, 0);
	rasp_heap_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_env_and_validation),
	    cmocka_unit_test(test_alloc_errors),
	    cmocka_unit_test(test_free_refuses_interior_pointers),
	    cmocka_unit_test(test_free_refuses_unmapped_and_foreign),
	    cmocka_unit_test(test_free_through_another_heap_refused),
	    cmocka_unit_test(test_objects_and_types),
	    cmocka_unit_test(test_stats_live_bytes_follow_frees),
	    cmocka_unit_test(test_walk_and_collect),
	    cmocka_unit_test(test_walk_callback_reads_the_heap),
	    cmocka_unit_test(test_use_after_free_reported_under_asan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
