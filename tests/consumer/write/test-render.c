/* Unit tests of consumer/write/render.c: the writer registry (each format by name, nothing
 * else, in the order of the format parameter; each writer's traits),
 * rasp_report_render's refusals (an unknown format, a bad confidence: -EINVAL with nothing
 * written), and a write that fails (/dev/full: -EIO). The writers' output is tested by the
 * golden tests of test-write-*.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "write/writer.h"

static void test_render_writers(void **state)
{
	(void)state;

	assert_ptr_equal(rasp_writer_find("text"), &rasp_writer_text);
	assert_ptr_equal(rasp_writer_find("csv"), &rasp_writer_csv);
	assert_ptr_equal(rasp_writer_find("json"), &rasp_writer_json);
	assert_null(rasp_writer_find("xml"));
	assert_null(rasp_writer_find(""));
	assert_null(rasp_writer_find("JSON"));
	/* The formats the parameter accepts are the registry's writers, in its order. */
	{
		const struct rasp_param *p = rasp_param_find(rasp_report_params, "format");
		char words[64], *save = NULL;
		size_t n = 0;

		assert_non_null(p);
		snprintf(words, sizeof(words), "%s", p->accepted);
		for (char *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
			assert_ptr_equal(rasp_writer_find(w), rasp_writers[n++]);
		assert_null(rasp_writers[n]);
		assert_int_equal(n, 6);
	}
}

static bool all(const struct rasp_writer *w)
{
	(void)w;
	return true;
}
static bool diff(const struct rasp_writer *w)
{
	return w->write_diff != NULL;
}
static bool binary(const struct rasp_writer *w)
{
	return w->binary;
}
static bool stacks(const struct rasp_writer *w)
{
	return w->stacks;
}
static bool top(const struct rasp_writer *w)
{
	return w->top;
}
static bool integers(const struct rasp_writer *w)
{
	return w->integers;
}

/* Each format's traits, as its writer declares them, and what asks them. */
static void test_render_traits(void **state)
{
	char buf[64];
	struct rasp_report_options opt;

	(void)state;
	assert_string_equal(rasp_writer_names(all, buf, sizeof(buf)), RASP_REPORT_FORMATS);
	assert_string_equal(rasp_writer_names(diff, buf, sizeof(buf)), "text|json");
	assert_string_equal(rasp_writer_names(binary, buf, sizeof(buf)), "pprof");
	assert_string_equal(rasp_writer_names(stacks, buf, sizeof(buf)), "folded|pprof|html");
	assert_string_equal(rasp_writer_names(top, buf, sizeof(buf)), "text");
	assert_string_equal(rasp_writer_names(integers, buf, sizeof(buf)), "pprof");
	/* A buffer too small is cut, never overrun. */
	assert_string_equal(rasp_writer_names(all, buf, 9), "text|csv");
	for (const struct rasp_writer *const *w = rasp_writers; *w; w++)
		assert_true((*w)->suffix && (*w)->suffix[0] == '.');
	/* The formats of stacks group by type and stack, whatever the options say. */
	rasp_report_options_init(&opt);
	opt.group_by = RASP_GROUP_KIND;
	for (const struct rasp_writer *const *w = rasp_writers; *w; w++) {
		snprintf(opt.format, sizeof(opt.format), "%s", (*w)->name);
		assert_int_equal(rasp_report_keys(&opt),
				 (*w)->stacks ? RASP_GROUP_KIND | RASP_GROUP_TYPE | RASP_GROUP_STACK
					      : RASP_GROUP_KIND);
	}
	rasp_report_options_fini(&opt);
}

static void test_render_refusals(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_two_procs(RASP_GROUP_TYPE);
	struct rasp_report_options opt;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "xml");
	assert_int_equal(rasp_report_render(t, &opt, "--sampling-mean", f), -EINVAL);
	snprintf(opt.format, sizeof(opt.format), "json");
	opt.confidence = 1.0;
	assert_int_equal(rasp_report_render(t, &opt, "--sampling-mean", f), -EINVAL);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(len, 0);
	free(out);
	rasp_report_options_fini(&opt);
	rasp_tally_destroy(t);
}

/* Every format, written where nothing fits: -EIO. */
static void test_render_write_fails(void **state)
{
	(void)state;
	static const char *const formats[] = {"text", "csv", "json"};
	struct rasp_report_options opt;

	for (size_t i = 0; i < 3; i++) {
		struct rasp_tally *t = golden_two_procs(RASP_GROUP_TYPE);
		FILE *f = fopen("/dev/full", "w");

		assert_non_null(f);
		rasp_report_options_init(&opt);
		snprintf(opt.format, sizeof(opt.format), "%s", formats[i]);
		if (rasp_report_render(t, &opt, "--sampling-mean", f) != -EIO) {
			printf("%s on /dev/full: not -EIO\n", formats[i]);
			fail();
		}
		fclose(f);
		rasp_report_options_fini(&opt);
		rasp_tally_destroy(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_render_writers),
	    cmocka_unit_test(test_render_traits),
	    cmocka_unit_test(test_render_refusals),
	    cmocka_unit_test(test_render_write_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
