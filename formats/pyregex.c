/* pyregex.c: Python re.match for the module-name patterns of quantization configs, as a
 * Thompson NFA run by state-set simulation: a hostile pattern costs states x text, never the
 * exponential time of a backtracking matcher (glibc's regexec hung on `(a*)*...b`). Patterns
 * are compiled once and their steps cached (a lazy DFA), and a caller's budget of state
 * visits bounds the work of many runs (one checkpoint's modules x patterns).
 * docs/regex.md lists the subset, the bounds and where the result follows Python exactly. */
#include "pyregex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bounds: pattern bytes, group nesting, NFA states (counted repetition copies its operand,
 * so `(a{100}){100}` needs 10,000); the compile work is bounded by the states too. */
enum { MAX_PATTERN = 1024, MAX_DEPTH = 32, MAX_STATES = 4096, MAX_WORK = 4 * MAX_STATES };

#define REP_INF UINT32_MAX   /* no upper count */
#define CP_NONE UINT32_MAX   /* no character (before the start, past the end) */

typedef enum { N_CHAR, N_ANY, N_CLASS, N_ASSERT, N_CAT, N_ALT, N_REP } node_kind;
typedef enum { A_BEGIN, A_DOLLAR, A_END, A_WORDB } assert_kind;

/* Parse tree: a node's children are a list (kid .. last, linked by next); -1 ends it. */
typedef struct {
    node_kind kind;
    uint32_t a, b; /* CHAR: code point; CLASS: class index; ASSERT: kind; REP: min, max */
    int kid, last, next;
} node;

/* A character set: ASCII members as bits. `unicode` marks a \d \w \s (or negation) inside, whose
 * membership for a non-ASCII character needs Unicode tables this file does not carry. */
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

typedef struct {
    const unsigned char *p;
    size_t len, pos;
    int depth;
    node *nodes;
    int n_nodes, cap_nodes;
    cset *sets;
    int n_sets, cap_sets;
    size_t *names; /* named groups: offset, length pairs (duplicates are refused as in Python) */
    int n_names, cap_names;
    inst *prog;
    uint32_t n_prog;
    int work;
    char *msg;
    unsigned msg_len;
} re_c;

