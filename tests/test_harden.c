/* tests/test_harden.c - issue 15: crafted packs, overflowing size queries, unchecked contexts, the
   quantized decode's range, padding, NaN rules, aliasing (the reproducers of the audit, rebuilt from
   its descriptions). Small shapes only: every section runs on every tier in well under a second.

   Packed buffers are untrusted bytes: every call below on a crafted or mutated pack must return a
   status and write nothing (guarded, ASan-poisoned buffers exactly as long as the call is told), or,
   where the pack is still valid, a documented finite result. References are double loops. */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"
#include "../amxk_pack.h"
#include "../amxk_moe.h"
#include "../amxk_gdn.h"
#include "harden_gdn.h" /* issue 31 class 1: conv1d / GDN outputs against their index arrays */
#include "harden_moe.h" /* issue 31 classes 2, 3: MoE outputs against the expert arrays, per-expert checks */

/* The 64-byte pack header (amxk_pack.h: amxk__pack_hdr), by offset. */
enum { HDR = 64, OFF_VERSION = 8, OFF_DTYPE = 12, OFF_N = 16, OFF_K = 24, OFF_QFMT = 32, OFF_ASYM = 36, OFF_BN = 40, OFF_BK = 48, OFF_FLAGS = 56 };

static void put_u64(void *p, size_t off, uint64_t v) { memcpy((char *)p + off, &v, 8); }
static uint16_t bf16_of(float x) { return (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, x); }

/* A copy of n bytes of src in a fresh guarded buffer (the caller frees it). */
static void *dup_buf(const void *src, size_t n) {
    void *p = test_alloc(n);
    memcpy(p, src, n);
    return p;
}

/* A pack of format f (QFMT_NONE: bf16) of W[n, k] with random weights; *bytes set. */
static void *make_pack(const amxk_quant *q, size_t n, size_t k, size_t *bytes) {
    float *w = (float *)malloc(n * k * 4);
    void *p;
    size_t i;
    amxk_status s;
    for (i = 0; i < n * k; i++) w[i] = test_randf(-2.0f, 2.0f);
    if (!q || q->format == AMXK_QFMT_NONE) {
        CHECK(amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, bytes) == AMXK_OK, "size");
        p = test_alloc(*bytes);
        s = amxk_pack_linear(NULL, p, *bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, n, k, k);
    } else {
        CHECK(amxk_pack_quant_size(q, n, k, bytes) == AMXK_OK, "size");
        p = test_alloc(*bytes);
        s = amxk_quantize_pack(NULL, p, *bytes, q, w, AMXK_DTYPE_F32, n, k, k);
    }
    CHECK(s == AMXK_OK, "pack: %d", (int)s);
    free(w);
    return p;
}

/* Every reader of a pack on (p, bytes): a status, or for a valid pack results bounded by its header;
   nothing written on a status. The buffers are guarded and exactly `bytes` long, so under ASan any
   read past the pack is reported. */
static void read_all(const amxk_ctx *ctx, const void *p, size_t bytes, const char *what) {
    amxk_dtype dt;
    amxk_quant q;
    size_t n = 0, k = 0, ws = 0;
    int quant = amxk_packed_quant_info(p, bytes, &q, &n, &k) == AMXK_OK;
    if (!quant && amxk_packed_linear_info(p, bytes, &dt, &n, &k) != AMXK_OK) {
        float *w = (float *)test_alloc(64);
        test_watch wt;
        memset(&wt, 0, sizeof wt);
        wt.p[0] = w;
        test_watch_take(&wt);
        CHECK(amxk_dequantize(p, bytes, w, 1) != AMXK_OK, "%s: dequantize of a refused pack", what);
        CHECK(test_watch_same(&wt), "%s: a refused pack wrote", what);
        test_free(w);
        return;
    }
    CHECK(n >= 1 && k >= 1 && n <= 4096 && k <= 4096, "%s: accepted header n=%lu k=%lu (larger than the buffer allows)", what,
          (unsigned long)n, (unsigned long)k);
    if (n * k > 4096 * 64) return;
    {
        float *w = (float *)test_alloc(n * k * 4), *y = (float *)test_alloc(2 * n * 4);
        uint16_t *x = (uint16_t *)test_alloc(2 * k * 2);
        void *wsb;
        size_t i;
        amxk_status s;
        for (i = 0; i < 2 * k; i++) x[i] = bf16_of((float)(i % 7) - 3.0f);
        CHECK(amxk_dequantize(p, bytes, w, k) == AMXK_OK, "%s: dequantize", what);
        CHECK(amxk_linear_workspace_size_for(ctx, 2, p, bytes, &ws) == AMXK_OK, "%s: workspace", what);
        wsb = test_alloc(ws);
        s = amxk_linear(ctx, 2, n, k, x, AMXK_DTYPE_BF16, k, p, bytes, NULL, y, AMXK_DTYPE_F32, n, ws ? wsb : NULL, ws);
        CHECK(s == AMXK_OK || s == AMXK_ERR_FORMAT, "%s: linear %d", what, (int)s);
        CHECK(test_guard_ok(w) && test_guard_ok(y) && test_guard_ok(wsb), "%s: guards", what);
        test_free(w), test_free(y), test_free(x), test_free(wsb);
    }
}

/* ---- item 1: crafted fp8 block sizes; every header field of every format mutated ---------------- */

static void t_fp8_block_sizes(void) {
    const size_t N = 20, K = 64, big[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 18, (size_t)1 << 63, 21, 64};
    const size_t want = HDR + 16 * 2 * K + 64; /* two 16-row blocks of 64 codes, one scale padded to 64 B */
    amxk_quant q;
    size_t i, bytes;
    amxk_ctx ctx;
    amxk_tier t;
    TEST_SECTION("fp8 block sizes near 2^64 (item 1)");
    q.format = AMXK_QFMT_FP8_E4M3, q.asym = 0;
    for (i = 0; i < sizeof big / sizeof big[0]; i++) {
        q.block_n = big[i], q.block_k = 128;
        CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK && bytes == want, "block_n %lu: %lu bytes, want %lu", (unsigned long)big[i],
              (unsigned long)bytes, (unsigned long)want);
        q.block_n = 128, q.block_k = big[i];
        /* one grid row (tiled: 16 rows, 15 of them zero) x ceil(K / block_k) groups, padded to 64 B */
        CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK &&
                  bytes == want - 64 + (16 * 4 * ((K + (big[i] < K ? big[i] - 1 : 0)) / (big[i] < K ? big[i] : K)) + 63) / 64 * 64,
              "block_k %lu: %lu bytes", (unsigned long)big[i], (unsigned long)bytes);
    }
    test_case_begin(test_case_id("fp8 blocks", 0));
    {
        /* amxk_quantize_pack with block_n = block_k = SIZE_MAX: one scale block, the full size, the same
           pack as block N x K */
        float *w = (float *)malloc(N * K * 4), *d1 = (float *)malloc(N * K * 4), *d2 = (float *)malloc(N * K * 4);
        void *p1, *p2, *crafted;
        for (i = 0; i < N * K; i++) w[i] = test_randf(-3.0f, 3.0f);
        q.block_n = SIZE_MAX, q.block_k = SIZE_MAX;
        p1 = test_alloc(want);
        CHECK(amxk_quantize_pack(NULL, p1, want, &q, w, AMXK_DTYPE_F32, N, K, K) == AMXK_OK && test_guard_ok(p1), "quantize_pack SIZE_MAX blocks");
        q.block_n = N, q.block_k = K;
        p2 = test_alloc(want);
        CHECK(amxk_quantize_pack(NULL, p2, want, &q, w, AMXK_DTYPE_F32, N, K, K) == AMXK_OK, "quantize_pack N x K block");
        CHECK(amxk_dequantize(p1, want, d1, K) == AMXK_OK && amxk_dequantize(p2, want, d2, K) == AMXK_OK && memcmp(d1, d2, N * K * 4) == 0,
              "SIZE_MAX blocks dequantize as one N x K block");
        /* the reproducer: header block_n / block_k near 2^64 on a buffer without room for the grid */
        for (i = 0; i < 3; i++) {
            TEST_FOR_EACH_TIER(t, ctx) {
                float *y = (float *)test_alloc(2 * N * 4);
                uint16_t *x = (uint16_t *)test_alloc(2 * K * 2);
                void *ws = test_alloc(1 << 20);
                test_watch wt;
                size_t j;
                for (j = 0; j < 2 * K; j++) x[j] = bf16_of(1.0f);
                crafted = dup_buf(p2, want - 64);
                if (i != 1) put_u64(crafted, OFF_BN, big[i]);
                if (i != 0) put_u64(crafted, OFF_BK, big[i]);
                memset(&wt, 0, sizeof wt);
                wt.p[0] = y, wt.p[1] = ws, wt.p[2] = crafted;
                test_watch_take(&wt);
                CHECK(amxk_linear(&ctx, 2, N, K, x, AMXK_DTYPE_BF16, K, crafted, want - 64, NULL, y, AMXK_DTYPE_F32, N, ws, 1 << 20) ==
                          AMXK_ERR_FORMAT, "tier %s: crafted fp8 header accepted", amxk_tier_name(t));
                CHECK(amxk_dequantize(crafted, want - 64, y, 1) == AMXK_ERR_FORMAT, "dequantize of the crafted pack");
                CHECK(test_watch_same(&wt), "tier %s: crafted pack: something written", amxk_tier_name(t));
                test_free(crafted), test_free(y), test_free(x), test_free(ws);
            }
            test_case_begin(test_case_id("fp8 blocks", 1 + i));
        }
        test_free(p1), test_free(p2), free(w), free(d1), free(d2);
    }
}

