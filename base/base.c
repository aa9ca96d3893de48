/* base.c: status and dtype tables, error records, checked conversions, escaping and small
 * I/O helpers shared by the runtime and the converter. */
#include "base.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *hc_strerror(hc_status s) {
    switch (s) {
#define HC_STATUS_MSG(num, name, msg) \
    case HC_##name: return msg;
        HC_STATUS_MAP(HC_STATUS_MSG)
#undef HC_STATUS_MSG
    }
    return "unknown status";
}

const char *hc_status_name(hc_status s) {
    switch (s) {
#define HC_STATUS_NAME(num, name, msg) \
    case HC_##name: return "HC_" #name;
        HC_STATUS_MAP(HC_STATUS_NAME)
#undef HC_STATUS_NAME
    }
    return "HC_UNKNOWN";
}

int hc_status_exit_code(hc_status s) {
    switch (s) {
    case HC_OK: return 0;
    case HC_INVALID:
    case HC_UNSUPPORTED:
    case HC_CHECKSUM:
    case HC_NOTFOUND: return 1;
    case HC_USAGE: return 2;
    case HC_IO:
    case HC_NOMEM:
    case HC_INTERNAL: return 3;
    }
    return 3;
}

static const struct {
    const char *name;
    unsigned bits;
} dtype_table[HC_DTYPE_COUNT] = {
    [HC_DTYPE_INVALID] = {"INVALID", 0},
#define HC_DTYPE_ROW(n, b) [HC_DT_##n] = {#n, b},
    HC_DTYPE_MAP(HC_DTYPE_ROW)
#undef HC_DTYPE_ROW
};

const char *hc_dtype_name(hc_dtype d) {
    return (d > 0 && d < HC_DTYPE_COUNT) ? dtype_table[d].name : "INVALID";
}

unsigned hc_dtype_bits(hc_dtype d) { return (d > 0 && d < HC_DTYPE_COUNT) ? dtype_table[d].bits : 0; }

hc_dtype hc_dtype_from_name(const char *name) {
    for (int d = 1; d < HC_DTYPE_COUNT; d++)
        if (strcmp(dtype_table[d].name, name) == 0) return (hc_dtype)d;
    return HC_DTYPE_INVALID;
}

hc_status hc__fail(hc_err *err, hc_status code, const char *fmt, ...) {
    if (err && err->code == HC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void hc__err_prefix(hc_err *err, const char *fmt, ...) {
    if (!err) return;
    char pre[HC_ERRMSG_MAX], old[HC_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", pre, old);
}

void hc__err_clear(hc_err *err) {
    err->code = HC_OK;
    err->msg[0] = 0;
}

bool hc__double_to_u64(double d, uint64_t *out) {
    if (!(d >= 0.0) || !(d < HC_JSON_INT_LIMIT) || d != floor(d)) return false;
    *out = (uint64_t)d;
    return true;
}

bool hc__utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = hc__utf8_decode(p + i, n - i, &cp);
        if (!l) return false;
        i += l;
    }
    return true;
}

char *hc__escape(const char *s, char *out, size_t cap) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, o = 0;
    if (cap == 0) return out;
    while (i < n) {
        uint32_t cp;
        size_t l = hc__utf8_decode(p + i, n - i, &cp);
        bool printable = l > 1 || (l == 1 && p[i] >= 0x20 && p[i] < 0x7F && p[i] != '\\');
        size_t need = printable ? l : 4;
        if (o + need + 1 > cap) break;
        if (printable) {
            memcpy(out + o, p + i, l);
            o += l;
            i += l;
        } else if (l == 1 && p[i] == '\\') {
            memcpy(out + o, "\\\\", 2);
            o += 2;
            i++;
        } else {
            snprintf(out + o, 5, "\\x%02x", p[i]);
            o += 4;
            i++;
        }
    }
    out[o] = 0;
    return out;
}

void *hc__dlopen_first(const char *const *names, size_t n) {
    void *h = NULL;
    for (size_t i = 0; i < n && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return h;
}

bool hc__ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

char *hc__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *r = malloc(n);
    if (r) memcpy(r, s, n);
    return r;
}

char *hc__asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *r = NULL;
    if (vasprintf(&r, fmt, ap) < 0) r = NULL;
    va_end(ap);
    return r;
}

const char *hc__basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void hc__hex64(uint64_t v, char out[17]) {
    static const char dig[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4) out[i] = dig[v & 15];
    out[16] = 0;
}

bool hc__parse_hex64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (strlen(s) != 16) return false;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else return false;
        v = (v << 4) | d;
    }
    *out = v;
    return true;
}

hc_status hc__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, hc_err *err) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return hc__fail(err, HC_IO, "cannot read '%s' at offset %llu: %s", path,
                           (unsigned long long)off, strerror(errno));
        }
        if (r == 0)
            return hc__fail(err, HC_INVALID, "'%s': unexpected end of file at offset %llu", path,
                           (unsigned long long)off);
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return HC_OK;
}

hc_status hc__pwrite_full(int fd, const void *buf, size_t n, uint64_t off, const char *path,
                         hc_err *err) {
    const char *p = buf;
    while (n > 0) {
        ssize_t r = pwrite(fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return hc__fail(err, HC_IO, "cannot write '%s' at offset %llu: %s", path,
                           (unsigned long long)off, strerror(errno));
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return HC_OK;
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

hc_status hc__open_regular(const char *path, int *fd, uint64_t *size, hc_err *err) {
    *fd = -1;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) return hc__fail(err, HC_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        hc_status st = hc__fail(err, HC_IO, "cannot stat '%s': %s", path, strerror(errno));
        close(f);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return hc__fail(err, HC_INVALID, "'%s' is %s, not a regular file", path,
                       file_kind(sb.st_mode));
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        hc_status st = hc__fail(err, HC_IO, "cannot configure '%s': %s", path, strerror(errno));
        close(f);
        return st;
    }
    *fd = f;
    if (size) *size = (uint64_t)sb.st_size;
    return HC_OK;
}

hc_status hc__read_file(const char *path, uint64_t max_len, char **data, size_t *len, hc_err *err) {
    *data = NULL;
    *len = 0;
    int fd;
    uint64_t size;
    HC_TRY(hc__open_regular(path, &fd, &size, err));
    hc_status st = HC_OK;
    char *buf = NULL;
    if (size > max_len) {
        st = hc__fail(err, HC_INVALID, "'%s' is %llu bytes, more than the %llu allowed", path,
                     (unsigned long long)size, (unsigned long long)max_len);
        goto out;
    }
    buf = malloc((size_t)size + 1);
    if (!buf) {
        st = hc__fail(err, HC_NOMEM, "out of memory reading '%s'", path);
        goto out;
    }
    st = hc__pread_full(fd, buf, (size_t)size, 0, path, err);
    if (st != HC_OK) goto out;
    buf[size] = 0;
    *data = buf;
    *len = (size_t)size;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return st;
}
