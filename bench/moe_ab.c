/* moe_ab.c - one process alternating amxk_moe_experts calls of several builds of the headers (SiLU,
   no shared expert; weights bf16, or as MOE_AB_DTYPE = int8 / int4 / fp8e4m3 says, packed like
   amxk_bench moe: int groups of 128, fp8 128 x 128 blocks; MOE_AB_ACT=int8: the w8a8 / w4a8 form), so that every build sees the same machine state call by call: the
   A/B for small differences on a shared, noisy machine (bench/moe_ab.sh builds it: one object per
   variant, each a private AMXK_STATIC copy, compiled with -DVAR=name and that variant's -I; the main
   part without VAR). Routing and weights as amxk_bench moe (same seeds). Prints per variant the median,
   quartiles and minimum of the call times and the median's GB/s of active expert weights.
       build/moe_ab M EXPERTS TOPK HIDDEN INTER CALLS */
#ifdef VAR
#define AMXK_IMPLEMENTATION
#define AMXK_STATIC
#include "amxk.h"
#include "amxk_pack.h"
#include "amxk_moe.h"
#include <stdlib.h>
#include <string.h>
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
static amxk_ctx ctx;
static amxk_moe_weights W;
static size_t M, TOPK, K, WSB;
static const void *X;
static void *Y, *WS;
static const float *TW;
static const int32_t *IDS;
static amxk_moe_opts O;
static int quant(size_t k, amxk_quant *q) { /* 0: bf16 */
    const char *d = getenv("MOE_AB_DTYPE");
    memset(q, 0, sizeof *q);
    q->block_n = 1, q->block_k = k % 128 ? k : 128;
    if (!d || !strcmp(d, "bf16")) return 0;
    if (!strcmp(d, "int8")) q->format = AMXK_QFMT_INT8;
    else if (!strcmp(d, "int4")) q->format = AMXK_QFMT_INT4;
    else if (!strcmp(d, "fp8e4m3")) q->format = AMXK_QFMT_FP8_E4M3, q->block_n = 128, q->block_k = 128;
    else abort();
    return 1;
}
size_t CAT(VAR, _packsize)(size_t n, size_t k) {
    size_t b = 0; amxk_quant q;
    if (quant(k, &q)) return amxk_pack_quant_size(&q, n, k, &b) == AMXK_OK ? b : 0;
    return amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, &b) == AMXK_OK ? b : 0;
}
void CAT(VAR, _pack)(void *dst, size_t bytes, const float *w, size_t n, size_t k) {
    amxk_quant q;
    if (quant(k, &q) ? amxk_quantize_pack(NULL, dst, bytes, &q, w, AMXK_DTYPE_F32, n, k, k) != AMXK_OK
                     : amxk_pack_linear(NULL, dst, bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, n, k, k) != AMXK_OK) abort();
}
void CAT(VAR, _tobf16)(void *dst, const float *src, size_t n) { amxk_convert(NULL, dst, AMXK_DTYPE_BF16, src, AMXK_DTYPE_F32, n); }
void CAT(VAR, _init)(size_t m, size_t e, size_t topk, size_t k, size_t n, const int32_t *ids, const float *tw, void *w13, void *w2,
                     size_t b13, size_t b2, const void *x, void *y) {
    memset(&ctx, 0, sizeof ctx);
    ctx.isa_allow = AMXK_ISA_ALL;
    if (amxk_ctx_init(&ctx) != AMXK_OK) abort();
    memset(&W, 0, sizeof W);
    W.n_experts = e, W.hidden = k, W.inter = n, W.w13_stride = b13, W.w2_stride = b2, W.w13_base = w13, W.w2_base = w2;
    M = m, TOPK = topk, K = k, X = x, Y = y, TW = tw, IDS = ids;
    memset(&O, 0, sizeof O);
    O.act = AMXK_MOE_ACT_SILU, O.act_int8 = getenv("MOE_AB_ACT") && !strcmp(getenv("MOE_AB_ACT"), "int8");
    if (amxk_moe_workspace_size(&ctx, &W, NULL, &O, m, topk, &WSB) != AMXK_OK) abort();
    WS = aligned_alloc(64, (WSB + 63) / 64 * 64 + 64);
}
void CAT(VAR, _call)(void) {
    if (amxk_moe_experts(&ctx, &W, NULL, &O, M, X, AMXK_DTYPE_BF16, K, TOPK, TW, IDS, Y, AMXK_DTYPE_BF16, K, WS, WSB) != AMXK_OK)
        abort();
}
#else
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define DECL(V) size_t V##_packsize(size_t, size_t); void V##_pack(void *, size_t, const float *, size_t, size_t); \
  void V##_tobf16(void *, const float *, size_t); \
  void V##_init(size_t, size_t, size_t, size_t, size_t, const int32_t *, const float *, void *, void *, size_t, size_t, const void *, void *); \
  void V##_call(void);
