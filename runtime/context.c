/* Per-thread allocation contexts (CoreCLR's ee_alloc_context): attach on first use, the
 * thread-local lookup, their windows over the per-class free lists (refill, retire, the
 * sampling budget folded in), thread exit, and the allocation fast and slow
 * paths. Every window field of a context is written here and nowhere else (the sampling
 * fields are sample.c's, the page lists page.c's). The fast path is the only code here that
 * runs per allocation; the rest is cold. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exponential.h"
#include "internal.h"
#include "rasp/inline.h"

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

/* One-entry cache of the last heap used: the lookup in rasp_alloc is a load and a compare.
 * Keyed by the heap's address alone: a destroyed heap's address may be reused, so
 * rasp_heap_destroy clears the key of every thread that holds it (rasp__heap_unregister),
 * the key's only write by another thread, hence atomic (relaxed: the heap's destruction is
 * ordered before any use of a new heap at its address by whatever told the thread of the
 * new one). Keying by (address, never-reused id) instead cost rasp_alloc 3 instructions
 * more, every allocation. initial-exec TLS: a direct %fs-relative access instead of a
 * __tls_get_addr call. Exported: rasp/inline.h's fast path reads it (and the context's hot
 * array) in the caller; the asserts below hold the layout it compiles in. */
static const char no_heap; /* the cache's "empty" key: never a heap, never NULL */
#define NO_HEAP	  ((struct rasp_heap *)&no_heap)
#define TLS_MODEL __attribute__((tls_model("initial-exec")))
#ifdef RASP__ASAN
/* Free blocks are poisoned in this build: no caller may pop them, so the inline path's symbol
 * is not defined, and a caller built without AddressSanitizer fails to load (review). */
__thread struct rasp_inline_cache rasp__tcache TLS_MODEL = {NO_HEAP, NULL};
#else
RASP_API __thread struct rasp_inline_cache rasp_inline_cache_v1 TLS_MODEL = {NO_HEAP, NULL};
#endif
#define tcache rasp__tcache

_Static_assert(sizeof(struct rasp__window) == 128, "a window's index is its class shifted");
/* rasp__alloc_miss finds a class's window from its hot entry's offset in the context. */
#define RASP__WIN_PER_HOT (sizeof(struct rasp__window) / sizeof(struct rasp__hot))
_Static_assert(offsetof(struct rasp_context, hot) == 0 &&
		   sizeof(struct rasp__window) == RASP__WIN_PER_HOT * sizeof(struct rasp__hot),
	       "a class's window is at c->win plus its hot entry's offset times the ratio");
_Static_assert(sizeof(struct rasp__hot) == sizeof(struct rasp_inline_hot) &&
		   offsetof(struct rasp__hot, n) == offsetof(struct rasp_inline_hot, n) &&
		   offsetof(struct rasp__hot, free) == offsetof(struct rasp_inline_hot, free) &&
		   offsetof(struct rasp_context, hot) == 0,
	       "rasp/inline.h's layout of a context's classes");
_Static_assert(RASP__HDR_FREE == 1 && RASP_OBJECT_HEADER_SIZE == 8 &&
		   RASP_INLINE_MAX_SIZE + RASP_OBJECT_HEADER_SIZE <= RASP__TABLE_MAX,
	       "rasp/inline.h's header and sizes");

static inline struct rasp_heap *cached_heap(void)
{
	return __atomic_load_n(&tcache.heap, __ATOMIC_RELAXED);
}

static inline struct rasp_context *cached_ctx(void)
{
	return (struct rasp_context *)(void *)tcache.ctx;
}

static inline void cache_set(struct rasp_heap *h, struct rasp_context *c)
{
	__atomic_store_n(&tcache.heap, h, __ATOMIC_RELAXED);
	tcache.ctx = (struct rasp_inline_hot *)(void *)c;
}
static __thread struct thread_entry *tentries TLS_MODEL;
/* This thread's exit key value is set (thread_exit will run), and thread_exit has run (a
 * later key destructor allocating again: another round may not come). */
static __thread bool key_set TLS_MODEL, exited TLS_MODEL;
/* Bumped in a fork's child (fork_child); registry_lock or single-threaded. */
static uint64_t fork_epoch;
__thread char rasp__tls_anchor TLS_MODEL;

/* A heap's events carry its ClrInstanceID, and a consumer weighs a thread's samples of one
 * instance with that instance's mean: two live heaps with one id, at different means, would
 * be weighed with whichever announced last (found by review: 256 times too much). So a heap
 * whose id a live heap of the process has already takes the lowest free one: the first heap
 * keeps the configured id (0 by default, as .NET's runtime). */
