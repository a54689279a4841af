/* amxk_bench.c - benchmark driver for amxk: one program, one subcommand per op.

       build/amxk_bench                              list the subcommands
       build/amxk_bench stream --mb 1024 --threads 2 streaming read bandwidth (the DRAM roofline)

   Options every subcommand takes:
       --threads T    workers (default 1). T > 1: examples/amxk_pool.h plugged into amxk_ctx through
                      amxk_pool_bind (the calling thread is worker 0); T = 1: no pool, serial.
       --isa I        scalar|avx2|avx512|avx512_vnni|avx512_bf16|avx512_fp16|amx|auto (default auto)
                      -> ctx.isa_allow; a level that is not usable on this CPU/build is refused with
                      a message (exit 2).
       --family F     auto|intel|other (default auto: the CPU's) -> ctx.family: the decode kernels'
                      memory streaming (streams in flight, prefetch; the same results).
       --rotate-mb R  cycle through copies of the weights totalling R MiB (default 0: one hot copy);
                      choose R well above the last-level cache to measure weights coming from DRAM.
       --reps N       timed calls (default 20); --warmup W untimed calls first (default 2).
   Each measured case prints one line (see bench/bench_util.h):
       op=<name> key=value ... median_us=<float> gflops=<float> gbs=<float>
   where median_us is the median wall time of one call (CLOCK_MONOTONIC, each call timed alone).

   ADDING A SUBCOMMAND: write `static int cmd_<name>(bench_env *env, const bench_args *args)` (read
   the shape with bench_int/bench_str, set up buffers - weights through bench_rot -, time a closure
   with bench_measure, print with bench_line) and add one row to bench_cmds[] at the end of the file
   with the option names it accepts. The environment (pool, context, tier) is set up before it runs.

   Build: `make bench-bin` (plain -O2; the AVX2 read loop is compiled with a target attribute). */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION
#include "../amxk.h"
#include "../amxk_pack.h"
#include "../amxk_moe.h"
#include "../amxk_gdn.h"
#include "../examples/amxk_pool.h"
#include "bench_util.h"

#include <unistd.h>

/* ---- environment: options common to all subcommands, pool, context ---------------------------- */

typedef struct bench_env {
    int threads;
    int reps, warmup;
    double rotate_mb;
    const char *isa; /* as given */
    amxk_pool pool;
    int have_pool;
    amxk_ctx ctx; /* initialised: ctx.tier is the tier ops use */
} bench_env;

static void bench_env_init(bench_env *e, const bench_args *a) {
    static const struct { const char *name; unsigned allow; } isas[] = {
        {"auto", AMXK_ISA_ALL},
        {"scalar", AMXK_TIER_BIT(AMXK_TIER_SCALAR)},
        {"avx2", AMXK_TIER_BIT(AMXK_TIER_AVX2)},
        {"avx512", AMXK_TIER_BIT(AMXK_TIER_AVX512)},
        {"avx512_vnni", AMXK_TIER_BIT(AMXK_TIER_AVX512_VNNI)},
        {"avx512_bf16", AMXK_TIER_BIT(AMXK_TIER_AVX512_BF16)},
        {"avx512_fp16", AMXK_TIER_BIT(AMXK_TIER_AVX512_FP16)},
        {"amx", AMXK_TIER_BIT(AMXK_TIER_AMX)},
    };
    const amxk_cpu *cpu = amxk_cpu_init();
    amxk_status st;
    size_t i;
    memset(e, 0, sizeof *e);
    e->threads = (int)bench_int(a, "threads", 1);
    e->reps = (int)bench_int(a, "reps", 20);
    e->warmup = (int)bench_int(a, "warmup", 2);
    e->rotate_mb = bench_dbl(a, "rotate-mb", 0.0);
    e->isa = bench_str(a, "isa", "auto");
    if (e->threads < 1 || e->threads > 1024) bench_die("--threads must be in 1..1024");
    if (e->reps < 1 || e->warmup < 0) bench_die("--reps must be >= 1 and --warmup >= 0");
    if (e->rotate_mb < 0) bench_die("--rotate-mb must be >= 0");
    for (i = 0; i < sizeof isas / sizeof isas[0]; i++)
        if (strcmp(e->isa, isas[i].name) == 0) break;
    if (i == sizeof isas / sizeof isas[0]) bench_die("--isa must be one of auto, scalar, avx2, avx512, avx512_vnni, avx512_bf16, avx512_fp16, amx");
    e->ctx.isa_allow = isas[i].allow;
    {
        const char *fam = bench_str(a, "family", "auto");
        if (strcmp(fam, "auto") != 0 && strcmp(fam, "intel") != 0 && strcmp(fam, "other") != 0)
            bench_die("--family must be one of auto, intel, other");
        e->ctx.family = fam[0] == 'i' ? AMXK_FAMILY_INTEL : fam[0] == 'o' ? AMXK_FAMILY_OTHER : AMXK_FAMILY_AUTO;
    }
    if (e->threads > 1) {
        if (amxk_pool_init(&e->pool, e->threads) != 0) bench_die("cannot start a pool of %d workers", e->threads);
        e->have_pool = 1;
        amxk_pool_bind(&e->pool, &e->ctx);
    }
    st = amxk_ctx_init(&e->ctx);
    if (st != AMXK_OK) {
        int t;
        fprintf(stderr, "error: --isa %s: %s; usable tiers here:", e->isa, amxk_status_string(st));
        for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++)
            if (cpu->tiers & AMXK_TIER_BIT(t)) fprintf(stderr, " %s", amxk_tier_name((amxk_tier)t));
        fprintf(stderr, "%s\n", cpu->amx_emulated ? " (amx emulated)" : "");
        if (e->have_pool) amxk_pool_destroy(&e->pool);
        exit(2);
    }
}

