/* amxk_pool.h - a tiny pthread thread pool that plugs into amxk_ctx.parallel_for (example code)
   Public domain or MIT, your choice (as amxk.h).

   Self-contained and header-only: every function is `static`, so include it in any number of files
   (no IMPLEMENTATION define). amxk itself creates no threads; this is one way to give it some.

       #include "amxk.h"
       #include "examples/amxk_pool.h"

       amxk_pool pool;
       amxk_ctx ctx = {0};
       if (amxk_pool_init(&pool, 8) != 0) ...;      8 workers: the calling thread + 7 helper threads
       amxk_pool_bind(&pool, &ctx);                  sets parallel_for, parallel_user, n_workers
       amxk_ctx_init(&ctx);
       ... amxk ops with &ctx ...
       amxk_pool_destroy(&pool);

   WORKERS. amxk_pool_init(p, n) makes a pool of n workers IN TOTAL: the thread that calls
   amxk_pool_parallel_for is worker 0 and n - 1 helper threads are workers 1..n-1. n == 1 creates no
   thread (everything runs on the caller).

   SCHEDULING. amxk_pool_parallel_for(pool, fn, task_ctx, n_tasks) runs fn(task_ctx, t, w) exactly once
   for every t in [0, n_tasks), w in [0, n_workers) being the index of the worker running it (one
   worker runs one task at a time, so no two concurrently running calls share a w), and returns when
   all calls have returned (their writes are then visible to the caller). Tasks are handed out
   dynamically from an atomic counter, so which worker runs which task varies from run to run.

   NESTING / CONCURRENT CALLERS. One parallel_for runs on the pool at a time. A call made while the
   pool is busy (from inside a task, or from another thread) does not wait: it runs its tasks
   serially on the calling thread with worker index 0 (valid: they run one at a time).

   BUILD. Link with -pthread. Uses pthread mutexes/condition variables and the GCC/clang __atomic
   builtins; compiles warning-free as C99 (-Wall -Wextra -Wpedantic) and as C++11. glibc declares
   everything used here under plain -std=c99; with a stricter libc, put
   `#define _POSIX_C_SOURCE 200809L` before the first #include of the file. */
#ifndef AMXK_POOL_H_INCLUDED
#define AMXK_POOL_H_INCLUDED

#include <pthread.h>
#include <stdlib.h>
#ifndef AMXK_H_INCLUDED
#  include "../amxk.h" /* the declarations only: types amxk_task_fn, amxk_ctx */
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define AMXK__POOL_FN __attribute__((unused)) static
#else
#  define AMXK__POOL_FN static
#endif

typedef struct amxk_pool amxk_pool;

typedef struct amxk__pool_helper {
    amxk_pool *pool;
    int index; /* worker index, 1..n_workers-1 */
    pthread_t thread;
} amxk__pool_helper;

struct amxk_pool {
    int n_workers;               /* total, caller included */
    amxk__pool_helper *helpers;  /* n_workers - 1 */
    pthread_mutex_t call_lock;   /* held for the duration of one parallel_for */
    pthread_mutex_t lock;        /* protects everything below */
    pthread_cond_t wake;         /* helpers wait here for a new generation */
    pthread_cond_t done;         /* the caller waits here for active == 0 */
    unsigned long generation;    /* bumped once per job */
    int stop;
    int active;                  /* helpers that have not yet finished the current job */
    amxk_task_fn fn;
    void *task_ctx;
    size_t n_tasks;
    size_t next;                 /* next task to hand out (atomic) */
};

/* Runs tasks from the shared counter until none are left. */
AMXK__POOL_FN void amxk__pool_drain(amxk_pool *p, amxk_task_fn fn, void *task_ctx, size_t n_tasks, int w) {
    for (;;) {
        size_t t = __atomic_fetch_add(&p->next, (size_t)1, __ATOMIC_RELAXED);
        if (t >= n_tasks) break;
        fn(task_ctx, t, w);
    }
}

