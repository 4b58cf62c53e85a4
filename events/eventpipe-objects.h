/* The objects loaded in the process (the program and its shared libraries), as the
 * Rasp-Runtime ObjectLoaded events of an EventPipe session describe them: what names the
 * native frames of its stacks. Read with dl_iterate_phdr on the writer thread when a session
 * that records stacks starts and ends; never on an allocation path. */
#ifndef RASP_EVENTS_EVENTPIPE_OBJECTS_H
#define RASP_EVENTS_EVENTPIPE_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RASP__EP_BUILD_ID_MAX 64
/* ObjectLoaded's Flags. */
#define RASP__EP_OBJECT_LATER 1u /* loaded after the session began */
#define RASP__EP_OBJECT_PIC   2u /* position-independent */

struct rasp__ep_object {
	uint64_t base, size;
	uint32_t flags;
	uint16_t build_id_len;
	uint8_t build_id[RASP__EP_BUILD_ID_MAX];
	char *path;
};

struct rasp__ep_objects {
	struct rasp__ep_object *v;
	size_t n, cap;
};

/* The objects loaded now, with a path and a loadable segment (the vDSO, which has no file,
 * is left out). 0 or -ENOMEM (what was found is kept). */
int rasp__ep_objects_read(struct rasp__ep_objects *out);
/* Whether o is in set (same base, size and path). */
bool rasp__ep_objects_has(const struct rasp__ep_objects *set, const struct rasp__ep_object *o);
void rasp__ep_objects_free(struct rasp__ep_objects *o);

#endif
