/* Unit tests of consumer/report/notes.c: the sentences every writer prints before its figures, from
 * hand-built tallies: lost data (counts, unknown counts, singular and plural), skipped events,
 * the assumed sampling mean per process and the summary past 5 processes (also at 10^5),
 * input warnings, the three no-samples variants (with advice for the kind of input: LTTng's for
 * CTF traces, EventPipe's for .nettrace files), their order and the flags; by site, the samples
 * allocated in no recorded object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "report/event.h"
#include "report/notes.h"
#include "report/rows.h"

#define UNK	   RASP_ID_UNKNOWN
#define SAMPLED	   RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG
#define CONFIGURED RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG

static struct rasp_tally *tally(double mean)
{
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, mean);

	assert_non_null(t);
	return t;
}

static void build(const struct rasp_tally *t, struct rasp_notes *n)
{
	assert_int_equal(rasp_notes_build(t, NULL, "--sampling-mean", n), 0);
}

static void print_notes(const struct rasp_notes *n)
{
	for (size_t i = 0; i < n->n; i++)
		printf("  note %zu: %s: %s\n", i, n->v[i].code, n->v[i].text);
}

/* The codes in order, as "a b c". */
static void check_codes(const struct rasp_notes *n, const char *want)
{
	char got[512] = "";

	for (size_t i = 0; i < n->n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "",
			 n->v[i].code);
	if (strcmp(got, want) != 0) {
		printf("codes \"%s\", want \"%s\"\n", got, want);
		print_notes(n);
		fail();
	}
}

static void check_text(const struct rasp_notes *n, size_t i, const char *want)
{
	if (i >= n->n || strcmp(n->v[i].text, want) != 0) {
		printf("note %zu:\n  got  %s\n  want %s\n", i, i < n->n ? n->v[i].text : "(none)",
		       want);
		fail();
	}
}

static void check_has(const struct rasp_notes *n, size_t i, const char *part)
{
	if (i >= n->n || !strstr(n->v[i].text, part)) {
		printf("note %zu lacks \"%s\"\n", i, part);
		print_notes(n);
		fail();
	}
}

static void sample(struct rasp_tally *t, int64_t pid)
{
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, pid, 1, 64, 0), 0);
}

