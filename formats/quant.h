/* quant.h: the canonical quantized tensor every format decoder produces, and the schemes
 * (from config.json) that say how each module is stored. Repackers consume only this. */
#ifndef HC_QUANT_H
#define HC_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "elements.h"

/* What the elements are. */
typedef enum {
    HC_Q_PLAIN = 0, /* unquantized float or integer tensor, values as stored */
    HC_Q_INT,       /* unsigned b-bit codes u with a zero point: w = (u - z) * s */
    HC_Q_FP4,       /* E2M1 codes: w = fp4(u) * s (NVFP4: * (s / global)) */
    HC_Q_FP8_E4M3,  /* w = e4m3(u) * s */
    HC_Q_FP8_E5M2,
} hc_qkind;

/* How a module is stored on disk. */
#define HC_FMT_MAP(X)                                                                   \
    X(PLAIN, "unquantized")                                                             \
    X(CT_PACK, "compressed-tensors pack-quantized")                                     \
    X(CT_INT, "compressed-tensors int-quantized")                                       \
    X(CT_FLOAT, "compressed-tensors float-quantized")                                   \
    X(CT_NVFP4, "compressed-tensors nvfp4-pack-quantized")                              \
    X(CT_MXFP4, "compressed-tensors mxfp4-pack-quantized")                              \
    X(CT_MXFP8, "compressed-tensors mxfp8-quantized")                                   \
    X(GPTQ, "gptq")                                                                     \
    X(AWQ, "awq gemm")                                                                  \
    X(GPTOSS_MXFP4, "gpt-oss mxfp4")                                                    \
    X(FP8_SCALE_INV, "fp8 weight_scale_inv")                                            \
    X(TILES, "hconvert tiles")

typedef enum {
#define HC_FMT_ENUM(n, s) HC_FMT_##n,
    HC_FMT_MAP(HC_FMT_ENUM)
#undef HC_FMT_ENUM
} hc_fmt;
const char *hc__fmt_name(hc_fmt f);

typedef enum {
    HC_STRAT_TENSOR,
    HC_STRAT_CHANNEL,
    HC_STRAT_GROUP,
    HC_STRAT_BLOCK,
    HC_STRAT_TENSOR_GROUP,
} hc_strategy;

/* A module's quantization scheme, resolved from the configs (and, where the configs are
 * silent or wrong, from the data). */
typedef struct {
    hc_fmt fmt;
    int bits;             /* code width */
    bool is_float;        /* float codes (fp4/fp8) */
    bool symmetric;
    hc_strategy strategy;
    int64_t group_size;   /* along K; -1 = whole row */
    uint64_t block[2];    /* block strategy: rows, cols */
    bool actorder;        /* g_idx expected */
    int ct_version[3];    /* compressed-tensors library version, {0,0,0} when absent */
    bool gptq_v2;         /* GPTQ zero points stored as z (not z-1) */
    bool scale_inverse;   /* fp8 weight_scale_inv divides the codes (GPTQModel's "inverse") */
    char group[64];       /* config group that matched (for messages) */
} hc_scheme;

/* Roles of the tensors that make up a module. */
typedef enum {
    HC_ROLE_WEIGHT, /* weight, weight_packed, qweight, *_blocks */
    HC_ROLE_SCALE,  /* weight_scale, scales, weight_scale_inv, *_scales */
    HC_ROLE_ZERO,   /* weight_zero_point, qzeros */
    HC_ROLE_GIDX,   /* weight_g_idx, g_idx */
    HC_ROLE_SHAPE,  /* weight_shape */
    HC_ROLE_GSCALE, /* weight_global_scale */
    HC_ROLE_BIAS,
    HC_ROLE_OTHER, /* activation scales and the like: carried, not decoded */
    HC_ROLE_COUNT
} hc_role;

