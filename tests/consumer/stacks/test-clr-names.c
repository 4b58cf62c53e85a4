/* Unit tests of consumer/stacks/clr-names.c: .NET type names and method signatures in the
 * runtime's form turned into C#'s, on the names .NET 10 writes (taken from real traces of
 * tests/dotnet/Generics) and on tricky ones: nested generics, nested types of generic types,
 * arrays of generics, multi-dimensional arrays, pointers, assembly-qualified arguments,
 * nullable and tuple types; every malformed name comes back unchanged, a name cut anywhere
 * never crashes, and a deep one is refused within its bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stacks/clr-names.h"

struct want {
	const char *in, *none, *outer;
};

/* A name, its C# form without namespaces and with the outermost type's. */
static const struct want types[] = {
    {"System.String", "string", "string"},
    {"System.Int32[]", "int[]", "int[]"},
    {"System.Object[]", "object[]", "object[]"},
    {"System.Byte[]", "byte[]", "byte[]"},
    {"System.Char[]", "char[]", "char[]"},
    {"System.Int32[,]", "int[,]", "int[,]"},
    {"System.Int32[,,]", "int[,,]", "int[,,]"},
    {"System.Int32[][]", "int[][]", "int[][]"},
    {"System.Int32[*]", "int[*]", "int[*]"},
    {"System.Int32*", "int*", "int*"},
    {"System.Void*", "void*", "void*"},
    {"System.Int32**[]", "int**[]", "int**[]"},
    {"System.Decimal", "decimal", "decimal"},
    {"System.Boolean", "bool", "bool"},
    {"System.IntPtr[]", "nint[]", "nint[]"},
    {"Generics.Order", "Order", "Generics.Order"},
    {"Generics.Order[]", "Order[]", "Generics.Order[]"},
    {"Order", "Order", "Order"},
    {"System.Collections.Generic.List`1[System.String]", "List<string>",
     "System.Collections.Generic.List<string>"},
    {"System.Collections.Generic.Dictionary`2[System.String,System.Int32]",
     "Dictionary<string, int>", "System.Collections.Generic.Dictionary<string, int>"},
    {"System.Collections.Generic.List`1[System.Collections.Generic.Dictionary`2[System.String,"
     "System.Int32]]",
     "List<Dictionary<string, int>>", "System.Collections.Generic.List<Dictionary<string, int>>"},
    /* Arrays of generics: the rank after the arguments. */
    {"System.Collections.Generic.Dictionary`2[System.String,System.Int32][]",
     "Dictionary<string, int>[]", "System.Collections.Generic.Dictionary<string, int>[]"},
    {"System.Collections.Generic.KeyValuePair`2[System.String,System.Int32][,]",
     "KeyValuePair<string, int>[,]", "System.Collections.Generic.KeyValuePair<string, int>[,]"},
    /* Nested types: '+' becomes '.', each type takes its own parameters. */
    {"Generics.Outer+Inner", "Outer.Inner", "Generics.Outer.Inner"},
    {"Generics.Outer+Inner[]", "Outer.Inner[]", "Generics.Outer.Inner[]"},
    {"Generics.Outer`1+Inner`1[System.Int64,System.String]", "Outer<long>.Inner<string>",
     "Generics.Outer<long>.Inner<string>"},
    {"Generics.Outer`1+Leaf[System.String]", "Outer<string>.Leaf", "Generics.Outer<string>.Leaf"},
    {"System.Collections.Generic.Dictionary`2+Entry[System.String,System.Int32][]",
     "Dictionary<string, int>.Entry[]",
     "System.Collections.Generic.Dictionary<string, int>.Entry[]"},
    {"A`2+B+C`1[X,Y,Z]", "A<X, Y>.B.C<Z>", "A<X, Y>.B.C<Z>"},
    /* What AllocationSampled writes for nested types: the enclosing types left out; their
     * arguments go to the first type named. */
    {"Entry[System.String,System.Int32][]", "Entry<string, int>[]", "Entry<string, int>[]"},
    {"Inner`1[System.Int64,System.Collections.Generic.Dictionary`2[System.String,System.Int32["
     "]]]",
     "Inner<long, Dictionary<string, int[]>>", "Inner<long, Dictionary<string, int[]>>"},
    {"Leaf[System.String]", "Leaf<string>", "Leaf<string>"},
    {"IListSelectIterator`2[Generics.Order,System.Int32]", "IListSelectIterator<Order, int>",
     "IListSelectIterator<Order, int>"},
    /* The deep one of the Generics program. */
    {"System.Collections.Generic.Dictionary`2[System.String,System.Collections.Generic.List`1["
     "System.Collections.Generic.KeyValuePair`2[System.Tuple`2[System.Int32,System.String],"
     "Generics.Outer`1+Inner`1[System.Int64,System.Collections.Generic.Dictionary`2[System."
     "String,System.Int32[]]]]]]",
     "Dictionary<string, List<KeyValuePair<Tuple<int, string>, Outer<long>.Inner<Dictionary<"
     "string, int[]>>>>>",
     "System.Collections.Generic.Dictionary<string, List<KeyValuePair<Tuple<int, string>, "
     "Outer<long>.Inner<Dictionary<string, int[]>>>>>"},
    /* Assembly-qualified arguments: the assembly left out. */
    {"System.Collections.Generic.List`1[[System.String, System.Private.CoreLib, "
     "Version=10.0.0.0, Culture=neutral, PublicKeyToken=7cec85d7bea7798e]]",
     "List<string>", "System.Collections.Generic.List<string>"},
    {"System.Collections.Generic.Dictionary`2[[System.String, System.Private.CoreLib],[My.T, "
     "MyAsm]][]",
     "Dictionary<string, T>[]", "System.Collections.Generic.Dictionary<string, T>[]"},
    {"System.Collections.Generic.Dictionary`2[[System.String, A],System.Int32]",
     "Dictionary<string, int>", "System.Collections.Generic.Dictionary<string, int>"},
    /* Nullable and tuples as C# writes them. */
    {"System.Nullable`1[System.Int32]", "int?", "int?"},
    {"System.Nullable`1[System.Int32][]", "int?[]", "int?[]"},
    {"System.ValueTuple`2[System.Int32,System.String][]", "(int, string)[]", "(int, string)[]"},
    {"System.ValueTuple`3[System.Int32,System.Nullable`1[System.Int64],Generics.Point]",
     "(int, long?, Point)", "(int, long?, Point)"},
    {"System.ValueTuple`1[System.Int32]", "ValueTuple<int>", "System.ValueTuple<int>"},
    {"System.Tuple`2[System.Int32,System.String]", "Tuple<int, string>",
     "System.Tuple<int, string>"},
    /* Open generic types, and the canonical form of shared generic code. */
    {"System.Collections.Generic.List`1", "List<>", "System.Collections.Generic.List<>"},
    {"System.Collections.Generic.Dictionary`2", "Dictionary<,>",
     "System.Collections.Generic.Dictionary<,>"},
    {"System.Collections.Generic.List`1[System.__Canon]", "List<__Canon>",
     "System.Collections.Generic.List<__Canon>"},
    /* Compiler-generated names keep their punctuation; a '.' inside <...> is no namespace. */
    {"Oracle.Program+<>c__DisplayClass6_0", "Program.<>c__DisplayClass6_0",
     "Oracle.Program.<>c__DisplayClass6_0"},
    {"N.C+<System.Collections.IEnumerable.GetEnumerator>d__5",
     "C.<System.Collections.IEnumerable.GetEnumerator>d__5",
     "N.C.<System.Collections.IEnumerable.GetEnumerator>d__5"},
    /* A backtick that is no arity stays in the name. */
    {"A`x", "A`x", "A`x"},
    /* An escaped delimiter is part of the name. */
    {"N.A\\+B", "A\\+B", "N.A\\+B"},
    /* A pointer in an argument. */
    {"System.Collections.Generic.List`1[System.Int32*]", "List<int*>",
     "System.Collections.Generic.List<int*>"},
};

