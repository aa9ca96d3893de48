/* synth.h: a synthetic compressed-tensors W4A16 (int4, group 128, BF16 scales) checkpoint
 * written shard by shard, for the validate and convert benchmarks. Needs benchutil.h. */
#ifndef HC_SYNTH_H
#define HC_SYNTH_H

#include <sys/stat.h>

#define HIDDEN 4096
#define INTER 11008
#define GS 128

static char g_dir[4096];
static int g_layers;

static void extra_cleanup(void); /* each benchmark removes what else it made */

static void cleanup(void) {
    char p[4200];
    extra_cleanup();
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


static void write_config(void) {
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", g_dir);
    write_file(cfg, "{\"architectures\":[\"LlamaForCausalLM\"],\"quantization_config\":{"
                    "\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\","
                    "\"version\":\"0.12.0\",\"quantization_status\":\"compressed\","
                    "\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":{"
                    "\"num_bits\":4,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"group\","
                    "\"group_size\":128}}},\"ignore\":[\"lm_head\"]}}");
}

#endif
