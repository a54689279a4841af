/* amxk_gdn.h - v0.1.0 - amxk module: causal conv1d and the gated delta rule (Gated DeltaNet)
   Public domain or MIT, your choice (see amxk.h).

   Include after or without amxk.h (this header includes it). Define AMXK_IMPLEMENTATION in exactly one
   file before including it to emit the implementation (the core's and this module's, once each).
   Conventions (strides in elements, status codes, workspace, threading, ISA levels): see amxk.h.

   WHAT IS HERE (the linear-attention layers of Qwen3-Next / Qwen3.5; one layer: examples/gdn_layer.c)
       amxk_conv1d_pack_size / amxk_conv1d_pack   depthwise conv weight [dim, W] (+ bias) -> packed f32
       amxk_conv1d_prefill / amxk_conv1d_update   causal conv1d over packed variable-length sequences,
                              conv-state pool (update: decode, shift or circular state)
       amxk_gdn_gating        g and beta of the gated delta rule (MATH)
       amxk_gdn_workspace_size / amxk_gdn   the gated delta rule, recurrent or chunked (chunk 64): fp32
                              state pool, optional fused gating and in-kernel q/k l2norm, GVA
       conv and gdn: speculative decoding (num_accepted_tokens; gdn: a slot per token).

   MATH (per sequence and value head hv; key head h = hv / (HV/H); S is Dk x Dv, "K-first")
       conv:    y[t,c] = bias[c] + sum_{j<W} w[c,j] * x[t-(W-1)+j, c]  (history before the sequence from
                the conv state, or zeros); out = silu(y) = y / (1 + exp(-y)) when silu, else y.
       gating:  g = -exp(A_log) * softplus(a + dt_bias), softplus(x) = x if beta_sp*x > threshold else
                log1p(exp(beta_sp*x)) / beta_sp;  beta = 1 / (1 + exp(-b)).
       step:    q^ = scale * q / sqrt(|q|^2 + eps), k^ = k / sqrt(|k|^2 + eps) (or q^ = scale*q, k^ = k
                without l2norm);  S <- exp(g) S;  u = beta (v - S^T k^);  S <- S + k^ u^T;  o = S^T q^.
       chunked: the same recurrence in WY/UT form over chunks of 64 tokens (chunks restart at every
                sequence start): gamma = in-chunk cumsum of g, A[r,s] = beta_r (k^_r.k^_s) exp(gamma_r -
                gamma_s) (s < r), V' solves (I + A) V' = diag(beta) (V - diag(exp(gamma)) K^ S0),
                O = diag(exp(gamma)) Q^ S0 + (Q^ K^T (.) Gamma) V', S1 = exp(gamma_L) S0 +
                K^T diag(exp(gamma_L - gamma)) V'. The decay mask is exponentiated only for s <= r
                (exp(gamma_r - gamma_s) <= 1), never as exp(gamma_r) * exp(-gamma_s): no overflow under
                strong decay (g = -640 per token is fine).

   STATE LAYOUTS
       Recurrent state: fp32 pool; slot s at data + s*slot_stride, value head hv at + hv*Dk*Dv; one head
       is [Dk][Dv] (params.state_v_first = 0, FLA default / HF) or [Dv][Dk] (state_v_first = 1, vLLM GPU,
       SGLang). The flag is explicit and required: nothing is ever guessed from shapes.
       Conv state: element (slot s, channel c, position p) at data[s*slot_stride + c*dim_stride +
       p*tok_stride], p = 0 the oldest of state_len positions. "SD" (vLLM default): dim_stride 1,
       tok_stride dim. "DS": dim_stride state_len, tok_stride 1. Any other non-overlapping strides work.

   SEQUENCES AND SLOTS (amxk_conv1d_prefill / _update, amxk_gdn)
       query_start_loc: n_seqs+1 int32 values, qsl[0] >= 0, non-decreasing: sequence n owns token rows
       [qsl[n], qsl[n+1]). slot_idx: NULL (sequence n uses slot n) or n_seqs int32 in [0, n_slots) or -1;
       slots other than -1 must be distinct. has_initial_state: NULL (all 1) or n_seqs bytes; 0 => the
       sequence starts from zeros (the slot's content is ignored). Else AMXK_ERR_ARG. Per sequence:
         s == -1    (pad) its output rows are written as zeros (vLLM leaves them untouched); no state is
                    read or written.
         len == 0   no output; with has_initial_state[n] == 0 the slot is set to zeros (the state after
                    zero tokens from zeros), else it is left bit for bit unchanged.
         otherwise  the op runs from the slot's state (or zeros) over its tokens; the slot then holds the
                    final state.

   DESIGN AND LEVELS
       Each op has one driver (>>dispatch: tiling, task split, workspace layout) that reaches its
       microkernels through the kernel table of the context's level (amxk__gdn_kernels_for, the only place
       that looks at the level): amxk__gdn_kernels_scalar; _avx2 (avx2); _avx512 (avx512, avx512_vnni);
       _avx512bf16 (avx512_bf16, avx512_fp16 and amx: no AMX kernels here). Kernels with one algorithm at
       8 and 16 lanes are written once over amxk.h's V8 / V16 vocabulary (AMXK__GDN_*_DEFINE,
       AMXK__CONV_ROWS_DEFINE, each with its blocking and numerics; W = 4 conv on AVX-512:
       amxk__conv_rows__Tx32__avx512). The conv's silu differs between 8 and 16 lanes in the last bits;
       within a level prefill, update and edges agree bit for bit. AMXK_GDN_AUTO picks the recurrent form
       on every level (faster without AMX tile matmuls; bench/cmd_gdn.h); the chunked form (WY, over the
       level's fp32 GEMM) agrees with it. Measurements and what was tried: docs/notes/gdn.md.

   THREADING
       conv: tasks = sequences x time blocks (>= max(64, W) tokens, at most 64 blocks per sequence; every
       task does whole contiguous rows; the first block's task also writes the sequence's new state);
       serial loop  for (t = 0; t < n_seqs * n_blocks; t++) conv_task(t, worker 0);
       gdn: units = sequences x groups of vg value heads of one key head: vg = 1 for decode-length calls
       (fewer than 8 tokens per sequence on average), else the largest divisor of HV/H that leaves at
       least 4 units per worker. A task runs upt consecutive units: upt = 1, or for decode-length calls
       max(1, units / (8 * workers)) (a task prefetches its next unit's state, which with one unit per
       task would usually be another worker's); serial loop
           for (u = 0; u < n_seqs * HV / vg; u++) gdn_unit(u, worker 0);
       vg and upt change only which task computes a value, never the value itself. Each output and
       state element is owned by one task with a fixed order of operations, so results are bitwise
       identical for any worker count. The worker index selects the workspace slice.

   ERRORS
       Every argument (slots, query_start_loc monotonicity, strides, shapes, dtypes, workspace, aliasing)
       is validated before anything is written: on error the outputs and every state slot are untouched.
       ALIASING, one rule for every entry point (>>alias): what a call writes (out / o, g / beta, the
       conv and recurrent state pools, the workspace, a packed weight) must overlap neither each other
       nor anything the call reads after its first write (x, q, k, v, the packed weight, the gates and
       their parameters, and the index arrays: query_start_loc n_seqs + 1 int32, slot_idx n_seqs int32
       (SPECULATIVE amxk_gdn: n_seqs * spec_cols), has_initial_state n_seqs bytes, num_accepted_tokens
       and cache_seqlens n_seqs int32), each taken by its exact byte extent (the others' in each
       contract): AMXK_ERR_ALIAS. Inputs may overlap each other. The amxk_gdn_params / amxk_gdn_inputs
       structs are copied at entry (an output may overlap them). A call with no tokens (T = qsl[n_seqs]
       == 0) returns AMXK_OK before the aliasing check and writes nothing.
*/
#ifndef AMXK_GDN_H_INCLUDED
#define AMXK_GDN_H_INCLUDED
#include "amxk.h"
#if AMXK_VERSION_NUMBER != 100
#  error "amxk_gdn.h v0.1.0 needs amxk.h v0.1.0"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- causal conv1d ---------------------------------------------------------------------------- */

/* A conv-state pool (see STATE LAYOUTS above). dtype must equal the x dtype of the call (the state holds
   raw inputs, copied bit for bit). state_len >= W-1 (W-1 without speculative decoding). Strides are in
   elements; slot_stride is ignored when n_slots == 1. */
typedef struct amxk_conv_state {
    void *data;
    amxk_dtype dtype;  /* F32 or BF16, = x dtype */
    size_t n_slots;
    size_t state_len;
    size_t slot_stride, dim_stride, tok_stride;
    /* NULL, or per sequence a_n in [1, state_len - W + 2] (SPECULATIVE in amxk_conv1d_prefill) */
    const int32_t *num_accepted_tokens;
} amxk_conv_state;

/* Bytes (a multiple of 64) of a packed conv weight. Errors: NULL, SHAPE (dim or W 0, W > 64). */
AMXK_DEF amxk_status amxk_conv1d_pack_size(size_t dim, size_t width, size_t *bytes);

/* Packs w[dim, W] (element (c, j) at w[c*ldw + j], ldw >= W; dtype F32, BF16 or F16; j = W-1 multiplies
   the current token) and an optional fp32 bias[dim] (NULL: none) into dst: a 64-byte header, then the
   taps as f32 in tap-major order [W][dim rounded up to 16] and the bias (zeros when none). bf16/f16
   weights are widened exactly. dst AMXK_ALIGN aligned, dst_bytes >= amxk_conv1d_pack_size. Serial.
   Errors: CONTEXT, NULL, SHAPE, STRIDE, DTYPE, ALIGN, WORKSPACE (dst_bytes), ALIAS (checked, see ERRORS:
   dst's first amxk_conv1d_pack_size bytes vs w's (dim-1)*ldw + W elements and bias's dim floats). */
AMXK_DEF amxk_status amxk_conv1d_pack(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const void *w, amxk_dtype w_dtype,
                                      size_t dim, size_t width, size_t ldw, const float *bias);

/* Causal conv1d prefill over n_seqs packed sequences (SEQUENCES AND SLOTS): x row t, channel c at
   x[t*ldx + c], ldx >= dim; x dtype F32 or BF16. out: row t at out[t*ldo + c] (F32 or BF16), only rows
   of the sequences and columns < dim are written. state: NULL (zero history, nothing stored) or a pool.
   A sequence with a slot: out = silu?(conv(history ++ x)), history = the slot's last W-1 positions or
   zeros; then the slot holds the last state_len inputs of (history' ++ x), where history' is the old
   state (or zeros): for len < state_len the old tail shifts in front of x.
   SPECULATIVE (state->num_accepted_tokens given; with num_spec + 1 tokens per sequence vLLM's
   causal_conv1d_update with num_accepted_tokens): the slot holds state_len = W - 1 + num_spec
   positions, the last inputs of the previous step including its drafts, of which a_n were accepted:
   the history is positions [a_n - 1, he), he = a_n - 1 + W - 1 (positions >= he, rejected drafts, are
   never read), and the slot then holds the last state_len inputs of (zeros ++ positions [0, he) ++ x).
   Without it, he = state_len. Not with cache_seqlens (AMXK_ERR_ARG).
   WIDER STATES: without num_accepted_tokens the history is the LAST W-1 of state_len positions (vLLM's
   non-speculative kernels read the FIRST W-1 of a wider buffer and shift it by the number of new
   tokens): for vLLM's reading pass the same buffer with state_len = W - 1; to keep the last W-1 of a
   wider buffer as the only state, point data at position state_len - (W - 1).
   Fp32 accumulation from the bias in tap order j = 0..W-1, silu in fp32, one rounding to out's dtype.
   Bitwise identical to feeding the same tokens through amxk_conv1d_update in any grouping.
   ALIASING (see ERRORS): out (T-1)*ldo + dim and x (T-1)*ldx + dim elements, T = qsl[n_seqs]; the state
   pool (n_slots-1)*slot_stride + (dim-1)*dim_stride + (state_len-1)*tok_stride + 1 elements (none when
   state is NULL or state_len is 0); the packed weight packed_bytes.
   Errors (nothing written): CONTEXT, NULL, SHAPE, STRIDE, DTYPE, FORMAT, ARG (also: a num_accepted_tokens
   entry out of range, or given with cache_seqlens), ALIAS. */
AMXK_DEF amxk_status amxk_conv1d_prefill(const amxk_ctx *ctx, const void *packed, size_t packed_bytes, int silu,
                                         size_t n_seqs, const int32_t *query_start_loc, const int32_t *slot_idx,
                                         const uint8_t *has_initial_state, const void *x, amxk_dtype x_dtype, size_t ldx,
                                         void *out, amxk_dtype out_dtype, size_t ldo, const amxk_conv_state *state);

/* Decode update: like amxk_conv1d_prefill with every sequence having an initial state, plus:
   query_start_loc may be NULL (one token per sequence: sequence n is x row n), and cache_seqlens
   (NULL: shift mode) selects the circular-buffer variant: with c = cache_seqlens[n] >= 0 and
   L = state_len, the W-1 inputs before new token i are state[(c + i - (W-1) + j) mod L], j < W-1, and
   new token i is written to position (c + i) mod L after all outputs of the sequence are computed
   (cache_seqlens itself is not advanced). state is required (AMXK_ERR_NULL). ALIASING as in prefill,
   with T = qsl[n_seqs] (n_seqs without query_start_loc) and cache_seqlens among the inputs. */
AMXK_DEF amxk_status amxk_conv1d_update(const amxk_ctx *ctx, const void *packed, size_t packed_bytes, int silu,
                                        size_t n_seqs, const int32_t *query_start_loc, const int32_t *slot_idx,
                                        const int32_t *cache_seqlens, const void *x, amxk_dtype x_dtype, size_t ldx,
                                        void *out, amxk_dtype out_dtype, size_t ldo, const amxk_conv_state *state);

/* ---- gating ----------------------------------------------------------------------------------- */

/* For t < n_tokens, h < HV: g[t*ldg + h] = -exp(A_log[h]) * softplus(a[t*lda + h] + dt_bias[h]) and
   beta[t*ldbeta + h] = sigmoid(b[t*ldb + h]) (MATH). a, b: ab_dtype F32 or BF16; A_log, dt_bias [HV]
   as in amxk_gdn_inputs, widened exactly; g fp32; beta: beta_dtype F32 or BF16. softplus_beta > 0
   (default 1), threshold (default 20). The values of amxk_gdn's fused gating on the same level.
   g <= 0 and beta in [0, 1] for every finite input; overflow-free. Scalar level: libm; AVX2 / AVX-512:
   one 8- / 16-lane body, the same values (exp clamped to [-87, 87]: a softplus or beta below 1.6e-38
   comes out as about 1.6e-38). Within 4e-6 relative of fp64 for g (+1e-30 absolute), 1e-6 absolute
   for f32 beta (tests/test_gdn.c). Serial. n_tokens == 0 is a no-op. Errors: CONTEXT, NULL, SHAPE
   (hv == 0), STRIDE, DTYPE, ARG (softplus_beta <= 0), ALIAS (rows are read after earlier rows are
   written, so no in-place use: g (n_tokens-1)*ldg + hv floats, beta (n_tokens-1)*ldbeta + hv, a, b
   (n_tokens-1)*ld + hv elements, A_log and dt_bias hv elements). */
AMXK_DEF amxk_status amxk_gdn_gating(const amxk_ctx *ctx, size_t n_tokens, size_t hv, const void *a, size_t lda,
                                     const void *b, size_t ldb, amxk_dtype ab_dtype, const void *A_log, amxk_dtype A_log_dtype,
                                     const void *dt_bias, amxk_dtype dt_bias_dtype, float softplus_beta, float threshold, float *g,
                                     size_t ldg, void *beta, amxk_dtype beta_dtype, size_t ldbeta);

/* ---- gated delta rule ------------------------------------------------------------------------- */

typedef enum amxk_gdn_mode {
    AMXK_GDN_AUTO = 0,      /* the library picks per sequence (currently: recurrent on every tier) */
    AMXK_GDN_RECURRENT = 1, /* token by token (decode; any length) */
    AMXK_GDN_CHUNKED = 2,   /* chunks of 64 in WY/UT form (prefill) */
    AMXK_GDN_MODE_FORCE_I32 = 0x7fffffff
} amxk_gdn_mode;

typedef struct amxk_gdn_params {
    size_t n_k_heads;         /* H (q and k heads) */
    size_t n_v_heads;         /* HV, a multiple of H; value head hv reads key head hv / (HV/H) */
    size_t dk, dv;            /* head dims, 1..256 each (Dk != Dv allowed) */
    float scale;              /* multiplies the (normalised) q; default Dk^-0.5 */
    int l2norm;               /* 1: q and k are l2-normalised in the kernel (default 1) */
    float l2norm_eps;         /* added to the sum of squares (default 1e-6) */
    int state_v_first;        /* 0: state head [Dk][Dv] (default); 1: [Dv][Dk] */
    float softplus_beta;      /* fused gating only (default 1) */
    float softplus_threshold; /* fused gating only (default 20) */
} amxk_gdn_params;

/* The defaults above for the given heads and dims. */
AMXK_DEF amxk_gdn_params amxk_gdn_params_default(size_t n_k_heads, size_t n_v_heads, size_t dk, size_t dv);

/* Per-token inputs. Token t: q head h at q[t*ldq + h*Dk + i] (the heads of a token are contiguous,
   tokens ldq apart: views into a packed qkv buffer work), k alike (ldk), v head hv at v[t*ldv + hv*Dv + j];
   dtype F32 or BF16 for all three. Gates: either g and beta (fp32, [t*ldg + hv], [t*ldbeta + hv]) or,
   when g == NULL, the fused form: a, b (ab_dtype F32 or BF16, [t*lda + hv], [t*ldb + hv]) with A_log[HV]
   and dt_bias[HV] of A_log_dtype / dt_bias_dtype (0 means F32; or BF16: vLLM keeps dt_bias in the model
   dtype, sglang A_log too), read as f32 (amxk_gdn_gating with params' softplus beta and threshold).
   num_accepted_tokens, spec_cols: SPECULATIVE in amxk_gdn's contract; NULL and 0 otherwise. */
typedef struct amxk_gdn_inputs {
    amxk_dtype dtype;
    const void *q, *k, *v;
    size_t ldq, ldk, ldv;
    const float *g, *beta;
    size_t ldg, ldbeta;
    amxk_dtype ab_dtype;
    const void *a, *b;
    size_t lda, ldb;
    const void *A_log, *dt_bias;          /* of A_log_dtype / dt_bias_dtype */
    amxk_dtype A_log_dtype, dt_bias_dtype; /* 0 or F32, or BF16 */
    const int32_t *num_accepted_tokens;   /* NULL, or n_seqs values in [1, spec_cols] */
    size_t spec_cols;                     /* with num_accepted_tokens: slot_idx is [n_seqs][spec_cols] */
} amxk_gdn_inputs;

/* Recurrent-state pool (STATE LAYOUTS): slot_stride >= HV*Dk*Dv floats, ignored when n_slots == 1. */
typedef struct amxk_gdn_state {
    float *data;
    size_t n_slots;
    size_t slot_stride;
} amxk_gdn_state;

/* Workspace bytes of amxk_gdn for this context (level, workers), params and mode (AUTO: the largest of
   the modes), whatever the number of tokens. */
AMXK_DEF amxk_status amxk_gdn_workspace_size(const amxk_ctx *ctx, const amxk_gdn_params *params, amxk_gdn_mode mode,
                                             size_t *bytes);

/* The gated delta rule over n_seqs packed sequences (SEQUENCES AND SLOTS). Output o[t*ldo + hv*Dv + j]
   (o_dtype F32 or BF16, ldo >= HV*Dv).
   ALIASING (see ERRORS): o (T-1)*ldo + HV*Dv elements, T = qsl[n_seqs]; the state pool
   (n_slots-1)*slot_stride + HV*Dk*Dv floats; the workspace its amxk_gdn_workspace_size bytes; q, k
   (T-1)*ld + H*Dk elements, v (T-1)*ldv + HV*Dv; the gates the call reads (g, beta (T-1)*ld + HV floats;
   or fused: a, b (T-1)*ld + HV elements, A_log, dt_bias HV elements; the other pair is not checked).
   Decode is a call with one token per sequence; speculative verification, several. A prefill split
   into several calls (the state carried in the slot) equals one call up to rounding.
   SPECULATIVE (in->num_accepted_tokens given; vLLM's spec-decode recurrent GDN with 2-D
   ssm_state_indices): slot_idx (required) is [n_seqs][spec_cols], row r_n; a_n = the number of tokens
   of the previous step that were accepted, len_n <= spec_cols. The sequence starts from slot
   r_n[a_n - 1] (or zeros with has_initial_state 0); the state after its token t goes to slot r_n[t],
   t < len_n (every intermediate state is kept for the next step). r_n[a_n - 1] == -1: a pad (zero
   output rows, no state read or written); else r_n[t], t < len_n, must be valid slots, distinct over
   the call, and no sequence may start from a slot another one writes (AMXK_ERR_ARG). len_n == 0:
   nothing happens. A token costs one extra state copy (a head at a time) unless r_n[t] is its source.
   workspace: >= amxk_gdn_workspace_size(ctx, params, mode) bytes, AMXK_ALIGN aligned.
   Accuracy (tests/test_gdn.c, fp64 reference on the same inputs): state max error <= 1e-4 * max|S|
   over 1000 tokens; outputs within 1e-2*|ref| + 1e-3*rms(ref) (bf16 output rounding included).
   Errors (nothing written, state untouched): CONTEXT, NULL, SHAPE (dims out of range, HV % H != 0),
   STRIDE, DTYPE, ARG (mode, slots, query_start_loc, eps < 0, softplus_beta <= 0, num_accepted_tokens,
   spec_cols 0 or > 2^20 with it), WORKSPACE, ALIGN, ALIAS. */
