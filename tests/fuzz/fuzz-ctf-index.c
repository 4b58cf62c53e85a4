/* libFuzzer target: LTTng CTF packet index files as rasp report reads them to tell a trace
 * cut short (consumer/read/ctf-index.c). Any bytes: a result or an error with an offset. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/ctf-index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rasp_ctf_index ci;
	char err[256];

	err[0] = '\0';
	if (rasp_ctf_index_parse(data, size, &ci, err, sizeof(err)) != 0 &&
	    (err[0] == '\0' || !strstr(err, "offset")))
		abort(); /* every refusal names where */
	return 0;
}
