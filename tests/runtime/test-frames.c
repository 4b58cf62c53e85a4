/* Runtime frames (runtime/frames.c), white-box, with a fake runtime: its callback's frames
 * become code addresses named "function (file:line)" (a NULL file, a line 0, a NULL
 * function), the same frame the same address and another line another one, names copied
 * (the runtime's strings may change after the call), depth limits (the stack depth asked,
 * RASP_MAX_STACK_DEPTH, a callback claiming more than its room), a callback returning 0,
 * long names cut, the heap's own calls refused without a heap, native frames after the
 * runtime's on request (native_frames, RASP_NATIVE_FRAMES), and four threads interning
 * 8000 frames at once (TSan in CI). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/test-heap.h"
#include "internal.h"

/* The fake runtime: a stack of frames, innermost first, and what its callback reports. */
struct fake {
	rasp_frame_t stack[100];
	unsigned depth;
	unsigned lie; /* if non-zero, returned whatever max is */
	unsigned calls, last_max;
};

static unsigned fake_frames(void *arg, rasp_frame_t *out, unsigned max)
{
	struct fake *f = arg;
	unsigned n = f->depth < max ? f->depth : max;

	f->calls++;
	f->last_max = max;
	for (unsigned i = 0; i < n; i++)
		out[i] = f->stack[i];
	return f->lie ? f->lie : n;
}

static rasp_heap_t *heap_with(struct fake *f)
{
	rasp_heap_t *h = test_heap(RASP_SAMPLING_OFF, 1, 5);

	assert_non_null(h);
	assert_int_equal(rasp_heap_set_frames(h, fake_frames, f), 0);
	return h;
}

static void test_frames_named(void **state)
{
	struct fake f = {.stack = {{"bottomUpTree", "binarytrees.lua", 12},
				   {"main", NULL, 40},
				   {"helper", "lib.lua", 0},
				   {NULL, "x.lua", 3}},
			 .depth = 4};
	rasp_heap_t *h = heap_with(&f);
	uintptr_t ips[RASP_MAX_STACK_DEPTH];

	(void)state;
	assert_int_equal(rasp__frames_capture(h, ips, 64), 4);
	assert_int_equal(f.last_max, 64);
	assert_string_equal(rasp__frames_name(ips[0]), "bottomUpTree (binarytrees.lua:12)");
	assert_string_equal(rasp__frames_name(ips[1]), "main");
	assert_string_equal(rasp__frames_name(ips[2]), "helper (lib.lua)");
	assert_string_equal(rasp__frames_name(ips[3]), "? (x.lua:3)");
	/* A consumer resolves a return address at ip - 1: the same frame. */
	assert_string_equal(rasp__frames_name(ips[0] - 1), "bottomUpTree (binarytrees.lua:12)");
	assert_null(rasp__frames_name((uintptr_t)&f));
	rasp_heap_destroy(h);
}

static void test_same_frame_same_address(void **state)
{
	char fn[32], file[32];
	struct fake f = {.stack = {{fn, file, 7}}, .depth = 1};
	rasp_heap_t *h = heap_with(&f);
	uintptr_t a[4], b[4], c[4];

	(void)state;
	strcpy(fn, "loop");
	strcpy(file, "strings.lua");
	assert_int_equal(rasp__frames_capture(h, a, 4), 1);
	/* The runtime's strings change after the call (a moving GC, a reused buffer): the
	 * name was copied; the same text again is the same frame. */
	strcpy(fn, "other");
	assert_string_equal(rasp__frames_name(a[0]), "loop (strings.lua:7)");
	assert_int_equal(rasp__frames_capture(h, b, 4), 1);
	assert_true(b[0] != a[0]);
	strcpy(fn, "loop");
	assert_int_equal(rasp__frames_capture(h, c, 4), 1);
	assert_true(c[0] == a[0]);
	f.stack[0].line = 8; /* another line: another frame */
	assert_int_equal(rasp__frames_capture(h, c, 4), 1);
	assert_true(c[0] != a[0]);
	assert_string_equal(rasp__frames_name(c[0]), "loop (strings.lua:8)");
	rasp_heap_destroy(h);
}

static void test_depth_limits(void **state)
{
	struct fake f = {.depth = 100};
	char names[100][16];
	rasp_heap_t *h;
	uintptr_t ips[RASP_MAX_STACK_DEPTH + 8];

	(void)state;
	for (unsigned i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "f%u", i);
		f.stack[i] = (rasp_frame_t){names[i], "deep.lua", i + 1};
	}
	h = heap_with(&f);
	assert_int_equal(rasp__frames_capture(h, ips, 5), 5);
	assert_int_equal(f.last_max, 5);
	assert_string_equal(rasp__frames_name(ips[4]), "f4 (deep.lua:5)");
	/* Never more than the event carries, whatever is asked. */
	assert_int_equal(rasp__frames_capture(h, ips, RASP_MAX_STACK_DEPTH + 8),
			 RASP_MAX_STACK_DEPTH);
	assert_int_equal(f.last_max, RASP_MAX_STACK_DEPTH);
	assert_string_equal(rasp__frames_name(ips[63]), "f63 (deep.lua:64)");
	/* A callback that claims more than its room: cut to the room. */
	f.lie = 1000;
	f.depth = 3;
	assert_int_equal(rasp__frames_capture(h, ips, 3), 3);
	assert_int_equal(rasp__frames_capture(h, ips, 0), 0);
	rasp_heap_destroy(h);
}

