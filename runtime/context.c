/* Per-thread allocation contexts (CoreCLR's ee_alloc_context): attach on first use, the
 * thread-local lookup, their chunk (refill, retire), combined_limit (redraw, and its sync
 * when contexts are enumerated), retirement at thread exit, and the allocation fast and slow
 * paths. Every chunk and limit field of a context is written here and nowhere else (the
 * sampling fields are sample.c's). The fast path is the only code here that runs per
 * allocation; the rest is cold. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Live heaps, so a thread exiting after a heap was destroyed never touches it. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rasp_heap *registry;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

/* The calling thread's contexts, one per heap it allocated from. */
struct thread_entry {
	uint64_t heap_id;
	struct rasp_context *ctx;
	struct thread_entry *next;
};

/* One-entry cache of the last heap used: the lookup in rasp_alloc is two loads and two
 * compares. Keyed by pointer and id because a destroyed heap's address may be reused.
 * initial-exec TLS: a direct %fs-relative access instead of a __tls_get_addr call. */
struct thread_cache {
	struct rasp_heap *heap;
	uint64_t heap_id;
	struct rasp_context *ctx;
};

static const char no_heap; /* the cache's "empty" key: never a heap, never NULL */
#define TLS_MODEL __attribute__((tls_model("initial-exec")))
static __thread struct thread_cache tcache TLS_MODEL = {(struct rasp_heap *)&no_heap, 0, NULL};
static __thread struct thread_entry *tentries TLS_MODEL;

