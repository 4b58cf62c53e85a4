/* The pprof writer: the report as pprof's profile.proto (consumer/profile.proto), gzipped, for
 * go tool pprof, Pyroscope and anything else that reads heap profiles. Values are
 * [alloc_objects/count, alloc_space/bytes], the rows' estimates rounded (never sample counts);
 * one Sample per row, labelled with its type, interval and samples (and kind, process and
 * thread when grouped by them). Locations are per (process, address), Functions per (name,
 * file), Mappings per object the frames fall in. The notes become the profile's comments.
 *
 * Encoded with protobuf-c (libprotobuf-c, a maintained Debian library) from a .proto file rather
 * than by hand: the schema reads side by side with pprof's, varints and packed fields are right
 * by construction, and the tests decode with the same generated code. Its cost is the pointer
 * arrays of its data model, built here from a few flat arrays. */
#define ZLIB_CONST
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "writer.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* Labels of a sample: type, bytes_low, bytes_high, samples, kind, process, thread. */
#define MAX_LABELS 7

struct loc {
	int64_t pid;
	uint64_t ip;	  /* the return address the stack holds */
	uint64_t mapping; /* id, 0: none */
	uint64_t function;
	int64_t line;
};

struct fn {
	int64_t name, file; /* string ids */
};

struct map {
	const struct rasp_module *mod;
	bool functions, files, lines; /* every frame of it resolved to these */
	bool program;		      /* its process's executable (order_mappings) */
	size_t id;		      /* its id while collecting (order_mappings renumbers) */
};

struct pprof {
	const struct rasp_report_view *v;
	char **str; /* the string table; [0] is "" */
	size_t nstr, capstr;
	struct rasp_index str_index;
	char **owned; /* strings made here (build ids, kind numbers), freed at the end */
	size_t nowned, capowned;
	struct loc *loc; /* location id i + 1 is loc[i] */
	size_t nloc, caploc;
	struct rasp_index loc_index;
	uint64_t no_stack; /* location id of "(no stack)", 0 until a row needs it */
	struct fn *fn;
	size_t nfn, capfn;
	struct rasp_index fn_index;
	struct map *map;
	size_t nmap, capmap;
	struct rasp_index map_index;
	uint64_t *ids;	 /* every row's location ids, innermost first, one row after the other */
	size_t *first;	 /* row i's are ids[first[i] .. first[i + 1]) */
	int64_t *labels; /* per row: MAX_LABELS (key, str or num, unit) triples */
	size_t *nlabels;
};

static uint64_t str_hash(const void *ctx, size_t i)
{
	return rasp_hash_string(((const struct pprof *)ctx)->str[i]);
}

static int str_eq(const void *ctx, size_t i, const void *key)
{
	return strcmp(((const struct pprof *)ctx)->str[i], key) == 0;
}

/* The string table index of s, added when new (a copy when copy is set: s does not outlive
 * the call). A negative errno value on failure. */
static int64_t str_id(struct pprof *p, const char *s, bool copy)
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
	const struct loc *l = &((const struct pprof *)ctx)->loc[i];

	return loc_hash_of(l->pid, l->ip);
}

static int loc_eq(const void *ctx, size_t i, const void *key)
{
	const struct loc *l = &((const struct pprof *)ctx)->loc[i], *k = key;

	return l->pid == k->pid && l->ip == k->ip;
}

static uint64_t fn_hash_of(const struct fn *f)
{
	return rasp_hash_mix64(rasp_hash_mix64((uint64_t)f->name) ^ (uint64_t)f->file);
}

static uint64_t fn_hash(const void *ctx, size_t i)
{
	return fn_hash_of(&((const struct pprof *)ctx)->fn[i]);
}

static int fn_eq(const void *ctx, size_t i, const void *key)
{
	const struct fn *f = &((const struct pprof *)ctx)->fn[i], *k = key;

	return f->name == k->name && f->file == k->file;
}

static uint64_t map_hash(const void *ctx, size_t i)
{
	return rasp_hash_mix64((uint64_t)(uintptr_t)((const struct pprof *)ctx)->map[i].mod);
}

static int map_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct pprof *)ctx)->map[i].mod == key;
}

