/* The live heap (live.h): the table of live samples, each free paired with the latest sample
 * at its address, the moment's journal, the per-cell sums and the timeline. A sample and a
 * free cost one hash lookup and a few additions; a new peak costs nothing more (the journal
 * forgets what the new peak no longer needs). */
#include "live.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define UNTIMED INT64_MIN

struct rasp_live *rasp_live_create(void)
{
	struct rasp_live *l = calloc(1, sizeof(*l));

	if (l)
		l->epoch = 1;
	return l;
}

void rasp_live_destroy(struct rasp_live *l)
{
	if (!l)
		return;
	free(l->cells);
	free(l->slots);
	free(l->journal);
	free(l->points);
	free(l->entries);
	free(l->end_entries);
	free(l);
}

int rasp_live_set_moment(struct rasp_live *l, enum rasp_live_moment m, double seconds)
{
	if (m > RASP_LIVE_AT || (m == RASP_LIVE_AT && !(seconds >= 0.0 && seconds < 1e9)))
		return -EINVAL;
	l->moment = m;
	l->at_seconds = m == RASP_LIVE_AT ? seconds : 0.0;
	return 0;
}

int rasp_live_cell_add(struct rasp_live *l, double p, uint32_t *index)
{
	int ret = rasp_array_grow((void **)&l->cells, &l->capcells, l->ncells, sizeof(*l->cells));

	if (ret)
		return ret;
	memset(&l->cells[l->ncells], 0, sizeof(l->cells[0]));
	l->cells[l->ncells].p = p;
	*index = (uint32_t)l->ncells++;
	return 0;
}

void rasp_live_declare(struct rasp_live *l)
{
	l->declared = true;
}

bool rasp_live_available(const struct rasp_live *l)
{
	return l->declared || l->frees || l->heap_destroyed;
}

_Static_assert(RASP_LIVE_MAX_SAMPLES == 8388608, "the sentence below names the limit");

const char *rasp_live_unavailable_why(const struct rasp_live *l)
{
	if (l->overflow)
		return "more than 8388608 samples were live at once, "
		       "past the limit of the live heap's table (report/live.h), so what is still "
		       "allocated is not known; a larger sampling mean (rasp record --mean) "
		       "samples fewer objects.";
	return "the input holds no Rasp_Runtime:SampledObjectFreed, SampledObjectsFreed or "
	       "HeapDestroyed event, so "
	       "it cannot say which sampled objects died and what is still allocated (a "
	       "report would show everything as live). A .nettrace file from .NET has none: "
	       ".NET emits no event when an object is collected. A program on rasp's runtime "
	       "emits them: record it with rasp record (which enables Rasp_Runtime:*), or "
	       "enable Rasp_Runtime:SampledObjectsFreed (or SampledObjectFreed) and "
	       "Rasp_Runtime:HeapDestroyed in an "
	       "LTTng session beside DotNETRuntime:AllocationSampled.";
}

/* ---- One sample's weight ------------------------------------------------------------------ */

static double hit(double p, double z)
{
	return p >= 1.0 ? 1.0 : -expm1(z * log1p(-p));
}

static void stats_add(struct rasp_live_stats *s, double p, uint64_t size, uint64_t offset,
		      double sign)
{
	double z = (double)size, h = hit(p, z);

	s->samples += sign;
	s->bytes += sign * z / h;
	s->objects += sign / h;
	s->unsampled += sign * (z - (double)offset);
	s->sampled_bytes += sign * z;
	s->objects_var += sign * (1.0 - h) / (h * h);
	/* Sums of doubles taken back leave rounding dust: a set emptied is exactly empty. */
	if (s->samples < 0.5)
		*s = (struct rasp_live_stats){0};
}

void rasp_live_stats_cell(const struct rasp_live_stats *s, double p, struct rasp_est_cell *out)
{
	double mean_size = s->samples > 0.0 ? s->sampled_bytes / s->samples : 0.0;

	rasp_est_cell_init(out, p);
	out->samples = (uint64_t)llround(s->samples);
	out->bytes = s->bytes;
	out->objects = s->objects;
	out->unsampled = s->unsampled;
	out->sampled_bytes = s->sampled_bytes;
	out->objects_var = s->objects_var > 0.0 ? s->objects_var : 0.0;
	/* No sizes are kept for a sum that loses members: the objects interval takes the set
	 * as of one size, its mean. */
	out->size_min = out->size_max = out->samples ? ceil(mean_size) : 0.0;
}

