/* safetensors_header.c: reads a safetensors header's JSON in one pass straight into the tensor
 * entries (FORMATS.md section 1): each entry's dtype, shape and data_offsets, checked as they
 * are read, and __metadata__. Every size is computed with checked arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors_int.h"

/* ---- the header's JSON, read in one pass straight into the tensor entries. No JSON tree is
 * built: a cJSON tree of a 95 MB header of 1.6 M empty tensors took 1.4 GB. What is kept is
 * an hc_st_tensor and the name per tensor, and every entry takes at least 51 header bytes, so
 * memory stays within a few times the header. ---- */

#define JSON_MAX_DEPTH 64 /* nesting of values inside an unknown entry field */

typedef struct {
    hc_st_file *f;
    const char *start, *p, *end;
    size_t cap;     /* tensors allocated */
    bool have_meta; /* __metadata__ seen */
    hc_err *err;
} json_in;

static hc_status syntax_error(json_in *J) {
    return hc__fail(J->err, HC_INVALID, "'%s': header is not valid JSON (error near byte %llu of "
                   "the header)", J->f->path, (unsigned long long)(J->p - J->start));
}

static int peek(json_in *J) {
    while (J->p < J->end && (*J->p == ' ' || *J->p == '\t' || *J->p == '\n' || *J->p == '\r'))
        J->p++;
    return J->p < J->end ? (unsigned char)*J->p : -1;
}

static bool take(json_in *J, char c) {
    if (peek(J) != (unsigned char)c) return false;
    J->p++;
    return true;
}

