/* Sampling (docs/sampling.md, "The model"): the per-context PRNG's seeding (xoshiro256++,
 * internal.h), the mean the geometric draw (exponential.h and .c) scales by, each thread's adoption
 * of the heap's sampling state with its SamplingConfigured and SamplingStopped announcements, the
 * emission of AllocationSampled with the mark it leaves on its object (its free is freed.c's; a
 * requested size it keeps, sample-sizes.c's). Everything here runs on slow paths only. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "rasp/events.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* One independent stream per context: from the OS, or, for reproducible runs, from the
 * configured seed and the context's attach order (so thread n of a run gets stream n). */
void rasp__rng_seed(struct rasp_context *c, const rasp_config_t *cfg)
{
	uint64_t x;
	int i;

	if (cfg->has_seed) {
		x = cfg->seed ^ (c->index * UINT64_C(0xd1b54a32d192ed03));
		for (i = 0; i < 4; i++)
			c->rng[i] = splitmix64(&x);
	} else {
		rasp__os_random(c->rng, sizeof(c->rng));
	}
	if (!(c->rng[0] | c->rng[1] | c->rng[2] | c->rng[3])) /* the one forbidden state */
		c->rng[0] = 1;
}

/* The draw's constant, once per change of mean so that a draw never divides: 1 / -ln(1-p),
 * p = 1/mean. At mean 1, log1p(-1) = -inf and the constant is +0: every draw is 0, every
 * byte sampled. */
void rasp__context_set_mean(struct rasp_context *c, uint64_t mean)
{
	c->mean = mean;
	c->draw_scale = -1.0 / rasp__log1p(-1.0 / (double)mean);
}

/* Adopts the heap's sampling state for the calling thread's next trials and tells the trace
 * when what it knows of this thread changes. Each thread announces for itself: the
 * SamplingConfigured (or SamplingStopped) a thread emits follows, in that thread, every sample
 * it drew under its previous state, so a consumer that weighs a thread's samples with its last
 * announced mean weighs each with the mean it was drawn under, however the threads interleave
 * (one heap-wide announcement could not order other threads' samples in flight). A thread
 * also re-announces when a SamplingConfigured listener appears (a session that enabled
 * Rasp_Runtime after sampling started). Where nothing changed, the inline part in internal.h
 * answers without coming here; no shared write either way. rasp__sampling_update_full returns
 * true when the thread samples under another state from here (sampling_change). */
static void announce(struct rasp_context *c, uint64_t mean, int mode)
{
	struct rasp_heap *h = c->heap;

	atomic_store_explicit(&h->announced, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rasp__frames_gen, 1, memory_order_relaxed);
	if (h->announce_hook)
		h->announce_hook(h->sample_hook_arg, mean);
	rasp_event_sampling_configured(h->cfg.clr_instance_id, mean, h->cfg.alloc_quantum,
				       mode == RASP_SAMPLING_ON
					   ? RASP_MAP_SAMPLINGTRIGGERMAP_FORCED
					   : RASP_MAP_SAMPLINGTRIGGERMAP_SESSION);
}

/* The change itself: rare, out of line, so the check keeps few registers (its prologue and
 * epilogue were 17 of its ~55 instructions when this was inline). Returns true when the thread
 * samples from here under another state (sampling switched, or another mean), so its pending
 * draws, drawn under the old one, go (alloc.c redraws them). An announcement of the same
 * state to a new listener (or the second one to a new LTTng listener) returns false and keeps
 * the draws: they were drawn under the mean it announces, the trials are memoryless, and
 * redrawing there consumed the thread's stream at a point set by the clock, so a seeded run
 * under rasp record gave other samples each time (test-record-seed.c). */
RASP__NOINLINE static bool sampling_change(struct rasp_context *c, int mode, uint64_t mean, bool on)
{
	struct rasp_heap *h = c->heap;
	bool changed = on != c->sampling || mean != c->mean;

	if (on) {
		if (!c->sampling)
			atomic_fetch_add_explicit(&h->starts, 1, memory_order_relaxed);
		rasp__context_set_mean(c, mean);
		announce(c, mean, mode);
	} else {
		if (h->announce_hook)
			h->announce_hook(h->sample_hook_arg, 0);
		rasp_event_sampling_stopped(h->cfg.clr_instance_id);
	}
	c->sampling = on;
	return changed;
}

/* Whether a confirmation to a new LTTng listener is due now; if so, the next one's time (or
 * none after the last). */