static void t_header_mutations(void) {
    static const amxk_qformat fmts[] = {AMXK_QFMT_NONE, AMXK_QFMT_INT8, AMXK_QFMT_INT4, AMXK_QFMT_INT2, AMXK_QFMT_FP8_E4M3, AMXK_QFMT_FP8_E5M2};
    static const unsigned char vals[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff};
    static const size_t fields[] = {OFF_N, OFF_K, OFF_BN, OFF_BK};
    const uint64_t wide[] = {0, 1, 15, 17, (uint64_t)1 << 32, ((uint64_t)1 << 40) + 1, (uint64_t)1 << 63, ~(uint64_t)0 - 1, ~(uint64_t)0};
    amxk_ctx ctx;
    size_t f, i, j;
    int asym;
    char what[96];
    TEST_SECTION("every header byte of every format mutated (item 1)");
    if (!test_ctx(&ctx, amxk_cpu_init()->best_tier, 1)) return; /* not this run's level (AMXK_TEST_ONLY) */
    for (f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (asym = 0; asym < (fmts[f] == AMXK_QFMT_INT8 || fmts[f] == AMXK_QFMT_INT4 ? 2 : 1); asym++) {
            amxk_quant q;
            size_t bytes;
            void *p;
            q.format = fmts[f], q.asym = asym, q.block_n = (fmts[f] == AMXK_QFMT_FP8_E4M3 || fmts[f] == AMXK_QFMT_FP8_E5M2) ? 16 : 1,
            q.block_k = (fmts[f] == AMXK_QFMT_FP8_E4M3 || fmts[f] == AMXK_QFMT_FP8_E5M2) ? 16 : 8;
            test_case_begin(test_case_id("header mutations", f * 2 + (size_t)asym));
            p = make_pack(&q, 20, 40, &bytes);
            sprintf(what, "format %d asym %d unmodified", (int)fmts[f], asym);
            read_all(&ctx, p, bytes, what);
            for (i = 0; i < HDR; i++)
                for (j = 0; j < sizeof vals; j++) {
                    unsigned char *c = (unsigned char *)dup_buf(p, bytes);
                    if (c[i] == vals[j]) {
                        test_free(c);
                        continue;
                    }
                    c[i] = vals[j];
                    sprintf(what, "format %d asym %d: byte %lu = 0x%02x", (int)fmts[f], asym, (unsigned long)i, vals[j]);
                    read_all(&ctx, c, bytes, what);
                    test_free(c);
                }
            for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
                for (j = 0; j < sizeof wide / sizeof wide[0]; j++) {
                    void *c = dup_buf(p, bytes);
                    put_u64(c, fields[i], wide[j]);
                    sprintf(what, "format %d asym %d: u64 at %lu = 0x%llx", (int)fmts[f], asym, (unsigned long)fields[i], (unsigned long long)wide[j]);
                    read_all(&ctx, c, bytes, what);
                    test_free(c);
                }
            for (i = 0; i < 3; i++) { /* truncated */
                void *c = dup_buf(p, bytes - (i == 0 ? 1 : i == 1 ? 64 : bytes - 63));
                sprintf(what, "format %d asym %d truncated", (int)fmts[f], asym);
                read_all(&ctx, c, bytes - (i == 0 ? 1 : i == 1 ? 64 : bytes - 63), what);
                test_free(c);
            }
            test_free(p);
        }
}

/* ---- item 2: amxk_linear_q8 on bf16 / fp16 packs ---------------------------------------------------- */

static void t_q8_on_16bit(void) {
    const size_t N = 24, K = 64;
    amxk_ctx ctx;
    amxk_tier t;
    amxk_quant q8;
    TEST_SECTION("amxk_linear_q8 on bf16/fp16 packs (item 2)");
    q8.format = AMXK_QFMT_INT8, q8.asym = 0, q8.block_n = 1, q8.block_k = K;
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t bq, b16, i;
        void *pq, *p16, *p16h;
        int8_t *xq = (int8_t *)test_alloc(3 * K);
        float *xs = (float *)test_alloc(3 * 4), *y = (float *)test_alloc(3 * N * 4), *w = (float *)malloc(N * K * 4);
        test_watch wt;
        test_case_begin(test_case_id("q8 on 16-bit", 0));
        pq = make_pack(&q8, N, K, &bq);
        p16 = make_pack(NULL, N, K, &b16);
        for (i = 0; i < N * K; i++) w[i] = 0.5f;
        p16h = test_alloc(b16);
        CHECK(amxk_pack_linear(NULL, p16h, b16, AMXK_DTYPE_F16, w, AMXK_DTYPE_F32, N, K, K) == AMXK_OK, "fp16 pack");
        for (i = 0; i < 3 * K; i++) xq[i] = (int8_t)(i % 11) - 5;
        for (i = 0; i < 3; i++) xs[i] = 0.25f;
        /* the audit's sequence: an int8 call first (its geometry must not leak into the next call) */
        CHECK(amxk_linear_q8(&ctx, 3, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, pq, bq, NULL, y, AMXK_DTYPE_F32, N) == AMXK_OK, "int8 pack");
        memset(&wt, 0, sizeof wt);
        wt.p[0] = y;
        test_watch_take(&wt);
        CHECK(amxk_linear_q8(&ctx, 3, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, K, p16, b16, NULL, y, AMXK_DTYPE_F32, N) == AMXK_ERR_FORMAT,
              "tier %s: bf16 pack", amxk_tier_name(t));
        CHECK(amxk_linear_q8(&ctx, 3, N, K, xq, AMXK_DTYPE_I8, K, xs, AMXK_SCALES_ROW_MAJOR, 1, 16, p16h, b16, NULL, y, AMXK_DTYPE_F32, N) == AMXK_ERR_FORMAT,
              "tier %s: fp16 pack", amxk_tier_name(t));
        CHECK(test_watch_same(&wt), "tier %s: y written", amxk_tier_name(t));
        test_free(pq), test_free(p16), test_free(p16h), test_free(xq), test_free(xs), test_free(y), free(w);
    }
}

/* ---- item 3: the range of the quantized decode kernels -------------------------------------------- */

/* y = x W^T for a pack of constant code `code` (values: int8_t for ints, the raw code for fp8), one
   scale `scale` (zero point zp for asym), x = xv everywhere; every tier, M in {1, 2, 3, 5, 12}: the
   double result `want` within rtol (0: exactly). */
