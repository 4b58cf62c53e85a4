/* Tests of source.rasp.nettrace (consumer/bt/source-nettrace.c) end to end: `rasp report` on the
 * files tests/consumer/read/nettrace/make-nettrace.py writes (fixture nettrace-files), and the real
 * babeltrace2 CLI with the plugin built here. The V4, V5 and V6 forms of one trace make the same
 * report; a file cut short, lost events and corrupt files show in it as they must; the events
 * babeltrace2 sees are CoreCLR's LTTng events (name, seven fields, vpid/vtid). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lttng-session.h"
#include "nettrace-write.h"
#include "plugin-cli.h"
#include "rasp-event-desc.h"

#define OUT_CAP (1 << 20)
/* "Ünïcødé.Тип<😀>", the type name with non-ASCII characters and a surrogate pair. */
#define UNICODE_UTF8                                                                               \
	"\xC3\x9Cn\xC3\xAF"                                                                        \
	"c\xC3\xB8"                                                                                \
	"d\xC3\xA9.\xD0\xA2\xD0\xB8\xD0\xBF<\xF0\x9F\x98\x80>"

static const char *dir; /* where the fixture wrote the files */
static char out[OUT_CAP];

static const char *nt(const char *name, const char *ext)
{
	static char paths[4][4096];
	static unsigned next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s%s", dir, name, ext);
	return p;
}

static int file_write(void *ctx, const void *p, size_t n)
{
	return fwrite(p, 1, n, ctx) == n ? 0 : -EIO;
}

/* A whole file, in one of 4 static buffers used in turn (no leak when a check fails); NULL
 * when it cannot be read. */