typedef struct {
    char *name;                        /* module name (NAME on the command line) */
    const hc_ck_entry *t[HC_ROLE_COUNT]; /* by role; NULL when absent */
    bool fused;                        /* gpt-oss style [E, ...] tensors */
    bool conflict;                     /* two tensors claim one role: not decoded */
    bool unresolved; /* carries quantized tensors but no scheme was resolved: not decoded */
    hc_scheme scheme;
    /* MoE membership: layer key and expert id, or expert = -1 */
    int expert;
    char *moe_key; /* "<prefix>.experts.*.<rest>" */
} hc_module;

/* The canonical quantized tensor. Codes are one byte per element, [E][N][K]. */
typedef struct {
    uint64_t E, N, K;
    int ndim;                /* 2, or 3 for fused experts; plain tensors keep their own rank */
    uint64_t plain_shape[HC_MAX_DIMS];
    hc_qkind kind;
    int bits;
    uint8_t *codes;          /* INT: unsigned field; FP4: 4-bit code; FP8: the byte */
    double *plain;           /* PLAIN: values as float64 */
    /* scales: [E][sn][sk]; group shape gn along N, gk along K */
    double *scales;
    uint64_t sn, sk, gn, gk;
    hc_dtype scale_dtype;
    /* FP8: w = fp8(u) / s. The scales stay the source's values (a divisor's reciprocal is
     * rarely exact in its type), so whatever stores or applies them must divide. */
    bool scale_divides;
    /* zero points in the code domain, same shape as scales; NULL: zero_const everywhere */
    int32_t *zeros;
    int32_t zero_const;
    double global_div;       /* NVFP4: scale is divided by this; 0 when unused */
    int32_t *g_idx;          /* [E][K] group of column k, or NULL for k / gk */
    hc_fmt fmt;
    /* INT 4-bit: 0 when some code is 0 (-8 of symmetric int4), 1 when none is, read from the
     * packed words, so the same whether or not the codes are decoded; -1 when unknown */
    int code_min;
    /* The codes in natural order straight from the source (no copy), when the source stores
     * them so: 4-bit as nibbles (element 2j low), 8-bit as bytes XOR packed_xor. Rows of
     * packed_row_bytes, [E][N]. NULL when the source order differs (GPTQ, AWQ). */
    const uint8_t *packed;
    uint64_t packed_row_bytes;
    uint8_t packed_xor;
    /* GPTQ: the packed words are [K/8][N] (column-major): row n's word j is at word
     * j * packed_col_stride + n, its 8 nibbles in natural order. 0 for row-major sources. */
    uint64_t packed_col_stride;
    char quirks[128];        /* version quirks applied, for provenance */
} hc_qtensor;

void hc__qtensor_free(hc_qtensor *q);

/* The scale-sanity rule (scales.c), stated once for validate and convert: every scale is
 * finite and > 0, and so is the global divisor (NVFP4) when there is one. The census
 * classifies a decode's scales; the NVFP4 decoder refuses a global divisor of any class, so a
 * decoded tensor's divisor keeps the rule. */
typedef enum {
    HC_SCALE_NAN,
    HC_SCALE_INF, /* either sign */
    HC_SCALE_ZERO, /* either sign */
    HC_SCALE_NEGATIVE,
    HC_SCALE_CLASSES
} hc_scale_class;
extern const char *const hc__scale_class_names[HC_SCALE_CLASSES]; /* "NaN", "inf", ... */
typedef struct {
    uint64_t n;                       /* scales classified */
    uint64_t count[HC_SCALE_CLASSES]; /* of them, how many break the rule, by class */
    uint64_t bad;                     /* every count */
    uint64_t nsane;                   /* scales that keep the rule (written to sane) */
} hc_scale_census;
/* The class of one scale, or -1 when it keeps the rule. */
int hc__scale_class_of(double s);
/* Classifies scales [first, first + n) of q (all of them: 0, E * sn * sk; one expert's: e *
 * sn * sk, sn * sk); sane (n values, or NULL) receives the scales that keep the rule, in
 * order. The range must lie inside q's scales. */
void hc__scale_census_of(const hc_qtensor *q, uint64_t first, uint64_t n, double *sane,
                         hc_scale_census *c);

