/* hello.c - the smallest amxk program: a context with a thread pool, the CPU report, a few conversions.

   Shows: the AMXK_IMPLEMENTATION include, plugging examples/amxk_pool.h into amxk_ctx, what
   amxk_cpu_init() detects, which tier amxk_ctx_init() picks, and amxk_convert().

   Build and run (from the repository root; `make build/hello` builds it):
       cc -std=c99 -O2 -pthread -I. examples/hello.c -o build/hello -lm && build/hello
   Add -DAMXK_AMX_EMULATE to get the AMX tier on any CPU through the software tile emulator. */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION
#include "amxk.h"
#include "amxk_pool.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void print_features(const char *label, uint32_t bits) {
    static const struct { uint32_t bit; const char *name; } names[] = {
        {AMXK_CPU_AVX2, "avx2"}, {AMXK_CPU_FMA, "fma"}, {AMXK_CPU_F16C, "f16c"},
        {AMXK_CPU_AVX512F, "avx512f"}, {AMXK_CPU_AVX512BW, "avx512bw"}, {AMXK_CPU_AVX512VL, "avx512vl"},
        {AMXK_CPU_AVX512DQ, "avx512dq"}, {AMXK_CPU_AVX512VNNI, "avx512vnni"}, {AMXK_CPU_AVX512BF16, "avx512bf16"},
        {AMXK_CPU_AVX512FP16, "avx512fp16"}, {AMXK_CPU_AVXVNNI, "avxvnni"}, {AMXK_CPU_AMX_TILE, "amx-tile"},
        {AMXK_CPU_AMX_BF16, "amx-bf16"}, {AMXK_CPU_AMX_INT8, "amx-int8"}, {AMXK_CPU_AMX_FP16, "amx-fp16"}};
    size_t i;
    printf("  %-8s", label);
    if (!bits) printf(" (none)");
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (bits & names[i].bit) printf(" %s", names[i].name);
    printf("\n");
}

/* A task for the pool: converts one slice of a big array and records which worker ran it. */
typedef struct slice_job {
    const amxk_ctx *ctx;
    const float *src;
    amxk_bf16 *dst;
    size_t n, n_tasks;
    int ran_on[16];
} slice_job;

static void convert_slice(void *task_ctx, size_t task, int worker) {
    slice_job *job = (slice_job *)task_ctx;
    size_t begin = job->n * task / job->n_tasks, end = job->n * (task + 1) / job->n_tasks;
    job->ran_on[task] = worker;
    (void)amxk_convert(job->ctx, job->dst + begin, AMXK_DTYPE_BF16, job->src + begin, AMXK_DTYPE_F32, end - begin);
}

int main(void) {
    const amxk_cpu *cpu = amxk_cpu_init();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int n_workers = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
    amxk_pool pool;
    amxk_ctx ctx;
    amxk_status st;
    int t, used[64];
    const float values[6] = {1.0f, -2.75f, 3.14159265f, 1e-6f, 300.0f, 70000.0f};

    printf("amxk %s\n", amxk_version());
    print_features("cpuid:", cpu->hw);
    print_features("usable:", cpu->usable);
    printf("  tiers:  ");
    for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++)
        if (cpu->tiers & AMXK_TIER_BIT(t)) printf(" %s", amxk_tier_name((amxk_tier)t));
    printf("%s\n", cpu->amx_emulated ? "  (amx = software tile emulator)" : "");
    printf("  amx permission: %d\n", cpu->amx_permission);

    if (amxk_pool_init(&pool, n_workers) != 0) {
        fprintf(stderr, "amxk_pool_init(%d) failed\n", n_workers);
        return 1;
    }
    memset(&ctx, 0, sizeof ctx); /* isa_allow = AMXK_ISA_ALL: the best usable tier */
    amxk_pool_bind(&pool, &ctx);
    st = amxk_ctx_init(&ctx);
    if (st != AMXK_OK) {
        fprintf(stderr, "amxk_ctx_init: %s\n", amxk_status_string(st));
        amxk_pool_destroy(&pool);
        return 1;
    }
    printf("context: tier %s, %d workers\n", amxk_tier_name(ctx.tier), ctx.n_workers);

    /* the pool behind the context: 16 tasks, each converts 1/16 of an array (amxk ops call
       ctx.parallel_for the same way; amxk_convert itself is serial) */
    {
        static float src[1 << 20];
        static amxk_bf16 dst[1 << 20];
        slice_job job;
        size_t i, mismatches = 0;
        for (i = 0; i < (size_t)1 << 20; i++) src[i] = (float)i * 0.001f - 300.0f;
        job.ctx = &ctx;
        job.src = src;
        job.dst = dst;
        job.n = (size_t)1 << 20;
        job.n_tasks = 16;
        ctx.parallel_for(ctx.parallel_user, convert_slice, &job, job.n_tasks);
        for (i = 0; i < job.n; i++) mismatches += dst[i] != amxk_f32_to_bf16(src[i]);
        memset(used, 0, sizeof used);
        for (t = 0; t < 16; t++) used[job.ran_on[t]]++;
        printf("pool: 16 tasks converted %zu floats to bf16 (%zu mismatches); tasks per worker:", job.n, mismatches);
        for (t = 0; t < n_workers; t++) printf(" w%d=%d", t, used[t]);
        printf("\n");
    }

    /* conversions: f32 -> each narrow type -> f32 */
    {
        static const amxk_dtype types[4] = {AMXK_DTYPE_BF16, AMXK_DTYPE_F16, AMXK_DTYPE_FP8_E4M3, AMXK_DTYPE_FP8_E5M2};
        static const char *names[4] = {"bf16", "f16", "e4m3", "e5m2"};
        unsigned char narrow[6 * 2];
        float back[4][6];
        int i, k;
        for (k = 0; k < 4; k++) {
            st = amxk_convert(&ctx, narrow, types[k], values, AMXK_DTYPE_F32, 6);
            if (st == AMXK_OK) st = amxk_convert(&ctx, back[k], AMXK_DTYPE_F32, narrow, types[k], 6);
            if (st != AMXK_OK) {
                fprintf(stderr, "amxk_convert: %s\n", amxk_status_string(st));
                amxk_pool_destroy(&pool);
                return 1;
            }
        }
        printf("%14s %14s %14s %14s %14s\n", "f32", names[0], names[1], names[2], names[3]);
        for (i = 0; i < 6; i++) {
            printf("%14.8g", values[i]);
            for (k = 0; k < 4; k++) printf(" %14.8g", back[k][i]);
            printf("\n");
        }
    }
    amxk_pool_destroy(&pool);
    return 0;
}
