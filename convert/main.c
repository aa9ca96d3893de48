/* main.c: the `hconvert` command line. Results go to stdout, progress and errors to stderr;
 * exit 0 success, 1 invalid input or failed check, 2 bad usage, 3 I/O or internal error. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "hconvert.h"
#include "checkpoint.h"
#include "container_fmt.h"
#include "inspect.h"
#include "npy.h"
#include "outdir.h"
#include "validate.h"

static const char usage_text[] =
    "usage: hconvert <command> [options]\n"
    "\n"
    "commands:\n"
    "  convert SRC OUT [--target sm90|sm80|cpu|passthrough] [--tp N] [--threads N] [--dry-run] [--json]\n"
    "          [--max-extract-bytes N] [--max-extract-ratio R]\n"
    "        convert the checkpoint SRC (folder, .safetensors file, or .tar/.tar.gz/.tar.zst/.zip\n"
    "        of one) into the folder OUT: OUT/" HC_CONTAINER_FILE " (every quantized module\n"
    "        repacked into the kernels' tile layout) plus the non-weight files; with --tp N, one\n"
    "        such folder per rank, OUT/rank<r>; --dry-run prints the plan\n"
    "  inspect PATH [--json] [--tensors] [--max-extract-bytes N] [--max-extract-ratio R]\n"
    "        describe a checkpoint or a container (headers only)\n"
    "  validate SRC [--json] [--tp N] [--max-extract-bytes N] [--max-extract-ratio R]\n"
    "        check every module (shapes, packing, scales, zero points, g_idx, MoE experts) and\n"
    "        report which kernels and tensor-parallel sizes can run it; exit 1 on any error\n"
    "  dequant SRC NAME -o FILE.npy [--max-extract-bytes N] [--max-extract-ratio R]\n"
    "        write the effective float32 weights of module NAME ([N, K] or [E, N, K])\n"
    "  run OUT NAME --input X.npy -o Y.npy [--device cpu|gpu] [--topk-ids I.npy --topk-weights W.npy]\n"
    "        Y = X W^T for the layer NAME of the container in OUT (X [M, K] float32); with\n"
    "        routing, one row per (token, k): weight[t, k] * X[t] W_ids[t, k]^T; NAME an MoE\n"
    "        block (\"model.layers.0.mlp\"): the whole block, Y [tokens, H] (cpu: float32; gpu:\n"
    "        hc_gpu_moe, bf16 X and Y)\n"
    "  verify OUT\n"
    "        recompute every hash of the container in OUT (a folder or a container file)\n"
    "\n"
    "options:\n"
    "  --max-extract-bytes N, --max-extract-ratio R\n"
    "                 an archive SRC extracts at most N bytes (suffix K, M, G or T: powers of\n"
    "                 1024; default 2T) and at most R times its own size (default 100)\n"
    "  -h, --help     show this help\n"
    "  --version      show the version\n"
    "\n"
    "exit status: 0 success, 1 invalid input or failed check, 2 bad usage, 3 i/o or internal "
    "error\n";

typedef struct {
    const char *pos[4];
    int npos;
    bool json, tensors, dry_run;
    long threads, tp;
    const char *target;
    const char *output;
    const char *input, *device, *topk_ids, *topk_weights;
    hc_ckpt_opts ckpt; /* --max-extract-bytes, --max-extract-ratio */
} args_t;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hconvert: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nrun 'hconvert --help' for usage\n");
    va_end(ap);
    return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* A byte count: digits with an optional K, M, G or T (powers of 1024), in [1, 2^63). */
static bool parse_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9') return false;
    unsigned long long v = strtoull(s, &end, 10);
    const char *units = "KMGT", *u = *end ? strchr(units, *end) : NULL;
    if (errno || end == s || (*end && (!u || end[1])) || v == 0) return false;
    uint64_t r = v;
    for (int k = u ? (int)(u - units) + 1 : 0; k > 0; k--)
        if (!hc__mul_u64(r, 1024, &r)) return false;
    if (r > INT64_MAX) return false; /* hc_converter_set takes an int64_t */
    *out = r;
    return true;
}

