/* container.c: the container reader. mmap, then validate preamble, header hash and every
 * header field (the zstd expansion limits included) before any tensor is handed out; verify
 * re-hashes every byte and decodes every zstd tensor through a fixed-size buffer. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "base.h"
#include "container_fmt.h"
#include "jsonutil.h"
#include "layout.h"
#include "moe_record.h"

struct hc_container {
    char *path;
    int fd;
    const unsigned char *map;
    uint64_t size;
    unsigned major, minor;
    uint64_t header_len, data_off;
    char *header; /* NUL-terminated copy */
    cJSON *json;
    hc_tensor_info *tensors;
    char **params_text; /* printed layout_params, per tensor (NULL when absent) */
    hc_moe_dims *tile_shape; /* a tiled tensor's logical E, N, K (known false otherwise) */
    hc_moe_layer_info *moe;   /* model.moe_layers, checked at open */
    size_t nmoe;
    size_t ntensors;
    uint64_t zstd_max_raw; /* HC_CONTAINER_LIMIT_ZSTD_RAW */
    hc_err err;
};

static hc_status bad(hc_container *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static hc_status bad(hc_container *c, const char *fmt, ...) {
    char m[HC_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return hc__fail(&c->err, HC_INVALID, "container '%s': %s", c->path, m);
}

/* Fuzzing builds (the libFuzzer convention) skip the open-time hash checks so the fuzzer
 * reaches the header parser; no other build defines the macro. */
static bool skip_hash_checks(void) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    return true;
#else
    return false;
#endif
}

static hc_status read_preamble(hc_container *c) {
    const unsigned char *p = c->map;
    if (c->size < HC_CT_PREAMBLE_SIZE)
        return bad(c, "file too small (%llu bytes; the preamble alone takes %u; truncated?)",
                   (unsigned long long)c->size, HC_CT_PREAMBLE_SIZE);
    if (memcmp(p, HC_CT_MAGIC, 8) != 0) return bad(c, "not an hconvert container (bad magic)");
    if (!skip_hash_checks() &&
        XXH3_64bits(p, HC_PRE_PREAMBLE_HASH) != hc__le64(p + HC_PRE_PREAMBLE_HASH))
        return hc__fail(&c->err, HC_CHECKSUM, "container '%s': preamble hash mismatch (the first "
                       "64 bytes are corrupt)", c->path);
    c->major = hc__le16(p + HC_PRE_MAJOR);
    c->minor = hc__le16(p + HC_PRE_MINOR);
    if (c->major != HC_CT_MAJOR)
        return hc__fail(&c->err, HC_UNSUPPORTED, "container '%s': format version %u.%u; this "
                       "reader reads %u.x", c->path, c->major, c->minor, HC_CT_MAJOR);
    if (hc__le32(p + HC_PRE_SIZE) != HC_CT_PREAMBLE_SIZE ||
        hc__le64(p + HC_PRE_HEADER_OFFSET) != HC_CT_PREAMBLE_SIZE)
        return bad(c, "preamble size or header offset is not %u", HC_CT_PREAMBLE_SIZE);
    uint64_t fsz = hc__le64(p + HC_PRE_FILE_SIZE);
    if (fsz != c->size)
        return bad(c, "file is %llu bytes but the preamble says %llu (truncated or extended)",
                   (unsigned long long)c->size, (unsigned long long)fsz);
    c->header_len = hc__le64(p + HC_PRE_HEADER_LENGTH);
    if (c->header_len > HC_CT_MAX_HEADER || c->header_len > c->size - HC_CT_PREAMBLE_SIZE)
        return bad(c, "header length %llu is out of range", (unsigned long long)c->header_len);
    uint64_t want;
    hc__align_u64(HC_CT_PREAMBLE_SIZE + c->header_len, HC_CT_ALIGN, &want);
    c->data_off = hc__le64(p + HC_PRE_DATA_OFFSET);
    if (c->data_off != want || c->data_off > c->size)
        return bad(c, "data offset %llu is not the 4096-aligned end of the header (%llu) or lies "
                   "past the end of the file", (unsigned long long)c->data_off,
                   (unsigned long long)want);
    if (!skip_hash_checks() && XXH3_64bits(p + HC_CT_PREAMBLE_SIZE, (size_t)c->header_len) !=
                                   hc__le64(p + HC_PRE_HEADER_HASH))
        return hc__fail(&c->err, HC_CHECKSUM, "container '%s': header hash mismatch (the JSON "
                       "header is corrupt)", c->path);
    return HC_OK;
}

static hc_status u64_field(hc_container *c, const cJSON *o, const char *key, size_t idx,
                           uint64_t *out) {
    if (!hc__json_u64(cJSON_GetObjectItemCaseSensitive(o, key), out))
        return bad(c, "tensor %zu: \"%s\" must be an integer in [0, 2^53)", idx, key);
    return HC_OK;
}

static hc_status shape_field(hc_container *c, const cJSON *o, const char *key, size_t idx,
                             uint64_t *dims, int *ndim) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    int n = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || n > HC_MAX_DIMS)
        return bad(c, "tensor %zu: \"%s\" must be an array of at most %d integers", idx, key,
                   HC_MAX_DIMS);
    for (int d = 0; d < n; d++)
        if (!hc__json_u64(cJSON_GetArrayItem(a, d), &dims[d]))
            return bad(c, "tensor %zu: \"%s\"[%d] must be an integer in [0, 2^53)", idx, key, d);
    *ndim = n;
    return HC_OK;
}

