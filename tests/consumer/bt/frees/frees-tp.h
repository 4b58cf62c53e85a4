/* Test-only provider: DotNETRuntime:AllocationSampled and Rasp_Runtime:SampledObjectsFreed laid
 * out as the manifests' (rasp-events.man), so that a test can fire a batch of frees with the
 * ages it chooses, and values the runtime never sends. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER DotNETRuntime
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./frees-tp.h"

#if !defined(RASP_FREES_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RASP_FREES_TP_H

#include <lttng/tracepoint.h>
#include <stddef.h>
#include <stdint.h>

/* clang-format off */
LTTNG_UST_TRACEPOINT_EVENT(DotNETRuntime, AllocationSampled,
	LTTNG_UST_TP_ARGS(const char *, type_name, uintptr_t, address, uint64_t, size),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(unsigned int, AllocationKind, 0)
		lttng_ust_field_integer(unsigned short, ClrInstanceID, 0)
		lttng_ust_field_integer(size_t, TypeID, 0)
		lttng_ust_field_string(TypeName, type_name)
		lttng_ust_field_integer(size_t, Address, address)
		lttng_ust_field_integer(uint64_t, ObjectSize, size)
		lttng_ust_field_integer(uint64_t, SampledByteOffset, 0)))
/* clang-format on */

#endif

#include <lttng/tracepoint-event.h>
