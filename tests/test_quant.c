/* tests/test_quant.c - amxk_pack.h quantized weights: amxk_quantize_pack, amxk_pack_quant,
   amxk_packed_quant_info, amxk_dequantize, amxk_linear_workspace_size_for and amxk_linear on
   quantized packs (INT8 / INT4 / INT2 symmetric and asymmetric with group scales, FP8 E4M3 / E5M2
   with block scales).

   INDEPENDENT REFERENCES. Nothing here trusts amxk to check amxk:
     - the packed bytes are decoded by this file from the layout documented in amxk_pack.h (header of
       64 bytes; ceil(N/16) blocks of 16 rows; row r, column k in byte (k/(4v))*64 + r*4 + k%4, bits
       [b*f, b*f+b), v = 8/b, f = (k/4)%v; K padded to a multiple of 32; then the fp32 scale grid,
       tiled by 16 grid rows in the pack: with gn = n/bn, gk = k/bk, scale[(gn/16)*ceil(K/bk)*16 +
       gk*16 + gn%16] (ceil(N/bn) rounded up to 16 rows), then the zero grid; callers pass
       grids row-major, [(n/bn)*ceil(K/bk) + k/bk]). ONE ASSUMPTION the documentation does
       not state: the zero grid starts at the next 64-byte boundary after the scale grid (checked
       indirectly: amxk_dequantize must agree with this decoder bit for bit);
     - the dequantized weight is s*(q - z) (ints) or s*fp8(q) computed in double and rounded once to
       f32 (the product of two floats is exact in double; zero points used here are exact in float
       when subtracted from q), with fp8 decoded by the harness's test_ref_decode;
     - the quantizer is re-implemented in double: amax / lo / hi per block, the documented scale and
       zero point formulas, round half to even, clamps, the saturating fp8 encoder of the harness.
       Only where the exact quotient w/s (or -lo/s) lies within 2^-22 (relative) of a rounding
       boundary may amxk's fp32 arithmetic pick the other neighbour: such "near ties" are accepted
       either way and counted (printed). Exact ties are tested separately with s = 1.
   The fp64 linear reference sums x * w_deq over the decoded weights.

   TOLERANCE (vector and scalar paths: fp32 accumulation of products of x and the f32 dequantized
   weight, bias added after the sum, one rounding to the output dtype). For each output, with
   S = sum_k |x_k w_k| + |bias| and T = K + 2 + ceil(K / block_k) rounding steps:
       |y - ref| <= eps_out * |ref| + abs_out + (1 + eps_out) * C * T * 2^-24 * S,   C = 1
   eps_out: 0 (f32 output), 2^-8 (bf16), 2^-11 (fp16); abs_out: half the smallest subnormal step of
   the output. A sequential fp32 sum of K rounded products plus the bias errs by at most
   (K + 1) * 2^-24 * S (first order); one more step is allowed for the rounding of the dequantized
   weight to f32 and one per scale group for kernels that apply the group scale after a partial sum.
   AMX path (tier amx, M >= 5) and the vdpbf16ps prefill (levels avx512_bf16 and up with bf16 x on the
   wide path: M >= 12, or group sizes the decode kernels do not take; see amx_path()): the dequantized
   weight is rounded once more, to x's dtype (bf16 or fp16), before the (exact) products: the reference for that path rounds the decoded f32 weight to
   bf16/fp16 (round to nearest even) first, and the bound is the same with those weights. The
   program prints the largest observed ratio (|y - ref| - eps_out|ref| - abs_out) / bound-term per
   tier and output dtype, and how many AMX outputs would FAIL the f32-weight reference (evidence
   that the extra rounding is real and that the AMX reference is the one that applies).

   Sections: quantizer exact ties, clamps and zero blocks; pack_quant round trips and layout;
   exhaustive fp8 codes; symmetric int4 / int2 all-zero rows and groups (exactly 0 + bias); header /
   info; bad arguments (nothing written, the right status); the format x block x shape x dtype sweep
   on every usable tier (guard bytes, NaN-poisoned y gaps and workspace, inputs unchanged,
   workspace-content independence, quantizer checked on every case); thread-count invariance; an
   accuracy table vs the ORIGINAL f32 weights (printed, not asserted).

   AMXK_TEST_QUICK=1 runs a smaller sweep.

   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror [-DAMXK_AMX_EMULATE] -I. tests/test_quant.c \
      -o build/test_quant -pthread -lm && ./build/test_quant */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"
#include "../amxk_pack.h"

#include <time.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <xmmintrin.h>
#endif

#define TOL_C 1.0
#define HDR 64

static int quick;

static double now_s(void) { return (double)clock() / CLOCKS_PER_SEC; }
static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }
static size_t round_up(size_t a, size_t b) { return ceil_div(a, b) * b; }
static int tier_usable(amxk_tier t) { return test_tier_runs(t); }
static void ctx_for(amxk_ctx *ctx, amxk_tier t, int workers) {
    if (!test_ctx(ctx, t, workers)) {
        printf("internal: tier %s vanished\n", amxk_tier_name(t));
        exit(2);
    }
}
static const char *dt_name(amxk_dtype dt) {
    switch (dt) {
    case AMXK_DTYPE_F32: return "f32";
    case AMXK_DTYPE_BF16: return "bf16";
    case AMXK_DTYPE_F16: return "f16";
    default: return "?";
    }
}
static const char *fmt_name(amxk_qformat f, int asym) {
    switch (f) {
    case AMXK_QFMT_INT8: return asym ? "int8a" : "int8s";
    case AMXK_QFMT_INT4: return asym ? "int4a" : "int4s";
    case AMXK_QFMT_INT2: return asym ? "int2a" : "int2s";
    case AMXK_QFMT_FP8_E4M3: return "e4m3";
    case AMXK_QFMT_FP8_E5M2: return "e5m2";
    case AMXK_QFMT_MXFP4: return "mxfp4";
    default: return "?";
    }
}
static float rd_f32(const unsigned char *p, size_t off) {
    float f;
    memcpy(&f, p + off, 4);
    return f;
}
static int same_f32(float a, float b) { return (isnan(a) && isnan(b)) || test_f32_bits(a) == test_f32_bits(b); }

/* round half to even, double */
static double rne_d(double x) {
    double fl = floor(x), d = x - fl;
    if (d > 0.5 || (d == 0.5 && fmod(fl, 2.0) != 0)) return fl + 1;
    return fl;
}
/* Correctly rounded bf16 / fp16 code of a double (overflow -> inf), subnormals kept. */
static unsigned round16(amxk_dtype dt, double v) {
    test_fmt f = test_fmt_of(dt);
    unsigned sign = signbit(v) ? 0x8000u : 0u;
    double a = fabs(v), q, r;
    int e;
    if (a == 0) return sign;
    (void)frexp(a, &e);
    e -= 1;
    if (e < 1 - f.bias) e = 1 - f.bias;
    q = ldexp(1.0, e - f.mbits);
    r = rne_d(a / q) * q;
    if (r > f.maxv) return sign | test_ref_pack(f, INFINITY);
    return sign | test_ref_pack(f, r);
}

/* ---- the documented packed layout --------------------------------------------------------------- */

typedef struct qgeo {
    amxk_qformat fmt;
    int asym, bits, fp8;
    amxk_dtype f8dt;
    size_t n, k, kp, bn, bk, gn, gk, grid, nblk, blk_bytes, scale_off, zero_off, min_bytes;
} qgeo;

static int fmt_bits(amxk_qformat f) { return f == AMXK_QFMT_INT4 ? 4 : f == AMXK_QFMT_INT2 ? 2 : 8; }
static int fmt_fp8(amxk_qformat f) { return f == AMXK_QFMT_FP8_E4M3 || f == AMXK_QFMT_FP8_E5M2; }

static void qgeo_make(qgeo *g, const amxk_quant *q, size_t n, size_t k) {
    memset(g, 0, sizeof *g);
    g->fmt = q->format, g->asym = q->asym, g->bits = fmt_bits(q->format), g->fp8 = fmt_fp8(q->format);
    g->f8dt = q->format == AMXK_QFMT_FP8_E5M2 ? AMXK_DTYPE_FP8_E5M2 : AMXK_DTYPE_FP8_E4M3;
    g->n = n, g->k = k, g->kp = round_up(k, 32);
    g->bn = g->fp8 ? q->block_n : 1, g->bk = q->block_k;
    g->gn = ceil_div(n, g->bn), g->gk = ceil_div(k, g->bk), g->grid = round_up(g->gn, 16) * g->gk;
    g->nblk = ceil_div(n, 16), g->blk_bytes = 16 * g->kp * (size_t)g->bits / 8;
    g->scale_off = HDR + g->nblk * g->blk_bytes;
    g->zero_off = g->scale_off + round_up(g->grid * 4, 64); /* the one assumption (see the top) */
    g->min_bytes = g->asym ? g->zero_off + g->grid * 4 : g->scale_off + g->grid * 4;
}
static int qmin_of(const qgeo *g) { return g->asym ? 0 : -(1 << (g->bits - 1)); }
static int qmax_of(const qgeo *g) { return g->asym ? (1 << g->bits) - 1 : (1 << (g->bits - 1)) - 1; }
/* byte offset (from the start of the buffer) and bit shift of row n (any n < 16*nblk), column k < Kp */
static size_t qpos(const qgeo *g, size_t n, size_t k, int *shift) {
    size_t v = (size_t)(8 / g->bits);
    *shift = (int)(((k / 4) % v) * (size_t)g->bits);
    return HDR + (n / 16) * g->blk_bytes + (k / (4 * v)) * 64 + (n % 16) * 4 + k % 4;
}
static unsigned q_field(const qgeo *g, const unsigned char *p, size_t n, size_t k) {
    int sh;
    size_t o = qpos(g, n, k, &sh);
    return (unsigned)(p[o] >> sh) & ((1u << g->bits) - 1u);
}
/* field -> integer value (two's complement for symmetric ints) */
static int field_int(const qgeo *g, unsigned f) {
    if (!g->asym && (f >> (g->bits - 1))) return (int)f - (1 << g->bits);
    return (int)f;
}
/* the pack's grid index of block (gn, gk) (tiles of 16 grid rows), and of weight (n, k) */
static size_t bidx(const qgeo *g, size_t gn, size_t gk) { return (gn / 16) * g->gk * 16 + gk * 16 + gn % 16; }
static size_t gidx(const qgeo *g, size_t n, size_t k) { return bidx(g, n / g->bn, k / g->bk); }
/* the callers' (row-major) grid index of weight (n, k) */
static size_t cidx(const qgeo *g, size_t n, size_t k) { return (n / g->bn) * g->gk + k / g->bk; }
static float q_scale(const qgeo *g, const unsigned char *p, size_t n, size_t k) { return rd_f32(p, g->scale_off + 4 * gidx(g, n, k)); }
static float q_zero(const qgeo *g, const unsigned char *p, size_t n, size_t k) {
    return g->asym ? rd_f32(p, g->zero_off + 4 * gidx(g, n, k)) : 0.0f;
}
/* The dequantized weight as documented: s * (q - z) or s * fp8(q), one rounding to f32. */
static float ref_weight(const qgeo *g, const unsigned char *p, size_t n, size_t k) {
    unsigned f = q_field(g, p, n, k);
    double s = q_scale(g, p, n, k);
    if (g->fp8) return (float)(s * test_ref_decode(g->f8dt, f));
    return (float)(s * ((double)field_int(g, f) - (double)q_zero(g, p, n, k)));
}
/* Padding fields (rows >= N of the last block, columns K..Kp) that are not zero. */
static size_t padding_nonzero(const qgeo *g, const unsigned char *p) {
    size_t n, k, bad = 0;
    for (n = 0; n < g->nblk * 16; n++)
        for (k = 0; k < g->kp; k++)
            if ((n >= g->n || k >= g->k) && q_field(g, p, n, k) != 0) bad++;
    return bad;
}

/* ---- the documented quantizer, in double ---------------------------------------------------------- */

static double src_val(const void *w, amxk_dtype wt, size_t i) {
    return wt == AMXK_DTYPE_F32 ? (double)((const float *)w)[i] : test_ref_decode(AMXK_DTYPE_BF16, ((const uint16_t *)w)[i]);
}

#define NEAR 2.384185791015625e-07 /* 2^-22 */

typedef struct qcheck {
    long values, blocks, near_ties, bound_checked;
    double max_err_ratio; /* |w - deq| / documented bound */
} qcheck;
static qcheck qstats;

/* Int value for t = w/s (+z): the two candidates bracketing the exact quotient within NEAR. */
static void int_cands(double t, double z, int lo, int hi, int *c0, int *c1) {
    double a = rne_d(t - fabs(t) * NEAR) + z, b = rne_d(t + fabs(t) * NEAR) + z;
    *c0 = (int)(a < lo ? lo : a > hi ? hi : a);
    *c1 = (int)(b < lo ? lo : b > hi ? hi : b);
}

/* Checks the scale grid, zero grid and every value field of pack p against the documented quantizer
   applied to w (dtype wt, rows ldw apart); also the documented error bounds. Returns the number of
   mismatches, describing the first in msg. */
static size_t check_quantizer(const qgeo *g, const unsigned char *p, const void *w, amxk_dtype wt, size_t ldw, char *msg, size_t len) {
    const int qlo = qmin_of(g), qhi = qmax_of(g);
    const double fmax = g->f8dt == AMXK_DTYPE_FP8_E4M3 ? 448.0 : 57344.0;
    const double minnorm = g->f8dt == AMXK_DTYPE_FP8_E4M3 ? ldexp(1.0, -6) : ldexp(1.0, -14);
    const double halfsub = g->f8dt == AMXK_DTYPE_FP8_E4M3 ? ldexp(1.0, -10) : ldexp(1.0, -17);
    const double relb = g->f8dt == AMXK_DTYPE_FP8_E4M3 ? ldexp(1.0, -4) : ldexp(1.0, -3);
    size_t gn, gk, i, j, bad = 0;
    msg[0] = 0;
#define QBAD(...) do { if (bad++ == 0) snprintf(msg, len, __VA_ARGS__); } while (0)
    for (gn = 0; gn < g->gn; gn++)
        for (gk = 0; gk < g->gk; gk++) {
            size_t i0 = gn * g->bn, i1 = i0 + g->bn < g->n ? i0 + g->bn : g->n;
            size_t j0 = gk * g->bk, j1 = j0 + g->bk < g->k ? j0 + g->bk : g->k;
            double lo = 0, hi = 0, amax, sref;
            float s, sreff, z = 0.0f;
            for (i = i0; i < i1; i++)
                for (j = j0; j < j1; j++) {
                    double x = src_val(w, wt, i * ldw + j);
                    lo = x < lo ? x : lo, hi = x > hi ? x : hi;
                }
            amax = -lo > hi ? -lo : hi;
            if (g->fp8) sref = amax / fmax;
            else if (!g->asym) sref = amax / (double)qhi;
            else sref = (hi - lo) / (double)qhi;
            sreff = sref > 0 ? (float)sref : 1.0f;
            s = rd_f32(p, g->scale_off + 4 * bidx(g, gn, gk));
            qstats.blocks++;
            if (g->asym && sref > 0 && (double)(float)(hi - lo) != hi - lo) {
                /* hi - lo is not exact in fp32: one extra rounding may be taken (2 ulp) */
                if (!(fabs((double)s - sref) <= ldexp(sref, -22))) QBAD("block (%zu,%zu): scale %.9g, want %.9g (within 2^-22)", gn, gk, s, sref);
            } else if (test_f32_bits(s) != test_f32_bits(sreff)) {
                QBAD("block (%zu,%zu): scale %.9g, want %.9g (lo %g hi %g)", gn, gk, s, sreff, lo, hi);
            }
            if (!(s > 0)) continue;
            if (g->asym) {
                int c0, c1;
                z = rd_f32(p, g->zero_off + 4 * bidx(g, gn, gk));
                int_cands(-lo / (double)s, 0, 0, qhi, &c0, &c1);
                if (c0 != c1) qstats.near_ties++;
                if (!(z == (float)c0 || z == (float)c1)) QBAD("block (%zu,%zu): zero point %g, want %d (lo %g, s %g)", gn, gk, z, c0, lo, s);
                if (sref == 0 && z != 0.0f) QBAD("zero block (%zu,%zu): zero point %g, want 0", gn, gk, z);
            }
            for (i = i0; i < i1; i++)
                for (j = j0; j < j1; j++) {
                    double x = src_val(w, wt, i * ldw + j), t = x / (double)s;
                    unsigned f = q_field(g, p, i, j);
                    double deq = ref_weight(g, p, i, j), err = fabs(x - deq), bound = -1;
                    qstats.values++;
                    if (g->fp8) {
                        unsigned c0 = test_ref_encode(g->f8dt, (float)(t - fabs(t) * NEAR));
                        unsigned c1 = test_ref_encode(g->f8dt, (float)(t + fabs(t) * NEAR));
                        if (c0 != c1) qstats.near_ties++;
                        if (f != c0 && f != c1) QBAD("(%zu,%zu): fp8 code 0x%02x, want 0x%02x (w %.9g s %.9g)", i, j, f, c0, x, s);
                        if (fabs(t) >= minnorm) bound = relb * fabs(x) * (1 + ldexp(1.0, -18)) + ldexp(fabs(deq), -23);
                        else bound = halfsub * s * (1 + ldexp(1.0, -18)) + ldexp(fabs(deq), -23);
                    } else {
                        int c0, c1, v = field_int(g, f);
                        int_cands(t, z, qlo, qhi, &c0, &c1);
                        if (c0 != c1) qstats.near_ties++;
                        if (v != c0 && v != c1) QBAD("(%zu,%zu): value %d, want %d (w %.9g s %.9g z %g)", i, j, v, c0, x, s, z);
                        if (t + z >= qlo - 0.5 && t + z <= qhi + 0.5) /* within range: no clamp */
                            bound = 0.5 * s * (1 + ldexp(1.0, -20)) + ldexp(fabs(deq), -23);
                    }
                    if (bound >= 0) {
                        qstats.bound_checked++;
                        if (bound > 0 && err / bound > qstats.max_err_ratio) qstats.max_err_ratio = err / bound;
                        if (!(err <= bound)) QBAD("(%zu,%zu): |w - deq| = %.3g > bound %.3g (w %.9g deq %.9g s %g)", i, j, err, bound, x, deq, s);
                    }
                }
        }
#undef QBAD
    return bad;
}

