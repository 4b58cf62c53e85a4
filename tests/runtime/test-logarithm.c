/* runtime/logarithm.c against libm: the error in ulp over the draw's inputs (1 - k 2^-53),
 * over every binade of positive doubles, for log1p(-1/mean) over the means a heap takes, the
 * special values, and the geometric draws themselves (the same counts as with libm's log). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The error of `got` in units of the last place of the exact value, estimated with libm's
 * result in long double (the x87 log, 64-bit significand: 11 bits past double). */
static double ulp_error(double got, long double exact)
{
	int e;

	if (exact == 0)
		return got == 0 ? 0 : INFINITY;
	frexpl(exact, &e);
	return (double)(fabsl((long double)got - exact) / ldexpl(1.0L, e - 53));
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005u + 1442695040888963407u;
	return *x >> 11; /* 53 bits */
}

/* The draw's inputs: V = 1 - k 2^-53, k uniform, and k small (V near 1, where log is tiny) and
 * large (V near 2^-53). */
static void test_log_on_the_draws_inputs(void **state)
{
	uint64_t x = 1;
	double worst = 0;
	int differ = 0; /* the draw's log, without the checks, against the general one */

	(void)state;
	for (int i = 0; i < 3000000; i++) {
		uint64_t k = lcg(&x);
		double v;

		if (i % 3 == 1)
			k >>= 40; /* near 1 */
		else if (i % 3 == 2)
			k = (UINT64_C(1) << 53) - (k >> 40) - 1; /* near 2^-53 */
		v = 1.0 - (double)k * 0x1.0p-53;
		double err = ulp_error(rasp__log(v), logl(v));

		if (rasp__log_normal(v) != rasp__log(v))
			differ++;

		if (err > worst)
			worst = err;
	}
	printf("log on 1 - k 2^-53: worst %.3f ulp\n", worst);
	assert_true(worst <= 1.3);
	assert_int_equal(differ, 0);
	assert_true(rasp__log_normal(1.0) == 0.0);
	assert_true(rasp__log_normal(0x1.0p-53) == rasp__log(0x1.0p-53));
	assert_true(rasp__log(1.0) == 0.0);
	assert_true(rasp__log(0x1.0p-53) == (double)logl(0x1.0p-53L));
}

/* Every binade, subnormals included: random significands at every exponent. */
static void test_log_over_every_binade(void **state)
{
	uint64_t x = 2;
	double worst = 0;
	int differ = 0;

	(void)state;
	for (int e = -1074; e <= 1023; e++) {
		for (int i = 0; i < 300; i++) {
			double v = ldexp(1.0 + (double)lcg(&x) * 0x1.0p-53, e);
			double err;

			if (v == 0 || isinf(v))
				continue;
			err = ulp_error(rasp__log(v), logl(v));
			if (err > worst)
				worst = err;
			if (e >= -1022 && rasp__log_normal(v) != rasp__log(v))
				differ++;
		}
	}
	assert_int_equal(differ, 0);
	printf("log over every binade: worst %.3f ulp\n", worst);
	assert_true(worst <= 1.3);
}

static void test_log_special_values(void **state)
{
	(void)state;
	assert_true(isinf(rasp__log(0.0)) && rasp__log(0.0) < 0);
	assert_true(isinf(rasp__log(INFINITY)) && rasp__log(INFINITY) > 0);
	assert_true(isnan(rasp__log(-1.0)));
	assert_true(isnan(rasp__log(NAN)));
	assert_true(isinf(rasp__log1p(-1.0)) && rasp__log1p(-1.0) < 0);
	assert_true(isnan(rasp__log1p(-2.0)));
	assert_true(isnan(rasp__log1p(NAN)));
	assert_true(isinf(rasp__log1p(INFINITY)));
	assert_true(rasp__log1p(0.0) == 0.0);
	assert_true(rasp__log1p(-0x1.0p-60) == -0x1.0p-60);
}

/* log1p(-1/mean) for the means a heap takes (2 to 2^41, every power of two and random ones:
 * within 1 ulp, worst 0.99), over (-1, 0) uniformly (the correction of 1 + x's rounding adds
 * to log's error there: 1.6 ulp at worst, found by a wider search than this one) and over
 * (-1, 2^63). */
static void test_log1p(void **state)
{
	uint64_t x = 3;
	double worst = 0, err;

	(void)state;
	for (uint64_t mean = 2; mean < (UINT64_C(1) << 41); mean = mean * 2 + (lcg(&x) & 1)) {
		for (uint64_t d = 0; d < 3; d++) {
			double p = -1.0 / (double)(mean + d);

			err = ulp_error(rasp__log1p(p), log1pl(p));
			if (err > worst)
				worst = err;
		}
	}
	printf("log1p(-1/mean): worst %.3f ulp\n", worst);
	assert_true(worst <= 1.0);
	worst = 0;
	for (int i = 0; i < 2000000; i++) {
		double v = i % 2 ? -(double)lcg(&x) * 0x1.0p-53
				 : -1.0 + ldexp((double)lcg(&x) * 0x1.0p-53, (int)(lcg(&x) % 64));

		if (v <= -1.0)
			continue;
		err = ulp_error(rasp__log1p(v), log1pl(v));
		if (err > worst)
			worst = err;
	}
	/* The worst point a wider search found (1.596 ulp). */
	err = ulp_error(rasp__log1p(-0x1.32aacf3855ac9p-2), log1pl(-0x1.32aacf3855ac9p-2));
	if (err > worst)
		worst = err;
	printf("log1p over (-1, 2^63): worst %.3f ulp\n", worst);
	assert_true(worst <= 2.0);
}

/* The inversion with this log is libm's: 10^6 tail draws at the default mean and at 1 KiB
 * give the same counts (a difference needs a value within an ulp or two of an integer), and
 * the draw's constant, from rasp__log1p, is within 2 ulp. */
static void test_draws_match_libm(void **state)
{
	uint64_t x = 4;
	int differ = 0;

	(void)state;
	for (uint64_t mean = 1024; mean <= 102400; mean *= 100) {
		struct rasp_context c;
		double f = -1.0 / log1p(-1.0 / (double)mean), g;

		rasp__context_set_mean(&c, mean);
		g = c.draw_scale;
		assert_true(ulp_error(g, -1.0L / log1pl(-1.0L / (long double)mean)) <= 2.0);
		for (int i = 0; i < 1000000; i++) {
			double v = 1.0 - (double)lcg(&x) * 0x1.0p-53;

			differ += (uint64_t)(-log(v) * f) != (uint64_t)(-rasp__log(v) * g);
		}
	}
	printf("draws differing from libm's: %d of 2000000\n", differ);
	assert_true(differ <= 2);
}

int main(void)
{
	if (LDBL_MANT_DIG <= DBL_MANT_DIG) { /* the reference needs bits past double's */
		printf("test-logarithm: skipped: long double is no wider than double here\n");
		return 0;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_log_on_the_draws_inputs),
	    cmocka_unit_test(test_log_over_every_binade),
	    cmocka_unit_test(test_log_special_values),
	    cmocka_unit_test(test_log1p),
	    cmocka_unit_test(test_draws_match_libm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
