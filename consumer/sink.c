/* sink.rasp.report, the babeltrace2 glue: parameters from a bt_value map, one input port,
 * message walking (events, discarded events and packets), field lookup by name, and the
 * report written at END. All accounting and formatting is in report.c (no bt2 types).
 * Per event the cost is one pointer-hash lookup of the event class; field indexes and type
 * checks are resolved once per class, so a malformed class is found on its first event. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <babeltrace2/babeltrace.h>

#include "rasp/event-meta.h" /* event names, generated from the manifest */
#include "report.h"

#define EV_SAMPLED    RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG
#define EV_CONFIGURED RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG
#define NO_INDEX      UINT64_MAX

enum role {
	ROLE_OTHER,	 /* ignored */
	ROLE_SAMPLED,	 /* DotNETRuntime:AllocationSampled */
	ROLE_CONFIGURED, /* Rasp_Runtime:SamplingConfigured */
	ROLE_TICK,	 /* DotNETRuntime:GCAllocationTick_V2/V3/V4 */
};

/* Payload fields a role reads, by name; the slot order is the F_* order. */
enum { F_KIND, F_TYPE, F_SIZE, F_OFFSET, F_MEAN, F_AMOUNT, F_AMOUNT64, NFIELDS };

static const struct {
	const char *name;
	bool string; /* string, else integer */
	bool optional;
	unsigned roles; /* 1 << role */
} fields[NFIELDS] = {
    [F_KIND] = {"AllocationKind", false, false, 1u << ROLE_SAMPLED},
    [F_TYPE] = {"TypeName", true, false, 1u << ROLE_SAMPLED | 1u << ROLE_TICK},
    [F_SIZE] = {"ObjectSize", false, false, 1u << ROLE_SAMPLED},
    [F_OFFSET] = {"SampledByteOffset", false, false, 1u << ROLE_SAMPLED},
    [F_MEAN] = {"SamplingMean", false, false, 1u << ROLE_CONFIGURED},
    [F_AMOUNT] = {"AllocationAmount", false, false, 1u << ROLE_TICK},
    [F_AMOUNT64] = {"AllocationAmount64", false, true, 1u << ROLE_TICK},
};

/* What the sink learned about one event class (a reference is held, so the pointer
 * cannot be reused by another class while it is in the table). */
struct class_info {
	const bt_event_class *cls;
	enum role role;
	uint64_t index[NFIELDS]; /* payload member index, NO_INDEX when absent */
	uint64_t vpid, vtid;	 /* common-context member index, NO_INDEX when absent */
	int bad_field;		 /* F_* of the first bad field, -1 when the class is sound */
	const char *bad_reason;	 /* "missing" or "wrong-type" */
};

struct sink {
	bt_self_component *self;
	bt_message_iterator *it;
	struct rasp_report_options opt;
	struct rasp_report *report;
	FILE *out;		    /* stdout or the `output` file */
	struct class_info *classes; /* open addressing on the class pointer */
	size_t nclasses, capclasses;
	struct class_info *last; /* streams are runs of one class: checked before hashing */
	char err[512];
};

static void sink_destroy(struct sink *s)
{
	if (!s)
		return;
	bt_message_iterator_put_ref(s->it);
	for (size_t i = 0; i < s->capclasses; i++)
		bt_event_class_put_ref(s->classes[i].cls);
	free(s->classes);
	rasp_report_destroy(s->report);
	if (s->out && s->out != stdout)
		fclose(s->out);
	rasp_report_options_fini(&s->opt);
	free(s);
}

/* ---- Parameters ------------------------------------------------------------------------ */

