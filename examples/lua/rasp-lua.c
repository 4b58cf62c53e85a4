/* rasp-lua: the stock Lua 5.4 library (Debian's liblua5.4) running a script with rasp as its
 * allocator, the walk-through of docs/embedding.md. One rasp type per Lua object kind, the
 * running Lua function's frames on each sample (rasp_heap_set_frames, lua_getstack and
 * lua_getinfo), frees from Lua's collector; with --truth FILE, the exact bytes and objects
 * of rasp's blocks per (type, innermost Lua frame), to check what a report estimates, and the
 * bytes Lua asked for.
 * Usage: rasp-lua [--truth FILE] [--no-frames] SCRIPT.lua [ARGS...] (--no-frames: samples
 * carry native stacks, the interpreter's, instead of Lua's: for comparisons). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "rasp/rasp.h"

/* Lua's tags for its internal objects (lobject.h), which lua_Alloc receives in osize as it
 * does the public ones when it creates an object of the kind. */
#define TAG_UPVAL (LUA_NUMTYPES)
#define TAG_PROTO (LUA_NUMTYPES + 1)

enum kind { K_STRING, K_TABLE, K_CLOSURE, K_USERDATA, K_THREAD, K_UPVALUE, K_PROTO, K_OTHER, NK };
static const char *const kind_names[NK] = {"lua.string",   "lua.table",	 "lua.closure",
					   "lua.userdata", "lua.thread", "lua.upvalue",
					   "lua.proto",	   "lua.other"};

/* From Lua 5.4.6 on, a thread's stack grows in place: while that realloc runs, its call
 * chain holds offsets, not pointers, and walking it would read garbage. Lua 5.4.0 to 5.4.5
 * (Debian 12 has 5.4.4) allocate the new stack first, the chain whole. On the later ones, a
 * resize (ptr not NULL) is sampled without frames, and counted so by --truth. */
#if LUA_VERSION_RELEASE_NUM >= 50406
#define RESIZE_MOVES_STACK 1
#else
#define RESIZE_MOVES_STACK 0
#endif

/* Nested coroutine resumes tracked at most (Lua's C stack limit, LUAI_MAXCCALLS, is 200). */
#define MAX_RUNNING 256
/* Stack levels looked at per sample: the Lua frames among the C ones, bounded. */
#define MAX_LEVELS 256

struct truth_cell {
	char *site;
	int type;
	uint64_t bytes, objects;
	uint64_t requested; /* what Lua asked for: the blocks' bytes less rasp's rounding */
};

struct host {
	rasp_heap_t *heap;
	const rasp_type_t *types[NK];
	lua_State *main;
	/* The thread running Lua code: main, or the coroutine resumed last and not yet back
	 * (lua_Alloc is not told which thread allocates). */
	lua_State *running[MAX_RUNNING];
	unsigned nrunning;
	int resizing; /* inside a resize whose call chain may be moving (RESIZE_MOVES_STACK) */
	lua_Debug ar[RASP_MAX_STACK_DEPTH];
	char anon[RASP_MAX_STACK_DEPTH][128]; /* names of anonymous functions, as Lua's traceback */
	/* --truth: cells by (type, site), open addressing. */
	FILE *truth;
	struct truth_cell *cells;
	size_t ncells, cap;
	uint64_t total_bytes, total_objects, total_requested;
	int failed;
};

static struct host host;

/* The threads whose frames a sample shows, innermost first: the running coroutine, the one
 * that resumed it, and so on to the main thread. */
