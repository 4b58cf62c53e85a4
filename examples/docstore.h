/* rasp-docstore's parts (docstore.c: the workers, the index, the truth, main;
 * docstore-json.c: generating and parsing the documents). */
#ifndef RASP_EXAMPLES_DOCSTORE_H
#define RASP_EXAMPLES_DOCSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "rasp/rasp.h"

enum type_id {
	T_DOC_TEXT,	 /* the document as text */
	T_JSON_MAP,	 /* map header */
	T_JSON_ENTRIES,	 /* a map's entry array */
	T_JSON_ARRAY,	 /* array header + element pointers */
	T_JSON_STRING,	 /* string value or key */
	T_JSON_NUMBER,	 /* number value */
	T_INDEX_BUCKETS, /* the index's hash table (grown by reallocation) */
	T_INDEX_POSTING, /* one indexed string occurrence */
	T_QUERY_RESULT,	 /* results of a query over the index */
	T_IO_BUFFER,	 /* pinned I/O staging buffer (POH) */
	T_SNAPSHOT,	 /* large snapshot of the index (LOH) */
	N_TYPES
};

static const char *const type_names[N_TYPES] __attribute__((unused)) = {
    "DocStore.DocumentText", "Json.Map",	"Json.MapEntry[]", "Json.Array",
    "Json.String",	     "Json.Number",	"Index.Bucket[]",  "Index.Posting",
    "Query.Result",	     "IO.PinnedBuffer", "Index.Snapshot",
};

struct node;
struct entry {
	struct node *key, *value;
};
struct node {
	int kind; /* T_JSON_MAP, T_JSON_ARRAY, T_JSON_STRING, T_JSON_NUMBER */
	size_t n;
	union {
		struct entry *entries;
		struct node **items;
		char *text;
		double number;
	} u;
};
struct posting {
	struct posting *next;
	uint64_t hash, doc;
};

struct worker {
	int id;
	rasp_context_t *ctx;
	uint64_t rng, scale_rng;
	uint64_t docs;
	uint64_t bytes[N_TYPES], objects[N_TYPES];
	struct posting **buckets;
	size_t n_buckets, n_postings;
	int failed;
};

struct buf {
	char *p;
	size_t len, cap;
};

extern rasp_heap_t *heap;

/* docstore.c */
/* A number in [0, n) from the worker's generator. */
uint64_t below(struct worker *w, uint64_t n);
/* Every allocation goes through here: it is counted with the size its event would carry. */
void *alloc(struct worker *w, enum type_id t, size_t size, unsigned flags);

/* docstore-json.c */
/* The words of documents, and of queries. */
extern const char *const words[12];
/* The array old of n elements of elem bytes grown to hold one more (reallocated on the rasp
 * heap as type t, *cap updated). */
void *grow(struct worker *w, enum type_id t, void *old, size_t elem, size_t n, size_t *cap);
/* Appends s to b (a document's text). */
void put(struct buf *b, const char *s);
/* A random value of a document, as text, nested at most a few levels below depth. */
void gen_value(struct worker *w, struct buf *b, int depth);
/* Parses one value at *s into typed nodes; NULL on malformed text. */
struct node *parse_value(struct worker *w, const char **s);
void free_tree(struct node *n);

#endif /* RASP_EXAMPLES_DOCSTORE_H */
