/* Reading rasp's events out of babeltrace2 messages: each event class is learned once (its
 * role by name, where each wanted payload field and the vpid/vtid/procname contexts are,
 * whether their types fit), then each event of it is decoded into a struct rasp_event.
 * Names come from the generated rasp/event-meta.h. Cost per event: one pointer-hash lookup
 * (none for runs of one class) and the field reads of its role. */
#ifndef RASP_CONSUMER_BT_EVENT_H
#define RASP_CONSUMER_BT_EVENT_H

#include <babeltrace2/babeltrace.h>

#include "index.h"
#include "report/event.h"

enum {
	RASP_F_KIND,
	RASP_F_TYPE,
	RASP_F_SIZE,
	RASP_F_OFFSET,
	RASP_F_MEAN,
	RASP_F_INSTANCE,
	RASP_F_AMOUNT,
	RASP_F_AMOUNT64,
	RASP_F_FRAMES,
	RASP_F_BADDR,
	RASP_F_MEMSZ,
	RASP_F_PATH,
	RASP_F_PIC,
	RASP_F_BUILD_ID,
	RASP_F_LINK,
	RASP_F_M_START,
	RASP_F_M_SIZE,
	RASP_F_M_NAMESPACE,
	RASP_F_M_NAME,
	RASP_F_M_SIGNATURE,
	RASP_F_ADDRESS,	      /* AllocationSampled's (optional) */
	RASP_F_FREED_ADDRESS, /* SampledObjectFreed's */
	/* Rasp_Runtime:ObjectLoaded's */
	RASP_F_O_BASE,
	RASP_F_O_SIZE,
	RASP_F_O_FLAGS,
	RASP_F_O_BUILD_ID,
	RASP_F_O_PATH,
	/* Rasp_Runtime:SampledObjectsFreed's */
	RASP_F_B_FREES,
	RASP_F_B_ADDRESSES,
	RASP_F_B_SIZES,
	RASP_F_B_AGES,
	RASP_NFIELDS
};

struct rasp_bt_class {
	const bt_event_class *cls; /* a reference is held */
	enum rasp_role role;
	uint64_t index[RASP_NFIELDS];  /* payload member index, UINT64_MAX when absent */
	uint64_t vpid, vtid, procname; /* common-context member index, UINT64_MAX if absent */
	int bad_field;		       /* RASP_F_* of the first unusable field, -1 if none */
	const char *bad_reason;
	/* Where an event's array fields are decoded (stack frames, build id bytes, a batch of
	 * frees' addresses, sizes and ages). */
	uint64_t frames[RASP_STACK_MAX_FRAMES];
	uint8_t bytes[RASP_BUILD_ID_MAX];
	uint64_t free_addresses[RASP_FREES_MAX], free_sizes[RASP_FREES_MAX],
	    free_ages[RASP_FREES_MAX];
	/* .NET's own LTTng provider packs events of many fields into one byte sequence,
	 * __data__, laid out as the EventPipe payload: blob_desc decodes it (METHOD only). */
	const struct rasp_event_desc *blob_desc;
	uint64_t blob_index;
	uint8_t *blob; /* RASP_BT_BLOB_MAX bytes, then as many for the UTF-8 strings */
};

/* The longest packed payload read; a method's names rarely pass a few hundred bytes. */
#define RASP_BT_BLOB_MAX 65536

struct rasp_bt_classes {
	struct rasp_bt_class *v;
	size_t n, cap;
	struct rasp_index ix;
	size_t last; /* index of the last class looked up: streams are runs of one class */
};

/* The learned class of cls (learned on first sight); NULL when memory runs out. */
struct rasp_bt_class *rasp_bt_class_get(struct rasp_bt_classes *cs, const bt_event_class *cls);
void rasp_bt_classes_fini(struct rasp_bt_classes *cs);

/* Decodes an event message of class c. 0, -EINVAL for a malformed event with the field
 * name and reason in *field and *reason, or -ENOMEM. */
int rasp_bt_event_decode(struct rasp_bt_class *c, const bt_message *msg, struct rasp_event *e,
			 const char **field, const char **reason);

/* The name of field RASP_F_* (for messages). */
const char *rasp_bt_field_name(int f);

#endif /* RASP_CONSUMER_BT_EVENT_H */
