/* What a report reads: operands resolved into CTF trace directories (each once) and live
 * URLs, and every CTF trace's stream files checked against their packet index, so a trace cut
 * short (full disk, interrupted copy, emptied file) is reported as incomplete instead of read
 * as if whole. The walk and the checks are bounded: at most MAX_TRACES traces, MAX_STREAMS
 * stream files per trace, index files up to MAX_INDEX bytes. */
#define _GNU_SOURCE
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/ctf-index.h"
#include "read/nettrace-read.h"

#define MAX_TRACES  256
#define MAX_STREAMS 4096
#define MAX_INDEX   (64u << 20)

/* nftw has no user pointer: the walk fills this, one walk at a time. */
static struct {
	char *dirs[MAX_TRACES];
	size_t n;
	bool overflow;
	char *unreadable; /* first directory or file the walk could not read */
} walk;

static int collect(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	if ((type == FTW_DNR || type == FTW_NS) && !walk.unreadable) {
		walk.unreadable = strdup(path);
		return 1;
	}
	if (type != FTW_F || strcmp(path + ftw->base, "metadata") != 0)
		return 0;
	if (walk.n == MAX_TRACES) {
		walk.overflow = true;
		return 1;
	}
	walk.dirs[walk.n] = strndup(path, (size_t)ftw->base - 1);
	return walk.dirs[walk.n++] ? 0 : 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add(struct rasp_inputs *in, enum rasp_input_kind kind, char *path, const char *given)
{
	if (rasp_array_grow((void **)&in->v, &in->cap, in->n, sizeof(*in->v))) {
		free(path);
		return -ENOMEM;
	}
	in->v[in->n++] = (struct rasp_input){.kind = kind, .path = path, .given = given};
	return 0;
}

void rasp_inputs_free(struct rasp_inputs *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->v[i].path);
	free(in->v);
	*in = (struct rasp_inputs){0};
}

/* Reads a whole small file; NULL with errno set otherwise. */
static void *read_file(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (uint64_t)st.st_size > max) {
		if (!errno)
			errno = EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto out;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	*len = got;
out:
	close(fd);
	return buf;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* One stream file against its index; its bytes, discarded events and lost packets added to
 * in's. A stream shorter than its index says lost packets at its end; babeltrace2 would read
 * the rest as if it were whole. */
static void check_stream(const char *dir, const char *name, struct rasp_tally *t,
			 struct rasp_inputs *in)
{
	char path[PATH_MAX], idx[PATH_MAX], err[256];
	struct rasp_ctf_index ci;
	struct stat st;
	size_t len = 0;
	bool present;
	void *buf;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    snprintf(idx, sizeof(idx), "%s/index/%s.idx", dir, name) >= (int)sizeof(idx))
		return;
	present = stat(path, &st) == 0;
	buf = read_file(idx, MAX_INDEX, &len);
	if (!buf) { /* no index (a trace copied without it): nothing to compare with */
		in->stream_bytes = add_sat(in->stream_bytes, present ? (uint64_t)st.st_size : 0);
		in->unindexed++;
		return;
	}
	if (rasp_ctf_index_parse(buf, len, &ci, err, sizeof(err))) {
		rasp_tally_add_warning(
		    t, "trace incomplete: the packet index %s is unreadable (%s)", idx, err);
		in->stream_bytes = add_sat(in->stream_bytes, present ? (uint64_t)st.st_size : 0);
		in->unindexed++;
	} else if (!present) {
		rasp_tally_add_warning(t,
				       "trace incomplete: stream file %s is missing (its index "
				       "lists %" PRIu64 " packets)",
				       path, ci.packets);
		in->events_discarded = add_sat(in->events_discarded, ci.events_discarded);
		in->packets_lost = add_sat(in->packets_lost, ci.packets_lost);
	} else {
		if ((uint64_t)st.st_size < ci.stream_bytes)
			rasp_tally_add_warning(t,
					       "trace incomplete: stream file %s holds %" PRIu64
					       " bytes of the %" PRIu64 " its index lists (%" PRIu64
					       " packets): events at its end are lost",
					       path, (uint64_t)st.st_size, ci.stream_bytes,
					       ci.packets);
		in->stream_bytes = add_sat(in->stream_bytes, (uint64_t)st.st_size);
		in->events_discarded = add_sat(in->events_discarded, ci.events_discarded);
		in->packets_lost = add_sat(in->packets_lost, ci.packets_lost);
	}
	free(buf);
}

