/* gpu_bench.c: the GPU small-M path (4-bit integer tiles) on the lent GPU: weight bytes per
 * second at M = 1..8 beside the device's plain stream-read rate measured in the same run.
 * Large M and cuBLASLt come with the tensor-core kernels (issue 5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchutil.h"
#include "container_write.h"
#include "hconvert.h"
#include "layout.h"

static void bench_die(const char *what, const char *msg) {
    fprintf(stderr, "gpu_bench: %s: %s\n", what, msg);
    exit(1);
}

/* A container holding one random int4 tiled tensor [N, K], group 128, BF16 scales. */
static void make_container(const char *path, uint64_t N, uint64_t K) {
    hc_tile_params p = {.kind = HC_TL_INT, .code_bits = 4, .src_bits = 4, .E = 1, .N = N, .K = K,
                        .Np = (N + 63) / 64 * 64, .Kp = (K + 63) / 64 * 64, .g = 128,
                        .scale_dtype = HC_DT_BF16, .zero_const = 8};
    if (!hc_tile_geometry(&p)) bench_die("geometry", "bad");
    uint64_t bytes = hc_tile_bytes_of(&p);
    uint8_t *d = malloc(bytes);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < bytes; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        d[i] = (uint8_t)s;
    }
    for (uint64_t t = 0; t < p.tiles_n * p.tiles_k; t++) /* sane scales: bf16 ~0.01 */
        for (uint64_t i = 0; i < p.scale_bytes / 2; i++) {
            uint8_t *sc = d + t * p.chunk_bytes + p.code_bytes + 2 * i;
            sc[0] = (uint8_t)(i * 7), sc[1] = 0x3C;
        }
    cJSON *lp = hc_tile_params_json(&p);
    hc_cw_tensor t = {.name = "w", .dtype = HC_DT_U8, .ndim = 4,
                      .shape = {1, p.tiles_n, p.tiles_k, p.chunk_bytes},
                      .padded_shape = {1, p.tiles_n, p.tiles_k, p.chunk_bytes},
                      .layout = HC_LAYOUT_INT, .layout_version = HC_LAYOUT_VERSION, .data = d,
                      .size = bytes, .layout_params = lp};
    hc_cw_options o = {.source_format = "bench", .target = "tiles", .tp_size = 1};
    hc_err err = {0};
    if (hc_container_write(path, &t, 1, &o, &err)) bench_die("write", err.msg);
    cJSON_Delete(lp);
    free(d);
}

int main(void) {
    hc_gpu *g = NULL;
    char msg[1024];
    if (hc_gpu_open(&g, msg, sizeof msg)) {
        printf("gpu_bench: skipped: %s\n", msg);
        return 0;
    }
    double stream = 0;
    if (hc_gpu_stream_read(g, 2ull << 30, 20, &stream, msg, sizeof msg)) bench_die("stream", msg);
    printf("gpu_bench on %s: stream read (2 GiB, 20 passes): %.0f GB/s\n", hc_gpu_arch(g), stream);
    static const uint64_t shapes[][2] = {{28672, 8192}, {8192, 8192}};
    for (int sh = 0; sh < 2; sh++) {
        uint64_t N = shapes[sh][0], K = shapes[sh][1];
        char path[256];
        snprintf(path, sizeof path, "/tmp/hc-gpu-bench-%d.hconvert", (int)getpid());
        make_container(path, N, K);
        hc_container *c = NULL;
        if (hc_container_open(path, 0, &c, msg, sizeof msg)) bench_die("open", msg);
        const hc_tensor_info *t = hc_container_find(c, "w");
        float *x = malloc(8 * K * 4), *y = malloc(8 * N * 4);
        for (uint64_t i = 0; i < 8 * K; i++) x[i] = (float)((i * 37) % 17) / 16.0f - 0.5f;
        for (uint64_t m = 1; m <= 8; m *= 2) {
            double us = 0;
            if (hc_gpu_linear_fast(g, c, "w", 0, x, m, K, y, N, 50, &us, msg, sizeof msg))
                bench_die("gemv", msg);
            double gbs = (double)t->length / (us * 1e-6) / 1e9;
            printf("int4 g128 N=%llu K=%llu M=%llu: %8.1f us  %6.0f GB/s of weights (%.0f%% of "
                   "the stream read; %.1f MB of tiles)\n", (unsigned long long)N,
                   (unsigned long long)K, (unsigned long long)m, us, gbs, 100 * gbs / stream,
                   (double)t->length / 1e6);
        }
        free(x), free(y);
        hc_container_free(c);
        unlink(path);
    }
    hc_gpu_free(g);
    return 0;
}
