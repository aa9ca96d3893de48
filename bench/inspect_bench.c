/* inspect_bench.c: cost of opening a many-shard safetensors checkpoint (hc__ckpt_open, what
 * `inspect` runs): wall time and bytes read (/proc/self/io rchar) against the header bytes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "checkpoint.h"
#include "inspect.h"

#define RUNS 5
#define TENSORS_PER_SHARD 8
#define COLS 1024

static const char *g_dir;
static int g_nshards;
static int g_index_entries;

static void shard_name(char *out, size_t cap, int s) {
    snprintf(out, cap, "model-%05d-of-%05d.safetensors", s + 1, g_nshards);
}

static void cleanup(void) {
    char p[4096], f[64];
    if (!g_dir) return;
    for (int s = 0; s < g_nshards; s++) {
        shard_name(f, sizeof f, s);
        snprintf(p, sizeof p, "%s/%s", g_dir, f);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", g_dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/config.json", g_dir);
    unlink(p);
    rmdir(g_dir);
}

static void bench_die(const char *what, const char *msg) {
    fprintf(stderr, "inspect_bench: %s: %s\n", what, msg);
    cleanup();
    exit(1);
}

/* A field of /proc/self/io ("rchar", "read_bytes"). */
static uint64_t proc_io(const char *key) {
    char buf[1024];
    int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
    if (fd < 0) bench_die("/proc/self/io", strerror(errno));
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) bench_die("/proc/self/io", "cannot read");
    buf[n] = 0;
    size_t kl = strlen(key);
    for (char *p = buf; p; p = strchr(p, '\n')) {
        if (*p == '\n') p++;
        if (strncmp(p, key, kl) == 0 && p[kl] == ':') return strtoull(p + kl + 1, NULL, 10);
    }
    bench_die("/proc/self/io", key);
    return 0;
}

static const char *const kinds[TENSORS_PER_SHARD] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj",    "mlp.extra_proj"};

/* Writes shard s: u64 LE header length, JSON header padded with spaces to a multiple of 8,
 * then the tensor bytes. Returns 8 + header length. */
static uint64_t write_shard(int s, uint64_t tensor_bytes, unsigned char *data, sbuf *index) {
    char f[64], path[4096];
    shard_name(f, sizeof f, s);
    snprintf(path, sizeof path, "%s/%s", g_dir, f);
    uint64_t rows = tensor_bytes / 2 / COLS;
    sbuf h = {0};
    sb_add(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < TENSORS_PER_SHARD; i++) {
        uint64_t b = (uint64_t)i * tensor_bytes;
        sb_add(&h, ",\"model.layers.%d.%s.weight\":{\"dtype\":\"BF16\",\"shape\":[%llu,%d],"
               "\"data_offsets\":[%llu,%llu]}", s, kinds[i], (unsigned long long)rows, COLS,
               (unsigned long long)b, (unsigned long long)(b + tensor_bytes));
        sb_add(index, "%s\"model.layers.%d.%s.weight\":\"%s\"", g_index_entries++ ? "," : "",
               s, kinds[i], f);
    }
    sb_add(&h, "}");
    while (h.len % 8) sb_add(&h, " ");
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) bench_die(path, strerror(errno));
    write_all(fd, len8, 8, path);
    write_all(fd, h.s, h.len, path);
    for (int i = 0; i < TENSORS_PER_SHARD; i++) {
        data[0] = (unsigned char)s, data[1] = (unsigned char)i; /* tensors differ a little */
        write_all(fd, data, (size_t)tensor_bytes, path);
    }
    if (fsync(fd) != 0) bench_die(path, strerror(errno));
    close(fd);
    uint64_t hb = 8 + h.len;
    free(h.s);
    return hb;
}

