/* The tally: everything a report counts while events arrive, before any estimate is made.
 * Samples fall in cells, one per group (the group-by keys) and sampling mean; processes keep
 * their name, their sampling mean and how many of their samples had to assume one; the lost
 * data, other events, time span, inputs and warnings are kept for the report's header.
 * Estimates are made from cells (rows.c); output is writers' (write-*.c). No babeltrace2
 * types: sources (LTTng through the sink, EventPipe files) feed it through this API.
 *
 * Cost per sample: one process lookup (cached for runs of one process), one type lookup when
 * grouping by type, one cell lookup, and a thread-mean lookup only in traces whose
 * SamplingConfigured events name threads. Memory: one cell (248 bytes) per group and mean,
 * one entry per type (16 bytes + the name) and per process; threads cost nothing unless the
 * report groups by thread or the trace gives threads their own means.
 * Errors are 0 or a negative errno value. */
#ifndef RASP_CONSUMER_TALLY_H
#define RASP_CONSUMER_TALLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "estimate.h"
#include "index.h"
#include "live.h"
#include "stacks/modules.h"
#include "stacks/stacks.h"

/* A process or thread id the trace did not carry (no vpid/vtid context). */
#define RASP_ID_UNKNOWN INT64_MIN
/* No string (offsets into the tally's name arena). */
#define RASP_NO_NAME SIZE_MAX

/* group-by keys, a bit mask; output columns always come in this order. */
enum rasp_group_key {
	RASP_GROUP_TYPE = 1u << 0,
	RASP_GROUP_KIND = 1u << 1,
	RASP_GROUP_THREAD = 1u << 2,
	RASP_GROUP_PROCESS = 1u << 3,
	/* By where: the allocating function (the innermost frame of the sample's stack,
	 * symbolized), or the whole stack. Cells then key on the interned stack; rows.c merges
	 * the stacks of one site. */
	RASP_GROUP_SITE = 1u << 4,
	RASP_GROUP_STACK = 1u << 5,
};
#define RASP_GROUP_ALL	 0xfu /* type, kind, thread, process */
#define RASP_GROUP_WHERE (RASP_GROUP_SITE | RASP_GROUP_STACK)

struct rasp_tally_type {
	uint64_t hash;
	size_t name; /* offset in the name arena */
};

/* GCAllocationTick events charged to a type (older .NET): biased, never estimates. */
struct rasp_tally_tick {
	uint64_t ticks;
	uint64_t amount; /* sum of AllocationAmount, bytes */
};

struct rasp_tally_process {
	int64_t pid;
	size_t name;		    /* last procname seen (arena offset), RASP_NO_NAME if none */
	double mean;		    /* last SamplingConfigured mean of the process, 0 if none */
	uint64_t configured;	    /* SamplingConfigured events of the process */
	uint64_t samples;	    /* AllocationSampled events */
	uint64_t samples_assumed;   /* of which weighed with the default mean: no mean known */
	double mean_low, mean_high; /* range of the means its samples were weighed with */
	bool declared; /* its producer's format fixes the mean (an EventPipe file: .NET's) */
};

/* The mean a thread announced (SamplingConfigured is emitted by the thread that adopts a
 * mean, so samples a thread drew under its old mean precede it in the trace). */
/* The mean of a thread's samples of one runtime instance: a rasp process may have several
 * heaps at several means, told apart by their ClrInstanceID. */
struct rasp_tally_thread_mean {
	int64_t pid, tid;
	uint64_t instance;
	double mean;
};

/* Samples of one group drawn at one sampling mean (est.p = 1/mean): what rasp_est_sum
 * unbiases as a unit. Keys not grouped by are 0. */
struct rasp_tally_cell {
	uint32_t type;	/* type index + 1 when grouped by type */
	uint32_t kind;	/* AllocationKind when grouped by kind (clamped to UINT32_MAX) */
	uint32_t stack; /* stack id when grouped by site or stack, 0: the sample had none */
	int64_t process, thread;
	uint32_t live; /* its index in the live heap's cells (live.h) */
	struct rasp_est_cell est;
};

struct rasp_tally {
	unsigned group_by;   /* enum rasp_group_key mask */
	double default_mean; /* for samples of processes with no SamplingConfigured */

	char *names; /* arena of NUL-terminated type and process names */
	size_t names_len, names_cap;

	struct rasp_tally_type *types;
	size_t ntypes, captypes;
	struct rasp_index type_index;
	struct rasp_tally_tick *ticks; /* per type; NULL until the first tick */
	size_t capticks;

	struct rasp_tally_process *procs;
	size_t nprocs, capprocs, last_proc;
	struct rasp_index proc_index;

	struct rasp_tally_thread_mean *tmeans;
	size_t ntmeans, captmeans, last_tmean;
	struct rasp_index tmean_index;

	struct rasp_tally_cell *cells;
	size_t ncells, capcells;
	struct rasp_index cell_index;
	bool cells_sorted; /* rows.c sorted them: the index is rebuilt before the next add */

	uint64_t samples;      /* AllocationSampled events counted */
	uint64_t configured;   /* SamplingConfigured events */
	uint64_t ticks_total;  /* GCAllocationTick events */
	uint64_t other_events; /* events of any other class */
	uint64_t skipped;      /* malformed events skipped (strict=false) */
	uint64_t discarded_events, discarded_events_unknown;
	uint64_t discarded_packets, discarded_packets_unknown;
	int64_t first_ns, last_ns; /* span of the events' timestamps, when timed */
	bool timed;

