/* source.rasp.nettrace's classes (see source-nettrace.c): the trace, clock and stream
 * classes and the stream; event classes named and laid out as CoreCLR's LTTng events for the
 * events rasp knows, named "Provider:id" with no fields for the others, each made once per
 * (name, layout) and found again by the current definition of an event's metadata id (which
 * V6 may redefine); and the ClrStackWalk class of the file's stacks. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h" /* RASP_DEFAULT_SAMPLING_MEAN: .NET's */
#include "source-nettrace-iter.h"

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

/* A flag of by_id[]: the metadata id is already some class's id. */
#define ID_TAKEN (UINT32_C(1) << 31)

/* A class whose metadata id is some class's id already gets one from the top of the 32-bit
 * range down (metadata ids are small), skipping metadata ids in use: CTF readers keep event
 * class ids in 32 bits (babeltrace2 2.0's source.ctf.fs took 2^32 + 1 for 1). */
static uint64_t extra_class_id(struct iter *it)
{
	while (it->next_extra_id < it->nby_id && (it->by_id[it->next_extra_id] & ID_TAKEN))
		it->next_extra_id--;
	return it->next_extra_id--;
}

/* Whether class id `id` (a metadata id) is taken: by the first class of that metadata id, or
 * as an extra id. */
static bool class_id_taken(const struct iter *it, uint32_t id)
{
	return id > it->next_extra_id || (id < it->nby_id && (it->by_id[id] & ID_TAKEN));
}

/* FNV-1a of a class's key: its name and layout. */
static size_t class_hash(const char *name, const struct rasp_event_desc *d)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * UINT64_C(1099511628211);
	h = (h ^ (uintptr_t)d) * UINT64_C(1099511628211);
	return (size_t)(h ^ h >> 29);
}

/* The index slot of (name, d): the class's, or the empty one where it would go. */
static uint32_t *class_slot(struct iter *it, const char *name, const struct rasp_event_desc *d)
{
	size_t mask = it->capindex - 1;

	/* The index is at most half full: the probe ends at an empty slot. */
	for (size_t i = class_hash(name, d) & mask;; i = (i + 1) & mask) {
		uint32_t *s = &it->class_index[i];
		const struct nt_class *c = *s ? &it->classes[*s - 1] : NULL;

		if (!c || (c->desc == d && strcmp(c->name, name) == 0))
			return s;
	}
}

/* Room for one more class in the table and the index. */
static int classes_reserve(struct iter *it)
{
	if (it->nclasses == it->capclasses) {
		size_t n = it->capclasses ? it->capclasses * 2 : 64;
		struct nt_class *v = realloc(it->classes, n * sizeof(*v));

		if (!v)
			return -1;
		it->classes = v;
		it->capclasses = n;
	}
	if (2 * (it->nclasses + 1) > it->capindex) {
		size_t n = it->capindex ? it->capindex * 2 : 128;
		uint32_t *v = calloc(n, sizeof(*v)), *old = it->class_index;

		if (!v)
			return -1;
		it->class_index = v;
		it->capindex = n;
		for (size_t i = 0; i < it->nclasses; i++)
			*class_slot(it, it->classes[i].name, it->classes[i].desc) = (uint32_t)i + 1;
		free(old);
	}
	return 0;
}

/* Room in by_id for id. */
static int by_id_reserve(struct iter *it, uint32_t id)
{
	if (id < it->nby_id)
		return 0;
	{
		size_t n = (size_t)id + 64;
		uint32_t *v = realloc(it->by_id, n * sizeof(*v));

		if (!v)
			return -1;
		memset(v + it->nby_id, 0, (n - it->nby_id) * sizeof(*v));
		it->by_id = v;
		it->nby_id = n;
	}
	return 0;
}

/* Whether class c is what definition m names (its name depends on these alone). */
static bool class_fits(const struct nt_class *c, const struct rasp_nt_meta *m)
{
	if (c->desc || m->desc)
		return c->desc == m->desc;
	return c->event_id == m->event_id && c->version == m->version &&
	       strcmp(c->provider, m->provider) == 0;
}

/* The class name of a definition: the manifest's LTTng name, or "Provider:id_Vversion" with
 * CoreCLR's LTTng provider naming for events rasp does not decode. */