static void unique_instance_id(struct rasp_heap *h)
{
	static uint64_t used[65536 / 64];
	struct rasp_heap *o;
	bool clash = false;

	for (o = registry; o; o = o->reg_next)
		clash |= o->cfg.clr_instance_id == h->cfg.clr_instance_id;
	if (!clash)
		return;
	memset(used, 0, sizeof(used));
	for (o = registry; o; o = o->reg_next)
		used[o->cfg.clr_instance_id / 64] |= UINT64_C(1) << (o->cfg.clr_instance_id % 64);
	for (unsigned i = 0; i < 65536 / 64; i++)
		if (~used[i]) {
			h->cfg.clr_instance_id =
			    (uint16_t)(i * 64 + (unsigned)__builtin_ctzll(~used[i]));
			return;
		}
	/* 65536 live heaps: ids repeat (their samples may then be weighed with each other's
	 * means). */
}

/* fork: the registry lock is held across it, so the child finds it free and the registry
 * whole (the child's first attach takes it; another thread of the parent may have held it
 * at the fork: 34 of 300 children hung in review). In the child only the forking thread
 * lives: the epoch goes up, so destroy no longer writes through the owner_cache of contexts
 * of threads that do not exist there (their stacks, which held their TLS, may be unmapped),
 * and the forking thread publishes its own again at its next attach. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&registry_lock);
}

static void fork_child(void)
{
	fork_epoch++;
	cache_set(NO_HEAP, NULL);
	pthread_mutex_unlock(&registry_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void install_atfork(void)
{
	if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
		fprintf(stderr, "rasp: pthread_atfork failed; a fork's child must not allocate "
				"from or destroy a heap of its parent's\n");
}

int rasp__heap_register(struct rasp_heap *h)
{
	pthread_once(&atfork_once, install_atfork); /* before any context can exist */
	pthread_mutex_lock(&registry_lock);
	unique_instance_id(h);
	h->reg_next = registry;
	registry = h;
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

