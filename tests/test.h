/* tests/test.h - the shared harness of the amxk test programs.

   A test program is one .c file:

       #define AMXK_IMPLEMENTATION          (optionally with AMXK_AMX_EMULATE on the command line)
       #include "test.h"                    (brings amxk.h and examples/amxk_pool.h)
       #include "../amxk_pack.h"            (modules, if tested; any order)
       int main(void) {
           test_init();                     prints the seed and the CPU's tiers
           ... CHECK(cond, "fmt", args) ...
           return test_finish();            prints "N passed, M failed"; exit code 1 if M > 0
       }

   Build: cc -std=c99 -O2 -I. tests/test_x.c -o build/test_x -pthread -lm (from the repo root).
   The Makefile instead compiles the implementation once per configuration (tests/amxk_impl.c) and
   builds each program with -DAMXK_TEST_LINKED, which its `#ifndef AMXK_TEST_LINKED` around the
   AMXK_IMPLEMENTATION define turns into declarations only (programs that test private helpers,
   SELF_IMPL in the Makefile, keep their own implementation).

   What is here:
     CHECK(cond, fmt, ...)   counts a pass or a failure; a failure prints file:line, the condition and
                             the message, and the test keeps going (the first TEST_MAX_PRINT failures
                             are printed, the rest only counted). The message is required (C99 needs
                             at least one argument for "..."): CHECK(x == 1, "x=%d", x).
     TEST_SECTION(name)      prints "== name".
     random data             two splitmix64 streams; seed AMXK_TEST_SEED (decimal or 0x hex) or a fixed
                             default, printed by test_init. The rule: the same seed gives the same
                             cases on every machine, whatever tiers (or workspace sizes) it has.
       test_case_begin(id)   reseeds the DATA stream from (test_seed, id): what a case draws after it
                             depends on the seed and id only, never on what ran before. id: the case's
                             place in a machine-independent enumeration, built with
                             test_case_id("section", k) and test_case_mix(id, v) (one per parameter).
       test_rand(), test_rand32(), test_randint(lo, hi), test_uniform(lo, hi), test_randf(lo, hi)
                             draw case data (inputs, shapes, strides) from the data stream. A draw
                             needs a test_case_begin since test_init and since the last test_ctx
                             (every tier's iteration calls test_ctx): otherwise it is a "data draw
                             outside a case" and test_finish counts a failure. So: begin the case,
                             draw all of its data, then loop over the tiers; or begin it again (same
                             id: the same data) inside the tier loop. Data that must not depend on
                             the seed either: test_case_begin(any), then set test_rng_state.
       test_noise(), test_noise32(), test_noise_int(lo, hi), test_noise_fill(p, bytes)
                             the NOISE stream (seeded once by test_init, never by a case): workspace,
                             guard and poison bytes, and any draw whose count depends on the tier or
                             the machine. Never case data.
       test_rng_next(&state) a splitmix64 step on the caller's state (per-thread streams; seed the
                             state from test_rand() inside the case).
     test_alloc(bytes)       64-byte aligned buffer, body poisoned with 0xFF bytes (NaN as f32, bf16,
                             f16, e4m3 and e5m2), TEST_GUARD pattern bytes before and after;
                             test_guard_ok(p) checks them, test_free(p) frees. Under ASan the guards
                             are also poisoned, so any read or write of them is reported at once.
     test_ref_decode/encode  reference bf16/f16/fp8 conversions in double arithmetic (ldexp/frexp),
                             written independently of amxk.h.
     TEST_FOR_EACH_TIER(t, ctx)   loop over AMXK_TIER_SCALAR..AMXK_TIER_AMX with ctx initialised
                             for tier t only (isa_allow = AMXK_TIER_BIT(t)); tiers this CPU/build
                             cannot run are skipped with one "skip tier X: not usable here" line.
     test_ctx(ctx, tier, n_workers)   a context on a (cached) amxk_pool of n_workers workers.
     test_worker_counts[]    1, 2, 3, 7 (TEST_N_WORKER_COUNTS entries).
     test_allclose(...)      float array comparison with atol/rtol; prints the first mismatch.
     AMXK_TEST_EMULATED_ONLY=1   this run tests only the levels the CPU cannot run natively (features it
                             lacks; the AVX2 level when AVX-VNNI comes from the shim), as if AMXK_TEST_ONLY
                             named them: make sanitize's emulated-AVX-512 build leaves the levels its native
                             build runs to that build.
     test_dump(what, t, p, n) with AMXK_TEST_DUMP=DIR set: appends one line "what case tier workers ord bytes
                             hash" (t < 0: the last test_ctx's level; FNV-1a 64 of the n bytes at p) to
                             DIR/<build dir>.<program>[.variant].txt; the
                             checkers call it on every output they compare, so two runs (before / after a
                             change, same machine and build) can be compared bit for bit: sort both files
                             and diff them (tests/bitwise.sh). Nothing happens without the variable. */