static int fail(re_c *c, const char *fmt, ...) {
    if (c->msg && c->msg_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, c->msg_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* One UTF-8 character of s[0..n): its length, or 0 when the bytes are not valid UTF-8. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
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

/* ---------------- parser: Python's syntax, refusing what this file cannot match ---------- */

static int new_node(re_c *c, node_kind kind, uint32_t a, uint32_t b) {
    if (c->n_nodes >= c->cap_nodes) return fail(c, "pattern has too many parts");
    c->nodes[c->n_nodes] = (node){kind, a, b, -1, -1, -1};
    return c->n_nodes++;
}

static void add_kid(re_c *c, int parent, int kid) {
    node *p = &c->nodes[parent];
    if (p->last < 0) p->kid = kid;
    else c->nodes[p->last].next = kid;
    p->last = kid;
}

static int new_set(re_c *c, bool negated) {
    if (c->n_sets >= c->cap_sets) return fail(c, "pattern has too many character sets");
    c->sets[c->n_sets] = (cset){{0}, negated, false};
    return c->n_sets++;
}

static void set_range(cset *s, uint32_t lo, uint32_t hi) {
    for (uint32_t ch = lo; ch <= hi && ch < 128; ch++)
        s->ascii[ch >> 3] |= (uint8_t)(1u << (ch & 7));
}

static bool is_word(uint32_t ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           ch == '_';
}

/* \d \w \s and their negations, ASCII part; Python's space set is [ \t\n\r\f\v] plus \x1c-\x1f. */
static void set_shorthand(cset *s, char k) {
    char lower = (char)(k | 0x20);
    for (uint32_t ch = 0; ch < 128; ch++) {
        bool space = ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f);
        bool in = lower == 'd' ? ch >= '0' && ch <= '9' : lower == 'w' ? is_word(ch) : space;
        if (in != (k != lower)) set_range(s, ch, ch);
    }
    s->unicode = true;
}

static bool is_shorthand(int k) { return k && strchr("dDwWsS", k); }

static int hex_digit(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch |= 0x20;
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* A one-character escape both inside and outside sets (\n, \x41, \., ...) after the backslash at
 * c->pos - 1: the code point, or -1 (refused) after filling msg. `\b` is handled by callers; a
 * digit is a backreference outside a set and an octal escape inside one. */
static int64_t char_escape(re_c *c, bool in_set) {
    size_t at = c->pos - 1;
    if (c->pos >= c->len) return fail(c, "bad escape (end of pattern) at offset %zu", at);
    int k = c->p[c->pos];
    const char *ctl = strchr("afnrtv", k);
    if (k && ctl) return c->pos++, "\a\f\n\r\t\v"[ctl - "afnrtv"];
    if (k == 'x') {
        int h = c->pos + 2 < c->len ? hex_digit(c->p[c->pos + 1]) : -1;
        int l = h >= 0 ? hex_digit(c->p[c->pos + 2]) : -1;
        if (l < 0) return fail(c, "incomplete escape '\\x' at offset %zu", at);
        c->pos += 3;
        return h * 16 + l;
    }
    if (k >= '1' && k <= '9' && !in_set)
        return fail(c, "backreference '\\%c' at offset %zu", k, at);
    if (k >= '0' && k <= '9') return fail(c, "octal escape '\\%c' at offset %zu", k, at);
    if ((k | 0x20) >= 'a' && (k | 0x20) <= 'z')
        return fail(c, "escape '\\%c' at offset %zu", k, at);
    uint32_t cp = 0;
    size_t n = utf8_decode(c->p + c->pos, c->len - c->pos, &cp);
    if (!n) return fail(c, "pattern is not valid UTF-8 at offset %zu", c->pos);
    c->pos += n;
    return cp;
}

/* One member of a set at c->pos: a code point (*cp) or a shorthand (*shorthand, a letter). */
static int set_item(re_c *c, uint32_t *cp, char *shorthand) {
    size_t at = c->pos;
    *shorthand = 0;
    int64_t v;
    if (c->p[at] == '\\' && at + 1 < c->len && is_shorthand(c->p[at + 1])) {
        *shorthand = (char)c->p[at + 1];
        c->pos += 2;
        return 0;
    }
    if (c->p[at] == '\\' && at + 1 < c->len && c->p[at + 1] == 'b') {
        v = '\b';
        c->pos += 2;
    } else if (c->p[at] == '\\') {
        c->pos++;
        v = char_escape(c, true);
    } else {
        size_t n = utf8_decode(c->p + at, c->len - at, cp);
        if (!n) return fail(c, "pattern is not valid UTF-8 at offset %zu", at);
        c->pos += n;
        v = *cp;
    }
    if (v < 0) return -1;
    if (v >= 128) return fail(c, "non-ASCII character in a character set at offset %zu", at);
    *cp = (uint32_t)v;
    return 0;
}

/* [...] after the '[' at c->pos - 1, as Python reads it: a ']' first is a member, '-' first or
 * last is a member, a range needs two single characters in order. */
static int parse_set(re_c *c) {
    size_t open = c->pos - 1;
    bool negated = c->pos < c->len && c->p[c->pos] == '^';
    c->pos += negated;
    int si = new_set(c, negated);
    if (si < 0) return -1;
    for (bool first = true;; first = false) {
        if (c->pos >= c->len) return fail(c, "unterminated character set at offset %zu", open);
        if (c->p[c->pos] == ']' && !first) {
            c->pos++;
            break;
        }
        size_t at = c->pos;
        uint32_t lo = 0, hi = 0;
        char s1, s2 = 0;
        if (set_item(c, &lo, &s1) < 0) return -1;
        bool range = c->pos + 1 < c->len && c->p[c->pos] == '-' && c->p[c->pos + 1] != ']';
        if (range) {
            c->pos++;
            if (set_item(c, &hi, &s2) < 0) return -1;
            if (s1 || s2 || hi < lo)
                return fail(c, "bad character range at offset %zu", at);
        }
        if (s1) set_shorthand(&c->sets[si], s1);
        else set_range(&c->sets[si], lo, range ? hi : lo);
    }
    return new_node(c, N_CLASS, (uint32_t)si, 0);
}

static int parse_alt(re_c *c);

/* (?P<name>...): the name must be an ASCII identifier not used before. */
static int group_name(re_c *c) {
    size_t at = c->pos - 1, start = c->pos += 3, n = 0;
    while (c->pos < c->len && is_word(c->p[c->pos])) c->pos++;
    n = c->pos - start;
    if (c->pos >= c->len || c->p[c->pos] != '>' || !n || (c->p[start] >= '0' && c->p[start] <= '9'))
        return fail(c, "bad group name at offset %zu (an ASCII identifier is needed)", at);
    for (int i = 0; i < c->n_names; i++)
        if (c->names[2 * i + 1] == n && !memcmp(c->p + c->names[2 * i], c->p + start, n))
            return fail(c, "group name '%.*s' is defined twice", (int)n,
                        (const char *)c->p + start);
    if (c->n_names >= c->cap_names) return fail(c, "pattern has too many group names");
    c->names[2 * c->n_names] = start;
    c->names[2 * c->n_names++ + 1] = n;
    c->pos++;
    return 0;
}

/* After "(?" at c->pos - 1: (?: and (?P<name> open a plain group; every other extension is
 * refused by name. */
static int group_extension(re_c *c) {
    size_t at = c->pos - 1;
    const unsigned char *q = c->p + c->pos + 1;
    size_t left = c->len - c->pos - 1;
    if (left >= 1 && q[0] == ':') return c->pos += 2, 0;
    if (left >= 2 && q[0] == 'P' && q[1] == '<') return group_name(c);
    if (left >= 2 && q[0] == 'P' && q[1] == '=')
        return fail(c, "named backreference '(?P=' at offset %zu", at);
    if (left >= 1 && (q[0] == '=' || q[0] == '!'))
        return fail(c, "lookahead '(?%c' at offset %zu", q[0], at);
    if (left >= 2 && q[0] == '<' && (q[1] == '=' || q[1] == '!'))
        return fail(c, "lookbehind '(?<%c' at offset %zu", q[1], at);
    if (left >= 1 && q[0] == '>') return fail(c, "atomic group '(?>' at offset %zu", at);
    if (left >= 1 && q[0] == '#') return fail(c, "comment '(?#' at offset %zu", at);
    if (left >= 1 && q[0] == '(') return fail(c, "conditional '(?(' at offset %zu", at);
    if (left >= 1 && (q[0] == '-' || strchr("aiLmsux", q[0])) && q[0])
        return fail(c, "inline flag '(?%c' at offset %zu", q[0], at);
    bool shown = left && q[0] > ' ' && q[0] < 0x7f; /* the message stays printable ASCII */
    return fail(c, "group construct '(?%.1s' at offset %zu", shown ? (const char *)q : "", at);
}

static int parse_group(re_c *c) {
    size_t open = c->pos++;
    if (++c->depth > MAX_DEPTH)
        return fail(c, "groups nest deeper than the bound of %d at offset %zu", MAX_DEPTH, open);
    if (c->pos < c->len && c->p[c->pos] == '?' && group_extension(c) < 0) return -1;
    int n = parse_alt(c);
    if (n < 0) return -1;
    if (c->pos >= c->len) return fail(c, "missing ')' for the group at offset %zu", open);
    c->pos++;
    c->depth--;
    return n;
}

/* \A \Z \b \d ... or a one-character escape outside a set; *is_assert marks the anchors. */
static int parse_escape(re_c *c, bool *is_assert) {
    int k = c->pos + 1 < c->len ? c->p[c->pos + 1] : 0;
    const char *an = k ? strchr("AZb", k) : NULL;
    if (an) {
        c->pos += 2;
        *is_assert = true;
        static const assert_kind kinds[] = {A_BEGIN, A_END, A_WORDB};
        return new_node(c, N_ASSERT, kinds[an - "AZb"], 0);
    }
    if (k == 'B') return fail(c, "'\\B' at offset %zu (only \\b is supported)", c->pos);
    if (is_shorthand(k)) {
        int si = new_set(c, false);
        if (si < 0) return -1;
        set_shorthand(&c->sets[si], (char)k);
        c->pos += 2;
        return new_node(c, N_CLASS, (uint32_t)si, 0);
    }
    c->pos++;
    int64_t v = char_escape(c, false);
    return v < 0 ? -1 : new_node(c, N_CHAR, (uint32_t)v, 0);
}

static int parse_atom(re_c *c, bool *is_assert) {
    unsigned char ch = c->p[c->pos];
    *is_assert = false;
    switch (ch) {
    case '(': return parse_group(c);
    case '[': c->pos++; return parse_set(c);
    case '.': c->pos++; return new_node(c, N_ANY, 0, 0);
    case '\\': return parse_escape(c, is_assert);
    case '^':
    case '$':
        c->pos++;
        *is_assert = true;
        return new_node(c, N_ASSERT, ch == '^' ? A_BEGIN : A_DOLLAR, 0);
    default: {
        uint32_t cp = 0;
        size_t n = utf8_decode(c->p + c->pos, c->len - c->pos, &cp);
        if (!n) return fail(c, "pattern is not valid UTF-8 at offset %zu", c->pos);
        c->pos += n;
        return new_node(c, N_CHAR, cp, 0);
    }
    }
}

/* Decimal digits of a {m,n} count, saturating (Python refuses 2^32 - 1 and more). */
static uint32_t count_digits(re_c *c, bool *any) {
    uint64_t v = 0;
    *any = false;
    for (; c->pos < c->len && c->p[c->pos] >= '0' && c->p[c->pos] <= '9'; c->pos++) {
        v = v * 10 + (uint64_t)(c->p[c->pos] - '0');
        if (v > UINT32_MAX) v = UINT32_MAX;
        *any = true;
    }
    return (uint32_t)v;
}

/* A quantifier at c->pos: 1 (bounds set, a lazy '?' taken), 0 when there is none (a '{' that
 * does not close a count is a literal, as in Python), -1 refused. */
static int parse_quant(re_c *c, uint32_t *min, uint32_t *max) {
    size_t at = c->pos;
    unsigned char ch = c->p[at];
    if (ch == '*' || ch == '+' || ch == '?') {
        *min = ch == '+';
        *max = ch == '?' ? 1 : REP_INF;
        c->pos++;
    } else if (ch == '{') {
        bool has_lo, has_hi = false;
        c->pos++;
        *min = count_digits(c, &has_lo);
        *max = *min;
        if (c->pos < c->len && c->p[c->pos] == ',') {
            c->pos++;
            *max = count_digits(c, &has_hi);
            if (!has_hi) *max = REP_INF;
        }
        if (c->pos >= c->len || c->p[c->pos] != '}' || c->pos == at + 1) {
            c->pos = at;
            return 0;
        }
        c->pos++;
        if (*min == UINT32_MAX || (*max == UINT32_MAX && has_hi))
            return fail(c, "repetition count too large at offset %zu", at);
        if (!has_lo) *min = 0;
        if (*max < *min) return fail(c, "min repeat greater than max repeat at offset %zu", at);
    } else {
        return 0;
    }
    if (c->pos < c->len && c->p[c->pos] == '+')
        return fail(c, "possessive quantifier at offset %zu", at);
    if (c->pos < c->len && c->p[c->pos] == '?') c->pos++; /* lazy: the same set of matches */
    return 1;
}

/* A sequence up to '|' or ')'. A quantifier applies to the item before it; Python refuses one
 * after nothing or an anchor ("nothing to repeat") or after another ("multiple repeat"). */
static int parse_cat(re_c *c) {
    enum { NONE, ITEM, ANCHOR, REPEAT } prev = NONE;
    int cat = new_node(c, N_CAT, 0, 0);
    if (cat < 0) return -1;
    while (c->pos < c->len && c->p[c->pos] != '|' && c->p[c->pos] != ')') {
        size_t at = c->pos;
        uint32_t min, max;
        int q = parse_quant(c, &min, &max);
        if (q < 0) return -1;
        if (q && (prev == NONE || prev == ANCHOR))
            return fail(c, "nothing to repeat at offset %zu", at);
        if (q && prev == REPEAT) return fail(c, "multiple repeat at offset %zu", at);
        if (q) { /* the last item moves under a REP node that takes its place in the list */
            int moved = new_node(c, N_CHAR, 0, 0), last = c->nodes[cat].last;
            if (moved < 0) return -1;
            c->nodes[moved] = c->nodes[last];
            c->nodes[last] = (node){N_REP, min, max, moved, moved, -1};
            prev = REPEAT;
            continue;
        }
        bool is_assert;
        int a = parse_atom(c, &is_assert);
        if (a < 0) return -1;
        add_kid(c, cat, a);
        prev = is_assert ? ANCHOR : ITEM;
    }
    return cat;
}

static int parse_alt(re_c *c) {
    int branch = parse_cat(c);
    if (branch < 0 || c->pos >= c->len || c->p[c->pos] != '|') return branch;
    int alt = new_node(c, N_ALT, 0, 0);
    if (alt < 0) return -1;
    add_kid(c, alt, branch);
    while (c->pos < c->len && c->p[c->pos] == '|') {
        c->pos++;
        if ((branch = parse_cat(c)) < 0) return -1;
        add_kid(c, alt, branch);
    }
    return alt;
}

/* ---------------- Thompson construction ---------------- */

static int too_many_states(re_c *c) {
    return fail(c, "pattern needs more than %d NFA states (the bound; {m,n} copies its operand)",
                MAX_STATES);
}

static int emit(re_c *c, op o, uint32_t x, uint32_t y) {
    if (c->n_prog >= MAX_STATES) return too_many_states(c);
    c->prog[c->n_prog] = (inst){o, x, y};
    return (int)c->n_prog++;
}

static int gen(re_c *c, int ni);

/* x{min,max}: min copies, then a loop (no upper count) or max - min optional copies. */
static int gen_rep(re_c *c, const node *n) {
    for (uint32_t i = 0; i < n->a; i++)
        if (gen(c, n->kid) < 0) return -1;
    uint32_t extra = n->b == REP_INF ? 1 : n->b - n->a;
    for (uint32_t i = 0; i < extra; i++) {
        int split = emit(c, I_SPLIT, c->n_prog + 1, 0);
        if (split < 0 || gen(c, n->kid) < 0) return -1;
        if (n->b == REP_INF && emit(c, I_JMP, (uint32_t)split, 0) < 0) return -1;
        c->prog[split].y = c->n_prog;
    }
    return 0;
}

/* a|b|c: a split before each branch but the last; each branch jumps to the end (the jumps are
 * chained through their targets until the end is known). */
static int gen_alt(re_c *c, const node *n) {
    uint32_t chain = UINT32_MAX;
    for (int k = n->kid; k >= 0; k = c->nodes[k].next) {
        bool last = c->nodes[k].next < 0;
        int split = last ? -1 : emit(c, I_SPLIT, c->n_prog + 1, 0);
        if ((!last && split < 0) || gen(c, k) < 0) return -1;
        if (last) break;
        int j = emit(c, I_JMP, chain, 0);
        if (j < 0) return -1;
        chain = (uint32_t)j;
        c->prog[split].y = c->n_prog;
    }
    while (chain != UINT32_MAX) {
        uint32_t next = c->prog[chain].x;
        c->prog[chain].x = c->n_prog;
        chain = next;
    }
    return 0;
}

static int gen(re_c *c, int ni) {
    if (++c->work > MAX_WORK) return too_many_states(c); /* e.g. (){4294967294} emits nothing */
    const node *n = &c->nodes[ni];
    switch (n->kind) {
    case N_CHAR: return emit(c, I_CHAR, n->a, 0);
    case N_ANY: return emit(c, I_ANY, 0, 0);
    case N_CLASS: return emit(c, I_SET, n->a, 0);
    case N_ASSERT: return emit(c, I_ASSERT, n->a, 0);
    case N_REP: return gen_rep(c, n);
    case N_ALT: return gen_alt(c, n);
    case N_CAT:
        for (int k = n->kid; k >= 0; k = c->nodes[k].next)
            if (gen(c, k) < 0) return -1;
        return 0;
    }
    return -1;
}

/* ---------------- simulation ---------------- */

/* The matcher's view of a text position: its byte offset and the characters on both sides. */
typedef struct {
    const unsigned char *t;
    size_t len, off;
    uint32_t prev;
} where;

/* The character at t[off..]: an invalid UTF-8 byte counts as one character U+DC80..U+DCFF
 * (which no pattern character equals). */
static size_t text_char(const unsigned char *t, size_t len, size_t off, uint32_t *cp) {
    if (off >= len) return *cp = CP_NONE, 0;
    size_t n = utf8_decode(t + off, len - off, cp);
    if (!n) *cp = 0xdc00 + t[off], n = 1;
    return n;
}

/* 1 holds, 0 not, -1 undecidable (\b beside a non-ASCII character). */
static int assert_holds(assert_kind k, const where *w) {
    switch (k) {
    case A_BEGIN: return w->off == 0;
    case A_END: return w->off == w->len;
    case A_DOLLAR: return w->off == w->len || (w->off + 1 == w->len && w->t[w->off] == '\n');
    case A_WORDB: {
        uint32_t next;
        text_char(w->t, w->len, w->off, &next);
        if ((w->prev != CP_NONE && w->prev >= 128) || (next != CP_NONE && next >= 128)) return -1;
        return (w->prev != CP_NONE && is_word(w->prev)) != (next != CP_NONE && is_word(next));
    }
    }
    return 0;
}

static int set_holds(const cset *s, uint32_t cp) {
    if (cp >= 128 && s->unicode) return -1;
    bool in = cp < 128 && (s->ascii[cp >> 3] >> (cp & 7) & 1);
    return in != s->negated;
}

/* A lazy DFA over the NFA (as RE2 does): each (state set, character, context) is simulated
 * once and its result kept, so an honest pattern costs one table step per character on every
 * later name instead of a walk over its live states. The context is what the assertions can
 * see at the new position; the cache is bounded and flushed when full. */
enum { DFA_STATES = 256, DFA_SLOTS = 4096, DFA_POOL = 1 << 15 };
enum { C_BEGIN = 1, C_END = 2, C_DOLLAR = 4, C_WORDB = 8, C_WORDB_UNKNOWN = 16 };
enum { T_USED = 1, T_MATCH = 2, T_UNKNOWN = 4 };
#define DFA_START 0xffffu /* the "state" before the first closure */

typedef struct {
    uint32_t cp;
    uint16_t from, to;
    uint8_t ctx, flags;
} dtrans;

typedef struct {
    uint32_t *pool, pool_n, pool_cap; /* the states' NFA pcs, sorted, back to back */
    uint32_t off[DFA_STATES], len[DFA_STATES], n_states;
    uint16_t shash[2 * DFA_STATES]; /* state id + 1 by hash of its pcs; 0 empty */
    dtrans tr[DFA_SLOTS];
    uint32_t n_tr;
    uint32_t *mark, *stack, *out, stamp; /* scratch of one simulated step, n_prog each */
} dfa;

/* The compiled program: what a run needs of the compiler's state, and its DFA cache. */
struct hc_pyre {
    inst *prog;
    cset *sets;
    uint32_t n_prog;
    dfa *d; /* made on the first run */
};

typedef struct {
    const hc_pyre *re;
    bool unknown; /* a thread met a test this file cannot decide */
    bool over;    /* the caller's budget of state visits ran out */
    uint64_t *budget;
} sim;

/* One state visit against the caller's budget: false (and over set) when none is left. */
static bool spend(sim *s) {
    if (!s->budget) return true;
    if (!*s->budget) return s->over = true, false;
    --*s->budget;
    return true;
}

/* What the assertions see at w: the context bits. */
static uint8_t where_ctx(const where *w) {
    int b = assert_holds(A_WORDB, w);
    return (uint8_t)((w->off == 0 ? C_BEGIN : 0) | (assert_holds(A_END, w) ? C_END : 0) |
                     (assert_holds(A_DOLLAR, w) ? C_DOLLAR : 0) |
                     (b < 0 ? C_WORDB_UNKNOWN : b ? C_WORDB : 0));
}

static int ctx_holds(assert_kind k, uint8_t ctx) {
    switch (k) {
    case A_BEGIN: return !!(ctx & C_BEGIN);
    case A_END: return !!(ctx & C_END);
    case A_DOLLAR: return !!(ctx & C_DOLLAR);
    case A_WORDB: return ctx & C_WORDB_UNKNOWN ? -1 : !!(ctx & C_WORDB);
    }
    return 0;
}

/* Adds pc and everything reachable from it without reading a character to list (the
 * consuming instructions only); each state at most once per step. Returns true on MATCH;
 * false with s->over set when the budget ran out. */
static bool closure(sim *s, dfa *d, uint32_t pc, uint8_t ctx, uint32_t *n) {
    uint32_t top = 0;
    if (d->mark[pc] == d->stamp) return false;
    d->mark[pc] = d->stamp;
    d->stack[top++] = pc;
    while (top) {
        if (!spend(s)) return false;
        const inst *in = &s->re->prog[d->stack[--top]];
        uint32_t to[2], n_to = 0;
        switch (in->op) {
        case I_MATCH: return true;
        case I_JMP: to[n_to++] = in->x; break;
        case I_SPLIT: to[n_to++] = in->x, to[n_to++] = in->y; break;
        case I_ASSERT: {
            int h = ctx_holds((assert_kind)in->x, ctx);
            s->unknown |= h < 0;
            if (h > 0) to[n_to++] = (uint32_t)(in - s->re->prog) + 1;
            break;
        }
        default: d->out[(*n)++] = (uint32_t)(in - s->re->prog);
        }
        for (uint32_t i = 0; i < n_to; i++)
            if (d->mark[to[i]] != d->stamp) d->mark[to[i]] = d->stamp, d->stack[top++] = to[i];
    }
    return false;
}

static int step_accepts(sim *s, const inst *in, uint32_t cp) {
    switch (in->op) {
    case I_CHAR: return in->x == cp;
    case I_ANY: return cp != '\n';
    case I_SET: return set_holds(&s->re->sets[in->x], cp);
    default: return 0;
    }
}

static uint32_t hash_words(const uint32_t *v, uint32_t n, uint32_t h) {
    for (uint32_t i = 0; i < n; i++) h = (h ^ v[i]) * 16777619u;
    return h;
}

static void dfa_flush(dfa *d) {
    d->n_states = d->pool_n = d->n_tr = 0;
    memset(d->shash, 0, sizeof d->shash);
    memset(d->tr, 0, sizeof d->tr);
}

/* The state holding d->out[0..n), made when new; the cache is flushed when full
 * (*flushed set: state ids from before are gone). */
static uint16_t dfa_intern(dfa *d, uint32_t n, bool *flushed) {
    uint32_t h = hash_words(d->out, n, 2166136261u), mask = 2 * DFA_STATES - 1;
    for (uint32_t k = h & mask;; k = (k + 1) & mask) {
        uint16_t id = d->shash[k];
        if (!id) break;
        if (d->len[id - 1] == n && !memcmp(d->pool + d->off[id - 1], d->out, n * sizeof *d->out))
            return (uint16_t)(id - 1);
    }
    if (d->n_states == DFA_STATES || n > d->pool_cap - d->pool_n) {
        dfa_flush(d);
        *flushed = true;
    }
    uint16_t id = (uint16_t)d->n_states++;
    d->off[id] = d->pool_n, d->len[id] = n;
    memcpy(d->pool + d->pool_n, d->out, n * sizeof *d->out);
    d->pool_n += n;
    uint32_t k = h & mask;
    while (d->shash[k]) k = (k + 1) & mask;
    d->shash[k] = (uint16_t)(id + 1);
    return id;
}

/* Simulates one step from state `from` (DFA_START: the closure at offset 0) on cp into the
 * context ctx; false when the budget ran out. */
static bool dfa_compute(sim *s, dfa *d, uint16_t from, uint32_t cp, uint8_t ctx, dtrans *t) {
    uint32_t n = 0;
    bool match = false, flushed = false;
    s->unknown = false;
    if (++d->stamp == 0) { /* wrapped: clear the marks rather than alias old ones */
        memset(d->mark, 0, s->re->n_prog * sizeof *d->mark);
        d->stamp = 1;
    }
    if (from == DFA_START) {
        match = closure(s, d, 0, ctx, &n);
    } else {
        const uint32_t *pcs = d->pool + d->off[from];
        for (uint32_t i = 0; i < d->len[from] && !match && spend(s); i++) {
            int a = step_accepts(s, &s->re->prog[pcs[i]], cp);
            s->unknown |= a < 0;
            if (a > 0) match = closure(s, d, pcs[i] + 1, ctx, &n);
        }
    }
    /* interning hashes and compares the set: charged like a walk over it (the set is not
     * sorted: its order follows from the state and the context, so equal paths meet) */
    for (uint32_t i = 0; i < n && !match && spend(s); i++) continue;
    if (s->over) return false;
    uint16_t to = match ? 0 : dfa_intern(d, n, &flushed);
    *t = (dtrans){cp, from, to, ctx,
                  (uint8_t)(T_USED | (match ? T_MATCH : 0) | (s->unknown ? T_UNKNOWN : 0))};
    if (flushed) return true; /* `from` is gone: keep the answer, not the entry */
    if (d->n_tr >= DFA_SLOTS / 2) memset(d->tr, 0, sizeof d->tr), d->n_tr = 0;
    uint32_t k = hash_words((uint32_t[]){from, cp, ctx}, 3, 2166136261u) & (DFA_SLOTS - 1);
    while (d->tr[k].flags) k = (k + 1) & (DFA_SLOTS - 1);
    d->tr[k] = *t;
    d->n_tr++;
    return true;
}

/* The step from `from` on cp into ctx: from the cache (one visit) or simulated. */
static bool dfa_step(sim *s, dfa *d, uint16_t from, uint32_t cp, uint8_t ctx, dtrans *t) {
    uint32_t k = hash_words((uint32_t[]){from, cp, ctx}, 3, 2166136261u) & (DFA_SLOTS - 1);
    for (; d->tr[k].flags; k = (k + 1) & (DFA_SLOTS - 1))
        if (d->tr[k].from == from && d->tr[k].cp == cp && d->tr[k].ctx == ctx) {
            *t = d->tr[k];
            return spend(s);
        }
    return dfa_compute(s, d, from, cp, ctx, t);
}

static dfa *dfa_new(uint32_t n_prog) {
    dfa *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->pool_cap = n_prog * 64 < DFA_POOL ? n_prog * 64 : DFA_POOL;
    d->pool = malloc((size_t)d->pool_cap * sizeof *d->pool);
    d->mark = calloc(3 * (size_t)n_prog, sizeof *d->mark);
    if (!d->pool || !d->mark) {
        free(d->pool);
        free(d->mark);
        free(d);
        return NULL;
    }
    d->stack = d->mark + n_prog, d->out = d->mark + 2 * n_prog;
    return d;
}

/* Runs the program over text: 1 when some path reaches MATCH, HC_PYRE_OVER_BUDGET when the
 * budget ran out first, -1 when only an undecidable test could have matched. */
static int simulate(const hc_pyre *re, dfa *d, const char *text, uint64_t *budget) {
    sim s = {re, false, false, budget};
    where w = {(const unsigned char *)text, strlen(text), 0, CP_NONE};
    bool unknown = false;
    dtrans t;
    if (!dfa_step(&s, d, DFA_START, CP_NONE, where_ctx(&w), &t)) return HC_PYRE_OVER_BUDGET;
    for (;;) {
        unknown |= t.flags & T_UNKNOWN;
        if (t.flags & T_MATCH) return 1;
        if (!d->len[t.to] || w.off >= w.len) break;
        uint32_t cp;
        w.off += text_char(w.t, w.len, w.off, &cp);
        w.prev = cp;
        if (!dfa_step(&s, d, t.to, cp, where_ctx(&w), &t)) return HC_PYRE_OVER_BUDGET;
    }
    return unknown ? -1 : 0;
}

static void free_compiler(re_c *c) {
    free(c->prog);
    free(c->names);
    free(c->sets);
    free(c->nodes);
}

hc_pyre *hc_pyre_compile(const char *pattern, char *msg, unsigned msg_len) {
    re_c c = {.msg = msg, .msg_len = msg_len};
    hc_pyre *re = NULL;
    if (!pattern) return fail(&c, "no pattern"), NULL;
    c.p = (const unsigned char *)pattern;
    c.len = strnlen(pattern, MAX_PATTERN + 1);
    if (c.len > MAX_PATTERN)
        return fail(&c, "pattern is longer than the bound of %d bytes", MAX_PATTERN), NULL;
    c.cap_nodes = 3 * (int)c.len + 8;
    c.cap_sets = (int)c.len + 1;
    c.cap_names = (int)c.len / 6 + 1;
    c.nodes = malloc((size_t)c.cap_nodes * sizeof *c.nodes);
    c.sets = malloc((size_t)c.cap_sets * sizeof *c.sets);
    c.names = malloc((size_t)c.cap_names * 2 * sizeof *c.names);
    c.prog = malloc(MAX_STATES * sizeof *c.prog);
    if (!c.nodes || !c.sets || !c.names || !c.prog) {
        fail(&c, "out of memory");
        goto out;
    }
    int root = parse_alt(&c);
    if (root < 0) goto out;
    if (c.pos < c.len) { /* parse_alt stops early only at a ')' without its '(' */
        fail(&c, "unbalanced parenthesis at offset %zu", c.pos);
        goto out;
    }
    if (gen(&c, root) < 0 || emit(&c, I_MATCH, 0, 0) < 0) goto out;
    re = malloc(sizeof *re);
    if (!re) {
        fail(&c, "out of memory");
        goto out;
    }
    /* keep only what the program uses: a config may hold thousands of patterns */
    inst *prog = realloc(c.prog, c.n_prog * sizeof *c.prog);
    cset *sets = c.n_sets ? realloc(c.sets, (size_t)c.n_sets * sizeof *c.sets) : c.sets;
    *re = (hc_pyre){prog ? prog : c.prog, sets ? sets : c.sets, c.n_prog, NULL};
    c.prog = NULL, c.sets = NULL;
out:
    free_compiler(&c);
    return re;
}

uint32_t hc_pyre_states(const hc_pyre *re) { return re ? re->n_prog : 0; }

size_t hc_pyre_footprint(const hc_pyre *re) {
    if (!re) return 0;
    uint32_t pool = re->n_prog * 64 < DFA_POOL ? re->n_prog * 64 : DFA_POOL;
    return sizeof *re + re->n_prog * (sizeof *re->prog + sizeof(cset) + 3 * sizeof(uint32_t)) +
           sizeof(dfa) + pool * sizeof(uint32_t);
}

int hc_pyre_exec(hc_pyre *re, const char *text, uint64_t *budget, char *msg, unsigned msg_len) {
    re_c c = {.msg = msg, .msg_len = msg_len};
    if (!re || !text) return fail(&c, "no pattern or no text");
    if (!re->d && !(re->d = dfa_new(re->n_prog))) return fail(&c, "out of memory");
    int rc = simulate(re, re->d, text, budget);
    if (rc == HC_PYRE_OVER_BUDGET)
        fail(&c, "the matching work ran past its budget of NFA state visits");
    else if (rc < 0)
        fail(&c, "a \\d \\w \\s class or \\b met a non-ASCII character (Unicode classes "
                 "are not supported)");
    return rc;
}

void hc_pyre_free(hc_pyre *re) {
    if (!re) return;
    if (re->d) {
        free(re->d->pool);
        free(re->d->mark);
        free(re->d);
    }
    free(re->prog);
    free(re->sets);
    free(re);
}

int hc_pyre_match(const char *pattern, const char *text, char *msg, unsigned msg_len) {
    if (!text) {
        re_c c = {.msg = msg, .msg_len = msg_len};
        return fail(&c, "no pattern or no text");
    }
    hc_pyre *re = hc_pyre_compile(pattern, msg, msg_len);
    int rc = re ? hc_pyre_exec(re, text, NULL, msg, msg_len) : -1;
    hc_pyre_free(re);
    return rc;
}