static lua_State *thread_at(struct host *h, unsigned i)
{
	unsigned known = h->nrunning < MAX_RUNNING ? h->nrunning : MAX_RUNNING;

	if (i < known)
		return h->running[known - 1 - i];
	return i == known ? h->main : NULL;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The running Lua functions, innermost first (C functions left out: a report names the Lua
 * code that called them). The strings live in host.ar until the next call. */
static unsigned lua_frames(void *arg, rasp_frame_t *out, unsigned max)
{
	struct host *h = arg;
	unsigned n = 0, levels = 0;
	lua_State *L;

	if (max > RASP_MAX_STACK_DEPTH)
		max = RASP_MAX_STACK_DEPTH;
	if (h->resizing)
		return 0;
	for (unsigned t = 0; (L = thread_at(h, t)) && n < max; t++) {
		for (int level = 0; n < max && levels < MAX_LEVELS; level++, levels++) {
			lua_Debug *ar = &h->ar[n];

			if (!lua_getstack(L, level, ar))
				break;
			/* "Sln" reads the function's prototype and the calling instruction:
			 * no allocation, so it is safe inside lua_Alloc. */
			if (!lua_getinfo(L, "Sln", ar) || ar->what[0] == 'C')
				continue;
			out[n].file = base_name(ar->short_src);
			if (ar->what[0] == 'm') {
				out[n].function = "main chunk";
			} else if (ar->name) {
				out[n].function = ar->name;
			} else {
				/* As Lua's traceback names it: where it is defined. */
				snprintf(h->anon[n], sizeof(h->anon[n]), "function <%s:%d>",
					 out[n].file, ar->linedefined);
				out[n].function = h->anon[n];
			}
			out[n].line = ar->currentline > 0 ? (uint32_t)ar->currentline : 0;
			n++;
		}
	}
	return n;
}

/* The innermost frame as a report names it (runtime/frames.c): "function (file:line)". */
static void site_of(struct host *h, char *buf, size_t cap)
{
	rasp_frame_t f[1];

	if (!lua_frames(h, f, 1)) {
		buf[0] = 0;
		return;
	}
	if (f[0].line)
		snprintf(buf, cap, "%.240s (%.240s:%u)", f[0].function, f[0].file, f[0].line);
	else
		snprintf(buf, cap, "%.240s (%.240s)", f[0].function, f[0].file);
}

static uint64_t hash_str(const char *s, int type)
{
	uint64_t x = UINT64_C(0xcbf29ce484222325) ^ (uint64_t)type;

	while (*s)
		x = (x ^ (unsigned char)*s++) * UINT64_C(0x100000001b3);
	return x;
}

/* Counts a block rasp handed out (a new object or a move) under its site. malloc's memory,
 * never the heap's. */
static void count(struct host *h, int type, void *block, size_t requested)
{
	char site[512];
	size_t i;

	if (!h->truth || h->failed)
		return;
	site_of(h, site, sizeof(site));
	if ((h->ncells + 1) * 2 > h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct truth_cell *c = calloc(cap, sizeof(*c));

		if (!c) {
			h->failed = ENOMEM;
			return;
		}
		for (size_t k = 0; k < h->cap; k++) {
			if (!h->cells[k].site)
				continue;
			for (i = hash_str(h->cells[k].site, h->cells[k].type) & (cap - 1);
			     c[i].site; i = (i + 1) & (cap - 1))
				;
			c[i] = h->cells[k];
		}
		free(h->cells);
		h->cells = c;
		h->cap = cap;
	}
	for (i = hash_str(site, type) & (h->cap - 1); h->cells[i].site; i = (i + 1) & (h->cap - 1))
		if (h->cells[i].type == type && strcmp(h->cells[i].site, site) == 0)
			break;
	if (!h->cells[i].site) {
		h->cells[i].site = strdup(site);
		if (!h->cells[i].site) {
			h->failed = ENOMEM;
			return;
		}
		h->cells[i].type = type;
		h->ncells++;
	}
	h->cells[i].bytes += rasp_object_size(block);
	h->cells[i].objects++;
	h->cells[i].requested += requested;
	h->total_bytes += rasp_object_size(block);
	h->total_objects++;
	h->total_requested += requested;
}

static int kind_of(size_t tag)
{
	switch (tag) {
	case LUA_TSTRING:
		return K_STRING;
	case LUA_TTABLE:
		return K_TABLE;
	case LUA_TFUNCTION:
		return K_CLOSURE;
	case LUA_TUSERDATA:
		return K_USERDATA;
	case LUA_TTHREAD:
		return K_THREAD;
	case TAG_UPVAL:
		return K_UPVALUE;
	case TAG_PROTO:
		return K_PROTO;
	default:
		return K_OTHER;
	}
}

static int type_index(const struct host *h, const rasp_type_t *t)
{
	for (int k = 0; k < NK; k++)
		if (h->types[k] == t)
			return k;
	return K_OTHER;
}

/* lua_Alloc on rasp: a new object (ptr NULL) of the kind Lua says in osize; a resize keeps
 * the block's type (rasp_realloc); size 0 frees. A pointer rasp refuses is Lua's bug, not
 * out of memory: it is reported and the program stops. */
static void *rasp_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct host *h = ud;
	void *p;
	int k;

	if (nsize == 0) {
		rasp_free(h->heap, ptr);
		return NULL;
	}
	if (!ptr) {
		k = kind_of(osize);
		p = rasp_alloc(h->heap, h->types[k], nsize, 0);
		if (p)
			count(h, k, p, nsize);
		return p;
	}
	h->resizing = RESIZE_MOVES_STACK;
	p = rasp_realloc(h->heap, ptr, nsize);
	if (!p && errno == EINVAL) {
		fprintf(stderr,
			"rasp-lua: rasp refused the block %p Lua resized (above); stopping\n", ptr);
		abort();
	}
	if (p && p != ptr) /* a move: a new block (a resize in place hands out nothing) */
		count(h, type_index(h, rasp_object_type(p)), p, nsize);
	h->resizing = 0;
	return p;
}

