/* Statistical validity of consumer/report/estimate.c by simulation: workloads of several types and
 * sizes, interleaved at random on 1 or 8 threads (and two processes at different sampling
 * means), sampled with exact per-byte Bernoulli trials; checks the bias of the weighted
 * estimate and the coverage of the 95% and 99% intervals from rasp_est_sum. Fixed seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/estimate.h"
#include "test-rng.h"

#define NTYPES	   5
#define MAXTHREADS 8

/* The types of a workload: a small-object mix, a page-sized buffer and a large (LOH-sized)
 * array, whose objects are sampled more often than not at p = 1/102400. */
static const uint64_t type_size[NTYPES] = {16, 24, 200, 4096, 90000};

/* xoshiro256** seeded through splitmix64: one generator per test case, fixed seed. */
/* One thread's sampler: the budget carries across objects until a sample, as in CoreCLR's
 * combined_limit; after a sample the rest of that object gets no trials and a fresh budget
 * starts at the next object. Exactly per-byte Bernoulli(p) with the per-object stop. */
struct sampler {
	double p;
	uint64_t budget;
};

/* Allocates `count` objects of `size` bytes in O(1 + samples): a run the budget covers is
 * skipped whole. cell may be NULL (allocations outside the window). */
static void allocate_run(struct sampler *sm, struct rng *r, uint64_t size, uint64_t count,
			 struct rasp_est_cell *cell)
{
	while (count > 0) {
		if (sm->budget >= size * count) {
			sm->budget -= size * count;
			return;
		}
		uint64_t j = sm->budget / size, offset = sm->budget % size;

		if (cell)
			assert_int_equal(rasp_est_cell_add(cell, size, offset), 0);
		count -= j + 1;
		sm->budget = draw_budget(r, sm->p);
	}
}

struct config {
	const char *name;
	int threads;	    /* per process */
	int processes;	    /* 1, or 2 with means mean[0] and mean[1] */
	double mean[2];	    /* sampling mean 1/p of each process */
	double min_samples; /* expected samples of a type, log-uniform in [min, max] */
	double max_samples;
	int workloads;
	uint64_t seed;
};

struct tally {
	long cases, cover95, cover99, cover95_per_thread;
	long above95, below95; /* misses: truth above the upper bound, below the lower */
	long objects_cases, objects95, objects99; /* objects intervals that held the truth */
	long objects_above95;
	double sum_rel, sum_rel2; /* relative error of the point estimate */
};

static void tally_add(struct tally *t, const struct rasp_est_cell *cells, size_t n, double truth,
		      double truth_objects, int threads_with_bytes)
{
	struct rasp_est_total t95, t99;

	assert_int_equal(rasp_est_sum(cells, n, 0.95, &t95), 0);
	assert_int_equal(rasp_est_sum(cells, n, 0.99, &t99), 0);
	double rel = (t95.bytes - truth) / truth;

	t->cases++;
	t->sum_rel += rel;
	t->sum_rel2 += rel * rel;
	t->cover95 += t95.bytes_low <= truth && truth <= t95.bytes_high;
	t->cover99 += t99.bytes_low <= truth && truth <= t99.bytes_high;
	t->above95 += truth > t95.bytes_high;
	t->below95 += truth < t95.bytes_low;
	/* A row without samples has no size to count objects by (reports show none). */
	t->objects_cases += t95.samples > 0;
	t->objects95 += t95.samples > 0 && t95.objects_low <= truth_objects &&
			truth_objects <= t95.objects_high;
	t->objects_above95 += t95.samples > 0 && truth_objects > t95.objects_high;
	t->objects99 += t99.samples > 0 && t99.objects_low <= truth_objects &&
			truth_objects <= t99.objects_high;

	/* For comparison only (docs/sampling.md): the .NET doc's per-thread adjustment summed
	 * over threads, an upper bound with one extra sample per thread. One p only. */
	double u = 0;

	for (size_t i = 0; i < n; i++)
		u += cells[i].unsampled;
	double high = rasp_nb_quantile(0.975, (double)t95.samples + threads_with_bytes, cells[0].p);

	t->cover95_per_thread += t95.bytes_low <= truth && truth <= high + u;
}

/* Runs the workloads of one configuration; per type (summed over threads and processes)
 * and per workload total, the cases land in `types` and `totals`. */
