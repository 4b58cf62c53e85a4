/* Coverage of the consumer's intervals by simulation (docs/sampling.md, "Coverage by size
 * mix"): fixed populations of object sizes, sampled with the runtime's per-byte Bernoulli
 * trials, each replication's samples summed by consumer/report/estimate.c; prints how often the
 * bytes and objects intervals hold the truth at 90/95/99%, with the objects interval of ff18ef7
 * ("before", its formula kept here) beside the current one ("after", the library's).
 *   rasp-bench-coverage [--reps N] [--jobs J] [--seed S] [--only NAME] [--all]
 *   rasp-bench-coverage --sizes FILE [--mean M] [--reps N] [--seed S]
 * Deterministic: every configuration has its own seed, whatever the job count. --sizes reads
 * a real program's populations ("family size count" lines, as tests/malloc/truth-interposer.c
 * writes them with RASP_TRUTH_SIZES; its first process) and prints the coverage of each
 * family's intervals at 95%, as record-real.py measures them end to end. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/estimate.h"

static const double levels[3] = {0.90, 0.95, 0.99};

/* ---- Random numbers: xoshiro256** seeded through splitmix64 ----------------------------- */

struct rng {
	uint64_t s[4];
};

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		r->s[i] = z ^ (z >> 31);
	}
}

