/* The exact truth of an unmodified program for record-real.py: preloaded in front of
 * librasp-malloc.so, it passes every allocation call through to the next definition (the
 * library's) and counts, per family, the calls that returned memory of rasp's heap and the
 * bytes they asked for (what each one's sample would carry as ObjectSize: docs/usage.md, "What
 * is estimated"), every realloc that returns memory included, in place or moved. A call that
 * asked for 0 bytes has nothing to sample and is not counted. At exit it appends "family
 * objects bytes" lines to the file named by RASP_TRUTH_FILE, after a "pid N" line; with
 * RASP_TRUTH_SIZES, "family size count" lines of every size counted to that file (the
 * population bench/estimate/coverage.c --sizes samples). Test only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

enum { MALLOC, CALLOC, REALLOC, ALIGNED, NEW, NEW_ARRAY, NFAM };
static const char *const names[NFAM] = {"malloc", "calloc", "realloc", "aligned", "new", "new[]"};
static _Atomic uint64_t objects[NFAM], bytes[NFAM];

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);
static void *(*next_new)(size_t);
static void *(*next_new_array)(size_t);
static void *(*next_new_aligned)(size_t, size_t);
static void *(*next_new_array_aligned)(size_t, size_t);
static void *(*next_valloc)(size_t);
static void *(*next_pvalloc)(size_t);
static void *(*next_new_nothrow)(size_t, const void *);
static void *(*next_new_array_nothrow)(size_t, const void *);
static void *(*next_new_aligned_nothrow)(size_t, size_t, const void *);
static void *(*next_new_array_aligned_nothrow)(size_t, size_t, const void *);
static bool (*mapped)(const void *);
static _Atomic int ready;
static bool sizes_on; /* RASP_TRUTH_SIZES set */

/* glibc's, while dlsym (which allocates) finds the others. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);

static void init(void)
{
	static _Atomic int started;

	if (atomic_exchange(&started, 1))
		return;
	next_malloc = dlsym(RTLD_NEXT, "malloc");
	next_calloc = dlsym(RTLD_NEXT, "calloc");
	next_realloc = dlsym(RTLD_NEXT, "realloc");
	next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	next_memalign = dlsym(RTLD_NEXT, "memalign");
	next_new = dlsym(RTLD_NEXT, "_Znwm");
	next_new_array = dlsym(RTLD_NEXT, "_Znam");
	next_new_aligned = dlsym(RTLD_NEXT, "_ZnwmSt11align_val_t");
	next_new_array_aligned = dlsym(RTLD_NEXT, "_ZnamSt11align_val_t");
	next_valloc = dlsym(RTLD_NEXT, "valloc");
	next_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	next_new_nothrow = dlsym(RTLD_NEXT, "_ZnwmRKSt9nothrow_t");
	next_new_array_nothrow = dlsym(RTLD_NEXT, "_ZnamRKSt9nothrow_t");
	next_new_aligned_nothrow = dlsym(RTLD_NEXT, "_ZnwmSt11align_val_tRKSt9nothrow_t");
	next_new_array_aligned_nothrow = dlsym(RTLD_NEXT, "_ZnamSt11align_val_tRKSt9nothrow_t");
	mapped = dlsym(RTLD_DEFAULT, "rasp__mapped");
	sizes_on = getenv("RASP_TRUTH_SIZES") != NULL;
	atomic_store(&ready, 1);
}

/* The sizes counted, with RASP_TRUTH_SIZES: (size, family) keyed as size * NFAM + family + 1
 * in an open-addressed table of static memory (nothing here may call malloc), each slot
 * claimed once by a compare-and-swap. A program with more distinct sizes than SIZE_SLOTS / 2
 * gets no histogram (sizes_full, said in the file) rather than a wrong one. 16 MiB of address
 * space, touched only when asked for. */
#define SIZE_SLOTS (1u << 20)
static struct {
	_Atomic uint64_t key, count;
} sizes[SIZE_SLOTS];
static _Atomic uint32_t sizes_used;
static _Atomic int sizes_full;

static void size_add(int fam, size_t n)
{
	uint64_t key = (uint64_t)n * NFAM + (uint64_t)fam + 1, h = key * 0x9e3779b97f4a7c15u;

	if (n > UINT64_MAX / NFAM - 1 || atomic_load_explicit(&sizes_full, memory_order_relaxed)) {
		atomic_store(&sizes_full, 1);
		return;
	}
	for (uint32_t i = 0, j = (uint32_t)(h >> 44); i < SIZE_SLOTS;
	     i++, j = (j + 1) % SIZE_SLOTS) {
		uint64_t k = atomic_load_explicit(&sizes[j].key, memory_order_acquire);

		if (k == 0) {
			if (atomic_fetch_add(&sizes_used, 1) >= SIZE_SLOTS / 2) {
				atomic_store(&sizes_full, 1);
				return;
			}
			if (atomic_compare_exchange_strong(&sizes[j].key, &k, key))
				k = key;
			else
				atomic_fetch_sub(&sizes_used,
						 1); /* taken meanwhile: k is its key */
		}
		if (k == key) {
			atomic_fetch_add_explicit(&sizes[j].count, 1, memory_order_relaxed);
			return;
		}
	}
	atomic_store(&sizes_full, 1);
}