AMXK_DEF amxk_status amxk_gdn(const amxk_ctx *ctx, const amxk_gdn_params *params, amxk_gdn_mode mode,
                              const amxk_gdn_inputs *in, size_t n_seqs, const int32_t *query_start_loc,
                              const int32_t *slot_idx, const uint8_t *has_initial_state, const amxk_gdn_state *state,
                              void *o, amxk_dtype o_dtype, size_t ldo, void *workspace, size_t workspace_bytes);

#ifdef __cplusplus
}
#endif
#endif /* AMXK_GDN_H_INCLUDED */

#if defined(AMXK_IMPLEMENTATION) && !defined(AMXK_GDN_C_INCLUDED)
#define AMXK_GDN_C_INCLUDED
#include "amxk.h" /* the core implementation, if this file has not emitted it yet (the module's
                      declarations may have been included before AMXK_IMPLEMENTATION was defined) */
#include <math.h>

// >>config ---------------------------------------------------------------------------------------

#define AMXK__CONV_TB 64      /* conv: tokens per task (at least) */
#define AMXK__CONV_MAXTB 64   /* conv: at most this many tasks per sequence */
#define AMXK__CONV_MAXW 64    /* largest conv width */
#define AMXK__CONV_WSC 1280   /* conv: floats of split-order taps per channel block (W = 4: 256 channels) */
#define AMXK__CONV_SLAB 8     /* conv W = 4 (AVX-512): tokens per left-to-right sweep */
#define AMXK__CONV_NT_BYTES ((size_t)8 << 20) /* conv: outputs from this size on use streaming stores */
#define AMXK__CONV_STAGE 8192 /* conv W = 4 (AVX-512), streamed bf16 outputs: bytes of the L1 stage (slab rows x 512 channels) */
#define AMXK__CONV_VERSION 1u
#define AMXK__GDN_C 64        /* chunk length */
#define AMXK__GDN_CB 32       /* recurrent: value columns per task */
#define AMXK__GDN_MAXD 256    /* largest head dim */
#define AMXK__GDN_VPF 4       /* recurrent: v rows prefetched this many tokens ahead */

typedef struct amxk__conv_hdr {
    char magic[8]; /* "AMXKCONV" */
    uint32_t version, has_bias;
    uint64_t dim, width;
    uint8_t reserved[32];
} amxk__conv_hdr;

// >>util -----------------------------------------------------------------------------------------

AMXK__INLINE size_t amxk__conv_dimp(size_t dim) { return AMXK__ROUND_UP(dim, (size_t)16); }