/* ---- quantizer: exact ties, clamps, zero blocks -------------------------------------------------------- */

/* quantize W[1, kk] (f32) with one group; returns the pack (test_alloc'd) and fills g */
static unsigned char *quantize_row(const amxk_quant *q, const float *w, size_t n, size_t k, qgeo *g) {
    size_t bytes = 0;
    unsigned char *p;
    amxk_status s = amxk_pack_quant_size(q, n, k, &bytes);
    qgeo_make(g, q, n, k);
    CHECK(s == AMXK_OK && bytes >= g->min_bytes, "pack_quant_size %s: status %d bytes %zu (min %zu)", fmt_name(q->format, q->asym), (int)s,
          bytes, g->min_bytes);
    p = (unsigned char *)test_alloc(bytes);
    s = amxk_quantize_pack(NULL, p, bytes, q, w, AMXK_DTYPE_F32, n, k, k);
    CHECK(s == AMXK_OK && test_guard_ok(p), "quantize_pack %s: status %d", fmt_name(q->format, q->asym), (int)s);
    return p;
}

static void test_quantizer_rules(void) {
    qgeo g;
    unsigned char *p;
    size_t i;
    char msg[256];
    TEST_SECTION("quantizer: exact ties (half to even), clamps, zero blocks, fp8 saturation");
    {   /* int8 sym, amax 127 -> s = 1 exactly: ties */
        static const float w[16] = {127, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 1.5f, -1.5f, 126.5f, -126.5f, 0, 4.5f, 5.5f, -127, 100.25f};
        static const int want[16] = {127, 2, 4, -2, -4, 0, 0, 2, -2, 126, -126, 0, 4, 6, -127, 100};
        amxk_quant q = {AMXK_QFMT_INT8, 0, 1, 16};
        int ok = 1;
        p = quantize_row(&q, w, 1, 16, &g);
        ok &= q_scale(&g, p, 0, 0) == 1.0f;
        for (i = 0; i < 16; i++) ok &= field_int(&g, q_field(&g, p, 0, i)) == want[i];
        CHECK(ok, "int8 sym s = 1: ties to even");
        test_free(p);
    }
    {   /* int4 sym, amax 7 -> s = 1 */
        static const float w[8] = {7, -7, 6.5f, -6.5f, 5.5f, -5.5f, 0.5f, -1.5f};
        static const int want[8] = {7, -7, 6, -6, 6, -6, 0, -2};
        amxk_quant q = {AMXK_QFMT_INT4, 0, 0, 8};
        int ok = 1;
        p = quantize_row(&q, w, 1, 8, &g);
        ok &= q_scale(&g, p, 0, 0) == 1.0f;
        for (i = 0; i < 8; i++) ok &= field_int(&g, q_field(&g, p, 0, i)) == want[i];
        CHECK(ok, "int4 sym s = 1 (block_n 0 means 1): ties to even");
        test_free(p);
    }
    {   /* int4 asym: lo -1.5, hi 13.5 -> s = 1, z = rne(1.5) = 2; q(13.5) = 14 + 2 = 16 -> clamp 15 */
        static const float w[8] = {-1.5f, 13.5f, 0, 2.5f, 12.5f, -0.5f, 11.5f, 1};
        static const int want[8] = {0, 15, 2, 4, 14, 2, 14, 3};
        amxk_quant q = {AMXK_QFMT_INT4, 1, 1, 8};
        int ok = 1;
        p = quantize_row(&q, w, 1, 8, &g);
        ok &= q_scale(&g, p, 0, 0) == 1.0f && q_zero(&g, p, 0, 0) == 2.0f;
        for (i = 0; i < 8; i++) ok &= field_int(&g, q_field(&g, p, 0, i)) == want[i];
        CHECK(ok, "int4 asym s = 1 z = 2: ties to even and the clamp at 15 (s %g z %g)", q_scale(&g, p, 0, 0), q_zero(&g, p, 0, 0));
        test_free(p);
    }
    {   /* int2 asym: all positive: lo = 0 -> z = 0; hi 3 -> s = 1 */
        static const float w[4] = {3, 1.5f, 0.5f, 2.5f};
        static const int want[4] = {3, 2, 0, 2};
        amxk_quant q = {AMXK_QFMT_INT2, 1, 1, 4};
        int ok = 1;
        p = quantize_row(&q, w, 1, 4, &g);
        ok &= q_scale(&g, p, 0, 0) == 1.0f && q_zero(&g, p, 0, 0) == 0.0f;
        for (i = 0; i < 4; i++) ok &= field_int(&g, q_field(&g, p, 0, i)) == want[i];
        CHECK(ok, "int2 asym all-positive block: lo = 0, z = 0");
        test_free(p);
    }
    {   /* all-negative int8 asym block: hi = 0 -> z = 255 */
        static const float w[4] = {-255, -1, -254.5f, -0.5f};
        static const int want[4] = {0, 254, 1, 255}; /* rne(-254.5) = -254 */
        amxk_quant q = {AMXK_QFMT_INT8, 1, 1, 4};
        int ok = 1;
        p = quantize_row(&q, w, 1, 4, &g);
        ok &= q_scale(&g, p, 0, 0) == 1.0f && q_zero(&g, p, 0, 0) == 255.0f;
        for (i = 0; i < 4; i++) ok &= field_int(&g, q_field(&g, p, 0, i)) == want[i];
        CHECK(ok, "int8 asym all-negative block: hi = 0, z = 255 (s %g z %g)", q_scale(&g, p, 0, 0), q_zero(&g, p, 0, 0));
        test_free(p);
    }
    {   /* zero blocks: every format, s = 1, z = 0, q = 0, dequantized exactly 0 */
        static const amxk_quant qs[8] = {{AMXK_QFMT_INT8, 0, 1, 32}, {AMXK_QFMT_INT8, 1, 1, 32}, {AMXK_QFMT_INT4, 0, 1, 32},
                                         {AMXK_QFMT_INT4, 1, 1, 32}, {AMXK_QFMT_INT2, 0, 1, 32}, {AMXK_QFMT_INT2, 1, 1, 32},
                                         {AMXK_QFMT_FP8_E4M3, 0, 2, 32}, {AMXK_QFMT_FP8_E5M2, 0, 2, 32}};
        float w[3 * 64];
        int qi;
        for (i = 0; i < 3 * 64; i++) w[i] = (i / 64 == 1 || i % 64 >= 32) ? (float)((int)(i % 7) - 3) * 0.25f : 0.0f;
        for (qi = 0; qi < 8; qi++) {
            size_t n, kk, nb;
            int ok = 1;
            float dq[3 * 64];
            p = quantize_row(&qs[qi], w, 3, 64, &g);
            nb = check_quantizer(&g, p, w, AMXK_DTYPE_F32, 64, msg, sizeof msg);
            CHECK(nb == 0, "%s zero blocks: %zu mismatches: %s", fmt_name(qs[qi].format, qs[qi].asym), nb, msg);
            for (n = 0; n < 3; n++)
                for (kk = 0; kk < 32; kk++)
                    if (n != 1 && !(qs[qi].format >= AMXK_QFMT_FP8_E4M3 && n == 0)) /* fp8 block rows 0-1 are not all zero */
                        ok &= q_scale(&g, p, n, kk) == 1.0f && q_zero(&g, p, n, kk) == 0.0f && q_field(&g, p, n, kk) == 0;
            CHECK(ok, "%s: all-zero block -> s = 1, z = 0, q = 0", fmt_name(qs[qi].format, qs[qi].asym));
            CHECK(amxk_dequantize(p, test_buf_bytes(p), dq, 64) == AMXK_OK, "dequantize");
            ok = 1;
            for (i = 0; i < 3 * 64; i++)
                if (w[i] == 0.0f) ok &= dq[i] == 0.0f;
            CHECK(ok, "%s: zero weights dequantize to exactly 0", fmt_name(qs[qi].format, qs[qi].asym));
            test_free(p);
        }
    }
    {   /* fp8: the block's amax maps to +-max finite (saturating, never NaN / inf), tiny values to subnormals */
        int fi;
        for (fi = 0; fi < 2; fi++) {
            amxk_quant q = {fi ? AMXK_QFMT_FP8_E5M2 : AMXK_QFMT_FP8_E4M3, 0, 1, 64};
            const unsigned maxc = fi ? 0x7bu : 0x7eu;
            float w[64];
            size_t nb;
            test_case_begin(test_case_id("quant fp8 saturation", (uint64_t)fi));
            for (i = 0; i < 64; i++) w[i] = (float)(test_uniform(-1, 1) * 3.1);
            w[5] = 3.3f, w[9] = -3.3f, w[20] = 3.2999999f, w[33] = 1e-6f, w[34] = -3e-7f;
            p = quantize_row(&q, w, 1, 64, &g);
            nb = check_quantizer(&g, p, w, AMXK_DTYPE_F32, 64, msg, sizeof msg);
            CHECK(nb == 0, "%s saturation: %zu mismatches: %s", fmt_name(q.format, 0), nb, msg);
            CHECK(q_field(&g, p, 0, 5) == maxc && q_field(&g, p, 0, 9) == (maxc | 0x80u), "%s: +-amax -> codes 0x%02x 0x%02x, want 0x%02x 0x%02x",
                  fmt_name(q.format, 0), q_field(&g, p, 0, 5), q_field(&g, p, 0, 9), maxc, maxc | 0x80u);
            test_free(p);
        }
    }
}

/* ---- pack_quant round trips, layout, exhaustive fp8 ------------------------------------------------------ */

static const amxk_qformat all_fmts[5] = {AMXK_QFMT_INT8, AMXK_QFMT_INT4, AMXK_QFMT_INT2, AMXK_QFMT_FP8_E4M3, AMXK_QFMT_FP8_E5M2};

