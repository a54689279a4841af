/* tests/test_actq.c - dynamic activation quantization (amxk_quantize_act) and scale-table relayout
   (amxk_scales_relayout) against references written here:
     int8:  s = amax / 127, q = round-half-even(x / s) clamped to [-127, 127]; u8 = q + 128
     e4m3:  s = amax / 448, q = the e4m3 value nearest x / s (ties to even), saturating
   amax over each group of `group` columns; a zero group gets s = 1. The two scale layouts must hold
   the same numbers ([M, K/g] row-major and [K/g, M] group-major), and relayout must be a true
   transpose: row -> group -> row gives back the original, which a reshape of the same buffer would
   not (checked on a non-square table). amxk_linear_q8 against exact integer sums in double, its
   activations as I8 and as U8 codes (x + 128, from amxk_quantize_act and made by hand): the U8 call
   must give the I8 call's y bit for bit; -128 (I8 0x80, U8 0x00) and bad dtypes refused. */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"
#include "../amxk_pack.h"

static double ref_rne(double v) {
    double f = floor(v), d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0)) f += 1;
    return f;
}
static float xval(const void *x, amxk_dtype t, size_t i) {
    return t == AMXK_DTYPE_F32 ? ((const float *)x)[i] : (float)test_ref_decode(t, ((const uint16_t *)x)[i]);
}

/* Element j of a group of row kind `kind` for the tie cases (amax first): x / s at, and ulps either
   side of, half-integers k + 0.5 (the fast path's fix-up: amxk__ACTQ_DEFINE), for s = 1, s = 100 / 127
   (not a power of 2: x0 = (k + 0.5) s, then -3 .. +3 ulps), s = 1 / 8, s = FLT_MIN (the smallest s
   the fast path takes); and a subnormal amax (s subnormal: x / s up to 128, past 127.5, clamped). */
static float tie_val(int kind, size_t j) {
    static const float amax[5] = {127.0f, 100.0f, 15.875f, 1e-40f, 127.0f * 1.17549435e-38f};
    const float h = (float)((int)(j / 7 % 254) - 127) + 0.5f, s = amax[kind] / 127.0f;
    float v = h;
    int d;
    if (j == 0) return amax[kind];
    if (kind == 3) return amax[kind] * (float)((int)(j % 11) - 5) / 5.0f;
    if (kind == 1) v = h * s;
    if (kind == 2 || kind == 4) v = h * s; /* exact: s a power of 2 */
    for (d = (int)(j % 7) - 3; d != 0; d += d > 0 ? -1 : 1) v = nextafterf(v, d > 0 ? 1e30f : -1e30f);
    return v;
}

static void check_case(const amxk_ctx *ctx, size_t m, size_t k, size_t group, amxk_dtype xt, amxk_dtype ot, size_t ldx,
                       size_t ldq, const char *tier, int ties) {
    const size_t ng = k / group, esz = amxk_dtype_size(xt);
    void *x = malloc(m * ldx * esz);
    uint8_t *q = (uint8_t *)test_alloc(m * ldq), *q2 = (uint8_t *)test_alloc(m * ldq);
    float *sr = (float *)test_alloc(m * ng * 4), *sg = (float *)test_alloc(ng * m * 4);
    size_t i, j, g, bad = 0, bads = 0;
    amxk_status st;
    /* the case's data depends on its parameters only: the same x on every tier and worker count */
    uint64_t id = test_case_mix(test_case_mix(test_case_mix(test_case_id("actq quantize", m), k), group),
                                test_case_mix(test_case_mix(test_case_mix((uint64_t)xt, (uint64_t)ot), ldx), ldq));
    test_case_begin(ties ? test_case_mix(id, 0x7469) : id);
    for (i = 0; i < m * ldx; i++) {
        double v = test_uniform(-4.0, 4.0) * (test_rand() % 7 == 0 ? 100.0 : 1.0);
        if (test_rand() % 13 == 0) v = 0; /* some exact zeros; whole zero rows below */
        if (ties) v = tie_val((int)(i / ldx % 5), i % ldx % group);
        if (xt == AMXK_DTYPE_F32) ((float *)x)[i] = (float)v;
        else ((uint16_t *)x)[i] = (uint16_t)test_ref_encode(xt, (float)v);
    }
    if (m > 2 && !ties)
        for (j = 0; j < k; j++) {
            if (xt == AMXK_DTYPE_F32) ((float *)x)[ldx + j] = 0.0f;
            else ((uint16_t *)x)[ldx + j] = 0;
        }
    st = amxk_quantize_act(ctx, m, k, x, xt, ldx, group, ot, q, ldq, sr, AMXK_SCALES_ROW_MAJOR, ng);
    CHECK(st == AMXK_OK, "[%s] quantize (row-major scales): %s", tier, amxk_status_string(st));
    st = amxk_quantize_act(ctx, m, k, x, xt, ldx, group, ot, q2, ldq, sg, AMXK_SCALES_GROUP_MAJOR, m);
    CHECK(st == AMXK_OK, "[%s] quantize (group-major scales): %s", tier, amxk_status_string(st));
    test_dump("actq.q", (int)ctx->tier, q, m * ldq), test_dump("actq.q2", (int)ctx->tier, q2, m * ldq);
    test_dump("actq.sr", (int)ctx->tier, sr, m * ng * 4), test_dump("actq.sg", (int)ctx->tier, sg, m * ng * 4);
    for (i = 0; i < m; i++)
        for (g = 0; g < ng; g++) {
            double amax = 0, s;
            for (j = g * group; j < (g + 1) * group; j++) amax = fmax(amax, fabs((double)xval(x, xt, i * ldx + j)));
            s = (double)((float)amax / (ot == AMXK_DTYPE_FP8_E4M3 ? 448.0f : 127.0f));
            if (!(s > 0)) s = 1;
            if ((double)sr[i * ng + g] != s || (double)sg[g * m + i] != s) bads++;
            for (j = g * group; j < (g + 1) * group; j++) {
                float t = xval(x, xt, i * ldx + j) / (float)s;
                unsigned want;
                if (ot == AMXK_DTYPE_FP8_E4M3) {
                    want = test_ref_encode(AMXK_DTYPE_FP8_E4M3, t);
                } else {
                    double r = fmin(fmax(ref_rne((double)t), -127.0), 127.0);
                    want = (unsigned)(uint8_t)(ot == AMXK_DTYPE_U8 ? (int)r + 128 : (int)(int8_t)(int)r);
                }
                if (q[i * ldq + j] != want || q2[i * ldq + j] != want) bad++;
            }
            for (j = k; j < ldq; j++)
                if (q[i * ldq + j] != 0xff) bad++; /* the gap between rows stays untouched */
        }
    CHECK(bads == 0, "[%s] m=%zu k=%zu g=%zu: %zu scales differ from amax / qmax", tier, m, k, group, bads);
    CHECK(bad == 0, "[%s] m=%zu k=%zu g=%zu out=%d: %zu values differ from the reference", tier, m, k, group, (int)ot, bad);
    CHECK(test_guard_ok(q) && test_guard_ok(sr) && test_guard_ok(sg), "[%s] guards", tier);
    free(x);
    test_free(q), test_free(q2), test_free(sr), test_free(sg);
}

