/* The generated provider, end to end: rasp-emit records through a real lttng-sessiond, the
 * real babeltrace2 reads the trace back, and DotNETRuntime:AllocationSampled has CoreCLR's
 * layout: field names and order, integer sizes and signedness, TypeName a string; the fields
 * it shares with CoreCLR's own GCAllocationTick_V3 (a perfcollect trace) have the same shape.
 * rasp's own Rasp_Runtime:SampledObjectsFreed (the batch a session enabling Rasp_Runtime:*
 * gets) and HeapDestroyed, recorded from rasp-ep-prog (which frees every object it allocates,
 * then destroys its heap), and SampledObjectFreed, from a second run under a session that
 * enables it alone, have the manifest's. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lttng-session.h"
#include "rasp/event-meta.h"
#include "trace-read.h"

#define EMITTED 500

static struct rasp_test_session session, single;
static uint64_t emitter_pid, freer_pid, single_pid;

/* Shape of a field as babeltrace2 sees it: type, and size in bits for integers. */
struct shape {
	char name[64];
	bt_field_class_type type;
	uint64_t bits;
};

struct layout {
	const char *event;
	uint64_t vpid;	/* only this process's events (0: all): others may share the session */
	uint64_t total; /* events of that process, any name */
	int found;
	uint64_t count;
	size_t n;
	struct shape f[16];
	uint64_t configured_mean;
	int bad_offset;
};

static void shape_of(const bt_field_class *fc, const char *name, struct shape *s)
{
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->type = bt_field_class_get_type(fc);
	/* An array: its elements' (LTTng's sequences, a manifest's count= fields). */
	if (bt_field_class_type_is(s->type, BT_FIELD_CLASS_TYPE_ARRAY)) {
		fc = bt_field_class_array_borrow_element_field_class_const(fc);
		s->bits =
		    bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_INTEGER)
			? bt_field_class_integer_get_field_value_range(fc)
			: 0;
		return;
	}
	s->bits = bt_field_class_type_is(s->type, BT_FIELD_CLASS_TYPE_INTEGER)
		      ? bt_field_class_integer_get_field_value_range(fc)
		      : 0;
}

static int collect_layout(const bt_event *ev, void *user)
{
	struct layout *l = user;
	const bt_event_class *ec = bt_event_borrow_class_const(ev);
	const char *name = bt_event_class_get_name(ec);
	uint64_t size, offset, vpid;

	if (l->vpid &&
	    (rasp_test_field_u64(rasp_test_event_context(ev, "vpid"), &vpid) || vpid != l->vpid))
		return 0;
	l->total++;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG) == 0)
		rasp_test_field_u64(rasp_test_event_field(ev, "SamplingMean"), &l->configured_mean);
	if (strcmp(name, l->event) != 0)
		return 0;
	l->count++;
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) == 0 &&
	    (rasp_test_field_u64(rasp_test_event_field(ev, "ObjectSize"), &size) ||
	     rasp_test_field_u64(rasp_test_event_field(ev, "SampledByteOffset"), &offset) ||
	     offset >= size))
		l->bad_offset = 1;
	if (!l->found) {
		const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(ec);

		l->found = 1;
		l->n = bt_field_class_structure_get_member_count(payload);
		for (size_t i = 0; i < l->n && i < 16; i++) {
			const bt_field_class_structure_member *m =
			    bt_field_class_structure_borrow_member_by_index_const(payload, i);

			shape_of(bt_field_class_structure_member_borrow_field_class_const(m),
				 bt_field_class_structure_member_get_name(m), &l->f[i]);
		}
	}
	return 0;
}

static const struct shape *field(const struct layout *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->f[i].name, name) == 0)
			return &l->f[i];
	return NULL;
}

