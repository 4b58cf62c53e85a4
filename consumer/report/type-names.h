/* The rows' type names (type-names.c). */
#ifndef RASP_TYPE_NAMES_H
#define RASP_TYPE_NAMES_H

#include <stdbool.h>

#include "rows.h"

/* Whether types are named as C# writes them: not `raw`, and the trace is .NET's. */
bool rasp__rows_clr_names(const struct rasp_tally *t, bool raw);
/* out->type_names: each type's shown name (out->clr_names says which naming); converted
 * strings are kept in out->owned. 0 or -ENOMEM (what was made is freed with the rows). */
int rasp__rows_type_names(const struct rasp_tally *t, struct rasp_rows *out);

#endif
