/* Pages of a context (mimalloc's free-list sharding, our own code): each page has three free
 * lists. `local_free` holds blocks its owner freed (no atomic), `thread_free` blocks other
 * threads freed (one atomic push per batch, remote.c), and the never-touched tail is
 * formatted a few KiB at a time. A context takes a page's whole local list as its allocation
 * list (alloc.c); when that runs out, rasp__page_find looks for the next page with blocks.
 *
 * The class queue is taken in the order frees woke its pages. A page with no free block goes
 * on the owner's full list; the first free that reaches it brings it back to the queue's
 * tail, and refills take from the head, so each page has gathered frees while it waited
 * (mimalloc's order too). Taking the latest woken page first takes a page with one free
 * block at nearly every refill under random frees: 3.1 allocations per refill at 256 B
 * against 19.5, 317 instructions per allocate/free pair against 140. A sparse
 * page (under a quarter of its blocks in use) is passed over while others have blocks, so
 * that it may empty and serve any class.
 *
 * The owner's own free brings a page back at once; another thread's sets the owner's
 * full_dirty flag if it sees the page's `full` word set. The owner sets that word with a
 * plain store, not the Dekker pair's fence: random frees move pages to the full list and back
 * at nearly every free, and each fence waits for the stores before it (the freed blocks'
 * headers, cache misses) to drain, which cost 20% of the `cache` workload. The fence is paid
 * once per batch instead: pages moved since the last one stay marked `unfenced`, and before
 * the owner takes a new page of the class it fences once and checks their thread_free lists
 * (sweep_full). A free that read `full` as 0 pushed its blocks before that fence, so the check
 * sees them; one after it sees `full` set (C11's fence rules; the remote side is seq_cst). A
 * page's remote frees thus wait at most until the owner would grow the class.
 *
 * A page whose blocks are all back is returned to its segment unless it is its class's
 * current page. Pages of an exited thread are abandoned to the heap and adopted by the next
 * thread that needs a page of their class. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* What a free reads is on the page record's first cache line, and a refill's use of the page
 * it takes; a refill's search along a queue also reads `next`, `formatted` and `bytes`, on the
 * second line (the block test's divisor and bound took their places). */
_Static_assert(offsetof(struct rasp__page, div) + sizeof(uint64_t) <= 64 &&
		   offsetof(struct rasp__page, lim) + sizeof(uint64_t) <= 64,
	       "the page record's first line overflows");

/* The owner's side of the full-list handshake (see above): plain stores of `full` and one
 * fence per sweep. TSan has no fences (gcc refuses them under -fsanitize=thread), so its
 * builds make both sides' operations seq_cst instead, which is the same handshake as a
 * Dekker pair and costs the exchange per move that the fence saves elsewhere. */
#if defined(__SANITIZE_THREAD__)
#define FULL_ORDER    memory_order_seq_cst
#define SWEEP_FENCE() ((void)0)
#else
#define FULL_ORDER    memory_order_relaxed
#define SWEEP_FENCE() atomic_thread_fence(memory_order_seq_cst)
#endif

/* Pages of the class queue visited before a new page is taken. */
#define SEARCH_MAX 8
/* Abandoned pages tried per search. */
#define ADOPT_MAX 4
/* A page with under a quarter of its blocks in use (and all formatted) is passed over while
 * others have blocks: left alone, it may empty and go back to its segment for any class.
 * Without this, taking woken pages in turn (queue_append) spread allocation over every page
 * and `mixed` kept 6% more pages. */
static bool sparse(struct rasp__page *pg)
{
	return rasp__page_all_formatted(pg) &&
	       rasp__relaxed_load32(&pg->used) * 4 * pg->bsize < pg->bytes;
}

static void used_add(struct rasp__page *pg, int64_t d)
{
	atomic_store_explicit(&pg->used, (uint32_t)((int64_t)rasp__relaxed_load32(&pg->used) + d),
			      memory_order_relaxed);
}