static int hex4(const char *s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The code point of the \u escape at s (one or, for a surrogate pair, two escapes; *len gets
 * their length), or -1 when invalid. s has at least 6 bytes before end. */
static long unicode_escape(const char *s, const char *end, int *len) {
    long hi = hex4(s + 2);
    *len = 6;
    if (hi < 0xD800 || hi > 0xDFFF) return hi;
    if (hi > 0xDBFF || end - s < 12 || s[6] != '\\' || s[7] != 'u') return -1;
    long lo = hex4(s + 8);
    if (lo < 0xDC00 || lo > 0xDFFF) return -1;
    *len = 12;
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
}

static size_t put_utf8(char *o, long cp) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Checks the JSON string at the cursor and moves past it; its content is [*s, *q). */
static hc_status string_span(json_in *J, const char **s, const char **q) {
    if (!take(J, '"')) return syntax_error(J);
    const char *r = J->p;
    while (r < J->end && *r != '"') {
        if ((unsigned char)*r < 0x20) return J->p = r, syntax_error(J);
        if (*r == '\\') {
            if (J->end - r < 2 || r[1] == 0 || !strchr("\"\\/bfnrtu", r[1]))
                return J->p = r, syntax_error(J);
            if (r[1] == 'u' && (J->end - r < 6 || hex4(r + 2) < 0)) return J->p = r, syntax_error(J);
            r += r[1] == 'u' ? 6 : 2;
        } else {
            r++;
        }
    }
    if (r >= J->end) return J->p = r, syntax_error(J);
    *s = J->p, *q = r;
    J->p = r + 1;
    return HC_OK;
}

/* Decodes the checked string content [s, q) into o (cap bytes, NUL-terminated); *cut is set
 * when it is longer. An escaped NUL is refused: it would end the C string early. */
static hc_status string_decode(json_in *J, const char *s, const char *q, char *o, size_t cap,
                               bool *cut) {
    size_t n = 0;
    *cut = false;
    for (const char *r = s; r < q;) {
        char u[4];
        size_t len = 1;
        if (*r != '\\') {
            u[0] = *r++;
        } else if (r[1] != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            u[0] = to[strchr(from, r[1]) - from];
            r += 2;
        } else {
            int elen;
            long cp = unicode_escape(r, q, &elen);
            if (cp <= 0) {
                J->p = r;
                return cp == 0 ? hc__fail(J->err, HC_INVALID, "'%s': header JSON contains an "
                                         "escaped NUL character", J->f->path)
                               : syntax_error(J);
            }
            len = put_utf8(u, cp);
            r += elen;
        }
        if (n + len >= cap) {
            *cut = true;
            break;
        }
        memcpy(o + n, u, len);
        n += len;
    }
    o[n] = 0;
    return HC_OK;
}

/* The JSON string at the cursor into buf (cap bytes; *cut when longer), or only checked when
 * buf is NULL: names compared and dropped need no allocation. */
static hc_status json_string_to(json_in *J, char *buf, size_t cap, bool *cut) {
    const char *s, *q;
    HC_TRY(string_span(J, &s, &q));
    return buf ? string_decode(J, s, q, buf, cap, cut) : HC_OK;
}

/* The JSON string at the cursor, decoded into a new buffer (*out). */
static hc_status json_string(json_in *J, char **out) {
    const char *s, *q;
    bool cut;
    *out = NULL;
    HC_TRY(string_span(J, &s, &q));
    char *o = malloc((size_t)(q - s) + 1); /* decoding never lengthens */
    if (!o) return hc__fail(J->err, HC_NOMEM, "out of memory");
    hc_status st = string_decode(J, s, q, o, (size_t)(q - s) + 1, &cut);
    if (st) free(o);
    else *out = o;
    return st;
}

/* A JSON number at the cursor. *ok tells whether it is written as plain digits (no sign,
 * fraction or exponent) with a value in [0, 2^53) (*v): the reference reader takes shape and
 * data_offsets as unsigned integers and refuses -0, 2.0 and 8e0, so this one does too. Any
 * other number is well-formed JSON that breaks a rule, which the caller names. */
static hc_status json_number(json_in *J, uint64_t *v, bool *ok) {
    peek(J);
    const char *s = J->p, *p = s, *e = J->end;
#define DIGITS(p) ((p) < e && *(p) >= '0' && *(p) <= '9')
    if (p < e && *p == '-') p++;
    if (!DIGITS(p)) return J->p = p, syntax_error(J);
    if (*p == '0') p++;
    else while (DIGITS(p)) p++;
    const char *int_end = p;
    if (p < e && *p == '.') {
        if (!DIGITS(p + 1)) return J->p = p, syntax_error(J);
        for (p++; DIGITS(p); p++) {}
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (!DIGITS(p)) return J->p = p, syntax_error(J);
        while (DIGITS(p)) p++;
    }
#undef DIGITS
    J->p = p;
    *ok = false;
    if (*s != '-' && p == int_end) {
        uint64_t x = 0;
        for (const char *d = s; d < p && x < (1ull << 53); d++) x = x * 10 + (uint64_t)(*d - '0');
        *ok = x < (1ull << 53) && p - s <= 16;
        *v = x;
    }
    return HC_OK;
}

/* Skips the JSON value at the cursor (an entry field this reader does not use). */
static hc_status json_skip(json_in *J, int depth) {
    if (depth > JSON_MAX_DEPTH)
        return hc__fail(J->err, HC_INVALID, "'%s': header JSON nests deeper than %d levels",
                       J->f->path, JSON_MAX_DEPTH);
    int c = peek(J);
    if (c == '"') return json_string_to(J, NULL, 0, NULL);
    if (c == '{' || c == '[') {
        J->p++;
        char close = c == '{' ? '}' : ']';
        if (take(J, close)) return HC_OK;
        do {
            if (c == '{') {
                HC_TRY(json_string_to(J, NULL, 0, NULL));
                if (!take(J, ':')) return syntax_error(J);
            }
            HC_TRY(json_skip(J, depth + 1));
        } while (take(J, ','));
        return take(J, close) ? HC_OK : syntax_error(J);
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int w = 0; w < 3; w++) {
        size_t n = strlen(words[w]);
        if ((size_t)(J->end - J->p) >= n && !memcmp(J->p, words[w], n)) {
            J->p += n;
            return HC_OK;
        }
    }
    uint64_t v;
    bool ok;
    return json_number(J, &v, &ok);
}

static bool at_number(json_in *J) {
    int c = peek(J);
    return c == '-' || (c >= '0' && c <= '9');
}

/* "shape": an array of at most HC_MAX_DIMS integers in [0, 2^53). */
static hc_status read_shape(json_in *J, hc_st_tensor *t, const char *nm) {
    const char *path = J->f->path;
    if (!take(J, '['))
        return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': shape is not an array", path, nm);
    int nd = 0;
    if (!take(J, ']')) {
        do {
            uint64_t v = 0;
            bool ok = false;
            if (at_number(J)) HC_TRY(json_number(J, &v, &ok));
            if (!ok)
                return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': shape dimension %d is not "
                               "an integer in [0, 2^53) written in plain digits (no sign, "
                               "fraction or exponent)", path, nm, nd);
            if (nd < HC_MAX_DIMS) t->shape[nd] = v;
            nd++;
        } while (take(J, ','));
        if (!take(J, ']')) return syntax_error(J);
    }
    if (nd > HC_MAX_DIMS)
        return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': shape has %d dimensions, at most %d "
                       "are supported", path, nm, nd, HC_MAX_DIMS);
    t->ndim = nd;
    return HC_OK;
}

