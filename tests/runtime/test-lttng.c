/* End to end through a real lttng-sessiond and babeltrace2: a program allocating under a
 * session records exactly the AllocationSampled events the runtime says it fired, with 0
 * discarded, and the free of each (the program frees every object), paired in time order; and in a
 * running process `lttng enable-event` turns sampling on within one allocation context, `lttng
 * disable-event` turns it off, with no restart; a session that enables SamplingConfigured late gets
 * the mean. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "../support/live-samples.h"
#include "lttng-session.h"
#include "rasp/event-meta.h"
#include "rasp/events.h"
#include "rasp/rasp.h"
#include "trace-read.h"

/* The types of rasp-alloc-prog: name, object size, objects allocated per round. */
static const struct {
	const char *name;
	uint64_t z;
	long per_round;
} prog_types[] = {
    /* Names give the object size (header included); small objects report their size
     * class (1016 -> 1024, 20016 -> 20480, 216 -> 224). */
    {"Rasp.Small32", 32, 64},	     {"Rasp.Medium1016", 1024, 8}, {"Rasp.Overflow20016", 20480, 1},
    {"Rasp.Large100016", 100016, 1}, {"Rasp.Pinned216", 224, 2},
};
#define NPROG (sizeof(prog_types) / sizeof(prog_types[0]))

struct counts {
	int64_t vpid; /* count only this process's events; others may share the session */
	long sampled, configured, stopped, bad;
	struct live_samples *pairs; /* frees paired with their samples, when set */
	long by_kind[3];
	long by_type[NPROG];
	uint64_t last_trigger;
	/* SampledObjectsFreed: events, the frees in them, the largest, Ages past the event's
	 * own time (a free before the clock's origin: never). */
	long batches, batch_frees, batch_max, bad_age;
};

/* A SampledObjectsFreed: each free paired as a SampledObjectFreed would be, in array order. */
static void count_batch(struct counts *c, const bt_event *ev, const bt_message *msg)
{
	const bt_field *addrs = rasp_test_event_field(ev, "Addresses");
	const bt_field *sizes = rasp_test_event_field(ev, "ObjectSizes");
	const bt_field *ages = rasp_test_event_field(ev, "Ages");
	uint64_t id, n, addr, size, age, ts = 0;

	if (rasp_test_field_u64(rasp_test_event_field(ev, "ClrInstanceID"), &id) ||
	    rasp_test_field_u64(rasp_test_event_field(ev, "Frees"), &n) || !addrs || !sizes ||
	    !ages || n == 0 || n > 64 || bt_field_array_get_length(addrs) != n ||
	    bt_field_array_get_length(sizes) != n || bt_field_array_get_length(ages) != n) {
		c->bad++;
		return;
	}
	if (msg)
		ts = bt_clock_snapshot_get_value(
		    bt_message_event_borrow_default_clock_snapshot_const(msg));
	c->batches++;
	c->batch_frees += (long)n;
	if ((long)n > c->batch_max)
		c->batch_max = (long)n;
	for (uint64_t i = 0; i < n; i++) {
		if (rasp_test_field_u64(
			bt_field_array_borrow_element_field_by_index_const(addrs, i), &addr) ||
		    rasp_test_field_u64(
			bt_field_array_borrow_element_field_by_index_const(sizes, i), &size) ||
		    rasp_test_field_u64(bt_field_array_borrow_element_field_by_index_const(ages, i),
					&age)) {
			c->bad++;
			continue;
		}
		if (msg && age > ts)
			c->bad_age++;
		live_samples_freed(c->pairs, id, addr, size);
	}
}