AMXK__POOL_FN void *amxk__pool_main(void *arg) {
    amxk__pool_helper *h = (amxk__pool_helper *)arg;
    amxk_pool *p = h->pool;
    unsigned long seen = 0;
    for (;;) {
        amxk_task_fn fn;
        void *task_ctx;
        size_t n_tasks;
        pthread_mutex_lock(&p->lock);
        while (p->generation == seen && !p->stop) pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        seen = p->generation;
        fn = p->fn;
        task_ctx = p->task_ctx;
        n_tasks = p->n_tasks;
        pthread_mutex_unlock(&p->lock);

        amxk__pool_drain(p, fn, task_ctx, n_tasks, h->index);

        pthread_mutex_lock(&p->lock);
        if (--p->active == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

AMXK__POOL_FN void amxk_pool_destroy(amxk_pool *p);

/* Starts n_workers - 1 helper threads (n_workers >= 1; see WORKERS). Returns 0 on success, -1 on bad
   arguments or when a thread, mutex or condition variable cannot be created (nothing is left
   running then, and the pool must not be used or destroyed). */
AMXK__POOL_FN int amxk_pool_init(amxk_pool *p, int n_workers) {
    int i;
    if (!p || n_workers < 1) return -1;
    p->n_workers = 1;
    p->helpers = NULL;
    p->generation = 0;
    p->stop = 0;
    p->active = 0;
    p->fn = NULL;
    p->task_ctx = NULL;
    p->n_tasks = 0;
    p->next = 0;
    if (pthread_mutex_init(&p->call_lock, NULL) != 0) return -1;
    if (pthread_mutex_init(&p->lock, NULL) != 0) goto fail_lock;
    if (pthread_cond_init(&p->wake, NULL) != 0) goto fail_wake;
    if (pthread_cond_init(&p->done, NULL) != 0) goto fail_done;
    if (n_workers > 1) {
        p->helpers = (amxk__pool_helper *)calloc((size_t)(n_workers - 1), sizeof *p->helpers);
        if (!p->helpers) goto fail_alloc;
        for (i = 0; i < n_workers - 1; i++) {
            p->helpers[i].pool = p;
            p->helpers[i].index = i + 1;
            if (pthread_create(&p->helpers[i].thread, NULL, amxk__pool_main, &p->helpers[i]) != 0) {
                amxk_pool_destroy(p); /* joins the p->n_workers - 1 helpers started so far */
                return -1;
            }
            p->n_workers = i + 2;
        }
    }
    return 0;
fail_alloc:
    pthread_cond_destroy(&p->done);
fail_done:
    pthread_cond_destroy(&p->wake);
fail_wake:
    pthread_mutex_destroy(&p->lock);
fail_lock:
    pthread_mutex_destroy(&p->call_lock);
    return -1;
}

/* Stops and joins the helper threads and frees the pool's resources. No call may be running. */
AMXK__POOL_FN void amxk_pool_destroy(amxk_pool *p) {
    int i;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (i = 0; i < p->n_workers - 1; i++) pthread_join(p->helpers[i].thread, NULL);
    free(p->helpers);
    p->helpers = NULL;
    p->n_workers = 0;
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->call_lock);
}

/* amxk_parallel_for_fn: `user` is the amxk_pool *. See SCHEDULING and NESTING above. */
AMXK__POOL_FN void amxk_pool_parallel_for(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    amxk_pool *p = (amxk_pool *)user;
    size_t t;
    if (n_tasks == 0) return;
    if (p->n_workers <= 1 || n_tasks == 1 || pthread_mutex_trylock(&p->call_lock) != 0) {
        for (t = 0; t < n_tasks; t++) fn(task_ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->task_ctx = task_ctx;
    p->n_tasks = n_tasks;
    __atomic_store_n(&p->next, (size_t)0, __ATOMIC_RELAXED);
    p->active = p->n_workers - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    amxk__pool_drain(p, fn, task_ctx, n_tasks, 0);

    pthread_mutex_lock(&p->lock);
    while (p->active > 0) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->call_lock);
}

/* Points ctx at this pool: parallel_for, parallel_user and n_workers. Call before amxk_ctx_init. */
AMXK__POOL_FN void amxk_pool_bind(amxk_pool *p, amxk_ctx *ctx) {
    ctx->parallel_for = amxk_pool_parallel_for;
    ctx->parallel_user = p;
    ctx->n_workers = p->n_workers;
}

#endif /* AMXK_POOL_H_INCLUDED */
