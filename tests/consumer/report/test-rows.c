/* Unit tests of consumer/report/rows.c: each row is rasp_est_sum of its group's cells and the total
 * rasp_est_sum of every cell (both computed here directly from the same samples), rows
 * largest first with ties in key order (type names, kinds, threads, processes), shares, tick
 * rows by amount, an empty tally, a bad confidence, and the kind names. */
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

#include "report/event.h"
#include "report/rows.h"

#define UNK RASP_ID_UNKNOWN

/* |got - want| <= tol * |want| (or both 0), with both figures in the failure message. */
static void check_rel(double got, double want, double tol, const char *what)
{
	if (!(got == want || fabs(got - want) <= tol * fabs(want))) {
		printf("%s: got %.17g, want %.17g\n", what, got, want);
		fail();
	}
}

static void check_total(const struct rasp_est_total *got, const struct rasp_est_total *want,
			const char *what)
{
	char w[96];

	if (got->samples != want->samples) {
		printf("%s: %" PRIu64 " samples, want %" PRIu64 "\n", what, got->samples,
		       want->samples);
		fail();
	}
	snprintf(w, sizeof(w), "%s bytes", what);
	check_rel(got->bytes, want->bytes, 1e-12, w);
	snprintf(w, sizeof(w), "%s objects", what);
	check_rel(got->objects, want->objects, 1e-12, w);
	snprintf(w, sizeof(w), "%s bytes_low", what);
	check_rel(got->bytes_low, want->bytes_low, 1e-12, w);
	snprintf(w, sizeof(w), "%s bytes_high", what);
	check_rel(got->bytes_high, want->bytes_high, 1e-12, w);
	snprintf(w, sizeof(w), "%s objects_low", what);
	check_rel(got->objects_low, want->objects_low, 1e-12, w);
	snprintf(w, sizeof(w), "%s objects_high", what);
	check_rel(got->objects_high, want->objects_high, 1e-12, w);
}

/* The samples of the tests: type, kind, process, thread, size, offset. */
struct smp {
	const char *type;
	uint64_t kind;
	int64_t pid, tid;
	uint64_t size, offset;
};

static void add_all(struct rasp_tally *t, const struct smp *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rasp_tally_add_sample(t, s[i].type, s[i].kind, s[i].pid, s[i].tid,
						       s[i].size, s[i].offset),
				 0);
}

/* A cell built directly: the samples of s matching `match` at mean. */
static void direct_cell(struct rasp_est_cell *c, const struct smp *s, size_t n, double mean,
			int (*match)(const struct smp *, const void *), const void *arg)
{
	assert_int_equal(rasp_est_cell_init(c, 1.0 / mean), 0);
	for (size_t i = 0; i < n; i++)
		if (match(&s[i], arg))
			assert_int_equal(rasp_est_cell_add(c, s[i].size, s[i].offset), 0);
}

/* Process 1 announced 4096; process 2 did not (102400). */
static int of_type_mean(const struct smp *s, const void *arg)
{
	const char *const *a = arg; /* {type, "4096" or "102400"} */
	int pid1 = strcmp(a[1], "4096") == 0;

	return strcmp(s->type, a[0]) == 0 && (s->pid == 1) == pid1;
}

static const struct smp mixed[] = {
    {"A", 0, 1, 10, 100, 5},	{"A", 0, 1, 11, 3000, 2999}, {"A", 1, 2, 20, 64, 0},
    {"A", 0, 2, 21, 100000, 1}, {"B", 0, 1, 10, 24, 3},	     {"B", 2, 2, 20, 1 << 20, 77},
    {"B", 0, 2, 20, 48, 47},	{"C", 0, 1, 12, 8, 0},
};
#define NMIXED (sizeof(mixed) / sizeof(mixed[0]))

static struct rasp_tally *mixed_tally(unsigned group_by)
{
	struct rasp_tally *t = rasp_tally_create(group_by, 102400);

	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean(t, 1, UNK, 4096), 0);
	add_all(t, mixed, NMIXED);
	return t;
}

static const struct rasp_row *row_of(const struct rasp_tally *t, const struct rasp_rows *r,
				     const char *type)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(rasp_row_type(t, &r->v[i]), type) == 0)
			return &r->v[i];
	printf("no row for type %s\n", type);
	fail();
	return NULL;
}

/* A row is rasp_est_sum of its group's cells (one per mean here); the total is rasp_est_sum
 * of all cells. */
