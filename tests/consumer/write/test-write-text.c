/* Golden tests of consumer/write/write-text.c: hand-built tallies (golden.c) rendered with
 * rasp_report_render and compared with tests/consumer/write/expect/text-*.expect (regenerate with
 * RASP_UPDATE_EXPECT=1 ctest -R write-text, then review the diff). Beyond the files: control
 * characters never reach the output (any field of a hostile trace shows as its safe text),
 * every table line has the same display width, top cuts rows but not the total, and nothing
 * goes to standard error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "write/writer.h"

/* The names as the trace gives them (raw_names): the awkward fixture's names are about their
 * bytes, and its ticks would make it a .NET trace. */
static bool raw_names;

static struct golden_out render(struct rasp_tally *t, unsigned group_by, uint64_t top,
				double confidence)
{
	struct rasp_report_options opt;
	struct golden_out g;

	rasp_report_options_init(&opt);
	opt.group_by = group_by;
	opt.top = top;
	opt.confidence = confidence;
	opt.raw_names = raw_names;
	golden_render(t, &opt, &g);
	rasp_report_options_fini(&opt);
	assert_string_equal(g.err, ""); /* text says everything in the report */
	return g;
}

/* No control character but the line ends. */
static void check_printable(const struct golden_out *g)
{
	for (size_t i = 0; i < g->len; i++)
		if ((unsigned char)g->out[i] < 0x20 && g->out[i] != '\n') {
			printf("control character 0x%02x at byte %zu\n", (unsigned char)g->out[i],
			       i);
			fail();
		}
}

static size_t width_of(const char *s, size_t len)
{
	size_t w = 0;

	for (size_t i = 0; i < len; i++)
		w += ((unsigned char)s[i] & 0xc0) != 0x80;
	return w;
}

/* The table, from its heading line (starting with `head`) to the TOTAL line: one width. */
static void check_aligned(const struct golden_out *g, const char *head)
{
	const char *p = strstr(g->out, head), *end;
	size_t width = 0, lines = 0;

	assert_non_null(p);
	for (; *p; p = end + 1) {
		size_t w;

		end = strchr(p, '\n');
		assert_non_null(end);
		if (strncmp(p, "\u2026 ", 4) == 0)
			continue;
		w = width_of(p, (size_t)(end - p));
		if (lines++ && w != width) {
			printf("line of width %zu, the heading's is %zu: %.*s\n", w, width,
			       (int)(end - p), p);
			fail();
		}
		width = w;
		if (strncmp(p, "TOTAL", 5) == 0)
			break;
	}
	assert_true(lines >= 3);
}

static void test_write_text_two_procs(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_two_procs(RASP_GROUP_TYPE);
	struct golden_out g = render(t, RASP_GROUP_TYPE, 0, 0.95);

	golden_check(g.out, g.len, "text-two-procs.expect");
	check_printable(&g);
	check_aligned(&g, "TYPE ");
	golden_out_free(&g);
	rasp_tally_destroy(t);

	t = golden_two_procs(RASP_GROUP_ALL);
	g = render(t, RASP_GROUP_ALL, 0, 0.9);
	golden_check(g.out, g.len, "text-two-procs-all-keys.expect");
	check_aligned(&g, "TYPE ");
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

/* The line at s with runs of spaces made one. */
static void squeeze(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; *s && *s != '\n' && n + 1 < len; s++)
		if (*s != ' ' || (n && out[n - 1] != ' '))
			out[n++] = *s;
	out[n] = '\0';
}

/* top=2: two rows, a line saying how many more, and the same TOTAL as without top. */
static void test_write_text_top(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_two_procs(RASP_GROUP_TYPE);
	struct golden_out all = render(t, RASP_GROUP_TYPE, 0, 0.95);
	struct golden_out top = render(t, RASP_GROUP_TYPE, 2, 0.95);
	struct golden_out big = render(t, RASP_GROUP_TYPE, 100, 0.95);
	const char *ta = strstr(all.out, "\nTOTAL"), *tt = strstr(top.out, "\nTOTAL");

	golden_check(top.out, top.len, "text-two-procs-top2.expect");
	assert_non_null(strstr(top.out, "\n\u2026 2 more rows (--top 0 for all)\n"));
	assert_non_null(ta);
	assert_non_null(tt);
	/* The same TOTAL; only its padding follows the rows shown. */
	{
		char a[256], b[256];

		squeeze(ta + 1, a, sizeof(a));
		squeeze(tt + 1, b, sizeof(b));
		assert_string_equal(a, b);
		assert_non_null(strstr(a, "TOTAL 755 KiB"));
	}
	/* top past the rows: the whole table. */
	assert_int_equal(big.len, all.len);
	assert_int_equal(memcmp(big.out, all.out, all.len), 0);
	golden_out_free(&all);
	golden_out_free(&top);
	golden_out_free(&big);
	rasp_tally_destroy(t);
}

