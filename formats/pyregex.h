/* pyregex.h: Python `re.match` (anchored at the start only) for the module-name patterns of
 * quantization configs, in time linear in pattern x text; docs/regex.md gives the subset. */
#ifndef HC_PYREGEX_H
#define HC_PYREGEX_H

#include <stdbool.h>

/* Returns 1 on match, 0 on no match, -1 when the pattern is not supported, is past a bound
 * (1024 bytes, 32 nested groups, 4096 NFA states), or the answer needs Unicode classes on a
 * non-ASCII name (msg filled, when msg_len > 0, with the construct or the bound). */
int hc_pyre_match(const char *pattern, const char *text, char *msg, unsigned msg_len);

#endif