static void test_rows_sums(void **state)
{
	(void)state;
	struct rasp_tally *t = mixed_tally(RASP_GROUP_TYPE);
	struct rasp_rows r;
	struct rasp_est_cell cells[8];
	struct rasp_est_total want;
	size_t nc = 0;
	static const char *const types[] = {"A", "B", "C"};

	assert_int_equal(rasp_rows_build(t, 0.9, &r), 0);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.group_by, RASP_GROUP_TYPE);
	assert_true(r.confidence == 0.9);
	for (size_t k = 0; k < 3; k++) {
		struct rasp_est_cell g[2];
		size_t ng = 0;
		const char *slow[2] = {types[k], "102400"}, *fast[2] = {types[k], "4096"};

		direct_cell(&g[ng], mixed, NMIXED, 102400, of_type_mean, slow);
		ng += g[ng].samples > 0;
		direct_cell(&g[ng], mixed, NMIXED, 4096, of_type_mean, fast);
		ng += g[ng].samples > 0;
		assert_int_equal(rasp_est_sum(g, ng, 0.9, &want), 0);
		check_total(&row_of(t, &r, types[k])->est, &want, types[k]);
		for (size_t i = 0; i < ng; i++)
			cells[nc++] = g[i];
	}
	assert_int_equal(nc, 5);
	assert_int_equal(rasp_est_sum(cells, nc, 0.9, &want), 0);
	check_total(&r.total, &want, "total");
	assert_int_equal(r.total.samples, NMIXED);
	rasp_rows_free(&r);
	assert_null(r.v);
	assert_int_equal(r.n, 0);
	rasp_tally_destroy(t);
}

/* Grouped by thread, the total still is the sum over every cell. */
static void test_rows_total_by_thread(void **state)
{
	(void)state;
	struct rasp_tally *t = mixed_tally(RASP_GROUP_THREAD | RASP_GROUP_KIND);
	struct rasp_rows r;
	struct rasp_est_cell *cells;
	struct rasp_est_total want;

	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	/* (kind, process, thread): (0,1,10) (0,1,11) (1,2,20) (0,2,21) (2,2,20) (0,2,20)
	 * (0,1,12) */
	assert_int_equal(r.n, 7);
	cells = malloc(t->ncells * sizeof(*cells));
	assert_non_null(cells);
	for (size_t i = 0; i < t->ncells; i++)
		cells[i] = t->cells[i].est;
	assert_int_equal(rasp_est_sum(cells, t->ncells, 0.95, &want), 0);
	check_total(&r.total, &want, "total");
	/* Rows carry their keys; type is 0 when not grouped by type. */
	for (size_t i = 0; i < r.n; i++) {
		assert_int_equal(r.v[i].type, 0);
		assert_string_equal(rasp_row_type(t, &r.v[i]), "");
		assert_true(r.v[i].process == 1 || r.v[i].process == 2);
	}
	free(cells);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

static void check_order(const struct rasp_rows *r, const struct rasp_tally *t)
{
	for (size_t i = 1; i < r->n; i++)
		if (r->v[i].est.bytes > r->v[i - 1].est.bytes) {
			printf("row %zu (%s, %.17g bytes) after row %zu (%s, %.17g bytes)\n", i,
			       rasp_row_type(t, &r->v[i]), r->v[i].est.bytes, i - 1,
			       rasp_row_type(t, &r->v[i - 1]), r->v[i - 1].est.bytes);
			fail();
		}
}

/* Largest first; rows of equal bytes in key order: type name (not the order types came
 * in), then kind, thread, process. */
static void test_rows_sorted(void **state)
{
	(void)state;
	static const char *const names[] = {"delta", "alpha", "charlie", "bravo"};
	static const char *const sorted[] = {"big", "alpha", "bravo", "charlie", "delta", "small"};
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 1024);
	struct rasp_rows r;

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "small", 0, 1, 1, 8, 0), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rasp_tally_add_sample(t, names[i], 0, 1, 1, 64, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "big", 0, 1, 1, 4096, 0), 0);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_int_equal(r.n, 6);
	check_order(&r, t);
	for (size_t i = 0; i < 6; i++)
		if (strcmp(rasp_row_type(t, &r.v[i]), sorted[i]) != 0) {
			printf("row %zu is %s, want %s\n", i, rasp_row_type(t, &r.v[i]), sorted[i]);
			fail();
		}
	rasp_rows_free(&r);
	rasp_tally_destroy(t);

	/* Equal bytes within a type: kinds in order. */
	t = rasp_tally_create(RASP_GROUP_TYPE | RASP_GROUP_KIND, 1024);
	assert_non_null(t);
	for (uint64_t k = 5; k-- > 0;)
		assert_int_equal(rasp_tally_add_sample(t, "T", k, 1, 1, 64, 0), 0);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_int_equal(r.n, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(r.v[i].kind, i);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);

	/* Threads, then processes; unknown ids (INT64_MIN) first. */
	t = rasp_tally_create(RASP_GROUP_THREAD, 1024);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, 2, 30, 64, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, 2, 10, 64, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, 1, 20, 64, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, 1, 10, 64, 0), 0);
	assert_int_equal(rasp_tally_add_sample(t, "T", 0, UNK, UNK, 64, 0), 0);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_int_equal(r.n, 5);
	{
		static const int64_t want[5][2] = {{UNK, UNK}, {1, 10}, {2, 10}, {1, 20}, {2, 30}};

		for (size_t i = 0; i < 5; i++)
			if (r.v[i].thread != want[i][1] || r.v[i].process != want[i][0]) {
				printf("row %zu: thread %" PRId64 " process %" PRId64
				       ", want %" PRId64 " %" PRId64 "\n",
				       i, r.v[i].thread, r.v[i].process, want[i][1], want[i][0]);
				fail();
			}
	}
	rasp_rows_free(&r);
	rasp_tally_destroy(t);

	/* The mixed tally: the bytes decide. */
	t = mixed_tally(RASP_GROUP_ALL);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	check_order(&r, t);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

