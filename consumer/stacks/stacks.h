/* Call stacks of samples, interned: each distinct (process, frames) once, by a small id, so a
 * tally keys its cells by stack with one integer and memory grows with distinct stacks, not
 * samples. Frames are instruction pointers (return addresses), innermost first, as the
 * events carry them. No babeltrace2 types. */
#ifndef RASP_CONSUMER_STACKS_H
#define RASP_CONSUMER_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "rasp/rasp.h" /* RASP_MAX_STACK_DEPTH */

/* Frames kept of a stack: as many as the runtime captures at most (.NET's deeper ones lose
 * their outermost frames). */
#define RASP_STACK_MAX_FRAMES RASP_MAX_STACK_DEPTH

struct rasp_stack {
	int64_t pid;
	uint64_t hash;
	size_t first; /* frames[first .. first + n) of the table */
	uint32_t n;
};

/* A thread's stack event (ClrStackWalk) waiting for the thread's next sample. */
struct rasp_pending_stack {
	int64_t pid, tid;
	uint32_t n;
	uint64_t frames[RASP_STACK_MAX_FRAMES];
};

struct rasp_stacks {
	struct rasp_stack *v; /* id i + 1 is v[i] */
	size_t n, cap;
	struct rasp_index index;
	uint64_t *frames;
	size_t nframes, capframes;
	struct rasp_pending_stack *pending; /* one per thread seen with a stack */
	size_t npending, cappending;
	struct rasp_index pending_index;
};

/* The id (>= 1) of (pid, frames[0..n)), interned when new; n is cut at
 * RASP_STACK_MAX_FRAMES. 0 and n = 0 for no stack; -ENOMEM as a negative int64. */
int64_t rasp_stacks_intern(struct rasp_stacks *s, int64_t pid, const uint64_t *frames, size_t n);
/* Stack id (>= 1, below rasp_stacks_count + 1): its process, frames and their number. */
const struct rasp_stack *rasp_stacks_get(const struct rasp_stacks *s, uint32_t id);
static inline const uint64_t *rasp_stacks_frames(const struct rasp_stacks *s,
						 const struct rasp_stack *st)
{
	return s->frames + st->first;
}
void rasp_stacks_free(struct rasp_stacks *s);

/* A stack event of (pid, tid): the frames of the thread's next sample (a later one replaces
 * it). 0 or -ENOMEM. */
int rasp_stacks_pend(struct rasp_stacks *s, int64_t pid, int64_t tid, const uint64_t *frames,
		     size_t n);
/* The stack waiting for (pid, tid)'s sample, taken (the next sample has none unless another
 * stack event comes): its frames and their number, 0 when none waits. */
size_t rasp_stacks_take(struct rasp_stacks *s, int64_t pid, int64_t tid, const uint64_t **frames);

#endif /* RASP_CONSUMER_STACKS_H */
