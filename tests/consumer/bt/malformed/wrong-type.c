/* Fires 3 DotNETRuntime:AllocationSampled events whose ObjectSize is a string
 * (wrong-type-tp.h), for tests/consumer/bt/test-plugin-malformed.c. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "wrong-type-tp.h"

int main(void)
{
	for (unsigned i = 0; i < 3; i++)
		lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, 0, "System.String", "128",
				     8 * i);
	return 0;
}
