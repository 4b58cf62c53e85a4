/* rasp/inline.h through librasp, as a program outside the library uses it: the inline path
 * is taken (the thread's class count goes down by one, no call), it makes the same objects
 * and the same sampling decisions as rasp_alloc (two heaps with one seed, one sequence each
 * way: equal sample counts, not merely close), and everything it cannot take (no type, a size
 * not constant, another heap, a heap destroyed and made again at its address) goes to
 * rasp_alloc with rasp_alloc's result. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../support/test-heap.h"
#include "rasp/inline.h"

/* rasp_alloc, counted: this program's definition comes before librasp's (the inline path
 * calls it through the PLT), and hands the call on. The inline path is taken where the
 * count does not move. */
static unsigned long calls;
typedef void *alloc_fn(rasp_heap_t *, const rasp_type_t *, size_t, unsigned);

void *rasp_alloc(rasp_heap_t *heap, const rasp_type_t *type, size_t size, unsigned flags)
{
	static alloc_fn *real;

	if (!real) {
		void *sym = dlsym(RTLD_NEXT, "rasp_alloc");

		memcpy(&real, &sym, sizeof(real));
	}
	calls++;
	return real(heap, type, size, flags);
}

static rasp_heap_t *make_heap(int sampling, uint64_t mean)
{
	rasp_heap_t *h = test_heap(sampling, mean, 7);

	assert_non_null(h);
	return h;
}

/* Four constant-size call sites, by the inline path or by the call. */
static void *site(int inl, rasp_heap_t *h, const rasp_type_t *t, unsigned i)
{
	switch (i % 4) {
	case 0:
		return inl ? rasp_alloc_inline(h, t, 24) : rasp_alloc(h, t, 24, 0);
	case 1:
		return inl ? rasp_alloc_inline(h, t, 100) : rasp_alloc(h, t, 100, 0);
	case 2:
		return inl ? rasp_alloc_inline(h, t, 1000) : rasp_alloc(h, t, 1000, 0);
	default:
		return inl ? rasp_alloc_inline(h, t, 8192) : rasp_alloc(h, t, 8192, 0);
	}
}

/* After one allocation attaches the thread, the next inline one of that size takes a block
 * with no call: the class's count goes down by exactly one. */
static void test_inline_path_taken(void **state)
{
	(void)state;
#ifdef RASP__INLINE_ON
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 102400);
	const rasp_type_t *t = rasp_type_register(h, "T");
	struct rasp_inline_hot *hc;
	intptr_t before;
	void *a, *b;

	a = rasp_alloc_inline(h, t, 40);
	assert_non_null(a);
	assert_ptr_equal(rasp_inline_cache_v1.heap, h);
	hc = rasp_inline_cache_v1.ctx + rasp_inline_class(40);
	before = hc->n;
	assert_true(before > 0);
	unsigned long c0 = calls;
	b = rasp_alloc_inline(h, t, 40);
	assert_int_equal(calls, c0); /* no call */
	assert_int_equal(hc->n, before - 1);
	assert_ptr_equal(rasp_object_type(b), t);
	assert_int_equal(rasp_object_size(b), rasp_object_size(a));
	assert_int_equal(rasp_object_kind(b), RASP_KIND_SMALL);
	/* Its window used up, the next one calls, and the count is rasp_alloc's again. */
	while (hc->n > 0)
		rasp_free(h, rasp_alloc_inline(h, t, 40));
	c0 = calls;
	rasp_free(h, rasp_alloc_inline(h, t, 40));
	assert_int_equal(calls, c0 + 1);
	assert_true(hc->n >= 0);
	rasp_free(h, a);
	rasp_free(h, b);
	rasp_heap_destroy(h);
#else
	printf("the inline path is off in this build (AddressSanitizer or RASP_NO_INLINE): "
	       "that it is taken is not checked\n");
#endif
}

/* The same sequence inline and by the call, at mean 4096 with one seed: the same objects
 * (sizes, types) and the same samples, to the one. */