static void count(int fam, void *p, size_t n)
{
	if (!p || !n || !mapped || !mapped(p))
		return; /* glibc's (before the heap, or the runtime's own), or nothing asked */
	atomic_fetch_add_explicit(&objects[fam], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&bytes[fam], n, memory_order_relaxed);
	if (sizes_on)
		size_add(fam, n);
}

API void *malloc(size_t n)
{
	void *p;

	if (!atomic_load(&ready)) {
		init();
		if (!atomic_load(&ready))
			return __libc_malloc(n);
	}
	p = next_malloc(n);
	count(MALLOC, p, n);
	return p;
}

API void *calloc(size_t c, size_t n)
{
	void *p;

	if (!atomic_load(&ready))
		return __libc_calloc(c, n); /* dlsym's own, during init */
	p = next_calloc(c, n);
	count(CALLOC, p, p ? c * n : 0);
	return p;
}

API void *realloc(void *old, size_t n)
{
	void *p;

	if (!atomic_load(&ready))
		init();
	p = next_realloc(old, n);
	count(REALLOC, p, n);
	return p;
}

API int posix_memalign(void **out, size_t a, size_t n)
{
	int rc;

	init();
	rc = next_posix_memalign(out, a, n);
	if (rc == 0)
		count(ALIGNED, *out, n);
	return rc;
}

API void *aligned_alloc(size_t a, size_t n)
{
	void *p;

	init();
	p = next_aligned_alloc(a, n);
	count(ALIGNED, p, n);
	return p;
}

API void *memalign(size_t a, size_t n)
{
	void *p;

	init();
	p = next_memalign(a, n);
	count(ALIGNED, p, n);
	return p;
}

API void *_Znwm(size_t n)
{
	void *p;

	init();
	p = next_new(n);
	count(NEW, p, n);
	return p;
}

API void *_Znam(size_t n)
{
	void *p;

	init();
	p = next_new_array(n);
	count(NEW_ARRAY, p, n);
	return p;
}

API void *_ZnwmSt11align_val_t(size_t n, size_t a)
{
	void *p;

	init();
	p = next_new_aligned(n, a);
	count(NEW, p, n);
	return p;
}

API void *_ZnamSt11align_val_t(size_t n, size_t a)
{
	void *p;

	init();
	p = next_new_array_aligned(n, a);
	count(NEW_ARRAY, p, n);
	return p;
}

API void *valloc(size_t n)
{
	void *p;

	init();
	p = next_valloc(n);
	count(ALIGNED, p, n);
	return p;
}

/* The library asks its heap for whole pages (one for 0): that is the size its samples carry. */
API void *pvalloc(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE),
	       r = n + (pg - 1) < n ? 0 : (n + pg - 1) & ~(pg - 1);
	void *p;

	init();
	p = next_pvalloc(n);
	count(ALIGNED, p, r ? r : pg);
	return p;
}

API void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	void *p;

	init();
	p = next_new_nothrow(n, nt);
	count(NEW, p, n);
	return p;
}

API void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	void *p;

	init();
	p = next_new_array_nothrow(n, nt);
	count(NEW_ARRAY, p, n);
	return p;
}

API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	void *p;

	init();
	p = next_new_aligned_nothrow(n, a, nt);
	count(NEW, p, n);
	return p;
}

API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	void *p;

	init();
	p = next_new_array_aligned_nothrow(n, a, nt);
	count(NEW_ARRAY, p, n);
	return p;
}

/* The histogram, after the totals' file is written: "pid N", then "family size count" lines
 * (or "full": too many sizes, no histogram). */
static void write_sizes(const char *path)
{
	FILE *f = fopen(path, "a");

	if (!f)
		return;
	fprintf(f, "pid %d\n", (int)getpid());
	if (atomic_load(&sizes_full)) {
		fprintf(f, "full\n");
	} else {
		for (uint32_t j = 0; j < SIZE_SLOTS; j++) {
			uint64_t k = atomic_load(&sizes[j].key);

			if (k)
				fprintf(f, "%s %llu %llu\n", names[(k - 1) % NFAM],
					(unsigned long long)((k - 1) / NFAM),
					(unsigned long long)atomic_load(&sizes[j].count));
		}
	}
	fclose(f);
}

__attribute__((destructor)) static void write_truth(void)
{
	const char *path = getenv("RASP_TRUTH_FILE");
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	fprintf(f, "pid %d\n", (int)getpid());
	for (int i = 0; i < NFAM; i++)
		fprintf(f, "%s %llu %llu\n", names[i], (unsigned long long)atomic_load(&objects[i]),
			(unsigned long long)atomic_load(&bytes[i]));
	fclose(f);
	if (sizes_on)
		write_sizes(getenv("RASP_TRUTH_SIZES"));
}