/* Not in the runtime's form: each comes back as it is. */
static const char *const malformed[] = {
    "",
    "[",
    "]",
    "[]",
    "A[",
    "A[B",
    "A]",
    "A[B]]",
    "A`1[B",
    "A`1[B,]",
    "A`1[,B]",
    "A`2[B]", /* fewer arguments than parameters */
    "A`1[B][C]",
    "A+",
    "+A",
    "A++B",
    "A[,]x",
    "A[x,]",
    "A&[]",
    "A`1[[B, C]",
    "A`1[[B, C]x]",
    "A`1[[B[], C",
    "A\\",
    "A B, Assembly",
    "A`99999999999[B]",
    "A,B",
    "A*B",
};

static void check(const char *in, enum rasp_clr_ns ns, const char *want)
{
	char out[1024];
	size_t n = rasp_clr_type_name(in, ns, out, sizeof(out));

	if (strcmp(out, want) != 0 || n != strlen(want))
		fail_msg("'%s' (ns %d): got '%s' (%zu), want '%s'", in, (int)ns, out, n, want);
}

static void test_types(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		check(types[i].in, RASP_CLR_NS_NONE, types[i].none);
		check(types[i].in, RASP_CLR_NS_OUTER, types[i].outer);
	}
	check("System.Collections.Generic.List`1[Generics.Order]", RASP_CLR_NS_ALL,
	      "System.Collections.Generic.List<Generics.Order>");
	check("Generics.Outer`1+Inner`1[System.Int64,My.T]", RASP_CLR_NS_ALL,
	      "Generics.Outer<long>.Inner<My.T>");
}

