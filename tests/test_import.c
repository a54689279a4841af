/* tests/test_import.c - the checkpoint importers of amxk_pack.h (GPTQ v1/v2 = AutoRound, AWQ,
   DeepSeek block fp8) against each format's own dequantization formula, written here from the
   format descriptions (not from amxk):

     GPTQ:  q[k][n] = (qweight[k / (32/b)][n] >> (b * (k % (32/b)))) & (2^b - 1)
            z[g][n] = ((qzeros[g][n / (32/b)] >> (b * (n % (32/b)))) & (2^b - 1)) + zero_offset
            w = (q - z) * scale[g][n]                    (v1: zero_offset 1; v2 / AutoRound asym: 0)
     AWQ:   column 8c + j of a word at nibble ORDER[j], ORDER = {0, 4, 1, 5, 2, 6, 3, 7}; w = (q - z) * s
     fp8:   w = e4m3(weight[n][k]) * scale_inv[n / bn][k / bk]
     MXFP4: w = 2^(scales[n][k/32] - 127) * e2m1(nibble k % 2 of blocks[n][k/32][(k%32)/2])

   The test builds the checkpoint tensors from random q, z, scales (so the expected weights are known
   exactly), imports, and compares amxk_dequantize and amxk_linear (on every tier) with them. */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"
#include "../amxk_pack.h"

static const int awq_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};

typedef struct ckpt {
    size_t n, k, g, ng, per, words;
    int bits, awq, zero_offset;
    unsigned *q, *z; /* q[n*K + k], z[g*N + n] as stored (before the offset) */
    void *scales; /* [K/G][N] in sdt: fp16, bf16 or fp32 */
    amxk_dtype sdt;
    int32_t *qweight, *qzeros;
} ckpt;

static double ckpt_scale(const ckpt *c, size_t i) {
    return c->sdt == AMXK_DTYPE_F32 ? (double)((const float *)c->scales)[i] : test_ref_decode(c->sdt, ((const uint16_t *)c->scales)[i]);
}
/* sdt: the scales' dtype. bf16 scales are drawn far below fp16's normal range (2^-40 .. 2^-30: none is
   an fp16 value, so a conversion through fp16 would change them); fp32 scales carry 24 random bits. */
static void ckpt_make(ckpt *c, int awq, int bits, int zero_offset, int sym_zeros, size_t n, size_t k, size_t g, amxk_dtype sdt) {
    size_t i, j;
    unsigned mask = (1u << bits) - 1u;
    memset(c, 0, sizeof *c);
    c->awq = awq, c->bits = bits, c->zero_offset = zero_offset, c->n = n, c->k = k, c->g = g, c->ng = k / g;
    c->per = (size_t)(32 / bits), c->words = (n + c->per - 1) / c->per;
    c->q = (unsigned *)malloc(n * k * sizeof(unsigned));
    c->z = (unsigned *)malloc(c->ng * n * sizeof(unsigned));
    c->sdt = sdt;
    c->scales = malloc(c->ng * n * 4);
    for (i = 0; i < n * k; i++) c->q[i] = (unsigned)test_rand() & mask;
    for (i = 0; i < c->ng * n; i++) {
        c->z[i] = sym_zeros ? (1u << (bits - 1)) - (unsigned)zero_offset : (unsigned)test_rand() & mask;
        const double r = (double)(1 + test_rand() % 1000) / 4096.0;
        if (sdt == AMXK_DTYPE_F16) ((uint16_t *)c->scales)[i] = test_ref_encode(AMXK_DTYPE_F16, r);
        else if (sdt == AMXK_DTYPE_BF16) ((uint16_t *)c->scales)[i] = test_ref_encode(AMXK_DTYPE_BF16, r * ldexp(1.0, -30 - (int)(test_rand() % 10)));
        else ((float *)c->scales)[i] = (float)(r + (double)(test_rand() & 0xffffff) * ldexp(1.0, -36));
    }
    if (!awq) {
        c->qweight = (int32_t *)calloc(k / c->per * n, 4);
        c->qzeros = (int32_t *)calloc(c->ng * c->words, 4);
        for (i = 0; i < k; i++)
            for (j = 0; j < n; j++) c->qweight[(i / c->per) * n + j] |= (int32_t)(c->q[j * k + i] << (bits * (int)(i % c->per)));
        for (i = 0; i < c->ng; i++)
            for (j = 0; j < n; j++) c->qzeros[i * c->words + j / c->per] |= (int32_t)(c->z[i * n + j] << (bits * (int)(j % c->per)));
    } else {
        c->qweight = (int32_t *)calloc(k * n / 8, 4);
        c->qzeros = (int32_t *)calloc(c->ng * n / 8, 4);
        for (i = 0; i < k; i++)
            for (j = 0; j < n; j++) c->qweight[i * (n / 8) + j / 8] |= (int32_t)(c->q[j * k + i] << (4 * awq_order[j % 8]));
        for (i = 0; i < c->ng; i++)
            for (j = 0; j < n; j++) c->qzeros[i * (n / 8) + j / 8] |= (int32_t)(c->z[i * n + j] << (4 * awq_order[j % 8]));
    }
}
static void ckpt_free(ckpt *c) {
    free(c->q), free(c->z), free(c->scales), free(c->qweight), free(c->qzeros);
}
static double ckpt_w(const ckpt *c, size_t n, size_t k) {
    size_t g = k / c->g;
    return ((double)c->q[n * c->k + k] - ((double)c->z[g * c->n + n] + c->zero_offset)) *
           ckpt_scale(c, g * c->n + n);
}

