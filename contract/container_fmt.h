/* container_fmt.h: byte-level constants of the hconvert container (docs/container.md),
 * shared by the reader (runtime/) and the writer (convert/). */
#ifndef HC_CONTAINER_FMT_H
#define HC_CONTAINER_FMT_H

#include <stdint.h>

#define HC_CT_MAGIC "\x89HCVT\r\n\x1a"   /* 8 bytes; catches text-mode transfers */
#define HC_CT_MAJOR 1
#define HC_CT_MINOR 0
#define HC_CT_PREAMBLE_SIZE 64u
#define HC_CT_ALIGN 4096u
#define HC_CT_MAX_HEADER (256u << 20)  /* a header above 256 MiB is refused */

/* Preamble field offsets (all little-endian). */
enum {
    HC_PRE_MAGIC = 0,          /* 8 bytes */
    HC_PRE_MAJOR = 8,          /* u16 */
    HC_PRE_MINOR = 10,         /* u16 */
    HC_PRE_SIZE = 12,          /* u32, = 64 */
    HC_PRE_HEADER_OFFSET = 16, /* u64, = 64 */
    HC_PRE_HEADER_LENGTH = 24, /* u64 */
    HC_PRE_DATA_OFFSET = 32,   /* u64, = align4096(64 + header length) */
    HC_PRE_FILE_SIZE = 40,     /* u64 */
    HC_PRE_HEADER_HASH = 48,   /* u64, XXH3-64 of the header bytes */
    HC_PRE_PREAMBLE_HASH = 56, /* u64, XXH3-64 of bytes 0..55 */
};

/* zstd tensors (docs/container.md, "Limits"): a tensor declaring more than HC_CT_ZSTD_MAX_RAW
 * bytes is refused (the writer compresses only tensors up to that size), and so is a file whose
 * zstd tensors declare more than HC_CT_ZSTD_MAX_RAW + HC_CT_ZSTD_MAX_RATIO x its size in all:
 * a small file cannot make a reader allocate without bound. */
#define HC_CT_ZSTD_MAX_RAW (64ull << 20)
#define HC_CT_ZSTD_MAX_RATIO 16u

/* Features a reader must understand; listed in the header's "required_features". */
#define HC_CT_KNOWN_FEATURES {"zstd"}

static inline uint64_t hc__le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint32_t hc__le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint16_t hc__le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline void hc__put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++, v >>= 8) p[i] = (unsigned char)v;
}
static inline void hc__put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++, v >>= 8) p[i] = (unsigned char)v;
}
static inline void hc__put_le16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

#endif
