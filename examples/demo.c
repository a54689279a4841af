/* demo.c - what `make demo` runs: the CPU and the ISA level amxk picks, then one MoE layer of
   Qwen3-30B-A3B and one Gated DeltaNet layer of Qwen3-Next at their real shapes, timed and checked.

   1. CPU: the brand string (CPUID leaves 0x80000002-4; /proc/cpuinfo off x86), what amxk_cpu_init
      detected (CPUID features, those the OS enables, AMX tile-data permission) and the level
      amxk_ctx_init picked, with the features the next level up would need.
   2. MoE (amxk_moe.h): E = 128 experts, top-8, hidden 2048, intermediate 768, SiLU, no shared expert.
      Synthetic weights from a 64-bit LCG seeded per (expert, matrix, row), packed once as bf16
      (amxk_pack_linear) and as int4 groups of 128 (symmetric; random codes and scales packed with
      amxk_pack_quant). Routing: amxk_moe_topk (softmax, renormalized) on random router logits.
      Prefill of 256 tokens and decode of one token (a different token each call, so the active
      experts change as in real decoding) for bf16 (w16a16), int4 with 16-bit activations (w4a16) and
      int4 with int8 activations (w4a8, opts.act_int8). Rates: prefill GFLOP/s = 2 * 256 * 8 * 3 *
      2048 * 768 / time; decode GB/s = bytes of the 8 active experts' packs / time.
   3. GDN (amxk_gdn.h): H = 16 key heads, HV = 32 value heads, Dk = Dv = 128, conv dim 2*H*Dk + HV*Dv
      = 8192, width 4, bf16 activations, fp32 state. Prefill of 16 sequences (1052 tokens) through
      amxk_conv1d_prefill + amxk_gdn (fused gating, in-kernel l2norm), then 8 decode steps
      (amxk_conv1d_update + amxk_gdn recurrent) with the conv and SSM states carried in their pools.
      GFLOP/s of the delta rule counts 7 * Dk * Dv flops per token and value head (decay, S^T k,
      rank-1 update, S^T q); GB/s counts activation bytes in + out (conv) or the state read + written
      (decode).
   4. Checks: naive double-precision loops in this file. MoE: 4 prefill rows and the last decode token
      (their routing recomputed too), weights regenerated from the generator, not read from the packs;
      w4a8 models the documented int8 activation quantization (ACT_INT8 in amxk_moe.h). GDN: 4 value
      heads of 4 sequences over their whole history (prefill + decode). Each prints max |out - ref| /
      max |ref| and PASS (below 2^-6) or FAIL; the program exits 1 on any FAIL.
   Times are medians of several calls on a 2-worker pool (examples/amxk_pool.h).

   Build and run (`make demo` does this):
       cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -pthread -I. -Iexamples examples/demo.c -o build/demo -lm
       ./build/demo [max level, e.g. avx2]                                       */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION
#include "amxk.h"
#include "amxk_gdn.h"
#include "amxk_moe.h"
#include "amxk_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#  include <cpuid.h>
#endif

#define TOL 0.015625 /* 2^-6 of max |ref| */

/* ---- small helpers ---------------------------------------------------------------------------- */

static void *alloc64(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, AMXK_ALIGN, bytes ? bytes : AMXK_ALIGN) != 0) {
        fprintf(stderr, "out of memory (%.0f MB)\n", (double)bytes / 1e6);
        exit(2);
    }
    return p;
}
static void ok(amxk_status s, const char *what) {
    if (s != AMXK_OK) {
        fprintf(stderr, "%s: %s\n", what, amxk_status_string(s));
        exit(2);
    }
}
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
/* 64-bit LCG (Knuth's MMIX constants); uniform [-1, 1) from the top 24 bits */
static uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (a * 0x100000001b3ull) ^ (b << 40) ^ (c << 20);
    s ^= s >> 29, s *= 0xbf58476d1ce4e5b9ull, s ^= s >> 32;
    return s;
}
static uint64_t lcg_next(uint64_t *s) { return *s = *s * 6364136223846793005ull + 1442695040888963407ull; }
static float lcg_u(uint64_t *s) { return (float)(lcg_next(s) >> 40) * (2.0f / 16777216.0f) - 1.0f; }
static float bf(float x) { return amxk_bf16_to_f32(amxk_f32_to_bf16(x)); }

static int n_fail = 0, n_check = 0;
static const char *verdict(double rel) {
    n_check++;
    if (rel < TOL) return "PASS";
    n_fail++;
    return "FAIL";
}

/* ---- 1. CPU and level ------------------------------------------------------------------------- */

static const struct { uint32_t bit; const char *name; } feature_names[] = {
    {AMXK_CPU_AVX2, "avx2"}, {AMXK_CPU_FMA, "fma"}, {AMXK_CPU_F16C, "f16c"}, {AMXK_CPU_AVXVNNI, "avx-vnni"},
    {AMXK_CPU_AVX512F, "avx512f"}, {AMXK_CPU_AVX512BW, "bw"}, {AMXK_CPU_AVX512VL, "vl"}, {AMXK_CPU_AVX512DQ, "dq"},
    {AMXK_CPU_AVX512VNNI, "vnni"}, {AMXK_CPU_AVX512BF16, "bf16"}, {AMXK_CPU_AVX512FP16, "fp16"},
    {AMXK_CPU_AMX_TILE, "amx-tile"}, {AMXK_CPU_AMX_BF16, "amx-bf16"}, {AMXK_CPU_AMX_INT8, "amx-int8"},
    {AMXK_CPU_AMX_FP16, "amx-fp16"}};

