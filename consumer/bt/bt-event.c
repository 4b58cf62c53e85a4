/* Event classes and event decoding from babeltrace2 (bt-event.h). */
#include "bt-event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/event-meta.h"
#include "read/nettrace-read.h"

#define NO_INDEX UINT64_MAX

/* LTTng's context names (lttng add-context -t vpid -t vtid -t procname). */
#define CTX_VPID     "vpid"
#define CTX_VTID     "vtid"
#define CTX_PROCNAME "procname"

#define ROLE(r) (1u << (r))

enum kind { F_INT, F_STRING, F_ARRAY /* of integers */ };

#define MODULE_ROLES                                                                               \
	(ROLE(RASP_ROLE_MODULE) | ROLE(RASP_ROLE_BUILD_ID) | ROLE(RASP_ROLE_DEBUG_LINK))

/* The payload fields a role reads, by the manifests' names (LTTng-UST's own for its state
 * dump and dlopen events). */
static const struct {
	const char *name;
	enum kind kind;
	bool optional;
	unsigned roles;
} fields[RASP_NFIELDS] = {
    [RASP_F_KIND] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_ALLOCATIONKIND, F_INT, false,
		     ROLE(RASP_ROLE_SAMPLED)},
    [RASP_F_TYPE] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_TYPENAME, F_STRING, false,
		     ROLE(RASP_ROLE_SAMPLED) | ROLE(RASP_ROLE_TICK)},
    /* The same name in SampledObjectFreed. */
    [RASP_F_SIZE] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_OBJECTSIZE, F_INT, false,
		     ROLE(RASP_ROLE_SAMPLED) | ROLE(RASP_ROLE_FREED)},
    [RASP_F_OFFSET] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_SAMPLEDBYTEOFFSET, F_INT,
		       false, ROLE(RASP_ROLE_SAMPLED)},
    [RASP_F_MEAN] = {RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_FIELD_SAMPLINGMEAN, F_INT, false,
		     ROLE(RASP_ROLE_CONFIGURED)},
    /* Which heap of a rasp process (or runtime of a .NET one) a sample or a mean is of: the
     * same name in both events. Optional: 0 where a trace lacks it. */
    [RASP_F_INSTANCE] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_CLRINSTANCEID, F_INT,
			 true,
			 ROLE(RASP_ROLE_SAMPLED) | ROLE(RASP_ROLE_CONFIGURED) |
			     ROLE(RASP_ROLE_FREED) | ROLE(RASP_ROLE_HEAP_DESTROYED) |
			     ROLE(RASP_ROLE_FREES)},
    [RASP_F_AMOUNT] = {RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V2_FIELD_ALLOCATIONAMOUNT, F_INT,
		       false, ROLE(RASP_ROLE_TICK)},
    [RASP_F_AMOUNT64] = {RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V2_FIELD_ALLOCATIONAMOUNT64,
			 F_INT, true, ROLE(RASP_ROLE_TICK)},
    [RASP_F_FRAMES] = {RASP_EVENT_DOTNETRUNTIME_CLRSTACKWALK_FIELD_STACK, F_ARRAY, false,
		       ROLE(RASP_ROLE_STACK)},
    [RASP_F_BADDR] = {"baddr", F_INT, false, MODULE_ROLES},
    [RASP_F_MEMSZ] = {"memsz", F_INT, false, ROLE(RASP_ROLE_MODULE)},
    [RASP_F_PATH] = {"path", F_STRING, false, ROLE(RASP_ROLE_MODULE)},
    [RASP_F_PIC] = {"is_pic", F_INT, true, ROLE(RASP_ROLE_MODULE)},
    [RASP_F_BUILD_ID] = {"build_id", F_ARRAY, false, ROLE(RASP_ROLE_BUILD_ID)},
    [RASP_F_LINK] = {"filename", F_STRING, false, ROLE(RASP_ROLE_DEBUG_LINK)},
    [RASP_F_M_START] = {RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_FIELD_METHODSTARTADDRESS,
			F_INT, false, ROLE(RASP_ROLE_METHOD)},
    [RASP_F_M_SIZE] = {RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_FIELD_METHODSIZE, F_INT, false,
		       ROLE(RASP_ROLE_METHOD)},
    [RASP_F_M_NAMESPACE] = {RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_FIELD_METHODNAMESPACE,
			    F_STRING, false, ROLE(RASP_ROLE_METHOD)},
    [RASP_F_M_NAME] = {RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_FIELD_METHODNAME, F_STRING,
		       false, ROLE(RASP_ROLE_METHOD)},
    [RASP_F_M_SIGNATURE] = {RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_FIELD_METHODSIGNATURE,
			    F_STRING, true, ROLE(RASP_ROLE_METHOD)},
    /* Where the object was: what pairs a sample with its free (a trace without it has no
     * live heap). */
    [RASP_F_ADDRESS] = {RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_ADDRESS, F_INT, true,
			ROLE(RASP_ROLE_SAMPLED)},
    [RASP_F_FREED_ADDRESS] = {RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_FIELD_ADDRESS, F_INT,
			      false, ROLE(RASP_ROLE_FREED)},
    /* An object loaded in a rasp program, from its EventPipe writer's rundown. */
    [RASP_F_O_BASE] = {RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_BASEADDRESS, F_INT, false,
		       ROLE(RASP_ROLE_OBJECT)},
    [RASP_F_O_SIZE] = {RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_SIZE, F_INT, false,
		       ROLE(RASP_ROLE_OBJECT)},
    [RASP_F_O_FLAGS] = {RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_FLAGS, F_INT, false,
			ROLE(RASP_ROLE_OBJECT)},
    [RASP_F_O_BUILD_ID] = {RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_BUILDID, F_ARRAY, false,
			   ROLE(RASP_ROLE_OBJECT)},
    [RASP_F_O_PATH] = {RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_PATH, F_STRING, false,
		       ROLE(RASP_ROLE_OBJECT)},
    /* A batch of one thread's frees (LTTng only): event.c checks the lengths against Frees. */
    [RASP_F_B_FREES] = {RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_FREES, F_INT, false,
			ROLE(RASP_ROLE_FREES)},
    [RASP_F_B_ADDRESSES] = {RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_ADDRESSES, F_ARRAY,
			    false, ROLE(RASP_ROLE_FREES)},
    [RASP_F_B_SIZES] = {RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_OBJECTSIZES, F_ARRAY,
			false, ROLE(RASP_ROLE_FREES)},
    [RASP_F_B_AGES] = {RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_AGES, F_ARRAY, false,
		       ROLE(RASP_ROLE_FREES)},
};

