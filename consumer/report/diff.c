/* rasp diff's statistics (diff.h). */
#include "diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double rasp_diff_p_value(const struct rasp_est_total *b, const struct rasp_est_total *n, double z_c)
{
	double diff = n->bytes - b->bytes, se_b, se_n, se;

	if (diff == 0)
		return 1;
	se_b = (diff > 0 ? b->bytes_high - b->bytes : b->bytes - b->bytes_low) / z_c;
	se_n = (diff > 0 ? n->bytes - n->bytes_low : n->bytes_high - n->bytes) / z_c;
	se = sqrt(se_b * se_b + se_n * se_n);
	if (!(se > 0))
		return 0; /* both exact (p = 1) and different */
	return erfc(fabs(diff) / se * 0.70710678118654752440); /* / sqrt(2) */
}

static int cmp_p(const void *a, const void *b)
{
	const struct rasp_diff_change *const *x = a, *const *y = b;

	return (*x)->p_value < (*y)->p_value ? -1 : (*x)->p_value > (*y)->p_value;
}

int rasp_diff_flag(struct rasp_diff_change *c, size_t n, double alpha)
{
	struct rasp_diff_change **by_p = malloc((n + 1) * sizeof(*by_p));
	size_t k = 0;

	if (!by_p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		by_p[i] = &c[i];
	qsort(by_p, n, sizeof(*by_p), cmp_p);
	/* The k smallest p-values, k the largest rank with p_(k) <= k alpha / n. */
	for (size_t i = 0; i < n; i++)
		if (by_p[i]->p_value <= (double)(i + 1) * alpha / (double)n)
			k = i + 1;
	for (size_t i = 0; i < n; i++)
		by_p[i]->significant = i < k;
	free(by_p);
	return 0;
}

/* A side that never sampled the type: nothing seen, but up to one sample's worth could hide. */
static struct rasp_est_total unseen(const struct rasp_diff_side *s, double confidence)
{
	struct rasp_est_total e = {0};

	e.bytes_high = rasp_nb_quantile((1 + confidence) / 2, 1, 1 / s->mean) + 1;
	return e;
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp((*(const struct rasp_diff_item *const *)a)->type,
		      (*(const struct rasp_diff_item *const *)b)->type);
}

static int cmp_change(const void *a, const void *b)
{
	const struct rasp_diff_change *x = a, *y = b;
	double dx = fabs(x->new_.bytes - x->base.bytes), dy = fabs(y->new_.bytes - y->base.bytes);

	return dx < dy ? 1 : dx > dy ? -1 : strcmp(x->type, y->type);
}

static const struct rasp_diff_item **sorted(const struct rasp_diff_side *s)
{
	const struct rasp_diff_item **v = malloc((s->n + 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		v[i] = &s->items[i];
	qsort(v, s->n, sizeof(*v), cmp_item);
	return v;
}

int rasp_diff_compute(const struct rasp_diff_side *base, const struct rasp_diff_side *new_,
		      double confidence, struct rasp_diff_change **out, size_t *nout)
{
	const struct rasp_diff_item **b = NULL, **n = NULL;
	struct rasp_diff_change *c = NULL;
	size_t i = 0, j = 0, k = 0;
	double z;
	int ret = -ENOMEM;

	*out = NULL;
	*nout = 0;
	if (!rasp_est_confidence_valid(confidence))
		return -EINVAL;
	z = rasp_normal_quantile((1 + confidence) / 2);
	b = sorted(base);
	n = sorted(new_);
	c = calloc(base->n + new_->n + 1, sizeof(*c));
	if (!b || !n || !c)
		goto out;
	/* Merge the two sorted lists: one change per type on either side. */
	while (i < base->n || j < new_->n) {
		int cmp = i == base->n ? 1 : j == new_->n ? -1 : strcmp(b[i]->type, n[j]->type);
		struct rasp_diff_change *d = &c[k++];

		if (cmp <= 0) {
			d->type = b[i]->type;
			d->base = b[i++]->est;
			d->in_base = true;
		} else {
			d->base = unseen(base, confidence);
		}
		if (cmp >= 0) {
			d->type = n[j]->type;
			d->new_ = n[j++]->est;
			d->in_new = true;
		} else {
			d->new_ = unseen(new_, confidence);
		}
		d->p_value = rasp_diff_p_value(&d->base, &d->new_, z);
	}
	ret = rasp_diff_flag(c, k, 1 - confidence);
	if (ret)
		goto out;
	qsort(c, k, sizeof(*c), cmp_change);
	*out = c;
	*nout = k;
	c = NULL;
out:
	free(b);
	free(n);
	free(c);
	return ret;
}