void rasp__page_extend(struct rasp__page *pg, bool grow)
{
	/* Growing: as many bytes as the page has formatted already, from RASP__EXTEND_BYTES up
	 * to RASP__EXTEND_MAX (see internal.h). */
	size_t want = !grow || pg->formatted < RASP__EXTEND_BYTES ? RASP__EXTEND_BYTES
		      : pg->formatted > RASP__EXTEND_MAX	  ? RASP__EXTEND_MAX
								  : pg->formatted;
	uint32_t n = (uint32_t)(want / pg->bsize);
	const size_t bs = pg->bsize;
	uintptr_t b = pg->start + pg->formatted, last;

	if (n == 0)
		n = 1;
	if (n > (pg->bytes - pg->formatted) / bs)
		n = (uint32_t)((pg->bytes - pg->formatted) / bs);
	if (n == 0)
		return;
	/* Each block links to the next; the last to what the list held. A store and an add a
	 * block: formatting is about a tenth of an allocation's instructions on fresh pages. */
	last = b + (size_t)(n - 1) * bs;
	uintptr_t a = b;

#define LINK(x)                                                                                    \
	do {                                                                                       \
		struct rasp__header *hdr_ = (struct rasp__header *)(x);                            \
		hdr_->word = (x) + bs + RASP__HDR_FREE; /* | FREE */                               \
		RASP__POISON(hdr_ + 1, bs - RASP_OBJECT_HEADER_SIZE);                              \
	} while (0)
	/* Four blocks a turn: the loop's own compare and branch once per four. */
	for (; last - a > 3 * bs; a += 4 * bs) {
		LINK(a);
		LINK(a + bs);
		LINK(a + 2 * bs);
		LINK(a + 3 * bs);
	}
	for (; a < last; a += bs)
		LINK(a);
#undef LINK
	rasp__hdr_link((struct rasp__header *)last, pg->local_free);
	if (!pg->local_n)
		pg->local_tail = (struct rasp__header *)last;
	RASP__POISON((struct rasp__header *)last + 1, bs - RASP_OBJECT_HEADER_SIZE);
	pg->local_free = (struct rasp__header *)b;
	pg->local_n += n;
	pg->formatted += n * (uint32_t)bs;
}

uint32_t rasp__page_collect(struct rasp__page *pg)
{
	struct rasp__header *list, *tail;
	uint32_t n = 1, cap = rasp__page_capacity(pg);

	if (!atomic_load_explicit(&pg->thread_free, memory_order_relaxed))
		return 0;
	list = atomic_exchange_explicit(&pg->thread_free, NULL, memory_order_acquire);
	if (!list)
		return 0;
	/* Bounded by the page's capacity: more blocks than the page holds is a corrupt list (two
	 * threads freeing one object at once), which must not loop forever. */
	for (tail = list; rasp__hdr_next(tail); tail = rasp__hdr_next(tail))
		if (++n > cap) {
			fprintf(stderr,
				"rasp: free list of page %p is corrupt (an object was freed "
				"twice at once by two threads?)\n",
				(void *)pg);
			abort();
		}
	rasp__hdr_link(tail, pg->local_free);
	if (!pg->local_n)
		pg->local_tail = tail;
	pg->local_free = list;
	pg->local_n += n;
	used_add(pg, -(int64_t)n);
	return n;
}

/* The three lists of pages (a class queue, a full list, an abandoned list) are doubly linked;
 * a class queue also keeps its tail (`last`, NULL for the others). */
static void queue_unlink(struct rasp__page **head, struct rasp__page **last, struct rasp__page *pg)
{
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		*head = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	else if (last)
		*last = pg->prev;
	pg->next = pg->prev = NULL;
}

static void queue_push(struct rasp__page **head, struct rasp__page **last, struct rasp__page *pg)
{
	pg->prev = NULL;
	pg->next = *head;
	if (*head)
		(*head)->prev = pg;
	else if (last)
		*last = pg;
	*head = pg;
}

static void queue_append(struct rasp__page **head, struct rasp__page **last, struct rasp__page *pg)
{
	pg->next = NULL;
	pg->prev = *last;
	if (*last)
		(*last)->next = pg;
	else
		*head = pg;
	*last = pg;
}

static void unfull(struct rasp__window *w, struct rasp__page *pg)
{
	if (pg->unfenced) {
		pg->unfenced = false;
		w->unfenced--;
	}
	queue_unlink(&w->full, NULL, pg);
	pg->in_full = false;
	atomic_store_explicit(&pg->full, 0, memory_order_relaxed);
	queue_append(&w->queue, &w->queue_last, pg);
}

/* pg (on no list) goes on the head of the full list, unfenced (see the file comment). */
static void full_push(struct rasp__window *w, struct rasp__page *pg)
{
	atomic_store_explicit(&pg->full, 1, FULL_ORDER);
	pg->in_full = true;
	pg->unfenced = true;
	w->unfenced++;
	queue_push(&w->full, NULL, pg);
}

/* The page has no free block: from the queue to the full list. */
static void to_full(struct rasp__window *w, struct rasp__page *pg)
{
	queue_unlink(&w->queue, &w->queue_last, pg);
	full_push(w, pg);
}

/* One fence, then the pages moved to the full list since the last one: those another thread
 * freed into go back to the queue. The unfenced pages are a prefix of the list (pushes go to
 * the head; removals keep the order), so the walk stops at the last of them. Returns how many
 * came back. */
