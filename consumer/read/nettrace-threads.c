/* NetTrace threads (nettrace-internal.h): the capture threads' sequence numbers and the losses
 * their jumps show, the V6 threads (defined, removed, reused) their events name, and the V6
 * thread blocks; both tables hashed (a file naming a million threads reads in linear time) and
 * within the limit threads. Everything reads through the cursor. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "nettrace-internal.h"

#define fail rasp__nt_fail

static uint64_t seq_hash(const void *ctx, size_t i)
{
	return rasp__nt_key_hash(ctx, ((const struct rasp_nt_reader *)ctx)->seqs[i].tid);
}

static int seq_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct rasp_nt_reader *)ctx)->seqs[i].tid == *(const uint64_t *)key;
}

/* The sequence state of a capture thread, made at its first use; NULL (failed: over the
 * limit threads, or out of memory). */
struct thread_seq *rasp__nt_seq_of(struct rasp_nt_reader *r, uint64_t tid, uint64_t at)
{
	size_t i, slot;

	if (rasp_index_reserve(&r->seq_ix, r->nseqs, seq_hash, r)) {
		fail(r, at, "out of memory (%zu capture threads)", r->nseqs);
		return NULL;
	}
	i = rasp_index_find(&r->seq_ix, rasp__nt_key_hash(r, tid), seq_eq, r, &tid, &slot);
	if (i != SIZE_MAX)
		return &r->seqs[i];
	if (r->nseqs >= r->lim.threads) {
		fail(r, at,
		     "capture thread %" PRIu64 ": more than %" PRIu32 " threads with sequence "
		     "numbers (limit threads = %" PRIu32 ")",
		     tid, r->lim.threads, r->lim.threads);
		return NULL;
	}
	if (rasp_array_grow((void **)&r->seqs, &r->capseqs, r->nseqs, sizeof(*r->seqs))) {
		fail(r, at, "out of memory (%zu capture threads)", r->nseqs);
		return NULL;
	}
	r->seqs[r->nseqs] = (struct thread_seq){tid, 0};
	rasp_index_put(&r->seq_ix, slot, r->nseqs);
	r->st.capture_threads = ++r->nseqs;
	return &r->seqs[r->nseqs - 1];
}

/* A sequence number seen for a capture thread: a jump is lost events (TraceEvent's rule:
 * not counted after 0, a thread id's first use or reuse). 0 or -1 (failed). */
int rasp__nt_note_seq(struct rasp_nt_reader *r, uint64_t tid, uint32_t seq, uint64_t at)
{
	struct thread_seq *t = rasp__nt_seq_of(r, tid, at);

	if (!t)
		return -1;
	if (t->last && seq != t->last + 1 && seq - t->last - 1 < UINT32_C(0x80000000))
		r->lost += (uint32_t)(seq - t->last - 1);
	if (!t->last || seq - t->last < UINT32_C(0x80000000))
		t->last = seq;
	return 0;
}

static uint64_t thread_hash(const void *ctx, size_t i)
{
	return rasp__nt_key_hash(ctx, ((const struct rasp_nt_reader *)ctx)->threads[i].index);
}

static int thread_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct rasp_nt_reader *)ctx)->threads[i].index == *(const uint64_t *)key;
}

/* The slot of a V6 thread index, live or removed, or NULL. */
static struct v6_thread *thread_find(const struct rasp_nt_reader *r, uint64_t index)
{
	size_t slot, i;

	if (!r->thread_ix.size)
		return NULL;
	i = rasp_index_find(&r->thread_ix, rasp__nt_key_hash(r, index), thread_eq, r, &index,
			    &slot);
	return i == SIZE_MAX ? NULL : &r->threads[i];
}

const struct v6_thread *rasp__nt_v6_thread(const struct rasp_nt_reader *r, uint64_t index)
{
	const struct v6_thread *t = thread_find(r, index);

	return t && t->live ? t : NULL;
}

static void threads_note(struct rasp_nt_reader *r)
{
	r->st.threads = r->nthreads - r->deadthreads;
	if (r->st.threads > r->st.threads_peak)
		r->st.threads_peak = r->st.threads;
}

/* Forgets every V6 thread (a sequence point's flag 1). */
void rasp__nt_threads_flush(struct rasp_nt_reader *r)
{
	free(r->threads);
	r->threads = NULL;
	r->nthreads = r->capthreads = r->deadthreads = 0;
	rasp_index_free(&r->thread_ix);
	threads_note(r);
}

