/* config.h: the measured constants of the kernel families, read by the kernels (NVRTC sees
 * this file as a header) and by the runtime's family registry (runtime/gpu_families.c: shared
 * memory sizes, launch shapes). Plain C. Each value was chosen by a measurement recorded in
 * bench/NOTES.md; an experiment changes it on a branch (or in a bench-only build), measures,
 * and keeps or reverts it -- nothing here is read from the environment. (A module's only
 * options are its kind of layer, kernels/codec/kind.cuh, and in a bench build the
 * measurement-only -DHC_GEMV_DIAG, kernels/gemm/gemv.cuh.) */
#ifndef HC_KERNEL_CONFIG_H
#define HC_KERNEL_CONFIG_H

/* threads per block of each family: the kernels are written for these (four warps of the
 * small-M loop, eight of the GEMMs, a producer and two consumer warpgroups) */
#define HC_GEMV_THREADS 128
#define HC_GEMM_THREADS 256 /* hc_mma_gemm and hc_wgmma_gemm */
#define HC_WS_THREADS 384
/* small M (hc_mma_gemv_t8/t16): tiles in a warp's pipeline (STAGES - 1 in flight; v19-v24) */
#define HC_GEMV_STAGES 4
/* M = 1 (hc_mma_gemv_t1): its stages hold one activation row, so more of them fit (v28) */
#define HC_GEMV1_STAGES 6
/* the warp-owned small-M items (gemm/gemv_items.cuh, hc_moe_gemv_w8): a warp's pipeline
 * stages, and its ring of item descriptors in shared memory (v105: 32 refilled at a time
 * behind the items done, 16 for the copies to run ahead in; the stages a prediction, not yet
 * measured: bench/NOTES.md v44) */
#define HC_GEMVW_STAGES 6
#define HC_GEMVW_ITEMS 48
/* the static shared memory of those descriptors: 4 warps x the most items x 64 bytes */
#define HC_GEMVW_DESC_BYTES (4u * HC_GEMVW_ITEMS * 64u)
/* launch bounds of the small-M kernels: resident blocks per SM the registers must allow. The
 * grouped 16-token one holds 3 (one stripe a block: its stages, 4 warps x 4 x (chunk + 2 KiB),
 * fit 3 in an sm_90 SM for every chunk; a bound of 4 only capped it at 128 registers, where it
 * spilled 16 bytes, int4 g128); the dense one 2 (two stripes a block, below: its stages fit 2
 * blocks of an sm_90 SM, and two stripes need ~200 registers) */
#define HC_GEMV_MINB 4
#define HC_GEMV16_MINB 2
#define HC_MOE_GEMV16_MINB 3
/* the 64-row stripes a block of a dense small-M kernel of toks tokens takes for tiles of chunk
 * bytes: the 16-token one two where a chunk is at most HC_GEMV16_PAIR_CHUNK_MAX (the 4-bit
 * layouts, whose chunks are 2176-2304 bytes), its warps' stages holding the K tile's chunk of
 * each and one activation tile both use (int4 g128: 4608 of 6656 bytes a stage are weights,
 * t8's share, where one stripe had 2304 of 4352 -- v49, a prediction: t16 at M = 16 near t8's
 * time at M = 8); otherwise one. 2560: the most for which 2 blocks of 16 x (2 chunks + 2 KiB)
 * fit an sm_90 SM's 228 KiB; an sm_80 SM (164 KiB) holds one such block (not measured there) */
#define HC_GEMV16_PAIR_CHUNK_MAX 2560u
#define HC_GEMV_STRIPES(toks, chunk) ((toks) == 16u && (chunk) <= HC_GEMV16_PAIR_CHUNK_MAX ? 2u : 1u)
/* the small-M kernels start under programmatic dependent launch: their first weight copies
 * are issued before griddepcontrol.wait (weights do not depend on the kernel before) */
