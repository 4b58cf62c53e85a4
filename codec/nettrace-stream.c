/* A NetTrace event stream (nettrace-stream.h). */
#include "nettrace-stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every thread ever seen (16 bytes each): its last sequence number outlives sequence points,
 * for writers that number events themselves (sink.rasp.nettrace). */
struct rasp_nt_thread {
	uint64_t tid;
	uint32_t seq;
	bool dirty; /* in the next sequence point */
	bool used;  /* the slot holds a thread */
};

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static struct rasp_nt_thread *find(const struct rasp_nt_stream *s, uint64_t tid)
{
	size_t mask = s->capthreads - 1, i;

	if (!s->capthreads)
		return NULL;
	for (i = mix(tid) & mask; s->threads[i].used; i = (i + 1) & mask)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return &s->threads[i];
}

/* tid's entry, made when new. NULL without memory. */
static struct rasp_nt_thread *thread_of(struct rasp_nt_stream *s, uint64_t tid)
{
	struct rasp_nt_thread *t;

	if (2 * (s->nthreads + 1) > s->capthreads) {
		size_t cap = s->capthreads ? 2 * s->capthreads : 64;
		struct rasp_nt_thread *old = s->threads, *v = calloc(cap, sizeof(*v));
		size_t oldcap = s->capthreads;

		if (!v)
			return NULL;
		s->threads = v;
		s->capthreads = cap;
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].used)
				*find(s, old[k].tid) = old[k];
		free(old);
	}
	t = find(s, tid);
	if (!t->used) {
		*t = (struct rasp_nt_thread){.tid = tid, .used = true};
		s->nthreads++;
	}
	return t;
}

int rasp_nt_stream_init(struct rasp_nt_stream *s, struct rasp_nt_out *out, size_t block_cap)
{
	memset(s, 0, sizeof(*s));
	if (!out || block_cap < 256)
		return -EINVAL;
	s->out = out;
	s->cap = block_cap;
	s->buf = malloc(block_cap);
	if (!s->buf)
		return -ENOMEM;
	rasp_nt_block_init(&s->blk, s->buf, s->cap);
	s->last_ts = INT64_MIN;
	return 0;
}

