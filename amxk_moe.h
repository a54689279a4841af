/* amxk_moe.h - v0.1.0 - amxk module: MoE layer: routing, align, fused experts, shared expert
   Public domain or MIT, your choice (see amxk.h).

   Include after or without amxk.h (this header includes it, and amxk_pack.h). Define
   AMXK_IMPLEMENTATION in exactly one file before including it to emit the implementation (the core's,
   amxk_pack.h's and this module's, once each). Conventions (strides in elements, status codes,
   workspace, threading, ISA levels): see amxk.h. Measurements: docs/notes/moe.md, bench/results.md.

   WHAT IS HERE
       amxk_moe_topk            routing: softmax / sigmoid, grouped top-k, correction bias, softcap
       amxk_moe_align_size      bound on the blocks of amxk_moe_align
       amxk_moe_align           (token, slot) pairs grouped by expert into padded blocks of block_m rows
       amxk_moe_workspace_size  workspace of amxk_moe_experts
       amxk_moe_experts         fused experts: gather, gate+up, activation, down, weighted top-k sum,
                                shared expert, shard range or expert map, routed input, in place

   ROUTING (amxk_moe_topk), per token row l[0..E) of fp32 logits:
       l'_e = softcap c > 0: c * tanh(l_e / c), else l_e; score_e = softmax: exp(l'_e - max l') / sum
       exp(l' - max) (fp32, expf, sum in expert order), sigmoid: 1 / (1 + exp(-l'_e)); choice_e =
       score_e + bias_e (with correction_bias). ORDER ("e before f"), used by every selection: without
       a bias the RAW logit decides (l_e > l_f, then lower id): the scores are non-decreasing in l, so
       where fp32 scores tie although the logits differ (saturated sigmoid, underflowed exp, tanh) the
       larger logit still wins, as sglang / vLLM select; with a bias: larger choice, then larger raw
       logit, then lower id. Grouping (num_expert_group G >= 2, group g = experts [g E/G, (g+1) E/G)):
       group_score_top2 = 0 (DeepSeek-V2) ranks a group by its best expert, 1 (DeepSeek-V3 / Kimi) by
       the fp32 sum of the choices (scores without bias) of its two best, then lower group id; only the
       topk_group best groups' experts can be chosen. Selection: the topk first eligible experts, in
       that order (total and the same on every tier). Weights: w_j = the chosen expert's score (never
       the biased choice); renormalize: w_j /= their fp32 sum in slot order (skipped when 0); then
       w_j *= routed_scaling_factor (0 means 1). Logits and bias must be finite (no -inf masking).
       ROUTED SCALING FACTOR, TWO PLACES, ONE PRODUCT: amxk_moe_router's scales the returned weights,
       amxk_moe_opts' the routed sum inside amxk_moe_experts; both apply when both are set. Set the
       one your framework puts it in (sglang biased_grouped_topk: the router; sglang shared_expert_cpu,
       vLLM fused MoE: the experts) and leave the other 0.

   FUSED EXPERTS (amxk_moe_experts), for token t (x row t, K values) and slot j < topk with expert
   e = topk_ids[t, j] in the shard [e_begin, e_end) (other ids, -1 included, add nothing):
       xin   = x_t, or round16(w_tj * x_t) with apply_router_weight_on_input (w_tj then counts as 1)
       h     = W13_e xin + b13_e            (amxk_linear: fp32 accumulation, 2N outputs)
       gate_i, up_i = h[i], h[N + i], or with w13_interleaved h[2i], h[2i + 1]
       a_i   = round16(act(gate_i, up_i))   (fp32 math, one rounding to x's dtype)
       y_tj  = W2_e a + b2_e                (amxk_linear, f32)
       out_t = round_out(S_t + r * (R_t + sum_j w_tj y_tj))   fp32, slots in order, one rounding;
               S_t the shared expert (same formula, its own weights, no routing weight) or 0,
               R_t the routed input or 0, r = opts.routed_scaling_factor (0 means 1)
       act (fp32; sigmoid(v) = 1 / (1 + exp(-v)) for v >= 0, exp(v) / (1 + exp(v)) otherwise):
           SILU gate sigmoid(gate) up; GELU_TANH 0.5 gate (1 + tanh(sqrt(2/pi) (gate + 0.044715
           gate^3))) up; GELU_ERF 0.5 gate (1 + erf(gate / sqrt 2)) up; SWIGLU_OAI (gpt-oss)
           g = min(gate, limit), u = clamp(up, -limit, limit), g sigmoid(alpha g) (u + 1) (alpha
           finite, limit > 0). The vector levels: a few ulp from these (amxk__moe_act__8__avx2).
       SHARED GATE (shared->gate): S_t *= sigmoid(sum_k x_tk gate_k + gate_bias), the dot in fp32 in k
       order over the 16-bit x, the same bits on every tier.
       EXPERT MAP (opts.expert_map, vLLM's): ids are GLOBAL in [-1, n_global_experts); pair (t, j) uses
       local expert expert_map[id] (an index into w), -1 = not on this rank; without a map ids are
       local. The shard range applies to the local ids.
       ROUTED INPUT (opts.routed_in): R, [M, K] computed elsewhere. topk = 0 (topk_weights / topk_ids
       may be NULL; of w only hidden is read) makes the call sglang's shared_expert_cpu(x, ...,
       fused_experts_out = R, routed_scaling_factor = r).
       PAD ROWS: every row t < M of out is written (a token with no expert here gets S_t + r R_t;
       without shared expert and routed input 0, so per-shard outputs can be summed by the caller).
       Duplicate ids within a token are allowed (each slot counts).

   ACT_INT8 (opts.act_int8 = 1: w8a8 / w4a8 / w2a8): both GEMMs on int8 activations, q8(v) =
   amxk_quantize_act's I8 row quantizer (sglang rounds v * (127 / amax): a code may differ by 1).
   xin is quantized per token (per token and slot with apply-on-input); h = amxk_linear_q8(q8(xin),
   W13_e) + b13_e; a = act(gate, up) in fp32, NOT rounded to 16 bits, then q8 per row;
   y = amxk_linear_q8(q8(a), W2_e) + b2_e. Results equal per-expert amxk_quantize_act +
   amxk_linear_q8 calls on the same rows (AMX TDPBSSD where amxk_linear_q8's rule sends the unit's
   rows, else the vector level). Every pack of the shard and the shared expert must be one
   amxk_linear_q8 takes (INT8 symmetric, INT4 / INT2 with groups of whole 64-byte rows), else
   AMXK_ERR_UNSUPPORTED; x stays BF16 / F16.

   WEIGHTS (amxk_moe_weights): per expert a w13 pack [2N, K] (gate rows then up rows, or interleaved
   pairs) and a w2 pack [K, N], any format amxk_linear takes (formats may differ between experts);
   bf16 / fp16 packs must have x's dtype; fp32 packs are not taken (AMXK_ERR_UNSUPPORTED). Passed as
   per-expert pointer and size arrays (entries outside the shard may be NULL / 0), or, with the
   pointer array NULL, a base and a per-expert byte stride (amxk_pack_linear_batched's layout).
   Biases: b13 NULL or [E, 2N] f32 in w13's row order; b2 NULL or [E, K] f32.

   THREADING. Every active expert, and the shared expert, is a unit of two GEMMs run by amxk_pack.h's
   operator (>>linop: the plan and kernels amxk_linear / amxk_linear_q8 would use for the unit's row
   count, so the same sums); all units' work forms one parallel loop per phase (the phases: at
   amxk_moe_experts' definition). Each output is computed by one item in a fixed order: results are
   bitwise identical for any worker count. Routing: tasks over token chunks; align: serial. This
   module's elementwise kernels: 8 lanes at avx2, 16 from avx512 up; the GEMMs' levels are
   amxk_pack.h's.
*/
#ifndef AMXK_MOE_H_INCLUDED
#define AMXK_MOE_H_INCLUDED
#include "amxk.h"
#if AMXK_VERSION_NUMBER != 100
#  error "amxk_moe.h v0.1.0 needs amxk.h v0.1.0"
#endif
#include "amxk_pack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- routing ----------------------------------------------------------------------------------- */

typedef enum amxk_moe_score {
    AMXK_MOE_SCORE_SOFTMAX = 0,
    AMXK_MOE_SCORE_SIGMOID = 1,
    AMXK_MOE_SCORE_FORCE_I32 = 0x7fffffff
} amxk_moe_score;

/* Router settings. A zero-initialised struct is plain softmax top-k without renormalization. */
typedef struct amxk_moe_router {
    amxk_moe_score score;
    int renormalize;              /* 0 or 1 */
    size_t num_expert_group;      /* 0 or 1: no grouping; else G, must divide E */
    size_t topk_group;            /* with G >= 2: groups kept, 1..G, topk <= topk_group * E/G */
    int group_score_top2;         /* with G >= 2: 0 group max, 1 sum of the two best (E/G >= 2) */
    const float *correction_bias; /* NULL or E floats: added to the scores for the selection only */
    float routed_scaling_factor;  /* final multiplier of the returned weights; 0 means 1 (see ROUTING) */
    float softcap;                /* 0: none; c > 0: logits -> c * tanh(l / c) before scoring */
} amxk_moe_router;

/* Top-k routing of M tokens over E experts (see ROUTING). logits: element (t, e) at
   logits[t * ld_logits + e], ld_logits >= E. Outputs contiguous [M, topk]: topk_weights (f32) and
   topk_ids (int32), slot order = the ORDER of ROUTING (best first). Tasks: chunks of tokens.
   Errors (nothing written): CONTEXT, NULL, SHAPE (M, E or topk 0, topk > E), STRIDE (also the logits'
   extent, (M - 1) * ld_logits + E floats, not fitting a size_t), ARG (a router field outside the
   range its comment gives; a non-finite logit, bias, scaling factor or softcap), ALIAS (the outputs,
   M * topk elements each, overlap each other or a byte the tasks read: the logits' extent,
   correction_bias (E floats)). *router and *ctx are copied at entry (the outputs may overlap them). */
AMXK_DEF amxk_status amxk_moe_topk(const amxk_ctx *ctx, const amxk_moe_router *router, size_t m, size_t n_experts,
                                   const float *logits, size_t ld_logits, size_t topk, float *topk_weights,
                                   int32_t *topk_ids);

/* ---- align ------------------------------------------------------------------------------------- */

/* The number of blocks amxk_moe_align can produce at most: floor(M * topk / block_m) + min(E, M * topk).
   sorted_ids needs max_blocks * block_m entries, block_expert max_blocks, block_row max_blocks + 1.
   Errors: NULL, SHAPE (any argument 0). */
AMXK_DEF amxk_status amxk_moe_align_size(size_t m, size_t topk, size_t n_experts, size_t block_m, size_t *max_blocks);

/* Groups the (token, slot) pairs of topk_ids [M, topk] (contiguous) by expert: pair p = t * topk + j
   with id e in [e_begin, e_end) (e_begin = e_end = 0: all E experts) is routed; -1 and ids outside the
   shard are skipped; ids < -1 or >= E are AMXK_ERR_ARG. Experts in increasing id, each expert's pairs
   in increasing p (stable), padded to a multiple of block_m rows with the value M * topk. Outputs:
   sorted_ids[b * block_m + r] (r < block_m) for b < n_blocks; block_expert[b] = the expert of block b;
   block_row[b] = the number of routed pairs before block b (compact row offset), block_row[n_blocks] =
   the number of routed pairs. Only those elements are written. Empty experts get no block.
   max_blocks: the capacity of the arrays (>= the real need, else AMXK_ERR_WORKSPACE; the bound of
   amxk_moe_align_size is always enough). Serial, O(M * topk * (e_end - e_begin)), no scratch.
   Errors (nothing written): CONTEXT, NULL, SHAPE, ARG, WORKSPACE, ALIAS (the elements the call
   writes overlap each other or topk_ids' M * topk entries; capacity it does not write is free). */