/* A zstd tensor's raw_length is within the handle's limit (HC_CT_ZSTD_MAX_RAW unless a caller
 * lowered it), so that no caller allocates more for it. */
static hc_status zstd_within_limit(hc_container *c, const hc_tensor_info *t) {
    if (t->raw_length <= c->zstd_max_raw) return HC_OK;
    char esc[512];
    return bad(c, "tensor '%s': zstd tensor of raw_length %llu, more than the %llu bytes a zstd "
               "tensor may expand to", hc__escape(t->name, esc, sizeof esc),
               (unsigned long long)t->raw_length, (unsigned long long)c->zstd_max_raw);
}

static hc_status parse_tensor(hc_container *c, const cJSON *o, size_t i, uint64_t *expect_off) {
    hc_tensor_info *t = &c->tensors[i];
    char esc[512];
    if (!cJSON_IsObject(o)) return bad(c, "tensor %zu is not an object", i);
    if (hc__json_duplicate_key(o)) return bad(c, "tensor %zu has a duplicate key", i);
    t->name = hc__json_str(o, "name");
    if (!t->name || !t->name[0]) return bad(c, "tensor %zu: missing or empty \"name\"", i);
    const char *nm = hc__escape(t->name, esc, sizeof esc);
    const char *dt = hc__json_str(o, "dtype");
    t->dtype = dt ? hc_dtype_from_name(dt) : HC_DTYPE_INVALID;
    if (t->dtype == HC_DTYPE_INVALID) return bad(c, "tensor '%s': missing or unknown dtype", nm);
    int nd2 = 0;
    HC_TRY(shape_field(c, o, "shape", i, t->shape, &t->ndim));
    HC_TRY(shape_field(c, o, "padded_shape", i, t->padded_shape, &nd2));
    if (nd2 != t->ndim) return bad(c, "tensor '%s': shape and padded_shape differ in rank", nm);
    uint64_t numel = 1, bits;
    for (int d = 0; d < t->ndim; d++) {
        if (t->padded_shape[d] < t->shape[d])
            return bad(c, "tensor '%s': padded_shape[%d] is smaller than shape[%d]", nm, d, d);
        if (!hc__mul_u64(numel, t->padded_shape[d], &numel))
            return bad(c, "tensor '%s': element count overflows 64 bits", nm);
    }
    t->layout = hc__json_str(o, "layout");
    if (!t->layout || !t->layout[0]) return bad(c, "tensor '%s': missing \"layout\"", nm);
    uint64_t lv;
    HC_TRY(u64_field(c, o, "layout_version", i, &lv));
    if (lv < 1 || lv > UINT32_MAX) return bad(c, "tensor '%s': layout_version out of range", nm);
    t->layout_version = (uint32_t)lv;
    bool source = !strcmp(t->layout, "source");
    const hc_layout_row *row = hc__layout_by_id(t->layout);
    bool tiled = row != NULL;
    if (!source && !tiled)
        return hc__fail(&c->err, HC_UNSUPPORTED, "container '%s': tensor '%s': layout '%s' is not "
                       "known to this reader (hconvert %s)", c->path, nm, t->layout,
                       HC_VERSION_STRING);
    if (t->layout_version > (source ? 1u : row->version))
        return hc__fail(&c->err, HC_UNSUPPORTED, "container '%s': tensor '%s': layout '%s' version "
                       "%u is newer than this reader's (%u); convert the checkpoint again",
                       c->path, nm, t->layout, t->layout_version, source ? 1u : row->version);
    HC_TRY(u64_field(c, o, "offset", i, &t->offset));
    HC_TRY(u64_field(c, o, "length", i, &t->length));
    HC_TRY(u64_field(c, o, "raw_length", i, &t->raw_length));
    const char *enc = hc__json_str(o, "encoding");
    if (enc && strcmp(enc, "raw") == 0) t->encoding = HC_ENC_RAW;
    else if (enc && strcmp(enc, "zstd") == 0) t->encoding = HC_ENC_ZSTD;
    else return bad(c, "tensor '%s': encoding must be \"raw\" or \"zstd\"", nm);
    const char *h = hc__json_str(o, "hash");
    if (!h || !hc__parse_hex64(h, &t->hash))
        return bad(c, "tensor '%s': \"hash\" must be 16 lowercase hex digits", nm);
    if (!hc__mul_u64(numel, hc_dtype_bits(t->dtype), &bits) || bits % 8 || bits / 8 != t->raw_length)
        return bad(c, "tensor '%s': raw_length %llu does not match its %s padded shape", nm,
                   (unsigned long long)t->raw_length, hc_dtype_name(t->dtype));
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(o, "layout_params");
    if (tiled) {
        hc_tile_params tp;
        hc_err perr = {0};
        if (hc__tile_params_parse(lp, t->layout, &tp, nm, &perr))
            return bad(c, "%s", perr.msg);
        /* a version-1 reader multiplies by every scale: a divisor tensor must say version 2,
         * or the same bytes would mean two weights */
        if (t->layout_version < hc__tile_layout_version(&tp))
            return bad(c, "tensor '%s': layout_params need layout version %u (scale_divides), "
                       "the tensor says %u", nm, hc__tile_layout_version(&tp), t->layout_version);
        if (hc__tile_bytes_of(&tp) != t->raw_length || t->dtype != HC_DT_U8)
            return bad(c, "tensor '%s': %llu bytes, its tiles need %llu (dtype U8)", nm,
                       (unsigned long long)t->raw_length, (unsigned long long)hc__tile_bytes_of(&tp));
        c->tile_shape[i] = (hc_moe_dims){true, tp.E, tp.N, tp.K};
        c->params_text[i] = cJSON_PrintUnformatted(lp);
        t->layout_params = c->params_text[i];
    } else if (lp) {
        return bad(c, "tensor '%s': layout_params given for layout 'source'", nm);
    }
    if (t->encoding == HC_ENC_ZSTD) HC_TRY(zstd_within_limit(c, t)); /* the format's, at open */
    if (t->encoding == HC_ENC_RAW && t->length != t->raw_length)
        return bad(c, "tensor '%s': raw tensor with length %llu != raw_length %llu", nm,
                   (unsigned long long)t->length, (unsigned long long)t->raw_length);
    if (t->offset % HC_CT_ALIGN) return bad(c, "tensor '%s': offset is not 4096-aligned", nm);
    if (t->offset != *expect_off)
        return bad(c, "tensor '%s': offset %llu, expected %llu (tensors must be contiguous, in "
                   "offset order, each 4096-aligned, with no overlap)", nm,
                   (unsigned long long)t->offset, (unsigned long long)*expect_off);
    uint64_t end;
    if (!hc__add_u64(t->offset, t->length, &end) || end > c->size)
        return bad(c, "tensor '%s': data [%llu, +%llu) runs past the end of the file (%llu)", nm,
                   (unsigned long long)t->offset, (unsigned long long)t->length,
                   (unsigned long long)c->size);
    if (i + 1 == c->ntensors) *expect_off = end;
    else hc__align_u64(end, HC_CT_ALIGN, expect_off);
    return HC_OK;
}

