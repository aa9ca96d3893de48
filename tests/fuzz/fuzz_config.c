/* fuzz_config.c: libFuzzer target for config.json and the legacy quantization configs, through
 * model and scheme resolution (formats/model.c, the Python-regex subset of formats/pyregex.c)
 * and every decoder they steer (formats/decode.c). Input: one byte choosing the fixture whose
 * safetensors sit beside the config (its low 7 bits, modulo the list below; bit 7 names the
 * legacy file quant_config.json instead of quantize_config.json), then config.json's text,
 * then optionally a NUL byte and the legacy file's text. An empty config part means no
 * config.json at all. The list is append-only: committed inputs name fixtures by position. */
#include "fuzz_util.h"

static const char *const fixtures[] = {
    "ckpt/single",         "quant/gptq_4bit_sym_v1", "quant/gptq_4bit_asym_v1",
    "quant/gptq_4bit_v2",  "quant/gptq_2bit",        "quant/gptq_3bit",
    "quant/gptq_8bit",     "quant/gptq_desc_act",    "quant/gptq_dynamic",
    "quant/gptq_legacy_qcfg", "quant/gptq_mixtral_moe", "quant/awq_gemm",
    "quant/awq_legacy",    "quant/ct_mixed",         "quant/ct_w4_actorder",
    "quant/ct_w4a16_g32_asym", "quant/ct_w8a8_int",  "quant/ct_fp8_block",
    "quant/ct_nvfp4",      "quant/ct_mxfp4_v014",    "quant/ct_mxfp8",
    "quant/ct_moe_qwen3",  "quant/ct_w3_new",        "quant/ct_w4afp8",
    "quant/deepseek_fp8",  "quant/gptoss_mxfp4",     "quant/ct_fp8_channel",
    "ckpt/sharded",
};
#define NFIX (sizeof fixtures / sizeof fixtures[0])
static const char *const inputs[] = {"config.json", "quantize_config.json", "quant_config.json",
                                     NULL};
static char *staged[NFIX];

FZ_STAGE_FIXTURES(fixtures, inputs, staged)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    if (n < 1) return 0;
    const char *dir = staged[(data[0] & 0x7f) % NFIX];
    const char *legacy = inputs[data[0] & 0x80 ? 2 : 1];
    const char *cfg = (const char *)data + 1;
    size_t cfg_len = n - 1;
    const char *nul = memchr(cfg, 0, cfg_len);
    if (nul) cfg_len = (size_t)(nul - cfg);
    bool ok = (cfg_len == 0 || fz_write(dir, inputs[0], cfg, cfg_len)) &&
              (!nul || fz_write(dir, legacy, nul + 1, n - 1 - cfg_len - 1));
    hc_err err = {0};
    if (ok) fz_expect(fz_checkpoint_pass(dir, &err), err.msg);
    for (int i = 0; i < 3; i++) fz_unlink(dir, inputs[i]);
    return 0;
}
