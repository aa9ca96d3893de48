/* benchutil.h: small helpers the benchmark programs share (timing, writing files, a growing
 * string, peak RSS). Each program defines bench_die(), which cleans up and exits. */
#ifndef HC_BENCHUTIL_H
#define HC_BENCHUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void bench_die(const char *what, const char *msg);

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline void write_all(int fd, const void *buf, size_t n, const char *path) {
    const char *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) bench_die(path, strerror(errno));
        p += r;
        n -= (size_t)r;
    }
}

static inline void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) bench_die(path, strerror(errno));
    write_all(fd, text, strlen(text), path);
    close(fd);
}

/* A growing string. */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void sb_add(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) bench_die("format", "vsnprintf failed");
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) bench_die("malloc", "out of memory");
        b->s = s;
        b->cap = cap;
    }
}

/* A "kB" field of /proc/self/status (VmHWM, VmRSS), in bytes. */
static inline uint64_t proc_status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t v = 0;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') v = strtoull(line + kl + 1, NULL, 10) * 1024;
    if (f) fclose(f);
    return v;
}

/* Runs job(threads) in a child process so its peak RSS is its own; returns the seconds the
 * job took and its VmHWM in *hwm. job returns 0 on success. */
#include <sys/wait.h>
static __attribute__((unused)) double run_in_child(int (*job)(int), int threads, const char *what,
                                                  uint64_t *hwm) {
    int pfd[2];
    if (pipe(pfd) != 0) bench_die("pipe", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        double t0 = now();
        int rc = job(threads);
        double r[2] = {rc ? -1 : now() - t0, (double)proc_status_kb("VmHWM")};
        if (write(pfd[1], r, sizeof r) != sizeof r) _exit(2);
        _exit(0);
    }
    double r[2] = {-1, 0};
    close(pfd[1]);
    if (read(pfd[0], r, sizeof r) != sizeof r) r[0] = -1;
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    if (r[0] < 0) bench_die(what, "failed");
    *hwm = (uint64_t)r[1];
    return r[0];
}

#endif