/* ---- The table ------------------------------------------------------------------------------ */

static uint64_t key_hash(int64_t pid, uint64_t instance, uint64_t address)
{
	return rasp_hash_mix64(rasp_hash_mix64(address ^ (uint64_t)pid) ^ instance);
}

static size_t find(const struct rasp_live *l, int64_t pid, uint64_t instance, uint64_t address)
{
	size_t mask = l->size - 1;

	if (!l->size)
		return SIZE_MAX;
	for (size_t i = key_hash(pid, instance, address) & mask;; i = (i + 1) & mask) {
		const struct rasp_live_sample *s = &l->slots[i];

		if (!s->seq)
			return SIZE_MAX;
		if (s->address == address && s->pid == pid && s->instance == instance)
			return i;
	}
}

static void put(struct rasp_live_sample *slots, size_t size, const struct rasp_live_sample *s)
{
	size_t mask = size - 1, i = key_hash(s->pid, s->instance, s->address) & mask;

	while (slots[i].seq)
		i = (i + 1) & mask;
	slots[i] = *s;
}

static int reserve(struct rasp_live *l)
{
	struct rasp_live_sample *v;
	size_t size;

	if (2 * (l->n + 1) <= l->size)
		return 0;
	size = l->size ? 2 * l->size : 1024;
	v = calloc(size, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->size; i++)
		if (l->slots[i].seq)
			put(v, size, &l->slots[i]);
	free(l->slots);
	l->slots = v;
	l->size = size;
	return 0;
}

/* Removes slot i, moving back the entries of its run that belong before the hole. */
static void remove_slot(struct rasp_live *l, size_t i)
{
	size_t mask = l->size - 1, j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!l->slots[j].seq)
			break;
		home = key_hash(l->slots[j].pid, l->slots[j].instance, l->slots[j].address) & mask;
		/* j may move to i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		l->slots[i] = l->slots[j];
		i = j;
	}
	l->slots[i].seq = 0;
	l->n--;
}

/* ---- The moment ------------------------------------------------------------------------------ */

static bool wants_journal(const struct rasp_live *l, const struct rasp_live_sample *s)
{
	return l->moment_set && l->moment != RASP_LIVE_END && s->seq <= l->moment_seq;
}

/* From born to ns, saturated: an input's clock may span the whole of int64. */
static int64_t lifetime(int64_t ns, int64_t born)
{
	int64_t life;

	if (__builtin_sub_overflow(ns, born, &life))
		life = ns > born ? INT64_MAX : INT64_MIN;
	return life;
}

/* Whether a sample that ends at ns (timed) was already gone at the moment: a free at or
 * before an --at time (events up to it are applied before it), or before the peak's sample
 * (events of its timestamp that came after it are after it). Only a late free (from a batch,
 * SampledObjectsFreed) can end a sample before a moment already set. */
static bool gone_at_moment(const struct rasp_live *l, bool timed, int64_t ns)
{
	return timed && l->moment_ns != UNTIMED &&
	       (ns < l->moment_ns || (l->moment == RASP_LIVE_AT && ns == l->moment_ns));
}

/* A sample ends at ns: its cell's sums, its lifetime, the journal when the moment saw it
 * (alive then), the peak's total when it was not. */
static int end_sample(struct rasp_live *l, const struct rasp_live_sample *s, bool timed, int64_t ns,
		      bool counted)
{
	struct rasp_live_cell *c = &l->cells[s->cell];
	double w = (double)s->size / hit(c->p, (double)s->size);

	stats_add(&c->now, c->p, s->size, s->offset, -1.0);
	l->total_now = fmax(l->total_now - w, 0.0);
	if (counted) {
		c->freed += w;
		if (timed && s->ns != UNTIMED) {
			int64_t life = lifetime(ns, s->ns);

			if (life <= RASP_LIVE_SHORT_NS)
				c->freed_short += w;
			if (life <= RASP_LIVE_LONG_NS)
				c->freed_long += w;
		}
	}
	if (wants_journal(l, s)) {
		int ret;

		if (gone_at_moment(l, timed, ns)) {
			/* Counted in the peak's total when the peak was chosen, gone by then. */
			if (l->moment == RASP_LIVE_PEAK)
				l->peak_total = fmax(l->peak_total - w, 0.0);
			return 0;
		}
		ret = rasp_array_grow((void **)&l->journal, &l->capjournal, l->njournal,
				      sizeof(*l->journal));
		if (ret)
			return ret;
		l->journal[l->njournal++] = *s;
	}
	return 0;
}

