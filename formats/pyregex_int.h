/* pyregex_int.h: what the pattern compiler (pyregex_compile.c) hands the matcher (pyregex.c):
 * the NFA program, its character sets, and the character model both sides read text with
 * (UTF-8 through base.h's hc__utf8_decode).
 * Internal to formats/pyregex*.c; callers use pyregex.h. */
#ifndef HC_PYREGEX_INT_H
#define HC_PYREGEX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
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

/* An ASCII word character, [0-9A-Za-z_]: what \b and \w test. */
static inline bool hc__pyre_is_word(uint32_t ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           ch == '_';
}

#endif
