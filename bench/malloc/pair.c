/* N malloc+free pairs of SIZE bytes, and N allocations then their frees, under whichever
 * malloc is preloaded: pair.sh counts their instructions with callgrind (docs/performance.md,
 * "librasp-malloc"). Benchmark only. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 32;
	void *volatile sink;
	void **keep = malloc((size_t)n * sizeof(*keep));

	if (!keep)
		return 1;
	for (long i = 0; i < n; i++) { /* pairs: one block reused */
		sink = malloc(size);
		free(sink);
	}
	for (long i = 0; i < n; i++) /* then n live blocks, freed in order */
		keep[i] = malloc(size);
	for (long i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	(void)sink;
	return 0;
}
