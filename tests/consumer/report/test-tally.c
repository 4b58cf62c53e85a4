/* Unit tests of consumer/report/tally.c: which sampling mean weighs a sample (the thread's last
 * SamplingConfigured, else the process's, else the default, then counted as assumed), cells
 * keyed per group and mean for every group-by key, the "NULL" type, refused samples that count
 * nothing, ticks, lost data, warnings kept once, the cell index rebuilt after rows_build sorted
 * the cells, and 10^5 processes, types and threads (behaviour only; nothing is timed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/rows.h"
#include "report/tally.h"

#define UNK RASP_ID_UNKNOWN

/* Type index + 1 of name, 0 when the tally has no such type. */
static uint32_t type_key(const struct rasp_tally *t, const char *name)
{
	for (size_t i = 0; i < t->ntypes; i++)
		if (strcmp(rasp_tally_type_name(t, i), name) == 0)
			return (uint32_t)(i + 1);
	return 0;
}

/* The cell of these keys and mean, NULL if none; more than one is a failure. */
static const struct rasp_tally_cell *cell_at(const struct rasp_tally *t, uint32_t type,
					     uint32_t kind, int64_t process, int64_t thread,
					     double mean)
{
	const struct rasp_tally_cell *found = NULL;

	for (size_t i = 0; i < t->ncells; i++) {
		const struct rasp_tally_cell *c = &t->cells[i];

		if (c->type == type && c->kind == kind && c->process == process &&
		    c->thread == thread && c->est.p == 1.0 / mean) {
			if (found) {
				printf("two cells for type %" PRIu32 " kind %" PRIu32
				       " process %" PRId64 " thread %" PRId64 " mean %g\n",
				       type, kind, process, thread, mean);
				fail();
			}
			found = c;
		}
	}
	return found;
}

/* Samples in the cell of these keys and mean (0 when there is no such cell). */
static uint64_t samples_at(const struct rasp_tally *t, const char *type, int64_t process,
			   int64_t thread, double mean)
{
	const struct rasp_tally_cell *c =
	    cell_at(t, type ? type_key(t, type) : 0, 0, process, thread, mean);

	return c ? c->est.samples : 0;
}

static void check_samples(const struct rasp_tally *t, const char *type, int64_t process,
			  int64_t thread, double mean, uint64_t want)
{
	uint64_t got = samples_at(t, type, process, thread, mean);

	if (got != want) {
		printf("cell type %s process %" PRId64 " thread %" PRId64 " mean %g: %" PRIu64
		       " samples, want %" PRIu64 "\n",
		       type ? type : "-", process, thread, mean, got, want);
		fail();
	}
}

static const struct rasp_tally_process *proc(const struct rasp_tally *t, int64_t pid)
{
	const struct rasp_tally_process *p = rasp_tally_find_process(t, pid);

	if (!p) {
		printf("process %" PRId64 " not in the tally\n", pid);
		fail();
	}
	assert_int_equal(p->pid, pid);
	return p;
}

static void check_process(const struct rasp_tally *t, int64_t pid, uint64_t samples,
			  uint64_t assumed, double low, double high)
{
	const struct rasp_tally_process *p = proc(t, pid);

	if (p->samples != samples || p->samples_assumed != assumed || p->mean_low != low ||
	    p->mean_high != high) {
		printf("process %" PRId64 ": %" PRIu64 " samples, %" PRIu64
		       " assumed, means %g..%g; want %" PRIu64 ", %" PRIu64 ", %g..%g\n",
		       pid, p->samples, p->samples_assumed, p->mean_low, p->mean_high, samples,
		       assumed, low, high);
		fail();
	}
}

