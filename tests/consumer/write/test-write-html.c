/* Tests of consumer/write/write-html.c on real stacks: the frames are return addresses of this
 * program's own functions (glibc's backtrace from html_alloc), this executable is the
 * process's module (dl_iterate_phdr) and the report names them from its DWARF (html.cmake
 * builds it with -g). The page is rendered to a file and checked twice: in C and Python (one
 * self-contained file, the embedded JSON's nodes and their estimates equal to rasp_rows_sum
 * of the rows under them), then loaded in headless Chromium, whose dumped DOM must say
 * "ok: N nodes" in #rasp-status, nothing in #rasp-errors, and show the functions, types,
 * figures and notes as text. Hostile names (markup, quotes, UTF-8) must stay text. Without
 * chromium on PATH the browser part says "skipped: chromium not found". */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden.h"
#include "write/writer.h"

extern char **environ;

#define PID  5151
#define MEAN 4096.0
/* Chromium's whole run, killed past it: a hang fails the test instead of blocking it. */
#define CHROMIUM_TIMEOUT "120"

/* A captured stack: return addresses, innermost first. */
struct stk {
	uint64_t pc[4];
	size_t n;
};

/* Extern, not inlined nor cloned, so the symbol table names each as written. */
#if defined(__clang__)
#define FIXTURE __attribute__((noinline))
#else
#define FIXTURE __attribute__((noinline, noclone))
#endif

void html_alloc(struct stk *s, size_t n);
void html_helper(struct stk *c);
void html_build(struct stk *a, struct stk *c);
void html_parse(struct stk *b);
void html_root(struct stk *a, struct stk *b, struct stk *c);

struct module {
	uint64_t base, size;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *data);

/* The empty asm after each call keeps it a call (a tail call leaves no frame). The frames
 * kept start at the first one in this executable: a sanitizer's backtrace interceptor adds
 * its own frame first. */
FIXTURE void html_alloc(struct stk *s, size_t n)
{
	static struct module self;
	void *pc[16];
	int got = backtrace(pc, 16), skip = 0;

	if (!self.size)
		dl_iterate_phdr(find_self, &self);
	while (skip < got && (uint64_t)(uintptr_t)pc[skip] - self.base >= self.size)
		skip++;
	assert_true(got - skip >= (int)n);
	for (size_t i = 0; i < n; i++)
		s->pc[i] = (uint64_t)(uintptr_t)pc[skip + (int)i];
	s->n = n;
	__asm__ volatile("" ::: "memory");
}

FIXTURE void html_helper(struct stk *c)
{
	html_alloc(c, 4);
	__asm__ volatile("" ::: "memory");
}

FIXTURE void html_build(struct stk *a, struct stk *c)
{
	html_alloc(a, 3);
	__asm__ volatile("" ::: "memory");
	html_helper(c);
	__asm__ volatile("" ::: "memory");
}

FIXTURE void html_parse(struct stk *b)
{
	html_alloc(b, 3);
	__asm__ volatile("" ::: "memory");
}

FIXTURE void html_root(struct stk *a, struct stk *b, struct stk *c)
{
	html_build(a, c);
	html_parse(b);
	__asm__ volatile("" ::: "memory");
}

/* The object holding html_root (this executable): its address range. */
static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	struct module *m = data;
	uint64_t want = (uint64_t)(uintptr_t)html_root, lo = UINT64_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_vaddr < lo)
			lo = ph->p_vaddr;
		if (ph->p_vaddr + ph->p_memsz > hi)
			hi = ph->p_vaddr + ph->p_memsz;
	}
	if (lo >= hi || want < info->dlpi_addr + lo || want >= info->dlpi_addr + hi)
		return 0;
	m->base = info->dlpi_addr + lo;
	m->size = hi - lo;
	return 1;
}

static void add_self(struct rasp_tally *t, int64_t pid)
{
	struct module m = {0};
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	assert_true(n > 0);
	path[n] = '\0';
	assert_int_equal(dl_iterate_phdr(find_self, &m), 1);
	assert_int_equal(rasp_modules_add(&t->modules, pid, m.base, m.size, path, true), 0);
}

static struct rasp_tally *create(struct rasp_report_options *opt)
{
	struct rasp_tally *t;

	rasp_report_options_init(opt);
	snprintf(opt->format, sizeof(opt->format), "html");
	t = rasp_tally_create(rasp_report_keys(opt), RASP_DEFAULT_SAMPLING_MEAN);
	assert_non_null(t);
	assert_int_equal(t->group_by, RASP_GROUP_TYPE | RASP_GROUP_STACK);
	return t;
}

static void add(struct rasp_tally *t, const char *type, uint64_t size, int n, const struct stk *s)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(rasp_tally_add_sample_stack(t, type, 0, PID, PID + 1, size,
							     (uint64_t)i * 7919 % size,
							     s ? s->pc : NULL, s ? s->n : 0),
				 0);
}

/* The fixture: three stacks of html_alloc under html_root (A: through html_build, B: through
 * html_parse, C: through html_helper under html_build) and samples without a stack. Its
 * tree has 14 nodes: all; html_root and (no stack); html_build, html_parse; html_alloc and
 * html_helper under html_build, html_alloc under each of html_helper and html_parse; and the
 * types under them: Demo.Node and Demo.Leaf (A), System.Byte[] (C), System.String (B),
 * Demo.Node (no stack). Demo.Leaf and the stackless samples have fewer than 10 samples. */
struct fixture {
	struct rasp_tally *t;
	struct rasp_report_options opt;
	struct stk a, b, c;
};
#define FIXTURE_NODES 14

static void fixture_init(struct fixture *f)
{
	html_root(&f->a, &f->b, &f->c);
	f->t = create(&f->opt);
	add_self(f->t, PID);
	assert_int_equal(rasp_tally_set_mean(f->t, PID, RASP_ID_UNKNOWN, MEAN), 0);
	assert_int_equal(rasp_tally_add_input(f->t, "/traces/html-fixture"), 0);
	add(f->t, "Demo.Node", 72, 30, &f->a);
	add(f->t, "Demo.Leaf", 24, 5, &f->a);
	add(f->t, "System.String", 64, 20, &f->b);
	add(f->t, "System.Byte[]", 9000, 12, &f->c);
	add(f->t, "Demo.Node", 72, 3, NULL);
}

