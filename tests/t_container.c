/* t_container.c: container round trip, determinism across thread counts, byte-flip detection
 * at >= 1000 positions, truncation, and hand-built headers that break each reader rule. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "container_fmt.h"
#include "layout.h"
#include "container_write.h"
#include "test.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

#define NT 7
typedef struct {
    hc_cw_tensor t[NT];
    unsigned char *buf[NT];
} tensor_set;

/* Random and compressible tensors of several dtypes and ranks, one empty, one padded. */
static void make_set(tensor_set *s) {
    static const struct {
        const char *name;
        hc_dtype dt;
        int nd;
        uint64_t shape[3], padded[3];
        bool compressible;
    } spec[NT] = {
        {"model.layers.0.mlp.down_proj.weight", HC_DT_BF16, 2, {96, 200}, {96, 200}, false},
        {"model.layers.0.mlp.down_proj.weight_scale", HC_DT_F32, 2, {96, 8}, {96, 8}, true},
        {"model.embed_tokens.weight", HC_DT_F16, 2, {300, 64}, {300, 64}, false},
        {"model.norm.weight", HC_DT_F32, 1, {64}, {64}, true},
        {"empty", HC_DT_I32, 2, {0, 5}, {0, 5}, false},
        {"scalar", HC_DT_F64, 0, {0}, {0}, false},
        {"packed.int4", HC_DT_U8, 3, {2, 100, 33}, {2, 128, 48}, false},
    };
    for (int i = 0; i < NT; i++) {
        hc_cw_tensor *t = &s->t[i];
        memset(t, 0, sizeof *t);
        t->name = spec[i].name;
        t->dtype = spec[i].dt;
        t->ndim = spec[i].nd;
        uint64_t n = 1;
        for (int d = 0; d < t->ndim; d++) {
            t->shape[d] = spec[i].shape[d];
            t->padded_shape[d] = spec[i].padded[d];
            n *= spec[i].padded[d];
        }
        t->size = n * hc_dtype_bits(t->dtype) / 8;
        s->buf[i] = malloc(t->size + 1);
        for (uint64_t b = 0; b < t->size; b++)
            s->buf[i][b] = spec[i].compressible ? (unsigned char)(b % 7 == 0) : (unsigned char)rnd();
        t->data = s->buf[i];
        t->layout = "source";
        t->layout_version = 1;
        t->try_zstd = spec[i].compressible || i == 0;
    }
}

static void free_set(tensor_set *s) {
    for (int i = 0; i < NT; i++) free(s->buf[i]);
}

static hc_status write_set(const tensor_set *s, const char *path, int threads, hc_err *err) {
    static const char cfg[] = "{\"hidden_size\": 64, \"big\": 9007199254740993}";
    hc_cw_options o = {.source_format = "safetensors", .target = "passthrough", .tp_size = 1,
                       .config_json = cfg, .config_len = sizeof cfg - 1, .threads = threads};
    return hc__container_write(path, s->t, NT, &o, err);
}

static unsigned char *slurp(const char *path, size_t *n) {
    char *d = NULL;
    hc_err err = {0};
    hc__read_file(path, 1ull << 30, &d, n, &err);
    return (unsigned char *)d;
}