static void test_tally_create_bad(void **state)
{
	(void)state;
	struct rasp_tally *t;

	assert_null(rasp_tally_create(RASP_GROUP_TYPE, 0.5));
	assert_null(rasp_tally_create(RASP_GROUP_TYPE, 0));
	assert_null(rasp_tally_create(RASP_GROUP_TYPE, NAN));
	assert_null(rasp_tally_create(RASP_GROUP_TYPE, INFINITY));
	assert_null(rasp_tally_create((RASP_GROUP_ALL | RASP_GROUP_WHERE) + 1, 4096));
	assert_null(rasp_tally_create(1u << 6, 4096));
	t = rasp_tally_create(RASP_GROUP_TYPE | RASP_GROUP_STACK, 4096);
	assert_non_null(t);
	assert_int_equal(t->group_by, RASP_GROUP_TYPE | RASP_GROUP_STACK);
	rasp_tally_destroy(t);
	t = rasp_tally_create(0, 1.0);
	assert_non_null(t);
	assert_int_equal(t->group_by, 0);
	assert_true(t->default_mean == 1.0);
	rasp_tally_destroy(t);
	t = rasp_tally_create(RASP_GROUP_ALL, RASP_DEFAULT_SAMPLING_MEAN);
	assert_non_null(t);
	rasp_tally_destroy(t);
	rasp_tally_destroy(NULL);
}

/* The mean of a sample of (pid, tid): the thread's last announced, else the process's last,
 * else the default (and then the sample counts as assumed). */
static void test_tally_thread_means(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean(t, 1, 10, 4096), 0);
	assert_int_equal(t->configured, 1);
	assert_int_equal(t->ntmeans, 1);
	assert_true(proc(t, 1)->mean == 4096);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 10, 100, 0), 0);
	/* Thread 11 announced nothing: its process's mean. */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 11, 100, 0), 0);
	check_samples(t, "A", 0, 0, 4096, 2);

	assert_int_equal(rasp_tally_set_mean(t, 1, 11, 8192), 0);
	assert_true(proc(t, 1)->mean == 8192);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 10, 100, 0), 0);  /* its own 4096 */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 11, 100, 0), 0);  /* 8192 */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 12, 100, 0), 0);  /* process's */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, UNK, 100, 0), 0); /* process's */
	check_samples(t, "A", 0, 0, 4096, 3);
	check_samples(t, "A", 0, 0, 8192, 3);

	/* A process-wide announcement (no thread) changes the process's mean, not the threads'
	 * own. */
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 16384), 0);
	assert_int_equal(t->ntmeans, 2);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 10, 100, 0), 0); /* 4096 */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 13, 100, 0), 0); /* 16384 */
	check_samples(t, "A", 0, 0, 4096, 4);
	check_samples(t, "A", 0, 0, 16384, 1);

	/* The same tid in another process is another thread. */
	assert_int_equal(rasp_tally_set_mean(t, 3, 10, 2048), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 3, 10, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 10, 100, 0), 0);
	check_samples(t, "A", 0, 0, 2048, 1);
	check_samples(t, "A", 0, 0, 4096, 5);

	/* No announcement anywhere in process 2: the default, assumed. */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 2, 20, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 2, 10, 100, 0), 0);
	check_samples(t, "A", 0, 0, 102400, 2);

	check_process(t, 1, 9, 0, 4096, 16384);
	check_process(t, 2, 2, 2, 102400, 102400);
	check_process(t, 3, 1, 0, 2048, 2048);
	assert_int_equal(proc(t, 1)->configured, 3);
	assert_int_equal(proc(t, 2)->configured, 0);
	assert_true(proc(t, 2)->mean == 0);
	assert_int_equal(t->configured, 4);
	assert_int_equal(t->samples, 12);
	assert_int_equal(rasp_tally_samples_assumed(t), 2);
	rasp_tally_destroy(t);
}

/* A thread allocating from two heaps at two means: each sample is weighed with the mean of
 * its own heap (ClrInstanceID), not the thread's last announced (which counted a thread's
 * samples of a heap at mean 4096, after one allocation from a heap at 2^20, 256 times too
 * much). */
