/* Unit tests of consumer/write/sanitize.c: what a terminal may act on (C0, DEL, C1, the
 * bidirectional controls, bytes that are not UTF-8) comes out as \xNN and everything else as it is,
 * at each boundary of each range; the safe text of a safe text is itself; rasp_safe_text cuts as
 * snprintf does but never inside an escape or a character; and, checked byte by byte without
 * the decoder under test, no safe text of any one- or two-byte string, nor of 200,000 random
 * strings (fixed seed), holds a control byte, a C1 or a bidirectional control. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "write/sanitize.h"

static const struct {
	const char *in, *want;
} cases[] = {
    {"", ""},
    {"System.Collections.Generic.List`1[System.Int32]",
     "System.Collections.Generic.List`1[System.Int32]"},
    {"back\\slash \\x1b", "back\\slash \\x1b"}, /* a backslash is left alone */
    {"\x1b[2Jclear\x07", "\\x1b[2Jclear\\x07"},
    {"\x01\t\n\r\x1f x\x7f", "\\x01\\x09\\x0a\\x0d\\x1f x\\x7f"},
    {"~\x7f", "~\\x7f"},
    /* C1: U+0080..U+009F (U+009B is CSI); U+00A0 is printable. */
    {"\xc2\x80\xc2\x9b"
     "31m\xc2\x9f\xc2\xa0",
     "\\xc2\\x80\\xc2\\x9b"
     "31m\\xc2\\x9f\xc2\xa0"},
    /* Bidirectional embeddings, overrides, isolates; their neighbours pass. */
    {"\xe2\x80\xa9\xe2\x80\xaa\xe2\x80\xae\xe2\x80\xaf",
     "\xe2\x80\xa9\\xe2\\x80\\xaa\\xe2\\x80\\xae\xe2\x80\xaf"},
    {"\xe2\x81\xa5\xe2\x81\xa6\xe2\x81\xa9\xe2\x81\xaa",
     "\xe2\x81\xa5\\xe2\\x81\\xa6\\xe2\\x81\\xa9\xe2\x81\xaa"},
    {"abc\xe2\x80\xae"
     "cba",
     "abc\\xe2\\x80\\xae"
     "cba"},
    /* UTF-8 passes at each length's ends. */
    {"\xc3\xa9\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",
     "\xc3\xa9\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"},
    /* Not UTF-8: each bad byte escaped, the next character read afresh. */
    {"\xff\xfe", "\\xff\\xfe"},
    {"\x80z", "\\x80z"},
    {"\xc0\xaf", "\\xc0\\xaf"},			  /* overlong '/' */
    {"\xe0\x9f\xbf", "\\xe0\\x9f\\xbf"},	  /* overlong */
    {"\xed\xa0\x80", "\\xed\\xa0\\x80"},	  /* surrogate */
    {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"}, /* past U+10FFFF */
    {"a\xe2\x80", "a\\xe2\\x80"},		  /* cut at the end */
    {"\xe2\x80"
     "A",
     "\\xe2\\x80"
     "A"},			       /* cut before ASCII */
    {"\xe2\xc3\xa9", "\\xe2\xc3\xa9"}, /* cut before a character */
    {"\xc2\x1b[0m", "\\xc2\\x1b[0m"},  /* a lead byte eats no ESC */
};

static char *safe(const char *s)
{
	size_t n = rasp_safe_text(NULL, 0, s);
	char *out = malloc(n + 1);

	assert_non_null(out);
	assert_int_equal(rasp_safe_text(out, n + 1, s), n);
	assert_int_equal(strlen(out), n);
	return out;
}

static void test_sanitize_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = safe(cases[i].in), *again = safe(got), *put = NULL;
		size_t putlen = 0, width = 0;
		FILE *f = open_memstream(&put, &putlen);

		if (strcmp(got, cases[i].want) != 0) {
			printf("case %zu: got \"%s\", want \"%s\"\n", i, got, cases[i].want);
			fail();
		}
		assert_string_equal(again, got); /* idempotent */
		assert_non_null(f);
		rasp_safe_put(f, cases[i].in);
		assert_int_equal(fclose(f), 0);
		assert_string_equal(put, got);
		for (const char *p = got; *p; p++)
			width += ((unsigned char)*p & 0xc0) != 0x80;
		assert_int_equal(rasp_safe_width(cases[i].in), width);
		free(got);
		free(again);
		free(put);
	}
}

static void test_sanitize_decoder(void **state)
{
	(void)state;
	int32_t cp;

	assert_int_equal(rasp_utf8_next("A", &cp), 1);
	assert_int_equal(cp, 'A');
	assert_int_equal(rasp_utf8_next("\xf0\x9f\x98\x80", &cp), 4);
	assert_int_equal(cp, 0x1f600);
	assert_int_equal(rasp_utf8_next("\xe2\x80\xae", &cp), 3);
	assert_int_equal(cp, 0x202e);
	/* Stops at the NUL of a cut sequence. */
	assert_int_equal(rasp_utf8_next("\xf0\x9f", &cp), 1);
	assert_int_equal(cp, -1);
	assert_true(rasp_char_unsafe(-1));
	assert_true(rasp_char_unsafe(0x1b));
	assert_true(rasp_char_unsafe(0x9b));
	assert_false(rasp_char_unsafe(' '));
	assert_false(rasp_char_unsafe(0xa0));
	assert_false(rasp_char_unsafe(0x1f600));
}

