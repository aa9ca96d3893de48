/* validate_bench.c: `validate` throughput on a synthetic compressed-tensors W4A16 checkpoint
 * (GB/s of checkpoint, page-cached) beside a plain read() of the same files, and peak RSS. */
#include <sys/stat.h>
#include <sys/wait.h>

#include "benchutil.h"
#include "validate.h"

#define HIDDEN 4096
#define INTER 11008
#define GS 128

static char g_dir[4096];
static int g_layers;

static void cleanup(void) {
    char p[4200];
    for (int l = 0; l < g_layers; l++) {
        snprintf(p, sizeof p, "%s/model-%05d.safetensors", g_dir, l);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/config.json", g_dir);
    unlink(p);
    rmdir(g_dir);
}

static void bench_die(const char *what, const char *msg) {
    fprintf(stderr, "validate_bench: %s: %s\n", what, msg);
    cleanup();
    exit(1);
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t next32(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)rng;
}

static const struct {
    const char *name;
    uint64_t n, k;
} mods[] = {{"self_attn.q_proj", HIDDEN, HIDDEN}, {"self_attn.k_proj", HIDDEN, HIDDEN},
            {"self_attn.v_proj", HIDDEN, HIDDEN}, {"self_attn.o_proj", HIDDEN, HIDDEN},
            {"mlp.gate_proj", INTER, HIDDEN},     {"mlp.up_proj", INTER, HIDDEN},
            {"mlp.down_proj", HIDDEN, INTER}};
#define NMOD (sizeof mods / sizeof mods[0])

/* One shard per layer: weight_packed I32 [N, K/8], weight_shape I64 [2], weight_scale BF16. */
static uint64_t write_layer(int l, uint64_t *largest) {
    char path[4200];
    snprintf(path, sizeof path, "%s/model-%05d.safetensors", g_dir, l);
    sbuf h = {0};
    uint64_t off = 0;
    sb_add(&h, "{");
    for (size_t m = 0; m < NMOD; m++) {
        uint64_t n = mods[m].n, k = mods[m].k, wp = n * k / 2, sc = n * (k / GS) * 2;
        if (wp > *largest) *largest = wp;
        sb_add(&h, "%s\"model.layers.%d.%s.weight_packed\":{\"dtype\":\"I32\",\"shape\":[%llu,%llu],"
               "\"data_offsets\":[%llu,%llu]}", m ? "," : "", l, mods[m].name,
               (unsigned long long)n, (unsigned long long)(k / 8), (unsigned long long)off,
               (unsigned long long)(off + wp));
        off += wp;
        sb_add(&h, ",\"model.layers.%d.%s.weight_shape\":{\"dtype\":\"I64\",\"shape\":[2],"
               "\"data_offsets\":[%llu,%llu]}", l, mods[m].name, (unsigned long long)off,
               (unsigned long long)(off + 16));
        off += 16;
        sb_add(&h, ",\"model.layers.%d.%s.weight_scale\":{\"dtype\":\"BF16\",\"shape\":[%llu,%llu],"
               "\"data_offsets\":[%llu,%llu]}", l, mods[m].name, (unsigned long long)n,
               (unsigned long long)(k / GS), (unsigned long long)off, (unsigned long long)(off + sc));
        off += sc;
    }
    sb_add(&h, "}");
    while (h.len % 8) sb_add(&h, " ");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) bench_die(path, strerror(errno));
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    write_all(fd, len8, 8, path);
    write_all(fd, h.s, h.len, path);
    for (size_t m = 0; m < NMOD; m++) {
        uint64_t n = mods[m].n, k = mods[m].k;
        size_t wp = (size_t)(n * k / 2);
        uint32_t *w = malloc(wp);
        if (!w) bench_die("malloc", "out of memory");
        for (size_t i = 0; i < wp / 4; i++) w[i] = next32();
        write_all(fd, w, wp, path);
        free(w);
        int64_t shape[2] = {(int64_t)n, (int64_t)k};
        write_all(fd, shape, 16, path);
        size_t ns = (size_t)(n * (k / GS));
        uint16_t *s = malloc(ns * 2);
        if (!s) bench_die("malloc", "out of memory");
        for (size_t i = 0; i < ns; i++) s[i] = (uint16_t)(0x3C00 + (next32() & 0x1FF)); /* bf16 ~0.008..0.03 */
        write_all(fd, s, ns * 2, path);
        free(s);
    }
    close(fd);
    free(h.s);
    return 8 + h.len + off;
}

