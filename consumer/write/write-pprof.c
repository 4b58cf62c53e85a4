/* The pprof writer: the report as pprof's profile.proto (consumer/write/profile.proto), gzipped,
 * for go tool pprof, Pyroscope and anything else that reads heap profiles. Values are
 * [alloc_objects/count, alloc_space/bytes], the rows' estimates rounded (never sample counts),
 * and when the input says what died (live.h) also [inuse_objects/count, inuse_space/bytes]
 * at the report's moment, Go's heap profile's four (inuse_space the default with --inuse);
 * one Sample per row, labelled with its type, interval and samples (and kind, process and
 * thread when grouped by them). Locations are per (process, address), Functions per (name,
 * file), Mappings per object the frames fall in. The notes become the profile's comments.
 *
 * Encoded with protobuf-c (libprotobuf-c, a maintained Debian library) from a .proto file rather
 * than by hand: the schema reads side by side with pprof's, varints and packed fields are right
 * by construction, and the tests decode with the same generated code. Its cost is the pointer
 * arrays of its data model, built here over the flat tables of pprof.c. */
#define ZLIB_CONST
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "pprof.h"
#include "writer.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* The period: the sampling mean, when every sampled process used the same one (0 if not). */
static int64_t period_of(const struct rasp_tally *t)
{
	double mean = 0;

	for (size_t i = 0; i < t->nprocs; i++) {
		const struct rasp_tally_process *pr = &t->procs[i];

		if (!pr->samples)
			continue;
		if (pr->mean_low != pr->mean_high || (mean && mean != pr->mean_low))
			return 0;
		mean = pr->mean_low;
	}
	return mean < 9.2e18 ? llround(mean) : 0;
}

static void lowercase_hex(const uint8_t *v, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[v[i] >> 4];
		out[2 * i + 1] = digits[v[i] & 15];
	}
	out[2 * n] = '\0';
}

/* protobuf-c packs into this: each piece it appends goes through deflate to the file, so the
 * encoded profile is never held whole. */
struct gz {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;
	unsigned char chunk[16384];
};

static int gz_run(struct gz *g, int flush)
{
	for (;;) {
		size_t have;
		int zr;

		g->z.next_out = g->chunk;
		g->z.avail_out = sizeof(g->chunk);
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EINVAL;
		have = sizeof(g->chunk) - g->z.avail_out;
		if (have && fwrite(g->chunk, 1, have, g->out) != have)
			return -EIO;
		if (flush == Z_FINISH ? zr == Z_STREAM_END : g->z.avail_out != 0)
			return 0;
	}
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz *g = (struct gz *)b;

	/* avail_in is an unsigned int: longer pieces go in parts. */
	while (len && !g->err) {
		size_t part = len < 1u << 30 ? len : 1u << 30;

		g->z.next_in = data;
		g->z.avail_in = (uInt)part;
		g->err = gz_run(g, Z_NO_FLUSH);
		data += part;
		len -= part;
	}
}

