/* The runtime's EventPipe session (eventpipe.c), as the generated event API sees it: whether an
 * event goes to it, and the call that hands it one. Internal to librasp. */
#ifndef RASP_EVENTS_EVENTPIPE_H
#define RASP_EVENTS_EVENTPIPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nettrace-format.h"

/* Bit i: descriptor i (rasp-event-desc.h) goes to the session. Set once at load, cleared when
 * the session ends or fails. */
extern _Atomic uint64_t rasp__ep_mask;

static inline bool rasp__ep_enabled(unsigned desc)
{
	return (atomic_load_explicit(&rasp__ep_mask, memory_order_relaxed) >> desc) & 1;
}

/* Records one event of descriptor desc (vals: one per field) in the calling thread's buffer.
 * No lock and no system call (but gettid once per thread); an event that finds no buffer is
 * dropped and shows as a gap in its thread's sequence numbers. */
void rasp__ep_write(unsigned desc, const union rasp_nt_value *vals);

#endif /* RASP_EVENTS_EVENTPIPE_H */