#define HC_GEMV_PDL 1
/* folded MXFP4: a tile's scales are decoded once into shared memory as bf16 (v25) */
#define HC_GEMV_MXS 1
/* int4 with one zero point for every row (HC_ZP 0): the small-M kernels of at least this many
 * token tiles of 8 (t16, moe-t16) feed the codes as 128 + u (no HADD2 a pair) and start each
 * group's sums from - (128 + z) x the activations' sums over the group, one mma a k16 step and
 * token tile with every A element - (128 + z), shared by the tile's 64 rows (v51, H200: t16
 * 1.5-3% faster on both bench int4 layers at M = 1-16; one tile (t8, moe-t8, moe-w8) lost or
 * tied: t8 28672 x 8192 +3%, moe-w8 +15-30%, so it keeps the HADD2 decode) */
#define HC_GEMV_ZFOLD_MT 2
/* mma.sync GEMM (hc_mma_gemm) and wgmma GEMM (hc_wgmma_gemm): cp.async stages */
#define HC_GEMM_STAGES 3
#define HC_WGMMA_STAGES 3
/* warp-specialised GEMM (hc_wgmma_gemm64/128/256): TMA pipeline stages, and token tiles per
 * group of the block walk (keeps the blocks in flight in L2) */
#define HC_WIDE_STAGES 5
#define HC_WIDE_GROUP 8
/* hc_moe_expand (moe_route.cu): threads a sorted row -- 256 (a block a row), or 32 (a warp a
 * row, 8 a block: v80, measured in session 33 within the spread -- Qwen3-like expands 1-6%
 * faster, DeepSeek-like ones 2-12% slower at M <= 1024) */
#define HC_MOE_EXPAND_ROW_THREADS 256
/* v89 (taken in session 40 -- H100, Qwen3-like expand 7.8 -> 5.1 us at M = 256, 18.5 -> 16.9 at
 * 1024, 79.9 -> 78.6 at 4096, sessions 38-39 the same way; 0: the row-a-block form alone):
 * hc_moe_expand where it copies whole 16-byte pieces (no act-order permutation, aligned
 * strides) keeps four rows in flight a thread -- a thread owns one column piece (grid y: the
 * row's pieces in blocks of 256), rows blockIdx.x + gridDim.x j, one wave of resident blocks --
 * where the row-a-block form had one piece in flight at H = 2048 */
#define HC_MOE_EXPAND_ROWS4 1
/* v103 (taken in session 45): v89's form by token instead
 * of by sorted row -- a thread loads its column piece of token t's row of x once and stores it
 * to the token's top-k sorted rows (inv), and the pad rows get zeros from a pass over sorted in
 * 32-row groups. By row, each of x's rows is read top-k times at scattered moments, and the
 * expand's writes evict it from L2 in between: session 41 found the expand running at the
 * memory's read + write rate (H100 Qwen3-like M = 4096 78.8 us for 151 MB written; DeepSeek-like
 * 360 us for ~530 MB). By token, x is read once. H100, one call beside 0 (bench/NOTES.md
 * session 45): expand 78.9 -> 67.6 us and block 735.0 -> 704.5 at Qwen3-like M = 4096,
 * DeepSeek-like 4096 expand 357.8 -> 248.2, block 1954.5 -> 1847.8; M <= 256 unchanged. */
#define HC_MOE_EXPAND_TOKENS 1
/* v111 (built, 0 until measured): the small-M grouped kernels (moe-t8, moe-t16) read their
 * tile's record (expert, rows) together with the tile count, one round trip, instead of after
 * the count's test, and fetch the experts' table into L1 before they wait for the routing
 * (the table is written at load) -- a block's first weight request waits for one round trip
 * to L2 after the routing and an L1 hit, instead of three dependent loads. hc_moe_act
 * (moe_route.cu) likewise reads a row's gate and up with the row's slot, not after its test.
 * Session 46 saw a per-block tail cost about its length once a wave in these grids of
 * thousands of short blocks (bench/NOTES.md v109 / v110); a shorter head should gain the
 * same way. Measure: VARIANT="HC_MOE_META_EARLY 1" STEPS=moe HC_BENCH_MOE_MMAX=64 (M = 1-64,
 * all three blocks). */
