/* Unit tests of consumer/report/event.c: event roles by the names generated in rasp/event-meta.h
 * (and near misses that must stay OTHER), and rasp_event_apply for each role: what reaches the
 * tally, malformed values refused with the field named and the values in the reason, with
 * nothing counted, process names and timestamps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "report/event.h"

#define UNK RASP_ID_UNKNOWN

static void test_event_roles(void **state)
{
	(void)state;
	static const char *const other[] = {
	    "",
	    "DotNETRuntime:AllocationSampled2",
	    "DotNETRuntime:AllocationSample",
	    "dotnetruntime:allocationsampled",
	    "AllocationSampled",
	    "DotNETRuntime:GCAllocationTick",
	    "DotNETRuntime:GCAllocationTick_V1",
	    "DotNETRuntime:GCAllocationTick_V5",
	    "Rasp_Runtime:SamplingConfigured ",
	    "lttng_ust_statedump:start",
	};

	assert_int_equal(rasp_role_of(RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG),
			 RASP_ROLE_SAMPLED);
	assert_int_equal(rasp_role_of(RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG),
			 RASP_ROLE_CONFIGURED);
	assert_int_equal(rasp_role_of(RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V2_LTTNG),
			 RASP_ROLE_TICK);
	assert_int_equal(rasp_role_of(RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V3_LTTNG),
			 RASP_ROLE_TICK);
	assert_int_equal(rasp_role_of(RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V4_LTTNG),
			 RASP_ROLE_TICK);
	/* The names themselves, as LTTng traces carry them. */
	assert_int_equal(rasp_role_of("DotNETRuntime:AllocationSampled"), RASP_ROLE_SAMPLED);
	assert_int_equal(rasp_role_of("Rasp_Runtime:SamplingConfigured"), RASP_ROLE_CONFIGURED);
	assert_int_equal(rasp_role_of("DotNETRuntime:GCAllocationTick_V3"), RASP_ROLE_TICK);
	assert_int_equal(rasp_role_of(NULL), RASP_ROLE_OTHER);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (rasp_role_of(other[i]) != RASP_ROLE_OTHER) {
			printf("\"%s\" has role %d, want OTHER\n", other[i],
			       rasp_role_of(other[i]));
			fail();
		}
}

static struct rasp_event sampled(const char *type, uint64_t size, uint64_t offset)
{
	return (struct rasp_event){.role = RASP_ROLE_SAMPLED,
				   .type = type,
				   .kind = 1,
				   .size = size,
				   .offset = offset,
				   .pid = 10,
				   .tid = 11};
}

static struct rasp_tally *tally(void)
{
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE | RASP_GROUP_KIND, 102400);

	assert_non_null(t);
	return t;
}

static void test_event_sampled(void **state)
{
	(void)state;
	struct rasp_tally *t = tally();
	struct rasp_event e = sampled("Foo", 48, 7);
	const char *field = "untouched";
	char why[128] = "untouched";
	const struct rasp_tally_process *p;

	e.procname = "app";
	e.timed = true;
	e.ns = 12345;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_string_equal(field, "untouched");
	assert_int_equal(t->samples, 1);
	assert_int_equal(t->ncells, 1);
	assert_string_equal(rasp_tally_type_name(t, 0), "Foo");
	assert_int_equal(t->cells[0].kind, 1);
	assert_int_equal(t->cells[0].est.samples, 1);
	assert_true(t->cells[0].est.unsampled == 48 - 7);
	p = rasp_tally_find_process(t, 10);
	assert_non_null(p);
	assert_string_equal(rasp_tally_process_name(t, p), "app");
	assert_int_equal(p->samples, 1);
	assert_true(t->timed);
	assert_int_equal(t->first_ns, 12345);
	/* No type name: "NULL". No pid: the process name is not kept. */
	e = sampled(NULL, 8, 0);
	e.pid = UNK;
	e.procname = "ghost";
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_string_equal(rasp_tally_type_name(t, 1), "NULL");
	p = rasp_tally_find_process(t, UNK);
	assert_non_null(p);
	assert_null(rasp_tally_process_name(t, p));
	assert_int_equal(t->samples, 2);
	rasp_tally_destroy(t);
}

/* ObjectSize 0 and SampledByteOffset >= ObjectSize: -EINVAL naming the field, the values in
 * the reason, nothing counted. */