/* group-by as an array: joined with commas, then parsed like the string form. */
static int group_by_array(struct sink *s, const bt_value *v)
{
	char buf[256] = "";
	size_t len = 0;

	for (uint64_t i = 0; i < bt_value_array_get_length(v); i++) {
		const bt_value *e = bt_value_array_borrow_element_by_index_const(v, i);
		const char *word;
		int n;

		if (!bt_value_is_string(e))
			return rasp_report_option_bad_kind("group-by", s->err, sizeof(s->err));
		word = bt_value_string_get(e);
		n = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "", word);
		if (n < 0 || (size_t)n >= sizeof(buf) - len)
			return rasp_report_option_set_string(&s->opt, "group-by", word, s->err,
							     sizeof(s->err));
		len += (size_t)n;
	}
	return rasp_report_option_set_string(&s->opt, "group-by", buf, s->err, sizeof(s->err));
}

static bt_value_map_foreach_entry_const_func_status param_entry(const char *key, const bt_value *v,
								void *data)
{
	struct sink *s = data;
	int ret;

	switch (bt_value_get_type(v)) {
	case BT_VALUE_TYPE_STRING:
		ret = rasp_report_option_set_string(&s->opt, key, bt_value_string_get(v), s->err,
						    sizeof(s->err));
		break;
	case BT_VALUE_TYPE_SIGNED_INTEGER:
		ret = rasp_report_option_set_number(&s->opt, key,
						    (double)bt_value_integer_signed_get(v), true,
						    s->err, sizeof(s->err));
		break;
	case BT_VALUE_TYPE_UNSIGNED_INTEGER:
		ret = rasp_report_option_set_number(&s->opt, key,
						    (double)bt_value_integer_unsigned_get(v), true,
						    s->err, sizeof(s->err));
		break;
	case BT_VALUE_TYPE_REAL:
		ret = rasp_report_option_set_number(&s->opt, key, bt_value_real_get(v), false,
						    s->err, sizeof(s->err));
		break;
	case BT_VALUE_TYPE_BOOL:
		ret = rasp_report_option_set_bool(&s->opt, key, bt_value_bool_get(v), s->err,
						  sizeof(s->err));
		break;
	case BT_VALUE_TYPE_ARRAY:
		if (strcmp(key, "group-by") == 0) {
			ret = group_by_array(s, v);
			break;
		}
		/* fall through */
	default:
		ret = rasp_report_option_bad_kind(key, s->err, sizeof(s->err));
		break;
	}
	if (ret == -ENOMEM)
		return BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_MEMORY_ERROR;
	return ret ? BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_ERROR
		   : BT_VALUE_MAP_FOREACH_ENTRY_CONST_FUNC_STATUS_OK;
}

bt_component_class_initialize_method_status
rasp__sink_initialize(bt_self_component_sink *self_sink,
		      bt_self_component_sink_configuration *config, const bt_value *params,
		      void *init_data)
{
	bt_component_class_initialize_method_status status =
	    BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	bt_self_component *self = bt_self_component_sink_as_self_component(self_sink);
	struct sink *s = calloc(1, sizeof(*s));

	(void)config;
	(void)init_data;
	if (!s) {
		status = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "Cannot allocate the sink state: size=%zu", sizeof(*s));
		goto error;
	}
	s->self = self;
	rasp_report_options_init(&s->opt);
	if (params && bt_value_is_map(params) &&
	    bt_value_map_foreach_entry_const(params, param_entry, s) !=
		BT_VALUE_MAP_FOREACH_ENTRY_CONST_STATUS_OK) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "%s", s->err[0] ? s->err : "bad parameters");
		goto error;
	}
	s->report = rasp_report_create(&s->opt);
	if (!s->report) {
		status = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "Cannot allocate the report: group-by=%#x", s->opt.group_by);
		goto error;
	}
	/* The output file is opened now, so a bad path fails before any trace is read. */
	s->out = stdout;
	if (s->opt.output) {
		s->out = fopen(s->opt.output, "w");
		if (!s->out) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    self, "Cannot open the output file: output=\"%s\" errno=%d (%s)",
			    s->opt.output, errno, strerror(errno));
			goto error;
		}
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

void rasp__sink_finalize(bt_self_component_sink *self_sink)
{
	sink_destroy(
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink)));
}

