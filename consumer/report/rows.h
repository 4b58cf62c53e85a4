/* Rows: the tally's cells grouped by the report's keys, each group's estimate and interval
 * (estimate.c), its share of the total, sorted largest first. What every writer prints.
 * No babeltrace2 types. */
#ifndef RASP_CONSUMER_ROWS_H
#define RASP_CONSUMER_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

#include "estimate.h"
#include "stacks/sites.h"
#include "stacks/symbols.h"
#include "tally.h"

struct rasp_row {
	uint32_t type; /* tally type index + 1, 0 when not grouped by type */
	uint32_t kind;
	/* Grouped by stack or site: one of its stacks (those of a row by stack read the same:
	 * where.h; those of a row by site share its site); 0: samples without a stack. */
	uint32_t stack;
	uint32_t site;		 /* site index + 1 when grouped by site */
	const char *type_name;	 /* as the report shows it (rasp_rows_type_name), or NULL */
	int64_t process, thread; /* RASP_ID_UNKNOWN when the trace did not carry them */
	size_t first, ncells;	 /* its cells: the tally's cells[first .. first + ncells) */
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
	size_t *ticks;	       /* type indexes with GCAllocationTick events, largest amount first */
	size_t nticks;
	uint64_t tick_count, tick_amount;
	/* Grouped by site or stack: the resolver of the tally's frames (writers name frames
	 * with it) and the sites' names ("function (file:line)", "object+0xoffset"). */
	struct rasp_symbols *sym;
	const char **sites;
	size_t nsites;
	/* How names were made: the site rule, and whether types and .NET methods are named
	 * in the runtime's form (raw_names, or no .NET process) or as C# writes them. */
	struct rasp_site_rule site_rule;
	bool raw_names, clr_names;
	/* Each tally type's name as the report shows it (rasp_rows_type_name), and the
	 * converted ones, which the rows own. */
	const char **type_names;
	char **owned;
	size_t nowned, capowned;
	/* Samples whose allocating frame lies in no object the trace recorded (no state dump
	 * or dlopen event covers it): their site cannot be named. */
	uint64_t unplaced_samples, stacked_samples;
};

/* How rows name what they group: the site rule (by site), and the runtime's names rather than
 * C#'s for .NET types and methods (--raw-names). */
struct rasp_rows_options {
	double confidence;
	struct rasp_site_rule site; /* its patterns must outlive the rows */
	bool raw_names;
};

/* Builds the rows of t. Sorts the tally's cells (its index is rebuilt if more samples come).
 * n log n in cells. 0, -EINVAL (bad confidence), -ENOMEM, -ERANGE. */
int rasp_rows_build_with(struct rasp_tally *t, const struct rasp_rows_options *o,
			 struct rasp_rows *out);
/* The same with the defaults: sites in the program's own code, C#'s names. */
int rasp_rows_build(struct rasp_tally *t, double confidence, struct rasp_rows *out);
void rasp_rows_free(struct rasp_rows *r);

/* Estimate of the samples of several rows together (rows[i] indexes r->v), at the rows'
 * confidence: what a flame graph shows for a node. 0, -ENOMEM, -ERANGE. */
int rasp_rows_sum(const struct rasp_rows *r, const struct rasp_tally *t, const size_t *rows,
		  size_t n, struct rasp_est_total *out);

/* The site name of a row ("" when not grouped by site). */
const char *rasp_row_site(const struct rasp_rows *r, const struct rasp_row *row);

/* The frames of a row's stack (grouped by site or stack): their number (0: the row's samples
 * had no stack), and frame k (0: innermost) named by the resolver. 0 or -ENOMEM. */
size_t rasp_row_depth(const struct rasp_tally *t, const struct rasp_row *row);
int rasp_row_frame(const struct rasp_rows *r, const struct rasp_tally *t,
		   const struct rasp_row *row, size_t k, struct rasp_sym_frame *out);

/* The type name of a row as the report shows it ("" when not grouped by type). */
const char *rasp_row_type(const struct rasp_tally *t, const struct rasp_row *row);
/* The name the report shows for tally type i: in a .NET trace (an EventPipe file from .NET,
 * or one with .NET's allocation ticks) as C# writes it (List<string>, Outer.Inner:
 * stacks/clr-names.h) without namespaces, or with them where two types would otherwise read
 * the same; as the trace gives it with raw_names and in other traces (rasp's C names stay as
 * the program gave them). */
const char *rasp_rows_type_name(const struct rasp_rows *r, const struct rasp_tally *t, size_t i);

/* Display names of an AllocationKind (Small, Large, Pinned, else the number in buf). */
const char *rasp_kind_name(uint64_t kind, char *buf, size_t len);

#endif /* RASP_CONSUMER_ROWS_H */