static unsigned sweep_full(struct rasp__window *w)
{
	struct rasp__page *pg, *pn;
	unsigned back = 0;

	if (!w->unfenced)
		return 0;
	SWEEP_FENCE();
	for (pg = w->full; pg && w->unfenced; pg = pn) {
		pn = pg->next;
		if (!pg->unfenced)
			continue;
		pg->unfenced = false;
		w->unfenced--;
		if (atomic_load_explicit(&pg->thread_free, FULL_ORDER)) {
			unfull(w, pg);
			back++;
		}
	}
	w->unfenced = 0; /* the count and the flags agree; 0 if the list ended first */
	return back;
}

/* Another thread freed into pages on full lists: those with frees go back to their queues. */
static void rescue_full(struct rasp_context *c)
{
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		struct rasp__window *w = &c->win[k];
		struct rasp__page *pg, *pn;

		for (pg = w->full; pg; pg = pn) {
			pn = pg->next;
			if (atomic_load(&pg->thread_free))
				unfull(w, pg);
		}
	}
}

static bool has_free(struct rasp__page *pg, bool grow)
{
	if (pg->local_n == 0)
		rasp__page_collect(pg);
	if (pg->local_n == 0 && !rasp__page_all_formatted(pg))
		rasp__page_extend(pg, grow);
	return pg->local_n > 0;
}

static void own(struct rasp_context *c, struct rasp__page *pg)
{
	atomic_store(&pg->ctx, c);
	atomic_store(&pg->owner, c->token);
	atomic_store(&pg->full, 0);
	pg->in_full = false;
	pg->unfenced = false;
}

struct rasp__page *rasp__page_find(struct rasp_context *c, unsigned cls, bool grow)
{
	struct rasp__window *w = &c->win[cls];
	struct rasp_heap *h = c->heap;
	struct rasp__page *pg, *pn, *passed = NULL;
	int visited = 0;
	bool swept = false;

	if (atomic_load_explicit(&c->full_dirty, memory_order_relaxed) &&
	    atomic_exchange(&c->full_dirty, 0))
		rescue_full(c);
search:
	for (pg = w->queue; pg && visited < SEARCH_MAX; pg = pn, visited++) {
		pn = pg->next;
		if (has_free(pg, grow)) {
			/* Sparse: to the back while another page may serve (the search's
			 * last visit takes whatever it finds). */
			if (pn && visited < SEARCH_MAX - 1 && sparse(pg)) {
				queue_unlink(&w->queue, &w->queue_last, pg);
				queue_append(&w->queue, &w->queue_last, pg);
				passed = pg;
				continue;
			}
			if (pg != w->queue) {
				queue_unlink(&w->queue, &w->queue_last, pg);
				queue_push(&w->queue, &w->queue_last, pg);
			}
			return pg;
		}
		to_full(w, pg);
	}
	/* A sparse page passed over, rather than a new page, if nothing else had blocks (it
	 * still has them: only a visit that finds none moves a page to the full list). */
	if (passed) {
		queue_unlink(&w->queue, &w->queue_last, passed);
		queue_push(&w->queue, &w->queue_last, passed);
		return passed;
	}
	/* Before growing: pages other threads freed into unseen (see the file comment). Once:
	 * the pages it brings back are searched, SEARCH_MAX more at most. */
	if (!swept) {
		swept = true;
		if (sweep_full(w)) {
			visited = 0;
			goto search;
		}
	}
	/* An exited thread's page of this class, else a new page. */
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < ADOPT_MAX && (pg = h->abandoned[cls]); i++) {
		queue_unlink(&h->abandoned[cls], NULL, pg);
		own(c, pg);
		if (has_free(pg, grow))
			goto found;
		full_push(w, pg); /* the next sweep checks it */
	}
	pg = rasp__segment_page_new(h, cls);
	if (!pg) {
		pthread_mutex_unlock(&h->lock);
		return NULL;
	}
	own(c, pg);
	if (!pg->local_n) /* (a page kept formatted has its list already: segment.c) */
		rasp__page_extend(pg, false);
found:
	pthread_mutex_unlock(&h->lock);
	queue_push(&w->queue, &w->queue_last, pg);
	return pg;
}

/* A list shorter than this gathers the lists of the next pages of the class queue: where
 * random frees leave a block or two in each page (a cache replacing entries at random), one
 * page's list per refill would run the slow path every other allocation. */
#define GATHER_MIN 16

