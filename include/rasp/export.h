/* Symbol visibility for rasp's public API. librasp is built with hidden visibility, so only
 * what is marked RASP_API is exported: the ABI is what the headers declare, nothing more. */
#ifndef RASP_EXPORT_H
#define RASP_EXPORT_H

#if defined(__GNUC__)
#define RASP_API __attribute__((visibility("default")))
#else
#define RASP_API
#endif

#endif /* RASP_EXPORT_H */
