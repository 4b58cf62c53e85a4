/* The library stack-prog loads with dlopen: an allocation site in code loaded after start. */
#include "rasp/rasp.h"

__attribute__((visibility("default"), noinline)) void *plugin_alloc(rasp_heap_t *heap,
								    const rasp_type_t *type)
{
	void *p = rasp_alloc(heap, type, 3000, 0);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}
