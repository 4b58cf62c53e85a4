/* The loaded objects of the runtime's EventPipe sessions (events/eventpipe-objects.c and their
 * rundown in eventpipe-session.c): rasp__ep_objects_read finds this program and libc with
 * their ranges and build ids; rasp-stack-prog started with .NET's variables writes a file
 * whose ObjectLoaded events (the start's rundown, and at the end the plugin it dlopened, marked
 * loaded later) let `rasp report --by site` name every site as on an LTTng trace, with no
 * [no object] frame; a session without stacks gets no ObjectLoaded.
 *   test-eventpipe-objects RASP STACK-PROG PLUGIN WORKDIR */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/wait.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "eventpipe-objects.h"
#include "nettrace-stream.h"
#include "read/nettrace-read.h"
#include "rasp-event-desc.h"

static const char *rasp, *prog, *plugin, *dir;

static void test_objects_read(void **state)
{
	struct rasp__ep_objects o = {0};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	/* A function of libc's that no sanitizer intercepts (printf is ASan's own under ASan). */
	uintptr_t here = (uintptr_t)&test_objects_read, libc = (uintptr_t)&gnu_get_libc_version;
	bool self = false, c = false;

	(void)state;
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(rasp__ep_objects_read(&o), 0);
	assert_true(o.n >= 2);
	for (size_t i = 0; i < o.n; i++) {
		const struct rasp__ep_object *x = &o.v[i];

		assert_non_null(x->path);
		assert_int_equal(x->path[0], '/'); /* never the vDSO, never empty */
		assert_true(x->size > 0);
		assert_true(x->build_id_len <= RASP__EP_BUILD_ID_MAX);
		assert_int_equal(x->flags & RASP__EP_OBJECT_LATER, 0);
		assert_true(rasp__ep_objects_has(&o, x));
		if (here - x->base < x->size) {
			assert_string_equal(x->path, exe);
			self = true;
		}
		if (libc - x->base < x->size) {
			assert_non_null(strstr(x->path, "libc"));
			/* Debian's libc has a GNU build id of 20 bytes (SHA-1). */
			assert_int_equal(x->build_id_len, 20);
			assert_true(x->flags & RASP__EP_OBJECT_PIC);
			c = true;
		}
	}
	assert_true(self);
	assert_true(c);
	{
		struct rasp__ep_object other = o.v[0];

		other.base += 4096;
		assert_false(rasp__ep_objects_has(&o, &other));
	}
	rasp__ep_objects_free(&o);
	assert_int_equal(o.n, 0);
}

/* Runs stack-prog in dir writing name, stacks on or off; 0 when it exited 0. LTTng stays on,
 * as by default (no session: nothing waits, LTTNG_UST_REGISTER_TIMEOUT=0): with RASP_LTTNG=0
 * liblttng-ust-tracepoint is unloaded before exit and LeakSanitizer, finding its start-up buffer
 * in no module, cannot tell it from a leak of rasp's. */
static int record(const char *name, bool stacks)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && rm -f '%s' && env -u LD_PRELOAD RASP_SEED=7 "
		 "DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath='%s' "
		 "DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x80000000000:4 "
		 "DOTNET_EventPipeEnableStackwalk=%d '%s' '%s' 3000 >/dev/null",
		 dir, name, name, stacks ? 1 : 0, prog, plugin);
	return system(cmd);
}

/* ObjectLoaded events of a file: all, and those marked loaded later with path in them. */
static void count_objects(const char *path, const char *later_path, size_t *all, size_t *later)
{
	char err[1024], strs[8192];
	struct rasp_nt_reader *r = rasp_nt_open(path, err, sizeof(err));
	struct rasp_nt_item it;
	int rc;

	if (!r)
		fail_msg("%s", err);
	*all = *later = 0;
	while ((rc = rasp_nt_next(r, &it)) == 1) {
		union rasp_nt_value v[8];

		if (it.kind != RASP_NT_ITEM_EVENT ||
		    it.event.meta->desc != &rasp_event_descs[RASP_DESC_RASP_RUNTIME_OBJECTLOADED])
			continue;
		assert_int_equal(rasp_nt_decode(it.event.meta->desc, it.event.payload,
						it.event.payload_len, 8, v, strs, sizeof(strs)),
				 0);
		(*all)++;
		assert_true(v[1].u > 0);	  /* Size */
		assert_true(v[3].u <= 64);	  /* BuildIdSize */
		assert_int_equal(v[5].s[0], '/'); /* Path */
		if ((v[2].u & RASP__EP_OBJECT_LATER) && strstr(v[5].s, later_path))
			(*later)++;
	}
	assert_int_equal(rc, 0);
	rasp_nt_close(r);
}

