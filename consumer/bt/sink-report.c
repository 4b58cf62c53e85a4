/* sink.rasp.report, the component glue: parameters from a bt_value map (checked against the
 * report's parameter table), one input port, messages walked into the tally (events through
 * bt-event.c and event.c, lost data, traces given twice), and the report rendered at END.
 * Nothing here estimates or formats: that is rows.c and the writers'. */
#include "sink-report.h"
#include "source-nettrace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt-event.h"
#include "bt-sink.h"
#include "report/params.h"
#include "write/output.h"
#include "write/writer.h"

/* Samples that identify a process's recording: its first ones, by what they say (thread,
 * type, kind, size, offset), not when: the same recording in two formats (an LTTng trace and
 * its rasp convert, or a program recorded through LTTng and EventPipe at once) has no common
 * UUID, but the same samples in the same order. Kept per trace and process (a conversion
 * may hold one process of several). */
#define SIGNATURE_SAMPLES 8

struct signature {
	const bt_trace *trace; /* borrowed, only compared */
	int64_t pid;
	uint64_t sig[SIGNATURE_SAMPLES];
	size_t n;
};

/* A trace seen in the input, by its UUID: the same recording read twice would count every
 * sample twice. */
struct seen_trace {
	const bt_trace *trace; /* borrowed: only compared, never dereferenced after END */
	uint8_t uuid[16];      /* BT_UUID: 16 bytes */
	bool has_uuid;
};

struct sink {
	bt_self_component *self;
	bt_message_iterator *it;
	struct rasp_report_options opt;
	struct rasp_tally *tally;
	bool own_tally; /* made here, so the report is written here at END */
	struct rasp_output out;
	bool out_open;
	struct rasp_bt_classes classes;
	struct seen_trace *traces;
	size_t ntraces, captraces;
	struct signature *sigs;
	size_t nsigs, capsigs;
	size_t last_sig; /* the last sample's entry: runs of one trace and process */
	char err[512];
};

static void sink_destroy(struct sink *s)
{
	if (!s)
		return;
	bt_message_iterator_put_ref(s->it);
	rasp_bt_classes_fini(&s->classes);
	if (s->own_tally)
		rasp_tally_destroy(s->tally);
	if (s->out_open)
		rasp_output_abort(&s->out); /* no report: the destination stays as it was */
	free(s->traces);
	free(s->sigs);
	rasp_report_options_fini(&s->opt);
	free(s);
}

/* ---- Parameters ----------------------------------------------------------------------------- */

static bt_value_map_foreach_entry_const_func_status param_entry(const char *key, const bt_value *v,
								void *data)
{
	struct sink *s = data;
	struct rasp_param_value pv = {.kind = RASP_VALUE_OTHER};
	const char **strings = NULL;
	int ret;

	switch (bt_value_get_type(v)) {
	case BT_VALUE_TYPE_STRING:
		pv = (struct rasp_param_value){.kind = RASP_VALUE_STRING,
					       .s = bt_value_string_get(v)};
		break;
	case BT_VALUE_TYPE_SIGNED_INTEGER:
		pv = (struct rasp_param_value){.kind = RASP_VALUE_SIGNED,
					       .i = bt_value_integer_signed_get(v)};
		break;
	case BT_VALUE_TYPE_UNSIGNED_INTEGER:
		pv = (struct rasp_param_value){.kind = RASP_VALUE_UNSIGNED,
					       .u = bt_value_integer_unsigned_get(v)};
		break;
	case BT_VALUE_TYPE_REAL:
		pv = (struct rasp_param_value){.kind = RASP_VALUE_REAL, .d = bt_value_real_get(v)};
		break;
	case BT_VALUE_TYPE_BOOL:
		pv = (struct rasp_param_value){.kind = RASP_VALUE_BOOL, .b = bt_value_bool_get(v)};
		break;
	case BT_VALUE_TYPE_ARRAY: {
		uint64_t n = bt_value_array_get_length(v);

		strings = calloc(n + 1, sizeof(*strings));
		if (!strings)
			return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_MEMORY_ERROR;
		pv = (struct rasp_param_value){
		    .kind = RASP_VALUE_STRINGS, .strings = strings, .nstrings = n};
		for (uint64_t i = 0; i < n; i++) {
			const bt_value *e = bt_value_array_borrow_element_by_index_const(v, i);

			if (!bt_value_is_string(e)) {
				pv.kind = RASP_VALUE_OTHER;
				break;
			}
			strings[i] = bt_value_string_get(e);
		}
		break;
	}
	default:
		break;
	}
	ret = rasp_param_set(rasp_report_params, &s->opt, key, &pv, s->err, sizeof(s->err));
	free(strings);
	if (ret == -ENOMEM)
		return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_MEMORY_ERROR;
	return ret ? BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_ERROR
		   : BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_OK;
}

