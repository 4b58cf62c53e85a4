/* Where-keys of rows grouped by site or stack (rows.c uses them): each interned stack's site,
 * the innermost frame of the program's own code by the report's rule (stacks/sites.h), and
 * its group of stacks that a report names alike. Stacks are interned by address (a frame per
 * return address, per process); a report names frames by function (and .NET methods with
 * their parameters), so stacks that differ only in where inside a function they were, or in
 * which process, read the same and form one row. No babeltrace2 types. */
#ifndef RASP_CONSUMER_WHERE_H
#define RASP_CONSUMER_WHERE_H

#include <stddef.h>
#include <stdint.h>

#include "stacks/sites.h"
#include "stacks/symbols.h"
#include "tally.h"

struct rasp_where {
	/* Per stack id 0..t->stacks.n (0: no stack): its site index + 1 into sites (by site),
	 * its group + 1 (by stack); NULL when not grouped so. */
	uint32_t *site_of, *group_of;
	/* The distinct site names, each once; the strings are the resolver's. */
	const char **sites;
	size_t nsites, ngroups;
};

/* The keys of t's stacks for the report's group_by (site, stack or both), frames named by
 * sym. Linear in the stacks' frames. 0 or -ENOMEM; w is freed on failure. */
int rasp__where_build(struct rasp_tally *t, struct rasp_symbols *sym,
		      const struct rasp_site_rule *rule, unsigned group_by, struct rasp_where *w);
void rasp__where_free(struct rasp_where *w);

#endif /* RASP_CONSUMER_WHERE_H */