/* --max-extract-bytes / --max-extract-ratio into a->ckpt; 0 or a usage error. */
static int parse_extract_limit(const char *opt, const char *v, args_t *a) {
    long ratio;
    if (!strcmp(opt, "--max-extract-bytes")) {
        if (!parse_size(v, &a->ckpt.max_extract_bytes))
            return usage_error("--max-extract-bytes '%s': expected a positive byte count "
                               "(suffix K, M, G or T allowed)", v);
    } else {
        if (!parse_long(v, 1, 1000000000, &ratio))
            return usage_error("--max-extract-ratio '%s': expected an integer in [1, 1000000000]",
                               v);
        a->ckpt.max_extract_ratio = (uint64_t)ratio;
    }
    return 0;
}

/* Parses options valid for a command (allowed letters: j --json, t --tensors, d --dry-run,
 * T --threads, p --tp, g --target, o -o, r the run options, x the extraction limits). */
static int parse_args(int argc, char **argv, const char *allowed, int maxpos, args_t *a) {
    memset(a, 0, sizeof *a);
    a->tp = 1;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        char need = 0;
        if (!strcmp(s, "--json")) need = 'j', a->json = true;
        else if (!strcmp(s, "--tensors")) need = 't', a->tensors = true;
        else if (!strcmp(s, "--dry-run")) need = 'd', a->dry_run = true;
        else if (!strcmp(s, "-o")) {
            if (!strchr(allowed, 'o')) return usage_error("option '%s' does not apply here", s);
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", s);
            a->output = argv[++i];
            continue;
        } else if (!strcmp(s, "--input") || !strcmp(s, "--device") || !strcmp(s, "--topk-ids") ||
                   !strcmp(s, "--topk-weights")) {
            if (!strchr(allowed, 'r')) return usage_error("option '%s' does not apply here", s);
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", s);
            const char **dst = !strcmp(s, "--input") ? &a->input : !strcmp(s, "--device") ? &a->device
                               : !strcmp(s, "--topk-ids") ? &a->topk_ids : &a->topk_weights;
            *dst = argv[++i];
            continue;
        } else if (!strcmp(s, "--max-extract-bytes") ||
                   !strcmp(s, "--max-extract-ratio")) {
            if (!strchr(allowed, 'x')) return usage_error("option '%s' does not apply here", s);
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", s);
            int r = parse_extract_limit(s, argv[i + 1], a);
            if (r) return r;
            i++;
            continue;
        } else if (!strcmp(s, "--threads") || !strcmp(s, "--tp") || !strcmp(s, "--target")) {
            need = s[2] == 't' && s[3] == 'h' ? 'T' : s[3] == 'p' ? 'p' : 'g';
            if (!strchr(allowed, need)) return usage_error("option '%s' does not apply here", s);
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", s);
            const char *v = argv[++i];
            if (need == 'T' && !parse_long(v, 0, 4096, &a->threads))
                return usage_error("--threads '%s': expected an integer in [0, 4096]", v);
            if (need == 'p' && !parse_long(v, 1, 64, &a->tp))
                return usage_error("--tp '%s': expected an integer in [1, 64]", v);
            if (need == 'g') a->target = v;
            continue;
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option '%s'", s);
        } else {
            if (a->npos >= maxpos) return usage_error("unexpected argument '%s'", s);
            a->pos[a->npos++] = s;
            continue;
        }
        if (!strchr(allowed, need)) return usage_error("option '%s' does not apply here", s);
    }
    return 0;
}

static int fail(hc_status st, const char *msg) {
    fprintf(stderr, "hconvert: %s\n", msg && *msg ? msg : hc_strerror(st));
    return hc_status_exit_code(st);
}

/* Kernel modules for arch, for every container convert wrote under out (rank folders with
 * --tp), into the JIT cache. Without NVRTC this is a note, not a failure. */
