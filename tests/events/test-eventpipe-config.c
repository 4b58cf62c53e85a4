/* .NET's EventPipe startup variables as the runtime's session reads them
 * (events/eventpipe-config.c): prefixes and their precedence, CLRConfig's hexadecimal numbers,
 * {pid} in the output path, EventPipeConfig's fields and EventPipe's keyword and level rules,
 * rasp's own events and stacks following AllocationSampled, the buffer pool's size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "eventpipe-config.h"
#include "rasp-event-desc.h"

static const char *const *vars; /* "NAME=VALUE" pairs for the current case */

static const char *get(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *v = vars; v && *v; v++)
		if (strncmp(*v, name, n) == 0 && (*v)[n] == '=')
			return *v + n + 1;
	return NULL;
}

static struct rasp__ep_config read_with(const char *const *env)
{
	struct rasp__ep_config c;

	vars = env;
	rasp__ep_config_read(&c, get, 4242);
	return c;
}

#define BIT(d)	(UINT64_C(1) << (d))
#define SAMPLED BIT(RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED)
/* The stacks, the names of a runtime's frames in them (MethodLoadVerbose_V1) and the loaded
 * objects that name native frames (ObjectLoaded) */
#define STACKS                                                                                     \
	(BIT(RASP_DESC_DOTNETRUNTIME_CLRSTACKWALK) |                                               \
	 BIT(RASP_DESC_DOTNETRUNTIME_METHODLOADVERBOSE_V1) |                                       \
	 BIT(RASP_DESC_RASP_RUNTIME_OBJECTLOADED))
#define CONFIGURED BIT(RASP_DESC_RASP_RUNTIME_SAMPLINGCONFIGURED)
#define STOPPED	   BIT(RASP_DESC_RASP_RUNTIME_SAMPLINGSTOPPED)
#define FREED	   BIT(RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED)
#define DESTROYED  BIT(RASP_DESC_RASP_RUNTIME_HEAPDESTROYED)
/* Every Rasp-Runtime event: the announcements and the samples' ends. */
#define RASP_ALL (CONFIGURED | STOPPED | FREED | DESTROYED)

static void prefixes_and_numbers(void **state)
{
	(void)state;
	assert_false(read_with((const char *[]){NULL}).enabled);
	assert_false(read_with((const char *[]){"DOTNET_EnableEventPipe=0", NULL}).enabled);
	assert_true(read_with((const char *[]){"DOTNET_EnableEventPipe=0x1", NULL}).enabled);
	assert_true(read_with((const char *[]){"COMPlus_EnableEventPipe=1", NULL}).enabled);
	/* DOTNET_ is looked up first. */
	assert_false(read_with((const char *[]){"DOTNET_EnableEventPipe=0",
						"COMPlus_EnableEventPipe=1", NULL})
			 .enabled);
	{
		struct rasp__ep_config c =
		    read_with((const char *[]){"DOTNET_EnableEventPipe=yes", NULL});

		assert_false(c.enabled);
		assert_non_null(strstr(c.warnings, "DOTNET_EnableEventPipe='yes'"));
	}
}

static void output_path(void **state)
{
	struct rasp__ep_config c;
	char longer[5000];

	(void)state;
	c = read_with((const char *[]){"DOTNET_EnableEventPipe=1", NULL});
	assert_string_equal(c.path, "trace.nettrace");
	c = read_with((const char *[]){"DOTNET_EnableEventPipe=1",
				       "DOTNET_EventPipeOutputPath=/x/{pid}/t-{pid}.nettrace",
				       NULL});
	assert_string_equal(c.path, "/x/4242/t-4242.nettrace");
	memset(longer, 'a', sizeof(longer));
	memcpy(longer, "DOTNET_EventPipeOutputPath=", 27);
	longer[sizeof(longer) - 1] = '\0';
	c = read_with((const char *[]){"DOTNET_EnableEventPipe=1", longer, NULL});
	assert_false(c.enabled);
	assert_non_null(strstr(c.warnings, "longer than"));
}

static uint64_t mask_of(const char *spec, bool stackwalk)
{
	char w[1024] = "";

	return rasp__ep_config_mask(spec, stackwalk, w, sizeof(w));
}

