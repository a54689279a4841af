/* tests/test_core.c - amxk.h core: API basics, context, CPU detection, exact conversions on every
   usable tier, the example thread pool, and (with -DAMXK_AMX_EMULATE) the AMX tile emulator.

   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror [-DAMXK_AMX_EMULATE] -I. tests/test_core.c \
      -o build/test_core -pthread -lm && ./build/test_core */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"

#include <setjmp.h>
#include <ctype.h>

static const amxk_dtype k_small[4] = {AMXK_DTYPE_BF16, AMXK_DTYPE_F16, AMXK_DTYPE_FP8_E4M3, AMXK_DTYPE_FP8_E5M2};
static const char *dt_name(amxk_dtype dt) {
    switch (dt) {
    case AMXK_DTYPE_F32: return "f32";
    case AMXK_DTYPE_BF16: return "bf16";
    case AMXK_DTYPE_F16: return "f16";
    case AMXK_DTYPE_FP8_E4M3: return "e4m3";
    case AMXK_DTYPE_FP8_E5M2: return "e5m2";
    default: return "?";
    }
}

/* ---- element access and the scalar API by dtype ------------------------------------------------ */

static unsigned get_code(const void *p, amxk_dtype dt, size_t i) {
    if (test_code_bits(dt) == 16) return ((const uint16_t *)p)[i];
    return ((const uint8_t *)p)[i];
}
static void set_code(void *p, amxk_dtype dt, size_t i, unsigned c) {
    if (test_code_bits(dt) == 16) ((uint16_t *)p)[i] = (uint16_t)c;
    else ((uint8_t *)p)[i] = (uint8_t)c;
}
static unsigned api_encode(amxk_dtype dt, float x) {
    switch (dt) {
    case AMXK_DTYPE_BF16: return amxk_f32_to_bf16(x);
    case AMXK_DTYPE_F16: return amxk_f32_to_f16(x);
    case AMXK_DTYPE_FP8_E4M3: return amxk_f32_to_e4m3(x);
    default: return amxk_f32_to_e5m2(x);
    }
}
static float api_decode(amxk_dtype dt, unsigned c) {
    switch (dt) {
    case AMXK_DTYPE_BF16: return amxk_bf16_to_f32((amxk_bf16)c);
    case AMXK_DTYPE_F16: return amxk_f16_to_f32((amxk_f16)c);
    case AMXK_DTYPE_FP8_E4M3: return amxk_e4m3_to_f32((amxk_fp8)c);
    default: return amxk_e5m2_to_f32((amxk_fp8)c);
    }
}
static int all_bytes(const void *p, size_t n, unsigned char v) {
    size_t i;
    for (i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != v) return 0;
    return 1;
}

/* ================================================================================================ */
static void test_api_basics(void) {
    static const amxk_status codes[] = {AMXK_OK, AMXK_ERR_NULL, AMXK_ERR_SHAPE, AMXK_ERR_STRIDE, AMXK_ERR_ALIGN,
                                        AMXK_ERR_WORKSPACE, AMXK_ERR_FORMAT, AMXK_ERR_DTYPE, AMXK_ERR_ARG,
                                        AMXK_ERR_UNSUPPORTED, AMXK_ERR_CONTEXT, AMXK_ERR_ALIAS};
    const size_t nc = sizeof codes / sizeof codes[0];
    size_t i, j;
    const char *unknown = amxk_status_string((amxk_status)12345);
    TEST_SECTION("api basics");
    CHECK(strcmp(amxk_version(), AMXK_VERSION_STRING) == 0, "version %s", amxk_version());
    CHECK(AMXK_VERSION_NUMBER == AMXK_VERSION_MAJOR * 10000 + AMXK_VERSION_MINOR * 100 + AMXK_VERSION_PATCH, "version number");
    CHECK(unknown != NULL && strcmp(unknown, "unknown status") == 0, "unknown status string");
    CHECK(amxk_status_string((amxk_status)1) != NULL, "positive status string");
    for (i = 0; i < nc; i++) {
        const char *s = amxk_status_string(codes[i]);
        CHECK(s != NULL && s[0] != 0, "status %d has a string", (int)codes[i]);
        if (!s) continue;
        CHECK(strcmp(s, unknown) != 0, "status %d is known", (int)codes[i]);
        CHECK(i == 0 ? codes[i] == 0 : (int)codes[i] < 0, "status %d sign", (int)codes[i]);
        for (j = 0; j < i; j++) {
            const char *t = amxk_status_string(codes[j]);
            CHECK(t && strcmp(s, t) != 0, "status strings %d and %d distinct", (int)codes[i], (int)codes[j]);
        }
    }
    CHECK(amxk_dtype_size(AMXK_DTYPE_F32) == 4 && amxk_dtype_size(AMXK_DTYPE_I32) == 4, "dtype size 4");
    CHECK(amxk_dtype_size(AMXK_DTYPE_BF16) == 2 && amxk_dtype_size(AMXK_DTYPE_F16) == 2, "dtype size 2");
    CHECK(amxk_dtype_size(AMXK_DTYPE_FP8_E4M3) == 1 && amxk_dtype_size(AMXK_DTYPE_FP8_E5M2) == 1 &&
              amxk_dtype_size(AMXK_DTYPE_I8) == 1 && amxk_dtype_size(AMXK_DTYPE_U8) == 1,
          "dtype size 1");
    CHECK(amxk_dtype_size(AMXK_DTYPE_INVALID) == 0 && amxk_dtype_size(AMXK_DTYPE_COUNT) == 0 && amxk_dtype_size((amxk_dtype)77) == 0,
          "dtype size invalid");
    CHECK(strcmp(amxk_tier_name(AMXK_TIER_SCALAR), "scalar") == 0, "tier name");
    CHECK(strcmp(amxk_tier_name(AMXK_TIER_AVX2), "avx2") == 0, "tier name");
    CHECK(strcmp(amxk_tier_name(AMXK_TIER_AVX512), "avx512") == 0, "tier name");
    CHECK(strcmp(amxk_tier_name(AMXK_TIER_AMX), "amx") == 0, "tier name");
    CHECK(strcmp(amxk_tier_name(AMXK_TIER_NONE), "none") == 0 && strcmp(amxk_tier_name(AMXK_TIER_COUNT), "none") == 0 &&
              strcmp(amxk_tier_name((amxk_tier)-3), "none") == 0,
          "tier name none");
}

/* ================================================================================================ */
static void test_ctx_init(void) {
    const amxk_cpu *cpu = amxk_cpu_init();
    amxk_ctx c, saved;
    /* bits of no tier: NONE, the first bits above AMX (however many tiers there are), bit 31 */
    static const unsigned bad_bits[] = {1u /* AMXK_TIER_NONE */, AMXK_TIER_BIT((int)AMXK_TIER_AMX + 1), 1u << 31,
                                        AMXK_TIER_BIT(AMXK_TIER_SCALAR) | AMXK_TIER_BIT((int)AMXK_TIER_AMX + 2)};
    size_t i;
    int t;
    TEST_SECTION("amxk_ctx_init");
    CHECK(amxk_ctx_init(NULL) == AMXK_ERR_NULL, "NULL ctx");

    memset(&c, 0, sizeof c);
    c.n_workers = -1;
    c.tier = (amxk_tier)77;
    memcpy(&saved, &c, sizeof c);
    CHECK(amxk_ctx_init(&c) == AMXK_ERR_ARG, "n_workers < 0");
    CHECK(memcmp(&c, &saved, sizeof c) == 0, "ctx unchanged after n_workers < 0");

    for (i = 0; i < sizeof bad_bits / sizeof bad_bits[0]; i++) {
        memset(&c, 0, sizeof c);
        c.isa_allow = bad_bits[i];
        c.n_workers = 0;
        c.tier = (amxk_tier)77;
        memcpy(&saved, &c, sizeof c);
        CHECK(amxk_ctx_init(&c) == AMXK_ERR_ARG, "bad isa_allow 0x%x", bad_bits[i]);
        CHECK(memcmp(&c, &saved, sizeof c) == 0, "ctx unchanged after bad isa_allow 0x%x", bad_bits[i]);
    }

    memset(&c, 0, sizeof c);
    CHECK(amxk_ctx_init(&c) == AMXK_OK, "zero ctx");
    CHECK(c.n_workers == 1, "0 workers normalised to 1 (got %d)", c.n_workers);
    CHECK(c.tier == cpu->best_tier, "ISA_ALL gives the best tier (%s vs %s)", amxk_tier_name(c.tier), amxk_tier_name(cpu->best_tier));

    memset(&c, 0, sizeof c);
    c.n_workers = 5;
    c.isa_allow = AMXK_TIER_BIT(AMXK_TIER_SCALAR);
    CHECK(amxk_ctx_init(&c) == AMXK_OK && c.tier == AMXK_TIER_SCALAR && c.n_workers == 5, "scalar only");

    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
        amxk_status s;
        memset(&c, 0, sizeof c);
        c.isa_allow = AMXK_TIER_BIT(t);
        c.tier = (amxk_tier)77; /* garbage an error must leave alone */
        memcpy(&saved, &c, sizeof c);
        s = amxk_ctx_init(&c);
        if (cpu->tiers & AMXK_TIER_BIT(t)) {
            CHECK(s == AMXK_OK && (int)c.tier == t, "tier %s alone: status %d tier %s", amxk_tier_name((amxk_tier)t), (int)s, amxk_tier_name(c.tier));
        } else {
            CHECK(s == AMXK_ERR_UNSUPPORTED, "unusable tier %s: status %d", amxk_tier_name((amxk_tier)t), (int)s);
            CHECK(memcmp(&c, &saved, sizeof c) == 0, "ctx unchanged after unsupported tier");
        }
        /* allowing t and scalar: the higher usable one wins */
        memset(&c, 0, sizeof c);
        c.isa_allow = AMXK_TIER_BIT(t) | AMXK_TIER_BIT(AMXK_TIER_SCALAR);
        CHECK(amxk_ctx_init(&c) == AMXK_OK && (int)c.tier == ((cpu->tiers & AMXK_TIER_BIT(t)) ? t : (int)AMXK_TIER_SCALAR), "tier %s|scalar",
              amxk_tier_name((amxk_tier)t));
    }
    /* init twice is fine */
    memset(&c, 0, sizeof c);
    CHECK(amxk_ctx_init(&c) == AMXK_OK && amxk_ctx_init(&c) == AMXK_OK && c.n_workers == 1, "init twice");
    /* family: AUTO becomes the CPU's; a forced one stays; other values are refused, ctx unchanged */
    CHECK(c.family == cpu->family && (cpu->family == AMXK_FAMILY_INTEL || cpu->family == AMXK_FAMILY_OTHER), "family auto -> cpu's %d",
          cpu->family);
    for (i = 0; i < 4; i++) {
        static const int fam[4] = {AMXK_FAMILY_OTHER, AMXK_FAMILY_INTEL, -1, 3};
        memset(&c, 0, sizeof c);
        c.family = fam[i], c.tier = (amxk_tier)77;
        memcpy(&saved, &c, sizeof c);
        if (i < 2) CHECK(amxk_ctx_init(&c) == AMXK_OK && c.family == fam[i], "family %d kept", fam[i]);
        else CHECK(amxk_ctx_init(&c) == AMXK_ERR_ARG && memcmp(&c, &saved, sizeof c) == 0, "family %d refused, ctx unchanged", fam[i]);
    }

    /* cpu_deny: bits outside the features are refused; each feature denied alone leaves a context whose
       features lack it, whose level needs none of the denied ones, and no higher level that would do */
    {
        const uint32_t all = cpu->usable | cpu->emulated, amx3 = AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8;
        const uint32_t bad_deny[] = {1u << 15, 1u << 31, AMXK_CPU_AMX_FP16 | (1u << 20)};
        uint32_t f;
        for (i = 0; i < sizeof bad_deny / sizeof bad_deny[0]; i++) {
            memset(&c, 0, sizeof c);
            c.cpu_deny = bad_deny[i], c.tier = (amxk_tier)77;
            memcpy(&saved, &c, sizeof c);
            CHECK(amxk_ctx_init(&c) == AMXK_ERR_ARG && memcmp(&c, &saved, sizeof c) == 0, "cpu_deny 0x%x refused, ctx unchanged", (unsigned)bad_deny[i]);
        }
        memset(&c, 0, sizeof c);
        CHECK(amxk_ctx_init(&c) == AMXK_OK && c.features == all, "no deny: features 0x%x == usable | emulated 0x%x", (unsigned)c.features, (unsigned)all);
        for (f = 1; f <= AMXK_CPU_AMX_FP16; f <<= 1) {
            int top = AMXK_TIER_SCALAR, ok_need;
            uint32_t need;
            memset(&c, 0, sizeof c);
            c.cpu_deny = f;
            CHECK(amxk_ctx_init(&c) == AMXK_OK, "deny 0x%x: init", (unsigned)f);
            CHECK(c.features == (all & ~f), "deny 0x%x: features 0x%x", (unsigned)f, (unsigned)c.features);
            need = amxk_tier_features(c.tier);
            if (c.tier == AMXK_TIER_AMX && cpu->amx_emulated) need = amx3; /* the emulated tile unit sits on any vector level */
            ok_need = (need & ~c.features) == 0;
            CHECK(ok_need, "deny 0x%x: level %s needs 0x%x, has 0x%x", (unsigned)f, amxk_tier_name(c.tier), (unsigned)need, (unsigned)c.features);
            for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
                uint32_t nt = amxk_tier_features((amxk_tier)t);
                if (t == AMXK_TIER_AMX && cpu->amx_emulated) nt = amx3;
                if ((cpu->tiers & AMXK_TIER_BIT(t)) && (nt & f) == 0) top = t;
            }
            CHECK((int)c.tier == top, "deny 0x%x: level %s, want %s", (unsigned)f, amxk_tier_name(c.tier), amxk_tier_name((amxk_tier)top));
            /* a context asked for a denied level's bit alone: unsupported when the level needs f */
            memset(&c, 0, sizeof c);
            c.cpu_deny = f, c.isa_allow = AMXK_TIER_BIT(cpu->best_tier);
            need = amxk_tier_features(cpu->best_tier);
            if (cpu->best_tier == AMXK_TIER_AMX && cpu->amx_emulated) need = amx3;
            CHECK(amxk_ctx_init(&c) == ((need & f) ? AMXK_ERR_UNSUPPORTED : AMXK_OK), "deny 0x%x, best level %s alone", (unsigned)f,
                  amxk_tier_name(cpu->best_tier));
        }
        /* a context claiming a feature this CPU (and its emulators) lacks is refused by every op */
        for (f = 1; f <= AMXK_CPU_AMX_FP16; f <<= 1)
            if (!(all & f)) {
                float dst[4];
                const uint16_t src[4] = {0x3f80, 0x4000, 0x4040, 0x4080};
                memset(&c, 0, sizeof c);
                CHECK(amxk_ctx_init(&c) == AMXK_OK, "ctx");
                c.features |= f;
                memset(dst, 0x5a, sizeof dst);
                CHECK(amxk_convert(&c, dst, AMXK_DTYPE_F32, src, AMXK_DTYPE_BF16, 4) == AMXK_ERR_CONTEXT && ((const unsigned char *)dst)[0] == 0x5a,
                      "a context claiming feature 0x%x that is not here: refused", (unsigned)f);
                c.features &= ~f;
                CHECK(amxk_convert(&c, dst, AMXK_DTYPE_F32, src, AMXK_DTYPE_BF16, 4) == AMXK_OK && dst[1] == 2.0f, "the same context without it works");
            }
    }
}