static int precompile(const char *out, long tp, const char *arch) {
    hc_outdir_precompiled r;
    hc_status st = hc__outdir_precompile(out, (unsigned)tp, arch, &r);
    if (st == HC_UNSUPPORTED) {
        fprintf(stderr, "hconvert: note: kernels not precompiled for %s: %s\n", arch, r.msg);
        return 0;
    }
    if (st) return fail(st, r.msg);
    if (r.unstored) /* built, but the next run builds them again */
        fprintf(stderr, "hconvert: note: %u kernel modules for %s built, not all kept: %s\n",
                r.built, arch, r.why);
    else
        fprintf(stderr, "convert: %u kernel modules for %s in the kernel cache (built or "
                "already there)\n", r.built, arch);
    return 0;
}

static int cmd_convert(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "jdTpgx", 2, &a);
    if (r) return r;
    if (a.npos != 2) return usage_error("%s", "convert needs SRC and OUT");
    if (a.target && strcmp(a.target, "sm90") && strcmp(a.target, "sm80") &&
        strcmp(a.target, "cpu") && strcmp(a.target, "passthrough"))
        return usage_error("--target '%s': expected sm90, sm80, cpu or passthrough", a.target);
    hc_converter *c = hc_converter_create();
    if (!c) return fail(HC_NOMEM, "out of memory");
    hc_status st = hc_converter_set(c, HC_CONV_TP_SIZE, a.tp);
    if (!st) st = hc_converter_set(c, HC_CONV_THREADS, a.threads);
    if (!st) st = hc_converter_set(c, HC_CONV_DRY_RUN, a.dry_run);
    if (!st) st = hc_converter_set(c, HC_CONV_PROGRESS, isatty(2) && !a.json);
    if (!st) st = hc_converter_set(c, HC_CONV_REPACK, !a.target || strcmp(a.target, "passthrough"));
    if (!st && a.ckpt.max_extract_bytes)
        st = hc_converter_set(c, HC_CONV_MAX_EXTRACT_BYTES, (int64_t)a.ckpt.max_extract_bytes);
    if (!st && a.ckpt.max_extract_ratio)
        st = hc_converter_set(c, HC_CONV_MAX_EXTRACT_RATIO, (int64_t)a.ckpt.max_extract_ratio);
    if (!st) st = hc_converter_run(c, a.pos[0], a.pos[1]);
    int rc;
    if (st) {
        rc = fail(st, hc_converter_errmsg(c));
    } else {
        const hc_conv_stats *s = hc_converter_stats(c);
        double gbs = s->seconds > 0 ? (double)s->source_bytes / s->seconds / 1e9 : 0;
        fputs(hc_converter_report(c), a.dry_run && !a.json ? stdout : stderr);
        if (a.json)
            printf("{\"dry_run\": %s, \"tp\": %ld, \"tensors\": %llu, \"source_bytes\": %llu, "
                   "\"container_bytes\": %llu, \"files_copied\": %llu, \"modules_repacked\": %llu, "
                   "\"modules_kept\": %llu, \"tiles\": %llu, \"mx_unfolded\": %llu, "
                   "\"padding_bytes\": %llu, \"seconds\": %.6f}\n",
                   a.dry_run ? "true" : "false", a.tp, (unsigned long long)s->tensors,
                   (unsigned long long)s->source_bytes, (unsigned long long)s->container_bytes,
                   (unsigned long long)s->files_copied, (unsigned long long)s->modules_repacked,
                   (unsigned long long)s->modules_kept, (unsigned long long)s->tiles,
                   (unsigned long long)s->mx_unfolded, (unsigned long long)s->padding_bytes,
                   s->seconds);
        else if (a.dry_run)
            printf("plan: %llu tensors per rank, %llu source bytes, %llu modules to repack, %llu "
                   "kept in their source layout; nothing written\n",
                   (unsigned long long)s->tensors, (unsigned long long)s->source_bytes,
                   (unsigned long long)s->modules_repacked, (unsigned long long)s->modules_kept);
        else
            printf("converted %llu tensors (%.3f MB) into %s%s (%llu bytes; %llu modules repacked "
                   "into %llu tiles, %llu kept, %llu MXFP4 row-tiles unfolded) and copied %llu "
                   "files in %.3f s (%.2f GB/s)\n", (unsigned long long)s->tensors,
                   (double)s->source_bytes / 1e6, a.pos[1],
                   a.tp > 1 ? "/rank*/" HC_CONTAINER_FILE : "/" HC_CONTAINER_FILE,
                   (unsigned long long)s->container_bytes, (unsigned long long)s->modules_repacked,
                   (unsigned long long)s->tiles, (unsigned long long)s->modules_kept,
                   (unsigned long long)s->mx_unfolded, (unsigned long long)s->files_copied,
                   s->seconds, gbs);
        rc = 0;
        /* an explicit GPU target: build its kernels for the kinds of layers written into the
         * kernel cache now (NVRTC needs no GPU), so that the first run compiles nothing */
        bool gpu = a.target && (!strcmp(a.target, "sm90") || !strcmp(a.target, "sm80"));
        if (gpu && !a.dry_run) rc = precompile(a.pos[1], a.tp, !strcmp(a.target, "sm90") ? "sm_90a" : "sm_80");
    }
    hc_converter_free(c);
    return rc;
}