/* The ObjectLoaded payloads of a file, one after the other, in out; their total size. */
static size_t object_payloads(const char *path, uint8_t *out, size_t cap)
{
	char err[1024];
	struct rasp_nt_reader *r = rasp_nt_open(path, err, sizeof(err));
	struct rasp_nt_item it;
	size_t n = 0;

	if (!r)
		fail_msg("%s", err);
	while (rasp_nt_next(r, &it) == 1)
		if (it.kind == RASP_NT_ITEM_EVENT &&
		    it.event.meta->desc == &rasp_event_descs[RASP_DESC_RASP_RUNTIME_OBJECTLOADED]) {
			assert_true(it.event.payload_len <= cap - n);
			memcpy(out + n, it.event.payload, it.event.payload_len);
			n += it.event.payload_len;
		}
	rasp_nt_close(r);
	return n;
}

/* rasp convert of a .nettrace keeps its ObjectLoaded events byte for byte (the build id an
 * array: each element, not the array's address). */
static void test_convert_keeps_objects(void **state)
{
	static uint8_t a[1 << 16], b[1 << 16];
	char cmd[3 * PATH_MAX], in[PATH_MAX], out[PATH_MAX];
	size_t na, nb;

	(void)state;
	assert_int_equal(record("keep.nettrace", true), 0);
	snprintf(in, sizeof(in), "%s/keep.nettrace", dir);
	snprintf(out, sizeof(out), "%s/keep-again.nettrace", dir);
	snprintf(cmd, sizeof(cmd), "'%s' convert -o '%s' '%s' 2>/dev/null", rasp, out, in);
	assert_int_equal(system(cmd), 0);
	na = object_payloads(in, a, sizeof(a));
	nb = object_payloads(out, b, sizeof(b));
	assert_true(na > 0);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na);
}

static void test_sites_named(void **state)
{
	static char out[4 << 20];
	char cmd[8192], file[PATH_MAX];
	static const char *const sites[] = {"\"site\": \"descend (", "\"site\": \"site_a (",
					    "\"site\": \"site_b (", "\"site\": \"plugin_alloc ("};
	size_t all, later, n;
	FILE *p;

	(void)state;
	assert_int_equal(record("objects.nettrace", true), 0);
	snprintf(file, sizeof(file), "%s/objects.nettrace", dir);
	count_objects(file, "librasp-stack-plugin", &all, &later);
	assert_true(all >= 3); /* the program, librasp, libc at least */
	assert_int_equal(later, 1);
	snprintf(cmd, sizeof(cmd), "'%s' report --by site --format json '%s' 2>&1", rasp, file);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p); /* to its end: a report is well below 4 MiB */
	out[n] = '\0';
	assert_int_equal(pclose(p), 0);
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (!strstr(out, sites[i]))
			fail_msg("no site %s in the report: %s", sites[i], out);
	if (strstr(out, "[no object]") || strstr(out, "unplaced-frames"))
		fail_msg("a frame in no recorded object: %s", out);
	/* file:line from DWARF, as on an LTTng trace */
	assert_non_null(strstr(out, "plugin_alloc (stack-plugin.c:"));
	assert_non_null(strstr(out, "descend (stack-prog.c:"));
}

static void test_no_stacks_no_objects(void **state)
{
	char file[PATH_MAX];
	size_t all, later;

	(void)state;
	assert_int_equal(record("nostacks.nettrace", false), 0);
	snprintf(file, sizeof(file), "%s/nostacks.nettrace", dir);
	count_objects(file, "librasp-stack-plugin", &all, &later);
	assert_int_equal(all, 0);
}

static int file_write(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -EIO;
}

