/* onednn_peer.c - the oneDNN side of the benchmarks, for comparison with `amxk_bench linear` / `moe`.

       build/onednn_peer linear --m M --n N --k K --dtype f32|bf16|s8 --threads T --rotate-mb R
                               [--reps N] [--warmup W] [--s8-range 7|8]
       build/onednn_peer moe --m M --experts E --topk k --hidden K --inter N --layers L --threads T
                            [--dtype f32|bf16] [--seed S] [--routing-in FILE] [--reps N] [--warmup W]

   One source, two programs (onednn_api.h hides the API difference): build/onednn_peer against oneDNN
   2.x (Debian's libdnnl-dev 2.6; `make bench-bin`) and build/onednn3_peer against oneDNN 3.x (PyPI
   onednn-cpu-gomp 2023.2.0 = v3.2, in the venv of `make bench-peers`); the 3.x program's op names
   start with onednn3_ instead of onednn_.

   linear: y[M,N] (f32) = x[M,K] . W^T with W stored [N,K] row-major (the nn.Linear layout), through
   the oneDNN C API: a matmul primitive whose weights memory
   format is `any`, the weights reordered ONCE from the [N,K] row-major view (a [K,N] tensor in format
   `ba`) into the primitive's preferred layout, outside the timing. dtype s8 is u8 activations x s8
   weights (int32 accumulation, f32 output, no scales), by default with 7-bit data (u8 in [0, 127],
   s8 in [-64, 63]); --s8-range 8 uses the full 8-bit ranges, as int8 quantizers produce them, and
   reports how many of the checked outputs are wrong (checked=.. wrong=..) instead of stopping: on
   CPUs without VNNI oneDNN's u8s8 kernels sum vpmaddubsw pairs in saturating 16-bit lanes, which
   only 7-bit data keeps exact. --rotate-mb R: that many MiB of reordered
   weight copies, used in turn (see bench_util.h).

   moe: what an engine without amxk does for one MoE layer (SiLU, no shared expert), with the
   routing of `amxk_bench moe` (same generator and --seed; --routing-in FILE replaces the ids with
   those `amxk_bench moe --routing-out FILE` wrote): per call, out = 0, then for each active expert
   (increasing id) gather its token rows, matmul to h [m_e, 2N], a = SiLU(gate) * up, matmul to
   y [m_e, K], out[token] += w * y. The element loops run under `omp parallel for` (when the expert
   has >= 8 rows). Weights: the values of amxk_bench moe (bench_fill, rounded to bf16) stored as f32,
   reordered once per expert and layer copy into the layout oneDNN prefers for the largest m_e (used
   by every primitive); one primitive pair per distinct m_e, created outside the timing; the --layers
   L copies are cycled call by call. --dtype f32: weights, gathered x and the activation in f32 (x holds
   bf16 values). --dtype bf16 (what a bf16 engine runs; oneDNN 2.6 has it on AVX-512 CPUs, from
   AVX512_BF16 natively, and prints status=unimplemented without AVX-512): weights reordered into
   oneDNN's bf16 layout, gathered x and the activation bf16 (SiLU(gate) * up computed in f32, rounded
   once to bf16, as amxk does), h and y f32. out f32. gflops = 6 N K (routed pairs) / median; gbs = the
   reordered weights of the active experts / median.

   Threads: oneDNN here runs on OpenMP; omp_set_num_threads(T) is called before any oneDNN call.
   Output, one line (same format as amxk_bench):
       op=onednn_linear m=.. n=.. k=.. dtype=.. threads=.. rotate_mb=.. impl=<oneDNN implementation>
           median_us=.. gflops=.. gbs=..
       op=onednn_moe m=.. experts=.. topk=.. hidden=.. inter=.. dtype=f32|bf16 layers=.. threads=.. seed=..
           active=.. weights=f32|bf16 impl=.. median_us=.. gflops=.. gbs=..
   linear: gflops counts 2*M*N*K; gbs counts the reordered weights + x + y bytes of one call. When
   oneDNN has no implementation for the request on this CPU (e.g. bf16 without AVX-512), it prints
       op=onednn_<op> ... status=unimplemented
   and exits 0. Outputs are checked against a double-precision reference on a few entries.

   Build: `make bench-bin` (when dnnl.h is installed): cc -std=c99 -O2 -fopenmp ... -ldnnl; the 3.x
   program: `make bench-peers` (the same flags against the venv's oneDNN, with an rpath to it). */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION /* for the exact f32 -> bf16 conversion */
