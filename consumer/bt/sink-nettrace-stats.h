/* What sink.rasp.nettrace did, for programs that build it in process (rasp convert), apart
 * from the sink's header so that they need no babeltrace2 types to read it. */
#ifndef RASP_CONSUMER_SINK_NETTRACE_STATS_H
#define RASP_CONSUMER_SINK_NETTRACE_STATS_H

#include <stdbool.h>
#include <stdint.h>

/* Hand a pointer to one as the sink's initialize-method data. */
struct rasp_nettrace_sink_stats {
	int64_t pid;	    /* the process written (-1: none) */
	uint64_t written;   /* events written */
	uint64_t objects;   /* of which ObjectLoaded, from LTTng-UST's object events */
	uint64_t other;	    /* events of classes rasp does not write, skipped */
	uint64_t other_pid; /* events of other processes, skipped (pid=N) */
	uint64_t lost;	    /* events lost upstream, written as gaps */
	bool lost_unknown;  /* some losses had no count (lost packets): `lost` is a floor */
	/* SampledObjectFreed written from LTTng's SampledObjectsFreed (one per free), and of those
	 * written later than their time (older than RASP_NT_HOLD_NS, sink-nettrace.c: the events
	 * after it were written already), with the most late. */
	uint64_t frees, frees_late;
	int64_t frees_late_max_ns;
};

#endif /* RASP_CONSUMER_SINK_NETTRACE_STATS_H */