static bool confirm_due(struct rasp_context *c)
{
	uint64_t now = rasp__os_now_ns();

	if (now < c->lttng_confirm_ns)
		return false;
	c->lttng_confirm_ns = 0;
	if (c->lttng_confirms && --c->lttng_confirms) {
		c->lttng_confirm_wait_ms *= 2;
		c->lttng_confirm_ns = now + (uint64_t)c->lttng_confirm_wait_ms * 1000000;
	}
	return true;
}

/* A sample while confirmations are pending: the one due goes first (the mean the thread
 * drew under, unchanged), if LTTng still listens. */
RASP__NOINLINE static void confirm_before_sample(struct rasp_context *c)
{
	if (!rasp__event_sampling_configured_word()) {
		c->lttng_confirm_ns = 0;
		return;
	}
	if (confirm_due(c))
		announce(c, c->mean,
			 atomic_load_explicit(&c->heap->sampling_mode, memory_order_relaxed));
}

bool rasp__sampling_update_full(struct rasp_context *c)
{
	struct rasp_heap *h = c->heap;
	/* The generation first (acquire): the mode and mean read next are at least those of
	 * the rasp_heap_set_sampling that set it. */
	uint32_t gen = atomic_load_explicit(&h->state_gen, memory_order_acquire);
	int mode = atomic_load_explicit(&h->sampling_mode, memory_order_relaxed);
	uint64_t mean = atomic_load_explicit(&h->sampling_mean, memory_order_relaxed);
	/* The EventPipe state word before the epoch and mask it is made of (acquire): if it is
	 * unchanged at a later check, neither changed since the words this update reads (a
	 * change between the two reads changes the word again, and the next check comes here). */
	uint64_t ep_state = rasp__events_state_peek();
	/* The epoch first, through the call that pins this thread's records to it (acquire): a
	 * session's start publishes its events in the mask before its epoch, so a thread that
	 * sees the new epoch sees the new mask too, and never records into a session it has not
	 * announced to. (Mask first, a thread could pair the old mask with the new epoch.) */
	uint32_t epoch = rasp_events_session_epoch();
	/* The words once, and the states from them, so that what the inline check compares with
	 * is what this update decided on. */
	int sampled_word = rasp__event_allocation_sampled_word();
	int configured_word = rasp__event_sampling_configured_word();
	uint64_t mask = rasp__events_mask_peek();
	bool lttng_listens = configured_word != 0;
	bool ep_listens = (mask >> RASP_DESC_RASP_RUNTIME_SAMPLINGCONFIGURED) & 1;
	bool sampled_on =
	    sampled_word != 0 || ((mask >> RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED) & 1);
	bool on = mode == RASP_SAMPLING_AUTO ? sampled_on : mode == RASP_SAMPLING_ON;
	/* A new listener, on either side: an LTTng session enabled SamplingConfigured, or the
	 * EventPipe side did, or an EventPipe session started beside one that had it (each
	 * session needs the mean in its own stream). Either side's listener is new even while
	 * the other listens: the announcement goes to both, the one that had it sees it twice. */
	bool lttng_new = lttng_listens && c->seen_configured == 0, confirm = false;
	bool new_listener =
	    lttng_new ||
	    (ep_listens && (!((c->seen_mask >> RASP_DESC_RASP_RUNTIME_SAMPLINGCONFIGURED) & 1) ||
			    epoch != c->ep_epoch));

	/* LTTng enables a session's events in a process before the session records there (lttng
	 * start: the events, then the start), so the announcement to a new LTTng listener may be
	 * lost; it was, for both threads of a test program, in 2 of 5 runs under TSan, and the
	 * one confirmation 100 ms later was lost too on a loaded machine. The thread announces
	 * RASP__LTTNG_CONFIRMS more times, 0.1 to 3.1 s later, keeping its draws
	 * (sampling_change), each due at its next sample (rasp__emit_listened, which reads the
	 * clock at its 1st, 2nd, 4th, 8th and every 16th: what needs the mean is a sample) or full
	 * update, whichever comes first. Its inline check matches meanwhile: made to fail until the
	 * last confirmation, it sent every lean miss to the generic way for 3.1 s, 2.2% of
	 * `small`'s instructions under rasp record. */
	if (!lttng_listens) {
		c->lttng_confirm_ns = 0;
	} else if (lttng_new) {
		c->lttng_confirm_wait_ms = RASP__LTTNG_CONFIRM_NS / 1000000;
		c->lttng_confirms = RASP__LTTNG_CONFIRMS;
		c->lttng_confirm_ns = rasp__os_now_ns() + RASP__LTTNG_CONFIRM_NS;
	} else if (c->lttng_confirm_ns) {
		confirm = confirm_due(c);
	}
	new_listener = new_listener || confirm;
	c->seen_sampled = sampled_word;
	c->seen_configured = configured_word;
	c->seen_mask = mask;
	c->seen_ep_state = ep_state;
	c->listened = sampled_on;
	c->ep_epoch = epoch;
	c->state_gen = gen;
	c->unchecked = 0;
	if (on == c->sampling && (!on || (mean == c->mean && !new_listener)))
		return false;
	return sampling_change(c, mode, mean, on);
}