static char *slurp(const char *path)
{
	static char bufs[4][1 << 18];
	static unsigned next;
	char *buf = bufs[next++ % 4];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(bufs[0]) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Whitespace runs as one space: both CLIs may wrap long messages. */
static void squeeze(char *s)
{
	char *d = s, *start = s;

	for (; *s; s++) {
		bool space = *s == ' ' || *s == '\n' || *s == '\t';

		if (space && d > start && d[-1] == ' ')
			continue;
		*d++ = space ? ' ' : *s;
	}
	*d = '\0';
}

static void expect_in(const char *hay, const char *needle, const char *what)
{
	if (!strstr(hay, needle))
		fail_msg("%s: no '%s' in:\n%s", what, needle, hay);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* `rasp report --format json -o NAME.json NAME.nettrace`: its exit status; the report (in a
 * slurp buffer) when there is one, the command's messages in out. */
static int report(const char *name, char **json)
{
	const char *json_path = nt(name, ".json");
	const char *argv[] = {RASP_TEST_TIMEOUT,
			      "-k",
			      "5",
			      "60",
			      rasp_test_build_path("bin/rasp"),
			      "report",
			      "--format",
			      "json",
			      "-o",
			      json_path,
			      nt(name, ".nettrace"),
			      NULL};
	int rc;

	unlink(json_path);
	rc = rasp_test_run(out, sizeof(out), argv, NULL);
	if (rc == 124 || rc == 137)
		fail_msg("rasp report %s did not end in 60 s", name);
	*json = slurp(json_path);
	return rc;
}

/* The report of a file, which must succeed. */
static char *report_ok(const char *name)
{
	char *json;
	int rc = report(name, &json);

	if (rc != 0 || !json)
		fail_msg("rasp report %s: exit %d:\n%s", name, rc, out);
	return json;
}

/* The report without its "inputs" line (the only one naming the file). */
static void drop_inputs(char *json, const char *name)
{
	char want[PATH_MAX + 32], real[PATH_MAX], *line = strstr(json, "\n  \"inputs\": ["), *end;

	if (!line || !realpath(nt(name, ".nettrace"), real))
		fail_msg("%s: no inputs line in\n%s", name, json);
	snprintf(want, sizeof(want), "\n  \"inputs\": [\"%s\"],\n", real);
	if (strncmp(line, want, strlen(want)) != 0)
		fail_msg("%s: inputs line is not %s", name, want);
	end = strchr(line + 1, '\n');
	memmove(line, end, strlen(end) + 1);
}

/* The three forms make byte-identical reports apart from the file's name, and the report says
 * what the trace holds. */
static void test_source_nettrace_forms_same_report(void **state)
{
	static const char *const forms[] = {"v4", "v5", "v6"};
	char *json[3];

	(void)state;
	for (size_t f = 0; f < 3; f++) {
		json[f] = report_ok(forms[f]);
		drop_inputs(json[f], forms[f]);
		if (f && strcmp(json[f], json[0]) != 0)
			fail_msg("the %s report differs from the v4 one:\n%s\n---- v4:\n%s",
				 forms[f], json[f], json[0]);
	}
	expect_in(json[0], "\"total\": {\"samples\": 14,", "v4");
	expect_in(json[0], "\"other_events\": 3,", "v4");
	expect_in(json[0], "\"sampling_means\": [{\"process\": 4242, \"sampling_mean\": 65536}]",
		  "v4");
	expect_in(json[0], "\"discarded_events\": 0,", "v4");
	expect_in(json[0], "\"incomplete_input\": false,", "v4");
	expect_in(json[0], "{\"type\": \"" UNICODE_UTF8 "\", \"samples\": 2,", "v4");
	expect_in(json[0], "{\"type\": \"System.Byte[]\", \"samples\": 2,", "v4");
	json[0] = report_ok("vector");
	expect_in(json[0], "\"total\": {\"samples\": 3,", "vector");
	expect_in(json[0], "\"incomplete_input\": false,", "vector");
}

/* Cut short: the report says its input is incomplete and its estimates too low. Each file
 * ends after its last event block; v6-truncated's last four bytes happen to be zero (the high
 * half of the last SampledByteOffset), which an end check looking at the tail alone takes for
 * V6's EndOfStream block. */
static void test_source_nettrace_truncated(void **state)
{
	static const char *const names[] = {"v4-truncated", "v5-truncated", "v6-truncated"};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		char *json = report_ok(names[i]);

		expect_in(json, "\"estimates_too_low\": true,", names[i]);
		expect_in(json, "\"total\": {\"samples\": 14,", names[i]);
		if (!strstr(json, "\"incomplete_input\": true,"))
			fail_msg("%s: the report does not say its input is incomplete (the reader "
				 "does: rasp_nt_complete() is false):\n%s",
				 names[i], json);
	}
}

/* Lost events: the report counts what the sequence numbers show, exactly. */
static void test_source_nettrace_discarded(void **state)
{
	static const struct {
		const char *name, *count;
	} cases[] = {
	    {"v4-gap", "\"discarded_events\": 5,"},
	    {"v5-gap", "\"discarded_events\": 5,"},
	    {"v6-gap", "\"discarded_events\": 5,"},
	    {"v4-drop-tail", "\"discarded_events\": 3,"},
	    {"v5-drop-tail", "\"discarded_events\": 3,"},
	    {"v6-drop-tail", "\"discarded_events\": 3,"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *json = report_ok(cases[i].name);

		expect_in(json, cases[i].count, cases[i].name);
		expect_in(json, "\"discarded_events_unknown\": 0,", cases[i].name);
		expect_in(json, "\"estimates_too_low\": true,", cases[i].name);
		expect_in(json, "\"incomplete_input\": false,", cases[i].name);
	}
}

/* The offset NAME.expect says a corrupt file's error names. */
static long error_offset(const char *name)
{
	char *e = slurp(nt(name, ".expect")), *p;
	long off;

	if (!e || !(p = strstr(e, "\nerror\t")))
		fail_msg("%s.expect names no error offset", name);
	off = atol(p + 7);
	return off;
}

static const char *const corrupt[] = {
    "v4-corrupt-tag",
    "v4-corrupt-name-length",
    "v4-corrupt-block-size",
    "v4-corrupt-payload-size",
    "v4-corrupt-undefined-metadata",
    "v5-corrupt-tag",
    "v5-corrupt-payload-size",
    "v6-corrupt-payload-size",
    "v6-corrupt-undefined-metadata",
    "v6-corrupt-unknown-thread",
};

/* A corrupt file fails the report (exit 1), the file and the offset named, and leaves no
 * report behind. */
static void test_source_nettrace_corrupt_report(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(corrupt) / sizeof(corrupt[0]); i++) {
		char where[4200], *json;
		int rc = report(corrupt[i], &json);

		snprintf(where, sizeof(where), "%s: at offset %ld: ", nt(corrupt[i], ".nettrace"),
			 error_offset(corrupt[i]));
		if (rc != 1)
			fail_msg("rasp report %s: exit %d, want 1:\n%s", corrupt[i], rc, out);
		squeeze(out);
		expect_in(out, where, corrupt[i]);
		if (json)
			fail_msg("rasp report %s left a report:\n%s", corrupt[i], json);
	}
}

/* Writes dir/NAME.nettrace: one AllocationSampled event at timestamp ts, after a header whose
 * clock is synchronised at sync_ticks (the project's own writer). */
static void write_clock_file(const char *name, int64_t sync_ticks, int64_t ts)
{
	FILE *f = fopen(nt(name, ".nettrace"), "wb");
	struct rasp_nt_out o = {.write = file_write, .ctx = f};
	struct rasp_nt_trace_header h = {.sync_utc_ns = INT64_C(1786104000) * 1000000000,
					 .sync_ticks = sync_ticks,
					 .frequency = 1000000000,
					 .pointer_size = 8,
					 .pid = 77,
					 .processors = 1};
	const struct rasp_event_desc *d =
	    &rasp_event_descs[RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED];
	union rasp_nt_value v[7] = {{.u = 0}, {.u = 0},	 {.u = 1}, {.s = "Clock.Odd"},
				    {.u = 2}, {.u = 64}, {.u = 3}};
	uint8_t rec[256], blk[512], pl[256];
	struct rasp_nt_block b;
	size_t n;

	assert_non_null(f);
	assert_int_equal(rasp_nt_write_header(&o, &h), 0);
	n = rasp_nt_encode_metadata(1, d, false, rec, sizeof(rec));
	rasp_nt_block_init(&b, blk, sizeof(blk));
	assert_int_equal(rasp_nt_block_add(&b, &(struct rasp_nt_hdr){.tid = 77, .ts = ts}, rec, n),
			 0);
	rasp_nt_block_finish(&b);
	assert_int_equal(rasp_nt_write_block(&o, "MetadataBlock", b.buf, b.len), 0);
	n = rasp_nt_encode_payload(d, v, 8, pl, sizeof(pl));
	rasp_nt_block_init(&b, blk, sizeof(blk));
	assert_int_equal(
	    rasp_nt_block_add(
		&b,
		&(struct rasp_nt_hdr){
		    .meta = 1, .seq = 1, .tid = 77, .capture = 77, .ts = ts, .sorted = true},
		pl, n),
	    0);
	rasp_nt_block_finish(&b);
	assert_int_equal(rasp_nt_write_block(&o, "EventBlock", b.buf, b.len), 0);
	assert_int_equal(rasp_nt_write_end(&o), 0);
	assert_int_equal(fclose(f), 0);
}

/* Clocks a corrupt header or event can give: a sync point at the edge of 64 bits (the offset
 * was a signed overflow) reads without undefined behaviour; an event before the clock's
 * origin (it made the muxer fail with no file named) is refused, naming file and offset. */
static void test_source_nettrace_odd_clocks(void **state)
{
	char *json;
	int rc;

	(void)state;
	write_clock_file("clock-edge", INT64_MIN, 5);
	rc = report("clock-edge", &json);
	if (rc != 0 && rc != 1)
		fail_msg("rasp report clock-edge: exit %d:\n%s", rc, out);
	write_clock_file("clock-negative", 1000, -5);
	rc = report("clock-negative", &json);
	if (rc != 1)
		fail_msg("rasp report clock-negative: exit %d, want 1:\n%s", rc, out);
	squeeze(out);
	expect_in(out, nt("clock-negative", ".nettrace"), "the file named");
	expect_in(out, "lies outside the clock's range", "the reason");
	expect_in(out, "at offset ", "the offset");
}

/* `babeltrace2 -c source.rasp.nettrace -p inputs=[F] -c SINK`: its exit status, output in out. */
static int bt2(const char *name, const char *sink)
{
	static char inputs[4200];
	const char *pre[] = {"-c", "source.rasp.nettrace", "-p", inputs, "-c", sink, NULL};

	snprintf(inputs, sizeof(inputs), "inputs=[\"%s\"]", nt(name, ".nettrace"));
	return plugin_run(out, sizeof(out), pre, NULL, 60);
}

/* babeltrace2 reads the files with the plugin: CoreCLR's event class with its seven fields as
 * the manifest names them, vpid and vtid, every event, and what the source says of losses. */
static void test_source_nettrace_babeltrace2(void **state)
{
	static const char *const classes[] = {
	    "Event class `DotNETRuntime:AllocationSampled` (ID 1):\n"
	    "      Payload field class: Structure (7 members):\n"
	    "        AllocationKind: Unsigned integer (32-bit, Base 10)\n"
	    "        ClrInstanceID: Unsigned integer (16-bit, Base 10)\n"
	    "        TypeID: Unsigned integer (64-bit, Base 10)\n"
	    "        TypeName: String\n"
	    "        Address: Unsigned integer (64-bit, Base 10)\n"
	    "        ObjectSize: Unsigned integer (64-bit, Base 10)\n"
	    "        SampledByteOffset: Unsigned integer (64-bit, Base 10)\n",
	    "    Event common context field class: Structure (2 members):\n"
	    "      vpid: Signed integer (64-bit, Base 10)\n"
	    "      vtid: Signed integer (64-bit, Base 10)\n",
	    "Event class `Rasp_Runtime:SamplingConfigured` (ID 2):\n"
	    "      Payload field class: Structure (4 members):\n"
	    "        ClrInstanceID: Unsigned integer (16-bit, Base 10)\n"
	    "        SamplingMean: Unsigned integer (64-bit, Base 10)\n"
	    "        AllocationQuantum: Unsigned integer (64-bit, Base 10)\n"
	    "        Trigger: Unsigned integer (32-bit, Base 10)\n",
	};
	/* The first event of thread 4243, 1.15 ms after 2026-08-07 12:00:00 UTC (+1 s of ticks). */
	static const char event[] =
	    "[1,001,150,000 cycles, 1,786,104,000,001,150,000 ns from origin]\n"
	    "{Trace 0, Stream class ID 0, Stream ID 0}\n"
	    "Event `DotNETRuntime:AllocationSampled` (Class ID 1):\n"
	    "  Common context:\n"
	    "    vpid: 4242\n"
	    "    vtid: 4243\n"
	    "  Payload:\n"
	    "    AllocationKind: 0\n"
	    "    ClrInstanceID: 0\n"
	    "    TypeID: 139,637,976,739,840\n"
	    "    TypeName: " UNICODE_UTF8 "\n"
	    "    Address: 139,641,712,607,744\n"
	    "    ObjectSize: 48\n"
	    "    SampledByteOffset: 5\n";
	static const char pretty[] =
	    "[12:00:00.001250000] (+0.000050000) DotNETRuntime:AllocationSampled: "
	    "{ vpid = 4242, vtid = 4250 }, { AllocationKind = 1, ClrInstanceID = 0, "
	    "TypeID = 139637976735744, TypeName = \"System.Byte[]\", Address = 139641180061696, "
	    "ObjectSize = 90000, SampledByteOffset = 4096 }\n";
	static const char *const forms[] = {"v4", "v5", "v6"};

	(void)state;
	for (size_t f = 0; f < 3; f++) {
		int rc = bt2(forms[f], "sink.text.details");

		if (rc != 0)
			fail_msg("babeltrace2 on %s: exit %d:\n%s", forms[f], rc, out);
		for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
			expect_in(out, classes[i], forms[f]);
		expect_in(out, event, forms[f]);
		assert_int_equal(count(out, "\nEvent `DotNETRuntime:AllocationSampled`"), 14);
		/* Each known event with a non-empty stack is preceded by its ClrStackWalk: the
		 * SamplingConfigured and 10 of the samples (one sample's stack is empty, three have
		 * none). */
		assert_int_equal(count(out, "\nEvent `DotNETRuntime:ClrStackWalk`"), 11);
		assert_int_equal(count(out, "\nEvent `"), 18 + 11);
		assert_int_equal(count(out, "\nDiscarded events"), 0);
		/* Timestamp order through babeltrace2's muxer: one wrong order fails the graph. */
		rc = bt2(forms[f], "sink.text.pretty");
		if (rc != 0)
			fail_msg("babeltrace2 (pretty) on %s: exit %d:\n%s", forms[f], rc, out);
		expect_in(out, pretty, forms[f]);
		assert_int_equal(count(out, "DotNETRuntime:AllocationSampled: "), 14);
	}
	/* Losses between packets, with their count; a file cut short: an unknown number. */
	assert_int_equal(bt2("v6-gap", "sink.text.details"), 0);
	expect_in(out, "Discarded events (5 events)", "v6-gap");
	assert_int_equal(bt2("v4-truncated", "sink.text.details"), 0);
	expect_in(out, "}\nDiscarded events\n\n", "v4-truncated"); /* no count: unknown */
	assert_int_equal(count(out, "\nEvent `"), 18 + 11);
}

/* A corrupt file fails the babeltrace2 graph with the file and the offset in the message. */
static void test_source_nettrace_babeltrace2_corrupt(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(corrupt) / sizeof(corrupt[0]); i++) {
		char where[4200];
		int rc = bt2(corrupt[i], "sink.text.pretty");

		snprintf(where, sizeof(where), "%s: at offset %ld: ", nt(corrupt[i], ".nettrace"),
			 error_offset(corrupt[i]));
		if (rc == 0)
			fail_msg("babeltrace2 read %s without an error:\n%s", corrupt[i], out);
		squeeze(out);
		expect_in(out, where, corrupt[i]);
	}
}

