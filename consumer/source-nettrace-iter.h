/* What source.rasp.nettrace's files share (source-nettrace.c, the component and its
 * messages; source-nettrace-classes.c, the classes): the component's and the iterator's
 * state. Internal to the consumer. */
#ifndef RASP_CONSUMER_SOURCE_NETTRACE_ITER_H
#define RASP_CONSUMER_SOURCE_NETTRACE_ITER_H

#include <babeltrace2/babeltrace.h>
#include <stddef.h>
#include <stdint.h>

#include "nettrace-read.h"
#include "source-nettrace.h"

/* Room for the strings of one event's payload. */
#define STR_CAP 65536

struct source {
	char **paths;
	size_t n;
	struct rasp_nettrace_source_init init; /* in process: who hears of cut files */
};

struct iter {
	bt_self_message_iterator *self;
	const struct source *src;
	const char *path;
	struct rasp_nt_reader *r;
	bt_trace_class *tc;
	bt_stream_class *sc;
	bt_clock_class *cc;
	bt_trace *trace;
	bt_stream *stream;
	bt_packet *packet;
	bt_event_class **classes; /* by metadata id */
	size_t nclasses;
	enum { S_BEGIN, S_EVENTS, S_END, S_DONE } state;
	int64_t last_ts;
	__int128 off_ns; /* the clock's offset from the Unix epoch, in ns */
	char strbuf[STR_CAP];
};

/* The event class of a metadata record, made on first use; NULL on failure. */
bt_event_class *rasp__nt_source_event_class(struct iter *it, const struct rasp_nt_meta *m);
/* The class of the ClrStackWalk events made from the file's stacks; NULL on failure. */
bt_event_class *rasp__nt_source_stack_class(struct iter *it);
/* Trace, clock and stream classes, the trace and its stream. 0, or -1 (an error is set). */
int rasp__nt_source_make_stream(struct iter *it);

#endif