static void test_pack_quant_roundtrip(void) {
    static const size_t shapes[][4] = {/* n, k, bn (fp8), bk */ {1, 32, 1, 32}, {17, 96, 5, 48}, {40, 130, 16, 65}, {3, 7, 2, 7}, {33, 256, 33, 64}};
    size_t si;
    int fi, asym;
    char msg[256];
    TEST_SECTION("amxk_pack_quant: round trip, layout, dequantize = s*(q - z) bitwise");
    for (fi = 0; fi < 5; fi++)
        for (asym = 0; asym < (fi < 3 ? 2 : 1); asym++)
            for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                const size_t n = shapes[si][0], k = shapes[si][1], ldv = k + (si % 2) * 3, ldw = k + 1;
                amxk_quant q;
                qgeo g;
                size_t bytes = 0, i, j, bad = 0, nb;
                signed char *vals;
                float *sc, *zr = NULL, *dq;
                unsigned char *p, *p2;
                amxk_status s;
                q.format = all_fmts[fi], q.asym = asym, q.block_n = fmt_fp8(all_fmts[fi]) ? shapes[si][2] : 1, q.block_k = shapes[si][3];
                test_case_begin(test_case_id("quant pack_quant round trip", (uint64_t)((fi * 2 + asym) * 8) + si));
                qgeo_make(&g, &q, n, k);
                s = amxk_pack_quant_size(&q, n, k, &bytes);
                CHECK(s == AMXK_OK && bytes >= g.min_bytes, "%s n %zu k %zu: size status %d bytes %zu min %zu", fmt_name(q.format, asym), n, k,
                      (int)s, bytes, g.min_bytes);
                if (s != AMXK_OK || bytes < g.min_bytes) continue;
                vals = (signed char *)test_alloc(n * ldv); /* gaps stay 0xFF: out of range for asym int8? no: 255 is in range; -1 sym ok */
                sc = (float *)test_alloc(g.grid * 4);
                if (asym) zr = (float *)test_alloc(g.grid * 4);
                for (i = 0; i < n; i++)
                    for (j = 0; j < k; j++) {
                        int v;
                        if (g.fp8) v = test_randint(0, 255);
                        else if ((i + j) % 11 == 0) v = (i + j) % 2 ? qmax_of(&g) : qmin_of(&g); /* the extremes */
                        else v = test_randint(qmin_of(&g), qmax_of(&g));
                        vals[i * ldv + j] = (signed char)(asym || g.fp8 ? (signed char)(unsigned char)v : (signed char)v);
                    }
                for (i = 0; i < g.grid; i++) {
                    sc[i] = (float)(test_uniform(0.01, 2.0) * (i % 5 == 4 ? -1 : 1));
                    if (i % 13 == 7) sc[i] = 0.0f;
                    if (asym) zr[i] = (float)test_randint(0, qmax_of(&g)) + (i % 3 == 1 ? 0.5f : i % 3 == 2 ? 0.25f : 0.0f);
                }
                p = (unsigned char *)test_alloc(bytes);
                s = amxk_pack_quant(NULL, p, bytes, &q, vals, ldv, sc, zr, n, k);
                CHECK(s == AMXK_OK && test_guard_ok(p), "%s n %zu k %zu: pack_quant status %d", fmt_name(q.format, asym), n, k, (int)s);
                if (s != AMXK_OK) goto next;
                CHECK(memcmp(p, "AMXKPACK", 8) == 0, "magic");
                for (i = 0; i < n; i++)
                    for (j = 0; j < k; j++) {
                        unsigned want = (unsigned)(unsigned char)vals[i * ldv + j] & ((1u << g.bits) - 1u);
                        if (q_field(&g, p, i, j) != want && bad++ == 0)
                            snprintf(msg, sizeof msg, "(%zu,%zu): field 0x%x want 0x%x", i, j, q_field(&g, p, i, j), want);
                    }
                CHECK(bad == 0, "%s n %zu k %zu bk %zu: %zu value fields not where documented (%s)", fmt_name(q.format, asym), n, k, q.block_k,
                      bad, msg);
                nb = padding_nonzero(&g, p);
                CHECK(nb == 0, "%s n %zu k %zu: %zu padding fields not zero", fmt_name(q.format, asym), n, k, nb);
                nb = 0;
                for (i = 0; i < g.gn; i++)
                    for (j = 0; j < g.gk; j++) {
                        nb += test_f32_bits(rd_f32(p, g.scale_off + 4 * bidx(&g, i, j))) != test_f32_bits(sc[i * g.gk + j]);
                        if (asym) nb += test_f32_bits(rd_f32(p, g.zero_off + 4 * bidx(&g, i, j))) != test_f32_bits(zr[i * g.gk + j]);
                    }
                CHECK(nb == 0, "%s n %zu k %zu: %zu scale / zero grid entries not where documented (zero grid: next 64-byte boundary)",
                      fmt_name(q.format, asym), n, k, nb);
                dq = (float *)test_alloc(((n - 1) * ldw + k) * 4);
                s = amxk_dequantize(p, bytes, dq, ldw);
                bad = 0;
                for (i = 0; i < n; i++)
                    for (j = 0; j < k; j++) {
                        int v = g.fp8 ? 0 : asym ? (int)(unsigned char)vals[i * ldv + j] : (int)vals[i * ldv + j];
                        double sv = sc[cidx(&g, i, j)];
                        float want = g.fp8 ? (float)(sv * test_ref_decode(g.f8dt, (unsigned char)vals[i * ldv + j]))
                                           : (float)(sv * ((double)v - (asym ? (double)zr[cidx(&g, i, j)] : 0.0)));
                        if (!same_f32(dq[i * ldw + j], want) && bad++ == 0)
                            snprintf(msg, sizeof msg, "(%zu,%zu): %.9g want %.9g", i, j, dq[i * ldw + j], want);
                        if (!same_f32(ref_weight(&g, p, i, j), want) && bad++ == 0) snprintf(msg, sizeof msg, "(%zu,%zu): own decoder differs", i, j);
                    }
                for (i = 0; i + 1 < n; i++) /* the gap between rows stays poisoned */
                    for (j = k; j < ldw; j++) bad += test_f32_bits(dq[i * ldw + j]) != 0xffffffffu;
                CHECK(s == AMXK_OK && bad == 0 && test_guard_ok(dq), "%s n %zu k %zu: dequantize status %d, %zu mismatches (%s)",
                      fmt_name(q.format, asym), n, k, (int)s, bad, msg);
                {   /* info round trip */
                    amxk_quant qo;
                    size_t on = 0, ok_ = 0;
                    amxk_dtype dt = AMXK_DTYPE_INVALID;
                    memset(&qo, 0x55, sizeof qo);
                    s = amxk_packed_quant_info(p, bytes, &qo, &on, &ok_);
                    CHECK(s == AMXK_OK && qo.format == q.format && qo.asym == asym && qo.block_n == g.bn && qo.block_k == q.block_k && on == n && ok_ == k,
                          "%s: quant_info round trip (status %d fmt %d asym %d bn %zu bk %zu n %zu k %zu)", fmt_name(q.format, asym), (int)s,
                          (int)qo.format, qo.asym, qo.block_n, qo.block_k, on, ok_);
                    s = amxk_packed_linear_info(p, bytes, &dt, &on, &ok_);
                    CHECK(s == AMXK_OK && on == n && ok_ == k &&
                              dt == (q.format == AMXK_QFMT_FP8_E4M3 ? AMXK_DTYPE_FP8_E4M3 : q.format == AMXK_QFMT_FP8_E5M2 ? AMXK_DTYPE_FP8_E5M2 : AMXK_DTYPE_I8),
                          "%s: packed_linear_info dtype %d", fmt_name(q.format, asym), (int)dt);
                    CHECK(amxk_packed_quant_info(p, bytes, NULL, NULL, NULL) == AMXK_OK, "quant_info NULL outputs");
                    on = 99;
                    CHECK(amxk_packed_quant_info(p, g.min_bytes - 1, NULL, &on, NULL) == AMXK_ERR_FORMAT && on == 99, "%s: quant_info truncated",
                          fmt_name(q.format, asym));
                }
                /* quantize_pack output == pack_quant(its own values, scales, zeros) */
                {
                    float *w = (float *)malloc(n * k * 4);
                    signed char *v2 = (signed char *)malloc(n * k);
                    for (i = 0; i < n * k; i++) w[i] = (float)test_uniform(-2, 2.5);
                    p2 = (unsigned char *)test_alloc(bytes);
                    CHECK(amxk_quantize_pack(NULL, p, bytes, &q, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK, "quantize_pack");
                    for (i = 0; i < n; i++)
                        for (j = 0; j < k; j++) {
                            unsigned f = q_field(&g, p, i, j);
                            v2[i * k + j] = (signed char)(g.fp8 || asym ? (signed char)(unsigned char)f : (signed char)field_int(&g, f));
                        }
                    for (i = 0; i < g.gn; i++) /* back to the callers' row-major grid */
                        for (j = 0; j < g.gk; j++) {
                            sc[i * g.gk + j] = rd_f32(p, g.scale_off + 4 * bidx(&g, i, j));
                            if (asym) zr[i * g.gk + j] = rd_f32(p, g.zero_off + 4 * bidx(&g, i, j));
                        }
                    CHECK(amxk_pack_quant(NULL, p2, bytes, &q, v2, k, sc, zr, n, k) == AMXK_OK, "pack_quant");
                    CHECK(memcmp(p, p2, g.scale_off + g.grid * 4) == 0 && (!asym || memcmp(p + g.zero_off, p2 + g.zero_off, g.grid * 4) == 0),
                          "%s n %zu k %zu: pack_quant(values, scales, zeros of quantize_pack) differs from quantize_pack", fmt_name(q.format, asym), n, k);
                    nb = check_quantizer(&g, p, w, AMXK_DTYPE_F32, k, msg, sizeof msg);
                    CHECK(nb == 0, "%s n %zu k %zu: quantizer: %zu mismatches: %s", fmt_name(q.format, asym), n, k, nb, msg);
                    test_free(p2);
                    free(w);
                    free(v2);
                }
                test_free(dq);
            next:
                test_free(p);
                test_free(vals);
                test_free(sc);
                test_free(zr);
            }
    TEST_SECTION("exhaustive fp8: all 256 codes, scale 1 (and 3): exact decode, NaN codes NaN, zero exactly 0");
    for (fi = 0; fi < 2; fi++) {
        const amxk_dtype dt = fi ? AMXK_DTYPE_FP8_E5M2 : AMXK_DTYPE_FP8_E4M3;
        amxk_quant q = {fi ? AMXK_QFMT_FP8_E5M2 : AMXK_QFMT_FP8_E4M3, 0, 16, 16};
        unsigned char vals[256], *p;
        float sc[1], dq[256];
        size_t bytes = 0, i;
        int pass;
        for (i = 0; i < 256; i++) vals[i] = (unsigned char)i;
        CHECK(amxk_pack_quant_size(&q, 16, 16, &bytes) == AMXK_OK, "size");
        p = (unsigned char *)test_alloc(bytes);
        for (pass = 0; pass < 2; pass++) {
            size_t bad = 0, badref = 0;
            sc[0] = pass ? 3.0f : 1.0f;
            CHECK(amxk_pack_quant(NULL, p, bytes, &q, vals, 16, sc, NULL, 16, 16) == AMXK_OK, "pack_quant fp8 all codes");
            CHECK(amxk_dequantize(p, bytes, dq, 16) == AMXK_OK, "dequantize");
            for (i = 0; i < 256; i++) {
                float lib = fi ? amxk_e5m2_to_f32((amxk_fp8)i) : amxk_e4m3_to_f32((amxk_fp8)i);
                double ref = test_ref_decode(dt, (unsigned)i);
                if (test_code_is_nan(dt, (unsigned)i)) {
                    bad += !isnan(dq[i]);
                    badref += !isnan(ref);
                } else {
                    bad += dq[i] != sc[0] * lib; /* exact: 3 * fp8 value fits f32 */
                    badref += (double)dq[i] != sc[0] * ref;
                }
            }
            CHECK(bad == 0 && badref == 0, "%s scale %g: %zu codes differ from amxk's decoder, %zu from the reference", fi ? "e5m2" : "e4m3", sc[0],
                  bad, badref);
            CHECK(dq[0] == 0.0f && dq[0x80] == 0.0f && !signbit(dq[0]) && signbit(dq[0x80]), "%s: codes 0x00 / 0x80 -> +0 / -0", fi ? "e5m2" : "e4m3");
        }
        test_free(p);
    }
}

/* amxk_linear on fp8 packs that hold every code: x rows one-hot, so each output is one weight times x,
   exact. Packs without NaN / inf codes take the AVX2 integer decoder (subnormal codes included); a pack
   with them (all in row 5), MXCSR.DAZ set, or |x| >= 2^100 take the exact general decoder. */
static unsigned fp8_code(int dirty, amxk_dtype dt, size_t r, size_t k) {
    unsigned c = (unsigned)((k + 16 * r) & 255);
    int special = test_code_is_nan(dt, c) || (dt == AMXK_DTYPE_FP8_E5M2 && (c & 0x7f) == 0x7c);
    return special && !(dirty && r == 5) ? 0x01u : c; /* 0x01: the smallest subnormal */
}
static void test_fp8_linear_codes(void) {
    enum { N = 16, K = 256, M = 2 };
    int fi, dirty, mode;
    amxk_tier t;
    amxk_ctx ctx;
    TEST_SECTION("fp8 linear: all codes, one-hot x: exact products (clean / NaN-inf packs, DAZ, huge x)");
    for (fi = 0; fi < 2; fi++)
        for (dirty = 0; dirty < 2; dirty++) {
            const amxk_dtype dt = fi ? AMXK_DTYPE_FP8_E5M2 : AMXK_DTYPE_FP8_E4M3;
            amxk_quant q = {fi ? AMXK_QFMT_FP8_E5M2 : AMXK_QFMT_FP8_E4M3, 0, 16, 128};
            unsigned char vals[N * K], *p;
            float sc[2] = {3.0f, 0.5f}, y[M * N];
            uint16_t x[M * K];
            size_t bytes = 0, wsb = 0, i, kk, r;
            void *ws;
            for (r = 0; r < N; r++)
                for (kk = 0; kk < K; kk++) vals[r * K + kk] = (unsigned char)fp8_code(dirty, dt, r, kk);
            CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK, "size");
            p = (unsigned char *)test_alloc(bytes);
            CHECK(amxk_pack_quant(NULL, p, bytes, &q, vals, K, sc, NULL, N, K) == AMXK_OK, "pack");
            TEST_FOR_EACH_TIER(t, ctx) {
                size_t bad = 0;
                char first[160] = "";
                CHECK(amxk_linear_workspace_size_for(&ctx, M, p, bytes, &wsb) == AMXK_OK, "ws size");
                ws = test_alloc(wsb + 1);
                for (mode = 0; mode < 3; mode++) { /* 0 plain, 1 DAZ + FTZ (x86), 2 x = 2^110 */
                    const float xv[M] = {mode == 2 ? 0x1p110f : 1.0f, -0.75f};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
                    unsigned csr = _mm_getcsr();
#else
                    if (mode == 1) continue;
#endif
                    for (kk = 0; kk < K; kk++) {
                        size_t k2 = (kk * 7 + 3) % K;
                        memset(x, 0, sizeof x);
                        x[kk] = (uint16_t)(test_f32_bits(xv[0]) >> 16), x[K + k2] = (uint16_t)(test_f32_bits(xv[1]) >> 16);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
                        if (mode == 1) _mm_setcsr(csr | 0x8040u);
#endif
                        CHECK(amxk_linear(&ctx, M, N, K, x, AMXK_DTYPE_BF16, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, ws, wsb) == AMXK_OK, "linear");
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
                        _mm_setcsr(csr);
#endif
                        for (i = 0; i < M * N; i++) {
                            size_t row = i % N, col = i < N ? kk : k2;
                            int nan_row = dirty && row == 5;
                            double ref = sc[col / 128] * test_ref_decode(dt, vals[row * K + col]) * xv[i / N];
                            int ok = nan_row ? isnan(y[i]) : (double)y[i] == ref;
                            if (!ok && bad++ == 0)
                                snprintf(first, sizeof first, "mode %d k %zu out %zu: %.9g want %.9g (code 0x%02x)", mode, col, i, y[i], ref,
                                         vals[row * K + col]);
                        }
                    }
                }
                CHECK(bad == 0, "%s %s tier %s: %zu outputs wrong, first %s", fi ? "e5m2" : "e4m3", dirty ? "NaN/inf pack" : "clean pack",
                      amxk_tier_name(t), bad, first);
                test_free(ws);
            }
            test_free(p);
        }
}

/* Symmetric int4 / int2 packs with an all-zero row (q = 0, scales not 1) and an all-zero group in an
   otherwise random row: an output that only sees zero weights is exactly 0 + bias, on every tier and
   path (small-M vector kernels, which read fields as q + 2^(b-1), included). Row ZR is all zero;
   row ZG's group 1 is zero and x row 0 is zero outside group 1, so y[0][ZG] sees only that group.
   x spans 2^-30 .. 1, so fp32 sums of it round (a kernel that computes sum x u - 2^(b-1) sum x in
   two different orders leaves a residue instead of 0). */
static void test_zero_groups(void) {
    enum { N = 40, K = 256, BK = 64, ZR = 7, ZG = 20 };
    static const size_t ms[6] = {1, 2, 3, 4, 5, 12};
    int fi, bi, ti;
    size_t mi;
    TEST_SECTION("int4 / int2 symmetric: all-zero rows and groups give exactly 0 + bias");
    for (fi = 1; fi < 3; fi++) {
        size_t bad_t[AMXK_TIER_COUNT] = {0}, runs_t[AMXK_TIER_COUNT] = {0};
        char first_t[AMXK_TIER_COUNT][200];
        for (mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (bi = 0; bi < 2; bi++) {
                const size_t m = ms[mi];
                amxk_quant q;
                qgeo g;
                signed char vals[N * K];
                float sc[N * (K / BK)], bias[N], y[12 * N];
                uint16_t x[12 * K];
                size_t bytes = 0, i, kk, wsb = 0;
                unsigned char *p;
                amxk_tier t;
                amxk_ctx ctx;
                q.format = all_fmts[fi], q.asym = 0, q.block_n = 1, q.block_k = BK;
                qgeo_make(&g, &q, N, K);
                test_case_begin(test_case_mix(test_case_mix(test_case_id("quant zero groups", (uint64_t)fi), mi), (uint64_t)bi));
                for (i = 0; i < N; i++)
                    for (kk = 0; kk < K; kk++)
                        vals[i * K + kk] = (signed char)(i == ZR || (i == ZG && kk / BK == 1) ? 0 : test_randint(qmin_of(&g), qmax_of(&g)));
                for (i = 0; i < N * (K / BK); i++) sc[i] = (float)(test_uniform(0.05, 2.0) * (i % 3 == 2 ? -1 : 1));
                for (i = 0; i < N; i++) bias[i] = bi ? test_randf(-1, 1) : 0.0f;
                for (i = 0; i < m; i++)
                    for (kk = 0; kk < K; kk++) {
                        double v = ldexp((test_randint(0, 1) ? -1 : 1) * (1.0 + test_randint(0, 127) / 128.0), -test_randint(0, 30));
                        x[i * K + kk] = (uint16_t)(i == 0 && kk / BK != 1 ? 0 : test_ref_encode(AMXK_DTYPE_BF16, (float)v));
                    }
                CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK, "size");
                p = (unsigned char *)test_alloc(bytes);
                CHECK(amxk_pack_quant(NULL, p, bytes, &q, vals, K, sc, NULL, N, K) == AMXK_OK, "pack_quant");
                TEST_FOR_EACH_TIER(t, ctx) { /* counted per tier, checked per format and tier below */
                    size_t *bad = &bad_t[t];
                    char *first = first_t[t];
                    void *ws;
                    amxk_status st;
                    CHECK(amxk_linear_workspace_size_for(&ctx, m, p, bytes, &wsb) == AMXK_OK, "ws size");
                    ws = test_alloc(wsb);
                    st = amxk_linear(&ctx, m, N, K, x, AMXK_DTYPE_BF16, K, p, bytes, bi ? bias : NULL, y, AMXK_DTYPE_F32, N, wsb ? ws : NULL, wsb);
                    runs_t[t] += m + 1;
                    if (st != AMXK_OK && (*bad)++ == 0) snprintf(first, 200, "M %zu: status %d", m, (int)st);
                    for (i = 0; i < m && st == AMXK_OK; i++)
                        if (y[i * N + ZR] != bias[ZR] && (*bad)++ == 0)
                            snprintf(first, 200, "M %zu%s: y[%zu][%d] (zero row) = %.9g want %.9g", m, bi ? " bias" : "", i, ZR,
                                     (double)y[i * N + ZR], (double)bias[ZR]);
                    if (st == AMXK_OK && y[ZG] != bias[ZG] && (*bad)++ == 0)
                        snprintf(first, 200, "M %zu%s: y[0][%d] (zero group) = %.9g want %.9g", m, bi ? " bias" : "", ZG, (double)y[ZG],
                                 (double)bias[ZG]);
                    test_free(ws);
                }
                test_free(p);
            }
        for (ti = AMXK_TIER_SCALAR; ti <= AMXK_TIER_AMX; ti++)
            if (runs_t[ti])
                CHECK(bad_t[ti] == 0, "[%s] %s: %zu of %zu outputs of zero weights (M 1..12, bias or not) not exactly 0 + bias; first: %s",
                      amxk_tier_name((amxk_tier)ti), fmt_name(all_fmts[fi], 0), bad_t[ti], runs_t[ti], first_t[ti]);
    }
}

/* ---- the linear sweep -------------------------------------------------------------------------------- */

typedef struct tier_stats {
    double max_ratio[3]; /* per y dtype */
    long cases, outputs, amx_outputs, amx_fail_f32;
    double seconds;
    char worst[3][320];
} tier_stats;
static tier_stats stats[AMXK_TIER_COUNT];
static long n_cases;
static double amx_seconds;

typedef struct qcase {
    amxk_quant q;
    size_t m, n, k, ldx, ldy, ldw;
    amxk_dtype xt, yt, wt;
    int bias, workers;
    unsigned tiers;
} qcase;

static const char *case_str(const qcase *c) {
    static char s[240];
    snprintf(s, sizeof s, "%s bn %zu bk %zu M=%zu N=%zu K=%zu ldx=%zu ldy=%zu ldw=%zu x=%s w=%s y=%s%s w%d", fmt_name(c->q.format, c->q.asym),
             c->q.block_n, c->q.block_k, c->m, c->n, c->k, c->ldx, c->ldy, c->ldw, dt_name(c->xt), dt_name(c->wt), dt_name(c->yt),
             c->bias ? " bias" : "", c->workers);
    return s;
}

/* normal-ish value (sum of 4 uniforms), mean 0, sd ~ 1 */
static double randn_ish(void) { return (test_uniform(-1, 1) + test_uniform(-1, 1) + test_uniform(-1, 1) + test_uniform(-1, 1)) * 0.8660254; }