AMXK__INLINE float amxk__gdn_softplus(float x, float bsp, float thr) {
    float z = bsp * x;
    if (z > thr) return x;
    /* log1p(exp(z)) without overflow: z <= thr; for z > 0 use z + log1p(exp(-z)) */
    return (z > 0.0f ? z + log1pf(expf(-z)) : log1pf(expf(z))) / bsp;
}
AMXK__INLINE float amxk__gdn_sigmoid(float x) {
    return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

typedef struct amxk__gdn_kernels amxk__gdn_kernels; /* a level's microkernels (see >>dispatch) */

/* Conv call description shared by all tasks. */
typedef struct amxk__conv_args {
    const amxk__gdn_kernels *k; /* the call's level's kernels */
    const float *w, *bias; /* w[j*dimp + c] */
    size_t dim, dimp, width;
    int silu;
    size_t n_seqs;
    const int32_t *qsl, *slot, *cache_seqlens, *acc; /* acc: num_accepted_tokens or NULL */
    const uint8_t *has_init;
    const void *x;
    amxk_dtype xt, ot;
    size_t ldx, ldo;
    void *out;
    char *st; /* state pool base (bytes) or NULL */
    size_t esz, n_slots, slen, s_slot, s_dim, s_tok;
    size_t tb, n_tb; /* tokens per task, time blocks per sequence (max over sequences) */
    int nts;         /* streaming stores for the output (large, 32-byte aligned rows) */
} amxk__conv_args;

/* One sequence of a conv task: rows [t0, t0 + len) of x and out; its state slot's base (NULL: no state
   pool), whether it has an initial state, the circular-buffer start (-1: shift mode) and, in shift mode,
   the history end he (state_len, or a - 1 + W - 1 with num_accepted_tokens a: SPECULATIVE). Taken by
   value: through a pointer, every output store could alias it and force reloads. */
typedef struct amxk__conv_sq {
    size_t t0, len;
    char *sb;
    int init;
    long cs, he;
} amxk__conv_sq;

AMXK__INLINE void amxk__conv_seq(const amxk__conv_args *a, size_t n, size_t *t0, size_t *len) {
    if (a->qsl) *t0 = (size_t)a->qsl[n], *len = (size_t)(a->qsl[n + 1] - a->qsl[n]);
    else *t0 = n, *len = 1;
}
AMXK__INLINE int32_t amxk__conv_slot(const amxk__conv_args *a, size_t n) { return a->slot ? a->slot[n] : (int32_t)n; }

/* The state position of history position p < 0: shift mode he + p; circular (cs + p) mod L. */
AMXK__INLINE size_t amxk__conv_hpos(const amxk__conv_args *a, amxk__conv_sq q, long p) {
    long L = (long)a->slen, r;
    if (q.cs < 0) return (size_t)(q.he + p);
    r = (q.cs + p) % L;
    return (size_t)(r < 0 ? r + L : r);
}
/* History position p < 0 of channel c as f32: zeros without state, without initial state. */
AMXK__INLINE float amxk__conv_hist(const amxk__conv_args *a, amxk__conv_sq q, long p, size_t c) {
    if (!q.sb || !q.init) return 0.0f;
    return amxk__ld_elem(q.sb, a->xt, c * a->s_dim + amxk__conv_hpos(a, q, p) * a->s_tok);
}

/* The state write after a sequence's outputs, channels [c0, c1): raw element copies. Shift mode: new
   position i takes input p = len - L + i (relative to the sequence start); for p < 0 the old position
   he + p, or zero without initial state (or when he + p < 0: a short speculative step). Old positions
   move by d = he + len - L: positions are written in increasing order when d >= 0 (sources ahead),
   else in decreasing order, so no source is overwritten before it is read. */
AMXK__PRIV void amxk__conv_store_state(const amxk__conv_args *a, amxk__conv_sq q, size_t c0, size_t c1) {
    size_t c, i, L = a->slen, es = a->esz, len = q.len, t0 = q.t0;
    const long d = q.he + (long)len - (long)L;
    /* a channel-contiguous (SD) state moves channels [c0, c1) as one group of whole rows, else each
       channel alone (its positions contiguous in the DS layout); the same values either way */
    const size_t cg = a->s_dim == 1 ? c1 - c0 : 1, nbytes = cg * es;
    char *sb = q.sb;
    const char *x = (const char *)a->x;
    if (!sb || L == 0) return;
    for (c = c0; c < c1; c += cg)
        for (i = 0; i < (q.cs >= 0 ? len : L); i++) {
            if (q.cs >= 0) { /* circular: the new tokens at (cs + i) mod L */
                const size_t pos = (size_t)(((size_t)q.cs + i) % L);
                memcpy(sb + (c * a->s_dim + pos * a->s_tok) * es, x + ((t0 + i) * a->ldx + c) * es, nbytes);
            } else {
                const size_t pos = d >= 0 ? i : L - 1 - i;
                const long p = (long)len - (long)L + (long)pos;
                char *dst = sb + (c * a->s_dim + pos * a->s_tok) * es;
                if (p >= 0) memcpy(dst, x + ((t0 + (size_t)p) * a->ldx + c) * es, nbytes);
                else if (q.init && q.he + p >= 0) memmove(dst, sb + (c * a->s_dim + (size_t)(q.he + p) * a->s_tok) * es, nbytes);
                else memset(dst, 0, nbytes);
            }
        }
}

/* GDN call description. */
typedef struct amxk__gdn_args {
    const amxk_gdn_params *p;
    const amxk_gdn_inputs *in;
    size_t G, dk, dv, hv;
    size_t n_seqs;
    const int32_t *qsl, *slot;
    const uint8_t *has_init;
    const int32_t *acc; /* SPECULATIVE: num_accepted_tokens (slot is then [n_seqs][spec_cols]) or NULL */
    size_t spec_cols;
    float *st;
    size_t s_slot, hsz;
    void *o;
    amxk_dtype ot;
    size_t ldo;
    char *ws;
    size_t ws_worker, n_cb;
    size_t vg;  /* value heads per unit (a divisor of G; see THREADING) */
    size_t upt; /* units per task */
    amxk_gdn_mode mode;
    const amxk__gdn_kernels *k; /* the call's level's kernels */
} amxk__gdn_args;

/* amxk_gdn_gating's arguments (see there); a kernel computes rows [t0, t1). */
typedef struct amxk__gating_args {
    size_t hv;
    const void *a, *b;
    size_t lda, ldb;
    amxk_dtype abt, bt, alt, dtt; /* alt, dtt: A_log, dt_bias dtypes (F32 or BF16) */
    const void *A_log, *dt_bias;
    float bsp, thr;
    float *g;
    void *beta;
    size_t ldg, ldbeta;
} amxk__gating_args;

/* The dtype of A_log / dt_bias (0 means F32); whether a dtype is F32 or BF16. */
AMXK__INLINE amxk_dtype amxk__gdn_pdt(amxk_dtype t) { return t == AMXK_DTYPE_INVALID ? AMXK_DTYPE_F32 : t; }
AMXK__INLINE int amxk__gdn_fb(amxk_dtype t) { return t == AMXK_DTYPE_F32 || t == AMXK_DTYPE_BF16; }

/* Workspace plan: bytes per worker and in all, and the call's kernels (they shape the layout). */
typedef struct amxk__gdn_plan {
    size_t ws_worker, ws_total, n_cb;
    const amxk__gdn_kernels *k;
} amxk__gdn_plan;

/* Recurrent prefill: the raw q/k rows of the next chunk, prefetched a few lines per token sweep over the
   current chunk (the hardware prefetchers miss rows this far apart). Item x: row x / nl (k and q of
   token row / 2 alternately), line x % nl. */
typedef struct amxk__gdn_qkpf {
    const char *base[2]; /* k, q row of the next chunk's first token at key head h */
    size_t ld[2];        /* bytes between tokens */
    size_t rowb, nl;     /* bytes per row, lines per row (rowb / 64 + 1: rows need not be aligned) */
    size_t items, per;   /* nl * 2 * tokens; items per token sweep */
    size_t start;        /* first item of the current block call */
} amxk__gdn_qkpf;

/* A level's microkernels (DESIGN AND LEVELS; the tables are in >>dispatch, the op's arguments carry the
   call's). Block sizes and scratch needs that depend on the kernels are fields the layouts read. */
typedef void (*amxk__conv_rows_fn)(const amxk__conv_args *a, amxk__conv_sq q, size_t td, size_t tb1, size_t nch);
typedef void (*amxk__conv_edge_fn)(const amxk__conv_args *a, amxk__conv_sq q, size_t t, size_t c0, size_t c1);
typedef void (*amxk__gating_fn)(const amxk__gating_args *ga, size_t t0, size_t t1);
typedef void (*amxk__gdn_qk_fn)(const amxk__gdn_args *a, size_t t, size_t h, int which, float *dst);
typedef void (*amxk__gdn_gemm_fn)(int acc, size_t m, size_t n, size_t k, const float *A, size_t lda, const float *B, size_t ldb,
                                  float *C, size_t ldc);
typedef void (*amxk__gdn_copy_fn)(float *dst, size_t ldd, const float *src, size_t lds, size_t rows, size_t nb);
typedef void (*amxk__gdn_prep_fn)(const float *kh, const float *qh, size_t n, size_t dk, size_t dkp, float *kk, float *kq);
typedef void (*amxk__gdn_block_fn)(const amxk__gdn_args *a, float *S, size_t lds, size_t t0, size_t n, size_t hv, size_t j0,
                                   size_t nb, const float *kh, const float *qh, const float *al, const float *be, const float *kk,
                                   const float *kq, float *sm, const char *pf, size_t pfb, const amxk__gdn_qkpf *qp, int defer);
struct amxk__gdn_kernels {
    /* conv_rows: tokens [td, tb1) of a sequence whose taps all lie in x, channels [0, nch), nch a multiple
       of conv_cols; conv_edge: one token t, channels [c0, c1), any history (AMXK__CONV_ROWS_DEFINE) */
    amxk__conv_rows_fn conv_rows;
    amxk__conv_edge_fn conv_edge;
    size_t conv_cols;
    amxk__gating_fn gating; /* amxk_gdn_gating rows */
    amxk__gdn_qk_fn qk;     /* one normalised (q: and scaled) head row */
    amxk__gdn_gemm_fn gemm; /* C (+)= A B in fp32: the chunked form's products */
    amxk__gdn_copy_fn copy; /* rows x nb (<= rec_cb) floats between a state column block and its scratch */
    /* recurrent: rec_prep (or NULL), per chunk, the pair dot products kk, kq; rec_block: nb state columns, nb a
       multiple of rec_cols (<= rec_cb <= AMXK__GDN_CB); rec_tail: the block's other columns, any nb
       (arguments: amxk__gdn_recurrent_f32__1col__scalar); rec_sm: floats of block scratch (sm) */
    amxk__gdn_prep_fn rec_prep;
    amxk__gdn_block_fn rec_block, rec_tail;
    size_t rec_cols, rec_cb, rec_sm;
};

/* Offsets (floats) of the workspace pieces of one worker: the chunked form's and the recurrent form's. */
typedef struct amxk__gdn_chunk_ws {
    size_t kc, qc, kt, vc, vp, oc, gm, am, gam, bet, sx, total;
} amxk__gdn_chunk_ws;
typedef struct amxk__gdn_rec_ws {
    size_t kh, qh, al, be, kk, kq, sm, blk, total;
} amxk__gdn_rec_ws;

#define AMXK__GDN_TAKE(w, field, n) ((w)->field = (w)->total, (w)->total += AMXK__ROUND_UP((size_t)(n), (size_t)16))
AMXK__PRIV void amxk__gdn_chunk_layout(size_t dk, size_t dv, amxk__gdn_chunk_ws *w) {
    const size_t C = AMXK__GDN_C;
    w->total = 0;
    AMXK__GDN_TAKE(w, kc, C * dk);
    AMXK__GDN_TAKE(w, qc, C * dk);
    AMXK__GDN_TAKE(w, kt, dk * C);
    AMXK__GDN_TAKE(w, vc, C * dv);
    AMXK__GDN_TAKE(w, vp, C * dv);
    AMXK__GDN_TAKE(w, oc, C * dv);
    AMXK__GDN_TAKE(w, gm, C * C);
    AMXK__GDN_TAKE(w, am, C * C);
    AMXK__GDN_TAKE(w, gam, C);
    AMXK__GDN_TAKE(w, bet, C);
    AMXK__GDN_TAKE(w, sx, dk * dv);
}
/* Recurrent: per chunk of C tokens the normalised k and q rows (C x Dkp each), alpha, beta, k_r.k_{r+1}
   and k_r.q_r (C each), then the kernels' block scratch and one column block (Dk x rec_cb). */
AMXK__PRIV void amxk__gdn_rec_layout(size_t dk, const amxk__gdn_kernels *k, amxk__gdn_rec_ws *w) {
    const size_t C = AMXK__GDN_C, dkp = AMXK__ROUND_UP(dk, (size_t)16);
    w->total = 0;
    AMXK__GDN_TAKE(w, kh, C * dkp);
    AMXK__GDN_TAKE(w, qh, C * dkp);
    AMXK__GDN_TAKE(w, al, C);
    AMXK__GDN_TAKE(w, be, C);
    AMXK__GDN_TAKE(w, kk, C);
    AMXK__GDN_TAKE(w, kq, C);
    AMXK__GDN_TAKE(w, sm, k->rec_sm);
    AMXK__GDN_TAKE(w, blk, dk * k->rec_cb);
}
#undef AMXK__GDN_TAKE

AMXK__INLINE float *amxk__gdn_head(const amxk__gdn_args *a, int32_t s, size_t hv) {
    return a->st + (size_t)s * a->s_slot + hv * a->hsz;
}

// >>scalar ---------------------------------------------------------------------------------------

/* Conv outputs of token t (in the sequence), channels [c0, c1), any history, in the contract's order. */
AMXK__PRIV void amxk__conv_edge_f32__1x1__scalar(const amxk__conv_args *a, amxk__conv_sq q, size_t t, size_t c0, size_t c1) {
    const size_t W = a->width;
    size_t c, j;
    for (c = c0; c < c1; c++) {
        float acc = a->bias[c];
        for (j = 0; j < W; j++) {
            long p = (long)t - (long)(W - 1) + (long)j;
            float v = p >= 0 ? amxk__ld_elem(a->x, a->xt, (q.t0 + (size_t)p) * a->ldx + c)
                             : amxk__conv_hist(a, q, p, c);
            acc += a->w[j * a->dimp + c] * v;
        }
        if (a->silu) acc = acc / (1.0f + expf(-acc));
        amxk__st_elem(a->out, a->ot, (q.t0 + t) * a->ldo + c, acc);
    }
}
/* Tokens [td, tb1) (all taps in x), channels [0, nch): the same element code. */
AMXK__PRIV void amxk__conv_rows_f32__1x1__scalar(const amxk__conv_args *a, amxk__conv_sq q, size_t td, size_t tb1,
                                                 size_t nch) {
    size_t t;
    for (t = td; t < tb1; t++) amxk__conv_edge_f32__1x1__scalar(a, q, t, 0, nch);
}

/* amxk_gdn_gating, rows [t0, t1). */
AMXK__PRIV void amxk__gdn_gating_f32__1x1__scalar(const amxk__gating_args *ga, size_t t0, size_t t1) {
    size_t t, h;
    for (t = t0; t < t1; t++)
        for (h = 0; h < ga->hv; h++) {
            float x = amxk__ld_elem(ga->a, ga->abt, t * ga->lda + h) + amxk__ld_elem(ga->dt_bias, ga->dtt, h);
            ga->g[t * ga->ldg + h] = -expf(amxk__ld_elem(ga->A_log, ga->alt, h)) * amxk__gdn_softplus(x, ga->bsp, ga->thr);
            amxk__st_elem(ga->beta, ga->bt, t * ga->ldbeta + h, amxk__gdn_sigmoid(amxk__ld_elem(ga->b, ga->abt, t * ga->ldb + h)));
        }
}

/* Normalised (and for q scaled) head vector of token t: dst[0..Dk). which: 0 = k, 1 = q. */
AMXK__PRIV void amxk__gdn_qk_f32__1col__scalar(const amxk__gdn_args *a, size_t t, size_t h, int which, float *dst) {
    const amxk_gdn_inputs *in = a->in;
    const void *src = which ? in->q : in->k;
    size_t base = t * (which ? in->ldq : in->ldk) + h * a->dk, i;
    float ss = 0.0f, f = which ? a->p->scale : 1.0f;
    for (i = 0; i < a->dk; i++) {
        dst[i] = amxk__ld_elem(src, in->dtype, base + i);
        ss += dst[i] * dst[i];
    }
    if (a->p->l2norm) f /= sqrtf(ss + a->p->l2norm_eps);
    for (i = 0; i < a->dk; i++) dst[i] *= f;
}

/* dst[r*ldd + c] = src[r*lds + c] for r < rows, c < nb. */
AMXK__PRIV void amxk__gdn_copy_f32__1col__scalar(float *dst, size_t ldd, const float *src, size_t lds, size_t rows, size_t nb) {
    size_t r;
    for (r = 0; r < rows; r++) memcpy(dst + r * ldd, src + r * lds, nb * sizeof(float));
}

/* C[m][n] (+)= sum_k A[m][k] B[k][n]; row-major, leading dimensions in floats. */
AMXK__PRIV void amxk__gdn_gemm_f32__1x1__scalar(int acc, size_t m, size_t n, size_t k, const float *A, size_t lda,
                                                const float *B, size_t ldb, float *C, size_t ldc) {
    size_t i, j, kk;
    for (i = 0; i < m; i++) {
        float *c = C + i * ldc;
        if (!acc)
            for (j = 0; j < n; j++) c[j] = 0.0f;
        for (kk = 0; kk < k; kk++) {
            float av = A[i * lda + kk];
            const float *b = B + kk * ldb;
            for (j = 0; j < n; j++) c[j] += av * b[j];
        }
    }
}

/* Recurrent column block: S points at S[0][j0] (rows lds apart, K-first), nb (<= 32) columns, tokens
   [t0, t0+n) of value head hv with normalised rows kh/qh (dkp apart), alpha and beta, one token at a
   time; output columns [j0, j0+nb). sm: 4 x 32 floats. Ignores the vector blocks' later arguments. */
AMXK__PRIV void amxk__gdn_recurrent_f32__1col__scalar(const amxk__gdn_args *a, float *S, size_t lds, size_t t0, size_t n,
                                                      size_t hv, size_t j0, size_t nb, const float *kh, const float *qh,
                                                      const float *al, const float *be, const float *kk, const float *kq, float *sm,
                                                      const char *pf, size_t pfb, const amxk__gdn_qkpf *qp, int defer) {
    const size_t dk = a->dk, dkp = AMXK__ROUND_UP(dk, (size_t)16);
    float *sk = sm, *u = sm + AMXK__GDN_CB, *o = u + AMXK__GDN_CB, *skn = o + AMXK__GDN_CB;
    size_t r, i, j;
    (void)kk, (void)kq, (void)pf, (void)pfb, (void)qp, (void)defer; /* one token at a time, no prefetch */
    for (j = 0; j < nb; j++) sk[j] = 0.0f;
    for (i = 0; i < dk; i++)
        for (j = 0; j < nb; j++) sk[j] += S[i * lds + j] * kh[i];
    for (r = 0; r < n; r++) {
        const size_t t = t0 + r;
        const float *k = kh + r * dkp, *q = qh + r * dkp, *kn = kh + (r + 1) * dkp;
        const int next = r + 1 < n;
        for (j = 0; j < nb; j++) {
            u[j] = be[r] * (amxk__ld_elem(a->in->v, a->in->dtype, t * a->in->ldv + hv * a->dv + j0 + j) - al[r] * sk[j]);
            o[j] = skn[j] = 0.0f;
        }
        for (i = 0; i < dk; i++) {
            float *row = S + i * lds, ki = k[i], qi = q[i], ni = next ? kn[i] : 0.0f;
            for (j = 0; j < nb; j++) {
                float sv = al[r] * row[j] + ki * u[j];
                row[j] = sv;
                o[j] += sv * qi;
                skn[j] += sv * ni;
            }
        }
        for (j = 0; j < nb; j++) amxk__st_elem(a->o, a->ot, t * a->ldo + hv * a->dv + j0 + j, o[j]);
        for (j = 0; j < nb; j++) sk[j] = skn[j];
    }
}

/* Gating at one vector width: AMXK__GDN_GATING_DEFINE(name, isa, V, L, LD, ST) defines
   amxk__gdn_log1p01__<isa> and the kernel `name` (amxk_gdn_gating rows [t0, t1), L heads per vector)
   over V (amxk.h's amxk__vexp__<isa>, amxk__vsigmoid__<isa>) and the element access LD(p, dtype, i,
   cnt) / ST(p, dtype, i, cnt, v) of L elements from element i, the first min(cnt, L) of them real
   (lane masks at 16; at 8 a tail built in registers on load, stored through a scalar copy). One body:
   the same arithmetic per lane at both widths; lanes are independent, so fused gating (one live lane)
   gets amxk_gdn_gating's values on the same level.
   log1p(u) for u in [0, 1] (NaN stays NaN): 2 atanh(v), v = u / (2 + u) in [0, 1/3] (no cancellation
   in 1 + u: tiny u keep their relative accuracy), atanh(v) = v (1 + v^2/3 + ... + v^12/13) (the
   series' remainder is below 1.6e-8 relative at v = 1/3).
   The kernel: per L heads -exp(A_log) and dt_bias once, then down the rows. softplus(x) = x where bsp x
   > thr, else (max(z, 0) + log1p(exp(-|z|))) / bsp, z = bsp x (the scalar's two branches in one); beta
   = 1 / (1 + exp(-b)). exp: amxk__vexp__<isa> (clamped: see amxk_gdn_gating). */
#define AMXK__GDN_GATING_DEFINE(NAME, isa, V, L, LD, ST)                                                      \
    AMXK__FORCE_INLINE V##_T amxk__gdn_log1p01__##isa(V##_T u) {                                            \
        const V##_T v = V##_DIV(u, V##_ADD(u, V##_SET1(2.0f))), v2 = V##_MUL(v, v);                         \
        V##_T p = V##_SET1(1.0f / 13.0f);                                                                   \
        p = V##_FMADD(p, v2, V##_SET1(1.0f / 11.0f));                                                       \
        p = V##_FMADD(p, v2, V##_SET1(1.0f / 9.0f));                                                        \
        p = V##_FMADD(p, v2, V##_SET1(1.0f / 7.0f));                                                        \
        p = V##_FMADD(p, v2, V##_SET1(1.0f / 5.0f));                                                        \
        p = V##_FMADD(p, v2, V##_SET1(1.0f / 3.0f));                                                        \
        p = V##_FMADD(p, v2, V##_SET1(1.0f));                                                               \
        return V##_MUL(V##_ADD(v, v), p);                                                                   \
    }                                                                                                       \
    AMXK__PRIV void NAME(const amxk__gating_args *ga, size_t t0, size_t t1) {                               \
        const V##_T bsp = V##_SET1(ga->bsp), thr = V##_SET1(ga->thr), zero = V##_SET1(0.0f);                \
        size_t h, t;                                                                                        \
        for (h = 0; h < ga->hv; h += (L)) {                                                                 \
            const size_t cnt = ga->hv - h;                                                                  \
            const V##_T nea = V##_SUB(zero, amxk__vexp__##isa(LD(ga->A_log, ga->alt, h, cnt)));             \
            const V##_T dtb = LD(ga->dt_bias, ga->dtt, h, cnt);                                             \
            for (t = t0; t < t1; t++) {                                                                     \
                const V##_T x = V##_ADD(LD(ga->a, ga->abt, t * ga->lda + h, cnt), dtb), z = V##_MUL(bsp, x); \
                V##_T sp = V##_ADD(V##_MAX(z, zero), amxk__gdn_log1p01__##isa(amxk__vexp__##isa(V##_SUB(zero, V##_ABS(z))))); \
                sp = V##_SELLT(thr, z, x, V##_DIV(sp, bsp)); /* z > thr: x */                               \
                ST(ga->g, AMXK_DTYPE_F32, t * ga->ldg + h, cnt, V##_MUL(nea, sp));                          \
                ST(ga->beta, ga->bt, t * ga->ldbeta + h, cnt, amxk__vsigmoid__##isa(LD(ga->b, ga->abt, t * ga->ldb + h, cnt))); \
            }                                                                                               \
        }                                                                                                   \
    }

/* The recurrent column block at one vector width: AMXK__GDN_RECURRENT_DEFINE(isa, V, L, TAILS) defines
   the sweeps and the block kernel amxk__gdn_recurrent_f32__32col__<isa> (contract: the scalar version)
   over V. TAILS = 0: nb is a multiple of L (rec_cols; the rest goes to rec_tail); 1: any nb <= 32, the
   last vector masked (its own tail). Both widths run the same operations per lane in the same order.
   Tokens go through the block two at a time (one read and one write of the block per pair), an odd
   last token alone. With S the block before token r (= 1) and pk = S^T k: u1 = b1 (v1 - a1 pk1);
   S1^T k2 = a1 pk2 + (k1.k2) u1, u2 = b2 (v2 - a2 S1^T k2); S2 = a1 a2 S + k1 (a2 u1)^T + k2 u2^T;
   o1 = S1^T q1 = a1 S^T q1 + (k1.q1) u1; o2 = S2^T q2; and the next pair's pk from S2 (kk, kq: the
   chunk's dot products from rec_prep). Deferred decay (defer, for chunks of >= 4 tokens): the block
   holds S / gam; a pair multiplies gam by a1 a2 and adds k1 (a2 u1 / gam)^T + k2 (u2 / gam)^T (no
   multiply of the block), products from the block are scaled by gam; when gam would fall below 2^-60
   (or is 0) the pair multiplies the block by the whole gam a1 a2 instead and gam restarts at 1; the
   block is multiplied by gam once at the end. |S / gam| <= 2^60 |S|: no overflow for any state a float
   can hold usefully. sm: 9 x 32 floats of scratch. */
typedef struct amxk__gdn_pair { /* a pair sweep's rows and column vectors (amxk__gdn_sweep2__<isa>) */
    const float *k1, *q1, *k2, *q2, *k3, *k4, *w1, *u2;
    float *oa, *ob, *n1, *n2;
    float aa;
} amxk__gdn_pair;
#define AMXK__GDN_LDS(V, p, last, km) ((last) ? V##_LDM((p), (km)) : V##_LDU(p))
/* F(..., NV, TL, km) with run-time nv (1..4) and tl (a masked last vector, nv <= 2) as constants */
#define AMXK__GDN_NVTL(F, nv, tl, km, ...)                                                                    \
    if ((nv) == 4) F(__VA_ARGS__, 4, 0, km);                                                                   \
    else if ((nv) == 3) F(__VA_ARGS__, 3, 0, km);                                                              \
    else if ((nv) == 2) (tl) ? F(__VA_ARGS__, 2, 1, km) : F(__VA_ARGS__, 2, 0, km);                            \
    else (tl) ? F(__VA_ARGS__, 1, 1, km) : F(__VA_ARGS__, 1, 0, km)
#define AMXK__GDN_RECURRENT_DEFINE(isa, V, L, TAILS)                                                           \
    /* One token's sweep over NV (<= 4) vectors, the last masked with km when TL: s = al s + k_i u;         \
       o += s q_i. NV, TL compile-time constants. */                                                         \
    AMXK__FORCE_INLINE void amxk__gdn_sweep__##isa(float *S, size_t lds, size_t dk, const float *kh, const float *qh, float al, \
                                                   const float *u, float *o, int NV, int TL, V##_LMASK_T km) { \
        V##_T uu[4], oo[4], va = V##_SET1(al);                                                               \
        size_t i;                                                                                            \
        int v;                                                                                               \
        _Pragma("GCC unroll 4") for (v = 0; v < NV; v++) uu[v] = V##_LDU(u + L * v), oo[v] = V##_SET1(0.0f); \
        for (i = 0; i < dk; i++) {                                                                           \
            float *row = S + i * lds;                                                                        \
            const V##_T bk = V##_SET1(kh[i]), bq = V##_SET1(qh[i]);                                          \
            _Pragma("GCC unroll 4") for (v = 0; v < NV; v++) {                                               \
                const V##_T sv = V##_FMADD(bk, uu[v], V##_MUL(va, AMXK__GDN_LDS(V, row + L * v, TL && v == NV - 1, km))); \
                if (TL && v == NV - 1) V##_STM(row + L * v, km, sv);                                         \
                else V##_STU(row + L * v, sv);                                                               \
                oo[v] = V##_FMADD(sv, bq, oo[v]);                                                            \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 4") for (v = 0; v < NV; v++) V##_STU(o + L * v, oo[v]);                          \
    }                                                                                                        \
    /* Two tokens per sweep over NV (<= 2) vectors: per row, with the old s: oa += s q1_i; s' = aa s +       \
       k1_i w1 + k2_i u2 (stored; MUL = 0: aa = 1, no multiply); ob += s' q2_i; n1 += s' k3_i (NX >= 1);    \
       n2 += s' k4_i (NX == 2). NV, NX, MUL, TL compile-time constants. */                                   \
    AMXK__FORCE_INLINE void amxk__gdn_sweep2__##isa(float *S, size_t lds, size_t dk, const amxk__gdn_pair *p, int NX, int NV, \
                                                    int MUL, int TL, V##_LMASK_T km) {                        \
        const float *k1 = p->k1, *q1 = p->q1, *k2 = p->k2, *q2 = p->q2, *k3 = p->k3, *k4 = p->k4;            \
        V##_T A[2], B[2], N1[2], N2[2], Wv[2], U[2], va = V##_SET1(p->aa);                                   \
        size_t i;                                                                                            \
        int v;                                                                                               \
        _Pragma("GCC unroll 2") for (v = 0; v < NV; v++) {                                                   \
            Wv[v] = V##_LDU(p->w1 + L * v), U[v] = V##_LDU(p->u2 + L * v);                                         \
            A[v] = B[v] = N1[v] = N2[v] = V##_SET1(0.0f);                                                    \
        }                                                                                                    \
        for (i = 0; i < dk; i++) {                                                                           \
            float *row = S + i * lds;                                                                        \
            const V##_T bq1 = V##_SET1(q1[i]), bk1 = V##_SET1(k1[i]), bk2 = V##_SET1(k2[i]), bq2 = V##_SET1(q2[i]); \
            const V##_T bk3 = NX >= 1 ? V##_SET1(k3[i]) : va, bk4 = NX >= 2 ? V##_SET1(k4[i]) : va;          \
            _Pragma("GCC unroll 2") for (v = 0; v < NV; v++) {                                               \
                const V##_T s0 = AMXK__GDN_LDS(V, row + L * v, TL && v == NV - 1, km);                       \
                V##_T s1;                                                                                    \
                A[v] = V##_FMADD(s0, bq1, A[v]);                                                             \
                s1 = V##_FMADD(bk2, U[v], V##_FMADD(bk1, Wv[v], MUL ? V##_MUL(va, s0) : s0));                \
                if (TL && v == NV - 1) V##_STM(row + L * v, km, s1);                                         \
                else V##_STU(row + L * v, s1);                                                               \
                B[v] = V##_FMADD(s1, bq2, B[v]);                                                             \
                if (NX >= 1) N1[v] = V##_FMADD(s1, bk3, N1[v]);                                              \
                if (NX >= 2) N2[v] = V##_FMADD(s1, bk4, N2[v]);                                              \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 2") for (v = 0; v < NV; v++) {                                                   \
            V##_STU(p->oa + L * v, A[v]), V##_STU(p->ob + L * v, B[v]);                                      \
            V##_STU(p->n1 + L * v, N1[v]), V##_STU(p->n2 + L * v, N2[v]);                                    \
        }                                                                                                    \
    }                                                                                                        \
    /* The sweep instantiations: NV (1, 2) x tail (0, 1) x NX (0..2) x MUL (0, 1); sweep: NV 1..4. */       \
    AMXK__FORCE_INLINE void amxk__gdn_sweep2x__##isa(float *S, size_t lds, size_t dk, const amxk__gdn_pair *p, int nx, int NV, \
                                                     int TL, int mul, V##_LMASK_T km) {                       \
        if (nx == 2 && mul) amxk__gdn_sweep2__##isa(S, lds, dk, p, 2, NV, 1, TL, km);                        \
        else if (nx == 2) amxk__gdn_sweep2__##isa(S, lds, dk, p, 2, NV, 0, TL, km);                          \
        else if (nx == 1 && mul) amxk__gdn_sweep2__##isa(S, lds, dk, p, 1, NV, 1, TL, km);                   \
        else if (nx == 1) amxk__gdn_sweep2__##isa(S, lds, dk, p, 1, NV, 0, TL, km);                          \
        else if (mul) amxk__gdn_sweep2__##isa(S, lds, dk, p, 0, NV, 1, TL, km);                              \
        else amxk__gdn_sweep2__##isa(S, lds, dk, p, 0, NV, 0, TL, km);                                       \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_sweep2sel__##isa(float *S, size_t lds, size_t dk, const amxk__gdn_pair *p, int nx, int nv, int mul, \
                                               int tl, V##_LMASK_T km) {                                      \
        if (nv == 2 && !tl) amxk__gdn_sweep2x__##isa(S, lds, dk, p, nx, 2, 0, mul, km);                      \
        else if (nv == 2) amxk__gdn_sweep2x__##isa(S, lds, dk, p, nx, 2, 1, mul, km);                        \
        else if (!tl) amxk__gdn_sweep2x__##isa(S, lds, dk, p, nx, 1, 0, mul, km);                            \
        else amxk__gdn_sweep2x__##isa(S, lds, dk, p, nx, 1, 1, mul, km);                                     \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_sweepsel__##isa(float *S, size_t lds, size_t dk, const float *kh, const float *qh, float al, \
                                              const float *u, float *o, int nv, int tl, V##_LMASK_T km) {     \
        AMXK__GDN_NVTL(amxk__gdn_sweep__##isa, nv, tl, km, S, lds, dk, kh, qh, al, u, o);                     \
    }                                                                                                        \
    /* p1 = S^T k1 and p2 = S^T k2 (k2 NULL: p2 = 0) over NV (<= 4) vectors, the last masked with km when    \
       TL, the accumulators in registers; pf: pfb bytes per row prefetched (T1). NV, TL compile-time. */     \
    AMXK__FORCE_INLINE void amxk__gdn_stk__##isa(const float *S, size_t lds, size_t dk, const float *k1, const float *k2, \
                                                 const char *pf, size_t pfb, float *p1, float *p2, int NV, int TL, V##_LMASK_T km) { \
        V##_T acc[4], acc2[4];                                                                               \
        size_t i, l;                                                                                         \
        int v;                                                                                               \
        _Pragma("GCC unroll 4") for (v = 0; v < NV; v++) acc[v] = acc2[v] = V##_SET1(0.0f);                  \
        for (i = 0; i < dk; i++) {                                                                           \
            const V##_T bk = V##_SET1(k1[i]);                                                                \
            if (pf)                                                                                          \
                for (l = 0; l < pfb; l += 64) _mm_prefetch(pf + i * pfb + l, _MM_HINT_T1);                   \
            if (k2) {                                                                                        \
                const V##_T bk2 = V##_SET1(k2[i]);                                                           \
                _Pragma("GCC unroll 4") for (v = 0; v < NV; v++) {                                           \
                    const V##_T sv = AMXK__GDN_LDS(V, S + i * lds + L * v, TL && v == NV - 1, km);           \
                    acc[v] = V##_FMADD(sv, bk, acc[v]);                                                      \
                    acc2[v] = V##_FMADD(sv, bk2, acc2[v]);                                                   \
                }                                                                                            \
            } else {                                                                                         \
                _Pragma("GCC unroll 4") for (v = 0; v < NV; v++)                                             \
                    acc[v] = V##_FMADD(AMXK__GDN_LDS(V, S + i * lds + L * v, TL && v == NV - 1, km), bk, acc[v]); \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 4") for (v = 0; v < NV; v++) V##_STU(p1 + L * v, acc[v]), V##_STU(p2 + L * v, acc2[v]); \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_stksel__##isa(const float *S, size_t lds, size_t dk, const float *k1, const float *k2, const char *pf, \
                                            size_t pfb, float *p1, float *p2, int nv, int tl, V##_LMASK_T km) { \
        AMXK__GDN_NVTL(amxk__gdn_stk__##isa, nv, tl, km, S, lds, dk, k1, k2, pf, pfb, p1, p2);                 \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_recurrent_f32__32col__##isa(const amxk__gdn_args *a, float *S, size_t lds, size_t t0, size_t n, \
                                                          size_t hv, size_t j0, size_t nb, const float *kh, const float *qh, \
                                                          const float *al, const float *be, const float *kk, const float *kq, \
                                                          float *sm, const char *pf, size_t pfb, const amxk__gdn_qkpf *qp, \
                                                          int defer) {                                       \
        const size_t dk = a->dk, dkp = AMXK__ROUND_UP(dk, (size_t)16), CB = AMXK__GDN_CB;                   \
        const int nv = (int)AMXK__CEIL_DIV(nb, (size_t)(L)), tl = (TAILS) && nb % (L) != 0;                  \
        const V##_LMASK_T km = V##_LMASK(nb - (L) * (size_t)(nv - 1));                                         \
        const size_t esz = amxk_dtype_size(a->in->dtype);                                                    \
        const amxk_dtype vt = a->in->dtype, ot = a->ot;                                                      \
        float *p1 = sm, *p2 = sm + CB, *u1 = p2 + CB, *u2 = u1 + CB, *w1 = u2 + CB, *oa = w1 + CB, *ob = oa + CB; \
        float *n1 = ob + CB, *n2 = n1 + CB;                                                                  \
        float gam = 1.0f; /* the block holds S / gam */                                                      \
        size_t r, i, step, qx = qp ? qp->start : 0, qrow = qp ? qx / qp->nl : 0, ql = qp ? qx % qp->nl : 0;  \
        int v, c;                                                                                            \
        /* S^T k1 (and S^T k2 when n > 1) into p1, p2; in decode (n = 1) while the next task's state is      \
           prefetched, pfb bytes of it per row (into L2; see amxk__gdn_recurrent) */                         \
        amxk__gdn_stksel__##isa(S, lds, dk, kh, n > 1 ? kh + dkp : NULL, pf, pfb, p1, p2, nv, tl, km);       \
        for (r = 0; r < n; r += step) {                                                                      \
            const size_t t = t0 + r, vb = t * a->in->ldv + hv * a->dv + j0, obase = t * a->ldo + hv * a->dv + j0; \
            step = r + 1 < n ? 2 : 1;                                                                        \
            if (n > 1) { /* this block's v values AMXK__GDN_VPF tokens ahead (v rows are far apart: each     \
                            token's first v load would miss to memory and stall the token's sweep) */        \
                const size_t rp = r == 0 ? 0 : r + AMXK__GDN_VPF - 1, re = AMXK__MIN(n, r + step + AMXK__GDN_VPF - 1); \
                size_t rr;                                                                                   \
                for (rr = rp; rr < re; rr++) {                                                               \
                    const char *vp = (const char *)a->in->v + ((t0 + rr) * a->in->ldv + hv * a->dv + j0) * esz; \
                    _mm_prefetch(vp, _MM_HINT_T0);                                                           \
                    _mm_prefetch(vp + nb * esz - 1, _MM_HINT_T0);                                            \
                }                                                                                            \
            }                                                                                                \
            if (qp) { /* the next chunk's q/k rows: items [qx, xe), row qrow, line ql */                     \
                const size_t xe = AMXK__MIN(qp->items, qp->start + (r + step) * qp->per);                    \
                for (; qx < xe; qx++) {                                                                      \
                    _mm_prefetch(qp->base[qrow & 1] + (qrow >> 1) * qp->ld[qrow & 1] + AMXK__MIN(ql * 64, qp->rowb - 1), _MM_HINT_T0); \
                    if (++ql == qp->nl) ql = 0, qrow++;                                                      \
                }                                                                                            \
            }                                                                                                \
            if (step == 1) { /* the last token alone: s = (gam a) s + k u, gam = 1 */                        \
                const V##_T ag = V##_SET1(al[r] * gam);                                                      \
                for (v = 0; v < nv; v++) {                                                                   \
                    const V##_T vv = V##_LDE(a->in->v, vt, vb + L * (size_t)v, nb - L * (size_t)v);          \
                    V##_STU(u1 + L * v, V##_MUL(V##_SET1(be[r]), V##_FNMADD(ag, V##_LDU(p1 + L * v), vv)));  \
                }                                                                                            \
                amxk__gdn_sweepsel__##isa(S, lds, dk, kh + r * dkp, qh + r * dkp, al[r] * gam, u1, oa, nv, tl, km); \
                gam = 1.0f;                                                                                  \
                for (v = 0; v < nv; v++) V##_STE(a->o, ot, obase + L * (size_t)v, nb - L * (size_t)v, V##_LDU(oa + L * v)); \
                continue;                                                                                    \
            }                                                                                                \
            {                                                                                                \
                const size_t nx = AMXK__MIN((size_t)2, n - r - 2), vb2 = vb + a->in->ldv, ob2 = obase + a->ldo; \
                const float *k1 = kh + r * dkp, *q1 = qh + r * dkp, *k2 = k1 + dkp, *q2 = q1 + dkp;          \
                const float *k3 = nx >= 1 ? k2 + dkp : kh, *k4 = nx >= 2 ? k2 + 2 * dkp : kh;                \
                const float g0 = gam, g1 = gam * al[r] * al[r + 1]; /* the block's scale before and after */ \
                const int mul = !defer || !(g1 >= 8.67361737988403547206e-19f /* 2^-60 */);                  \
                const V##_T a1 = V##_SET1(al[r] * g0), a2 = V##_SET1(al[r + 1]), b1 = V##_SET1(be[r]);      \
                const V##_T b2 = V##_SET1(be[r + 1]), c12 = V##_SET1(kk[r]);                                 \
                V##_T sw, sg, cq, gs;                                                                        \
                float *tp;                                                                                   \
                if (mul) gam = 1.0f;                                                                         \
                else gam = g1;                                                                               \
                sw = V##_SET1(mul ? al[r + 1] : al[r + 1] / g1), sg = V##_SET1(mul ? 1.0f : 1.0f / g1);     \
                for (v = 0; v < nv; v++) { /* p1, p2 are products of the block at scale g0 */                \
                    const size_t cnt = nb - L * (size_t)v;                                                   \
                    const V##_T v1 = V##_LDE(a->in->v, vt, vb + L * (size_t)v, cnt);                        \
                    const V##_T v2 = V##_LDE(a->in->v, vt, vb2 + L * (size_t)v, cnt);                       \
                    const V##_T uu1 = V##_MUL(b1, V##_FNMADD(a1, V##_LDU(p1 + L * v), v1));                  \
                    const V##_T s1k2 = V##_FMADD(c12, uu1, V##_MUL(a1, V##_LDU(p2 + L * v)));                \
                    V##_STU(u1 + L * v, uu1);                                                                \
                    V##_STU(u2 + L * v, V##_MUL(sg, V##_MUL(b2, V##_FNMADD(a2, s1k2, v2))));                 \
                    V##_STU(w1 + L * v, V##_MUL(sw, uu1));                                                   \
                }                                                                                            \
                for (c = 0; c < nv; c += 2) { /* two vectors of columns per sweep */                        \
                    const amxk__gdn_pair pr = {k1, q1, k2, q2, k3, k4, w1 + L * c, u2 + L * c, oa + L * c, ob + L * c, \
                                               n1 + L * c, n2 + L * c, g1};                                  \
                    amxk__gdn_sweep2sel__##isa(S + L * c, lds, dk, &pr, (int)nx, AMXK__MIN(nv - c, 2), mul, tl && c + 2 >= nv, km); \
                }                                                                                            \
                cq = V##_SET1(kq[r]), gs = V##_SET1(gam);                                                    \
                for (v = 0; v < nv; v++) { /* oa is at scale g0, ob at scale gam */                          \
                    const size_t cnt = nb - L * (size_t)v;                                                   \
                    const V##_T o1 = V##_FMADD(cq, V##_LDU(u1 + L * v), V##_MUL(a1, V##_LDU(oa + L * v)));   \
                    V##_STE(a->o, ot, obase + L * (size_t)v, cnt, o1);                                       \
                    V##_STE(a->o, ot, ob2 + L * (size_t)v, cnt, V##_MUL(gs, V##_LDU(ob + L * v)));           \
                }                                                                                            \
                tp = p1, p1 = n1, n1 = tp; /* the next products (scale gam) */                               \
                tp = p2, p2 = n2, n2 = tp;                                                                   \
            }                                                                                                \
        }                                                                                                    \
        if (gam != 1.0f) {                                                                                   \
            const V##_T gs = V##_SET1(gam);                                                                  \
            for (i = 0; i < dk; i++)                                                                         \
                for (v = 0; v < nv; v++) {                                                                   \
                    const V##_T sv = V##_MUL(gs, AMXK__GDN_LDS(V, S + i * lds + L * v, tl && v == nv - 1, km)); \
                    if (tl && v == nv - 1) V##_STM(S + i * lds + L * v, km, sv);                             \
                    else V##_STU(S + i * lds + L * v, sv);                                                   \
                }                                                                                            \
        }                                                                                                    \
    }

/* The conv at one vector width: AMXK__CONV_ROWS_DEFINE(isa, V, L, TAILS) defines, over V and the
   width's helpers amxk__conv_<x>__<isa> (ldg / stg: 2L channels as two vectors, split even / odd for
   bf16 x; splitg: taps into that order; pfg: a group's prefetches; stream: a staged row out by
   streaming stores; silu; ste: the edge's store; BF: the AVX512_BF16 rounding):
   amxk__conv_rows__<isa>: NT (1 or 2) tokens whose W taps all lie in x: xr[0 .. W+NT-2] point at x
   rows t-(W-1) .. t+NT-1, orow[0 .. NT-1] at the output rows, at the first channel of ngrp groups; taps
   j at wt + j*ldw, bias at bs (group lane order); pf: the two x rows the next pair reads first.
   xt/ot/W/NT/BF compile-time (W = 0: runtime). Per token: bias, FMA in tap order, silu, one rounding.
   amxk__conv_rows2__<isa>: tokens [td, tb1) whose taps all lie in x, channels [0, nch) (a multiple of
   2L): channel blocks whose taps and x rows stay in L1 (taps copied contiguous: rows dimp apart share
   L1 sets when dim is a large power of two), two tokens at a time, groups inner; large outputs
   (a->nts) through an L1 buffer, then out in whole lines by streaming stores.
   amxk__conv_edge__<isa>: token t, channels [c0, c1), any history (the first W-1 tokens, the channel
   tail), L lanes at a time (tail masked with TAILS, else a scalar copy): the rows' fp32 values and FMA
   order, so prefill and update agree bit for bit. */
#define AMXK__CONV_ROWS_DEFINE(isa, V, L, TAILS)                                                               \
    AMXK__FORCE_INLINE void amxk__conv_rows__##isa(const amxk__conv_args *a, const char *const *xr, char *const *orow, \
                                                   const char *const *pf, size_t ngrp, const float *wt, size_t ldw, \
                                                   const float *bs, amxk_dtype xt, amxk_dtype ot, size_t W, int NT, int BF) { \
        size_t v, j, w = W ? W : a->width;                                                                   \
        const size_t xs = xt == AMXK_DTYPE_F32 ? 4 : 2, os = ot == AMXK_DTYPE_F32 ? 4 : 2;                   \
        const int silu = a->silu;                                                                            \
        for (v = 0; v < ngrp; v++) {                                                                         \
            const size_t c = 2 * (L) * v;                                                                    \
            V##_T a0 = V##_LDU(bs + c), a1 = V##_LDU(bs + c + (L)), b0 = a0, b1 = a1;                        \
            amxk__conv_pfg__##isa(pf, c * xs, xs, v);                                                        \
            _Pragma("GCC unroll 8") for (j = 0; j < w + (size_t)NT - 1; j++) {                               \
                V##_T x0, x1;                                                                                \
                amxk__conv_ldg__##isa(xr[j] + c * xs, xt, &x0, &x1);                                         \
                if (j < w) {                                                                                 \
                    a0 = V##_FMADD(V##_LDU(wt + j * ldw + c), x0, a0);                                       \
                    a1 = V##_FMADD(V##_LDU(wt + j * ldw + c + (L)), x1, a1);                                 \
                }                                                                                            \
                if (NT == 2 && j >= 1) {                                                                     \
                    b0 = V##_FMADD(V##_LDU(wt + (j - 1) * ldw + c), x0, b0);                                 \
                    b1 = V##_FMADD(V##_LDU(wt + (j - 1) * ldw + c + (L)), x1, b1);                           \
                }                                                                                            \
            }                                                                                                \
            if (silu) {                                                                                      \
                a0 = amxk__conv_silu__##isa(a0), a1 = amxk__conv_silu__##isa(a1);                            \
                if (NT == 2) b0 = amxk__conv_silu__##isa(b0), b1 = amxk__conv_silu__##isa(b1);               \
            }                                                                                                \
            amxk__conv_stg__##isa(orow[0] + c * os, xt, ot, a0, a1, BF, 0);                                  \
            if (NT == 2) amxk__conv_stg__##isa(orow[1] + c * os, xt, ot, b0, b1, BF, 0);                     \
        }                                                                                                    \
    }                                                                                                        \
    AMXK__FORCE_INLINE void amxk__conv_rowsw__##isa(const amxk__conv_args *a, const char *const *xr, char *const *orow, \
                                                    const char *const *pf, size_t ngrp, const float *wt, size_t ldw, \
                                                    const float *bs, int nt, amxk_dtype XT, amxk_dtype OT, int BF) { \
        if (a->width == 4 && nt == 2) amxk__conv_rows__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, XT, OT, 4, 2, BF); \
        else if (a->width == 4) amxk__conv_rows__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, XT, OT, 4, 1, BF); \
        else if (nt == 2) amxk__conv_rows__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, XT, OT, 0, 2, BF);      \
        else amxk__conv_rows__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, XT, OT, 0, 1, BF);                   \
    }                                                                                                        \
    AMXK__PRIV void amxk__conv_rowsel__##isa(const amxk__conv_args *a, const char *const *xr, char *const *orow, \
                                             const char *const *pf, size_t ngrp, const float *wt, size_t ldw, \
                                             const float *bs, int nt, int bf) {                              \
        const int bx = a->xt == AMXK_DTYPE_BF16, bo = a->ot == AMXK_DTYPE_BF16;                             \
        const amxk_dtype B = AMXK_DTYPE_BF16, F = AMXK_DTYPE_F32;                                            \
        if (bx && bo && bf) amxk__conv_rowsw__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, nt, B, B, 1);        \
        else if (bo && bf) amxk__conv_rowsw__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, nt, F, B, 1);         \
        else if (bx && bo) amxk__conv_rowsw__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, nt, B, B, 0);         \
        else if (bx) amxk__conv_rowsw__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, nt, B, F, 0);               \
        else if (bo) amxk__conv_rowsw__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, nt, F, B, 0);               \
        else amxk__conv_rowsw__##isa(a, xr, orow, pf, ngrp, wt, ldw, bs, nt, F, F, 0);                       \
    }                                                                                                        \
    AMXK__FORCE_INLINE void amxk__conv_rows2__##isa(const amxk__conv_args *a, amxk__conv_sq q, size_t td, size_t tb1, \
                                                    size_t nch, int bf) {                                    \
        const size_t t0 = q.t0, len = q.len, W = a->width, xs = a->esz, os = amxk_dtype_size(a->ot), G = 2 * (L); \
        float wsc[AMXK__MAX(AMXK__CONV_WSC, 2 * (L) * (AMXK__CONV_MAXW + 1))], stage[2 * AMXK__CONV_WSC];    \
        const size_t cb = AMXK__MAX((size_t)1, AMXK__CONV_WSC / G / (W + 1)) * G;                            \
        size_t c, t, j, k, nt;                                                                               \
        for (c = 0; c < nch; c += cb) {                                                                      \
            const size_t nc = AMXK__MIN(cb, nch - c);                                                        \
            const float *wt = wsc, *bs = wsc + W * nc;                                                       \
            const size_t ldw = nc;                                                                           \
            for (j = 0; j <= W; j++) {                                                                       \
                if (a->xt == AMXK_DTYPE_BF16)                                                                \
                    for (k = 0; k < nc; k += G) amxk__conv_splitg__##isa(a->w + j * a->dimp + c + k, wsc + j * nc + k); \
                else memcpy(wsc + j * nc, a->w + j * a->dimp + c, nc * sizeof(float));                       \
            }                                                                                                \
            for (t = td; t < tb1; t += nt) {                                                                 \
                const char *xr[AMXK__CONV_MAXW + 1], *pf[2];                                                 \
                char *orow[2], *stg[2];                                                                      \
                nt = t + 1 < tb1 ? 2 : 1;                                                                    \
                for (j = 0; j < W + nt - 1; j++) xr[j] = (const char *)a->x + ((t0 + t - (W - 1) + j) * a->ldx + c) * xs; \
                for (j = 0; j < nt; j++) orow[j] = (char *)a->out + ((t0 + t + j) * a->ldo + c) * os;        \
                for (j = 0; j < 2; j++) pf[j] = (const char *)a->x + ((t0 + AMXK__MIN(t + nt + j, len - 1)) * a->ldx + c) * xs; \
                if (!a->nts) {                                                                               \
                    amxk__conv_rowsel__##isa(a, xr, orow, pf, nc / G, wt, ldw, bs, (int)nt, bf);             \
                    continue;                                                                                \
                }                                                                                            \
                stg[0] = (char *)stage, stg[1] = (char *)stage + nc * os;                                    \
                amxk__conv_rowsel__##isa(a, xr, stg, pf, nc / G, wt, ldw, bs, (int)nt, bf);                  \
                for (j = 0; j < nt; j++) amxk__conv_stream__##isa(orow[j], stg[j], nc * os);                 \
            }                                                                                                \
        }                                                                                                    \
        if (a->nts) _mm_sfence();                                                                            \
    }                                                                                                        \
    AMXK__FORCE_INLINE void amxk__conv_edge__##isa(const amxk__conv_args *a, amxk__conv_sq q, size_t t, size_t c0, size_t c1, \
                                                   int BF) {                                                 \
        const size_t W = a->width;                                                                           \
        const char *row[AMXK__CONV_MAXW]; /* tap j: its x row or SD state row (then hist[j] 1), or NULL */   \
        long pos[AMXK__CONV_MAXW];                                                                           \
        int hist[AMXK__CONV_MAXW];                                                                           \
        size_t c, j, k;                                                                                      \
        for (j = 0; j < W; j++) { /* the taps' sources once per token, not per vector */                     \
            const long p = (long)t - (long)(W - 1) + (long)j;                                                \
            pos[j] = p, hist[j] = 0, row[j] = NULL;                                                          \
            if (p >= 0) row[j] = (const char *)a->x + (q.t0 + (size_t)p) * a->ldx * a->esz;                  \
            else if (q.sb && q.init && a->s_dim == 1) /* SD layout: channels contiguous */                   \
                row[j] = q.sb + amxk__conv_hpos(a, q, p) * a->s_tok * a->esz, hist[j] = 1;                   \
            else if (q.sb && q.init) hist[j] = 2; /* DS layout: element by element */                        \
        }                                                                                                    \
        for (c = c0; c < c1; c += (L)) {                                                                     \
            const size_t cnt = c1 - c;                                                                       \
            V##_T acc = V##_LDE(a->bias, AMXK_DTYPE_F32, c, cnt);                                            \
            for (j = 0; j < W; j++) {                                                                        \
                V##_T v;                                                                                     \
                if (row[j] && (hist[j] == 0 || (TAILS) || cnt >= (L))) {                                     \
                    v = V##_LDE(row[j], a->xt, c, cnt);                                                      \
                } else if (!hist[j]) {                                                                       \
                    v = V##_SET1(0.0f);                                                                      \
                } else {                                                                                     \
                    float tmp[L] = {0};                                                                      \
                    for (k = 0; k < cnt && k < (L); k++) tmp[k] = amxk__conv_hist(a, q, pos[j], c + k);      \
                    v = V##_LDU(tmp);                                                                        \
                }                                                                                            \
                acc = V##_FMADD(V##_LDE(a->w, AMXK_DTYPE_F32, j * a->dimp + c, cnt), v, acc);                \
            }                                                                                                \
            if (a->silu) acc = amxk__conv_silu__##isa(acc);                                                  \
            amxk__conv_ste__##isa(a->out, a->ot, (q.t0 + t) * a->ldo + c, cnt, acc, BF);                     \
        }                                                                                                    \
    }

