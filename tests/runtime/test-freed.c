/* runtime/freed.c: frees of sampled objects kept for one SampledObjectsFreed. The seam
 * rasp__freed_keep_always keeps them as an LTTng session enabling the event would (no session
 * here: the event itself is tested through LTTng in test-lttng.c); every object is sampled
 * (mean 1) and marked (the ledger's hooks). What must hold: a kept block is handed out again
 * only after its batch goes, a second free of it is refused, and each bound sends the batch. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/test-heap.h"
#include "internal.h"
#include "ledger.h"

static struct ledger led;

static rasp_heap_t *sampled_heap(void)
{
	rasp_heap_t *h = test_heap(RASP_SAMPLING_ON, 1, 5);

	assert_non_null(h);
	ledger_attach(&led, h);
	assert_int_equal(rasp_heap_set_error_handler(h, RASP_ON_INVALID_COUNT, NULL, NULL), 0);
	rasp__freed_keep_always = true;
	rasp__freed_age_ns = UINT64_MAX; /* no batch sent by the clock: the tests count */
	return h;
}

static void done(rasp_heap_t *h)
{
	rasp_heap_destroy(h);
	ledger_fini(&led);
	rasp__freed_keep_always = false;
	rasp__freed_age_ns = 100000000u;
}

static uint32_t kept(rasp_heap_t *h)
{
	return rasp__context_peek(h)->freed.n;
}

/* Kept blocks are not handed out again while kept; once the 64th free sends the batch, they
 * are (the class's list takes them back). */
static void test_kept_blocks_wait_for_their_batch(void **state)
{
	rasp_heap_t *h = sampled_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *a[RASP__FREED_MAX], *b[200];
	int reused = 0;

	(void)state;
	for (int i = 0; i < RASP__FREED_MAX; i++)
		assert_non_null(a[i] = rasp_alloc(h, t, 24, 0));
	for (int i = 0; i < RASP__FREED_MAX - 1; i++)
		rasp_free(h, a[i]);
	assert_int_equal(kept(h), RASP__FREED_MAX - 1);
	assert_int_equal(led.frees, RASP__FREED_MAX - 1); /* told at the free (the hook) */
	for (int i = 0; i < 200; i++) {
		assert_non_null(b[i] = rasp_alloc(h, t, 24, 0));
		for (int j = 0; j < RASP__FREED_MAX - 1; j++)
			reused += b[i] == a[j];
	}
	assert_int_equal(reused, 0);
	assert_int_equal(led.sample_over_live, 0);
	rasp_free(h, a[RASP__FREED_MAX - 1]); /* the 64th: the batch goes, its blocks back */
	assert_int_equal(kept(h), 0);
	for (int i = 0; i < 200; i++)
		rasp_free(h, b[i]);
	assert_int_equal(led.frees, RASP__FREED_MAX + 200);
	assert_int_equal(led.free_unpaired + led.free_bad_size + led.sample_over_live, 0);
	assert_int_equal(rasp_heap_invalid_count(h, RASP_INVALID_DOUBLE_FREE), 0);
	done(h);
}

/* A second free of a kept block is a double free, refused and counted; its batch still frees
 * it once. */
static void test_kept_block_double_free_refused(void **state)
{
	rasp_heap_t *h = sampled_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *p = rasp_alloc(h, t, 100, 0), *q = rasp_alloc_aligned(h, t, 100, 256, 0);

	(void)state;
	rasp_free(h, p);
	rasp_free(h, q);
	assert_int_equal(kept(h), 2);
	errno = 0;
	rasp_free(h, p);
	assert_int_equal(errno, EINVAL);
	rasp_free(h, q);
	assert_null(rasp_realloc(h, p, 10));
	assert_int_equal(rasp_heap_invalid_count(h, RASP_INVALID_DOUBLE_FREE), 3);
	assert_int_equal(kept(h), 2);
	assert_int_equal(led.frees, 2);
	done(h);
}

/* A large object's free sends the batch at once, itself in it; so do 1 MiB of kept blocks. */
static void test_large_and_held_bytes_send(void **state)
{
	rasp_heap_t *h = sampled_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	void *small = rasp_alloc(h, t, 64, 0), *big = rasp_alloc(h, t, 8u << 20, 0);
	void *mid[20];

	(void)state;
	rasp_free(h, small);
	assert_int_equal(kept(h), 1);
	rasp_free(h, big);
	assert_int_equal(kept(h), 0);
	for (int i = 0; i < 20; i++)
		assert_non_null(mid[i] = rasp_alloc(h, t, 100000, 0));
	for (int i = 0; i < 10; i++)
		rasp_free(h, mid[i]);
	/* 10 x ~100 KB: past 1 MiB at the 11th */
	assert_int_equal(kept(h), 10);
	rasp_free(h, mid[10]);
	assert_int_equal(kept(h), 0);
	for (int i = 11; i < 20; i++)
		rasp_free(h, mid[i]);
	assert_int_equal(led.free_unpaired + led.free_bad_size + led.sample_over_live, 0);
	done(h);
}

static void *free_some(void *arg)
{
	rasp_heap_t *h = arg;
	const rasp_type_t *t = rasp_type_register(h, "t");

	for (int i = 0; i < 5; i++)
		rasp_free(h, rasp_alloc(h, t, 48, 0));
	return (void *)(uintptr_t)rasp__context_peek(h)->freed.n;
}

/* A thread's exit sends what it kept: its context, kept for the next thread, holds none. */
static void test_thread_exit_sends(void **state)
{
	rasp_heap_t *h = sampled_heap();
	pthread_t th;
	void *n;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, free_some, h), 0);
	assert_int_equal(pthread_join(th, &n), 0);
	assert_int_equal((uintptr_t)n, 5);
	for (struct rasp_context *c = h->spare_contexts; c; c = c->next)
		assert_int_equal(c->freed.n, 0);
	assert_int_equal(led.frees, 5);
	done(h);
}

/* A fork's child frees its parent's kept blocks without telling them (the parent does). */
static void test_fork_child_keeps_parents_untold(void **state)
{
	rasp_heap_t *h = sampled_heap();
	const rasp_type_t *t = rasp_type_register(h, "t");
	pid_t pid;
	int st;

	(void)state;
	for (int i = 0; i < 3; i++)
		rasp_free(h, rasp_alloc(h, t, 48, 0));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rasp_context *c = rasp__context_peek(h);
		int ok = c && c->freed.n == 3 && c->freed.skip == 3;

		for (int i = 0; i < RASP__FREED_MAX - 3; i++)
			rasp_free(h, rasp_alloc(h, t, 48, 0));
		ok = ok && c->freed.n == 0 && c->freed.skip == 0;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(kept(h), 3);
	assert_int_equal(rasp__context_peek(h)->freed.skip, 0);
	done(h); /* destroy tells them (no session: nothing to see but no crash, no leak) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kept_blocks_wait_for_their_batch),
	    cmocka_unit_test(test_kept_block_double_free_refused),
	    cmocka_unit_test(test_large_and_held_bytes_send),
	    cmocka_unit_test(test_thread_exit_sends),
	    cmocka_unit_test(test_fork_child_keeps_parents_untold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