static int count_events(const bt_event *ev, void *user)
{
	struct counts *c = user;
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	uint64_t kind, size, off, trig, vpid;

	if (c->vpid && (rasp_test_field_u64(rasp_test_event_context(ev, "vpid"), &vpid) ||
			(int64_t)vpid != c->vpid))
		return 0;

	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) == 0) {
		c->sampled++;
		if (rasp_test_field_u64(rasp_test_event_field(ev, "AllocationKind"), &kind) ||
		    rasp_test_field_u64(rasp_test_event_field(ev, "ObjectSize"), &size) ||
		    rasp_test_field_u64(rasp_test_event_field(ev, "SampledByteOffset"), &off) ||
		    kind > 2 || off >= size || size % 8) {
			c->bad++;
			return 0;
		}
		c->by_kind[kind]++;
		if (c->pairs) {
			uint64_t id, addr;

			if (rasp_test_field_u64(rasp_test_event_field(ev, "ClrInstanceID"), &id) ||
			    rasp_test_field_u64(rasp_test_event_field(ev, "Address"), &addr))
				c->bad++;
			else
				live_samples_sampled(c->pairs, id, addr, size);
		}
		name = bt_field_string_get_value(rasp_test_event_field(ev, "TypeName"));
		for (size_t i = 0; i < NPROG; i++)
			if (strcmp(name, prog_types[i].name) == 0 && size == prog_types[i].z)
				c->by_type[i]++;
	} else if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG) == 0) {
		c->configured++;
		if (rasp_test_field_u64(rasp_test_event_field(ev, "Trigger"), &trig) == 0)
			c->last_trigger = trig;
	} else if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGSTOPPED_LTTNG) == 0) {
		c->stopped++;
	} else if (c->pairs &&
		   strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_LTTNG) == 0) {
		uint64_t id, addr;

		if (rasp_test_field_u64(rasp_test_event_field(ev, "ClrInstanceID"), &id) ||
		    rasp_test_field_u64(rasp_test_event_field(ev, "Address"), &addr) ||
		    rasp_test_field_u64(rasp_test_event_field(ev, "ObjectSize"), &size))
			c->bad++;
		else
			live_samples_freed(c->pairs, id, addr, size);
	} else if (c->pairs &&
		   strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG) == 0) {
		count_batch(c, ev, NULL);
	} else if (c->pairs && strcmp(name, RASP_EVENT_RASP_RUNTIME_HEAPDESTROYED_LTTNG) == 0) {
		uint64_t id;

		if (rasp_test_field_u64(rasp_test_event_field(ev, "ClrInstanceID"), &id))
			c->bad++;
		else
			live_samples_destroyed(c->pairs, id);
	}
	return 0;
}

/* The sessions of the running test, destroyed by teardown even when an assertion fails. */
static struct rasp_test_session sess, sess2;

static int setup(void **state)
{
	(void)state;
	memset(&sess, 0, sizeof(sess));
	memset(&sess2, 0, sizeof(sess2));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rasp_test_session_destroy(&sess, 0);
	rasp_test_session_destroy(&sess2, 0);
	return 0;
}

/* The program's events as recorded, with the frees as free_event: one SampledObjectFreed a
 * free, or SampledObjectsFreed (kept per thread, many frees an event). */