/* Row kernels at one vector width (AMXK__GDN_QK_DEFINE(isa, V, L, TAILS)), the scalar versions'
   contracts: amxk__gdn_qk_f32__<L>col__<isa> (the sum of squares in two accumulators, even and odd
   vectors, then V_HSUM); amxk__gdn_copy_f32__32col__<isa> (nb <= 32; 32-float rows by vector moves,
   not memcpy: docs/notes/gdn.md; other widths by lane masks (TAILS) or memcpy);
   amxk__gdn_recurrent_prep_f32__<L>col__<isa>: k_r.k_{r+1} (kk[r], r + 1 < n) and k_r.q_r (kq[r]) of
   a chunk's normalised rows (dkp apart), in vectors (TAILS: the last masked; else a scalar tail). */
#define AMXK__GDN_QK_DEFINE(isa, V, L, TAILS)                                                                  \
    AMXK__PRIV void amxk__gdn_qk_f32__##L##col__##isa(const amxk__gdn_args *a, size_t t, size_t h, int which, float *dst) { \
        const amxk_gdn_inputs *in = a->in;                                                                   \
        const void *src = which ? in->q : in->k;                                                             \
        const size_t base = t * (which ? in->ldq : in->ldk) + h * a->dk, dk = a->dk;                         \
        size_t i;                                                                                            \
        V##_T s0 = V##_SET1(0.0f), s1 = V##_SET1(0.0f), f;                                                   \
        float fs = which ? a->p->scale : 1.0f, raw[AMXK__GDN_MAXD];                                          \
        for (i = 0; i < dk; i += (L)) {                                                                      \
            const V##_T v = V##_LDE(src, in->dtype, base + i, dk - i);                                       \
            V##_STU(raw + i, v); /* dk <= 256: i + L <= 256 */                                               \
            if ((i / (L)) & 1) s1 = V##_FMADD(v, v, s1);                                                     \
            else s0 = V##_FMADD(v, v, s0);                                                                   \
        }                                                                                                    \
        if (a->p->l2norm) fs /= sqrtf(V##_HSUM(V##_ADD(s0, s1)) + a->p->l2norm_eps);                         \
        f = V##_SET1(fs);                                                                                    \
        for (i = 0; i < dk; i += (L)) V##_STE(dst, AMXK_DTYPE_F32, i, dk - i, V##_MUL(V##_LDU(raw + i), f));  \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_copy_f32__32col__##isa(float *dst, size_t ldd, const float *src, size_t lds, size_t rows, size_t nb) { \
        size_t r, c;                                                                                         \
        if (nb != 32 && !(TAILS)) {                                                                          \
            amxk__gdn_copy_f32__1col__scalar(dst, ldd, src, lds, rows, nb);                                  \
            return;                                                                                          \
        }                                                                                                    \
        for (r = 0; r < rows; r++) {                                                                         \
            if (nb == 32) {                                                                                  \
                _Pragma("GCC unroll 4") for (c = 0; c < 32; c += (L)) V##_STU(dst + r * ldd + c, V##_LDU(src + r * lds + c)); \
                continue;                                                                                    \
            }                                                                                                \
            for (c = 0; c < nb; c += (L)) {                                                                  \
                const V##_LMASK_T m = V##_LMASK(nb - c);                                                       \
                V##_STM(dst + r * ldd + c, m, V##_LDM(src + r * lds + c, m));                                \
            }                                                                                                \
        }                                                                                                    \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_recurrent_prep_f32__##L##col__##isa(const float *kh, const float *qh, size_t n, size_t dk, \
                                                                  size_t dkp, float *kk, float *kq) {        \
        size_t r, i;                                                                                         \
        for (r = 0; r < n; r++) {                                                                            \
            const float *k = kh + r * dkp, *q = qh + r * dkp, *k2 = kh + (r + 1) * dkp;                      \
            const int two = r + 1 < n;                                                                       \
            V##_T x = V##_SET1(0.0f), y = V##_SET1(0.0f);                                                    \
            float sx, sy;                                                                                    \
            for (i = 0; (TAILS) ? i < dk : i + (L) <= dk; i += (L)) {                                        \
                const int tl = (TAILS) && dk - i < (L);                                                      \
                const V##_LMASK_T m = V##_LMASK(dk - i);                                                       \
                const V##_T kv = AMXK__GDN_LDS(V, k + i, tl, m);                                             \
                y = V##_FMADD(kv, AMXK__GDN_LDS(V, q + i, tl, m), y);                                        \
                if (two) x = V##_FMADD(kv, AMXK__GDN_LDS(V, k2 + i, tl, m), x);                              \
            }                                                                                                \
            sx = V##_HSUM(x), sy = V##_HSUM(y);                                                              \
            for (; i < dk; i++) { /* (no tail when TAILS) */                                                 \
                sy += k[i] * q[i];                                                                           \
                if (two) sx += k[i] * k2[i];                                                                 \
            }                                                                                                \
            kk[r] = two ? sx : 0.0f, kq[r] = sy;                                                             \
        }                                                                                                    \
    }

