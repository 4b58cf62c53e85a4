/* A module test-malloc-process dlopens and dlcloses: it allocates in its constructor, frees
 * in its destructor, and hands out a block the caller frees. */
#include <stdlib.h>
#include <string.h>

static char *held;

__attribute__((constructor)) static void module_init(void)
{
	held = malloc(1000);
	if (held)
		strcpy(held, ":module");
}

__attribute__((destructor)) static void module_fini(void)
{
	free(held);
}

__attribute__((visibility("default"))) char *dl_module_make(const char *s)
{
	char *r = malloc(strlen(s) + strlen(held) + 1);

	if (r) {
		strcpy(r, s);
		strcat(r, held);
	}
	return r;
}
