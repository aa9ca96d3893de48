/* validate_bench.c: `validate` throughput on a synthetic compressed-tensors W4A16 checkpoint
 * (GB/s of checkpoint, page-cached) beside a plain read() of the same files, and peak RSS. */
#include <sys/stat.h>

#include "benchutil.h"
#include "synth.h"
#include "validate.h"

static void extra_cleanup(void) {}

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

static int validate_job(int threads) {
    FILE *devnull = fopen("/dev/null", "w");
    hc_validate_opts o = {.threads = threads};
    size_t errors = 0;
    hc_err err = {0};
    return hc__validate(g_dir, &o, devnull, &errors, &err) || errors;
}

int main(int argc, char **argv) {
    g_layers = argc > 1 ? atoi(argv[1]) : 6;
    snprintf(g_dir, sizeof g_dir, "%s", argc > 2 ? argv[2] : "/tmp/hconvert-validate-bench");
    if (g_layers < 1 || g_layers > 200) bench_die("layers", "expected 1..200");
    mkdir(g_dir, 0755);
    write_config();
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
            double t = run_in_child(validate_job, threads, "validate", &hwm);
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
