/* nt-dump: rasp's reader's view of a .nettrace file, printed exactly as NetTraceDump prints
 * TraceEvent's (one line per AllocationSampled event: pid, tid, kind, ClrInstanceID, TypeID,
 * TypeName, Address, ObjectSize, SampledByteOffset; then "events=N lost=M pointer_size=P"), so
 * that check-rasp-files.sh compares the two readers field by field.
 *   nt-dump FILE.nettrace         exit 1 with the reader's message when it cannot read FILE
 *   nt-dump --rasp FILE.nettrace  Rasp-Runtime's events instead, as NetTraceDump --rasp prints
 *                                 them: pid, tid, id, name, then field=value in decimal */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rasp-event-desc.h"
#include "read/nettrace-read.h"

int main(int argc, char **argv)
{
	char err[1024], strs[8192];
	struct rasp_nt_reader *r;
	struct rasp_nt_item it;
	uint64_t events = 0, lost = 0;
	int rc;

	bool rasp = argc == 3 && strcmp(argv[1], "--rasp") == 0;
	const char *path = argv[argc - 1];

	if (argc != 2 && !rasp) {
		fprintf(stderr, "usage: nt-dump [--rasp] FILE.nettrace\n");
		return 2;
	}
	r = rasp_nt_open(path, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "nt-dump: %s\n", err);
		return 1;
	}
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		const struct rasp_nt_event *e = &it.event;
		union rasp_nt_value v[16];

		if (it.kind == RASP_NT_ITEM_LOST) {
			lost += it.lost;
			continue;
		}
		if (rasp ? !e->meta->desc || strcmp(e->meta->desc->provider, "Rasp-Runtime") != 0
			 : e->meta->desc !=
			       &rasp_event_descs[RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED])
			continue;
		if (rasp_nt_decode(e->meta->desc, e->payload, e->payload_len,
				   rasp_nt_info(r)->pointer_size, v, strs, sizeof(strs)) != 0) {
			fprintf(stderr, "nt-dump: %s: undecodable event at offset %" PRIu64 "\n",
				path, e->offset);
			return 1;
		}
		events++;
		if (rasp) {
			const struct rasp_event_desc *d = e->meta->desc;

			bool listed = true;

			/* Rasp-Runtime's fields are unsigned integers, and TraceEvent decodes them
			 * from the metadata's field list; an event with an array field
			 * (ObjectLoaded's BuildId) has none (a V1 field list has no array type),
			 * so TraceEvent shows its name alone, and so does this. */
			for (size_t f = 0; f < d->nfields; f++)
				listed = listed && d->fields[f].count < 0;
			printf("%" PRId64 "\t%" PRIu64 "\t%" PRIu32 "\t%s", e->pid, e->thread_id,
			       d->id, d->symbol);
			for (size_t f = 0; listed && f < d->nfields; f++)
				printf("\t%s=%" PRIu64, d->fields[f].name, v[f].u);
			printf("\n");
			continue;
		}
		printf("%" PRId64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t0x%" PRIx64
		       "\t%s\t0x%" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\n",
		       e->pid, e->thread_id, v[0].u, v[1].u, v[2].u, v[3].s, v[4].u, v[5].u,
		       v[6].u);
	}
	if (rc < 0) {
		fprintf(stderr, "nt-dump: %s\n", rasp_nt_error(r));
		return 1;
	}
	printf("events=%" PRIu64 " lost=%" PRIu64 " pointer_size=%" PRIu32 "\n", events, lost,
	       rasp_nt_info(r)->pointer_size);
	rasp_nt_close(r);
	return 0;
}
