/* libFuzzer target: saved JSON reports as rasp diff reads them (consumer/write/read-json.c).
 * Any bytes: a report whose every row has its numbers, consistent, or a refusal that names
 * the file; never a crash, a leak or an unchecked conversion (UBSan). The input goes through a
 * file, as the reader takes a path. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "write/read-json.h"

static char path[] = "/tmp/rasp-fuzz-read-json-XXXXXX";

static void remove_file(void)
{
	unlink(path);
}

static void check(bool by_site)
{
	struct rasp_json_report r;
	char err[512];
	int rc = rasp_json_report_read(path, 0.95, by_site, &r, err, sizeof(err));

	if (rc == 0) {
		for (size_t i = 0; i < r.n; i++) {
			const struct rasp_est_total *e = &r.items[i].est;

			if (!r.items[i].type ||
			    !(e->bytes_low >= 0 && e->bytes_low <= e->bytes_high &&
			      isfinite(e->bytes) && isfinite(e->objects)))
				abort(); /* a row accepted that the reader must refuse */
		}
		if (!(r.mean >= 1))
			abort();
	} else if (rc != -ENOMEM && !strstr(err, path)) {
		abort(); /* every refusal names the file */
	}
	rasp_json_report_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (fd < 0) {
		fd = mkstemp(path);
		if (fd < 0 || atexit(remove_file))
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	check(false);
	check(true);
	return 0;
}
