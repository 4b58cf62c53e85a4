/* The generated headers compile as C11 and carry the manifest's values (the C++ twin of this
 * test, test-events-header.cpp, includes this file). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" { /* cmocka 1.1's header has no C++ guard */
#endif
#include <cmocka.h>
#ifdef __cplusplus
}
#endif

#include <string.h>

#include "rasp/event-meta.h"
#include "rasp/events.h"

#ifndef RASP_HEADER_TEST_NAME
#define RASP_HEADER_TEST_NAME "events-header-c"
#endif

/* Values from the .NET contract: compile-time checks that the manifest kept them. */
#if RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_ID != 303 ||                                        \
    RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_VERSION != 0 ||                                     \
    RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LEVEL != 4 ||                                       \
    RASP_TASK_DOTNETRUNTIME_ALLOCATIONSAMPLING != 40
#error "AllocationSampled metadata differs from .NET's"
#endif

static void test_metadata_matches_dotnet(void **state)
{
	static const char *const names[] = RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_NAMES;
	static const char *const want[] = {"AllocationKind",   "ClrInstanceID", "TypeID",
					   "TypeName",	       "Address",	"ObjectSize",
					   "SampledByteOffset"};

	(void)state;
	assert_string_equal(RASP_PROVIDER_DOTNETRUNTIME_NAME, "Microsoft-Windows-DotNETRuntime");
	assert_string_equal(RASP_PROVIDER_DOTNETRUNTIME_GUID,
			    "{e13c0d23-ccbc-4e12-931b-d9cc2eee27e4}");
	assert_string_equal(RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
			    "DotNETRuntime:AllocationSampled");
	assert_true(RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_KEYWORDS == 0x80000000000ULL);
	assert_true(RASP_KEYWORD_DOTNETRUNTIME_ALLOCATIONSAMPLINGKEYWORD == 0x80000000000ULL);
	assert_int_equal(RASP_MAP_GCALLOCATIONKINDMAP_SMALL, 0);
	assert_int_equal(RASP_MAP_GCALLOCATIONKINDMAP_LARGE, 1);
	assert_int_equal(RASP_MAP_GCALLOCATIONKINDMAP_PINNED, 2);
	assert_int_equal(sizeof(names) / sizeof(names[0]), 7);
	for (size_t i = 0; i < 7; i++)
		assert_string_equal(names[i], want[i]);
}

static void test_calls_are_noops_without_a_session(void **state)
{
	(void)state;
	/* No session enables the events in a unit test: enabled is false and firing is a
	 * no-op, whether or not the provider was found. */
	assert_false(rasp_event_allocation_sampled_enabled());
	rasp_event_allocation_sampled(0, 0, 1, "T", 2, 24, 3);
	rasp_event_allocation_sampled(0, 0, 1, NULL, 2, 24, 3);
	rasp_event_sampling_configured(0, 102400, 8192, RASP_MAP_SAMPLINGTRIGGERMAP_SESSION);
	rasp_event_sampling_stopped(0);
	assert_true(rasp_events_provider_loaded() == 1 || rasp_events_provider_error() != NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metadata_matches_dotnet),
	    cmocka_unit_test(test_calls_are_noops_without_a_session),
	};

	return cmocka_run_group_tests_name(RASP_HEADER_TEST_NAME, tests, NULL, NULL);
}