static int record(void **state)
{
	const char *events[] = {"DotNETRuntime:*", "Rasp_Runtime:*", NULL};
	const char *argv[] = {
	    rasp_test_build_path("bin/rasp-emit"), "-n", "500", "-m", "65536", NULL};
	char out[4096];
	int rc;

	(void)state;
	if (rasp_test_session_start(&session, events) != 0)
		return -1;
	rc = rasp_test_run(out, sizeof(out), argv, NULL);
	if (rc != 0 || strstr(out, "provider loaded") == NULL || !strstr(out, "(pid ")) {
		fprintf(stderr, "rasp-emit failed (%d): %s\n", rc, out);
		return -1;
	}
	emitter_pid = strtoull(strstr(out, "(pid ") + 5, NULL, 10);
	{
		const char *prog[] = {rasp_test_build_path("bin/rasp-ep-prog"), "2", "500", NULL};
		const char *env[] = {"RASP_SAMPLING_MEAN=4096", NULL};

		rc = rasp_test_run(out, sizeof(out), prog, env);
		if (rc != 0 || !strstr(out, " pid=")) {
			fprintf(stderr, "rasp-ep-prog failed (%d): %s\n", rc, out);
			return -1;
		}
		freer_pid = strtoull(strstr(out, " pid=") + 5, NULL, 10);
	}
	if (rasp_test_session_stop(&session) != 0)
		return -1;
	{
		const char *ev[] = {"DotNETRuntime:AllocationSampled",
				    "Rasp_Runtime:SampledObjectFreed", NULL};
		const char *prog[] = {rasp_test_build_path("bin/rasp-ep-prog"), "1", "200", NULL};
		const char *env[] = {"RASP_SAMPLING_MEAN=4096", NULL};

		if (rasp_test_session_start(&single, ev) != 0)
			return -1;
		rc = rasp_test_run(out, sizeof(out), prog, env);
		if (rc != 0 || !strstr(out, " pid=")) {
			fprintf(stderr, "rasp-ep-prog failed (%d): %s\n", rc, out);
			return -1;
		}
		single_pid = strtoull(strstr(out, " pid=") + 5, NULL, 10);
	}
	return rasp_test_session_stop(&single);
}

static int cleanup(void **state)
{
	(void)state;
	rasp_test_session_destroy(&session, 0);
	rasp_test_session_destroy(&single, 0);
	return 0;
}

static void test_no_discarded_events(void **state)
{
	(void)state;
	assert_int_equal(rasp_test_session_discarded(&session), 0);
}

static void test_allocation_sampled_has_coreclr_layout(void **state)
{
	static const char *const names[] = RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_NAMES;
	static const struct {
		const char *name;
		bt_field_class_type type;
		uint64_t bits;
	} want[] = {
	    {"AllocationKind", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER, 32},
	    {"ClrInstanceID", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER, 16},
	    {"TypeID", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER, 8 * sizeof(size_t)},
	    {"TypeName", BT_FIELD_CLASS_TYPE_STRING, 0},
	    {"Address", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER, 8 * sizeof(size_t)},
	    {"ObjectSize", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER, 64},
	    {"SampledByteOffset", BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER, 64},
	};
	struct layout l = {.event = RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
			   .vpid = emitter_pid};
	uint64_t discarded = 0;

	(void)state;
	assert_true(rasp_test_trace_foreach(session.dir, collect_layout, &l, &discarded) > 0);
	assert_int_equal(l.total, EMITTED + 2);
	assert_int_equal(discarded, 0);
	assert_true(l.found);
	assert_int_equal(l.count, EMITTED);
	assert_false(l.bad_offset);
	assert_int_equal(l.configured_mean, 65536);
	assert_int_equal(l.n, 7);
	assert_int_equal(RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_COUNT, 7);
	for (size_t i = 0; i < 7; i++) {
		assert_string_equal(l.f[i].name, want[i].name);
		assert_string_equal(names[i], want[i].name);
		assert_int_equal(l.f[i].type, want[i].type);
		assert_int_equal(l.f[i].bits, want[i].bits);
	}
}

static void test_shared_fields_match_coreclr_trace(void **state)
{
	static const char *const shared[] = {"AllocationKind", "ClrInstanceID", "TypeID",
					     "TypeName", "Address"};
	struct layout ours = {.event = RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
			      .vpid = emitter_pid};
	struct layout clr = {.event = "DotNETRuntime:GCAllocationTick_V3"};

	(void)state;
	assert_true(rasp_test_trace_foreach(session.dir, collect_layout, &ours, NULL) > 0);
	if (access(CORECLR_TRACE_DIR, R_OK) != 0) {
		printf("skipped: %s not present (its archive is in ../shared/data/dotnet, not "
		       "beside this checkout)\n",
		       CORECLR_TRACE_DIR);
		skip();
	}
	assert_true(rasp_test_trace_foreach(CORECLR_TRACE_DIR, collect_layout, &clr, NULL) > 0);
	assert_true(clr.found);
	assert_int_equal(clr.count, 1);
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		const struct shape *a = field(&ours, shared[i]), *b = field(&clr, shared[i]);

		assert_non_null(a);
		assert_non_null(b);
		assert_int_equal(a->type, b->type);
		assert_int_equal(a->bits, b->bits);
	}
}