/* ================================================================================================ */
static void test_cpu(void) {
    const amxk_cpu *cpu = amxk_cpu_init();
    const uint32_t need2 = AMXK_CPU_AVX2 | AMXK_CPU_FMA | AMXK_CPU_F16C;
    int t, top = 0;
    TEST_SECTION("cpu detection");
    printf("hw 0x%05x usable 0x%05x tiers 0x%02x best %s amx_permission %d amx_emulated %d\n", (unsigned)cpu->hw, (unsigned)cpu->usable,
           cpu->tiers, amxk_tier_name(cpu->best_tier), cpu->amx_permission, cpu->amx_emulated);
    CHECK(amxk_cpu_init() == cpu, "amxk_cpu_init returns the same static");
    CHECK((cpu->usable & ~cpu->hw) == 0, "usable subset of hw");
    CHECK(cpu->tiers & AMXK_TIER_BIT(AMXK_TIER_SCALAR), "scalar tier always there");
    CHECK((cpu->tiers & ~(AMXK_TIER_BIT((int)AMXK_TIER_AMX + 1) - AMXK_TIER_BIT(AMXK_TIER_SCALAR))) == 0, "no stray tier bits");
    CHECK(cpu->best_tier >= AMXK_TIER_SCALAR && cpu->best_tier <= AMXK_TIER_AMX && (cpu->tiers & AMXK_TIER_BIT(cpu->best_tier)),
          "best tier in tiers");
    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++)
        if (cpu->tiers & AMXK_TIER_BIT(t)) top = t;
    CHECK(top == (int)cpu->best_tier, "best tier is the highest");
    if (cpu->tiers & AMXK_TIER_BIT(AMXK_TIER_AVX2)) CHECK((cpu->usable & need2) == need2, "avx2 tier needs AVX2+FMA+F16C usable");
    if (cpu->tiers & AMXK_TIER_BIT(AMXK_TIER_AVX512))
        CHECK(((cpu->usable | cpu->emulated) & (need2 | AMXK_CPU_AVX512F | AMXK_CPU_AVX512BW | AMXK_CPU_AVX512VL | AMXK_CPU_AVX512DQ)) ==
                  (need2 | AMXK_CPU_AVX512F | AMXK_CPU_AVX512BW | AMXK_CPU_AVX512VL | AMXK_CPU_AVX512DQ),
              "avx512 tier needs AVX-512 usable (or emulated)");
    CHECK(cpu->avx512_emulated || (cpu->emulated & ~(AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16)) == 0,
          "only the SIMDe build emulates vector features (emulated 0x%x)", (unsigned)cpu->emulated);
    CHECK(cpu->amx_emulated || (cpu->emulated & (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16)) == 0,
          "only the AMX-emulator build emulates AMX features (emulated 0x%x)", (unsigned)cpu->emulated);
#ifdef AMXK_AMX_EMULATE
    CHECK(cpu->amx_emulated == 1, "emulated build reports amx_emulated");
    CHECK(cpu->tiers & AMXK_TIER_BIT(AMXK_TIER_AMX), "emulated build has the AMX tier");
#else
    CHECK(cpu->amx_emulated == 0, "non-emulated build: amx_emulated 0");
    if (cpu->tiers & AMXK_TIER_BIT(AMXK_TIER_AMX))
        CHECK((cpu->usable & (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8)) ==
                  (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8) &&
                  cpu->amx_permission == 1,
              "hardware AMX tier needs AMX usable and permission");
#endif
}

/* ================================================================================================ */
/* Decode: every code, every tier, bits equal to the reference. */
static void check_decoded(amxk_dtype dt, const float *got, size_t n, const char *who) {
    test_dump("core.decoded", -1, got, n * 4);
    size_t i, bad = 0, first = 0;
    for (i = 0; i < n; i++) {
        uint32_t g = test_f32_bits(got[i]), w = test_ref_decode_bits(dt, (unsigned)i);
        if (g != w && bad++ == 0) first = i;
    }
    CHECK(bad == 0, "%s decode %s: %lu codes wrong, first 0x%lx: got 0x%08x want 0x%08x", who, dt_name(dt), (unsigned long)bad,
          (unsigned long)first, test_f32_bits(got[first]), test_ref_decode_bits(dt, (unsigned)first));
}

static void test_decode(void) {
    amxk_ctx ctx;
    amxk_tier t;
    int d;
    float *out = (float *)test_alloc(65536 * 4);
    void *codes = test_alloc(65536 * 2);
    TEST_SECTION("decode: every code, every tier");
    for (d = 0; d < 4; d++) {
        amxk_dtype dt = k_small[d];
        size_t n = (size_t)1 << test_code_bits(dt), i, nan = 0, sub = 0;
        for (i = 0; i < n; i++) {
            set_code(codes, dt, i, (unsigned)i);
            out[i] = api_decode(dt, (unsigned)i);
            nan += test_code_is_nan(dt, (unsigned)i);
            sub += ((i >> test_fmt_of(dt).mbits) & ((1u << test_fmt_of(dt).ebits) - 1)) == 0 && (i & ((1u << test_fmt_of(dt).mbits) - 1));
        }
        check_decoded(dt, out, n, "scalar api");
        for (i = 0; i < n; i++)
            if (test_code_is_nan(dt, (unsigned)i)) CHECK(isnan(out[i]), "%s 0x%lx decodes to NaN", dt_name(dt), (unsigned long)i);
        /* the reference itself: counts of NaN and subnormal codes */
        CHECK(nan == (dt == AMXK_DTYPE_BF16 ? 254u : dt == AMXK_DTYPE_F16 ? 2046u : dt == AMXK_DTYPE_FP8_E4M3 ? 2u : 6u), "%s NaN codes %lu",
              dt_name(dt), (unsigned long)nan);
        CHECK(sub == 2 * ((1u << test_fmt_of(dt).mbits) - 1), "%s subnormal codes", dt_name(dt));
        TEST_FOR_EACH_TIER(t, ctx) {
            char who[32];
            memset(out, 0xff, n * 4);
            CHECK(amxk_convert(&ctx, out, AMXK_DTYPE_F32, codes, dt, n) == AMXK_OK, "convert status");
            snprintf(who, sizeof who, "tier %s", amxk_tier_name(t));
            check_decoded(dt, out, n, who);
            CHECK(test_guard_ok(out) && test_guard_ok(codes), "guards");
        }
    }
    /* spot values */
    CHECK(test_f32_bits(amxk_e4m3_to_f32(0x00)) == 0x00000000u && test_f32_bits(amxk_e4m3_to_f32(0x80)) == 0x80000000u,
          "e4m3 +0/-0 decode to exactly +-0 (not 2^-7 or any bias)");
    CHECK(test_f32_bits(amxk_e5m2_to_f32(0x00)) == 0x00000000u && test_f32_bits(amxk_e5m2_to_f32(0x80)) == 0x80000000u,
          "e5m2 +0/-0 decode to exactly +-0");
    CHECK(amxk_e4m3_to_f32(0x01) == 0x1p-9f && amxk_e4m3_to_f32(0x7e) == 448.0f && amxk_e4m3_to_f32(0x08) == 0x1p-6f, "e4m3 values");
    CHECK(amxk_e5m2_to_f32(0x01) == 0x1p-16f && amxk_e5m2_to_f32(0x7b) == 57344.0f && isinf(amxk_e5m2_to_f32(0x7c)), "e5m2 values");
    CHECK(amxk_f16_to_f32(0x0001) == 0x1p-24f && amxk_f16_to_f32(0x7bff) == 65504.0f && amxk_bf16_to_f32(0x0001) == 0x1p-133f,
          "f16/bf16 values");
    {
        uint8_t z[2] = {0x00, 0x80};
        float f[2];
        TEST_FOR_EACH_TIER(t, ctx) {
            CHECK(amxk_convert(&ctx, f, AMXK_DTYPE_F32, z, AMXK_DTYPE_FP8_E4M3, 2) == AMXK_OK &&
                      test_f32_bits(f[0]) == 0 && test_f32_bits(f[1]) == 0x80000000u,
                  "tier %s: e4m3 +-0 decode exactly", amxk_tier_name(t));
        }
    }
    test_free(out);
    test_free(codes);
}

/* ================================================================================================ */
/* Encode: round trip of every code, then a large f32 sample against the reference encoder. */

static unsigned roundtrip_expect(amxk_dtype dt, unsigned c) {
    if (test_code_is_nan(dt, c)) {
        if (dt == AMXK_DTYPE_BF16) return c | 0x40u;  /* quiet bit set */
        if (dt == AMXK_DTYPE_F16) return c | 0x200u;  /* quiet bit set */
        return (c & 0x80u) | 0x7fu;                  /* the one fp8 NaN code */
    }
    if (dt == AMXK_DTYPE_FP8_E5M2 && (c & 0x7fu) == 0x7cu) return (c & 0x80u) | 0x7bu; /* inf saturates */
    return c;
}

