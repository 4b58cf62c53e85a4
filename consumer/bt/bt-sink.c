/* The plumbing rasp's sinks share (bt-sink.h). */
#include "bt-sink.h"

bt_component_class_sink_graph_is_configured_method_status
rasp_bt_sink_connect(bt_self_component_sink *self, bt_message_iterator **it)
{
	bt_message_iterator_create_from_sink_component_status st =
	    bt_message_iterator_create_from_sink_component(
		self, bt_self_component_sink_borrow_input_port_by_name(self, "in"), it);

	if (st == BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_OK)
		return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    bt_self_component_sink_as_self_component(self),
	    "Cannot create the upstream message iterator: port=in status=%d", (int)st);
	return st == BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_MEMORY_ERROR
		   ? BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_MEMORY_ERROR
		   : BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR;
}

bt_component_class_sink_consume_method_status rasp_bt_sink_next(bt_self_component *self,
								bt_message_iterator *it,
								rasp_bt_sink_msg_fn msg,
								rasp_bt_sink_end_fn end, void *sink)
{
	bt_component_class_sink_consume_method_status status =
	    BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	bt_message_array_const msgs;
	uint64_t n = 0;

	switch (bt_message_iterator_next(it, &msgs, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return end(sink);
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		/* Live: upstream has nothing yet; the graph calls again after a pause. */
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		status = BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
		goto error;
	default:
		status = BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
		goto error;
	}
	/* Every message is ours to release, also after a failure part-way through. */
	for (uint64_t i = 0; i < n; i++) {
		if (status == BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK)
			status = msg(sink, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return status;

error:
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    self, "Cannot get messages from upstream: port=in status=%d", (int)status);
	return status;
}

bt_component_class_sink *
rasp_bt_sink_class(const char *name, const char *description, const char *help,
		   bt_component_class_sink_initialize_method init,
		   bt_component_class_sink_finalize_method fini,
		   bt_component_class_sink_graph_is_configured_method configured,
		   bt_component_class_sink_consume_method consume)
{
	bt_component_class_sink *c = bt_component_class_sink_create(name, consume);

	if (!c)
		return NULL;
	if (bt_component_class_set_description(bt_component_class_sink_as_component_class(c),
					       description) ||
	    bt_component_class_set_help(bt_component_class_sink_as_component_class(c), help) ||
	    bt_component_class_sink_set_initialize_method(c, init) ||
	    bt_component_class_sink_set_finalize_method(c, fini) ||
	    bt_component_class_sink_set_graph_is_configured_method(c, configured)) {
		bt_component_class_sink_put_ref(c);
		return NULL;
	}
	return c;
}