/* amxk_linear on every tier against sum_k x * w_expected (fp64), bf16 x, f32 y. */
static void check_linear(const void *packed, size_t bytes, size_t n, size_t k, double (*wfn)(const void *, size_t, size_t),
                         const void *wctx, const char *what) {
    const size_t m = 5;
    uint16_t *x = (uint16_t *)malloc(m * k * 2);
    float *y = (float *)malloc(m * n * 4);
    double *ref = (double *)malloc(m * n * sizeof(double)), *mag = (double *)malloc(m * n * sizeof(double));
    size_t i, j, kk;
    amxk_ctx ctx;
    int t;
    for (i = 0; i < m * k; i++) x[i] = test_ref_encode(AMXK_DTYPE_BF16, test_uniform(-1.0, 1.0));
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0, a = 0;
            for (kk = 0; kk < k; kk++) {
                double p = test_ref_decode(AMXK_DTYPE_BF16, x[i * k + kk]) * wfn(wctx, j, kk);
                s += p, a += fabs(p);
            }
            ref[i * n + j] = s, mag[i * n + j] = a;
        }
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t ws = 0, bad = 0;
        void *w = NULL;
        amxk_status st = amxk_linear_workspace_size_for(&ctx, m, packed, bytes, &ws);
        if (ws) w = test_alloc(ws);
        if (st == AMXK_OK) st = amxk_linear(&ctx, m, n, k, x, AMXK_DTYPE_BF16, k, packed, bytes, NULL, y, AMXK_DTYPE_F32, n, w, ws);
        CHECK(st == AMXK_OK, "[%s] %s: amxk_linear: %s", amxk_tier_name(ctx.tier), what, amxk_status_string(st));
        test_dump("import.y", t, y, m * n * 4);
        for (i = 0; i < m * n && st == AMXK_OK; i++) {
            /* fp32 accumulation; the AMX tier also rounds each dequantized weight to bf16 */
            double tol = (t == AMXK_TIER_AMX ? 1.0 / 256 : 0) * mag[i] + (double)(k + 1) * ldexp(1, -23) * mag[i] + 1e-30;
            if (fabs((double)y[i] - ref[i]) > tol) bad++;
        }
        CHECK(bad == 0, "[%s] %s: %zu outputs outside the tolerance", amxk_tier_name(ctx.tier), what, bad);
        if (w) test_free(w);
    }
    free(x), free(y), free(ref), free(mag);
}
static double ckpt_wfn(const void *c, size_t n, size_t k) { return ckpt_w((const ckpt *)c, n, k); }

