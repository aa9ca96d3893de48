/* names.c: tables of named records -- the checkpoint's tensors, a container's entries, the
 * modules of a model, a header's keys -- sorted, searched and checked for a name given twice
 * by one set of functions, so every reader applies the same order and the same uniqueness
 * rule. */
#include <stdlib.h>
#include <string.h>

#include "base.h"

/* The name of the record at p: the table's records start with a `const char *name`. */
static const char *name_of(const void *p) { return *(const char *const *)p; }

static int cmp_name_key(const void *key, const void *elem) {
    return strcmp((const char *)key, name_of(elem));
}

const void *hc__find_by_name(const void *base, size_t n, size_t size, const char *name) {
    return n ? bsearch(name, base, n, size, cmp_name_key) : NULL;
}

int hc__cmp_name(const void *a, const void *b) { return strcmp(name_of(a), name_of(b)); }

hc_status hc__first_duplicate_name(const void *base, size_t n, size_t size, const char **dup,
                                  hc_err *err) {
    *dup = NULL;
    if (n < 2) return HC_OK;
    const char **v = malloc(n * sizeof *v); /* no overflow: n records of size >= a pointer */
    if (!v) return hc__fail(err, HC_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) v[i] = name_of((const char *)base + i * size);
    qsort(v, n, sizeof *v, hc__cmp_name);
    for (size_t i = 1; i < n && !*dup; i++)
        if (strcmp(v[i], v[i - 1]) == 0) *dup = v[i];
    free(v);
    return HC_OK;
}

int hc__cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
