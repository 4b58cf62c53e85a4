/* See pprof.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"

static uint64_t str_hash(const void *ctx, size_t i)
{
	return rasp_hash_string(((const struct rasp_pprof *)ctx)->str[i]);
}

static int str_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct rasp_pprof *)ctx)->str[i], key) == 0;
}

/* The string table index of s, added when new (a copy when copy is set: s does not outlive
 * the call). A negative errno value on failure. */
int64_t rasp_pprof_str(struct rasp_pprof *p, const char *s, bool copy)
{
	size_t slot, i;
	char *keep = (char *)s;

	if (rasp_index_reserve(&p->str_index, p->nstr, str_hash, p))
		return -ENOMEM;
	i = rasp_index_find(&p->str_index, rasp_hash_string(s), str_eq, p, s, &slot);
	if (i != SIZE_MAX)
		return (int64_t)i;
	if (rasp_array_grow((void **)&p->str, &p->capstr, p->nstr, sizeof(*p->str)))
		return -ENOMEM;
	if (copy) {
		if (rasp_array_grow((void **)&p->owned, &p->capowned, p->nowned,
				    sizeof(*p->owned)) ||
		    !(keep = strdup(s)))
			return -ENOMEM;
		p->owned[p->nowned++] = keep;
	}
	p->str[p->nstr] = keep;
	rasp_index_put(&p->str_index, slot, p->nstr);
	return (int64_t)p->nstr++;
}

static uint64_t loc_hash_of(int64_t pid, uint64_t ip)
{
	return rasp_hash_mix64(rasp_hash_mix64((uint64_t)pid) ^ ip);
}

static uint64_t loc_hash(const void *ctx, size_t i)
{
	const struct rasp_pprof_loc *l = &((const struct rasp_pprof *)ctx)->loc[i];

	return loc_hash_of(l->pid, l->ip);
}

static int loc_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_pprof_loc *l = &((const struct rasp_pprof *)ctx)->loc[i], *k = key;

	return l->pid == k->pid && l->ip == k->ip;
}

static uint64_t fn_hash_of(const struct rasp_pprof_fn *f)
{
	return rasp_hash_mix64(rasp_hash_mix64((uint64_t)f->name) ^ (uint64_t)f->file);
}

static uint64_t fn_hash(const void *ctx, size_t i)
{
	return fn_hash_of(&((const struct rasp_pprof *)ctx)->fn[i]);
}

static int fn_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_pprof_fn *f = &((const struct rasp_pprof *)ctx)->fn[i], *k = key;

	return f->name == k->name && f->file == k->file;
}

static uint64_t map_hash(const void *ctx, size_t i)
{
	return rasp_hash_mix64((uint64_t)(uintptr_t)((const struct rasp_pprof *)ctx)->map[i].mod);
}

static int map_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct rasp_pprof *)ctx)->map[i].mod == key;
}

/* The function id of (name, file). 0 on failure (ids start at 1). */
static uint64_t fn_id(struct rasp_pprof *p, const char *name, const char *file)
{
	struct rasp_pprof_fn key;
	size_t slot, i;

	/* One statement each: the string table's order must not depend on the compiler's. */
	key.name = rasp_pprof_str(p, name, false);
	key.file = rasp_pprof_str(p, file, false);
	if (key.name < 0 || key.file < 0 || rasp_index_reserve(&p->fn_index, p->nfn, fn_hash, p))
		return 0;
	i = rasp_index_find(&p->fn_index, fn_hash_of(&key), fn_eq, p, &key, &slot);
	if (i != SIZE_MAX)
		return i + 1;
	if (rasp_array_grow((void **)&p->fn, &p->capfn, p->nfn, sizeof(*p->fn)))
		return 0;
	p->fn[p->nfn] = key;
	rasp_index_put(&p->fn_index, slot, p->nfn);
	return ++p->nfn;
}

/* The mapping of f's object, its flags narrowed by f. 0: none (no object, or .NET JIT code,
 * which is no file: a mapping per method would only repeat the function), or no memory
 * (*rc set). */
static uint64_t map_id(struct rasp_pprof *p, const struct rasp_sym_frame *f, int *rc)
{
	const struct rasp_module *mod = f->module;
	struct rasp_pprof_map *m;
	size_t slot, i;

	if (!mod || mod->method)
		return 0;
	*rc = -ENOMEM;
	if (rasp_index_reserve(&p->map_index, p->nmap, map_hash, p))
		return 0;
	i = rasp_index_find(&p->map_index, rasp_hash_mix64((uint64_t)(uintptr_t)mod), map_eq, p,
			    mod, &slot);
	if (i == SIZE_MAX) {
		if (rasp_array_grow((void **)&p->map, &p->capmap, p->nmap, sizeof(*p->map)))
			return 0;
		i = p->nmap++;
		p->map[i] = (struct rasp_pprof_map){
		    .mod = mod, .functions = true, .files = true, .lines = true, .id = i + 1};
		rasp_index_put(&p->map_index, slot, i);
	}
	*rc = 0;
	m = &p->map[i];
	m->functions &= f->function != NULL;
	m->files &= f->file != NULL;
	m->lines &= f->line > 0;
	return i + 1;
}