static void test_tally_means_per_instance(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean_of(t, 1, 10, 0, 4096), 0);
	assert_int_equal(rasp_tally_add_sample_of(t, "A", 0, 1, 10, 0, 72, 0, NULL, 0), 0);
	assert_int_equal(rasp_tally_set_mean_of(t, 1, 10, 1, 1048576), 0);
	assert_int_equal(rasp_tally_add_sample_of(t, "B", 0, 1, 10, 1, 72, 0, NULL, 0), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(rasp_tally_add_sample_of(t, "A", 0, 1, 10, 0, 72, 0, NULL, 0), 0);
	assert_int_equal(t->ntmeans, 2);
	check_samples(t, "A", 0, 0, 4096, 6);
	check_samples(t, "B", 0, 0, 1048576, 1);
	/* The other entry points are instance 0's. */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 10, 72, 0), 0);
	check_samples(t, "A", 0, 0, 4096, 7);
	assert_int_equal(rasp_tally_samples_assumed(t), 0);
	rasp_tally_destroy(t);
}

/* Samples drawn before their process's first SamplingConfigured were weighed with the
 * default: assumed; the ones after are not. A new announcement of a thread replaces its old. */
static void test_tally_mean_changes(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(0, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 5, 50, 64, 3), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 5, 51, 64, 3), 0);
	assert_int_equal(rasp_tally_set_mean(t, 5, 50, 4096), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 5, 50, 64, 3), 0);
	assert_int_equal(rasp_tally_set_mean(t, 5, 50, 1024), 0);
	assert_int_equal(t->ntmeans, 1);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 5, 50, 64, 3), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 5, 51, 64, 3), 0); /* process: 1024 */
	check_process(t, 5, 5, 2, 1024, 102400);
	check_samples(t, NULL, 0, 0, 102400, 2);
	check_samples(t, NULL, 0, 0, 4096, 1);
	check_samples(t, NULL, 0, 0, 1024, 2);
	assert_int_equal(rasp_tally_samples_assumed(t), 2);
	rasp_tally_destroy(t);
}

static void test_tally_set_mean_bad(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	const double bad[] = {0, 0.999, -4096, NAN, INFINITY, -INFINITY};

	assert_non_null(t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rasp_tally_set_mean(t, 1, 2, bad[i]), -EINVAL);
		assert_int_equal(rasp_tally_set_mean(t, 1, UNK, bad[i]), -EINVAL);
	}
	assert_int_equal(t->configured, 0);
	assert_int_equal(t->nprocs, 0);
	assert_int_equal(t->ntmeans, 0);
	assert_int_equal(rasp_tally_set_mean(t, 1, 2, 1.0), 0); /* the least mean: p = 1 */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 2, 10, 0), 0);
	check_samples(t, "A", 0, 0, 1.0, 1);
	rasp_tally_destroy(t);
}

/* One cell per group and mean; keys not grouped by are 0; a thread is keyed with its
 * process. */
