/* Size classes (runtime/sizeclass.c) and the fast path's inline class computation
 * (runtime/context.c), white-box: every small object size finds the smallest class that holds
 * it, the waste past 64 bytes stays below 1/8, pages waste at most 1/8 in their tail, and the
 * ObjectSize an allocation reports is its class's size for every size. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>

#include <stdio.h>

#include "internal.h"
#include "rasp/inline.h"

static void test_every_size_gets_smallest_class(void **state)
{
	double worst = 0;

	(void)state;
	for (size_t z = 16; z <= RASP__SMALL_MAX_Z; z += 8) {
		unsigned k = rasp__class_of(z);
		size_t b = rasp__class_size[k];

		if (k == 0 || k >= RASP__NCLASS || b < z || (k > 1 && rasp__class_size[k - 1] >= z))
			fail_msg("z=%zu: class %u of size %zu is not the smallest that holds it", z,
				 k, b);
		if (z > 64 && (double)(b - z) / (double)z > worst)
			worst = (double)(b - z) / (double)z;
	}
	printf("worst waste past 64 bytes: %.2f%%\n", worst * 100);
	assert_true(worst < 0.125);
	/* Sizes that are no class. */
	assert_int_equal(rasp__class_of(0), 0);
	assert_int_equal(rasp__class_of(8), 0);
	assert_int_equal(rasp__class_size[rasp__class_of(16)], 16);
	assert_int_equal(rasp__class_size[RASP__NCLASS - 1], RASP__SMALL_MAX_Z);
	assert_true(RASP__SMALL_MAX_Z < RASP_LARGE_OBJECT_SIZE);
}

/* The free's test that a pointer is a block's start (rasp__page_has_block): n * c < c is
 * n % b == 0 for every class and every 8-aligned offset a page of up to 16 slots holds. */
/* rasp/inline.h's class formula, compiled into callers, is the table's for every size it
 * takes, and its hot entry's offset in a context is the one rasp_alloc uses. */
static void test_inline_class_is_the_tables(void **state)
{
	(void)state;
	for (size_t size = 1; size <= RASP_INLINE_MAX_SIZE; size++) {
		size_t z = rasp__object_size_raw(size);
		unsigned want = rasp__class_of(z), got = rasp_inline_class(size);

		if (got != want) {
			printf("size %zu (object %zu): inline class %u, table %u\n", size, z, got,
			       want);
			fail();
		}
		assert_int_equal(rasp__table_hot[(size + RASP_OBJECT_HEADER_SIZE + 7) >> 3],
				 got * sizeof(struct rasp_inline_hot));
	}
}

static void test_block_start_test_is_exact(void **state)
{
	(void)state;
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		uint64_t b = rasp__class_size[k], c = rasp__class_div[k];

		for (uint64_t n = 0; n < 16 * RASP__SLOT_SIZE; n += 8)
			if ((n * c < c) != (n % b == 0))
				fail_msg("class %u (%" PRIu64 " bytes): offset %" PRIu64
					 " misjudged",
					 k, b, n);
	}
}

/* rasp__page_has_block's one compare, on pages of every class: true exactly at a block's
 * start inside the page, for every offset from one slot before the page's start (n wrapped)
 * to one slot past its end: every byte on the class's own span, every 8th on spans of 1 to
 * 16 slots. */
static void check_page_block_test(unsigned k, unsigned span, int64_t step)
{
	uint64_t b = rasp__class_size[k], bytes = span * RASP__SLOT_SIZE / b * b;
	struct rasp__page pg = {.start = (uintptr_t)1 << 40};

	pg.div = rasp__page_div(b);
	pg.lim = bytes / b * (b * pg.div);
	for (int64_t n = -(int64_t)RASP__SLOT_SIZE; n < (int64_t)((span + 1) * RASP__SLOT_SIZE);
	     n += step) {
		bool want = n >= 0 && (uint64_t)n < bytes && (uint64_t)n % b == 0;
		bool got = rasp__page_has_block(
		    &pg, (const struct rasp__header *)(pg.start + (uint64_t)n));

		if (got != want)
			fail_msg("class %u (%" PRIu64 " bytes), %u slots: offset %" PRId64
				 " misjudged",
				 k, b, span, n);
	}
}

static void test_page_block_test_is_exact(void **state)
{
	(void)state;
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		check_page_block_test(k, rasp__class_span[k], 1);
		for (unsigned span = 1; span <= 16; span++)
			check_page_block_test(k, span, 8);
	}
}

static void test_pages_waste_little(void **state)
{
	(void)state;
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		size_t page = rasp__class_span[k] * RASP__SLOT_SIZE, b = rasp__class_size[k];

		if (page / b < 8 || page % b > page / 8)
			fail_msg("class %u (%zu B): %u slots hold %zu blocks, %zu bytes left over",
				 k, b, rasp__class_span[k], page / b, page % b);
	}
}

/* Through the real allocator: the fast path's inline computation agrees with the table for
 * every payload size of the small range (a disagreement shows as a wrong ObjectSize). */
static void test_allocations_report_their_class(void **state)
{
	rasp_config_t cfg;
	rasp_heap_t *h;
	const rasp_type_t *t;

	(void)state;
	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_OFF;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	t = rasp_type_register(h, "t");
	for (size_t n = 1; n <= RASP__SMALL_MAX_PAYLOAD; n += n < 2048 ? 1 : 7) {
		void *p = rasp_alloc(h, t, n, 0);
		size_t want = rasp__class_size[rasp__class_of(rasp__object_size_raw(n))];

		assert_non_null(p);
		if (rasp_object_size(p) != want || rasp_usable_size(p) < n)
			fail_msg("payload %zu: ObjectSize %zu, class %zu, usable %zu", n,
				 rasp_object_size(p), want, rasp_usable_size(p));
		rasp_free(h, p);
	}
	assert_int_equal(rasp_object_kind(rasp_alloc(h, t, RASP__SMALL_MAX_PAYLOAD + 1, 0)),
			 RASP_KIND_LARGE);
	rasp_heap_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_size_gets_smallest_class),
	    cmocka_unit_test(test_inline_class_is_the_tables),
	    cmocka_unit_test(test_block_start_test_is_exact),
	    cmocka_unit_test(test_page_block_test_is_exact),
	    cmocka_unit_test(test_pages_waste_little),
	    cmocka_unit_test(test_allocations_report_their_class),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