void rasp__heap_unregister(struct rasp_heap *h)
{
	struct rasp_heap **pp, *key;
	struct rasp_context *c;

	pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp; pp = &(*pp)->reg_next) {
		if (*pp == h) {
			*pp = h->reg_next;
			break;
		}
	}
	/* Every live owner's cache that names h is cleared. A context's owner_cache is set only
	 * while its thread is sure to run thread_exit before its TLS goes (publish_owner), and
	 * thread_exit, which unsets it, waits for registry_lock: so every owner_cache of this
	 * process's epoch is a live thread's (one of before a fork names a thread the child
	 * does not have). A compare-and-swap, not a store: the owner may be switching its cache
	 * to another heap meanwhile, which must stand. */
	pthread_mutex_lock(&h->lock);
	for (c = h->contexts; c; c = c->next) {
		key = h;
		if (c->owner_cache && c->owner_epoch == fork_epoch)
			__atomic_compare_exchange_n(c->owner_cache, &key, NO_HEAP, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&h->lock);
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

/* Thread exit: this thread's queued frees go out, its pages are abandoned to their heaps (an
 * empty one goes back to its segment), and its contexts are kept by their heaps for the next
 * thread (never freed before the heap: see struct rasp_context). Runs in the exiting thread,
 * which owns them; the heap lock orders it against enumeration by other threads. */
static void thread_exit(void *unused)
{
	struct thread_entry *e, *en;
	struct rasp_heap *h;
	struct rasp_context *c;

	(void)unused;
	exited = true;
	key_set = false; /* the key's value is NULL again: a later attach sets it anew */
	pthread_mutex_lock(&registry_lock);
	for (e = tentries; e; e = en) {
		en = e->next;
		h = registry_find(e->heap_id);
		c = e->ctx;
		if (h) {
			rasp__batch_flush(c);
			rasp__pages_abandon(c);
			pthread_mutex_lock(&h->lock);
			atomic_fetch_add(&h->samples_gone, atomic_load(&c->n_samples));
			atomic_fetch_add(&h->refills_gone, atomic_load(&c->n_refills));
			context_unlink(h, c);
			c->owner_cache = NULL; /* this thread's TLS goes with it */
			c->next = h->spare_contexts;
			h->spare_contexts = c;
			pthread_mutex_unlock(&h->lock);
		}
		free(e);
	}
	pthread_mutex_unlock(&registry_lock);
	tentries = NULL;
	cache_set(NO_HEAP, NULL);
}

static bool key_ok;

static void make_key(void)
{
	key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
	if (!key_ok) {
		/* Without it contexts of exited threads stay attached until heap destroy: a
		 * leak of one chunk per thread, not a correctness problem. */
		fprintf(stderr, "rasp: pthread_key_create failed; thread exit will not retire "
				"allocation contexts\n");
	}
}

/* Entries of heaps that other threads destroyed (rasp__thread_forget_heap reaches only the
 * destroying thread's list): dropped when this thread attaches to a heap, so a thread that
 * serves many short-lived heaps keeps an entry per live heap, not one per heap it ever used
 * (found by review). Their contexts went with their heaps; only the ids are compared. */
static void prune_dead_entries(void)
{
	struct thread_entry **pp = &tentries, *e;

	pthread_mutex_lock(&registry_lock);
	while ((e = *pp)) {
		if (!registry_find(e->heap_id)) {
			*pp = e->next;
			free(e);
		} else {
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

size_t rasp__thread_entries(void)
{
	size_t n = 0;

	for (struct thread_entry *e = tentries; e; e = e->next)
		n++;
	return n;
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
	if (cached_heap() == h)
		cache_set(NO_HEAP, NULL);
}

struct rasp_context *rasp__context_peek(struct rasp_heap *h)
{
	struct thread_entry *e;

	if (cached_heap() == h)
		return cached_ctx();
	for (e = tentries; e; e = e->next)
		if (e->heap_id == h->id)
			return e->ctx;
	return NULL;
}

/* Blocks a window may cover: an allocation quantum's worth, rounded up, at least 8. The window
 * bounds how long a thread keeps a sampling state after the heap's changed (it adopts the new
 * one at its next slow path), not what sampling costs: the budget is folded in whatever its
 * size. Rounded up, a full window is at least a quantum, so that checking the state at every
 * lean miss checks it no more often than once a quantum (rounded down, windows of 8160 bytes
 * at 48 B were checked every other miss). */
static uint32_t window_blocks(const struct rasp_context *c, unsigned k)
{
	uint32_t n = (uint32_t)((c->heap->cfg.alloc_quantum + rasp__class_size[k] - 1) /
				rasp__class_size[k]);

	return n < 8 ? 8 : n;
}

/* The list's blocks past the window under which a lean miss tops the list up from its pages
 * (rasp__alloc_miss): a window's and one, so that allocations and frees alternating keep full
 * windows with no refill (the miss takes one block, the window the next wb); no more than two
 * quanta's bytes for large blocks (at least one block). */
static uint32_t keep_blocks(const struct rasp_context *c, unsigned k)
{
	uint64_t n = 2 * (uint64_t)c->heap->cfg.alloc_quantum / rasp__class_size[k];

	return (n < 1 ? 1 : n < c->win[k].wb ? (uint32_t)n : c->win[k].wb) + 1;
}

/* The owner's frees of class k go onto its list while fewer blocks than this are past the
 * window, else onto their pages' lists (free.c): eight quanta's bytes (64 KiB by default), at
 * least twice `keep`. A bound this far from where a class's list usually is makes the free's
 * test predictable: at `keep` it went one way or the other at random under mixed sizes, and
 * `mixed` ran 1.35x and `fixed` 1.10x slower than with no cache at all, with fewer simulated
 * cache misses (so, we infer, mispredicted branches; this machine has no counters to show
 * them); at 2 and 4 quanta `mixed` was 1.03x and 1.02x slower, at 8 0.98x
 * (docs/performance.md). */
static uint32_t cache_blocks(const struct rasp_context *c, unsigned k)
{
	uint64_t n = 8 * (uint64_t)c->heap->cfg.alloc_quantum / rasp__class_size[k];
	uint32_t keep = c->win[k].keep;

	return n < 2 * keep ? 2 * keep : (uint32_t)n;
}

/* Lets rasp_heap_destroy clear this thread's cache key (rasp__heap_unregister): published
 * only while thread_exit is sure to run, and unset it, before the thread's TLS goes: the
 * exit key set for this thread (pthread_setspecific can fail), and thread_exit not yet run
 * (a key destructor of the program's that allocates after it, in the last round of
 * destructors, would leave a pointer into a dead thread's TLS; found by review, with a
 * fault in destroy). Returns whether the context's owner_cache is this thread's, in this
 * process: only then may the cache name its heap. */
static bool publish_owner(struct rasp_context *c)
{
	if (!key_set || exited)
		return false;
	if (c->owner_cache && c->owner_epoch == fork_epoch)
		return true;
	pthread_mutex_lock(&registry_lock); /* which destroy's clearing holds */
	c->owner_cache = &tcache.heap;
	c->owner_epoch = fork_epoch;
	pthread_mutex_unlock(&registry_lock);
	return true;
}

struct rasp_context *rasp__context_attach(struct rasp_heap *h)
{
	struct thread_entry *e;
	struct rasp_context *c;

	for (e = tentries; e; e = e->next)
		if (e->heap_id == h->id)
			goto found;
	prune_dead_entries();
	e = malloc(sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&h->lock);
	c = h->spare_contexts;
	if (c)
		h->spare_contexts = c->next;
	pthread_mutex_unlock(&h->lock);
	/* 64-byte aligned: the hot words of a class share lines with nothing other threads
	 * write. */
	if (!c)
		c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c) {
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->heap = h;
	for (unsigned k = 0; k < RASP__NCLASS; k++) {
		c->hot[k].bsize = rasp__class_size[k];
		c->win[k].wb = k ? window_blocks(c, k) : 0;
		c->win[k].keep = k ? keep_blocks(c, k) : 0;
		c->win[k].cache_max = k ? cache_blocks(c, k) : 0;
		rasp__window_set_cache(&c->win[k], c->win[k].cache_max);
	}
	c->state_gen = ~atomic_load(&h->state_gen); /* the first slow path checks */
	c->token = rasp__thread_token();
	c->owner = pthread_self();
	atomic_init(&c->busy, 0);
	pthread_mutex_lock(&h->lock);
	c->index = h->next_ctx_index++;
	c->prev = NULL;
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
	/* else exit_key is no key of ours (review) */
	if (key_ok && pthread_setspecific(exit_key, (void *)1) == 0)
		key_set = true;
found:
	/* The cache only where destroy can clear it (publish_owner); else every allocation
	 * looks its heap up, a correct slow way. */
	if (publish_owner(e->ctx))
		cache_set(h, e->ctx);
	return e->ctx;
}

/* ---- Windows (only this file writes them) --------------------------------------------------- */

/* A new window of class k over its list: `avail` blocks still in the current window plus its
 * rest, at most window_blocks; the sampling budget folded in (spec §3: combined_limit =
 * min(budget, window), here n = the blocks wholly before the sampled byte, gap = the window's
 * blocks from its block on). The budget is `r`, the exact count of failed trials before the
 * next success from here, when the caller knows it (`known`: the draw that covered the last
 * window or object goes on), else a fresh draw. A budget past the window's end keeps its
 * remainder in `after` for the next window: one draw per sample, not one per window (CoreCLR
 * redraws at every slow path, which is the same distribution: the remainder of a geometric
 * past a point is a fresh geometric). `sampling` is c->sampling, a constant in the sampled
 * block's short path. Inlined into its three callers. */
static inline __attribute__((always_inline)) void
window_set_at(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc, uintptr_t avail,
	      bool sampling, bool known, uint64_t r)
{
	uintptr_t b = hc->bsize, bytes;
	uint32_t blocks = (uint32_t)avail + rasp__rest(w), wb = w->wb;

	if (wb > blocks)
		wb = blocks;
	rasp__rest_set(w, blocks - wb);
	bytes = (uintptr_t)wb * b;
	c->unchecked += bytes;
	if (!sampling) {
		hc->n = wb;
		w->gap = 0;
		rasp__window_forget(w);
	} else {
		if (!known)
			r = rasp__geometric(c);
		if (r >= bytes) {
			hc->n = wb;
			w->gap = 0;
			w->after = r - bytes;
			w->known = true;
		} else { /* the sample falls in block n, off bytes in (a division per sample) */
			uintptr_t n = (uintptr_t)r / b;

			hc->n = n;
			w->gap = wb - n;
			w->off = (uintptr_t)r - n * b;
			rasp__window_forget(w);
		}
	}
	rasp__window_publish(w, wb);
}

/* Class k's window, from `avail` blocks left of it and the list's rest (window_set_at). */
static inline __attribute__((always_inline)) void window_set(struct rasp_context *c, unsigned k,
							     uintptr_t avail, bool sampling,
							     bool known, uint64_t r)
{
	window_set_at(c, &c->win[k], &c->hot[k], avail, sampling, known, r);
}

/* The thread adopted a new sampling state: every window is redrawn under it at once, so no
 * class goes on with trials of the old state (the announcement covers them all). */
static void windows_redraw(struct rasp_context *c)
{
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		rasp__window_forget(&c->win[k]); /* an empty window's remainder too: drawn under the
						  * old state */
		uintptr_t avail = c->hot[k].n + c->win[k].gap;

		if (avail || rasp__rest(&c->win[k]))
			window_set(c, k, avail, c->sampling, false, 0);
	}
}

void rasp__context_retire(struct rasp_context *c, void *arg)
{
	(void)arg;
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		/* Not into rest, which the owner's frees may be raising now (free.c): the owner
		 * counts these back at its next slow path, which trims (return_list). */
		c->win[k].retired += (uint32_t)(c->hot[k].n + c->win[k].gap);
		c->hot[k].n = 0;
		c->win[k].gap = 0;
		rasp__window_forget(&c->win[k]);
	}
	atomic_store_explicit(&c->trim, 1, memory_order_relaxed);
}

/* Collect asked (trim): every list goes back to its page and empty pages to their segments. */
static void context_trim(struct rasp_context *c)
{
	atomic_store_explicit(&c->trim, 0, memory_order_relaxed);
	pthread_mutex_lock(&c->heap->lock);
	rasp__pages_release_empty(c);
	pthread_mutex_unlock(&c->heap->lock);
}

void rasp__contexts_enumerate(struct rasp_heap *h, rasp__context_fn fn, void *arg)
{
	struct rasp_context *c;

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
		fn(c, arg);
	}
}

/* The class's list is used up: the next page with free blocks gives its whole local list. */
static int list_refill(struct rasp_context *c, unsigned k)
{
	struct rasp__window *w = &c->win[k];
	struct rasp__page *pg = rasp__page_find(c, k), *old = w->page;
	uint32_t n;

	if (!pg)
		return -ENOMEM;
	/* The owner's free cache's bound grows back when the list had run dry: a flush turned
	 * it off, and it comes back at half its bound before; then 4x a refill, so that a class
	 * that allocates again has it whole after a few refills. Not at a top-up: a thread freeing
	 * much and allocating now and then got one at each allocation, and its bound settled at 512
	 * blocks of 16 bytes on as many pages (review: 400 of 980 pages left after 4 million frees;
	 * 17 now). At its most, the common case, it is a compare. */
	if (!rasp__rest(w) && w->cache < w->cache_max)
		rasp__window_set_cache(w, !w->cache			? w->cache_after
					  : w->cache_max / 4 < w->cache ? w->cache_max
									: w->cache * 4);
	n = rasp__page_take_list(c, pg, &c->hot[k].free);
	rasp__rest_set(w, rasp__rest(w) + n);
	w->page = pg;
	/* The page left behind may have emptied while it was current, when rasp__page_empty
	 * let it be: now it is kept under the context's bound or released like any other. */
	if (old && old != pg && !rasp__relaxed_load32(&old->used))
		rasp__page_empty(c, old);
	atomic_store_explicit(&c->n_refills,
			      atomic_load_explicit(&c->n_refills, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	return 0;
}

static void *alloc_large(struct rasp_context *c, const rasp_type_t *type, size_t z, int kind)
{
	bool sampled = false;
	uint64_t budget = 0;
	void *obj;

	/* A large object's trials come from a fresh draw (memoryless: any point may start one). */
	if (rasp__sampling_update(c))
		windows_redraw(c);
	if (c->sampling) {
		budget = rasp__geometric(c);
		sampled = budget < z;
	}
	obj = rasp__large_alloc(c->heap, z, kind, type);
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	if (sampled)
		rasp__emit_sample(c, (uint32_t)kind, type, obj, z, budget);
	return obj;
}

/* A small object of class k and kind: the sampling decision (spec §3), the block from the
 * window, the list's rest or a refill, the event, the thread's adoption of a new sampling
 * state, and the next window. Inlined into both slow paths below. */
static inline __attribute__((always_inline)) void *
alloc_small(struct rasp_context *c, const rasp_type_t *type, unsigned k, int kind)
{
	uint64_t budget = 0, r = 0;
	uintptr_t b = rasp__class_size[k], avail; /* blocks left in the window */
	bool was_sampling, sampled = false;
	struct rasp__hot *hc = &c->hot[k];
	struct rasp__window *w = &c->win[k];
	struct rasp__header *p;

	was_sampling = c->sampling;
	w->flush_in = w->flush_at; /* a miss: the owner's frees are counted from here (free.c) */
	/* No trials pending: adopt the heap's state first, so that sampling switched on covers
	 * this object too (its announcement precedes any sample). Otherwise this object is
	 * decided by the trials the thread already drew, under the mean it announced; a change of
	 * state is adopted after its sample is out. */
	if (!was_sampling && rasp__state_check_due(c) && rasp__sampling_update(c))
		windows_redraw(c);
	avail = hc->n + w->gap;
	if (c->sampling) {
		/* r: failed trials from here to the next success. A sample pending in the window
		 * (gap > 0) is n blocks and off bytes on; with none, the window's bytes then its
		 * draw's remainder; unknown (a retired window), a fresh draw from here. */
		if (w->gap)
			r = hc->n * b + w->off;
		else if (w->known)
			r = hc->n * b + w->after;
		else
			r = rasp__geometric(c);
		sampled = r < b;
		budget = r;
		if (!sampled)
			r -= b;
	}

	/* The block: from the window, else from the list's rest, else from a page. */
	if (avail) {
		avail--;
	} else if (!rasp__rest(w) && list_refill(c, k) != 0) {
		hc->n = w->gap = 0;
		rasp__window_forget(w);
		rasp__window_publish(w, 0); /* (no window: rasp_heap_stats counts none held) */
		errno = ENOMEM;
		return NULL;
	} else {
		rasp__rest_set(w, rasp__rest(w) - 1);
	}
	p = hc->free;
	hc->free = rasp__hdr_next(p);
	/* The window as it stands, its pending draw dropped: consistent for a redraw. */
	hc->n = avail;
	w->gap = 0;
	rasp__window_forget(w);
	RASP__UNPOISON(p + 1, b - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type | ((uintptr_t)kind << RASP__HDR_KIND_SHIFT);
	if (sampled)
		rasp__emit_sample(c, (uint32_t)kind, type, p + 1, b, budget);
	/* The draw goes on into the next window unless it was spent on this object. */
	if (!was_sampling || !rasp__state_check_due(c) || !rasp__sampling_update(c))
		window_set(c, k, avail, c->sampling, c->sampling && !sampled, r);
	else
		windows_redraw(c); /* class k's included */
	return p + 1;
}

/* What a slow path does first: push the thread's queued cross-thread frees, and give lists
 * and empty pages back if a collect asked. */
static inline void pending_work(struct rasp_context *c)
{
	if (c->batch_n)
		rasp__batch_flush(c);
	if (RASP__UNLIKELY(atomic_load_explicit(&c->trim, memory_order_relaxed)))
		context_trim(c);
}

/* Everything else before it: argument errors, queued frees, a collect's trim, large and
 * pinned objects. Cold and never inlined. */
RASP__NOINLINE void *rasp__alloc_slow(struct rasp_context *c, const rasp_type_t *type, size_t size,
				      unsigned flags)
{
	struct rasp_heap *h = c->heap;
	size_t z;

	if (!type || size == 0 || (flags & ~RASP_ALLOC_PINNED) || type->heap != h) {
		errno = EINVAL;
		return NULL;
	}
	z = rasp__object_size_raw(size);
	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	pending_work(c);
	if (z > RASP__SMALL_MAX_Z)
		return alloc_large(
		    c, type, z, (flags & RASP_ALLOC_PINNED) ? RASP_KIND_PINNED : RASP_KIND_LARGE);
	return alloc_small(c, type, rasp__class_of(z),
			   (flags & RASP_ALLOC_PINNED) ? RASP_KIND_PINNED : RASP_KIND_SMALL);
}

/* The miss's generic way: apart from the lean miss, so that it keeps few registers (the
 * generic path inlined beside it cost every miss 14 instructions of saved registers). */
RASP__NOINLINE static void *miss_generic(struct rasp_context *c, const rasp_type_t *type,
					 struct rasp__hot *hc)
{
	pending_work(c);
	return alloc_small(c, type, (unsigned)(hc - c->hot), RASP_KIND_SMALL);
}

/* The lean miss found the thread's sampling state changed: the generic way adopts it, told
 * that a check is due (the lean misses do not count `unchecked`). Not while a new LTTng
 * listener's second announcement is pending (sample.c): the inline check then never matches
 * for RASP__LTTNG_CONFIRM_NS, and a full update with its clock read at every lean miss would
 * be a miss's cost many times over; the generic way checks once a quantum of its windows, as
 * it did before the lean miss checked at every entry (found by review). */
RASP__NOINLINE static void *miss_changed(struct rasp_context *c, const rasp_type_t *type,
					 struct rasp__hot *hc)
{
	if (!c->lttng_confirm_ns)
		c->unchecked = c->heap->cfg.alloc_quantum;
	return miss_generic(c, type, hc);
}

/* An argument error: errno EINVAL, no object (cold, called last). */
RASP__NOINLINE static void *einval(void)
{
	errno = EINVAL;
	return NULL;
}

/* The list's next block, made a small object of `type` (the lean misses' pop). */
static inline struct rasp__header *take_block(struct rasp__hot *hc, const rasp_type_t *type)
{
	struct rasp__header *p = hc->free;

	hc->free = rasp__hdr_next(p);
	RASP__UNPOISON(p + 1, hc->bsize - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type; /* RASP_KIND_SMALL */
	return p;
}

/* The lean miss at the sampled block, from its draw on: the class's next window starts with
 * that draw (window_set, `avail` blocks left of the window, then the list's rest), as
 * alloc_small does for a sampled object whose thread has no state to adopt, and the event
 * goes out with the sample's offset in it, last, as a tail call. */
static inline __attribute__((always_inline)) void *
sampled_finish(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc,
	       const rasp_type_t *type, uintptr_t avail, uint64_t off, struct rasp__header *p,
	       double e)
{
	w->gap = 0;
	w->flush_in = w->flush_at; /* a miss: the owner's frees are counted from here (free.c) */
	window_set_at(c, w, hc, avail, true, true, rasp__geometric_of(c, e));
	if (RASP__UNLIKELY(rasp__sample_counted_listened(c)))
		return rasp__emit_listened(c, RASP_KIND_SMALL, type, p + 1, hc->bsize, off);
	return p + 1;
}

/* The draw the ziggurat's tables do not decide (1.1%), and the rest, out of line. */
RASP__NOINLINE static void *sampled_slow(struct rasp_context *c, struct rasp__window *w,
					 struct rasp__hot *hc, const rasp_type_t *type,
					 uintptr_t avail, uint64_t off, struct rasp__header *p,
					 uint64_t u)
{
	return sampled_finish(c, w, hc, type, avail, off, p, rasp__exponential_slow(c->rng, u));
}

/* The lean miss at the sampled block: the object takes the list's next block, the next
 * window a fresh draw, the event goes out. Out of line, one call per sample, and with no call
 * but in tail position, so that it saves no registers (with the draw's slow path and the
 * event called in its middle, it saved six: 14 instructions a sample, callgrind). Returns the
 * object. */
RASP__OUTLINE __attribute__((returns_nonnull)) static void *
miss_sampled(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc,
	     const rasp_type_t *type, uintptr_t avail, uint64_t off)
{
	struct rasp__header *p = take_block(hc, type);
	uint64_t u;
	double e;

	if (RASP__UNLIKELY(!rasp__exponential_fast(c->rng, &u, &e)))
		return sampled_slow(c, w, hc, type, avail, off, p, u);
	return sampled_finish(c, w, hc, type, avail, off, p, e);
}

/* The lean miss with sampling on whose draw ends in this object or in the next window, or that
 * has no draw going on (`after` 0): the sample in this object (miss_sampled), no draw (the
 * generic way), or the next window cut before the block where the sample falls, as
 * window_set cuts it. Out of line: about one miss in six at 2 KiB blocks and the default mean,
 * fewer at smaller ones, and the others test one sign for all three. */
RASP__OUTLINE static void *miss_near(struct rasp_context *c, struct rasp__window *w,
				     struct rasp__hot *hc, const rasp_type_t *type, uint32_t left,
				     uint32_t wb)
{
	uintptr_t b = hc->bsize, n;
	uint64_t r;
	struct rasp__header *p;

	if (w->after < b) { /* the sample falls in this object, the list's next block */
		if (!w->known)
			return miss_generic(c, type, hc);
		rasp__rest_set(w, left);
		return miss_sampled(c, w, hc, type, 0, w->after);
	}
	p = take_block(hc, type);
	rasp__rest_set(w, left - wb);
	rasp__window_publish(w, wb);
	r = w->after - b; /* below the window's bytes: the sample falls in block n, off bytes in */
	n = r / b;
	hc->n = n;
	w->gap = wb - n;
	w->off = r - n * b;
	rasp__window_forget(w);
	return p + 1;
}

/* The lean miss's taking of its block and its next window, once its list has one; `sampling`
 * is c->sampling, a constant in each of miss_take_any's two copies. */
static inline __attribute__((always_inline)) void *
miss_take(struct rasp_context *c, struct rasp__window *w, struct rasp__hot *hc,
	  const rasp_type_t *type, const bool sampling)
{
	uintptr_t b = hc->bsize;
	uint64_t r = 0;	    /* trials, as alloc_small counts them: up to ~37 means, past 32 bits */
	uintptr_t wb, left; /* (32-bit counts, held as words: no copy to widen one for hc->n) */
	struct rasp__header *p;

	w->flush_in = w->flush_at;
	left = (uint32_t)(rasp__rest(w) - 1); /* the object takes one */
	wb = w->wb < left ? w->wb : left;
	/* With sampling on, the draw going on past this object and a whole next window: below
	 * 0 (a draw is far below 2^63 trials), the sample falls in one of them, or no draw goes
	 * on, which miss_near sorts out; else the next window is whole, `after` what is left.
	 * (Two tests, this object's and the window's, took 4 instructions more a miss.) */
	if (sampling) {
		r = w->after - b - (uint64_t)wb * b;
		if (RASP__UNLIKELY((int64_t)r < 0))
			return miss_near(c, w, hc, type, (uint32_t)left, (uint32_t)wb);
	}
	/* Then in an order that keeps few values live (each value held past here took a saved
	 * register, 12 instructions a miss for six): the block, the list and its account, and
	 * the window last. */
	p = take_block(hc, type);
	rasp__rest_set(w, (uint32_t)(left - wb));
	rasp__window_publish(w, (uint32_t)wb);
	hc->n = wb;
	if (sampling)
		w->after = r;
	return p + 1;
}

/* miss_take, its sampling test made once: a copy for each way (two tests of c->sampling took
 * 4 instructions a miss). */
static inline __attribute__((always_inline)) void *miss_take_any(struct rasp_context *c,
								 struct rasp__window *w,
								 struct rasp__hot *hc,
								 const rasp_type_t *type)
{
	if (c->sampling)
		return miss_take(c, w, hc, type, true);
	return miss_take(c, w, hc, type, false);
}

/* The lean miss whose list needs blocks first: refilled, or topped up, then taken as any. */
RASP__OUTLINE static void *miss_refill(struct rasp_context *c, struct rasp__hot *hc,
				       const rasp_type_t *type)
{
	unsigned k = (unsigned)(hc - c->hot);

	if (list_refill(c, k) != 0 && !rasp__rest(&c->win[k]))
		return miss_generic(c, type, hc); /* it says ENOMEM */
	return miss_take_any(c, &c->win[k], hc, type);
}

/* The fast path's miss: flags 0, a type, and the hot entry of the size's class, whose window
 * is used up; class 0 (a size of 0 or past the small range) goes the generic way. The
 * generic path's checks that the fast path already made are left out. Then the miss most
 * misses are (alloc_small decides the same, in fewer instructions), when no cross-thread
 * frees are queued, no trim is asked, and the check of the thread's sampling state, at every
 * lean miss, finds nothing changed. If the window ended at its sampled block (gap > 0),
 * that block is this object: miss_sampled. Else the window ran out at its end: the list is
 * refilled if it is empty (miss_refill), the object takes its next block and the next window
 * covers the blocks after it, as window_set would draw it. With sampling on, the draw that
 * covered the last window goes on (`known`): if the sample falls in this object, miss_sampled
 * takes it; else the window is cut before the block where the sample falls, if it falls in
 * it. Everything else goes to alloc_small (miss_generic): queued frees or a trim, a state to
 * adopt, no memory, or no draw going on (a class's first window, or a window retired or
 * redrawn). Every call here is a tail call, so the miss saves no registers (it saved six,
 * 14 instructions a miss, while the refill was a call in its middle). */
RASP__OUTLINE void *rasp__alloc_miss(struct rasp_context *c, const rasp_type_t *type, size_t size,
				     struct rasp__hot *hc)
{
	/* The class's window from its hot entry's offset, with no class index: the hot array
	 * is the context's first field, and a window is four hot entries' size, so w is
	 * c->win plus four times that offset (a subtraction and an lea; the index and then the
	 * window took six). The misses' other ways find the index from hc. */
	uintptr_t off = (uintptr_t)hc - (uintptr_t)c;
	struct rasp__window *w = (struct rasp__window *)((char *)c->win + off * RASP__WIN_PER_HOT);

	/* w computed once and kept: gcc otherwise recomputed it at each use and, short of
	 * registers for the values that recomputing kept live, saved three more. The empty asm
	 * makes w opaque, so it cannot be rebuilt; with w passed down to miss_take, an entry
	 * costs 11 instructions fewer (callgrind, bench/runtime/run.sh slowpath at 2 KiB: 97 ->
	 * 86 sampling off). */
	__asm__("" : "+r"(w));

	hc->n = 0; /* the fast path's decrement took it to -1 */
	if (off == 0)
		return rasp__alloc_slow(c, type, size, 0);
	if (RASP__UNLIKELY(type->heap != c->heap))
		return einval();
	/* One test of both words (a load, an `or` from memory, a branch: 3 instructions fewer
	 * than two tests). */
	if (RASP__UNLIKELY(
		(c->batch_n | (uint32_t)atomic_load_explicit(&c->trim, memory_order_relaxed)) != 0))
		return miss_generic(c, type, hc);
	/* The thread's sampling state, at every lean miss: a full window is at least a quantum
	 * (window_blocks), so that is about once a quantum of the class's allocation, and a
	 * separate test of whether a quantum had passed (with its count kept at every miss) took
	 * 5 instructions a miss to save none where a window is a quantum or more. */
	if (RASP__UNLIKELY(!rasp__sampling_unchanged(c)))
		return miss_changed(c, type, hc);
	if (w->gap) { /* the window ended at its sampled block: this object */
		if (c->sampling)
			return miss_sampled(c, w, hc, type, w->gap - 1, w->off);
		return miss_generic(c, type, hc);
	}
	/* Refilled when used up, and topped up (the page's list before the blocks left) while
	 * the window would be short and the owner's frees come back to the list: alternating
	 * allocations and frees then keep `keep` blocks here (free.c), so that is rare. Not
	 * when no frees come back (a producer whose objects another thread frees): topped up at
	 * every such miss, `prodcons` ran 1.3x slower. */
	uint32_t rest = rasp__rest(w);

	/* keep is at least 1, so an empty list is a short one: where the list is long enough,
	 * one compare (an empty list tested first took two more a miss). */
	if (rest < w->keep && (!rest || w->flush_in != w->flush_at))
		return miss_refill(c, hc, type);
	return miss_take_any(c, w, hc, type);
}

/* The fast path: the arguments' one branch, the object's size class, then one test, --n < 0
 * (CoreCLR's alloc_ptr + z > combined_limit, counted in blocks), which covers: window used up,
 * sample due, list empty, context retired, and, folded in, every size the pop cannot take (0
 * or past the small range select class 0, whose window is always empty). Sampling on or off,
 * an allocation that is not sampled runs exactly these instructions. A flag or a missing type
 * (rare, and always the same way at a call site) takes a separate, predictable branch: folding
 * it into the class as well cost 5 more instructions on every allocation. */
static inline void *alloc_fast(struct rasp_context *c, const rasp_type_t *type, size_t size,
			       unsigned flags)
{
	uintptr_t q = (size + RASP_OBJECT_HEADER_SIZE + 7) >> 3, k;
	struct rasp__header *p;
	struct rasp__hot *hc;

	if (RASP__UNLIKELY(flags != 0 || type == NULL))
		return rasp__alloc_slow(c, type, size, flags);
	k = RASP__LIKELY(q <= RASP__TABLE_MAX / 8) ? rasp__table_hot[q] : 0;
	hc = (struct rasp__hot *)((char *)c->hot + k);
	if (RASP__UNLIKELY(--hc->n < 0))
		return rasp__alloc_miss(c, type, size, hc);
	p = hc->free;
	hc->free = rasp__hdr_next(p);
	/* The next block's line, for the class's next allocation: its link was written when it
	 * was freed, often long ago (a burst freed, then allocated again), and the pop's load
	 * of it missed. One instruction on the fast path; `bulk` 5.5% faster, its allocations
	 * 0.178 to 0.167 s, the other workloads unchanged (docs/performance.md). */
	__builtin_prefetch(hc->free, 1);
	RASP__UNPOISON(p + 1, hc->bsize - RASP_OBJECT_HEADER_SIZE);
	p->word = (uintptr_t)type; /* RASP_KIND_SMALL: the type is the whole header */
	return p + 1;
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
	if (RASP__UNLIKELY(cached_heap() != h))
		return alloc_lookup(h, type, size, flags);
	return ALLOC(cached_ctx(), type, size, flags);
}

rasp_context_t *rasp_context_get(rasp_heap_t *h)
{
	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	if (cached_heap() == h)
		return cached_ctx();
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
