/* Unit tests of consumer/write/format.c: human units at their edges (0, 1023, 1024, the rounding
 * thresholds of each precision, past the last unit, negative, NaN and infinities, a short
 * buffer), and the JSON helpers: escapes for quotes, backslashes and control characters,
 * well-formed UTF-8 kept up to its boundaries, every kind of invalid byte as U+FFFD, all of it
 * accepted by Python's json; numbers null when not finite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "write/writer.h"

static void check_fmt(void (*fn)(double, char *, size_t), const char *fname, double v,
		      const char *want)
{
	char buf[32];

	memset(buf, 'X', sizeof(buf));
	fn(v, buf, sizeof(buf));
	if (!memchr(buf, '\0', sizeof(buf)) || strcmp(buf, want) != 0) {
		printf("%s(%.17g) = \"%.*s\", want \"%s\"\n", fname, v, (int)sizeof(buf), buf,
		       want);
		fail();
	}
}

static void test_format_bytes(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *want;
	} cases[] = {
	    {0, "0 B"},
	    {1, "1 B"},
	    {1023, "1023 B"},
	    {1023.4, "1023 B"},	  /* below 1024 * 0.9995: still bytes */
	    {1023.5, "1.00 KiB"}, /* would print as 1024 B: the next unit */
	    {1024, "1.00 KiB"},
	    {1536, "1.50 KiB"},
	    {0.5, "0.50 B"},
	    {9.994 * 1024, "9.99 KiB"},
	    {9.995 * 1024, "10.0 KiB"}, /* never "10.00" */
	    {99.94 * 1024, "99.9 KiB"},
	    {99.95 * 1024, "100 KiB"},
	    {1023 * 1024.0, "1023 KiB"},
	    {1048576, "1.00 MiB"},
	    {1073741824.0 * 3, "3.00 GiB"},
	    {1099511627776.0, "1.00 TiB"},
	    {1125899906842624.0, "1.00 PiB"},
	    {1152921504606846976.0, "1.00 EiB"},
	    {1e22, "8674 EiB"},
	    {1e30, "8.67e+11 EiB"}, /* past the last unit */
	    {DBL_MAX, "1.56e+290 EiB"},
	    {-5, "-5 B"},
	    {-1024, "-1.00 KiB"},
	    {NAN, "-"},
	    {INFINITY, "-"},
	    {-INFINITY, "-"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_fmt(rasp_format_bytes, "rasp_format_bytes", cases[i].v, cases[i].want);
}

