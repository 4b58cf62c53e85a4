/* See flame.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"

struct key {
	uint32_t parent;
	uint8_t kind;
	const char *name;
};

static uint64_t key_hash(uint32_t parent, uint8_t kind, const char *name)
{
	return rasp_hash_mix64((uint64_t)parent << 3 | kind) ^ rasp_hash_string(name);
}

static uint64_t node_hash_of(const void *ctx, size_t i)
{
	return ((const struct rasp_flame *)ctx)->v[i].hash;
}

static int node_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_flame_node *n = &((const struct rasp_flame *)ctx)->v[i];
	const struct key *k = key;

	return n->parent == k->parent && n->kind == k->kind && strcmp(n->name, k->name) == 0;
}

static uint64_t str_hash_of(const void *ctx, size_t i)
{
	return rasp_hash_string(((const struct rasp_flame_strings *)ctx)->v[i]);
}

static int str_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct rasp_flame_strings *)ctx)->v[i], key) == 0;
}

/* The index of s in the table, added when new. 0 or -ENOMEM. */
static int intern(struct rasp_flame_strings *t, const char *s, uint32_t *id)
{
	size_t slot, i;

	if (rasp_index_reserve(&t->index, t->n, str_hash_of, t))
		return -ENOMEM;
	i = rasp_index_find(&t->index, rasp_hash_string(s), str_eq, t, s, &slot);
	if (i == SIZE_MAX) {
		if (rasp_array_grow((void **)&t->v, &t->cap, t->n, sizeof(*t->v)))
			return -ENOMEM;
		t->v[t->n] = s;
		rasp_index_put(&t->index, slot, t->n);
		i = t->n++;
	}
	*id = (uint32_t)i;
	return 0;
}

/* A string printed into memory the graph frees; NULL without memory. */
__attribute__((format(printf, 2, 3))) static char *own(struct rasp_flame *g, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (rasp_array_grow((void **)&g->owned, &g->capowned, g->nowned, sizeof(*g->owned)))
		return NULL;
	va_start(ap, fmt);
	s = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	if (s)
		g->owned[g->nowned++] = s;
	return s;
}

/* The child of `parent` of this kind and name (a string that outlives the graph), added when
 * new. 0 or -ENOMEM. */
static int child(struct rasp_flame *g, uint32_t parent, uint8_t kind, const char *name,
		 uint32_t *out)
{
	struct key k = {parent, kind, name};
	uint64_t h = key_hash(parent, kind, name);
	size_t slot, i;

	if (rasp_index_reserve(&g->index, g->n, node_hash_of, g))
		return -ENOMEM;
	i = rasp_index_find(&g->index, h, node_eq, g, &k, &slot);
	if (i == SIZE_MAX) {
		if (rasp_array_grow((void **)&g->v, &g->cap, g->n, sizeof(*g->v)))
			return -ENOMEM;
		g->v[g->n] = (struct rasp_flame_node){
		    .parent = parent, .kind = kind, .name = name, .hash = h};
		rasp_index_put(&g->index, slot, g->n);
		i = g->n++;
	}
	*out = (uint32_t)i;
	return 0;
}

/* child() named by a label made here (NULL: no memory): a new node keeps it, else it is
 * freed. */
static int child_made(struct rasp_flame *g, uint32_t parent, uint8_t kind, char *label,
		      uint32_t *out)
{
	size_t before = g->n;
	int ret;

	if (!label ||
	    rasp_array_grow((void **)&g->owned, &g->capowned, g->nowned, sizeof(*g->owned))) {
		free(label);
		return -ENOMEM;
	}
	ret = child(g, parent, kind, label, out);
	if (!ret && g->n > before)
		g->owned[g->nowned++] = label;
	else
		free(label);
	return ret;
}

__attribute__((format(printf, 1, 2))) static char *dupf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	return s;
}

/* Where a frame merged into node x was: its file, call line and object. */
static void note_frame(struct rasp_flame_node *x, const struct rasp_sym_frame *f)
{
	if (f->module && !x->object)
		x->object =
		    f->module->method ? ".NET method (named by the trace)" : f->module->path;
	if (!f->file)
		return;
	if (!x->file)
		x->file = f->file;
	else if (strcmp(x->file, f->file) != 0)
		x->several_files = true;
	for (uint8_t i = 0; i < x->nlines; i++)
		if (x->lines[i] == f->line)
			return;
	if (x->nlines < RASP_FLAME_MAX_LINES)
		x->lines[x->nlines++] = f->line;
	else
		x->more_lines = true;
}

/* The path of row r from the root: process and thread when the rows are grouped by them,
 * the frames outermost first ("(no stack)" for samples without one), the type, the kind. */
