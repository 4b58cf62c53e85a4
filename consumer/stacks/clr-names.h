/* .NET names as C# writes them. The runtime names a type in its own form
 * (System.Collections.Generic.List`1[System.String], Outer+Inner, Int32[,]) in
 * AllocationSampled's TypeName and in the MethodNamespace of its method events, and a method's
 * parameters in ILAsm's (MethodSignature: "instance void  (class System.String,int32)");
 * these functions write them as a C# developer reads them: List<string>, Outer.Inner, int[,],
 * (string, int). Pure functions of their input: no allocation, no state, linear in the input,
 * recursion bounded; what they cannot parse comes back unchanged. */
#ifndef RASP_CONSUMER_CLR_NAMES_H
#define RASP_CONSUMER_CLR_NAMES_H

#include <stddef.h>

/* Which namespaces a C# name keeps: none (List<Dictionary<string, int>>), the outermost
 * type's (System.Collections.Generic.List<Dictionary<string, int>>), or all. */
enum rasp_clr_ns {
	RASP_CLR_NS_NONE,
	RASP_CLR_NS_OUTER,
	RASP_CLR_NS_ALL,
};

/* Type name `in`, in the runtime's form, as C# writes it, into out (cap bytes, as snprintf:
 * cut to fit and NUL-terminated when cap > 0). Generic arguments in angle brackets after the
 * type that declares them (Outer`1+Inner`1[A,B] is Outer<A>.Inner<B>), nested types joined
 * by '.', the keyword aliases (string, int, object, ...), Nullable`1[T] as T?, ValueTuple`2..7
 * as (A, B), arrays ([], [,]), pointers, and assembly-qualified arguments without their
 * assembly. A name whose arguments outnumber the generic parameters it names is a nested type
 * whose enclosing generic types the runtime left out (AllocationSampled names
 * Dictionary`2+Entry "Entry[K,V]"): the extra arguments go to the first type named,
 * Entry<K, V>. Returns the length of the whole result (not counting the NUL); a name that is
 * not in the runtime's form (unbalanced brackets, more than RASP_CLR_MAX_DEPTH levels of
 * arguments, fewer arguments than parameters) is copied unchanged. */
size_t rasp_clr_type_name(const char *in, enum rasp_clr_ns ns, char *out, size_t cap);

/* The parameters of an ILAsm method signature ("instance bool  (!0,class System.String&)")
 * as C# writes them, "(T0, ref string)": !N is the type's parameter TN, !!N the method's MN,
 * types named with ns. A signature without a parameter list in parentheses is copied
 * unchanged; a parameter that does not parse is copied as it is. Same return as above. */
size_t rasp_clr_signature_params(const char *sig, enum rasp_clr_ns ns, char *out, size_t cap);

/* The parameters as they are ("(!0,class System.String&)"): the runtime's form. */
size_t rasp_clr_signature_params_raw(const char *sig, char *out, size_t cap);

/* Levels of generic arguments inside one another that a name may have. */
#define RASP_CLR_MAX_DEPTH 32

#endif /* RASP_CONSUMER_CLR_NAMES_H */
