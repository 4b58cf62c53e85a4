/* The babeltrace2 plugin `rasp`: registration of its component classes and nothing else.
 * sink.rasp.report (sink.c) reads DotNETRuntime:AllocationSampled events from any CTF
 * source and writes allocation estimates (report.c, estimate.c). */
#include <babeltrace2/babeltrace.h>

/* Defined in sink.c; the methods' signatures are fixed by libbabeltrace2. */
bt_component_class_initialize_method_status
rasp__sink_initialize(bt_self_component_sink *self_sink,
		      bt_self_component_sink_configuration *config, const bt_value *params,
		      void *init_data);
void rasp__sink_finalize(bt_self_component_sink *self_sink);
bt_component_class_sink_graph_is_configured_method_status
rasp__sink_graph_is_configured(bt_self_component_sink *self_sink);
bt_component_class_sink_consume_method_status rasp__sink_consume(bt_self_component_sink *self_sink);

/* The loader finds the plugin through symbols BT_PLUGIN_MODULE defines without a
 * visibility attribute: keep them visible even if the build hides everything else. */
#pragma GCC visibility push(default)
BT_PLUGIN_MODULE();
#pragma GCC visibility pop

BT_PLUGIN(rasp);
BT_PLUGIN_DESCRIPTION("rasp: estimates from sampled allocations (.NET AllocationSampled)");
BT_PLUGIN_AUTHOR("rasp contributors");
BT_PLUGIN_LICENSE("MIT");

BT_PLUGIN_SINK_COMPONENT_CLASS(report, rasp__sink_consume);
BT_PLUGIN_SINK_COMPONENT_CLASS_DESCRIPTION(
    report, "Estimate allocated bytes and objects per type, kind, thread or process from "
	    "DotNETRuntime:AllocationSampled events.");
BT_PLUGIN_SINK_COMPONENT_CLASS_HELP(
    report, "Parameters: format=text|csv|json, group-by=\"type,kind,thread,process\", "
	    "confidence=0.95, sampling-mean=102400, top=N (text), output=\"FILE\", "
	    "strict=true|false. See docs/consumer.md.");
BT_PLUGIN_SINK_COMPONENT_CLASS_INITIALIZE_METHOD(report, rasp__sink_initialize);
BT_PLUGIN_SINK_COMPONENT_CLASS_FINALIZE_METHOD(report, rasp__sink_finalize);
BT_PLUGIN_SINK_COMPONENT_CLASS_GRAPH_IS_CONFIGURED_METHOD(report, rasp__sink_graph_is_configured);
