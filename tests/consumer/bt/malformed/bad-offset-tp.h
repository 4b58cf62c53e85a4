/* Test-only provider: DotNETRuntime:AllocationSampled laid out as CoreCLR does, used to fire
 * events whose values break the contract (SampledByteOffset >= ObjectSize). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER DotNETRuntime
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./bad-offset-tp.h"

#if !defined(RASP_MALFORMED_BAD_OFFSET_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RASP_MALFORMED_BAD_OFFSET_TP_H

#include <lttng/tracepoint.h>
#include <stddef.h>
#include <stdint.h>

/* clang-format off */
LTTNG_UST_TRACEPOINT_EVENT(DotNETRuntime, AllocationSampled,
	LTTNG_UST_TP_ARGS(const char *, type_name, uint64_t, size, uint64_t, offset),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(unsigned int, AllocationKind, 0)
		lttng_ust_field_integer(unsigned short, ClrInstanceID, 0)
		lttng_ust_field_integer(size_t, TypeID, 0)
		lttng_ust_field_string(TypeName, type_name)
		lttng_ust_field_integer(size_t, Address, 0)
		lttng_ust_field_integer(uint64_t, ObjectSize, size)
		lttng_ust_field_integer(uint64_t, SampledByteOffset, offset)))
/* clang-format on */

#endif

#include <lttng/tracepoint-event.h>