/* `rasp ARGS...` (NULL-terminated, at most 8) under a 60 s guard: its exit status, output in
 * out. A signal is a failure whatever the caller expects. */
static int rasp(const char *first, ...)
{
	const char *argv[16] = {RASP_TEST_TIMEOUT, "-k", "5", "60",
				rasp_test_build_path("bin/rasp")};
	size_t n = 5;
	va_list ap;
	int rc;

	va_start(ap, first);
	for (const char *a = first; a && n < 14; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	rc = rasp_test_run(out, sizeof(out), argv, NULL);
	if (rc > 128)
		fail_msg("rasp %s: killed by signal %d (or timed out):\n%s", first, rc - 128, out);
	return rc;
}

static void remove_tree(const char *path);
static int bt2_plain(const char *const *args);

/* Valid for 17 events and corrupt after them, the error in a later batch of messages than
 * the first: each command and babeltrace2 fail with exit status 1 and the file and offset
 * named, never a signal (the source's error path put messages of an earlier batch that it
 * no longer owned: SIGSEGV). */
static void test_source_nettrace_late_corrupt(void **state)
{
	static const char *const names[] = {"v4-late-corrupt", "v5-late-corrupt",
					    "v6-late-corrupt"};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *path = nt(names[i], ".nettrace");
		char where[4200], conv[4200];
		int rc;

		snprintf(where, sizeof(where), "%s: at offset %ld: ", path, error_offset(names[i]));
		snprintf(conv, sizeof(conv), "%s/%s.converted.nettrace", dir, names[i]);
		rc = rasp("report", "-o", nt(names[i], ".txt"), path, NULL);
		if (rc != 1)
			fail_msg("rasp report %s: exit %d, want 1:\n%s", names[i], rc, out);
		squeeze(out);
		expect_in(out, where, names[i]);
		rc = rasp("diff", nt("v4", ".nettrace"), path, NULL);
		if (rc != 1)
			fail_msg("rasp diff %s: exit %d, want 1:\n%s", names[i], rc, out);
		rc = rasp("convert", "-o", conv, path, NULL);
		if (rc != 1)
			fail_msg("rasp convert %s: exit %d, want 1:\n%s", names[i], rc, out);
		if (access(conv, F_OK) == 0)
			fail_msg("rasp convert %s left %s", names[i], conv);
		rc = bt2(names[i], "sink.text.details");
		if (rc != 1)
			fail_msg("babeltrace2 on %s: exit %d, want 1:\n%s", names[i], rc, out);
		squeeze(out);
		expect_in(out, where, names[i]);
		/* sink.ctf.fs: the graph fails, and what came before the bad block is a whole CTF
		 * trace (sink.ctf.fs 2.0 crashed tearing down a packet the source left open). */
		{
			char inputs[4400], sink[4400], ctf[4200];
			const char *write[] = {"-c", "source.rasp.nettrace", "-p", inputs,
					       "-c", "sink.ctf.fs",	     "-p", sink,
					       NULL};
			const char *plain[] = {ctf, NULL};

			snprintf(ctf, sizeof(ctf), "%s/%s.ctf", dir, names[i]);
			snprintf(inputs, sizeof(inputs), "inputs=[\"%s\"]", path);
			snprintf(sink, sizeof(sink),
				 "path=\"%s\",assume-single-trace=true,quiet=true", ctf);
			remove_tree(ctf);
			rc = plugin_run(out, sizeof(out), write, NULL, 60);
			if (rc != 1)
				fail_msg("babeltrace2 %s -> sink.ctf.fs: exit %d, want 1:\n%s",
					 names[i], rc, out);
			squeeze(out);
			expect_in(out, where, names[i]);
			rc = bt2_plain(plain);
			if (rc != 0)
				fail_msg("plain babeltrace2 on %s: exit %d:\n%s", ctf, rc, out);
			/* The samples before the bad event: the reader hands out a block's events
			 * one by one, so the one of its block before it is there too. */
			assert_int_equal(count(out, "DotNETRuntime:AllocationSampled: "), 10);
		}
	}
}

