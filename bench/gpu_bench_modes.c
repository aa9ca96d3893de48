/* gpu_bench_modes.c: gpu_bench's measurement modes, each chosen by its environment variable in
 * main (gpu_bench.c): HC_BENCH_KERNELS (every kernel that serves M forced in turn, M = 1-128),
 * HC_BENCH_SCALING (the M = 1 time over N), and in a bench build (-DHC_BENCH_DIAG=1)
 * HC_BENCH_TIMELINE (per block and per SM) and HC_BENCH_FIXUP (the stream-K fix-up's share).
 * They answer why a figure of the main table is what it is; the table itself is gpu_bench.c. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_diag.h" /* measurement modes, in a bench build (-DHC_BENCH_DIAG=1) only */
#include "hconvert.h"
#define BENCH_NAME "gpu_bench"
#include "gpu_benchutil.h"
#include "gpu_bench.h"

/* HC_BENCH_SCALING=1: where the M = 1 time goes -- int4 g128 at K = 8192 over N (the time's
 * slope is the streaming rate, its intercept the fixed cost of a launch), each with the full
 * kernel and, in a bench build (-DHC_BENCH_DIAG=1), with the copy pipeline alone
 * (HC_GPU_DIAG_COPY_ONLY), and the stream read at several sizes. */
void scaling(void) {
    static const uint64_t Ns[] = {4096, 8192, 16384, 28672, 33792, 57344};
    const uint64_t K = 8192;
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-scaling-%d.hconvert", (int)getpid());
    hc_gpu *g[2] = {NULL, NULL};
    int nd = 1; /* the full kernel; and the copies only, in a bench build */
    if (hc_gpu_open(&g[0], msg, sizeof msg)) die("scaling open", msg);
#ifdef HC_BENCH_DIAG
    if (hc_gpu_open(&g[1], msg, sizeof msg) ||
        hc__gpu_diag_set(g[1], HC_GPU_DIAG_COPY_ONLY, msg, sizeof msg))
        die("scaling open", msg);
    nd = 2;
#endif
    static const uint64_t sizes[] = {32ull << 20, 128ull << 20, 512ull << 20, 2048ull << 20};
    for (int i = 0; i < 4; i++) {
        double gbs = 0;
        if (hc_gpu_stream_read(g[0], sizes[i], 20, &gbs, msg, sizeof msg)) die("stream", msg);
        printf("scaling: stream read %5llu MiB x 20: %6.0f GB/s\n",
               (unsigned long long)(sizes[i] >> 20), gbs);
    }
    void *x, *y;
    CK(cudaMalloc(&x, K * 16 * 2));
    CK(cudaMalloc(&y, 57344ull * 16 * 2));
    fill_bf16(x, K * 16, 1);
    printf("scaling: int4 g128 K=8192 M=1 | N | weight MB | full kernel us GB/s | copies only "
           "us GB/s%s\n", nd < 2 ? " (in a bench build: -DHC_BENCH_DIAG=1)" : "");
    for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
        uint64_t N = Ns[ni];
        uint32_t copies;
        hc_container *c = bench_container(path, 0, N, K, &copies);
        double us[2] = {0, 0}, mb = 0;
        for (int d = 0; d < nd; d++) {
            hc_gpu_model *md = NULL;
            if (hc_gpu_model_load(g[d], c, NULL, &md, msg, sizeof msg)) die("scaling load", msg);
            uint64_t layers, bytes;
            double secs;
            hc_gpu_model_stats(md, &layers, &bytes, &secs);
            mb = (double)bytes / copies / 1e6;
            ours_ctx oc = {md, copies, x, y, 1, N, K, NULL};
            double host = 0;
            us[d] = graph_us(&oc, &host);
            hc_gpu_model_free(md);
        }
        if (nd == 2)
            printf("scaling: %6llu %7.1f | %8.1f %6.0f | %8.1f %6.0f\n", (unsigned long long)N,
                   mb, us[0], mb / us[0] * 1e3, us[1], mb / us[1] * 1e3);
        else
            printf("scaling: %6llu %7.1f | %8.1f %6.0f | %8s %6s\n", (unsigned long long)N, mb,
                   us[0], mb / us[0] * 1e3, "-", "-");
        fflush(stdout);
        hc_container_free(c);
        unlink(path);
    }
    cudaFree(x), cudaFree(y);
    hc_gpu_free(g[0]), hc_gpu_free(g[1]);
}

/* HC_BENCH_KERNELS=1: the kernels that can run 1 <= M <= 128 side by side on the bench's four
 * layers (each forced with hc_gpu_model_force_kernel where its family serves M; "auto" is the
 * chooser's pick), to place the skinny family's range. */