static void recorded_events_equal_emitted(const char *free_event, struct counts *cp)
{
	const char *events[] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
				RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG,
				RASP_EVENT_RASP_RUNTIME_SAMPLINGSTOPPED_LTTNG,
				free_event,
				RASP_EVENT_RASP_RUNTIME_HEAPDESTROYED_LTTNG,
				NULL};
	const char *argv[] = {rasp_test_build_path("bin/rasp-alloc-prog"), "3000", NULL};
	const char *env[] = {"RASP_SAMPLING=auto", "RASP_SAMPLING_MEAN=16384", "RASP_SEED=7", NULL};
	struct rasp_test_session *s = &sess;
	struct live_samples pairs;
	struct counts c = {0};
	unsigned long long samples = 0, starts = 0;
	long pid = 0;
	char out[8192];
	const char *line;
	int status;

	assert_int_equal(rasp_test_session_start(s, events), 0);
	status = rasp_test_run(out, sizeof(out), argv, env);
	assert_int_equal(rasp_test_session_stop(s), 0);
	if (status != 0)
		fail_msg("rasp-alloc-prog failed (%d): %s", status, out);
	line = strstr(out, "samples=");
	assert_non_null(line);
	assert_int_equal(sscanf(line, "samples=%llu starts=%llu pid=%ld", &samples, &starts, &pid),
			 3);
	c.vpid = pid;
	assert_int_equal(live_samples_init(&pairs), 0);
	c.pairs = &pairs;
	assert_int_equal(rasp_test_session_discarded(s), 0);
	assert_true(rasp_test_trace_foreach(s->dir, count_events, &c, NULL) > 0);
	/* Every object was freed: each sample's free once, after it, with its ObjectSize, and
	 * before its address was sampled again; then the heap's destruction, ending none. */
	printf("%ld samples, %llu frees\n", c.sampled, (unsigned long long)pairs.freed);
	assert_int_equal(pairs.freed, (uint64_t)samples);
	assert_int_equal(pairs.free_unpaired + pairs.free_bad_size + pairs.sample_over_live, 0);
	assert_int_equal(pairs.destroyed, 1);
	assert_int_equal(pairs.ended_by_destroy, 0);
	assert_int_equal(live_samples_live(&pairs), 0);
	live_samples_fini(&pairs);

	assert_int_equal(c.bad, 0);
	assert_true(samples > 1000);
	assert_int_equal(c.sampled, (long)samples);
	assert_int_equal(starts, 1);
	/* The announcement, and its confirmation RASP__LTTNG_CONFIRM_NS later if the program
	 * (one thread) allocated that long: never more. */
	assert_true(c.configured >= 1 && c.configured <= 2);
	assert_int_equal(c.last_trigger, RASP_MAP_SAMPLINGTRIGGERMAP_SESSION);
	assert_int_equal(c.stopped, 1); /* heap destroy */
	assert_true(c.by_kind[0] > 0 && c.by_kind[1] > 0 && c.by_kind[2] > 0);
	/* Per type, the recorded samples match sum(1 - q^z) within 4 standard errors. */
	for (size_t i = 0; i < NPROG; i++) {
		double n = 3000.0 * (double)prog_types[i].per_round;
		double ps = -expm1((double)prog_types[i].z * log1p(-1.0 / 16384.0));
		double exp = n * ps, se = sqrt(n * ps * (1 - ps));

		if (fabs((double)c.by_type[i] - exp) > 4 * se)
			fail_msg("%s: %ld samples recorded, expected %.1f +- %.1f",
				 prog_types[i].name, c.by_type[i], exp, se);
	}
	*cp = c;
}

static void test_recorded_events_equal_emitted(void **state)
{
	struct counts c;

	(void)state;
	recorded_events_equal_emitted(RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_LTTNG, &c);
	assert_int_equal(c.batches, 0);
}

/* The same with the frees kept per thread: every sample freed once, after it and before its
 * address is sampled again (the kept block is not reused before its event), in events of up
 * to 64 frees (each round of the program frees a large object, whose free sends the batch:
 * about 22 frees an event, seed 7). */