int rasp__heap_register(struct rasp_heap *h)
{
	pthread_mutex_lock(&registry_lock);
	h->reg_next = registry;
	registry = h;
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

void rasp__heap_unregister(struct rasp_heap *h)
{
	struct rasp_heap **pp;

	pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp; pp = &(*pp)->reg_next) {
		if (*pp == h) {
			*pp = h->reg_next;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

/* registry_lock held. Compares ids of live heaps only: a dead heap is never dereferenced. */
static struct rasp_heap *registry_find(uint64_t id)
{
	struct rasp_heap *h;

	for (h = registry; h; h = h->reg_next)
		if (h->id == id)
			return h;
	return NULL;
}

static void context_unlink(struct rasp_heap *h, struct rasp_context *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		h->contexts = c->next;
	if (c->next)
		c->next->prev = c->prev;
	atomic_fetch_sub(&h->contexts_n, 1);
}

/* Thread exit: retire this thread's contexts (their chunks go back to their regions) and
 * free them. Runs in the exiting thread, which owns them; the heap lock orders it against
 * enumeration by other threads. */
static void thread_exit(void *unused)
{
	struct thread_entry *e, *en;
	struct rasp_heap *h;

	(void)unused;
	pthread_mutex_lock(&registry_lock);
	for (e = tentries; e; e = en) {
		en = e->next;
		h = registry_find(e->heap_id);
		if (h) {
			pthread_mutex_lock(&h->lock);
			rasp__context_retire(e->ctx);
			e->ctx->combined_limit = 0; /* retired: every allocation takes the slow path */
			context_unlink(h, e->ctx);
			pthread_mutex_unlock(&h->lock);
			free(e->ctx);
		}
		free(e);
	}
	pthread_mutex_unlock(&registry_lock);
	tentries = NULL;
	tcache.heap = (struct rasp_heap *)&no_heap;
	tcache.heap_id = 0;
	tcache.ctx = NULL;
}

static void make_key(void)
{
	if (pthread_key_create(&exit_key, thread_exit) != 0) {
		/* Without it contexts of exited threads stay attached until heap destroy: a
		 * leak of one chunk per thread, not a correctness problem. */
		fprintf(stderr, "rasp: pthread_key_create failed; thread exit will not retire "
				"allocation contexts\n");
	}
}

void rasp__thread_forget_heap(struct rasp_heap *h)
{
	struct thread_entry **pp = &tentries, *e;

	while ((e = *pp)) {
		if (e->heap_id == h->id) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
	if (tcache.heap == h) {
		tcache.heap = (struct rasp_heap *)&no_heap;
		tcache.ctx = NULL;
	}
}

struct rasp_context *rasp__context_attach(struct rasp_heap *h)
{
	struct thread_entry *e;
	struct rasp_context *c;

	for (e = tentries; e; e = e->next)
		if (e->heap_id == h->id)
			goto found;
	e = malloc(sizeof(*e));
	/* 64-byte aligned: the three fast-path words share one line with nothing written by
	 * other threads. */
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!e || !c) {
		free(e);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->heap = h;
	c->owner = pthread_self();
	atomic_init(&c->busy, 0);
	pthread_mutex_lock(&h->lock);
	c->index = h->next_ctx_index++;
	c->next = h->contexts;
	if (h->contexts)
		h->contexts->prev = c;
	h->contexts = c;
	pthread_mutex_unlock(&h->lock);
	atomic_fetch_add(&h->contexts_n, 1);
	rasp__rng_seed(c, &h->cfg);
	e->heap_id = h->id;
	e->ctx = c;
	e->next = tentries;
	tentries = e;
	pthread_once(&key_once, make_key);
	pthread_setspecific(exit_key, (void *)1);
found:
	tcache.heap = h;
	tcache.heap_id = h->id;
	tcache.ctx = e->ctx;
	return e->ctx;
}

/* ---- The context's chunk and limits (only this file writes them) ----------------------------- */

/* combined_limit from alloc_ptr with a fresh draw: the sampling budget folded into the limit
 * (spec §3), or the chunk's end when sampling is off. A budget at or past the chunk's end
 * leaves combined_limit at alloc_limit; its value is then not needed (the next slow path
 * draws afresh, and discarding unused trials is allowed). */
static void context_redraw(struct rasp_context *c)
{
	uint64_t budget;

	if (!c->sampling || rasp__geometric_at_least(c, c->alloc_limit - c->alloc_ptr, &budget))
		c->combined_limit = c->alloc_limit;
	else
		c->combined_limit = c->alloc_ptr + (uintptr_t)budget;
}

/* heap->lock held. Gives the chunk back: the bytes used become live bytes of the region,
 * the unused tail becomes a filler so the region stays walkable. Leaves the context without
 * a chunk (alloc_ptr = alloc_limit = 0); combined_limit is then 0 or redrawn by the caller. */
void rasp__context_retire(struct rasp_context *c)
{
	struct rasp__region *r = c->region;
	uintptr_t tail;

	if (r) {
		tail = c->alloc_limit - c->alloc_ptr;
		if (tail >= 8)
			*(uint64_t *)c->alloc_ptr = (uint64_t)tail | RASP__HDR_FREE;
		c->region = NULL;
		rasp__region_adjust(r, (int64_t)(c->alloc_ptr - c->chunk_start) - RASP__REF_BIAS);
	}
	c->alloc_ptr = c->alloc_limit = c->chunk_start = 0;
}

/* Slow path of the owning thread: swaps the chunk for a new one of max(quantum, z) bytes (or
 * what is left of the current region, if that still holds z: less waste at region ends). */
static int context_refill(struct rasp_context *c, size_t z)
{
	struct rasp_heap *h = c->heap;
	size_t want = z > h->cfg.alloc_quantum ? z : h->cfg.alloc_quantum;
	struct rasp__chunk chunk;
	int ret;

	pthread_mutex_lock(&h->lock);
	rasp__context_retire(c);
	ret = rasp__region_carve(h, z, want, &chunk);
	if (ret == 0) {
		c->region = chunk.region;
		c->chunk_start = c->alloc_ptr = chunk.start;
		c->alloc_limit = chunk.end;
	}
	pthread_mutex_unlock(&h->lock);
	if (ret == 0)
		atomic_fetch_add_explicit(&h->refills, 1, memory_order_relaxed);
	return ret;
}

/* combined_limit must follow any change of alloc_ptr/alloc_limit made by someone other than
 * the owner: a stale one lets the next fast path bump past the real limit. */
static void context_sync(struct rasp_context *c, uintptr_t ptr0, uintptr_t lim0, uintptr_t comb0)
{
	if (c->alloc_ptr == ptr0 && c->alloc_limit == lim0)
		return;
	if (c->alloc_ptr > c->alloc_limit) {
		fprintf(stderr, "rasp: context enumeration left alloc_ptr past alloc_limit\n");
		abort();
	}
	if (!c->alloc_limit || !c->sampling) {
		c->combined_limit = c->alloc_limit;
		if (!c->alloc_limit)
			c->alloc_ptr = 0;
	} else if (c->alloc_ptr == ptr0) {
		/* Same budget, fewer bytes: clamping keeps "combined == limit means budget >=
		 * avail", which the slow path relies on. */
		c->combined_limit = comb0 < c->alloc_limit ? comb0 : c->alloc_limit;
	} else {
		context_redraw(c); /* discarding cached trials is allowed */
	}
}

void rasp__contexts_enumerate(struct rasp_heap *h, rasp__context_fn fn, void *arg)
{
	struct rasp_context *c;
	uintptr_t ptr0, lim0, comb0;

	for (c = h->contexts; c; c = c->next) {
#if RASP__DEBUG
		if (atomic_load(&c->busy) && !pthread_equal(c->owner, pthread_self())) {
			fprintf(stderr,
				"rasp: allocation context %p is in use by its thread during "
				"a whole-heap operation; the owning threads must be "
				"quiescent (see rasp.h)\n",
				(void *)c);
			abort();
		}
#endif
		ptr0 = c->alloc_ptr;
		lim0 = c->alloc_limit;
		comb0 = c->combined_limit;
		fn(c, arg);
		context_sync(c, ptr0, lim0, comb0);
	}
}

/* Everything but the bump: argument errors, the sampling decision (spec §3), refill, large and
 * pinned objects, the event, the thread's adoption of a new sampling state, and the redraw that
 * every slow path ends with. Cold and never inlined: the fast path stays one screen. */
RASP__NOINLINE void *rasp__alloc_slow(struct rasp_context *c, const rasp_type_t *type, size_t size,
				      unsigned flags)
{
	struct rasp_heap *h = c->heap;
	uint64_t budget = 0, avail, mean;
	bool was_sampling, sampled = false;
	uintptr_t p;
	void *obj;
	size_t z;
	int kind;

	if (!type || size == 0 || (flags & ~RASP_ALLOC_PINNED) || type->heap != h) {
		errno = EINVAL;
		return NULL;
	}
	z = rasp__object_size_for(size);
	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	kind = (flags & RASP_ALLOC_PINNED)   ? RASP_KIND_PINNED
	       : z >= RASP_LARGE_OBJECT_SIZE ? RASP_KIND_LARGE
					     : RASP_KIND_SMALL;

	was_sampling = c->sampling;
	if (!was_sampling) {
		/* No trials pending: adopt the heap's state first, so that sampling switched on
		 * covers this object too (its announcement precedes any sample). */
		rasp__sampling_update(c);
		if (c->sampling)
			sampled = !rasp__geometric_at_least(c, z, &budget);
	} else {
		/* This object is decided by the trials the thread already drew, under the mean
		 * it announced; a change of state is adopted after its sample is out. */
		budget = c->combined_limit - c->alloc_ptr;
		avail = c->alloc_limit - c->alloc_ptr;
		sampled = c->combined_limit < c->alloc_limit && budget < z;
		if (!sampled && z > avail) {
			/* The context's remaining bytes were all failures; a fresh draw covers
			 * the rest of the object (its value matters only if it lands inside:
			 * budget = avail + draw < z). */
			uint64_t g;

			sampled = !rasp__geometric_at_least(c, z - avail, &g);
			budget = avail + (sampled ? g : 0);
		}
	}

	if (kind == RASP_KIND_SMALL) {
		obj = NULL;
		if (z <= c->alloc_limit - c->alloc_ptr || context_refill(c, z) == 0) {
			p = c->alloc_ptr;
			c->alloc_ptr = p + z;
			((struct rasp__header *)p)->size_flags = z;
			((struct rasp__header *)p)->type = type;
			obj = (void *)(p + RASP_OBJECT_HEADER_SIZE);
		}
	} else {
		obj = rasp__alloc_outside(h, z, kind);
		if (obj)
			rasp__header_of(obj)->type = type;
	}
	mean = c->mean; /* what the object's trials were drawn under */
	if (obj && sampled)
		rasp__emit_sample(c, (uint32_t)kind, type, obj, z, budget, mean);
	if (was_sampling)
		rasp__sampling_update(c);
	context_redraw(c);
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	return obj;
}

/* The fast path: one compare, z > combined_limit - alloc_ptr (alloc_ptr + z > combined_limit
 * without overflow: alloc_ptr <= combined_limit always holds), covers: context exhausted,
 * sample due, context not initialised or retired, and, folded in without a branch, every
 * argument the bump cannot take (size 0 or past the small-object range, a flag, no type):
 * those make z all ones. Sampling on or off, an allocation that is not sampled runs exactly
 * these instructions: 33 in rasp_alloc (thread-cache lookup included), 29 in
 * rasp_context_alloc, gcc 12 -O2 x86-64, ret included; callgrind agrees (32.98 per call,
 * docs/performance.md). */
static inline void *alloc_fast(struct rasp_context *c, const rasp_type_t *type, size_t size,
			       unsigned flags)
{
	uintptr_t p = c->alloc_ptr;
	uintptr_t odd =
	    (uintptr_t)((size - 1 >= RASP__SMALL_MAX_PAYLOAD) | (flags != 0) | (type == NULL));
	uintptr_t z = ((size + RASP_OBJECT_HEADER_SIZE + 7) & ~(uintptr_t)7) | (0 - odd);

	if (RASP__UNLIKELY(z > c->combined_limit - p))
		return rasp__alloc_slow(c, type, size, flags);
	c->alloc_ptr = p + z;
	((struct rasp__header *)p)->size_flags = z;
	((struct rasp__header *)p)->type = type;
	return (void *)(p + RASP_OBJECT_HEADER_SIZE);
}

#if RASP__DEBUG
static void *alloc_checked(struct rasp_context *c, const rasp_type_t *type, size_t size,
			   unsigned flags)
{
	void *obj;

	if (!pthread_equal(c->owner, pthread_self())) {
		fprintf(stderr,
			"rasp: allocation context %p used by a thread that does not own "
			"it\n",
			(void *)c);
		abort();
	}
	if (type && type->heap != c->heap) { /* release builds catch it on slow paths only */
		errno = EINVAL;
		return NULL;
	}
	atomic_store(&c->busy, 1);
	obj = alloc_fast(c, type, size, flags);
	atomic_store(&c->busy, 0);
	return obj;
}
#define ALLOC alloc_checked
#else
#define ALLOC alloc_fast
#endif

RASP__NOINLINE static void *alloc_lookup(rasp_heap_t *h, const rasp_type_t *type, size_t size,
					 unsigned flags)
{
	struct rasp_context *c;

	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	c = rasp__context_attach(h);
	if (!c)
		return NULL;
	return ALLOC(c, type, size, flags);
}

void *rasp_alloc(rasp_heap_t *h, const rasp_type_t *type, size_t size, unsigned flags)
{
	if (RASP__UNLIKELY(tcache.heap != h || tcache.heap_id != h->id))
		return alloc_lookup(h, type, size, flags);
	return ALLOC(tcache.ctx, type, size, flags);
}

void *rasp_alloc_array(rasp_heap_t *h, const rasp_type_t *type, size_t count, size_t size,
		       unsigned flags)
{
	size_t n;

	if (__builtin_mul_overflow(count, size, &n)) {
		errno = EOVERFLOW;
		return NULL;
	}
	return rasp_alloc(h, type, n, flags);
}

rasp_context_t *rasp_context_get(rasp_heap_t *h)
{
	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	if (tcache.heap == h && tcache.heap_id == h->id)
		return tcache.ctx;
	return rasp__context_attach(h);
}

void *rasp_context_alloc(rasp_context_t *c, const rasp_type_t *type, size_t size, unsigned flags)
{
	if (RASP__UNLIKELY(!c)) {
		errno = EINVAL;
		return NULL;
	}
	return ALLOC(c, type, size, flags);
}