static void test_int_importers(void) {
    static const int bitss[3] = {2, 4, 8};
    static const amxk_dtype sdts[3] = {AMXK_DTYPE_F16, AMXK_DTYPE_BF16, AMXK_DTYPE_F32};
    int awq, bi, v1, symz, si;
    TEST_SECTION("GPTQ v1 / v2 (AutoRound) and AWQ importers, fp16 / bf16 / fp32 scales");
    for (si = 0; si < 3; si++)
    for (awq = 0; awq < 2; awq++)
        for (bi = 0; bi < 3; bi++)
            for (v1 = 0; v1 < 2; v1++)
                for (symz = 0; symz < 2; symz++) {
                    const size_t n = awq ? 40 : 37, k = 96, g = awq ? 32 : (bi == 0 ? 48 : 32);
                    ckpt c;
                    size_t bytes = 0, i, j, bad = 0;
                    void *p;
                    float *w;
                    amxk_quant q;
                    amxk_status st;
                    char what[96];
                    if (awq && (bitss[bi] != 4 || v1)) continue;
                    test_case_begin(test_case_id("import int", (uint64_t)((((si * 2 + awq) * 3 + bi) * 2 + v1) * 2 + symz)));
                    ckpt_make(&c, awq, bitss[bi], v1, symz, n, k, g, sdts[si]);
                    snprintf(what, sizeof what, "%s b=%d g=%zu offset=%d zeros=%s scales=%s", awq ? "awq" : "gptq", bitss[bi], g, v1,
                             symz ? "mid" : "random", si == 0 ? "fp16" : si == 1 ? "bf16" : "fp32");
                    CHECK(amxk_import_size(bitss[bi], g, n, k, &bytes) == AMXK_OK, "%s: size", what);
                    p = test_alloc(bytes);
                    st = awq ? amxk_import_awq(NULL, p, bytes, g, c.qweight, c.qzeros, c.scales, c.sdt, n, k)
                             : amxk_import_gptq(NULL, p, bytes, bitss[bi], g, v1, c.qweight, c.qzeros, c.scales, c.sdt, NULL, n, k);
                    CHECK(st == AMXK_OK, "%s: import: %s", what, amxk_status_string(st));
                    if (st != AMXK_OK) {
                        test_free(p), ckpt_free(&c);
                        continue;
                    }
                    CHECK(test_guard_ok(p), "%s: guards", what);
                    CHECK(amxk_packed_quant_info(p, bytes, &q, NULL, NULL) == AMXK_OK && q.asym == !symz && q.block_k == g,
                          "%s: symmetric pack exactly when every zero is 2^(b-1)", what);
                    w = (float *)malloc(n * k * 4);
                    CHECK(amxk_dequantize(p, bytes, w, k) == AMXK_OK, "%s: dequantize", what);
                    for (i = 0; i < n; i++)
                        for (j = 0; j < k; j++)
                            if (w[i * k + j] != (float)ckpt_w(&c, i, j)) bad++; /* one rounding (fp32 scales: inexact) */
                    CHECK(bad == 0, "%s: %zu weights differ from the format's dequantization rounded once to fp32", what, bad);
                    check_linear(p, bytes, n, k, ckpt_wfn, &c, what);
                    free(w);
                    test_free(p);
                    ckpt_free(&c);
                }
}

typedef struct fp8ck { const uint8_t *wq; const float *si; size_t k, bn, bk, nbk; } fp8ck;
static double fp8_wfn(const void *p, size_t n, size_t k) {
    const fp8ck *f = (const fp8ck *)p;
    return test_ref_decode(AMXK_DTYPE_FP8_E4M3, f->wq[n * f->k + k]) * (double)f->si[(n / f->bn) * f->nbk + k / f->bk];
}