AMXK_DEF amxk_status amxk_moe_align(const amxk_ctx *ctx, size_t m, size_t topk, const int32_t *topk_ids, size_t n_experts,
                                    size_t e_begin, size_t e_end, size_t block_m, int32_t *sorted_ids,
                                    int32_t *block_expert, int32_t *block_row, size_t max_blocks, size_t *n_blocks);

/* ---- fused experts ----------------------------------------------------------------------------- */

typedef enum amxk_moe_act {
    AMXK_MOE_ACT_SILU = 0,      /* silu(gate) * up */
    AMXK_MOE_ACT_GELU_TANH = 1, /* gelu_tanh(gate) * up */
    AMXK_MOE_ACT_SWIGLU_OAI = 2, /* gpt-oss clamped SwiGLU (alpha, limit) */
    AMXK_MOE_ACT_GELU_ERF = 3,   /* gelu(gate) * up, exact erf form (torch / sglang / vLLM "gelu") */
    AMXK_MOE_ACT_FORCE_I32 = 0x7fffffff
} amxk_moe_act;

/* The routed experts' weights (see WEIGHTS above). */
typedef struct amxk_moe_weights {
    size_t n_experts; /* E */
    size_t hidden;    /* K */
    size_t inter;     /* N (w13 has 2N rows) */
    const void *const *w13; /* E pointers, or NULL: w13_base + e * w13_stride */
    const size_t *w13_bytes; /* E sizes with w13 */
    const void *w13_base;
    size_t w13_stride; /* bytes */
    const void *const *w2;
    const size_t *w2_bytes;
    const void *w2_base;
    size_t w2_stride;
    int w13_interleaved; /* 0: gate rows then up rows; 1: row 2i gate i, row 2i+1 up i */
    const float *b13;    /* NULL or [E, 2N] */
    const float *b2;     /* NULL or [E, K] */
} amxk_moe_weights;

/* A shared expert: a dense MLP on every token, same K, its own intermediate size. */
typedef struct amxk_moe_shared {
    size_t inter; /* Ns */
    const void *w13; /* [2Ns, K] pack */
    size_t w13_bytes;
    const void *w2; /* [K, Ns] pack */
    size_t w2_bytes;
    int w13_interleaved;
    const float *b13; /* NULL or [2Ns] */
    const float *b2;  /* NULL or [K] */
    const float *gate; /* SHARED GATE: NULL or K fp32 weights (Qwen3-Next shared_expert_gate) */
    float gate_bias;
} amxk_moe_shared;

/* Options. A zero-initialised struct (or NULL) means: SiLU, no apply-on-input, all experts, r = 1,
   16-bit activations (w*a16). */
typedef struct amxk_moe_opts {
    amxk_moe_act act;
    float alpha, limit;                /* SWIGLU_OAI only (e.g. 1.702, 7.0); ignored otherwise */
    int apply_router_weight_on_input; /* 0 or 1 */
    size_t e_begin, e_end;            /* shard [e_begin, e_end); both 0: [0, E) */
    float routed_scaling_factor;      /* r in out = shared + r * routed; 0 means 1 */
    int act_int8;                     /* 0: w*a16; 1: int8 activations (ACT_INT8) */
    const int32_t *expert_map;        /* EXPERT MAP: NULL or n_global_experts int32 */
    size_t n_global_experts;
    const void *routed_in;            /* ROUTED INPUT: NULL or [M, K] F32 / BF16 / F16, stride ld_routed >= K */
    amxk_dtype routed_dtype;
    size_t ld_routed;
} amxk_moe_opts;

/* Workspace bytes of amxk_moe_experts for this context, weights (every pack in the shard is read:
   the size covers their formats), shared expert (NULL: none), M, topk and options (NULL: defaults).
   Errors: those of amxk_moe_experts that concern these arguments, checked the same way. */
AMXK_DEF amxk_status amxk_moe_workspace_size(const amxk_ctx *ctx, const amxk_moe_weights *w, const amxk_moe_shared *shared,
                                             const amxk_moe_opts *opts, size_t m, size_t topk, size_t *bytes);

/* Fused experts (see FUSED EXPERTS). x: [M, K] BF16 or F16, row stride ldx >= K. topk_weights f32 and
   topk_ids int32, contiguous [M, topk] (weights of pairs that add nothing are not read); topk may be 0
   (no routed pairs: see ROUTED INPUT). out: [M, K] F32, BF16 or F16, row stride ldo >= K; may alias x.
   shared: NULL or the shared expert. workspace: >= amxk_moe_workspace_size bytes, AMXK_ALIGN aligned.
   Every pack the call reads is validated as amxk_packed_linear_info says (untrusted bytes), each
   element on its own: the shared expert's, and the routed experts' (with M topk >= the shard's
   experts: every pack of the shard; the size query: always every one); sizes are overflow-checked.
   Errors (nothing written): CONTEXT, NULL (w, x, out, topk_weights / topk_ids with topk > 0, a size
   array with its pointer array, a NULL pack inside the shard: checked for the whole shard before any
   pack byte is read, so this is the status whatever else is wrong), SHAPE (M or K 0; with topk > 0:
   E or N 0; the workspace or the biases' extents do not fit a size_t), STRIDE (ldx, ldo, ld_routed;
   x's, out's or routed_in's extent not fitting a size_t), DTYPE (x, out, routed_dtype), FORMAT (a
   validated pack is not a pack, not [2N, K] / [K, N], or 16-bit of another dtype than x), ALIGN (a pack
   not 64-byte aligned, an expert stride not a multiple of 64, the workspace), ARG (ids < -1 or >= E,
   or >= n_global_experts with a map; map entries < -1 or >= E; n_global_experts 0 with a map; bad
   shard, act, alpha, limit, flags), WORKSPACE, ALIAS, UNSUPPORTED (act_int8 and a pack
   amxk_linear_q8 does not take; an fp32 pack).
   ALIAS, the overlap table (byte extents; E = n_experts, with topk > 0 only where E appears):
       outputs   out ((M - 1) * ldo + K of out_dtype), the workspace (the size query's bytes)
       inputs    x ((M - 1) * ldx + K 16-bit values: may overlap out); routed_in ((M - 1) * ld_routed
                 + K: may be out itself, same pointer, dtype and stride); topk_weights, topk_ids
                 (M * topk each); expert_map (n_global_experts int32, with topk > 0); w13, w2 (E
                 pointers), w13_bytes, w2_bytes (E size_t), b13 ([E, 2N] f32), b2 ([E, K] f32); every
                 shard expert's two packs (size-array entry or stride); the shared expert's packs, b13
                 (2Ns), b2 (K), gate (K f32). Nothing else overlaps an output, outputs not each other.
       not in it  *ctx, *weights, *shared, *opts: copied at entry (the arrays they point to are in it). */
AMXK_DEF amxk_status amxk_moe_experts(const amxk_ctx *ctx, const amxk_moe_weights *w, const amxk_moe_shared *shared,
                                      const amxk_moe_opts *opts, size_t m, const void *x, amxk_dtype x_dtype, size_t ldx,
                                      size_t topk, const float *topk_weights, const int32_t *topk_ids, void *out,
                                      amxk_dtype out_dtype, size_t ldo, void *workspace, size_t workspace_bytes);

#ifdef __cplusplus
}
#endif
#endif /* AMXK_MOE_H_INCLUDED */

#if defined(AMXK_IMPLEMENTATION) && !defined(AMXK_MOE_C_INCLUDED)
#define AMXK_MOE_C_INCLUDED
#include "amxk.h" /* the core implementation, if this file has not emitted it yet (the module's
                      declarations may have been included before AMXK_IMPLEMENTATION was defined) */
#include "amxk_pack.h"
#include <math.h>

// >>config ---------------------------------------------------------------------------------------

#define AMXK__MOE_ROWS_PER_TASK 64 /* rows per task of the gather / activation / reduction loops */
#define AMXK__MOE_TOPK_TOKENS 16   /* tokens per routing task */
#define AMXK__MOE_ITEMS_PER_WORKER 8 /* with several workers: at least this many GEMM items per worker */
#define AMXK__MOE_SERIAL_GATHER 65536 /* gathers (act_int8: quantization passes) of at most this many
                                         elements run on the caller */
#define AMXK__MOE_QUANT_TOKENS 16      /* act_int8: tokens per task of the input quantization */

// >>util -----------------------------------------------------------------------------------------

AMXK__INLINE int amxk__moe_finite(float f) { return f == f && f - f == 0.0f; }

/* The byte extent of a strided [rows, cols] array of esz-byte elements, row stride ld elements
   ((rows - 1) * ld + cols elements); *ovf set when it does not fit a size_t. */
AMXK__INLINE size_t amxk__moe_extent(size_t rows, size_t ld, size_t cols, size_t esz, int *ovf) {
    return amxk__sz_mul(amxk__sz_add(amxk__sz_mul(rows - 1, ld, ovf), cols, ovf), esz, ovf);
}

/* Routing: one token row. Experts are ranked by a key (v, l): v = score + bias with a correction bias,
   else the raw logit; l = the raw logit (see ROUTING: ORDER). */
typedef struct amxk__moe_row {
    const float *l, *bias;
    int sigmoid;
    float cap;     /* softcap, 0: none */
    float mx, sum; /* softmax over the capped logits */
} amxk__moe_row;

typedef struct amxk__moe_key {
    float v, l;
} amxk__moe_key;

AMXK__INLINE float amxk__moe_capped(const amxk__moe_row *r, size_t e) { return r->cap > 0.0f ? r->cap * tanhf(r->l[e] / r->cap) : r->l[e]; }
AMXK__INLINE float amxk__moe_score(const amxk__moe_row *r, size_t e) {
    if (r->sigmoid) return 1.0f / (1.0f + expf(-amxk__moe_capped(r, e)));
    return expf(amxk__moe_capped(r, e) - r->mx) / r->sum;
}
AMXK__INLINE amxk__moe_key amxk__moe_key_of(const amxk__moe_row *r, size_t e) {
    amxk__moe_key k;
    k.l = r->l[e];
    k.v = r->bias ? amxk__moe_score(r, e) + r->bias[e] : k.l;
    return k;
}
/* 1 when (ka, a) ranks before (kb, b): larger v, then larger l, then lower id. */
AMXK__INLINE int amxk__moe_before(amxk__moe_key ka, size_t a, amxk__moe_key kb, size_t b) {
    return ka.v > kb.v || (ka.v == kb.v && (ka.l > kb.l || (ka.l == kb.l && a < b)));
}

typedef struct amxk__moe_topk_args {
    const amxk_moe_router *r;
    size_t m, e, ld, topk, groups, gsize, topk_group;
    const float *logits;
    float *w;
    int32_t *ids;
} amxk__moe_topk_args;

/* Key of group g: its best expert's key (max), or {sum of the choices (scores without bias) of its two
   best experts, 0} (top2: on equal sums the lower group id). */
