/* fuzz_index.c: libFuzzer target for the shard index, model.safetensors.index.json
 * (formats/checkpoint_shards.c: its weight_map against the shards, both directions, and its
 * metadata), then the checkpoint it assembles through model resolution and decoding. Input:
 * one byte choosing the fixture whose shards and configs sit beside the index (modulo the
 * list below), then the index text; an empty text means no index at all. The list is
 * append-only: committed inputs name fixtures by position. */
#include "fuzz_util.h"

static const char *const fixtures[] = {"ckpt/demo", "ckpt/sharded", "quant/bad_index_total_size"};
#define NFIX (sizeof fixtures / sizeof fixtures[0])
#define INDEX "model.safetensors.index.json"
static const char *const inputs[] = {INDEX, NULL};
static char *staged[NFIX];

FZ_STAGE_FIXTURES(fixtures, inputs, staged)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    if (n < 1) return 0;
    const char *dir = staged[data[0] % NFIX];
    hc_err err = {0};
    if (n == 1 || fz_write(dir, INDEX, data + 1, n - 1)) fz_expect(fz_checkpoint_pass(dir, &err), err.msg);
    fz_unlink(dir, INDEX);
    return 0;
}