static void test_fp8_importer(void) {
    const size_t n = 200, k = 300, bn = 128, bk = 128, nbn = 2, nbk = 3;
    uint8_t *wq = (uint8_t *)malloc(n * k);
    float si[6], *w = (float *)malloc(n * k * 4);
    size_t bytes = 0, i, j, bad = 0;
    amxk_quant q;
    fp8ck f;
    void *p;
    TEST_SECTION("DeepSeek block fp8 importer (128 x 128, partial edge blocks)");
    test_case_begin(test_case_id("import fp8 block", 0));
    for (i = 0; i < n * k; i++) {
        uint8_t b = (uint8_t)test_rand();
        wq[i] = (b & 0x7f) == 0x7f ? (uint8_t)(b & 0x80) : b; /* no NaN codes in a checkpoint */
    }
    for (i = 0; i < nbn * nbk; i++) si[i] = (float)(1 + test_rand() % 100) / 1024.0f;
    q.format = AMXK_QFMT_FP8_E4M3, q.asym = 0, q.block_n = bn, q.block_k = bk;
    CHECK(amxk_pack_quant_size(&q, n, k, &bytes) == AMXK_OK, "size");
    p = test_alloc(bytes);
    CHECK(amxk_import_fp8_block(NULL, p, bytes, wq, si, bn, bk, n, k) == AMXK_OK, "import");
    CHECK(amxk_dequantize(p, bytes, w, k) == AMXK_OK, "dequantize");
    f.wq = wq, f.si = si, f.k = k, f.bn = bn, f.bk = bk, f.nbk = nbk;
    for (i = 0; i < n; i++)
        for (j = 0; j < k; j++)
            if ((double)w[i * k + j] != fp8_wfn(&f, i, j)) bad++;
    CHECK(bad == 0, "%zu weights differ from e4m3 * scale_inv", bad);
    check_linear(p, bytes, n, k, fp8_wfn, &f, "fp8 block 128");
    test_free(p);
    free(wq), free(w);
}

/* gpt-oss MXFP4: blocks uint8 [E, N, K/32, 16] (byte j of a block: k = 2j low nibble, 2j + 1 high),
   scales uint8 [E, N, K/32] e8m0; w = 2^(e - 127) * e2m1(code), e2m1 = sign, 2 exponent bits (bias
   1), 1 mantissa bit (exponent 0: 0 or 0.5); e = 255: NaN. Imported expert by expert (pointer
   offsets into the stacked tensors, as a loader would). */
typedef struct mxck { const uint8_t *blocks, *scales; size_t k; } mxck;
static double mx_wfn(const void *ctx, size_t n, size_t k) {
    const mxck *m = (const mxck *)ctx;
    const unsigned c = (m->blocks[n * (m->k / 2) + k / 2] >> (4 * (k & 1))) & 15u, e = m->scales[n * (m->k / 32) + k / 32];
    const unsigned ex = (c >> 1) & 3u, mt = c & 1u;
    const double mag = ex == 0 ? 0.5 * mt : ldexp(1.0 + 0.5 * mt, (int)ex - 1);
    return (e == 255 ? NAN : ldexp(1.0, (int)e - 127)) * ((c & 8u) ? -mag : mag) + 0.0; /* -0 reads as +0 */
}
static void test_mxfp4_importer(void) {
    const size_t E = 3, n = 40, k = 2880 / 10; /* K = 9 groups */
    uint8_t *blocks = (uint8_t *)malloc(E * n * k / 2), *scales = (uint8_t *)malloc(E * n * k / 32);
    float *w = (float *)malloc(n * k * 4);
    size_t bytes = 0, i, j, e, bad;
    TEST_SECTION("gpt-oss MXFP4 importer (expert stack [E, N, K/32, 16] + e8m0 [E, N, K/32])");
    test_case_begin(test_case_id("import mxfp4", 0));
    for (i = 0; i < E * n * k / 2; i++) blocks[i] = (uint8_t)test_rand();
    for (i = 0; i < E * n * k / 32; i++) scales[i] = (uint8_t)(118 + test_rand() % 12);
    scales[5] = 255, scales[n * k / 32 + 7] = 0; /* a NaN scale in expert 0, 2^-127 in expert 1 */
    CHECK(amxk_import_mxfp4_size(n, k, &bytes) == AMXK_OK, "size");
    for (e = 0; e < E; e++) {
        void *p = test_alloc(bytes);
        mxck m;
        m.blocks = blocks + e * n * k / 2, m.scales = scales + e * n * k / 32, m.k = k;
        CHECK(amxk_import_mxfp4(NULL, p, bytes, m.blocks, m.scales, n, k) == AMXK_OK, "import expert %zu", e);
        CHECK(amxk_dequantize(p, bytes, w, k) == AMXK_OK, "dequantize");
        for (bad = 0, i = 0; i < n; i++)
            for (j = 0; j < k; j++) {
                const double ref = mx_wfn(&m, i, j);
                if (isnan(ref) ? !isnan(w[i * k + j]) : (double)w[i * k + j] != ref || !signbit(w[i * k + j]) != !signbit(ref)) bad++;
            }
        CHECK(bad == 0, "expert %zu: %zu weights differ from 2^(e-127) * e2m1", e, bad);
        if (e == 2) check_linear(p, bytes, n, k, mx_wfn, &m, "mxfp4 gpt-oss expert");
        test_free(p);
    }
    free(blocks), free(scales), free(w);
}