static void test_round_trip(void) {
    tensor_set s;
    make_set(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/rt.hconvert", test_tmpdir());
    hc_err err = {0};
    CHECK_EQ_INT(write_set(&s, path, 2, &err), HC_OK);
    hc_container *c = NULL;
    char msg[1024] = "";
    CHECK_EQ_INT(hc_container_open(path, 1, &c, msg, sizeof msg), HC_OK);
    if (!c) {
        CHECK_FAIL_("open: %s", msg);
        free_set(&s);
        return;
    }
    CHECK_EQ_U64(hc_container_tensor_count(c), NT);
    int zstd = 0;
    for (int i = 0; i < NT; i++) {
        const hc_tensor_info *t = hc_container_find(c, s.t[i].name);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_EQ_INT(t->dtype, s.t[i].dtype);
        CHECK_EQ_INT(t->ndim, s.t[i].ndim);
        for (int d = 0; d < t->ndim; d++) {
            CHECK_EQ_U64(t->shape[d], s.t[i].shape[d]);
            CHECK_EQ_U64(t->padded_shape[d], s.t[i].padded_shape[d]);
        }
        CHECK_STR_EQ(t->layout, s.t[i].layout);
        CHECK_EQ_U64(t->layout_version, s.t[i].layout_version);
        CHECK_EQ_U64(t->offset % 4096, 0);
        CHECK_EQ_U64(t->raw_length, s.t[i].size);
        CHECK_EQ_U64(t->hash, XXH3_64bits(hc_container_stored(c, t), t->length));
        zstd += t->encoding == HC_ENC_ZSTD;
        const void *data;
        void *owned;
        CHECK_EQ_INT(hc_container_tensor_data(c, t, &data, &owned), HC_OK);
        CHECK(data && memcmp(data, s.buf[i], s.t[i].size) == 0);
        free(owned);
    }
    CHECK(zstd >= 2);                 /* compressible scales were compressed */
    const hc_tensor_info *w = hc_container_find(c, s.t[0].name);
    CHECK(w && w->encoding == HC_ENC_RAW); /* random bytes do not pay */
    size_t hl = 0;
    const char *hdr = hc_container_header_json(c, &hl);
    CHECK_CONTAINS(hdr, "9007199254740993"); /* config kept verbatim */
    CHECK_CONTAINS(hdr, "\"required_features\":[\"zstd\"]");
    uint64_t nbad = 1;
    CHECK_EQ_INT(hc_container_verify(c, &nbad), HC_OK);
    CHECK_EQ_U64(nbad, 0);
    hc_container_free(c);
    /* independent reading of the preamble as docs/container.md specifies it */
    size_t n = 0;
    unsigned char *b = slurp(path, &n);
    CHECK(b && memcmp(b, "\x89HCVT\r\n\x1a", 8) == 0);
    if (b) {
        CHECK_EQ_U64(hc__le16(b + 8), 1);
        CHECK_EQ_U64(hc__le64(b + 16), 64);
        CHECK_EQ_U64(hc__le64(b + 40), n);
        CHECK_EQ_U64(hc__le64(b + 32) % 4096, 0);
        CHECK_EQ_U64(hc__le64(b + 48), XXH3_64bits(b + 64, hc__le64(b + 24)));
        CHECK_EQ_U64(hc__le64(b + 56), XXH3_64bits(b, 56));
    }
    free(b);
    free_set(&s);
}

static void test_same_bytes_any_thread_count(void) {
    tensor_set s;
    make_set(&s);
    const char *dir = test_tmpdir();
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s/t1.hconvert", dir);
    snprintf(p2, sizeof p2, "%s/t2.hconvert", dir);
    hc_err err = {0};
    CHECK_EQ_INT(write_set(&s, p1, 1, &err), HC_OK);
    CHECK_EQ_INT(write_set(&s, p2, 4, &err), HC_OK);
    size_t n1 = 0, n2 = 0;
    unsigned char *a = slurp(p1, &n1), *b = slurp(p2, &n2);
    CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0);
    free(a);
    free(b);
    /* no temporary file is left beside the output */
    int files = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) files += de->d_name[0] != '.';
    if (d) closedir(d);
    CHECK_EQ_INT(files, 2);
    free_set(&s);
}

static hc_status verify_file(const char *path) {
    hc_container *c = NULL;
    char msg[1024];
    hc_status st = hc_container_open(path, 0, &c, msg, sizeof msg);
    if (st) return st;
    st = hc_container_verify(c, NULL);
    hc_container_free(c);
    return st;
}

/* Flipping any single byte, in the preamble, header, padding or data, makes open or verify
 * fail. Every byte of the preamble and header is tried, plus a sample of the rest. */
