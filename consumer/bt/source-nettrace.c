/* source.rasp.nettrace, the component glue: one output port per .nettrace file (parameter
 * `inputs`), whose message iterator turns the reader's items (nettrace-read.c) into
 * babeltrace2 messages. Events rasp knows from its manifests become event classes named and
 * laid out as CoreCLR's LTTng events ("DotNETRuntime:AllocationSampled", the same seven
 * fields), with common context fields vpid and vtid, so sink.rasp.report and any other sink
 * treat an EventPipe file and an LTTng trace alike; a known event's stack (stack blocks)
 * comes just before it as a DotNETRuntime:ClrStackWalk event, as rasp emits it in LTTng.
 * Other events keep their provider and id
 * in the name and carry no payload fields: counted, not decoded. Losses the sequence numbers
 * show become discarded-events messages between timed packets, as CTF has them; a file
 * without its end marker ends with one of an unknown count, so the report says events are
 * missing. A corrupt file ends its stream cleanly, then fails with the offset. The source
 * answers babeltrace.support-info for files with the NetTrace magic. */
#include "source-nettrace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/nettrace-read.h"
#include "source-nettrace-iter.h"

static void source_free(struct source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->paths[i]);
	free(s->paths);
	free(s);
}

bt_component_class_initialize_method_status
rasp__nettrace_source_initialize(bt_self_component_source *self_src,
				 bt_self_component_source_configuration *config,
				 const bt_value *params, void *init_data)
{
	bt_self_component *self = bt_self_component_source_as_self_component(self_src);
	const bt_value *inputs =
	    params ? bt_value_map_borrow_entry_value_const(params, "inputs") : NULL;
	struct source *s = calloc(1, sizeof(*s));

	(void)config;
	if (s && init_data)
		s->init = *(const struct rasp_nettrace_source_init *)init_data;
	if (!s)
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	if (!inputs || !bt_value_is_array(inputs) || bt_value_array_get_length(inputs) == 0) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "bad parameter: name=inputs accepted=non-empty array of .nettrace file "
			  "paths");
		goto error;
	}
	s->paths = calloc(bt_value_array_get_length(inputs), sizeof(*s->paths));
	if (!s->paths)
		goto error;
	for (uint64_t i = 0; i < bt_value_array_get_length(inputs); i++) {
		const bt_value *v = bt_value_array_borrow_element_by_index_const(inputs, i);
		struct rasp_nt_reader *r;
		char err[512], port[32];

		if (!bt_value_is_string(v)) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    self,
			    "bad parameter: name=inputs index=%" PRIu64
			    " accepted=a file path string",
			    i);
			goto error;
		}
		/* Opened once now, so a file that is no NetTrace file fails the graph at once. */
		r = rasp_nt_open(bt_value_string_get(v), err, sizeof(err));
		if (!r) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(self, "%s", err);
			goto error;
		}
		rasp_nt_close(r);
		s->paths[s->n] = strdup(bt_value_string_get(v));
		if (!s->paths[s->n])
			goto error;
		snprintf(port, sizeof(port), "out%" PRIu64, i);
		if (bt_self_component_source_add_output_port(self_src, port, s->paths[s->n],
							     NULL) !=
		    BT_SELF_COMPONENT_ADD_PORT_STATUS_OK) {
			s->n++;
			goto error;
		}
		s->n++;
	}
	bt_self_component_set_data(self, s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
error:
	source_free(s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
}

void rasp__nettrace_source_finalize(bt_self_component_source *self_src)
{
	source_free(
	    bt_self_component_get_data(bt_self_component_source_as_self_component(self_src)));
}

bt_message_iterator_class_initialize_method_status
rasp__nettrace_iter_initialize(bt_self_message_iterator *self,
			       bt_self_message_iterator_configuration *config,
			       bt_self_component_port_output *port)
{
	struct iter *it = calloc(1, sizeof(*it));
	char err[512];

	(void)config;
	if (!it)
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	it->self = self;
	it->src = bt_self_component_get_data(bt_self_message_iterator_borrow_component(self));
	it->path = bt_self_component_port_get_data(
	    bt_self_component_port_output_as_self_component_port(port));
	it->r = rasp_nt_open(it->path, err, sizeof(err));
	if (!it->r || rasp__nt_source_make_stream(it)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
		    self, "%s", it->r ? "cannot create the trace's classes" : err);
		/* Whatever was made, freed the one way. */
		bt_self_message_iterator_set_data(self, it);
		rasp__nettrace_iter_finalize(self);
		return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	}
	it->last_ts = INT64_MIN;
	bt_self_message_iterator_set_data(self, it);
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

void rasp__nettrace_iter_finalize(bt_self_message_iterator *self)
{
	struct iter *it = bt_self_message_iterator_get_data(self);

	if (!it)
		return;
	if (it->error)
		bt_error_release(it->error);
	rasp__nt_source_classes_free(it);
	bt_packet_put_ref(it->packet);
	bt_stream_put_ref(it->stream);
	bt_trace_put_ref(it->trace);
	bt_stream_class_put_ref(it->sc);
	bt_clock_class_put_ref(it->cc);
	bt_trace_class_put_ref(it->tc);
	rasp_nt_close(it->r);
	free(it);
	bt_self_message_iterator_set_data(self, NULL);
}

/* ---- Messages ----------------------------------------------------------------------------------
 */

/* An event message of class ec at e's time, its vpid and vtid set; its payload in *payload. */
static bt_message *new_event(struct iter *it, bt_event_class *ec, const struct rasp_nt_event *e,
			     bt_field **payload)
{
	bt_message *msg = bt_message_event_create_with_packet_and_default_clock_snapshot(
	    it->self, ec, it->packet, (uint64_t)e->timestamp);
	bt_event *ev;
	bt_field *ctx;

	if (!msg)
		return NULL;
	ev = bt_message_event_borrow_event(msg);
	ctx = bt_event_borrow_common_context_field(ev);
	bt_field_integer_signed_set_value(bt_field_structure_borrow_member_field_by_index(ctx, 0),
					  e->pid);
	bt_field_integer_signed_set_value(bt_field_structure_borrow_member_field_by_index(ctx, 1),
					  (int64_t)e->thread_id);
	*payload = bt_event_borrow_payload_field(ev);
	return msg;
}

/* One event message: clock snapshot, vpid/vtid, and the payload decoded by the manifest's
 * layout. A payload shorter than its layout is a corrupt file: an error with its offset. */
static bt_message *event_message(struct iter *it, const struct rasp_nt_event *e)
{
	const struct rasp_nt_meta *m = e->meta;
	bt_event_class *ec = rasp__nt_source_event_class(it, m, e->offset);
	union rasp_nt_value vals[32];
	bt_message *msg;
	bt_field *payload;

	if (!ec)
		return NULL;
	if (m->desc &&
	    (m->desc->nfields > 32 ||
	     rasp_nt_decode(m->desc, e->payload, e->payload_len, rasp_nt_info(it->r)->pointer_size,
			    vals, it->strbuf, sizeof(it->strbuf)))) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
		    it->self,
		    "%s: at offset %" PRIu64 ": a %s payload of %zu bytes does not hold its "
		    "fields",
		    it->path, e->offset, m->desc->lttng, e->payload_len);
		return NULL;
	}
	msg = new_event(it, ec, e, &payload);
	if (!msg)
		return NULL;
	for (size_t i = 0; m->desc && i < m->desc->nfields; i++) {
		bt_field *f = bt_field_structure_borrow_member_field_by_index(payload, i);

		if (m->desc->fields[i].count >= 0) {
			uint64_t n = vals[m->desc->fields[i].count].u;

			if (bt_field_array_dynamic_set_length(f, n)) {
				bt_message_put_ref(msg);
				return NULL;
			}
			for (uint64_t k = 0; k < n; k++)
				bt_field_integer_unsigned_set_value(
				    bt_field_array_borrow_element_field_by_index(f, k),
				    rasp_nt_array_get(&vals[i], m->desc->fields[i].type,
						      rasp_nt_info(it->r)->pointer_size, k));
			continue;
		}
		switch (m->desc->fields[i].type) {
		case RASP_FT_UTF16Z:
		case RASP_FT_ANSIZ:
			if (bt_field_string_set_value(f, vals[i].s)) {
				bt_message_put_ref(msg);
				return NULL;
			}
			break;
		case RASP_FT_F32:
		case RASP_FT_F64:
			bt_field_real_double_precision_set_value(f, vals[i].f);
			break;
		case RASP_FT_I8:
		case RASP_FT_I16:
		case RASP_FT_I32:
		case RASP_FT_I64:
			bt_field_integer_signed_set_value(f, vals[i].i);
			break;
		default:
			bt_field_integer_unsigned_set_value(f, vals[i].u);
			break;
		}
	}
	return msg;
}