static void test_tally_cell_keys(void **state)
{
	(void)state;
	struct rasp_tally *t;

	/* By type: kinds, processes and threads fall together, means apart. */
	t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean(t, 2, UNK, 4096), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 10, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 1, 11, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 2, 3, 12, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 2, 10, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "B", 0, 1, 10, 100, 0), 0);
	assert_int_equal(t->ncells, 3);
	check_samples(t, "A", 0, 0, 102400, 3);
	check_samples(t, "A", 0, 0, 4096, 1);
	check_samples(t, "B", 0, 0, 102400, 1);
	rasp_tally_destroy(t);

	/* By thread: (pid, tid) pairs, so tid 5 of two processes is two cells. */
	t = rasp_tally_create(RASP_GROUP_THREAD, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 5, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "B", 1, 2, 5, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "C", 2, 2, 5, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "C", 2, 2, UNK, 100, 0), 0);
	assert_int_equal(t->ncells, 3);
	assert_int_equal(t->ntypes, 0); /* names are not kept when not grouping by type */
	check_samples(t, NULL, 1, 5, 102400, 1);
	check_samples(t, NULL, 2, 5, 102400, 2);
	check_samples(t, NULL, 2, UNK, 102400, 1);
	rasp_tally_destroy(t);

	/* By process: threads fall together. */
	t = rasp_tally_create(RASP_GROUP_PROCESS, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 5, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 6, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, UNK, 6, 100, 0), 0);
	assert_int_equal(t->ncells, 2);
	check_samples(t, NULL, 1, 0, 102400, 2);
	check_samples(t, NULL, UNK, 0, 102400, 1);
	rasp_tally_destroy(t);

	/* By kind: AllocationKind past 32 bits is clamped to UINT32_MAX. */
	t = rasp_tally_create(RASP_GROUP_KIND, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 1, 5, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "B", 1, 2, 6, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", UINT64_C(1) << 40, 1, 5, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", UINT32_MAX, 1, 5, 100, 0), 0);
	assert_int_equal(t->ncells, 2);
	assert_non_null(cell_at(t, 0, 1, 0, 0, 102400));
	assert_int_equal(cell_at(t, 0, 1, 0, 0, 102400)->est.samples, 2);
	assert_non_null(cell_at(t, 0, UINT32_MAX, 0, 0, 102400));
	assert_int_equal(cell_at(t, 0, UINT32_MAX, 0, 0, 102400)->est.samples, 2);
	rasp_tally_destroy(t);

	/* Every key. */
	t = rasp_tally_create(RASP_GROUP_ALL, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 7, 70, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 7, 70, 200, 5), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 2, 7, 70, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 7, 71, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 8, 70, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "B", 1, 7, 70, 100, 0), 0);
	assert_int_equal(t->ncells, 5);
	assert_int_equal(cell_at(t, type_key(t, "A"), 1, 7, 70, 102400)->est.samples, 2);
	assert_non_null(cell_at(t, type_key(t, "A"), 2, 7, 70, 102400));
	assert_non_null(cell_at(t, type_key(t, "A"), 1, 7, 71, 102400));
	assert_non_null(cell_at(t, type_key(t, "A"), 1, 8, 70, 102400));
	assert_non_null(cell_at(t, type_key(t, "B"), 1, 7, 70, 102400));
	rasp_tally_destroy(t);

	/* By nothing: one cell per mean. */
	t = rasp_tally_create(0, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 1, 7, 70, 100, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "B", 2, 8, 80, 100, 0), 0);
	assert_int_equal(t->ncells, 1);
	check_samples(t, NULL, 0, 0, 102400, 2);
	rasp_tally_destroy(t);
}

/* The weights are the estimator's: a cell equals one built directly from its samples. */
static void test_tally_cell_estimates(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 1000);
	static const uint64_t z[][2] = {{24, 0}, {1000, 999}, {65536, 100}, {1, 0}, {7, 3}};
	struct rasp_est_cell want;
	const struct rasp_tally_cell *c;

	assert_non_null(t);
	assert_int_equal(rasp_est_cell_init(&want, 1.0 / 1000), 0);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(rasp_tally_add_sample(t, "T", 0, 1, 1, z[i][0], z[i][1]), 0);
		assert_int_equal(rasp_est_cell_add(&want, z[i][0], z[i][1]), 0);
	}
	c = cell_at(t, type_key(t, "T"), 0, 0, 0, 1000);
	assert_non_null(c);
	if (c->est.samples != want.samples || c->est.bytes != want.bytes ||
	    c->est.objects != want.objects || c->est.unsampled != want.unsampled) {
		printf("cell: s %" PRIu64 " bytes %.17g objects %.17g u %.17g; want %" PRIu64
		       " %.17g %.17g %.17g\n",
		       c->est.samples, c->est.bytes, c->est.objects, c->est.unsampled, want.samples,
		       want.bytes, want.objects, want.unsampled);
		fail();
	}
	rasp_tally_destroy(t);
}