#define HC_MOE_META_EARLY 0
/* a warp-specialised tile of more than 256 tokens (moe-ws288: past wgmma's widest n, its k16
 * steps are two wgmma, n256 and the rest): four stages (five of 288 x 128 + two 8-bit chunks
 * pass an SM's 227 KiB), and its activation tile in two TMA boxes of half its rows (a box is at
 * most 256 rows) -- the runtime encodes the tensor map with HC_WS_BOX too */
#define HC_WS_STAGES(toks) ((toks) > 256 ? 4 : HC_WIDE_STAGES)
/* bytes of a warp-specialised stage: the activation tile and its chunks, 1024-aligned (the
 * kernels' rings and the host's launch size, runtime/gpu_families.c) */
#define HC_WS_STAGE_BYTES(toks, chunks, chunk)                                                 \
    (((toks) * 128u + (chunks) * (chunk) + 1023u) / 1024u * 1024u)
/* a warp-specialised block's registers after setmaxnreg, producer and consumers, with bps
 * blocks an SM: one (65536 / 384 = 168 at launch): 40 and 232; two (moe-ws80d: 80 at launch,
 * 30720 a block): 24 and 104 */
#define HC_WS_PREGS(bps) ((bps) == 1 ? 40 : 24)
#define HC_WS_CREGS(bps) ((bps) == 1 ? 232 : 104)
#define HC_WS_BOX(toks) ((toks) > 256 ? (toks) / 2 : (toks))
/* v95 (taken in session 40 -- H100, Qwen3-like M = 1024 gate_up GEMM on moe-ws80d 142.8 ->
 * 140.4 and 146.6 -> 140.6 us in two A/Bs; 0: the loop of two steps): the consumers' main loop
 * of ws_gemm_block (gemm/ws_gemm.cuh) unrolled over two laps of its ring, so that each step's
 * stage, barrier phase and A register set are constants. Why: of moe-ws80d's 118 SASS
 * instructions a K tile a warp (int4 g128), 58 are not the decode; unrolled, 36 (nvcc SASS).
 * Costs code (2 x stages steps) and registers: NVRTC (not nvcc) spilled 108 bytes in moe-ws80d
 * at seven stages and 8-32 in moe-ws288 and moe-ws80r, so it unrolls only the kernels of one
 * stripe a warpgroup, one wgmma a k16 step and at most five stages. */
#define HC_WS_UNROLL 1
/* v99 (taken in session 42 -- H100, Qwen3-like gate_up GEMM beside a base with it off in one
 * call: M = 4096 (moe-ws288) 359.8 -> 344.5 us, M = 1024 (moe-ws80d) 143.1 -> 142.2; 0: every
 * tile at its full width): a warp-specialised block of one stripe a warpgroup whose tile holds
 * no more rows than the next narrower wgmma width runs its K loop at that width (mma/wgmma.cuh
 * wgmma_tile_commit): moe-ws288's tiles at 256 where an expert's tile has 256 rows or fewer (the
 * k16 step's second wgmma, n = 32, skipped), moe-ws80d's at 64. The padding rows' tensor work
 * is ~11% (288) / ~20% (80) of such a tile's wgmma; that ws80d gained 0.6% where about half its
 * tiles narrow says its time is the decode's, not the tensor cores' (bench/NOTES.md session 42). */
#define HC_WS_NARROW 1
/* the narrower width a tile of toks tokens runs at under v99 (0: none; moe-ws160, v108, at 128) */
#define HC_WS_NARROW_OF(toks)                                                                   \
    (!HC_WS_NARROW ? 0 : (toks) == 80 ? 64 : (toks) == 160 ? 128 : (toks) == 288 ? 256 : 0)