static void test_quantize(void) {
    static const size_t shapes[][3] = {{1, 128, 128}, {3, 256, 128}, {5, 96, 32}, {7, 130, 65}, {33, 64, 1}, {2, 384, 384}};
    static const amxk_dtype xts[3] = {AMXK_DTYPE_BF16, AMXK_DTYPE_F16, AMXK_DTYPE_F32};
    static const amxk_dtype ots[3] = {AMXK_DTYPE_I8, AMXK_DTYPE_U8, AMXK_DTYPE_FP8_E4M3};
    amxk_ctx ctx;
    int t, w;
    size_t si, xi, oi;
    TEST_SECTION("amxk_quantize_act: int8 / u8 / e4m3, both scale layouts, on every tier and worker count");
    TEST_FOR_EACH_TIER(t, ctx) {
        for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (xi = 0; xi < 3; xi++)
                for (oi = 0; oi < 3; oi++)
                    check_case(&ctx, shapes[si][0], shapes[si][1], shapes[si][2], xts[xi], ots[oi], shapes[si][1] + (si % 2) * 3,
                               shapes[si][1] + (si % 3), amxk_tier_name(ctx.tier), 0);
        for (si = 0; si < 3; si++) /* ties: every row kind, groups of 128, a whole row, 72 (masked tail) */
            for (xi = 0; xi < 3; xi++)
                for (oi = 0; oi < 2; oi++)
                    check_case(&ctx, 5, si == 2 ? 144 : 256, si == 0 ? 128 : si == 1 ? 256 : 72, xts[xi], ots[oi],
                               si == 2 ? 144 : 256, 256, amxk_tier_name(ctx.tier), 1);
        for (w = 0; w < TEST_N_WORKER_COUNTS; w++) {
            amxk_ctx pc;
            test_ctx(&pc, (amxk_tier)t, test_worker_counts[w]);
            check_case(&pc, 37, 256, 64, AMXK_DTYPE_BF16, AMXK_DTYPE_I8, 256, 256, "pool", 0);
        }
    }
}

static void test_relayout(void) {
    const size_t m = 5, ng = 3;
    float a[15], b[15], c[15];
    size_t i, g, bad = 0;
    TEST_SECTION("amxk_scales_relayout is a true transpose");
    for (i = 0; i < 15; i++) a[i] = (float)i + 0.5f;
    CHECK(amxk_scales_relayout(m, ng, a, AMXK_SCALES_ROW_MAJOR, ng, b, AMXK_SCALES_GROUP_MAJOR, m) == AMXK_OK, "row -> group");
    for (i = 0; i < m; i++)
        for (g = 0; g < ng; g++)
            if (b[g * m + i] != a[i * ng + g]) bad++;
    CHECK(bad == 0, "group-major holds [g][m] = row-major [m][g] (%zu wrong)", bad);
    CHECK(amxk_scales_relayout(m, ng, b, AMXK_SCALES_GROUP_MAJOR, m, c, AMXK_SCALES_ROW_MAJOR, ng) == AMXK_OK, "group -> row");
    CHECK(memcmp(a, c, sizeof a) == 0, "row -> group -> row is the identity");
    /* a reshape (same buffer read as [ng][m]) would differ from the transpose on this 5 x 3 table */
    for (bad = 0, i = 0; i < 15; i++) bad += a[i] != b[i];
    CHECK(bad > 0, "the transpose differs from a reshape");
    CHECK(amxk_scales_relayout(m, ng, a, AMXK_SCALES_ROW_MAJOR, ng, a, AMXK_SCALES_GROUP_MAJOR, m) == AMXK_ERR_ALIAS, "in place refused");
    CHECK(amxk_scales_relayout(m, ng, a, AMXK_SCALES_ROW_MAJOR, ng - 1, b, AMXK_SCALES_GROUP_MAJOR, m) == AMXK_ERR_STRIDE, "ld_src");
    CHECK(amxk_scales_relayout(m, ng, a, AMXK_SCALES_INVALID, ng, b, AMXK_SCALES_GROUP_MAJOR, m) == AMXK_ERR_ARG, "layout");
}