/* The peak moves to now: what the journal kept was freed before it. */
static void new_peak(struct rasp_live *l, int64_t ns)
{
	l->peak_total = l->total_now;
	l->moment_set = true;
	l->moment_seq = l->seq;
	l->moment_ns = ns;
	l->njournal = 0;
	l->epoch++;
}

/* ---- The timeline ---------------------------------------------------------------------------- */

/* origin + k * step, or INT64_MAX past it: a trace's timestamps may span the whole clock,
 * and a time past INT64_MAX ends the regular points (the end's is taken apart). */
static int64_t point_ns(int64_t origin, size_t k, int64_t step)
{
	int64_t off, at;

	if (__builtin_mul_overflow((int64_t)k, step, &off) ||
	    __builtin_add_overflow(origin, off, &at))
		return INT64_MAX;
	return at;
}

/* Keeps every other point (the first stays), doubling the step. A point shares the entries
 * of the one before when both have the same range: the same first and the same count (an
 * empty point's first is where the next one's entries begin, so the first alone does not
 * tell). */
static void thin(struct rasp_live *l)
{
	size_t k = 0, e = 0, last_first = SIZE_MAX, last_n = 0, last_new = 0;

	/* The last point gone (an even count), what changed since the one now last is unknown:
	 * the next point is taken afresh, never shared with it. */
	if (l->npoints % 2 == 0)
		l->last_activity = UINT64_MAX;
	for (size_t i = 0; i < l->npoints; i += 2) {
		struct rasp_live_point p = l->points[i];

		if (p.first == last_first && p.n == last_n) {
			p.first = last_new; /* shares the entries of the point before */
		} else {
			last_first = p.first;
			last_n = p.n;
			if (p.n) /* none: entries may still be NULL */
				memmove(&l->entries[e], &l->entries[p.first],
					p.n * sizeof(*l->entries));
			p.first = last_new = e;
			e += p.n;
		}
		l->points[k++] = p;
	}
	l->npoints = k;
	l->nentries = e;
	l->step_ns = l->step_ns > INT64_MAX / 2 ? INT64_MAX : 2 * l->step_ns;
	l->next_ns = point_ns(l->origin_ns, l->npoints, l->step_ns);
}

/* A point at ns with what is live now; a point with nothing new since the one before shares
 * its entries. */
static int take_point(struct rasp_live *l, int64_t ns, bool changed)
{
	size_t first = l->nentries, n = 0;
	int ret;

	if (!l->points && !(l->points = malloc(RASP_LIVE_POINTS * sizeof(*l->points))))
		return -ENOMEM;
	if (!changed && l->npoints) {
		first = l->points[l->npoints - 1].first;
		n = l->points[l->npoints - 1].n;
	} else {
		for (size_t c = 0; c < l->ncells; c++) {
			if (!l->cells[c].now.samples)
				continue;
			if (l->nentries >= RASP_LIVE_MAX_ENTRIES)
				break; /* the caller thins and tries again */
			ret = rasp_array_grow((void **)&l->entries, &l->capentries, l->nentries,
					      sizeof(*l->entries));
			if (ret)
				return ret;
			l->entries[l->nentries++] =
			    (struct rasp_live_entry){.cell = (uint32_t)c, .s = l->cells[c].now};
			n++;
		}
	}
	l->points[l->npoints++] = (struct rasp_live_point){.ns = ns, .first = first, .n = n};
	return 0;
}

/* Whether anything changed since the last point: samples or frees counted. */
static uint64_t activity(const struct rasp_live *l)
{
	return l->seq + l->frees + l->heap_freed + l->replaced;
}

