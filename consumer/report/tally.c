/* The tally (tally.h): interned type and process names, the process and thread sampling
 * means, and the cells samples fall in. Every lookup is a hash (index.c); nothing here is
 * quadratic in processes, threads or types. */
#include "tally.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rasp_tally *rasp_tally_create(unsigned group_by, double default_mean)
{
	struct rasp_tally *t;

	if (!(default_mean >= 1.0) || !isfinite(default_mean) ||
	    (group_by & ~(RASP_GROUP_ALL | RASP_GROUP_WHERE)))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->group_by = group_by;
	t->default_mean = default_mean;
	t->last_proc = SIZE_MAX;
	t->last_tmean = SIZE_MAX;
	t->live = rasp_live_create();
	if (!t->live) {
		free(t);
		return NULL;
	}
	return t;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void rasp_tally_destroy(struct rasp_tally *t)
{
	if (!t)
		return;
	free(t->names);
	free(t->types);
	rasp_index_free(&t->type_index);
	free(t->ticks);
	free(t->procs);
	rasp_index_free(&t->proc_index);
	free(t->tmeans);
	rasp_index_free(&t->tmean_index);
	free(t->cells);
	rasp_index_free(&t->cell_index);
	rasp_stacks_free(&t->stacks);
	rasp_modules_free(&t->modules);
	free_strings(t->warnings, t->nwarnings);
	free_strings(t->inputs, t->ninputs);
	rasp_live_destroy(t->live);
	free(t);
}

/* ---- Names ------------------------------------------------------------------------------ */

static int arena_add(struct rasp_tally *t, const char *s, size_t *off)
{
	size_t len = strlen(s) + 1;

	if (t->names_len + len > t->names_cap) {
		size_t cap = t->names_cap ? t->names_cap : 4096;
		char *p;

		while (cap < t->names_len + len) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		p = realloc(t->names, cap);
		if (!p)
			return -ENOMEM;
		t->names = p;
		t->names_cap = cap;
	}
	memcpy(t->names + t->names_len, s, len);
	*off = t->names_len;
	t->names_len += len;
	return 0;
}

const char *rasp_tally_type_name(const struct rasp_tally *t, size_t i)
{
	return t->names + t->types[i].name;
}

static uint64_t type_hash_of(const void *ctx, size_t i)
{
	return ((const struct rasp_tally *)ctx)->types[i].hash;
}

struct type_key {
	uint64_t hash;
	const char *name;
};

static int type_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_tally *t = ctx;
	const struct type_key *k = key;

	return t->types[i].hash == k->hash && strcmp(t->names + t->types[i].name, k->name) == 0;
}

/* Index of type `name`, added when new. */
static int type_get(struct rasp_tally *t, const char *name, size_t *out)
{
	struct type_key k = {rasp_hash_string(name), name};
	size_t slot, i;
	int ret = rasp_index_reserve(&t->type_index, t->ntypes, type_hash_of, t);

	if (ret)
		return ret;
	i = rasp_index_find(&t->type_index, k.hash, type_eq, t, &k, &slot);
	if (i != SIZE_MAX) {
		*out = i;
		return 0;
	}
	ret = rasp_array_grow((void **)&t->types, &t->captypes, t->ntypes, sizeof(*t->types));
	if (ret)
		return ret;
	t->types[t->ntypes].hash = k.hash;
	ret = arena_add(t, name, &t->types[t->ntypes].name);
	if (ret)
		return ret;
	rasp_index_put(&t->type_index, slot, t->ntypes);
	*out = t->ntypes++;
	return 0;
}

/* ---- Processes and thread means ------------------------------------------------------------ */

static uint64_t proc_hash(int64_t pid)
{
	return rasp_hash_mix64((uint64_t)pid);
}

static uint64_t proc_hash_of(const void *ctx, size_t i)
{
	return proc_hash(((const struct rasp_tally *)ctx)->procs[i].pid);
}

static int proc_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct rasp_tally *)ctx)->procs[i].pid == *(const int64_t *)key;
}

static size_t proc_find(const struct rasp_tally *t, int64_t pid, size_t *slot)
{
	size_t dummy;

	if (t->last_proc < t->nprocs && t->procs[t->last_proc].pid == pid)
		return t->last_proc;
	if (!t->proc_index.size)
		return SIZE_MAX;
	return rasp_index_find(&t->proc_index, proc_hash(pid), proc_eq, t, &pid,
			       slot ? slot : &dummy);
}

/* The entry of pid, added when new; NULL when memory runs out. */
static struct rasp_tally_process *proc_get(struct rasp_tally *t, int64_t pid)
{
	size_t slot, i;