/* The chunked form's fp32 GEMM at one vector width: AMXK__GDN_GEMM_DEFINE(NAME, isa, V, L, MR, TAILS)
   defines NAME, C (+)= A B (see the scalar version) in MR x 2L register tiles: amxk__gdn_mk__<isa>, an
   R x L*NV block over k (R <= MR <= 8, NV compile-time constants), the last vector's columns masked with
   km when TAILS; without TAILS the columns past the last multiple of 2L go as one x L tiles, then to
   the scalar kernel. Every element is one FMA chain over k in order. */
#define AMXK__GDN_GEMM_DEFINE(NAME, isa, V, L, MR, TAILS)                                                      \
    AMXK__FORCE_INLINE void amxk__gdn_mk__##isa(int acc, size_t k, const float *A, size_t lda, const float *B, size_t ldb, \
                                                float *C, size_t ldc, int R, int NV, V##_LMASK_T km) {        \
        const int t0 = (TAILS) && NV == 1, t1 = (TAILS) && NV == 2; /* the masked vector */                  \
        V##_T c0[8], c1[8];                                                                                  \
        size_t kk;                                                                                           \
        int r;                                                                                               \
        _Pragma("GCC unroll 8") for (r = 0; r < R; r++) {                                                    \
            c0[r] = acc ? AMXK__GDN_LDS(V, C + r * ldc, t0, km) : V##_SET1(0.0f);                            \
            c1[r] = NV == 2 && acc ? AMXK__GDN_LDS(V, C + r * ldc + (L), t1, km) : V##_SET1(0.0f);           \
        }                                                                                                    \
        for (kk = 0; kk < k; kk++) {                                                                         \
            const V##_T b0 = AMXK__GDN_LDS(V, B + kk * ldb, t0, km);                                         \
            const V##_T b1 = NV == 2 ? AMXK__GDN_LDS(V, B + kk * ldb + (L), t1, km) : b0;                    \
            _Pragma("GCC unroll 8") for (r = 0; r < R; r++) {                                                \
                const V##_T av = V##_SET1(A[r * lda + kk]);                                                  \
                c0[r] = V##_FMADD(av, b0, c0[r]);                                                            \
                if (NV == 2) c1[r] = V##_FMADD(av, b1, c1[r]);                                               \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 8") for (r = 0; r < R; r++) {                                                    \
            if (t0) V##_STM(C + r * ldc, km, c0[r]);                                                         \
            else V##_STU(C + r * ldc, c0[r]);                                                                \
            if (t1) V##_STM(C + r * ldc + (L), km, c1[r]);                                                   \
            else if (NV == 2) V##_STU(C + r * ldc + (L), c1[r]);                                             \
        }                                                                                                    \
    }                                                                                                        \
    AMXK__FORCE_INLINE void amxk__gdn_mkr__##isa(int acc, size_t k, const float *A, size_t lda, const float *B, size_t ldb, \
                                                 float *C, size_t ldc, int R, int nv, V##_LMASK_T km) {       \
        if (nv == 2) amxk__gdn_mk__##isa(acc, k, A, lda, B, ldb, C, ldc, R, 2, km);                          \
        else amxk__gdn_mk__##isa(acc, k, A, lda, B, ldb, C, ldc, R, 1, km);                                  \
    }                                                                                                        \
    AMXK__PRIV void amxk__gdn_mksel__##isa(int acc, size_t k, const float *A, size_t lda, const float *B, size_t ldb, float *C, \
                                           size_t ldc, int mr, int nv, V##_LMASK_T km) {                      \
        switch (mr) {                                                                                        \
        case 8: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 8, nv, km); break;                      \
        case 7: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 7, nv, km); break;                      \
        case 6: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 6, nv, km); break;                      \
        case 5: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 5, nv, km); break;                      \
        case 4: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 4, nv, km); break;                      \
        case 3: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 3, nv, km); break;                      \
        case 2: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 2, nv, km); break;                      \
        default: amxk__gdn_mkr__##isa(acc, k, A, lda, B, ldb, C, ldc, 1, nv, km); break;                     \
        }                                                                                                    \
    }                                                                                                        \
    AMXK__PRIV void NAME(int acc, size_t m, size_t n, size_t k, const float *A, size_t lda, const float *B, size_t ldb, float *C, \
                         size_t ldc) {                                                                       \
        size_t i, j;                                                                                         \
        for (i = 0; i < m; i += (MR)) {                                                                      \
            const int mr = (int)AMXK__MIN((size_t)(MR), m - i);                                              \
            const float *Ai = A + i * lda;                                                                   \
            float *Ci = C + i * ldc;                                                                         \
            for (j = 0; (TAILS) ? j < n : j + 2 * (L) <= n; j += 2 * (L)) {                                  \
                const size_t nr = AMXK__MIN((size_t)(2 * (L)), n - j);                                       \
                amxk__gdn_mksel__##isa(acc, k, Ai, lda, B + j, ldb, Ci + j, ldc, mr, nr > (L) ? 2 : 1, V##_LMASK(nr > (L) ? nr - (L) : nr)); \
            }                                                                                                \
            if (TAILS) continue;                                                                             \
            for (; j + (L) <= n; j += (L)) amxk__gdn_mksel__##isa(acc, k, Ai, lda, B + j, ldb, Ci + j, ldc, mr, 1, V##_LMASK(L)); \
            if (j < n) amxk__gdn_gemm_f32__1x1__scalar(acc, (size_t)mr, n - j, k, Ai, lda, B + j, ldb, Ci + j, ldc); \
        }                                                                                                    \
    }

// >>avx2 -----------------------------------------------------------------------------------------
/* AVX2 kernels (the AVX2 level's table). */

#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN

/* 8 values (f32 or bf16) at p as f32; cnt < 8 reads only cnt values, built in registers (the other
   lanes 0): a stack copy's reload would stall (docs/notes/gdn.md). */
AMXK__FORCE_INLINE __m256 amxk__gdn_ld8__avx2(const void *p, amxk_dtype t, size_t i, size_t cnt) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 v = _mm256_setzero_ps();
    size_t k;
    if (cnt >= 8) return amxk__vload__avx2((const char *)p + i * (t == AMXK_DTYPE_F32 ? 4 : 2), t);
    for (k = 0; k < cnt; k++)
        v = _mm256_blendv_ps(v, _mm256_set1_ps(amxk__ld_elem(p, t, i + k)), _mm256_castsi256_ps(_mm256_cmpeq_epi32(lane, _mm256_set1_epi32((int)k))));
    return v;
}
AMXK__FORCE_INLINE void amxk__gdn_st8__avx2(void *p, amxk_dtype t, size_t i, size_t cnt, __m256 v) {
    if (cnt >= 8) {
        amxk__vstore__avx2((char *)p + i * (t == AMXK_DTYPE_F32 ? 4 : 2), t, v);
    } else {
        float tmp[8];
        size_t k;
        _mm256_storeu_ps(tmp, v);
        for (k = 0; k < cnt; k++) amxk__st_elem(p, t, i + k, tmp[k]);
    }
}

/* gdn's 8-lane vocabulary beside AMXK__V8: f32 rows, lane masks (first min(cnt, 8)), F32 / BF16 elements. */
#define AMXK__V8_LDU(p) _mm256_loadu_ps(p)
#define AMXK__V8_STU(p, x) _mm256_storeu_ps((p), (x))
#define AMXK__V8_LMASK_T __m256i
#define AMXK__V8_LMASK(cnt) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)AMXK__MIN((size_t)(cnt), (size_t)8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define AMXK__V8_LDM(p, m) _mm256_maskload_ps((p), (m))
#define AMXK__V8_STM(p, m, x) _mm256_maskstore_ps((p), (m), (x))
#define AMXK__V8_LDE amxk__gdn_ld8__avx2
#define AMXK__V8_STE amxk__gdn_st8__avx2

/* amxk_gdn_gating rows [t0, t1), 8 heads per vector: AMXK__GDN_GATING_DEFINE. */
AMXK__GDN_GATING_DEFINE(amxk__gdn_gating_f32__1x8__avx2, avx2, AMXK__V8, 8, amxk__gdn_ld8__avx2, amxk__gdn_st8__avx2)

/* silu(y) = y / (1 + exp(-y)) for the conv, 8 lanes (prefill rows, update and tails all use this one, so
   they agree bit for bit). x = -8 y log2 e in one multiply, n = round(x) (1.5*2^23 trick), f = x - n
   exactly; 2^(n/8) = 2^k 2^(j/8) (n = 8k + j) from an 8-entry vpermps table and the exponent bits;
   2^(f/8) by a cubic minimax polynomial (1.9e-8 relative); 1 + e in one FMA, one IEEE division: silu
   within 2.4e-7 relative of fp64 for |y| <= 8, 4.2e-7 for |y| <= 20 (docs/notes/gdn.md). y is clamped
   to [-87, 87] inside exp only (NaN in, NaN out). Not amxk__vsilu__avx2: different bits. */
AMXK__FORCE_INLINE __m256 amxk__conv_silu__avx2(__m256 y) {
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256 tab = _mm256_setr_ps(1.0f, 1.0905077327f, 1.1892071150f, 1.2968395547f, 1.4142135624f, 1.5422108254f, 1.6817928305f,
                                      1.8340080864f);
    __m256 yc = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(87.0f));
    __m256 x = _mm256_mul_ps(yc, _mm256_set1_ps(-11.541560327111707f)); /* -8 y log2 e */
    __m256 t = _mm256_add_ps(x, magic);
    __m256 f = _mm256_sub_ps(x, _mm256_sub_ps(t, magic)), p, s;
    __m256i ti = _mm256_castps_si256(t);
    p = _mm256_fmadd_ps(_mm256_set1_ps(0.000108396285f), f, _mm256_set1_ps(0.00375412641f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.0866434011f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.999999982f));
    s = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(_mm256_permutevar8x32_ps(tab, ti)),
                                             _mm256_slli_epi32(_mm256_srli_epi32(ti, 3), 23))); /* 2^(j/8) * 2^k */
    return _mm256_div_ps(y, _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.0f)));
}

/* 8 fp32 lanes -> bf16 (round to nearest even) in the high 16 bits of each 32-bit lane; a NaN (already
   quiet: v comes out of an FMA or the silu) is kept. Not amxk__cvt_f32_bf16__avx2 (the same values for
   such v): that one packs words, the split-lane stores need the word in place in its 32-bit lane. */
AMXK__FORCE_INLINE __m256i amxk__conv_rne__avx2(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff)));
    return _mm256_blendv_epi8(r, u, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/* 16 channels of x as two fp32 vectors: f32 in channel order; bf16 split into even / odd channels. */
AMXK__FORCE_INLINE void amxk__conv_ldg__avx2(const char *p, amxk_dtype xt, __m256 *v0, __m256 *v1) {
    if (xt == AMXK_DTYPE_F32) {
        *v0 = _mm256_loadu_ps((const float *)p), *v1 = _mm256_loadu_ps((const float *)p + 8);
    } else {
        __m256i v = _mm256_loadu_si256((const __m256i *)p);
        *v0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        *v1 = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)));
    }
}
/* 16 fp32 values in channel order -> dst[0..7] the even, dst[8..15] the odd ones (the bf16 lane order). */
AMXK__FORCE_INLINE void amxk__conv_splitg__avx2(const float *p, float *dst) {
    __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
    _mm256_storeu_ps(dst, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8)));
    _mm256_storeu_ps(dst + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8)));
}
/* 16 channels in amxk__conv_ldg__avx2's lane order for xt to p as ot (bf16 split lanes: one blend). */
AMXK__FORCE_INLINE void amxk__conv_stg__avx2(char *p, amxk_dtype xt, amxk_dtype ot, __m256 v0, __m256 v1, int BF, int NTS) {
    __m256i r0, r1;
    (void)BF, (void)NTS; /* (16 lanes only) */
    if (ot == AMXK_DTYPE_F32) {
        if (xt == AMXK_DTYPE_BF16) { /* even/odd -> 0-3 8-11 and 4-7 12-15 -> 0-7 and 8-15 */
            __m256 lo = _mm256_unpacklo_ps(v0, v1), hi = _mm256_unpackhi_ps(v0, v1);
            v0 = _mm256_permute2f128_ps(lo, hi, 0x20), v1 = _mm256_permute2f128_ps(lo, hi, 0x31);
        }
        _mm256_storeu_ps((float *)p, v0), _mm256_storeu_ps((float *)p + 8, v1);
        return;
    }
    r0 = amxk__conv_rne__avx2(v0), r1 = amxk__conv_rne__avx2(v1);
    if (xt == AMXK_DTYPE_BF16) r0 = _mm256_blend_epi16(_mm256_srli_epi32(r0, 16), r1, 0xAA);
    else r0 = _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(r0, 16), _mm256_srli_epi32(r1, 16)), 0xD8);
    _mm256_storeu_si256((__m256i *)p, r0);
}

/* The group's prefetches (AMXK__CONV_ROWS_DEFINE): the next x rows' lines at byte offset off (bf16:
   every other group, a 64-byte line holds two). */
AMXK__FORCE_INLINE void amxk__conv_pfg__avx2(const char *const *pf, size_t off, size_t xs, size_t v) {
    if (xs == 4 || !(v & 1)) _mm_prefetch(pf[0] + off, _MM_HINT_T0), _mm_prefetch(pf[1] + off, _MM_HINT_T0);
}
/* bytes (a multiple of 32) from the L1 stage src to dst by streaming stores. */
AMXK__FORCE_INLINE void amxk__conv_stream__avx2(char *dst, const char *src, size_t bytes) {
    size_t k;
    for (k = 0; k < bytes; k += 32) _mm256_stream_si256((__m256i *)(dst + k), _mm256_loadu_si256((const __m256i *)(src + k)));
}
/* The edge's output store (BF: 16 lanes only). */
AMXK__FORCE_INLINE void amxk__conv_ste__avx2(void *p, amxk_dtype t, size_t i, size_t cnt, __m256 v, int BF) {
    (void)BF;
    amxk__gdn_st8__avx2(p, t, i, cnt, v);
}
AMXK__CONV_ROWS_DEFINE(avx2, AMXK__V8, 8, 0)
AMXK__PRIV void amxk__conv_rows_f32__2x16__avx2(const amxk__conv_args *a, amxk__conv_sq q, size_t td, size_t tb1, size_t nch) {
    amxk__conv_rows2__avx2(a, q, td, tb1, nch, 0);
}
AMXK__PRIV void amxk__conv_edge_f32__1x8__avx2(const amxk__conv_args *a, amxk__conv_sq q, size_t t, size_t c0, size_t c1) {
    amxk__conv_edge__avx2(a, q, t, c0, c1, 0);
}

/* The sum of 8 lanes in a fixed order. */
AMXK__FORCE_INLINE float amxk__gdn_hsum8(__m256 v) {
    float t[8];
    _mm256_storeu_ps(t, v);
    return ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
}
#define AMXK__V8_HSUM amxk__gdn_hsum8
AMXK__GDN_QK_DEFINE(avx2, AMXK__V8, 8, 0)

/* The recurrent block, nb a multiple of 8 (the rest: the scalar tail): AMXK__GDN_RECURRENT_DEFINE. */
AMXK__GDN_RECURRENT_DEFINE(avx2, AMXK__V8, 8, 0)

/* C (+)= A B in 4x16 register tiles, then 4x8, the rest scalar. */
AMXK__GDN_GEMM_DEFINE(amxk__gdn_gemm_f32__4x16__avx2, avx2, AMXK__V8, 8, 4, 0)

AMXK__TARGET_END
#endif /* AMXK__HAS_AVX2 */

// >>avx512 ---------------------------------------------------------------------------------------
/* AVX-512 (F/BW/VL/DQ) kernels of the two AVX-512 tables (they differ only in the conv's bf16 output
   rounding). 16 lanes; every tail goes through lane masks (no scalar tails). */

#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512_BEGIN

/* The sum of 16 lanes in a fixed order. */
AMXK__FORCE_INLINE float amxk__gdn_hsum16(__m512 v) {
    float t[16];
    _mm512_storeu_ps(t, v);
    return (((t[0] + t[8]) + (t[4] + t[12])) + ((t[2] + t[10]) + (t[6] + t[14]))) +
           (((t[1] + t[9]) + (t[5] + t[13])) + ((t[3] + t[11]) + (t[7] + t[15])));
}

/* amxk__gdn_ld8__avx2 / st8's interface at 16 lanes (lane masks, no scalar tail). */
AMXK__FORCE_INLINE __m512 amxk__gdn_ld16__avx512(const void *p, amxk_dtype t, size_t i, size_t cnt) {
    return amxk__vload__avx512((const char *)p + i * (t == AMXK_DTYPE_F32 ? 4 : 2), t, AMXK__V16_MASK(cnt));
}
AMXK__FORCE_INLINE void amxk__gdn_st16__avx512(void *p, amxk_dtype t, size_t i, size_t cnt, __m512 v) {
    amxk__vstore__avx512((char *)p + i * (t == AMXK_DTYPE_F32 ? 4 : 2), t, v, AMXK__V16_MASK(cnt));
}

/* gdn's 16-lane vocabulary beside AMXK__V16: f32 rows, lane masks, F32 / BF16 elements. */
#define AMXK__V16_LDU(p) _mm512_loadu_ps(p)
#define AMXK__V16_STU(p, x) _mm512_storeu_ps((p), (x))
#define AMXK__V16_LMASK_T __mmask16
#define AMXK__V16_LMASK(cnt) AMXK__V16_MASK(cnt)
#define AMXK__V16_LDM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define AMXK__V16_STM(p, m, x) _mm512_mask_storeu_ps((p), (m), (x))
#define AMXK__V16_LDE amxk__gdn_ld16__avx512
#define AMXK__V16_STE amxk__gdn_st16__avx512

/* silu(y) = y / (1 + exp(-y)) at 16 lanes, for the conv (prefill rows, update and tails all use this
   one, so they agree bit for bit). exp(-y) = 2^(n/16) 2^(f/16), x = -16 y log2 e, n = round(x) by the
   1.5*2^23 trick inside an FMA; 2^(n/16) = 2^k 2^(j/16) from a 16-entry vpermps table of
   bits(A 2^(j/16)) - (j << 19) plus t's bits << 19; 2^(f/16) = A ((f + 23)^2 + B), f + 23 from the
   fraction's FMA (derivation: docs/notes/gdn.md): four FMAs and the divide. 2^(f/16) within 6.8e-7
   relative; silu within 1.0e-6 relative for |y| <= 8, 1.2e-6 for |y| <= 20, 1.9e-6 up to |y| = 79.
   y is clamped to [-79.5, 79.5] inside exp only by one vrangeps (A 2^(n/16) stays normal; NaN in, NaN
   out): beyond it 1 + exp(-y) is 1 (y > 0) or silu(y) is about y e^-79.5 (y < 0: absolute error below
   3e-35 |y|). Differs from the AVX2 silu and from amxk__vsilu__avx512 in the last bits. */
AMXK__FORCE_INLINE __m512 amxk__conv_silu__avx512(__m512 y) {
    const __m512 magic = _mm512_set1_ps(12582912.0f), lg = _mm512_set1_ps(-23.083120654223414f);
    const __m512i tab = _mm512_setr_epi32(0x3a76e634, 0x3a78ea4a, 0x3a769f6d, 0x3a749540, 0x3a72cea2, 0x3a714e8f, 0x3a701827, 0x3a6f2ead,
                                          0x3a6e9589, 0x3a6e5049, 0x3a6e62a5, 0x3a6ed07d, 0x3a6f9dde, 0x3a70cf04, 0x3a726858, 0x3a746e77);
    __m512 yc = _mm512_range_ps(y, _mm512_set1_ps(79.5f), 0x02);      /* sign(y) min(|y|, 79.5) */
    __m512 t = _mm512_fmadd_ps(yc, lg, magic);                          /* magic + n, n = round(-16 y log2 e) */
    __m512 g = _mm512_fmadd_ps(yc, lg, _mm512_sub_ps(_mm512_set1_ps(12582935.0f), t)), h, s; /* x - n + 23, one rounding */
    __m512i ti = _mm512_castps_si512(t);
    h = _mm512_fmadd_ps(g, g, _mm512_set1_ps(532.74462890625f));       /* 2^(f/16) / A */
    s = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_permutexvar_epi32(ti, tab), _mm512_slli_epi32(ti, 19))); /* A 2^(j/16) 2^k */
    return _mm512_div_ps(y, _mm512_fmadd_ps(h, s, _mm512_set1_ps(1.0f)));
}

/* amxk__conv_rne__avx2 at 16 lanes (the same rounding, NaN and reasons). */
AMXK__FORCE_INLINE __m512i amxk__conv_rne__avx512(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff)));
    return _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), u);
}