/* A late free (ns before points already taken: a SampledObjectsFreed's free at its own
 * time): the points after ns counted its sample s, and no longer do. They are the timeline's
 * tail; its entries are rebuilt in point order right after the entries of the points before it
 * (what thin() expects), the first point of the tail unshared from the one before it, a cell
 * left with no sample dropped as take_point would. Built past the end, then moved down: no
 * other buffer. O(entries of the tail) per late free, nothing for a timely one. */
static int unfree_points(struct rasp_live *l, const struct rasp_live_sample *s, int64_t ns)
{
	const struct rasp_live_cell *c = &l->cells[s->cell];
	size_t k0 = l->npoints, base, total = 0, t, last_src = SIZE_MAX, last_srcn = 0,
	       last_dst = 0, last_n = 0;
	int ret;

	while (k0 && l->points[k0 - 1].ns > ns)
		k0--;
	/* An untimed sample was counted at the points taken after it came: unknown here. */
	if (k0 == l->npoints || s->ns == UNTIMED)
		return 0;
	base = k0 ? l->points[k0 - 1].first + l->points[k0 - 1].n : 0;
	for (size_t k = k0; k < l->npoints; k++)
		if (k == k0 || l->points[k].first != l->points[k - 1].first ||
		    l->points[k].n != l->points[k - 1].n)
			total += l->points[k].n;
	if (!total)
		return 0;
	ret = rasp_array_grow((void **)&l->entries, &l->capentries, l->nentries + total - 1,
			      sizeof(*l->entries));
	if (ret)
		return ret;
	t = l->nentries;
	for (size_t k = k0; k < l->npoints; k++) {
		struct rasp_live_point *p = &l->points[k];
		size_t dst = t;

		if (k > k0 && p->first == last_src && p->n == last_srcn) {
			p->first = last_dst;
			p->n = last_n;
			continue;
		}
		last_src = p->first;
		last_srcn = p->n;
		for (size_t j = 0; j < p->n; j++) {
			struct rasp_live_entry e = l->entries[p->first + j];

			if (e.cell == s->cell) {
				stats_add(&e.s, c->p, s->size, s->offset, -1.0);
				if (!e.s.samples)
					continue;
			}
			l->entries[t++] = e;
		}
		p->first = last_dst = dst;
		p->n = last_n = t - dst;
	}
	memmove(&l->entries[base], &l->entries[l->nentries],
		(t - l->nentries) * sizeof(*l->entries));
	for (size_t k = k0; k < l->npoints; k++)
		l->points[k].first = l->points[k].first - l->nentries + base;
	l->nentries = base + (t - l->nentries);
	return 0;
}

int rasp_live_clock(struct rasp_live *l, int64_t ns, int64_t first_ns)
{
	int ret;

	if (!l->clock_started) {
		l->clock_started = true;
		l->origin_ns = first_ns;
		/* 1 ns, doubling as the recording goes on: a recording of 128 ns or more
		 * has at least RASP_LIVE_POINTS / 2 points. */
		l->step_ns = 1;
		l->next_ns = first_ns;
		l->last_activity = UINT64_MAX;
	}
	if (l->moment == RASP_LIVE_AT && !l->moment_set &&
	    (double)ns - (double)first_ns > l->at_seconds * 1e9) {
		l->moment_set = true;
		l->moment_seq = l->seq;
		/* at_seconds < 1e9 (set_moment): at most 1e18 ns, past which it saturates. */
		if (__builtin_add_overflow(first_ns, (int64_t)llround(l->at_seconds * 1e9),
					   &l->moment_ns))
			l->moment_ns = INT64_MAX;
	}
	/* Points up to ns, each of the state before this event. Each pass adds one; a full
	 * timeline thins (the step doubles), so a long gap costs O(points x log(gap / step)). */
	while (ns >= l->next_ns && l->next_ns != INT64_MAX) {
		bool changed = activity(l) != l->last_activity;

		if (l->npoints == RASP_LIVE_POINTS) {
			thin(l);
			continue;
		}
		ret = take_point(l, l->next_ns, changed);
		if (ret)
			return ret;
		if (changed && l->nentries >= RASP_LIVE_MAX_ENTRIES) {
			/* Too many cells live for this many points: drop the point, thin. */
			l->nentries = l->points[--l->npoints].first;
			thin(l);
			l->last_activity = UINT64_MAX;
			continue;
		}
		l->last_activity = activity(l);
		l->next_ns = point_ns(l->origin_ns, l->npoints, l->step_ns);
	}
	return 0;
}

