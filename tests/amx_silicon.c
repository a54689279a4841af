/* tests/amx_silicon.c - AMX silicon vs the AMX tile emulator (issue 28 item 3).

   Where the CPU has AMX, runs every AMX path of amxk on the CPU's tiles (tests/amx_side.c built
   natively, "nat") and on the software tile emulator (tests/amx_side.c built with AMXK_AMX_EMULATE,
   "emu"), both private AMXK_STATIC copies linked into this program, on the same data, and compares
   every output bit for bit:
     1. the SDM hand cases (tests/test_core.c's TDPBF16PS / TDPFP16PS rounding-order cases and the
        TDPBSSD wraparound), as CHECKs against their known results on each side;
     2. raw tiles: TDPBF16PS, TDPFP16PS (only where the CPU has AMX-FP16), TDPBSSD / TDPBSUD / TDPBUSD /
        TDPBUUD on random tile shapes (rows 1..16, C and A colsb 4..64) over random and edge data
        (bf16 / fp16 denormals, +-0, +-inf, quiet and signalling NaNs, overflow, cancellation chains;
        C holding denormals, -0, NaN, huge values; int8 extremes, int32 wraparound);
     3. amxk_linear at the AMX level over M x N x K shapes of the test matrix (K = 200: not a multiple
        of 32), bf16 / fp16 packs and quantized packs (int8, int4 g32 / g128 sym / asym, int2, fp8
        e4m3 / e5m2 blocks, MXFP4), x bf16 and fp16, some x with specials (denormal, +-0, huge, inf, NaN);
     4. amxk_linear_q8 (int8 activations, I8 and U8, with and without workspace) on int8 / int4 / int2
        packs, quantized and full-range raw values;
     5. amxk_moe_experts (bf16, fp16, int4, int8 w8a8, fp8 experts; shared expert; SiLU / GELU).
   The emulator is first told to present exactly the CPU's AMX features (amxk_amx_emu_set_features), so
   both sides take the same paths (a Sapphire Rapids has no AMX-FP16: fp16 runs the vector level on
   both). It prints `amx silicon vs emulator: N outputs compared, D differ` and fails unless D = 0; a
   separate line counts the differences where both words are NaNs with different payloads. Without AMX
   (or on another architecture) it prints `amx silicon vs emulator: skipped (no AMX on this CPU)`.
   Last lines as tests/test.h's test_finish: `levels native: ...; emulated: ...`, `N passed, M failed`.

   Environment: AMXK_TEST_SEED (the data, as every test; default fixed), AMX_SILICON_MUTATE=1 (check of
   the comparison itself: one low bit of the first native output of every section is flipped before
   it is compared, so D must come out as the number of sections and the program must fail),
   AMXK_TEST_DENY (as tests/test.h: both sides' contexts deny those features; amx-fp16 on a Granite Rapids
   compares the Sapphire Rapids paths), AMX_SILICON_QUICK=1 (fewer raw-tile cases and shapes),
   AMX_SILICON_FEATURES=0x3800 (self-test builds, whose native side is an emulator too: the AMX features
   it presents; 0x3800 = AMX-TILE/BF16/INT8, a Sapphire Rapids). Build: tests/amx_silicon.mk. */
#include "test.h"
#include "../amxk_pack.h"
#include "../amxk_moe.h"
#include "amx_side.h"

#include <time.h>

/* ---- the comparison ------------------------------------------------------------------------------ */

enum { W_I32, W_F32, W_BF16, W_F16 }; /* what an output word is */
#define PRINT_PER_SECTION 8
#define PRINT_TOTAL 40

/* Classes of a difference (float words), for telling apart what silicon does differently: both NaN with
   other payloads; one NaN; +0 vs -0; zero vs denormal (a flush); 1 ulp apart (same sign, finite: a
   rounding or order difference); anything else. */
enum { D_NANPAY, D_NAN1, D_ZSIGN, D_FLUSH, D_ULP1, D_OTHER, D_COUNT };
static const char *const d_class_name[D_COUNT] = {"both NaN, other payload", "one NaN", "+0 vs -0", "zero vs denormal",
                                                  "1 ulp", "other"};
static long g_cmp, g_diff, g_nanpay, g_class[D_COUNT]; /* all sections */
static long s_cmp, s_diff, s_nanpay;                  /* this section */
static long s_bad_status, s_bad_tier;    /* this section: calls that failed or ran below the AMX level */
static int s_printed, g_printed;
static int g_mutate, s_mutate_pending;
static int g_quick;
static const char *s_name;
static clock_t s_start;

static int word_is_nan(int kind, uint32_t w) {
    switch (kind) {
    case W_F32: return (w & 0x7f800000u) == 0x7f800000u && (w & 0x007fffffu) != 0;
    case W_BF16: return (w & 0x7f80u) == 0x7f80u && (w & 0x007fu) != 0;
    case W_F16: return (w & 0x7c00u) == 0x7c00u && (w & 0x03ffu) != 0;
    default: return 0;
    }
}
static double word_value(int kind, uint32_t w) {
    switch (kind) {
    case W_F32: return (double)test_bits_f32(w);
    case W_BF16: return (double)test_bits_f32(w << 16);
    case W_F16: return (double)amxk_f16_to_f32((amxk_f16)w);
    default: return (double)(int32_t)w;
    }
}
static int d_class(int kind, uint32_t a, uint32_t b) {
    const int hb = kind == W_F32 ? 31 : 15;
    const uint32_t sign = 1u << hb, mag = sign - 1u, expm = kind == W_F32 ? 0x7f800000u : kind == W_BF16 ? 0x7f80u : 0x7c00u;
    const int na = word_is_nan(kind, a), nb = word_is_nan(kind, b);
    if (kind == W_I32) return D_OTHER;
    if (na && nb) return D_NANPAY;
    if (na || nb) return D_NAN1;
    if ((a & mag) == 0 && (b & mag) == 0) return D_ZSIGN;
    if (((a & mag) == 0 && (b & expm) == 0) || ((b & mag) == 0 && (a & expm) == 0)) return D_FLUSH;
    if ((a & sign) == (b & sign) && (a > b ? a - b : b - a) == 1u) return D_ULP1;
    return D_OTHER;
}
static uint32_t word_at(const void *p, size_t i, int kind) {
    if (kind == W_BF16 || kind == W_F16) {
        uint16_t h;
        memcpy(&h, (const unsigned char *)p + 2 * i, 2);
        return h;
    } else {
        uint32_t u;
        memcpy(&u, (const unsigned char *)p + 4 * i, 4);
        return u;
    }
}

static void section_begin(const char *name) {
    s_name = name;
    s_cmp = s_diff = s_nanpay = s_bad_status = s_bad_tier = 0;
    s_printed = 0;
    s_mutate_pending = g_mutate;
    s_start = clock();
    TEST_SECTION(name);
}
static void section_end(void) {
    printf("   %s: %ld outputs compared, %ld differ (%ld both NaN, other payload); %.1f s\n", s_name, s_cmp, s_diff, s_nanpay,
           (double)(clock() - s_start) / CLOCKS_PER_SEC);
    CHECK(s_bad_status == 0, "%s: %ld calls returned an error status (or different statuses on the two sides)", s_name, s_bad_status);
    CHECK(s_bad_tier == 0, "%s: %ld calls did not run at the AMX level on both sides", s_name, s_bad_tier);
    g_cmp += s_cmp, g_diff += s_diff, g_nanpay += s_nanpay;
    fflush(stdout);
}

