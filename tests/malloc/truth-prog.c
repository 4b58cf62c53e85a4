/* A program with four known allocation sites for the truth test (record-truth.py): it does
 * not link librasp, so `rasp record` preloads librasp-malloc.so, and it counts what it
 * allocated at each site exactly (the bytes each call asked for, which a sample's ObjectSize
 * is, and every realloc, in place or moved: docs/usage.md, "What is estimated"; site_grow's
 * last three are in place), then writes
 * its pid and "site objects bytes" lines to the file named by its argument. The sites keep their
 * results (no tail calls), so each is a frame of its own. With "family" after the file, it then
 * forks a child that does the same into FILE.child, and another that execs the program into
 * FILE.exec (with RASP_SEED + 7919, so that its samples are its own): three processes to follow. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 40000
#define KEEP   64

static void *kept[KEEP];
static struct {
	const char *name;
	uint64_t objects, bytes;
} truth[4] = {
    {"site_small", 0, 0}, {"site_zeroed", 0, 0}, {"site_grow", 0, 0}, {"site_aligned", 0, 0}};

/* One call that returned n bytes (n > 0: every site asks for some). */
static void count(int site, size_t n)
{
	truth[site].objects++;
	truth[site].bytes += n;
}

static void keep(unsigned i, void *p)
{
	free(kept[i % KEEP]);
	kept[i % KEEP] = p;
}

__attribute__((noinline)) static void *site_small(unsigned i)
{
	size_t n = 40 + i % 24;
	void *p = malloc(n);

	count(0, n);
	return p;
}

__attribute__((noinline)) static void *site_zeroed(unsigned i)
{
	size_t n = 2000 + (i % 7) * 300;
	void *p = calloc(1, n);

	count(1, n);
	return p;
}

/* Grown by doubling (each realloc moves), then trimmed to fit and grown a little, in place
 * (the block holds those sizes, and they use at least half of it): one call line, so that the
 * report's site is one row. */
__attribute__((noinline)) static void *site_grow(unsigned i)
{
	size_t sizes[16], k = 0, grown, n, last;
	char *p = NULL;

	for (n = 64; n <= 16384 + (i % 5) * 1000; n *= 2)
		sizes[k++] = n;
	grown = k;
	last = sizes[k - 1];
	for (size_t j = 0; j < 3; j++)
		sizes[k++] = last - last / 4 - i % 64 + j * (last / 8);
	for (size_t j = 0; j < k; j++) {
		char *q = realloc(p, sizes[j]);

		if (j >= grown && q != p)
			abort();    /* not in place: the site would not test what it means to */
		count(2, sizes[j]); /* moved or in place: an allocation of its size either way */
		p = q;
	}
	return p;
}

__attribute__((noinline)) static void *site_aligned(unsigned i)
{
	size_t n = 700 + i % 100;
	void *p = NULL;

	if (posix_memalign(&p, 64, n) != 0)
		abort();
	count(3, n);
	return p;
}

/* The sites' loop, then the truth into path. 0 or 1. */
static int run(const char *path)
{
	FILE *f;

	for (unsigned i = 0; i < ROUNDS; i++) {
		keep(4 * i, site_small(i));
		keep(4 * i + 1, site_zeroed(i));
		keep(4 * i + 2, site_grow(i));
		keep(4 * i + 3, site_aligned(i));
	}
	for (unsigned i = 0; i < KEEP; i++) {
		free(kept[i]);
		kept[i] = NULL;
	}
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "pid %d\n", (int)getpid());
	for (int s = 0; s < 4; s++)
		fprintf(f, "%s %llu %llu\n", truth[s].name, (unsigned long long)truth[s].objects,
			(unsigned long long)truth[s].bytes);
	return fclose(f) == 0 ? 0 : 1;
}

static int child_status(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
	char path[4096];
	pid_t pid;
	int rc;

	/* librasp there (loaded by librasp-malloc.so), or nothing here is rasp's. */
	if (argc < 2 || argc > 3 || !dlsym(RTLD_DEFAULT, "rasp_object_size")) {
		fprintf(stderr, "usage: %s TRUTH-FILE [family], with librasp-malloc.so preloaded\n",
			argv[0]);
		return 2;
	}
	rc = run(argv[1]);
	if (rc || argc == 2 || strcmp(argv[2], "family") != 0)
		return rc;
	snprintf(path, sizeof(path), "%s.child", argv[1]);
	pid = fork();
	if (pid == 0) {
		for (int s = 0; s < 4; s++)
			truth[s].objects = truth[s].bytes = 0;
		_exit(run(path));
	}
	rc = child_status(pid);
	snprintf(path, sizeof(path), "%s.exec", argv[1]);
	pid = fork();
	if (pid == 0) {
		/* Another seed for the copy, so that its samples are not its parent's again. */
		const char *seed = getenv("RASP_SEED");
		char next[32];

		if (seed) {
			snprintf(next, sizeof(next), "%llu", strtoull(seed, NULL, 0) + 7919);
			setenv("RASP_SEED", next, 1);
		}
		execl(argv[0], argv[0], path, (char *)NULL);
		_exit(127);
	}
	return rc | child_status(pid);
}
