/* source.rasp.nettrace's classes (see source-nettrace.c): the trace, clock and stream
 * classes and the stream; event classes named and laid out as CoreCLR's LTTng events for the
 * events rasp knows, named "Provider:id" with no fields for the others, and the ClrStackWalk
 * class of the file's stacks. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source-nettrace-iter.h"

/* .NET's sampling mean, fixed in the runtime (dotnet/runtime, RandomizedAllocationSampling). */
#define DOTNET_MEAN 102400

static bt_field_class *field_class(bt_trace_class *tc, enum rasp_field_type t)
{
	bt_field_class *fc;
	unsigned bits = t == RASP_FT_I8 || t == RASP_FT_U8			      ? 8
			: t == RASP_FT_I16 || t == RASP_FT_U16			      ? 16
			: t == RASP_FT_I32 || t == RASP_FT_U32 || t == RASP_FT_BOOL32 ? 32
										      : 64;

	switch (t) {
	case RASP_FT_I8:
	case RASP_FT_I16:
	case RASP_FT_I32:
	case RASP_FT_I64:
		fc = bt_field_class_integer_signed_create(tc);
		break;
	case RASP_FT_F32:
		return bt_field_class_real_single_precision_create(tc);
	case RASP_FT_F64:
		return bt_field_class_real_double_precision_create(tc);
	case RASP_FT_UTF16Z:
	case RASP_FT_ANSIZ:
		return bt_field_class_string_create(tc);
	default:
		fc = bt_field_class_integer_unsigned_create(tc);
		break;
	}
	if (fc)
		bt_field_class_integer_set_field_value_range(fc, bits);
	return fc;
}

/* Event class id of the ClrStackWalk events made from the file's stacks: metadata ids start
 * at 1. */
#define STACK_CLASS_ID 0

/* An event class with id, named name, with the payload of descriptor d (NULL: none). An
 * array field becomes a dynamic array whose length is its count field. */
static bt_event_class *make_class(struct iter *it, uint64_t id, const char *name,
				  const struct rasp_event_desc *d)
{
	bt_event_class *ec = bt_event_class_create_with_id(it->sc, id);
	bt_field_class *payload = bt_field_class_structure_create(it->tc);
	bt_field_class *members[32] = {0};

	if (!ec || !payload || bt_event_class_set_name(ec, name) || (d && d->nfields > 32))
		goto error;
	for (size_t i = 0; d && i < d->nfields; i++) {
		bt_field_class *f = field_class(it->tc, d->fields[i].type);

		if (f && d->fields[i].count >= 0) {
			bt_field_class *a = bt_field_class_array_dynamic_create(
			    it->tc, f, members[d->fields[i].count]);

			bt_field_class_put_ref(f);
			f = a;
		}
		members[i] = f;
		if (!f || bt_field_class_structure_append_member(payload, d->fields[i].name, f)) {
			bt_field_class_put_ref(f);
			goto error;
		}
		bt_field_class_put_ref(f); /* the structure holds it; members[] only borrows */
	}
	if (bt_event_class_set_payload_field_class(ec, payload))
		goto error;
	bt_field_class_put_ref(payload);
	return ec;
error:
	bt_field_class_put_ref(payload);
	bt_event_class_put_ref(ec);
	return NULL;
}

/* Room in the class table for id. */
static bool classes_reserve(struct iter *it, size_t id)
{
	if (id < it->nclasses)
		return true;
	{
		size_t n = id + 64;
		bt_event_class **v = realloc(it->classes, n * sizeof(*v));

		if (!v)
			return false;
		memset(v + it->nclasses, 0, (n - it->nclasses) * sizeof(*v));
		it->classes = v;
		it->nclasses = n;
	}
	return true;
}

/* The event class of a metadata record: the manifest's layout, or a named one with no
 * fields ("Provider:id" with LTTng's provider naming) for events rasp does not decode. */
bt_event_class *rasp__nt_source_event_class(struct iter *it, const struct rasp_nt_meta *m)
{
	const struct rasp_event_desc *d = m->desc;
	char name[256];

	if (m->id < it->nclasses && it->classes[m->id])
		return it->classes[m->id];
	if (!classes_reserve(it, m->id))
		return NULL;
	if (d) {
		/* A later version appends fields: its known prefix decodes as this one. */
		snprintf(name, sizeof(name), "%s", d->lttng);
	} else {
		const char *p = m->provider;
		size_t k = 0;

		/* CoreCLR's LTTng naming: no Microsoft-/Windows-, '-' becomes '_'. */
		if (!strncmp(p, "Microsoft-", 10))
			p += 10;
		if (!strncmp(p, "Windows-", 8))
			p += 8;
		for (; *p && k < sizeof(name) - 32; p++)
			name[k++] = *p == '-' ? '_' : *p;
		snprintf(name + k, sizeof(name) - k, ":%" PRIu32 "_V%" PRIu32, m->event_id,
			 m->version);
	}
	it->classes[m->id] = make_class(it, m->id, name, d);
	return it->classes[m->id];
}