/* Compares count words (kind W_*) of the native and emulated outputs, laid out as rows of `cols`
   words; what: the case, printed with the first differences. */
static void compare(const char *what, void *nat, const void *emu, size_t count, size_t cols, int kind) {
    size_t i;
    if (s_mutate_pending && count > 0) { /* AMX_SILICON_MUTATE: a deliberate one-bit difference (the low bit of word 0) */
        ((unsigned char *)nat)[0] ^= 1u;
        s_mutate_pending = 0;
    }
    for (i = 0; i < count; i++) {
        uint32_t a = word_at(nat, i, kind), b = word_at(emu, i, kind);
        s_cmp++;
        if (a == b) continue;
        s_diff++;
        if (word_is_nan(kind, a) && word_is_nan(kind, b)) s_nanpay++;
        g_class[d_class(kind, a, b)]++;
        if (s_printed < PRINT_PER_SECTION && g_printed < PRINT_TOTAL) {
            s_printed++, g_printed++;
            if (kind == W_I32)
                printf("  DIFF %s: [%lu][%lu] nat 0x%08x (%ld) emu 0x%08x (%ld)\n", what, (unsigned long)(i / cols),
                       (unsigned long)(i % cols), (unsigned)a, (long)(int32_t)a, (unsigned)b, (long)(int32_t)b);
            else
                printf("  DIFF %s: [%lu][%lu] nat 0x%0*x (%.9g) emu 0x%0*x (%.9g)\n", what, (unsigned long)(i / cols),
                       (unsigned long)(i % cols), kind == W_F32 ? 8 : 4, (unsigned)a, word_value(kind, a), kind == W_F32 ? 8 : 4,
                       (unsigned)b, word_value(kind, b));
            if (s_printed == PRINT_PER_SECTION || g_printed == PRINT_TOTAL) printf("  (further differences are counted, not printed)\n");
        }
    }
}
/* Both sides' status and tier of one op call: both AMXK_OK, both at the AMX level. */
static int call_ok(const char *what, int st_nat, int st_emu, int tier_nat, int tier_emu) {
    int ok = 1;
    if (st_nat != 0 || st_emu != 0) {
        if (s_bad_status++ < 4)
            printf("  %s: status nat %d (%s), emu %d (%s)\n", what, st_nat, amxk_status_string((amxk_status)st_nat), st_emu,
                   amxk_status_string((amxk_status)st_emu));
        ok = 0;
    }
    if (ok && (tier_nat != AMXK_TIER_AMX || tier_emu != AMXK_TIER_AMX)) {
        if (s_bad_tier++ < 4)
            printf("  %s: tier nat %s, emu %s (both must be amx)\n", what, amxk_tier_name((amxk_tier)tier_nat),
                   amxk_tier_name((amxk_tier)tier_emu));
        ok = 0;
    }
    return ok;
}

/* ---- buffers ------------------------------------------------------------------------------------- */

static void *xalloc(size_t bytes) { /* 64-byte aligned, freed with test_free */
    return test_alloc(bytes ? bytes : 1);
}

/* ---- 1. the SDM hand cases ----------------------------------------------------------------------- */

typedef int (*tdp_fn)(int op, int reps, int rows, int c_colsb, int a_colsb, const void *a, const void *b, void *c);

/* One 1 x 1 float dot product over K4 pairs: A's row a[0 .. 2 K4), B's row k (b[2k], b[2k + 1]); C starts
   as c. Returns C afterwards; *st the wrapper's status. */
static uint32_t hand_dot(tdp_fn f, int op, int K4, const uint16_t *a, const uint16_t *b, uint32_t c, int *st) {
    unsigned char A[64], B[64], C[4];
    int i;
    for (i = 0; i < 2 * K4; i++) {
        A[2 * i] = (unsigned char)(a[i] & 0xff), A[2 * i + 1] = (unsigned char)(a[i] >> 8);
        B[2 * i] = (unsigned char)(b[i] & 0xff), B[2 * i + 1] = (unsigned char)(b[i] >> 8);
    }
    for (i = 0; i < 4; i++) C[i] = (unsigned char)(c >> (8 * i));
    *st = f(op, 1, 1, 4, 4 * K4, A, B, C);
    return (uint32_t)C[0] | (uint32_t)C[1] << 8 | (uint32_t)C[2] << 16 | (uint32_t)C[3] << 24;
}

/* The cases, each worked out by hand in the order of the SDM's Operation section (see tests/test_core.c,
   test_amx_dot, for the derivations): bf16 1 = 0x3f80, 2^e = (e + 127) << 7; fp16 2^e = (e + 15) << 10. */