/* Every stream of a trace directory: its files other than metadata, plus any index entry
 * whose stream file is gone. */
static void check_trace(const char *dir, struct rasp_tally *t, struct rasp_inputs *in)
{
	char path[PATH_MAX];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	if (!t)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)) && n < MAX_STREAMS) {
		struct stat st;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "metadata") == 0 ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
		    stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		check_stream(dir, e->d_name, t, in);
		n++;
	}
	if (e) /* streams past MAX_STREAMS: unchecked, so what they lost is unknown */
		in->unindexed++;
	closedir(d);
	if (snprintf(path, sizeof(path), "%s/index", dir) >= (int)sizeof(path))
		return;
	d = opendir(path);
	if (!d)
		return;
	n = 0;
	while ((e = readdir(d)) && n++ < MAX_STREAMS) {
		size_t len = strlen(e->d_name);
		char stream[NAME_MAX + 1];
		struct stat st;

		if (len <= 4 || strcmp(e->d_name + len - 4, ".idx") != 0)
			continue;
		snprintf(stream, sizeof(stream), "%.*s", (int)(len - 4), e->d_name);
		if (snprintf(path, sizeof(path), "%s/%s", dir, stream) < (int)sizeof(path) &&
		    stat(path, &st) != 0)
			check_stream(dir, stream, t, in);
	}
	closedir(d);
}

/* The CTF traces under root, sorted; -errno with a message, 0 traces is not an error here. */
static int find_traces(const char *cmd, const char *root, struct rasp_inputs *in, size_t *found)
{
	int rc = 0, err;
	char *real = realpath(root, NULL);

	/* realpath's reason (no such file, permission) is the one to name. */
	err = real ? 0 : errno;
	walk.n = 0;
	walk.overflow = false;
	walk.unreadable = NULL;
	errno = 0;
	/* The operand itself may be a symbolic link to a trace; inside it links are not
	 * followed (no cycles, no trace counted twice through a link). */
	if (!real || nftw(real, collect, 16, FTW_PHYS) != 0 || walk.overflow || walk.unreadable) {
		if (!err)
			err = errno ? errno : EIO;

		if (walk.overflow)
			rasp_cli_error(cmd,
				       "'%s' holds more than %d CTF traces; report fewer at once",
				       root, MAX_TRACES);
		else if (walk.unreadable)
			rasp_cli_error(cmd, "cannot read '%s' under the trace directory '%s'",
				       walk.unreadable, root);
		else
			rasp_cli_error(cmd, "cannot read trace directory '%s': %s", root,
				       strerror(err));
		rc = walk.overflow ? -E2BIG : -err;
		goto out;
	}
	/* Sorted: components get stable names whatever order the directory lists. */
	qsort(walk.dirs, walk.n, sizeof(walk.dirs[0]), cmp_str);
	for (size_t i = 0; i < walk.n && !rc; i++) {
		char *real = realpath(walk.dirs[i], NULL);

		rc = real ? add(in, RASP_INPUT_CTF, real, root) : -errno;
	}
	*found = walk.n;
out:
	for (size_t i = 0; i < walk.n; i++)
		free(walk.dirs[i]);
	free(walk.unreadable);
	free(real);
	walk.n = 0;
	return rc;
}

static int find_metadata(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	return type == FTW_F && strcmp(path + ftw->base, "metadata") == 0;
}

/* Whether a directory holds a .nettrace file (the first MAX_STREAMS entries, no deeper): a
 * user who gave the directory meant those. */
static bool holds_nettrace(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	bool any = false;
	size_t n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (!any && (e = readdir(d)) && n++ < MAX_STREAMS)
		any = e->d_name[0] != '.' &&
		      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path) &&
		      stat(path, &st) == 0 && S_ISREG(st.st_mode) && rasp_nt_is_nettrace(path);
	closedir(d);
	return any;
}

