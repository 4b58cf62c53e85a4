/* The EventPipe session a program asks for through .NET's own startup variables, read as .NET
 * 10 reads them (docs/eventpipe.md): DOTNET_ (else COMPlus_) EnableEventPipe, EventPipeOutputPath
 * ({pid} replaced, trace.nettrace by default), EventPipeConfig (Provider[:KeywordsHex[:Level
 * [:FilterArgs]]], comma-separated; providers rasp does not emit are parsed and ignored),
 * EventPipeCircularMB and EventPipeEnableStackwalk. Pure functions of their inputs: the session
 * (eventpipe.c) and the tests call them. Internal to librasp. */
#ifndef RASP_EVENTS_EVENTPIPE_CONFIG_H
#define RASP_EVENTS_EVENTPIPE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rasp__ep_config {
	bool enabled;
	char path[4096];
	uint64_t mask;	       /* bit i: descriptor i of rasp-event-desc.h is on */
	uint64_t buffer_bytes; /* the per-thread buffers' pool */
	/* Problems with the variables (a value ignored, a default used), one line each, for the
	 * one message the session prints; empty when none. */
	char warnings[1024];
};

/* Reads the variables through get (getenv in programs). Never fails: what cannot be used is
 * ignored with a warning, and a session that cannot run has enabled false. */
void rasp__ep_config_read(struct rasp__ep_config *c, const char *(*get)(const char *name),
			  long pid);

/* The descriptors an EventPipeConfig value enables, with EventPipe's rules: an event is on
 * when a listed provider's keywords overlap its keywords (or it has none) and its level is at
 * most the listed level (or the level is 0). An empty or missing value is .NET's default
 * session. rasp's own events (Rasp-Runtime) go wherever AllocationSampled goes unless their
 * provider is listed; so do stacks (ClrStackWalk) unless stackwalk is false
 * (EventPipeEnableStackwalk=0), whatever the keywords. Problems are appended to warn (cap
 * bytes). */
uint64_t rasp__ep_config_mask(const char *spec, bool stackwalk, char *warn, size_t cap);

/* The same rules for providers given one by one (a diagnostic client's CollectTracing). */
struct rasp__ep_provider {
	const char *name;
	uint64_t keywords;
	uint32_t level; /* 0: every level */
};
uint64_t rasp__ep_providers_mask(const struct rasp__ep_provider *p, size_t n, bool stackwalk);

#endif /* RASP_EVENTS_EVENTPIPE_CONFIG_H */
