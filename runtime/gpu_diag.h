/* gpu_diag.h: measurement-only modes of the small-M (and skinny) kernels, for
 * bench/gpu_bench.c. They exist only in a bench build -- the library compiled with
 * -DHC_BENCH_DIAG=1 (docs/gpu.md, "Measurements") -- never in the default kernels or the public
 * API (include/hcrt.h). A mode set on a GPU handle adds -DHC_GEMV_DIAG=<mode> to the modules it
 * builds afterwards. */
#ifndef HC_GPU_DIAG_H
#define HC_GPU_DIAG_H

#ifdef HC_BENCH_DIAG
#include <stddef.h>
#include <stdint.h>

#include "hcrt.h"

typedef enum {
    HC_GPU_DIAG_NONE = 0,
    /* the small-M kernels copy every tile and skip the arithmetic (their results are wrong), to
     * time the copy pipeline alone (bench/NOTES.md v19) */
    HC_GPU_DIAG_COPY_ONLY = 1,
    /* they, and the dense skinny kernels, record per block 5 words: SM, then the global timer
     * in ns at entry, first tile arrived, loop end (skinny: the last sums done), outputs
     * written (bench/NOTES.md v30) */
    HC_GPU_DIAG_TIMELINE = 2,
    /* the skinny kernels' blocks store a cut tile's segment and go on: no fence, no arrival,
     * no sums (the outputs of tiles cut between blocks are wrong), to time the stream-K fix-up
     * by difference (bench/NOTES.md session 24) */
    HC_GPU_DIAG_NO_FIXUP = 3
} hc_gpu_diag_mode;

/* The mode of the modules g builds: set before any model is loaded on g (HC_INVALID after). */
hc_status hc__gpu_diag_set(hc_gpu *g, hc_gpu_diag_mode mode, char *msg, size_t msg_len);
/* HC_GPU_DIAG_TIMELINE: copies the records of the model's last small-M or skinny call (after
 * a synchronisation) into rec (cap words), *n blocks. */
hc_status hc__gpu_diag_timeline(hc_gpu_model *m, uint64_t *rec, size_t cap, size_t *n, char *msg,
                               size_t msg_len);
/* hc_gpu_moe of model m stops after stage `last` (1 route, 2 the expand of x's rows where
 * gate_up reads them sorted, 3 gate_up, 4 the activation, 5 down; 0: the whole block), so that
 * a benchmark times the stages by difference (y is then not written). */
void hc__gpu_diag_moe_stages(hc_gpu_model *m, unsigned last);
#endif

#endif
