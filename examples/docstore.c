/* rasp-docstore: a small document store on the rasp runtime, the demo workload. Each worker
 * thread generates JSON-like documents as text, parses them into typed nodes (maps, arrays,
 * strings, numbers), indexes their string values, keeps some documents and frees the rest,
 * stages output in pinned I/O buffers (POH) and takes large snapshots (LOH). It counts the
 * true bytes (ObjectSize, as the events carry it) and objects of every type it allocates,
 * so estimates can be checked against the truth. With --no-cleanup it exits holding its
 * kept documents and indexes (the heap not destroyed), and the truth adds what it still
 * holds, per type, from a walk of the heap.
 * Usage: rasp-docstore [--threads N] [--docs N] [--seed N] [--scale TYPE=F] [--truth FILE]
 *                      [--no-cleanup] */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docstore.h"

rasp_heap_t *heap;
static const rasp_type_t *types[N_TYPES];
static double scale[N_TYPES];
static int no_cleanup; /* --no-cleanup: exit holding the kept documents and the indexes */

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t below(struct worker *w, uint64_t n)
{
	return next_rand(&w->rng) % n;
}

/* Every allocation goes through here: it is counted with the size its event would carry. */
void *alloc(struct worker *w, enum type_id t, size_t size, unsigned flags)
{
	void *p = rasp_context_alloc(w->ctx, types[t], size, flags);

	if (!p) {
		fprintf(stderr, "rasp-docstore: allocating %zu bytes of %s: %s\n", size,
			type_names[t], strerror(errno));
		w->failed = 1;
		exit(1);
	}
	w->bytes[t] += rasp_object_size(p);
	w->objects[t]++;
	if (scale[t] > 0) {
		/* --scale: F - 1 extra copies on average, freed at once, drawn from a generator
		 * of their own so the documents stay the same as without --scale. */
		double extra = scale[t];
		unsigned n = (unsigned)extra;

		if ((double)(next_rand(&w->scale_rng) >> 11) * 0x1p-53 < extra - n)
			n++;
		while (n--) {
			void *q = rasp_context_alloc(w->ctx, types[t], size, flags);

			if (!q) {
				w->failed = 1;
				exit(1);
			}
			w->bytes[t] += rasp_object_size(q);
			w->objects[t]++;
			rasp_free(heap, q);
		}
	}
	return p;
}

/* --- the index ---------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static void index_insert(struct worker *w, uint64_t h, uint64_t doc)
{
	struct posting *p;

	if (w->n_postings >= w->n_buckets * 2) {
		size_t nb = w->n_buckets ? w->n_buckets * 2 : 64;
		struct posting **b = alloc(w, T_INDEX_BUCKETS, nb * sizeof(*b), 0);

		memset(b, 0, nb * sizeof(*b));
		for (size_t i = 0; i < w->n_buckets; i++)
			for (struct posting *q = w->buckets[i], *next; q; q = next) {
				next = q->next;
				q->next = b[q->hash % nb];
				b[q->hash % nb] = q;
			}
		if (w->buckets)
			rasp_free(heap, w->buckets);
		w->buckets = b;
		w->n_buckets = nb;
	}
	p = alloc(w, T_INDEX_POSTING, sizeof(*p), 0);
	p->hash = h;
	p->doc = doc;
	p->next = w->buckets[h % w->n_buckets];
	w->buckets[h % w->n_buckets] = p;
	w->n_postings++;
}

static void index_tree(struct worker *w, const struct node *n, uint64_t doc)
{
	switch (n->kind) {
	case T_JSON_MAP:
		for (size_t i = 0; i < n->n; i++)
			index_tree(w, n->u.entries[i].value, doc);
		break;
	case T_JSON_ARRAY:
		for (size_t i = 0; i < n->n; i++)
			index_tree(w, n->u.items[i], doc);
		break;
	case T_JSON_STRING:
		index_insert(w, hash_str(n->u.text), doc);
		break;
	default:
		break;
	}
}

static size_t query(struct worker *w, const char *word)
{
	uint64_t h = hash_str(word), *result;
	size_t n = 0, cap = 0;

	result = NULL;
	for (struct posting *p = w->buckets[h % w->n_buckets]; p; p = p->next)
		if (p->hash == h) {
			result = grow(w, T_QUERY_RESULT, result, sizeof(*result), n, &cap);
			result[n++] = p->doc;
		}
	if (result)
		rasp_free(heap, result);
	return n;
}

static void free_index(struct worker *w)
{
	for (size_t i = 0; i < w->n_buckets; i++)
		for (struct posting *q = w->buckets[i], *next; q; q = next) {
			next = q->next;
			rasp_free(heap, q);
		}
	if (w->buckets)
		rasp_free(heap, w->buckets);
}

/* --- a worker ---------------------------------------------------------------------------- */

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	struct node **kept = NULL;
	size_t n_kept = 0;
	struct buf text = {0};

	w->ctx = rasp_context_get(heap);
	if (!w->ctx) {
		fprintf(stderr, "rasp-docstore: no allocation context: %s\n", strerror(errno));
		w->failed = 1;
		return NULL;
	}
	kept = calloc(w->docs, sizeof(*kept));
	for (uint64_t d = 0; d < w->docs; d++) {
		const char *cursor;
		char *doc;
		struct node *tree;

		text.len = 0;
		gen_value(w, &text, 0);
		put(&text, "");
		doc = alloc(w, T_DOC_TEXT, text.len + 1, 0);
		memcpy(doc, text.p, text.len + 1);
		cursor = doc;
		tree = parse_value(w, &cursor);
		rasp_free(heap, doc);
		index_tree(w, tree, d);
		/* Keep one document in eight; the rest are garbage once indexed. */
		if (below(w, 8) == 0)
			kept[n_kept++] = tree;
		else
			free_tree(tree);
		if (d % 16 == 15)
			query(w, words[below(w, 12)]);
		if (d % 64 == 63) {
			size_t sz = 4096 << below(w, 4);
			char *io = alloc(w, T_IO_BUFFER, sz, RASP_ALLOC_PINNED);

			memset(io, 0, 64);
			rasp_free(heap, io);
		}
		if (d % 512 == 511) {
			size_t sz = 100000 + below(w, 400000);
			char *snap = alloc(w, T_SNAPSHOT, sz, 0);

			memset(snap, 0, 64);
			rasp_free(heap, snap);
		}
	}
	free(text.p);
	if (no_cleanup)
		return NULL; /* kept and the index stay live: what the program holds at exit */
	for (size_t i = 0; i < n_kept; i++)
		free_tree(kept[i]);
	free(kept);
	free_index(w);
	return NULL;
}