/* Trace, clock, stream classes and the stream. The clock counts the file's ticks; its
 * origin is the Unix epoch, offset so that the sync tick is the file's SyncTimeUTC. */
int rasp__nt_source_make_stream(struct iter *it)
{
	const struct rasp_nt_info *in = rasp_nt_info(it->r);
	bt_self_component *comp = bt_self_message_iterator_borrow_component(it->self);
	bt_field_class *ctx;
	__int128 off_ns;
	int64_t secs;
	uint64_t cycles;

	it->tc = bt_trace_class_create(comp);
	it->cc = bt_clock_class_create(comp);
	if (!it->tc || !it->cc)
		return -1;
	bt_trace_class_set_assigns_automatic_stream_class_id(it->tc, BT_TRUE);
	bt_clock_class_set_frequency(it->cc, (uint64_t)in->frequency);
	bt_clock_class_set_origin_is_unix_epoch(it->cc, BT_TRUE);
	/* offset = SyncTimeUTC - sync_ticks / frequency, in (seconds, cycles < frequency);
	 * computed wide, so any header's values give a defined offset (events whose time falls
	 * outside 64-bit nanoseconds are refused one by one, in iter_next). */
	off_ns = (__int128)in->sync_utc_ns - (__int128)in->sync_ticks * 1000000000 / in->frequency;
	if (off_ns > INT64_MAX / 2 || off_ns < INT64_MIN / 2)
		off_ns = 0;
	it->off_ns = off_ns;
	secs = (int64_t)(off_ns / 1000000000 - (off_ns % 1000000000 < 0));
	cycles = (uint64_t)((off_ns - (__int128)secs * 1000000000) * in->frequency / 1000000000);
	bt_clock_class_set_offset(it->cc, secs, cycles);
	bt_clock_class_set_name(it->cc, "nettrace");
	it->sc = bt_stream_class_create(it->tc);
	ctx = bt_field_class_structure_create(it->tc);
	if (!it->sc || !ctx)
		return -1;
	bt_stream_class_set_assigns_automatic_event_class_id(it->sc, BT_FALSE);
	bt_stream_class_set_default_clock_class(it->sc, it->cc);
	bt_stream_class_set_supports_packets(it->sc, BT_TRUE, BT_FALSE, BT_FALSE);
	bt_stream_class_set_supports_discarded_events(it->sc, BT_TRUE, BT_TRUE);
	for (int i = 0; i < 2; i++) {
		bt_field_class *id = bt_field_class_integer_signed_create(it->tc);

		if (!id || bt_field_class_structure_append_member(ctx, i ? "vtid" : "vpid", id)) {
			bt_field_class_put_ref(id);
			bt_field_class_put_ref(ctx);
			return -1;
		}
		bt_field_class_put_ref(id);
	}
	if (bt_stream_class_set_event_common_context_field_class(it->sc, ctx)) {
		bt_field_class_put_ref(ctx);
		return -1;
	}
	bt_field_class_put_ref(ctx);
	it->trace = bt_trace_create(it->tc);
	if (!it->trace)
		return -1;
	bt_trace_set_name(it->trace, it->path);
	/* The process's samples are .NET's (p = 1/102400) unless rasp's SamplingConfigured in
	 * the file says otherwise (a rasp program's file carries it). */
	if (in->pid >= 0 &&
	    (bt_trace_set_environment_entry_integer(it->trace, RASP_ENV_MEAN, DOTNET_MEAN) ||
	     bt_trace_set_environment_entry_integer(it->trace, RASP_ENV_PID, in->pid)))
		return -1;
	it->stream = bt_stream_create(it->sc, it->trace);
	if (!it->stream)
		return -1;
	bt_stream_set_name(it->stream, it->path);
	return 0;
}

/* The class of the ClrStackWalk events made from the file's stacks (the manifest's layout),
 * made on first use. */
bt_event_class *rasp__nt_source_stack_class(struct iter *it)
{
	const struct rasp_event_desc *d = &rasp_event_descs[RASP_DESC_DOTNETRUNTIME_CLRSTACKWALK];

	if (!classes_reserve(it, STACK_CLASS_ID))
		return NULL;
	if (!it->classes[STACK_CLASS_ID])
		it->classes[STACK_CLASS_ID] = make_class(it, STACK_CLASS_ID, d->lttng, d);
	return it->classes[STACK_CLASS_ID];
}
