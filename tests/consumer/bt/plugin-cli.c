/* Helpers of the sink.rasp.report tests (plugin-cli.h): the babeltrace2 command line under a
 * timeout, so a test can never hang, and golden-file comparison with an update mode. */
#include "plugin-cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lttng-session.h"

int plugin_mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

int plugin_run(char *out, size_t outlen, const char *const *pre, const char *params, int timeout_s)
{
	static char plugin_path[PATH_MAX + 16], secs[16];
	const char *argv[48];
	size_t n = 0;
	/* babeltrace2 is not built with a sanitizer: preload the runtime a sanitized plugin
	 * needs. The CLI itself leaks nothing at exit (checked with 2.0.4), so leak checks stay
	 * on under ASan. */
	const char *env[] = {
#ifdef RASP_TEST_BT2_PRELOAD
	    "LD_PRELOAD=" RASP_TEST_BT2_PRELOAD, RASP_TEST_BT2_SANITIZER_OPTIONS,
#endif
	    NULL};

	snprintf(plugin_path, sizeof(plugin_path), "--plugin-path=%s", RASP_TEST_PLUGIN_DIR);
	snprintf(secs, sizeof(secs), "%d", timeout_s);
	argv[n++] = RASP_TEST_TIMEOUT;
	argv[n++] = "-k";
	argv[n++] = "5";
	argv[n++] = secs;
	argv[n++] = RASP_TEST_BABELTRACE2;
	argv[n++] = "--omit-home-plugin-path";
	argv[n++] = plugin_path;
	for (size_t i = 0; pre && pre[i] && n < 40; i++)
		argv[n++] = pre[i];
	if (params) {
		argv[n++] = "-c";
		argv[n++] = "sink.rasp.report";
		if (params[0]) {
			argv[n++] = "-p";
			argv[n++] = params;
		}
	}
	argv[n] = NULL;
	return rasp_test_run(out, outlen, argv, env);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)size + 1);
		if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[size] = '\0';
			*len = (size_t)size;
		}
	}
	fclose(f);
	return buf;
}

int plugin_compare(const char *got, const char *expect_rel)
{
	char expect[PATH_MAX];
	size_t glen = 0, elen = 0;
	char *g, *e;
	int ret = -1;
	const char *update = getenv("RASP_UPDATE_EXPECT");

	snprintf(expect, sizeof(expect), "%s/%s", RASP_TEST_TRACES, expect_rel);
	g = slurp(got, &glen);
	if (!g) {
		fprintf(stderr, "plugin_compare: cannot read output %s\n", got);
		return -1;
	}
	if (update && strcmp(update, "1") == 0) {
		FILE *f = fopen(expect, "wb");

		if (f && fwrite(g, 1, glen, f) == glen && fclose(f) == 0) {
			fprintf(stderr, "plugin_compare: updated %s\n", expect_rel);
			free(g);
			return 0;
		}
		fprintf(stderr, "plugin_compare: cannot write %s\n", expect);
		free(g);
		return -1;
	}
	e = slurp(expect, &elen);
	if (!e)
		fprintf(stderr,
			"plugin_compare: cannot read %s (RASP_UPDATE_EXPECT=1 creates it)\n",
			expect);
	else if (elen == glen && memcmp(e, g, glen) == 0)
		ret = 0;
	else
		fprintf(stderr, "plugin_compare: %s differs from %s\n--- expected\n%s--- got\n%s",
			got, expect_rel, e, g);
	free(e);
	free(g);
	return ret;
}