/* A NULL type name is "NULL", as .NET writes for no name: one type with the literal. */
static void test_tally_null_type(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, NULL, 0, 1, 1, 10, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "NULL", 0, 1, 1, 10, 0), 0);
	assert_int_equal(rasp_tally_add_tick(t, NULL, 5), 0);
	assert_int_equal(t->ntypes, 1);
	assert_string_equal(rasp_tally_type_name(t, 0), "NULL");
	check_samples(t, "NULL", 0, 0, 102400, 2);
	assert_int_equal(t->ticks[0].ticks, 1);
	/* The empty name is a name of its own. */
	assert_int_equal(rasp_tally_add_sample(t, "", 0, 1, 1, 10, 0), 0);
	assert_int_equal(t->ntypes, 2);
	assert_string_equal(rasp_tally_type_name(t, 1), "");
	rasp_tally_destroy(t);
}

/* size 0 or offset >= size: -EINVAL and nothing counted, not even the process or type. */
static void test_tally_bad_sample(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_ALL, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 1, 0, 0), -EINVAL);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 1, 16, 16), -EINVAL);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 1, 16, 17), -EINVAL);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 1, 16, UINT64_MAX), -EINVAL);
	assert_int_equal(t->samples, 0);
	assert_int_equal(t->ncells, 0);
	assert_int_equal(t->nprocs, 0);
	assert_int_equal(t->ntypes, 0);
	assert_null(rasp_tally_find_process(t, 1));
	/* The boundary is accepted: offset size - 1, and the largest size. */
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 1, 16, 15), 0);
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, 1, UINT64_MAX, 0), 0);
	assert_int_equal(t->samples, 2);
	assert_int_equal(t->ncells, 1);
	check_process(t, 1, 2, 2, 102400, 102400);
	rasp_tally_destroy(t);
}

static void test_tally_ticks(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	char name[32];

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_tick(t, "A", 100), 0);
	assert_int_equal(rasp_tally_add_tick(t, "B", 50), 0);
	assert_int_equal(rasp_tally_add_tick(t, "A", 25), 0);
	/* Types the samples add later (past the ticks' first capacity) start at zero. */
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "S%d", i);
		assert_int_equal(rasp_tally_add_sample(t, name, 0, 1, 1, 8, 0), 0);
	}
	assert_int_equal(rasp_tally_add_tick(t, "S99", UINT64_C(1) << 40), 0);
	assert_int_equal(rasp_tally_add_tick(t, "S99", 1), 0);
	assert_int_equal(t->ticks_total, 5);
	assert_true(t->capticks >= t->ntypes);
	for (size_t i = 0; i < t->ntypes; i++) {
		const char *n = rasp_tally_type_name(t, i);
		uint64_t ticks = 0, amount = 0;

		if (strcmp(n, "A") == 0)
			ticks = 2, amount = 125;
		else if (strcmp(n, "B") == 0)
			ticks = 1, amount = 50;
		else if (strcmp(n, "S99") == 0)
			ticks = 2, amount = (UINT64_C(1) << 40) + 1;
		if (t->ticks[i].ticks != ticks || t->ticks[i].amount != amount) {
			printf("type %s: %" PRIu64 " ticks, %" PRIu64 " bytes; want %" PRIu64
			       ", %" PRIu64 "\n",
			       n, t->ticks[i].ticks, t->ticks[i].amount, ticks, amount);
			fail();
		}
	}
	/* Ticks are not samples: no cell, no process. */
	assert_int_equal(t->samples, 100);
	assert_int_equal(t->ncells, 100);
	assert_null(cell_at(t, type_key(t, "A"), 0, 0, 0, 102400));
	rasp_tally_destroy(t);
}

