/* Per-thread allocation contexts (CoreCLR's ee_alloc_context), the heap's side: a context made
 * or reused for a thread (its windows sized), ended with its thread, every window ended by a
 * whole-heap operation (retire), and the enumeration those operations use. Nothing here runs
 * per allocation (alloc.c does). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

struct rasp_context *rasp__context_new(struct rasp_heap *h)
{
	struct rasp_context *c;

	pthread_mutex_lock(&h->lock);
	c = h->spare_contexts;
	if (c)
		h->spare_contexts = c->next;
	pthread_mutex_unlock(&h->lock);
	/* 64-byte aligned: the hot words of a class share lines with nothing other threads
	 * write. */
	if (!c)
		c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c)
		return NULL;
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
	return c;
}

void rasp__context_exit(struct rasp_context *c)
{
	struct rasp_heap *h = c->heap;

	rasp__freed_flush(h, c); /* (its blocks' cross-thread frees join the batch below) */
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