static void print_features(uint32_t bits) {
    size_t i;
    int any = 0;
    for (i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++)
        if (bits & feature_names[i].bit) printf("%s%s", any++ ? " " : "", feature_names[i].name);
    if (!any) printf("(none)");
}

static void cpu_brand(char *out, size_t len) {
    out[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
    {
        unsigned r[12], eax, ebx, ecx, edx, i;
        if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) && eax >= 0x80000004u) {
            for (i = 0; i < 3; i++) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
            memcpy(out, r, len < 48 ? len : 48);
            out[len - 1] = 0;
            if (len > 48) out[48] = 0;
        }
        if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
            unsigned fam = (eax >> 8) & 15, model = (eax >> 4) & 15;
            size_t n;
            if (fam == 15) fam += (eax >> 20) & 255;
            if (fam >= 6) model |= ((eax >> 16) & 15) << 4;
            n = strlen(out);
            while (n && out[n - 1] == ' ') out[--n] = 0;
            snprintf(out + n, len - n, " (family 0x%x model 0x%x)", fam, model);
        }
    }
#else
    {
        FILE *f = fopen("/proc/cpuinfo", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f)) {
            char *c = strchr(line, ':');
            if (c && (!strncmp(line, "model name", 10) || !strncmp(line, "CPU part", 8))) {
                snprintf(out, len, "%s", c + 2);
                out[strcspn(out, "\n")] = 0;
                break;
            }
        }
        if (f) fclose(f);
    }
#endif
    while (*out == ' ') memmove(out, out + 1, strlen(out));
    if (!out[0]) snprintf(out, len, "unknown");
}

static void report_cpu(const amxk_ctx *ctx) {
    const amxk_cpu *cpu = amxk_cpu_init();
    char brand[128];
    int t;
    cpu_brand(brand, sizeof brand);
    printf("cpu      %s, %ld online CPUs\n", brand, sysconf(_SC_NPROCESSORS_ONLN));
    printf("cpuid    ");
    print_features(cpu->hw);
    printf("\nusable   ");
    if (cpu->usable == cpu->hw) printf("all of them (XCR0 enables the register state)");
    else print_features(cpu->usable), printf("  (not enabled by the OS: "), print_features(cpu->hw & ~cpu->usable), printf(")");
    printf("\namx      ");
    if (cpu->amx_emulated) printf("software tile emulator (AMXK_AMX_EMULATE build)");
    else if (!(cpu->hw & AMXK_CPU_AMX_TILE)) printf("not reported by CPUID (no tile-data permission to request)");
    else printf("in CPUID; Linux tile-data permission %s",
                cpu->amx_permission == 1 ? "granted" : cpu->amx_permission < 0 ? "REFUSED" : "not requested (AMXK_NO_SYSCALLS)");
    printf("\nlevel    %s%s (usable here:", amxk_tier_name(ctx->tier), ctx->tier == cpu->best_tier ? ", the highest usable" : "");
    for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++)
        if (cpu->tiers & AMXK_TIER_BIT(t)) printf(" %s", amxk_tier_name((amxk_tier)t));
    printf(")\n         ");
    if (ctx->tier < cpu->best_tier) {
        printf("limited by the command line; the best usable is %s\n", amxk_tier_name(cpu->best_tier));
    } else if (ctx->tier == AMXK_TIER_AMX) {
        printf("the top level: AMX tiles for prefill, the vector level for decode\n");
    } else {
        /* why not higher: what the next level (and AMX, above the AVX-512 BF16 level) lacks here */
        int next[2], n = 0, i;
        next[n++] = (int)ctx->tier + 1;
        if ((int)ctx->tier >= AMXK_TIER_AVX512_BF16 && (int)ctx->tier + 1 < AMXK_TIER_AMX) next[n++] = AMXK_TIER_AMX;
        printf("why not higher:");
        for (i = 0; i < n; i++) {
            uint32_t miss = amxk_tier_features((amxk_tier)next[i]) & ~cpu->usable;
            printf("%s %s needs ", i ? ";" : "", amxk_tier_name((amxk_tier)next[i]));
            if (miss) print_features(miss);
            else printf("a build with it");
        }
        printf("\n");
    }
}

/* ---- 2. MoE ----------------------------------------------------------------------------------- */

enum { E = 128, TOPK = 8, HID = 2048, INTER = 768, GROUP = 128, MP = 256, ND = 9, NCHECK = 5 };
#define W_SCALE 0.05f

/* Row r of expert e's matrix m (0: w13 [2*INTER, HID], 1: w2 [HID, INTER]). bf16: uniform in
   +-W_SCALE, rounded. int4: codes uniform in [-8, 7], one scale per group of 128 around W_SCALE/7. */