/* "data_offsets": exactly two integers in [0, 2^53). */
static hc_status read_offsets(json_in *J, hc_st_tensor *t, const char *nm) {
    uint64_t *v[2] = {&t->begin, &t->end};
    bool ok = take(J, '[');
    for (int i = 0; i < 2 && ok; i++) {
        ok = (i == 0 || take(J, ',')) && at_number(J);
        if (ok) HC_TRY(json_number(J, v[i], &ok));
    }
    if (!ok || !take(J, ']'))
        return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': data_offsets must be two integers "
                       "[begin, end] in [0, 2^53) written in plain digits (no sign, fraction "
                       "or exponent)", J->f->path, nm);
    return HC_OK;
}

static hc_status read_dtype(json_in *J, hc_st_tensor *t, const char *nm) {
    if (peek(J) != '"')
        return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': dtype is not a string", J->f->path,
                       nm);
    char s[32], desc[64];
    bool cut;
    HC_TRY(json_string_to(J, s, sizeof s, &cut));
    t->dtype = cut ? HC_DTYPE_INVALID : hc_dtype_from_name(s);
    if (t->dtype == HC_DTYPE_INVALID)
        return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': unknown dtype '%s%s'", J->f->path,
                       nm, hc__escape(s, desc, sizeof desc), cut ? "..." : "");
    return HC_OK;
}

/* The fields of one entry object: dtype, shape, data_offsets once each; others skipped. */
static hc_status read_entry(json_in *J, hc_st_tensor *t, const char *nm) {
    static const char *const names[3] = {"dtype", "shape", "data_offsets"};
    if (!take(J, '{'))
        return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': entry is not an object", J->f->path,
                       nm);
    bool seen[3] = {false, false, false};
    if (!take(J, '}')) {
        do {
            char key[16];
            bool cut;
            HC_TRY(json_string_to(J, key, sizeof key, &cut));
            int k = cut ? 3 : 0;
            while (k < 3 && strcmp(key, names[k])) k++;
            if (!take(J, ':')) return syntax_error(J);
            if (k < 3 && seen[k])
                return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': duplicate key \"%s\"",
                               J->f->path, nm, names[k]);
            if (k < 3) seen[k] = true;
            hc_status st = k == 0 ? read_dtype(J, t, nm) : k == 1 ? read_shape(J, t, nm)
                         : k == 2 ? read_offsets(J, t, nm) : json_skip(J, 1);
            if (st) return st;
        } while (take(J, ','));
        if (!take(J, '}')) return syntax_error(J);
    }
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return hc__fail(J->err, HC_INVALID, "'%s': tensor '%s': missing \"%s\"", J->f->path,
                           nm, names[k]);
    return HC_OK;
}

/* The sizes of an entry read by read_entry agree with each other (FORMATS.md section 1). */
static hc_status check_entry(const hc_st_file *f, hc_st_tensor *t, const char *nm, hc_err *err) {
    uint64_t numel = 1;
    bool overflow = false;
    for (int d = 0; d < t->ndim; d++)
        if (!hc__mul_u64(numel, t->shape[d], &numel)) overflow = true;
    /* A zero dimension makes the count 0 even when other dimensions overflowed. */
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0) overflow = false, numel = 0;
    if (overflow)
        return hc__fail(err, HC_INVALID, "'%s': tensor '%s': element count of the shape overflows "
                       "64 bits", f->path, nm);
    t->numel = numel;
    if (t->end < t->begin)
        return hc__fail(err, HC_INVALID, "'%s': tensor '%s': data_offsets end %llu is before "
                       "begin %llu", f->path, nm, (unsigned long long)t->end,
                       (unsigned long long)t->begin);
    uint64_t bits;
    if (!hc__mul_u64(numel, hc_dtype_bits(t->dtype), &bits))
        return hc__fail(err, HC_INVALID, "'%s': tensor '%s': size in bits of %llu elements of %s "
                       "overflows 64 bits", f->path, nm, (unsigned long long)numel,
                       hc_dtype_name(t->dtype));
    if (bits % 8)
        return hc__fail(err, HC_INVALID, "'%s': tensor '%s': %llu elements of %s is not a whole "
                       "number of bytes", f->path, nm, (unsigned long long)numel,
                       hc_dtype_name(t->dtype));
    if (t->end - t->begin != bits / 8)
        return hc__fail(err, HC_INVALID, "'%s': tensor '%s': %s shape needs %llu bytes but "
                       "data_offsets span %llu", f->path, nm, hc_dtype_name(t->dtype),
                       (unsigned long long)(bits / 8), (unsigned long long)(t->end - t->begin));
    return HC_OK;
}

