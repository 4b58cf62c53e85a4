/* The live heap: the samples whose objects are still allocated, each paired with its free
 * (Rasp_Runtime:SampledObjectFreed, HeapDestroyed), kept in a hash by process, ClrInstanceID
 * and address; per tally cell, what its live samples weigh now, at the report's moment (the
 * end, the peak of the estimated live bytes, or a time), and how long its samples lived; a
 * timeline of what was live. Memory is O(live samples): a freed sample is forgotten unless it
 * was live at a moment still wanted (the peak so far). No babeltrace2 types; the tally feeds
 * it (tally.c), rows.c reads it. Errors are 0 or a negative errno value. */
#ifndef RASP_CONSUMER_LIVE_H
#define RASP_CONSUMER_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "estimate.h"

/* At most this many samples live at once (56 bytes each, in a table at most half full: about
 * 900 MiB at the limit). Past it the live heap is given up, and said: at the default mean it
 * is some 400 GiB of live objects. */
#define RASP_LIVE_MAX_SAMPLES (1u << 23)
/* The timeline keeps between RASP_LIVE_POINTS / 2 and RASP_LIVE_POINTS points, evenly spaced
 * from the first event: when full, every other one goes and the step doubles. */
#define RASP_LIVE_POINTS 256
/* At most this many (point, cell) entries in the timeline (48 bytes each: 48 MiB). Past it
 * the timeline thins out as when full, so with many cells live it holds fewer points. */
#define RASP_LIVE_MAX_ENTRIES (1u << 20)
/* The lifetimes reported: freed within 1 ms, within 1 s. */
#define RASP_LIVE_SHORT_NS 1000000LL
#define RASP_LIVE_LONG_NS  1000000000LL

/* The moment a report's in-use figures are of. */
enum rasp_live_moment {
	RASP_LIVE_END,	/* the end of the recording (for a program that exited: its leaks) */
	RASP_LIVE_PEAK, /* when the estimated total of live bytes was highest */
	RASP_LIVE_AT,	/* a time, in seconds from the recording's first event */
};

/* Additive sums over a set of live samples: what a cell's live part weighs. */
struct rasp_live_stats {
	double samples;
	double bytes;	      /* sum z / h */
	double objects;	      /* sum 1 / h */
	double unsampled;     /* sum (z - o) */
	double sampled_bytes; /* sum z */
	double objects_var;   /* sum (1 - h) / h^2 */
};

struct rasp_live_cell {
	double p;
	struct rasp_live_stats now; /* its samples live now */
	/* Lifetimes: estimated bytes (sum z / h) of all its samples, of those freed at all, and
	 * of those freed within RASP_LIVE_SHORT_NS and RASP_LIVE_LONG_NS of their sample (both
	 * events timed). */
	double alloc, freed, freed_short, freed_long;
	/* Estimated bytes allocated after the moment (this epoch's), for the FREED share. */
	double after;
	uint32_t after_epoch;
	/* Its samples live at the moment: rasp_live_finish builds it. */
	struct rasp_est_cell at;
};

/* One live sample. seq: its order among samples (from 1; 0 marks an empty table slot). */
struct rasp_live_sample {
	int64_t pid;
	uint64_t address;
	uint64_t size, offset;
	int64_t ns; /* its time, INT64_MIN when untimed */
	uint64_t seq;
	uint32_t cell;
	uint32_t instance;
};

/* One point of the timeline: its time (ns from the clock's origin) and its entries. */
struct rasp_live_point {
	int64_t ns;
	size_t first, n;
};
struct rasp_live_entry {
	uint32_t cell;
	struct rasp_live_stats s;
};

struct rasp_live {
	enum rasp_live_moment moment;
	double at_seconds;

	struct rasp_live_cell *cells;
	size_t ncells, capcells;

	/* The table: open addressing, linear probing, power-of-two size, at most half full;
	 * deletion shifts the entries that follow back (no tombstones). */
	struct rasp_live_sample *slots;
	size_t size, n;
	uint64_t seq; /* samples seen */

	/* The moment, once reached (END: never; it is the end): the samples live then are the
	 * table's of seq <= moment_seq and the journal's (freed since). */
	bool moment_set;
	uint64_t moment_seq;
	int64_t moment_ns;
	uint32_t epoch;
	struct rasp_live_sample *journal;
	size_t njournal, capjournal;
	double total_now, peak_total; /* estimated live bytes, all cells */

	/* The timeline. */
	struct rasp_live_point *points;
	size_t npoints;
	struct rasp_live_entry *entries;
	size_t nentries, capentries;
	int64_t origin_ns, step_ns, next_ns;
	bool clock_started;
	uint64_t last_activity; /* samples and frees when the last point was taken */
	/* The end, the last point (rasp_live_finish). */
	struct rasp_live_entry *end_entries;
	size_t nend, capend;
	int64_t end_point_ns;
	bool has_end;