static void gen_bf16_row(int e, int m, size_t r, size_t k, amxk_bf16 *out) {
    uint64_t s = seed_of((uint64_t)e, (uint64_t)m, (uint64_t)r);
    size_t i;
    for (i = 0; i < k; i++) out[i] = amxk_f32_to_bf16(W_SCALE * lcg_u(&s));
}
static void gen_int4_row(int e, int m, size_t r, size_t k, int8_t *codes, float *scales) {
    uint64_t s = seed_of((uint64_t)e + 1000u, (uint64_t)m, (uint64_t)r);
    size_t i;
    for (i = 0; i < k / GROUP; i++) scales[i] = W_SCALE / 7.0f * (1.0f + 0.25f * lcg_u(&s));
    for (i = 0; i < k; i++) codes[i] = (int8_t)((int)(lcg_next(&s) >> 60) - 8);
}

typedef struct moe_pack {
    int quant;                    /* 0 bf16, 1 int4 g128 */
    size_t b13, b2;               /* bytes of one expert's packs */
    unsigned char *w13, *w2;      /* E packs each, b13 / b2 apart */
    void *scratch;                /* per worker: the generated rows of one matrix */
    size_t scratch_bytes;
} moe_pack;

static void pack_expert(void *task_ctx, size_t e, int worker) {
    moe_pack *p = (moe_pack *)task_ctx;
    unsigned char *buf = (unsigned char *)p->scratch + (size_t)worker * p->scratch_bytes;
    int m;
    for (m = 0; m < 2; m++) {
        size_t n = m ? HID : 2 * INTER, k = m ? INTER : HID, r;
        void *dst = (m ? p->w2 + e * p->b2 : p->w13 + e * p->b13);
        size_t bytes = m ? p->b2 : p->b13;
        if (!p->quant) {
            amxk_bf16 *w = (amxk_bf16 *)buf;
            for (r = 0; r < n; r++) gen_bf16_row((int)e, m, r, k, w + r * k);
            ok(amxk_pack_linear(NULL, dst, bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_BF16, n, k, k), "pack bf16");
        } else {
            amxk_quant q = {AMXK_QFMT_INT4, 0, 1, GROUP};
            int8_t *codes = (int8_t *)buf;
            float *sc = (float *)(buf + n * k);
            for (r = 0; r < n; r++) gen_int4_row((int)e, m, r, k, codes + r * k, sc + r * (k / GROUP));
            ok(amxk_pack_quant(NULL, dst, bytes, &q, codes, k, sc, NULL, n, k), "pack int4");
        }
    }
}

static double make_packs(amxk_ctx *ctx, moe_pack *p, int quant) {
    amxk_quant q = {AMXK_QFMT_INT4, 0, 1, GROUP};
    double t0 = now();
    p->quant = quant;
    if (quant) {
        ok(amxk_pack_quant_size(&q, 2 * INTER, HID, &p->b13), "size");
        ok(amxk_pack_quant_size(&q, HID, INTER, &p->b2), "size");
        p->scratch_bytes = (size_t)2 * INTER * HID * 2; /* codes + scales */
    } else {
        ok(amxk_pack_linear_size(AMXK_DTYPE_BF16, 2 * INTER, HID, &p->b13), "size");
        ok(amxk_pack_linear_size(AMXK_DTYPE_BF16, HID, INTER, &p->b2), "size");
        p->scratch_bytes = (size_t)2 * INTER * HID * 2;
    }
    p->w13 = (unsigned char *)alloc64(E * p->b13);
    p->w2 = (unsigned char *)alloc64(E * p->b2);
    p->scratch = alloc64(p->scratch_bytes * (size_t)ctx->n_workers);
    ctx->parallel_for(ctx->parallel_user, pack_expert, p, E);
    free(p->scratch);
    return now() - t0;
}

/* Reference routing in double: the 8 largest logits, weights exp(l - max) renormalized over them. */
static void ref_route(const float *logits, int32_t *ids, double *w) {
    int taken[E] = {0}, j, e;
    double sum = 0;
    for (j = 0; j < TOPK; j++) {
        int best = -1;
        for (e = 0; e < E; e++)
            if (!taken[e] && (best < 0 || logits[e] > logits[best])) best = e;
        taken[best] = 1, ids[j] = best;
    }
    for (j = 0; j < TOPK; j++) w[j] = exp((double)logits[ids[j]] - logits[ids[0]]), sum += w[j];
    for (j = 0; j < TOPK; j++) w[j] /= sum;
}

/* amxk's documented int8 quantization of one row (ACT_INT8): s = amax / 127, q = rne(v / s), in fp32
   for the input rows (bit-exact), in double for the intermediate (amxk quantizes its fp32 values). */
static void q8_row_f(const amxk_bf16 *x, size_t n, double *out) {
    float amax = 0, s;
    size_t i;
    for (i = 0; i < n; i++) amax = fmaxf(amax, fabsf(amxk_bf16_to_f32(x[i])));
    s = amax > 0 ? amax / 127.0f : 1.0f;
    for (i = 0; i < n; i++) out[i] = (double)nearbyintf(amxk_bf16_to_f32(x[i]) / s) * (double)s;
}
static void q8_row_d(double *v, size_t n) {
    double amax = 0, s;
    size_t i;
    for (i = 0; i < n; i++) amax = fmax(amax, fabs(v[i]));
    s = amax > 0 ? amax / 127.0 : 1.0;
    for (i = 0; i < n; i++) v[i] = nearbyint(v[i] / s) * s;
}

