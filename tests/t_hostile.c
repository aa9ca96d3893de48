/* t_hostile.c: hostile containers, .npy headers, safetensors headers and kernel-cache entries:
 * inputs built to hang, exhaust memory or be misread, each refused quickly with a message that
 * names the file and the rule (issue 13 item 4). */
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "checkpoint.h"
#include "container_fmt.h"
#include "npy.h"
#include "safetensors.h"
#include "test.h"

/* ---- .npy ---- */

/* Writes a .npy of the given version whose header is dict (as is) and whose data is ndata
 * bytes of pattern; returns its path (static buffer). */
static const char *write_npy(const char *name, unsigned major, const char *dict, size_t ndata) {
    static char path[700];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    size_t hl = strlen(dict), pre = major == 1 ? 10 : 12;
    unsigned char head[12] = "\x93NUMPY";
    head[6] = (unsigned char)major;
    head[7] = 0;
    for (size_t b = 0; b < pre - 8; b++) head[8 + b] = (unsigned char)(hl >> (8 * b));
    FILE *fp = fopen(path, "wb");
    fwrite(head, 1, pre, fp);
    fwrite(dict, 1, hl, fp);
    for (size_t i = 0; i < ndata; i++) fputc((int)(i * 7 + 1) & 0xff, fp);
    fclose(fp);
    return path;
}

/* Reads path as a float32 2-D array and expects st; on a refusal msg must name the file and
 * contain needle. */
static void expect_npy(const char *path, hc_npy_kind kind, hc_status want, const char *needle) {
    uint64_t shape[2] = {0, 0};
    void *data = NULL;
    hc_err err = {0};
    hc_status st = hc__npy_read_2d(path, kind, shape, &data, &err);
    if (st != want)
        CHECK_FAIL_("'%s': status %s, expected %s: %s", path, hc_status_name(st),
                    hc_status_name(want), err.msg);
    if (st && needle) {
        CHECK_CONTAINS(err.msg, needle);
        CHECK_CONTAINS(err.msg, hc__basename(path));
    }
    free(data);
}

#define NPY_F4(shape) "{'descr': '<f4', 'fortran_order': False, 'shape': " shape ", }\n"