/* Uniform in (0, 1]. */
static double rng_unit(struct rng *r)
{
	return (double)((rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

/* Failed trials before the next success: geometric by inversion, as the runtime draws it. */
static uint64_t draw_budget(struct rng *r, double p)
{
	return (uint64_t)floor(log(rng_unit(r)) / log1p(-p));
}

/* ---- Populations ------------------------------------------------------------------------- */

/* What a program allocated: fixed for a configuration (the intervals are about the sampling,
 * not the program), built from the quantiles (i + 1/2) / N of a size distribution, sizes
 * rounded up to 8 bytes as the runtimes align them, kept as runs of one size. */
struct pop {
	size_t n;
	uint64_t *size, *count;
	double objects, bytes;
};

enum {
	POP_FIXED_SMALL,
	POP_FIXED_LARGE,
	POP_INT_ARRAY,
	POP_LOG_UNIFORM,
	POP_SMALL_LARGE,
	POP_PARETO,
	POP_BIMODAL,
	POP_LOGNORMAL,
	NPOPS
};

static const struct {
	const char *name, *text;
	int extra; /* 0: the cases; 1: more, to guard against fitting those alone */
} pops[NPOPS] = {
    {"fixed-32", "fixed 32 B", 0},
    {"fixed-128k", "fixed 128 KiB", 0},
    {"int-array", "Int32[] 0..4096", 0},
    {"log-uniform", "log-uniform 16 B..1 MiB", 0},
    {"small-large", "99% 24 B + 1% 85,000 B", 0},
    {"pareto", "Pareto 16 B..1 MiB (objects/log-size ~ 1/z)", 1},
    {"bimodal", "90% 16..64 B + 10% 4..256 KiB", 1},
    {"lognormal", "lognormal, median 64 B, sigma 0.4", 1},
};

static uint64_t round8(double z)
{
	uint64_t v = (uint64_t)ceil(z);

	return (v + 7) / 8 * 8;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int pop_build(struct pop *p, int kind, uint64_t n)
{
	uint64_t *z = malloc(n * sizeof(*z));

	*p = (struct pop){0};
	p->size = malloc(n * sizeof(*p->size));
	p->count = malloc(n * sizeof(*p->count));
	if (!z || !p->size || !p->count) {
		free(z);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		double u = ((double)i + 0.5) / (double)n;

		switch (kind) {
		case POP_FIXED_SMALL:
			z[i] = 32;
			break;
		case POP_FIXED_LARGE:
			z[i] = 131072;
			break;
		case POP_INT_ARRAY: /* 24-byte header + 4 L, L uniform in 0..4096 */
			z[i] = round8(24.0 + 4.0 * floor(u * 4097.0));
			break;
		case POP_LOG_UNIFORM:
			z[i] = round8(16.0 * pow(65536.0, u));
			break;
		case POP_SMALL_LARGE:
			z[i] = u < 0.99 ? 24 : 85000;
			break;
		case POP_PARETO: /* 1/z uniform: objects per unit of log-size ~ 1/z */
			z[i] = round8(1.0 / (1.0 / 16.0 - u * (1.0 / 16.0 - 1.0 / 1048576.0)));
			break;
		case POP_BIMODAL:
			z[i] = u < 0.9 ? round8(16.0 * pow(4.0, u / 0.9))
				       : round8(4096.0 * pow(64.0, (u - 0.9) / 0.1));
			break;
		default: { /* POP_LOGNORMAL */
			double v = 64.0 * exp(0.4 * rasp_normal_quantile(u));

			z[i] = round8(v < 16.0 ? 16.0 : v);
			break;
		}
		}
	}
	qsort(z, n, sizeof(*z), cmp_u64);
	p->objects = (double)n;
	for (uint64_t i = 0; i < n; i++) {
		p->bytes += (double)z[i];
		if (p->n && p->size[p->n - 1] == z[i]) {
			p->count[p->n - 1]++;
		} else {
			p->size[p->n] = z[i];
			p->count[p->n++] = 1;
		}
	}
	free(z);
	return 0;
}

static void pop_free(struct pop *p)
{
	free(p->size);
	free(p->count);
}

static double hit(double p, double z)
{
	return -expm1(z * log1p(-p));
}

static double expected_samples(const struct pop *p, double prob)
{
	double s = 0.0;

	for (size_t i = 0; i < p->n; i++)
		s += (double)p->count[i] * hit(prob, (double)p->size[i]);
	return s;
}

/* ---- One replication ---------------------------------------------------------------------- */

/* The sums ff18ef7's objects interval needs beside the library's cell. */
struct before_sums {
	double a, az, azz, zmin;
};

/* Exact per-byte trials with the budget carried across objects (the order of the objects
 * does not matter: objects are sampled independently of each other). O(runs + samples). */
static void replicate(const struct pop *p, double prob, struct rng *r, struct rasp_est_cell *cell,
		      struct before_sums *b)
{
	uint64_t budget = draw_budget(r, prob);

	rasp_est_cell_init(cell, prob);
	*b = (struct before_sums){0};
	for (size_t k = 0; k < p->n; k++) {
		uint64_t size = p->size[k], count = p->count[k];
		double z = (double)size, h = hit(prob, z), a = (1.0 - h) / (h * h);

		while (count > 0) {
			if (budget / size >= count) {
				budget -= size * count;
				break;
			}
			uint64_t j = budget / size;

			rasp_est_cell_add(cell, size, budget % size);
			b->a += a;
			b->az += a * z;
			b->azz += a * z * z;
			if (b->zmin == 0.0 || z < b->zmin)
				b->zmin = z;
			count -= j + 1;
			budget = draw_budget(r, prob);
		}
	}
}

/* ff18ef7's objects interval for one cell: the bytes interval scaled by r = objects / bytes,
 * widened by the size mix's variance and one more sample of the smallest size seen. */
static void before_interval(const struct rasp_est_cell *c, const struct before_sums *b,
			    const struct rasp_est_total *t, double conf, double *lo, double *hi)
{
	double r = t->objects / t->bytes, zq = rasp_normal_quantile(0.5 + conf / 2.0);
	double mix = b->a - 2.0 * r * b->az + r * r * b->azz;
	double extra = (1.0 - r * b->zmin) / hit(c->p, b->zmin);
	double slo = t->objects * (t->bytes_low / t->bytes),
	       shi = t->objects * (t->bytes_high / t->bytes);

	if (!(mix > 0.0))
		mix = 0.0;
	if (extra < 0.0)
		extra = 0.0;
	*lo = t->objects - sqrt(pow(t->objects - slo, 2.0) + zq * zq * mix);
	*hi = t->objects + sqrt(pow(shi - t->objects, 2.0) + zq * zq * (mix + extra * extra)) +
	      extra * (zq * zq + 2.0) / 3.0;
	if (*lo < (double)t->samples)
		*lo = (double)t->samples;
	if (*hi < *lo)
		*hi = *lo;
}

/* ---- Configurations ------------------------------------------------------------------------ */

struct config {
	int pop;
	uint64_t n;
	double mean;
	uint64_t seed;
	/* results */
	double expected;
	long rows, flagged;
	long bytes_in[3], before_in[3], after_in[3], after_unflagged_in[3];
	long before_low[3], before_high[3], after_low[3], after_high[3];
	double before_width, after_width; /* median width / truth at 95% */
	int skipped, error;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void run_config(struct config *c, int reps)
{
	struct pop p;
	struct rng r;
	double prob = 1.0 / c->mean;
	double *wb = malloc((size_t)reps * sizeof(*wb)), *wa = malloc((size_t)reps * sizeof(*wa));

	if (!wb || !wa || pop_build(&p, c->pop, c->n)) {
		free(wb);
		free(wa);
		c->error = 1;
		return;
	}
	c->expected = expected_samples(&p, prob);
	/* Rows averaging far below one sample are mostly absent: reported, not measured. */
	if (c->expected < 1.0) {
		c->skipped = 1;
		goto out;
	}
	rng_seed(&r, c->seed);
	for (int rep = 0; rep < reps; rep++) {
		struct rasp_est_cell cell;
		struct before_sums b;
		int flag = 0, in_after[3];

		replicate(&p, prob, &r, &cell, &b);
		if (!cell.samples)
			continue; /* no row: reports show none */
		for (int l = 0; l < 3; l++) {
			struct rasp_est_total t;
			double lo, hi;

			if (rasp_est_sum(&cell, 1, levels[l], &t)) {
				c->error = 1;
				goto out;
			}
			c->bytes_in[l] += t.bytes_low <= p.bytes && p.bytes <= t.bytes_high;
			before_interval(&cell, &b, &t, levels[l], &lo, &hi);
			c->before_in[l] += lo <= p.objects && p.objects <= hi;
			c->before_low[l] += p.objects < lo;
			c->before_high[l] += p.objects > hi;
			in_after[l] = t.objects_low <= p.objects && p.objects <= t.objects_high;
			c->after_in[l] += in_after[l];
			c->after_low[l] += p.objects < t.objects_low;
			c->after_high[l] += p.objects > t.objects_high;
			if (l == 1) {
				wb[c->rows] = (hi - lo) / p.objects;
				wa[c->rows] = (t.objects_high - t.objects_low) / p.objects;
				flag = t.low_confidence;
			}
		}
		c->flagged += flag;
		if (!flag)
			for (int l = 0; l < 3; l++)
				c->after_unflagged_in[l] += in_after[l];
		c->rows++;
	}
	if (c->rows) {
		qsort(wb, (size_t)c->rows, sizeof(*wb), cmp_double);
		qsort(wa, (size_t)c->rows, sizeof(*wa), cmp_double);
		c->before_width = wb[c->rows / 2];
		c->after_width = wa[c->rows / 2];
	}
out:
	pop_free(&p);
	free(wb);
	free(wa);
}

/* ---- Jobs --------------------------------------------------------------------------------- */

struct work {
	struct config *v;
	size_t n, next;
	int reps;
	pthread_mutex_t lock;
};

static void *worker(void *arg)
{
	struct work *w = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&w->lock);
		i = w->next++;
		pthread_mutex_unlock(&w->lock);
		if (i >= w->n)
			return NULL;
		run_config(&w->v[i], w->reps);
	}
}

/* ---- Output ------------------------------------------------------------------------------- */

/* The unflagged rows' coverage is shown over at least this many rows (standard error under
 * 3 points at 90%). */
#define UNFLAGGED_LEAST 100

/* A coverage in percent; in bold when more than 1.5 points from nominal. */
static void cover(long in, long n, double nominal)
{
	double v = 100.0 * (double)in / (double)n;
	int off = fabs(v - 100.0 * nominal) > 1.5;

	printf("%s%.1f%s", off ? "**" : "", v, off ? "**" : "");
}

/* Coverages at the three levels; "-" over fewer than `least` rows (too few to tell). */
static void covers(const long *in, long n, long least)
{
	if (n < least || n == 0) {
		printf("- (%ld rows)", n);
		return;
	}
	for (int l = 0; l < 3; l++) {
		if (l)
			printf(" / ");
		cover(in[l], n, levels[l]);
	}
}

static const char *mean_text(double m)
{
	return m == 1024.0 ? "1 KiB" : m == 102400.0 ? "100 KiB" : m == 10485760.0 ? "10 MiB" : "?";
}

static void print_table(const struct config *v, size_t n, int extra)
{
	printf("| population | objects | mean | samples | rows | bytes | objects before | width | "
	       "objects after | width | after, unflagged | flagged |\n"
	       "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		const struct config *c = &v[i];

		if (pops[c->pop].extra != extra)
			continue;
		printf("| %s | 10^%.0f | %s | %.3g | ", pops[c->pop].text, log10((double)c->n),
		       mean_text(c->mean), c->expected);
		if (c->error) {
			printf("error | | | | | | | |\n");
			continue;
		}
		if (c->skipped) {
			printf("- | skipped: under 1 sample | | | | | | |\n");
			continue;
		}
		printf("%ld | ", c->rows);
		covers(c->bytes_in, c->rows, 1);
		printf(" | ");
		covers(c->before_in, c->rows, 1);
		printf(" | %.2f | ", c->before_width);
		covers(c->after_in, c->rows, 1);
		printf(" | %.2f | ", c->after_width);
		covers(c->after_unflagged_in, c->rows - c->flagged, UNFLAGGED_LEAST);
		printf(" | %.1f%% |\n", 100.0 * (double)c->flagged / (double)c->rows);
	}
}

/* ---- Populations of a real program (--sizes) ----------------------------------------------- */

#define SIZES_MAX_FAMILIES 8
#define SIZES_MAX_RUNS	   (1u << 20)

/* The first process's "family size count" lines of path into pops (one per family, sizes
 * ascending); the number of families, or -1 with a message naming the line. */
static int sizes_read(const char *path, struct pop *pops, char names[][16])
{
	FILE *f = fopen(path, "r");
	char line[256];
	int nf = 0, pids = 0;
	long lineno = 0;

	if (!f) {
		fprintf(stderr, "rasp-bench-coverage: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char fam[16];
		unsigned long long size, count;
		int k;

		lineno++;
		if (strncmp(line, "pid ", 4) == 0) {
			if (++pids > 1)
				break;
			continue;
		}
		if (sscanf(line, "%15s %llu %llu", fam, &size, &count) != 3 || !size || !count) {
			fprintf(stderr, "rasp-bench-coverage: %s:%ld: not 'family size count'\n",
				path, lineno);
			goto fail;
		}
		for (k = 0; k < nf && strcmp(names[k], fam) != 0; k++)
			;
		if (k == nf) {
			if (nf == SIZES_MAX_FAMILIES) {
				fprintf(stderr, "rasp-bench-coverage: %s:%ld: over %d families\n",
					path, lineno, SIZES_MAX_FAMILIES);
				goto fail;
			}
			strcpy(names[nf], fam);
			pops[nf] = (struct pop){0};
			pops[nf].size = malloc(SIZES_MAX_RUNS * sizeof(uint64_t));
			pops[nf].count = malloc(SIZES_MAX_RUNS * sizeof(uint64_t));
			nf++;
			if (!pops[k].size || !pops[k].count)
				goto fail;
		}
		if (pops[k].n == SIZES_MAX_RUNS) {
			fprintf(stderr, "rasp-bench-coverage: %s:%ld: over %u sizes\n", path,
				lineno, SIZES_MAX_RUNS);
			goto fail;
		}
		pops[k].size[pops[k].n] = size;
		pops[k].count[pops[k].n++] = count;
		pops[k].objects += (double)count;
		pops[k].bytes += (double)size * (double)count;
	}
	fclose(f);
	return nf;
fail:
	fclose(f);
	for (int k = 0; k < nf; k++)
		pop_free(&pops[k]);
	return -1;
}

/* Coverage at 95% of each family's bytes and objects intervals, over reps replications (those
 * with a sample: a family without one has no row). The last line scores all replications as
 * record-real.py does: a family without a sample holds its bytes if they are below the high
 * bound of no sample, and misses its objects. */
static int sizes_main(const char *path, double mean, int reps, uint64_t seed)
{
	struct pop pops[SIZES_MAX_FAMILIES];
	char names[SIZES_MAX_FAMILIES][16];
	int nf = sizes_read(path, pops, names);
	double prob = 1.0 / mean;
	long all = 0, all_in = 0;

	if (nf < 0)
		return 1;
	printf("%s at a mean of %.0f, %d replications: coverage at 95%% (misses below / above "
	       "the truth)\n",
	       path, mean, reps);
	for (int k = 0; k < nf; k++) {
		struct rng r;
		long none = 0, none_in = 0, rows = 0, b_in = 0, b_lo = 0, o_in = 0, o_lo = 0;

		rng_seed(&r, seed * 1000003u + (uint64_t)k);
		for (int rep = 0; rep < reps; rep++) {
			struct rasp_est_cell cell;
			struct before_sums b;
			struct rasp_est_total t;

			replicate(&pops[k], prob, &r, &cell, &b);
			if (rasp_est_sum(&cell, 1, 0.95, &t))
				return 1;
			if (!cell.samples) { /* no row: bytes in [0, the high bound], no objects */
				none++;
				none_in += pops[k].bytes <= t.bytes_high;
				continue;
			}
			rows++;
			b_in += t.bytes_low <= pops[k].bytes && pops[k].bytes <= t.bytes_high;
			b_lo += pops[k].bytes < t.bytes_low;
			o_in +=
			    t.objects_low <= pops[k].objects && pops[k].objects <= t.objects_high;
			o_lo += pops[k].objects < t.objects_low;
		}
		printf("%-8s %.0f objects, %.0f bytes, %.2f samples expected, no sample in %.1f%%: "
		       "bytes %.1f%% (%.1f / %.1f), objects %.1f%% (%.1f / %.1f) of %ld rows\n",
		       names[k], pops[k].objects, pops[k].bytes, expected_samples(&pops[k], prob),
		       100.0 * (double)none / reps, 100.0 * (double)b_in / (double)rows,
		       100.0 * (double)b_lo / (double)rows,
		       100.0 * (double)(rows - b_in - b_lo) / (double)rows,
		       100.0 * (double)o_in / (double)rows, 100.0 * (double)o_lo / (double)rows,
		       100.0 * (double)(rows - o_in - o_lo) / (double)rows, rows);
		all += 2 * reps;
		all_in += b_in + o_in + none_in;
		pop_free(&pops[k]);
	}
	printf("all families, bytes and objects, as record-real.py scores them: %.2f%% "
	       "(standard error %.2f points)\n",
	       100.0 * (double)all_in / (double)all,
	       100.0 * sqrt((double)all_in * (double)(all - all_in) / (double)all / (double)all /
			    (double)all));
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: rasp-bench-coverage [--reps N] [--jobs J] [--seed S] [--only NAME] [--all]\n"
	      "Coverage of the bytes and objects intervals (docs/sampling.md) by simulation.\n"
	      "  --reps N   replications per configuration (2000)\n"
	      "  --jobs J   threads (1)\n"
	      "  --seed S   base seed (1)\n"
	      "  --only P   one population: fixed-32, fixed-128k, int-array, log-uniform,\n"
	      "             small-large, pareto, bimodal, lognormal\n"
	      "  --all      the populations beyond the issue's too (pareto, bimodal, lognormal)\n"
	      "  --sizes F  a real program's populations instead (truth-interposer.c's\n"
	      "             RASP_TRUTH_SIZES file), at --mean M bytes (102400)\n",
	      f);
}

int main(int argc, char **argv)
{
	static const uint64_t ns[] = {1000, 10000, 100000, 1000000};
	static const double means[] = {1024.0, 102400.0, 10485760.0};
	int reps = 2000, jobs = 1, all = 0, only = -1;
	uint64_t seed = 1;
	const char *sizes = NULL;
	double mean = 102400.0;
	struct config v[NPOPS * 4 * 3];
	size_t n = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;

		if (strcmp(a, "--all") == 0) {
			all = 1;
			continue;
		}
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (!val) {
			usage(stderr);
			return 2;
		}
		i++;
		if (strcmp(a, "--reps") == 0) {
			reps = (int)strtol(val, &end, 10);
		} else if (strcmp(a, "--jobs") == 0) {
			jobs = (int)strtol(val, &end, 10);
		} else if (strcmp(a, "--seed") == 0) {
			seed = strtoull(val, &end, 10);
		} else if (strcmp(a, "--sizes") == 0) {
			sizes = val;
			end = (char *)val + strlen(val);
		} else if (strcmp(a, "--mean") == 0) {
			mean = strtod(val, &end);
			if (!(mean >= 1.0))
				end = NULL;
		} else if (strcmp(a, "--only") == 0) {
			for (int k = 0; k < NPOPS; k++)
				if (strcmp(val, pops[k].name) == 0)
					only = k;
			end = only < 0 ? NULL : (char *)val + strlen(val);
		} else {
			usage(stderr);
			return 2;
		}
		if (!end || *end || reps < 1 || reps > 10000000 || jobs < 1 || jobs > 256) {
			fprintf(stderr, "rasp-bench-coverage: bad value '%s' for %s\n", val, a);
			return 2;
		}
	}
	if (sizes)
		return sizes_main(sizes, mean, reps, seed);
	for (int k = 0; k < NPOPS; k++) {
		if ((only >= 0 && k != only) || (only < 0 && pops[k].extra && !all))
			continue;
		for (size_t i = 0; i < 4; i++)
			for (size_t j = 0; j < 3; j++)
				v[n++] = (struct config){.pop = k,
							 .n = ns[i],
							 .mean = means[j],
							 .seed = seed * 1000003u +
								 (uint64_t)k * 100 + i * 10 + j};
	}

	struct work w = {.v = v, .n = n, .reps = reps, .lock = PTHREAD_MUTEX_INITIALIZER};
	pthread_t th[256];

	for (int t = 0; t < jobs; t++)
		if (pthread_create(&th[t], NULL, worker, &w)) {
			fprintf(stderr, "rasp-bench-coverage: cannot start a thread\n");
			return 1;
		}
	for (int t = 0; t < jobs; t++)
		pthread_join(th[t], NULL);

	printf("Coverage in percent at 90 / 95 / 99%%, %d replications per configuration, over "
	       "the rows (replications with at least one sample; standard error %.2f / %.2f / "
	       "%.2f points over %d rows); **bold**: more than 1.5 points from nominal. samples: "
	       "the mean per replication. width: median of (high - low) / truth at 95%%. "
	       "flagged: rows with low_confidence; the unflagged rows' coverage needs %d of "
	       "them.\n\n",
	       reps, 100.0 * sqrt(0.09 / reps), 100.0 * sqrt(0.0475 / reps),
	       100.0 * sqrt(0.0099 / reps), reps, UNFLAGGED_LEAST);
	if (only < 0 || !pops[only].extra)
		print_table(v, n, 0);
	if (all || (only >= 0 && pops[only].extra)) {
		printf("\n");
		print_table(v, n, 1);
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].error)
			return 1;
	return 0;
}
