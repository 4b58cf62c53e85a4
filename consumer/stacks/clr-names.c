/* .NET names as C# writes them (clr-names.h). Each name is parsed twice: once to check the
 * whole of it (a name that does not parse is copied unchanged, never half converted), then
 * again, node by node, to write it; a node's arguments are found by parsing them, so the cost
 * is the input's length times its depth, which RASP_CLR_MAX_DEPTH bounds. */
#include "clr-names.h"

#include <stdbool.h>
#include <string.h>

/* Types one name may chain with '+', and generic arguments one type may have: more is no
 * name the runtime writes (the recursion's frames stay small). */
#define MAX_SEGS 16
#define MAX_ARGS 64

struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, o->len++)
		if (o->len + 1 < o->cap)
			o->buf[o->len] = s[i];
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static size_t finish(struct out *o)
{
	if (o->cap)
		o->buf[o->len < o->cap ? o->len : o->cap - 1] = '\0';
	return o->len;
}

/* The syntaxes: the runtime's type names (arguments in [], '<' and '>' are letters of
 * compiler-generated names such as <>c__DisplayClass6_0), and ILAsm's types in signatures
 * (class X, value class X, primitives, !0, arguments in <>). */
enum syntax { RUNTIME, ILASM };

struct seg {
	const char *s;
	size_t n;	/* the name without its arity */
	unsigned arity; /* `N: its own generic parameters */
};