#include "../amxk.h"
#include "bench_util.h"

#include "onednn_api.h"
#include <math.h>
#include <omp.h>

typedef struct peer_run {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    size_t n_copies;
    dnnl_exec_arg_t (*args)[3]; /* per weight copy: src, weights, dst */
} peer_run;

static void peer_call(void *user, size_t rep) {
    peer_run *r = (peer_run *)user;
    DNNL_TRY(dnnl_primitive_execute(r->prim, r->stream, 3, r->args[rep % r->n_copies]));
    DNNL_TRY(dnnl_stream_wait(r->stream));
}

static int cmd_linear(const bench_args *a) {
    long m = bench_int(a, "m", 1), n = bench_int(a, "n", 4096), k = bench_int(a, "k", 4096);
    int threads = (int)bench_int(a, "threads", 1), reps = (int)bench_int(a, "reps", 20), warmup = (int)bench_int(a, "warmup", 2);
    double rotate_mb = bench_dbl(a, "rotate-mb", 0.0), med, bytes;
    const char *dtype = bench_str(a, "dtype", "f32"), *isa = bench_str(a, "isa", "auto");
    dnnl_data_type_t xt, wt;
    size_t esz, i, j, checked = 0, wrong = 0;
    const long s8_range = bench_int(a, "s8-range", 7);
    int full8;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    peer_md x_md, w_user_md, w_any_md, y_md, w_md;
    dnnl_primitive_desc_t pd, rpd;
    dnnl_primitive_t prim, reorder;
    dnnl_status_t st;
    dnnl_memory_t x_mem, y_mem, w_user_mem, *w_mem;
    float *xf, *wf, *y;
    void *x_data, *w_user;
    bench_rot rot;
    peer_run run;
    char params[256], impl[64];

    if (m < 1 || n < 1 || k < 1) bench_die("--m, --n, --k must be >= 1");
    if (threads < 1 || reps < 1 || warmup < 0 || rotate_mb < 0) bench_die("bad --threads/--reps/--warmup/--rotate-mb");
    if (strcmp(isa, "auto") != 0) bench_die(PEER_OP "_peer: --isa is not supported (use ONEDNN_MAX_CPU_ISA)");
    if (strcmp(dtype, "f32") == 0) xt = wt = dnnl_f32, esz = 4;
    else if (strcmp(dtype, "bf16") == 0) xt = wt = dnnl_bf16, esz = 2;
    else if (strcmp(dtype, "s8") == 0) xt = dnnl_u8, wt = dnnl_s8, esz = 1;
    else bench_die("--dtype must be f32, bf16 or s8");
    if (s8_range != 7 && s8_range != 8) bench_die("--s8-range must be 7 or 8");
    full8 = s8_range == 8 && esz == 1;
    snprintf(params, sizeof params, "op=" PEER_OP "_linear m=%ld n=%ld k=%ld dtype=%s threads=%d rotate_mb=%g", m, n, k, dtype,
             threads, rotate_mb);

    omp_set_num_threads(threads);
    DNNL_TRY(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_TRY(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));

    x_md = peer_md_2d((size_t)m, (size_t)k, xt, dnnl_ab);
    w_user_md = peer_md_2d((size_t)k, (size_t)n, wt, dnnl_ba); /* [N,K] row-major = W^T */
    w_any_md = peer_md_2d((size_t)k, (size_t)n, wt, dnnl_format_tag_any);
    y_md = peer_md_2d((size_t)m, (size_t)n, dnnl_f32, dnnl_ab);
    st = peer_matmul_pd(&pd, engine, x_md, w_any_md, y_md);
    if (st != dnnl_success) {
        printf("%s status=%s\n", params, st == dnnl_unimplemented ? "unimplemented" : "error");
        dnnl_stream_destroy(stream);
        dnnl_engine_destroy(engine);
        return 0;
    }
    peer_impl_word(pd, impl, sizeof impl);
    DNNL_TRY(dnnl_primitive_create(&prim, pd));
    w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);

    /* data: f32 values in [-1, 1), converted to the dtype (s8: integers in [-64, 63], u8: [0, 127];
       --s8-range 8: [-128, 127] and [0, 255]) */
    xf = (float *)bench_alloc((size_t)m * (size_t)k * 4, 64);
    wf = (float *)bench_alloc((size_t)n * (size_t)k * 4, 64);
    y = (float *)bench_alloc((size_t)m * (size_t)n * 4, 64);
    bench_fill(xf, (size_t)m * (size_t)k, 1);
    bench_fill(wf, (size_t)n * (size_t)k, 2);
    x_data = bench_alloc((size_t)m * (size_t)k * esz, 64);
    w_user = bench_alloc((size_t)n * (size_t)k * esz, 64);
    for (i = 0; i < (size_t)m * (size_t)k; i++) {
        if (esz == 2) xf[i] = amxk_bf16_to_f32(((amxk_bf16 *)x_data)[i] = amxk_f32_to_bf16(xf[i]));
        else if (esz == 1) ((uint8_t *)x_data)[i] = (uint8_t)(xf[i] = (float)floor((xf[i] + 1.0f) * (full8 ? 127.99f : 64.0f)));
        else ((float *)x_data)[i] = xf[i];
    }
    for (i = 0; i < (size_t)n * (size_t)k; i++) {
        if (esz == 2) wf[i] = amxk_bf16_to_f32(((amxk_bf16 *)w_user)[i] = amxk_f32_to_bf16(wf[i]));
        else if (esz == 1) ((int8_t *)w_user)[i] = (int8_t)(wf[i] = (float)floor(wf[i] * (full8 ? 127.99f : 64.0f)));
        else ((float *)w_user)[i] = wf[i];
    }

    /* reorder once into each rotation copy */
    DNNL_TRY(dnnl_memory_create(&w_user_mem, w_user_md, engine, w_user));
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, w_user_md, engine, w_md, engine, NULL));
    DNNL_TRY(dnnl_primitive_create(&reorder, rpd));
    bench_rot_init(&rot, dnnl_memory_desc_get_size(w_md), rotate_mb);
    w_mem = (dnnl_memory_t *)calloc(rot.n, sizeof *w_mem);
    run.args = (dnnl_exec_arg_t(*)[3])calloc(rot.n, sizeof *run.args);
    if (!w_mem || !run.args) bench_die("out of memory");
    DNNL_TRY(dnnl_memory_create(&x_mem, x_md, engine, x_data));
    DNNL_TRY(dnnl_memory_create(&y_mem, y_md, engine, y));
    for (i = 0; i < rot.n; i++) {
        dnnl_exec_arg_t ra[2];
        DNNL_TRY(dnnl_memory_create(&w_mem[i], w_md, engine, rot.copy[i]));
        ra[0].arg = DNNL_ARG_FROM, ra[0].memory = w_user_mem;
        ra[1].arg = DNNL_ARG_TO, ra[1].memory = w_mem[i];
        DNNL_TRY(dnnl_primitive_execute(reorder, stream, 2, ra));
        run.args[i][0].arg = DNNL_ARG_SRC, run.args[i][0].memory = x_mem;
        run.args[i][1].arg = DNNL_ARG_WEIGHTS, run.args[i][1].memory = w_mem[i];
        run.args[i][2].arg = DNNL_ARG_DST, run.args[i][2].memory = y_mem;
    }
    DNNL_TRY(dnnl_stream_wait(stream));

    run.prim = prim;
    run.stream = stream;
    run.n_copies = rot.n;
    med = bench_measure(peer_call, &run, warmup, reps);

    /* check a few outputs against a double-precision reference */
    for (i = 0; i < (size_t)m; i += (size_t)(m > 3 ? m / 3 : 1))
        for (j = 0; j < (size_t)n; j += (size_t)(n > 5 ? n / 5 : 1)) {
            double ref = 0, mag = 0;
            long kk;
            for (kk = 0; kk < k; kk++) {
                ref += (double)xf[i * (size_t)k + (size_t)kk] * (double)wf[j * (size_t)k + (size_t)kk];
                mag += fabs((double)xf[i * (size_t)k + (size_t)kk] * (double)wf[j * (size_t)k + (size_t)kk]);
            }
            checked++;
            if (fabs((double)y[i * (size_t)n + j] - ref) > 1e-4 * mag + 1e-6) {
                if (!full8) bench_die(PEER_OP "_peer: y[%zu][%zu] = %g, reference %g", i, j, (double)y[i * (size_t)n + j], ref);
                wrong++;
            }
        }

    bytes = (double)dnnl_memory_desc_get_size(w_md) + (double)m * (double)k * (double)esz + (double)m * (double)n * 4.0;
    if (full8) bench_line(med, 2.0 * (double)m * (double)n * (double)k, bytes, "%s s8_range=8 impl=%s checked=%zu wrong=%zu", params, impl,
                          checked, wrong);
    else bench_line(med, 2.0 * (double)m * (double)n * (double)k, bytes, "%s impl=%s", params, impl);

    for (i = 0; i < rot.n; i++) dnnl_memory_destroy(w_mem[i]);
    dnnl_memory_destroy(w_user_mem);
    dnnl_memory_destroy(x_mem);
    dnnl_memory_destroy(y_mem);
    peer_md_free(x_md), peer_md_free(w_user_md), peer_md_free(w_any_md), peer_md_free(y_md);
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    bench_rot_free(&rot);
    free(run.args);
    free(w_mem);
    free(w_user);
    free(x_data);
    free(y);
    free(wf);
    free(xf);
    return 0;
}