	if (t->last_proc < t->nprocs && t->procs[t->last_proc].pid == pid)
		return &t->procs[t->last_proc];
	if (rasp_index_reserve(&t->proc_index, t->nprocs, proc_hash_of, t))
		return NULL;
	i = proc_find(t, pid, &slot);
	if (i == SIZE_MAX) {
		if (rasp_array_grow((void **)&t->procs, &t->capprocs, t->nprocs, sizeof(*t->procs)))
			return NULL;
		i = t->nprocs++;
		t->procs[i] = (struct rasp_tally_process){.pid = pid, .name = RASP_NO_NAME};
		rasp_index_put(&t->proc_index, slot, i);
	}
	t->last_proc = i;
	return &t->procs[i];
}

const struct rasp_tally_process *rasp_tally_find_process(const struct rasp_tally *t, int64_t pid)
{
	size_t i = proc_find(t, pid, NULL);

	return i == SIZE_MAX ? NULL : &t->procs[i];
}

const char *rasp_tally_process_name(const struct rasp_tally *t, const struct rasp_tally_process *p)
{
	return p->name == RASP_NO_NAME ? NULL : t->names + p->name;
}

int rasp_tally_set_process_name(struct rasp_tally *t, int64_t pid, const char *name)
{
	struct rasp_tally_process *p = proc_get(t, pid);

	if (!p)
		return -ENOMEM;
	if (!name || (p->name != RASP_NO_NAME && strcmp(t->names + p->name, name) == 0))
		return 0;
	return arena_add(t, name, &p->name);
}

static uint64_t tmean_hash(int64_t pid, int64_t tid, uint64_t instance)
{
	return rasp_hash_mix64(rasp_hash_mix64(rasp_hash_mix64((uint64_t)pid) ^ (uint64_t)tid) ^
			       instance);
}

static uint64_t tmean_hash_of(const void *ctx, size_t i)
{
	const struct rasp_tally_thread_mean *m = &((const struct rasp_tally *)ctx)->tmeans[i];

	return tmean_hash(m->pid, m->tid, m->instance);
}

static int tmean_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_tally_thread_mean *m = &((const struct rasp_tally *)ctx)->tmeans[i];
	const int64_t *k = key;

	return m->pid == k[0] && m->tid == k[1] && m->instance == (uint64_t)k[2];
}

static size_t tmean_find(const struct rasp_tally *t, int64_t pid, int64_t tid, uint64_t instance,
			 size_t *slot)
{
	int64_t key[3] = {pid, tid, (int64_t)instance};
	size_t dummy;

	if (t->last_tmean < t->ntmeans && t->tmeans[t->last_tmean].pid == pid &&
	    t->tmeans[t->last_tmean].tid == tid && t->tmeans[t->last_tmean].instance == instance)
		return t->last_tmean;
	if (!t->tmean_index.size)
		return SIZE_MAX;
	return rasp_index_find(&t->tmean_index, tmean_hash(pid, tid, instance), tmean_eq, t, key,
			       slot ? slot : &dummy);
}

int rasp_tally_declare_mean(struct rasp_tally *t, int64_t pid, double mean)
{
	struct rasp_tally_process *p;

	if (!(mean >= 1.0) || !isfinite(mean))
		return -EINVAL;
	p = proc_get(t, pid);
	if (!p)
		return -ENOMEM;
	if (!p->configured)
		p->mean = mean;
	p->declared = true;
	return 0;
}

int rasp_tally_set_mean(struct rasp_tally *t, int64_t pid, int64_t tid, double mean)
{
	return rasp_tally_set_mean_of(t, pid, tid, 0, mean);
}

int rasp_tally_set_mean_of(struct rasp_tally *t, int64_t pid, int64_t tid, uint64_t instance,
			   double mean)
{
	struct rasp_tally_process *p;
	size_t slot, i;
	int ret;

	if (!(mean >= 1.0) || !isfinite(mean))
		return -EINVAL;
	p = proc_get(t, pid);
	if (!p)
		return -ENOMEM;
	p->mean = mean;
	p->configured++;
	t->configured++;
	if (tid == RASP_ID_UNKNOWN)
		return 0;
	ret = rasp_index_reserve(&t->tmean_index, t->ntmeans, tmean_hash_of, t);
	if (ret)
		return ret;
	i = tmean_find(t, pid, tid, instance, &slot);
	if (i == SIZE_MAX) {
		ret = rasp_array_grow((void **)&t->tmeans, &t->captmeans, t->ntmeans,
				      sizeof(*t->tmeans));
		if (ret)
			return ret;
		i = t->ntmeans++;
		t->tmeans[i] =
		    (struct rasp_tally_thread_mean){.pid = pid, .tid = tid, .instance = instance};
		rasp_index_put(&t->tmean_index, slot, i);
	}
	t->tmeans[i].mean = mean;
	t->last_tmean = i;
	return 0;
}

