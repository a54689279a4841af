/* moe_layer.c - one MoE layer with amxk: router linear -> top-k -> fused experts + shared expert.

   What it shows, as an inference engine runs a DeepSeek/Qwen-style MoE block:
   1. Load time: the router W_r [E, K], the experts' w13 [2N, K] (gate rows, then up rows) and w2
      [K, N], and a shared expert are packed once (experts as int4 groups of 32 through
      amxk_quantize_pack - any amxk_pack.h format works the same way - the router and the shared
      expert as bf16 through amxk_pack_linear).
   2. Per forward pass, with a 2-worker pthread pool (examples/amxk_pool.h):
        logits = x W_r^T                        amxk_linear, f32 output
        (weights, ids) = top-k(softmax(logits)) amxk_moe_topk, renormalized
        out = shared(x) + 1.0 * sum_j w_j expert_{id_j}(x)    amxk_moe_experts, SiLU
   3. Check: a naive loop in double over the same dequantized weights (amxk_dequantize) computes the
      same layer; the largest error relative to the output scale must stay below 2^-6 (the 16-bit
      intermediate rounding of amxk_moe.h is 2^-8 relative). Prints OK.

   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -I. -Iexamples examples/moe_layer.c \
      -o build/moe_layer -lm && ./build/moe_layer */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION
#include "amxk.h"
#include "amxk_moe.h"
#include "amxk_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M 6    /* tokens */
#define K 128  /* hidden */
#define N 64   /* expert intermediate */
#define NS 96  /* shared expert intermediate */
#define E 16   /* experts */
#define TOPK 4

static void *alloc64(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, AMXK_ALIGN, bytes ? bytes : AMXK_ALIGN) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}
static uint32_t rng = 2024u;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
static void ok(amxk_status s, const char *what) {
    if (s != AMXK_OK) {
        fprintf(stderr, "%s: %s\n", what, amxk_status_string(s));
        exit(1);
    }
}
/* Packs a random f32 W[n, k] (scale 0.2) as bf16 or int4 g32; returns the pack and its f32 weights. */
static void *make(int quant, size_t n, size_t k, size_t *bytes, float **deq) {
    float *w = (float *)malloc(n * k * sizeof(float));
    amxk_quant q = {AMXK_QFMT_INT4, 0, 1, 32};
    void *p;
    size_t i;
    for (i = 0; i < n * k; i++) w[i] = 0.2f * frand();
    ok(quant ? amxk_pack_quant_size(&q, n, k, bytes) : amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, bytes), "pack size");
    p = alloc64(*bytes);
    ok(quant ? amxk_quantize_pack(NULL, p, *bytes, &q, w, AMXK_DTYPE_F32, n, k, k)
             : amxk_pack_linear(NULL, p, *bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, n, k, k),
       "pack");
    *deq = (float *)malloc(n * k * sizeof(float));
    ok(amxk_dequantize(p, *bytes, *deq, k), "dequantize");
    free(w);
    return p;
}

/* Naive SiLU MLP in double: y += wt * (W2 (silu(gate) * up)), x already decoded. */
static void naive_mlp(const double *x, const float *w13, const float *w2, size_t n, double wt, double *y) {
    double a[NS];
    size_t i, k;
    for (i = 0; i < n; i++) {
        double g = 0, u = 0;
        for (k = 0; k < K; k++) g += x[k] * w13[i * K + k], u += x[k] * w13[(n + i) * K + k];
        a[i] = g / (1.0 + exp(-g)) * u;
    }
    for (k = 0; k < K; k++) {
        double s = 0;
        for (i = 0; i < n; i++) s += w2[k * n + i] * a[i];
        y[k] += wt * s;
    }
}