/* The event's stack as the ClrStackWalk event that precedes its event in an LTTng trace of
 * rasp (DotNETRuntime:ClrStackWalk, the manifest's layout), so sinks pair a stack with its
 * sample the same way from both sources. */
static bt_message *stack_message(struct iter *it, const struct rasp_nt_event *e)
{
	bt_event_class *ec = rasp__nt_source_stack_class(it);
	bt_message *msg;
	bt_field *payload, *stack;

	if (!ec)
		return NULL;
	msg = new_event(it, ec, e, &payload);
	if (!msg)
		return NULL;
	/* ClrInstanceID, Reserved1, Reserved2: 0; FrameCount; Stack. */
	for (uint64_t f = 0; f < 3; f++)
		bt_field_integer_unsigned_set_value(
		    bt_field_structure_borrow_member_field_by_index(payload, f), 0);
	bt_field_integer_unsigned_set_value(
	    bt_field_structure_borrow_member_field_by_index(payload, 3), e->stack_len);
	stack = bt_field_structure_borrow_member_field_by_index(payload, 4);
	if (bt_field_array_dynamic_set_length(stack, e->stack_len)) {
		bt_message_put_ref(msg);
		return NULL;
	}
	for (size_t k = 0; k < e->stack_len; k++)
		bt_field_integer_unsigned_set_value(
		    bt_field_array_borrow_element_field_by_index(stack, k), e->stack[k]);
	return msg;
}