static void test_roundtrip(void) {
    amxk_ctx ctx;
    amxk_tier t;
    int d;
    float *f = (float *)test_alloc(65536 * 4);
    void *codes = test_alloc(65536 * 2), *back = test_alloc(65536 * 2);
    TEST_SECTION("encode: round trip of every code");
    for (d = 0; d < 4; d++) {
        amxk_dtype dt = k_small[d];
        size_t n = (size_t)1 << test_code_bits(dt), i, bad = 0, first = 0, fin = 0;
        for (i = 0; i < n; i++) {
            unsigned c = (unsigned)i, r = api_encode(dt, api_decode(dt, c));
            set_code(codes, dt, i, c);
            if (r != roundtrip_expect(dt, c) && bad++ == 0) first = i;
            fin += r == c;
        }
        CHECK(bad == 0, "scalar %s round trip: %lu bad, first 0x%lx", dt_name(dt), (unsigned long)bad, (unsigned long)first);
        printf("%s: %lu of %lu codes round-trip to themselves\n", dt_name(dt), (unsigned long)fin, (unsigned long)n);
        TEST_FOR_EACH_TIER(t, ctx) {
            bad = 0;
            CHECK(amxk_convert(&ctx, f, AMXK_DTYPE_F32, codes, dt, n) == AMXK_OK, "decode status");
            CHECK(amxk_convert(&ctx, back, dt, f, AMXK_DTYPE_F32, n) == AMXK_OK, "encode status");
            for (i = 0; i < n; i++)
                if (get_code(back, dt, i) != roundtrip_expect(dt, (unsigned)i) && bad++ == 0) first = i;
            CHECK(bad == 0, "tier %s %s round trip: %lu bad, first 0x%lx -> 0x%x", amxk_tier_name(t), dt_name(dt), (unsigned long)bad,
                  (unsigned long)first, get_code(back, dt, first));
            CHECK(test_guard_ok(f) && test_guard_ok(back), "guards");
        }
    }
    test_free(f);
    test_free(codes);
    test_free(back);
}

/* The f32 sample: every representable value of each small format, its neighbours, every midpoint
   between neighbours (the ties) and its neighbours, the overflow thresholds, every f32 exponent with
   assorted mantissas, specials, and random bit patterns. */
static size_t n_sample;
static float *sample;
static void add(float x) { sample[n_sample++] = x; }
static void add_near(float x) {
    add(x), add(-x);
    add(nextafterf(x, INFINITY)), add(nextafterf(x, -INFINITY));
    add(-nextafterf(x, INFINITY)), add(-nextafterf(x, -INFINITY));
}
static void build_sample(void) {
    size_t cap = 4u << 20, i;
    int d, e;
    sample = (float *)malloc(cap * sizeof *sample);
    n_sample = 0;
    test_case_begin(test_case_id("core sample", 0));
    for (d = 0; d < 4; d++) {
        amxk_dtype dt = k_small[d];
        unsigned c, top = (1u << (test_code_bits(dt) - 1)); /* positive codes */
        test_fmt fm = test_fmt_of(dt);
        for (c = 0; c < top; c++) {
            double v = test_ref_decode(dt, c), w;
            if (isnan(v) || isinf(v)) continue;
            add_near((float)v);
            w = c + 1 < top && !test_code_is_nan(dt, c + 1) ? test_ref_decode(dt, c + 1) : INFINITY;
            if (isinf(w)) w = fm.maxv + ldexp(1.0, (int)floor(log2(fm.maxv)) - fm.mbits); /* next step above max */
            if (w > 3.4e38) {                                                                 /* bf16: beyond f32 */
                add_near(test_bits_f32(0x7f7f8000u)); /* the bf16 overflow tie */
                continue;
            }
            add_near((float)((v + w) / 2)); /* exact tie */
            add_near((float)(v + (w - v) / 4));
            add_near((float)(v + 3 * (w - v) / 4));
        }
    }
    for (e = 0; e < 256; e++) {
        static const uint32_t mant[] = {0, 1, 2, 0x7fffff, 0x400000, 0x3fffff, 0x400001, 0x8000, 0x7fff, 0x8001, 0x18000, 0x1000,
                                        0xfff, 0x1001, 0x3000, 0x80000, 0x7ffff, 0x80001, 0x180000, 0x100000, 0xfffff, 0x100001, 0x300000};
        for (i = 0; i < sizeof mant / sizeof mant[0]; i++) add(test_bits_f32((uint32_t)e << 23 | mant[i])), add(test_bits_f32(0x80000000u | (uint32_t)e << 23 | mant[i]));
        for (i = 0; i < 200; i++) add(test_bits_f32((uint32_t)e << 23 | (test_rand32() & 0x807fffffu)));
    }
    add(0.0f), add(-0.0f), add(INFINITY), add(-INFINITY), add(NAN), add(-NAN);
    add(test_bits_f32(0x7f800001u)), add(test_bits_f32(0xff800001u)), add(test_bits_f32(0x7fbfffffu)), add(test_bits_f32(0x7fc00001u));
    add(test_bits_f32(0x7f812345u)), add(test_bits_f32(0xffffffffu)), add(test_bits_f32(0x7fe00000u)), add(test_bits_f32(0x7f802000u));
    add(448.0f), add(464.0f), add(465.0f), add(463.99997f), add(480.0f), add(1e9f), add(57344.0f), add(61440.0f), add(61439.996f);
    add(65504.0f), add(65519.996f), add(65520.0f), add(0x1p-10f), add(0x1.8p-10f), add(0x1.8p-9f), add(0x1p-25f), add(0x1.000002p-25f);
    while (n_sample < cap - 1) add(test_bits_f32(test_rand32()));
}

static void test_encode(void) {
    amxk_ctx ctx;
    amxk_tier t;
    int d;
    size_t i;
    unsigned *want = (unsigned *)malloc(n_sample * sizeof *want);
    void *got = test_alloc(n_sample * 2);
    TEST_SECTION("encode: reference RNE / saturation over an f32 sample");
    printf("%lu f32 values\n", (unsigned long)n_sample);
    for (d = 0; d < 4; d++) {
        amxk_dtype dt = k_small[d];
        size_t bad = 0, first = 0;
        for (i = 0; i < n_sample; i++) {
            want[i] = test_ref_encode(dt, sample[i]);
            if (api_encode(dt, sample[i]) != want[i] && bad++ == 0) first = i;
        }
        CHECK(bad == 0, "scalar %s encode: %lu bad, first x=%.9g (0x%08x): got 0x%x want 0x%x", dt_name(dt), (unsigned long)bad,
              (double)sample[first], test_f32_bits(sample[first]), api_encode(dt, sample[first]), want[first]);
        TEST_FOR_EACH_TIER(t, ctx) {
            bad = 0;
            memset(got, 0xff, n_sample * amxk_dtype_size(dt));
            CHECK(amxk_convert(&ctx, got, dt, sample, AMXK_DTYPE_F32, n_sample) == AMXK_OK, "convert status");
            for (i = 0; i < n_sample; i++)
                if (get_code(got, dt, i) != want[i] && bad++ == 0) first = i;
            CHECK(bad == 0, "tier %s %s encode: %lu bad, first x=%.9g (0x%08x): got 0x%x want 0x%x", amxk_tier_name(t), dt_name(dt),
                  (unsigned long)bad, (double)sample[first], test_f32_bits(sample[first]), get_code(got, dt, first), want[first]);
            CHECK(test_guard_ok(got), "guards");
        }
    }
    /* named edge cases (also in the sample; here to read them in the source) */
    CHECK(amxk_f32_to_e4m3(448.0f) == 0x7e && amxk_f32_to_e4m3(464.0f) == 0x7e && amxk_f32_to_e4m3(470.0f) == 0x7e &&
              amxk_f32_to_e4m3(1e9f) == 0x7e && amxk_f32_to_e4m3(INFINITY) == 0x7e && amxk_f32_to_e4m3(-INFINITY) == 0xfe,
          "e4m3 saturates to +-448");
    CHECK(amxk_f32_to_e4m3(NAN) == 0x7f && amxk_f32_to_e4m3(-NAN) == 0xff, "e4m3 NaN");
    CHECK(amxk_f32_to_e4m3(0x1p-10f) == 0x00 && amxk_f32_to_e4m3(0x1.8p-10f) == 0x01 && amxk_f32_to_e4m3(0x1.8p-9f) == 0x02 &&
              amxk_f32_to_e4m3(-0.0f) == 0x80,
          "e4m3 subnormal ties to even, -0");
    CHECK(amxk_f32_to_e5m2(57344.0f) == 0x7b && amxk_f32_to_e5m2(61440.0f) == 0x7b && amxk_f32_to_e5m2(INFINITY) == 0x7b &&
              amxk_f32_to_e5m2(-INFINITY) == 0xfb && amxk_f32_to_e5m2(NAN) == 0x7f,
          "e5m2 saturates to +-57344");
    CHECK(amxk_f32_to_f16(65504.0f) == 0x7bff && amxk_f32_to_f16(65519.996f) == 0x7bff && amxk_f32_to_f16(65520.0f) == 0x7c00 &&
              amxk_f32_to_f16(-65520.0f) == 0xfc00 && amxk_f32_to_f16(INFINITY) == 0x7c00,
          "f16 overflows to inf at 65520");
    CHECK((amxk_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (amxk_f32_to_f16(NAN) & 0x3ff) != 0, "f16 NaN stays NaN");
    CHECK(amxk_f32_to_f16(test_bits_f32(0x7f800001u)) == 0x7e00, "f16 sNaN with low payload stays NaN");
    CHECK(amxk_f32_to_bf16(test_bits_f32(0x7f800001u)) == 0x7fc0 && amxk_f32_to_bf16(test_bits_f32(0xff800001u)) == 0xffc0,
          "bf16 sNaN with low payload stays NaN");
    CHECK(amxk_f32_to_bf16(test_bits_f32(0x7f7f8000u)) == 0x7f80 && amxk_f32_to_bf16(test_bits_f32(0x7f7f7fffu)) == 0x7f7f,
          "bf16 overflow threshold");
    CHECK(amxk_f32_to_bf16(test_bits_f32(0x00008000u)) == 0x0000 && amxk_f32_to_bf16(test_bits_f32(0x00018000u)) == 0x0002,
          "bf16 subnormal ties to even");
    free(want);
    test_free(got);
}

/* The source of one tails case: n random elements of dtype st at s (f32: picks from the sample;
   others: random codes), from the case's own stream (id from its parameters, not the tier). */
static void tails_fill(unsigned char *s, amxk_dtype st, size_t n, int d, int dir, size_t k, int so, int doff) {
    size_t i;
    test_case_begin(test_case_mix(test_case_mix(test_case_mix(test_case_id("core tails", (uint64_t)(d + 1)), (uint64_t)dir), k),
                                  (uint64_t)(so * 2 + doff)));
    for (i = 0; i < n; i++) {
        if (st == AMXK_DTYPE_F32) {
            float x = sample[test_rand() % n_sample];
            memcpy(s + i * 4, &x, 4);
        } else {
            set_code(s, st, i, test_rand32() & ((1u << test_code_bits(st)) - 1));
        }
    }
}

/* Every tier equals the scalar functions for small n (vector tails) and a large n, any alignment,
   with nothing written outside dst. */
static void test_tails(void) {
    static const size_t big[] = {1000, 4099, 65537};
    amxk_ctx ctx;
    amxk_tier t;
    int d, dir, so, doff;
    size_t n, k, i;
    TEST_SECTION("convert: tails, alignment, guards, every tier vs scalar");
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t bad = 0, guard_bad = 0, runs = 0;
        for (d = -1; d < 4; d++) {
            amxk_dtype dt = d < 0 ? AMXK_DTYPE_F32 : k_small[d];
            for (dir = 0; dir < 2; dir++) {
                amxk_dtype st = dir ? dt : AMXK_DTYPE_F32, ot = dir ? AMXK_DTYPE_F32 : dt;
                size_t ss = amxk_dtype_size(st), os = amxk_dtype_size(ot);
                if (d < 0 && dir) continue;
                for (k = 0; k < 40 + 3; k++) {
                    n = k < 40 ? k + 1 : big[k - 40];
                    for (so = 0; so < 2; so++)
                        for (doff = 0; doff < 2; doff++) {
                            unsigned char *src = (unsigned char *)test_alloc((n + 1) * ss);
                            unsigned char *dst = (unsigned char *)test_alloc((n + 1) * os);
                            const unsigned char *s = src + (size_t)so * ss;
                            unsigned char *o = dst + (size_t)doff * os;
                            runs++;
                            tails_fill((unsigned char *)s, st, n, d, dir, k, so, doff);
                            if (amxk_convert(&ctx, o, ot, s, st, n) != AMXK_OK) bad++;
                            for (i = 0; i < n; i++) {
                                int ok;
                                if (st == AMXK_DTYPE_F32 && ot == AMXK_DTYPE_F32) {
                                    ok = memcmp(o + 4 * i, s + 4 * i, 4) == 0;
                                } else if (st == AMXK_DTYPE_F32) {
                                    float x;
                                    memcpy(&x, s + 4 * i, 4);
                                    ok = get_code(o, ot, i) == api_encode(ot, x);
                                } else {
                                    float y = api_decode(st, get_code(s, st, i)), g;
                                    memcpy(&g, o + 4 * i, 4);
                                    ok = test_f32_bits(g) == test_f32_bits(y);
                                }
                                if (!ok && bad++ < 5)
                                    printf("  tier %s %s->%s n=%lu so=%d do=%d: element %lu differs from scalar\n", amxk_tier_name(t),
                                           dt_name(st), dt_name(ot), (unsigned long)n, so, doff, (unsigned long)i);
                            }
                            if (!test_guard_ok(dst) || !test_guard_ok(src) || (doff && !all_bytes(dst, os, 0xff)) ||
                                (!doff && !all_bytes(dst + n * os, os, 0xff)))
                                guard_bad++;
                            test_free(src);
                            test_free(dst);
                        }
                }
            }
        }
        CHECK(bad == 0, "tier %s: %lu elements differ from the scalar functions", amxk_tier_name(t), (unsigned long)bad);
        CHECK(guard_bad == 0, "tier %s: %lu of %lu runs wrote outside dst", amxk_tier_name(t), (unsigned long)guard_bad, (unsigned long)runs);
    }
}

