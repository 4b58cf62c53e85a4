/* Loads the LTTng-UST tracepoint provider (librasp-lttng.so) when librasp is loaded.
 *
 * librasp defines its tracepoints with dynamic linkage, so it has no liblttng-ust dependency:
 * until a provider registers the probes, every event call is one load of the tracepoint's
 * state and a predictable branch. As CoreCLR does with libcoreclrtraceptprovider.so, the
 * provider is dlopened at start from librasp's own directory, then from the install libdir.
 *   RASP_LTTNG=0              do not load it (events stay no-ops)
 *   RASP_LTTNG_PROVIDER=PATH  load this file instead; a failure here is reported on stderr
 * The provider is never dlclosed: LTTng-UST probes must not be unloaded while tracing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rasp/events.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int provider_loaded;
static char provider_error[1024];

/* A message longer than the buffer is cut: it is for people, and its start names the cause. */
__attribute__((format(printf, 1, 2))) static void set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(provider_error, sizeof(provider_error), fmt, ap);
	va_end(ap);
}

/* Fork safety. LTTng-UST's listener threads take its internal lock while they talk to the
 * session daemon (at registration, and when a session changes anywhere on the machine); a
 * fork in that window leaves the child a lock no thread will release, and the child hangs in
 * LTTng-UST's exit. liblttng-ust-fork.so fixes this by wrapping fork(); a program cannot be
 * expected to preload it, so librasp does the same from pthread_atfork handlers, with the
 * functions LTTng-UST exports for it (lttng-ust(3), "fork"). Seen once in CI: a child forked
 * ~1 ms after start hung 300 s. Not when the wrapper is preloaded: it calls them itself, and
 * twice would take the lock twice. The signal mask they save is per thread, as is a fork. */
typedef void (*ust_fork_fn)(sigset_t *);
static ust_fork_fn ust_before_fork, ust_after_fork_parent, ust_after_fork_child;
static __thread sigset_t fork_sigset;

static void fork_prepare(void)
{
	ust_before_fork(&fork_sigset);
}

static void fork_parent(void)
{
	ust_after_fork_parent(&fork_sigset);
}

static void fork_child(void)
{
	ust_after_fork_child(&fork_sigset);
}

static bool fork_wrapper_preloaded(void)
{
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, "fork");

	return f && dladdr(f, &info) && info.dli_fname &&
	       strstr(info.dli_fname, "liblttng-ust-fork") != NULL;
}

/* ThreadSanitizer does not support a child that starts threads after a multi-threaded fork
 * (it ends the process), and LTTng-UST's child handler starts its listeners again: TSan
 * builds keep LTTng-UST's own behaviour. */
#if defined(__SANITIZE_THREAD__)
#define RASP_FORK_HANDLERS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RASP_FORK_HANDLERS 0
#endif
#endif
#ifndef RASP_FORK_HANDLERS
#define RASP_FORK_HANDLERS 1
#endif

static void handle_fork(void *provider)
{
	if (!RASP_FORK_HANDLERS)
		return;
	ust_before_fork = (ust_fork_fn)dlsym(provider, "lttng_ust_before_fork");
	ust_after_fork_parent = (ust_fork_fn)dlsym(provider, "lttng_ust_after_fork_parent");
	ust_after_fork_child = (ust_fork_fn)dlsym(provider, "lttng_ust_after_fork_child");
	if (ust_before_fork && ust_after_fork_parent && ust_after_fork_child &&
	    !fork_wrapper_preloaded())
		pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int try_load(const char *path)
{
	/* RTLD_NOW: a provider with unresolved symbols fails here, not at the first event. */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const char *id;

	if (!h) {
		const char *why = dlerror();

		set_error("cannot load LTTng provider: %s", why ? why : path);
		return -1;
	}
	/* Any shared object loads: only the id says it is the provider, of this manifest. */
	id = dlsym(h, "rasp_lttng_provider_id");
	if (!id) {
		set_error("'%s' is not rasp's LTTng provider (no rasp_lttng_provider_id symbol)",
			  path);
		dlclose(h); /* no probe of ours registered: safe to unload */
		return -1;
	}
	if (strcmp(id, RASP_LTTNG_PROVIDER_ID) != 0) {
		/* Its probes registered when it loaded: it stays, but counts as not loaded. */
		set_error(
		    "'%s' was generated from another event manifest ('%s', librasp wants '%s')",
		    path, id, RASP_LTTNG_PROVIDER_ID);
		return -1;
	}
	provider_loaded = 1;
	provider_error[0] = '\0';
	handle_fork(h);
	return 0;
}

static void load_provider(void)
{
	const char *enable = getenv("RASP_LTTNG");
	const char *explicit_path = getenv("RASP_LTTNG_PROVIDER");
	char path[4096];
	Dl_info self;

	if (enable && *enable && strcmp(enable, "1") != 0) {
		if (strcmp(enable, "0") == 0) {
			set_error("LTTng provider disabled by RASP_LTTNG=0");
		} else {
			set_error("RASP_LTTNG='%s' is not 0 or 1; LTTng provider not loaded",
				  enable);
			fprintf(stderr, "rasp: %s\n", provider_error);
		}
		return;
	}
	if (explicit_path && *explicit_path) {
		if (try_load(explicit_path) != 0)
			fprintf(stderr, "rasp: RASP_LTTNG_PROVIDER='%s': %s; events are disabled\n",
				explicit_path, provider_error);
		return;
	}
	/* Beside librasp: the build tree and any install prefix alike. */
	if (dladdr((void *)rasp_events_provider_loaded, &self) && self.dli_fname) {
		const char *slash = strrchr(self.dli_fname, '/');

		if (slash) {
			int n =
			    snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - self.dli_fname),
				     self.dli_fname, RASP_PROVIDER_FILE);

			if (n > 0 && (size_t)n < sizeof(path) && try_load(path) == 0)
				return;
		}
	}
	if (try_load(RASP_PROVIDER_INSTALL_DIR "/" RASP_PROVIDER_FILE) == 0)
		return;
	/* Not found is normal on a machine without LTTng: stay quiet, as CoreCLR does. */
}

__attribute__((constructor)) static void rasp__events_init(void)
{
	pthread_once(&load_once, load_provider);
}

int rasp_events_provider_loaded(void)
{
	pthread_once(&load_once, load_provider);
	return provider_loaded;
}

const char *rasp_events_provider_error(void)
{
	pthread_once(&load_once, load_provider);
	return provider_loaded ? NULL : provider_error;
}