static void simulate(const struct config *c, struct tally *types, struct tally *totals)
{
	struct rng r;
	const int nt = c->threads * c->processes;

	rng_seed(&r, c->seed);
	memset(types, 0, sizeof(*types));
	memset(totals, 0, sizeof(*totals));
	for (int w = 0; w < c->workloads; w++) {
		struct rasp_est_cell cell[2 * MAXTHREADS][NTYPES], flat[2 * MAXTHREADS * NTYPES];
		uint64_t left[2 * MAXTHREADS][NTYPES]; /* objects still to allocate */
		double truth[NTYPES] = {0}, count[NTYPES] = {0}, all = 0, all_count = 0;
		int with_bytes[NTYPES] = {0};

		/* Objects per type: the expected sample count is log-uniform, then split over
		 * the threads with random weights (some threads get few or none). */
		for (int g = 0; g < NTYPES; g++) {
			double want = c->min_samples *
				      exp(rng_unit(&r) * log(c->max_samples / c->min_samples));
			double hit = -expm1((double)type_size[g] * log1p(-1.0 / c->mean[0]));
			uint64_t n = (uint64_t)ceil(want / hit);
			double weight[2 * MAXTHREADS], total = 0;

			for (int t = 0; t < nt; t++)
				total += weight[t] = rng_unit(&r) < 0.1 ? 0 : rng_unit(&r);
			uint64_t given = 0;

			for (int t = 0; t < nt; t++) {
				left[t][g] = total > 0 ? (uint64_t)(n * weight[t] / total) : 0;
				given += left[t][g];
			}
			left[0][g] += n - given;
			for (int t = 0; t < nt; t++)
				with_bytes[g] += left[t][g] > 0;
			truth[g] = (double)(n * type_size[g]);
			all += truth[g];
			count[g] = (double)n;
			all_count += (double)n;
		}

		for (int t = 0; t < nt; t++) {
			double p = 1.0 / c->mean[t / c->threads];
			struct sampler sm = {.p = p, .budget = draw_budget(&r, p)};

			for (int g = 0; g < NTYPES; g++)
				assert_int_equal(rasp_est_cell_init(&cell[t][g], p), 0);
			/* The window starts mid-stream: earlier allocations used up part of the
			 * budget (memorylessness says it does not matter; this checks it). */
			allocate_run(&sm, &r, 200, rng_below(&r, 2000), NULL);
			for (;;) {
				int live[NTYPES], nlive = 0;

				for (int g = 0; g < NTYPES; g++)
					if (left[t][g] > 0)
						live[nlive++] = g;
				if (nlive == 0)
					break;
				/* Runs of up to ~64 KiB of one type, types in random order. */
				int g = live[rng_below(&r, (uint64_t)nlive)];
				uint64_t most = 65536 / type_size[g] + 1;
				uint64_t k = 1 + rng_below(&r, most);

				if (k > left[t][g])
					k = left[t][g];
				allocate_run(&sm, &r, type_size[g], k, &cell[t][g]);
				left[t][g] -= k;
			}
		}

		size_t nflat = 0;

		for (int g = 0; g < NTYPES; g++) {
			struct rasp_est_cell col[2 * MAXTHREADS];

			for (int t = 0; t < nt; t++)
				flat[nflat++] = col[t] = cell[t][g];
			tally_add(types, col, (size_t)nt, truth[g], count[g], with_bytes[g]);
		}
		tally_add(totals, flat, nflat, all, all_count, nt);
	}
}

static void report(const char *name, const char *what, const struct tally *t, int mixed_p)
{
	double n = (double)t->cases, mean = t->sum_rel / n;
	double se = sqrt((t->sum_rel2 / n - mean * mean) / (n - 1));

	printf("%-26s %-6s n=%5ld bias %+.4f (se %.4f) cover95 %.4f (miss low %.4f high %.4f) "
	       "cover99 %.4f",
	       name, what, t->cases, mean, se, t->cover95 / n, t->below95 / n, t->above95 / n,
	       t->cover99 / n);
	if (!mixed_p)
		printf(" [per-thread +1: %.4f]", t->cover95_per_thread / n);
	printf(" objects n=%ld cover95 %.4f (high %.4f) cover99 %.4f", t->objects_cases,
	       (double)t->objects95 / (double)t->objects_cases,
	       (double)t->objects_above95 / (double)t->objects_cases,
	       (double)t->objects99 / (double)t->objects_cases);
	printf("\n");
}

/* The requirements: bias within 3 standard errors of 0; 95% intervals cover 94%-98% of the
 * cases and not significantly less than 95% (nominal - 3 se: liberal is not allowed,
 * conservative is, but not so wide that they stop informing); 99% intervals cover >= 98.5%
 * and >= 99% - 3 se. With n cases the coverage estimate has a standard error of
 * sqrt(0.95 * 0.05 / n): 0.0011 at n = 40000 type cases, 0.0024 at 8000 totals. With few
 * samples (`few`) the discreteness makes any valid interval conservative: only the lower
 * limits apply. */