/* V6 may redefine a metadata id: each event gets the class of the definition in force when it
 * was written, never the id's first one (the old class held the wrong fields: SIGSEGV). The
 * class a definition names is made once: a redefinition back to an earlier event reuses its
 * class. */
static void test_source_nettrace_redefined_metadata(void **state)
{
	static const char after[] = "Event `DotNETRuntime:AllocationSampled` (Class ID 2):\n"
				    "  Common context:\n"
				    "    vpid: 4242\n"
				    "    vtid: 4242\n"
				    "  Payload:\n"
				    "    AllocationKind: 0\n"
				    "    ClrInstanceID: 0\n"
				    "    TypeID: 139,637,976,731,650\n"
				    "    TypeName: Redefined.T2\n";
	char *json;
	int rc;

	(void)state;
	json = report_ok("v6-redefined-short");
	expect_in(json, "\"total\": {\"samples\": 1,", "v6-redefined-short");
	expect_in(json, "\"sampling_configured_events\": 1,", "v6-redefined-short");
	expect_in(json, "{\"type\": \"Redefined.T1\", \"samples\": 1,", "v6-redefined-short");
	json = report_ok("v6-redefined-metadata");
	expect_in(json, "\"total\": {\"samples\": 3,", "v6-redefined-metadata");
	expect_in(json, "\"sampling_configured_events\": 2,", "v6-redefined-metadata");
	expect_in(json, "\"other_events\": 1,", "v6-redefined-metadata");
	for (int k = 1; k <= 3; k++) {
		char row[64];

		snprintf(row, sizeof(row), "{\"type\": \"Redefined.T%d\", \"samples\": 1,", k);
		expect_in(json, row, "v6-redefined-metadata");
	}
	rc = bt2("v6-redefined-metadata", "sink.text.details");
	if (rc != 0)
		fail_msg("babeltrace2 on v6-redefined-metadata: exit %d:\n%s", rc, out);
	/* Three classes: id 1's SamplingConfigured, id 2's AllocationSampled (id 1's second
	 * definition too) and id 1's last definition, under an id no metadata id takes. */
	assert_int_equal(count(out, "    Event class `"), 3);
	expect_in(out, "Event class `Rasp_Runtime:SamplingConfigured` (ID 1):", "classes");
	expect_in(out, "Event class `DotNETRuntime:AllocationSampled` (ID 2):", "classes");
	expect_in(out, "Event class `Contoso_Widgets:7_V2` (ID 4,294,967,295):", "classes");
	expect_in(out, after, "the event after id 1's redefinition");
	assert_int_equal(count(out, "\nEvent `Rasp_Runtime:SamplingConfigured`"), 2);
	assert_int_equal(count(out, "\nEvent `DotNETRuntime:AllocationSampled`"), 3);
	assert_int_equal(count(out, "\nEvent `Contoso_Widgets:7_V2`"), 1);
}