static void fixture_fini(struct fixture *f)
{
	rasp_tally_destroy(f->t);
	rasp_report_options_fini(&f->opt);
}

/* ---- files ---- */

struct page {
	char dir[PATH_MAX - 64]; /* a temporary directory, removed at the end */
	char path[PATH_MAX];	 /* dir/report.html */
	char *text;		 /* the page, NUL-terminated */
	size_t len;
};

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The report of t rendered by rasp_report_render into dir/report.html. */
static void render(struct rasp_tally *t, const struct rasp_report_options *opt, struct page *p)
{
	const char *tmp = getenv("TMPDIR");
	FILE *f;

	snprintf(p->dir, sizeof(p->dir), "%s/rasp-html-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->path, sizeof(p->path), "%s/report.html", p->dir);
	f = fopen(p->path, "w");
	assert_non_null(f);
	assert_int_equal(rasp_report_render(t, opt, "--sampling-mean", f), 0);
	assert_int_equal(fclose(f), 0);
	p->text = slurp(p->path, &p->len);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* RASP_TEST_KEEP=1 keeps the page and what Chromium made of it, to look at. */
static void page_free(struct page *p)
{
	free(p->text);
	if (getenv("RASP_TEST_KEEP"))
		printf("kept: %s\n", p->path);
	else
		nftw(p->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *s = text; (s = strstr(s, what)) != NULL; s += strlen(what))
		n++;
	return n;
}

/* One file: its own three scripts (the guard, the data, the main one) and style, nothing
 * that would load anything, and a policy that forbids loading anything. */
static void check_self_contained(const struct page *p)
{
	static const char *const never[] = {"http://", "https://", "<link", "<img",    "<iframe",
					    "<object", "<embed",   "url(",  "@import", "<base"};

	assert_int_equal(strlen(p->text), p->len); /* no NUL inside */
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (strstr(p->text, never[i])) {
			printf("the page holds \"%s\"\n", never[i]);
			fail();
		}
	assert_int_equal(count(p->text, "<script"), 3);
	assert_int_equal(count(p->text, "</script>"), 3);
	assert_int_equal(count(p->text, "<style>"), 1);
	assert_non_null(strstr(p->text, "content=\"default-src 'none'; script-src 'sha256-"));
	assert_non_null(strstr(p->text, "<script type=\"application/json\" id=\"rasp-data\">"));
}

/* ---- Python: the embedded JSON, and the dumped DOM ---- */

/* Runs a Python script (after `prefix`) on text; the printed lines in out. */
static void python(const char *text, size_t len, const char *prefix, const char *script, char *out,
		   size_t outlen)
{
	size_t n = strlen(prefix) + strlen(script) + 1;
	char *prog = malloc(n);

	assert_non_null(prog);
	snprintf(prog, n, "%s%s", prefix, script);
	if (golden_python(text, len, prog, out, outlen) != 0) {
		printf("python failed; it printed:\n%s\n", out);
		fail();
	}
	free(prog);
}

/* Every node of the embedded JSON: "node ID PATH | samples bytes low high objects low high
 * contradicts", PATH the names from the root joined by " > ". The JSON must parse strictly
 * and its strings must not hold a raw '<'. */
static const char json_nodes[] =
    "import json, sys\n"
    "html = open(sys.argv[1], encoding='utf-8').read()\n"
    "head = '<script type=\"application/json\" id=\"rasp-data\">'\n"
    "raw = html[html.index(head) + len(head):]\n"
    "raw = raw[:raw.index('</script>')]\n"
    "assert '<' not in raw and '>' not in raw and '&' not in raw\n"
    "def bad(c):\n"
    "    sys.exit('not JSON: ' + c)\n"
    "d = json.loads(raw, parse_constant=bad)\n"
    "s, nodes = d['strings'], d['nodes']\n"
    "def path(i):\n"
    "    p = []\n"
    "    while i >= 0:\n"
    "        p.append(s[nodes[i][2]])\n"
    "        i = nodes[i][0]\n"
    "    return ' > '.join(reversed(p))\n"
    "def est(v):\n"
    "    return ' '.join([str(v[0])] + ['%.17g' % x for x in v[1:7]] + [str(v[7]), str(v[8])])\n"
    "for i, v in enumerate(nodes):\n"
    "    assert v[0] < i\n"
    "    print('node', i, path(i), '|', est(v[4:]))\n"
    "for t in d['types']:\n"
    "    print('type', t[0], '|', est(t[1:10]))\n"
    "print('notes', json.dumps([n['text'] for n in d['notes']], ensure_ascii=False))\n";

/* The DOM Chromium dumped, read back with html.parser: status, errors, the flame graph's
 * boxes (class | text), the table, the notes, the header and what would have run or loaded
 * (elements and on* attributes that should never be there). MODE = 'short' prints counts of
 * boxes only. */
static const char dom_summary[] =
    "import sys\n"
    "from html.parser import HTMLParser\n"
    "VOID = {'meta', 'br', 'input', 'img', 'link', 'hr', 'wbr', 'area', 'base', 'col',\n"
    "        'embed', 'source', 'track', 'param'}\n"
    "class P(HTMLParser):\n"
    "    def __init__(self):\n"
    "        super().__init__(convert_charrefs=True)\n"
    "        self.root = {'tag': '', 'attrs': {}, 'kids': []}\n"
    "        self.stack, self.all = [self.root], []\n"
    "    def handle_starttag(self, tag, attrs):\n"
    "        e = {'tag': tag, 'attrs': dict(attrs), 'names': [a for a, _ in attrs], 'kids': []}\n"
    "        self.stack[-1]['kids'].append(e)\n"
    "        self.all.append(e)\n"
    "        if tag not in VOID:\n"
    "            self.stack.append(e)\n"
    "    def handle_endtag(self, tag):\n"
    "        for i in range(len(self.stack) - 1, 0, -1):\n"
    "            if self.stack[i]['tag'] == tag:\n"
    "                del self.stack[i:]\n"
    "                break\n"
    "    def handle_data(self, data):\n"
    "        self.stack[-1]['kids'].append(data)\n"
    "def text(e):\n"
    "    return ''.join(k if isinstance(k, str) else text(k) for k in e['kids'])\n"
    "def one(e):\n"
    "    return text(e).replace('\\n', ' / ')\n"
    "def find(e, pred):\n"
    "    out = []\n"
    "    for k in e['kids']:\n"
    "        if not isinstance(k, str):\n"
    "            if pred(k):\n"
    "                out.append(k)\n"
    "            out += find(k, pred)\n"
    "    return out\n"
    "def by_id(i):\n"
    "    r = [e for e in p.all if e['attrs'].get('id') == i]\n"
    "    return r[0] if r else {'kids': [], 'attrs': {}}\n"
    "p = P()\n"
    "p.feed(open(sys.argv[1], encoding='utf-8').read())\n"
    "print('status:', one(by_id('rasp-status')))\n"
    "print('errors:', one(by_id('rasp-errors')))\n"
    "print('scripts:', sum(e['tag'] == 'script' for e in p.all))\n"
    "print('loads:', sorted({e['tag'] for e in p.all if e['tag'] in\n"
    "      ('img', 'iframe', 'object', 'embed', 'link', 'base', 'svg', 'math')}),\n"
    "      sorted({a for e in p.all for a in e['names'] if a.startswith('on')}))\n"
    "print('title:', one([e for e in p.all if e['tag'] == 'title'][0]))\n"
    "boxes = find(by_id('rasp-flame'), lambda e: 'n' in e['attrs'].get('class', '').split())\n"
    "print('boxes:', len(boxes), 'matched:',\n"
    "      sum('m' in b['attrs']['class'].split() for b in boxes))\n"
    "if MODE == 'full':\n"
    "    for b in boxes:\n"
    "        print('box:', b['attrs']['class'], '|', one(b))\n"
    "    for tr in find(by_id('rasp-types'), lambda e: e['tag'] == 'tr'):\n"
    "        print('row:', ' | '.join(one(c) for c in tr['kids'] if not isinstance(c, str)))\n"
    "    for li in find(by_id('rasp-notes'), lambda e: e['tag'] == 'li'):\n"
    "        print('note:', one(li))\n"
    "    for dt in find(by_id('rasp-report'), lambda e: e['tag'] == 'dd'):\n"
    "        print('header:', one(dt))\n"
    "    for b in find(by_id('rasp-report'), lambda e: 'banner' in\n"
    "                  e['attrs'].get('class', '').split()):\n"
    "        print('banner:', one(b))\n"
    "    for l in find(by_id('rasp-report'), lambda e: 'legend' in\n"
    "                  e['attrs'].get('class', '').split()):\n"
    "        print('legend:', one(l))\n"
    "    for tr in find(by_id('rasp-ticks'), lambda e: e['tag'] == 'tr'):\n"
    "        print('tick:', ' | '.join(one(c) for c in tr['kids'] if not isinstance(c, str)))\n"
    "    print('selected:', one(by_id('rasp-selected')))\n"
    "    print('search:', one(by_id('rasp-search-result')))\n"
    "    for l in text(by_id('rasp-probe')).split('\\n'):\n"
    "        print('probe:', l)\n";

/* Fails unless `line` is one of the lines of out. */
static void has_line(const char *out, const char *line)
{
	size_t n = strlen(line);

	for (const char *s = out; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (strncmp(s, line, n) == 0 && (s[n] == '\n' || s[n] == '\0'))
			return;
	printf("no line \"%s\" in:\n%s\n", line, out);
	fail();
}

/* Fails unless some line of out starts with `start`. */
static void has_start(const char *out, const char *start)
{
	size_t n = strlen(start);

	for (const char *s = out; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (strncmp(s, start, n) == 0)
			return;
	printf("no line starting \"%s\" in:\n%s\n", start, out);
	fail();
}

/* ---- Chromium ---- */

/* chromium on PATH, or NULL. */
static const char *chromium(void)
{
	static char found[PATH_MAX];
	const char *path = getenv("PATH");

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(found, sizeof(found), "%.*s/chromium", (int)n, path);
		if (n && access(found, X_OK) == 0)
			return found;
		path += n + (path[n] == ':');
	}
	return NULL;
}

/* Loads the page (with a fragment: the view's state) in headless Chromium under timeout(1)
 * and returns the DOM it dumps once the page's scripts have run; NULL, having said so, when
 * there is no chromium. Fails the test when Chromium fails or times out. */
static char *browse(const struct page *p, const char *fragment, size_t *len)
{
	const char *exe = chromium();
	char url[PATH_MAX + 256], profile[PATH_MAX + 16], dom[PATH_MAX + 16], err[PATH_MAX + 16];
	char user_dir[PATH_MAX + 32];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;

	if (!exe) {
		printf("skipped: chromium not found\n");
		return NULL;
	}
	snprintf(url, sizeof(url), "file://%s%s", p->path, fragment ? fragment : "");
	snprintf(profile, sizeof(profile), "%s/profile", p->dir);
	snprintf(user_dir, sizeof(user_dir), "--user-data-dir=%s", profile);
	snprintf(dom, sizeof(dom), "%s/dom.html", p->dir);
	snprintf(err, sizeof(err), "%s/chromium.err", p->dir);
	char *const argv[] = {"timeout",
			      "-k",
			      "10",
			      CHROMIUM_TIMEOUT,
			      (char *)exe,
			      "--headless=new",
			      "--no-sandbox",
			      "--disable-gpu",
			      "--no-first-run",
			      "--no-default-browser-check",
			      "--disable-extensions",
			      "--window-size=1200,900",
			      user_dir,
			      "--virtual-time-budget=5000",
			      "--dump-dom",
			      url,
			      NULL};

	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(
	    posix_spawn_file_actions_addopen(&fa, 1, dom, O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
	assert_int_equal(
	    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
	assert_int_equal(posix_spawnp(&pid, "timeout", &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *e = slurp(err, NULL);

		printf("chromium %s: status %d (124: timed out); its stderr:\n%s\n", url,
		       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), e);
		free(e);
		fail();
	}
	return slurp(dom, len);
}

/* The summary of the DOM Chromium made of the page; NULL without chromium. */
static char *browse_summary(const struct page *p, const char *fragment, const char *mode)
{
	size_t len, cap = 1 << 20;
	char *dom = browse(p, fragment, &len), *out, prefix[32];

	if (!dom)
		return NULL;
	out = calloc(1, cap);
	assert_non_null(out);
	snprintf(prefix, sizeof(prefix), "MODE = '%s'\n", mode);
	python(dom, len, prefix, dom_summary, out, cap);
	free(dom);
	return out;
}

/* ---- expected figures, from the rows themselves ---- */

static bool stack_is(const struct rasp_tally *t, const struct rasp_row *row, const struct stk *s)
{
	const struct rasp_stack *st = rasp_stacks_get(&t->stacks, row->stack);

	if (!s)
		return !st;
	return st && st->n == s->n &&
	       memcmp(rasp_stacks_frames(&t->stacks, st), s->pc, s->n * sizeof(s->pc[0])) == 0;
}

/* The estimate of the rows on any of the stacks (NULL-terminated list; a NULL first entry
 * is no stack) and, when type is not NULL, of that type. */
static struct rasp_est_total sum_of(struct rasp_tally *t, const struct stk *const *stacks,
				    size_t nstacks, const char *type)
{
	struct rasp_rows rows;
	struct rasp_est_total e;
	size_t idx[64], n = 0;

	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	for (size_t i = 0; i < rows.n; i++) {
		bool on = false;

		for (size_t k = 0; k < nstacks; k++)
			on = on || stack_is(t, &rows.v[i], stacks[k]);
		if (on && (!type || strcmp(rasp_row_type(t, &rows.v[i]), type) == 0)) {
			assert_true(n < 64);
			idx[n++] = i;
		}
	}
	assert_true(n > 0);
	assert_int_equal(rasp_rows_sum(&rows, t, idx, n, &e), 0);
	rasp_rows_free(&rows);
	return e;
}

/* Whether the figures after '|' of a printed line are e's: samples and the flags exactly, the
 * doubles to 1e-12 (a sum's last bits depend on the order its rows were added in). */
static bool same_est(const char *figures, const struct rasp_est_total *e)
{
	const double want[] = {e->bytes,   e->bytes_low,   e->bytes_high,
			       e->objects, e->objects_low, e->objects_high};
	double got[6];
	uint64_t samples;
	int bad, low;

	if (sscanf(figures, "| %" SCNu64 " %lg %lg %lg %lg %lg %lg %d %d", &samples, &got[0],
		   &got[1], &got[2], &got[3], &got[4], &got[5], &bad, &low) != 9 ||
	    samples != e->samples || bad != (e->contradicts ? 1 : 0) ||
	    low != (e->low_confidence ? 1 : 0))
		return false;
	for (size_t i = 0; i < 6; i++)
		if (!(fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i])))
			return false;
	return true;
}

/* Fails unless a line "PREFIX | figures" holds e's figures. */
static void has_est(const char *out, const char *prefix, const struct rasp_est_total *e)
{
	char want[512];

	snprintf(want, sizeof(want), "%s |", prefix);
	for (const char *s = out; (s = strstr(s, want)) != NULL; s++)
		if ((s == out || s[-1] == '\n') && same_est(s + strlen(want) - 1, e))
			return;
	printf("no \"%s\" with %" PRIu64 " samples, %.17g bytes [%.17g, %.17g] in:\n%s\n", want,
	       e->samples, e->bytes, e->bytes_low, e->bytes_high, out);
	fail();
}

/* The line "node ID PATH | ..." for path with estimate e (any id). */
static void has_node(const char *out, const char *path, const struct rasp_est_total *e)
{
	char want[512];

	snprintf(want, sizeof(want), " %s |", path);
	for (const char *s = out; (s = strstr(s, want)) != NULL; s++) {
		const char *bol = s;

		while (bol > out && bol[-1] != '\n')
			bol--;
		if (strncmp(bol, "node ", 5) == 0 &&
		    strspn(bol + 5, "0123456789") == (size_t)(s - bol - 5) &&
		    same_est(s + strlen(want) - 1, e))
			return;
	}
	printf("no node \"%s\" with %" PRIu64 " samples, %.17g bytes [%.17g, %.17g] in:\n%s\n",
	       path, e->samples, e->bytes, e->bytes_low, e->bytes_high, out);
	fail();
}

/* The id of the node at path ("node ID PATH | ..."). */
static int node_id(const char *out, const char *path)
{
	char want[512];

	snprintf(want, sizeof(want), " %s |", path);
	for (const char *s = out; (s = strstr(s, "node ")) != NULL; s++) {
		char *end;
		long id = strtol(s + 5, &end, 10);

		if (strncmp(end, want, strlen(want)) == 0)
			return (int)id;
	}
	printf("no node %s in:\n%s\n", path, out);
	fail();
	return -1;
}

/* The page's interval text: "97.5 - 109.8 MiB" when both ends share a unit. */
static void interval_text(double lo, double hi, bool bytes, const char *mark, char *buf, size_t len)
{
	char a[48], b[48];
	const char *ua, *ub;

	if (bytes) {
		rasp_format_bytes(lo, a, sizeof(a));
		rasp_format_bytes(hi, b, sizeof(b));
	} else {
		rasp_format_count(lo, a, sizeof(a));
		rasp_format_count(hi, b, sizeof(b));
	}
	ua = strrchr(a, ' ');
	ub = strrchr(b, ' ');
	if (ua && ub && strcmp(ua, ub) == 0)
		snprintf(buf, len, "%s%.*s - %s", mark, (int)(ua - a), a, b);
	else
		snprintf(buf, len, "%s%s - %s", mark, a, b);
}

/* The table's row of a type as the page shows it, from the estimate of the type's rows. */
static void type_row(const char *name, const struct rasp_est_total *e, double total, char *buf,
		     size_t len)
{
	const char *mark = e->contradicts ? "!" : e->samples < 10 ? "~" : "";
	const char *omark = e->low_confidence && !e->contradicts ? "?" : mark;
	char bytes[48], bi[112], objects[48], oi[112];

	rasp_format_bytes(e->bytes, bytes, sizeof(bytes));
	rasp_format_count(e->objects, objects, sizeof(objects));
	interval_text(e->bytes_low, e->bytes_high, true, mark, bi, sizeof(bi));
	interval_text(e->objects_low, e->objects_high, false, omark, oi, sizeof(oi));
	snprintf(buf, len, "row: %s | %s | %s | %.1f%% | %s | %s | %" PRIu64, name, bytes, bi,
		 100 * e->bytes / total, objects, oi, e->samples);
}

/* The estimate of all the rows: the report's total. */
static struct rasp_est_total total_of(struct rasp_tally *t)
{
	struct rasp_rows rows;
	struct rasp_est_total e;

	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	e = rows.total;
	rasp_rows_free(&rows);
	return e;
}

/* The widths of the rows' intervals on the stacks, added up. */
static double sum_of_widths(struct rasp_tally *t, const struct stk *const *stacks, size_t n)
{
	struct rasp_rows rows;
	double w = 0;

	assert_int_equal(rasp_rows_build(t, 0.95, &rows), 0);
	for (size_t i = 0; i < rows.n; i++)
		for (size_t k = 0; k < n; k++)
			if (stack_is(t, &rows.v[i], stacks[k]))
				w += rows.v[i].est.bytes_high - rows.v[i].est.bytes_low;
	rasp_rows_free(&rows);
	return w;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the tests ---- */

/* The page's data: every node of the tree, each with the estimate of the rows under it (not
 * a sum of the rows' intervals), the function names of this program's own frames, and the
 * per-type table from the same rows. */
static void test_write_html_data(void **state)
{
	(void)state;
	struct fixture f;
	struct page p;
	char *out = calloc(1, 1 << 16);

	assert_non_null(out);
	fixture_init(&f);
	render(f.t, &f.opt, &p);
	check_self_contained(&p);
	python(p.text, p.len, "", json_nodes, out, 1 << 16);
	assert_int_equal(count(out, "node "), FIXTURE_NODES);
	{
		const struct stk *const abc[] = {&f.a, &f.b, &f.c}, *const ac[] = {&f.a, &f.c};
		const struct stk *const a[] = {&f.a}, *const b[] = {&f.b}, *const c[] = {&f.c};
		const struct stk *const none[] = {NULL}, *const any[] = {&f.a, &f.b, &f.c, NULL};
		struct rasp_est_total e = total_of(f.t), r;

		has_node(out, "all", &e);
		r = sum_of(f.t, abc, N(abc), NULL);
		has_node(out, "all > html_root", &r);
		/* One interval for the set: narrower than the rows' intervals added up. */
		assert_true(r.bytes_high - r.bytes_low < 0.8 * sum_of_widths(f.t, abc, N(abc)));
		e = sum_of(f.t, ac, N(ac), NULL);
		has_node(out, "all > html_root > html_build", &e);
		e = sum_of(f.t, a, N(a), NULL);
		has_node(out, "all > html_root > html_build > html_alloc", &e);
		e = sum_of(f.t, a, N(a), "Demo.Leaf");
		has_node(out, "all > html_root > html_build > html_alloc > Demo.Leaf", &e);
		e = sum_of(f.t, a, N(a), "Demo.Node");
		has_node(out, "all > html_root > html_build > html_alloc > Demo.Node", &e);
		e = sum_of(f.t, c, N(c), NULL);
		has_node(out, "all > html_root > html_build > html_helper", &e);
		has_node(out, "all > html_root > html_build > html_helper > html_alloc", &e);
		has_node(out,
			 "all > html_root > html_build > html_helper > html_alloc > System.Byte[]",
			 &e);
		e = sum_of(f.t, b, N(b), NULL);
		has_node(out, "all > html_root > html_parse", &e);
		has_node(out, "all > html_root > html_parse > html_alloc > System.String", &e);
		e = sum_of(f.t, none, N(none), NULL);
		has_node(out, "all > (no stack)", &e);
		has_node(out, "all > (no stack) > Demo.Node", &e);
		/* The table: each type's rows summed. */
		e = sum_of(f.t, any, N(any), "Demo.Node");
		has_est(out, "type Demo.Node", &e);
		e = sum_of(f.t, any, N(any), "Demo.Leaf");
		has_est(out, "type Demo.Leaf", &e);
	}
	/* Children largest first: html_build (A and C) before html_parse (B). */
	assert_true(node_id(out, "all > html_root > html_build") <
		    node_id(out, "all > html_root > html_parse"));
	page_free(&p);
	fixture_fini(&f);
	free(out);
}

/* The page in a browser: drawn without an error, every node of the fixture a box named by
 * its function or type (marked "~" under 10 samples), the header, the table's figures as the
 * text report formats them. */
static void test_write_html_browser(void **state)
{
	(void)state;
	static const char *const boxes[] = {
	    "box: n k0 | all",
	    "box: n k3 | html_root",
	    "box: n k3 | html_build",
	    "box: n k3 | html_parse",
	    "box: n k3 | html_helper",
	    "box: n k5 | Demo.Node",
	    "box: n k5 few | ~ Demo.Leaf",
	    "box: n k5 | System.String",
	    "box: n k5 | System.Byte[]",
	    "box: n k4 few | ~ (no stack)",
	    "box: n k5 few | ~ Demo.Node",
	};
	static const char *const types[] = {"System.Byte[]", "Demo.Node", "System.String",
					    "Demo.Leaf"};
	struct fixture f;
	struct page p;
	char *out, line[512];
	struct rasp_est_total total;

	fixture_init(&f);
	render(f.t, &f.opt, &p);
	out = browse_summary(&p, NULL, "full");
	if (!out)
		goto done;
	snprintf(line, sizeof(line), "status: ok: %d nodes (%d drawn)", FIXTURE_NODES,
		 FIXTURE_NODES);
	has_line(out, line);
	has_line(out, "errors: ");
	has_line(out, "scripts: 3");
	has_line(out, "loads: [] []");
	has_line(out, "title: rasp report: 70 DotNETRuntime:AllocationSampled samples");
	for (size_t i = 0; i < N(boxes); i++)
		has_line(out, boxes[i]);
	assert_int_equal(count(out, "box: n k3 | html_alloc\n"), 3);
	assert_int_equal(count(out, "box: "), FIXTURE_NODES);
	has_line(out, "header: /traces/html-fixture");
	has_line(out, "header: 5151, 70 samples, sampling mean 4096 bytes");
	has_line(out, "header: none reported");
	has_line(out, "header: 95% confidence");
	has_line(out, "header: type, stack");
	has_line(out, "header: 67 of 70 samples had one");
	has_start(out, "legend: ~ fewer than 10 samples: a wide interval (-");
	total = total_of(f.t);
	{
		const struct stk *const all[] = {&f.a, &f.b, &f.c, NULL};

		for (size_t i = 0; i < N(types); i++) {
			struct rasp_est_total e = sum_of(f.t, all, N(all), types[i]);

			type_row(types[i], &e, total.bytes, line, sizeof(line));
			has_line(out, line);
		}
		type_row("TOTAL", &total, total.bytes, line, sizeof(line));
		has_line(out, line);
	}
	/* Largest first. */
	{
		const struct stk *const all[] = {&f.a, &f.b, &f.c, NULL};
		const char *prev = NULL;
		double prev_bytes = 0;

		for (size_t i = 0; i < N(types); i++) {
			const char *at;
			struct rasp_est_total e = sum_of(f.t, all, N(all), types[i]);

			snprintf(line, sizeof(line), "row: %s |", types[i]);
			at = strstr(out, line);
			assert_non_null(at);
			if (prev)
				assert_true((at > prev) == (e.bytes < prev_bytes));
			prev = at;
			prev_bytes = e.bytes;
		}
	}
	free(out);
done:
	page_free(&p);
	fixture_fini(&f);
}

/* The view in the URL's fragment: zoomed into html_build (its ancestors above it, its subtree
 * drawn, the panel saying its estimate), html_alloc searched (three nodes, the share of their
 * bytes), then a regular expression, then one that is not. */
static void test_write_html_zoom_search(void **state)
{
	(void)state;
	struct fixture f;
	struct page p;
	char *data = calloc(1, 1 << 16), *out, frag[128], line[512], bi[112], bytes[48];
	struct rasp_est_total build, alloc, total;

	assert_non_null(data);
	fixture_init(&f);
	render(f.t, &f.opt, &p);
	python(p.text, p.len, "", json_nodes, data, 1 << 16);
	snprintf(frag, sizeof(frag), "#zoom=%d&q=html_alloc",
		 node_id(data, "all > html_root > html_build"));
	out = browse_summary(&p, frag, "full");
	if (!out)
		goto done;
	{
		const struct stk *const ac[] = {&f.a, &f.c}, *const abc[] = {&f.a, &f.b, &f.c};

		build = sum_of(f.t, ac, N(ac), NULL);
		alloc = sum_of(f.t, abc, N(abc), NULL);
		total = total_of(f.t);
	}
	/* all and html_root above; html_build, html_alloc, Demo.Node, Demo.Leaf, html_helper,
	 * html_alloc, System.Byte[] */
	has_line(out, "status: ok: 14 nodes (9 drawn)");
	has_line(out, "errors: ");
	has_line(out, "box: n k0 anc | all");
	has_line(out, "box: n k3 anc | html_root");
	has_line(out, "box: n k3 | html_build");
	assert_null(strstr(out, "| html_parse\n"));
	assert_int_equal(count(out, "box: n k3 m | html_alloc\n"), 2);
	has_line(out, "boxes: 9 matched: 2");
	rasp_format_bytes(build.bytes, bytes, sizeof(bytes));
	interval_text(build.bytes_low, build.bytes_high, true, "", bi, sizeof(bi));
	snprintf(line, sizeof(line), " / bytes:   %s  (95%% interval %s) / ", bytes, bi);
	if (!strstr(out, "selected: zoomed to: / html_build / function: ") || !strstr(out, line)) {
		printf("no \"%s\" in the panel:\n%s\n", line, out);
		fail();
	}
	rasp_format_bytes(alloc.bytes, bytes, sizeof(bytes));
	snprintf(line, sizeof(line),
		 "search: 3 nodes match: %s, %.1f%% of all estimated bytes (point estimate)", bytes,
		 100 * alloc.bytes / total.bytes);
	has_line(out, line);
	free(out);

	out = browse_summary(&p, "#q=%2F%5Ehtml_(build%7Cparse)%24%2F", "full");
	has_line(out, "status: ok: 14 nodes (14 drawn)");
	has_line(out, "boxes: 14 matched: 2");
	has_start(out, "search: 2 nodes match: ");
	free(out);

	out = browse_summary(&p, "#q=%2F(%2F", "full");
	has_line(out, "status: ok: 14 nodes (14 drawn)");
	has_line(out, "errors: ");
	has_start(out, "search: not a regular expression: ");
	free(out);
done:
	free(data);
	page_free(&p);
	fixture_fini(&f);
}

/* Names from a trace are text, never markup: types, .NET method names (frames named by the
 * trace), a process name, an input and a warning holding tags, comments, quotes, escapes and
 * UTF-8 are shown as written, and nothing of them runs or loads. */
static void test_write_html_hostile(void **state)
{
	(void)state;
	static const char *const types[] = {
	    "</script><img src=x onerror=\"document.title='pwned'\">",
	    "<!--<script>document.title='pwned'</script>",
	    "Quote\"'`&amp;\\u003c</style>",
	    "Ünïcode.Тип 🙂",
	};
	static const char m1[] = "<img src=x onerror=\"document.title='pwned'\">Ns.C::Alloc",
			  m2[] = "Ns.Outer<T>::Run&lt;\"x\"&gt;";
	const uint64_t stack[] = {0x10000010, 0x20000010};
	struct rasp_report_options opt;
	struct rasp_tally *t = create(&opt);
	struct page p;
	char *out, line[512];

	assert_int_equal(rasp_modules_add_method(&t->modules, PID, 0x10000000, 0x100, m1), 0);
	assert_int_equal(rasp_modules_add_method(&t->modules, PID, 0x20000000, 0x100, m2), 0);
	assert_int_equal(rasp_tally_set_process_name(t, PID, "<script>proc</script>"), 0);
	assert_int_equal(rasp_tally_add_input(t, "/traces/<b>bold</b>"), 0);
	assert_int_equal(rasp_tally_add_warning(t, "%s", "<svg onload=\"document.title='x'\">"), 0);
	for (size_t i = 0; i < N(types); i++)
		for (int k = 0; k < 12; k++)
			assert_int_equal(rasp_tally_add_sample_stack(t, types[i], 0, PID, PID + 1,
								     64, (uint64_t)k, stack, 2),
					 0);
	render(t, &opt, &p);
	check_self_contained(&p);
	/* The names with markup are nowhere in the file as written (UTF-8 is). */
	for (size_t i = 0; i < N(types); i++)
		if (strpbrk(types[i], "<>&"))
			assert_null(strstr(p.text, types[i]));
	assert_non_null(strstr(p.text, types[3]));
	assert_null(strstr(p.text, m1));
	assert_null(strstr(p.text, "<!--"));
	out = browse_summary(&p, NULL, "full");
	if (!out)
		goto done;
	/* all, m2, m1 and the four types */
	has_line(out, "status: ok: 7 nodes (7 drawn)");
	has_line(out, "errors: ");
	has_line(out, "scripts: 3");
	has_line(out, "loads: [] []");
	has_start(out, "title: rasp report: 48 ");
	snprintf(line, sizeof(line), "box: n k3 | %s", m1);
	has_line(out, line);
	snprintf(line, sizeof(line), "box: n k3 | %s", m2);
	has_line(out, line);
	for (size_t i = 0; i < N(types); i++) {
		snprintf(line, sizeof(line), "box: n k5 | %s", types[i]);
		has_line(out, line);
		snprintf(line, sizeof(line), "row: %s | ", types[i]);
		has_start(out, line);
	}
	has_line(out, "header: /traces/<b>bold</b>");
	has_start(out,
		  "header: 5151 <script>proc</script>, 48 samples, sampling mean 102400 bytes");
	has_line(out, "note: WARNING:<svg onload=\"document.title='x'\">");
	free(out);
done:
	page_free(&p);
	rasp_tally_destroy(t);
	rasp_report_options_fini(&opt);
}

/* The page is a file too: shown with cat or less, none of its bytes acts on a terminal, and
 * what a traced program controls (golden_hostile: escapes, C1, bidirectional controls in
 * types, method names, module paths, process names, inputs, warnings) is in its JSON as \u
 * escapes. */
static void test_write_html_escapes(void **state)
{
	(void)state;
	struct rasp_report_options opt;
	struct rasp_tally *t;
	struct page p;

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "html");
	t = golden_hostile(rasp_report_keys(&opt));
	render(t, &opt, &p);
	golden_check_inert(p.text, p.len, true, "html");
	assert_non_null(strstr(p.text, "Clear\\u001b[2J\\u0007Bell"));
	assert_non_null(strstr(p.text, "Rlo\\u202etxt.exe"));
	assert_non_null(strstr(p.text, "Ns.\\u001b[2JAlloc\\u202e"));
	assert_non_null(strstr(p.text, "\\u001b]0;pwned\\u0007\\u202eeman"));
	assert_non_null(strstr(p.text, "/traces/\\u001b[31mred\\u001b[0m"));
	page_free(&p);
	rasp_tally_destroy(t);
	rasp_report_options_fini(&opt);
}

/* Every note of the report on the page as the notes say it, the lost-data warning above
 * them, the GCAllocationTick section apart: the golden "awkward" fixture (lost events and
 * packets, skipped events, an incomplete input, assumed means, names with control
 * characters, CR/LF and invalid UTF-8). */
static void test_write_html_notes(void **state)
{
	(void)state;
	unsigned by = RASP_GROUP_TYPE | RASP_GROUP_STACK;
	struct rasp_tally *t = golden_awkward(by);
	struct rasp_report_options opt;
	struct rasp_rows rows;
	struct rasp_notes notes;
	struct page p;
	char *out, line[1024];

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "html");
	render(t, &opt, &p);
	check_self_contained(&p);
	out = browse_summary(&p, NULL, "full");
	if (!out)
		goto done;
	has_start(out, "status: ok: ");
	has_line(out, "errors: ");
	has_start(out, "banner: WARNING: events were lost (discarded by the tracer, or missing ");
	has_start(out, "banner: GCAllocationTick events (older .NET: one tick per ~100 KB ");
	has_line(out, "header: 257 events, 2 packets");
	has_line(out, "tick: int[] | 2 | 202400");
	has_line(out, "tick: TOTAL | 3 | 207400");
	assert_int_equal(rasp_rows_build(t, opt.confidence, &rows), 0);
	assert_int_equal(rasp_notes_build(t, &rows, "--sampling-mean", &notes), 0);
	assert_true(notes.n >= 4);
	for (size_t i = 0; i < notes.n; i++) {
		snprintf(line, sizeof(line), "note: %s:%s",
			 strcmp(notes.v[i].code, "no-samples") == 0 ? "NOTE" : "WARNING",
			 notes.v[i].text);
		for (char *s = line; *s; s++)
			if (*s == '\n')
				*s = '/'; /* as the summary prints them (none expected) */
		has_line(out, line);
	}
	assert_int_equal(count(out, "note: "), notes.n);
	rasp_notes_free(&notes);
	rasp_rows_free(&rows);
	free(out);
done:
	page_free(&p);
	rasp_tally_destroy(t);
	rasp_report_options_fini(&opt);
}

/* No samples: the root alone, the note that says why, a table of its TOTAL. */
static void test_write_html_empty(void **state)
{
	(void)state;
	struct rasp_tally *t = golden_empty(RASP_GROUP_TYPE | RASP_GROUP_STACK);
	struct rasp_report_options opt;
	struct page p;
	char *out;

	rasp_report_options_init(&opt);
	snprintf(opt.format, sizeof(opt.format), "html");
	render(t, &opt, &p);
	check_self_contained(&p);
	out = browse_summary(&p, NULL, "full");
	if (!out)
		goto done;
	has_line(out, "status: ok: 1 node (1 drawn)");
	has_line(out, "errors: ");
	has_start(out, "note: NOTE:the input holds no events at all");
	has_line(out, "legend: No samples: nothing to draw.");
	has_line(out, "row: TOTAL | 0 B | - | 0.0% | 0 | - | 0");
	free(out);
done:
	page_free(&p);
	rasp_tally_destroy(t);
	rasp_report_options_fini(&opt);
}

/* 11111 nodes (5000 stacks of 4 unresolved frames, fan-out 10, 10, 10, 5, each under its own
 * type): the page draws only the boxes at least a pixel wide, without an error. */
static void test_write_html_many(void **state)
{
	(void)state;
	struct rasp_report_options opt;
	struct rasp_tally *t = create(&opt);
	struct page p;
	char *out, *s, type[16];
	long drawn;

	for (uint64_t a = 0; a < 10; a++)
		for (uint64_t b = 0; b < 10; b++)
			for (uint64_t c = 0; c < 10; c++)
				for (uint64_t d = 0; d < 5; d++) {
					const uint64_t st[] = {0x40000 + d * 16, 0x30000 + c * 16,
							       0x20000 + b * 16, 0x10000 + a * 16};

					snprintf(type, sizeof(type), "T%" PRIu64, d);
					assert_int_equal(rasp_tally_add_sample_stack(t, type, 0,
										     PID, PID + 1,
										     64, 3, st, 4),
							 0);
				}
	render(t, &opt, &p);
	check_self_contained(&p);
	out = browse_summary(&p, NULL, "short");
	if (!out)
		goto done;
	has_line(out, "errors: ");
	s = strstr(out, "status: ok: 11111 nodes (");
	if (!s) {
		printf("no \"status: ok: 11111 nodes\" in:\n%s\n", out);
		fail();
	}
	drawn = strtol(s + strlen("status: ok: 11111 nodes ("), NULL, 10);
	/* The first three levels are wide enough at 1200 pixels; leaves (1/5000) are not. */
	assert_true(drawn >= 1111 && drawn < 11111);
	snprintf(type, sizeof(type), "%ld", drawn);
	{
		char want[64];

		snprintf(want, sizeof(want), "boxes: %ld matched: 0", drawn);
		has_line(out, want);
	}
	free(out);
done:
	page_free(&p);
	rasp_tally_destroy(t);
	rasp_report_options_fini(&opt);
}

/* What a user does, played by a probe script added to a copy of the page (without its
 * policy, which would block the probe): hover html_build (the tooltip: name, where, bytes and
 * objects with their intervals, samples, share), leave, click it (zoom), Escape (out), Back
 * (in again), Reset, then type a search. */
static const char probe[] =
    "<pre id=\"rasp-probe\"></pre><script>\n"
    "(function () {\n"
    "  const lines = [], flame = document.getElementById('rasp-flame');\n"
    "  const tip = document.getElementById('rasp-tip');\n"
    "  const say = (s) => {\n"
    "    lines.push(s);\n"
    "    document.getElementById('rasp-probe').textContent = lines.join('\\n');\n"
    "  };\n"
    "  const state = () => location.hash + ' ' +\n"
    "    document.getElementById('rasp-status').textContent;\n"
    "  const box = Array.from(flame.querySelectorAll('.n'))\n"
    "    .find((b) => b.textContent === 'html_build');\n"
    "  const r = box.getBoundingClientRect();\n"
    "  box.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.left + 4,\n"
    "                                                clientY: r.top + 4}));\n"
    "  say('hidden: ' + tip.hidden);\n"
    "  tip.textContent.split('\\n').forEach((l) => say('tip: ' + l));\n"
    "  flame.dispatchEvent(new MouseEvent('mouseleave'));\n"
    "  say('hidden: ' + tip.hidden);\n"
    "  box.click();\n"
    "  const steps = [\n"
    "    () => { say('clicked: ' + state());\n"
    "            document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'})); },\n"
    "    () => { say('escape: ' + state()); history.back(); },\n"
    "    () => { say('back: ' + state()); document.getElementById('rasp-reset').click(); },\n"
    "    () => { say('reset: ' + state());\n"
    "            const q = document.getElementById('rasp-search');\n"
    "            q.value = 'Demo';\n"
    "            q.dispatchEvent(new Event('input')); },\n"
    "    () => say('typed: ' + state() + ' / ' +\n"
    "              document.getElementById('rasp-search-result').textContent),\n"
    "  ];\n"
    "  const next = () => { steps.shift()(); if (steps.length) setTimeout(next, 200); };\n"
    "  setTimeout(next, 200);\n"
    "}());\n"
    "</script>\n";

static void test_write_html_interaction(void **state)
{
	(void)state;
	struct fixture f;
	struct page p;
	char *out, *copy, *csp, *body, line[512], v[48], ci[112];
	const char *csp_end;
	FILE *w;
	struct rasp_est_total build, total;

	fixture_init(&f);
	render(f.t, &f.opt, &p);
	{
		const struct stk *const ac[] = {&f.a, &f.c};

		build = sum_of(f.t, ac, N(ac), NULL);
		total = total_of(f.t);
	}
	copy = strdup(p.text);
	assert_non_null(copy);
	csp = strstr(copy, "<meta http-equiv=\"Content-Security-Policy\"");
	assert_non_null(csp);
	csp_end = strchr(csp, '>');
	memmove(csp, csp_end + 1, strlen(csp_end + 1) + 1);
	body = strstr(copy, "</body>");
	assert_non_null(body);
	w = fopen(p.path, "w");
	assert_non_null(w);
	fprintf(w, "%.*s%s%s", (int)(body - copy), copy, probe, body);
	assert_int_equal(fclose(w), 0);
	free(copy);
	out = browse_summary(&p, NULL, "full");
	if (!out)
		goto done;
	has_line(out, "errors: ");
	has_line(out, "probe: hidden: false");
	has_line(out, "probe: tip: html_build");
	has_start(out, "probe: tip: function: ");
	assert_non_null(strstr(out, "test-write-html.c:"));
	rasp_format_bytes(build.bytes, v, sizeof(v));
	interval_text(build.bytes_low, build.bytes_high, true, "", ci, sizeof(ci));
	snprintf(line, sizeof(line), "probe: tip: bytes:   %s  (95%% interval %s)", v, ci);
	has_line(out, line);
	rasp_format_count(build.objects, v, sizeof(v));
	interval_text(build.objects_low, build.objects_high, false, "", ci, sizeof(ci));
	snprintf(line, sizeof(line), "probe: tip: objects: %s  (95%% interval %s)", v, ci);
	has_line(out, line);
	snprintf(line, sizeof(line), "probe: tip: samples: %" PRIu64, build.samples);
	has_line(out, line);
	snprintf(line, sizeof(line), "probe: tip: share:   %.1f%% of all estimated bytes",
		 100 * build.bytes / total.bytes);
	has_line(out, line);
	has_line(out, "probe: hidden: true");
	has_line(out, "probe: clicked: #zoom=2 ok: 14 nodes (9 drawn)");
	has_line(out, "probe: escape:  ok: 14 nodes (14 drawn)");
	has_line(out, "probe: back: #zoom=2 ok: 14 nodes (9 drawn)");
	has_line(out, "probe: reset:  ok: 14 nodes (14 drawn)");
	has_start(out, "probe: typed: #q=Demo ok: 14 nodes (14 drawn) / 3 nodes match: ");
	free(out);
done:
	page_free(&p);
	fixture_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_html_data),
	    cmocka_unit_test(test_write_html_browser),
	    cmocka_unit_test(test_write_html_zoom_search),
	    cmocka_unit_test(test_write_html_hostile),
	    cmocka_unit_test(test_write_html_escapes),
	    cmocka_unit_test(test_write_html_notes),
	    cmocka_unit_test(test_write_html_empty),
	    cmocka_unit_test(test_write_html_many),
	    cmocka_unit_test(test_write_html_interaction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