static void test_bad_input(void) {
    uint16_t x[64];
    uint8_t q[64], q0[64];
    float s[8], s0[8];
    amxk_ctx bad;
    TEST_SECTION("amxk_quantize_act: bad input returns a status and writes nothing");
    memset(x, 0, sizeof x), memset(q, 0x33, sizeof q), memset(s, 0x44, sizeof s);
    memcpy(q0, q, sizeof q), memcpy(s0, s, sizeof s);
    memset(&bad, 0, sizeof bad);
    CHECK(amxk_quantize_act(NULL, 2, 32, NULL, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_NULL, "x NULL");
    CHECK(amxk_quantize_act(NULL, 0, 32, x, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_SHAPE, "m 0");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 32, 0, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_ARG, "group 0");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 32, 12, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_ARG, "group 12 does not divide 32");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_I8, 32, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_DTYPE, "x dtype");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_BF16, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_DTYPE, "out dtype");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 31, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_STRIDE, "ldx");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_GROUP_MAJOR, 1) == AMXK_ERR_STRIDE, "ld_s < M");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_INVALID, 2) == AMXK_ERR_ARG, "layout");
    CHECK(amxk_quantize_act(NULL, 2, 32, x, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_I8, x, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_ALIAS, "q over x");
    CHECK(amxk_quantize_act(&bad, 2, 32, x, AMXK_DTYPE_BF16, 32, 16, AMXK_DTYPE_I8, q, 32, s, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_ERR_CONTEXT, "context");
    CHECK(memcmp(q, q0, sizeof q) == 0 && memcmp(s, s0, sizeof s) == 0, "outputs untouched");
}

/* amxk_linear_q8_ws with a workspace of the queried size, poisoned (0x5a bytes: x = 90 wherever a
   panel byte is read before it is written) and guarded (test_alloc); y_ref: amxk_linear_q8's y, which
   amxk_linear_q8_ws must give bit for bit. 1: it does not (or a status, or a guard hit). */
static int q8_ws_differs(const amxk_ctx *ctx, size_t m, size_t n, size_t k, const void *xq, amxk_dtype xt, size_t ldq, const float *xs,
                         amxk_scale_layout lay, size_t lds, size_t ag, const void *p, size_t bytes, const float *bias, amxk_dtype yt,
                         size_t ldy, const void *y_ref) {
    size_t wsb = 0, ysz = m * ldy * 4;
    unsigned char *y = (unsigned char *)test_alloc(ysz), *ws;
    int differs;
    if (amxk_linear_q8_workspace_size(ctx, m, p, bytes, &wsb) != AMXK_OK) return 1;
    ws = (unsigned char *)test_alloc(wsb ? wsb : 1);
    memset(ws, 0x5a, wsb ? wsb : 1), memset(y, 0xff, ysz);
    differs = amxk_linear_q8_ws(ctx, m, n, k, xq, xt, ldq, xs, lay, lds, ag, p, bytes, bias, y, yt, ldy, wsb ? ws : NULL, wsb) != AMXK_OK ||
              memcmp(y, y_ref, ysz) != 0 || !test_guard_ok(y) || !test_guard_ok(ws);
    test_free(ws), test_free(y);
    return differs;
}

/* amxk_linear_q8 against sum over groups of sx * sw * (exact integer sum), in double. */
static void q8_case(const amxk_ctx *ctx, amxk_qformat fmt, int asym, size_t m, size_t n, size_t k, size_t wg, size_t ag,
                    amxk_scale_layout lay, amxk_dtype yt, int bias, const char *tier, double *rms_num, double *rms_den) {
    const size_t ng = k / ag, lds = lay == AMXK_SCALES_ROW_MAJOR ? ng + 1 : m + 2, ldq = k + 3, ldy = n + 1;
    float *w = (float *)malloc(n * k * 4), *b = (float *)malloc(n * 4), *xs = (float *)malloc((lay == AMXK_SCALES_ROW_MAJOR ? m * lds : ng * lds) * 4);
    uint16_t *x = (uint16_t *)malloc(m * k * 2);
    int8_t *xq = (int8_t *)malloc(m * ldq);
    uint8_t *xu = (uint8_t *)malloc(m * ldq);
    float *xsu = (float *)malloc((lay == AMXK_SCALES_ROW_MAJOR ? m * lds : ng * lds) * 4);
    unsigned char *y = (unsigned char *)test_alloc(m * ldy * 4), *yu = (unsigned char *)test_alloc(m * ldy * 4);
    amxk_quant q;
    size_t bytes = 0, i, j, kk, bad = 0;
    void *p;
    amxk_status st;
    /* the case's data depends on its parameters only: the same data on every tier and worker count */
    test_case_begin(test_case_mix(test_case_mix(test_case_mix(test_case_id("actq linear_q8", (uint64_t)fmt * 2 + (uint64_t)asym), m), n),
                                  test_case_mix(test_case_mix(test_case_mix(k, wg), ag), (uint64_t)lay * 64 + (uint64_t)yt * 2 + (uint64_t)bias)));
    for (i = 0; i < n * k; i++) w[i] = (float)test_uniform(-1.0, 1.0);
    for (i = 0; i < n; i++) b[i] = (float)test_uniform(-1.0, 1.0);
    for (i = 0; i < m * k; i++) x[i] = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, (float)test_uniform(-2.0, 2.0));
    q.format = fmt, q.asym = asym, q.block_n = 1, q.block_k = wg;
    amxk_pack_quant_size(&q, n, k, &bytes);
    p = test_alloc(bytes);
    CHECK(amxk_quantize_pack(ctx, p, bytes, &q, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK, "[%s] pack", tier);
    CHECK(amxk_quantize_act(ctx, m, k, x, AMXK_DTYPE_BF16, k, ag, AMXK_DTYPE_I8, xq, ldq, xs, lay, lds) == AMXK_OK, "[%s] act", tier);
    st = amxk_linear_q8(ctx, m, n, k, xq, AMXK_DTYPE_I8, ldq, xs, lay, lds, ag, p, bytes, bias ? b : NULL, y, yt, ldy);
    CHECK(st == AMXK_OK, "[%s] linear_q8: %s", tier, amxk_status_string(st));
    CHECK(st != AMXK_OK || !q8_ws_differs(ctx, m, n, k, xq, AMXK_DTYPE_I8, ldq, xs, lay, lds, ag, p, bytes, bias ? b : NULL, yt, ldy, y),
          "[%s] fmt=%d asym=%d m=%zu n=%zu k=%zu: amxk_linear_q8_ws does not give amxk_linear_q8's y bit for bit", tier, (int)fmt, asym, m, n, k);
    { /* the same activations as U8 (amxk_quantize_act's x + 128): the same y, bit for bit */
        amxk_status su;
        CHECK(amxk_quantize_act(ctx, m, k, x, AMXK_DTYPE_BF16, k, ag, AMXK_DTYPE_U8, xu, ldq, xsu, lay, lds) == AMXK_OK, "[%s] act u8", tier);
        for (i = 0; i < m; i++)
            for (kk = 0; kk < k; kk++) bad += xu[i * ldq + kk] != (uint8_t)(xq[i * ldq + kk] + 128);
        su = amxk_linear_q8(ctx, m, n, k, xu, AMXK_DTYPE_U8, ldq, xsu, lay, lds, ag, p, bytes, bias ? b : NULL, yu, yt, ldy);
        CHECK(bad == 0 && su == AMXK_OK && memcmp(y, yu, m * ldy * 4) == 0 && test_guard_ok(yu),
              "[%s] fmt=%d asym=%d m=%zu n=%zu k=%zu: U8 activations (%zu codes off, %s) do not give I8's y bit for bit", tier, (int)fmt,
              asym, m, n, k, bad, amxk_status_string(su));
        bad = 0;
    }
    {
        float *wd = (float *)malloc(n * k * 4);
        const float *sc = (const float *)0;
        amxk_dequantize(p, bytes, wd, k);
        (void)sc;
        for (i = 0; i < m && st == AMXK_OK; i++)
            for (j = 0; j < n; j++) {
                double ref = bias ? b[j] : 0, mag = fabs(ref), exact = ref, got;
                for (kk = 0; kk < k; kk++) {
                    size_t g = kk / ag;
                    double sx = xs[lay == AMXK_SCALES_ROW_MAJOR ? i * lds + g : g * lds + i];
                    double t = sx * xq[i * ldq + kk] * wd[j * k + kk]; /* wd = sw * q exactly in f32 */
                    ref += t, mag += fabs(t);
                    exact += test_ref_decode(AMXK_DTYPE_BF16, x[i * k + kk]) * w[j * k + kk];
                }
                got = yt == AMXK_DTYPE_F32 ? (double)((float *)y)[i * ldy + j] : test_ref_decode(yt, ((uint16_t *)y)[i * ldy + j]);
                if (fabs(got - ref) > (yt == AMXK_DTYPE_F32 ? 0 : ldexp(1, -8)) * fabs(ref) + 1e-5 * mag + 1e-30) bad++;
                *rms_num += (got - exact) * (got - exact), *rms_den += exact * exact;
            }
        free(wd);
    }
    CHECK(bad == 0, "[%s] fmt=%d asym=%d m=%zu n=%zu k=%zu wg=%zu ag=%zu: %zu outputs off", tier, (int)fmt, asym, m, n, k, wg, ag, bad);
    for (i = 0, bad = 0; i < m && yt == AMXK_DTYPE_F32; i++)
        for (j = n; j < ldy; j++)
            if (y[(i * ldy + j) * 4] != 0xff) bad++;
    CHECK(bad == 0 && test_guard_ok(y), "[%s] y gaps and guards untouched", tier);
    test_free(p), test_free(y), test_free(yu);
    free(w), free(b), free(xs), free(x), free(xq), free(xu), free(xsu);
}

static void test_linear_q8(void) {
    amxk_ctx ctx;
    int t, w;
    TEST_SECTION("amxk_linear_q8 (w8a8, w4a8, w2a8) vs exact integer sums, both scale layouts, every tier");
    static const struct { amxk_qformat f; int asym; const char *name; } fmts[5] = {
        {AMXK_QFMT_INT8, 0, "w8a8"}, {AMXK_QFMT_INT4, 0, "w4a8 sym"}, {AMXK_QFMT_INT4, 1, "w4a8 asym"},
        {AMXK_QFMT_INT2, 0, "w2a8 sym"}, {AMXK_QFMT_INT2, 1, "w2a8 asym"}};
    int fi;
    TEST_FOR_EACH_TIER(t, ctx) {
        for (fi = 0; fi < 5; fi++) {
            const amxk_qformat f = fmts[fi].f;
            const int as = fmts[fi].asym;
            double num = 0, den = 0;
            q8_case(&ctx, f, as, 1, 17, 128, 32, 128, AMXK_SCALES_ROW_MAJOR, AMXK_DTYPE_F32, 1, amxk_tier_name(ctx.tier), &num, &den);
            q8_case(&ctx, f, as, 5, 33, 256, 64, 128, AMXK_SCALES_GROUP_MAJOR, AMXK_DTYPE_F32, 0, amxk_tier_name(ctx.tier), &num, &den);
            q8_case(&ctx, f, as, 13, 40, 96, 32, 96, AMXK_SCALES_ROW_MAJOR, AMXK_DTYPE_BF16, 1, amxk_tier_name(ctx.tier), &num, &den);
            q8_case(&ctx, f, as, 7, 16, 64, 64, 64, AMXK_SCALES_GROUP_MAJOR, AMXK_DTYPE_F16, 0, amxk_tier_name(ctx.tier), &num, &den);
            /* long K: 33 groups of 64; int8 per channel with K = 1300 (K % 16 = 4, one 1300-wide group) */
            q8_case(&ctx, f, as, 6, 24, 2112, 64, 2112, AMXK_SCALES_ROW_MAJOR, AMXK_DTYPE_F32, 1, amxk_tier_name(ctx.tier), &num, &den);
            /* decode rows with blocks of > 16 KiB packed (every bit width): the AVX-512 VNNI level streams
               four blocks at once there, one at a time for smaller blocks (AMXK_FAMILY_OTHER; Intel: four,
               q8_raw_case's 2-worker contexts run the other family) and for the last 6 columns */
            q8_case(&ctx, f, as, 3, 70, 4160, 64, 4160, AMXK_SCALES_ROW_MAJOR, AMXK_DTYPE_F32, 1, amxk_tier_name(ctx.tier), &num, &den);
            if (f == AMXK_QFMT_INT8)
                q8_case(&ctx, f, as, 4, 9, 1300, 1300, 1300, AMXK_SCALES_GROUP_MAJOR, AMXK_DTYPE_F32, 0, amxk_tier_name(ctx.tier), &num, &den);
            printf("  %-6s %-9s relative RMS error vs fp64 with unquantized x and W: %.2e\n", amxk_tier_name(ctx.tier), fmts[fi].name,
                   sqrt(num / den));
            for (w = 0; w < TEST_N_WORKER_COUNTS; w++) {
                amxk_ctx pc;
                test_ctx(&pc, (amxk_tier)t, test_worker_counts[w]);
                q8_case(&pc, f, as, 40, 70, 128, 32, 128, AMXK_SCALES_ROW_MAJOR, AMXK_DTYPE_F32, 1, "pool", &num, &den);
            }
        }
    }
}

/* A serial parallel_for that runs the tasks in reverse order, task i on worker i % 3 (n_workers 3):
   results must not depend on the order or the worker of a task. */
static void rev_parallel_for(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    size_t i;
    (void)user;
    for (i = n_tasks; i-- > 0;) fn(task_ctx, i, (int)(i % 3));
}

/* amxk_linear_q8 on raw full-range values (amxk_pack_quant: int8 -128..127, every int4 / int2 field,
   x in [-127, 127] with many +-127) against a double loop over those values, on row counts and
   column counts at every tile edge; f32 output, results bitwise equal for every worker count. The
   same values as U8 codes made here (x + 128, another row stride, 0x00 = -128 in the row gaps, which
   must be neither read nor refused) must give the I8 results bit for bit, on every worker count. */
static void q8_raw_case(amxk_tier t, amxk_qformat fmt, int asym, size_t m, size_t n, size_t k, size_t wg) {
    const int bits = fmt == AMXK_QFMT_INT8 ? 8 : fmt == AMXK_QFMT_INT4 ? 4 : 2;
    const int lo = asym ? 0 : -(1 << (bits - 1)), hi = asym ? (1 << bits) - 1 : (1 << (bits - 1)) - 1;
    const size_t ng = k / wg, ldq = k + 5, ldu = k + 2, ldy = n + 3;
    int8_t *vals = (int8_t *)malloc(n * k), *xq = (int8_t *)malloc(m * ldq);
    uint8_t *xu = (uint8_t *)malloc(m * ldu);
    float *sw = (float *)malloc(n * ng * 4), *zw = (float *)malloc(n * ng * 4), *xs = (float *)malloc(m * 4);
    float *y = (float *)test_alloc(m * ldy * 4), *y2 = (float *)test_alloc(m * ldy * 4), *yu = (float *)test_alloc(m * ldy * 4);
    amxk_quant q;
    amxk_ctx ctx;
    size_t bytes = 0, i, j, kk, bad = 0, diff = 0, diffu = 0, diffws = 0;
    void *p;
    int w;
    test_case_begin(test_case_mix(test_case_mix(test_case_id("actq linear_q8 raw", (uint64_t)fmt * 2 + (uint64_t)asym), m),
                                  test_case_mix(n, test_case_mix(k, wg))));
    for (i = 0; i < n * k; i++) {
        int r = test_rand() % 5 == 0 ? (test_rand() % 2 ? lo : hi) : lo + (int)(test_rand() % (unsigned)(hi - lo + 1));
        vals[i] = (int8_t)r;
    }
    for (i = 0; i < n * ng; i++) sw[i] = (float)test_uniform(0.5, 2.0), zw[i] = (float)(test_rand() % (unsigned)(hi + 1));
    for (i = 0; i < m * ldq; i++) xq[i] = (int8_t)(test_rand() % 3 == 0 ? (test_rand() % 2 ? 127 : -127) : (int)(test_rand() % 255) - 127);
    for (i = 0; i < m; i++) xs[i] = (float)test_uniform(0.5, 2.0);
    for (i = 0; i < m * ldu; i++) xu[i] = i % ldu < k ? (uint8_t)(xq[i / ldu * ldq + i % ldu] + 128) : 0x00;
    q.format = fmt, q.asym = asym, q.block_n = 1, q.block_k = wg;
    amxk_pack_quant_size(&q, n, k, &bytes);
    p = test_alloc(bytes);
    CHECK(amxk_pack_quant(NULL, p, bytes, &q, vals, k, sw, asym ? zw : NULL, n, k) == AMXK_OK, "[%s] raw pack", amxk_tier_name(t));
    for (w = 0; w < TEST_N_WORKER_COUNTS; w++) {
        amxk_status st;
        test_ctx(&ctx, t, test_worker_counts[w]);
        memset(w ? y2 : y, 0xff, m * ldy * 4);
        st = amxk_linear_q8(&ctx, m, n, k, xq, AMXK_DTYPE_I8, ldq, xs, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, w ? y2 : y, AMXK_DTYPE_F32, ldy);
        CHECK(st == AMXK_OK, "[%s] raw linear_q8: %s", amxk_tier_name(t), amxk_status_string(st));
        if (w) diff += memcmp(y, y2, m * ldy * 4) != 0;
        memset(yu, 0xff, m * ldy * 4);
        st = amxk_linear_q8(&ctx, m, n, k, xu, AMXK_DTYPE_U8, ldu, xs, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, yu, AMXK_DTYPE_F32, ldy);
        diffu += st != AMXK_OK || memcmp(y, yu, m * ldy * 4) != 0;
        /* amxk_linear_q8_ws, I8 and U8: the 1-worker y (its gaps 0xff, as q8_ws_differs leaves them) */
        diffws += q8_ws_differs(&ctx, m, n, k, xq, AMXK_DTYPE_I8, ldq, xs, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, AMXK_DTYPE_F32, ldy, y);
        diffws += q8_ws_differs(&ctx, m, n, k, xu, AMXK_DTYPE_U8, ldu, xs, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, AMXK_DTYPE_F32, ldy, y);
    }
    { /* the tasks in reverse order on 3 workers: the 1-worker y, bit for bit */
        amxk_ctx rc;
        memset(&rc, 0, sizeof rc);
        rc.parallel_for = rev_parallel_for, rc.n_workers = 3, rc.isa_allow = AMXK_TIER_BIT(t), rc.cpu_deny = test_deny;
        memset(y2, 0xff, m * ldy * 4);
        diff += amxk_ctx_init(&rc) != AMXK_OK ||
                amxk_linear_q8(&rc, m, n, k, xq, AMXK_DTYPE_I8, ldq, xs, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, y2, AMXK_DTYPE_F32, ldy) != AMXK_OK ||
                memcmp(y, y2, m * ldy * 4) != 0;
        diffws += q8_ws_differs(&rc, m, n, k, xq, AMXK_DTYPE_I8, ldq, xs, AMXK_SCALES_ROW_MAJOR, 1, k, p, bytes, NULL, AMXK_DTYPE_F32, ldy, y);
    }
    for (i = 0; i < m; i++)
        for (j = 0; j < ldy; j++) {
            double ref = 0, mag = 0;
            if (j >= n) { /* gaps untouched */
                uint32_t bits32;
                memcpy(&bits32, &y[i * ldy + j], 4);
                bad += bits32 != 0xffffffffu;
                continue;
            }
            for (kk = 0; kk < k; kk += wg) {
                double isum = 0, xsum = 0, tg;
                size_t e;
                for (e = kk; e < kk + wg; e++) isum += (double)xq[i * ldq + e] * vals[j * k + e], xsum += xq[i * ldq + e];
                tg = (double)xs[i] * sw[j * ng + kk / wg] * (isum - (asym ? zw[j * ng + kk / wg] * xsum : 0)); /* grids row-major [N][K/wg] */
                ref += tg, mag += fabs(tg);
            }
            if (!(fabs((double)y[i * ldy + j] - ref) <= 1e-5 * mag + 1e-30)) bad++;
        }
    CHECK(bad == 0, "[%s] raw fmt=%d asym=%d m=%zu n=%zu k=%zu wg=%zu: %zu outputs off", amxk_tier_name(t), (int)fmt, asym, m, n, k, wg, bad);
    CHECK(diff == 0, "[%s] raw fmt=%d asym=%d m=%zu n=%zu: results differ between worker counts", amxk_tier_name(t), (int)fmt, asym, m, n);
    CHECK(diffu == 0, "[%s] raw fmt=%d asym=%d m=%zu n=%zu k=%zu wg=%zu: U8 codes differ from I8 on %zu of %d worker counts",
          amxk_tier_name(t), (int)fmt, asym, m, n, k, wg, diffu, TEST_N_WORKER_COUNTS);
    CHECK(diffws == 0, "[%s] raw fmt=%d asym=%d m=%zu n=%zu k=%zu wg=%zu: amxk_linear_q8_ws differs from amxk_linear_q8 (%zu of %d calls)",
          amxk_tier_name(t), (int)fmt, asym, m, n, k, wg, diffws, 2 * TEST_N_WORKER_COUNTS + 1);
    CHECK(test_guard_ok(y) && test_guard_ok(y2) && test_guard_ok(yu), "[%s] raw guards", amxk_tier_name(t));
    test_free(p), test_free(y), test_free(y2), test_free(yu);
    free(vals), free(xq), free(xu), free(sw), free(zw), free(xs);
}

static void test_linear_q8_raw(void) {
    static const size_t ms[15] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 24, 25, 50, 100};
    static const size_t ns[7] = {1, 15, 17, 33, 65, 100, 300};
    static const struct { amxk_qformat f; int asym; size_t wg; } fmts[5] = {
        {AMXK_QFMT_INT8, 0, 64}, {AMXK_QFMT_INT4, 0, 32}, {AMXK_QFMT_INT4, 1, 64}, {AMXK_QFMT_INT2, 0, 64}, {AMXK_QFMT_INT2, 1, 32}};
    amxk_ctx ctx;
    int t, fi;
    size_t mi, ni;
    TEST_SECTION("amxk_linear_q8 on full-range raw values vs a double loop: tile edges in M and N, worker counts");
    TEST_FOR_EACH_TIER(t, ctx) {
        for (fi = 0; fi < 5; fi++) {
            for (mi = 0; mi < 15; mi++) q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, ms[mi], 33, 256, fmts[fi].wg);
            for (ni = 0; ni < 7; ni++) {
                q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 1, ns[ni], 192, fmts[fi].wg);
                q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 19, ns[ni], 128, fmts[fi].wg);
            }
            q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 26, 70, 1024, 1024); /* one group, several k steps */
            q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 5, 70, 4160, fmts[fi].wg); /* > 16 KiB blocks: 4 + 1 rows */
            /* K across the AVX-512 VNNI k step (1024 columns): groups cut by it and not, decode and prefill rows */
            q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 25, 40, 2112, fmts[fi].wg);
            q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 24, 17, 1088, fmts[fi].wg == 64 ? 1088 : 32);
            q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 3, 33, 2112, 2112 / 3);
            q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 2, 20, 8448, 32); /* 264 groups: the AVX2 kernel on AVX-512 */
            /* groups of 40 (int8 10, int4 5 64-byte rows): not a multiple of the VNNI 4x16 tile's step */
            if (fmts[fi].f != AMXK_QFMT_INT2) q8_raw_case((amxk_tier)t, fmts[fi].f, fmts[fi].asym, 3, 33, 120, 40);
        }
    }
}