static bool writer_takes_top(const struct rasp_writer *w)
{
	return w->top;
}

bt_component_class_initialize_method_status
rasp__report_sink_initialize(bt_self_component_sink *self_sink,
			     bt_self_component_sink_configuration *config, const bt_value *params,
			     void *init_data)
{
	bt_component_class_initialize_method_status status =
	    BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	bt_self_component *self = bt_self_component_sink_as_self_component(self_sink);
	const struct rasp_report_sink_init *init = init_data;
	struct sink *s = calloc(1, sizeof(*s));

	(void)config;
	if (!s) {
		status = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "Cannot allocate the sink state: size=%zu", sizeof(*s));
		goto error;
	}
	s->self = self;
	s->classes.last = SIZE_MAX;
	s->last_sig = SIZE_MAX;
	rasp_report_options_init(&s->opt);
	if (params && bt_value_is_map(params) &&
	    bt_value_map_foreach_entry_const(params, param_entry, s) !=
		BT_VALUE_MAP_FOREACH_ENTRY_CONST_STATUS_OK) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "%s", s->err[0] ? s->err : "bad parameters");
		goto error;
	}
	if (rasp_report_top_given(&s->opt) && !rasp_writer_find(s->opt.format)->top) {
		char names[64];

		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self,
		    "Bad parameters: top=%" PRIu64 " with format=%s: only format=%s shows the "
		    "largest rows alone; %s writes every row",
		    s->opt.top, s->opt.format,
		    rasp_writer_names(writer_takes_top, names, sizeof(names)), s->opt.format);
		goto error;
	}
	if (init && init->tally) {
		s->tally = init->tally;
	} else {
		s->tally = rasp_tally_create(rasp_report_keys(&s->opt), s->opt.sampling_mean);
		s->own_tally = true;
		if (s->tally)
			rasp_report_prepare(s->tally, &s->opt); /* at was checked */
		if (!s->tally) {
			status = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    self, "Cannot allocate the tally: group-by=%#x", s->opt.group_by);
			goto error;
		}
		/* Opened now, so a bad path fails before any trace is read; the file is
		 * replaced only when the report is complete. */
		if (rasp_output_open(&s->out, s->opt.output, s->err, sizeof(s->err))) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(self, "%s", s->err);
			goto error;
		}
		s->out_open = true;
	}
	if (bt_self_component_sink_add_input_port(self_sink, "in", NULL, NULL) !=
	    BT_SELF_COMPONENT_ADD_PORT_STATUS_OK) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "Cannot add the input port: port=in");
		goto error;
	}
	bt_self_component_set_data(self, s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;

error:
	sink_destroy(s);
	return status;
}

void rasp__report_sink_finalize(bt_self_component_sink *self_sink)
{
	sink_destroy(
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink)));
}

bt_component_class_sink_graph_is_configured_method_status
rasp__report_sink_graph_is_configured(bt_self_component_sink *self_sink)
{
	struct sink *s =
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink));

	return rasp_bt_sink_connect(self_sink, &s->it);
}

/* ---- Messages -----------------------------------------------------------------------------------
 */

static void stream_names(const bt_event *ev, const char **sname, const char **tname)
{
	const bt_stream *stream = bt_event_borrow_stream_const(ev);

	*sname = bt_stream_get_name(stream);
	*tname = bt_trace_get_name(bt_stream_borrow_trace_const(stream));
	*sname = *sname ? *sname : "";
	*tname = *tname ? *tname : "";
}

/* A malformed event: an error naming event, field and stream, or (strict=false) skipped. */
static bt_component_class_sink_consume_method_status
malformed(struct sink *s, const bt_event *ev, const char *field, const char *reason)
{
	const char *sname, *tname;

	if (!s->opt.strict) {
		rasp_tally_add_skipped(s->tally);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	stream_names(ev, &sname, &tname);
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self,
	    "Malformed event (use strict=false to count and skip such events): event=%s "
	    "field=%s reason=%s stream=\"%s\" stream-id=%" PRIu64 " trace=\"%s\"",
	    bt_event_class_get_name(bt_event_borrow_class_const(ev)), field, reason, sname,
	    bt_stream_get_id(bt_event_borrow_stream_const(ev)), tname);
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
}

static uint64_t sample_hash(const struct rasp_event *e)
{
	uint64_t h = rasp_hash_string(e->type ? e->type : "NULL");

	h = rasp_hash_mix64(h ^ (uint64_t)e->tid);
	h = rasp_hash_mix64(h ^ e->kind);
	h = rasp_hash_mix64(h ^ e->size);
	return rasp_hash_mix64(h ^ e->offset);
}

