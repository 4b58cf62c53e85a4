/* sink.rasp.nettrace (sink-nettrace.h): babeltrace2 events in, a NetTrace V4 file out. Each
 * event class is matched once to a descriptor by its name (rasp-event-desc.h: the LTTng name,
 * "DotNETRuntime:AllocationSampled"...), its payload members found by the descriptor's field
 * names, and every event of it encoded through the descriptor into the stream writer. The
 * input comes time-ordered (from filter.utils.muxer, as babeltrace2 graphs are built), but a
 * Rasp_Runtime:SampledObjectsFreed (LTTng only) carries frees older than itself: each becomes
 * one SampledObjectFreed at its own time, so events are held for RASP_NT_HOLD_NS in a heap by
 * time and written in time order, every one marked sorted. A free older than what was already
 * written (an idle thread's, kept longer than that) is written at the last time written and
 * counted (stats: frees_late). The file is written beside its destination and renamed over it
 * only once complete. */
#include "sink-nettrace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bt-sink.h"
#include "sink-nettrace-classes.h"
#include "sink-nettrace-objects.h"
#include "nettrace-stream.h"
#include "rasp-event-desc.h"
#include "rasp/event-meta.h"
#include "rasp/rasp.h"
#include "write/output.h"

/* How long events wait for older frees: the runtime sends a thread's frees at 100 ms at most
 * while it frees; a batch older than this comes from a thread that stopped freeing. Memory:
 * the events of this span (RASP_NT_HOLD_MAX at most: past it the oldest go). */
#define RASP_NT_HOLD_NS	 1000000000LL
#define RASP_NT_HOLD_MAX (1u << 20)
/* A held item that is a loss (upstream discarded events), not an event. */
#define HELD_LOSS UINT32_MAX

/* An event read, not yet written: its frames, then its payload. */
struct held {
	int64_t ts;
	uint64_t order; /* input order: events of one time keep it */
	uint64_t tid;
	uint32_t desc, nframes; /* desc HELD_LOSS: lost, the count in `lost` */
	size_t len;
	uint64_t lost;
	uint64_t data[];
};

struct pending_stack {
	uint64_t tid;
	bool used;
	uint32_t n;
	uint64_t frames[RASP_MAX_STACK_DEPTH]; /* as many as the runtime captures */
};

struct sink {
	bt_self_component *self;
	bt_message_iterator *it;
	char *path;
	int64_t want_pid; /* -1: the input's only process */
	struct rasp_output out;
	bool out_open, started;
	struct rasp_nt_out nt;
	struct rasp_nt_stream stream;
	struct rasp_nt_classes classes;
	uint64_t pending_lost; /* lost upstream, not yet written as a gap */
	uint64_t last_tid;     /* the thread of the last event written */
	int64_t disorder_ns;   /* an event older than one written (the error's) */
	int64_t input_ns;      /* the last event read's time (INT64_MIN: none yet) */
	/* Each thread's ClrStackWalk not yet attached to its next event (open addressing). */
	struct pending_stack *stacks;
	size_t nstacks, capstacks;
	struct rasp_nettrace_sink_stats own, *stats;
	struct rasp_nt_obj object; /* read, written before the next event (its build id) */
	/* Events held for older frees: a binary min-heap by (ts, order). */
	struct held **held;
	size_t nheld, capheld;
	uint64_t order;
	bool declared_frees;
	uint8_t payload[RASP_NT_BLOCK_SIZE - 128];
	char strings[RASP_NT_BLOCK_SIZE];
};

static void sink_destroy(struct sink *s)
{
	if (!s)
		return;
	bt_message_iterator_put_ref(s->it);
	if (s->out_open)
		rasp_output_abort(&s->out);
	rasp_nt_stream_fini(&s->stream);
	for (size_t i = 0; i < s->nheld; i++)
		free(s->held[i]);
	free(s->held);
	free(s->stacks);
	rasp__nt_classes_fini(&s->classes);
	free(s->path);
	free(s);
}

static int out_write(void *ctx, const void *buf, size_t len)
{
	FILE *f = ctx;

	return fwrite(buf, 1, len, f) == len ? 0 : -(errno ? errno : EIO);
}