static void hand_cases(const char *side, tdp_fn f, int fp16) {
    uint16_t a[32], b[32];
    uint32_t got;
    int i, st;
    /* C = 1 plus 32 products of 2^-25: the even and odd sums each reach 2^-21 exactly, their sum 2^-20 is
       added to C last: 1 + 2^-20 = 0x3f800008 (adding each product to C in turn would leave 1.0) */
    for (i = 0; i < 32; i++) a[i] = 0x3300, b[i] = 0x3f80;
    got = hand_dot(f, AMX_OP_BF16, 16, a, b, 0x3f800000u, &st);
    CHECK(st == 0 && got == 0x3f800008u, "[%s] TDPBF16PS: 1 + 32 x 2^-25 = 1 + 2^-20 (products summed before C): got 0x%08x (status %d)", side,
          (unsigned)got, st);
    if (fp16) { /* the same with fp16: 2^-13 (0x0800) x 2^-12 (0x0c00) = 2^-25 */
        for (i = 0; i < 32; i++) a[i] = 0x0800, b[i] = 0x0c00;
        got = hand_dot(f, AMX_OP_FP16, 16, a, b, 0x3f800000u, &st);
        CHECK(st == 0 && got == 0x3f800008u, "[%s] TDPFP16PS: 1 + 32 x 2^-25 = 1 + 2^-20: got 0x%08x (status %d)", side, (unsigned)got, st);
    }
    /* even and odd sums kept apart until after the k loop: A = [2^15, 2^15, 1, 1], B = [2^15, -2^15], [1, 1]:
       even 2^30 + 1 -> 2^30, odd -2^30 + 1 -> -2^30, tmp = +0, C = 0 + 0 = +0 */
    a[0] = 0x4700, a[1] = 0x4700, a[2] = 0x3f80, a[3] = 0x3f80;
    b[0] = 0x4700, b[1] = 0xc700, b[2] = 0x3f80, b[3] = 0x3f80;
    got = hand_dot(f, AMX_OP_BF16, 2, a, b, 0, &st);
    CHECK(st == 0 && got == 0, "[%s] TDPBF16PS: even / odd sums added after the k loop (+2^30 + 1, -2^30 + 1 -> +0): got 0x%08x (status %d)", side,
          (unsigned)got, st);
    /* C enters last: C = 2^30, A = [2^15, 1], B = [-2^15, 1]: tmp = -2^30 + 1 -> -2^30; C = +0 */
    a[0] = 0x4700, a[1] = 0x3f80, b[0] = 0xc700, b[1] = 0x3f80;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0x4e800000u, &st);
    CHECK(st == 0 && got == 0, "[%s] TDPBF16PS: C added after the products (2^30 + (-2^30 + 1) -> +0): got 0x%08x (status %d)", side,
          (unsigned)got, st);
    /* the sums start at +0, not at C: C = -0, products -0: sums +0, C = -0 + +0 = +0 */
    a[0] = 0xbf80, a[1] = 0xbf80, b[0] = 0, b[1] = 0;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0x80000000u, &st);
    CHECK(st == 0 && got == 0, "[%s] TDPBF16PS: C = -0 plus -0 products gives +0 (sums start at +0): got 0x%08x (status %d)", side,
          (unsigned)got, st);
    /* NaNs (see tests/test_core.c): a NaN C stays C, quieted, over inf x 0 (default NaN) and over a NaN A;
       C = 1 with an sNaN A gives A's NaN, quieted */
    a[0] = 0x7f80, a[1] = 0, b[0] = 0, b[1] = 0;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0x7f800001u, &st);
    CHECK(st == 0 && got == 0x7fc00001u, "[%s] TDPBF16PS: a NaN C (sNaN) wins over inf x 0: got 0x%08x (status %d)", side, (unsigned)got, st);
    a[0] = 0x7fc1, a[1] = 0x3f80, b[0] = 0x3f80, b[1] = 0x3f80;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0xffc12345u, &st);
    CHECK(st == 0 && got == 0xffc12345u, "[%s] TDPBF16PS: a NaN C wins over a NaN A: got 0x%08x (status %d)", side, (unsigned)got, st);
    a[0] = 0x7f81, a[1] = 0x3f80, b[0] = 0x3f80, b[1] = 0x3f80;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0x3f800000u, &st);
    CHECK(st == 0 && got == 0x7fc10000u, "[%s] TDPBF16PS: C = 1, an sNaN A: got 0x%08x (status %d)", side, (unsigned)got, st);
    /* each step one FMA rounding, tiny products included: even sum 2^-125 + 2^-148 + 1.5 x 2^-150 rounds to
       2^-125 + 2^-148 = 0x01000001 (rounding the last product on its own first would give 0x01000002) */
    a[0] = 0x2180, a[1] = 0, a[2] = 0x1a80, a[3] = 0, a[4] = 0x1a40, a[5] = 0;
    b[0] = 0x1f00, b[1] = 0, b[2] = 0x1a80, b[3] = 0, b[4] = 0x1a00, b[5] = 0;
    got = hand_dot(f, AMX_OP_BF16, 3, a, b, 0, &st);
    CHECK(st == 0 && got == 0x01000001u, "[%s] TDPBF16PS: one FMA rounding per step, tiny products included: got 0x%08x (status %d)", side,
          (unsigned)got, st);
    /* the horizontal sum flushed: C = -2^-126, even 1.5 x 2^-126, odd -2^-126, tmp 2^-127 (denormal) -> +0:
       C stays -2^-126 = 0x80800000 */
    a[0] = 0x2040, a[1] = 0xa000, b[0] = 0x2000, b[1] = 0x2000;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0x80800000u, &st);
    CHECK(st == 0 && got == 0x80800000u, "[%s] TDPBF16PS: denormal horizontal sum flushed: got 0x%08x (status %d)", side, (unsigned)got, st);
    /* a denormal result flushed: 2^-70 x 2^-70 */
    a[0] = 0x1c80, a[1] = 0, b[0] = 0x1c80, b[1] = 0;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0, &st);
    CHECK(st == 0 && got == 0, "[%s] TDPBF16PS: denormal result flushed: got 0x%08x (status %d)", side, (unsigned)got, st);
    /* bf16 denormal input read as zero: 0x0040 x 2^100 */
    a[0] = 0x0040, a[1] = 0, b[0] = 0x7180, b[1] = 0;
    got = hand_dot(f, AMX_OP_BF16, 1, a, b, 0, &st);
    CHECK(st == 0 && (got & 0x7fffffffu) == 0, "[%s] TDPBF16PS: bf16 denormal input read as zero: got 0x%08x (status %d)", side,
          (unsigned)got, st);
    if (fp16) { /* fp16 denormal input honoured: 2^-24 x 1024 = 2^-14 */
        a[0] = 0x0001, a[1] = 0, b[0] = 0x6400, b[1] = 0;
        got = hand_dot(f, AMX_OP_FP16, 1, a, b, 0, &st);
        CHECK(st == 0 && got == 0x38800000u, "[%s] TDPFP16PS: fp16 denormal input honoured: got 0x%08x (status %d)", side, (unsigned)got, st);
    }
    { /* int32 wraparound: INT32_MAX + 4 x 127 x 127 */
        unsigned char A[4], B[4], C[4] = {0xff, 0xff, 0xff, 0x7f};
        memset(A, 0x7f, 4), memset(B, 0x7f, 4);
        st = f(AMX_OP_BSSD, 1, 1, 4, 4, A, B, C);
        got = (uint32_t)C[0] | (uint32_t)C[1] << 8 | (uint32_t)C[2] << 16 | (uint32_t)C[3] << 24;
        CHECK(st == 0 && got == (uint32_t)(0x7fffffffu + 4u * 127u * 127u), "[%s] TDPBSSD wraps: got 0x%08x (status %d)", side, (unsigned)got, st);
    }
}

/* ---- 2. raw tiles -------------------------------------------------------------------------------- */

static const char *op_name(int op) {
    static const char *n[AMX_OP_COUNT] = {"TDPBF16PS", "TDPFP16PS", "TDPBSSD", "TDPBSUD", "TDPBUSD", "TDPBUUD"};
    return op >= 0 && op < AMX_OP_COUNT ? n[op] : "?";
}

static const uint16_t bf16_specials[] = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x0040, 0x007f, 0x807f, 0x0080, 0x8080, 0x0100, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7fc1,
    0x7fff, 0xffff, 0x7f81, 0x7fa0, 0xff81, 0x7f7f, 0xff7f, 0x7f00, 0xff00, 0x5f80, 0x1f80, 0x3f80, 0xbf80, 0x3f81, 0x0081};
static const uint16_t f16_specials[] = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x0200, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7e01, 0x7fff,
    0xffff, 0x7c01, 0x7d00, 0xfc01, 0x7bff, 0xfbff, 0x7800, 0x0800, 0x1000, 0x3c00, 0xbc00, 0x3c01, 0x0401};
static const uint32_t f32_c_specials[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00400000u, 0x80000001u, 0x00800000u, 0x80800000u, 0x7f800000u,
    0xff800000u, 0x7fc00000u, 0xffc00000u, 0xffc00001u, 0x7fc12345u, 0x7fa00000u, 0x7f800001u, 0xff800001u, 0x7f7fffffu,
    0xff7fffffu, 0x7f000000u, 0x3f800000u, 0xbf800000u, 0x33800000u, 0x4e800000u};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* A 16-bit float (bf16: fp16 = 0; fp16: fp16 = 1) with exponent in [lo, hi] (unbiased), random sign and mantissa. */
static uint16_t f16b_exp(int fp16, int lo, int hi) {
    const int bias = fp16 ? 15 : 127, emax = fp16 ? 30 : 254, mbits = fp16 ? 10 : 7;
    int e = test_randint(lo, hi) + bias;
    unsigned m = (unsigned)(test_rand() & ((1u << mbits) - 1));
    if (e < 1) e = 1;
    if (e > emax) e = emax;
    return (uint16_t)((test_rand() & 1u) << 15 | (unsigned)e << mbits | m);
}
/* One element of data mode `mode`: 0 narrow (exponents within +-6), 1 wide (every exponent, inf / NaN
   rarely), 2 edge (specials half the time, else narrow). */