/* The function id of (name, file). 0 on failure (ids start at 1). */
static uint64_t fn_id(struct pprof *p, const char *name, const char *file)
{
	struct fn key;
	size_t slot, i;

	/* One statement each: the string table's order must not depend on the compiler's. */
	key.name = str_id(p, name, false);
	key.file = str_id(p, file, false);
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
static uint64_t map_id(struct pprof *p, const struct rasp_frame *f, int *rc)
{
	const struct rasp_module *mod = f->module;
	struct map *m;
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
		p->map[i] = (struct map){
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
static uint64_t loc_id(struct pprof *p, const struct rasp_row *row, size_t k, int *rc)
{
	const struct rasp_tally *t = p->v->tally;
	const struct rasp_stack *st = rasp_stacks_get(&t->stacks, row->stack);
	struct loc key = {.pid = st->pid, .ip = rasp_stacks_frames(&t->stacks, st)[k]};
	struct rasp_frame f;
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
static uint64_t no_stack_id(struct pprof *p, int *rc)
{
	*rc = -ENOMEM;
	if (!p->no_stack) {
		struct loc l = {.pid = RASP_ID_UNKNOWN, .function = fn_id(p, "(no stack)", "")};

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
static int rounded(double x, int64_t *out)
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
static int row_labels(struct pprof *p, size_t i)
{
	const struct rasp_row *row = &p->v->rows->v[i];
	unsigned by = p->v->rows->group_by;
	int64_t *l = &p->labels[i * MAX_LABELS * 4], low, high, bytes = str_id(p, "bytes", false);
	size_t n = 0;
	char buf[32];
	int rc;

	if ((rc = rounded(row->est.bytes_low, &low)) || (rc = rounded(row->est.bytes_high, &high)))
		return rc;
	rc = put_label(l, &n, str_id(p, "type", false),
		       str_id(p, rasp_row_type(p->v->tally, row), false), 0, 0);
	if (!rc)
		rc = put_label(l, &n, str_id(p, "bytes_low", false), 0, low, bytes);
	if (!rc)
		rc = put_label(l, &n, str_id(p, "bytes_high", false), 0, high, bytes);
	if (!rc)
		rc = put_label(l, &n, str_id(p, "samples", false), 0, (int64_t)row->est.samples, 0);
	if (!rc && (by & RASP_GROUP_KIND))
		rc = put_label(l, &n, str_id(p, "kind", false),
			       str_id(p, rasp_kind_name(row->kind, buf, sizeof(buf)), true), 0, 0);
	if (!rc && (by & RASP_GROUP_PROCESS) && row->process != RASP_ID_UNKNOWN)
		rc = put_label(l, &n, str_id(p, "process", false), 0, row->process, 0);
	if (!rc && (by & RASP_GROUP_THREAD) && row->thread != RASP_ID_UNKNOWN)
		rc = put_label(l, &n, str_id(p, "thread", false), 0, row->thread, 0);
	p->nlabels[i] = n;
	return rc;
}

/* The period: the sampling mean, when every sampled process used the same one (0 if not). */
static int64_t period_of(const struct rasp_tally *t)
{
	double mean = 0;

	for (size_t i = 0; i < t->nprocs; i++) {
		const struct rasp_tally_process *pr = &t->procs[i];

		if (!pr->samples)
			continue;
		if (pr->mean_low != pr->mean_high || (mean && mean != pr->mean_low))
			return 0;
		mean = pr->mean_low;
	}
	return mean < 9.2e18 ? llround(mean) : 0;
}

static const char *const fixed[] = {
    "",		 "alloc_objects", "count",   "alloc_space", "bytes",   "space",	 "type",
    "bytes_low", "bytes_high",	  "samples", "kind",	    "process", "thread",
};

/* Gathers the string table, locations, functions, mappings and labels of every row. */
static int collect(struct pprof *p)
{
	const struct rasp_rows *r = p->v->rows;
	size_t total = 0;
	int rc = 0;

	p->first = calloc(r->n + 1, sizeof(*p->first));
	p->labels = calloc(r->n ? r->n : 1, MAX_LABELS * 4 * sizeof(*p->labels));
	p->nlabels = calloc(r->n ? r->n : 1, sizeof(*p->nlabels));
	if (!p->first || !p->labels || !p->nlabels)
		return -ENOMEM;
	/* The fixed strings first, "" at 0 as the format wants, so their ids never vary. */
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (str_id(p, fixed[i], false) != (int64_t)i)
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
	const struct map *a = pa, *b = pb;

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
static int order_mappings(struct pprof *p)
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

static void lowercase_hex(const uint8_t *v, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[v[i] >> 4];
		out[2 * i + 1] = digits[v[i] & 15];
	}
	out[2 * n] = '\0';
}

/* protobuf-c packs into this: each piece it appends goes through deflate to the file, so the
 * encoded profile is never held whole. */
struct gz {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;
	unsigned char chunk[16384];
};

static int gz_run(struct gz *g, int flush)
{
	for (;;) {
		size_t have;
		int zr;

		g->z.next_out = g->chunk;
		g->z.avail_out = sizeof(g->chunk);
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EINVAL;
		have = sizeof(g->chunk) - g->z.avail_out;
		if (have && fwrite(g->chunk, 1, have, g->out) != have)
			return -EIO;
		if (flush == Z_FINISH ? zr == Z_STREAM_END : g->z.avail_out != 0)
			return 0;
	}
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz *g = (struct gz *)b;

	/* avail_in is an unsigned int: longer pieces go in parts. */
	while (len && !g->err) {
		size_t part = len < 1u << 30 ? len : 1u << 30;

		g->z.next_in = data;
		g->z.avail_in = (uInt)part;
		g->err = gz_run(g, Z_NO_FLUSH);
		data += part;
		len -= part;
	}
}

/* Builds protobuf-c's structures over the collected tables and writes them, gzipped. */
static int emit(struct pprof *p, FILE *out)
{
	const struct rasp_report_view *v = p->v;
	const struct rasp_rows *r = v->rows;
	size_t n = r->n, nnotes = v->notes->n;
	pb_profile prof;
	pb_value_type types[2], period_type, *ptypes[2] = {&types[0], &types[1]};
	pb_sample *samples = calloc(n ? n : 1, sizeof(*samples));
	pb_sample **psamples = calloc(n ? n : 1, sizeof(*psamples));
	pb_label *labels = calloc(n ? n : 1, MAX_LABELS * sizeof(*labels));
	pb_label **plabels = calloc(n ? n : 1, MAX_LABELS * sizeof(*plabels));
	int64_t *values = calloc(n ? n : 1, 2 * sizeof(*values));
	pb_location *locs = calloc(p->nloc ? p->nloc : 1, sizeof(*locs));
	pb_location **plocs = calloc(p->nloc ? p->nloc : 1, sizeof(*plocs));
	pb_line *lines = calloc(p->nloc ? p->nloc : 1, sizeof(*lines));
	pb_line **plines = calloc(p->nloc ? p->nloc : 1, sizeof(*plines));
	pb_function *fns = calloc(p->nfn ? p->nfn : 1, sizeof(*fns));
	pb_function **pfns = calloc(p->nfn ? p->nfn : 1, sizeof(*pfns));
	pb_mapping *maps = calloc(p->nmap ? p->nmap : 1, sizeof(*maps));
	pb_mapping **pmaps = calloc(p->nmap ? p->nmap : 1, sizeof(*pmaps));
	int64_t *comments = calloc(nnotes ? nnotes : 1, sizeof(*comments));
	struct gz *g = malloc(sizeof(*g));
	int rc = -ENOMEM;

	if (!samples || !psamples || !labels || !plabels || !values || !locs || !plocs || !lines ||
	    !plines || !fns || !pfns || !maps || !pmaps || !comments || !g)
		goto out;
	perftools__profiles__profile__init(&prof);
	for (size_t i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&types[i]);
		types[i].type = str_id(p, i ? "alloc_space" : "alloc_objects", false);
		types[i].unit = str_id(p, i ? "bytes" : "count", false);
	}
	perftools__profiles__value_type__init(&period_type);
	period_type.type = str_id(p, "space", false);
	period_type.unit = str_id(p, "bytes", false);
	prof.default_sample_type = str_id(p, "alloc_space", false);
	for (size_t i = 0; i < nnotes; i++)
		comments[i] = str_id(p, v->notes->v[i].text, false);
	for (size_t i = 0; i < p->nmap; i++) {
		const struct rasp_module *mod = p->map[i].mod;
		char hex[2 * RASP_BUILD_ID_MAX + 1];
		size_t idlen =
		    mod->build_id_len < RASP_BUILD_ID_MAX ? mod->build_id_len : RASP_BUILD_ID_MAX;

		lowercase_hex(mod->build_id, idlen, hex);
		perftools__profiles__mapping__init(&maps[i]);
		maps[i].id = i + 1;
		maps[i].memory_start = mod->base;
		maps[i].memory_limit = mod->base + mod->size;
		maps[i].filename = str_id(p, mod->path, false);
		maps[i].build_id = str_id(p, hex, true);
		maps[i].has_functions = p->map[i].functions;
		maps[i].has_filenames = p->map[i].files;
		maps[i].has_line_numbers = p->map[i].lines;
		if (maps[i].filename < 0 || maps[i].build_id < 0)
			goto out;
		pmaps[i] = &maps[i];
	}
	/* Every string is in the table now: a failed str_id above left a negative id. */
	if (types[0].type < 0 || types[0].unit < 0 || types[1].type < 0 || types[1].unit < 0 ||
	    period_type.type < 0 || period_type.unit < 0)
		goto out;
	for (size_t i = 0; i < nnotes; i++)
		if (comments[i] < 0)
			goto out;
	for (size_t i = 0; i < n; i++) {
		const struct rasp_row *row = &r->v[i];

		perftools__profiles__sample__init(&samples[i]);
		samples[i].n_location_id = p->first[i + 1] - p->first[i];
		samples[i].location_id = &p->ids[p->first[i]];
		if ((rc = rounded(row->est.objects, &values[2 * i])) ||
		    (rc = rounded(row->est.bytes, &values[2 * i + 1])))
			goto out;
		samples[i].n_value = 2;
		samples[i].value = &values[2 * i];
		samples[i].n_label = p->nlabels[i];
		samples[i].label = &plabels[i * MAX_LABELS];
		for (size_t k = 0; k < p->nlabels[i]; k++) {
			const int64_t *l = &p->labels[(i * MAX_LABELS + k) * 4];
			pb_label *lb = &labels[i * MAX_LABELS + k];

			perftools__profiles__label__init(lb);
			lb->key = l[0];
			lb->str = l[1];
			lb->num = l[2];
			lb->num_unit = l[3];
			plabels[i * MAX_LABELS + k] = lb;
		}
		psamples[i] = &samples[i];
	}
	rc = -ENOMEM;
	for (size_t i = 0; i < p->nloc; i++) {
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = p->loc[i].function;
		lines[i].line = p->loc[i].line;
		plines[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].mapping_id = p->loc[i].mapping;
		/* The call instruction, not the return address after it: where the frame's
		 * line was resolved (symbols.c), and where pprof looks when it symbolizes. */
		locs[i].address = p->loc[i].ip ? p->loc[i].ip - 1 : 0;
		locs[i].n_line = 1;
		locs[i].line = &plines[i];
		plocs[i] = &locs[i];
	}
	for (size_t i = 0; i < p->nfn; i++) {
		perftools__profiles__function__init(&fns[i]);
		fns[i].id = i + 1;
		/* symbols.c keeps one name per function; it is the object's own. */
		fns[i].name = fns[i].system_name = p->fn[i].name;
		fns[i].filename = p->fn[i].file;
		pfns[i] = &fns[i];
	}
	prof.n_sample_type = 2;
	prof.sample_type = ptypes;
	prof.n_sample = n;
	prof.sample = psamples;
	prof.n_mapping = p->nmap;
	prof.mapping = pmaps;
	prof.n_location = p->nloc;
	prof.location = plocs;
	prof.n_function = p->nfn;
	prof.function = pfns;
	prof.n_string_table = p->nstr;
	prof.string_table = p->str;
	prof.duration_nanos = (int64_t)rasp_tally_duration_ns(v->tally);
	prof.period_type = &period_type;
	prof.period = period_of(v->tally);
	prof.n_comment = nnotes;
	prof.comment = comments;

	*g = (struct gz){.base.append = gz_append, .out = out};
	/* windowBits 15 + 16: a gzip wrapper, which is what pprof reads. Its mtime stays 0, so one
	 * trace always gives the same bytes. */
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		goto out;
	perftools__profiles__profile__pack_to_buffer(&prof, &g->base);
	rc = g->err ? g->err : gz_run(g, Z_FINISH);
	deflateEnd(&g->z);
out:
	free(g);
	free(comments);
	free(pmaps);
	free(maps);
	free(pfns);
	free(fns);
	free(plines);
	free(lines);
	free(plocs);
	free(locs);
	free(values);
	free(plabels);
	free(labels);
	free(psamples);
	free(samples);
	return rc;
}

static int write_pprof(const struct rasp_report_view *v, FILE *out)
{
	struct pprof p = {.v = v};
	int rc = collect(&p);

	if (!rc)
		rc = order_mappings(&p);
	if (!rc)
		rc = emit(&p, out);
	if (!rc && ferror(out))
		rc = -EIO;
	for (size_t i = 0; i < p.nowned; i++)
		free(p.owned[i]);
	free(p.owned);
	free(p.str);
	rasp_index_free(&p.str_index);
	free(p.loc);
	rasp_index_free(&p.loc_index);
	free(p.fn);
	rasp_index_free(&p.fn_index);
	free(p.map);
	rasp_index_free(&p.map_index);
	free(p.ids);
	free(p.first);
	free(p.labels);
	free(p.nlabels);
	return rc;
}

const struct rasp_writer rasp_writer_pprof = {"pprof", write_pprof};