/* ---- Parameters and set-up ----------------------------------------------------------------- */

bt_component_class_initialize_method_status
rasp__nettrace_sink_initialize(bt_self_component_sink *self_sink,
			       bt_self_component_sink_configuration *config, const bt_value *params,
			       void *init_data)
{
	bt_self_component *self = bt_self_component_sink_as_self_component(self_sink);
	struct sink *s = calloc(1, sizeof(*s));
	const bt_value *path = NULL, *pid = NULL;
	char err[512];

	(void)config;
	if (!s) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "Cannot allocate the sink state: size=%zu", sizeof(struct sink));
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	s->self = self;
	s->want_pid = -1;
	s->stats = init_data ? init_data : &s->own;
	*s->stats = (struct rasp_nettrace_sink_stats){.pid = -1};
	if (params && bt_value_is_map(params)) {
		path = bt_value_map_borrow_entry_value_const(params, "path");
		pid = bt_value_map_borrow_entry_value_const(params, "pid");
		if (bt_value_map_get_size(params) > (uint64_t)(path != NULL) + (pid != NULL)) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    self, "bad parameter: unknown name; accepted=path, pid");
			goto error;
		}
	}
	if (!path || !bt_value_is_string(path) || !*bt_value_string_get(path)) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self, "bad parameter: name=path accepted=the .nettrace file to write");
		goto error;
	}
	if (pid) {
		int64_t v = bt_value_is_signed_integer(pid) ? bt_value_integer_signed_get(pid)
			    : bt_value_is_unsigned_integer(pid) &&
				    bt_value_integer_unsigned_get(pid) <= INT32_MAX
				? (int64_t)bt_value_integer_unsigned_get(pid)
				: -1;

		if (v < 0 || v > INT32_MAX) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    self, "bad parameter: name=pid accepted=a process id, 0 to 2147483647");
			goto error;
		}
		s->want_pid = v;
	}
	s->path = strdup(bt_value_string_get(path));
	if (!s->path)
		goto error;
	/* Opened now, so a bad path fails before any trace is read. */
	if (rasp_output_open(&s->out, s->path, err, sizeof(err))) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(self, "%s", err);
		goto error;
	}
	s->out_open = true;
	s->nt = (struct rasp_nt_out){.write = out_write, .ctx = s->out.f};
	if (rasp_nt_stream_init(&s->stream, &s->nt, RASP_NT_BLOCK_SIZE) != 0 ||
	    bt_self_component_sink_add_input_port(self_sink, "in", NULL, NULL) !=
		BT_SELF_COMPONENT_ADD_PORT_STATUS_OK) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(self, "Cannot set the sink up");
		goto error;
	}
	s->classes.last = SIZE_MAX;
	s->input_ns = INT64_MIN;
	bt_self_component_set_data(self, s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
error:
	sink_destroy(s);
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
}

void rasp__nettrace_sink_finalize(bt_self_component_sink *self_sink)
{
	sink_destroy(
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink)));
}

bt_component_class_sink_graph_is_configured_method_status
rasp__nettrace_sink_graph_is_configured(bt_self_component_sink *self_sink)
{
	struct sink *s =
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink));

	return rasp_bt_sink_connect(self_sink, &s->it);
}

/* ---- Events -------------------------------------------------------------------------------- */

