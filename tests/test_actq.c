/* tests/test_actq.c - dynamic activation quantization (amxk_quantize_act) and scale-table relayout
   (amxk_scales_relayout) against references written here:
     int8:  s = amax / 127, q = round-half-even(x / s) clamped to [-127, 127]; u8 = q + 128
     e4m3:  s = amax / 448, q = the e4m3 value nearest x / s (ties to even), saturating
   amax over each group of `group` columns; a zero group gets s = 1. The two scale layouts must hold
   the same numbers ([M, K/g] row-major and [K/g, M] group-major), and relayout must be a true
   transpose: row -> group -> row gives back the original, which a reshape of the same buffer would
   not (checked on a non-square table). */
#define AMXK_IMPLEMENTATION
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

static void check_case(const amxk_ctx *ctx, size_t m, size_t k, size_t group, amxk_dtype xt, amxk_dtype ot, size_t ldx,
                       size_t ldq, const char *tier) {
    const size_t ng = k / group, esz = amxk_dtype_size(xt);
    void *x = malloc(m * ldx * esz);
    uint8_t *q = (uint8_t *)test_alloc(m * ldq), *q2 = (uint8_t *)test_alloc(m * ldq);
    float *sr = (float *)test_alloc(m * ng * 4), *sg = (float *)test_alloc(ng * m * 4);
    size_t i, j, g, bad = 0, bads = 0;
    amxk_status st;
    for (i = 0; i < m * ldx; i++) {
        double v = test_uniform(-4.0, 4.0) * (test_rand() % 7 == 0 ? 100.0 : 1.0);
        if (test_rand() % 13 == 0) v = 0; /* some exact zeros; whole zero rows below */
        if (xt == AMXK_DTYPE_F32) ((float *)x)[i] = (float)v;
        else ((uint16_t *)x)[i] = (uint16_t)test_ref_encode(xt, (float)v);
    }
    if (m > 2)
        for (j = 0; j < k; j++) {
            if (xt == AMXK_DTYPE_F32) ((float *)x)[ldx + j] = 0.0f;
            else ((uint16_t *)x)[ldx + j] = 0;
        }
    st = amxk_quantize_act(ctx, m, k, x, xt, ldx, group, ot, q, ldq, sr, AMXK_SCALES_ROW_MAJOR, ng);
    CHECK(st == AMXK_OK, "[%s] quantize (row-major scales): %s", tier, amxk_status_string(st));
    st = amxk_quantize_act(ctx, m, k, x, xt, ldx, group, ot, q2, ldq, sg, AMXK_SCALES_GROUP_MAJOR, m);
    CHECK(st == AMXK_OK, "[%s] quantize (group-major scales): %s", tier, amxk_status_string(st));
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
                               shapes[si][1] + (si % 3), amxk_tier_name(ctx.tier));
        for (w = 0; w < TEST_N_WORKER_COUNTS; w++) {
            amxk_ctx pc;
            test_ctx(&pc, (amxk_tier)t, test_worker_counts[w]);
            check_case(&pc, 37, 256, 64, AMXK_DTYPE_BF16, AMXK_DTYPE_I8, 256, 256, "pool");
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

int main(void) {
    test_init();
    test_quantize();
    test_relayout();
    test_bad_input();
    return test_finish();
}