/* The zstd tensors together expand to at most HC_CT_ZSTD_MAX_RAW + HC_CT_ZSTD_MAX_RATIO x the
 * file size (each alone is at most HC_CT_ZSTD_MAX_RAW: parse_tensor). */
static hc_status check_zstd_total(hc_container *c) {
    uint64_t total = 0, allowed;
    if (!hc__mul_u64(HC_CT_ZSTD_MAX_RATIO, c->size, &allowed) ||
        !hc__add_u64(allowed, HC_CT_ZSTD_MAX_RAW, &allowed))
        allowed = UINT64_MAX;
    for (size_t i = 0; i < c->ntensors; i++) /* no overflow: < 2^32 terms of at most 2^26 */
        if (c->tensors[i].encoding == HC_ENC_ZSTD) total += c->tensors[i].raw_length;
    if (total > allowed)
        return bad(c, "zstd tensors expand to %llu bytes in all, more than the %llu allowed for "
                   "a file of %llu bytes (%llu + %u x its size)", (unsigned long long)total,
                   (unsigned long long)allowed, (unsigned long long)c->size,
                   (unsigned long long)HC_CT_ZSTD_MAX_RAW, HC_CT_ZSTD_MAX_RATIO);
    return HC_OK;
}

/* ---- model.moe_layers against the tensor table (the rules: contract/moe_record.c) ---- */
typedef struct {
    const char *name;
    size_t i;
} name_ix;
typedef struct {
    const hc_container *c;
    const name_ix *ix; /* the tensors sorted by name */
} moe_ctx;

