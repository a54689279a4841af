/* onednn_peer.c - the oneDNN side of the linear benchmark, for comparison with `amxk_bench linear`.

       build/onednn_peer linear --m M --n N --k K --dtype f32|bf16|s8 --threads T --rotate-mb R
                               [--reps N] [--warmup W]

   y[M,N] (f32) = x[M,K] . W^T with W stored [N,K] row-major (the nn.Linear layout), through the oneDNN
   C API (2.x, e.g. Debian's libdnnl-dev 2.6): a matmul primitive whose weights memory format is
   `any`, the weights reordered ONCE from the [N,K] row-major view (a [K,N] tensor in format `ba`)
   into the primitive's preferred layout, outside the timing. dtype s8 is u8 activations x s8 weights
   (int32 accumulation, f32 output, no scales). Threads: oneDNN here runs on OpenMP;
   omp_set_num_threads(T) is called before any oneDNN call. --rotate-mb R: that many MiB of reordered
   weight copies, used in turn (see bench_util.h).

   Output, one line (same format as amxk_bench):
       op=onednn_linear m=.. n=.. k=.. dtype=.. threads=.. rotate_mb=.. impl=<oneDNN implementation>
           median_us=.. gflops=.. gbs=..
   gflops counts 2*M*N*K; gbs counts the reordered weights + x + y bytes of one call. When oneDNN has
   no implementation for the request on this CPU (e.g. bf16 without AVX-512), it prints
       op=onednn_linear ... status=unimplemented
   and exits 0. y is checked against a double-precision reference on a few entries.

   Build: `make bench-bin` (when dnnl.h is installed): cc -std=c99 -O2 -fopenmp ... -ldnnl. */
#define _POSIX_C_SOURCE 200809L
#define AMXK_IMPLEMENTATION /* for the exact f32 -> bf16 conversion */
#include "../amxk.h"
#include "bench_util.h"

#include <dnnl.h>
#include <math.h>
#include <omp.h>

