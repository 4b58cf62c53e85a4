/* sink.rasp.nettrace's event classes (sink-nettrace.c): each babeltrace2 class matched once
 * to a descriptor by its name and its payload members found by the descriptor's field names,
 * or kept as one of LTTng-UST's object events, in a small cache the sink asks per event. */
#include "sink-nettrace-classes.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint64_t member_index(const bt_field_class *st, const char *name)
{
	if (!st || bt_field_class_get_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return UINT64_MAX;
	for (uint64_t i = 0; i < bt_field_class_structure_get_member_count(st); i++)
		if (strcmp(bt_field_class_structure_member_get_name(
			       bt_field_class_structure_borrow_member_by_index_const(st, i)),
			   name) == 0)
			return i;
	return UINT64_MAX;
}

static bool type_fits(enum rasp_field_type t, bool array, const bt_field_class *fc)
{
	bt_field_class_type k = bt_field_class_get_type(fc);

	if (array)
		return bt_field_class_type_is(k, BT_FIELD_CLASS_TYPE_DYNAMIC_ARRAY) &&
		       bt_field_class_type_is(
			   bt_field_class_get_type(
			       bt_field_class_array_borrow_element_field_class_const(fc)),
			   BT_FIELD_CLASS_TYPE_INTEGER);
	switch (t) {
	case RASP_FT_UTF16Z:
	case RASP_FT_ANSIZ:
		return k == BT_FIELD_CLASS_TYPE_STRING;
	case RASP_FT_F32:
	case RASP_FT_F64:
		return bt_field_class_type_is(k, BT_FIELD_CLASS_TYPE_REAL);
	default:
		return bt_field_class_type_is(k, BT_FIELD_CLASS_TYPE_INTEGER);
	}
}

/* Learns a class: its descriptor, where each field is. A class named like a descriptor whose
 * fields do not fit is an error: writing it would lose what its events say. */
struct rasp_nt_class *rasp__nt_class_of(struct rasp_nt_classes *s, bt_self_component *self,
					const bt_event_class *ec)
{
	const char *name = bt_event_class_get_name(ec);
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
	const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(ec);
	const bt_field_class *common =
	    bt_stream_class_borrow_event_common_context_field_class_const(sc);
	struct rasp_nt_class *c;

	if (s->last < s->n && s->v[s->last].ec == ec)
		return &s->v[s->last];
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].ec == ec) {
			s->last = i;
			return &s->v[i];
		}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct rasp_nt_class *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	c = &s->v[s->n];
	*c = (struct rasp_nt_class){.ec = ec, .desc = -1};
	c->vpid = member_index(common, "vpid");
	c->vtid = member_index(common, "vtid");
	for (size_t d = 0; name && d < rasp_event_ndescs; d++) {
		const struct rasp_event_desc *desc = &rasp_event_descs[d];

		if (strcmp(desc->lttng, name) != 0 || desc->nfields > RASP_NT_MAX_FIELDS)
			continue;
		for (size_t f = 0; f < desc->nfields; f++) {
			uint64_t m = member_index(payload, desc->fields[f].name);

			if (m == UINT64_MAX ||
			    !type_fits(desc->fields[f].type, desc->fields[f].count >= 0,
				       bt_field_class_structure_member_borrow_field_class_const(
					   bt_field_class_structure_borrow_member_by_index_const(
					       payload, m)))) {
				BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
				    self,
				    "Event class %s lacks field %s (or its type differs): its "
				    "events cannot be written as %s version %" PRIu32,
				    name, desc->fields[f].name, desc->provider, desc->version);
				return NULL;
			}
			c->member[f] = m;
		}
		c->desc = (int)d;
		break;
	}
	if (c->desc < 0)
		c->obj = rasp__nt_obj_class(name, payload);
	s->last = s->n++;
	return c;
}

void rasp__nt_classes_fini(struct rasp_nt_classes *cs)
{
	free(cs->v);
	*cs = (struct rasp_nt_classes){0};
}
