/* The flame graph of a report (the html writer's tree): a node per stack prefix, from the
 * root through the frames, outermost first, to the type allocated (and the process, thread
 * or kind when the rows are grouped by them); each node's estimate is that of the set of
 * rows under it (rasp_rows_sum), so its interval is the set's, not a sum of intervals. Frames
 * of one function merge, whatever their call lines. */
#ifndef RASP_CONSUMER_FLAME_H
#define RASP_CONSUMER_FLAME_H

#include <stdbool.h>
#include <stdint.h>

#include "index.h"
#include "writer.h"

/* Call lines listed for a function node (its frames may be calls from several lines). */
#define RASP_FLAME_MAX_LINES 4

/* What a node stands for; the page names them by these numbers (report.js: KINDS). */
enum rasp_flame_kind {
	RASP_FLAME_ROOT,
	RASP_FLAME_PROCESS,
	RASP_FLAME_THREAD,
	RASP_FLAME_FRAME,
	RASP_FLAME_NO_STACK,
	RASP_FLAME_TYPE,
	RASP_FLAME_KIND
};

struct rasp_flame_node {
	uint32_t parent; /* UINT32_MAX for the root */
	uint8_t kind;	 /* enum rasp_flame_kind */
	/* Frames: where the merged frames were (a function's frames merge whatever their
	 * call lines). */
	bool several_files, more_lines;
	uint8_t nlines;
	unsigned lines[RASP_FLAME_MAX_LINES];
	const char *file, *object;
	const char *name; /* the tally's, the resolver's or the graph's own (owned) */
	uint64_t hash;
	uint32_t first_kid, nkids; /* kids[first_kid .. first_kid + nkids) */
	uint32_t pos, size;	   /* pre-order position and subtree size (row ranges) */
	uint32_t out;		   /* index in the page's nodes (pre-order, kids sorted) */
	uint32_t name_id, detail_id;
	struct rasp_est_total est;
};

/* Distinct strings of the page, each written once and named by index. */
struct rasp_flame_strings {
	const char **v;
	size_t n, cap;
	struct rasp_index index;
};

struct rasp_flame {
	struct rasp_flame_node *v;
	size_t n, cap;
	struct rasp_index index;       /* (parent, kind, name) */
	struct rasp_flame_node **kids; /* the children of each node, grouped by parent */
	uint32_t *leaf;		       /* the node each row ends at */
	char **owned;		       /* names and details made here */
	size_t nowned, capowned;
	struct rasp_flame_strings str;
};

/* The tree of every row's path, children grouped by parent. One lookup per frame of every
 * row. 0 or -ENOMEM. */
int rasp_flame_build(const struct rasp_report_view *v, struct rasp_flame *g);
/* Each node's estimate: the rows under it, summed as one set. 0, -ENOMEM or -ERANGE. */
int rasp_flame_estimate(const struct rasp_report_view *v, struct rasp_flame *g);
/* The nodes in the page's pre-order (parents first, children largest first), their names and
 * details interned in g->str; *order (freed by the caller) lists them. 0 or -ENOMEM. */
int rasp_flame_order(struct rasp_flame *g, struct rasp_flame_node ***order);
void rasp_flame_free(struct rasp_flame *g);

#endif
