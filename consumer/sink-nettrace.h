/* sink.rasp.nettrace: writes the events rasp knows (AllocationSampled, rasp's SamplingConfigured
 * and SamplingStopped, GCAllocationTick) of one process as an EventPipe NetTrace V4 file that
 * .NET tools open, through the same encoder as the runtime's EventPipe session
 * (events/nettrace-stream.h). Parameters: path="FILE" (required), pid=N (the process to keep
 * when the input holds several). Lost events become sequence-number gaps, which TraceEvent and
 * rasp count as lost. */
#ifndef RASP_CONSUMER_SINK_NETTRACE_H
#define RASP_CONSUMER_SINK_NETTRACE_H

#include <babeltrace2/babeltrace.h>
#include <stdbool.h>
#include <stdint.h>

/* What a conversion did, for programs that build the sink in process (rasp convert): hand a
 * pointer to one as initialize-method data. */
struct rasp_nettrace_sink_stats {
	int64_t pid;	    /* the process written (-1: none) */
	uint64_t written;   /* events written */
	uint64_t other;	    /* events of classes rasp does not write, skipped */
	uint64_t other_pid; /* events of other processes, skipped (pid=N) */
	uint64_t lost;	    /* events lost upstream, written as gaps */
	bool lost_unknown;  /* some losses had no count (lost packets): `lost` is a floor */
};

bt_component_class_initialize_method_status
rasp__nettrace_sink_initialize(bt_self_component_sink *self,
			       bt_self_component_sink_configuration *config, const bt_value *params,
			       void *init_data);
void rasp__nettrace_sink_finalize(bt_self_component_sink *self);
bt_component_class_sink_graph_is_configured_method_status
rasp__nettrace_sink_graph_is_configured(bt_self_component_sink *self);
bt_component_class_sink_consume_method_status
rasp__nettrace_sink_consume(bt_self_component_sink *self);

/* The class, for graphs built in process (what the plugin registers). NULL on error. */
bt_component_class_sink *rasp_nettrace_sink_class_create(void);

#define RASP_NETTRACE_SINK_DESCRIPTION                                                             \
	"Write AllocationSampled (and rasp's sampling) events of one process as an EventPipe "     \
	".nettrace file."
#define RASP_NETTRACE_SINK_HELP                                                                    \
	"Parameters: path=\"FILE.nettrace\" (required), pid=N (which process, when the input "     \
	"holds several). See docs/eventpipe.md."

#endif /* RASP_CONSUMER_SINK_NETTRACE_H */