/* Cut like snprintf, never inside an escape or a character; the whole length returned. */
static void test_sanitize_cut(void **state)
{
	(void)state;
	char buf[16];
	char big[64] = "abcdefgh";

	memset(buf, 'X', sizeof(buf));
	assert_int_equal(rasp_safe_text(buf, 6,
					"ab\x1b"
					"cd"),
			 8);
	assert_string_equal(buf, "ab"); /* "\x1b" would not fit whole */
	assert_int_equal(buf[3], 'X');
	assert_int_equal(rasp_safe_text(buf, 7,
					"ab\x1b"
					"cd"),
			 8);
	assert_string_equal(buf, "ab\\x1b");
	assert_int_equal(rasp_safe_text(buf, 3, "a\xc3\xa9"), 3);
	assert_string_equal(buf, "a");
	/* After a cut nothing shorter is slipped in. */
	assert_int_equal(rasp_safe_text(buf, 4, "ab\x07z"), 7);
	assert_string_equal(buf, "ab");
	assert_int_equal(rasp_safe_text(buf, 1, "abc"), 3);
	assert_string_equal(buf, "");
	memset(buf, 'X', sizeof(buf));
	assert_int_equal(rasp_safe_text(buf, 0, "abc"), 3);
	assert_int_equal(buf[0], 'X');
	/* In place, cut to the buffer. */
	memcpy(big, "name\x1b]0;title\x07", 15);
	assert_string_equal(rasp_safe_in_place(big, sizeof(big)), "name\\x1b]0;title\\x07");
	memcpy(big, "ab\x1b", 4);
	assert_string_equal(rasp_safe_in_place(big, 5), "ab");
}

/* What reaches a terminal, judged byte by byte: no C0 byte, no DEL, no UTF-8 encoding of a
 * C1 control (C2 80..9F) or of a bidirectional control (E2 80 AA..AE, E2 81 A6..A9). */
static void check_inert(const unsigned char *in, size_t inlen, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; p[i]; i++) {
		int bad =
		    p[i] < 0x20 || p[i] == 0x7f ||
		    (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) ||
		    (p[i] == 0xe2 && p[i + 1] == 0x80 && p[i + 2] >= 0xaa && p[i + 2] <= 0xae) ||
		    (p[i] == 0xe2 && p[i + 1] == 0x81 && p[i + 2] >= 0xa6 && p[i + 2] <= 0xa9);

		if (bad) {
			printf("input");
			for (size_t k = 0; k < inlen; k++)
				printf(" %02x", in[k]);
			printf(": unsafe byte 0x%02x at %zu of \"%s\"\n", p[i], i, s);
			fail();
		}
	}
}

static void test_sanitize_every_short_string(void **state)
{
	(void)state;
	unsigned char in[4];
	char out[64];

	for (unsigned a = 1; a < 256; a++)
		for (unsigned b = 0; b < 256; b++) {
			in[0] = (unsigned char)a;
			in[1] = (unsigned char)b;
			in[2] = 0;
			rasp_safe_text(out, sizeof(out), (const char *)in);
			check_inert(in, b ? 2 : 1, out);
		}
	/* Every three-byte sequence led by E2 and by C2, and every code point encoded. */
	for (unsigned b = 1; b < 256; b++)
		for (unsigned c = 1; c < 256; c++) {
			in[0] = 0xe2;
			in[1] = (unsigned char)b;
			in[2] = (unsigned char)c;
			in[3] = 0;
			rasp_safe_text(out, sizeof(out), (const char *)in);
			check_inert(in, 3, out);
			in[0] = 0xc2;
			rasp_safe_text(out, sizeof(out), (const char *)in);
			check_inert(in, 3, out);
		}
}

static void test_sanitize_random_strings(void **state)
{
	(void)state;
	unsigned char in[12];
	char out[64];
	uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64, fixed seed */

	for (int i = 0; i < 200000; i++) {
		size_t n = 1 + (size_t)(x % 11);

		for (size_t k = 0; k < n; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* Mostly the bytes that matter: leads, continuations, controls. */
			in[k] = (unsigned char)(x & 1 ? 0x80 | (x >> 8 & 0x7f) : x >> 8 & 0xff);
			if (!in[k])
				in[k] = 0x1b;
		}
		in[n] = 0;
		rasp_safe_text(out, sizeof(out), (const char *)in);
		check_inert(in, n, out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sanitize_cases),
	    cmocka_unit_test(test_sanitize_decoder),
	    cmocka_unit_test(test_sanitize_cut),
	    cmocka_unit_test(test_sanitize_every_short_string),
	    cmocka_unit_test(test_sanitize_random_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