/* v100 (built in session 42, taken in session 43): ws_gemm_block's consumers keep
 * their lane's place (warpgroup, warp, lane, row) in registers (memory/ptx.cuh held) and
 * derive each stage's wgmma descriptor from stage 0's by an add. Without it NVVM recomputes
 * the lane's shared-memory offsets in every decode, from the thread index. NVRTC SASS of
 * moe-ws80d (int4 g128): ~16 fewer instructions a K tile a warp of ~105 (the unrolled loop
 * 1286 -> 1121, its ring's barrier addresses held too at two blocks an SM); the dense ws64 /
 * ws128 105.7 -> 93.4, ws256 108.8 -> 94.9, moe-ws256 110.2 -> 97.0, ws128k (ws_consume)
 * 123.5 -> 119.5; no spills in any kind. Kernels of up to 256 tokens and one body (the
 * two-body ws256r spilled in the FP8 kind; ws288's loop is not unrolled and gained nothing);
 * the MoE skinny kernels hold their descriptor's low word (moe_skinny's held_desc(): 1281 ->
 * 1232 over the loop; the dense skinny kernels spilled). Why: the decode's instruction count
 * is what ws80d's time follows (bench/NOTES.md sessions 40-42). Measured on an H100 beside
 * HC_WS_HOIST 0 (session 43): Qwen3-like gate_up M = 1024 154.9 -> 152.0 us, M = 4096 432.2 ->
 * 428.8, M <= 256 unchanged; dense ws64 forced at M = 128 198.0 -> 173.9 us (28672x8192);
 * dense M = 256-8192 against cuBLASLt in the same run: even or better at 256 and 4096, -1.5 to
 * +3.7% at 1024 (cuBLASLt itself moved 6% between the two runs there). */
#define HC_WS_HOIST 1
/* skinny (hc_skinny_gemm16/32/64; sm_90a, M <= 64): a producer and four consumer warpgroups
 * (four stripes share a stage's activation tile), one persistent block per SM; a stage is the
 * TOKS x 64 activation tile and four chunks, 1024-aligned, and as many stages as fit
 * HC_SKINNY_SMEM, at most HC_SKINNY_STAGES_MAX, an even number (the consumers' register sets
 * of A fragments -- two, or three where HC_SKINNY_SETS says -- follow the stages, so the ring
 * is a whole number of set laps; the kernels and the registry both size them with these
 * macros); a block's K range is at least HC_SKINNY_MIN_TILES tiles */
#define HC_SKINNY_THREADS 640
#define HC_SKINNY_STAGES_MAX 12
/* the lanes of a consumer warp that arrive on a stage's empty barrier, in the skinny and the
 * warp-specialised rings alike (gemm/skinny_gemm.cuh, gemm/ws_gemm.cuh): 32, every lane after
 * its own last read of the stage. With 1 (lane 0 after __syncwarp, as correct) racecheck reported
 * every refill of a lapped ring -- the producer's bulk copy -- against the decode reads of lanes
 * 1-31 (it does not carry __syncwarp's order into lane 0's arrive: skinny64q, session 33;
 * ws128k, session 34); with 32 it reports nothing, and on the H100 every dense kernel at M =
 * 1-128 and every MoE block to M = 1024 ran as fast or faster (geomean 0.99x, bench/NOTES.md
 * session 35) */
#define HC_EMPTY_LANES 32
#define HC_SKINNY_SMEM (224u * 1024u)
#define HC_SKINNY_MIN_TILES 8
/* the dense skinny kernels start under programmatic dependent launch: a block's first stages
 * of weights are asked for before griddepcontrol.wait (moe_gemm.cu's grouped ones wait first:
 * their weights follow the routing) */
#define HC_SKINNY_PDL 1
/* register sets of A fragments a consumer cycles through (v55; H100: skinny32 1-3% faster,
 * skinny16 and the MoE blocks level -- bench/NOTES.md session 25): three where
 * the tile is at most 32 tokens, the ring a multiple of three stages and a K tile holds at most
 * two scale groups (group-16 layouts spill a third set) -- two items' wgmma in flight while the
 * next is decoded (wgmma_wait<2>) -- else two (wgmma_wait<1>). Kernel-side only (HC_LGS). */
/* a skinny block whose range begins inside a tile and goes on past it hands its first
 * segment's arrival at the tile's counter to one thread of the producer warps (an mbarrier):
 * the consumers store the segment and go on without a block barrier or the atomic's round
 * trip; where that arrival is the last, the block sums the tile at its end (v57; H100, against
 * the same tree without it: 8192^2 at M = 16-64 4-6% faster, mxfp4 28672 1.5-2.5%, int4 28672
 * skinny16/32 1.5-2.6% slower -- bench/NOTES.md session 25) */