/* Out of line: its frame array (RASP_MAX_STACK_DEPTH words) stays off every sample's stack.
 * A heap with a runtime's frames callback carries those frames instead of native ones, or
 * before them (native_frames). */
RASP__NOINLINE static void emit_stack(struct rasp_heap *h)
{
	uintptr_t frames[RASP_MAX_STACK_DEPTH];
	size_t n = h->frames_fn ? rasp__frames_capture(h, frames, h->cfg.stack_depth)
				: rasp__stack_capture(frames, h->cfg.stack_depth);

	rasp_event_clr_stack_walk(h->cfg.clr_instance_id, 0, 0, (uint32_t)n, frames);
}

/* A sample someone may take: an announcement first if an EventPipe session started, the hook,
 * the stack, the event, and the mark on `own`, the object's own header (its block's, or an
 * aligned object's inside it), with its ObjectSize kept where the heap counts requested
 * sizes. */
static inline __attribute__((always_inline)) void emit(struct rasp_context *c, uint32_t kind,
						       const rasp_type_t *type, void *obj,
						       struct rasp__header *own, uint64_t z,
						       uint64_t offset)
{
	struct rasp_heap *h = c->heap;
	uint64_t mean = c->mean;

	/* The clock at the thread's 1st, 2nd, 4th and 8th sample while confirmations are
	 * pending, then every 16th (30 instructions a read under callgrind, 0.07% of `mixed`
	 * under rasp record when read at each): a thread of few samples still confirms at one,
	 * a busy one at most 15 samples late. */
	if (RASP__UNLIKELY(c->lttng_confirm_ns)) {
		uint32_t t = ++c->confirm_tick;

		if (!(t & 15) || (t < 16 && !(t & (t - 1))))
			confirm_before_sample(c);
	}
	/* An EventPipe session started since the thread last announced: the mean this sample was
	 * drawn under goes first, so the new session weighs it right. The epoch is read again
	 * through the call that pins the thread's records to it. */
	if (rasp__events_epoch_peek() != c->ep_epoch) {
		c->ep_epoch = rasp_events_session_epoch();
		if (rasp__event_sampling_configured_on())
			announce(c, mean,
				 atomic_load_explicit(&h->sampling_mode, memory_order_relaxed));
	}
	if (h->sample_hook)
		h->sample_hook(h->sample_hook_arg, kind, type, obj, z, offset, mean);
	/* The stack goes just before its sample, on the same thread (the manifest's contract:
	 * ClrStackWalk describes the next event), only when a session wants it. */
	if (h->cfg.stack_depth && rasp__event_clr_stack_walk_on())
		emit_stack(h);
	if (rasp__event_allocation_sampled_on()) {
		rasp_event_allocation_sampled(kind, h->cfg.clr_instance_id, (uintptr_t)type,
					      type->name, (uintptr_t)obj, z, offset);
	} else if (!h->sample_hook) {
		return; /* no one saw it: nothing to pair its free with */
	}
	/* The size its free will say, where the block does not tell it (before the mark: the
	 * free that reads it follows the mark). */
	if (h->cfg.requested_sizes)
		(void)rasp__sample_size_put(h, obj, z);
	/* Seen: its free will say so (free.c tests the mark with the free bit, no cost to the
	 * unsampled). The object is not the program's yet (or, resized in place, its owner's
	 * thread is in the call), so no other thread writes its header. */
	own->word |= RASP__HDR_SAMPLED;
	if (!atomic_load_explicit(&h->marked, memory_order_relaxed))
		atomic_store_explicit(&h->marked, 1, memory_order_relaxed);
}

RASP__NOINLINE void *rasp__emit_listened(struct rasp_context *c, uint32_t kind,
					 const rasp_type_t *type, void *obj, uint64_t z,
					 uint64_t offset)
{
	emit(c, kind, type, obj, rasp__header_of(obj), z, offset);
	return obj;
}

RASP__NOINLINE void rasp__emit_listened_at(struct rasp_context *c, uint32_t kind,
					   const rasp_type_t *type, void *addr,
					   struct rasp__header *own, uint64_t z, uint64_t offset)
{
	emit(c, kind, type, addr, own, z, offset);
}
