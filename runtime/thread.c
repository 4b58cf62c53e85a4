/* A thread's side of its contexts: its entries (one context per heap it allocates from), the
 * one-entry cache of its last heap (exported for rasp/inline.h), attach on first use and
 * rasp_context_get, the exit key whose destructor ends its contexts, the registry of live heaps
 * that thread exit and destroy consult, and the fork handlers. Cold: the fast path reads the
 * cache alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * is not defined, and a caller built without AddressSanitizer fails to load. */
__thread struct rasp_inline_cache rasp__tcache TLS_MODEL = {NO_HEAP, NULL};
#else
RASP_API __thread struct rasp_inline_cache rasp_inline_cache_v1 TLS_MODEL = {NO_HEAP, NULL};
#endif
#define tcache rasp__tcache

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
 * be weighed with whichever announced last (at means 256 times apart, 256 times too much or
 * too little). So a heap
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
 * at the fork: without the handlers, 34 of 300 children hung). In the child only the forking thread
 * lives: the epoch goes up, so destroy no longer writes through the owner_cache of contexts
 * of threads that do not exist there (their stacks, which held their TLS, may be unmapped),
 * and the forking thread publishes its own again at its next attach. */
/* Every heap's lock too (after the registry's, the order rasp__heap_unregister takes them):
 * a slow path of another thread holding one at the fork left the child's next slow path on
 * that heap waiting forever, which a program allocating across fork with librasp-malloc
 * reached (test-malloc-process: 1 fork in about 300). */
static void fork_prepare(void)
{
	pthread_mutex_lock(&registry_lock);
	for (struct rasp_heap *h = registry; h; h = h->reg_next)
		pthread_mutex_lock(&h->lock);
}

static void unlock_heaps(void)
{
	for (struct rasp_heap *h = registry; h; h = h->reg_next)
		pthread_mutex_unlock(&h->lock);
}

static void fork_parent(void)
{
	unlock_heaps();
	pthread_mutex_unlock(&registry_lock);
}

static void fork_child(void)
{
	/* What any thread kept of its frees of sampled objects is the parent's to tell
	 * (freed.c): the child frees those blocks with its next batch, silently. */
	for (struct rasp_heap *h = registry; h; h = h->reg_next)
		for (struct rasp_context *c = h->contexts; c; c = c->next)
			rasp__freed_forked(c);
	fork_epoch++;
	cache_set(NO_HEAP, NULL);
	unlock_heaps();
	pthread_mutex_unlock(&registry_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void install_atfork(void)
{
	if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
		fprintf(stderr, "rasp: pthread_atfork failed; a fork's child must not allocate "
				"from or destroy a heap of its parent's\n");
}

/* At load, before librasp's provider loads (a constructor of default priority): handlers of
 * a fork's child run in the order they were installed, so the registry lock is released
 * before LTTng-UST's child handler starts its listener threads, which allocate (their TLS) and,
 * where rasp is the process's malloc (librasp-malloc), attach contexts: installed at the
 * first heap instead, after the provider's, every fork of such a process waited out
 * LTTng-UST's registration timeout (3 s) with the lock held (test-malloc-fork). */
__attribute__((constructor(101))) static void atfork_at_load(void)
{
	pthread_once(&atfork_once, install_atfork);
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

/* Thread exit: this thread's queued frees go out, its pages are abandoned to their heaps (an
 * empty one goes back to its segment), and its contexts are kept by their heaps for the next
 * thread (never freed before the heap: see struct rasp_context). Runs in the exiting thread,
 * which owns them; the heap lock orders it against enumeration by other threads. */
static void thread_exit(void *unused)
{
	struct thread_entry *e, *en;

	(void)unused;
	exited = true;
	key_set = false; /* the key's value is NULL again: a later attach sets it anew */
	pthread_mutex_lock(&registry_lock);
	for (e = tentries; e; e = en) {
		en = e->next;
		if (registry_find(e->heap_id)) /* (else its context went with its heap) */
			rasp__context_exit(e->ctx);
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
 * (test_entries_of_destroyed_heaps_dropped). Their contexts went with their heaps; only the ids are
 * compared. */
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

void rasp__thread_each_context(void (*fn)(struct rasp_heap *h, struct rasp_context *c))
{
	struct rasp_heap *h;

	pthread_mutex_lock(&registry_lock);
	for (struct thread_entry *e = tentries; e; e = e->next)
		if ((h = registry_find(e->heap_id))) /* (else its context went with its heap) */
			fn(h, e->ctx);
	pthread_mutex_unlock(&registry_lock);
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

/* Lets rasp_heap_destroy clear this thread's cache key (rasp__heap_unregister): published
 * only while thread_exit is sure to run, and unset it, before the thread's TLS goes: the
 * exit key set for this thread (pthread_setspecific can fail), and thread_exit not yet run
 * (a key destructor of the program's that allocates after it, in the last round of
 * destructors, would leave a pointer into a dead thread's TLS, and destroy would write
 * through it). Returns whether the context's owner_cache is this thread's, in this
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
	c = rasp__context_new(h);
	if (!c) {
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	e->heap_id = h->id;
	e->ctx = c;
	e->next = tentries;
	tentries = e;
	pthread_once(&key_once, make_key);
	/* (without key_ok, exit_key is no key of ours) */
	if (key_ok && pthread_setspecific(exit_key, (void *)1) == 0)
		key_set = true;
found:
	/* The cache only where destroy can clear it (publish_owner); else every allocation
	 * looks its heap up, a correct slow way. */
	if (publish_owner(e->ctx))
		cache_set(h, e->ctx);
	return e->ctx;
}

rasp_context_t *rasp_context_get(rasp_heap_t *h)
{
	if (!h) {
		errno = EINVAL;
		return NULL;
	}
	if (rasp__context_cache_is(h))
		return rasp__context_cache_ctx();
	return rasp__context_attach(h);
}