/* Drops the shards' pages from the page cache (they are clean after fsync). */
static void evict(void) {
    char p[4096], f[64];
    for (int s = 0; s < g_nshards; s++) {
        shard_name(f, sizeof f, s);
        snprintf(p, sizeof p, "%s/%s", g_dir, f);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0) bench_die(p, strerror(errno));
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* Bytes of shard pages resident in the page cache. */
static uint64_t resident(void) {
    char p[4096], f[64];
    uint64_t total = 0;
    long pg = sysconf(_SC_PAGESIZE);
    for (int s = 0; s < g_nshards; s++) {
        shard_name(f, sizeof f, s);
        snprintf(p, sizeof p, "%s/%s", g_dir, f);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) != 0) bench_die(p, strerror(errno));
        size_t len = (size_t)sb.st_size, npg = (len + (size_t)pg - 1) / (size_t)pg;
        void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        unsigned char *vec = malloc(npg ? npg : 1);
        if (m == MAP_FAILED || !vec || mincore(m, len, vec) != 0) bench_die(p, "mincore failed");
        for (size_t i = 0; i < npg; i++) total += (vec[i] & 1) ? (uint64_t)pg : 0;
        free(vec);
        munmap(m, len);
        close(fd);
    }
    return total;
}

typedef struct {
    double seconds;
    uint64_t rchar, read_bytes;
} sample;

static uint64_t g_probe_cost; /* rchar added by one proc_io() call itself */

/* One hc__ckpt_open + close (mode 0) or one hc__inspect to /dev/null (mode 1). */
static sample run_once(int mode, FILE *devnull) {
    hc_err err = {0};
    uint64_t r0 = proc_io("rchar"), b0 = proc_io("read_bytes");
    double t0 = now();
    if (mode == 0) {
        hc_ckpt *c = NULL;
        if (hc__ckpt_open(g_dir, &c, &err) != HC_OK) bench_die("hc__ckpt_open", err.msg);
        if ((int)c->nshards != g_nshards ||
            c->nentries != (size_t)g_nshards * TENSORS_PER_SHARD || c->nwarnings)
            bench_die("hc__ckpt_open", "unexpected shard/tensor count or warnings");
        hc__ckpt_close(c);
    } else {
        if (hc__inspect(g_dir, false, false, NULL, devnull, &err) != HC_OK) bench_die("hc__inspect", err.msg);
        fflush(devnull);
    }
    double t1 = now();
    uint64_t r1 = proc_io("rchar"), b1 = proc_io("read_bytes");
    /* a probe's read counts once it returns: r1 - r0 includes the r0 and b0 probes */
    sample s = {t1 - t0, r1 - r0 - 2 * g_probe_cost, b1 - b0};
    return s;
}