static void test_batched_frees_equal_emitted(void **state)
{
	struct counts c;

	(void)state;
	recorded_events_equal_emitted(RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG, &c);
	printf("%ld batches of %ld frees, largest %ld\n", c.batches, c.batch_frees, c.batch_max);
	assert_true(c.batches > 0);
	assert_true(c.batch_max > 1 && c.batch_max <= 64);
	assert_true(c.batch_frees > 4 * c.batches);
	assert_int_equal(c.bad_age, 0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Allocates `bytes` in 1000-byte objects (freed at once). */
static void churn(rasp_heap_t *h, const rasp_type_t *t, size_t bytes)
{
	size_t done;

	for (done = 0; done < bytes; done += 1024) /* ObjectSize: its class, 1024 */
		rasp_free(h, rasp_alloc(h, t, 1000, 0));
}

/* `lttng enable-event` or `disable-event` (verb) of one event in the test's session. */
static void session_event(struct rasp_test_session *s, const char *verb, const char *event)
{
	const char *argv[] = {verb, "-u", "-s", s->name, "-c", "ch0", event, NULL};
	char out[4096];

	if (rasp_test_lttng(out, sizeof(out), argv) != 0)
		fail_msg("lttng %s %s: %s", verb, event, out);
}

static uint64_t samples_of(rasp_heap_t *h)
{
	rasp_heap_stats_t st;

	rasp_heap_stats(h, &st);
	return st.samples;
}

static void test_enable_event_on_running_process(void **state)
{
	const char *events[] = {RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG, NULL};
	struct rasp_test_session *s = &sess;
	struct counts c = {0};
	rasp_config_t cfg;
	rasp_heap_t *h;
	const rasp_type_t *t;
	uint64_t at_stop, at_start;
	double t0;

	(void)state;
	rasp_config_init(&cfg); /* auto: on while a session enables AllocationSampled */
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	t = rasp_type_register(h, "Rasp.Live");
	assert_int_equal(rasp_test_session_start(s, events), 0);

	/* The tracepoint state of this process follows every session of the daemon: wait
	 * until no session (an earlier test's, being torn down) enables the event. */
	for (t0 = now(); rasp_heap_sampling_active(h) && now() - t0 < 10;)
		churn(h, t, 64 << 10);
	assert_int_equal(rasp_heap_sampling_active(h), 0);
	churn(h, t, 16 << 10);
	at_start = samples_of(h);
	churn(h, t, 8 << 20);
	assert_int_equal(samples_of(h), at_start);

	session_event(s, "enable-event", RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG);
	for (t0 = now(); !rasp_heap_sampling_active(h) && now() - t0 < 10;)
		churn(h, t, 64 << 10);
	assert_int_equal(rasp_heap_sampling_active(h), 1);
	/* Sampling starts at the next refill: within 8 KiB, then ~1 sample per 100 KiB. */
	churn(h, t, 20 << 20);
	assert_true(samples_of(h) - at_start > 50);

	session_event(s, "disable-event", RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG);
	for (t0 = now(); rasp_heap_sampling_active(h) && now() - t0 < 10;)
		churn(h, t, 64 << 10);
	assert_int_equal(rasp_heap_sampling_active(h), 0);
	churn(h, t, 16 << 10); /* past one allocation context */
	at_stop = samples_of(h);
	churn(h, t, 20 << 20);
	assert_int_equal(samples_of(h), at_stop);

	assert_int_equal(rasp_test_session_stop(s), 0);
	assert_int_equal(rasp_test_session_discarded(s), 0);
	c.vpid = getpid(); /* the session records every process of the machine that samples */
	assert_true(rasp_test_trace_foreach(s->dir, count_events, &c, NULL) > 0);
	assert_int_equal(c.bad, 0);
	/* Every sample fired while the tracepoint was enabled is recorded. After disable-event
	 * the thread samples on until its next state check (within a quantum, 8 KiB, of
	 * allocation: under 10% odds of a sample at the default mean): such a sample is counted but
	 * finds the tracepoint off. Two would be ~0.3%; more, a thread that missed its check. */
	printf("fired %llu, recorded %ld\n", (unsigned long long)(at_stop - at_start), c.sampled);
	assert_true(c.sampled <= (long)(at_stop - at_start));
	assert_true(c.sampled >= (long)(at_stop - at_start) - 2);
	assert_true(c.configured >= 1);
	assert_int_equal(c.last_trigger, RASP_MAP_SAMPLINGTRIGGERMAP_SESSION);
	rasp_heap_destroy(h);
}

static void nap(void)
{
	struct timespec ts = {0, 10 * 1000 * 1000};

	nanosleep(&ts, NULL);
}

/* A session that enables SamplingConfigured after sampling started (forced on, so sampling
 * never waited for it) still gets the mean: the thread announces again at its next state
 * check, within a quantum of allocation. The check compares the event states it saw last
 * (runtime/internal.h); without SamplingConfigured's among them no announcement came. */
static void test_late_listener_gets_the_mean(void **state)
{
	const char *events[] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG, NULL};
	struct rasp_test_session *s = &sess;
	struct counts c = {0};
	rasp_config_t cfg;
	rasp_heap_t *h;
	const rasp_type_t *t;
	double t0;

	(void)state;
	assert_int_equal(rasp_test_session_start(s, events), 0);
	/* No session (an earlier test's, being torn down) enables SamplingConfigured. */
	for (t0 = now(); rasp_event_sampling_configured_enabled() && now() - t0 < 10;)
		nap();
	assert_false(rasp_event_sampling_configured_enabled());
	rasp_config_init(&cfg);
	cfg.sampling = RASP_SAMPLING_ON;
	assert_int_equal(rasp_heap_create(&h, &cfg), 0);
	t = rasp_type_register(h, "Rasp.Late");
	churn(h, t, 1 << 20); /* sampling, announced to no one */

	session_event(s, "enable-event", RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG);
	for (t0 = now(); !rasp_event_sampling_configured_enabled() && now() - t0 < 10;)
		nap();
	assert_true(rasp_event_sampling_configured_enabled());
	churn(h, t, 1 << 20); /* past a quantum: the state check */
	assert_int_equal(rasp_test_session_stop(s), 0);
	c.vpid = getpid();
	assert_true(rasp_test_trace_foreach(s->dir, count_events, &c, NULL) > 0);
	printf("samples %ld, announcements %ld\n", c.sampled, c.configured);
	assert_true(c.sampled > 0);
	/* The announcement, and its confirmation if the churn took 100 ms. */
	assert_true(c.configured >= 1 && c.configured <= 2);
	assert_int_equal(c.last_trigger, RASP_MAP_SAMPLINGTRIGGERMAP_FORCED);
	rasp_heap_destroy(h);
}

/* Per thread, the mean the consumer weighs a sample with: the thread's last SamplingConfigured,
 * else its process's. At mean 1 every byte's trial succeeds, so a sample weighed with mean 1
 * must have offset 0; at 2^30 offset 0 is a 1-in-~150 event. A sample drawn under 2^30 and
 * weighed with 1 (or the reverse) shows at once. */
#define FLIP_MAX_THREADS 4096
struct flips {
	int64_t vpid;
	int64_t tid[FLIP_MAX_THREADS];
	uint64_t mean[FLIP_MAX_THREADS];
	size_t ntid;
	uint64_t proc_mean;
	long at1, at1_bad, at30, at30_zero, unattributed;
};

static int flip_events(const bt_event *ev, void *user)
{
	struct flips *f = user;
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	uint64_t vpid, vtid, v, off;
	size_t i;

	if (rasp_test_field_u64(rasp_test_event_context(ev, "vpid"), &vpid) ||
	    (int64_t)vpid != f->vpid ||
	    rasp_test_field_u64(rasp_test_event_context(ev, "vtid"), &vtid))
		return 0;
	for (i = 0; i < f->ntid && f->tid[i] != (int64_t)vtid; i++)
		;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG) == 0) {
		if (rasp_test_field_u64(rasp_test_event_field(ev, "SamplingMean"), &v))
			return 1;
		if (i == f->ntid && f->ntid < FLIP_MAX_THREADS)
			f->tid[f->ntid++] = (int64_t)vtid;
		if (i < FLIP_MAX_THREADS)
			f->mean[i] = v;
		f->proc_mean = v;
	} else if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) == 0) {
		uint64_t m = i < f->ntid ? f->mean[i] : f->proc_mean;

		if (rasp_test_field_u64(rasp_test_event_field(ev, "SampledByteOffset"), &off))
			return 1;
		if (m == 1) {
			f->at1++;
			f->at1_bad += off != 0;
		} else if (m == UINT64_C(1) << 30) {
			f->at30++;
			f->at30_zero += off == 0;
		} else {
			f->unattributed++;
		}
	}
	return 0;
}

