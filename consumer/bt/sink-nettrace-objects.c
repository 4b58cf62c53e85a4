/* LTTng-UST's object events as Rasp-Runtime ObjectLoaded, and array fields
 * (sink-nettrace-objects.h). */
#include "sink-nettrace-objects.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "nettrace-write.h"
#include "rasp-event-desc.h"

static uint64_t member(const bt_field_class *st, const char *name, bool string)
{
	if (!st || bt_field_class_get_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return UINT64_MAX;
	for (uint64_t i = 0; i < bt_field_class_structure_get_member_count(st); i++) {
		const bt_field_class_structure_member *m =
		    bt_field_class_structure_borrow_member_by_index_const(st, i);
		bt_field_class_type t = bt_field_class_get_type(
		    bt_field_class_structure_member_borrow_field_class_const(m));

		if (strcmp(bt_field_class_structure_member_get_name(m), name) != 0)
			continue;
		if (string ? t == BT_FIELD_CLASS_TYPE_STRING
			   : bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER) ||
				 bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY))
			return i;
	}
	return UINT64_MAX;
}

struct rasp_nt_obj_class rasp__nt_obj_class(const char *name, const bt_field_class *payload)
{
	struct rasp_nt_obj_class c = {.kind = RASP_NT_OBJ_NONE};

	if (!name)
		return c;
	c.baddr = member(payload, "baddr", false);
	if (!strcmp(name, "lttng_ust_statedump:bin_info") || !strcmp(name, "lttng_ust_dl:dlopen") ||
	    !strcmp(name, "lttng_ust_dl:dlmopen")) {
		c.memsz = member(payload, "memsz", false);
		c.path = member(payload, "path", true);
		c.pic = member(payload, "is_pic", false);
		c.later = !strncmp(name, "lttng_ust_dl:", 13);
		if (c.baddr != UINT64_MAX && c.memsz != UINT64_MAX && c.path != UINT64_MAX)
			c.kind = RASP_NT_OBJ_LOADED;
	} else if (!strcmp(name, "lttng_ust_statedump:build_id") ||
		   !strcmp(name, "lttng_ust_dl:build_id")) {
		c.build_id = member(payload, "build_id", false);
		if (c.baddr != UINT64_MAX && c.build_id != UINT64_MAX)
			c.kind = RASP_NT_OBJ_BUILD_ID;
	}
	return c;
}

static uint64_t uint_of(const bt_field *f)
{
	if (bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return (uint64_t)bt_field_integer_signed_get_value(f);
	return bt_field_integer_unsigned_get_value(f);
}

static const bt_field *at(const bt_field *payload, uint64_t i)
{
	return bt_field_structure_borrow_member_field_by_index_const(payload, i);
}

void rasp__nt_obj_read(const struct rasp_nt_obj_class *c, const bt_field *payload,
		       struct rasp_nt_obj *o)
{
	const char *path = bt_field_string_get_value(at(payload, c->path));
	size_t n = strlen(path);

	o->base = uint_of(at(payload, c->baddr));
	o->size = uint_of(at(payload, c->memsz));
	o->flags =
	    (c->later ? 1u : 0u) | (c->pic != UINT64_MAX && uint_of(at(payload, c->pic)) ? 2u : 0u);
	o->build_id_len = 0;
	/* Nothing to name frames with (the reader refuses such an event): left out, as the
	 * report leaves out the state dump's. A path longer than the buffer is left out whole,
	 * never cut to another file's name. */
	o->used = o->size && n && n < sizeof(o->path);
	if (o->used)
		memcpy(o->path, path, n + 1);
}

bool rasp__nt_obj_build_id(const struct rasp_nt_obj_class *c, const bt_field *payload,
			   struct rasp_nt_obj *o)
{
	const bt_field *id = at(payload, c->build_id);
	uint64_t n;

	if (!o->used || uint_of(at(payload, c->baddr)) != o->base ||
	    !bt_field_class_type_is(bt_field_get_class_type(id), BT_FIELD_CLASS_TYPE_ARRAY))
		return false;
	n = bt_field_array_get_length(id);
	if (n > sizeof(o->build_id))
		return true; /* no build id is longer: the object goes without one */
	for (uint64_t i = 0; i < n; i++)
		o->build_id[i] =
		    (uint8_t)uint_of(bt_field_array_borrow_element_field_by_index_const(id, i));
	o->build_id_len = (uint16_t)n;
	return true;
}

size_t rasp__nt_obj_encode(const struct rasp_nt_obj *o, uint8_t *out, size_t cap)
{
	union rasp_nt_value v[6] = {{.u = o->base},	    {.u = o->size},	{.u = o->flags},
				    {.u = o->build_id_len}, {.p = o->build_id}, {.s = o->path}};

	return rasp_nt_encode_payload(&rasp_event_descs[RASP_DESC_RASP_RUNTIME_OBJECTLOADED], v, 8,
				      out, cap);
}

int rasp__nt_obj_write(struct rasp_nt_stream *st, struct rasp_nt_obj *o, uint8_t *buf, size_t cap)
{
	size_t len;
	int rc;

	if (!o->used)
		return 0;
	o->used = false;
	len = rasp__nt_obj_encode(o, buf, cap);
	if (!len)
		return 0;
	rc = rasp_nt_stream_event(st, RASP_DESC_RASP_RUNTIME_OBJECTLOADED, (uint64_t)o->tid,
				  rasp_nt_stream_seq(st, (uint64_t)o->tid) + 1, o->ns, buf, len,
				  NULL, 0);
	return rc ? rc : 1;
}

int rasp__nt_sink_array(bt_self_component *self, const struct rasp_event_desc *d, size_t f,
			const bt_field *fld, union rasp_nt_value *vals, char *buf, size_t cap,
			size_t *used)
{
	static const uint8_t width[] = {[RASP_FT_I8] = 1,  [RASP_FT_U8] = 1,  [RASP_FT_I16] = 2,
					[RASP_FT_U16] = 2, [RASP_FT_I32] = 4, [RASP_FT_U32] = 4,
					[RASP_FT_I64] = 8, [RASP_FT_U64] = 8, [RASP_FT_PTR] = 8};
	enum rasp_field_type t = d->fields[f].type;
	uint64_t n = bt_field_array_get_length(fld);
	size_t w = (size_t)t < sizeof(width) ? width[t] : 0, start = (*used + 7) / 8 * 8;
	uint8_t *at = (uint8_t *)buf + start;

	if (!w || vals[d->fields[f].count].u != n || start > cap || n > (cap - start) / w) {
		BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
		    self,
		    "Event %s: field %s holds %" PRIu64 " elements, its count %s says %" PRIu64
		    " (or they do not fit)",
		    d->lttng, d->fields[f].name, n, d->fields[d->fields[f].count].name,
		    vals[d->fields[f].count].u);
		return -EINVAL;
	}
	for (uint64_t i = 0; i < n; i++)
		memcpy(at + i * w,
		       &(uint64_t){
			   uint_of(bt_field_array_borrow_element_field_by_index_const(fld, i))},
		       w); /* little-endian: the low bytes */
	vals[f].p = at;
	*used = start + (size_t)n * w;
	return 0;
}
