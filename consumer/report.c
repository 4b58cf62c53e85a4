/* The report of sink.rasp.report: parameters, the per-(group, process, thread, mean) cells of
 * the estimator, grouping, sorting and the three output formats. No babeltrace2 types here,
 * so tests/consumer/test-report.c drives all of it directly. Per sample the cost is one
 * type-name hash (only when grouping by type) and one cell hash; everything else is at END. */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"

#define PARAM_NAMES "format|group-by|confidence|sampling-mean|top|output|strict"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void rasp_report_options_init(struct rasp_report_options *opt)
{
	opt->format = RASP_REPORT_FORMAT_TEXT;
	opt->group_by = RASP_REPORT_BY_TYPE;
	opt->confidence = 0.95;
	opt->sampling_mean = RASP_EST_DEFAULT_MEAN;
	opt->top = 0;
	opt->output = NULL;
	opt->strict = true;
}

void rasp_report_options_fini(struct rasp_report_options *opt)
{
	free(opt->output);
	opt->output = NULL;
}

static int wrong_kind(const char *name, const char *kind, char *err, size_t errlen)
{
	static const struct {
		const char *name, *accepted;
	} want[] = {
	    {"format", "string text|csv|json"},
	    {"group-by", "string or array of strings, each type|kind|thread|process"},
	    {"confidence", "real number in (0, 1)"},
	    {"sampling-mean", "number >= 1"},
	    {"top", "integer >= 0 (0 = all rows)"},
	    {"output", "non-empty file path string"},
	    {"strict", "boolean true|false"},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (strcmp(name, want[i].name) == 0) {
			set_err(err, errlen, "bad parameter: name=%s value-kind=%s accepted=%s",
				name, kind, want[i].accepted);
			return -EINVAL;
		}
	}
	set_err(err, errlen, "unknown parameter: name=%s accepted=" PARAM_NAMES, name);
	return -EINVAL;
}

int rasp_report_option_bad_kind(const char *name, char *err, size_t errlen)
{
	return wrong_kind(name, "other", err, errlen);
}

/* Parses "type,kind" into a mask; a stray comma or an unknown word is an error. */
static int parse_group_by(const char *value, unsigned *mask, char *err, size_t errlen)
{
	static const struct {
		const char *word;
		unsigned bit;
	} keys[] = {{"type", RASP_REPORT_BY_TYPE},
		    {"kind", RASP_REPORT_BY_KIND},
		    {"thread", RASP_REPORT_BY_THREAD},
		    {"process", RASP_REPORT_BY_PROCESS}};
	const char *p = value;
	unsigned m = 0;

	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned bit = 0;

		while (len > 0 && *p == ' ') {
			p++;
			len--;
		}
		while (len > 0 && p[len - 1] == ' ')
			len--;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (strlen(keys[i].word) == len && strncmp(p, keys[i].word, len) == 0)
				bit = keys[i].bit;
		}
		if (!bit) {
			set_err(
			    err, errlen,
			    "bad parameter: name=group-by value=\"%s\" "
			    "accepted=comma-separated list or array of type|kind|thread|process",
			    value);
			return -EINVAL;
		}
		m |= bit;
		p += strcspn(p, ",");
		if (*p == '\0')
			break;
		p++;
	}
	*mask = m;
	return 0;
}