static void test_tally_processes(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	size_t len;

	assert_non_null(t);
	assert_null(rasp_tally_find_process(t, 7));
	assert_int_equal(rasp_tally_set_process_name(t, 7, "app"), 0);
	assert_string_equal(rasp_tally_process_name(t, proc(t, 7)), "app");
	len = t->names_len;
	assert_int_equal(rasp_tally_set_process_name(t, 7, "app"), 0);
	assert_int_equal(t->names_len, len); /* the same name is not stored twice */
	assert_int_equal(rasp_tally_set_process_name(t, 7, "app2"), 0);
	assert_string_equal(rasp_tally_process_name(t, proc(t, 7)), "app2");
	assert_int_equal(rasp_tally_set_process_name(t, 7, NULL), 0); /* NULL: kept */
	assert_string_equal(rasp_tally_process_name(t, proc(t, 7)), "app2");
	assert_int_equal(rasp_tally_add_sample(t, "A", 0, 8, 1, 8, 0), 0);
	assert_null(rasp_tally_process_name(t, proc(t, 8)));
	assert_null(rasp_tally_find_process(t, 9));
	/* Alternating processes (past the one-entry cache) keep their own counts. */
	for (int i = 0; i < 10; i++) {
		assert_int_equal(rasp_tally_add_sample(t, "A", 0, 7, 1, 8, 0), 0);
		assert_int_equal(rasp_tally_add_sample(t, "A", 0, 8, 1, 8, 0), 0);
		assert_int_equal(rasp_tally_add_sample(t, "A", 0, UNK, 1, 8, 0), 0);
	}
	assert_int_equal(t->nprocs, 3);
	check_process(t, 7, 10, 10, 102400, 102400);
	check_process(t, 8, 11, 11, 102400, 102400);
	check_process(t, UNK, 10, 10, 102400, 102400);
	/* Names longer than the arena's first block. */
	{
		char *big = malloc(10000);

		assert_non_null(big);
		memset(big, 'x', 9999);
		big[9999] = '\0';
		assert_int_equal(rasp_tally_set_process_name(t, 8, big), 0);
		assert_int_equal(rasp_tally_add_sample(t, big, 0, 8, 1, 8, 0), 0);
		assert_string_equal(rasp_tally_process_name(t, proc(t, 8)), big);
		assert_string_equal(rasp_tally_type_name(t, type_key(t, big) - 1), big);
		assert_string_equal(rasp_tally_process_name(t, proc(t, 7)), "app2");
		free(big);
	}
	rasp_tally_destroy(t);
}

static void test_tally_lost_and_counts(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);

	assert_non_null(t);
	assert_false(rasp_tally_lost_data(t));
	rasp_tally_add_discarded_events(t, 0, true);
	assert_false(rasp_tally_lost_data(t)); /* zero lost is no loss */
	rasp_tally_add_discarded_events(t, 200, true);
	rasp_tally_add_discarded_events(t, 57, true);
	assert_true(rasp_tally_lost_data(t));
	assert_int_equal(t->discarded_events, 257);
	assert_int_equal(t->discarded_events_unknown, 0);
	rasp_tally_add_discarded_events(t, 999, false);
	assert_int_equal(t->discarded_events, 257);
	assert_int_equal(t->discarded_events_unknown, 1);
	rasp_tally_add_discarded_packets(t, 3, true);
	rasp_tally_add_discarded_packets(t, 0, false);
	assert_int_equal(t->discarded_packets, 3);
	assert_int_equal(t->discarded_packets_unknown, 1);
	rasp_tally_destroy(t);

	/* Each kind of loss alone is a loss. */
	for (int k = 0; k < 3; k++) {
		t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
		assert_non_null(t);
		if (k == 0)
			rasp_tally_add_discarded_events(t, 1, false);
		else if (k == 1)
			rasp_tally_add_discarded_packets(t, 1, true);
		else
			rasp_tally_add_discarded_packets(t, 1, false);
		assert_true(rasp_tally_lost_data(t));
		rasp_tally_destroy(t);
	}

	t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	assert_non_null(t);
	rasp_tally_add_skipped(t);
	rasp_tally_add_skipped(t);
	rasp_tally_add_other_event(t);
	assert_int_equal(t->skipped, 2);
	assert_int_equal(t->other_events, 1);
	assert_false(rasp_tally_lost_data(t));
	assert_false(t->timed);
	rasp_tally_note_time(t, 500);
	rasp_tally_note_time(t, 100);
	rasp_tally_note_time(t, 900);
	rasp_tally_note_time(t, 300);
	assert_true(t->timed);
	assert_int_equal(t->first_ns, 100);
	assert_int_equal(t->last_ns, 900);
	rasp_tally_note_time(t, -5);
	assert_int_equal(t->first_ns, -5);
	rasp_tally_destroy(t);
}