/* ================================================================================================ */
/* The harness's promise (tests/test.h): a case's data depends on the seed and the case's id only.
   A tails case (f32 from the sample, bf16 codes) generated fresh, then again after another case,
   noise draws of an arbitrary amount and every tier's context: bitwise equal. */
static void test_data_independence(void) {
    const size_t n = 4099;
    unsigned char *a = (unsigned char *)malloc(n * 4), *b = (unsigned char *)malloc(n * 4), *c = (unsigned char *)malloc(n * 4);
    amxk_ctx ctx;
    amxk_tier t;
    int k;
    long stray;
    TEST_SECTION("test data: a case's data depends on the seed and its id only");
    for (k = 0; k < 2; k++) {
        const amxk_dtype st = k ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
        const size_t bytes = n * amxk_dtype_size(st);
        uint64_t r, extra = 1 + test_noise() % 5000;
        tails_fill(a, st, n, k ? 0 : -1, k, 41, 1, 0);
        for (r = 0; r < extra; r++) (void)test_noise();
        tails_fill(b, st, n, k ? 0 : -1, k, 42, 0, 1); /* another case */
        TEST_FOR_EACH_TIER(t, ctx) test_noise_fill(c, 1 + 37 * (size_t)t);
        memset(c, 0, n * 4);
        tails_fill(c, st, n, k ? 0 : -1, k, 41, 1, 0);
        CHECK(memcmp(a, c, bytes) == 0, "%s case: the same data after other cases, %lu noise draws and the tier loop", dt_name(st),
              (unsigned long)extra);
        CHECK(memcmp(a, b, bytes) != 0, "%s: another case id gives other data", dt_name(st));
    }
    CHECK(test_case_id("core tails", 0) != test_case_id("core tail", 0) && test_case_id("core tails", 0) != test_case_id("core tails", 1) &&
              test_case_mix(1, 2) != test_case_mix(2, 1),
          "case ids differ by section, index and parameter order");
    /* a data draw after a tier context without test_case_begin is counted (then the count is restored) */
    stray = test_n_stray;
    test_n_stray = stray ? stray : 1; /* nonzero: no message */
    (void)test_ctx(&ctx, AMXK_TIER_SCALAR, 1);
    (void)test_rand();
    CHECK(test_n_stray == (stray ? stray : 1) + 1, "stray data draw detected");
    test_n_stray = stray;
    free(a), free(b), free(c);
}

/* ================================================================================================ */
/* Programs built with -ffast-math / -Ofast run with MXCSR.FTZ and DAZ set. The conversions must still be
   exact and tier-identical then. Expected values are computed before the mode is switched on (double ->
   float conversions of tiny values would flush). x86 only. */
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#include <xmmintrin.h>
static void test_ftz_daz(void) {
    amxk_ctx ctx;
    amxk_tier t;
    int d;
    size_t i, n_enc = 1u << 18;
    uint32_t *want = (uint32_t *)malloc(65536 * sizeof *want);
    unsigned *want_enc = (unsigned *)malloc(n_enc * sizeof *want_enc);
    float *out = (float *)test_alloc(65536 * 4), *src = (float *)test_alloc(n_enc * 4);
    void *codes = test_alloc(65536 * 2), *enc = test_alloc(n_enc * 2);
    unsigned csr = _mm_getcsr();
    TEST_SECTION("conversions under MXCSR FTZ + DAZ (as -ffast-math programs run)");
    test_case_begin(test_case_id("core ftz daz", 0));
    for (i = 0; i < n_enc; i++) /* tiny values first: f32 denormals, bf16/f16/fp8 subnormal ranges */
        src[i] = i < n_enc / 2 ? test_bits_f32((test_rand32() & 0x80000000u) | (test_rand32() % 0x3a000000u)) : sample[test_rand() % n_sample];
    for (d = 0; d < 4; d++) {
        amxk_dtype dt = k_small[d];
        size_t n = (size_t)1 << test_code_bits(dt), bad_dec = 0, bad_enc = 0, bad_api = 0, first = 0;
        for (i = 0; i < n; i++) set_code(codes, dt, i, (unsigned)i), want[i] = test_ref_decode_bits(dt, (unsigned)i);
        for (i = 0; i < n_enc; i++) want_enc[i] = test_ref_encode(dt, src[i]);
        TEST_FOR_EACH_TIER(t, ctx) {
            _mm_setcsr(csr | 0x8040u); /* FTZ | DAZ */
            amxk_convert(&ctx, out, AMXK_DTYPE_F32, codes, dt, n);
            amxk_convert(&ctx, enc, dt, src, AMXK_DTYPE_F32, n_enc);
            _mm_setcsr(csr);
            for (i = 0; i < n; i++)
                if (test_f32_bits(out[i]) != want[i] && bad_dec++ == 0) first = i;
            CHECK(bad_dec == 0, "FTZ/DAZ tier %s decode %s: %lu wrong, first code 0x%lx -> 0x%08x want 0x%08x", amxk_tier_name(t), dt_name(dt),
                  (unsigned long)bad_dec, (unsigned long)first, test_f32_bits(out[first]), want[first]);
            for (i = 0; i < n_enc; i++)
                if (get_code(enc, dt, i) != want_enc[i] && bad_enc++ == 0) first = i;
            CHECK(bad_enc == 0, "FTZ/DAZ tier %s encode %s: %lu wrong, first x=0x%08x -> 0x%x want 0x%x", amxk_tier_name(t), dt_name(dt),
                  (unsigned long)bad_enc, test_f32_bits(src[first]), get_code(enc, dt, first), want_enc[first]);
            bad_dec = bad_enc = 0;
        }
        _mm_setcsr(csr | 0x8040u);
        for (i = 0; i < n; i++) out[i] = api_decode(dt, (unsigned)i);
        for (i = 0; i < n_enc; i++) set_code(enc, dt, i, api_encode(dt, src[i]));
        _mm_setcsr(csr);
        for (i = 0; i < n; i++) bad_api += test_f32_bits(out[i]) != want[i];
        for (i = 0; i < n_enc; i++) bad_api += get_code(enc, dt, i) != want_enc[i];
        CHECK(bad_api == 0, "FTZ/DAZ scalar API %s: %lu wrong", dt_name(dt), (unsigned long)bad_api);
    }
    free(want), free(want_enc), test_free(out), test_free(src), test_free(codes), test_free(enc);
}
#else
static void test_ftz_daz(void) { printf("FTZ/DAZ test: x86 only, skipped\n"); }
#endif

/* ================================================================================================ */
static void test_convert_errors(void) {
    float fsrc[16], fdst[16];
    uint16_t h[16];
    amxk_ctx bad;
    int i;
    TEST_SECTION("amxk_convert: argument errors");
    for (i = 0; i < 16; i++) fsrc[i] = (float)i;
    memset(h, 0x11, sizeof h);
#define POISON() memset(fdst, 0xff, sizeof fdst)
#define UNTOUCHED() all_bytes(fdst, sizeof fdst, 0xff)
    POISON();
    CHECK(amxk_convert(NULL, NULL, AMXK_DTYPE_BF16, fsrc, AMXK_DTYPE_F32, 4) == AMXK_ERR_NULL, "NULL dst");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, NULL, AMXK_DTYPE_BF16, 4) == AMXK_ERR_NULL && UNTOUCHED(), "NULL src");
    CHECK(amxk_convert(NULL, NULL, AMXK_DTYPE_F32, NULL, AMXK_DTYPE_BF16, 0) == AMXK_OK, "n == 0 with NULLs is OK");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fsrc, AMXK_DTYPE_F16, 0) == AMXK_OK && UNTOUCHED(), "n == 0 writes nothing");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F16, h, AMXK_DTYPE_BF16, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "bf16 -> f16");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_FP8_E4M3, h, AMXK_DTYPE_FP8_E5M2, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "e5m2 -> e4m3");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_INVALID, fsrc, AMXK_DTYPE_F32, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "invalid dst dtype");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fsrc, AMXK_DTYPE_INVALID, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "invalid src dtype");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_I8, fsrc, AMXK_DTYPE_F32, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "f32 -> i8");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fsrc, AMXK_DTYPE_I32, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "i32 -> f32");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fsrc, AMXK_DTYPE_COUNT, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "COUNT dtype");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fsrc, (amxk_dtype)-5, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "negative dtype");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, NULL, AMXK_DTYPE_U8, 4) == AMXK_ERR_DTYPE && UNTOUCHED(), "u8 src");
    /* overlap */
    memcpy(fdst, fsrc, sizeof fdst);
    CHECK(amxk_convert(NULL, fdst + 1, AMXK_DTYPE_F32, fdst, AMXK_DTYPE_F32, 8) == AMXK_ERR_ALIAS && memcmp(fdst, fsrc, sizeof fdst) == 0,
          "overlapping f32 copy");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fdst + 3, AMXK_DTYPE_F32, 8) == AMXK_ERR_ALIAS && memcmp(fdst, fsrc, sizeof fdst) == 0,
          "overlapping f32 copy (dst below)");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_BF16, fdst, AMXK_DTYPE_F32, 8) == AMXK_ERR_ALIAS && memcmp(fdst, fsrc, sizeof fdst) == 0,
          "in-place f32 -> bf16 (sizes differ)");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, (char *)fdst + 30, AMXK_DTYPE_BF16, 8) == AMXK_ERR_ALIAS &&
              memcmp(fdst, fsrc, sizeof fdst) == 0,
          "bf16 src overlapping f32 dst tail");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, fdst, AMXK_DTYPE_F32, 16) == AMXK_OK && memcmp(fdst, fsrc, sizeof fdst) == 0,
          "in-place f32 -> f32 is allowed");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_BF16, fdst + 8, AMXK_DTYPE_F32, 8) == AMXK_OK, "adjacent buffers do not overlap");
    /* contexts */
    POISON();
    memset(&bad, 0, sizeof bad);
    CHECK(amxk_convert(&bad, fdst, AMXK_DTYPE_F32, h, AMXK_DTYPE_BF16, 4) == AMXK_ERR_CONTEXT && UNTOUCHED(), "uninitialised ctx");
    bad.tier = AMXK_TIER_SCALAR; /* n_workers still 0 */
    CHECK(amxk_convert(&bad, fdst, AMXK_DTYPE_F32, h, AMXK_DTYPE_BF16, 4) == AMXK_ERR_CONTEXT && UNTOUCHED(), "ctx with 0 workers");
    bad.tier = (amxk_tier)9, bad.n_workers = 1;
    CHECK(amxk_convert(&bad, fdst, AMXK_DTYPE_F32, h, AMXK_DTYPE_BF16, 4) == AMXK_ERR_CONTEXT && UNTOUCHED(), "ctx with a bad tier");
    CHECK(amxk_convert(NULL, fdst, AMXK_DTYPE_F32, h, AMXK_DTYPE_BF16, 4) == AMXK_OK && !UNTOUCHED(), "NULL ctx works");
#undef POISON
#undef UNTOUCHED
}

/* ================================================================================================ */
/* The example pool: every task once, worker indices in range and exclusive. */
typedef struct pool_job {
    int *hits;
    int *busy;
    int n_workers;
    int bad_worker, overlap;
    amxk_pool *nested; /* when set, each task also runs a nested parallel_for */
    int nested_hits;
} pool_job;

static void pool_nested_task(void *c, size_t t, int w) {
    pool_job *j = (pool_job *)c;
    (void)t;
    if (w != 0) __atomic_store_n(&j->bad_worker, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&j->nested_hits, 1, __ATOMIC_RELAXED);
}
static void pool_task(void *c, size_t t, int w) {
    pool_job *j = (pool_job *)c;
    volatile int spin;
    if (w < 0 || w >= j->n_workers) {
        __atomic_store_n(&j->bad_worker, 1, __ATOMIC_RELAXED);
        return;
    }
    if (__atomic_exchange_n(&j->busy[w], 1, __ATOMIC_ACQ_REL) != 0) __atomic_store_n(&j->overlap, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&j->hits[t], 1, __ATOMIC_RELAXED);
    for (spin = 0; spin < (int)(t % 64); spin++) {
    }
    if (j->nested) {
        amxk_pool_parallel_for(j->nested, pool_nested_task, j, 3);
    }
    __atomic_store_n(&j->busy[w], 0, __ATOMIC_RELEASE);
}