static int64_t context_int(const bt_event *ev, uint64_t member)
{
	const bt_field *ctx = bt_event_borrow_common_context_field_const(ev);
	const bt_field *f;

	if (!ctx || member == UINT64_MAX)
		return -1;
	f = bt_field_structure_borrow_member_field_by_index_const(ctx, member);
	if (bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return bt_field_integer_signed_get_value(f);
	return (int64_t)bt_field_integer_unsigned_get_value(f);
}

static int start(struct sink *s, int64_t pid, int64_t ns, bool unix_epoch)
{
	struct rasp_nt_trace_header h = {.sync_ticks = ns,
					 .frequency = 1000000000,
					 .pointer_size = 8,
					 .pid = (uint32_t)pid,
					 .processors = 1};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	/* A clock counting from the Unix epoch (LTTng's) gives the wall-clock time of the
	 * first event; any other origin is written as if it were one (the relative times hold). */
	(void)unix_epoch;
	h.sync_utc_ns = ns > 0 ? ns : 0;
	h.processors = cpus > 0 ? (uint32_t)cpus : 1;
	s->started = true;
	s->stats->pid = pid;
	return rasp_nt_write_header(&s->nt, &h);
}

/* Lost events become a gap in the last thread's numbers, shown at once by a sequence point
 * (readers count a thread's gap at the next sequence point); before any event, they wait. */
static int write_losses(struct sink *s)
{
	uint32_t seq;
	int rc;

	if (!s->pending_lost || !s->stats->written)
		return 0;
	seq = rasp_nt_stream_seq(&s->stream, s->last_tid);
	rc = rasp_nt_stream_note(
	    &s->stream, s->last_tid,
	    seq + (uint32_t)(s->pending_lost > UINT32_MAX / 2 ? UINT32_MAX / 2 : s->pending_lost));
	if (!rc)
		rc = rasp_nt_stream_sequence_point(&s->stream, s->stream.last_ts);
	s->pending_lost = 0;
	return rc;
}

/* ---- Held events ------------------------------------------------------------------------------
 */

static bool held_before(const struct held *a, const struct held *b)
{
	return a->ts != b->ts ? a->ts < b->ts : a->order < b->order;
}

/* Holds an event (desc, tid, ts, payload, frames); HELD_LOSS: a loss of `lost` events. */
static int hold(struct sink *s, uint32_t desc, uint64_t tid, int64_t ts, const void *payload,
		size_t len, const uint64_t *frames, uint32_t nframes, uint64_t lost)
{
	struct held *h = malloc(sizeof(*h) + nframes * sizeof(uint64_t) + len);
	size_t i;

	if (!h)
		return -ENOMEM;
	if (s->nheld == s->capheld) {
		size_t cap = s->capheld ? 2 * s->capheld : 1024;
		struct held **v = realloc(s->held, cap * sizeof(*v));

		if (!v) {
			free(h);
			return -ENOMEM;
		}
		s->held = v;
		s->capheld = cap;
	}
	*h = (struct held){.ts = ts,
			   .order = s->order++,
			   .tid = tid,
			   .desc = desc,
			   .nframes = nframes,
			   .len = len,
			   .lost = lost};
	if (nframes)
		memcpy(h->data, frames, nframes * sizeof(uint64_t));
	if (len)
		memcpy((uint8_t *)(h->data + nframes), payload, len);
	for (i = s->nheld++; i && held_before(h, s->held[(i - 1) / 2]); i = (i - 1) / 2)
		s->held[i] = s->held[(i - 1) / 2];
	s->held[i] = h;
	return 0;
}

static struct held *unhold(struct sink *s)
{
	struct held *top = s->held[0], *last = s->held[--s->nheld];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheld)
			break;
		if (c + 1 < s->nheld && held_before(s->held[c + 1], s->held[c]))
			c++;
		if (!held_before(s->held[c], last))
			break;
		s->held[i] = s->held[c];
		i = c;
	}
	if (s->nheld)
		s->held[i] = last;
	return top;
}

/* Writes the held events older than `before` (INT64_MAX: all), and the oldest past
 * RASP_NT_HOLD_MAX, in time order. 0 or the stream's error (-EINVAL: out of order). */
static int release(struct sink *s, int64_t before)
{
	while (s->nheld &&
	       (s->held[0]->ts < before || s->nheld > RASP_NT_HOLD_MAX || before == INT64_MAX)) {
		struct held *h = unhold(s);
		int rc;

		if (h->desc == HELD_LOSS) {
			s->pending_lost += h->lost;
			rc = write_losses(s);
		} else {
			rc = rasp_nt_stream_event(&s->stream, h->desc, h->tid,
						  rasp_nt_stream_seq(&s->stream, h->tid) + 1, h->ts,
						  (const uint8_t *)(h->data + h->nframes), h->len,
						  h->data, h->nframes);
			if (!rc) {
				s->stats->written++;
				s->stats->objects += h->desc == RASP_DESC_RASP_RUNTIME_OBJECTLOADED;
				s->last_tid = h->tid;
				rc = write_losses(s);
			}
		}
		if (rc == -EINVAL)
			s->disorder_ns = h->ts;
		free(h);
		if (rc)
			return rc;
	}
	return 0;
}