static void decode_case(const char *name, amxk_qformat fmt, int asym, size_t K, size_t group, int code, float scale, float zp, float xv,
                        double want, double rtol) {
    const size_t N = 16, ms[] = {1, 2, 3, 5, 12};
    amxk_quant q;
    amxk_ctx ctx;
    amxk_tier t;
    size_t bytes, i, mi, ng = K / group;
    uint8_t *vals = (uint8_t *)malloc(N * K);
    float *sc = (float *)malloc(N * ng * 4), *zs = (float *)malloc(N * ng * 4);
    uint16_t *x = (uint16_t *)malloc(12 * K * 2);
    void *p;
    q.format = fmt, q.asym = asym, q.block_n = 1, q.block_k = group;
    memset(vals, code & 0xff, N * K);
    for (i = 0; i < N * ng; i++) sc[i] = scale, zs[i] = zp;
    for (i = 0; i < 12 * K; i++) x[i] = bf16_of(xv);
    CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK, "%s: size", name);
    p = test_alloc(bytes);
    CHECK(amxk_pack_quant(NULL, p, bytes, &q, vals, K, sc, asym ? zs : NULL, N, K) == AMXK_OK, "%s: pack", name);
    TEST_FOR_EACH_TIER(t, ctx) {
        for (mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            size_t ws, m = ms[mi], bad = 0;
            float *y = (float *)test_alloc(m * N * 4);
            void *wsb;
            CHECK(amxk_linear_workspace_size_for(&ctx, m, p, bytes, &ws) == AMXK_OK, "ws");
            wsb = test_alloc(ws);
            CHECK(amxk_linear(&ctx, m, N, K, x, AMXK_DTYPE_BF16, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, wsb, ws) == AMXK_OK, "%s: call", name);
            for (i = 0; i < m * N; i++)
                if (!(fabs((double)y[i] - want) <= rtol * fabs(want))) bad++;
            CHECK(bad == 0, "tier %s, %s, M=%lu: y[0] = %.9g, want %.9g (%lu wrong)", amxk_tier_name(t), name, (unsigned long)m, (double)y[0], want,
                  (unsigned long)bad);
            test_free(y), test_free(wsb);
        }
    }
    test_free(p), free(vals), free(sc), free(zs), free(x);
}

static void t_decode_range(void) {
    TEST_SECTION("quantized decode: no overflow of the pre-scaled sums (item 3)");
    /* the audit's reproducer: int8 per channel, K = 4096, q = 127, scale 4096, x = 1: 127 * 2^24 exactly */
    decode_case("int8 sym K=4096 s=4096", AMXK_QFMT_INT8, 0, 4096, 4096, 127, 4096.0f, 0.0f, 1.0f, 2130706432.0, 0.0);
    /* results near the top of the f32 range, every int format and fp8: 2^sh must never be applied to them */
    decode_case("int8 sym s=2^100 x=2^10", AMXK_QFMT_INT8, 0, 64, 64, -127, 0x1p100f, 0.0f, 1024.0f, -127.0 * 0x1p100 * 1024.0 * 64, 1e-6);
    decode_case("int4 sym s=2^110", AMXK_QFMT_INT4, 0, 256, 32, 7, 0x1p110f, 0.0f, 4.0f, 7.0 * 0x1p110 * 4.0 * 256, 1e-6);
    decode_case("int4 asym s=2^110", AMXK_QFMT_INT4, 1, 256, 32, 15, 0x1p110f, 3.0f, 4.0f, 12.0 * 0x1p110 * 4.0 * 256, 1e-6);
    decode_case("int8 asym s=2^100 K=4096", AMXK_QFMT_INT8, 1, 4096, 128, 255, 0x1p100f, 1.0f, 2.0f, 254.0 * 0x1p100 * 2.0 * 4096, 1e-6);
    decode_case("int2 sym s=2^110", AMXK_QFMT_INT2, 0, 128, 128, 1, 0x1p110f, 0.0f, 8.0f, 0x1p110 * 8.0 * 128, 1e-6);
    decode_case("e4m3 448 s=2^100 K=4096", AMXK_QFMT_FP8_E4M3, 0, 4096, 4096, 0x7e, 0x1p100f, 0.0f, 1.0f, 448.0 * 0x1p100 * 4096, 1e-6);
    decode_case("e5m2 57344 s=2^96 K=1024", AMXK_QFMT_FP8_E5M2, 0, 1024, 1024, 0x7b, 0x1p96f, 0.0f, 2.0f, 57344.0 * 0x1p96 * 2.0 * 1024, 1e-6);
    /* and tiny results (the pre-scale's purpose): no flush to zero */
    decode_case("int8 sym s=2^-100 x=2^-20", AMXK_QFMT_INT8, 0, 64, 64, 3, 0x1p-100f, 0.0f, 0x1p-20f, 3.0 * 0x1p-120 * 64, 1e-6);
}

/* ---- issue 31, class 5: fp8 e4m3 block scales up to FLT_MAX / 448 ------------------------------ */

/* e4m3 packs (blocks 1 x 32 and 16 x 32) whose scales reach FLT_MAX / 448, bf16 x, every level, decode
   and prefill row counts (the AMX tiles and the vector prefill dequantize the pack; decode kernels
   apply s per group): every output finite and within a bf16-weight bound of the fp64 sum of x times
   the f32 dequantized weight (s * code rounded once, which amxk_dequantize must return exactly). The
   vector levels used to fold 256 into the scale: s * 256 = inf, and a zero code gave NaN. Codes stay
   below 448 so that every weight fits bf16 too (the scalar level and the AMX tiles multiply weights
   rounded to x's dtype: a weight above bf16's range is inf there, as documented; fp16 x has the same
   limit at 65504, so it is not used here). */
static void t_fp8_huge_scales(void) {
    const size_t N = 48, K = 96, ms[] = {1, 3, 4, 5, 12, 17};
    const float smax = 3.40282347e38f / 448.0f;
    int bi, xi;
    TEST_SECTION("fp8 e4m3 scales up to FLT_MAX: finite, the dequantized weights' sum (issue 31)");
    for (bi = 0; bi < 4; bi++)
        for (xi = 0; xi < 2; xi++) {
            /* bi 0, 1: scales up to FLT_MAX / 448 (blocks 1 x 32, 16 x 32); bi 2, 3: scales from 2e36 (the issue's
               reproducer: s * 256 overflows) up to FLT_MAX, codes cut so that every |s * code| fits bf16 */
            const size_t bn = bi & 1 ? 16 : 1, bk = 32, nbn = (N + bn - 1) / bn, nbk = K / bk;
            const amxk_dtype xt = xi == 2 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16;
            const double xmag = xi == 0 ? 0x1p-100 : xi == 1 ? 0x1p-60 : 0x1p-14;
            amxk_quant q;
            amxk_ctx ctx;
            amxk_tier t;
            size_t bytes, i, j, mi;
            uint8_t *codes = (uint8_t *)malloc(N * K);
            float *sc = (float *)malloc(nbn * nbk * 4), *wd = (float *)malloc(N * K * 4);
            uint16_t *x = (uint16_t *)malloc(17 * K * 2);
            double *xd = (double *)malloc(17 * K * sizeof(double));
            size_t bad_dq = 0;
            void *p;
            test_case_begin(test_case_id("fp8 huge scales", (uint64_t)(bi * 3 + xi)));
            for (i = 0; i < N * K; i++) { /* finite codes: zeros, subnormals, up to 416 (s * 448 = FLT_MAX is above bf16's largest finite value) */
                unsigned c = (unsigned)test_randint(0, 255);
                if ((c & 0x7f) >= 0x7e) c = (c & 0x80) | 0x7d;
                if (i % 7 == 0) c = 0;
                codes[i] = (uint8_t)c;
            }
            for (i = 0; i < nbn * nbk; i++)
                sc[i] = bi < 2 ? (i % 3 == 0 ? smax : i % 3 == 1 ? (float)ldexp(test_uniform(1.0, 2.0), 118) : 5e35f)
                               : (i % 4 == 0 ? 2e36f : i % 4 == 1 ? 3.40282347e38f : i % 4 == 2 ? (float)ldexp(test_uniform(1.0, 2.0), 121) : 1e38f);
            for (i = 0; bi >= 2 && i < N * K; i++) { /* the largest code magnitude not above 3.3e38 / s, same sign */
                const double lim = 3.3e38 / (double)sc[(i / K / bn) * nbk + (i % K) / bk];
                while ((codes[i] & 0x7f) != 0 && fabs(test_ref_decode(AMXK_DTYPE_FP8_E4M3, codes[i])) > lim) codes[i]--;
            }
            for (i = 0; i < 17 * K; i++) {
                x[i] = (uint16_t)test_ref_encode(xt, test_uniform(-1.0, 1.0) * xmag);
                xd[i] = test_ref_decode(xt, x[i]);
            }
            q.format = AMXK_QFMT_FP8_E4M3, q.asym = 0, q.block_n = bn, q.block_k = bk;
            CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK, "size");
            p = test_alloc(bytes);
            CHECK(amxk_pack_quant(NULL, p, bytes, &q, codes, K, sc, NULL, N, K) == AMXK_OK, "pack");
            CHECK(amxk_dequantize(p, bytes, wd, K) == AMXK_OK, "dequantize");
            for (i = 0; i < N; i++)
                for (j = 0; j < K; j++) {
                    const float want = (float)((double)sc[(i / bn) * nbk + j / bk] * test_ref_decode(AMXK_DTYPE_FP8_E4M3, codes[i * K + j]));
                    if (memcmp(&want, &wd[i * K + j], 4) != 0) bad_dq++;
                }
            CHECK(bad_dq == 0, "blocks %zux%zu: amxk_dequantize != s * code rounded once at %zu weights", bn, bk, bad_dq);
            TEST_FOR_EACH_TIER(t, ctx) {
                for (mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                    const size_t m = ms[mi];
                    size_t ws, bad = 0, nonfinite = 0, first = 0;
                    float *y = (float *)test_alloc(m * N * 4);
                    void *wsb;
                    CHECK(amxk_linear_workspace_size_for(&ctx, m, p, bytes, &ws) == AMXK_OK, "ws");
                    wsb = test_alloc(ws);
                    CHECK(amxk_linear(&ctx, m, N, K, x, xt, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, ws ? wsb : NULL, ws) == AMXK_OK, "call");
                    for (i = 0; i < m; i++)
                        for (j = 0; j < N; j++) {
                            double ref = 0.0, mag = 0.0;
                            size_t kk;
                            for (kk = 0; kk < K; kk++) ref += xd[i * K + kk] * wd[j * K + kk], mag += fabs(xd[i * K + kk] * wd[j * K + kk]);
                            if (!isfinite(y[i * N + j])) nonfinite++;
                            /* AMX tiles round x*w's weight to bf16/fp16 and sum in another order: a loose bound; the failure is inf / NaN */
                            if (!(fabs(y[i * N + j] - ref) <= 0x1p-6 * mag + 1e-30)) {
                                if (!bad) first = i * N + j;
                                bad++;
                            }
                        }
                    CHECK(nonfinite == 0 && bad == 0, "[%s] e4m3 blocks %zux%zu, x ~ %g (%s), M=%zu: %zu non-finite, %zu off (first y[%zu] = %g)",
                          amxk_tier_name(t), bn, bk, xmag, xt == AMXK_DTYPE_F16 ? "f16" : "bf16", m, nonfinite, bad, first, (double)y[first]);
                    test_free(y), test_free(wsb);
                }
            }
            test_free(p), free(codes), free(sc), free(wd), free(x), free(xd);
        }
}