int rasp_report_option_set_string(struct rasp_report_options *opt, const char *name,
				  const char *value, char *err, size_t errlen)
{
	if (strcmp(name, "format") == 0) {
		if (strcmp(value, "text") == 0)
			opt->format = RASP_REPORT_FORMAT_TEXT;
		else if (strcmp(value, "csv") == 0)
			opt->format = RASP_REPORT_FORMAT_CSV;
		else if (strcmp(value, "json") == 0)
			opt->format = RASP_REPORT_FORMAT_JSON;
		else {
			set_err(err, errlen,
				"bad parameter: name=format value=\"%s\" accepted=text|csv|json",
				value);
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(name, "group-by") == 0)
		return parse_group_by(value, &opt->group_by, err, errlen);
	if (strcmp(name, "output") == 0) {
		char *copy;

		if (value[0] == '\0')
			return wrong_kind(name, "empty-string", err, errlen);
		copy = strdup(value);
		if (!copy) {
			set_err(err, errlen, "out of memory: name=output");
			return -ENOMEM;
		}
		free(opt->output);
		opt->output = copy;
		return 0;
	}
	return wrong_kind(name, "string", err, errlen);
}

int rasp_report_option_set_number(struct rasp_report_options *opt, const char *name, double value,
				  bool integer, char *err, size_t errlen)
{
	if (strcmp(name, "confidence") == 0) {
		if (!(value > 0.0 && value < 1.0)) {
			set_err(err, errlen,
				"bad parameter: name=confidence value=%g accepted=real number in "
				"(0, 1)",
				value);
			return -EINVAL;
		}
		opt->confidence = value;
		return 0;
	}
	if (strcmp(name, "sampling-mean") == 0) {
		/* 1/mean is p; a mean below one byte is no sampler .NET or rasp can run. */
		if (!(value >= 1.0) || !isfinite(value)) {
			set_err(err, errlen,
				"bad parameter: name=sampling-mean value=%g accepted=number >= 1",
				value);
			return -EINVAL;
		}
		opt->sampling_mean = value;
		return 0;
	}
	if (strcmp(name, "top") == 0) {
		if (!integer || !(value >= 0.0) || value > 1e18) {
			set_err(err, errlen,
				"bad parameter: name=top value=%g accepted=integer >= 0 (0 = all "
				"rows)",
				value);
			return -EINVAL;
		}
		opt->top = (uint64_t)value;
		return 0;
	}
	return wrong_kind(name, integer ? "integer" : "real", err, errlen);
}

int rasp_report_option_set_bool(struct rasp_report_options *opt, const char *name, bool value,
				char *err, size_t errlen)
{
	if (strcmp(name, "strict") == 0) {
		opt->strict = value;
		return 0;
	}
	return wrong_kind(name, "boolean", err, errlen);
}

/* ---- The accumulating state ---------------------------------------------------------- */

struct type_entry {
	char *name;
	uint64_t hash;
	uint64_t ticks;	      /* GCAllocationTick events charged to this type */
	uint64_t tick_amount; /* their AllocationAmount, bytes */
};

/* The cell key holds only the grouped fields plus process, thread and mean: samples of
 * one thread under one p are what rasp_est_sum unbiases as a unit. */
struct cell_entry {
	uint32_t type; /* type index + 1 when grouped by type, else 0 */
	uint64_t kind; /* AllocationKind when grouped by kind, else 0 */
	int64_t process, thread;
	double mean;
	struct rasp_est_cell cell;
};

struct proc_mean {
	int64_t process;
	double mean;
};

/* Open addressing, linear probing, power-of-two size, at most half full. Slots hold
 * index + 1 into the owning array (0 = empty), so the arrays can grow and be sorted. */
struct index_table {
	uint32_t *slot;
	size_t size;
};

struct rasp_report {
	struct rasp_report_options opt;
	struct type_entry *types;
	size_t ntypes, captypes;
	struct index_table type_index;
	struct cell_entry *cells;
	size_t ncells, capcells;
	struct index_table cell_index;
	struct proc_mean *means;
	size_t nmeans, capmeans;
	size_t last_mean; /* index of the last process looked up: traces come in runs */
	uint64_t discarded_events, discarded_events_unknown;
	uint64_t discarded_packets, discarded_packets_unknown;
	uint64_t skipped;
};

struct rasp_report *rasp_report_create(const struct rasp_report_options *opt)
{
	struct rasp_report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->opt = *opt;
	r->opt.output = NULL;
	if (opt->output) {
		r->opt.output = strdup(opt->output);
		if (!r->opt.output) {
			free(r);
			return NULL;
		}
	}
	return r;
}

void rasp_report_destroy(struct rasp_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ntypes; i++)
		free(r->types[i].name);
	free(r->types);
	free(r->type_index.slot);
	free(r->cells);
	free(r->cell_index.slot);
	free(r->means);
	rasp_report_options_fini(&r->opt);
	free(r);
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t hash_string(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a: type names are short */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static int grow_array(void **array, size_t *cap, size_t n, size_t elem)
{
	size_t newcap;
	void *p;

	if (n < *cap)
		return 0;
	newcap = *cap ? *cap * 2 : 16;
	if (newcap > UINT32_MAX - 1 || newcap > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*array, newcap * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = newcap;
	return 0;
}

/* Rebuilds the index when it would pass half full; hashes come from hash_of(i). */
static int index_reserve(struct index_table *t, size_t n, uint64_t (*hash_of)(const void *, size_t),
			 const void *ctx)
{
	size_t size;
	uint32_t *slot;

	if ((n + 1) * 2 <= t->size)
		return 0;
	size = t->size ? t->size * 2 : 64;
	while ((n + 1) * 2 > size)
		size *= 2;
	slot = calloc(size, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = hash_of(ctx, i) & (size - 1);

		while (slot[j])
			j = (j + 1) & (size - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(t->slot);
	t->slot = slot;
	t->size = size;
	return 0;
}

static uint64_t type_hash_of(const void *ctx, size_t i)
{
	return ((const struct rasp_report *)ctx)->types[i].hash;
}

static uint64_t cell_hash(uint32_t type, uint64_t kind, int64_t process, int64_t thread,
			  double mean)
{
	uint64_t h = mix64(type ^ (kind << 32));

	h = mix64(h ^ (uint64_t)process);
	h = mix64(h ^ (uint64_t)thread);
	return mix64(h ^ (uint64_t)mean);
}

static uint64_t cell_hash_of(const void *ctx, size_t i)
{
	const struct cell_entry *c = &((const struct rasp_report *)ctx)->cells[i];

	return cell_hash(c->type, c->kind, c->process, c->thread, c->mean);
}

/* Index of type `name`, added when new. */
static int type_lookup(struct rasp_report *r, const char *name, size_t *out)
{
	uint64_t h = hash_string(name);
	size_t j;
	int ret;

	ret = index_reserve(&r->type_index, r->ntypes, type_hash_of, r);
	if (ret)
		return ret;
	for (j = h & (r->type_index.size - 1); r->type_index.slot[j];
	     j = (j + 1) & (r->type_index.size - 1)) {
		struct type_entry *t = &r->types[r->type_index.slot[j] - 1];

		if (t->hash == h && strcmp(t->name, name) == 0) {
			*out = r->type_index.slot[j] - 1;
			return 0;
		}
	}
	ret = grow_array((void **)&r->types, &r->captypes, r->ntypes, sizeof(*r->types));
	if (ret)
		return ret;
	r->types[r->ntypes] = (struct type_entry){.name = strdup(name), .hash = h};
	if (!r->types[r->ntypes].name)
		return -ENOMEM;
	r->type_index.slot[j] = (uint32_t)(r->ntypes + 1);
	*out = r->ntypes++;
	return 0;
}

static double process_mean(struct rasp_report *r, int64_t process)
{
	if (r->last_mean < r->nmeans && r->means[r->last_mean].process == process)
		return r->means[r->last_mean].mean;
	for (size_t i = 0; i < r->nmeans; i++) {
		if (r->means[i].process == process) {
			r->last_mean = i;
			return r->means[i].mean;
		}
	}
	return r->opt.sampling_mean;
}

int rasp_report_set_mean(struct rasp_report *r, int64_t process, double mean)
{
	int ret;

	if (!(mean >= 1.0) || !isfinite(mean))
		return -EINVAL;
	for (size_t i = 0; i < r->nmeans; i++) {
		if (r->means[i].process == process) {
			r->means[i].mean = mean;
			return 0;
		}
	}
	ret = grow_array((void **)&r->means, &r->capmeans, r->nmeans, sizeof(*r->means));
	if (ret)
		return ret;
	r->means[r->nmeans++] = (struct proc_mean){.process = process, .mean = mean};
	return 0;
}

int rasp_report_add_sample(struct rasp_report *r, const char *type, uint64_t kind, int64_t process,
			   int64_t thread, uint64_t size, uint64_t offset)
{
	unsigned by = r->opt.group_by;
	double mean = process_mean(r, process);
	uint32_t type_key = 0;
	uint64_t kind_key = (by & RASP_REPORT_BY_KIND) ? kind : 0;
	uint64_t h;
	size_t j;
	struct cell_entry *c;
	int ret;

	if (size == 0 || offset >= size)
		return -EINVAL;
	if (by & RASP_REPORT_BY_TYPE) {
		size_t t;

		ret = type_lookup(r, type ? type : "NULL", &t);
		if (ret)
			return ret;
		type_key = (uint32_t)(t + 1);
	}
	ret = index_reserve(&r->cell_index, r->ncells, cell_hash_of, r);
	if (ret)
		return ret;
	h = cell_hash(type_key, kind_key, process, thread, mean);
	for (j = h & (r->cell_index.size - 1); r->cell_index.slot[j];
	     j = (j + 1) & (r->cell_index.size - 1)) {
		c = &r->cells[r->cell_index.slot[j] - 1];
		if (c->type == type_key && c->kind == kind_key && c->process == process &&
		    c->thread == thread && c->mean == mean)
			return rasp_est_cell_add(&c->cell, size, offset);
	}
	ret = grow_array((void **)&r->cells, &r->capcells, r->ncells, sizeof(*r->cells));
	if (ret)
		return ret;
	c = &r->cells[r->ncells];
	*c = (struct cell_entry){
	    .type = type_key, .kind = kind_key, .process = process, .thread = thread, .mean = mean};
	ret = rasp_est_cell_init(&c->cell, 1.0 / mean);
	if (ret)
		return ret;
	ret = rasp_est_cell_add(&c->cell, size, offset);
	if (ret)
		return ret; /* not published: the next add reuses the slot */
	r->cell_index.slot[j] = (uint32_t)(r->ncells + 1);
	r->ncells++;
	return 0;
}

int rasp_report_add_tick(struct rasp_report *r, const char *type, uint64_t amount)
{
	size_t t;
	int ret = type_lookup(r, type ? type : "NULL", &t);

	if (ret)
		return ret;
	r->types[t].ticks++;
	r->types[t].tick_amount += amount;
	return 0;
}

void rasp_report_add_discarded_events(struct rasp_report *r, uint64_t count, bool count_known)
{
	if (count_known)
		r->discarded_events += count;
	else
		r->discarded_events_unknown++;
}

void rasp_report_add_discarded_packets(struct rasp_report *r, uint64_t count, bool count_known)
{
	if (count_known)
		r->discarded_packets += count;
	else
		r->discarded_packets_unknown++;
}

void rasp_report_add_skipped(struct rasp_report *r)
{
	r->skipped++;
}

/* ---- Rows ------------------------------------------------------------------------------ */

struct row {
	const char *type; /* NULL when not grouped by type */
	uint64_t kind;
	int64_t process, thread;
	struct rasp_est_total est;
};

static int cmp_id(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_cell_group(const void *pa, const void *pb)
{
	const struct cell_entry *a = pa, *b = pb;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->process != b->process)
		return cmp_id(a->process, b->process);
	if (a->thread != b->thread)
		return cmp_id(a->thread, b->thread);
	return a->mean < b->mean ? -1 : a->mean > b->mean;
}

static int cmp_cell_thread(const void *pa, const void *pb)
{
	const struct cell_entry *a = pa, *b = pb;

	if (a->process != b->process)
		return cmp_id(a->process, b->process);
	if (a->thread != b->thread)
		return cmp_id(a->thread, b->thread);
	return a->mean < b->mean ? -1 : a->mean > b->mean;
}

/* Largest first; equal bytes in key order, so reports are reproducible. */
static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int c;

	if (a->est.bytes != b->est.bytes)
		return a->est.bytes > b->est.bytes ? -1 : 1;
	if (a->type && b->type && (c = strcmp(a->type, b->type)) != 0)
		return c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->thread != b->thread)
		return cmp_id(a->thread, b->thread);
	return cmp_id(a->process, b->process);
}

static bool same_group(const struct cell_entry *a, const struct cell_entry *b, unsigned by)
{
	return a->type == b->type && a->kind == b->kind &&
	       (!(by & RASP_REPORT_BY_PROCESS) || a->process == b->process) &&
	       (!(by & RASP_REPORT_BY_THREAD) || a->thread == b->thread);
}

/* Sorts the cells by group (the hash index is dropped: no sample comes after this) and
 * sums each run of cells into a row, then sums per-thread cells into the total. */
static int compute(struct rasp_report *r, struct row **rows_out, size_t *nrows_out,
		   struct rasp_est_total *total)
{
	unsigned by = r->opt.group_by;
	struct rasp_est_cell *tmp = NULL;
	struct cell_entry *threads = NULL;
	struct row *rows = NULL;
	size_t nrows = 0, nthreads = 0;
	int ret = 0;

	free(r->cell_index.slot);
	r->cell_index = (struct index_table){0};
	if (r->ncells) {
		tmp = malloc(r->ncells * sizeof(*tmp));
		rows = malloc(r->ncells * sizeof(*rows));
		threads = malloc(r->ncells * sizeof(*threads));
		if (!tmp || !rows || !threads) {
			ret = -ENOMEM;
			goto out;
		}
		qsort(r->cells, r->ncells, sizeof(*r->cells), cmp_cell_group);
	}
	for (size_t i = 0; i < r->ncells;) {
		size_t n = 0;
		struct row *row = &rows[nrows++];

		row->type = r->cells[i].type ? r->types[r->cells[i].type - 1].name : NULL;
		row->kind = r->cells[i].kind;
		row->process = (by & RASP_REPORT_BY_PROCESS) ? r->cells[i].process : 0;
		row->thread = (by & RASP_REPORT_BY_THREAD) ? r->cells[i].thread : 0;
		do {
			tmp[n++] = r->cells[i++].cell;
		} while (i < r->ncells && same_group(&r->cells[i - 1], &r->cells[i], by));
		ret = rasp_est_sum(tmp, n, r->opt.confidence, &row->est);
		if (ret)
			goto out;
	}
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), cmp_row);

	/* The total: a thread's cells of all groups merge into one (cell fields are sums
	 * over samples under one p), so its window adjustments count once per thread. */
	if (r->ncells) {
		memcpy(threads, r->cells, r->ncells * sizeof(*threads));
		qsort(threads, r->ncells, sizeof(*threads), cmp_cell_thread);
	}
	for (size_t i = 0; i < r->ncells; i++) {
		if (nthreads && cmp_cell_thread(&threads[nthreads - 1], &threads[i]) == 0) {
			struct rasp_est_cell *d = &threads[nthreads - 1].cell;
			const struct rasp_est_cell *s = &threads[i].cell;

			d->samples += s->samples;
			d->bytes += s->bytes;
			d->objects += s->objects;
			d->unsampled += s->unsampled;
		} else {
			threads[nthreads++] = threads[i];
		}
	}
	for (size_t i = 0; i < nthreads; i++)
		tmp[i] = threads[i].cell;
	ret = rasp_est_sum(tmp, nthreads, r->opt.confidence, total);
out:
	free(tmp);
	free(threads);
	if (ret) {
		free(rows);
		return ret;
	}
	*rows_out = rows;
	*nrows_out = nrows;
	return 0;
}

static int cmp_tick(const void *pa, const void *pb)
{
	const struct type_entry *a = *(const struct type_entry *const *)pa;
	const struct type_entry *b = *(const struct type_entry *const *)pb;

	if (a->tick_amount != b->tick_amount)
		return a->tick_amount > b->tick_amount ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Types with ticks, largest amount first. */
static int tick_rows(struct rasp_report *r, const struct type_entry ***out, size_t *n,
		     uint64_t *ticks, uint64_t *amount)
{
	const struct type_entry **v = NULL;
	size_t k = 0;

	*ticks = *amount = 0;
	if (r->ntypes) {
		v = malloc(r->ntypes * sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < r->ntypes; i++) {
		if (r->types[i].ticks) {
			v[k++] = &r->types[i];
			*ticks += r->types[i].ticks;
			*amount += r->types[i].tick_amount;
		}
	}
	if (k)
		qsort(v, k, sizeof(*v), cmp_tick);
	*out = v;
	*n = k;
	return 0;
}

/* ---- Writers ------------------------------------------------------------------------- */

static const char *kind_name(uint64_t kind, char *buf, size_t len)
{
	static const char *const names[] = {"Small", "Large", "Pinned"};

	if (kind < 3)
		return names[kind];
	snprintf(buf, len, "%" PRIu64, kind);
	return buf;
}

static const char *id_text(int64_t id, char *buf, size_t len, const char *unknown)
{
	if (id == RASP_REPORT_ID_UNKNOWN)
		return unknown;
	snprintf(buf, len, "%" PRId64, id);
	return buf;
}

static bool lost_data(const struct rasp_report *r)
{
	return r->discarded_events || r->discarded_events_unknown || r->discarded_packets ||
	       r->discarded_packets_unknown;
}

/* One sentence, used by the text report and (on stderr) the csv one. */
static void write_lost_warning(const struct rasp_report *r, FILE *out, const char *prefix)
{
	fprintf(out, "%sWARNING: the tracer discarded ", prefix);
	if (r->discarded_events_unknown)
		fprintf(out, "an unknown number of events");
	else
		fprintf(out, "%" PRIu64 " event%s", r->discarded_events,
			r->discarded_events == 1 ? "" : "s");
	if (r->discarded_packets || r->discarded_packets_unknown) {
		if (r->discarded_packets_unknown)
			fprintf(out, " and an unknown number of packets");
		else
			fprintf(out, " and %" PRIu64 " packet%s", r->discarded_packets,
				r->discarded_packets == 1 ? "" : "s");
	}
	fprintf(out,
		".\n%sLost AllocationSampled events carried bytes no estimate can recover: "
		"every figure below is too low by an unknown amount.\n",
		prefix);
}

/* Display width in columns, counting UTF-8 code points (type names are UTF-8). */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* A cell of the text table: control characters become '?' so one row stays one line. */
static void text_cell(FILE *out, const char *s, size_t width, bool right)
{
	size_t w = text_width(s);

	if (right)
		for (size_t i = w; i < width; i++)
			fputc(' ', out);
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
	if (!right)
		for (size_t i = w; i < width; i++)
			fputc(' ', out);
}

enum { COL_TYPE, COL_KIND, COL_THREAD, COL_PROCESS, COL_SAMPLES, COL_BYTES, COL_CI, COL_OBJECTS };
#define NCOLS	 8
#define CELL_LEN 48

struct text_line {
	char cell[NCOLS][CELL_LEN];
	const char *type; /* the type name is not copied: it can be long */
};

static void text_fill(struct text_line *l, const struct row *row, const struct rasp_est_total *e)
{
	double half = (e->bytes_high - e->bytes_low) / 2.0;

	memset(l, 0, sizeof(*l));
	l->type = row && row->type ? row->type : "";
	if (row) {
		char buf[32];

		snprintf(l->cell[COL_KIND], CELL_LEN, "%s", kind_name(row->kind, buf, sizeof(buf)));
		snprintf(l->cell[COL_THREAD], CELL_LEN, "%s",
			 id_text(row->thread, buf, sizeof(buf), "-"));
		snprintf(l->cell[COL_PROCESS], CELL_LEN, "%s",
			 id_text(row->process, buf, sizeof(buf), "-"));
	}
	snprintf(l->cell[COL_SAMPLES], CELL_LEN, "%" PRIu64, e->samples);
	snprintf(l->cell[COL_BYTES], CELL_LEN, "%.0f", e->bytes);
	if (e->bytes > 0 && isfinite(half)) {
		/* Few samples give a skewed interval (at 10 samples about -52%/+71%): a single
		 * "±" would hide that and could suggest a negative bound, so the two sides are
		 * shown apart unless they agree within a tenth. */
		double lo = 100.0 * (e->bytes - e->bytes_low) / e->bytes;
		double hi = 100.0 * (e->bytes_high - e->bytes) / e->bytes;

		if (fabs(hi - lo) <= 0.1 * fmax(fabs(hi), fabs(lo)))
			snprintf(l->cell[COL_CI], CELL_LEN, "±%.1f%%", 100.0 * half / e->bytes);
		else
			snprintf(l->cell[COL_CI], CELL_LEN, "%+.1f%%/%+.1f%%", -lo, hi);
	} else
		snprintf(l->cell[COL_CI], CELL_LEN, "-");
	snprintf(l->cell[COL_OBJECTS], CELL_LEN, "%.1f", e->objects);
}

static void text_print(FILE *out, const struct text_line *l, const size_t *width, const bool *shown)
{
	const char *sep = "";

	for (int c = 0; c < NCOLS; c++) {
		if (!shown[c])
			continue;
		fputs(sep, out);
		sep = "  ";
		/* Numbers right-aligned; the interval left-aligned so the ± signs line up. */
		text_cell(out, c == COL_TYPE ? l->type : l->cell[c], width[c],
			  c >= COL_THREAD && c != COL_CI);
	}
	fputc('\n', out);
}

static int write_text(struct rasp_report *r, FILE *out, const struct row *rows, size_t nrows,
		      const struct rasp_est_total *total)
{
	static const char *const heads[NCOLS] = {"TYPE",    "KIND",  "THREAD", "PROCESS",
						 "SAMPLES", "BYTES", "",       "OBJECTS"};
	unsigned by = r->opt.group_by;
	size_t shown_rows = r->opt.top && r->opt.top < nrows ? r->opt.top : nrows;
	bool shown[NCOLS] = {by & RASP_REPORT_BY_TYPE,
			     by & RASP_REPORT_BY_KIND,
			     by & RASP_REPORT_BY_THREAD,
			     by & RASP_REPORT_BY_PROCESS,
			     true,
			     true,
			     true,
			     true};
	size_t width[NCOLS];
	struct text_line head, line, tot;
	const struct type_entry **ticks = NULL;
	size_t nticks;
	uint64_t tick_count, tick_amount;
	char ci_head[32];
	int first_key = -1, ret;

	fprintf(out, "rasp allocation report: %" PRIu64 " DotNETRuntime:AllocationSampled samples",
		total->samples);
	fprintf(out, "; sampling mean %.0f bytes", r->opt.sampling_mean);
	for (size_t i = 0; i < r->nmeans; i++)
		fprintf(out, "%s%.0f in process %" PRId64, i ? ", " : " (", r->means[i].mean,
			r->means[i].process);
	fprintf(out, "%s; %g%% confidence intervals.\n", r->nmeans ? ")" : "",
		100.0 * r->opt.confidence);
	if (lost_data(r))
		write_lost_warning(r, out, "");
	if (r->skipped)
		fprintf(out,
			"WARNING: %" PRIu64 " malformed AllocationSampled event%s skipped "
			"(strict=false): estimates leave them out.\n",
			r->skipped, r->skipped == 1 ? " was" : "s were");
	fputc('\n', out);

	memset(&head, 0, sizeof(head));
	head.type = heads[COL_TYPE];
	for (int c = 1; c < NCOLS; c++)
		snprintf(head.cell[c], CELL_LEN, "%s", heads[c]);
	snprintf(ci_head, sizeof(ci_head), "±%g%%", 100.0 * r->opt.confidence);
	snprintf(head.cell[COL_CI], CELL_LEN, "%s", ci_head);
	for (int c = 0; c < NCOLS; c++) {
		width[c] = text_width(c == COL_TYPE ? head.type : head.cell[c]);
		if (first_key < 0 && shown[c])
			first_key = c;
	}
	/* The TOTAL label sits in the first key column. */
	text_fill(&tot, NULL, total);
	if (first_key == COL_TYPE)
		tot.type = "TOTAL";
	else
		snprintf(tot.cell[first_key], CELL_LEN, "TOTAL");
	for (size_t i = 0; i <= shown_rows; i++) {
		const struct text_line *l = &tot;

		if (i < shown_rows) {
			text_fill(&line, &rows[i], &rows[i].est);
			l = &line;
		}
		for (int c = 0; c < NCOLS; c++) {
			size_t w = text_width(c == COL_TYPE ? l->type : l->cell[c]);

			if (w > width[c])
				width[c] = w;
		}
	}
	text_print(out, &head, width, shown);
	for (size_t i = 0; i < shown_rows; i++) {
		text_fill(&line, &rows[i], &rows[i].est);
		text_print(out, &line, width, shown);
	}
	if (shown_rows < nrows)
		fprintf(out, "... %zu more row%s (top=%" PRIu64 ")\n", nrows - shown_rows,
			nrows - shown_rows == 1 ? "" : "s", r->opt.top);
	text_print(out, &tot, width, shown);

	ret = tick_rows(r, &ticks, &nticks, &tick_count, &tick_amount);
	if (ret)
		return ret;
	if (nticks) {
		size_t tw = strlen("TYPE");

		for (size_t i = 0; i < nticks; i++)
			if (text_width(ticks[i]->name) > tw)
				tw = text_width(ticks[i]->name);
		fprintf(out,
			"\nGCAllocationTick events (older .NET: one tick per ~100 KB allocated, "
			"fixed stride).\nBIASED: each tick charges the whole stride to the type "
			"that happened to cross it; these are not estimates and are not part of "
			"the table above.\n");
		text_cell(out, "TYPE", tw, false);
		fprintf(out, "  %8s  %18s\n", "TICKS", "ALLOCATION_AMOUNT");
		for (size_t i = 0; i < nticks; i++) {
			text_cell(out, ticks[i]->name, tw, false);
			fprintf(out, "  %8" PRIu64 "  %18" PRIu64 "\n", ticks[i]->ticks,
				ticks[i]->tick_amount);
		}
		text_cell(out, "TOTAL", tw, false);
		fprintf(out, "  %8" PRIu64 "  %18" PRIu64 "\n", tick_count, tick_amount);
	}
	free(ticks);
	return 0;
}

static void csv_field(FILE *out, const char *s)
{
	if (s[strcspn(s, ",\"\r\n")] == '\0') {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void csv_row(FILE *out, unsigned by, const char *scope, const char *type,
		    const struct row *row, const struct rasp_est_total *e)
{
	char buf[32];

	fputs(scope, out);
	if (by & RASP_REPORT_BY_TYPE) {
		fputc(',', out);
		csv_field(out, type ? type : "");
	}
	if (by & RASP_REPORT_BY_KIND)
		fprintf(out, ",%s", row ? kind_name(row->kind, buf, sizeof(buf)) : "");
	if (by & RASP_REPORT_BY_THREAD)
		fprintf(out, ",%s", row ? id_text(row->thread, buf, sizeof(buf), "") : "");
	if (by & RASP_REPORT_BY_PROCESS)
		fprintf(out, ",%s", row ? id_text(row->process, buf, sizeof(buf), "") : "");
	fprintf(out, ",%" PRIu64 ",%.0f,%.0f,%.0f,%.1f\n", e->samples, e->bytes, e->bytes_low,
		e->bytes_high, e->objects);
}

/* One table: `scope` says what a line is (group, total, or a biased tick row), so the
 * AllocationTick figures can share the file without mixing into the estimates. */
static int write_csv(struct rasp_report *r, FILE *out, const struct row *rows, size_t nrows,
		     const struct rasp_est_total *total)
{
	unsigned by = r->opt.group_by;
	const struct type_entry **ticks = NULL;
	size_t nticks;
	uint64_t tick_count, tick_amount;
	int ret;

	if (lost_data(r))
		write_lost_warning(r, stderr, "sink.rasp.report: ");
	fputs("scope", out);
	if (by & RASP_REPORT_BY_TYPE)
		fputs(",type", out);
	if (by & RASP_REPORT_BY_KIND)
		fputs(",kind", out);
	if (by & RASP_REPORT_BY_THREAD)
		fputs(",thread", out);
	if (by & RASP_REPORT_BY_PROCESS)
		fputs(",process", out);
	fputs(",samples,bytes,bytes_low,bytes_high,objects\n", out);
	for (size_t i = 0; i < nrows; i++)
		csv_row(out, by, "group", rows[i].type, &rows[i], &rows[i].est);
	csv_row(out, by, "total", NULL, NULL, total);

	ret = tick_rows(r, &ticks, &nticks, &tick_count, &tick_amount);
	if (ret)
		return ret;
	/* Tick rows: samples = ticks, bytes = AllocationAmount; no interval, no objects. */
	for (size_t i = 0; i < nticks; i++) {
		fputs("allocation-tick-biased,", out);
		csv_field(out, ticks[i]->name);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",,,\n", ticks[i]->ticks,
			ticks[i]->tick_amount);
	}
	free(ticks);
	return 0;
}

void rasp_report_json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	while (*p) {
		unsigned char c = *p;
		size_t len = 0;

		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
			p++;
			continue;
		}
		if (c < 0x20) {
			static const char esc[] = {'b', 't', 'n', 0, 'f', 'r'};

			if (c >= 8 && c <= 13 && esc[c - 8])
				fprintf(out, "\\%c", esc[c - 8]);
			else
				fprintf(out, "\\u%04x", c);
			p++;
			continue;
		}
		if (c < 0x80) {
			fputc(c, out);
			p++;
			continue;
		}
		/* Copy a well-formed UTF-8 sequence (no overlongs, no surrogates, <= U+10FFFF);
		 * anything else is one U+FFFD per bad byte, so the output always parses. */
		if (c >= 0xc2 && c <= 0xdf)
			len = 2;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4;
		if (len) {
			bool ok = true;

			for (size_t i = 1; i < len; i++)
				ok = ok && (p[i] & 0xc0) == 0x80;
			if (ok && c == 0xe0 && p[1] < 0xa0)
				ok = false;
			if (ok && c == 0xed && p[1] >= 0xa0)
				ok = false;
			if (ok && c == 0xf0 && p[1] < 0x90)
				ok = false;
			if (ok && c == 0xf4 && p[1] >= 0x90)
				ok = false;
			if (ok) {
				fwrite(p, 1, len, out);
				p += len;
				continue;
			}
		}
		fputs("\\ufffd", out);
		p++;
	}
	fputc('"', out);
}

static void json_number(FILE *out, double v, const char *fmt)
{
	if (isfinite(v))
		fprintf(out, fmt, v);
	else
		fputs("null", out);
}

static void json_id(FILE *out, int64_t id)
{
	if (id == RASP_REPORT_ID_UNKNOWN)
		fputs("null", out);
	else
		fprintf(out, "%" PRId64, id);
}

static void json_est(FILE *out, const struct rasp_est_total *e)
{
	fprintf(out, "\"samples\": %" PRIu64 ", \"bytes\": ", e->samples);
	json_number(out, e->bytes, "%.0f");
	fputs(", \"bytes_low\": ", out);
	json_number(out, e->bytes_low, "%.0f");
	fputs(", \"bytes_high\": ", out);
	json_number(out, e->bytes_high, "%.0f");
	fputs(", \"objects\": ", out);
	json_number(out, e->objects, "%.1f");
}

static int write_json(struct rasp_report *r, FILE *out, const struct row *rows, size_t nrows,
		      const struct rasp_est_total *total)
{
	static const char *const keys[] = {"type", "kind", "thread", "process"};
	unsigned by = r->opt.group_by;
	const struct type_entry **ticks = NULL;
	size_t nticks;
	uint64_t tick_count, tick_amount;
	const char *sep = "";
	char buf[32];
	int ret;

	fputs("{\n  \"sampling_mean\": ", out);
	json_number(out, r->opt.sampling_mean, "%.15g");
	fputs(",\n  \"sampling_means\": [", out);
	for (size_t i = 0; i < r->nmeans; i++) {
		fprintf(out, "%s{\"process\": ", i ? ", " : "");
		json_id(out, r->means[i].process);
		fputs(", \"sampling_mean\": ", out);
		json_number(out, r->means[i].mean, "%.15g");
		fputc('}', out);
	}
	fprintf(out, "],\n  \"confidence\": %.15g,\n  \"group_by\": [", r->opt.confidence);
	for (int k = 0; k < 4; k++) {
		if (by & (1u << k)) {
			fprintf(out, "%s\"%s\"", sep, keys[k]);
			sep = ", ";
		}
	}
	fprintf(out,
		"],\n  \"discarded_events\": %" PRIu64 ",\n  \"discarded_events_unknown\": %" PRIu64
		",\n  \"discarded_packets\": %" PRIu64
		",\n  \"discarded_packets_unknown\": %" PRIu64 ",\n  \"skipped_events\": %" PRIu64
		",\n  \"estimates_too_low\": %s,\n",
		r->discarded_events, r->discarded_events_unknown, r->discarded_packets,
		r->discarded_packets_unknown, r->skipped, lost_data(r) ? "true" : "false");
	if (lost_data(r))
		fputs("  \"warning\": \"the tracer discarded data: every estimate is too low by an "
		      "unknown amount\",\n",
		      out);
	fputs("  \"rows\": [", out);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *row = &rows[i];

		fputs(i ? ",\n    {" : "\n    {", out);
		if (by & RASP_REPORT_BY_TYPE) {
			fputs("\"type\": ", out);
			rasp_report_json_string(out, row->type);
			fputs(", ", out);
		}
		if (by & RASP_REPORT_BY_KIND)
			fprintf(out, "\"kind\": \"%s\", ", kind_name(row->kind, buf, sizeof(buf)));
		if (by & RASP_REPORT_BY_THREAD) {
			fputs("\"thread\": ", out);
			json_id(out, row->thread);
			fputs(", ", out);
		}
		if (by & RASP_REPORT_BY_PROCESS) {
			fputs("\"process\": ", out);
			json_id(out, row->process);
			fputs(", ", out);
		}
		json_est(out, &row->est);
		fputc('}', out);
	}
	fputs(nrows ? "\n  ],\n  \"total\": {" : "],\n  \"total\": {", out);
	json_est(out, total);
	fputs("},\n", out);

	ret = tick_rows(r, &ticks, &nticks, &tick_count, &tick_amount);
	if (ret)
		return ret;
	fputs("  \"allocation_ticks\": {\n    \"note\": \"GCAllocationTick_V2/V3/V4: fixed "
	      "~100 KB stride, biased, not estimates, not in rows or total\",\n    \"rows\": [",
	      out);
	for (size_t i = 0; i < nticks; i++) {
		fputs(i ? ",\n      {\"type\": " : "\n      {\"type\": ", out);
		rasp_report_json_string(out, ticks[i]->name);
		fprintf(out, ", \"ticks\": %" PRIu64 ", \"allocation_amount\": %" PRIu64 "}",
			ticks[i]->ticks, ticks[i]->tick_amount);
	}
	fprintf(out,
		"%s],\n    \"ticks\": %" PRIu64 ",\n    \"allocation_amount\": %" PRIu64
		"\n  }\n}\n",
		nticks ? "\n    " : "", tick_count, tick_amount);
	free(ticks);
	return 0;
}

int rasp_report_write(struct rasp_report *r, FILE *out)
{
	struct row *rows = NULL;
	size_t nrows = 0;
	struct rasp_est_total total;
	int ret;

	ret = compute(r, &rows, &nrows, &total);
	if (ret)
		return ret;
	switch (r->opt.format) {
	case RASP_REPORT_FORMAT_CSV:
		ret = write_csv(r, out, rows, nrows, &total);
		break;
	case RASP_REPORT_FORMAT_JSON:
		ret = write_json(r, out, rows, nrows, &total);
		break;
	default:
		ret = write_text(r, out, rows, nrows, &total);
		break;
	}
	free(rows);
	if (!ret && (fflush(out) || ferror(out)))
		ret = -EIO;
	return ret;
}