static void check(const struct config *c, int few)
{
	struct tally types, totals;

	simulate(c, &types, &totals);
	report(c->name, "types", &types, c->processes > 1);
	report(c->name, "totals", &totals, c->processes > 1);
	const struct tally *all[] = {&types, &totals};

	for (int i = 0; i < 2; i++) {
		const struct tally *t = all[i];
		double n = (double)t->cases, mean = t->sum_rel / n;
		double se = sqrt((t->sum_rel2 / n - mean * mean) / (n - 1));

		double se95 = sqrt(0.95 * 0.05 / n), se99 = sqrt(0.99 * 0.01 / n);

		assert_true(fabs(mean) <= 3 * se);
		assert_true(t->cover95 >= fmax(0.94, 0.95 - 3 * se95) * n);
		assert_true(t->cover99 >= fmax(0.985, 0.99 - 3 * se99) * n);
		if (!few)
			assert_true(t->cover95 <= 0.98 * n);
		/* Objects, over the rows with samples: the same bounds. Totals mix 16 B with
		 * 90 KB objects, so a 16-byte sample stands for ~6,400 objects: the case the
		 * bytes-scaled interval alone covered 73% of (watched failing). With rare types
		 * (`few`) a whole small type is often unsampled, and objects of a size no sample
		 * shows are invisible to any estimate from the samples (docs/sampling.md): there
		 * the totals' objects are not held to the bound. */
		double no = (double)t->objects_cases;

		if (!(few && t == &totals)) {
			assert_true(t->objects95 >=
				    fmax(0.94, 0.95 - 3 * sqrt(0.95 * 0.05 / no)) * no);
			assert_true(t->objects99 >=
				    fmax(0.985, 0.99 - 3 * sqrt(0.99 * 0.01 / no)) * no);
		}
		if (!few)
			assert_true(t->objects95 <= 0.98 * no);
	}
}

/* 8000 workloads x 5 types = 40000 type cases per configuration (se of the coverage
 * 0.0011), 8000 totals (se 0.0024). ~1.5 s each in a RelWithDebInfo build. */
#define WORKLOADS 8000

static void test_estimate_sim_one_thread(void **state)
{
	(void)state;
	const struct config c = {"1 thread, p=1/102400", 1, 1, {102400, 0}, 10, 300, WORKLOADS, 1};

	check(&c, 0);
}

static void test_estimate_sim_eight_threads(void **state)
{
	(void)state;
	const struct config c = {"8 threads, p=1/102400", 8, 1, {102400, 0}, 10, 300, WORKLOADS, 2};

	check(&c, 0);
}

/* Rare types: 0.3 to 10 expected samples a type over 8 threads, many cells and some whole
 * types without a sample. The upper bound must still cover (the +1 of each stream). */
static void test_estimate_sim_few_samples(void **state)
{
	(void)state;
	const struct config c = {"8 threads, rare types", 8, 1, {102400, 0}, 0.3, 10, WORKLOADS, 4};

	check(&c, 1);
}

/* Two processes of 4 threads each, sampling means 102400 and 16384: cells of both p. */
static void test_estimate_sim_two_means(void **state)
{
	(void)state;
	const struct config c = {
	    "2x4 threads, 102400+16384", 4, 2, {102400, 16384}, 10, 300, WORKLOADS, 3};

	check(&c, 0);
}

/* One type whose sizes spread over three orders of magnitude: 20000 objects of 24 + 4 L
 * bytes, L uniform in 0..4095 (the .NET oracle's int[], tests/dotnet), one thread at
 * p = 1/102400. The smallest seen sample stands for ~100 objects, the smallest possible for
 * ~4,000; the objects estimate is skewed (a few samples of small arrays carry much of it).
 * The objects interval at 95% and 99%, by the bounds of check() above. Measured: 95.1% and
 * 99.1% (the scaled bytes interval with the size mix's variance before it: 97.0% and 99.6%;
 * without that variance 83.6% and 91.5%). (The oracle's one failure in CI, at 99.99%, was an
 * estimate at about the 0.03% quantile; a run of 200,000 such cases at 99.99% missed 16
 * times, 8e-5.) */
static void test_estimate_sim_spread_sizes(void **state)
{
	enum { RUNS = 8000, N = 20000 };
	const double p = 1.0 / 102400;
	unsigned in95 = 0, in99 = 0;
	struct rng r;

	(void)state;
	rng_seed(&r, 5);
	for (int run = 0; run < RUNS; run++) {
		struct sampler sm = {p, draw_budget(&r, p)};
		struct rasp_est_cell cell;
		struct rasp_est_total t95, t99;

		assert_int_equal(rasp_est_cell_init(&cell, p), 0);
		for (int i = 0; i < N; i++)
			allocate_run(&sm, &r, (24 + 4 * rng_below(&r, 4096) + 7) / 8 * 8, 1, &cell);
		assert_int_equal(rasp_est_sum(&cell, 1, 0.95, &t95), 0);
		assert_int_equal(rasp_est_sum(&cell, 1, 0.99, &t99), 0);
		in95 += t95.objects_low <= N && N <= t95.objects_high;
		in99 += t99.objects_low <= N && N <= t99.objects_high;
	}
	printf("spread sizes: objects covered %.4f at 95%%, %.4f at 99%% (%d runs)\n",
	       (double)in95 / RUNS, (double)in99 / RUNS, RUNS);
	assert_true(in95 >= fmax(0.94, 0.95 - 3 * sqrt(0.95 * 0.05 / RUNS)) * RUNS);
	assert_true(in95 <= 0.98 * RUNS);
	assert_true(in99 >= fmax(0.985, 0.99 - 3 * sqrt(0.99 * 0.01 / RUNS)) * RUNS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_estimate_sim_one_thread),
	    cmocka_unit_test(test_estimate_sim_eight_threads),
	    cmocka_unit_test(test_estimate_sim_few_samples),
	    cmocka_unit_test(test_estimate_sim_two_means),
	    cmocka_unit_test(test_estimate_sim_spread_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