static uint16_t f16b_elem(int fp16, int mode) {
    if (mode == 1) {
        const int mbits = fp16 ? 10 : 7, ebits = fp16 ? 5 : 8;
        unsigned e = (unsigned)(test_rand() % (1u << ebits));
        if (e == (1u << ebits) - 1 && test_rand() % 8) e--; /* inf / NaN: 1/8 of their share */
        return (uint16_t)((test_rand() & 1u) << 15 | e << mbits | (unsigned)(test_rand() & ((1u << mbits) - 1)));
    }
    if (mode == 2 && test_rand() % 2)
        return fp16 ? f16_specials[test_rand() % N_OF(f16_specials)] : bf16_specials[test_rand() % N_OF(bf16_specials)];
    return f16b_exp(fp16, -6, 6);
}

/* One raw-tile case's inputs: A (rows x acb bytes), B (acb / 4 rows x ccb bytes), C (rows x ccb bytes). */
static void tile_data(int op, int mode, int cmode, int rows, int ccb, int acb, unsigned char *A, unsigned char *B, unsigned char *C) {
    const int K4 = acb / 4, N = ccb / 4;
    int m, k, n, i;
    if (op == AMX_OP_BF16 || op == AMX_OP_FP16) {
        const int fp16 = op == AMX_OP_FP16;
        uint16_t *a = (uint16_t *)(void *)A, *b = (uint16_t *)(void *)B; /* 64-byte aligned buffers */
        if (mode < 3) {
            for (i = 0; i < rows * 2 * K4; i++) a[i] = f16b_elem(fp16, mode);
            for (i = 0; i < K4 * 2 * N; i++) b[i] = f16b_elem(fp16, mode);
        } else {
            /* cancellation chains: per row, pair k = 0, 3, 6, .. big (2^8 .. 2^14), k = 1, 4, .. small (2^-8 .. 2^0),
               k = 2, 5, .. the negated big pair of k - 2 against B row k - 2 again: each lane runs big + small -
               big, whose result depends on the order and rounding of the steps; in some small pairs the odd
               element is the negated even one and B's odd column equals the even one (exact cancellation
               across the two lanes) */
            for (k = 0; k < K4; k++)
                for (n = 0; n < 2 * N; n++) b[k * 2 * N + n] = k % 3 == 2 ? b[(k - 2) * 2 * N + n] : f16b_exp(fp16, -3, 3);
            for (k = 1; k < K4; k += 3)
                for (n = 0; n < N; n += 2) b[k * 2 * N + 2 * n + 1] = b[k * 2 * N + 2 * n];
            for (m = 0; m < rows; m++)
                for (k = 0; k < K4; k++) {
                    uint16_t *p = a + m * 2 * K4 + 2 * k;
                    if (k % 3 == 0) p[0] = f16b_exp(fp16, 8, 14), p[1] = f16b_exp(fp16, 8, 14);
                    else if (k % 3 == 1) {
                        p[0] = f16b_exp(fp16, -8, 0), p[1] = f16b_exp(fp16, -8, 0);
                        if (test_rand() % 4 == 0) p[1] = (uint16_t)(p[0] ^ 0x8000u);
                    } else p[0] = (uint16_t)(p[-4] ^ 0x8000u), p[1] = (uint16_t)(p[-3] ^ 0x8000u);
                }
        }
        for (i = 0; i < rows * N; i++) {
            uint32_t c;
            switch (cmode) {
            case 0: c = 0; break;
            case 1: c = test_f32_bits((float)test_uniform(-4.0, 4.0)); break;
            case 2: c = test_rand() % 2 ? f32_c_specials[test_rand() % N_OF(f32_c_specials)] : test_f32_bits((float)test_uniform(-4.0, 4.0)); break;
            default: c = (test_rand() & 0x80000000u) | (0x7f000000u + (uint32_t)(test_rand() % 0x800000u)); break; /* +-2^127 .. max */
            }
            memcpy(C + 4 * i, &c, 4);
        }
    } else {
        static const unsigned char ext[] = {0x80, 0x7f, 0xff, 0x00, 0x01, 0x81, 0xfe};
        for (i = 0; i < rows * acb; i++) A[i] = mode == 0 ? (unsigned char)test_rand() : ext[test_rand() % N_OF(ext)];
        for (i = 0; i < K4 * ccb; i++) B[i] = mode == 0 || (mode == 2 && test_rand() % 2) ? (unsigned char)test_rand() : ext[test_rand() % N_OF(ext)];
        for (i = 0; i < rows * N; i++) {
            uint32_t c;
            switch (cmode) {
            case 0: c = 0; break;
            case 1: c = (uint32_t)test_rand(); break;
            case 2: c = 0x7fffffffu - (uint32_t)(test_rand() % (1u << 22)); break; /* wraps past INT32_MAX */
            default: c = 0x80000000u + (uint32_t)(test_rand() % (1u << 22)); break; /* wraps past INT32_MIN */
            }
            memcpy(C + 4 * i, &c, 4);
        }
    }
}

static void raw_tiles(uint32_t feat) {
    unsigned char *A = (unsigned char *)xalloc(1024), *B = (unsigned char *)xalloc(1024), *C = (unsigned char *)xalloc(1024);
    unsigned char *Cn = (unsigned char *)xalloc(1024), *Ce = (unsigned char *)xalloc(1024);
    const int n_cases = g_quick ? 100 : 8000;
    int op, i;
    char what[160];
    section_begin("raw tiles: TDPBF16PS / TDPFP16PS / TDPBSSD / TDPBSUD / TDPBUSD / TDPBUUD, random and edge data");
    for (op = 0; op < AMX_OP_COUNT; op++) {
        long d0 = s_diff, c0 = s_cmp;
        if (op == AMX_OP_FP16 && !(feat & AMXK_CPU_AMX_FP16)) {
            printf("   %s: skipped (no AMX-FP16 on this CPU)\n", op_name(op));
            continue;
        }
        for (i = 0; i < n_cases; i++) {
            int rows, ccb, acb, mode, cmode, reps, sn, se;
            test_case_begin(test_case_mix(test_case_id("amx silicon raw tile", (uint64_t)op), (uint64_t)i));
            if (i % 5 == 0) rows = 16, ccb = 64, acb = 64; /* full tiles */
            else rows = test_randint(1, 16), ccb = 4 * test_randint(1, 16), acb = 4 * test_randint(1, 16);
            mode = i % 4;                         /* float: narrow, wide, edge, cancellation; int: random, extremes, mixed, extremes */
            cmode = (i / 4) % 4;                  /* float C: +0, random, specials, huge; int C: 0, random, near INT32_MAX, near INT32_MIN */
            reps = i % 7 == 3 ? 2 : 1;            /* a second TDP on the same tiles: C accumulates */
            tile_data(op, mode, cmode, rows, ccb, acb, A, B, C);
            memcpy(Cn, C, (size_t)rows * ccb), memcpy(Ce, C, (size_t)rows * ccb);
            sn = amx_side_nat_tdp(op, reps, rows, ccb, acb, A, B, Cn);
            se = amx_side_emu_tdp(op, reps, rows, ccb, acb, A, B, Ce);
            snprintf(what, sizeof what, "%s case %d (rows %d, C colsb %d, A colsb %d, data %d, C %d, x%d)", op_name(op), i, rows, ccb, acb,
                     mode, cmode, reps);
            if (!call_ok(what, sn, se, AMXK_TIER_AMX, AMXK_TIER_AMX)) continue;
            compare(what, Cn, Ce, (size_t)rows * ccb / 4, (size_t)ccb / 4, op <= AMX_OP_FP16 ? W_F32 : W_I32);
        }
        printf("   %s: %ld outputs compared, %ld differ\n", op_name(op), s_cmp - c0, s_diff - d0);
    }
    section_end();
    test_free(A), test_free(B), test_free(C), test_free(Cn), test_free(Ce);
}