/* Headers written by hand: each once hung, was misread or is out of range. */
static void test_npy_crafted_headers(void) {
    alarm(60); /* the (huge, 0) shapes used to loop 2^64 times: a hang ends the run */
    /* (huge, 0) and (-1, 0): an empty array whose other dimension is out of range */
    expect_npy(write_npy("huge0.npy", 1, NPY_F4("(18446744073709551615, 0)"), 0), HC_NPY_F32,
               HC_INVALID, "2^31 - 1");
    expect_npy(write_npy("minus0.npy", 1, NPY_F4("(-1, 0)"), 0), HC_NPY_F32, HC_INVALID,
               "negative");
    expect_npy(write_npy("big0.npy", 1, NPY_F4("(2147483648, 0)"), 0), HC_NPY_F32, HC_INVALID,
               "2^31 - 1");
    /* the largest dimension allowed, empty: read at once, no row loop */
    uint64_t shape[2] = {0, 0};
    void *data = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__npy_read_2d(write_npy("max0.npy", 1, NPY_F4("(2147483647, 0)"), 0),
                                HC_NPY_F32, shape, &data, &err), HC_OK);
    CHECK_EQ_U64(shape[0], 2147483647u);
    CHECK_EQ_U64(shape[1], 0);
    free(data);
    alarm(0);
    /* a 3-D shape whose first two dimensions match the data is still 3-D */
    expect_npy(write_npy("cube.npy", 1, NPY_F4("(2, 3, 1)"), 24), HC_NPY_F32, HC_INVALID,
               "3 dimensions");
    expect_npy(write_npy("vec.npy", 1, NPY_F4("(6,)"), 24), HC_NPY_F32, HC_INVALID,
               "1 dimensions");
    expect_npy(write_npy("notuple.npy", 1, NPY_F4("(6)"), 24), HC_NPY_F32, HC_INVALID, "tuple");
    /* a repeated key, a 'shape' inside another string, a missing or unknown key */
    expect_npy(write_npy("dup.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(2, 2), 'shape': (1, 4)}", 16), HC_NPY_F32, HC_INVALID, "twice");
    expect_npy(write_npy("instr.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'note': "
                         "\"'shape': (1, 1)\"}", 4), HC_NPY_F32, HC_INVALID, "unknown key 'note'");
    expect_npy(write_npy("nofo.npy", 1, "{'descr': '<f4', 'shape': (1, 1)}", 4), HC_NPY_F32,
               HC_INVALID, "missing 'fortran_order'");
    expect_npy(write_npy("fo1.npy", 1, "{'descr': '<f4', 'fortran_order': 1, 'shape': (1, 1)}",
                         4), HC_NPY_F32, HC_INVALID, "True or False");
    expect_npy(write_npy("after.npy", 1, NPY_F4("(1, 1)") "x", 4), HC_NPY_F32, HC_INVALID,
               "after the dict");
    expect_npy(write_npy("zero.npy", 1, NPY_F4("(01, 1)"), 4), HC_NPY_F32, HC_INVALID,
               "leading zero");
    expect_npy(write_npy("esc.npy", 1, "{'descr': '<f\\x34', 'fortran_order': False, 'shape': "
                         "(1, 1)}", 4), HC_NPY_F32, HC_INVALID, "escapes");
    expect_npy(write_npy("open.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(1, 1)", 4), HC_NPY_F32, HC_INVALID, "expected ',' or '}'");
    /* sizes: the data must be exactly the shape; the header within bounds and the file */
    expect_npy(write_npy("short.npy", 1, NPY_F4("(2, 2)"), 15), HC_NPY_F32, HC_INVALID,
               "does not match the 15 data bytes");
    expect_npy(write_npy("ovf.npy", 1, NPY_F4("(2147483647, 2147483647, 2147483647, 4)"), 0),
               HC_NPY_F32, HC_INVALID, "overflows");
    static char big[HC_NPY_MAX_HEADER + 2];
    memset(big, ' ', sizeof big - 1);
    memcpy(big, NPY_F4("(1, 1)"), strlen(NPY_F4("(1, 1)")));
    expect_npy(write_npy("bighdr.npy", 2, big, 4), HC_NPY_F32, HC_INVALID, "65536 allowed");
    const char *p = write_npy("v11.npy", 1, NPY_F4("(1, 1)"), 4);
    FILE *fp = fopen(p, "r+b");
    fseek(fp, 7, SEEK_SET);
    fputc(1, fp); /* version 1.1 */
    fclose(fp);
    expect_npy(p, HC_NPY_F32, HC_INVALID, "version 1.1");
    p = write_npy("past.npy", 1, NPY_F4("(1, 1)"), 0);
    truncate(p, 40);
    expect_npy(p, HC_NPY_F32, HC_INVALID, "past the end");
    /* what numpy also accepts: double quotes, no trailing comma, Python 2 longs, v2 and v3 */
    expect_npy(write_npy("dq.npy", 1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": "
                         "(2L, 3L)}", 24), HC_NPY_F32, HC_OK, NULL);
    expect_npy(write_npy("v3.npy", 3, NPY_F4("(2, 3)"), 24), HC_NPY_F32, HC_OK, NULL);
    expect_npy(write_npy("i8.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1)}",
                         8), HC_NPY_F32, HC_INVALID, "float32");
}