static void test_event_sampled_malformed(void **state)
{
	(void)state;
	struct rasp_tally *t = tally();
	struct rasp_event e = sampled("Foo", 0, 0);
	const char *field = NULL;
	char why[128] = "";

	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_OBJECTSIZE);
	assert_string_equal(field, "ObjectSize");
	assert_string_equal(why, "zero (SampledByteOffset=0 ObjectSize=0)");

	e = sampled("Foo", 16, 16);
	field = NULL;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "SampledByteOffset");
	assert_string_equal(why, "not-below-ObjectSize (SampledByteOffset=16 ObjectSize=16)");

	e = sampled("Foo", 16, UINT64_MAX);
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "SampledByteOffset");
	assert_string_equal(why, "not-below-ObjectSize (SampledByteOffset=18446744073709551615 "
				 "ObjectSize=16)");
	/* A reason cut to the buffer, still terminated. */
	{
		char small[8];

		memset(small, 'X', sizeof(small));
		assert_int_equal(rasp_event_apply(t, &e, &field, small, sizeof(small)), -EINVAL);
		assert_string_equal(small, "not-bel");
	}
	assert_int_equal(t->samples, 0);
	assert_int_equal(t->ncells, 0);
	assert_int_equal(t->ntypes, 0);
	rasp_tally_destroy(t);
}

/* Rasp_Runtime:ObjectLoaded: an object and its build id into the module table; malformed ones
 * (empty path, size 0, a build id longer than any) refused with the field named, nothing
 * added. */
static void test_event_object(void **state)
{
	(void)state;
	struct rasp_tally *t = tally();
	static const uint8_t id[20] = {1, 2, 3};
	uint8_t long_id[65] = {0};
	struct rasp_event e = {.role = RASP_ROLE_OBJECT,
			       .pid = 10,
			       .tid = 11,
			       .base = 0x1000,
			       .memsz = 0x2000,
			       .path = "/usr/lib/libx.so",
			       .pic = true,
			       .build_id = id,
			       .build_id_len = sizeof(id)};
	const struct rasp_module *m;
	const char *field = NULL;
	char why[128] = "";

	assert_int_equal(rasp_role_of(RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_LTTNG),
			 RASP_ROLE_OBJECT);
	assert_int_equal(rasp_role_of("Rasp_Runtime:ObjectLoaded"), RASP_ROLE_OBJECT);
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	m = rasp_modules_find(&t->modules, 10, 0x2fff);
	assert_non_null(m);
	assert_string_equal(m->path, "/usr/lib/libx.so");
	assert_true(m->pic);
	assert_int_equal(m->build_id_len, 20);
	assert_memory_equal(m->build_id, id, 20);
	assert_null(rasp_modules_find(&t->modules, 10, 0x3000));
	assert_null(rasp_modules_find(&t->modules, 11, 0x1000));
	/* No build id: the object still names frames. */
	e.base = 0x10000;
	e.build_id_len = 0;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	m = rasp_modules_find(&t->modules, 10, 0x10000);
	assert_non_null(m);
	assert_int_equal(m->build_id_len, 0);
	assert_int_equal(t->modules.n, 2);

	e.base = 0x40000;
	e.path = "";
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "Path");
	assert_string_equal(why, "empty (BaseAddress=0x40000)");
	e.path = NULL;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "Path");
	e.path = "/lib/liby.so";
	e.memsz = 0;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "Size");
	assert_string_equal(why, "zero (Path=/lib/liby.so)");
	e.memsz = 0x1000;
	e.build_id = long_id;
	e.build_id_len = sizeof(long_id);
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "BuildId");
	assert_string_equal(why, "longer than 64 bytes (65)");
	assert_int_equal(t->modules.n, 2);
	assert_null(rasp_modules_find(&t->modules, 10, 0x40000));
	rasp_tally_destroy(t);
}

static void test_event_configured(void **state)
{
	(void)state;
	struct rasp_tally *t = tally();
	struct rasp_event e = {.role = RASP_ROLE_CONFIGURED, .mean = 4096, .pid = 10, .tid = 11};
	const char *field = NULL;
	char why[128] = "";

	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_int_equal(t->configured, 1);
	assert_true(rasp_tally_find_process(t, 10)->mean == 4096);
	/* Thread 11's samples now weigh with 4096 (p = 1/4096). */
	e = sampled("Foo", 64, 0);
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_true(t->cells[0].est.p == 1.0 / 4096);
	assert_int_equal(rasp_tally_samples_assumed(t), 0);

	e = (struct rasp_event){.role = RASP_ROLE_CONFIGURED, .mean = 0, .pid = 10, .tid = 12};
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_FIELD_SAMPLINGMEAN);
	assert_string_equal(field, "SamplingMean");
	assert_string_equal(why, "zero (SamplingMean=0)");
	assert_int_equal(t->configured, 1);
	assert_int_equal(t->ntmeans, 1);
	rasp_tally_destroy(t);
}

