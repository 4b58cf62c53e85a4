/* Symbol visibility for rasp's public API. librasp is built with hidden visibility, so what
 * it exports is what is marked RASP_API (the ABI the headers declare), plus what LTTng-UST's
 * tracepoint macros must export for its provider module to find them
 * (lttng_ust_tracepoint_*, __start/__stop_lttng_ust_tracepoints_ptrs): those are LTTng's,
 * not part of rasp's API. */
#ifndef RASP_EXPORT_H
#define RASP_EXPORT_H

#if defined(__GNUC__)
#define RASP_API __attribute__((visibility("default")))
#else
#define RASP_API
#endif

#endif /* RASP_EXPORT_H */