static void test_tally_warnings_and_inputs(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_warning(t, "stream %s cut at %d bytes", "a", 10), 0);
	assert_int_equal(rasp_tally_add_warning(t, "stream %s cut at %d bytes", "a", 10), 0);
	assert_int_equal(rasp_tally_add_warning(t, "stream %s cut at %d bytes", "b", 10), 0);
	assert_int_equal(rasp_tally_add_warning(t, "stream a cut at 10 bytes"), 0);
	assert_int_equal(t->nwarnings, 2);
	assert_string_equal(t->warnings[0], "stream a cut at 10 bytes");
	assert_string_equal(t->warnings[1], "stream b cut at 10 bytes");
	for (int i = 0; i < 40; i++)
		assert_int_equal(rasp_tally_add_warning(t, "w%d", i % 20), 0);
	assert_int_equal(t->nwarnings, 22);
	assert_int_equal(rasp_tally_add_input(t, "/tmp/trace"), 0);
	assert_int_equal(rasp_tally_add_input(t, "/tmp/trace"), 0); /* inputs are a list */
	assert_int_equal(t->ninputs, 2);
	assert_string_equal(t->inputs[1], "/tmp/trace");
	rasp_tally_destroy(t);
}

/* rasp_rows_build sorts the cells under the index; samples added after it must find their
 * cells again, not make new ones. */
static void test_tally_rebuild_after_rows(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE | RASP_GROUP_THREAD, 102400);
	struct rasp_rows rows;
	char name[32];
	size_t ncells;

	assert_non_null(t);
	/* Thread 3 at 4096, the rest of process 1 at 102400 (announced, not assumed). */
	assert_int_equal(rasp_tally_set_mean(t, 1, 3, 4096), 0);
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 102400), 0);
	/* Inserted in the reverse of sorted order, so sorting moves every cell. */
	for (int i = 199; i >= 0; i--) {
		snprintf(name, sizeof(name), "T%03d", i);
		assert_int_equal(rasp_tally_add_sample(t, name, 0, 1, 1 + i % 4, 64, 0), 0);
	}
	ncells = t->ncells;
	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	assert_true(t->cells_sorted);
	rasp_rows_free(&rows);
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "T%03d", i);
		assert_int_equal(rasp_tally_add_sample(t, name, 0, 1, 1 + i % 4, 64, 0), 0);
	}
	assert_false(t->cells_sorted);
	if (t->ncells != ncells) {
		printf("%zu cells after adding to existing groups, %zu before\n", t->ncells,
		       ncells);
		fail();
	}
	for (int i = 0; i < 200; i++) {
		const struct rasp_tally_cell *c;

		snprintf(name, sizeof(name), "T%03d", i);
		c = cell_at(t, type_key(t, name), 0, 1, 1 + i % 4, 1 + i % 4 == 3 ? 4096 : 102400);
		assert_non_null(c);
		assert_int_equal(c->est.samples, 2);
	}
	/* A new group after the rebuild, and a second sort. */
	assert_int_equal(rasp_tally_add_sample(t, "U", 0, 1, 1, 64, 0), 0);
	assert_int_equal(t->ncells, ncells + 1);
	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	assert_int_equal(rows.n, 201);
	assert_int_equal(rows.total.samples, 401);
	rasp_rows_free(&rows);
	assert_int_equal(rasp_tally_add_sample(t, "U", 0, 1, 1, 64, 0), 0);
	assert_int_equal(t->ncells, ncells + 1);
	rasp_tally_destroy(t);
}