/* Files numpy wrote (tests/fixtures/npy/gen_npy.py): values as its formulas give them. */
static void test_npy_numpy_files(void) {
    static const struct {
        const char *file;
        uint64_t rows, cols;
    } floats[] = {{"f32_c.npy", 3, 5}, {"f32_fortran.npy", 3, 5}, {"f32_v2.npy", 2, 3},
                  {"f32_v3.npy", 2, 3}, {"f32_rows0.npy", 0, 4}, {"f32_cols0.npy", 5, 0}};
    for (size_t f = 0; f < sizeof floats / sizeof floats[0]; f++) {
        char rel[64];
        snprintf(rel, sizeof rel, "npy/%s", floats[f].file);
        uint64_t shape[2] = {0, 0};
        float *a = NULL;
        hc_err err = {0};
        CHECK_EQ_INT(hc__npy_read_2d(fixture(rel), HC_NPY_F32, shape, (void **)&a, &err), HC_OK);
        if (!a) {
            CHECK_FAIL_("%s: %s", rel, err.msg);
            continue;
        }
        CHECK_EQ_U64(shape[0], floats[f].rows);
        CHECK_EQ_U64(shape[1], floats[f].cols);
        int wrong = 0;
        for (uint64_t i = 0; i < shape[0]; i++)
            for (uint64_t j = 0; j < shape[1]; j++)
                wrong += a[i * shape[1] + j] != (float)(10.0 * (double)i + (double)j + 0.25);
        CHECK_EQ_INT(wrong, 0);
        free(a);
    }
    static const struct {
        const char *file;
        uint64_t rows, cols;
    } ints[] = {{"i4.npy", 2, 3}, {"i8_fortran.npy", 4, 2}};
    for (size_t f = 0; f < 2; f++) {
        char rel[64];
        snprintf(rel, sizeof rel, "npy/%s", ints[f].file);
        uint64_t shape[2] = {0, 0};
        int32_t *a = NULL;
        hc_err err = {0};
        CHECK_EQ_INT(hc__npy_read_2d(fixture(rel), HC_NPY_I32, shape, (void **)&a, &err), HC_OK);
        if (!a) continue;
        CHECK_EQ_U64(shape[0], ints[f].rows);
        CHECK_EQ_U64(shape[1], ints[f].cols);
        int wrong = 0;
        for (uint64_t i = 0; i < shape[0]; i++)
            for (uint64_t j = 0; j < shape[1]; j++)
                wrong += a[i * shape[1] + j] != (int32_t)(100 * i) - (int32_t)j;
        CHECK_EQ_INT(wrong, 0);
        free(a);
    }
    expect_npy(fixture("npy/i8_too_big.npy"), HC_NPY_I32, HC_INVALID, "2147483648");
    expect_npy(fixture("npy/f32_1d.npy"), HC_NPY_F32, HC_INVALID, "2-D");
    expect_npy(fixture("npy/f32_3d.npy"), HC_NPY_F32, HC_INVALID, "2-D");
    expect_npy(fixture("npy/f64.npy"), HC_NPY_F32, HC_INVALID, "'<f8'");
    expect_npy(fixture("npy/f32_big_endian.npy"), HC_NPY_F32, HC_INVALID, "'>f4'");
    expect_npy(fixture("npy/i4.npy"), HC_NPY_F32, HC_INVALID, "float32");
}

/* ---- memory: peak growth measured in a child, so earlier tests' peaks do not hide it ---- */

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"), 0 when unreadable. */
static uint64_t status_bytes(const char *field) {
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kb = 0;
    size_t n = strlen(field);
    while (fp && fgets(line, sizeof line, fp))
        if (!strncmp(line, field, n) && line[n] == ':') kb = strtoull(line + n + 1, NULL, 10);
    if (fp) fclose(fp);
    return kb * 1024;
}

/* The resident memory fn(arg) adds at its peak: a forked child returns its free heap pages,
 * resets its high-water mark (clear_refs 5), runs fn and reports VmHWM minus its starting VmRSS. UINT64_MAX when the
 * child fails or cannot measure. */
static uint64_t peak_growth(void (*fn)(void *), void *arg) {
    int fds[2];
    if (pipe(fds) != 0) return UINT64_MAX;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        malloc_trim(0); /* free heap pages from earlier tests would hide growth */
        FILE *cr = fopen("/proc/self/clear_refs", "w");
        if (cr) fputs("5", cr), fclose(cr);
        uint64_t base = status_bytes("VmRSS");
        fn(arg);
        uint64_t peak = status_bytes("VmHWM"), grew = base && peak ? peak - base : UINT64_MAX;
        ssize_t w = write(fds[1], &grew, sizeof grew);
        _exit(w == sizeof grew ? 0 : 1);
    }
    close(fds[1]);
    uint64_t grew = UINT64_MAX;
    if (pid < 0 || read(fds[0], &grew, sizeof grew) != sizeof grew) grew = UINT64_MAX;
    close(fds[0]);
    int ws = 0;
    if (pid > 0) waitpid(pid, &ws, 0);
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? grew : UINT64_MAX;
}

/* ---- zstd expansion ---- */

/* A zstd frame of n zero bytes built by hand from the format (RFC 8878): the magic, a
 * single-segment frame header with an 8-byte content size (declared, the value written), then
 * RLE blocks of at most 128 KiB, each 3 header bytes and the byte repeated: 4 bytes of frame
 * per 128 KiB. Caller frees. */