/* Another trace's process whose first samples (all of them, when fewer) are g's: one
 * recording twice. */
static bt_component_class_sink_consume_method_status
same_recording(struct sink *s, const struct signature *g, bool at_end)
{
	for (size_t i = 0; i < s->nsigs; i++) {
		const struct signature *o = &s->sigs[i];
		const char *a, *b;

		if (o->trace == g->trace || o->pid != g->pid || o->n != g->n || !g->n ||
		    (!at_end && g->n < SIGNATURE_SAMPLES) ||
		    memcmp(o->sig, g->sig, g->n * sizeof(g->sig[0])) != 0)
			continue;
		a = bt_trace_get_name(o->trace);
		b = bt_trace_get_name(g->trace);
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self,
		    "The same recording is in the input twice (process %" PRId64
		    " in \"%s\" and in \"%s\" begins with the same %zu samples: a trace and its "
		    "conversion, or one run recorded through LTTng and EventPipe at once), so "
		    "every "
		    "sample would count twice; give one",
		    g->pid, a ? a : "", b ? b : "", g->n);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

/* Notes a sample among the first few of its trace and process. */
static bt_component_class_sink_consume_method_status
note_signature(struct sink *s, const bt_event *ev, const struct rasp_event *e)
{
	const bt_trace *trace = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev));
	struct signature *g = NULL;

	if (s->last_sig < s->nsigs && s->sigs[s->last_sig].trace == trace &&
	    s->sigs[s->last_sig].pid == e->pid)
		g = &s->sigs[s->last_sig];
	for (size_t i = 0; !g && i < s->nsigs; i++)
		if (s->sigs[i].trace == trace && s->sigs[i].pid == e->pid) {
			s->last_sig = i;
			g = &s->sigs[i];
		}
	if (!g) {
		if (rasp_array_grow((void **)&s->sigs, &s->capsigs, s->nsigs, sizeof(*s->sigs)))
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
		s->last_sig = s->nsigs;
		g = &s->sigs[s->nsigs++];
		*g = (struct signature){.trace = trace, .pid = e->pid};
	}
	if (g->n == SIGNATURE_SAMPLES)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	g->sig[g->n++] = sample_hash(e);
	return same_recording(s, g, false);
}

static bt_component_class_sink_consume_method_status handle_event(struct sink *s,
								  const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	struct rasp_bt_class *c = rasp_bt_class_get(&s->classes, bt_event_borrow_class_const(ev));
	const char *field = NULL, *reason = NULL;
	struct rasp_event e;
	char why[160];
	int ret;

	if (!c) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Cannot grow the event-class table: classes=%zu", s->classes.n);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	}
	ret = rasp_bt_event_decode(c, msg, &e, &field, &reason);
	if (ret == -EINVAL)
		return malformed(s, ev, field, reason);
	if (!ret)
		ret = rasp_event_apply(s->tally, &e, &field, why, sizeof(why));
	if (ret == -EINVAL)
		return malformed(s, ev, field, why);
	if (ret) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Cannot record the event: event=%s errno=%d",
		    bt_event_class_get_name(bt_event_borrow_class_const(ev)), -ret);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	}
	if (e.role == RASP_ROLE_SAMPLED)
		return note_signature(s, ev, &e);
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

/* Whether the stream's class declares the lifetime events: a recording with them enabled
 * (LTTng's metadata lists every event enabled; a rasp program's EventPipe session writes
 * their metadata at its start), where no free means none happened. */
static void declares_frees(struct sink *s, const bt_stream *stream)
{
	const bt_stream_class *sc = bt_stream_borrow_class_const(stream);

	for (uint64_t i = 0; i < bt_stream_class_get_event_class_count(sc); i++) {
		enum rasp_role r = rasp_role_of(bt_event_class_get_name(
		    bt_stream_class_borrow_event_class_by_index_const(sc, i)));

		if (r == RASP_ROLE_FREED || r == RASP_ROLE_FREES || r == RASP_ROLE_HEAP_DESTROYED)
			rasp_live_declare(s->tally->live);
	}
}

/* A stream begins: is its trace one already read under another name? Traces carry a UUID
 * (LTTng: one per session and buffer owner), so two copies of one recording share it. */