static const hc_tensor_info *moe_find(const moe_ctx *x, const char *name, size_t *i) {
    const name_ix *r = hc__find_by_name(x->ix, x->c->ntensors, sizeof *x->ix, name);
    if (r && i) *i = r->i;
    return r ? &x->c->tensors[r->i] : NULL;
}

static bool moe_tensor(void *ctx, const char *name, int *ndim, const uint64_t **shape) {
    const hc_tensor_info *t = moe_find(ctx, name, NULL);
    if (t) *ndim = t->ndim, *shape = t->shape;
    return t != NULL;
}

/* A linear layer as the executors find it (a tiled tensor NAME, else the source NAME.weight),
 * or a source encoding the record may name but whose logical shape the table does not say
 * (a passthrough container's packed weights). */
static bool moe_linear(void *ctx, const char *name, hc_moe_dims *s) {
    const moe_ctx *x = ctx;
    char n[HC_MOE_NAME_MAX + 32];
    size_t i;
    *s = (hc_moe_dims){0};
    if (moe_find(x, name, &i) && x->c->tile_shape[i].known) {
        *s = x->c->tile_shape[i];
        return true;
    }
    static const char *const sfx[] = {".weight", ".weight_packed", ".qweight", "_blocks"};
    for (size_t k = 0; k < sizeof sfx / sizeof sfx[0]; k++) {
        snprintf(n, sizeof n, "%s%s", name, sfx[k]);
        const hc_tensor_info *t = moe_find(x, n, NULL);
        if (!t) continue;
        hc_dtype d = t->dtype;
        if (k == 0 && t->ndim == 2 && (d == HC_DT_F16 || d == HC_DT_BF16 || d == HC_DT_F32 ||
                                       d == HC_DT_F64 || d == HC_DT_F8_E4M3 || d == HC_DT_F8_E5M2))
            *s = (hc_moe_dims){true, 1, t->shape[0], t->shape[1]};
        return true;
    }
    return false;
}

