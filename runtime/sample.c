/* Sampling (spec §3): the per-context PRNG (xoshiro256++), the geometric draw by inversion,
 * the heap-wide on/off decision with its SamplingConfigured/SamplingStopped announcements,
 * and the emission of AllocationSampled. Everything here runs on slow paths only. */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
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

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rasp__rng_next(uint64_t s[4])
{
	uint64_t result = rotl(s[0] + s[3], 23) + s[0];
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* p = 1/mean. mean 1 gives p = 1: log1p(-1) = -inf, the factor is -0 and every draw is 0. */
double rasp__inv_log_q(uint64_t mean)
{
	return 1.0 / log1p(-1.0 / (double)mean);
}

/* Failed trials before the next success: floor(ln(1-U) / ln(1-p)), U uniform in [0,1) with
 * 53 bits. 1-U = (2^53 - k) 2^-53 is exact in a double, so log(1-U) loses nothing against
 * log1p(-U) and glibc's log is about twice as fast. The largest value is about 36.7 * mean,
 * far below SIZE_MAX. */
void rasp__context_set_mean(struct rasp_context *c, uint64_t mean)
{
	c->mean = mean;
	c->inv_log_q = rasp__inv_log_q(mean);
	/* One division per change of mean, so that a draw never divides; +inf when p = 1. */
	c->neg_log_q = -1.0 / c->inv_log_q;
}

static uint64_t geometric_of(double v, double inv_log_q)
{
	/* g >= 0 (or -0) and < 2^63: truncation is floor, without libm's general floor. */
	return (uint64_t)(int64_t)(log(v) * inv_log_q);
}

static double next_v(struct rasp_context *c)
{
	return 1.0 - (double)(rasp__rng_next(c->rng) >> 11) * 0x1.0p-53;
}

uint64_t rasp__geometric(struct rasp_context *c)
{
	return geometric_of(next_v(c), c->inv_log_q);
}

/* The same draw by inversion, for callers that need its value only when it is below k: most
 * draws (at the default mean and an 8 KiB context, nine in ten) need no log. With V = 1-U,
 * G >= k  <=>  ln V <= k ln q  <=>  V <= q^k = e^-a, a = -k ln q; and 1 - a <= e^-a <=
 * 1 - a + a^2/2. V below the lower bound decides G >= k; anywhere else G is computed from
 * the same V as rasp__geometric would, so every decision and every value is the one full
 * inversion gives: a bound, not an approximation (the margin covers rounding in 1 - a). */
bool rasp__geometric_at_least(struct rasp_context *c, uint64_t k, uint64_t *g)
{
	double v = next_v(c), a;

	if (k == 0)
		return true;
	a = (double)k * c->neg_log_q; /* -k ln q; +inf when p = 1 (then the log decides) */
	if (a < 1.0 && v <= (1.0 - a) - 0x1.0p-40)
		return true;
	*g = geometric_of(v, c->inv_log_q);
	return *g >= k;
}

void rasp__context_redraw(struct rasp_context *c)
{
	uint64_t budget, avail;

	if (!c->sampling) {
		c->combined_limit = c->alloc_limit;
		return;
	}
	avail = c->alloc_limit - c->alloc_ptr;
	/* A budget at or past the context's end leaves combined_limit at alloc_limit; its value
	 * is then not needed (the next slow path draws afresh). */
	if (rasp__geometric_at_least(c, avail, &budget))
		c->combined_limit = c->alloc_limit;
	else
		c->combined_limit = c->alloc_ptr + (uintptr_t)budget;
}

/* Whether this slow path samples, and the trace's record of it. SamplingConfigured is
 * emitted whenever what the trace was told changes: sampling turned on, the mean changed
 * while on, or a consumer of SamplingConfigured appeared while on (a session that enabled
 * AllocationSampled first, or enabled Rasp_Runtime later); SamplingStopped when it turns
 * off. One thread wins each change (CAS to RASP__ANNOUNCING), emits, then publishes the new
 * state. The others wait for it: sampling neither before the SamplingConfigured that gives
 * the mean (the consumer would unbias with the wrong one) nor not at all (a thread that
 * skipped sampling while a first event on the announcing thread took milliseconds left
 * allocations unsampled that the trace claims were covered). The wait happens only at a
 * change. Cost per slow path otherwise: two tracepoint-state loads, one atomic exchange and
 * one atomic load. */
bool rasp__sampling_now(struct rasp_heap *h)
{
	int mode = atomic_load_explicit(&h->sampling_mode, memory_order_relaxed);
	uint64_t mean = atomic_load_explicit(&h->sampling_mean, memory_order_relaxed);
	int listening = rasp_event_sampling_configured_enabled();
	int heard = atomic_exchange_explicit(&h->config_listening, listening, memory_order_relaxed);
	uint64_t want, was;
	bool on;

	if (mode == RASP_SAMPLING_AUTO)
		on = rasp_event_allocation_sampled_enabled();
	else
		on = mode == RASP_SAMPLING_ON;
	want = on ? mean : 0;
	for (;;) {
		was = atomic_load_explicit(&h->sampling_announced, memory_order_acquire);
		if (was == RASP__ANNOUNCING) {
			/* Another thread is announcing: what it publishes covers a new
			 * listener too. */
			heard = listening;
			sched_yield();
			continue;
		}
		if (want == was && !(on && listening && !heard))
			return on;
		if (atomic_compare_exchange_strong(&h->sampling_announced, &was, RASP__ANNOUNCING))
			break;
		heard = listening; /* lost the race: the winner announced */
	}
	if (on) {
		if (was == 0)
			atomic_fetch_add_explicit(&h->starts, 1, memory_order_relaxed);
		rasp_event_sampling_configured(h->cfg.clr_instance_id, mean, h->cfg.alloc_quantum,
					       mode == RASP_SAMPLING_ON
						   ? RASP_MAP_SAMPLINGTRIGGERMAP_FORCED
						   : RASP_MAP_SAMPLINGTRIGGERMAP_SESSION);
	} else {
		rasp_event_sampling_stopped(h->cfg.clr_instance_id);
	}
	atomic_store_explicit(&h->sampling_announced, want, memory_order_release);
	return on;
}

void rasp__emit_sample(struct rasp_heap *h, uint32_t kind, const rasp_type_t *type, void *obj,
		       uint64_t z, uint64_t offset)
{
	atomic_fetch_add_explicit(&h->samples, 1, memory_order_relaxed);
	if (h->sample_hook)
		h->sample_hook(h->sample_hook_arg, kind, type, obj, z, offset);
	rasp_event_allocation_sampled(kind, h->cfg.clr_instance_id, (uintptr_t)type, type->name,
				      (uintptr_t)obj, z, offset);
}