/* The AMX w8a8 kernel's grid and tails (the other levels run the same cases): row counts at the
   AMX-vs-VNNI rule's edges (1..5) and around 16-row tiles (uniform tiles of R rows, the last one
   overlapping), odd block counts (a last single block), groups 32 / 64 / 128 / K, k chunks (int4 /
   int2 widened 1024 columns at a time, a shorter last chunk; U8 corrections of at most 64 groups per
   chunk), more than 256 rows across k chunks (row chunks), int4 groups wider than the widening buffer
   (the vector level), each with 1 / 2 / 3 / 7 workers and reversed task order, bit for bit. */
static void test_linear_q8_amx_grid(void) {
    static const size_t ms[13] = {1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 48, 49};
    static const size_t ns[5] = {16, 17, 48, 80, 112};
    static const size_t gs[4] = {32, 64, 128, 512};
    amxk_ctx ctx;
    int t;
    size_t i;
    TEST_SECTION("amxk_linear_q8: AMX grid and tails (rows 1..5, 16-row tiles, odd blocks, groups, k chunks) on every tier");
    TEST_FOR_EACH_TIER(t, ctx) {
        for (i = 0; i < 13; i++) {
            q8_raw_case((amxk_tier)t, AMXK_QFMT_INT8, 0, ms[i], 48, 1024, 1024); /* per channel: AMX from 3 rows */
            q8_raw_case((amxk_tier)t, AMXK_QFMT_INT8, 0, ms[i], 33, 256, 128);  /* g 128: from 4 rows */
            if (ms[i] >= 15) q8_raw_case((amxk_tier)t, AMXK_QFMT_INT4, 0, ms[i], 48, 256, 128);
        }
        for (i = 0; i < 5; i++) q8_raw_case((amxk_tier)t, AMXK_QFMT_INT4, 1, 20, ns[i], 128, 64);
        for (i = 0; i < 4; i++) {
            q8_raw_case((amxk_tier)t, AMXK_QFMT_INT8, 0, 24, 40, 512, gs[i]);
            q8_raw_case((amxk_tier)t, AMXK_QFMT_INT4, 0, 24, 40, 512, gs[i]);
            q8_raw_case((amxk_tier)t, AMXK_QFMT_INT2, 1, 24, 40, 512, gs[i]);
        }
        q8_raw_case((amxk_tier)t, AMXK_QFMT_INT4, 0, 40, 33, 2304, 128); /* k chunks 1024, 1024, 256 */
        q8_raw_case((amxk_tier)t, AMXK_QFMT_INT2, 0, 18, 20, 2304, 256);
        q8_raw_case((amxk_tier)t, AMXK_QFMT_INT8, 0, 20, 17, 2560, 32);  /* 80 groups: U8 corrections in 2 chunks */
        q8_raw_case((amxk_tier)t, AMXK_QFMT_INT4, 0, 300, 33, 1152, 128); /* 300 rows: row chunks 256 + 44 */
        q8_raw_case((amxk_tier)t, AMXK_QFMT_INT4, 1, 20, 17, 2048, 2048); /* group > 1024: the vector level */
    }
}

