/* pyregex.c: Python re.match for the module-name patterns of quantization configs, as a
 * Thompson NFA run by state-set simulation: a hostile pattern costs states x text, never the
 * exponential time of a backtracking matcher (glibc's regexec hung on `(a*)*...b`). Patterns
 * are compiled once (pyregex_compile.c) and their steps cached here (a lazy DFA), and a
 * caller's budget of state visits bounds the work of many runs (one checkpoint's modules x
 * patterns). docs/regex.md lists the subset, the bounds and where the result follows Python. */
#include "pyregex.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyregex_int.h"

#define CP_NONE UINT32_MAX   /* no character (before the start, past the end) */

/* Fills msg (when msg_len > 0) with why a run gives no answer; returns -1. */
static int refuse(char *msg, unsigned msg_len, const char *why) {
    if (msg && msg_len) snprintf(msg, msg_len, "%s", why);
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
    size_t n = hc__utf8_decode(t + off, len - off, cp);
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
        return (w->prev != CP_NONE && hc__pyre_is_word(w->prev)) !=
               (next != CP_NONE && hc__pyre_is_word(next));
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

typedef struct pyre_dfa {
    uint32_t *pool, pool_n, pool_cap; /* the states' NFA pcs, sorted, back to back */
    uint32_t off[DFA_STATES], len[DFA_STATES], n_states;
    uint16_t shash[2 * DFA_STATES]; /* state id + 1 by hash of its pcs; 0 empty */
    dtrans tr[DFA_SLOTS];
    uint32_t n_tr;
    uint32_t *mark, *stack, *out, stamp; /* scratch of one simulated step, n_prog each */
} dfa;

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

size_t hc__pyre_footprint(const hc_pyre *re) {
    if (!re) return 0;
    uint32_t pool = re->n_prog * 64 < DFA_POOL ? re->n_prog * 64 : DFA_POOL;
    return sizeof *re + re->n_prog * (sizeof *re->prog + sizeof(cset) + 3 * sizeof(uint32_t)) +
           sizeof(dfa) + pool * sizeof(uint32_t);
}

int hc__pyre_exec(hc_pyre *re, const char *text, uint64_t *budget, char *msg, unsigned msg_len) {
    if (!re || !text) return refuse(msg, msg_len, "no pattern or no text");
    if (!re->d && !(re->d = dfa_new(re->n_prog))) return refuse(msg, msg_len, "out of memory");
    int rc = simulate(re, re->d, text, budget);
    if (rc == HC_PYRE_OVER_BUDGET)
        refuse(msg, msg_len, "the matching work ran past its budget of NFA state visits");
    else if (rc < 0)
        refuse(msg, msg_len, "a \\d \\w \\s class or \\b met a non-ASCII character (Unicode "
                             "classes are not supported)");
    return rc;
}

void hc__pyre_free(hc_pyre *re) {
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

int hc__pyre_match(const char *pattern, const char *text, char *msg, unsigned msg_len) {
    if (!text) return refuse(msg, msg_len, "no pattern or no text");
    hc_pyre *re = hc__pyre_compile(pattern, msg, msg_len);
    int rc = re ? hc__pyre_exec(re, text, NULL, msg, msg_len) : -1;
    hc__pyre_free(re);
    return rc;
}
