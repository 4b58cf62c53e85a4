/* C++'s operator new and delete (plain, array, sized, aligned, nothrow), written in C under
 * their Itanium ABI names so that the library needs no libstdc++: a C++ program has loaded it,
 * and its new handler and std::bad_alloc are reached through weak references. new and new[]
 * are the families new and new[]; the deletes ignore the size (the block knows it). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>

#include "heap.h"

typedef void (*new_handler_fn)(void);
/* libstdc++'s std::get_new_handler() and std::__throw_bad_alloc(). */
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* The throwing forms: the new handler until it gives up, then std::bad_alloc. */
static void *new_or_throw(enum rasp__family fam, size_t n, size_t alignment)
{
	for (;;) {
		void *p = rasp__malloc_aligned(fam, n, alignment);
		new_handler_fn h;

		if (p)
			return p;
		h = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
		if (h) {
			h();
			continue;
		}
		if (_ZSt17__throw_bad_allocv)
			_ZSt17__throw_bad_allocv();
		abort(); /* operator new without libstdc++ loaded: nothing can catch it */
	}
}

/* The nothrow forms. The standard has them call the new handler as the throwing forms do
 * and give NULL where those would throw, which takes a catch that C cannot write. So on a
 * failure with a handler installed they call the C++ library's own nothrow form (the next
 * definition after this library's: libstdc++'s and libc++'s call the throwing form, this
 * library's, in a try block and give NULL for any exception). Looked up at the first such
 * failure, not before: dlsym allocates, and a failure is rare (a request too large). With no
 * handler, or no C++ library's form, NULL. `sym` names the form; `aligned` says whether it
 * takes an alignment. */
static void *new_nothrow(enum rasp__family fam, size_t n, size_t alignment, const char *sym,
			 bool aligned, const void *nt)
{
	void *p = rasp__malloc_aligned(fam, n, alignment);
	void *next;

	if (p || !_ZSt15get_new_handlerv || !_ZSt15get_new_handlerv())
		return p;
	next = dlsym(RTLD_NEXT, sym);
	if (!next)
		return NULL;
	if (aligned)
		return ((void *(*)(size_t, size_t, const void *))next)(n, alignment, nt);
	return ((void *(*)(size_t, const void *))next)(n, nt);
}

#define ALIGN_DEFAULT 0

/* The plain forms' miss of malloc's inline path (heap.h): the throwing form's loop. */
static void *new_miss(enum rasp__family fam, size_t n)
{
	return new_or_throw(fam, n, ALIGN_DEFAULT);
}

RASP_MALLOC_API void *_Znwm(size_t n)
{
	return rasp__malloc_fast(RASP__FAM_NEW, n, new_miss);
}
RASP_MALLOC_API void *_Znam(size_t n)
{
	return rasp__malloc_fast(RASP__FAM_NEW_ARRAY, n, new_miss);
}
RASP_MALLOC_API void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	return new_nothrow(RASP__FAM_NEW, n, ALIGN_DEFAULT, "_ZnwmRKSt9nothrow_t", false, nt);
}
RASP_MALLOC_API void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	return new_nothrow(RASP__FAM_NEW_ARRAY, n, ALIGN_DEFAULT, "_ZnamRKSt9nothrow_t", false, nt);
}
RASP_MALLOC_API void *_ZnwmSt11align_val_t(size_t n, size_t a)
{
	return new_or_throw(RASP__FAM_NEW, n, a);
}
RASP_MALLOC_API void *_ZnamSt11align_val_t(size_t n, size_t a)
{
	return new_or_throw(RASP__FAM_NEW_ARRAY, n, a);
}
RASP_MALLOC_API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	return new_nothrow(RASP__FAM_NEW, n, a, "_ZnwmSt11align_val_tRKSt9nothrow_t", true, nt);
}
RASP_MALLOC_API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	return new_nothrow(RASP__FAM_NEW_ARRAY, n, a, "_ZnamSt11align_val_tRKSt9nothrow_t", true,
			   nt);
}

RASP_MALLOC_API void _ZdlPv(void *p)
{
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdaPv(void *p)
{
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdlPvm(void *p, size_t n)
{
	(void)n;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdaPvm(void *p, size_t n)
{
	(void)n;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
	(void)nt;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
	(void)nt;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdlPvSt11align_val_t(void *p, size_t a)
{
	(void)a;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdaPvSt11align_val_t(void *p, size_t a)
{
	(void)a;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a)
{
	(void)n;
	(void)a;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a)
{
	(void)n;
	(void)a;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt)
{
	(void)a;
	(void)nt;
	rasp__malloc_free(p);
}
RASP_MALLOC_API void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt)
{
	(void)a;
	(void)nt;
	rasp__malloc_free(p);
}