static hc_status check_moe(hc_container *c, const cJSON *rec) {
    if (!rec) return HC_OK; /* written before the record existed: loads as before */
    hc_err e = {0};
    if (hc__moe_record_parse(rec, &c->moe, &c->nmoe, &e))
        return e.code == HC_NOMEM ? hc__fail(&c->err, HC_NOMEM, "out of memory")
                                  : bad(c, "model.moe_layers: %s", e.msg);
    name_ix *ix = malloc((c->ntensors ? c->ntensors : 1) * sizeof *ix);
    if (!ix) return hc__fail(&c->err, HC_NOMEM, "out of memory");
    for (size_t i = 0; i < c->ntensors; i++) ix[i] = (name_ix){c->tensors[i].name, i};
    qsort(ix, c->ntensors, sizeof *ix, hc__cmp_name);
    moe_ctx x = {c, ix};
    hc_moe_lookup lk = {moe_linear, moe_tensor, &x};
    hc_status st = HC_OK;
    for (size_t l = 0; l < c->nmoe && !st; l++)
        if (hc__moe_record_check(&c->moe[l], &lk, &e)) st = bad(c, "%s", e.msg);
    free(ix);
    return st;
}

static hc_status parse_header(hc_container *c) {
    c->header = malloc(c->header_len + 1);
    if (!c->header) return hc__fail(&c->err, HC_NOMEM, "out of memory");
    memcpy(c->header, c->map + HC_CT_PREAMBLE_SIZE, c->header_len);
    c->header[c->header_len] = 0;
    if (!hc__utf8_valid(c->header, c->header_len)) return bad(c, "header is not valid UTF-8");
    if (memchr(c->header, 0, c->header_len)) return bad(c, "header contains a NUL byte");
    c->json = cJSON_ParseWithLength(c->header, c->header_len);
    if (!cJSON_IsObject(c->json)) return bad(c, "header is not a JSON object");
    if (hc__json_duplicate_key(c->json)) return bad(c, "header has a duplicate key");
    const char *fmt = hc__json_str(c->json, "format");
    if (!fmt || strcmp(fmt, "hconvert") != 0) return bad(c, "header \"format\" is not \"hconvert\"");
    const cJSON *feat = cJSON_GetObjectItemCaseSensitive(c->json, "required_features");
    if (!cJSON_IsArray(feat)) return bad(c, "header lacks the \"required_features\" array");
    const cJSON *f;
    cJSON_ArrayForEach(f, feat) {
        static const char *const known[] = HC_CT_KNOWN_FEATURES;
        bool ok = false;
        for (size_t k = 0; cJSON_IsString(f) && k < sizeof known / sizeof known[0]; k++)
            ok |= strcmp(f->valuestring, known[k]) == 0;
        if (!ok) {
            char esc[128];
            return hc__fail(&c->err, HC_UNSUPPORTED, "container '%s': requires feature '%s', "
                           "which this reader (hconvert %s) does not know", c->path,
                           cJSON_IsString(f) ? hc__escape(f->valuestring, esc, sizeof esc) : "?",
                           HC_VERSION_STRING);
        }
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(c->json, "model");
    if (!cJSON_IsObject(m) || !hc__json_str(m, "converter") || !hc__json_str(m, "source_format") ||
        !hc__json_str(m, "target"))
        return bad(c, "header \"model\" must be an object with converter, source_format, target");
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(m, "source_version");
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tile_config");
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(m, "config_json");
    if (!(cJSON_IsString(sv) || cJSON_IsNull(sv)) || !cJSON_IsObject(tc) ||
        !(cJSON_IsString(cj) || cJSON_IsNull(cj)))
        return bad(c, "header \"model\": source_version (string or null), tile_config (object) "
                   "and config_json (string or null) are required");
    uint64_t rank, size;
    if (!hc__json_u64(cJSON_GetObjectItemCaseSensitive(m, "tp_rank"), &rank) ||
        !hc__json_u64(cJSON_GetObjectItemCaseSensitive(m, "tp_size"), &size) || size < 1 ||
        rank >= size)
        return bad(c, "header \"model\": tp_rank and tp_size must be integers, rank < size");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->json, "tensors");
    if (!cJSON_IsArray(arr)) return bad(c, "header lacks the \"tensors\" array");
    c->ntensors = (size_t)cJSON_GetArraySize(arr);
    c->tensors = calloc(c->ntensors ? c->ntensors : 1, sizeof *c->tensors);
    c->params_text = calloc(c->ntensors ? c->ntensors : 1, sizeof *c->params_text);
    c->tile_shape = calloc(c->ntensors ? c->ntensors : 1, sizeof *c->tile_shape);
    if (!c->tensors || !c->params_text || !c->tile_shape)
        return hc__fail(&c->err, HC_NOMEM, "out of memory");
    uint64_t expect = c->data_off;
    size_t i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) HC_TRY(parse_tensor(c, o, i++, &expect));
    if (expect != c->size)
        return bad(c, "the last tensor ends at %llu but the file has %llu bytes",
                   (unsigned long long)expect, (unsigned long long)c->size);
    HC_TRY(check_zstd_total(c));
    const char *dup; /* names must be unique */
    char esc[512];
    HC_TRY(hc__first_duplicate_name(c->tensors, c->ntensors, sizeof *c->tensors, &dup, &c->err));
    if (dup) return bad(c, "tensor '%s' appears twice", hc__escape(dup, esc, sizeof esc));
    return check_moe(c, cJSON_GetObjectItemCaseSensitive(m, "moe_layers"));
}

