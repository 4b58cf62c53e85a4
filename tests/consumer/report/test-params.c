/* Unit tests of consumer/report/params.c: every parameter of rasp_report_params with accepted
 * values, every kind of wrong value and out-of-range values (-EINVAL, a message naming the
 * parameter and what it accepts, the options untouched), the table's bounds at and just past their
 * ends, command-line text (decimal, 0x hex, never octal, K/M/G only where allowed,
 * true/false), group-by strings and arrays, unknown names and truncated messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"
#include "report/estimate.h"
#include "report/params.h"
#include "report/tally.h"

#define TABLE rasp_report_params

static struct rasp_param_value v_str(const char *s)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_STRING, .s = s};
}

static struct rasp_param_value v_int(int64_t i)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_SIGNED, .i = i};
}

static struct rasp_param_value v_uint(uint64_t u)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_UNSIGNED, .u = u};
}

static struct rasp_param_value v_real(double d)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_REAL, .d = d};
}

static struct rasp_param_value v_bool(bool b)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_BOOL, .b = b};
}

static struct rasp_param_value v_strings(const char *const *s, size_t n)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_STRINGS, .strings = s, .nstrings = n};
}

static struct rasp_param_value v_other(void)
{
	return (struct rasp_param_value){.kind = RASP_VALUE_OTHER};
}

static const char *const two_keys[] = {"type", "kind"};

/* One value of every kind; the ones a parameter's type cannot take are wrong kinds. */
static const struct {
	const char *kind; /* as messages name it */
	struct rasp_param_value v;
} every_kind[] = {
    {"string", {.kind = RASP_VALUE_STRING, .s = "json"}},
    {"integer", {.kind = RASP_VALUE_SIGNED, .i = 5}},
    {"integer", {.kind = RASP_VALUE_UNSIGNED, .u = 5}},
    {"real", {.kind = RASP_VALUE_REAL, .d = 0.5}},
    {"boolean", {.kind = RASP_VALUE_BOOL, .b = true}},
    {"array", {.kind = RASP_VALUE_STRINGS, .strings = two_keys, .nstrings = 2}},
    {"other", {.kind = RASP_VALUE_OTHER}},
};

/* Which value kinds each parameter type takes. */
static bool takes(enum rasp_param_type type, int kind)
{
	switch (type) {
	case RASP_PARAM_CHOICE:
	case RASP_PARAM_PATH:
		return kind == RASP_VALUE_STRING;
	case RASP_PARAM_KEYS:
	case RASP_PARAM_LIST:
		return kind == RASP_VALUE_STRING || kind == RASP_VALUE_STRINGS;
	case RASP_PARAM_REAL:
		return kind == RASP_VALUE_SIGNED || kind == RASP_VALUE_UNSIGNED ||
		       kind == RASP_VALUE_REAL;
	case RASP_PARAM_UINT:
		return kind == RASP_VALUE_SIGNED || kind == RASP_VALUE_UNSIGNED;
	case RASP_PARAM_BOOL:
		return kind == RASP_VALUE_BOOL;
	}
	return false;
}

static void describe(const struct rasp_param_value *v, char *buf, size_t len)
{
	switch (v->kind) {
	case RASP_VALUE_STRING:
		snprintf(buf, len, "string \"%s\"", v->s);
		break;
	case RASP_VALUE_SIGNED:
		snprintf(buf, len, "signed %" PRId64, v->i);
		break;
	case RASP_VALUE_UNSIGNED:
		snprintf(buf, len, "unsigned %" PRIu64, v->u);
		break;
	case RASP_VALUE_REAL:
		snprintf(buf, len, "real %.17g", v->d);
		break;
	case RASP_VALUE_BOOL:
		snprintf(buf, len, "boolean %d", v->b);
		break;
	case RASP_VALUE_STRINGS:
		snprintf(buf, len, "array of %zu", v->nstrings);
		break;
	default:
		snprintf(buf, len, "other");
	}
}

