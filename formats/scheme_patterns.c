/* scheme_patterns.c: module names matched against a config's patterns (compressed-tensors
 * "re:" targets and ignore entries, GPTQ dynamic keys), compiled once per entry and kept
 * within a memory bound, all runs of one model open charged to one budget (docs/regex.md). */
#include <stdlib.h>

#include "scheme_int.h"

/* Compiled patterns kept for reuse, in bytes (program and DFA cache, hc__pyre_footprint); past
 * it a pattern is compiled on each use, still charged to the budget, so memory stays bounded. */
#define RETAIN_BYTES ((size_t)64 << 20)

bool hc__pat_list_init(pat_list *pl, const cJSON *list) {
    int n = cJSON_IsArray(list) || cJSON_IsObject(list) ? cJSON_GetArraySize(list) : 0;
    pl->n = n > 0 ? (size_t)n : 0;
    pl->re = calloc(pl->n ? pl->n : 1, sizeof *pl->re);
    return pl->re != NULL;
}

void hc__pat_list_free(pat_list *pl) {
    for (size_t i = 0; pl->re && i < pl->n; i++) hc__pyre_free(pl->re[i]);
    free(pl->re);
    pl->re = NULL;
}

int hc__pat_run(re_work *w, pat_list *pl, size_t j, const char *pattern, const char *name,
                char *msg, unsigned msg_len) {
    hc_pyre *re = j < pl->n ? pl->re[j] : NULL, *fresh = NULL;
    if (!re) {
        if (!(re = fresh = hc__pyre_compile(pattern, msg, msg_len))) return -1;
        uint64_t st = hc__pyre_states(re);
        w->budget = w->budget > st ? w->budget - st : 0; /* at 0 the run below reports it */
        size_t bytes = hc__pyre_footprint(re);
        if (j < pl->n && bytes <= RETAIN_BYTES - w->retained) {
            pl->re[j] = re, fresh = NULL;
            w->retained += bytes;
        }
    }
    int r = hc__pyre_exec(re, name, &w->budget, msg, msg_len);
    hc__pyre_free(fresh);
    return r;
}

void hc__pattern_finding(hc_findings *f, const char *rule, const char *field, const char *entry,
                         const char *pattern, int r, const char *msg) {
    if (r == HC_PYRE_OVER_BUDGET)
        hc__findings_add(f, HC_SEV_ERROR, entry, "regex work", 0, NULL, 0,
                        "%s: matching module names against the patterns ran past the bound of "
                        "%llu NFA state visits for one checkpoint, at %s '%s' (docs/regex.md)",
                        field, (unsigned long long)HC_REGEX_BUDGET, entry, pattern);
    else
        hc__findings_add(f, HC_SEV_ERROR, entry, rule, 0, NULL, 0,
                        "%s: pattern '%s' is not supported: %s", entry, pattern, msg);
}