#define HC_SKINNY_HANDOFF 1
#define HC_SKINNY_SETS(toks, ns) ((toks) <= 32u && (ns) % 3u == 0u && HC_LGS > 0 ? 3u : 2u)
#define HC_SKINNY_STAGE_BYTES(toks, chunk) ((((toks) * 128u + 4u * (chunk)) + 1023u) / 1024u * 1024u)
/* the stages of stage bytes that room holds: at most HC_SKINNY_STAGES_MAX, an even number */
#define HC_SKINNY_RING_OF(room, stage)                                                          \
    (((room) / (stage) < HC_SKINNY_STAGES_MAX ? (room) / (stage) : HC_SKINNY_STAGES_MAX) & ~1u)
#define HC_SKINNY_STAGES_OF(toks, chunk)                                                       \
    HC_SKINNY_RING_OF(HC_SKINNY_SMEM, HC_SKINNY_STAGE_BYTES(toks, chunk))
/* skinny16q / skinny32q (v59): one stripe a block-tile, its K tiles in quads -- warpgroup w
 * takes K tile 4 kb + w of item kb -- so a stage holds four activation tiles and four chunks of
 * one stripe, and the four warpgroups' sums meet in shared memory past the ring (three
 * warpgroups x TOKS / 2 x 128 floats), never through a cross-block fix-up: the chooser runs it
 * where a layer's stripes x token tiles are as many as the SMs (gpu_plan.c) */
#define HC_SKINNY_Q_STAGE_BYTES(toks, chunk) HC_SKINNY_STAGE_BYTES(4u * (toks), chunk)
#define HC_SKINNY_Q_SUM_BYTES(toks) ((toks) * 768u)
#define HC_SKINNY_Q_STAGES_OF(toks, chunk)                                                     \
    HC_SKINNY_RING_OF(HC_SKINNY_SMEM - HC_SKINNY_Q_SUM_BYTES(toks), HC_SKINNY_Q_STAGE_BYTES(toks, chunk))
/* v61 (measured in session 41, H100: no gate_up gain at M = 1-4096 -- 159.4 -> 162.1 us at
 * Qwen3-like M = 1024 -- so 0; bench/NOTES.md sessions 27, 41): a suspend-time hint for every
 * mbarrier wait (memory/tma.cuh mbar_wait), in ns -- 0: none, the waiting warps spin on
 * try_wait (what every figure so far ran). Aimed at moe-skinny32's 35% "other" instructions at M = 256 (the
 * waiting warps' try-wait loops on the schedulers the decode needs: session 22's profile).
 * To measure (0x989680: 10 ms, a bound -- the thread resumes when the phase completes):
 * `VARIANT="HC_MBAR_SUSPEND_NS 0x989680" STEPS="kernels moe" sh bench/device_run.sh`. */
#define HC_MBAR_SUSPEND_NS 0
/* v90: L2 eviction priorities in the skinny family's copies (gemm/skinny_gemm.cuh) -- the
 * weights, read once, evict_first; the activation tile, read again by each of the block's next
 * output tiles, evict_last. A persistent block walks one token tile's quads in turn, so a MoE
 * expert's sorted rows are read once a quad (gate_up: six times) about 15 us apart while the
 * other blocks stream ~40 MB of weights past them: ncu counted 320 MB read for 207 MB of
 * weights (moe-skinny32, Qwen3-like M = 256, H100, session 31), 234 MB with v90. H100, same
 * runs, gate_up at r = 16: skinny32 131.8 / 128.7 -> 99.0 / 99.7 us, skinny24 121.5 / 118.4 ->
 * 94.1 / 94.2; skinny16 at r = 8 (gpt-oss-, DeepSeek-like) and the small-M picks unchanged
 * (bench/NOTES.md session 38). A cache policy only: the same bits. 0: the plain copies. */
#define HC_L2_HINTS 1
/* the largest tile chunk of any layout, bytes (int8 codes + F32 scales + zero points, 128
 * aligned): the shared memory every module reserves is sized for it */
#define HC_CHUNK_MAX 5376

#endif