static void test_callback_returning_zero(void **state)
{
	struct fake f = {.depth = 0};
	rasp_heap_t *h = heap_with(&f);
	uintptr_t ips[8];

	(void)state;
	assert_int_equal(rasp__frames_capture(h, ips, 8), 0);
	assert_int_equal(f.calls, 1);
	/* No callback: nothing called, no frames. */
	assert_int_equal(rasp_heap_set_frames(h, NULL, NULL), 0);
	assert_int_equal(rasp__frames_capture(h, ips, 8), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(rasp_heap_set_frames(NULL, fake_frames, &f), -EINVAL);
	rasp_heap_destroy(h);
}

/* Names are cut at 240 bytes each: a frame costs bounded memory and trace bytes. */
static void test_long_names_cut(void **state)
{
	static char fn[1000], file[1000];
	struct fake f = {.stack = {{fn, file, 1}}, .depth = 1};
	rasp_heap_t *h = heap_with(&f);
	uintptr_t ips[1];
	const char *name;

	(void)state;
	memset(fn, 'a', sizeof(fn) - 1);
	memset(file, 'b', sizeof(file) - 1);
	assert_int_equal(rasp__frames_capture(h, ips, 1), 1);
	name = rasp__frames_name(ips[0]);
	assert_non_null(name);
	assert_int_equal(strlen(name), 240 + 2 + 240 + 3);
	/* A longer text with the same first 240 bytes is the same frame. */
	fn[500] = 'z';
	{
		uintptr_t again[1];

		assert_int_equal(rasp__frames_capture(h, again, 1), 1);
		assert_true(again[0] == ips[0]);
	}
	rasp_heap_destroy(h);
}

/* native_frames: the native stack after the runtime's frames, within the depth asked; the
 * environment's RASP_NATIVE_FRAMES accepted as 0 or 1 only. */
static void test_native_frames_on_request(void **state)
{
	struct fake f = {.stack = {{"inner", "n.lua", 1}, {"outer", "n.lua", 2}}, .depth = 2};
	rasp_config_t cfg;
	rasp_heap_t *h;
	uintptr_t ips[RASP_MAX_STACK_DEPTH];
	size_t n;

	(void)state;
	rasp_config_init(&cfg);
	assert_int_equal(cfg.native_frames, 0);
	cfg.native_frames = 1;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	assert_int_equal(rasp_heap_set_frames(h, fake_frames, &f), 0);
	n = rasp__frames_capture(h, ips, 64);
	assert_true(n > 2); /* this test's own functions, main, libc's start */
	assert_true(n <= 64);
	assert_string_equal(rasp__frames_name(ips[0]), "inner (n.lua:1)");
	assert_string_equal(rasp__frames_name(ips[1]), "outer (n.lua:2)");
	for (size_t i = 2; i < n; i++)
		assert_null(rasp__frames_name(ips[i]));
	assert_int_equal(rasp__frames_capture(h, ips, 3), 3);
	assert_null(rasp__frames_name(ips[2]));
	rasp_heap_destroy(h);
	cfg.native_frames = 2;
	assert_int_equal(rasp_config_validate(&cfg), -EINVAL);
	rasp_config_init(&cfg);
	setenv("RASP_NATIVE_FRAMES", "1", 1);
	assert_int_equal(rasp_config_from_env(&cfg), 0);
	assert_int_equal(cfg.native_frames, 1);
	setenv("RASP_NATIVE_FRAMES", "yes", 1);
	assert_int_equal(rasp_config_from_env(&cfg), -EINVAL);
	unsetenv("RASP_NATIVE_FRAMES");
}

/* Threads interning at once (the table grows under them): each sees its own names. */
struct worker {
	rasp_heap_t *heap;
	unsigned id;
	int bad;
};

static __thread unsigned my_id, my_round;

static unsigned thread_frames(void *arg, rasp_frame_t *out, unsigned max)
{
	static __thread char fn[32];

	(void)arg;
	if (!max)
		return 0;
	snprintf(fn, sizeof(fn), "t%u", my_id);
	out[0] = (rasp_frame_t){fn, "threads.lua", my_round + 1};
	return 1;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char want[64];
	uintptr_t ip;

	my_id = w->id;
	for (my_round = 0; my_round < 2000; my_round++) {
		if (rasp__frames_capture(w->heap, &ip, 1) != 1) {
			w->bad++;
			continue;
		}
		snprintf(want, sizeof(want), "t%u (threads.lua:%u)", my_id, my_round + 1);
		if (!rasp__frames_name(ip) || strcmp(rasp__frames_name(ip), want) != 0)
			w->bad++;
	}
	return NULL;
}

static void test_threads_intern_at_once(void **state)
{
	rasp_heap_t *h = test_heap(RASP_SAMPLING_OFF, 1, 5);
	struct worker w[4];
	pthread_t t[4];

	(void)state;
	assert_non_null(h);
	assert_int_equal(rasp_heap_set_frames(h, thread_frames, NULL), 0);
	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){h, i, 0};
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	rasp_heap_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frames_named),
	    cmocka_unit_test(test_same_frame_same_address),
	    cmocka_unit_test(test_depth_limits),
	    cmocka_unit_test(test_callback_returning_zero),
	    cmocka_unit_test(test_long_names_cut),
	    cmocka_unit_test(test_native_frames_on_request),
	    cmocka_unit_test(test_threads_intern_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
