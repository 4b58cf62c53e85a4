/* Decoded events (event.h): roles by name and validation before the tally counts them. */
#include "event.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rasp/event-meta.h"

enum rasp_role rasp_role_of(const char *name)
{
	if (!name)
		return RASP_ROLE_OTHER;
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG) == 0)
		return RASP_ROLE_SAMPLED;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_LTTNG) == 0)
		return RASP_ROLE_CONFIGURED;
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V2_LTTNG) == 0 ||
	    strcmp(name, RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V3_LTTNG) == 0 ||
	    strcmp(name, RASP_EVENT_DOTNETRUNTIME_GCALLOCATIONTICK_V4_LTTNG) == 0)
		return RASP_ROLE_TICK;
	return RASP_ROLE_OTHER;
}

int rasp_event_apply(struct rasp_tally *t, const struct rasp_event *e, const char **field,
		     char *why, size_t whylen)
{
	int ret = 0;

	if (e->timed)
		rasp_tally_note_time(t, e->ns);
	switch (e->role) {
	case RASP_ROLE_SAMPLED:
		if (e->size == 0 || e->offset >= e->size) {
			*field = e->size ? RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_SAMPLEDBYTEOFFSET
					 : RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_OBJECTSIZE;
			snprintf(why, whylen,
				 "%s (SampledByteOffset=%" PRIu64 " ObjectSize=%" PRIu64 ")",
				 e->size ? "not-below-ObjectSize" : "zero", e->offset, e->size);
			return -EINVAL;
		}
		ret = rasp_tally_add_sample(t, e->type, e->kind, e->pid, e->tid, e->size,
					    e->offset);
		break;
	case RASP_ROLE_CONFIGURED:
		if (e->mean == 0) {
			*field = RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_FIELD_SAMPLINGMEAN;
			snprintf(why, whylen, "zero (SamplingMean=0)");
			return -EINVAL;
		}
		ret = rasp_tally_set_mean(t, e->pid, e->tid, (double)e->mean);
		break;
	case RASP_ROLE_TICK:
		ret = rasp_tally_add_tick(t, e->type, e->amount);
		break;
	default:
		rasp_tally_add_other_event(t);
		return 0;
	}
	/* The name of a process the report shows: one with samples, a mean or ticks, never one
	 * seen only in malformed events. */
	if (!ret && e->procname && e->pid != RASP_ID_UNKNOWN)
		ret = rasp_tally_set_process_name(t, e->pid, e->procname);
	return ret;
}