AMXK__PRIV amxk__moe_key amxk__moe_group_key(const amxk__moe_topk_args *a, const amxk__moe_row *row, size_t g) {
    size_t i, e0 = g * a->gsize, i1 = e0, i2 = e0;
    amxk__moe_key b1 = amxk__moe_key_of(row, e0), b2 = b1, k;
    int have2 = 0;
    for (i = e0 + 1; i < e0 + a->gsize; i++) {
        k = amxk__moe_key_of(row, i);
        if (amxk__moe_before(k, i, b1, i1)) b2 = b1, i2 = i1, b1 = k, i1 = i, have2 = 1;
        else if (!have2 || amxk__moe_before(k, i, b2, i2)) b2 = k, i2 = i, have2 = 1;
    }
    if (!a->r->group_score_top2) return b1;
    k.l = 0.0f;
    k.v = row->bias ? b1.v + b2.v : amxk__moe_score(row, i1) + amxk__moe_score(row, i2);
    return k;
}

AMXK__PRIV void amxk__moe_topk_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_topk_args *a = (const amxk__moe_topk_args *)task_ctx;
    size_t t0 = task * AMXK__MOE_TOPK_TOKENS, t1 = AMXK__MIN(a->m, t0 + AMXK__MOE_TOPK_TOKENS), t;
    (void)worker;
    for (t = t0; t < t1; t++) {
        amxk__moe_row row;
        size_t e, j, g, gl = 0, el = 0;
        amxk__moe_key gvl, vl;
        float sum = 0.0f;
        float *w = a->w + t * a->topk;
        int32_t *ids = a->ids + t * a->topk;
        gvl.v = gvl.l = vl.v = vl.l = 0.0f;
        row.l = a->logits + t * a->ld, row.bias = a->r->correction_bias, row.sigmoid = a->r->score == AMXK_MOE_SCORE_SIGMOID;
        row.cap = a->r->softcap, row.mx = 0.0f, row.sum = 0.0f;
        if (!row.sigmoid) {
            row.mx = amxk__moe_capped(&row, 0);
            for (e = 1; e < a->e; e++) {
                float c = amxk__moe_capped(&row, e);
                row.mx = c > row.mx ? c : row.mx;
            }
            for (e = 0; e < a->e; e++) row.sum += expf(amxk__moe_capped(&row, e) - row.mx);
        }
        if (a->groups >= 2) { /* the topk_group-th best group (gvl, gl): groups ranking at or before it are kept */
            for (j = 0; j < a->topk_group; j++) {
                int have = 0;
                amxk__moe_key bv;
                size_t bg = 0;
                bv.v = bv.l = 0.0f;
                for (g = 0; g < a->groups; g++) {
                    amxk__moe_key v = amxk__moe_group_key(a, &row, g);
                    if (j > 0 && !amxk__moe_before(gvl, gl, v, g)) continue; /* already taken */
                    if (!have || amxk__moe_before(v, g, bv, bg)) bv = v, bg = g, have = 1;
                }
                gvl = bv, gl = bg;
            }
        }
        for (j = 0; j < a->topk; j++) {
            int have = 0;
            amxk__moe_key bv;
            size_t be = 0;
            bv.v = bv.l = 0.0f;
            for (g = 0; g < (a->groups >= 2 ? a->groups : 1); g++) {
                size_t e0 = a->groups >= 2 ? g * a->gsize : 0, e1 = a->groups >= 2 ? e0 + a->gsize : a->e;
                if (a->groups >= 2 && g != gl && !amxk__moe_before(amxk__moe_group_key(a, &row, g), g, gvl, gl)) continue;
                for (e = e0; e < e1; e++) {
                    amxk__moe_key v = amxk__moe_key_of(&row, e);
                    if (j > 0 && !amxk__moe_before(vl, el, v, e)) continue;
                    if (!have || amxk__moe_before(v, e, bv, be)) bv = v, be = e, have = 1;
                }
            }
            vl = bv, el = be;
            ids[j] = (int32_t)be;
            w[j] = amxk__moe_score(&row, be);
        }
        if (a->r->renormalize) {
            for (j = 0; j < a->topk; j++) sum += w[j];
            if (sum > 0.0f)
                for (j = 0; j < a->topk; j++) w[j] /= sum;
        }
        if (a->r->routed_scaling_factor != 0.0f && a->r->routed_scaling_factor != 1.0f)
            for (j = 0; j < a->topk; j++) w[j] *= a->r->routed_scaling_factor;
    }
}

/* ---- fused experts: weights access, plan ---------------------------------------------------------- */

/* The local expert of a pair's id (EXPERT MAP): the id itself without a map; -1 stays -1. */
AMXK__INLINE int32_t amxk__moe_local(const int32_t *map, int32_t id) { return map && id >= 0 ? map[id] : id; }

AMXK__INLINE void amxk__moe_w(const amxk_moe_weights *w, size_t e, int down, const void **p, size_t *bytes) {
    if (!down) {
        if (w->w13) *p = w->w13[e], *bytes = w->w13_bytes[e];
        else *p = w->w13_base ? (const char *)w->w13_base + e * w->w13_stride : NULL, *bytes = w->w13_stride;
    } else {
        if (w->w2) *p = w->w2[e], *bytes = w->w2_bytes[e];
        else *p = w->w2_base ? (const char *)w->w2_base + e * w->w2_stride : NULL, *bytes = w->w2_stride;
    }
}

/* One GEMM pair of a call (a unit, see THREADING): an active routed expert (its compact rows) or the
   shared expert (every token); this module splits the column blocks into the items. */
typedef struct amxk__moe_unit {
    amxk__linop_call g1, g2;  /* gate+up (y = h, f32) and down (x = the activation, y f32); act_int8:
                                 on the int8 rows */
    size_t c1, c2;            /* their row chunks */
    size_t rows, N;           /* rows of the unit, intermediate size */
    size_t ns1, sw1, item0;   /* gate+up: ns1 slices of sw1 slice units per row chunk, first item */
    int interleaved;
    float *h;                 /* [rows, 2N] */
    void *act;                /* [rows, N]: x's dtype, or f32 with act_int8 */
    int8_t *aq;               /* act_int8: [rows, N] the quantized activation, scales as[rows] */
    float *as;
} amxk__moe_unit;

/* The workspace of one unit and its inputs (the arguments of amxk__moe_unit_init). */
typedef struct amxk__moe_bufs {
    const void *x;       /* 16-bit input rows, stride ldx (w*a16) */
    size_t ldx;
    const int8_t *xq;    /* act_int8: quantized input rows [rows, K], scales xs[rows] */
    const float *xs;
    float *h, *y;
    void *act;
    int8_t *aq;
    float *as;
} amxk__moe_bufs;

/* The workspace layout of one amxk_moe_experts call: the size query and the call both use it. */
typedef struct amxk__moe_plan {
    size_t e_begin, e_end, rows; /* rows = M * topk */
    float rscale;
    int q8;                      /* act_int8 */
    size_t off_cnt, off_order, off_pos, off_units, max_units, off_xg, off_h, off_a, off_y, off_sh, off_sa, off_sy, off_sg, off_lin;
    size_t off_xp, xp_bytes;     /* x panels built once per call (amxk__linop_xpanel_*): the down calls' (w*a16
                                    on AMX, act_int8 on the VNNI tiles), the gate+up calls' (act_int8) */
    size_t off_xq, off_xs, off_aq, off_as, off_sxq, off_sxs, off_saq, off_sas; /* act_int8 only */
    size_t lin_worker, total; /* per-worker slice of the GEMM scratch */
} amxk__moe_plan;

/* Validates one pack of the call as an [n, k] operator (see WEIGHTS, ACT_INT8), widens the per-worker
   GEMM scratch bound lin for up to rows rows and, xp not NULL, the bound *xp of the x panels of
   `calls` calls of this pack with `rows` rows in all (overflow sets *ovf). */
AMXK__PRIV amxk_status amxk__moe_use_pack(const amxk_ctx *ctx, const void *pk, size_t bytes, size_t n, size_t k, amxk_dtype xt,
                                          int q8, size_t rows, size_t calls, size_t *lin, size_t *xp, int *ovf) {
    amxk__linop op;
    amxk_status s = amxk__linop_open(&op, pk, bytes, n, k, q8 ? AMXK_DTYPE_INVALID : xt, q8);
    if (s != AMXK_OK) return s;
    *lin = AMXK__MAX(*lin, amxk__linop_ws(ctx, &op, rows, q8));
    if (xp) *xp = AMXK__MAX(*xp, amxk__linop_xpanel_bound(ctx, &op, q8, rows, calls, ovf));
    return AMXK_OK;
}

/* The offset *off of a region of a x b bytes (a, b each fit: M * topk <= 2^31, K, N, Ns <= 2^32);
   *off moves past it, rounded up to AMXK_ALIGN (overflow sets *ovf). */
AMXK__INLINE size_t amxk__moe_take(size_t *off, size_t a, size_t b, int *ovf) {
    const size_t at = *off;
    *off = amxk__sz_add(at, amxk__sz_round(amxk__sz_mul(a, b, ovf), (size_t)AMXK_ALIGN, ovf), ovf);
    return at;
}