static unsigned char *rle_frame(uint64_t n, uint64_t declared, size_t *len) {
    uint64_t blocks = n ? (n + (128u << 10) - 1) / (128u << 10) : 1;
    unsigned char *f = malloc(13 + 4 * blocks), *p = f;
    hc__put_le32(p, 0xFD2FB528u);
    p[4] = 0xE0; /* content size field of 8 bytes, single segment */
    hc__put_le64(p + 5, declared);
    p += 13;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t sz = n - b * (128u << 10) < (128u << 10) ? n - b * (128u << 10) : (128u << 10);
        uint32_t hdr = (b + 1 == blocks) | (n ? 1u : 0u) << 1 | (uint32_t)sz << 3;
        p[0] = (unsigned char)hdr, p[1] = (unsigned char)(hdr >> 8), p[2] = (unsigned char)(hdr >> 16);
        p[3] = 0; /* the repeated byte (an empty raw block when n is 0) */
        p += n ? 4 : 3;
    }
    *len = (size_t)(p - f);
    return f;
}

typedef struct {
    const char *name;
    const char *encoding;
    uint64_t raw_length; /* also the U8 shape */
    const unsigned char *bytes;
    size_t length;
} ct_tensor;

/* Writes a container of U8 source tensors by hand (docs/container.md): data from offset 4096,
 * each tensor 4096-aligned, every hash valid. Returns its path (static buffer). */
static const char *write_container(const char *file, const ct_tensor *t, int n) {
    static char path[700];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), file);
    char hdr[4032];
    int hl = snprintf(hdr, sizeof hdr, "{\"format\":\"hconvert\",\"required_features\":[\"zstd\"],"
                      "\"model\":{\"converter\":\"t\",\"source_format\":\"t\",\"target\":\"t\","
                      "\"source_version\":null,\"tile_config\":{},\"config_json\":null,"
                      "\"tp_rank\":0,\"tp_size\":1},\"tensors\":[");
    uint64_t off = 4096, end = 4096;
    for (int i = 0; i < n; i++) {
        char hex[17];
        hc__hex64(XXH3_64bits(t[i].bytes, t[i].length), hex);
        hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "%s{\"name\":\"%s\",\"dtype\":\"U8\","
                       "\"shape\":[%llu],\"padded_shape\":[%llu],\"layout\":\"source\","
                       "\"layout_version\":1,\"offset\":%llu,\"length\":%zu,\"encoding\":\"%s\","
                       "\"raw_length\":%llu,\"hash\":\"%s\"}", i ? "," : "", t[i].name,
                       (unsigned long long)t[i].raw_length, (unsigned long long)t[i].raw_length,
                       (unsigned long long)off, t[i].length, t[i].encoding,
                       (unsigned long long)t[i].raw_length, hex);
        end = off + t[i].length;
        off = (end + 4095) / 4096 * 4096;
    }
    hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "]}");
    unsigned char *b = calloc(1, end);
    memcpy(b, HC_CT_MAGIC, 8);
    hc__put_le16(b + HC_PRE_MAJOR, HC_CT_MAJOR);
    hc__put_le32(b + HC_PRE_SIZE, 64);
    hc__put_le64(b + HC_PRE_HEADER_OFFSET, 64);
    hc__put_le64(b + HC_PRE_HEADER_LENGTH, (uint64_t)hl);
    hc__put_le64(b + HC_PRE_DATA_OFFSET, 4096);
    hc__put_le64(b + HC_PRE_FILE_SIZE, end);
    hc__put_le64(b + HC_PRE_HEADER_HASH, XXH3_64bits(hdr, (size_t)hl));
    memcpy(b + 64, hdr, (size_t)hl);
    off = 4096;
    for (int i = 0; i < n; i++) {
        memcpy(b + off, t[i].bytes, t[i].length);
        off = (off + t[i].length + 4095) / 4096 * 4096;
    }
    hc__put_le64(b + HC_PRE_PREAMBLE_HASH, XXH3_64bits(b, HC_PRE_PREAMBLE_HASH));
    FILE *fp = fopen(path, "wb");
    fwrite(b, 1, end, fp);
    fclose(fp);
    free(b);
    return path;
}

