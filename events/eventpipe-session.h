/* One EventPipe session of the runtime (eventpipe.c runs them): where its NetTrace stream goes
 * (a file, or the connection of a diagnostic client), which events it wants, and its own
 * numbering of each thread's events. Internal to librasp; used by the writer thread only.
 *
 * Records carry each thread's process-wide sequence number. A session renumbers them from 1
 * per thread, as .NET's sessions do: a thread's base is fixed by the first record the session
 * sees from it (the first the thread wrote in an epoch the session covers, eventpipe-buffers.c,
 * numbered base + 1), and events the session does not want are skipped without a gap. What
 * the pool dropped, and what the session itself drops because its client reads too slowly,
 * stays a gap: readers count it as lost.
 *
 * A file session writes as it goes (blocking). A client's session queues its bytes, up to a
 * limit, and the writer sends them without blocking: a client that does not read only makes
 * its own session drop events, never the program wait. */
#ifndef RASP_EVENTS_EVENTPIPE_SESSION_H
#define RASP_EVENTS_EVENTPIPE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventpipe-buffers.h"

struct rasp__ep_session;

/* A session writing to fd (owned on success: closed by rasp__ep_session_close; the caller's
 * on error). stream: fd is a connected socket, queued up to queue_max bytes, npre bytes at
 * pre first. mask: descriptors wanted. epoch: records of earlier epochs are not the
 * session's. The NetTrace header is written (queued) at once. 0, -EINVAL, -ENOMEM or the
 * write's error. */
int rasp__ep_session_open(struct rasp__ep_session **out, int fd, bool stream, uint64_t id,
			  uint64_t mask, uint32_t epoch, size_t queue_max, const char *name,
			  const void *pre, size_t npre);

uint64_t rasp__ep_session_id(const struct rasp__ep_session *s);
uint64_t rasp__ep_session_mask(const struct rasp__ep_session *s);
const char *rasp__ep_session_name(const struct rasp__ep_session *s);
/* Events the session dropped itself (its client too slow). */
uint64_t rasp__ep_session_dropped(const struct rasp__ep_session *s);

/* One record of thread tid, in time order: written, skipped (not wanted, or older than the
 * session) or dropped (the queue full). 0 or the output's error. */
int rasp__ep_session_record(struct rasp__ep_session *s, const struct rasp__ep_rec *r, uint64_t tid);
/* The pending EventBlock and a sequence point at ts. 0 or an error. */
int rasp__ep_session_sequence_point(struct rasp__ep_session *s, int64_t ts);

/* A client's session: sends what is queued without blocking. 0, or -EPIPE when the client is
 * gone (hung up or reset), or another send error. A file session: 0. */
int rasp__ep_session_send(struct rasp__ep_session *s);
/* A forked child's copy: closes its descriptor and writes nothing more. */
void rasp__ep_session_drop_fd(struct rasp__ep_session *s);
/* Bytes queued and not yet sent. */
size_t rasp__ep_session_backlog(const struct rasp__ep_session *s);

/* The end of a clean close, ahead of it: each thread's final number in a last sequence point
 * at ts, and the end tag, written (a file) or queued (a client). Once; later calls return the
 * first one's result. 0 or the write's error. */
int rasp__ep_session_end(struct rasp__ep_session *s, int64_t ts);

/* At most this many sessions are drained together. */
#define RASP__EP_DRAIN_MAX 16
/* Sends the queues of the client sessions among v[0..n) (NULL entries and file sessions are
 * skipped) all at once, until each is sent or its client gone, or timeout_ms has passed for
 * them all: n clients that do not read cost timeout_ms, not n times it. An error is kept for
 * the session's close to return. */
void rasp__ep_sessions_drain(struct rasp__ep_session *const *v, size_t n, int timeout_ms);

/* Ends the session. clean: rasp__ep_session_end unless done, then (a client) the rest of the
 * queue sent, waiting up to timeout_ms for the client to read it.
 * Closes the descriptor and frees the session. 0 or the first error seen. */
int rasp__ep_session_close(struct rasp__ep_session *s, bool clean, int64_t ts, int timeout_ms);

#endif /* RASP_EVENTS_EVENTPIPE_SESSION_H */
