/* sink.rasp.nettrace's loaded objects, and its array fields other than stacks: LTTng-UST's state
 * dump and dlopen events (bin_info, dlopen, dlmopen, each followed by its build_id) become one
 * Rasp-Runtime ObjectLoaded each, so native frames of the converted file are named as those of the
 * LTTng trace. */
#ifndef RASP_CONSUMER_SINK_NETTRACE_OBJECTS_H
#define RASP_CONSUMER_SINK_NETTRACE_OBJECTS_H

#include <babeltrace2/babeltrace.h>

#include "nettrace-stream.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rasp_nt_obj_kind { RASP_NT_OBJ_NONE, RASP_NT_OBJ_LOADED, RASP_NT_OBJ_BUILD_ID };

/* Where an object event class keeps its fields (UINT64_MAX: absent). */
struct rasp_nt_obj_class {
	enum rasp_nt_obj_kind kind;
	bool later; /* lttng_ust_dl: loaded after the start */
	uint64_t baddr, memsz, path, pic, build_id;
};

/* An object read, not yet written (its build id may follow). */
struct rasp_nt_obj {
	bool used;
	int64_t pid, tid, ns;
	uint64_t base, size;
	uint32_t flags;
	uint16_t build_id_len;
	uint8_t build_id[64];
	char path[4096];
};

/* The class's kind by its name and its members; a class of that name without them: NONE. */
struct rasp_nt_obj_class rasp__nt_obj_class(const char *name, const bt_field_class *payload);
/* A bin_info or dlopen event into o (o->used: whether it names an object). */
void rasp__nt_obj_read(const struct rasp_nt_obj_class *c, const bt_field *payload,
		       struct rasp_nt_obj *o);
/* A build_id event: attached to o when it is of o's base; false otherwise. */
bool rasp__nt_obj_build_id(const struct rasp_nt_obj_class *c, const bt_field *payload,
			   struct rasp_nt_obj *o);
/* o's ObjectLoaded payload in out: its size, 0 when it does not fit. */
size_t rasp__nt_obj_encode(const struct rasp_nt_obj *o, uint8_t *out, size_t cap);

/* o as an ObjectLoaded at its own time and thread, once (o->used cleared), encoded in buf:
 * 1 written, 0 nothing to write, or the stream's error. */
int rasp__nt_obj_write(struct rasp_nt_stream *st, struct rasp_nt_obj *o, uint8_t *buf, size_t cap);
/* Array field f of an event (ObjectLoaded's BuildId) as the encoder reads it: its elements in
 * their C type, little-endian, in buf from *used (8-aligned; *used advanced), vals[f] pointing
 * at them. Its length must be what its count field says: -EINVAL, with the cause appended to
 * self's error, otherwise. */
int rasp__nt_sink_array(bt_self_component *self, const struct rasp_event_desc *d, size_t f,
			const bt_field *fld, union rasp_nt_value *vals, char *buf, size_t cap,
			size_t *used);

#endif