const char *rasp_bt_field_name(int f)
{
	return f >= 0 && f < RASP_NFIELDS ? fields[f].name : "?";
}

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

/* A context member of the wanted type, else "absent". */
static uint64_t context_index(const bt_field_class *ctx, const char *name, bool string)
{
	uint64_t i = member_index(ctx, name);
	bt_field_class_type t;

	if (i == NO_INDEX)
		return NO_INDEX;
	t = bt_field_class_get_type(member_class(ctx, i));
	if (string ? t != BT_FIELD_CLASS_TYPE_STRING
		   : !bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER))
		return NO_INDEX;
	return i;
}

static bool kind_fits(enum kind k, const bt_field_class *fc, bt_field_class_type t)
{
	switch (k) {
	case F_STRING:
		return t == BT_FIELD_CLASS_TYPE_STRING;
	case F_ARRAY:
		return bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY) &&
		       bt_field_class_type_is(
			   bt_field_class_get_type(
			       bt_field_class_array_borrow_element_field_class_const(fc)),
			   BT_FIELD_CLASS_TYPE_INTEGER);
	default:
		return bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_INTEGER);
	}
}

/* CoreCLR's LTTng form of an event: a __data__ sequence of bytes holding the EventPipe
 * payload, decoded by the manifest's descriptor of the same LTTng name. */
static void learn_blob(struct rasp_bt_class *info, const bt_field_class *payload, const char *name)
{
	uint64_t i = member_index(payload, "__data__");

	if (i == NO_INDEX || !kind_fits(F_ARRAY, member_class(payload, i),
					bt_field_class_get_type(member_class(payload, i))))
		return;
	for (size_t d = 0; d < rasp_event_ndescs; d++)
		if (strcmp(rasp_event_descs[d].lttng, name) == 0)
			info->blob_desc = &rasp_event_descs[d];
	if (!info->blob_desc)
		return;
	for (int f = 0; f < RASP_NFIELDS; f++)
		info->index[f] = NO_INDEX;
	info->blob_index = i;
	info->bad_field = -1;
}