static void test_pool_basic(void) {
    static const size_t ntasks[] = {0, 1, 2, 5, 100, 1000, 4096};
    int wi, r;
    size_t k, i;
    int *hits = (int *)malloc(4096 * sizeof *hits);
    TEST_SECTION("examples/amxk_pool.h");
    {
        amxk_pool p;
        CHECK(amxk_pool_init(&p, 0) != 0 && amxk_pool_init(&p, -2) != 0 && amxk_pool_init(NULL, 2) != 0, "bad pool sizes refused");
    }
    for (wi = 0; wi < TEST_N_WORKER_COUNTS; wi++) {
        int nw = test_worker_counts[wi], once = 1, bad_w = 0, overlap = 0, nested_ok = 1;
        amxk_pool *p = test_pool(nw);
        amxk_ctx ctx;
        int busy[16];
        memset(&ctx, 0, sizeof ctx);
        amxk_pool_bind(p, &ctx);
        CHECK(ctx.parallel_for == amxk_pool_parallel_for && ctx.parallel_user == (void *)p && ctx.n_workers == nw, "bind");
        CHECK(amxk_ctx_init(&ctx) == AMXK_OK && ctx.n_workers == nw, "ctx init with a pool");
        for (r = 0; r < 30; r++)
            for (k = 0; k < sizeof ntasks / sizeof ntasks[0]; k++) {
                pool_job j;
                size_t n = ntasks[k];
                memset(&j, 0, sizeof j);
                memset(busy, 0, sizeof busy);
                memset(hits, 0, 4096 * sizeof *hits);
                j.hits = hits, j.busy = busy, j.n_workers = nw;
                if (r == 0 && k == 4) j.nested = p;
                ctx.parallel_for(ctx.parallel_user, pool_task, &j, n);
                for (i = 0; i < n; i++) once &= hits[i] == 1;
                for (i = n; i < 4096; i++) once &= hits[i] == 0;
                bad_w |= j.bad_worker, overlap |= j.overlap;
                if (j.nested) nested_ok &= j.nested_hits == (int)(3 * n);
            }
        CHECK(once, "%d workers: every task ran exactly once", nw);
        CHECK(!bad_w, "%d workers: worker index in [0, n_workers) (nested calls: 0)", nw);
        CHECK(!overlap, "%d workers: no two concurrent tasks share a worker index", nw);
        CHECK(nested_ok, "%d workers: nested parallel_for runs all its tasks", nw);
    }
    free(hits);
}

/* ================================================================================================ */
#ifdef AMXK_AMX_EMULATE

/* 64-byte LDTILECFG image, built by hand (independent of amxk's struct). */
typedef struct cfg64 {
    unsigned char b[64];
} cfg64;
static cfg64 cfg_new(void) {
    cfg64 c;
    memset(&c, 0, sizeof c);
    c.b[0] = 1;
    return c;
}
static void cfg_tile(cfg64 *c, int t, int rows, int colsb) {
    c->b[16 + 2 * t] = (unsigned char)(colsb & 0xff);
    c->b[16 + 2 * t + 1] = (unsigned char)(colsb >> 8);
    c->b[48 + t] = (unsigned char)rows;
}

/* reference value of a bf16 / f16 tile element */
static float ref_bf16_daz(unsigned h) {
    if (((h >> 7) & 0xffu) == 0) return (h & 0x8000u) ? -0.0f : 0.0f;
    return (float)test_ref_decode(AMXK_DTYPE_BF16, h);
}
static float ref_f16(unsigned h) { return (float)test_ref_decode(AMXK_DTYPE_F16, h); }
static float ref_ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

/* One dot-product case in memory: A is M x (4*K4) bytes, B is K4 x (4*N) bytes, C is M x N x 4 bytes,
   each with its own row stride (bytes). */
typedef struct dp_case {
    int M, K4, N;
    size_t sa, sb, sc;
    unsigned char *A, *B, *C, *Cout;
} dp_case;
enum { DP_BF16, DP_FP16, DP_SS, DP_SU, DP_US, DP_UU };
static const char *dp_name(int kind) {
    static const char *const names[] = {"TDPBF16PS", "TDPFP16PS", "TDPBSSD", "TDPBSUD", "TDPBUSD", "TDPBUUD"};
    return names[kind];
}
static void dp_run(int kind, int c, int a, int b) {
    switch (kind) {
    case DP_BF16: amxk_amx_emu_dpbf16ps(c, a, b); break;
    case DP_FP16: amxk_amx_emu_dpfp16ps(c, a, b); break;
    case DP_SS: amxk_amx_emu_dpbssd(c, a, b); break;
    case DP_SU: amxk_amx_emu_dpbsud(c, a, b); break;
    case DP_US: amxk_amx_emu_dpbusd(c, a, b); break;
    default: amxk_amx_emu_dpbuud(c, a, b); break;
    }
}
static unsigned rd16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* x + y rounded once to f32 (RNE), then flushed if the rounded value is denormal. x and y are exact
   doubles (f32 values, or a product of two bf16 / fp16 values: at most 22 significant bits, exponent
   >= -252, exact in double). The double sum s may itself be rounded; TwoSum gives the exact rest e,
   and when e != 0 s is moved to its odd double neighbour on e's side (round to odd, 53 >= 24 + 2
   bits), after which the double -> float conversion rounds as a single RNE rounding of x + y would.
   Written without fmaf, so it does not share the emulator's way of getting one rounding. */
static float ref_add_once(double x, double y) {
    double s = x + y, bb = s - x, e = (x - (s - bb)) + (y - bb);
    if (e != 0.0 && isfinite(s)) {
        uint64_t u;
        memcpy(&u, &s, 8);
        if ((u & 1u) == 0) s = nextafter(s, e > 0.0 ? INFINITY : -INFINITY);
    }
    return ref_ftz((float)s);
}

/* The SDM's order (Vol. 2, TDPBF16PS / TDPFP16PS "Operation"): per m, n two fp32 sums start at +0, the
   even one takes A[m][2k]*B[k][2n] for k = 0, 1, ..., the odd one A[m][2k+1]*B[k][2n+1], each step one
   rounding (FMA); then tmp = even + odd (one rounding), C = ftz(C) + tmp (one rounding); every result
   flushed if denormal. */
static void dp_ref(int kind, const dp_case *d, uint32_t *out /* M*N bits */, double *tol) {
    int m, n, k, i;
    for (m = 0; m < d->M; m++)
        for (n = 0; n < d->N; n++) {
            const unsigned char *cp = d->C + (size_t)m * d->sc + 4 * (size_t)n;
            if (kind == DP_BF16 || kind == DP_FP16) {
                float c0 = ref_ftz(test_bits_f32(rd32(cp))), sum[2] = {0.0f, 0.0f}, tmp, res;
                double exact = c0, mag = fabs(c0);
                for (k = 0; k < d->K4; k++) {
                    const unsigned char *pa = d->A + (size_t)m * d->sa + 4 * (size_t)k, *pb = d->B + (size_t)k * d->sb + 4 * (size_t)n;
                    for (i = 0; i < 2; i++) {
                        unsigned ha = rd16(pa + 2 * i), hb = rd16(pb + 2 * i);
                        double x = kind == DP_BF16 ? ref_bf16_daz(ha) : ref_f16(ha), y = kind == DP_BF16 ? ref_bf16_daz(hb) : ref_f16(hb);
                        sum[i] = ref_add_once(sum[i], x * y); /* x * y exact in double */
                        exact += x * y;
                        mag += fabs(x * y);
                    }
                }
                tmp = ref_add_once(sum[0], sum[1]);
                res = ref_add_once(c0, tmp);
                out[m * d->N + n] = test_f32_bits(res);
                if (tol) tol[m * d->N + n] = exact; /* caller compares with the double sum */
                if (tol) tol[d->M * d->N + m * d->N + n] = (2.0 * d->K4 + 1) * ldexp(mag, -24) + ldexp(1.0, -125) * (2 * d->K4 + 1);
            } else {
                int as = kind == DP_SS || kind == DP_SU, bs = kind == DP_SS || kind == DP_US;
                int64_t sum = 0;
                for (k = 0; k < 4 * d->K4; k++) {
                    unsigned char x = d->A[(size_t)m * d->sa + (size_t)k], y = d->B[(size_t)(k / 4) * d->sb + 4 * (size_t)n + (size_t)(k % 4)];
                    int64_t xv = as ? (int64_t)(signed char)x : (int64_t)x, yv = bs ? (int64_t)(signed char)y : (int64_t)y;
                    sum += xv * yv;
                }
                out[m * d->N + n] = (uint32_t)((uint64_t)rd32(cp) + (uint64_t)sum);
            }
        }
}

static void rand_bytes(unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)test_rand32();
}
/* random bf16/f16 code: mostly moderate values, some zeros, subnormals, larger exponents */
static unsigned rand_half(int fp16) {
    uint32_t r = test_rand32();
    unsigned sign = (r & 1u) << 15, sel = (r >> 1) % 20;
    if (fp16) {
        if (sel == 0) return sign;
        if (sel == 1) return sign | ((r >> 8) & 0x3ffu); /* subnormal */
        return sign | ((unsigned)(10 + (r >> 8) % 10) << 10) | ((r >> 16) & 0x3ffu);
    }
    if (sel == 0) return sign;
    if (sel == 1) return sign | ((r >> 8) & 0x7fu); /* subnormal: treated as zero */
    if (sel == 2) return sign | ((unsigned)(1 + (r >> 8) % 3) << 7) | ((r >> 16) & 0x7fu); /* tiny normals: FTZ paths */
    return sign | ((unsigned)(120 + (r >> 8) % 14) << 7) | ((r >> 16) & 0x7fu);
}