static void test_bad_input(void) {
    ckpt c;
    size_t bytes = 0;
    unsigned char *p;
    int32_t gidx[64];
    size_t i;
    TEST_SECTION("importers: bad input returns a status and writes nothing");
    test_case_begin(test_case_id("import bad input", 0));
    ckpt_make(&c, 0, 4, 1, 0, 16, 64, 32, AMXK_DTYPE_F16);
    amxk_import_size(4, 32, 16, 64, &bytes);
    p = (unsigned char *)test_alloc(bytes);
    memset(p, 0x5a, bytes);
    for (i = 0; i < 64; i++) gidx[i] = (int32_t)((i % 2) * 1); /* act-order: not k / G */
    CHECK(amxk_import_gptq(NULL, p, bytes, 3, 32, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_ARG, "bits 3");
    CHECK(amxk_import_gptq(NULL, p, bytes, 4, 32, 2, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_ARG, "offset 2");
    CHECK(amxk_import_gptq(NULL, p, bytes, 4, 0, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_ARG, "group 0");
    CHECK(amxk_import_gptq(NULL, p, bytes, 4, 24, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_ARG, "group not dividing K");
    CHECK(amxk_import_gptq(NULL, p, bytes, 4, 32, 1, NULL, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_NULL, "NULL qweight");
    CHECK(amxk_import_gptq(NULL, p, bytes, 4, 32, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, gidx, 16, 64) == AMXK_ERR_UNSUPPORTED, "act-order");
    CHECK(amxk_import_gptq(NULL, p, bytes - 1, 4, 32, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_WORKSPACE, "dst small");
    CHECK(amxk_import_gptq(NULL, p + 1, bytes - 64, 4, 32, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, NULL, 16, 64) == AMXK_ERR_ALIGN, "misaligned");
    CHECK(amxk_import_awq(NULL, p, bytes, 32, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_F16, 12, 64) == AMXK_ERR_SHAPE, "awq N % 8");
    CHECK(amxk_import_gptq(NULL, p, bytes, 4, 32, 1, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_I8, NULL, 16, 64) == AMXK_ERR_DTYPE, "scales int8");
    CHECK(amxk_import_awq(NULL, p, bytes, 32, c.qweight, c.qzeros, c.scales, AMXK_DTYPE_FP8_E4M3, 16, 64) == AMXK_ERR_DTYPE, "awq scales fp8");
    CHECK(amxk_import_mxfp4(NULL, p, bytes, (const uint8_t *)c.qweight, (const uint8_t *)c.scales, 16, 48) == AMXK_ERR_SHAPE, "mxfp4 K 48");
    CHECK(amxk_import_mxfp4(NULL, p, bytes, NULL, (const uint8_t *)c.scales, 16, 64) == AMXK_ERR_NULL, "mxfp4 NULL blocks");
    CHECK(amxk_import_mxfp4(NULL, p, 64, (const uint8_t *)c.qweight, (const uint8_t *)c.scales, 16, 64) == AMXK_ERR_WORKSPACE, "mxfp4 dst small");
    for (i = 0; i < bytes; i++)
        if (p[i] != 0x5a) break;
    CHECK(i == bytes, "dst untouched after the errors (first changed byte %zu)", i);
    CHECK(test_guard_ok(p), "guards");
    test_free(p);
    ckpt_free(&c);
}

int main(void) {
    test_init();
    test_int_importers();
    test_fp8_importer();
    test_mxfp4_importer();
    test_bad_input();
    return test_finish();
}