/* A .nettrace of one sample whose frame lies in an object whose ObjectLoaded event is
 * malformed as `bad` says: 0 empty path, 1 size 0, 2 a 65-byte build id. */
static void write_bad(const char *path, int bad)
{
	FILE *f = fopen(path, "wb");
	struct rasp_nt_out out = {.write = file_write, .ctx = f};
	struct rasp_nt_stream st;
	struct rasp_nt_trace_header h = {.sync_ticks = 1000,
					 .frequency = 1000000000,
					 .pointer_size = 8,
					 .pid = 4242,
					 .processors = 1};
	uint8_t id[65] = {1}, payload[512];
	uint64_t frame = 0x7000100;
	union rasp_nt_value o[6] = {{.u = 0x7000000}, {.u = bad == 1 ? 0 : 0x1000},
				    {.u = 2},	      {.u = bad == 2 ? 65 : 20},
				    {.p = id},	      {.s = bad == 0 ? "" : "/usr/lib/libbad.so"}};
	union rasp_nt_value a[7] = {{.u = 0},	   {.u = 0},  {.u = 0x1234}, {.s = "T"},
				    {.u = 0x9000}, {.u = 64}, {.u = 3}};
	size_t n;

	assert_non_null(f);
	assert_int_equal(rasp_nt_stream_init(&st, &out, 64 << 10), 0);
	assert_int_equal(rasp_nt_write_header(&out, &h), 0);
	n = rasp_nt_encode_payload(&rasp_event_descs[RASP_DESC_RASP_RUNTIME_OBJECTLOADED], o, 8,
				   payload, sizeof(payload));
	assert_true(n > 0);
	assert_int_equal(rasp_nt_stream_event(&st, RASP_DESC_RASP_RUNTIME_OBJECTLOADED, 7, 1, 2000,
					      payload, n, NULL, 0),
			 0);
	n = rasp_nt_encode_payload(&rasp_event_descs[RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED], a,
				   8, payload, sizeof(payload));
	assert_true(n > 0);
	assert_int_equal(rasp_nt_stream_event(&st, RASP_DESC_DOTNETRUNTIME_ALLOCATIONSAMPLED, 8, 1,
					      3000, payload, n, &frame, 1),
			 0);
	assert_int_equal(rasp_nt_stream_sequence_point(&st, 3000), 0);
	assert_int_equal(rasp_nt_write_end(&out), 0);
	rasp_nt_stream_fini(&st);
	assert_int_equal(fclose(f), 0);
}

/* Runs rasp report on path with extra flags: its exit status, its output in out. */
static int report(const char *path, const char *flags, char *out, size_t cap)
{
	char cmd[8192];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' report --by site %s '%s' 2>&1", rasp, flags, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	return pclose(p);
}

/* Malformed ObjectLoaded events: refused with the field named (by default), or skipped with a
 * note (--no-strict); never a crash, never an object that names frames. */
static void test_malformed_refused(void **state)
{
	static const char *const field[] = {"Path", "Size", "BuildId"};
	static char out[1 << 16];
	char file[PATH_MAX];

	(void)state;
	for (int bad = 0; bad < 3; bad++) {
		int rc;

		snprintf(file, sizeof(file), "%s/bad-%d.nettrace", dir, bad);
		write_bad(file, bad);
		rc = report(file, "", out, sizeof(out));
		print_message("bad %d: %s", bad, out);
		assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
		assert_non_null(strstr(out, "ObjectLoaded"));
		assert_non_null(strstr(out, field[bad]));
		rc = report(file, "--no-strict", out, sizeof(out));
		assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
		assert_non_null(strstr(out, "[no object] 0x7000100"));
		assert_non_null(strstr(out, "malformed"));
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_objects_read),	  cmocka_unit_test(test_sites_named),
	    cmocka_unit_test(test_no_stacks_no_objects),  cmocka_unit_test(test_malformed_refused),
	    cmocka_unit_test(test_convert_keeps_objects),
	};

	if (argc != 5) {
		fprintf(stderr, "usage: %s RASP STACK-PROG PLUGIN WORKDIR\n", argv[0]);
		return 2;
	}
	rasp = argv[1];
	prog = argv[2];
	plugin = argv[3];
	dir = argv[4];
	mkdir(dir, 0755);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
