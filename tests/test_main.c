/* test_main.c: runs every unit-test suite and ends with the line "N passed, N failed". */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "checkpoint.h"
#include "test.h"

int hc_test_failures;
const char *hc_test_name;
static int passed, failed;
static char tmp_root[256];

void hc_test_run(const char *name, void (*fn)(void)) {
    hc_test_name = name;
    hc_test_failures = 0;
    fn();
    if (hc_test_failures) {
        failed++;
        printf("FAIL %s\n", name);
    } else {
        passed++;
        printf("ok   %s\n", name);
    }
    fflush(stdout);
}

const char *fixture(const char *rel) {
    static char buf[4][1024];
    static int k;
    const char *root = getenv("HC_FIXTURES");
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", root && *root ? root : "tests/fixtures", rel);
    return b;
}

const char *test_tmpdir(void) {
    static char buf[512];
    static int k;
    if (!tmp_root[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp_root, sizeof tmp_root, "%s/hc-test-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp_root)) {
            perror("mkdtemp");
            exit(3);
        }
    }
    snprintf(buf, sizeof buf, "%s/%d", tmp_root, k++);
    if (mkdir(buf, 0700) != 0) {
        perror("mkdir");
        exit(3);
    }
    return buf;
}

struct cJSON *test_load_json(const char *path) {
    char *t = NULL;
    size_t n = 0;
    hc_err err = {0};
    if (hc__read_file(path, 1 << 24, &t, &n, &err)) return NULL;
    cJSON *j = cJSON_ParseWithLength(t, n);
    free(t);
    return j;
}

char **fixture_cases(char **buf) {
    size_t n = 0;
    hc_err err = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", fixture("quant"));
    *buf = NULL;
    if (hc__read_file(path, 1 << 20, buf, &n, &err)) return calloc(1, sizeof(char *));
    char **v = calloc(n + 1, sizeof *v);
    size_t k = 0;
    for (char *save = NULL, *c = strtok_r(*buf, "\n", &save); v && c; c = strtok_r(NULL, "\n", &save))
        v[k++] = c;
    return v;
}

uint64_t fnv1a64(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

/* test_unit [SUITE...]: every suite, or only the named ones (e.g. "tp jit") */
int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } suites[] = {{"base", suite_base},     {"safetensors", suite_safetensors},
                  {"checkpoint", suite_checkpoint}, {"container", suite_container},
                  {"quant", suite_quant},   {"layout", suite_layout},
                  {"run", suite_run},       {"tp", suite_tp},
                  {"jit", suite_jit},       {"inputs", suite_inputs},
                  {"regex", suite_regex},   {"hostile", suite_hostile},
                  {"faults", suite_faults}, {"convert", suite_convert},
                  {"plan", suite_plan},     {"moe", suite_moe},
                  {"moeblock", suite_moeblock}, {"moeplan", suite_moeplan},
                  {"walk", suite_walk},         {"registry", suite_registry}};
    int ran = 0;
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        bool want = argc < 2;
        for (int a = 1; a < argc && !want; a++) want = !strcmp(argv[a], suites[i].name);
        if (want) suites[i].fn(), ran++;
    }
    if (!ran) {
        fprintf(stderr, "test_unit: no suite named '%s'\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    if (tmp_root[0]) hc__remove_tree(tmp_root);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