static bt_component_class_sink_consume_method_status fail(struct sink *s, int rc, const char *what)
{
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
	    s->self, "Cannot write %s: output=\"%s\" errno=%d (%s)", what, s->path, -rc,
	    strerror(-rc));
	return rc == -ENOMEM ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR
			     : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
}

/* The pending stack of tid (made when new); NULL without memory. */
static struct pending_stack *stack_of(struct sink *s, uint64_t tid)
{
	size_t mask, i;

	if (2 * (s->nstacks + 1) > s->capstacks) {
		size_t cap = s->capstacks ? 2 * s->capstacks : 16;
		struct pending_stack *v = calloc(cap, sizeof(*v)), *old = s->stacks;

		if (!v)
			return NULL;
		for (size_t k = 0; k < s->capstacks; k++)
			if (old[k].used) {
				for (i = old[k].tid & (cap - 1); v[i].used; i = (i + 1) & (cap - 1))
					;
				v[i] = old[k];
			}
		free(old);
		s->stacks = v;
		s->capstacks = cap;
	}
	mask = s->capstacks - 1;
	for (i = tid & mask; s->stacks[i].used && s->stacks[i].tid != tid; i = (i + 1) & mask)
		;
	if (!s->stacks[i].used) {
		s->stacks[i] = (struct pending_stack){.tid = tid, .used = true};
		s->nstacks++;
	}
	return &s->stacks[i];
}

/* The object read last, as an ObjectLoaded at its own time (held like any event). */
static int write_object(struct sink *s)
{
	size_t len;

	if (!s->object.used)
		return 0;
	s->object.used = false;
	len = rasp__nt_obj_encode(&s->object, s->payload, sizeof(s->payload));
	if (!len)
		return 0;
	return hold(s, RASP_DESC_RASP_RUNTIME_OBJECTLOADED, (uint64_t)s->object.tid, s->object.ns,
		    s->payload, len, NULL, 0, 0);
}

/* release() up to ns - RASP_NT_HOLD_NS (INT64_MAX: everything), its error said. */
static bt_component_class_sink_consume_method_status release_to(struct sink *s, int64_t ns)
{
	int rc = release(s, ns == INT64_MAX		       ? INT64_MAX
			    : ns < INT64_MIN + RASP_NT_HOLD_NS ? INT64_MIN
							       : ns - RASP_NT_HOLD_NS);

	if (rc == -EINVAL) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self,
		    "An event at %" PRId64 " ns is older than one written (%" PRId64
		    " ns): the input is not in time order (put filter.utils.muxer before the sink)",
		    s->disorder_ns, s->stream.last_ts);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	return rc ? fail(s, rc, "an event") : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

/* Whether the input's stream class declares free events (LTTng's metadata lists those
 * enabled): the file then declares SampledObjectFreed, so that a reader knows frees were
 * recorded even when none happened. */
static int declare_frees(struct sink *s, const bt_event_class *ec, int64_t ns)
{
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);

	if (s->declared_frees)
		return 0;
	for (uint64_t i = 0; i < bt_stream_class_get_event_class_count(sc); i++) {
		const char *name = bt_event_class_get_name(
		    bt_stream_class_borrow_event_class_by_index_const(sc, i));

		if (name && (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG) == 0 ||
			     strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_LTTNG) == 0)) {
			s->declared_frees = true;
			return rasp_nt_stream_declare(
			    &s->stream, RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED, 0, ns);
		}
	}
	return 0;
}

/* A SampledObjectsFreed: one SampledObjectFreed per free, at the event's time minus its Age,
 * on the event's thread (the one that freed). Its Frees and arrays were checked by the class's
 * types; their lengths are checked here, as rasp report does. A free older than what was
 * written is written at the last time written, and counted. */
