/* The consumer at scale, in process (no trace decoding: what the tally, the rows, the writers
 * and the diff cost): TYPES types sampled on THREADS threads of one process, and PROCS
 * processes each with its own SamplingConfigured mean. Prints seconds and peak RSS per stage.
 * Usage: rasp-bench-scale [TYPES] [THREADS] [PROCS]   (defaults 1000000 8 300000)
 * Built and run by bench/consumer/scale.sh. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "report/diff.h"
#include "write/writer.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

static double t0;

static void stage(const char *what)
{
	double t = now();

	printf("%-44s %8.2f s   peak RSS %6ld MB\n", what, t - t0, peak_mb());
	fflush(stdout);
	t0 = now();
}

/* One sample per (type, thread), sizes 24..1048 bytes, offsets inside. */
static struct rasp_tally *types_tally(unsigned group_by, long types, long threads, uint64_t seed)
{
	struct rasp_tally *t = rasp_tally_create(group_by, RASP_DEFAULT_SAMPLING_MEAN);
	char name[32];

	if (!t)
		abort();
	rasp_tally_set_process_name(t, 1, "bench");
	for (long k = 0; k < types; k++) {
		snprintf(name, sizeof(name), "Bench.Type%ld", k);
		for (long th = 0; th < threads; th++) {
			uint64_t z = 24 + 8 * ((uint64_t)(k * 31 + th * 7 + seed) % 128);

			if (rasp_tally_add_sample(t, name, 0, 1, 100 + th, z, z / 3))
				abort();
		}
	}
	return t;
}

static void render(struct rasp_tally *t, const char *format)
{
	struct rasp_report_options opt;
	FILE *f = fopen("/dev/null", "w");

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "%s", format);
	if (!f || rasp_report_render(t, &opt, "--sampling-mean", f))
		abort();
	fclose(f);
}

static struct rasp_diff_item *items(struct rasp_tally *t, struct rasp_rows *rows, size_t *n)
{
	struct rasp_diff_item *v;

	if (rasp_rows_build(t, 0.95, rows))
		abort();
	v = malloc((rows->n + 1) * sizeof(*v));
	for (size_t i = 0; i < rows->n; i++)
		v[i] = (struct rasp_diff_item){rasp_row_type(t, &rows->v[i]), rows->v[i].est};
	*n = rows->n;
	return v;
}

int main(int argc, char **argv)
{
	long types = argc > 1 ? atol(argv[1]) : 1000000, threads = argc > 2 ? atol(argv[2]) : 8;
	long procs = argc > 3 ? atol(argv[3]) : 300000;
	struct rasp_tally *a, *b, *p;
	struct rasp_rows ra, rb;
	struct rasp_diff_item *ia, *ib;
	struct rasp_diff_change *changes;
	size_t na, nb, n;
	char label[96];

	printf("%ld types x %ld threads (%ld samples), %ld processes\n", types, threads,
	       types * threads, procs);
	t0 = now();
	a = types_tally(RASP_GROUP_TYPE, types, threads, 0);
	snprintf(label, sizeof(label), "tally: %ld samples, by type", types * threads);
	stage(label);
	render(a, "text");
	stage("report text (rows, intervals, sort, write)");
	render(a, "json");
	stage("report json");
	b = types_tally(RASP_GROUP_TYPE, types, threads, 5);
	stage("second tally (for the diff)");
	ia = items(a, &ra, &na);
	ib = items(b, &rb, &nb);
	stage("rows of both sides");
	if (rasp_diff_compute(&(struct rasp_diff_side){"a", ia, na, RASP_DEFAULT_SAMPLING_MEAN},
			      &(struct rasp_diff_side){"b", ib, nb, RASP_DEFAULT_SAMPLING_MEAN},
			      0.95, &changes, &n))
		abort();
	snprintf(label, sizeof(label), "diff of %zu types", n);
	stage(label);
	free(changes);
	free(ia);
	free(ib);
	rasp_rows_free(&ra);
	rasp_rows_free(&rb);
	rasp_tally_destroy(a);
	rasp_tally_destroy(b);

	a = types_tally(RASP_GROUP_TYPE | RASP_GROUP_THREAD, types / 10, threads, 0);
	snprintf(label, sizeof(label), "tally by type and thread (%ld types)", types / 10);
	stage(label);
	render(a, "csv");
	stage("report csv by type and thread");
	rasp_tally_destroy(a);

	p = rasp_tally_create(RASP_GROUP_TYPE, RASP_DEFAULT_SAMPLING_MEAN);
	for (long i = 0; i < procs; i++) {
		if (rasp_tally_set_mean(p, 1000 + i, 1000 + i, (double)(4096 << (i % 6))) ||
		    rasp_tally_add_sample(p, "Bench.Proc", 0, 1000 + i, 1000 + i, 64, 10) ||
		    rasp_tally_add_sample(p, "Bench.Other", 0, 1000 + i, 1000 + i, 512, 100))
			abort();
	}
	snprintf(label, sizeof(label), "tally: %ld processes with their own mean", procs);
	stage(label);
	render(p, "text");
	stage("report text of those processes");
	rasp_tally_destroy(p);
	return 0;
}
