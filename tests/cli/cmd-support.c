/* Support for the rasp report and rasp diff tests (cmd-support.h): work directory, rasp under
 * timeout(1), copies of the committed traces, packet indexes and JSON reports. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd-support.h"
#include "lttng-session.h"

#ifndef RASP_TEST_TIMEOUT
#define RASP_TEST_TIMEOUT "/usr/bin/timeout"
#endif

/* Seconds one rasp command may take: every command here reads or records a few hundred
 * events in well under a second; only a hang comes near this. */
#define CMD_LIMIT "60"

static char work[3072];

static const char *rotate(const char *fmt, const char *a, const char *b)
{
	static char paths[16][4096];
	static unsigned next;
	char *p = paths[next++ % 16];

	snprintf(p, sizeof(paths[0]), fmt, a, b);
	return p;
}

int cmd_work_setup(const char *name)
{
	snprintf(work, sizeof(work), "%s/test-traces/%s-%ld", RASP_TEST_BUILD_DIR, name,
		 (long)getpid());
	const char *rm[] = {"/bin/rm", "-rf", work, NULL};
	const char *mk[] = {"/bin/mkdir", "-p", work, NULL};

	rasp_test_run(NULL, 0, rm, NULL);
	return rasp_test_run(NULL, 0, mk, NULL) == 0 ? 0 : -1;
}

void cmd_work_remove(void)
{
	if (work[0]) {
		const char *rm[] = {"/bin/rm", "-rf", work, NULL};

		rasp_test_run(NULL, 0, rm, NULL);
	}
}

const char *cmd_work(const char *rel)
{
	return rotate("%s/%s", work, rel);
}

const char *cmd_golden(const char *name)
{
	return rotate("%s/%s", RASP_TEST_SOURCE_DIR "/tests/consumer/traces", name);
}

static void join(char *buf, size_t len, const char *const *argv)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; argv[i] && used + 1 < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", argv[i]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

int cmd_rasp(char *out, size_t outlen, const char *const *args, const char *const *env_extra)
{
	const char *argv[64] = {RASP_TEST_TIMEOUT, "-k", "10", CMD_LIMIT,
				rasp_test_build_path("bin/rasp")};
	char line[2048];
	size_t n = 5;
	int rc;

	for (size_t i = 0; args[i]; i++) {
		if (n + 2 > sizeof(argv) / sizeof(argv[0]))
			fail_msg("too many arguments for rasp");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	rc = rasp_test_run(out, outlen, argv, env_extra);
	/* timeout(1): 124 when it sent SIGTERM, 128 + 9 when it had to kill. */
	if (rc == 124 || rc == 137) {
		join(line, sizeof(line), argv + 4);
		fail_msg("'%s' did not end within %s s (a hang); its output:\n%s", line, CMD_LIMIT,
			 out ? out : "");
	}
	return rc;
}

void cmd_tool(const char *const *argv)
{
	char out[4096], line[2048];
	int rc = rasp_test_run(out, sizeof(out), argv, NULL);

	if (rc != 0) {
		join(line, sizeof(line), argv);
		fail_msg("'%s' exited with %d:\n%s", line, rc, out);
	}
}

void cmd_copy(const char *src, const char *dst)
{
	const char *cp[] = {"/bin/cp", "-r", src, dst, NULL};

	cmd_tool(cp);
}

void cmd_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		fail_msg("cannot write %s", path);
}

char *cmd_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4097 > cap) {
			char *b = realloc(buf, cap = cap * 2 + 8192);

			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

int cmd_dir_has_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		fail_msg("cannot list %s", dir);
	while ((e = readdir(d)) && !found)
		found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return found;
}

json_object *cmd_report_json(char *out, size_t outlen, const char *const *args)
{
	static unsigned counter;
	const char *argv[48] = {"report", "--format", "json", "-o"};
	char name[64], line[2048];
	const char *path;
	json_object *j;
	size_t n = 5;
	int rc;

	snprintf(name, sizeof(name), "report-%u.json", counter++);
	path = cmd_work(name);
	argv[4] = path;
	for (size_t i = 0; args[i]; i++) {
		if (n + 2 > sizeof(argv) / sizeof(argv[0]))
			fail_msg("too many arguments for rasp report");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	rc = cmd_rasp(out, outlen, argv, NULL);
	if (rc != 0) {
		join(line, sizeof(line), argv);
		fail_msg("'rasp %s' exited with %d:\n%s", line, rc, out);
	}
	j = json_object_from_file(path);
	if (!j)
		fail_msg("%s is not JSON: %s", path, json_util_get_last_err());
	return j;
}

json_object *cmd_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
	return v;
}

double cmd_num(json_object *o, const char *key)
{
	json_object *v = cmd_get(o, key);

	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		fail_msg("\"%s\" is not a number in %s", key, json_object_to_json_string(o));
	return json_object_get_double(v);
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

size_t cmd_index_packets(const char *index_path, uint64_t *offsets, size_t max)
{
	FILE *f = fopen(index_path, "rb");
	unsigned char head[16], entry[4096];
	uint32_t len;
	size_t n = 0;

	if (!f || fread(head, 1, 16, f) != 16)
		fail_msg("cannot read the index %s", index_path);
	/* Big-endian: magic 0xC1F1DCC1, major, minor, entry length; then entries starting
	 * with the packet's offset in the stream file (lttng-tools' ctf-index.h). */
	len = (uint32_t)head[12] << 24 | (uint32_t)head[13] << 16 | (uint32_t)head[14] << 8 |
	      head[15];
	if (be64(head) >> 32 != 0xC1F1DCC1u || len < 16 || len > sizeof(entry))
		fail_msg("%s is not a CTF index", index_path);
	while (n < max && fread(entry, 1, len, f) == len)
		offsets[n++] = be64(entry);
	fclose(f);
	return n;
}

void cmd_expect_in(const char *out, const char *needle, const char *what)
{
	if (!strstr(out, needle))
		fail_msg("%s: expected \"%s\" in:\n%s", what, needle, out);
}

void cmd_expect_not_in(const char *out, const char *needle, const char *what)
{
	if (strstr(out, needle))
		fail_msg("%s: unexpected \"%s\" in:\n%s", what, needle, out);
}
