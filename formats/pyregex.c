/* pyregex.c: Python re.match (start-anchored) for config target patterns, translated to POSIX
 * ERE. Constructs ERE lacks (lookaround, backreferences, lazy quantifiers) are refused. */
#include "pyregex.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool translate(const char *p, char *out, size_t cap, char *msg, unsigned msg_len) {
    size_t o = 0;
#define PUT(s)                                               \
    do {                                                     \
        size_t l_ = strlen(s);                               \
        if (o + l_ + 1 >= cap) goto too_long;                \
        memcpy(out + o, s, l_);                              \
        o += l_;                                             \
    } while (0)
    PUT("^(");
    for (size_t i = 0; p[i]; i++) {
        char c = p[i];
        if (c == '\\' && p[i + 1]) {
            char n = p[++i];
            if (n == 'd') PUT("[0-9]");
            else if (n == 'D') PUT("[^0-9]");
            else if (n == 'w') PUT("[A-Za-z0-9_]");
            else if (n == 'W') PUT("[^A-Za-z0-9_]");
            else if (n == 's') PUT("[[:space:]]");
            else if (n >= '1' && n <= '9') {
                snprintf(msg, msg_len, "backreference '\\%c'", n);
                return false;
            } else {
                char esc[3] = {'\\', n, 0};
                PUT(esc);
            }
        } else if (c == '(' && p[i + 1] == '?') {
            if (p[i + 2] == ':') {
                PUT("(");
                i += 2;
            } else {
                snprintf(msg, msg_len, "group construct '(?%c'", p[i + 2] ? p[i + 2] : ' ');
                return false;
            }
        } else if ((c == '*' || c == '+' || c == '?' || c == '}') && p[i + 1] == '?') {
            snprintf(msg, msg_len, "lazy quantifier '%c?'", c);
            return false;
        } else {
            char s[2] = {c, 0};
            PUT(s);
        }
    }
    PUT(")");
    out[o] = 0;
    return true;
too_long:
    snprintf(msg, msg_len, "pattern too long");
    return false;
#undef PUT
}

int hc_pyre_match(const char *pattern, const char *text, char *msg, unsigned msg_len) {
    char ere[2048];
    if (!translate(pattern, ere, sizeof ere, msg, msg_len)) return -1;
    regex_t re;
    int rc = regcomp(&re, ere, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char e[128];
        regerror(rc, &re, e, sizeof e);
        snprintf(msg, msg_len, "%s", e);
        return -1;
    }
    int m = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}