static void test_write_text_awkward(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_KIND;
	struct rasp_tally *t = golden_awkward(by);
	struct golden_out g;

	raw_names = true;
	g = render(t, by, 0, 0.95);
	raw_names = false;
	golden_check(g.out, g.len, "text-awkward.expect");
	check_printable(&g);
	check_aligned(&g, "TYPE ");
	assert_non_null(strstr(g.out, "Ctl\\x01\\x1f\\x7f"
				      "End"));
	assert_non_null(strstr(g.out, "Bad\\xff\\xfe\\xc3UTF8"));
	assert_non_null(strstr(g.out, "\xc3\x9cn\xc3\xaf"
				      "code.\xd0\xa2\xd0\xb8\xd0\xbf"));
	assert_non_null(strstr(g.out, "WARNING: the tracer discarded 257 events and 2 packets"));
	assert_non_null(strstr(g.out, "GCAllocationTick"));
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

static void test_write_text_empty_and_ticks(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_empty(RASP_GROUP_TYPE);
	struct golden_out g = render(t, RASP_GROUP_TYPE, 0, 0.95);

	golden_check(g.out, g.len, "text-empty.expect");
	assert_non_null(strstr(g.out, "NOTE: the input holds no events at all"));
	assert_null(strstr(g.out, "TOTAL"));
	golden_out_free(&g);
	rasp_tally_destroy(t);

	t = golden_ticks(RASP_GROUP_TYPE);
	g = render(t, RASP_GROUP_TYPE, 0, 0.95);
	golden_check(g.out, g.len, "text-ticks.expect");
	assert_non_null(strstr(g.out, "BIASED"));
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

static void test_write_text_many_and_unknown(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_many(RASP_GROUP_PROCESS);
	struct golden_out g = render(t, RASP_GROUP_PROCESS, 0, 0.95);

	golden_check(g.out, g.len, "text-many.expect");
	assert_non_null(strstr(g.out, "  processes: 7 with samples, sampling means 8192 to 102400 "
				      "bytes\n"));
	check_aligned(&g, "PROCESS ");
	golden_out_free(&g);
	rasp_tally_destroy(t);

	t = golden_unknown(RASP_GROUP_THREAD | RASP_GROUP_PROCESS);
	g = render(t, RASP_GROUP_THREAD | RASP_GROUP_PROCESS, 0, 0.95);
	golden_check(g.out, g.len, "text-unknown.expect");
	assert_non_null(strstr(g.out, "process:   unknown (no vpid context)"));
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

/* What a traced program controls (golden_hostile) never acts on the terminal: the header's
 * input, process and warning, and the type, process and stack cells (method names, module
 * paths) come out as their safe text, \xNN for each byte of a control, and the table stays
 * aligned. */
static void test_write_text_hostile(void **state)
{
	(void)state;
	static const char *const want[] = {
	    "  input:     /traces/\\x1b[31mred\\x1b[0m\n",
	    "  process:   300 \\x1b]0;pwned\\x07\\xe2\\x80\\xaeeman, sampling mean 4096 bytes\n",
	    "  process:   301 =HYPERLINK(\"http://x\"), sampling mean 4096 bytes\n",
	    "WARNING: stream \\x1b[2J\\x07ch0 is cut short\n",
	    "\nClear\\x1b[2J\\x07Bell ",
	    "\nRlo\\xe2\\x80\\xaetxt.exe ",
	    "\nIsolate\\xe2\\x81\\xa6x\\xe2\\x81\\xa9 ",
	    "\nCsi\\xc2\\x9b31m ",
	    " 300 \\x1b]0;pwned\\x07\\xe2\\x80\\xaeeman ",
	    " Ns.\\x1b[2JAlloc\\xe2\\x80\\xae < \\x1b]0;t\\x07lib.so+0x",
	};
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_PROCESS | RASP_GROUP_STACK;
	struct rasp_tally *t = golden_hostile(by);
	struct golden_out g = render(t, by, 0, 0.95);

	golden_check(g.out, g.len, "text-hostile.expect");
	golden_check_inert(g.out, g.len, false, "text");
	check_aligned(&g, "TYPE ");
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(g.out, want[i])) {
			printf("not in the report: %s\n", want[i]);
			fail();
		}
	golden_out_free(&g);
	rasp_tally_destroy(t);

	/* By site: the method's name alone. */
	t = golden_hostile(RASP_GROUP_TYPE | RASP_GROUP_SITE);
	g = render(t, RASP_GROUP_TYPE | RASP_GROUP_SITE, 0, 0.95);
	golden_check_inert(g.out, g.len, false, "text by site");
	check_aligned(&g, "TYPE ");
	assert_non_null(strstr(g.out, " Ns.\\x1b[2JAlloc\\xe2\\x80\\xae "));
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_text_two_procs),
	    cmocka_unit_test(test_write_text_top),
	    cmocka_unit_test(test_write_text_awkward),
	    cmocka_unit_test(test_write_text_empty_and_ticks),
	    cmocka_unit_test(test_write_text_many_and_unknown),
	    cmocka_unit_test(test_write_text_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