/* The location id of frame k of a row (pid, ip), added when new. 0 on failure (*rc set). */
static uint64_t loc_id(struct rasp_pprof *p, const struct rasp_row *row, size_t k, int *rc)
{
	const struct rasp_tally *t = p->v->tally;
	const struct rasp_stack *st = rasp_stacks_get(&t->stacks, row->stack);
	struct rasp_pprof_loc key = {.pid = st->pid, .ip = rasp_stacks_frames(&t->stacks, st)[k]};
	struct rasp_sym_frame f;
	size_t slot, i;

	*rc = -ENOMEM;
	if (rasp_index_reserve(&p->loc_index, p->nloc, loc_hash, p))
		return 0;
	i = rasp_index_find(&p->loc_index, loc_hash_of(key.pid, key.ip), loc_eq, p, &key, &slot);
	if (i != SIZE_MAX) {
		*rc = 0;
		return i + 1;
	}
	*rc = rasp_row_frame(p->v->rows, t, row, k, &f);
	if (*rc)
		return 0;
	key.mapping = map_id(p, &f, rc);
	if (*rc)
		return 0;
	/* An unresolved frame keeps its report name ("libfoo.so+0x1a2b") as its function; its
	 * mapping says has_functions false, so pprof symbolizes it if it finds the object. */
	key.function = fn_id(p, f.function ? f.function : f.name, f.file ? f.file : "");
	key.line = f.line;
	*rc = -ENOMEM;
	if (!key.function ||
	    rasp_array_grow((void **)&p->loc, &p->caploc, p->nloc, sizeof(*p->loc)))
		return 0;
	p->loc[p->nloc] = key;
	rasp_index_put(&p->loc_index, slot, p->nloc);
	*rc = 0;
	return ++p->nloc;
}

/* The location of rows without a stack: a function "(no stack)" at no address, so they show
 * as the text report names them rather than as an empty stack. */
static uint64_t no_stack_id(struct rasp_pprof *p, int *rc)
{
	*rc = -ENOMEM;
	if (!p->no_stack) {
		struct rasp_pprof_loc l = {.pid = RASP_ID_UNKNOWN,
					   .function = fn_id(p, "(no stack)", "")};

		if (!l.function ||
		    rasp_array_grow((void **)&p->loc, &p->caploc, p->nloc, sizeof(*p->loc)))
			return 0;
		/* Not in the index: no frame can ask for it. */
		p->loc[p->nloc++] = l;
		p->no_stack = p->nloc;
	}
	*rc = 0;
	return p->no_stack;
}

/* x rounded to an int64, -ERANGE when it is not finite or does not fit. */
int rasp_pprof_rounded(double x, int64_t *out)
{
	if (!isfinite(x) || fabs(x) >= 9.2e18)
		return -ERANGE;
	*out = llround(x);
	return 0;
}

/* Appends a label (key, str, num, unit) to l; -ENOMEM when an id is negative (a str_id that
 * failed). */
static int put_label(int64_t *l, size_t *n, int64_t key, int64_t str, int64_t num, int64_t unit)
{
	if (key < 0 || str < 0 || unit < 0)
		return -ENOMEM;
	l += 4 * (*n)++;
	l[0] = key;
	l[1] = str;
	l[2] = num;
	l[3] = unit;
	return 0;
}

/* Row i's labels in p->labels. Their keys and units are in the table already (collect). */
static int row_labels(struct rasp_pprof *p, size_t i)
{
	const struct rasp_row *row = &p->v->rows->v[i];
	unsigned by = p->v->rows->group_by;
	int64_t *l = &p->labels[i * RASP_PPROF_MAX_LABELS * 4], low, high,
		bytes = rasp_pprof_str(p, "bytes", false);
	size_t n = 0;
	char buf[32];
	int rc;

	if ((rc = rasp_pprof_rounded(row->est.bytes_low, &low)) ||
	    (rc = rasp_pprof_rounded(row->est.bytes_high, &high)))
		return rc;
	rc = put_label(l, &n, rasp_pprof_str(p, "type", false),
		       rasp_pprof_str(p, rasp_row_type(p->v->tally, row), false), 0, 0);
	if (!rc)
		rc = put_label(l, &n, rasp_pprof_str(p, "bytes_low", false), 0, low, bytes);
	if (!rc)
		rc = put_label(l, &n, rasp_pprof_str(p, "bytes_high", false), 0, high, bytes);
	if (!rc)
		rc = put_label(l, &n, rasp_pprof_str(p, "samples", false), 0,
			       (int64_t)row->est.samples, 0);
	if (!rc && (by & RASP_GROUP_KIND))
		rc = put_label(l, &n, rasp_pprof_str(p, "kind", false),
			       rasp_pprof_str(p, rasp_kind_name(row->kind, buf, sizeof(buf)), true),
			       0, 0);
	if (!rc && (by & RASP_GROUP_PROCESS) && row->process != RASP_ID_UNKNOWN)
		rc = put_label(l, &n, rasp_pprof_str(p, "process", false), 0, row->process, 0);
	if (!rc && (by & RASP_GROUP_THREAD) && row->thread != RASP_ID_UNKNOWN)
		rc = put_label(l, &n, rasp_pprof_str(p, "thread", false), 0, row->thread, 0);
	p->nlabels[i] = n;
	return rc;
}