/* Row r of expert e's matrix m as the exact weights, regenerated (not read from the packs). */
static void ref_row(int quant, int e, int m, size_t r, size_t k, double *row) {
    static amxk_bf16 rb[HID];
    static int8_t rc[HID];
    static float rs[HID / GROUP];
    size_t i;
    if (quant) gen_int4_row(e, m, r, k, rc, rs);
    else gen_bf16_row(e, m, r, k, rb);
    for (i = 0; i < k; i++) row[i] = quant ? (double)rc[i] * rs[i / GROUP] : (double)amxk_bf16_to_f32(rb[i]);
}

/* The reference MoE for NCHECK token rows, both activation variants (a16 and, for int4, a8) in one
   pass over each active expert's regenerated weights. ref[v][c][k]. */
static void ref_moe(int quant, const amxk_bf16 *const *xs, const int32_t (*ids)[TOPK], const double (*wt)[TOPK], int nvar,
                    double (*ref)[NCHECK][HID]) {
    static double xv[2][NCHECK][HID], g[2][NCHECK * TOPK][2 * INTER], row[HID];
    int c, v, e, j;
    size_t i, k;
    for (c = 0; c < NCHECK; c++) {
        for (k = 0; k < HID; k++) xv[0][c][k] = amxk_bf16_to_f32(xs[c][k]);
        q8_row_f(xs[c], HID, xv[1][c]);
    }
    memset(ref, 0, sizeof(double) * (size_t)nvar * NCHECK * HID);
    for (e = 0; e < E; e++) {
        int pc[NCHECK * TOPK], pj[NCHECK * TOPK], np = 0, p;
        for (c = 0; c < NCHECK; c++)
            for (j = 0; j < TOPK; j++)
                if (ids[c][j] == e) pc[np] = c, pj[np] = j, np++;
        if (!np) continue;
        for (i = 0; i < 2 * INTER; i++) { /* gate and up rows */
            ref_row(quant, e, 0, i, HID, row);
            for (p = 0; p < np; p++)
                for (v = 0; v < nvar; v++) {
                    double s = 0;
                    for (k = 0; k < HID; k++) s += row[k] * xv[v][pc[p]][k];
                    g[v][p][i] = s;
                }
        }
        for (p = 0; p < np; p++)
            for (v = 0; v < nvar; v++) {
                for (i = 0; i < INTER; i++) {
                    double gg = g[v][p][i];
                    g[v][p][i] = gg / (1.0 + exp(-gg)) * g[v][p][INTER + i];
                }
                if (v == 1) q8_row_d(g[v][p], INTER);
            }
        for (k = 0; k < HID; k++) { /* down rows */
            ref_row(quant, e, 1, k, INTER, row);
            for (p = 0; p < np; p++)
                for (v = 0; v < nvar; v++) {
                    double s = 0;
                    for (i = 0; i < INTER; i++) s += row[i] * g[v][p][i];
                    ref[v][pc[p]][k] += wt[pc[p]][pj[p]] * s;
                }
        }
    }
}

static double row_err(const amxk_bf16 *out, const double *ref) {
    double e = 0, m = 0;
    size_t k;
    for (k = 0; k < HID; k++) {
        e = fmax(e, fabs((double)amxk_bf16_to_f32(out[k]) - ref[k]));
        m = fmax(m, fabs(ref[k]));
    }
    return m > 0 ? e / m : e;
}

