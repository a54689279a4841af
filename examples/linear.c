/* linear.c - the main amxk demo: pack a weight once, then run y = x * W^T + bias with a thread pool.

   What it shows, in the order a real inference engine does it:

   1. Load time. A weight W[N, K] (here N = 256 output features, K = 512 input features, random f32
      values standing in for a checkpoint) is packed once with amxk_pack_linear into amxk's VNNI
      layout, converted to bf16 on the way. The packed buffer is position independent and the same on
      every tier: it could be written to disk and memory-mapped later (amxk_packed_linear_info reads
      its header back).
   2. Set-up. A context is bound to a 2-worker thread pool (examples/amxk_pool.h; amxk itself never
      creates threads) and amxk_ctx_init picks the best instruction-set tier this CPU offers: AMX on
      Sapphire Rapids and later, AVX-512 or AVX2 elsewhere, portable C as the last resort (build with
      -DAMXK_AMX_EMULATE to run the AMX code on any CPU through the software tile emulator).
   3. Every forward pass. amxk_linear_workspace_size says how much scratch the call needs for this
      shape and worker count; the caller owns that memory (amxk never allocates). Then amxk_linear
      runs: once with M = 1 (one token: decode, where the weight is streamed once and the pool
      splits the N output columns between workers) and once with M = 64 (a prompt chunk: prefill,
      split into row and column blocks; on the AMX tier this runs on the tile units).
   4. Checking. Each result is compared with a naive triple loop in double precision over the same
      bf16-rounded values. amxk accumulates in fp32, so the error of each output is bounded by about
      K * 2^-24 * sum_k |x_k * w_k|; the demo prints the largest error relative to that bound
      (a ratio well below 1 is expected) and "OK".

   Build and run from the repository root (`make build/linear` builds it):
       cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -I. examples/linear.c -o build/linear -lm
       ./build/linear */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION
#include "amxk.h"
#include "amxk_pack.h"
#include "amxk_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 256 /* output features */
#define K 512 /* input features */
#define M_MAX 64

/* 64-byte aligned allocation (amxk wants AMXK_ALIGN for packed buffers and workspaces). */
static void *alloc64(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, AMXK_ALIGN, bytes ? bytes : AMXK_ALIGN) != 0) {
        fprintf(stderr, "out of memory (%lu bytes)\n", (unsigned long)bytes);
        exit(1);
    }
    return p;
}

