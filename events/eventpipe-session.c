/* One EventPipe session (eventpipe-session.h). */
#define _GNU_SOURCE
#include "eventpipe-session.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "eventpipe-objects.h"
#include "nettrace-stream.h"
#include "nettrace-write.h"
#include "rasp-event-desc.h"

/* The EventBlocks written: the runtime's size. */
#define BLOCK_CAP ((size_t)RASP_NT_BLOCK_SIZE)
/* Room a client's queue must have for the session to take an event: a whole EventBlock, its
 * metadata and stack blocks, and a sequence point, so what is queued never exceeds the
 * limit by more than what is being encoded. */
#define QUEUE_MARGIN (4 * BLOCK_CAP)

/* A thread as the session numbers it. */
struct sthread {
	uint64_t tid;
	uint32_t base;	  /* process-wide number before the session's first */
	uint32_t skipped; /* events not wanted since */
	uint32_t last;	  /* the session's number of its last record */
	uint32_t own;	  /* events the session wrote itself on its number (ObjectLoaded) */
	bool used;
	bool based; /* base is set: a record of the thread was seen */
};

struct rasp__ep_session {
	uint64_t id, mask, dropped;
	uint32_t epoch;
	bool stream;
	int fd;
	char name[64];
	struct rasp_nt_out out;
	struct rasp_nt_stream nt;
	struct sthread *thr;
	size_t nthr, capthr;
	/* The end written (rasp__ep_session_end), and the first error of the end or its drain. */
	bool ended;
	int end_rc;
	/* The objects loaded when it started (ObjectLoaded), the end's rundown writes the
	 * others; the thread that writes them. */
	struct rasp__ep_objects objects;
	uint64_t rundown_tid;
	/* A client's bytes not yet sent: q[qoff, qlen). */
	uint8_t *q;
	size_t qoff, qlen, qcap, qmax;
};

static int rundown(struct rasp__ep_session *s, int64_t ts, bool end);

