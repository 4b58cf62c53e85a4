/* Test program for stacks (test-stack.c): allocates known amounts along known call paths and
 * prints the truth as JSON, so a report by site can be checked path by path:
 *   Path.Recursive   at the bottom of a recursion 12 calls deep (descend)
 *   Path.Plugin      inside a library loaded with dlopen after start (plugin_alloc)
 *   Path.Twice       from two sites of one type, three times more from site_a than site_b
 * Single-threaded, so a fixed RASP_SEED gives the same samples every run.
 *   stack-prog PLUGIN.so ROUNDS [more-b]   prints {"site": {"type": ..., "bytes": N, ...}...}
 * more-b: site_b runs three times a round instead of once (a change for rasp diff to find). */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"

static rasp_heap_t *heap;
static const rasp_type_t *recursive_t, *twice_t;
static uint64_t bytes[4], objects[4]; /* descend, site_a, site_b, plugin_alloc */

static void count(int site, void *p)
{
	if (!p) {
		perror("rasp_alloc");
		exit(2);
	}
	bytes[site] += rasp_object_size(p);
	objects[site]++;
	rasp_free(heap, p);
}

/* noinline: each site must be a frame of its own. */
__attribute__((noinline)) static void descend(int n)
{
	if (n > 0) {
		descend(n - 1);
		__asm__ volatile("" ::: "memory"); /* no tail call: the frames stay */
		return;
	}
	count(0, rasp_alloc(heap, recursive_t, 1000, 0));
}

__attribute__((noinline)) static void site_a(void)
{
	count(1, rasp_alloc(heap, twice_t, 200, 0));
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void site_b(void)
{
	count(2, rasp_alloc(heap, twice_t, 200, 0));
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	void *(*plugin_alloc)(rasp_heap_t *, const rasp_type_t *);
	const rasp_type_t *plugin_t;
	long rounds = argc > 2 ? atol(argv[2]) : 0;
	int b_calls = argc > 3 && !strcmp(argv[3], "more-b") ? 3 : 1;
	void *lib;
	int err;

	if (argc < 3 || argc > 4 || rounds < 1) {
		fprintf(stderr, "usage: stack-prog PLUGIN.so ROUNDS [more-b]\n");
		return 2;
	}
	if ((err = rasp_heap_create(&heap, NULL)) != 0) {
		fprintf(stderr, "stack-prog: %s\n", rasp_strerror(err));
		return 2;
	}
	recursive_t = rasp_type_register(heap, "Path.Recursive");
	twice_t = rasp_type_register(heap, "Path.Twice");
	plugin_t = rasp_type_register(heap, "Path.Plugin");
	/* Loaded after start: its objects come from the dlopen events, not the state dump. */
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib || !(*(void **)&plugin_alloc = dlsym(lib, "plugin_alloc"))) {
		fprintf(stderr, "stack-prog: %s\n", dlerror());
		return 2;
	}
	for (long r = 0; r < rounds; r++) {
		descend(12);
		site_a();
		site_a();
		site_a();
		for (int b = 0; b < b_calls; b++)
			site_b();
		count(3, plugin_alloc(heap, plugin_t));
	}
	printf("{\"descend\": {\"type\": \"Path.Recursive\", \"bytes\": %" PRIu64
	       ", \"objects\": %" PRIu64 "},\n"
	       " \"site_a\": {\"type\": \"Path.Twice\", \"bytes\": %" PRIu64
	       ", \"objects\": %" PRIu64 "},\n"
	       " \"site_b\": {\"type\": \"Path.Twice\", \"bytes\": %" PRIu64
	       ", \"objects\": %" PRIu64 "},\n"
	       " \"plugin_alloc\": {\"type\": \"Path.Plugin\", \"bytes\": %" PRIu64
	       ", \"objects\": %" PRIu64 "}}\n",
	       bytes[0], objects[0], bytes[1], objects[1], bytes[2], objects[2], bytes[3],
	       objects[3]);
	rasp_heap_destroy(heap);
	return 0;
}