/* The options' comparable fields equal (output by content). */
static bool same_options(const struct rasp_report_options *a, const struct rasp_report_options *b)
{
	return strcmp(a->format, b->format) == 0 && a->group_by == b->group_by &&
	       (a->confidence == b->confidence || (isnan(a->confidence) && isnan(b->confidence))) &&
	       a->sampling_mean == b->sampling_mean && a->top == b->top && a->width == b->width &&
	       a->wide == b->wide && strcmp(a->site, b->site) == 0 &&
	       a->site_exclude.n == b->site_exclude.n && a->raw_names == b->raw_names &&
	       a->strict == b->strict &&
	       ((!a->output && !b->output) ||
		(a->output && b->output && strcmp(a->output, b->output) == 0));
}

/* name = v is refused: -EINVAL, the message names the parameter, says what it accepts and
 * contains `also` (when not NULL); the options are untouched. */
static void check_bad(const char *name, struct rasp_param_value v, const char *also)
{
	const struct rasp_param *p = rasp_param_find(TABLE, name);
	struct rasp_report_options opt, before;
	char err[512], want[64], what[96];
	int rc;

	assert_non_null(p);
	rasp_report_options_init(&opt);
	rasp_report_options_init(&before);
	describe(&v, what, sizeof(what));
	memset(err, 'X', sizeof(err));
	rc = rasp_param_set(TABLE, &opt, name, &v, err, sizeof(err));
	snprintf(want, sizeof(want), "name=%s ", name);
	if (rc != -EINVAL || !memchr(err, '\0', sizeof(err)) || !strstr(err, want) ||
	    !strstr(err, "accepted=") || !strstr(err, p->accepted) ||
	    (also && !strstr(err, also)) || !same_options(&opt, &before)) {
		printf("%s = %s: rc %d, message \"%.*s\" (want -EINVAL naming \"%s\", \"%s\" and "
		       "\"%s\", options untouched)\n",
		       name, what, rc, (int)sizeof(err) - 1, err, want, p->accepted,
		       also ? also : "");
		fail();
	}
	rasp_report_options_fini(&opt);
}

static void check_good(const char *name, struct rasp_param_value v, struct rasp_report_options *opt)
{
	char err[512] = "junk", what[96];
	int rc = rasp_param_set(TABLE, opt, name, &v, err, sizeof(err));

	if (rc != 0 || err[0] != '\0') {
		describe(&v, what, sizeof(what));
		printf("%s = %s refused: rc %d, \"%s\"\n", name, what, rc, err);
		fail();
	}
}

/* Every parameter, every value kind: the kinds its type cannot take are refused with the
 * kind named. */
static void test_params_wrong_kinds(void **state)
{
	(void)state;
	char also[64];

	for (const struct rasp_param *p = TABLE; p->name; p++)
		for (size_t k = 0; k < sizeof(every_kind) / sizeof(every_kind[0]); k++) {
			if (takes(p->type, every_kind[k].v.kind))
				continue;
			snprintf(also, sizeof(also), "value-kind=%s", every_kind[k].kind);
			check_bad(p->name, every_kind[k].v, also);
		}
}

static void test_params_format(void **state)
{
	(void)state;
	static const char *const bad[] = {"xml",  "",	      "tex",	  "texts",
					  "TEXT", "text,csv", "text|csv", "json "};
	struct rasp_report_options opt;
	char also[64];

	rasp_report_options_init(&opt);
	assert_string_equal(opt.format, "text");
	check_good("format", v_str("csv"), &opt);
	assert_string_equal(opt.format, "csv");
	check_good("format", v_str("json"), &opt);
	assert_string_equal(opt.format, "json");
	check_good("format", v_str("text"), &opt);
	assert_string_equal(opt.format, "text");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(also, sizeof(also), "value=\"%s\"", bad[i]);
		check_bad("format", v_str(bad[i]), also);
	}
	/* The exact message docs/consumer.md shows. */
	{
		char err[256];
		struct rasp_param_value v = v_str("xml");

		assert_int_equal(rasp_param_set(TABLE, &opt, "format", &v, err, sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, "bad parameter: name=format value=\"xml\" "
					 "accepted=text|csv|json|folded|pprof|html");
	}
	rasp_report_options_fini(&opt);
}

