/* Rasp_Runtime:SampledObjectsFreed in a CTF trace recorded under a real session from a
 * test-only provider (frees/frees.c): a batch that frees Batch.A 100 ms after the event
 * that freed it and Batch.C's sample came between. rasp report --inuse applies the free at its
 * own time (at the end only Batch.C is live), rasp convert writes one SampledObjectFreed per
 * free at its own time (rasp report --inuse --at 0.125 on the file: Batch.A is freed by then,
 * Batch.B live, Batch.C not yet allocated), and an Age that puts a free before the clock's
 * origin is refused naming the field and the value; a free sent after events more than 1 s
 * later were written is written late, and rasp convert says so. (A .nettrace names types as C# does
 * unless
 * --raw-names: Batch.A would be A.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lttng-session.h"
#include "plugin-cli.h"

#define OUTLEN 65536

static char out[OUTLEN];

/* Records frees.c (arg: NULL or "bad-age") in s; its pid. */
static long record(struct rasp_test_session *s, const char *arg)
{
	const char *events[] = {"DotNETRuntime:AllocationSampled",
				"Rasp_Runtime:SampledObjectsFreed", NULL};
	char prog[PATH_MAX];
	const char *argv[] = {prog, arg, NULL};
	const char *env[] = {"LTTNG_UST_REGISTER_TIMEOUT=-1", NULL};
	const char *p;
	int rc;

	snprintf(prog, sizeof(prog), "%s", rasp_test_build_path("bin/rasp-test-frees"));
	assert_int_equal(rasp_test_session_start(s, events), 0);
	rc = rasp_test_run(out, sizeof(out), argv, env);
	assert_int_equal(rasp_test_session_stop(s), 0);
	assert_int_equal(rc, 0);
	p = strstr(out, "pid ");
	assert_non_null(p);
	return strtol(p + 4, NULL, 10);
}

/* `rasp ARGS` (NULL-terminated); its exit status, output in out. */
static int rasp(const char *const *args)
{
	char bin[PATH_MAX];
	const char *argv[16] = {bin};
	size_t n = 1;

	snprintf(bin, sizeof(bin), "%s", rasp_test_build_path("bin/rasp"));
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return rasp_test_run(out, sizeof(out), argv, NULL);
}

/* The report's in-use objects of type `type` (0 when it has no row). */
static double inuse_objects(const char *path, const char *type)
{
	json_object *j = json_object_from_file(path), *rows, *v;
	double got = 0.0;

	assert_non_null(j);
	assert_true(json_object_object_get_ex(j, "rows", &rows));
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *row = json_object_array_get_idx(rows, i), *t;

		if (json_object_object_get_ex(row, "type", &t) &&
		    strcmp(json_object_get_string(t), type) == 0 &&
		    json_object_object_get_ex(row, "inuse_objects", &v))
			got = json_object_get_double(v);
	}
	json_object_put(j);
	return got;
}

static void test_plugin_frees_batch(void **state)
{
	(void)state;
	struct rasp_test_session s;
	char json[PATH_MAX + 16], nettrace[PATH_MAX + 16], pid[32];
	long p = record(&s, NULL);

	snprintf(json, sizeof(json), "%s.json", s.dir);
	snprintf(nettrace, sizeof(nettrace), "%s.nettrace", s.dir);
	snprintf(pid, sizeof(pid), "%ld", p);

	/* At the end: A and B freed (by the batch), C live. */
	{
		const char *args[] = {"report", "--inuse", "--format", "json",
				      "-o",	json,	   s.dir,      NULL};

		if (rasp(args) != 0)
			fail_msg("rasp report: %s", out);
		assert_true(inuse_objects(json, "Batch.C") > 0.0);
		assert_true(inuse_objects(json, "Batch.A") == 0.0);
		assert_true(inuse_objects(json, "Batch.B") == 0.0);
	}
	/* Converted: A's free at its own time, before C's sample and the moment. */
	{
		const char *conv[] = {"convert", "--pid", pid, "-o", nettrace, s.dir, NULL};
		const char *at[] = {"report", "--raw-names", "--inuse", "--at",
				    "0.125",  "--format",    "json",	"-o",
				    json,     nettrace,	     NULL};

		if (rasp(conv) != 0)
			fail_msg("rasp convert: %s", out);
		assert_null(strstr(out, "written late"));
		if (rasp(at) != 0)
			fail_msg("rasp report: %s", out);
		assert_true(inuse_objects(json, "Batch.A") == 0.0);
		assert_true(inuse_objects(json, "Batch.B") > 0.0);
		assert_true(inuse_objects(json, "Batch.C") == 0.0);
	}
	remove(json);
	remove(nettrace);
	rasp_test_session_destroy(&s, 0);
}

/* A free sent 1.5 s after it, once later events were written: rasp convert writes it at the
 * last time written and says so. */
static void test_plugin_frees_idle(void **state)
{
	(void)state;
	struct rasp_test_session s;
	char nettrace[PATH_MAX + 16], pid[32];
	long p = record(&s, "idle");
	const char *conv[] = {"convert", "--pid", pid, "-o", nettrace, s.dir, NULL};

	snprintf(nettrace, sizeof(nettrace), "%s.nettrace", s.dir);
	snprintf(pid, sizeof(pid), "%ld", p);
	if (rasp(conv) != 0)
		fail_msg("rasp convert: %s", out);
	if (!strstr(out, "warning: 1 of 1 frees"))
		fail_msg("rasp convert said:\n%s", out);
	assert_non_null(strstr(out, "written at the time written last"));
	remove(nettrace);
	rasp_test_session_destroy(&s, 0);
}

/* An Age past int64: refused, the field and the value named; skipped with strict=false. */
static void test_plugin_frees_bad_age(void **state)
{
	(void)state;
	struct rasp_test_session s;
	const char *pre[] = {s.dir, NULL};
	int rc;

	record(&s, "bad-age");
	rc = plugin_run(out, sizeof(out), pre, "", 60);
	if (rc == 0 || !strstr(out, "field=Ages"))
		fprintf(stderr, "babeltrace2 exited %d:\n%s\n", rc, out);
	assert_int_not_equal(rc, 0);
	assert_non_null(strstr(out, "event=Rasp_Runtime:SampledObjectsFreed"));
	assert_non_null(strstr(out, "field=Ages"));
	assert_non_null(strstr(out, "Ages[0]=18446744073709551615"));
	rc = plugin_run(out, sizeof(out), pre, "strict=false,format=\"json\"", 60);
	assert_int_equal(rc, 0);
	rasp_test_session_destroy(&s, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plugin_frees_batch),
	    cmocka_unit_test(test_plugin_frees_idle),
	    cmocka_unit_test(test_plugin_frees_bad_age),
	};

	return cmocka_run_group_tests_name("plugin-frees", tests, NULL, NULL);
}