/* coroutine.resume and coroutine.wrap, as the stock library's, with the running coroutine
 * tracked for lua_frames. Returns the results' count on L, or -1 with the error on L. */
static int resume(lua_State *L, lua_State *co, int narg)
{
	int status, nres;

	if (!lua_checkstack(co, narg)) {
		lua_pushliteral(L, "too many arguments to resume");
		return -1;
	}
	lua_xmove(L, co, narg);
	if (host.nrunning < MAX_RUNNING)
		host.running[host.nrunning] = co;
	host.nrunning++;
	status = lua_resume(co, L, narg, &nres);
	host.nrunning--;
	if (status == LUA_OK || status == LUA_YIELD) {
		if (!lua_checkstack(L, nres + 1)) {
			lua_pop(co, nres);
			lua_pushliteral(L, "too many results to resume");
			return -1;
		}
		lua_xmove(co, L, nres);
		return nres;
	}
	lua_xmove(co, L, 1);
	return -1;
}

static int co_resume(lua_State *L)
{
	lua_State *co = lua_tothread(L, 1);
	int r;

	luaL_argexpected(L, co, 1, "coroutine");
	r = resume(L, co, lua_gettop(L) - 1);
	if (r < 0) {
		lua_pushboolean(L, 0);
		lua_insert(L, -2);
		return 2;
	}
	lua_pushboolean(L, 1);
	lua_insert(L, -(r + 1));
	return r + 1;
}

static int co_wrapped(lua_State *L)
{
	lua_State *co = lua_tothread(L, lua_upvalueindex(1));
	int r = resume(L, co, lua_gettop(L));

	if (r < 0) {
		if (lua_type(L, -1) == LUA_TSTRING) {
			luaL_where(L, 1);
			lua_insert(L, -2);
			lua_concat(L, 2);
		}
		return lua_error(L);
	}
	return r;
}

static int co_wrap(lua_State *L)
{
	lua_State *co;

	luaL_checktype(L, 1, LUA_TFUNCTION);
	co = lua_newthread(L);
	lua_pushvalue(L, 1);
	lua_xmove(L, co, 1);
	lua_pushcclosure(L, co_wrapped, 1);
	return 1;
}

static int traceback(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);

	luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
	return 1;
}