/* ---- packs --------------------------------------------------------------------------------------- */

enum { PK_BF16, PK_F16, PK_INT8, PK_INT8_G64, PK_INT4_G32, PK_INT4_G32_ASYM, PK_INT4_G128, PK_INT4_G128_ASYM, PK_INT2_G64_ASYM,
       PK_FP8_E4M3, PK_FP8_E5M2, PK_MXFP4, PK_INT8_RAW, PK_COUNT };
static const char *pk_name(int pk) {
    static const char *n[PK_COUNT] = {"bf16", "fp16", "int8", "int8 g64", "int4 g32", "int4 g32 asym", "int4 g128", "int4 g128 asym",
                                      "int2 g64 asym", "fp8 e4m3 128x128", "fp8 e5m2 1x64", "mxfp4", "int8 raw"};
    return n[pk];
}
static amxk_quant pk_quant(int pk, size_t k) {
    amxk_quant q;
    memset(&q, 0, sizeof q);
    q.block_n = 1;
    switch (pk) {
    case PK_INT8: q.format = AMXK_QFMT_INT8, q.block_k = k; break;
    case PK_INT8_RAW: q.format = AMXK_QFMT_INT8, q.block_k = k; break;
    case PK_INT8_G64: q.format = AMXK_QFMT_INT8, q.block_k = 64; break;
    case PK_INT4_G32: q.format = AMXK_QFMT_INT4, q.block_k = 32; break;
    case PK_INT4_G32_ASYM: q.format = AMXK_QFMT_INT4, q.asym = 1, q.block_k = 32; break;
    case PK_INT4_G128: q.format = AMXK_QFMT_INT4, q.block_k = 128; break;
    case PK_INT4_G128_ASYM: q.format = AMXK_QFMT_INT4, q.asym = 1, q.block_k = 128; break;
    case PK_INT2_G64_ASYM: q.format = AMXK_QFMT_INT2, q.asym = 1, q.block_k = 64; break;
    case PK_FP8_E4M3: q.format = AMXK_QFMT_FP8_E4M3, q.block_n = 128, q.block_k = 128; break;
    case PK_FP8_E5M2: q.format = AMXK_QFMT_FP8_E5M2, q.block_k = 64; break;
    case PK_MXFP4: q.format = AMXK_QFMT_MXFP4, q.block_k = 32; break;
    default: break;
    }
    return q;
}
/* 1 when pack kind pk can hold a [n, k] weight (group sizes divide K). */
static int pk_fits(int pk, size_t k) {
    amxk_quant q = pk_quant(pk, k);
    if (pk == PK_BF16 || pk == PK_F16) return 1;
    if (q.format == AMXK_QFMT_FP8_E4M3 || q.format == AMXK_QFMT_FP8_E5M2) return 1;
    return k % q.block_k == 0;
}
/* Packs a random weight [n, k] as pk (uniform in [-1, 1], one in 11 eight times larger); returns the
   pack (test_free) and its size, NULL on an error (reported). */
static void *make_pack(int pk, size_t n, size_t k, size_t *bytes) {
    float *w = (float *)malloc(n * k * 4);
    void *p = NULL;
    amxk_status s;
    size_t i;
    for (i = 0; i < n * k; i++) w[i] = (float)test_uniform(-1.0, 1.0) * (test_rand() % 11 == 0 ? 8.0f : 1.0f);
    if (pk == PK_BF16 || pk == PK_F16) {
        const amxk_dtype dt = pk == PK_BF16 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F16;
        s = amxk_pack_linear_size(dt, n, k, bytes);
        if (s == AMXK_OK) p = xalloc(*bytes), s = amxk_pack_linear(NULL, p, *bytes, dt, w, AMXK_DTYPE_F32, n, k, k);
    } else if (pk == PK_INT8_RAW) { /* full-range int8 values (-128 .. 127, the ends often) through amxk_pack_quant */
        amxk_quant q = pk_quant(pk, k);
        int8_t *v = (int8_t *)malloc(n * k);
        float *sc = (float *)malloc(n * 4);
        for (i = 0; i < n * k; i++) v[i] = (int8_t)(test_rand() % 4 == 0 ? (test_rand() % 2 ? -128 : 127) : (int)(test_rand() % 256) - 128);
        for (i = 0; i < n; i++) sc[i] = (float)test_uniform(0.001, 0.01);
        s = amxk_pack_quant_size(&q, n, k, bytes);
        if (s == AMXK_OK) p = xalloc(*bytes), s = amxk_pack_quant(NULL, p, *bytes, &q, v, k, sc, NULL, n, k);
        free(v), free(sc);
    } else {
        amxk_quant q = pk_quant(pk, k);
        s = amxk_pack_quant_size(&q, n, k, bytes);
        if (s == AMXK_OK) p = xalloc(*bytes), s = amxk_quantize_pack(NULL, p, *bytes, &q, w, AMXK_DTYPE_F32, n, k, k);
    }
    free(w);
    CHECK(s == AMXK_OK, "pack %s [%lu, %lu]: %s", pk_name(pk), (unsigned long)n, (unsigned long)k, amxk_status_string(s));
    if (s != AMXK_OK) {
        test_free(p);
        return NULL;
    }
    return p;
}

/* x [m, k] of dtype xt (BF16 / F16): uniform in [-2, 2]; edge = 1 adds specials: one element in 24 a
   +-0, denormal, huge or tiny value, a NaN in row 1 and an infinity in row 3 (where they exist). */
static uint16_t *make_x(size_t m, size_t k, amxk_dtype xt, int edge) {
    uint16_t *x = (uint16_t *)xalloc(m * k * 2);
    const int fp16 = xt == AMXK_DTYPE_F16;
    size_t i;
    for (i = 0; i < m * k; i++) {
        x[i] = (uint16_t)test_ref_encode(xt, (float)test_uniform(-2.0, 2.0));
        if (edge && test_rand() % 24 == 0) {
            switch (test_rand() % 5) {
            case 0: x[i] = (uint16_t)(test_rand() % 2 ? 0x8000u : 0); break;
            case 1: x[i] = (uint16_t)((test_rand() & 1u) << 15 | (1u + (unsigned)(test_rand() % (fp16 ? 0x3ffu : 0x7fu)))); break;
            case 2: x[i] = f16b_exp(fp16, fp16 ? 12 : 60, fp16 ? 15 : 100); break;
            case 3: x[i] = f16b_exp(fp16, fp16 ? -14 : -100, fp16 ? -10 : -60); break;
            default: x[i] = f16b_exp(fp16, -20, 20); break;
            }
        }
    }
    if (edge && m > 1) x[1 * k + (k > 3 ? 3 : 0)] = fp16 ? 0x7e01 : 0x7fc1;
    if (edge && m > 3) x[3 * k + k / 2] = fp16 ? 0xfc00 : 0xff80;
    return x;
}

/* ---- 3. amxk_linear ------------------------------------------------------------------------------ */

static const size_t lin_M[] = {1, 2, 4, 5, 16, 17, 33, 64, 100};
static const size_t lin_N[] = {16, 48, 80, 130};
static const size_t lin_K[] = {32, 64, 96, 200, 256};