static void test_every_byte_flip_detected(void) {
    tensor_set s;
    make_set(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/flip.hconvert", test_tmpdir());
    hc_err err = {0};
    CHECK_EQ_INT(write_set(&s, path, 2, &err), HC_OK);
    size_t n = 0;
    unsigned char *orig = slurp(path, &n);
    int fd = open(path, O_RDWR);
    CHECK(orig && fd >= 0);
    uint64_t hdr_end = orig ? 64 + hc__le64(orig + 24) : 0;
    int tried = 0, missed = 0;
    for (size_t pos = 0; orig && pos < n; pos += pos < hdr_end ? 1 : 1 + rnd() % 97) {
        unsigned char v = orig[pos] ^ (unsigned char)(1 + rnd() % 255);
        pwrite(fd, &v, 1, (off_t)pos);
        hc_status st = verify_file(path);
        pwrite(fd, &orig[pos], 1, (off_t)pos);
        tried++;
        if (st == HC_OK) {
            if (missed++ < 5) CHECK_FAIL_("flip at offset %zu not detected", pos);
        }
    }
    CHECK(tried >= 1000);
    CHECK_EQ_INT(missed, 0);
    CHECK_EQ_INT(verify_file(path), HC_OK); /* restored */
    if (fd >= 0) close(fd);
    free(orig);
    free_set(&s);
}

static void test_truncated_refused(void) {
    tensor_set s;
    make_set(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/trunc.hconvert", test_tmpdir());
    hc_err err = {0};
    CHECK_EQ_INT(write_set(&s, path, 1, &err), HC_OK);
    struct stat sb;
    stat(path, &sb);
    uint64_t cuts[] = {(uint64_t)sb.st_size - 1, (uint64_t)sb.st_size / 2, 4096, 100, 63, 0};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        CHECK(truncate(path, (off_t)cuts[i]) == 0);
        hc_container *c = NULL;
        char msg[1024] = "";
        hc_status st = hc_container_open(path, 0, &c, msg, sizeof msg);
        CHECK(st == HC_INVALID);
        CHECK(strstr(msg, "truncated") != NULL);
        CHECK_CONTAINS(msg, "trunc.hconvert");
        hc_container_free(c);
    }
    free_set(&s);
}

/* ---- hand-built containers: a preamble + the given header + one 16-byte tensor ---- */
static const unsigned char payload[16] = "0123456789abcdef";

static hc_status open_built(const char *header, unsigned major, char *msg, size_t cap) {
    static char path[600];
    snprintf(path, sizeof path, "%s/built.hconvert", test_tmpdir());
    size_t hl = strlen(header);
    uint64_t data_off = (64 + hl + 4095) / 4096 * 4096;
    size_t total = data_off + sizeof payload;
    unsigned char *b = calloc(1, total);
    memcpy(b, HC_CT_MAGIC, 8);
    hc__put_le16(b + 8, (uint16_t)major);
    hc__put_le32(b + 12, 64);
    hc__put_le64(b + 16, 64);
    hc__put_le64(b + 24, hl);
    hc__put_le64(b + 32, data_off);
    hc__put_le64(b + 40, total);
    memcpy(b + 64, header, hl);
    memcpy(b + data_off, payload, sizeof payload);
    hc__put_le64(b + 48, XXH3_64bits(header, hl));
    hc__put_le64(b + 56, XXH3_64bits(b, 56));
    FILE *fp = fopen(path, "wb");
    fwrite(b, 1, total, fp);
    fclose(fp);
    free(b);
    hc_container *c = NULL;
    hc_status st = hc_container_open(path, 1, &c, msg, cap);
    hc_container_free(c);
    return st;
}

#define MODEL_FIELDS "\"source_version\":null,\"tile_config\":{},\"config_json\":null,"
#define MODEL "\"model\":{\"converter\":\"t\",\"source_format\":\"t\",\"target\":\"t\"," \
              MODEL_FIELDS "\"tp_rank\":0,\"tp_size\":1}"

/* Builds a header whose one tensor has the given fields (after name). */
static const char *hdr_with(const char *features, const char *model, const char *tensor) {
    static char h[4096];
    snprintf(h, sizeof h, "{\"format\":\"hconvert\",\"required_features\":[%s],%s,"
             "\"tensors\":[%s]}", features, model, tensor);
    return h;
}

static const char *good_tensor(char *buf, size_t cap, const char *offset, const char *length,
                               const char *extra) {
    char hex[17];
    hc__hex64(XXH3_64bits(payload, sizeof payload), hex);
    snprintf(buf, cap, "{\"name\":\"a\",\"dtype\":\"U8\",\"shape\":[16],\"padded_shape\":[16],"
             "\"layout\":\"source\",\"layout_version\":1,\"offset\":%s,\"length\":%s,"
             "\"encoding\":\"raw\",\"raw_length\":16,\"hash\":\"%s\"%s}", offset, length, hex,
             extra);
    return buf;
}

static void expect_built(const char *header, unsigned major, hc_status want, const char *needle) {
    char msg[1024] = "";
    hc_status st = open_built(header, major, msg, sizeof msg);
    if (st != want)
        CHECK_FAIL_("status %s, expected %s: %s\n    header: %s", hc_status_name(st),
                    hc_status_name(want), msg, header);
    if (needle) CHECK_CONTAINS(msg, needle);
}

static void test_header_rules(void) {
    char t[1024], t2[2048];
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "4096", "16", "")), 1, HC_OK, NULL);
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "4096", "16", "")), 2,
                 HC_UNSUPPORTED, "version 2.0");
    expect_built(hdr_with("\"x-sparse\"", MODEL, good_tensor(t, sizeof t, "4096", "16", "")), 1,
                 HC_UNSUPPORTED, "x-sparse");
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "4097", "16", "")), 1, HC_INVALID,
                 "4096-aligned");
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "8192", "16", "")), 1, HC_INVALID,
                 "contiguous");
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "4096", "17", "")), 1, HC_INVALID,
                 "raw_length");
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "9007199254740992", "16", "")), 1,
                 HC_INVALID, "2^53");
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "4096.5", "16", "")), 1,
                 HC_INVALID, "offset");
    expect_built(hdr_with("", MODEL, good_tensor(t, sizeof t, "4096", "16", ",\"name\":\"b\"")),
                 1, HC_INVALID, "duplicate");
    snprintf(t2, sizeof t2, "%s,%s", good_tensor(t, sizeof t, "4096", "16", ""), t);
    expect_built(hdr_with("", MODEL, t2), 1, HC_INVALID, NULL); /* same name, overlapping */
    expect_built(hdr_with("", "\"modelx\":{}", good_tensor(t, sizeof t, "4096", "16", "")), 1,
                 HC_INVALID, "model");
    expect_built(hdr_with("", "\"model\":{\"converter\":\"t\",\"source_format\":\"t\","
                          "\"target\":\"t\"," MODEL_FIELDS "\"tp_rank\":2,\"tp_size\":2}",
                          good_tensor(t, sizeof t, "4096", "16", "")),
                 1, HC_INVALID, "tp_rank");
    expect_built(hdr_with("", "\"model\":{\"converter\":\"t\",\"source_format\":\"t\","
                          "\"target\":\"t\",\"tp_rank\":0,\"tp_size\":1}",
                          good_tensor(t, sizeof t, "4096", "16", "")),
                 1, HC_INVALID, "tile_config");
    expect_built("{\"format\":\"hconvert\",", 1, HC_INVALID, "JSON");
    expect_built("[]", 1, HC_INVALID, "JSON object");
    char bad[1024];
    snprintf(bad, sizeof bad, "%s", good_tensor(t, sizeof t, "4096", "16", ""));
    char *dt = strstr(bad, "\"U8\"");
    memcpy(dt, "\"Q8\"", 4);
    expect_built(hdr_with("", MODEL, bad), 1, HC_INVALID, "dtype");
    snprintf(bad, sizeof bad, "%s", good_tensor(t, sizeof t, "4096", "16", ""));
    char *ps = strstr(bad, "\"padded_shape\":[16]");
    memcpy(ps, "\"padded_shape\":[08]", 19);
    expect_built(hdr_with("", MODEL, bad), 1, HC_INVALID, NULL);
    snprintf(bad, sizeof bad, "%s", good_tensor(t, sizeof t, "4096", "16", ""));
    char *h = strstr(bad, "\"hash\":\"");
    memcpy(h + 8, "ZZ", 2);
    expect_built(hdr_with("", MODEL, bad), 1, HC_INVALID, "hash");
    /* a wrong tensor hash passes open (hashes are verify's job) unless asked at load */
    snprintf(bad, sizeof bad, "%s", good_tensor(t, sizeof t, "4096", "16", ""));
    h = strstr(bad, "\"hash\":\"");
    h[8] = h[8] == '0' ? '1' : '0';
    expect_built(hdr_with("", MODEL, bad), 1, HC_CHECKSUM, "'a'");
    snprintf(bad, sizeof bad, "%s", good_tensor(t, sizeof t, "4096", "16", ""));
    char *lay = strstr(bad, "\"layout\":\"source\"");
    memcpy(lay, "\"layout\":\"future\"", 17);
    expect_built(hdr_with("", MODEL, bad), 1, HC_UNSUPPORTED, "layout 'future'");
    snprintf(bad, sizeof bad, "%s", good_tensor(t, sizeof t, "4096", "16", ""));
    char *lv = strstr(bad, "\"layout_version\":1");
    memcpy(lv, "\"layout_version\":7", 18);
    expect_built(hdr_with("", MODEL, bad), 1, HC_UNSUPPORTED, "version 7");
}