#define DNNL_TRY(call)                                                                                     \
    do {                                                                                                   \
        dnnl_status_t s_ = (call);                                                                         \
        if (s_ != dnnl_success) bench_die("%s failed: status %d (%s:%d)", #call, (int)s_, __FILE__, __LINE__); \
    } while (0)

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
    const char *dtype = bench_str(a, "dtype", "f32"), *isa = bench_str(a, "isa", "auto"), *impl = "?";
    dnnl_data_type_t xt, wt;
    size_t esz, i, j;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_memory_desc_t x_md, w_user_md, w_any_md, y_md;
    const dnnl_memory_desc_t *w_md;
    dnnl_matmul_desc_t mm;
    dnnl_primitive_desc_t pd, rpd;
    dnnl_primitive_t prim, reorder;
    dnnl_status_t st;
    dnnl_memory_t x_mem, y_mem, w_user_mem, *w_mem;
    dnnl_dims_t xdims, wdims, ydims;
    float *xf, *wf, *y;
    void *x_data, *w_user;
    bench_rot rot;
    peer_run run;
    char params[256];

    if (m < 1 || n < 1 || k < 1) bench_die("--m, --n, --k must be >= 1");
    if (threads < 1 || reps < 1 || warmup < 0 || rotate_mb < 0) bench_die("bad --threads/--reps/--warmup/--rotate-mb");
    if (strcmp(isa, "auto") != 0) bench_die("onednn_peer: --isa is not supported (use ONEDNN_MAX_CPU_ISA)");
    if (strcmp(dtype, "f32") == 0) xt = wt = dnnl_f32, esz = 4;
    else if (strcmp(dtype, "bf16") == 0) xt = wt = dnnl_bf16, esz = 2;
    else if (strcmp(dtype, "s8") == 0) xt = dnnl_u8, wt = dnnl_s8, esz = 1;
    else bench_die("--dtype must be f32, bf16 or s8");
    snprintf(params, sizeof params, "op=onednn_linear m=%ld n=%ld k=%ld dtype=%s threads=%d rotate_mb=%g", m, n, k, dtype,
             threads, rotate_mb);

    omp_set_num_threads(threads);
    DNNL_TRY(dnnl_engine_create(&engine, dnnl_cpu, 0));
    DNNL_TRY(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));

    xdims[0] = m, xdims[1] = k;
    wdims[0] = k, wdims[1] = n;
    ydims[0] = m, ydims[1] = n;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&x_md, 2, xdims, xt, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_user_md, 2, wdims, wt, dnnl_ba)); /* [N,K] row-major = W^T */
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_any_md, 2, wdims, wt, dnnl_format_tag_any));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&y_md, 2, ydims, dnnl_f32, dnnl_ab));
    DNNL_TRY(dnnl_matmul_desc_init(&mm, &x_md, &w_any_md, NULL, &y_md));
    st = dnnl_primitive_desc_create(&pd, &mm, NULL, engine, NULL);
    if (st != dnnl_success) {
        printf("%s status=%s\n", params, st == dnnl_unimplemented ? "unimplemented" : "error");
        dnnl_stream_destroy(stream);
        dnnl_engine_destroy(engine);
        return 0;
    }
    DNNL_TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    DNNL_TRY(dnnl_primitive_create(&prim, pd));
    w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);

    /* data: f32 values in [-1, 1), converted to the dtype (s8: integers in [-64, 63], u8: [0, 127]) */
    xf = (float *)bench_alloc((size_t)m * (size_t)k * 4, 64);
    wf = (float *)bench_alloc((size_t)n * (size_t)k * 4, 64);
    y = (float *)bench_alloc((size_t)m * (size_t)n * 4, 64);
    bench_fill(xf, (size_t)m * (size_t)k, 1);
    bench_fill(wf, (size_t)n * (size_t)k, 2);
    x_data = bench_alloc((size_t)m * (size_t)k * esz, 64);
    w_user = bench_alloc((size_t)n * (size_t)k * esz, 64);
    for (i = 0; i < (size_t)m * (size_t)k; i++) {
        if (esz == 2) xf[i] = amxk_bf16_to_f32(((amxk_bf16 *)x_data)[i] = amxk_f32_to_bf16(xf[i]));
        else if (esz == 1) ((uint8_t *)x_data)[i] = (uint8_t)(xf[i] = (float)floor((xf[i] + 1.0f) * 64.0f));
        else ((float *)x_data)[i] = xf[i];
    }
    for (i = 0; i < (size_t)n * (size_t)k; i++) {
        if (esz == 2) wf[i] = amxk_bf16_to_f32(((amxk_bf16 *)w_user)[i] = amxk_f32_to_bf16(wf[i]));
        else if (esz == 1) ((int8_t *)w_user)[i] = (int8_t)(wf[i] = (float)floor(wf[i] * 64.0f));
        else ((float *)w_user)[i] = wf[i];
    }

    /* reorder once into each rotation copy */
    DNNL_TRY(dnnl_memory_create(&w_user_mem, &w_user_md, engine, w_user));
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, &w_user_md, engine, w_md, engine, NULL));
    DNNL_TRY(dnnl_primitive_create(&reorder, rpd));
    bench_rot_init(&rot, dnnl_memory_desc_get_size(w_md), rotate_mb);
    w_mem = (dnnl_memory_t *)calloc(rot.n, sizeof *w_mem);
    run.args = (dnnl_exec_arg_t(*)[3])calloc(rot.n, sizeof *run.args);
    if (!w_mem || !run.args) bench_die("out of memory");
    DNNL_TRY(dnnl_memory_create(&x_mem, &x_md, engine, x_data));
    DNNL_TRY(dnnl_memory_create(&y_mem, &y_md, engine, y));
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
            if (fabs((double)y[i * (size_t)n + j] - ref) > 1e-4 * mag + 1e-6)
                bench_die("onednn_peer: y[%zu][%zu] = %g, reference %g", i, j, (double)y[i * (size_t)n + j], ref);
        }

    bytes = (double)dnnl_memory_desc_get_size(w_md) + (double)m * (double)k * (double)esz + (double)m * (double)n * 4.0;
    {
        char impl_word[64];
        for (i = 0; impl[i] && i + 1 < sizeof impl_word; i++) impl_word[i] = impl[i] == ' ' ? '_' : impl[i];
        impl_word[i] = 0;
        bench_line(med, 2.0 * (double)m * (double)n * (double)k, bytes, "%s impl=%s", params, impl_word);
    }

    for (i = 0; i < rot.n; i++) dnnl_memory_destroy(w_mem[i]);
    dnnl_memory_destroy(w_user_mem);
    dnnl_memory_destroy(x_mem);
    dnnl_memory_destroy(y_mem);
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

int main(int argc, char **argv) {
    bench_args args;
    if (argc < 2 || strcmp(argv[1], "linear") != 0) {
        fprintf(stderr, "usage: onednn_peer linear --m M --n N --k K --dtype f32|bf16|s8 --threads T --rotate-mb R\n"
                        "                          [--reps N] [--warmup W]\n");
        return 2;
    }
    bench_args_parse(&args, argc - 2, argv + 2, "m,n,k,dtype");
    return cmd_linear(&args);
}
