/* A program for test-primer.c: reads FILE until it holds TEXT, for at most 20 s, without
 * starting another process (a process's exit would itself make LTTng push the metadata).
 * Exit status 0 once TEXT is there, 3 if it never came, 2 on bad usage. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

static int holds(const char *path, const char *text)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return memmem(buf, n, text, strlen(text)) != NULL;
}

int main(int argc, char **argv)
{
	struct timespec tick = {0, 50 * 1000 * 1000};

	if (argc != 3) {
		fprintf(stderr, "usage: metadata-watch FILE TEXT\n");
		return 2;
	}
	for (int i = 0; i < 400; i++) {
		if (holds(argv[1], argv[2]))
			return 0;
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "metadata-watch: no '%s' in %s after 20 s\n", argv[2], argv[1]);
	return 3;
}
