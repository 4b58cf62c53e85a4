/* Golden tests of consumer/write/write-csv.c (tests/consumer/write/expect/csv-*.expect; regenerate
 * with RASP_UPDATE_EXPECT=1 ctest -R write-csv, then review the diff), and the format itself: an
 * RFC 4180 parser here reads every output back (quotes only around whole fields, doubled
 * inside; commas, quotes, CR and LF only in quoted fields), every record has the header's
 * fields, type and process names come back as their safe text, no cell is a spreadsheet
 * formula, tick rows put ticks under samples and the amount under bytes, Python's csv agrees,
 * and the notes go to standard error only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "write/sanitize.h"
#include "write/writer.h"

#define MAX_RECORDS 64
#define MAX_FIELDS  16

struct csv {
	char *f[MAX_RECORDS][MAX_FIELDS];
	size_t nf[MAX_RECORDS];
	size_t n;
};

/* RFC 4180, strictly (LF or CRLF line ends): a field is quoted whole or not at all; commas,
 * quotes, CR and LF only inside quotes, quotes doubled. 0, or -1 with the reason printed. */
static int csv_parse(const char *s, size_t len, struct csv *c)
{
	size_t i = 0;

	memset(c, 0, sizeof(*c));
	while (i < len) {
		size_t r = c->n++;

		assert_true(r < MAX_RECORDS);
		for (;;) {
			char *v = malloc(len + 1);
			size_t n = 0;

			assert_non_null(v);
			assert_true(c->nf[r] < MAX_FIELDS);
			c->f[r][c->nf[r]++] = v;
			if (i < len && s[i] == '"') {
				for (i++;; i++) {
					if (i >= len) {
						v[n] = '\0';
						printf("csv: quoted field not closed\n");
						return -1;
					}
					if (s[i] == '"' && i + 1 < len && s[i + 1] == '"')
						i++;
					else if (s[i] == '"')
						break;
					v[n++] = s[i];
				}
				i++; /* the closing quote */
			} else {
				for (; i < len && s[i] != ',' && s[i] != '\n'; i++) {
					if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
						break;
					if (s[i] == '"' || s[i] == '\r') {
						v[n] = '\0';
						printf(
						    "csv: bare 0x%02x in an unquoted field at byte "
						    "%zu\n",
						    (unsigned char)s[i], i);
						return -1;
					}
					v[n++] = s[i];
				}
			}
			v[n] = '\0';
			if (i < len && s[i] == ',') {
				i++;
				continue;
			}
			if (i + 1 < len && s[i] == '\r' && s[i + 1] == '\n')
				i++;
			if (i >= len || s[i] != '\n') {
				printf("csv: record %zu not ended by a line end (byte %zu)\n", r,
				       i);
				return -1;
			}
			i++;
			break;
		}
	}
	return 0;
}

static void csv_free(struct csv *c)
{
	for (size_t r = 0; r < c->n; r++)
		for (size_t k = 0; k < c->nf[r]; k++)
			free(c->f[r][k]);
	c->n = 0;
}

static size_t column(const struct csv *c, const char *name)
{
	for (size_t k = 0; k < c->nf[0]; k++)
		if (strcmp(c->f[0][k], name) == 0)
			return k;
	printf("no column %s\n", name);
	fail();
	return 0;
}

/* Every record as wide as the header. */
static void check_shape(const struct csv *c)
{
	assert_true(c->n >= 2);
	for (size_t r = 1; r < c->n; r++)
		if (c->nf[r] != c->nf[0]) {
			printf("record %zu (%s) has %zu fields, the header %zu\n", r, c->f[r][0],
			       c->nf[r], c->nf[0]);
			fail();
		}
}

/* The names as the trace gives them (raw_names): the awkward fixture's names are about their
 * bytes, and its ticks would make it a .NET trace. */
static bool raw_names;

static struct golden_out render(struct rasp_tally *t, unsigned group_by)
{
	struct rasp_report_options opt;
	struct golden_out g;

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "csv");
	opt.group_by = group_by;
	opt.raw_names = raw_names;
	golden_render(t, &opt, &g);
	rasp_report_options_fini(&opt);
	return g;
}