void kernel_sweep(hc_gpu *g) {
    static const uint64_t ms[] = {1, 8, 16, 24, 32, 48, 64, 96, 128};
    static const char *const ks[] = {"auto",  "skinny16", "skinny32", "skinny64",  "ws64",
                                     "ws128", "t8",       "t16",      "skinny16q", "skinny32q",
                                     "skinny64q", "ws128k"};
    /* the largest M each serves (ws64, ws128, ws128k -- v84, forced only --: from 17 up;
     * skinny16q/32q timed to 64, skinny64q to 128) */
    static const uint64_t kmax[] = {~0ull, 128, 128, 128, ~0ull, ~0ull, 8, 16, 64, 64, 128, ~0ull};
    /* Humming's figures on this H200 as issue 15 gives them, [layer][M = 16, 64] in the order
     * of the loops below (int4 28672, int4 8192^2, mxfp4 28672, mxfp4 8192^2) */
    static const double humming[4][2] = {{45.0, 66.0}, {17.6, 24.6}, {58.4, 75.8}, {22.1, 27.6}};
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-sweep-%d.hconvert", (int)getpid());
    double stream = bench_stream(g);
    cublasLtHandle_t lt;
    LT(cublasLtCreate(&lt));
    const size_t ws_bytes = 64ull << 20;
    void *x, *y, *ws;
    CK(cudaMalloc(&x, 128ull * 8192 * 2));
    CK(cudaMalloc(&y, 128ull * 28672 * 2));
    CK(cudaMalloc(&ws, ws_bytes));
    fill_bf16(x, 128ull * 8192, 1);
    printf("kernels: stream read %.0f GB/s\n", stream);
    printf("kernels: layer N x K M | us per kernel:");
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) printf(" %s", ks[ki]);
    printf(" | cuBLASLt bf16 | Humming (issue 15)\n");
    /* HC_BENCH_LAYER=1: the 8192^2 layers only (a short call) */
    const int h0 = getenv("HC_BENCH_LAYER") ? atoi(getenv("HC_BENCH_LAYER")) & 1 : 0;
    for (int si = 0; si < 2; si++)
        for (int hi = h0; hi < 2; hi++) {
            uint64_t N = bench_shapes[hi][0], K = bench_shapes[hi][1];
            uint32_t copies;
            hc_container *c = NULL;
            hc_gpu_model *md = bench_model(g, path, si, N, K, &c, &copies);
            void *wb[2]; /* the peer's bf16 weights, two copies (rotated like ours) */
            CK(cudaMalloc(&wb[0], N * K * 2));
            CK(cudaMalloc(&wb[1], N * K * 2));
            fill_bf16(wb[0], N * K, 11), fill_bf16(wb[1], N * K, 12);
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                printf("kernels: %-14.14s %5llux%-5llu %4llu |", bench_label(si),
                       (unsigned long long)N, (unsigned long long)K, (unsigned long long)ms[mi]);
                /* each kernel timed twice, the row forward then backward, the better time
                 * kept: the H200 clocks down under sustained load, and the kernel timed first
                 * in a row ran 3-9% faster than the same kernel timed later (session 17);
                 * "auto" a third time between the two (session 22: at the row's ends it read
                 * 3-7% slower than the same launch forced on 28672x8192) */
                enum { NK = sizeof ks / sizeof ks[0] };
                double best[NK];
                for (int pass = 0; pass < 2 * NK + 1; pass++) {
                    const size_t ki = pass < NK    ? (size_t)pass
                                      : pass == NK ? 0
                                                   : (size_t)(2 * NK - pass);
                    const bool wsk = ki == 4 || ki == 5 || ki == 11; /* (from M = 17) */
                    if (pass < NK) best[ki] = -1; /* (not served: "-") */
                    if (ms[mi] > kmax[ki] || (wsk && ms[mi] <= 16)) continue;
                    if (hc_gpu_model_force_kernel(md, ks[ki], msg, sizeof msg)) {
                        best[ki] = -2; /* (refused: "n/a") */
                        continue;
                    }
                    ours_ctx oc = {md, copies, x, y, ms[mi], N, K, NULL};
                    double host = 0, us = graph_us(&oc, &host);
                    if (best[ki] < 0 || us < best[ki]) best[ki] = us;
                }
                for (size_t ki = 0; ki < NK; ki++)
                    if (best[ki] >= 0)
                        printf(" %8.1f", best[ki]);
                    else
                        printf(" %8s", best[ki] == -1 ? "-" : "n/a");
                hc_gpu_model_force_kernel(md, NULL, msg, sizeof msg);
                double pus = lt_time(lt, wb[0], wb[1], x, y, ws, ws_bytes, ms[mi], N, K);
                const double hm = ms[mi] == 16 ? humming[si * 2 + hi][0]
                                  : ms[mi] == 64 ? humming[si * 2 + hi][1]
                                                 : 0;
                printf(" | %8.1f", pus);
                if (hm > 0) printf(" | %6.1f", hm);
                printf("\n");
                fflush(stdout);
            }
            cudaFree(wb[0]), cudaFree(wb[1]);
            hc_gpu_model_free(md);
            hc_container_free(c);
            unlink(path);
        }
    cublasLtDestroy(lt);
    cudaFree(x), cudaFree(y), cudaFree(ws);
}