/* amxk__conv_ldg__avx2 at 32 channels (bf16: one 64-byte load, one shift, one mask). */
AMXK__FORCE_INLINE void amxk__conv_ldg__avx512(const char *p, amxk_dtype xt, __m512 *v0, __m512 *v1) {
    if (xt == AMXK_DTYPE_F32) {
        *v0 = _mm512_loadu_ps((const float *)p), *v1 = _mm512_loadu_ps((const float *)p + 16);
    } else {
        __m512i v = _mm512_loadu_si512((const void *)p);
        *v0 = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        *v1 = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
    }
}
/* 32 channels of x as two fp32 vectors in channel order (bf16: two vpmovzxwd and two shifts). */
AMXK__FORCE_INLINE void amxk__conv_ld32c__avx512(const char *p, amxk_dtype xt, __m512 *v0, __m512 *v1) {
    if (xt == AMXK_DTYPE_F32) {
        *v0 = _mm512_loadu_ps((const float *)p), *v1 = _mm512_loadu_ps((const float *)p + 16);
    } else {
        *v0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
        *v1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p + 1)), 16));
    }
}
/* 32 fp32 values in channel order -> dst[0..15] the even, dst[16..31] the odd ones (bf16 lane order). */
AMXK__FORCE_INLINE void amxk__conv_splitg__avx512(const float *p, float *dst) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __m512 lo = _mm512_loadu_ps(p), hi = _mm512_loadu_ps(p + 16);
    _mm512_storeu_ps(dst, _mm512_permutex2var_ps(lo, ie, hi));
    _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(lo, io, hi));
}
/* vcvtne2ps2bf16 (AVX512_BF16): words 0-15 = bf16(lo), 16-31 = bf16(hi), round to nearest even with
   subnormal inputs read as zero (DAZ; MXCSR not consulted), a NaN made quiet ((u >> 16) | 0x40, as
   amxk__f32_to_bf16). For the AVX512_BF16 table only. Inline asm: the AVX-512 region's target has no
   avx512bf16 and one kernel body serves both tables; the emulated build runs the same rule in C. */
AMXK__FORCE_INLINE __m512i amxk__gdn_cvtne2__avx512(__m512 hi, __m512 lo) {
    __m512i r;
#if defined(AMXK_AVX512_EMULATE)
    float f[32];
    uint16_t w[32];
    int i;
    _mm512_storeu_ps(f, lo), _mm512_storeu_ps(f + 16, hi);
    for (i = 0; i < 32; i++) {
        uint32_t u = amxk__f32_bits(f[i]);
        if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
        w[i] = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40u) : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    memcpy(&r, w, 64);
#else
    __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(hi), "v"(lo));
#endif
    return r;
}

/* 64 bytes to p: streamed when NTS (p 64-byte aligned; plain in the emulated build), else unaligned. */
AMXK__FORCE_INLINE void amxk__conv_st64__avx512(char *p, __m512i v, int NTS) {
#if !defined(AMXK_AVX512_EMULATE)
    if (NTS) {
        _mm512_stream_si512((__m512i *)p, v);
        return;
    }
#endif
    (void)NTS;
    _mm512_storeu_si512((void *)p, v);
}

/* 32 channels in the lane order of amxk__conv_ldg__avx512 for xt to p as ot: split lanes go back in
   channel order with one two-source permute per vector (f32) or one word blend (bf16). BF (AVX512_BF16
   table): bf16 outputs by one vcvtne2ps2bf16 (+ a word permute for split lanes): subnormals become 0. */
AMXK__FORCE_INLINE void amxk__conv_stg__avx512(char *p, amxk_dtype xt, amxk_dtype ot, __m512 v0, __m512 v1, int BF,
                                                                        int NTS) {
    __m512i r0, r1;
    if (ot == AMXK_DTYPE_BF16 && BF) {
        r0 = amxk__gdn_cvtne2__avx512(v1, v0);
        if (xt == AMXK_DTYPE_BF16) { /* words: even channels, then odd -> interleaved */
            const __m512i iw = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3,
                                                18, 2, 17, 1, 16, 0);
            r0 = _mm512_permutexvar_epi16(iw, r0);
        }
        amxk__conv_st64__avx512(p, r0, NTS);
        return;
    }
    if (ot == AMXK_DTYPE_F32) {
        if (xt == AMXK_DTYPE_BF16) {
            const __m512i il = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
            const __m512i ih = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
            __m512 lo = _mm512_permutex2var_ps(v0, il, v1), hi = _mm512_permutex2var_ps(v0, ih, v1);
            v0 = lo, v1 = hi;
        }
        amxk__conv_st64__avx512(p, _mm512_castps_si512(v0), NTS), amxk__conv_st64__avx512(p + 64, _mm512_castps_si512(v1), NTS);
        return;
    }
    r0 = amxk__conv_rne__avx512(v0), r1 = amxk__conv_rne__avx512(v1);
    if (xt == AMXK_DTYPE_BF16) {
        r0 = _mm512_mask_blend_epi16((__mmask32)0xAAAAAAAAu, _mm512_srli_epi32(r0, 16), r1);
    } else { /* the high words of r0 (channels 0-15), then of r1 (16-31) */
        const __m512i iw = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17, 15,
                                            13, 11, 9, 7, 5, 3, 1);
        r0 = _mm512_permutex2var_epi16(r0, iw, r1);
    }
    amxk__conv_st64__avx512(p, r0, NTS);
}

/* The group's prefetches (AMXK__CONV_ROWS_DEFINE): the next x rows' lines at byte offset off. */
AMXK__FORCE_INLINE void amxk__conv_pfg__avx512(const char *const *pf, size_t off, size_t xs, size_t v) {
    (void)v;
    _mm_prefetch(pf[0] + off, _MM_HINT_T0), _mm_prefetch(pf[1] + off, _MM_HINT_T0);
    if (xs == 4) _mm_prefetch(pf[0] + off + 64, _MM_HINT_T0), _mm_prefetch(pf[1] + off + 64, _MM_HINT_T0);
}
/* bytes (a multiple of 64) from the L1 stage to dst by streaming stores, whole lines if dst is aligned. */
AMXK__FORCE_INLINE void amxk__conv_stream__avx512(char *dst, const char *src, size_t bytes) {
    size_t k;
#if !defined(AMXK_AVX512_EMULATE)
    if ((uintptr_t)dst % 64 == 0) {
        for (k = 0; k < bytes; k += 64) _mm512_stream_si512((__m512i *)(dst + k), _mm512_loadu_si512((const void *)(src + k)));
        return;
    }
#endif
    for (k = 0; k < bytes; k += 32) _mm256_stream_si256((__m256i *)(dst + k), _mm256_loadu_si256((const __m256i *)(src + k)));
}
/* The edge's output store: BF (the AVX512_BF16 table) rounds bf16 outputs as its rows do. */
AMXK__FORCE_INLINE void amxk__conv_ste__avx512(void *p, amxk_dtype t, size_t i, size_t cnt, __m512 v, int BF) {
    if (BF && t == AMXK_DTYPE_BF16)
        _mm256_mask_storeu_epi16((char *)p + i * 2, AMXK__V16_MASK(cnt), _mm512_castsi512_si256(amxk__gdn_cvtne2__avx512(_mm512_setzero_ps(), v)));
    else amxk__gdn_st16__avx512(p, t, i, cnt, v);
}
AMXK__CONV_ROWS_DEFINE(avx512, AMXK__V16, 16, 1)

/* One 32-channel column of the W = 4 conv over n tokens: x0 points at x row td - 3, o0 at out row td,
   both at the column's first channel (rows ldxb / ldob bytes apart); taps at wt + j*ldw and the bias at
   bs, in channel order. Taps and bias stay in registers, a window of the last 3 x rows slides down the
   column (each x row loaded once); bf16 x widened in channel order (no lane permute on output). The
   2x32 rows' arithmetic, the same bits. nts: streaming stores (every output row 64-byte aligned: each
   store is whole lines). xt/ot/BF compile-time constants. */
AMXK__FORCE_INLINE void amxk__conv_col4__avx512(const amxk__conv_args *a, const char *x0, size_t ldxb, char *o0,
                                                                         size_t ldob, size_t n, const float *wt, size_t ldw,
                                                                         const float *bs, int nts, amxk_dtype xt, amxk_dtype ot,
                                                                         int BF) {
    const __m512 w0a = _mm512_loadu_ps(wt), w0b = _mm512_loadu_ps(wt + 16), w1a = _mm512_loadu_ps(wt + ldw),
                 w1b = _mm512_loadu_ps(wt + ldw + 16), w2a = _mm512_loadu_ps(wt + 2 * ldw), w2b = _mm512_loadu_ps(wt + 2 * ldw + 16),
                 w3a = _mm512_loadu_ps(wt + 3 * ldw), w3b = _mm512_loadu_ps(wt + 3 * ldw + 16), ba = _mm512_loadu_ps(bs),
                 bb = _mm512_loadu_ps(bs + 16);
    const int silu = a->silu;
    __m512 p3a, p3b, p2a, p2b, p1a, p1b;
    size_t i;
    amxk__conv_ld32c__avx512(x0, xt, &p3a, &p3b);
    amxk__conv_ld32c__avx512(x0 + ldxb, xt, &p2a, &p2b);
    amxk__conv_ld32c__avx512(x0 + 2 * ldxb, xt, &p1a, &p1b);
    x0 += 3 * ldxb;
    for (i = 0; i < n; i++, x0 += ldxb, o0 += ldob) {
        __m512 ca, cb, ya, yb;
        amxk__conv_ld32c__avx512(x0, xt, &ca, &cb);
        ya = _mm512_fmadd_ps(w0a, p3a, ba), yb = _mm512_fmadd_ps(w0b, p3b, bb);
        ya = _mm512_fmadd_ps(w1a, p2a, ya), yb = _mm512_fmadd_ps(w1b, p2b, yb);
        ya = _mm512_fmadd_ps(w2a, p1a, ya), yb = _mm512_fmadd_ps(w2b, p1b, yb);
        ya = _mm512_fmadd_ps(w3a, ca, ya), yb = _mm512_fmadd_ps(w3b, cb, yb);
        p3a = p2a, p3b = p2b, p2a = p1a, p2b = p1b, p1a = ca, p1b = cb;
        if (silu) ya = amxk__conv_silu__avx512(ya), yb = amxk__conv_silu__avx512(yb);
        amxk__conv_stg__avx512(o0, AMXK_DTYPE_F32, ot, ya, yb, BF, nts);
    }
}

/* amxk__conv_col4__avx512 at columns c.. with its dtypes and rounding as compile-time constants. */
AMXK__FORCE_INLINE void amxk__conv_col4_sel__avx512(const amxk__conv_args *a, const char *x0, size_t ldxb, char *o0, size_t ldsb,
                                                    size_t n, size_t c, int nts, int bx, int bo, int bf) {
    const float *w = a->w + c, *bias = a->bias + c;
    if (bx && bo && bf) amxk__conv_col4__avx512(a, x0, ldxb, o0, ldsb, n, w, a->dimp, bias, nts, AMXK_DTYPE_BF16, AMXK_DTYPE_BF16, 1);
    else if (bo && bf) amxk__conv_col4__avx512(a, x0, ldxb, o0, ldsb, n, w, a->dimp, bias, nts, AMXK_DTYPE_F32, AMXK_DTYPE_BF16, 1);
    else if (bx && bo) amxk__conv_col4__avx512(a, x0, ldxb, o0, ldsb, n, w, a->dimp, bias, nts, AMXK_DTYPE_BF16, AMXK_DTYPE_BF16, 0);
    else if (bx) amxk__conv_col4__avx512(a, x0, ldxb, o0, ldsb, n, w, a->dimp, bias, nts, AMXK_DTYPE_BF16, AMXK_DTYPE_F32, 0);
    else if (bo) amxk__conv_col4__avx512(a, x0, ldxb, o0, ldsb, n, w, a->dimp, bias, nts, AMXK_DTYPE_F32, AMXK_DTYPE_BF16, 0);
    else amxk__conv_col4__avx512(a, x0, ldxb, o0, ldsb, n, w, a->dimp, bias, nts, AMXK_DTYPE_F32, AMXK_DTYPE_F32, 0);
}
/* conv_rows (AVX-512), W = 4: slabs of AMXK__CONV_SLAB tokens, each swept left to right in 32-channel
   columns (amxk__conv_col4__avx512): x and out move as a few row streams advancing 64 bytes per column
   (docs/notes/gdn.md); taps straight from the packed weight. Other widths: amxk__conv_rows2__avx512.
   Large outputs (a->nts) with 64-byte aligned rows: streaming stores of whole lines; bf16 ones through
   an L1 stage of AMXK__CONV_STAGE bytes (slab rows x 512 channels), then out row by row. */
AMXK__FORCE_INLINE void amxk__conv_rows__Tx32__avx512(const amxk__conv_args *a, amxk__conv_sq q, size_t td,
                                                                               size_t tb1, size_t nch, int bf) {
    const size_t xs = a->esz, os = amxk_dtype_size(a->ot), ldxb = a->ldx * xs, ldob = a->ldo * os;
    const int nts = a->nts && (uintptr_t)a->out % 64 == 0 && ldob % 64 == 0, bx = a->xt == AMXK_DTYPE_BF16, bo = a->ot == AMXK_DTYPE_BF16;
    size_t c, ts;
    if (a->width != 4) {
        amxk__conv_rows2__avx512(a, q, td, tb1, nch, bf);
        return;
    }
    const int stg = nts && bo; /* bf16 outputs: columns into an L1 stage, then whole rows out */
    const size_t cc = stg ? AMXK__CONV_STAGE / (AMXK__CONV_SLAB * 2) : nch, ldsb = stg ? cc * 2 : ldob;
    char stage[AMXK__CONV_STAGE] __attribute__((aligned(64)));
    for (ts = td; ts < tb1; ts += AMXK__CONV_SLAB) {
        const size_t n = AMXK__MIN((size_t)AMXK__CONV_SLAB, tb1 - ts);
        size_t c0, c1, i, k;
        for (c0 = 0; c0 < nch; c0 = c1) {
            c1 = AMXK__MIN(nch, c0 + cc);
            for (c = c0; c < c1; c += 32) {
                const char *x0 = (const char *)a->x + ((q.t0 + ts - 3) * a->ldx + c) * xs;
                char *o0 = stg ? stage + (c - c0) * 2 : (char *)a->out + ((q.t0 + ts) * a->ldo + c) * os;
                amxk__conv_col4_sel__avx512(a, x0, ldxb, o0, ldsb, n, c, nts && !stg, bx, bo, bf);
            }
            if (stg) /* (c1 - c0) * 2 bytes per row: whole 64-byte lines */
                for (i = 0; i < n; i++) {
                    char *dst = (char *)a->out + ((q.t0 + ts + i) * a->ldo + c0) * 2;
                    for (k = 0; k < (c1 - c0) * 2; k += 64)
                        amxk__conv_st64__avx512(dst + k, _mm512_load_si512((const void *)(stage + i * ldsb + k)), 1);
                }
        }
    }
    if (nts) _mm_sfence();
}
AMXK__PRIV void amxk__conv_rows_f32__Tx32__avx512(const amxk__conv_args *a, amxk__conv_sq q, size_t td, size_t tb1, size_t nch) {
    amxk__conv_rows__Tx32__avx512(a, q, td, tb1, nch, 0);
}
/* The AVX512_BF16 table's rows: bf16 outputs rounded by vcvtne2ps2bf16 (amxk__conv_stg__avx512). */
AMXK__PRIV void amxk__conv_rows_f32__Tx32__avx512bf16(const amxk__conv_args *a, amxk__conv_sq q, size_t td, size_t tb1, size_t nch) {
    amxk__conv_rows__Tx32__avx512(a, q, td, tb1, nch, 1);
}

/* Conv outputs of token t of a sequence, channels [c0, c1), any history (AMXK__CONV_ROWS_DEFINE). */
AMXK__PRIV void amxk__conv_edge_f32__1x16__avx512(const amxk__conv_args *a, amxk__conv_sq q, size_t t, size_t c0, size_t c1) {
    amxk__conv_edge__avx512(a, q, t, c0, c1, 0);
}
AMXK__PRIV void amxk__conv_edge_f32__1x16__avx512bf16(const amxk__conv_args *a, amxk__conv_sq q, size_t t, size_t c0, size_t c1) {
    amxk__conv_edge__avx512(a, q, t, c0, c1, 1);
}

#define AMXK__V16_HSUM amxk__gdn_hsum16
AMXK__GDN_QK_DEFINE(avx512, AMXK__V16, 16, 1)

/* amxk_gdn_gating rows [t0, t1), 16 heads per vector (masked tail): AMXK__GDN_GATING_DEFINE. */
AMXK__GDN_GATING_DEFINE(amxk__gdn_gating_f32__1x16__avx512, avx512, AMXK__V16, 16, amxk__gdn_ld16__avx512, amxk__gdn_st16__avx512)

/* The recurrent block, any nb <= 32 (the last vector masked: its own tail): AMXK__GDN_RECURRENT_DEFINE. */
AMXK__GDN_RECURRENT_DEFINE(avx512, AMXK__V16, 16, 1)

/* C (+)= A B in 8x32 register tiles; row and column tails by smaller tiles and lane masks. */
AMXK__GDN_GEMM_DEFINE(amxk__gdn_gemm_f32__8x32__avx512, avx512, AMXK__V16, 16, 8, 1)

AMXK__TARGET_END
#endif /* AMXK__HAS_AVX512 */

// >>amx ------------------------------------------------------------------------------------------
/* No AMX kernels in this module: the AMX level uses the AVX512_BF16 table (see DESIGN AND LEVELS). */

// >>dispatch -------------------------------------------------------------------------------------

static const amxk__gdn_kernels amxk__gdn_kernels_scalar = {
    amxk__conv_rows_f32__1x1__scalar, amxk__conv_edge_f32__1x1__scalar, 1,
    amxk__gdn_gating_f32__1x1__scalar,
    amxk__gdn_qk_f32__1col__scalar,
    amxk__gdn_gemm_f32__1x1__scalar,
    amxk__gdn_copy_f32__1col__scalar,
    NULL, /* the one-token block needs nothing besides the normalised rows */
    amxk__gdn_recurrent_f32__1col__scalar, amxk__gdn_recurrent_f32__1col__scalar, 1, AMXK__GDN_CB, 4 * AMXK__GDN_CB,
};
#if AMXK__HAS_AVX2
static const amxk__gdn_kernels amxk__gdn_kernels_avx2 = {
    amxk__conv_rows_f32__2x16__avx2, amxk__conv_edge_f32__1x8__avx2, 16,
    amxk__gdn_gating_f32__1x8__avx2,
    amxk__gdn_qk_f32__8col__avx2,
    amxk__gdn_gemm_f32__4x16__avx2,
    amxk__gdn_copy_f32__32col__avx2,
    amxk__gdn_recurrent_prep_f32__8col__avx2,
    amxk__gdn_recurrent_f32__32col__avx2, amxk__gdn_recurrent_f32__1col__scalar, 8, AMXK__GDN_CB, 9 * AMXK__GDN_CB,
};
#endif
#if AMXK__HAS_AVX512
/* The AVX-512 tables: the same but for the conv (rows, edge); the recurrent block is its own tail. */
#define AMXK__GDN_KERNELS_AVX512(rows, edge)                                                                   \
    {rows, edge, 32, amxk__gdn_gating_f32__1x16__avx512, amxk__gdn_qk_f32__16col__avx512, amxk__gdn_gemm_f32__8x32__avx512, \
     amxk__gdn_copy_f32__32col__avx512, amxk__gdn_recurrent_prep_f32__16col__avx512, amxk__gdn_recurrent_f32__32col__avx512, \
     amxk__gdn_recurrent_f32__32col__avx512, 1, AMXK__GDN_CB, 9 * AMXK__GDN_CB}
static const amxk__gdn_kernels amxk__gdn_kernels_avx512 =
    AMXK__GDN_KERNELS_AVX512(amxk__conv_rows_f32__Tx32__avx512, amxk__conv_edge_f32__1x16__avx512);
/* AVX512_BF16 and up: the conv's bf16 outputs rounded by vcvtne2ps2bf16. */
static const amxk__gdn_kernels amxk__gdn_kernels_avx512bf16 =
    AMXK__GDN_KERNELS_AVX512(amxk__conv_rows_f32__Tx32__avx512bf16, amxk__conv_edge_f32__1x16__avx512bf16);
#endif
/* The table of a vector level (amxk__vec_level): see DESIGN AND LEVELS. */
AMXK__PRIV const amxk__gdn_kernels *amxk__gdn_kernels_for(amxk_tier level) {
    (void)level;
#if AMXK__HAS_AVX512
    if (level >= AMXK_TIER_AVX512_BF16) return &amxk__gdn_kernels_avx512bf16;
    if (level >= AMXK_TIER_AVX512) return &amxk__gdn_kernels_avx512;
#endif
#if AMXK__HAS_AVX2
    if (level >= AMXK_TIER_AVX2) return &amxk__gdn_kernels_avx2;
#endif
    return &amxk__gdn_kernels_scalar;
}

/* The workspace of a call: the context's kernels, worker count, params and mode. */
AMXK__PRIV void amxk__gdn_layout(const amxk_ctx *ctx, const amxk_gdn_params *p, amxk_gdn_mode mode, amxk__gdn_plan *pl) {
    amxk__gdn_chunk_ws cw;
    amxk__gdn_rec_ws rw;
    size_t f = 0;
    pl->k = amxk__gdn_kernels_for(amxk__vec_level(ctx));
    amxk__gdn_chunk_layout(p->dk, p->dv, &cw);
    amxk__gdn_rec_layout(p->dk, pl->k, &rw);
    if (mode != AMXK_GDN_CHUNKED) f = AMXK__MAX(f, rw.total);
    if (mode != AMXK_GDN_RECURRENT) f = AMXK__MAX(f, cw.total);
    pl->ws_worker = AMXK__ROUND_UP(f * 4, (size_t)AMXK_ALIGN);
    pl->ws_total = pl->ws_worker * (size_t)amxk__workers(ctx);
    pl->n_cb = AMXK__CEIL_DIV(p->dv, pl->k->rec_cb);
}

