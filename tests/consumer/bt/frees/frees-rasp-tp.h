/* Test-only provider, the Rasp_Runtime half of frees-tp.h: SampledObjectsFreed as the
 * manifests lay it out. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER Rasp_Runtime
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./frees-rasp-tp.h"

#if !defined(RASP_FREES_RASP_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RASP_FREES_RASP_TP_H

#include <lttng/tracepoint.h>
#include <stddef.h>
#include <stdint.h>

/* clang-format off */
LTTNG_UST_TRACEPOINT_EVENT(Rasp_Runtime, SampledObjectsFreed,
	LTTNG_UST_TP_ARGS(uint16_t, n, const uintptr_t *, addresses, const uint64_t *, sizes,
			  const uint64_t *, ages),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(unsigned short, ClrInstanceID, 0)
		lttng_ust_field_integer(unsigned short, Frees, n)
		lttng_ust_field_sequence(size_t, Addresses, addresses, uint16_t, n)
		lttng_ust_field_sequence(uint64_t, ObjectSizes, sizes, uint16_t, n)
		lttng_ust_field_sequence(uint64_t, Ages, ages, uint16_t, n)))
/* clang-format on */

#endif

#include <lttng/tracepoint-event.h>
