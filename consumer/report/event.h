/* Decoded events: the fields the consumer reads from one event, whatever the source (an
 * LTTng trace through babeltrace2, an EventPipe file), and their effect on a tally. Values
 * are validated here, so a malformed event is refused the same way from every source.
 * No babeltrace2 types. */
#ifndef RASP_CONSUMER_EVENT_H
#define RASP_CONSUMER_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally.h"

enum rasp_role {
	RASP_ROLE_OTHER,      /* counted, otherwise ignored */
	RASP_ROLE_SAMPLED,    /* DotNETRuntime:AllocationSampled */
	RASP_ROLE_CONFIGURED, /* Rasp_Runtime:SamplingConfigured */
	RASP_ROLE_TICK,	      /* DotNETRuntime:GCAllocationTick_V2/V3/V4 */
	RASP_ROLE_STACK, /* DotNETRuntime:ClrStackWalk: the stack of the thread's next sample */
	/* Where code was (LTTng-UST's state dump and dlopen events): an object loaded, its build
	 * id, its debug link. */
	RASP_ROLE_MODULE,
	RASP_ROLE_BUILD_ID,
	RASP_ROLE_DEBUG_LINK,
	/* An object loaded, with its build id (Rasp_Runtime:ObjectLoaded: a rasp program's
	 * EventPipe rundown, or rasp convert's from the state dump). */
	RASP_ROLE_OBJECT,
	/* Where .NET put a method's code (MethodLoadVerbose, the rundown's MethodDCEndVerbose):
	 * what names managed frames. */
	RASP_ROLE_METHOD,
	/* The end of a sampled object's life (Rasp_Runtime:SampledObjectFreed), of every
	 * sampled object of a heap (Rasp_Runtime:HeapDestroyed): what is still live. */
	RASP_ROLE_FREED,
	RASP_ROLE_HEAP_DESTROYED,
	/* One thread's frees of sampled objects in one event (Rasp_Runtime:SampledObjectsFreed,
	 * LTTng only): each a FREED at the event's time minus its age. */
	RASP_ROLE_FREES,
};

/* The most frees a SampledObjectsFreed carries (its Frees field, 1 to this). */
#define RASP_FREES_MAX 64

/* The role of an event class by its name (names from the generated rasp/event-meta.h). */
enum rasp_role rasp_role_of(const char *event_name);

struct rasp_event {
	enum rasp_role role;
	const char *type;     /* TypeName (NULL: "NULL") */
	uint64_t kind;	      /* AllocationKind */
	uint64_t size;	      /* ObjectSize */
	uint64_t offset;      /* SampledByteOffset */
	uint64_t mean;	      /* SamplingMean */
	uint64_t instance;    /* ClrInstanceID of SAMPLED, CONFIGURED, FREED, HEAP_DESTROYED
			       * (0 when absent) */
	uint64_t address;     /* Address of SAMPLED and FREED */
	bool has_address;     /* SAMPLED: the trace carries it (an older one may not) */
	uint64_t amount;      /* AllocationAmount64, or AllocationAmount */
	int64_t pid, tid;     /* RASP_ID_UNKNOWN when absent */
	const char *procname; /* NULL when absent */
	bool timed;
	int64_t ns;		/* timestamp from the clock's origin */
	const uint64_t *frames; /* STACK: return addresses, innermost first */
	size_t nframes;
	uint64_t base, memsz; /* MODULE, OBJECT (base and size), BUILD_ID, DEBUG_LINK (base) */
	const char *path;     /* MODULE, OBJECT: the object's path; DEBUG_LINK: the debug file's */
	bool pic;	      /* MODULE, OBJECT: position-independent */
	const uint8_t *build_id; /* BUILD_ID, OBJECT (build_id_len 0: none) */
	size_t build_id_len;
	const char *method_namespace, *method_name, *method_signature; /* METHOD */
	/* FREES: the Frees field, and each array's elements (at most RASP_FREES_MAX read) with
	 * its length as the event has it; apply checks that the lengths are Frees. */
	uint64_t nfrees;
	const uint64_t *free_addresses, *free_sizes, *free_ages;
	uint64_t free_addresses_len, free_sizes_len, free_ages_len;
};

/* Applies one decoded event to t. A malformed event returns -EINVAL with the field and the
 * reason in *field and why (why holds the values, NUL-terminated); the caller decides
 * whether that is an error (strict) or a skip (rasp_tally_add_skipped). -ENOMEM. */
int rasp_event_apply(struct rasp_tally *t, const struct rasp_event *e, const char **field,
		     char *why, size_t whylen);

#endif /* RASP_CONSUMER_EVENT_H */