/* Conv task (THREADING): time block b of sequence n, tokens [tb0, tb1), by conv_rows and conv_edge. */
static void amxk__conv_task(void *task_ctx, size_t task, int worker) {
    const amxk__conv_args *a = (const amxk__conv_args *)task_ctx;
    const amxk__gdn_kernels *k = a->k;
    const size_t n = task / a->n_tb, W = a->width, dim = a->dim, nrow = dim - dim % k->conv_cols;
    const int32_t s = amxk__conv_slot(a, n);
    size_t tb0, tb1, td, t;
    amxk__conv_sq q;
    (void)worker;
    amxk__conv_seq(a, n, &q.t0, &q.len);
    tb0 = task % a->n_tb * a->tb;
    q.init = a->has_init ? a->has_init[n] != 0 : 1;
    q.cs = a->cache_seqlens ? (long)a->cache_seqlens[n] : -1;
    q.he = a->acc ? (long)a->acc[n] - 1 + (long)W - 1 : (long)a->slen;
    q.sb = a->st && s >= 0 ? a->st + (size_t)s * a->s_slot * a->esz : NULL;
    if (q.len == 0 && tb0 == 0 && !q.init) amxk__conv_store_state(a, q, 0, dim); /* zero tokens from a zero state */
    if (tb0 >= q.len) return;
    tb1 = AMXK__MIN(q.len, tb0 + a->tb);
    if (s < 0) { /* +0.0 is all zero bits in f32 and bf16 */
        const size_t os = amxk_dtype_size(a->ot);
        for (t = tb0; t < tb1; t++) memset((char *)a->out + (q.t0 + t) * a->ldo * os, 0, dim * os);
        return;
    }
    td = AMXK__MAX(tb0, W - 1); /* tokens [td, tb1) have all their taps in x */
    if (td < tb1 && nrow) k->conv_rows(a, q, td, tb1, nrow);
    for (t = tb0; t < tb1; t++) {
        const size_t c0 = t >= td ? nrow : 0;
        if (c0 < dim) k->conv_edge(a, q, t, c0, dim);
    }
    if (tb0 == 0) amxk__conv_store_state(a, q, 0, dim);
}

/* Transposes a rows x cols block: dst[c*ldd + r] = src[r*lds + c]. */
AMXK__PRIV void amxk__gdn_transpose(const float *src, size_t lds, size_t rows, size_t cols, float *dst, size_t ldd) {
    size_t r, c;
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}

/* Gates of value head hv, tokens [t, t + n): g[r], be[r] from in->g / in->beta or the level's gating. */
AMXK__INLINE void amxk__gdn_gates(const amxk__gdn_args *a, size_t t, size_t n, size_t hv, float *g, float *be) {
    const amxk_gdn_inputs *in = a->in;
    amxk__gating_args ga;
    size_t r, es;
    if (in->g) {
        for (r = 0; r < n; r++) g[r] = in->g[(t + r) * in->ldg + hv], be[r] = in->beta[(t + r) * in->ldbeta + hv];
        return;
    }
    es = amxk_dtype_size(in->ab_dtype);
    ga.hv = 1, ga.lda = in->lda, ga.ldb = in->ldb, ga.abt = in->ab_dtype, ga.bt = AMXK_DTYPE_F32;
    ga.a = (const char *)in->a + (t * in->lda + hv) * es, ga.b = (const char *)in->b + (t * in->ldb + hv) * es;
    ga.alt = amxk__gdn_pdt(in->A_log_dtype), ga.dtt = amxk__gdn_pdt(in->dt_bias_dtype);
    ga.A_log = (const char *)in->A_log + hv * amxk_dtype_size(ga.alt), ga.dt_bias = (const char *)in->dt_bias + hv * amxk_dtype_size(ga.dtt);
    ga.bsp = a->p->softplus_beta, ga.thr = a->p->softplus_threshold, ga.g = g, ga.beta = be, ga.ldg = 1, ga.ldbeta = 1;
    a->k->gating(&ga, 0, n);
}

/* Chunked form for one (sequence, value head): S K-first [Dk][Dv] (ld Dv), tokens [t0, t0+len). MATH's
   A, V', O and S1 in that order (the decay mask exponentiated only for s <= r). */
AMXK__PRIV void amxk__gdn_chunked(const amxk__gdn_args *a, float *S, size_t t0, size_t len, size_t hv, float *ws) {
    const size_t C = AMXK__GDN_C, dk = a->dk, dv = a->dv, h = hv / a->G;
    amxk__gdn_chunk_ws L;
    float *Kc, *Qc, *KT, *Vc, *Vp, *Oc, *Gm, *Am, *gam, *bet;
    size_t c0, r, s, i, j;
    amxk__gdn_chunk_layout(dk, dv, &L);
    Kc = ws + L.kc, Qc = ws + L.qc, KT = ws + L.kt, Vc = ws + L.vc, Vp = ws + L.vp, Oc = ws + L.oc;
    Gm = ws + L.gm, Am = ws + L.am, gam = ws + L.gam, bet = ws + L.bet;
    for (c0 = 0; c0 < len; c0 += C) {
        const size_t n = AMXK__MIN(C, len - c0);
        float run = 0.0f, gl;
        amxk__gdn_gates(a, t0 + c0, n, hv, gam, bet);
        for (r = 0; r < n; r++) {
            size_t t = t0 + c0 + r;
            a->k->qk(a, t, h, 0, Kc + r * dk);
            a->k->qk(a, t, h, 1, Qc + r * dk);
            for (j = 0; j < dv; j++) Vc[r * dv + j] = amxk__ld_elem(a->in->v, a->in->dtype, t * a->in->ldv + hv * dv + j);
            run += gam[r];
            gam[r] = run;
        }
        gl = gam[n - 1];
        amxk__gdn_transpose(Kc, dk, n, dk, KT, C);
        a->k->gemm(0, n, n, dk, Kc, dk, KT, C, Gm, C);
        for (r = 0; r < n; r++)
            for (s = 0; s < r; s++) Am[r * C + s] = -(bet[r] * Gm[r * C + s] * expf(gam[r] - gam[s]));
        /* V': R = beta (V - exp(gam) K S0), then forward substitution V'_r = R_r - sum_{s<r} A[r][s] V'_s */
        a->k->gemm(0, n, dv, dk, Kc, dk, S, dv, Vp, dv);
        for (r = 0; r < n; r++) {
            float e = expf(gam[r]);
            for (j = 0; j < dv; j++) Vp[r * dv + j] = bet[r] * (Vc[r * dv + j] - e * Vp[r * dv + j]);
        }
        for (r = 1; r < n; r++) a->k->gemm(1, 1, dv, r, Am + r * C, C, Vp, dv, Vp + r * dv, dv); /* Am holds -A */
        a->k->gemm(0, n, dv, dk, Qc, dk, S, dv, Oc, dv);
        for (r = 0; r < n; r++) {
            float e = expf(gam[r]);
            for (j = 0; j < dv; j++) Oc[r * dv + j] *= e;
        }
        a->k->gemm(0, n, n, dk, Qc, dk, KT, C, Gm, C);
        for (r = 0; r < n; r++)
            for (s = 0; s < n; s++) Gm[r * C + s] = s <= r ? Gm[r * C + s] * expf(gam[r] - gam[s]) : 0.0f;
        a->k->gemm(1, n, dv, n, Gm, C, Vp, dv, Oc, dv);
        for (r = 0; r < n; r++)
            for (j = 0; j < dv; j++) amxk__st_elem(a->o, a->ot, (t0 + c0 + r) * a->ldo + hv * dv + j, Oc[r * dv + j]);
        for (i = 0; i < dk; i++)
            for (r = 0; r < n; r++) KT[i * C + r] *= expf(gl - gam[r]);
        {
            float e = expf(gl);
            for (i = 0; i < dk * dv; i++) S[i] *= e;
        }
        a->k->gemm(1, dk, dv, n, KT, C, Vp, dv, S, dv);
    }
}

/* Recurrent form for one unit (value heads [hv0, hv0 + vg) of one sequence): per chunk of C tokens the
   normalised q/k rows once for all of them, then per head the gates, then each column block of the
   state (rec_cb columns, 16 KiB at Dk = 128, kept in L1 for the whole chunk) through rec_block and
   rec_tail. next: the task's next unit's first state head (prefetched in decode-length calls) or NULL. */
AMXK__PRIV void amxk__gdn_recurrent(const amxk__gdn_args *a, int32_t slot, size_t t0, size_t len, size_t hv0, float *ws,
                                     const float *next) {
    const amxk__gdn_kernels *k = a->k;
    const size_t C = AMXK__GDN_C, dk = a->dk, dv = a->dv, dkp = AMXK__ROUND_UP(dk, (size_t)16), h = hv0 / a->G, CB = k->rec_cb;
    amxk__gdn_rec_ws L;
    float *kh, *qh, *al, *be, *kk, *kq, *sm, *blk;
    size_t c0, r, cb, hv;
    amxk__gdn_rec_layout(dk, k, &L);
    kh = ws + L.kh, qh = ws + L.qh, al = ws + L.al, be = ws + L.be;
    kk = ws + L.kk, kq = ws + L.kq, sm = ws + L.sm, blk = ws + L.blk;
    for (c0 = 0; c0 < len; c0 += C) {
        const size_t n = AMXK__MIN(C, len - c0);
        /* A K-first column block read in place has rows Dv floats apart: at Dv = 128 (512 bytes) its
           lines fall into 1/4 of the L1 sets and the 16 KiB block does not stay in L1; longer chunks
           copy it to a contiguous [Dk][CB] scratch first (same arithmetic, so the same bits). */
        const int kcopy = n >= 4 && dv > CB;
        for (r = 0; r < n; r++) { /* once for the task's vg value heads (they share key head h) */
            k->qk(a, t0 + c0 + r, h, 0, kh + r * dkp);
            k->qk(a, t0 + c0 + r, h, 1, qh + r * dkp);
        }
        if (k->rec_prep) k->rec_prep(kh, qh, n, dk, dkp, kk, kq);
        for (hv = hv0; hv < hv0 + a->vg; hv++) {
            float *head = amxk__gdn_head(a, slot, hv);
            const float *nxt = hv + 1 < hv0 + a->vg ? amxk__gdn_head(a, slot, hv + 1) : next;
            /* Decode-length tasks are memory-bound: while a block's state is read, the next head's state
               (nxt, when known) is prefetched, pfb bytes per state row of each block, so the whole
               next head (hsz floats) arrives over the n_cb blocks. */
            const size_t pfb = AMXK__ROUND_UP(AMXK__CEIL_DIV(a->hsz * 4, a->n_cb * dk), (size_t)64);
            amxk__gdn_gates(a, t0 + c0, n, hv, al, be);
            for (r = 0; r < n; r++) al[r] = expf(al[r]);
            for (cb = 0; cb < a->n_cb; cb++) {
                const size_t j0 = cb * CB, nb = AMXK__MIN(CB, dv - j0), nm = nb - nb % k->rec_cols;
                const char *pf = nxt && len <= 4 && (cb + 1) * dk * pfb <= a->hsz * 4 ? (const char *)nxt + cb * dk * pfb : NULL;
                size_t lds;
                float *S;
                if (a->p->state_v_first) { /* rows j0..j0+nb of [Dv][Dk] -> [Dk][CB] scratch */
                    S = blk, lds = CB;
                    amxk__gdn_transpose(head + j0 * dk, dk, nb, dk, S, lds);
                } else if (kcopy) { /* columns j0..j0+nb of [Dk][Dv] -> [Dk][CB] scratch (see above) */
                    S = blk, lds = CB;
                    k->copy(S, lds, head + j0, dv, dk, nb);
                } else {
                    S = head + j0, lds = dv;
                }
                if (nm) {
                    amxk__gdn_qkpf qp;
                    const size_t nn = c0 + n < len ? AMXK__MIN(C, len - c0 - n) : 0, es = amxk_dtype_size(a->in->dtype);
                    if (nn && n >= 4) { /* the next chunk's q/k rows over this chunk's vg * n_cb block calls */
                        const size_t nblk = a->vg * a->n_cb, bi = (hv - hv0) * a->n_cb + cb;
                        qp.base[0] = (const char *)a->in->k + ((t0 + c0 + n) * a->in->ldk + h * dk) * es;
                        qp.base[1] = (const char *)a->in->q + ((t0 + c0 + n) * a->in->ldq + h * dk) * es;
                        qp.ld[0] = a->in->ldk * es, qp.ld[1] = a->in->ldq * es;
                        qp.rowb = dk * es, qp.nl = qp.rowb / 64 + 1;
                        qp.items = qp.nl * 2 * nn, qp.per = AMXK__CEIL_DIV(qp.items, nblk * n);
                        qp.start = bi * n * qp.per;
                    }
                    k->rec_block(a, S, lds, t0 + c0, n, hv, j0, nm, kh, qh, al, be, kk, kq, sm, pf, pfb,
                                 nn && n >= 4 ? &qp : NULL, n >= 4);
                }
                if (nm < nb)
                    k->rec_tail(a, S + nm, lds, t0 + c0, n, hv, j0 + nm, nb - nm, kh, qh, al, be, kk, kq, sm, NULL, 0, NULL,
                                n >= 4);
                if (a->p->state_v_first) amxk__gdn_transpose(S, lds, dk, nb, head + j0 * dk, dk);
                else if (kcopy) k->copy(head + j0, dv, S, lds, dk, nb);
            }
        }
    }
}

/* Tokens [t0, t0 + len) of one unit on the state of slot s, in the call's mode (next: amxk__gdn_recurrent). */
AMXK__PRIV void amxk__gdn_run(const amxk__gdn_args *a, int32_t s, size_t t0, size_t len, size_t hv0, float *ws, const float *next) {
    size_t hv;
    if (a->mode == AMXK_GDN_CHUNKED) { /* AUTO: recurrent (DESIGN AND LEVELS) */
        amxk__gdn_chunk_ws L;
        amxk__gdn_chunk_layout(a->dk, a->dv, &L);
        for (hv = hv0; hv < hv0 + a->vg; hv++) {
            float *head = amxk__gdn_head(a, s, hv), *S = head;
            if (a->p->state_v_first) {
                S = ws + L.sx;
                amxk__gdn_transpose(head, a->dk, a->dv, a->dk, S, a->dv);
            }
            amxk__gdn_chunked(a, S, t0, len, hv, ws);
            if (a->p->state_v_first) amxk__gdn_transpose(S, a->dv, a->dk, a->dv, head, a->dk);
        }
        return;
    }
    amxk__gdn_recurrent(a, s, t0, len, hv0, ws, next);
}

/* One unit (THREADING): value heads [hv0, hv0 + vg) of sequence unit / (HV / vg); last: none follows. */
AMXK__PRIV void amxk__gdn_unit(const amxk__gdn_args *a, size_t unit, int worker, int last) {
    const size_t ups = a->hv / a->vg; /* units per sequence */
    size_t n = unit / ups, hv0 = (unit % ups) * a->vg, hv;
    size_t t0 = (size_t)a->qsl[n], len = (size_t)(a->qsl[n + 1] - a->qsl[n]), hb = a->hsz * sizeof(float), t, j;
    const int32_t *row = a->acc ? a->slot + n * a->spec_cols : NULL; /* SPECULATIVE: the sequence's slots */
    int32_t s = row ? row[a->acc[n] - 1] : a->slot ? a->slot[n] : (int32_t)n;
    int init = a->has_init ? a->has_init[n] != 0 : 1;
    float *ws = (float *)(a->ws + (size_t)worker * a->ws_worker);
    if (s < 0) {
        for (t = t0; t < t0 + len; t++)
            for (j = 0; j < a->vg * a->dv; j++) amxk__st_elem(a->o, a->ot, t * a->ldo + hv0 * a->dv + j, 0.0f);
        return;
    }
    if (row) { /* token t from the state of r[t-1] (t = 0: the start slot) into r[t] */
        for (t = 0; t < len; t++) {
            int32_t src = t ? row[t - 1] : s, dst = row[t];
            for (hv = hv0; hv < hv0 + a->vg; hv++) {
                if (t == 0 && !init) memset(amxk__gdn_head(a, dst, hv), 0, hb);
                else if (src != dst) memcpy(amxk__gdn_head(a, dst, hv), amxk__gdn_head(a, src, hv), hb);
            }
            amxk__gdn_run(a, dst, t0 + t, 1, hv0, ws, NULL);
        }
        return;
    }
    if (!init) /* validated: the call will succeed (an empty sequence too: zero tokens from a zero state) */
        for (hv = hv0; hv < hv0 + a->vg; hv++) memset(amxk__gdn_head(a, s, hv), 0, hb);
    if (len == 0) return;
    { /* the first state head of the task's next unit (units run in order within a task) */
        const float *next = NULL;
        size_t nn = (unit + 1) / ups, nh = ((unit + 1) % ups) * a->vg;
        if (!last && nn < a->n_seqs && a->qsl[nn + 1] > a->qsl[nn] && (!a->has_init || a->has_init[nn])) {
            int32_t ns = a->slot ? a->slot[nn] : (int32_t)nn;
            if (ns >= 0) next = amxk__gdn_head(a, ns, nh);
        }
        amxk__gdn_run(a, s, t0, len, hv0, ws, next);
    }
}

static void amxk__gdn_task(void *task_ctx, size_t task, int worker) {
    const amxk__gdn_args *a = (const amxk__gdn_args *)task_ctx;
    const size_t n_units = a->n_seqs * (a->hv / a->vg), u1 = AMXK__MIN(n_units, (task + 1) * a->upt);
    size_t u;
    for (u = task * a->upt; u < u1; u++) amxk__gdn_unit(a, u, worker, u + 1 == u1);
}

/* Slots -1 or (with a state) in [0, n_slots), the given ones distinct: 0 or a status. */
AMXK__PRIV amxk_status amxk__gdn_check_slots(size_t n_seqs, const int32_t *slot, size_t n_slots, int have_state) {
    size_t n, m;
    for (n = 0; n < n_seqs; n++) {
        int32_t s = slot ? slot[n] : (int32_t)n;
        if (s == -1) continue;
        if (s < 0 || (have_state && (size_t)s >= n_slots)) return AMXK_ERR_ARG;
        if (slot && have_state)
            for (m = 0; m < n; m++)
                if (slot[m] == s) return AMXK_ERR_ARG;
    }
    return AMXK_OK;
}
/* Shared validation of (n_seqs, qsl, slots): 0 or a status. *t_end = qsl[n_seqs]. */
AMXK__PRIV amxk_status amxk__gdn_check_seqs(size_t n_seqs, const int32_t *qsl, const int32_t *slot, size_t n_slots,
                                            int have_state, size_t *t_end) {
    size_t n;
    *t_end = 0;
    if (n_seqs == 0) return AMXK_OK;
    if (!qsl) return AMXK_ERR_NULL;
    if (qsl[0] < 0) return AMXK_ERR_ARG;
    for (n = 0; n < n_seqs; n++)
        if (qsl[n + 1] < qsl[n]) return AMXK_ERR_ARG;
    *t_end = (size_t)qsl[n_seqs];
    return amxk__gdn_check_slots(n_seqs, slot, n_slots, have_state);
}

/* SPECULATIVE validation (query_start_loc already checked): a_n in [1, cols], len_n <= cols, start
   slots -1 or in range; the written slots of non-pad sequences in range, distinct over the call, and no
   other sequence's start slot. 0 or a status. */
AMXK__PRIV amxk_status amxk__gdn_check_spec(size_t n_seqs, const int32_t *qsl, const int32_t *slot, size_t cols, const int32_t *acc,
                                            size_t n_slots) {
    size_t n, m, t, u;
    for (n = 0; n < n_seqs; n++) /* first every a_n and length (the slot checks read other rows) */
        if (acc[n] < 1 || (size_t)acc[n] > cols || (size_t)(qsl[n + 1] - qsl[n]) > cols) return AMXK_ERR_ARG;
    for (n = 0; n < n_seqs; n++) {
        const int32_t *r = slot + n * cols;
        size_t len = (size_t)(qsl[n + 1] - qsl[n]);
        if (r[acc[n] - 1] < -1 || r[acc[n] - 1] >= (int32_t)n_slots) return AMXK_ERR_ARG;
        if (r[acc[n] - 1] == -1) continue;
        for (t = 0; t < len; t++) {
            if (r[t] < 0 || r[t] >= (int32_t)n_slots) return AMXK_ERR_ARG;
            for (m = 0; m < n_seqs; m++) { /* r[t] vs the other sequences' start slots and every earlier write */
                const int32_t *q = slot + m * cols;
                if (m != n && q[acc[m] - 1] == r[t]) return AMXK_ERR_ARG;
                if (m > n || q[acc[m] - 1] == -1) continue;
                for (u = 0; u < (m == n ? t : (size_t)(qsl[m + 1] - qsl[m])); u++)
                    if (q[u] == r[t]) return AMXK_ERR_ARG;
            }
        }
    }
    return AMXK_OK;
}

/* >>alias: the rule is ERRORS' ALIASING (top comment), applied by amxk__alias (amxk.h) after a call's
   other checks: an earlier task's writes must not change what a later one reads (an index read back as
   a float's bits would address memory outside the pool). */

// >>api ------------------------------------------------------------------------------------------

