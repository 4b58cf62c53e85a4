/* What the runtime takes from the compiler and the machine: branch hints and inlining
 * attributes, the build's flavours (AddressSanitizer's poisoning, ThreadSanitizer, debug
 * checks), and the words one thread writes and others read, updated with one instruction on
 * memory on x86-64. Nothing here is installed or exported. */
#ifndef RASP_RUNTIME_PLATFORM_H
#define RASP_RUNTIME_PLATFORM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RASP__LIKELY(x)	  __builtin_expect(!!(x), 1)
#define RASP__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RASP__NOINLINE	  __attribute__((noinline, cold))
/* Out of line but not cold: a path that runs every few allocations (the fast path's miss),
 * compiled for speed. `cold` compiles for size, and GCC then left the static inline helpers
 * it calls (the state check) as calls. */
#define RASP__OUTLINE __attribute__((noinline))

/* ASan builds poison the payload of freed objects, so a use after rasp_free is reported;
 * a block is unpoisoned when it is handed out again, and memory before it goes to the OS.
 * GCC says ASan with __SANITIZE_ADDRESS__, clang with __has_feature (clang 14 does not define
 * the former: without the second test, its builds, the fuzz targets', would poison nothing). */
#if defined(__SANITIZE_ADDRESS__)
#define RASP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RASP__ASAN 1
#endif
#endif
#ifdef RASP__ASAN
#include <sanitizer/asan_interface.h>
#define RASP__POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define RASP__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RASP__POISON(p, n)   ((void)(p), (void)(n))
#define RASP__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ThreadSanitizer builds: the owner's counters below keep their C11 atomics, which TSan sees
 * (stack.c also keeps glibc's unwinder there). */
#if defined(__SANITIZE_THREAD__)
#define RASP__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RASP__TSAN 1
#endif
#endif

/* Debug builds (no NDEBUG) check the concurrency contract and frees. */
#ifndef NDEBUG
#define RASP__DEBUG 1
#else
#define RASP__DEBUG 0
#endif

/* Words one thread writes and others read (relaxed): a page's count of blocks out, a
 * context's sample count. The writer's read-modify-write is one instruction on
 * memory on x86-64, which a relaxed load and store cannot be compiled to (gcc keeps them
 * apart: 2 instructions more each, on the owner's free). An aligned word's store is atomic
 * there and the writer is alone, so a reader sees the old value or the new, as with the
 * atomics. Elsewhere, and under TSan (which must see the accesses), the atomics. */
#if defined(__x86_64__) && !defined(RASP__TSAN)
#define RASP__OWNER_ASM 1
#endif

static inline void rasp__owner_add64(_Atomic uint64_t *p, uint64_t v)
{
#ifdef RASP__OWNER_ASM
	__asm__("addq %1, %0" : "+m"(*(uint64_t *)p) : "er"(v));
#else
	atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + v,
			      memory_order_relaxed);
#endif
}

/* One less in the owner's count *p (a word no other thread reads); true when it is 0 or
 * below after. On x86-64 a subtraction on memory and the flags' `le` (the old value at most
 * 1), two instructions where gcc compiled `--*p <= 0` to five; `== 0` would take two as
 * well, but a count can pass 0 without a test (the free cache's pushes, after a collect or
 * a redraw lowered the list; tested for 0, the flush would never come: 99 pages of 99
 * kept, test_random_frees_leave_few_pages). */
static inline bool rasp__owner_dec_le0(int32_t *p)
{
#if defined(__x86_64__)
	bool le;

	__asm__("subl $1, %0" : "+m"(*p), "=@ccle"(le));
	return le;
#else
	return --*p <= 0;
#endif
}

/* One less in the owner's word *p; true when it is 0 after. */
static inline bool rasp__owner_dec32(_Atomic uint32_t *p)
{
#ifdef RASP__OWNER_ASM
	bool zero;

	__asm__("subl $1, %0" : "+m"(*(uint32_t *)p), "=@ccz"(zero));
	return zero;
#else
	uint32_t v = atomic_load_explicit(p, memory_order_relaxed) - 1;

	atomic_store_explicit(p, v, memory_order_relaxed);
	return v == 0;
#endif
}

static inline uint64_t rasp__relaxed_load32(_Atomic uint32_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

#endif /* RASP_RUNTIME_PLATFORM_H */