static int cmd_inspect(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "jtx", 1, &a);
    if (r) return r;
    if (a.npos != 1) return usage_error("%s", "inspect needs PATH");
    hc_err err = {0};
    hc_status st = hc__inspect(a.pos[0], a.json, a.tensors, &a.ckpt, stdout, &err);
    return st ? fail(st, err.msg) : 0;
}

static int cmd_validate(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "jpTx", 1, &a);
    if (r) return r;
    if (a.npos != 1) return usage_error("%s", "validate needs SRC");
    hc_validate_opts o = {.json = a.json, .threads = (int)a.threads,
                          .progress = isatty(2) && !a.json, .ckpt = a.ckpt};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--tp")) o.tp[0] = (unsigned)a.tp, o.ntp = 1;
    hc_err err = {0};
    size_t errors = 0;
    hc_status st = hc__validate(a.pos[0], &o, stdout, &errors, &err);
    if (st) return fail(st, err.msg);
    return errors ? 1 : 0;
}

static int cmd_dequant(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "ox", 2, &a);
    if (r) return r;
    if (a.npos != 2 || !a.output) return usage_error("%s", "dequant needs SRC, NAME and -o FILE.npy");
    hc_dequant_opts o = {a.ckpt.max_extract_bytes, a.ckpt.max_extract_ratio};
    hc_dequant_result d;
    char msg[HC_ERRMSG_MAX];
    hc_err err = {0};
    hc_status st = hc_dequant(a.pos[0], a.pos[1], &o, &d, msg, sizeof msg);
    for (size_t i = 0; i < d.nwarnings; i++)
        fprintf(stderr, "hconvert: warning: %s\n", d.warnings[i]);
    if (!st) st = hc__npy_write_f32(a.output, d.shape, d.ndim, d.values, &err);
    else hc__fail(&err, st, "%s", msg);
    hc_dequant_free(&d);
    return st ? fail(st, err.msg) : 0;
}

/* The MoE block `layer` on the GPU (hc_gpu_moe, the routed experts) plus its shared expert
 * where the record names one (its dense layers through hc_gpu_linear, SiLU and the sigmoid
 * gate on the host), as hc_cpu_moe_block computes the block. *g: the device, opened here. */
