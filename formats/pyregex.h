/* pyregex.h: Python `re.match` (anchored at the start only) for the module-name patterns of
 * quantization configs, in time linear in pattern x text; docs/regex.md gives the subset. */
#ifndef HC_PYREGEX_H
#define HC_PYREGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A compiled pattern: compile each pattern of a config once, then run it on every module name
 * (compiling per name cost modules x patterns x 4096 states of compile work). */
typedef struct hc_pyre hc_pyre;

/* NULL when the pattern is not supported or is past a bound (1024 bytes, 32 nested groups,
 * 4096 NFA states; msg filled, when msg_len > 0, with the construct or the bound). */
hc_pyre *hc__pyre_compile(const char *pattern, char *msg, unsigned msg_len);

/* The NFA states of re (the work of compiling it, and the most one text position can visit). */
uint32_t hc__pyre_states(const hc_pyre *re);

/* Bytes re may hold at most, its DFA cache (grown by runs) included: for callers that keep
 * many compiled patterns. */
size_t hc__pyre_footprint(const hc_pyre *re);

/* Runs re on text. 1 match, 0 no match, -1 the answer needs Unicode classes on a non-ASCII
 * name, HC_PYRE_OVER_BUDGET when *budget NFA state visits were spent first (budget NULL: no
 * bound beyond states x text). *budget is decreased by the visits made: each NFA state a step
 * walks, or one for a step the DFA cache of re already holds (so re is not const: one thread
 * at a time). */
#define HC_PYRE_OVER_BUDGET (-2)
int hc__pyre_exec(hc_pyre *re, const char *text, uint64_t *budget, char *msg, unsigned msg_len);

void hc__pyre_free(hc_pyre *re);

/* Compile and run once: 1 match, 0 no match, -1 refused (hc__pyre_compile's or hc__pyre_exec's
 * message). */
int hc__pyre_match(const char *pattern, const char *text, char *msg, unsigned msg_len);

#endif
