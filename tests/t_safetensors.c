/* t_safetensors.c: the reader against files written by the real safetensors library
 * (expected values computed by numpy in the generator) and against golden corrupt files. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>

#include "checkpoint.h"
#include "safetensors.h"
#include "test.h"

static cJSON *load_expected(void) {
    char *text = NULL;
    size_t len = 0;
    hc_err err = {0};
    if (hc__read_file(fixture("st/expected.json"), 1 << 24, &text, &len, &err)) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    return j;
}

static const hc_st_tensor *find(const hc_st_file *f, const char *name) {
    for (size_t i = 0; i < f->ntensors; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

/* Every valid fixture: names, dtypes, shapes, sizes and the FNV-1a of the bytes numpy wrote. */
static void test_valid_files_match_numpy(void) {
    cJSON *exp = load_expected();
    CHECK(exp != NULL);
    if (!exp) return;
    int files = 0, tensors = 0;
    const cJSON *file;
    cJSON_ArrayForEach(file, exp) {
        hc_st_file *f = NULL;
        hc_err err = {0};
        hc_status st = hc__st_open(fixture(file->string), &f, &err);
        if (st) {
            CHECK_FAIL_("open %s: %s", file->string, err.msg);
            continue;
        }
        files++;
        CHECK_EQ_INT(hc__st_map(f, &err), HC_OK);
        CHECK_EQ_U64(f->ntensors, cJSON_GetArraySize(file));
        const cJSON *e;
        cJSON_ArrayForEach(e, file) {
            const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
            const hc_st_tensor *t = find(f, name);
            if (!t) {
                CHECK_FAIL_("%s: tensor '%s' not found", file->string, name);
                continue;
            }
            tensors++;
            CHECK_STR_EQ(hc_dtype_name(t->dtype), cJSON_GetObjectItem(e, "dtype")->valuestring);
            const cJSON *shape = cJSON_GetObjectItem(e, "shape");
            CHECK_EQ_INT(t->ndim, cJSON_GetArraySize(shape));
            for (int d = 0; d < t->ndim && d < cJSON_GetArraySize(shape); d++)
                CHECK_EQ_U64(t->shape[d], cJSON_GetArrayItem(shape, d)->valuedouble);
            uint64_t nbytes = (uint64_t)cJSON_GetObjectItem(e, "nbytes")->valuedouble;
            CHECK_EQ_U64(t->end - t->begin, nbytes);
            char hex[17];
            hc__hex64(fnv1a64(hc__st_data(f, t), (size_t)nbytes), hex);
            CHECK_STR_EQ(hex, cJSON_GetObjectItem(e, "fnv1a64")->valuestring);
        }
        hc__st_close(f);
    }
    CHECK(files >= 19);
    CHECK(tensors >= 100);
    cJSON_Delete(exp);
}

static void test_metadata_and_special_shapes(void) {
    hc_st_file *f = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__st_open(fixture("st/dtypes.safetensors"), &f, &err), HC_OK);
    if (!f) return;
    CHECK_EQ_U64(f->nmeta, 1);
    if (f->nmeta) {
        CHECK_STR_EQ(f->meta_keys[0], "format");
        CHECK_STR_EQ(f->meta_values[0], "pt");
    }
    const hc_st_tensor *scalar = find(f, "t.i64"), *empty = find(f, "t.i32");
    CHECK(scalar && scalar->ndim == 0 && scalar->numel == 1 && scalar->end - scalar->begin == 8);
    CHECK(empty && empty->numel == 0 && empty->end == empty->begin);
    /* the header is read by pread alone: nothing mapped until asked */
    CHECK(f->map == NULL);
    hc__st_close(f);
}

static char *read_text(const char *path) {
    char *t = NULL;
    size_t n = 0;
    hc_err err = {0};
    hc__read_file(path, 1 << 20, &t, &n, &err);
    return t;
}

/* Every golden corrupt file fails with HC_INVALID and a message naming the file and what
 * its .expect lists (the tensor and the rule). */
static void test_corrupt_goldens(void) {
    DIR *d = opendir(fixture("corrupt"));
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *de;
    int cases = 0;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 8 || strcmp(de->d_name + n - 7, ".expect")) continue;
        char base[256], path[1024], expath[1024];
        snprintf(base, sizeof base, "%.*s", (int)(n - 7), de->d_name);
        snprintf(path, sizeof path, "%s/%s.safetensors", fixture("corrupt"), base);
        snprintf(expath, sizeof expath, "%s/%s", fixture("corrupt"), de->d_name);
        char *expect = read_text(expath);
        CHECK(expect != NULL);
        hc_st_file *f = NULL;
        hc_err err = {0};
        hc_status st = hc__st_open(path, &f, &err);
        cases++;
        if (st != HC_INVALID) {
            CHECK_FAIL_("%s: status %s, expected HC_INVALID", base, hc_status_name(st));
            hc__st_close(f);
            free(expect);
            continue;
        }
        char fname[300];
        snprintf(fname, sizeof fname, "%s.safetensors", base);
        CHECK_CONTAINS(err.msg, fname);
        for (char *line = expect ? strtok(expect, "\n") : NULL; line; line = strtok(NULL, "\n"))
            if (*line) CHECK_CONTAINS(err.msg, line);
        free(expect);
    }
    closedir(d);
    CHECK(cases >= 22);
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random damage to a real header never crashes the parser (ASan/UBSan watch) and anything
 * it accepts still satisfies the contiguity invariants. */