AMXK__PRIV amxk_status amxk__moe_layout(const amxk_ctx *ctx, const amxk_moe_weights *w, const amxk_moe_shared *sh,
                                        const amxk_moe_opts *o, size_t m, size_t topk, amxk_dtype xt, const int32_t *ids,
                                        amxk__moe_plan *p) {
    size_t e, i, K, N, R, off = 0, lin = 0, pb, prevb[2] = {0, 0}, units, xp13 = 0, xp2 = 0, sxp13 = 0, sxp2 = 0;
    const void *pw, *prev[2] = {NULL, NULL};
    amxk_status s;
    int ovf = 0;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!w) return AMXK_ERR_NULL;
    if (m == 0 || w->hidden == 0 || (topk && (w->n_experts == 0 || w->inter == 0))) return AMXK_ERR_SHAPE;
    if (m > ((size_t)1 << 31) / (topk ? topk : 1) || w->hidden > ((size_t)1 << 32) ||
        (topk && (w->n_experts > 0x7fffffff || w->inter > ((size_t)1 << 32))))
        return AMXK_ERR_SHAPE;
    if (topk && ((w->w13 && !w->w13_bytes) || (w->w2 && !w->w2_bytes))) return AMXK_ERR_NULL;
    if (topk && w->w13_interleaved != 0 && w->w13_interleaved != 1) return AMXK_ERR_ARG;
    if (topk && ((!w->w13 && w->w13_stride % AMXK_ALIGN) || (!w->w2 && w->w2_stride % AMXK_ALIGN))) return AMXK_ERR_ALIGN; /* packs are 64-byte aligned */
    memset(p, 0, sizeof *p);
    K = w->hidden, N = topk ? w->inter : 0, R = m * topk;
    p->e_begin = o ? o->e_begin : 0, p->e_end = o ? o->e_end : 0;
    if (p->e_begin == 0 && p->e_end == 0) p->e_end = w->n_experts;
    if (topk && (p->e_begin >= p->e_end || p->e_end > w->n_experts)) return AMXK_ERR_ARG;
    if (!topk) p->e_begin = p->e_end = 0; /* no routed pairs: no expert pack is read */
    p->rscale = o && o->routed_scaling_factor != 0.0f ? o->routed_scaling_factor : 1.0f;
    if (o) {
        if ((int)o->act < AMXK_MOE_ACT_SILU || (int)o->act > AMXK_MOE_ACT_GELU_ERF) return AMXK_ERR_ARG;
        if (o->act == AMXK_MOE_ACT_SWIGLU_OAI && (!amxk__moe_finite(o->alpha) || !(o->limit > 0.0f))) return AMXK_ERR_ARG;
        if (o->apply_router_weight_on_input != 0 && o->apply_router_weight_on_input != 1) return AMXK_ERR_ARG;
        if (o->act_int8 != 0 && o->act_int8 != 1) return AMXK_ERR_ARG;
        if (!amxk__moe_finite(p->rscale)) return AMXK_ERR_ARG;
        if (o->expert_map && (o->n_global_experts == 0 || o->n_global_experts > 0x7fffffff)) return AMXK_ERR_ARG;
        p->q8 = o->act_int8;
    }
    /* every element of the shard, before any pack byte is read (NULL wins, see amxk_moe_experts) */
    for (e = 0; e < 2 * (p->e_end - p->e_begin); e++) {
        amxk__moe_w(w, p->e_begin + e / 2, (int)(e % 2), &pw, &pb);
        if (!pw) return AMXK_ERR_NULL;
    }
    /* then the packs the call reads: every pack of the shard (the size query, ids NULL, or M topk >= the
       shard's experts), else the routed experts' (pair by pair; ids or map entries out of range are
       the caller's ARG, checked later; no other pack byte is read, so a 2E-header pass is not paid per
       decode call). One equal in size and 64-byte header to the previous validated pack of its kind
       (amxk__linop_same) passes the same checks and needs the same scratch, so only its address is
       checked. x panels: at most one call per active expert, R rows in all */
    units = AMXK__MIN(p->e_end - p->e_begin, R);
    if (R >= p->e_end - p->e_begin) ids = NULL;
    for (i = 0; i < 2 * (ids ? R : p->e_end - p->e_begin); i++) { /* expert by expert: w13, then w2 (d = 1) */
        const int d = (int)(i % 2);
        const int32_t *map = o ? o->expert_map : NULL, id = ids ? ids[i / 2] : 0;
        e = p->e_begin + i / 2;
        if (ids && (id < 0 || id >= (int32_t)(map ? o->n_global_experts : w->n_experts))) continue;
        if (ids && ((e = (size_t)(int64_t)amxk__moe_local(map, id)) < p->e_begin || e >= p->e_end)) continue; /* -1: SIZE_MAX */
        amxk__moe_w(w, e, d, &pw, &pb);
        if (amxk__linop_same(prev[d], prevb[d], pw, pb)) {
            if ((uintptr_t)pw % AMXK_ALIGN) return AMXK_ERR_ALIGN;
            continue;
        }
        if ((s = amxk__moe_use_pack(ctx, pw, pb, d ? K : 2 * N, d ? N : K, xt, p->q8, R, units, &lin, d ? &xp2 : p->q8 ? &xp13 : NULL, &ovf)) != AMXK_OK)
            return s;
        prev[d] = pw, prevb[d] = pb;
    }
    p->off_cnt = amxk__moe_take(&off, (topk ? w->n_experts : 0) + 1, 4, &ovf);
    p->off_order = amxk__moe_take(&off, R, 4, &ovf);
    p->off_pos = amxk__moe_take(&off, R, 4, &ovf);
    p->max_units = AMXK__MIN(p->e_end - p->e_begin, R) + 1; /* active experts + the shared expert */
    p->off_units = amxk__moe_take(&off, p->max_units, sizeof(amxk__moe_unit), &ovf);
    /* gathered 16-bit rows (act_int8: only the scaled rows of apply-on-input, quantized from there),
       h, the activation (16-bit, or f32 before its quantization), y */
    p->off_xg = amxk__moe_take(&off, !p->q8 || (o && o->apply_router_weight_on_input) ? R * 2 : 0, K, &ovf);
    p->off_h = amxk__moe_take(&off, R * 8, N, &ovf);
    p->off_a = amxk__moe_take(&off, R * (p->q8 ? 4 : 2), N, &ovf);
    p->off_y = amxk__moe_take(&off, R * 4, K, &ovf);
    if (p->q8) { /* int8 rows and their scales: the gathered x rows, the activation */
        p->off_xq = amxk__moe_take(&off, R, K, &ovf);
        p->off_xs = amxk__moe_take(&off, R, 4, &ovf);
        p->off_aq = amxk__moe_take(&off, R, N, &ovf);
        p->off_as = amxk__moe_take(&off, R, 4, &ovf);
    }
    if (sh) {
        size_t Ns = sh->inter;
        if (Ns == 0 || Ns > ((size_t)1 << 32)) return AMXK_ERR_SHAPE;
        if ((sh->w13_interleaved != 0 && sh->w13_interleaved != 1) || (sh->gate && !amxk__moe_finite(sh->gate_bias))) return AMXK_ERR_ARG;
        if ((s = amxk__moe_use_pack(ctx, sh->w13, sh->w13_bytes, 2 * Ns, K, xt, p->q8, m, 1, &lin, p->q8 ? &sxp13 : NULL, &ovf)) != AMXK_OK)
            return s;
        if ((s = amxk__moe_use_pack(ctx, sh->w2, sh->w2_bytes, K, Ns, xt, p->q8, m, 1, &lin, &sxp2, &ovf)) != AMXK_OK) return s;
        p->off_sh = amxk__moe_take(&off, m * 8, Ns, &ovf);
        p->off_sa = amxk__moe_take(&off, m * (p->q8 ? 4 : 2), Ns, &ovf);
        p->off_sy = amxk__moe_take(&off, m * 4, K, &ovf);
        p->off_sg = amxk__moe_take(&off, sh->gate ? m : 0, 4, &ovf);
        if (p->q8) {
            p->off_sxq = amxk__moe_take(&off, m, K, &ovf);
            p->off_sxs = amxk__moe_take(&off, m, 4, &ovf);
            p->off_saq = amxk__moe_take(&off, m, Ns, &ovf);
            p->off_sas = amxk__moe_take(&off, m, 4, &ovf);
        }
    }
    /* the x panels of every unit's calls (0 where no kernel reads panels) */
    p->xp_bytes = amxk__sz_add(amxk__sz_add(xp13, xp2, &ovf), amxk__sz_add(sxp13, sxp2, &ovf), &ovf);
    p->off_xp = amxk__moe_take(&off, p->xp_bytes, 1, &ovf);
    p->off_lin = amxk__moe_take(&off, lin, amxk__workers(ctx), &ovf);
    if (ovf) return AMXK_ERR_SHAPE; /* the workspace would not fit a size_t */
    p->lin_worker = lin;
    p->rows = R;
    p->total = off;
    return AMXK_OK;
}

/* The combine of one token row (out_t of FUSED EXPERTS), every multiply and add rounded separately:
   out[k] = round_out(sy[k] * sg (or sy[k], or nothing) + rscale * (rin[k] (or 0) + sum_j w_j y_j[k])),
   slots j in order (none where pos[j] < 0), w_j = 1 with on_input, else tw[j], y_j = y + pos[j] * K.
   rin, sy, out: the token's row. */
typedef struct amxk__moe_comb {
    const void *rin;     /* NULL: none */
    amxk_dtype rt, ot;
    const int32_t *pos;  /* [topk] compact row of each slot, -1: none */
    const float *tw;     /* [topk] */
    const float *y, *sy; /* y: compact rows [*, K]; sy: shared expert row or NULL */
    size_t topk, K;
    float rscale, sg;    /* sg: the shared gate (1 without one) */
    int on_input, has_sg;
    void *out;
} amxk__moe_comb;

// >>scalar ---------------------------------------------------------------------------------------

/* Columns [k0, k1) of a combine (amxk__moe_comb); the reference the vector kernels repeat lane-wise. */
AMXK__PRIV void amxk__moe_combine__1__scalar(const amxk__moe_comb *c, size_t k0, size_t k1) {
    size_t k, j;
    for (k = k0; k < k1; k++) {
        float acc = c->rin ? amxk__ld_elem(c->rin, c->rt, k) : 0.0f, v;
        for (j = 0; j < c->topk; j++) {
            const int32_t r = c->pos[j];
            if (r >= 0) {
                const float w = c->on_input ? 1.0f : c->tw[j], p = w * c->y[(size_t)r * c->K + k];
                acc += p;
            }
        }
        v = c->rscale * acc;
        if (c->sy) {
            const float sv = c->has_sg ? c->sg * c->sy[k] : c->sy[k];
            v = sv + v;
        }
        if (c->ot == AMXK_DTYPE_F32) ((float *)c->out)[k] = v;
        else amxk__st_elem(c->out, c->ot, k, v);
    }
}

// >>avx2 -----------------------------------------------------------------------------------------

/* This module's vector kernels at width V (w its lanes). Each returns the end of the columns it did
   from n0 / k0 (V8: whole vectors; V16: all); the caller does the rest. amxk__moe_act__<w>__<isa>:
   the activation of one row's columns [n0, n1) as amxk__moe_act_rows computes it, through amxk.h's
   vector math (sigmoid on every v as 1 / (1 + exp(-v)); GELU_ERF within 8 ulp of gate Phi(gate)): a
   few ulp from the scalar formulas, far below the rounding or quantization of the result. GELU_TANH
   as gate sigmoid(2 y) up, y = sqrt(2/pi) (gate + 0.044715 gate^3) (no cancellation for negative y);
   SWIGLU_OAI clamps as the scalar loop (a NaN gate becomes limit, a NaN up stays NaN).
   amxk__moe_combine__<w>__<isa>: amxk__moe_combine__1__scalar lane-wise, its operations in its order. */
#define AMXK__MOE_KERNELS_DEFINE(w, isa, V)                                                                      \
    AMXK__PRIV size_t amxk__moe_act__##w##__##isa(amxk_moe_act act, float alpha, float limit, const float *h, size_t N, int inter, \
                                                  void *out, size_t n0, size_t n1, amxk_dtype t) {               \
        const size_t es = amxk_dtype_size(t);                                                                    \
        size_t n;                                                                                                \
        for (n = n0; n + V##_STEP_MIN <= n1; n += V##_N) {                                                       \
            const V##_MASK_T m = V##_MASK(n1 - n);                                                               \
            V##_T g, u, v;                                                                                       \
            if (inter) amxk__moe_deint__##isa(h + 2 * n, n1 - n, &g, &u);                                        \
            else g = V##_LOADT(h + n, AMXK_DTYPE_F32, m), u = V##_LOADT(h + N + n, AMXK_DTYPE_F32, m);           \
            if (act == AMXK_MOE_ACT_GELU_ERF) {                                                                  \
                v = V##_MUL(amxk__vgelu_erf__##isa(g), u);                                                       \
            } else if (act == AMXK_MOE_ACT_GELU_TANH) {                                                          \
                const V##_T y2 = V##_MUL(g, V##_FMADD(V##_MUL(g, g), V##_SET1(0.0713548162726f), V##_SET1(1.5957691216057308f))); \
                v = V##_MUL(V##_MUL(g, amxk__vsigmoid__##isa(y2)), u);                                           \
            } else if (act == AMXK_MOE_ACT_SWIGLU_OAI) {                                                         \
                const V##_T gc = V##_MIN(g, V##_SET1(limit)), uc = V##_MAX(V##_SET1(-limit), V##_MIN(V##_SET1(limit), u)); \
                v = V##_MUL(V##_MUL(gc, amxk__vsigmoid__##isa(V##_MUL(V##_SET1(alpha), gc))), V##_ADD(uc, V##_SET1(1.0f))); \
            } else {                                                                                             \
                v = V##_MUL(amxk__vsilu__##isa(g), u);                                                           \
            }                                                                                                    \
            V##_STORET((char *)out + n * es, t, v, m);                                                           \
        }                                                                                                        \
        return AMXK__MIN(n, n1);                                                                                 \
    }                                                                                                            \
    AMXK__PRIV size_t amxk__moe_combine__##w##__##isa(const amxk__moe_comb *c, size_t k0, size_t k1) {           \
        const size_t ri = amxk_dtype_size(c->rt), oi = amxk_dtype_size(c->ot);                                   \
        size_t k, j;                                                                                             \
        for (k = k0; k + V##_STEP_MIN <= k1; k += V##_N) {                                                       \
            const V##_MASK_T m = V##_MASK(k1 - k);                                                               \
            V##_T acc = c->rin ? V##_LOADT((const char *)c->rin + k * ri, c->rt, m) : V##_SET1(0.0f), v;         \
            for (j = 0; j < c->topk; j++) {                                                                      \
                const int32_t r = c->pos[j];                                                                     \
                if (r >= 0)                                                                                      \
                    acc = V##_ADD(acc, V##_MUL(V##_SET1(c->on_input ? 1.0f : c->tw[j]),                          \
                                               V##_LOADT(c->y + (size_t)r * c->K + k, AMXK_DTYPE_F32, m)));      \
            }                                                                                                    \
            v = V##_MUL(V##_SET1(c->rscale), acc);                                                               \
            if (c->sy) {                                                                                         \
                const V##_T sv = V##_LOADT(c->sy + k, AMXK_DTYPE_F32, m);                                        \
                v = V##_ADD(c->has_sg ? V##_MUL(V##_SET1(c->sg), sv) : sv, v);                                   \
            }                                                                                                    \
            V##_STORET((char *)c->out + k * oi, c->ot, v, m);                                                    \
        }                                                                                                        \
        return AMXK__MIN(k, k1);                                                                                 \
    }

