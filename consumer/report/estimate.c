/* Estimation math of the consumer: the weighted (unbiased) estimates of a cell, the negative
 * binomial interval of a sum of cells' bytes and the gamma interval of its objects
 * (docs/sampling.md derives them), from the distributions of distributions.c; no babeltrace2
 * types, so the plugin and the unit tests link the same code. */
#include "estimate.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "distributions.h"
#include "objects.h"

int rasp_est_cell_init(struct rasp_est_cell *cell, double p)
{
	if (!cell || !(p > 0.0 && p <= 1.0))
		return -EINVAL;
	*cell = (struct rasp_est_cell){.p = p};
	return 0;
}

/* Keeps a size among the cell's RASP_EST_LOW smallest: one compare for a size whose code
 * cannot be below them all (most samples, once the cell is full), a log and at most
 * RASP_EST_LOW moves otherwise. */
static void low_insert(struct rasp_est_cell *cell, double size)
{
	uint32_t i = cell->nlow;

	if (i == RASP_EST_LOW && !(size < cell->low_cut))
		return;
	uint16_t z = rasp__size_code(size);

	if (i == RASP_EST_LOW) {
		if (!(z < cell->low[RASP_EST_LOW - 1]))
			return;
		i--;
	} else {
		cell->nlow++;
	}
	for (; i > 0 && cell->low[i - 1] > z; i--)
		cell->low[i] = cell->low[i - 1];
	cell->low[i] = z;
	/* The smallest size coded as the largest kept: anything from there on is not below. */
	if (cell->nlow == RASP_EST_LOW)
		cell->low_cut = exp((cell->low[RASP_EST_LOW - 1] - 0.5) / RASP_EST_LOW_SCALE);
}

int rasp_est_cell_add(struct rasp_est_cell *cell, uint64_t object_size, uint64_t sampled_offset)
{
	if (!cell || !(cell->p > 0.0 && cell->p <= 1.0) || object_size == 0 ||
	    sampled_offset >= object_size)
		return -EINVAL;
	double z = (double)object_size;
	double hit = rasp__p_hit(cell->p, z);

	cell->samples++;
	cell->bytes += z / hit;
	cell->objects += 1.0 / hit;
	cell->objects_var += (1.0 - hit) / (hit * hit);
	if (cell->size_min == 0.0 || z < cell->size_min)
		cell->size_min = z;
	if (z > cell->size_max)
		cell->size_max = z;
	low_insert(cell, z);
	cell->unsampled += (double)(object_size - sampled_offset);
	cell->sampled_bytes += z;
	return 0;
}

int rasp_est_interval(double samples, double p, double unsampled, double confidence, double *low,
		      double *high)
{
	if (!low || !high || !(samples >= 0.0) || isinf(samples) || !(p > 0.0 && p <= 1.0) ||
	    !(unsampled >= 0.0) || isinf(unsampled) || !rasp_est_confidence_valid(confidence))
		return -EINVAL;
	double alpha = 1.0 - confidence;

	/* NB(0, p) is the point mass at 0: no sample, no failed trial before it. */
	*low = samples > 0.0 ? rasp__nb_quantile_side(alpha / 2.0, samples, p, true) + unsampled
			     : unsampled;
	*high = samples > 0.0 ? rasp__nb_quantile(1.0 - alpha / 2.0, samples, p) + unsampled
			      : unsampled;
	return isfinite(*low) && isfinite(*high) ? 0 : -ERANGE;
}

/* ---- Memo of quantiles ------------------------------------------------------------------- */

/* Rows of a report mostly share a few (s, p): a thousand types seen once at .NET's mean all
 * have the same interval. A quantile costs ~30 CDF evaluations (~10 us); the memo makes each
 * distinct (prob, s, p, side) cost that once. Open addressing, at most half full; when full it
 * is cleared (a memo, not a store). */
struct rasp_est_memo {
	struct memo_entry {
		double prob, s, p, q;
		bool low, used;
	} * e;
	size_t size, n;
};

struct rasp_est_memo *rasp_est_memo_create(void)
{
	struct rasp_est_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->size = 4096;
	m->e = calloc(m->size, sizeof(*m->e));
	if (!m->e) {
		free(m);
		return NULL;
	}
	return m;
}

