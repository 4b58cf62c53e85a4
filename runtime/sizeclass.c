/* Size classes (jemalloc's spacing, eight per doubling): object sizes 16..64 by 8, then each
 * doubling [2^e, 2^(e+1)] cut into eight steps of 2^(e-3), up to RASP__SMALL_MAX_Z (84992,
 * the last class cut short so no small object reports a large ObjectSize). A class holds
 * objects larger than the class below it, so the waste of an object past 64 bytes is below
 * 2^(e-3) / 2^e = 1/8 of its size. Every small size finds its class by table (one load, on
 * the fast path; rasp__class_of). The tables are filled when librasp is loaded. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

uintptr_t rasp__class_size[RASP__NCLASS];
uint8_t rasp__table_class[RASP__TABLE_MAX / 8 + 1];
uint16_t rasp__table_hot[RASP__TABLE_MAX / 8 + 1];
uint8_t rasp__class_span[RASP__NCLASS];
uint64_t rasp__class_div[RASP__NCLASS];

unsigned rasp__class_of(size_t z)
{
	return z <= RASP__TABLE_MAX ? rasp__table_class[(z + 7) >> 3] : 0;
}

/* Slots per page: the fewest (1, 2, 4, 8 or 16) whose tail past the last whole block is at
 * most 1/8 of the page and which hold at least 8 blocks, so a page's waste stays within the
 * class's bound and a window holds several objects. */
static uint8_t span_for(size_t b)
{
	unsigned s;

	for (s = 1; s < 16; s *= 2) {
		size_t page = s * RASP__SLOT_SIZE;

		if (page / b >= 8 && page % b <= page / 8)
			break;
	}
	return (uint8_t)s;
}

static void init_tables(void)
{
	unsigned n = 1, e;
	size_t z;

	rasp__class_size[0] = UINTPTR_MAX;
	for (z = RASP_MIN_OBJECT_SIZE; z <= 64; z += 8)
		rasp__class_size[n++] = z;
	for (e = 6; n < RASP__NCLASS; e++) {
		for (unsigned i = 1; i <= 8 && n < RASP__NCLASS; i++) {
			z = ((size_t)1 << e) + i * ((size_t)1 << (e - 3));
			if (z > RASP__SMALL_MAX_Z)
				z = RASP__SMALL_MAX_Z;
			rasp__class_size[n++] = z;
		}
	}
	if (rasp__class_size[RASP__NCLASS - 1] != RASP__SMALL_MAX_Z ||
	    rasp__class_size[RASP__NCLASS - 2] >= RASP__SMALL_MAX_Z) {
		fprintf(stderr, "rasp: size class tables are inconsistent\n");
		abort();
	}
	n = 1; /* the smallest class that holds z, found as z grows */
	for (z = 0; z <= RASP__TABLE_MAX; z += 8) {
		unsigned c = 0;

		if (z >= RASP_MIN_OBJECT_SIZE) {
			while (rasp__class_size[n] < z)
				n++;
			c = n;
		}
		rasp__table_class[z >> 3] = (uint8_t)c;
		rasp__table_hot[z >> 3] = (uint16_t)(c * sizeof(struct rasp__hot));
	}
	for (n = 1; n < RASP__NCLASS; n++) {
		rasp__class_span[n] = span_for(rasp__class_size[n]);
		rasp__class_div[n] = UINT64_MAX / rasp__class_size[n] + 1;
	}
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

void rasp__classes_init(void)
{
	pthread_once(&once, init_tables);
}

/* At load time, so that code asking for a class before any heap exists (the object size
 * helpers) reads filled tables. */
__attribute__((constructor)) static void classes_at_load(void)
{
	rasp__classes_init();
}