bt_component_class_sink_graph_is_configured_method_status
rasp__sink_graph_is_configured(bt_self_component_sink *self_sink)
{
	struct sink *s =
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink));
	bt_message_iterator_create_from_sink_component_status st;

	st = bt_message_iterator_create_from_sink_component(
	    self_sink, bt_self_component_sink_borrow_input_port_by_name(self_sink, "in"), &s->it);
	if (st != BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_OK)
		goto error;
	return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;

error:
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self, "Cannot create the upstream message iterator: port=in status=%d", (int)st);
	return st == BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_MEMORY_ERROR
		   ? BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_MEMORY_ERROR
		   : BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR;
}

/* ---- Event classes ----------------------------------------------------------------------- */

static uint64_t member_index(const bt_field_class *st, const char *name)
{
	if (!st || bt_field_class_get_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return NO_INDEX;
	for (uint64_t i = 0; i < bt_field_class_structure_get_member_count(st); i++) {
		const bt_field_class_structure_member *m =
		    bt_field_class_structure_borrow_member_by_index_const(st, i);

		if (strcmp(bt_field_class_structure_member_get_name(m), name) == 0)
			return i;
	}
	return NO_INDEX;
}

static const bt_field_class *member_class(const bt_field_class *st, uint64_t i)
{
	return bt_field_class_structure_member_borrow_field_class_const(
	    bt_field_class_structure_borrow_member_by_index_const(st, i));
}

static enum role role_of(const char *name)
{
	if (!name)
		return ROLE_OTHER;
	if (strcmp(name, EV_SAMPLED) == 0)
		return ROLE_SAMPLED;
	if (strcmp(name, EV_CONFIGURED) == 0)
		return ROLE_CONFIGURED;
	if (strcmp(name, "DotNETRuntime:GCAllocationTick_V2") == 0 ||
	    strcmp(name, "DotNETRuntime:GCAllocationTick_V3") == 0 ||
	    strcmp(name, "DotNETRuntime:GCAllocationTick_V4") == 0)
		return ROLE_TICK;
	return ROLE_OTHER;
}

/* Fills info for cls: which role, where each wanted field is, and whether its type fits.
 * Integer context ids only: a vpid of another type is treated as absent. */
static void class_learn(struct class_info *info, const bt_event_class *cls)
{
	const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(cls);
	const bt_field_class *ctx = bt_stream_class_borrow_event_common_context_field_class_const(
	    bt_event_class_borrow_stream_class_const(cls));

	info->cls = cls;
	info->role = role_of(bt_event_class_get_name(cls));
	info->bad_field = -1;
	info->vpid = member_index(ctx, "vpid");
	info->vtid = member_index(ctx, "vtid");
	if (info->vpid != NO_INDEX &&
	    !bt_field_class_type_is(bt_field_class_get_type(member_class(ctx, info->vpid)),
				    BT_FIELD_CLASS_TYPE_INTEGER))
		info->vpid = NO_INDEX;
	if (info->vtid != NO_INDEX &&
	    !bt_field_class_type_is(bt_field_class_get_type(member_class(ctx, info->vtid)),
				    BT_FIELD_CLASS_TYPE_INTEGER))
		info->vtid = NO_INDEX;
	for (int f = 0; f < NFIELDS; f++) {
		bt_field_class_type t;

		info->index[f] = NO_INDEX;
		if (!(fields[f].roles & (1u << info->role)))
			continue;
		info->index[f] = member_index(payload, fields[f].name);
		if (info->index[f] == NO_INDEX) {
			if (!fields[f].optional && info->bad_field < 0) {
				info->bad_field = f;
				info->bad_reason = "missing";
			}
			continue;
		}
		t = bt_field_class_get_type(member_class(payload, info->index[f]));
		if (fields[f].string ? t != BT_FIELD_CLASS_TYPE_STRING
				     : !bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER)) {
			if (info->bad_field < 0) {
				info->bad_field = f;
				info->bad_reason = fields[f].string
						       ? "wrong-type (expected a string)"
						       : "wrong-type (expected an integer)";
			}
			info->index[f] = NO_INDEX;
		}
	}
}