static hc_status run_moe_gpu(hc_container *c, const char *layer, const float *x, uint64_t T,
                             uint64_t h, const int32_t *ids, const float *w, uint64_t topk,
                             float *y, hc_gpu **g, hc_err *err) {
    char msg[HC_ERRMSG_MAX] = "";
    hc_gpu_model *md = NULL;
    const hc_moe_layer_info *l = NULL;
    for (size_t i = 0; i < hc_container_moe_count(c); i++)
        if (!strcmp(hc_container_moe(c, i)->name, layer)) l = hc_container_moe(c, i);
    uint64_t H = 0, n, k, e;
    float *gate = NULL, *up = NULL, *d = NULL, *sg = NULL;
    hc_status st = hc_gpu_open(g, msg, sizeof msg);
    if (!st) st = hc_gpu_model_load(*g, c, layer, &md, msg, sizeof msg); /* (its experts only) */
    if (!st && (st = hc_gpu_moe_shape(md, layer, &H, NULL, NULL)) != HC_OK) /* (hc_gpu_moe says why) */
        st = hc_gpu_moe_host(md, layer, x, 1, ids, w, topk, y, msg, sizeof msg);
    if (!st && H != h)
        st = hc__fail(err, HC_INVALID, "X has %llu columns, MoE block '%s' takes H=%llu",
                     (unsigned long long)h, layer, (unsigned long long)H);
    if (!st) st = hc_gpu_moe_host(md, layer, x, T, ids, w, topk, y, msg, sizeof msg);
    if (!st && l && l->shared_gate) { /* y += sigmoid(gate . x) x down(silu(g) x u) */
        st = hc_linear_shape(c, l->shared_gate, &n, &k, &e, msg, sizeof msg);
        if (!st && (!(gate = malloc(T * n * 4 + 4)) || !(up = malloc(T * n * 4 + 4)) ||
                    !(d = malloc(T * h * 4 + 4)) || !(sg = malloc(T * 4 + 4))))
            st = hc__fail(err, HC_NOMEM, "out of memory");
        hc_gpu_model *sm = NULL;
        const char *parts[3] = {l->shared_gate, l->shared_up, l->shared_down};
        for (int p = 0; !st && p < 3; p++) {
            hc_gpu_model_free(sm);
            sm = NULL;
            /* (a layer kept in its source dtype is not on the GPU: the CPU executor runs it) */
            bool on_gpu = hc_gpu_model_load(*g, c, parts[p], &sm, msg, sizeof msg) == HC_OK;
            msg[0] = 0;
            const float *in = p < 2 ? x : gate;
            float *out = p == 0 ? gate : p == 1 ? up : d;
            uint64_t kk = p < 2 ? h : n, nn = p < 2 ? n : h;
            st = on_gpu ? hc_gpu_linear_host(sm, parts[p], 0, in, T, kk, out, nn, msg, sizeof msg)
                        : hc_cpu_linear(c, parts[p], 0, in, T, kk, out, nn, msg, sizeof msg);
            if (!st && p == 1)
                for (uint64_t i = 0; i < T * n; i++)
                    gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
        }
        hc_gpu_model_free(sm);
        if (!st && l->shared_expert_gate) /* a [1, H] source layer: the CPU executor */
            st = hc_cpu_linear(c, l->shared_expert_gate, 0, x, T, h, sg, 1, msg, sizeof msg);
        for (uint64_t t = 0; !st && t < T; t++) {
            float s = l->shared_expert_gate ? 1.0f / (1.0f + expf(-sg[t])) : 1.0f;
            for (uint64_t j = 0; j < h; j++) y[t * h + j] += s * d[t * h + j];
        }
    }
    if (st && msg[0]) hc__fail(err, st, "%s", msg);
    free(gate), free(up), free(d), free(sg);
    hc_gpu_model_free(md);
    return st;
}