void rasp_est_memo_destroy(struct rasp_est_memo *m)
{
	if (m)
		free(m->e);
	free(m);
}

static uint64_t bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double memo_quantile(struct rasp_est_memo *m, double prob, double s, double p, bool low)
{
	uint64_t h = bits(prob) * UINT64_C(0x9e3779b97f4a7c15) ^
		     bits(s) * UINT64_C(0xbf58476d1ce4e5b9) ^
		     bits(p) * UINT64_C(0x94d049bb133111eb) ^ low;
	size_t mask, j;
	double q;

	if (!m)
		return rasp__nb_quantile_side(prob, s, p, low);
	mask = m->size - 1;
	h ^= h >> 29;
	for (j = h & mask; m->e[j].used; j = (j + 1) & mask)
		if (m->e[j].prob == prob && m->e[j].s == s && m->e[j].p == p && m->e[j].low == low)
			return m->e[j].q;
	q = rasp__nb_quantile_side(prob, s, p, low);
	if ((m->n + 1) * 2 > m->size) {
		memset(m->e, 0, m->size * sizeof(*m->e));
		m->n = 0;
		for (j = h & mask; m->e[j].used; j = (j + 1) & mask)
			;
	}
	m->e[j] = (struct memo_entry){prob, s, p, q, low, true};
	m->n++;
	return q;
}

/* One sampling stream: the cells sharing a p, which concatenate into one Bernoulli sequence
 * (docs/sampling.md, "Sums of cells"). */
struct stream {
	double p;
	double samples;
};

static int stream_cmp(const void *x, const void *y)
{
	double a = ((const struct stream *)x)->p, b = ((const struct stream *)y)->p;

	return (a > b) - (a < b);
}

/* Quantile of the failures of several independent streams, each NB(s_g + extra, p_g): one
 * stream is exact; several are matched by the NB with the same mean and variance (real
 * shape), the discrete form of the gamma interval of Fay & Feuer (1997) for weighted sums
 * of Poisson counts. Streams with p = 1 have no failures and drop out. `low` picks the side
 * of a bracket past 2^53 that widens the interval. */
static double streams_quantile(const struct stream *st, size_t n, double extra, double prob,
			       bool low, struct rasp_est_memo *memo)
{
	double mean = 0.0, var = 0.0, excess = 0.0, s1 = 0.0, p1 = 1.0;
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		double s = st[i].samples + extra, p = st[i].p, q = 1.0 - p;

		if (s <= 0.0 || p == 1.0)
			continue;
		mean += s * q / p;
		var += s * q / (p * p);
		excess += s * (q / p) * (q / p); /* var - mean, without subtracting */
		s1 = s;
		p1 = p;
		used++;
	}
	if (used == 0)
		return 0.0;
	if (used > 1) {
		s1 = mean * mean / excess;
		p1 = mean / var;
	}
	if (p1 == 1.0)
		return 0.0;
	return memo_quantile(memo, prob, s1, p1, low);
}

int rasp_est_confidence_valid(double confidence)
{
	return confidence > 0.0 && confidence <= RASP_EST_MAX_CONFIDENCE;
}

int rasp_est_sum(const struct rasp_est_cell *cells, size_t n, double confidence,
		 struct rasp_est_total *out)
{
	return rasp_est_sum_memo(cells, n, confidence, NULL, out);
}