static bt_component_class_sink_consume_method_status split_frees(struct sink *s,
								 const struct rasp_nt_class *c,
								 const bt_field *payload,
								 uint64_t tid, int64_t ns)
{
	const bt_field *f[5];
	uint64_t n;
	int rc;

	for (int i = 0; i < 5; i++)
		f[i] = bt_field_structure_borrow_member_field_by_index_const(payload, c->member[i]);
	n = bt_field_integer_unsigned_get_value(f[1]);
	if (n == 0 || n > 64 || bt_field_array_get_length(f[2]) != n ||
	    bt_field_array_get_length(f[3]) != n || bt_field_array_get_length(f[4]) != n) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self,
		    "Event %s is malformed: Frees=%" PRIu64 " (1 to 64) with arrays of %" PRIu64
		    ", %" PRIu64 " and %" PRIu64 " elements",
		    RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG, n,
		    bt_field_array_get_length(f[2]), bt_field_array_get_length(f[3]),
		    bt_field_array_get_length(f[4]));
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < n; i++) {
		union rasp_nt_value vals[3];
		uint64_t age = bt_field_integer_unsigned_get_value(
		    bt_field_array_borrow_element_field_by_index_const(f[4], i));
		int64_t at;
		size_t len;

		vals[0].u = bt_field_integer_unsigned_get_value(f[0]);
		vals[1].u = bt_field_integer_unsigned_get_value(
		    bt_field_array_borrow_element_field_by_index_const(f[2], i));
		vals[2].u = bt_field_integer_unsigned_get_value(
		    bt_field_array_borrow_element_field_by_index_const(f[3], i));
		if (age > (uint64_t)INT64_MAX || (age && (int64_t)age > ns)) {
			BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
			    s->self,
			    "Event %s is malformed: Ages[%" PRIu64 "]=%" PRIu64
			    " puts the free before the clock's origin (event at %" PRId64 " ns)",
			    RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG, i, age, ns);
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
		}
		at = ns - (int64_t)age;
		if (s->stream.last_ts > at) {
			s->stats->frees_late++;
			if (s->stream.last_ts - at > s->stats->frees_late_max_ns)
				s->stats->frees_late_max_ns = s->stream.last_ts - at;
			at = s->stream.last_ts;
		}
		len = rasp_nt_encode_payload(
		    &rasp_event_descs[RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED], vals, 8,
		    s->payload, sizeof(s->payload));
		rc = hold(s, RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED, tid, at, s->payload, len,
			  NULL, 0, 0);
		if (rc)
			return fail(s, rc, "a free");
		s->stats->frees++;
	}
	return release_to(s, ns);
}