/* ---- Events -----------------------------------------------------------------------------------
 */

int rasp_live_sample(struct rasp_live *l, uint32_t cell, int64_t pid, uint64_t instance,
		     uint64_t address, uint64_t size, uint64_t offset, bool timed, int64_t ns)
{
	struct rasp_live_cell *c = &l->cells[cell];
	struct rasp_live_sample s = {.pid = pid,
				     .address = address,
				     .size = size,
				     .offset = offset,
				     .ns = timed ? ns : UNTIMED,
				     .cell = cell,
				     .instance = (uint32_t)instance};
	double w = (double)size / hit(c->p, (double)size);
	size_t i;
	int ret;

	c->alloc += w;
	s.seq = ++l->seq;
	if (l->overflow)
		return 0;
	i = find(l, pid, instance, address);
	if (i != SIZE_MAX) {
		/* The previous sample here was freed, but its free is not in the trace (lost):
		 * it ends now, its lifetime unknown. */
		l->replaced++;
		ret = end_sample(l, &l->slots[i], false, 0, false);
		if (ret)
			return ret;
		l->replaced_sample = l->slots[i];
		l->replacing = s;
		l->has_replacing = timed;
		l->slots[i] = s;
	} else {
		if (l->n >= RASP_LIVE_MAX_SAMPLES) {
			l->overflow = true;
			free(l->slots);
			l->slots = NULL;
			l->size = l->n = 0;
			return 0;
		}
		ret = reserve(l);
		if (ret)
			return ret;
		put(l->slots, l->size, &s);
		l->n++;
	}
	stats_add(&c->now, c->p, size, offset, 1.0);
	l->total_now += w;
	if (l->moment_set && l->moment != RASP_LIVE_END) {
		if (c->after_epoch != l->epoch) {
			c->after_epoch = l->epoch;
			c->after = 0.0;
		}
		c->after += w;
	}
	if (l->moment == RASP_LIVE_PEAK && l->total_now > l->peak_total)
		new_peak(l, timed ? ns : UNTIMED);
	return 0;
}

void rasp_live_sample_untracked(struct rasp_live *l, uint32_t cell, uint64_t size)
{
	struct rasp_live_cell *c = &l->cells[cell];

	c->alloc += (double)size / hit(c->p, (double)size);
	l->seq++;
	l->no_address++;
}

int rasp_live_free(struct rasp_live *l, int64_t pid, uint64_t instance, uint64_t address,
		   uint64_t size, bool timed, int64_t ns)
{
	size_t i;
	int ret;

	l->frees++;
	if (l->overflow)
		return 0;
	i = find(l, pid, instance, address);
	if (i == SIZE_MAX) {
		l->frees_unmatched++;
		return 0;
	}
	if (l->has_replacing && timed && l->slots[i].seq == l->replacing.seq &&
	    ns == l->replacing.ns) {
		/* The free of the sample the new one replaced, come after it at one timestamp:
		 * that one was freed, not lost, and the new one stays. */
		const struct rasp_live_sample *old = &l->replaced_sample;
		struct rasp_live_cell *c = &l->cells[old->cell];
		double w = (double)old->size / hit(c->p, (double)old->size);

		l->has_replacing = false;
		l->replaced--;
		l->frees_paired++;
		if (old->size != size)
			l->size_mismatch++;
		c->freed += w;
		if (old->ns != UNTIMED) {
			int64_t life = lifetime(ns, old->ns);

			if (life <= RASP_LIVE_SHORT_NS)
				c->freed_short += w;
			if (life <= RASP_LIVE_LONG_NS)
				c->freed_long += w;
		}
		return 0;
	}
	/* A free's time is never before its sample's (the same clock, the same object): one
	 * that says otherwise is taken at the sample's, so the sample counts nowhere. */
	if (timed && l->slots[i].ns != UNTIMED && ns < l->slots[i].ns)
		ns = l->slots[i].ns;
	/* Both may need memory: on failure the sample stays live, the free uncounted. */
	if (timed && (ret = unfree_points(l, &l->slots[i], ns)) != 0)
		return ret;
	if ((ret = end_sample(l, &l->slots[i], timed, ns, true)) != 0)
		return ret;
	l->frees_paired++;
	if (l->slots[i].size != size)
		l->size_mismatch++;
	remove_slot(l, i);
	return 0;
}