static void learn(struct rasp_bt_class *info, const bt_event_class *cls)
{
	const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(cls);
	const bt_field_class *ctx = bt_stream_class_borrow_event_common_context_field_class_const(
	    bt_event_class_borrow_stream_class_const(cls));

	memset(info, 0, sizeof(*info));
	info->cls = cls;
	info->role = rasp_role_of(bt_event_class_get_name(cls));
	info->bad_field = -1;
	info->vpid = context_index(ctx, CTX_VPID, false);
	info->vtid = context_index(ctx, CTX_VTID, false);
	info->procname = context_index(ctx, CTX_PROCNAME, true);
	for (int f = 0; f < RASP_NFIELDS; f++) {
		bt_field_class_type t;

		info->index[f] = NO_INDEX;
		if (!(fields[f].roles & ROLE(info->role)))
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
		if (!kind_fits(fields[f].kind, member_class(payload, info->index[f]), t)) {
			if (info->bad_field < 0) {
				info->bad_field = f;
				info->bad_reason =
				    fields[f].kind == F_STRING ? "wrong-type (expected a string)"
				    : fields[f].kind == F_ARRAY
					? "wrong-type (expected an array of integers)"
					: "wrong-type (expected an integer)";
			}
			info->index[f] = NO_INDEX;
		}
	}
	if (info->role == RASP_ROLE_METHOD && info->bad_field == RASP_F_M_START)
		learn_blob(info, payload, bt_event_class_get_name(cls));
}

static uint64_t ptr_hash(const void *p)
{
	return rasp_hash_mix64((uint64_t)(uintptr_t)p);
}

static uint64_t class_hash_of(const void *ctx, size_t i)
{
	return ptr_hash(((const struct rasp_bt_classes *)ctx)->v[i].cls);
}

static int class_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct rasp_bt_classes *)ctx)->v[i].cls == key;
}

struct rasp_bt_class *rasp_bt_class_get(struct rasp_bt_classes *cs, const bt_event_class *cls)
{
	size_t slot, i;

	if (cs->last < cs->n && cs->v[cs->last].cls == cls)
		return &cs->v[cs->last];
	if (rasp_index_reserve(&cs->ix, cs->n, class_hash_of, cs))
		return NULL;
	i = rasp_index_find(&cs->ix, ptr_hash(cls), class_eq, cs, cls, &slot);
	if (i == SIZE_MAX) {
		if (rasp_array_grow((void **)&cs->v, &cs->cap, cs->n, sizeof(*cs->v)))
			return NULL;
		i = cs->n++;
		learn(&cs->v[i], cls);
		bt_event_class_get_ref(cls);
		rasp_index_put(&cs->ix, slot, i);
	}
	cs->last = i;
	return &cs->v[i];
}

void rasp_bt_classes_fini(struct rasp_bt_classes *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		bt_event_class_put_ref(cs->v[i].cls);
		free(cs->v[i].blob);
	}
	free(cs->v);
	rasp_index_free(&cs->ix);
	*cs = (struct rasp_bt_classes){0};
}

