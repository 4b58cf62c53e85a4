/* Symbolization: an instruction pointer of a recorded process turned into a function name,
 * and a source file and line where debug information exists, from the objects the trace says
 * were loaded (modules.h), read with elfutils' libdw (the library perf and babeltrace2's
 * debug-info filter use): the object's own symbol table and DWARF, or its separate debug
 * file (build id under /usr/lib/debug/.build-id, or its .gnu_debuglink). A .NET method is
 * named by the trace itself, with its parameters (overloads differ), as C# writes it unless
 * the runtime's form is asked for. What cannot be resolved is named by its object and offset
 * ("libfoo.so+0x1a2b"), never a bare address ("[no object] 0x..." when no object covers it).
 * Results are cached per address; each object is opened once. Only for reports, never on a
 * recording path. No babeltrace2 types. */
#ifndef RASP_CONSUMER_SYMBOLS_H
#define RASP_CONSUMER_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules.h"
#include "rasp/rasp.h"

/* A resolved frame (not the public API's rasp_frame_t, a runtime's own frame). */
struct rasp_sym_frame {
	const char *function;		  /* demangled where the name is C++'s; NULL when unknown */
	const char *file;		  /* source file, NULL when unknown */
	unsigned line;			  /* 0 when unknown */
	const struct rasp_module *module; /* NULL when no object covers the address */
	uint64_t offset;		  /* ip's offset in its object (ELF address for PIC) */
	/* "function (file:line)", "function", "object+0xoffset" or "[no object] 0xip": what a
	 * report shows for the frame. */
	const char *name;
};

struct rasp_symbols;

/* A resolver over the modules m (which must outlive it). NULL without memory. */
struct rasp_symbols *rasp_symbols_create(struct rasp_modules *m);
void rasp_symbols_destroy(struct rasp_symbols *s);
/* .NET methods named in the runtime's form (true) or, by default, as C# writes them
 * (clr-names.h); set before the first resolve. */
void rasp_symbols_raw_names(struct rasp_symbols *s, bool raw);

/* The frame at return address ip of process pid (resolved at ip - 1, inside the call). The
 * strings live as long as s. 0 or -ENOMEM. */
int rasp_symbols_resolve(struct rasp_symbols *s, int64_t pid, uint64_t ip,
			 struct rasp_sym_frame *out);

#endif /* RASP_CONSUMER_SYMBOLS_H */
