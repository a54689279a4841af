/* bench_util.h - helpers shared by the amxk benchmark programs (amxk_bench.c, onednn_peer.c).

   Everything here is `static`; include it in each program. Nothing depends on amxk.

   ARGUMENTS   `--key value` or `--key=value`. bench_args_parse() checks every key against the
               common keys (BENCH_COMMON_KEYS) and a comma-separated list of the subcommand's own keys;
               bench_int / bench_dbl / bench_str read them with a default.
   TIMING      bench_measure() calls fn(user, rep) `warmup` times untimed and `reps` times timed, each
               call timed alone with CLOCK_MONOTONIC, and returns the median in seconds. With the
               environment variable BENCH_CLOCK=cpu it times with CLOCK_PROCESS_CPUTIME_ID instead: the
               CPU time of all the process's threads, for 1-thread runs on a machine that other jobs
               share (time spent descheduled is not counted; with T threads it is T times the wall time
               at best, so use it with --threads 1 only).
   ROTATION    bench_rot keeps several copies of a weight buffer totalling at least --rotate-mb MiB;
               rep i uses copy i % n, so with a total well above the last-level cache every call reads
               its weights from DRAM (cold weights, as in LLM decoding). --rotate-mb 0: one copy (hot).
   OUTPUT      bench_line() prints one line per measured case:
                   op=<name> key=value ... median_us=<float> gflops=<float> gbs=<float>
               gflops = flops / median / 1e9; gbs = bytes / median / 1e9 (decimal GB/s), where flops
               and bytes are what the caller says one call does/moves. */
#ifndef AMXK_BENCH_UTIL_H
#define AMXK_BENCH_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) || defined(__clang__)
#  define BENCH_FN __attribute__((unused)) static
#else
#  define BENCH_FN static
#endif

/* Keys every subcommand accepts. */
#define BENCH_COMMON_KEYS "threads,isa,family,rotate-mb,reps,warmup"
#define BENCH_MAX_ARGS 32

typedef struct bench_args {
    int n;
    const char *key[BENCH_MAX_ARGS];
    const char *val[BENCH_MAX_ARGS];
} bench_args;

BENCH_FN void bench_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* 1 if `key` is an entry of the comma-separated `list`. */
BENCH_FN int bench_key_in(const char *key, const char *list) {
    size_t len = strlen(key);
    while (list && *list) {
        const char *end = strchr(list, ',');
        size_t l = end ? (size_t)(end - list) : strlen(list);
        if (l == len && strncmp(list, key, len) == 0) return 1;
        list = end ? end + 1 : NULL;
    }
    return 0;
}

/* Parses argv[0..argc) (the words after the subcommand). Exits with a message on a malformed or
   unknown option. The strings point into argv. */
BENCH_FN void bench_args_parse(bench_args *a, int argc, char **argv, const char *own_keys) {
    int i;
    a->n = 0;
    for (i = 0; i < argc; i++) {
        const char *w = argv[i], *eq;
        const char *key, *val;
        static char keybuf[BENCH_MAX_ARGS][64];
        if (strncmp(w, "--", 2) != 0) bench_die("expected --key, got '%s'", w);
        if (a->n == BENCH_MAX_ARGS) bench_die("too many options");
        eq = strchr(w, '=');
        if (eq) {
            size_t l = (size_t)(eq - w - 2);
            if (l >= sizeof keybuf[0]) bench_die("option name too long: %s", w);
            memcpy(keybuf[a->n], w + 2, l);
            keybuf[a->n][l] = 0;
            key = keybuf[a->n];
            val = eq + 1;
        } else {
            if (i + 1 >= argc) bench_die("option %s needs a value", w);
            key = w + 2;
            val = argv[++i];
        }
        if (!bench_key_in(key, BENCH_COMMON_KEYS) && !bench_key_in(key, own_keys))
            bench_die("unknown option --%s (accepted: %s%s%s)", key, BENCH_COMMON_KEYS, own_keys && *own_keys ? "," : "",
                      own_keys ? own_keys : "");
        a->key[a->n] = key;
        a->val[a->n] = val;
        a->n++;
    }
}

