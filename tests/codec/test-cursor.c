/* Unit tests of codec/cursor.h: reads within the bytes and past them (the cursor fails and
 * stays failed, nothing read past the end), the offset kept for messages, little- and
 * big-endian integers, n-byte integers, peeking, and LEB128 varuints too long or cut short. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cursor.h"

static void test_cursor_reads(void **state)
{
	static const uint8_t b[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	struct rasp_cursor c = rasp_cursor_make(b, sizeof(b), 1000);
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;
	uint8_t v8;

	(void)state;
	assert_true(rasp_cursor_u8(&c, &v8));
	assert_int_equal(v8, 1);
	assert_true(rasp_cursor_u16le(&c, &v16));
	assert_int_equal(v16, 0x0302);
	assert_int_equal(rasp_cursor_offset(&c), 1003);
	assert_true(rasp_cursor_u32be(&c, &v32));
	assert_int_equal(v32, 0x04050607);
	assert_true(rasp_cursor_uint_le(&c, 3, &v64));
	assert_int_equal(v64, 0x0a0908);
	assert_int_equal(rasp_cursor_left(&c), 2);
	/* Peeking moves nothing; past the end it gives NULL and leaves the cursor usable. */
	assert_ptr_equal(rasp_cursor_peek(&c, 2), b + 10);
	assert_null(rasp_cursor_peek(&c, 3));
	assert_false(c.failed);
	assert_int_equal(rasp_cursor_left(&c), 2);
	/* A read past the end fails, and every later read too. */
	assert_false(rasp_cursor_u32le(&c, &v32));
	assert_true(c.failed);
	assert_int_equal(rasp_cursor_left(&c), 0);
	assert_false(rasp_cursor_u8(&c, &v8));
	assert_null(rasp_cursor_peek(&c, 0));
}

static void test_cursor_uint_le(void **state)
{
	static const uint8_t b[] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99};
	uint64_t v = 42;

	(void)state;
	for (size_t n = 1; n <= 8; n++) {
		struct rasp_cursor c = rasp_cursor_make(b, n, 0);
		uint64_t want = 0;

		for (size_t i = 0; i < n; i++)
			want |= (uint64_t)b[i] << (8 * i);
		assert_true(rasp_cursor_uint_le(&c, n, &v));
		assert_int_equal(v, want);
		assert_int_equal(rasp_cursor_left(&c), 0);
		/* One byte short: fails, v untouched. */
		c = rasp_cursor_make(b, n - 1, 0);
		v = 42;
		assert_false(rasp_cursor_uint_le(&c, n, &v));
		assert_int_equal(v, 42);
	}
	/* More than 8 bytes has no uint64_t value. */
	{
		struct rasp_cursor c = rasp_cursor_make(b, sizeof(b), 0);

		assert_false(rasp_cursor_uint_le(&c, 9, &v));
		assert_int_equal(v, 42);
	}
}

static void test_cursor_varuint(void **state)
{
	static const uint8_t ok[] = {0xe5, 0x8e, 0x26};			      /* 624485 */
	static const uint8_t long32[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}; /* 6 bytes */
	static const uint8_t cut[] = {0x80, 0x80};
	struct rasp_cursor c = rasp_cursor_make(ok, sizeof(ok), 0);
	uint32_t v;
	uint64_t v64;

	(void)state;
	assert_true(rasp_cursor_varuint32(&c, &v));
	assert_int_equal(v, 624485);
	c = rasp_cursor_make(long32, sizeof(long32), 0);
	assert_false(rasp_cursor_varuint32(&c, &v));
	assert_true(c.failed);
	c = rasp_cursor_make(long32, sizeof(long32), 0);
	assert_true(rasp_cursor_varuint64(&c, &v64));
	assert_int_equal(v64, UINT64_C(1) << 35);
	c = rasp_cursor_make(cut, sizeof(cut), 0);
	assert_false(rasp_cursor_varuint64(&c, &v64));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cursor_reads),
	    cmocka_unit_test(test_cursor_uint_le),
	    cmocka_unit_test(test_cursor_varuint),
	};

	return cmocka_run_group_tests_name("cursor", tests, NULL, NULL);
}