static int fd_write(void *ctx, const void *p, size_t n)
{
	struct rasp__ep_session *s = ctx;
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(s->fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int queue_write(void *ctx, const void *p, size_t n)
{
	struct rasp__ep_session *s = ctx;

	if (s->qoff && s->qlen == s->qoff)
		s->qoff = s->qlen = 0;
	if (s->qcap - s->qlen < n) {
		size_t cap = s->qcap ? s->qcap : 64 << 10;
		uint8_t *v;

		/* Compact first: what was sent is not kept. */
		if (s->qoff) {
			memmove(s->q, s->q + s->qoff, s->qlen - s->qoff);
			s->qlen -= s->qoff;
			s->qoff = 0;
		}
		while (cap - s->qlen < n)
			cap *= 2;
		if (cap != s->qcap) {
			v = realloc(s->q, cap);
			if (!v)
				return -ENOMEM;
			s->q = v;
			s->qcap = cap;
		}
	}
	memcpy(s->q + s->qlen, p, n);
	s->qlen += n;
	return 0;
}

int rasp__ep_session_open(struct rasp__ep_session **out, int fd, bool stream, uint64_t id,
			  uint64_t mask, uint32_t epoch, size_t queue_max, const char *name,
			  const void *pre, size_t npre)
{
	struct rasp_nt_trace_header h = {
	    .frequency = 1000000000, .pointer_size = sizeof(void *), .pid = (uint32_t)getpid()};
	struct rasp__ep_session *s;
	struct timespec mono, real;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	*out = NULL;
	if (fd < 0 || !name)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->id = id;
	s->mask = mask;
	s->epoch = epoch;
	s->stream = stream;
	s->fd = fd;
	s->qmax = queue_max > QUEUE_MARGIN ? queue_max : QUEUE_MARGIN;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->out = (struct rasp_nt_out){.write = stream ? queue_write : fd_write, .ctx = s};
	rc = rasp_nt_stream_init(&s->nt, &s->out, BLOCK_CAP);
	/* Not part of the stream: its alignment counts from the header. */
	if (!rc && stream && npre)
		rc = queue_write(s, pre, npre);
	if (!rc) {
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		h.sync_utc_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec;
		h.sync_ticks = (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec;
		h.processors = cpus > 0 ? (uint32_t)cpus : 1;
		rc = rasp_nt_write_header(&s->out, &h);
	}
	/* The frees' metadata up front: a reader then knows frees were recorded, so a session
	 * whose program freed no sampled object reads as "nothing freed", not "frees unknown"
	 * (rasp report --inuse refuses an input with no free events declared). */
	for (unsigned d = 0; !rc && d < 2; d++) {
		unsigned desc = d ? RASP_DESC_RASP_RUNTIME_HEAPDESTROYED
				  : RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED;

		if (mask >> desc & 1)
			rc = rasp_nt_stream_declare(&s->nt, desc, (uint64_t)gettid(), h.sync_ticks);
	}
	if (!rc)
		rc = rundown(s, h.sync_ticks, false);
	if (rc) {
		s->fd = -1; /* the caller's */
		rasp__ep_session_close(s, false, 0, 0);
		return rc;
	}
	*out = s;
	return 0;
}

uint64_t rasp__ep_session_id(const struct rasp__ep_session *s)
{
	return s->id;
}

uint64_t rasp__ep_session_mask(const struct rasp__ep_session *s)
{
	return s->mask;
}

const char *rasp__ep_session_name(const struct rasp__ep_session *s)
{
	return s->name;
}

uint64_t rasp__ep_session_dropped(const struct rasp__ep_session *s)
{
	return s->dropped;
}

void rasp__ep_session_drop_fd(struct rasp__ep_session *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->out.err = -EBADF;
}

size_t rasp__ep_session_backlog(const struct rasp__ep_session *s)
{
	return s->qlen - s->qoff;
}

/* ---- loaded objects ------------------------------------------------------------------------ */

static struct sthread *thread_of(struct rasp__ep_session *s, uint64_t tid);

/* One ObjectLoaded of the session's own, numbered after the writer thread's records. */
static int object_event(struct rasp__ep_session *s, const struct rasp__ep_object *o, uint32_t flags,
			int64_t ts)
{
	union rasp_nt_value v[6] = {{.u = o->base},	     {.u = o->size},
				    {.u = o->flags | flags}, {.u = o->build_id_len},
				    {.p = o->build_id},	     {.s = o->path}};
	const struct rasp_event_desc *d = &rasp_event_descs[RASP_DESC_RASP_RUNTIME_OBJECTLOADED];
	uint8_t buf[4096 * 2 + 256];
	struct sthread *t = thread_of(s, s->rundown_tid);
	size_t n;

	if (!t)
		return -ENOMEM;
	if (!t->used) {
		*t = (struct sthread){.tid = s->rundown_tid, .used = true};
		s->nthr++;
	}
	n = rasp_nt_encode_payload(d, v, sizeof(void *), buf, sizeof(buf));
	if (!n)
		return 0; /* a path too long for one event: that object's frames stay unnamed */
	t->own++;
	t->last++;
	return rasp_nt_stream_event(&s->nt, RASP_DESC_RASP_RUNTIME_OBJECTLOADED, s->rundown_tid,
				    t->last, ts, buf, n, NULL, 0);
}

/* A session that records stacks gets the objects loaded: at its start all of them, at its end
 * those loaded since (end). Without memory the rundown is partial: frames stay unnamed. */
static int rundown(struct rasp__ep_session *s, int64_t ts, bool end)
{
	struct rasp__ep_objects now = {0};
	int rc = 0;

	if (!(s->mask >> RASP_DESC_RASP_RUNTIME_OBJECTLOADED & 1))
		return 0;
	if (!s->rundown_tid)
		s->rundown_tid = (uint64_t)gettid();
	if (!end) {
		rasp__ep_objects_read(&s->objects);
		for (size_t i = 0; i < s->objects.n && !rc; i++)
			rc = object_event(s, &s->objects.v[i], 0, ts);
		return rc;
	}
	rasp__ep_objects_read(&now);
	for (size_t i = 0; i < now.n && !rc; i++)
		if (!rasp__ep_objects_has(&s->objects, &now.v[i]))
			rc = object_event(s, &now.v[i], RASP__EP_OBJECT_LATER, ts);
	rasp__ep_objects_free(&now);
	return rc;
}

/* ---- numbering ----------------------------------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static struct sthread *slot(const struct rasp__ep_session *s, uint64_t tid)
{
	size_t mask = s->capthr - 1, i;

	for (i = mix(tid) & mask; s->thr[i].used && s->thr[i].tid != tid; i = (i + 1) & mask)
		;
	return &s->thr[i];
}

/* tid's entry (used false when new); NULL without memory. */
static struct sthread *thread_of(struct rasp__ep_session *s, uint64_t tid)
{
	if (2 * (s->nthr + 1) > s->capthr) {
		size_t cap = s->capthr ? 2 * s->capthr : 64, oldcap = s->capthr;
		struct sthread *old = s->thr, *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		s->thr = v;
		s->capthr = cap;
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].used)
				*slot(s, old[k].tid) = old[k];
		free(old);
	}
	return slot(s, tid);
}

int rasp__ep_session_record(struct rasp__ep_session *s, const struct rasp__ep_rec *r, uint64_t tid)
{
	struct sthread *t;
	uint32_t seq;

	if (s->out.err)
		return s->out.err;
	if (r->epoch < s->epoch)
		return 0; /* written before the session began */
	t = thread_of(s, tid);
	if (!t)
		return -ENOMEM;
	if (!t->based) {
		if (r->desc == RASP__EP_MARKER)
			return 0; /* every event of it lost before the session saw one: unknown */
		if (!t->used)
			s->nthr++;
		*t = (struct sthread){
		    .tid = tid, .base = r->seq - 1, .own = t->own, .used = true, .based = true};
	}
	seq = r->seq - t->base - t->skipped + t->own;
	if (r->desc == RASP__EP_MARKER) {
		t->last = seq;
		return rasp_nt_stream_note(&s->nt, tid, seq);
	}
	if (!(s->mask >> r->desc & 1)) {
		t->skipped++;
		return 0;
	}
	t->last = seq;
	/* A client that does not keep up: the event is lost for this session only, and the
	 * gap in the thread's numbers says so. */
	if (s->stream && s->qlen - s->qoff + QUEUE_MARGIN > s->qmax) {
		s->dropped++;
		return 0;
	}
	return rasp_nt_stream_event(&s->nt, r->desc, tid, seq, r->ts, r + 1, r->payload,
				    rasp__ep_rec_frames(r), r->nframes);
}

int rasp__ep_session_sequence_point(struct rasp__ep_session *s, int64_t ts)
{
	if (s->out.err)
		return s->out.err;
	if (s->stream && s->qlen - s->qoff + QUEUE_MARGIN > s->qmax)
		return 0; /* the next one, when the client has read */
	return rasp_nt_stream_sequence_point(&s->nt, ts);
}

/* ---- sending ------------------------------------------------------------------------------- */

int rasp__ep_session_send(struct rasp__ep_session *s)
{
	if (!s->stream)
		return 0;
	while (s->qoff < s->qlen) {
		ssize_t w =
		    send(s->fd, s->q + s->qoff, s->qlen - s->qoff, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w < 0)
			return errno == ECONNRESET ? -EPIPE : -errno;
		s->qoff += (size_t)w;
	}
	if (s->qoff == s->qlen)
		s->qoff = s->qlen = 0;
	/* A client that hung up while nothing was to be sent: nothing else would tell. */
	{
		struct pollfd p = {.fd = s->fd, .events = POLLRDHUP};

		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return -EPIPE;
	}
	return 0;
}

static int drain(struct rasp__ep_session *s, int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (s->qoff < s->qlen) {
		struct pollfd p = {.fd = s->fd, .events = POLLOUT};
		long left;
		int rc;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = timeout_ms -
		       ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)left);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc == 1 && (p.revents & (POLLERR | POLLHUP)))
			return -EPIPE;
		if (rc == 1) {
			ssize_t w = send(s->fd, s->q + s->qoff, s->qlen - s->qoff,
					 MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			if (w > 0)
				s->qoff += (size_t)w;
		}
	}
	return 0;
}