/* ---- issue 31, class 4: importers read every source array after writing dst ----------------------- */

/* A GPTQ / AWQ checkpoint (n 16, k 64, 4 bits, group 32, random asymmetric zeros) whose qweight, qzeros,
   scales or g_idx lies inside dst (at its start, middle or last bytes): AMXK_ERR_ALIAS, dst unchanged. */
static void t_import_alias(void) {
    const size_t n = 16, k = 64, g = 32, ng = k / g;
    int awq, arr, where;
    TEST_SECTION("importers: a source array inside dst is refused, nothing written (issue 31)");
    for (awq = 0; awq < 2; awq++)
        for (arr = 0; arr < (awq ? 3 : 4); arr++)
            for (where = 0; where < 3; where++) {
                const size_t qw_words = awq ? k * (n / 8) : (k / 8) * n, qz_words = ng * (n / 8);
                const size_t len[4] = {qw_words * 4, qz_words * 4, ng * n * 4, k * 4};
                int32_t qweight[128], qzeros[4], gidx[64];
                float scales[32];
                const void *src[4];
                void *srcs[4];
                size_t bytes, i, off;
                unsigned char *dst;
                test_watch wt;
                amxk_status st;
                test_case_begin(test_case_id("import alias", (uint64_t)((awq * 4 + arr) * 3 + where)));
                for (i = 0; i < qw_words; i++) qweight[i] = (int32_t)test_rand32();
                for (i = 0; i < qz_words; i++) qzeros[i] = (int32_t)(test_rand32() & 0x77777777u); /* zeros 0..7: asymmetric, in range */
                for (i = 0; i < ng * n; i++) scales[i] = (float)test_uniform(0.01, 0.1);
                for (i = 0; i < k; i++) gidx[i] = (int32_t)(i / g);
                CHECK(amxk_import_size(4, g, n, k, &bytes) == AMXK_OK, "size");
                /* the array at dst's start, in its middle (or overlapping its start from inside when it is longer than dst), across its end */
                off = where == 0 ? 0 : where == 1 ? (bytes > len[arr] ? (bytes - len[arr]) / 2 & ~(size_t)3 : 4) : (bytes - len[arr] / 2) & ~(size_t)3;
                dst = (unsigned char *)test_alloc((bytes > off + len[arr] ? bytes : off + len[arr])); /* dst = its first `bytes` bytes */
                test_noise_fill(dst, (bytes > off + len[arr] ? bytes : off + len[arr]));
                src[0] = qweight, src[1] = qzeros, src[2] = scales, src[3] = gidx;
                memcpy(dst + off, src[arr], len[arr]);
                for (i = 0; i < 4; i++) srcs[i] = (void *)(uintptr_t)src[i];
                srcs[arr] = dst + off;
                memset(&wt, 0, sizeof wt);
                wt.p[0] = dst;
                test_watch_take(&wt);
                st = awq ? amxk_import_awq(NULL, dst, bytes, g, (const int32_t *)srcs[0], (const int32_t *)srcs[1], srcs[2], AMXK_DTYPE_F32, n, k)
                         : amxk_import_gptq(NULL, dst, bytes, 4, g, 0, (const int32_t *)srcs[0], (const int32_t *)srcs[1], srcs[2], AMXK_DTYPE_F32,
                                            (const int32_t *)srcs[3], n, k);
                CHECK(st == AMXK_ERR_ALIAS, "%s: %s in dst (offset %zu of %zu bytes): status %d (%s), want ALIAS", awq ? "awq" : "gptq",
                      arr == 0 ? "qweight" : arr == 1 ? "qzeros" : arr == 2 ? "scales" : "g_idx", off, bytes, (int)st, amxk_status_string(st));
                CHECK(test_watch_same(&wt), "%s: array %d in dst: something written", awq ? "awq" : "gptq", arr);
                test_free(dst);
            }
    { /* and the same arrays beside dst are accepted (the check is by extent, not by buffer) */
        const size_t qw = (k / 8) * n;
        int32_t qweight[128], qzeros[4];
        float scales[32];
        size_t bytes, i;
        unsigned char *dst;
        test_case_begin(test_case_id("import alias", 99));
        for (i = 0; i < qw; i++) qweight[i] = (int32_t)test_rand32();
        for (i = 0; i < 4; i++) qzeros[i] = (int32_t)(test_rand32() & 0x77777777u);
        for (i = 0; i < ng * n; i++) scales[i] = (float)test_uniform(0.01, 0.1);
        CHECK(amxk_import_size(4, g, n, k, &bytes) == AMXK_OK, "size");
        dst = (unsigned char *)test_alloc(bytes + 64 + sizeof qzeros);
        memcpy(dst + bytes + 64, qzeros, sizeof qzeros); /* right after dst (and its 64-byte rounding) */
        CHECK(amxk_import_gptq(NULL, dst, bytes, 4, g, 0, qweight, (const int32_t *)(const void *)(dst + bytes + 64), scales, AMXK_DTYPE_F32, NULL, n, k) ==
                  AMXK_OK,
              "gptq: qzeros just past dst: accepted");
        test_free(dst);
    }
}

/* ---- item 4: contexts that did not come from amxk_ctx_init --------------------------------------- */

