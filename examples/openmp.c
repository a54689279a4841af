/* openmp.c - plugging OpenMP into amxk's parallel-for callback.

   amxk creates no threads: a context carries a callback
       void parallel_for(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks)
   that must run fn(task_ctx, t, w) for every t in [0, n_tasks), with w in [0, ctx.n_workers) naming
   the calling worker, and return when all are done. With OpenMP that is one `omp parallel for`, the
   worker index being omp_get_thread_num() and n_workers omp_get_max_threads().

   Call amxk ops from outside a parallel region (or with nested parallelism off, the OpenMP default):
   inside an active region a nested `parallel for` runs on a team of one, which is valid but serial.

   Build (gcc; clang needs libomp):
       gcc -std=c99 -O2 -fopenmp -I. examples/openmp.c -o build/openmp -lm && build/openmp
   `make examples` builds it. OMP_NUM_THREADS sets the worker count as usual. */
#define AMXK_IMPLEMENTATION
#include "amxk.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The adapter: an amxk_parallel_for_fn built on OpenMP. `user` is unused. Static schedule: task t
   runs on a fixed thread, but amxk's results never depend on which worker runs a task. */
static void omp_parallel_for(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    long t;
    (void)user;
#pragma omp parallel for schedule(static)
    for (t = 0; t < (long)n_tasks; t++) fn(task_ctx, (size_t)t, omp_get_thread_num());
}

/* Demo work: each task converts one slice of an array to fp16 (amxk_convert is a serial op; the
   parallel ops of amxk_pack.h and the other modules call ctx->parallel_for in the same way). */
typedef struct job {
    const amxk_ctx *ctx;
    const float *src;
    amxk_f16 *dst;
    size_t n, n_tasks;
    int *ran_on;
} job;

static void convert_slice(void *task_ctx, size_t task, int worker) {
    job *j = (job *)task_ctx;
    size_t begin = j->n * task / j->n_tasks, end = j->n * (task + 1) / j->n_tasks;
    j->ran_on[task] = worker;
    (void)amxk_convert(j->ctx, j->dst + begin, AMXK_DTYPE_F16, j->src + begin, AMXK_DTYPE_F32, end - begin);
}

int main(void) {
    amxk_ctx ctx;
    amxk_status st;
    job j;
    size_t i, n = (size_t)1 << 22, n_tasks = 64, mismatches = 0;
    float *src = (float *)malloc(n * sizeof *src);
    amxk_f16 *dst = (amxk_f16 *)malloc(n * sizeof *dst);
    int *ran_on = (int *)calloc(n_tasks, sizeof *ran_on), *per_worker;
    double t0, t1;

    memset(&ctx, 0, sizeof ctx);
    ctx.parallel_for = omp_parallel_for;
    ctx.parallel_user = NULL;
    ctx.n_workers = omp_get_max_threads();
    st = amxk_ctx_init(&ctx);
    if (st != AMXK_OK || !src || !dst || !ran_on) {
        fprintf(stderr, "setup failed: %s\n", amxk_status_string(st));
        return 1;
    }
    per_worker = (int *)calloc((size_t)ctx.n_workers, sizeof *per_worker);
    if (!per_worker) return 1;
    for (i = 0; i < n; i++) src[i] = (float)i * 1e-3f - 2000.0f;

    j.ctx = &ctx;
    j.src = src;
    j.dst = dst;
    j.n = n;
    j.n_tasks = n_tasks;
    j.ran_on = ran_on;
    t0 = omp_get_wtime();
    ctx.parallel_for(ctx.parallel_user, convert_slice, &j, n_tasks);
    t1 = omp_get_wtime();

    for (i = 0; i < n; i++) mismatches += dst[i] != amxk_f32_to_f16(src[i]);
    for (i = 0; i < n_tasks; i++) per_worker[ran_on[i]]++;
    printf("amxk %s, tier %s, OpenMP workers %d\n", amxk_version(), amxk_tier_name(ctx.tier), ctx.n_workers);
    printf("converted %zu floats to fp16 in %zu tasks, %.3f ms, %zu mismatches; tasks per worker:", n, n_tasks,
           (t1 - t0) * 1e3, mismatches);
    for (i = 0; i < (size_t)ctx.n_workers; i++) printf(" w%zu=%d", i, per_worker[i]);
    printf("\n");
    free(per_worker);
    free(ran_on);
    free(dst);
    free(src);
    return mismatches ? 1 : 0;
}
