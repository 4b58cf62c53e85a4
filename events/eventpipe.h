/* The runtime's EventPipe sessions (eventpipe.c), as the generated event API and the
 * diagnostic server see them: whether an event goes to one, the call that hands it one, and
 * starting and stopping a client's session. Internal to librasp. */
#ifndef RASP_EVENTS_EVENTPIPE_H
#define RASP_EVENTS_EVENTPIPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nettrace-format.h"

/* Bit i: descriptor i (rasp-event-desc.h) goes to a session: the union of the running
 * sessions' masks, set by the writer as sessions start and end. */
extern _Atomic uint64_t rasp__ep_mask;

/* Advanced by the writer each time a session starts (eventpipe.c): a thread that samples
 * announces its mean again when it changes, so every session has it. */
extern _Atomic uint32_t rasp__ep_epoch;

/* The epoch and the mask in one word, (epoch << 32) | mask, stored after either changes
 * (rasp__ep_state_publish): the runtime's state check compares this one word with what its
 * last update read, where it compared two (3 instructions a slow path). A published pair
 * never comes back: the mask grows only when a session starts, which publishes once, after
 * advancing the epoch (update_mask publishes only at a session's end). */
extern _Atomic uint64_t rasp__ep_state;
void rasp__ep_state_publish(void);

static inline bool rasp__ep_enabled(unsigned desc)
{
	return (atomic_load_explicit(&rasp__ep_mask, memory_order_relaxed) >> desc) & 1;
}

/* The current epoch, which the calling thread's records then take until its next call: a
 * session started after the call gets none of them. The runtime reads the epoch to decide
 * whether to announce its mean before a sample; without the pin, a session starting between
 * that read and the sample's record received the sample ahead of the announcement. */
uint32_t rasp__ep_pin_epoch(void);

/* Records one event of descriptor desc (vals: one per field) in the calling thread's buffer.
 * No lock and no system call (but gettid once per thread); an event that finds no buffer is
 * dropped and shows as a gap in its thread's sequence numbers. */
void rasp__ep_write(unsigned desc, const union rasp_nt_value *vals);

/* A session id, never 0 and never given twice. */
uint64_t rasp__ep_session_new_id(void);
/* Session id streamed to a diagnostic client's connected socket fd (taken on success: closed
 * when the session ends), with the events of mask (descriptor bits), its bytes queued up to
 * queue_bytes while the client reads (past that the session drops events). The client gets
 * the npre bytes at pre (the reply to its command), then the NetTrace stream. 0, -EBUSY (too
 * many sessions), -ESHUTDOWN (the process is exiting) or -errno; on error fd is the
 * caller's. */
int rasp__ep_session_start(int fd, uint64_t id, uint64_t mask, size_t queue_bytes, const void *pre,
			   size_t npre);
/* Ends session id: what threads recorded before the call is written, then the end of the
 * stream, and the connection is closed. Waits for all that. 0, -ENOENT (no such session) or
 * the session's last error. */
int rasp__ep_session_stop(uint64_t id);

#endif /* RASP_EVENTS_EVENTPIPE_H */
