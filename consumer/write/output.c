/* Report output (output.h): a temporary file beside the destination, renamed at commit. */
#define _GNU_SOURCE /* mkostemp */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rasp_output_open(struct rasp_output *o, const char *path, char *err, size_t errlen)
{
	size_t len;
	int fd;

	*o = (struct rasp_output){0};
	if (!path) {
		o->f = stdout;
		return 0;
	}
	len = strlen(path);
	o->path = strdup(path);
	o->tmp = malloc(len + 16);
	if (!o->path || !o->tmp) {
		rasp_output_abort(o);
		snprintf(err, errlen, "out of memory: output=\"%s\"", path);
		return -ENOMEM;
	}
	/* Beside the destination: rename() is atomic only within one file system. */
	snprintf(o->tmp, len + 16, "%s.tmp-XXXXXX", path);
	fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot create the output file: output=\"%s\" errno=%d (%s)",
			 path, e, strerror(e));
		free(o->tmp);
		o->tmp = NULL;
		rasp_output_abort(o);
		return -e;
	}
	/* mkostemp makes 0600; a report is an ordinary file (0666 less the umask). */
	{
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;

		close(fd);
		rasp_output_abort(o);
		snprintf(err, errlen, "cannot open the output file: output=\"%s\" errno=%d (%s)",
			 path, e, strerror(e));
		return -e;
	}
	return 0;
}

int rasp_output_commit(struct rasp_output *o)
{
	int ret = 0;

	if (!o->f)
		return -EBADF;
	if (fflush(o->f) || ferror(o->f))
		ret = -(errno ? errno : EIO);
	if (!o->path) {
		o->f = NULL;
		return ret;
	}
	if (fclose(o->f) && !ret)
		ret = -(errno ? errno : EIO);
	o->f = NULL;
	if (!ret && rename(o->tmp, o->path) != 0)
		ret = -errno;
	if (ret)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return ret;
}

void rasp_output_abort(struct rasp_output *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	*o = (struct rasp_output){0};
}