void rasp_nt_stream_fini(struct rasp_nt_stream *s)
{
	free(s->buf);
	free(s->threads);
	free(s->stacks);
	free(s->stack_slots);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* ---- stacks -------------------------------------------------------------------------------- */

struct rasp_nt_stack {
	uint64_t hash;
	size_t first, n; /* frames[first .. first + n) */
};

static uint64_t stack_hash(const uint64_t *f, size_t n)
{
	uint64_t h = mix(n);

	for (size_t i = 0; i < n; i++)
		h = mix(h ^ f[i]);
	return h;
}

static size_t stack_slot(const struct rasp_nt_stream *s, uint64_t h, const uint64_t *f, size_t n)
{
	size_t mask = s->capslots - 1, i;

	for (i = h & mask; s->stack_slots[i]; i = (i + 1) & mask) {
		const struct rasp_nt_stack *st = &s->stacks[s->stack_slots[i] - 1];

		if (st->hash == h && st->n == n &&
		    !memcmp(s->frames + st->first, f, n * sizeof(*f)))
			break;
	}
	return i;
}

/* The id of a stack in this region, interned when new; 0 without memory. */
static uint32_t stack_id(struct rasp_nt_stream *s, const uint64_t *f, size_t n)
{
	uint64_t h = stack_hash(f, n);
	size_t slot;

	if (2 * (s->nstacks + 1) > s->capslots) {
		size_t cap = s->capslots ? 2 * s->capslots : 256;
		uint32_t *v = calloc(cap, sizeof(*v));

		if (!v)
			return 0;
		free(s->stack_slots);
		s->stack_slots = v;
		s->capslots = cap;
		for (size_t k = 0; k < s->nstacks; k++) {
			const struct rasp_nt_stack *st = &s->stacks[k];

			s->stack_slots[stack_slot(s, st->hash, s->frames + st->first, st->n)] =
			    (uint32_t)k + 1;
		}
	}
	slot = stack_slot(s, h, f, n);
	if (s->stack_slots[slot])
		return s->stack_slots[slot];
	if (s->nstacks == s->capstacks) {
		size_t cap = s->capstacks ? 2 * s->capstacks : 256;
		struct rasp_nt_stack *v = realloc(s->stacks, cap * sizeof(*v));

		if (!v)
			return 0;
		s->stacks = v;
		s->capstacks = cap;
	}
	if (s->capframes - s->nframes < n) {
		size_t cap = s->capframes ? 2 * s->capframes : 4096;
		uint64_t *v;

		while (cap - s->nframes < n)
			cap *= 2;
		v = realloc(s->frames, cap * sizeof(*v));
		if (!v)
			return 0;
		s->frames = v;
		s->capframes = cap;
	}
	memcpy(s->frames + s->nframes, f, n * sizeof(*f));
	s->stacks[s->nstacks] = (struct rasp_nt_stack){h, s->nframes, n};
	s->nframes += n;
	s->stack_slots[slot] = (uint32_t)++s->nstacks;
	return (uint32_t)s->nstacks;
}

/* The stacks interned since the last stack block, as one (before the events using them). */
static int write_stacks(struct rasp_nt_stream *s)
{
	size_t n = s->nstacks - s->written_stacks, len = 8, used = 0;
	uint8_t *buf;
	int rc;

	if (!n)
		return 0;
	for (size_t k = s->written_stacks; k < s->nstacks; k++)
		len += 4 + 8 * s->stacks[k].n;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	/* FirstId, Count, then each stack: its size in bytes and its frames (8-byte pointers). */
	for (int b = 0; b < 4; b++) {
		buf[b] = (uint8_t)((s->written_stacks + 1) >> (8 * b));
		buf[4 + b] = (uint8_t)(n >> (8 * b));
	}
	used = 8;
	for (size_t k = s->written_stacks; k < s->nstacks; k++) {
		const struct rasp_nt_stack *st = &s->stacks[k];
		uint32_t bytes = (uint32_t)(8 * st->n);

		for (int b = 0; b < 4; b++)
			buf[used++] = (uint8_t)(bytes >> (8 * b));
		for (size_t i = 0; i < st->n; i++)
			for (int b = 0; b < 8; b++)
				buf[used++] = (uint8_t)(s->frames[st->first + i] >> (8 * b));
	}
	rc = rasp_nt_write_block(s->out, "StackBlock", buf, used);
	free(buf);
	if (!rc)
		s->written_stacks = s->nstacks;
	return rc;
}

/* After a sequence point, stack ids start again at 1. */
static void forget_stacks(struct rasp_nt_stream *s)
{
	s->nstacks = s->written_stacks = s->nframes = 0;
	if (s->stack_slots)
		memset(s->stack_slots, 0, s->capslots * sizeof(*s->stack_slots));
}

static int write_metadata(struct rasp_nt_stream *s, unsigned desc, uint64_t tid, int64_t ts)
{
	uint8_t rec[1024], blk[1200];
	struct rasp_nt_block b;
	const struct rasp_event_desc *d = &rasp_event_descs[desc];
	/* .NET's own events go out as its runtime writes them (no name, no fields); rasp's own
	 * carry their names and fields so that any reader decodes them. */
	bool described = strcmp(d->provider, "Microsoft-Windows-DotNETRuntime") != 0;
	size_t n = rasp_nt_encode_metadata(s->next_meta + 1, d, described, rec, sizeof(rec));
	int rc;

	if (!n)
		return -EOVERFLOW;
	rasp_nt_block_init(&b, blk, sizeof(blk));
	if (rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.tid = tid, .ts = ts, .sorted = true}, rec,
			      n) != 0)
		return -EOVERFLOW;
	rasp_nt_block_finish(&b);
	rc = rasp_nt_write_block(s->out, "MetadataBlock", b.buf, b.len);
	if (!rc)
		s->meta_id[desc] = ++s->next_meta;
	return rc;
}