int rasp_live_heap_destroyed(struct rasp_live *l, int64_t pid, uint64_t instance, bool timed,
			     int64_t ns)
{
	l->heap_destroyed++;
	if (l->overflow)
		return 0;
	/* Removing shifts later entries back into slot i: look at i again. */
	for (size_t i = 0; i < l->size;) {
		struct rasp_live_sample *s = &l->slots[i];
		int ret;

		if (!s->seq || s->pid != pid || s->instance != (uint32_t)instance) {
			i++;
			continue;
		}
		ret = end_sample(l, s, timed, ns, true);
		if (ret)
			return ret;
		l->heap_freed++;
		remove_slot(l, i);
	}
	return 0;
}

/* ---- The report's moment ----------------------------------------------------------------------
 */

static int at_add(struct rasp_live *l, const struct rasp_live_sample *s)
{
	return rasp_est_cell_add(&l->cells[s->cell].at, s->size, s->offset);
}

int rasp_live_finish(struct rasp_live *l, bool timed, int64_t end_ns)
{
	bool all = l->moment == RASP_LIVE_END || !l->moment_set;
	int ret;

	l->end_ns = timed ? end_ns : UNTIMED;
	for (size_t c = 0; c < l->ncells; c++) {
		ret = rasp_est_cell_init(&l->cells[c].at, l->cells[c].p);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < l->size; i++) {
		const struct rasp_live_sample *s = &l->slots[i];

		if (s->seq && (all || s->seq <= l->moment_seq) && (ret = at_add(l, s)) != 0)
			return ret;
	}
	if (!all)
		for (size_t i = 0; i < l->njournal; i++)
			if ((ret = at_add(l, &l->journal[i])) != 0)
				return ret;
	/* The timeline's last point: the end, taken again at the next finish. */
	l->nend = 0;
	l->has_end = timed && l->clock_started;
	l->end_point_ns = end_ns;
	for (size_t c = 0; l->has_end && c < l->ncells; c++) {
		if (!l->cells[c].now.samples)
			continue;
		ret = rasp_array_grow((void **)&l->end_entries, &l->capend, l->nend,
				      sizeof(*l->end_entries));
		if (ret)
			return ret;
		l->end_entries[l->nend++] =
		    (struct rasp_live_entry){.cell = (uint32_t)c, .s = l->cells[c].now};
	}
	return 0;
}

size_t rasp_live_npoints(const struct rasp_live *l)
{
	size_t n = l->npoints;

	/* The regular points before the end, then the end. */
	while (n && l->has_end && l->points[n - 1].ns >= l->end_point_ns)
		n--;
	return n + (l->has_end ? 1 : 0);
}

int64_t rasp_live_point(const struct rasp_live *l, size_t k, const struct rasp_live_entry **v,
			size_t *n)
{
	if (l->has_end && k + 1 == rasp_live_npoints(l)) {
		*v = l->end_entries;
		*n = l->nend;
		return l->end_point_ns;
	}
	/* No entries yet (nothing was live at any point): no pointer arithmetic on NULL. */
	*v = l->entries ? l->entries + l->points[k].first : NULL;
	*n = l->points[k].n;
	return l->points[k].ns;
}

int64_t rasp_live_moment_ns(const struct rasp_live *l)
{
	if (l->moment == RASP_LIVE_END || !l->moment_set)
		return l->end_ns;
	return l->moment_ns;
}

double rasp_live_alloc_by_moment(const struct rasp_live *l, const struct rasp_live_cell *c)
{
	if (l->moment == RASP_LIVE_END || !l->moment_set || c->after_epoch != l->epoch)
		return c->alloc;
	return c->alloc - c->after;
}
