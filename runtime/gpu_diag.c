/* gpu_diag.c: the measurement-only modes of gpu_diag.h, compiled into bench builds only
 * (-DHC_BENCH_DIAG=1): the default library carries none of it. */
#ifdef HC_BENCH_DIAG
#include "gpu_diag.h"

#include <stdio.h>

#include "gpu_int.h"

hc_status hc__gpu_diag_set(hc_gpu *g, hc_gpu_diag_mode mode, char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    pthread_mutex_lock(&g->mu);
    if (mode > HC_GPU_DIAG_NO_FIXUP)
        st = hc__fail(&err, HC_INVALID, "measurement mode %d is none of 0, 1, 2, 3", (int)mode);
    else if (g->nmods && g->diag != (unsigned)mode)
        st = hc__fail(&err, HC_INVALID, "the measurement mode is set before a model is loaded "
                     "(%d kernel modules are built)", g->nmods);
    else
        g->diag = (unsigned)mode;
    pthread_mutex_unlock(&g->mu);
    if (!st && mode == HC_GPU_DIAG_COPY_ONLY)
        fprintf(stderr, "hconvert: copy-only measurement mode: M <= 16 results are wrong "
                        "(a measurement of the copy pipeline)\n");
    if (!st && mode == HC_GPU_DIAG_NO_FIXUP)
        fprintf(stderr, "hconvert: no-fix-up measurement mode: the skinny kernels' tiles cut "
                        "between blocks are wrong (a measurement of the fix-up)\n");
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}

size_t hc__gpu_diag_workspace(hc_gpu_model *md, const hc_gpu_choice *ch, size_t ws) {
    bool timeline = md->g->diag == HC_GPU_DIAG_TIMELINE;
    if (ch->ksplit <= 1 && !timeline) return ws;
    /* 5 words per block after the partial sums (small M: grid tiles_n x K split) or the
     * segments (skinny: grid blocks x 1) */
    size_t blocks = (size_t)ch->grid[0] * (ch->grid[1] ? ch->grid[1] : 1);
    size_t tl = timeline ? blocks * 40 : 0;
    md->tl_off = ch->part_bytes, md->tl_blocks = tl / 40;
    return (size_t)ch->part_bytes + tl;
}

hc_status hc__gpu_diag_timeline(hc_gpu_model *md, uint64_t *rec, size_t cap, size_t *n,
                               char *msg, size_t msg_len) {
    hc_err err = {0};
    hc_status st = HC_OK;
    *n = 0;
    if (md->g->diag != HC_GPU_DIAG_TIMELINE || !md->tl_blocks) {
        st = hc__fail(&err, HC_INVALID, "no timeline: set HC_GPU_DIAG_TIMELINE (hc__gpu_diag_set) "
                     "before loading the model and run a layer with M <= 64 first (small-M or "
                     "skinny)");
        goto out;
    }
    size_t want = md->tl_blocks * 5 < cap ? md->tl_blocks * 5 : cap / 5 * 5;
    CU(hc__cuda.sync(), "synchronise before reading the timeline");
    CU(hc__cuda.memcpy_(rec, (const char *)md->ws + md->tl_off, want * 8, cudaMemcpyDeviceToHost),
       "cudaMemcpy(timeline)");
    *n = want / 5;
out:
    if (st && msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
    return st;
}
void hc__gpu_diag_moe_stages(hc_gpu_model *m, unsigned last) {
    pthread_mutex_lock(&m->mu);
    m->moe_stop = last;
    pthread_mutex_unlock(&m->mu);
}
#endif
