/* pyregex_compile.c: a pattern of Python's re syntax into the NFA program pyregex.c runs:
 * the parser (refusing by name what the matcher cannot follow exactly) and the Thompson
 * construction, both bounded in pattern bytes, nesting and states (docs/regex.md). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyregex_int.h"

/* The bounds: pattern bytes, group nesting, NFA states (counted repetition copies its operand,
 * so `(a{100}){100}` needs 10,000); the compile work is bounded by the states too. */
enum { MAX_PATTERN = 1024, MAX_DEPTH = 32, MAX_STATES = 4096, MAX_WORK = 4 * MAX_STATES };

#define REP_INF UINT32_MAX   /* no upper count */

typedef enum { N_CHAR, N_ANY, N_CLASS, N_ASSERT, N_CAT, N_ALT, N_REP } node_kind;

/* Parse tree: a node's children are a list (kid .. last, linked by next); -1 ends it. */
typedef struct {
    node_kind kind;
    uint32_t a, b; /* CHAR: code point; CLASS: class index; ASSERT: kind; REP: min, max */
    int kid, last, next;
} node;

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

/* ---------------- parser: Python's syntax, refusing what the matcher cannot follow ------ */

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


/* \d \w \s and their negations, ASCII part; Python's space set is [ \t\n\r\f\v] plus \x1c-\x1f. */
static void set_shorthand(cset *s, char k) {
    char lower = (char)(k | 0x20);
    for (uint32_t ch = 0; ch < 128; ch++) {
        bool space = ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f);
        bool in = lower == 'd'   ? ch >= '0' && ch <= '9'
                  : lower == 'w' ? hc__pyre_is_word(ch)
                                 : space;
        if (in != (k != lower)) set_range(s, ch, ch);
    }
    s->unicode = true;
}

static bool is_shorthand(int k) { return k && strchr("dDwWsS", k); }

/* The character at c->pos, consumed: its code point, or -1 (the message set) when the pattern
 * is not valid UTF-8 there. */
static int64_t literal_char(re_c *c) {
    uint32_t cp = 0;
    size_t n = hc__utf8_decode(c->p + c->pos, c->len - c->pos, &cp);
    if (!n) return fail(c, "pattern is not valid UTF-8 at offset %zu", c->pos);
    c->pos += n;
    return cp;
}

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
    return literal_char(c);
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
        v = literal_char(c);
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
    while (c->pos < c->len && hc__pyre_is_word(c->p[c->pos])) c->pos++;
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
        int64_t v = literal_char(c);
        return v < 0 ? -1 : new_node(c, N_CHAR, (uint32_t)v, 0);
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

static void free_compiler(re_c *c) {
    free(c->prog);
    free(c->names);
    free(c->sets);
    free(c->nodes);
}

hc_pyre *hc__pyre_compile(const char *pattern, char *msg, unsigned msg_len) {
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

uint32_t hc__pyre_states(const hc_pyre *re) { return re ? re->n_prog : 0; }