#ifndef AMXK_TEST_H_INCLUDED
#define AMXK_TEST_H_INCLUDED

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "../amxk.h"
#include "../examples/amxk_pool.h"

#if defined(__GNUC__) || defined(__clang__)
#  define TEST_FN __attribute__((unused)) static
#  define TEST_VAR __attribute__((unused)) static
#else
#  define TEST_FN static
#  define TEST_VAR static
#endif

#if defined(__SANITIZE_ADDRESS__)
#  define TEST_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define TEST_ASAN 1
#  endif
#endif
#ifdef TEST_ASAN
#  include <sanitizer/asan_interface.h>
#  define TEST_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#  define TEST_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#  define TEST_POISON(p, n) ((void)(p), (void)(n))
#  define TEST_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- pass / fail ------------------------------------------------------------------------------ */

#define TEST_MAX_PRINT 40
TEST_VAR long test_n_pass, test_n_fail;

TEST_FN int test_check_(int ok, const char *file, int line, const char *cond, const char *fmt, ...) {
    va_list ap;
    if (ok) {
        test_n_pass++;
        return 1;
    }
    test_n_fail++;
    if (test_n_fail <= TEST_MAX_PRINT) {
        printf("%s:%d: FAILED: %s: ", file, line, cond);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        if (test_n_fail == TEST_MAX_PRINT) printf("(further failures are counted, not printed)\n");
        fflush(stdout);
    }
    return 0;
}
#define CHECK(cond, ...) test_check_((cond) ? 1 : 0, __FILE__, __LINE__, #cond, __VA_ARGS__)
#define TEST_SECTION(name) (printf("== %s\n", (name)), fflush(stdout))

/* ---- RNG (splitmix64): the per-case data stream and the noise stream ---------------------------- */

TEST_VAR uint64_t test_seed = 0x243f6a8885a308d3ull, test_rng_state, test_noise_state;
TEST_VAR int test_case_open;   /* a test_case_begin since test_init and since the last test_ctx */
TEST_VAR uint64_t test_case_cur; /* the id of the last test_case_begin (for messages) */
TEST_VAR long test_n_stray;    /* data draws outside a case */
TEST_VAR int test_dump_ord_reset_; /* a case began: test_dump's ordinal restarts */

TEST_FN uint64_t test_rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* A bijective 64-bit mix (splitmix64's finaliser) of h combined with v: case ids from parameters. */
TEST_FN uint64_t test_case_mix(uint64_t h, uint64_t v) {
    uint64_t s = h ^ (v * 0xd6e8feb86659fd93ull);
    return test_rng_next(&s);
}
/* The id of case k of a section (FNV-1a of the section name, mixed with k). */
TEST_FN uint64_t test_case_id(const char *section, uint64_t k) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *section; section++) h = (h ^ (unsigned char)*section) * 0x100000001b3ull;
    return test_case_mix(h, k);
}
/* Reseeds the data stream from (test_seed, id). */
TEST_FN void test_case_begin(uint64_t id) {
    test_rng_state = test_case_mix(test_seed ^ 0x6a09e667f3bcc909ull, id);
    test_case_cur = id;
    test_dump_ord_reset_ = 1;
    test_case_open = 1;
}
TEST_FN uint64_t test_rand(void) {
    if (!test_case_open && test_n_stray++ == 0)
        printf("data draw outside a case (no test_case_begin since test_init or the last test_ctx; last case id 0x%llx)\n",
               (unsigned long long)test_case_cur);
    return test_rng_next(&test_rng_state);
}
TEST_FN uint32_t test_rand32(void) { return (uint32_t)(test_rand() >> 32); }
/* uniform integer in [lo, hi] */
TEST_FN int test_randint(int lo, int hi) { return lo + (int)(test_rand() % (uint64_t)(hi - lo + 1)); }
/* uniform double in [lo, hi) */
TEST_FN double test_uniform(double lo, double hi) { return lo + (hi - lo) * (double)(test_rand() >> 11) * (1.0 / 9007199254740992.0); }
TEST_FN float test_randf(float lo, float hi) { return (float)test_uniform(lo, hi); }

/* The noise stream: never case data. */
TEST_FN uint64_t test_noise(void) { return test_rng_next(&test_noise_state); }
TEST_FN uint32_t test_noise32(void) { return (uint32_t)(test_noise() >> 32); }
TEST_FN int test_noise_int(int lo, int hi) { return lo + (int)(test_noise() % (uint64_t)(hi - lo + 1)); }
/* bytes noise bytes at p */
TEST_FN void test_noise_fill(void *p, size_t bytes) {
    unsigned char *q = (unsigned char *)p;
    size_t i;
    uint64_t r = 0;
    for (i = 0; i < bytes; i++) {
        if (i % 8 == 0) r = test_noise();
        q[i] = (unsigned char)r, r >>= 8;
    }
}