static void test_rows_shares(void **state)
{
	(void)state;
	struct rasp_tally *t = mixed_tally(RASP_GROUP_TYPE | RASP_GROUP_PROCESS);
	struct rasp_rows r;
	double sum = 0;

	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_true(r.total.bytes > 0);
	for (size_t i = 0; i < r.n; i++) {
		assert_true(r.v[i].share > 0 && r.v[i].share <= 1);
		check_rel(r.v[i].share, r.v[i].est.bytes / r.total.bytes, 1e-15, "share");
		sum += r.v[i].share;
	}
	/* The point estimate is linear: the rows' bytes add up to the total's. */
	check_rel(sum, 1.0, 1e-12, "sum of shares");
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

/* Nothing sampled: no rows, a zero total, shares never divide by it. */
static void test_rows_empty(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	struct rasp_rows r;

	assert_non_null(t);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.total.samples, 0);
	assert_true(r.total.bytes == 0 && r.total.bytes_low == 0 && r.total.bytes_high == 0);
	assert_true(r.total.objects == 0);
	assert_int_equal(r.nticks, 0);
	assert_null(r.ticks);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

/* Tick rows: types with GCAllocationTick events only, largest amount first, equal amounts
 * by name; their counts summed. */
static void test_rows_ticks(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	struct rasp_rows r;
	static const char *const want[] = {"Huge", "Eq.a", "Eq.b", "Small"};

	assert_non_null(t);
	assert_int_equal(rasp_tally_add_sample(t, "OnlySampled", 0, 1, 1, 64, 0), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Small", 10), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Eq.b", 500), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Huge", 100000), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Eq.a", 200), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Eq.a", 300), 0);
	assert_int_equal(rasp_tally_add_tick(t, "Small", 1), 0);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_int_equal(r.nticks, 4);
	for (size_t i = 0; i < 4; i++)
		if (strcmp(rasp_tally_type_name(t, r.ticks[i]), want[i]) != 0) {
			printf("tick row %zu is %s, want %s\n", i,
			       rasp_tally_type_name(t, r.ticks[i]), want[i]);
			fail();
		}
	assert_int_equal(r.tick_count, 6);
	assert_int_equal(r.tick_amount, 101011);
	/* The ticks are not in the rows or the total. */
	assert_int_equal(r.n, 1);
	assert_int_equal(r.total.samples, 1);
	rasp_rows_free(&r);
	assert_null(r.ticks);
	rasp_tally_destroy(t);

	/* Ticks alone. */
	t = rasp_tally_create(RASP_GROUP_TYPE, 102400);
	assert_non_null(t);
	assert_int_equal(rasp_tally_add_tick(t, NULL, 7), 0);
	assert_int_equal(rasp_rows_build(t, 0.95, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.nticks, 1);
	assert_string_equal(rasp_tally_type_name(t, r.ticks[0]), "NULL");
	assert_int_equal(r.tick_amount, 7);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

static void test_rows_bad_confidence(void **state)
{
	(void)state;
	struct rasp_tally *t = mixed_tally(RASP_GROUP_TYPE);
	const double bad[] = {0, -0.5, 1, 1.5, NAN, 0.9999999999999999, INFINITY};
	struct rasp_rows r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rasp_rows_build(t, bad[i], &r) != -EINVAL) {
			printf("confidence %.17g accepted\n", bad[i]);
			fail();
		}
		assert_null(r.v);
		assert_int_equal(r.n, 0);
		assert_null(r.ticks);
	}
	assert_false(t->cells_sorted); /* refused before touching the tally */
	assert_int_equal(rasp_rows_build(t, RASP_EST_MAX_CONFIDENCE, &r), 0);
	assert_int_equal(r.n, 3);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

static void test_rows_kind_names(void **state)
{
	(void)state;
	char buf[32];

	assert_string_equal(rasp_kind_name(0, buf, sizeof(buf)), "Small");
	assert_string_equal(rasp_kind_name(1, buf, sizeof(buf)), "Large");
	assert_string_equal(rasp_kind_name(2, buf, sizeof(buf)), "Pinned");
	assert_string_equal(rasp_kind_name(3, buf, sizeof(buf)), "3");
	assert_string_equal(rasp_kind_name(UINT64_MAX, buf, sizeof(buf)), "18446744073709551615");
	assert_string_equal(rasp_kind_name(1234, buf, 3), "12"); /* cut, still terminated */
}

static void live_event(struct rasp_tally *t, enum rasp_role role, const char *type,
		       uint64_t address, int64_t ns)
{
	struct rasp_event e = {.role = role,
			       .type = type,
			       .size = 64,
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

/* In use: rows sorted by what is live; a row none of whose samples is live has 0 bytes and
 * objects but upper bounds for what could hide below the sampling rate, the objects' at the
 * smallest object size (not 0, which would say nothing is live); the timeline's rows agree. */
static void test_rows_inuse(void **state)
{
	(void)state;
	struct rasp_tally *t = rasp_tally_create(RASP_GROUP_TYPE, 4096);
	struct rasp_rows r;
	struct rasp_est_total e;
	int64_t ns;

	assert_non_null(t);
	assert_int_equal(rasp_tally_set_mean(t, 1, RASP_ID_UNKNOWN, 4096), 0);
	rasp_live_declare(t->live);
	for (int i = 0; i < 20; i++)
		live_event(t, RASP_ROLE_SAMPLED, "Gone", 0x1000 + 64 * (uint64_t)i, 100 + i);
	for (int i = 0; i < 3; i++)
		live_event(t, RASP_ROLE_SAMPLED, "Kept", 0x9000 + 64 * (uint64_t)i, 200 + i);
	for (int i = 0; i < 20; i++)
		live_event(t, RASP_ROLE_FREED, NULL, 0x1000 + 64 * (uint64_t)i, 300 + i);
	assert_int_equal(rasp_rows_build_of(t, 0.95, true, &r), 0);
	assert_true(r.live_known && r.inuse);
	assert_int_equal(r.n, 2);
	assert_string_equal(rasp_row_type(t, &r.v[0]), "Kept");
	assert_int_equal(r.v[0].inuse.samples, 3);
	assert_int_equal(r.v[1].inuse.samples, 0);
	assert_true(r.v[1].inuse.bytes == 0 && r.v[1].inuse.objects == 0);
	assert_true(r.v[1].inuse.bytes_high > 0);
	assert_true(r.v[1].inuse.objects_high >= floor(r.v[1].inuse.bytes_high / 16) &&
		    r.v[1].inuse.objects_high > 0);
	assert_true(r.v[1].life.freed == 1.0);
	assert_int_equal(r.v[1].alloc.samples, 20);
	assert_int_equal(r.total.samples, 3);
	/* The timeline's last point is the end: the same figures. */
	assert_int_equal(rasp_rows_timeline(&r, t, 1, rasp_live_npoints(t->live) - 1, &ns, &e), 0);
	assert_int_equal(e.samples, 0);
	assert_true(e.bytes_high == r.v[1].inuse.bytes_high);
	assert_true(e.objects_high == r.v[1].inuse.objects_high);
	rasp_rows_free(&r);
	rasp_tally_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows_inuse),		 cmocka_unit_test(test_rows_sums),
	    cmocka_unit_test(test_rows_total_by_thread), cmocka_unit_test(test_rows_sorted),
	    cmocka_unit_test(test_rows_shares),		 cmocka_unit_test(test_rows_empty),
	    cmocka_unit_test(test_rows_ticks),		 cmocka_unit_test(test_rows_bad_confidence),
	    cmocka_unit_test(test_rows_kind_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
