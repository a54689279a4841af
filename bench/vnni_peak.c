/* vpdpbusd zmm throughput on this CPU, for the w8a8 AVX512-VNNI prefill tile (docs/notes/pack.md):
   24 independent accumulator chains (the 8 x 3 tile) per loop iteration, with 0 or 3 vpxord (the
   tile's flip of its 3 weight vectors, u = w ^ 0x80) beside them. Prints G vpdpbusd / s of CPU time.

     gcc -O2 -mavx512f -mavx512vnni bench/vnni_peak.c -o build/vnni_peak && build/vnni_peak */
#include <stdio.h>
#include <time.h>

#define DP(u, acc) "vpdpbusd %%zmm30, %%zmm" #u ", %%zmm" #acc "\n"
#define ROW(r0, r1, r2) DP(24, r0) DP(25, r1) DP(26, r2)
#define TILE ROW(0, 1, 2) ROW(3, 4, 5) ROW(6, 7, 8) ROW(9, 10, 11) ROW(12, 13, 14) ROW(15, 16, 17) ROW(18, 19, 20) ROW(21, 22, 23)
#define FLIP "vpxord %%zmm31, %%zmm24, %%zmm24\nvpxord %%zmm31, %%zmm25, %%zmm25\nvpxord %%zmm31, %%zmm26, %%zmm26\n"

static double run(int flip, long n) {
    struct timespec t0, t1;
    long i = n;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    if (flip) __asm__ volatile("1:\n" FLIP TILE "dec %0\njnz 1b\n" : "+r"(i) : : "memory");
    else __asm__ volatile("1:\n" TILE "dec %0\njnz 1b\n" : "+r"(i) : : "memory");
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    return (double)n * 24 / ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / 1e9;
}

int main(void) {
    int r;
    for (r = 0; r < 3; r++) printf("24 vpdpbusd: %.3f G/s   + 3 vpxord: %.3f G/s\n", run(0, 20000000), run(1, 20000000));
    return 0;
}