/* The value of the last --key given, or NULL. */
BENCH_FN const char *bench_str(const bench_args *a, const char *key, const char *def) {
    int i;
    for (i = a->n - 1; i >= 0; i--)
        if (strcmp(a->key[i], key) == 0) return a->val[i];
    return def;
}
BENCH_FN double bench_dbl(const bench_args *a, const char *key, double def) {
    const char *s = bench_str(a, key, NULL);
    char *end;
    double v;
    if (!s) return def;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end) bench_die("--%s: not a number: '%s'", key, s);
    return v;
}
BENCH_FN long bench_int(const bench_args *a, const char *key, long def) {
    const char *s = bench_str(a, key, NULL);
    char *end;
    long v;
    if (!s) return def;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end) bench_die("--%s: not an integer: '%s'", key, s);
    return v;
}

/* ---- time ---------------------------------------------------------------------------------- */

BENCH_FN double bench_now(void) {
    static int clk = -1; /* 0 monotonic, 1 process CPU time (BENCH_CLOCK=cpu) */
    struct timespec ts;
    if (clk < 0) {
        const char *e = getenv("BENCH_CLOCK");
        clk = e && strcmp(e, "cpu") == 0;
    }
    clock_gettime(clk ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

BENCH_FN int bench_cmp_dbl(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}
/* Median of v[0..n) (sorts v). */
BENCH_FN double bench_median(double *v, int n) {
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef void (*bench_call_fn)(void *user, size_t rep);

/* Runs fn `warmup` times untimed, then `reps` times each timed alone; returns the median seconds.
   `rep` counts all calls from 0 (warmup included), for choosing rotation copies. */
BENCH_FN double bench_measure(bench_call_fn fn, void *user, int warmup, int reps) {
    double *t = (double *)malloc((size_t)(reps > 0 ? reps : 1) * sizeof *t), med;
    size_t call = 0;
    int i;
    if (!t) bench_die("out of memory");
    for (i = 0; i < warmup; i++) fn(user, call++);
    for (i = 0; i < reps; i++) {
        double t0 = bench_now();
        fn(user, call++);
        t[i] = bench_now() - t0;
    }
    med = bench_median(t, reps);
    free(t);
    return med;
}

/* Prints `<params> median_us=.. gflops=.. gbs=..` (params formatted like printf, e.g.
   "op=linear m=%d n=%d"). */
BENCH_FN void bench_line(double median_s, double flops, double bytes, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" median_us=%.3f gflops=%.3f gbs=%.3f\n", median_s * 1e6, median_s > 0 ? flops / median_s / 1e9 : 0.0,
           median_s > 0 ? bytes / median_s / 1e9 : 0.0);
    fflush(stdout);
}

/* ---- memory -------------------------------------------------------------------------------- */

/* Aligned allocation (align: a power of two, multiple of sizeof(void *)); exits on failure. */
BENCH_FN void *bench_alloc(size_t bytes, size_t align) {
    void *p = NULL;
    if (posix_memalign(&p, align, bytes ? bytes : 1) != 0 || !p) bench_die("cannot allocate %zu bytes", bytes);
    return p;
}

/* Deterministic pseudo-random floats in [-1, 1) (xorshift32). */
BENCH_FN void bench_fill(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed ? seed : 1u;
    size_t i;
    for (i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)(s >> 8) * (1.0f / 8388608.0f) - 1.0f;
    }
}

typedef struct bench_rot {
    size_t n;     /* number of copies, >= 1 */
    size_t bytes; /* bytes per copy */
    void **copy;
} bench_rot;

/* Allocates enough copies of `bytes` each (4096-byte aligned) to total at least rotate_mb MiB, at
   least one. The caller fills every copy (r->copy[i], i < r->n). */
BENCH_FN void bench_rot_init(bench_rot *r, size_t bytes, double rotate_mb) {
    double want = rotate_mb * 1048576.0;
    size_t i;
    r->bytes = bytes;
    r->n = 1;
    if (rotate_mb > 0 && bytes > 0 && want > (double)bytes) r->n = (size_t)(want / (double)bytes + 0.999999);
    r->copy = (void **)calloc(r->n, sizeof *r->copy);
    if (!r->copy) bench_die("out of memory");
    for (i = 0; i < r->n; i++) r->copy[i] = bench_alloc(bytes, 4096);
}
/* The copy to use for call number `rep`. */
BENCH_FN void *bench_rot_get(const bench_rot *r, size_t rep) { return r->copy[rep % r->n]; }
BENCH_FN void bench_rot_free(bench_rot *r) {
    size_t i;
    for (i = 0; i < r->n; i++) free(r->copy[i]);
    free(r->copy);
    r->copy = NULL;
    r->n = 0;
}

#endif /* AMXK_BENCH_UTIL_H */