static void linear_case(int pk, amxk_dtype xt, amxk_dtype yt, size_t m, size_t n, size_t k, int edge, int bias) {
    size_t bytes = 0, i;
    void *p;
    uint16_t *x;
    float *b = NULL;
    const size_t ysz = yt == AMXK_DTYPE_F32 ? 4 : 2;
    unsigned char *yn, *ye;
    int sn, se, tn = 0, te = 0;
    char what[200];
    test_case_begin(test_case_mix(test_case_mix(test_case_id("amx silicon linear", (uint64_t)pk), (uint64_t)xt * 16 + (uint64_t)yt),
                                  test_case_mix(test_case_mix(m, n), test_case_mix(k, (uint64_t)(edge * 2 + bias)))));
    p = make_pack(pk, n, k, &bytes);
    if (!p) return;
    x = make_x(m, k, xt, edge);
    if (bias) {
        b = (float *)xalloc(n * 4);
        for (i = 0; i < n; i++) b[i] = (float)test_uniform(-1.0, 1.0);
    }
    yn = (unsigned char *)xalloc(m * n * ysz), ye = (unsigned char *)xalloc(m * n * ysz);
    sn = amx_side_nat_linear(m, n, k, x, (int)xt, p, bytes, b, yn, (int)yt, &tn);
    se = amx_side_emu_linear(m, n, k, x, (int)xt, p, bytes, b, ye, (int)yt, &te);
    snprintf(what, sizeof what, "linear %s x %s y %s M=%lu N=%lu K=%lu%s%s", pk_name(pk), xt == AMXK_DTYPE_BF16 ? "bf16" : "fp16",
             yt == AMXK_DTYPE_F32 ? "f32" : yt == AMXK_DTYPE_BF16 ? "bf16" : "fp16", (unsigned long)m, (unsigned long)n, (unsigned long)k,
             edge ? " edge-x" : "", bias ? " bias" : "");
    if (call_ok(what, sn, se, tn, te))
        compare(what, yn, ye, m * n, n, yt == AMXK_DTYPE_F32 ? W_F32 : yt == AMXK_DTYPE_BF16 ? W_BF16 : W_F16);
    test_free(p), test_free(x), test_free(b), test_free(yn), test_free(ye);
}

/* Larger shapes: several B blocks of the AMX kernel (K = 4096: 2 MiB of bf16 weights), more rows than
   one row chunk (M = 513 > 512), long K not a multiple of 32. */
typedef struct lin_big { int pk; size_t m, n, k; } lin_big;
static const lin_big lin_bigs[] = {
    {PK_BF16, 513, 256, 4096}, {PK_BF16, 100, 130, 1000}, {PK_F16, 513, 64, 1024}, {PK_INT4_G128, 64, 96, 4096},
    {PK_FP8_E4M3, 200, 48, 2048}, {PK_INT8, 37, 300, 512}, {PK_MXFP4, 130, 80, 1024}, {PK_INT4_G32_ASYM, 33, 160, 1056}};

static void linear_section(void) {
    size_t mi, ni, ki, i;
    int pk;
    section_begin("amxk_linear at the AMX level: bf16 / fp16 / quantized packs over the test matrix's M x N x K");
    for (pk = 0; pk < PK_COUNT; pk++) {
        long d0 = s_diff, c0 = s_cmp;
        for (mi = 0; mi < N_OF(lin_M); mi++)
            for (ni = 0; ni < N_OF(lin_N); ni++)
                for (ki = 0; ki < N_OF(lin_K); ki++) {
                    const size_t m = lin_M[mi], n = lin_N[ni], k = lin_K[ki];
                    const unsigned h = (unsigned)(mi * 31 + ni * 7 + ki * 3 + (unsigned)pk);
                    amxk_dtype xt = pk == PK_F16 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16, yt = AMXK_DTYPE_F32;
                    if (!pk_fits(pk, k) || (g_quick && h % 4 != 0)) continue;
                    if (pk >= PK_INT8 && h % 5 == 1) xt = AMXK_DTYPE_F16; /* quantized packs take fp16 x too */
                    if (h % 7 == 2) yt = xt;                               /* some 16-bit outputs */
                    linear_case(pk, xt, yt, m, n, k, 0, h % 2 == 0);
                    /* the same shape with specials in x (+-0, denormals, huge, tiny, a NaN row, an inf row) */
                    if (pk == PK_BF16 || pk == PK_F16 || h % 3 == 0) linear_case(pk, xt, yt, m, n, k, 1, h % 2 != 0);
                }
        for (i = 0; i < N_OF(lin_bigs) && !g_quick; i++)
            if (lin_bigs[i].pk == pk) linear_case(pk, pk == PK_F16 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16, AMXK_DTYPE_F32, lin_bigs[i].m, lin_bigs[i].n, lin_bigs[i].k, 0, 1);
        printf("   %-16s %ld outputs compared, %ld differ\n", pk_name(pk), s_cmp - c0, s_diff - d0);
    }
    section_end();
}

/* ---- 4. amxk_linear_q8 --------------------------------------------------------------------------- */

static void q8_case(int pk, size_t m, size_t n, size_t k, size_t ag, amxk_dtype xqt, int use_ws, int bias) {
    size_t bytes = 0, i;
    const size_t ng = k / ag, ldq = k + 4;
    void *p;
    unsigned char *xq = (unsigned char *)xalloc(m * ldq);
    float *xs = (float *)xalloc(m * ng * 4), *b = NULL, *yn = (float *)xalloc(m * n * 4), *ye = (float *)xalloc(m * n * 4);
    int sn, se, tn = 0, te = 0;
    char what[200];
    test_case_begin(test_case_mix(test_case_mix(test_case_id("amx silicon linear_q8", (uint64_t)pk), test_case_mix(m, n)),
                                  test_case_mix(test_case_mix(k, ag), (uint64_t)xqt * 4 + (uint64_t)use_ws * 2 + (uint64_t)bias)));
    p = make_pack(pk, n, k, &bytes);
    if (pk == PK_INT8_RAW) { /* activations by hand: every value in [-127, 127], the ends often */
        for (i = 0; i < m * ldq; i++) {
            int v = test_rand() % 3 == 0 ? (test_rand() % 2 ? -127 : 127) : (int)(test_rand() % 255) - 127;
            xq[i] = xqt == AMXK_DTYPE_U8 ? (unsigned char)(v + 128) : (unsigned char)(int8_t)v;
        }
        for (i = 0; i < m * ng; i++) xs[i] = (float)test_uniform(0.001, 0.1);
    } else {
        uint16_t *x = make_x(m, k, AMXK_DTYPE_BF16, 0);
        amxk_status s = amxk_quantize_act(NULL, m, k, x, AMXK_DTYPE_BF16, k, ag, xqt, xq, ldq, xs, AMXK_SCALES_ROW_MAJOR, ng);
        CHECK(s == AMXK_OK, "quantize_act: %s", amxk_status_string(s));
        test_free(x);
    }
    if (bias) {
        b = (float *)xalloc(n * 4);
        for (i = 0; i < n; i++) b[i] = (float)test_uniform(-1.0, 1.0);
    }
    if (p) {
        sn = amx_side_nat_linear_q8(m, n, k, xq, (int)xqt, ldq, xs, ag, p, bytes, b, yn, use_ws, &tn);
        se = amx_side_emu_linear_q8(m, n, k, xq, (int)xqt, ldq, xs, ag, p, bytes, b, ye, use_ws, &te);
        snprintf(what, sizeof what, "linear_q8 %s x %s M=%lu N=%lu K=%lu act_group %lu%s%s", pk_name(pk), xqt == AMXK_DTYPE_U8 ? "u8" : "i8",
                 (unsigned long)m, (unsigned long)n, (unsigned long)k, (unsigned long)ag, use_ws ? " ws" : "", bias ? " bias" : "");
        if (call_ok(what, sn, se, tn, te)) compare(what, yn, ye, m * n, n, W_F32);
    }
    test_free(p), test_free(xq), test_free(xs), test_free(b), test_free(yn), test_free(ye);
}