/* ---- Cells ------------------------------------------------------------------------------- */

static uint64_t cell_hash(const struct rasp_tally_cell *c)
{
	uint64_t bits;

	memcpy(&bits, &c->est.p, sizeof(bits));
	return rasp_hash_mix64(rasp_hash_mix64(rasp_hash_mix64(((uint64_t)c->type << 32 | c->kind) ^
							       (uint64_t)c->process) ^
					       (uint64_t)c->thread ^ ((uint64_t)c->stack << 40)) ^
			       bits);
}

static uint64_t cell_hash_of(const void *ctx, size_t i)
{
	return cell_hash(&((const struct rasp_tally *)ctx)->cells[i]);
}

static int cell_eq(const void *ctx, size_t i, const void *key)
{
	const struct rasp_tally_cell *c = &((const struct rasp_tally *)ctx)->cells[i];
	const struct rasp_tally_cell *k = key;

	return c->type == k->type && c->kind == k->kind && c->process == k->process &&
	       c->thread == k->thread && c->stack == k->stack && c->est.p == k->est.p;
}

/* The mean that weighs a sample of (pid, tid, instance), and whether it was assumed. */
static double sample_mean(struct rasp_tally *t, const struct rasp_tally_process *p, int64_t tid,
			  uint64_t instance, bool *assumed)
{
	*assumed = false;
	if (t->ntmeans && tid != RASP_ID_UNKNOWN) {
		size_t i = tmean_find(t, p->pid, tid, instance, NULL);

		if (i != SIZE_MAX) {
			t->last_tmean = i;
			return t->tmeans[i].mean;
		}
	}
	if (p->mean > 0.0)
		return p->mean;
	*assumed = true;
	return t->default_mean;
}

int rasp_tally_add_sample(struct rasp_tally *t, const char *type, uint64_t kind, int64_t pid,
			  int64_t tid, uint64_t size, uint64_t offset)
{
	return rasp_tally_add_sample_stack(t, type, kind, pid, tid, size, offset, NULL, 0);
}

int rasp_tally_add_sample_stack(struct rasp_tally *t, const char *type, uint64_t kind, int64_t pid,
				int64_t tid, uint64_t size, uint64_t offset, const uint64_t *frames,
				size_t nframes)
{
	return rasp_tally_add_sample_of(t, type, kind, pid, tid, 0, size, offset, frames, nframes);
}

int rasp_tally_add_sample_of(struct rasp_tally *t, const char *type, uint64_t kind, int64_t pid,
			     int64_t tid, uint64_t instance, uint64_t size, uint64_t offset,
			     const uint64_t *frames, size_t nframes)
{
	unsigned by = t->group_by;
	struct rasp_tally_process *p;
	struct rasp_tally_cell key = {0};
	bool assumed;
	double mean;
	size_t slot, i;
	int ret;

	if (size == 0 || offset >= size)
		return -EINVAL;
	p = proc_get(t, pid);
	if (!p)
		return -ENOMEM;
	mean = sample_mean(t, p, tid, instance, &assumed);
	if (by & RASP_GROUP_TYPE) {
		ret = type_get(t, type ? type : "NULL", &i);
		if (ret)
			return ret;
		key.type = (uint32_t)(i + 1);
	}
	if (by & RASP_GROUP_KIND)
		key.kind = kind > UINT32_MAX ? UINT32_MAX : (uint32_t)kind;
	/* A thread is a thread of its process: tids of two processes never share a row. */
	if (by & (RASP_GROUP_PROCESS | RASP_GROUP_THREAD))
		key.process = pid;
	if (by & RASP_GROUP_THREAD)
		key.thread = tid;
	if (by & RASP_GROUP_WHERE) {
		int64_t id = rasp_stacks_intern(&t->stacks, pid, frames, nframes);

		if (id < 0)
			return (int)id;
		key.stack = (uint32_t)id;
	}
	key.est.p = 1.0 / mean;

	if (t->cells_sorted) {
		ret = rasp_index_rebuild(&t->cell_index, t->ncells, cell_hash_of, t);
		if (ret)
			return ret;
		t->cells_sorted = false;
	}
	ret = rasp_index_reserve(&t->cell_index, t->ncells, cell_hash_of, t);
	if (ret)
		return ret;
	i = rasp_index_find(&t->cell_index, cell_hash(&key), cell_eq, t, &key, &slot);
	if (i == SIZE_MAX) {
		ret =
		    rasp_array_grow((void **)&t->cells, &t->capcells, t->ncells, sizeof(*t->cells));
		if (ret)
			return ret;
		ret = rasp_est_cell_init(&key.est, key.est.p);
		if (ret)
			return ret;
		/* A cell left unpublished by a failed add below keeps its live cell: the next
		 * add of the slot makes another (one unused entry, never read). */
		ret = rasp_live_cell_add(t->live, key.est.p, &key.live);
		if (ret)
			return ret;
		i = t->ncells;
		t->cells[i] = key;
		ret = rasp_est_cell_add(&t->cells[i].est, size, offset);
		if (ret)
			return ret; /* not published: the next add reuses the slot */
		rasp_index_put(&t->cell_index, slot, i);
		t->ncells++;
	} else {
		ret = rasp_est_cell_add(&t->cells[i].est, size, offset);
		if (ret)
			return ret;
	}
	if (!p->samples || mean < p->mean_low)
		p->mean_low = mean;
	if (!p->samples || mean > p->mean_high)
		p->mean_high = mean;
	t->last_cell = i;
	p->samples++;
	p->samples_assumed += assumed;
	t->samples++;
	t->samples_with_stack += nframes > 0;
	return 0;
}

