/* The rows' type names (rows.c): as the trace holds them, or, for .NET's traces unless
 * --raw-names, as C# writes them (stacks/clr-names.c) with as few namespaces as keep two
 * types apart. */
#include "type-names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stacks/clr-names.h"

/* Whether the report names types as C# writes them: not asked for the runtime's names, and
 * the trace is .NET's: a process of an EventPipe file from .NET (the format fixes its mean and
 * it never announced one, as rasp's runtime does in its own files), or .NET's allocation ticks.
 * An LTTng trace does not say whether its AllocationSampled events came from CoreCLR or from
 * rasp, so its names stay as they are. */
bool rasp__rows_clr_names(const struct rasp_tally *t, bool raw)
{
	if (raw)
		return false;
	if (t->ticks_total)
		return true;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].samples && t->procs[i].declared && !t->procs[i].configured)
			return true;
	return false;
}

/* Sorting type indexes by their shown name, to find those that read the same. */
static const char **sort_names;

static int cmp_name(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	int c = strcmp(sort_names[a], sort_names[b]);

	return c ? c : (a > b) - (a < b);
}

/* name converted with ns, in fresh memory; NULL without memory. */
static char *converted(const char *name, enum rasp_clr_ns ns)
{
	size_t n = rasp_clr_type_name(name, ns, NULL, 0);
	char *s = malloc(n + 1);

	if (s)
		rasp_clr_type_name(name, ns, s, n + 1);
	return s;
}

/* Each type's shown name: C#'s without namespaces; where two types would read the same, with
 * every namespace; where even those read the same (names that differ only in what C# leaves
 * out, an assembly), the runtime's. The strings of converted names are the rows'. */
int rasp__rows_type_names(const struct rasp_tally *t, struct rasp_rows *out)
{
	size_t n = t->ntypes, *order;
	const char **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	out->type_names = v;
	for (size_t i = 0; i < n; i++)
		v[i] = rasp_tally_type_name(t, i);
	if (!out->clr_names || !n)
		return 0;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (enum rasp_clr_ns ns = RASP_CLR_NS_NONE;; ns = RASP_CLR_NS_ALL) {
		for (size_t i = 0; i < n; i++) {
			const char *raw = rasp_tally_type_name(t, i);
			char *c;

			/* The first round converts every name, the next ones those that clashed
			 * (marked NULL). */
			if (ns == RASP_CLR_NS_NONE || !v[i]) {
				c = converted(raw, ns);
				if (!c) {
					free(order);
					return -ENOMEM;
				}
				if (ns == RASP_CLR_NS_NONE && strcmp(c, raw) == 0) {
					free(c);
					v[i] = raw;
					continue;
				}
				if (rasp_array_grow((void **)&out->owned, &out->capowned,
						    out->nowned, sizeof(*out->owned))) {
					free(c);
					free(order);
					return -ENOMEM;
				}
				out->owned[out->nowned++] = c;
				v[i] = c;
			}
		}
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		sort_names = v;
		qsort(order, n, sizeof(*order), cmp_name);
		sort_names = NULL;
		{
			bool clash = false;

			for (size_t i = 0; i + 1 < n; i++)
				if (strcmp(v[order[i]], v[order[i + 1]]) == 0) {
					clash = true;
					break;
				}
			if (!clash)
				break;
			/* Every name of a run of equal ones is redone (NULL); the last round falls
			 * back to the runtime's names. */
			for (size_t i = 0; i < n;) {
				size_t j = i + 1;

				while (j < n && strcmp(v[order[i]], v[order[j]]) == 0)
					j++;
				for (size_t k = i; j - i > 1 && k < j; k++)
					v[order[k]] = ns == RASP_CLR_NS_ALL
							  ? rasp_tally_type_name(t, order[k])
							  : NULL;
				i = j;
			}
			if (ns == RASP_CLR_NS_ALL)
				break;
		}
	}
	free(order);
	return 0;
}
