/* gdn_layer.c - one Gated DeltaNet layer core with amxk_gdn.h: conv1d -> gating -> delta rule over a
   batch of prompts (prefill), then a few decode steps, checked against a straightforward double-precision
   recomputation of the whole token history.

   Shapes: a small Qwen3-Next-like layer (H = 4 key heads, HV = 8 value heads, Dk = Dv = 64, conv width 4,
   no conv bias, silu), three prompts of 37, 64 and 5 tokens in one packed batch, state slots 2, 0 and 5
   of a pool of 6, then 4 decode steps (one token per sequence per step).

   Per token: mixed = [q | k | v] (the in_proj output, random here) -> causal conv1d + silu with a
   conv-state pool (amxk_conv1d_prefill, then amxk_conv1d_update) -> q, k, v are views into the conv
   output (token stride = conv dim) -> the delta rule with fused gating (a, b, A_log, dt_bias) and
   in-kernel l2norm (amxk_gdn; prefill in AMXK_GDN_AUTO, decode in AMXK_GDN_RECURRENT). The states stay in
   the pools between calls. The check recomputes everything for every sequence's full history in double
   and prints the largest output error relative to the output's RMS, then OK.

   Build and run from the repository root (`make examples` builds it):
       cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -I. -Iexamples examples/gdn_layer.c -o build/gdn_layer -lm
       ./build/gdn_layer */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION
#include "amxk_gdn.h"
#include "amxk_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H = 4, HV = 8, DK = 64, DV = 64, W = 4, DIM = 2 * H * DK + HV * DV, NSEQ = 3, NSLOT = 6, STEPS = 4 };
static const int prompt_len[NSEQ] = {37, 64, 5};
static const int32_t slot_of[NSEQ] = {2, 0, 5};
#define MAXT 80 /* longest history: 64 + STEPS */

