/* tests/test_vmath.c - the width-generic vector layer of amxk.h (amxk__vexp / vsigmoid / vsilu,
   amxk__vload / vstore) at every vector width, against fp64 references and the scalar element
   functions.

   The layer is private (amxk__ names); modules build their elementwise kernels on it, so it is
   tested here directly, once per level: the avx2 instance at the avx2 level, the avx512 instance at
   every AVX-512 level (native or, in the _emu512 build, through SIMDe). The inputs are a fixed
   sweep plus special values: nothing random, the same cases on every machine. */
#define AMXK_IMPLEMENTATION
#include "test.h"

#define NX 4096
#define NG 65536

static float xs[NX], xg[NG]; /* xg: gelu only, a uniform sweep of [-20, 20] (its two regions and the cut at -16) */

/* x values: a sweep of [-100, 100] whose steps hit every binade, and the special values. */
static void make_inputs(void) {
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 87.0f, -87.0f, 88.0f, -88.0f, 1e-30f, -1e-30f,
                                    0.5f, -0.5f, 20.0f, -20.0f, 1e-7f, -1e-7f};
    size_t i, ns = sizeof special / sizeof special[0];
    for (i = 0; i < ns; i++) xs[i] = special[i];
    for (i = ns; i < NX; i++) {
        double u = (double)(i - ns) / (double)(NX - ns - 1); /* [0, 1] */
        double m = ldexp(1.0 + u * 0.999, (int)(u * 36.0) - 30); /* 2^-30 .. 2^6.6 */
        xs[i] = (float)((i & 1) ? -m : m);
    }
    for (i = 0; i < NG; i++) xg[i] = (float)(-20.0 + 40.0 * (double)i / (double)(NG - 1));
}

#if AMXK__HAS_AVX2 /* (no vector layer to test elsewhere, e.g. on aarch64) */
/* ulp of the f32 nearest to w (w > 0) */
static double ulp_of(double w) {
    int e;
    (void)frexp(w, &e);
    return ldexp(1.0, (e - 24 < -149) ? -149 : e - 24);
}

typedef void (*vfun)(const float *x, float *y, int op); /* 16 lanes; op 0 exp, 1 sigmoid, 2 silu */

#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN
static void run_avx2(const float *x, float *y, int op) {
    int h;
    for (h = 0; h < 16; h += 8) {
        __m256 v = _mm256_loadu_ps(x + h);
        v = op == 0 ? amxk__vexp__avx2(v) : op == 1 ? amxk__vsigmoid__avx2(v) : op == 2 ? amxk__vsilu__avx2(v) : amxk__vgelu_erf__avx2(v);
        _mm256_storeu_ps(y + h, v);
    }
}
/* 16 values through vload/vstore of dtype t: loads x (as t), stores to out (as t) */
static void ldst_avx2(const void *x, void *out, amxk_dtype t) {
    size_t es = amxk_dtype_size(t);
    amxk__vstore__avx2(out, t, amxk__vload__avx2(x, t));
    amxk__vstore__avx2((char *)out + 8 * es, t, amxk__vload__avx2((const char *)x + 8 * es, t));
}
AMXK__TARGET_END
#endif
#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512_BEGIN
static void run_avx512(const float *x, float *y, int op) {
    __m512 v = _mm512_loadu_ps(x);
    v = op == 0 ? amxk__vexp__avx512(v) : op == 1 ? amxk__vsigmoid__avx512(v) : op == 2 ? amxk__vsilu__avx512(v) : amxk__vgelu_erf__avx512(v);
    _mm512_storeu_ps(y, v);
}
static void ldst_avx512(const void *x, void *out, amxk_dtype t) {
    amxk__vstore__avx512(out, t, amxk__vload__avx512(x, t, (__mmask16)0xffff), (__mmask16)0xffff);
}
/* masked: lanes [0, n) only */
static void ldst_avx512_n(const void *x, void *out, amxk_dtype t, int n) {
    __mmask16 k = (__mmask16)((1u << n) - 1u);
    amxk__vstore__avx512(out, t, amxk__vload__avx512(x, t, k), k);
}
AMXK__TARGET_END
#endif

static const char *op_name[4] = {"exp", "sigmoid", "silu", "gelu_erf"};

static double ref_op(int op, double x) {
    double c = x < -87.0 ? -87.0 : x > 87.0 ? 87.0 : x; /* the documented clamp of exp's argument */
    switch (op) {
    case 0: return exp(c);
    case 1: return 1.0 / (1.0 + exp(x < -87.0 || x > 87.0 ? -c : -x));
    case 2: return x / (1.0 + exp(-x < -87.0 ? -87.0 : -x > 87.0 ? 87.0 : -x));
    default: return x * 0.5 * erfc(-x / sqrt(2.0)); /* gelu, erf form: x Phi(x) */
    }
}