static void test_header_mutations_never_crash(void) {
    hc_st_file *orig = NULL;
    hc_err err = {0};
    CHECK_EQ_INT(hc__st_open(fixture("st/dtypes.safetensors"), &orig, &err), HC_OK);
    if (!orig) return;
    char *hdr = malloc(orig->header_len + 1);
    hc__pread_full(orig->fd, hdr, orig->header_len, 8, "dtypes", &err);
    char *m = malloc(orig->header_len + 1);
    int accepted = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(m, hdr, orig->header_len);
        int flips = 1 + (int)(rng() % 4);
        for (int k = 0; k < flips; k++) {
            size_t pos = rng() % orig->header_len;
            static const char alphabet[] = "{}[]\",:0123456789-.eE \\u\xff\x80 abcFIU";
            m[pos] = (rng() & 1) ? (char)rng() : alphabet[rng() % (sizeof alphabet - 1)];
        }
        uint64_t len = orig->header_len - (rng() % 8 == 0 ? rng() % orig->header_len : 0);
        m[len] = 0;
        hc_st_file f = {.path = "mutant", .fd = -1, .file_size = orig->file_size,
                        .header_len = len, .data_start = 8 + len};
        hc_err e2 = {0};
        hc_status st = hc__st_parse_header(&f, m, len, &e2);
        CHECK(st == HC_OK || st == HC_INVALID);
        if (st == HC_OK) {
            accepted++;
            uint64_t pos = 0;
            for (size_t i = 0; i < f.ntensors; i++) {
                CHECK_EQ_U64(f.tensors[i].begin, pos);
                pos = f.tensors[i].end;
            }
            CHECK_EQ_U64(pos + f.data_start, f.file_size);
        } else {
            CHECK(e2.msg[0] != 0);
        }
        for (size_t i = 0; i < f.ntensors; i++) free(f.tensors[i].name);
        free(f.tensors);
        for (size_t i = 0; i < f.nmeta; i++) free(f.meta_keys[i]), free(f.meta_values[i]);
        free(f.meta_keys);
        free(f.meta_values);
    }
    (void)accepted;
    free(m);
    free(hdr);
    hc__st_close(orig);
}

/* Every truncation of a valid file is refused with a message, never a crash. */
static void test_every_truncation_refused(void) {
    char *data = NULL;
    size_t n = 0;
    hc_err err = {0};
    CHECK_EQ_INT(hc__read_file(fixture("st/dtypes.safetensors"), 1 << 24, &data, &n, &err), HC_OK);
    const char *dir = test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/cut.safetensors", dir);
    int refused = 0;
    for (size_t len = 0; len < n; len += 1 + len / 16) {
        FILE *fp = fopen(path, "wb");
        fwrite(data, 1, len, fp);
        fclose(fp);
        hc_st_file *f = NULL;
        hc_err e2 = {0};
        hc_status st = hc__st_open(path, &f, &e2);
        refused += st == HC_INVALID;
        CHECK_EQ_INT(st, HC_INVALID);
        CHECK_CONTAINS(e2.msg, "cut.safetensors");
        hc__st_close(f);
    }
    CHECK(refused > 10);
    free(data);
}

/* Parses header text as the header of a file holding `data` bytes after it; msg gets the
 * error. The parsed entries are freed. */
static hc_status parse_text(const char *json, uint64_t data, char *msg, size_t cap,
                            char *first_name, size_t name_cap) {
    size_t len = strlen(json);
    hc_st_file f = {.path = "t.safetensors", .fd = -1, .header_len = len, .data_start = 8 + len,
                    .file_size = 8 + len + data};
    hc_err err = {0};
    hc_status st = hc__st_parse_header(&f, json, len, &err);
    snprintf(msg, cap, "%s", err.msg);
    if (first_name && name_cap) snprintf(first_name, name_cap, "%s", f.ntensors ? f.tensors[0].name : "");
    for (size_t i = 0; i < f.ntensors; i++) free(f.tensors[i].name);
    free(f.tensors);
    for (size_t i = 0; i < f.nmeta; i++) free(f.meta_keys[i]), free(f.meta_values[i]);
    free(f.meta_keys);
    free(f.meta_values);
    return st;
}

static void expect_parse(const char *json, uint64_t data, hc_status want, const char *needle) {
    char msg[1024];
    hc_status st = parse_text(json, data, msg, sizeof msg, NULL, 0);
    if (st != want)
        CHECK_FAIL_("status %s, expected %s: %s\n    header: %.200s", hc_status_name(st),
                    hc_status_name(want), msg, json);
    if (needle) CHECK_CONTAINS(msg, needle);
}

