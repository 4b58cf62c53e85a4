/* sink.rasp.nettrace: writes the events rasp knows (AllocationSampled, rasp's SamplingConfigured
 * and SamplingStopped, GCAllocationTick, the frees of sampled objects: LTTng's batches become
 * one SampledObjectFreed per free) of one process as an EventPipe NetTrace V4 file that
 * .NET tools open, through the same encoder as the runtime's EventPipe session
 * (codec/nettrace-stream.h). Parameters: path="FILE" (required), pid=N (the process to keep
 * when the input holds several). Lost events become sequence-number gaps, which TraceEvent and
 * rasp count as lost. */
#ifndef RASP_CONSUMER_SINK_NETTRACE_H
#define RASP_CONSUMER_SINK_NETTRACE_H

#include <babeltrace2/babeltrace.h>

#include "sink-nettrace-stats.h"

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