#ifdef HC_BENCH_DIAG
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* HC_BENCH_TIMELINE=1 (a bench build): where a launch's time goes, per block and per SM (the
 * kernels' HC_GPU_DIAG_TIMELINE records of the last launch of a graph of back-to-back
 * launches), at M = 1 (small-M kernels) and M = 16, 64 (the skinny ones, whose fixed cost this
 * looks for: bench/NOTES.md session 17): the spread of block starts, the first tile's wait
 * (skinny: the first stage decoded, after the PDL wait), the loop (skinny: to the last
 * sums), the outputs (skinny: the last segment's store or fix-up), and the finishing time of
 * SMs by the number of blocks they ran. */
void timeline(void) {
    static const struct {
        int si;
        uint64_t N, M;
    } cases[] = {{0, 8192, 1},  {0, 28672, 1},  {0, 33792, 1},  {1, 8192, 1},  {1, 28672, 1},
                 {0, 8192, 16}, {0, 28672, 16}, {1, 8192, 16},  {1, 28672, 16}, {0, 8192, 64},
                 {0, 28672, 64}, {1, 8192, 64}, {1, 28672, 64}};
    const uint64_t K = 8192;
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-timeline-%d.hconvert", (int)getpid());
    hc_gpu *g = NULL;
    if (hc_gpu_open(&g, msg, sizeof msg) ||
        hc__gpu_diag_set(g, HC_GPU_DIAG_TIMELINE, msg, sizeof msg))
        die("timeline open", msg);
    void *x, *y;
    CK(cudaMalloc(&x, K * 64 * 2));
    CK(cudaMalloc(&y, 33792ull * 64 * 2));
    fill_bf16(x, K * 64, 1);
    enum { MAXB = 8192, MAXSM = 1024 };
    static uint64_t rec[MAXB * 5], endt[MAXB], first[MAXB], smend[MAXSM];
    static unsigned smn[MAXSM];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        uint64_t N = cases[ci].N, M = cases[ci].M;
        uint32_t copies;
        hc_container *c = bench_container(path, cases[ci].si, N, K, &copies);
        hc_gpu_model *md = NULL;
        if (hc_gpu_model_load(g, c, NULL, &md, msg, sizeof msg)) die("timeline load", msg);
        ours_ctx oc = {md, copies, x, y, M, N, K, NULL};
        double host = 0, us = graph_us(&oc, &host);
        size_t nb = 0;
        if (hc__gpu_diag_timeline(md, rec, MAXB * 5, &nb, msg, sizeof msg)) die("timeline", msg);
        uint64_t t0 = UINT64_MAX, tmax0 = 0, tend = 0;
        for (size_t b = 0; b < nb; b++) {
            const uint64_t *r = rec + b * 5;
            t0 = r[1] < t0 ? r[1] : t0, tmax0 = r[1] > tmax0 ? r[1] : tmax0;
            tend = r[4] > tend ? r[4] : tend;
        }
        memset(smend, 0, sizeof smend), memset(smn, 0, sizeof smn);
        uint64_t loop = 0, tail = 0;
        for (size_t b = 0; b < nb; b++) {
            const uint64_t *r = rec + b * 5;
            unsigned sm = (unsigned)r[0] % MAXSM;
            smn[sm]++;
            smend[sm] = r[4] - t0 > smend[sm] ? r[4] - t0 : smend[sm];
            endt[b] = r[4] - t0, first[b] = r[2] - r[1];
            loop += r[3] - r[2], tail += r[4] - r[3];
        }
        qsort(endt, nb, sizeof endt[0], cmp_u64), qsort(first, nb, sizeof first[0], cmp_u64);
        printf("timeline: %s N=%llu K=%llu M=%llu: %.1f us per launch (graph); last launch: %zu "
               "blocks over %.2f us, starts spread %.2f us, first tile after %.2f (median) / "
               "%.2f (max) us, loop %.2f us and outputs %.2f us per block (mean); block ends at "
               "10/50/90/100%%: %.2f %.2f %.2f %.2f us\n",
               bench_label(cases[ci].si), (unsigned long long)N, (unsigned long long)K,
               (unsigned long long)M, us,
               nb, (double)(tend - t0) / 1e3, (double)(tmax0 - t0) / 1e3,
               (double)first[nb / 2] / 1e3, (double)first[nb - 1] / 1e3,
               (double)loop / (double)nb / 1e3, (double)tail / (double)nb / 1e3,
               (double)endt[nb / 10] / 1e3, (double)endt[nb / 2] / 1e3,
               (double)endt[nb * 9 / 10] / 1e3, (double)endt[nb - 1] / 1e3);
        for (unsigned k = 1; k <= 16; k++) { /* SMs by blocks run: how many, when they finish */
            unsigned cnt = 0;
            uint64_t sum = 0, mx = 0, mn = UINT64_MAX;
            for (unsigned sm = 0; sm < MAXSM; sm++)
                if (smn[sm] == k) {
                    cnt++, sum += smend[sm];
                    mx = smend[sm] > mx ? smend[sm] : mx, mn = smend[sm] < mn ? smend[sm] : mn;
                }
            if (cnt)
                printf("timeline:   %3u SMs ran %2u blocks: done at %.2f (min) %.2f (mean) "
                       "%.2f (max) us\n", cnt, k, (double)mn / 1e3, (double)sum / cnt / 1e3,
                       (double)mx / 1e3);
        }
        fflush(stdout);
        hc_gpu_model_free(md);
        hc_container_free(c);
        unlink(path);
    }
    cudaFree(x), cudaFree(y);
    hc_gpu_free(g);
}

