// librasp-malloc's operator new and delete, preloaded (CTest sets LD_PRELOAD): every form
// returns a block of rasp's heap of the family new or new[], aligned as asked; a request too
// large throws std::bad_alloc (after the new handler gives up) or, nothrow, returns nullptr
// (after the new handler gives up or throws).
// Exits 0 when all hold, 1 with the failed check named, 77 under a sanitizer.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "rasp/rasp.h"

static int failures;

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #c);       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static const char *family(void *p)
{
	const rasp_type_t *t = rasp_object_type(p); /* (its header before it: malloc/block.c) */

	return t ? rasp_type_name(t) : "(none)";
}

static int throwing_calls;
static void throwing_handler()
{
	throwing_calls++;
	throw std::bad_alloc();
}

struct alignas(64) Line {
	char b[64];
};

static int handler_calls;
static void handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); // gives up the next time: bad_alloc
}

int main()
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	std::puts("skipped: a preloaded malloc cannot run under ASan or TSan");
	return 77;
#endif
	int *one = new int(7);
	CHECK(std::strcmp(family(one), "new") == 0);
	CHECK(reinterpret_cast<uintptr_t>(one) % 16 == 0);
	delete one;

	int *arr = new int[100];
	CHECK(std::strcmp(family(arr), "new[]") == 0);
	delete[] arr;

	Line *l = new Line; // aligned new (64)
	CHECK(reinterpret_cast<uintptr_t>(l) % 64 == 0);
	CHECK(std::strcmp(family(l), "new") == 0);
	delete l;
	Line *la = new Line[10];
	CHECK(reinterpret_cast<uintptr_t>(la) % 64 == 0);
	CHECK(std::strcmp(family(la), "new[]") == 0);
	delete[] la;

	void *a4k = ::operator new(100, std::align_val_t(4096));
	CHECK(reinterpret_cast<uintptr_t>(a4k) % 4096 == 0);
	::operator delete(a4k, 100, std::align_val_t(4096));
	void *sized = ::operator new(48);
	::operator delete(sized, 48);
	void *nt = ::operator new(32, std::nothrow);
	CHECK(nt != nullptr);
	::operator delete(nt, std::nothrow);
	void *nta = ::operator new[](32, std::align_val_t(128), std::nothrow);
	CHECK(nta != nullptr && reinterpret_cast<uintptr_t>(nta) % 128 == 0);
	::operator delete[](nta, std::align_val_t(128), std::nothrow);

	// Too large: nothrow gives nullptr, the throwing form bad_alloc after the handler.
	const size_t huge = SIZE_MAX / 2;
	CHECK(::operator new(huge, std::nothrow) == nullptr);
	CHECK(::operator new[](huge, std::align_val_t(64), std::nothrow) == nullptr);
	bool thrown = false;
	std::set_new_handler(handler);
	try {
		void *p = ::operator new(huge);
		::operator delete(p);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	CHECK(thrown);
	CHECK(handler_calls == 1);
	thrown = false;
	try {
		void *p = ::operator new[](huge, std::align_val_t(256));
		::operator delete[](p);
	} catch (const std::bad_alloc &) {
		thrown = true;
	}
	CHECK(thrown);

	// nothrow with a new handler: the handler runs as for the throwing forms; nullptr once it
	// gives up (uninstalls itself) or throws std::bad_alloc, and the program goes on.
	handler_calls = 0;
	std::set_new_handler(handler);
	CHECK(::operator new(huge, std::nothrow) == nullptr);
	CHECK(handler_calls == 1);
	std::set_new_handler(throwing_handler);
	CHECK(::operator new[](huge, std::align_val_t(64), std::nothrow) == nullptr);
	CHECK(throwing_calls == 1);
	CHECK(::operator new[](huge, std::nothrow) == nullptr);
	CHECK(throwing_calls == 2);
	std::set_new_handler(nullptr);
	CHECK(::operator new(huge, std::align_val_t(64), std::nothrow) == nullptr);
	CHECK(throwing_calls == 2);

	std::vector<std::vector<int>> vv; // the library's everyday use
	for (int i = 0; i < 1000; i++)
		vv.emplace_back(static_cast<size_t>(i), i);
	CHECK(vv[999].size() == 999 && vv[999][998] == 999);

	return failures ? 1 : 0;
}