static void class_name(const struct rasp_nt_meta *m, char *name, size_t cap)
{
	const char *p = m->provider;
	size_t k = 0;

	if (m->desc) {
		/* A later version appends fields: its known prefix decodes as this one. */
		snprintf(name, cap, "%s", m->desc->lttng);
		return;
	}
	/* No Microsoft-/Windows-, '-' becomes '_'. */
	if (!strncmp(p, "Microsoft-", 10))
		p += 10;
	if (!strncmp(p, "Windows-", 8))
		p += 8;
	for (; *p && k < cap - 32; p++)
		name[k++] = *p == '-' ? '_' : *p;
	snprintf(name + k, cap - k, ":%" PRIu32 "_V%" PRIu32, m->event_id, m->version);
}

bt_event_class *rasp__nt_source_event_class(struct iter *it, const struct rasp_nt_meta *m,
					    uint64_t offset)
{
	uint32_t *by, *slot;
	struct nt_class *c;
	char name[256];
	uint64_t id;

	if (m->id < it->nby_id && (it->by_id[m->id] & ~ID_TAKEN)) {
		c = &it->classes[(it->by_id[m->id] & ~ID_TAKEN) - 1];
		if (class_fits(c, m))
			return c->ec;
	}
	if (by_id_reserve(it, m->id) || classes_reserve(it))
		goto oom;
	by = &it->by_id[m->id];
	class_name(m, name, sizeof(name));
	slot = class_slot(it, name, m->desc);
	if (*slot) {
		/* Redefined as an event some class already stands for. */
		*by = (*by & ID_TAKEN) | *slot;
		return it->classes[*slot - 1].ec;
	}
	if (it->nclasses >= RASP_NT_MAX_CLASSES) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
		    it->self,
		    "%s: at offset %" PRIu64 ": metadata id %" PRIu32 " (%s): more than %u "
		    "distinct event classes (a corrupt or hostile file)",
		    it->path, offset, m->id, name, RASP_NT_MAX_CLASSES);
		return NULL;
	}
	/* The metadata id as class id the first time, so ids read as the file's. */
	id = class_id_taken(it, m->id) ? extra_class_id(it) : m->id;
	c = &it->classes[it->nclasses];
	*c = (struct nt_class){.desc = m->desc, .event_id = m->event_id, .version = m->version};
	c->name = strdup(name);
	c->provider = strdup(m->provider);
	if (c->name && c->provider)
		c->ec = make_class(it, id, name, m->desc);
	if (!c->ec) {
		free(c->name);
		free(c->provider);
		goto oom;
	}
	it->nclasses++;
	*slot = (uint32_t)it->nclasses;
	*by = (id == m->id ? ID_TAKEN : *by & ID_TAKEN) | (uint32_t)it->nclasses;
	return c->ec;
oom:
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(
	    it->self, "%s: at offset %" PRIu64 ": out of memory for event classes", it->path,
	    offset);
	return NULL;
}

void rasp__nt_source_classes_free(struct iter *it)
{
	for (size_t i = 0; i < it->nclasses; i++) {
		bt_event_class_put_ref(it->classes[i].ec);
		free(it->classes[i].name);
		free(it->classes[i].provider);
	}
	free(it->classes);
	free(it->class_index);
	free(it->by_id);
	bt_event_class_put_ref(it->stack_class);
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

	it->next_extra_id = UINT32_MAX;
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
	/* Packets with times, as CTF wants them to place losses (source-nettrace.c). */
	bt_stream_class_set_supports_packets(it->sc, BT_TRUE, BT_TRUE, BT_TRUE);
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
	/* The process's samples are .NET's (its runtime fixes the mean: rasp's default) unless
	 * rasp's SamplingConfigured in the file says otherwise (a rasp program's file carries
	 * it). */
	if (in->pid >= 0 &&
	    (bt_trace_set_environment_entry_integer(it->trace, RASP_ENV_MEAN,
						    RASP_DEFAULT_SAMPLING_MEAN) ||
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

	if (!it->stack_class)
		it->stack_class = make_class(it, STACK_CLASS_ID, d->lttng, d);
	return it->stack_class;
}