#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN
/* 8 interleaved gate / up pairs from h (c >= 8 columns left): even lanes gate, odd lanes up. */
AMXK__FORCE_INLINE void amxk__moe_deint__avx2(const float *h, size_t c, __m256 *g, __m256 *u) {
    const __m256 p = _mm256_loadu_ps(h), q = _mm256_loadu_ps(h + 8);
    (void)c;
    *g = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(p, q, _MM_SHUFFLE(2, 0, 2, 0))), 0xd8));
    *u = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(p, q, _MM_SHUFFLE(3, 1, 3, 1))), 0xd8));
}
AMXK__MOE_KERNELS_DEFINE(8, avx2, AMXK__V8)
AMXK__TARGET_END
#endif /* AMXK__HAS_AVX2 */

// >>avx512 ---------------------------------------------------------------------------------------

#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512_BEGIN
/* min(c, 16) interleaved gate / up pairs from h (2 min(c, 16) floats read): even lanes gate, odd up. */
AMXK__FORCE_INLINE void amxk__moe_deint__avx512(const float *h, size_t c, __m512 *g, __m512 *u) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __mmask16 k1 = (__mmask16)(c >= 8 ? 0xffffu : (1u << (2 * c)) - 1u);
    const __mmask16 k2 = (__mmask16)(c <= 8 ? 0u : c >= 16 ? 0xffffu : (1u << (2 * c - 16)) - 1u);
    const __m512 p = _mm512_maskz_loadu_ps(k1, h), q = _mm512_maskz_loadu_ps(k2, h + 16);
    *g = _mm512_permutex2var_ps(p, ev, q), *u = _mm512_permutex2var_ps(p, od, q);
}
AMXK__MOE_KERNELS_DEFINE(16, avx512, AMXK__V16)
AMXK__TARGET_END
#endif /* AMXK__HAS_AVX512 */

// >>amx ------------------------------------------------------------------------------------------
/* (none: the GEMMs are amxk_pack.h's, whose AMX table serves this module too) */

// >>dispatch -------------------------------------------------------------------------------------

/* This module's own kernels of one vector level (the GEMMs are amxk_pack.h's, chosen there). */
typedef struct amxk__moe_kernels {
    /* amxk__moe_act__<w>__<isa>, amxk__moe_combine__<w>__<isa>; NULL: none */
    size_t (*act)(amxk_moe_act act, float alpha, float limit, const float *h, size_t N, int inter, void *out, size_t n0, size_t n1,
                  amxk_dtype t);
    size_t (*combine)(const amxk__moe_comb *c, size_t k0, size_t k1);
} amxk__moe_kernels;

static const amxk__moe_kernels amxk__moe_kernels_scalar = {NULL, NULL};
#if AMXK__HAS_AVX2
static const amxk__moe_kernels amxk__moe_kernels_avx2 = {amxk__moe_act__8__avx2, amxk__moe_combine__8__avx2};
#endif
#if AMXK__HAS_AVX512
static const amxk__moe_kernels amxk__moe_kernels_avx512 = {amxk__moe_act__16__avx512, amxk__moe_combine__16__avx512};
#endif

/* The table of vector level `level` (amxk__vec_level of a context's). */
AMXK__PRIV const amxk__moe_kernels *amxk__moe_kernels_for(amxk_tier level) {
#if AMXK__HAS_AVX512
    if (level >= AMXK_TIER_AVX512) return &amxk__moe_kernels_avx512;
#endif
#if AMXK__HAS_AVX2
    if (level >= AMXK_TIER_AVX2) return &amxk__moe_kernels_avx2;
#endif
    (void)level;
    return &amxk__moe_kernels_scalar;
}

/* ---- fused experts: the two parallel loops -------------------------------------------------------- */

/* Everything the tasks of one amxk_moe_experts call share. */
typedef struct amxk__moe_args {
    amxk_moe_act act;
    float alpha, limit, rscale;
    int on_input, fused; /* fused: the activation runs in the gate+up items (every unit's N % 16 == 0) */
    int q8;              /* act_int8 */
    int xp_up;           /* amxk__moe_xpanel_task builds the gate+up calls' x panels (else the down calls') */
    const amxk_ctx *ctx; /* the call's context (act_int8: the row quantizer's level) */
    const amxk__moe_kernels *kt; /* this module's kernels for the context's vector level */
    size_t m, topk, K, ldx, ldo, routed;
    const void *x;
    amxk_dtype xt, ot;
    const float *tw;
    const int32_t *order, *pos;
    uint16_t *xg;
    int8_t *xq, *sxq;       /* act_int8: int8 x rows of the routed pairs ([routed, K]) and of the */
    float *xs, *sxs;        /* tokens ([M, K], shared expert only, else NULL); their scales */
    amxk__moe_unit *u;
    size_t n_units, items1; /* units (active experts by tile rows, then id; then the shared one); gate+up items */
    size_t ipt1;            /* gate+up items per task (one worker: all) */
    size_t ns2, sw2;        /* down: ns2 slices of sw2 column blocks of K */
    char *lin;              /* GEMM scratch, lin_worker bytes per worker */
    size_t lin_worker;
    const float *y, *sy;    /* routed rows (compact, [routed, K]), shared rows ([M, K]) or NULL */
    const float *sgw;       /* SHARED GATE weights [K] and bias, or NULL; sg: the gate of every token [M] */
    float sgb;
    float *sg;
    const void *rin;        /* ROUTED INPUT or NULL, its dtype and row stride */
    amxk_dtype rt;
    size_t ldr;
    void *out;
} amxk__moe_args;

/* Tasks [0, nt) of fn: on the caller when serial (work too small for a launch), else amxk__parallel. */
AMXK__PRIV void amxk__moe_run(const amxk_ctx *ctx, amxk_task_fn fn, void *a, size_t nt, int serial) {
    size_t i;
    if (!serial) amxk__parallel(ctx, fn, a, nt);
    else for (i = 0; i < nt; i++) fn(a, i, 0);
}

AMXK__INLINE float amxk__moe_sigmoid(float x) { return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x)); }

/* Gathers compact rows [i0, i1) (x rows of their tokens, scaled by the weight on input). */
AMXK__PRIV void amxk__moe_gather_rows(const amxk__moe_args *a, size_t i0, size_t i1) {
    size_t i, k;
    for (i = i0; i < i1; i++) {
        size_t p = (size_t)a->order[i], t = p / a->topk;
        const uint16_t *src = (const uint16_t *)a->x + t * a->ldx;
        uint16_t *dst = a->xg + i * a->K;
        if (a->on_input) {
            float wt = a->tw[p];
            for (k = 0; k < a->K; k++) amxk__st_elem(dst, a->xt, k, wt * amxk__ld_elem(src, a->xt, k));
        } else {
            memcpy(dst, src, a->K * 2);
        }
    }
}

AMXK__PRIV void amxk__moe_gather_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    size_t i0 = task * AMXK__MOE_ROWS_PER_TASK;
    (void)worker;
    amxk__moe_gather_rows(a, i0, AMXK__MIN(a->routed, i0 + AMXK__MOE_ROWS_PER_TASK));
}

/* act_int8: the int8 input rows of tokens [16 task, + 16) (replaces the gather): with a shared expert
   x_t's own row; every routed pair's compact row: apply-on-input: the scaled 16-bit row (gathered as
   in w*a16) quantized; else x_t quantized once per token and copied to its other rows. */
AMXK__PRIV void amxk__moe_quant_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    size_t t, j, K = a->K, t1 = AMXK__MIN(a->m, (task + 1) * AMXK__MOE_QUANT_TOKENS);
    (void)worker;
    for (t = task * AMXK__MOE_QUANT_TOKENS; t < t1; t++) {
        const uint16_t *src = (const uint16_t *)a->x + t * a->ldx;
        const int8_t *q0 = NULL;
        float s0 = 0.0f;
        if (a->sxq) {
            amxk__linop_quant_row(a->ctx, src, a->xt, K, a->sxq + t * K, a->sxs + t);
            q0 = a->sxq + t * K, s0 = a->sxs[t];
        }
        for (j = 0; j < a->topk; j++) {
            int32_t r = a->pos[t * a->topk + j];
            int8_t *dq;
            if (r < 0) continue;
            dq = a->xq + (size_t)r * K;
            if (a->on_input) {
                amxk__moe_gather_rows(a, (size_t)r, (size_t)r + 1);
                amxk__linop_quant_row(a->ctx, a->xg + (size_t)r * K, a->xt, K, dq, a->xs + r);
            } else if (q0) {
                memcpy(dq, q0, K);
                a->xs[r] = s0;
            } else {
                amxk__linop_quant_row(a->ctx, src, a->xt, K, dq, a->xs + r);
                q0 = dq, s0 = a->xs[r];
            }
        }
    }
}

/* SHARED GATE of tokens [AMXK__MOE_ROWS_PER_TASK * task, + AMXK__MOE_ROWS_PER_TASK). */
AMXK__PRIV void amxk__moe_sgate_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    size_t t, k, t0 = task * AMXK__MOE_ROWS_PER_TASK, t1 = AMXK__MIN(a->m, t0 + AMXK__MOE_ROWS_PER_TASK);
    (void)worker;
    for (t = t0; t < t1; t++) {
        float acc = 0.0f;
        for (k = 0; k < a->K; k++) acc += amxk__ld_elem(a->x, a->xt, t * a->ldx + k) * a->sgw[k];
        a->sg[t] = amxk__moe_sigmoid(acc + a->sgb);
    }
}

/* Activation of rows [i0, i1), intermediate columns [n0, n1) of unit u: act[i][n] from h[i] (x's
   dtype, or f32 with act_int8). */
