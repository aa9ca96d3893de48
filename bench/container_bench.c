/* container_bench.c: container write, read and verify throughput (GB/s, median of 3 runs)
 * beside a plain memcpy / write()+fsync / read() / XXH3 of the same bytes. A benchmark. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "benchutil.h"
#include "container_write.h"
#include "hcrt.h"

#define MAX_RUNS 15
#define BIG_MB 32   /* big tensors: 32 MB of BF16, [4096, 4096] */
#define NSMALL 32   /* small tensors: [4096] BF16 (8 KB), like norm weights */
#define SMALL_ELEMS 4096u

static int g_runs = 3; /* HC_BENCH_RUNS overrides, up to MAX_RUNS */
static char *g_dir, *g_plain, *g_ct;
static int g_made_dir;

static double median(const double *v, int n) {
    double s[MAX_RUNS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return s[n / 2];
}

static void cleanup(void) {
    if (g_plain) unlink(g_plain);
    if (g_ct) unlink(g_ct);
    if (g_made_dir && g_dir) rmdir(g_dir);
}

static void bench_die(const char *what, const char *msg) {
    fprintf(stderr, "container_bench: %s: %s\n", what, msg);
    cleanup();
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) bench_die("malloc", "out of memory");
    return p;
}

static uint64_t sum_words(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        s += w;
    }
    for (; i < n; i++) s += b[i];
    return s;
}

static void print_line(const char *name, double gbs, const char *peer, double peer_gbs) {
    printf("%-22s %8.2f  %-22s %8.2f  %6.2f\n", name, gbs, peer, peer_gbs, gbs / peer_gbs);
}

/* Removes our files and syncs the file system, outside any timed region. */
static void settle(void) {
    unlink(g_plain);
    unlink(g_ct);
    int fd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) != 0) bench_die(g_dir, "syncfs failed");
    close(fd);
}

/* write() of n bytes to a new file; with sync, fsync before returning, else the fd is returned
 * still open so the caller can fsync outside its timing. */
static int plain_write(const unsigned char *src, size_t n, int sync) {
    int fd = open(g_plain, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) bench_die(g_plain, strerror(errno));
    size_t off = 0;
    while (off < n) {
        ssize_t r = write(fd, src + off, n - off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) bench_die(g_plain, strerror(errno));
        off += (size_t)r;
    }
    if (!sync) return fd;
    if (fsync(fd) != 0) bench_die(g_plain, strerror(errno));
    close(fd);
    return -1;
}

static uint64_t plain_read_sum(const char *path, unsigned char *buf, size_t cap, int sum) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) bench_die(path, strerror(errno));
    size_t off = 0;
    for (;;) {
        if (off == cap) bench_die(path, "file larger than the read buffer");
        ssize_t r = read(fd, buf + off, cap - off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) bench_die(path, strerror(errno));
        if (r == 0) break;
        off += (size_t)r;
    }
    close(fd);
    return sum ? sum_words(buf, off) : off;
}

static void write_container(const hc_cw_tensor *t, size_t n, int threads) {
    hc_cw_options o = {.source_format = "safetensors", .target = "passthrough", .tp_size = 1,
                       .threads = threads};
    hc_err err = {0};
    if (hc__container_write(g_ct, t, n, &o, &err) != HC_OK) bench_die("hc__container_write", err.msg);
}

static hc_container *open_container(int verify) {
    hc_container *c = NULL;
    char msg[HC_ERRMSG_MAX];
    if (hc_container_open(g_ct, verify, &c, msg, sizeof msg) != HC_OK)
        bench_die("hc_container_open", msg);
    return c;
}

static void read_preamble(unsigned char pre[64]) {
    int fd = open(g_ct, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || pread(fd, pre, 64, 0) != 64) bench_die(g_ct, "cannot read the preamble");
    close(fd);
}