/* An event of rasp's own provider has the manifest's fields (names from the generated
 * metadata, in order) with the LTTng types the manifest's inTypes give: unsigned integers, or
 * where arrays[i], a sequence of them (babeltrace2 shows each with the member LTTng adds for
 * its length, _NAME_length, before it: skipped). */
static void expect_layout_in(const struct rasp_test_session *s, uint64_t pid, const char *event,
			     const char *const *names, size_t n, const uint64_t *bits,
			     const bool *arrays)
{
	struct layout l = {.event = event, .vpid = pid};
	size_t k = 0;

	assert_true(rasp_test_trace_foreach(s->dir, collect_layout, &l, NULL) > 0);
	if (!l.found)
		fail_msg("no %s in the trace of rasp-ep-prog (pid %llu)", event,
			 (unsigned long long)pid);
	for (size_t i = 0; i < l.n; i++) {
		size_t len = strlen(l.f[i].name);

		if (l.f[i].name[0] == '_' && len > 7 && !strcmp(l.f[i].name + len - 7, "_length"))
			continue;
		assert_true(k < n);
		assert_string_equal(l.f[i].name, names[k]);
		if (arrays && arrays[k])
			assert_true(bt_field_class_type_is(l.f[i].type, BT_FIELD_CLASS_TYPE_ARRAY));
		else
			assert_int_equal(l.f[i].type, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER);
		assert_int_equal(l.f[i].bits, bits[k]);
		k++;
	}
	assert_int_equal(k, n);
}

static void expect_layout(const char *event, const char *const *names, size_t n,
			  const uint64_t *bits)
{
	expect_layout_in(&session, freer_pid, event, names, n, bits, NULL);
}

static void test_lifetime_events_have_manifest_layout(void **state)
{
	static const char *const freed[] = RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_FIELD_NAMES;
	static const char *const destroyed[] = RASP_EVENT_RASP_RUNTIME_HEAPDESTROYED_FIELD_NAMES;
	/* win:UInt16, win:Pointer, win:UInt64; win:UInt16. */
	static const uint64_t freed_bits[] = {16, 8 * sizeof(size_t), 64}, destroyed_bits[] = {16};

	(void)state;
	assert_int_equal(RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_FIELD_COUNT, 3);
	assert_string_equal(freed[0], "ClrInstanceID");
	assert_string_equal(freed[1], "Address");
	assert_string_equal(freed[2], "ObjectSize");
	assert_int_equal(RASP_EVENT_RASP_RUNTIME_HEAPDESTROYED_FIELD_COUNT, 1);
	expect_layout_in(&single, single_pid, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_LTTNG,
			 freed, 3, freed_bits, NULL);
	expect_layout(RASP_EVENT_RASP_RUNTIME_HEAPDESTROYED_LTTNG, destroyed, 1, destroyed_bits);
}

/* The batch: win:UInt16 twice, then sequences of win:Pointer, win:UInt64, win:UInt64. */
static void test_batched_frees_have_manifest_layout(void **state)
{
	static const char *const batch[] = RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_NAMES;
	static const uint64_t bits[] = {16, 16, 8 * sizeof(size_t), 64, 64};
	static const bool arrays[] = {false, false, true, true, true};

	(void)state;
	assert_int_equal(RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_COUNT, 5);
	expect_layout_in(&session, freer_pid, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG,
			 batch, 5, bits, arrays);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_discarded_events),
	    cmocka_unit_test(test_allocation_sampled_has_coreclr_layout),
	    cmocka_unit_test(test_shared_fields_match_coreclr_trace),
	    cmocka_unit_test(test_lifetime_events_have_manifest_layout),
	    cmocka_unit_test(test_batched_frees_have_manifest_layout),
	};

	return cmocka_run_group_tests_name("provider-layout", tests, record, cleanup);
}
