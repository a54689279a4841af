/* amx_stream_proxy: the memory reads of amxk__linear_block_ts__32x32__amx (amxk_pack.h) at small M, on a
   CPU without AMX. Each tile load becomes 16 zmm loads of the same 64-byte rows, the TDPs of a k step a
   dependent FMA chain (CHAIN FMAs, ~4 cycles each), and the software prefetch is the kernel's: "old" =
   the next B block prefetched into L2 (prefetcht1) in equal shares over the sweep; "new" = each B stream
   prefetcht0 4 KiB ahead (one panel); "none" = hardware prefetchers only. N = K = 4096 bf16 weights
   (32 MiB) in the kernel's block layout, ROT copies cycled (1: L3 resident; 32: 1 GiB, from DRAM).
   A prediction of the AMX kernel's read rate, not a measurement of it (bench/results.md).

   gcc -O2 -mavx512f -mavx512bw bench/amx_stream_proxy.c -o build/amx_stream_proxy
   build/amx_stream_proxy ROT CHAIN ROUNDS NP HI     (M = 16: 1 8 7 1 0; M = 64: 1 16 7 2 1)
   prints the median time per call over ROUNDS interleaved rounds (each the median of 9 calls). */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmpd(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static size_t NP = 1; /* row panels of 32 rows (2 A tiles when HI) */
static int HI = 0;
static float sink;
static uint16_t xa[8][32 * 4096] __attribute__((aligned(64)));

/* mode 0: no software prefetch; 1: next B block spread (old); 2: per stream T0 D ahead (new, NP == 1) */
static double run(const uint16_t *w, size_t n, size_t k, size_t bbytes, int mode, size_t D, int chain) {
    const size_t ns = k / 32, blk = 16 * k, nblk = n / 16;
    const size_t gb = 2 * (k >= bbytes / 64 ? 1 : bbytes / 64 / k);
    __m512 acc = _mm512_set1_ps(1.0f), c = _mm512_set1_ps(0.999f);
    __m512i o0 = _mm512_setzero_si512(), o1 = o0, o2 = o0;
    const double t0 = now();
    for (size_t g0 = 0; g0 < nblk; g0 += gb) {
        const size_t g1 = g0 + gb < nblk ? g0 + gb : nblk, nn = g1 < nblk ? (gb < nblk - g1 ? gb : nblk - g1) : 0;
        const char *nx = (const char *)(w + g1 * blk);
        const size_t nlines = mode == 1 ? nn * blk * 2 / 64 : 0, steps = NP * ns * ((g1 - g0 + 1) / 2);
        const size_t per = (nlines + steps - 1) / steps;
        size_t pf = 0;
        for (size_t q = 0; q < NP; q++) {
            const size_t pi = (g0 / gb) % 2 ? NP - 1 - q : q;
            for (size_t b = g0; b < g1; b += 2) {
                const uint16_t *w0 = w + b * blk, *w1 = w0 + blk;
                for (size_t s = 0; s < ns; s++) {
                    const char *xt = (const char *)(xa[pi] + s * 1024), *b0 = (const char *)(w0 + s * 512), *b1 = (const char *)(w1 + s * 512);
                    for (int r = 0; r < 16; r++) {
                        o0 = _mm512_or_si512(o0, _mm512_load_si512(xt + 64 * r));
                        if (HI) o0 = _mm512_xor_si512(o0, _mm512_load_si512(xt + 1024 + 64 * r));
                        o1 = _mm512_or_si512(o1, _mm512_load_si512(b0 + 64 * r));
                        o2 = _mm512_or_si512(o2, _mm512_load_si512(b1 + 64 * r));
                    }
                    for (int i = 0; i < chain; i++) acc = _mm512_fmadd_ps(acc, c, c);
                    for (size_t e = 0; e < per && pf < nlines; e++, pf++) _mm_prefetch(nx + pf * 64, _MM_HINT_T1);
                    for (int r = 0; mode == 2 && r < 16; r++) {
                        _mm_prefetch(b0 + D + 64 * r, _MM_HINT_T0);
                        _mm_prefetch(b1 + D + 64 * r, _MM_HINT_T0);
                    }
                }
            }
        }
    }
    const double t = now() - t0;
    sink += _mm512_reduce_add_ps(acc) + (float)_mm512_reduce_or_epi32(_mm512_or_si512(o0, _mm512_or_si512(o1, o2)));
    return t;
}

int main(int argc, char **argv) {
    const size_t n = 4096, k = 4096, rot = argc > 1 ? (size_t)atol(argv[1]) : 1, bytes = n * k * 2;
    const int chain = argc > 2 ? atoi(argv[2]) : 8, rounds = argc > 3 ? atoi(argv[3]) : 5;
    NP = argc > 4 ? (size_t)atol(argv[4]) : 1;
    HI = argc > 5 ? atoi(argv[5]) : 0;
    if (rot < 1 || rounds < 1 || rounds > 64 || NP < 1 || NP > 8) return 2;
    uint16_t *w = aligned_alloc(4096, bytes * rot);
    if (!w) return 1;
    memset(w, 1, bytes * rot);
    const struct { int mode; const char *name; } v[] = {{1, "old: B 1 MiB, next B block T1 spread"},
                                                       {2, "new: per-stream T0 4 KiB ahead"},
                                                       {0, "none: hardware prefetch only"}};
    double med[3][64];
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 3; i++) {
            double ts[9];
            for (int c = 0; c < 9; c++) ts[c] = run(w + (size_t)c % rot * n * k, n, k, 1u << 20, v[i].mode, 4096, chain);
            qsort(ts, 9, sizeof ts[0], cmpd);
            med[i][r] = ts[4];
        }
    for (int i = 0; i < 3; i++) {
        qsort(med[i], (size_t)rounds, sizeof(double), cmpd);
        printf("%-40s %9.1f us %6.1f GB/s\n", v[i].name, med[i][rounds / 2] * 1e6, (double)bytes / med[i][rounds / 2] / 1e9);
    }
    free(w);
    return sink == 12345.0f;
}