struct node {
	struct seg seg[MAX_SEGS];
	size_t nseg;
	const char *arg[MAX_ARGS]; /* where each argument starts */
	size_t narg;
	const char *prim; /* ILAsm: a primitive or a generic parameter, as C# writes it */
	char param[24];	  /* ILAsm: !N or !!N, written */
	const char *suffix, *end;
	bool byref; /* ILAsm: a final '&', written "ref " in front */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool starts(const char *p, const char *word)
{
	return strncmp(p, word, strlen(word)) == 0;
}

/* One segment's name: up to a delimiter of the syntax. A backslash escapes the character
 * after it (the runtime escapes a '+' or ',' that is part of a name). In ILAsm, a name that
 * starts with '<' is a compiler-generated one: up to its matching '>' is name. */
static const char *segment(const char *p, enum syntax syn, struct seg *sg)
{
	const char *start = p, *tick = NULL;
	int angle = 0;

	for (;;) {
		char c = *p;

		if (c == '\0')
			break;
		if (c == '\\') {
			if (!p[1])
				return NULL;
			p += 2;
			continue;
		}
		if (syn == ILASM && c == '<' && (p == start || angle)) {
			angle++;
			p++;
			continue;
		}
		if (syn == ILASM && c == '>' && angle) {
			angle--;
			p++;
			continue;
		}
		if (strchr("[],+*&", c) || (syn == ILASM && strchr("<> ()", c)))
			break;
		if (c == '`')
			tick = p;
		p++;
	}
	if (p == start || angle)
		return NULL;
	sg->s = start;
	sg->n = (size_t)(p - start);
	sg->arity = 0;
	/* `N at the end: the type's own generic parameters. */
	if (tick && tick + 1 < p) {
		unsigned a = 0;
		const char *q = tick + 1;

		while (q < p && is_digit(*q))
			q++;
		if (q == p) {
			/* More digits than a type's parameters can take: no name of the runtime. */
			if (p - tick > 3)
				return NULL;
			for (q = tick + 1; q < p; q++)
				a = a * 10 + (unsigned)(*q - '0');
			if (a > MAX_ARGS)
				return NULL;
			sg->n = (size_t)(tick - start);
			sg->arity = a;
		}
	}
	return p;
}

static const char *parse(const char *p, enum syntax syn, int depth, struct node *n);

/* Skips one argument (an ILAsm type, or a runtime name, assembly-qualified in brackets). */
static const char *skip_arg(const char *p, enum syntax syn, int depth)
{
	struct node child;

	if (syn == RUNTIME && *p == '[') {
		p = parse(p + 1, syn, depth + 1, &child);
		if (!p)
			return NULL;
		/* ", Assembly, Version=..., Culture=..., PublicKeyToken=...": not part of the name.
		 */
		while (*p && *p != ']' && *p != '[')
			p++;
		return *p == ']' ? p + 1 : NULL;
	}
	return parse(p, syn, depth + 1, &child);
}

/* !N or !!N: the type's generic parameter TN, or the method's MN (their names are not in the
 * trace). */
static void set_param(struct node *n, bool method, unsigned v)
{
	char digits[12];
	size_t k = 0, j = 1;

	n->param[0] = method ? 'M' : 'T';
	do {
		digits[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k < sizeof(digits));
	while (k)
		n->param[j++] = digits[--k];
	n->param[j] = '\0';
	n->prim = n->param;
}

/* The primitives of ILAsm signatures, as C# writes them; longest spellings first. */
static const char *const il_prims[][2] = {
    {"native unsigned int", "nuint"},
    {"unsigned int8", "byte"},
    {"unsigned int16", "ushort"},
    {"unsigned int32", "uint"},
    {"unsigned int64", "ulong"},
    {"native int", "nint"},
    {"typedref", "TypedReference"},
    {"float32", "float"},
    {"float64", "double"},
    {"object", "object"},
    {"string", "string"},
    {"wchar", "char"},
    {"int8", "sbyte"},
    {"int16", "short"},
    {"int32", "int"},
    {"int64", "long"},
    {"bool", "bool"},
    {"char", "char"},
    {"void", "void"},
};

/* One type: its segments, its generic arguments, its array, pointer and byref suffixes. The
 * end of it, or NULL when it does not parse. */
static const char *parse(const char *p, enum syntax syn, int depth, struct node *n)
{
	char open = syn == RUNTIME ? '[' : '<', close = syn == RUNTIME ? ']' : '>';

	n->nseg = n->narg = 0;
	n->prim = NULL;
	n->byref = false;
	if (depth > RASP_CLR_MAX_DEPTH)
		return NULL;
	if (syn == ILASM) {
		if (starts(p, "class "))
			p += 6;
		else if (starts(p, "value class "))
			p += 12;
		else if (starts(p, "valuetype "))
			p += 10;
		else if (p[0] == '!') {
			bool method = p[1] == '!';
			const char *q = p + 1 + method;
			unsigned v = 0;

			if (!is_digit(*q))
				return NULL;
			while (is_digit(*q) && v < 100000)
				v = v * 10 + (unsigned)(*q++ - '0');
			set_param(n, method, v);
			p = q;
			goto suffixes;
		} else {
			for (size_t i = 0; i < sizeof(il_prims) / sizeof(il_prims[0]); i++) {
				size_t len = strlen(il_prims[i][0]);

				if (strncmp(p, il_prims[i][0], len) == 0 &&
				    !((p[len] >= 'a' && p[len] <= 'z') || is_digit(p[len]))) {
					n->prim = il_prims[i][1];
					p += len;
					goto suffixes;
				}
			}
		}
	}
	for (;;) {
		if (n->nseg == MAX_SEGS)
			return NULL;
		p = segment(p, syn, &n->seg[n->nseg]);
		if (!p)
			return NULL;
		n->nseg++;
		if (*p != '+')
			break;
		p++;
	}
	/* Generic arguments: in the runtime's syntax a '[' that opens no array rank. */
	if (*p == open && (syn == ILASM || (p[1] != ']' && p[1] != ',' && p[1] != '*'))) {
		p++;
		for (;;) {
			if (n->narg == MAX_ARGS)
				return NULL;
			n->arg[n->narg++] = p;
			p = skip_arg(p, syn, depth);
			if (!p)
				return NULL;
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p != close)
				return NULL;
			p++;
			break;
		}
	}
suffixes:
	n->suffix = p;
	for (;;) {
		if (p[0] == '[') {
			const char *q = p + 1;

			if (*q == '*') {
				q++;
			} else {
				while (*q == ',')
					q++;
			}
			if (*q != ']')
				break;
			p = q + 1;
		} else if (*p == '*') {
			p++;
		} else if (*p == '&' && !n->byref) {
			p++;
			n->byref = true;
		} else {
			break;
		}
	}
	/* A byref is the last of the suffixes. */
	if (n->byref && p[-1] != '&')
		return NULL;
	n->end = p;
	return p;
}

/* ---- Writing ------------------------------------------------------------------------------ */

/* The C# keywords for the types that have one, by the runtime's full name. */
static const char *const aliases[][2] = {
    {"System.Boolean", "bool"}, {"System.Byte", "byte"},       {"System.SByte", "sbyte"},
    {"System.Char", "char"},	{"System.Decimal", "decimal"}, {"System.Double", "double"},
    {"System.Single", "float"}, {"System.Int16", "short"},     {"System.UInt16", "ushort"},
    {"System.Int32", "int"},	{"System.UInt32", "uint"},     {"System.Int64", "long"},
    {"System.UInt64", "ulong"}, {"System.Object", "object"},   {"System.String", "string"},
    {"System.Void", "void"},	{"System.IntPtr", "nint"},     {"System.UIntPtr", "nuint"},
};

static bool seg_is(const struct seg *s, const char *name)
{
	return s->n == strlen(name) && strncmp(s->s, name, s->n) == 0;
}

static void emit(struct out *o, const char *p, enum syntax syn, int depth, enum rasp_clr_ns ns);

/* The segment's name: its namespace (up to the last '.' outside a compiler-generated <...>)
 * left out unless ns keeps it. */
static void emit_name(struct out *o, const struct seg *s, bool keep_ns)
{
	size_t from = 0;
	int angle = 0;

	if (!keep_ns)
		for (size_t i = 0; i < s->n; i++) {
			if (s->s[i] == '\\') {
				i++;
				continue;
			}
			angle += s->s[i] == '<';
			angle -= s->s[i] == '>' && angle;
			if (s->s[i] == '.' && !angle && i + 1 < s->n)
				from = i + 1;
		}
	put(o, s->s + from, s->n - from);
}

static void emit_args(struct out *o, const struct node *n, size_t from, size_t count,
		      enum syntax syn, int depth, enum rasp_clr_ns ns)
{
	for (size_t i = 0; i < count; i++) {
		if (i)
			puts_(o, ", ");
		emit(o, n->arg[from + i], syn, depth + 1, ns);
	}
}

static void emit(struct out *o, const char *p, enum syntax syn, int depth, enum rasp_clr_ns ns)
{
	struct node n;
	bool keep_ns = ns == RASP_CLR_NS_ALL || (ns == RASP_CLR_NS_OUTER && depth == 0);
	size_t declared = 0, next = 0, extra;

	if (syn == RUNTIME && *p == '[')
		p++; /* an assembly-qualified argument: the name inside */
	/* Parsed before, so parses again. */
	if (!parse(p, syn, depth, &n))
		return;
	if (n.byref && syn == ILASM)
		puts_(o, "ref ");
	if (n.prim) {
		puts_(o, n.prim);
		goto suffix;
	}
	for (size_t i = 0; i < n.nseg; i++)
		declared += n.seg[i].arity;
	extra = n.narg > declared ? n.narg - declared : 0;
	if (n.nseg == 1 && !n.narg) {
		for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
			if (seg_is(&n.seg[0], aliases[i][0])) {
				puts_(o, aliases[i][1]);
				goto suffix;
			}
	}
	if (n.nseg == 1 && n.narg == 1 && n.seg[0].arity == 1 &&
	    seg_is(&n.seg[0], "System.Nullable")) {
		emit(o, n.arg[0], syn, depth + 1, ns);
		puts_(o, "?");
		goto suffix;
	}
	if (n.nseg == 1 && n.narg >= 2 && n.narg <= 7 && n.seg[0].arity == n.narg &&
	    seg_is(&n.seg[0], "System.ValueTuple")) {
		puts_(o, "(");
		emit_args(o, &n, 0, n.narg, syn, depth, ns);
		puts_(o, ")");
		goto suffix;
	}
	for (size_t i = 0; i < n.nseg; i++) {
		/* The first type named takes the arguments of enclosing types the name left out. */
		size_t take = n.seg[i].arity + (i == 0 ? extra : 0);

		if (i)
			puts_(o, ".");
		emit_name(o, &n.seg[i], keep_ns && i == 0);
		if (take && n.narg) {
			puts_(o, "<");
			emit_args(o, &n, next, take, syn, depth, ns);
			puts_(o, ">");
			next += take;
		} else if (take) {
			/* An open generic type (no arguments at all): C#'s List<>, Dictionary<,>.
			 */
			puts_(o, "<");
			for (size_t k = 1; k < take; k++)
				puts_(o, ",");
			puts_(o, ">");
		}
	}
suffix:
	put(o, n.suffix, (size_t)(n.end - n.suffix) - (n.byref && syn == ILASM));
}

/* Whether the node's arguments fit its parameters: as many (or more, for enclosing types the
 * name left out), or none at all (an open type); each argument checked the same way. */
static bool fits(const char *p, enum syntax syn, int depth)
{
	struct node n;
	size_t declared = 0;

	if (syn == RUNTIME && *p == '[')
		p++;
	if (!parse(p, syn, depth, &n))
		return false;
	for (size_t i = 0; i < n.nseg; i++)
		declared += n.seg[i].arity;
	if (n.narg && n.narg < declared)
		return false;
	for (size_t i = 0; i < n.narg; i++)
		if (!fits(n.arg[i], syn, depth + 1))
			return false;
	return true;
}

size_t rasp_clr_type_name(const char *in, enum rasp_clr_ns ns, char *out, size_t cap)
{
	struct out o = {out, cap, 0};
	struct node n;
	const char *end = in ? parse(in, RUNTIME, 0, &n) : NULL;

	if (!in) {
		return finish(&o);
	}
	if (!end || *end || !fits(in, RUNTIME, 0)) {
		puts_(&o, in);
		return finish(&o);
	}
	emit(&o, in, RUNTIME, 0, ns);
	return finish(&o);
}

/* The parameter list: the '(' that matches the ')' ending the signature (a function pointer
 * in the return type has parentheses of its own). */
static const char *params_of(const char *sig, const char **close)
{
	size_t len = sig ? strlen(sig) : 0;
	int depth = 0;

	if (!len || sig[len - 1] != ')')
		return NULL;
	for (size_t i = len; i-- > 0;) {
		depth += sig[i] == ')';
		depth -= sig[i] == '(';
		if (depth == 0) {
			*close = sig + len - 1;
			return sig + i;
		}
	}
	return NULL;
}

size_t rasp_clr_signature_params_raw(const char *sig, char *out, size_t cap)
{
	struct out o = {out, cap, 0};
	const char *close, *open = params_of(sig, &close);

	if (!open)
		puts_(&o, sig ? sig : "");
	else
		put(&o, open, (size_t)(close - open) + 1);
	return finish(&o);
}

size_t rasp_clr_signature_params(const char *sig, enum rasp_clr_ns ns, char *out, size_t cap)
{
	struct out o = {out, cap, 0};
	const char *close, *open = params_of(sig, &close), *p;

	if (!open) {
		puts_(&o, sig ? sig : "");
		return finish(&o);
	}
	puts_(&o, "(");
	p = open + 1;
	/* One parameter a turn, up to the ',' after it; a list of none is "()". */
	while (p < close || (p == close && p[-1] == ',')) {
		struct node n;
		const char *end = parse(p, ILASM, 0, &n);

		if (end && end <= close && (end == close || *end == ',') && fits(p, ILASM, 0)) {
			emit(&o, p, ILASM, 0, ns);
			p = end;
		} else {
			/* Not a type this parser knows (a function pointer...): as it is, up to the
			 * next ',' outside <> and (). */
			const char *q = p;
			int nest = 0;

			for (; q < close && (nest || *q != ','); q++) {
				nest += *q == '<' || *q == '(';
				nest -= (*q == '>' || *q == ')') && nest;
			}
			put(&o, p, (size_t)(q - p));
			p = q;
		}
		if (p < close && *p == ',') {
			puts_(&o, ", ");
			p++;
			continue;
		}
		break;
	}
	puts_(&o, ")");
	return finish(&o);
}