/* A tensor entry named name (taken over: freed on failure). */
static hc_status add_tensor(json_in *J, char *name) {
    hc_st_file *f = J->f;
    hc_status st = HC_OK;
    if (f->ntensors == J->cap) { /* past the estimate only for odd headers: grow */
        size_t cap = J->cap ? 2 * J->cap : 16;
        hc_st_tensor *v = cap < SIZE_MAX / sizeof *v ? realloc(f->tensors, cap * sizeof *v) : NULL;
        if (!v) {
            free(name);
            return hc__fail(J->err, HC_NOMEM, "out of memory");
        }
        f->tensors = v, J->cap = cap;
    }
    hc_st_tensor *t = &f->tensors[f->ntensors];
    memset(t, 0, sizeof *t);
    char esc[512];
    const char *nm = hc__escape(name, esc, sizeof esc);
    st = read_entry(J, t, nm);
    if (!st) st = check_entry(f, t, nm, J->err);
    if (st) {
        free(name);
        return st;
    }
    t->name = name;
    f->ntensors++;
    return HC_OK;
}

/* Appends a string pair to __metadata__, the arrays growing up to HC_ST_MAX_METADATA. */
static hc_status add_meta(json_in *J, char *key, char *value) {
    hc_st_file *f = J->f;
    size_t n = f->nmeta;
    if (n == HC_ST_MAX_METADATA) {
        free(key), free(value);
        return hc__fail(J->err, HC_INVALID, "'%s': __metadata__ has more than %u entries", f->path,
                       HC_ST_MAX_METADATA);
    }
    if ((n & (n - 1)) == 0) { /* 0, 1, 2, 4, ...: full, double */
        size_t cap = n ? 2 * n : 1;
        char **k = realloc(f->meta_keys, cap * sizeof *k);
        if (k) f->meta_keys = k;
        char **v = k ? realloc(f->meta_values, cap * sizeof *v) : NULL;
        if (v) f->meta_values = v;
        if (!k || !v) {
            free(key), free(value);
            return hc__fail(J->err, HC_NOMEM, "out of memory");
        }
    }
    f->meta_keys[n] = key, f->meta_values[n] = value;
    f->nmeta++;
    return HC_OK;
}

static hc_status read_metadata(json_in *J) {
    hc_st_file *f = J->f;
    if (!take(J, '{'))
        return hc__fail(J->err, HC_INVALID, "'%s': __metadata__ is not an object", f->path);
    if (take(J, '}')) return HC_OK;
    do {
        char *key, *value;
        HC_TRY(json_string(J, &key));
        if (!take(J, ':')) {
            free(key);
            return syntax_error(J);
        }
        if (peek(J) != '"') {
            char esc[256];
            hc_status st = hc__fail(J->err, HC_INVALID, "'%s': __metadata__ value of '%s' is not a "
                                   "string (only string -> string is allowed)", f->path,
                                   hc__escape(key, esc, sizeof esc));
            free(key);
            return st;
        }
        hc_status st = json_string(J, &value);
        if (st) {
            free(key);
            return st;
        }
        HC_TRY(add_meta(J, key, value));
    } while (take(J, ','));
    return take(J, '}') ? HC_OK : syntax_error(J);
}

/* The top-level object: tensor entries and __metadata__. */
static hc_status read_members(json_in *J) {
    if (!take(J, '{')) return syntax_error(J);
    if (take(J, '}')) return HC_OK;
    do {
        char *name;
        HC_TRY(json_string(J, &name));
        if (!take(J, ':')) {
            free(name);
            return syntax_error(J);
        }
        hc_status st;
        if (strcmp(name, "__metadata__") == 0) {
            free(name);
            if (J->have_meta)
                return hc__fail(J->err, HC_INVALID, "'%s': tensor '__metadata__': duplicate name "
                               "in header", J->f->path);
            J->have_meta = true;
            st = read_metadata(J);
        } else if (name[0] == 0) {
            free(name);
            st = hc__fail(J->err, HC_INVALID, "'%s': a tensor has an empty name", J->f->path);
        } else {
            st = add_tensor(J, name);
        }
        if (st) return st;
    } while (take(J, ','));
    return take(J, '}') ? HC_OK : syntax_error(J);
}

hc_status hc__st_read_json(hc_st_file *f, const char *json, uint64_t len, hc_err *err) {
    json_in J = {.f = f, .start = json, .p = json, .end = json + len, .err = err};
    /* Every entry takes at least 51 header bytes, so this many never need to grow; the pages
     * past the last entry are never touched, so they cost no memory. */
    J.cap = (size_t)(len / 32) + 1;
    f->tensors = J.cap < SIZE_MAX / sizeof *f->tensors ? malloc(J.cap * sizeof *f->tensors) : NULL;
    if (!f->tensors) return hc__fail(err, HC_NOMEM, "out of memory for the header of '%s'", f->path);
    hc_status st = read_members(&J);
    if (!st && peek(&J) != -1)
        st = hc__fail(err, HC_INVALID, "'%s': header has bytes after the JSON object", f->path);
    return st;
}