static void test_params_group_by(void **state)
{
	(void)state;
	static const char *const bad[] = {"",		"types",      "type,",	   ",type",
					  "type,,kind", "TYPE",	      "type;kind", "type kind",
					  "pid",	"type,bogus", " , "};
	static const char *const all[] = {"process", "type", "thread", "kind"};
	static const char *const with_bad[] = {"type", "bogus"};
	static const char *const with_empty[] = {"type", ""};
	static const char *const listed[] = {"type,kind", "thread"};
	struct rasp_report_options opt;

	rasp_report_options_init(&opt);
	assert_int_equal(opt.group_by, RASP_GROUP_TYPE);
	check_good("group-by", v_str("kind"), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_KIND);
	check_good("group-by", v_str("type,kind,thread,process"), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_ALL);
	check_good("group-by", v_str(" process , thread "), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_PROCESS | RASP_GROUP_THREAD);
	check_good("group-by", v_str("kind,kind"), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_KIND);
	check_good("group-by", v_strings(all, 4), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_ALL);
	check_good("group-by", v_strings(two_keys, 1), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_TYPE);
	check_good("group-by", v_strings(listed, 2), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_TYPE | RASP_GROUP_KIND | RASP_GROUP_THREAD);
	check_good("group-by", v_str("site"), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_SITE);
	check_good("group-by", v_str("type,stack"), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_TYPE | RASP_GROUP_STACK);
	/* by is group-by's short name (rasp report --by site). */
	check_good("by", v_str("process,site"), &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_PROCESS | RASP_GROUP_SITE);
	check_bad("by", v_str("sites"), "sites");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_bad("group-by", v_str(bad[i]), bad[i]);
	check_bad("group-by", v_strings(NULL, 0), "value=\"(array)\"");
	check_bad("group-by", v_strings(with_bad, 2), "value=\"(array)\"");
	check_bad("group-by", v_strings(with_empty, 2), "value=\"(array)\"");
	rasp_report_options_fini(&opt);
}

static void test_params_confidence(void **state)
{
	(void)state;
	const struct rasp_param_value bad[] = {
	    v_real(0),
	    v_real(-0.5),
	    v_real(1),
	    v_real(1.5),
	    v_real(0.9999999999999999),
	    v_real(nextafter(RASP_EST_MAX_CONFIDENCE, 1)),
	    v_real(NAN),
	    v_real(INFINITY),
	    v_real(-INFINITY),
	    v_int(0),
	    v_int(1),
	    v_int(-1),
	    v_uint(0),
	    v_uint(1),
	};
	struct rasp_report_options opt;

	rasp_report_options_init(&opt);
	assert_true(opt.confidence == 0.95);
	check_good("confidence", v_real(0.5), &opt);
	assert_true(opt.confidence == 0.5);
	check_good("confidence", v_real(RASP_EST_MAX_CONFIDENCE), &opt);
	assert_true(opt.confidence == RASP_EST_MAX_CONFIDENCE);
	check_good("confidence", v_real(1e-300), &opt); /* (0, ...: anything above 0 */
	assert_true(opt.confidence == 1e-300);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_bad("confidence", bad[i], "value=");
	/* What the refusal says: the number as given. */
	check_bad("confidence", v_real(0.9999999999999999), "value=0.99999999999999989");
	check_bad("confidence", v_int(-1), "value=-1 ");
	rasp_report_options_fini(&opt);
}

static void test_params_sampling_mean(void **state)
{
	(void)state;
	const double max = (double)RASP_MAX_SAMPLING_MEAN;
	const struct rasp_param_value bad[] = {
	    v_real(0.999),	v_real(0),	  v_real(-1),
	    v_real(NAN),	v_real(INFINITY), v_real(max + 1),
	    v_real(max + 0.5),	v_uint(0),	  v_uint(RASP_MAX_SAMPLING_MEAN + 1),
	    v_uint(UINT64_MAX), v_int(0),	  v_int(-4096),
	    v_int(INT64_MIN),	v_int(INT64_MAX),
	};
	struct rasp_report_options opt;

	assert_true(max == 281474976710656.0);
	rasp_report_options_init(&opt);
	assert_true(opt.sampling_mean == RASP_DEFAULT_SAMPLING_MEAN);
	/* .NET's mean, and its text in help is the number alone (no C suffix). */
	assert_true(opt.sampling_mean == 102400);
	assert_string_equal(rasp_param_find(TABLE, "sampling-mean")->def, "102400");
	check_good("sampling-mean", v_int(1), &opt);
	assert_true(opt.sampling_mean == 1);
	check_good("sampling-mean", v_uint(RASP_MAX_SAMPLING_MEAN), &opt);
	assert_true(opt.sampling_mean == max);
	check_good("sampling-mean", v_real(1.5), &opt); /* a mean need not be whole */
	assert_true(opt.sampling_mean == 1.5);
	check_good("sampling-mean", v_uint(4096), &opt);
	assert_true(opt.sampling_mean == 4096);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_bad("sampling-mean", bad[i], "value=");
	check_bad("sampling-mean", v_uint(RASP_MAX_SAMPLING_MEAN + 1), "value=281474976710657 ");
	rasp_report_options_fini(&opt);
}

