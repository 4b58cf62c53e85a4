/* Test program: allocates BYTES of type Switch.Before at sampling mean 4096, then switches the
 * running heap to mean 65536 and allocates BYTES of Switch.After; prints the true bytes of
 * each as JSON. A report that unbiased both with one mean would be wrong by 16x for one.
 * With the argument `heaps`: one thread allocates from two heaps at once, Heap.A at mean 4096
 * and Heap.B at 65536, by turns (each heap's samples weighed with the other's mean would be
 * 16x off). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/rasp.h"

static int fill(rasp_heap_t *h, const rasp_type_t *t, size_t total, unsigned long long *bytes)
{
	for (*bytes = 0; *bytes < total;) {
		void *p = rasp_alloc(h, t, 40 + (*bytes / 64) % 200, 0);

		if (!p)
			return -1;
		*bytes += rasp_object_size(p);
		rasp_free(h, p);
	}
	return 0;
}

static int two_heaps(void)
{
	rasp_heap_t *h[2];
	const rasp_type_t *t[2];
	const char *names[2] = {"Heap.A", "Heap.B"};
	const uint64_t means[2] = {4096, 65536};
	unsigned long long total[2] = {0, 0}, b;

	for (int i = 0; i < 2; i++) {
		int rc = rasp_heap_create(&h[i], NULL);

		if (rc) {
			fprintf(stderr, "mean-switch: %s\n", rasp_strerror(rc));
			return 1;
		}
		t[i] = rasp_type_register(h[i], names[i]);
		if (!t[i] || rasp_heap_set_sampling(h[i], RASP_SAMPLING_AUTO, means[i]))
			return 1;
	}
	for (int round = 0; round < 25; round++)
		for (int i = 0; i < 2; i++) {
			if (fill(h[i], t[i], 1024000, &b))
				return 1;
			total[i] += b;
		}
	printf("{\"Heap.A\": %llu, \"Heap.B\": %llu}\n", total[0], total[1]);
	for (int i = 0; i < 2; i++)
		rasp_heap_destroy(h[i]);
	return 0;
}

int main(int argc, char **argv)
{
	rasp_heap_t *h;
	const rasp_type_t *before, *after;
	unsigned long long b1, b2;
	int rc;

	if (argc > 1 && strcmp(argv[1], "heaps") == 0)
		return two_heaps();
	rc = rasp_heap_create(&h, NULL);
	if (rc) {
		fprintf(stderr, "mean-switch: %s\n", rasp_strerror(rc));
		return 1;
	}
	before = rasp_type_register(h, "Switch.Before");
	after = rasp_type_register(h, "Switch.After");
	if (!before || !after || rasp_heap_set_sampling(h, RASP_SAMPLING_AUTO, 4096) ||
	    fill(h, before, 25600000, &b1) ||
	    rasp_heap_set_sampling(h, RASP_SAMPLING_AUTO, 65536) || fill(h, after, 25600000, &b2))
		return 1;
	printf("{\"Switch.Before\": %llu, \"Switch.After\": %llu}\n", b1, b2);
	rasp_heap_destroy(h);
	return 0;
}