/* One problem found while decoding or validating. */
typedef enum { HC_SEV_WARNING = 0, HC_SEV_ERROR = 1 } hc_severity;
typedef struct {
    hc_severity severity;
    char *tensor;
    char *rule;
    uint64_t count;
    int *experts;
    size_t nexperts;
    char *message;
    /* a configuration refusal that makes every module unreadable (unsupported quant_method,
     * format, version, sparsity ...), not one module's problem: hc_dequant refuses the
     * checkpoint for it */
    bool whole_checkpoint;
} hc_finding;

/* Grown through hc__findings_add / hc__findings_append only: the array holds the power of two
 * at or above n (geometric growth). */
typedef struct {
    hc_finding *v;
    size_t n;
} hc_findings;

void hc__findings_add(hc_findings *f, hc_severity sev, const char *tensor, const char *rule,
                     uint64_t count, const int *experts, size_t nexperts, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
void hc__findings_append(hc_findings *dst, hc_findings *src); /* moves src's entries */
void hc__findings_free(hc_findings *f);
void hc__finding_clear(hc_finding *x); /* frees one finding's strings */
size_t hc__findings_errors(const hc_findings *f);
/* Marks the findings added since f held `first` as applying to the whole checkpoint. */
static inline void hc__findings_mark_checkpoint(hc_findings *f, size_t first) {
    for (size_t i = first; i < f->n; i++) f->v[i].whole_checkpoint = true;
}

/* The set of modules of a checkpoint with their schemes. */
typedef struct {
    hc_ckpt *ck;
    hc_module *m;
    size_t n;
    char quant_method[32];   /* "" for unquantized checkpoints */
    hc_findings config_findings; /* scheme problems: unsupported configs, unmatched modules */
} hc_model;

/* Groups the checkpoint's tensors into modules and resolves every module's scheme. Refusals
 * (unsupported configs) are findings, not failures; only I/O and memory fail. */
hc_status hc__model_open(hc_ckpt *ck, hc_model **out, hc_err *err);
void hc__model_free(hc_model *m);
const hc_module *hc__model_find(const hc_model *m, const char *name);
/* Whether a module holds tensors only a quantized scheme explains (scales, zero points,
 * weight_shape, packed or fused weights): such a module never decodes as unquantized. */
bool hc__module_carries_quant(const hc_module *m);
/* The experts of a per-expert MoE layer named without the expert id
 * ("model.layers.0.mlp.experts.gate_proj" for "...experts.J.gate_proj"), by expert id.
 * Returns how many were found (up to cap). */
size_t hc__model_experts(const hc_model *m, const char *stacked, const hc_module **out,
                        size_t cap);

/* Decode flags. */
#define HC_DECODE_NO_CODES 1u /* check everything, decode scales, leave q->codes NULL */
/* the codes only where the source does not store them in natural order (q->packed NULL):
 * what a repacker that reads q->packed needs */
#define HC_DECODE_CODES_UNPACKED 2u

/* Decodes one module into the canonical tensor. Shape and packing problems are findings
 * (and make the call return HC_INVALID); ck must be mapped. */
hc_status hc__module_decode(const hc_model *md, const hc_module *m, unsigned flags, hc_qtensor *q,
                           hc_findings *f, hc_err *err);
/* Drops the module's tensor pages from this process's memory (the page cache keeps them):
 * streaming passes call it after each module so resident memory stays bounded. */
void hc__module_release(const hc_model *md, const hc_module *m);

/* Float value of element (e, n, k), computed in float64 in the order FORMATS.md's readers
 * use: (u - z) * s; fp4 * (s / global); fp8 * s, or fp8 / s when scale_divides. */
double hc__qtensor_value(const hc_qtensor *q, uint64_t e, uint64_t n, uint64_t k);
/* Writes every element as float32 into out ([E][N][K] or the plain shape). */
void hc__qtensor_dequant(const hc_qtensor *q, float *out);
uint64_t hc__qtensor_numel(const hc_qtensor *q);

#endif