int rasp_tally_pend_stack(struct rasp_tally *t, int64_t pid, int64_t tid, const uint64_t *frames,
			  size_t n)
{
	t->stack_events++;
	if (!(t->group_by & RASP_GROUP_WHERE))
		return 0;
	return rasp_stacks_pend(&t->stacks, pid, tid, frames, n);
}

size_t rasp_tally_take_stack(struct rasp_tally *t, int64_t pid, int64_t tid,
			     const uint64_t **frames)
{
	if (!(t->group_by & RASP_GROUP_WHERE))
		return 0;
	return rasp_stacks_take(&t->stacks, pid, tid, frames);
}

uint64_t rasp_tally_samples_assumed(const struct rasp_tally *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].samples_assumed;
	return n;
}

/* ---- Ticks, lost data, the rest ---------------------------------------------------------------
 */

int rasp_tally_add_tick(struct rasp_tally *t, const char *type, uint64_t amount)
{
	size_t i;
	int ret = type_get(t, type ? type : "NULL", &i);

	if (ret)
		return ret;
	if (t->capticks < t->captypes) {
		struct rasp_tally_tick *v = realloc(t->ticks, t->captypes * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + t->capticks, 0, (t->captypes - t->capticks) * sizeof(*v));
		t->ticks = v;
		t->capticks = t->captypes;
	}
	t->ticks[i].ticks++;
	t->ticks[i].amount += amount;
	t->ticks_total++;
	return 0;
}

void rasp_tally_add_discarded_events(struct rasp_tally *t, uint64_t count, bool count_known)
{
	if (count_known)
		t->discarded_events += count;
	else
		t->discarded_events_unknown++;
}

void rasp_tally_add_discarded_packets(struct rasp_tally *t, uint64_t count, bool count_known)
{
	if (count_known)
		t->discarded_packets += count;
	else
		t->discarded_packets_unknown++;
}

bool rasp_tally_lost_data(const struct rasp_tally *t)
{
	return t->discarded_events || t->discarded_events_unknown || t->discarded_packets ||
	       t->discarded_packets_unknown;
}

void rasp_tally_add_skipped(struct rasp_tally *t)
{
	t->skipped++;
}

void rasp_tally_add_other_event(struct rasp_tally *t)
{
	t->other_events++;
}

void rasp_tally_note_time(struct rasp_tally *t, int64_t ns)
{
	if (!t->timed || ns < t->first_ns)
		t->first_ns = ns;
	if (!t->timed || ns > t->last_ns)
		t->last_ns = ns;
	t->timed = true;
}

uint64_t rasp_tally_duration_ns(const struct rasp_tally *t)
{
	return t->timed ? (uint64_t)t->last_ns - (uint64_t)t->first_ns : 0;
}

static int strings_add(char ***v, size_t *n, size_t *cap, char *s)
{
	if (!s || rasp_array_grow((void **)v, cap, *n, sizeof(**v))) {
		free(s);
		return -ENOMEM;
	}
	(*v)[(*n)++] = s;
	return 0;
}

int rasp_tally_add_warning(struct rasp_tally *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = rasp_vstrdupf(fmt, ap);
	va_end(ap);
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->nwarnings; i++)
		if (strcmp(t->warnings[i], s) == 0) {
			free(s);
			return 0;
		}
	return strings_add(&t->warnings, &t->nwarnings, &t->capwarnings, s);
}

int rasp_tally_add_input(struct rasp_tally *t, const char *name)
{
	return strings_add(&t->inputs, &t->ninputs, &t->capinputs, strdup(name));
}
