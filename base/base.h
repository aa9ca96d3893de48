/* base.h: internal helpers shared by the runtime and the converter: error records with a
 * detailed message, checked size arithmetic, small string utilities. */
#ifndef HC_BASE_H
#define HC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hcrt.h"

#define HC_ERRMSG_MAX 1024

/* An error record: the code and a message naming file, tensor, dimension and rule. */
typedef struct {
    hc_status code;
    char msg[HC_ERRMSG_MAX];
} hc_err;

/* Sets err (if not already set) and returns code. printf-style message. */
hc_status hc__fail(hc_err *err, hc_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes an existing message: "<prefix>: <old>". */
void hc__err_prefix(hc_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hc__err_clear(hc_err *err);

#define HC_TRY(expr)                       \
    do {                                   \
        hc_status hc__s = (expr);          \
        if (hc__s != HC_OK) return hc__s;  \
    } while (0)

/* HC_TRY in a function that cleans up: st = expr; on failure goto label. */
#define HC_TRY_GOTO(st, expr, label)              \
    do {                                          \
        if (((st) = (expr)) != HC_OK) goto label; \
    } while (0)

/* Checked arithmetic: return false on overflow. */
static inline bool hc__mul_u64(uint64_t a, uint64_t b, uint64_t *r) {
    return !__builtin_mul_overflow(a, b, r);
}
static inline bool hc__add_u64(uint64_t a, uint64_t b, uint64_t *r) {
    return !__builtin_add_overflow(a, b, r);
}
/* Greatest common divisor (gcd(a, 0) = a). */
static inline uint64_t hc__gcd_u64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}
/* Rounds up to a multiple of a power of two; false on overflow. */
static inline bool hc__align_u64(uint64_t v, uint64_t align, uint64_t *r) {
    uint64_t t;
    if (!hc__add_u64(v, align - 1, &t)) return false;
    *r = t & ~(align - 1);
    return true;
}
/* Ceiling of a / b, b > 0. Never overflows: it is a / b + (a % b != 0), equal to
 * (a + b - 1) / b wherever that sum fits. */
static inline uint64_t hc__cdiv_u64(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
/* Rounds v up to a multiple of m, any m (hc__align_u64 is the power-of-two form); false when
 * m is 0 or the result does not fit. */
static inline bool hc__round_up_u64(uint64_t v, uint64_t m, uint64_t *r) {
    return m && hc__mul_u64(hc__cdiv_u64(v, m), m, r);
}

/* JSON numbers are doubles: an offset or length must be an integer in [0, 2^53). */
#define HC_JSON_INT_LIMIT 9007199254740992.0 /* 2^53 */
bool hc__double_to_u64(double d, uint64_t *out);

/* Escapes a string for a terminal: printable ASCII and valid UTF-8 kept, control bytes,
 * DEL and invalid UTF-8 become \xNN. Writes at most cap-1 bytes plus NUL; returns out. */
char *hc__escape(const char *s, char *out, size_t cap);
bool hc__utf8_valid(const char *s, size_t n);
/* One UTF-8 character of s[0..n), n >= 1: its length (1..4) with *cp its code point, or 0 when
 * the bytes are not valid UTF-8 (overlong, surrogate, past U+10FFFF, truncated). Inline: the
 * regex matcher reads every character of every name through it. */
static inline size_t hc__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len = 0;
    if (s[0] < 0x80) len = 1;
    else if (s[0] >= 0xc2 && s[0] < 0xe0) len = 2;
    else if (s[0] >= 0xe0 && s[0] < 0xf0) len = 3;
    else if (s[0] >= 0xf0 && s[0] < 0xf5) len = 4;
    if (!len || len > n) return 0;
    uint32_t v = len == 1 ? s[0] : s[0] & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min_cp[len] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) return 0;
    *cp = v;
    return len;
}

/* Tables of named records (names.c): arrays whose elements start with a `const char *name`;
 * a plain array of `const char *` is such a table (a pointer to a struct points to its first
 * member). */
/* Binary search in a table sorted by name. */
const void *hc__find_by_name(const void *base, size_t n, size_t size, const char *name);
/* qsort comparator of a table, by strcmp of the names. */
int hc__cmp_name(const void *a, const void *b);
/* The same comparator, under the name the callers that sort plain strings used. */
/* *dup: the first name (in sorted order) that two records of the table share, or NULL;
 * HC_NOMEM ("out of memory" in err) when the sorted copy cannot be made. The table is not
 * reordered. */
hc_status hc__first_duplicate_name(const void *base, size_t n, size_t size, const char **dup,
                                  hc_err *err);
/* qsort comparator of an array of int, ascending. */
int hc__cmp_int(const void *a, const void *b);

/* The first of the shared libraries that loads (dlopen, RTLD_LOCAL), or NULL. */
void *hc__dlopen_first(const char *const *names, size_t n);

char *hc__strdup(const char *s);
/* Whether s ends with suffix. */
bool hc__ends_with(const char *s, const char *suffix);
char *hc__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *hc__basename(const char *path);
void hc__hex64(uint64_t v, char out[17]);
bool hc__parse_hex64(const char *s, uint64_t *out);

/* Opens path read-only for reading a regular file: O_NONBLOCK first, so a FIFO or a device
 * never blocks the open, then fstat; anything but a regular file is refused (HC_INVALID,
 * naming the path and what it is). On success *fd is a blocking descriptor and *size (when
 * not NULL) its size. */
hc_status hc__open_regular(const char *path, int *fd, uint64_t *size, hc_err *err);
/* Whole-file helpers. */
hc_status hc__read_file(const char *path, uint64_t max_len, char **data, size_t *len, hc_err *err);
/* pread exactly n bytes at off, retrying short reads. */
hc_status hc__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, hc_err *err);
hc_status hc__pwrite_full(int fd, const void *buf, size_t n, uint64_t off, const char *path,
                         hc_err *err);

#endif