static void open_as_checkpoint(void *path) {
    hc_ckpt *ck = NULL;
    hc_err err = {0};
    hc__ckpt_open(path, &ck, &err);
    hc__ckpt_close(ck);
}

/* One 4 GiB zstd tensor in a 135 KB container, sizes honest and every hash valid: refused at
 * open, naming the tensor, its raw_length and the limit, before anything is decoded, also by
 * the checkpoint reader validate uses. */
static void test_zstd_expansion_refused(void) {
    size_t len;
    unsigned char *frame = rle_frame(4ull << 30, 4ull << 30, &len);
    ct_tensor t = {"big", "zstd", 4ull << 30, frame, len};
    const char *path = write_container("big.hconvert", &t, 1);
    hc_container *c = NULL;
    char msg[1024] = "";
    CHECK_EQ_INT(hc_container_open(path, 0, &c, msg, sizeof msg), HC_INVALID);
    CHECK_CONTAINS(msg, "big.hconvert");
    CHECK_CONTAINS(msg, "tensor 'big'");
    CHECK_CONTAINS(msg, "raw_length 4294967296");
    CHECK_CONTAINS(msg, "67108864");
    hc_container_free(c);
    hc_ckpt *ck = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__ckpt_open(path, &ck, &err), HC_INVALID);
    CHECK_CONTAINS(err.msg, "tensor 'big'");
    hc__ckpt_close(ck);
    uint64_t grew = peak_growth(open_as_checkpoint, (void *)path);
    if (grew > (64u << 20)) CHECK_FAIL_("opening it grew memory by %llu bytes", (unsigned long long)grew);
    free(frame);
    /* many tensors within the per-tensor limit: the total is bounded by the file's size */
    frame = rle_frame(64u << 20, 64u << 20, &len);
    ct_tensor two[2] = {{"a", "zstd", 64u << 20, frame, len}, {"b", "zstd", 64u << 20, frame, len}};
    path = write_container("two.hconvert", two, 2);
    CHECK_EQ_INT(hc_container_open(path, 0, &c, msg, sizeof msg), HC_INVALID);
    CHECK_CONTAINS(msg, "expand to 134217728 bytes in all");
    CHECK_CONTAINS(msg, "67108864 + 16 x its size");
    hc_container_free(c);
    free(frame);
}

/* Frames are checked against their raw_length before and while decoding; a handle may set a
 * smaller limit than the format's. The honest frame decodes to zeros. */
static void test_zstd_frames_checked(void) {
    size_t len, len2;
    unsigned char *mib = rle_frame(1u << 20, 1u << 20, &len), *half = rle_frame(1u << 19, 1u << 19, &len2);
    unsigned char *lies = rle_frame(1u << 20, 1u << 19, &len); /* declares half its content */
    unsigned char *pair = malloc(2 * len2);
    memcpy(pair, half, len2), memcpy(pair + len2, half, len2);
    static const char *const want[] = {NULL, "does not declare", "not exactly one frame",
                                       "does not decode"};
    ct_tensor cases[4] = {{"w", "zstd", 1u << 20, mib, len}, {"w", "zstd", 1u << 19, mib, len},
                          {"w", "zstd", 1u << 20, pair, 2 * len2}, {"w", "zstd", 1u << 19, lies, len}};
    for (int k = 0; k < 4; k++) {
        const char *path = write_container("z.hconvert", &cases[k], 1);
        hc_container *c = NULL;
        char msg[1024] = "";
        CHECK_EQ_INT(hc_container_open(path, 0, &c, msg, sizeof msg), HC_OK);
        if (!c) {
            CHECK_FAIL_("case %d: %s", k, msg);
            continue;
        }
        const hc_tensor_info *t = hc_container_find(c, "w");
        const void *data = NULL;
        void *owned = NULL;
        hc_status st = hc_container_tensor_data(c, t, &data, &owned);
        hc_status vs = hc_container_verify(c, NULL);
        if (!want[k]) {
            CHECK_EQ_INT(st, HC_OK);
            CHECK_EQ_INT(vs, HC_OK);
            size_t nonzero = 0;
            for (size_t i = 0; data && i < (1u << 20); i++) nonzero += ((const unsigned char *)data)[i] != 0;
            CHECK(data && nonzero == 0);
            free(owned);
            CHECK_EQ_INT(hc_container_set_limit(c, HC_CONTAINER_LIMIT_ZSTD_RAW, 65536), HC_OK);
            st = hc_container_tensor_data(c, t, &data, &owned);
            CHECK_EQ_INT(st, HC_INVALID);
            CHECK_CONTAINS(hc_container_errmsg(c), "tensor 'w'");
            CHECK_CONTAINS(hc_container_errmsg(c), "raw_length 1048576");
            CHECK_CONTAINS(hc_container_errmsg(c), "65536 bytes");
            CHECK_EQ_INT(hc_container_set_limit(c, HC_CONTAINER_LIMIT_ZSTD_RAW, (64u << 20) + 1),
                         HC_USAGE);
        } else {
            CHECK_EQ_INT(st, HC_INVALID);
            CHECK_EQ_INT(vs, HC_INVALID);
            CHECK_CONTAINS(hc_container_errmsg(c), want[k]);
            CHECK_CONTAINS(hc_container_errmsg(c), "tensor 'w'");
        }
        hc_container_free(c);
    }
    free(mib), free(half), free(lies), free(pair);
}

