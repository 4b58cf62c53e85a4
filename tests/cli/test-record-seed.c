/* rasp record --seed reproduces the samples (cli/cmd-record.c sets RASP_SEED; runtime/sample.c
 * and context.c decide the draws): two recordings of rasp-test-seed-prog with the same seed,
 * through the real session daemon, read back with babeltrace2, hold the same samples (type,
 * kind, ObjectSize, SampledByteOffset, in the order each thread drew them), with one thread and
 * with two whose allocation orders are fixed per thread. Each recording must include every
 * thread's second announcement of its mean to the new LTTng listener (sample.c), which came
 * at a point that depends on the clock and redrew the thread's budgets there; the program's
 * allocation count doubles until it does. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lttng-session.h"
#include "rasp/event-meta.h"
#include "trace-read.h"

#define OUT	    65536
#define MAX_THREADS 2
/* Allocations per thread to begin with (about 0.5 s here, where each thread's second
 * announcement comes after 0.1 s; a sanitized build runs 5-10 times slower, so fewer do), and
 * how many times the count may double. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SEED_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SEED_SANITIZED 1
#endif
#endif
#ifdef SEED_SANITIZED
#define FIRST_COUNT 4000000UL
#define DOUBLINGS   5
#else
#define FIRST_COUNT 20000000UL
#define DOUBLINGS   3
#endif

static char work[4096];

struct sample {
	uint64_t kind, size, offset;
	uint64_t type; /* 0 Small, 1 Medium, 2 Large (no padding: compared whole) */
};

struct seq {
	struct sample *s;
	size_t n, cap;
	int64_t vtid; /* -1 until a sample names the thread */
};

struct trace {
	struct seq t[MAX_THREADS];
	/* SamplingConfigured per vtid seen (few threads: a short table). */
	int64_t vtids[16];
	long configured[16];
	int nvtid;
	long bad;
};

static const char *in_work(const char *name)
{
	static char paths[8][4200];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", work, name);
	return p;
}

static int setup(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};
	const char *mk[] = {"/bin/mkdir", "-p", work, NULL};

	(void)state;
	snprintf(work, sizeof(work), "%s/test-traces/seed-%ld", RASP_TEST_BUILD_DIR,
		 (long)getpid());
	rasp_test_run(NULL, 0, rm, NULL);
	return rasp_test_run(NULL, 0, mk, NULL);
}

static int teardown(void **state)
{
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};

	(void)state;
	rasp_test_run(NULL, 0, rm, NULL);
	return 0;
}

static long *configured_of(struct trace *t, int64_t vtid)
{
	for (int i = 0; i < t->nvtid; i++)
		if (t->vtids[i] == vtid)
			return &t->configured[i];
	if (t->nvtid == 16)
		return NULL;
	t->vtids[t->nvtid] = vtid;
	t->configured[t->nvtid] = 0;
	return &t->configured[t->nvtid++];
}

static int on_event(const bt_event *ev, void *user)
{
	struct trace *t = user;
	const char *name = bt_event_class_get_name(bt_event_borrow_class_const(ev));
	const bt_field *tf;
	struct sample s;
	unsigned thread;
	uint64_t vtid;
	char kind_name[16];
	long *conf;

	if (rasp_test_field_u64(rasp_test_event_context(ev, "vtid"), &vtid)) {
		t->bad++;
		return 0;
	}
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG) == 0) {
		conf = configured_of(t, (int64_t)vtid);
		if (conf)
			(*conf)++;
		else
			t->bad++;
		return 0;
	}
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) != 0)
		return 0;
	tf = rasp_test_event_field(ev, "TypeName");
	if (!tf || rasp_test_field_u64(rasp_test_event_field(ev, "AllocationKind"), &s.kind) ||
	    rasp_test_field_u64(rasp_test_event_field(ev, "ObjectSize"), &s.size) ||
	    rasp_test_field_u64(rasp_test_event_field(ev, "SampledByteOffset"), &s.offset) ||
	    sscanf(bt_field_string_get_value(tf), "Seed.T%u.%15s", &thread, kind_name) != 2 ||
	    thread >= MAX_THREADS) {
		t->bad++;
		return 0;
	}
	s.type = strcmp(kind_name, "Small") == 0 ? 0 : strcmp(kind_name, "Medium") == 0 ? 1 : 2;
	struct seq *q = &t->t[thread];

	if (q->vtid < 0)
		q->vtid = (int64_t)vtid;
	else if (q->vtid != (int64_t)vtid)
		t->bad++; /* one thread's types from two threads: the program is not what it says */
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 4096;
		q->s = realloc(q->s, q->cap * sizeof(*q->s));
		assert_non_null(q->s);
	}
	q->s[q->n++] = s;
	return 0;
}

static void trace_free(struct trace *t)
{
	for (int i = 0; i < MAX_THREADS; i++)
		free(t->t[i].s);
	memset(t, 0, sizeof(*t));
}

