/* Rows: the tally's cells grouped by the report's keys, each group's estimate and interval
 * (estimate.c), its share of the total, sorted largest first. What every writer prints.
 * No babeltrace2 types. */
#ifndef RASP_CONSUMER_ROWS_H
#define RASP_CONSUMER_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "estimate.h"
#include "tally.h"

struct rasp_row {
	uint32_t type; /* tally type index + 1, 0 when not grouped by type */
	uint32_t kind;
	int64_t process, thread; /* RASP_ID_UNKNOWN when the trace did not carry them */
	struct rasp_est_total est;
	double share; /* est.bytes / total bytes, 0 when the total is 0 */
};

struct rasp_rows {
	struct rasp_row *v;
	size_t n;
	struct rasp_est_total total;
	unsigned group_by;
	double confidence;
	size_t contradictions; /* rows (and total) whose estimate is outside its interval */
	size_t *ticks; /* type indexes with GCAllocationTick events, largest amount first */
	size_t nticks;
	uint64_t tick_count, tick_amount;
};

/* Builds the rows of t at `confidence`. Sorts the tally's cells (its index is rebuilt if more
 * samples come). n log n in cells. 0, -EINVAL (bad confidence), -ENOMEM, -ERANGE. */
int rasp_rows_build(struct rasp_tally *t, double confidence, struct rasp_rows *out);
void rasp_rows_free(struct rasp_rows *r);

/* The type name of a row ("" when not grouped by type). */
const char *rasp_row_type(const struct rasp_tally *t, const struct rasp_row *row);

/* Display names of an AllocationKind (Small, Large, Pinned, else the number in buf). */
const char *rasp_kind_name(uint64_t kind, char *buf, size_t len);

#endif /* RASP_CONSUMER_ROWS_H */