/* ---- safetensors header memory ---- */

typedef struct {
    const char *path;
    hc_status st;
} st_job;

static void open_safetensors(void *arg) {
    st_job *j = arg;
    hc_st_file *f = NULL;
    hc_err err = {0};
    j->st = hc__st_open(j->path, &f, &err);
    if (j->st == HC_OK && f->ntensors != 100000) j->st = HC_INTERNAL;
    hc__st_close(f);
    if (j->st) _exit(2);
}

/* A header of 100,000 zero-size tensors (6 MB) is read within a few times its size (a JSON
 * tree of it took over 13 times). */
static void test_safetensors_header_memory(void) {
    enum { N = 100000 };
    char path[700];
    snprintf(path, sizeof path, "%s/many.safetensors", test_tmpdir());
    char *h = malloc((size_t)N * 64 + 16);
    size_t n = 0;
    h[n++] = '{';
    for (int i = 0; i < N; i++)
        n += (size_t)sprintf(h + n, "%s\"t%06d\":{\"dtype\":\"F32\",\"shape\":[0],"
                             "\"data_offsets\":[0,0]}", i ? "," : "", i);
    h[n++] = '}';
    unsigned char len8[8];
    hc__put_le64(len8, n);
    FILE *fp = fopen(path, "wb");
    fwrite(len8, 1, 8, fp);
    fwrite(h, 1, n, fp);
    fclose(fp);
    free(h);
    st_job j = {path, HC_OK};
    uint64_t grew = peak_growth(open_safetensors, &j);
    printf("     (%zu-byte header: peak growth %.1f MB)\n", n, (double)grew / 1e6);
    CHECK(grew != UINT64_MAX);
    if (grew > 5 * (uint64_t)n)
        CHECK_FAIL_("reading a %zu-byte header grew memory by %llu bytes (more than 5x)", n,
                    (unsigned long long)grew);
}

/* A FIFO named as a shard or a container is refused at once: opening one for reading would
 * wait for a writer forever. */
static void test_fifo_inputs_refused(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", test_tmpdir());
    CHECK(mkfifo(path, 0600) == 0);
    alarm(20); /* a blocking open would hang here: the alarm ends the run instead */
    hc_st_file *f = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__st_open(path, &f, &err), HC_INVALID);
    CHECK_CONTAINS(err.msg, "model.safetensors' is a FIFO");
    hc__st_close(f);
    hc_container *c = NULL;
    char msg[1024] = "";
    CHECK_EQ_INT(hc_container_open(path, 0, &c, msg, sizeof msg), HC_INVALID);
    CHECK_CONTAINS(msg, "is a FIFO");
    hc_container_free(c);
    char *loc = hc_container_locate(path);
    CHECK(loc == NULL);
    free(loc);
    alarm(0);
}

void suite_hostile(void) {
    RUN(test_npy_crafted_headers);
    RUN(test_npy_numpy_files);
    RUN(test_zstd_expansion_refused);
    RUN(test_zstd_frames_checked);
    RUN(test_safetensors_header_memory);
    RUN(test_fifo_inputs_refused);
}
