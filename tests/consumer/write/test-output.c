/* Unit tests of consumer/write/output.c in a fresh temporary directory: the destination appears
 * only at commit (0666 less the umask), an existing file survives an abort, a failed open and a
 * failed commit (the temporary file never stays behind), a directory that cannot take a file
 * fails at open with the path in the message, and standard output is never closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/output.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/rasp-test-output-XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

/* Removes what the tests leave: files, and directories one level down. */
static int teardown(void **state)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX * 2];

	(void)state;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			chmod(p, 0700);
			if (unlink(p) != 0)
				rmdir(p);
		}
	closedir(d);
	return rmdir(dir);
}

static void path_in(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	assert_true(n > 0 && (size_t)n < len);
}

/* Entries of the test directory, as "a b c" (sorted), for messages and checks. */
static void listing(char *buf, size_t len)
{
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.' ||
		    (strcmp(v[i]->d_name, ".") != 0 && strcmp(v[i]->d_name, "..") != 0))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "",
				 v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

static void check_listing(const char *want)
{
	char got[4096];

	listing(got, sizeof(got));
	if (strcmp(got, want) != 0) {
		printf("directory holds \"%s\", want \"%s\"\n", got, want);
		fail();
	}
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void check_file(const char *path, const char *want)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f) {
		printf("%s: cannot open: %s\n", path, strerror(errno));
		fail();
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (strcmp(buf, want) != 0) {
		printf("%s holds \"%s\", want \"%s\"\n", path, buf, want);
		fail();
	}
}

static void test_output_commit_creates(void **state)
{
	(void)state;
	struct rasp_output o;
	char path[PATH_MAX], tmpname[PATH_MAX + 16], err[512] = "";
	struct stat st;
	mode_t old = umask(027);

	path_in(path, sizeof(path), "report.txt");
	assert_int_equal(rasp_output_open(&o, path, err, sizeof(err)), 0);
	umask(old);
	assert_non_null(o.f);
	assert_string_equal(o.path, path);
	/* The text goes to a temporary file beside the destination. */
	snprintf(tmpname, sizeof(tmpname), "%s.tmp-", path);
	assert_non_null(o.tmp);
	assert_int_equal(strncmp(o.tmp, tmpname, strlen(tmpname)), 0);
	assert_int_equal(stat(o.tmp, &st), 0);
	snprintf(tmpname, sizeof(tmpname), "%s", o.tmp);
	assert_true(fprintf(o.f, "hello\n") > 0);
	fflush(o.f);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(rasp_output_commit(&o), 0);
	assert_null(o.f);
	assert_null(o.path);
	assert_null(o.tmp);
	check_file(path, "hello\n");
	assert_int_equal(stat(tmpname, &st), -1);
	check_listing("report.txt");
	/* An ordinary file: 0666 less the umask, not mkostemp's 0600. */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	/* Committed once: nothing left to commit. */
	assert_int_equal(rasp_output_commit(&o), -EBADF);
	assert_int_equal(unlink(path), 0);
}

static void test_output_commit_replaces(void **state)
{
	(void)state;
	struct rasp_output o;
	char path[PATH_MAX], err[512];

	path_in(path, sizeof(path), "r.csv");
	write_file(path, "old\n");
	assert_int_equal(rasp_output_open(&o, path, err, sizeof(err)), 0);
	fputs("new\n", o.f);
	fflush(o.f);
	check_file(path, "old\n"); /* untouched until the commit */
	assert_int_equal(rasp_output_commit(&o), 0);
	check_file(path, "new\n");
	check_listing("r.csv");
	assert_int_equal(unlink(path), 0);
}

static void test_output_abort_keeps(void **state)
{
	(void)state;
	struct rasp_output o;
	char path[PATH_MAX], err[512];

	path_in(path, sizeof(path), "keep.json");
	write_file(path, "old\n");
	assert_int_equal(rasp_output_open(&o, path, err, sizeof(err)), 0);
	fputs("half a report", o.f);
	rasp_output_abort(&o);
	assert_null(o.f);
	assert_null(o.path);
	assert_null(o.tmp);
	check_file(path, "old\n");
	check_listing("keep.json");
	rasp_output_abort(&o); /* twice is harmless */

	/* A new destination aborted: nothing appears. */
	path_in(path, sizeof(path), "never.json");
	assert_int_equal(rasp_output_open(&o, path, err, sizeof(err)), 0);
	rasp_output_abort(&o);
	check_listing("keep.json");
	path_in(path, sizeof(path), "keep.json");
	assert_int_equal(unlink(path), 0);
}

