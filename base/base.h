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

/* Checked arithmetic: return false on overflow. */
static inline bool hc__mul_u64(uint64_t a, uint64_t b, uint64_t *r) {
    return !__builtin_mul_overflow(a, b, r);
}
static inline bool hc__add_u64(uint64_t a, uint64_t b, uint64_t *r) {
    return !__builtin_add_overflow(a, b, r);
}
/* Rounds up to a multiple of a power of two; false on overflow. */
/* Greatest common divisor (gcd(a, 0) = a). */
static inline uint64_t hc__gcd_u64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}
static inline bool hc__align_u64(uint64_t v, uint64_t align, uint64_t *r) {
    uint64_t t;
    if (!hc__add_u64(v, align - 1, &t)) return false;
    *r = t & ~(align - 1);
    return true;
}

/* JSON numbers are doubles: an offset or length must be an integer in [0, 2^53). */
#define HC_JSON_INT_LIMIT 9007199254740992.0 /* 2^53 */
bool hc__double_to_u64(double d, uint64_t *out);

/* Escapes a string for a terminal: printable ASCII and valid UTF-8 kept, control bytes,
 * DEL and invalid UTF-8 become \xNN. Writes at most cap-1 bytes plus NUL; returns out. */
char *hc__escape(const char *s, char *out, size_t cap);
bool hc__utf8_valid(const char *s, size_t n);

/* Binary search in an array sorted by name whose elements start with a `const char *name`. */
const void *hc__find_by_name(const void *base, size_t n, size_t size, const char *name);

/* The first of the shared libraries that loads (dlopen, RTLD_LOCAL), or NULL. */
void *hc__dlopen_first(const char *const *names, size_t n);

char *hc__strdup(const char *s);
/* Whether s ends with suffix. */
bool hc__ends_with(const char *s, const char *suffix);
/* qsort comparator of an array of `const char *`, by strcmp. */
int hc__cmp_str_ptr(const void *a, const void *b);
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