static void test_malformed_unchanged(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
		for (int ns = RASP_CLR_NS_NONE; ns <= RASP_CLR_NS_ALL; ns++)
			check(malformed[i], (enum rasp_clr_ns)ns, malformed[i]);
}

/* Every prefix of every name, in every buffer size up to the result's: no crash, no byte
 * past the buffer, always NUL-terminated, and the length of the whole result returned. */
static void test_cut_anywhere(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t len = strlen(types[i].in);

		for (size_t cut = 0; cut <= len; cut++) {
			char in[1024], full[1024];
			size_t n;

			memcpy(in, types[i].in, cut);
			in[cut] = '\0';
			n = rasp_clr_type_name(in, RASP_CLR_NS_NONE, full, sizeof(full));
			assert_int_equal(n, strlen(full));
			for (size_t cap = 0; cap <= n + 1; cap++) {
				char *buf = malloc(cap ? cap : 1);

				assert_non_null(buf);
				assert_int_equal(rasp_clr_type_name(in, RASP_CLR_NS_NONE, buf, cap),
						 n);
				if (cap) {
					assert_int_equal(strlen(buf), n < cap ? n : cap - 1);
					assert_memory_equal(buf, full, strlen(buf));
				}
				free(buf);
			}
		}
	}
	assert_int_equal(rasp_clr_type_name(NULL, RASP_CLR_NS_NONE, NULL, 0), 0);
}

/* Arguments inside arguments: converted up to the bound, unchanged past it. */
static void test_depth_bound(void **state)
{
	static char in[64 * 1024], out[64 * 1024], want[64 * 1024];

	(void)state;
	for (int depth = 1; depth <= RASP_CLR_MAX_DEPTH + 2; depth++) {
		size_t n = 0, w = 0;

		for (int i = 0; i < depth; i++) {
			n += (size_t)sprintf(in + n, "A`1[");
			w += (size_t)sprintf(want + w, "A<");
		}
		n += (size_t)sprintf(in + n, "System.Int32");
		w += (size_t)sprintf(want + w, "int");
		for (int i = 0; i < depth; i++) {
			in[n++] = ']';
			want[w++] = '>';
		}
		in[n] = want[w] = '\0';
		rasp_clr_type_name(in, RASP_CLR_NS_NONE, out, sizeof(out));
		assert_string_equal(out, depth <= RASP_CLR_MAX_DEPTH ? want : in);
	}
	/* A long flat name: linear, converted. */
	{
		size_t n = (size_t)sprintf(in, "T`64[");

		for (int i = 0; i < 64; i++)
			n += (size_t)sprintf(in + n, "%sSystem.Int32", i ? "," : "");
		sprintf(in + n, "]");
		rasp_clr_type_name(in, RASP_CLR_NS_NONE, out, sizeof(out));
		assert_int_equal(strncmp(out, "T<int, int, ", 12), 0);
	}
	/* More arguments than a type may have: unchanged. */
	{
		size_t n = (size_t)sprintf(in, "T[");

		for (int i = 0; i < 65; i++)
			n += (size_t)sprintf(in + n, "%sX", i ? "," : "");
		sprintf(in + n, "]");
		rasp_clr_type_name(in, RASP_CLR_NS_NONE, out, sizeof(out));
		assert_string_equal(out, in);
	}
}

