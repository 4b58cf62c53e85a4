/* The allocator's frames of a stack: those of the malloc a program was preloaded with
 * (librasp-malloc) and of the C and C++ libraries' functions that allocate for their caller
 * (strdup, fopen, std::string's growth). A site is the first frame past them. */
#ifndef RASP_CONSUMER_ALLOCATOR_H
#define RASP_CONSUMER_ALLOCATOR_H

#include <stdbool.h>

#include "stacks.h"
#include "symbols.h"

/* Whether the module is one of the allocator's libraries, by its file name. */
bool rasp_module_is_allocator(const struct rasp_module *m);

/* The site of stack st: its first frame outside the allocator's libraries, or its innermost
 * frame when every frame is theirs. 0, or the resolver's negative error. */
int rasp_stack_site(struct rasp_symbols *sym, const struct rasp_stacks *stacks,
		    const struct rasp_stack *st, struct rasp_frame *out);

#endif /* RASP_CONSUMER_ALLOCATOR_H */