void rasp__nt_threads_free(struct rasp_nt_reader *r)
{
	rasp__nt_threads_flush(r);
	free(r->seqs);
	r->seqs = NULL;
	r->nseqs = r->capseqs = 0;
	rasp_index_free(&r->seq_ix);
}

/* Drops removed threads' slots once they are most of the table: each removal costs O(1)
 * amortised, and the table follows the threads alive. 0 or -1 (out of memory). */
static int threads_compact(struct rasp_nt_reader *r)
{
	size_t n = 0;

	if (r->deadthreads < 64 || r->deadthreads < r->nthreads / 2)
		return 0;
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].live)
			r->threads[n++] = r->threads[i];
	r->nthreads = n;
	r->deadthreads = 0;
	return rasp_index_rebuild(&r->thread_ix, n, thread_hash, r) ? -1 : 0;
}

static bool skip_string(struct rasp_cursor *c)
{
	uint32_t n;

	return rasp_cursor_varuint32(c, &n) && rasp_cursor_skip(c, n);
}

/* A V6 thread block: each row defines an index, or defines it again (the later row wins). */
int rasp__nt_v6_threads(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	while (rasp_cursor_left(c)) {
		uint16_t size = 0;
		const uint8_t *p;
		struct rasp_cursor t;
		struct v6_thread th = {.pid = -1, .live = true}, *old;
		size_t slot;

		if (!rasp_cursor_u16le(c, &size) || !(p = rasp_cursor_take(c, size)))
			return fail(r, rasp_cursor_offset(c), "thread row cut short");
		t = rasp_cursor_make(p, size, rasp_cursor_offset(c) - size);
		if (!rasp_cursor_varuint64(&t, &th.index))
			return fail(r, t.origin, "thread row cut short");
		while (rasp_cursor_left(&t)) {
			uint8_t kind = 0;
			uint64_t v = 0;

			rasp_cursor_u8(&t, &kind);
			if (kind == 1 || kind == 4) { /* a name; a key and a value */
				skip_string(&t);
				if (kind == 4)
					skip_string(&t);
			} else if (kind == 2 || kind == 3) {
				rasp_cursor_varuint64(&t, &v);
				if (kind == 2)
					th.pid = (int64_t)v;
				else
					th.tid = v;
			} else {
				return fail(r, rasp_cursor_offset(&t) - 1,
					    "unknown thread field %u", kind);
			}
			if (t.failed)
				return fail(r, t.origin, "thread row cut short");
		}
		old = thread_find(r, th.index);
		if ((!old || !old->live) && r->nthreads - r->deadthreads >= r->lim.threads)
			return fail(r, t.origin,
				    "thread index %" PRIu64 ": more than %" PRIu32 " threads "
				    "defined at once (limit threads = %" PRIu32 ")",
				    th.index, r->lim.threads, r->lim.threads);
		if (old) {
			r->deadthreads -= !old->live;
			*old = th;
			threads_note(r);
			continue;
		}
		if (rasp_index_reserve(&r->thread_ix, r->nthreads, thread_hash, r) ||
		    rasp_array_grow((void **)&r->threads, &r->capthreads, r->nthreads,
				    sizeof(*r->threads)))
			return fail(r, t.origin, "out of memory (%zu threads)", r->nthreads);
		rasp_index_find(&r->thread_ix, rasp__nt_key_hash(r, th.index), thread_eq, r,
				&th.index, &slot);
		r->threads[r->nthreads] = th;
		rasp_index_put(&r->thread_ix, slot, r->nthreads);
		r->nthreads++;
		threads_note(r);
	}
	return 0;
}

/* A V6 remove-thread block: each thread's final sequence number, and the index freed. */
int rasp__nt_v6_remove_threads(struct rasp_nt_reader *r, struct rasp_cursor *c)
{
	while (rasp_cursor_left(c)) {
		uint64_t index = 0, at = rasp_cursor_offset(c);
		uint32_t seq = 0;
		struct v6_thread *t;

		if (!rasp_cursor_varuint64(c, &index) || !rasp_cursor_varuint32(c, &seq))
			return fail(r, rasp_cursor_offset(c), "remove-thread block cut short");
		t = thread_find(r, index);
		if (!t || !t->live)
			continue;
		if (rasp__nt_note_seq(r, t->tid, seq + 1, at))
			return -1;
		rasp__nt_seq_of(r, t->tid, at)->last = seq; /* a final number, not an event */
		t->live = false;
		r->deadthreads++;
		threads_note(r);
		if (threads_compact(r))
			return fail(r, at, "out of memory (%zu threads)", r->nthreads);
	}
	return 0;
}