static void t_forged_ctx(void) {
    const amxk_cpu *cpu = amxk_cpu_init();
    int tv[AMXK_TIER_COUNT + 3], nt = 0, i;
    const size_t N = 16, K = 32;
    size_t bytes, ws;
    void *p;
    float *f = (float *)test_alloc(N * K * 4), *y = (float *)test_alloc(N * K * 4);
    uint16_t *h = (uint16_t *)test_alloc(N * K * 2);
    int8_t *q = (int8_t *)test_alloc(N * K);
    amxk_quant q8;
    TEST_SECTION("forged contexts: tier not usable here, bad worker count (item 4)");
    test_case_begin(test_case_id("forged ctx", 0));
    q8.format = AMXK_QFMT_INT8, q8.asym = 0, q8.block_n = 1, q8.block_k = K;
    p = make_pack(&q8, N, K, &bytes);
    memset(f, 0, N * K * 4), memset(h, 0, N * K * 2), memset(q, 0, N * K);
    for (i = 0; i < AMXK_TIER_COUNT; i++)
        if (!(cpu->tiers & AMXK_TIER_BIT(i))) tv[nt++] = i; /* NONE, and the levels this CPU / build lacks (AMX here: SIGILL before) */
    tv[nt++] = AMXK_TIER_COUNT, tv[nt++] = 99, tv[nt++] = -1;
    for (i = 0; i <= nt; i++) {
        amxk_ctx c;
        amxk_gdn_params gp = amxk_gdn_params_default(1, 1, 16, 16);
        amxk_moe_weights mw;
        test_watch wt;
        memset(&c, 0, sizeof c);
        memset(&mw, 0, sizeof mw);
        c.tier = i < nt ? (amxk_tier)tv[i] : cpu->best_tier, c.n_workers = i < nt ? 1 : 0; /* last: a usable tier, 0 workers */
        memset(&wt, 0, sizeof wt);
        wt.p[0] = y, wt.p[1] = f;
        test_watch_take(&wt);
        CHECK(amxk_convert(&c, y, AMXK_DTYPE_F32, h, AMXK_DTYPE_BF16, 16) == AMXK_ERR_CONTEXT, "tier %d: convert", c.tier);
        CHECK(amxk_linear(&c, 1, N, K, h, AMXK_DTYPE_BF16, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, f, N * K * 4) == AMXK_ERR_CONTEXT,
              "tier %d: linear", c.tier);
        CHECK(amxk_linear_q8(&c, 1, N, K, q, AMXK_DTYPE_I8, K, f, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N) == AMXK_ERR_CONTEXT,
              "tier %d: linear_q8", c.tier);
        CHECK(amxk_quantize_act(&c, 1, K, h, AMXK_DTYPE_BF16, K, K, AMXK_DTYPE_I8, y, K, f, AMXK_SCALES_ROW_MAJOR, 1) == AMXK_ERR_CONTEXT,
              "tier %d: quantize_act", c.tier);
        CHECK(amxk_pack_linear(&c, y, N * K * 4, AMXK_DTYPE_BF16, h, AMXK_DTYPE_BF16, N, K, K) == AMXK_ERR_CONTEXT, "tier %d: pack", c.tier);
        CHECK(amxk_quantize_pack(&c, y, N * K * 4, &q8, f, AMXK_DTYPE_F32, N, K, K) == AMXK_ERR_CONTEXT, "tier %d: quantize_pack", c.tier);
        CHECK(amxk_linear_workspace_size(&c, 1, N, K, &ws) == AMXK_ERR_CONTEXT, "tier %d: workspace size", c.tier);
        CHECK(amxk_gdn_workspace_size(&c, &gp, AMXK_GDN_AUTO, &ws) == AMXK_ERR_CONTEXT, "tier %d: gdn workspace size", c.tier);
        mw.n_experts = 1, mw.hidden = K, mw.inter = N / 2, mw.w13_base = p, mw.w13_stride = bytes, mw.w2_base = p, mw.w2_stride = bytes;
        CHECK(amxk_moe_workspace_size(&c, &mw, NULL, NULL, 1, 1, &ws) == AMXK_ERR_CONTEXT, "tier %d: moe workspace size", c.tier);
        CHECK(amxk_conv1d_pack(&c, y, N * K * 4, f, AMXK_DTYPE_F32, 16, 4, 4, NULL) == AMXK_ERR_CONTEXT, "tier %d: conv1d_pack", c.tier);
        CHECK(test_watch_same(&wt), "tier %d: something written", c.tier);
    }
    test_free(p), test_free(f), test_free(y), test_free(h), test_free(q);
}

/* ---- item 5: every size query near SIZE_MAX ------------------------------------------------------- */

#define NVALS 14
static const size_t size_vals[NVALS] = {1, 2, 17, 4096, (size_t)1 << 31, ((size_t)1 << 32) - 1, (size_t)1 << 32, ((size_t)1 << 32) + 1,
                                        (size_t)1 << 40, ((size_t)1 << 40) + 1, (size_t)1 << 62, SIZE_MAX / 2, SIZE_MAX - 1, SIZE_MAX};

/* s OK => bytes equals the double-precision size want (relative 1e-12) and want fits a size_t;
   want beyond a size_t => an error. */
static int size_ok(amxk_status s, size_t bytes, double want) {
    if (want >= 18446744073709551616.0) return s != AMXK_OK;
    return s != AMXK_OK || fabs((double)bytes - want) <= 1e-12 * want;
}