/* 1 when amxk_linear multiplies weights rounded to x's dtype for this tier / case: the AMX tile path
   (M >= 5), and the vdpbf16ps path of the AVX512_BF16 level and above (x bf16, on the wide path: M >= 12
   or a group size that is not a multiple of 32 / bits, which the decode kernels do not take) - which the
   AMX level also reaches below 5 rows through its vector level (the best usable level below AMX). */
static int amx_path(const amxk_ctx *ctx, const qcase *c) {
    const amxk_tier t = ctx->tier;
    const int bits = c->q.format == AMXK_QFMT_INT4 ? 4 : c->q.format == AMXK_QFMT_INT2 ? 2 : 8;
    int vec = (int)t;
    /* fp16 x on the tiles only with AMX-FP16 (ctx->features: the emulator's too, less AMXK_TEST_DENY) */
    if (t == AMXK_TIER_AMX && c->m >= 5 && (c->xt == AMXK_DTYPE_BF16 || (ctx->features & AMXK_CPU_AMX_FP16))) return 1;
    if (t == AMXK_TIER_AMX) vec = (int)test_vec_level(ctx);
    return vec >= AMXK_TIER_AVX512_BF16 && c->xt == AMXK_DTYPE_BF16 && (c->m >= 12 || c->q.block_k % (size_t)(32 / bits) != 0);
}

/* Checks y against ref (mag = sum |x w| + |bias|) with T rounding steps; counts violations; gaps must
   hold gap_byte. record: update the tier's statistics. */
static size_t check_y(const qcase *c, const void *y, const double *ref, const double *mag, double T, unsigned char gap_byte, amxk_tier t,
                      int record, char *msg, size_t len) {
    const int yi = c->yt == AMXK_DTYPE_F32 ? 0 : c->yt == AMXK_DTYPE_BF16 ? 1 : 2;
    const double eps_out = yi == 0 ? 0.0 : yi == 1 ? ldexp(1.0, -8) : ldexp(1.0, -11);
    const double abs_out = yi == 0 ? 0.0 : yi == 1 ? ldexp(1.0, -134) : ldexp(1.0, -25);
    const size_t ysz = amxk_dtype_size(c->yt);
    size_t i, j, b, bad = 0;
    msg[0] = 0;
    for (i = 0; i < c->m; i++) {
        for (j = 0; j < c->n; j++) {
            size_t e = i * c->ldy + j;
            double r = ref[i * c->n + j], v, err, denom, ratio;
            v = yi == 0 ? (double)((const float *)y)[e] : test_ref_decode(c->yt, ((const uint16_t *)y)[e]);
            err = fabs(v - r);
            denom = (1.0 + eps_out) * T * ldexp(1.0, -24) * mag[i * c->n + j];
            ratio = err - eps_out * fabs(r) - abs_out;
            ratio = ratio <= 0 ? 0.0 : denom > 0 ? ratio / denom : INFINITY;
            if (!isfinite(v)) ratio = INFINITY;
            if (record && ratio > stats[t].max_ratio[yi]) {
                stats[t].max_ratio[yi] = ratio;
                snprintf(stats[t].worst[yi], sizeof stats[t].worst[yi], "y[%zu][%zu] = %.9g ref %.12g S %.4g; %s", i, j, v, r, mag[i * c->n + j],
                         case_str(c));
            }
            if (!(ratio <= TOL_C) && bad++ == 0) snprintf(msg, len, "y[%zu][%zu] = %.9g, ref %.9g, |err| %.3g, ratio %.3g", i, j, v, r, err, ratio);
        }
        if (i + 1 < c->m)
            for (b = (i * c->ldy + c->n) * ysz; b < (i + 1) * c->ldy * ysz; b++)
                if (((const unsigned char *)y)[b] != gap_byte && bad++ == 0) snprintf(msg, len, "gap byte %zu after row %zu written", b, i);
    }
    return bad;
}

static void run_qcase(const qcase *c) {
    qgeo g;
    size_t bytes = 0, i, j, kk, nb, xbytes, ybytes, wbytes;
    void *w, *x;
    float *bias = NULL, *wd, *dq;
    double *xd, *ref32, *mag32, *ref16, *mag16;
    unsigned char *p, *pcopy, *xcopy;
    char msg[320];
    amxk_ctx sctx;
    amxk_status s;
    const double T = (double)(c->k + 2 + ceil_div(c->k, c->q.block_k));
    const double wscale = ldexp(1.0, test_randint(-3, 1));
    int t;
    qgeo_make(&g, &c->q, c->n, c->k);
    n_cases++;
    wbytes = ((c->n - 1) * c->ldw + c->k) * amxk_dtype_size(c->wt);
    w = test_alloc(wbytes); /* gaps between rows stay NaN */
    for (i = 0; i < c->n; i++)
        for (kk = 0; kk < c->k; kk++) {
            double v = randn_ish() * wscale;
            if (test_randint(0, 63) == 0) v *= 6; /* outliers */
            if (test_randint(0, 31) == 0 || (c->n > 2 && i == c->n / 2)) v = 0; /* zeros and a zero row */
            if (c->wt == AMXK_DTYPE_F32) ((float *)w)[i * c->ldw + kk] = (float)v;
            else ((uint16_t *)w)[i * c->ldw + kk] = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, (float)v);
        }
    /* x, bias: all of the case's data is drawn before the first context */
    xbytes = ((c->m - 1) * c->ldx + c->k) * 2;
    ybytes = ((c->m - 1) * c->ldy + c->n) * amxk_dtype_size(c->yt);
    x = test_alloc(xbytes);
    xd = (double *)malloc(c->m * c->k * sizeof(double));
    for (i = 0; i < c->m; i++)
        for (kk = 0; kk < c->k; kk++) {
            float v = test_randf(-1, 1);
            if (test_randint(0, 31) == 0) v = 0;
            ((uint16_t *)x)[i * c->ldx + kk] = (uint16_t)test_ref_encode(c->xt, v);
            xd[i * c->k + kk] = test_ref_decode(c->xt, ((uint16_t *)x)[i * c->ldx + kk]);
        }
    if (c->bias) {
        bias = (float *)test_alloc(c->n * 4);
        for (j = 0; j < c->n; j++) bias[j] = test_randf(-1, 1);
    }
    s = amxk_pack_quant_size(&c->q, c->n, c->k, &bytes);
    CHECK(s == AMXK_OK && bytes >= g.min_bytes, "size status %d bytes %zu min %zu: %s", (int)s, bytes, g.min_bytes, case_str(c));
    if (s != AMXK_OK || bytes < g.min_bytes) {
        test_free(w), test_free(x), test_free(bias), free(xd);
        return;
    }
    p = (unsigned char *)test_alloc(bytes);
    ctx_for(&sctx, AMXK_TIER_SCALAR, 1);
    s = amxk_quantize_pack(&sctx, p, bytes, &c->q, w, c->wt, c->n, c->k, c->ldw);
    CHECK(s == AMXK_OK && test_guard_ok(p), "quantize_pack status %d: %s", (int)s, case_str(c));
    if (s != AMXK_OK) {
        test_free(p);
        test_free(w), test_free(x), test_free(bias), free(xd);
        return;
    }
    nb = check_quantizer(&g, p, w, c->wt, c->ldw, msg, sizeof msg);
    CHECK(nb == 0, "quantizer: %zu mismatches (%s): %s", nb, msg, case_str(c));
    nb = padding_nonzero(&g, p);
    CHECK(nb == 0, "%zu padding fields not zero: %s", nb, case_str(c));
    /* decoded weights, and amxk_dequantize must agree bitwise */
    wd = (float *)malloc(c->n * c->k * 4);
    dq = (float *)test_alloc(c->n * c->k * 4);
    for (i = 0; i < c->n; i++)
        for (kk = 0; kk < c->k; kk++) wd[i * c->k + kk] = ref_weight(&g, p, i, kk);
    s = amxk_dequantize(p, bytes, dq, c->k);
    nb = 0;
    for (i = 0; i < c->n * c->k; i++) nb += !same_f32(dq[i], wd[i]);
    CHECK(s == AMXK_OK && nb == 0 && test_guard_ok(dq), "dequantize status %d: %zu weights differ from the documented decode: %s", (int)s, nb,
          case_str(c));
    test_free(dq);
    /* references */
    ref32 = (double *)malloc(c->m * c->n * sizeof(double)), mag32 = (double *)malloc(c->m * c->n * sizeof(double));
    ref16 = (double *)malloc(c->m * c->n * sizeof(double)), mag16 = (double *)malloc(c->m * c->n * sizeof(double));
    {
        double *w16 = (double *)malloc(c->n * c->k * sizeof(double));
        for (i = 0; i < c->n * c->k; i++) w16[i] = test_ref_decode(c->xt, round16(c->xt, wd[i]));
        for (i = 0; i < c->m; i++)
            for (j = 0; j < c->n; j++) {
                double s1 = 0, a1 = 0, s2 = 0, a2 = 0;
                for (kk = 0; kk < c->k; kk++) {
                    double p1 = xd[i * c->k + kk] * (double)wd[j * c->k + kk], p2 = xd[i * c->k + kk] * w16[j * c->k + kk];
                    s1 += p1, a1 += fabs(p1), s2 += p2, a2 += fabs(p2);
                }
                if (bias) s1 += bias[j], a1 += fabs((double)bias[j]), s2 += bias[j], a2 += fabs((double)bias[j]);
                ref32[i * c->n + j] = s1, mag32[i * c->n + j] = a1, ref16[i * c->n + j] = s2, mag16[i * c->n + j] = a2;
            }
        free(w16);
    }
    pcopy = (unsigned char *)malloc(bytes);
    xcopy = (unsigned char *)malloc(xbytes);
    memcpy(pcopy, p, bytes);
    memcpy(xcopy, x, xbytes);
    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
        amxk_ctx ctx;
        size_t wsb = 0;
        void *ws, *y, *y1;
        int amx;
        double t0 = now_s();
        if (!(c->tiers & AMXK_TIER_BIT(t)) || !tier_usable((amxk_tier)t)) continue;
        ctx_for(&ctx, (amxk_tier)t, c->workers);
        amx = amx_path(&ctx, c);
        s = amxk_linear_workspace_size_for(&ctx, c->m, p, bytes, &wsb);
        CHECK(s == AMXK_OK, "[%s] workspace_size_for status %d: %s", amxk_tier_name((amxk_tier)t), (int)s, case_str(c));
        ws = test_alloc(wsb);
        y = test_alloc(ybytes);
        s = amxk_linear(&ctx, c->m, c->n, c->k, x, c->xt, c->ldx, p, bytes, bias, y, c->yt, c->ldy, wsb ? ws : NULL, wsb);
        CHECK(s == AMXK_OK, "[%s] linear status %d (%s): %s", amxk_tier_name((amxk_tier)t), (int)s, amxk_status_string(s), case_str(c));
        test_dump("quant.y", t, y, ybytes);
        nb = check_y(c, y, amx ? ref16 : ref32, amx ? mag16 : mag32, T, 0xff, (amxk_tier)t, 1, msg, sizeof msg);
        CHECK(nb == 0, "[%s%s] %zu bad outputs; first: %s: %s", amxk_tier_name((amxk_tier)t), amx ? " tiles" : "", nb, msg, case_str(c));
        if (amx) { /* how many outputs the f32-weight reference would reject: the rounding is real */
            char m2[320];
            stats[t].amx_outputs += (long)(c->m * c->n);
            stats[t].amx_fail_f32 += (long)check_y(c, y, ref32, mag32, T, 0xff, (amxk_tier)t, 0, m2, sizeof m2);
        }
        CHECK(test_guard_ok(y) && test_guard_ok(ws), "[%s] y/workspace guards: %s", amxk_tier_name((amxk_tier)t), case_str(c));
        CHECK(memcmp(p, pcopy, bytes) == 0 && test_guard_ok(p), "[%s] packed modified: %s", amxk_tier_name((amxk_tier)t), case_str(c));
        CHECK(memcmp(x, xcopy, xbytes) == 0 && test_guard_ok(x), "[%s] x modified: %s", amxk_tier_name((amxk_tier)t), case_str(c));
        /* other workspace bytes, zeroed y: bitwise the same outputs, gaps untouched */
        y1 = test_alloc(ybytes);
        memset(y1, 0, ybytes);
        test_noise_fill(ws, wsb); /* the workspace size depends on the tier: noise, not case data */
        s = amxk_linear(&ctx, c->m, c->n, c->k, x, c->xt, c->ldx, p, bytes, bias, y1, c->yt, c->ldy, wsb ? ws : NULL, wsb);
        {
            size_t ysz = amxk_dtype_size(c->yt), diff = 0, gaps = 0, b;
            for (i = 0; i < c->m; i++) {
                diff += memcmp((char *)y + i * c->ldy * ysz, (char *)y1 + i * c->ldy * ysz, c->n * ysz) != 0;
                if (i + 1 < c->m)
                    for (b = (i * c->ldy + c->n) * ysz; b < (i + 1) * c->ldy * ysz; b++) gaps += ((unsigned char *)y1)[b] != 0;
            }
            CHECK(s == AMXK_OK && diff == 0 && gaps == 0 && test_guard_ok(y1) && test_guard_ok(ws),
                  "[%s] rerun with other workspace bytes: status %d, %zu rows differ, %zu gap bytes: %s", amxk_tier_name((amxk_tier)t), (int)s, diff,
                  gaps, case_str(c));
        }
        test_free(y1);
        test_free(y);
        test_free(ws);
        stats[t].cases++;
        stats[t].outputs += (long)(c->m * c->n);
        stats[t].seconds += now_s() - t0;
        if (t == AMXK_TIER_AMX) amx_seconds += now_s() - t0;
    }
    free(pcopy);
    free(xcopy);
    free(wd);
    free(xd);
    free(ref32), free(mag32), free(ref16), free(mag16);
    test_free(bias);
    test_free(x);
    test_free(p);
    test_free(w);
}

/* every tier from scalar to amx (the tiers between them included, however many there are) */
#define ALL_TIERS (AMXK_TIER_BIT((int)AMXK_TIER_AMX + 1) - AMXK_TIER_BIT(AMXK_TIER_SCALAR))
#define NO_AMX (ALL_TIERS & ~AMXK_TIER_BIT(AMXK_TIER_AMX))

static const size_t sweep_m[8] = {1, 2, 3, 4, 5, 12, 13, 33};
static const size_t sweep_n[5] = {1, 15, 16, 17, 40};

static void sweep_one(const amxk_quant *q, size_t m, size_t n, size_t k, unsigned j, unsigned cfg) {
    static const amxk_dtype yts[3] = {AMXK_DTYPE_F32, AMXK_DTYPE_BF16, AMXK_DTYPE_F16};
    qcase c;
    test_case_begin(test_case_mix(test_case_id("quant sweep", cfg), j)); /* strides and data of case (cfg, j) */
    memset(&c, 0, sizeof c);
    c.q = *q;
    c.m = m, c.n = n, c.k = k;
    if (fmt_fp8(q->format) && q->block_n == 0) c.q.block_n = c.n; /* per tensor: N x K */
    c.xt = (j + cfg) % 2 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16;
    c.yt = yts[(j + cfg / 2) % 3];
    c.wt = (j + cfg) % 4 == 3 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
    c.bias = (int)((j / 2 + cfg) % 2);
    c.ldx = c.k + (test_randint(0, 1) ? (size_t)(2 * test_randint(0, 4) + 1) : 0);
    c.ldy = c.n + (test_randint(0, 1) ? (size_t)(2 * test_randint(0, 4) + 1) : 0);
    c.ldw = c.k + (test_randint(0, 1) ? (size_t)(2 * test_randint(0, 4) + 1) : 0);
    c.workers = (j + cfg) % 3 == 2 ? 2 : 1;
    /* the emulated AMX tier is slow: every M >= 5 case (the tile path), every other M <= 4 one */
    c.tiers = ALL_TIERS;
    if (amxk_cpu_init()->amx_emulated && c.m < 5 && (j + cfg) % 2) c.tiers = NO_AMX;
    run_qcase(&c);
}

/* Every M of sweep_m, N cycling through sweep_n (or fixed), dtypes / bias / strides / workers
   cycling with the case counter; two rounds (one in quick mode). */
static void sweep_config(const amxk_quant *q, size_t k, size_t fixed_n, unsigned cfg) {
    unsigned i, r;
    for (r = 0; r < (quick ? 1u : 2u); r++)
        for (i = 0; i < 8; i++) {
            unsigned j = i + 8 * r;
            if (quick && (i + cfg) % 2) continue;
            sweep_one(q, sweep_m[i], fixed_n ? fixed_n : sweep_n[(i * 2 + cfg + 3 * r) % 5], k, j, cfg);
        }
}