/* A small deterministic random generator, values uniform in [-1, 1). */
static uint32_t rng_state = 12345u;
static float frand(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)(rng_state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs y = x * W^T + bias for M rows, checks it against the naive loop, prints one line. Returns 1
   when every output is within the fp32-accumulation bound. */
static int run(const amxk_ctx *ctx, size_t m, const amxk_bf16 *x, const void *packed, size_t packed_bytes, const float *bias,
               const float *w_rounded) {
    size_t ws_bytes = 0, i, j, kk;
    void *ws;
    float *y = (float *)alloc64(m * N * sizeof(float));
    double worst = 0, max_err = 0, t0, t1;
    amxk_status s;

    s = amxk_linear_workspace_size(ctx, m, N, K, &ws_bytes);
    if (s != AMXK_OK) {
        fprintf(stderr, "amxk_linear_workspace_size: %s\n", amxk_status_string(s));
        exit(1);
    }
    ws = alloc64(ws_bytes);
    t0 = now();
    s = amxk_linear(ctx, m, N, K, x, AMXK_DTYPE_BF16, K, packed, packed_bytes, bias, y, AMXK_DTYPE_F32, N, ws, ws_bytes);
    t1 = now();
    if (s != AMXK_OK) {
        fprintf(stderr, "amxk_linear: %s\n", amxk_status_string(s));
        exit(1);
    }

    for (i = 0; i < m; i++)
        for (j = 0; j < N; j++) {
            double ref = bias[j], mag = fabs((double)bias[j]), err, bound;
            for (kk = 0; kk < K; kk++) {
                double p = (double)amxk_bf16_to_f32(x[i * K + kk]) * (double)w_rounded[j * K + kk];
                ref += p;
                mag += fabs(p);
            }
            err = fabs((double)y[i * N + j] - ref);
            bound = (double)(K + 1) * ldexp(1.0, -24) * mag;
            if (err > max_err) max_err = err;
            if (err / bound > worst) worst = err / bound;
        }
    printf("  M = %2lu: %8.1f us, workspace %6lu bytes, max |error| %.3g, max error / bound %.3f  %s\n", (unsigned long)m,
           (t1 - t0) * 1e6, (unsigned long)ws_bytes, max_err, worst, worst <= 1.0 ? "OK" : "FAILED");
    free(ws);
    free(y);
    return worst <= 1.0;
}

int main(void) {
    amxk_pool pool;
    amxk_ctx ctx;
    float *w = (float *)malloc((size_t)N * K * sizeof(float)), *w_rounded = (float *)malloc((size_t)N * K * sizeof(float));
    float bias[N];
    amxk_bf16 *x = (amxk_bf16 *)malloc((size_t)M_MAX * K * sizeof(amxk_bf16));
    size_t packed_bytes = 0, i, pn = 0, pk = 0;
    void *packed;
    amxk_dtype pt = AMXK_DTYPE_INVALID;
    amxk_status s;
    int ok;

    if (!w || !w_rounded || !x) return 1;
    /* a random "checkpoint": W in f32, bias, and bf16 activations */
    for (i = 0; i < (size_t)N * K; i++) {
        w[i] = frand() * 0.05f;
        w_rounded[i] = amxk_bf16_to_f32(amxk_f32_to_bf16(w[i])); /* what packing to bf16 keeps */
    }
    for (i = 0; i < N; i++) bias[i] = frand() * 0.1f;
    for (i = 0; i < (size_t)M_MAX * K; i++) x[i] = amxk_f32_to_bf16(frand());

    /* 1. load time: pack W once */
    if ((s = amxk_pack_linear_size(AMXK_DTYPE_BF16, N, K, &packed_bytes)) != AMXK_OK) return 1;
    packed = alloc64(packed_bytes);
    s = amxk_pack_linear(NULL, packed, packed_bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, N, K, K);
    if (s != AMXK_OK) {
        fprintf(stderr, "amxk_pack_linear: %s\n", amxk_status_string(s));
        return 1;
    }
    (void)amxk_packed_linear_info(packed, packed_bytes, &pt, &pn, &pk);
    printf("amxk %s: packed W[%lu, %lu] f32 -> bf16 VNNI, %lu bytes (header says %lu x %lu, dtype %d)\n", amxk_version(),
           (unsigned long)N, (unsigned long)K, (unsigned long)packed_bytes, (unsigned long)pn, (unsigned long)pk, (int)pt);

    /* 2. set-up: a context on a 2-worker pool, best tier */
    if (amxk_pool_init(&pool, 2) != 0) {
        fprintf(stderr, "amxk_pool_init failed\n");
        return 1;
    }
    memset(&ctx, 0, sizeof ctx);
    amxk_pool_bind(&pool, &ctx);
    if ((s = amxk_ctx_init(&ctx)) != AMXK_OK) {
        fprintf(stderr, "amxk_ctx_init: %s\n", amxk_status_string(s));
        return 1;
    }
    printf("tier: %s%s, %d workers\n", amxk_tier_name(ctx.tier), amxk_cpu_init()->amx_emulated ? " (AMX emulated in software)" : "",
           ctx.n_workers);
    if (ctx.tier == AMXK_TIER_AMX) printf("  (M <= 4 runs the vector path of the AMX tier; M = 64 runs on tiles)\n");

    /* 3 and 4. forward passes: decode (M = 1) and prefill (M = 64), each checked */
    ok = run(&ctx, 1, x, packed, packed_bytes, bias, w_rounded);
    ok &= run(&ctx, M_MAX, x, packed, packed_bytes, bias, w_rounded);

    amxk_pool_destroy(&pool);
    free(packed);
    free(x);
    free(w);
    free(w_rounded);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