uint32_t rasp__page_take_list(struct rasp_context *c, struct rasp__page *pg,
			      struct rasp__header **list)
{
	struct rasp__window *w = &c->win[rasp__page_cls(pg)];
	struct rasp__header *head = NULL, *tail = NULL;
	struct rasp__page *p, *pn;
	uint32_t total = 0;
	int visited = 0;

	for (p = pg; p && visited < SEARCH_MAX; p = pn, visited++) {
		uint32_t n;

		/* pg itself, moved to the tail below (blocks never formatted) and met again: its
		 * list is taken, and its stale tail would cut the gathered one. */
		if (p == pg && visited)
			break;
		pn = p->next;
		if (p != pg) {
			if (total >= GATHER_MIN)
				break;
			if (p->local_n == 0)
				rasp__page_collect(p);
			if (p->local_n == 0 || sparse(p))
				continue;
		}
		n = p->local_n;
		if (p->kept_empty) { /* back in use */
			p->kept_empty = false;
			c->kept_empty--;
		}
		if (tail)
			rasp__hdr_link(tail, p->local_free);
		else
			head = p->local_free;
		total += n;
		tail = p->local_tail; /* kept by every push onto an empty list: no walk */
		p->local_free = NULL;
		p->local_n = 0;
		used_add(p, n);
		/* Drained: off the queue now (a free wakes it), or woken pages pile up behind it
		 * and searches that meet SEARCH_MAX drained pages make a new page. A page with
		 * blocks never formatted goes to the tail: woken pages' blocks are used before
		 * new memory is touched. */
		if (rasp__page_all_formatted(p)) {
			to_full(w, p);
		} else if (p->next) {
			queue_unlink(&w->queue, &w->queue_last, p);
			queue_append(&w->queue, &w->queue_last, p);
		}
	}
	if (tail) { /* before the list the context still holds (a top-up) */
		rasp__hdr_link(tail, *list);
		*list = head;
	}
	return total;
}

/* heap->lock held. pg leaves c for its segment. */
static void page_release(struct rasp_context *c, struct rasp__page *pg)
{
	struct rasp__window *w = &c->win[rasp__page_cls(pg)];

	if (pg->in_full)
		queue_unlink(&w->full, NULL, pg);
	else
		queue_unlink(&w->queue, &w->queue_last, pg);
	if (pg->unfenced) {
		pg->unfenced = false;
		w->unfenced--;
	}
	if (w->page == pg)
		w->page = NULL;
	if (pg->kept_empty) {
		pg->kept_empty = false;
		c->kept_empty--;
	}
	atomic_store(&pg->owner, 0);
	atomic_store(&pg->ctx, NULL);
	rasp__segment_page_free(c->heap, pg);
}

/* rasp__page_empty's work; `locked`: heap->lock already held. */
static void page_empty(struct rasp_context *c, struct rasp__page *pg, bool locked)
{
	struct rasp__window *w = &c->win[rasp__page_cls(pg)];

	if (pg->in_full)
		unfull(w, pg);
	if (rasp__relaxed_load32(&pg->used) || w->page == pg || pg->kept_empty)
		return;
	if (c->kept_empty < RASP__KEEP_EMPTY) {
		pg->kept_empty = true;
		c->kept_empty++;
		return;
	}
	if (!locked)
		pthread_mutex_lock(&c->heap->lock);
	page_release(c, pg);
	if (!locked)
		pthread_mutex_unlock(&c->heap->lock);
}

void rasp__page_empty(struct rasp_context *c, struct rasp__page *pg)
{
	page_empty(c, pg, false);
}

/* Gives the context's list of class k back to its pages (the window's blocks and the rest),
 * block by block: a gathered list, and the owner's frees, hold blocks of several pages. The
 * window ends (its draw dropped: the trials are memoryless, and this is decided by frees and
 * collects alone). `empty_pages`: each page left with no block out, or on the full list,
 * goes through page_empty (heap->lock held); else the caller sees to them. */