static void test_sweep(void) {
    static const size_t int_cfg[][2] = {/* K, group */ {64, 32}, {192, 64}, {256, 128}, {70, 70}, {96, 48}, {130, 65}, {128, 128}};
    static const size_t fp8_cfg[][4] = {/* K, bn, bk, fixed N (0: the N list) */ {300, 128, 128, 0}, {300, 128, 128, 200}, {300, 1, 300, 0},
                                        {300, 0, 300, 0} /* per tensor */, {100, 16, 32, 0}, {77, 3, 5, 0}};
    unsigned cfg = 0;
    size_t ci;
    int fi, asym;
    double t0 = now_s();
    TEST_SECTION("sweep: int8/int4/int2 x sym/asym x group 32/64/128/K/odd x M x N x dtypes x tiers");
    for (fi = 0; fi < 3; fi++)
        for (asym = 0; asym < 2; asym++)
            for (ci = 0; ci < sizeof int_cfg / sizeof int_cfg[0]; ci++) {
                amxk_quant q;
                q.format = all_fmts[fi], q.asym = asym, q.block_n = ci % 2, q.block_k = int_cfg[ci][1]; /* block_n 0 or 1 */
                sweep_config(&q, int_cfg[ci][0], 0, cfg++);
            }
    TEST_SECTION("sweep: fp8 e4m3/e5m2 x block 128x128 (edges) / 1xK / NxK / 16x32 / 3x5 x M x N x dtypes x tiers");
    for (fi = 3; fi < 5; fi++)
        for (ci = 0; ci < sizeof fp8_cfg / sizeof fp8_cfg[0]; ci++) {
            amxk_quant q;
            q.format = all_fmts[fi], q.asym = 0, q.block_n = fp8_cfg[ci][1], q.block_k = fp8_cfg[ci][2];
            sweep_config(&q, fp8_cfg[ci][0], fp8_cfg[ci][3], cfg++);
        }
    TEST_SECTION("sweep: larger K (4096 decode, 1024 with M 33) and N (200 with fp8 128x128 edges)");
    {
        static const struct { amxk_qformat f; int asym; size_t bn, bk, m, n, k; } big[] = {
            {AMXK_QFMT_INT4, 0, 1, 128, 1, 64, 4096}, {AMXK_QFMT_INT4, 1, 1, 128, 2, 33, 4096}, {AMXK_QFMT_INT8, 1, 1, 4096, 1, 17, 4096},
            {AMXK_QFMT_INT2, 1, 1, 32, 33, 40, 1024}, {AMXK_QFMT_INT8, 0, 1, 64, 12, 48, 1024}, {AMXK_QFMT_INT2, 0, 1, 128, 5, 31, 1024},
            {AMXK_QFMT_FP8_E4M3, 0, 128, 128, 1, 200, 1000}, {AMXK_QFMT_FP8_E5M2, 0, 128, 128, 13, 200, 1000},
            {AMXK_QFMT_FP8_E4M3, 0, 1, 4096, 3, 40, 4096}, {AMXK_QFMT_INT4, 1, 1, 64, 1, 260, 4160}, {AMXK_QFMT_INT4, 0, 1, 32, 1, 260, 4160}};
        for (ci = 0; ci < sizeof big / sizeof big[0]; ci++) {
            amxk_quant q;
            if (quick && ci % 3) continue;
            q.format = big[ci].f, q.asym = big[ci].asym, q.block_n = big[ci].bn, q.block_k = big[ci].bk;
            sweep_one(&q, big[ci].m, big[ci].n, big[ci].k, (unsigned)ci, cfg++);
        }
    }
    printf("  sweep: %ld cases, %.1f s (emulated/AMX tier %.1f s)\n", n_cases, now_s() - t0, amx_seconds);
}

/* ---- thread-count invariance --------------------------------------------------------------------------- */

static void test_threads(void) {
    static const size_t ms[2] = {1, 40};
    const size_t n = 100, k = 256;
    int t, fi, asym;
    TEST_SECTION("thread-count invariance (serial, serial n_workers 7, pools 1, 2, 3, 7): bitwise equal");
    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
        if (!tier_usable((amxk_tier)t)) continue;
        for (fi = 0; fi < 5; fi++)
            for (asym = 0; asym < (fi < 3 ? 2 : 1); asym++) {
                amxk_quant q;
                size_t bytes = 0, mi, i;
                float *w = (float *)malloc(n * k * 4), bias[100];
                uint16_t *x = (uint16_t *)malloc(40 * k * 2);
                unsigned char *p;
                q.format = all_fmts[fi], q.asym = asym, q.block_n = fi < 3 ? 1 : 64, q.block_k = fi < 3 ? 64 : 128;
                test_case_begin(test_case_id("quant threads", (uint64_t)(fi * 2 + asym))); /* the same data on every tier */
                for (i = 0; i < n * k; i++) w[i] = (float)randn_ish();
                for (i = 0; i < 40 * k; i++) x[i] = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, test_randf(-1, 1));
                for (i = 0; i < n; i++) bias[i] = test_randf(-1, 1);
                CHECK(amxk_pack_quant_size(&q, n, k, &bytes) == AMXK_OK, "size");
                p = (unsigned char *)test_alloc(bytes);
                CHECK(amxk_quantize_pack(NULL, p, bytes, &q, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK, "quantize");
                for (mi = 0; mi < 2; mi++) {
                    const size_t m = ms[mi], ybytes = m * n * 4;
                    unsigned char *y0 = NULL;
                    int v, nbad = 0;
                    for (v = 0; v < 6; v++) {
                        amxk_ctx ctx;
                        size_t wsb = 0;
                        void *ws, *y;
                        amxk_status s;
                        if (v == 0) ctx_for(&ctx, (amxk_tier)t, 1);
                        else if (v == 1) {
                            memset(&ctx, 0, sizeof ctx);
                            ctx.isa_allow = AMXK_TIER_BIT(t), ctx.n_workers = 7, ctx.cpu_deny = test_deny;
                            CHECK(amxk_ctx_init(&ctx) == AMXK_OK, "ctx");
                        } else {
                            int nw = test_worker_counts[v - 2];
                            ctx_for(&ctx, (amxk_tier)t, nw);
                            if (nw == 1) amxk_pool_bind(test_pool(1), &ctx);
                        }
                        CHECK(amxk_linear_workspace_size_for(&ctx, m, p, bytes, &wsb) == AMXK_OK, "ws");
                        ws = test_alloc(wsb);
                        y = test_alloc(ybytes);
                        s = amxk_linear(&ctx, m, n, k, x, AMXK_DTYPE_BF16, k, p, bytes, bias, y, AMXK_DTYPE_F32, n, ws, wsb);
                        CHECK(s == AMXK_OK && test_guard_ok(y) && test_guard_ok(ws), "[%s] %s M %zu variant %d: status %d / guards",
                              amxk_tier_name((amxk_tier)t), fmt_name(q.format, asym), m, v, (int)s);
                        if (v == 0) {
                            y0 = (unsigned char *)malloc(ybytes);
                            memcpy(y0, y, ybytes);
                        } else if (memcmp(y0, y, ybytes) != 0) {
                            nbad++;
                        }
                        test_free(y);
                        test_free(ws);
                    }
                    CHECK(nbad == 0, "[%s] %s M %zu: %d worker variants not bitwise equal to serial", amxk_tier_name((amxk_tier)t),
                          fmt_name(q.format, asym), m, nbad);
                    free(y0);
                }
                test_free(p);
                free(w);
                free(x);
            }
    }
}

/* ---- the AMX grid with quantized packs (amxk_pack.h: amxk__linear_block__32x32__amx) ------------------- */

/* A parallel_for that runs the tasks on the calling thread in reverse order, task t as worker
   (n_tasks - 1 - t) % 3 (contexts of 3 workers): results must not depend on task order or placement. */
static void reverse_for(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    size_t t;
    (void)user;
    for (t = n_tasks; t-- > 0;) fn(task_ctx, t, (int)((n_tasks - 1 - t) % 3));
}

/* Blocks dequantized once per B block (several per worker: ~1 MiB of 16-bit weights, 4 block pairs at
   K ~ 4096), odd block counts, 16-row tails, K not a multiple of 32: each case against the reference
   on 2 workers (run_qcase, AMX level only), then bitwise equal across 1 worker, a pool of 3 and
   reversed task order on 3 workers. */
static void test_amx_grid(void) {
    static const struct { amxk_qformat f; int asym; size_t bn, bk, m, n, k; } cs[] = {
        {AMXK_QFMT_INT4, 0, 1, 128, 48, 300, 4096}, {AMXK_QFMT_INT8, 1, 1, 64, 17, 290, 4032}, {AMXK_QFMT_FP8_E4M3, 0, 128, 128, 80, 170, 4100},
        {AMXK_QFMT_INT2, 1, 1, 32, 33, 47, 96}};
    size_t i;
    if (!tier_usable(AMXK_TIER_AMX)) return;
    TEST_SECTION("AMX grid (quantized): several B blocks, odd block counts, 16-row tails, task order");
    for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        qcase c;
        size_t bytes = 0, j;
        float *w;
        uint16_t *x;
        unsigned char *p, *y0 = NULL;
        int v;
        memset(&c, 0, sizeof c);
        c.q.format = cs[i].f, c.q.asym = cs[i].asym, c.q.block_n = cs[i].bn, c.q.block_k = cs[i].bk;
        c.m = cs[i].m, c.n = cs[i].n, c.k = cs[i].k, c.ldx = c.k + (i % 2), c.ldy = c.n + 2 * (i % 2), c.ldw = c.k;
        c.xt = i % 2 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16, c.wt = AMXK_DTYPE_F32, c.yt = i % 3 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
        c.bias = (int)(i % 2), c.workers = 2, c.tiers = AMXK_TIER_BIT(AMXK_TIER_AMX);
        test_case_begin(test_case_id("quant amx grid", i));
        run_qcase(&c);
        test_case_begin(test_case_id("quant amx grid variants", i));
        w = (float *)malloc(c.n * c.k * 4), x = (uint16_t *)malloc(c.m * c.k * 2);
        for (j = 0; j < c.n * c.k; j++) w[j] = (float)randn_ish();
        for (j = 0; j < c.m * c.k; j++) x[j] = (uint16_t)test_ref_encode(c.xt, test_randf(-1, 1));
        CHECK(amxk_pack_quant_size(&c.q, c.n, c.k, &bytes) == AMXK_OK, "size");
        p = (unsigned char *)test_alloc(bytes);
        CHECK(amxk_quantize_pack(NULL, p, bytes, &c.q, w, AMXK_DTYPE_F32, c.n, c.k, c.k) == AMXK_OK, "quantize");
        for (v = 0; v < 3; v++) { /* 1 worker, a pool of 3, reversed task order on 3 workers */
            amxk_ctx ctx;
            size_t wsb = 0;
            void *ws, *y;
            ctx_for(&ctx, AMXK_TIER_AMX, v == 1 ? 3 : 1);
            if (v == 2) ctx.n_workers = 3, ctx.parallel_for = reverse_for, ctx.parallel_user = NULL;
            CHECK(amxk_linear_workspace_size_for(&ctx, c.m, p, bytes, &wsb) == AMXK_OK, "ws");
            ws = test_alloc(wsb);
            y = test_alloc(c.m * c.n * 4);
            CHECK(amxk_linear(&ctx, c.m, c.n, c.k, x, c.xt, c.k, p, bytes, NULL, y, AMXK_DTYPE_F32, c.n, ws, wsb) == AMXK_OK &&
                      test_guard_ok(y) && test_guard_ok(ws),
                  "[amx] variant %d: status / guards: %s", v, case_str(&c));
            if (v == 0) y0 = (unsigned char *)malloc(c.m * c.n * 4), memcpy(y0, y, c.m * c.n * 4);
            else CHECK(memcmp(y0, y, c.m * c.n * 4) == 0, "[amx] variant %d not bitwise equal to 1 worker: %s", v, case_str(&c));
            test_free(y);
            test_free(ws);
        }
        free(y0);
        test_free(p);
        free(w);
        free(x);
    }
}

/* ---- bad arguments ----------------------------------------------------------------------------------- */


