/* A stand-in for consumer/estimate.c in the report tests: exact, trivially checkable sums,
 * so test-report.c checks grouping and formatting and not the statistics. bytes and objects
 * are the raw sums; the interval is [bytes - samples, bytes + sum of 1/p over cells], which
 * shows which cells (and which sampling means) each row was given. */
#include <errno.h>

#include "estimate.h"

size_t fake_est_last_n; /* cells passed to the last rasp_est_sum call */

int rasp_est_cell_init(struct rasp_est_cell *cell, double p)
{
	if (!(p > 0.0 && p <= 1.0))
		return -EINVAL;
	*cell = (struct rasp_est_cell){.p = p};
	return 0;
}

int rasp_est_cell_add(struct rasp_est_cell *cell, uint64_t object_size, uint64_t sampled_offset)
{
	if (object_size == 0 || sampled_offset >= object_size)
		return -EINVAL;
	cell->samples++;
	cell->bytes += (double)object_size;
	cell->objects += 1.0;
	cell->unsampled += (double)(object_size - sampled_offset);
	return 0;
}

int rasp_est_sum(const struct rasp_est_cell *cells, size_t n, double confidence,
		 struct rasp_est_total *out)
{
	double means = 0.0;

	if ((n && !cells) || !(confidence > 0.0 && confidence < 1.0))
		return -EINVAL;
	*out = (struct rasp_est_total){0};
	for (size_t i = 0; i < n; i++) {
		out->samples += cells[i].samples;
		out->bytes += cells[i].bytes;
		out->objects += cells[i].objects;
		means += 1.0 / cells[i].p;
	}
	out->bytes_low = out->bytes - (double)out->samples;
	out->bytes_high = out->bytes + means;
	fake_est_last_n = n;
	return 0;
}
