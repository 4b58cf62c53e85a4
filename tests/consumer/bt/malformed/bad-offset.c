/* Fires 3 well-laid-out DotNETRuntime:AllocationSampled events whose SampledByteOffset is
 * not below ObjectSize (bad-offset-tp.h), for tests/consumer/bt/test-plugin-malformed.c: the
 * per-event check, where the other programs trip the per-class one. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "bad-offset-tp.h"

int main(void)
{
	for (unsigned i = 0; i < 3; i++)
		lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, "System.String", 24, 24 + i);
	return 0;
}
