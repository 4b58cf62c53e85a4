// The generated headers compile as C++ too: the event API and metadata (for C++ runtimes),
// and the tracepoint provider header, for C++ code that places its own call sites.
#include "rasp-tp-DotNETRuntime.h"
#define RASP_HEADER_TEST_NAME "events-header-cxx"
#include "test-events-header.c"