static int cmd_run(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "or", 2, &a);
    if (r) return r;
    if (a.npos != 2 || !a.input || !a.output)
        return usage_error("%s", "run needs OUT, NAME, --input X.npy and -o Y.npy");
    if (a.device && strcmp(a.device, "cpu") && strcmp(a.device, "gpu"))
        return usage_error("--device '%s': expected cpu or gpu", a.device);
    if (!a.topk_ids != !a.topk_weights)
        return usage_error("%s", "--topk-ids and --topk-weights go together");
    bool gpu = a.device && !strcmp(a.device, "gpu");
    hc_err err = {0};
    hc_gpu *g = NULL;
    char msg[HC_ERRMSG_MAX] = "";
    float *x = NULL, *y = NULL, *w = NULL;
    int32_t *ids = NULL;
    hc_container *c = NULL;
    char *file = hc_container_locate(a.pos[0]);
    hc_status st = HC_OK;
    uint64_t xs[2], is[2], ws[2], N = 0, K = 0, E = 0;
    if (!file) {
        st = hc__fail(&err, HC_INVALID, "'%s' is not an hconvert container nor a folder holding "
                     "'%s'", a.pos[0], HC_CONTAINER_FILE);
        goto done;
    }
    st = hc_container_open(file, 0, &c, msg, sizeof msg);
    if (st) {
        hc__fail(&err, st, "%s", msg);
        goto done;
    }
    st = hc__npy_read_2d(a.input, HC_NPY_F32, xs, (void **)&x, &err);
    if (st) goto done;
    if (!a.topk_ids) {
        st = hc_linear_shape(c, a.pos[1], &N, &K, &E, msg, sizeof msg);
        if (!st && xs[1] != K)
            st = hc__fail(&err, HC_INVALID, "'%s': X has %llu columns, layer '%s' takes K=%llu",
                         a.input, (unsigned long long)xs[1], a.pos[1], (unsigned long long)K);
        if (st) {
            if (msg[0]) hc__fail(&err, st, "%s", msg);
            goto done;
        }
        y = malloc((xs[0] * N + 1) * sizeof *y);
        if (!y) {
            st = hc__fail(&err, HC_NOMEM, "out of memory");
            goto done;
        }
        if (gpu) { /* the tensor-core kernels: bf16 activations, float32 accumulation */
            hc_gpu_model *md = NULL;
            st = hc_gpu_open(&g, msg, sizeof msg);
            if (!st) st = hc_gpu_model_load(g, c, a.pos[1], &md, msg, sizeof msg);
            if (!st)
                st = hc_gpu_linear_host(md, a.pos[1], 0, x, xs[0], K, y, N, msg, sizeof msg);
            hc_gpu_model_free(md);
        } else {
            st = hc_cpu_linear(c, a.pos[1], 0, x, xs[0], K, y, N, msg, sizeof msg);
        }
        if (st) hc__fail(&err, st, "%s", msg);
        else st = hc__npy_write_f32(a.output, (uint64_t[]){xs[0], N}, 2, y, &err);
        if (!st) printf("run: Y [%llu, %llu] = X W^T of '%s' -> %s (%s)\n",
                        (unsigned long long)xs[0], (unsigned long long)N, a.pos[1], a.output,
                        gpu ? hc_gpu_arch(g) : "cpu");
        if (!st && gpu) fprintf(stderr, "run: the GPU rounds X to bf16 and returns bf16 Y\n");
        goto done;
    }
    st = hc__npy_read_2d(a.topk_ids, HC_NPY_I32, is, (void **)&ids, &err);
    if (!st) st = hc__npy_read_2d(a.topk_weights, HC_NPY_F32, ws, (void **)&w, &err);
    if (st) goto done;
    if (is[0] != xs[0] || ws[0] != xs[0] || is[1] != ws[1] || is[1] == 0) {
        st = hc__fail(&err, HC_INVALID, "routing: X has %llu tokens, ids are [%llu, %llu], weights "
                     "[%llu, %llu]; both must be [tokens, top-k]", (unsigned long long)xs[0],
                     (unsigned long long)is[0], (unsigned long long)is[1],
                     (unsigned long long)ws[0], (unsigned long long)ws[1]);
        goto done;
    }
    uint64_t T = xs[0], topk = is[1];
    bool block = false; /* NAME is a whole MoE block of the record: Y [T, H] */
    for (size_t i = 0; i < hc_container_moe_count(c) && !block; i++)
        block = !strcmp(hc_container_moe(c, i)->name, a.pos[1]);
    if (gpu && !block) {
        st = hc__fail(&err, HC_UNSUPPORTED, "--device gpu with routing runs a whole MoE block of "
                     "the container's record; '%s' is not one (the routed rows of one layer run "
                     "with --device cpu)", a.pos[1]);
        goto done;
    }
    if (block) {
        if (!(y = malloc((T * xs[1] + 1) * sizeof *y))) {
            st = hc__fail(&err, HC_NOMEM, "out of memory");
            goto done;
        }
        if (gpu) st = run_moe_gpu(c, a.pos[1], x, T, xs[1], ids, w, topk, y, &g, &err);
        else if ((st = hc_cpu_moe_block(c, a.pos[1], x, T, xs[1], ids, w, topk, y, msg, sizeof msg)))
            hc__fail(&err, st, "%s", msg);
        if (!st) st = hc__npy_write_f32(a.output, (uint64_t[]){T, xs[1]}, 2, y, &err);
        if (!st) printf("run: Y [%llu, %llu] = MoE block '%s' for %llu tokens x top-%llu -> %s "
                        "(%s)\n", (unsigned long long)T, (unsigned long long)xs[1], a.pos[1],
                        (unsigned long long)T, (unsigned long long)topk, a.output,
                        gpu ? hc_gpu_arch(g) : "cpu");
        if (!st && gpu) fprintf(stderr, "run: the GPU rounds X to bf16 and returns bf16 Y\n");
        goto done;
    }
    st = hc_cpu_moe(c, a.pos[1], x, T, xs[1], ids, w, topk, &y, &N, msg, sizeof msg);
    if (st) hc__fail(&err, st, "%s", msg);
    if (!st) st = hc__npy_write_f32(a.output, (uint64_t[]){T * topk, N}, 2, y, &err);
    if (!st) printf("run: Y [%llu, %llu] = routed rows of '%s' for %llu tokens x top-%llu -> %s "
                    "(cpu)\n", (unsigned long long)(T * topk), (unsigned long long)N, a.pos[1],
                    (unsigned long long)T, (unsigned long long)topk, a.output);