static hc_status zstd_bad(hc_container *c, const hc_tensor_info *t, const char *why) {
    char esc[512];
    return bad(c, "tensor '%s': %s (zstd, raw_length %llu)", hc__escape(t->name, esc, sizeof esc),
               why, (unsigned long long)t->raw_length);
}

/* Decodes the frame at src into a fixed buffer, discarding the bytes: whether it yields exactly
 * raw bytes, without ever holding them (the window stays within the format's limit). */
static bool zstd_decodes_to(const void *src, size_t len, uint64_t raw) {
    ZSTD_DCtx *d = ZSTD_createDCtx();
    size_t cap = ZSTD_DStreamOutSize();
    void *buf = d ? malloc(cap) : NULL;
    int wlog = 10;
    while (wlog < 31 && (1ull << wlog) < HC_CT_ZSTD_MAX_RAW) wlog++;
    bool ok = buf && !ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog));
    ZSTD_inBuffer in = {src, len, 0};
    uint64_t got = 0;
    for (size_t r = 1; ok && r != 0;) {
        ZSTD_outBuffer out = {buf, cap, 0};
        size_t in_before = in.pos;
        r = ZSTD_decompressStream(d, &out, &in);
        got += out.pos;
        /* an error, too many bytes, or no progress (the input used up mid-frame) ends it */
        ok = !ZSTD_isError(r) && got <= raw && (r == 0 || out.pos > 0 || in.pos > in_before);
    }
    free(buf);
    ZSTD_freeDCtx(d);
    return ok && got == raw && in.pos == in.size;
}

/* A zstd tensor may be decoded: raw_length within the handle's limit, the stored bytes exactly
 * one frame whose header declares raw_length; with full, it also decodes to exactly that. */