static void test_q8_bad_input(void) {
    float w[32 * 64], xs[4], y[2 * 32], y0[2 * 32];
    int8_t xq[2 * 64];
    size_t bytes = 0, bytes_a = 0, i;
    amxk_quant q;
    void *p, *pa;
    TEST_SECTION("amxk_linear_q8: bad input returns a status and writes nothing");
    test_case_begin(test_case_id("actq linear_q8 bad input", 0));
    for (i = 0; i < 32 * 64; i++) w[i] = (float)test_uniform(-1.0, 1.0);
    for (i = 0; i < 2 * 64; i++) xq[i] = (int8_t)(i % 50);
    for (i = 0; i < 4; i++) xs[i] = 0.01f;
    q.format = AMXK_QFMT_INT8, q.asym = 0, q.block_n = 1, q.block_k = 32;
    amxk_pack_quant_size(&q, 32, 64, &bytes);
    p = test_alloc(bytes);
    amxk_quantize_pack(NULL, p, bytes, &q, w, AMXK_DTYPE_F32, 32, 64, 64);
    q.asym = 1;
    amxk_pack_quant_size(&q, 32, 64, &bytes_a);
    pa = test_alloc(bytes_a);
    amxk_quantize_pack(NULL, pa, bytes_a, &q, w, AMXK_DTYPE_F32, 32, 64, 64);
    memset(y, 0x7b, sizeof y), memcpy(y0, y, sizeof y);
    CHECK(amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, pa, bytes_a, NULL, y, AMXK_DTYPE_F32, 32) == AMXK_ERR_FORMAT, "asym int8 pack");
    CHECK(amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 4, 16, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) == AMXK_ERR_FORMAT, "act group 16 < weight group 32");
    CHECK(amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 0, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) == AMXK_ERR_ARG, "act group 0");
    CHECK(amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_GROUP_MAJOR, 1, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) == AMXK_ERR_STRIDE, "ld_s < M");
    CHECK(amxk_linear_q8(NULL, 2, 33, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 33) == AMXK_ERR_FORMAT, "N mismatch");
    xq[5] = -128;
    CHECK(amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) == AMXK_ERR_ARG, "x = -128");
    xq[5] = 5;
    { /* -128 anywhere: every position of both rows (the scan reads 8 bytes at a time) */
        size_t pos, bad = 0;
        int8_t keep;
        for (pos = 0; pos < 128; pos++) {
            keep = xq[pos], xq[pos] = -128;
            bad += amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) != AMXK_ERR_ARG;
            xq[pos] = keep;
        }
        CHECK(bad == 0, "x = -128 at %zu of 128 positions not refused", bad);
    }
    CHECK(amxk_linear_q8(NULL, 2, 32, 64, xq, AMXK_DTYPE_I8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_I8, 32) == AMXK_ERR_DTYPE, "y dtype");
    { /* xq dtypes other than I8 / U8 */
        static const amxk_dtype bad_xt[6] = {AMXK_DTYPE_INVALID, AMXK_DTYPE_F32, AMXK_DTYPE_BF16, AMXK_DTYPE_FP8_E4M3, AMXK_DTYPE_I32, AMXK_DTYPE_COUNT};
        size_t bad = 0;
        for (i = 0; i < 6; i++)
            bad += amxk_linear_q8(NULL, 2, 32, 64, xq, bad_xt[i], 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) != AMXK_ERR_DTYPE;
        CHECK(bad == 0, "xq dtype: %zu of 6 invalid dtypes not refused with DTYPE", bad);
    }
    { /* U8: code 0x00 (x = -128) anywhere, at every tier, is refused; 0x80 (x = 0) is not -128 */
        uint8_t xu[2 * 64];
        size_t pos, bad = 0;
        int t;
        amxk_ctx ctx;
        for (i = 0; i < 2 * 64; i++) xu[i] = (uint8_t)(xq[i] + 128);
        TEST_FOR_EACH_TIER(t, ctx) {
            for (pos = 0; pos < 128; pos++) {
                const uint8_t keep = xu[pos];
                xu[pos] = 0x00;
                bad += amxk_linear_q8(&ctx, 2, 32, 64, xu, AMXK_DTYPE_U8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) != AMXK_ERR_ARG;
                xu[pos] = keep;
            }
        }
        CHECK(bad == 0, "U8 code 0 at %zu positions x tiers not refused", bad);
        CHECK(memcmp(y, y0, sizeof y) == 0, "y untouched");
        xu[7] = 0x80, xu[64 + 63] = 0x80;
        CHECK(amxk_linear_q8(NULL, 2, 32, 64, xu, AMXK_DTYPE_U8, 64, xs, AMXK_SCALES_ROW_MAJOR, 2, 32, p, bytes, NULL, y, AMXK_DTYPE_F32, 32) == AMXK_OK, "U8 0x80 (x = 0)");
        memcpy(y, y0, sizeof y);
    }
    CHECK(memcmp(y, y0, sizeof y) == 0, "y untouched");
    test_free(p), test_free(pa);
}