/* Fill, load, run, store, compare. Tiles: C = tc, A = ta, B = tb. Returns mismatches. */
static int dp_check(int kind, int M, int K4, int N, int tc, int ta, int tb, int big_acc) {
    dp_case d;
    size_t i;
    int m, n, bad = 0, tolbad = 0;
    cfg64 cfg = cfg_new();
    uint32_t *want = (uint32_t *)malloc((size_t)M * N * 4);
    double *ex = (double *)malloc((size_t)M * N * 2 * sizeof(double));
    d.M = M, d.K4 = K4, d.N = N;
    d.sa = 4 * (size_t)K4 + (size_t)test_randint(0, 3) * 4 + 4, d.sb = 4 * (size_t)N + 8, d.sc = 4 * (size_t)N + (size_t)test_randint(0, 2) * 4;
    /* exact-size allocations: ASan reports any read past rows x colsb */
    d.A = (unsigned char *)malloc((size_t)(M - 1) * d.sa + 4 * (size_t)K4);
    d.B = (unsigned char *)malloc((size_t)(K4 - 1) * d.sb + 4 * (size_t)N);
    d.C = (unsigned char *)malloc((size_t)(M - 1) * d.sc + 4 * (size_t)N);
    d.Cout = (unsigned char *)test_alloc((size_t)(M - 1) * d.sc + 4 * (size_t)N);
    if (kind == DP_BF16 || kind == DP_FP16) {
        for (m = 0; m < M; m++)
            for (i = 0; i < 2 * (size_t)K4; i++) {
                unsigned h = rand_half(kind == DP_FP16);
                d.A[(size_t)m * d.sa + 2 * i] = (unsigned char)h, d.A[(size_t)m * d.sa + 2 * i + 1] = (unsigned char)(h >> 8);
            }
        for (m = 0; m < K4; m++)
            for (i = 0; i < 2 * (size_t)N; i++) {
                unsigned h = rand_half(kind == DP_FP16);
                d.B[(size_t)m * d.sb + 2 * i] = (unsigned char)h, d.B[(size_t)m * d.sb + 2 * i + 1] = (unsigned char)(h >> 8);
            }
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++) {
                float c = (test_rand32() % 8 == 0) ? 0.0f : test_randf(-4.0f, 4.0f);
                uint32_t u = test_f32_bits(c);
                if (test_rand32() % 16 == 0) u = test_rand32() & 0x807fffffu; /* denormal accumulator */
                memcpy(d.C + (size_t)m * d.sc + 4 * (size_t)n, &u, 4);
            }
    } else {
        rand_bytes(d.A, (size_t)(M - 1) * d.sa + 4 * (size_t)K4);
        rand_bytes(d.B, (size_t)(K4 - 1) * d.sb + 4 * (size_t)N);
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++) {
                uint32_t u = big_acc ? (test_rand32() % 2 ? 0x7ffffff0u + (test_rand32() & 15) : 0x80000000u + (test_rand32() & 15)) : test_rand32();
                memcpy(d.C + (size_t)m * d.sc + 4 * (size_t)n, &u, 4);
            }
        if (big_acc) { /* saturating bytes: sums of +-127*127 or 255*255 push the accumulators over */
            for (i = 0; i < (size_t)(M - 1) * d.sa + 4 * (size_t)K4; i++) d.A[i] = (unsigned char)(test_rand32() % 2 ? 0x7f : 0x80);
            for (i = 0; i < (size_t)(K4 - 1) * d.sb + 4 * (size_t)N; i++) d.B[i] = (unsigned char)(test_rand32() % 2 ? 0x7f : 0xff);
        }
    }
    dp_ref(kind, &d, want, ex);
    cfg_tile(&cfg, tc, M, 4 * N);
    cfg_tile(&cfg, ta, M, 4 * K4);
    cfg_tile(&cfg, tb, K4, 4 * N);
    amxk_amx_emu_loadconfig(cfg.b);
    amxk_amx_emu_loadd(tc, d.C, d.sc);
    amxk_amx_emu_loadd(ta, d.A, d.sa);
    amxk_amx_emu_loadd(tb, d.B, d.sb);
    dp_run(kind, tc, ta, tb);
    amxk_amx_emu_stored(tc, d.Cout, d.sc);
    amxk_amx_emu_release();
    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
            uint32_t g = rd32(d.Cout + (size_t)m * d.sc + 4 * (size_t)n);
            if (g != want[m * N + n] && bad++ == 0)
                printf("  %s %dx%dx%d: C[%d][%d] = 0x%08x want 0x%08x\n", dp_name(kind), M, K4, N, m, n, g, want[m * N + n]);
            if (kind == DP_BF16 || kind == DP_FP16) {
                double e = ex[m * N + n], tol = ex[M * N + m * N + n];
                if (fabs((double)test_bits_f32(g) - e) > tol && tolbad++ == 0)
                    printf("  %s %dx%dx%d: C[%d][%d] = %.9g, double sum %.9g, tol %.3g\n", dp_name(kind), M, K4, N, m, n,
                           (double)test_bits_f32(g), e, tol);
            }
        }
    /* bytes between rows (stride > colsb) untouched */
    for (m = 0; m + 1 < M; m++)
        for (i = 4 * (size_t)N; i < d.sc; i++)
            if (d.Cout[(size_t)m * d.sc + i] != 0xff) bad++;
    if (!test_guard_ok(d.Cout)) bad++;
    free(d.A), free(d.B), free(d.C), test_free(d.Cout), free(want), free(ex);
    return bad + tolbad;
}

/* One 1 x 1 TDPBF16PS (fp16 = 0) or TDPFP16PS (fp16 = 1) over K4 pairs: A's row is a[0 .. 2*K4-1],
   B's row k is b[2k], b[2k+1] (even, odd); C starts as the bits c; returns C's bits afterwards. */
static uint32_t dp_one(int fp16, int K4, const uint16_t *a, const uint16_t *b, uint32_t c) {
    cfg64 cfg = cfg_new();
    unsigned char A[64], B[64], C[4];
    int i;
    for (i = 0; i < 2 * K4; i++) {
        A[2 * i] = (unsigned char)(a[i] & 0xff), A[2 * i + 1] = (unsigned char)(a[i] >> 8);
        B[2 * i] = (unsigned char)(b[i] & 0xff), B[2 * i + 1] = (unsigned char)(b[i] >> 8);
    }
    for (i = 0; i < 4; i++) C[i] = (unsigned char)(c >> (8 * i));
    cfg_tile(&cfg, 0, 1, 4), cfg_tile(&cfg, 1, 1, 4 * K4), cfg_tile(&cfg, 2, K4, 4);
    amxk_amx_emu_loadconfig(cfg.b);
    amxk_amx_emu_loadd(0, C, 4), amxk_amx_emu_loadd(1, A, 64), amxk_amx_emu_loadd(2, B, 4);
    if (fp16) amxk_amx_emu_dpfp16ps(0, 1, 2);
    else amxk_amx_emu_dpbf16ps(0, 1, 2);
    amxk_amx_emu_stored(0, C, 4);
    amxk_amx_emu_release();
    return rd32(C);
}

static void test_amx_dot(void) {
    static const int shapes[][3] = {{16, 16, 16}, {3, 5, 7}, {1, 1, 1}, {16, 1, 16}, {1, 16, 1}, {7, 16, 3}, {16, 8, 16}, {2, 3, 16}};
    int kind, s, r;
    TEST_SECTION("AMX emulator: dot products vs the SDM order");
    for (kind = DP_BF16; kind <= DP_UU; kind++) {
        int bad = 0;
        for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
            for (r = 0; r < 4; r++) {
                test_case_begin(test_case_mix(test_case_id("core amx dot", (uint64_t)kind), (uint64_t)(s * 4 + r)));
                bad += dp_check(kind, shapes[s][0], shapes[s][1], shapes[s][2], r % 3, 3 + r % 2, 7 - r % 2, kind >= DP_SS && r == 3);
            }
        for (r = 0; r < 40; r++) {
            int M, K4, N;
            test_case_begin(test_case_mix(test_case_id("core amx dot random shape", (uint64_t)kind), (uint64_t)r));
            M = test_randint(1, 16), K4 = test_randint(1, 16), N = test_randint(1, 16);
            bad += dp_check(kind, M, K4, N, 0, 1, 2, kind >= DP_SS && r % 4 == 0);
        }
        CHECK(bad == 0, "%s: %d mismatches", dp_name(kind), bad);
    }
    /* Hand-made cases, each computed by hand in the SDM's order (see dp_ref); "old" is what an emulator
       that adds each product straight into C (C = ftz(C + a0*b0), then C = ftz(C + a1*b1)) gives.
       bf16: 1 = 0x3f80, 0.5 = 0x3f00, 2^e = (e + 127) << 7; fp16: 2^e = (e + 15) << 10. */
    {
        uint16_t a[32], b[32];
        uint32_t got;
        int i;
        /* C = 1 and 32 products of 2^-25 (A all 2^-25 = 0x3300, B all 1). Even sum: j * 2^-25 is exact for
           every j <= 16, so it ends at 16 * 2^-25 = 2^-21; the odd sum likewise 2^-21; tmp = 2^-21 + 2^-21
           = 2^-20 exactly; C = 1 + 2^-20, exact in fp32 (21 bits) = 0x3f800008. Old: 1 + 2^-25 is below
           half an ulp of 1 (2^-24), so each step rounds back to 1: 1.0. (Adding the pair first,
           2^-24, and then C, also gives 1: a tie rounded to even.) */
        for (i = 0; i < 32; i++) a[i] = 0x3300, b[i] = 0x3f80;
        got = dp_one(0, 16, a, b, 0x3f800000u);
        CHECK(got == 0x3f800008u, "TDPBF16PS sums the products before adding C: 1 + 32 x 2^-25 = 1 + 2^-20 (got 0x%08x)", got);
        /* the same with fp16: 2^-13 (0x0800) * 2^-12 (0x0c00) = 2^-25 */
        for (i = 0; i < 32; i++) a[i] = 0x0800, b[i] = 0x0c00;
        got = dp_one(1, 16, a, b, 0x3f800000u);
        CHECK(got == 0x3f800008u, "TDPFP16PS sums the products before adding C: 1 + 32 x 2^-25 = 1 + 2^-20 (got 0x%08x)", got);
        /* Even and odd sums kept apart until after the k loop. C = 0, A = [2^15, 2^15, 1, 1],
           B = [2^15, -2^15], [1, 1]. Even: 2^30, then 2^30 + 1 rounds to 2^30 (ulp 2^7); odd: -2^30, then
           -2^30 + 1 = -(2^30 - 1) rounds to -2^30 (its neighbours are -(2^30 - 64) and -2^30);
           tmp = 2^30 - 2^30 = +0; C = 0 + 0 = +0. Old: 2^30, 0, 1, 2: 2.0. */
        a[0] = 0x4700, a[1] = 0x4700, a[2] = 0x3f80, a[3] = 0x3f80;
        b[0] = 0x4700, b[1] = 0xc700, b[2] = 0x3f80, b[3] = 0x3f80;
        got = dp_one(0, 2, a, b, 0);
        CHECK(got == 0, "TDPBF16PS adds the even and odd sums after the k loop: +2^30 + 1 and -2^30 + 1 give 0 (got 0x%08x)", got);
        /* C's own value enters only at the end. C = 2^30 (0x4e800000), A = [2^15, 1], B = [-2^15, 1]:
           even -2^30, odd 1, tmp = -2^30 + 1 rounds to -2^30 (as above), C = 2^30 - 2^30 = +0.
           Old: 2^30 - 2^30 = 0, then 0 + 1 = 1.0. */
        a[0] = 0x4700, a[1] = 0x3f80, b[0] = 0xc700, b[1] = 0x3f80;
        got = dp_one(0, 1, a, b, 0x4e800000u);
        CHECK(got == 0, "TDPBF16PS adds C after the products: 2^30 + (-2^30 + 1) gives 0 (got 0x%08x)", got);
        /* The sums start at +0, not at C. C = -0, A = [-1, -1], B = [0, 0]: the products are -0, each sum
           is +0 + -0 = +0 (RNE), tmp = +0, C = -0 + +0 = +0. Old: -0 + -0 = -0, twice: -0. */
        a[0] = 0xbf80, a[1] = 0xbf80, b[0] = 0, b[1] = 0;
        got = dp_one(0, 1, a, b, 0x80000000u);
        CHECK(got == 0, "TDPBF16PS: C = -0 plus products -0 gives +0 (the sums start at +0) (got 0x%08x)", got);
        /* NaNs. A NaN C stays C, quieted, whatever the products hold (seen on AMX silicon, an Emerald Rapids:
           bench/results.md "AMX silicon"). C = sNaN 0x7f800001 with inf x 0 in the even lane (the default
           NaN 0xffc00000 there): 0x7fc00001. C = 0xffc12345 with a NaN A (0x7fc1): 0xffc12345. C finite and
           a NaN A (sNaN 0x7f81, widened 0x7f810000): the sum's NaN, quieted, 0x7fc10000. */
        a[0] = 0x7f80, a[1] = 0, b[0] = 0, b[1] = 0;
        got = dp_one(0, 1, a, b, 0x7f800001u);
        CHECK(got == 0x7fc00001u, "TDPBF16PS: a NaN C (sNaN 0x7f800001) wins over inf x 0: 0x7fc00001 (got 0x%08x)", got);
        a[0] = 0x7fc1, a[1] = 0x3f80, b[0] = 0x3f80, b[1] = 0x3f80;
        got = dp_one(0, 1, a, b, 0xffc12345u);
        CHECK(got == 0xffc12345u, "TDPBF16PS: a NaN C (0xffc12345) wins over a NaN A (got 0x%08x)", got);
        a[0] = 0x7f81, a[1] = 0x3f80, b[0] = 0x3f80, b[1] = 0x3f80;
        got = dp_one(0, 1, a, b, 0x3f800000u);
        CHECK(got == 0x7fc10000u, "TDPBF16PS: C = 1 and a NaN A (sNaN 0x7f81): 0x7fc10000 (got 0x%08x)", got);
        /* Each step is one FMA: a product below fp32's normal range is not rounded on its own. C = 0,
           A = [2^-60, 0, 2^-74, 0, 1.5 * 2^-75, 0], B = [2^-65, 0], [2^-74, 0], [2^-75, 0]. Even sum: 2^-125;
           + 2^-148 = 2^-125 + 2^-148 (exact: the ulp on [2^-125, 2^-124) is 2^-148; last bit odd);
           + 1.5 * 2^-150 = 0.375 ulp, rounds down: 2^-125 + 2^-148 = 0x01000001. Odd sum 0, tmp and C the
           same. Rounding the product first (to the fp32 denormal 2^-149, 0.5 ulp) would make a tie,
           rounded to even: 2^-125 + 2^-147 = 0x01000002 (what the old emulator gave). */
        a[0] = 0x2180, a[1] = 0, a[2] = 0x1a80, a[3] = 0, a[4] = 0x1a40, a[5] = 0;
        b[0] = 0x1f00, b[1] = 0, b[2] = 0x1a80, b[3] = 0, b[4] = 0x1a00, b[5] = 0;
        got = dp_one(0, 3, a, b, 0);
        CHECK(got == 0x01000001u, "TDPBF16PS: each step is one FMA rounding, tiny products included (got 0x%08x)", got);
        /* FTZ of the horizontal sum. C = -2^-126 (0x80800000), A = [1.5 * 2^-63, -2^-63], B = [2^-63, 2^-63]:
           even 1.5 * 2^-126, odd -2^-126 (both normal), tmp = 2^-127 is denormal: flushed to +0;
           C = -2^-126 + 0 = -2^-126. (Unflushed, -2^-126 + 2^-127 = -2^-127 would flush to -0.) */
        a[0] = 0x2040, a[1] = 0xa000, b[0] = 0x2000, b[1] = 0x2000;
        got = dp_one(0, 1, a, b, 0x80800000u);
        CHECK(got == 0x80800000u, "TDPBF16PS flushes a denormal horizontal sum (got 0x%08x)", got);
        /* 2^-70 * 2^-70 = 2^-140 is an f32 denormal: flushed */
        a[0] = 0x1c80, a[1] = 0, b[0] = 0x1c80, b[1] = 0;
        got = dp_one(0, 1, a, b, 0);
        CHECK(got == 0, "TDPBF16PS flushes a denormal result (got 0x%08x)", got);
        /* bf16 denormal input 0x0040 times 2^100 (0x7180): DAZ gives 0 */
        a[0] = 0x0040, a[1] = 0, b[0] = 0x7180, b[1] = 0;
        got = dp_one(0, 1, a, b, 0);
        CHECK((got & 0x7fffffffu) == 0, "TDPBF16PS treats bf16 denormal inputs as zero (got 0x%08x)", got);
        /* fp16 denormal 2^-24 (0x0001) times 1024 (0x6400) = 2^-14 (0x38800000): honoured */
        a[0] = 0x0001, a[1] = 0, b[0] = 0x6400, b[1] = 0;
        got = dp_one(1, 1, a, b, 0);
        CHECK(got == 0x38800000u, "TDPFP16PS honours fp16 denormal inputs (got 0x%08x)", got);
    }
    {
        cfg64 cfg = cfg_new();
        unsigned char A[4], B[4], C[4];
        cfg_tile(&cfg, 0, 1, 4), cfg_tile(&cfg, 1, 1, 4), cfg_tile(&cfg, 2, 1, 4);
        amxk_amx_emu_loadconfig(cfg.b);
        /* int32 wraparound: INT32_MAX + 127*127*4 */
        memset(A, 0x7f, 4), memset(B, 0x7f, 4);
        C[0] = 0xff, C[1] = 0xff, C[2] = 0xff, C[3] = 0x7f;
        amxk_amx_emu_loadd(0, C, 4), amxk_amx_emu_loadd(1, A, 4), amxk_amx_emu_loadd(2, B, 4);
        amxk_amx_emu_dpbssd(0, 1, 2);
        amxk_amx_emu_stored(0, C, 4);
        CHECK(rd32(C) == (uint32_t)(0x7fffffffu + 4u * 127u * 127u), "TDPBSSD wraps (got 0x%08x)", rd32(C));
        amxk_amx_emu_release();
    }
}