AMXK_DEF amxk_status amxk_conv1d_pack_size(size_t dim, size_t width, size_t *bytes) {
    if (!bytes) return AMXK_ERR_NULL;
    if (dim == 0 || width == 0 || width > AMXK__CONV_MAXW || dim > ((size_t)1 << 36)) return AMXK_ERR_SHAPE;
    *bytes = sizeof(amxk__conv_hdr) + AMXK__ROUND_UP((width + 1) * amxk__conv_dimp(dim) * 4, (size_t)AMXK_ALIGN);
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_conv1d_pack(const amxk_ctx *ctx, void *dst, size_t dst_bytes, const void *w, amxk_dtype wt,
                                      size_t dim, size_t width, size_t ldw, const float *bias) {
    size_t need, dimp, c, j, wsz = amxk_dtype_size(wt);
    amxk__conv_hdr h;
    float *body;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!dst || !w) return AMXK_ERR_NULL;
    if ((s = amxk_conv1d_pack_size(dim, width, &need)) != AMXK_OK) return s;
    if (wt != AMXK_DTYPE_F32 && wt != AMXK_DTYPE_BF16 && wt != AMXK_DTYPE_F16) return AMXK_ERR_DTYPE;
    if (ldw < width) return AMXK_ERR_STRIDE;
    if ((uintptr_t)dst % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    if (dst_bytes < need) return AMXK_ERR_WORKSPACE;
    {
        const amxk__rgn wr[1] = {{dst, need, 0}}, rd[2] = {{w, ((dim - 1) * ldw + width) * wsz, 0}, {bias, dim * 4, 0}};
        if ((s = amxk__alias(wr, 1, rd, 2)) != AMXK_OK) return s;
    }
    dimp = amxk__conv_dimp(dim);
    memset(&h, 0, sizeof h);
    memcpy(h.magic, "AMXKCONV", 8);
    h.version = AMXK__CONV_VERSION;
    h.has_bias = bias ? 1u : 0u;
    h.dim = dim;
    h.width = width;
    memcpy(dst, &h, sizeof h);
    body = (float *)((char *)dst + sizeof h);
    memset(body, 0, need - sizeof h);
    for (c = 0; c < dim; c++) {
        for (j = 0; j < width; j++) body[j * dimp + c] = amxk__ld_elem(w, wt, c * ldw + j);
        if (bias) body[width * dimp + c] = bias[c];
    }
    return AMXK_OK;
}

/* Reads and checks a packed conv weight; *w = taps, *bias = bias row. */
AMXK__PRIV amxk_status amxk__conv_packed(const void *packed, size_t bytes, size_t *dim, size_t *width, const float **w,
                                         const float **bias) {
    amxk__conv_hdr h;
    size_t need;
    if (!packed) return AMXK_ERR_NULL;
    if (bytes < sizeof h) return AMXK_ERR_FORMAT;
    memcpy(&h, packed, sizeof h);
    if (memcmp(h.magic, "AMXKCONV", 8) != 0 || h.version != AMXK__CONV_VERSION || h.has_bias > 1) return AMXK_ERR_FORMAT;
    for (need = 0; need < sizeof h.reserved; need++)
        if (h.reserved[need]) return AMXK_ERR_FORMAT; /* every header field validated */
    if (amxk_conv1d_pack_size((size_t)h.dim, (size_t)h.width, &need) != AMXK_OK || bytes < need) return AMXK_ERR_FORMAT;
    if ((uintptr_t)packed % 4) return AMXK_ERR_ALIGN;
    *dim = (size_t)h.dim;
    *width = (size_t)h.width;
    *w = (const float *)((const char *)packed + sizeof h);
    *bias = *w + *width * amxk__conv_dimp(*dim);
    return AMXK_OK;
}

AMXK__PRIV amxk_status amxk__conv_run(const amxk_ctx *ctx, const void *packed, size_t packed_bytes, int silu, size_t n_seqs,
                                      const int32_t *qsl, const int32_t *slot, const uint8_t *has_init,
                                      const int32_t *cache_seqlens, const void *x, amxk_dtype xt, size_t ldx, void *out,
                                      amxk_dtype ot, size_t ldo, const amxk_conv_state *st) {
    amxk__conv_args args;
    amxk__conv_args *a = &args;
    size_t dim, width, t_end, n, xs = amxk_dtype_size(xt), os = amxk_dtype_size(ot), xb, ob;
    const float *w, *bias;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if ((s = amxk__conv_packed(packed, packed_bytes, &dim, &width, &w, &bias)) != AMXK_OK) return s;
    if (!amxk__gdn_fb(xt) || !amxk__gdn_fb(ot)) return AMXK_ERR_DTYPE;
    if (n_seqs == 0) return AMXK_OK;
    if (!x || !out) return AMXK_ERR_NULL;
    if (ldx < dim || ldo < dim) return AMXK_ERR_STRIDE;
    memset(&args, 0, sizeof args);
    if (st) {
        size_t span;
        if (!st->data && st->state_len) return AMXK_ERR_NULL;
        if (st->dtype != xt) return AMXK_ERR_DTYPE;
        if (st->n_slots == 0) return AMXK_ERR_SHAPE;
        if (st->state_len + 1 < width) return AMXK_ERR_SHAPE;
        if (st->state_len) {
            int sd_ok = st->dim_stride >= 1 && (st->state_len == 1 || st->tok_stride >= (dim - 1) * st->dim_stride + 1);
            int ds_ok = st->tok_stride >= 1 && (dim == 1 || st->dim_stride >= (st->state_len - 1) * st->tok_stride + 1);
            if (!sd_ok && !ds_ok) return AMXK_ERR_STRIDE;
            span = (dim - 1) * st->dim_stride + (st->state_len - 1) * st->tok_stride + 1;
            if (st->n_slots > 1 && st->slot_stride < span) return AMXK_ERR_STRIDE;
            a->st = (char *)st->data;
        }
        a->n_slots = st->n_slots, a->slen = st->state_len;
        a->s_slot = st->n_slots > 1 ? st->slot_stride : 0, a->s_dim = st->dim_stride, a->s_tok = st->tok_stride;
    }
    if (qsl) {
        if ((s = amxk__gdn_check_seqs(n_seqs, qsl, slot, a->n_slots, st != NULL, &t_end)) != AMXK_OK) return s;
    } else {
        if ((s = amxk__gdn_check_slots(n_seqs, slot, a->n_slots, st != NULL)) != AMXK_OK) return s;
        t_end = n_seqs;
    }
    if (cache_seqlens)
        for (n = 0; n < n_seqs; n++)
            if (cache_seqlens[n] < 0) return AMXK_ERR_ARG;
    if (st && st->num_accepted_tokens) {
        if (cache_seqlens) return AMXK_ERR_ARG;
        for (n = 0; n < n_seqs; n++)
            if (st->num_accepted_tokens[n] < 1 || (size_t)st->num_accepted_tokens[n] + width > st->state_len + 2) return AMXK_ERR_ARG;
    }
    if (t_end == 0) return AMXK_OK;
    xb = ((t_end - 1) * ldx + dim) * xs;
    ob = ((t_end - 1) * ldo + dim) * os;
    { /* >>alias: out and the state pool vs each other, x, the weights and every index array */
        const size_t sb = a->st ? ((a->n_slots - 1) * a->s_slot + (dim - 1) * a->s_dim + (a->slen - 1) * a->s_tok + 1) * xs : 0;
        const amxk__rgn wr[2] = {{out, ob, 0}, {a->st, sb, 0}};
        const amxk__rgn rd[7] = {{x, xb, 0},
                                 {packed, packed_bytes, 0},
                                 {qsl, (n_seqs + 1) * 4, 0},
                                 {slot, n_seqs * 4, 0},
                                 {has_init, n_seqs, 0},
                                 {cache_seqlens, n_seqs * 4, 0},
                                 {st ? st->num_accepted_tokens : NULL, n_seqs * 4, 0}};
        if ((s = amxk__alias(wr, 2, rd, 7)) != AMXK_OK) return s;
    }
    a->w = w, a->bias = bias, a->dim = dim, a->dimp = amxk__conv_dimp(dim), a->width = width, a->silu = silu != 0;
    a->n_seqs = n_seqs, a->qsl = qsl, a->slot = slot, a->cache_seqlens = cache_seqlens, a->has_init = has_init;
    a->acc = st ? st->num_accepted_tokens : NULL;
    a->x = x, a->xt = xt, a->ot = ot, a->ldx = ldx, a->ldo = ldo, a->out = out, a->esz = xs;
    { /* time blocks: >= W-1 tokens (so only block 0 reads history), at most AMXK__CONV_MAXTB per sequence */
        size_t maxlen = 0, ln, t0;
        for (n = 0; n < n_seqs; n++) amxk__conv_seq(a, n, &t0, &ln), maxlen = AMXK__MAX(maxlen, ln);
        a->tb = AMXK__MAX(AMXK__MAX((size_t)AMXK__CONV_TB, width), AMXK__CEIL_DIV(maxlen, (size_t)AMXK__CONV_MAXTB));
        a->n_tb = AMXK__MAX((size_t)1, AMXK__CEIL_DIV(maxlen, a->tb));
    }
    a->nts = ob >= AMXK__CONV_NT_BYTES && (uintptr_t)out % 32 == 0 && ldo * os % 32 == 0;
    a->k = amxk__gdn_kernels_for(amxk__vec_level(ctx));
    amxk__parallel(ctx, amxk__conv_task, a, n_seqs * a->n_tb);
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_conv1d_prefill(const amxk_ctx *ctx, const void *packed, size_t packed_bytes, int silu, size_t n_seqs,
                                         const int32_t *qsl, const int32_t *slot, const uint8_t *has_init, const void *x,
                                         amxk_dtype xt, size_t ldx, void *out, amxk_dtype ot, size_t ldo,
                                         const amxk_conv_state *st) {
    if (n_seqs && !qsl) return AMXK_ERR_NULL;
    return amxk__conv_run(ctx, packed, packed_bytes, silu, n_seqs, qsl, slot, has_init, NULL, x, xt, ldx, out, ot, ldo, st);
}

AMXK_DEF amxk_status amxk_conv1d_update(const amxk_ctx *ctx, const void *packed, size_t packed_bytes, int silu, size_t n_seqs,
                                        const int32_t *qsl, const int32_t *slot, const int32_t *cache_seqlens, const void *x,
                                        amxk_dtype xt, size_t ldx, void *out, amxk_dtype ot, size_t ldo,
                                        const amxk_conv_state *st) {
    if (!st) return AMXK_ERR_NULL;
    if (cache_seqlens && st->state_len == 0) return AMXK_ERR_SHAPE;
    return amxk__conv_run(ctx, packed, packed_bytes, silu, n_seqs, qsl, slot, NULL, cache_seqlens, x, xt, ldx, out, ot, ldo, st);
}

AMXK_DEF amxk_status amxk_gdn_gating(const amxk_ctx *ctx, size_t n_tokens, size_t hv, const void *a, size_t lda, const void *b,
                                     size_t ldb, amxk_dtype abt, const void *A_log, amxk_dtype alt, const void *dt_bias,
                                     amxk_dtype dtt, float bsp, float thr, float *g, size_t ldg, void *beta, amxk_dtype bt,
                                     size_t ldbeta) {
    amxk__gating_args ga;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (hv == 0) return AMXK_ERR_SHAPE;
    alt = amxk__gdn_pdt(alt), dtt = amxk__gdn_pdt(dtt);
    if (!amxk__gdn_fb(abt) || !amxk__gdn_fb(bt) || !amxk__gdn_fb(alt) || !amxk__gdn_fb(dtt)) return AMXK_ERR_DTYPE;
    if (!(bsp > 0.0f)) return AMXK_ERR_ARG;
    if (n_tokens == 0) return AMXK_OK;
    if (!a || !b || !A_log || !dt_bias || !g || !beta) return AMXK_ERR_NULL;
    if (lda < hv || ldb < hv || ldg < hv || ldbeta < hv) return AMXK_ERR_STRIDE;
    { /* >>alias: g and beta vs each other and every input (rows are read after earlier rows are written) */
        const size_t nt = n_tokens - 1, ab = amxk_dtype_size(abt);
        const amxk__rgn wr[2] = {{g, (nt * ldg + hv) * 4, 0}, {beta, (nt * ldbeta + hv) * amxk_dtype_size(bt), 0}};
        const amxk__rgn rd[4] = {{a, (nt * lda + hv) * ab, 0}, {b, (nt * ldb + hv) * ab, 0},
                                 {A_log, hv * amxk_dtype_size(alt), 0}, {dt_bias, hv * amxk_dtype_size(dtt), 0}};
        amxk_status s = amxk__alias(wr, 2, rd, 4);
        if (s != AMXK_OK) return s;
    }
    ga.hv = hv, ga.a = a, ga.b = b, ga.lda = lda, ga.ldb = ldb, ga.abt = abt, ga.bt = bt, ga.A_log = A_log, ga.dt_bias = dt_bias;
    ga.alt = alt, ga.dtt = dtt, ga.bsp = bsp, ga.thr = thr, ga.g = g, ga.beta = beta, ga.ldg = ldg, ga.ldbeta = ldbeta;
    amxk__gdn_kernels_for(amxk__vec_level(ctx))->gating(&ga, 0, n_tokens);
    return AMXK_OK;
}

AMXK_DEF amxk_gdn_params amxk_gdn_params_default(size_t h, size_t hv, size_t dk, size_t dv) {
    amxk_gdn_params p;
    memset(&p, 0, sizeof p);
    p.n_k_heads = h, p.n_v_heads = hv, p.dk = dk, p.dv = dv;
    p.scale = dk ? 1.0f / sqrtf((float)dk) : 1.0f;
    p.l2norm = 1;
    p.l2norm_eps = 1e-6f;
    p.softplus_beta = 1.0f;
    p.softplus_threshold = 20.0f;
    return p;
}

/* params and mode: 0 or a status. */
AMXK__PRIV amxk_status amxk__gdn_check_params(const amxk_gdn_params *p, amxk_gdn_mode mode) {
    if (!p) return AMXK_ERR_NULL;
    if (p->n_k_heads == 0 || p->n_v_heads == 0 || p->n_v_heads % p->n_k_heads) return AMXK_ERR_SHAPE;
    if (p->n_v_heads > ((size_t)1 << 20)) return AMXK_ERR_SHAPE;
    if (p->dk == 0 || p->dv == 0 || p->dk > AMXK__GDN_MAXD || p->dv > AMXK__GDN_MAXD) return AMXK_ERR_SHAPE;
    if (!(p->l2norm_eps >= 0.0f) || (p->state_v_first != 0 && p->state_v_first != 1)) return AMXK_ERR_ARG;
    if (mode != AMXK_GDN_AUTO && mode != AMXK_GDN_RECURRENT && mode != AMXK_GDN_CHUNKED) return AMXK_ERR_ARG;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_gdn_workspace_size(const amxk_ctx *ctx, const amxk_gdn_params *p, amxk_gdn_mode mode, size_t *bytes) {
    amxk__gdn_plan pl;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!bytes) return AMXK_ERR_NULL;
    if ((s = amxk__gdn_check_params(p, mode)) != AMXK_OK) return s;
    amxk__gdn_layout(ctx, p, mode, &pl);
    *bytes = pl.ws_total;
    return AMXK_OK;
}

AMXK_DEF amxk_status amxk_gdn(const amxk_ctx *ctx, const amxk_gdn_params *p, amxk_gdn_mode mode, const amxk_gdn_inputs *in,
                              size_t n_seqs, const int32_t *qsl, const int32_t *slot, const uint8_t *has_init,
                              const amxk_gdn_state *st, void *o, amxk_dtype ot, size_t ldo, void *ws, size_t ws_bytes) {
    amxk__gdn_args a;
    amxk__gdn_plan pl;
    amxk_gdn_params pc;  /* the call's copies: the tasks read these, never *p or *in (o may overlap them) */
    amxk_gdn_inputs ic;
    size_t H, HV, dk, dv, t_end, es, ob, hsz;
    amxk_status s;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!in || !st) return AMXK_ERR_NULL;
    if ((s = amxk__gdn_check_params(p, mode)) != AMXK_OK) return s;
    pc = *p, ic = *in, p = &pc, in = &ic;
    H = p->n_k_heads, HV = p->n_v_heads, dk = p->dk, dv = p->dv, hsz = dk * dv;
    if (!amxk__gdn_fb(in->dtype) || !amxk__gdn_fb(ot) || (!in->g && !amxk__gdn_fb(in->ab_dtype))) return AMXK_ERR_DTYPE;
    if (!in->g && !(p->softplus_beta > 0.0f)) return AMXK_ERR_ARG;
    if (st->n_slots == 0) return AMXK_ERR_SHAPE;
    if (st->n_slots > 1 && st->slot_stride < HV * hsz) return AMXK_ERR_STRIDE;
    if (!in->g && (!amxk__gdn_fb(amxk__gdn_pdt(in->A_log_dtype)) || !amxk__gdn_fb(amxk__gdn_pdt(in->dt_bias_dtype))))
        return AMXK_ERR_DTYPE;
    if (in->num_accepted_tokens) { /* SPECULATIVE: slot_idx is [n_seqs][spec_cols] */
        if (n_seqs && !slot) return AMXK_ERR_NULL;
        if (in->spec_cols == 0 || in->spec_cols > ((size_t)1 << 20)) return AMXK_ERR_ARG;
        if ((s = amxk__gdn_check_seqs(n_seqs, qsl, NULL, st->n_slots, 0, &t_end)) != AMXK_OK) return s;
        if ((s = amxk__gdn_check_spec(n_seqs, qsl, slot, in->spec_cols, in->num_accepted_tokens, st->n_slots)) != AMXK_OK) return s;
    } else if ((s = amxk__gdn_check_seqs(n_seqs, qsl, slot, st->n_slots, 1, &t_end)) != AMXK_OK) {
        return s;
    }
    if (t_end == 0) return AMXK_OK;
    if (!in->q || !in->k || !in->v || !o || !st->data) return AMXK_ERR_NULL;
    if (in->g ? !in->beta : (!in->a || !in->b || !in->A_log || !in->dt_bias)) return AMXK_ERR_NULL;
    if (in->ldq < H * dk || in->ldk < H * dk || in->ldv < HV * dv || ldo < HV * dv) return AMXK_ERR_STRIDE;
    if (in->g ? (in->ldg < HV || in->ldbeta < HV) : (in->lda < HV || in->ldb < HV)) return AMXK_ERR_STRIDE;
    amxk__gdn_layout(ctx, p, mode, &pl);
    if (!ws || ws_bytes < pl.ws_total) return AMXK_ERR_WORKSPACE;
    if ((uintptr_t)ws % AMXK_ALIGN) return AMXK_ERR_ALIGN;
    es = amxk_dtype_size(in->dtype);
    ob = ((t_end - 1) * ldo + HV * dv) * amxk_dtype_size(ot);
    { /* >>alias: o, the state pool and the workspace vs each other and every input the call reads */
        const size_t nt = t_end - 1, ab = amxk_dtype_size(in->ab_dtype), ns = n_seqs;
        const int fused = !in->g;
        const amxk__rgn wr[3] = {
            {o, ob, 0}, {st->data, ((st->n_slots - 1) * (st->n_slots > 1 ? st->slot_stride : 0) + HV * hsz) * 4, 0}, {ws, pl.ws_total, 0}};
        const amxk__rgn rd[13] = {{in->q, (nt * in->ldq + H * dk) * es, 0},
                                  {in->k, (nt * in->ldk + H * dk) * es, 0},
                                  {in->v, (nt * in->ldv + HV * dv) * es, 0},
                                  {fused ? NULL : in->g, (nt * in->ldg + HV) * 4, 0},
                                  {fused ? NULL : in->beta, (nt * in->ldbeta + HV) * 4, 0},
                                  {fused ? in->a : NULL, (nt * in->lda + HV) * ab, 0},
                                  {fused ? in->b : NULL, (nt * in->ldb + HV) * ab, 0},
                                  {fused ? in->A_log : NULL, HV * amxk_dtype_size(amxk__gdn_pdt(in->A_log_dtype)), 0},
                                  {fused ? in->dt_bias : NULL, HV * amxk_dtype_size(amxk__gdn_pdt(in->dt_bias_dtype)), 0},
                                  {qsl, (ns + 1) * 4, 0},
                                  {slot, ns * (in->num_accepted_tokens ? in->spec_cols : 1) * 4, 0},
                                  {has_init, ns, 0},
                                  {in->num_accepted_tokens, ns * 4, 0}};
        if ((s = amxk__alias(wr, 3, rd, 13)) != AMXK_OK) return s;
    }
    memset(&a, 0, sizeof a);
    a.p = p, a.in = in, a.G = HV / H, a.dk = dk, a.dv = dv, a.hv = HV;
    a.n_seqs = n_seqs, a.qsl = qsl, a.slot = slot, a.has_init = has_init;
    a.acc = in->num_accepted_tokens, a.spec_cols = in->spec_cols;
    a.st = st->data, a.s_slot = st->n_slots > 1 ? st->slot_stride : 0, a.hsz = hsz;
    a.o = o, a.ot = ot, a.ldo = ldo, a.ws = (char *)ws, a.ws_worker = pl.ws_worker, a.n_cb = pl.n_cb, a.mode = mode;
    a.k = pl.k;
    { /* vg and upt: see THREADING (a unit normalises q/k once for all of its heads) */
        const size_t nw = (size_t)amxk__workers(ctx);
        a.vg = 1, a.upt = 1;
        if (t_end - (size_t)qsl[0] >= 8 * n_seqs) {
            size_t d;
            for (d = a.G; d > 1; d--)
                if (a.G % d == 0 && n_seqs * HV / d >= 4 * nw) break;
            a.vg = d;
        } else {
            a.upt = AMXK__MAX((size_t)1, n_seqs * HV / (8 * nw));
        }
        amxk__parallel(ctx, amxk__gdn_task, &a, AMXK__CEIL_DIV(n_seqs * HV / a.vg, a.upt));
    }
    return AMXK_OK;
}

#endif /* AMXK_IMPLEMENTATION */
