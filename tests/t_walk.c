/* t_walk.c: the kernels' walks over their work, replayed in plain C from the headers the kernels
 * include: the stream-K cut of the skinny kernels and ws128k (kernels/streamk_rule.h: ranges,
 * slots, owners, arrivals) and the warp-specialised kernels' block and persistent item order
 * (kernels/ws_walk.h). A walk that takes a cell twice or never shows here as a count, where on
 * the GPU it would be a wrong tile or a block that waits forever. The chooser's figures built on
 * them (grids, workspaces) are t_plan.c's and t_moe_plan.c's. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "streamk_rule.h"
#include "test.h"
#include "ws_walk.h"

/* One launch of the skinny kernels replayed on the host by streamk_rule.h: every taking-part
 * block walks its range as the kernel does (a tile wholly in the range is stored; otherwise the
 * segment goes to slot 0 if the range begins with it, else 1, and arrives at the tile's
 * counter). Returns the number of broken promises: a block with an empty range, a slot written
 * twice, a tile stored and also cut, a cut tile whose arrivals are not the count the last
 * arrival waits for, or whose reader's slots are not the ones its blocks wrote. grid: the
 * blocks that take part (hc_streamk_blocks, or another count to show what breaks). */
static unsigned streamk_replay(uint64_t units, uint64_t tk, uint64_t g) {
    const uint64_t items = units * tk;
    unsigned bad = 0;
    int64_t *slot_unit = malloc(g * 2 * sizeof *slot_unit);
    unsigned *stored = calloc(units, sizeof *stored), *arrived = calloc(units, sizeof *arrived);
    if (!slot_unit || !stored || !arrived) {
        free(slot_unit), free(stored), free(arrived);
        return 1;
    }
    for (uint64_t i = 0; i < g * 2; i++) slot_unit[i] = -1;
    for (uint64_t b = 0; b < g; b++) {
        const uint64_t t0 = hc_streamk_start((unsigned)b, (unsigned)items, (unsigned)g),
                       t1 = hc_streamk_start((unsigned)b + 1, (unsigned)items, (unsigned)g);
        bad += t1 <= t0;
        for (uint64_t t = t0; t < t1;) {
            const uint64_t u = t / tk, u0 = u * tk, e = t1 < u0 + tk ? t1 : u0 + tk;
            if (t == u0 && e == u0 + tk) {
                stored[u]++;
            } else {
                const unsigned sl = t == t0 ? 0 : 1;
                bad += slot_unit[b * 2 + sl] != -1;
                slot_unit[b * 2 + sl] = (int64_t)u;
                arrived[u]++;
            }
            t = e;
        }
    }
    for (uint64_t u = 0; u < units; u++) {
        const uint64_t u0 = u * tk;
        const uint64_t b0 = hc_streamk_owner(u0, items, g), b1 = hc_streamk_owner(u0 + tk - 1, items, g);
        /* the kernels find b0 and b1 by stepping from any block of the tile: the same blocks */
        for (uint64_t b = b0; b <= b1 && b < g; b++)
            bad += hc_streamk_owner_from((unsigned)u0, (unsigned)b, (unsigned)items, (unsigned)g) != b0 ||
                   hc_streamk_owner_from((unsigned)(u0 + tk - 1), (unsigned)b, (unsigned)items,
                                         (unsigned)g) != b1;
        if (stored[u]) {
            bad += stored[u] != 1 || arrived[u] != 0 || b0 != b1;
            continue;
        }
        bad += arrived[u] != b1 - b0 + 1;
        for (uint64_t b = b0; b <= b1 && b < g; b++)
            bad += slot_unit[b * 2 + hc_streamk_slot((unsigned)b, (unsigned)u0, (unsigned)items,
                                                     (unsigned)g)] != (int64_t)u;
    }
    free(slot_unit), free(stored), free(arrived);
    return bad;
}