static void test_bad_args(void) {
    const size_t n = 20, k = 64;
    const amxk_quant qi4 = {AMXK_QFMT_INT4, 0, 1, 32}, qa2 = {AMXK_QFMT_INT2, 1, 1, 32}, qf8 = {AMXK_QFMT_FP8_E4M3, 0, 128, 128};
    size_t b4 = 0, ba2 = 0, bf8 = 0, b, i;
    amxk_quant q;
    amxk_ctx ctx, bad0;
    float *w, *sc, *zr;
    signed char *vals;
    unsigned char *dst;
    test_watch wt;
    amxk_status s;
    TEST_SECTION("bad arguments (quantized): the right status, nothing written");
    memset(&bad0, 0, sizeof bad0);
    ctx_for(&ctx, AMXK_TIER_SCALAR, 1);
    CHECK(amxk_pack_quant_size(&qi4, n, k, &b4) == AMXK_OK && amxk_pack_quant_size(&qa2, n, k, &ba2) == AMXK_OK &&
              amxk_pack_quant_size(&qf8, n, k, &bf8) == AMXK_OK,
          "sizes");
    {   /* amxk_pack_quant_size */
        struct { amxk_quant q; size_t n, k; amxk_status want; const char *what; } cs[] = {
            {{AMXK_QFMT_INT4, 0, 1, 0}, 20, 64, AMXK_ERR_ARG, "group 0"},
            {{AMXK_QFMT_INT4, 0, 1, 48}, 20, 64, AMXK_ERR_ARG, "group 48 does not divide K 64"},
            {{AMXK_QFMT_INT8, 1, 1, 65}, 20, 64, AMXK_ERR_ARG, "group 65 > K"},
            {{AMXK_QFMT_INT4, 0, 2, 32}, 20, 64, AMXK_ERR_ARG, "block_n 2 for int4"},
            {{AMXK_QFMT_INT8, 1, 16, 32}, 20, 64, AMXK_ERR_ARG, "block_n 16 for int8 asym"},
            {{AMXK_QFMT_FP8_E4M3, 1, 128, 128}, 20, 64, AMXK_ERR_ARG, "asym e4m3"},
            {{AMXK_QFMT_FP8_E5M2, 1, 1, 64}, 20, 64, AMXK_ERR_ARG, "asym e5m2"},
            {{AMXK_QFMT_FP8_E4M3, 0, 0, 128}, 20, 64, AMXK_ERR_ARG, "fp8 block_n 0"},
            {{AMXK_QFMT_FP8_E5M2, 0, 128, 0}, 20, 64, AMXK_ERR_ARG, "fp8 block_k 0"},
            {{AMXK_QFMT_NONE, 0, 1, 32}, 20, 64, AMXK_ERR_ARG, "format NONE"},
            {{AMXK_QFMT_COUNT, 0, 1, 32}, 20, 64, AMXK_ERR_ARG, "format COUNT"},
            {{(amxk_qformat)77, 0, 1, 32}, 20, 64, AMXK_ERR_ARG, "format 77"},
            {{AMXK_QFMT_INT4, 2, 1, 32}, 20, 64, AMXK_ERR_ARG, "asym 2"},
            {{AMXK_QFMT_INT4, -1, 1, 32}, 20, 64, AMXK_ERR_ARG, "asym -1"},
            {{AMXK_QFMT_INT4, 0, 1, 32}, 0, 64, AMXK_ERR_SHAPE, "n 0"},
            {{AMXK_QFMT_INT4, 0, 1, 32}, 20, 0, AMXK_ERR_SHAPE, "k 0"},
        };
        size_t ci;
        for (ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
            b = 4242;
            s = amxk_pack_quant_size(&cs[ci].q, cs[ci].n, cs[ci].k, &b);
            CHECK(s == cs[ci].want && b == 4242, "pack_quant_size %s: status %d want %d, bytes %zu", cs[ci].what, (int)s, (int)cs[ci].want, b);
        }
        CHECK(amxk_pack_quant_size(NULL, n, k, &b) == AMXK_ERR_NULL, "size: NULL quant");
        CHECK(amxk_pack_quant_size(&qi4, n, k, NULL) == AMXK_ERR_NULL, "size: NULL bytes");
        q = qi4, q.block_n = 0;
        CHECK(amxk_pack_quant_size(&q, n, k, &b) == AMXK_OK && b == b4, "size: int block_n 0 means 1");
    }
    w = (float *)test_alloc(n * (k + 1) * 4 + 4096);
    test_case_begin(test_case_id("quant bad args", 0));
    for (i = 0; i < n * (k + 1); i++) w[i] = test_randf(-1, 1);
    vals = (signed char *)test_alloc(n * (k + 2));
    for (i = 0; i < n * (k + 2); i++) vals[i] = (signed char)test_randint(0, 1); /* in range for every format, as both signednesses */
    sc = (float *)test_alloc(64 * 4);
    zr = (float *)test_alloc(64 * 4);
    for (i = 0; i < 64; i++) sc[i] = 0.5f, zr[i] = 1.0f;
    dst = (unsigned char *)test_alloc(bf8 + b4 + ba2 + 128);
    memset(&wt, 0, sizeof wt);
    wt.p[0] = dst, wt.p[1] = w, wt.p[2] = vals, wt.p[3] = sc, wt.p[4] = zr;
#define EXPECT(call, want, what)                                                                                       \
    do {                                                                                                               \
        test_watch_take(&wt);                                                                                               \
        s = (call);                                                                                                    \
        CHECK(s == (want), "%s: status %d (%s), want %d", (what), (int)s, amxk_status_string(s), (int)(want));         \
        CHECK(test_watch_same(&wt), "%s: a buffer changed", (what));                                                        \
    } while (0)
    /* amxk_quantize_pack */
    EXPECT(amxk_quantize_pack(&bad0, dst, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_CONTEXT, "quantize: uninitialised ctx");
    EXPECT(amxk_quantize_pack(&ctx, NULL, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_NULL, "quantize: NULL dst");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, NULL, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_NULL, "quantize: NULL quant");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &qi4, NULL, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_NULL, "quantize: NULL w");
    q = qi4, q.block_k = 0;
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &q, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ARG, "quantize: group 0");
    q = qi4, q.block_k = 48;
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &q, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ARG, "quantize: group 48, K 64");
    q = qi4, q.block_n = 2;
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &q, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ARG, "quantize: int block_n 2");
    q = qf8, q.asym = 1;
    EXPECT(amxk_quantize_pack(&ctx, dst, bf8, &q, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ARG, "quantize: asym fp8");
    q = qi4, q.format = AMXK_QFMT_NONE;
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &q, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ARG, "quantize: format NONE");
    q = qi4, q.format = (amxk_qformat)99;
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &q, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ARG, "quantize: format 99");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &qi4, w, AMXK_DTYPE_F32, 0, k, k + 1), AMXK_ERR_SHAPE, "quantize: n 0");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &qi4, w, AMXK_DTYPE_F16, n, k, k + 1), AMXK_ERR_DTYPE, "quantize: w f16");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &qi4, w, AMXK_DTYPE_I8, n, k, k + 1), AMXK_ERR_DTYPE, "quantize: w i8");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k - 1), AMXK_ERR_STRIDE, "quantize: ldw < K");
    EXPECT(amxk_quantize_pack(&ctx, dst + 32, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ALIGN, "quantize: dst + 32");
    EXPECT(amxk_quantize_pack(&ctx, dst + 4, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ALIGN, "quantize: dst + 4");
    EXPECT(amxk_quantize_pack(&ctx, dst, b4 - 1, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_WORKSPACE, "quantize: dst one byte short");
    EXPECT(amxk_quantize_pack(&ctx, dst, 0, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_WORKSPACE, "quantize: dst_bytes 0");
    {   /* dst overlapping w */
        size_t wlast = ((n - 1) * (k + 1) + k - 1) * 4;
        wt.p[0] = NULL;
        EXPECT(amxk_quantize_pack(&ctx, w, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ALIAS, "quantize: dst == w");
        EXPECT(amxk_quantize_pack(&ctx, (char *)w + (wlast / 64) * 64, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1), AMXK_ERR_ALIAS,
               "quantize: dst overlaps the end of w");
        wt.p[0] = dst;
    }
    /* amxk_pack_quant */
    EXPECT(amxk_pack_quant(&bad0, dst, b4, &qi4, vals, k, sc, NULL, n, k), AMXK_ERR_CONTEXT, "pack_quant: uninitialised ctx");
    EXPECT(amxk_pack_quant(&ctx, NULL, b4, &qi4, vals, k, sc, NULL, n, k), AMXK_ERR_NULL, "pack_quant: NULL dst");
    EXPECT(amxk_pack_quant(&ctx, dst, b4, &qi4, NULL, k, sc, NULL, n, k), AMXK_ERR_NULL, "pack_quant: NULL values");
    EXPECT(amxk_pack_quant(&ctx, dst, b4, &qi4, vals, k, NULL, NULL, n, k), AMXK_ERR_NULL, "pack_quant: NULL scales");
    EXPECT(amxk_pack_quant(&ctx, dst, ba2, &qa2, vals, k, sc, NULL, n, k), AMXK_ERR_NULL, "pack_quant: asym, NULL zeros");
    EXPECT(amxk_pack_quant(&ctx, dst, b4, &qi4, vals, k - 1, sc, NULL, n, k), AMXK_ERR_STRIDE, "pack_quant: ldv < K");
    q = qi4, q.block_k = 0;
    EXPECT(amxk_pack_quant(&ctx, dst, b4, &q, vals, k, sc, NULL, n, k), AMXK_ERR_ARG, "pack_quant: group 0");
    q = qi4, q.block_k = 40;
    EXPECT(amxk_pack_quant(&ctx, dst, b4, &q, vals, k, sc, NULL, n, k), AMXK_ERR_ARG, "pack_quant: group 40, K 64");
    q = qa2, q.block_n = 2;
    EXPECT(amxk_pack_quant(&ctx, dst, ba2, &q, vals, k, sc, zr, n, k), AMXK_ERR_ARG, "pack_quant: int block_n 2");
    q = qf8, q.asym = 1;
    EXPECT(amxk_pack_quant(&ctx, dst, bf8, &q, vals, k, sc, zr, n, k), AMXK_ERR_ARG, "pack_quant: asym fp8");
    q = qi4, q.format = (amxk_qformat)-3;
    EXPECT(amxk_pack_quant(&ctx, dst, b4, &q, vals, k, sc, NULL, n, k), AMXK_ERR_ARG, "pack_quant: format -3");
    EXPECT(amxk_pack_quant(&ctx, dst + 16, b4, &qi4, vals, k, sc, NULL, n, k), AMXK_ERR_ALIGN, "pack_quant: dst + 16");
    EXPECT(amxk_pack_quant(&ctx, dst, b4 - 1, &qi4, vals, k, sc, NULL, n, k), AMXK_ERR_WORKSPACE, "pack_quant: dst one byte short");
    {   /* out-of-range values (at the last element: nothing may be written before the check) */
        struct { amxk_qformat f; int asym; int v; } oor[] = {{AMXK_QFMT_INT4, 0, 8}, {AMXK_QFMT_INT4, 0, -9}, {AMXK_QFMT_INT4, 1, 16},
                                                           {AMXK_QFMT_INT2, 1, 4}, {AMXK_QFMT_INT2, 0, 2}, {AMXK_QFMT_INT2, 0, -3},
                                                           {AMXK_QFMT_INT4, 1, 255}, {AMXK_QFMT_INT2, 0, -128}};
        size_t oi, last = (n - 1) * k + k - 1;
        for (oi = 0; oi < sizeof oor / sizeof oor[0]; oi++) {
            char what[96];
            signed char keep = vals[last];
            size_t bb = 0;
            q.format = oor[oi].f, q.asym = oor[oi].asym, q.block_n = 1, q.block_k = 32;
            CHECK(amxk_pack_quant_size(&q, n, k, &bb) == AMXK_OK, "size");
            vals[last] = (signed char)(oor[oi].asym ? (signed char)(unsigned char)oor[oi].v : (signed char)oor[oi].v);
            snprintf(what, sizeof what, "pack_quant: %s value %d at the last element", fmt_name(q.format, q.asym), oor[oi].v);
            EXPECT(amxk_pack_quant(&ctx, dst, bb, &q, vals, k, sc, zr, n, k), AMXK_ERR_ARG, what);
            vals[last] = keep;
        }
        /* a value in the row gap (ldv > K) is not read: out of range there is fine */
        q = qa2;
        for (i = 0; i < n; i++) vals[i * (k + 2) + k] = vals[i * (k + 2) + k + 1] = (signed char)-1; /* 255 */
        test_watch_take(&wt);
        s = amxk_pack_quant(&ctx, dst, ba2, &q, vals, k + 2, sc, zr, n, k);
        CHECK(s == AMXK_OK && test_guard_ok(dst), "pack_quant: out-of-range bytes in the ldv gap are not read (status %d)", (int)s);
        for (i = 0; i < TEST_N_WATCH; i++) free(wt.copy[i]), wt.copy[i] = NULL;
    }
    {   /* dst overlapping values / scales / zeros */
        unsigned char *big = (unsigned char *)test_alloc(ba2 + 4096);
        wt.p[5] = big;
        EXPECT(amxk_pack_quant(&ctx, big, ba2, &qa2, big + ba2 - 64, k, sc, zr, n, k), AMXK_ERR_ALIAS, "pack_quant: values inside dst");
        EXPECT(amxk_pack_quant(&ctx, big, ba2, &qa2, vals, k, (const float *)(big + 128), zr, n, k), AMXK_ERR_ALIAS, "pack_quant: scales inside dst");
        EXPECT(amxk_pack_quant(&ctx, big, ba2, &qa2, vals, k, sc, (const float *)(big + ba2 - 4), n, k), AMXK_ERR_ALIAS,
               "pack_quant: zeros overlap dst's last bytes");
        wt.p[5] = NULL;
        test_free(big);
    }
    /* a valid pack, then info / dequantize / workspace / linear errors */
    {
        unsigned char *p = (unsigned char *)test_alloc(b4), *pb;
        size_t bb = 0, on = 7, ok_ = 7, wsb = 0, wsb2 = 0;
        amxk_quant qo;
        float *dq = (float *)test_alloc(n * k * 4 + b4 + 64);
        amxk_dtype dt;
        CHECK(amxk_quantize_pack(&ctx, p, b4, &qi4, w, AMXK_DTYPE_F32, n, k, k + 1) == AMXK_OK, "quantize");
        CHECK(amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, &bb) == AMXK_OK, "bf16 size");
        pb = (unsigned char *)test_alloc(bb);
        CHECK(amxk_pack_linear(&ctx, pb, bb, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, n, k, k + 1) == AMXK_OK, "bf16 pack");
        memset(&qo, 0x5a, sizeof qo);
        CHECK(amxk_packed_quant_info(pb, bb, &qo, &on, &ok_) == AMXK_ERR_FORMAT && on == 7 && ok_ == 7 && qo.block_k != 32,
              "quant_info on a bf16 pack: AMXK_ERR_FORMAT, outputs untouched");
        CHECK(amxk_packed_quant_info(NULL, b4, NULL, NULL, NULL) == AMXK_ERR_NULL, "quant_info NULL buffer");
        CHECK(amxk_packed_quant_info(p, 63, NULL, NULL, NULL) == AMXK_ERR_FORMAT, "quant_info 63 bytes");
        p[2] ^= 4;
        CHECK(amxk_packed_quant_info(p, b4, NULL, NULL, NULL) == AMXK_ERR_FORMAT, "quant_info corrupted magic");
        CHECK(amxk_packed_linear_info(p, b4, &dt, NULL, NULL) == AMXK_ERR_FORMAT, "linear_info corrupted magic");
        p[2] ^= 4;
        CHECK(amxk_packed_quant_info(p, b4, &qo, NULL, NULL) == AMXK_OK && qo.format == AMXK_QFMT_INT4, "restored");
        memset(&wt, 0, sizeof wt);
        wt.p[0] = dq, wt.p[1] = p;
        EXPECT(amxk_dequantize(NULL, b4, dq, k), AMXK_ERR_NULL, "dequantize: NULL packed");
        EXPECT(amxk_dequantize(p, b4, NULL, k), AMXK_ERR_NULL, "dequantize: NULL w");
        EXPECT(amxk_dequantize(p, b4, dq, k - 1), AMXK_ERR_STRIDE, "dequantize: ldw < K");
        EXPECT(amxk_dequantize(p, b4 - 1, dq, k), AMXK_ERR_FORMAT, "dequantize: truncated pack");
        {   /* w overlapping the pack: copy the pack into dq's buffer and dequantize onto itself */
            unsigned char *inside = (unsigned char *)dq + 64;
            memcpy(inside, p, b4);
            EXPECT(amxk_dequantize(inside, b4, dq, k), AMXK_ERR_ALIAS, "dequantize: w overlaps the pack");
        }
        /* workspace_size_for */
        b = 31;
        CHECK(amxk_linear_workspace_size_for(&bad0, 5, p, b4, &b) == AMXK_ERR_CONTEXT && b == 31, "ws_for: uninitialised ctx");
        CHECK(amxk_linear_workspace_size_for(&ctx, 5, p, b4, NULL) == AMXK_ERR_NULL, "ws_for: NULL bytes");
        CHECK(amxk_linear_workspace_size_for(&ctx, 5, NULL, b4, &b) == AMXK_ERR_NULL && b == 31, "ws_for: NULL packed");
        CHECK(amxk_linear_workspace_size_for(&ctx, 0, p, b4, &b) == AMXK_ERR_SHAPE && b == 31, "ws_for: m 0");
        CHECK(amxk_linear_workspace_size_for(&ctx, 5, p, b4 - 1, &b) == AMXK_ERR_FORMAT && b == 31, "ws_for: truncated pack");
        {
            int t;
            for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
                amxk_ctx tc;
                if (!tier_usable((amxk_tier)t)) continue;
                ctx_for(&tc, (amxk_tier)t, 2);
                CHECK(amxk_linear_workspace_size_for(&tc, 9, pb, bb, &wsb) == AMXK_OK && amxk_linear_workspace_size(&tc, 9, n, k, &wsb2) == AMXK_OK &&
                          wsb == wsb2,
                      "[%s] ws_for on a bf16 pack %zu == workspace_size %zu", amxk_tier_name((amxk_tier)t), wsb, wsb2);
            }
        }
        test_free(pb);
        test_free(dq);
        test_free(p);
    }
#undef EXPECT
    /* amxk_linear on quantized packs, per tier */
    {
        int t;
        for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
            const size_t m = 7, ybytes = ((m - 1) * (n + 1) + n) * 4;
            amxk_ctx tc;
            size_t wsb = 0, bo = 0;
            unsigned char *p, *po, *ws, *y, *x;
            int fi;
            if (!tier_usable((amxk_tier)t)) continue;
            ctx_for(&tc, (amxk_tier)t, 1);
            for (fi = 0; fi < 2; fi++) {
                const amxk_quant *qq = fi ? &qf8 : &qa2;
                const size_t bq = fi ? bf8 : ba2;
                amxk_status st;
                p = (unsigned char *)test_alloc(bq + ybytes);
                CHECK(amxk_quantize_pack(&tc, p, bq, qq, w, AMXK_DTYPE_F32, n, k, k + 1) == AMXK_OK, "quantize");
                CHECK(amxk_linear_workspace_size_for(&tc, m, p, bq, &wsb) == AMXK_OK && wsb > 0, "[%s] ws_for %zu", amxk_tier_name((amxk_tier)t), wsb);
                ws = (unsigned char *)test_alloc(wsb + 64);
                x = (unsigned char *)test_alloc(m * k * 2);
                test_case_begin(test_case_id("quant bad args linear", (uint64_t)fi)); /* the same x on every tier */
                for (i = 0; i < m * k; i++) ((uint16_t *)x)[i] = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, test_randf(-1, 1));
                y = (unsigned char *)test_alloc(ybytes);
                for (i = 0; i < ybytes; i++) y[i] = (unsigned char)(0x3c + i);
                memset(&wt, 0, sizeof wt);
                wt.p[0] = y, wt.p[1] = x, wt.p[2] = p, wt.p[3] = ws;
#define LIN(ws_, wsb_, pk, pkb, xt_, y_) amxk_linear(&tc, m, n, k, x, (xt_), k, (pk), (pkb), NULL, (y_), AMXK_DTYPE_F32, n + 1, (ws_), (wsb_))
#define EXPECT_LIN(call, want, what)                                                                                   \
    do {                                                                                                               \
        test_watch_take(&wt);                                                                                               \
        st = (call);                                                                                                   \
        CHECK(st == (want), "[%s] %s linear %s: status %d (%s), want %d", amxk_tier_name((amxk_tier)t), fmt_name(qq->format, qq->asym), (what), \
              (int)st, amxk_status_string(st), (int)(want));                                                           \
        CHECK(test_watch_same(&wt), "[%s] linear %s: a buffer changed", amxk_tier_name((amxk_tier)t), (what));             \
    } while (0)
                EXPECT_LIN(LIN(ws, wsb - 1, p, bq, AMXK_DTYPE_BF16, y), AMXK_ERR_WORKSPACE, "workspace one byte smaller than size_for");
                EXPECT_LIN(LIN(ws, 0, p, bq, AMXK_DTYPE_BF16, y), AMXK_ERR_WORKSPACE, "workspace bytes 0");
                EXPECT_LIN(LIN(NULL, wsb, p, bq, AMXK_DTYPE_BF16, y), AMXK_ERR_WORKSPACE, "workspace NULL");
                EXPECT_LIN(LIN(ws + 32, wsb, p, bq, AMXK_DTYPE_BF16, y), AMXK_ERR_ALIGN, "workspace + 32");
                EXPECT_LIN(LIN(ws, wsb, p, bq - 1, AMXK_DTYPE_BF16, y), AMXK_ERR_FORMAT, "pack truncated by one byte");
                EXPECT_LIN(LIN(ws, wsb, p, bq, AMXK_DTYPE_F32, y), AMXK_ERR_DTYPE, "x f32");
                EXPECT_LIN(LIN(ws, wsb, p, bq, AMXK_DTYPE_FP8_E4M3, y), AMXK_ERR_DTYPE, "x e4m3");
                EXPECT_LIN(LIN(ws, wsb, p, bq, AMXK_DTYPE_BF16, p + 64), AMXK_ERR_ALIAS, "y inside the pack");
                EXPECT_LIN(LIN(ws, wsb, p, bq, AMXK_DTYPE_BF16, ws), AMXK_ERR_ALIAS, "y == workspace");
                {   /* a pack for another K (same padded size) / another N */
                    amxk_quant q2 = *qq;
                    if (!fi) q2.block_k = 31;
                    CHECK(amxk_pack_quant_size(&q2, n, k - 2, &bo) == AMXK_OK, "size K-2");
                    po = (unsigned char *)test_alloc(bo);
                    CHECK(amxk_quantize_pack(&tc, po, bo, &q2, w, AMXK_DTYPE_F32, n, k - 2, k + 1) == AMXK_OK, "quantize K-2");
                    EXPECT_LIN(LIN(ws, wsb, po, bo, AMXK_DTYPE_BF16, y), AMXK_ERR_FORMAT, "pack for K - 2");
                    test_free(po);
                    CHECK(amxk_pack_quant_size(qq, n - 1, k, &bo) == AMXK_OK, "size N-1");
                    po = (unsigned char *)test_alloc(bo);
                    CHECK(amxk_quantize_pack(&tc, po, bo, qq, w, AMXK_DTYPE_F32, n - 1, k, k + 1) == AMXK_OK, "quantize N-1");
                    EXPECT_LIN(LIN(ws, wsb, po, bo, AMXK_DTYPE_BF16, y), AMXK_ERR_FORMAT, "pack for N - 1");
                    test_free(po);
                }
                test_watch_take(&wt);
                st = LIN(ws, wsb, p, bq, AMXK_DTYPE_F16, y);
                CHECK(st == AMXK_OK && test_guard_ok(y), "[%s] valid call (x fp16 on a quantized pack): %d", amxk_tier_name((amxk_tier)t), (int)st);
                {
                    size_t gaps = 0;
                    for (i = 0; i + 1 < m; i++)
                        for (b = (i * (n + 1) + n) * 4; b < (i + 1) * (n + 1) * 4; b++) gaps += y[b] != (unsigned char)(0x3c + b);
                    CHECK(gaps == 0, "[%s] %zu gap bytes written", amxk_tier_name((amxk_tier)t), gaps);
                }
                for (i = 0; i < TEST_N_WATCH; i++) free(wt.copy[i]), wt.copy[i] = NULL;
#undef EXPECT_LIN
#undef LIN
                test_free(y);
                test_free(x);
                test_free(ws);
                test_free(p);
            }
        }
    }
    test_free(dst);
    test_free(zr);
    test_free(sc);
    test_free(vals);
    test_free(w);
}