static void bench_env_free(bench_env *e) {
    if (e->have_pool) amxk_pool_destroy(&e->pool);
    e->have_pool = 0;
}

/* Runs fn(task_ctx, t, w) for t in [0, n_tasks) through the context's parallel_for (the same
   contract amxk ops use), or serially when there is none. */
static void bench_parallel(const bench_env *e, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    size_t t;
    if (e->ctx.parallel_for && n_tasks > 1) {
        e->ctx.parallel_for(e->ctx.parallel_user, fn, task_ctx, n_tasks);
        return;
    }
    for (t = 0; t < n_tasks; t++) fn(task_ctx, t, 0);
}

/* ---- stream: read bandwidth ----------------------------------------------------------------- */

/* Sum of x[0..n) in 8 independent accumulators (scalar) or 8 x 8 lanes (AVX2): enough loads in
   flight for the memory system, not limited by add latency. x is 64-byte aligned, n % 64 == 0. */
static float stream_sum_scalar(const float *x, size_t n) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t i;
    for (i = 0; i < n; i += 8) {
        s0 += x[i + 0], s1 += x[i + 1], s2 += x[i + 2], s3 += x[i + 3];
        s4 += x[i + 4], s5 += x[i + 5], s6 += x[i + 6], s7 += x[i + 7];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#  define BENCH_HAVE_AVX2 1
#  include <immintrin.h>
__attribute__((target("avx2"))) static float stream_sum_avx2(const float *x, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    float lanes[8];
    size_t i;
    for (i = 0; i < n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(x + i + 0));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(x + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(x + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(x + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(x + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(x + i + 56));
    }
    a0 = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    a4 = _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7));
    _mm256_storeu_ps(lanes, _mm256_add_ps(a0, a4));
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}
#else
#  define BENCH_HAVE_AVX2 0
#endif

#define STREAM_CHUNK ((size_t)1 << 22) /* floats per task (16 MiB): sums of 1.0f stay exact */

typedef struct stream_job {
    const bench_env *env;
    float *x;
    size_t n, n_tasks;
    int use_avx2;
    double *partial; /* one per task, spaced 8 apart (own cache line) */
} stream_job;

static void stream_task(void *task_ctx, size_t t, int w) {
    stream_job *j = (stream_job *)task_ctx;
    size_t b = j->n * t / j->n_tasks / 64 * 64, e = t + 1 == j->n_tasks ? j->n : j->n * (t + 1) / j->n_tasks / 64 * 64;
    float s;
    (void)w;
#if BENCH_HAVE_AVX2
    if (j->use_avx2) s = stream_sum_avx2(j->x + b, e - b);
    else
#endif
        s = stream_sum_scalar(j->x + b, e - b);
    j->partial[8 * t] = s;
}

static void stream_fill_task(void *task_ctx, size_t t, int w) { /* first touch by the workers */
    stream_job *j = (stream_job *)task_ctx;
    size_t b = j->n * t / j->n_tasks / 64 * 64, e = t + 1 == j->n_tasks ? j->n : j->n * (t + 1) / j->n_tasks / 64 * 64, i;
    (void)w;
    for (i = b; i < e; i++) j->x[i] = 1.0f;
}

static volatile double bench_sink;

static void stream_call(void *user, size_t rep) {
    stream_job *j = (stream_job *)user;
    double total = 0;
    size_t t;
    (void)rep;
    bench_parallel(j->env, stream_task, j, j->n_tasks);
    for (t = 0; t < j->n_tasks; t++) total += j->partial[8 * t];
    if (total != (double)j->n) bench_die("stream: wrong sum %.1f (expected %zu)", total, j->n);
    bench_sink = total;
}

static int cmd_stream(bench_env *env, const bench_args *a) {
    double mb = bench_dbl(a, "mb", 1024.0), med;
    stream_job j;
    size_t bytes;
    if (!(mb > 0) || mb > 1048576.0) bench_die("--mb must be in (0, 1048576]");
    bytes = (size_t)(mb * 1048576.0) / 256 * 256;
    if (bytes == 0) bytes = 256;
    memset(&j, 0, sizeof j);
    j.env = env;
    j.n = bytes / sizeof(float);
    j.n_tasks = (j.n + STREAM_CHUNK - 1) / STREAM_CHUNK;
    if (j.n_tasks < (size_t)env->threads * 4 && j.n >= (size_t)env->threads * 4 * 1024) j.n_tasks = (size_t)env->threads * 4;
    /* AVX2 loads unless --isa scalar (or the CPU has no AVX2) */
    j.use_avx2 = BENCH_HAVE_AVX2 && env->ctx.tier >= AMXK_TIER_AVX2 && (amxk_cpu_init()->usable & AMXK_CPU_AVX2);
    j.x = (float *)bench_alloc(bytes, 4096);
    j.partial = (double *)bench_alloc(j.n_tasks * 8 * sizeof(double), 64);
    bench_parallel(env, stream_fill_task, &j, j.n_tasks);
    med = bench_measure(stream_call, &j, env->warmup, env->reps);
    bench_line(med, 0.0, (double)bytes, "op=stream mb=%g threads=%d", mb, env->threads);
    free(j.partial);
    free(j.x);
    return 0;
}

#include "cmd_linear.h"
#include "cmd_gdn.h"
#include "cmd_moe.h"

/* ---- subcommand table --------------------------------------------------------------------- */

typedef struct bench_cmd {
    const char *name;
    const char *keys; /* the subcommand's own options, comma-separated (the common ones are implied) */
    int (*run)(bench_env *env, const bench_args *args);
    const char *help;
} bench_cmd;

static const bench_cmd bench_cmds[] = {
    {"stream", "mb", cmd_stream, "--mb R: read R MiB of floats per call (sum); gbs = read bandwidth"},
    {"linear", "m,n,k,dtype,out,bias,group,asym,act,q8ws", cmd_linear, "amxk_pack.h packed linear y = x W^T (+bias): --m --n --k --dtype bf16|fp16|f32|int8|int4|int2|fp8e4m3|fp8e5m2 [--group G --asym 0|1 --act bf16|int8|uint8 --q8ws 1|0; f32: --act bf16|f32|fp16] --out f32|bf16|fp16 --bias 0|1"},
    {"moe", "m,experts,topk,hidden,inter,dtype,act,fn,layers,seed,routing-out", cmd_moe, "amxk_moe.h fused experts: --m --experts --topk --hidden --inter --dtype bf16|fp16|int8|int4|int2|fp8e4m3 --act bf16|int8 --fn silu|gelu_tanh|gelu_erf|swiglu_oai --layers L --seed S --routing-out FILE"},
    {"gdn-decode", "batch,hk,hv,dk,dv,vfirst", cmd_gdn_decode, "amxk_gdn.h gated delta rule, one token per sequence: --batch --hk --hv --dk --dv --vfirst 0|1"},
    {"gdn-prefill", "t,hk,hv,dk,dv,vfirst,mode", cmd_gdn_prefill, "amxk_gdn.h gated delta rule, one sequence: --t --hk --hv --dk --dv --mode auto|chunk|recurrent"},
    {"gdn-gating", "t,hv", cmd_gdn_gating, "amxk_gdn.h amxk_gdn_gating (bf16 a / b, f32 g, bf16 beta): --t --hv"},
    {"conv1d", "t,dim,width,form,batch,dtype", cmd_conv1d, "amxk_gdn.h causal conv1d + silu: --t --dim --width --form prefill|decode --batch --dtype bf16|f32"},
};

static void usage(FILE *f) {
    size_t i;
    fprintf(f, "usage: amxk_bench <subcommand> [--threads T] [--isa scalar|avx2|avx512|avx512_vnni|avx512_bf16|avx512_fp16|amx|auto] [--rotate-mb R]\n"
               "                  [--family auto|intel|other] [--reps N] [--warmup W] [subcommand options]\nsubcommands:\n");
    for (i = 0; i < sizeof bench_cmds / sizeof bench_cmds[0]; i++)
        fprintf(f, "  %-12s %s\n", bench_cmds[i].name, bench_cmds[i].help);
}

int main(int argc, char **argv) {
    size_t i;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (i = 0; i < sizeof bench_cmds / sizeof bench_cmds[0]; i++) {
        if (strcmp(argv[1], bench_cmds[i].name) == 0) {
            bench_args args;
            bench_env env;
            int rc;
            bench_args_parse(&args, argc - 2, argv + 2, bench_cmds[i].keys);
            bench_env_init(&env, &args);
            rc = bench_cmds[i].run(&env, &args);
            bench_env_free(&env);
            return rc;
        }
    }
    fprintf(stderr, "unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