AMXK__PRIV void amxk__moe_act_rows(const amxk__moe_args *a, const amxk__moe_unit *u, size_t i0, size_t i1, size_t n0, size_t n1) {
    size_t i, n, N = u->N, es = a->q8 ? 4 : 2;
    for (i = i0; i < i1; i++) {
        const float *h = u->h + i * 2 * N;
        char *out = (char *)u->act + i * N * es;
        n = n0;
        if (a->kt->act) n = a->kt->act(a->act, a->alpha, a->limit, h, N, u->interleaved, out, n0, n1, a->q8 ? AMXK_DTYPE_F32 : a->xt);
        for (; n < n1; n++) {
            float g = u->interleaved ? h[2 * n] : h[n], up = u->interleaved ? h[2 * n + 1] : h[N + n], v;
            switch (a->act) {
            case AMXK_MOE_ACT_GELU_TANH:
                v = 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * up;
                break;
            case AMXK_MOE_ACT_GELU_ERF: v = 0.5f * g * (1.0f + erff(0.70710678118654752f * g)) * up; break;
            case AMXK_MOE_ACT_SWIGLU_OAI:
                g = g < a->limit ? g : a->limit;
                up = up < -a->limit ? -a->limit : up > a->limit ? a->limit : up;
                v = g * amxk__moe_sigmoid(a->alpha * g) * (up + 1.0f);
                break;
            default: v = g * amxk__moe_sigmoid(g) * up; break;
            }
            amxk__st_elem(out, a->q8 ? AMXK_DTYPE_F32 : a->xt, n, v);
        }
    }
}

/* Activation pass over 64-row tasks (units in order): the activation when not fused into the gate+up
   items, then (act_int8) the per-row int8 quantization of the f32 activation rows. */
AMXK__PRIV void amxk__moe_act_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    size_t i, r;
    (void)worker;
    for (i = 0; i < a->n_units; i++) {
        const amxk__moe_unit *u = &a->u[i];
        size_t nt = AMXK__CEIL_DIV(u->rows, (size_t)AMXK__MOE_ROWS_PER_TASK);
        if (task < nt) {
            size_t r0 = task * AMXK__MOE_ROWS_PER_TASK, r1 = AMXK__MIN(u->rows, r0 + AMXK__MOE_ROWS_PER_TASK);
            if (!a->fused) amxk__moe_act_rows(a, u, r0, r1, 0, u->N);
            if (a->q8)
                for (r = r0; r < r1; r++)
                    amxk__linop_quant_row(a->ctx, (const float *)u->act + r * u->N, AMXK_DTYPE_F32, u->N, u->aq + r * u->N, u->as + r);
            return;
        }
        task -= nt;
    }
}

/* Places unit u's x panels (the plan's xp_bytes: the down call's and, act_int8, the gate+up call's) at
   base + off; returns the next free offset. */
AMXK__PRIV size_t amxk__moe_xpanel_at(const amxk__moe_args *a, amxk__moe_unit *u, char *base, size_t off) {
    size_t bytes = amxk__linop_xpanel_bytes(&u->g2);
    if (bytes) amxk__linop_xpanel_set(&u->g2, base + off), off += bytes;
    if (a->q8 && (bytes = amxk__linop_xpanel_bytes(&u->g1)) != 0) amxk__linop_xpanel_set(&u->g1, base + off), off += bytes;
    return off;
}

/* The gate+up (a->xp_up) or down calls' x panels: task = one row chunk of a unit with panels (units
   in order), after the call's x rows are written. */
AMXK__PRIV void amxk__moe_xpanel_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    size_t i;
    (void)worker;
    for (i = 0; i < a->n_units; i++) {
        const amxk__moe_unit *u = &a->u[i];
        const amxk__linop_call *c = a->xp_up ? &u->g1 : &u->g2;
        const size_t chunk = a->xp_up ? u->c1 : u->c2, nt = amxk__linop_xpanel_bytes(c) ? AMXK__CEIL_DIV(u->rows, chunk) : 0;
        if (task < nt) {
            amxk__linop_xpanel_build(c, task * chunk, AMXK__MIN(u->rows, (task + 1) * chunk));
            return;
        }
        task -= nt;
    }
}

/* Builds the gate+up (up = 1) or down calls' x panels of every unit, each row chunk once (not once
   per item or down task): in parallel, or on the caller when they are small. */
AMXK__PRIV void amxk__moe_xpanels(const amxk_ctx *ctx, amxk__moe_args *a, int up) {
    size_t i, nt = 0, elems = 0;
    a->xp_up = up;
    for (i = 0; i < a->n_units; i++) {
        const amxk__moe_unit *u = &a->u[i];
        if (amxk__linop_xpanel_bytes(up ? &u->g1 : &u->g2))
            nt += AMXK__CEIL_DIV(u->rows, up ? u->c1 : u->c2), elems += u->rows * (up ? a->K : u->N);
    }
    amxk__moe_run(ctx, amxk__moe_xpanel_task, a, nt, elems <= AMXK__MOE_SERIAL_GATHER);
}

/* GEMM down (0: gate+up, 1: down) of unit u, rows [m0, m1) (inside one row chunk) x column blocks
   [b0, b1): the unit's operator call, in the task's tile session ts. */
AMXK__PRIV void amxk__moe_unit_gemm(const amxk__moe_unit *u, int down, size_t m0, size_t m1, size_t b0, size_t b1, char *ws,
                                    amxk__tiles *ts) {
    if (b0 >= b1) return;
    amxk__linop_run(down ? &u->g2 : &u->g1, m0, m1, b0, b1, ws, ts);
}

/* Gate+up item `item`: one row chunk x one slice of one unit; fused: the matching gate and up blocks,
   then the activation of that slice. */
AMXK__PRIV void amxk__moe_up_item(const amxk__moe_args *a, size_t item, char *ws, amxk__tiles *ts) {
    const amxk__moe_unit *u;
    size_t lo = 0, hi = a->n_units, li, m0, m1, s0, s1, nb;
    while (hi - lo > 1) { /* the unit whose items contain item */
        size_t mid = (lo + hi) / 2;
        if (a->u[mid].item0 <= item) lo = mid;
        else hi = mid;
    }
    u = &a->u[lo];
    li = item - u->item0;
    m0 = (li / u->ns1) * u->c1, m1 = AMXK__MIN(u->rows, m0 + u->c1);
    s0 = (li % u->ns1) * u->sw1;
    if (!a->fused) {
        nb = AMXK__CEIL_DIV(2 * u->N, (size_t)AMXK__LINOP_NB);
        amxk__moe_unit_gemm(u, 0, m0, m1, s0, AMXK__MIN(nb, s0 + u->sw1), ws, ts);
        return;
    }
    nb = u->N / AMXK__LINOP_NB, s1 = AMXK__MIN(nb, s0 + u->sw1); /* slice units: 16 intermediate columns */
    if (u->interleaved) {
        amxk__moe_unit_gemm(u, 0, m0, m1, 2 * s0, 2 * s1, ws, ts);
    } else { /* one session: the up call reuses the gate call's tile configuration and x panel */
        amxk__moe_unit_gemm(u, 0, m0, m1, s0, s1, ws, ts);
        amxk__moe_unit_gemm(u, 0, m0, m1, nb + s0, nb + s1, ws, ts);
    }
    amxk__moe_act_rows(a, u, m0, m1, s0 * AMXK__LINOP_NB, s1 * AMXK__LINOP_NB);
}

/* Gate+up task: items [task * ipt1, + ipt1) in order, in one tile session. */
AMXK__PRIV void amxk__moe_up_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    char *ws = a->lin + (size_t)worker * a->lin_worker;
    size_t i, i1 = AMXK__MIN(a->items1, (task + 1) * a->ipt1);
    amxk__tiles ts;
    amxk__linop_begin(&ts);
    for (i = task * a->ipt1; i < i1; i++) amxk__moe_up_item(a, i, ws, &ts);
    amxk__linop_end(&ts);
}

/* Down item: columns blocks [b0, b1) of K for every unit and row (one tile session: the units are in
   tile-row order, so units of one tile configuration follow each other), then the weighted top-k sum
   of those columns for every token into out. */
AMXK__PRIV void amxk__moe_down_task(void *task_ctx, size_t task, int worker) {
    const amxk__moe_args *a = (const amxk__moe_args *)task_ctx;
    char *ws = a->lin + (size_t)worker * a->lin_worker;
    size_t b0 = task * a->sw2, b1 = AMXK__MIN(AMXK__CEIL_DIV(a->K, (size_t)AMXK__LINOP_NB), b0 + a->sw2), i, m0, t, k0, k1;
    amxk__tiles ts;
    amxk__linop_begin(&ts);
    for (i = 0; i < a->n_units; i++) {
        const amxk__moe_unit *u = &a->u[i];
        for (m0 = 0; m0 < u->rows; m0 += u->c2) amxk__moe_unit_gemm(u, 1, m0, AMXK__MIN(u->rows, m0 + u->c2), b0, b1, ws, &ts);
    }
    amxk__linop_end(&ts);
    k0 = b0 * AMXK__LINOP_NB, k1 = AMXK__MIN(a->K, b1 * AMXK__LINOP_NB);
    for (t = 0; t < a->m; t++) {
        amxk__moe_comb c;
        size_t kd = k0;
        c.rin = a->rin ? (const char *)a->rin + t * a->ldr * amxk_dtype_size(a->rt) : NULL, c.rt = a->rt, c.ot = a->ot;
        c.pos = a->topk ? a->pos + t * a->topk : NULL, c.tw = a->tw && a->topk ? a->tw + t * a->topk : NULL, c.y = a->y, c.sy = a->sy ? a->sy + t * a->K : NULL;
        c.topk = a->topk, c.K = a->K, c.rscale = a->rscale, c.sg = a->sg ? a->sg[t] : 1.0f;
        c.on_input = a->on_input, c.has_sg = a->sg != NULL;
        c.out = (char *)a->out + t * a->ldo * amxk_dtype_size(a->ot);
        if (a->kt->combine) kd = a->kt->combine(&c, k0, k1);
        amxk__moe_combine__1__scalar(&c, kd, k1);
    }
}

/* Sets up unit u: its two operator calls (packs valid, arguments checked); b: its inputs (x rows,
   or with act_int8 their int8 form) and workspace rows. */
AMXK__PRIV void amxk__moe_unit_init(const amxk_ctx *ctx, const amxk__moe_args *a, amxk__moe_unit *u, size_t rows, const void *w13,
                                    size_t b13, const void *w2, size_t b2, size_t N, int interleaved, const float *bias13,
                                    const float *bias2, const amxk__moe_bufs *b) {
    amxk__linop o1, o2;
    memset(u, 0, sizeof *u);
    (void)amxk__linop_open(&o1, w13, b13, 2 * N, a->K, AMXK_DTYPE_INVALID, a->q8);
    (void)amxk__linop_open(&o2, w2, b2, a->K, N, AMXK_DTYPE_INVALID, a->q8);
    u->rows = rows, u->N = N, u->interleaved = interleaved, u->h = b->h, u->act = b->act, u->aq = b->aq, u->as = b->as;
    if (a->q8) {
        amxk__linop_bind_q8(ctx, &u->g1, &o1, rows, b->xq, a->K, b->xs, bias13, b->h, 2 * N);
        amxk__linop_bind_q8(ctx, &u->g2, &o2, rows, b->aq, N, b->as, bias2, b->y, a->K);
    } else {
        amxk__linop_bind(ctx, &u->g1, &o1, rows, b->x, a->xt, b->ldx, bias13, b->h, 2 * N);
        amxk__linop_bind(ctx, &u->g2, &o2, rows, b->act, a->xt, N, bias2, b->y, a->K);
    }
    u->c1 = amxk__linop_chunk(&u->g1), u->c2 = amxk__linop_chunk(&u->g2);
}

/* Splits a unit's gate+up columns: ns1 slices per row chunk. Slice units: 16 intermediate columns
   (fused) or 16 rows of w13. Just enough items in all for the workers to share (want slices per
   row chunk; one worker: one slice, no x panel is converted twice). */