static int count_entries(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (d) closedir(d);
    return n;
}

/* A write that fails midway (file size limit: EFBIG) leaves no temporary file and does not
 * touch an existing container of the same name. */
static void test_failed_write_leaves_nothing(void) {
    tensor_set s;
    make_set(&s);
    const char *dir = test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/keep.hconvert", dir);
    hc_err err = {0};
    CHECK_EQ_INT(write_set(&s, path, 1, &err), HC_OK);
    size_t n0 = 0;
    unsigned char *before = slurp(path, &n0);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 8192;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    for (int i = 0; i < NT; i++) s.buf[i][0] ^= 1; /* different content */
    hc_err e2 = {0};
    hc_status st = write_set(&s, path, 2, &e2);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK_EQ_INT(st, HC_IO);
    CHECK_CONTAINS(e2.msg, "keep.hconvert");
    CHECK_EQ_INT(count_entries(dir), 1); /* no temporary file left behind */
    size_t n1 = 0;
    unsigned char *after = slurp(path, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    CHECK_EQ_INT(verify_file(path), HC_OK);
    free(before);
    free(after);
    free_set(&s);
}

/* Metadata that contains the text of a hash slot must not receive a tensor's hash. */
static void test_hash_text_in_metadata(void) {
    tensor_set s;
    make_set(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/meta.hconvert", test_tmpdir());
    cJSON *tile = cJSON_Parse("{\"hash\":\"0000000000000000\",\"m\":64}");
    hc_cw_options o = {.source_format = "t", .target = "t", .tp_size = 1, .tile_config = tile,
                       .threads = 2};
    hc_err err = {0};
    CHECK_EQ_INT(hc__container_write(path, s.t, NT, &o, &err), HC_OK);
    CHECK_EQ_INT(verify_file(path), HC_OK);
    hc_container *c = NULL;
    char msg[1024];
    CHECK_EQ_INT(hc_container_open(path, 0, &c, msg, sizeof msg), HC_OK);
    if (c) CHECK_CONTAINS(hc_container_header_json(c, NULL),
                          "\"tile_config\":{\"hash\":\"0000000000000000\",\"m\":64}");
    hc_container_free(c);
    cJSON_Delete(tile);
    free_set(&s);
}

/* Tensors of zeros the writer would compress past the reader's expansion bound (raw bytes
 * declared by zstd tensors <= HC_CT_ZSTD_MAX_RAW + HC_CT_ZSTD_MAX_RATIO x file size): it keeps
 * enough of them raw that the file it writes opens (before: a file the reader refused). */
static void test_writer_keeps_the_expansion_bound(void) {
    enum { NZ = 3 };
    uint64_t each = 48ull << 20; /* three: 144 MiB declared, a few KB stored */
    uint8_t *zeros = calloc(1, each);
    hc_cw_tensor t[NZ];
    memset(t, 0, sizeof t);
    static const char *const names[NZ] = {"z0", "z1", "z2"};
    for (int i = 0; i < NZ; i++)
        t[i] = (hc_cw_tensor){.name = names[i], .dtype = HC_DT_U8, .ndim = 1, .shape = {each},
                              .padded_shape = {each}, .layout = "source", .data = zeros,
                              .size = each, .try_zstd = true};
    char path[600], msg[1024];
    snprintf(path, sizeof path, "%s/zeros.hconvert", test_tmpdir());
    hc_cw_options o = {.source_format = "t", .target = "t", .tp_size = 1, .threads = 2};
    hc_err err = {0};
    CHECK(zeros != NULL);
    CHECK_EQ_INT(hc__container_write(path, t, NZ, &o, &err), HC_OK);
    hc_container *c = NULL;
    if (hc_container_open(path, 0, &c, msg, sizeof msg)) CHECK_FAIL_("open: %s", msg);
    uint64_t zraw = 0, fsize = 0;
    for (size_t i = 0; c && i < hc_container_tensor_count(c); i++) {
        const hc_tensor_info *ti = hc_container_tensor(c, i);
        if (ti->encoding == HC_ENC_ZSTD) zraw += ti->raw_length;
        if (ti->offset + ti->length > fsize) fsize = ti->offset + ti->length;
    }
    CHECK(c && zraw > 0 && zraw <= HC_CT_ZSTD_MAX_RAW + HC_CT_ZSTD_MAX_RATIO * fsize);
    hc_container_free(c);
    CHECK_EQ_INT(verify_file(path), HC_OK);
    free(zeros);
}

/* An FP8 tensor whose scales divide must say layout version 2: a version-1 reader would
 * multiply by the same bytes (found in review). */
static void test_divisors_need_version_2(void) {
    hc_tile_params p = {.kind = HC_TL_FP8, .code_bits = 8, .src_bits = 8, .E = 1, .N = 64,
                        .K = 64, .Np = 64, .Kp = 64, .g = 64, .scale_dtype = HC_DT_F32,
                        .scale_divides = true};
    CHECK(hc__tile_geometry(&p));
    uint8_t *d = calloc(1, hc__tile_bytes_of(&p));
    cJSON *lp = hc__tile_params_json(&p);
    for (unsigned v = 1; v <= 2; v++) {
        hc_cw_tensor t = {.name = "w", .dtype = HC_DT_U8, .ndim = 4,
                          .shape = {1, 1, 1, p.chunk_bytes}, .padded_shape = {1, 1, 1, p.chunk_bytes},
                          .layout = HC_LAYOUT_FP8, .layout_version = v, .data = d,
                          .size = hc__tile_bytes_of(&p), .layout_params = lp};
        char path[600], msg[1024] = "";
        snprintf(path, sizeof path, "%s/div%u.hconvert", test_tmpdir(), v);
        hc_cw_options o = {.source_format = "t", .target = "t", .tp_size = 1};
        hc_err err = {0};
        CHECK_EQ_INT(hc__container_write(path, &t, 1, &o, &err), HC_OK);
        hc_container *c = NULL;
        CHECK_EQ_INT(hc_container_open(path, 0, &c, msg, sizeof msg), v == 1 ? HC_INVALID : HC_OK);
        if (v == 1) CHECK_CONTAINS(msg, "need layout version 2 (scale_divides)");
        hc_container_free(c);
    }
    cJSON_Delete(lp);
    free(d);
}

void suite_container(void) {
    RUN(test_divisors_need_version_2);
    RUN(test_writer_keeps_the_expansion_bound);
    RUN(test_hash_text_in_metadata);
    RUN(test_failed_write_leaves_nothing);
    RUN(test_round_trip);
    RUN(test_same_bytes_any_thread_count);
    RUN(test_every_byte_flip_detected);
    RUN(test_truncated_refused);
    RUN(test_header_rules);
}