/* amxk_linear_q8_ws: the workspace size's contract (floor(M / 8) * 8 * K bytes for int8 packs, where
   K is a multiple of 4, where the context's vector level is avx512_vnni or up, else 0), and bad workspaces or queries get a
   status and change nothing. */
static void test_q8_ws_contract(void) {
    enum { M = 9, N = 32, K = 64 };
    float w[N * K], xs[M], y[M * N], y0[M * N];
    int8_t xq[M * K];
    size_t bytes = 0, b16 = 0, wsb = 0, i, bad = 0, ms;
    amxk_quant q;
    amxk_ctx ctx;
    void *p, *p16;
    unsigned char *ws;
    int t;
    TEST_SECTION("amxk_linear_q8_ws: workspace size contract, bad workspaces and queries");
    test_case_begin(test_case_id("actq linear_q8_ws contract", 0));
    for (i = 0; i < N * K; i++) w[i] = (float)test_uniform(-1.0, 1.0);
    for (i = 0; i < M * K; i++) xq[i] = (int8_t)((int)(i % 101) - 50);
    for (i = 0; i < M; i++) xs[i] = 0.02f;
    q.format = AMXK_QFMT_INT8, q.asym = 0, q.block_n = 1, q.block_k = 32;
    amxk_pack_quant_size(&q, N, K, &bytes);
    p = test_alloc(bytes);
    CHECK(amxk_quantize_pack(NULL, p, bytes, &q, w, AMXK_DTYPE_F32, N, K, K) == AMXK_OK, "pack");
    amxk_pack_linear_size(AMXK_DTYPE_BF16, N, K, &b16);
    p16 = test_alloc(b16);
    CHECK(amxk_pack_linear(NULL, p16, b16, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, N, K, K) == AMXK_OK, "bf16 pack");
    memset(y, 0x7b, sizeof y), memcpy(y0, y, sizeof y);
    TEST_FOR_EACH_TIER(t, ctx) {
        /* the context's vector level: the best level usable here, not AMX, not above the context's */
        const int vnni = test_vec_level(&ctx) >= AMXK_TIER_AVX512_VNNI;
        for (ms = 1; ms <= 40; ms++) {
            const size_t want = vnni ? ms / 8 * 8 * (size_t)K : 0;
            bad += amxk_linear_q8_workspace_size(&ctx, ms, p, bytes, &wsb) != AMXK_OK || wsb != want;
        }
        CHECK(bad == 0, "[%s] workspace size != floor(M / 8) * 8 * K (vnni levels) / 0 for %zu of 40 row counts", amxk_tier_name(ctx.tier), bad);
        bad = 0;
        CHECK(amxk_linear_q8_workspace_size(&ctx, 0, p, bytes, &wsb) == AMXK_ERR_SHAPE, "[%s] size: m = 0", amxk_tier_name(ctx.tier));
        CHECK(amxk_linear_q8_workspace_size(&ctx, M, p, bytes, NULL) == AMXK_ERR_NULL, "[%s] size: NULL", amxk_tier_name(ctx.tier));
        CHECK(amxk_linear_q8_workspace_size(&ctx, M, p16, b16, &wsb) == AMXK_ERR_FORMAT, "[%s] size: bf16 pack", amxk_tier_name(ctx.tier));
        CHECK(amxk_linear_q8_workspace_size(&ctx, M, p, bytes - 1, &wsb) != AMXK_OK, "[%s] size: truncated pack", amxk_tier_name(ctx.tier));
        CHECK(amxk_linear_q8_workspace_size(&ctx, M, p, bytes, &wsb) == AMXK_OK, "[%s] size", amxk_tier_name(ctx.tier));
        ws = (unsigned char *)test_alloc(wsb + 64);
        if (wsb) {
            amxk_status s1 = amxk_linear_q8_ws(&ctx, M, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, ws, wsb - 1);
            amxk_status s2 = amxk_linear_q8_ws(&ctx, M, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, NULL, wsb);
            amxk_status s3 = amxk_linear_q8_ws(&ctx, M, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, ws + 4, wsb);
            amxk_status s4, s5;
            { /* the workspace over x, over y */
                unsigned char *big = (unsigned char *)test_alloc(wsb + sizeof xq + sizeof y);
                memcpy(big, xq, sizeof xq);
                s4 = amxk_linear_q8_ws(&ctx, M, N, K, big, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, big, wsb + sizeof xq);
                memcpy(big, y, sizeof y);
                s5 = amxk_linear_q8_ws(&ctx, M, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, big, AMXK_DTYPE_F32, N, big, wsb + sizeof y);
                CHECK(memcmp(big, y, sizeof y) == 0, "[%s] y under the workspace untouched", amxk_tier_name(ctx.tier));
                test_free(big);
            }
            CHECK(s1 == AMXK_ERR_WORKSPACE && s2 == AMXK_ERR_WORKSPACE && s3 == AMXK_ERR_ALIGN && s4 == AMXK_ERR_ALIAS && s5 == AMXK_ERR_ALIAS,
                  "[%s] small / NULL / misaligned / x-aliased / y-aliased workspace: %s %s %s %s %s", amxk_tier_name(ctx.tier),
                  amxk_status_string(s1), amxk_status_string(s2), amxk_status_string(s3), amxk_status_string(s4), amxk_status_string(s5));
        } else {
            CHECK(amxk_linear_q8_ws(&ctx, M, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, NULL, 0) ==
                      AMXK_OK, "[%s] no workspace needed: NULL", amxk_tier_name(ctx.tier));
            memcpy(y, y0, sizeof y);
        }
        CHECK(memcmp(y, y0, sizeof y) == 0 && test_guard_ok(ws), "[%s] y untouched", amxk_tier_name(ctx.tier));
        test_free(ws);
    }
    test_free(p), test_free(p16);
}

int main(void) {
    test_init();
    test_quantize();
    test_relayout();
    test_q8_ws_contract();
    test_bad_input();
    test_linear_q8();
    test_linear_q8_raw();
    test_linear_q8_amx_grid();
    test_q8_bad_input();
    return test_finish();
}