/* ---- bit casts ---------------------------------------------------------------------------------- */

TEST_FN uint32_t test_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
TEST_FN float test_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- guarded buffers ---------------------------------------------------------------------------- */

#define TEST_GUARD 256 /* bytes each side; a multiple of 64 */
typedef struct test_buf_meta {
    void *raw;
    size_t bytes;
} test_buf_meta;

TEST_FN unsigned char test_guard_byte(size_t i) { return (unsigned char)(0x5a + 37 * (i & 0xff)); }

/* bytes of body (0 allowed), 64-byte aligned, poisoned with 0xFF; guards before and after. */
TEST_FN void *test_alloc(size_t bytes) {
    unsigned char *raw = (unsigned char *)malloc(64 + 64 + TEST_GUARD + bytes + TEST_GUARD), *p;
    test_buf_meta m;
    size_t i;
    if (!raw) {
        printf("test_alloc(%lu): out of memory\n", (unsigned long)bytes);
        exit(2);
    }
    p = raw + 64 + TEST_GUARD + (64 - ((uintptr_t)raw % 64)) % 64;
    m.raw = raw;
    m.bytes = bytes;
    memcpy(p - TEST_GUARD - 64, &m, sizeof m);
    for (i = 0; i < TEST_GUARD; i++) p[-(ptrdiff_t)TEST_GUARD + (ptrdiff_t)i] = test_guard_byte(i);
    for (i = 0; i < TEST_GUARD; i++) p[bytes + i] = test_guard_byte(i + 128);
    memset(p, 0xff, bytes);
    TEST_POISON(p - TEST_GUARD, TEST_GUARD);
    TEST_POISON(p + bytes, TEST_GUARD);
    return p;
}
TEST_FN size_t test_buf_bytes(const void *p) {
    test_buf_meta m;
    memcpy(&m, (const unsigned char *)p - TEST_GUARD - 64, sizeof m);
    return m.bytes;
}
/* 1 when both guards are intact. */
TEST_FN int test_guard_ok(const void *p) {
    const unsigned char *q = (const unsigned char *)p;
    size_t bytes = test_buf_bytes(p), i;
    int ok = 1;
    TEST_UNPOISON(q - TEST_GUARD, TEST_GUARD);
    TEST_UNPOISON(q + bytes, TEST_GUARD);
    for (i = 0; i < TEST_GUARD; i++) ok &= q[-(ptrdiff_t)TEST_GUARD + (ptrdiff_t)i] == test_guard_byte(i);
    for (i = 0; i < TEST_GUARD; i++) ok &= q[bytes + i] == test_guard_byte(i + 128);
    TEST_POISON(q - TEST_GUARD, TEST_GUARD);
    TEST_POISON(q + bytes, TEST_GUARD);
    return ok;
}
TEST_FN void test_free(void *p) {
    test_buf_meta m;
    if (!p) return;
    memcpy(&m, (unsigned char *)p - TEST_GUARD - 64, sizeof m);
    TEST_UNPOISON((unsigned char *)p - TEST_GUARD, TEST_GUARD);
    TEST_UNPOISON((unsigned char *)p + m.bytes, TEST_GUARD);
    free(m.raw);
}
TEST_FN void test_poison(void *p, size_t bytes) { memset(p, 0xff, bytes); }

/* ---- reference conversions (double arithmetic, independent of amxk.h) ---------------------------- */

typedef struct test_fmt {
    int ebits, mbits, bias;
    int has_inf;    /* IEEE-like: all-ones exponent is inf (m == 0) or NaN; else only S.1..1.1..1 is NaN */
    int saturate;   /* overflow gives +-max (fp8) instead of inf */
    double maxv;    /* largest finite value */
} test_fmt;

TEST_FN test_fmt test_fmt_of(amxk_dtype dt) {
    test_fmt f;
    memset(&f, 0, sizeof f);
    switch (dt) {
    case AMXK_DTYPE_BF16: f.ebits = 8, f.mbits = 7, f.bias = 127, f.has_inf = 1; break;
    case AMXK_DTYPE_F16: f.ebits = 5, f.mbits = 10, f.bias = 15, f.has_inf = 1; break;
    case AMXK_DTYPE_FP8_E4M3: f.ebits = 4, f.mbits = 3, f.bias = 7, f.saturate = 1; break;
    case AMXK_DTYPE_FP8_E5M2: f.ebits = 5, f.mbits = 2, f.bias = 15, f.has_inf = 1, f.saturate = 1; break;
    default: printf("test_fmt_of: bad dtype %d\n", (int)dt); exit(2);
    }
    {
        int emax = (1 << f.ebits) - 1 - f.bias; /* exponent of the all-ones field */
        if (f.has_inf) f.maxv = ldexp(2.0 - ldexp(1.0, -f.mbits), emax - 1);
        else f.maxv = ldexp(2.0 - ldexp(2.0, -f.mbits), emax); /* top mantissa code is NaN */
    }
    return f;
}
TEST_FN int test_code_bits(amxk_dtype dt) { return dt == AMXK_DTYPE_BF16 || dt == AMXK_DTYPE_F16 ? 16 : 8; }