/* rc, errno value and the message naming the path. */
static void check_open_fails(const char *path, int want_rc)
{
	struct rasp_output o;
	char err[PATH_MAX + 256] = "", want[PATH_MAX + 32];
	int rc = rasp_output_open(&o, path, err, sizeof(err));

	snprintf(want, sizeof(want), "output=\"%s\"", path);
	if (rc != want_rc || !strstr(err, want) || !strstr(err, "cannot create")) {
		printf("open %s: rc %d \"%s\", want %d and the path\n", path, rc, err, want_rc);
		fail();
	}
	assert_null(o.f);
	assert_null(o.path);
	assert_null(o.tmp);
}

/* A directory that cannot take a file fails at open, and a file already there survives. */
static void test_output_open_fails(void **state)
{
	(void)state;
	char path[PATH_MAX], file[PATH_MAX], name[256];

	path_in(path, sizeof(path), "no/such/dir/report.txt");
	check_open_fails(path, -ENOENT);
	/* A regular file where the directory should be. */
	path_in(file, sizeof(file), "plain");
	write_file(file, "old\n");
	path_in(path, sizeof(path), "plain/report.txt");
	check_open_fails(path, -ENOTDIR);
	check_file(file, "old\n");
	/* A destination whose temporary name is too long for the file system (255 bytes):
	 * the destination exists and survives. */
	memset(name, 'n', 250);
	name[250] = '\0';
	path_in(path, sizeof(path), name);
	write_file(path, "old\n");
	check_open_fails(path, -ENAMETOOLONG);
	check_file(path, "old\n");
	assert_int_equal(unlink(path), 0);
	check_listing("plain");
	assert_int_equal(unlink(file), 0);

	/* A read-only directory: root writes anyway, so only checked as another user. */
	if (geteuid() != 0) {
		char ro[PATH_MAX];

		path_in(ro, sizeof(ro), "ro");
		assert_int_equal(mkdir(ro, 0700), 0);
		path_in(path, sizeof(path), "ro/report.txt");
		write_file(path, "old\n");
		assert_int_equal(chmod(ro, 0500), 0);
		check_open_fails(path, -EACCES);
		check_file(path, "old\n");
		assert_int_equal(chmod(ro, 0700), 0);
		assert_int_equal(unlink(path), 0);
		assert_int_equal(rmdir(ro), 0);
	} else {
		printf("note: running as root, the read-only directory case is not checked "
		       "(root writes anyway)\n");
	}
}

/* A commit that cannot rename (the destination is a directory): an error, the destination
 * untouched, the temporary file removed. */
static void test_output_commit_fails(void **state)
{
	(void)state;
	struct rasp_output o;
	char path[PATH_MAX], err[512];
	struct stat st;

	path_in(path, sizeof(path), "adir");
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(rasp_output_open(&o, path, err, sizeof(err)), 0);
	fputs("report\n", o.f);
	assert_int_equal(rasp_output_commit(&o), -EISDIR);
	assert_null(o.f);
	assert_null(o.tmp);
	assert_null(o.path);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	check_listing("adir");
	assert_int_equal(rmdir(path), 0);
}

static void test_output_stdout(void **state)
{
	(void)state;
	struct rasp_output o = {0};
	char err[64] = "";

	assert_int_equal(rasp_output_commit(&o), -EBADF); /* never opened */
	assert_int_equal(rasp_output_open(&o, NULL, err, sizeof(err)), 0);
	assert_ptr_equal(o.f, stdout);
	assert_null(o.path);
	assert_null(o.tmp);
	assert_int_equal(rasp_output_commit(&o), 0);
	assert_null(o.f);
	assert_int_not_equal(fcntl(STDOUT_FILENO, F_GETFD), -1);
	assert_int_equal(rasp_output_open(&o, NULL, err, sizeof(err)), 0);
	rasp_output_abort(&o);
	assert_null(o.f);
	/* Still open, still usable. */
	assert_int_not_equal(fcntl(STDOUT_FILENO, F_GETFD), -1);
	assert_true(printf("stdout still open\n") > 0);
	assert_int_equal(fflush(stdout), 0);
	check_listing("");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_output_commit_creates, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_commit_replaces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_abort_keeps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_open_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_commit_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_stdout, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