/* Signatures as MethodLoadVerbose and MethodDCEndVerbose carry them (from .NET 10 traces). */
static void test_signatures(void **state)
{
	static const char *const sigs[][2] = {
	    {"void  ()", "()"},
	    {"instance void  ()", "()"},
	    {"instance void  (int32)", "(int)"},
	    {"instance void  (class System.String)", "(string)"},
	    {"instance int32  (value class System.ReadOnlySpan`1<wchar>)", "(ReadOnlySpan<char>)"},
	    {"generic int32  (int16&,int32,value class AsciiState&)",
	     "(ref short, int, ref AsciiState)"},
	    {"generic bool  (value class System.ReadOnlySpan`1<!!0>,!!0&,!!0&)",
	     "(ReadOnlySpan<M0>, ref M0, ref M0)"},
	    {"instance void  (int32,class System.Collections.Generic.IEqualityComparer`1<!0>)",
	     "(int, IEqualityComparer<T0>)"},
	    {"class System.Object  (void*,class System.Object)", "(void*, object)"},
	    {"instance bool  (!0,!1,value class System.Collections.Generic.InsertionBehavior)",
	     "(T0, T1, InsertionBehavior)"},
	    {"instance void  (unsigned int8[],native int,unsigned int64,float64,float32,bool)",
	     "(byte[], nint, ulong, double, float, bool)"},
	    {"instance class Node<!0>  (class Node<!0>)", "(Node<T0>)"},
	    {"void  (class Oracle.Program+<>c__DisplayClass6_0)", "(Program.<>c__DisplayClass6_0)"},
	    {"void  (int32[,],!0[])", "(int[,], T0[])"},
	    {"void  (class System.Collections.Generic.Dictionary`2<class System.String,int32>)",
	     "(Dictionary<string, int>)"},
	    /* A parameter this parser does not know stays as it is; the others convert. */
	    {"void  (method void *(int32),int32)", "(method void *(int32), int)"},
	    {"void  (int32,)", "(int, )"},
	    /* No parameter list: unchanged. */
	    {"", ""},
	    {"void", "void"},
	    {"void  (int32", "void  (int32"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		char out[512], raw[512];

		rasp_clr_signature_params(sigs[i][0], RASP_CLR_NS_NONE, out, sizeof(out));
		if (strcmp(out, sigs[i][1]) != 0)
			fail_msg("'%s': got '%s', want '%s'", sigs[i][0], out, sigs[i][1]);
		rasp_clr_signature_params_raw(sigs[i][0], raw, sizeof(raw));
		if (strchr(sigs[i][0], '(') && sigs[i][0][strlen(sigs[i][0]) - 1] == ')')
			assert_string_equal(raw, strchr(sigs[i][0], '('));
		else
			assert_string_equal(raw, sigs[i][0]);
	}
	/* Every prefix, every buffer: bounded, terminated. */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		size_t len = strlen(sigs[i][0]);

		for (size_t cut = 0; cut <= len; cut++) {
			char in[512], out[8];

			memcpy(in, sigs[i][0], cut);
			in[cut] = '\0';
			rasp_clr_signature_params(in, RASP_CLR_NS_NONE, out, sizeof(out));
			assert_true(strlen(out) < sizeof(out));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_types),	 cmocka_unit_test(test_malformed_unchanged),
	    cmocka_unit_test(test_cut_anywhere), cmocka_unit_test(test_depth_bound),
	    cmocka_unit_test(test_signatures),
	};

	return cmocka_run_group_tests_name("clr-names", tests, NULL, NULL);
}