/* Larger q8 shapes: k chunks shorter than K (int8 g64, K = 2112: row chunks of the AMX w8a8 grid), long
   int4 g128, a 1300-wide per-channel group (K % 16 = 4). */
static const struct { int pk; size_t m, n, k, ag; } q8_bigs[] = {
    {PK_INT8_G64, 300, 96, 2112, 2112}, {PK_INT4_G128, 513, 64, 4096, 4096}, {PK_INT8, 40, 200, 1300, 1300}, {PK_INT8_RAW, 100, 130, 1024, 1024}};

static void q8_section(void) {
    static const int pks[] = {PK_INT8, PK_INT8_RAW, PK_INT8_G64, PK_INT4_G32, PK_INT4_G32_ASYM, PK_INT4_G128, PK_INT4_G128_ASYM, PK_INT2_G64_ASYM};
    size_t pi, mi, ni, ki, i;
    section_begin("amxk_linear_q8 at the AMX level: int8 / int4 / int2 packs, I8 and U8 activations");
    for (pi = 0; pi < N_OF(pks); pi++) {
        const int pk = pks[pi];
        long d0 = s_diff, c0 = s_cmp;
        for (mi = 0; mi < N_OF(lin_M); mi++)
            for (ni = 0; ni < N_OF(lin_N); ni++)
                for (ki = 0; ki < N_OF(lin_K); ki++) {
                    const size_t m = lin_M[mi], n = lin_N[ni], k = lin_K[ki];
                    const unsigned h = (unsigned)(mi * 31 + ni * 7 + ki * 3 + pi);
                    const amxk_quant q = pk_quant(pk, k);
                    size_t ag = k;
                    if (!pk_fits(pk, k) || (g_quick && h % 4 != 0)) continue;
                    if (h % 4 == 1 && (k / 2) % q.block_k == 0 && q.block_k < k) ag = k / 2; /* two activation groups */
                    q8_case(pk, m, n, k, ag, h % 2 ? AMXK_DTYPE_U8 : AMXK_DTYPE_I8, h % 5 < 2, h % 3 == 0);
                }
        for (i = 0; i < N_OF(q8_bigs) && !g_quick; i++)
            if (q8_bigs[i].pk == pk) q8_case(pk, q8_bigs[i].m, q8_bigs[i].n, q8_bigs[i].k, q8_bigs[i].ag, AMXK_DTYPE_I8, (int)(i % 2), 1);
        printf("   %-16s %ld outputs compared, %ld differ\n", pk_name(pk), s_cmp - c0, s_diff - d0);
    }
    section_end();
}

/* ---- 5. amxk_moe_experts ------------------------------------------------------------------------- */

typedef struct moe_cfg {
    size_t m, e, topk, k, n, ns; /* tokens, experts, top-k, hidden, intermediate, shared intermediate (0: none) */
    int pk, act_int8, act;
    amxk_dtype xt, ot;
} moe_cfg;

static void moe_case(int ci, const moe_cfg *c) {
    const void **w13 = (const void **)calloc(c->e, sizeof(void *)), **w2 = (const void **)calloc(c->e, sizeof(void *));
    size_t *b13 = (size_t *)calloc(c->e, sizeof(size_t)), *b2 = (size_t *)calloc(c->e, sizeof(size_t)), sb13 = 0, sb2 = 0, e, t, j;
    void *s13 = NULL, *s2 = NULL;
    uint16_t *x;
    float *tw = (float *)xalloc(c->m * c->topk * 4);
    int32_t *ids = (int32_t *)xalloc(c->m * c->topk * 4);
    const size_t osz = c->ot == AMXK_DTYPE_F32 ? 4 : 2;
    unsigned char *on = (unsigned char *)xalloc(c->m * c->k * osz), *oe = (unsigned char *)xalloc(c->m * c->k * osz);
    int ok = 1, sn, se, tn = 0, te = 0;
    char what[200];
    test_case_begin(test_case_mix(test_case_id("amx silicon moe", (uint64_t)ci), (uint64_t)c->pk));
    for (e = 0; e < c->e && ok; e++) {
        ok &= (w13[e] = make_pack(c->pk, 2 * c->n, c->k, &b13[e])) != NULL;
        ok &= (w2[e] = make_pack(c->pk, c->k, c->n, &b2[e])) != NULL;
    }
    if (ok && c->ns) {
        const int spk = c->act_int8 ? c->pk : c->xt == AMXK_DTYPE_F16 ? PK_F16 : PK_BF16;
        ok &= (s13 = make_pack(spk, 2 * c->ns, c->k, &sb13)) != NULL;
        ok &= (s2 = make_pack(spk, c->k, c->ns, &sb2)) != NULL;
    }
    x = make_x(c->m, c->k, c->xt, 0);
    /* routing: expert 0 takes most tokens (its unit runs the AMX tiles from 5 rows), the others a few
       (their units stay below it at small M); distinct experts per token; positive weights */
    for (t = 0; t < c->m; t++)
        for (j = 0; j < c->topk; j++) {
            int32_t id;
            size_t q;
            for (;;) {
                id = j == 0 && test_rand() % 4 != 0 ? 0 : (int32_t)(test_rand() % c->e);
                for (q = 0; q < j && ids[t * c->topk + q] != id; q++) {}
                if (q == j) break;
            }
            ids[t * c->topk + j] = id;
            tw[t * c->topk + j] = (float)test_uniform(0.05, 1.0);
        }
    if (ok) {
        sn = amx_side_nat_moe(c->e, c->k, c->n, w13, b13, w2, b2, c->ns, s13, sb13, s2, sb2, c->act, c->act_int8, c->m, x, (int)c->xt, c->topk,
                              tw, ids, on, (int)c->ot, &tn);
        se = amx_side_emu_moe(c->e, c->k, c->n, w13, b13, w2, b2, c->ns, s13, sb13, s2, sb2, c->act, c->act_int8, c->m, x, (int)c->xt, c->topk,
                              tw, ids, oe, (int)c->ot, &te);
        snprintf(what, sizeof what, "moe %s%s M=%lu E=%lu topk=%lu K=%lu N=%lu shared %lu act %d out %s", pk_name(c->pk),
                 c->act_int8 ? " w8a8" : "", (unsigned long)c->m, (unsigned long)c->e, (unsigned long)c->topk, (unsigned long)c->k,
                 (unsigned long)c->n, (unsigned long)c->ns, c->act, c->ot == AMXK_DTYPE_F32 ? "f32" : "16-bit");
        if (call_ok(what, sn, se, tn, te))
            compare(what, on, oe, c->m * c->k, c->k, c->ot == AMXK_DTYPE_F32 ? W_F32 : c->ot == AMXK_DTYPE_BF16 ? W_BF16 : W_F16);
    }
    for (e = 0; e < c->e; e++) test_free((void *)w13[e]), test_free((void *)w2[e]);
    test_free(s13), test_free(s2), test_free(x), test_free(tw), test_free(ids), test_free(on), test_free(oe);
    free((void *)w13), free((void *)w2), free(b13), free(b2);
}

