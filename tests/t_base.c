/* t_base.c: status table, checked arithmetic, JSON integer limits, UTF-8 and escaping. */
#include <math.h>
#include <stdlib.h>

#include "base.h"
#include "test.h"

static void test_status_table(void) {
    CHECK_STR_EQ(hc_status_name(HC_INVALID), "HC_INVALID");
    CHECK_STR_EQ(hc_strerror(HC_CHECKSUM), "checksum mismatch");
    CHECK_EQ_INT(hc_status_exit_code(HC_OK), 0);
    CHECK_EQ_INT(hc_status_exit_code(HC_INVALID), 1);
    CHECK_EQ_INT(hc_status_exit_code(HC_CHECKSUM), 1);
    CHECK_EQ_INT(hc_status_exit_code(HC_USAGE), 2);
    CHECK_EQ_INT(hc_status_exit_code(HC_IO), 3);
    CHECK_EQ_INT(hc_status_exit_code(HC_INTERNAL), 3);
}

static void test_dtype_table(void) {
    CHECK_EQ_INT(hc_dtype_bits(hc_dtype_from_name("F4")), 4);
    CHECK_EQ_INT(hc_dtype_bits(hc_dtype_from_name("F6_E3M2")), 6);
    CHECK_EQ_INT(hc_dtype_bits(hc_dtype_from_name("BF16")), 16);
    CHECK_EQ_INT(hc_dtype_bits(hc_dtype_from_name("C64")), 64);
    CHECK_EQ_INT(hc_dtype_from_name("F33"), HC_DTYPE_INVALID);
    CHECK_EQ_INT(hc_dtype_from_name(""), HC_DTYPE_INVALID);
    for (int d = 1; d < HC_DTYPE_COUNT; d++)
        CHECK_EQ_INT(hc_dtype_from_name(hc_dtype_name((hc_dtype)d)), d);
}

static void test_checked_math(void) {
    uint64_t r = 0;
    CHECK(hc__mul_u64(1ull << 32, 1ull << 31, &r) && r == 1ull << 63);
    CHECK(!hc__mul_u64(1ull << 32, 1ull << 32, &r));
    CHECK(!hc__add_u64(UINT64_MAX, 1, &r));
    CHECK(hc__align_u64(4097, 4096, &r) && r == 8192);
    CHECK(hc__align_u64(0, 4096, &r) && r == 0);
    CHECK(!hc__align_u64(UINT64_MAX - 10, 4096, &r));
}

static void test_json_int_limit(void) {
    uint64_t v = 0;
    CHECK(hc__double_to_u64(0.0, &v) && v == 0);
    CHECK(hc__double_to_u64(9007199254740991.0, &v) && v == 9007199254740991ull);
    CHECK(!hc__double_to_u64(9007199254740992.0, &v));
    CHECK(!hc__double_to_u64(-1.0, &v));
    CHECK(!hc__double_to_u64(2.5, &v));
    CHECK(!hc__double_to_u64(NAN, &v));
    CHECK(!hc__double_to_u64(INFINITY, &v));
}

static void test_utf8_and_escape(void) {
    CHECK(hc__utf8_valid("abc", 3));
    CHECK(hc__utf8_valid("\xc3\xa9", 2));        /* é */
    CHECK(!hc__utf8_valid("\xff", 1));
    CHECK(!hc__utf8_valid("\xc0\xaf", 2));       /* overlong '/' */
    CHECK(!hc__utf8_valid("\xed\xa0\x80", 3));   /* surrogate */
    CHECK(!hc__utf8_valid("\xe2\x82", 2));       /* truncated */
    char out[64];
    CHECK_STR_EQ(hc__escape("evil\x1b[31mred\x07", out, sizeof out), "evil\\x1b[31mred\\x07");
    CHECK_STR_EQ(hc__escape("a\\b", out, sizeof out), "a\\\\b");
    CHECK_STR_EQ(hc__escape("caf\xc3\xa9", out, sizeof out), "caf\xc3\xa9");
    CHECK_STR_EQ(hc__escape("\xff", out, sizeof out), "\\xff");
    char small[6];
    CHECK_STR_EQ(hc__escape("\x01\x02", small, sizeof small), "\\x01"); /* never overflows */
}

static void test_hex(void) {
    char h[17];
    uint64_t v = 0;
    hc__hex64(0x0123456789abcdefull, h);
    CHECK_STR_EQ(h, "0123456789abcdef");
    CHECK(hc__parse_hex64(h, &v) && v == 0x0123456789abcdefull);
    CHECK(!hc__parse_hex64("0123456789ABCDEF", &v));
    CHECK(!hc__parse_hex64("0123", &v));
}

void suite_base(void) {
    RUN(test_status_table);
    RUN(test_dtype_table);
    RUN(test_checked_math);
    RUN(test_json_int_limit);
    RUN(test_utf8_and_escape);
    RUN(test_hex);
}
