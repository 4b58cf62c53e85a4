/* How librasp finds its LTTng provider: a program linked against librasp (no LD_PRELOAD, no
 * liblttng-ust dependency) records events under a session; with the provider disabled or
 * unloadable the same program runs to the end with events as no-ops. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lttng-session.h"
#include "rasp/event-meta.h"
#include "trace-read.h"

/* Events of one process only: other programs of this user may fire the same events into
 * the session meanwhile (the session records every process of the user). */
struct ours {
	uint64_t vpid;
	long n;
};

static int count_ours(const bt_event *ev, void *user)
{
	struct ours *o = user;
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	uint64_t vpid;

	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) == 0 &&
	    rasp_test_field_u64(rasp_test_event_context(ev, "vpid"), &vpid) == 0 && vpid == o->vpid)
		o->n++;
	return 0;
}

/* Runs rasp-emit -n 50 under a fresh session with `env`; returns the AllocationSampled events
 * recorded (-1 if the trace could not be read), its output in out. */
static long record_with_env(const char *const *env, char *out, size_t outlen, int *status)
{
	const char *events[] = {"DotNETRuntime:AllocationSampled", NULL};
	const char *argv[] = {rasp_test_build_path("bin/rasp-emit"), "-n", "50", NULL};
	struct rasp_test_session s;
	struct ours o = {0, 0};
	const char *pid;

	assert_int_equal(rasp_test_session_start(&s, events), 0);
	*status = rasp_test_run(out, outlen, argv, env);
	assert_int_equal(rasp_test_session_stop(&s), 0);
	assert_int_equal(rasp_test_session_discarded(&s), 0);
	pid = strstr(out, "(pid ");
	assert_non_null(pid);
	o.vpid = strtoull(pid + 5, NULL, 10);
	/* A session that recorded nothing has no trace directory at all. */
	if (rasp_test_trace_foreach(s.dir, count_ours, &o, NULL) < 0)
		o.n = 0;
	rasp_test_session_destroy(&s, 0);
	return o.n;
}

static void test_linked_program_records_without_preload(void **state)
{
	const char *env[] = {"LD_PRELOAD=", "RASP_LTTNG_PROVIDER=", "RASP_LTTNG=", NULL};
	char out[4096];
	int status;

	(void)state;
	assert_int_equal(record_with_env(env, out, sizeof(out), &status), 50);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "LTTng provider loaded"));
}

static void test_program_has_no_lttng_dependency(void **state)
{
	/* The dynamic loader lists what it would load, without running the program. */
	const char *argv[] = {rasp_test_build_path("bin/rasp-emit"), NULL};
	const char *env[] = {"LD_TRACE_LOADED_OBJECTS=1", "LD_PRELOAD=", NULL};
	char out[8192];

	(void)state;
	assert_int_equal(rasp_test_run(out, sizeof(out), argv, env), 0);
	assert_non_null(strstr(out, "librasp.so"));
	assert_null(strstr(out, "liblttng-ust"));
}

static void test_unloadable_provider_gives_noop_events(void **state)
{
	/* A file that is not a shared object: dlopen fails as for a broken install. */
	char bad[4200], out[4096];
	int status;

	(void)state;
	snprintf(bad, sizeof(bad), "RASP_LTTNG_PROVIDER=%s/CMakeLists.txt", RASP_TEST_SOURCE_DIR);
	const char *env[] = {bad, "LD_PRELOAD=", NULL};

	assert_int_equal(record_with_env(env, out, sizeof(out), &status), 0);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "rasp: RASP_LTTNG_PROVIDER="));
	assert_non_null(strstr(out, "events are disabled"));
	assert_non_null(strstr(out, "fired 50 AllocationSampled events"));
}

static void test_missing_provider_gives_noop_events(void **state)
{
	const char *env[] = {"RASP_LTTNG_PROVIDER=/nonexistent/librasp-lttng.so",
			     "LD_PRELOAD=", NULL};
	char out[4096];
	int status;

	(void)state;
	assert_int_equal(record_with_env(env, out, sizeof(out), &status), 0);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "/nonexistent/librasp-lttng.so"));
	assert_non_null(strstr(out, "fired 50 AllocationSampled events"));
}

/* A library that loads but is not the provider: named as such, never reported loaded. */
static void test_other_library_is_not_the_provider(void **state)
{
	const char *env[] = {"RASP_LTTNG_PROVIDER=libm.so.6", "LD_PRELOAD=", NULL};
	char out[4096];
	int status;

	(void)state;
	assert_int_equal(record_with_env(env, out, sizeof(out), &status), 0);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "'libm.so.6' is not rasp's LTTng provider"));
	assert_null(strstr(out, "LTTng provider loaded"));
}

static void test_disabled_by_environment(void **state)
{
	const char *env[] = {"RASP_LTTNG=0", "LD_PRELOAD=", NULL};
	char out[4096];
	int status;

	(void)state;
	assert_int_equal(record_with_env(env, out, sizeof(out), &status), 0);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "disabled by RASP_LTTNG=0"));
}

static void test_bad_switch_value_is_named(void **state)
{
	const char *env[] = {"RASP_LTTNG=yes", "LD_PRELOAD=", NULL};
	char out[4096];
	int status;

	(void)state;
	assert_int_equal(record_with_env(env, out, sizeof(out), &status), 0);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "RASP_LTTNG='yes' is not 0 or 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_linked_program_records_without_preload),
	    cmocka_unit_test(test_program_has_no_lttng_dependency),
	    cmocka_unit_test(test_unloadable_provider_gives_noop_events),
	    cmocka_unit_test(test_missing_provider_gives_noop_events),
	    cmocka_unit_test(test_other_library_is_not_the_provider),
	    cmocka_unit_test(test_disabled_by_environment),
	    cmocka_unit_test(test_bad_switch_value_is_named),
	};

	return cmocka_run_group_tests_name("provider-loading", tests, NULL, NULL);
}
