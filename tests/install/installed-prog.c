/* Built against the installed headers and library only (pkg-config rasp): allocates known
 * objects on a rasp heap, by the call and by rasp/inline.h's path. Run under a session with
 * no extra environment, its samples must reach the trace: librasp loads the installed LTTng
 * provider from its own directory. */
#include <stdio.h>
#include <unistd.h>

#include <rasp/event-meta.h>
#include <rasp/events.h>
#include <rasp/inline.h>
#include <rasp/rasp.h>

int main(void)
{
	rasp_heap_t *h;
	const rasp_type_t *t;
	rasp_heap_stats_t st;
	int rc = rasp_heap_create(&h, NULL);

	if (rc) {
		fprintf(stderr, "installed-prog: %s\n", rasp_strerror(rc));
		return 1;
	}
	t = rasp_type_register(h, "Installed.Object");
	for (int i = 0; i < 200000; i++) /* the call, then rasp/inline.h's path */
		rasp_free(h, i % 2 ? rasp_alloc_inline(h, t, 64) : rasp_alloc(h, t, 64, 0));
	rasp_heap_stats(h, &st);
	printf("samples=%llu pid=%ld provider=%s event=%s\n", (unsigned long long)st.samples,
	       (long)getpid(),
	       rasp_events_provider_loaded() ? "loaded" : rasp_events_provider_error(),
	       RASP_EVENT_DOTNETRUNTIME_ALLOCATIONSAMPLED_LTTNG);
	rasp_heap_destroy(h);
	return 0;
}
