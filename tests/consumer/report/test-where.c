/* Tests of consumer/report/where.c through rasp_rows_build_with: .NET stacks (methods from
 * their load events, no debug information needed) grouped by stack as they are named, so
 * two paths through the same methods at other offsets are one row while overloads stay two;
 * sites by the rule: the program's own innermost method (user), the innermost (leaf), the
 * user's patterns; C#'s names and the runtime's (raw_names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/rows.h"

#define PID 4242

/* Main calls Tables, which calls string.Concat with two or three strings (overloads). */
static struct rasp_tally *concat_tally(unsigned by)
{
	static const struct {
		const char *ns, *name, *sig;
		uint64_t base;
	} methods[] = {
	    {"Generics.Program", "Main", "int32  (class System.String[])", 0x40000},
	    {"Generics.Program", "Tables", "void  (int32)", 0x10000},
	    {"System.String", "Concat",
	     "class System.String  (class System.String,class System.String)", 0x20000},
	    {"System.String", "Concat",
	     "class System.String  (class System.String,class System.String,class System.String)",
	     0x30000},
	};
	/* Return addresses: A and B differ only in the offsets inside the same methods. */
	static const uint64_t a[] = {0x20011, 0x10011, 0x40011}, b[] = {0x20081, 0x10051, 0x40091},
			      c[] = {0x30011, 0x10011, 0x40011};
	struct rasp_tally *t = rasp_tally_create(by, 4096);

	assert_non_null(t);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		assert_int_equal(rasp_modules_add_clr_method(&t->modules, PID, methods[i].base,
							     0x100, methods[i].ns, methods[i].name,
							     methods[i].sig),
				 0);
	for (int k = 0; k < 30; k++) {
		assert_int_equal(
		    rasp_tally_add_sample_stack(t, "System.String", 0, PID, PID, 64, 1, a, 3), 0);
		assert_int_equal(
		    rasp_tally_add_sample_stack(t, "System.String", 0, PID, PID, 64, 2, b, 3), 0);
		assert_int_equal(
		    rasp_tally_add_sample_stack(t, "System.String", 0, PID, PID, 64, 3, c, 3), 0);
	}
	return t;
}

static struct rasp_rows build(struct rasp_tally *t, bool leaf, const char *exclude, bool raw)
{
	char *pat[] = {(char *)exclude};
	struct rasp_rows_options o = {.confidence = 0.95,
				      .site = {.leaf = leaf, .exclude = pat, .nexclude = !!exclude},
				      .raw_names = raw};
	struct rasp_rows r;

	assert_int_equal(rasp_rows_build_with(t, &o, &r), 0);
	return r;
}

/* The text of row i's stack, frames joined by " < ". */
static void stack_text(struct rasp_rows *r, struct rasp_tally *t, size_t i, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < rasp_row_depth(t, &r->v[i]); k++) {
		struct rasp_sym_frame f;

		assert_int_equal(rasp_row_frame(r, t, &r->v[i], k, &f), 0);
		used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? " < " : "", f.name);
	}
}

/* By stack: A and B read the same and are one row (60 samples); the overload is another.
 * (Rows were per address: A and B were two rows of identical text.) */
static void test_stacks_grouped_as_named(void **state)
{
	struct rasp_tally *t = concat_tally(RASP_GROUP_STACK);
	struct rasp_rows r = build(t, false, NULL, false);
	char s0[512], s1[512];

	(void)state;
	assert_int_equal(r.n, 2);
	stack_text(&r, t, 0, s0, sizeof(s0));
	stack_text(&r, t, 1, s1, sizeof(s1));
	assert_int_equal(r.v[0].est.samples, 60);
	assert_int_equal(r.v[1].est.samples, 30);
	assert_string_equal(s0, "string.Concat(string, string) < Generics.Program.Tables(int) < "
				"Generics.Program.Main(string[])");
	assert_string_equal(s1, "string.Concat(string, string, string) < "
				"Generics.Program.Tables(int) < Generics.Program.Main(string[])");
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

/* By site: the program's own innermost method by default; the innermost, overloads apart,
 * with leaf; the caller when a pattern excludes a method; the runtime's names with raw. */
static void test_sites_by_rule(void **state)
{
	struct rasp_tally *t = concat_tally(RASP_GROUP_SITE);
	struct rasp_rows r = build(t, false, NULL, false);

	(void)state;
	assert_int_equal(r.n, 1);
	assert_string_equal(rasp_row_site(&r, &r.v[0]), "Generics.Program.Tables(int)");
	assert_int_equal(r.v[0].est.samples, 90);
	rasp_rows_free(&r);

	r = build(t, true, NULL, false);
	assert_int_equal(r.n, 2);
	assert_string_equal(rasp_row_site(&r, &r.v[0]), "string.Concat(string, string)");
	assert_string_equal(rasp_row_site(&r, &r.v[1]), "string.Concat(string, string, string)");
	rasp_rows_free(&r);

	r = build(t, false, "Generics.Program.Tables*", false);
	assert_int_equal(r.n, 1);
	assert_string_equal(rasp_row_site(&r, &r.v[0]), "Generics.Program.Main(string[])");
	rasp_rows_free(&r);

	/* A pattern on the runtime's form matches too, and leaf keeps the user's patterns. */
	r = build(t, true, "System.String.*", false);
	assert_int_equal(r.n, 1);
	assert_string_equal(rasp_row_site(&r, &r.v[0]), "Generics.Program.Tables(int)");
	rasp_rows_free(&r);

	r = build(t, false, NULL, true);
	assert_int_equal(r.n, 1);
	assert_string_equal(rasp_row_site(&r, &r.v[0]), "Generics.Program.Tables(int32)");
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

/* A stack of none but framework frames keeps its innermost. */
static void test_site_without_own_code(void **state)
{
	static const uint64_t only[] = {0x20011};
	struct rasp_tally *t = concat_tally(RASP_GROUP_SITE);
	struct rasp_rows r;

	(void)state;
	assert_int_equal(
	    rasp_tally_add_sample_stack(t, "System.String", 0, PID, PID, 64, 1, only, 1), 0);
	r = build(t, false, NULL, false);
	assert_int_equal(r.n, 2);
	assert_string_equal(rasp_row_site(&r, &r.v[1]), "string.Concat(string, string)");
	assert_int_equal(r.v[1].est.samples, 1);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stacks_grouped_as_named),
	    cmocka_unit_test(test_sites_by_rule),
	    cmocka_unit_test(test_site_without_own_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