AMXK__PRIV size_t amxk__moe_split(amxk__moe_unit *u, int fused, size_t want, size_t item0) {
    size_t nb = fused ? u->N / AMXK__LINOP_NB : AMXK__CEIL_DIV(2 * u->N, (size_t)AMXK__LINOP_NB), ns = AMXK__MIN(AMXK__MAX(want, (size_t)1), nb);
    const size_t ct = fused && u->interleaved ? 1 : amxk__linop_col_tile(&u->g1); /* interleaved: 2 w13 blocks per slice unit */
    u->sw1 = AMXK__ROUND_UP(AMXK__CEIL_DIV(nb, ns), ct); /* whole kernel tiles (AMX: block pairs) */
    u->ns1 = AMXK__CEIL_DIV(nb, u->sw1);
    u->item0 = item0;
    return item0 + u->ns1 * AMXK__CEIL_DIV(u->rows, u->c1);
}

/* amxk_moe_experts' overlap table (see there), checked after every other argument and before the
   first write: inputs are read after the workspace's first bytes are written. Reads no pack byte. */
AMXK__PRIV amxk_status amxk__moe_experts_alias(const amxk_moe_weights *w, const amxk_moe_shared *sh, const amxk_moe_opts *o, const amxk__moe_plan *p, size_t m, const void *x, size_t ldx, const float *tw,
                                               const int32_t *ids, const void *out, amxk_dtype ot, size_t ldo, const void *ws) {
    const size_t K = w->hidden, R = p->rows, NE = R ? w->n_experts : 0, N = R ? w->inter : 0;
    const void *rin = o ? o->routed_in : NULL;
    amxk__rgn outs[2], in[24];
    size_t n = 0, e;
    int ovf = 0;
    amxk_status s;
    outs[0] = amxk__rgn_of(out, amxk__moe_extent(m, ldo, K, amxk_dtype_size(ot), &ovf), 0);
    outs[1] = amxk__rgn_of(ws, p->total, 0);
    in[n++] = amxk__rgn_of(x, amxk__moe_extent(m, ldx, K, 2, &ovf), 1u); /* in place: x is read before out is written */
    if (rin) {
        const amxk_dtype rt = o->routed_dtype;
        in[n++] = amxk__rgn_of(rin, amxk__moe_extent(m, o->ld_routed, K, amxk_dtype_size(rt), &ovf),
                                   rin == out && rt == ot && o->ld_routed == ldo ? 1u : 0u);
    }
    if (ovf) return AMXK_ERR_STRIDE;
    in[n++] = amxk__rgn_of(tw, R * 4, 0);
    in[n++] = amxk__rgn_of(ids, R * 4, 0);
    if (o && R) in[n++] = amxk__rgn_of(o->expert_map, o->n_global_experts * 4, 0);
    in[n++] = amxk__rgn_of(w->w13, NE * sizeof(void *), 0);
    in[n++] = amxk__rgn_of(w->w13_bytes, NE * sizeof(size_t), 0);
    in[n++] = amxk__rgn_of(w->w2, NE * sizeof(void *), 0);
    in[n++] = amxk__rgn_of(w->w2_bytes, NE * sizeof(size_t), 0);
    in[n++] = amxk__rgn_of(w->b13, amxk__sz_mul(amxk__sz_mul(NE, 2 * N, &ovf), 4, &ovf), 0);
    in[n++] = amxk__rgn_of(w->b2, amxk__sz_mul(amxk__sz_mul(NE, K, &ovf), 4, &ovf), 0);
    if (ovf) return AMXK_ERR_SHAPE;
    if (sh) {
        in[n++] = amxk__rgn_of(sh->w13, sh->w13_bytes, 0);
        in[n++] = amxk__rgn_of(sh->w2, sh->w2_bytes, 0);
        in[n++] = amxk__rgn_of(sh->b13, 2 * sh->inter * 4, 0);
        in[n++] = amxk__rgn_of(sh->b2, K * 4, 0);
        in[n++] = amxk__rgn_of(sh->gate, K * 4, 0);
    }
    if ((s = amxk__alias(outs, 2, in, n)) != AMXK_OK) return s;
    for (e = 0; e < 2 * (p->e_end - p->e_begin); e++) { /* every pack of the shard on its own */
        const void *pw;
        size_t pb;
        amxk__moe_w(w, p->e_begin + e / 2, (int)(e % 2), &pw, &pb);
        in[0] = amxk__rgn_of(pw, pb, 0);
        if ((s = amxk__alias(outs, 2, in, 1)) != AMXK_OK) return s;
    }
    return AMXK_OK;
}

// >>api ------------------------------------------------------------------------------------------