static hc_status zstd_check(hc_container *c, const hc_tensor_info *t, bool full) {
    HC_TRY(zstd_within_limit(c, t));
    const void *src = c->map + t->offset;
    size_t frame = ZSTD_findFrameCompressedSize(src, t->length);
    if (ZSTD_isError(frame) || frame != t->length)
        return zstd_bad(c, t, "stored bytes are not exactly one frame");
    if (ZSTD_getFrameContentSize(src, t->length) != t->raw_length)
        return zstd_bad(c, t, "the frame does not declare its raw_length");
    if (full && !zstd_decodes_to(src, t->length, t->raw_length))
        return zstd_bad(c, t, "the frame does not decode to its raw_length");
    return HC_OK;
}

hc_status hc_container_verify(hc_container *c, uint64_t *nbad) {
    uint64_t bad_items = 0;
    hc__err_clear(&c->err);
    /* the preamble and the header hash were checked at open; re-check them here too so verify
     * stands alone, then the padding and every tensor */
    if (XXH3_64bits(c->map, HC_PRE_PREAMBLE_HASH) != hc__le64(c->map + HC_PRE_PREAMBLE_HASH) ||
        XXH3_64bits(c->map + HC_CT_PREAMBLE_SIZE, (size_t)c->header_len) !=
            hc__le64(c->map + HC_PRE_HEADER_HASH)) {
        bad_items++;
        hc__fail(&c->err, HC_CHECKSUM, "container '%s': header hash mismatch", c->path);
    }
    uint64_t pad_from = HC_CT_PREAMBLE_SIZE + c->header_len;
    for (size_t i = 0; i <= c->ntensors; i++) {
        uint64_t pad_to = i < c->ntensors ? c->tensors[i].offset : c->size;
        for (uint64_t b = pad_from; b < pad_to; b++)
            if (c->map[b]) {
                bad_items++;
                hc__fail(&c->err, HC_CHECKSUM, "container '%s': padding byte at offset %llu is "
                        "not zero", c->path, (unsigned long long)b);
                break;
            }
        if (i == c->ntensors) break;
        const hc_tensor_info *t = &c->tensors[i];
        if (XXH3_64bits(c->map + t->offset, (size_t)t->length) != t->hash) {
            char esc[512];
            bad_items++;
            hc__fail(&c->err, HC_CHECKSUM, "container '%s': tensor '%s': hash mismatch (data at "
                    "offset %llu is corrupt)", c->path, hc__escape(t->name, esc, sizeof esc),
                    (unsigned long long)t->offset);
        } else if (t->encoding == HC_ENC_ZSTD && zstd_check(c, t, true) != HC_OK) {
            bad_items++;
        }
        pad_from = t->offset + t->length;
    }
    if (nbad) *nbad = bad_items;
    return c->err.code;
}

hc_status hc_container_open(const char *path, int verify_tensors, hc_container **out, char *msg,
                            size_t msg_len) {
    *out = NULL;
    hc_container *c = calloc(1, sizeof *c);
    if (!c) {
        if (msg && msg_len) snprintf(msg, msg_len, "out of memory");
        return HC_NOMEM;
    }
    c->fd = -1;
    hc_status st = HC_OK;
    c->path = hc__strdup(path);
    c->zstd_max_raw = HC_CT_ZSTD_MAX_RAW;
    if (!c->path) {
        st = hc__fail(&c->err, HC_NOMEM, "out of memory");
        goto out;
    }
    st = hc__open_regular(path, &c->fd, &c->size, &c->err); /* a FIFO never blocks the open */
    if (st) goto out;
    if (c->size > 0) {
        void *m = mmap(NULL, c->size, PROT_READ, MAP_SHARED, c->fd, 0);
        if (m == MAP_FAILED) {
            st = hc__fail(&c->err, HC_IO, "cannot map '%s': %s", path, strerror(errno));
            goto out;
        }
        c->map = m;
    }
    st = read_preamble(c);
    if (!st) st = parse_header(c);
    if (!st && verify_tensors) st = hc_container_verify(c, NULL);
out:
    if (st) {
        if (msg && msg_len) snprintf(msg, msg_len, "%s", c->err.msg);
        hc_container_free(c);
        return st;
    }
    *out = c;
    return HC_OK;
}