/* Python's csv reads as many rows as we do, each as wide as the header. */
static void check_python(const struct golden_out *g, size_t records)
{
	static const char script[] =
	    "import csv, sys\n"
	    "rows = list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8', "
	    "errors='surrogateescape'), strict=True))\n"
	    "print(len(rows), all(len(r) == len(rows[0]) for r in rows))\n";
	char out[64], want[64];

	assert_int_equal(golden_python(g->out, g->len, script, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%zu True\n", records);
	assert_string_equal(out, want);
}

static void test_write_csv_two_procs(void **state)
{
	(void)state;
	static const struct {
		unsigned by;
		const char *expect, *header;
	} cases[] = {
	    {RASP_GROUP_TYPE, "csv-two-procs.expect",
	     "scope,type,samples,bytes,bytes_low,bytes_high,objects,objects_low,objects_high,"
	     "share,model_mismatch"},
	    {RASP_GROUP_ALL, "csv-two-procs-all-keys.expect",
	     "scope,type,kind,thread,process,samples,bytes,bytes_low,bytes_high,objects,"
	     "objects_low,objects_high,share,model_mismatch,process_name"},
	};

	for (size_t i = 0; i < 2; i++) {
		struct rasp_tally *t = golden_two_procs(cases[i].by);
		struct golden_out g = render(t, cases[i].by);
		struct csv c;
		uint64_t samples = 0;
		size_t ks;

		golden_check(g.out, g.len, cases[i].expect);
		assert_int_equal(csv_parse(g.out, g.len, &c), 0);
		check_shape(&c);
		assert_int_equal(strncmp(g.out, cases[i].header, strlen(cases[i].header)), 0);
		assert_int_equal(g.out[strlen(cases[i].header)], '\n');
		/* The group rows' samples add up to the total's. */
		ks = column(&c, "samples");
		for (size_t r = 1; r + 1 < c.n; r++) {
			assert_string_equal(c.f[r][0], "group");
			samples += strtoull(c.f[r][ks], NULL, 10);
		}
		assert_string_equal(c.f[c.n - 1][0], "total");
		assert_int_equal(samples, strtoull(c.f[c.n - 1][ks], NULL, 10));
		assert_int_equal(samples, 15);
		check_python(&g, c.n);
		/* The notes (assumed mean) on standard error, not in the table. */
		assert_non_null(strstr(g.err, "sink.rasp.report: WARNING: process 6192 (emit2)"));
		assert_null(strstr(g.out, "WARNING"));
		csv_free(&c);
		golden_out_free(&g);
		rasp_tally_destroy(t);
	}
}

/* Names with commas, quotes, CR, LF, control bytes and any UTF-8 (or not) come back as their
 * safe text (sanitize.h: controls and bytes that are not UTF-8 as \xNN, UTF-8 as it is); tick
 * rows line up with the header. */
static void test_write_csv_quoting(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_KIND | RASP_GROUP_PROCESS;
	struct rasp_tally *t = golden_awkward(by);
	struct golden_out g;
	struct csv c;
	size_t kt, ks, kb, kn, ticks = 0;

	raw_names = true;
	g = render(t, by);
	raw_names = false;

	golden_check(g.out, g.len, "csv-awkward.expect");
	assert_int_equal(csv_parse(g.out, g.len, &c), 0);
	check_shape(&c);
	check_python(&g, c.n);
	kt = column(&c, "type");
	ks = column(&c, "samples");
	kb = column(&c, "bytes");
	kn = column(&c, "process_name");
	for (size_t i = 0; golden_awkward_types[i]; i++) {
		char safe[256];
		bool found = false;

		assert_true(rasp_safe_text(safe, sizeof(safe), golden_awkward_types[i]) <
			    sizeof(safe));
		for (size_t r = 1; r < c.n && !found; r++)
			found = strcmp(c.f[r][0], "group") == 0 && strcmp(c.f[r][kt], safe) == 0;
		if (!found) {
			printf("type %zu not read back from the csv\n", i);
			fail();
		}
	}
	for (size_t r = 1; r < c.n; r++) {
		if (strcmp(c.f[r][0], "group") == 0 &&
		    strcmp(c.f[r][column(&c, "process")], "100") == 0)
			assert_string_equal(c.f[r][kn], "proc, with \"comma\"");
		if (strcmp(c.f[r][0], "allocation-tick-biased") != 0)
			continue;
		/* samples = ticks, bytes = the amount; the other keys and numbers empty. */
		ticks++;
		if (strcmp(c.f[r][kt], "System.Int32[]") == 0) {
			assert_string_equal(c.f[r][ks], "2");
			assert_string_equal(c.f[r][kb], "202400");
		} else {
			assert_string_equal(c.f[r][kt], "Weird,\"Name\"");
			assert_string_equal(c.f[r][ks], "1");
			assert_string_equal(c.f[r][kb], "5000");
		}
		assert_string_equal(c.f[r][column(&c, "kind")], "");
		assert_string_equal(c.f[r][column(&c, "process")], "");
		assert_string_equal(c.f[r][column(&c, "bytes_low")], "");
		assert_string_equal(c.f[r][kn], "");
	}
	assert_int_equal(ticks, 2);
	/* Every note on standard error, none in the table. */
	assert_non_null(strstr(g.err, "WARNING: stream ch0_1 is cut short"));
	assert_non_null(strstr(g.err, "WARNING: the tracer discarded 257 events and 2 packets"));
	assert_non_null(strstr(g.err, "WARNING: 3 malformed events were skipped"));
	assert_null(strstr(g.out, "WARNING"));
	csv_free(&c);
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

/* What a traced program controls (golden_hostile) neither acts on a terminal that shows the
 * file nor runs in a spreadsheet: escapes as \xNN, any cell starting with '=', '+', '-' or '@'
 * led by a quote (OWASP) unless it is a number, in every text column (type, stack, process
 * name) and in the notes on standard error; Python's csv reads it. */
static void test_write_csv_hostile(void **state)
{
	(void)state;
	static const struct {
		const char *type, *cell;
	} want[] = {
	    {"=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"},
	    {"+SUM(1,2)", "'+SUM(1,2)"},
	    {"-1+2", "'-1+2"},
	    {"@SUM(A1)", "'@SUM(A1)"},
	    {"-42", "-42"},
	    {"+1.5e3", "+1.5e3"},
	    {"Clear\x1b[2J\x07"
	     "Bell",
	     "Clear\\x1b[2J\\x07Bell"},
	    {"Rlo\xe2\x80\xae"
	     "txt.exe",
	     "Rlo\\xe2\\x80\\xaetxt.exe"},
	};
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_PROCESS | RASP_GROUP_STACK;
	struct rasp_tally *t = golden_hostile(by);
	struct golden_out g = render(t, by);
	struct csv c;
	size_t kt, kn, kst, rows = 0;

	golden_check(g.out, g.len, "csv-hostile.expect");
	golden_check_inert(g.out, g.len, false, "csv");
	golden_check_inert(g.err, strlen(g.err), false, "csv's notes");
	assert_non_null(strstr(g.err, "WARNING: stream \\x1b[2J\\x07ch0 is cut short"));
	assert_int_equal(csv_parse(g.out, g.len, &c), 0);
	check_shape(&c);
	check_python(&g, c.n);
	kt = column(&c, "type");
	kn = column(&c, "process_name");
	kst = column(&c, "stack");
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool found = false;

		for (size_t r = 1; r < c.n && !found; r++)
			found = strcmp(c.f[r][kt], want[i].cell) == 0;
		if (!found) {
			printf("type %s: no cell %s\n", want[i].type, want[i].cell);
			fail();
		}
	}
	for (size_t r = 1; r < c.n; r++) {
		/* No cell of any column starts a formula but as its quoted self or a number. */
		for (size_t f = 0; f < c.nf[r]; f++)
			if (strchr("=+-@", c.f[r][f][0]) && c.f[r][f][0] &&
			    strcmp(c.f[r][f], "-42") != 0 && strcmp(c.f[r][f], "+1.5e3") != 0) {
				printf("record %zu field %zu starts a formula: %s\n", r, f,
				       c.f[r][f]);
				fail();
			}
		if (strcmp(c.f[r][0], "group") != 0)
			continue;
		rows++;
		assert_string_equal(c.f[r][kst], "Ns.\\x1b[2JAlloc\\xe2\\x80\\xae < "
						 "\\x1b]0;t\\x07lib.so+0xf");
		assert_true(strcmp(c.f[r][kn], "'=HYPERLINK(\"http://x\")") == 0 ||
			    strcmp(c.f[r][kn], "\\x1b]0;pwned\\x07\\xe2\\x80\\xae"
					       "eman") == 0);
	}
	assert_int_equal(rows, 10);
	/* Quoted whole, the quote inside: "'=HYPERLINK(""http://x"")" as RFC 4180 says. */
	assert_non_null(strstr(g.out, ",\"'=HYPERLINK(\"\"http://x\"\")\"\n"));
	csv_free(&c);
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

/* Tick rows under every grouping: as wide as the header, ticks under samples. */
static void test_write_csv_tick_rows(void **state)
{
	(void)state;

	for (unsigned by = 1; by <= RASP_GROUP_ALL; by++) {
		struct rasp_tally *t = golden_ticks(by);
		struct golden_out g;
		struct csv c;

		assert_int_equal(rasp_tally_add_sample(t, "X", 0, 1, 1, 64, 0), 0);
		g = render(t, by);
		assert_int_equal(csv_parse(g.out, g.len, &c), 0);
		check_shape(&c);
		assert_string_equal(c.f[3][0], "allocation-tick-biased");
		assert_string_equal(c.f[3][column(&c, "samples")], "3");
		assert_string_equal(c.f[3][column(&c, "bytes")], "307200");
		if (by & RASP_GROUP_TYPE)
			assert_string_equal(c.f[3][column(&c, "type")], "int[]");
		if (by == RASP_GROUP_TYPE)
			golden_check(g.out, g.len, "csv-ticks.expect");
		csv_free(&c);
		golden_out_free(&g);
		rasp_tally_destroy(t);
	}
}

static void test_write_csv_empty_and_unknown(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_THREAD | RASP_GROUP_PROCESS;
	struct rasp_tally *t = golden_empty(RASP_GROUP_TYPE);
	struct golden_out g = render(t, RASP_GROUP_TYPE);
	struct csv c;

	golden_check(g.out, g.len, "csv-empty.expect");
	assert_int_equal(csv_parse(g.out, g.len, &c), 0);
	check_shape(&c);
	assert_int_equal(c.n, 2); /* header and total */
	assert_non_null(strstr(g.err, "sink.rasp.report: NOTE: the input holds no events"));
	csv_free(&c);
	golden_out_free(&g);
	rasp_tally_destroy(t);

	/* Unknown thread and process: empty fields. */
	t = golden_unknown(by);
	g = render(t, by);
	golden_check(g.out, g.len, "csv-unknown.expect");
	assert_int_equal(csv_parse(g.out, g.len, &c), 0);
	check_shape(&c);
	assert_string_equal(c.f[1][column(&c, "thread")], "");
	assert_string_equal(c.f[1][column(&c, "process")], "");
	assert_string_equal(c.f[1][column(&c, "process_name")], "");
	csv_free(&c);
	golden_out_free(&g);
	rasp_tally_destroy(t);
}

/* The parser itself refuses what RFC 4180 does. */
static void test_write_csv_parser(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "a,b\"c\n", "\"a\"b,c\n", "\"abc\n", "a,b", "a\rb\n",
	};
	static const char good[] = "a,\"b,\"\"c\"\"\n\"\r\n,\n";
	struct csv c;

	assert_int_equal(csv_parse(good, strlen(good), &c), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.f[0][1], "b,\"c\"\n");
	assert_string_equal(c.f[1][0], "");
	assert_int_equal(c.nf[1], 2);
	csv_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (csv_parse(bad[i], strlen(bad[i]), &c) == 0) {
			printf("bad csv accepted: %s\n", bad[i]);
			fail();
		}
		csv_free(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_csv_two_procs),
	    cmocka_unit_test(test_write_csv_quoting),
	    cmocka_unit_test(test_write_csv_hostile),
	    cmocka_unit_test(test_write_csv_tick_rows),
	    cmocka_unit_test(test_write_csv_empty_and_unknown),
	    cmocka_unit_test(test_write_csv_parser),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
