/* What rasp's babeltrace2 sinks (sink.rasp.report, sink.rasp.nettrace) share: one input port
 * "in", its upstream message iterator, the step that hands each message to the sink and
 * releases it, and the making of the component class. */
#ifndef RASP_CONSUMER_BT_SINK_H
#define RASP_CONSUMER_BT_SINK_H

#include <babeltrace2/babeltrace.h>

/* A sink's handling of one message (borrowed) and of the end of its input. */
typedef bt_component_class_sink_consume_method_status (*rasp_bt_sink_msg_fn)(void *sink,
									     const bt_message *msg);
typedef bt_component_class_sink_consume_method_status (*rasp_bt_sink_end_fn)(void *sink);

/* graph_is_configured: the iterator on port "in" into *it. */
bt_component_class_sink_graph_is_configured_method_status
rasp_bt_sink_connect(bt_self_component_sink *self, bt_message_iterator **it);

/* consume: the next messages of it, each to msg (every one released, also after a failure
 * part-way), or end at the end of the input; AGAIN passes through (live sources). */
bt_component_class_sink_consume_method_status
rasp_bt_sink_next(bt_self_component *self, bt_message_iterator *it, rasp_bt_sink_msg_fn msg,
		  rasp_bt_sink_end_fn end, void *sink);

/* A sink class with its methods, description and help; NULL on error. */
bt_component_class_sink *
rasp_bt_sink_class(const char *name, const char *description, const char *help,
		   bt_component_class_sink_initialize_method init,
		   bt_component_class_sink_finalize_method fini,
		   bt_component_class_sink_graph_is_configured_method configured,
		   bt_component_class_sink_consume_method consume);

#endif /* RASP_CONSUMER_BT_SINK_H */
