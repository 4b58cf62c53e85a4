/* Fires 3 DotNETRuntime:AllocationSampled events that lack ObjectSize (missing-field-tp.h),
 * for tests/consumer/bt/test-plugin-malformed.c. The provider is built into this program. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "missing-field-tp.h"

int main(void)
{
	for (unsigned i = 0; i < 3; i++)
		lttng_ust_tracepoint(DotNETRuntime, AllocationSampled, 0, "System.String", 8 * i);
	return 0;
}