static const char *const fixed[] = {
    "",		 "alloc_objects", "count",   "alloc_space", "bytes",   "space",	 "type",
    "bytes_low", "bytes_high",	  "samples", "kind",	    "process", "thread",
};

/* Gathers the string table, locations, functions, mappings and labels of every row. */
int rasp_pprof_collect(struct rasp_pprof *p)
{
	const struct rasp_rows *r = p->v->rows;
	size_t total = 0;
	int rc = 0;

	p->first = calloc(r->n + 1, sizeof(*p->first));
	p->labels = calloc(r->n ? r->n : 1, RASP_PPROF_MAX_LABELS * 4 * sizeof(*p->labels));
	p->nlabels = calloc(r->n ? r->n : 1, sizeof(*p->nlabels));
	if (!p->first || !p->labels || !p->nlabels)
		return -ENOMEM;
	/* The fixed strings first, "" at 0 as the format wants, so their ids never vary. */
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (rasp_pprof_str(p, fixed[i], false) != (int64_t)i)
			return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		size_t d = rasp_row_depth(p->v->tally, &r->v[i]);

		p->first[i] = total;
		if (__builtin_add_overflow(total, d ? d : 1, &total))
			return -ENOMEM;
	}
	p->first[r->n] = total;
	p->ids = calloc(total ? total : 1, sizeof(*p->ids));
	if (!p->ids)
		return -ENOMEM;
	for (size_t i = 0; i < r->n && !rc; i++) {
		const struct rasp_row *row = &r->v[i];
		size_t d = rasp_row_depth(p->v->tally, row);

		if (!d)
			p->ids[p->first[i]] = no_stack_id(p, &rc);
		for (size_t k = 0; k < d && !rc; k++)
			p->ids[p->first[i] + k] = loc_id(p, row, k, &rc);
		if (!rc)
			rc = row_labels(p, i);
	}
	return rc;
}

static int cmp_map(const void *pa, const void *pb)
{
	const struct rasp_pprof_map *a = pa, *b = pb;

	if (a->program != b->program)
		return a->program ? -1 : 1;
	return a->mod->order < b->mod->order ? -1 : a->mod->order > b->mod->order;
}

/* Whether mod is its process's executable: its file name starts with the process's name (a
 * procname is the first 15 bytes of it). */
static bool is_program(const struct rasp_tally *t, const struct rasp_module *mod)
{
	const struct rasp_tally_process *proc = rasp_tally_find_process(t, mod->pid);
	const char *name = proc ? rasp_tally_process_name(t, proc) : NULL;
	const char *base = strrchr(mod->path, '/');

	base = base ? base + 1 : mod->path;
	return !mod->method && name && *name && strncmp(base, name, strlen(name)) == 0;
}

/* Mappings with the programs' executables first, then in the order the trace recorded their
 * objects: pprof takes the first mapping for the program ("File:", and where it looks for
 * symbols), and a state dump lists objects in no particular order. Renumbers the locations'
 * mapping ids. 0 or -ENOMEM. */
int rasp_pprof_order_mappings(struct rasp_pprof *p)
{
	size_t *id = calloc(p->nmap ? p->nmap : 1, sizeof(*id));

	if (!id)
		return -ENOMEM;
	for (size_t i = 0; i < p->nmap; i++)
		p->map[i].program = is_program(p->v->tally, p->map[i].mod);
	if (p->nmap) /* p->map is NULL when there are none, which qsort must not get */
		qsort(p->map, p->nmap, sizeof(*p->map), cmp_map);
	for (size_t i = 0; i < p->nmap; i++)
		id[p->map[i].id - 1] = i + 1;
	for (size_t i = 0; i < p->nloc; i++)
		if (p->loc[i].mapping)
			p->loc[i].mapping = id[p->loc[i].mapping - 1];
	free(id);
	return 0;
}

void rasp_pprof_free(struct rasp_pprof *p)
{
	for (size_t i = 0; i < p->nowned; i++)
		free(p->owned[i]);
	free(p->owned);
	free(p->str);
	rasp_index_free(&p->str_index);
	free(p->loc);
	rasp_index_free(&p->loc_index);
	free(p->fn);
	rasp_index_free(&p->fn_index);
	free(p->map);
	rasp_index_free(&p->map_index);
	free(p->ids);
	free(p->first);
	free(p->labels);
	free(p->nlabels);
	*p = (struct rasp_pprof){0};
}
