/* sink.rasp.report on malformed DotNETRuntime:AllocationSampled events, recorded at test
 * time under a real session from the test-only providers in malformed/ (a missing field, a
 * string for an integer, an offset past the object): the error names the event, the field
 * and the stream; strict=false counts and skips the events instead. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lttng-session.h"
#include "plugin-cli.h"

#define OUTLEN 65536

static void squeeze(char *s)
{
	char *d = s, *start = s;

	for (; *s; s++) {
		bool space = *s == ' ' || *s == '\n' || *s == '\t';

		if (space && d > start && d[-1] == ' ')
			continue;
		*d++ = space ? ' ' : *s;
	}
	*d = '\0';
}

static void check_malformed(const char *program, const char *field, const char *reason)
{
	static char out[OUTLEN];
	struct rasp_test_session s;
	const char *events[] = {"DotNETRuntime:*", NULL};
	const char *argv[] = {rasp_test_build_path(program), NULL};
	const char *env[] = {"LTTNG_UST_REGISTER_TIMEOUT=-1", NULL};
	char prog[PATH_MAX], stream[PATH_MAX + 16], expect[128];
	const char *pre[] = {s.dir, NULL};
	int rc;

	snprintf(prog, sizeof(prog), "%s", argv[0]);
	argv[0] = prog;
	assert_int_equal(rasp_test_session_start(&s, events), 0);
	rc = rasp_test_run(out, sizeof(out), argv, env);
	assert_int_equal(rasp_test_session_stop(&s), 0);
	assert_int_equal(rc, 0);

	/* strict (the default): an error naming event, field and stream. */
	rc = plugin_run(out, sizeof(out), pre, "", 60);
	squeeze(out);
	if (rc == 0 || !strstr(out, reason))
		fprintf(stderr, "babeltrace2 exited %d:\n%s\n", rc, out);
	assert_int_not_equal(rc, 0);
	snprintf(expect, sizeof(expect), "event=DotNETRuntime:AllocationSampled field=%s", field);
	assert_non_null(strstr(out, expect));
	assert_non_null(strstr(out, reason));
	/* ctf.fs names a stream after its file, inside the session's output directory. */
	snprintf(stream, sizeof(stream), "stream=\"%s/", s.dir);
	assert_non_null(strstr(out, stream));
	assert_non_null(strstr(out, "strict=false"));

	/* strict=false: the 3 events are counted and skipped, the report succeeds. */
	rc = plugin_run(out, sizeof(out), pre, "strict=false,format=\"json\"", 60);
	if (rc != 0)
		fprintf(stderr, "babeltrace2 exited %d:\n%s\n", rc, out);
	assert_int_equal(rc, 0);
	/* Only those 3: a well-formed AllocationSampled of another program recorded meanwhile
	 * (the session records the whole user) is a different event class. */
	assert_non_null(strstr(out, "\"skipped_events\": 3,"));
	rasp_test_session_destroy(&s, 0);
}

static void test_plugin_malformed_missing_field(void **state)
{
	(void)state;
	check_malformed("bin/rasp-malformed-missing-field", "ObjectSize", "reason=missing");
}

static void test_plugin_malformed_wrong_type(void **state)
{
	(void)state;
	check_malformed("bin/rasp-malformed-wrong-type", "ObjectSize",
			"reason=wrong-type (expected an integer)");
}

/* Sound layout, bad values: caught per event, not per class. */
static void test_plugin_malformed_bad_offset(void **state)
{
	(void)state;
	check_malformed("bin/rasp-malformed-bad-offset", "SampledByteOffset",
			"reason=not-below-ObjectSize");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plugin_malformed_missing_field),
	    cmocka_unit_test(test_plugin_malformed_wrong_type),
	    cmocka_unit_test(test_plugin_malformed_bad_offset),
	};

	return cmocka_run_group_tests_name("plugin-malformed", tests, NULL, NULL);
}
