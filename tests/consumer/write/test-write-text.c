/* Golden tests of consumer/write/write-text.c: hand-built tallies (golden.c) rendered with
 * rasp_report_render and compared with tests/consumer/write/expect/text-*.expect (regenerate with
 * RASP_UPDATE_EXPECT=1 ctest -R write-text, then review the diff). Beyond the files: control
 * characters never reach the output (any field of a hostile trace shows as its safe text),
 * every table line has the same display width, top cuts rows but not the total, and nothing
 * goes to standard error. */
#define _XOPEN_SOURCE 700 /* wcwidth */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

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

/* The columns a terminal gives line [s, s + len): wcwidth's in C.UTF-8 (main sets it). */
static size_t columns_of(const char *s, size_t len)
{
	mbstate_t st = {0};
	size_t w = 0;

	for (size_t i = 0; i < len;) {
		wchar_t c;
		size_t n = mbrtowc(&c, s + i, len - i, &st);
		int cw;

		assert_true(n != (size_t)-1 && n != (size_t)-2 && n != 0);
		cw = wcwidth(c);
		w += cw < 0 ? 1 : (size_t)cw;
		i += n;
	}
	return w;
}

/* The widest line of g, in columns. */
static size_t widest(const struct golden_out *g)
{
	size_t most = 0;

	for (const char *p = g->out, *end; *p; p = end + 1) {
		size_t w;

		end = strchr(p, '\n');
		assert_non_null(end);
		w = columns_of(p, (size_t)(end - p));
		most = w > most ? w : most;
	}
	return most;
}

/* 40 types, the largest a 600-column generic name, others of wide (CJK) and combining
 * characters: what a generic-heavy .NET program's report holds. */
static struct rasp_tally *long_names(char *huge, size_t cap)
{
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 4096);
	size_t n = 0;

	assert_non_null(t);
	n += (size_t)snprintf(huge + n, cap - n, "Microsoft.CodeAnalysis.Syntax.SyntaxList`1[");
	while (n < 590)
		n += (size_t)snprintf(huge + n, cap - n, "System.Collections.Generic.List`1[");
	snprintf(huge + n, cap - n, "System.String]]]");
	assert_true(strlen(huge) > 600);
	for (int i = 0; i < 40; i++) {
		char name[64];
		const char *type = name;

		if (i == 0)
			type = huge;
		else if (i == 1)
			type = "\u5927\u304d\u306a\u578b\u540d\u524d\u306e\u4e00\u89a7\u8868\u793a"
			       "\u7528\u306e\u30c6\u30b9\u30c8\u30af\u30e9\u30b9\u540d\u524d";
		else if (i == 2)
			type =
			    "Cafe\u0301.Re\u0301sume\u0301.Na\u0131\u0308ve.Type.With.A.Long.Name";
		else
			snprintf(name, sizeof(name), "Generics.Type%02d", i);
		for (int k = 0; k < 60 - i; k++)
			assert_int_equal(rasp_tally_add_sample(t, type, 0, 42, 42, 4096,
							       (uint64_t)k * 61 % 4096),
					 0);
	}
	return t;
}

static struct golden_out render_width(struct rasp_tally *t, uint64_t top, uint64_t width, bool wide)
{
	struct rasp_report_options opt;
	struct golden_out g;

	rasp_report_options_init(&opt);
	opt.group_by = RASP_GROUP_TYPE;
	opt.top = top;
	opt.width = width;
	opt.wide = wide;
	golden_render(t, &opt, &g);
	rasp_report_options_fini(&opt);
	assert_string_equal(g.err, "");
	return g;
}

/* --width N (what a terminal's width sets): every line within N columns at 80 and 120 (and
 * at 60, where the objects columns go), the long names shortened in the middle, numbers
 * whole, the same TOTAL; --wide and a width of 0 keep every name whole. (Lines were as long
 * as the longest name: 675 columns for a Roslyn type.) */
static void test_write_text_fits_width(void **state)
{
	(void)state;
	static char huge[700];
	struct rasp_tally *t = long_names(huge, sizeof(huge));
	static const uint64_t widths[] = {60, 80, 120};
	struct golden_out full = render_width(t, 0, 0, false);

	assert_true(widest(&full) > 600);
	assert_non_null(strstr(full.out, huge));
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		struct golden_out g = render_width(t, 0, widths[i], false);
		const char *row;

		if (widest(&g) > widths[i]) {
			printf("a line wider than %u columns (%zu):\n%s", (unsigned)widths[i],
			       widest(&g), g.out);
			fail();
		}
		/* The huge name: its start and its end, "…" between. */
		row = strstr(g.out, "\nMi");
		assert_non_null(row);
		assert_true(strstr(row, "\u2026") < strchr(row + 1, '\n'));
		assert_true(strstr(row, "]]") < strchr(row + 1, '\n'));
		if (widths[i] >= 80 && strncmp(row, "\nMicrosoft.Code", 15) != 0)
			fail_msg("the long name's start is not kept at %u columns:\n%s",
				 (unsigned)widths[i], g.out);
		assert_null(strstr(g.out, huge));
		assert_non_null(strstr(g.out, "\nTOTAL"));
		assert_non_null(strstr(g.out, "Generics.Type39"));
		/* Every row kept: --top 0. */
		assert_null(strstr(g.out, "more row"));
		golden_out_free(&g);
	}
	{
		struct golden_out g = render_width(t, 0, 80, true);

		assert_non_null(strstr(g.out, huge));
		assert_null(strstr(g.out, "--wide shows"));
		golden_out_free(&g);
	}
	golden_out_free(&full);
	rasp_tally_destroy(t);
}

/* top and width by default ("auto") outside a terminal: every row, every name whole, so a
 * file or a pipe keeps the report as it was. */
static void test_write_text_auto_off_a_terminal(void **state)
{
	(void)state;
	static char huge[700];
	struct rasp_tally *t = long_names(huge, sizeof(huge));
	struct golden_out g = render_width(t, RASP_PARAM_AUTO, RASP_PARAM_AUTO, false);

	assert_non_null(strstr(g.out, huge));
	assert_non_null(strstr(g.out, "Generics.Type39"));
	assert_null(strstr(g.out, "more row"));
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
	    cmocka_unit_test(test_write_text_fits_width),
	    cmocka_unit_test(test_write_text_auto_off_a_terminal),
	};

	/* For columns_of's mbrtowc and wcwidth; the writer keeps its own locale object. */
	if (!setlocale(LC_CTYPE, "C.UTF-8")) {
		fprintf(stderr, "no C.UTF-8 locale\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
