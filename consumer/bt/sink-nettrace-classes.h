/* sink.rasp.nettrace's event classes (sink-nettrace-classes.c). */
#ifndef RASP_SINK_NETTRACE_CLASSES_H
#define RASP_SINK_NETTRACE_CLASSES_H

#include <babeltrace2/babeltrace.h>
#include <stddef.h>
#include <stdint.h>

#include "rasp-event-desc.h"
#include "sink-nettrace-objects.h"

#define RASP_NT_MAX_FIELDS 16

struct rasp_nt_class {
	const bt_event_class *ec; /* borrowed: lives as long as its events */
	int desc;		  /* descriptor index, -1: not written */
	uint64_t member[RASP_NT_MAX_FIELDS];
	uint64_t vpid, vtid;	      /* common-context member index, UINT64_MAX: absent */
	struct rasp_nt_obj_class obj; /* LTTng-UST's object events (desc -1) */
};

struct rasp_nt_classes {
	struct rasp_nt_class *v;
	size_t n, cap, last; /* last: the one asked for last (SIZE_MAX: none) */
};

/* ec's entry, learnt at its first event; NULL without memory, or (the cause appended to
 * self's error) when ec is named like a descriptor but a field is missing or of another type:
 * writing it would lose what its events say. */
struct rasp_nt_class *rasp__nt_class_of(struct rasp_nt_classes *cs, bt_self_component *self,
					const bt_event_class *ec);
void rasp__nt_classes_fini(struct rasp_nt_classes *cs);

#endif