static void t_size_sweep(void) {
    static const amxk_qformat qf[] = {AMXK_QFMT_INT8, AMXK_QFMT_INT4, AMXK_QFMT_INT2, AMXK_QFMT_FP8_E4M3};
    size_t a, b, c, f, bytes;
    amxk_status s;
    TEST_SECTION("size queries near SIZE_MAX (item 5)");
    for (a = 0; a < NVALS; a++)
        for (b = 0; b < NVALS; b++) {
            const double n = (double)size_vals[a], k = (double)size_vals[b];
            const double blocks = ceil(n / 16) * 16 * ceil(k / 32) * 32; /* padded fields */
            bytes = 0;
            s = amxk_pack_linear_size(AMXK_DTYPE_BF16, size_vals[a], size_vals[b], &bytes);
            CHECK(size_ok(s, bytes, 64 + 2 * blocks), "pack_linear_size(%lu, %lu) = %d, %lu", (unsigned long)size_vals[a],
                  (unsigned long)size_vals[b], (int)s, (unsigned long)bytes);
            for (f = 0; f < 4; f++)
                for (c = 0; c < NVALS; c++) {
                    amxk_quant q;
                    const int bits = qf[f] == AMXK_QFMT_INT4 ? 4 : qf[f] == AMXK_QFMT_INT2 ? 2 : 8, fp8 = qf[f] == AMXK_QFMT_FP8_E4M3;
                    const size_t g = size_vals[c];
                    double grid;
                    q.format = qf[f], q.asym = !fp8 && c % 2, q.block_n = fp8 ? size_vals[(c + 5) % NVALS] : 1, q.block_k = g;
                    grid = ceil(ceil(n / (double)q.block_n) / 16) * 16 * ceil(k / (double)g) * 4; /* grid rows in tiles of 16 */
                    grid = ceil(grid / 64) * 64;
                    bytes = 0;
                    s = amxk_pack_quant_size(&q, size_vals[a], size_vals[b], &bytes);
                    if (!fp8 && size_vals[b] % g) { /* group must divide K */
                        CHECK(s == AMXK_ERR_ARG || s == AMXK_ERR_SHAPE, "pack_quant_size: group %lu not dividing K accepted", (unsigned long)g);
                        continue;
                    }
                    CHECK(size_ok(s, bytes, 64 + blocks * bits / 8 + grid * (q.asym ? 2 : 1)),
                          "pack_quant_size(fmt %d asym %d, bn %lu, bk %lu, %lu, %lu) = %d, %lu", (int)qf[f], q.asym, (unsigned long)q.block_n,
                          (unsigned long)g, (unsigned long)size_vals[a], (unsigned long)size_vals[b], (int)s, (unsigned long)bytes);
                    if (fp8) continue;
                    bytes = 0;
                    s = amxk_import_size(bits, g, size_vals[a], size_vals[b], &bytes);
                    CHECK(size_ok(s, bytes, 64 + blocks * bits / 8 + 2 * grid), "import_size(%d, %lu, %lu, %lu) = %d, %lu", bits, (unsigned long)g,
                          (unsigned long)size_vals[a], (unsigned long)size_vals[b], (int)s, (unsigned long)bytes);
                }
            /* conv1d: dim x width */
            bytes = 0;
            s = amxk_conv1d_pack_size(size_vals[a], size_vals[b] % 8 + 1, &bytes);
            CHECK(size_ok(s, bytes, 64 + ceil(((double)(size_vals[b] % 8) + 2) * ceil(n / 16) * 16 * 4 / 64) * 64), "conv1d_pack_size(%lu, %lu) = %d, %lu",
                  (unsigned long)size_vals[a], (unsigned long)(size_vals[b] % 8 + 1), (int)s, (unsigned long)bytes);
            /* moe_align: floor(M topk / bm) + min(E, M topk) */
            {
                const double mt = n * (double)(b % 4 + 1), e = k;
                size_t mb = 0;
                s = amxk_moe_align_size(size_vals[a], b % 4 + 1, size_vals[b], size_vals[(a + b) % NVALS], &mb);
                CHECK(size_ok(s, mb, floor(mt / (double)size_vals[(a + b) % NVALS]) + (e < mt ? e : mt)), "moe_align_size(%lu, %lu, %lu, %lu) = %d",
                      (unsigned long)size_vals[a], (unsigned long)(b % 4 + 1), (unsigned long)size_vals[b], (unsigned long)size_vals[(a + b) % NVALS],
                      (int)s);
            }
        }
    /* workspaces: n_workers up to 2^31 - 1; the per-worker slice does not depend on the worker count */
    {
        static const int workers[] = {1, 7, 1 << 20, 0x7fffffff};
        size_t wi, mi;
        for (wi = 1; wi < 4; wi++)
            for (mi = 0; mi < NVALS; mi++)
                for (b = 0; b < NVALS; b++) {
                    amxk_ctx c1, cw;
                    size_t one = 0, all = 0, m = size_vals[mi] % 100000 + 1;
                    amxk_status s1, sw;
                    memset(&c1, 0, sizeof c1), memset(&cw, 0, sizeof cw);
                    cw.n_workers = workers[wi];
                    CHECK(amxk_ctx_init(&c1) == AMXK_OK && amxk_ctx_init(&cw) == AMXK_OK, "ctx");
                    s1 = amxk_linear_workspace_size(&c1, m, size_vals[b], size_vals[(b + mi) % NVALS], &one);
                    sw = amxk_linear_workspace_size(&cw, m, size_vals[b], size_vals[(b + mi) % NVALS], &all);
                    CHECK(s1 != AMXK_OK ? sw != AMXK_OK : size_ok(sw, all, (double)one * workers[wi]),
                          "linear_workspace_size(M %lu, N %lu, K %lu) x %d workers: %d %lu (one: %d %lu)", (unsigned long)m, (unsigned long)size_vals[b],
                          (unsigned long)size_vals[(b + mi) % NVALS], workers[wi], (int)sw, (unsigned long)all, (int)s1, (unsigned long)one);
                    if (wi == 3 && mi == 0) {
                        amxk_gdn_params gp = amxk_gdn_params_default(1, size_vals[b] > 64 ? 64 : size_vals[b], 256, 256);
                        s1 = amxk_gdn_workspace_size(&c1, &gp, AMXK_GDN_AUTO, &one);
                        sw = amxk_gdn_workspace_size(&cw, &gp, AMXK_GDN_AUTO, &all);
                        CHECK(s1 == AMXK_OK && size_ok(sw, all, (double)one * workers[wi]), "gdn_workspace_size x %d workers: %d %lu", workers[wi],
                              (int)sw, (unsigned long)all);
                    }
                }
    }
    /* amxk_moe_workspace_size reads only the packs' headers: a 64-byte header claiming K = 2^32 */
    {
        static const size_t ms[] = {1, (size_t)1 << 20, (size_t)1 << 30, (size_t)1 << 31};
        const size_t N = 32; /* K and N multiples of 32: no padding columns, so only the headers are read */
        size_t mi, K;
        for (K = (size_t)1 << 20; K <= ((size_t)1 << 32); K <<= 12)
            for (mi = 0; mi < 4; mi++) {
                amxk_moe_weights mw;
                void *h13 = test_alloc(HDR), *h2 = test_alloc(HDR);
                size_t b13, b2;
                amxk_pack_linear_size(AMXK_DTYPE_BF16, 2 * N, K, &b13);
                amxk_pack_linear_size(AMXK_DTYPE_BF16, K, N, &b2);
                memset(h13, 0, HDR), memset(h2, 0, HDR);
                memcpy(h13, "AMXKPACK", 8), memcpy(h2, "AMXKPACK", 8);
                put_u64(h13, OFF_VERSION, 3 | ((uint64_t)AMXK_DTYPE_BF16 << 32)), put_u64(h2, OFF_VERSION, 3 | ((uint64_t)AMXK_DTYPE_BF16 << 32));
                put_u64(h13, OFF_N, 2 * N), put_u64(h13, OFF_K, K), put_u64(h2, OFF_N, K), put_u64(h2, OFF_K, N);
                memset(&mw, 0, sizeof mw);
                mw.n_experts = 1, mw.hidden = K, mw.inter = N;
                mw.w13 = (const void *const *)&h13, mw.w13_bytes = &b13, mw.w2 = (const void *const *)&h2, mw.w2_bytes = &b2;
                bytes = 0;
                s = amxk_moe_workspace_size(NULL, &mw, NULL, NULL, ms[mi], 1, &bytes);
                /* the per-row regions alone: gathered x (2K), h (8N), act (2N), y (4K) bytes per row */
                CHECK(s == AMXK_OK ? (double)bytes >= (double)ms[mi] * (6.0 * (double)K + 10.0 * N) && (double)bytes < 18446744073709551616.0
                                   : (double)ms[mi] * (6.0 * (double)K + 10.0 * N) >= 18446744073709551616.0 / 2,
                      "moe_workspace_size(M %lu, K %lu) = %d, %lu", (unsigned long)ms[mi], (unsigned long)K, (int)s, (unsigned long)bytes);
                test_free(h13), test_free(h2);
            }
    }
}

/* ---- item 6: padding, forged NO_NAN flag, MoE stride, gdn aliasing, NaN in amxk_quantize_act --------- */

static void t_padding(void) {
    const size_t N = 20, K = 40; /* K padded to 64: columns 40..63 of every block are padding */
    amxk_ctx ctx;
    amxk_tier t;
    TEST_SECTION("padding columns must never reach an output (item 6)");
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t form, m;
        for (form = 0; form < 3; form++) {
            amxk_quant q;
            size_t bytes, ws, i;
            void *p, *c, *wsb;
            uint16_t *x = (uint16_t *)test_alloc(16 * K * 2);
            float *y0 = (float *)test_alloc(16 * N * 4), *y1 = (float *)test_alloc(16 * N * 4);
            test_watch wt;
            q.format = form == 1 ? AMXK_QFMT_FP8_E4M3 : AMXK_QFMT_INT4, q.asym = 0, q.block_n = 1, q.block_k = form == 1 ? K : 8;
            test_case_begin(test_case_id("padding", form));
            p = make_pack(form == 0 ? NULL : &q, N, K, &bytes);
            for (i = 0; i < 16 * K; i++) x[i] = bf16_of(test_randf(-1.0f, 1.0f));
            c = dup_buf(p, bytes);
            /* column 45 of row 3 (block 0) and column 63 of row 19 (block 1): NaN (bf16 / e4m3) or -8 (int4) */
            if (form == 0) {
                uint16_t nan16 = 0x7fc0;
                memcpy((char *)c + HDR + (45 / 2) * 64 + 3 * 4 + 2, &nan16, 2);
                memcpy((char *)c + HDR + 16 * 64 * 2 + (63 / 2) * 64 + 3 * 4 + 2, &nan16, 2);
            } else if (form == 1) {
                ((unsigned char *)c)[HDR + (45 / 4) * 64 + 3 * 4 + 1] = 0x7f;
                ((unsigned char *)c)[HDR + 16 * 64 + (63 / 4) * 64 + 3 * 4 + 3] = 0xff;
            } else {
                ((unsigned char *)c)[HDR + (45 / 8) * 64 + 3 * 4 + 1] |= 0x80;
                ((unsigned char *)c)[HDR + 16 * 32 + (63 / 8) * 64 + 3 * 4 + 3] |= 0x88;
            }
            CHECK(amxk_linear_workspace_size_for(&ctx, 16, p, bytes, &ws) == AMXK_OK && amxk_linear_workspace_size_for(&ctx, 1, p, bytes, &i) == AMXK_OK,
                  "ws");
            ws = ws > i ? ws : i;
            wsb = test_alloc(ws);
            for (m = 1; m <= 16; m += 15) {
                amxk_status s;
                CHECK(amxk_linear(&ctx, m, N, K, x, AMXK_DTYPE_BF16, K, p, bytes, NULL, y0, AMXK_DTYPE_F32, N, wsb, ws) == AMXK_OK, "clean pack");
                memset(&wt, 0, sizeof wt);
                wt.p[0] = y1;
                test_watch_take(&wt);
                s = amxk_linear(&ctx, m, N, K, x, AMXK_DTYPE_BF16, K, c, bytes, NULL, y1, AMXK_DTYPE_F32, N, wsb, ws);
                if (form < 2) {
                    CHECK(s == AMXK_ERR_FORMAT && test_watch_same(&wt), "tier %s form %lu M %lu: NaN padding: %d", amxk_tier_name(t), (unsigned long)form,
                          (unsigned long)m, (int)s);
                } else { /* int padding is never read: the same outputs */
                    test_watch_same(&wt);
                    CHECK(s == AMXK_OK && memcmp(y0, y1, m * N * 4) == 0, "tier %s M %lu: int4 padding changed the outputs", amxk_tier_name(t),
                          (unsigned long)m);
                }
            }
            test_free(p), test_free(c), test_free(x), test_free(y0), test_free(y1), test_free(wsb);
        }
    }
}

