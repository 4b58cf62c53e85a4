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
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_CLRSTACKWALK_LTTNG) == 0)
		return RASP_ROLE_STACK;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_LTTNG) == 0)
		return RASP_ROLE_FREED;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_HEAPDESTROYED_LTTNG) == 0)
		return RASP_ROLE_HEAP_DESTROYED;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_LTTNG) == 0)
		return RASP_ROLE_FREES;
	if (strcmp(name, RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V1_LTTNG) == 0 ||
	    strcmp(name, RASP_EVENT_DOTNETRUNTIME_METHODLOADVERBOSE_V2_LTTNG) == 0 ||
	    strcmp(name, RASP_EVENT_DOTNETRUNTIMERUNDOWN_METHODDCENDVERBOSE_V1_LTTNG) == 0 ||
	    strcmp(name, RASP_EVENT_DOTNETRUNTIMERUNDOWN_METHODDCENDVERBOSE_V2_LTTNG) == 0)
		return RASP_ROLE_METHOD;
	if (strcmp(name, RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_LTTNG) == 0)
		return RASP_ROLE_OBJECT;
	/* LTTng-UST's own events (lttng-ust(3)): the state dump of the objects loaded when a
	 * session starts, and the dlopen wrapper's (liblttng-ust-dl.so). */
	if (strcmp(name, "lttng_ust_statedump:bin_info") == 0 ||
	    strcmp(name, "lttng_ust_dl:dlopen") == 0 || strcmp(name, "lttng_ust_dl:dlmopen") == 0)
		return RASP_ROLE_MODULE;
	if (strcmp(name, "lttng_ust_statedump:build_id") == 0 ||
	    strcmp(name, "lttng_ust_dl:build_id") == 0)
		return RASP_ROLE_BUILD_ID;
	if (strcmp(name, "lttng_ust_statedump:debug_link") == 0 ||
	    strcmp(name, "lttng_ust_dl:debug_link") == 0)
		return RASP_ROLE_DEBUG_LINK;
	return RASP_ROLE_OTHER;
}

/* A .NET method's code range, with its declaring type, name and signature (symbols.c names
 * it from them). Only when grouping by where. */
static int method(struct rasp_tally *t, const struct rasp_event *e)
{
	int ret;

	if (!(t->group_by & RASP_GROUP_WHERE) || !e->memsz)
		return 0;
	ret =
	    rasp_modules_add_clr_method(&t->modules, e->pid, e->base, e->memsz, e->method_namespace,
					e->method_name ? e->method_name : "?", e->method_signature);
	return ret == -EINVAL ? 0 : ret;
}

/* A SampledObjectsFreed: every field checked before any free is applied (a malformed event
 * changes nothing), then each free at its own time, the event's minus its Age, in array
 * order. Those times are before the event's, and may be before events of other threads
 * already applied: rasp_live_free corrects what was taken meanwhile. */