done:
    free(x), free(y), free(w), free(ids), free(file);
    hc_container_free(c);
    hc_gpu_free(g);
    return st ? fail(st, err.msg) : 0;
}

/* Prints one container's verification; ctx: the worst exit status so far. */
static void print_verified(void *ctx, const hc_outdir_verified *v) {
    int *worst = ctx, rc = 0;
    if (!v->st)
        printf("verified '%s': %zu tensors, %llu bytes, every hash matches\n", v->file, v->tensors,
               (unsigned long long)v->bytes);
    else if (v->checked)
        fprintf(stderr, "hconvert: %s\nhconvert: verify failed: %llu problem%s in '%s'\n", v->msg,
                (unsigned long long)v->nbad, v->nbad == 1 ? "" : "s", v->file);
    else
        fail(v->st, v->msg);
    if (v->st) rc = hc_status_exit_code(v->st);
    if (rc > *worst) *worst = rc;
}

static int cmd_verify(int argc, char **argv) {
    args_t a;
    int r = parse_args(argc, argv, "", 1, &a);
    if (r) return r;
    if (a.npos != 1) return usage_error("%s", "verify needs OUT");
    int worst = 0;
    hc__outdir_verify(a.pos[0], print_verified, &worst);
    return worst;
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {{"convert", cmd_convert},   {"inspect", cmd_inspect}, {"verify", cmd_verify},
                    {"validate", cmd_validate}, {"dequant", cmd_dequant}, {"run", cmd_run}};
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("hconvert %s (container format %d.%d)\n", HC_VERSION_STRING, HC_CT_MAJOR,
               HC_CT_MINOR);
        return 0;
    }
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        if (strcmp(cmd, commands[c].name)) continue;
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
                fputs(usage_text, stdout);
                return 0;
            }
        return commands[c].run(argc - 2, argv + 2);
    }
    char esc[256];
    return usage_error("unknown command '%s'", hc__escape(cmd, esc, sizeof esc));
}