TEST_FN int test_code_is_nan(amxk_dtype dt, unsigned code) {
    test_fmt f = test_fmt_of(dt);
    unsigned m = code & ((1u << f.mbits) - 1), e = (code >> f.mbits) & ((1u << f.ebits) - 1);
    if (e != (1u << f.ebits) - 1) return 0;
    return f.has_inf ? m != 0 : m == (1u << f.mbits) - 1;
}
/* Exact value of a code: +-INFINITY for inf, NAN for NaN codes, signed zeros kept. */
TEST_FN double test_ref_decode(amxk_dtype dt, unsigned code) {
    test_fmt f = test_fmt_of(dt);
    int nb = test_code_bits(dt);
    unsigned s = (code >> (nb - 1)) & 1u, m = code & ((1u << f.mbits) - 1), e = (code >> f.mbits) & ((1u << f.ebits) - 1);
    double v;
    if (test_code_is_nan(dt, code)) return NAN;
    if (f.has_inf && e == (1u << f.ebits) - 1) v = INFINITY;
    else if (e == 0) v = ldexp((double)m, 1 - f.bias - f.mbits);
    else v = ldexp((double)((1u << f.mbits) + m), (int)e - f.bias - f.mbits);
    return s ? -v : v;
}
/* f32 bits the decoders documented in amxk.h give for a code: the exact value, or for NaN codes:
   bf16 -> code << 16 (bits kept as they are); f16 / e5m2 -> quiet NaN, sign and payload kept;
   e4m3 -> sign | 0x7fc00000. */
TEST_FN uint32_t test_ref_decode_bits(amxk_dtype dt, unsigned code) {
    if (test_code_is_nan(dt, code)) {
        switch (dt) {
        case AMXK_DTYPE_BF16: return (uint32_t)code << 16;
        case AMXK_DTYPE_F16: return ((uint32_t)(code & 0x8000u) << 16) | 0x7fc00000u | ((uint32_t)(code & 0x3ffu) << 13);
        case AMXK_DTYPE_FP8_E5M2: return ((uint32_t)(code & 0x80u) << 24) | 0x7fc00000u | ((uint32_t)(code & 3u) << 21);
        default: return ((uint32_t)(code & 0x80u) << 24) | 0x7fc00000u;
        }
    }
    return test_f32_bits((float)test_ref_decode(dt, code));
}

/* Code of a finite non-negative value that is exactly representable (or inf where the format has it). */
TEST_FN unsigned test_ref_pack(test_fmt f, double v) {
    int e;
    if (v == 0) return 0;
    if (isinf(v)) return ((1u << f.ebits) - 1) << f.mbits;
    if (v < ldexp(1.0, 1 - f.bias)) return (unsigned)ldexp(v, f.bias - 1 + f.mbits); /* subnormal */
    (void)frexp(v, &e); /* v = x * 2^e, x in [0.5, 1) */
    e -= 1;             /* v = 1.m * 2^e */
    return ((unsigned)(e + f.bias) << f.mbits) | (unsigned)(ldexp(v, f.mbits - e) - ldexp(1.0, f.mbits));
}
/* Reference encoder: round to nearest, ties to even; overflow -> inf (bf16, f16) or +-max (fp8,
   infinities included); NaN as amxk documents: bf16 (bits >> 16) | 0x40, f16 sign | 0x7e00 | top 10
   payload bits, fp8 sign | 0x7f. */
TEST_FN unsigned test_ref_encode(amxk_dtype dt, float x) {
    test_fmt f = test_fmt_of(dt);
    int nb = test_code_bits(dt), e;
    uint32_t u = test_f32_bits(x);
    unsigned sign = (u >> 31) << (nb - 1);
    double a = fabs((double)x), q, k, fl, r;
    if (isnan(x)) {
        if (dt == AMXK_DTYPE_BF16) return (u >> 16) | 0x40u;
        if (dt == AMXK_DTYPE_F16) return sign | 0x7e00u | ((u >> 13) & 0x3ffu);
        return sign | 0x7fu;
    }
    if (isinf(a)) return sign | (f.saturate ? test_ref_pack(f, f.maxv) : test_ref_pack(f, INFINITY));
    if (a == 0) return sign;
    (void)frexp(a, &e);
    e -= 1;                                 /* a = 1.xxx * 2^e */
    if (e < 1 - f.bias) e = 1 - f.bias;     /* subnormal range: fixed quantum */
    q = ldexp(1.0, e - f.mbits);            /* spacing of representable values around a */
    k = a / q;                              /* exact: power-of-two scaling */
    fl = floor(k);
    if (k - fl > 0.5 || (k - fl == 0.5 && fmod(fl, 2.0) != 0)) r = fl + 1;
    else r = fl;
    r *= q;
    if (r > f.maxv) return sign | (f.saturate ? test_ref_pack(f, f.maxv) : test_ref_pack(f, INFINITY));
    return sign | test_ref_pack(f, r);
}