/* fp8 packs with a NaN (e4m3) or infinite (e5m2) code in column 5 of row 9: output column 9 is NaN (or
   not finite) on every tier and row count, whether the header's NO_NAN flag is honest or forged. */
static void t_forged_no_nan(void) {
    const size_t N = 32, K = 64;
    amxk_ctx ctx;
    amxk_tier t;
    size_t f, forged;
    TEST_SECTION("fp8 NaN / inf codes under a forged NO_NAN flag (item 6)");
    for (f = 0; f < 2; f++)
        for (forged = 0; forged < 2; forged++) {
            amxk_quant q;
            size_t bytes, i, j;
            uint8_t *codes = (uint8_t *)malloc(N * K);
            float sc[1] = {0.5f};
            uint16_t *x = (uint16_t *)malloc(16 * K * 2);
            double *xd = (double *)malloc(16 * K * sizeof(double));
            void *p;
            q.format = f ? AMXK_QFMT_FP8_E5M2 : AMXK_QFMT_FP8_E4M3, q.asym = 0, q.block_n = N, q.block_k = K;
            test_case_begin(test_case_id("forged no-nan", f * 2 + forged));
            for (i = 0; i < N * K; i++) codes[i] = (uint8_t)(test_rand32() & 0xbf); /* exponent top bit clear: finite */
            codes[9 * K + 5] = f ? 0x7c : 0x7f;
            for (i = 0; i < 16 * K; i++) {
                x[i] = bf16_of(test_randf(0.5f, 1.0f));
                xd[i] = test_ref_decode(AMXK_DTYPE_BF16, x[i]);
            }
            CHECK(amxk_pack_quant_size(&q, N, K, &bytes) == AMXK_OK, "size");
            p = test_alloc(bytes);
            CHECK(amxk_pack_quant(NULL, p, bytes, &q, codes, K, sc, NULL, N, K) == AMXK_OK, "pack");
            CHECK((((unsigned char *)p)[OFF_FLAGS] & 1) == 0, "the packer sets NO_NAN on a pack with a NaN code");
            if (forged) ((unsigned char *)p)[OFF_FLAGS] |= 1;
            TEST_FOR_EACH_TIER(t, ctx) {
                size_t m, ws;
                for (m = 1; m <= 16; m = m < 4 ? m + 1 : m * 2) {
                    float *y = (float *)test_alloc(m * N * 4);
                    void *wsb;
                    size_t bad = 0;
                    CHECK(amxk_linear_workspace_size_for(&ctx, m, p, bytes, &ws) == AMXK_OK, "ws");
                    wsb = test_alloc(ws);
                    CHECK(amxk_linear(&ctx, m, N, K, x, AMXK_DTYPE_BF16, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N, wsb, ws) == AMXK_OK, "call");
                    for (i = 0; i < m; i++)
                        for (j = 0; j < N; j++) {
                            double want = 0.0;
                            size_t kk;
                            if (j == 9) {
                                if (f == 0 ? !isnan(y[i * N + j]) : isfinite(y[i * N + j])) bad++;
                                continue;
                            }
                            for (kk = 0; kk < K; kk++) want += xd[i * K + kk] * 0.5 * test_ref_decode(f ? AMXK_DTYPE_FP8_E5M2 : AMXK_DTYPE_FP8_E4M3, codes[j * K + kk]);
                            if (!(fabs(y[i * N + j] - want) <= 1e-3 * (1.0 + fabs(want)))) bad++;
                        }
                    CHECK(bad == 0, "tier %s %s flag %s M %lu: %lu wrong outputs (y[9] = %g)", amxk_tier_name(t), f ? "e5m2" : "e4m3",
                          forged ? "forged" : "honest", (unsigned long)m, (unsigned long)bad, (double)y[9]);
                    test_free(y), test_free(wsb);
                }
            }
            test_free(p), free(codes), free(x), free(xd);
        }
}

static void t_alignment(void) {
    const size_t N = 16, K = 32, E = 2;
    size_t b13, b2, e, ws;
    char *base13, *base2;
    amxk_moe_weights mw;
    float *w = (float *)malloc(2 * N * K * 4), *y = (float *)test_alloc(2 * N * 4), *out = (float *)test_alloc(K * 4);
    uint16_t *x = (uint16_t *)test_alloc(K * 2);
    float tw[2] = {0.5f, 0.5f};
    int32_t ids[2] = {0, 1};
    void *wsb = test_alloc(1 << 20);
    test_watch wt;
    TEST_SECTION("pack alignment: MoE expert strides, misaligned packs (item 6)");
    memset(w, 0, 2 * N * K * 4), memset(x, 0, K * 2);
    amxk_pack_linear_size(AMXK_DTYPE_BF16, 2 * N, K, &b13);
    amxk_pack_linear_size(AMXK_DTYPE_BF16, K, N, &b2);
    base13 = (char *)test_alloc(E * (b13 + 64)), base2 = (char *)test_alloc(E * (b2 + 64));
    for (e = 0; e < E; e++) { /* experts at stride + 8 (misaligned) */
        CHECK(amxk_pack_linear(NULL, base13 + e * (b13 + 64), b13, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, 2 * N, K, K) == AMXK_OK, "pack");
        CHECK(amxk_pack_linear(NULL, base2 + e * (b2 + 64), b2, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, K, N, N) == AMXK_OK, "pack");
    }
    memset(&mw, 0, sizeof mw);
    mw.n_experts = E, mw.hidden = K, mw.inter = N, mw.w13_base = base13, mw.w13_stride = b13 + 64, mw.w2_base = base2, mw.w2_stride = b2 + 64;
    CHECK(amxk_moe_workspace_size(NULL, &mw, NULL, NULL, 1, 2, &ws) == AMXK_OK, "aligned strides");
    mw.w13_stride = b13 + 8;
    CHECK(amxk_moe_workspace_size(NULL, &mw, NULL, NULL, 1, 2, &ws) == AMXK_ERR_ALIGN, "w13 stride not a multiple of 64");
    memset(&wt, 0, sizeof wt);
    wt.p[0] = out, wt.p[1] = wsb;
    test_watch_take(&wt);
    CHECK(amxk_moe_experts(NULL, &mw, NULL, NULL, 1, x, AMXK_DTYPE_BF16, K, 2, tw, ids, out, AMXK_DTYPE_F32, K, wsb, 1 << 20) == AMXK_ERR_ALIGN,
          "moe_experts: misaligned stride");
    mw.w13_stride = b13 + 64, mw.w2_stride = b2 + 4;
    CHECK(amxk_moe_experts(NULL, &mw, NULL, NULL, 1, x, AMXK_DTYPE_BF16, K, 2, tw, ids, out, AMXK_DTYPE_F32, K, wsb, 1 << 20) == AMXK_ERR_ALIGN,
          "moe_experts: misaligned w2 stride");
    CHECK(test_watch_same(&wt), "moe_experts wrote on a misaligned stride");
    { /* a pack moved 8 bytes off alignment */
        char *mis = (char *)test_alloc(b13 + 64);
        memcpy(mis + 8, base13, b13);
        memset(&wt, 0, sizeof wt);
        wt.p[0] = y;
        test_watch_take(&wt);
        CHECK(amxk_linear(NULL, 1, 2 * N, K, x, AMXK_DTYPE_BF16, K, mis + 8, b13, NULL, y, AMXK_DTYPE_F32, 2 * N, wsb, 1 << 20) == AMXK_ERR_ALIGN,
              "linear: misaligned pack");
        CHECK(test_watch_same(&wt), "linear wrote on a misaligned pack");
        test_free(mis);
    }
    test_free(base13), test_free(base2), free(w), test_free(y), test_free(out), test_free(x), test_free(wsb);
}