static void test_params_top(void **state)
{
	(void)state;
	const struct rasp_param_value bad[] = {
	    v_int(-1), v_int(INT64_MIN), v_uint(UINT64_MAX), v_uint(2000000000000000000u),
	    v_real(5), v_real(0),
	};
	struct rasp_report_options opt;

	rasp_report_options_init(&opt);
	assert_true(opt.top == RASP_PARAM_AUTO); /* those that fit a terminal */
	check_good("top", v_int(5), &opt);
	assert_int_equal(opt.top, 5);
	check_good("top", v_uint(0), &opt); /* 0: all rows */
	assert_int_equal(opt.top, 0);
	check_good("top", v_int(0), &opt);
	assert_int_equal(opt.top, 0);
	check_good("top", v_uint(1000000000000000000u), &opt);
	assert_int_equal(opt.top, 1000000000000000000u);
	check_good("top", v_uint(123456789012345), &opt); /* stored exactly, not via a double */
	assert_int_equal(opt.top, 123456789012345);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_bad("top", bad[i], NULL);
	check_bad("top", v_int(-1), "value=-1 ");
	check_bad("top", v_real(5), "value-kind=real");
	check_bad("top", v_str("all"), "value-kind=string");
	check_good("top", v_str("auto"), &opt);
	assert_true(opt.top == RASP_PARAM_AUTO);
	rasp_report_options_fini(&opt);
}

static void test_params_output(void **state)
{
	(void)state;
	struct rasp_report_options opt;
	char path[] = "/tmp/report.txt";

	rasp_report_options_init(&opt);
	assert_null(opt.output);
	check_good("output", v_str(path), &opt);
	assert_non_null(opt.output);
	assert_ptr_not_equal(opt.output, path); /* a copy the options own */
	path[1] = 'X';
	assert_string_equal(opt.output, "/tmp/report.txt");
	check_good("output", v_str("r2.csv"), &opt); /* replaces (the old copy freed: ASan) */
	assert_string_equal(opt.output, "r2.csv");
	check_bad("output", v_str(""), "value-kind=empty-string");
	rasp_report_options_fini(&opt);
	assert_null(opt.output);
	rasp_report_options_fini(&opt);
}

static void test_params_strict(void **state)
{
	(void)state;
	struct rasp_report_options opt;

	rasp_report_options_init(&opt);
	assert_true(opt.strict);
	check_good("strict", v_bool(false), &opt);
	assert_false(opt.strict);
	check_good("strict", v_bool(true), &opt);
	assert_true(opt.strict);
	check_bad("strict", v_str("true"), "value-kind=string");
	check_bad("strict", v_int(1), "value-kind=integer");
	check_bad("strict", v_other(), "value-kind=other");
	rasp_report_options_fini(&opt);
}

/* --site, --site-exclude (each given added, an array adds all), --width's word, --wide,
 * --raw-names. */