/* ---- float comparison ---------------------------------------------------------------------------- */

/* Number of i with |got - want| > atol + rtol * |want| (NaN in either counts unless both NaN);
   prints the first one with `what`. Not a CHECK: wrap it, CHECK(test_allclose(...) == 0, ...). */
TEST_FN size_t test_allclose(const float *got, const float *want, size_t n, double atol, double rtol, const char *what) {
    size_t i, bad = 0;
    for (i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        int ok = (isnan(g) && isnan(w)) || (!isnan(g) && !isnan(w) && (g == w || fabs(g - w) <= atol + rtol * fabs(w)));
        if (!ok && bad++ == 0)
            printf("  %s: first mismatch at %lu: got %.9g want %.9g (atol %g rtol %g)\n", what, (unsigned long)i, g, w, atol, rtol);
    }
    return bad;
}

/* ---- bitwise dumps of checked outputs (AMXK_TEST_DUMP) ------------------------------------------ */

TEST_VAR FILE *test_dump_file;
TEST_VAR int test_dump_tier = -1, test_dump_workers; /* the level and workers of the last test_ctx */
TEST_VAR unsigned long test_dump_ord;                /* outputs dumped since the last case / context */
TEST_FN void test_dump(const char *what, int tier, const void *p, size_t bytes) {
    const unsigned char *q = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    if (!test_dump_file || !p) return;
    if (test_dump_ord_reset_) test_dump_ord = 0, test_dump_ord_reset_ = 0;
    for (i = 0; i < bytes; i++) h = (h ^ q[i]) * 0x100000001b3ull;
    fprintf(test_dump_file, "%s %016llx %d %d %lu %lu %016llx\n", what, (unsigned long long)test_case_cur, tier >= 0 ? tier : test_dump_tier,
            test_dump_workers, test_dump_ord++, (unsigned long)bytes, (unsigned long long)h);
}
/* Opens DIR/<build dir>.<program>[.DENY][.ONLY].txt when AMXK_TEST_DUMP=DIR (Linux: from the
   program's command line). */
TEST_FN void test_dump_open(void) {
    const char *dir = getenv("AMXK_TEST_DUMP"), *deny = getenv("AMXK_TEST_DENY"), *only = getenv("AMXK_TEST_ONLY");
    char exe[512], path[1200];
    const char *base;
    FILE *f;
    size_t n = 0;
    if (!dir || !*dir) return;
    exe[0] = 0;
    if ((f = fopen("/proc/self/cmdline", "rb")) != NULL) {
        n = fread(exe, 1, sizeof exe - 1, f);
        fclose(f);
    }
    exe[n] = 0;
    /* <build dir>.<program>: build/test_pack -> build.test_pack, build/sanitize/test_pack -> sanitize.test_pack */
    base = strrchr(exe, '/');
    if (base) {
        const char *b = base;
        while (b > exe && b[-1] != '/') b--;
        base = b;
        *strrchr(exe, '/') = '.';
    } else {
        base = exe;
    }
    snprintf(path, sizeof path, "%s/%s%s%s%s%s.txt", dir, base, deny && *deny ? ".deny-" : "", deny && *deny ? deny : "",
             only && *only ? ".only-" : "", only && *only ? only : "");
    test_dump_file = fopen(path, "w");
    if (!test_dump_file) printf("AMXK_TEST_DUMP: cannot write %s\n", path);
}

/* ---- tiers and pools ------------------------------------------------------------------------------- */

#define TEST_N_WORKER_COUNTS 4
TEST_VAR const int test_worker_counts[TEST_N_WORKER_COUNTS] = {1, 2, 3, 7};
TEST_VAR amxk_pool test_pools[TEST_N_WORKER_COUNTS];
TEST_VAR int test_pool_ready[TEST_N_WORKER_COUNTS];
TEST_VAR int test_tier_state[AMXK_TIER_COUNT]; /* 0 not tried, 1 ran, -1 skipped, -2 not in this run (AMXK_TEST_ONLY) */
TEST_VAR uint32_t test_deny;  /* AMXK_TEST_DENY: features every test context denies (amxk_ctx.cpu_deny) */
TEST_VAR unsigned test_only; /* AMXK_TEST_ONLY: the levels this run tests (AMXK_TIER_BIT mask; 0 = all): test_tier_runs
                              and TEST_FOR_EACH_TIER skip the others, test_ctx gives none of them but scalar */