static uint32_t rng = 12345u;
static float frand(void) { /* uniform [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return (float)(rng >> 8) * (1.0f / 8388608.0f) - 1.0f;
}
static float bf(float x) { return amxk_bf16_to_f32(amxk_f32_to_bf16(x)); }
static void *xalloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) exit(1);
    memset(p, 0, n ? n : 64);
    return p;
}
static void check(amxk_status s, const char *what) {
    if (s != AMXK_OK) {
        fprintf(stderr, "%s: %s\n", what, amxk_status_string(s));
        exit(1);
    }
}

/* the whole history of every sequence, for the reference */
static float hist_x[NSEQ][MAXT][DIM], hist_a[NSEQ][MAXT][HV], hist_b[NSEQ][MAXT][HV];
static float hist_o[NSEQ][MAXT][HV * DV]; /* amxk outputs */
static int hist_n[NSEQ];

int main(void) {
    static float convw[DIM * W], A_log[HV], dt_bias[HV];
    amxk_pool pool;
    amxk_ctx ctx;
    amxk_gdn_params p = amxk_gdn_params_default(H, HV, DK, DV);
    amxk_gdn_inputs in;
    amxk_conv_state cst;
    amxk_gdn_state sst;
    size_t cw_bytes, ws_bytes, T = 0, i, n, t;
    void *cw, *ws;
    int32_t qsl[NSEQ + 1];
    uint8_t has_init[NSEQ] = {0, 0, 0};
    amxk_bf16 *x, *y, *ab, *bb, *o;
    double max_err = 0, sum_sq = 0;
    long cnt = 0;
    int step;

    /* load time: conv weight packed once; A_log, dt_bias as in a checkpoint */
    for (i = 0; i < DIM * W; i++) convw[i] = bf(0.5f * frand());
    for (i = 0; i < HV; i++) A_log[i] = logf(1.0f + 7.5f * (frand() + 1.0f)), dt_bias[i] = 0.3f * frand();
    check(amxk_conv1d_pack_size(DIM, W, &cw_bytes), "conv pack size");
    cw = xalloc(cw_bytes);
    check(amxk_conv1d_pack(NULL, cw, cw_bytes, convw, AMXK_DTYPE_F32, DIM, W, W, NULL), "conv pack");

    /* context on a 2-worker pool */
    memset(&ctx, 0, sizeof ctx);
    if (amxk_pool_init(&pool, 2) != 0) return 1;
    amxk_pool_bind(&pool, &ctx);
    check(amxk_ctx_init(&ctx), "ctx");
    printf("tier %s, %d workers\n", amxk_tier_name(ctx.tier), ctx.n_workers);

    /* state pools: conv state in the SD layout (bf16, like the activations), fp32 SSM state K-first */
    memset(&cst, 0, sizeof cst);
    cst.dtype = AMXK_DTYPE_BF16, cst.n_slots = NSLOT, cst.state_len = W - 1;
    cst.dim_stride = 1, cst.tok_stride = DIM, cst.slot_stride = (size_t)DIM * (W - 1);
    cst.data = xalloc((size_t)NSLOT * DIM * (W - 1) * 2);
    sst.n_slots = NSLOT, sst.slot_stride = (size_t)HV * DK * DV;
    sst.data = (float *)xalloc((size_t)NSLOT * HV * DK * DV * 4);
    for (i = 0; i < (size_t)NSLOT * HV * DK * DV; i++) sst.data[i] = 1e30f; /* stale garbage: has_init = 0 ignores it */
    check(amxk_gdn_workspace_size(&ctx, &p, AMXK_GDN_AUTO, &ws_bytes), "gdn ws size");
    ws = xalloc(ws_bytes);

    /* buffers for the largest call (the prefill batch) */
    qsl[0] = 0;
    for (n = 0; n < NSEQ; n++) qsl[n + 1] = qsl[n] + prompt_len[n];
    T = (size_t)qsl[NSEQ];
    x = (amxk_bf16 *)xalloc(T * DIM * 2), y = (amxk_bf16 *)xalloc(T * DIM * 2);
    ab = (amxk_bf16 *)xalloc(T * HV * 2), bb = (amxk_bf16 *)xalloc(T * HV * 2), o = (amxk_bf16 *)xalloc(T * HV * DV * 2);

    for (step = 0; step <= STEPS; step++) {
        const int prefill = step == 0;
        size_t ntok = prefill ? T : NSEQ;
        /* this call's tokens: mixed qkv and the a/b projections (random stand-ins) */
        for (n = 0; n < NSEQ; n++) {
            size_t t0 = prefill ? (size_t)qsl[n] : n, len = prefill ? (size_t)prompt_len[n] : 1;
            for (t = 0; t < len; t++) {
                int hpos = hist_n[n]++;
                for (i = 0; i < DIM; i++) x[(t0 + t) * DIM + i] = amxk_f32_to_bf16(hist_x[n][hpos][i] = bf(frand()));
                for (i = 0; i < HV; i++) {
                    ab[(t0 + t) * HV + i] = amxk_f32_to_bf16(hist_a[n][hpos][i] = bf(2.0f * frand()));
                    bb[(t0 + t) * HV + i] = amxk_f32_to_bf16(hist_b[n][hpos][i] = bf(2.0f * frand()));
                }
            }
        }
        /* 1. causal conv1d + silu (prefill: zero history; decode: the conv state) */
        if (prefill)
            check(amxk_conv1d_prefill(&ctx, cw, cw_bytes, 1, NSEQ, qsl, slot_of, has_init, x, AMXK_DTYPE_BF16, DIM, y,
                                      AMXK_DTYPE_BF16, DIM, &cst), "conv prefill");
        else
            check(amxk_conv1d_update(&ctx, cw, cw_bytes, 1, NSEQ, NULL, slot_of, NULL, x, AMXK_DTYPE_BF16, DIM, y,
                                     AMXK_DTYPE_BF16, DIM, &cst), "conv update");
        /* 2+3. gating fused into the delta rule; q, k, v are views into the conv output */
        memset(&in, 0, sizeof in);
        in.dtype = AMXK_DTYPE_BF16;
        in.q = y, in.k = y + H * DK, in.v = y + 2 * H * DK, in.ldq = in.ldk = in.ldv = DIM;
        in.ab_dtype = AMXK_DTYPE_BF16, in.a = ab, in.b = bb, in.lda = in.ldb = HV, in.A_log = A_log, in.dt_bias = dt_bias;
        if (prefill) {
            check(amxk_gdn(&ctx, &p, AMXK_GDN_AUTO, &in, NSEQ, qsl, slot_of, has_init, &sst, o, AMXK_DTYPE_BF16, HV * DV, ws,
                           ws_bytes), "gdn prefill");
        } else {
            int32_t dq[NSEQ + 1];
            for (n = 0; n <= NSEQ; n++) dq[n] = (int32_t)n;
            check(amxk_gdn(&ctx, &p, AMXK_GDN_RECURRENT, &in, NSEQ, dq, slot_of, NULL, &sst, o, AMXK_DTYPE_BF16, HV * DV, ws,
                           ws_bytes), "gdn decode");
        }
        for (n = 0; n < NSEQ; n++) {
            size_t t0 = prefill ? (size_t)qsl[n] : n, len = prefill ? (size_t)prompt_len[n] : 1;
            for (t = 0; t < len; t++)
                for (i = 0; i < HV * DV; i++) hist_o[n][hist_n[n] - len + t][i] = amxk_bf16_to_f32(o[(t0 + t) * HV * DV + i]);
        }
        (void)ntok;
    }

    /* reference: the whole history of each sequence in double, from zero states */
    for (n = 0; n < NSEQ; n++) {
        static double yv[MAXT][DIM], S[HV][DK][DV];
        int L = hist_n[n], hv, kk, j, tt;
        for (tt = 0; tt < L; tt++)
            for (i = 0; i < DIM; i++) {
                double acc = 0;
                for (j = 0; j < W; j++) {
                    int src = tt - (W - 1) + j;
                    if (src >= 0) acc += (double)convw[i * W + j] * hist_x[n][src][i];
                }
                yv[tt][i] = bf((float)(acc / (1.0 + exp(-acc)))); /* amxk rounds the conv output to bf16 */
            }
        memset(S, 0, sizeof S);
        for (tt = 0; tt < L; tt++)
            for (hv = 0; hv < HV; hv++) {
                int h = hv / (HV / H);
                double q[DK], k[DK], qs = 0, ks = 0, g, beta, al, u[DV], xx;
                for (kk = 0; kk < DK; kk++) {
                    q[kk] = yv[tt][h * DK + kk], k[kk] = yv[tt][H * DK + h * DK + kk];
                    qs += q[kk] * q[kk], ks += k[kk] * k[kk];
                }
                for (kk = 0; kk < DK; kk++) q[kk] *= 1.0 / sqrt(qs + 1e-6) / sqrt((double)DK), k[kk] /= sqrt(ks + 1e-6);
                xx = (double)hist_a[n][tt][hv] + dt_bias[hv];
                g = -exp((double)A_log[hv]) * (xx > 20 ? xx : log1p(exp(xx)));
                beta = 1.0 / (1.0 + exp(-(double)hist_b[n][tt][hv]));
                al = exp(g);
                for (j = 0; j < DV; j++) {
                    double pk = 0;
                    for (kk = 0; kk < DK; kk++) pk += al * S[hv][kk][j] * k[kk];
                    u[j] = beta * (yv[tt][2 * H * DK + hv * DV + j] - pk);
                }
                for (kk = 0; kk < DK; kk++)
                    for (j = 0; j < DV; j++) S[hv][kk][j] = al * S[hv][kk][j] + k[kk] * u[j];
                for (j = 0; j < DV; j++) {
                    double ov = 0;
                    for (kk = 0; kk < DK; kk++) ov += S[hv][kk][j] * q[kk];
                    max_err = fmax(max_err, fabs(ov - hist_o[n][tt][hv * DV + j]));
                    sum_sq += ov * ov, cnt++;
                }
            }
    }
    {
        double rms = sqrt(sum_sq / (double)cnt), rel = max_err / rms;
        printf("prefill of %d + %d + %d tokens, then %d decode steps: max |out - ref| = %.3g (%.3g of the output RMS %.3g)\n",
               prompt_len[0], prompt_len[1], prompt_len[2], STEPS, max_err, rel, rms);
        amxk_pool_destroy(&pool);
        free(cw), free(ws), free(cst.data), free(sst.data), free(x), free(y), free(ab), free(bb), free(o);
        if (!(rel < 0.1)) { /* bf16 output rounding and 1-ulp bf16 flips of conv outputs feeding q/k/v */
            printf("FAILED\n");
            return 1;
        }
        printf("OK\n");
    }
    return 0;
}