int rasp_nt_stream_declare(struct rasp_nt_stream *s, unsigned desc, uint64_t tid, int64_t ts)
{
	if (desc >= rasp_event_ndescs)
		return -EINVAL;
	return s->meta_id[desc] ? 0 : write_metadata(s, desc, tid, ts);
}

static int flush_block(struct rasp_nt_stream *s)
{
	int rc = write_stacks(s);

	if (!rc && s->blk.events) {
		rasp_nt_block_finish(&s->blk);
		rc = rasp_nt_write_block(s->out, "EventBlock", s->blk.buf, s->blk.len);
	}
	rasp_nt_block_init(&s->blk, s->buf, s->cap);
	return rc;
}

int rasp_nt_stream_event(struct rasp_nt_stream *s, unsigned desc, uint64_t tid, uint32_t seq,
			 int64_t ts, const void *payload, size_t len, const uint64_t *stack,
			 size_t nframes)
{
	struct rasp_nt_thread *t;
	struct rasp_nt_hdr h = {.seq = seq, .tid = tid, .capture = tid, .ts = ts, .sorted = true};
	int rc;

	if (desc >= RASP_EVENT_NDESCS || ts < s->last_ts || len > s->cap - 128)
		return -EINVAL;
	if (s->out->err)
		return s->out->err;
	t = thread_of(s, tid);
	if (!t)
		return -ENOMEM;
	/* Metadata precedes the EventBlock that uses it: the pending block is still unwritten. */
	if (!s->meta_id[desc] && (rc = write_metadata(s, desc, tid, ts)) != 0)
		return rc;
	h.meta = s->meta_id[desc];
	if (nframes && !(h.stack = stack_id(s, stack, nframes)))
		return -ENOMEM;
	if (rasp_nt_block_add(&s->blk, &h, payload, len) == -ENOSPC) {
		if ((rc = flush_block(s)) != 0)
			return rc;
		if ((rc = rasp_nt_block_add(&s->blk, &h, payload, len)) != 0)
			return rc;
	}
	t->seq = seq;
	t->dirty = true;
	s->last_ts = ts;
	s->events++;
	return 0;
}

int rasp_nt_stream_note(struct rasp_nt_stream *s, uint64_t tid, uint32_t seq)
{
	struct rasp_nt_thread *t = thread_of(s, tid);

	if (!t)
		return -ENOMEM;
	t->seq = seq;
	t->dirty = true;
	return 0;
}

uint32_t rasp_nt_stream_seq(const struct rasp_nt_stream *s, uint64_t tid)
{
	const struct rasp_nt_thread *t = find(s, tid);

	return t && t->used ? t->seq : 0;
}

int rasp_nt_stream_sequence_point(struct rasp_nt_stream *s, int64_t ts)
{
	uint64_t *tids;
	uint32_t *seqs;
	uint8_t *out;
	size_t n = 0, len, cap;
	int rc = flush_block(s);

	if (rc)
		return rc;
	for (size_t k = 0; k < s->capthreads; k++)
		n += s->threads[k].used && s->threads[k].dirty;
	if (!n)
		return 0;
	cap = 12 + 12 * n;
	tids = malloc(n * sizeof(*tids));
	seqs = malloc(n * sizeof(*seqs));
	out = malloc(cap);
	rc = -ENOMEM;
	if (tids && seqs && out) {
		n = 0;
		for (size_t k = 0; k < s->capthreads; k++)
			if (s->threads[k].used && s->threads[k].dirty) {
				tids[n] = s->threads[k].tid;
				seqs[n++] = s->threads[k].seq;
				s->threads[k].dirty = false;
			}
		if (ts < s->last_ts)
			ts = s->last_ts;
		len = rasp_nt_encode_sp(ts, tids, seqs, n, out, cap);
		rc = len ? rasp_nt_write_block(s->out, "SPBlock", out, len) : -EOVERFLOW;
		forget_stacks(s);
	}
	free(tids);
	free(seqs);
	free(out);
	return rc;
}
