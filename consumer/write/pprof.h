/* The tables of a pprof profile, collected from a report's rows (the pprof writer's model):
 * the string table, a Location per (process, return address), a Function per (name, file),
 * a Mapping per object the frames fall in, and each row's location ids and labels. The
 * writer (write-pprof.c) encodes them with protobuf-c and gzips them. */
#ifndef RASP_CONSUMER_PPROF_H
#define RASP_CONSUMER_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "writer.h"

/* Labels of a sample: type, bytes_low, bytes_high, samples, kind, process, thread. */
#define RASP_PPROF_MAX_LABELS 7

struct rasp_pprof_loc {
	int64_t pid;
	uint64_t ip;	  /* the return address the stack holds */
	uint64_t mapping; /* id, 0: none */
	uint64_t function;
	int64_t line;
};

struct rasp_pprof_fn {
	int64_t name, file; /* string ids */
};

struct rasp_pprof_map {
	const struct rasp_module *mod;
	bool functions, files, lines; /* every frame of it resolved to these */
	bool program;		      /* its process's executable (order_mappings) */
	size_t id;		      /* its id while collecting (order_mappings renumbers) */
};

struct rasp_pprof {
	const struct rasp_report_view *v;
	char **str; /* the string table; [0] is "" */
	size_t nstr, capstr;
	struct rasp_index str_index;
	char **owned; /* strings made here (build ids, kind numbers), freed at the end */
	size_t nowned, capowned;
	struct rasp_pprof_loc *loc; /* location id i + 1 is loc[i] */
	size_t nloc, caploc;
	struct rasp_index loc_index;
	uint64_t no_stack; /* location id of "(no stack)", 0 until a row needs it */
	struct rasp_pprof_fn *fn;
	size_t nfn, capfn;
	struct rasp_index fn_index;
	struct rasp_pprof_map *map;
	size_t nmap, capmap;
	struct rasp_index map_index;
	uint64_t *ids;	 /* every row's location ids, innermost first, one row after the other */
	size_t *first;	 /* row i's are ids[first[i] .. first[i + 1]) */
	int64_t *labels; /* per row: RASP_PPROF_MAX_LABELS (key, str or num, unit) triples */
	size_t *nlabels;
};

/* The id of string s in the table, added when new (copied when copy, else s must outlive
 * the tables). A negative id without memory. */
int64_t rasp_pprof_str(struct rasp_pprof *p, const char *s, bool copy);
/* Every row's locations, functions, mappings and labels, from p->v. 0, -ENOMEM, -ERANGE. */
int rasp_pprof_collect(struct rasp_pprof *p);
/* Mappings with the programs' executables first (pprof's "File:"), then in the order the
 * trace recorded their objects; renumbers the locations'. 0 or -ENOMEM. */
int rasp_pprof_order_mappings(struct rasp_pprof *p);
void rasp_pprof_free(struct rasp_pprof *p);
/* x rounded to an int64, -ERANGE when it is not finite or does not fit. */
int rasp_pprof_rounded(double x, int64_t *out);

#endif
