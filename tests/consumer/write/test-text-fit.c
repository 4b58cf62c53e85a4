/* Tests of consumer/write/text-fit.c: a name shortened in the middle to a number of columns
 * (its start keeps the odd column, wide characters count two, never cut inside a character),
 * the safe text of a hostile name, wrapping at spaces with an indent, and the terminal's size
 * (TIOCGWINSZ on a pseudo-terminal, else COLUMNS) against a stream that is not one. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "write/text-fit.h"

/* What rasp_text_put_fit(s, cols) writes, and its columns in *used. */
static char *fit(const char *s, size_t cols, size_t *used)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(rasp_text_put_fit(f, s, cols, used), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void check_fit(const char *s, size_t cols, const char *want, size_t want_used)
{
	size_t used = 999;
	char *got = fit(s, cols, &used);

	if (strcmp(got, want) != 0 || used != want_used) {
		printf("fit(\"%s\", %zu) = \"%s\" (%zu columns), want \"%s\" (%zu)\n", s, cols, got,
		       used, want, want_used);
		fail();
	}
	free(got);
}

static void test_fit_middle(void **state)
{
	(void)state;
	check_fit("abcdefghij", 20, "abcdefghij", 10); /* fits: whole */
	check_fit("abcdefghij", 10, "abcdefghij", 10);
	check_fit("abcdefghij", 9, "abcd\u2026ghij", 9);
	check_fit("abcdefghij", 5, "ab\u2026ij", 5);
	check_fit("abcdefghij", 6, "abc\u2026ij", 6); /* the start gets the odd column */
	check_fit("abcdefghij", 1, "\u2026", 1);
	check_fit("abcdefghij", 0, "", 0);
	check_fit("", 0, "", 0);
	check_fit("List<Dictionary<string, int>>", 12, "List<D\u2026int>>", 12);
}

/* Wide characters take two columns and are never split: a column too few is left empty. */
static void test_fit_wide_characters(void **state)
{
	(void)state;
	check_fit("\u578b\u540d\u524d\u578b\u540d", 10, "\u578b\u540d\u524d\u578b\u540d", 10);
	check_fit("\u578b\u540d\u524d\u578b\u540d", 9, "\u578b\u540d\u2026\u578b\u540d", 9);
	check_fit("\u578b\u540d\u524d\u578b\u540d", 8, "\u578b\u540d\u2026\u540d", 6 + 1);
	/* A combining mark takes no column and stays with its letter. */
	check_fit("e\u0301e\u0301e\u0301e\u0301e\u0301", 5, "e\u0301e\u0301e\u0301e\u0301e\u0301",
		  5);
}

/* Controls and escapes show as their safe text (\xNN), counted as they show. */
static void test_fit_hostile(void **state)
{
	size_t used;
	char *got;

	(void)state;
	got = fit("a\033[2Jb", 40, &used);
	assert_null(strchr(got, '\033'));
	assert_int_equal(used, strlen(got));
	free(got);
	got = fit("\033\033\033\033\033\033\033\033", 9, &used);
	assert_null(strchr(got, '\033'));
	assert_int_equal(used, 9);
	free(got);
	assert_int_equal(rasp_text_width("a\033b"), strlen("a\\x1bb"));
	assert_int_equal(rasp_text_width("\u578b"), 2);
}

static char *wrap(const char *s, size_t width, size_t indent, size_t *lines)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*lines = 0;
	assert_non_null(f);
	assert_int_equal(rasp_text_put_wrapped(f, s, width, indent, lines), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_wrap(void **state)
{
	size_t lines;
	char *got;

	(void)state;
	got = wrap("one two three four five six", 14, 2, &lines);
	assert_string_equal(got, "one two three\n  four five\n  six\n");
	assert_int_equal(lines, 3);
	free(got);
	got = wrap("one two three", 0, 2, &lines); /* no limit */
	assert_string_equal(got, "one two three\n");
	assert_int_equal(lines, 1);
	free(got);
	/* A word longer than a line is cut where the line ends. */
	got = wrap("abcdefghijklmnopqrstuvwxyz", 12, 2, &lines);
	assert_string_equal(got, "abcdefghijkl\n  mnopqrstuv\n  wxyz\n");
	assert_int_equal(lines, 3);
	free(got);
}

/* A pseudo-terminal's size is the terminal's; COLUMNS only where it has none; a stream that is
 * not a terminal is none. */
static void test_terminal(void **state)
{
	struct winsize ws = {.ws_row = 33, .ws_col = 97};
	int master, slave;
	size_t cols = 0, rows = 0;
	FILE *f;

	(void)state;
	assert_int_equal(openpty(&master, &slave, NULL, NULL, &ws), 0);
	f = fdopen(slave, "w");
	assert_non_null(f);
	setenv("COLUMNS", "55", 1);
	assert_true(rasp_text_terminal(f, &cols, &rows));
	assert_int_equal(cols, 97);
	assert_int_equal(rows, 33);
	ws = (struct winsize){0};
	assert_int_equal(ioctl(slave, TIOCSWINSZ, &ws), 0);
	assert_true(rasp_text_terminal(f, &cols, &rows));
	assert_int_equal(cols, 55);
	assert_int_equal(rows, 24);
	setenv("COLUMNS", "junk", 1);
	assert_true(rasp_text_terminal(f, &cols, &rows));
	assert_int_equal(cols, 80);
	fclose(f);
	close(master);
	f = tmpfile();
	assert_non_null(f);
	assert_false(rasp_text_terminal(f, &cols, &rows));
	fclose(f);
	unsetenv("COLUMNS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fit_middle),	cmocka_unit_test(test_fit_wide_characters),
	    cmocka_unit_test(test_fit_hostile), cmocka_unit_test(test_wrap),
	    cmocka_unit_test(test_terminal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