/* Median time of n samples; *max_rchar gets the largest byte count. */
static double med(const sample *v, int n, uint64_t *max_rchar) {
    double t[RUNS];
    uint64_t mx = 0;
    for (int i = 0; i < n; i++) {
        t[i] = v[i].seconds;
        if (v[i].rchar > mx) mx = v[i].rchar;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    *max_rchar = mx;
    return t[n / 2];
}

int main(int argc, char **argv) {
    g_nshards = argc > 1 ? atoi(argv[1]) : 64;
    long shard_mb = argc > 2 ? strtol(argv[2], NULL, 10) : 16;
    const char *dir = argc > 3 ? argv[3] : "/tmp/hconvert-inspect-bench";
    if (g_nshards < 1 || g_nshards > 99999 || shard_mb < 1 || shard_mb > 65536) {
        fprintf(stderr, "usage: inspect_bench [SHARDS (64)] [MB_PER_SHARD (16)] [DIR]\n");
        return 2;
    }
    if (mkdir(dir, 0755) != 0) {
        fprintf(stderr, "inspect_bench: cannot create '%s': %s (it must not exist)\n", dir,
                strerror(errno));
        return 1;
    }
    g_dir = dir;

    /* build the checkpoint */
    uint64_t tensor_bytes = (uint64_t)shard_mb * (1u << 20) / TENSORS_PER_SHARD;
    unsigned char *data = malloc((size_t)tensor_bytes);
    if (!data) bench_die("malloc", "out of memory");
    for (uint64_t i = 0; i < tensor_bytes; i++) data[i] = (unsigned char)(i * 131u + 7u);
    sbuf index = {0};
    sb_add(&index, "{\"metadata\":{\"total_size\":%llu},\"weight_map\":{",
           (unsigned long long)(tensor_bytes * TENSORS_PER_SHARD * (uint64_t)g_nshards));
    uint64_t header_bytes = 0;
    double tb = now();
    for (int s = 0; s < g_nshards; s++) header_bytes += write_shard(s, tensor_bytes, data, &index);
    sb_add(&index, "}}\n");
    char p[4096];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", g_dir);
    write_file(p, index.s);
    snprintf(p, sizeof p, "%s/config.json", g_dir);
    const char *config = "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","
                         "\"hidden_size\":1024,\"num_hidden_layers\":64,"
                         "\"torch_dtype\":\"bfloat16\"}\n";
    write_file(p, config);
    double build_s = now() - tb;
    uint64_t json_bytes = index.len + strlen(config);
    uint64_t total = header_bytes + tensor_bytes * TENSORS_PER_SHARD * (uint64_t)g_nshards +
                     json_bytes;
    free(index.s);
    free(data);

    /* the probe's own rchar: two back-to-back probes */
    uint64_t a = proc_io("rchar"), b = proc_io("rchar");
    g_probe_cost = b - a;

    FILE *devnull = fopen("/dev/null", "w");
    if (!devnull) bench_die("/dev/null", strerror(errno));
    sample warm[RUNS], insp[RUNS];
    run_once(0, devnull); /* first touch of the metadata */
    for (int r = 0; r < RUNS; r++) warm[r] = run_once(0, devnull);
    for (int r = 0; r < RUNS; r++) insp[r] = run_once(1, devnull);
    evict();
    uint64_t res0 = resident();
    sample cold = run_once(0, devnull);
    uint64_t res1 = resident();
    fclose(devnull);

    uint64_t expect = header_bytes + json_bytes, wr, ir;
    double wt = med(warm, RUNS, &wr), it = med(insp, RUNS, &ir);
    printf("inspect_bench: %d shards x %ld MB (%d BF16 tensors each), built in %.1f s, "
           "folder %s\n", g_nshards, shard_mb, TENSORS_PER_SHARD, build_s, g_dir);
    printf("shards              %d\n", g_nshards);
    printf("total MB            %.1f\n", (double)total / 1e6);
    printf("header bytes        %llu  (sum of 8 + header length per shard)\n",
           (unsigned long long)header_bytes);
    printf("json bytes          %llu  (index + config.json)\n", (unsigned long long)json_bytes);
    printf("expected reads      %llu  (headers + json)\n", (unsigned long long)expect);
    printf("hc__ckpt_open+close  bytes read %llu  ratio read/expected %.3f  read/total %.2e  "
           "%.1f us/shard  (%.2f ms, median of %d, page-cached)\n", (unsigned long long)wr,
           (double)wr / (double)expect, (double)wr / (double)total, wt * 1e6 / g_nshards,
           wt * 1e3, RUNS);
    printf("hc__inspect (text)   bytes read %llu  ratio read/expected %.3f  read/total %.2e  "
           "%.1f us/shard  (%.2f ms, median of %d, page-cached)\n", (unsigned long long)ir,
           (double)ir / (double)expect, (double)ir / (double)total, it * 1e6 / g_nshards,
           it * 1e3, RUNS);
    printf("cold hc__ckpt_open   bytes read %llu  ratio read/expected %.3f  %.1f us/shard  "
           "(%.2f ms); shard pages cached before %llu B, after %llu B (kernel readahead), "
           "storage read_bytes %llu\n", (unsigned long long)cold.rchar,
           (double)cold.rchar / (double)expect, cold.seconds * 1e6 / g_nshards,
           cold.seconds * 1e3, (unsigned long long)res0, (unsigned long long)res1,
           (unsigned long long)cold.read_bytes);
    int ok = wr <= expect + 4096 && ir <= expect + 4096 && cold.rchar <= expect + 4096;
    printf("%s: bytes read %s header + json bytes, not the %.0f MB of tensor data\n",
           ok ? "OK" : "UNEXPECTED", ok ? "~=" : "exceed", (double)total / 1e6);
    cleanup();
    return ok ? 0 : 1;
}