/* Packets, as CTF 1.8 and sink.ctf.fs take them: each has a beginning and an end time, and a
 * loss lies between two packets, from the end of the one before to the end of the one after
 * (whose context counts it). The loss's packet is therefore an empty one at the loss's time,
 * and events open a packet of their own at their time when none is open. Every message's
 * time is at or after the one before. */

/* Opens a packet at ts (ticks). */
static int packet_open(struct iter *it, bt_message **out, uint64_t *n, uint64_t ts)
{
	it->packet = bt_packet_create(it->stream);
	out[(*n)++] = it->packet ? bt_message_packet_beginning_create_with_default_clock_snapshot(
				       it->self, it->packet, ts)
				 : NULL;
	return out[*n - 1] ? 0 : -1;
}

/* Closes the open packet, if any, at ts. */
static int packet_close(struct iter *it, bt_message **out, uint64_t *n, uint64_t ts)
{
	if (!it->packet)
		return 0;
	out[(*n)++] =
	    bt_message_packet_end_create_with_default_clock_snapshot(it->self, it->packet, ts);
	bt_packet_put_ref(it->packet);
	it->packet = NULL;
	return out[*n - 1] ? 0 : -1;
}

/* What the sequence numbers (or an unknown amount: known false) say was lost, at the time of
 * the last event (before any: at, which the clock has): at most four messages. */
static int lost_messages(struct iter *it, bt_message **out, uint64_t *n, uint64_t count, bool known,
			 uint64_t at)
{
	uint64_t ts = it->last_ts == INT64_MIN ? at : (uint64_t)it->last_ts;
	bt_message *m;

	if (packet_close(it, out, n, ts))
		return -1;
	m = bt_message_discarded_events_create_with_default_clock_snapshots(it->self, it->stream,
									    ts, ts);
	if (m && known)
		bt_message_discarded_events_set_count(m, count);
	out[(*n)++] = m;
	if (!m || packet_open(it, out, n, ts) || packet_close(it, out, n, ts))
		return -1;
	it->last_ts = (int64_t)ts;
	return 0;
}

/* Whether the clock can give ts (ticks): babeltrace2 clocks count up from their offset, in
 * 64-bit ns. */
static bool clock_has(const struct iter *it, int64_t ts)
{
	__int128 ns = it->off_ns + (__int128)ts * 1000000000 / rasp_nt_info(it->r)->frequency;

	return ts >= 0 && ns <= INT64_MAX && ns >= INT64_MIN;
}

/* Where a loss before any event goes: the header's sync time, or the clock's origin when the
 * clock cannot give that. */
static uint64_t start_time(const struct iter *it)
{
	int64_t sync = rasp_nt_info(it->r)->sync_ticks;

	return clock_has(it, sync) ? (uint64_t)sync : 0;
}

/* Whether ts (ticks) is a time of the clock at or after the last message's; else an error
 * naming the file and offset. */