static void test_amx_load_store(void) {
    cfg64 cfg = cfg_new(), back;
    const int rows = 5, colsb = 20;
    const size_t stride = 36;
    unsigned char *src = (unsigned char *)malloc((rows - 1) * stride + colsb); /* exact: no over-read */
    unsigned char *dst = (unsigned char *)test_alloc((rows - 1) * stride + colsb);
    int r, ok = 1, c;
    TEST_SECTION("AMX emulator: TILELOADD / TILESTORED / TILEZERO / config");
    rand_bytes(src, (rows - 1) * stride + colsb);
    cfg_tile(&cfg, 4, rows, colsb);
    amxk_amx_emu_loadconfig(cfg.b);
    amxk_amx_emu_storeconfig(back.b);
    CHECK(memcmp(back.b, cfg.b, 64) == 0, "STTILECFG returns the loaded config");
    amxk_amx_emu_loadd(4, src, stride);
    amxk_amx_emu_stored(4, dst, stride);
    for (r = 0; r < rows; r++) {
        ok &= memcmp(dst + r * stride, src + r * stride, colsb) == 0;
        if (r + 1 < rows) ok &= all_bytes(dst + r * stride + colsb, stride - colsb, 0xff);
    }
    CHECK(ok, "TILESTORED writes rows x colsb, leaves the stride gaps alone");
    CHECK(test_guard_ok(dst), "TILESTORED writes nothing past the last row");
    /* the loaded tile used as B (5 rows of 20 bytes) with A = ones: C = column sums */
    {
        cfg64 c2 = cfg_new();
        unsigned char ones[20], out[20], Ab[20];
        int32_t want[5];
        int n, k;
        cfg_tile(&c2, 0, 1, 20), cfg_tile(&c2, 1, 1, 20), cfg_tile(&c2, 4, 5, 20);
        amxk_amx_emu_loadconfig(c2.b);
        memset(ones, 1, sizeof ones), memset(out, 0, sizeof out);
        memcpy(Ab, ones, 20);
        amxk_amx_emu_loadd(1, Ab, 20);
        amxk_amx_emu_loadd(4, src, stride);
        amxk_amx_emu_zero(0);
        amxk_amx_emu_dpbuud(0, 1, 4);
        amxk_amx_emu_stored(0, out, 20);
        for (n = 0; n < 5; n++) {
            want[n] = 0;
            for (k = 0; k < 20; k++) want[n] += src[(k / 4) * stride + 4 * n + k % 4];
        }
        CHECK(memcmp(out, want, 20) == 0, "TILEZERO + TDPBUUD column sums of a loaded tile");
        amxk_amx_emu_zero(4);
        memset(dst, 0x33, (rows - 1) * stride + colsb);
        amxk_amx_emu_stored(4, dst, stride);
        ok = 1;
        for (r = 0; r < rows; r++) ok &= all_bytes(dst + r * stride, colsb, 0);
        CHECK(ok, "TILEZERO zeroes the tile");
        amxk_amx_emu_release();
    }
    amxk_amx_emu_storeconfig(back.b);
    CHECK(all_bytes(back.b, 64, 0), "STTILECFG after TILERELEASE is all zero");
    /* palette 0 = release */
    amxk_amx_emu_loadconfig(cfg.b);
    {
        cfg64 z;
        memset(&z, 0, sizeof z);
        amxk_amx_emu_loadconfig(z.b);
        amxk_amx_emu_storeconfig(back.b);
        CHECK(all_bytes(back.b, 64, 0), "LDTILECFG palette 0 releases");
    }
    for (c = 0; c < 8; c++) cfg_tile(&cfg, c, 16, 64);
    amxk_amx_emu_loadconfig(cfg.b);
    amxk_amx_emu_storeconfig(back.b);
    CHECK(memcmp(back.b, cfg.b, 64) == 0, "full 8 x 16 x 64 config accepted");
    amxk_amx_emu_release();
    free(src);
    test_free(dst);
}

/* ---- faults ---- */
static jmp_buf fault_jmp;
static char fault_msg[256];
static int fault_count;
static void on_fault(const char *m) {
    fault_count++;
    snprintf(fault_msg, sizeof fault_msg, "%s", m ? m : "");
    longjmp(fault_jmp, 1);
}

typedef enum { OP_CFG, OP_LOAD, OP_STORE, OP_ZERO, OP_DP } op_kind;
typedef struct emu_op {
    op_kind kind;
    int t, a, b, dp;
    const void *cfg;
    void *buf;
    size_t stride;
} emu_op;

/* Runs the op; 1 if it faulted (the handler longjmps back here). */
static int run_op(const emu_op *op) {
    fault_msg[0] = 0;
    if (setjmp(fault_jmp)) return 1;
    switch (op->kind) {
    case OP_CFG: amxk_amx_emu_loadconfig(op->cfg); break;
    case OP_LOAD: amxk_amx_emu_loadd(op->t, op->buf, op->stride); break;
    case OP_STORE: amxk_amx_emu_stored(op->t, op->buf, op->stride); break;
    case OP_ZERO: amxk_amx_emu_zero(op->t); break;
    case OP_DP: dp_run(op->dp, op->t, op->a, op->b); break;
    }
    return 0;
}
static int contains_ci(const char *h, const char *n) {
    size_t i, j;
    for (i = 0; h[i]; i++) {
        for (j = 0; n[j] && h[i + j] && tolower((unsigned char)h[i + j]) == tolower((unsigned char)n[j]); j++) {
        }
        if (!n[j]) return 1;
    }
    return 0;
}
static void expect_fault(const emu_op *op, const char *needle, const char *what) {
    int f = run_op(op);
    CHECK(f, "%s: faults", what);
    if (f) CHECK(fault_msg[0] && contains_ci(fault_msg, needle), "%s: message \"%s\" names the problem (\"%s\")", what, fault_msg, needle);
}

/* Sets up tiles 0 (4x16), 1 (4x8), 2 (2x16), 3 (4x16), with known data; returns their images. */
static unsigned char g_tile_img[4][16 * 64];
static void setup_tiles(void) {
    cfg64 c = cfg_new();
    int t;
    cfg_tile(&c, 0, 4, 16), cfg_tile(&c, 1, 4, 8), cfg_tile(&c, 2, 2, 16), cfg_tile(&c, 3, 4, 16);
    amxk_amx_emu_loadconfig(c.b);
    for (t = 0; t < 4; t++) {
        rand_bytes(g_tile_img[t], sizeof g_tile_img[t]);
        amxk_amx_emu_loadd(t, g_tile_img[t], 64);
    }
}
static int tiles_unchanged(void) {
    unsigned char out[16 * 64];
    static const int rows[4] = {4, 4, 2, 4}, colsb[4] = {16, 8, 16, 16};
    int t, r, ok = 1;
    emu_op st;
    memset(&st, 0, sizeof st);
    st.kind = OP_STORE, st.buf = out, st.stride = 64;
    for (t = 0; t < 4; t++) {
        memset(out, 0, sizeof out);
        st.t = t;
        if (run_op(&st)) return 0;
        for (r = 0; r < rows[t]; r++) ok &= memcmp(out + 64 * r, g_tile_img[t] + 64 * r, (size_t)colsb[t]) == 0;
    }
    return ok;
}