int rasp_est_sum_memo(const struct rasp_est_cell *cells, size_t n, double confidence,
		      struct rasp_est_memo *memo, struct rasp_est_total *out)
{
	if (!out || (n > 0 && !cells) || !rasp_est_confidence_valid(confidence))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!(cells[i].p > 0.0 && cells[i].p <= 1.0))
			return -EINVAL;
	*out = (struct rasp_est_total){0};
	if (n == 0)
		return 0;

	/* Group the cells by p: sort a copy (n log n; the cells are threads x processes, so a
	 * few thousand at most) and merge equal neighbours. */
	struct stream *st = malloc(n * sizeof(*st));
	if (!st)
		return -ENOMEM;
	double unsampled = 0.0, seen = 0.0, exact_objects = 0.0;

	for (size_t i = 0; i < n; i++) {
		st[i] = (struct stream){.p = cells[i].p, .samples = (double)cells[i].samples};
		out->samples += cells[i].samples;
		out->bytes += cells[i].bytes;
		out->objects += cells[i].objects;
		unsampled += cells[i].unsampled;
		seen += cells[i].sampled_bytes;
		if (cells[i].p == 1.0) /* every byte tried and sampled: counted, not estimated */
			exact_objects += cells[i].objects;
	}
	qsort(st, n, sizeof(*st), stream_cmp);
	size_t groups = 0;

	for (size_t i = 0; i < n; i++) {
		if (groups > 0 && st[groups - 1].p == st[i].p)
			st[groups - 1].samples += st[i].samples;
		else
			st[groups++] = st[i];
	}

	/* Lower bound: the failures are at least NB(S_g) per stream (memorylessness: a window
	 * that starts between samples loses nothing). Upper bound: each stream's window ends
	 * once, between samples, so its failures are at most NB(S_g + 1). */
	double alpha = 1.0 - confidence;

	out->bytes_low = streams_quantile(st, groups, 0.0, alpha / 2.0, true, memo) + unsampled;
	out->bytes_high =
	    streams_quantile(st, groups, 1.0, 1.0 - alpha / 2.0, false, memo) + unsampled;
	if (!isfinite(out->bytes_low) || !isfinite(out->bytes_high)) {
		free(st);
		return -ERANGE;
	}
	/* The failures counted before the samples include their own leading bytes, so with
	 * offsets a sampler at this p would seldom draw (a wrong mean, made-up events) the NB
	 * bound can fall below the bytes the samples themselves prove allocated. */
	if (out->bytes_low < seen)
		out->bytes_low = seen;
	if (out->bytes_high < out->bytes_low)
		out->bytes_high = out->bytes_low;
	/* An estimate outside its interval happens by chance about 1 - C of the time when the
	 * objects are much larger than the mean (the estimate is then nearly exact, the interval
	 * is not): only a strict test, odds of RASP_EST_CONTRADICTION under the model, says the
	 * samples contradict it. Computed for those rows only. */
	if (out->bytes < out->bytes_low || out->bytes > out->bytes_high) {
		double a = RASP_EST_CONTRADICTION;
		double lo = streams_quantile(st, groups, 0.0, a / 2.0, true, memo) + unsampled;
		double hi =
		    streams_quantile(st, groups, 1.0, 1.0 - a / 2.0, false, memo) + unsampled;

		out->contradicts = hi < seen || out->bytes < (lo > seen ? lo : seen) ||
				   out->bytes > (hi > seen ? hi : seen);
	}
	free(st);
	/* Objects: the gamma interval of the sampled cells' weighted estimate
	 * (rasp__objects_interval, objects.c). Cells at p = 1 (a mean of 1) are counts: they are
	 * added to the estimate and to both bounds, and left out of the uncertainty (with them in,
	 * 16-byte objects counted exactly beside a few sampled 10 KB ones made thousands of small
	 * objects of the large ones' uncertainty). */
	struct rasp__objects_part part;

	rasp__objects_part_of(cells, n, &part);
	if (part.samples) {
		double lo, hi;

		rasp__objects_interval(&part, alpha, &lo, &hi, &out->low_confidence);
		if (!isfinite(lo) || !isfinite(hi))
			return -ERANGE;
		/* The interval holds its estimate (the model below the smallest sample can put
		 * both bounds above one the samples made large by chance). */
		out->objects_low = exact_objects + fmin(lo, part.objects);
		out->objects_high = exact_objects + fmax(hi, part.objects);
	} else if (out->bytes_high > out->bytes && out->bytes > 0.0) {
		/* Counted cells and sampled ones without a sample (an API caller's; the tally
		 * makes a cell at its first sample): the bytes the latter may hide, as objects
		 * the size of the counted ones (else such a sum's objects had no width at all). */
		out->objects_low = out->objects;
		out->objects_high =
		    out->objects + (out->bytes_high - out->bytes) * (out->objects / out->bytes);
	} else {
		out->objects_low = out->objects_high = out->objects;
	}
	if (out->objects_low < (double)out->samples)
		out->objects_low = (double)out->samples; /* each sample is an object */
	if (out->objects_high < out->objects_low)
		out->objects_high = out->objects_low;
	return 0;
}