static void check_math(const char *lv, vfun f) {
    int op;
    for (op = 0; op < 4; op++) {
        double worst = 0;
        long bad = 0;
        size_t i, j, nx = op == 3 ? NX + NG : NX;
        float y[16], nanx[16], nany[16];
        for (i = 0; i < nx; i += 16) {
            const float *x = i < NX ? xs + i : xg + (i - NX);
            f(x, y, op);
            for (j = 0; j < 16; j++) {
                double w = ref_op(op, x[j]), e = fabs((double)y[j] - w);
                /* exp: 2 ulp; sigmoid / silu: exp's error through one add and one division; gelu: 8 ulp
                   (the documented bound), absolute 1e-37 below that magnitude */
                double tol = op == 3 ? (fabs(w) > 1e-37 ? 8.0 * ulp_of(fabs(w)) : 1e-37)
                                     : (op == 0 ? 2.0 : 4.0) * ulp_of(fabs(w) > 0 ? fabs(w) : 1e-45);
                if (!(e <= tol) && bad++ == 0)
                    printf("  [%s] %s(%.9g) = %.9g, ref %.9g\n", lv, op_name[op], (double)x[j], (double)y[j], w);
                if (fabs(w) > (op == 3 ? 1e-37 : 0) && e / ulp_of(fabs(w)) > worst) worst = e / ulp_of(fabs(w));
            }
        }
        CHECK(bad == 0, "[%s] %s: %ld of %zu values beyond the bound", lv, op_name[op], bad, nx);
        printf("  [%s] %s: max error %.2f ulp over %zu inputs\n", lv, op_name[op], worst, nx);
        for (j = 0; j < 16; j++) nanx[j] = (j & 1) ? NAN : -NAN;
        f(nanx, nany, op);
        for (j = 0; j < 16; j++) CHECK(isnan(nany[j]), "[%s] %s(NaN) = %g, want NaN", lv, op_name[op], (double)nany[j]);
    }
}

/* vload/vstore of every float dtype equal the scalar element functions, bit for bit (every bf16 /
   f16 code through load+store; f32 values through the bf16/f16 stores). */
typedef void (*ldst_fn)(const void *x, void *out, amxk_dtype t);
static void check_ldst(const char *lv, ldst_fn f) {
    static const amxk_dtype dts[3] = {AMXK_DTYPE_F32, AMXK_DTYPE_BF16, AMXK_DTYPE_F16};
    int d;
    for (d = 0; d < 3; d++) {
        amxk_dtype t = dts[d];
        long bad = 0;
        unsigned c;
        for (c = 0; c < 65536; c += 16) {
            uint16_t in16[16], out16[16];
            float in32[16], out32[16];
            int j;
            for (j = 0; j < 16; j++) in16[j] = (uint16_t)(c + (unsigned)j), in32[j] = test_bits_f32(((c + (unsigned)j) * 65599u) ^ 0x3f000000u);
            if (t == AMXK_DTYPE_F32) {
                f(in32, out32, t);
                for (j = 0; j < 16; j++) bad += test_f32_bits(out32[j]) != test_f32_bits(in32[j]);
            } else {
                /* load+store of a 16-bit code: the scalar decode + encode of it */
                f(in16, out16, t);
                for (j = 0; j < 16; j++) {
                    uint16_t want;
                    amxk__st_elem(&want, t, 0, amxk__ld_elem(in16, t, (size_t)j));
                    bad += out16[j] != want;
                }
            }
        }
        CHECK(bad == 0, "[%s] vload/vstore %s: %ld lanes differ from the scalar element functions", lv,
              t == AMXK_DTYPE_F32 ? "f32" : t == AMXK_DTYPE_BF16 ? "bf16" : "f16", bad);
    }
}
#endif /* AMXK__HAS_AVX2 */

int main(void) {
    amxk_tier t;
    amxk_ctx ctx;
    test_init();
    make_inputs();
    TEST_SECTION("vector layer: exp / sigmoid / silu / gelu_erf vs fp64, load / store vs the scalar functions");
    TEST_FOR_EACH_TIER(t, ctx) {
        const char *lv = amxk_tier_name(t);
        (void)lv;
        if (t == AMXK_TIER_AMX || t == AMXK_TIER_SCALAR) continue; /* no vector instance of their own */
#if AMXK__HAS_AVX512
        if (t >= AMXK_TIER_AVX512) {
            int n;
            check_math(lv, run_avx512);
            check_ldst(lv, ldst_avx512);
            /* masked tails touch only their lanes: the bytes after lane n stay as they were */
            for (n = 0; n <= 16; n += 5) {
                uint16_t src[16], dst[16];
                int j, ok = 1;
                for (j = 0; j < 16; j++) src[j] = (uint16_t)(0x3f80 + j), dst[j] = 0xdead;
                ldst_avx512_n(src, dst, AMXK_DTYPE_BF16, n);
                for (j = 0; j < 16; j++) ok &= dst[j] == (j < n ? src[j] : 0xdead);
                CHECK(ok, "[%s] masked vstore of %d lanes wrote outside them", lv, n);
            }
            continue;
        }
#endif
#if AMXK__HAS_AVX2
        if (t == AMXK_TIER_AVX2) {
            check_math(lv, run_avx2);
            check_ldst(lv, ldst_avx2);
        }
#endif
    }
    return test_finish();
}