static bool time_ok(struct iter *it, int64_t ts, uint64_t offset, const char *what)
{
	if (!clock_has(it, ts)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
		    it->self,
		    "%s: at offset %" PRIu64 ": %s timestamp %" PRId64
		    " ticks lies outside the clock's range (a corrupt header or event)",
		    it->path, offset, what, ts);
		return false;
	}
	if (it->last_ts != INT64_MIN && ts < it->last_ts) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
		    it->self,
		    "%s: at offset %" PRIu64 ": %s timestamp %" PRId64
		    " ticks precedes the previous one, %" PRId64
		    " (events out of time order: a corrupt file)",
		    it->path, offset, what, ts, it->last_ts);
		return false;
	}
	return true;
}

/* An event's messages: a packet's beginning when none is open, its stack (a known event's, as
 * the ClrStackWalk before it) and the event. On failure (a corrupt event, or out of memory)
 * the messages it made are taken back: 0, or -1 with an error cause. */
static int event_messages(struct iter *it, bt_message **out, uint64_t *n,
			  const struct rasp_nt_event *e)
{
	uint64_t first = *n;
	bool opened = false;

	if (!time_ok(it, e->timestamp, e->offset, "event"))
		return -1;
	if (!it->packet) {
		opened = true;
		if (packet_open(it, out, n, (uint64_t)e->timestamp))
			goto undo;
	}
	if (e->stack_len && e->meta->desc) {
		out[*n] = stack_message(it, e);
		if (!out[*n])
			goto undo;
		(*n)++;
	}
	out[*n] = event_message(it, e);
	if (!out[*n])
		goto undo;
	(*n)++;
	it->last_ts = e->timestamp;
	return 0;
undo:
	while (*n > first)
		bt_message_put_ref(out[--*n]);
	if (opened) {
		bt_packet_put_ref(it->packet);
		it->packet = NULL;
	}
	return -1;
}

bt_message_iterator_class_next_method_status
rasp__nettrace_iter_next(bt_self_message_iterator *self, bt_message_array_const msgs,
			 uint64_t capacity, uint64_t *count)
{
	struct iter *it = bt_self_message_iterator_get_data(self);
	bt_message **out = (bt_message **)msgs;
	uint64_t n = 0;

	if (it->state == S_FAILED) {
		bt_current_thread_move_error(it->error);
		it->error = NULL;
		it->state = S_DONE;
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	}
	if (it->state == S_DONE)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
	if (it->state == S_BEGIN) {
		out[n++] = bt_message_stream_beginning_create(self, it->stream);
		if (!out[0])
			goto error;
		it->state = S_EVENTS;
	}
	/* Room for the four messages of a loss, or the three of an event, and then the two of a
	 * failure's end. */
	while (it->state == S_EVENTS && n + 4 <= capacity) {
		struct rasp_nt_item item;
		int rc = rasp_nt_next(it->r, &item);

		if (rc < 0) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
			    self, "%s", rasp_nt_error(it->r));
			goto failed;
		}
		if (rc == 0) {
			it->state = S_END;
			break;
		}
		if (item.kind == RASP_NT_ITEM_LOST) {
			/* Before any event: at the sequence point's time, if the clock has it. */
			uint64_t at =
			    clock_has(it, item.lost_at) ? (uint64_t)item.lost_at : start_time(it);

			if (lost_messages(it, out, &n, item.lost, true, at))
				goto error;
			continue;
		}
		if (event_messages(it, out, &n, &item.event))
			goto failed;
	}
	if (it->state == S_END && n + 5 <= capacity) {
		uint64_t end = it->last_ts == INT64_MIN ? 0 : (uint64_t)it->last_ts;
		static const unsigned declared[] = {RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED,
						    RASP_DESC_RASP_RUNTIME_HEAPDESTROYED};

		/* The free events the file declares but holds none of get their classes too,
		 * before the stream ends: a sink learns from the stream's classes that frees were
		 * recorded (none happened), not unknown (rasp report --inuse). */
		for (size_t i = 0; i < sizeof(declared) / sizeof(declared[0]); i++) {
			const struct rasp_nt_meta *m =
			    rasp_nt_meta_of_desc(it->r, &rasp_event_descs[declared[i]]);

			if (m && !rasp__nt_source_event_class(it, m, rasp_nt_end_offset(it->r)))
				goto error;
		}

		if (packet_close(it, out, &n, end))
			goto error;
		/* A file cut short: an unknown number of events never reached it (one still being
		 * written has lost nothing). */
		if (!rasp_nt_complete(it->r) && !(it->src && it->src->init.growing) &&
		    lost_messages(it, out, &n, 0, false, start_time(it)))
			goto error;
		if (it->src && it->src->init.ended)
			it->src->init.ended(it->src->init.ctx, it->path, rasp_nt_complete(it->r),
					    rasp_nt_end_offset(it->r));
		out[n++] = bt_message_stream_end_create(self, it->stream);
		if (!out[n - 1])
			goto error;
		it->state = S_DONE;
	}
	*count = n;
	if (n == 0)
		return it->state == S_DONE ? BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END
					   : BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_AGAIN;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