int rasp__ep_session_end(struct rasp__ep_session *s, int64_t ts)
{
	int rc;

	if (s->ended)
		return s->end_rc;
	s->ended = true;
	rc = rundown(s, ts, true);
	if (rc) {
		s->end_rc = rc;
		return rc;
	}
	/* Each thread's last number, so a tail the session dropped is counted. */
	for (size_t k = 0; k < s->capthr; k++)
		if (s->thr[k].used && s->thr[k].last != rasp_nt_stream_seq(&s->nt, s->thr[k].tid))
			rasp_nt_stream_note(&s->nt, s->thr[k].tid, s->thr[k].last);
	rc = rasp_nt_stream_sequence_point(&s->nt, ts);
	if (!rc)
		rc = rasp_nt_write_end(&s->out);
	s->end_rc = rc;
	return rc;
}

void rasp__ep_sessions_drain(struct rasp__ep_session *const *v, size_t n, int timeout_ms)
{
	struct pollfd p[RASP__EP_DRAIN_MAX];
	size_t at[RASP__EP_DRAIN_MAX];
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Each pass sends to every client that can take bytes, or the time ends: bounded by
	 * timeout_ms whatever the clients do. */
	for (;;) {
		nfds_t k = 0;
		long left;

		for (size_t i = 0; i < n && k < RASP__EP_DRAIN_MAX; i++) {
			struct rasp__ep_session *s = v[i];

			if (!s || !s->stream || s->fd < 0 || s->end_rc || s->qoff == s->qlen)
				continue;
			p[k] = (struct pollfd){.fd = s->fd, .events = POLLOUT};
			at[k++] = i;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = timeout_ms -
		       ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (!k || left <= 0)
			return;
		if (poll(p, k, (int)left) < 0 && errno != EINTR)
			return;
		for (nfds_t j = 0; j < k; j++) {
			struct rasp__ep_session *s = v[at[j]];
			ssize_t w;

			if (p[j].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				s->end_rc = -EPIPE;
				continue;
			}
			if (!(p[j].revents & POLLOUT))
				continue;
			w = send(s->fd, s->q + s->qoff, s->qlen - s->qoff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				s->qoff += (size_t)w;
			else if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
				s->end_rc = -errno;
		}
	}
}

int rasp__ep_session_close(struct rasp__ep_session *s, bool clean, int64_t ts, int timeout_ms)
{
	int rc = 0;

	if (!s)
		return 0;
	if (clean) {
		rc = rasp__ep_session_end(s, ts);
		if (!rc && s->stream)
			rc = drain(s, timeout_ms);
	}
	if (s->fd >= 0 && s->stream)
		shutdown(s->fd, SHUT_RDWR);
	if (s->fd >= 0)
		close(s->fd);
	rasp_nt_stream_fini(&s->nt);
	rasp__ep_objects_free(&s->objects);
	free(s->thr);
	free(s->q);
	free(s);
	return rc;
}