static void test_format_count(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *want;
	} cases[] = {
	    {0, "0"}, /* no unit, no trailing space */
	    {1, "1"},	      {999, "999"},	  {999.4, "999"},     {999.5, "1.00 k"},
	    {1000, "1.00 k"}, {1500, "1.50 k"},	  {12345, "12.3 k"},  {123456, "123 k"},
	    {1e6, "1.00 M"},  {2.5e9, "2.50 G"},  {1e12, "1.00 T"},   {1e15, "1.00 P"},
	    {1e18, "1.00 E"}, {1e21, "1000 E"},	  {1e30, "1e+12 E"},  {0.5, "0.50"},
	    {12.5, "12.5"},   {1457.9, "1.46 k"}, {-1500, "-1.50 k"}, {NAN, "-"},
	    {INFINITY, "-"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_fmt(rasp_format_count, "rasp_format_count", cases[i].v, cases[i].want);
}

static void test_format_short_buffer(void **state)
{
	(void)state;
	char buf[8];

	memset(buf, 'X', sizeof(buf));
	rasp_format_bytes(1536, buf, 4);
	assert_string_equal(buf, "1.5");
	assert_int_equal(buf[4], 'X');
	rasp_format_count(123456, buf, 5);
	assert_string_equal(buf, "123"); /* "123 " cut: the trailing space goes too */
	rasp_format_bytes(NAN, buf, 1);
	assert_string_equal(buf, "");
}

/* rasp_json_string(s) as a C string. */
static char *json_of(const char *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	rasp_json_string(f, s);
	assert_int_equal(fclose(f), 0);
	return out;
}

static const struct {
	const char *in, *want;
} json_cases[] = {
    {"", "\"\""},
    {"plain.Type[]", "\"plain.Type[]\""},
    {"a\"b\\c/d", "\"a\\\"b\\\\c/d\""},
    {"\b\t\n\f\r", "\"\\b\\t\\n\\f\\r\""},
    {"\x01\x0b\x1f", "\"\\u0001\\u000b\\u001f\""},
    /* DEL, C1 controls and bidirectional overrides: JSON needs no escape, a terminal does. */
    {"del\x7f", "\"del\\u007f\""},
    /* Well-formed UTF-8 is kept, at each boundary of a length and around the surrogates. */
    {"\xc2\x80", "\"\\u0080\""}, /* U+0080, a C1 control */
    {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
    {"\xe0\xa0\x80", "\"\xe0\xa0\x80\""},			  /* U+0800 */
    {"\xed\x9f\xbf\xee\x80\x80", "\"\xed\x9f\xbf\xee\x80\x80\""}, /* U+D7FF, U+E000 */
    {"\xf0\x90\x80\x80", "\"\xf0\x90\x80\x80\""},		  /* U+10000 */
    {"\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""},		  /* U+10FFFF */
    /* Invalid: one U+FFFD per bad byte. */
    {"\xff", "\"\\ufffd\""},
    {"a\xc3", "\"a\\ufffd\""},				      /* cut at the end */
    {"\xc3z", "\"\\ufffdz\""},				      /* no continuation */
    {"\x80", "\"\\ufffd\""},				      /* a lone continuation */
    {"\xc0\x80", "\"\\ufffd\\ufffd\""},			      /* overlong NUL */
    {"\xe0\x80\x80", "\"\\ufffd\\ufffd\\ufffd\""},	      /* overlong */
    {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},	      /* surrogate U+D800 */
    {"\xf0\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* overlong */
    {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* past U+10FFFF */
    {"\xf5\x80", "\"\\ufffd\\ufffd\""},
    {"\xe2\x82", "\"\\ufffd\\ufffd\""},		   /* cut */
    {"\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\""}, /* cut */
    {"x\xe2\x82\xacy\xfez", "\"x\xe2\x82\xacy\\ufffdz\""},
    /* 25..: what a terminal would act on, escaped; the characters beside them kept. */
    {"\x1b[2J\x07", "\"\\u001b[2J\\u0007\""},
    {"\xc2\x9b"
     "31m\xc2\x9f\xc2\xa0",
     "\"\\u009b31m\\u009f\xc2\xa0\""}, /* CSI, U+009F, U+00A0 */
    {"\xe2\x80\xa9\xe2\x80\xaa\xe2\x80\xae\xe2\x80\xaf",
     "\"\xe2\x80\xa9\\u202a\\u202e\xe2\x80\xaf\""}, /* U+2029, LRE, RLO, U+202F */
    {"\xe2\x81\xa5\xe2\x81\xa6\xe2\x81\xa9\xe2\x81\xaa",
     "\"\xe2\x81\xa5\\u2066\\u2069\xe2\x81\xaa\""}, /* U+2065, LRI, PDI, U+206A */
};

static void test_format_json_string(void **state)
{
	(void)state;

	for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
		char *got = json_of(json_cases[i].in);

		if (strcmp(got, json_cases[i].want) != 0) {
			printf("case %zu: got %s, want %s\n", i, got, json_cases[i].want);
			fail();
		}
		free(got);
	}
}

/* Every case in one array: Python parses it and decodes each as expected (U+FFFD for the
 * bad bytes, the text otherwise). */
static void test_format_json_string_parses(void **state)
{
	(void)state;
	static const char script[] =
	    "import json, sys\n"
	    "v = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	    "print(len(v), v[3] == '\\b\\t\\n\\f\\r', v[18] == '\\ufffd' * 3,\n"
	    "      v[11] == '\\U0010ffff', v[24] == 'x\\u20acy\\ufffdz', v[2] == 'a\"b\\\\c/d',\n"
	    "      v[25] == '\\x1b[2J\\x07', v[27] == '\\u2029\\u202a\\u202e\\u202f')\n";
	char *text = NULL, out[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	fputc('[', f);
	for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
		fputs(i ? ", " : "", f);
		rasp_json_string(f, json_cases[i].in);
	}
	fputs("]\n", f);
	assert_int_equal(fclose(f), 0);
	golden_check_json(text, len);
	assert_int_equal(golden_python(text, len, script, out, sizeof(out)), 0);
	assert_string_equal(out, "29 True True True True True True True\n");
	free(text);
}

static void test_format_json_number(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *fmt, *want;
	} cases[] = {
	    {1.5, "%.1f", "1.5"},  {1234567.0, "%.0f", "1234567"}, {0, "%.15g", "0"},
	    {NAN, "%.0f", "null"}, {INFINITY, "%.0f", "null"},	   {-INFINITY, "%.1f", "null"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		assert_non_null(f);
		rasp_json_number(f, cases[i].v, cases[i].fmt);
		assert_int_equal(fclose(f), 0);
		assert_string_equal(out, cases[i].want);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_bytes),
	    cmocka_unit_test(test_format_count),
	    cmocka_unit_test(test_format_short_buffer),
	    cmocka_unit_test(test_format_json_string),
	    cmocka_unit_test(test_format_json_string_parses),
	    cmocka_unit_test(test_format_json_number),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