static void moe_section(void) {
    const amxk_dtype B = AMXK_DTYPE_BF16, H = AMXK_DTYPE_F16, F = AMXK_DTYPE_F32;
    const moe_cfg cfgs[] = {
        /*  m  e topk   k    n  ns  pack             a8 act                      x  out */
        {1, 4, 2, 64, 48, 0, PK_BF16, 0, AMXK_MOE_ACT_SILU, B, F},
        {5, 4, 2, 96, 64, 32, PK_BF16, 0, AMXK_MOE_ACT_SILU, B, F},
        {17, 4, 2, 200, 48, 0, PK_BF16, 0, AMXK_MOE_ACT_GELU_TANH, B, F},
        {33, 6, 3, 128, 80, 48, PK_BF16, 0, AMXK_MOE_ACT_SILU, B, B},
        {64, 4, 2, 256, 130, 0, PK_BF16, 0, AMXK_MOE_ACT_GELU_ERF, B, F},
        {16, 4, 2, 64, 64, 32, PK_F16, 0, AMXK_MOE_ACT_SILU, H, F},
        {33, 4, 2, 96, 48, 0, PK_F16, 0, AMXK_MOE_ACT_SILU, H, H},
        {33, 4, 2, 128, 64, 32, PK_INT4_G32, 0, AMXK_MOE_ACT_SILU, B, F},
        {33, 4, 2, 128, 64, 0, PK_INT8, 1, AMXK_MOE_ACT_SILU, B, F},
        {64, 4, 2, 256, 64, 64, PK_INT4_G32, 1, AMXK_MOE_ACT_SILU, B, F},
        {100, 4, 2, 64, 96, 0, PK_INT4_G32_ASYM, 1, AMXK_MOE_ACT_SILU, B, F},
        {100, 8, 2, 64, 32, 0, PK_FP8_E4M3, 0, AMXK_MOE_ACT_SWIGLU_OAI, B, F},
        {17, 4, 2, 128, 64, 0, PK_MXFP4, 0, AMXK_MOE_ACT_SILU, B, F},
        {256, 8, 2, 512, 256, 128, PK_BF16, 0, AMXK_MOE_ACT_SILU, B, F},
        {128, 8, 4, 256, 128, 0, PK_INT4_G32, 1, AMXK_MOE_ACT_SILU, B, F},
        {200, 6, 2, 256, 96, 64, PK_INT8, 1, AMXK_MOE_ACT_GELU_TANH, B, B},
        {96, 4, 2, 512, 128, 0, PK_F16, 0, AMXK_MOE_ACT_SILU, H, F},
    };
    size_t i;
    section_begin("amxk_moe_experts at the AMX level: bf16 / fp16 / int4 / int8 w8a8 / fp8 / mxfp4 experts");
    for (i = 0; i < N_OF(cfgs); i++)
        if (!g_quick || i % 2 == 0) moe_case((int)i, &cfgs[i]);
    section_end();
}

/* ---- main ---------------------------------------------------------------------------------------- */

static int finish(const char *native, const char *emulated) {
    printf("levels native: %s; emulated: %s\n", native, emulated);
    printf("%ld passed, %ld failed\n", test_n_pass, test_n_fail);
    fflush(stdout);
    return test_n_fail ? 1 : 0;
}

int main(void) {
    const char *env;
    uint32_t feat, efeat;
    int nat_emulated;
    clock_t t0 = clock();
    test_init();
    env = getenv("AMX_SILICON_MUTATE");
    g_mutate = env && *env && strcmp(env, "0") != 0;
    env = getenv("AMX_SILICON_QUICK");
    g_quick = env && *env && strcmp(env, "0") != 0;
    /* AMXK_TEST_DENY (tests/test.h: test_deny): both sides' contexts deny those features, e.g. amx-fp16 runs a
       Granite Rapids as a Sapphire Rapids (the emulator then presents no AMX-FP16 either) */
    amx_side_nat_set_cpu_deny(test_deny);
    amx_side_emu_set_cpu_deny(test_deny);
    if (!amx_side_nat_amx_usable()) {
        printf("amx silicon vs emulator: skipped (no AMX on this CPU)\n");
        return finish("none", "none");
    }
    nat_emulated = amx_side_nat_amx_emulated();
    if (nat_emulated) printf("note: the native side of this build is the emulator (self-test build: emulator vs emulator)\n");
    env = getenv("AMX_SILICON_FEATURES");
    if (env && *env) {
        if (nat_emulated) { /* self-test builds: the emulated "native" side presents these, e.g. 0x3800 = Sapphire Rapids */
            (void)amx_side_nat_set_amx_features((uint32_t)strtoul(env, NULL, 0));
            printf("AMX_SILICON_FEATURES=%s: the emulated native side presents 0x%x\n", env, (unsigned)amx_side_nat_amx_features());
        } else
            printf("AMX_SILICON_FEATURES=%s ignored: the native side is real AMX\n", env);
    }
    /* the emulator presents exactly the native AMX features, so both sides take the same paths */
    feat = amx_side_nat_amx_features();
    (void)amx_side_emu_set_amx_features(feat);
    efeat = amx_side_emu_amx_features();
    printf("AMX features: native 0x%x (tile %d bf16 %d int8 %d fp16 %d), emulator presents 0x%x\n", (unsigned)feat,
           !!(feat & AMXK_CPU_AMX_TILE), !!(feat & AMXK_CPU_AMX_BF16), !!(feat & AMXK_CPU_AMX_INT8), !!(feat & AMXK_CPU_AMX_FP16),
           (unsigned)efeat);
    CHECK(efeat == feat, "the emulator presents the native AMX features (native 0x%x, emulator 0x%x: amxk_amx_emu_set_features missing?)",
          (unsigned)feat, (unsigned)efeat);
    if (g_mutate) printf("AMX_SILICON_MUTATE: one bit of the first native output of every section is flipped\n");

    TEST_SECTION("SDM hand cases (tests/test_core.c), native tiles and emulator");
    hand_cases(nat_emulated ? "native (emulated)" : "native", amx_side_nat_tdp, (feat & AMXK_CPU_AMX_FP16) != 0);
    hand_cases("emulator", amx_side_emu_tdp, (efeat & AMXK_CPU_AMX_FP16) != 0);

    raw_tiles(feat & efeat);
    linear_section();
    q8_section();
    moe_section();

    printf("amx silicon vs emulator: %ld outputs compared, %ld differ\n", g_cmp, g_diff);
    printf("amx silicon vs emulator: %ld of the differences are both NaN with different payloads\n", g_nanpay);
    if (g_diff) {
        int c;
        printf("amx silicon vs emulator: differences by class:");
        for (c = 0; c < D_COUNT; c++) printf("%s %s %ld", c ? ";" : "", d_class_name[c], g_class[c]);
        printf(" (int32 words count as other)\n");
    }
    printf("total %.1f s of CPU\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    CHECK(g_cmp > 0, "no outputs compared");
    CHECK(g_diff == 0, "%ld of %ld outputs differ between the native AMX tiles and the emulator", g_diff, g_cmp);
    /* level names as tests/test.h's summary line spells them: the AMX level with the AMX-FP16 it had */
    return finish(nat_emulated ? "none" : (feat & AMXK_CPU_AMX_FP16) ? "amx(+fp16)" : "amx(no-fp16)",
                  (efeat & AMXK_CPU_AMX_FP16) ? "amx(+fp16)" : "amx(no-fp16)");
}