/* The skinny kernels' cut (kernels/streamk_rule.h) over launches of 1-300 tiles of 1-64 K
 * tiles on grids of 1-300 blocks, the MoE case of more blocks than items included: with the
 * blocks hc_streamk_blocks lets take part, every promise holds. With every block of a grid
 * larger than the work taking part, some tile's blocks never all arrive (what the H200 showed:
 * session 15's 66 moe_test failures). */
static void test_streamk_rule(void) {
    uint64_t rng = 0x5eed;
    unsigned bad = 0, broken_without = 0;
    for (int i = 0; i < 4000; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        const uint64_t units = 1 + rng % 300, tk = 1 + (rng >> 12) % 64, grid = 1 + (rng >> 24) % 300;
        const uint64_t g = hc_streamk_blocks(units * tk, grid, HC_SKINNY_MIN_TILES);
        CHECK(g >= 1 && g <= grid);
        bad += streamk_replay(units, tk, g);
        if (grid > units * tk) broken_without += streamk_replay(units, tk, grid) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(broken_without > 0);
    /* the 32-bit start is floor(b x items / g) over the launches' whole range (items < 2^31,
     * b <= g < 2^16), against the 64-bit product */
    unsigned off = 0;
    for (int i = 0; i < 100000; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        const uint64_t items = 1 + (rng & 0x7FFFFFFE), g = 1 + (rng >> 33) % 65535, b = (rng >> 49) % (g + 1);
        off += hc_streamk_start((unsigned)b, (unsigned)items, (unsigned)g) != b * items / g;
    }
    CHECK_EQ_INT(off, 0);
    CHECK_EQ_U64(hc_streamk_start(65535, 0x7FFFFFFF, 65535), 0x7FFFFFFF);
    /* by hand: 120 items (15 tiles of 2 parts x 4) on 132 SMs: 15 blocks of 8 */
    CHECK_EQ_U64(hc_streamk_blocks(120, 132, 8), 15);
    CHECK_EQ_U64(hc_streamk_blocks(14336, 132, 8), 132);
    CHECK_EQ_U64(hc_streamk_blocks(2, 132, 8), 1);
    CHECK_EQ_U64(hc_streamk_owner(0, 120, 132), 1); /* block 0 of 132 would be empty */
}

/* hc_ws_walk (kernels/ws_walk.h, the warp-specialised kernels' block order and the persistent
 * kernels' item order): on grids of 1-21 groups x 1-40 tiles every cell is taken once, and the
 * ids in a run of HC_WIDE_GROUP x gx keep their tiles within one group of HC_WIDE_GROUP (what
 * keeps the blocks in flight on shared weights and activations); a persistent grid of G blocks
 * (ids b + k G) takes each once too, as those are the same ids. */
static void test_ws_walk(void) {
    static unsigned char seen[21 * 40];
    for (unsigned gx = 1; gx <= 21; gx++)
        for (unsigned gy = 1; gy <= 40; gy++) {
            memset(seen, 0, sizeof seen);
            bool ok = true;
            for (unsigned id = 0; id < gx * gy && ok; id++) {
                unsigned vp = ~0u, mt = ~0u;
                hc_ws_walk(gx, gy, id, &vp, &mt);
                const unsigned g0 = id / (HC_WIDE_GROUP * gx) * HC_WIDE_GROUP;
                if (vp >= gx || mt >= gy || seen[vp * gy + mt]++ || mt < g0 ||
                    mt >= g0 + HC_WIDE_GROUP) {
                    CHECK_FAIL_("gx %u gy %u: id %u -> (%u, %u)", gx, gy, id, vp, mt);
                    ok = false;
                }
            }
            for (unsigned i = 0; i < gx * gy && ok; i++)
                if (seen[(i % gx) * gy + i / gx] != 1) {
                    CHECK_FAIL_("gx %u gy %u: cell (%u, %u) not taken once", gx, gy, i % gx,
                                i / gx);
                    ok = false;
                }
            CHECK(ok);
        }
}

void suite_walk(void) {
    RUN(test_streamk_rule);
    RUN(test_ws_walk);
}
