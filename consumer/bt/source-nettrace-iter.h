/* What source.rasp.nettrace's files share (source-nettrace.c, the component and its
 * messages; source-nettrace-classes.c, the classes): the component's and the iterator's
 * state. Internal to the consumer. */
#ifndef RASP_CONSUMER_SOURCE_NETTRACE_ITER_H
#define RASP_CONSUMER_SOURCE_NETTRACE_ITER_H

#include <babeltrace2/babeltrace.h>
#include <stddef.h>
#include <stdint.h>

#include "read/nettrace-read.h"
#include "source-nettrace.h"

/* Room for the strings of one event's payload. */
#define STR_CAP 65536

struct source {
	char **paths;
	size_t n;
	struct rasp_nettrace_source_init init; /* in process: who hears of cut files */
};

/* One event class and what it was made from. */
struct nt_class {
	bt_event_class *ec;
	char *name;
	const struct rasp_event_desc *desc; /* the payload layout, NULL: none */
	/* The definition it was last matched to (the fast check of by_id). */
	uint32_t event_id, version;
	char *provider;
};

/* Event classes one file may make: past this the file is hostile, not rich (.NET's runtime
 * and libraries define a few thousand events). libbabeltrace2 checks a new class's id against
 * every class of the stream class, so n classes cost O(n^2): 16384 take 0.7 s and 60 MB in
 * rasp report, 65536 took 14 s. */
#define RASP_NT_MAX_CLASSES 16384

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
	/* Event classes, each made once per (name, layout) and owned here. A metadata id names
	 * the class of its current definition: V6 may redefine an id, and the runtime may give
	 * an event another id after a metadata flush, so an id's slot is checked against the
	 * definition at hand on each event (source-nettrace-classes.c). */
	struct nt_class *classes;
	size_t nclasses, capclasses;
	uint32_t *class_index; /* open addressing by (name, layout): class index + 1, 0 empty */
	size_t capindex;       /* a power of two, at least twice nclasses */
	uint32_t *by_id;       /* per metadata id: class index + 1, 0 none; ID_TAKEN flag */
	size_t nby_id;
	bt_event_class *stack_class;
	uint64_t next_extra_id; /* ids above it are classes' whose metadata id was taken */
	/* S_FAILED: the stream was ended early, error goes out with the next call. */
	enum { S_BEGIN, S_EVENTS, S_END, S_FAILED, S_DONE } state;
	const bt_error *error;
	int64_t last_ts;
	__int128 off_ns; /* the clock's offset from the Unix epoch, in ns */
	char strbuf[STR_CAP];
};

/* The event class of metadata record m's current definition, made on first use; NULL with
 * an error cause naming offset (the event's) on failure. */
bt_event_class *rasp__nt_source_event_class(struct iter *it, const struct rasp_nt_meta *m,
					    uint64_t offset);
/* Puts the event classes and frees their tables. */
void rasp__nt_source_classes_free(struct iter *it);
/* The class of the ClrStackWalk events made from the file's stacks; NULL on failure. */
bt_event_class *rasp__nt_source_stack_class(struct iter *it);
/* Trace, clock and stream classes, the trace and its stream. 0, or -1 (an error is set). */
int rasp__nt_source_make_stream(struct iter *it);

#endif