static bt_component_class_sink_consume_method_status handle_stream(struct sink *s,
								   const bt_message *msg)
{
	const bt_trace *trace =
	    bt_stream_borrow_trace_const(bt_message_stream_beginning_borrow_stream_const(msg));
	bt_uuid uuid = bt_trace_get_uuid(trace);
	struct seen_trace *t;

	declares_frees(s, bt_message_stream_beginning_borrow_stream_const(msg));
	for (size_t i = 0; i < s->ntraces; i++) {
		if (s->traces[i].trace == trace)
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
		if (uuid && s->traces[i].has_uuid && memcmp(s->traces[i].uuid, uuid, 16) == 0) {
			const char *name = bt_trace_get_name(trace);

			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    s->self,
			    "The same trace is in the input twice, so every sample would count "
			    "twice: trace=\"%s\" uuid=%02x%02x%02x%02x-%02x%02x-...; give each "
			    "recording once",
			    name ? name : "", uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5]);
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
		}
	}
	if (rasp_array_grow((void **)&s->traces, &s->captraces, s->ntraces, sizeof(*s->traces)))
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	/* A format that fixes the mean (EventPipe files: .NET's) says so in its environment. */
	{
		const bt_value *mean =
		    bt_trace_borrow_environment_entry_value_by_name_const(trace, RASP_ENV_MEAN);
		const bt_value *pid =
		    bt_trace_borrow_environment_entry_value_by_name_const(trace, RASP_ENV_PID);

		if (mean && pid && bt_value_is_signed_integer(mean) &&
		    bt_value_is_signed_integer(pid) &&
		    rasp_tally_declare_mean(s->tally, bt_value_integer_signed_get(pid),
					    (double)bt_value_integer_signed_get(mean)) == -ENOMEM)
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	}
	t = &s->traces[s->ntraces++];
	t->trace = trace;
	t->has_uuid = uuid != NULL;
	if (uuid)
		memcpy(t->uuid, uuid, 16);
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

static bt_component_class_sink_consume_method_status handle(struct sink *s, const bt_message *msg)
{
	uint64_t count = 0;
	bt_property_availability avail;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		return handle_event(s, msg);
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return handle_stream(s, msg);
	case BT_MESSAGE_TYPE_STREAM_END:
		/* Again: a .nettrace's classes come with its metadata records as the source
		 * reads them, after the stream began (a rasp program's session declares the
		 * free events up front, whether or not any free follows). */
		declares_frees(s, bt_message_stream_end_borrow_stream_const(msg));
		break;
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		avail = bt_message_discarded_events_get_count(msg, &count);
		rasp_tally_add_discarded_events(s->tally, count,
						avail == BT_PROPERTY_AVAILABILITY_AVAILABLE);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		avail = bt_message_discarded_packets_get_count(msg, &count);
		rasp_tally_add_discarded_packets(s->tally, count,
						 avail == BT_PROPERTY_AVAILABILITY_AVAILABLE);
		break;
	default:
		break;
	}
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

/* END: the report goes out once (when the tally is the sink's own). */
static bt_component_class_sink_consume_method_status finish(struct sink *s)
{
	int ret = 0;

	BT_MESSAGE_ITERATOR_PUT_REF_AND_RESET(s->it);
	/* Processes of fewer samples than a signature: compared whole now. */
	for (size_t i = 0; i < s->nsigs; i++)
		if (s->sigs[i].n < SIGNATURE_SAMPLES &&
		    same_recording(s, &s->sigs[i], true) !=
			BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK)
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	if (!s->own_tally)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
	ret = rasp_report_render(s->tally, &s->opt, "sampling-mean=", s->out.f);
	if (!ret)
		ret = rasp_output_commit(&s->out);
	else
		rasp_output_abort(&s->out);
	s->out_open = false;
	if (!ret)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
	if (ret == -ENODATA) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Cannot report what is in use (inuse=true): %s",
		    rasp_live_unavailable_why(s->tally->live));
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self, "Cannot write the report: output=\"%s\" errno=%d (%s)",
	    s->opt.output ? s->opt.output : "(stdout)", -ret, strerror(-ret));
	return ret == -ENOMEM ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR
			      : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
}

static bt_component_class_sink_consume_method_status on_message(void *sink, const bt_message *msg)
{
	return handle(sink, msg);
}

static bt_component_class_sink_consume_method_status on_end(void *sink)
{
	return finish(sink);
}

bt_component_class_sink_consume_method_status
rasp__report_sink_consume(bt_self_component_sink *self_sink)
{
	struct sink *s =
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink));

	return rasp_bt_sink_next(s->self, s->it, on_message, on_end, s);
}

bt_component_class_sink *rasp_report_sink_class_create(void)
{
	return rasp_bt_sink_class("report", RASP_REPORT_SINK_DESCRIPTION, RASP_REPORT_SINK_HELP,
				  rasp__report_sink_initialize, rasp__report_sink_finalize,
				  rasp__report_sink_graph_is_configured, rasp__report_sink_consume);
}