static int add_row(const struct rasp_report_view *v, struct rasp_flame *g, size_t r)
{
	const struct rasp_row *row = &v->rows->v[r];
	unsigned by = v->rows->group_by;
	uint32_t cur = 0;
	char buf[32];
	int ret = 0;

	if (by & RASP_GROUP_PROCESS) {
		const struct rasp_tally_process *p =
		    rasp_tally_find_process(v->tally, row->process);
		const char *name = p ? rasp_tally_process_name(v->tally, p) : NULL;

		if (row->process == RASP_ID_UNKNOWN)
			ret = child(g, cur, RASP_FLAME_PROCESS, "unknown process", &cur);
		else
			ret = child_made(g, cur, RASP_FLAME_PROCESS,
					 dupf("process %" PRId64 "%s%s", row->process,
					      name ? " " : "", name ? name : ""),
					 &cur);
	}
	if (!ret && (by & RASP_GROUP_THREAD)) {
		if (row->thread == RASP_ID_UNKNOWN)
			ret = child(g, cur, RASP_FLAME_THREAD, "unknown thread", &cur);
		else
			ret = child_made(g, cur, RASP_FLAME_THREAD,
					 dupf("thread %" PRId64, row->thread), &cur);
	}
	if (!ret && (by & RASP_GROUP_STACK)) {
		size_t depth = rasp_row_depth(v->tally, row);

		if (!depth)
			ret = child(g, cur, RASP_FLAME_NO_STACK, "(no stack)", &cur);
		for (size_t k = depth; k-- > 0 && !ret;) {
			struct rasp_sym_frame f;

			ret = rasp_row_frame(v->rows, v->tally, row, k, &f);
			/* A function's frames merge: one node per function, whatever the
			 * call line (kept for the tooltip); unresolved ones by object+offset. */
			if (!ret)
				ret = child(g, cur, RASP_FLAME_FRAME,
					    f.function ? f.function : f.name, &cur);
			if (!ret)
				note_frame(&g->v[cur], &f);
		}
	} else if (!ret && (by & RASP_GROUP_SITE)) {
		/* Grouped by site only (not what rasp_report_keys asks of this format): the
		 * allocating frame is all that is known of the stack. */
		ret = child(g, cur, row->site ? RASP_FLAME_FRAME : RASP_FLAME_NO_STACK,
			    row->site ? rasp_row_site(v->rows, row) : "(no stack)", &cur);
	}
	if (!ret && (by & RASP_GROUP_TYPE))
		ret = child(g, cur, RASP_FLAME_TYPE, rasp_row_type(v->tally, row), &cur);
	if (!ret && (by & RASP_GROUP_KIND))
		ret = child_made(g, cur, RASP_FLAME_KIND,
				 dupf("%s", rasp_kind_name(row->kind, buf, sizeof(buf))), &cur);
	g->leaf[r] = cur;
	return ret;
}

void rasp_flame_free(struct rasp_flame *g)
{
	for (size_t i = 0; i < g->nowned; i++)
		free(g->owned[i]);
	free(g->owned);
	free(g->v);
	free(g->kids);
	free(g->leaf);
	rasp_index_free(&g->index);
	free(g->str.v);
	rasp_index_free(&g->str.index);
	*g = (struct rasp_flame){0};
}

/* The tree of every row's path, with each node's children grouped (insertion order). Cost:
 * one lookup per frame of every row. 0 or -ENOMEM. */
int rasp_flame_build(const struct rasp_report_view *v, struct rasp_flame *g)
{
	uint32_t root;
	size_t *at = NULL;
	int ret;

	g->leaf = malloc((v->rows->n ? v->rows->n : 1) * sizeof(*g->leaf));
	if (!g->leaf)
		return -ENOMEM;
	ret = child(g, UINT32_MAX, RASP_FLAME_ROOT, "all", &root);
	if (ret)
		return ret;
	/* The root is every row: the report's total, as the table's TOTAL line says it. */
	g->v[root].est = v->rows->total;
	for (size_t r = 0; r < v->rows->n && !ret; r++)
		ret = add_row(v, g, r);
	if (ret)
		return ret;
	g->kids = malloc(g->n * sizeof(*g->kids));
	at = calloc(g->n + 1, sizeof(*at));
	if (!g->kids || !at) {
		free(at);
		return -ENOMEM;
	}
	for (size_t i = 1; i < g->n; i++)
		g->v[g->v[i].parent].nkids++;
	for (size_t i = 0, first = 0; i < g->n; i++) {
		g->v[i].first_kid = (uint32_t)first;
		at[i] = first;
		first += g->v[i].nkids;
	}
	for (size_t i = 1; i < g->n; i++)
		g->kids[at[g->v[i].parent]++] = &g->v[i];
	free(at);
	return 0;
}

/* Each node's estimate: the set of rows whose path goes through it, which a pre-order makes
 * one run of the rows ordered by their leaf (a counting sort). Cost: rasp_rows_sum of every
 * node, so cells times the tree's depth. 0, -ENOMEM or -ERANGE. */