static bool has_magic(const char *path) {
    unsigned char m[8];
    int fd;
    hc_err e = {0};
    if (hc__open_regular(path, &fd, NULL, &e)) return false;
    bool ok = hc__pread_full(fd, m, 8, 0, path, &e) == HC_OK && memcmp(m, HC_CT_MAGIC, 8) == 0;
    close(fd);
    return ok;
}

char *hc_container_locate(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return NULL;
    if (S_ISREG(sb.st_mode)) return has_magic(path) ? hc__strdup(path) : NULL;
    if (!S_ISDIR(sb.st_mode)) return NULL;
    char *p = hc__asprintf("%s/%s", path, HC_CONTAINER_FILE);
    if (p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) return p;
    free(p);
    return NULL;
}

void hc_container_free(hc_container *c) {
    if (!c) return;
    if (c->map) munmap((void *)c->map, c->size);
    if (c->fd >= 0) close(c->fd);
    cJSON_Delete(c->json);
    for (size_t i = 0; c->params_text && i < c->ntensors; i++) free(c->params_text[i]);
    free(c->params_text);
    free(c->tile_shape);
    hc__moe_record_free(c->moe, c->nmoe);
    free(c->tensors);
    free(c->header);
    free(c->path);
    free(c);
}

const char *hc_container_errmsg(const hc_container *c) { return c ? c->err.msg : ""; }
size_t hc_container_tensor_count(const hc_container *c) { return c->ntensors; }
const hc_tensor_info *hc_container_tensor(const hc_container *c, size_t i) {
    return i < c->ntensors ? &c->tensors[i] : NULL;
}
const hc_tensor_info *hc_container_find(const hc_container *c, const char *name) {
    for (size_t i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
    return NULL;
}
const char *hc_container_header_json(const hc_container *c, size_t *len) {
    if (len) *len = c->header_len;
    return c->header;
}
size_t hc_container_moe_count(const hc_container *c) { return c->nmoe; }
const hc_moe_layer_info *hc_container_moe(const hc_container *c, size_t i) {
    return i < c->nmoe ? &c->moe[i] : NULL;
}
uint64_t hc_container_file_size(const hc_container *c) { return c->size; }
void hc_container_version(const hc_container *c, unsigned *major, unsigned *minor) {
    *major = c->major;
    *minor = c->minor;
}
const void *hc_container_stored(const hc_container *c, const hc_tensor_info *t) {
    return c->map + t->offset;
}

hc_status hc_container_set_limit(hc_container *c, hc_container_limit which, uint64_t value) {
    if (which != HC_CONTAINER_LIMIT_ZSTD_RAW || value > HC_CT_ZSTD_MAX_RAW)
        return hc__fail(&c->err, HC_USAGE, "container '%s': limit %d cannot be set to %llu (the "
                       "zstd expansion limit is at most %llu bytes)", c->path, (int)which,
                       (unsigned long long)value, (unsigned long long)HC_CT_ZSTD_MAX_RAW);
    c->zstd_max_raw = value;
    return HC_OK;
}

hc_status hc_container_tensor_data(hc_container *c, const hc_tensor_info *t, const void **data,
                                   void **owned) {
    *owned = NULL;
    *data = NULL;
    if (t->encoding == HC_ENC_RAW) { /* no shared state touched: safe from many threads */
        *data = c->map + t->offset;
        return HC_OK;
    }
    HC_TRY(zstd_check(c, t, false));
    void *buf = malloc(t->raw_length ? t->raw_length : 1);
    if (!buf) return hc__fail(&c->err, HC_NOMEM, "out of memory for tensor '%s'", t->name);
    size_t r = ZSTD_decompress(buf, t->raw_length, c->map + t->offset, t->length);
    if (ZSTD_isError(r) || r != t->raw_length) {
        free(buf);
        return zstd_bad(c, t, "the frame does not decode to its raw_length");
    }
    *data = buf;
    *owned = buf;
    return HC_OK;
}
