/* rasp-docstore: generating documents as JSON-like text and parsing them into typed nodes,
 * every piece allocated on the rasp heap through alloc() (docstore.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docstore.h"

void put(struct buf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap); /* scratch space: glibc, not part of the workload */
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

const char *const words[12] = {"alpha", "beta",	 "gamma", "delta", "epsilon", "zeta",
			       "eta",	"theta", "iota",  "kappa", "lambda",  "mu"};

void gen_value(struct worker *w, struct buf *b, int depth)
{
	char tmp[64];
	uint64_t r = below(w, 10);

	if (depth < 3 && r < 2) {
		size_t n = 1 + below(w, 6);

		put(b, "{");
		for (size_t i = 0; i < n; i++) {
			snprintf(tmp, sizeof(tmp), "%s\"%s%zu\":", i ? "," : "",
				 words[below(w, 12)], i);
			put(b, tmp);
			gen_value(w, b, depth + 1);
		}
		put(b, "}");
	} else if (depth < 3 && r < 4) {
		size_t n = below(w, 12);

		put(b, "[");
		for (size_t i = 0; i < n; i++) {
			if (i)
				put(b, ",");
			gen_value(w, b, depth + 1);
		}
		put(b, "]");
	} else if (r < 7) {
		size_t n = 1 + below(w, 5);

		put(b, "\"");
		for (size_t i = 0; i < n; i++) {
			put(b, i ? " " : "");
			put(b, words[below(w, 12)]);
		}
		put(b, "\"");
	} else {
		snprintf(tmp, sizeof(tmp), "%" PRIu64 ".%02u", below(w, 100000),
			 (unsigned)below(w, 100));
		put(b, tmp);
	}
}

static struct node *new_node(struct worker *w, enum type_id t)
{
	struct node *n = alloc(w, t, sizeof(*n), 0);

	memset(n, 0, sizeof(*n));
	n->kind = t;
	return n;
}

static struct node *parse_string(struct worker *w, const char **s)
{
	const char *start = ++*s, *end = strchr(start, '"');
	struct node *n = new_node(w, T_JSON_STRING);

	n->n = (size_t)(end - start);
	n->u.text = alloc(w, T_JSON_STRING, n->n + 1, 0);
	memcpy(n->u.text, start, n->n);
	n->u.text[n->n] = '\0';
	*s = end + 1;
	return n;
}

/* Growable arrays double by reallocating from the heap, as a managed runtime's would. */
void *grow(struct worker *w, enum type_id t, void *old, size_t elem, size_t n, size_t *cap)
{
	void *p;

	if (n < *cap)
		return old;
	*cap = *cap ? *cap * 2 : 4;
	p = alloc(w, t, *cap * elem, 0);
	if (old) {
		memcpy(p, old, n * elem);
		rasp_free(heap, old);
	}
	return p;
}

struct node *parse_value(struct worker *w, const char **s)
{
	struct node *n;
	size_t cap = 0;

	switch (**s) {
	case '{':
		n = new_node(w, T_JSON_MAP);
		++*s;
		while (**s != '}') {
			n->u.entries =
			    grow(w, T_JSON_ENTRIES, n->u.entries, sizeof(struct entry), n->n, &cap);
			n->u.entries[n->n].key = parse_string(w, s);
			++*s; /* ':' */
			n->u.entries[n->n].value = parse_value(w, s);
			n->n++;
			if (**s == ',')
				++*s;
		}
		++*s;
		return n;
	case '[':
		n = new_node(w, T_JSON_ARRAY);
		++*s;
		while (**s != ']') {
			n->u.items =
			    grow(w, T_JSON_ARRAY, n->u.items, sizeof(struct node *), n->n, &cap);
			n->u.items[n->n++] = parse_value(w, s);
			if (**s == ',')
				++*s;
		}
		++*s;
		return n;
	case '"':
		return parse_string(w, s);
	default:
		n = new_node(w, T_JSON_NUMBER);
		n->u.number = strtod(*s, (char **)s);
		return n;
	}
}

void free_tree(struct node *n)
{
	switch (n->kind) {
	case T_JSON_MAP:
		for (size_t i = 0; i < n->n; i++) {
			free_tree(n->u.entries[i].key);
			free_tree(n->u.entries[i].value);
		}
		rasp_free(heap, n->u.entries);
		break;
	case T_JSON_ARRAY:
		for (size_t i = 0; i < n->n; i++)
			free_tree(n->u.items[i]);
		rasp_free(heap, n->u.items);
		break;
	case T_JSON_STRING:
		rasp_free(heap, n->u.text);
		break;
	default:
		break;
	}
	rasp_free(heap, n);
}
