/* librasp-dl.so: rasp record's dlopen wrapper, preloaded with stacks on in place of LTTng-UST's
 * (liblttng-ust-dl.so), which it loads only when the program first loads an object of its own.
 *
 * Why: a stack names a frame by the object it is in, known from LTTng-UST's state dump at
 * registration and, for objects loaded later, from its dlopen wrapper's lttng_ust_dl events.
 * That wrapper, preloaded, costs every process about 35 ms before main on this machine (its
 * constructor reads the ELF notes of every loaded object with small reads: ~17,000 read and
 * lseek calls for `date`), whether or not the program ever calls dlopen. Here the program's
 * dlopen, dlmopen and dlclose go to libc's until one of them loads an object not loaded yet;
 * LTTng-UST's wrapper is loaded then, and that call and every later one go through it, so each
 * object loaded after start still has its event. A program that never loads one (git, sqlite3,
 * most C programs) never pays for it. The primer (cli/primer.c) preloads LTTng-UST's wrapper
 * itself, so a wrapper loaded late registers no new metadata (which would cost the stop 0.2 s).
 *
 * Calls that load nothing new (already loaded, RTLD_NOLOAD, the main program's handle) and
 * librasp's own loads (its LTTng provider and libunwind, whose frames are never in a sample's
 * stack) do not load the wrapper. As with LTTng-UST's wrapper, libc's dlopen sees this library
 * as its caller: a name without a slash is searched without the program's RUNPATH. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define API __attribute__((visibility("default")))

/* LTTng-UST's wrapper, by its soname (lttng-ust-dl(3)). */
#define UST_DL "liblttng-ust-dl.so.1"

typedef void *(*open_fn)(const char *, int);
typedef void *(*mopen_fn)(Lmid_t, const char *, int);
typedef int (*close_fn)(void *);

struct fns {
	open_fn open;
	mopen_fn mopen;
	close_fn close;
};

static struct fns libc_fns, ust_fns;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;
/* LTTng-UST's wrapper: 0 not loaded, 1 being loaded by one thread, 2 loaded (ust_fns), 3 it
 * cannot be (objects loaded later are not named then, as without it). */
static atomic_int ust_state;
static __thread bool loading; /* this thread is loading the wrapper: its own calls go to libc */

/* The next definitions after this library: libc's, or a later preload's (which then chains
 * to libc's itself). */
static void find_libc(void)
{
	libc_fns.open = (open_fn)dlsym(RTLD_NEXT, "dlopen");
	libc_fns.mopen = (mopen_fn)dlsym(RTLD_NEXT, "dlmopen");
	libc_fns.close = (close_fn)dlsym(RTLD_NEXT, "dlclose");
}

static const struct fns *libc(void)
{
	pthread_once(&libc_once, find_libc);
	return &libc_fns;
}

/* The wrapper's functions once it is loaded, else NULL. */
static const struct fns *loaded(void)
{
	return atomic_load_explicit(&ust_state, memory_order_acquire) == 2 && !loading ? &ust_fns
										       : NULL;
}

/* Loads LTTng-UST's wrapper; its functions, or NULL. One thread loads it; another that calls
 * meanwhile goes to libc's without waiting (a wait could deadlock: a constructor calling
 * dlopen holds the loader's lock, which the loading thread needs), so an object that thread
 * loads in that window has no event. */
static const struct fns *load_wrapper(void)
{
	int expected = 0;
	void *h;

	if (!atomic_compare_exchange_strong(&ust_state, &expected, 1))
		return loaded();
	loading = true; /* its constructors call dlopen: those go to libc */
	h = libc()->open(UST_DL, RTLD_NOW | RTLD_GLOBAL);
	loading = false;
	if (h) {
		ust_fns.open = (open_fn)dlsym(h, "dlopen");
		ust_fns.mopen = (mopen_fn)dlsym(h, "dlmopen");
		ust_fns.close = (close_fn)dlsym(h, "dlclose");
	}
	if (!h || !ust_fns.open || !ust_fns.close) {
		atomic_store_explicit(&ust_state, 3, memory_order_release);
		return NULL;
	}
	atomic_store_explicit(&ust_state, 2, memory_order_release);
	return &ust_fns;
}

/* librasp's own loads: the provider and the unwinder, by their file names. */
static bool librasp_own(const char *file)
{
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	return strcmp(base, "librasp-lttng.so") == 0 || strncmp(base, "libunwind.so", 12) == 0;
}

/* Whether dlopen(file, mode) may load an object not loaded yet. */
static bool loads_new(const char *file, int mode)
{
	void *h;

	if (!file || (mode & RTLD_NOLOAD) || librasp_own(file))
		return false;
	/* A miss sets no error where the file exists; where it does not, the caller's own call
	 * fails next and its error replaces the probe's. */
	h = libc()->open(file, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return true;
	libc()->close(h);
	return false;
}

API void *dlopen(const char *file, int mode)
{
	const struct fns *w = loaded();

	if (!w && !loading && loads_new(file, mode))
		w = load_wrapper();
	return w ? w->open(file, mode) : libc()->open(file, mode);
}

API void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
	const struct fns *w = loaded();

	/* Another namespace: whatever it loads is new to the wrapper's table. */
	if (!w && !loading && file && !(mode & RTLD_NOLOAD))
		w = load_wrapper();
	if (w && w->mopen)
		return w->mopen(lmid, file, mode);
	return libc()->mopen ? libc()->mopen(lmid, file, mode) : NULL;
}

API int dlclose(void *handle)
{
	const struct fns *w = loaded();

	return w ? w->close(handle) : libc()->close(handle);
}