static void test_params_site_width(void **state)
{
	(void)state;
	static const char *const pats[] = {"MyCo.Logging.*", "libfoo.so*"};
	static const char *const with_empty[] = {"ok", ""};
	struct rasp_report_options opt;

	rasp_report_options_init(&opt);
	assert_string_equal(opt.site, "user");
	assert_int_equal(opt.site_exclude.n, 0);
	assert_true(opt.width == RASP_PARAM_AUTO);
	assert_false(opt.wide);
	assert_false(opt.raw_names);
	check_good("site", v_str("leaf"), &opt);
	assert_string_equal(opt.site, "leaf");
	check_bad("site", v_str("inner"), "value=");
	check_good("site-exclude", v_str("Foo.*"), &opt);
	check_good(
	    "site-exclude",
	    (struct rasp_param_value){.kind = RASP_VALUE_STRINGS, .strings = pats, .nstrings = 2},
	    &opt);
	assert_int_equal(opt.site_exclude.n, 3);
	assert_string_equal(opt.site_exclude.v[0], "Foo.*");
	assert_string_equal(opt.site_exclude.v[2], "libfoo.so*");
	check_bad("site-exclude", v_str(""), "value-kind=empty-string");
	check_bad("site-exclude",
		  (struct rasp_param_value){
		      .kind = RASP_VALUE_STRINGS, .strings = with_empty, .nstrings = 2},
		  "value-kind=empty-string");
	check_good("width", v_uint(80), &opt);
	assert_int_equal(opt.width, 80);
	check_good("width", v_str("auto"), &opt);
	assert_true(opt.width == RASP_PARAM_AUTO);
	assert_int_equal(rasp_param_set_text(TABLE, &opt, "width", "120", NULL, 0), 0);
	assert_int_equal(opt.width, 120);
	check_bad("width", v_str("wide"), "value-kind=string");
	check_good("wide", v_bool(true), &opt);
	check_good("raw-names", v_bool(true), &opt);
	assert_true(opt.wide && opt.raw_names);
	rasp_report_options_fini(&opt);
	assert_int_equal(opt.site_exclude.n, 0);
}

/* For every REAL and UINT parameter, the table's own bounds: accepted at each end (min only
 * when closed), refused one step past. */
static void test_params_table_bounds(void **state)
{
	(void)state;
	int checked = 0;

	for (const struct rasp_param *p = TABLE; p->name; p++) {
		struct rasp_report_options opt;

		if (p->type != RASP_PARAM_REAL && p->type != RASP_PARAM_UINT)
			continue;
		rasp_report_options_init(&opt);
		if (p->type == RASP_PARAM_REAL) {
			check_good(p->name, v_real(p->max), &opt);
			check_bad(p->name, v_real(nextafter(p->max, INFINITY)), NULL);
			if (p->min_open) {
				check_bad(p->name, v_real(p->min), NULL);
				check_good(p->name, v_real(nextafter(p->min, INFINITY)), &opt);
			} else {
				check_good(p->name, v_real(p->min), &opt);
				check_bad(p->name, v_real(nextafter(p->min, -INFINITY)), NULL);
			}
		} else {
			check_good(p->name, v_uint((uint64_t)p->max), &opt);
			check_good(p->name, v_uint((uint64_t)p->min), &opt);
			check_bad(p->name, v_uint((uint64_t)p->max * 2), NULL);
			if (p->min > 0)
				check_bad(p->name, v_uint((uint64_t)p->min - 1), NULL);
		}
		rasp_report_options_fini(&opt);
		checked++;
	}
	assert_int_equal(checked, 4);
}

/* The table itself: every entry complete, kebab-case names, defaults that parse to what
 * rasp_report_options_init sets. */
static void test_params_table(void **state)
{
	(void)state;
	static const char *const names[] = {
	    "format", "group-by", "by",		  "confidence", "sampling-mean", "top",	  "width",
	    "wide",   "site",	  "site-exclude", "raw-names",	"output",	 "strict"};
	struct rasp_report_options init, parsed;
	char err[256];
	size_t n = 0;

	rasp_report_options_init(&init);
	memset(&parsed, 0, sizeof(parsed));
	for (const struct rasp_param *p = TABLE; p->name; p++, n++) {
		assert_true(n < 13);
		assert_string_equal(p->name, names[n]);
		assert_ptr_equal(rasp_param_find(TABLE, p->name), p);
		assert_non_null(p->accepted);
		assert_non_null(p->def);
		assert_non_null(p->help);
		/* Its field lies inside the options struct. */
		assert_true(p->offset + p->size <= sizeof(struct rasp_report_options));
		assert_true(p->size > 0);
		for (const char *c = p->name; *c; c++)
			assert_true(islower((unsigned char)*c) || *c == '-');
		if (strcmp(p->name, "output") == 0 || p->type == RASP_PARAM_LIST)
			continue; /* "standard output", "none": no value */
		if (rasp_param_set_text(TABLE, &parsed, p->name, p->def, err, sizeof(err))) {
			printf("default of %s, \"%s\", refused: %s\n", p->name, p->def, err);
			fail();
		}
	}
	assert_int_equal(n, 13);
	assert_true(same_options(&parsed, &init));
	assert_null(rasp_param_find(TABLE, "colour"));
	assert_null(rasp_param_find(TABLE, "Format"));
	assert_null(rasp_param_find(TABLE, ""));
	rasp_report_options_fini(&parsed);
	rasp_report_options_fini(&init);
}