static void test_mean_flips_weigh_each_sample_with_its_mean(void **state)
{
	const char *events[] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
				RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG, NULL};
	const char *argv[] = {rasp_test_build_path("bin/rasp-flip-prog"), "4", "60", NULL};
	struct flips *f = calloc(1, sizeof(*f));
	struct rasp_test_session *s = &sess;
	char out[4096];
	const char *line;
	long pid;

	(void)state;
	assert_non_null(f);
	assert_int_equal(rasp_test_session_start(s, events), 0);
	assert_int_equal(rasp_test_run(out, sizeof(out), argv, NULL), 0);
	assert_int_equal(rasp_test_session_stop(s), 0);
	line = strstr(out, "pid=");
	assert_non_null(line);
	assert_int_equal(sscanf(line, "pid=%ld", &pid), 1);
	f->vpid = pid;
	assert_true(rasp_test_trace_foreach(s->dir, flip_events, f, NULL) > 0);
	printf("weighed at mean 1: %ld samples (%ld not at offset 0); at 2^30: %ld (%ld at "
	       "offset 0); no mean: %ld; %zu threads announced\n",
	       f->at1, f->at1_bad, f->at30, f->at30_zero, f->unattributed, f->ntid);
	assert_true(f->at1 > 1000);
	assert_int_equal(f->unattributed, 0);
	assert_int_equal(f->at1_bad, 0);
	/* Genuine 2^30 samples are few, and one in ~150 has offset 0. */
	assert_true(f->at30_zero <= 2 + f->at30 / 10);
	free(f);
}

