/* Which frames of a stack are the allocator's (allocator.h): by the file name of the object
 * holding them, a fixed list, so that a program's malloc calls through libc's wrappers and
 * libstdc++'s containers are placed at the program's own code. */
#include <string.h>

#include "allocator.h"

/* File names, matched up to a version suffix ("libc.so.6", "libstdc++.so.6.0.30"). */
static const char *const allocator_libraries[] = {
    "librasp-malloc.so", "librasp.so", "libc.so", "libstdc++.so", "libc++.so", "libc++abi.so",
};

bool rasp_module_is_allocator(const struct rasp_module *m)
{
	const char *base;

	if (!m || !m->path || m->method)
		return false;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	for (size_t i = 0; i < sizeof(allocator_libraries) / sizeof(allocator_libraries[0]); i++) {
		size_t n = strlen(allocator_libraries[i]);

		if (strncmp(base, allocator_libraries[i], n) == 0 &&
		    (base[n] == '\0' || base[n] == '.'))
			return true;
	}
	return false;
}

int rasp_stack_site(struct rasp_symbols *sym, const struct rasp_stacks *stacks,
		    const struct rasp_stack *st, struct rasp_frame *out)
{
	const uint64_t *frames = rasp_stacks_frames(stacks, st);
	struct rasp_frame f;
	int ret;

	ret = rasp_symbols_resolve(sym, st->pid, frames[0], out);
	if (ret || !rasp_module_is_allocator(out->module))
		return ret;
	for (uint32_t i = 1; i < st->n; i++) {
		ret = rasp_symbols_resolve(sym, st->pid, frames[i], &f);
		if (ret)
			return ret;
		if (!rasp_module_is_allocator(f.module)) {
			*out = f;
			return 0;
		}
	}
	return 0; /* all the allocator's: the innermost frame */
}