static void keywords_and_levels(void **state)
{
	char w[1024] = "";

	(void)state;
	/* The sampling keyword at Informational: the samples, rasp's announcements and the
	 * samples' frees, stacks. */
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:4", true),
			 SAMPLED | STACKS | RASP_ALL);
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:4", false),
			 SAMPLED | RASP_ALL);
	/* Provider names compare without case; keywords may lack 0x. */
	assert_int_equal(mask_of("microsoft-windows-dotnetruntime:80000000000:4", true) & SAMPLED,
			 SAMPLED);
	/* Level 3 (Warning) is below Informational; 0 means every level. */
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:3", true), 0);
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:0", true) & SAMPLED,
			 SAMPLED);
	/* An empty keywords field means every keyword; an omitted one none. */
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime::4", true) & SAMPLED, SAMPLED);
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime", true), 0);
	/* .NET's default session (an empty variable) has no sampling keyword: nothing, not even
	 * MethodLoadVerbose_V1, whose JIT keyword and level it has (the frames' names go with
	 * the stacks). */
	assert_int_equal(mask_of(NULL, true), 0);
	assert_int_equal(mask_of("", true), 0);
	/* Other providers are parsed and ignored, filter arguments too. */
	assert_int_equal(
	    mask_of("Other:ff:5:k=v,Microsoft-Windows-DotNETRuntime:0x80000000000:5", true) &
		SAMPLED,
	    SAMPLED);
	/* Rasp-Runtime listed: its own keywords decide. */
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:4,"
				 "Rasp-Runtime:0x0:4",
				 true) &
			     RASP_ALL,
			 0);
	/* Its sampling keyword (0x1) without the lifetime one (0x2): no frees; and the other
	 * way round. */
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:4,"
				 "Rasp-Runtime:0x1:4",
				 true) &
			     RASP_ALL,
			 CONFIGURED | STOPPED);
	assert_int_equal(mask_of("Microsoft-Windows-DotNETRuntime:0x80000000000:4,"
				 "Rasp-Runtime:0x2:4",
				 true) &
			     RASP_ALL,
			 FREED | DESTROYED);
	/* A bad entry is named and left out; the others stay. */
	assert_int_equal(rasp__ep_config_mask("Microsoft-Windows-DotNETRuntime:zz:4,"
					      "Microsoft-Windows-DotNETRuntime:0x80000000000:4",
					      true, w, sizeof(w)) &
			     SAMPLED,
			 SAMPLED);
	assert_non_null(strstr(w, "keywords 'zz'"));
}

static void pool_size(void **state)
{
	(void)state;
	/* CLRConfig numbers are hexadecimal: 0x10 MB; 0 is 1; the pool stops at 256 MB. */
	assert_int_equal(read_with((const char *[]){"DOTNET_EnableEventPipe=1",
						    "DOTNET_EventPipeCircularMB=10", NULL})
			     .buffer_bytes,
			 (uint64_t)16 << 20);
	assert_int_equal(read_with((const char *[]){"DOTNET_EnableEventPipe=1",
						    "DOTNET_EventPipeCircularMB=0", NULL})
			     .buffer_bytes,
			 (uint64_t)1 << 20);
	assert_int_equal(read_with((const char *[]){"DOTNET_EnableEventPipe=1", NULL}).buffer_bytes,
			 (uint64_t)256 << 20);
}

static void stackwalk_switch(void **state)
{
	struct rasp__ep_config c;

	(void)state;
	c = read_with((const char *[]){"DOTNET_EnableEventPipe=1",
				       "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:"
				       "0x80000000000:4",
				       "DOTNET_EventPipeEnableStackwalk=0", NULL});
	assert_int_equal(c.mask & STACKS, 0);
	assert_int_equal(c.mask & SAMPLED, SAMPLED);
	c = read_with((const char *[]){"DOTNET_EnableEventPipe=1",
				       "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:"
				       "0x80000000000:4",
				       NULL});
	assert_int_equal(c.mask & STACKS, STACKS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(prefixes_and_numbers), cmocka_unit_test(output_path),
	    cmocka_unit_test(keywords_and_levels),  cmocka_unit_test(pool_size),
	    cmocka_unit_test(stackwalk_switch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
