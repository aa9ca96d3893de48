/* pyregex_int.h: what the pattern compiler (pyregex_compile.c) hands the matcher (pyregex.c):
 * the NFA program, its character sets, and the character model both sides read text with.
 * Internal to formats/pyregex*.c; callers use pyregex.h. */
#ifndef HC_PYREGEX_INT_H
#define HC_PYREGEX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyregex.h"

typedef enum { A_BEGIN, A_DOLLAR, A_END, A_WORDB } assert_kind;

/* A character set: ASCII members as bits. `unicode` marks a \d \w \s (or negation) inside, whose
 * membership for a non-ASCII character needs Unicode tables pyregex does not carry. */
typedef struct {
    uint8_t ascii[16];
    bool negated, unicode;
} cset;

typedef enum { I_CHAR, I_ANY, I_SET, I_ASSERT, I_SPLIT, I_JMP, I_MATCH } op;
typedef struct {
    op op;
    uint32_t x; /* CHAR: code point; SET: set index; ASSERT: kind; SPLIT, JMP: target */
    uint32_t y; /* SPLIT: second target */
} inst;

/* The compiled program: what a run needs of the compiler's state, and its DFA cache. */
struct hc_pyre {
    inst *prog;
    cset *sets;
    uint32_t n_prog;
    struct pyre_dfa *d; /* made on the first run (pyregex.c) */
};

/* One UTF-8 character of s[0..n): its length, or 0 when the bytes are not valid UTF-8. */
static inline size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len = 0;
    if (s[0] < 0x80) len = 1;
    else if (s[0] >= 0xc2 && s[0] < 0xe0) len = 2;
    else if (s[0] >= 0xe0 && s[0] < 0xf0) len = 3;
    else if (s[0] >= 0xf0 && s[0] < 0xf5) len = 4;
    if (!len || len > n) return 0;
    uint32_t v = len == 1 ? s[0] : s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min_cp[len] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) return 0;
    *cp = v;
    return len;
}

static inline bool is_word(uint32_t ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           ch == '_';
}

#endif