/* portability: every context quantizes byte-identical packs */
static void test_portability(void) {
    const size_t n = 37, k = 96;
    float *w = (float *)malloc(n * k * 4);
    size_t i;
    int fi, asym, t;
    TEST_SECTION("quantize_pack: NULL ctx, every tier and pool contexts give byte-identical packs");
    test_case_begin(test_case_id("quant portability", 0));
    for (i = 0; i < n * k; i++) w[i] = (float)randn_ish();
    for (fi = 0; fi < 5; fi++)
        for (asym = 0; asym < (fi < 3 ? 2 : 1); asym++) {
            amxk_quant q;
            size_t bytes = 0;
            unsigned char *p0, *p1;
            q.format = all_fmts[fi], q.asym = asym, q.block_n = fi < 3 ? 1 : 16, q.block_k = fi < 3 ? 32 : 64;
            CHECK(amxk_pack_quant_size(&q, n, k, &bytes) == AMXK_OK, "size");
            p0 = (unsigned char *)test_alloc(bytes), p1 = (unsigned char *)test_alloc(bytes);
            memset(p0, 0, bytes); /* unwritten padding (if any) must not matter for the compare */
            CHECK(amxk_quantize_pack(NULL, p0, bytes, &q, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK, "quantize NULL ctx");
            for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
                amxk_ctx ctx;
                if (!tier_usable((amxk_tier)t)) continue;
                ctx_for(&ctx, (amxk_tier)t, 3);
                memset(p1, 0, bytes);
                CHECK(amxk_quantize_pack(&ctx, p1, bytes, &q, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK && memcmp(p0, p1, bytes) == 0,
                      "[%s] %s pack identical to the NULL-ctx one", amxk_tier_name((amxk_tier)t), fmt_name(q.format, asym));
            }
            test_free(p0), test_free(p1);
        }
    free(w);
}

/* ---- accuracy table (informational) ------------------------------------------------------------------ */

static void accuracy_table(void) {
    static const struct { amxk_qformat f; int asym; size_t bn, bk; const char *name; } rows[] = {
        {AMXK_QFMT_NONE, 0, 0, 0, "bf16 (pack_linear)"},
        {AMXK_QFMT_INT8, 0, 1, 128, "int8 sym g128"},   {AMXK_QFMT_INT8, 1, 1, 128, "int8 asym g128"},
        {AMXK_QFMT_INT8, 0, 1, 1024, "int8 sym per-chan"},
        {AMXK_QFMT_INT4, 0, 1, 32, "int4 sym g32"},     {AMXK_QFMT_INT4, 0, 1, 128, "int4 sym g128"},
        {AMXK_QFMT_INT4, 1, 1, 128, "int4 asym g128"},  {AMXK_QFMT_INT4, 0, 1, 1024, "int4 sym per-chan"},
        {AMXK_QFMT_INT2, 0, 1, 32, "int2 sym g32"},     {AMXK_QFMT_INT2, 1, 1, 32, "int2 asym g32"},
        {AMXK_QFMT_INT2, 0, 1, 128, "int2 sym g128"},   {AMXK_QFMT_INT2, 1, 1, 128, "int2 asym g128"},
        {AMXK_QFMT_FP8_E4M3, 0, 128, 128, "e4m3 128x128"}, {AMXK_QFMT_FP8_E4M3, 0, 1, 1024, "e4m3 per-chan"},
        {AMXK_QFMT_FP8_E4M3, 0, 256, 1024, "e4m3 per-tensor"},
        {AMXK_QFMT_FP8_E5M2, 0, 128, 128, "e5m2 128x128"}, {AMXK_QFMT_FP8_E5M2, 0, 256, 1024, "e5m2 per-tensor"},
    };
    const size_t m = 8, n = 256, k = 1024;
    float *w = (float *)malloc(n * k * 4), *y = (float *)malloc(m * n * 4), *dq = (float *)malloc(n * k * 4);
    uint16_t *x = (uint16_t *)malloc(m * k * 2);
    double *ref = (double *)malloc(m * n * sizeof(double)), rr = 0, wn = 0;
    size_t i, j, kk, ri;
    test_case_begin(0);
    test_rng_state = 0x5eed5eedull; /* the same data whatever the seed (a table to compare between runs) */
    TEST_SECTION("accuracy table (informational, not asserted): M 8, N 256, K 1024, W and x normal-ish, x bf16, y f32, NULL ctx");
    printf("  relative RMS vs fp64 on the ORIGINAL f32 weights: output = ||y - y_ref|| / ||y_ref||, weights = ||W - deq|| / ||W||\n");
    for (i = 0; i < n * k; i++) w[i] = (float)(randn_ish() * 0.02);
    for (i = 0; i < m * k; i++) x[i] = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, (float)randn_ish());
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0;
            for (kk = 0; kk < k; kk++) s += test_ref_decode(AMXK_DTYPE_BF16, x[i * k + kk]) * (double)w[j * k + kk];
            ref[i * n + j] = s, rr += s * s;
        }
    for (i = 0; i < n * k; i++) wn += (double)w[i] * w[i];
    printf("  %-20s %12s %12s %10s\n", "format", "output", "weights", "bytes/w");
    for (ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
        size_t bytes = 0, wsb = 0;
        unsigned char *p;
        void *ws;
        double e = 0, ew = 0;
        amxk_status s;
        if (rows[ri].f == AMXK_QFMT_NONE) {
            (void)amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, &bytes);
            p = (unsigned char *)test_alloc(bytes);
            s = amxk_pack_linear(NULL, p, bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, n, k, k);
        } else {
            amxk_quant q;
            q.format = rows[ri].f, q.asym = rows[ri].asym, q.block_n = rows[ri].bn, q.block_k = rows[ri].bk;
            (void)amxk_pack_quant_size(&q, n, k, &bytes);
            p = (unsigned char *)test_alloc(bytes);
            s = amxk_quantize_pack(NULL, p, bytes, &q, w, AMXK_DTYPE_F32, n, k, k);
        }
        CHECK(s == AMXK_OK, "%s: pack %d", rows[ri].name, (int)s);
        CHECK(amxk_linear_workspace_size_for(NULL, m, p, bytes, &wsb) == AMXK_OK, "ws");
        ws = test_alloc(wsb);
        s = amxk_linear(NULL, m, n, k, x, AMXK_DTYPE_BF16, k, p, bytes, NULL, y, AMXK_DTYPE_F32, n, ws, wsb);
        CHECK(s == AMXK_OK, "%s: linear %d", rows[ri].name, (int)s);
        CHECK(amxk_dequantize(p, bytes, dq, k) == AMXK_OK, "dequantize");
        for (i = 0; i < m * n; i++) e += (y[i] - ref[i]) * (y[i] - ref[i]);
        for (i = 0; i < n * k; i++) ew += ((double)dq[i] - w[i]) * ((double)dq[i] - w[i]);
        printf("  %-20s %12.3e %12.3e %10.3f\n", rows[ri].name, sqrt(e / rr), sqrt(ew / wn), (double)(bytes - HDR) / (double)(n * k));
        test_free(ws);
        test_free(p);
    }
    free(w), free(y), free(dq), free(x), free(ref);
}

static void print_stats(void) {
    static const char *yn[3] = {"f32", "bf16", "f16"};
    int t, yi;
    TEST_SECTION("measured linear accuracy (bound: ratio <= C = 1; see the top of this file)");
    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) {
        if (!stats[t].cases) continue;
        printf("  %-6s %4ld cases %7ld outputs %5.1f s  max error ratio:", amxk_tier_name((amxk_tier)t), stats[t].cases, stats[t].outputs,
               stats[t].seconds);
        for (yi = 0; yi < 3; yi++) printf(" %s %.3g", yn[yi], stats[t].max_ratio[yi]);
        printf("\n");
        for (yi = 0; yi < 3; yi++)
            if (stats[t].worst[yi][0]) printf("         worst %s: %s\n", yn[yi], stats[t].worst[yi]);
        if (stats[t].amx_outputs)
            printf("         tile path: %ld of %ld outputs would fail the f32-weight reference (the bf16/fp16 weight rounding is real)\n",
                   stats[t].amx_fail_f32, stats[t].amx_outputs);
    }
    printf("  quantizer: %ld blocks, %ld values checked against the documented rules (%ld near ties accepted either way); "
           "error bound checked on %ld values, max |w - deq| / bound %.3f\n",
           qstats.blocks, qstats.values, qstats.near_ties, qstats.bound_checked, qstats.max_err_ratio);
}

/* ---- MXFP4 ------------------------------------------------------------------------------------------
   Decoded from the documented layout (codes where symmetric int4 fields sit; then the e8m0 grid, one
   byte per (group, row), in tiles of 16 rows as the fp32 grids, after the blocks), values from the e2m1 definition (sign, 2
   exponent bits with bias 1, 1 mantissa bit; exponent 0: subnormal m * 0.5), scales 2^(e - 127)
   (e = 255: NaN), all in double. */

static double mx_e2m1(unsigned c) {
    const unsigned e = (c >> 1) & 3u, m = c & 1u;
    const double mag = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, (int)e - 1);
    return (c & 8u) ? -mag : mag;
}
static double mx_e8m0(unsigned e) { return e == 255 ? NAN : ldexp(1.0, (int)e - 127); }
static size_t mx_grid_off(size_t n, size_t k) { return HDR + ceil_div(n, 16) * 16 * (k / 2); }
static unsigned mx_code(const unsigned char *p, size_t n, size_t k, size_t r, size_t kk) {
    (void)n;
    return (p[HDR + (r / 16) * 16 * (k / 2) + (kk / 8) * 64 + (r % 16) * 4 + kk % 4] >> (((kk / 4) % 2) * 4)) & 15u;
}
static unsigned mx_e(const unsigned char *p, size_t n, size_t k, size_t r, size_t kk) {
    (void)n;
    return p[mx_grid_off(n, k) + (r / 16) * (k / 32) * 16 + (kk / 32) * 16 + r % 16];
}
static double mx_w(const unsigned char *p, size_t n, size_t k, size_t r, size_t kk) {
    return mx_e8m0(mx_e(p, n, k, r, kk)) * mx_e2m1(mx_code(p, n, k, r, kk));
}
/* OCP quantization in double: the code of t (ties to the even mantissa, saturating), sign kept. */
static unsigned mx_ref_code(double t) {
    unsigned best = 0, c;
    double a = fabs(t);
    for (c = 1; c < 8; c++) {
        double d = fabs(mx_e2m1(c) - a), db = fabs(mx_e2m1(best) - a);
        if (d < db || (d == db && (c & 1u) == 0)) best = c;
    }
    return best | (signbit(t) ? 8u : 0u);
}

static const amxk_quant mxq = {AMXK_QFMT_MXFP4, 0, 1, 32};

/* A random MXFP4 weight as gpt-oss stores it: blocks [N, K/32, 16], scales [N, K/32]; e in [elo, ehi]. */
static void mx_random(size_t n, size_t k, unsigned char *blocks, unsigned char *scales, int elo, int ehi) {
    size_t i;
    for (i = 0; i < n * k / 2; i++) blocks[i] = (unsigned char)test_randint(0, 255);
    for (i = 0; i < n * k / 32; i++) scales[i] = (unsigned char)test_randint(elo, ehi);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__aarch64__)