static int write_truth(struct host *h, const char *path)
{
	FILE *f = h->truth;
	int first = 1;

	fprintf(f, "{\"rows\": [");
	for (size_t i = 0; i < h->cap; i++) {
		const struct truth_cell *c = &h->cells[i];

		if (!c->site)
			continue;
		fprintf(f, "%s\n  {\"type\": \"%s\", \"site\": \"", first ? "" : ",",
			kind_names[c->type]);
		for (const char *s = c->site; *s; s++) {
			if (*s == '"' || *s == '\\')
				fputc('\\', f);
			if ((unsigned char)*s < 0x20)
				fprintf(f, "\\u%04x", *s);
			else
				fputc(*s, f);
		}
		fprintf(f, "\", \"bytes\": %llu, \"objects\": %llu, \"requested\": %llu}",
			(unsigned long long)c->bytes, (unsigned long long)c->objects,
			(unsigned long long)c->requested);
		first = 0;
	}
	fprintf(f, "\n], \"total\": {\"bytes\": %llu, \"objects\": %llu, \"requested\": %llu}}\n",
		(unsigned long long)h->total_bytes, (unsigned long long)h->total_objects,
		(unsigned long long)h->total_requested);
	if (fclose(f) != 0 || h->failed) {
		fprintf(stderr, "rasp-lua: %s: %s\n", path,
			strerror(h->failed ? h->failed : errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *truth_path = NULL;
	lua_State *L;
	int a = 1, err, status = 0, frames = 1;

	for (;;) {
		if (a + 1 < argc && strcmp(argv[a], "--truth") == 0) {
			truth_path = argv[a + 1];
			a += 2;
		} else if (a < argc && strcmp(argv[a], "--no-frames") == 0) {
			frames = 0;
			a++;
		} else {
			break;
		}
	}
	if (a >= argc || argv[a][0] == '-') {
		fprintf(stderr,
			"usage: rasp-lua [--truth FILE] [--no-frames] SCRIPT.lua [ARGS...]\n");
		return 2;
	}
	if (truth_path && !(host.truth = fopen(truth_path, "w"))) {
		fprintf(stderr, "rasp-lua: %s: %s\n", truth_path, strerror(errno));
		return 1;
	}
	err = rasp_heap_create(&host.heap, NULL); /* the RASP_* environment, as rasp record sets */
	if (err) {
		fprintf(stderr, "rasp-lua: rasp_heap_create: %s\n", rasp_strerror(err));
		return 1;
	}
	for (int k = 0; k < NK; k++)
		if (!(host.types[k] = rasp_type_register(host.heap, kind_names[k]))) {
			fprintf(stderr, "rasp-lua: rasp_type_register: %s\n", strerror(errno));
			return 1;
		}
	/* Lua's vectors that grow from nothing (a table's parts, a stack) come as
	 * rasp_realloc(NULL, n): the heap's default type, here lua.other. */
	rasp_heap_set_default_type(host.heap, host.types[K_OTHER]);
	if (frames && (err = rasp_heap_set_frames(host.heap, lua_frames, &host))) {
		fprintf(stderr, "rasp-lua: rasp_heap_set_frames: %s\n", rasp_strerror(err));
		return 1;
	}
	L = lua_newstate(rasp_lua_alloc, &host);
	if (!L) {
		fprintf(stderr, "rasp-lua: cannot create a Lua state\n");
		return 1;
	}
	host.main = L;
	luaL_openlibs(L);
	lua_getglobal(L, "coroutine");
	lua_pushcfunction(L, co_resume);
	lua_setfield(L, -2, "resume");
	lua_pushcfunction(L, co_wrap);
	lua_setfield(L, -2, "wrap");
	lua_pop(L, 1);
	/* arg, as the lua interpreter sets it: the script at 0, its arguments from 1. */
	lua_createtable(L, argc - a, 1);
	for (int i = a; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_rawseti(L, -2, i - a);
	}
	lua_setglobal(L, "arg");
	lua_pushcfunction(L, traceback);
	if (luaL_loadfile(L, argv[a]) != LUA_OK) {
		fprintf(stderr, "rasp-lua: %s\n", lua_tostring(L, -1));
		status = 1;
	} else {
		for (int i = a + 1; i < argc; i++)
			lua_pushstring(L, argv[i]);
		if (lua_pcall(L, argc - a - 1, 0, 1) != LUA_OK) {
			fprintf(stderr, "rasp-lua: %s\n", lua_tostring(L, -1));
			status = 1;
		}
	}
	host.main = NULL; /* lua_close frees: no Lua frame to name */
	lua_close(L);
	if (host.truth && write_truth(&host, truth_path))
		status = 1;
	rasp_heap_destroy(host.heap);
	return status;
}