static void test_inline_samples_as_the_call(void **state)
{
	enum { N = 200000 };
	rasp_heap_stats_t st[2];

	(void)state;
	unsigned long by_call[2];

	for (int inl = 0; inl < 2; inl++) {
		rasp_heap_t *h = make_heap(RASP_SAMPLING_ON, 4096);
		const rasp_type_t *t = rasp_type_register(h, "T");
		static void *keep[1024];
		unsigned long c0 = calls;

		memset(keep, 0, sizeof(keep));
		for (unsigned i = 0; i < N; i++) {
			void *p = site(inl, h, t, i);

			assert_non_null(p);
			rasp_free(h,
				  keep[i % 1024]); /* 1024 live: blocks reused through the lists */
			keep[i % 1024] = p;
		}
		rasp_heap_stats(h, &st[inl]);
		rasp_heap_destroy(h);
		by_call[inl] = calls - c0;
	}
	/* And both what per-byte trials give: sum over objects of 1 - (1 - 1/4096)^z, within 4
	 * standard errors. */
	double want = 0.0, var = 0.0;
	rasp_heap_t *h = make_heap(RASP_SAMPLING_OFF, 4096);
	const rasp_type_t *t = rasp_type_register(h, "T");

	for (unsigned i = 0; i < 4; i++) {
		double z = (double)rasp_object_size(site(0, h, t, i));
		double hit = -expm1(z * log1p(-1.0 / 4096));

		want += N / 4 * hit;
		var += N / 4 * hit * (1.0 - hit);
	}
	rasp_heap_destroy(h);
	printf("samples: by the call %llu, inline %llu, expected %.0f (se %.0f)\n",
	       (unsigned long long)st[0].samples, (unsigned long long)st[1].samples, want,
	       sqrt(var));
	assert_true(fabs((double)st[1].samples - want) <= 4.0 * sqrt(var));
	printf("rasp_alloc calls: %lu by the call, %lu inline\n", by_call[0], by_call[1]);
	assert_int_equal(by_call[0], N);
#ifdef RASP__INLINE_ON
	/* The rest were taken inline: most, though every 8 KiB object at this mean ends its
	 * window (61459 calls of 200000 when written). */
	assert_true(by_call[1] < N / 2);
#endif
	assert_int_equal(st[1].samples, st[0].samples);
	assert_int_equal(st[1].live_bytes, st[0].live_bytes);
	assert_int_equal(st[1].refills, st[0].refills);
}

/* What the inline path does not take goes to rasp_alloc: no type (EINVAL), a size that is
 * not a constant, a heap other than the thread's last, and a heap destroyed and made again
 * (malloc may give its address back): its objects are the new heap's. */
static void test_inline_falls_back(void **state)
{
	rasp_heap_t *a = make_heap(RASP_SAMPLING_OFF, 102400),
		    *b = make_heap(RASP_SAMPLING_OFF, 64);
	const rasp_type_t *ta = rasp_type_register(a, "A"), *tb = rasp_type_register(b, "B");
	volatile size_t varying = 56;
	rasp_heap_stats_t st;
	rasp_heap_t *old;
	void *p;

	(void)state;
	errno = 0;
	assert_null(rasp_alloc_inline(a, NULL, 24));
	assert_int_equal(errno, EINVAL);
	p = rasp_alloc_inline(a, ta, varying);
	assert_non_null(p);
	assert_true(rasp_usable_size(p) >= 56);
	for (int i = 0; i < 1000; i++) {
		void *x = rasp_alloc_inline(a, ta, 24), *y = rasp_alloc_inline(b, tb, 24);

		assert_ptr_equal(rasp_object_type(x), ta);
		assert_ptr_equal(rasp_object_type(y), tb);
	}
	old = a;
	rasp_heap_destroy(a);
	for (int i = 0; i < 64; i++) {
		a = make_heap(RASP_SAMPLING_OFF, 102400);
		if (a == old)
			break;
		rasp_heap_destroy(a);
		a = NULL;
	}
	if (a) {
		ta = rasp_type_register(a, "A2");
		p = rasp_alloc_inline(a, ta, 24);
		assert_ptr_equal(rasp_object_type(p), ta);
		assert_int_equal(rasp_heap_stats(a, &st), 0);
		assert_int_equal(st.contexts, 1);
		rasp_heap_destroy(a);
	} else {
		printf("malloc never gave the destroyed heap's address back: not checked\n");
	}
	rasp_heap_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inline_path_taken),
	    cmocka_unit_test(test_inline_samples_as_the_call),
	    cmocka_unit_test(test_inline_falls_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