	/* What the trace said of lifetimes. */
	bool declared;		  /* a free event class is in the input */
	uint64_t frees;		  /* SampledObjectFreed events */
	uint64_t frees_paired;	  /* of which paired with their sample */
	uint64_t frees_unmatched; /* with no sample live at their address */
	uint64_t size_mismatch;	  /* paired, but with another ObjectSize */
	uint64_t replaced;	  /* samples at an address whose previous sample had no free */
	uint64_t heap_destroyed;  /* HeapDestroyed events */
	uint64_t heap_freed;	  /* samples they ended */
	uint64_t no_address;	  /* samples without an Address: not tracked */
	bool overflow;		  /* more than RASP_LIVE_MAX_SAMPLES live: given up */
	/* The last sample that replaced a live one, and the one it replaced: a free of the
	 * same address at the same time as the new sample is the old one's (events of one
	 * timestamp may come in either order), not the new one's. */
	struct rasp_live_sample replacing, replaced_sample;
	bool has_replacing;
	int64_t end_ns; /* the last event's time, set by rasp_live_finish */
};

struct rasp_live *rasp_live_create(void);
void rasp_live_destroy(struct rasp_live *l);

/* The moment the in-use figures are of (before any event). seconds >= 0 for RASP_LIVE_AT. */
int rasp_live_set_moment(struct rasp_live *l, enum rasp_live_moment m, double seconds);

/* A new cell of sampling probability p: its index in l->cells. -ENOMEM. */
int rasp_live_cell_add(struct rasp_live *l, double p, uint32_t *index);

/* The input declares a free event class (events may follow). */
void rasp_live_declare(struct rasp_live *l);
/* Whether the input can say what is live: it declared or held free events. */
bool rasp_live_available(const struct rasp_live *l);

/* Why the input cannot say what is live (rasp_live_available false, or overflow): one
 * sentence, with what it would take. */
const char *rasp_live_unavailable_why(const struct rasp_live *l);

/* Time passes: an event at ns (first_ns: the recording's first), before its effect. Points
 * of the timeline up to ns are taken, and an --at moment reached. -ENOMEM. */
int rasp_live_clock(struct rasp_live *l, int64_t ns, int64_t first_ns);

/* A sample (AllocationSampled) of cell `cell`, at `address` of (pid, instance); timed: ns is
 * its time. A previous sample still live at that address lost its free: it is ended and
 * counted. -ENOMEM. */
int rasp_live_sample(struct rasp_live *l, uint32_t cell, int64_t pid, uint64_t instance,
		     uint64_t address, uint64_t size, uint64_t offset, bool timed, int64_t ns);
/* A sample without an Address field: counted, never live. */
void rasp_live_sample_untracked(struct rasp_live *l, uint32_t cell, uint64_t size);

/* A SampledObjectFreed, or one free of a SampledObjectsFreed: ends the latest sample of (pid,
 * instance, address) at ns. One with no such sample is counted, nothing more; a size other
 * than the sample's is counted (the sample still ends: the address is exact). A free at a time
 * before events already applied (a batch's, late) leaves the figures as if it had come at its
 * time: the timeline's points after ns stop counting the sample, and so does the moment (--at,
 * the peak: its total too) when ns is before it. What stays approximate: which moment is the
 * peak is chosen as events come, so a peak chosen while frees were still to come stays the
 * moment even when the corrected figures of another would be higher (its own figures are
 * exact). -ENOMEM (the sample then stays live). */
int rasp_live_free(struct rasp_live *l, int64_t pid, uint64_t instance, uint64_t address,
		   uint64_t size, bool timed, int64_t ns);
/* A HeapDestroyed: every live sample of (pid, instance) ends. O(live samples). */
int rasp_live_heap_destroyed(struct rasp_live *l, int64_t pid, uint64_t instance, bool timed,
			     int64_t ns);

/* The report's moment: builds every cell's `at` from the samples live then, and the
 * timeline's last point at end_ns (the last event's time; untimed: none). May be called again
 * after more events. O(live samples + cells). -ENOMEM. */
int rasp_live_finish(struct rasp_live *l, bool timed, int64_t end_ns);

/* The timeline's points, the end last (after rasp_live_finish): their number, and point k's
 * time (ns from the clock's origin) with its entries (a cell each, with its live sums). */
size_t rasp_live_npoints(const struct rasp_live *l);
int64_t rasp_live_point(const struct rasp_live *l, size_t k, const struct rasp_live_entry **v,
			size_t *n);

/* The moment's time in ns from the clock's origin (after rasp_live_finish). */
int64_t rasp_live_moment_ns(const struct rasp_live *l);

/* The estimated bytes of cell c allocated by the moment (for the FREED share). */
double rasp_live_alloc_by_moment(const struct rasp_live *l, const struct rasp_live_cell *c);

/* A set of stats as an estimator cell of probability p (no sizes kept: the objects interval
 * is the gamma one of rasp_est_sum without the extrapolation below the smallest sample). */
void rasp_live_stats_cell(const struct rasp_live_stats *s, double p, struct rasp_est_cell *out);

#endif /* RASP_CONSUMER_LIVE_H */