static void run_moe(amxk_ctx *ctx) {
    static const char *vname[3] = {"bf16", "w4a16", "w4a8"};
    static const size_t check_rows[NCHECK - 1] = {0, 85, 170, 255};
    amxk_bf16 *xp = (amxk_bf16 *)alloc64((size_t)MP * HID * 2), *xd = (amxk_bf16 *)alloc64((size_t)ND * HID * 2);
    amxk_bf16 *outp = (amxk_bf16 *)alloc64((size_t)MP * HID * 2), *outd[3];
    float *lp = (float *)alloc64((size_t)MP * E * 4), *ld = (float *)alloc64((size_t)ND * E * 4), twp[MP * TOPK], twd[ND * TOPK];
    int32_t idp[MP * TOPK], idd[ND * TOPK], rids[NCHECK][TOPK];
    double rw[NCHECK][TOPK], tpack[2], times[ND], tp, prefill_err[3], decode_err[3], tmed_p[3], tmed_d[3], dec_bytes[3];
    static double ref[2][NCHECK][HID];
    static amxk_bf16 outp_rows[3][NCHECK - 1][HID];
    const amxk_bf16 *xs[NCHECK];
    moe_pack pk[2];
    amxk_moe_router rt;
    uint64_t s = seed_of(7, 7, 7);
    size_t i, ws_bytes = 0, wsz;
    void *ws;
    int v, r, c, j, route_bad = 0;
    const double flops = 2.0 * MP * TOPK * 3.0 * HID * INTER;

    for (i = 0; i < (size_t)MP * HID; i++) xp[i] = amxk_f32_to_bf16(lcg_u(&s));
    for (i = 0; i < (size_t)ND * HID; i++) xd[i] = amxk_f32_to_bf16(lcg_u(&s));
    for (i = 0; i < (size_t)MP * E; i++) lp[i] = 2.0f * lcg_u(&s);
    for (i = 0; i < (size_t)ND * E; i++) ld[i] = 2.0f * lcg_u(&s);
    for (v = 0; v < 3; v++) outd[v] = (amxk_bf16 *)alloc64(HID * 2);

    tpack[0] = make_packs(ctx, &pk[0], 0);
    tpack[1] = make_packs(ctx, &pk[1], 1);
    printf("\nMoE      Qwen3-30B-A3B layer: %d experts, top-%d (softmax, renormalized), hidden %d, intermediate %d, SiLU\n", E,
           TOPK, HID, INTER);
    printf("weights  bf16 %.0f MB packed in %.1f s; int4 g128 symmetric %.0f MB packed in %.1f s (synthetic, 2 workers)\n",
           (double)E * (pk[0].b13 + pk[0].b2) / 1e6, tpack[0], (double)E * (pk[1].b13 + pk[1].b2) / 1e6, tpack[1]);

    memset(&rt, 0, sizeof rt);
    rt.score = AMXK_MOE_SCORE_SOFTMAX, rt.renormalize = 1;
    tp = now();
    ok(amxk_moe_topk(ctx, &rt, MP, E, lp, E, TOPK, twp, idp), "topk");
    tp = now() - tp;
    ok(amxk_moe_topk(ctx, &rt, ND, E, ld, E, TOPK, twd, idd), "topk");

    /* the workspace of the largest call */
    for (v = 0; v < 3; v++) {
        amxk_moe_weights w;
        amxk_moe_opts o;
        memset(&w, 0, sizeof w), memset(&o, 0, sizeof o);
        w.n_experts = E, w.hidden = HID, w.inter = INTER;
        w.w13_base = pk[v > 0].w13, w.w13_stride = pk[v > 0].b13, w.w2_base = pk[v > 0].w2, w.w2_stride = pk[v > 0].b2;
        o.act_int8 = v == 2;
        ok(amxk_moe_workspace_size(ctx, &w, NULL, &o, MP, TOPK, &wsz), "moe ws");
        ws_bytes = wsz > ws_bytes ? wsz : ws_bytes;
    }
    ws = alloc64(ws_bytes);
    memset(ws, 0, ws_bytes);

    for (v = 0; v < 3; v++) {
        amxk_moe_weights w;
        amxk_moe_opts o;
        const moe_pack *p = &pk[v > 0];
        double tt[3];
        memset(&w, 0, sizeof w), memset(&o, 0, sizeof o);
        w.n_experts = E, w.hidden = HID, w.inter = INTER;
        w.w13_base = p->w13, w.w13_stride = p->b13, w.w2_base = p->w2, w.w2_stride = p->b2;
        o.act_int8 = v == 2;
        /* prefill: one warm-up call, then the median of 3 */
        for (r = -1; r < 3; r++) {
            double t0 = now();
            ok(amxk_moe_experts(ctx, &w, NULL, &o, MP, xp, AMXK_DTYPE_BF16, HID, TOPK, twp, idp, outp, AMXK_DTYPE_BF16, HID, ws,
                                ws_bytes), "moe prefill");
            if (r >= 0) tt[r] = now() - t0;
        }
        tmed_p[v] = median(tt, 3);
        for (c = 0; c < NCHECK - 1; c++) memcpy(outp_rows[v][c], outp + check_rows[c] * HID, HID * 2);
        /* decode: ND tokens, one call each (different experts each call); the last one is checked */
        dec_bytes[v] = 0;
        for (r = 0; r < ND; r++) {
            double t0 = now();
            ok(amxk_moe_experts(ctx, &w, NULL, &o, 1, xd + (size_t)r * HID, AMXK_DTYPE_BF16, HID, TOPK, twd + r * TOPK,
                                idd + r * TOPK, outd[v], AMXK_DTYPE_BF16, HID, ws, ws_bytes), "moe decode");
            times[r] = now() - t0;
            dec_bytes[v] += (double)TOPK * (double)(p->b13 + p->b2); /* the 8 ids of a token are distinct */
        }
        dec_bytes[v] /= ND;
        tmed_d[v] = median(times, ND);
    }

    /* references: routing of the checked tokens, then the layer (bf16; int4 a16 + a8 in one pass) */
    for (c = 0; c < NCHECK; c++) {
        const float *l = c < NCHECK - 1 ? lp + check_rows[c] * E : ld + (size_t)(ND - 1) * E;
        const int32_t *got = c < NCHECK - 1 ? idp + check_rows[c] * TOPK : idd + (ND - 1) * TOPK;
        const float *gw = c < NCHECK - 1 ? twp + check_rows[c] * TOPK : twd + (ND - 1) * TOPK;
        xs[c] = c < NCHECK - 1 ? xp + check_rows[c] * HID : xd + (size_t)(ND - 1) * HID;
        ref_route(l, rids[c], rw[c]);
        for (j = 0; j < TOPK; j++)
            if (rids[c][j] != got[j] || fabs(rw[c][j] - gw[j]) > 1e-5) route_bad = 1;
    }
    for (v = 0; v < 3; v++) {
        if (v < 2) ref_moe(v, xs, (const int32_t(*)[TOPK])rids, (const double(*)[TOPK])rw, v ? 2 : 1, ref);
        prefill_err[v] = 0;
        for (c = 0; c < NCHECK - 1; c++) prefill_err[v] = fmax(prefill_err[v], row_err(outp_rows[v][c], ref[v == 2][c]));
        decode_err[v] = row_err(outd[v], ref[v == 2][NCHECK - 1]);
    }
    printf("routing  amxk_moe_topk, %d tokens: %.3f ms; ids and weights of the 5 checked tokens vs fp64: %s\n", MP, tp * 1e3,
           route_bad ? "FAIL" : "PASS");
    n_check++, n_fail += route_bad;
    printf("  format  phase    tokens   time/call   rate                       checked   err/max|ref|\n");
    for (v = 0; v < 3; v++) {
        char rate[64];
        snprintf(rate, sizeof rate, "%6.1f GFLOP/s", flops / tmed_p[v] / 1e9);
        printf("  %-6s  prefill  %6d  %8.2f ms   %-25s  %d rows   %9.2e  %s\n", vname[v], MP, tmed_p[v] * 1e3, rate, NCHECK - 1,
               prefill_err[v], verdict(prefill_err[v]));
        snprintf(rate, sizeof rate, "%6.1f GB/s of %.1f MB", dec_bytes[v] / tmed_d[v] / 1e9, dec_bytes[v] / 1e6);
        printf("  %-6s  decode   %6d  %8.2f ms   %-25s  1 row    %9.2e  %s\n", vname[v], 1, tmed_d[v] * 1e3, rate, decode_err[v],
               verdict(decode_err[v]));
    }
    printf("  (prefill: median of 3 calls after a warm-up; decode: median of %d calls, each a new token and its 8 experts;\n"
           "   GB/s = bytes of those 8 experts' packs / time)\n", ND);
    free(ws), free(xp), free(xd), free(outp), free(lp), free(ld);
    for (v = 0; v < 3; v++) free(outd[v]);
    for (v = 0; v < 2; v++) free(pk[v].w13), free(pk[v].w2);
}