/* Integer value of a field whose class was checked; a negative signed value fails. */
static int field_u64(const bt_field *f, uint64_t *out)
{
	int64_t v;

	if (bt_field_class_type_is(bt_field_get_class_type(f),
				   BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		*out = bt_field_integer_unsigned_get_value(f);
		return 0;
	}
	v = bt_field_integer_signed_get_value(f);
	if (v < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int64_t context_id(const bt_field *ctx, uint64_t index)
{
	const bt_field *f;
	uint64_t u;

	if (!ctx || index == NO_INDEX)
		return RASP_ID_UNKNOWN;
	f = bt_field_structure_borrow_member_field_by_index_const(ctx, index);
	if (bt_field_class_type_is(bt_field_get_class_type(f),
				   BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
		u = bt_field_integer_unsigned_get_value(f);
		/* An id past INT64_MAX cannot be told from the "unknown" marker: clamp. */
		return u > INT64_MAX ? INT64_MAX : (int64_t)u;
	}
	return bt_field_integer_signed_get_value(f) == RASP_ID_UNKNOWN
		   ? RASP_ID_UNKNOWN + 1
		   : bt_field_integer_signed_get_value(f);
}

/* An array field's integer elements into out (at most cap; the rest is dropped); its length
 * kept. -1 when an element is negative. */
static int field_array(const bt_field *f, uint64_t *out, size_t cap, size_t *n)
{
	uint64_t len = bt_field_array_get_length(f);

	*n = len < cap ? (size_t)len : cap;
	for (size_t i = 0; i < *n; i++)
		if (field_u64(bt_field_array_borrow_element_field_by_index_const(f, i), &out[i]))
			return -1;
	return 0;
}

/* A method event packed in __data__ (learn_blob): fields by the descriptor's order, which
 * every MethodLoadVerbose and MethodDCEndVerbose version shares. */
static int decode_blob(struct rasp_bt_class *c, const bt_field *payload, struct rasp_event *e,
		       const char **field, const char **reason)
{
	enum { ID, MODULE, START, SIZE, TOKEN, FLAGS, NAMESPACE, NAME, SIGNATURE, NVALS };
	const bt_field *data =
	    bt_field_structure_borrow_member_field_by_index_const(payload, c->blob_index);
	uint64_t len = bt_field_array_get_length(data);
	union rasp_nt_value vals[16];

	*field = "__data__";
	if (c->blob_desc->nfields < NVALS || c->blob_desc->nfields > 16) {
		*reason = "unexpected layout";
		return -EINVAL;
	}
	if (len > RASP_BT_BLOB_MAX) {
		*reason = "longer than 65536 bytes";
		return -EINVAL;
	}
	if (!c->blob && !(c->blob = malloc(2 * RASP_BT_BLOB_MAX)))
		return -ENOMEM;
	for (uint64_t i = 0; i < len; i++) {
		const bt_field *b = bt_field_array_borrow_element_field_by_index_const(data, i);

		c->blob[i] = bt_field_class_type_is(bt_field_get_class_type(b),
						    BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)
				 ? (uint8_t)bt_field_integer_signed_get_value(b)
				 : (uint8_t)bt_field_integer_unsigned_get_value(b);
	}
	if (rasp_nt_decode(c->blob_desc, c->blob, (size_t)len, 8, vals,
			   (char *)c->blob + RASP_BT_BLOB_MAX, RASP_BT_BLOB_MAX)) {
		*reason = "shorter than its fields";
		return -EINVAL;
	}
	*field = NULL;
	e->base = vals[START].u;
	e->memsz = vals[SIZE].u;
	e->method_namespace = vals[NAMESPACE].s;
	e->method_name = vals[NAME].s;
	e->method_signature = vals[SIGNATURE].s;
	return 0;
}

int rasp_bt_event_decode(struct rasp_bt_class *c, const bt_message *msg, struct rasp_event *e,
			 const char **field, const char **reason)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const bt_field *payload, *ctx;
	uint64_t v[RASP_NFIELDS] = {0};
	const bt_field *f[RASP_NFIELDS] = {NULL};

	*e = (struct rasp_event){.role = c->role, .pid = RASP_ID_UNKNOWN, .tid = RASP_ID_UNKNOWN};
	if (bt_message_event_borrow_stream_class_default_clock_class_const(msg)) {
		const bt_clock_snapshot *cs =
		    bt_message_event_borrow_default_clock_snapshot_const(msg);

		e->timed = bt_clock_snapshot_get_ns_from_origin(cs, &e->ns) ==
			   BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK;
	}
	if (c->role == RASP_ROLE_OTHER)
		return 0;
	if (c->bad_field >= 0) {
		*field = fields[c->bad_field].name;
		*reason = c->bad_reason;
		return -EINVAL;
	}
	payload = bt_event_borrow_payload_field_const(ev);
	for (int i = 0; i < RASP_NFIELDS; i++) {
		if (c->index[i] == NO_INDEX)
			continue;
		f[i] = bt_field_structure_borrow_member_field_by_index_const(payload, c->index[i]);
		if (fields[i].kind == F_INT && field_u64(f[i], &v[i])) {
			*field = fields[i].name;
			*reason = "negative";
			return -EINVAL;
		}
	}
	ctx = bt_event_borrow_common_context_field_const(ev);
	e->pid = context_id(ctx, c->vpid);
	e->tid = context_id(ctx, c->vtid);
	if (ctx && c->procname != NO_INDEX)
		e->procname = bt_field_string_get_value(
		    bt_field_structure_borrow_member_field_by_index_const(ctx, c->procname));
	if (c->blob_desc)
		return decode_blob(c, payload, e, field, reason);
	if (f[RASP_F_TYPE])
		e->type = bt_field_string_get_value(f[RASP_F_TYPE]);
	e->kind = v[RASP_F_KIND];
	e->size = v[RASP_F_SIZE];
	e->offset = v[RASP_F_OFFSET];
	e->mean = v[RASP_F_MEAN];
	e->instance = v[RASP_F_INSTANCE];
	e->has_address = f[RASP_F_ADDRESS] || f[RASP_F_FREED_ADDRESS];
	e->address = f[RASP_F_ADDRESS] ? v[RASP_F_ADDRESS] : v[RASP_F_FREED_ADDRESS];
	/* Ticks: V2 and later carry the 64-bit amount; the 32-bit one wraps past 4 GiB. */
	e->amount = f[RASP_F_AMOUNT64] ? v[RASP_F_AMOUNT64] : v[RASP_F_AMOUNT];
	if (f[RASP_F_FRAMES]) {
		if (field_array(f[RASP_F_FRAMES], c->frames, RASP_STACK_MAX_FRAMES, &e->nframes)) {
			*field = fields[RASP_F_FRAMES].name;
			*reason = "negative";
			return -EINVAL;
		}
		e->frames = c->frames;
	}
	e->base = v[RASP_F_BADDR];
	e->memsz = v[RASP_F_MEMSZ];
	e->pic = v[RASP_F_PIC] != 0;
	if (f[RASP_F_PATH])
		e->path = bt_field_string_get_value(f[RASP_F_PATH]);
	if (f[RASP_F_LINK])
		e->path = bt_field_string_get_value(f[RASP_F_LINK]);
	if (c->role == RASP_ROLE_METHOD) {
		e->base = v[RASP_F_M_START];
		e->memsz = v[RASP_F_M_SIZE];
		e->method_namespace = bt_field_string_get_value(f[RASP_F_M_NAMESPACE]);
		e->method_name = bt_field_string_get_value(f[RASP_F_M_NAME]);
		if (f[RASP_F_M_SIGNATURE])
			e->method_signature = bt_field_string_get_value(f[RASP_F_M_SIGNATURE]);
	}
	if (c->role == RASP_ROLE_OBJECT) {
		uint64_t b[RASP_BUILD_ID_MAX];

		e->base = v[RASP_F_O_BASE];
		e->memsz = v[RASP_F_O_SIZE];
		e->pic = (v[RASP_F_O_FLAGS] & 2) != 0;
		e->path = bt_field_string_get_value(f[RASP_F_O_PATH]);
		/* Longer than any build id: refused, never cut to one that matches no file. */
		if (bt_field_array_get_length(f[RASP_F_O_BUILD_ID]) > RASP_BUILD_ID_MAX) {
			*field = fields[RASP_F_O_BUILD_ID].name;
			*reason = "longer than 64 bytes";
			return -EINVAL;
		}
		if (field_array(f[RASP_F_O_BUILD_ID], b, RASP_BUILD_ID_MAX, &e->build_id_len)) {
			*field = fields[RASP_F_O_BUILD_ID].name;
			*reason = "negative";
			return -EINVAL;
		}
		for (size_t i = 0; i < e->build_id_len; i++)
			c->bytes[i] = (uint8_t)b[i];
		e->build_id = c->bytes;
		return 0;
	}
	if (c->role == RASP_ROLE_FREES) {
		static const int arrays[] = {RASP_F_B_ADDRESSES, RASP_F_B_SIZES, RASP_F_B_AGES};
		uint64_t *out[] = {c->free_addresses, c->free_sizes, c->free_ages};
		uint64_t *lens[] = {&e->free_addresses_len, &e->free_sizes_len, &e->free_ages_len};

		e->nfrees = v[RASP_F_B_FREES];
		for (int a = 0; a < 3; a++) {
			size_t n;

			/* At most RASP_FREES_MAX read; the length kept, for event.c to refuse
			 * one other than Frees (never a batch cut short). */
			*lens[a] = bt_field_array_get_length(f[arrays[a]]);
			if (field_array(f[arrays[a]], out[a], RASP_FREES_MAX, &n)) {
				*field = fields[arrays[a]].name;
				*reason = "negative";
				return -EINVAL;
			}
		}
		e->free_addresses = c->free_addresses;
		e->free_sizes = c->free_sizes;
		e->free_ages = c->free_ages;
		return 0;
	}
	if (f[RASP_F_BUILD_ID]) {
		uint64_t b[RASP_BUILD_ID_MAX];

		if (field_array(f[RASP_F_BUILD_ID], b, RASP_BUILD_ID_MAX, &e->build_id_len))
			e->build_id_len = 0;
		for (size_t i = 0; i < e->build_id_len; i++)
			c->bytes[i] = (uint8_t)b[i];
		e->build_id = c->bytes;
	}
	return 0;
}