/* The cached pool with n workers (one of test_worker_counts, or any n: a new pool is not cached). */
TEST_FN amxk_pool *test_pool(int n) {
    int i;
    for (i = 0; i < TEST_N_WORKER_COUNTS; i++)
        if (test_worker_counts[i] == n) {
            if (!test_pool_ready[i]) {
                if (amxk_pool_init(&test_pools[i], n) != 0) {
                    printf("amxk_pool_init(%d) failed\n", n);
                    exit(2);
                }
                test_pool_ready[i] = 1;
            }
            return &test_pools[i];
        }
    printf("test_pool: %d workers is not one of test_worker_counts\n", n);
    exit(2);
}

/* ctx for tier t only, with n_workers (> 1: on the cached pool; 1: serial, no callback); 2 workers
   make the memory-streaming choices of the family this CPU is not (amxk_ctx.family), so that every
   CPU runs both and the dumps compare them (tests/bitwise.sh). Returns 1 when the tier runs here, 0 (after one "skip tier" line per tier) when it does not. */
TEST_FN int test_ctx(amxk_ctx *ctx, amxk_tier t, int n_workers) {
    amxk_status s;
    test_case_open = 0; /* tier-dependent from here: data draws need a new test_case_begin */
    test_dump_tier = (int)t, test_dump_workers = n_workers, test_dump_ord = 0, test_dump_ord_reset_ = 0;
    memset(ctx, 0, sizeof *ctx);
    ctx->isa_allow = AMXK_TIER_BIT(t);
    ctx->cpu_deny = test_deny;
    if (n_workers == 2) ctx->family = amxk_cpu_init()->family == AMXK_FAMILY_INTEL ? AMXK_FAMILY_OTHER : AMXK_FAMILY_INTEL;
    if (n_workers > 1) amxk_pool_bind(test_pool(n_workers), ctx);
    if (test_only && !(test_only & AMXK_TIER_BIT(t)) && t != AMXK_TIER_SCALAR) {
        test_tier_state[t] = -2; /* not this run's level: quietly left out (scalar contexts pack and check for the others) */
        return 0;
    }
    if (!(amxk_cpu_init()->tiers & AMXK_TIER_BIT(t)) || (s = amxk_ctx_init(ctx)) != AMXK_OK || ctx->tier != t) {
        if (test_tier_state[t] != -1) printf("skip tier %s: not usable here\n", amxk_tier_name(t));
        test_tier_state[t] = -1;
        return 0;
    }
    test_tier_state[t] = 1;
    return 1;
}
/* A parallel_for that runs the tasks on the calling thread in reverse order, task t as worker
   (n_tasks - 1 - t) % 3 (contexts of 3 workers: n_workers = 3, parallel_for = this, parallel_user
   NULL): results must not depend on task order or placement. */
TEST_FN void test_reverse_for(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    size_t t;
    (void)user;
    for (t = n_tasks; t-- > 0;) fn(task_ctx, t, (int)((n_tasks - 1 - t) % 3));
}
/* 1 when test_ctx gives a context of level t in this run (usable here, in AMXK_TEST_ONLY, not removed
   by AMXK_TEST_DENY). */
TEST_FN int test_tier_runs(amxk_tier t) {
    amxk_ctx c;
    memset(&c, 0, sizeof c);
    c.isa_allow = AMXK_TIER_BIT(t), c.cpu_deny = test_deny;
    if (test_only && !(test_only & AMXK_TIER_BIT(t))) return 0;
    return (amxk_cpu_init()->tiers & AMXK_TIER_BIT(t)) && amxk_ctx_init(&c) == AMXK_OK && c.tier == t;
}
/* The vector level of a context (the best level below AMX, and not above its own, whose features it
   has): the level an AMX context's non-tile code runs. */
TEST_FN amxk_tier test_vec_level(const amxk_ctx *ctx) {
    int v;
    for (v = (int)ctx->tier; v > AMXK_TIER_SCALAR; v--)
        if (v != AMXK_TIER_AMX && (amxk_cpu_init()->tiers & AMXK_TIER_BIT(v)) &&
            (amxk_tier_features((amxk_tier)v) & ~ctx->features) == 0)
            break;
    return (amxk_tier)v;
}
#define TEST_FOR_EACH_TIER(t, ctx) \
    for ((t) = AMXK_TIER_SCALAR; (t) <= AMXK_TIER_AMX; (t) = (amxk_tier)((int)(t) + 1)) if ((!test_only || (test_only & AMXK_TIER_BIT(t))) && test_ctx(&(ctx), (t), 1))

/* ---- start / finish ------------------------------------------------------------------------------- */