/* ---- 3. GDN ----------------------------------------------------------------------------------- */

enum { H = 16, HV = 32, DK = 128, DV = 128, CW = 4, DIM = 2 * H * DK + HV * DV, NSEQ = 16, STEPS = 8 };
static const int chk_seq[4] = {0, 5, 10, 15}, chk_head[4] = {0, 9, 22, 31};

static void run_gdn(amxk_ctx *ctx) {
    static float convw[DIM * CW], A_log[HV], dt_bias[HV];
    int32_t qsl[NSEQ + 1], dq[NSEQ + 1], slot[NSEQ];
    uint8_t has_init[NSEQ];
    amxk_gdn_params p = amxk_gdn_params_default(H, HV, DK, DV);
    amxk_gdn_inputs in;
    amxk_conv_state cst;
    amxk_gdn_state sst;
    size_t cw_bytes, ws_bytes, T, i;
    void *cw, *ws;
    amxk_bf16 *x, *y, *ab, *bb, *o, *xd, *yd, *abd, *bbd, *od;
    double tc[3], tg[3], tcd[STEPS], tgd[STEPS], t0, max_err = 0, max_ref = 0, tcm, tgm, tcdm, tgdm;
    uint64_t s = seed_of(11, 11, 11);
    int n, r, step;

    for (n = 0, qsl[0] = 0; n < NSEQ; n++) {
        qsl[n + 1] = qsl[n] + 32 + (n * 37) % 65; /* 32 .. 96 tokens */
        slot[n] = NSEQ - 1 - n, has_init[n] = 0;
    }
    T = (size_t)qsl[NSEQ];
    for (i = 0; i < DIM * CW; i++) convw[i] = bf(0.5f * lcg_u(&s));
    for (i = 0; i < HV; i++) A_log[i] = logf(1.0f + 7.5f * (lcg_u(&s) + 1.0f)), dt_bias[i] = 0.3f * lcg_u(&s);
    ok(amxk_conv1d_pack_size(DIM, CW, &cw_bytes), "conv size");
    cw = alloc64(cw_bytes);
    ok(amxk_conv1d_pack(NULL, cw, cw_bytes, convw, AMXK_DTYPE_F32, DIM, CW, CW, NULL), "conv pack");
    memset(&cst, 0, sizeof cst);
    cst.dtype = AMXK_DTYPE_BF16, cst.n_slots = NSEQ, cst.state_len = CW - 1;
    cst.dim_stride = 1, cst.tok_stride = DIM, cst.slot_stride = (size_t)DIM * (CW - 1);
    cst.data = alloc64((size_t)NSEQ * DIM * (CW - 1) * 2);
    sst.n_slots = NSEQ, sst.slot_stride = (size_t)HV * DK * DV;
    sst.data = (float *)alloc64((size_t)NSEQ * HV * DK * DV * 4);
    memset(sst.data, 0, (size_t)NSEQ * HV * DK * DV * 4);
    ok(amxk_gdn_workspace_size(ctx, &p, AMXK_GDN_AUTO, &ws_bytes), "gdn ws");
    ws = alloc64(ws_bytes);

    x = (amxk_bf16 *)alloc64(T * DIM * 2), y = (amxk_bf16 *)alloc64(T * DIM * 2), o = (amxk_bf16 *)alloc64(T * HV * DV * 2);
    ab = (amxk_bf16 *)alloc64(T * HV * 2), bb = (amxk_bf16 *)alloc64(T * HV * 2);
    xd = (amxk_bf16 *)alloc64((size_t)STEPS * NSEQ * DIM * 2), yd = (amxk_bf16 *)alloc64((size_t)NSEQ * DIM * 2);
    od = (amxk_bf16 *)alloc64((size_t)STEPS * NSEQ * HV * DV * 2);
    abd = (amxk_bf16 *)alloc64((size_t)STEPS * NSEQ * HV * 2), bbd = (amxk_bf16 *)alloc64((size_t)STEPS * NSEQ * HV * 2);
    for (i = 0; i < T * DIM; i++) x[i] = amxk_f32_to_bf16(lcg_u(&s));
    for (i = 0; i < T * HV; i++) ab[i] = amxk_f32_to_bf16(2.0f * lcg_u(&s)), bb[i] = amxk_f32_to_bf16(2.0f * lcg_u(&s));
    for (i = 0; i < (size_t)STEPS * NSEQ * DIM; i++) xd[i] = amxk_f32_to_bf16(lcg_u(&s));
    for (i = 0; i < (size_t)STEPS * NSEQ * HV; i++) abd[i] = amxk_f32_to_bf16(2.0f * lcg_u(&s)), bbd[i] = amxk_f32_to_bf16(2.0f * lcg_u(&s));

    memset(&in, 0, sizeof in);
    in.dtype = AMXK_DTYPE_BF16, in.ab_dtype = AMXK_DTYPE_BF16, in.A_log = A_log, in.dt_bias = dt_bias;
    /* prefill (from zero states: repeating it gives the same states), median of 3 */
    for (r = 0; r < 3; r++) {
        t0 = now();
        ok(amxk_conv1d_prefill(ctx, cw, cw_bytes, 1, NSEQ, qsl, slot, has_init, x, AMXK_DTYPE_BF16, DIM, y, AMXK_DTYPE_BF16, DIM,
                               &cst), "conv prefill");
        tc[r] = now() - t0;
        in.q = y, in.k = y + H * DK, in.v = y + 2 * H * DK, in.ldq = in.ldk = in.ldv = DIM;
        in.a = ab, in.b = bb, in.lda = in.ldb = HV;
        t0 = now();
        ok(amxk_gdn(ctx, &p, AMXK_GDN_AUTO, &in, NSEQ, qsl, slot, has_init, &sst, o, AMXK_DTYPE_BF16, HV * DV, ws, ws_bytes),
           "gdn prefill");
        tg[r] = now() - t0;
    }
    /* decode steps: one token per sequence, states carried */
    for (n = 0; n <= NSEQ; n++) dq[n] = n;
    for (step = 0; step < STEPS; step++) {
        const amxk_bf16 *xs = xd + (size_t)step * NSEQ * DIM;
        t0 = now();
        ok(amxk_conv1d_update(ctx, cw, cw_bytes, 1, NSEQ, NULL, slot, NULL, xs, AMXK_DTYPE_BF16, DIM, yd, AMXK_DTYPE_BF16, DIM,
                              &cst), "conv update");
        tcd[step] = now() - t0;
        in.q = yd, in.k = yd + H * DK, in.v = yd + 2 * H * DK;
        in.a = abd + (size_t)step * NSEQ * HV, in.b = bbd + (size_t)step * NSEQ * HV;
        t0 = now();
        ok(amxk_gdn(ctx, &p, AMXK_GDN_RECURRENT, &in, NSEQ, dq, slot, NULL, &sst, od + (size_t)step * NSEQ * HV * DV,
                    AMXK_DTYPE_BF16, HV * DV, ws, ws_bytes), "gdn decode");
        tgd[step] = now() - t0;
    }

    /* reference: 4 value heads of 4 sequences, whole history (prefill tokens, then the decode tokens) */
    for (n = 0; n < 4; n++) {
        int sq = chk_seq[n], L0 = qsl[sq + 1] - qsl[sq], L = L0 + STEPS, hh, tt, j, kk, c;
        for (hh = 0; hh < 4; hh++) {
            static double S[DK][DV], cv[3][DK];
            int hv = chk_head[hh], h = hv / (HV / H);
            const int ch0[3] = {h * DK, H * DK + h * DK, 2 * H * DK + hv * DV};
            memset(S, 0, sizeof S);
            for (tt = 0; tt < L; tt++) {
                double q[DK], k[DK], qs = 0, ks = 0, a, b, g, beta, al, u[DV], xx;
                /* conv + silu of the head's q, k, v channels (amxk rounds the conv output to bf16) */
                for (c = 0; c < 3; c++)
                    for (kk = 0; kk < DK; kk++) {
                        int ch = ch0[c] + kk;
                        double acc = 0;
                        for (j = 0; j < CW; j++) {
                            int src = tt - (CW - 1) + j;
                            if (src < 0) continue;
                            acc += (double)convw[ch * CW + j] *
                                   amxk_bf16_to_f32(src < L0 ? x[(size_t)(qsl[sq] + src) * DIM + ch]
                                                             : xd[((size_t)(src - L0) * NSEQ + sq) * DIM + ch]);
                        }
                        cv[c][kk] = bf((float)(acc / (1.0 + exp(-acc))));
                    }
                for (kk = 0; kk < DK; kk++) q[kk] = cv[0][kk], k[kk] = cv[1][kk], qs += q[kk] * q[kk], ks += k[kk] * k[kk];
                for (kk = 0; kk < DK; kk++) q[kk] *= 1.0 / sqrt(qs + 1e-6) / sqrt((double)DK), k[kk] /= sqrt(ks + 1e-6);
                if (tt < L0) a = amxk_bf16_to_f32(ab[(size_t)(qsl[sq] + tt) * HV + hv]), b = amxk_bf16_to_f32(bb[(size_t)(qsl[sq] + tt) * HV + hv]);
                else a = amxk_bf16_to_f32(abd[((size_t)(tt - L0) * NSEQ + sq) * HV + hv]), b = amxk_bf16_to_f32(bbd[((size_t)(tt - L0) * NSEQ + sq) * HV + hv]);
                xx = a + dt_bias[hv];
                g = -exp((double)A_log[hv]) * (xx > 20 ? xx : log1p(exp(xx)));
                beta = 1.0 / (1.0 + exp(-b));
                al = exp(g);
                for (j = 0; j < DV; j++) {
                    double pk = 0;
                    for (kk = 0; kk < DK; kk++) pk += S[kk][j] * k[kk];
                    u[j] = beta * (cv[2][j] - al * pk);
                }
                for (kk = 0; kk < DK; kk++)
                    for (j = 0; j < DV; j++) S[kk][j] = al * S[kk][j] + k[kk] * u[j];
                for (j = 0; j < DV; j++) {
                    double ov = 0, got;
                    for (kk = 0; kk < DK; kk++) ov += S[kk][j] * q[kk];
                    got = amxk_bf16_to_f32(tt < L0 ? o[(size_t)(qsl[sq] + tt) * HV * DV + hv * DV + j]
                                                   : od[((size_t)(tt - L0) * NSEQ + sq) * HV * DV + hv * DV + j]);
                    max_err = fmax(max_err, fabs(got - ov)), max_ref = fmax(max_ref, fabs(ov));
                }
            }
        }
    }
    tcm = median(tc, 3), tgm = median(tg, 3), tcdm = median(tcd, STEPS), tgdm = median(tgd, STEPS);
    printf("\nGDN      Qwen3-Next linear-attention layer: H=%d HV=%d Dk=Dv=%d, conv dim %d width %d, bf16 in/out, fp32 state\n", H,
           HV, DK, DIM, CW);
    printf("  op              tokens   time/call   rate\n");
    printf("  conv1d prefill  %6zu  %8.2f ms   %6.1f GB/s (activations in + out)\n", T, tcm * 1e3, (double)T * DIM * 4 / tcm / 1e9);
    printf("  gdn prefill     %6zu  %8.2f ms   %6.1f GFLOP/s (7 Dk Dv flops per token and value head)\n", T, tgm * 1e3,
           (double)T * HV * 7.0 * DK * DV / tgm / 1e9);
    printf("  conv1d decode   %6d  %8.2f ms   %6.1f GB/s (in + out + conv state)\n", NSEQ, tcdm * 1e3,
           (double)NSEQ * DIM * 2 * (2 + 2 * (CW - 1)) / tcdm / 1e9);
    printf("  gdn decode      %6d  %8.2f ms   %6.1f GB/s (state %.1f MB read + written)\n", NSEQ, tgdm * 1e3,
           2.0 * NSEQ * HV * DK * DV * 4 / tgdm / 1e9, (double)NSEQ * HV * DK * DV * 4 / 1e6);
    printf("  (%d sequences of 32-96 tokens, prefill median of 3 calls; then %d decode steps, median, states carried)\n", NSEQ,
           STEPS);
    printf("  check: value heads 0 9 22 31 of 4 sequences, whole history, vs fp64: err/max|ref| %.2e  %s\n", max_err / max_ref,
           verdict(max_err / max_ref));
    free(cw), free(ws), free(cst.data), free(sst.data), free(x), free(y), free(o), free(ab), free(bb), free(xd), free(yd), free(od),
        free(abd), free(bbd);
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    amxk_pool pool;
    amxk_ctx ctx;
    double t0 = now();
    int t;

    memset(&ctx, 0, sizeof ctx);
    if (argc > 1) { /* optional: the highest level to allow, e.g. `build/demo avx2` */
        for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++) {
            ctx.isa_allow |= AMXK_TIER_BIT(t);
            if (!strcmp(argv[1], amxk_tier_name((amxk_tier)t))) break;
        }
        if (t == AMXK_TIER_COUNT) {
            fprintf(stderr, "usage: %s [scalar|avx2|avx512|avx512_vnni|avx512_bf16|avx512_fp16|amx]\n", argv[0]);
            return 2;
        }
    }
    if (amxk_pool_init(&pool, 2) != 0) {
        fprintf(stderr, "amxk_pool_init failed\n");
        return 2;
    }
    amxk_pool_bind(&pool, &ctx);
    ok(amxk_ctx_init(&ctx), "amxk_ctx_init");
    printf("amxk %s demo: %d worker threads (examples/amxk_pool.h); every figure below is measured in this run\n", amxk_version(),
           ctx.n_workers);
    report_cpu(&ctx);
    run_moe(&ctx);
    run_gdn(&ctx);
    amxk_pool_destroy(&pool);
    printf("\n%s: %d of %d checks passed; total %.1f s\n", n_fail ? "FAIL" : "PASS", n_check - n_fail, n_check, now() - t0);
    return n_fail ? 1 : 0;
}