/* A ClrStackWalk: the frames of its thread's next event (FrameCount, Stack). */
static bt_component_class_sink_consume_method_status
keep_stack(struct sink *s, const struct rasp_nt_class *c, const bt_field *payload, uint64_t tid)
{
	const bt_field *stack =
	    bt_field_structure_borrow_member_field_by_index_const(payload, c->member[4]);
	struct pending_stack *p = stack_of(s, tid);
	uint64_t n = bt_field_array_get_length(stack);

	if (!p)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	p->n = (uint32_t)(n < RASP_MAX_STACK_DEPTH ? n : RASP_MAX_STACK_DEPTH);
	for (uint32_t i = 0; i < p->n; i++)
		p->frames[i] = bt_field_integer_unsigned_get_value(
		    bt_field_array_borrow_element_field_by_index_const(stack, i));
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

static bt_component_class_sink_consume_method_status handle_event(struct sink *s,
								  const bt_message *msg)
{
	struct pending_stack *ps;
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	struct rasp_nt_class *c =
	    rasp__nt_class_of(&s->classes, s->self, bt_event_borrow_class_const(ev));
	const struct rasp_event_desc *d;
	const char *what;
	const bt_clock_snapshot *cs;
	const bt_field *payload;
	union rasp_nt_value vals[RASP_NT_MAX_FIELDS];
	int64_t pid, tid, ns;
	size_t used = 0, len;
	int rc;

	if (!c)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	if (c->desc < 0 && c->obj.kind == RASP_NT_OBJ_NONE) {
		s->stats->other++;
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	d = c->desc >= 0 ? &rasp_event_descs[c->desc] : NULL;
	what = d ? d->lttng : bt_event_class_get_name(c->ec);
	pid = context_int(ev, c->vpid);
	tid = context_int(ev, c->vtid);
	if (pid < 0 || tid < 0) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self,
		    "Event %s has no vpid/vtid context: record with `lttng add-context -u -t vpid "
		    "-t vtid` (rasp record does)",
		    what);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	if (s->want_pid >= 0 && pid != s->want_pid) {
		s->stats->other_pid++;
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	if (!bt_stream_class_borrow_default_clock_class_const(
		bt_event_class_borrow_stream_class_const(c->ec))) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Event %s has no timestamp: a .nettrace event needs one", what);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
	if (bt_clock_snapshot_get_ns_from_origin(cs, &ns) !=
	    BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Event %s: its timestamp overflows 64-bit nanoseconds", what);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	if (!s->started) {
		rc = start(s, pid, ns,
			   bt_clock_class_origin_is_unix_epoch(
			       bt_clock_snapshot_borrow_clock_class_const(cs)));
		if (rc)
			return fail(s, rc, "the file header");
	} else if (pid != s->stats->pid) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self,
		    "The input holds events of several processes (%" PRId64 " and %" PRId64
		    "); a .nettrace file holds one: choose it with the pid parameter (rasp "
		    "convert --pid)",
		    s->stats->pid, pid);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	s->input_ns = ns;
	rc = declare_frees(s, c->ec, ns);
	if (rc)
		return fail(s, rc, "the free events' metadata");
	payload = bt_event_borrow_payload_field_const(ev);
	if (c->obj.kind == RASP_NT_OBJ_BUILD_ID) {
		if (!rasp__nt_obj_build_id(&c->obj, payload, &s->object))
			s->stats->other++; /* of no object written */
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	rc = write_object(s);
	if (rc)
		return fail(s, rc, "an object");
	if (c->obj.kind == RASP_NT_OBJ_LOADED) {
		rasp__nt_obj_read(&c->obj, payload, &s->object);
		s->object.pid = pid;
		s->object.tid = tid;
		s->object.ns = ns;
		if (!s->object.used)
			s->stats->other++;
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	if (c->desc == RASP_DESC_DOTNETRUNTIME_CLRSTACKWALK)
		return keep_stack(s, c, payload, (uint64_t)tid);
	if (c->desc == RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTSFREED)
		return split_frees(s, c, payload, (uint64_t)tid, ns);
	for (size_t f = 0; f < d->nfields; f++) {
		const bt_field *fld =
		    bt_field_structure_borrow_member_field_by_index_const(payload, c->member[f]);
		bt_field_class_type k = bt_field_get_class_type(fld);

		if (k == BT_FIELD_CLASS_TYPE_STRING) {
			const char *str = bt_field_string_get_value(fld);
			size_t n = strlen(str) + 1;

			if (n > sizeof(s->strings) - used) {
				BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
				    s->self, "Event %s: field %s is too long (%zu bytes)", d->lttng,
				    d->fields[f].name, n - 1);
				return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
			}
			memcpy(s->strings + used, str, n);
			vals[f].s = s->strings + used;
			used += n;
		} else if (bt_field_class_type_is(k, BT_FIELD_CLASS_TYPE_ARRAY)) {
			rc = rasp__nt_sink_array(s->self, d, f, fld, vals, s->strings,
						 sizeof(s->strings), &used);
			if (rc)
				return rc == -ENOMEM
					   ? fail(s, rc, "an event")
					   : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
		} else if (bt_field_class_type_is(k, BT_FIELD_CLASS_TYPE_REAL)) {
			vals[f].f = bt_field_real_double_precision_get_value(fld);
		} else if (bt_field_class_type_is(k, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
			vals[f].i = bt_field_integer_signed_get_value(fld);
		} else {
			vals[f].u = bt_field_integer_unsigned_get_value(fld);
		}
	}
	len = rasp_nt_encode_payload(d, vals, 8, s->payload, sizeof(s->payload));
	if (!len && d->nfields) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self, "Event %s is too large for an EventPipe event (limit %zu bytes)",
		    d->lttng, sizeof(s->payload));
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	if (ns < s->stream.last_ts) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    s->self,
		    "Event %s at %" PRId64 " ns is older than the one before (%" PRId64
		    " ns): the input is not in time order (put filter.utils.muxer before the sink)",
		    d->lttng, ns, s->stream.last_ts);
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	}
	ps = stack_of(s, (uint64_t)tid);
	if (!ps)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
	rc = hold(s, (uint32_t)c->desc, (uint64_t)tid, ns, s->payload, len, ps->frames, ps->n, 0);
	ps->n = 0;
	if (rc)
		return fail(s, rc, "an event");
	return release_to(s, ns);
}

