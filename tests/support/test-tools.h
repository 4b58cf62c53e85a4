/* Tools the tests run when they are installed: a program found on PATH, and `go tool pprof`
 * over a profile (test-write-pprof.c, test-report-inuse.c). Include after cmocka.h. */
#ifndef RASP_TEST_TOOLS_H
#define RASP_TEST_TOOLS_H

#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `name` on PATH into buf, or NULL. */
static inline const char *rasp_test_on_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");

	while (path && *path) {
		size_t n = strcspn(path, ":");

		if (n && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, path, name) < len &&
		    access(buf, X_OK) == 0)
			return buf;
		path += n + (path[n] == ':');
	}
	return NULL;
}

/* Runs `go tool pprof ARGS FILE`: its standard output and error, NUL-terminated (free it);
 * fails the test when it fails. Not inlined: gcc 12 then takes the memstream's buffer for a
 * dangling pointer at the caller. */
__attribute__((noinline, unused)) static char *rasp_test_go_pprof(const char *go, const char *args,
								  const char *file)
{
	char cmd[8192], *out = NULL;
	size_t len = 0;
	FILE *pipe, *mem = open_memstream(&out, &len);
	int c;

	assert_non_null(mem);
	snprintf(cmd, sizeof(cmd), "'%s' tool pprof %s '%s' 2>&1", go, args, file);
	pipe = popen(cmd, "r");
	assert_non_null(pipe);
	while ((c = fgetc(pipe)) != EOF)
		fputc(c, mem);
	if (pclose(pipe) != 0) {
		fclose(mem);
		fail_msg("%s failed:\n%s", cmd, out);
	}
	assert_int_equal(fclose(mem), 0);
	return out;
}

#endif