static size_t ptr_hash(const void *p)
{
	uint64_t z = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;

	return (size_t)(z >> 32);
}

/* The class_info of cls, learned on first sight. NULL only when memory runs out. */
static struct class_info *class_get(struct sink *s, const bt_event_class *cls)
{
	size_t j;

	if (s->last && s->last->cls == cls)
		return s->last;
	if ((s->nclasses + 1) * 2 > s->capclasses) {
		size_t cap = s->capclasses ? s->capclasses * 2 : 64;
		struct class_info *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < s->capclasses; i++) {
			if (!s->classes[i].cls)
				continue;
			for (j = ptr_hash(s->classes[i].cls) & (cap - 1); t[j].cls;
			     j = (j + 1) & (cap - 1))
				;
			t[j] = s->classes[i];
		}
		free(s->classes);
		s->classes = t;
		s->capclasses = cap;
	}
	for (j = ptr_hash(cls) & (s->capclasses - 1); s->classes[j].cls;
	     j = (j + 1) & (s->capclasses - 1)) {
		if (s->classes[j].cls == cls)
			return s->last = &s->classes[j];
	}
	class_learn(&s->classes[j], cls);
	bt_event_class_get_ref(cls);
	s->nclasses++;
	return s->last = &s->classes[j];
}

/* ---- Events ------------------------------------------------------------------------------ */

