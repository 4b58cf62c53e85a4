/* Unit tests of consumer/report/diff.c: p-values of hand-computed changes (the interval halves
 * facing each other, an exact side, no change), Benjamini-Hochberg flags on the p-values of
 * Benjamini and Hochberg's own example and on step-up cases, and rasp_diff_compute: types
 * matched by name with types unseen on either side, the unseen side's bound, the order by size
 * of change, and bad confidences. Reference p-values: erfc(|d| / se / sqrt 2) in Python. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/diff.h"

#define Z95 1.9599639845400536 /* normal quantile of 0.975 */

static void check_rel(double got, double want, double tol, const char *what)
{
	if (!(got == want || fabs(got - want) <= tol * fabs(want))) {
		printf("%s: got %.17g, want %.17g\n", what, got, want);
		fail();
	}
}

static struct rasp_est_total est(double bytes, double low, double high)
{
	return (struct rasp_est_total){.samples = 10,
				       .bytes = bytes,
				       .bytes_low = low,
				       .bytes_high = high,
				       .objects = bytes / 10};
}

static void test_diff_p_value(void **state)
{
	(void)state;
	struct rasp_est_total a, b;

	/* 1000 [800, 1200] -> 1500 [1300, 1700]: se = sqrt(200^2 + 200^2) / z. */
	a = est(1000, 800, 1200);
	b = est(1500, 1300, 1700);
	check_rel(rasp_diff_p_value(&a, &b, Z95), 0.0005307057295099093, 1e-12, "up");
	/* The same change read backwards has the same p-value. */
	check_rel(rasp_diff_p_value(&b, &a, Z95), 0.0005307057295099093, 1e-12, "down");
	/* A wider confidence: the same intervals mean larger standard errors. */
	check_rel(rasp_diff_p_value(&a, &b, 2.5758293035489), 5.276922370415573e-06, 1e-9, "z 99%");

	/* Skewed intervals: a decrease uses the base's lower half (500) and the new side's
	 * upper half (300), not the base's upper half (2000, which would give 0.56). */
	a = est(1000, 500, 3000);
	b = est(400, 100, 700);
	check_rel(rasp_diff_p_value(&a, &b, Z95), 0.04371781907500598, 1e-12, "facing halves");

	/* An exact side (no interval) contributes nothing: se = 50 / z. */
	a = est(100, 100, 100);
	b = est(200, 150, 300);
	check_rel(rasp_diff_p_value(&a, &b, Z95), 8.857543832140432e-05, 1e-12, "exact base");

	/* No change: 1, whatever the intervals; both exact and different: 0. */
	a = est(500, 1, 1e9);
	assert_true(rasp_diff_p_value(&a, &a, Z95) == 1.0);
	a = est(0, 0, 0);
	assert_true(rasp_diff_p_value(&a, &a, Z95) == 1.0);
	a = est(100, 100, 100);
	b = est(101, 101, 101);
	assert_true(rasp_diff_p_value(&a, &b, Z95) == 0.0);
}

static void set_p(struct rasp_diff_change *c, const double *p, size_t n)
{
	memset(c, 0, n * sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		c[i].p_value = p[i];
		c[i].significant = !(i % 2); /* junk the flagging must overwrite */
	}
}

static void check_flags(const struct rasp_diff_change *c, const double *p, size_t n,
			const bool *want)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].significant != want[i]) {
			printf("p = %g flagged %d, want %d\n", p[i], c[i].significant, want[i]);
			fail();
		}
}

static void test_diff_flag(void **state)
{
	(void)state;
	/* Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05 rejects the four
	 * smallest (Bonferroni would reject three). Shuffled: flags follow rank, not place. */
	static const double bh[15] = {0.0278, 0.7590, 0.0001, 0.0459, 0.0019, 0.3240, 0.0095, 1.000,
				      0.0201, 0.4262, 0.0004, 0.6528, 0.0344, 0.5719, 0.0298};
	static const bool bh_want[15] = {0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
	/* Step-up: 0.04 misses its own threshold (0.025) but is below the second's (0.05). */
	static const double up[2] = {0.045, 0.04};
	static const bool up_want[2] = {1, 1};
	static const double none[2] = {0.06, 0.04};
	static const bool none_want[2] = {0, 0};
	static const double ties[3] = {0.05, 0.05, 0.05};
	static const bool ties_want[3] = {1, 1, 1};
	struct rasp_diff_change c[15];

	set_p(c, bh, 15);
	assert_int_equal(rasp_diff_flag(c, 15, 0.05), 0);
	check_flags(c, bh, 15, bh_want);
	/* At q = 0.2 the ninth smallest (0.0459 <= 9 * 0.2 / 15) carries all below it. */
	set_p(c, bh, 15);
	assert_int_equal(rasp_diff_flag(c, 15, 0.2), 0);
	for (size_t i = 0; i < 15; i++)
		assert_int_equal(c[i].significant, bh[i] <= 0.0459);
	set_p(c, up, 2);
	assert_int_equal(rasp_diff_flag(c, 2, 0.05), 0);
	check_flags(c, up, 2, up_want);
	set_p(c, none, 2);
	assert_int_equal(rasp_diff_flag(c, 2, 0.05), 0);
	check_flags(c, none, 2, none_want);
	set_p(c, ties, 3);
	assert_int_equal(rasp_diff_flag(c, 3, 0.05), 0);
	check_flags(c, ties, 3, ties_want);
	assert_int_equal(rasp_diff_flag(c, 0, 0.05), 0);
}

static const struct rasp_diff_change *change_of(const struct rasp_diff_change *c, size_t n,
						const char *type)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].type, type) == 0)
			return &c[i];
	printf("no change for type %s\n", type);
	fail();
	return NULL;
}

