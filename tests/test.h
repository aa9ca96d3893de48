/* test.h: the unit-test harness: typed checks that print both values, one counter per test.
 * A test passes when none of its checks failed. */
#ifndef HC_TEST_H
#define HC_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

extern int hc_test_failures; /* checks failed in the running test */
extern const char *hc_test_name;

void hc_test_run(const char *name, void (*fn)(void));
#define RUN(fn) hc_test_run(#fn, fn)

#define CHECK_FAIL_(fmt, ...)                                                              \
    do {                                                                                   \
        hc_test_failures++;                                                                \
        fprintf(stderr, "  FAIL %s (%s:%d): " fmt "\n", hc_test_name, __FILE__, __LINE__,  \
                __VA_ARGS__);                                                              \
    } while (0)

#define CHECK(c)                                     \
    do {                                             \
        if (!(c)) CHECK_FAIL_("%s", "CHECK(" #c ")"); \
    } while (0)
#define CHECK_EQ_U64(a, b)                                                              \
    do {                                                                                \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                \
        if (a_ != b_) CHECK_FAIL_("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_); \
    } while (0)
#define CHECK_EQ_INT(a, b)                                                    \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ != b_) CHECK_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_);  \
    } while (0)
#define CHECK_STR_EQ(a, b)                                                             \
    do {                                                                               \
        const char *a_ = (a), *b_ = (b);                                               \
        if (!a_ || !b_ || strcmp(a_, b_))                                              \
            CHECK_FAIL_("%s == %s: '%s' != '%s'", #a, #b, a_ ? a_ : "(null)",          \
                        b_ ? b_ : "(null)");                                           \
    } while (0)
#define CHECK_CONTAINS(hay, needle)                                                    \
    do {                                                                               \
        const char *h_ = (hay), *n_ = (needle);                                        \
        if (!h_ || !strstr(h_, n_))                                                    \
            CHECK_FAIL_("'%s' should contain '%s'", h_ ? h_ : "(null)", n_);           \
    } while (0)

/* Path of a fixture: $HC_FIXTURES or tests/fixtures, joined with rel (static buffer). */
const char *fixture(const char *rel);
/* A fresh empty temporary folder (static buffer, removed at exit). */
const char *test_tmpdir(void);
uint64_t fnv1a64(const void *p, size_t n);
/* The quantized fixture cases (tests/fixtures/quant/cases.txt): a NULL-terminated array of
 * names pointing into *buf; free both. */
char **fixture_cases(char **buf);
/* A JSON file parsed with cJSON (a cJSON *, to be deleted), or NULL. */
struct cJSON *test_load_json(const char *path);

void suite_base(void);
void suite_safetensors(void);
void suite_checkpoint(void);
void suite_container(void);
void suite_quant(void);
void suite_layout(void);
void suite_run(void);
void suite_tp(void);
void suite_jit(void);
void suite_inputs(void);
void suite_regex(void);
void suite_hostile(void);
void suite_faults(void);
void suite_convert(void);
void suite_plan(void);
void suite_moeplan(void);
void suite_walk(void);
void suite_registry(void);
void suite_moe(void);
void suite_moeblock(void);

#endif