/* Feature names of AMXK_TEST_DENY, as the README and the summary lines spell them. */
TEST_VAR const struct { const char *name; uint32_t bit; } test_feature_names[] = {
    {"avx2", AMXK_CPU_AVX2}, {"fma", AMXK_CPU_FMA}, {"f16c", AMXK_CPU_F16C}, {"avx512f", AMXK_CPU_AVX512F},
    {"avx512bw", AMXK_CPU_AVX512BW}, {"avx512vl", AMXK_CPU_AVX512VL}, {"avx512dq", AMXK_CPU_AVX512DQ},
    {"avx512vnni", AMXK_CPU_AVX512VNNI}, {"avx512bf16", AMXK_CPU_AVX512BF16}, {"avx512fp16", AMXK_CPU_AVX512FP16},
    {"avx-vnni", AMXK_CPU_AVXVNNI}, {"amx-tile", AMXK_CPU_AMX_TILE}, {"amx-bf16", AMXK_CPU_AMX_BF16},
    {"amx-int8", AMXK_CPU_AMX_INT8}, {"amx-fp16", AMXK_CPU_AMX_FP16}};
/* Parses a comma-separated list of feature names (kind 0) or level names (kind 1) into a mask; exits
   with status 2 on an unknown name. */
TEST_FN uint32_t test_parse_list(const char *var, const char *s, int kind) {
    uint32_t mask = 0;
    while (s && *s) {
        size_t n = strcspn(s, ","), i, found = 0;
        for (i = 0; kind == 0 && i < sizeof test_feature_names / sizeof test_feature_names[0]; i++)
            if (strlen(test_feature_names[i].name) == n && strncmp(s, test_feature_names[i].name, n) == 0) mask |= test_feature_names[i].bit, found = 1;
        for (i = AMXK_TIER_SCALAR; kind == 1 && i <= AMXK_TIER_AMX; i++)
            if (strlen(amxk_tier_name((amxk_tier)i)) == n && strncmp(s, amxk_tier_name((amxk_tier)i), n) == 0) mask |= AMXK_TIER_BIT(i), found = 1;
        if (n && !found) {
            printf("%s: unknown name '%.*s'\n", var, (int)n, s);
            exit(2);
        }
        s += n + (s[n] == ',');
    }
    return mask;
}
/* The level's name in the summary lines: the AVX2 and AMX levels carry the run-time feature their
   tables consult (AVX-VNNI, AMX-FP16), as this run's contexts have it. */
TEST_FN const char *test_level_name(amxk_tier t) {
    const amxk_cpu *cpu = amxk_cpu_init();
    const uint32_t feat = (cpu->usable | cpu->emulated) & ~test_deny;
    if (t == AMXK_TIER_AVX2) return (feat & AMXK_CPU_AVXVNNI) ? "avx2(+vnni)" : "avx2(no-vnni)";
    if (t == AMXK_TIER_AMX) return (feat & AMXK_CPU_AMX_FP16) ? "amx(+fp16)" : "amx(no-fp16)";
    return amxk_tier_name(t);
}
/* 1 when level t runs emulated in this build: SIMDe (AVX-512 levels), the tile emulator (AMX), or the
   AVX2 level's AVX-VNNI kernels through the SIMDe build's shim on a CPU without AVX-VNNI. */
TEST_FN int test_level_emulated(amxk_tier t) {
    const amxk_cpu *cpu = amxk_cpu_init();
    if (t == AMXK_TIER_AMX) return cpu->amx_emulated;
    if (t == AMXK_TIER_AVX2) return (cpu->emulated & ~cpu->usable & ~test_deny & AMXK_CPU_AVXVNNI) != 0;
    return t >= AMXK_TIER_AVX512 && t < AMXK_TIER_AMX && cpu->avx512_emulated;
}