static void test_amx_faults(void) {
    unsigned char buf[16 * 64];
    emu_op op;
    cfg64 good, c;
    amxk_amx_fault_fn prev;
    int i, kind;
    TEST_SECTION("AMX emulator: faults");
    prev = amxk_amx_emu_set_fault_handler(on_fault);
    CHECK(prev != NULL, "a default fault handler is installed");
    memset(buf, 0, sizeof buf);
    memset(&op, 0, sizeof op);

    amxk_amx_emu_release();
    op.kind = OP_ZERO, op.t = 0;
    expect_fault(&op, "LDTILECFG", "TILEZERO before LDTILECFG");
    op.kind = OP_LOAD, op.buf = buf, op.stride = 64;
    expect_fault(&op, "LDTILECFG", "TILELOADD before LDTILECFG");
    op.kind = OP_DP, op.t = 0, op.a = 1, op.b = 2, op.dp = DP_BF16;
    expect_fault(&op, "LDTILECFG", "TDPBF16PS before LDTILECFG");

    setup_tiles();
    amxk_amx_emu_release();
    op.kind = OP_STORE, op.t = 0, op.buf = buf;
    expect_fault(&op, "RELEASE", "TILESTORED after TILERELEASE");

    /* bad configurations: each faults, and the state before it (config + tile data) survives */
    good = cfg_new();
    cfg_tile(&good, 0, 4, 16), cfg_tile(&good, 1, 4, 8), cfg_tile(&good, 2, 2, 16), cfg_tile(&good, 3, 4, 16);
    {
        struct {
            int what; /* 0 palette, 1 rows 17, 2 colsb 65, 3 reserved, 4 rows only, 5 colsb only, 6 start_row, 7 tile 8 */
            const char *needle, *name;
        } cases[] = {{0, "palette", "palette 2"},       {1, "rows", "rows 17"},          {2, "colsb", "colsb 65"},
                     {3, "reserved", "reserved byte"},  {4, "both", "rows set, colsb 0"}, {5, "both", "colsb set, rows 0"},
                     {6, "start_row", "start_row 1"},  {7, "8..15", "tile 8 configured"}};
        for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            int rb;
            for (rb = 0; rb < (cases[i].what == 3 ? 14 : 1); rb++) {
                cfg64 back;
                char name[64];
                c = good;
                switch (cases[i].what) {
                case 0: c.b[0] = 2; break;
                case 1: cfg_tile(&c, 5, 17, 4); break;
                case 2: cfg_tile(&c, 5, 1, 65); break;
                case 3: c.b[2 + rb] = 1; break;
                case 4: cfg_tile(&c, 5, 3, 0); break;
                case 5: cfg_tile(&c, 5, 0, 12); break;
                case 6: c.b[1] = 1; break;
                default: cfg_tile(&c, 8, 1, 4); break;
                }
                setup_tiles();
                op.kind = OP_CFG, op.cfg = c.b;
                snprintf(name, sizeof name, "LDTILECFG %s%s", cases[i].name, cases[i].what == 3 ? (rb ? "" : " (byte 2..15)") : "");
                if (cases[i].what == 3 && rb) {
                    int f = run_op(&op);
                    CHECK(f, "LDTILECFG reserved byte %d set faults", 2 + rb);
                } else {
                    expect_fault(&op, cases[i].needle, name);
                }
                amxk_amx_emu_storeconfig(back.b);
                CHECK(memcmp(back.b, good.b, 64) == 0, "%s: the previous config stays", name);
                CHECK(tiles_unchanged(), "%s: tile data unchanged", name);
            }
        }
    }

    /* dot-product shape faults; C (tile 0 or 3) is unchanged afterwards */
    for (kind = DP_BF16; kind <= DP_UU; kind++) {
        struct {
            int rows_c, colsb_c, rows_a, colsb_a, rows_b, colsb_b, tc, ta, tb;
            const char *needle, *name;
        } cases[] = {
            {4, 16, 3, 8, 2, 16, 0, 1, 2, "rows", "C.rows != A.rows"},
            {4, 16, 4, 8, 2, 12, 0, 1, 2, "colsb", "C.colsb != B.colsb"},
            {4, 16, 4, 8, 3, 16, 0, 1, 2, "B rows", "A.colsb != 4*B.rows"},
            {4, 16, 4, 8, 2, 16, 0, 0, 2, "distinct", "C == A"},
            {4, 16, 4, 8, 2, 16, 0, 1, 0, "distinct", "C == B"},
            {4, 16, 4, 8, 2, 16, 0, 1, 1, "distinct", "A == B"},
            {4, 16, 4, 8, 2, 16, 8, 1, 2, "0..7", "C = tmm8"},
            {4, 16, 4, 8, 2, 16, 0, 8, 2, "0..7", "A = tmm8"},
            {4, 16, 4, 8, 2, 16, 0, 1, -1, "0..7", "B = tmm-1"},
            {4, 16, 4, 8, 2, 16, 0, 1, 5, "configured", "B unconfigured"},
        };
        for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            char name[80];
            unsigned char before[16 * 64], after[16 * 64];
            int tc = cases[i].tc >= 0 && cases[i].tc < 8 ? cases[i].tc : 3, r, ok = 1;
            c = cfg_new();
            cfg_tile(&c, 0, cases[i].rows_c, cases[i].colsb_c);
            cfg_tile(&c, 1, cases[i].rows_a, cases[i].colsb_a);
            cfg_tile(&c, 2, cases[i].rows_b, cases[i].colsb_b);
            cfg_tile(&c, 3, 4, 16);
            amxk_amx_emu_loadconfig(c.b);
            rand_bytes(before, sizeof before);
            for (r = 0; r < 4; r++) amxk_amx_emu_loadd(r, before, 64);
            snprintf(name, sizeof name, "%s %s", dp_name(kind), cases[i].name);
            op.kind = OP_DP, op.dp = kind, op.t = cases[i].tc, op.a = cases[i].ta, op.b = cases[i].tb;
            expect_fault(&op, cases[i].needle, name);
            memset(after, 0, sizeof after);
            amxk_amx_emu_stored(tc, after, 64);
            for (r = 0; r < cases[i].rows_c; r++) ok &= memcmp(after + 64 * r, before + 64 * r, (size_t)cases[i].colsb_c) == 0;
            CHECK(ok, "%s: destination tile unchanged", name);
        }
        amxk_amx_emu_release();
    }
    /* tile index 8 / -1 / unconfigured tile for loads, stores, zero */
    setup_tiles();
    op.kind = OP_LOAD, op.t = 8, op.buf = buf, op.stride = 64;
    expect_fault(&op, "0..7", "TILELOADD tmm8");
    op.kind = OP_STORE, op.t = -1;
    expect_fault(&op, "0..7", "TILESTORED tmm-1");
    op.kind = OP_ZERO, op.t = 8;
    expect_fault(&op, "0..7", "TILEZERO tmm8");
    op.kind = OP_LOAD, op.t = 6;
    expect_fault(&op, "configured", "TILELOADD of an unconfigured tile");
    CHECK(tiles_unchanged(), "tiles unchanged by faulting loads / stores / zero");
    amxk_amx_emu_release();

    CHECK(amxk_amx_emu_set_fault_handler(prev) == on_fault, "set_fault_handler returns the previous handler");
    CHECK(amxk_amx_emu_set_fault_handler(NULL) == prev, "restore");
    CHECK(amxk_amx_emu_set_fault_handler(prev) == prev, "NULL installs the default handler");
    printf("%d faults caught\n", fault_count);
}

/* The features the emulated tile unit presents (amxk_amx_emu_set_features): a TDP of a feature it does
   not present faults (as #UD on hardware), contexts initialised afterwards see only those, contexts
   from before that claim a withdrawn feature are refused, and the AMX level needs TILE, BF16, INT8. */
static void test_amx_emu_features(void) {
    const uint32_t all = AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16;
    const uint32_t spr = AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8;
    amxk_amx_fault_fn prev;
    amxk_ctx before, after;
    emu_op op;
    uint32_t was;
    float dst[2];
    const uint16_t src[2] = {0x3f80, 0x4000};
    int kind;
    TEST_SECTION("AMX emulator: presented features (Sapphire Rapids / Granite Rapids)");
    was = amxk_amx_emu_set_features(all);
    memset(&before, 0, sizeof before);
    CHECK(amxk_ctx_init(&before) == AMXK_OK && before.tier == AMXK_TIER_AMX && (before.features & all) == all, "all four: AMX level with AMX-FP16");
    prev = amxk_amx_emu_set_fault_handler(on_fault);
    memset(&op, 0, sizeof op);
    CHECK(amxk_amx_emu_set_features(spr) == all, "set_features returns the previous set");
    CHECK((amxk_cpu_init()->emulated & all) == spr, "amxk_cpu.emulated follows: 0x%x", (unsigned)amxk_cpu_init()->emulated);
    setup_tiles();
    op.kind = OP_DP, op.t = 0, op.a = 1, op.b = 2;
    for (kind = 0; kind < 6; kind++) {
        int f;
        op.dp = kind;
        f = run_op(&op);
        if (kind == DP_FP16) {
            CHECK(f && contains_ci(fault_msg, "AMX-FP16"), "without AMX-FP16: TDPFP16PS faults (%s)", fault_msg);
            CHECK(tiles_unchanged(), "the faulting TDPFP16PS changed no tile");
        } else {
            CHECK(!f, "without AMX-FP16: %s runs (%s)", dp_name(kind), fault_msg);
            setup_tiles();
        }
    }
    amxk_amx_emu_release();
    memset(&after, 0, sizeof after);
    CHECK(amxk_ctx_init(&after) == AMXK_OK && after.tier == AMXK_TIER_AMX && (after.features & all) == spr,
          "a context initialised now: AMX level without AMX-FP16 (features 0x%x)", (unsigned)after.features);
    CHECK(amxk_convert(&before, dst, AMXK_DTYPE_F32, src, AMXK_DTYPE_BF16, 2) == AMXK_ERR_CONTEXT,
          "a context from before that claims AMX-FP16 is refused");
    CHECK(amxk_convert(&after, dst, AMXK_DTYPE_F32, src, AMXK_DTYPE_BF16, 2) == AMXK_OK && dst[1] == 2.0f, "the new one works");
    amxk_amx_emu_set_features(AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16);
    memset(&after, 0, sizeof after);
    after.isa_allow = AMXK_TIER_BIT(AMXK_TIER_AMX);
    CHECK(amxk_ctx_init(&after) == AMXK_ERR_UNSUPPORTED && !(amxk_cpu_init()->tiers & AMXK_TIER_BIT(AMXK_TIER_AMX)),
          "without AMX-INT8 there is no AMX level");
    setup_tiles();
    op.dp = DP_SS;
    CHECK(run_op(&op) && contains_ci(fault_msg, "AMX-INT8"), "without AMX-INT8: TDPBSSD faults (%s)", fault_msg);
    amxk_amx_emu_release();
    amxk_amx_emu_set_features(0);
    {
        cfg64 c = cfg_new();
        cfg_tile(&c, 0, 1, 4);
        op.kind = OP_CFG, op.cfg = c.b;
        CHECK(run_op(&op) && contains_ci(fault_msg, "AMX-TILE"), "without AMX-TILE: LDTILECFG faults (%s)", fault_msg);
    }
    amxk_amx_emu_set_fault_handler(prev);
    amxk_amx_emu_set_features(was);
    CHECK(amxk_cpu_init()->tiers & AMXK_TIER_BIT(AMXK_TIER_AMX), "restored: the AMX level is back");
}

/* Emulated dot products from several pool threads at once: tile state is per thread. */
typedef struct mt_job {
    uint64_t seed;
    int fails[64];
} mt_job;
static void mt_task(void *p, size_t t, int w) {
    mt_job *j = (mt_job *)p;
    uint64_t s = j->seed + t * 7919;
    int it, M = 1 + (int)(t % 16), K4 = 1 + (int)((t * 7) % 16), N = 1 + (int)((t * 5) % 16), m, n, k;
    cfg64 cfg = cfg_new();
    unsigned char A[16 * 64], B[16 * 64];
    int32_t C[16 * 16], want[16 * 16];
    (void)w;
    for (k = 0; k < 16 * 64; k++) A[k] = (unsigned char)test_rng_next(&s), B[k] = (unsigned char)test_rng_next(&s);
    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
            int32_t sum = 0;
            for (k = 0; k < 4 * K4; k++) sum += (int32_t)(signed char)A[m * 64 + k] * (int32_t)B[(k / 4) * 64 + 4 * n + k % 4];
            want[m * 16 + n] = sum;
        }
    /* each task uses its own tile numbering, so interleaved state would mismatch shapes or data */
    cfg_tile(&cfg, (int)(t % 3), M, 4 * N);
    cfg_tile(&cfg, 3 + (int)(t % 2), M, 4 * K4);
    cfg_tile(&cfg, 6 + (int)(t % 2), K4, 4 * N);
    for (it = 0; it < 20; it++) {
        amxk_amx_emu_loadconfig(cfg.b);
        amxk_amx_emu_zero((int)(t % 3));
        amxk_amx_emu_loadd(3 + (int)(t % 2), A, 64);
        amxk_amx_emu_loadd(6 + (int)(t % 2), B, 64);
        amxk_amx_emu_dpbsud((int)(t % 3), 3 + (int)(t % 2), 6 + (int)(t % 2));
        memset(C, 0, sizeof C);
        amxk_amx_emu_stored((int)(t % 3), C, 64);
        amxk_amx_emu_release();
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++)
                if (C[m * 16 + n] != want[m * 16 + n]) j->fails[t]++;
    }
}
static void test_amx_threads(void) {
    mt_job j;
    int t, fails = 0;
    TEST_SECTION("AMX emulator: per-thread tile state");
    memset(&j, 0, sizeof j);
    test_case_begin(test_case_id("core amx threads", 0));
    j.seed = test_rand();
    amxk_pool_parallel_for(test_pool(7), mt_task, &j, 64);
    for (t = 0; t < 64; t++) fails += j.fails[t];
    CHECK(fails == 0, "concurrent emulated TDPBSUD from 7 workers: %d mismatches", fails);
}
#endif /* AMXK_AMX_EMULATE */

int main(void) {
    test_init();
    test_api_basics();
    test_ctx_init();
    test_cpu();
    test_decode();
    test_roundtrip();
    build_sample();
    test_encode();
    test_tails();
    test_data_independence();
    test_ftz_daz();
    test_convert_errors();
    test_pool_basic();
#ifdef AMXK_AMX_EMULATE
    { /* the emulator's own tests use every instruction: the whole tile unit, whatever this run denies */
        const uint32_t was = amxk_amx_emu_set_features(AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16);
        test_amx_dot();
        test_amx_load_store();
        test_amx_faults();
        test_amx_threads();
        test_amx_emu_features();
        amxk_amx_emu_set_features(was);
    }
#else
    printf("AMX emulator tests skipped (build with -DAMXK_AMX_EMULATE)\n");
#endif
    free(sample);
    return test_finish();
}