int main(void) {
    amxk_pool pool;
    amxk_ctx ctx;
    amxk_bf16 *x = (amxk_bf16 *)alloc64(M * K * 2), *out = (amxk_bf16 *)alloc64(M * K * 2);
    float *logits = (float *)alloc64(M * E * 4), tw[M * TOPK], *dr, *d13[E], *d2[E], *ds13, *ds2;
    int32_t ids[M * TOPK];
    const void *w13[E], *w2[E];
    size_t b13[E], b2[E], br, bs13, bs2, ws_bytes = 0, lin_ws = 0, t, j, k, e;
    void *router, *s13, *s2, *ws;
    amxk_moe_router rt;
    amxk_moe_weights w;
    amxk_moe_shared sh;
    double max_err = 0, max_ref = 0;

    /* 1. load */
    router = make(0, E, K, &br, &dr);
    for (e = 0; e < E; e++) {
        w13[e] = make(1, 2 * N, K, &b13[e], &d13[e]);
        w2[e] = make(1, K, N, &b2[e], &d2[e]);
    }
    s13 = make(0, 2 * NS, K, &bs13, &ds13);
    s2 = make(0, K, NS, &bs2, &ds2);
    for (t = 0; t < M * K; t++) x[t] = amxk_f32_to_bf16(frand());

    /* 2. context on a pool */
    memset(&ctx, 0, sizeof ctx);
    if (amxk_pool_init(&pool, 2) != 0) return 1;
    amxk_pool_bind(&pool, &ctx);
    ok(amxk_ctx_init(&ctx), "ctx");
    printf("tier %s, %d workers\n", amxk_tier_name(ctx.tier), ctx.n_workers);

    /* router linear and top-k */
    ok(amxk_linear_workspace_size_for(&ctx, M, router, br, &lin_ws), "router ws");
    ws = alloc64(lin_ws);
    ok(amxk_linear(&ctx, M, E, K, x, AMXK_DTYPE_BF16, K, router, br, NULL, logits, AMXK_DTYPE_F32, E, ws, lin_ws), "router");
    free(ws);
    memset(&rt, 0, sizeof rt);
    rt.score = AMXK_MOE_SCORE_SOFTMAX, rt.renormalize = 1;
    ok(amxk_moe_topk(&ctx, &rt, M, E, logits, E, TOPK, tw, ids), "topk");

    /* fused experts + shared expert, in one call */
    memset(&w, 0, sizeof w);
    w.n_experts = E, w.hidden = K, w.inter = N, w.w13 = w13, w.w13_bytes = b13, w.w2 = w2, w.w2_bytes = b2;
    memset(&sh, 0, sizeof sh);
    sh.inter = NS, sh.w13 = s13, sh.w13_bytes = bs13, sh.w2 = s2, sh.w2_bytes = bs2;
    ok(amxk_moe_workspace_size(&ctx, &w, &sh, NULL, M, TOPK, &ws_bytes), "moe ws");
    ws = alloc64(ws_bytes);
    ok(amxk_moe_experts(&ctx, &w, &sh, NULL, M, x, AMXK_DTYPE_BF16, K, TOPK, tw, ids, out, AMXK_DTYPE_BF16, K, ws, ws_bytes), "moe");
    printf("token 0 -> experts %d %d %d %d (weights %.3f %.3f %.3f %.3f); workspace %zu bytes\n", ids[0], ids[1], ids[2], ids[3],
           tw[0], tw[1], tw[2], tw[3], ws_bytes);

    /* 3. naive check (the routing itself is recomputed naively too) */
    for (t = 0; t < M; t++) {
        double xd[K], y[K], lg[E], mx = -1e300, sum = 0, sel = 0;
        int taken[E] = {0}, nid[TOPK];
        double nw[TOPK];
        for (k = 0; k < K; k++) xd[k] = amxk_bf16_to_f32(x[t * K + k]), y[k] = 0;
        for (e = 0; e < E; e++) {
            lg[e] = 0;
            for (k = 0; k < K; k++) lg[e] += xd[k] * dr[e * K + k];
            mx = lg[e] > mx ? lg[e] : mx;
        }
        for (e = 0; e < E; e++) sum += exp(lg[e] - mx);
        for (j = 0; j < TOPK; j++) {
            size_t best = E;
            for (e = 0; e < E; e++)
                if (!taken[e] && (best == E || lg[e] > lg[best])) best = e;
            taken[best] = 1, nid[j] = (int)best, nw[j] = exp(lg[best] - mx) / sum, sel += nw[j];
        }
        for (j = 0; j < TOPK; j++) {
            if (nid[j] != ids[t * TOPK + j]) printf("note: token %zu slot %zu: naive expert %d, amxk %d (near tie)\n", t, j, nid[j], ids[t * TOPK + j]);
            naive_mlp(xd, d13[ids[t * TOPK + j]], d2[ids[t * TOPK + j]], N, nw[j] / sel, y);
        }
        naive_mlp(xd, ds13, ds2, NS, 1.0, y);
        for (k = 0; k < K; k++) {
            double d = fabs((double)amxk_bf16_to_f32(out[t * K + k]) - y[k]);
            max_err = d > max_err ? d : max_err;
            max_ref = fabs(y[k]) > max_ref ? fabs(y[k]) : max_ref;
        }
    }
    printf("max |out - naive| = %.3g, max |naive| = %.3g, ratio %.3g (limit 2^-6 = %.3g)\n", max_err, max_ref, max_err / max_ref,
           ldexp(1, -6));
    amxk_pool_destroy(&pool);
    if (!(max_err <= ldexp(1, -6) * max_ref)) {
        printf("FAILED\n");
        return 1;
    }
    printf("OK\n");
    free(x), free(out), free(logits), free(dr), free(ds13), free(ds2), free(router), free(s13), free(s2), free(ws);
    for (e = 0; e < E; e++) free((void *)w13[e]), free((void *)w2[e]), free(d13[e]), free(d2[e]);
    return 0;
}
