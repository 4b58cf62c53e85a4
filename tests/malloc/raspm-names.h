/* Force-included (-include) into malloc/'s C sources for the sanitized builds' test library,
 * and into the module its test dlopens: librasp-malloc's exported names become raspm_*, so
 * the sanitizer's runtime stays the process's malloc and fork while a test calls rasp's by
 * these names (test-malloc-sanitized.c). Macros only: included before any file's own
 * feature macros (_GNU_SOURCE), it may include no header. */
#define malloc		   raspm_malloc
#define free		   raspm_free
#define calloc		   raspm_calloc
#define realloc		   raspm_realloc
#define reallocarray	   raspm_reallocarray
#define posix_memalign	   raspm_posix_memalign
#define aligned_alloc	   raspm_aligned_alloc
#define memalign	   raspm_memalign
#define valloc		   raspm_valloc
#define pvalloc		   raspm_pvalloc
#define malloc_usable_size raspm_malloc_usable_size
#define fork		   raspm_fork