static void test_params_unknown(void **state)
{
	(void)state;
	struct rasp_report_options opt;
	struct rasp_param_value v = v_str("red");
	char err[256];

	rasp_report_options_init(&opt);
	assert_int_equal(rasp_param_set(TABLE, &opt, "colour", &v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown parameter: name=colour "
				 "accepted=format|group-by|by|confidence|sampling-mean|top|width|"
				 "wide|site|site-exclude|raw-names|output|strict");
	assert_int_equal(rasp_param_set_text(TABLE, &opt, "Top", "5", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown parameter: name=Top "
				 "accepted=format|group-by|by|confidence|sampling-mean|top|width|"
				 "wide|site|site-exclude|raw-names|output|strict");
	assert_true(opt.top == RASP_PARAM_AUTO);
	rasp_report_options_fini(&opt);
}

/* err is always terminated, cut to errlen; NULL with errlen 0 is allowed. */
static void test_params_message_buffer(void **state)
{
	(void)state;
	struct rasp_report_options opt;
	struct rasp_param_value v = v_str("xml");
	char err[8], names[10];

	rasp_report_options_init(&opt);
	memset(err, 'X', sizeof(err));
	assert_int_equal(rasp_param_set(TABLE, &opt, "format", &v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad par");
	memset(err, 'X', sizeof(err));
	assert_int_equal(rasp_param_set(TABLE, &opt, "format", &v, err, 1), -EINVAL);
	assert_int_equal(err[0], '\0');
	assert_int_equal(err[1], 'X');
	assert_int_equal(rasp_param_set(TABLE, &opt, "format", &v, NULL, 0), -EINVAL);
	assert_int_equal(rasp_param_set(TABLE, &opt, "nope", &v, NULL, 0), -EINVAL);
	assert_int_equal(rasp_param_set_text(TABLE, &opt, "top", "x", NULL, 0), -EINVAL);
	v = v_str("csv");
	assert_int_equal(rasp_param_set(TABLE, &opt, "format", &v, NULL, 0), 0);
	assert_string_equal(opt.format, "csv");

	rasp_param_names(TABLE, names, sizeof(names));
	assert_string_equal(names, "format|gr");
	memset(names, 'X', sizeof(names));
	rasp_param_names(TABLE, names, 0);
	assert_int_equal(names[0], 'X');
	{
		char all[160];

		rasp_param_names(TABLE, all, sizeof(all));
		assert_string_equal(all, "format|group-by|by|confidence|sampling-mean|top|width|"
					 "wide|site|site-exclude|raw-names|output|strict");
	}
	rasp_report_options_fini(&opt);
}

/* name = text from the command line: 0 and the stored value, or -EINVAL with a message. */
static void check_text(const char *name, const char *text, int want_rc,
		       struct rasp_report_options *opt)
{
	char err[256] = "";
	int rc = rasp_param_set_text(TABLE, opt, name, text, err, sizeof(err));
	char want[64];

	snprintf(want, sizeof(want), "name=%s ", name);
	if (rc != want_rc || (rc && (!strstr(err, want) || !strstr(err, "accepted=")))) {
		printf("--%s %s: rc %d \"%s\", want %d\n", name, text, rc, err, want_rc);
		fail();
	}
}

static void test_params_text_numbers(void **state)
{
	(void)state;
	static const char *const bad_uint[] = {
	    "",	     "-1",  "+1",   " 1",    "1 ",
	    "1.5",   "1e3", "0x",   "0xg",   "1K",
	    "1k",    "x",   "five", "1_000", "18446744073709551616",
	    "0b101",
	};
	static const char *const bad_mean[] = {
	    "",	       "-4096",	       "+4096", ".5",	 "4KB",	  "4 K",   "K",
	    "4T",      "1.5K",	       "inf",	"nan",	 "1e400", "0",	   "0.5",
	    "262145G", "17179869184G", " 4096", "4096 ", "0x",	  "4,096",
	};
	struct rasp_report_options opt;
	char err[256];

	rasp_report_options_init(&opt);
	/* top: an integer, decimal or hex, never octal, no suffix. */
	check_text("top", "10", 0, &opt);
	assert_int_equal(opt.top, 10);
	check_text("top", "0x10", 0, &opt);
	assert_int_equal(opt.top, 16);
	check_text("top", "0X1f", 0, &opt);
	assert_int_equal(opt.top, 31);
	check_text("top", "010", 0, &opt);
	assert_int_equal(opt.top, 10);
	check_text("top", "08", 0, &opt);
	assert_int_equal(opt.top, 8);
	check_text("top", "0", 0, &opt);
	assert_int_equal(opt.top, 0);
	for (size_t i = 0; i < sizeof(bad_uint) / sizeof(bad_uint[0]); i++)
		check_text("top", bad_uint[i], -EINVAL, &opt);
	assert_int_equal(opt.top, 0);
	assert_int_equal(rasp_param_set_text(TABLE, &opt, "top", "1K", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad parameter: name=top value=\"1K\" accepted=integer >= 0 "
				 "(0 = all rows) or auto");

	/* sampling-mean: K, M, G (powers of 1024) allowed; reals too. */
	check_text("sampling-mean", "4096", 0, &opt);
	assert_true(opt.sampling_mean == 4096);
	check_text("sampling-mean", "4K", 0, &opt);
	assert_true(opt.sampling_mean == 4096);
	check_text("sampling-mean", "100K", 0, &opt);
	assert_true(opt.sampling_mean == 102400);
	check_text("sampling-mean", "1M", 0, &opt);
	assert_true(opt.sampling_mean == 1048576);
	check_text("sampling-mean", "3G", 0, &opt);
	assert_true(opt.sampling_mean == 3221225472.0);
	check_text("sampling-mean", "262144G", 0, &opt); /* 2^48 */
	assert_true(opt.sampling_mean == 281474976710656.0);
	check_text("sampling-mean", "0x1000", 0, &opt);
	assert_true(opt.sampling_mean == 4096);
	check_text("sampling-mean", "0x10K", 0, &opt);
	assert_true(opt.sampling_mean == 16384);
	check_text("sampling-mean", "010", 0, &opt);
	assert_true(opt.sampling_mean == 10);
	check_text("sampling-mean", "1", 0, &opt);
	assert_true(opt.sampling_mean == 1);
	check_text("sampling-mean", "1.5", 0, &opt);
	assert_true(opt.sampling_mean == 1.5);
	check_text("sampling-mean", "1e3", 0, &opt);
	assert_true(opt.sampling_mean == 1000);
	for (size_t i = 0; i < sizeof(bad_mean) / sizeof(bad_mean[0]); i++)
		check_text("sampling-mean", bad_mean[i], -EINVAL, &opt);
	assert_true(opt.sampling_mean == 1000);
	assert_int_equal(rasp_param_set_text(TABLE, &opt, "sampling-mean", "4T", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "bad parameter: name=sampling-mean value=\"4T\" accepted=number "
				 "of bytes in [1, 2^48] (K, M, G suffixes allowed)");
	assert_int_equal(
	    rasp_param_set_text(TABLE, &opt, "sampling-mean", "262145G", err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "bad parameter: name=sampling-mean value=281476050452480 "
				 "accepted=number of bytes in [1, 2^48]");

	/* confidence: a real; no suffixes; the same bounds as typed values. */
	check_text("confidence", "0.99", 0, &opt);
	assert_true(opt.confidence == 0.99);
	check_text("confidence", "0.999999999", 0, &opt);
	assert_true(opt.confidence == RASP_EST_MAX_CONFIDENCE);
	check_text("confidence", "5e-1", 0, &opt);
	assert_true(opt.confidence == 0.5);
	check_text("confidence", "0.9999999999999999", -EINVAL, &opt);
	check_text("confidence", "0.9999999991", -EINVAL, &opt);
	check_text("confidence", "1", -EINVAL, &opt);
	check_text("confidence", "0x1", -EINVAL, &opt);
	check_text("confidence", "0", -EINVAL, &opt);
	check_text("confidence", "-0.5", -EINVAL, &opt);
	check_text("confidence", ".95", -EINVAL, &opt);
	check_text("confidence", "95%", -EINVAL, &opt);
	check_text("confidence", "1K", -EINVAL, &opt);
	assert_true(opt.confidence == 0.5);
	assert_int_equal(rasp_param_set_text(TABLE, &opt, "confidence", "1K", err, sizeof(err)),
			 -EINVAL);
	assert_null(strstr(err, "suffixes")); /* not offered where not allowed */
	rasp_report_options_fini(&opt);
}

static void test_params_text_words(void **state)
{
	(void)state;
	static const char *const bad_bool[] = {"TRUE", "True", "1", "0",     "yes",
					       "no",   "",     "t", "truee", " true"};
	struct rasp_report_options opt;

	rasp_report_options_init(&opt);
	check_text("strict", "false", 0, &opt);
	assert_false(opt.strict);
	check_text("strict", "true", 0, &opt);
	assert_true(opt.strict);
	check_text("strict", "false", 0, &opt);
	for (size_t i = 0; i < sizeof(bad_bool) / sizeof(bad_bool[0]); i++)
		check_text("strict", bad_bool[i], -EINVAL, &opt);
	assert_false(opt.strict);
	check_text("format", "json", 0, &opt);
	assert_string_equal(opt.format, "json");
	check_text("format", "yaml", -EINVAL, &opt);
	check_text("group-by", "type,thread", 0, &opt);
	assert_int_equal(opt.group_by, RASP_GROUP_TYPE | RASP_GROUP_THREAD);
	check_text("group-by", "type,", -EINVAL, &opt);
	check_text("output", "out.json", 0, &opt);
	assert_string_equal(opt.output, "out.json");
	check_text("output", "", -EINVAL, &opt);
	assert_string_equal(opt.output, "out.json");
	rasp_report_options_fini(&opt);
}

static void test_params_group_by_parse(void **state)
{
	(void)state;
	unsigned m = 77;

	assert_int_equal(rasp_group_by_parse("type,kind,thread,process", &m), 0);
	assert_int_equal(m, RASP_GROUP_ALL);
	assert_int_equal(rasp_group_by_parse("thread", &m), 0);
	assert_int_equal(m, RASP_GROUP_THREAD);
	assert_int_equal(rasp_group_by_parse("  process  ", &m), 0);
	assert_int_equal(m, RASP_GROUP_PROCESS);
	m = 77;
	assert_int_equal(rasp_group_by_parse("type,", &m), -EINVAL);
	assert_int_equal(rasp_group_by_parse("typ", &m), -EINVAL);
	assert_int_equal(rasp_group_by_parse("typex", &m), -EINVAL);
	assert_int_equal(rasp_group_by_parse("", &m), -EINVAL);
	assert_int_equal(m, 77); /* untouched on failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_params_wrong_kinds),
	    cmocka_unit_test(test_params_format),
	    cmocka_unit_test(test_params_group_by),
	    cmocka_unit_test(test_params_confidence),
	    cmocka_unit_test(test_params_sampling_mean),
	    cmocka_unit_test(test_params_top),
	    cmocka_unit_test(test_params_output),
	    cmocka_unit_test(test_params_strict),
	    cmocka_unit_test(test_params_site_width),
	    cmocka_unit_test(test_params_table_bounds),
	    cmocka_unit_test(test_params_table),
	    cmocka_unit_test(test_params_unknown),
	    cmocka_unit_test(test_params_message_buffer),
	    cmocka_unit_test(test_params_text_numbers),
	    cmocka_unit_test(test_params_text_words),
	    cmocka_unit_test(test_params_group_by_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