static int parse_count(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		fprintf(stderr,
			"rasp-docstore: %s '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]\n",
			opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_scale(const char *s)
{
	const char *eq = strchr(s, '=');
	char *end;
	double f;

	for (int t = 0; eq && t < N_TYPES; t++)
		if (strlen(type_names[t]) == (size_t)(eq - s) &&
		    strncmp(type_names[t], s, (size_t)(eq - s)) == 0) {
			errno = 0;
			f = strtod(eq + 1, &end);
			if (errno || end == eq + 1 || *end || !(f >= 1 && f <= 100)) {
				fprintf(stderr,
					"rasp-docstore: --scale factor '%s' is not a number "
					"in [1, 100]\n",
					eq + 1);
				return -1;
			}
			scale[t] = f - 1; /* extra copies on top of the one allocation */
			return 0;
		}
	fprintf(stderr, "rasp-docstore: --scale '%s' is not TYPE=FACTOR with a TYPE of:", s);
	for (int t = 0; t < N_TYPES; t++)
		fprintf(stderr, " %s", type_names[t]);
	fputc('\n', stderr);
	return -1;
}

/* What the heap holds, per type (the walk's ObjectSize is the events'). */
struct held {
	uint64_t bytes[N_TYPES], objects[N_TYPES];
};

static int count_held(void *obj, const rasp_type_t *type, size_t size, int kind, void *arg)
{
	struct held *h = arg;

	(void)obj;
	(void)kind;
	for (int t = 0; t < N_TYPES; t++)
		if (types[t] == type) {
			h->bytes[t] += size;
			h->objects[t]++;
		}
	return 0;
}

static int write_truth(const char *path, const struct worker *ws, uint64_t n)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	uint64_t tb = 0, to = 0;

	if (!f) {
		fprintf(stderr, "rasp-docstore: --truth '%s': %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "{\"rows\": [");
	for (int t = 0, first = 1; t < N_TYPES; t++) {
		uint64_t b = 0, o = 0;

		for (uint64_t i = 0; i < n; i++) {
			b += ws[i].bytes[t];
			o += ws[i].objects[t];
		}
		tb += b;
		to += o;
		if (!o)
			continue;
		fprintf(
		    f, "%s\n  {\"type\": \"%s\", \"bytes\": %" PRIu64 ", \"objects\": %" PRIu64 "}",
		    first ? "" : ",", type_names[t], b, o);
		first = 0;
	}
	fprintf(f, "\n], \"total\": {\"bytes\": %" PRIu64 ", \"objects\": %" PRIu64 "}", tb, to);
	if (no_cleanup) {
		struct held h = {{0}, {0}};
		uint64_t hb = 0, ho = 0;

		if (rasp_heap_walk(heap, count_held, &h) != 0) {
			fprintf(stderr, "rasp-docstore: cannot walk the heap\n");
			return -1;
		}
		fputs(",\n\"held_at_exit\": [", f);
		for (int t = 0, first = 1; t < N_TYPES; t++) {
			hb += h.bytes[t];
			ho += h.objects[t];
			if (!h.objects[t])
				continue;
			fprintf(f,
				"%s\n  {\"type\": \"%s\", \"bytes\": %" PRIu64
				", \"objects\": %" PRIu64 "}",
				first ? "" : ",", type_names[t], h.bytes[t], h.objects[t]);
			first = 0;
		}
		fprintf(f,
			"\n], \"held_total\": {\"bytes\": %" PRIu64 ", \"objects\": %" PRIu64 "}",
			hb, ho);
	}
	fputs("}\n", f);
	if (f != stdout && fclose(f) != 0) {
		fprintf(stderr, "rasp-docstore: writing '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"threads", required_argument, NULL, 't'}, {"docs", required_argument, NULL, 'd'},
	    {"seed", required_argument, NULL, 's'},    {"scale", required_argument, NULL, 'x'},
	    {"truth", required_argument, NULL, 'T'},   {"no-cleanup", no_argument, NULL, 'N'},
	    {"help", no_argument, NULL, 'h'},	       {NULL, 0, NULL, 0},
	};
	uint64_t threads = 4, docs = 20000, seed = 42;
	const char *truth = NULL;
	struct worker *ws;
	pthread_t *tids;
	rasp_heap_stats_t st;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_count("--threads", optarg, 1, 64, &threads))
				return 2;
			break;
		case 'd':
			if (parse_count("--docs", optarg, 1, 100000000, &docs))
				return 2;
			break;
		case 's':
			if (parse_count("--seed", optarg, 0, UINT64_MAX, &seed))
				return 2;
			break;
		case 'x':
			if (parse_scale(optarg))
				return 2;
			break;
		case 'T':
			truth = optarg;
			break;
		case 'N':
			no_cleanup = 1;
			break;
		case 'h':
			printf(
			    "usage: rasp-docstore [--threads N] [--docs N] [--seed N] "
			    "[--scale TYPE=F] [--truth FILE] [--no-cleanup]\n"
			    "A document store on the rasp heap: N threads (default 4) each parse\n"
			    "and index --docs documents (default 20000). --seed fixes the "
			    "workload\n"
			    "(not the sampling: RASP_SEED does). --truth writes the true bytes "
			    "and\n"
			    "objects per type as JSON (- for stdout). --scale TYPE=F allocates\n"
			    "F times as much of TYPE (for testing diffs). --no-cleanup exits\n"
			    "holding the kept documents and indexes (the heap not destroyed);\n"
			    "--truth then adds what it holds per type (held_at_exit).\n");
			return 0;
		default:
			fprintf(stderr,
				"rasp-docstore: option '%s' is unknown or lacks its value\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rasp-docstore: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	rc = rasp_heap_create(&heap, NULL);
	if (rc) {
		fprintf(stderr, "rasp-docstore: cannot create the heap: %s\n", rasp_strerror(rc));
		return 1;
	}
	for (int t = 0; t < N_TYPES; t++) {
		types[t] = rasp_type_register(heap, type_names[t]);
		if (!types[t]) {
			fprintf(stderr, "rasp-docstore: cannot register %s: %s\n", type_names[t],
				strerror(errno));
			return 1;
		}
	}
	ws = calloc(threads, sizeof(*ws));
	tids = calloc(threads, sizeof(*tids));
	if (!ws || !tids)
		return 1;
	for (uint64_t i = 0; i < threads; i++) {
		ws[i].id = (int)i;
		ws[i].rng = seed * 1000003 + i;
		ws[i].scale_rng = ~ws[i].rng;
		ws[i].docs = docs;
		if (pthread_create(&tids[i], NULL, run_worker, &ws[i]) != 0) {
			fprintf(stderr, "rasp-docstore: cannot start thread %" PRIu64 "\n", i);
			return 1;
		}
	}
	for (uint64_t i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		if (ws[i].failed)
			return 1;
	}
	rasp_heap_stats(heap, &st);
	fprintf(stderr,
		"rasp-docstore: %" PRIu64 " threads x %" PRIu64 " documents; %" PRIu64
		" samples emitted\n",
		threads, docs, st.samples);
	if (truth && write_truth(truth, ws, threads))
		return 1;
	free(ws);
	free(tids);
	if (no_cleanup)
		return 0; /* as many programs do: what is live at exit stays live */
	rasp_heap_destroy(heap);
	return 0;
}