int main(int argc, char **argv) {
    long mb = argc > 1 ? strtol(argv[1], NULL, 10) : 2048;
    if (mb < 1 || mb > (1L << 20)) {
        fprintf(stderr, "usage: container_bench [TOTAL_MB (default 2048)] [OUT_DIR]\n"
                        "env: HC_BENCH_RUNS (default 3), HC_BENCH_VERBOSE=1 (every run)\n");
        return 2;
    }
    const char *runs_env = getenv("HC_BENCH_RUNS");
    if (runs_env) g_runs = atoi(runs_env);
    if (g_runs < 1 || g_runs > MAX_RUNS) {
        fprintf(stderr, "container_bench: HC_BENCH_RUNS must be 1..%d\n", MAX_RUNS);
        return 2;
    }
    g_dir = argc > 2 ? argv[2] : "/tmp/hconvert-bench";
    if (mkdir(g_dir, 0755) == 0) g_made_dir = 1;
    else if (errno != EEXIST) bench_die(g_dir, strerror(errno));
    g_plain = hc__asprintf("%s/plain.bin", g_dir);
    g_ct = hc__asprintf("%s/bench.hconvert", g_dir);
    if (!g_plain || !g_ct) bench_die("malloc", "out of memory");

    /* tensors: big ones of 32 MB, one remainder tensor, small norms */
    size_t nbig = (size_t)(mb / BIG_MB), rem_mb = (size_t)(mb % BIG_MB);
    size_t n = nbig + (rem_mb ? 1 : 0) + NSMALL;
    size_t total = (size_t)mb << 20;
    size_t small_bytes = (size_t)NSMALL * SMALL_ELEMS * 2;
    unsigned char *src = xmalloc(total + small_bytes);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i + 8 <= total + small_bytes; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        memcpy(src + i, &x, 8);
    }
    total += small_bytes;
    hc_cw_tensor *t = calloc(n, sizeof *t);
    char (*names)[64] = calloc(n, sizeof *names);
    if (!t || !names) bench_die("malloc", "out of memory");
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        hc_cw_tensor *e = &t[i];
        e->dtype = HC_DT_BF16;
        e->ndim = 2;
        e->layout = "source";
        e->layout_version = 1;
        if (i < nbig) {
            snprintf(names[i], sizeof names[i], "model.layers.%zu.mlp.weight", i);
            e->shape[0] = 4096, e->shape[1] = 4096; /* 32 MB */
        } else if (i == nbig && rem_mb) {
            snprintf(names[i], sizeof names[i], "lm_head.weight");
            e->shape[0] = rem_mb * 256, e->shape[1] = 2048; /* rem_mb MB */
        } else {
            snprintf(names[i], sizeof names[i], "model.layers.%zu.norm.weight", i);
            e->ndim = 1;
            e->shape[0] = SMALL_ELEMS;
            e->try_zstd = true; /* random bytes: zstd is tried and refused */
        }
        for (int d = 0; d < e->ndim; d++) e->padded_shape[d] = e->shape[d];
        e->size = e->ndim == 1 ? e->shape[0] * 2 : e->shape[0] * e->shape[1] * 2;
        e->name = names[i];
        e->data = src + off;
        off += e->size;
    }
    if (off != total) bench_die("setup", "tensor sizes do not add up");
    uint64_t src_sum = sum_words(src, total);
    double gb = (double)total / 1e9;

    /* destination for memcpy and plain read: pre-faulted, so neither times page faults */
    size_t dst_cap = total + (1u << 20); /* also holds the container file for plain reads */
    unsigned char *dst = xmalloc(dst_cap);
    memset(dst, 1, dst_cap);

    double tm[MAX_RUNS], tw[MAX_RUNS], twn[MAX_RUNS], tc1[MAX_RUNS], tc2[MAX_RUNS];
    double tr[MAX_RUNS], tpr[MAX_RUNS], tpn[MAX_RUNS], tv[MAX_RUNS], th[MAX_RUNS];
    /* Rounds interleave the writers and rotate their order, so drift of a shared disk hits
     * them alike. Before each timed write every file of ours is removed and the file system
     * synced (syncfs), so freeing and discarding old blocks is not charged to the write. */
    unsigned char pre1[64], pre2[64];
    /* warm-up, untimed: the first write of a process pays for page-cache pages never used
     * before (on a VM, first-touch of guest memory), which would single out round 0's first */
    settle();
    plain_write(src, total, 1);
    for (int r = 0; r < g_runs; r++) {
        double t0 = now();
        memcpy(dst, src, total);
        tm[r] = now() - t0;

        for (int k = 0; k < 3; k++) {
            int which = (k + r) % 3;
            settle();
            t0 = now();
            if (which == 0) plain_write(src, total, 1);
            else write_container(t, n, which);
            double dt = now() - t0;
            if (which == 0) tw[r] = dt;
            else if (which == 1) tc1[r] = dt, read_preamble(pre1);
            else tc2[r] = dt, read_preamble(pre2);
        }
        if (memcmp(pre1, pre2, 64) != 0) bench_die("check", "1-thread and 2-thread containers differ");

        settle();
        t0 = now();
        int fd = plain_write(src, total, 0); /* the page-cache copy alone */
        twn[r] = now() - t0;
        if (fsync(fd) != 0) bench_die(g_plain, strerror(errno));
        close(fd);
    }
    settle();
    write_container(t, n, 2); /* the file the read and verify rounds use */

    /* read: open (mapping) + sum every tensor byte, page-cached since the write, beside
     * read() of the whole file with and without the same sum */
    struct stat sb;
    if (stat(g_ct, &sb) != 0) bench_die(g_ct, strerror(errno));
    for (int r = 0; r < g_runs; r++) {
        double t0 = now();
        hc_container *c = open_container(0);
        size_t nt = hc_container_tensor_count(c);
        uint64_t ct_sum = 0;
        for (size_t i = 0; i < nt; i++) {
            const hc_tensor_info *ti = hc_container_tensor(c, i);
            const void *data;
            void *owned;
            if (hc_container_tensor_data(c, ti, &data, &owned) != HC_OK)
                bench_die("hc_container_tensor_data", hc_container_errmsg(c));
            ct_sum += sum_words(data, (size_t)ti->raw_length);
            free(owned);
        }
        hc_container_free(c);
        tr[r] = now() - t0;
        if (nt != n || ct_sum != src_sum) bench_die("check", "container bytes differ from the source");

        t0 = now();
        plain_read_sum(g_ct, dst, dst_cap, 1);
        tpr[r] = now() - t0;

        t0 = now();
        plain_read_sum(g_ct, dst, dst_cap, 0);
        tpn[r] = now() - t0;
    }

    /* verify: fresh open + re-hash of every byte, beside XXH3 over the in-memory source */
    uint64_t hsum = 0;
    for (int r = 0; r < g_runs; r++) {
        double t0 = now();
        hc_container *c = open_container(0);
        uint64_t nbad = 0;
        if (hc_container_verify(c, &nbad) != HC_OK)
            bench_die("hc_container_verify", hc_container_errmsg(c));
        hc_container_free(c);
        tv[r] = now() - t0;

        t0 = now();
        hsum = 0;
        for (size_t i = 0; i < n; i++) hsum += XXH3_64bits(t[i].data, (size_t)t[i].size);
        th[r] = now() - t0;
    }

    double memcpy_gbs = gb / median(tm, g_runs), write_gbs = gb / median(tw, g_runs);
    printf("container_bench: %zu tensors, %.3f GB of BF16 (GB = 1e9 bytes), file %.3f GB, "
           "median of %d runs, folder %s\n",
           n, gb, (double)sb.st_size / 1e9, g_runs, g_dir);
    printf("%-22s %8s  %-22s %8s  %6s\n", "name", "GB/s", "peer-name", "GB/s", "ratio");
    print_line("plain_write_nosync", gb / median(twn, g_runs), "memcpy", memcpy_gbs);
    print_line("plain_write+fsync", write_gbs, "memcpy", memcpy_gbs);
    print_line("plain_read", gb / median(tpn, g_runs), "memcpy", memcpy_gbs);
    print_line("container_write_t1", gb / median(tc1, g_runs), "plain_write+fsync", write_gbs);
    print_line("container_write_t2", gb / median(tc2, g_runs), "plain_write+fsync", write_gbs);
    print_line("container_read_sum", gb / median(tr, g_runs), "plain_read_sum",
               gb / median(tpr, g_runs));
    print_line("container_verify", gb / median(tv, g_runs), "xxh3_in_memory",
               gb / median(th, g_runs));
    if (getenv("HC_BENCH_VERBOSE")) {
        const char *nm[] = {"memcpy", "plain_write+fsync", "plain_write_nosync",
                            "container_write_t1", "container_write_t2", "container_read_sum",
                            "plain_read_sum", "plain_read", "container_verify", "xxh3_in_memory"};
        double *v[] = {tm, tw, twn, tc1, tc2, tr, tpr, tpn, tv, th};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            printf("  runs %-20s", nm[k]);
            for (int r = 0; r < g_runs; r++) printf(" %8.2f", gb / v[k][r]);
            printf("  GB/s\n");
        }
    }
    printf("(checks passed: tensor bytes read back equal the source; 1- and 2-thread files have "
           "the same preamble, hence header hash; xxh3 sum %016llx)\n", (unsigned long long)hsum);

    cleanup();
    free(dst);
    free(src);
    free(t);
    free(names);
    free(g_plain);
    free(g_ct);
    return 0;
}
