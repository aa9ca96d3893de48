/* container_write.c: the container writer. Header first with placeholder hashes of fixed
 * width (so every offset is known before any data moves), then tensors written in parallel at
 * their offsets while hashed, then the real hashes, the header hash and the preamble. */
#include "container_write.h"

#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "atomic.h"
#include "container_fmt.h"

#define ZSTD_LEVEL 9
#define HASH_KEY "\"hash\":\""

typedef struct {
    bool zstd;
    uint64_t stored; /* bytes in the file */
    uint64_t offset;
    uint64_t hash;
    void *zbuf; /* compressed bytes kept from the sizing pass, or NULL (then recompressed) */
} plan_t;

/* Compressed tensors are kept between the sizing pass and the write up to this many bytes in
 * all; beyond it they are compressed again, so memory stays bounded on huge checkpoints. */
#define ZSTD_KEEP_BUDGET (256ull << 20)

static hc_status check_tensor(const hc_cw_tensor *t, hc_err *err) {
    if (!t->name || !t->name[0]) return hc__fail(err, HC_INVALID, "a tensor has an empty name");
    if (t->ndim < 0 || t->ndim > HC_MAX_DIMS || hc_dtype_bits(t->dtype) == 0)
        return hc__fail(err, HC_INVALID, "tensor '%s': invalid dtype or rank", t->name);
    uint64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->padded_shape[d] < t->shape[d])
            return hc__fail(err, HC_INVALID, "tensor '%s': padded dimension %d (%llu) is smaller "
                           "than the logical one (%llu)", t->name, d,
                           (unsigned long long)t->padded_shape[d],
                           (unsigned long long)t->shape[d]);
        if (!hc__mul_u64(numel, t->padded_shape[d], &numel))
            return hc__fail(err, HC_INVALID, "tensor '%s': element count overflows", t->name);
    }
    uint64_t bits;
    if (!hc__mul_u64(numel, hc_dtype_bits(t->dtype), &bits) || bits % 8 || bits / 8 != t->size)
        return hc__fail(err, HC_INVALID, "tensor '%s': %llu bytes given, the padded shape of %s "
                       "needs %llu bits", t->name, (unsigned long long)t->size,
                       hc_dtype_name(t->dtype), (unsigned long long)bits);
    if (t->size >= (1ull << 53))
        return hc__fail(err, HC_INVALID, "tensor '%s': too large", t->name);
    if (!t->data && !t->fill)
        return hc__fail(err, HC_INTERNAL, "tensor '%s': neither data nor a fill function", t->name);
    return HC_OK;
}

typedef struct {
    const hc_cw_tensor *t;
    const plan_t *p;
} ratio_ctx;
/* Highest raw / stored first; ties in tensor order (the same choice for any thread count). */
static int cmp_ratio(const void *a, const void *b, void *ctx) {
    const ratio_ctx *r = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    uint64_t x = r->t[i].size * r->p[j].stored, y = r->t[j].size * r->p[i].stored;
    return x > y ? -1 : x < y ? 1 : i < j ? -1 : i > j;
}

/* The reader's expansion bound (docs/container.md, "Limits"): with the file at least the sum
 * of stored bytes, the zstd tensors that compress most go back to raw, in one pass over them
 * sorted once, until the raw bytes the rest declare fit (only near-empty tensors of many MiB
 * ever do). Sizes are at most HC_CT_ZSTD_MAX_RAW, so the products do not overflow. */
static hc_status keep_expansion_bound(const hc_cw_tensor *t, plan_t *p, size_t n,
                                      hc_err *err) {
    uint64_t raw = 0, stored = 0;
    size_t nz = 0;
    for (size_t i = 0; i < n; i++) {
        stored += p[i].stored;
        if (p[i].zstd) raw += t[i].size, nz++;
    }
    if (raw <= HC_CT_ZSTD_MAX_RAW + HC_CT_ZSTD_MAX_RATIO * stored) return HC_OK;
    size_t *ix = malloc(nz * sizeof *ix);
    if (!ix) return hc__fail(err, HC_NOMEM, "out of memory");
    for (size_t i = 0, k = 0; i < n; i++)
        if (p[i].zstd) ix[k++] = i;
    ratio_ctx rc = {t, p};
    qsort_r(ix, nz, sizeof *ix, cmp_ratio, &rc);
    for (size_t k = 0; k < nz && raw > HC_CT_ZSTD_MAX_RAW + HC_CT_ZSTD_MAX_RATIO * stored; k++) {
        plan_t *q = &p[ix[k]];
        raw -= t[ix[k]].size, stored += t[ix[k]].size - q->stored;
        free(q->zbuf), q->zbuf = NULL;
        q->zstd = false, q->stored = t[ix[k]].size;
    }
    free(ix);
    return HC_OK;
}