	char **warnings; /* what makes the figures doubtful, one sentence each */
	size_t nwarnings, capwarnings;
	char **inputs; /* what was read (trace directories, files, URLs) */
	size_t ninputs, capinputs;

	struct rasp_stacks stacks;   /* the samples' stacks, when grouped by site or stack */
	struct rasp_modules modules; /* the code of each process, for symbolizing them */
	uint64_t samples_with_stack;
	uint64_t stack_events; /* ClrStackWalk events, grouped by where or not */

	struct rasp_live *live; /* what is still allocated (live.h) */
	size_t last_cell;	/* the cell of the last sample added */
};

struct rasp_tally *rasp_tally_create(unsigned group_by, double default_mean);
void rasp_tally_destroy(struct rasp_tally *t);

/* A SamplingConfigured event: from now on `pid`'s samples (thread `tid`'s, when known) are
 * weighed with p = 1/mean. -EINVAL unless mean >= 1 and finite. */
int rasp_tally_set_mean(struct rasp_tally *t, int64_t pid, int64_t tid, double mean);
/* The same for the samples of one ClrInstanceID (a heap of a rasp process): what
 * rasp_tally_set_mean does for instance 0. */
int rasp_tally_set_mean_of(struct rasp_tally *t, int64_t pid, int64_t tid, uint64_t instance,
			   double mean);

/* The mean a trace's format fixes for pid's samples (an EventPipe file from .NET: 102400),
 * until a SamplingConfigured says otherwise: not an assumption, and not counted as an
 * event. -EINVAL unless mean >= 1 and finite. */
int rasp_tally_declare_mean(struct rasp_tally *t, int64_t pid, double mean);

/* The process's name (procname), kept as last seen. */
int rasp_tally_set_process_name(struct rasp_tally *t, int64_t pid, const char *name);

/* One AllocationSampled event. type NULL counts as "NULL" (as .NET writes for no name).
 * -EINVAL when size is 0 or offset >= size (nothing is counted), -ENOMEM. */
int rasp_tally_add_sample(struct rasp_tally *t, const char *type, uint64_t kind, int64_t pid,
			  int64_t tid, uint64_t size, uint64_t offset);
/* The same with the sample's call stack (nframes return addresses, innermost first; 0: none
 * known), kept when the tally groups by site or stack. */
int rasp_tally_add_sample_stack(struct rasp_tally *t, const char *type, uint64_t kind, int64_t pid,
				int64_t tid, uint64_t size, uint64_t offset, const uint64_t *frames,
				size_t nframes);
/* The same for a sample of ClrInstanceID `instance`, weighed with that instance's mean on its
 * thread (rasp_tally_set_mean_of); the others are instance 0's. */
int rasp_tally_add_sample_of(struct rasp_tally *t, const char *type, uint64_t kind, int64_t pid,
			     int64_t tid, uint64_t instance, uint64_t size, uint64_t offset,
			     const uint64_t *frames, size_t nframes);

/* A stack event (ClrStackWalk) of (pid, tid): the stack of the thread's next sample, kept when
 * the tally groups by site or stack. Take gives it back (0 frames when none waits). */
int rasp_tally_pend_stack(struct rasp_tally *t, int64_t pid, int64_t tid, const uint64_t *frames,
			  size_t n);
size_t rasp_tally_take_stack(struct rasp_tally *t, int64_t pid, int64_t tid,
			     const uint64_t **frames);

/* One GCAllocationTick_V2/3/4 event: `amount` bytes charged to `type`. */
int rasp_tally_add_tick(struct rasp_tally *t, const char *type, uint64_t amount);

/* Lost data; count_known false when the trace did not say how much. */
void rasp_tally_add_discarded_events(struct rasp_tally *t, uint64_t count, bool count_known);
void rasp_tally_add_discarded_packets(struct rasp_tally *t, uint64_t count, bool count_known);
bool rasp_tally_lost_data(const struct rasp_tally *t);

void rasp_tally_add_skipped(struct rasp_tally *t);
void rasp_tally_add_other_event(struct rasp_tally *t);
/* An event's timestamp in ns from the clock's origin, for the report's duration. */
void rasp_tally_note_time(struct rasp_tally *t, int64_t ns);
/* last - first timestamp in ns (0 when not timed); a difference of any two int64 fits. */
uint64_t rasp_tally_duration_ns(const struct rasp_tally *t);

/* A sentence for the report's header (an identical one is kept once). 0 or -ENOMEM. */
int rasp_tally_add_warning(struct rasp_tally *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* What the report read, for its header. */
int rasp_tally_add_input(struct rasp_tally *t, const char *name);

/* Name of type index i, or of a process (NULL when it has none). */
const char *rasp_tally_type_name(const struct rasp_tally *t, size_t i);
const char *rasp_tally_process_name(const struct rasp_tally *t, const struct rasp_tally_process *p);
/* The process entry of pid, NULL if the tally never saw it. */
const struct rasp_tally_process *rasp_tally_find_process(const struct rasp_tally *t, int64_t pid);
/* Samples weighed with the default mean, over all processes. */
uint64_t rasp_tally_samples_assumed(const struct rasp_tally *t);

#endif /* RASP_CONSUMER_TALLY_H */