static void list_give_back(struct rasp_context *c, unsigned k, bool empty_pages)
{
	struct rasp__window *w = &c->win[k];
	struct rasp__hot *hc = &c->hot[k];
	uint32_t n = (uint32_t)(hc->n + w->gap) + rasp__rest(w) + w->retired;
	struct rasp__header *hdr = hc->free;

	rasp__window_publish(w, 0);
	hc->n = 0;
	w->gap = 0;
	rasp__window_forget(w);
	rasp__rest_set(w, 0);
	w->retired = 0;
	/* By runs of blocks of one page, which the list holds already linked (a refill's list
	 * is a page's, or a few gathered): each run joins its page's list in one step. Block by
	 * block, this was 2.4% of `bulk`'s instructions (callgrind). */
	for (uint32_t i = 0; i < n;) {
		struct rasp__page *pg = rasp__page_of(rasp__segment_of(hdr), hdr);
		struct rasp__header *first = hdr, *last;
		uint32_t run = 0;

		do {
			last = hdr;
			hdr = rasp__hdr_next(hdr);
			run++;
		} while (++i < n && (uintptr_t)hdr - pg->start < pg->bytes);
		rasp__hdr_link(last, pg->local_free);
		pg->local_free = first;
		if (!pg->local_n)
			pg->local_tail = last;
		pg->local_n += run;
		used_add(pg, -(int64_t)run);
		/* The page's own context, as the page-local free does: in a fork's child a block
		 * of another context's page can be on this list (free.c), and moving that page on
		 * this context's lists broke both (test_fork_child_frees_absent_threads_pages). */
		if (empty_pages && (!rasp__relaxed_load32(&pg->used) || pg->in_full)) {
			struct rasp_context *pc =
			    atomic_load_explicit(&pg->ctx, memory_order_relaxed);

			if (pc)
				page_empty(pc, pg, true);
		}
	}
	hc->free = NULL;
}

void rasp__list_flush(struct rasp_context *c, unsigned k)
{
	struct rasp__window *w = &c->win[k];
	uint32_t floor;

	/* Under the heap lock: a collect ends this context's windows under it (retire), and
	 * may run while this thread frees. */
	pthread_mutex_lock(&c->heap->lock);
	list_give_back(c, k, true);
	/* Off until the class's next refill, which turns it on again at half the bound it had,
	 * down to RASP__CACHE_MIN, or to the class's most where that is less (blocks of 9 KiB
	 * and up: a floor of 8 would double their bound of 4 to 7). Off, not halved at once:
	 * a run of frees then goes on to the pages directly, where a halved cache filled and
	 * was flushed again and again (each of its blocks moved twice: 1.4% of `bulk`'s
	 * instructions, callgrind). */
	floor = w->cache_max < RASP__CACHE_MIN ? w->cache_max : RASP__CACHE_MIN;
	w->cache_after = w->cache / 2 > floor ? w->cache / 2 : floor;
	rasp__window_set_cache(w, 0);
	pthread_mutex_unlock(&c->heap->lock);
}

/* The whole list back, for a trim or the thread's exit (which see to the pages). */
static void return_list(struct rasp_context *c, unsigned k)
{
	list_give_back(c, k, false);
	c->win[k].page = NULL;
}

void rasp__pages_release_empty(struct rasp_context *c)
{
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		struct rasp__window *w = &c->win[k];
		struct rasp__page *lists[2], *pg, *pn;

		return_list(c, k);
		lists[0] = w->queue;
		lists[1] = w->full;
		for (int l = 0; l < 2; l++)
			for (pg = lists[l]; pg; pg = pn) {
				pn = pg->next;
				rasp__page_collect(pg);
				if (!rasp__relaxed_load32(&pg->used))
					page_release(c, pg);
				else if (pg->in_full && pg->local_n)
					unfull(w, pg); /* blocks to reuse: searched again */
			}
	}
}

void rasp__pages_abandon(struct rasp_context *c)
{
	struct rasp_heap *h = c->heap;

	pthread_mutex_lock(&h->lock);
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		struct rasp__window *w = &c->win[k];
		struct rasp__page *pg;

		return_list(c, k);
		while ((pg = w->queue) || (pg = w->full)) {
			if (pg->in_full)
				queue_unlink(&w->full, NULL, pg);
			else
				queue_unlink(&w->queue, &w->queue_last, pg);
			pg->kept_empty = false;
			atomic_store(&pg->owner, 0);
			atomic_store(&pg->ctx, NULL);
			atomic_store(&pg->full, 0);
			pg->in_full = pg->unfenced = false;
			rasp__page_collect(pg);
			if (!rasp__relaxed_load32(&pg->used))
				rasp__segment_page_free(h, pg);
			else
				queue_push(&h->abandoned[k], NULL, pg);
		}
		w->unfenced = 0;
	}
	c->kept_empty = 0;
	pthread_mutex_unlock(&h->lock);
}

void rasp__abandoned_trim(struct rasp_heap *h)
{
	for (unsigned k = 1; k < RASP__NCLASS; k++) {
		struct rasp__page *pg, *pn;

		for (pg = h->abandoned[k]; pg; pg = pn) {
			pn = pg->next;
			rasp__page_collect(pg);
			if (!rasp__relaxed_load32(&pg->used)) {
				queue_unlink(&h->abandoned[k], NULL, pg);
				rasp__segment_page_free(h, pg);
			}
		}
	}
}
