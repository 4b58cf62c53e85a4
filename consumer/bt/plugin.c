/* The babeltrace2 plugin `rasp`: registration of its component classes and nothing else.
 * sink.rasp.report (sink-report.c) turns DotNETRuntime:AllocationSampled events from any
 * source into allocation estimates; source.rasp.nettrace (source-nettrace.c) reads EventPipe
 * .nettrace files; sink.rasp.nettrace (sink-nettrace.c) writes them. */
#include <babeltrace2/babeltrace.h>

#include "sink-nettrace.h"
#include "sink-report.h"
#include "source-nettrace.h"

/* The loader finds the plugin through symbols BT_PLUGIN_MODULE defines without a
 * visibility attribute: keep them visible even if the build hides everything else. */
#pragma GCC visibility push(default)
BT_PLUGIN_MODULE();
#pragma GCC visibility pop

BT_PLUGIN(rasp);
BT_PLUGIN_DESCRIPTION("rasp: estimates from sampled allocations (.NET AllocationSampled)");
BT_PLUGIN_AUTHOR("rasp contributors");
BT_PLUGIN_LICENSE("MIT");

BT_PLUGIN_SINK_COMPONENT_CLASS(report, rasp__report_sink_consume);
BT_PLUGIN_SINK_COMPONENT_CLASS_DESCRIPTION(report, RASP_REPORT_SINK_DESCRIPTION);
BT_PLUGIN_SINK_COMPONENT_CLASS_HELP(report, RASP_REPORT_SINK_HELP);
BT_PLUGIN_SINK_COMPONENT_CLASS_INITIALIZE_METHOD(report, rasp__report_sink_initialize);
BT_PLUGIN_SINK_COMPONENT_CLASS_FINALIZE_METHOD(report, rasp__report_sink_finalize);
BT_PLUGIN_SINK_COMPONENT_CLASS_GRAPH_IS_CONFIGURED_METHOD(report,
							  rasp__report_sink_graph_is_configured);

BT_PLUGIN_SOURCE_COMPONENT_CLASS(nettrace, rasp__nettrace_iter_next);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_DESCRIPTION(nettrace, RASP_NETTRACE_SOURCE_DESCRIPTION);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_HELP(nettrace, RASP_NETTRACE_SOURCE_HELP);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_INITIALIZE_METHOD(nettrace, rasp__nettrace_source_initialize);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_FINALIZE_METHOD(nettrace, rasp__nettrace_source_finalize);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_QUERY_METHOD(nettrace, rasp__nettrace_source_query);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(
    nettrace, rasp__nettrace_iter_initialize);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(
    nettrace, rasp__nettrace_iter_finalize);

BT_PLUGIN_SINK_COMPONENT_CLASS_WITH_ID(auto, nettrace_sink, "nettrace",
				       rasp__nettrace_sink_consume);
BT_PLUGIN_SINK_COMPONENT_CLASS_DESCRIPTION_WITH_ID(auto, nettrace_sink,
						   RASP_NETTRACE_SINK_DESCRIPTION);
BT_PLUGIN_SINK_COMPONENT_CLASS_HELP_WITH_ID(auto, nettrace_sink, RASP_NETTRACE_SINK_HELP);
BT_PLUGIN_SINK_COMPONENT_CLASS_INITIALIZE_METHOD_WITH_ID(auto, nettrace_sink,
							 rasp__nettrace_sink_initialize);
BT_PLUGIN_SINK_COMPONENT_CLASS_FINALIZE_METHOD_WITH_ID(auto, nettrace_sink,
						       rasp__nettrace_sink_finalize);
BT_PLUGIN_SINK_COMPONENT_CLASS_GRAPH_IS_CONFIGURED_METHOD_WITH_ID(
    auto, nettrace_sink, rasp__nettrace_sink_graph_is_configured);