static int frees(struct rasp_tally *t, const struct rasp_event *e, const char **field, char *why,
		 size_t whylen)
{
	static const char *const names[] = {
	    RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_ADDRESSES,
	    RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_OBJECTSIZES,
	    RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_AGES};
	const uint64_t lens[] = {e->free_addresses_len, e->free_sizes_len, e->free_ages_len};

	if (e->nfrees == 0 || e->nfrees > RASP_FREES_MAX) {
		*field = RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_FREES;
		snprintf(why, whylen, "out-of-range (Frees=%" PRIu64 ", 1 to %d)", e->nfrees,
			 RASP_FREES_MAX);
		return -EINVAL;
	}
	for (int a = 0; a < 3; a++)
		if (lens[a] != e->nfrees) {
			*field = names[a];
			snprintf(why, whylen,
				 "length-not-Frees (length=%" PRIu64 " Frees=%" PRIu64 ")", lens[a],
				 e->nfrees);
			return -EINVAL;
		}
	for (size_t i = 0; i < e->nfrees; i++) {
		if (e->free_sizes[i] == 0) {
			*field = RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_OBJECTSIZES;
			snprintf(why, whylen,
				 "zero (ObjectSizes[%zu]=0 Addresses[%zu]=0x%" PRIx64 ")", i, i,
				 e->free_addresses[i]);
			return -EINVAL;
		}
		/* A free before the clock's origin, or an Age past int64, is no time at all. */
		if (e->timed && e->free_ages[i] &&
		    (e->free_ages[i] > (uint64_t)INT64_MAX || (int64_t)e->free_ages[i] > e->ns)) {
			*field = RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTSFREED_FIELD_AGES;
			snprintf(why, whylen,
				 "before-the-clock-origin (Ages[%zu]=%" PRIu64 " event at %" PRId64
				 " ns)",
				 i, e->free_ages[i], e->ns);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < e->nfrees; i++) {
		int ret = rasp_live_free(t->live, e->pid, e->instance, e->free_addresses[i],
					 e->free_sizes[i], e->timed,
					 e->timed ? e->ns - (int64_t)e->free_ages[i] : 0);

		if (ret)
			return ret;
	}
	return 0;
}

int rasp_event_apply(struct rasp_tally *t, const struct rasp_event *e, const char **field,
		     char *why, size_t whylen)
{
	int ret = 0;

	if (e->timed) {
		rasp_tally_note_time(t, e->ns);
		/* The live heap's timeline and moment see the time before the event's effect. */
		ret = rasp_live_clock(t->live, e->ns, t->first_ns);
		if (ret)
			return ret;
	}
	switch (e->role) {
	case RASP_ROLE_SAMPLED:
		if (e->size == 0 || e->offset >= e->size) {
			*field =
			    e->size
				? RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_SAMPLEDBYTEOFFSET
				: RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_FIELD_OBJECTSIZE;
			snprintf(why, whylen,
				 "%s (SampledByteOffset=%" PRIu64 " ObjectSize=%" PRIu64 ")",
				 e->size ? "not-below-ObjectSize" : "zero", e->offset, e->size);
			return -EINVAL;
		}
		{
			const uint64_t *frames = NULL;
			size_t n = rasp_tally_take_stack(t, e->pid, e->tid, &frames);

			ret = rasp_tally_add_sample_of(t, e->type, e->kind, e->pid, e->tid,
						       e->instance, e->size, e->offset, frames, n);
			if (!ret && e->has_address)
				ret = rasp_live_sample(t->live, t->cells[t->last_cell].live, e->pid,
						       e->instance, e->address, e->size, e->offset,
						       e->timed, e->ns);
			else if (!ret)
				rasp_live_sample_untracked(t->live, t->cells[t->last_cell].live,
							   e->size);
		}
		break;
	case RASP_ROLE_FREED:
		if (e->size == 0) {
			*field = RASP_EVENT_RASP_RUNTIME_SAMPLEDOBJECTFREED_FIELD_OBJECTSIZE;
			snprintf(why, whylen, "zero (ObjectSize=0)");
			return -EINVAL;
		}
		return rasp_live_free(t->live, e->pid, e->instance, e->address, e->size, e->timed,
				      e->ns);
	case RASP_ROLE_FREES:
		return frees(t, e, field, why, whylen);
	case RASP_ROLE_HEAP_DESTROYED:
		return rasp_live_heap_destroyed(t->live, e->pid, e->instance, e->timed, e->ns);
	case RASP_ROLE_STACK:
		ret = rasp_tally_pend_stack(t, e->pid, e->tid, e->frames, e->nframes);
		break;
	case RASP_ROLE_MODULE:
		ret = rasp_modules_add(&t->modules, e->pid, e->base, e->memsz, e->path, e->pic);
		if (ret == -EINVAL) /* an object of no size or path: nothing to resolve in it */
			ret = 0;
		rasp_tally_add_other_event(t);
		break;
	case RASP_ROLE_OBJECT:
		/* rasp's own event: a malformed one is refused, as a sample is. */
		if (!e->path || !*e->path) {
			*field = RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_PATH;
			snprintf(why, whylen, "empty (BaseAddress=0x%" PRIx64 ")", e->base);
			return -EINVAL;
		}
		if (e->memsz == 0) {
			*field = RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_SIZE;
			snprintf(why, whylen, "zero (Path=%s)", e->path);
			return -EINVAL;
		}
		if (e->build_id_len > RASP_BUILD_ID_MAX) {
			*field = RASP_EVENT_RASP_RUNTIME_OBJECTLOADED_FIELD_BUILDID;
			snprintf(why, whylen, "longer than %d bytes (%zu)", RASP_BUILD_ID_MAX,
				 e->build_id_len);
			return -EINVAL;
		}
		rasp_tally_add_other_event(t);
		ret = rasp_modules_add(&t->modules, e->pid, e->base, e->memsz, e->path, e->pic);
		if (!ret && e->build_id_len)
			ret = rasp_modules_set_build_id(&t->modules, e->pid, e->base, e->build_id,
							e->build_id_len);
		break;
	case RASP_ROLE_BUILD_ID:
		/* For an object the state dump named; any other is of no use. */
		rasp_modules_set_build_id(&t->modules, e->pid, e->base, e->build_id,
					  e->build_id_len);
		rasp_tally_add_other_event(t);
		break;
	case RASP_ROLE_DEBUG_LINK:
		rasp_modules_set_debug_link(&t->modules, e->pid, e->base, e->path);
		rasp_tally_add_other_event(t);
		break;
	case RASP_ROLE_METHOD:
		ret = method(t, e);
		rasp_tally_add_other_event(t);
		break;
	case RASP_ROLE_CONFIGURED:
		if (e->mean == 0) {
			*field = RASP_EVENT_RASP_RUNTIME_SAMPLINGCONFIGURED_FIELD_SAMPLINGMEAN;
			snprintf(why, whylen, "zero (SamplingMean=0)");
			return -EINVAL;
		}
		ret = rasp_tally_set_mean_of(t, e->pid, e->tid, e->instance, (double)e->mean);
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