failed:
	/* A corrupt file: the events before the bad one go out in a stream ended as usual, and
	 * the error with the next call. Sinks see whole packets and streams (sink.ctf.fs 2.0
	 * crashes when a graph is torn down while it holds a packet open), and fail the graph
	 * when the error comes. */
	it->error = bt_current_thread_take_error();
	if (packet_close(it, out, &n, it->last_ts == INT64_MIN ? 0 : (uint64_t)it->last_ts))
		goto error;
	out[n++] = bt_message_stream_end_create(self, it->stream);
	if (!out[n - 1])
		goto error;
	it->state = S_FAILED;
	*count = n;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
error:
	/* Only the n messages made by this call are ours: the slots past them still hold
	 * messages of earlier batches, which their consumers own now. */
	for (uint64_t i = 0; i < n; i++)
		bt_message_put_ref(out[i]);
	if (it->error) {
		/* The file's error first, then why its stream could not be ended. */
		const bt_error *now = bt_current_thread_take_error();

		bt_current_thread_move_error(it->error);
		it->error = NULL;
		if (now)
			bt_error_release(now);
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
		    self, "%s: out of memory ending the stream", it->path);
	}
	it->state = S_DONE;
	return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
}

bt_component_class_query_method_status
rasp__nettrace_source_query(bt_self_component_class_source *cls, bt_private_query_executor *exec,
			    const char *object, const bt_value *params, void *data,
			    const bt_value **result)
{
	bt_self_component_class *self = bt_self_component_class_source_as_self_component_class(cls);
	const bt_value *input, *type;
	double weight;

	(void)exec;
	(void)data;
	if (strcmp(object, "babeltrace.support-info") != 0)
		return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_UNKNOWN_OBJECT;
	input = params && bt_value_is_map(params)
		    ? bt_value_map_borrow_entry_value_const(params, "input")
		    : NULL;
	type = params && bt_value_is_map(params)
		   ? bt_value_map_borrow_entry_value_const(params, "type")
		   : NULL;
	if (!input || !type || !bt_value_is_string(input) || !bt_value_is_string(type)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT_CLASS(
		    self, "babeltrace.support-info: bad parameters: accepted=input (string), type "
			  "(string)");
		return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_ERROR;
	}
	/* A file that starts with the NetTrace magic is ours, whatever its name; directories
	 * and strings are not. */
	weight = strcmp(bt_value_string_get(type), "file") == 0 &&
			 rasp_nt_is_nettrace(bt_value_string_get(input))
		     ? 1.0
		     : 0.0;
	*result = bt_value_real_create_init(weight);
	return *result ? BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_OK
		       : BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_MEMORY_ERROR;
}

bt_component_class_source *rasp_nettrace_source_class_create(void)
{
	bt_message_iterator_class *ic = bt_message_iterator_class_create(rasp__nettrace_iter_next);
	bt_component_class_source *c = NULL;

	if (!ic ||
	    bt_message_iterator_class_set_initialize_method(ic, rasp__nettrace_iter_initialize) ||
	    bt_message_iterator_class_set_finalize_method(ic, rasp__nettrace_iter_finalize))
		goto out;
	c = bt_component_class_source_create("nettrace", ic);
	if (c &&
	    (bt_component_class_set_description(bt_component_class_source_as_component_class(c),
						RASP_NETTRACE_SOURCE_DESCRIPTION) ||
	     bt_component_class_set_help(bt_component_class_source_as_component_class(c),
					 RASP_NETTRACE_SOURCE_HELP) ||
	     bt_component_class_source_set_initialize_method(c, rasp__nettrace_source_initialize) ||
	     bt_component_class_source_set_finalize_method(c, rasp__nettrace_source_finalize) ||
	     bt_component_class_source_set_query_method(c, rasp__nettrace_source_query))) {
		bt_component_class_source_put_ref(c);
		c = NULL;
	}
out:
	bt_message_iterator_class_put_ref(ic);
	return c;
}