/* HC_BENCH_FIXUP=1 (a bench build): what the skinny kernels' stream-K fix-up costs a launch --
 * each bench layer at M = 16, 32, 64 on the skinny kernel of that tile, timed as the sweep
 * times it and with the fix-up skipped (HC_GPU_DIAG_NO_FIXUP: a cut tile's segments are stored,
 * then no fence, arrival or sums; those tiles' outputs are wrong), side by side. Session 18's
 * timeline put a quarter of 8192^2's blocks 4.6 us after the rest at M = 16; this says how much
 * of that a back-to-back launch (under PDL) actually pays. */
void fixup_cost(void) {
    static const uint64_t ms[] = {16, 32, 64};
    static const char *const ks[] = {"skinny16", "skinny32", "skinny64"};
    char path[128], msg[1024];
    snprintf(path, sizeof path, "/tmp/hc-gpu-fixup-%d.hconvert", (int)getpid());
    hc_gpu *g[2] = {NULL, NULL};
    if (hc_gpu_open(&g[0], msg, sizeof msg) || hc_gpu_open(&g[1], msg, sizeof msg) ||
        hc__gpu_diag_set(g[1], HC_GPU_DIAG_NO_FIXUP, msg, sizeof msg))
        die("fixup open", msg);
    void *x, *y;
    CK(cudaMalloc(&x, 64ull * 8192 * 2));
    CK(cudaMalloc(&y, 64ull * 28672 * 2));
    fill_bf16(x, 64ull * 8192, 1);
    printf("fixup: layer N x K M kernel | us: full, fix-up skipped | the fix-up's share\n");
    for (int si = 0; si < 2; si++)
        for (int hi = 0; hi < 2; hi++) {
            const uint64_t N = bench_shapes[hi][0], K = bench_shapes[hi][1];
            uint32_t copies;
            hc_container *c = bench_container(path, si, N, K, &copies);
            hc_gpu_model *md[2] = {NULL, NULL};
            for (int d = 0; d < 2; d++)
                if (hc_gpu_model_load(g[d], c, NULL, &md[d], msg, sizeof msg)) die("fixup load", msg);
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                double best[2] = {-1, -1};
                /* full, skipped, skipped, full: the better of two each (the clocks drift) */
                for (int pass = 0; pass < 4; pass++) {
                    const int d = pass == 1 || pass == 2;
                    if (hc_gpu_model_force_kernel(md[d], ks[mi], msg, sizeof msg)) die("fixup force", msg);
                    ours_ctx oc = {md[d], copies, x, y, ms[mi], N, K, NULL};
                    double host = 0, us = graph_us(&oc, &host);
                    if (best[d] < 0 || us < best[d]) best[d] = us;
                }
                printf("fixup: %-14.14s %5llux%-5llu %3llu %-8s | %7.1f %7.1f | %5.1f us (%4.1f%%)\n",
                       bench_label(si), (unsigned long long)N, (unsigned long long)K,
                       (unsigned long long)ms[mi], ks[mi], best[0], best[1], best[0] - best[1],
                       100.0 * (best[0] - best[1]) / best[0]);
                fflush(stdout);
            }
            hc_gpu_model_free(md[0]), hc_gpu_model_free(md[1]);
            hc_container_free(c);
            unlink(path);
        }
    cudaFree(x), cudaFree(y);
    hc_gpu_free(g[0]), hc_gpu_free(g[1]);
}
#endif