/* rasp record --seed SEED of the program (THREADS, COUNT) into work/NAME, read back. */
static void record(struct trace *t, const char *name, const char *seed, unsigned threads,
		   unsigned long count)
{
	static char out[OUT];
	char nthreads[16], ncount[32];
	const char *dir = in_work(name);
	const char *rm[] = {"/bin/rm", "-rf", dir, NULL};
	const char *argv[] = {rasp_test_build_path("bin/rasp"),
			      "record",
			      "-o",
			      dir,
			      "--mean",
			      "1M",
			      "--seed",
			      seed,
			      "--no-stacks",
			      "--",
			      rasp_test_build_path("bin/rasp-test-seed-prog"),
			      nthreads,
			      ncount,
			      NULL};
	uint64_t discarded = 0;
	int rc;

	snprintf(nthreads, sizeof(nthreads), "%u", threads);
	snprintf(ncount, sizeof(ncount), "%lu", count);
	rasp_test_run(NULL, 0, rm, NULL);
	rc = rasp_test_run(out, sizeof(out), argv, NULL);
	if (rc != 0)
		fail_msg("rasp record --seed %s (%u threads, %lu allocations) failed (%d):\n%s",
			 seed, threads, count, rc, out);
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < MAX_THREADS; i++)
		t->t[i].vtid = -1;
	if (rasp_test_trace_foreach(dir, on_event, t, &discarded) <= 0)
		fail_msg("%s: no events read", dir);
	if (discarded)
		fail_msg("%s: %" PRIu64 " events discarded: the samples cannot be compared", dir,
			 discarded);
	assert_int_equal(t->bad, 0);
	for (unsigned i = 0; i < threads; i++) {
		/* About 1050 bytes an allocation at mean 1 MiB: count / 1000 samples a thread
		 * (a quarter of that means a broken run). */
		if (t->t[i].n < count / 4000)
			fail_msg("%s: thread %u has %zu samples", dir, i, t->t[i].n);
	}
	for (unsigned i = threads; i < MAX_THREADS; i++)
		assert_int_equal(t->t[i].n, 0);
}

/* Every thread announced its mean at least twice: at its start, and again to the listener
 * that was new then (RASP__LTTNG_CONFIRM_NS later), while it still allocated. */
static bool reannounced(struct trace *t, unsigned threads)
{
	for (unsigned i = 0; i < threads; i++) {
		long *conf = configured_of(t, t->t[i].vtid);

		if (!conf || *conf < 2)
			return false;
	}
	return true;
}

static void expect_same(const struct trace *a, const struct trace *b, unsigned threads,
			const char *what)
{
	for (unsigned i = 0; i < threads; i++) {
		const struct seq *p = &a->t[i], *q = &b->t[i];
		size_t n = p->n < q->n ? p->n : q->n, k;

		for (k = 0; k < n; k++)
			if (memcmp(&p->s[k], &q->s[k], sizeof(p->s[k])) != 0)
				break;
		if (k < n || p->n != q->n) {
			if (k < n)
				fail_msg(
				    "%s, thread %u: sample %zu of %zu/%zu differs: type %" PRIu64
				    " kind "
				    "%" PRIu64 " size %" PRIu64 " offset %" PRIu64
				    " against type %" PRIu64 " kind %" PRIu64 " size %" PRIu64
				    " offset %" PRIu64,
				    what, i, k, p->n, q->n, p->s[k].type, p->s[k].kind,
				    p->s[k].size, p->s[k].offset, q->s[k].type, q->s[k].kind,
				    q->s[k].size, q->s[k].offset);
			fail_msg("%s, thread %u: %zu samples against %zu, the first %zu the same",
				 what, i, p->n, q->n, n);
		}
	}
}

/* Two recordings at one seed, the count doubled until both include every thread's second
 * announcement; their samples, per thread, the same. */
static void check_repeats(unsigned threads)
{
	struct trace a, b;
	unsigned long count = FIRST_COUNT;
	char what[96];

	for (int d = 0;; d++, count *= 2) {
		record(&a, "a", "7", threads, count);
		record(&b, "b", "7", threads, count);
		snprintf(what, sizeof(what), "seed 7, %u thread(s), %lu allocations each", threads,
			 count);
		expect_same(&a, &b, threads, what);
		if (reannounced(&a, threads) && reannounced(&b, threads))
			break;
		trace_free(&a);
		trace_free(&b);
		if (d == DOUBLINGS)
			fail_msg("%u thread(s) of %lu allocations never announced twice: the "
				 "re-announcement was not exercised",
				 threads, count);
		fprintf(stderr, "%s: a thread ended before its second announcement; again\n", what);
	}
	fprintf(stderr, "%s: per thread %zu", what, a.t[0].n);
	for (unsigned i = 1; i < threads; i++)
		fprintf(stderr, ", %zu", a.t[i].n);
	fprintf(stderr, " samples, the same in both recordings\n");
	trace_free(&a);
	trace_free(&b);
}

static void test_one_thread_repeats(void **state)
{
	(void)state;
	check_repeats(1);
}

static void test_two_threads_repeat_per_thread(void **state)
{
	(void)state;
	check_repeats(2);
}

/* The seed decides the samples: another seed gives others. */
static void test_another_seed_differs(void **state)
{
	struct trace a, b;
	bool same;

	(void)state;
	record(&a, "a", "7", 1, FIRST_COUNT / 8);
	record(&b, "b", "8", 1, FIRST_COUNT / 8);
	same = a.t[0].n == b.t[0].n;
	for (size_t k = 0; same && k < a.t[0].n; k++)
		same = memcmp(&a.t[0].s[k], &b.t[0].s[k], sizeof(a.t[0].s[k])) == 0;
	assert_false(same);
	trace_free(&a);
	trace_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_thread_repeats),
	    cmocka_unit_test(test_two_threads_repeat_per_thread),
	    cmocka_unit_test(test_another_seed_differs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