#define E0 "\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]"

/* The one-pass JSON reader: what it accepts beyond the plain case (escapes, unknown fields
 * of any shape, any JSON number in them) and what it refuses (shape or offsets not written in
 * plain digits, a repeated field, deep nesting, more than 8 dimensions, lone surrogates,
 * control bytes, repeated metadata keys). */
static void test_header_json_rules(void) {
    char name[64], msg[1024];
    CHECK_EQ_INT(parse_text("{\"caf\\u00e9 \\ud83d\\ude00\\n\":{" E0 "}}", 0, msg, sizeof msg, name,
                            sizeof name), HC_OK);
    CHECK_STR_EQ(name, "caf\xc3\xa9 \xf0\x9f\x98\x80\n");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,2],\"data_offsets\":[0,2]}} ", 2,
                 HC_OK, NULL);
    /* integers written as other numbers: the reference reader refuses them all */
    static const char *const unplain[] = {"-0", "2.0", "8e0", "1.0", "2E0", "0e5", "-1"};
    for (size_t i = 0; i < sizeof unplain / sizeof unplain[0]; i++) {
        char h[256];
        snprintf(h, sizeof h, "{\"w.x\":{\"dtype\":\"U8\",\"shape\":[2,%s],\"data_offsets\":"
                 "[0,0]}}", unplain[i]);
        expect_parse(h, 16, HC_INVALID, "tensor 'w.x': shape dimension 1 is not an integer");
        snprintf(h, sizeof h, "{\"w.x\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":"
                 "[%s,0]}}", unplain[i]);
        expect_parse(h, 16, HC_INVALID, "tensor 'w.x': data_offsets must be two integers");
        snprintf(h, sizeof h, "{\"w.x\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":"
                 "[0,%s]}}", unplain[i]);
        expect_parse(h, 16, HC_INVALID, "tensor 'w.x': data_offsets must be two integers");
    }
    expect_parse("{\"a\":{\"x\":[{\"y\":[1,-2.5e3,true,null,\"s\"]},{}],\"z\":false," E0 "}}", 0,
                 HC_OK, NULL);
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"I8\",\"shape\":[0],\"data_offsets\":[0,0]}}",
                 0, HC_INVALID, "duplicate key \"dtype\"");
    char deep[400] = "{\"a\":{\"x\":";
    for (int i = 0; i < 70; i++) strcat(deep, "[");
    for (int i = 0; i < 70; i++) strcat(deep, "]");
    strcat(deep, "," E0 "}}");
    expect_parse(deep, 0, HC_INVALID, "deeper than 64");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
                 1, HC_INVALID, "9 dimensions");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1,
                 HC_INVALID, "shape dimension 0");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[9007199254740992],\"data_offsets\":[0,0]}}",
                 0, HC_INVALID, "shape dimension 0");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0,0]}}", 0,
                 HC_INVALID, "data_offsets");
    expect_parse("{\"\\ud800\":{" E0 "}}", 0, HC_INVALID, "not valid JSON");
    expect_parse("{\"a\tb\":{" E0 "}}", 0, HC_INVALID, "not valid JSON");
    expect_parse("{\"a\":{" E0 "}", 0, HC_INVALID, "not valid JSON");
    expect_parse("{\"a\":{" E0 "}} x", 0, HC_INVALID, "after the JSON object");
    expect_parse("{\"a\":{\"dtype\":\"F32_AND_A_VERY_LONG_NAME_INDEED_YES\",\"shape\":[0],"
                 "\"data_offsets\":[0,0]}}", 0, HC_INVALID, "unknown dtype 'F32_AND");
    expect_parse("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"},\"a\":{" E0 "}}", 0, HC_INVALID,
                 "__metadata__ key 'k' appears twice");
    expect_parse("{\"__metadata__\":{},\"__metadata__\":{},\"a\":{" E0 "}}", 0, HC_INVALID,
                 "duplicate");
    expect_parse("{\"__metadata__\":[],\"a\":{" E0 "}}", 0, HC_INVALID, "not an object");
    /* metadata pairs are bounded: one past the limit is refused */
    size_t cap = (size_t)(HC_ST_MAX_METADATA + 1) * 16 + 64, n = 0;
    char *big = malloc(cap);
    n += (size_t)snprintf(big + n, cap - n, "{\"__metadata__\":{");
    for (unsigned i = 0; i <= HC_ST_MAX_METADATA; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s\"%u\":\"v\"", i ? "," : "", i);
    snprintf(big + n, cap - n, "}}");
    expect_parse(big, 0, HC_INVALID, "more than 65536 entries");
    free(big);
}

void suite_safetensors(void) {
    RUN(test_header_json_rules);
    RUN(test_valid_files_match_numpy);
    RUN(test_metadata_and_special_shapes);
    RUN(test_corrupt_goldens);
    RUN(test_header_mutations_never_crash);
    RUN(test_every_truncation_refused);
}