TEST_FN void test_init(void) {
    const char *s = getenv("AMXK_TEST_SEED");
    const amxk_cpu *cpu = amxk_cpu_init();
    int t;
    test_deny = test_parse_list("AMXK_TEST_DENY", getenv("AMXK_TEST_DENY"), 0);
    test_only = test_parse_list("AMXK_TEST_ONLY", getenv("AMXK_TEST_ONLY"), 1);
#if defined(AMXK_AMX_EMULATE)
    /* the emulated tile unit presents what the run does not deny (a TDP of a denied feature faults) */
    if (test_deny & (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16))
        amxk_amx_emu_set_features((AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16) & ~test_deny);
#endif
    if (test_deny && (test_deny & (cpu->usable | cpu->emulated)) == 0 &&
        (!cpu->amx_emulated || !(test_deny & (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16)))) {
        /* a variant run that denies what this CPU and build do not have: the same as the plain run */
        printf("AMXK_TEST_DENY=%s: none of these features is present here: nothing to run\n", getenv("AMXK_TEST_DENY"));
        printf("levels native: none; emulated: none\n0 passed, 0 failed\n");
        exit(0);
    }
    if (getenv("AMXK_TEST_EMULATED_ONLY") && *getenv("AMXK_TEST_EMULATED_ONLY")) {
        /* only the levels the CPU cannot run natively (a native build runs the others): a level needing a
           feature the CPU lacks, and the AVX2 level when its AVX-VNNI comes from the shim */
        unsigned m = 0;
        for (t = AMXK_TIER_SCALAR + 1; t <= AMXK_TIER_AMX; t++)
            if ((cpu->tiers & AMXK_TIER_BIT(t)) && (t == AMXK_TIER_AVX2 ? test_level_emulated((amxk_tier)t)
                                                                         : (amxk_tier_features((amxk_tier)t) & ~cpu->usable) != 0))
                m |= AMXK_TIER_BIT(t);
        if (test_only) m &= test_only;
        if (!m) {
            printf("AMXK_TEST_EMULATED_ONLY: no level of this run is emulated here: nothing to run\n");
            printf("levels native: none; emulated: none\n0 passed, 0 failed\n");
            exit(0);
        }
        test_only = m;
    }
    if (s && *s) test_seed = strtoull(s, NULL, 0);
    test_dump_open();
    test_rng_state = 0;
    test_case_open = 0;
    test_noise_state = test_case_mix(test_seed, 0x6e6f697365ull /* "noise" */);
    printf("seed 0x%llx (set AMXK_TEST_SEED to change)\n", (unsigned long long)test_seed);
    printf("cpu: hw 0x%x usable 0x%x tiers 0x%x best %s%s; tiers here:", (unsigned)cpu->hw, (unsigned)cpu->usable, cpu->tiers,
           amxk_tier_name(cpu->best_tier), cpu->amx_emulated ? " (AMX emulated)" : "");
    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++)
        if (cpu->tiers & AMXK_TIER_BIT(t)) printf(" %s", amxk_tier_name((amxk_tier)t));
    if (test_deny || test_only)
        printf("\nthis run: contexts deny '%s' (cpu_deny 0x%x), levels '%s'", getenv("AMXK_TEST_DENY") ? getenv("AMXK_TEST_DENY") : "",
               (unsigned)test_deny, getenv("AMXK_TEST_ONLY") ? getenv("AMXK_TEST_ONLY") : "all");
    printf("\n");
    fflush(stdout);
}

/* Frees the pools, prints the tiers that ran / were skipped and the one line
   "N passed, M failed"; returns the exit code (1 if anything failed). */
TEST_FN int test_finish(void) {
    int i, t;
    for (i = 0; i < TEST_N_WORKER_COUNTS; i++)
        if (test_pool_ready[i]) amxk_pool_destroy(&test_pools[i]), test_pool_ready[i] = 0;
    CHECK(test_n_stray == 0, "%ld data draws outside a case (see test.h: test_case_begin)", test_n_stray);
    for (i = 1; i >= -1; i -= 2) {
        int any = 0;
        printf(i == 1 ? "tiers run:" : "; skipped:");
        for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++)
            if (test_tier_state[t] == i) printf(" %s", amxk_tier_name((amxk_tier)t)), any = 1;
        if (!any) printf(" none");
    }
    /* the line tests/run_tests.sh aggregates: which levels ran on the CPU's own instructions and
       which through an emulator (SIMDe for the AVX-512 levels, the tile emulator for AMX) */
    {
        for (i = 0; i < 2; i++) {
            int any = 0;
            printf(i == 0 ? "\nlevels native:" : "; emulated:");
            for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++)
                if (test_tier_state[t] == 1 && test_level_emulated((amxk_tier)t) == i) printf(" %s", test_level_name((amxk_tier)t)), any = 1;
            if (!any) printf(" none");
        }
    }
    if (test_dump_file) fclose(test_dump_file), test_dump_file = NULL;
    printf("\n%ld passed, %ld failed\n", test_n_pass, test_n_fail);
    fflush(stdout);
    return test_n_fail ? 1 : 0;
}

/* Snapshot / compare of up to TEST_N_WATCH test_alloc'd buffers (their bodies and guards): for
   "bad input writes nothing" checks. Set w.p[i] (NULL = unused), test_watch_take, call, then
   test_watch_same (which also frees the snapshots). */
#define TEST_N_WATCH 6
typedef struct test_watch {
    void *p[TEST_N_WATCH];
    unsigned char *copy[TEST_N_WATCH];
} test_watch;
TEST_FN void test_watch_take(test_watch *w) {
    int i;
    for (i = 0; i < TEST_N_WATCH; i++)
        if (w->p[i]) {
            size_t b = test_buf_bytes(w->p[i]);
            w->copy[i] = (unsigned char *)malloc(b ? b : 1);
            memcpy(w->copy[i], w->p[i], b);
        }
}
TEST_FN int test_watch_same(test_watch *w) {
    int i, ok = 1;
    for (i = 0; i < TEST_N_WATCH; i++)
        if (w->p[i]) {
            ok &= memcmp(w->copy[i], w->p[i], test_buf_bytes(w->p[i])) == 0 && test_guard_ok(w->p[i]);
            free(w->copy[i]);
            w->copy[i] = NULL;
        }
    return ok;
}

#endif /* AMXK_TEST_H_INCLUDED */