VARS_DECL
typedef void (*callfn)(void);
static uint32_t rng(uint32_t *s) { *s ^= *s << 13; *s ^= *s >> 17; *s ^= *s << 5; return *s; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    size_t m = atoi(argv[1]), e = atoi(argv[2]), topk = atoi(argv[3]), k = atoi(argv[4]), n = atoi(argv[5]), calls = atoi(argv[6]);
    const char *names[] = VAR_NAMES; callfn fns[] = VAR_CALLS; const int nv = sizeof fns / sizeof fns[0];
    size_t b13 = FIRST_packsize(2 * n, k), b2 = FIRST_packsize(k, n), t, i, c; uint32_t rs = 1; int v;
    int32_t *ids = malloc(m * topk * 4); float *tw = malloc(m * topk * 4); unsigned char *used = calloc(e, 1);
    for (t = 0; t < m; t++) for (i = 0; i < topk; i++) { int32_t id; size_t q; int dup;
        do { id = (int32_t)(rng(&rs) % (uint32_t)e); for (dup = 0, q = 0; q < i; q++) dup |= ids[t * topk + q] == id; } while (dup);
        ids[t * topk + i] = id; tw[t * topk + i] = (float)(rng(&rs) >> 8) * (1.0f / 16777216.0f) / (float)topk; used[id] = 1; }
    unsigned char *w13 = aligned_alloc(4096, (e * b13 + 4095) / 4096 * 4096), *w2 = aligned_alloc(4096, (e * b2 + 4095) / 4096 * 4096);
    float *wf = malloc(2 * n * k * 4); size_t first = e, act = 0;
    for (size_t ex = 0; ex < e; ex++) { if (!used[ex]) continue; act++; if (first == e) first = ex; uint32_t s = 1000 + ex;
        for (i = 0; i < 2 * n * k; i++) wf[i] = (float)(rng(&s) >> 8) * (1.0f / 8388608.0f) - 1.0f;
        FIRST_pack(w13 + ex * b13, b13, wf, 2 * n, k); s = 5000 + ex;
        for (i = 0; i < n * k; i++) wf[i] = (float)(rng(&s) >> 8) * (1.0f / 8388608.0f) - 1.0f;
        FIRST_pack(w2 + ex * b2, b2, wf, k, n); }
    for (size_t ex = 0; ex < e; ex++) if (!used[ex]) memcpy(w13 + ex * b13, w13 + first * b13, 64), memcpy(w2 + ex * b2, w2 + first * b2, 64);
    void *x = aligned_alloc(64, m * k * 2 + 64), *y = aligned_alloc(64, m * k * 2 + 64);
    for (i = 0; i < m * k; i++) wf[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    FIRST_tobf16(x, wf, m * k);
    VARS_INIT
    double *ts = malloc(sizeof(double) * nv * calls);
    for (v = 0; v < nv; v++) fns[v]();   /* warmup */
    for (c = 0; c < calls; c++)
        for (int vv = 0; vv < nv; vv++) { v = (c % 2) ? nv - 1 - vv : vv; double t0 = now(); fns[v](); ts[v * calls + c] = now() - t0; }
    printf("m=%zu active=%zu bytes/call=%.1f MB calls=%zu\n", m, act, act * (b13 + b2) / 1e6, calls);
    for (v = 0; v < nv; v++) { double *a = ts + v * calls; qsort(a, calls, sizeof(double), cmpd);
        printf("%-8s median_us=%.0f q1=%.0f q3=%.0f min=%.0f gbs=%.2f\n", names[v], 1e6 * a[calls / 2], 1e6 * a[calls / 4], 1e6 * a[3 * calls / 4], 1e6 * a[0], act * (b13 + b2) / a[calls / 2] / 1e9); }
    return 0;
}
#endif