static void t_gdn_alias(void) {
    const size_t T = 2, D = 16;
    amxk_gdn_params gp = amxk_gdn_params_default(1, 1, D, D);
    amxk_gdn_inputs in;
    amxk_gdn_state st;
    int32_t qsl[2] = {0, (int32_t)T};
    size_t ws, i, c;
    float *qkv = (float *)test_alloc(T * 3 * D * 4), *gb = (float *)test_alloc(1024 * 4), *state = (float *)test_alloc(D * D * 4);
    float *ob = (float *)test_alloc(T * D * 4);
    void *wsb;
    TEST_SECTION("amxk_gdn: output or state overlapping the gates (item 6)");
    for (i = 0; i < T * 3 * D; i++) qkv[i] = 0.1f * (float)(i % 5);
    for (i = 0; i < 1024; i++) gb[i] = -0.1f;
    memset(state, 0, D * D * 4);
    CHECK(amxk_gdn_workspace_size(NULL, &gp, AMXK_GDN_AUTO, &ws) == AMXK_OK, "ws");
    wsb = test_alloc(ws);
    for (c = 0; c <= 4; c++) {
        float *o = ob;
        test_watch wt;
        amxk_status s;
        memset(&in, 0, sizeof in);
        in.dtype = AMXK_DTYPE_F32, in.q = qkv, in.k = qkv + D, in.v = qkv + 2 * D, in.ldq = in.ldk = in.ldv = 3 * D;
        in.g = gb, in.ldg = 1, in.beta = gb + 4, in.ldbeta = 1;
        st.data = state, st.n_slots = 1, st.slot_stride = 0;
        if (c == 0) o = gb;                             /* o over g */
        if (c == 1) o = gb + 3;                         /* o over beta only */
        if (c == 2) st.data = gb + 512, in.g = gb + 767; /* the state pool over g's last element */
        if (c == 3) o = gb + 64, in.beta = gb + 80;     /* beta inside o */
        memset(&wt, 0, sizeof wt);
        wt.p[0] = gb, wt.p[1] = state, wt.p[2] = ob;
        test_watch_take(&wt);
        s = amxk_gdn(NULL, &gp, AMXK_GDN_AUTO, &in, 1, qsl, NULL, NULL, &st, o, AMXK_DTYPE_F32, D, wsb, ws);
        if (c < 4) {
            CHECK(s == AMXK_ERR_ALIAS, "case %lu: overlap accepted (%d)", (unsigned long)c, (int)s);
            CHECK(test_watch_same(&wt), "case %lu: written", (unsigned long)c);
        } else { /* no overlap: runs */
            test_watch_same(&wt);
            CHECK(s == AMXK_OK, "disjoint buffers: %d", (int)s);
        }
    }
    test_free(qkv), test_free(gb), test_free(state), test_free(ob), test_free(wsb);
}

/* amxk_quantize_act's rule: a group holding NaN or +-inf gets scale NaN and every code 0 (U8: 128);
   the other groups are untouched by it; amxk_linear_q8 then gives NaN in every output of that row. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__aarch64__)
__attribute__((optimize("no-tree-vectorize"))) /* aarch64-linux-gnu-gcc 12: ICE in vect_transform_reduction here */
#endif
static void t_actq_nan(void) {
    static const amxk_dtype ots[] = {AMXK_DTYPE_I8, AMXK_DTYPE_U8, AMXK_DTYPE_FP8_E4M3};
    const size_t M = 3, K = 64, G = 32, N = 16;
    amxk_ctx ctx;
    amxk_tier t;
    float x[3 * 64];
    size_t i;
    TEST_SECTION("amxk_quantize_act: NaN / inf groups (item 6)");
    test_case_begin(test_case_id("actq nan", 0));
    for (i = 0; i < M * K; i++) x[i] = test_randf(-2.0f, 2.0f);
    x[1 * K + 40] = NAN;      /* row 1, group 1 */
    x[2 * K + 3] = -INFINITY; /* row 2, group 0 */
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t o, r, g, j, bytes;
        for (o = 0; o < 3; o++) {
            uint8_t q[3 * 64];
            float sc[3 * 2];
            CHECK(amxk_quantize_act(&ctx, M, K, x, AMXK_DTYPE_F32, K, G, ots[o], q, K, sc, AMXK_SCALES_ROW_MAJOR, 2) == AMXK_OK, "call");
            for (r = 0; r < M; r++)
                for (g = 0; g < 2; g++) {
                    const int bad = (r == 1 && g == 1) || (r == 2 && g == 0);
                    double amax = 0.0;
                    size_t wrong = 0;
                    for (j = 0; j < G; j++) amax = fmax(amax, fabs(x[r * K + g * G + j]));
                    for (j = 0; j < G; j++) {
                        const unsigned code = q[r * K + g * G + j];
                        if (bad) wrong += code != (ots[o] == AMXK_DTYPE_U8 ? 128u : 0u);
                        else if (ots[o] != AMXK_DTYPE_FP8_E4M3) { /* |q - x / s| <= 1/2 */
                            const double want = x[r * K + g * G + j] / (amax / 127.0);
                            const int qi = ots[o] == AMXK_DTYPE_U8 ? (int)code - 128 : (int)(int8_t)code;
                            wrong += fabs(qi - want) > 0.5 + 1e-4;
                        }
                    }
                    CHECK(bad ? isnan(sc[r * 2 + g]) && wrong == 0 : fabs(sc[r * 2 + g] - amax / (ots[o] == AMXK_DTYPE_FP8_E4M3 ? 448.0 : 127.0)) <= 1e-6 * amax && wrong == 0,
                          "tier %s out %d row %lu group %lu: scale %g, %lu wrong codes", amxk_tier_name(t), (int)ots[o], (unsigned long)r, (unsigned long)g,
                          (double)sc[r * 2 + g], (unsigned long)wrong);
                }
        }
        { /* per token (group K) into amxk_linear_q8: rows 1 and 2 all NaN, row 0 finite */
            int8_t q[3 * 64];
            float sc[3], y[3 * 16];
            amxk_quant qf;
            void *p;
            size_t nbad = 0;
            qf.format = AMXK_QFMT_INT8, qf.asym = 0, qf.block_n = 1, qf.block_k = K;
            test_case_begin(test_case_id("actq nan", 1));
            p = make_pack(&qf, N, K, &bytes);
            CHECK(amxk_quantize_act(&ctx, M, K, x, AMXK_DTYPE_F32, K, K, AMXK_DTYPE_I8, q, K, sc, AMXK_SCALES_ROW_MAJOR, 1) == AMXK_OK, "per token");
            CHECK(amxk_linear_q8(&ctx, M, N, K, q, AMXK_DTYPE_I8, K, sc, AMXK_SCALES_ROW_MAJOR, 1, K, p, bytes, NULL, y, AMXK_DTYPE_F32, N) == AMXK_OK, "q8");
            for (j = 0; j < M * N; j++) nbad += j < N ? !isfinite(y[j]) : !isnan(y[j]);
            CHECK(nbad == 0, "tier %s: w8a8 outputs of NaN / inf rows not NaN (or row 0 not finite): %lu", amxk_tier_name(t), (unsigned long)nbad);
            test_free(p);
        }
    }
}

int main(void) {
    test_init();
    t_fp8_block_sizes();
    t_header_mutations();
    t_q8_on_16bit();
    t_decode_range();
    t_forged_ctx();
    t_size_sweep();
    t_padding();
    t_forged_no_nan();
    t_alignment();
    t_gdn_alias();
    t_actq_nan();
    t_fp8_huge_scales();
    t_import_alias();
    harden_gdn_alias_conv();
    harden_gdn_alias_gdn();
    harden_gdn_alias_repro();
    harden_gdn_struct_copy();
    harden_moe_ws_arrays();
    harden_moe_same_pack_align();
    harden_moe_null_expert();
    harden_moe_alias_routing();
    return test_finish();
}
