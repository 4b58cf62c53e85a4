/* The heap behind librasp-malloc: created by the library's constructor (after librasp's, a
 * dependency, has run), with the RASP_* environment, counting the sizes asked, and one type per
 * family of calls. Until
 * it exists, and while this thread is inside the runtime (whose own bookkeeping, event output
 * and unwinder load allocate), every call goes to glibc: the guard below. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"

rasp_heap_t *rasp__malloc_heap;
const rasp_type_t *rasp__malloc_types[RASP__FAM_COUNT];
atomic_bool rasp__malloc_ready;
__thread unsigned char rasp__malloc_busy __attribute__((tls_model("initial-exec")));
size_t (*rasp__malloc_glibc_usable)(void *);

static const char *const family_names[RASP__FAM_COUNT] = {
    [RASP__FAM_MALLOC] = "malloc",   [RASP__FAM_CALLOC] = "calloc", [RASP__FAM_REALLOC] = "realloc",
    [RASP__FAM_ALIGNED] = "aligned", [RASP__FAM_NEW] = "new",	    [RASP__FAM_NEW_ARRAY] = "new[]",
};

/* Priority 101, the first a program can use: the heap is there before the constructors of
 * the libraries the program loads after this one (theirs go to glibc until then, and are
 * given back to it). The heap is never destroyed: the last destructor may still allocate. */
__attribute__((constructor(101))) static void create_heap(void)
{
	rasp_config_t cfg;
	rasp_heap_t *h;
	int err;

	rasp__malloc_busy = 1;
	/* glibc's malloc_usable_size, for its pointers; dlsym allocates, hence here. */
	rasp__malloc_glibc_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	/* The RASP_* environment, and the sizes asked counted, not the blocks: each size asked
	 * is given to the runtime as 8 bytes more (docs/usage.md, "What is estimated"); and
	 * small blocks at 8 mod 16, which block.c's sizes need. */
	rasp_config_init(&cfg);
	err = rasp_config_from_env(&cfg);
	if (!err) {
		cfg.requested_sizes = 1;
		cfg.request_pad = 8;
		err = rasp_heap_create(&h, &cfg);
		if (!err && (err = rasp__heap_block_offset(h, 8)) != 0)
			rasp_heap_destroy(h);
	}
	if (err) {
		/* Bad RASP_* variables (reported by the runtime): the program runs on glibc. */
		fprintf(stderr, "rasp: librasp-malloc: no heap (%s); allocating with glibc\n",
			rasp_strerror(err));
		rasp__malloc_busy = 0;
		return;
	}
	for (int f = 0; f < RASP__FAM_COUNT; f++) {
		rasp__malloc_types[f] = rasp_type_register(h, family_names[f]);
		if (!rasp__malloc_types[f]) {
			fprintf(stderr,
				"rasp: librasp-malloc: cannot register type %s; allocating "
				"with glibc\n",
				family_names[f]);
			rasp__malloc_busy = 0;
			return;
		}
	}
	/* The unwinder now, before any thread but this one runs, wherever a sample may take a
	 * stack. Loaded at a sample, it would be loaded inside a malloc, and malloc is called
	 * with the loader's locks held: LTTng-UST's state dump allocates inside dl_iterate_phdr
	 * (which holds the loader's write lock), and a sample there waiting for the unwinder's
	 * first load, itself a dlopen in another thread waiting for that lock, deadlocked the
	 * process (seen: sqlite3 under a plain session with stacks). Under LTTng-UST's dlopen
	 * wrapper the first load inside its state dump also started a nested dump
	 * (runtime/stack.c). About 108 KiB of resident memory (libunwind, liblzma). */
	if (cfg.stack_depth > 0 && cfg.sampling != RASP_SAMPLING_OFF)
		rasp__stack_load();
	rasp__malloc_heap = h;
	atomic_store_explicit(&rasp__malloc_ready, true, memory_order_release);
	rasp__malloc_busy = 0;
}