/* Types matched by name (a name that prefixes another is another type), unseen on either
 * side, sorted by the size of the change. */
static void test_diff_compute(void **state)
{
	(void)state;
	const struct rasp_diff_item base_items[] = {
	    {"C", est(2000, 1900, 2100)},
	    {"A", est(5000, 4000, 6000)},
	    {"AB", est(1000, 800, 1200)},
	};
	const struct rasp_diff_item new_items[] = {
	    {"D", est(300, 100, 900)},
	    {"AB", est(1000, 700, 1500)},
	    {"C", est(12000, 11500, 12500)},
	};
	const struct rasp_diff_side base = {"base.trace", base_items, 3, 100};
	const struct rasp_diff_side new_ = {"new.trace", new_items, 3, 1000};
	static const char *const order[] = {"C", "A", "D", "AB"};
	struct rasp_diff_change *c;
	const struct rasp_diff_change *x;
	size_t n;
	double hide_new = rasp_nb_quantile(0.975, 1, 1.0 / 1000) + 1;
	double hide_base = rasp_nb_quantile(0.975, 1, 1.0 / 100) + 1;

	assert_int_equal(rasp_diff_compute(&base, &new_, 0.95, &c, &n), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < 4; i++)
		if (strcmp(c[i].type, order[i]) != 0) {
			printf("change %zu is %s, want %s\n", i, c[i].type, order[i]);
			fail();
		}
	/* Both sides. */
	x = change_of(c, n, "C");
	assert_true(x->in_base && x->in_new);
	assert_true(x->base.bytes == 2000 && x->new_.bytes == 12000);
	assert_true(x->significant);
	x = change_of(c, n, "AB");
	assert_true(x->in_base && x->in_new);
	assert_true(x->p_value == 1.0);
	assert_false(x->significant);
	/* Gone: nothing on the new side, but up to one sample at its mean could hide. */
	x = change_of(c, n, "A");
	assert_true(x->in_base && !x->in_new);
	assert_true(x->new_.bytes == 0 && x->new_.bytes_low == 0 && x->new_.samples == 0);
	check_rel(x->new_.bytes_high, hide_new, 0, "unseen bound on the new side");
	assert_true(hide_new > 1000 && hide_new < 5000);
	assert_true(x->significant);
	/* New: the same on the base side, at the base's mean. */
	x = change_of(c, n, "D");
	assert_true(!x->in_base && x->in_new);
	assert_true(x->base.bytes == 0 && x->base.samples == 0);
	check_rel(x->base.bytes_high, hide_base, 0, "unseen bound on the base side");
	assert_false(x->significant);
	/* Every p-value is the pair's. */
	for (size_t i = 0; i < n; i++)
		check_rel(c[i].p_value, rasp_diff_p_value(&c[i].base, &c[i].new_, Z95), 1e-12,
			  c[i].type);
	free(c);
}

/* Equal changes in name order; empty sides; one side empty. */
static void test_diff_compute_edges(void **state)
{
	(void)state;
	const struct rasp_diff_item a[] = {
	    {"zeta", est(100, 50, 150)},
	    {"alpha", est(100, 50, 150)},
	    {"mid", est(100, 50, 150)},
	};
	const struct rasp_diff_item b[] = {
	    {"mid", est(200, 150, 250)},
	    {"alpha", est(200, 150, 250)},
	    {"zeta", est(0, 0, 0)},
	};
	const struct rasp_diff_side sa = {"a", a, 3, 4096}, sb = {"b", b, 3, 4096};
	const struct rasp_diff_side empty = {"e", NULL, 0, 4096};
	struct rasp_diff_change *c;
	size_t n;

	assert_int_equal(rasp_diff_compute(&sa, &sb, 0.9, &c, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(c[0].type, "alpha");
	assert_string_equal(c[1].type, "mid");
	assert_string_equal(c[2].type, "zeta");
	free(c);

	assert_int_equal(rasp_diff_compute(&empty, &empty, 0.95, &c, &n), 0);
	assert_int_equal(n, 0);
	free(c);

	assert_int_equal(rasp_diff_compute(&empty, &sa, 0.95, &c, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_true(!c[i].in_base && c[i].in_new);
	free(c);
}

static void test_diff_bad_confidence(void **state)
{
	(void)state;
	const struct rasp_diff_item a[] = {{"A", est(100, 50, 150)}};
	const struct rasp_diff_side s = {"a", a, 1, 4096};
	const double bad[] = {0, -0.1, 1, 1.5, NAN, 0.9999999999999999, INFINITY};
	struct rasp_diff_change *c = (struct rasp_diff_change *)&c;
	size_t n = 99;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rasp_diff_compute(&s, &s, bad[i], &c, &n) != -EINVAL || c || n) {
			printf("confidence %.17g not refused cleanly\n", bad[i]);
			fail();
		}
	}
	assert_int_equal(rasp_diff_compute(&s, &s, RASP_EST_MAX_CONFIDENCE, &c, &n), 0);
	assert_int_equal(n, 1);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_diff_p_value),	cmocka_unit_test(test_diff_flag),
	    cmocka_unit_test(test_diff_compute),	cmocka_unit_test(test_diff_compute_edges),
	    cmocka_unit_test(test_diff_bad_confidence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