/* Plain read of every shard into one buffer: the rate validate is compared with. */
static double plain_read(uint64_t total) {
    static char buf[1 << 20];
    double t0 = now();
    uint64_t got = 0;
    for (int l = 0; l < g_layers; l++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/model-%05d.safetensors", g_dir, l);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        ssize_t r;
        while (fd >= 0 && (r = read(fd, buf, sizeof buf)) > 0) got += (uint64_t)r;
        if (fd >= 0) close(fd);
    }
    if (got != total) bench_die("plain read", "short read");
    return (double)total / (now() - t0) / 1e9;
}

/* Runs validate in a child so its peak RSS is its own; returns seconds, *hwm the peak. */
static double validate_child(int threads, uint64_t *hwm) {
    int pfd[2];
    if (pipe(pfd) != 0) bench_die("pipe", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        FILE *devnull = fopen("/dev/null", "w");
        hc_validate_opts o = {.threads = threads};
        size_t errors = 0;
        hc_err err = {0};
        double t0 = now();
        hc_status st = hc_validate(g_dir, &o, devnull, &errors, &err);
        double r[2] = {now() - t0, (double)proc_status_kb("VmHWM")};
        if (st || errors) r[0] = -1;
        if (write(pfd[1], r, sizeof r) != sizeof r) _exit(2);
        _exit(0);
    }
    double r[2] = {-1, 0};
    close(pfd[1]);
    if (read(pfd[0], r, sizeof r) != sizeof r) r[0] = -1;
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    if (r[0] < 0) bench_die("validate", "failed or reported errors");
    *hwm = (uint64_t)r[1];
    return r[0];
}

int main(int argc, char **argv) {
    g_layers = argc > 1 ? atoi(argv[1]) : 6;
    snprintf(g_dir, sizeof g_dir, "%s", argc > 2 ? argv[2] : "/tmp/hconvert-validate-bench");
    if (g_layers < 1 || g_layers > 200) bench_die("layers", "expected 1..200");
    mkdir(g_dir, 0755);
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", g_dir);
    write_file(cfg, "{\"architectures\":[\"LlamaForCausalLM\"],\"quantization_config\":{"
                    "\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
                    "\"version\":\"0.12.0\",\"quantization_status\":\"compressed\","
                    "\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":{"
                    "\"num_bits\":4,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"group\","
                    "\"group_size\":128}}},\"ignore\":[\"lm_head\"]}}");
    uint64_t total = 0, largest = 0;
    for (int l = 0; l < g_layers; l++) total += write_layer(l, &largest);
    printf("validate_bench: %d layers of W4A16 g128 (hidden %d, intermediate %d), %.2f GB in "
           "%d shards, largest tensor %.1f MB\n", g_layers, HIDDEN, INTER, (double)total / 1e9,
           g_layers, (double)largest / 1e6);
    plain_read(total); /* warm the page cache */
    double rd = plain_read(total);
    for (int threads = 1; threads <= 2; threads++) {
        uint64_t hwm = 0;
        double best = 1e30;
        for (int r = 0; r < 3; r++) {
            double t = validate_child(threads, &hwm);
            if (t < best) best = t;
        }
        double gbs = (double)total / best / 1e9;
        printf("validate, %d thread%s: %6.2f GB/s   plain read: %6.2f GB/s   ratio %.2f   peak "
               "RSS %.1f MB (%.2f x largest tensor)\n", threads, threads > 1 ? "s" : " ", gbs, rd,
               gbs / rd, (double)hwm / 1e6, (double)hwm / (double)largest);
    }
    cleanup();
    return 0;
}