/* ---- moe ------------------------------------------------------------------------------------ */

/* The routing generator of `amxk_bench moe` (bench/cmd_moe.h): per token, topk distinct uniform ids
   and weights, so that the same --seed gives the same routing and weights without a file. */
static uint32_t moe_rng(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* What one distinct expert row count m_e needs: the two matmuls and memories over the shared
   scratch buffers (gathered x, h, activation, y). */
typedef struct moe_prim {
    dnnl_primitive_t p1, p2;
    dnnl_memory_t xg, h, act, y;
} moe_prim;

typedef struct moe_peer {
    dnnl_stream_t stream;
    size_t m, topk, k, n, layers, n_active;
    const int32_t *order;   /* pairs (t * topk + j) grouped by active expert */
    const size_t *r0, *nr;  /* per active expert: first pair in order, row count */
    const float *x, *tw, *h, *y;
    const uint16_t *xb;     /* bf16 runs: x as bf16 */
    float *xg, *act, *out;  /* bf16 runs: xg and act hold bf16 (uint16_t) */
    int bf16;
    moe_prim **prim;        /* per active expert: its row count's primitives */
    dnnl_memory_t *w13, *w2; /* [layer * n_active + i] */
} moe_peer;

static void moe_exec(moe_peer *r, dnnl_primitive_t p, dnnl_memory_t src, dnnl_memory_t w, dnnl_memory_t dst) {
    dnnl_exec_arg_t a[3];
    a[0].arg = DNNL_ARG_SRC, a[0].memory = src;
    a[1].arg = DNNL_ARG_WEIGHTS, a[1].memory = w;
    a[2].arg = DNNL_ARG_DST, a[2].memory = dst;
    DNNL_TRY(dnnl_primitive_execute(p, r->stream, 3, a));
    DNNL_TRY(dnnl_stream_wait(r->stream));
}

/* One layer: per active expert gather its rows, x . W13^T, SiLU(gate) * up, . W2^T, weighted
   scatter-add into out. The element loops run on the same OpenMP threads as oneDNN (when big
   enough to be worth a parallel region). */
static void moe_peer_call(void *user, size_t rep) {
    moe_peer *r = (moe_peer *)user;
    size_t l = rep % r->layers, i, K = r->k, N = r->n;
    memset(r->out, 0, r->m * K * sizeof(float));
    for (i = 0; i < r->n_active; i++) {
        const int32_t *ord = r->order + r->r0[i];
        long nr = (long)r->nr[i], q;
        moe_prim *c = r->prim[i];
#pragma omp parallel for if (nr >= 8)
        for (q = 0; q < nr; q++) {
            if (r->bf16) memcpy((uint16_t *)r->xg + (size_t)q * K, r->xb + (size_t)ord[q] / r->topk * K, K * 2);
            else memcpy(r->xg + (size_t)q * K, r->x + (size_t)ord[q] / r->topk * K, K * sizeof(float));
        }
        moe_exec(r, c->p1, c->xg, r->w13[l * r->n_active + i], c->h);
#pragma omp parallel for if (nr >= 8)
        for (q = 0; q < nr; q++) {
            const float *h = r->h + (size_t)q * 2 * N;
            float *a = r->act + (size_t)q * N;
            uint16_t *ab = (uint16_t *)r->act + (size_t)q * N;
            size_t j;
            if (r->bf16)
                for (j = 0; j < N; j++) ab[j] = amxk_f32_to_bf16(h[j] / (1.0f + expf(-h[j])) * h[N + j]);
            else
                for (j = 0; j < N; j++) a[j] = h[j] / (1.0f + expf(-h[j])) * h[N + j];
        }
        moe_exec(r, c->p2, c->act, r->w2[l * r->n_active + i], c->y);
#pragma omp parallel for if (nr >= 8)
        for (q = 0; q < nr; q++) { /* rows of one expert belong to distinct tokens */
            const float *y = r->y + (size_t)q * K;
            float *o = r->out + (size_t)ord[q] / r->topk * K, w = r->tw[ord[q]];
            size_t j;
            for (j = 0; j < K; j++) o[j] += w * y[j];
        }
    }
}

/* A row-major [rows, cols] memory of type dt over buf. */
static dnnl_memory_t moe_mem(dnnl_engine_t eng, size_t rows, size_t cols, dnnl_data_type_t dt, void *buf) {
    peer_md md = peer_md_2d(rows, cols, dt, dnnl_ab);
    dnnl_memory_t mem;
    DNNL_TRY(dnnl_memory_create(&mem, md, eng, buf));
    peer_md_free(md);
    return mem;
}

/* Matmul [m, k] x [k, n] -> [m, n] (f32 output) with weights in layout wmd (NULL: `any`, the
   primitive's choice). */
static dnnl_status_t moe_matmul(dnnl_engine_t eng, dnnl_data_type_t dt, size_t m, size_t k, size_t n, peer_md wmd,
                                dnnl_primitive_desc_t *pd) {
    peer_md x = peer_md_2d(m, k, dt, dnnl_ab), y = peer_md_2d(m, n, dnnl_f32, dnnl_ab);
    peer_md w = wmd ? wmd : peer_md_2d(k, n, dt, dnnl_format_tag_any);
    dnnl_status_t st = peer_matmul_pd(pd, eng, x, w, y);
    peer_md_free(x), peer_md_free(y);
    if (!wmd) peer_md_free(w);
    return st;
}

static int cmd_moe(const bench_args *a) {
    long m = bench_int(a, "m", 1), e = bench_int(a, "experts", 128), topk = bench_int(a, "topk", 8);
    long k = bench_int(a, "hidden", 2048), n = bench_int(a, "inter", 768), layers = bench_int(a, "layers", 1);
    int threads = (int)bench_int(a, "threads", 1), reps = (int)bench_int(a, "reps", 20), warmup = (int)bench_int(a, "warmup", 2);
    uint32_t seed = (uint32_t)bench_int(a, "seed", 1), rs;
    const char *dtype = bench_str(a, "dtype", "f32"), *rin = bench_str(a, "routing-in", "");
    size_t M, E, T, K, N, L, R, i, l, t, q, nact = 0, rep_m = 0, *cnt, *r0, *nr, *act_e;
    int32_t *ids, *order;
    float *tw, *xf, *wf, *h, *y;
    double med, wbytes;
    char params[320], impl[64];
    dnnl_engine_t eng;
    dnnl_primitive_desc_t pd1, pd2;
    peer_md w13_md, w2_md, u13_md, u2_md;
    dnnl_status_t st;
    dnnl_data_type_t wdt;
    moe_prim *cache;
    moe_peer run;

    if (m < 1 || e < 1 || topk < 1 || topk > e || k < 1 || n < 1 || layers < 1)
        bench_die("need --m, --experts, --hidden, --inter, --layers >= 1 and 1 <= --topk <= --experts");
    if (threads < 1 || reps < 1 || warmup < 0) bench_die("bad --threads/--reps/--warmup");
    if (strcmp(bench_str(a, "isa", "auto"), "auto") != 0) bench_die(PEER_OP "_peer: --isa is not supported (use ONEDNN_MAX_CPU_ISA)");
    if (bench_dbl(a, "rotate-mb", 0.0) != 0.0) bench_die(PEER_OP "_peer moe: use --layers, not --rotate-mb");
    if (strcmp(dtype, "f32") != 0 && strcmp(dtype, "bf16") != 0) bench_die("--dtype must be f32 or bf16");
    M = (size_t)m, E = (size_t)e, T = (size_t)topk, K = (size_t)k, N = (size_t)n, L = (size_t)layers, R = M * T;
    snprintf(params, sizeof params, "op=" PEER_OP "_moe m=%zu experts=%zu topk=%zu hidden=%zu inter=%zu dtype=%s layers=%zu threads=%d",
             M, E, T, K, N, dtype, L, threads);

    /* routing: the generator of amxk_bench moe; --routing-in replaces the ids with the file's */
    ids = (int32_t *)bench_alloc(R * 4, 64), tw = (float *)bench_alloc(R * 4, 64), order = (int32_t *)bench_alloc(R * 4, 64);
    rs = seed ? seed : 1u;
    for (t = 0; t < M; t++)
        for (i = 0; i < T; i++) {
            int32_t id;
            int dup;
            do {
                id = (int32_t)(moe_rng(&rs) % (uint32_t)E);
                for (dup = 0, q = 0; q < i; q++) dup |= ids[t * T + q] == id;
            } while (dup);
            ids[t * T + i] = id;
            tw[t * T + i] = (float)(moe_rng(&rs) >> 8) * (1.0f / 16777216.0f) / (float)T;
        }
    if (rin[0]) {
        FILE *f = fopen(rin, "r");
        int v;
        if (!f) bench_die("cannot read %s", rin);
        for (i = 0; i < R; i++) {
            if (fscanf(f, "%d", &v) != 1 || v < 0 || v >= (int)E) bench_die("%s: need %zu ids in [0, %zu)", rin, R, E);
            ids[i] = v;
        }
        if (fscanf(f, "%d", &v) == 1) bench_die("%s: more than %zu ids (--m %zu --topk %zu)", rin, R, M, T);
        fclose(f);
    }
    /* group the pairs by expert (increasing id, stable) */
    cnt = (size_t *)calloc(E + 1, sizeof *cnt), r0 = (size_t *)calloc(E, sizeof *r0), nr = (size_t *)calloc(E, sizeof *nr);
    act_e = (size_t *)calloc(E, sizeof *act_e);
    if (!cnt || !r0 || !nr || !act_e) bench_die("out of memory");
    for (i = 0; i < R; i++) cnt[ids[i] + 1]++;
    for (i = 0; i < E; i++) {
        if (cnt[i + 1]) act_e[nact] = i, r0[nact] = cnt[i], nr[nact] = cnt[i + 1], nact++;
        rep_m = cnt[i + 1] > rep_m ? cnt[i + 1] : rep_m;
        cnt[i + 1] += cnt[i];
    }
    for (i = 0; i < R; i++) order[cnt[ids[i]]++] = (int32_t)i;

    omp_set_num_threads(threads);
    DNNL_TRY(dnnl_engine_create(&eng, dnnl_cpu, 0));
    DNNL_TRY(dnnl_stream_create(&run.stream, eng, dnnl_stream_default_flags));
    /* the weights layout: the one oneDNN prefers for the largest expert row count, used by every
       primitive (the weights are reordered once, as an engine does at load time) */
    wdt = strcmp(dtype, "f32") ? dnnl_bf16 : dnnl_f32;
    st = moe_matmul(eng, wdt, rep_m, K, 2 * N, NULL, &pd1);
    if (st != dnnl_success) {
        printf("%s status=%s\n", params, st == dnnl_unimplemented ? "unimplemented" : "error");
        return 0;
    }
    DNNL_TRY(moe_matmul(eng, wdt, rep_m, N, K, NULL, &pd2));
    peer_impl_word(pd1, impl, sizeof impl);
    w13_md = peer_md_copy(dnnl_primitive_desc_query_md(pd1, dnnl_query_weights_md, 0));
    w2_md = peer_md_copy(dnnl_primitive_desc_query_md(pd2, dnnl_query_weights_md, 0));
    dnnl_primitive_desc_destroy(pd1), dnnl_primitive_desc_destroy(pd2);

    /* buffers: x (bf16-rounded values, as amxk_bench's bf16 x), scratch sized for the largest expert */
    xf = (float *)bench_alloc(M * K * 4, 64);
    bench_fill(xf, M * K, seed + 7u);
    for (i = 0; i < M * K; i++) xf[i] = amxk_bf16_to_f32(amxk_f32_to_bf16(xf[i]));
    run.xb = (uint16_t *)bench_alloc(M * K * 2, 64);
    for (i = 0; i < M * K; i++) ((uint16_t *)run.xb)[i] = amxk_f32_to_bf16(xf[i]);
    run.bf16 = wdt == dnnl_bf16;
    run.xg = (float *)bench_alloc(rep_m * K * 4, 64), run.h = h = (float *)bench_alloc(rep_m * 2 * N * 4, 64);
    run.act = (float *)bench_alloc(rep_m * N * 4, 64), run.y = y = (float *)bench_alloc(rep_m * K * 4, 64);
    run.out = (float *)bench_alloc(M * K * 4, 64);
    /* primitives and memories per distinct row count, created here (outside the timing) */
    cache = (moe_prim *)calloc(rep_m + 1, sizeof *cache);
    run.prim = (moe_prim **)calloc(nact, sizeof *run.prim);
    if (!cache || !run.prim) bench_die("out of memory");
    for (i = 0; i < nact; i++) {
        moe_prim *c = &cache[nr[i]];
        run.prim[i] = c;
        if (c->p1) continue;
        DNNL_TRY(moe_matmul(eng, wdt, nr[i], K, 2 * N, w13_md, &pd1));
        DNNL_TRY(moe_matmul(eng, wdt, nr[i], N, K, w2_md, &pd2));
        DNNL_TRY(dnnl_primitive_create(&c->p1, pd1));
        DNNL_TRY(dnnl_primitive_create(&c->p2, pd2));
        dnnl_primitive_desc_destroy(pd1), dnnl_primitive_desc_destroy(pd2);
        c->xg = moe_mem(eng, nr[i], K, wdt, run.xg), c->h = moe_mem(eng, nr[i], 2 * N, dnnl_f32, h);
        c->act = moe_mem(eng, nr[i], N, wdt, run.act), c->y = moe_mem(eng, nr[i], K, dnnl_f32, y);
    }
    /* weights of the active experts (the values of amxk_bench moe, rounded to bf16), W13 [2N, K] and
       W2 [K, N] row-major (= [K, 2N] / [N, K] in format ba), reordered into every layer copy */
    u13_md = peer_md_2d(K, 2 * N, dnnl_f32, dnnl_ba), u2_md = peer_md_2d(N, K, dnnl_f32, dnnl_ba);
    run.w13 = (dnnl_memory_t *)calloc(L * nact, sizeof *run.w13), run.w2 = (dnnl_memory_t *)calloc(L * nact, sizeof *run.w2);
    if (!run.w13 || !run.w2) bench_die("out of memory");
    wf = (float *)bench_alloc(2 * N * K * 4, 64);
    for (i = 0; i < nact; i++)
        for (q = 0; q < 2; q++) {
            peer_md umd = q ? u2_md : u13_md, wmd = q ? w2_md : w13_md;
            dnnl_memory_t um, *dst = q ? run.w2 : run.w13;
            dnnl_primitive_desc_t rpd;
            dnnl_primitive_t reorder;
            size_t c, cntw = q ? K * N : 2 * N * K;
            bench_fill(wf, cntw, (q ? 5000u : 1000u) + (uint32_t)act_e[i]);
            for (c = 0; c < cntw; c++) wf[c] = amxk_bf16_to_f32(amxk_f32_to_bf16(wf[c]));
            DNNL_TRY(dnnl_memory_create(&um, umd, eng, wf));
            DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, umd, eng, wmd, eng, NULL));
            DNNL_TRY(dnnl_primitive_create(&reorder, rpd));
            for (l = 0; l < L; l++) {
                dnnl_exec_arg_t ra[2];
                DNNL_TRY(dnnl_memory_create(&dst[l * nact + i], wmd, eng, DNNL_MEMORY_ALLOCATE));
                ra[0].arg = DNNL_ARG_FROM, ra[0].memory = um;
                ra[1].arg = DNNL_ARG_TO, ra[1].memory = dst[l * nact + i];
                DNNL_TRY(dnnl_primitive_execute(reorder, run.stream, 2, ra));
            }
            DNNL_TRY(dnnl_stream_wait(run.stream));
            dnnl_primitive_destroy(reorder), dnnl_primitive_desc_destroy(rpd), dnnl_memory_destroy(um);
        }

    run.m = M, run.topk = T, run.k = K, run.n = N, run.layers = L, run.n_active = nact;
    run.order = order, run.r0 = r0, run.nr = nr, run.x = xf, run.tw = tw;
    med = bench_measure(moe_peer_call, &run, warmup, reps);

    /* check a few outputs against a double-precision reference (same weights, activation in double) */
    {
        double *hd = (double *)malloc(2 * N * sizeof(double));
        float *w2f = (float *)bench_alloc(K * N * 4, 64);
        if (!hd) bench_die("out of memory");
        for (t = 0; t < M; t += M > 3 ? M / 3 : 1) {
            double ref[5] = {0}, mag[5] = {0};
            size_t j, kk, c, s;
            for (j = 0; j < T; j++) {
                uint32_t ex = (uint32_t)ids[t * T + j];
                bench_fill(wf, 2 * N * K, 1000u + ex);
                bench_fill(w2f, K * N, 5000u + ex);
                for (c = 0; c < 2 * N; c++) {
                    double acc = 0;
                    for (kk = 0; kk < K; kk++)
                        acc += (double)xf[t * K + kk] * (double)amxk_bf16_to_f32(amxk_f32_to_bf16(wf[c * K + kk]));
                    hd[c] = acc;
                }
                for (s = 0; s < 5; s++) {
                    size_t col = s * (K - 1) / 4;
                    for (c = 0; c < N; c++) {
                        double v = hd[c] / (1.0 + exp(-hd[c])) * hd[N + c] * (double)amxk_bf16_to_f32(amxk_f32_to_bf16(w2f[col * N + c]));
                        ref[s] += (double)tw[t * T + j] * v;
                        mag[s] += fabs((double)tw[t * T + j] * v);
                    }
                }
            }
            for (s = 0; s < 5; s++) {
                size_t col = s * (K - 1) / 4;
                double got = (double)run.out[t * K + col];
                if (fabs(got - ref[s]) > (run.bf16 ? 8e-3 : 1e-4) * mag[s] + 1e-6) bench_die(PEER_OP "_peer moe: out[%zu][%zu] = %g, reference %g", t, col, got, ref[s]);
            }
        }
        free(hd), free(w2f);
    }

    wbytes = (double)nact * (double)(dnnl_memory_desc_get_size(w13_md) + dnnl_memory_desc_get_size(w2_md));
    bench_line(med, 6.0 * (double)N * (double)K * (double)R, wbytes, "%s seed=%u active=%zu weights=%s impl=%s", params, seed, nact,
               run.bf16 ? "bf16" : "f32", impl);
    peer_md_free(w13_md), peer_md_free(w2_md), peer_md_free(u13_md), peer_md_free(u2_md);

    for (i = 0; i < L * nact; i++) dnnl_memory_destroy(run.w13[i]), dnnl_memory_destroy(run.w2[i]);
    for (i = 0; i <= rep_m; i++)
        if (cache[i].p1) {
            dnnl_primitive_destroy(cache[i].p1), dnnl_primitive_destroy(cache[i].p2);
            dnnl_memory_destroy(cache[i].xg), dnnl_memory_destroy(cache[i].h);
            dnnl_memory_destroy(cache[i].act), dnnl_memory_destroy(cache[i].y);
        }
    dnnl_stream_destroy(run.stream);
    dnnl_engine_destroy(eng);
    free(run.w13), free(run.w2), free(run.prim), free(cache), free(wf), free(xf), free(run.xg), free(h), free(run.act), free(y);
    free(run.out), free((void *)run.xb), free(ids), free(tw), free(order), free(cnt), free(r0), free(nr), free(act_e);
    return 0;
}

int main(int argc, char **argv) {
    bench_args args;
    if (argc >= 2 && strcmp(argv[1], "linear") == 0) {
        bench_args_parse(&args, argc - 2, argv + 2, "m,n,k,dtype,s8-range");
        return cmd_linear(&args);
    }
    if (argc >= 2 && strcmp(argv[1], "moe") == 0) {
        bench_args_parse(&args, argc - 2, argv + 2, "m,experts,topk,hidden,inter,dtype,layers,seed,routing-in");
        return cmd_moe(&args);
    }
    fprintf(stderr, "usage: onednn_peer linear --m M --n N --k K --dtype f32|bf16|s8 --threads T --rotate-mb R\n"
                    "                          [--reps N] [--warmup W] [--s8-range 7|8]\n"
                    "       onednn_peer moe --m M --experts E --topk k --hidden K --inter N --layers L [--dtype f32|bf16]\n"
                    "                       [--seed S] [--routing-in FILE] --threads T [--reps N] [--warmup W]\n");
    return 2;
}