/* Integer value of a field whose class was checked; negative signed values fail. */
static int field_u64(const bt_field *f, uint64_t *out)
{
	if (bt_field_class_type_is(bt_field_get_class_type(f),
				   BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		*out = bt_field_integer_unsigned_get_value(f);
		return 0;
	}
	if (bt_field_integer_signed_get_value(f) < 0)
		return -1;
	*out = (uint64_t)bt_field_integer_signed_get_value(f);
	return 0;
}

static int64_t context_id(const bt_field *ctx, uint64_t index)
{
	const bt_field *f;

	if (!ctx || index == NO_INDEX)
		return RASP_REPORT_ID_UNKNOWN;
	f = bt_field_structure_borrow_member_field_by_index_const(ctx, index);
	if (bt_field_class_type_is(bt_field_get_class_type(f),
				   BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return (int64_t)bt_field_integer_unsigned_get_value(f);
	return bt_field_integer_signed_get_value(f);
}

/* A malformed event: an error naming event, field and stream, or (strict=false) skipped. */
static bt_component_class_sink_consume_method_status
malformed(struct sink *s, const bt_event *ev, const char *field, const char *reason)
{
	const bt_stream *stream = bt_event_borrow_stream_const(ev);
	const char *sname = bt_stream_get_name(stream);
	const char *tname = bt_trace_get_name(bt_stream_borrow_trace_const(stream));

	if (!s->opt.strict) {
		rasp_report_add_skipped(s->report);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self,
	    "Malformed event (use strict=false to count and skip such events): event=%s "
	    "field=%s reason=%s stream=\"%s\" stream-id=%" PRIu64 " trace=\"%s\"",
	    bt_event_class_get_name(bt_event_borrow_class_const(ev)), field, reason,
	    sname ? sname : "", bt_stream_get_id(stream), tname ? tname : "");
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
}

static bt_component_class_sink_consume_method_status handle_event(struct sink *s,
								  const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	struct class_info *c = class_get(s, bt_event_borrow_class_const(ev));
	const bt_field *payload, *ctx, *f[NFIELDS] = {NULL};
	uint64_t v[NFIELDS] = {0};
	int64_t process;
	int ret;

	if (!c) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Cannot grow the event-class table: classes=%zu", s->nclasses);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	}
	if (c->role == ROLE_OTHER)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	if (c->bad_field >= 0)
		return malformed(s, ev, fields[c->bad_field].name, c->bad_reason);

	payload = bt_event_borrow_payload_field_const(ev);
	for (int i = 0; i < NFIELDS; i++) {
		if (c->index[i] == NO_INDEX)
			continue;
		f[i] = bt_field_structure_borrow_member_field_by_index_const(payload, c->index[i]);
		if (!fields[i].string && field_u64(f[i], &v[i]))
			return malformed(s, ev, fields[i].name, "negative");
	}
	ctx = bt_event_borrow_common_context_field_const(ev);
	process = context_id(ctx, c->vpid);

	switch (c->role) {
	case ROLE_SAMPLED:
		ret = rasp_report_add_sample(s->report, bt_field_string_get_value(f[F_TYPE]),
					     v[F_KIND], process, context_id(ctx, c->vtid),
					     v[F_SIZE], v[F_OFFSET]);
		if (ret == -EINVAL) {
			char why[96];

			/* The values, so the bad event can be found in the trace. */
			snprintf(why, sizeof(why),
				 "%s (SampledByteOffset=%" PRIu64 " ObjectSize=%" PRIu64 ")",
				 v[F_SIZE] ? "not-below-ObjectSize" : "zero", v[F_OFFSET],
				 v[F_SIZE]);
			return malformed(
			    s, ev, v[F_SIZE] ? fields[F_OFFSET].name : fields[F_SIZE].name, why);
		}
		break;
	case ROLE_CONFIGURED:
		ret = rasp_report_set_mean(s->report, process, (double)v[F_MEAN]);
		if (ret == -EINVAL)
			return malformed(s, ev, fields[F_MEAN].name, "zero (SamplingMean=0)");
		break;
	case ROLE_TICK:
		/* V2 and later carry the 64-bit amount; the 32-bit one can wrap past 4 GiB. */
		ret = rasp_report_add_tick(s->report, bt_field_string_get_value(f[F_TYPE]),
					   f[F_AMOUNT64] ? v[F_AMOUNT64] : v[F_AMOUNT]);
		break;
	default:
		ret = 0;
		break;
	}
	if (ret) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Cannot record the event: event=%s errno=%d",
		    bt_event_class_get_name(bt_event_borrow_class_const(ev)), -ret);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	}
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

static bt_component_class_sink_consume_method_status handle(struct sink *s, const bt_message *msg)
{
	uint64_t count = 0;
	bt_property_availability avail;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		return handle_event(s, msg);
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		avail = bt_message_discarded_events_get_count(msg, &count);
		rasp_report_add_discarded_events(s->report, count,
						 avail == BT_PROPERTY_AVAILABILITY_AVAILABLE);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		avail = bt_message_discarded_packets_get_count(msg, &count);
		rasp_report_add_discarded_packets(s->report, count,
						  avail == BT_PROPERTY_AVAILABILITY_AVAILABLE);
		break;
	default:
		break;
	}
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

/* END: the report goes out once, then the output file is closed (its errors count). */
static bt_component_class_sink_consume_method_status finish(struct sink *s)
{
	int ret = rasp_report_write(s->report, s->out);

	if (s->out != stdout) {
		if (fclose(s->out) && !ret)
			ret = -EIO;
		s->out = NULL;
	}
	BT_MESSAGE_ITERATOR_PUT_REF_AND_RESET(s->it);
	if (ret)
		goto error;
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;

error:
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self, "Cannot write the report: output=\"%s\" errno=%d (%s)",
	    s->opt.output ? s->opt.output : "(stdout)", -ret, strerror(-ret));
	return ret == -ENOMEM ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR
			      : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
}

bt_component_class_sink_consume_method_status rasp__sink_consume(bt_self_component_sink *self_sink)
{
	struct sink *s =
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink));
	bt_component_class_sink_consume_method_status status =
	    BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	bt_message_array_const msgs;
	uint64_t n = 0;

	switch (bt_message_iterator_next(s->it, &msgs, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return finish(s);
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
			status = handle(s, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return status;

error:
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self, "Cannot get messages from upstream: port=in status=%d", (int)status);
	return status;
}