/* Compresses src; returns the compressed size, or 0 when zstd fails or does not pay. */
static uint64_t try_compress(const void *src, uint64_t n, void **out) {
    size_t cap = ZSTD_compressBound((size_t)n);
    void *buf = malloc(cap ? cap : 1);
    if (!buf) return 0;
    size_t r = ZSTD_compress(buf, cap, src, (size_t)n, ZSTD_LEVEL);
    if (ZSTD_isError(r) || r > n - n / 8) {
        free(buf);
        return 0;
    }
    if (out) *out = buf;
    else free(buf);
    return r;
}

static cJSON *u64_array(const uint64_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static char *build_header(const hc_cw_tensor *t, const plan_t *p, size_t n,
                          const hc_cw_options *o) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "hconvert");
    cJSON *feat = cJSON_AddArrayToObject(root, "required_features");
    for (size_t i = 0; i < n; i++)
        if (p[i].zstd) {
            cJSON_AddItemToArray(feat, cJSON_CreateString("zstd"));
            break;
        }
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(m, "converter", "hconvert " HC_VERSION_STRING);
    cJSON_AddStringToObject(m, "source_format", o->source_format ? o->source_format : "unknown");
    if (o->source_version) cJSON_AddStringToObject(m, "source_version", o->source_version);
    else cJSON_AddNullToObject(m, "source_version");
    cJSON_AddStringToObject(m, "target", o->target ? o->target : "passthrough");
    cJSON_AddNumberToObject(m, "tp_rank", o->tp_rank);
    cJSON_AddNumberToObject(m, "tp_size", o->tp_size ? o->tp_size : 1);
    cJSON_AddItemToObject(m, "tile_config", o->tile_config ? cJSON_Duplicate(o->tile_config, 1)
                                                            : cJSON_CreateObject());
    if (o->config_json) {
        char *cfg = strndup(o->config_json, o->config_len);
        cJSON_AddItemToObject(m, "config_json", cfg ? cJSON_CreateString(cfg) : NULL);
        free(cfg);
    } else {
        cJSON_AddNullToObject(m, "config_json");
    }
    if (o->moe_layers) cJSON_AddItemToObject(m, "moe_layers", cJSON_Duplicate(o->moe_layers, 1));
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (size_t i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", t[i].name);
        cJSON_AddStringToObject(e, "dtype", hc_dtype_name(t[i].dtype));
        cJSON_AddItemToObject(e, "shape", u64_array(t[i].shape, t[i].ndim));
        cJSON_AddItemToObject(e, "padded_shape", u64_array(t[i].padded_shape, t[i].ndim));
        cJSON_AddStringToObject(e, "layout", t[i].layout ? t[i].layout : "source");
        cJSON_AddNumberToObject(e, "layout_version", t[i].layout_version ? t[i].layout_version : 1);
        cJSON_AddNumberToObject(e, "offset", (double)p[i].offset);
        cJSON_AddNumberToObject(e, "length", (double)p[i].stored);
        cJSON_AddStringToObject(e, "encoding", p[i].zstd ? "zstd" : "raw");
        cJSON_AddNumberToObject(e, "raw_length", (double)t[i].size);
        cJSON_AddStringToObject(e, "hash", "0000000000000000");
        if (t[i].layout_params)
            cJSON_AddItemToObject(e, "layout_params", cJSON_Duplicate(t[i].layout_params, 1));
        cJSON_AddItemToArray(arr, e);
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

static hc_status check_unique(const hc_cw_tensor *t, size_t n, hc_err *err) {
    const char *dup;
    char esc[512];
    HC_TRY(hc__first_duplicate_name(t, n, sizeof *t, &dup, err));
    return dup ? hc__fail(err, HC_INVALID, "tensor '%s' is given twice",
                          hc__escape(dup, esc, sizeof esc))
               : HC_OK;
}

/* Writes one tensor at its offset and records its hash. */
typedef struct {
    void *p;
    uint64_t cap;
    uint64_t prev_off, prev_len; /* this thread's last large tensor, for bounded writeback */
} fill_buf;

static hc_status write_one(hc_atomic_file *af, const hc_cw_tensor *t, plan_t *p, fill_buf *fb,
                           hc_err *err) {
    if (!t->data) { /* produced into the thread's buffer (reused: no fresh pages to zero) */
        if (t->size == 0) {
            hc_status st = t->fill(t->fill_ctx, t->fill_index, NULL, err);
            p->hash = XXH3_64bits(NULL, 0);
            return st;
        }
        if (fb->cap < t->size) { /* the thread's buffer grows to its largest tensor */
            void *nb = realloc(fb->p, (size_t)t->size);
            if (!nb) return hc__fail(err, HC_NOMEM, "out of memory for tensor '%s'", t->name);
            fb->p = nb, fb->cap = t->size;
        }
        hc_status st = t->fill(t->fill_ctx, t->fill_index, fb->p, err);
        if (!st) {
            p->hash = XXH3_64bits(fb->p, (size_t)t->size);
            st = hc__atomic_write(af, fb->p, (size_t)t->size, p->offset, err);
        }
        return st;
    }
    if (!p->zstd) {
        p->hash = XXH3_64bits(t->data, (size_t)t->size);
        return hc__atomic_write(af, t->data, (size_t)t->size, p->offset, err);
    }
    void *buf = p->zbuf;
    p->zbuf = NULL;
    uint64_t c = buf ? p->stored : try_compress(t->data, t->size, &buf);
    if (c != p->stored) {
        free(buf);
        return hc__fail(err, HC_INTERNAL, "tensor '%s': zstd gave %llu bytes, then %llu", t->name,
                       (unsigned long long)p->stored, (unsigned long long)c);
    }
    p->hash = XXH3_64bits(buf, (size_t)c);
    hc_status st = hc__atomic_write(af, buf, (size_t)c, p->offset, err);
    free(buf);
    return st;
}

hc_status hc__container_write(const char *path, const hc_cw_tensor *t, size_t n,
                             const hc_cw_options *o, hc_err *err) {
    hc_status st = HC_OK;
    plan_t *p = calloc(n ? n : 1, sizeof *p);
    hc_err *errs = calloc(n ? n : 1, sizeof *errs);
    char *hdr = NULL;
    hc_atomic_file af = {.fd = -1, .slot = -1};
    if (!p || !errs) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n && !st; i++) st = check_tensor(&t[i], err);
    if (!st) st = check_unique(t, n, err);
    if (st) goto out;

    /* 1. encodings: zstd only where asked, small enough and paying */
    int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t i = 0; i < n; i++) {
        p[i].stored = t[i].size;
        if (t[i].data && t[i].try_zstd && t[i].size >= 64 && t[i].size <= HC_CT_ZSTD_MAX_RAW) {
            uint64_t c = try_compress(t[i].data, t[i].size, &p[i].zbuf);
            if (c) p[i].zstd = true, p[i].stored = c;
        }
    }
    /* the reader's expansion bound (docs/container.md, "Limits"): with the file at least the
     * sum of stored bytes, the zstd tensors whose raw/stored ratio is highest go back to raw
     * until the raw bytes they declare fit (only near-empty tensors of many MiB ever do) */
    st = keep_expansion_bound(t, p, n, err);
    if (st) goto out;
    /* keep buffers in tensor order while the budget lasts: the same choice for any thread
     * count (the bytes written do not depend on it either way) */
    uint64_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].zbuf) {
            if (kept + p[i].stored <= ZSTD_KEEP_BUDGET) kept += p[i].stored;
            else free(p[i].zbuf), p[i].zbuf = NULL;
        }

    /* 2. header with placeholder hashes: its length, hence every offset, is now fixed */
    uint64_t hlen = 0, data_off = 0, off = 0;
    /* Offsets depend on the header length, which depends on the offsets' digits: repeat
     * until the length is stable (it grows monotonically, so this ends). */
    for (;;) {
        hc__align_u64(HC_CT_PREAMBLE_SIZE + hlen, HC_CT_ALIGN, &data_off);
        off = data_off;
        for (size_t i = 0; i < n; i++) {
            p[i].offset = off;
            uint64_t end;
            if (!hc__add_u64(off, p[i].stored, &end) || !hc__align_u64(end, HC_CT_ALIGN, &off) ||
                end >= (1ull << 53)) {
                st = hc__fail(err, HC_INVALID, "container size overflows");
                goto out;
            }
            if (i + 1 == n) off = end;
        }
        free(hdr);
        hdr = build_header(t, p, n, o);
        if (!hdr) {
            st = hc__fail(err, HC_NOMEM, "out of memory building the header");
            goto out;
        }
        if (strlen(hdr) == hlen) break;
        hlen = strlen(hdr);
    }
    uint64_t file_size = n ? off : data_off;
    if (hlen > HC_CT_MAX_HEADER) {
        st = hc__fail(err, HC_INVALID, "container header of %llu bytes exceeds the %u limit",
                     (unsigned long long)hlen, HC_CT_MAX_HEADER);
        goto out;
    }

    /* 3. data, in parallel, at precomputed offsets */
    st = hc__out_open(&af, path, o->fault, err);
    if (st) goto out;
    if (ftruncate(af.fd, (off_t)file_size) != 0) {
        st = hc__fail(err, HC_IO, "cannot size '%s' to %llu bytes: %s", path,
                     (unsigned long long)file_size, strerror(errno));
        goto out;
    }
    uint64_t total = 0, done = 0;
    for (size_t i = 0; i < n; i++) total += t[i].size;
    fill_buf *bufs = calloc((size_t)threads, sizeof *bufs);
    if (!bufs) {
        st = hc__fail(err, HC_NOMEM, "out of memory");
        goto out;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t i = 0; i < n; i++) {
        fill_buf *fb = &bufs[omp_get_thread_num()];
        write_one(&af, &t[i], &p[i], fb, &errs[i]);
        /* start the disk on this tensor now, and wait for this thread's previous one: the
         * final fsync finds little left, and dirty pages stay bounded (no writeback stalls) */
        if (!errs[i].code && p[i].stored >= (1u << 20)) {
            sync_file_range(af.fd, (off64_t)p[i].offset, (off64_t)p[i].stored, SYNC_FILE_RANGE_WRITE);
            if (fb->prev_len)
                sync_file_range(af.fd, (off64_t)fb->prev_off, (off64_t)fb->prev_len,
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                    SYNC_FILE_RANGE_WAIT_AFTER);
            fb->prev_off = p[i].offset, fb->prev_len = p[i].stored;
        }
        if (o->progress) {
/* unnamed: a named critical is a global symbol the shared library would export */
#pragma omp critical
            {
                done += t[i].size;
                o->progress(o->progress_ctx, done, total);
            }
        }
    }
    for (int i = 0; i < threads; i++) free(bufs[i].p);
    free(bufs);
    for (size_t i = 0; i < n; i++)
        if (errs[i].code) {
            st = hc__fail(err, errs[i].code, "%s", errs[i].msg);
            goto out;
        }

    /* 4. real hashes into the fixed-width placeholders, then header and preamble. "tensors"
     * is the header's last member and each tensor has one hash, so the tensors' slots are the
     * last n occurrences (metadata such as tile_config may hold the same text earlier). */
    size_t slots = 0;
    for (char *q = strstr(hdr, HASH_KEY); q; q = strstr(q + 1, HASH_KEY)) slots++;
    if (slots < n) {
        st = hc__fail(err, HC_INTERNAL, "header has %zu hash slots for %zu tensors", slots, n);
        goto out;
    }
    char *pos = hdr;
    for (size_t skip = slots - n; skip > 0; skip--) pos = strstr(pos, HASH_KEY) + 1;
    for (size_t i = 0; i < n; i++) {
        pos = strstr(pos, HASH_KEY) + strlen(HASH_KEY);
        char hex[17];
        hc__hex64(p[i].hash, hex);
        memcpy(pos, hex, 16);
    }
    unsigned char pre[HC_CT_PREAMBLE_SIZE] = {0};
    memcpy(pre + HC_PRE_MAGIC, HC_CT_MAGIC, 8);
    hc__put_le16(pre + HC_PRE_MAJOR, HC_CT_MAJOR);
    hc__put_le16(pre + HC_PRE_MINOR, HC_CT_MINOR);
    hc__put_le32(pre + HC_PRE_SIZE, HC_CT_PREAMBLE_SIZE);
    hc__put_le64(pre + HC_PRE_HEADER_OFFSET, HC_CT_PREAMBLE_SIZE);
    hc__put_le64(pre + HC_PRE_HEADER_LENGTH, hlen);
    hc__put_le64(pre + HC_PRE_DATA_OFFSET, data_off);
    hc__put_le64(pre + HC_PRE_FILE_SIZE, file_size);
    hc__put_le64(pre + HC_PRE_HEADER_HASH, XXH3_64bits(hdr, (size_t)hlen));
    hc__put_le64(pre + HC_PRE_PREAMBLE_HASH, XXH3_64bits(pre, HC_PRE_PREAMBLE_HASH));
    st = hc__atomic_write(&af, hdr, (size_t)hlen, HC_CT_PREAMBLE_SIZE, err);
    if (!st) st = hc__atomic_write(&af, pre, sizeof pre, 0, err);
    if (!st) st = o->set ? hc__atomic_set_add(o->set, &af, true, err) : hc__atomic_commit(&af, err);
out:
    hc__atomic_abort(&af);
    free(hdr);
    for (size_t i = 0; p && i < n; i++) free(p[i].zbuf);
    free(p);
    free(errs);
    return st;
}