/* Runs rasp-alloc-prog (seeded) under session s and returns its pid. */
static long alloc_prog_under(struct rasp_test_session *s, const char *const *events)
{
	const char *argv[] = {rasp_test_build_path("bin/rasp-alloc-prog"), "1000", NULL};
	const char *env[] = {"RASP_SAMPLING=auto", "RASP_SAMPLING_MEAN=16384", "RASP_SEED=7", NULL};
	char out[8192];
	const char *line;
	long pid = 0;
	int status;

	assert_int_equal(rasp_test_session_start(s, events), 0);
	status = rasp_test_run(out, sizeof(out), argv, env);
	assert_int_equal(rasp_test_session_stop(s), 0);
	if (status != 0)
		fail_msg("rasp-alloc-prog failed (%d): %s", status, out);
	line = strstr(out, " pid=");
	assert_non_null(line);
	assert_int_equal(sscanf(line, " pid=%ld", &pid), 1);
	assert_int_equal(rasp_test_session_discarded(s), 0);
	return pid;
}

/* `rasp report --group-by type,process --format csv` of a trace: the rows of process pid, each
 * without its process and share columns (the share is of every process's total: another
 * process may sample into the session), one a line. */
static void report_rows(const struct rasp_test_session *s, long pid, char *rows, size_t cap)
{
	const char *argv[] = {rasp_test_build_path("bin/rasp"),
			      "report",
			      "--group-by",
			      "type,process",
			      "--format",
			      "csv",
			      s->dir,
			      NULL};
	static char out[1 << 16];
	char want[32];
	size_t used = 0;
	int status = rasp_test_run(out, sizeof(out), argv, NULL);

	if (status != 0)
		fail_msg("rasp report failed (%d): %s", status, out);
	snprintf(want, sizeof(want), ",%ld,", pid);
	rows[0] = '\0';
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char *f[16];
		int n = 0;

		if (!strstr(line, want))
			continue;
		for (char *p = line; n < 16; p++) {
			f[n++] = p;
			if (!(p = strchr(p, ',')))
				break;
			*p = '\0';
		}
		assert_true(n == 13); /* scope,type,process,...,share,model_mismatch,process_name */
		used +=
		    (size_t)snprintf(rows + used, cap - used, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
				     f[0], f[1], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[11]);
		assert_true(used < cap);
	}
}

/* The consumer, which does not read the frees of sampled objects yet, reports a trace that has
 * them exactly as one without: the same seeded program recorded twice, with and without
 * Rasp_Runtime's lifetime events, gives the same rows. */
static void test_report_unchanged_by_frees(void **state)
{
	const char *without[] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
				 RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG,
				 RASP_EVENT_RASP_RUNTIME_SAMPLINGSTOPPED_LTTNG, NULL};
	const char *with[] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG,
			      RASP_PROVIDER_RASP_RUNTIME_LTTNG ":*", NULL};
	static char a[1 << 14], b[1 << 14];
	struct live_samples pairs;
	struct counts c = {0};
	long pa, pb;

	(void)state;
	pa = alloc_prog_under(&sess, without);
	pb = alloc_prog_under(&sess2, with);
	c.vpid = pb;
	assert_int_equal(live_samples_init(&pairs), 0);
	c.pairs = &pairs;
	assert_true(rasp_test_trace_foreach(sess2.dir, count_events, &c, NULL) > 0);
	printf("with the lifetime events: %ld samples, %llu frees\n", c.sampled,
	       (unsigned long long)pairs.freed);
	assert_true(c.sampled > 100);
	assert_int_equal(pairs.freed, (uint64_t)c.sampled);
	live_samples_fini(&pairs);
	report_rows(&sess, pa, a, sizeof(a));
	report_rows(&sess2, pb, b, sizeof(b));
	printf("%s", b);
	assert_true(strlen(a) > 0);
	assert_string_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_mean_flips_weigh_each_sample_with_its_mean, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_recorded_events_equal_emitted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_batched_frees_equal_emitted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_enable_event_on_running_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_listener_gets_the_mean, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_unchanged_by_frees, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