static uint64_t add_lost(struct sink *s, uint64_t n, bool known)
{
	if (!known || n == 0) {
		/* Unknown: at least one. */
		n = 1;
		s->stats->lost_unknown = true;
	}
	s->stats->lost += n;
	return n;
}

static bt_component_class_sink_consume_method_status handle(struct sink *s, const bt_message *msg)
{
	uint64_t count = 0;
	bt_property_availability avail;
	int rc;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		return handle_event(s, msg);
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		avail = bt_message_discarded_events_get_count(msg, &count);
		count = add_lost(s, count, avail == BT_PROPERTY_AVAILABILITY_AVAILABLE);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		bt_message_discarded_packets_get_count(msg, &count);
		/* A lost packet held an unknown number of events: one each, a floor. */
		count = add_lost(s, count, false);
		break;
	default:
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	/* After the events read before it, written with them. */
	if (s->input_ns == INT64_MIN) {
		s->pending_lost += count;
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
	}
	rc = hold(s, HELD_LOSS, 0, s->input_ns, NULL, 0, NULL, 0, count);
	return rc ? fail(s, rc, "a loss") : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

static bt_component_class_sink_consume_method_status finish(struct sink *s)
{
	int rc = 0;

	BT_MESSAGE_ITERATOR_PUT_REF_AND_RESET(s->it);
	if (!s->started) {
		struct timespec now;

		/* No event: a valid, empty trace of no process. */
		clock_gettime(CLOCK_REALTIME, &now);
		rc = start(s, 0, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, true);
		s->stats->pid = -1;
	}
	if (!rc)
		rc = write_object(s);
	if (!rc) {
		bt_component_class_sink_consume_method_status st = release_to(s, INT64_MAX);

		if (st != BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK) {
			rasp_output_abort(&s->out);
			s->out_open = false;
			return st;
		}
	}
	if (!rc && s->pending_lost) {
		/* Losses before any event: a thread of its own carries them. */
		rc = rasp_nt_stream_note(&s->stream, 0,
					 (uint32_t)(s->pending_lost > UINT32_MAX / 2
							? UINT32_MAX / 2
							: s->pending_lost));
	}
	if (!rc)
		rc = rasp_nt_stream_sequence_point(
		    &s->stream, s->stream.last_ts > INT64_MIN ? s->stream.last_ts : 0);
	if (!rc)
		rc = rasp_nt_write_end(&s->nt);
	if (!rc)
		rc = rasp_output_commit(&s->out);
	else
		rasp_output_abort(&s->out);
	s->out_open = false;
	if (rc)
		return fail(s, rc, "the end of the file");
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
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
rasp__nettrace_sink_consume(bt_self_component_sink *self_sink)
{
	struct sink *s =
	    bt_self_component_get_data(bt_self_component_sink_as_self_component(self_sink));

	return rasp_bt_sink_next(s->self, s->it, on_message, on_end, s);
}

bt_component_class_sink *rasp_nettrace_sink_class_create(void)
{
	return rasp_bt_sink_class(
	    "nettrace", RASP_NETTRACE_SINK_DESCRIPTION, RASP_NETTRACE_SINK_HELP,
	    rasp__nettrace_sink_initialize, rasp__nettrace_sink_finalize,
	    rasp__nettrace_sink_graph_is_configured, rasp__nettrace_sink_consume);
}