AMXK_DEF amxk_status amxk_moe_topk(const amxk_ctx *ctx, const amxk_moe_router *r, size_t m, size_t ne, const float *logits,
                                   size_t ld, size_t topk, float *tw, int32_t *ids) {
    amxk__moe_topk_args a;
    amxk_ctx cc;
    amxk_moe_router rc;
    size_t t, e, G;
    if (ctx) cc = *ctx, ctx = &cc; /* copies: the outputs may overlap the caller's structs */
    if (r) rc = *r, r = &rc;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!r || !logits || !tw || !ids) return AMXK_ERR_NULL;
    if (m == 0 || ne == 0 || topk == 0 || topk > ne || ne > 0x7fffffff || m > ((size_t)1 << 40) / topk) return AMXK_ERR_SHAPE;
    if (ld < ne) return AMXK_ERR_STRIDE;
    if ((r->score != AMXK_MOE_SCORE_SOFTMAX && r->score != AMXK_MOE_SCORE_SIGMOID) || (r->renormalize != 0 && r->renormalize != 1) ||
        (r->group_score_top2 != 0 && r->group_score_top2 != 1) || !amxk__moe_finite(r->routed_scaling_factor) ||
        !amxk__moe_finite(r->softcap) || r->softcap < 0.0f)
        return AMXK_ERR_ARG;
    G = r->num_expert_group;
    if (G >= 2) {
        if (ne % G != 0 || r->topk_group == 0 || r->topk_group > G || topk > r->topk_group * (ne / G)) return AMXK_ERR_ARG;
        if (r->group_score_top2 && ne / G < 2) return AMXK_ERR_ARG;
    }
    { /* the overlap table: the outputs against each other and every input the tasks read */
        amxk__rgn outs[2], in[2];
        amxk_status s;
        int ovf = 0;
        outs[0] = amxk__rgn_of(tw, m * topk * 4, 0), outs[1] = amxk__rgn_of(ids, m * topk * 4, 0);
        in[0] = amxk__rgn_of(logits, amxk__moe_extent(m, ld, ne, 4, &ovf), 0);
        in[1] = amxk__rgn_of(r->correction_bias, ne * 4, 0);
        if (ovf) return AMXK_ERR_STRIDE;
        if ((s = amxk__alias(outs, 2, in, 2)) != AMXK_OK) return s;
    }
    for (t = 0; t < m; t++)
        for (e = 0; e < ne; e++)
            if (!amxk__moe_finite(logits[t * ld + e])) return AMXK_ERR_ARG;
    if (r->correction_bias)
        for (e = 0; e < ne; e++)
            if (!amxk__moe_finite(r->correction_bias[e])) return AMXK_ERR_ARG;
    a.r = r, a.m = m, a.e = ne, a.ld = ld, a.topk = topk, a.groups = G >= 2 ? G : 1, a.gsize = G >= 2 ? ne / G : ne;
    a.topk_group = G >= 2 ? r->topk_group : 1, a.logits = logits, a.w = tw, a.ids = ids;
    amxk__parallel(ctx, amxk__moe_topk_task, &a, AMXK__CEIL_DIV(m, (size_t)AMXK__MOE_TOPK_TOKENS));
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_moe_align_size(size_t m, size_t topk, size_t ne, size_t bm, size_t *max_blocks) {
    if (!max_blocks) return AMXK_ERR_NULL;
    if (m == 0 || topk == 0 || ne == 0 || bm == 0 || m > ((size_t)1 << 31) / topk) return AMXK_ERR_SHAPE;
    *max_blocks = m * topk / bm + AMXK__MIN(ne, m * topk);
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_moe_align(const amxk_ctx *ctx, size_t m, size_t topk, const int32_t *ids, size_t ne, size_t e_begin,
                                    size_t e_end, size_t bm, int32_t *sorted, int32_t *bexp, int32_t *brow, size_t max_blocks,
                                    size_t *n_blocks) {
    size_t R, p, e, b, need = 0, pad;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!ids || !sorted || !bexp || !brow || !n_blocks) return AMXK_ERR_NULL;
    if (m == 0 || topk == 0 || ne == 0 || bm == 0 || ne > 0x7fffffff || m > ((size_t)1 << 30) / topk || bm > ((size_t)1 << 30))
        return AMXK_ERR_SHAPE;
    if (e_begin == 0 && e_end == 0) e_end = ne;
    if (e_begin >= e_end || e_end > ne) return AMXK_ERR_ARG;
    R = m * topk;
    for (p = 0; p < R; p++)
        if (ids[p] < -1 || ids[p] >= (int32_t)ne) return AMXK_ERR_ARG;
    /* blocks needed: ceil(count / bm) per expert (one pass over the ids per shard expert: no scratch) */
    for (e = e_begin; e < e_end; e++) {
        size_t c = 0;
        for (p = 0; p < R; p++) c += ids[p] == (int32_t)e;
        need += AMXK__CEIL_DIV(c, bm);
    }
    if (max_blocks < need) return AMXK_ERR_WORKSPACE;
    { /* the overlap table: the elements this call writes (need blocks; need <= R <= 2^30 and
         bm <= 2^30: the extents fit) against each other and the ids, read while they are written */
        amxk__rgn outs[4], in[1];
        amxk_status s;
        outs[0] = amxk__rgn_of(sorted, need * bm * 4, 0), outs[1] = amxk__rgn_of(bexp, need * 4, 0);
        outs[2] = amxk__rgn_of(brow, (need + 1) * 4, 0), outs[3] = amxk__rgn_of(n_blocks, sizeof *n_blocks, 0);
        in[0] = amxk__rgn_of(ids, R * 4, 0);
        if ((s = amxk__alias(outs, 4, in, 1)) != AMXK_OK) return s;
    }
    b = 0, pad = 0;
    for (e = e_begin; e < e_end; e++) {
        size_t r = 0;
        for (p = 0; p < R; p++) {
            if (ids[p] != (int32_t)e) continue;
            if (r == 0) bexp[b] = (int32_t)e, brow[b] = (int32_t)pad;
            sorted[b * bm + r] = (int32_t)p;
            pad++;
            if (++r == bm) r = 0, b++;
        }
        if (r) {
            for (; r < bm; r++) sorted[b * bm + r] = (int32_t)R;
            b++;
        }
    }
    brow[b] = (int32_t)pad;
    *n_blocks = b;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_moe_workspace_size(const amxk_ctx *ctx, const amxk_moe_weights *w, const amxk_moe_shared *shared,
                                             const amxk_moe_opts *opts, size_t m, size_t topk, size_t *bytes) {
    amxk__moe_plan p;
    amxk_status s;
    if (!bytes) return AMXK_ERR_NULL;
    if ((s = amxk__moe_layout(ctx, w, shared, opts, m, topk, AMXK_DTYPE_INVALID, NULL, &p)) != AMXK_OK) return s;
    *bytes = p.total;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_moe_experts(const amxk_ctx *ctx, const amxk_moe_weights *w, const amxk_moe_shared *sh,
                                      const amxk_moe_opts *o, size_t m, const void *x, amxk_dtype xt, size_t ldx, size_t topk,
                                      const float *tw, const int32_t *ids, void *out, amxk_dtype ot, size_t ldo, void *ws,
                                      size_t ws_bytes) {
    amxk__moe_plan p;
    amxk__moe_args a;
    amxk_status s;
    size_t K, N, R, NE, e, t, i, gathered, xp = 0;
    char *W = (char *)ws;
    int32_t *cnt, *order, *pos;
    const int32_t *map = o ? o->expert_map : NULL;
    const void *rin = o ? o->routed_in : NULL;
    amxk_dtype rt = o ? o->routed_dtype : AMXK_DTYPE_INVALID;
    amxk_ctx cc;
    amxk_moe_weights wc;
    amxk_moe_shared shc;
    amxk_moe_opts oc;
    if (ctx) cc = *ctx, ctx = &cc;
    if (w) wc = *w, w = &wc;
    if (sh) shc = *sh, sh = &shc;
    if (o) oc = *o, o = &oc;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!w || !x || !out || (topk && (!tw || !ids))) return AMXK_ERR_NULL;
    if (xt != AMXK_DTYPE_BF16 && xt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if (ot != AMXK_DTYPE_F32 && ot != AMXK_DTYPE_BF16 && ot != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if ((s = amxk__moe_layout(ctx, w, sh, o, m, topk, xt, topk ? ids : NULL, &p)) != AMXK_OK) return s;
    K = w->hidden, N = topk ? w->inter : 0, R = p.rows, NE = topk ? w->n_experts : 0;
    if (rin && rt != AMXK_DTYPE_F32 && rt != AMXK_DTYPE_BF16 && rt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if (ldx < K || ldo < K || (rin && o->ld_routed < K)) return AMXK_ERR_STRIDE;
    if (map && topk)
        for (e = 0; e < o->n_global_experts; e++)
            if (map[e] < -1 || map[e] >= (int32_t)w->n_experts) return AMXK_ERR_ARG;
    for (t = 0; t < R; t++)
        if (ids[t] < -1 || ids[t] >= (int32_t)(map ? o->n_global_experts : w->n_experts)) return AMXK_ERR_ARG;
    if (!ws || ws_bytes < p.total) return AMXK_ERR_WORKSPACE;
    if ((uintptr_t)ws % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    if ((s = amxk__moe_experts_alias(w, sh, o, &p, m, x, ldx, tw, ids, out, ot, ldo, ws)) != AMXK_OK) return s;

    /* everything is valid: from here on nothing fails */
    cnt = (int32_t *)(W + p.off_cnt), order = (int32_t *)(W + p.off_order), pos = (int32_t *)(W + p.off_pos);
    memset(&a, 0, sizeof a);
    a.act = o ? o->act : AMXK_MOE_ACT_SILU, a.alpha = o ? o->alpha : 0.0f, a.limit = o ? o->limit : 0.0f;
    a.on_input = o && o->apply_router_weight_on_input, a.ctx = ctx, a.kt = amxk__moe_kernels_for(amxk__vec_level(ctx));
    a.rscale = p.rscale, a.m = m, a.topk = topk, a.K = K, a.ldx = ldx, a.ldo = ldo, a.x = x, a.xt = xt, a.ot = ot;
    a.tw = tw, a.order = order, a.pos = pos, a.xg = (uint16_t *)(W + p.off_xg), a.u = (amxk__moe_unit *)(W + p.off_units);
    a.lin = W + p.off_lin, a.lin_worker = p.lin_worker;
    a.y = (const float *)(W + p.off_y), a.sy = sh ? (const float *)(W + p.off_sy) : NULL, a.out = out;
    a.q8 = p.q8, a.rin = rin, a.rt = rt, a.ldr = rin ? o->ld_routed : 0;
    if (sh && sh->gate) a.sgw = sh->gate, a.sgb = sh->gate_bias, a.sg = (float *)(W + p.off_sg);
    if (a.q8) {
        a.xq = (int8_t *)(W + p.off_xq), a.xs = (float *)(W + p.off_xs);
        if (sh) a.sxq = (int8_t *)(W + p.off_sxq), a.sxs = (float *)(W + p.off_sxs);
    }
    /* group the pairs by expert (stable): counts, offsets, compact order, position of every pair */
    for (e = 0; e <= NE; e++) cnt[e] = 0;
    for (t = 0; t < R; t++) {
        int32_t id = amxk__moe_local(map, ids[t]);
        if (id >= (int32_t)p.e_begin && id < (int32_t)p.e_end) cnt[id + 1]++;
    }
    for (e = 0; e < NE; e++) cnt[e + 1] += cnt[e];
    /* cnt[e] is now the first compact row of expert e; fill with a running cursor kept in pos */
    for (t = 0; t < R; t++) pos[t] = -1;
    for (t = 0; t < R; t++) {
        int32_t id = amxk__moe_local(map, ids[t]);
        if (id >= (int32_t)p.e_begin && id < (int32_t)p.e_end) {
            pos[t] = cnt[id];
            order[cnt[id]] = (int32_t)t;
            cnt[id]++;
        }
    }
    /* cnt[e] now holds the end of expert e = the start of expert e + 1; shift back */
    for (e = NE; e > 0; e--) cnt[e] = cnt[e - 1];
    cnt[0] = 0;
    a.routed = (size_t)cnt[NE];
    /* units: the active experts by tile rows (amxk__linop_tile_rows: a task's tile session loads each
       configuration once), then id; then the shared expert. The order changes no result. */
    a.fused = N % AMXK__LINOP_NB == 0 && (!sh || sh->inter % AMXK__LINOP_NB == 0);
    gathered = 0;
    for (i = 0; i < 16 * (p.e_end - p.e_begin); i++) {
        size_t r0, nr;
        const void *p13, *p2;
        size_t b13, b2;
        amxk__moe_bufs b;
        e = p.e_begin + i % (p.e_end - p.e_begin);
        r0 = (size_t)cnt[e], nr = (size_t)cnt[e + 1] - r0;
        if (nr == 0 || amxk__linop_tile_rows(nr) != i / (p.e_end - p.e_begin) + 1) continue;
        amxk__moe_w(w, e, 0, &p13, &b13);
        amxk__moe_w(w, e, 1, &p2, &b2);
        memset(&b, 0, sizeof b);
        /* a single row without input scaling is read in place, others from the gathered copy */
        if (a.q8) b.xq = a.xq + r0 * K, b.xs = a.xs + r0;
        else if (nr == 1 && !a.on_input) b.x = (const uint16_t *)x + ((size_t)order[r0] / topk) * ldx;
        else b.x = a.xg + r0 * K, gathered += nr;
        b.ldx = K, b.h = (float *)(W + p.off_h) + r0 * 2 * N, b.y = (float *)(W + p.off_y) + r0 * K;
        b.act = W + p.off_a + r0 * N * (a.q8 ? 4 : 2), b.aq = (int8_t *)(W + p.off_aq) + r0 * N, b.as = (float *)(W + p.off_as) + r0;
        amxk__moe_unit_init(ctx, &a, &a.u[a.n_units++], nr, p13, b13, p2, b2, N, w->w13_interleaved, w->b13 ? w->b13 + e * 2 * N : NULL,
                            w->b2 ? w->b2 + e * K : NULL, &b);
        xp = amxk__moe_xpanel_at(&a, &a.u[a.n_units - 1], W + p.off_xp, xp);
    }
    if (sh) {
        amxk__moe_bufs b;
        b.x = x, b.ldx = ldx, b.xq = a.sxq, b.xs = a.sxs, b.h = (float *)(W + p.off_sh), b.y = (float *)(W + p.off_sy);
        b.act = W + p.off_sa, b.aq = (int8_t *)(W + p.off_saq), b.as = (float *)(W + p.off_sas);
        amxk__moe_unit_init(ctx, &a, &a.u[a.n_units++], m, sh->w13, sh->w13_bytes, sh->w2, sh->w2_bytes, sh->inter, sh->w13_interleaved,
                            sh->b13, sh->b2, &b);
        xp = amxk__moe_xpanel_at(&a, &a.u[a.n_units - 1], W + p.off_xp, xp);
    }
    /* work split: enough gate+up items and down slices for every worker to stream its own share */
    {
        size_t workers = (size_t)amxk__workers(ctx), target = workers > 1 ? workers * AMXK__MOE_ITEMS_PER_WORKER : 1;
        size_t chunks = 0, want, nbk = AMXK__CEIL_DIV(K, (size_t)AMXK__LINOP_NB);
        for (i = 0; i < a.n_units; i++) chunks += AMXK__CEIL_DIV(a.u[i].rows, a.u[i].c1);
        want = chunks ? AMXK__CEIL_DIV(target, chunks) : 1;
        for (i = 0; i < a.n_units; i++) a.items1 = amxk__moe_split(&a.u[i], a.fused, want, a.items1);
        a.ipt1 = workers > 1 ? 1 : AMXK__MAX(a.items1, (size_t)1); /* one worker: one task, one tile session */
        size_t ct2 = 1;
        for (i = 0; i < a.n_units; i++) ct2 = AMXK__MAX(ct2, amxk__linop_col_tile(&a.u[i].g2));
        a.ns2 = AMXK__MIN(nbk, target);
        a.sw2 = AMXK__ROUND_UP(AMXK__CEIL_DIV(nbk, a.ns2), ct2); /* whole kernel tiles (AMX: block pairs) */
        a.ns2 = AMXK__CEIL_DIV(nbk, a.sw2);
    }
    /* gather (small: serially, only the rows read from the copy; act_int8: the input quantization
       instead, then its gate+up x panels), gate+up (+ activation), [activation, act_int8: its
       quantization], down x panels, down + sum */
    if (a.q8) {
        amxk__moe_run(ctx, amxk__moe_quant_task, &a, AMXK__CEIL_DIV(m, (size_t)AMXK__MOE_QUANT_TOKENS),
                      (a.routed + (sh ? m : 0)) * K <= AMXK__MOE_SERIAL_GATHER);
        amxk__moe_xpanels(ctx, &a, 1); /* the int8 x rows as the gate+up calls' x panels */
    } else if (gathered) {
        if (a.routed * K <= AMXK__MOE_SERIAL_GATHER) {
            for (e = p.e_begin; e < p.e_end; e++)
                if (cnt[e + 1] - cnt[e] > 1 || (a.on_input && cnt[e + 1] > cnt[e])) amxk__moe_gather_rows(&a, (size_t)cnt[e], (size_t)cnt[e + 1]);
        } else {
            amxk__parallel(ctx, amxk__moe_gather_task, &a, AMXK__CEIL_DIV(a.routed, (size_t)AMXK__MOE_ROWS_PER_TASK));
        }
    }
    if (a.sg) /* SHARED GATE (reads x: before the down loop writes out) */
        amxk__moe_run(ctx, amxk__moe_sgate_task, &a, AMXK__CEIL_DIV(m, (size_t)AMXK__MOE_ROWS_PER_TASK), m * K <= AMXK__MOE_SERIAL_GATHER);
    amxk__parallel(ctx, amxk__moe_up_task, &a, AMXK__CEIL_DIV(a.items1, a.ipt1));
    if (!a.fused || a.q8) {
        size_t nt = 0, elems = 0;
        for (i = 0; i < a.n_units; i++) nt += AMXK__CEIL_DIV(a.u[i].rows, (size_t)AMXK__MOE_ROWS_PER_TASK), elems += a.u[i].rows * a.u[i].N;
        amxk__moe_run(ctx, amxk__moe_act_task, &a, nt, a.q8 && elems <= AMXK__MOE_SERIAL_GATHER);
    }
    amxk__moe_xpanels(ctx, &a, 0); /* the activation as the down calls' x panels */
    /* every read of x is done (the gate+up loop has returned): the down loop writes out */
    amxk__parallel(ctx, amxk__moe_down_task, &a, a.ns2);
    return AMXK_OK;
}

#endif /* AMXK_IMPLEMENTATION */