/* Builds protobuf-c's structures over the collected tables and writes them, gzipped. */
static int emit(struct rasp_pprof *p, FILE *out)
{
	const struct rasp_report_view *v = p->v;
	const struct rasp_rows *r = v->rows;
	size_t n = r->n, nnotes = v->notes->n;
	pb_profile prof;
	static const char *const type_names[4] = {"alloc_objects", "alloc_space", "inuse_objects",
						  "inuse_space"};
	size_t ntypes = r->live_known ? 4 : 2;
	pb_value_type types[4], period_type,
	    *ptypes[4] = {&types[0], &types[1], &types[2], &types[3]};
	pb_sample *samples = calloc(n ? n : 1, sizeof(*samples));
	pb_sample **psamples = calloc(n ? n : 1, sizeof(*psamples));
	pb_label *labels = calloc(n ? n : 1, RASP_PPROF_MAX_LABELS * sizeof(*labels));
	pb_label **plabels = calloc(n ? n : 1, RASP_PPROF_MAX_LABELS * sizeof(*plabels));
	int64_t *values = calloc(n ? n : 1, 4 * sizeof(*values));
	pb_location *locs = calloc(p->nloc ? p->nloc : 1, sizeof(*locs));
	pb_location **plocs = calloc(p->nloc ? p->nloc : 1, sizeof(*plocs));
	pb_line *lines = calloc(p->nloc ? p->nloc : 1, sizeof(*lines));
	pb_line **plines = calloc(p->nloc ? p->nloc : 1, sizeof(*plines));
	pb_function *fns = calloc(p->nfn ? p->nfn : 1, sizeof(*fns));
	pb_function **pfns = calloc(p->nfn ? p->nfn : 1, sizeof(*pfns));
	pb_mapping *maps = calloc(p->nmap ? p->nmap : 1, sizeof(*maps));
	pb_mapping **pmaps = calloc(p->nmap ? p->nmap : 1, sizeof(*pmaps));
	int64_t *comments = calloc(nnotes ? nnotes : 1, sizeof(*comments));
	struct gz *g = malloc(sizeof(*g));
	int rc = -ENOMEM;

	if (!samples || !psamples || !labels || !plabels || !values || !locs || !plocs || !lines ||
	    !plines || !fns || !pfns || !maps || !pmaps || !comments || !g)
		goto out;
	perftools__profiles__profile__init(&prof);
	for (size_t i = 0; i < ntypes; i++) {
		perftools__profiles__value_type__init(&types[i]);
		types[i].type = rasp_pprof_str(p, type_names[i], false);
		types[i].unit = rasp_pprof_str(p, i % 2 ? "bytes" : "count", false);
	}
	perftools__profiles__value_type__init(&period_type);
	period_type.type = rasp_pprof_str(p, "space", false);
	period_type.unit = rasp_pprof_str(p, "bytes", false);
	prof.default_sample_type =
	    rasp_pprof_str(p, r->inuse ? "inuse_space" : "alloc_space", false);
	for (size_t i = 0; i < nnotes; i++)
		comments[i] = rasp_pprof_str(p, v->notes->v[i].text, false);
	for (size_t i = 0; i < p->nmap; i++) {
		const struct rasp_module *mod = p->map[i].mod;
		char hex[2 * RASP_BUILD_ID_MAX + 1];
		size_t idlen =
		    mod->build_id_len < RASP_BUILD_ID_MAX ? mod->build_id_len : RASP_BUILD_ID_MAX;

		lowercase_hex(mod->build_id, idlen, hex);
		perftools__profiles__mapping__init(&maps[i]);
		maps[i].id = i + 1;
		maps[i].memory_start = mod->base;
		maps[i].memory_limit = mod->base + mod->size;
		maps[i].filename = rasp_pprof_str(p, mod->path, false);
		maps[i].build_id = rasp_pprof_str(p, hex, true);
		maps[i].has_functions = p->map[i].functions;
		maps[i].has_filenames = p->map[i].files;
		maps[i].has_line_numbers = p->map[i].lines;
		if (maps[i].filename < 0 || maps[i].build_id < 0)
			goto out;
		pmaps[i] = &maps[i];
	}
	/* Every string is in the table now: a failed str_id above left a negative id. */
	if (period_type.type < 0 || period_type.unit < 0 || prof.default_sample_type < 0)
		goto out;
	for (size_t i = 0; i < ntypes; i++)
		if (types[i].type < 0 || types[i].unit < 0)
			goto out;
	for (size_t i = 0; i < nnotes; i++)
		if (comments[i] < 0)
			goto out;
	for (size_t i = 0; i < n; i++) {
		const struct rasp_row *row = &r->v[i];

		perftools__profiles__sample__init(&samples[i]);
		samples[i].n_location_id = p->first[i + 1] - p->first[i];
		samples[i].location_id = &p->ids[p->first[i]];
		if ((rc = rasp_pprof_rounded(row->alloc.objects, &values[4 * i])) ||
		    (rc = rasp_pprof_rounded(row->alloc.bytes, &values[4 * i + 1])) ||
		    (ntypes == 4 &&
		     ((rc = rasp_pprof_rounded(row->inuse.objects, &values[4 * i + 2])) ||
		      (rc = rasp_pprof_rounded(row->inuse.bytes, &values[4 * i + 3])))))
			goto out;
		samples[i].n_value = ntypes;
		samples[i].value = &values[4 * i];
		samples[i].n_label = p->nlabels[i];
		samples[i].label = &plabels[i * RASP_PPROF_MAX_LABELS];
		for (size_t k = 0; k < p->nlabels[i]; k++) {
			const int64_t *l = &p->labels[(i * RASP_PPROF_MAX_LABELS + k) * 4];
			pb_label *lb = &labels[i * RASP_PPROF_MAX_LABELS + k];

			perftools__profiles__label__init(lb);
			lb->key = l[0];
			lb->str = l[1];
			lb->num = l[2];
			lb->num_unit = l[3];
			plabels[i * RASP_PPROF_MAX_LABELS + k] = lb;
		}
		psamples[i] = &samples[i];
	}
	rc = -ENOMEM;
	for (size_t i = 0; i < p->nloc; i++) {
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = p->loc[i].function;
		lines[i].line = p->loc[i].line;
		plines[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].mapping_id = p->loc[i].mapping;
		/* The call instruction, not the return address after it: where the frame's
		 * line was resolved (symbols.c), and where pprof looks when it symbolizes. */
		locs[i].address = p->loc[i].ip ? p->loc[i].ip - 1 : 0;
		locs[i].n_line = 1;
		locs[i].line = &plines[i];
		plocs[i] = &locs[i];
	}
	for (size_t i = 0; i < p->nfn; i++) {
		perftools__profiles__function__init(&fns[i]);
		fns[i].id = i + 1;
		/* symbols.c keeps one name per function; it is the object's own. */
		fns[i].name = fns[i].system_name = p->fn[i].name;
		fns[i].filename = p->fn[i].file;
		pfns[i] = &fns[i];
	}
	prof.n_sample_type = ntypes;
	prof.sample_type = ptypes;
	prof.n_sample = n;
	prof.sample = psamples;
	prof.n_mapping = p->nmap;
	prof.mapping = pmaps;
	prof.n_location = p->nloc;
	prof.location = plocs;
	prof.n_function = p->nfn;
	prof.function = pfns;
	prof.n_string_table = p->nstr;
	prof.string_table = p->str;
	prof.duration_nanos = (int64_t)rasp_tally_duration_ns(v->tally);
	prof.period_type = &period_type;
	prof.period = period_of(v->tally);
	prof.n_comment = nnotes;
	prof.comment = comments;

	*g = (struct gz){.base.append = gz_append, .out = out};
	/* windowBits 15 + 16: a gzip wrapper, which is what pprof reads. Its mtime stays 0, so one
	 * trace always gives the same bytes. */
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		goto out;
	perftools__profiles__profile__pack_to_buffer(&prof, &g->base);
	rc = g->err ? g->err : gz_run(g, Z_FINISH);
	deflateEnd(&g->z);
out:
	free(g);
	free(comments);
	free(pmaps);
	free(maps);
	free(pfns);
	free(fns);
	free(plines);
	free(lines);
	free(plocs);
	free(locs);
	free(values);
	free(plabels);
	free(labels);
	free(psamples);
	free(samples);
	return rc;
}

static int write_pprof(const struct rasp_report_view *v, FILE *out)
{
	struct rasp_pprof p = {.v = v};
	int rc = rasp_pprof_collect(&p);

	if (!rc)
		rc = rasp_pprof_order_mappings(&p);
	if (!rc)
		rc = emit(&p, out);
	if (!rc && ferror(out))
		rc = -EIO;
	rasp_pprof_free(&p);
	return rc;
}

const struct rasp_writer rasp_writer_pprof = {.name = "pprof",
					      .write = write_pprof,
					      .stacks = true,
					      .binary = true,
					      .integers = true,
					      .suffix = ".pb.gz"};