static void test_notes_none(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	sample(t, 1);
	build(t, &n);
	assert_int_equal(n.n, 0);
	assert_int_equal(n.lost_data, 0);
	assert_int_equal(n.incomplete, 0);
	assert_int_equal(n.assumed_mean, 0);
	rasp_notes_free(&n);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

static void test_notes_no_samples(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	/* Nothing at all. */
	build(t, &n);
	check_codes(&n, "no-samples");
	check_text(&n, 0,
		   "the input holds no events at all: the traced program emitted none (does it "
		   "allocate through librasp, and did a session enable " SAMPLED "?).");
	assert_int_equal(n.lost_data + n.incomplete + n.assumed_mean, 0);
	rasp_notes_free(&n);

	/* SamplingConfigured only (rasp-emit -n 0), then other events too. */
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	build(t, &n);
	check_codes(&n, "no-samples");
	check_text(&n, 0,
		   "no " SAMPLED " events among the 1 events read: was the event enabled (lttng "
		   "enable-event -u " SAMPLED "), and does the program allocate through librasp, "
		   "or run .NET with DOTNET_EnableEventLog=1 and the sampling keyword?");
	rasp_notes_free(&n);
	for (int i = 0; i < 3; i++)
		rasp_tally_add_other_event(t);
	build(t, &n);
	check_codes(&n, "no-samples");
	check_has(&n, 0, "among the 4 events read");
	rasp_notes_free(&n);

	/* GCAllocationTick events: an older .NET. */
	assert_int_equal(rasp_tally_add_tick(t, "X", 100), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Y", 100), 0);
	build(t, &n);
	check_codes(&n, "no-samples");
	check_text(&n, 0,
		   "no " SAMPLED " events, but 2 GCAllocationTick events: the trace comes from a "
		   ".NET older than 10, or one recorded without the AllocationSampling keyword "
		   "(0x80000000000); the biased tick section is all it holds.");
	rasp_notes_free(&n);

	/* One sample and the note is gone. */
	sample(t, 1);
	build(t, &n);
	assert_int_equal(n.n, 0);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

static void check_lacks(const struct rasp_notes *n, size_t i, const char *part)
{
	if (i < n->n && strstr(n->v[i].text, part)) {
		printf("note %zu has \"%s\"\n", i, part);
		print_notes(n);
		fail();
	}
}

#define EP_PROVIDERS                                                                               \
	"dotnet-trace collect --providers Microsoft-Windows-DotNETRuntime:0x80000000000:4"
#define EP_CONFIG "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4"

/* An EventPipe file without samples gets EventPipe's advice (dotnet-trace's providers,
 * DOTNET_EventPipeConfig), never LTTng's; a CTF trace beside it gets both, each named. */
static void test_notes_no_samples_eventpipe(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	/* An EventPipe file (its process's mean declared), no event at all. */
	assert_int_equal(rasp_tally_add_input(t, "/traces/app.nettrace"), 0);
	assert_int_equal(rasp_tally_declare_mean(t, 4242, 102400), 0);
	build(t, &n);
	check_codes(&n, "no-samples");
	check_has(&n, 0, "the EventPipe input holds no events at all");
	check_has(&n, 0, EP_PROVIDERS);
	check_has(&n, 0, "DOTNET_EnableEventPipe=1 and " EP_CONFIG);
	check_lacks(&n, 0, "lttng");
	check_lacks(&n, 0, "librasp");
	check_lacks(&n, 0, "DOTNET_EnableEventLog");
	rasp_notes_free(&n);

	/* Events, none of them samples: a session without the AllocationSampling keyword. */
	for (int i = 0; i < 7; i++)
		rasp_tally_add_other_event(t);
	build(t, &n);
	check_codes(&n, "no-samples");
	check_text(&n, 0,
		   "no AllocationSampled events among the 7 events of the EventPipe input: it was "
		   "recorded without the AllocationSampling keyword (0x80000000000) of "
		   "Microsoft-Windows-DotNETRuntime, or from a .NET older than 10; record "
		   "with " EP_PROVIDERS " (the AllocationSampling keyword, .NET 10 and later; "
		   "rasp record -p PID asks for it), or start the program with "
		   "DOTNET_EnableEventPipe=1 and " EP_CONFIG ".");
	rasp_notes_free(&n);

	/* And a CTF trace beside it: both, each for its own kind. */
	assert_int_equal(rasp_tally_add_input(t, "/traces/ctf"), 0);
	assert_int_equal(rasp_tally_set_mean(t, 77, UNK, 4096), 0);
	build(t, &n);
	check_codes(&n, "no-samples");
	check_has(&n, 0,
		  "among the 8 events read: for the EventPipe files, record with " EP_PROVIDERS);
	check_has(&n, 0,
		  "; for the LTTng traces, was the event enabled (lttng enable-event -u " SAMPLED);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);

	/* Two inputs, one an EventPipe file, nothing read from the other: both. */
	t = tally(102400);
	assert_int_equal(rasp_tally_add_input(t, "/traces/app.nettrace"), 0);
	assert_int_equal(rasp_tally_add_input(t, "/traces/ctf"), 0);
	assert_int_equal(rasp_tally_declare_mean(t, 4242, 102400), 0);
	build(t, &n);
	check_has(&n, 0, "the input holds no events at all");
	check_has(&n, 0, "; for the EventPipe files, record with " EP_PROVIDERS);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

static void test_notes_lost_data(void **state)
{
	(void)state;
	static const char tail[] =
	    ": lost AllocationSampled events carried bytes no estimate can recover, so every "
	    "figure is too low by an unknown amount (record with larger buffers).";
	char want[512];
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	sample(t, 1);
	rasp_tally_add_discarded_events(t, 257, true);
	build(t, &n);
	check_codes(&n, "lost-data");
	assert_int_equal(n.lost_data, 1);
	snprintf(want, sizeof(want), "the tracer discarded 257 events%s", tail);
	check_text(&n, 0, want);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);

	/* One event, one packet: singular. */
	t = tally(102400);
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	sample(t, 1);
	rasp_tally_add_discarded_events(t, 1, true);
	rasp_tally_add_discarded_packets(t, 1, true);
	build(t, &n);
	snprintf(want, sizeof(want), "the tracer discarded 1 event and 1 packet%s", tail);
	check_text(&n, 0, want);
	rasp_notes_free(&n);
	/* Unknown counts win over known ones. */
	rasp_tally_add_discarded_events(t, 0, false);
	rasp_tally_add_discarded_packets(t, 0, false);
	build(t, &n);
	snprintf(want, sizeof(want),
		 "the tracer discarded an unknown number of events and an unknown number of "
		 "packets%s",
		 tail);
	check_text(&n, 0, want);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);

	/* Packets only. */
	t = tally(102400);
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	sample(t, 1);
	rasp_tally_add_discarded_packets(t, 3, true);
	build(t, &n);
	assert_int_equal(n.lost_data, 1);
	snprintf(want, sizeof(want), "the tracer discarded 0 events and 3 packets%s", tail);
	check_text(&n, 0, want);
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

static void test_notes_skipped(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	sample(t, 1);
	rasp_tally_add_skipped(t);
	build(t, &n);
	check_codes(&n, "skipped-events");
	check_text(&n, 0,
		   "1 malformed event was skipped (strict=false): the estimates leave them out.");
	assert_int_equal(n.lost_data + n.incomplete + n.assumed_mean, 0);
	rasp_notes_free(&n);
	rasp_tally_add_skipped(t);
	rasp_tally_add_skipped(t);
	build(t, &n);
	check_text(&n, 0,
		   "3 malformed events were skipped (strict=false): the estimates leave them "
		   "out.");
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

static void test_notes_assumed_mean(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	/* Process 42 "app": 2 samples before its SamplingConfigured, 1 after. */
	assert_int_equal(rasp_tally_set_process_name(t, 42, "app"), 0);
	sample(t, 42);
	sample(t, 42);
	assert_int_equal(rasp_tally_set_mean(t, 42, UNK, 4096), 0);
	sample(t, 42);
	/* Unknown process, one sample; process 7, no name, two. */
	sample(t, UNK);
	sample(t, 7);
	sample(t, 7);
	/* Process 9 announced before sampling: no note. */
	assert_int_equal(rasp_tally_set_mean(t, 9, 3, 4096), 0);
	sample(t, 9);
	assert_int_equal(rasp_notes_build(t, NULL, "sampling-mean=", &n), 0);
	check_codes(&n, "assumed-mean assumed-mean assumed-mean");
	assert_int_equal(n.assumed_mean, 1);
	assert_int_equal(n.lost_data + n.incomplete, 0);
	check_text(&n, 0,
		   "process 42 (app): sampling mean 102400 bytes ASSUMED for 2 of its 3 samples, "
		   "which no " CONFIGURED " event preceded; right for .NET (fixed at 102400), "
		   "wrong for a program that sampled at another mean (set sampling-mean=).");
	check_text(&n, 1,
		   "an unknown process (no vpid context): sampling mean 102400 bytes ASSUMED for "
		   "1 of its 1 sample, which no " CONFIGURED " event preceded; right for .NET "
		   "(fixed at 102400), wrong for a program that sampled at another mean (set "
		   "sampling-mean=).");
	check_has(&n, 2, "process 7: sampling mean 102400 bytes ASSUMED for 2 of its 2 samples");
	rasp_notes_free(&n);
	rasp_tally_destroy(t);

	/* The mean named is the tally's default; the flag is the caller's. */
	t = tally(4096);
	sample(t, 3);
	build(t, &n);
	check_codes(&n, "assumed-mean");
	check_has(&n, 0, "process 3: sampling mean 4096 bytes ASSUMED for 1 of its 1 sample,");
	check_has(&n, 0, "(set --sampling-mean).");
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

/* Five processes get a note each; past five, the first five and one summary line. */
static void test_notes_assumed_summary(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;
	char want[64];

	for (int64_t pid = 1; pid <= 5; pid++)
		sample(t, pid);
	build(t, &n);
	check_codes(&n, "assumed-mean assumed-mean assumed-mean assumed-mean assumed-mean");
	for (size_t i = 0; i < 5; i++) {
		snprintf(want, sizeof(want), "process %zu: ", i + 1);
		check_has(&n, i, want);
	}
	rasp_notes_free(&n);

	sample(t, 6);
	sample(t, 6);
	build(t, &n);
	check_codes(&n, "assumed-mean assumed-mean assumed-mean assumed-mean assumed-mean "
			"assumed-mean");
	check_text(&n, 5,
		   "in all, 6 processes had 7 samples weighed with the assumed mean 102400 "
		   "bytes.");
	rasp_notes_free(&n);
	rasp_tally_destroy(t);

	/* 10^5 processes: still six notes. */
	t = tally(102400);
	for (int64_t pid = 1; pid <= 100000; pid++)
		sample(t, pid);
	build(t, &n);
	assert_int_equal(n.n, 6);
	check_text(&n, 5,
		   "in all, 100000 processes had 100000 samples weighed with the assumed mean "
		   "102400 bytes.");
	rasp_notes_free(&n);
	rasp_tally_destroy(t);
}

static void test_notes_inputs_and_order(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(102400);
	struct rasp_notes n;

	assert_int_equal(rasp_tally_add_warning(t, "stream %s is cut short.", "ch0_0"), 0);
	assert_int_equal(rasp_tally_add_warning(t, "second warning."), 0);
	build(t, &n);
	/* No samples either: the no-samples note comes last. */
	check_codes(&n, "input input no-samples");
	assert_int_equal(n.incomplete, 1);
	check_text(&n, 0, "stream ch0_0 is cut short.");
	check_text(&n, 1, "second warning.");
	rasp_notes_free(&n);

	sample(t, 1);
	rasp_tally_add_skipped(t);
	rasp_tally_add_discarded_events(t, 2, true);
	build(t, &n);
	check_codes(&n, "input input lost-data skipped-events assumed-mean");
	assert_int_equal(n.incomplete, 1);
	assert_int_equal(n.lost_data, 1);
	assert_int_equal(n.assumed_mean, 1);
	rasp_notes_free(&n);
	assert_null(n.v);
	assert_int_equal(n.n, 0);
	rasp_tally_destroy(t);
}

/* By site: samples whose allocating frame lies in no recorded object are counted and named
 * "[no object] 0x...", never a bare address; one in a recorded object is not counted. */
static void test_notes_unplaced_frames(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_SITE, 102400);
	static const uint64_t lost[] = {0x5000123, 0x5000456}, placed[] = {0x7000010, 0x5000456};
	struct rasp_rows rows;
	struct rasp_notes n;

	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	assert_int_equal(rasp_modules_add(&t->modules, 1, 0x7000000, 0x1000, "/opt/app", true), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rasp_tally_add_sample_stack(t, "T", 0, 1, 1, 64, 0, lost, 2), 0);
	assert_int_equal(rasp_tally_add_sample_stack(t, "T", 0, 1, 1, 64, 0, placed, 2), 0);
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, 1, 1, 64, 0), 0); /* no stack */
	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	assert_int_equal(rows.unplaced_samples, 3);
	assert_int_equal(rows.stacked_samples, 4);
	{
		int named = 0;

		for (size_t i = 0; i < rows.nsites; i++) {
			assert_true(strncmp(rows.sites[i], "0x", 2) != 0);
			named += strcmp(rows.sites[i], "[no object] 0x5000123") == 0;
		}
		assert_int_equal(named, 1);
	}
	assert_int_equal(rasp_notes_build(t, &rows, "--sampling-mean", &n), 0);
	check_codes(&n, "unplaced-frames");
	check_has(&n, 0,
		  "3 of the 4 samples with a stack were allocated in code that lies in "
		  "no object the trace recorded");
	check_has(&n, 0, "lttng_ust_statedump:*");
	rasp_notes_free(&n);
	/* From an EventPipe file: the method events (.NET) or rasp's ObjectLoaded (a rasp
	 * program) are what is missing, never a state dump, which a .nettrace cannot hold. */
	assert_int_equal(rasp_tally_declare_mean(t, 1, 102400), 0);
	assert_int_equal(rasp_notes_build(t, &rows, "--sampling-mean", &n), 0);
	check_codes(&n, "unplaced-frames");
	check_has(&n, 0,
		  "3 of the 4 samples with a stack were allocated in code that no method or "
		  "loaded-object event of the input names");
	check_has(&n, 0, "MethodLoadVerbose");
	check_has(&n, 0, "ObjectLoaded");
	check_has(&n, 0, "older rasp");
	check_lacks(&n, 0, "lttng");
	check_lacks(&n, 0, "statedump");
	rasp_notes_free(&n);
	rasp_rows_free(&rows);
	rasp_tally_destroy(t);
}

static void apply(struct rasp_tally *t, enum rasp_role role, uint64_t address, int64_t ns)
{
	struct rasp_event e = {.role = role,
			       .type = "T",
			       .size = 64,
			       .offset = 0,
			       .address = address,
			       .has_address = true,
			       .pid = 1,
			       .tid = 1,
			       .timed = true,
			       .ns = ns};
	const char *field = NULL;
	char why[128];

	assert_int_equal(rasp_event_apply(t, &e, &field, why, sizeof(why)), 0);
}

/* In use: a free whose sample is not in the input (allocated before the recording) is said,
 * with what it means for the figures; a lost free too; a moment past the end; lost events. */
static void test_notes_inuse(void **state)
{
	(void)state;
	struct rasp_tally *t = tally(4096);
	struct rasp_rows rows;
	struct rasp_notes n;

	assert_int_equal(rasp_live_set_moment(t->live, RASP_LIVE_AT, 5.0), 0);
	rasp_live_declare(t->live);
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	apply(t, RASP_ROLE_FREED, 0x9000, 1000); /* allocated before the recording */
	apply(t, RASP_ROLE_SAMPLED, 0x1000, 2000);
	apply(t, RASP_ROLE_SAMPLED, 0x1000, 3000); /* the first one's free was lost */
	apply(t, RASP_ROLE_SAMPLED, 0x2000, 4000);
	apply(t, RASP_ROLE_FREED, 0x2000, 5000);
	assert_int_equal(rasp_rows_build_of(t, 0.95, true, &rows), 0);
	assert_true(rows.live_known);
	assert_int_equal(rows.total.samples, 1);
	assert_int_equal(rasp_notes_build(t, &rows, "--sampling-mean", &n), 0);
	check_codes(&n, "unmatched-frees lost-frees inuse-moment");
	check_has(&n, 0,
		  "1 of 2 frees (Rasp_Runtime:SampledObjectFreed events, or one of a "
		  "SampledObjectsFreed) had no sample live");
	check_has(&n, 0, "allocated before the recording started and still live are in no");
	check_has(&n, 1, "1 sample had no free before another sample came at the same address");
	check_has(&n, 2, "before --at 5 s: the in-use figures are of its end");
	rasp_notes_free(&n);
	rasp_rows_free(&rows);
	/* Lost events may hold frees: the figures may be too high, and the report says so. */
	rasp_tally_add_discarded_events(t, 3, true);
	assert_int_equal(rasp_rows_build_of(t, 0.95, true, &rows), 0);
	assert_int_equal(rasp_notes_build(t, &rows, "--sampling-mean", &n), 0);
	{
		size_t i = 0;

		while (i < n.n && !strstr(n.v[i].text, "frees among them leave their objects"))
			i++;
		if (i == n.n) {
			print_notes(&n);
			fail_msg("no note on lost frees");
		}
		assert_string_equal(n.v[i].code, "lost-frees");
	}
	rasp_notes_free(&n);
	rasp_rows_free(&rows);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_notes_none),
	    cmocka_unit_test(test_notes_no_samples),
	    cmocka_unit_test(test_notes_no_samples_eventpipe),
	    cmocka_unit_test(test_notes_lost_data),
	    cmocka_unit_test(test_notes_skipped),
	    cmocka_unit_test(test_notes_assumed_mean),
	    cmocka_unit_test(test_notes_assumed_summary),
	    cmocka_unit_test(test_notes_inputs_and_order),
	    cmocka_unit_test(test_notes_unplaced_frames),
	    cmocka_unit_test(test_notes_inuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