static void test_event_tick_and_other(void **state)
{
	(void)state;
	struct rasp_tally *t = tally();
	struct rasp_event e = {.role = RASP_ROLE_TICK,
			       .type = "Big",
			       .amount = 100000,
			       .pid = 10,
			       .tid = 11,
			       .procname = "dotnet"};
	const char *field = NULL;
	char why[128] = "";

	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	e.type = NULL;
	e.amount = 5;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_int_equal(t->ticks_total, 2);
	assert_string_equal(rasp_tally_type_name(t, 0), "Big");
	assert_int_equal(t->ticks[0].amount, 100000);
	assert_string_equal(rasp_tally_type_name(t, 1), "NULL");
	assert_int_equal(t->ticks[1].amount, 5);
	assert_int_equal(t->samples, 0);
	assert_string_equal(rasp_tally_process_name(t, rasp_tally_find_process(t, 10)), "dotnet");

	/* Any other event: counted, its process name not kept, its time noted. */
	e = (struct rasp_event){
	    .role = RASP_ROLE_OTHER, .pid = 20, .procname = "other", .timed = true, .ns = 99};
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_int_equal(t->other_events, 1);
	assert_null(rasp_tally_find_process(t, 20));
	assert_true(t->timed);
	assert_int_equal(t->last_ns, 99);
	assert_int_equal(t->samples + t->configured, 0);
	rasp_tally_destroy(t);
}

/* A SampledObjectsFreed: every free checked before any is applied, then each applied at the
 * event's time minus its Age (its lifetime from its sample's time), in array order. */
static void test_event_frees(void **state)
{
	(void)state;
	struct rasp_tally *t = tally();
	uint64_t addresses[3] = {0x1000, 0x2000, 0x3000}, sizes[3] = {64, 64, 64},
		 ages[3] = {2000000, 10, 0};
	struct rasp_event e = {.role = RASP_ROLE_FREES,
			       .pid = 10,
			       .tid = 12,
			       .timed = true,
			       .ns = 3000000,
			       .nfrees = 3,
			       .free_addresses = addresses,
			       .free_sizes = sizes,
			       .free_ages = ages,
			       .free_addresses_len = 3,
			       .free_sizes_len = 3,
			       .free_ages_len = 3};
	const char *field = NULL;
	char why[160] = "";
	struct rasp_event s;

	assert_int_equal(rasp_role_of(RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG),
			 RASP_ROLE_FREES);
	assert_int_equal(rasp_role_of("Rasp_Runtime:SampledObjectsFreed"), RASP_ROLE_FREES);
	for (int i = 0; i < 3; i++) {
		s = sampled("Foo", 64, 0);
		s.timed = true;
		s.ns = 1000 * (i + 1);
		s.has_address = true;
		s.address = addresses[i];
		assert_int_equal(rasp_event_apply(t, &s, &field, why, sizeof(why)), 0);
	}

	/* Malformed: refused with the field and the values, nothing applied. */
	e.nfrees = 0;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "Frees");
	assert_string_equal(why, "out-of-range (Frees=0, 1 to 64)");
	e.nfrees = 65;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "out-of-range (Frees=65, 1 to 64)");
	e.nfrees = 3;
	e.free_sizes_len = 2;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "ObjectSizes");
	assert_string_equal(why, "length-not-Frees (length=2 Frees=3)");
	e.free_sizes_len = 3;
	e.free_ages_len = 4;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "Ages");
	e.free_ages_len = 3;
	sizes[2] = 0;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "ObjectSizes");
	assert_string_equal(why, "zero (ObjectSizes[2]=0 Addresses[2]=0x3000)");
	sizes[2] = 64;
	ages[1] = 3000001; /* before the clock's origin */
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(field, "Ages");
	assert_string_equal(why, "before-the-clock-origin (Ages[1]=3000001 event at 3000000 ns)");
	ages[1] = UINT64_MAX; /* past int64 */
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "before-the-clock-origin (Ages[1]=18446744073709551615 event at "
				 "3000000 ns)");
	assert_int_equal(t->live->frees, 0);
	assert_true(t->live->cells[0].now.samples == 3.0);

	/* Well formed: three frees, at 1 ms, 2999990 ns and 3 ms; lifetimes from there. */
	ages[1] = 10;
	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
	assert_int_equal(t->live->frees, 3);
	assert_int_equal(t->live->frees_paired, 3);
	assert_true(t->live->cells[0].now.samples == 0.0);
	/* The first lived 999 us (sampled at 1 us, freed at 1 ms): within 1 ms; the others 3 ms. */
	assert_true(t->live->cells[0].freed_short > 0.0);
	assert_true(t->live->cells[0].freed_short < t->live->cells[0].freed / 2);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_event_roles),
	    cmocka_unit_test(test_event_sampled),
	    cmocka_unit_test(test_event_sampled_malformed),
	    cmocka_unit_test(test_event_object),
	    cmocka_unit_test(test_event_configured),
	    cmocka_unit_test(test_event_tick_and_other),
	    cmocka_unit_test(test_event_frees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