bool rasp_inputs_any(const char *dir)
{
	char *real = realpath(dir, NULL);
	bool any = real && nftw(real, find_metadata, 16, FTW_PHYS) == 1;

	free(real);
	return any;
}

int rasp_inputs_collect(const char *cmd, char *const *operands, size_t n, struct rasp_inputs *out,
			struct rasp_tally *t)
{
	int rc = 0;

	*out = (struct rasp_inputs){0};
	for (size_t i = 0; i < n && !rc; i++) {
		const char *op = operands[i];
		struct stat st;
		size_t found = 0;

		if (strncmp(op, "net://", 6) == 0) {
			if (n > 1) {
				rasp_cli_error(cmd, "a live URL ('%s') must be the only input", op);
				rc = -EINVAL;
				break;
			}
			char *url = strdup(op);

			rc = url ? add(out, RASP_INPUT_LIVE, url, op) : -ENOMEM;
			continue;
		}
		if (stat(op, &st) != 0) {
			int err = errno;

			/* Named for what it is not: a missing .nettrace file is no "trace
			 * directory". */
			rasp_cli_error(cmd, "cannot read '%s': %s", op, strerror(err));
			rc = -err;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			char *real;
			int fd;

			/* A FIFO or a device would block the check below, or be read twice. */
			if (!S_ISREG(st.st_mode)) {
				rasp_cli_error(
				    cmd,
				    "'%s' is neither a trace directory nor a regular file "
				    "(an EventPipe .nettrace file)",
				    op);
				rc = -EINVAL;
				break;
			}
			fd = open(op, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				int err = errno;

				rasp_cli_error(cmd, "cannot read '%s': %s", op, strerror(err));
				rc = -err;
				break;
			}
			close(fd);
			if (!rasp_nt_is_nettrace(op)) {
				rasp_cli_error(cmd,
					       "'%s' is neither a trace directory nor an EventPipe "
					       ".nettrace file",
					       op);
				rc = -EINVAL;
				break;
			}
			real = realpath(op, NULL);
			rc = real ? add(out, RASP_INPUT_NETTRACE, real, op) : -errno;
			continue;
		}
		rc = find_traces(cmd, op, out, &found);
		if (!rc && found == 0 && holds_nettrace(op)) {
			rasp_cli_error(
			    cmd,
			    "'%s' holds no CTF trace (no metadata file) but holds EventPipe "
			    ".nettrace files: give each file as an operand (rasp report "
			    "%s/*.nettrace)",
			    op, op);
			rc = -ENOENT;
		} else if (!rc && found == 0) {
			rasp_cli_error(cmd,
				       "'%s' holds no CTF trace (no metadata file): was anything "
				       "recorded? A program that emits no event (one that does not "
				       "allocate through librasp) leaves an empty trace directory",
				       op);
			rc = -ENOENT;
		}
	}
	/* Each trace once: the same directory or file given twice, or a directory inside
	 * another, would count every sample twice. */
	for (size_t i = 0; !rc && i < out->n; i++)
		for (size_t j = i + 1; !rc && j < out->n; j++)
			if (out->v[i].kind != RASP_INPUT_LIVE &&
			    strcmp(out->v[i].path, out->v[j].path) == 0) {
				rasp_cli_error(cmd,
					       "the trace %s is in the input twice (from '%s' and "
					       "'%s'): its samples would count twice; give it once",
					       out->v[i].path, out->v[i].given, out->v[j].given);
				rc = -EINVAL;
			}
	if (rc) {
		rasp_inputs_free(out);
		return rc;
	}
	for (size_t i = 0; i < out->n; i++) {
		if (t && rasp_tally_add_input(t, out->v[i].path))
			return -ENOMEM;
		/* A .nettrace file's completeness is its reader's to say, at its end
		 * (graph.c hears it from source.rasp.nettrace). */
		if (out->v[i].kind == RASP_INPUT_CTF)
			check_trace(out->v[i].path, t, out);
	}
	return 0;
}