/* 10^5 processes and 10^5 types, each seen twice: every lookup finds its own entry. A tally
 * quadratic in either would take hours here; this one asserts only what it counts. */
static void test_tally_many_processes_and_types(void **state)
{
	(void)state;
	const int64_t n = 100000;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE | RASP_GROUP_PROCESS, 102400);
	char name[32];

	assert_non_null(t);
	for (int64_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "Type%" PRId64, i);
		assert_int_equal(rasp_tally_add_sample(t, name, 0, 1000 + i, 1, 64, 0), 0);
	}
	for (int64_t i = n - 1; i >= 0; i--) {
		snprintf(name, sizeof(name), "Type%" PRId64, i);
		if (i % 2)
			assert_int_equal(rasp_tally_set_mean(t, 1000 + i, UNK, 4096), 0);
		assert_int_equal(rasp_tally_add_sample(t, name, 0, 1000 + i, 1, 64, 0), 0);
	}
	assert_int_equal(t->nprocs, n);
	assert_int_equal(t->ntypes, n);
	assert_int_equal(t->ncells, n + n / 2);
	assert_int_equal(t->samples, 2 * n);
	assert_int_equal(rasp_tally_samples_assumed(t), n + n / 2);
	for (int64_t i = 0; i < n; i++) {
		const struct rasp_tally_process *p = rasp_tally_find_process(t, 1000 + i);

		snprintf(name, sizeof(name), "Type%" PRId64, i);
		if (!p || p->pid != 1000 + i || p->samples != 2 ||
		    p->samples_assumed != (uint64_t)(2 - i % 2) ||
		    strcmp(rasp_tally_type_name(t, (size_t)i), name) != 0) {
			printf("process %" PRId64 " or type %s not counted right\n", 1000 + i,
			       name);
			fail();
		}
	}
	assert_null(rasp_tally_find_process(t, 1000 + n));
	rasp_tally_destroy(t);
}

/* 10^5 threads of one process announcing their own means. */
static void test_tally_many_thread_means(void **state)
{
	(void)state;
	const int64_t n = 100000;
	struct rasp_tally *t = rasp_tally_create(0, 102400);

	assert_non_null(t);
	for (int64_t i = 0; i < n; i++)
		assert_int_equal(rasp_tally_set_mean(t, 1, i, (double)(1024 << (i % 4))), 0);
	assert_int_equal(t->ntmeans, n);
	assert_true(proc(t, 1)->mean == 1024 << ((n - 1) % 4));
	for (int64_t i = n - 1; i >= 0; i--)
		assert_int_equal(rasp_tally_add_sample(t, "A", 0, 1, i, 64, 0), 0);
	assert_int_equal(t->ncells, 4);
	for (int k = 0; k < 4; k++)
		check_samples(t, NULL, 0, 0, 1024 << k, (uint64_t)n / 4);
	assert_int_equal(rasp_tally_samples_assumed(t), 0);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tally_create_bad),
	    cmocka_unit_test(test_tally_thread_means),
	    cmocka_unit_test(test_tally_mean_changes),
	    cmocka_unit_test(test_tally_means_per_instance),
	    cmocka_unit_test(test_tally_set_mean_bad),
	    cmocka_unit_test(test_tally_cell_keys),
	    cmocka_unit_test(test_tally_cell_estimates),
	    cmocka_unit_test(test_tally_null_type),
	    cmocka_unit_test(test_tally_bad_sample),
	    cmocka_unit_test(test_tally_ticks),
	    cmocka_unit_test(test_tally_processes),
	    cmocka_unit_test(test_tally_lost_and_counts),
	    cmocka_unit_test(test_tally_warnings_and_inputs),
	    cmocka_unit_test(test_tally_rebuild_after_rows),
	    cmocka_unit_test(test_tally_many_processes_and_types),
	    cmocka_unit_test(test_tally_many_thread_means),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
