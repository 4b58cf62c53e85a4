/* The frees of sampled objects: their hook, Rasp_Runtime:SampledObjectFreed to EventPipe at
 * once, and to LTTng a thread's frees kept together for one SampledObjectsFreed (docs/events.md).
 * An LTTng event costs some 1,400 instructions with rasp record's contexts; one per 64 frees
 * costs each about 22 of them, plus the clock read that times it. Their blocks stay off every
 * free list (marked free: a second free is refused as a double free) until the event is out,
 * so no later object at their address is sampled ahead of their free. Slow paths only. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "os.h"
#include "rasp/events.h"

/* A batch goes out when it is full, when its first free is rasp__freed_age_ns old at the
 * thread's next free of a sampled object (1 s: a consumer places each free at its own time, so
 * lateness costs only the live view's delay; at 10 or 100 ms, batches under callgrind's slowed
 * clock held fewer frees the busier the machine, and the instructions measured moved with the
 * load), or when its blocks hold RASP__FREED_HOLD_MAX (memory the program gave back and cannot
 * reuse yet); a large object's free sends it at once (its pages go back now). */
uint64_t rasp__freed_age_ns = 1000000000u;

static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
bool rasp__freed_keep_always;

/* At exit, before any object's destructors (atexit's handlers run first, LTTng-UST's own
 * with the other objects' after them): what the exiting thread kept goes out. Other
 * threads still running keep theirs (at most RASP__FREED_MAX each): their objects count as
 * live at the end of the trace (docs/events.md). */
static void exit_tell(void)
{
	rasp__thread_each_context(rasp__freed_tell);
}

static void exit_register(void)
{
	if (atexit(exit_tell) != 0)
		fprintf(stderr, "rasp: atexit failed; frees of sampled objects kept at exit will "
				"not reach the trace\n");
}

void rasp__freed_tell(struct rasp_heap *h, struct rasp_context *c)
{
	struct rasp__freed *f = &c->freed;
	uintptr_t addr[RASP__FREED_MAX];
	uint64_t now, age[RASP__FREED_MAX];
	uint32_t n = f->n - f->skip;

	if (n && rasp__event_sampled_objects_freed_on()) {
		now = rasp__os_now_ns();
		for (uint32_t i = 0; i < n; i++) {
			addr[i] = (uintptr_t)(f->blk[f->skip + i] + 1);
			age[i] = now > f->ns[f->skip + i] ? now - f->ns[f->skip + i] : 0;
		}
		rasp_event_sampled_objects_freed(h->cfg.clr_instance_id, (uint16_t)n, addr,
						 &f->size[f->skip], age);
	}
	f->n = f->skip = 0;
	f->bytes = 0;
}

void rasp__freed_flush(struct rasp_heap *h, struct rasp_context *c)
{
	struct rasp__freed *f = &c->freed;
	uint32_t n = f->n;

	if (!n)
		return;
	/* The event first (it empties the batch, its arrays left as they are), then the blocks
	 * from those arrays: their return frees no sampled object, so nothing joins the batch
	 * meanwhile. */
	rasp__freed_tell(h, c);
	for (uint32_t i = 0; i < n; i++)
		rasp__free_block(h, f->seg[i], f->blk[i]);
}

/* The thread's context on h to keep the free in: its cached one, else its entry's (a thread
 * that never allocated from h has none: its frees go out one by one). */
static struct rasp_context *keeper(struct rasp_heap *h)
{
	return rasp__context_cache_is(h) ? rasp__context_cache_ctx() : rasp__context_peek(h);
}

RASP__NOINLINE bool rasp__emit_freed(struct rasp_heap *h, struct rasp__header *own,
				     struct rasp__header *blk, struct rasp__segment *s, uint64_t z)
{
	uintptr_t addr = (uintptr_t)(blk + 1);
	struct rasp_context *c;

	own->word &= ~RASP__HDR_SAMPLED;
	if (h->free_hook)
		h->free_hook(h->sample_hook_arg, (void *)addr, z);
	if (!(rasp__event_sampled_objects_freed_word() || rasp__freed_keep_always) ||
	    !(c = keeper(h))) {
		/* No LTTng session wants batches (or no context to keep them): each free its own
		 * event, to LTTng and EventPipe, as they listen. What the thread kept for a
		 * session that stopped goes back. */
		if (rasp__event_sampled_object_freed_on())
			rasp_event_sampled_object_freed(h->cfg.clr_instance_id, addr, z);
		if (rasp__context_cache_is(h) && rasp__context_cache_ctx()->freed.n)
			rasp__freed_flush(h, rasp__context_cache_ctx());
		return false;
	}
	if ((rasp__events_mask_peek() >> RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED) & 1)
		rasp__event_sampled_object_freed_ep(h->cfg.clr_instance_id, addr, z);
	if (!c->freed.n)
		pthread_once(&exit_once, exit_register);
	rasp__freed_append(h, c, blk, s, z, s->kind == RASP__SEG_LARGE);
	return true;
}

/* A sampled object resized in place (alloc.c): its sample ends here, told before anything else
 * can happen at its address (its new sample, if any, follows at once), and its block stays
 * the object's. To LTTng, what the thread kept goes first, then this free in an event of its
 * own. */
RASP__NOINLINE void rasp__emit_freed_in_place(struct rasp_heap *h, struct rasp__header *own,
					      void *addr, uint64_t z)
{
	struct rasp_context *c;
	uint64_t age = 0;
	uintptr_t a = (uintptr_t)addr;

	own->word &= ~RASP__HDR_SAMPLED;
	if (h->free_hook)
		h->free_hook(h->sample_hook_arg, addr, z);
	if (!rasp__event_sampled_objects_freed_word()) {
		if (rasp__event_sampled_object_freed_on())
			rasp_event_sampled_object_freed(h->cfg.clr_instance_id, a, z);
		return;
	}
	if ((c = keeper(h)) && c->freed.n)
		rasp__freed_flush(h, c);
	rasp_event_sampled_objects_freed(h->cfg.clr_instance_id, 1, &a, &z, &age);
	if ((rasp__events_mask_peek() >> RASP_DESC_RASP_RUNTIME_SAMPLEDOBJECTFREED) & 1)
		rasp__event_sampled_object_freed_ep(h->cfg.clr_instance_id, a, z);
}