int rasp_flame_estimate(const struct rasp_report_view *v, struct rasp_flame *g)
{
	size_t n = g->n, nrows = v->rows->n, npos = 0;
	uint32_t *stack = malloc(n * sizeof(*stack)), *order = malloc(n * sizeof(*order));
	size_t *start = calloc(n + 1, sizeof(*start)), *rows = malloc((nrows + 1) * sizeof(*rows));
	size_t depth = 1;
	int ret = 0;

	if (!stack || !order || !start || !rows) {
		ret = -ENOMEM;
		goto out;
	}
	stack[0] = 0;
	while (depth) {
		struct rasp_flame_node *x = &g->v[stack[--depth]];

		x->pos = (uint32_t)npos;
		x->size = 1;
		order[npos++] = (uint32_t)(x - g->v);
		for (uint32_t k = 0; k < x->nkids; k++)
			stack[depth++] = (uint32_t)(g->kids[x->first_kid + k] - g->v);
	}
	/* Children follow their parent in the pre-order: sizes add up from the end. */
	for (size_t p = n; p-- > 1;)
		g->v[g->v[order[p]].parent].size += g->v[order[p]].size;
	for (size_t r = 0; r < nrows; r++)
		start[g->v[g->leaf[r]].pos + 1]++;
	for (size_t p = 0; p < n; p++)
		start[p + 1] += start[p];
	for (size_t r = 0; r < nrows; r++)
		rows[start[g->v[g->leaf[r]].pos]++] = r;
	/* start[p] is now the end of position p's rows: shift back to their beginnings. */
	memmove(start + 1, start, n * sizeof(*start));
	start[0] = 0;
	for (size_t i = 1; i < n && !ret; i++) {
		struct rasp_flame_node *x = &g->v[i];
		size_t lo = start[x->pos], hi = start[x->pos + x->size];

		ret = rasp_rows_sum(v->rows, v->tally, rows + lo, hi - lo, &x->est);
	}
out:
	free(stack);
	free(order);
	free(start);
	free(rows);
	return ret;
}

/* Largest first; equal bytes in kind then name order, so pages are reproducible. */
static int cmp_kid(const void *pa, const void *pb)
{
	const struct rasp_flame_node *a = *(struct rasp_flame_node *const *)pa,
				     *b = *(struct rasp_flame_node *const *)pb;

	if (a->est.bytes != b->est.bytes)
		return a->est.bytes > b->est.bytes ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* "demo.c:12, 17 in /usr/bin/demo": where a function node's frames were. NULL (and 0) when
 * nothing is known; -ENOMEM. */
static int detail_of(struct rasp_flame *g, const struct rasp_flame_node *x, const char **out)
{
	char lines[RASP_FLAME_MAX_LINES * 12 + 8] = "";
	size_t used = 0;

	*out = NULL;
	if (x->kind == RASP_FLAME_NO_STACK) {
		*out = "samples recorded without a call stack";
		return 0;
	}
	if (x->kind != RASP_FLAME_FRAME || (!x->file && !x->object))
		return 0;
	for (uint8_t i = 0; i < x->nlines; i++)
		used += (size_t)snprintf(lines + used, sizeof(lines) - used, "%s%u", i ? ", " : ":",
					 x->lines[i]);
	if (x->more_lines)
		snprintf(lines + used, sizeof(lines) - used, ", ...");
	if (x->file && x->several_files)
		*out = own(g, "several source files (%s%s, ...)%s%s", x->file, lines,
			   x->object ? " in " : "", x->object ? x->object : "");
	else if (x->file)
		*out = own(g, "%s%s%s%s", x->file, lines, x->object ? " in " : "",
			   x->object ? x->object : "");
	else
		*out = own(g, "in %s", x->object);
	return *out ? 0 : -ENOMEM;
}

/* Sorts every node's children and numbers the nodes in the page's pre-order (parents first,
 * children largest first), interning names and details. 0 or -ENOMEM. */
int rasp_flame_order(struct rasp_flame *g, struct rasp_flame_node ***order_out)
{
	struct rasp_flame_node **stack = malloc(g->n * sizeof(*stack));
	struct rasp_flame_node **order = malloc(g->n * sizeof(*order));
	size_t depth = 1, n = 0;
	int ret = 0;

	if (!stack || !order) {
		free(stack);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->n; i++)
		qsort(g->kids + g->v[i].first_kid, g->v[i].nkids, sizeof(*g->kids), cmp_kid);
	stack[0] = &g->v[0];
	while (depth && !ret) {
		struct rasp_flame_node *x = stack[--depth];
		const char *detail;

		x->out = (uint32_t)n;
		order[n++] = x;
		ret = intern(&g->str, x->name, &x->name_id);
		if (!ret)
			ret = detail_of(g, x, &detail);
		x->detail_id = UINT32_MAX;
		if (!ret && detail)
			ret = intern(&g->str, detail, &x->detail_id);
		/* Pushed last to first: the largest child pops first. */
		for (uint32_t k = x->nkids; k-- > 0;)
			stack[depth++] = g->kids[x->first_kid + k];
	}
	free(stack);
	if (ret) {
		free(order);
		return ret;
	}
	*order_out = order;
	return 0;
}
