/* Test program: allocates BYTES of type Switch.Before at sampling mean 4096, then switches the
 * running heap to mean 65536 and allocates BYTES of Switch.After; prints the true bytes of
 * each as JSON. A report that unbiased both with one mean would be wrong by 16x for one. */
#include <stdio.h>
#include <stdlib.h>

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

int main(void)
{
	rasp_heap_t *h;
	const rasp_type_t *before, *after;
	unsigned long long b1, b2;
	int rc = rasp_heap_create(&h, NULL);

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