/* A file may make 16384 distinct event classes; one more is refused with the file, the
 * offset and the reason (each class costs memory, and libbabeltrace2 time quadratic in
 * their number). */
static void test_source_nettrace_class_limit(void **state)
{
	char *json;
	int rc;

	(void)state;
	json = report_ok("v6-classes-at-limit");
	expect_in(json, "\"other_events\": 16384,", "v6-classes-at-limit");
	rc = report("v6-classes-past-limit", &json);
	if (rc != 1)
		fail_msg("rasp report v6-classes-past-limit: exit %d, want 1:\n%s", rc, out);
	squeeze(out);
	expect_in(out, nt("v6-classes-past-limit", ".nettrace"), "the file named");
	expect_in(out, "(Contoso_Many:16385_V0): more than 16384 distinct event classes",
		  "the reason");
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* rm -rf path. */
static void remove_tree(const char *path)
{
	if (access(path, F_OK) == 0)
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* babeltrace2 with the plugin, the pre words given: sink.rasp.report's JSON report into
 * report_path; fails the test unless it succeeds. The report in a slurp buffer. */
static char *bt2_report(const char *const *pre, const char *report_path, const char *what)
{
	char params[4200];
	char *json;
	int rc;

	snprintf(params, sizeof(params), "format=\"json\",output=\"%s\"", report_path);
	unlink(report_path);
	rc = plugin_run(out, sizeof(out), pre, params, 60);
	if (rc != 0 || !(json = slurp(report_path)))
		fail_msg("%s: babeltrace2 -c sink.rasp.report: exit %d:\n%s", what, rc, out);
	return json;
}

/* babeltrace2 with no plugin of this tree: only babeltrace2's own. Exit status, output in out. */
static int bt2_plain(const char *const *args)
{
	const char *argv[16] = {RASP_TEST_TIMEOUT,	  "-k", "5", "60", RASP_TEST_BABELTRACE2,
				"--omit-home-plugin-path"};
	size_t n = 6;

	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return rasp_test_run(out, sizeof(out), argv, NULL);
}

/* source.rasp.nettrace -> sink.ctf.fs: babeltrace2 writes the CTF trace (sink.ctf.fs refused
 * the stream: its packets had no times, its losses did); babeltrace2 alone reads it back,
 * every event and loss there; and sink.rasp.report on the CTF trace (source.ctf.fs) gives the
 * report it gives on the .nettrace file. A loss of unknown size (a file cut short) becomes 1
 * discarded event: CTF 1.8 counts them. */
static void test_source_nettrace_ctf(void **state)
{
	static const struct {
		const char *name;
		int samples;
		const char *discarded;
	} cases[] = {
	    {"v4", 14, NULL},
	    {"v5", 14, NULL},
	    {"v6", 14, NULL},
	    {"vector", 3, NULL},
	    {"v6-gap", 14, "Discarded events (5 events)"},
	    {"v4-drop-tail", 14, "Discarded events (3 events)"},
	    {"v6-redefined-metadata", 3, NULL},
	    {"v6-redefined-many", 4, NULL},
	    {"v4-truncated", 14, "Discarded events (1 events)"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = cases[i].name;
		char inputs[4400], sink[4400], ctf[4200], *want, *got;
		const char *write[] = {"-c", "source.rasp.nettrace", "-p", inputs,
				       "-c", "sink.ctf.fs",	     "-p", sink,
				       NULL};
		const char *from_nt[] = {"-c", "source.rasp.nettrace", "-p", inputs, NULL};
		const char *from_ctf[] = {ctf, NULL};
		const char *plain[] = {ctf, "-c", "sink.text.details", NULL};
		char want_copy[1 << 16];
		int rc;

		snprintf(ctf, sizeof(ctf), "%s/%s.ctf", dir, name);
		snprintf(inputs, sizeof(inputs), "inputs=[\"%s\"]", nt(name, ".nettrace"));
		snprintf(sink, sizeof(sink), "path=\"%s\",assume-single-trace=true,quiet=true",
			 ctf);
		remove_tree(ctf);
		rc = plugin_run(out, sizeof(out), write, NULL, 60);
		if (rc != 0)
			fail_msg(
			    "%s: babeltrace2 -c source.rasp.nettrace -c sink.ctf.fs: exit %d:\n%s",
			    name, rc, out);
		rc = bt2_plain(plain);
		if (rc != 0)
			fail_msg("%s: plain babeltrace2 on its CTF trace: exit %d:\n%s", name, rc,
				 out);
		assert_int_equal(count(out, "\nEvent `DotNETRuntime:AllocationSampled`"),
				 cases[i].samples);
		assert_int_equal(count(out, "\nDiscarded events"), cases[i].discarded ? 1 : 0);
		if (cases[i].discarded)
			expect_in(out, cases[i].discarded, name);
		want = bt2_report(from_nt, nt(name, ".nt.json"), name);
		snprintf(want_copy, sizeof(want_copy), "%s", want);
		got = bt2_report(from_ctf, nt(name, ".ctf.json"), name);
		if (strcmp(name, "v4-truncated") == 0) {
			expect_in(want_copy,
				  "\"discarded_events\": 0,\n  \"discarded_events_unknown\": 1,",
				  name);
			expect_in(got,
				  "\"discarded_events\": 1,\n  \"discarded_events_unknown\": 0,",
				  name);
			continue;
		}
		if (strcmp(got, want_copy) != 0)
			fail_msg("%s: the report of its CTF trace differs:\n%s\n---- of the "
				 ".nettrace file:\n%s",
				 name, got, want_copy);
	}
}

/* rasp convert --to ctf -o DIR: the one-command way. rasp report on DIR says what it says on
 * the file; DIR must not exist (refused, left alone); a corrupt input leaves no DIR and
 * nothing beside it. */
static void test_source_nettrace_convert_ctf(void **state)
{
	static const char *const names[] = {"v4", "v6-gap", "vector", "v6-redefined-metadata"};
	char ctf[4200], base[4200], bad[4200];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[1 << 16], *got;
		int rc;

		snprintf(ctf, sizeof(ctf), "%s/%s.convert-ctf", dir, names[i]);
		remove_tree(ctf);
		rc = rasp("convert", "--to", "ctf", "-o", ctf, nt(names[i], ".nettrace"), NULL);
		if (rc != 0)
			fail_msg("rasp convert --to ctf %s: exit %d:\n%s", names[i], rc, out);
		expect_in(out, "rasp convert: wrote the CTF trace ", names[i]);
		rc = rasp("report", "--format", "json", "-o", nt(names[i], ".cv-nt.json"),
			  nt(names[i], ".nettrace"), NULL);
		assert_int_equal(rc, 0);
		snprintf(want, sizeof(want), "%s", slurp(nt(names[i], ".cv-nt.json")));
		rc = rasp("report", "--format", "json", "-o", nt(names[i], ".cv-ctf.json"), ctf,
			  NULL);
		if (rc != 0)
			fail_msg("rasp report on %s: exit %d:\n%s", ctf, rc, out);
		got = slurp(nt(names[i], ".cv-ctf.json"));
		/* All but the inputs line. */
		*strstr(want, "\n  \"inputs\": [") = '\0';
		if (strncmp(got, want, strlen(want)) != 0 ||
		    strcmp(strstr(got, "\n  \"duration_ns\""),
			   strstr(slurp(nt(names[i], ".cv-nt.json")), "\n  \"duration_ns\"")))
			fail_msg("%s: rasp report of the converted trace differs:\n%s", names[i],
				 got);
	}
	/* An existing directory is refused and kept as it was. */
	rasp("convert", "--to", "ctf", "-o", ctf, nt("v4", ".nettrace"), NULL);
	squeeze(out);
	expect_in(out, "exists: give a directory that does not", "an existing directory");
	assert_int_equal(access(ctf, F_OK), 0);
	/* A corrupt file: exit 1, its offset named, no directory. */
	snprintf(bad, sizeof(bad), "%s/late.convert-ctf", dir);
	remove_tree(bad);
	snprintf(base, sizeof(base), "%s/late.convert-ctf.partial-", dir);
	{
		/* What an earlier run may have left. */
		char pattern[4300];
		glob_t g;

		snprintf(pattern, sizeof(pattern), "%s*", base);
		if (glob(pattern, 0, NULL, &g) == 0)
			for (size_t i = 0; i < g.gl_pathc; i++)
				remove_tree(g.gl_pathv[i]);
		globfree(&g);
	}
	assert_int_equal(
	    rasp("convert", "--to", "ctf", "-o", bad, nt("v6-late-corrupt", ".nettrace"), NULL), 1);
	expect_in(out, nt("v6-late-corrupt", ".nettrace"), "the file named");
	assert_int_equal(access(bad, F_OK), -1);
	{
		/* Nor its scratch directory. */
		char pattern[4300];
		glob_t g;

		snprintf(pattern, sizeof(pattern), "%s*", base);
		if (glob(pattern, 0, NULL, &g) == 0)
			fail_msg("rasp convert left %s", g.gl_pathv[0]);
		globfree(&g);
	}
	/* Usage: --pid, several traces. */
	assert_int_equal(
	    rasp("convert", "--to", "ctf", "--pid", "1", "-o", bad, nt("v4", ".nettrace"), NULL),
	    2);
	expect_in(out, "--pid applies to --to nettrace", "--pid");
	assert_int_equal(rasp("convert", "--to", "ctf", "-o", bad, nt("v4", ".nettrace"),
			      nt("v6", ".nettrace"), NULL),
			 2);
	expect_in(out, "--to ctf writes one trace", "two traces");
	assert_int_equal(rasp("convert", "--to", "xml", "-o", bad, nt("v4", ".nettrace"), NULL), 2);
	expect_in(out, "bad value 'xml' for --to: accepted: nettrace, ctf", "--to xml");
}

/* `babeltrace2 FILE.nettrace` finds source.rasp.nettrace as `babeltrace2 DIR` finds
 * source.ctf.fs: the source answers babeltrace.support-info with weight 1 for a file with the
 * NetTrace magic and 0 for anything else. */
static void test_source_nettrace_support_info(void **state)
{
	static const struct {
		const char *input, *type, *want;
	} queries[] = {
	    {"v4", "file", "1.000000"},		  {"v6", "file", "1.000000"},
	    {"v4-truncated", "file", "1.000000"}, {"v4.expect", "file", "0.000000"},
	    {"nosuch", "file", "0.000000"},	  {"", "directory", "0.000000"},
	    {"v4", "string", "0.000000"},
	};
	char params[4400], path[4200];
	const char *query[] = {
	    "query", "source.rasp.nettrace", "babeltrace.support-info", "-p", params, NULL};
	const char *plain[] = {"", "-c", "sink.text.details", NULL};
	char *json;

	(void)state;
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		int rc;

		if (strstr(queries[i].input, ".") || !queries[i].input[0])
			snprintf(path, sizeof(path), "%s/%s", dir, queries[i].input);
		else
			snprintf(path, sizeof(path), "%s", nt(queries[i].input, ".nettrace"));
		snprintf(params, sizeof(params), "input=\"%s\",type=\"%s\"", path, queries[i].type);
		rc = plugin_run(out, sizeof(out), query, NULL, 60);
		if (rc != 0 || strncmp(out, queries[i].want, strlen(queries[i].want)) != 0)
			fail_msg("support-info of %s (%s): exit %d, want %s:\n%s", path,
				 queries[i].type, rc, queries[i].want, out);
	}
	/* Auto-discovery: the file alone, with babeltrace2's default sink and with ours. */
	{
		const char *pre[] = {nt("v6", ".nettrace"), NULL};
		const char *pretty[] = {nt("v6", ".nettrace"), NULL};
		int rc = plugin_run(out, sizeof(out), pretty, NULL, 60);

		if (rc != 0)
			fail_msg("babeltrace2 v6.nettrace: exit %d:\n%s", rc, out);
		assert_int_equal(count(out, "DotNETRuntime:AllocationSampled: "), 14);
		json = bt2_report(pre, nt("v6", ".auto.json"), "auto-discovery");
		expect_in(json, "\"total\": {\"samples\": 14,", "auto-discovery");
	}
	/* Without the plugin, the file is nobody's: babeltrace2 says so and fails. */
	plain[0] = nt("v6", ".nettrace");
	assert_int_not_equal(bt2_plain(plain), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_nettrace_forms_same_report),
	    cmocka_unit_test(test_source_nettrace_truncated),
	    cmocka_unit_test(test_source_nettrace_discarded),
	    cmocka_unit_test(test_source_nettrace_corrupt_report),
	    cmocka_unit_test(test_source_nettrace_babeltrace2),
	    cmocka_unit_test(test_source_nettrace_babeltrace2_corrupt),
	    cmocka_unit_test(test_source_nettrace_odd_clocks),
	    cmocka_unit_test(test_source_nettrace_late_corrupt),
	    cmocka_unit_test(test_source_nettrace_redefined_metadata),
	    cmocka_unit_test(test_source_nettrace_class_limit),
	    cmocka_unit_test(test_source_nettrace_ctf),
	    cmocka_unit_test(test_source_nettrace_convert_ctf),
	    cmocka_unit_test(test_source_nettrace_support_info),
	};

	if (argc != 2) {
		fprintf(stderr,
			"usage: %s DIR (the files of make-nettrace.py --suite and "
			"make-source-cases.py)\n",
			argv[0]);
		return 2;
	}
	dir = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
