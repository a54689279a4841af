/* amxk_pack.h - v0.1.0 - amxk module: weight packing, quantized formats, checkpoint importers,
   activation quantization and the packed linear (w*a16 and w8a8)
   Public domain or MIT, your choice (see amxk.h).

   Include after or without amxk.h (this header includes it). Define AMXK_IMPLEMENTATION in exactly one
   file before including it to emit the implementation. Conventions (strides in elements, status codes,
   workspace, threading, ISA levels): see the top of amxk.h. Measurements: docs/notes/pack.md.

   USE
       size_t bytes;  amxk_pack_linear_size(AMXK_DTYPE_BF16, N, K, &bytes);
       void *wp = aligned_alloc(64, bytes);
       amxk_pack_linear(ctx, wp, bytes, AMXK_DTYPE_BF16, W, AMXK_DTYPE_BF16, N, K, K);   // once, at load
       amxk_linear_workspace_size(ctx, M, N, K, &ws_bytes);                              // per shape
       amxk_linear(ctx, M, N, K, x, AMXK_DTYPE_BF16, K, wp, bytes, bias, y, AMXK_DTYPE_F32, N, ws, ws_bytes);

   WHAT IT DOES
       packing (amxk_pack_linear: bf16 / fp16 / fp32), quantized packs (amxk_quantize_pack,
       amxk_pack_quant, amxk_dequantize), checkpoint importers (GPTQ, AWQ, DeepSeek fp8, MXFP4),
       activation quantization (amxk_quantize_act), the linear y = x W^T + bias on any pack
       (amxk_linear), the w8a8 linear (amxk_linear_q8), and >>linop, the private interface of amxk_moe.h.

   PACKED FORMAT (identical at every level: a buffer packed anywhere runs anywhere)
       A 64-byte header (amxk__pack_hdr: magic "AMXKPACK", format version, element dtype, N, K) followed
       by ceil(N/16) column blocks. Block j holds output rows n = 16j .. 16j+15 of W[N,K] as VNNI pairs:
       element (n, k) sits at block j, pair row k/2, lane n%16, slot k%2, i.e. at element offset
       j*16*Kp + (k/2)*32 + (n%16)*2 + (k%2), where Kp = K rounded up to a multiple of 32. Padding rows
       (n >= N) and columns (k >= K) hold zero. A 16-pair slice of one block is exactly an AMX B tile
       (16 rows x 64 bytes); a pair row is 16 lanes of 32 bits for the vector kernels.
       fp32 packs (router / gate weights): the same header and blocks of 16 rows x Kp, k-major: element
       (n, k) at j*16*Kp + k*16 + (n%16). Quantized packs: see "quantized weights" below.

   DESIGN
       amxk__pack_kernels: one kernel table per ISA level (amxk__pack_kernels_for maps levels and
       features to tables); every operator takes its kernels from the context's table, and an AMX table
       hands what it does not run to the vector level below it. Kernel map per level and dtype:
       docs/notes/pack.md; each kernel's tiling is stated at the kernel.

   PATHS (every output summed in a fixed order, see NUMERICS)
       AMX (M >= 5; fp16 only with AMX-FP16, else the vector level): 2R x 32 output tiles on TDPBF16PS /
       TDPFP16PS, the B blocks held in L2 (AMXK__LIN_AMX_BBYTES; quantized packs dequantized into
       workspace). Modules running several calls per task share the tile configuration and x panel in a
       tile session (amxk__tiles, >>linop). AVX-512 / AVX2: fp32 FMA on pairs or blocks widened from
       bf16 / fp16 (AVX512_BF16 with bf16 x: vdpbf16ps on the packed pairs); fp32 packs: fp32 FMA
       straight on the blocks at every level (the amx level: its vector level; amxk_linear_q8 and the
       MoE experts do not take them). Scalar: portable C.
       Quantized packs (w*a16): decode (M < 12) sums t = sum x*q per group in fp32, then acc += s * (t -
       z * sum x); fp8 decoded exactly. Prefill (M >= 12), scalar and AMX: blocks dequantized once per
       task (s * (q - z), one rounding; bf16 for vdpbf16ps / AMX: one more). MXFP4: the int4 paths with
       an e2m1 table and e8m0 scales; no w*a8 path. Details: docs/notes/pack.md.
       w8a8 (int8, or u8 = int8 + 128, activations): amxk_quantize_act + amxk_linear_q8, see there.

   THREADING
       Work is split into (m-chunk, n-chunk) tasks; the serial loop is
           for (t = 0; t < n_tasks; t++) linear_task(t, worker 0);
       Each output element is owned by one task and summed in a fixed order, so results are bitwise
       identical for any worker count. For M <= 4 (decode) the tasks split N only, so every worker streams
       its own slice of the weights once; so does amxk_linear at the AMX level for M up to 512 (one task
       per worker: an N range of an even number of blocks over all the rows).

   NUMERICS
       Each output accumulates in fp32 in a fixed order: k increasing, except the decode forms' chains
       (interleaved k: AMXK__QD_CHAIN, the 16-bit tiles' even / odd k), vdpbf16ps's pair order (odd k
       then even k, one fma rounding each) and the AMX path's 32-wide k steps (as the hardware does);
       bias is added after the sum; one rounding to the output dtype. bf16 x bf16 and fp16 x fp16
       products are exact in fp32; fp32 packs round x * w to fp32 (fused into the FMA on the vector
       levels). vdpbf16ps and AMX read bf16 subnormal inputs as zero and flush subnormal results; scalar
       and AVX2 paths compute them exactly. Accuracy against a double-precision reference:
       tests/test_pack.c (bf16 output: within 1 bf16 ulp of the correctly rounded value, K up to 4096).
*/
#ifndef AMXK_PACK_H_INCLUDED
#define AMXK_PACK_H_INCLUDED
#include "amxk.h"
#if AMXK_VERSION_NUMBER != 100
#  error "amxk_pack.h v0.1.0 needs amxk.h v0.1.0"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes needed to pack a W[N,K] weight as `packed_dtype` (AMXK_DTYPE_BF16, AMXK_DTYPE_F16 or
   AMXK_DTYPE_F32: 64 + ceil(N/16) * 16 * Kp * element size, Kp = K rounded up to 32).
   Always a multiple of 64. Errors: AMXK_ERR_NULL (bytes), AMXK_ERR_SHAPE (n or k == 0 or above 2^40,
   or a size that does not fit a size_t: overflow-checked), AMXK_ERR_DTYPE (packed_dtype). */
AMXK_DEF amxk_status amxk_pack_linear_size(amxk_dtype packed_dtype, size_t n, size_t k, size_t *bytes);

/* Packs row-major W[N,K] (element (n,k) at w[n*ldw + k]; ldw >= k, in elements) of dtype w_dtype
   (F32, BF16 or F16) into dst, converting to packed_dtype (BF16 or F16: F32 sources are rounded to
   nearest even, a 16-bit source of the other kind is converted through f32 with one rounding; F32:
   every source converted exactly).
   dst: dst_bytes >= amxk_pack_linear_size(...), AMXK_ALIGN aligned, must not overlap w.
   Serial loop: for (j = 0; j < ceil(N/16); j++) pack_block(j). Levels: scalar (packing is memory bound).
   Errors: NULL, SHAPE, STRIDE (ldw < k), DTYPE, ALIGN, WORKSPACE (dst_bytes too small), ALIAS. */
AMXK_DEF amxk_status amxk_pack_linear(const amxk_ctx *ctx, void *dst, size_t dst_bytes, amxk_dtype packed_dtype,
                                      const void *w, amxk_dtype w_dtype, size_t n, size_t k, size_t ldw);

/* Packs an expert stack W[E,N,K] (expert e at w + e*expert_stride elements, rows ldw apart) into E
   consecutive packed buffers of amxk_pack_linear_size(...) bytes each; expert e's buffer starts at
   dst + e * that size. dst_bytes >= E * that size. Same rules as amxk_pack_linear. */
AMXK_DEF amxk_status amxk_pack_linear_batched(const amxk_ctx *ctx, void *dst, size_t dst_bytes, amxk_dtype packed_dtype,
                                              const void *w, amxk_dtype w_dtype, size_t n_experts, size_t n, size_t k,
                                              size_t ldw, size_t expert_stride);

/* Reads a packed buffer's header. Any output pointer may be NULL. AMXK_ERR_FORMAT if the buffer is
   not a packed linear weight of this format version, or bytes is smaller than its size. Every reader
   of a pack (this, amxk_packed_quant_info, amxk_dequantize, amxk_linear, amxk_linear_q8, the MoE
   experts) treats it as untrusted bytes: magic, version, every header field (dtype, N, K, format,
   asymmetry, block sizes, flags, reserved bytes) checked against each other and the buffer size with
   overflow-checked sizes, and zero padding columns past K (bf16/fp16/f32 and fp8 packs; the columns the
   kernels would multiply by x's zero padding): AMXK_ERR_FORMAT otherwise. Readers of the body
   (dequantize, linear, linear_q8) also need it AMXK_ALIGN aligned (AMXK_ERR_ALIGN). */
AMXK_DEF amxk_status amxk_packed_linear_info(const void *packed, size_t bytes, amxk_dtype *packed_dtype, size_t *n,
                                             size_t *k);

/* ---- quantized weights ----------------------------------------------------------------------
   Formats: INT8 / INT4 / INT2 symmetric (two's-complement values, w = s * q) or asymmetric
   (unsigned values and a zero point, w = s * (q - z)); FP8_E4M3 / FP8_E5M2 (w = s * fp8(q)).
   Scales (and zero points) are fp32 on a grid of blocks of block_n rows x block_k columns; callers
   pass it row-major, scale[(n / block_n) * ceil(K / block_k) + k / block_k]. Int formats: block_n = 1 (0 means 1) and
   block_k = the group size, which must divide K (block_k = K: per channel). FP8: any block_n,
   block_k >= 1, partial edge blocks allowed (DeepSeek: 128 x 128; per channel: 1 x K; per tensor:
   N x K).
   Packed layout (after the 64-byte header): ceil(N/16) blocks of 16 rows; in a block, row r and
   column k live in byte (k / (4v)) * 64 + r * 4 + k % 4, bits [b*f, b*f + b) with b the bit width,
   v = 8 / b values per byte and f = (k / 4) % v: 16 rows x 4 k per 64 bytes (the AMX-INT8 B-tile
   row), int4 puts the next 4 k of the same rows in the high nibble, int2 the next 12 in bits 2..7.
   K is padded to a multiple of 32 and N to a multiple of 16 with zero fields. Then the scale grid,
   fp32 inside the pack in tiles of 16 row blocks: with nb = n / block_n and g = k / block_k, entry
   (nb / 16) * ceil(K / block_k) * 16 + g * 16 + nb % 16 (the 16 rows of a block are adjacent: one
   vector load per group; a block's groups are consecutive: decode reads them as one stream; the
   ceil(N / block_n) rows rounded up to 16, the extra entries zero), then, for asymmetric ints, the
   zero grid (same order), which starts at the next 64-byte boundary after the scale grid. Total:
   amxk_pack_quant_size.
   amxk_linear accepts these buffers (x BF16 or F16): see PATHS for how each tier runs them.
   MXFP4 (OCP MX, gpt-oss): w = 2^(e - 127) * e2m1(q). q: a 4-bit e2m1 code (bit 3 sign, bits 1-2
   exponent, bit 0 mantissa: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 for codes 0..7), one e8m0 scale
   byte e per 32 consecutive k of a row (e = 255: NaN; e = 0: 2^-127). asym = 0, block_n = 1 (0 means
   1), block_k = 32, K a multiple of 32. The codes sit where symmetric INT4 fields do; the scale grid
   holds the raw e8m0 bytes (1 byte per group instead of 4, same tiled order, padded to 64
   bytes). Any code and any scale byte is valid; code 8 (-0) reads as +0. Header dtype: U8. */
typedef enum amxk_qformat {
    AMXK_QFMT_NONE = 0,
    AMXK_QFMT_INT8,
    AMXK_QFMT_INT4,
    AMXK_QFMT_INT2,
    AMXK_QFMT_FP8_E4M3,
    AMXK_QFMT_FP8_E5M2,
    AMXK_QFMT_MXFP4,
    AMXK_QFMT_COUNT,
    AMXK_QFMT_FORCE_I32 = 0x7fffffff
} amxk_qformat;

typedef struct amxk_quant {
    amxk_qformat format;
    int asym;               /* int formats: 1 = unsigned values + zero points */
    size_t block_n, block_k; /* scale block (see above) */
} amxk_quant;

/* Bytes of a quantized pack of W[N,K]. fp8 block sizes may be anything >= 1 (a block larger than N
   or K is one block). Errors: NULL, SHAPE (n, k == 0 or above 2^40, or a size that does not fit a
   size_t: overflow-checked), ARG (format, asym on fp8, block_k == 0 or, for ints, not dividing K or
   block_n > 1, block_n == 0 for fp8). */
AMXK_DEF amxk_status amxk_pack_quant_size(const amxk_quant *q, size_t n, size_t k, size_t *bytes);

/* Quantizes row-major W[N,K] (F32 or BF16, ldw elements apart) and packs it. Per scale block:
   symmetric ints s = amax / (2^(b-1) - 1), q = clamp(rne(w / s), -2^(b-1), 2^(b-1) - 1);
   asymmetric ints over [lo, hi] = [min(min w, 0), max(max w, 0)]: s = (hi - lo) / (2^b - 1),
   z = clamp(rne(-lo / s), 0, 2^b - 1), q = clamp(rne(w / s) + z, 0, 2^b - 1); fp8 s = amax / max_finite,
   q = fp8_rne_saturating(w / s). A block of zeros gets s = 1 (and z = 0). rne = round half to even.
   e2m1 with e8m0 scales (the OCP MX rule): e = clamp(floor(log2(amax)) - 2 + 127, 0, 254) (amax subnormal: 0; a
   block of zeros: 127), q = e2m1_rne_saturating(w / 2^(e - 127)) (ties to the even mantissa, |.| > 6
   saturates to 6; -0 kept as code 8).
   NaN or infinite weights are not meaningful input: they give NaN or saturated scales.
   dst: AMXK_ALIGN aligned, dst_bytes >= amxk_pack_quant_size. Serial. Levels: scalar. */
AMXK_DEF amxk_status amxk_quantize_pack(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const amxk_quant *q,
                                        const void *w, amxk_dtype w_dtype, size_t n, size_t k, size_t ldw);

/* Packs already-quantized values: values[n * ldv + k] one per byte - int8_t for symmetric ints
   (within the b-bit range), uint8_t for asymmetric ints (< 2^b) and the raw fp8 code for fp8; scales
   (and zeros for asym; NULL otherwise) on the grid above, row-major, fp32. e2m1 with e8m0 scales: values are the
   raw codes 0..15 (uint8_t), scales the e8m0 values as fp32: 2^i for -127 <= i <= 127 (2^-127 is
   a subnormal float) or NaN (stored as e = 255). Out-of-range values or scales: AMXK_ERR_ARG,
   nothing written. This is the entry point importers convert their layouts to. */
AMXK_DEF amxk_status amxk_pack_quant(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const amxk_quant *q,
                                     const void *values, size_t ldv, const float *scales, const float *zeros, size_t n,
                                     size_t k);

/* Reads a quantized pack's header (any output may be NULL). AMXK_ERR_FORMAT if it is not one. */
AMXK_DEF amxk_status amxk_packed_quant_info(const void *packed, size_t bytes, amxk_quant *q, size_t *n, size_t *k);

/* Dequantizes a pack (quantized or bf16/fp16) to f32: w[n * ldw + k] = s * (q - z) (or s * fp8(q), or
   the bf16/fp16 value), rounded once to f32: the weight the prefill and scalar paths multiply (the
   decode kernel applies s per group instead, and the AMX path rounds it to 16 bits; see PATHS). */
AMXK_DEF amxk_status amxk_dequantize(const void *packed, size_t bytes, float *w, size_t ldw);

/* ---- checkpoint importers -----------------------------------------------------------------------
   Each reads a checkpoint's tensors as stored (contiguous, row-major, little-endian int32 words) and
   writes an amxk quantized pack directly (no temporary buffer). When every zero point of an int
   checkpoint equals 2^(b-1), the pack is symmetric (values q - 2^(b-1), no zero grid); otherwise it is
   asymmetric with the checkpoint's zero points. dst must not overlap any source array (qweight,
   qzeros, scales, g_idx; weight / blocks and their scales): AMXK_ERR_ALIAS, nothing written.
   dst_bytes >= amxk_import_size (the asymmetric size, an upper bound). Scales in the checkpoint's dtype, scales_dtype: AMXK_DTYPE_F16 (AutoGPTQ, AutoAWQ),
   AMXK_DTYPE_BF16 (checkpoints and MoE tests that keep bf16 scales: not every bf16 is an fp16) or
   AMXK_DTYPE_F32; they become the pack's fp32 scales exactly (any other dtype: AMXK_ERR_DTYPE).

   GPTQ (AutoGPTQ / GPTQModel), bits 2, 4 or 8, group G dividing K (G = K: per channel):
     qweight int32 [K*b/32, N]: q[k][n] = (qweight[k / (32/b)][n] >> (b * (k % (32/b)))) & (2^b - 1)
     qzeros  int32 [K/G, ceil(N*b/32)]: zs[g][n] = (qzeros[g][n / (32/b)] >> (b * (n % (32/b)))) & (2^b - 1)
     scales  [K/G, N] (fp16, bf16 or fp32: scales_dtype); g_idx int32 [K] or NULL: must be k / G (act-order checkpoints are refused
     with AMXK_ERR_UNSUPPORTED).
     zero_offset 1 for the v1 convention (true zero = stored + 1: AutoGPTQ "gptq", AutoRound symmetric
     exported as auto_gptq), 0 for v2 ("gptq_v2", AutoRound asymmetric "auto_round" packing).
     w[n][k] = (q - (zs + zero_offset)) * scale.
   AWQ (AutoAWQ GEMM), 4 bits: qweight int32 [K, N/8], qzeros int32 [K/G, N/8], column 8c + j of word
     c sits at nibble ORDER[j], ORDER = {0, 4, 1, 5, 2, 6, 3, 7}; scales [K/G, N] (scales_dtype);
     w = (q - z) * scale. N must be a multiple of 8.
   DeepSeek fp8 (block-quantized e4m3): weight [N, K] e4m3 codes, weight_scale_inv fp32
     [ceil(N/bn), ceil(K/bk)] (DeepSeek-V3: 128 x 128): w = fp8(weight) * weight_scale_inv.
   MXFP4 (gpt-oss): blocks uint8 [N, K/32, 16], byte j of a block holding k = 2j (low nibble) and
     k = 2j + 1 (high nibble) of that 32-column group as e2m1 codes; scales uint8 [N, K/32], the e8m0
     bytes. K must be a multiple of 32 (AMXK_ERR_SHAPE); dst_bytes >= amxk_import_mxfp4_size. An
     [E, N, K/32, 16] expert stack: one call per expert, blocks + e * N * K / 2, scales + e * N * K / 32. */
AMXK_DEF amxk_status amxk_import_size(int bits, size_t group, size_t n, size_t k, size_t *bytes);
AMXK_DEF amxk_status amxk_import_gptq(const amxk_ctx *ctx, void *dst, size_t dst_bytes, int bits, size_t group, int zero_offset,
                                      const int32_t *qweight, const int32_t *qzeros, const void *scales, amxk_dtype scales_dtype,
                                      const int32_t *g_idx, size_t n, size_t k);
AMXK_DEF amxk_status amxk_import_awq(const amxk_ctx *ctx, void *dst, size_t dst_bytes, size_t group, const int32_t *qweight,
                                     const int32_t *qzeros, const void *scales, amxk_dtype scales_dtype, size_t n, size_t k);
AMXK_DEF amxk_status amxk_import_fp8_block(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const uint8_t *weight,
                                           const float *weight_scale_inv, size_t block_n, size_t block_k, size_t n, size_t k);
AMXK_DEF amxk_status amxk_import_mxfp4_size(size_t n, size_t k, size_t *bytes);
AMXK_DEF amxk_status amxk_import_mxfp4(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const uint8_t *blocks,
                                       const uint8_t *scales_e8m0, size_t n, size_t k);

/* ---- activation quantization ----------------------------------------------------------------
   Dynamic quantization of x[M,K] (BF16, F16 or F32; row stride ldx) per token group of `group`
   columns (group divides K; group == K: per token), out_dtype:
     AMXK_DTYPE_I8        s = amax / 127, q = clamp(rne(x / s), -127, 127)      (int8_t)
     AMXK_DTYPE_U8        the same q + 128, for u8 x s8 dot products            (uint8_t)
     AMXK_DTYPE_FP8_E4M3  s = amax / 448, q = e4m3(x / s), RNE, saturating      (raw code)
   amax over the group of the f32 values; a group of zeros gets s = 1 (q = 0). q[m * ldq + k].
   Scales fp32 in the layout the consumer reads, without a transpose between:
     AMXK_SCALES_ROW_MAJOR    scales[m * ld_s + g], ld_s >= K / group   ([M, K/g])
     AMXK_SCALES_GROUP_MAJOR  scales[g * ld_s + m], ld_s >= M           ([K/g, M])
   Parallel over rows; serial loop: for (m = 0; m < M; m++) quantize_row(m). Levels: AVX-512 and AVX2
   for I8 / U8 with group % 8 == 0 (the IEEE quotient's codes: a multiply by 1 / s, vdivps only near
   a tie), else (and for groups holding NaN or infinity) the scalar loop: the same values at every level.
   Non-finite input: a group holding a NaN or an infinity gets scale NaN and every code 0 (U8: 128),
   so that amxk_linear_q8 (and amxk_moe_experts with act_int8) gives NaN in every output of that row,
   as a NaN x does on the w*a16 path (an infinite x there gives +-inf or NaN).
   Errors: NULL, SHAPE, ARG (group), DTYPE, STRIDE, ALIAS. */
typedef enum amxk_scale_layout {
    AMXK_SCALES_INVALID = 0,
    AMXK_SCALES_ROW_MAJOR = 1,
    AMXK_SCALES_GROUP_MAJOR = 2,
    AMXK_SCALES_FORCE_I32 = 0x7fffffff
} amxk_scale_layout;
AMXK_DEF amxk_status amxk_quantize_act(const amxk_ctx *ctx, size_t m, size_t k, const void *x, amxk_dtype x_dtype, size_t ldx,
                                       size_t group, amxk_dtype out_dtype, void *q, size_t ldq, float *scales,
                                       amxk_scale_layout layout, size_t ld_s);
/* Rewrites an [M, G] scale table from one layout to the other: a true transpose (dst[g][m] = src[m][g]
   or back), not a reshape. src and dst must not overlap. */
AMXK_DEF amxk_status amxk_scales_relayout(size_t m, size_t n_groups, const float *src, amxk_scale_layout src_layout,
                                          size_t ld_src, float *dst, amxk_scale_layout dst_layout, size_t ld_dst);

/* w8a8 / w4a8 / w2a8: y[m, n] = sum_g sx(m, g) * sw(n, g) * (sum_{k in g} x[m][k] * q[n][k]
   - z(n, g) * sum_{k in g} x[m][k]) (+ bias[n]), the integer sums exact in int32 (z = 0 for
   symmetric packs). xq: the activations x from amxk_quantize_act, row stride ldq (bytes), xq_dtype
   AMXK_DTYPE_I8 (int8_t x in [-127, 127]) or AMXK_DTYPE_U8 (uint8_t codes x + 128 in [1, 255], as
   SGLang's per_token_quant_int8 gives them; read as code ^ 0x80: the same results, bit for bit, as
   the I8 values on every level); xscales in either layout (ld_s as for amxk_quantize_act), act_group
   columns per activation scale. packed: an INT8 (symmetric), INT4 or INT2 (symmetric or asymmetric)
   pack whose group divides act_group (per-token activations: act_group = K). y as in amxk_linear.
   No workspace (amxk_linear_q8_ws: the same with one).
   Levels (every one exact in int32 per group, so all give the same bits): AVX512-VNNI (avx512_vnni
   and up; ~88 KiB of stack), AVX2 (avx2, avx512; AVX-VNNI where the CPU has it), AMX (AMX-INT8 or the
   emulator, where amxk__q8_amx_wins picks it over the vector level; ~77 KiB of stack), scalar int32
   loops. Parallel decomposition as amxk_linear's, except at the amx level (amxk__linear_q8_grid__amx). The pack is validated as amxk_packed_linear_info says; a bf16/fp16/f32,
   fp8 or e2m1 pack (or asymmetric int8) is AMXK_ERR_FORMAT, groups that are not whole 64-byte rows
   AMXK_ERR_UNSUPPORTED.
   Errors (nothing written): CONTEXT, NULL, SHAPE, DTYPE (y_dtype, xq_dtype), ARG (layout, act_group,
   an x of -128: I8 0x80 or U8 0x00), FORMAT, UNSUPPORTED, ALIGN, STRIDE, ALIAS. */
AMXK_DEF amxk_status amxk_linear_q8(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *xq, amxk_dtype xq_dtype,
                                    size_t ldq, const float *xscales, amxk_scale_layout layout, size_t ld_s, size_t act_group,
                                    const void *packed, size_t packed_bytes, const float *bias, void *y, amxk_dtype y_dtype,
                                    size_t ldy);
/* amxk_linear_q8 with a workspace: the same y, bit for bit, on every level. Where the AVX512-VNNI
   prefill tiles run, the rows of x go once per call into the 8-row panels those tiles read
   (amxk_linear_q8 builds them on its stack for every 256 columns of y). Serial loop: for every 8-row
   tile t < M / 8, panel(t); then amxk_linear_q8's loop.
   workspace: >= amxk_linear_q8_workspace_size bytes, AMXK_ALIGN aligned, NULL when that is 0; it must
   not overlap xq, xscales, packed, bias or y. Errors: amxk_linear_q8's, and WORKSPACE (too small). */
AMXK_DEF amxk_status amxk_linear_q8_ws(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *xq, amxk_dtype xq_dtype,
                                       size_t ldq, const float *xscales, amxk_scale_layout layout, size_t ld_s, size_t act_group,
                                       const void *packed, size_t packed_bytes, const float *bias, void *y, amxk_dtype y_dtype,
                                       size_t ldy, void *workspace, size_t workspace_bytes);
/* Workspace bytes amxk_linear_q8_ws needs for this context, m rows and this pack (either x dtype):
   floor(M / 8) * 8 * ceil(K / 4) * 4 where the context's vector level (the best level usable here
   that is not AMX and not above the context's) is avx512_vnni or up, else 0. Errors: CONTEXT, NULL,
   SHAPE (m = 0, or a size beyond a size_t), and the pack's (amxk_packed_linear_info). */
AMXK_DEF amxk_status amxk_linear_q8_workspace_size(const amxk_ctx *ctx, size_t m, const void *packed, size_t packed_bytes,
                                                   size_t *bytes);

/* Workspace bytes amxk_linear needs on ctx (tier, features, worker count) for this shape and any
   bf16/fp16 pack, whatever x's dtype (may be 0). Errors: SHAPE for n or k above 2^40 (no pack is
   larger) or a size that does not fit a size_t (overflow-checked). */
AMXK_DEF amxk_status amxk_linear_workspace_size(const amxk_ctx *ctx, size_t m, size_t n, size_t k, size_t *bytes);
/* The same for a given pack, any kind (quantized packs need room to dequantize a block). */
AMXK_DEF amxk_status amxk_linear_workspace_size_for(const amxk_ctx *ctx, size_t m, const void *packed, size_t packed_bytes,
                                                    size_t *bytes);

/* y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]), for m < M, n < N.
   x: x_dtype BF16 or F16, equal to the packed dtype for bf16/fp16 packs (any of the two for quantized
   packs); F32, BF16 or F16 for f32 packs (converted to f32, exact); element (m,k) at x[m*ldx + k],
   ldx >= K. Another x dtype, or F32 x with another pack: AMXK_ERR_DTYPE; a bf16/fp16 pack of the
   other 16-bit dtype: AMXK_ERR_FORMAT.
   packed/packed_bytes: from amxk_pack_linear, amxk_quantize_pack or amxk_pack_quant with the same N
   and K (checked: AMXK_ERR_FORMAT).
   bias: NULL or N floats. y: y_dtype F32, BF16 or F16; element (m,n) at y[m*ldy + n], ldy >= N; only
   those elements are written.
   workspace: exactly the bytes of amxk_linear_workspace_size_for (for bf16/fp16 packs also
   amxk_linear_workspace_size: the same value) are required (one fewer: WORKSPACE), whatever x's dtype
   (where one x dtype runs the AMX tiles and the other the vector level, both take the larger);
   AMXK_ALIGN aligned, NULL if 0. y must not overlap x, packed, bias or the workspace, nor the
   workspace x, packed or bias (ALIAS).
   Any M, N, K >= 1. Levels and the parallel decomposition: see the top of this header.
   The pack is validated as amxk_packed_linear_info says; the context's tier must be usable here
   (CONTEXT). Non-finite values propagate (README: Trust).
   Errors (nothing written): CONTEXT, NULL, SHAPE, STRIDE, DTYPE, FORMAT, ALIGN, WORKSPACE, ALIAS. */
AMXK_DEF amxk_status amxk_linear(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *x, amxk_dtype x_dtype,
                                 size_t ldx, const void *packed, size_t packed_bytes, const float *bias, void *y,
                                 amxk_dtype y_dtype, size_t ldy, void *workspace, size_t workspace_bytes);

#ifdef __cplusplus
}
#endif
#endif /* AMXK_PACK_H_INCLUDED */

#if defined(AMXK_IMPLEMENTATION) && !defined(AMXK_PACK_C_INCLUDED)
#define AMXK_PACK_C_INCLUDED
#include "amxk.h" /* the core implementation, if this file has not emitted it yet (the module's
                      declarations may have been included before AMXK_IMPLEMENTATION was defined) */
#include <math.h> /* fmaf (the scalar w8a8 AMX epilogue) */

// >>config ---------------------------------------------------------------------------------------

#define AMXK__LIN_NB 16     /* output columns per packed block */
#define AMXK__LIN_KALIGN 32 /* K is padded to this (one AMX k step) */
#define AMXK__LIN_MR 6      /* vector microkernel rows */
#define AMXK__LIN_AMX_M 32  /* AMX kernel: rows per panel (2 A tiles) */
#define AMXK__LIN_AMX_MIN_M 5
#define AMXK__LIN_MC 96     /* rows per task on the AMX w8a8 path (a multiple of AMX_M) */
#ifndef AMXK__LIN_AMX_MC
#define AMXK__LIN_AMX_MC 512 /* amxk_linear on AMX: rows per task (each task sweeps all its rows per B block) */
#endif
#ifndef AMXK__LIN_AMX_BBYTES
#define AMXK__LIN_AMX_BBYTES (1u << 20) /* amxk_linear on AMX: bytes of 16-bit weights per B block (L2 resident) */
#endif
#ifndef AMXK__LIN_AMX_KC
#define AMXK__LIN_AMX_KC 64 /* amxk_linear on AMX, more than AMX_M rows: k columns per K chunk (A chunk in L1; 0: all of K) */
#endif
#ifndef AMXK__LIN_AMX_KP
#define AMXK__LIN_AMX_KP 4 /* ... and block pairs per chunk sweep (their C tiles in L1 between chunks) */
#endif
#ifndef AMXK__LIN_AMX_PFD
#define AMXK__LIN_AMX_PFD 4096 /* AMX, 16-bit weights, one panel: prefetcht0 distance in each B stream */
#endif
#ifndef AMXK__LIN_MC_VEC
#define AMXK__LIN_MC_VEC 48 /* rows per task on the vector paths (a multiple of MR) */
#endif
#define AMXK__LIN_WIDE_M 12 /* vector path: from this M on, weight blocks are widened to f32 once per
                               task and reused by all its row panels (quantized packs: the table's q_wide) */
#ifndef AMXK__LIN_QW512
/* AVX-512 / AVX512-VNNI tables' q_wide (int8; int4 / int2 / LUT; fp8): measured, docs/notes/pack.md */
#define AMXK__LIN_QW512 {12, 8, 8}
#endif
#ifndef AMXK__LIN_QW_AVX2
/* the AVX2 tables' q_wide: measured on Zen 3 (decode vs widened blocks, M = 2..16: bench/results.md) */
#define AMXK__LIN_QW_AVX2 {5, 5, 6}
#endif
#define AMXK__LIN_QW_ANY {AMXK__LIN_WIDE_M, AMXK__LIN_WIDE_M, AMXK__LIN_WIDE_M} /* the other tables (not measured) */
#ifndef AMXK__LIN_NC
#define AMXK__LIN_NC 16     /* column blocks per task outside decode */
#endif
#ifndef AMXK__LIN_PREFETCH
#define AMXK__LIN_PREFETCH 1024 /* small-M bf16/fp16 kernels: software prefetch distance in bytes */
#endif
#ifndef AMXK__Q_PREFETCH
#define AMXK__Q_PREFETCH 2048 /* decode kernels (w*a16 int / fp8, AVX2 w8a8), AMXK_FAMILY_OTHER: prefetcht0 distance in packed bytes */
#endif
#ifndef AMXK__Q_PF_INTEL
#define AMXK__Q_PF_INTEL 8192 /* ..., AMXK_FAMILY_INTEL: prefetcht1 distance */
#endif
#ifndef AMXK__Q8V_D1B
#define AMXK__Q8V_D1B 16384 /* w8a8 decode, AMXK_FAMILY_OTHER: packed blocks of at most this many bytes are streamed one at a time */
#endif
#ifndef AMXK__Q8V_PF_INTEL
#define AMXK__Q8V_PF_INTEL 1024 /* w8a8 decode, AMXK_FAMILY_INTEL: prefetch distance of the four streams (bytes) */
#endif
#ifndef AMXK__LIN_DPF_EVERY
#define AMXK__LIN_DPF_EVERY 16 /* AVX-512 16-bit decode tiles, AMXK_FAMILY_OTHER: a prefetch every this many rows (1 KiB) */
#endif
/* Memory streaming of the decode kernels: one table per CPU family (amxk_ctx.family), picked once per
   call like the kernel tables (amxk__stream_for); numbers only, every choice the same bits. */
typedef struct amxk__stream {
    size_t q8_d1b; /* w8a8 decode (AVX512-VNNI): packed blocks of at most this many bytes run one
                      stream (4x16), larger ones four (8x64; the last < 4 blocks of a range: 4x16) */
    size_t q8_pf;  /* ... the four streams' prefetch distance in bytes (0: none) */
    size_t q_pf;   /* the w*a16 int / fp8 decode kernels' and the AVX2 w8a8 kernel's prefetch distance ... */
    int q_t1;      /* ... into L2 (prefetcht1; 0: prefetcht0): AMXK__Q_PF(t1, p) */
    size_t lin_pfr; /* AVX-512 16-bit / f32 decode tiles: a prefetch every this many 64-byte rows of each
                       weight stream (a power of two; AMXK__LIN16_KERNEL's pf) */
} amxk__stream;
/* Zen 4 (measured without prefetch; docs/notes/pack.md): one stream for blocks up to 16 KiB */
static const amxk__stream amxk__stream_other = {AMXK__Q8V_D1B, 0, AMXK__Q_PREFETCH, 0, AMXK__LIN_DPF_EVERY};
/* Intel (Emerald Rapids): four streams, prefetched into L2 (bench/results.md, issue 29); 16-bit decode
   tiles: every row (MoE M = 16 1.1-1.2x, bench/results.md "Helper m16") */
static const amxk__stream amxk__stream_intel = {0, AMXK__Q8V_PF_INTEL, AMXK__Q_PF_INTEL, 1, 1};
/* The decode kernels' prefetch of p into L1 (t1 == 0) or L2: a statement (not a ?: of two prefetches:
   clang 14 crashes on that at -O0); callers read t1 = st->q_t1 and the distance st->q_pf once per call */
#define AMXK__Q_PF(t1, p)                                                                                              \
    do {                                                                                                               \
        if (t1) _mm_prefetch((const char *)(p), _MM_HINT_T1);                                                          \
        else _mm_prefetch((const char *)(p), _MM_HINT_T0);                                                             \
    } while (0)
AMXK__INLINE const amxk__stream *amxk__stream_for(int family) {
    return family == AMXK_FAMILY_INTEL ? &amxk__stream_intel : &amxk__stream_other;
}
#define AMXK__PACK_VERSION 3u /* the packed format (versions: docs/notes/formats.md) */

typedef struct amxk__pack_hdr {
    char magic[8]; /* "AMXKPACK" */
    uint32_t version, dtype;
    uint64_t n, k;
    uint32_t qformat, asym; /* AMXK_QFMT_NONE for bf16/fp16 packs */
    uint64_t block_n, block_k;
    uint8_t flags;          /* bit 0 (AMXK__PACK_NO_NAN): an fp8 pack whose fields hold no NaN / inf code */
    uint8_t reserved[7];
} amxk__pack_hdr;
#define AMXK__PACK_NO_NAN 1u

// >>util -----------------------------------------------------------------------------------------

AMXK__INLINE size_t amxk__lin_kp(size_t k) { return AMXK__ROUND_UP(k, (size_t)AMXK__LIN_KALIGN); }
AMXK__INLINE size_t amxk__lin_nblk(size_t n) { return AMXK__CEIL_DIV(n, (size_t)AMXK__LIN_NB); }
/* Element offset of (lane r, column k) inside one block of a bf16/fp16/f32 pack (PACKED FORMAT): 16-bit
   packs in VNNI pairs, f32 packs k-major (16 lanes of one k adjacent: the f32-widened block layout
   wf[k * 16 + lane] every f32 kernel reads). */
AMXK__INLINE size_t amxk__lin_idx(amxk_dtype pt, size_t r, size_t k) {
    return pt == AMXK_DTYPE_F32 ? k * AMXK__LIN_NB + r : (k / 2) * 2 * AMXK__LIN_NB + r * 2 + (k % 2);
}
/* Bytes of one block of a bf16/fp16/f32 pack with padded K kp. */
AMXK__INLINE size_t amxk__lin_blk_bytes(amxk_dtype pt, size_t kp) { return (size_t)AMXK__LIN_NB * kp * amxk_dtype_size(pt); }

/* f as a 16-bit float of dtype t (BF16 or F16, RNE); element access in general: amxk__ld_elem /
   amxk__st_elem (amxk.h). */
AMXK__INLINE uint16_t amxk__to16(float f, amxk_dtype t) {
    return t == AMXK_DTYPE_BF16 ? amxk__f32_to_bf16(f) : amxk__f32_to_f16(f);
}

/* A quantized pack, decoded from its header: where things are and how to read a value. */
typedef struct amxk__qview {
    amxk_qformat fmt;
    int asym, bits;
    size_t n, k, kp, bn, bk, nbk, nbn; /* scale blocks along K and along N */
    size_t blk_bytes;             /* bytes per 16-row block */
    int no_nan;                   /* fp8: the header says no field is a NaN or infinite code */
    const struct amxk__qtraits *tr; /* the format's row (amxk__q_traits) */
    const uint8_t *data;
    const float *scales, *zeros;  /* fp32 grids (NULL for e8m0 scales) */
    const uint8_t *e8;            /* e8m0 scales: the byte grid (same indexing), else NULL */
} amxk__qview;

/* The e2m1 code -> value map as twice the value (integers, exact in int8 / f32 / bf16): the decoders'
   16-entry table (the kernels fold the 1/2, the row's unit, into a power of two they already apply:
   the x pre-scale, or the scale). */
static const int8_t amxk__e2m1_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
AMXK__INLINE float amxk__e2m1_to_f32(uint8_t c) { return 0.5f * (float)amxk__e2m1_x2[c & 15]; }
/* f32 -> e2m1 code, round to nearest, ties to the even mantissa, saturating at +-6 (NaN: 0). */
AMXK__INLINE uint8_t amxk__f32_to_e2m1(float t) {
    const float m = t < 0 ? -t : t;
    unsigned c = m <= 0.25f ? 0u : m < 0.75f ? 1u : m <= 1.25f ? 2u : m < 1.75f ? 3u : m <= 2.5f ? 4u : m < 3.5f ? 5u : m <= 5.0f ? 6u : 7u;
    if (!(m == m)) return 0u;
    return (uint8_t)(c | (amxk__f32_bits(t) >> 31 << 3));
}
/* An e8m0 scale byte as f32: 2^(e - 127) (e = 0: the subnormal 2^-127), e = 255: NaN. */
AMXK__INLINE float amxk__e8m0_to_f32(unsigned e) {
    return amxk__bits_f32(e == 0 ? 0x00400000u : e == 255 ? 0x7fc00000u : (uint32_t)e << 23);
}

/* ---- the quantized formats: one row each (ggml's type traits) ----
   Value maps (how a field's bits become its value): INT two's complement (asymmetric packs: unsigned,
   less a zero point), LUT a 16-entry table of integers times the row's unit, E4M3 / E5M2 fp8 codes.
   Scale kinds: an f32 grid, or an e8m0 byte grid (2^(e - 127): amxk__e8m0_to_f32). Block rules:
   any_blocks (any block_n, block_k >= 1, partial edge blocks: the kernels read the zero padding
   columns), else block_n 1 and block_k dividing K (bk_fixed: the one block_k allowed).
   What a new format touches: its public enum value and doc, and its row below. Only a new value map
   adds more: an AMXK__QV_* value, its case in AMXK__Q_DECODERS, its dec / enc, and its branch in the
   vector decoders (amxk__q_w16__avx2; AMXK__QD_FIELDS_DEFINE, once for both widths); a new scale
   kind, its branch in the grid loader (AMXK__QGRID_DEFINE). The w8a8 path
   takes INT rows only (amxk__linop_q8_check), the bf16 table kernel any 4-bit row (through dec). */
enum { AMXK__QV_INT, AMXK__QV_LUT, AMXK__QV_E4M3, AMXK__QV_E5M2 };
#define AMXK__QV_FP8(m) ((m) >= AMXK__QV_E4M3)
#define AMXK__FP8_SPECIAL(m) ((m) == AMXK__QV_E4M3 ? 0x7f : 0x7c) /* code & this == this: NaN / inf */
typedef struct amxk__qtraits {
    int bits, vmap, e8m0, any_blocks; /* field bits; AMXK__QV_*; e8m0 scales; block rule */
    size_t bk_fixed;    /* 0, or the one block_k (K a multiple of it) */
    amxk_dtype hdr;     /* the header dtype */
    int topsh;          /* INT / LUT: log2 of the factor a field's value reaches a 32-bit lane with in the
                           decode kernels (the field at the lane's top: 2^(32-b); LUT: the int8 at the
                           top, 2^24, times 1/unit) */
    float unit, qmax;   /* the values are unit * the map's (LUT); the largest magnitude (non-INT maps) */
    const int8_t *lut;  /* LUT: the 16 integers */
    float (*dec)(uint8_t code); /* non-INT maps: code -> value (the reference dequantizer) */
    uint8_t (*enc)(float t);    /* non-INT maps: value (w / scale) -> code, RNE, saturating */
} amxk__qtraits;
static const amxk__qtraits amxk__q_traits[AMXK_QFMT_COUNT] = {
    {0, AMXK__QV_INT, 0, 0, 0, AMXK_DTYPE_I8, 0, 1.0f, 0.0f, NULL, NULL, NULL},                                   /* NONE */
    {8, AMXK__QV_INT, 0, 0, 0, AMXK_DTYPE_I8, 24, 1.0f, 0.0f, NULL, NULL, NULL},                                  /* INT8 */
    {4, AMXK__QV_INT, 0, 0, 0, AMXK_DTYPE_I8, 28, 1.0f, 0.0f, NULL, NULL, NULL},                                  /* INT4 */
    {2, AMXK__QV_INT, 0, 0, 0, AMXK_DTYPE_I8, 30, 1.0f, 0.0f, NULL, NULL, NULL},                                  /* INT2 */
    {8, AMXK__QV_E4M3, 0, 1, 0, AMXK_DTYPE_FP8_E4M3, 0, 1.0f, 448.0f, NULL, amxk__e4m3_to_f32, amxk__f32_to_e4m3}, /* FP8_E4M3 */
    {8, AMXK__QV_E5M2, 0, 1, 0, AMXK_DTYPE_FP8_E5M2, 0, 1.0f, 57344.0f, NULL, amxk__e5m2_to_f32, amxk__f32_to_e5m2}, /* FP8_E5M2 */
    {4, AMXK__QV_LUT, 1, 0, 32, AMXK_DTYPE_U8, 25, 0.5f, 6.0f, amxk__e2m1_x2, amxk__e2m1_to_f32, amxk__f32_to_e2m1}, /* MXFP4 (OCP MX) */
};

/* Validates q for W[N,K]; fills the geometry of v (data pointers left NULL) and the total size. */
AMXK__PRIV amxk_status amxk__q_geometry(const amxk_quant *q, size_t n, size_t k, amxk__qview *v, size_t *bytes) {
    size_t nbn, grid, total;
    int ovf = 0;
    if (!q) return AMXK_ERR_NULL;
    if (n == 0 || k == 0 || k > ((size_t)1 << 40) || n > ((size_t)1 << 40)) return AMXK_ERR_SHAPE;
    if (q->format <= AMXK_QFMT_NONE || q->format >= AMXK_QFMT_COUNT || (q->asym != 0 && q->asym != 1)) return AMXK_ERR_ARG;
    memset(v, 0, sizeof *v);
    v->tr = &amxk__q_traits[q->format];
    v->fmt = q->format, v->asym = q->asym, v->bits = v->tr->bits, v->n = n, v->k = k;
    v->bn = q->block_n, v->bk = q->block_k;
    if (q->asym && v->tr->vmap != AMXK__QV_INT) return AMXK_ERR_ARG;
    if (v->tr->any_blocks) {
        if (v->bn == 0 || v->bk == 0) return AMXK_ERR_ARG;
    } else {
        if (v->bn == 0) v->bn = 1;
        if (v->bn != 1 || v->bk == 0 || k % v->bk != 0) return AMXK_ERR_ARG; /* group size must divide K */
        if (v->tr->bk_fixed && v->bk != v->tr->bk_fixed) return AMXK_ERR_ARG;
    }
    v->kp = amxk__lin_kp(k);
    v->nbk = AMXK__CEIL_DIV(k, v->bk); /* any block size up to SIZE_MAX: 1 block (no wrap) */
    v->nbn = nbn = AMXK__CEIL_DIV(n, v->bn);
    grid = amxk__sz_round(amxk__sz_mul(amxk__sz_mul(amxk__sz_round(nbn, 16, &ovf), v->nbk, &ovf), v->tr->e8m0 ? 1 : 4, &ovf),
                          (size_t)AMXK_ALIGN, &ovf);
    v->blk_bytes = (size_t)AMXK__LIN_NB * v->kp * (size_t)v->bits / 8; /* k <= 2^40: fits */
    total = amxk__sz_add(sizeof(amxk__pack_hdr), amxk__sz_mul(amxk__lin_nblk(n), v->blk_bytes, &ovf), &ovf);
    total = amxk__sz_add(total, amxk__sz_mul(grid, q->asym ? 2 : 1, &ovf), &ovf);
    if (ovf) return AMXK_ERR_SHAPE; /* the pack would not fit in memory */
    *bytes = total;
    return AMXK_OK;
}
/* 2 if the column groups (scale blocks along K) cover whole 64-byte rows of a block (4 * 8/b
   columns): the AVX2 kernels stream those; else 1 (generic dequantization). */
AMXK__INLINE int amxk__q_kind(const amxk__qview *v) { return v->bk % (size_t)(32 / v->bits) == 0 ? 2 : 1; }
/* lin_ws's quant for pack v: 1 (amxk__q_kind 1), else 2 + the class of amxk__pack_kernels.q_wide */
AMXK__INLINE int amxk__q_ws_kind(const amxk__qview *v) {
    return amxk__q_kind(v) == 1 ? 1 : 2 + (AMXK__QV_FP8(v->tr->vmap) ? 2 : v->bits < 8);
}
/* Index in the scale (and zero) grid of row block nb (= n / bn) and column block g (= k / bk): the
   grid is tiled by 16 row blocks, [ceil(N/bn/16)][ceil(K/bk)][16]: the 16 rows of a packed block are
   adjacent (one vector load per group), and a block's groups follow each other, so a decode stream
   reads its scales sequentially (format version 3; version 2 was group-major [K/bk][N/bn]: see
   docs/notes/formats.md). Entries past N are zero. */
AMXK__INLINE size_t amxk__q_gidx(const amxk__qview *v, size_t nb, size_t g) { return (nb / 16) * (v->nbk * 16) + g * 16 + nb % 16; }
/* When the 16 rows of block b share one grid row (bn > 1): its group-0 entry (group g's at + 16 g); else NULL. */
AMXK__INLINE const float *amxk__q_grid_row(const amxk__qview *v, const float *grid, size_t b) {
    const size_t n0 = b * 16;
    return grid && n0 + 16 <= v->n && n0 / v->bn == (n0 + 15) / v->bn ? grid + amxk__q_gidx(v, n0 / v->bn, 0) : NULL;
}
/* Group g's grid entries (scales or zeros) of the 16 rows of block b, 0 past N, into s[0 .. P##_NH)
   (P: AMXK__V8 or AMXK__V16): vector loads for per-row grids (bn == 1), else out of line: one
   broadcast when the 16 rows share a grid row, else one by one. sgrid: the scales, an f32 grid or e8m0
   bytes widened by P##_QE8M0 (amxk__e8m0_to_f32's bits); edge with grid NULL: the e8m0 bytes. */
#define AMXK__QGRID_DEFINE(isa, P)                                                                                     \
AMXK__PRIV void amxk__q_grid16_edge__##isa(const amxk__qview *v, const float *grid, size_t b, size_t g, P##_T *s) {    \
    const size_t n0 = b * 16;                                                                                          \
    const float *s1 = amxk__q_grid_row(v, grid, b);                                                                    \
    float t[16];                                                                                                       \
    size_t r;                                                                                                          \
    int h;                                                                                                             \
    if (s1) {                                                                                                          \
        for (h = 0; h < P##_NH; h++) s[h] = P##_SET1(s1[g * 16]);                                                      \
        return;                                                                                                        \
    }                                                                                                                  \
    for (r = 0; r < 16; r++) {                                                                                         \
        const size_t i = amxk__q_gidx(v, (n0 + r) / v->bn, g);                                                         \
        t[r] = n0 + r >= v->n ? 0.0f : grid ? grid[i] : amxk__e8m0_to_f32(v->e8[i]);                                   \
    }                                                                                                                  \
    for (h = 0; h < P##_NH; h++) s[h] = P##_LOADU(t + h * P##_LANES);                                                  \
}                                                                                                                      \
AMXK__FORCE_INLINE void amxk__q_grid16__##isa(const amxk__qview *v, const float *grid, size_t b, size_t g, P##_T *s) { \
    int h;                                                                                                             \
    if (b * 16 + 16 <= v->n && v->bn == 1)                                                                             \
        for (h = 0; h < P##_NH; h++) s[h] = P##_LOADU(grid + amxk__q_gidx(v, b * 16, g) + (size_t)h * P##_LANES);      \
    else                                                                                                               \
        amxk__q_grid16_edge__##isa(v, grid, b, g, s);                                                                  \
}                                                                                                                      \
AMXK__FORCE_INLINE void amxk__q_sgrid16__##isa(const amxk__qview *v, size_t b, size_t g, P##_T *s) {                   \
    int h;                                                                                                             \
    if (!v->e8)                                                                                                        \
        amxk__q_grid16__##isa(v, v->scales, b, g, s);                                                                  \
    else if (b * 16 + 16 <= v->n)                                                                                      \
        for (h = 0; h < P##_NH; h++) s[h] = P##_QE8M0(v->e8 + amxk__q_gidx(v, b * 16, g) + h * P##_LANES);             \
    else                                                                                                               \
        amxk__q_grid16_edge__##isa(v, NULL, b, g, s);                                                                  \
}
/* Points v (geometry filled) at the fields, scale grid and zero grid of the pack at base. */
AMXK__INLINE void amxk__q_bind(amxk__qview *v, const void *base) {
    v->data = (const uint8_t *)base + sizeof(amxk__pack_hdr);
    v->scales = (const float *)(v->data + amxk__lin_nblk(v->n) * v->blk_bytes);
    if (v->tr->e8m0) v->e8 = (const uint8_t *)v->scales, v->scales = NULL;
    v->zeros = v->asym ? v->scales + AMXK__ROUND_UP(AMXK__ROUND_UP(v->nbn, (size_t)16) * v->nbk, (size_t)(AMXK_ALIGN / 4)) : NULL;
}
/* Byte offset and bit shift of (row r of its block, column k) inside a block. */
AMXK__INLINE size_t amxk__q_pos(const amxk__qview *v, size_t r, size_t k, int *shift) {
    size_t per = (size_t)(8 / v->bits);
    *shift = (int)((k / 4) % per) * v->bits;
    return (k / (4 * per)) * 64 + r * 4 + k % 4;
}
/* The field (code) of weight (n, k). */
AMXK__INLINE unsigned amxk__q_fget(const amxk__qview *v, size_t n, size_t k) {
    int sh;
    size_t pos = (n / AMXK__LIN_NB) * v->blk_bytes + amxk__q_pos(v, n % AMXK__LIN_NB, k, &sh); /* sets sh */
    return (unsigned)(v->data[pos] >> sh) & ((1u << v->bits) - 1u);
}
/* The integer value of field f of an INT pack: two's complement, or unsigned (asymmetric packs). */
AMXK__INLINE int amxk__q_ival(const amxk__qview *v, unsigned f) {
    return v->asym ? (int)f : (int)f - (f >> (v->bits - 1) ? (1 << v->bits) : 0);
}
/* Dequantized weight (n, k), k < K: scale * value (INT: scale * (q - z)). */
AMXK__INLINE float amxk__q_get(const amxk__qview *v, size_t n, size_t k) {
    size_t g = amxk__q_gidx(v, n / v->bn, k / v->bk);
    unsigned f = amxk__q_fget(v, n, k);
    const float s = v->e8 ? amxk__e8m0_to_f32(v->e8[g]) : v->scales[g];
    if (v->tr->dec) return s * v->tr->dec((uint8_t)f);
    return s * (v->asym ? (float)f - v->zeros[g] : (float)amxk__q_ival(v, f));
}
/* Dequantizes block b to the 16-bit VNNI pair layout of a bf16/fp16 pack (the AMX path: one more
   rounding, of the dequantized weight to bf16/fp16). */
AMXK__PRIV void amxk__q_block_16(const amxk__qview *v, size_t b, amxk_dtype t, float *wf, uint16_t *d) {
    size_t r, kk;
    (void)wf;
    for (kk = 0; kk < v->kp; kk++)
        for (r = 0; r < AMXK__LIN_NB; r++) {
            size_t n = b * AMXK__LIN_NB + r;
            d[(kk / 2) * 2 * AMXK__LIN_NB + r * 2 + (kk % 2)] = amxk__to16(n < v->n && kk < v->k ? amxk__q_get(v, n, kk) : 0.0f, t);
        }
}
/* Dequantizes block b to wf[k * 16 + r] (f32, zero past N and K): the weights every tier multiplies. */
AMXK__PRIV void amxk__q_block_f32(const amxk__qview *v, size_t b, float *wf) {
    size_t r, kk;
    for (kk = 0; kk < v->kp; kk++)
        for (r = 0; r < AMXK__LIN_NB; r++) {
            size_t n = b * AMXK__LIN_NB + r;
            wf[kk * AMXK__LIN_NB + r] = n < v->n && kk < v->k ? amxk__q_get(v, n, kk) : 0.0f;
        }
}

/* ---- the types every level's kernels share: plan, call arguments, kernel table ---- */

struct amxk__pack_kernels;

/* The plan of one amxk_linear or amxk_linear_q8 call: the kernel table that runs it, the task grid,
   and the per-worker workspace. The workspace size queries and the drivers all derive it from
   amxk__pack_layout, so they cannot drift. */
typedef struct amxk__linear_plan {
    const struct amxk__pack_kernels *kt;  /* the table whose kernel runs the call */
    const struct amxk__pack_kernels *vec; /* the vector level's table (kernels kt borrows) */
    size_t mc, nc;  /* rows and column blocks per task */
    size_t m_tasks, n_tasks;
    size_t nblk, workers; /* column blocks of the pack, workers of the context (the levels' lin_ws grids) */
    size_t bpairs;  /* AMX: block pairs per B block (amxk__linear_block__32x32__amx) */
    int wide;         /* vector path with widened weight blocks */
    size_t ws_a;      /* per worker: x panels (f32, MR x Kp each), or the 16-bit tile-major AMX x panels */
    size_t ws_w;      /* per worker: a widened weight block (f32 16 x Kp), or AMX's B block + f32 scratch */
    size_t ws_c;      /* per worker: AMX C scratch */
    size_t ws_worker; /* per worker slice, a multiple of AMXK_ALIGN */
    size_t ws_total;
    int ws_overflow;  /* ws_worker x workers does not fit a size_t (ws_total meaningless) */
} amxk__linear_plan;

/* Arguments shared by every task of one amxk_linear call. */
typedef struct amxk__linear_args {
    size_t m, n, k, kp, ldx, ldy;
    const void *x;
    const uint16_t *w;      /* first block (bf16/fp16/f32 packs; amxk__lin_blk) */
    const amxk__qview *q;   /* quantized packs, else NULL */
    const amxk__stream *st; /* the context's family's streaming (amxk__stream_for) */
    const float *bias;
    void *y;
    amxk_dtype dt, yt;      /* x and y dtypes */
    amxk_dtype wt;          /* the pack's header dtype (BF16, F16, F32; quantized: its traits row's) */
    char *ws;
    const amxk__linear_plan *plan;
    /* NULL, or the AMX kernel's tile-major x panels of every row (chunk from m0 at xpan +
       amxk__linop_xpanel_rows(m0, mc) * kp), read instead of x; the other kernels ignore it */
    uint16_t *xpan;
} amxk__linear_args;

/* Arguments shared by every task of one amxk_linear_q8 call. */
typedef struct amxk__q8_args {
    size_t m, n, k, ldq, ld_s, ag, ldy;
    const int8_t *xq; /* the x bytes: x = (int8_t)(byte ^ xflip) */
    uint32_t xflip;   /* in every byte: 0 (AMXK_DTYPE_I8) or 0x80 (AMXK_DTYPE_U8, x + 128) */
    const float *xs;
    amxk_scale_layout layout;
    const amxk__qview *w;
    const float *bias;
    void *y;
    amxk_dtype yt;
    const amxk__linear_plan *plan;
    const uint32_t *xpan; /* NULL, or the call's x panels (amxk_linear_q8_ws: the vector level's q8_xpan) */
    const amxk__stream *st; /* the context's family's streaming (amxk__stream_for) */
} amxk__q8_args;

/* Arguments of amxk_quantize_act (every row). */
typedef struct amxk__actq_args {
    size_t k, ldx, group, ldq, ld_s;
    const void *x;
    amxk_dtype xt, ot;
    void *q;
    float *scales;
    amxk_scale_layout layout;
    const struct amxk__pack_kernels *kt; /* the vector level's table (its actq_group, if any) */
} amxk__actq_args;

/* A tile session: consecutive AMX kernel calls of one task (one thread) sharing the tile state: the
   configuration loaded again only when another is needed, released by amxk__linop_end; the x panel
   in ws rebuilt only for other rows. Zeroed: empty. Kernels given NULL load and release per call. */
typedef struct amxk__tiles {
    amxk__tilecfg cfg;
    int loaded;
    void (*release)(void); /* set by the kernel that loaded the tiles */
    const void *x;         /* the panel's source rows [m0, m1) (NULL: no panel), tile rows, K, stride */
    size_t m0, m1, r, k, ldx;
} amxk__tiles;

/* The rows per tile the AMX kernels cut a call of `rows` rows into: T = ceil(rows / 16) tiles of
   R = ceil(rows / T) rows (padding < T rows); their tile configuration depends on R, so a caller that
   runs calls of different row counts in one session orders them by it (the calls with one
   configuration then follow each other). */
AMXK__INLINE size_t amxk__linop_tile_rows(size_t rows) {
    return rows ? AMXK__CEIL_DIV(rows, AMXK__CEIL_DIV(rows, (size_t)16)) : 0;
}

/* K chunks of AMXK__LIN_AMX_KC columns in the AMX amxk_linear kernel for a task of `rows` rows (more
   than one panel) and kp columns: 1 when its K sweep is cut (C tiles to ws between chunks). */
AMXK__INLINE int amxk__lin_amx_kchunks(size_t rows, size_t kp) {
    return AMXK__LIN_AMX_KC > 0 && rows > (size_t)AMXK__LIN_AMX_M && kp > (size_t)AMXK__LIN_AMX_KC;
}

/* Rows of tile-major x panels that the row chunks of the first `rows` rows of a call take, chunks of
   mc rows from row 0 (each chunk's panels: whole 2 x 16-row slots, ceil(rows / 32) x 32 rows, at most
   31 more than its rows): where the chunk from row `rows` (a multiple of mc) starts in a->xpan,
   in rows of Kp values. */
AMXK__INLINE size_t amxk__linop_xpanel_rows(size_t rows, size_t mc) {
    return rows / mc * AMXK__ROUND_UP(mc, (size_t)AMXK__LIN_AMX_M) + AMXK__ROUND_UP(rows % mc, (size_t)AMXK__LIN_AMX_M);
}

/* The kernels of one ISA level (tables in >>dispatch; see DESIGN): one that does not take a call (< min_m
   rows, *_takes 0) hands it to the vector level's; NULL entries: the vector level's. */
typedef struct amxk__pack_kernels {
    size_t mc, min_m, nc; /* rows per task (row-tile multiple), fewest rows taken, column blocks per task */
    int (*lin_takes)(amxk_dtype dt); /* amxk_linear: 0 for x dtypes it does not run */
    /* sets wide, ws_a, ws_w, ws_c of plan p (mc set) for m rows; nondecreasing in m */
    void (*lin_ws)(amxk__linear_plan *p, size_t m, size_t kp, int quant);
    void (*lin_block)(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws);
    int (*q8_takes)(const amxk__qview *v, size_t m, int u8); /* amxk_linear_q8: 0 for packs it does not run */
    void (*q8_block)(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1);
    /* one group of a row (scale out); 0, writing nothing, when it does not take it (the scalar loop does) */
    int (*actq_group)(const amxk__actq_args *a, size_t row, size_t k0, float *scale);
    /* block b dequantized to dtype t's 16-bit VNNI pairs (wf: f32 16 x Kp scratch) */
    void (*q_block_16)(const amxk__qview *v, size_t b, amxk_dtype t, float *wf, uint16_t *d);
    /* y[row + i][n0 .. n0 + cnt) = acc[i * ldacc ..] (+ bias), the values of amxk__linear_store_row */
    void (*store_rows)(const amxk__linear_args *a, size_t row, size_t rows, size_t n0, size_t cnt, const float *acc, size_t ldacc);
    void (*q8_grid)(amxk__linear_plan *p, const amxk__qview *v, size_t m, int u8, size_t workers); /* NULL: the default grid */
    /* the AMX w8a8 kernel's vector work (contracts: amxk__q8_bprep__scalar, amxk__q8_epi__scalar) */
    void (*q8_bprep)(const amxk__qview *v, size_t b, size_t k0, size_t k1, int8_t *dst, int32_t *corr, size_t ldc);
    void (*q8_epi)(const amxk__q8_args *a, size_t row, size_t rows, size_t b, int nb, size_t g, const int32_t *c, const int32_t *corr,
                   float *acc, int first, int last);
    size_t col_tile; /* column blocks per tile (callers that slice N: multiples) */
    /* NULL, or lin_block / q8_block in a tile session (ts not NULL) */
    void (*lin_block_ts)(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws, amxk__tiles *ts);
    void (*q8_block_ts)(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1, amxk__tiles *ts);
    /* NULL, or 8-row tiles [t0, t1) of x as AMXK__Q8_XPAN_UNITS(K) x 8 32-bit units each */
    void (*q8_xpan)(const amxk__q8_args *a, size_t t0, size_t t1, uint32_t *xpan);
    int (*q8_xpan_takes)(const amxk__qview *v); /* NULL, or 1 when q8_block reads a->xpan for pack v */
    void (*lin_xpanel)(const amxk__linear_args *a, size_t m0, size_t m1, uint16_t *xa); /* NULL, or lin_block's x panels */
    const struct amxk__pack_kernels *q8_else; /* NULL, or the table running the packs q8_takes refuses */
    /* the vector levels' amxk_linear on quantized packs of whole-row groups (lin_ws's quant 2 + class:
       int8, fewer bits, fp8): from this many rows (of a call or row chunk) on, blocks dequantized once
       per task for the prefill tiles, below on the decode kernels (each weight decoded per row pair) */
    unsigned char q_wide[3];
} amxk__pack_kernels;
/* q8_xpan tiles: rows, and 32-bit units per row (x bytes padded with zeros to whole units) */
#define AMXK__Q8_XPAN_ROWS 8
#define AMXK__Q8_XPAN_UNITS(k) AMXK__CEIL_DIV((k), (size_t)4)
/* bytes of the panels of m rows: whole 8-row tiles (overflow sets *ovf) */
#define AMXK__Q8_XPAN_BYTES(m, k, ovf) \
    amxk__sz_mul((m) / AMXK__Q8_XPAN_ROWS, amxk__sz_mul(AMXK__Q8_XPAN_UNITS(k), AMXK__Q8_XPAN_ROWS * 4, (ovf)), (ovf))

/* Block b of a bf16/fp16/f32 pack. */
AMXK__INLINE const void *amxk__lin_blk(const amxk__linear_args *a, size_t b) {
    return (const char *)a->w + b * amxk__lin_blk_bytes(a->wt, a->kp);
}

/* Epilogue for one row segment: y[row][n0 .. n0+cnt) = acc[0..cnt) + bias. */
AMXK__INLINE void amxk__linear_store_row(const amxk__linear_args *a, size_t row, size_t n0, size_t cnt, const float *acc) {
    size_t j;
    for (j = 0; j < cnt; j++)
        amxk__st_elem(a->y, a->yt, row * a->ldy + n0 + j, acc[j] + (a->bias ? a->bias[n0 + j] : 0.0f));
}

/* store_rows of the scalar table: the row store per row. */
AMXK__PRIV void amxk__linear_store_rows__scalar(const amxk__linear_args *a, size_t row, size_t rows, size_t n0, size_t cnt, const float *acc,
                                                size_t ldacc) {
    size_t i;
    for (i = 0; i < rows; i++) amxk__linear_store_row(a, row + i, n0, cnt, acc + i * ldacc);
}
/* store_rows at one width (P: AMXK__V8 or AMXK__V16, amxk.h): f32 loads, bias added in f32, one
   rounding by P##_STORET (RNE, bitwise the row store); the tail masked (V16) or, at 8 lanes, the last
   cnt % 8 columns of a row through amxk__linear_store_row. */
#define AMXK__STORE_ROWS_DEFINE(isa, P)                                                                                \
AMXK__PRIV void amxk__linear_store_rows__##isa(const amxk__linear_args *a, size_t row, size_t rows, size_t n0, size_t cnt, \
                                               const float *acc, size_t ldacc) {                                       \
    const size_t es = amxk_dtype_size(a->yt);                                                                          \
    size_t i, j;                                                                                                       \
    for (i = 0; i < rows; i++) {                                                                                       \
        const float *c = acc + i * ldacc;                                                                              \
        char *y = (char *)a->y + ((row + i) * a->ldy + n0) * es;                                                       \
        for (j = 0; j + P##_STEP_MIN <= cnt; j += P##_N) {                                                             \
            const P##_MASK_T k = P##_MASK(cnt - j);                                                                    \
            P##_T v = P##_LOADT(c + j, AMXK_DTYPE_F32, k);                                                             \
            if (a->bias) v = P##_ADD(v, P##_LOADT(a->bias + n0 + j, AMXK_DTYPE_F32, k));                               \
            P##_STORET(y + j * es, a->yt, v, k);                                                                       \
        }                                                                                                              \
        if (j < cnt) amxk__linear_store_row(a, row + i, n0 + j, cnt - j, c + j);                                       \
    }                                                                                                                  \
}

/* 1 when the n bytes at p are all zero. */
AMXK__INLINE int amxk__zero_bytes(const uint8_t *p, size_t n) {
    unsigned acc = 0;
    size_t i;
    for (i = 0; i < n; i++) acc |= p[i];
    return acc == 0;
}
/* 1 when the padding columns [K, Kp) of every block are zero fields (NaN or infinite codes there would
   meet the zero x padding in the 16-bit, f32 and fp8 kernels, and 0 * NaN reaches the outputs). bf16/fp16
   blocks: 16 x 2 elements per 64-byte pair row; fp8 blocks: 16 x 4 codes per 64-byte row; f32 blocks
   (esz 4): 16 x 1 per 64-byte row. Integer
   packs are not checked: no kernel reads their padding (their groups divide K). Reads at most 31
   columns of every block: nothing when K is a multiple of 32. */
AMXK__PRIV int amxk__pad_zero(const uint8_t *blocks, size_t nblk, size_t blk_bytes, size_t k, size_t kp, size_t esz) {
    const size_t per = 4 / esz, k_full = AMXK__CEIL_DIV(k, per) * per; /* columns per 4-byte row entry */
    size_t b, r, kk;
    for (b = 0; b < nblk && k < kp; b++) {
        const uint8_t *blk = blocks + b * blk_bytes;
        for (kk = k; kk < k_full; kk++) /* the partial 64-byte row */
            for (r = 0; r < AMXK__LIN_NB; r++)
                if (!amxk__zero_bytes(blk + (kk / per) * 64 + r * 4 + (kk % per) * esz, esz)) return 0;
        if (!amxk__zero_bytes(blk + (k_full / per) * 64, (kp - k_full) / per * 64)) return 0;
    }
    return 1;
}

/* Parses and validates any pack (bf16/fp16 or quantized) as untrusted bytes: magic, version, every
   header field (dtype, shape, format, block sizes, flags, reserved bytes) against each other and the
   size (overflow-checked: amxk_pack_linear_size / amxk__q_geometry), and zero padding columns
   (amxk__pad_zero). Header out; for quantized packs the view (else v zeroed). AMXK_ERR_FORMAT for any
   mismatch, AMXK_ERR_NULL for NULL. */
AMXK__PRIV amxk_status amxk__pack_open(const void *packed, size_t bytes, amxk__pack_hdr *h, amxk__qview *v) {
    size_t need;
    if (!packed) return AMXK_ERR_NULL;
    if (bytes < sizeof *h) return AMXK_ERR_FORMAT;
    memcpy(h, packed, sizeof *h);
    memset(v, 0, sizeof *v);
    if (memcmp(h->magic, "AMXKPACK", 8) != 0 || h->version != AMXK__PACK_VERSION) return AMXK_ERR_FORMAT;
    if (!amxk__zero_bytes(h->reserved, sizeof h->reserved) || (h->flags & ~AMXK__PACK_NO_NAN) != 0) return AMXK_ERR_FORMAT;
    if (h->n > (size_t)-1 || h->k > (size_t)-1 || h->block_n > (size_t)-1 || h->block_k > (size_t)-1) return AMXK_ERR_FORMAT;
    if (h->qformat == AMXK_QFMT_NONE) {
        if (h->asym || h->block_n || h->block_k || h->flags) return AMXK_ERR_FORMAT;
        if (amxk_pack_linear_size((amxk_dtype)h->dtype, (size_t)h->n, (size_t)h->k, &need) != AMXK_OK || bytes < need)
            return AMXK_ERR_FORMAT;
        if (!amxk__pad_zero((const uint8_t *)packed + sizeof *h, amxk__lin_nblk((size_t)h->n),
                            amxk__lin_blk_bytes((amxk_dtype)h->dtype, amxk__lin_kp((size_t)h->k)), (size_t)h->k, amxk__lin_kp((size_t)h->k),
                            amxk_dtype_size((amxk_dtype)h->dtype)))
            return AMXK_ERR_FORMAT;
    } else {
        amxk_quant q;
        if (h->qformat >= AMXK_QFMT_COUNT || h->asym > 1) return AMXK_ERR_FORMAT;
        q.format = (amxk_qformat)h->qformat, q.asym = (int)h->asym, q.block_n = (size_t)h->block_n, q.block_k = (size_t)h->block_k;
        if (amxk__q_geometry(&q, (size_t)h->n, (size_t)h->k, v, &need) != AMXK_OK || bytes < need) return AMXK_ERR_FORMAT;
        if (h->dtype != (uint32_t)v->tr->hdr || (h->flags && !AMXK__QV_FP8(v->tr->vmap))) return AMXK_ERR_FORMAT;
        amxk__q_bind(v, packed);
        if (v->tr->any_blocks && !amxk__pad_zero(v->data, amxk__lin_nblk(v->n), v->blk_bytes, v->k, v->kp, 1)) return AMXK_ERR_FORMAT;
        /* a hint for the fp8 decode kernels only: they check every code they read (a NaN / inf code
           sends the block to the exact decode), so a forged flag cannot change a result */
        v->no_nan = (h->flags & AMXK__PACK_NO_NAN) != 0;
    }
    return AMXK_OK;
}

/* Round half to even without libm (|x| < 2^31). */
AMXK__INLINE float amxk__rne(float x) {
    float t = x < 0 ? -x : x, f;
    long i = (long)t;
    f = t - (float)i;
    if (f > 0.5f || (f == 0.5f && (i & 1))) i++;
    return x < 0 ? -(float)i : (float)i;
}

/* The x rows of the decode kernels (amxk__linear_qi__2x16__*, amxk__linear_fp8__2x16__*), from the f32
   pair-major panel xf (mr rows; xf[(p * MR + r) * 2 + s] = x[r][2p + s]): row r pre-multiplied by
   2^s_r (and, per column position j of a 64-byte row, divided by its field's power of two; see the
   kernels) into xr = xs + (Kp / 4) * MR (rows of Kp floats), asymmetric packs' group sums of x times
   2^s_r into xs[g * MR + r], post[r] = the power of two that undoes it. fast: 1 for int packs; for
   fp8 packs 1 when the integer decode may run (no NaN / inf code, MXCSR.DAZ clear: the caller's
   test); returns 0 when an fp8 row holds |x| >= 2^100 (or NaN), then nothing useful is written and
   the exact fp16 path must run. tab: the kernel reads 4-bit fields through a table of their values
   (P##_PERM16), so no field's power of two is divided out. */
AMXK__PRIV int amxk__q_decode_prep(const amxk__linear_args *a, const float *xf, int mr, int fast, int tab, float *xs, float *post) {
    const amxk__qview *v = a->q;
    const int fp8 = AMXK__QV_FP8(v->tr->vmap), span = 32 / v->bits;
    float fac[16], *xr = xs + (a->kp / 4) * AMXK__LIN_MR;
    size_t g, kk;
    int r, j, itop = 100, lg = 0;
    /* ints: a group's t = sum x' u (- z sum x') is below 2 bk 2^b max|x'|: max|x'| = 2^itop with
       itop <= 125 - b - log2(bk) keeps it finite for any group length (K <= 2^40) */
    while (lg < 64 && ((size_t)1 << lg) < v->bk) lg++;
    itop = AMXK__MIN(itop, 125 - v->bits - lg);
    for (r = 0; r < mr && fast; r++) { /* x rows scaled by powers of two, and the group sums of x */
        uint32_t umax = 0; /* the largest |x| as bits (NaN: above infinity's) */
        int sh, e;
        const float *xp = xf + (size_t)r * 2;
        for (kk = 0; kk < a->k; kk++) umax = AMXK__MAX(umax, amxk__f32_bits(xp[(kk / 2) * AMXK__LIN_MR * 2 + (kk & 1)]) & 0x7fffffffu);
        e = (int)(umax >> 23); /* |x| < 2^(e - 126) */
        if (fp8 && umax >= (uint32_t)(127 + 100) << 23) fast = 0;
        sh = fp8 ? AMXK__MIN(126, 251 - e) : AMXK__MAX(-28, AMXK__MIN(126, 126 + itop - e)); /* fp8: max |x'| ~ 2^124, ints: 2^itop */
        post[r] = amxk__bits_f32((uint32_t)((fp8 ? (v->tr->vmap == AMXK__QV_E4M3 ? 120 : 112) : 0) - sh + 127) << 23);
        for (j = 0; j < span; j++) { /* the pre-scale of column j of every 64-byte row: 2^(sh - its field's bit position) */
            const int fsh = 8 * (j % 4) + v->bits * (j / 4);
            fac[j] = amxk__bits_f32((uint32_t)((fp8 || tab ? sh : !v->asym ? sh - v->tr->topsh : fsh + v->bits == 32 ? sh : sh - fsh) + 127) << 23);
        }
        for (kk = 0; kk < a->kp; kk += (size_t)span)
            for (j = 0; j < span; j++) xr[(size_t)r * a->kp + kk + (size_t)j] = fac[j] * xp[((kk + (size_t)j) / 2) * AMXK__LIN_MR * 2 + (j & 1)];
        for (g = 0; g < v->nbk && !fp8 && v->asym; g++) { /* group sums of x (k increasing) times 2^sh */
            float sum = 0.0f;
            for (kk = g * v->bk; kk < (g + 1) * v->bk; kk++) sum += xp[(kk / 2) * AMXK__LIN_MR * 2 + (kk & 1)];
            xs[g * AMXK__LIN_MR + (size_t)r] = sum * amxk__bits_f32((uint32_t)(sh + 127) << 23);
        }
    }
    return fast;
}

/* The decoder cases: F(..., bits, value map, sym) for every value map and field width of the rows (a
   new row that repeats a case adds none); the one switch of the vector dequantizer and decode panels. */
#define AMXK__Q_KEY(map, asym, bits) (((map) * 2 + (asym)) * 16 + (bits))
#define AMXK__Q_DECODERS(v, F, ...)                                                                  \
    switch (AMXK__Q_KEY((v)->tr->vmap, (v)->asym, (v)->bits)) {                                      \
    case AMXK__Q_KEY(AMXK__QV_INT, 0, 8): F(__VA_ARGS__, 8, AMXK__QV_INT, 1); break;                 \
    case AMXK__Q_KEY(AMXK__QV_INT, 1, 8): F(__VA_ARGS__, 8, AMXK__QV_INT, 0); break;                 \
    case AMXK__Q_KEY(AMXK__QV_INT, 0, 4): F(__VA_ARGS__, 4, AMXK__QV_INT, 1); break;                 \
    case AMXK__Q_KEY(AMXK__QV_INT, 1, 4): F(__VA_ARGS__, 4, AMXK__QV_INT, 0); break;                 \
    case AMXK__Q_KEY(AMXK__QV_INT, 0, 2): F(__VA_ARGS__, 2, AMXK__QV_INT, 1); break;                 \
    case AMXK__Q_KEY(AMXK__QV_INT, 1, 2): F(__VA_ARGS__, 2, AMXK__QV_INT, 0); break;                 \
    case AMXK__Q_KEY(AMXK__QV_LUT, 0, 4): F(__VA_ARGS__, 4, AMXK__QV_LUT, 1); break;                 \
    case AMXK__Q_KEY(AMXK__QV_E4M3, 0, 8): F(__VA_ARGS__, 8, AMXK__QV_E4M3, 1); break;               \
    default: F(__VA_ARGS__, 8, AMXK__QV_E5M2, 1); break;                                             \
    }

/* ---- w8a8 (amxk_linear_q8): shared by its kernels ---- */

/* x[row][kk] as int8 (the U8 codes less 128: the XOR of the top bit). */
AMXK__INLINE int32_t amxk__q8_x(const amxk__q8_args *a, size_t row, size_t kk) {
    return (int8_t)((uint8_t)a->xq[row * a->ldq + kk] ^ (uint8_t)a->xflip);
}
AMXK__INLINE float amxk__q8_xscale(const amxk__q8_args *a, size_t row, size_t kk) {
    size_t g = kk / a->ag;
    return a->xs[a->layout == AMXK_SCALES_ROW_MAJOR ? row * a->ld_s + g : g * a->ld_s + row];
}
AMXK__INLINE void amxk__q8_store(const amxk__q8_args *a, size_t row, size_t b, const float *acc) {
    size_t n0 = b * AMXK__LIN_NB, cnt = AMXK__MIN((size_t)AMXK__LIN_NB, a->n - n0), j;
    for (j = 0; j < cnt; j++) amxk__st_elem(a->y, a->yt, row * a->ldy + n0 + j, acc[j] + (a->bias ? a->bias[n0 + j] : 0.0f));
}

/* AMX-INT8 k step of the w*a8 kernel: the largest multiple of 4 (<= 64) dividing the weight group,
   so that every tile pass stays inside one group; 0 if none (then the vector kernel runs). */
AMXK__INLINE size_t amxk__q8_kstep(size_t bk) {
    size_t ks;
    for (ks = 64; ks >= 4; ks -= 4)
        if (bk % ks == 0) return ks;
    return 0;
}

/* ---- w8a8 on AMX-INT8 (amxk__linear_q8_block__32x32__amx): shared pieces ---- */

#define AMXK__Q8A_KC 1024  /* int4 / int2: most k columns of a block pair widened at once (2 x 16 KiB) */
#define AMXK__Q8A_GMAX 64  /* most weight groups per k chunk (u8 corrections: 64 x 32 int32) */
#define AMXK__Q8A_MC 256   /* rows whose f32 accumulators persist across k chunks (32 KiB) */
#define AMXK__Q8A_LD 32    /* row stride (elements) of the int32 tile scratch and the accumulators */
#ifndef AMXK__Q8A_KCQ
#define AMXK__Q8A_KCQ 128 /* one weight group (per channel) on I8 x: k columns per K chunk (A chunk in L1; 0: all of K) */
#endif
#ifndef AMXK__Q8A_KPQ
#define AMXK__Q8A_KPQ 4 /* ... and block pairs per chunk sweep (their int32 C tiles on the stack between chunks) */
#endif
#if AMXK__Q8A_KPQ < 1 || AMXK__Q8A_KPQ * 4096 > 2 * 16 * AMXK__Q8A_KC
#error "AMXK__Q8A_KPQ: 1 .. the pairs whose 4 KiB of C tiles fit the int4 widening buffer"
#endif
#ifndef AMXK__Q8A_PIPE
#define AMXK__Q8A_PIPE 1   /* 1: a group's epilogue after the next group's tile work (0: right after its own) */
#endif

/* The k chunk of the AMX w8a8 kernel (a multiple of the group bk): int8 packs on int8 x: all of K
   (the B tiles are the pack's rows, nothing per chunk); else at most AMXK__Q8A_GMAX groups, and for
   int4 / int2 at most AMXK__Q8A_KC columns (one group when it is wider: q8_takes then refuses
   groups over AMXK__Q8A_KC). u8: the activations are U8 codes (corrections per group). */
AMXK__INLINE size_t amxk__q8_amx_kc(const amxk__qview *v, int u8) {
    size_t n;
    if (v->bits == 8 && !u8) return v->k;
    n = AMXK__MIN(v->k / v->bk, (size_t)AMXK__Q8A_GMAX);
    if (v->bits < 8) n = AMXK__MIN(n, AMXK__MAX((size_t)1, (size_t)AMXK__Q8A_KC / v->bk));
    return n * v->bk;
}

/* q8_bprep of the scalar table: block b's k columns [k0, k1) (k0 a multiple of the group) as int8
   rows of the int8 pack layout (row q = k quad k0/4 + q: 16 columns x 4 k, 64 bytes) at dst, for
   int4 / int2 packs (symmetric: sign-extended fields; asymmetric: the unsigned field u); dst NULL
   for int8 packs (nothing to widen). corr: NULL, or per group gi of the range corr[gi * ldc + c] =
   -128 * (sum of column c's int8 values over the group): what TDPBUSD on U8 codes (x + 128) adds too
   much, subtracted in int32 by the epilogue. */
AMXK__PRIV void amxk__q8_bprep__scalar(const amxk__qview *v, size_t b, size_t k0, size_t k1, int8_t *dst, int32_t *corr, size_t ldc) {
    const size_t per = (size_t)(8 / v->bits), qg = v->bk / 4;
    const uint8_t *blk = v->data + b * v->blk_bytes;
    size_t q, j;
    if (corr)
        for (q = 0; q < (k1 - k0) / v->bk; q++)
            for (j = 0; j < AMXK__LIN_NB; j++) corr[q * ldc + j] = 0;
    for (q = 0; q < (k1 - k0) / 4; q++) { /* output row q: k quad k0 / 4 + q */
        const size_t kq = k0 / 4 + q;
        const uint8_t *row = blk + (kq / per) * 64;
        const int sh = (int)(kq % per) * v->bits;
        for (j = 0; j < 64; j++) {
            const unsigned f = (unsigned)(row[j] >> sh) & ((1u << v->bits) - 1u);
            const int8_t w = (int8_t)amxk__q_ival(v, f);
            if (dst) dst[q * 64 + j] = w;
            if (corr) corr[(q / qg) * ldc + j / 4] -= 128 * (int32_t)w;
        }
    }
}

/* The x scale of row `row` for activation group xg (= k / ag, computed once per call by the caller). */
AMXK__INLINE float amxk__q8_xscale_g(const amxk__q8_args *a, size_t row, size_t xg) {
    return a->xs[a->layout == AMXK_SCALES_ROW_MAJOR ? row * a->ld_s + xg : xg * a->ld_s + row];
}
/* x sum of row `row` over group g (the int8 values: U8 codes XOR 0x80). */
AMXK__INLINE int32_t amxk__q8_xsum(const amxk__q8_args *a, size_t row, size_t g) {
    const size_t bk = a->w->bk;
    int32_t s = 0;
    size_t kk;
    for (kk = g * bk; kk < (g + 1) * bk; kk++) s += amxk__q8_x(a, row, kk);
    return s;
}

/* q8_epi of the scalar table: the per-group epilogue of the AMX w8a8 kernel for rows [row, row +
   rows) and the 16 nb columns of blocks b (, b + 1), group g: c: the int32 tile sums (row stride
   AMXK__Q8A_LD), corr NULL or the 32 U8 corrections; t = (float)(c + corr) (asymmetric: t = fma(-z,
   (float)xsum, t)), p = sx * sw, acc = first ? p * t : fma(p, t, acc) (acc: row stride
   AMXK__Q8A_LD); last: y = acc (+ bias) in y's dtype, columns < N (acc not written). Every level's
   q8_epi computes these same f32 operations (fused multiply-adds where written), so the values do not
   depend on the level's width. */
AMXK__PRIV void amxk__q8_epi__scalar(const amxk__q8_args *a, size_t row, size_t rows, size_t b, int nb, size_t g, const int32_t *c,
                                     const int32_t *corr, float *acc, int first, int last) {
    const amxk__qview *v = a->w;
    const size_t xg = g * v->bk / a->ag;
    size_t r, j, h;
    for (r = 0; r < rows; r++) {
        const float sx = amxk__q8_xscale_g(a, row + r, xg), xs = v->asym ? (float)amxk__q8_xsum(a, row + r, g) : 0.0f;
        float out[AMXK__LIN_NB];
        for (h = 0; h < (size_t)nb; h++) {
            const size_t n0 = (b + h) * AMXK__LIN_NB, cnt = AMXK__MIN((size_t)AMXK__LIN_NB, a->n - n0);
            for (j = 0; j < cnt; j++) {
                const size_t e = h * AMXK__LIN_NB + j, gi = amxk__q_gidx(v, n0 + j, g);
                float t = (float)(int32_t)((uint32_t)c[r * AMXK__Q8A_LD + e] + (uint32_t)(corr ? corr[e] : 0)), p = sx * v->scales[gi], s;
                float *ac = acc + r * AMXK__Q8A_LD + e;
                if (v->asym) t = fmaf(-v->zeros[gi], xs, t);
                s = first ? p * t : fmaf(p, t, *ac);
                if (last) out[j] = s;
                else *ac = s;
            }
            if (last) amxk__q8_store(a, row + r, b + h, out);
        }
    }
}

// >>scalar ---------------------------------------------------------------------------------------

/* Rows [m0, m1) x column blocks [b0, b1): bf16/fp16 weights straight from the packed layout,
   quantized weights from a block dequantized into ws (f32 [k][16]). */
AMXK__PRIV void amxk__linear__1x16__scalar(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    size_t i, b, kk, j;
    for (b = b0; b < b1; b++) {
        const void *wb = a->q ? (const void *)ws : amxk__lin_blk(a, b); /* quantized: dequantized f32 block */
        const amxk_dtype wt = a->q ? AMXK_DTYPE_F32 : a->wt;
        size_t n0 = b * AMXK__LIN_NB, cnt = AMXK__MIN((size_t)AMXK__LIN_NB, a->n - n0);
        if (a->q) amxk__q_block_f32(a->q, b, (float *)ws);
        for (i = m0; i < m1; i++) {
            float acc[AMXK__LIN_NB];
            for (j = 0; j < AMXK__LIN_NB; j++) acc[j] = 0.0f;
            for (kk = 0; kk < a->k; kk++) {
                float xv = amxk__ld_elem(a->x, a->dt, i * a->ldx + kk);
                for (j = 0; j < cnt; j++) acc[j] += xv * amxk__ld_elem(wb, wt, amxk__lin_idx(wt, j, kk));
            }
            amxk__linear_store_row(a, i, n0, cnt, acc);
        }
    }
}

/* Scalar: per row and block, per weight group: exact int32 sum, then acc += sx * sw * sum. */
AMXK__PRIV void amxk__linear_q8__1x16__scalar(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1) {
    const amxk__qview *v = a->w;
    size_t i, b, g, kk, r;
    for (i = m0; i < m1; i++)
        for (b = b0; b < b1; b++) {
            float acc[AMXK__LIN_NB];
            for (r = 0; r < AMXK__LIN_NB; r++) acc[r] = 0.0f;
            for (g = 0; g < v->nbk; g++)
                for (r = 0; r < AMXK__LIN_NB && b * AMXK__LIN_NB + r < a->n; r++) {
                    const size_t nn = b * AMXK__LIN_NB + r;
                    int32_t sum = 0, xsum = 0;
                    for (kk = g * v->bk; kk < (g + 1) * v->bk; kk++) {
                        int32_t qv = amxk__q_ival(v, amxk__q_fget(v, nn, kk));
                        sum += amxk__q8_x(a, i, kk) * qv;
                        xsum += amxk__q8_x(a, i, kk);
                    }
                    acc[r] += amxk__q8_xscale(a, i, g * v->bk) * v->scales[amxk__q_gidx(v, nn, g)] *
                              ((float)sum - (v->asym ? v->zeros[amxk__q_gidx(v, nn, g)] * (float)xsum : 0.0f));
                }
            amxk__q8_store(a, i, b, acc);
        }
}

// >>avx2 -----------------------------------------------------------------------------------------
/* AVX2 kernels (the table of the avx2 level and of the AVX-512 levels, which have none of their own yet). */

#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN

/* Weights of pair row p, lanes 8*half .. 8*half+7, parity odd (k = 2p + odd), as 8 f32. dt BF16 or
   F16: wb is a packed block (pair rows of 16 lanes, each lane (k even, k odd) of one n); dt F32: wb
   is a widened block (wb[k * 16 + lane]). */
AMXK__FORCE_INLINE __m256 amxk__lin_w__avx2(const void *wb, amxk_dtype dt, size_t p, int half, int odd) {
    __m256i v;
    if (dt == AMXK_DTYPE_F32) return _mm256_loadu_ps((const float *)wb + p * 32 + odd * 16 + half * 8);
    v = _mm256_loadu_si256((const __m256i *)((const uint16_t *)wb + p * 32 + half * 16));
    if (dt == AMXK_DTYPE_BF16)
        return _mm256_castsi256_ps(odd ? _mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)) : _mm256_slli_epi32(v, 16));
    {   /* fp16: gather the 8 halves of that parity into one 128-bit lane, then convert */
        const __m256i sh = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                            0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
        __m256i s = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, sh), 0xd8); /* [even 8 | odd 8] */
        return _mm256_cvtph_ps(odd ? _mm256_extracti128_si256(s, 1) : _mm256_castsi256_si128(s));
    }
}

/* MR x 16 microkernel over the whole (padded) K: xf the f32 x panel, pair-major (xf[(p * MR + r) * 2 +
   s] = x[r][2p + s]), wb one packed or widened block. Each output sums its products in increasing k,
   even k then odd k of each pair; mr <= 2: even and odd k in separate accumulators added at the end.
   mr, dt: compile-time constants at the call site. pf: NULL, or pf_bytes to prefetch into L2 during
   the sweep (64 per k pair). */
AMXK__FORCE_INLINE void amxk__linear__6x16__avx2(const float *xf, size_t kp, const void *wb,
                                                                          amxk_dtype dt, int mr, float *out, const char *pf,
                                                                          size_t pf_bytes) {
    __m256 acc[AMXK__LIN_MR][2], aco[2][2];
    const int split = mr <= 2;
    size_t p;
    int r, odd;
#pragma GCC unroll 6
    for (r = 0; r < mr; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    aco[0][0] = aco[0][1] = aco[1][0] = aco[1][1] = _mm256_setzero_ps();
    for (p = 0; p < kp / 2; p++) {
        const float *xp = xf + p * 2 * AMXK__LIN_MR;
        if (pf && p * 64 < pf_bytes) _mm_prefetch(pf + p * 64, _MM_HINT_T1);
#pragma GCC unroll 2
        for (odd = 0; odd < 2; odd++) {
            __m256 w0 = amxk__lin_w__avx2(wb, dt, p, 0, odd), w1 = amxk__lin_w__avx2(wb, dt, p, 1, odd);
#pragma GCC unroll 6
            for (r = 0; r < mr; r++) {
                __m256 xv = _mm256_broadcast_ss(xp + 2 * r + odd);
                if (split && odd) {
                    aco[r][0] = _mm256_fmadd_ps(xv, w0, aco[r][0]);
                    aco[r][1] = _mm256_fmadd_ps(xv, w1, aco[r][1]);
                } else {
                    acc[r][0] = _mm256_fmadd_ps(xv, w0, acc[r][0]);
                    acc[r][1] = _mm256_fmadd_ps(xv, w1, acc[r][1]);
                }
            }
        }
    }
#pragma GCC unroll 6
    for (r = 0; r < mr; r++) {
        if (split) {
            acc[r][0] = _mm256_add_ps(acc[r][0], aco[r & 1][0]);
            acc[r][1] = _mm256_add_ps(acc[r][1], aco[r & 1][1]);
        }
        _mm256_storeu_ps(out + r * 16, acc[r][0]);
        _mm256_storeu_ps(out + r * 16 + 8, acc[r][1]);
    }
}

/* x rows [m0, m0+mr) -> f32 panel, pair-major (see above), zero past K (rows past mr are not read). */
AMXK__PRIV void amxk__linear_panel__avx2(const amxk__linear_args *a, size_t m0, int mr, float *xf) {
    const size_t xsz = amxk_dtype_size(a->dt);
    float row[16];
    size_t kk, j;
    int r;
    for (r = 0; r < mr; r++) {
        const char *src = (const char *)a->x + (m0 + (size_t)r) * a->ldx * xsz;
        for (kk = 0; kk < a->kp; kk += 16) {
            size_t cnt = kk < a->k ? AMXK__MIN((size_t)16, a->k - kk) : 0;
            if (cnt == 16) {
                _mm256_storeu_ps(row, amxk__vload__avx2(src + kk * xsz, a->dt));
                _mm256_storeu_ps(row + 8, amxk__vload__avx2(src + (kk + 8) * xsz, a->dt));
            } else {
                for (j = 0; j < 16; j++) row[j] = j < cnt ? amxk__ld_elem(src, a->dt, kk + j) : 0.0f;
            }
            for (j = 0; j < 16; j += 2) {
                float *d = xf + ((kk + j) / 2 * AMXK__LIN_MR + (size_t)r) * 2;
                d[0] = row[j];
                d[1] = row[j + 1];
            }
        }
    }
}

/* Widens packed block wb (16-bit pairs) to wf[k * 16 + lane] f32, k < Kp. */
AMXK__PRIV void amxk__linear_widen__avx2(const uint16_t *wb, amxk_dtype dt, size_t kp, float *wf) {
    size_t p;
    int odd;
    for (p = 0; p < kp / 2; p++)
        for (odd = 0; odd < 2; odd++) {
            _mm256_storeu_ps(wf + p * 32 + odd * 16, amxk__lin_w__avx2(wb, dt, p, 0, odd));
            _mm256_storeu_ps(wf + p * 32 + odd * 16 + 8, amxk__lin_w__avx2(wb, dt, p, 1, odd));
        }
}

/* amxk__linear__6x16__avx2 with a constant row count (dt: a constant at the call site). */
AMXK__FORCE_INLINE void amxk__linear__6x16_rows__avx2(const float *xf, size_t kp, const void *wb, amxk_dtype dt, int mr, float *out,
                                                      const char *pf, size_t pf_bytes) {
    switch (mr) {
    case 6: amxk__linear__6x16__avx2(xf, kp, wb, dt, 6, out, pf, pf_bytes); break;
    case 5: amxk__linear__6x16__avx2(xf, kp, wb, dt, 5, out, pf, pf_bytes); break;
    case 4: amxk__linear__6x16__avx2(xf, kp, wb, dt, 4, out, pf, pf_bytes); break;
    case 3: amxk__linear__6x16__avx2(xf, kp, wb, dt, 3, out, pf, pf_bytes); break;
    case 2: amxk__linear__6x16__avx2(xf, kp, wb, dt, 2, out, pf, pf_bytes); break;
    default: amxk__linear__6x16__avx2(xf, kp, wb, dt, 1, out, pf, pf_bytes); break;
    }
}
/* One MR x 16 tile: the kernel with constant row count and weight dtype, then the epilogue. */
AMXK__PRIV void amxk__linear_tile__avx2(const amxk__linear_args *a, const float *xf, const void *wb, amxk_dtype wt, size_t row,
                                        int mr, size_t b, const char *pf, size_t pf_bytes) {
    float out[AMXK__LIN_MR * AMXK__LIN_NB];
    size_t n0 = b * AMXK__LIN_NB, cnt = AMXK__MIN((size_t)AMXK__LIN_NB, a->n - n0);
    int r;
    if (wt == AMXK_DTYPE_F32) amxk__linear__6x16_rows__avx2(xf, a->kp, wb, AMXK_DTYPE_F32, mr, out, pf, pf_bytes);
    else if (wt == AMXK_DTYPE_BF16) amxk__linear__6x16_rows__avx2(xf, a->kp, wb, AMXK_DTYPE_BF16, mr, out, pf, pf_bytes);
    else amxk__linear__6x16_rows__avx2(xf, a->kp, wb, AMXK_DTYPE_F16, mr, out, pf, pf_bytes);
    for (r = 0; r < mr; r++) amxk__linear_store_row(a, row + (size_t)r, n0, cnt, out + r * AMXK__LIN_NB);
}

/* ---- quantized int packs (groups of whole 64-byte rows: amxk__q_kind == 2) ---- */

/* The b-bit fields at bit sh of 8 lanes as f32 (two's complement when sym). */
AMXK__FORCE_INLINE __m256 amxk__q_field__avx2(__m256i v, int sh, int bits, int sym) {
    if (sym) return _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 32 - sh - bits), 32 - bits));
    return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(v, sh), _mm256_set1_epi32((1 << bits) - 1)));
}
/* 16 fp8 codes (16-bit lanes) as fp16 images: e5m2 the code at the top, e4m3 the value / 256 (fp16's
   exponent bias is 8 more; NaN kept, sign kept). */
AMXK__FORCE_INLINE __m256i amxk__fp8_f16__avx2(__m256i h, int map) {
    __m256i mag, f;
    if (map == AMXK__QV_E5M2) return _mm256_slli_epi16(h, 8);
    mag = _mm256_and_si256(h, _mm256_set1_epi16(0x7f));
    f = _mm256_or_si256(_mm256_slli_epi16(mag, 7), _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x80)), 8));
    return _mm256_blendv_epi8(f, _mm256_or_si256(f, _mm256_set1_epi16(0x7e00)), _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7f)));
}
/* The fp8 codes at bit sh of the 16 lanes of c[0] | c[1] as f32, exactly: through fp16 and vcvtph2ps
   (which ignores MXCSR.DAZ); e4m3 multiplied back by 256 here (exact: |code| <= 448), never folded
   into the scale, where s * 256 would overflow for s above ~2^120. */
AMXK__FORCE_INLINE void amxk__q_fp8x__avx2(const __m256i *c, int sh, int map, __m256 *w) {
    const __m256i m = _mm256_set1_epi32(0xff);
    const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_and_si256(_mm256_srli_epi32(c[0], sh), m),
                                                                   _mm256_and_si256(_mm256_srli_epi32(c[1], sh), m)), 0xd8);
    const __m256i f = amxk__fp8_f16__avx2(h, map); /* h: the 16 codes as 16-bit lanes, in order */
    w[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(f));
    w[1] = _mm256_cvtph_ps(_mm256_extracti128_si256(f, 1));
    if (map == AMXK__QV_E4M3) w[0] = _mm256_mul_ps(w[0], _mm256_set1_ps(256.0f)), w[1] = _mm256_mul_ps(w[1], _mm256_set1_ps(256.0f));
}
/* The values at bit sh of the 16 lanes of c[0] | c[1] as f32: int fields, fp8 codes (exact), LUT
   maps as the table's integers (lutv: the table in every 128-bit lane): callers fold the row's unit
   into the scale (s / 2 is exact or a subnormal that stays exact for e8m0 scales). */
AMXK__FORCE_INLINE void amxk__q_w16__avx2(const __m256i *c, int sh, int bits, int map, int sym, __m256i lutv, __m256 *w) {
    int h;
    if (map == AMXK__QV_LUT) /* the code through the table (lut[0] = 0 for the lane's upper bytes), sign-extended */
        for (h = 0; h < 2; h++) {
            const __m256i q = _mm256_shuffle_epi8(lutv, _mm256_and_si256(_mm256_srli_epi32(c[h], sh), _mm256_set1_epi32(15)));
            w[h] = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(q, 24), 24));
        }
    else if (map == AMXK__QV_INT)
        for (h = 0; h < 2; h++) w[h] = amxk__q_field__avx2(c[h], sh, bits, sym);
    else
        amxk__q_fp8x__avx2(c, sh, map, w);
}
/* 8 e8m0 scale bytes widened to 2^(e - 127) by a shift into the exponent field (e = 0 and 255 also
   get mantissa bit 22: 2^-127 and a quiet NaN). */
AMXK__INLINE __m256 amxk__e8m0_f32x8__avx2(__m128i e8) {
    const __m256i e = _mm256_cvtepu8_epi32(e8);
    const __m256i sp = _mm256_or_si256(_mm256_cmpeq_epi32(e, _mm256_setzero_si256()), _mm256_cmpeq_epi32(e, _mm256_set1_epi32(255)));
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_slli_epi32(e, 23), _mm256_and_si256(sp, _mm256_set1_epi32(0x00400000))));
}
#define AMXK__V8_LANES 8
#define AMXK__V8_NH 2
#define AMXK__V8_LOADU(p) _mm256_loadu_ps(p)
#define AMXK__V8_QE8M0(p) amxk__e8m0_f32x8__avx2(_mm_loadl_epi64((const __m128i *)(const void *)(p)))
AMXK__QGRID_DEFINE(avx2, AMXK__V8)

/* Dequantizes block b to wf[k * 16 + r] like amxk__q_block_f32 (same values: s * (q - z) in f32). */
AMXK__FORCE_INLINE void amxk__q_block_f32_int__avx2(const amxk__qview *v, size_t b, float *wf, int bits, int map, int sym) {
    const int span = 32 / bits; /* columns per 64-byte row */
    const __m256i lutv = map == AMXK__QV_LUT ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)v->tr->lut))
                                             : _mm256_setzero_si256();
    const uint8_t *blk = v->data + b * v->blk_bytes;
    size_t g, rg, kk;
    int j;
    for (g = 0; g < v->nbk; g++) {
        __m256 s[2], z[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        amxk__q_sgrid16__avx2(v, b, g, s);
        s[0] = _mm256_mul_ps(s[0], _mm256_set1_ps(v->tr->unit));
        s[1] = _mm256_mul_ps(s[1], _mm256_set1_ps(v->tr->unit));
        if (!sym) amxk__q_grid16__avx2(v, v->zeros, b, g, z);
        for (rg = g * v->bk / (size_t)span; rg < AMXK__MIN((g + 1) * v->bk, v->kp) / (size_t)span; rg++) { /* fp8: last block may be partial */
            const __m256i c[2] = {_mm256_loadu_si256((const __m256i *)(blk + rg * 64)), _mm256_loadu_si256((const __m256i *)(blk + rg * 64 + 32))};
#pragma GCC unroll 16
            for (j = 0; j < span; j++) {
                float *d = wf + (rg * (size_t)span + (size_t)j) * 16;
                __m256 w[2];
                amxk__q_w16__avx2(c, 8 * (j % 4) + bits * (j / 4), bits, map, sym, lutv, w);
                if (!sym) w[0] = _mm256_sub_ps(w[0], z[0]), w[1] = _mm256_sub_ps(w[1], z[1]);
                _mm256_storeu_ps(d, _mm256_mul_ps(s[0], w[0]));
                _mm256_storeu_ps(d + 8, _mm256_mul_ps(s[1], w[1]));
            }
        }
    }
    for (kk = v->k; kk < v->kp; kk++) memset(wf + kk * 16, 0, 64);
}
AMXK__PRIV void amxk__q_block_f32__avx2(const amxk__qview *v, size_t b, float *wf) {
    if (amxk__q_kind(v) != 2) {
        amxk__q_block_f32(v, b, wf);
        return;
    }
    AMXK__Q_DECODERS(v, amxk__q_block_f32_int__avx2, v, b, wf)
}

/* amxk__q_block_16 through the f32 dequantizer (the same values: s * (q - z) rounded once, then RNE
   to bf16 / fp16 as amxk_convert does): wf is a 16 x Kp f32 scratch. The AMX path's dequantizer. */
AMXK__PRIV void amxk__q_block_16__avx2(const amxk__qview *v, size_t b, amxk_dtype t, float *wf, uint16_t *d) {
    size_t p;
    int h;
    amxk__q_block_f32__avx2(v, b, wf);
    for (p = 0; p < v->kp / 2; p++)
        for (h = 0; h < 2; h++) { /* rows 8h .. 8h+7: (k even, k odd) pairs */
            const float *e = wf + (2 * p) * 16 + h * 8, *o = e + 16;
            __m128i ce, co;
            if (t == AMXK_DTYPE_BF16) {
                ce = amxk__cvt_f32_bf16__avx2(_mm256_loadu_ps(e));
                co = amxk__cvt_f32_bf16__avx2(_mm256_loadu_ps(o));
            } else {
                ce = _mm256_cvtps_ph(_mm256_loadu_ps(e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                co = _mm256_cvtps_ph(_mm256_loadu_ps(o), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            }
            _mm_storeu_si128((__m128i *)(d + p * 32 + h * 16), _mm_unpacklo_epi16(ce, co));
            _mm_storeu_si128((__m128i *)(d + p * 32 + h * 16 + 8), _mm_unpackhi_epi16(ce, co));
        }
}

/* ---- the decode kernels (M below the table's q_wide, whole-row groups), written once per width over the
   V8 / V16 vocabulary (P: AMXK__V8 or AMXK__V16; AMXK__QGRID_DEFINE loads a group's scales or
   zeros of the 16 rows of a block into NH = 16 / P##_LANES vectors; lane for lane the same sums at
   both widths: a level's choice of width changes no output) ---- */

/* Field decoders of a width. fp8_k4: fp8 codes -> f32 by integer operations alone: bytes j = 0 .. 3 of
   each 32-bit lane of v (one weight row, k = 4 * quad + j) into w[j]: 16-bit arithmetic shifts put the
   codes of bytes 1 and 3 (then, after a shift up by 8, of 0 and 2) sign-extended at the top of their
   16-bit halves, the top half masked (the bottom one first moved up) so that sign, exponent and
   mantissa land in the f32 fields: the code's value * 2^-120 (e4m3) or * 2^-112 (e5m2), exactly (9
   operations per 4 codes); subnormal codes give f32 subnormals and NaN / infinite codes garbage (the
   fp8 kernel reports those, amxk__q_decode_prep excludes the rest).
   qi_tops / qi_sfield / qi_ufield: the int fields (derivation: docs/notes/pack.md). */
#define AMXK__QD_FIELDS_DEFINE(isa, P)                                                                                 \
AMXK__FORCE_INLINE void amxk__fp8_k4__##isa(P##_I v, int map, P##_T *w) {                                              \
    const int sa = map == AMXK__QV_E4M3 ? 4 : 3;                                                                       \
    const P##_I m = P##_SET1I32(map == AMXK__QV_E4M3 ? (int)0x87f00000u : (int)0x8fe00000u);                           \
    const P##_I odd = P##_SRAI16(v, sa), even = P##_SRAI16(P##_SLLI16(v, 8), sa);                                      \
    w[0] = P##_CASTIF(P##_ANDI(P##_SLLI32(even, 16), m)), w[1] = P##_CASTIF(P##_ANDI(P##_SLLI32(odd, 16), m));         \
    w[2] = P##_CASTIF(P##_ANDI(even, m)), w[3] = P##_CASTIF(P##_ANDI(odd, m));                                         \
}                                                                                                                      \
AMXK__FORCE_INLINE P##_T amxk__fp8_kj__##isa(P##_I v, int j, int map) { /* w[j] of amxk__fp8_k4 alone (3 operations) */ \
    const P##_I t = j < 3 ? P##_SLLI32(v, 24 - 8 * j) : v;                                                             \
    return P##_CASTIF(P##_ANDI(P##_SRAI32(t, map == AMXK__QV_E4M3 ? 4 : 3),                                            \
                               P##_SET1I32(map == AMXK__QV_E4M3 ? (int)0x87f00000u : (int)0x8fe00000u)));              \
}                                                                                                                      \
AMXK__FORCE_INLINE P##_I amxk__qi_tops__##isa(P##_I c, int f, int bits, int lut, P##_I lutv) {                         \
    const int up = 8 - bits - bits * f; /* moves field f to the top of its byte */                                     \
    if (lut) return P##_SHUFB(lutv, P##_ANDI(f ? P##_SRLI16(c, 4) : c, P##_SET1I8(0x0f)));                             \
    if (bits == 8) return c;                                                                                           \
    return P##_ANDI(up ? P##_SLLI32(c, up) : c, P##_SET1I8((char)(0xff << (8 - bits))));                               \
}                                                                                                                      \
AMXK__FORCE_INLINE P##_T amxk__qi_sfield__##isa(P##_I tops, int i) {                                                   \
    const int lo = (int)0x808080u; /* vpshufb indices with the top bit set: zero bytes */                              \
    if (i == 3) return P##_CVTI(P##_ANDI(tops, P##_SET1I32((int)0xff000000u)));                                        \
    return P##_CVTI(P##_SHUFB(tops, P##_BCAST128I(_mm_setr_epi32(lo | i << 24, lo | (4 + i) << 24, lo | (8 + i) << 24,  \
                                                                 lo | (12 + i) << 24))));                              \
}                                                                                                                      \
AMXK__FORCE_INLINE P##_T amxk__qi_ufield__##isa(P##_I v, int sh, int bits) {                                           \
    if (sh + bits == 32) return P##_CVTI(P##_SRLI32(v, sh));                                                           \
    return P##_CVTI(P##_ANDI(v, P##_SET1I32(((1 << bits) - 1) << sh)));                                                \
}                                                                                                                      \
/* Column j (k = span * row + j) of the 64-byte-row part c as the int kernel multiplies it: through the 16-entry      \
   table tab (perm), or the field (symmetric: from *tops, the fields of c moved to the tops of their bytes, renewed    \
   at j % 4 == 0) */                                                                                                   \
AMXK__FORCE_INLINE P##_T amxk__qi_w__##isa(P##_I c, P##_I *tops, int j, int bits, int sym, int perm, int lut, P##_I lutv, \
                                           P##_T tab) {                                                                \
    if (perm) {                                                                                                        \
        const int sh = 8 * (j % 4) + 4 * (j / 4);                                                                      \
        return P##_PERMF(tab, sh ? P##_SRLI32(c, sh) : c);                                                             \
    }                                                                                                                  \
    if (sym && j % 4 == 0) *tops = amxk__qi_tops__##isa(c, j / 4, bits, lut, lutv);                                    \
    return sym ? amxk__qi_sfield__##isa(*tops, j % 4) : amxk__qi_ufield__##isa(c, 8 * (j % 4) + bits * (j / 4), bits); \
}

/* The decode kernels (derivation: docs/notes/pack.md): rows 0 .. mr-1 (mr <= P##_MR: 2 or 4) of xr (f32 rows ldr
   apart, zero past K, row r pre-scaled by 2^s_r) against block b; per group and column t = sum x' * q
   (interleaved partial sums), asymmetric: t -= z * xsum_r; then acc += scale * (t * post_r), post_r an
   exact power of two undone per group (no partial sum exceeds the result's range). res[r * NH + h]:
   row r's outputs. fp8: returns 1 when a code of the block may be NaN / inf (P##_FP8_BAD): res is then
   garbage and the caller runs the exact kernel. Int: xr also divided by the field's power of two
   (2^(32-b) symmetric, 2^sh asymmetric); lut: the row's 16-entry table (lutv) gives the int8. */
/* The partial sums of a decode kernel's group: column j of a 64-byte row (k = span * row + j) goes to
   chain AMXK__QD_CHAIN(mr, j) of its row, four chains per row for one or two rows (the same sums for
   either), two for more (chains 0, 1); a group's t = (c0 + c1) + (c2 + c3), or c0 + c1. */
#define AMXK__QD_CHAIN(mr, j) ((mr) <= 2 ? (j) & 3 : (j) & 1)
#define AMXK__QD_SUM(P, mr, c) ((mr) <= 2 ? P##_ADD(P##_ADD((c)[0], (c)[1]), P##_ADD((c)[2], (c)[3])) : P##_ADD((c)[0], (c)[1]))
#define AMXK__QD_KERNELS_DEFINE(isa, P)                                                                                \
AMXK__FORCE_INLINE int amxk__linear_fp8__2x16__##isa(const amxk__qview *v, const amxk__stream *st, const float *xr, size_t ldr, \
                                                     size_t b, int mr, int map, const float *post, P##_T *res) {       \
    const uint8_t *blk = v->data + b * v->blk_bytes;                                                                   \
    const char *pf = (const char *)blk + st->q_pf; /* the prefetch address and kind, read once */                      \
    const int t1 = st->q_t1;                                                                                           \
    const float *s1 = amxk__q_grid_row(v, v->scales, b); /* block scales (128 x 128): one broadcast per group */       \
    const P##_I special = P##_SET1I8((char)AMXK__FP8_SPECIAL(map));                                                    \
    P##_FP8_BAD_T bad = P##_FP8_BAD_0;                                                                                 \
    size_t g, rg;                                                                                                      \
    int r, h, j;                                                                                                       \
    for (r = 0; r < P##_MR * P##_NH; r++) res[r] = P##_SET1(0.0f);                                                     \
    for (g = 0; g < v->nbk; g++) {                                                                                     \
        const size_t q0 = g * v->bk / 4, q1 = AMXK__MIN((g + 1) * v->bk, v->kp) / 4;                                   \
        P##_T sc[P##_NH];                                                                                              \
        if (s1)                                                                                                        \
            for (h = 0; h < P##_NH; h++) sc[h] = P##_SET1(s1[g * 16]);                                                 \
        else                                                                                                           \
            amxk__q_grid16__##isa(v, v->scales, b, g, sc);                                                             \
        if (P##_NH == 2 && mr == 1) { /* one row, two halves: both in one pass, one broadcast per k (the same chains) */ \
            P##_T a0[4], a1[4];                                                                                        \
            for (j = 0; j < 4; j++) a0[j] = a1[j] = P##_SET1(0.0f);                                                    \
            for (rg = q0; rg < q1; rg++) {                                                                             \
                const P##_I c0 = P##_LOADI(blk + rg * 64), c1 = P##_LOADI(blk + rg * 64 + 32);                         \
                AMXK__Q_PF(t1, pf + rg * 64);                                                                          \
                bad = P##_FP8_BAD(P##_FP8_BAD(bad, c0, special), c1, special);                                         \
                _Pragma("GCC unroll 4") for (j = 0; j < 4; j++) { /* code j of each lane decoded as it is used */      \
                    const P##_T xb = P##_SET1(xr[rg * 4 + (size_t)j]);                                                 \
                    a0[j] = P##_FMADD(xb, amxk__fp8_kj__##isa(c0, j, map), a0[j]);                                     \
                    a1[j] = P##_FMADD(xb, amxk__fp8_kj__##isa(c1, j, map), a1[j]);                                     \
                }                                                                                                      \
            }                                                                                                          \
            res[0] = P##_FMADD(sc[0], P##_MUL(AMXK__QD_SUM(P, 1, a0), P##_SET1(post[0])), res[0]);                     \
            res[P##_NH - 1] = P##_FMADD(sc[P##_NH - 1], P##_MUL(AMXK__QD_SUM(P, 1, a1), P##_SET1(post[0])), res[P##_NH - 1]); \
            continue;                                                                                                  \
        }                                                                                                              \
        for (h = 0; h < P##_NH; h++) { /* lanes 16h / NH .. */                                                         \
            P##_T acc[P##_MR][4]; /* [row][AMXK__QD_CHAIN] */                                                          \
            for (r = 0; r < P##_MR; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = P##_SET1(0.0f);               \
            for (rg = q0; rg < q1; rg++) {                                                                             \
                const P##_I c = P##_LOADI(blk + rg * 64 + (size_t)h * 32);                                             \
                P##_T w[4];                                                                                            \
                if (h == 0) AMXK__Q_PF(t1, pf + rg * 64);                                                              \
                bad = P##_FP8_BAD(bad, c, special);                                                                    \
                amxk__fp8_k4__##isa(c, map, w);                                                                        \
                _Pragma("GCC unroll 4") for (j = 0; j < 4; j++) {                                                      \
                    _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                                                 \
                        const P##_T xb = P##_SET1(xr[(size_t)r * ldr + rg * 4 + (size_t)j]);                           \
                        acc[r][AMXK__QD_CHAIN(mr, j)] = P##_FMADD(xb, w[j], acc[r][AMXK__QD_CHAIN(mr, j)]);            \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            _Pragma("GCC unroll 4") for (r = 0; r < mr; r++)                                                           \
                res[r * P##_NH + h] = P##_FMADD(sc[h], P##_MUL(AMXK__QD_SUM(P, mr, acc[r]), P##_SET1(post[r])), res[r * P##_NH + h]); \
        }                                                                                                              \
    }                                                                                                                  \
    return P##_FP8_BAD_ANY(bad, special);                                                                              \
}                                                                                                                      \
AMXK__FORCE_INLINE void amxk__linear_qi__2x16__##isa(const amxk__qview *v, const amxk__stream *st, const float *xr, size_t ldr, \
                                                     const float *xsum,                                                \
                                                     size_t b, int mr, int bits, int sym, int lut, const float *post,  \
                                                     P##_T *res) {                                                     \
    const int span = 32 / bits, perm = P##_PERM16 && bits == 4; /* 4-bit fields through the table of their values */   \
    const P##_I lutv = lut ? P##_BCAST128I(_mm_loadu_si128((const __m128i *)(const void *)v->tr->lut)) : P##_ZEROI;    \
    const P##_T tab = P##_Q4TAB(v, sym, lut);                                                                          \
    const uint8_t *blk = v->data + b * v->blk_bytes;                                                                   \
    const char *pf = (const char *)blk + st->q_pf; /* the prefetch address and kind, read once */                      \
    const int t1 = st->q_t1;                                                                                           \
    size_t g, rg;                                                                                                      \
    int r, h, j;                                                                                                       \
    for (r = 0; r < P##_MR * P##_NH; r++) res[r] = P##_SET1(0.0f);                                                     \
    for (g = 0; g < v->nbk; g++) {                                                                                     \
        P##_T sc[P##_NH], zp[P##_NH];                                                                                  \
        amxk__q_sgrid16__##isa(v, b, g, sc);                                                                           \
        for (h = 0; h < P##_NH; h++) zp[h] = P##_SET1(0.0f);                                                           \
        if (!sym) amxk__q_grid16__##isa(v, v->zeros, b, g, zp);                                                        \
        if (P##_NH == 2 && mr == 1) { /* one row, two halves: both in one pass, one broadcast per k (the same chains) */ \
            P##_T a[2][4]; /* [half][AMXK__QD_CHAIN] */                                                                \
            for (j = 0; j < 4; j++) a[0][j] = a[1][j] = P##_SET1(0.0f);                                                \
            for (rg = g * v->bk / (size_t)span; rg < (g + 1) * v->bk / (size_t)span; rg++) {                           \
                const P##_I c0 = P##_LOADI(blk + rg * 64), c1 = P##_LOADI(blk + rg * 64 + 32);                         \
                P##_I tops0 = c0, tops1 = c1;                                                                          \
                AMXK__Q_PF(t1, pf + rg * 64);                                                                          \
                _Pragma("GCC unroll 16") for (j = 0; j < span; j++) {                                                  \
                    const P##_T xb = P##_SET1(xr[rg * (size_t)span + (size_t)j]);                                      \
                    a[0][j & 3] = P##_FMADD(xb, amxk__qi_w__##isa(c0, &tops0, j, bits, sym, perm, lut, lutv, tab), a[0][j & 3]); \
                    a[1][j & 3] = P##_FMADD(xb, amxk__qi_w__##isa(c1, &tops1, j, bits, sym, perm, lut, lutv, tab), a[1][j & 3]); \
                }                                                                                                      \
            }                                                                                                          \
            for (h = 0; h < 2; h++) {                                                                                  \
                P##_T t = AMXK__QD_SUM(P, 1, a[h]);                                                                    \
                if (!sym) t = P##_FNMADD(zp[h], P##_SET1(xsum[g * AMXK__LIN_MR]), t);                                  \
                res[h] = P##_FMADD(sc[h], P##_MUL(t, P##_SET1(post[0])), res[h]);                                      \
            }                                                                                                          \
            continue;                                                                                                  \
        }                                                                                                              \
        for (h = 0; h < P##_NH; h++) { /* lanes 16h / NH .. */                                                         \
            P##_T acc[P##_MR][4]; /* [row][AMXK__QD_CHAIN] */                                                          \
            for (r = 0; r < P##_MR; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = P##_SET1(0.0f);               \
            for (rg = g * v->bk / (size_t)span; rg < (g + 1) * v->bk / (size_t)span; rg++) {                           \
                const P##_I c = P##_LOADI(blk + rg * 64 + (size_t)h * 32);                                             \
                P##_I tops = c;                                                                                        \
                if (h == 0) AMXK__Q_PF(t1, pf + rg * 64);                                                              \
                _Pragma("GCC unroll 16") for (j = 0; j < span; j++) {                                                  \
                    const P##_T w = amxk__qi_w__##isa(c, &tops, j, bits, sym, perm, lut, lutv, tab);                   \
                    _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                                                 \
                        const P##_T xb = P##_SET1(xr[(size_t)r * ldr + rg * (size_t)span + (size_t)j]);                \
                        acc[r][AMXK__QD_CHAIN(mr, j)] = P##_FMADD(xb, w, acc[r][AMXK__QD_CHAIN(mr, j)]);               \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                                                         \
                P##_T t = AMXK__QD_SUM(P, mr, acc[r]);                                                                 \
                if (!sym) t = P##_FNMADD(zp[h], P##_SET1(xsum[g * AMXK__LIN_MR + (size_t)r]), t);                      \
                res[r * P##_NH + h] = P##_FMADD(sc[h], P##_MUL(t, P##_SET1(post[r])), res[r * P##_NH + h]);            \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
}                                                                                                                      \
/* Exact fp8 kernel, for what the integer one excludes (NaN / inf codes, MXCSR.DAZ, |x| >= 2^100):                     \
   rows r0 .. r0+mr (mr <= 2) of the x panel xf against block b, codes decoded through fp16                            \
   (amxk__q_fp8x). Per group: t = sum_k x * w (f32, k increasing; for one row split by k parity),                      \
   then res += s * t. Out of line: the fallback of the fp8 kernel for a block it does not take. */                     \
AMXK__FORCE_INLINE void amxk__linear_q__2x16__##isa(const amxk__qview *v, const amxk__stream *st, const float *xf, size_t b,  \
                                                    int r0, int mr, int map,                                           \
                                                    P##_T *res) {                                                      \
    const uint8_t *blk = v->data + b * v->blk_bytes;                                                                   \
    const char *pf = (const char *)blk + st->q_pf; /* the prefetch address and kind, read once */                      \
    const int t1 = st->q_t1;                                                                                           \
    size_t g, rg;                                                                                                      \
    int r, j, h;                                                                                                       \
    for (r = 0; r < 2 * P##_NH; r++) res[r] = P##_SET1(0.0f);                                                          \
    for (g = 0; g < v->nbk; g++) {                                                                                     \
        P##_T t[2][P##_NH], s[P##_NH]; /* [row, or k parity for one row][half] */                                      \
        for (r = 0; r < 2; r++)                                                                                        \
            for (h = 0; h < P##_NH; h++) t[r][h] = P##_SET1(0.0f);                                                     \
        for (rg = g * v->bk / 4; rg < AMXK__MIN((g + 1) * v->bk, v->kp) / 4; rg++) { /* the last block may be partial */ \
            P##_I c[P##_NH];                                                                                           \
            for (h = 0; h < P##_NH; h++) c[h] = P##_LOADI(blk + rg * 64 + (size_t)h * 32);                             \
            AMXK__Q_PF(t1, pf + rg * 64);                                                                              \
            _Pragma("GCC unroll 4") for (j = 0; j < 4; j++) {                                                          \
                const size_t kk = rg * 4 + (size_t)j;                                                                  \
                const float *xp = xf + ((kk / 2) * AMXK__LIN_MR + (size_t)r0) * 2 + (kk & 1);                          \
                P##_T w[P##_NH];                                                                                       \
                amxk__q_fp8x__##isa(c, 8 * j, map, w);                                                                 \
                _Pragma("GCC unroll 2") for (r = 0; r < mr; r++) {                                                     \
                    const P##_T xb = P##_SET1(xp[2 * r]);                                                              \
                    const int a = mr == 1 ? (j & 1) : r;                                                               \
                    for (h = 0; h < P##_NH; h++) t[a][h] = P##_FMADD(xb, w[h], t[a][h]);                               \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
        if (mr == 1)                                                                                                   \
            for (h = 0; h < P##_NH; h++) t[0][h] = P##_ADD(t[0][h], t[1][h]);                                          \
        amxk__q_grid16__##isa(v, v->scales, b, g, s);                                                                  \
        for (h = 0; h < P##_NH; h++) s[h] = P##_MUL(s[h], P##_SET1(v->tr->unit));                                      \
        for (r = 0; r < mr; r++)                                                                                       \
            for (h = 0; h < P##_NH; h++) res[r * P##_NH + h] = P##_FMADD(s[h], t[r][h], res[r * P##_NH + h]);          \
    }                                                                                                                  \
}                                                                                                                      \
AMXK__PRIV void amxk__linear_q_exact__##isa(const amxk__qview *v, const amxk__stream *st, const float *xf, size_t b, int r0, \
                                             int mr, P##_T *res) {                                                     \
    if (v->tr->vmap == AMXK__QV_E4M3) {                                                                                \
        if (mr == 2) amxk__linear_q__2x16__##isa(v, st, xf, b, r0, 2, AMXK__QV_E4M3, res);                             \
        else amxk__linear_q__2x16__##isa(v, st, xf, b, r0, 1, AMXK__QV_E4M3, res);                                     \
    } else {                                                                                                           \
        if (mr == 2) amxk__linear_q__2x16__##isa(v, st, xf, b, r0, 2, AMXK__QV_E5M2, res);                             \
        else amxk__linear_q__2x16__##isa(v, st, xf, b, r0, 1, AMXK__QV_E5M2, res);                                     \
    }                                                                                                                  \
}                                                                                                                      \
/* Rows r0 .. r0+m2 of the panel against block b with the kernel of one decoder case (the exact fp8                    \
   kernel for an fp8 block the integer decode does not take: fast 0 or a NaN / inf code). */                           \
AMXK__FORCE_INLINE void amxk__q_dec_block__##isa(const amxk__qview *v, const amxk__stream *st, const float *xf,        \
                                                 const float *xr, size_t ldr, const float *xsum, size_t b, int r0, int m2,\
                                                 int fast, const float *post, P##_T *res, int bits, int map, int sym) {\
    int r;                                                                                                             \
    if (!AMXK__QV_FP8(map)) {                                                                                          \
        if (m2 > 2) amxk__linear_qi__2x16__##isa(v, st, xr, ldr, xsum, b, P##_MR, bits, sym, map == AMXK__QV_LUT, post, res);\
        else if (m2 == 2) amxk__linear_qi__2x16__##isa(v, st, xr, ldr, xsum, b, 2, bits, sym, map == AMXK__QV_LUT, post, res);\
        else amxk__linear_qi__2x16__##isa(v, st, xr, ldr, xsum, b, 1, bits, sym, map == AMXK__QV_LUT, post, res);      \
        return;                                                                                                        \
    }                                                                                                                  \
    if (fast && !(m2 > 2    ? amxk__linear_fp8__2x16__##isa(v, st, xr, ldr, b, P##_MR, map, post, res)                 \
                  : m2 == 2 ? amxk__linear_fp8__2x16__##isa(v, st, xr, ldr, b, 2, map, post, res)                      \
                            : amxk__linear_fp8__2x16__##isa(v, st, xr, ldr, b, 1, map, post, res)))                    \
        return;                                                                                                        \
    for (r = 0; r < m2; r += 2) amxk__linear_q_exact__##isa(v, st, xf, b, r0 + r, AMXK__MIN(2, m2 - r), res + r * P##_NH);\
}                                                                                                                      \
/* Rows of one x panel (mr rows at `row`, f32 panel xf) against blocks [b0, b1) with the kernels above:                \
   P##_MR rows at a time (one decode of each weight row for all), then 2 or 1. */                                      \
AMXK__PRIV void amxk__linear_q_panel__##isa(const amxk__linear_args *a, const float *xf, float *xs, size_t row, int mr,\
                                            size_t b0, size_t b1) {                                                    \
    const amxk__qview *v = a->q;                                                                                       \
    float post[AMXK__LIN_MR], *xr = xs + (a->kp / 4) * AMXK__LIN_MR; /* x rows, kp floats each */                      \
    P##_T res[P##_MR * P##_NH];                                                                                        \
    size_t b;                                                                                                          \
    int r, r0, m2, fast = amxk__q_decode_prep(a, xf, mr, !AMXK__QV_FP8(v->tr->vmap) || (v->no_nan && (_mm_getcsr() & 0x40) == 0),\
                                              P##_PERM16 && v->bits == 4, xs, post);                                   \
    for (b = b0; b < b1; b++)                                                                                          \
        for (r0 = 0; r0 < mr; r0 += m2) {                                                                              \
            m2 = mr - r0 >= P##_MR ? P##_MR : mr - r0 >= 2 ? 2 : 1;                                                    \
            AMXK__Q_DECODERS(v, amxk__q_dec_block__##isa, v, a->st, xf, xr + (size_t)r0 * a->kp, a->kp, xs + r0, b, r0, m2, fast,\
                             post + r0, res)                                                                           \
            for (r = 0; r < m2; r++) P##_QSTORE(a, row + (size_t)(r0 + r), b, res + r * P##_NH);                       \
        }                                                                                                              \
}

#define AMXK__V8_I __m256i
#define AMXK__V8_LOADI(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define AMXK__V8_ZEROI _mm256_setzero_si256()
#define AMXK__V8_ANDI(a, b) _mm256_and_si256(a, b)
#define AMXK__V8_SLLI32(a, n) _mm256_slli_epi32(a, n)
#define AMXK__V8_SRLI32(a, n) _mm256_srli_epi32(a, n)
#define AMXK__V8_SRAI32(a, n) _mm256_srai_epi32(a, n)
#define AMXK__V8_SRLI16(a, n) _mm256_srli_epi16(a, n)
#define AMXK__V8_SRAI16(a, n) _mm256_srai_epi16(a, n)
#define AMXK__V8_SLLI16(a, n) _mm256_slli_epi16(a, n)
#define AMXK__V8_MR 2 /* rows per decode kernel call */
#define AMXK__V8_PERM16 0 /* no 16-entry f32 table lookup (vpermps holds 8) */
#define AMXK__V8_PERMF(t, i) ((void)(i), (t))
#define AMXK__V8_Q4TAB(v, sym, lut) _mm256_setzero_ps()
#define AMXK__V8_SET1I8(c) _mm256_set1_epi8(c)
#define AMXK__V8_SET1I32(c) _mm256_set1_epi32(c)
#define AMXK__V8_SHUFB(a, b) _mm256_shuffle_epi8(a, b)
#define AMXK__V8_CVTI(a) _mm256_cvtepi32_ps(a)
#define AMXK__V8_CASTIF(a) _mm256_castsi256_ps(a)
#define AMXK__V8_BCAST128I(a) _mm256_broadcastsi128_si256(a)
/* the fp8 kernel's NaN / inf test: per byte the largest code & 0x7f, compared with special once per block
   (code & 0x7f >= special iff code & special == special: special is 0x7f or its top five bits) */
#define AMXK__V8_FP8_BAD_T __m256i
#define AMXK__V8_FP8_BAD_0 _mm256_setzero_si256()
#define AMXK__V8_FP8_BAD(bad, c, sp) _mm256_max_epu8(bad, _mm256_and_si256(c, _mm256_set1_epi8(0x7f)))
#define AMXK__V8_FP8_BAD_ANY(bad, sp) (_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(bad, sp), bad)) != 0) /* (not vptest: SIMDe 0.7.4 gets _mm256_testz_si256 wrong) */
#define AMXK__V8_QSTORE(a, row, b, res) amxk__q_store16__avx2(a, row, b, res)
/* Row `row` of block b's 16 outputs (two vectors) through the row epilogue. */
AMXK__INLINE void amxk__q_store16__avx2(const amxk__linear_args *a, size_t row, size_t b, const __m256 *res) {
    float out[AMXK__LIN_NB];
    _mm256_storeu_ps(out, res[0]);
    _mm256_storeu_ps(out + 8, res[1]);
    amxk__linear_store_row(a, row, b * AMXK__LIN_NB, AMXK__MIN((size_t)AMXK__LIN_NB, a->n - b * AMXK__LIN_NB), out);
}
AMXK__QD_FIELDS_DEFINE(avx2, AMXK__V8)
AMXK__QD_KERNELS_DEFINE(avx2, AMXK__V8)

/* ---- small M (1..4 rows per panel) against bf16/fp16 blocks: weights stream from DRAM ---- */

/* One x row against nb (1 or 2) adjacent blocks (bstride elements apart), prefetching
   AMXK__LIN_PREFETCH bytes ahead in each: the sums of amxk__linear__6x16__avx2 with mr = 1. */
AMXK__FORCE_INLINE void amxk__linear__1x32__avx2(const float *xf, size_t kp, const void *wb, size_t bstride,
                                                                          amxk_dtype dt, int nb, float *out) {
    const size_t prow = dt == AMXK_DTYPE_F32 ? 128 : 64; /* bytes per pair row */
    __m256 ev[2][2], od[2][2];
    size_t p;
    int j, h;
    for (j = 0; j < 2; j++) ev[j][0] = ev[j][1] = od[j][0] = od[j][1] = _mm256_setzero_ps();
    for (p = 0; p < kp / 2; p++) {
        const __m256 xe = _mm256_broadcast_ss(xf + p * 2 * AMXK__LIN_MR), xo = _mm256_broadcast_ss(xf + p * 2 * AMXK__LIN_MR + 1);
#pragma GCC unroll 2
        for (j = 0; j < nb; j++) {
            const char *w = (const char *)wb + (size_t)j * bstride;
            _mm_prefetch(w + p * prow + AMXK__LIN_PREFETCH, _MM_HINT_T0);
            if (prow > 64) _mm_prefetch(w + p * prow + 64 + AMXK__LIN_PREFETCH, _MM_HINT_T0);
            ev[j][0] = _mm256_fmadd_ps(xe, amxk__lin_w__avx2(w, dt, p, 0, 0), ev[j][0]);
            ev[j][1] = _mm256_fmadd_ps(xe, amxk__lin_w__avx2(w, dt, p, 1, 0), ev[j][1]);
            od[j][0] = _mm256_fmadd_ps(xo, amxk__lin_w__avx2(w, dt, p, 0, 1), od[j][0]);
            od[j][1] = _mm256_fmadd_ps(xo, amxk__lin_w__avx2(w, dt, p, 1, 1), od[j][1]);
        }
    }
    for (j = 0; j < nb; j++)
        for (h = 0; h < 2; h++) _mm256_storeu_ps(out + j * 16 + h * 8, _mm256_add_ps(ev[j][h], od[j][h]));
}

/* mr (2..4) rows against one block with the prefetch of the kernel above: the same sums as
   amxk__linear__6x16__avx2 (mr = 2: even and odd k in separate accumulators added at the end; mr >=
   3: one accumulator, even then odd k of each pair, k increasing). */
AMXK__FORCE_INLINE void amxk__linear__4x16__avx2(const float *xf, size_t kp, const void *wb, amxk_dtype dt,
                                                                          int mr, float *out) {
    const size_t prow = dt == AMXK_DTYPE_F32 ? 128 : 64;
    __m256 ev[4][2], od[2][2];
    size_t p;
    int r, h;
    for (r = 0; r < 4; r++) ev[r][0] = ev[r][1] = _mm256_setzero_ps();
    od[0][0] = od[0][1] = od[1][0] = od[1][1] = _mm256_setzero_ps();
    for (p = 0; p < kp / 2; p++) {
        const float *xp = xf + p * 2 * AMXK__LIN_MR;
        const __m256 we0 = amxk__lin_w__avx2(wb, dt, p, 0, 0), we1 = amxk__lin_w__avx2(wb, dt, p, 1, 0);
        const __m256 wo0 = amxk__lin_w__avx2(wb, dt, p, 0, 1), wo1 = amxk__lin_w__avx2(wb, dt, p, 1, 1);
        _mm_prefetch((const char *)wb + p * prow + AMXK__LIN_PREFETCH, _MM_HINT_T0);
        if (prow > 64) _mm_prefetch((const char *)wb + p * prow + 64 + AMXK__LIN_PREFETCH, _MM_HINT_T0);
#pragma GCC unroll 4
        for (r = 0; r < mr; r++) {
            const __m256 xe = _mm256_broadcast_ss(xp + 2 * r);
            ev[r][0] = _mm256_fmadd_ps(xe, we0, ev[r][0]);
            ev[r][1] = _mm256_fmadd_ps(xe, we1, ev[r][1]);
        }
#pragma GCC unroll 4
        for (r = 0; r < mr; r++) {
            const __m256 xo = _mm256_broadcast_ss(xp + 2 * r + 1);
            if (mr <= 2) {
                od[r][0] = _mm256_fmadd_ps(xo, wo0, od[r][0]);
                od[r][1] = _mm256_fmadd_ps(xo, wo1, od[r][1]);
            } else {
                ev[r][0] = _mm256_fmadd_ps(xo, wo0, ev[r][0]);
                ev[r][1] = _mm256_fmadd_ps(xo, wo1, ev[r][1]);
            }
        }
    }
    for (r = 0; r < mr; r++)
        for (h = 0; h < 2; h++) _mm256_storeu_ps(out + r * 16 + h * 8, mr <= 2 ? _mm256_add_ps(ev[r][h], od[r][h]) : ev[r][h]);
}

/* Rows [m0, m1) x blocks [b0, b1) of a bf16/fp16 pack on the small-M path (panels of AMXK__LIN_MR
   rows, each against every block): panels of one row two blocks at a time, of 2..4 rows block by
   block with the kernels above, larger panels with amxk__linear_tile__avx2. ws: the x panel. */
/* The decode kernels with a constant row count (mr <= 4) and nb (one row: 1 or 2 blocks, bs bytes apart). */
AMXK__FORCE_INLINE void amxk__linear_small__avx2(const float *xf, size_t kp, const void *wb, size_t bs, amxk_dtype dt, int mr, int nb,
                                                 float *out) {
    switch (mr) {
    case 4: amxk__linear__4x16__avx2(xf, kp, wb, dt, 4, out); break;
    case 3: amxk__linear__4x16__avx2(xf, kp, wb, dt, 3, out); break;
    case 2: amxk__linear__4x16__avx2(xf, kp, wb, dt, 2, out); break;
    default:
        if (nb == 2) amxk__linear__1x32__avx2(xf, kp, wb, bs, dt, 2, out);
        else amxk__linear__1x32__avx2(xf, kp, wb, bs, dt, 1, out);
    }
}
AMXK__PRIV void amxk__linear_rows__avx2(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    float *xf = (float *)ws, out[4 * AMXK__LIN_NB];
    const size_t bs = amxk__lin_blk_bytes(a->wt, a->kp);
    size_t b, i, j;
    for (i = m0; i < m1; i += AMXK__LIN_MR) {
        const int mr = (int)AMXK__MIN((size_t)AMXK__LIN_MR, m1 - i);
        amxk__linear_panel__avx2(a, i, mr, xf);
        if (mr > 4) {
            for (b = b0; b < b1; b++) amxk__linear_tile__avx2(a, xf, amxk__lin_blk(a, b), a->wt, i, mr, b, NULL, 0);
            continue;
        }
        for (b = b0; b < b1; b += mr == 1 ? 2 : 1) {
            const void *wb = amxk__lin_blk(a, b);
            const int nb = mr == 1 && b + 1 < b1 ? 2 : 1;
            if (a->wt == AMXK_DTYPE_F32) amxk__linear_small__avx2(xf, a->kp, wb, bs, AMXK_DTYPE_F32, mr, nb, out);
            else if (a->wt == AMXK_DTYPE_BF16) amxk__linear_small__avx2(xf, a->kp, wb, bs, AMXK_DTYPE_BF16, mr, nb, out);
            else amxk__linear_small__avx2(xf, a->kp, wb, bs, AMXK_DTYPE_F16, mr, nb, out);
            for (j = 0; j < (size_t)(mr == 1 ? nb : mr); j++) { /* out rows: blocks b, b+1 (one row) or rows of block b */
                const size_t n0 = (mr == 1 ? b + j : b) * AMXK__LIN_NB;
                amxk__linear_store_row(a, i + (mr == 1 ? 0 : j), n0, AMXK__MIN((size_t)AMXK__LIN_NB, a->n - n0), out + j * AMXK__LIN_NB);
            }
        }
    }
}

AMXK__STORE_ROWS_DEFINE(avx2, AMXK__V8)
/* Rows [m0, m1) x blocks [b0, b1). Small M: each x panel meets every block straight from the packed
   weights (bf16/fp16: amxk__linear_rows__avx2). Wide (M >= AMXK__LIN_WIDE_M for bf16 / fp16, M >= the
   table's q_wide for quantized packs, amxk__linear_plan's p->wide): all x panels of the
   task are converted first, then each weight block is widened to f32 once and swept by every panel
   (pure f32 FMA, no widening in the inner loop). Both sum each output in the same order. */
AMXK__PRIV void amxk__linear_block__avx2(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    const size_t panel = (size_t)AMXK__LIN_MR * a->kp; /* floats per x panel */
    float *xf = (float *)ws, *wf = (float *)(ws + a->plan->ws_a); /* ws_w follows ws_a */
    size_t i, b;
    if (!a->plan->wide && !a->q) {
        amxk__linear_rows__avx2(a, m0, m1, b0, b1, ws);
        return;
    }
    if (!a->plan->wide) {
        for (i = m0; i < m1; i += AMXK__LIN_MR) {
            int mr = (int)AMXK__MIN((size_t)AMXK__LIN_MR, m1 - i);
            amxk__linear_panel__avx2(a, i, mr, xf);
            amxk__linear_q_panel__avx2(a, xf, wf, i, mr, b0, b1); /* wf: the x group sums */
        }
        return;
    }
    for (i = m0; i < m1; i += AMXK__LIN_MR)
        amxk__linear_panel__avx2(a, i, (int)AMXK__MIN((size_t)AMXK__LIN_MR, m1 - i), xf + (i - m0) / AMXK__LIN_MR * panel);
    for (b = b0; b < b1; b++) {
        /* the next block is prefetched into L2 during the first panel's sweep (weights from DRAM) */
        const char *next = b + 1 >= b1 ? NULL : a->q ? (const char *)(a->q->data + (b + 1) * a->q->blk_bytes)
                                                     : (const char *)amxk__lin_blk(a, b + 1);
        const size_t next_bytes = a->q ? a->q->blk_bytes : amxk__lin_blk_bytes(a->wt, a->kp);
        const float *wb = wf; /* f32 packs: the block itself (already the widened layout) */
        if (a->q) amxk__q_block_f32__avx2(a->q, b, wf);
        else if (a->wt == AMXK_DTYPE_F32) wb = (const float *)amxk__lin_blk(a, b);
        else amxk__linear_widen__avx2((const uint16_t *)amxk__lin_blk(a, b), a->wt, a->kp, wf);
        for (i = m0; i < m1; i += AMXK__LIN_MR)
            amxk__linear_tile__avx2(a, xf + (i - m0) / AMXK__LIN_MR * panel, wb, AMXK_DTYPE_F32, i,
                                    (int)AMXK__MIN((size_t)AMXK__LIN_MR, m1 - i), b, i == m0 ? next : NULL, next_bytes);
    }
}

AMXK__TARGET_END
#endif /* AMXK__HAS_AVX2 */

/* ---- w8a8 (amxk_linear_q8) ---- */

#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN
/* The w8a8 kernel of the AVX2 level, in two instantiations: AVX2 (vpmaddubsw / vpmaddwd) and, on CPUs
   with AVX-VNNI, one VEX vpdpbusd for each vpmaddubsw + vpmaddwd pair (exact int32: no 16-bit step).
   DOT8(s, u, x, ones): s += 4-byte dot products into int32 lanes (ones: vpmaddwd's 16-bit ones);
   DOTU(h, s, u, x): the same for fields (AVX2: into the 16-bit run h); FLUSH(s, h, ones): h into s.
   MR rows (<= 4) x 16 columns of block b; per weight group, int32 lanes (one per column). bits 8:
   signed weights (sign trick). bits 4 / 2: unsigned fields u = q (asym) or q + 2^(b-1) (sym, an XOR
   of each field's top bit); the vpmaddubsw pairs (|u0 x0 + u1 x1| <= 2 * (2^b - 1) * 127) are summed
   in 16-bit lanes for 8 (int4) or 32 (int2) steps, which cannot overflow, before one vpmaddwd widens
   them; then t = sum u x - z sum x (sym: exactly, in int32). acc += sx * sw * t in f32. */
/* x's 4 bytes at p broadcast to 8 lanes (xu, a compile-time constant: U8 codes, XORed to int8). */
AMXK__FORCE_INLINE __m256i amxk__q8_xb__avx2(const int8_t *p, int xu) {
    int32_t x4;
    memcpy(&x4, p, 4);
    return _mm256_set1_epi32(xu ? x4 ^ (int32_t)0x80808080u : x4);
}
/* The end of a weight group for one row: t from the int32 sums s[0..1] (8 columns each) less the x
   sum (sym int4 / int2: 2^(b-1) sum x in int32, exact; asym: z * sum x in f32; int8: none), then
   acc += (sx * sw) * t. The x sum: the task table's xs_tab (pre) or the kernel's lanes xs_vec. */
AMXK__FORCE_INLINE void amxk__q8_group__avx2(int bits, int asym, int pre, float sx1, int32_t xs_tab, __m256i xs_vec, const __m256i *s,
                                             const __m256 *sw, const __m256 *zw, __m256 *acc) {
    const __m256 sx = _mm256_set1_ps(sx1);
    __m256 t0, t1;
    if (bits != 8 && !asym) {
        const __m256i xs = _mm256_slli_epi32(pre ? _mm256_set1_epi32(xs_tab) : xs_vec, bits - 1);
        t0 = _mm256_cvtepi32_ps(_mm256_sub_epi32(s[0], xs));
        t1 = _mm256_cvtepi32_ps(_mm256_sub_epi32(s[1], xs));
    } else if (bits != 8) {
        const __m256 xs = pre ? _mm256_set1_ps((float)xs_tab) : _mm256_cvtepi32_ps(xs_vec);
        t0 = _mm256_fnmadd_ps(zw[0], xs, _mm256_cvtepi32_ps(s[0]));
        t1 = _mm256_fnmadd_ps(zw[1], xs, _mm256_cvtepi32_ps(s[1]));
    } else {
        t0 = _mm256_cvtepi32_ps(s[0]);
        t1 = _mm256_cvtepi32_ps(s[1]);
    }
    acc[0] = _mm256_fmadd_ps(_mm256_mul_ps(sx, sw[0]), t0, acc[0]);
    acc[1] = _mm256_fmadd_ps(_mm256_mul_ps(sx, sw[1]), t1, acc[1]);
}
/* The kernel KNAME over the dot-product words DOT8 / DOTU / FLUSH (above), and KNAME##_rows: its
   instance of mr = min(4, rows) rows (mr a constant in each call). Group sums per row r: s[r][0..1]
   (int32), the 16-bit runs h[r][0..1], the kernel's x sums xsum[r] (int4 / int2 without a table). */
#define AMXK__Q8_AVX2_KERNEL(KNAME, DOT8, DOTU, FLUSH)                                                   \
    AMXK__FORCE_INLINE void KNAME(const amxk__q8_args *a, size_t row, int mr, size_t b, int bits, int pre, const int32_t *xsum_tab, \
                                  const float *sx_tab, size_t m0, int xu) {                              \
        const amxk__qview *v = a->w;                                                                     \
        const uint8_t *blk = v->data + b * v->blk_bytes;                                                 \
        const char *pf = (const char *)blk + a->st->q_pf; /* the prefetch address and kind, read once */ \
        const int t1 = a->st->q_t1;                                                                      \
        const __m256i ones = _mm256_set1_epi16(1), ones8 = _mm256_set1_epi8(1);                         \
        const int per = 8 / bits, span = 4 * per, flush = bits == 4 ? 4 : 8; /* 64-byte rows per 16-bit run */ \
        const __m256i fmask = _mm256_set1_epi8((char)((1 << bits) - 1));                                 \
        const __m256i flip = _mm256_set1_epi8((char)(bits == 4 ? 0x88 : 0xaa)); /* top bit of every field */ \
        __m256 acc[4][2];                                                                                \
        float out[AMXK__LIN_NB];                                                                         \
        size_t g, rg, rc;                                                                                \
        int r, f;                                                                                        \
        for (r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();                             \
        for (g = 0; g < v->nbk; g++) {                                                                   \
            const size_t rg0 = g * v->bk / (size_t)span, rg1 = (g + 1) * v->bk / (size_t)span;           \
            __m256i s[4][2], xsum[4];                                                                    \
            __m256 sw[2], zw[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};                            \
            for (r = 0; r < 4; r++) s[r][0] = s[r][1] = xsum[r] = _mm256_setzero_si256();                \
            for (rc = rg0; rc < rg1; rc += (size_t)flush) {                                              \
                __m256i h[4][2];                                                                         \
                for (r = 0; r < 4; r++) h[r][0] = h[r][1] = _mm256_setzero_si256();                      \
                for (rg = rc; rg < AMXK__MIN(rg1, rc + (size_t)flush); rg++) {                           \
                    __m256i w0 = _mm256_loadu_si256((const __m256i *)(blk + rg * 64));                   \
                    __m256i w1 = _mm256_loadu_si256((const __m256i *)(blk + rg * 64 + 32));              \
                    AMXK__Q_PF(t1, pf + rg * 64);                                                        \
                    if (bits == 8) {                                                                     \
                        const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);                \
                        _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                               \
                            const __m256i xb = amxk__q8_xb__avx2(a->xq + (row + (size_t)r) * a->ldq + rg * 4, xu); \
                            DOT8(s[r][0], a0, _mm256_sign_epi8(xb, w0), ones);                           \
                            DOT8(s[r][1], a1, _mm256_sign_epi8(xb, w1), ones);                           \
                        }                                                                                \
                        continue;                                                                        \
                    }                                                                                    \
                    if (!v->asym) w0 = _mm256_xor_si256(w0, flip), w1 = _mm256_xor_si256(w1, flip);      \
                    _Pragma("GCC unroll 4") for (f = 0; f < per; f++) { /* field f: columns rg*span + 4f .. +3 */ \
                        const __m256i u0 = _mm256_and_si256(_mm256_srli_epi16(w0, f * bits), fmask);     \
                        const __m256i u1 = _mm256_and_si256(_mm256_srli_epi16(w1, f * bits), fmask);     \
                        _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                               \
                            const __m256i xb = amxk__q8_xb__avx2(a->xq + (row + (size_t)r) * a->ldq + rg * (size_t)span + 4 * (size_t)f, xu); \
                            DOTU(h[r][0], s[r][0], u0, xb);                                              \
                            DOTU(h[r][1], s[r][1], u1, xb);                                              \
                            if (!pre) DOT8(xsum[r], ones8, xb, ones);                                    \
                        }                                                                                \
                    }                                                                                    \
                }                                                                                        \
                if (bits != 8)                                                                           \
                    _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                                   \
                        FLUSH(s[r][0], h[r][0], ones);                                                   \
                        FLUSH(s[r][1], h[r][1], ones);                                                   \
                    }                                                                                    \
            }                                                                                            \
            amxk__q_grid16__avx2(v, v->scales, b, g, sw);                                                \
            if (v->asym) amxk__q_grid16__avx2(v, v->zeros, b, g, zw);                                    \
            _Pragma("GCC unroll 4") for (r = 0; r < mr; r++) {                                           \
                const size_t ti = (row + (size_t)r - m0) * v->nbk + g; /* the task table's entry */      \
                amxk__q8_group__avx2(bits, v->asym, pre, sx_tab ? sx_tab[ti] : amxk__q8_xscale(a, row + (size_t)r, g * v->bk), \
                                     pre ? xsum_tab[ti] : 0, xsum[r], s[r], sw, zw, acc[r]);             \
            }                                                                                            \
        }                                                                                                \
        for (r = 0; r < mr; r++) {                                                                       \
            _mm256_storeu_ps(out, acc[r][0]);                                                            \
            _mm256_storeu_ps(out + 8, acc[r][1]);                                                        \
            amxk__q8_store(a, row + (size_t)r, b, out);                                                  \
        }                                                                                                \
    }                                                                                                    \
    AMXK__FORCE_INLINE void KNAME##_rows(const amxk__q8_args *a, size_t row, size_t rows, size_t b, int bits, int pre, \
                                         const int32_t *xsum_tab, const float *sx_tab, size_t m0, int xu) { \
        switch (AMXK__MIN((size_t)4, rows)) {                                                            \
        case 4: KNAME(a, row, 4, b, bits, pre, xsum_tab, sx_tab, m0, xu); break;                         \
        case 3: KNAME(a, row, 3, b, bits, pre, xsum_tab, sx_tab, m0, xu); break;                         \
        case 2: KNAME(a, row, 2, b, bits, pre, xsum_tab, sx_tab, m0, xu); break;                         \
        default: KNAME(a, row, 1, b, bits, pre, xsum_tab, sx_tab, m0, xu); break;                        \
        }                                                                                                \
    }
/* The x scale and (int4 / int2) the x sum per (row, weight group) of rows [m0, m1) into tab / sxt when
   they fit (1024 entries: decode), once per task instead of once per block inside the kernel; 0 when
   they do not. */
AMXK__PRIV int amxk__q8_xtab__avx2(const amxk__q8_args *a, size_t m0, size_t m1, int32_t *tab, float *sxt) {
    size_t r, g, kk;
    if ((m1 - m0) * a->w->nbk > 1024) return 0;
    for (r = m0; r < m1; r++)
        for (g = 0; g < a->w->nbk; g++) {
            int32_t sum = 0;
            if (a->w->bits < 8)
                for (kk = g * a->w->bk; kk < (g + 1) * a->w->bk; kk++) sum += amxk__q8_x(a, r, kk);
            tab[(r - m0) * a->w->nbk + g] = sum;
            sxt[(r - m0) * a->w->nbk + g] = amxk__q8_xscale(a, r, g * a->w->bk);
        }
    return 1;
}
/* The table's q8_block BNAME over the kernel KNAME: BNAME##_i8 / _u8 (xu a compile-time constant: I8
   calls read x without the XOR), each with the instances of every bit width and table use. */
#define AMXK__Q8_AVX2_BLOCK(BNAME, KNAME)                                                                \
    AMXK__FORCE_INLINE void BNAME##_x(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1, int xu) { \
        int32_t tab[1024];                                                                               \
        float sxt[1024];                                                                                 \
        const int pre = amxk__q8_xtab__avx2(a, m0, m1, tab, sxt), bits = a->w->bits;                     \
        const float *st = pre ? sxt : NULL;                                                              \
        size_t i, b;                                                                                     \
        for (b = b0; b < b1; b++)                                                                        \
            for (i = m0; i < m1; i += 4) {                                                               \
                if (bits == 8) KNAME##_rows(a, i, m1 - i, b, 8, 0, NULL, st, m0, xu);                                  \
                else if (bits == 4 && pre) KNAME##_rows(a, i, m1 - i, b, 4, 1, tab, st, m0, xu);                       \
                else if (bits == 4) KNAME##_rows(a, i, m1 - i, b, 4, 0, NULL, st, m0, xu);                             \
                else if (pre) KNAME##_rows(a, i, m1 - i, b, 2, 1, tab, st, m0, xu);                                    \
                else KNAME##_rows(a, i, m1 - i, b, 2, 0, NULL, st, m0, xu);                                            \
            }                                                                                            \
    }                                                                                                    \
    __attribute__((noinline)) AMXK__PRIV void BNAME##_i8(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1) { \
        BNAME##_x(a, m0, m1, b0, b1, 0);                                                                 \
    }                                                                                                    \
    __attribute__((noinline)) AMXK__PRIV void BNAME##_u8(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1) { \
        BNAME##_x(a, m0, m1, b0, b1, 1);                                                                 \
    }                                                                                                    \
    AMXK__PRIV void BNAME(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1) {          \
        if (a->xflip) BNAME##_u8(a, m0, m1, b0, b1);                                                     \
        else BNAME##_i8(a, m0, m1, b0, b1);                                                              \
    }

#define AMXK__Q8_DOT8__AVX2(s, u, x, ones) ((s) = _mm256_add_epi32((s), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (x)), (ones))))
#define AMXK__Q8_DOTU__AVX2(h, s, u, x) ((h) = _mm256_add_epi16((h), _mm256_maddubs_epi16((u), (x))))
#define AMXK__Q8_FLUSH__AVX2(s, h, ones) ((s) = _mm256_add_epi32((s), _mm256_madd_epi16((h), (ones))))
AMXK__Q8_AVX2_KERNEL(amxk__linear_q8__4x16__avx2, AMXK__Q8_DOT8__AVX2, AMXK__Q8_DOTU__AVX2, AMXK__Q8_FLUSH__AVX2)
AMXK__Q8_AVX2_BLOCK(amxk__linear_q8_block__avx2, amxk__linear_q8__4x16__avx2)

/* ---- w8a8 on AMX: the vector level's pieces (AVX2; the AVX-512 levels' q8_bprep too) ---- */

/* Sum of n bytes at p (n a multiple of 4) as int8 values after XOR with flip (0 or 0x80808080). */
AMXK__INLINE int32_t amxk__q8_xsum__avx2(const int8_t *p, size_t n, uint32_t flip) {
    const __m256i ones = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1), fv = _mm256_set1_epi32((int)flip);
    __m256i s = _mm256_setzero_si256();
    __m128i t;
    int32_t r;
    size_t i;
    for (i = 0; i + 32 <= n; i += 32) {
        const __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(p + i)), fv);
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, x), ones16)); /* |pair sum| <= 256: no saturation */
    }
    t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    r = _mm_cvtsi128_si32(t);
    for (; i < n; i += 4) {
        uint32_t u;
        memcpy(&u, p + i, 4);
        u ^= flip;
        r += (int8_t)(u & 0xffu) + (int8_t)((u >> 8) & 0xffu) + (int8_t)((u >> 16) & 0xffu) + (int8_t)(u >> 24);
    }
    return r;
}

/* q8_bprep (amxk__q8_bprep__scalar's contract) at 32 bytes: fields by 16-bit shifts and a byte mask,
   sign-extended by (f ^ h) - h; column sums of 4 bytes by vpmaddubsw (ones, w) and vpmaddwd. */
AMXK__PRIV void amxk__q8_bprep__avx2(const amxk__qview *v, size_t b, size_t k0, size_t k1, int8_t *dst, int32_t *corr, size_t ldc) {
    const int bits = v->bits;
    const size_t per = (size_t)(8 / bits), qg = v->bk / 4, q0 = k0 / 4, nq = (k1 - k0) / 4;
    const uint8_t *blk = v->data + b * v->blk_bytes;
    const __m256i mask = _mm256_set1_epi8((char)((1 << bits) - 1)), h = _mm256_set1_epi8((char)(1 << (bits - 1)));
    const __m256i ones = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    size_t q;
    for (q = 0; q < nq; q++) { /* output row q: k quad q0 + q, field (q0 + q) % per of packed row (q0 + q) / per */
        const uint8_t *row = blk + ((q0 + q) / per) * 64;
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)row), w1 = _mm256_loadu_si256((const __m256i *)(const void *)(row + 32));
        if (bits < 8) {
            const __m128i sh = _mm_cvtsi32_si128((int)((q0 + q) % per) * bits);
            w0 = _mm256_and_si256(_mm256_srl_epi16(w0, sh), mask), w1 = _mm256_and_si256(_mm256_srl_epi16(w1, sh), mask);
            if (!v->asym) w0 = _mm256_sub_epi8(_mm256_xor_si256(w0, h), h), w1 = _mm256_sub_epi8(_mm256_xor_si256(w1, h), h);
            _mm256_store_si256((__m256i *)(void *)(dst + q * 64), w0);
            _mm256_store_si256((__m256i *)(void *)(dst + q * 64 + 32), w1);
        }
        if (corr) {
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, w0), ones16));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, w1), ones16));
            if ((q + 1) % qg == 0) { /* end of a group: -128 * the sums */
                int32_t *c = corr + (q / qg) * ldc;
                _mm256_storeu_si256((__m256i *)(void *)c, _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(s0, 7)));
                _mm256_storeu_si256((__m256i *)(void *)(c + 8), _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(s1, 7)));
                s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
            }
        }
    }
}

/* The 8-lane words of this module's width-generic kernels (AMXK__Q8_EPI_DEFINE, AMXK__ACTQ_DEFINE),
   beside amxk.h's AMXK__V8_* (n: lanes left, at least 8 at this width). */
#define AMXK__V8_LDI(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define AMXK__V8_ADDI(a, b) _mm256_add_epi32(a, b)
#define AMXK__V8_LD(p) _mm256_loadu_ps(p)
#define AMXK__V8_ST(p, v) _mm256_storeu_ps(p, v)
#define AMXK__V8_YSTORE(a, row, n0, cnt, v) amxk__q8_ystore__avx2((a), (row), (n0), (cnt), (v))
#define AMXK__V8_LOADN(p, t, n) amxk__vload__avx2((p), (t))
#define AMXK__V8_NLE(v, c) _mm256_movemask_ps(_mm256_cmp_ps((v), (c), _CMP_NLE_UQ))
#define AMXK__V8_ABSBITS(v) _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff))
#define AMXK__V8_MAXU(a, b) _mm256_max_epu32(a, b)
#define AMXK__V8_HMAXU(v) amxk__hmaxu__avx2(v)
#define AMXK__V8_STQ8(p, v, f, n) amxk__stq8__avx2((p), (v), (f))

/* q8_epi (amxk__q8_epi__scalar's contract) at V lanes (AMXK__Q8_EPI_DEFINE(isa, V)): per 16-column
   block and V columns one int32 load (plus the U8 corrections), vcvtdq2ps, (asymmetric: vfnmadd of
   z * xsum), p = sx * sw, vfmadd into acc; the last group goes out through V_YSTORE (bias, one
   rounding, the columns < N). */
#define AMXK__Q8_EPI_DEFINE(isa, V)                                                                      \
    AMXK__PRIV void amxk__q8_epi__##isa(const amxk__q8_args *a, size_t row, size_t rows, size_t b, int nb, size_t g, \
                                        const int32_t *c, const int32_t *corr, float *acc, int first, int last) {      \
        const amxk__qview *v = a->w;                                                                     \
        const size_t xg = g * v->bk / a->ag;                                                             \
        size_t r, h, j;                                                                                  \
        for (r = 0; r < rows; r++) {                                                                     \
            const int8_t *xq = a->xq + (row + r) * a->ldq + g * v->bk;                                   \
            const V##_T sx = V##_SET1(amxk__q8_xscale_g(a, row + r, xg));                                \
            const V##_T xs = V##_SET1(v->asym ? (float)amxk__q8_xsum__avx2(xq, v->bk, a->xflip) : 0.0f); \
            for (h = 0; h < (size_t)nb; h++) {                                                           \
                const size_t n0 = (b + h) * AMXK__LIN_NB, gi = amxk__q_gidx(v, n0, g);                   \
                for (j = 0; j < AMXK__LIN_NB; j += V##_N) {                                              \
                    const size_t e = h * AMXK__LIN_NB + j;                                               \
                    float *ac = acc + r * AMXK__Q8A_LD + e;                                              \
                    V##_I ci = V##_LDI(c + r * AMXK__Q8A_LD + e);                                        \
                    V##_T t, p, s;                                                                       \
                    if (corr) ci = V##_ADDI(ci, V##_LDI(corr + e));                                      \
                    t = V##_CVTI(ci);                                                                    \
                    if (v->asym) t = V##_FNMADD(V##_LD(v->zeros + gi + j), xs, t);                       \
                    p = V##_MUL(sx, V##_LD(v->scales + gi + j)); /* the grid holds 16 entries per block */ \
                    s = first ? V##_MUL(p, t) : V##_FMADD(p, t, V##_LD(ac));                             \
                    if (!last) V##_ST(ac, s);                                                            \
                    else if (n0 + j < a->n) V##_YSTORE(a, row + r, n0 + j, a->n - n0 - j, s);            \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }
/* y[row][n0 .. n0 + min(n, 8)) = v (+ bias), one rounding to y's dtype: the values of amxk__q8_store */
AMXK__FORCE_INLINE void amxk__q8_ystore__avx2(const amxk__q8_args *a, size_t row, size_t n0, size_t n, __m256 v) {
    float out[8];
    size_t j;
    if (n >= 8) {
        amxk__vstore__avx2((char *)a->y + (row * a->ldy + n0) * amxk_dtype_size(a->yt), a->yt,
                           a->bias ? _mm256_add_ps(v, _mm256_loadu_ps(a->bias + n0)) : v);
        return;
    }
    _mm256_storeu_ps(out, v); /* the ragged columns: the row store's values */
    for (j = 0; j < n; j++) amxk__st_elem(a->y, a->yt, row * a->ldy + n0 + j, out[j] + (a->bias ? a->bias[n0 + j] : 0.0f));
}
AMXK__Q8_EPI_DEFINE(avx2, AMXK__V8)
AMXK__TARGET_END
#endif

#if AMXK__HAS_AVXVNNI
AMXK__TARGET_AVXVNNI_BEGIN
#define AMXK__Q8_DOT8__AVXVNNI(s, u, x, ones) ((void)(ones), (s) = AMXK__DPBUSD256((s), (u), (x)))
#define AMXK__Q8_DOTU__AVXVNNI(h, s, u, x) ((void)(h), (s) = AMXK__DPBUSD256((s), (u), (x)))
#define AMXK__Q8_FLUSH__AVXVNNI(s, h, ones) ((void)(s), (void)(h), (void)(ones))
AMXK__Q8_AVX2_KERNEL(amxk__linear_q8__4x16__avxvnni, AMXK__Q8_DOT8__AVXVNNI, AMXK__Q8_DOTU__AVXVNNI, AMXK__Q8_FLUSH__AVXVNNI)
AMXK__Q8_AVX2_BLOCK(amxk__linear_q8_block__avxvnni, amxk__linear_q8__4x16__avxvnni)
AMXK__TARGET_END
#endif

/* ---- activation quantization ---- */


#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN
/* The group kernel of amxk_quantize_act at V lanes (AMXK__ACTQ_DEFINE(isa, V), V: AMXK__V8 or
   AMXK__V16): int8 / uint8 codes of one group of row `row` from k0 (group % 8 == 0; 16 lanes: the
   last vector masked when group % 16 == 8) with the scalar loop's exact values: amax (exact in any
   order; as the largest |x| bit pattern, which also finds NaN / inf), q = rne(t), t = x / s (IEEE
   division, s = amax / 127), clamped to +-127. Returns 0 without writing anything for E4M3, other
   group sizes and groups holding a NaN or infinity (the scalar loop then defines the result).
   Division-free: t' = x * r, r = 1 / s (one division a group), gives the same q unless t' is within
   2^-12 of a half-integer, where the vector takes vdivps. For s normal (else r = NaN: every vector divides),
   r = (1/s)(1+d1), t' = x r (1+d2) (or +-2^-150 below the normal range), |d| <= u = 2^-24, so
   |t' - x/s| <= |x/s| (2u + u^2) + 2^-150 and |t - x/s| <= u |x/s| + 2^-150; s >= (amax/127)(1-u)
   gives |x/s| <= 127 / (1-u), so |t' - t| < 2^-14 (t, t' strictly between the same half-integers,
   off the flagged band) and |t'| < 127.5 (no clamp on this path). Per-width words: V_N lanes,
   V_LOADN (n lanes of dtype t, as f32), V_ABSBITS (|v|'s bits, int lanes), V_MAXU (unsigned),
   V_HMAXU (the largest lane), V_NLE (a lane of v not <= c), V_STQ8 (the rounded values as int8,
   XORed with f). xt: a constant at the call site (one loop per dtype). */
#define AMXK__ACTQ_DEFINE(isa, V)                                                                        \
    AMXK__FORCE_INLINE void amxk__actq_vec__##isa(const char *x, int8_t *d, amxk_dtype xt, size_t n, float sc, float rs, \
                                                  int f) {                                               \
        const V##_T xv = V##_LOADN(x, xt, n), t = V##_MUL(xv, V##_SET1(rs));                             \
        V##_T q = V##_ROUND(t);                                                                          \
        (void)n; /* 8 lanes: whole vectors */                                                           \
        if (V##_NLE(V##_ABS(V##_SUB(t, q)), V##_SET1(0.499755859375f))) /* 0.5 - 2^-12, or NaN */       \
            q = V##_MAX(V##_MIN(V##_ROUND(V##_DIV(xv, V##_SET1(sc))), V##_SET1(127.0f)), V##_SET1(-127.0f)); \
        V##_STQ8(d, q, f, n);                                                                            \
    }                                                                                                    \
    AMXK__FORCE_INLINE int amxk__actq_run__##isa(const amxk__actq_args *a, size_t row, size_t k0, float *scale, amxk_dtype xt) { \
        const size_t es = amxk_dtype_size(xt), n = a->group;                                             \
        const char *x = (const char *)a->x + (row * a->ldx + k0) * es;                                   \
        int8_t *d = (int8_t *)a->q + row * a->ldq + k0;                                                  \
        const int f = a->ot == AMXK_DTYPE_U8 ? 0x80 : 0;                                                 \
        V##_I vm = V##_ZEROI;                                                                            \
        uint32_t am;                                                                                     \
        float sc, rs;                                                                                    \
        size_t j;                                                                                        \
        for (j = 0; j + V##_N <= n; j += V##_N) vm = V##_MAXU(vm, V##_ABSBITS(V##_LOADN(x + j * es, xt, V##_N))); \
        if (j < n) vm = V##_MAXU(vm, V##_ABSBITS(V##_LOADN(x + j * es, xt, n - j)));                    \
        if ((am = V##_HMAXU(vm)) >= 0x7f800000u) return 0; /* NaN or inf */                            \
        sc = amxk__bits_f32(am) / 127.0f;                                                                \
        if (!(sc > 0.0f)) sc = 1.0f;                                                                     \
        rs = sc >= 1.17549435e-38f ? 1.0f / sc : amxk__bits_f32(0x7fc00000u); /* NaN: every vector divides */ \
        for (j = 0; j + V##_N <= n; j += V##_N) amxk__actq_vec__##isa(x + j * es, d + j, xt, V##_N, sc, rs, f); \
        if (j < n) amxk__actq_vec__##isa(x + j * es, d + j, xt, n - j, sc, rs, f);                       \
        *scale = sc;                                                                                     \
        return 1;                                                                                        \
    }                                                                                                    \
    AMXK__PRIV int amxk__actq_group__##isa(const amxk__actq_args *a, size_t row, size_t k0, float *scale) { \
        if (a->ot == AMXK_DTYPE_FP8_E4M3 || a->group % 8) return 0;                                      \
        if (a->xt == AMXK_DTYPE_BF16) return amxk__actq_run__##isa(a, row, k0, scale, AMXK_DTYPE_BF16);   \
        if (a->xt == AMXK_DTYPE_F16) return amxk__actq_run__##isa(a, row, k0, scale, AMXK_DTYPE_F16);     \
        return amxk__actq_run__##isa(a, row, k0, scale, AMXK_DTYPE_F32);                                 \
    }
/* The largest of v's unsigned lanes (V_HMAXU of AMXK__ACTQ_DEFINE), at one width. */
#define AMXK__HMAX_DEFINE(isa, P)                                                                        \
AMXK__FORCE_INLINE uint32_t amxk__hmaxu__##isa(P##_I v) {                                                \
    uint32_t lanes[P##_N], m = 0;                                                                        \
    int i;                                                                                               \
    memcpy(lanes, &v, sizeof lanes);                                                                     \
    for (i = 0; i < P##_N; i++) m = AMXK__MAX(m, lanes[i]);                                              \
    return m;                                                                                            \
}
AMXK__HMAX_DEFINE(avx2, AMXK__V8)
AMXK__FORCE_INLINE void amxk__stq8__avx2(int8_t *p, __m256 v, int f) {
    __m256i q = _mm256_cvtps_epi32(v);
    q = _mm256_packs_epi16(_mm256_packs_epi32(q, q), q); /* bytes 0-3 of each 128-bit lane */
    q = _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    q = _mm256_xor_si256(q, _mm256_set1_epi8((char)f));
    _mm_storel_epi64((__m128i *)(void *)p, _mm256_castsi256_si128(q));
}
AMXK__ACTQ_DEFINE(avx2, AMXK__V8)
AMXK__TARGET_END
#endif

// >>avx512 ---------------------------------------------------------------------------------------
/* AVX-512 kernels (levels avx512 up): quantized decode at 16 lanes, activation quantization; the
   w8a8 / w4a8 / w2a8 kernel on 512-bit vpdpbusd (avx512_vnni up); the bf16 linear on vdpbf16ps straight
   on the packed pairs (avx512_bf16 up). Everything else runs the AVX2 kernels (amxk__pack_kernels_for). */

#ifndef AMXK__LIN_MR16
#define AMXK__LIN_MR16 8 /* AVX-512 bf16 prefill tile: rows (<= 8) ... */
#ifndef AMXK__LIN_DEC16_M
#define AMXK__LIN_DEC16_M 12 /* AVX-512 fp32 FMA tiles, bf16 packs: up to this many rows of a call's chunk run the
                                decode tiles straight on the packed pairs (4-row panels, each block group read
                                once from memory, then from L2), not widened f32 staging + prefill tiles */
#endif
/* x panels amxk__linear_tiles16__avx512 builds for a chunk of up to mc rows (8-row prefill panels, or
   the decode tiles' 4-row ones) */
#define AMXK__LIN16_PANELS(mc) AMXK__MAX(AMXK__CEIL_DIV((mc), (size_t)AMXK__LIN_MR16), AMXK__CEIL_DIV(AMXK__MIN((mc), (size_t)AMXK__LIN_DEC16_M), (size_t)4))
#endif
#ifndef AMXK__LIN_NR16
#define AMXK__LIN_NR16 3 /* ... x 16-column blocks (<= 4; MR16 * NR16 <= 24 accumulators) */
#endif
#ifndef AMXK__LIN_DNR16
#define AMXK__LIN_DNR16 4 /* decode (M <= 4): blocks (weight streams) per tile (<= 4) */
#endif
#ifndef AMXK__LIN_NC16
#define AMXK__LIN_NC16 96 /* prefill: most column blocks per task of the AVX-512 tables (amxk__linear_grid16__avx512) */
#endif
#ifndef AMXK__LIN_XP16_BYTES
#define AMXK__LIN_XP16_BYTES (4u << 20) /* prefill: most bytes of a task's x panels (f32 units: 4 per k) */
#endif
#ifndef AMXK__LIN_DPF_ROWS
/* decode tiles: each weight stream prefetched into L2 (prefetcht1) this many 64-byte rows ahead (8 KiB), every
   amxk__stream lin_pfr rows */
#define AMXK__LIN_DPF_ROWS 128
#endif
#define AMXK__LIN_XS16 8 /* x panels: 32-bit units per step (rows past the panel's are zero, never read) */
#ifndef AMXK__LIN_TALL16
/* bf16 prefill (vdpbf16ps straight on the pack): the first 16 rows of a task run 16-row x 1-block
   tiles (1; 0: the 8-row tiles only), the weight stream prefetched into L2 every row ... */
#define AMXK__LIN_TALL16 1
#endif
#ifndef AMXK__LIN_TPF_ROWS
#define AMXK__LIN_TPF_ROWS 256 /* ... this many 64-byte rows (16 KiB) ahead */
#endif
#ifndef AMXK__LIN_PPF
#define AMXK__LIN_PPF 1 /* prefill tiles: stream the next group's packed blocks into L2 during a group's first tile */
#endif
#ifndef AMXK__LIN_TPF_HINT
#define AMXK__LIN_TPF_HINT _MM_HINT_T1
#endif

/* The tile kernel of the AVX-512 linear, one body for every level (instantiated inside each level's
   target region): mr x nr 16-column blocks of y (mr <= 8, nr <= 4, or the tall tile: mr 16, nr 1;
   compile-time constants at the call sites) over steps [0, ns) (ns even): per step q, nr weight vectors
   LOADW(w, j * bstride, q, dt) against mr broadcast x units BCAST(xp + (r / 8) pst + q * xs + r % 8)
   (xp: a unit-major panel with xs units per step: AMXK__LIN_XS16 from amxk__xpanel32__avx512, or mr
   for decode tiles of mr <= 2 rows from amxk__xpanel_dec__avx512; rows 8-15 of the tall tile from the
   next 8-row panel, pst units on), acc = OP(acc, w, x). A step is a pair row for vdpbf16ps or one k
   for fp32 FMA. Each output accumulates from zero, steps in increasing order; split: even and odd
   steps in separate accumulators, added at the end. pf > 0 (decode tiles, a power of two): every pf
   steps, each weight stream's 64-byte row AMXK__LIN_DPF_ROWS rows ahead into L2 (prefetcht1; why:
   docs/notes/pack.md; past a stream's end: the next tile's stream j, blocks being bstride apart; may
   read past the pack: a prefetch does not fault). pf -1 (the tall tile): every step,
   AMXK__LIN_TPF_ROWS steps ahead (AMXK__LIN_TPF_HINT). pfl > 0 (prefill): every 2 steps, the next pfl
   64-byte lines from pfx on into L2 (the next group's packed blocks, streamed while this tile runs). */
#define AMXK__LIN16_KERNEL(NAME, W_T, X_T, LOADW, BCAST, OP, ADDRW)                                      \
    AMXK__FORCE_INLINE void NAME(const uint32_t *xp, size_t ns, const void *w, size_t bstride,  \
                                                          amxk_dtype dt, int mr, int nr, int split, int pf, size_t xs,    \
                                                          size_t pst, const char *pfx, int pfl, __m512 *out) {         \
        __m512 acc[2][16][4];                                                                            \
        size_t p;                                                                                        \
        int r, j, s;                                                                                     \
        (void)dt;                                                                                        \
        _Pragma("GCC unroll 16") for (r = 0; r < mr; r++)                                                \
            _Pragma("GCC unroll 4") for (j = 0; j < nr; j++) acc[0][r][j] = acc[1][r][j] = _mm512_setzero_ps(); \
        for (p = 0; p < ns; p += 2) {                                                                    \
            for (s = 0; s < pfl; s++) _mm_prefetch(pfx + ((p / 2) * (size_t)pfl + (size_t)s) * 64, _MM_HINT_T1); \
            _Pragma("GCC unroll 2") for (s = 0; s < 2; s++) {                                            \
                const size_t q = p + (size_t)s;                                                          \
                W_T wv[4];                                                                               \
                _Pragma("GCC unroll 4") for (j = 0; j < nr; j++) wv[j] = LOADW(w, (size_t)j * bstride, q, dt); \
                if (pf < 0)                                                                                      \
                    _Pragma("GCC unroll 4") for (j = 0; j < nr; j++)                                             \
                        _mm_prefetch((const char *)ADDRW(w, (size_t)j * bstride, q + AMXK__LIN_TPF_ROWS), AMXK__LIN_TPF_HINT); \
                if (pf > 0 && (q & (size_t)(pf - 1)) == 0)                                                       \
                    _Pragma("GCC unroll 4") for (j = 0; j < nr; j++) {                                           \
                        const char *pa = (const char *)ADDRW(w, (size_t)j * bstride, q) + AMXK__LIN_DPF_ROWS * 64; \
                        const char *e0 = (const char *)ADDRW(w, (size_t)j * bstride, 0);                          \
                        const char *e1 = (const char *)ADDRW(w, (size_t)(j + 1) * bstride, 0);                    \
                        _mm_prefetch(pa >= e1 ? pa + (size_t)(nr - 1) * (size_t)(e1 - e0) : pa, _MM_HINT_T1);    \
                    }                                                                                            \
                _Pragma("GCC unroll 16") for (r = 0; r < mr; r++) {                                      \
                    const X_T xb = BCAST(xp + (size_t)(r / 8) * pst + q * xs + (size_t)(r % 8));          \
                    _Pragma("GCC unroll 4") for (j = 0; j < nr; j++)                                     \
                        acc[split ? s : 0][r][j] = OP(acc[split ? s : 0][r][j], wv[j], xb);              \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
        _Pragma("GCC unroll 16") for (r = 0; r < mr; r++)                                                \
            _Pragma("GCC unroll 4") for (j = 0; j < nr; j++)                                             \
                out[r * 4 + j] = split ? _mm512_add_ps(acc[0][r][j], acc[1][r][j]) : acc[0][r][j];       \
    }
/* NAME##_decode and NAME##_prefill: the kernel with constant shapes (AMXK__LIN16_SHAPES(NAME, ADDRW),
   beside each AMXK__LIN16_KERNEL): prefill tiles (mr <= MR16 rows, NR16 or 1 blocks) and decode (mr <=
   4 rows, 4 or 1 weight streams; split chains for mr <= 2; pf: the kernel's). Only full-width tiles and single blocks
   are instantiated (each instance is fully unrolled; compile time grows with their number). tall (a
   constant): mr 16 runs the tall tile, 16 rows (two 8-row panels, AMXK__LIN_XS16 * ns units apart) x 1
   block, with the weight stream prefetched (pf -1). */
#define AMXK__LIN16_SHAPES(NAME, ADDRW)                                                                  \
    AMXK__FORCE_INLINE void NAME##_nr(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr, \
                                      int nrmax, int split, int pf, size_t xs, const char *pfx, int pfl, __m512 *out) { \
        if (nr == nrmax) NAME(xp, ns, w, bs, dt, mr, nrmax, split, pf, xs, 0, pfx, pfl, out);           \
        else NAME(xp, ns, w, bs, dt, mr, 1, split, pf, xs, 0, pfx, pfl, out);                           \
    }                                                                                                    \
    AMXK__FORCE_INLINE void NAME##_decode(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr, \
                                          int pf, __m512 *out) {                                         \
        switch (mr) {                                                                                    \
        case 4: NAME##_nr(xp, ns, w, bs, dt, 4, nr, AMXK__LIN_DNR16, 0, pf, AMXK__LIN_XS16, NULL, 0, out); break; \
        case 3: NAME##_nr(xp, ns, w, bs, dt, 3, nr, AMXK__LIN_DNR16, 0, pf, AMXK__LIN_XS16, NULL, 0, out); break; \
        case 2: NAME##_nr(xp, ns, w, bs, dt, 2, nr, AMXK__LIN_DNR16, 1, pf, 2, NULL, 0, out); break;              \
        default: NAME##_nr(xp, ns, w, bs, dt, 1, nr, AMXK__LIN_DNR16, 1, pf, 1, NULL, 0, out); break;             \
        }                                                                                                \
    }                                                                                                    \
    AMXK__FORCE_INLINE void NAME##_prefill(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr, \
                                           int tall, const char *pfx, int pfl, __m512 *out) {            \
        int jt;                                                                                          \
        switch (tall || mr <= 8 ? mr : 8) {                                                              \
        case 16:                                                                                         \
            for (jt = 0; jt < nr; jt++)                                                                  \
                NAME(xp, ns, ADDRW(w, (size_t)jt * bs, 0), bs, dt, 16, 1, 0, -1, AMXK__LIN_XS16, (size_t)AMXK__LIN_XS16 * ns, NULL, 0, out + jt); \
            break;                                                                                       \
        case 8: NAME##_nr(xp, ns, w, bs, dt, 8, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        case 7: NAME##_nr(xp, ns, w, bs, dt, 7, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        case 6: NAME##_nr(xp, ns, w, bs, dt, 6, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        case 5: NAME##_nr(xp, ns, w, bs, dt, 5, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        case 4: NAME##_nr(xp, ns, w, bs, dt, 4, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        case 3: NAME##_nr(xp, ns, w, bs, dt, 3, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        case 2: NAME##_nr(xp, ns, w, bs, dt, 2, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;   \
        default: NAME##_nr(xp, ns, w, bs, dt, 1, nr, AMXK__LIN_NR16, 0, 0, AMXK__LIN_XS16, pfx, pfl, out); break;  \
        }                                                                                                \
    }
#if AMXK__HAS_AVX512
/* tiles16's run function: the kernel of one level for a tile (decode: the kernel's pf > 0; prefill:
   0), into out[r * 4 + j] */
typedef void (*amxk__lin16_run_fn)(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr, int decode,
                                   const char *pfx, int pfl, __m512 *out);
#endif

#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512_BEGIN
/* Epilogue of one 16-column vector: y[row][16b .. 16b+16) (the columns < n) = v + bias, one rounding
   to y's dtype yt (the same values as amxk__linear_store_row / amxk__q8_store). */
AMXK__INLINE void amxk__store16__avx512(void *y, amxk_dtype yt, size_t ldy, size_t n, const float *bias, size_t row, size_t b, __m512 v) {
    const size_t n0 = b * AMXK__LIN_NB, cnt = AMXK__MIN((size_t)AMXK__LIN_NB, n - n0);
    const __mmask16 k = (__mmask16)(cnt == 16 ? 0xffffu : (1u << cnt) - 1u);
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + n0));
    amxk__vstore__avx512((char *)y + (row * ldy + n0) * amxk_dtype_size(yt), yt, v, k);
}
#define amxk__linear_store16__avx512(a, row, b, v) amxk__store16__avx512((a)->y, (a)->yt, (a)->ldy, (a)->n, (a)->bias, (row), (b), (v))
AMXK__STORE_ROWS_DEFINE(avx512, AMXK__V16)
/* The 16-lane words of this module's width-generic kernels (see AMXK__V8_N; n: lanes left, the
   masked lanes read as 0). */
#define AMXK__V16_I __m512i
#define AMXK__V16_LDI(p) _mm512_loadu_si512((const void *)(p))
#define AMXK__V16_ADDI(a, b) _mm512_add_epi32(a, b)
#define AMXK__V16_CVTI(a) _mm512_cvtepi32_ps(a)
#define AMXK__V16_LD(p) _mm512_loadu_ps(p)
#define AMXK__V16_ST(p, v) _mm512_storeu_ps(p, v)
#define AMXK__V16_YSTORE(a, row, n0, cnt, v) amxk__store16__avx512((a)->y, (a)->yt, (a)->ldy, (a)->n, (a)->bias, (row), (n0) / AMXK__LIN_NB, (v))
#define AMXK__V16_LOADN(p, t, n) amxk__vload__avx512((p), (t), AMXK__V16_MASK(n))
#define AMXK__V16_NLE(v, c) (_mm512_cmp_ps_mask((v), (c), _CMP_NLE_UQ) != 0)
#define AMXK__V16_ABSBITS(v) _mm512_castps_si512(_mm512_abs_ps(v))
#define AMXK__V16_MAXU(a, b) _mm512_max_epu32(a, b)
#define AMXK__V16_HMAXU(v) amxk__hmaxu__avx512(v)
#define AMXK__V16_STQ8(p, v, f, n) amxk__stq8__avx512((p), (v), (f), AMXK__V16_MASK(n))
AMXK__Q8_EPI_DEFINE(avx512, AMXK__V16)
/* mr rows (mr <= 8) of x (bytes rows ldx apart, kbytes each) as a panel of 32-bit units, unit-major:
   xp[u * 8 + r] = bytes [4u, 4u + 4) of row r, zero past kbytes and for rows r >= mr, units u < nu:
   one broadcast operand per row and unit (a bf16 pair for vdpbf16ps, 4 int8 for vpdpbusd), the rows
   of one unit adjacent (no cache-set conflicts between rows, whatever ldx). flip: XORed into every
   unit read from x (not into the zeros): 0, or 0x80808080 (u8 codes to int8). 8 x 8 transposes of
   units, the ragged end unit by unit. */
/* Decode panel of mr <= 2 rows: xp[u mr + r] = 32-bit unit u of row r, zero past kbytes (the
   kernels read it with stride mr: one row's x is contiguous, not one unit per 32 bytes). */
AMXK__PRIV void amxk__xpanel_dec__avx512(const void *x, size_t ldx, size_t kbytes, size_t nu, int mr, uint32_t *xp) {
    const uint8_t *x0 = (const uint8_t *)x, *x1 = x0 + ldx;
    const size_t full = AMXK__MIN(kbytes / 4, nu);
    size_t u = 0;
    int r;
    if (mr == 1) {
        memcpy(xp, x0, full * 4);
        u = full;
    } else {
        for (; u + 8 <= full; u += 8) {
            const __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)(x0 + 4 * u));
            const __m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(x1 + 4 * u));
            const __m256i lo = _mm256_unpacklo_epi32(a0, a1), hi = _mm256_unpackhi_epi32(a0, a1);
            _mm256_storeu_si256((__m256i *)(void *)(xp + 2 * u), _mm256_permute2x128_si256(lo, hi, 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(xp + 2 * u + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
        }
    }
    for (; u < nu; u++)
        for (r = 0; r < mr; r++) {
            uint32_t v = 0;
            if (4 * u < kbytes) memcpy(&v, x0 + (size_t)r * ldx + 4 * u, AMXK__MIN((size_t)4, kbytes - 4 * u));
            xp[u * (size_t)mr + (size_t)r] = v;
        }
}
AMXK__PRIV void amxk__xpanel32__avx512(const void *x, size_t ldx, size_t kbytes, size_t nu, int mr, uint32_t flip, uint32_t *xp) {
    const __m256i fv = _mm256_set1_epi32((int)flip);
    const size_t full = kbytes / 4;
    const uint8_t *src[8];
    size_t u;
    int r, q;
    for (r = 0; r < 8; r++) src[r] = r < mr ? (const uint8_t *)x + (size_t)r * ldx : NULL;
    for (u = 0; u + 8 <= full; u += 8) {
        __m256i v[8], t[8], w[8];
        for (r = 0; r < 8; r++) v[r] = r < mr ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src[r] + 4 * u)), fv) : _mm256_setzero_si256();
        for (r = 0; r < 8; r += 2) t[r] = _mm256_unpacklo_epi32(v[r], v[r + 1]), t[r + 1] = _mm256_unpackhi_epi32(v[r], v[r + 1]);
        for (r = 0; r < 8; r += 4) {
            w[r] = _mm256_unpacklo_epi64(t[r], t[r + 2]), w[r + 1] = _mm256_unpackhi_epi64(t[r], t[r + 2]);
            w[r + 2] = _mm256_unpacklo_epi64(t[r + 1], t[r + 3]), w[r + 3] = _mm256_unpackhi_epi64(t[r + 1], t[r + 3]);
        }
        for (q = 0; q < 4; q++) { /* w[q]: units q (low lane) and q + 4 of rows 0-3; w[q + 4]: rows 4-7 */
            _mm256_storeu_si256((__m256i *)(xp + (u + (size_t)q) * 8), _mm256_permute2x128_si256(w[q], w[q + 4], 0x20));
            _mm256_storeu_si256((__m256i *)(xp + (u + (size_t)q + 4) * 8), _mm256_permute2x128_si256(w[q], w[q + 4], 0x31));
        }
    }
    for (; u < nu; u++)
        for (r = 0; r < 8; r++) {
            uint32_t v = 0;
            if (r < mr && 4 * u < kbytes) {
                const size_t cnt = AMXK__MIN((size_t)4, kbytes - 4 * u);
                memcpy(&v, src[r] + 4 * u, cnt);
                v ^= flip & (cnt == 4 ? 0xffffffffu : (1u << (8 * cnt)) - 1u); /* little-endian: the bytes read */
            }
            xp[u * 8 + (size_t)r] = v;
        }
}

/* ---- quantized packs, decode (M below the table's q_wide): the decode kernels at 16 lanes ---- */

/* 16 e8m0 scale bytes widened like amxk__e8m0_f32x8__avx2 (e = 255 or 0, rare: the masked OR). */
AMXK__INLINE __m512 amxk__e8m0_f32x16__avx512(__m128i e8) {
    const __m128i t = _mm_add_epi8(e8, _mm_set1_epi8(1)); /* e = 255 or 0: t <= 1 */
    const __m512i e = _mm512_cvtepu8_epi32(e8);
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(1)), t)) == 0) return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(_mm512_slli_epi32(e, 23), _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()) |
                                                                                  _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(255)),
                                                    _mm512_slli_epi32(e, 23), _mm512_set1_epi32(0x00400000)));
}
#define AMXK__V16_LANES 16
#define AMXK__V16_NH 1
#define AMXK__V16_LOADU(p) _mm512_loadu_ps(p)
#define AMXK__V16_QE8M0(p) amxk__e8m0_f32x16__avx512(_mm_loadu_si128((const __m128i *)(const void *)(p)))
AMXK__QGRID_DEFINE(avx512, AMXK__V16)
/* The decode kernels at 16 lanes (AMXK__QD_KERNELS_DEFINE): the 16 rows of a block in one vector. */
#define AMXK__V16_LOADI(p) _mm512_loadu_si512((const void *)(p))
#define AMXK__V16_ZEROI _mm512_setzero_si512()
#define AMXK__V16_ANDI(a, b) _mm512_and_si512(a, b)
#define AMXK__V16_SLLI32(a, n) _mm512_slli_epi32(a, (unsigned)(n))
#define AMXK__V16_SRLI32(a, n) _mm512_srli_epi32(a, (unsigned)(n))
#define AMXK__V16_SRAI32(a, n) _mm512_srai_epi32(a, (unsigned)(n))
#define AMXK__V16_SRLI16(a, n) _mm512_srli_epi16(a, (unsigned)(n))
#define AMXK__V16_SRAI16(a, n) _mm512_srai_epi16(a, (unsigned)(n))
#define AMXK__V16_SLLI16(a, n) _mm512_slli_epi16(a, (unsigned)(n))
#define AMXK__V16_MR 4 /* rows per decode kernel call */
#define AMXK__V16_PERM16 1 /* 4-bit fields: vpermps on the 16 values (amxk__q4_tab__avx512) */
#define AMXK__V16_PERMF(t, i) _mm512_permutexvar_ps(i, t)
#define AMXK__V16_Q4TAB(v, sym, lut) amxk__q4_tab__avx512(v, sym, lut)
/* The values of the 16 codes of a 4-bit field as f32 (exact): two's complement (sym), unsigned, or the
   LUT row's table times its unit. */
AMXK__INLINE __m512 amxk__q4_tab__avx512(const amxk__qview *v, int sym, int lut) {
    const __m512i i = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    if (lut)
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                                                  (const __m128i *)(const void *)v->tr->lut)), 24), 24)),
                             _mm512_set1_ps(v->tr->unit));
    return _mm512_cvtepi32_ps(sym ? _mm512_srai_epi32(_mm512_slli_epi32(i, 28), 28) : i);
}
#define AMXK__V16_SET1I8(c) _mm512_set1_epi8(c)
#define AMXK__V16_SET1I32(c) _mm512_set1_epi32(c)
#define AMXK__V16_SHUFB(a, b) _mm512_shuffle_epi8(a, b)
#define AMXK__V16_CASTIF(a) _mm512_castsi512_ps(a)
#define AMXK__V16_BCAST128I(a) _mm512_broadcast_i32x4(a)
/* (the test of AMXK__V8_FP8_BAD at 16 lanes) */
#define AMXK__V16_FP8_BAD_T __m512i
#define AMXK__V16_FP8_BAD_0 _mm512_setzero_si512()
#define AMXK__V16_FP8_BAD(bad, c, sp) _mm512_max_epu8(bad, _mm512_and_si512(c, _mm512_set1_epi8(0x7f)))
#define AMXK__V16_FP8_BAD_ANY(bad, sp) (_mm512_cmpeq_epi8_mask(_mm512_max_epu8(bad, sp), bad) != 0)
#define AMXK__V16_QSTORE(a, row, b, res) amxk__linear_store16__avx512(a, row, b, (res)[0])
AMXK__QD_FIELDS_DEFINE(avx512, AMXK__V16)
/* amxk__q_fp8x__avx2 at 16 lanes (the 16 rows of c[0]) */
AMXK__FORCE_INLINE void amxk__q_fp8x__avx512(const __m512i *c, int sh, int map, __m512 *w) {
    const __m256i h = _mm512_cvtepi32_epi16(_mm512_and_si512(_mm512_srli_epi32(c[0], (unsigned)sh), _mm512_set1_epi32(0xff)));
    w[0] = _mm512_cvtph_ps(amxk__fp8_f16__avx2(h, map));
    if (map == AMXK__QV_E4M3) w[0] = _mm512_mul_ps(w[0], _mm512_set1_ps(256.0f));
}
AMXK__QD_KERNELS_DEFINE(avx512, AMXK__V16)
/* ---- quantized blocks dequantized at 16 lanes (the prefill staging: amxk__linear_tiles16__avx512, and
   the AMX path's q_block_16 through its vector level) ---- */

/* The bf16 images (16-bit lanes) of the e4m3 codes in the low (hi 0) or high (hi 1) byte of every
   16-bit lane of c: exact (every e4m3 value is a bf16), the value as amxk__e4m3_to_f32: normal
   magnitudes m (>= 8) are (m << 4) + (120 << 7); 0 .. 7 (zero, subnormals) and 0x7f (NaN) from a table
   on m's low 5 bits; the code's sign to bit 15. */
AMXK__FORCE_INLINE __m512i amxk__e4m3_bf16__avx512(__m512i c, int hi) {
    const __m512i tab = _mm512_setr_epi32(0x3b000000, 0x3bc03b80, 0x3c203c00, 0x3c603c40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7fc00000);
    const __m512i m = hi ? _mm512_srli_epi16(_mm512_and_si512(c, _mm512_set1_epi16(0x7f00)), 8) : _mm512_and_si512(c, _mm512_set1_epi16(0x7f));
    const __mmask32 sp = _mm512_cmple_epu16_mask(m, _mm512_set1_epi16(7)) | _mm512_cmpge_epi16_mask(m, _mm512_set1_epi16(0x7f));
    const __m512i n = _mm512_mask_permutexvar_epi16(_mm512_add_epi16(_mm512_slli_epi16(m, 4), _mm512_set1_epi16(0x3c00)), sp, m, tab);
    return _mm512_ternarylogic_epi32(n, hi ? c : _mm512_slli_epi16(c, 8), _mm512_set1_epi16((short)0x8000), 0xf8); /* n | (s & 0x8000) */
}
/* The values of columns j = 0 .. span-1 of the 64-byte row c (16 rows) as f32, exactly: int fields
   (two's complement when sym), LUT maps as the table's integers, fp8 codes (e4m3 through its bf16
   images, e5m2 through fp16): the 16-lane form of amxk__q_w16__avx2. */
AMXK__FORCE_INLINE void amxk__q_row16__avx512(__m512i c, int bits, int map, int sym, __m512i lutv, __m512 *w) {
    const int span = 32 / bits;
    int j;
    if (map == AMXK__QV_E4M3) {
        const __m512i lo = amxk__e4m3_bf16__avx512(c, 0), hi = amxk__e4m3_bf16__avx512(c, 1), top = _mm512_set1_epi32((int)0xffff0000u);
        w[0] = _mm512_castsi512_ps(_mm512_slli_epi32(lo, 16)), w[2] = _mm512_castsi512_ps(_mm512_and_si512(lo, top));
        w[1] = _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16)), w[3] = _mm512_castsi512_ps(_mm512_and_si512(hi, top));
        return;
    }
    for (j = 0; j < span; j++) {
        const unsigned sh = (unsigned)(8 * (j % 4) + bits * (j / 4));
        if (map == AMXK__QV_E5M2) {
            amxk__q_fp8x__avx512(&c, (int)sh, map, w + j);
        } else if (map == AMXK__QV_LUT) { /* the code through the table, sign-extended */
            const __m512i q = _mm512_shuffle_epi8(lutv, _mm512_and_si512(_mm512_srli_epi32(c, sh), _mm512_set1_epi32(15)));
            w[j] = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(q, 24), 24));
        } else if (sym) {
            w[j] = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(c, 32 - sh - (unsigned)bits), 32 - (unsigned)bits));
        } else {
            w[j] = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(c, sh), _mm512_set1_epi32((1 << bits) - 1)));
        }
    }
}
/* 1 when the 16 lanes of x are finite. */
AMXK__FORCE_INLINE int amxk__finite16__avx512(__m512 x) {
    return _mm512_cmpgt_epu32_mask(_mm512_set1_epi32(0x7f800000), _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff))) == 0xffff;
}
/* Block b dequantized (whole-row groups: amxk__q_kind 2) with the values of amxk__q_block_f32 (t F32:
   wf[k * 16 + r]) or of amxk__q_block_16 (t BF16 / F16: the VNNI pairs at d, each s * (q - z) rounded
   to t once more, as amxk_convert): per 64-byte row, the 16 rows of each column in one vector, the two
   columns of a pair joined in registers (no f32 pass through memory). */
AMXK__FORCE_INLINE void amxk__q_block_int__avx512(const amxk__qview *v, size_t b, amxk_dtype t, void *dst, int bits, int map, int sym) {
    const int span = 32 / bits;
    const __m512i lutv = map == AMXK__QV_LUT ? _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)v->tr->lut))
                                             : _mm512_setzero_si512();
    const __m512i ilv = _mm512_setr_epi32(0x100000, 0x110001, 0x120002, 0x130003, 0x140004, 0x150005, 0x160006, 0x170007, 0x180008,
                                          0x190009, 0x1a000a, 0x1b000b, 0x1c000c, 0x1d000d, 0x1e000e, 0x1f000f); /* words i, 16 + i */
    const uint8_t *blk = v->data + b * v->blk_bytes;
    float *wf = (float *)dst;
    uint16_t *d = (uint16_t *)dst;
    size_t g, rg, kk;
    int j, no_nan;
    for (g = 0; g < v->nbk; g++) {
        __m512 s, z = _mm512_setzero_ps();
        amxk__q_sgrid16__avx512(v, b, g, &s);
        s = _mm512_mul_ps(s, _mm512_set1_ps(v->tr->unit));
        if (!sym) amxk__q_grid16__avx512(v, v->zeros, b, g, &z);
        /* no NaN product: finite scales and zeros, and (fp8) no NaN / inf code (the pack's flag) */
        no_nan = (!AMXK__QV_FP8(map) || v->no_nan) && amxk__finite16__avx512(s) && amxk__finite16__avx512(z);
        for (rg = g * v->bk / (size_t)span; rg < AMXK__MIN((g + 1) * v->bk, v->kp) / (size_t)span; rg++) { /* fp8: last block may be partial */
            __m512 w[16];
            amxk__q_row16__avx512(_mm512_loadu_si512((const void *)(blk + rg * 64)), bits, map, sym, lutv, w);
            for (j = 0; j < span; j++) w[j] = _mm512_mul_ps(s, sym ? w[j] : _mm512_sub_ps(w[j], z));
            for (j = 0; j < span; j += 2) {
                const size_t k = rg * (size_t)span + (size_t)j;
                if (t == AMXK_DTYPE_F32) {
                    _mm512_storeu_ps(wf + k * 16, w[j]);
                    _mm512_storeu_ps(wf + k * 16 + 16, w[j + 1]);
                } else if (t == AMXK_DTYPE_BF16) { /* (even >> 16) | (odd & 0xffff0000) */
                    _mm512_storeu_si512((void *)(d + k * 16), _mm512_ternarylogic_epi32(_mm512_srli_epi32(amxk__bf16_top__avx512(w[j], no_nan), 16),
                                                                                      amxk__bf16_top__avx512(w[j + 1], no_nan),
                                                                                      _mm512_set1_epi32((int)0xffff0000u), 0xf8));
                } else {
                    const __m256i he = _mm512_cvtps_ph(w[j], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                    const __m256i ho = _mm512_cvtps_ph(w[j + 1], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                    _mm512_storeu_si512((void *)(d + k * 16), _mm512_permutexvar_epi16(ilv, _mm512_inserti64x4(_mm512_castsi256_si512(he), ho, 1)));
                }
            }
        }
    }
    for (kk = v->k; kk < v->kp; kk++) /* columns past K: +0 */
        if (t == AMXK_DTYPE_F32) memset(wf + kk * 16, 0, 64);
        else for (j = 0; j < 16; j++) d[(kk / 2) * 32 + (size_t)j * 2 + kk % 2] = 0;
}
/* amxk__q_block_f32 / amxk__q_block_16 at 16 lanes (the tables' q_block_16); generic groups, and f32
   output of int / LUT packs (their 8-lane form wrote f32 faster: docs/notes/pack.md): the AVX2 ones. */
AMXK__PRIV void amxk__q_block_f32__avx512(const amxk__qview *v, size_t b, float *wf) {
    if (amxk__q_kind(v) != 2 || !AMXK__QV_FP8(v->tr->vmap)) amxk__q_block_f32__avx2(v, b, wf);
    else AMXK__Q_DECODERS(v, amxk__q_block_int__avx512, v, b, AMXK_DTYPE_F32, wf)
}
AMXK__PRIV void amxk__q_block_16__avx512(const amxk__qview *v, size_t b, amxk_dtype t, float *wf, uint16_t *d) {
    if (amxk__q_kind(v) != 2) amxk__q_block_16__avx2(v, b, t, wf, d);
    else AMXK__Q_DECODERS(v, amxk__q_block_int__avx512, v, b, t, d)
}
/* ---- the tiles of amxk_linear at 16 lanes: fp32 FMA (every AVX-512 level), vdpbf16ps (AVX512_BF16) ---- */

/* Weight k of the 16 columns of packed bf16 block wb as f32: one load of pair row k / 2, then a shift
   (even k) or an AND (odd k). */
AMXK__FORCE_INLINE __m512 amxk__lin_w16__avx512(const uint16_t *wb, size_t k) {
    const __m512i v = _mm512_loadu_si512((const void *)(wb + (k / 2) * 32));
    return _mm512_castsi512_ps((k & 1) ? _mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)) : _mm512_slli_epi32(v, 16));
}
/* address of step q's 64-byte weight row (the loads below, and the decode kernels' software prefetch) */
#define AMXK__LIN16_AD_F32(w, off, q) ((const float *)(w) + (off) + (q) * 16)
#define AMXK__LIN16_AD_16(w, off, q) ((const uint16_t *)(w) + (off) + (q) * 32)
#define AMXK__LIN16_LD_F32(w, off, q, dt) _mm512_loadu_ps(AMXK__LIN16_AD_F32(w, off, q))
#define AMXK__LIN16_AD_PK(w, off, q) ((const uint16_t *)(w) + (off) + ((q) / 2) * 32) /* k steps on packed pairs */
#define AMXK__LIN16_LD_PACKED(w, off, q, dt) amxk__lin_w16__avx512((const uint16_t *)(w) + (off), (q))
#define AMXK__LIN16_BC_F32(p) _mm512_set1_ps(amxk__bits_f32(*(p)))
#define AMXK__LIN16_FMA(acc, w, x) _mm512_fmadd_ps((x), (w), (acc))
/* fp32 FMA tiles: on blocks widened to f32 (wf[k * 16 + lane], prefill) or straight on packed blocks
   (decode); each output sums x[k] * w[k] in fp32, k increasing (decode with 1-2 rows: even and odd k
   in two chains, added at the end). */
AMXK__LIN16_KERNEL(amxk__linear_f32__8x64__avx512, __m512, __m512, AMXK__LIN16_LD_F32, AMXK__LIN16_BC_F32, AMXK__LIN16_FMA, AMXK__LIN16_AD_F32)
AMXK__LIN16_SHAPES(amxk__linear_f32__8x64__avx512, AMXK__LIN16_AD_F32)
AMXK__LIN16_KERNEL(amxk__linear_w16__4x64__avx512, __m512, __m512, AMXK__LIN16_LD_PACKED, AMXK__LIN16_BC_F32, AMXK__LIN16_FMA, AMXK__LIN16_AD_PK)
AMXK__LIN16_SHAPES(amxk__linear_w16__4x64__avx512, AMXK__LIN16_AD_PK)
AMXK__PRIV void amxk__linear_run16__avx512(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr, int decode,
                                           const char *pfx, int pfl, __m512 *out) {
    /* dt: what w holds, f32 blocks or (decode) packed bf16 pairs (fp16 packs run amxk__linear_run16f16__avx512) */
    if (decode && dt == AMXK_DTYPE_F32) amxk__linear_f32__8x64__avx512_decode(xp, ns, w, bs, AMXK_DTYPE_F32, mr, nr, decode, out);
    else if (!decode) amxk__linear_f32__8x64__avx512_prefill(xp, ns, w, bs, AMXK_DTYPE_F32, mr, nr, 0, pfx, pfl, out);
    else amxk__linear_w16__4x64__avx512_decode(xp, ns, w, bs, AMXK_DTYPE_BF16, mr, nr, decode, out);
}

/* fp16 packs at 16 lanes, straight on the packed pairs: vcvtph2ps widens one 32-byte half of a pair
   row (8 columns x (k even, k odd)) from memory, times x's pair (x[2q], x[2q+1]) broadcast as a
   64-bit unit of the f32 pair panel (tiles16's mode 2): each output sums its even and odd k in two
   chains, each k increasing, added at the end. mr rows x nb blocks, 2 * mr * nb <= 16 accumulators. */
AMXK__FORCE_INLINE void amxk__linear_f16__4x64__avx512(const uint32_t *xp, size_t ns, const uint16_t *w,
                                                                               size_t bs, int mr, int nb, __m512 *out) {
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    __m512 acc[8][4][2];
    size_t q;
    int r, j;
#pragma GCC unroll 8
    for (r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (j = 0; j < nb; j++) acc[r][j][0] = acc[r][j][1] = _mm512_setzero_ps();
    for (q = 0; q < ns; q++) {
        __m512 wv[4][2];
#pragma GCC unroll 4
        for (j = 0; j < nb; j++) {
            const uint16_t *p = w + (size_t)j * bs + q * 32;
            wv[j][0] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
            wv[j][1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + 16)));
        }
#pragma GCC unroll 8
        for (r = 0; r < mr; r++) {
            double x2;
            __m512 xb;
            memcpy(&x2, xp + 2 * (q * AMXK__LIN_XS16 + (size_t)r), 8);
            xb = _mm512_castpd_ps(_mm512_set1_pd(x2));
#pragma GCC unroll 4
            for (j = 0; j < nb; j++) {
                acc[r][j][0] = _mm512_fmadd_ps(xb, wv[j][0], acc[r][j][0]);
                acc[r][j][1] = _mm512_fmadd_ps(xb, wv[j][1], acc[r][j][1]);
            }
        }
    }
#pragma GCC unroll 8
    for (r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (j = 0; j < nb; j++)
            out[r * 4 + j] = _mm512_add_ps(_mm512_permutex2var_ps(acc[r][j][0], ev, acc[r][j][1]),
                                           _mm512_permutex2var_ps(acc[r][j][0], od, acc[r][j][1]));
}
/* tiles16's run function for fp16 packs (x fp16, f32 pair panels: mode 2): nr blocks in kernels of 2 * mr * nb <= 16
   accumulators (4 blocks for 1-2 rows, 2 for 3-4, 1 for 5-8). */
AMXK__PRIV void amxk__linear_run16f16__avx512(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr,
                                              int decode, const char *pfx, int pfl, __m512 *out) {
    const uint16_t *wb = (const uint16_t *)w;
    int j;
    (void)dt, (void)decode, (void)pfx, (void)pfl;
    if (nr == 4 && mr <= 2) {
        if (mr == 2) amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 2, 4, out);
        else amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 1, 4, out);
        return;
    }
    for (j = 0; j < nr;) {
        const int two = j + 2 <= nr && mr <= 4;
        __m512 part[8 * 4];
        int r;
        switch (mr * 2 + two) { /* (rows, 2 blocks) or (rows, 1 block) */
        case 9: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 4, 2, part); break;
        case 7: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 3, 2, part); break;
        case 5: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 2, 2, part); break;
        case 3: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 1, 2, part); break;
        case 16: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 8, 1, part); break;
        case 14: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 7, 1, part); break;
        case 12: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 6, 1, part); break;
        case 10: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 5, 1, part); break;
        case 8: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 4, 1, part); break;
        case 6: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 3, 1, part); break;
        case 4: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 2, 1, part); break;
        default: amxk__linear_f16__4x64__avx512(xp, ns, wb, bs, 1, 1, part); break;
        }
        for (r = 0; r < mr; r++) {
            out[r * 4 + j] = part[r * 4];
            if (two) out[r * 4 + j + 1] = part[r * 4 + 1];
        }
        wb += (size_t)(1 + two) * bs;
        j += 1 + two;
    }
}

/* The tiles of rows [m0, m1) x blocks [b0, b1) with a level's run function: x rows as unit-major panels
   of MR16 rows (pairs 1: bf16 pairs for vdpbf16ps; 0: f32 units; 2: 64-bit units of f32 pairs for the
   fp16 pair kernel; converted once per task). Decode (at most 4 rows, 16-bit packs): 4 blocks at a
   time straight from the pack. Prefill: per group of NR16 blocks, the group's weights (packed, or
   dequantized / widened once per task: to bf16 pairs for vdpbf16ps - one more rounding, as on AMX -
   or to f32), then every panel's tile over all of K, the first one streaming the next group's packed
   blocks into L2 (AMXK__LIN_PPF: memory busy while the FMAs run). ws: amxk__linear_ws__avx512's layout. */
AMXK__PRIV void amxk__linear_tiles16__avx512(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws, int pairs,
                                             amxk__lin16_run_fn run) {
    const size_t units = pairs == 1 ? a->kp / 2 : a->kp, panel = (size_t)AMXK__LIN_XS16 * units, bs = (size_t)AMXK__LIN_NB * a->kp;
    const size_t xsz = amxk_dtype_size(a->dt);
    const size_t steps = pairs ? a->kp / 2 : a->kp, wbs = pairs == 1 ? bs : 2 * bs; /* 16-bit elements per staged block */
    const int decode = !a->q && (m1 - m0 <= 4 || (!pairs && a->wt == AMXK_DTYPE_BF16 && m1 - m0 <= AMXK__LIN_DEC16_M));
    const int nr_max = decode ? AMXK__LIN_DNR16 : AMXK__LIN_NR16, mr_max = decode ? 4 : AMXK__LIN_MR16;
    const int dpf = decode ? (int)a->st->lin_pfr * (pairs == 0 && a->wt != AMXK_DTYPE_F32 ? 2 : 1) : 0; /* steps per prefetch */
    const size_t n_panels = AMXK__CEIL_DIV(m1 - m0, (size_t)mr_max);
    /* the tall tile (vdpbf16ps straight on the pack; AMXK__LIN_TALL16) for the first 16 rows */
    const int tall_ok = !decode && pairs == 1 && !a->q && a->wt == AMXK_DTYPE_BF16 && AMXK__LIN_MR16 == 8;
    uint32_t *xp = (uint32_t *)ws;
    float *xrow = (float *)(ws + AMXK__ROUND_UP(AMXK__LIN16_PANELS(a->plan->mc) * panel * 4, (size_t)AMXK_ALIGN));
    uint16_t *wq = (uint16_t *)(xrow + (size_t)AMXK__LIN_MR16 * a->kp); /* NR16 staged blocks, then an f32 scratch block */
    float *wf = (float *)(wq + (size_t)AMXK__LIN_NR16 * 2 * bs);
    __m512 out[16 * 4];
    const char *pfx = NULL;
    size_t i, b, pi, kk;
    int r, j, pfl = 0;
    for (pi = 0; pi < n_panels; pi++) {
        const size_t row = m0 + pi * (size_t)mr_max;
        const int mr = (int)AMXK__MIN((size_t)mr_max, m1 - row);
        if (pairs == 1) {
            if (decode && mr <= 2) amxk__xpanel_dec__avx512((const uint16_t *)a->x + row * a->ldx, a->ldx * 2, a->k * 2, units, mr, xp + pi * panel);
            else amxk__xpanel32__avx512((const uint16_t *)a->x + row * a->ldx, a->ldx * 2, a->k * 2, units, mr, 0, xp + pi * panel);
            continue;
        }
        for (r = 0; r < mr; r++) /* f32 rows, zero past K */
            for (kk = 0; kk < a->kp; kk += 16) {
                const __mmask16 km = (__mmask16)(kk >= a->k ? 0u : a->k - kk >= 16 ? 0xffffu : (1u << (a->k - kk)) - 1u);
                _mm512_storeu_ps(xrow + (size_t)r * a->kp + kk,
                                 amxk__vload__avx512((const char *)a->x + ((row + (size_t)r) * a->ldx + kk) * xsz, a->dt, km));
            }
        if (pairs == 2) { /* 64-bit units (f32 pairs): xp[2 (8 q + r)] = x[r][2q], x[r][2q + 1] */
            uint64_t *x64 = (uint64_t *)(void *)(xp + pi * panel);
            const uint64_t *src = (const uint64_t *)(const void *)xrow;
            size_t q;
            for (q = 0; q < steps; q++)
                for (r = 0; r < mr; r++) x64[q * AMXK__LIN_XS16 + (size_t)r] = src[(size_t)r * steps + q];
            continue;
        }
        if (decode && mr <= 2) amxk__xpanel_dec__avx512(xrow, a->kp * 4, a->k * 4, units, mr, xp + pi * panel);
        else amxk__xpanel32__avx512(xrow, a->kp * 4, a->k * 4, units, mr, 0, xp + pi * panel);
    }
    for (b = b0; b < b1;) {
        const int nr = b + (size_t)nr_max <= b1 ? nr_max : 1; /* full-width tiles, then block by block */
        const void *w = a->q ? NULL : amxk__lin_blk(a, b); /* bs elements of the pack's dtype apart */
        if (!decode && (a->q || (!pairs && a->wt != AMXK_DTYPE_F32))) { /* stage the group's blocks (f32 packs: none) */
            for (j = 0; j < nr; j++) {
                if (pairs == 1) amxk__q_block_16__avx512(a->q, b + (size_t)j, AMXK_DTYPE_BF16, wf, wq + (size_t)j * wbs);
                else if (a->q) amxk__q_block_f32__avx512(a->q, b + (size_t)j, (float *)(wq + (size_t)j * wbs));
                else amxk__linear_widen__avx2((const uint16_t *)amxk__lin_blk(a, b + (size_t)j), a->wt, a->kp, (float *)(wq + (size_t)j * wbs));
            }
            w = wq;
        }
        if (!decode && AMXK__LIN_PPF && b + (size_t)nr < b1) { /* the next group's packed bytes, over this group's first tile */
            const size_t nb = AMXK__MIN((size_t)nr_max, b1 - b - (size_t)nr), bb = a->q ? a->q->blk_bytes : amxk__lin_blk_bytes(a->wt, a->kp);
            pfx = a->q ? (const char *)a->q->data + (b + (size_t)nr) * bb : (const char *)amxk__lin_blk(a, b + (size_t)nr);
            pfl = (int)AMXK__CEIL_DIV(nb * bb, (size_t)32 * steps);
        }
        for (pi = 0, i = m0; i < m1;) {
            const int tall = AMXK__LIN_TALL16 && tall_ok && pi == 0 && m1 - i >= 16;
            const int mr = tall ? 16 : (int)AMXK__MIN((size_t)mr_max, m1 - i);
            run(xp + pi * panel, steps, w, w == (const void *)wq ? (pairs ? wbs : wbs / 2) : bs,
                w == (const void *)wq ? (pairs ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32) : a->wt, mr, nr, dpf, pfx, pfl, out);
            pfl = 0;
            for (r = 0; r < mr; r++)
                for (j = 0; j < nr; j++) amxk__linear_store16__avx512(a, i + (size_t)r, b + (size_t)j, out[r * 4 + j]);
            pi += tall ? 2 : 1, i += (size_t)mr;
        }
        b += (size_t)nr;
    }
}

/* Rows [m0, m1) x blocks [b0, b1) at the AVX-512 levels: quantized packs on the decode path (fewer
   rows than the table's q_wide, whole-row groups) on the decode kernels above, fp16 packs on the fp16 pair
   kernel, the rest on the fp32 FMA tiles. */
AMXK__PRIV void amxk__linear_block__avx512(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    float *xf = (float *)ws, *xs = (float *)(ws + a->plan->ws_a);
    size_t i;
    if (!a->q && a->wt == AMXK_DTYPE_F16) {
        amxk__linear_tiles16__avx512(a, m0, m1, b0, b1, ws, 2, amxk__linear_run16f16__avx512);
        return;
    }
    if (!a->q || a->plan->wide) {
        amxk__linear_tiles16__avx512(a, m0, m1, b0, b1, ws, 0, amxk__linear_run16__avx512);
        return;
    }
    for (i = m0; i < m1; i += AMXK__LIN_MR) {
        const int mr = (int)AMXK__MIN((size_t)AMXK__LIN_MR, m1 - i);
        amxk__linear_panel__avx2(a, i, mr, xf);
        amxk__linear_q_panel__avx512(a, xf, xs, i, mr, b0, b1);
    }
}
AMXK__TARGET_END

AMXK__TARGET_AVX512BF16_BEGIN
/* vdpbf16ps tiles straight on the packed pairs (or bf16-dequantized blocks): each output accumulates in
   fp32, pair rows in increasing order, each pair as vdpbf16ps does (odd k, then even k, one fma
   rounding each; bf16 subnormal inputs read as zero, subnormal results flushed). Decode: the
   template's sparse L2 prefetch (pf), 8 KiB ahead once per KiB. */
#define AMXK__LIN16_LD_PAIRS(w, off, q, dt) _mm512_loadu_si512((const void *)AMXK__LIN16_AD_16(w, off, q))
/* x's pair (a 32-bit unit of the panel) as vdpbf16ps's embedded-broadcast memory operand ({1to16}),
   not a separate vpbroadcastd (gcc 12 does not fold it; slower: docs/notes/pack.md). Same
   instruction, same bits; the emulated build (and compilers without GNU asm) broadcast by
   _mm512_set1_epi32. */
#define AMXK__LIN16_BC_PTR(p) (p)
#if defined(AMXK_AVX512_EMULATE) || !defined(__GNUC__)
#  define AMXK__LIN16_DPBF16B(acc, w, p) AMXK__DPBF16((acc), (w), _mm512_set1_epi32((int)*(p)))
#else
AMXK__FORCE_INLINE __m512 amxk__dpbf16b(__m512 acc, __m512i w, const uint32_t *p) {
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*p));
    return acc;
}
#  define AMXK__LIN16_DPBF16B(acc, w, p) amxk__dpbf16b((acc), (w), (p))
#endif
typedef const uint32_t *amxk__u32cp; /* the kernel's x "vector": a pointer to the unit (const X_T: no duplicate const) */
AMXK__LIN16_KERNEL(amxk__linear_bf16__8x64__avx512bf16, __m512i, amxk__u32cp, AMXK__LIN16_LD_PAIRS, AMXK__LIN16_BC_PTR, AMXK__LIN16_DPBF16B,
                   AMXK__LIN16_AD_16)
AMXK__LIN16_SHAPES(amxk__linear_bf16__8x64__avx512bf16, AMXK__LIN16_AD_16)
AMXK__PRIV void amxk__linear_run16__avx512bf16(const uint32_t *xp, size_t ns, const void *w, size_t bs, amxk_dtype dt, int mr, int nr,
                                               int decode, const char *pfx, int pfl, __m512 *out) {
    (void)dt;
    if (decode) amxk__linear_bf16__8x64__avx512bf16_decode(xp, ns, w, bs, AMXK_DTYPE_BF16, mr, nr, decode, out);
    else amxk__linear_bf16__8x64__avx512bf16_prefill(xp, ns, w, bs, AMXK_DTYPE_BF16, mr, nr, 1, pfx, pfl, out);
}

/* ---- int4 packs with bf16 x, decode (w4a16): vdpbf16ps on fields turned into bf16 ---- */
#ifndef AMXK__Q4_PREFETCH
#define AMXK__Q4_PREFETCH 2048 /* decode kernel: software prefetch distance in packed bytes (0: none) ... */
#endif
#ifndef AMXK__Q4_HINT
#define AMXK__Q4_HINT _MM_HINT_T1 /* ... into L2 */
#endif
#ifndef AMXK__Q4_NB
#define AMXK__Q4_NB 4 /* blocks (weight streams) per call of the decode kernel for one row ... */
#endif
#ifndef AMXK__Q4_D1B
#define AMXK__Q4_D1B 16384 /* ... when a packed block has more bytes than this; else one block at a time */
#endif

/* Rows 0 .. mr-1 (mr <= 2) of xr against nb 4-bit blocks b .. b+nb-1 (nb 1, or 4 for one row). In a
   64-byte row of a block, 16-bit element 2r (lane r: column r) holds the codes of k = 8q, 8q+4, 8q+1,
   8q+5 in its nibbles 0..3, element 2r+1 those of k = 8q+2, 8q+6, 8q+3, 8q+7. Nibble i (after a
   16-bit shift by 4i) becomes its exact bf16 value by one vpermw (tw: the bf16 of (index & 15) - q,
   u for asymmetric packs, or the row's dec; twice: vpermw reads 5 index bits), leaving in every lane
   the pair (k, k+2): a vdpbf16ps operand against the broadcast pair (x[k], x[k+2]) of a permuted x
   (per 8 k: x0 x2 x4 x6 x1 x3 x5 x7). Per group and column: t = nibbles 0, 2 and nibbles 1, 3 in two
   chains, added at the group's end; asymmetric t -= z * sum x; acc += s * t. No pre-scaling of x;
   vdpbf16ps reads bf16 subnormal x as zero and flushes subnormal partial sums. res[j * 2 + r]: the 16
   outputs of row r against block b + j. */
AMXK__FORCE_INLINE void amxk__linear_q4__2x16__avx512bf16(const amxk__qview *v, const uint16_t *xr, size_t ldr,
                                                                                   const float *xsum, size_t b, int mr, int nb, int sym,
                                                                                   __m512i tw, __m512 *res) {
    const uint8_t *blk = v->data + b * v->blk_bytes;
    size_t g, rg;
    int r, j, i;
    for (j = 0; j < nb; j++)
        for (r = 0; r < 2; r++) res[j * 2 + r] = _mm512_setzero_ps();
    for (g = 0; g < v->nbk; g++) {
        __m512 acc[AMXK__Q4_NB][2][2]; /* [block][row][k % 8 < 4, >= 4] */
        for (j = 0; j < nb; j++)
            for (r = 0; r < 2; r++) acc[j][r][0] = acc[j][r][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (rg = g * v->bk / 8; rg < (g + 1) * v->bk / 8; rg++) {
#pragma GCC unroll 8
            for (j = 0; j < nb; j++) {
                const __m512i c = _mm512_loadu_si512((const void *)(blk + (size_t)j * v->blk_bytes + rg * 64));
                if (AMXK__Q4_PREFETCH) _mm_prefetch((const char *)(blk + (size_t)j * v->blk_bytes + rg * 64 + AMXK__Q4_PREFETCH), AMXK__Q4_HINT);
#pragma GCC unroll 4
                for (i = 0; i < 4; i++) { /* nibble i: k = 8q + 4 (i & 1) + (i >> 1) and k + 2 */
                    const __m512i w = _mm512_permutexvar_epi16(i ? _mm512_srli_epi16(c, (unsigned)(4 * i)) : c, tw);
#pragma GCC unroll 2
                    for (r = 0; r < mr; r++) {
                        uint32_t x2;
                        memcpy(&x2, xr + (size_t)r * ldr + rg * 8 + (size_t)(2 * i), 4); /* the unit (x[k], x[k + 2]) */
                        acc[j][r][i & 1] = AMXK__DPBF16(acc[j][r][i & 1], w, _mm512_set1_epi32((int)x2));
                    }
                }
            }
        }
#pragma GCC unroll 8
        for (j = 0; j < nb; j++) {
            __m512 sc, zp = _mm512_setzero_ps();
            amxk__q_sgrid16__avx512(v, b + (size_t)j, g, &sc);
            if (!sym) amxk__q_grid16__avx512(v, v->zeros, b + (size_t)j, g, &zp);
#pragma GCC unroll 2
            for (r = 0; r < mr; r++) {
                __m512 t = _mm512_add_ps(acc[j][r][0], acc[j][r][1]);
                if (!sym) t = _mm512_fnmadd_ps(zp, _mm512_set1_ps(xsum[g * 2 + (size_t)r]), t);
                res[j * 2 + r] = _mm512_fmadd_ps(sc, t, res[j * 2 + r]);
            }
        }
    }
}
/* Rows [m0, m1) x blocks [b0, b1) of a 4-bit pack (int4 or LUT; groups of whole 64-byte rows) with bf16
   x, decode path: per pair of rows, x copied to bf16 rows zero-padded to Kp in the kernel's order
   (ws) and, asymmetric packs, the group sums of x (k increasing, f32), then the blocks through the
   kernel above (one row: AMXK__Q4_NB blocks at a time). */
AMXK__PRIV void amxk__linear_q4_block__avx512bf16(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    const __m512i perm = _mm512_set_epi16(31, 29, 27, 25, 30, 28, 26, 24, 23, 21, 19, 17, 22, 20, 18, 16, 15, 13, 11, 9, 14, 12, 10, 8, 7, 5, 3, 1,
                                          6, 4, 2, 0); /* x0 x2 x4 x6 x1 x3 x5 x7 per 8 */
    const amxk__qview *v = a->q;
    uint16_t *xr = (uint16_t *)ws, tab[32];
    float *xs = (float *)(ws + AMXK__ROUND_UP(2 * a->kp * 2, (size_t)AMXK_ALIGN));
    __m512i tw;
    __m512 res[2 * AMXK__Q4_NB];
    size_t i, b, g, kk;
    int r, n, nb;
    for (n = 0; n < 32; n++) /* bf16 code of the field value: q (two's complement), u, or the row's dec */
        tab[n] = amxk__f32_to_bf16(v->tr->dec ? v->tr->dec((uint8_t)(n & 15)) : (float)amxk__q_ival(v, (unsigned)(n & 15)));
    tw = _mm512_loadu_si512((const void *)tab);
    for (i = m0; i < m1; i += 2) {
        const int mr = m1 - i >= 2 ? 2 : 1;
        for (r = 0; r < mr; r++) {
            const uint16_t *src = (const uint16_t *)a->x + (i + (size_t)r) * a->ldx;
            uint16_t *d = xr + (size_t)r * a->kp;
            for (kk = 0; kk < a->kp; kk += 32) { /* 32 at a time: per 8 k the order of ord, zero past K */
                const size_t c = AMXK__MIN((size_t)32, a->k - AMXK__MIN(a->k, kk));
                const __m512i xv = _mm512_maskz_loadu_epi16((__mmask32)(c == 32 ? ~0u : (1u << c) - 1u), src + kk);
                _mm512_storeu_si512((void *)(d + kk), _mm512_permutexvar_epi16(perm, xv));
            }
            for (g = 0; g < v->nbk && v->asym; g++) {
                float sum = 0.0f;
                for (kk = g * v->bk; kk < (g + 1) * v->bk; kk++) sum += amxk__bits_f32((uint32_t)src[kk] << 16);
                xs[g * 2 + (size_t)r] = sum;
            }
        }
        for (b = b0; b < b1; b += (size_t)nb) {
            nb = mr == 1 && b + AMXK__Q4_NB <= b1 && v->blk_bytes > AMXK__Q4_D1B ? AMXK__Q4_NB : 1;
            if (mr == 2) {
                if (v->asym) amxk__linear_q4__2x16__avx512bf16(v, xr, a->kp, xs, b, 2, 1, 0, tw, res);
                else amxk__linear_q4__2x16__avx512bf16(v, xr, a->kp, xs, b, 2, 1, 1, tw, res);
            } else if (nb > 1) {
                if (v->asym) amxk__linear_q4__2x16__avx512bf16(v, xr, a->kp, xs, b, 1, AMXK__Q4_NB, 0, tw, res);
                else amxk__linear_q4__2x16__avx512bf16(v, xr, a->kp, xs, b, 1, AMXK__Q4_NB, 1, tw, res);
            } else if (v->asym) {
                amxk__linear_q4__2x16__avx512bf16(v, xr, a->kp, xs, b, 1, 1, 0, tw, res);
            } else {
                amxk__linear_q4__2x16__avx512bf16(v, xr, a->kp, xs, b, 1, 1, 1, tw, res);
            }
            for (n = 0; n < nb; n++)
                for (r = 0; r < mr; r++) amxk__linear_store16__avx512(a, i + (size_t)r, b + (size_t)n, res[n * 2 + r]);
        }
    }
}

/* Rows [m0, m1) x blocks [b0, b1) at the AVX512_BF16 level: bf16 x on the vdpbf16ps tiles, 4-bit packs
   with bf16 x on the decode path through amxk__linear_q4_block__avx512bf16; the rest:
   amxk__linear_block__avx512. */
AMXK__PRIV void amxk__linear_block__avx512bf16(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    if (a->q && !a->plan->wide && a->dt == AMXK_DTYPE_BF16 && a->q->bits == 4) amxk__linear_q4_block__avx512bf16(a, m0, m1, b0, b1, ws);
    else if (a->dt != AMXK_DTYPE_BF16 || a->wt == AMXK_DTYPE_F32 || (a->q && !a->plan->wide)) amxk__linear_block__avx512(a, m0, m1, b0, b1, ws);
    else amxk__linear_tiles16__avx512(a, m0, m1, b0, b1, ws, 1, amxk__linear_run16__avx512bf16);
}
AMXK__TARGET_END
#endif /* AMXK__HAS_AVX512 */

#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512_BEGIN
AMXK__HMAX_DEFINE(avx512, AMXK__V16)
AMXK__FORCE_INLINE void amxk__stq8__avx512(int8_t *p, __m512 v, int f, __mmask16 k) {
    __m128i q = _mm_xor_si128(_mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)), _mm_set1_epi8((char)f)); /* |q| <= 127: the low byte */
    _mm_mask_storeu_epi8(p, k, q);
}
AMXK__ACTQ_DEFINE(avx512, AMXK__V16)
AMXK__TARGET_END
#endif /* AMXK__HAS_AVX512 */

/* ---- w8a8 (amxk_linear_q8) on AVX512-VNNI ---- */

#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512VNNI_BEGIN
#ifndef AMXK__Q8V_MR
#define AMXK__Q8V_MR 8 /* prefill tile: rows */
#endif
#ifndef AMXK__Q8V_NB
#define AMXK__Q8V_NB 3 /* prefill tile: 16-column blocks (8 x 3 int32 accumulators, 3 weight vectors, a broadcast) */
#endif
#define AMXK__Q8V_DNB 4    /* decode tile (<= 4 rows) for large blocks: blocks streamed at once */
#define AMXK__Q8V_TAB 2048 /* per-task table of x sums and x scales: (row, group) entries */
#ifndef AMXK__Q8V_P
#define AMXK__Q8V_P 24     /* prefill panel: rows (a multiple of MR) ... */
#endif
#ifndef AMXK__Q8V_NC
#define AMXK__Q8V_NC 15    /* ... x blocks (a multiple of NB), accumulated in f32 on the stack (22.5 KiB) */
#endif
#ifndef AMXK__Q8V_NCW
#define AMXK__Q8V_NCW 3    /* ... with the call's x panels (amxk_linear_q8_ws; k step: all of K): blocks per chunk (one tile column) */
#endif
#ifndef AMXK__Q8V_KC
#define AMXK__Q8V_KC 1024  /* prefill k step in columns (a multiple of 64; x panels: P x KC bytes on the stack) */
#endif
#ifndef AMXK__Q8V_PFN
#define AMXK__Q8V_PFN 1 /* prefill: a chunk's tiles prefetch the next chunk's weights, a share each (0: none) */
#endif
#ifndef AMXK__Q8V_PFH
#define AMXK__Q8V_PFH _MM_HINT_T1 /* ... into L2 */
#endif
/* acc = vpdpbusd(acc, u (unsigned bytes), x (signed bytes)). GCC 12 copies the accumulator to
   another register and back around each intrinsic call in these loops (several moves per
   vpdpbusd); the asm form keeps it in place. Same instruction either way. */
#if defined(AMXK_AVX512_EMULATE) || !defined(__GNUC__)
#  define AMXK__DPBUSD512(acc, u, x) ((acc) = _mm512_dpbusd_epi32((acc), (u), (x)))
#else
#  define AMXK__DPBUSD512(acc, u, x) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(x))
#endif

/* mr rows x nb 16-column blocks (b .. b+nb-1), the 64-byte rows [q0, q1) of the packed blocks (k
   [q0 * span, q1 * span)); one 64-byte row is 16 columns x 4 k (int8), 8 k (int4) or 16 k (int2):
   one zmm, span k. vpdpbusd takes the weights as its unsigned operand, u = w + 128 (int8: XOR 0x80),
   q + 2^(b-1) (symmetric int4 / int2: XOR of each field's top bit) or q (asymmetric; a field by a
   shift and an AND), and the 4 x int8 of x as its signed operand. Per weight group the int32 lane
   sums wrap, so t = sum u x - 2^(b-1) sum x (the sums start from the second term) is exact in int32;
   asymmetric: t = sum u x - z sum x in f32 (fnmadd). acc += (sx * sw) * t in f32, once per group. A
   group that [q0, q1) cuts keeps its int32 sums in accs (accm's layout) between calls, so t does not
   depend on the k steps. out: AMXK__Q8V_TO_Y: acc in registers over every group, then to y (q0 = 0,
   q1 = K / span); AMXK__Q8V_TO_PANEL: acc in memory, accm[r * AMXK__Q8V_LDA + 16 j] (a k-blocked
   panel, stored by the caller); AMXK__Q8V_GROUP_TO_Y: one group [q0, q1) covers whole, each output
   to y as fma(sx * sw, t, +0), the bits AMXK__Q8V_TO_PANEL leaves in a zeroed accm.
   x: xp NULL: the rows of x (a->xq); else a unit-major panel of 8 rows from k = q0 * span
   (amxk__xpanel32__avx512). xsum / sxt: the table rows of `row` (x sums and x scales per group,
   stride nbk). xu (x rows only): 1 for U8 codes (each unit XORed with 0x80808080), 0 for I8; the
   panel holds int8 already. mr, nb, bits, out, xu: compile-time constants at the call site. pf: each
   weight stream prefetched pf bytes ahead (0: none); pfp: pfn lines from it prefetched, one per row rg. */
#define AMXK__Q8V_LDA (AMXK__Q8V_NC * AMXK__LIN_NB)
typedef enum amxk__q8v_out { AMXK__Q8V_TO_Y, AMXK__Q8V_TO_PANEL, AMXK__Q8V_GROUP_TO_Y } amxk__q8v_out;
AMXK__FORCE_INLINE void amxk__linear_q8__8x64__avx512vnni(const amxk__q8_args *a, size_t row, int mr, size_t b,
                                                                                   int nb, int bits, const int32_t *xsum,
                                                                                   const float *sxt, size_t q0, size_t q1, amxk__q8v_out out,
                                                                                   float *accm, int32_t *accs, const uint32_t *xp,
                                                                                   size_t pf, int xu, const uint8_t *pfp, size_t pfn) {
    const amxk__qview *v = a->w;
    const size_t nbk = v->nbk, per = (size_t)(8 / bits), span = 4 * per, gq = v->bk / span;
    const int sym = bits == 8 || !v->asym;
    const __m512i fmask = _mm512_set1_epi8((char)((1 << bits) - 1));
    const __m512i flip = _mm512_set1_epi8((char)(bits == 8 ? 0x80 : bits == 4 ? 0x88 : 0xaa)); /* every field's top bit */
    const int32_t xf = xu ? (int32_t)0x80808080u : 0; /* x rows (xp NULL): u8 codes to int8 */
    const uint8_t *wb[AMXK__Q8V_DNB];
    const int8_t *xr[AMXK__Q8V_MR];
    __m512 acc[AMXK__Q8V_MR][AMXK__Q8V_DNB];
    size_t g, rg, f;
    int r, j;
#pragma GCC unroll 4
    for (j = 0; j < nb; j++) wb[j] = v->data + (b + (size_t)j) * v->blk_bytes;
#pragma GCC unroll 8
    for (r = 0; r < mr; r++) {
        xr[r] = a->xq + (row + (size_t)r) * a->ldq;
#pragma GCC unroll 4
        for (j = 0; j < nb; j++) acc[r][j] = _mm512_setzero_ps();
    }
    for (g = q0 / gq; g * gq < q1; g++) {
        const size_t ra = AMXK__MAX(q0, g * gq), rb = AMXK__MIN(q1, (g + 1) * gq);
        __m512i s[AMXK__Q8V_MR][AMXK__Q8V_DNB];
        if (out != AMXK__Q8V_TO_PANEL || ra == g * gq) { /* TO_Y, GROUP_TO_Y: every group whole */
#pragma GCC unroll 8
            for (r = 0; r < mr; r++) { /* symmetric: start from -2^(b-1) sum x (the offset of u) */
                const __m512i s0 = sym ? _mm512_slli_epi32(_mm512_set1_epi32(-xsum[(size_t)r * nbk + g]), (unsigned)(bits - 1))
                                       : _mm512_setzero_si512();
#pragma GCC unroll 4
                for (j = 0; j < nb; j++) s[r][j] = s0;
            }
        } else {
#pragma GCC unroll 8
            for (r = 0; r < mr; r++)
#pragma GCC unroll 4
                for (j = 0; j < nb; j++) s[r][j] = _mm512_loadu_si512((const void *)(accs + (size_t)r * AMXK__Q8V_LDA + (size_t)j * AMXK__LIN_NB));
        }
        for (rg = ra; rg < rb; rg++) {
            __m512i w[AMXK__Q8V_DNB];
            if (rg - q0 < pfn) _mm_prefetch((const char *)(pfp + (rg - q0) * 64), AMXK__Q8V_PFH);
#pragma GCC unroll 4
            for (j = 0; j < nb; j++) {
                w[j] = _mm512_loadu_si512((const void *)(wb[j] + rg * 64));
                if (pf) _mm_prefetch((const char *)(wb[j] + rg * 64 + pf), AMXK__Q8V_PFH);
                if (sym) w[j] = _mm512_xor_si512(w[j], flip);
            }
#pragma GCC unroll 4
            for (f = 0; f < per; f++) { /* field f: columns rg*span + 4f .. +3 */
                __m512i u[AMXK__Q8V_DNB];
#pragma GCC unroll 4
                for (j = 0; j < nb; j++)
                    u[j] = bits == 8 ? w[j] : f == 0 ? _mm512_and_si512(w[j], fmask)
                                                     : _mm512_and_si512(_mm512_srli_epi16(w[j], (unsigned)(f * (size_t)bits)), fmask);
                if (xp) { /* one broadcast load per row for its nb vpdpbusd */
                    const uint32_t *xu = xp + ((rg - q0) * per + f) * 8;
#pragma GCC unroll 8
                    for (r = 0; r < mr; r++) {
                        const __m512i xb = _mm512_set1_epi32((int32_t)xu[r]);
#pragma GCC unroll 4
                        for (j = 0; j < nb; j++) AMXK__DPBUSD512(s[r][j], u[j], xb);
                    }
                } else {
#pragma GCC unroll 8
                    for (r = 0; r < mr; r++) {
                        int32_t x4;
                        __m512i xb;
                        memcpy(&x4, xr[r] + rg * span + 4 * f, 4);
                        xb = _mm512_set1_epi32(x4 ^ xf);
#pragma GCC unroll 4
                        for (j = 0; j < nb; j++) AMXK__DPBUSD512(s[r][j], u[j], xb);
                    }
                }
            }
        }
        if (out == AMXK__Q8V_TO_PANEL && rb < (g + 1) * gq) { /* the group goes on in the next k step */
#pragma GCC unroll 8
            for (r = 0; r < mr; r++)
#pragma GCC unroll 4
                for (j = 0; j < nb; j++) _mm512_storeu_si512((void *)(accs + (size_t)r * AMXK__Q8V_LDA + (size_t)j * AMXK__LIN_NB), s[r][j]);
            continue;
        }
        {
            __m512 sw[AMXK__Q8V_DNB], zw[AMXK__Q8V_DNB];
#pragma GCC unroll 4
            for (j = 0; j < nb; j++) {
                zw[j] = _mm512_setzero_ps();
                amxk__q_grid16__avx512(v, v->scales, b + (size_t)j, g, &sw[j]);
                if (!sym) amxk__q_grid16__avx512(v, v->zeros, b + (size_t)j, g, &zw[j]);
            }
#pragma GCC unroll 8
            for (r = 0; r < mr; r++) {
                const __m512 sx = _mm512_set1_ps(sxt[(size_t)r * nbk + g]);
                const __m512 xf = _mm512_set1_ps((float)xsum[(size_t)r * nbk + g]);
#pragma GCC unroll 4
                for (j = 0; j < nb; j++) {
                    const __m512 t = sym ? _mm512_cvtepi32_ps(s[r][j])
                                         : _mm512_fnmadd_ps(zw[j], xf, _mm512_cvtepi32_ps(s[r][j]));
                    if (out == AMXK__Q8V_TO_PANEL) { /* accm is NULL otherwise: no pointer arithmetic on it */
                        float *pm = accm + (size_t)r * AMXK__Q8V_LDA + (size_t)j * AMXK__LIN_NB;
                        _mm512_storeu_ps(pm, _mm512_fmadd_ps(_mm512_mul_ps(sx, sw[j]), t, _mm512_loadu_ps(pm)));
                    } else if (out == AMXK__Q8V_GROUP_TO_Y) {
                        amxk__linear_store16__avx512(a, row + (size_t)r, b + (size_t)j,
                                                     _mm512_fmadd_ps(_mm512_mul_ps(sx, sw[j]), t, _mm512_setzero_ps()));
                    } else {
                        acc[r][j] = _mm512_fmadd_ps(_mm512_mul_ps(sx, sw[j]), t, acc[r][j]);
                    }
                }
            }
        }
    }
    if (out == AMXK__Q8V_TO_Y)
        for (r = 0; r < mr; r++)
            for (j = 0; j < nb; j++) amxk__linear_store16__avx512(a, row + (size_t)r, b + (size_t)j, acc[r][j]);
}

/* Decode (mr <= 4 rows) x ONE 16-column block b, every group: one sequential weight stream, for
   packed blocks of at most the family's q8_d1b bytes (amxk__stream; larger ones: four blocks at once
   through amxk__linear_q8__8x64__avx512vnni; docs/notes/pack.md), and the last < 4 blocks of a range.
   The vpdpbusd rotate over four int32 chains (latency; 4 / per rows a step, so each chain index is a
   constant and the chains stay in registers); per group t = the chains' wrapped int32 sum (the same
   for any split of the products): the same t and f32 operations as amxk__linear_q8__8x64__avx512vnni,
   so the same bits. xu: as there. */
AMXK__FORCE_INLINE void amxk__linear_q8__4x16__avx512vnni(const amxk__q8_args *a, size_t row, int mr, size_t b,
                                                                                   int bits, const int32_t *xsum, const float *sxt, int xu) {
    const amxk__qview *v = a->w;
    const size_t nbk = v->nbk, per = (size_t)(8 / bits), span = 4 * per, gq = v->bk / span;
    const size_t step = 4 / per; /* rows a step; hoisted: UBSan's divide check in a loop condition makes
                                    gcc drop the unroll annotation ("ignoring loop annotation") */
    const int sym = bits == 8 || !v->asym;
    const __m512i fmask = _mm512_set1_epi8((char)((1 << bits) - 1));
    const __m512i flip = _mm512_set1_epi8((char)(bits == 8 ? 0x80 : bits == 4 ? 0x88 : 0xaa));
    const int32_t xf = xu ? (int32_t)0x80808080u : 0;
    const uint8_t *wb = v->data + b * v->blk_bytes;
    const int8_t *xr[4];
    __m512 acc[4];
    size_t g, rg, f, j;
    int r, c;
#pragma GCC unroll 4
    for (r = 0; r < mr; r++) xr[r] = a->xq + (row + (size_t)r) * a->ldq, acc[r] = _mm512_setzero_ps();
    for (g = 0; g < nbk; g++) {
        __m512i s[4][4];
        __m512 sw, zw = _mm512_setzero_ps();
        amxk__q_grid16__avx512(v, v->scales, b, g, &sw);
        if (!sym) amxk__q_grid16__avx512(v, v->zeros, b, g, &zw);
#pragma GCC unroll 4
        for (r = 0; r < mr; r++) {
            s[r][0] = sym ? _mm512_slli_epi32(_mm512_set1_epi32(-xsum[(size_t)r * nbk + g]), (unsigned)(bits - 1)) : _mm512_setzero_si512();
            s[r][1] = s[r][2] = s[r][3] = _mm512_setzero_si512();
        }
        for (rg = g * gq; rg < (g + 1) * gq; rg += step) {
#pragma GCC unroll 4
            for (j = 0; j < step; j++) { /* chain c = j * per + f: a constant */
                __m512i w;
                if (rg + j >= (g + 1) * gq) break; /* gq need not be a multiple of step */
                w = _mm512_loadu_si512((const void *)(wb + (rg + j) * 64));
                if (sym) w = _mm512_xor_si512(w, flip);
#pragma GCC unroll 4
                for (f = 0; f < per; f++) {
                    const __m512i u = bits == 8 ? w : f == 0 ? _mm512_and_si512(w, fmask)
                                                             : _mm512_and_si512(_mm512_srli_epi16(w, (unsigned)(f * (size_t)bits)), fmask);
                    c = (int)(j * per + f);
#pragma GCC unroll 4
                    for (r = 0; r < mr; r++) {
                        int32_t x4;
                        memcpy(&x4, xr[r] + (rg + j) * span + 4 * f, 4);
                        AMXK__DPBUSD512(s[r][c], u, _mm512_set1_epi32(x4 ^ xf));
                    }
                }
            }
        }
#pragma GCC unroll 4
        for (r = 0; r < mr; r++) {
            const __m512 sx = _mm512_set1_ps(sxt[(size_t)r * nbk + g]);
            const __m512 xf = _mm512_set1_ps((float)xsum[(size_t)r * nbk + g]);
            const __m512i ti = _mm512_add_epi32(_mm512_add_epi32(s[r][0], s[r][1]), _mm512_add_epi32(s[r][2], s[r][3]));
            const __m512 t = sym ? _mm512_cvtepi32_ps(ti) : _mm512_fnmadd_ps(zw, xf, _mm512_cvtepi32_ps(ti));
            acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(sx, sw), t, acc[r]);
        }
    }
    for (r = 0; r < mr; r++) amxk__linear_store16__avx512(a, row + (size_t)r, b, acc[r]);
}

/* x sums (vpdpbusd on ones) and x scales of rows [r0, r1), every group: tab[(r - r0) * nbk + g]. */
AMXK__PRIV void amxk__q8_xtab__avx512vnni(const amxk__q8_args *a, size_t r0, size_t r1, int32_t *xsum, float *sxt) {
    const amxk__qview *v = a->w;
    const __m512i ones = _mm512_set1_epi8(1);
    size_t r, g, kk;
    for (r = r0; r < r1; r++)
        for (g = 0; g < v->nbk; g++) {
            const int8_t *p = a->xq + r * a->ldq + g * v->bk;
            const __m512i flip = _mm512_set1_epi32((int)a->xflip);
            __m512i s = _mm512_setzero_si512();
            int32_t lanes[16], sum = 0;
            int i;
            for (kk = 0; kk < v->bk; kk += 64) {
                const size_t cnt = AMXK__MIN((size_t)64, v->bk - kk);
                const __mmask64 km = cnt == 64 ? ~(__mmask64)0 : (__mmask64)((1ull << cnt) - 1u);
                const __m512i x = _mm512_maskz_mov_epi8(km, _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, p + kk), flip));
                s = _mm512_dpbusd_epi32(s, ones, x);
            }
            _mm512_storeu_si512((void *)lanes, s);
            for (i = 0; i < 16; i++) sum += lanes[i];
            xsum[(r - r0) * v->nbk + g] = sum;
            sxt[(r - r0) * v->nbk + g] = amxk__q8_xscale(a, r, g * v->bk);
        }
}

/* Rows [cm, c1) (decode, or the last rows of a prefill task; the table's rows from c0) x blocks [b0, b1):
   1-4 row tiles, four blocks at once (blocks of more than a->st->q8_d1b bytes; prefetch a->st->q8_pf)
   or one at a time. bits,
   xu (1: U8 codes): compile-time constants at the call site, so that I8 rows get no XOR. */
AMXK__FORCE_INLINE void amxk__q8v_decode__avx512vnni(const amxk__q8_args *a, size_t cm, size_t c0, size_t c1,
                                                                              size_t b0, size_t b1, int bits, const int32_t *xsum,
                                                                              const float *sxt, int xu) {
    const size_t nbk = a->w->nbk, nq = a->w->k / (size_t)(32 / bits), d1b = a->st->q8_d1b, pf = a->st->q8_pf;
    size_t i, b, bb;
    for (i = cm; i < c1; i += 4) {
        const int32_t *xt = xsum + (i - c0) * nbk;
        const float *st = sxt + (i - c0) * nbk;
        for (b = b0; b < b1; b += AMXK__Q8V_DNB) {
            if (b + AMXK__Q8V_DNB <= b1 && a->w->blk_bytes > d1b) {
                switch (AMXK__MIN((size_t)4, c1 - i)) {
                case 4: amxk__linear_q8__8x64__avx512vnni(a, i, 4, b, AMXK__Q8V_DNB, bits, xt, st, 0, nq, AMXK__Q8V_TO_Y, NULL, NULL, NULL, pf, xu, NULL, 0); break;
                case 3: amxk__linear_q8__8x64__avx512vnni(a, i, 3, b, AMXK__Q8V_DNB, bits, xt, st, 0, nq, AMXK__Q8V_TO_Y, NULL, NULL, NULL, pf, xu, NULL, 0); break;
                case 2: amxk__linear_q8__8x64__avx512vnni(a, i, 2, b, AMXK__Q8V_DNB, bits, xt, st, 0, nq, AMXK__Q8V_TO_Y, NULL, NULL, NULL, pf, xu, NULL, 0); break;
                default: amxk__linear_q8__8x64__avx512vnni(a, i, 1, b, AMXK__Q8V_DNB, bits, xt, st, 0, nq, AMXK__Q8V_TO_Y, NULL, NULL, NULL, pf, xu, NULL, 0); break;
                }
            } else {
                for (bb = b; bb < AMXK__MIN(b1, b + AMXK__Q8V_DNB); bb++) switch (AMXK__MIN((size_t)4, c1 - i)) {
                    case 4: amxk__linear_q8__4x16__avx512vnni(a, i, 4, bb, bits, xt, st, xu); break;
                    case 3: amxk__linear_q8__4x16__avx512vnni(a, i, 3, bb, bits, xt, st, xu); break;
                    case 2: amxk__linear_q8__4x16__avx512vnni(a, i, 2, bb, bits, xt, st, xu); break;
                    default: amxk__linear_q8__4x16__avx512vnni(a, i, 1, bb, bits, xt, st, xu); break;
                    }
            }
        }
    }
}

/* Its instances per bit width and x dtype: I8 rows with no XOR at all, and functions of their own, out
   of the prefill tiles' function (faster than inline: docs/notes/pack.md). */
#define AMXK__Q8V_DECODE(BITS, NAME, XU)                                                                              \
    __attribute__((noinline)) AMXK__PRIV void amxk__q8v_decode##BITS##_##NAME##__avx512vnni(                         \
        const amxk__q8_args *a, size_t cm, size_t c0, size_t c1, size_t b0, size_t b1, const int32_t *xsum, const float *sxt) { \
        amxk__q8v_decode__avx512vnni(a, cm, c0, c1, b0, b1, BITS, xsum, sxt, XU);                                     \
    }
AMXK__Q8V_DECODE(8, i8, 0)
AMXK__Q8V_DECODE(8, u8, 1)
AMXK__Q8V_DECODE(4, i8, 0)
AMXK__Q8V_DECODE(4, u8, 1)
AMXK__Q8V_DECODE(2, i8, 0)
AMXK__Q8V_DECODE(2, u8, 1)
#undef AMXK__Q8V_DECODE

/* The tiles of one bit width over rows [c0, c1) x blocks [b0, b1). Panels of up to AMXK__Q8V_P rows x
   AMXK__Q8V_NC blocks accumulate in accm (f32, AMXK__Q8V_KC columns at a time; each k step's x rows
   in 8-row unit-major panels in xpb, in L1 while the tiles sweep them), then go to y (per-channel
   packs with amxk_linear_q8_ws: GROUP_TO_Y, no panel); the last c1 - c0 < MR rows (and decode) run
   1-4 row x 4 block tiles with register accumulators. */
AMXK__FORCE_INLINE void amxk__linear_q8_tiles__avx512vnni(const amxk__q8_args *a, size_t c0, size_t c1, size_t b0, size_t b1,
                                                          const int32_t *xsum, const float *sxt, float *accm, int32_t *accs,
                                                          uint32_t *xpb, int bits) {
    const size_t nbk = a->w->nbk, span = (size_t)(32 / bits), nq = a->w->k / span;
    /* the call's panels (amxk_linear_q8_ws): tile i at xpan + i / 8 * 8 * nux, read in place, all of K
       in one step (no panel to stay in L1), AMXK__Q8V_NCW blocks per column chunk */
    const int xw = AMXK__Q8V_MR == AMXK__Q8_XPAN_ROWS && a->xpan && c0 % AMXK__Q8V_MR == 0;
    const int dw = xw && nbk == 1; /* one group: the tiles store to y themselves (GROUP_TO_Y) */
    const size_t nux = AMXK__Q8_XPAN_UNITS(a->k);
    const size_t kq = xw ? nq : AMXK__MAX((size_t)1, (size_t)AMXK__Q8V_KC / span);
    const size_t cm = c0 + (c1 - c0) / AMXK__Q8V_MR * AMXK__Q8V_MR;
    size_t i, b, bb, p0, p1, q0, q1, k0, k1;
    for (q0 = b0; q0 < b1 && cm > c0; q0 = q1) {
        const size_t qw = xw ? (size_t)AMXK__Q8V_NCW : (size_t)AMXK__Q8V_NC;
        /* the next chunk's weights (nl lines), prefetched in equal shares of pfl lines by this chunk's tiles */
        size_t nl, pfl, pfo = 0;
        q1 = AMXK__MIN(b1, q0 + qw);
        nl = AMXK__Q8V_PFN ? (AMXK__MIN(b1, q1 + qw) - q1) * a->w->blk_bytes / 64 : 0;
        pfl = AMXK__CEIL_DIV(nl, (cm - c0) / AMXK__Q8V_MR * AMXK__CEIL_DIV(q1 - q0, (size_t)AMXK__Q8V_NB) * AMXK__CEIL_DIV(nq, kq));
        for (p0 = c0; p0 < cm; p0 = p1) {
            p1 = AMXK__MIN(cm, p0 + AMXK__Q8V_P);
            if (!dw) memset(accm, 0, (p1 - p0) * AMXK__Q8V_LDA * sizeof(float));
            for (k0 = 0; k0 < nq; k0 = k1) {
                const size_t nu = ((k1 = AMXK__MIN(nq, k0 + kq)) - k0) * span / 4; /* x units per row */
                for (i = p0; i < p1 && !xw; i += AMXK__Q8V_MR)
                    amxk__xpanel32__avx512(a->xq + i * a->ldq + k0 * span, a->ldq, nu * 4, nu, AMXK__Q8V_MR, a->xflip,
                                           xpb + (i - p0) / AMXK__Q8V_MR * 8 * nu);
                for (b = q0; b < q1; b += AMXK__Q8V_NB)
                    for (i = p0; i < p1; i += AMXK__Q8V_MR) {
                        const int32_t *xt = xsum + (i - c0) * nbk;
                        const float *st = sxt + (i - c0) * nbk;
                        const size_t o = (i - p0) * AMXK__Q8V_LDA + (b - q0) * AMXK__LIN_NB;
                        const uint32_t *xp = xw ? a->xpan + (i / AMXK__Q8V_MR * nux + k0 * span / 4) * 8 : xpb + (i - p0) / AMXK__Q8V_MR * 8 * nu;
                        const size_t pfn = AMXK__MIN(k1 - k0, AMXK__MIN(pfl, nl - AMXK__MIN(nl, pfo))); /* this tile's share */
                        const uint8_t *pfp = a->w->data + q1 * a->w->blk_bytes + pfo * 64;
                        if (b + AMXK__Q8V_NB <= q1 && dw)
                            amxk__linear_q8__8x64__avx512vnni(a, i, AMXK__Q8V_MR, b, AMXK__Q8V_NB, bits, xt, st, k0, k1, AMXK__Q8V_GROUP_TO_Y,
                                                              NULL, NULL, xp, 0, 0, pfp, pfn);
                        else if (b + AMXK__Q8V_NB <= q1)
                            amxk__linear_q8__8x64__avx512vnni(a, i, AMXK__Q8V_MR, b, AMXK__Q8V_NB, bits, xt, st, k0, k1, AMXK__Q8V_TO_PANEL,
                                                              accm + o, accs + o, xp, 0, 0, pfp, pfn);
                        else
                            for (bb = b; bb < q1; bb++)
                                if (dw)
                                    amxk__linear_q8__8x64__avx512vnni(a, i, AMXK__Q8V_MR, bb, 1, bits, xt, st, k0, k1, AMXK__Q8V_GROUP_TO_Y,
                                                                      NULL, NULL, xp, 0, 0, pfp, pfn);
                                else
                                    amxk__linear_q8__8x64__avx512vnni(a, i, AMXK__Q8V_MR, bb, 1, bits, xt, st, k0, k1, AMXK__Q8V_TO_PANEL,
                                                                      accm + o + (bb - b) * AMXK__LIN_NB, accs + o + (bb - b) * AMXK__LIN_NB,
                                                                      xp, 0, 0, pfp, pfn);
                        pfo += pfn;
                    }
            }
            for (i = p0; i < p1 && !dw; i++)
                for (b = q0; b < q1; b++)
                    amxk__linear_store16__avx512(a, i, b, _mm512_loadu_ps(accm + (i - p0) * AMXK__Q8V_LDA + (b - q0) * AMXK__LIN_NB));
        }
    }
    if (bits == 8 && a->xflip) amxk__q8v_decode8_u8__avx512vnni(a, cm, c0, c1, b0, b1, xsum, sxt);
    else if (bits == 8) amxk__q8v_decode8_i8__avx512vnni(a, cm, c0, c1, b0, b1, xsum, sxt);
    else if (bits == 4 && a->xflip) amxk__q8v_decode4_u8__avx512vnni(a, cm, c0, c1, b0, b1, xsum, sxt);
    else if (bits == 4) amxk__q8v_decode4_i8__avx512vnni(a, cm, c0, c1, b0, b1, xsum, sxt);
    else if (a->xflip) amxk__q8v_decode2_u8__avx512vnni(a, cm, c0, c1, b0, b1, xsum, sxt);
    else amxk__q8v_decode2_i8__avx512vnni(a, cm, c0, c1, b0, b1, xsum, sxt);
}

/* One out-of-line instance per bit width (inlined into one caller, the three bodies made the
   per-channel M = 256 prefill 4% slower on Emerald Rapids: bench/results.md, issue 30). */
#define AMXK__Q8V_TILES_BITS(BITS)                                                                                     \
    __attribute__((noinline)) AMXK__PRIV void amxk__linear_q8_tiles##BITS##__avx512vnni(                              \
        const amxk__q8_args *a, size_t c0, size_t c1, size_t b0, size_t b1, const int32_t *xsum, const float *sxt,    \
        float *accm, int32_t *accs, uint32_t *xpb) {                                                                   \
        amxk__linear_q8_tiles__avx512vnni(a, c0, c1, b0, b1, xsum, sxt, accm, accs, xpb, BITS);                        \
    }
AMXK__Q8V_TILES_BITS(8)
AMXK__Q8V_TILES_BITS(4)
AMXK__Q8V_TILES_BITS(2)
#undef AMXK__Q8V_TILES_BITS

/* The table's q8_takes: packs of at most AMXK__Q8V_TAB / AMXK__Q8V_MR groups (the table's q8_else,
   the AVX2 level's, runs the others). */
AMXK__PRIV int amxk__linear_q8_takes__avx512vnni(const amxk__qview *v, size_t m, int u8) {
    (void)m, (void)u8;
    return v->nbk * AMXK__Q8V_MR <= AMXK__Q8V_TAB;
}
/* amxk_linear_q8_ws's x panels (the table's q8_xpan): 8-row tiles [t0, t1) of x, all of K, as the
   prefill tiles read them (amxk__xpanel32__avx512: unit-major, U8 codes made int8). */
AMXK__PRIV void amxk__linear_q8_xpan__avx512vnni(const amxk__q8_args *a, size_t t0, size_t t1, uint32_t *xpan) {
    const size_t nu = AMXK__Q8_XPAN_UNITS(a->k);
    size_t t;
    for (t = t0; t < t1; t++)
        amxk__xpanel32__avx512(a->xq + t * AMXK__Q8_XPAN_ROWS * a->ldq, a->ldq, a->k, nu, AMXK__Q8_XPAN_ROWS, a->xflip, xpan + t * 8 * nu);
}

/* The table's q8_xpan_takes: amxk__linear_q8_block__avx512vnni's tiles run pack v (at most
   AMXK__Q8V_TAB / AMXK__Q8V_MR groups) and read a->xpan (8-row tiles). */
AMXK__PRIV int amxk__linear_q8_xpan_takes__avx512vnni(const amxk__qview *v) {
    return AMXK__Q8V_MR == AMXK__Q8_XPAN_ROWS && amxk__linear_q8_takes__avx512vnni(v, 0, 0);
}

/* Rows [m0, m1) x blocks [b0, b1): the x sums and scales of up to AMXK__Q8V_TAB (row, group) pairs
   at a time, then the tiles. */
AMXK__PRIV void amxk__linear_q8_block__avx512vnni(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1) {
    int32_t xsum[AMXK__Q8V_TAB], accs[AMXK__Q8V_P * AMXK__Q8V_LDA];
    float sxt[AMXK__Q8V_TAB], accm[AMXK__Q8V_P * AMXK__Q8V_LDA];
    uint32_t xpb[AMXK__Q8V_P / AMXK__Q8V_MR * 8 * AMXK__Q8V_KC / 4]; /* 8-row unit-major panels of MR rows */
    const size_t nbk = a->w->nbk;
    size_t c0, c1, chunk;
    chunk = AMXK__Q8V_TAB / nbk / AMXK__Q8V_MR * AMXK__Q8V_MR;
    for (c0 = m0; c0 < m1; c0 = c1) {
        c1 = AMXK__MIN(m1, c0 + chunk);
        amxk__q8_xtab__avx512vnni(a, c0, c1, xsum, sxt);
        if (a->w->bits == 8) amxk__linear_q8_tiles8__avx512vnni(a, c0, c1, b0, b1, xsum, sxt, accm, accs, xpb);
        else if (a->w->bits == 4) amxk__linear_q8_tiles4__avx512vnni(a, c0, c1, b0, b1, xsum, sxt, accm, accs, xpb);
        else amxk__linear_q8_tiles2__avx512vnni(a, c0, c1, b0, b1, xsum, sxt, accm, accs, xpb);
    }
}
AMXK__TARGET_END
#endif /* AMXK__HAS_AVX512 */


// >>amx ------------------------------------------------------------------------------------------

#if AMXK__HAS_AMX
AMXK__TARGET_AMX_BEGIN

#if defined(__GNUC__) || defined(__clang__)
#  define AMXK__PREFETCH_L2(p) __builtin_prefetch((p), 0, 2) /* prefetcht1 */
#  define AMXK__PREFETCH_L1(p) __builtin_prefetch((p), 0, 3) /* prefetcht0 */
#else
#  define AMXK__PREFETCH_L2(p) ((void)(p))
#  define AMXK__PREFETCH_L1(p) ((void)(p))
#endif

/* The 2x2 tile step of the AMX kernels: C tiles 0-3 += A tiles 4-5 x B tiles 6-7 by the TDP OP, the
   second B tile when `two`, the second A tile when `hi` (tile numbers stay immediates); with
   AMXK__TZERO_C as OP: those C tiles zeroed. */
#define AMXK__TZERO_C(c, a, b) AMXK__TILE_ZERO(c)
#define AMXK__TDP_2X2(OP)                                                                                \
    do {                                                                                                 \
        OP(0, 4, 6);                                                                                     \
        if (two) OP(1, 4, 7);                                                                            \
        if (hi) OP(2, 5, 6);                                                                             \
        if (hi && two) OP(3, 5, 7);                                                                      \
    } while (0)

/* x rows [m0, m1) as A tiles of R <= 16 rows, two per panel, tile-major: panel p, k step s (32 values),
   half h (rows (2p + h) R .. + R - 1) is the tile at xa + ((p * ns + s) * 2 + h) * 512 (R rows of 64
   bytes in a 1 KiB slot; contiguous tile loads and k sweeps, no L1 set conflicts). Rows past m1 (up
   to a multiple of R) and columns past K are zero. */
AMXK__PRIV void amxk__xtiles__amx(const amxk__linear_args *a, size_t m0, size_t m1, size_t R, uint16_t *xa) {
    const size_t ns = a->kp / AMXK__LIN_KALIGN, rows = AMXK__ROUND_UP(m1 - m0, R);
    size_t r, s;
    for (r = 0; r < rows; r++) {
        const uint16_t *src = m0 + r < m1 ? (const uint16_t *)a->x + (m0 + r) * a->ldx : NULL;
        uint16_t *d = xa + ((r / R / 2) * ns * 2 + (r / R) % 2) * 512 + (r % R) * 32;
        if (src) AMXK__EMU_TOUCH(src, a->k * 2);
        for (s = 0; s < ns; s++, d += 1024) {
            const size_t k0 = s * AMXK__LIN_KALIGN, cnt = src && k0 < a->k ? AMXK__MIN((size_t)AMXK__LIN_KALIGN, a->k - k0) : 0;
            if (cnt) memcpy(d, src + k0, cnt * 2);
            if (cnt < AMXK__LIN_KALIGN) memset(d + cnt, 0, (AMXK__LIN_KALIGN - cnt) * 2);
        }
    }
    AMXK__EMU_TOUCH(xa, rows * a->kp * 2);
    AMXK__EMU_COUNT(xpanel_bytes, rows * a->kp * 2); /* tile counters: x copy bytes */
}

/* The table's lin_xpanel: the panels lin_block reads for rows [m0, m1) of one row chunk. */
AMXK__PRIV void amxk__xpanel__amx(const amxk__linear_args *a, size_t m0, size_t m1, uint16_t *xa) {
    amxk__xtiles__amx(a, m0, m1, amxk__linop_tile_rows(m1 - m0), xa);
}

/* Tile sessions (amxk__tiles): cfg loaded unless the session already holds it; NULL session: loaded. */
AMXK__PRIV void amxk__tiles_release__amx(void) { AMXK__TILE_RELEASE(); }
AMXK__PRIV void amxk__tiles_use__amx(amxk__tiles *ts, const amxk__tilecfg *cfg) {
    if (ts && ts->loaded && memcmp(&ts->cfg, cfg, sizeof *cfg) == 0) return;
    AMXK__TILE_LOADCONFIG(cfg);
    if (ts) ts->cfg = *cfg, ts->loaded = 1, ts->release = amxk__tiles_release__amx;
}
/* The end of a kernel call: a call without a session releases its tiles (a session's stay loaded). */
AMXK__PRIV void amxk__tiles_done__amx(const amxk__tiles *ts) {
    if (!ts) AMXK__TILE_RELEASE();
}

/* Dequantizes blocks b and b + 1 (two: 0 or 1) of a quantized pack into wq (x's 16-bit type, the
   VNNI pair layout of a bf16 pack: each 16-pair slice an AMX B tile) through the vector level. */
AMXK__PRIV void amxk__linear_deq2__amx(const amxk__linear_args *a, size_t b, int two, float *wf, uint16_t *wq) {
    const amxk__qview *v = a->q;
    const size_t blk = (size_t)AMXK__LIN_NB * a->kp, g = v->nbk * AMXK__LIN_NB;
    int h;
    for (h = 0; h <= two; h++) {
        AMXK__EMU_TOUCH(v->data + (b + (size_t)h) * v->blk_bytes, v->blk_bytes); /* L2 model: the pack's reads */
        if (v->scales) AMXK__EMU_TOUCH(v->scales + (b + (size_t)h) * g, g * 4);
        if (v->zeros) AMXK__EMU_TOUCH(v->zeros + (b + (size_t)h) * g, g * 4);
        if (v->e8) AMXK__EMU_TOUCH(v->e8 + (b + (size_t)h) * g, g);
        a->plan->vec->q_block_16(v, b + (size_t)h, a->dt, wf, wq + (size_t)h * blk);
        AMXK__EMU_TOUCH(wq + (size_t)h * blk, blk * 2);
    }
    AMXK__EMU_COUNT(dequant_blocks, 1 + two); /* tile counters (amxk.h, AMXK_AMX_EMU_COUNT) */
    (void)g;
}

/* Rows [m0, m1) x blocks [b0, b1) with 2R x 32 output tiles (C tiles 0-3, A 4-5, B 6-7; oneDNN's
   brgemm structure), R as amxk__linop_tile_rows; x copied once into tile-major panels in ws
   (amxk__xtiles__amx) or read from a->xpan; ts: the tile session (amxk__tiles). Weights in B blocks of
   plan->bpairs block pairs over all of K (quantized: dequantized into ws), swept by every panel with
   the C tiles resident: each weight byte comes from beyond L2 once per task (docs/notes/pack.md).
   More than one panel (amxk__lin_amx_kchunks): per panel and AMXK__LIN_AMX_KP block pairs the K sweep
   in chunks of AMXK__LIN_AMX_KC columns over those pairs, so that the panel's A chunk (2 x KC x 32
   bytes) is read from L1 by every pair; the pairs' C tiles stored to ws between chunks and loaded back
   (f32, exact: the same sums); the A chunk, one B chunk per pair and their C tiles: 36 KiB at 64 x 4.
   PREDICTED (the emulator cache model as a 48 KiB L1, bench/results.md): L2 -> L1 bytes per TDP 1 KiB ->
   0.63 KiB at M = 256; not measured on AMX silicon.
   Epilogue: f32 y without bias, whole tiles: straight from C; else an f32 scratch and store_rows. */
AMXK__PRIV void amxk__linear_block_ts__32x32__amx(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws,
                                                  amxk__tiles *ts) {
    const amxk__linear_plan *p = a->plan;
    const size_t kp = a->kp, ns = kp / AMXK__LIN_KALIGN, blk = (size_t)AMXK__LIN_NB * kp, panel = (size_t)AMXK__LIN_AMX_M * kp;
    /* uniform tiles: the rows in nt tiles of R rows (amxk__linop_tile_rows) */
    const size_t R = amxk__linop_tile_rows(m1 - m0), nt = AMXK__CEIL_DIV(m1 - m0, R);
    const size_t np = AMXK__CEIL_DIV(nt, (size_t)2), gb = 2 * p->bpairs; /* panels of 2 tiles; blocks per B block */
    /* 16-bit weights swept by one panel (no reuse): each B stream prefetched AMXK__LIN_AMX_PFD ahead, not
       the next B block into L2 (that block and this one filled the 2 MiB L2: docs/notes/pack.md) */
    const int one = !a->q && np == 1;
    /* a->xpan: this row chunk's panels built before (a whole chunk), read in place; else copied to ws */
    const int pre = a->xpan && m0 % p->mc == 0 && m1 == AMXK__MIN(a->m, m0 + p->mc);
    const uint16_t *xa = pre ? a->xpan + amxk__linop_xpanel_rows(m0, p->mc) * kp : (const uint16_t *)ws;
    uint16_t *wq = (uint16_t *)(ws + p->ws_a); /* wq: dequantized blocks of one B block */
    float *cs = (float *)(ws + p->ws_a + p->ws_w);
    float *wf = (float *)(wq + gb * blk); /* f32 scratch of the vector dequantizer */
    const int fp16 = a->dt == AMXK_DTYPE_F16, direct = a->yt == AMXK_DTYPE_F32 && !a->bias;
    /* K chunks of cst k steps over kpb blocks (all of K: one chunk over the B block); cspill: the C tiles
       of those blocks' pairs, 32 x 32 f32 each */
    const int chunked = amxk__lin_amx_kchunks(m1 - m0, kp);
    const size_t cst = chunked ? (size_t)AMXK__LIN_AMX_KC / AMXK__LIN_KALIGN : ns, kpb = chunked ? 2 * (size_t)AMXK__LIN_AMX_KP : gb;
    float *const cspill = cs + (size_t)AMXK__LIN_AMX_M * 2 * AMXK__LIN_NB;
    void (*store)(const amxk__linear_args *, size_t, size_t, size_t, size_t, const float *, size_t) = p->vec->store_rows;
    amxk__tilecfg cfg;
    size_t h, b, g0, s, q, j, c0, c1, p0, p1;
    int t;
    if (!pre && (!ts || ts->x != a->x || ts->m0 != m0 || ts->m1 != m1 || ts->r != R || ts->k != a->k || ts->ldx != a->ldx)) {
        amxk__xtiles__amx(a, m0, m1, R, (uint16_t *)ws); /* a session's panel of these rows is still in ws: kept */
        if (ts) ts->x = a->x, ts->m0 = m0, ts->m1 = m1, ts->r = R, ts->k = a->k, ts->ldx = a->ldx;
    }
    memset(&cfg, 0, sizeof cfg);
    for (t = 0; t < 8; t++) amxk__tilecfg_set(&cfg, t, t < 6 ? (int)R : 16, 64); /* C 0-3, A 4-5: R rows; B 6-7 */
    amxk__tiles_use__amx(ts, &cfg);
    for (g0 = b0, j = 0; g0 < b1; g0 += gb, j++) {
        const size_t g1 = AMXK__MIN(b1, g0 + gb), nn = g1 < b1 && !one ? AMXK__MIN(gb, b1 - g1) : 0; /* nn: blocks of the next B block */
        /* the next B block's bytes, prefetched into L2 during this one's sweep, `per` lines per k step */
        const char *nx = !nn ? NULL : a->q ? (const char *)(a->q->data + g1 * a->q->blk_bytes) : (const char *)(a->w + g1 * blk);
        const size_t nlines = !nn ? 0 : (a->q ? nn * a->q->blk_bytes : nn * blk * 2) / 64;
        const size_t per = AMXK__CEIL_DIV(nlines, np * ns * AMXK__CEIL_DIV(g1 - g0, (size_t)2));
        size_t pf = 0; /* next line to prefetch */
        if (a->q) /* quantized: dequantized to x's 16-bit type in the VNNI pair layout (vector level), once */
            for (b = g0; b < g1; b += 2) amxk__linear_deq2__amx(a, b, b + 1 < g1, wf, wq + (b - g0) * blk);
        for (q = 0; q < np; q++) {
            const size_t pi = j % 2 ? np - 1 - q : q; /* serpentine: the last panels read are still in L2 */
            const uint16_t *xp = xa + pi * panel;
            const size_t i0 = m0 + pi * 2 * R, mr = AMXK__MIN(2 * R, m1 - i0);
            const int hi = mr > R; /* rows R..2R-1: A tile 5, C tiles 2-3 */
            /* groups of kpb blocks, K chunks, block pairs (not chunked: one group, one chunk) */
            for (p0 = g0; p0 < g1; p0 = p1)
            for (p1 = AMXK__MIN(g1, p0 + kpb), c0 = 0; c0 < ns; c0 = c1)
            for (c1 = AMXK__MIN(ns, c0 + cst), b = p0; b < p1; b += 2) {
                const int two = b + 1 < g1;
                const uint16_t *w0 = a->q ? wq + (b - g0) * blk : a->w + b * blk, *w1 = w0 + blk;
                float *const sp = cspill + (b - p0) / 2 * (AMXK__LIN_AMX_M * 2 * AMXK__LIN_NB); /* rows 0-15, 16-31 */
                if (c0 == 0) {
                    AMXK__TDP_2X2(AMXK__TZERO_C);
                } else { /* this pair's sums of the chunks before */
                    AMXK__TILE_LOADD(0, sp, 128);
                    if (two) AMXK__TILE_LOADD(1, sp + 16, 128);
                    if (hi) AMXK__TILE_LOADD(2, sp + 512, 128);
                    if (hi && two) AMXK__TILE_LOADD(3, sp + 528, 128);
                }
                for (s = c0; s < c1; s++) {
                    const uint16_t *xt = xp + s * 1024;
                    size_t e;
                    AMXK__TILE_LOADD(4, xt, 64);
                    if (hi) AMXK__TILE_LOADD(5, xt + 512, 64);
                    AMXK__TILE_LOADD(6, w0 + s * 512, 64);
                    if (two) AMXK__TILE_LOADD(7, w1 + s * 512, 64);
                    if (fp16) {
                        AMXK__TDP_2X2(AMXK__TDPFP16PS);
                    } else {
                        AMXK__TDP_2X2(AMXK__TDPBF16PS);
                    }
                    for (e = 0; e < per && pf < nlines; e++, pf++) AMXK__PREFETCH_L2(nx + pf * 64);
                    for (e = 0; one && e < 16; e++) { /* both streams, within the task's blocks */
                        const size_t o = s * 1024 + AMXK__LIN_AMX_PFD + e * 64;
                        if (o < (b1 - b) * blk * 2) AMXK__PREFETCH_L1((const char *)w0 + o);
                        if (two && o + blk * 2 < (b1 - b) * blk * 2) AMXK__PREFETCH_L1((const char *)w1 + o);
                    }
                }
                if (c1 < ns) { /* more chunks: the sums so far to ws */
                    AMXK__TILE_STORED(0, sp, 128);
                    if (two) AMXK__TILE_STORED(1, sp + 16, 128);
                    if (hi) AMXK__TILE_STORED(2, sp + 512, 128);
                    if (hi && two) AMXK__TILE_STORED(3, sp + 528, 128);
                    continue;
                }
                for (h = 0; h < 1 + (size_t)hi; h++) { /* the R-row halves: C tiles 2h, 2h + 1 */
                    const size_t rows = AMXK__MIN(R, mr - R * h), cnt = AMXK__MIN((size_t)(two ? 32 : 16), a->n - b * AMXK__LIN_NB);
                    const int straight = direct && rows == R && cnt == (size_t)(two ? 32 : 16); /* f32, no bias, whole tiles */
                    float *const yp = straight ? (float *)a->y + (i0 + R * h) * a->ldy + b * AMXK__LIN_NB : cs;
                    const size_t ld = straight ? a->ldy : 32;
                    if (h == 0) { /* tile numbers are immediates */
                        AMXK__TILE_STORED(0, yp, ld * 4);
                        if (two) AMXK__TILE_STORED(1, yp + 16, ld * 4);
                    } else {
                        AMXK__TILE_STORED(2, yp, ld * 4);
                        if (two) AMXK__TILE_STORED(3, yp + 16, ld * 4);
                    }
                    if (!straight) store(a, i0 + R * h, rows, b * AMXK__LIN_NB, cnt, cs, 32);
                }
            }
        }
    }
    amxk__tiles_done__amx(ts);
}
AMXK__PRIV void amxk__linear_block__32x32__amx(const amxk__linear_args *a, size_t m0, size_t m1, size_t b0, size_t b1, char *ws) {
    amxk__linear_block_ts__32x32__amx(a, m0, m1, b0, b1, ws, NULL);
}

AMXK__TARGET_AMX_END
#endif /* AMXK__HAS_AMX */

/* ---- w8a8 (amxk_linear_q8) ---- */

#if AMXK__HAS_AMX
AMXK__TARGET_AMX_BEGIN
/* Rows [m0, m1) x blocks [b0, b1) with TDPBSSD (I8 x) or TDPBUSD (U8 codes x + 128) on 2 x 2 tiles of
   R rows x 16 columns (C 0-3; A 4-5 straight from xq; B 6-7: int8 rows, or int4 / int2 widened by
   q8_bprep). R as amxk__linop_tile_rows, no padding rows (the last tile starts at rows - R). Per group
   the C tiles go to int32 scratch (two, alternating) and q8_epi makes the f32 sums one group behind,
   after the next group's tile work (the same operations in the same order per output); K chunks
   (amxk__q8_amx_kc) bound the accumulators. Integer sums exact (TDPBUSD: the wrapped sum plus -128 sum w, q8_bprep). */
/* One weight group (per channel, int8 pack) on I8 x, rows [r0, r0 + rows) in nt tiles of R rows, block
   pairs [b0, b1), tiles configured by the caller: per row-tile pair and AMXK__Q8A_KPQ block pairs the K
   sweep in chunks of kcq columns (a multiple of the k step ks) over those pairs, so that the A chunk
   (32 x kcq bytes) is read from L1 by every pair; the pairs' int32 C tiles stored to `spill` between
   chunks and loaded back (exact: the same sums). cs: the int32 scratch of the epilogue. PREDICTED (the
   emulator cache model as a 48 KiB L1): the same L2 -> L1 cut as the bf16 kernel's K chunks. */
AMXK__PRIV void amxk__linear_q8_kchunks__amx(const amxk__q8_args *a, size_t r0, size_t rows, size_t R, size_t nt, size_t b0, size_t b1, size_t ks,
                                             size_t kcq, int32_t (*cs)[AMXK__Q8A_LD], int32_t (*spill)[32][AMXK__Q8A_LD], float *acc) {
    const amxk__qview *v = a->w;
    const amxk__pack_kernels *vec = a->plan->vec;
    const size_t K = v->k, ldq = a->ldq;
    int8_t xa[2 * 16 * 128]; /* the A chunk, R rows x ks bytes per tile, tiles in k order */
    size_t bg, be, t, c0, c1, b, kk;
    for (bg = b0; bg < b1; bg = be)
        for (be = AMXK__MIN(b1, bg + 2 * (size_t)AMXK__Q8A_KPQ), t = 0; t < nt; t += 2) { /* row tiles t, t + 1 (as the kernel) */
            const int hi = t + 1 < nt;
            const size_t s0 = r0 + AMXK__MIN(t * R, rows - R), s1 = r0 + AMXK__MIN((t + 1) * R, rows - R);
            const size_t sk0 = t == 0 ? 0 : r0 + AMXK__MIN((t - 1) * R, rows - R) + R - s0, sk1 = s0 + R - s1;
            for (c0 = 0; c0 < K; c0 = c1)
                for (c1 = AMXK__MIN(K, c0 + kcq), b = bg; b < be; b += 2) {
                    const int two = b + 1 < b1, nb = 1 + two;
                    const int8_t *w0 = (const int8_t *)(const void *)(v->data + b * v->blk_bytes), *w1 = w0 + v->blk_bytes;
                    int32_t(*sp)[AMXK__Q8A_LD] = spill[(b - bg) / 2];
                    if (c0 == 0) {
                        AMXK__TDP_2X2(AMXK__TZERO_C);
                    } else {
                        AMXK__TILE_LOADD(0, sp[0], AMXK__Q8A_LD * 4);
                        if (two) AMXK__TILE_LOADD(1, sp[0] + 16, AMXK__Q8A_LD * 4);
                        if (hi) AMXK__TILE_LOADD(2, sp[16], AMXK__Q8A_LD * 4);
                        if (hi && two) AMXK__TILE_LOADD(3, sp[16] + 16, AMXK__Q8A_LD * 4);
                    }
                    for (kk = c0; kk < c1; kk += ks) {
                        int8_t *xt = xa + (kk - c0) / ks * 2 * R * ks;
                        if (b == bg) { /* the rows (4 KiB apart: one L1 set) copied to xa once per chunk */
                            AMXK__TILE_LOADD(4, a->xq + s0 * ldq + kk, ldq);
                            AMXK__TILE_STORED(4, xt, ks);
                            if (hi) AMXK__TILE_LOADD(5, a->xq + s1 * ldq + kk, ldq);
                            if (hi) AMXK__TILE_STORED(5, xt + R * ks, ks);
                        } else {
                            AMXK__TILE_LOADD(4, xt, ks);
                            if (hi) AMXK__TILE_LOADD(5, xt + R * ks, ks);
                        }
                        AMXK__TILE_LOADD(6, w0 + kk / 4 * 64, 64);
                        if (two) AMXK__TILE_LOADD(7, w1 + kk / 4 * 64, 64);
                        AMXK__TDP_2X2(AMXK__TDPBSSD);
                    }
                    if (c1 >= K) sp = cs; /* the last chunk: the sums to the epilogue's scratch */
                    AMXK__TILE_STORED(0, sp[0], AMXK__Q8A_LD * 4);
                    if (two) AMXK__TILE_STORED(1, sp[0] + 16, AMXK__Q8A_LD * 4);
                    if (hi) AMXK__TILE_STORED(2, sp[16], AMXK__Q8A_LD * 4);
                    if (hi && two) AMXK__TILE_STORED(3, sp[16] + 16, AMXK__Q8A_LD * 4);
                    if (c1 < K) continue;
                    vec->q8_epi(a, s0 + sk0, R - sk0, b, nb, 0, cs[sk0], NULL, acc, 1, 1);
                    if (hi) vec->q8_epi(a, s1 + sk1, R - sk1, b, nb, 0, cs[16 + sk1], NULL, acc, 1, 1);
                }
        }
}

AMXK__PRIV void amxk__linear_q8_block_ts__32x32__amx(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1, amxk__tiles *ts) {
    const amxk__qview *v = a->w;
    const amxk__pack_kernels *vec = a->plan->vec;
    const int u8 = a->xflip != 0;
    const size_t ks = amxk__q8_kstep(v->bk), kc = amxk__q8_amx_kc(v, u8), K = v->k, bk = v->bk, ldq = a->ldq;
    const int multi = kc < K;
    /* K chunks of kcq columns (amxk__linear_q8_kchunks__amx): one group of an int8 pack on I8 x, more than one block pair */
    const size_t kcq0 = ks ? ks * AMXK__MAX((size_t)1, (size_t)AMXK__Q8A_KCQ / ks) : 0;
    const size_t kcq = AMXK__Q8A_KCQ > 0 && !u8 && v->bits == 8 && v->nbk == 1 && b1 - b0 > 2 && K > kcq0 ? kcq0 : 0;
    char wraw[2 * AMXK__LIN_NB * AMXK__Q8A_KC + 64]; /* int4 / int2 widened; K chunks: their C tiles */
    int8_t *wb = (int8_t *)(void *)(wraw + (64 - (uintptr_t)wraw % 64) % 64);
    int32_t corr[AMXK__Q8A_GMAX][AMXK__Q8A_LD], cs[2][32][AMXK__Q8A_LD]; /* cs: group g's int32 sums in cs[g & 1] */
    float acc[AMXK__Q8A_MC][AMXK__Q8A_LD];
    amxk__tilecfg cfg;
    size_t mc0, mc1, b, k0, g, kk, t;
    amxk__tiles own, *ss = ts ? ts : &own; /* no session: one of this call's own */
    memset(&own, 0, sizeof own);
    for (mc0 = m0; mc0 < m1; mc0 = mc1) {
        const size_t rows = (mc1 = multi ? AMXK__MIN(m1, mc0 + AMXK__Q8A_MC) : m1) - mc0;
        const size_t R = amxk__linop_tile_rows(rows), nt = AMXK__CEIL_DIV(rows, R);
        { /* once per row chunk; in a session only when it holds another configuration */
            int i;
            memset(&cfg, 0, sizeof cfg);
            for (i = 0; i < 4; i++) amxk__tilecfg_set(&cfg, i, (int)R, 64);
            amxk__tilecfg_set(&cfg, 4, (int)R, (int)ks);
            amxk__tilecfg_set(&cfg, 5, (int)R, (int)ks);
            amxk__tilecfg_set(&cfg, 6, (int)(ks / 4), 64);
            amxk__tilecfg_set(&cfg, 7, (int)(ks / 4), 64);
            amxk__tiles_use__amx(ss, &cfg);
        }
        if (kcq) { /* one group on I8 x, more than one block pair: K chunks */
            amxk__linear_q8_kchunks__amx(a, mc0, rows, R, nt, b0, b1, ks, kcq, cs[0], (int32_t(*)[32][AMXK__Q8A_LD])(void *)wb, acc[0]);
            continue;
        }
        for (b = b0; b < b1; b += 2) {
            const int two = b + 1 < b1, nb = 1 + two;
            for (k0 = 0; k0 < K; k0 += kc) {
                const size_t k1 = AMXK__MIN(K, k0 + kc), g0 = k0 / bk;
                const int8_t *w0, *w1;
                size_t base = 0; /* the k of the B source's first row */
                if (v->bits < 8) {
                    vec->q8_bprep(v, b, k0, k1, wb, u8 ? corr[0] : NULL, AMXK__Q8A_LD);
                    if (two) vec->q8_bprep(v, b + 1, k0, k1, wb + AMXK__LIN_NB * kc, u8 ? corr[0] + 16 : NULL, AMXK__Q8A_LD);
                    AMXK__EMU_COUNT(dequant_blocks, k0 == 0 ? nb : 0); /* tile counters: blocks widened (once per block) */
                    AMXK__EMU_TOUCH(v->data + b * v->blk_bytes + k0 * 2 * (size_t)v->bits, (k1 - k0) * 2 * (size_t)v->bits); /* L2 model: */
                    if (two) AMXK__EMU_TOUCH(v->data + (b + 1) * v->blk_bytes + k0 * 2 * (size_t)v->bits, (k1 - k0) * 2 * (size_t)v->bits); /* fields read */
                    w0 = wb, w1 = wb + AMXK__LIN_NB * kc, base = k0;
                } else {
                    if (u8) vec->q8_bprep(v, b, k0, k1, NULL, corr[0], AMXK__Q8A_LD);
                    if (u8 && two) vec->q8_bprep(v, b + 1, k0, k1, NULL, corr[0] + 16, AMXK__Q8A_LD);
                    w0 = (const int8_t *)(const void *)(v->data + b * v->blk_bytes), w1 = w0 + v->blk_bytes;
                }
                for (t = 0; t < nt; t += 2) { /* row tiles t, t + 1 (s: first row, sk: rows its epilogue skips) */
                    const int hi = t + 1 < nt;
                    const size_t s0 = mc0 + AMXK__MIN(t * R, rows - R), s1 = mc0 + AMXK__MIN((t + 1) * R, rows - R);
                    const size_t sk0 = t == 0 ? 0 : mc0 + AMXK__MIN((t - 1) * R, rows - R) + R - s0, sk1 = s0 + R - s1;
                    float *ac0 = multi ? acc[s0 + sk0 - mc0] : acc[sk0], *ac1 = multi ? acc[s1 + sk1 - mc0] : acc[16 + sk1];
                    const size_t g1 = k1 / bk;
/* group e's epilogue from its int32 sums in cs[e & 1] (rows the previous tile pair covered skipped) */
#define AMXK__Q8A_EPI(e)                                                                                 \
    do {                                                                                                 \
        int32_t(*ce)[AMXK__Q8A_LD] = cs[(e) & 1];                                                        \
        vec->q8_epi(a, s0 + sk0, R - sk0, b, nb, (e), ce[sk0], u8 ? corr[(e) - g0] : NULL, ac0, (e) == 0, (e) + 1 == v->nbk); \
        if (hi) vec->q8_epi(a, s1 + sk1, R - sk1, b, nb, (e), ce[16 + sk1], u8 ? corr[(e) - g0] : NULL, ac1, (e) == 0, (e) + 1 == v->nbk); \
    } while (0)
                    for (g = g0; g < g1; g++) {
                        int32_t(*cg)[AMXK__Q8A_LD] = cs[g & 1];
                        AMXK__TDP_2X2(AMXK__TZERO_C);
                        for (kk = g * bk; kk < (g + 1) * bk; kk += ks) {
                            AMXK__TILE_LOADD(4, a->xq + s0 * ldq + kk, ldq);
                            if (hi) AMXK__TILE_LOADD(5, a->xq + s1 * ldq + kk, ldq);
                            AMXK__TILE_LOADD(6, w0 + (kk - base) / 4 * 64, 64);
                            if (two) AMXK__TILE_LOADD(7, w1 + (kk - base) / 4 * 64, 64);
                            if (u8) { /* tile numbers are immediates */
                                AMXK__TDP_2X2(AMXK__TDPBUSD);
                            } else {
                                AMXK__TDP_2X2(AMXK__TDPBSSD);
                            }
                        }
                        /* the previous group's epilogue after this group's tile work in program order, so
                           that the tile unit computes while the vector units convert (software pipeline) */
                        if (AMXK__Q8A_PIPE && g > g0) AMXK__Q8A_EPI(g - 1);
                        AMXK__TILE_STORED(0, cg[0], AMXK__Q8A_LD * 4);
                        if (two) AMXK__TILE_STORED(1, cg[0] + 16, AMXK__Q8A_LD * 4);
                        if (hi) AMXK__TILE_STORED(2, cg[16], AMXK__Q8A_LD * 4);
                        if (hi && two) AMXK__TILE_STORED(3, cg[16] + 16, AMXK__Q8A_LD * 4);
                        if (!AMXK__Q8A_PIPE) AMXK__Q8A_EPI(g);
                    }
                    if (AMXK__Q8A_PIPE) AMXK__Q8A_EPI(g1 - 1);
#undef AMXK__Q8A_EPI
                }
            }
        }
    }
    amxk__tiles_done__amx(ts);
}
AMXK__PRIV void amxk__linear_q8_block__32x32__amx(const amxk__q8_args *a, size_t m0, size_t m1, size_t b0, size_t b1) {
    amxk__linear_q8_block_ts__32x32__amx(a, m0, m1, b0, b1, NULL);
}
AMXK__TARGET_AMX_END
#endif

// >>dispatch -------------------------------------------------------------------------------------

/* ---- per-level workspace of amxk_linear (the tables' lin_ws) ---- */

AMXK__PRIV void amxk__linear_ws__scalar(amxk__linear_plan *p, size_t m, size_t kp, int quant) {
    (void)m;
    p->ws_w = quant ? (size_t)AMXK__LIN_NB * kp * 4 : 0; /* a dequantized f32 block */
}
#if AMXK__HAS_AVX2
AMXK__PRIV void amxk__linear_ws__avx2(amxk__linear_plan *p, size_t m, size_t kp, int quant) {
    p->wide = quant == 1 || m >= (quant ? (size_t)p->kt->q_wide[quant - 2] : (size_t)AMXK__LIN_WIDE_M);
    p->ws_a = AMXK__ROUND_UP(AMXK__ROUND_UP(p->mc, (size_t)AMXK__LIN_MR) * kp * 4, (size_t)AMXK_ALIGN);
    /* wide: a widened block; else quantized: group sums of x, then the x rows contiguous (fp8 lane dot) */
    p->ws_w = p->wide ? (size_t)AMXK__LIN_NB * kp * 4 : quant ? (kp / 4 + kp) * AMXK__LIN_MR * 4 : 0;
}
#endif
#if AMXK__HAS_AVX512
/* The AVX-512 prefill grid (m > 4; decode keeps amxk__pack_layout's N split): tasks of up to
   AMXK__LIN_NC16 blocks over as many rows as AMXK__LIN_XP16_BYTES of x panels hold, so that each staged
   group of NR16 blocks serves every row of its task from L2 (docs/notes/pack.md). Rows per task (mc)
   never depend on the worker count (callers chunk rows by it, amxk__linop_chunk; a chunk of at most 4
   rows, or a quantized one below the table's q_wide, runs the decode kernels, another summation
   order). Narrow N gets more row chunks so that the grid holds AMXK__LIN_TASKS16 tasks (at least 48
   rows each); then N is split (down to NR16 blocks per task) until there is a task per worker and the
   count is a multiple of the workers (or >= 4 each). */
#ifndef AMXK__LIN_TASKS16
#define AMXK__LIN_TASKS16 64
#endif
AMXK__PRIV void amxk__linear_grid16__avx512(amxk__linear_plan *p, size_t m, size_t kp) {
    const size_t w = p->workers, mr = AMXK__LIN_MR16, ntmax = AMXK__CEIL_DIV(p->nblk, (size_t)AMXK__LIN_NR16);
    const size_t cap = AMXK__MAX(mr, (size_t)AMXK__LIN_XP16_BYTES / 4 / kp / mr * mr); /* rows per task */
    const size_t mt = AMXK__MAX(AMXK__CEIL_DIV(m, cap), AMXK__MIN(AMXK__CEIL_DIV(m, (size_t)AMXK__LIN_MC_VEC),
                                                                   AMXK__CEIL_DIV((size_t)AMXK__LIN_TASKS16, ntmax)));
    size_t nt = AMXK__CEIL_DIV(p->nblk, (size_t)AMXK__LIN_NC16);
    while (nt < ntmax && (mt * nt < w || ((mt * nt) % w != 0 && mt * nt < 4 * w))) nt++;
    p->nc = AMXK__CEIL_DIV(p->nblk, nt);
    p->mc = AMXK__MIN(m, AMXK__ROUND_UP(AMXK__CEIL_DIV(m, mt), mr));
}
/* The AVX-512 levels: the AVX2 layout (the quantized decode path uses it), grown if needed to hold
   amxk__linear_tiles16__avx512's: x panels (ceil(mc / MR16) x 8 x Kp 32-bit units), MR16 f32 x rows,
   NR16 staged blocks (f32, or bf16 pairs) and an f32 scratch block; prefill (m > 4): the grid of
   amxk__linear_grid16__avx512. */
AMXK__PRIV void amxk__linear_ws__avx512(amxk__linear_plan *p, size_t m, size_t kp, int quant) {
    size_t need;
    if (m > 4) amxk__linear_grid16__avx512(p, m, kp);
    need = AMXK__ROUND_UP(AMXK__LIN16_PANELS(p->mc) * AMXK__LIN_XS16 * kp * 4, (size_t)AMXK_ALIGN) +
           (size_t)AMXK__LIN_MR16 * kp * 4 + (size_t)AMXK__LIN_NR16 * AMXK__LIN_NB * kp * 4 + (size_t)AMXK__LIN_NB * kp * 4;
    amxk__linear_ws__avx2(p, m, kp, quant);
    if (p->ws_a + p->ws_w < need) p->ws_w = AMXK__ROUND_UP(need - p->ws_a, (size_t)AMXK_ALIGN);
}
#endif
#if AMXK__HAS_AMX
/* The AMX level's grid and workspace (amxk__linear_block__32x32__amx): N-major, each worker one N range
   (an even number of blocks) over all the rows up to AMXK__LIN_AMX_MC (larger M: chunks of that many
   rows, each chunk streaming the weights again); per worker the tile-major A panels of a chunk, two
   dequantized blocks and the dequantizer's f32 scratch (quantized packs), a 32 x 32 f32 C scratch. */
AMXK__PRIV void amxk__linear_ws__amx(amxk__linear_plan *p, size_t m, size_t kp, int quant) {
    int *o = &p->ws_overflow;
    p->mc = AMXK__MIN(m, (size_t)AMXK__LIN_AMX_MC);
    p->nc = AMXK__MIN(p->nblk, AMXK__ROUND_UP(AMXK__CEIL_DIV(p->nblk, p->workers), (size_t)2));
    p->ws_a = amxk__sz_round(amxk__sz_mul(amxk__sz_mul(AMXK__ROUND_UP(p->mc, (size_t)AMXK__LIN_AMX_M), kp, o), 2, o), (size_t)AMXK_ALIGN, o);
    /* a block pair holds 64 bytes per k (2 x 16 lanes x 2 bytes); the quotient is taken before any product can wrap */
    p->bpairs = kp >= (size_t)AMXK__LIN_AMX_BBYTES / 64 ? 1 : (size_t)AMXK__LIN_AMX_BBYTES / 64 / kp;
    p->bpairs = AMXK__MAX((size_t)1, AMXK__MIN(p->bpairs, AMXK__CEIL_DIV(p->nc, (size_t)2)));
    /* the B block's 16-bit blocks + the dequantizer's f32 scratch block */
    p->ws_w = quant ? amxk__sz_mul(amxk__sz_add(amxk__sz_mul(2 * p->bpairs, (size_t)AMXK__LIN_NB * 2, o), (size_t)AMXK__LIN_NB * 4, o), kp, o) : 0;
    p->ws_c = (size_t)AMXK__LIN_AMX_M * 2 * AMXK__LIN_NB * 4;
    if (amxk__lin_amx_kchunks(p->mc, kp)) /* + the C tiles of AMXK__LIN_AMX_KP block pairs between K chunks */
        p->ws_c *= 1 + (size_t)AMXK__LIN_AMX_KP;
}
/* bf16 tiles (AMX-BF16); fp16 tiles only with AMX-FP16 (the amx_fp16 table); no fp32 tiles (f32 packs:
   the vector level). */
AMXK__PRIV int amxk__linear_takes__amx(amxk_dtype dt) { return dt == AMXK_DTYPE_BF16; }
AMXK__PRIV int amxk__linear_takes__amxfp16(amxk_dtype dt) { return dt == AMXK_DTYPE_BF16 || dt == AMXK_DTYPE_F16; }
/* w8a8 on AMX-INT8 or on the vector level: a cycle model of one Sapphire Rapids core (its
   assumptions and the thresholds it gives: docs/notes/pack.md), per 16 output columns and weight
   group of g columns, for m rows (ks: the k step):
       AMX   ceil(m / 16) * (16 g / ks + 16) + 1.5 m  (+ g / 2 for int4 / int2)
       VNNI  m * (g / 8 + 1)
   AMX is taken where its figure is smaller. The AMX kernel also needs a k step (amxk__q8_kstep)
   and, for int4 / int2, g <= AMXK__Q8A_KC (its widening buffer). */
AMXK__INLINE int amxk__q8_amx_wins(size_t m, size_t g, size_t ks, int bits) {
    const double amx = (double)AMXK__CEIL_DIV(m, (size_t)16) * (16.0 * (double)g / (double)ks + 16.0) + 1.5 * (double)m +
                       (bits < 8 ? 0.5 * (double)g : 0.0);
    return amx < (double)m * ((double)g / 8.0 + 1.0);
}
AMXK__PRIV int amxk__linear_q8_takes__amx(const amxk__qview *v, size_t m, int u8) {
    const size_t ks = amxk__q8_kstep(v->bk);
    (void)u8;
    return ks != 0 && (v->bits == 8 || v->bk <= AMXK__Q8A_KC) && amxk__q8_amx_wins(m, v->bk, ks, v->bits);
}
/* The AMX w8a8 grid: N-major, one task per worker (block pairs split evenly) over all rows, or over
   row chunks of AMXK__Q8A_MC when the k chunks are shorter than K (the accumulators' bound). */
AMXK__PRIV void amxk__linear_q8_grid__amx(amxk__linear_plan *p, const amxk__qview *v, size_t m, int u8, size_t workers) {
    const size_t nblk = amxk__lin_nblk(v->n), pairs = AMXK__CEIL_DIV(nblk, (size_t)2);
    p->mc = amxk__q8_amx_kc(v, u8) < v->k ? AMXK__MIN(m, (size_t)AMXK__Q8A_MC) : m;
    p->nc = AMXK__MIN(nblk, 2 * AMXK__CEIL_DIV(pairs, AMXK__MAX((size_t)1, workers)));
    p->m_tasks = AMXK__CEIL_DIV(m, p->mc);
    p->n_tasks = AMXK__CEIL_DIV(nblk, p->nc);
}
#endif

/* ---- the tables: one per level with kernels of its own ---- */

static const amxk__pack_kernels amxk__pack_kernels_scalar = {
    AMXK__LIN_MC_VEC, 1, AMXK__LIN_NC, NULL, amxk__linear_ws__scalar, amxk__linear__1x16__scalar, NULL, amxk__linear_q8__1x16__scalar, NULL,
    amxk__q_block_16, amxk__linear_store_rows__scalar, NULL, amxk__q8_bprep__scalar, amxk__q8_epi__scalar, 1, NULL, NULL, NULL, NULL, NULL, NULL, AMXK__LIN_QW_ANY};
#if AMXK__HAS_AVX2
static const amxk__pack_kernels amxk__pack_kernels_avx2 = {
    AMXK__LIN_MC_VEC, 1, AMXK__LIN_NC, NULL, amxk__linear_ws__avx2, amxk__linear_block__avx2, NULL, amxk__linear_q8_block__avx2,
    amxk__actq_group__avx2, amxk__q_block_16__avx2, amxk__linear_store_rows__avx2, NULL, amxk__q8_bprep__avx2, amxk__q8_epi__avx2, 1, NULL, NULL, NULL, NULL, NULL, NULL, AMXK__LIN_QW_AVX2};
#endif
#if AMXK__HAS_AVXVNNI
/* the AVX2 level on a CPU with AVX-VNNI: w8a8 on VEX vpdpbusd */
static const amxk__pack_kernels amxk__pack_kernels_avx2vnni = {
    AMXK__LIN_MC_VEC, 1, AMXK__LIN_NC, NULL, amxk__linear_ws__avx2, amxk__linear_block__avx2, NULL, amxk__linear_q8_block__avxvnni,
    amxk__actq_group__avx2, amxk__q_block_16__avx2, amxk__linear_store_rows__avx2, NULL, amxk__q8_bprep__avx2, amxk__q8_epi__avx2, 1, NULL, NULL, NULL, NULL, NULL, NULL, AMXK__LIN_QW_AVX2};
#endif
#if AMXK__HAS_AVX512
static const amxk__pack_kernels amxk__pack_kernels_avx512 = {
    AMXK__LIN_MC_VEC, 1, AMXK__LIN_NC16, NULL, amxk__linear_ws__avx512, amxk__linear_block__avx512, NULL, amxk__linear_q8_block__avx2,
    amxk__actq_group__avx512, amxk__q_block_16__avx512, amxk__linear_store_rows__avx512, NULL, amxk__q8_bprep__avx2,
    amxk__q8_epi__avx512, 1, NULL, NULL, NULL, NULL, NULL, NULL, AMXK__LIN_QW512};
static const amxk__pack_kernels amxk__pack_kernels_avx512vnni = {
    AMXK__LIN_MC_VEC, 1, AMXK__LIN_NC16, NULL, amxk__linear_ws__avx512, amxk__linear_block__avx512, amxk__linear_q8_takes__avx512vnni,
    amxk__linear_q8_block__avx512vnni, amxk__actq_group__avx512, amxk__q_block_16__avx512, amxk__linear_store_rows__avx512, NULL, amxk__q8_bprep__avx2,
    amxk__q8_epi__avx512, 1, NULL, NULL, amxk__linear_q8_xpan__avx512vnni, amxk__linear_q8_xpan_takes__avx512vnni, NULL,
    &amxk__pack_kernels_avx2, AMXK__LIN_QW512};
static const amxk__pack_kernels amxk__pack_kernels_avx512bf16 = {
    AMXK__LIN_MC_VEC, 1, AMXK__LIN_NC16, NULL, amxk__linear_ws__avx512, amxk__linear_block__avx512bf16, amxk__linear_q8_takes__avx512vnni,
    amxk__linear_q8_block__avx512vnni, amxk__actq_group__avx512, amxk__q_block_16__avx512, amxk__linear_store_rows__avx512, NULL, amxk__q8_bprep__avx2,
    amxk__q8_epi__avx512, 1, NULL, NULL, amxk__linear_q8_xpan__avx512vnni, amxk__linear_q8_xpan_takes__avx512vnni, NULL,
    &amxk__pack_kernels_avx2, AMXK__LIN_QW_ANY};
#endif
#if AMXK__HAS_AMX
/* AMX-TILE/BF16/INT8 (Sapphire / Emerald Rapids): fp16 x runs the vector level */
static const amxk__pack_kernels amxk__pack_kernels_amx = {
    AMXK__LIN_MC, AMXK__LIN_AMX_MIN_M, AMXK__LIN_NC, amxk__linear_takes__amx, amxk__linear_ws__amx, amxk__linear_block__32x32__amx,
    amxk__linear_q8_takes__amx, amxk__linear_q8_block__32x32__amx, NULL, NULL, NULL, amxk__linear_q8_grid__amx, NULL, NULL, 2,
    amxk__linear_block_ts__32x32__amx, amxk__linear_q8_block_ts__32x32__amx, NULL, NULL, amxk__xpanel__amx, NULL, AMXK__LIN_QW_ANY};
/* the AMX level with AMX-FP16 (Granite Rapids): fp16 x on TDPFP16PS too */
static const amxk__pack_kernels amxk__pack_kernels_amxfp16 = {
    AMXK__LIN_MC, AMXK__LIN_AMX_MIN_M, AMXK__LIN_NC, amxk__linear_takes__amxfp16, amxk__linear_ws__amx, amxk__linear_block__32x32__amx,
    amxk__linear_q8_takes__amx, amxk__linear_q8_block__32x32__amx, NULL, NULL, NULL, amxk__linear_q8_grid__amx, NULL, NULL, 2,
    amxk__linear_block_ts__32x32__amx, amxk__linear_q8_block_ts__32x32__amx, NULL, NULL, amxk__xpanel__amx, NULL, AMXK__LIN_QW_ANY};
#endif

/* The table of ISA level `level` (a context's tier, or a vector level) with the context's features
   `feat` (amxk__features); variants beyond a level's own features: the AVX2 level's w8a8 kernel on
   AVX-VNNI, the AMX level's fp16 tiles on AMX-FP16. */
AMXK__PRIV const amxk__pack_kernels *amxk__pack_kernels_for(amxk_tier level, uint32_t feat) {
#if AMXK__HAS_AMX
    if (level == AMXK_TIER_AMX) return (feat & AMXK_CPU_AMX_FP16) ? &amxk__pack_kernels_amxfp16 : &amxk__pack_kernels_amx;
#endif
#if AMXK__HAS_AVX512
    if (level >= AMXK_TIER_AVX512_BF16 && level < AMXK_TIER_AMX) return &amxk__pack_kernels_avx512bf16;
    if (level == AMXK_TIER_AVX512_VNNI) return &amxk__pack_kernels_avx512vnni;
    if (level == AMXK_TIER_AVX512) return &amxk__pack_kernels_avx512;
#endif
#if AMXK__HAS_AVXVNNI
    if (level == AMXK_TIER_AVX2 && (feat & AMXK_CPU_AVXVNNI)) return &amxk__pack_kernels_avx2vnni;
#endif
#if AMXK__HAS_AVX2
    if (level >= AMXK_TIER_AVX2 && level < AMXK_TIER_AMX) return &amxk__pack_kernels_avx2;
#endif
    (void)level, (void)feat;
    return &amxk__pack_kernels_scalar;
}
/* The table of a context's level. */
AMXK__INLINE const amxk__pack_kernels *amxk__pack_kernels_ctx(const amxk_ctx *ctx) {
    return amxk__pack_kernels_for(amxk__tier(ctx), amxk__features(ctx));
}
/* The vector level's table of a context (its best level below AMX). */
AMXK__INLINE const amxk__pack_kernels *amxk__pack_kernels_vec(const amxk_ctx *ctx) {
    return amxk__pack_kernels_for(amxk__vec_level(ctx), amxk__features(ctx));
}

/* 1 when the w8a8 call of plan p on pack v reads x panels (q8_xpan's, a->xpan): the vector level
   runs it and its tiles take v. */
AMXK__INLINE int amxk__q8_xpan_used(const amxk__linear_plan *p, const amxk__qview *v) {
    return p->kt == p->vec && p->vec->q8_xpan && p->vec->q8_xpan_takes && p->vec->q8_xpan_takes(v);
}

/* ---- the one layout of amxk_linear and amxk_linear_q8 ---- */

#define AMXK__OP_LINEAR 0
#define AMXK__OP_Q8 1

/* The plan of op (AMXK__OP_LINEAR, or AMXK__OP_Q8: no workspace) for m rows of an [n, k] pack: q its
   quantized view (NULL: none, or a size query); dt: amxk__lin_mul_dt, for AMXK__OP_Q8 the x codes'
   dtype. The table as amxk__pack_kernels says (w8a8: q8_takes alone decides; q8_grid, q8_else); row
   chunks of its mc; decode (m <= 4) splits N only. */
AMXK__PRIV void amxk__pack_layout(const amxk_ctx *ctx, int op, size_t m, size_t n, size_t k, amxk_dtype dt, const amxk__qview *q,
                                  amxk__linear_plan *p) {
    const amxk__pack_kernels *kt = amxk__pack_kernels_ctx(ctx);
    const size_t kp = amxk__lin_kp(k), nblk = amxk__lin_nblk(n), workers = (size_t)amxk__workers(ctx);
    int takes = op == AMXK__OP_Q8 && kt->q8_takes ? 1 : m >= kt->min_m; /* w8a8: q8_takes's rule decides */
    memset(p, 0, sizeof *p);
    p->vec = amxk__pack_kernels_vec(ctx);
    if (op == AMXK__OP_Q8) takes = takes && (!kt->q8_takes || kt->q8_takes(q, m, dt == AMXK_DTYPE_U8));
    else takes = takes && (!kt->lin_takes || kt->lin_takes(dt));
    p->kt = takes ? kt : p->vec;
    p->nblk = nblk, p->workers = workers;
    p->mc = AMXK__MIN(m, p->kt->mc);
    p->nc = m <= 4 ? AMXK__MAX((size_t)1, AMXK__CEIL_DIV(nblk, workers * 4)) : p->kt->nc;
    p->nc = AMXK__MIN(p->nc, nblk);
    if (op == AMXK__OP_LINEAR) p->kt->lin_ws(p, m, kp, q ? amxk__q_ws_kind(q) : 0); /* may set its own grid (AMX) */
    p->m_tasks = AMXK__CEIL_DIV(m, p->mc);
    p->n_tasks = AMXK__CEIL_DIV(nblk, p->nc);
    if (op == AMXK__OP_Q8 && p->kt->q8_grid) p->kt->q8_grid(p, q, m, dt == AMXK_DTYPE_U8, workers); /* sets its own tasks */
    if (op == AMXK__OP_Q8 && p->kt->q8_else && !p->kt->q8_takes(q, m, dt == AMXK_DTYPE_U8)) p->kt = p->kt->q8_else; /* same grid */
    p->ws_worker = amxk__sz_add(amxk__sz_add(p->ws_a, p->ws_w, &p->ws_overflow), p->ws_c, &p->ws_overflow);
    p->ws_total = amxk__sz_mul(p->ws_worker, workers, &p->ws_overflow);
    if (op == AMXK__OP_Q8) /* amxk_linear_q8_ws: one set of x panels per call, of the vector level's tiles (where they run) */
        p->ws_total = p->vec->q8_xpan ? AMXK__Q8_XPAN_BYTES(m, k, &p->ws_overflow) : 0;
}

/* ---- drivers: the parallel tasks of amxk_linear and amxk_linear_q8 ---- */

/* Task t of a plan: rows [m0, m1) and column blocks [b0, b1) (tasks run m-chunk-major). */
AMXK__INLINE void amxk__plan_task(const amxk__linear_plan *p, size_t m, size_t n, size_t task, size_t *m0, size_t *m1, size_t *b0,
                                  size_t *b1) {
    const size_t mt = task / p->n_tasks, nt = task % p->n_tasks;
    *m0 = mt * p->mc, *m1 = AMXK__MIN(m, *m0 + p->mc), *b0 = nt * p->nc, *b1 = AMXK__MIN(amxk__lin_nblk(n), *b0 + p->nc);
}
static void amxk__linear_task(void *task_ctx, size_t task, int worker) {
    const amxk__linear_args *a = (const amxk__linear_args *)task_ctx;
    const amxk__linear_plan *p = a->plan;
    size_t m0, m1, b0, b1;
    amxk__plan_task(p, a->m, a->n, task, &m0, &m1, &b0, &b1);
    p->kt->lin_block(a, m0, m1, b0, b1, a->ws ? a->ws + (size_t)worker * p->ws_worker : NULL); /* NULL: no workspace needed */
}
static void amxk__linear_q8_task(void *task_ctx, size_t task, int worker) {
    const amxk__q8_args *a = (const amxk__q8_args *)task_ctx;
    size_t m0, m1, b0, b1;
    (void)worker;
    amxk__plan_task(a->plan, a->m, a->n, task, &m0, &m1, &b0, &b1);
    a->plan->kt->q8_block(a, m0, m1, b0, b1);
}

/* ---- an opened pack and the arguments of one call (the public entry points and >>linop) ---- */

/* The dtype the linear kernels multiply in for x dtype xt and a pack of header dtype pt (f32 packs widen
   every x to f32). */
AMXK__INLINE amxk_dtype amxk__lin_mul_dt(amxk_dtype pt, amxk_dtype xt) { return pt == AMXK_DTYPE_F32 ? AMXK_DTYPE_F32 : xt; }

/* The workspace bytes amxk_linear requires on ctx for m rows of an [n, k] pack of dtype pt (q: its
   quantized view, or NULL): the largest plan over the x dtypes the call could be given (both 16-bit
   dtypes; f32 packs: F32), so that both size queries are exact whatever x's dtype. *ovf is set when it
   does not fit a size_t. */
AMXK__PRIV size_t amxk__linear_ws_need(const amxk_ctx *ctx, size_t m, size_t n, size_t k, amxk_dtype pt, const amxk__qview *q, int *ovf) {
    amxk__linear_plan p;
    size_t best = 0;
    int t;
    for (t = 0; t < 2; t++) {
        amxk__pack_layout(ctx, AMXK__OP_LINEAR, m, n, k, amxk__lin_mul_dt(pt, t ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16), q, &p);
        if (p.ws_overflow) *ovf = 1;
        best = AMXK__MAX(best, p.ws_total);
    }
    return best;
}

/* A validated pack of either kind, as the drivers read it. */
typedef struct amxk__linop {
    amxk__qview q;     /* quantized packs: the view (q.data etc.) */
    const uint16_t *w; /* bf16/fp16/f32 packs: the first block */
    size_t n, k;
    amxk_dtype pt;     /* the header's dtype (BF16 / F16 / F32 for unquantized packs) */
    int quant;         /* 0: bf16/fp16/f32 pack; else amxk__q_kind of the view */
} amxk__linop;

/* Parses and validates a pack (amxk__pack_open's errors; AMXK_ERR_ALIGN when it is not AMXK_ALIGN
   aligned: the kernels read its scale grid as floats and its blocks in 64-byte rows). */
AMXK__PRIV amxk_status amxk__linop_init(amxk__linop *op, const void *packed, size_t bytes) {
    amxk__pack_hdr h;
    amxk_status s = amxk__pack_open(packed, bytes, &h, &op->q);
    if (s != AMXK_OK) return s;
    if ((uintptr_t)packed % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    op->w = (const uint16_t *)((const char *)packed + sizeof h);
    op->n = (size_t)h.n, op->k = (size_t)h.k, op->pt = (amxk_dtype)h.dtype;
    op->quant = h.qformat == AMXK_QFMT_NONE ? 0 : amxk__q_kind(&op->q);
    return AMXK_OK;
}
/* AMXK_OK when amxk_linear_q8 runs this pack: INT8 symmetric or INT4 / INT2 (either), groups of whole
   64-byte rows (else FORMAT, or UNSUPPORTED for other group sizes). */
AMXK__PRIV amxk_status amxk__linop_q8_check(const amxk__linop *op) {
    const amxk__qview *v = &op->q;
    if (!op->quant || v->tr->vmap != AMXK__QV_INT || (v->bits == 8 && v->asym)) return AMXK_ERR_FORMAT;
    return v->bk % (size_t)(32 / v->bits) ? AMXK_ERR_UNSUPPORTED : AMXK_OK;
}
/* The plan and arguments of amxk_linear over m rows (a->plan = p, a->q into op: both must outlive a). */
AMXK__PRIV void amxk__linear_bind(const amxk_ctx *ctx, const amxk__linop *op, size_t m, const void *x, amxk_dtype xt, size_t ldx,
                                  const float *bias, void *y, amxk_dtype yt, size_t ldy, void *ws, amxk__linear_args *a,
                                  amxk__linear_plan *p) {
    amxk__pack_layout(ctx, AMXK__OP_LINEAR, m, op->n, op->k, amxk__lin_mul_dt(op->pt, xt), op->quant ? &op->q : NULL, p);
    memset(a, 0, sizeof *a);
    a->m = m, a->n = op->n, a->k = op->k, a->kp = amxk__lin_kp(op->k), a->ldx = ldx, a->ldy = ldy;
    a->x = x, a->w = op->w, a->q = op->quant ? &op->q : NULL, a->st = amxk__stream_for(amxk__family(ctx));
    a->bias = bias, a->y = y, a->dt = xt, a->yt = yt, a->wt = op->pt, a->ws = (char *)ws, a->plan = p;
}
/* The plan and arguments of amxk_linear_q8 over m rows (the same lifetimes). */
AMXK__PRIV void amxk__q8_bind(const amxk_ctx *ctx, const amxk__linop *op, size_t m, const void *xq, amxk_dtype xt, size_t ldq, const float *xs,
                              amxk_scale_layout layout, size_t ld_s, size_t ag, const float *bias, void *y, amxk_dtype yt, size_t ldy,
                              amxk__q8_args *a, amxk__linear_plan *p) {
    amxk__pack_layout(ctx, AMXK__OP_Q8, m, op->n, op->k, xt, &op->q, p); /* dt: the x codes' dtype (I8 / U8) */
    memset(a, 0, sizeof *a);
    a->m = m, a->n = op->n, a->k = op->k, a->ldq = ldq, a->ld_s = ld_s, a->ag = ag, a->ldy = ldy;
    a->xq = (const int8_t *)xq, a->xflip = xt == AMXK_DTYPE_U8 ? 0x80808080u : 0;
    a->xs = xs, a->layout = layout, a->w = &op->q, a->bias = bias, a->y = y, a->yt = yt, a->plan = p;
    a->st = amxk__stream_for(amxk__family(ctx));
}

/* Where scale (row m, group g) sits in a scale table of layout l, leading dimension ld. */
AMXK__INLINE size_t amxk__scale_at(amxk_scale_layout l, size_t ld, size_t m, size_t g) {
    return l == AMXK_SCALES_ROW_MAJOR ? m * ld + g : g * ld + m;
}
/* Elements an [m, ng] scale table of layout l spans; 0 when ld is too small for it. */
AMXK__INLINE size_t amxk__scales_span(amxk_scale_layout l, size_t ld, size_t m, size_t ng) {
    return ld < (l == AMXK_SCALES_ROW_MAJOR ? ng : m) ? 0 : amxk__scale_at(l, ld, m - 1, ng - 1) + 1;
}

/* amxk_quantize_act's task: every group of one row, with the table's group kernel where it takes the
   group, else the scalar loop (the same values). */
static void amxk__actq_row(void *task_ctx, size_t row, int worker) {
    const amxk__actq_args *a = (const amxk__actq_args *)task_ctx;
    size_t g, j;
    (void)worker;
    for (g = 0; g < a->k / a->group; g++) {
        const size_t k0 = g * a->group;
        float amax = 0.0f, sc;
        int finite = 1;
        if (a->kt->actq_group && a->kt->actq_group(a, row, k0, &sc)) {
            a->scales[amxk__scale_at(a->layout, a->ld_s, row, g)] = sc;
            continue;
        }
        for (j = 0; j < a->group; j++) {
            float v = amxk__ld_elem(a->x, a->xt, row * a->ldx + k0 + j);
            if (!(v - v == 0.0f)) finite = 0; /* NaN or +-inf */
            amax = AMXK__MAX(amax, v < 0 ? -v : v);
        }
        sc = amax / (a->ot == AMXK_DTYPE_FP8_E4M3 ? 448.0f : 127.0f);
        if (!(sc > 0.0f)) sc = 1.0f;
        if (!finite) sc = amxk__bits_f32(0x7fc00000u); /* a non-finite group: scale NaN, every code 0 */
        for (j = 0; j < a->group; j++) {
            float t = finite ? amxk__ld_elem(a->x, a->xt, row * a->ldx + k0 + j) / sc : 0.0f;
            uint8_t *d = (uint8_t *)a->q + row * a->ldq + k0 + j;
            if (a->ot == AMXK_DTYPE_FP8_E4M3) {
                *d = amxk__f32_to_e4m3(t);
            } else {
                int qi = (int)AMXK__MAX(AMXK__MIN(amxk__rne(AMXK__MAX(AMXK__MIN(t, 256.0f), -256.0f)), 127.0f), -127.0f);
                *d = (uint8_t)(a->ot == AMXK_DTYPE_U8 ? qi + 128 : qi);
            }
        }
        a->scales[amxk__scale_at(a->layout, a->ld_s, row, g)] = sc;
    }
}

/* Block j of W (dtype wt) as a block of a pack of dtype pt (amxk__lin_idx; zero padding). f32 packs:
   every source converted exactly. */
AMXK__PRIV void amxk__pack_block(void *dst, amxk_dtype pt, const void *w, amxk_dtype wt, size_t n, size_t k,
                                 size_t ldw, size_t j) {
    size_t kp = amxk__lin_kp(k), r, kk;
    memset(dst, 0, amxk__lin_blk_bytes(pt, kp));
    for (r = 0; r < AMXK__LIN_NB && j * AMXK__LIN_NB + r < n; r++) {
        size_t row = (j * AMXK__LIN_NB + r) * ldw;
        for (kk = 0; kk < k; kk++) {
            const size_t at = amxk__lin_idx(pt, r, kk);
            if (pt == AMXK_DTYPE_F32) ((float *)dst)[at] = amxk__ld_elem(w, wt, row + kk);
            else if (wt == pt) ((uint16_t *)dst)[at] = ((const uint16_t *)w)[row + kk];
            else ((uint16_t *)dst)[at] = amxk__to16(amxk__ld_elem(w, wt, row + kk), pt);
        }
    }
}

// >>api ------------------------------------------------------------------------------------------

AMXK_DEF amxk_status amxk_pack_linear_size(amxk_dtype pt, size_t n, size_t k, size_t *bytes) {
    size_t total;
    int ovf = 0;
    if (!bytes) return AMXK_ERR_NULL;
    if (pt != AMXK_DTYPE_BF16 && pt != AMXK_DTYPE_F16 && pt != AMXK_DTYPE_F32) return AMXK_ERR_DTYPE;
    if (n == 0 || k == 0 || k > ((size_t)1 << 40) || n > ((size_t)1 << 40)) return AMXK_ERR_SHAPE;
    total = amxk__sz_mul(amxk__sz_mul(amxk__lin_nblk(n), (size_t)AMXK__LIN_NB * amxk_dtype_size(pt), &ovf), amxk__lin_kp(k), &ovf);
    total = amxk__sz_add(total, sizeof(amxk__pack_hdr), &ovf);
    if (ovf) return AMXK_ERR_SHAPE; /* the pack would not fit in memory */
    *bytes = total;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_pack_linear_batched(const amxk_ctx *ctx, void *dst, size_t dst_bytes, amxk_dtype pt,
                                              const void *w, amxk_dtype wt, size_t ne, size_t n, size_t k, size_t ldw,
                                              size_t estride) {
    size_t one, e, j, ws = amxk_dtype_size(wt);
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!dst || !w) return AMXK_ERR_NULL;
    if (wt != AMXK_DTYPE_F32 && wt != AMXK_DTYPE_BF16 && wt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if ((s = amxk_pack_linear_size(pt, n, k, &one)) != AMXK_OK) return s;
    if (ne == 0) return AMXK_ERR_SHAPE;
    if (ldw < k || (ne > 1 && estride < (n - 1) * ldw + k)) return AMXK_ERR_STRIDE;
    if ((uintptr_t)dst % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    if (dst_bytes / ne < one) return AMXK_ERR_WORKSPACE;
    if (amxk__overlap(dst, one * ne, w, ((ne - 1) * estride + (n - 1) * ldw + k) * ws)) return AMXK_ERR_ALIAS;
    for (e = 0; e < ne; e++) {
        char *d = (char *)dst + e * one;
        const char *we = (const char *)w + e * estride * ws;
        amxk__pack_hdr h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, "AMXKPACK", 8);
        h.version = AMXK__PACK_VERSION;
        h.dtype = (uint32_t)pt;
        h.n = n;
        h.k = k;
        memcpy(d, &h, sizeof h);
        for (j = 0; j < amxk__lin_nblk(n); j++)
            amxk__pack_block(d + sizeof h + j * amxk__lin_blk_bytes(pt, amxk__lin_kp(k)), pt, we, wt, n, k, ldw, j);
    }
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_pack_linear(const amxk_ctx *ctx, void *dst, size_t dst_bytes, amxk_dtype pt, const void *w,
                                      amxk_dtype wt, size_t n, size_t k, size_t ldw) {
    return amxk_pack_linear_batched(ctx, dst, dst_bytes, pt, w, wt, 1, n, k, ldw, 0);
}

AMXK_DEF amxk_status amxk_packed_linear_info(const void *packed, size_t bytes, amxk_dtype *pt, size_t *n, size_t *k) {
    amxk__pack_hdr h;
    amxk__qview v;
    amxk_status s = amxk__pack_open(packed, bytes, &h, &v);
    if (s != AMXK_OK) return s;
    if (pt) *pt = (amxk_dtype)h.dtype;
    if (n) *n = (size_t)h.n;
    if (k) *k = (size_t)h.k;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_packed_quant_info(const void *packed, size_t bytes, amxk_quant *q, size_t *n, size_t *k) {
    amxk__pack_hdr h;
    amxk__qview v;
    amxk_status s = amxk__pack_open(packed, bytes, &h, &v);
    if (s != AMXK_OK) return s;
    if (h.qformat == AMXK_QFMT_NONE) return AMXK_ERR_FORMAT;
    if (q) q->format = v.fmt, q->asym = v.asym, q->block_n = v.bn, q->block_k = v.bk;
    if (n) *n = v.n;
    if (k) *k = v.k;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_pack_quant_size(const amxk_quant *q, size_t n, size_t k, size_t *bytes) {
    amxk__qview v;
    if (!bytes) return AMXK_ERR_NULL;
    return amxk__q_geometry(q, n, k, &v, bytes);
}

/* Source of the b-bit field of element (n, k) for amxk__q_write (two's complement for symmetric
   ints, unsigned for asymmetric ones, the raw code for fp8; bits above b are ignored). */
typedef unsigned (*amxk__q_get_fn)(const void *src, const amxk__qview *v, size_t n, size_t k);

/* One value per byte, as amxk_pack_quant takes them. */
typedef struct amxk__q_bytes { const uint8_t *vals; size_t ldv; } amxk__q_bytes;
static unsigned amxk__q_get_bytes(const void *src, const amxk__qview *v, size_t n, size_t k) {
    const amxk__q_bytes *s = (const amxk__q_bytes *)src;
    (void)v;
    return s->vals[n * s->ldv + k];
}
/* The e8m0 byte of a scale given as f32 (amxk_pack_quant): 2^i, -127 <= i <= 127, or NaN; 256 if it is none. */
AMXK__INLINE unsigned amxk__f32_to_e8m0(float s) {
    const uint32_t u = amxk__f32_bits(s);
    if (s != s) return 255u;
    if (u == 0x00400000u) return 0u;
    return (u & 0x807fffffu) == 0 && (u >> 23) >= 1 && (u >> 23) <= 254 ? u >> 23 : 256u;
}
/* Quantizing W with the scale and zero grids already in the pack (amxk_quantize_pack's rules). */
typedef struct amxk__q_weights { const void *w; amxk_dtype wt; size_t ldw; } amxk__q_weights;
static unsigned amxk__q_get_quantized(const void *src, const amxk__qview *v, size_t n, size_t k) {
    const amxk__q_weights *s = (const amxk__q_weights *)src;
    size_t g = amxk__q_gidx(v, n / v->bn, k / v->bk);
    float x = s->wt == AMXK_DTYPE_F32 ? ((const float *)s->w)[n * s->ldw + k] : amxk__bf16_to_f32(((const uint16_t *)s->w)[n * s->ldw + k]);
    float t = v->e8 ? x / amxk__e8m0_to_f32(v->e8[g]) : x / v->scales[g], r;
    int qmax = v->asym ? (1 << v->bits) - 1 : (1 << (v->bits - 1)) - 1, qmin = v->asym ? 0 : -(1 << (v->bits - 1));
    if (v->tr->enc) return v->tr->enc(t);
    r = amxk__rne(AMXK__MAX(AMXK__MIN(t, 65536.0f), -65536.0f)) + (v->asym ? v->zeros[g] : 0.0f);
    return (unsigned)(int)AMXK__MAX(AMXK__MIN(r, (float)qmax), (float)qmin);
}

/* Zeroes the scale (and zero) grids of the pack dst of need bytes (v bound to it): the entries past
   N and the padding stay zero, whatever the writer fills. Called once the inputs are validated. */
AMXK__PRIV void amxk__q_grid_clear(void *dst, const amxk__qview *v, size_t need) {
    const uint8_t *g0 = v->e8 ? v->e8 : (const uint8_t *)v->scales;
    memset((uint8_t *)dst + (g0 - (const uint8_t *)dst), 0, need - (size_t)(g0 - (const uint8_t *)dst));
}

/* Writes the header and every field of a quantized pack; the scale (and zero) grids must already be
   in place (v points into dst). */
AMXK__PRIV void amxk__q_write(void *dst, const amxk__qview *v, amxk__q_get_fn get, const void *src) {
    amxk__pack_hdr h;
    uint8_t *data = (uint8_t *)dst + sizeof h;
    size_t n, kk;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, "AMXKPACK", 8);
    h.version = AMXK__PACK_VERSION;
    h.dtype = (uint32_t)v->tr->hdr;
    h.n = v->n, h.k = v->k, h.qformat = (uint32_t)v->fmt, h.asym = (uint32_t)v->asym, h.block_n = v->bn, h.block_k = v->bk;
    memset(data, 0, amxk__lin_nblk(v->n) * v->blk_bytes);
    h.flags = AMXK__QV_FP8(v->tr->vmap) ? AMXK__PACK_NO_NAN : 0;
    for (n = 0; n < v->n; n++)
        for (kk = 0; kk < v->k; kk++) {
            int sh;
            unsigned f = get(src, v, n, kk) & ((1u << v->bits) - 1u);
            size_t pos = (n / AMXK__LIN_NB) * v->blk_bytes + amxk__q_pos(v, n % AMXK__LIN_NB, kk, &sh); /* sets sh */
            data[pos] |= (uint8_t)(f << sh);
            if (h.flags && (f & AMXK__FP8_SPECIAL(v->tr->vmap)) == (unsigned)AMXK__FP8_SPECIAL(v->tr->vmap)) h.flags = 0;
        }
    memcpy(dst, &h, sizeof h);
}

/* Common checks of the two pack entry points; fills v with pointers into dst. */
AMXK__PRIV amxk_status amxk__q_prepare(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const amxk_quant *q, size_t n, size_t k,
                                       amxk__qview *v, size_t *need_out) {
    size_t need;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!dst) return AMXK_ERR_NULL;
    if ((s = amxk__q_geometry(q, n, k, v, &need)) != AMXK_OK) return s;
    if ((uintptr_t)dst % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    if (dst_bytes < need) return AMXK_ERR_WORKSPACE;
    amxk__q_bind(v, dst);
    *need_out = need;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_quantize_pack(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const amxk_quant *q, const void *w,
                                        amxk_dtype wt, size_t n, size_t k, size_t ldw) {
    amxk__qview v;
    amxk_status s;
    size_t gn, gk, i, j, need;
    if ((s = amxk__q_prepare(ctx, dst, dst_bytes, q, n, k, &v, &need)) != AMXK_OK) return s;
    if (!w) return AMXK_ERR_NULL;
    if (wt != AMXK_DTYPE_F32 && wt != AMXK_DTYPE_BF16) return AMXK_ERR_DTYPE;
    if (ldw < k) return AMXK_ERR_STRIDE;
    if (amxk__overlap(dst, need, w, ((n - 1) * ldw + k) * amxk_dtype_size(wt))) return AMXK_ERR_ALIAS;
    amxk__q_grid_clear(dst, &v, need);
    for (gn = 0; gn < AMXK__CEIL_DIV(n, v.bn); gn++) /* the scale (and zero) grid first */
        for (gk = 0; gk < v.nbk; gk++) {
            float lo = 0.0f, hi = 0.0f, amax, sc, z = 0.0f;
            for (i = gn * v.bn; i < AMXK__MIN(n, (gn + 1) * v.bn); i++)
                for (j = gk * v.bk; j < AMXK__MIN(k, (gk + 1) * v.bk); j++) {
                    float x = wt == AMXK_DTYPE_F32 ? ((const float *)w)[i * ldw + j] : amxk__bf16_to_f32(((const uint16_t *)w)[i * ldw + j]);
                    lo = AMXK__MIN(lo, x), hi = AMXK__MAX(hi, x);
                }
            amax = AMXK__MAX(-lo, hi);
            if (v.e8) { /* OCP MX: 2^(floor(log2 amax) - emax), emax = floor(log2 qmax) (e2m1: 2), as an e8m0 byte */
                const int ex = (int)(amxk__f32_bits(amax) >> 23), emax = (int)(amxk__f32_bits(v.tr->qmax) >> 23) - 127;
                ((uint8_t *)v.e8)[amxk__q_gidx(&v, gn, gk)] = (uint8_t)(amax == 0.0f ? 127 : ex >= 255 ? 255 : AMXK__MAX(ex - emax, 0));
                continue;
            }
            if (v.tr->enc) sc = amax / v.tr->qmax;
            else if (!v.asym) sc = amax / (float)((1 << (v.bits - 1)) - 1);
            else sc = (hi - lo) / (float)((1 << v.bits) - 1);
            if (!(sc > 0.0f)) sc = 1.0f; /* all zeros (or NaN): q = 0 */
            if (v.asym) z = AMXK__MIN(AMXK__MAX(amxk__rne(-lo / sc), 0.0f), (float)((1 << v.bits) - 1));
            ((float *)v.scales)[amxk__q_gidx(&v, gn, gk)] = sc;
            if (v.asym) ((float *)v.zeros)[amxk__q_gidx(&v, gn, gk)] = z;
        }
    {
        amxk__q_weights src;
        src.w = w, src.wt = wt, src.ldw = ldw;
        amxk__q_write(dst, &v, amxk__q_get_quantized, &src);
    }
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_pack_quant(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const amxk_quant *q, const void *values,
                                     size_t ldv, const float *scales, const float *zeros, size_t n, size_t k) {
    amxk__qview v;
    amxk_status s;
    size_t i, j, grid, need;
    if ((s = amxk__q_prepare(ctx, dst, dst_bytes, q, n, k, &v, &need)) != AMXK_OK) return s;
    if (!values || !scales || (v.asym && !zeros)) return AMXK_ERR_NULL;
    if (ldv < k) return AMXK_ERR_STRIDE;
    grid = AMXK__CEIL_DIV(n, v.bn) * v.nbk;
    if (amxk__overlap(dst, need, values, (n - 1) * ldv + k) || amxk__overlap(dst, need, scales, grid * 4) ||
        (zeros && amxk__overlap(dst, need, zeros, grid * 4)))
        return AMXK_ERR_ALIAS;
    for (i = 0; i < grid && v.e8; i++) /* e8m0 scales: every scale an e8m0 value */
        if (amxk__f32_to_e8m0(scales[i]) > 255u) return AMXK_ERR_ARG;
    for (i = 0; i < n; i++) /* every value within the b-bit range (codes: unsigned), before anything is written */
        for (j = 0; j < k; j++) {
            const int uns = v.asym || v.tr->vmap != AMXK__QV_INT;
            int x = uns ? (int)((const uint8_t *)values)[i * ldv + j] : (int)((const int8_t *)values)[i * ldv + j];
            if (uns ? x > (1 << v.bits) - 1 : (x < -(1 << (v.bits - 1)) || x > (1 << (v.bits - 1)) - 1)) return AMXK_ERR_ARG;
        }
    amxk__q_grid_clear(dst, &v, need);
    for (i = 0; i < v.nbn; i++) /* the caller's row-major grid -> the pack's tiled one */
        for (j = 0; j < v.nbk; j++) {
            if (v.e8) ((uint8_t *)v.e8)[amxk__q_gidx(&v, i, j)] = (uint8_t)amxk__f32_to_e8m0(scales[i * v.nbk + j]);
            else ((float *)v.scales)[amxk__q_gidx(&v, i, j)] = scales[i * v.nbk + j];
            if (v.asym) ((float *)v.zeros)[amxk__q_gidx(&v, i, j)] = zeros[i * v.nbk + j];
        }
    {
        amxk__q_bytes src;
        src.vals = (const uint8_t *)values, src.ldv = ldv;
        amxk__q_write(dst, &v, amxk__q_get_bytes, &src);
    }
    return AMXK_OK;
}

/* ---- importers ---- */

/* A GPTQ/AWQ checkpoint seen through one accessor: field of qweight / qzeros. */
typedef struct amxk__ckpt {
    int awq, bits, zero_offset, sym_shift; /* sym_shift: 2^(b-1) when the pack is symmetric, else 0 */
    size_t n, k;
    const int32_t *qweight, *qzeros;
} amxk__ckpt;
static const int amxk__awq_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
AMXK__INLINE unsigned amxk__ckpt_q(const amxk__ckpt *c, size_t n, size_t k) {
    const unsigned mask = (1u << c->bits) - 1u;
    size_t per = (size_t)(32 / c->bits);
    if (c->awq) return ((uint32_t)c->qweight[k * (c->n / 8) + n / 8] >> (4 * amxk__awq_order[n % 8])) & mask;
    return ((uint32_t)c->qweight[(k / per) * c->n + n] >> (c->bits * (int)(k % per))) & mask;
}
/* True zero point of (group g, column n), offset included. */
AMXK__INLINE int amxk__ckpt_z(const amxk__ckpt *c, size_t g, size_t n) {
    const unsigned mask = (1u << c->bits) - 1u;
    size_t per = (size_t)(32 / c->bits), words = AMXK__CEIL_DIV(c->n, per);
    unsigned z = c->awq ? ((uint32_t)c->qzeros[g * (c->n / 8) + n / 8] >> (4 * amxk__awq_order[n % 8])) & mask
                        : ((uint32_t)c->qzeros[g * words + n / per] >> (c->bits * (int)(n % per))) & mask;
    return (int)z + c->zero_offset;
}
static unsigned amxk__q_get_ckpt(const void *src, const amxk__qview *v, size_t n, size_t k) {
    (void)v;
    return amxk__ckpt_q((const amxk__ckpt *)src, n, k) - (unsigned)((const amxk__ckpt *)src)->sym_shift; /* masked by q_write */
}

AMXK_DEF amxk_status amxk_import_size(int bits, size_t group, size_t n, size_t k, size_t *bytes) {
    amxk_quant q;
    if (bits != 2 && bits != 4 && bits != 8) return AMXK_ERR_ARG;
    q.format = bits == 2 ? AMXK_QFMT_INT2 : bits == 4 ? AMXK_QFMT_INT4 : AMXK_QFMT_INT8, q.asym = 1, q.block_n = 1, q.block_k = group;
    return amxk_pack_quant_size(&q, n, k, bytes);
}

AMXK__PRIV amxk_status amxk__import_int(const amxk_ctx *ctx, void *dst, size_t dst_bytes, amxk__ckpt *c, size_t group,
                                        const void *scales, amxk_dtype st, const int32_t *g_idx) {
    amxk_quant q;
    amxk__qview v;
    size_t need, g, n, kk, ng;
    amxk_status s;
    int sym = 1, zmin = 1 << 30, zmax = -(1 << 30);
    if (!c->qweight || !c->qzeros || !scales) return AMXK_ERR_NULL;
    if (st != AMXK_DTYPE_F16 && st != AMXK_DTYPE_BF16 && st != AMXK_DTYPE_F32) return AMXK_ERR_DTYPE;
    q.format = c->bits == 2 ? AMXK_QFMT_INT2 : c->bits == 4 ? AMXK_QFMT_INT4 : AMXK_QFMT_INT8, q.asym = 1, q.block_n = 1, q.block_k = group;
    if ((s = amxk__q_prepare(ctx, dst, dst_bytes, &q, c->n, c->k, &v, &need)) != AMXK_OK) return s;
    if (c->awq && c->n % 8) return AMXK_ERR_SHAPE;
    ng = c->k / group;
    if (g_idx)
        for (kk = 0; kk < c->k; kk++)
            if (g_idx[kk] != (int32_t)(kk / group)) return AMXK_ERR_UNSUPPORTED; /* act-order */
    for (g = 0; g < ng; g++)
        for (n = 0; n < c->n; n++) {
            int z = amxk__ckpt_z(c, g, n);
            zmin = AMXK__MIN(zmin, z), zmax = AMXK__MAX(zmax, z);
            if (z != 1 << (c->bits - 1)) sym = 0;
        }
    if (zmin < 0 || zmax > (1 << c->bits)) return AMXK_ERR_ARG; /* a v1 zero of 2^b - 1 + 1 is kept */
    { /* every source array against dst (the zero points are read again after dst's grids are cleared) */
        const size_t zwords = c->awq ? c->n / 8 : AMXK__CEIL_DIV(c->n, (size_t)(32 / c->bits));
        if (amxk__overlap(dst, need, c->qweight, c->k * c->n * (size_t)c->bits / 8) ||
            amxk__overlap(dst, need, c->qzeros, ng * zwords * 4) || amxk__overlap(dst, need, scales, ng * c->n * amxk_dtype_size(st)) ||
            (g_idx && amxk__overlap(dst, need, g_idx, c->k * 4)))
            return AMXK_ERR_ALIAS;
    }
    if (sym) { /* re-prepare as a symmetric pack: two's-complement values, no zero grid */
        q.asym = 0;
        amxk__q_prepare(ctx, dst, dst_bytes, &q, c->n, c->k, &v, &need);
        c->sym_shift = 1 << (c->bits - 1);
    }
    amxk__q_grid_clear(dst, &v, need);
    for (n = 0; n < c->n; n++) /* grids are [N][K/G]; the checkpoint's are [K/G][N] */
        for (g = 0; g < ng; g++) {
            ((float *)v.scales)[amxk__q_gidx(&v, n, g)] = amxk__ld_elem(scales, st, g * c->n + n);
            if (!sym) ((float *)v.zeros)[amxk__q_gidx(&v, n, g)] = (float)amxk__ckpt_z(c, g, n);
        }
    amxk__q_write(dst, &v, amxk__q_get_ckpt, c);
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_import_gptq(const amxk_ctx *ctx, void *dst, size_t dst_bytes, int bits, size_t group, int zero_offset,
                                      const int32_t *qweight, const int32_t *qzeros, const void *scales, amxk_dtype scales_dtype,
                                      const int32_t *g_idx, size_t n, size_t k) {
    amxk__ckpt c;
    if (bits != 2 && bits != 4 && bits != 8) return AMXK_ERR_ARG;
    if (zero_offset != 0 && zero_offset != 1) return AMXK_ERR_ARG;
    if (k % (size_t)(32 / bits)) return AMXK_ERR_SHAPE; /* qweight packs 32/b rows of K per word */
    memset(&c, 0, sizeof c);
    c.bits = bits, c.zero_offset = zero_offset, c.n = n, c.k = k, c.qweight = qweight, c.qzeros = qzeros;
    return amxk__import_int(ctx, dst, dst_bytes, &c, group, scales, scales_dtype, g_idx);
}

AMXK_DEF amxk_status amxk_import_awq(const amxk_ctx *ctx, void *dst, size_t dst_bytes, size_t group, const int32_t *qweight,
                                     const int32_t *qzeros, const void *scales, amxk_dtype scales_dtype, size_t n, size_t k) {
    amxk__ckpt c;
    memset(&c, 0, sizeof c);
    c.awq = 1, c.bits = 4, c.n = n, c.k = k, c.qweight = qweight, c.qzeros = qzeros;
    return amxk__import_int(ctx, dst, dst_bytes, &c, group, scales, scales_dtype, NULL);
}

AMXK_DEF amxk_status amxk_import_fp8_block(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const uint8_t *weight,
                                           const float *weight_scale_inv, size_t block_n, size_t block_k, size_t n, size_t k) {
    amxk_quant q;
    q.format = AMXK_QFMT_FP8_E4M3, q.asym = 0, q.block_n = block_n, q.block_k = block_k;
    return amxk_pack_quant(ctx, dst, dst_bytes, &q, weight, k, weight_scale_inv, NULL, n, k);
}

/* gpt-oss: the code of (n, k) from blocks [N, K/32, 16] (two codes per byte, k even low); its format. */
typedef struct amxk__q_nibbles { const uint8_t *blocks; size_t k; } amxk__q_nibbles;
static unsigned amxk__q_get_nibbles(const void *src, const amxk__qview *v, size_t n, size_t k) {
    const amxk__q_nibbles *s = (const amxk__q_nibbles *)src;
    (void)v;
    return (unsigned)(s->blocks[n * (s->k / 2) + k / 2] >> (4 * (k & 1))) & 15u;
}
static const amxk_quant amxk__q_gptoss = {AMXK_QFMT_MXFP4, 0, 1, 32};

AMXK_DEF amxk_status amxk_import_mxfp4_size(size_t n, size_t k, size_t *bytes) {
    if (k % 32) return AMXK_ERR_SHAPE;
    return amxk_pack_quant_size(&amxk__q_gptoss, n, k, bytes);
}

AMXK_DEF amxk_status amxk_import_mxfp4(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const uint8_t *blocks, const uint8_t *scales_e8m0,
                                       size_t n, size_t k) {
    amxk__qview v;
    amxk__q_nibbles src;
    size_t need, i, g;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!dst || !blocks || !scales_e8m0) return AMXK_ERR_NULL;
    if (n == 0 || k == 0 || k % 32) return AMXK_ERR_SHAPE;
    if ((s = amxk__q_prepare(ctx, dst, dst_bytes, &amxk__q_gptoss, n, k, &v, &need)) != AMXK_OK) return s;
    if (amxk__overlap(dst, need, blocks, n * (k / 2)) || amxk__overlap(dst, need, scales_e8m0, n * (k / 32))) return AMXK_ERR_ALIAS;
    amxk__q_grid_clear(dst, &v, need);
    for (i = 0; i < n; i++) /* [N, K/32] -> the tiled grid */
        for (g = 0; g < k / 32; g++) ((uint8_t *)v.e8)[amxk__q_gidx(&v, i, g)] = scales_e8m0[i * (k / 32) + g];
    src.blocks = blocks, src.k = k;
    amxk__q_write(dst, &v, amxk__q_get_nibbles, &src);
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_quantize_act(const amxk_ctx *ctx, size_t m, size_t k, const void *x, amxk_dtype xt, size_t ldx,
                                       size_t group, amxk_dtype ot, void *q, size_t ldq, float *scales,
                                       amxk_scale_layout layout, size_t ld_s) {
    amxk__actq_args a;
    amxk__rgn outs[2], in;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!x || !q || !scales) return AMXK_ERR_NULL;
    if (m == 0 || k == 0) return AMXK_ERR_SHAPE;
    if (group == 0 || k % group) return AMXK_ERR_ARG;
    if (xt != AMXK_DTYPE_F32 && xt != AMXK_DTYPE_BF16 && xt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if (ot != AMXK_DTYPE_I8 && ot != AMXK_DTYPE_U8 && ot != AMXK_DTYPE_FP8_E4M3) return AMXK_ERR_DTYPE;
    if (layout != AMXK_SCALES_ROW_MAJOR && layout != AMXK_SCALES_GROUP_MAJOR) return AMXK_ERR_ARG;
    outs[0] = amxk__rgn_of(q, (m - 1) * ldq + k, 0);
    outs[1] = amxk__rgn_of(scales, amxk__scales_span(layout, ld_s, m, k / group) * 4, 0);
    in = amxk__rgn_of(x, ((m - 1) * ldx + k) * amxk_dtype_size(xt), 0);
    if (ldx < k || ldq < k || !outs[1].bytes) return AMXK_ERR_STRIDE;
    if (amxk__alias(outs, 2, &in, 1) != AMXK_OK) return AMXK_ERR_ALIAS;
    a.k = k, a.ldx = ldx, a.group = group, a.ldq = ldq, a.ld_s = ld_s, a.x = x, a.xt = xt, a.ot = ot, a.q = q, a.scales = scales;
    a.layout = layout, a.kt = amxk__pack_kernels_vec(ctx);
    amxk__parallel(ctx, amxk__actq_row, &a, m);
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_scales_relayout(size_t m, size_t ng, const float *src, amxk_scale_layout sl, size_t ld_src, float *dst,
                                          amxk_scale_layout dl, size_t ld_dst) {
    size_t i, g, sn, dn;
    if (!src || !dst) return AMXK_ERR_NULL;
    if (m == 0 || ng == 0) return AMXK_ERR_SHAPE;
    if ((sl != AMXK_SCALES_ROW_MAJOR && sl != AMXK_SCALES_GROUP_MAJOR) || (dl != AMXK_SCALES_ROW_MAJOR && dl != AMXK_SCALES_GROUP_MAJOR))
        return AMXK_ERR_ARG;
    sn = amxk__scales_span(sl, ld_src, m, ng);
    dn = amxk__scales_span(dl, ld_dst, m, ng);
    if (!sn || !dn) return AMXK_ERR_STRIDE;
    if (amxk__overlap(src, sn * 4, dst, dn * 4)) return AMXK_ERR_ALIAS;
    for (i = 0; i < m; i++)
        for (g = 0; g < ng; g++) dst[amxk__scale_at(dl, ld_dst, i, g)] = src[amxk__scale_at(sl, ld_src, i, g)];
    return AMXK_OK;
}

/* amxk_linear_q8_ws's panel tasks: 8-row tile `task` of x into the workspace. */
typedef struct amxk__q8_xpan_args {
    const amxk__q8_args *a;
    uint32_t *xpan;
} amxk__q8_xpan_args;
static void amxk__linear_q8_xpan_task(void *task_ctx, size_t task, int worker) {
    const amxk__q8_xpan_args *x = (const amxk__q8_xpan_args *)task_ctx;
    (void)worker;
    x->a->plan->vec->q8_xpan(x->a, task, task + 1, x->xpan);
}

/* amxk_linear_q8 (ws_mode 0: no workspace) and amxk_linear_q8_ws (1). */
AMXK__PRIV amxk_status amxk__linear_q8_call(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *xq, amxk_dtype xt, size_t ldq,
                                            const float *xs, amxk_scale_layout layout, size_t ld_s, size_t ag, const void *packed,
                                            size_t packed_bytes, const float *bias, void *y, amxk_dtype yt, size_t ldy, int ws_mode,
                                            void *workspace, size_t workspace_bytes) {
    amxk__linop op;
    amxk__q8_args a;
    amxk__linear_plan p;
    amxk__rgn io[5], ws;
    size_t i, j;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!xq || !xs || !packed || !y) return AMXK_ERR_NULL;
    if (m == 0 || n == 0 || k == 0) return AMXK_ERR_SHAPE;
    if (yt != AMXK_DTYPE_F32 && yt != AMXK_DTYPE_BF16 && yt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if (xt != AMXK_DTYPE_I8 && xt != AMXK_DTYPE_U8) return AMXK_ERR_DTYPE;
    if (layout != AMXK_SCALES_ROW_MAJOR && layout != AMXK_SCALES_GROUP_MAJOR) return AMXK_ERR_ARG;
    if (ag == 0 || k % ag) return AMXK_ERR_ARG;
    if ((s = amxk__linop_init(&op, packed, packed_bytes)) != AMXK_OK) return s;
    if (!op.quant || op.n != n || op.k != k || ag % op.q.bk) return AMXK_ERR_FORMAT;
    if ((s = amxk__linop_q8_check(&op)) != AMXK_OK) return s;
    if (ldq < k || ldy < n || !amxk__scales_span(layout, ld_s, m, k / ag)) return AMXK_ERR_STRIDE;
    for (i = 0; i < m; i++) { /* x = -128 (I8 0x80, U8 0x00) would break the exactness argument: refuse it before writing */
        const uint8_t *row = (const uint8_t *)xq + i * ldq;
        const uint8_t bad = xt == AMXK_DTYPE_U8 ? 0x00 : 0x80;
        const uint64_t flip = xt == AMXK_DTYPE_U8 ? 0 : 0x8080808080808080ull;
        for (j = 0; j + 8 <= k; j += 8) { /* 8 bytes at a time: a byte is bad iff (b ^ bad) is zero */
            uint64_t v;
            memcpy(&v, row + j, 8);
            v ^= flip;
            if ((v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull) break;
        }
        for (; j < k; j++)
            if (row[j] == bad) return AMXK_ERR_ARG;
    }
    io[0] = amxk__rgn_of(xq, (m - 1) * ldq + k, 0); /* the inputs, then y */
    io[1] = amxk__rgn_of(xs, amxk__scales_span(layout, ld_s, m, k / ag) * 4, 0);
    io[2] = amxk__rgn_of(packed, packed_bytes, 0);
    io[3] = amxk__rgn_of(bias, n * 4, 0);
    io[4] = amxk__rgn_of(y, ((m - 1) * ldy + n) * amxk_dtype_size(yt), 0);
    if ((s = amxk__alias(&io[4], 1, io, 4)) != AMXK_OK) return s;
    amxk__q8_bind(ctx, &op, m, xq, xt, ldq, xs, layout, ld_s, ag, bias, y, yt, ldy, &a, &p);
    if (ws_mode) {
        if (p.ws_overflow) return AMXK_ERR_WORKSPACE; /* no workspace can be that large */
        if (p.ws_total) {
            if (!workspace || workspace_bytes < p.ws_total) return AMXK_ERR_WORKSPACE;
            if ((uintptr_t)workspace % AMXK_ALIGN) return AMXK_ERR_ALIGN;
            ws = amxk__rgn_of(workspace, p.ws_total, 0);
            if ((s = amxk__alias(&ws, 1, io, 5)) != AMXK_OK) return s;
        }
        if (p.ws_total && amxk__q8_xpan_used(&p, &op.q)) { /* the vector level's tiles run the call: its x panels first */
            amxk__q8_xpan_args xa;
            xa.a = &a, xa.xpan = (uint32_t *)workspace;
            amxk__parallel(ctx, amxk__linear_q8_xpan_task, &xa, m / AMXK__Q8_XPAN_ROWS);
            a.xpan = xa.xpan;
        }
    }
    amxk__parallel(ctx, amxk__linear_q8_task, &a, p.m_tasks * p.n_tasks);
    return AMXK_OK;
}
AMXK_DEF amxk_status amxk_linear_q8(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *xq, amxk_dtype xt,
                                    size_t ldq, const float *xs, amxk_scale_layout layout, size_t ld_s, size_t ag, const void *packed,
                                    size_t packed_bytes, const float *bias, void *y, amxk_dtype yt, size_t ldy) {
    return amxk__linear_q8_call(ctx, m, n, k, xq, xt, ldq, xs, layout, ld_s, ag, packed, packed_bytes, bias, y, yt, ldy, 0, NULL, 0);
}
AMXK_DEF amxk_status amxk_linear_q8_ws(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *xq, amxk_dtype xt,
                                       size_t ldq, const float *xs, amxk_scale_layout layout, size_t ld_s, size_t ag, const void *packed,
                                       size_t packed_bytes, const float *bias, void *y, amxk_dtype yt, size_t ldy, void *workspace,
                                       size_t workspace_bytes) {
    return amxk__linear_q8_call(ctx, m, n, k, xq, xt, ldq, xs, layout, ld_s, ag, packed, packed_bytes, bias, y, yt, ldy, 1, workspace,
                                workspace_bytes);
}
AMXK_DEF amxk_status amxk_linear_q8_workspace_size(const amxk_ctx *ctx, size_t m, const void *packed, size_t packed_bytes, size_t *bytes) {
    amxk__linop op;
    amxk__linear_plan p;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!bytes) return AMXK_ERR_NULL;
    if ((s = amxk__linop_init(&op, packed, packed_bytes)) != AMXK_OK) return s;
    if ((s = amxk__linop_q8_check(&op)) != AMXK_OK) return s; /* the w8a8 packs only */
    if (m == 0) return AMXK_ERR_SHAPE;
    amxk__pack_layout(ctx, AMXK__OP_Q8, m, op.n, op.k, AMXK_DTYPE_I8, &op.q, &p);
    if (p.ws_overflow) return AMXK_ERR_SHAPE;
    *bytes = p.ws_total;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_dequantize(const void *packed, size_t bytes, float *w, size_t ldw) {
    amxk__pack_hdr h;
    amxk__qview v;
    size_t n, kk, kp;
    amxk_status s = amxk__pack_open(packed, bytes, &h, &v);
    if (s != AMXK_OK) return s;
    if ((uintptr_t)packed % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    if (!w) return AMXK_ERR_NULL;
    if (ldw < h.k) return AMXK_ERR_STRIDE;
    if (amxk__overlap(w, ((size_t)(h.n - 1) * ldw + (size_t)h.k) * 4, packed, bytes)) return AMXK_ERR_ALIAS;
    kp = amxk__lin_kp((size_t)h.k);
    for (n = 0; n < h.n; n++)
        for (kk = 0; kk < h.k; kk++) {
            if (h.qformat != AMXK_QFMT_NONE) {
                w[n * ldw + kk] = amxk__q_get(&v, n, kk);
            } else {
                const amxk_dtype pt = (amxk_dtype)h.dtype;
                const char *blk = (const char *)packed + sizeof h + (n / AMXK__LIN_NB) * amxk__lin_blk_bytes(pt, kp);
                w[n * ldw + kk] = amxk__ld_elem(blk, pt, amxk__lin_idx(pt, n % AMXK__LIN_NB, kk));
            }
        }
    return AMXK_OK;
}

/* The two size queries' answer (SHAPE when it does not fit a size_t). */
AMXK__PRIV amxk_status amxk__linear_ws_query(const amxk_ctx *ctx, size_t m, size_t n, size_t k, amxk_dtype pt, const amxk__qview *q,
                                             size_t *bytes) {
    int ovf = 0;
    const size_t need = amxk__linear_ws_need(ctx, m, n, k, pt, q, &ovf);
    if (ovf) return AMXK_ERR_SHAPE;
    *bytes = need;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_linear_workspace_size(const amxk_ctx *ctx, size_t m, size_t n, size_t k, size_t *bytes) {
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!bytes) return AMXK_ERR_NULL;
    if (m == 0 || n == 0 || k == 0 || n > ((size_t)1 << 40) || k > ((size_t)1 << 40)) return AMXK_ERR_SHAPE; /* no pack is larger */
    return amxk__linear_ws_query(ctx, m, n, k, AMXK_DTYPE_BF16, NULL, bytes); /* any bf16/fp16 pack */
}

AMXK_DEF amxk_status amxk_linear_workspace_size_for(const amxk_ctx *ctx, size_t m, const void *packed, size_t packed_bytes,
                                                    size_t *bytes) {
    amxk__linop op;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!bytes) return AMXK_ERR_NULL;
    if ((s = amxk__linop_init(&op, packed, packed_bytes)) != AMXK_OK) return s;
    if (m == 0) return AMXK_ERR_SHAPE;
    return amxk__linear_ws_query(ctx, m, op.n, op.k, op.pt, op.quant ? &op.q : NULL, bytes);
}

AMXK_DEF amxk_status amxk_linear(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *x, amxk_dtype xt,
                                 size_t ldx, const void *packed, size_t packed_bytes, const float *bias, void *y,
                                 amxk_dtype yt, size_t ldy, void *workspace, size_t workspace_bytes) {
    amxk__linear_plan p;
    amxk__linear_args a;
    amxk__linop op;
    amxk__rgn outs[2], in[3];
    size_t need;
    amxk_status s;
    int ovf = 0;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!x || !packed || !y) return AMXK_ERR_NULL;
    if (m == 0 || n == 0 || k == 0) return AMXK_ERR_SHAPE;
    if (xt != AMXK_DTYPE_BF16 && xt != AMXK_DTYPE_F16 && xt != AMXK_DTYPE_F32) return AMXK_ERR_DTYPE;
    if (yt != AMXK_DTYPE_F32 && yt != AMXK_DTYPE_BF16 && yt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if (ldx < k || ldy < n) return AMXK_ERR_STRIDE;
    if ((s = amxk__linop_init(&op, packed, packed_bytes)) != AMXK_OK) return s;
    /* x: any of the three for f32 packs; else BF16 / F16 (DTYPE), the pack's own for bf16/fp16 packs (FORMAT) */
    if (op.pt != AMXK_DTYPE_F32 && xt == AMXK_DTYPE_F32) return AMXK_ERR_DTYPE;
    if (!op.quant && op.pt != AMXK_DTYPE_F32 && op.pt != xt) return AMXK_ERR_FORMAT;
    if (op.n != n || op.k != k) return AMXK_ERR_FORMAT;
    amxk__linear_bind(ctx, &op, m, x, xt, ldx, bias, y, yt, ldy, workspace, &a, &p);
    need = amxk__linear_ws_need(ctx, m, n, k, op.pt, op.quant ? &op.q : NULL, &ovf); /* >= p.ws_total: the queries' value */
    if (ovf || p.ws_overflow) return AMXK_ERR_WORKSPACE; /* no workspace can be that large */
    if (need) {
        if (!workspace || workspace_bytes < need) return AMXK_ERR_WORKSPACE;
        if ((uintptr_t)workspace % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    }
    outs[0] = amxk__rgn_of(y, ((m - 1) * ldy + n) * amxk_dtype_size(yt), 0);
    outs[1] = amxk__rgn_of(workspace, need, 0);
    in[0] = amxk__rgn_of(x, ((m - 1) * ldx + k) * amxk_dtype_size(xt), 0);
    in[1] = amxk__rgn_of(packed, packed_bytes, 0);
    in[2] = amxk__rgn_of(bias, n * 4, 0);
    if ((s = amxk__alias(outs, 2, in, 3)) != AMXK_OK) return s;
    amxk__parallel(ctx, amxk__linear_task, &a, p.m_tasks * p.n_tasks);
    return AMXK_OK;
}

// >>linop ----------------------------------------------------------------------------------------
/* The operator interface of this header for the other modules (amxk_moe.h uses nothing else of it):
   a pack as y[rows, N] = x[rows, K] W^T (+ bias), f32 y, run by ranges of rows and column blocks with
   the plan, kernels and sums of amxk_linear (int8 activations: amxk_linear_q8) for the same row
   count. amxk__linop and amxk__linop_call are opaque to callers. */
#define AMXK__LINOP_NB AMXK__LIN_NB /* outputs per column block: column ranges count blocks */

/* Opens packed as an [n, k] operator: the pack is validated (AMXK_ERR_NULL for NULL; AMXK_ERR_FORMAT
   when it is not a pack, has another shape, or is a bf16/fp16/f32 pack of another dtype than xt, which
   AMXK_DTYPE_INVALID leaves open); q8: it will run on int8 activations with one scale per row, so
   it must be a pack amxk_linear_q8 takes (else AMXK_ERR_UNSUPPORTED). f32 packs (amxk_linear only):
   AMXK_ERR_UNSUPPORTED. */
AMXK__PRIV amxk_status amxk__linop_open(amxk__linop *op, const void *packed, size_t bytes, size_t n, size_t k, amxk_dtype xt, int q8) {
    amxk_status s = amxk__linop_init(op, packed, bytes);
    if (s != AMXK_OK) return s;
    if (op->n != n || op->k != k) return AMXK_ERR_FORMAT;
    if (op->pt == AMXK_DTYPE_F32) return AMXK_ERR_UNSUPPORTED; /* whatever xt: the size queries too */
    if (!op->quant && xt != AMXK_DTYPE_INVALID && op->pt != xt) return AMXK_ERR_FORMAT;
    if (q8 && amxk__linop_q8_check(op) != AMXK_OK) return AMXK_ERR_UNSUPPORTED;
    return AMXK_OK;
}

/* 1 when pack b would open exactly like pack a (same size and header: the same checks pass and
   amxk__linop_ws is the same), without reading more than the header: never for packs whose padding
   columns amxk__pack_open reads (bf16/fp16 and fp8 packs with K not a multiple of 32). */
AMXK__PRIV int amxk__linop_same(const void *a, size_t bytes_a, const void *b, size_t bytes_b) {
    amxk__pack_hdr h;
    if (!a || !b || bytes_a != bytes_b || bytes_a < sizeof h || memcmp(a, b, sizeof h) != 0) return 0;
    memcpy(&h, b, sizeof h);
    return h.k % AMXK__LIN_KALIGN == 0 || (h.qformat != AMXK_QFMT_NONE && (h.qformat >= AMXK_QFMT_COUNT || !amxk__q_traits[h.qformat].any_blocks));
}

/* Per-worker workspace bytes that amxk__linop_run needs on ctx for any call of 1 .. rows rows (either
   x dtype for quantized packs; 0 on int8 activations). Each table's workspace is nondecreasing in the
   row count and only the vector level's takes calls below min_m rows, so the plans of rows and of
   min(rows, min_m - 1) rows bound every row count. */
AMXK__PRIV size_t amxk__linop_ws(const amxk_ctx *ctx, const amxk__linop *op, size_t rows, int q8) {
    const size_t below = AMXK__MIN(rows, amxk__pack_kernels_ctx(ctx)->min_m - 1);
    amxk__linear_plan p;
    size_t best = 0;
    int t, i;
    if (q8) return 0;
    for (t = 0; t < 2; t++)
        for (i = 0; i < 2; i++) {
            const amxk_dtype dt = op->quant ? (t ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16) : op->pt;
            if (i && below == 0) continue;
            amxk__pack_layout(ctx, AMXK__OP_LINEAR, i ? below : rows, op->n, op->k, dt, op->quant ? &op->q : NULL, &p);
            best = AMXK__MAX(best, p.ws_worker);
        }
    return best;
}

/* A bound call: an operator, its row count, input rows, bias and f32 output. It points into itself:
   bind it where it stays (it must not be copied or moved afterwards). */
typedef struct amxk__linop_call {
    amxk__linop op;
    amxk__linear_plan plan;
    amxk__linear_args a; /* w*a16 */
    amxk__q8_args c;     /* int8 activations */
    int q8;
} amxk__linop_call;

/* w*a16: x [rows, K] of dtype xt (BF16 / F16, the pack's for bf16/fp16 packs), row stride ldx ->
   y [rows, N] f32, row stride ldy; bias NULL or N floats. op: opened for this xt. */
AMXK__PRIV void amxk__linop_bind(const amxk_ctx *ctx, amxk__linop_call *c, const amxk__linop *op, size_t rows, const void *x, amxk_dtype xt,
                                 size_t ldx, const float *bias, float *y, size_t ldy) {
    memset(c, 0, sizeof *c);
    c->op = *op;
    amxk__linear_bind(ctx, &c->op, rows, x, xt, ldx, bias, y, AMXK_DTYPE_F32, ldy, NULL, &c->a, &c->plan);
}

/* Int8 activations: xq [rows, K] (amxk__linop_quant_row's rows, row stride ldq) with one scale per
   row, xs[r] -> y [rows, N] f32 as amxk_linear_q8 computes it. op: opened with q8. */
AMXK__PRIV void amxk__linop_bind_q8(const amxk_ctx *ctx, amxk__linop_call *c, const amxk__linop *op, size_t rows, const int8_t *xq, size_t ldq,
                                    const float *xs, const float *bias, float *y, size_t ldy) {
    memset(c, 0, sizeof *c);
    c->op = *op, c->q8 = 1;
    amxk__q8_bind(ctx, &c->op, rows, xq, AMXK_DTYPE_I8, ldq, xs, AMXK_SCALES_ROW_MAJOR, 1, c->op.k, bias, y, AMXK_DTYPE_F32, ldy, &c->c, &c->plan);
}

/* Rows per chunk of a bound call: a caller that splits the rows cuts them at multiples of this (from
   row 0), as amxk_linear does, to get its sums. */
AMXK__PRIV size_t amxk__linop_chunk(const amxk__linop_call *c) { return c->plan.mc; }
/* Column blocks per tile of the kernel of a bound call: a caller that splits the column blocks cuts
   them at multiples of this (the AMX kernels: block pairs; a slice of one block would run half tiles). */
AMXK__PRIV size_t amxk__linop_col_tile(const amxk__linop_call *c) { return c->plan.kt->col_tile; }

/* Rows [m0, m1) (inside one chunk) x column blocks [b0, b1) of a bound call; ws: amxk__linop_ws bytes
   for this worker (AMXK_ALIGN aligned; may be NULL when that is 0). ts: NULL, or the task's tile
   session (amxk__linop_begin .. amxk__linop_end, the same ws for all its calls; amxk__tiles): the
   kernels without one end its x panel (they write ws). */
AMXK__PRIV void amxk__linop_run(const amxk__linop_call *c, size_t m0, size_t m1, size_t b0, size_t b1, void *ws, amxk__tiles *ts) {
    const amxk__pack_kernels *kt = c->plan.kt;
    if (c->q8) {
        if (ts && kt->q8_block_ts) kt->q8_block_ts(&c->c, m0, m1, b0, b1, ts);
        else kt->q8_block(&c->c, m0, m1, b0, b1);
    } else if (ts && kt->lin_block_ts) {
        kt->lin_block_ts(&c->a, m0, m1, b0, b1, (char *)ws, ts);
    } else {
        if (ts) ts->x = NULL;
        kt->lin_block(&c->a, m0, m1, b0, b1, (char *)ws);
    }
}
/* x panels built once per call instead of per kernel call (w*a16: the AMX kernel's tile-major A
   panels; int8 activations: the vector level's q8_xpan 8-row tiles). _bytes: for every row of a bound
   call (0: its kernel reads x where it is; a multiple of AMXK_ALIGN); _set points the call at that
   many AMXK_ALIGN-aligned bytes; _build writes the panels of rows [m0, m1) (one amxk__linop_chunk),
   after x holds its values and before any amxk__linop_run of the call reads them. _bound: bytes for
   `calls` calls of `rows` rows in all of pack op on ctx's level (overflow sets *ovf). */
AMXK__PRIV size_t amxk__linop_xpanel_bytes(const amxk__linop_call *c) {
    if (c->q8) { /* whole 8-row tiles of ceil(K / 4) 32-bit units per row (sizes checked by the call's layout) */
        int ovf = 0;
        return amxk__q8_xpan_used(&c->plan, &c->op.q) ? AMXK__ROUND_UP(AMXK__Q8_XPAN_BYTES(c->c.m, c->c.k, &ovf), (size_t)AMXK_ALIGN) : 0;
    }
    if (!c->plan.kt->lin_xpanel) return 0;
    return amxk__linop_xpanel_rows(c->a.m, c->plan.mc) * c->a.kp * 2;
}
AMXK__PRIV size_t amxk__linop_xpanel_bound(const amxk_ctx *ctx, const amxk__linop *op, int q8, size_t rows, size_t calls, int *ovf) {
    if (q8) { /* the vector level's tiles may run any call; each call's bytes at most 32 more than its tiles' */
        const amxk__pack_kernels *vec = amxk__pack_kernels_vec(ctx);
        if (!vec->q8_xpan || !vec->q8_xpan_takes || !vec->q8_xpan_takes(&op->q) || rows < AMXK__Q8_XPAN_ROWS) return 0;
        return amxk__sz_mul(amxk__sz_add(amxk__sz_mul(rows / AMXK__Q8_XPAN_ROWS, AMXK__Q8_XPAN_UNITS(op->k), ovf), calls, ovf),
                            AMXK__Q8_XPAN_ROWS * 4, ovf);
    }
    if (!amxk__pack_kernels_ctx(ctx)->lin_xpanel || !rows) return 0;
    /* each row chunk's panels at most 31 rows more than its rows; the AMX level's chunks (mc =
       min(rows, AMXK__LIN_AMX_MC), amxk__linear_ws__amx): at most calls + rows / AMXK__LIN_AMX_MC */
    rows = amxk__sz_add(rows, amxk__sz_mul(31, amxk__sz_add(calls, rows / AMXK__LIN_AMX_MC, ovf), ovf), ovf);
    return amxk__sz_mul(amxk__sz_mul(rows, amxk__lin_kp(op->k), ovf), 2, ovf);
}
AMXK__PRIV void amxk__linop_xpanel_set(amxk__linop_call *c, void *buf) {
    if (!amxk__linop_xpanel_bytes(c)) return;
    if (c->q8) c->c.xpan = (const uint32_t *)buf;
    else c->a.xpan = (uint16_t *)buf;
}
AMXK__PRIV void amxk__linop_xpanel_build(const amxk__linop_call *c, size_t m0, size_t m1) {
    if (c->q8 && c->c.xpan) /* the 8-row tiles inside [m0, m1) */
        c->plan.vec->q8_xpan(&c->c, AMXK__CEIL_DIV(m0, (size_t)AMXK__Q8_XPAN_ROWS), m1 / AMXK__Q8_XPAN_ROWS, (uint32_t *)c->c.xpan);
    else if (!c->q8 && c->a.xpan)
        c->plan.kt->lin_xpanel(&c->a, m0, m1, c->a.xpan + amxk__linop_xpanel_rows(m0, c->plan.mc) * c->a.kp);
}

/* A task's tile session: begin before its first amxk__linop_run, end after its last (releases the
   tiles if a kernel left them loaded; the session is then empty again). */
AMXK__PRIV void amxk__linop_begin(amxk__tiles *ts) { memset(ts, 0, sizeof *ts); }
AMXK__PRIV void amxk__linop_end(amxk__tiles *ts) {
    if (ts->release) ts->release();
    memset(ts, 0, sizeof *ts);
}

/* k values of dtype t (BF16, F16 or F32) quantized as one row by amxk_quantize_act (AMXK_DTYPE_I8, one
   group = the row, ctx's level): q[0..k), *s. */
AMXK__PRIV void amxk__linop_quant_row(const amxk_ctx *ctx, const void *src, amxk_dtype t, size_t k, int8_t *q, float *s) {
    amxk__actq_args qa;
    memset(&qa, 0, sizeof qa);
    qa.k = k, qa.ldx = k, qa.group = k, qa.ldq = k, qa.ld_s = 1, qa.x = src, qa.xt = t, qa.ot = AMXK_DTYPE_I8;
    qa.q = q, qa.scales = s, qa.layout = AMXK_SCALES_ROW_MAJOR, qa.kt = amxk__pack_kernels_vec(ctx);
    amxk__actq_row(&qa, 0, 0);
}

#endif /* AMXK_IMPLEMENTATION */