__attribute__((optimize("no-tree-vectorize"))) /* aarch64-linux-gnu-gcc 12: ICE in vect_transform_reduction here */
#endif
static void test_mxfp4_pack(void) {
    static const size_t ns[] = {1, 15, 17, 40}, ks[] = {32, 64, 224, 2880};
    size_t ni, ki, i, j;
    TEST_SECTION("MXFP4: pack_quant / import / quantize_pack / dequantize / info against the documented layout");
    for (ni = 0; ni < 4; ni++)
        for (ki = 0; ki < 4; ki++) {
            const size_t n = ns[ni], k = ks[ki], g = k / 32;
            size_t bytes = 0, b2 = 0, bad = 0, badq = 0, bade = 0;
            unsigned char *blocks = (unsigned char *)malloc(n * k / 2), *sc8 = (unsigned char *)malloc(n * g), *codes = (unsigned char *)malloc(n * k);
            float *scf = (float *)malloc(n * g * 4), *wd = (float *)malloc(n * k * 4), *w = (float *)malloc(n * k * 4);
            unsigned char *p1, *p2, *p3;
            amxk_quant qi;
            size_t qn = 0, qk = 0;
            amxk_dtype pdt = AMXK_DTYPE_INVALID;
            test_case_begin(test_case_id("mxfp4 pack", ni * 4 + ki));
            mx_random(n, k, blocks, sc8, 0, 255);
            for (i = 0; i < n; i++)
                for (j = 0; j < k; j++) codes[i * k + j] = (unsigned char)((blocks[i * (k / 2) + j / 2] >> (4 * (j & 1))) & 15u);
            for (i = 0; i < n * g; i++) scf[i] = sc8[i] == 255 ? NAN : (float)ldexp(1.0, sc8[i] - 127);
            CHECK(amxk_pack_quant_size(&mxq, n, k, &bytes) == AMXK_OK && amxk_import_mxfp4_size(n, k, &b2) == AMXK_OK && b2 == bytes,
                  "sizes %zu %zu", bytes, b2);
            CHECK(bytes == round_up(mx_grid_off(n, k) + round_up(n, 16) * g, 64), "size %zu for N %zu K %zu", bytes, n, k);
            p1 = (unsigned char *)test_alloc(bytes), p2 = (unsigned char *)test_alloc(bytes), p3 = (unsigned char *)test_alloc(bytes);
            CHECK(amxk_pack_quant(NULL, p1, bytes, &mxq, codes, k, scf, NULL, n, k) == AMXK_OK, "pack_quant");
            CHECK(amxk_import_mxfp4(NULL, p2, bytes, blocks, sc8, n, k) == AMXK_OK, "import");
            CHECK(memcmp(p1, p2, bytes) == 0 && test_guard_ok(p1) && test_guard_ok(p2), "import != pack_quant N %zu K %zu", n, k);
            for (i = 0; i < n; i++)
                for (j = 0; j < k; j++) {
                    bad += mx_code(p1, n, k, i, j) != codes[i * k + j];
                    bade += mx_e(p1, n, k, i, j) != sc8[i * g + j / 32];
                }
            CHECK(bad == 0 && bade == 0, "layout: %zu codes, %zu scales wrong (N %zu K %zu)", bad, bade, n, k);
            CHECK(amxk_packed_quant_info(p1, bytes, &qi, &qn, &qk) == AMXK_OK && qi.format == AMXK_QFMT_MXFP4 && qi.asym == 0 && qi.block_n == 1 &&
                      qi.block_k == 32 && qn == n && qk == k,
                  "info");
            CHECK(amxk_packed_linear_info(p1, bytes, &pdt, NULL, NULL) == AMXK_OK && pdt == AMXK_DTYPE_U8, "linear_info dtype %d", (int)pdt);
            CHECK(amxk_dequantize(p1, bytes, wd, k) == AMXK_OK, "dequantize");
            for (bad = 0, i = 0; i < n; i++)
                for (j = 0; j < k; j++) bad += !same_f32(wd[i * k + j], (float)(mx_e8m0(sc8[i * g + j / 32]) * mx_e2m1(codes[i * k + j]) + 0.0)); /* -0 reads as +0 */
            CHECK(bad == 0, "dequantize: %zu values differ (N %zu K %zu)", bad, n, k);
            /* quantize_pack: the OCP rule, re-implemented in double; groups with special amax */
            for (i = 0; i < n * k; i++) w[i] = (float)(randn_ish() * ldexp(1.0, test_randint(-3, 3)));
            for (i = 0; i < n; i++) {
                float *gw = w + i * k + 32 * (i % g);
                switch (i % 6) {
                case 0: for (j = 0; j < 32; j++) gw[j] = 0.0f; break;                    /* zeros: e = 127 */
                case 1: for (j = 0; j < 32; j++) gw[j] = (float)ldexp(mx_e2m1(j % 16) + (j & 1 ? 0.25 : -0.25), 3); gw[0] = 48.0f; break; /* ties */
                case 2: for (j = 0; j < 32; j++) gw[j] = (float)ldexp(test_uniform(-1, 1), -140); break; /* subnormal amax: e = 0 */
                case 3: gw[5] = 7.0f * 8.0f, gw[6] = -0.0f; break;
                default: break;
                }
            }
            CHECK(amxk_quantize_pack(NULL, p3, bytes, &mxq, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK, "quantize_pack");
            for (bad = 0, i = 0; i < n; i++)
                for (j = 0; j < g; j++) {
                    double amax = 0;
                    size_t t;
                    int e;
                    for (t = 0; t < 32; t++) amax = fmax(amax, fabs(w[i * k + j * 32 + t]));
                    e = amax == 0 ? 127 : (int)floor(log2(amax)) - 2 + 127;
                    e = e < 0 ? 0 : e > 254 ? 254 : e;
                    bade = mx_e(p3, n, k, i, j * 32) != (unsigned)e;
                    bad += bade;
                    for (t = 0; t < 32 && !bade; t++) badq += mx_code(p3, n, k, i, j * 32 + t) != mx_ref_code(w[i * k + j * 32 + t] / ldexp(1.0, e - 127));
                }
            CHECK(bad == 0 && badq == 0, "quantize_pack: %zu scales, %zu codes differ from the OCP rule (N %zu K %zu)", bad, badq, n, k);
            test_free(p1), test_free(p2), test_free(p3);
            free(blocks), free(sc8), free(codes), free(scf), free(wd), free(w);
        }
}

static void test_mxfp4_bad(void) {
    const size_t n = 20, k = 64;
    size_t bytes = 0, i, b;
    unsigned char codes[20 * 64], blocks[20 * 32], sc8[40], *dst, *p;
    float scf[40], y[4 * 20];
    amxk_ctx ctx;
    amxk_quant q;
    int8_t xq[4 * 64];
    TEST_SECTION("MXFP4: bad arguments and forged headers (the right status, nothing written)");
    ctx_for(&ctx, AMXK_TIER_SCALAR, 1);
    test_case_begin(test_case_id("mxfp4 bad", 0));
    memset(codes, 3, sizeof codes), memset(blocks, 0x21, sizeof blocks), memset(sc8, 127, sizeof sc8), memset(xq, 1, sizeof xq);
    for (i = 0; i < 40; i++) scf[i] = 1.0f;
    CHECK(amxk_pack_quant_size(&mxq, n, k, &bytes) == AMXK_OK, "size");
    {
        struct { amxk_qformat f; int asym; size_t bn, bk, k; } cs[] = {{AMXK_QFMT_MXFP4, 1, 1, 32, 64}, {AMXK_QFMT_MXFP4, 0, 2, 32, 64},
                                                                  {AMXK_QFMT_MXFP4, 0, 1, 64, 64}, {AMXK_QFMT_MXFP4, 0, 1, 16, 64},
                                                                  {AMXK_QFMT_MXFP4, 0, 1, 32, 48}, {AMXK_QFMT_MXFP4, 0, 1, 0, 64}};
        for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            q.format = cs[i].f, q.asym = cs[i].asym, q.block_n = cs[i].bn, q.block_k = cs[i].bk;
            CHECK(amxk_pack_quant_size(&q, n, cs[i].k, &b) == AMXK_ERR_ARG, "size case %zu", i);
        }
    }
    dst = (unsigned char *)test_alloc(bytes);
#define MX_UNTOUCHED(what) do { size_t z_, nz_ = 0; for (z_ = 0; z_ < bytes; z_++) nz_ += dst[z_] != 0xff; CHECK(nz_ == 0 && test_guard_ok(dst), "%s: dst written", what); } while (0)
    codes[77] = 16;
    CHECK(amxk_pack_quant(&ctx, dst, bytes, &mxq, codes, k, scf, NULL, n, k) == AMXK_ERR_ARG, "code 16");
    MX_UNTOUCHED("code 16");
    codes[77] = 3;
    {
        const float badsc[] = {3.0f, -1.0f, 0.0f, INFINITY, 0x1p-128f, 1.5f, -0.0f};
        for (i = 0; i < sizeof badsc / sizeof badsc[0]; i++) {
            scf[13] = badsc[i];
            CHECK(amxk_pack_quant(&ctx, dst, bytes, &mxq, codes, k, scf, NULL, n, k) == AMXK_ERR_ARG, "scale %g", (double)badsc[i]);
            MX_UNTOUCHED("bad scale");
        }
        scf[13] = 0x1p-127f;
        CHECK(amxk_pack_quant(&ctx, dst, bytes - 1, &mxq, codes, k, scf, NULL, n, k) == AMXK_ERR_WORKSPACE, "small dst");
        MX_UNTOUCHED("small dst");
    }
    CHECK(amxk_import_mxfp4(&ctx, dst, bytes, blocks, sc8, n, 48) == AMXK_ERR_SHAPE, "import K 48");
    CHECK(amxk_import_mxfp4_size(n, 48, &b) == AMXK_ERR_SHAPE, "import size K 48");
    CHECK(amxk_import_mxfp4(&ctx, dst, bytes, NULL, sc8, n, k) == AMXK_ERR_NULL, "import NULL");
    CHECK(amxk_import_mxfp4(&ctx, dst, bytes - 64, blocks, sc8, n, k) == AMXK_ERR_WORKSPACE, "import small");
    CHECK(amxk_import_mxfp4(&ctx, dst + 1, bytes - 64, blocks, sc8, n, k) == AMXK_ERR_ALIGN, "import align");
    MX_UNTOUCHED("import");
#undef MX_UNTOUCHED
    /* a valid pack, then forged headers: every reader says FORMAT, y untouched */
    p = (unsigned char *)test_alloc(bytes);
    CHECK(amxk_pack_quant(&ctx, p, bytes, &mxq, codes, k, scf, NULL, n, k) == AMXK_OK, "pack");
    CHECK(amxk_linear_q8(&ctx, 4, n, k, xq, AMXK_DTYPE_I8, k, scf, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, y, AMXK_DTYPE_F32, n) == AMXK_ERR_FORMAT,
          "linear_q8 with an MXFP4 pack");
    {
        struct { size_t off; uint32_t val; int w64; } fz[] = {{36, 1, 0},          /* asym 1 */
                                                             {48, 64, 1},          /* block_k 64 */
                                                             {40, 2, 1},           /* block_n 2 */
                                                             {56, 1, 0},           /* flags: no_nan (fp8 only) */
                                                             {12, AMXK_DTYPE_I8, 0}, /* dtype */
                                                             {24, 48, 1}};         /* K 48 */
        unsigned char *f = (unsigned char *)test_alloc(bytes);
        float *yb = (float *)test_alloc(4 * n * 4), *ws;
        size_t wsb = 0, z;
        uint16_t x[4 * 64];
        for (i = 0; i < 4 * 64; i++) x[i] = 0x3f80;
        CHECK(amxk_linear_workspace_size(&ctx, 4, n, k, &wsb) == AMXK_OK, "ws");
        ws = (float *)test_alloc(wsb + 4096);
        for (i = 0; i < sizeof fz / sizeof fz[0] + 1; i++) {
            amxk_status s1, s2;
            size_t nz = 0;
            memcpy(f, p, bytes);
            if (i < sizeof fz / sizeof fz[0]) {
                if (fz[i].w64) { uint64_t v = fz[i].val; memcpy(f + fz[i].off, &v, 8); }
                else if (fz[i].off == 56) f[56] = (unsigned char)fz[i].val;
                else memcpy(f + fz[i].off, &fz[i].val, 4);
            }
            s1 = amxk_packed_quant_info(f, i < sizeof fz / sizeof fz[0] ? bytes : bytes - 1, NULL, NULL, NULL);
            test_poison(yb, 4 * n * 4);
            s2 = amxk_linear(&ctx, 4, n, k, x, AMXK_DTYPE_BF16, k, f, i < sizeof fz / sizeof fz[0] ? bytes : bytes - 1, NULL, yb, AMXK_DTYPE_F32, n,
                             ws, wsb + 4096);
            for (z = 0; z < 4 * n * 4; z++) nz += ((unsigned char *)yb)[z] != 0xff;
            CHECK(s1 == AMXK_ERR_FORMAT && s2 == AMXK_ERR_FORMAT && nz == 0, "forged header %zu: info %d linear %d, %zu y bytes written", i, (int)s1,
                  (int)s2, nz);
        }
        test_free(f), test_free(yb), test_free(ws);
    }
    test_free(p), test_free(dst);
}

/* amxk_linear with MXFP4 packs on every tier against the fp64 reference (TOLERANCE above, C = 1; the
   dequantized weights are exact in bf16 and fp16 for the scales used, so the 16-bit tile paths share
   the reference). Also: a NaN scale (e = 255) makes exactly its row's outputs NaN; e = 0 (2^-127)
   with x near 2^122 (bf16 x, decode shapes, no bias). */
static void mx_linear_case(size_t m, size_t n, size_t k, amxk_dtype xt, amxk_dtype yt, int special, uint64_t id) {
    const size_t g = k / 32;
    unsigned char *blocks = (unsigned char *)malloc(n * k / 2), *sc8 = (unsigned char *)malloc(n * g), *p;
    uint16_t *x = (uint16_t *)test_alloc(m * k * 2);
    double *xd = (double *)malloc(m * k * 8);
    float *bias = (float *)malloc(n * sizeof(float));
    size_t bytes = 0, i, j, kk;
    amxk_tier t;
    amxk_ctx ctx;
    const size_t nan_row = n > 3 ? 3 : 0;
    test_case_begin(id);
    mx_random(n, k, blocks, sc8, 123, 130);
    if (special == 1) sc8[nan_row * g + g / 2] = 255;
    if (special == 2)
        for (i = 0; i < n * g; i++) sc8[i] = (unsigned char)(i % 3 == 0 ? 0 : test_randint(0, 3));
    for (i = 0; i < m * k; i++) {
        x[i] = (uint16_t)test_ref_encode(xt, (float)(special == 2 ? ldexp(test_uniform(-1, 1), 122) : randn_ish()));
        xd[i] = test_ref_decode(xt, x[i]);
    }
    for (i = 0; i < n; i++) bias[i] = special == 2 ? 0.0f : test_randf(-1, 1);
    CHECK(amxk_import_mxfp4_size(n, k, &bytes) == AMXK_OK, "size");
    p = (unsigned char *)test_alloc(bytes);
    CHECK(amxk_import_mxfp4(NULL, p, bytes, blocks, sc8, n, k) == AMXK_OK, "import");
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t wsb = 0, nbad = 0;
        void *ws, *y;
        amxk_status s;
        char first[200] = "";
        CHECK(amxk_linear_workspace_size_for(&ctx, m, p, bytes, &wsb) == AMXK_OK, "ws");
        ws = test_alloc(wsb);
        y = test_alloc(m * n * amxk_dtype_size(yt));
        test_noise_fill(ws, wsb);
        s = amxk_linear(&ctx, m, n, k, x, xt, k, p, bytes, bias, y, yt, n, ws, wsb);
        CHECK(s == AMXK_OK, "[%s] status %d", amxk_tier_name(t), (int)s);
        for (i = 0; i < m && s == AMXK_OK; i++)
            for (j = 0; j < n; j++) {
                double ref = 0, mag = 0, got, tol;
                int want_nan = 0;
                for (kk = 0; kk < k; kk++) {
                    double wv = mx_w(p, n, k, j, kk);
                    if (isnan(wv)) want_nan = 1;
                    else ref += xd[i * k + kk] * wv, mag += fabs(xd[i * k + kk] * wv);
                }
                ref += bias[j], mag += fabs(bias[j]);
                got = yt == AMXK_DTYPE_F32 ? ((float *)y)[i * n + j] : test_ref_decode(yt, ((uint16_t *)y)[i * n + j]);
                tol = (yt == AMXK_DTYPE_F32 ? 0 : ldexp(1, -8)) * fabs(ref) + (yt == AMXK_DTYPE_F32 ? 0 : ldexp(1, -134)) +
                      (1 + (yt == AMXK_DTYPE_F32 ? 0 : ldexp(1, -8))) * TOL_C * (double)(k + 2 + g) * ldexp(1, -24) * mag;
                if (want_nan ? !isnan(got) : !(fabs(got - ref) <= tol)) {
                    if (nbad++ == 0) snprintf(first, sizeof first, "(%zu, %zu) got %.9g want %.9g tol %.3g", i, j, got, ref, tol);
                }
            }
        CHECK(nbad == 0, "[%s] MXFP4 M %zu N %zu K %zu x %s y %s special %d: %zu bad, first %s", amxk_tier_name(t), m, n, k, dt_name(xt), dt_name(yt),
              special, nbad, first);
        CHECK(test_guard_ok(y) && test_guard_ok(ws) && test_guard_ok(x) && test_guard_ok(p), "[%s] guards", amxk_tier_name(t));
        test_free(ws), test_free(y);
    }
    test_free(p), test_free(x);
    free(blocks), free(sc8), free(xd), free(bias);
}
static void test_mxfp4_linear(void) {
    static const size_t ms[] = {1, 2, 3, 4, 5, 12, 13, 33}, ns[] = {1, 15, 16, 17, 40}, ks[] = {32, 64, 224, 416, 2880};
    size_t mi, ni, ki;
    uint64_t c = 0;
    TEST_SECTION("MXFP4: amxk_linear on every tier vs fp64 (shapes, x bf16 / f16, y f32 / bf16, NaN scale 0xFF, e = 0)");
    for (mi = 0; mi < 8; mi++)
        for (ni = 0; ni < 5; ni++)
            for (ki = 0; ki < 5; ki++) {
                if (quick && (mi + ni + ki) % 3) continue;
                if (ks[ki] == 2880 && (mi % 3 || ni % 2)) continue;
                mx_linear_case(ms[mi], ns[ni], ks[ki], (mi + ki) % 2 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16, (ni + mi) % 3 == 2 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32,
                               0, test_case_id("mxfp4 linear", c++));
            }
    for (mi = 0; mi < 8; mi++) {
        mx_linear_case(ms[mi], 17, 96, AMXK_DTYPE_BF16, AMXK_DTYPE_F32, 1, test_case_id("mxfp4 nan", mi));
        mx_linear_case(ms[mi], 17, 96, AMXK_DTYPE_F16, AMXK_DTYPE_F32, 1, test_case_id("mxfp4 nan f16", mi));
        if (ms[mi] <= 4) mx_linear_case(ms[mi], 33, 128, AMXK_DTYPE_BF16, AMXK_DTYPE_F32, 2, test_case_id("mxfp4 tiny scale", mi));
    }
    /* one bf16 row against > 16 KiB packed blocks (K = 2880) and enough of them (N = 260: 17 blocks, the
       last ragged) that a decode task holds 4 or more: the kernel streams 4 blocks at once there
       (AMXK__Q4_D1B), one at a time otherwise */
    mx_linear_case(1, 260, 2880, AMXK_DTYPE_BF16, AMXK_DTYPE_F32, 0, test_case_id("mxfp4 linear 4 streams", 0));
    mx_linear_case(1, 260, 2880, AMXK_DTYPE_BF16, AMXK_DTYPE_BF16, 1, test_case_id("mxfp4 linear 4 streams nan", 0));
}

int main(void) {
    const char *q = getenv("AMXK_TEST_QUICK");
    double t0 = now_s();
    quick = q && *q && strcmp(q, "0") != 0;
    test_init();
    if (quick) printf("AMXK_TEST_QUICK: smaller sweeps\n");
    {
        amxk_ctx c;
        int t;
        for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++) (void)test_ctx(&c, (amxk_tier)t, 1);
    }
    test_quantizer_rules();
    test_pack_quant_roundtrip();
    test_fp8_linear_codes();
    test_zero_groups();
    test_bad_args();
    test_portability();
    test_threads();
    test_amx_grid();
    test_sweep();
    test_mxfp4_pack();
    test_mxfp4_bad();
    test_mxfp4_linear();
    print_stats();
    accuracy_table();
    printf("total cpu time %.1f s\n", now_s() - t0);
    return test_finish();
}
