/* pyregex.h: the subset of Python `re.match` that quantization configs use, on POSIX
 * extended regexes: anchored at the start; \d \w \s and (?: ) translated. */
#ifndef HC_PYREGEX_H
#define HC_PYREGEX_H

#include <stdbool.h>

/* Returns 1 on match, 0 on no match, -1 when the pattern is not supported (msg filled). */
int hc_pyre_match(const char *pattern, const char *text, char *msg, unsigned msg_len);

#endif
