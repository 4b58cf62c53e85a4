/* Unit tests of codec/nettrace-payload.c: payloads decoded through the generated descriptors
 * (integers, pointers of either size, UTF-16 strings to UTF-8, arrays by their count field),
 * every payload cut short refused, and descriptors found by (provider, id, version). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nettrace-payload.h"

#define DOTNET "Microsoft-Windows-DotNETRuntime"

/* Field by field, pointer sizes, strings cut short, small buffers; descriptors by version. */
static void test_nettrace_payload_decode(void **state)
{
	const struct rasp_event_desc *d = rasp_nt_find_desc(DOTNET, 303, 0);
	/* kind 2, ClrInstanceID 7, TypeID, "A\u00e9\U0001F600" (4 units), Address, size, offset */
	static const uint8_t p8[] = {
	    2,	  0,   0, 0,	7, 0,	 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc,
	    0xfe, 'A', 0, 0xe9, 0, 0x3d, 0xd8, 0x00, 0xde, 0,	 0,    1,    0,
	    0,	  0,   0, 0,	0, 0,	 0x68, 0,    0,	   0,	 0,    0,    0,
	    0,	  3,   0, 0,	0, 0,	 0,    0,    0,	   0xee}; /* one byte more: ignored */
	static const uint8_t p4[] = {0, 0, 0,	 0,    1,    0,	   0x44, 0x33, 0x22, 0x11, 'x', 0,
				     0, 0, 0x88, 0x77, 0x66, 0x55, 24,	 0,    0,    0,	   0,	0,
				     0, 0, 5,	 0,    0,    0,	   0,	 0,    0,    0};
	union rasp_nt_value v[8];
	char s[64];

	(void)state;
	assert_non_null(d);
	assert_int_equal(rasp_nt_decode(d, p8, sizeof(p8), 8, v, s, sizeof(s)), 0);
	assert_int_equal(v[0].u, 2);
	assert_int_equal(v[1].u, 7);
	assert_int_equal(v[2].u, UINT64_C(0xfedcba9876543210));
	assert_string_equal(v[3].s, "A\xC3\xA9\xF0\x9F\x98\x80");
	assert_int_equal(v[4].u, 1);
	assert_int_equal(v[5].u, 104);
	assert_int_equal(v[6].u, 3);
	/* 32-bit pointers. */
	assert_int_equal(rasp_nt_decode(d, p4, sizeof(p4), 4, v, s, sizeof(s)), 0);
	assert_int_equal(v[2].u, 0x11223344);
	assert_string_equal(v[3].s, "x");
	assert_int_equal(v[4].u, 0x55667788);
	assert_int_equal(v[5].u, 24);
	assert_int_equal(v[6].u, 5);
	/* Every shorter payload fails: a fixed field or the string's terminator is missing. */
	for (size_t n = 0; n < sizeof(p8) - 1; n++)
		if (rasp_nt_decode(d, p8, n, 8, v, s, sizeof(s)) != -1)
			fail_msg("a payload cut to %zu of %zu bytes decoded", n, sizeof(p8) - 1);
	/* The string needs 7 bytes of UTF-8 and its NUL. */
	assert_int_equal(rasp_nt_decode(d, p8, sizeof(p8), 8, v, s, 7), -1);
	assert_int_equal(rasp_nt_decode(d, p8, sizeof(p8), 8, v, s, 8), 0);
	/* Layouts by (provider, id, version): exact, else the highest version below. */
	assert_string_equal(rasp_nt_find_desc(DOTNET, 10, 3)->lttng,
			    "DotNETRuntime:GCAllocationTick_V3");
	assert_string_equal(rasp_nt_find_desc(DOTNET, 10, 9)->lttng,
			    "DotNETRuntime:GCAllocationTick_V4");
	assert_null(rasp_nt_find_desc(DOTNET, 10, 1));
	assert_null(rasp_nt_find_desc("Contoso-Widgets", 303, 0));
	assert_string_equal(rasp_nt_find_desc("Rasp-Runtime", 1, 0)->lttng,
			    "Rasp_Runtime:SamplingConfigured");
}

/* ClrStackWalk: the Stack array, as long as FrameCount says, points into the payload; a
 * count past what is left is refused, whatever its size (no overflow of count * size). */
static void test_nettrace_payload_array(void **state)
{
	const struct rasp_event_desc *d = rasp_nt_find_desc(DOTNET, 82, 0);
	uint8_t p[8 + 3 * 8] = {7, 0, 0, 0, 3, 0, 0, 0};
	union rasp_nt_value v[5];
	char s[8];

	(void)state;
	assert_non_null(d);
	for (int f = 0; f < 3; f++)
		for (int b = 0; b < 8; b++)
			p[8 + 8 * f + b] = (uint8_t)(f == 0 ? 0x11 * (b + 1) : f);
	assert_int_equal(rasp_nt_decode(d, p, sizeof(p), 8, v, s, sizeof(s)), 0);
	assert_int_equal(v[3].u, 3);
	assert_ptr_equal(v[4].p, p + 8);
	assert_int_equal(rasp_nt_array_get(&v[4], RASP_FT_PTR, 8, 0), UINT64_C(0x8877665544332211));
	assert_int_equal(rasp_nt_array_get(&v[4], RASP_FT_PTR, 8, 2), UINT64_C(0x0202020202020202));
	/* As 32-bit pointers the same bytes hold 6 frames: 3 of them read. */
	assert_int_equal(rasp_nt_decode(d, p, sizeof(p), 4, v, s, sizeof(s)), 0);
	assert_int_equal(rasp_nt_array_get(&v[4], RASP_FT_PTR, 4, 1), 0x88776655);
	/* One frame short, and counts whose byte size wraps. */
	assert_int_equal(rasp_nt_decode(d, p, sizeof(p) - 1, 8, v, s, sizeof(s)), -1);
	p[4] = 0xff, p[5] = 0xff, p[6] = 0xff, p[7] = 0xff;
	assert_int_equal(rasp_nt_decode(d, p, sizeof(p), 8, v, s, sizeof(s)), -1);
	p[4] = 0, p[5] = 0, p[6] = 0, p[7] = 0x20; /* 2^29 frames of 8 bytes: 2^32 */
	assert_int_equal(rasp_nt_decode(d, p, sizeof(p), 8, v, s, sizeof(s)), -1);
	/* No frames: an empty array. */
	p[7] = 0;
	assert_int_equal(rasp_nt_decode(d, p, 8, 8, v, s, sizeof(s)), 0);
	assert_int_equal(v[3].u, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nettrace_payload_decode),
	    cmocka_unit_test(test_nettrace_payload_array),
	};

	return cmocka_run_group_tests_name("nettrace-payload", tests, NULL, NULL);
}
