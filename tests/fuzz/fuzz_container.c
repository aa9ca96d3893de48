/* fuzz_container.c: libFuzzer target for the container reader (runtime/container.c): the
 * input is a whole model.hconvert, opened, verified and every tensor decoded (zstd ones
 * included); every tiled tensor's layout_params parsed and all its tiles decoded
 * (contract/layout.c); then the container read back as a checkpoint (its config_json, the
 * model pass, the tiles decoder of formats/decode.c). Built with
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION so open skips hash checks and reaches the parser. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "hcrt.h"
#include "tile_layer.h"

/* Every stripe of the tiled tensor t, as the CPU executor reads it. */
static void decode_tiles(hc_container *c, const hc_tensor_info *t) {
    const hc_tensor_info *lt;
    hc_tile_params p;
    const int32_t *perm;
    hc_err err = {0};
    if (hc__tile_layer(c, t->name, &lt, &p, &perm, &err) != HC_OK) return;
    uint64_t cnt;
    if (!hc__mul_u64(HC_TILE_N, p.Kp, &cnt)) return;
    float *out = malloc((cnt ? cnt : 1) * sizeof *out);
    const uint8_t *bytes = hc_container_stored(c, lt);
    for (uint64_t e = 0; out && e < p.E; e++)
        for (uint64_t nb = 0; nb < p.tiles_n; nb++) hc__tile_decode_stripe(&p, bytes, e, nb, out);
    free(out);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    const char *dir = fz_tmpdir();
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, HC_CONTAINER_FILE);
    if (!fz_write(dir, HC_CONTAINER_FILE, data, n)) return 0;
    hc_container *c = NULL;
    char msg[1024];
    hc_status st = hc_container_open(path, 0, &c, msg, sizeof msg);
    fz_expect(st == HC_OK, msg);
    if (st == HC_OK) {
        hc_container_verify(c, NULL);
        for (size_t i = 0; i < hc_container_tensor_count(c); i++) {
            const hc_tensor_info *t = hc_container_tensor(c, i);
            const void *d;
            void *owned;
            if (hc_container_tensor_data(c, t, &d, &owned) == HC_OK) free(owned);
            if (t->layout_params) decode_tiles(c, t);
        }
        hc_container_free(c);
        hc_err err = {0};
        fz_expect(fz_checkpoint_pass(dir, &err), err.msg);
    }
    return 0;
}
