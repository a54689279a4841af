/* tests/test_gdn.c - amxk_gdn.h: causal conv1d, GDN gating, the gated delta rule (recurrent and chunked).

   Oracles written here, in double precision, straight from the math (research note gdn.md §2-§6),
   independent of amxk_gdn.h: the conv as a sum over an explicit window (history ++ x), the state as raw
   codes copied from that window; the gating with log1p/exp in double; the delta rule token by token
   (decay, delta, rank-1 write, readout) with its own l2norm. The chunked path is always compared with
   the recurrent double oracle, never only with the library's recurrent path.

   TOLERANCES (gdn.md §10). conv: state bit-exact; out |d| <= 2^-8 |ref| + 2e-6 * sum|w x| + 1e-30 (bf16
   out: half an ulp relative plus fp32 accumulation and the exp polynomial), f32 out 2e-6*(|ref| + S).
   gating: g |d| <= 4e-6 |g| + 1e-30; beta f32 |d| <= 1e-6, bf16 <= half an ulp + 1e-6.
   delta rule (fp32 math): state max|d| <= 1e-4 max|S_ref| (+1e-6 absolute for all-zero states), out
   |d| <= 1e-2 |ref| + 1e-3 rms(ref) with bf16 out (2e-3 |ref| + 1e-4 rms(ref) with f32 out), and no
   NaN/Inf anywhere. Self-consistency (thread counts, orientation, conv prefill vs updates) is bitwise.

   AMXK_TEST_QUICK=1 skips the Qwen-sized and T = 1000 cases.

   cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror [-DAMXK_AMX_EMULATE] -I. tests/test_gdn.c \
      -o build/test_gdn -pthread -lm && ./build/test_gdn */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"
#include "../amxk_gdn.h"

static int quick;

/* ---- small helpers --------------------------------------------------------------------------- */

static float rbf(float x) { /* round to a bf16 value (RNE), independent of amxk */
    return (float)test_ref_decode(AMXK_DTYPE_BF16, test_ref_encode(AMXK_DTYPE_BF16, x));
}
static uint16_t enc_bf(float x) { return (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, x); }
static double dec(const void *p, amxk_dtype t, size_t i) {
    return t == AMXK_DTYPE_F32 ? (double)((const float *)p)[i] : test_ref_decode(AMXK_DTYPE_BF16, ((const uint16_t *)p)[i]);
}
/* values (already representable in dt) -> a dt buffer */
static void *to_dt(const float *v, size_t n, amxk_dtype dt) {
    void *p = test_alloc(n * (dt == AMXK_DTYPE_F32 ? 4 : 2) + 64);
    size_t i;
    for (i = 0; i < n; i++) {
        if (dt == AMXK_DTYPE_F32) ((float *)p)[i] = v[i];
        else ((uint16_t *)p)[i] = enc_bf(v[i]);
    }
    return p;
}
static double bound_out(double ref, double rms, amxk_dtype ot) {
    return ot == AMXK_DTYPE_BF16 ? 1e-2 * fabs(ref) + 1e-3 * rms : 2e-3 * fabs(ref) + 1e-4 * rms;
}
static const char *dtn(amxk_dtype t) { return t == AMXK_DTYPE_F32 ? "f32" : "bf16"; }

/* ================================================================================================ */
/* gating                                                                                           */

static double ref_softplus(double x, double bsp, double thr) { return bsp * x > thr ? x : log1p(exp(bsp * x)) / bsp; }

static void test_gating(void) {
    static const float xs[] = {-100.0f, -20.01f, -20.0f, -1.0f, 0.0f, 19.99f, 20.0f, 20.01f, 100.0f, 40.0f, -40.0f};
    static const float bs[] = {-100.0f, -20.0f, 0.0f, 20.0f, 100.0f, 0.5f, -3.0f};
    /* head counts around the 8- and 16-lane vectors (1, 7, 15, 16, 17, 33, primes) and padded rows (ld = HV + pad;
       the padding of g / beta poisoned and checked untouched) */
    static const size_t shapes[8][3] = {{32, 257, 0}, {1, 33, 0}, {7, 19, 3}, {15, 17, 1}, {16, 16, 0}, {17, 15, 5}, {33, 9, 2}, {37, 5, 0}};
    const size_t HV = 32, T = 257;
    float *a = (float *)test_alloc(T * (HV + 8) * 4), *b = (float *)test_alloc(T * (HV + 8) * 4), Al[40], dt[40];
    float *g = (float *)test_alloc(T * (HV + 8) * 4), *be = (float *)test_alloc(T * (HV + 8) * 4);
    uint16_t *be16 = (uint16_t *)test_alloc(T * (HV + 8) * 2);
    void *a16, *b16, *Al16, *dt16;
    size_t t, h, si;
    amxk_tier tier;
    amxk_ctx ctx;
    TEST_SECTION("gating");
    test_case_begin(test_case_id("gdn gating", 0));
    for (h = 0; h < 40; h++) Al[h] = h % 2 ? logf(16.0f) : (h % 4 == 0 ? 0.0f : logf((float)test_uniform(1, 16))), dt[h] = (float)test_uniform(-0.5, 0.5);
    Al16 = to_dt(Al, 40, AMXK_DTYPE_BF16);
    dt16 = to_dt(dt, 40, AMXK_DTYPE_BF16);
    for (si = 0; si < 8; si++) {
        const size_t hv = shapes[si][0], nt = shapes[si][1], ld = hv + shapes[si][2];
        for (t = 0; t < nt; t++)
            for (h = 0; h < ld; h++) {
                a[t * ld + h] = h >= hv ? NAN : rbf(t < 40 ? xs[(t + h) % 11] - dt[h] : (float)test_uniform(-30, 30));
                b[t * ld + h] = h >= hv ? NAN : rbf(t < 40 ? bs[(t * 3 + h) % 7] : (float)test_uniform(-10, 10));
            }
        a16 = to_dt(a, nt * ld, AMXK_DTYPE_BF16);
        b16 = to_dt(b, nt * ld, AMXK_DTYPE_BF16);
        TEST_FOR_EACH_TIER(tier, ctx) {
            size_t bad_g = 0, bad_b = 0, bad_b16 = 0, nonfin = 0, pad = 0;
            int ab;
            for (ab = 0; ab < 4; ab++) { /* bit 0: bf16 a / b; bit 1: bf16 A_log / dt_bias (the oracle reads their bf16 values) */
                const int pb = ab >> 1;
                const amxk_dtype pt = pb ? AMXK_DTYPE_BF16 : (ab & 1 ? AMXK_DTYPE_F32 : (amxk_dtype)0); /* 0 means F32 */
                const void *Alp = pb ? Al16 : (const void *)Al, *dtp = pb ? dt16 : (const void *)dt;
                amxk_status s1, s2;
                memset(g, 0x7f, nt * ld * 4), memset(be, 0x7f, nt * ld * 4), memset(be16, 0x7f, nt * ld * 2);
                s1 = amxk_gdn_gating(&ctx, nt, hv, ab & 1 ? a16 : (void *)a, ld, ab & 1 ? b16 : (void *)b, ld, ab & 1 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32,
                                     Alp, pt, dtp, pt, 1.0f, 20.0f, g, ld, be, AMXK_DTYPE_F32, ld);
                s2 = amxk_gdn_gating(&ctx, nt, hv, a, ld, b, ld, AMXK_DTYPE_F32, Alp, pt, dtp, pt, 1.0f, 20.0f, g, ld, be16, AMXK_DTYPE_BF16, ld);
                CHECK(s1 == AMXK_OK && s2 == AMXK_OK, "gating status %d %d", (int)s1, (int)s2);
                for (t = 0; t < nt; t++)
                    for (h = 0; h < ld; h++) {
                        const size_t i = t * ld + h;
                        const double alv = pb ? (double)rbf(Al[h]) : (double)Al[h], dtv = pb ? (double)rbf(dt[h]) : (double)dt[h];
                        double x = (double)a[i] + dtv, rg, rb, gg, bb, b16v;
                        if (h >= hv) {
                            pad += ((const uint32_t *)g)[i] != 0x7f7f7f7fu || ((const uint32_t *)be)[i] != 0x7f7f7f7fu || be16[i] != 0x7f7f;
                            continue;
                        }
                        rg = -exp(alv) * ref_softplus((double)(float)x, 1.0, 20.0);
                        rb = 1.0 / (1.0 + exp(-(double)b[i]));
                        gg = g[i], bb = be[i], b16v = test_ref_decode(AMXK_DTYPE_BF16, be16[i]);
                        if (!isfinite(gg) || !isfinite(bb) || gg > 0 || bb < 0 || bb > 1) nonfin++;
                        if (fabs(gg - rg) > 4e-6 * fabs(rg) + 1e-30) {
                            if (!bad_g++)
                                printf("  HV %lu g[%lu,%lu] x=%g got %.9g want %.9g (params %s)\n", (unsigned long)hv, (unsigned long)t, (unsigned long)h, x,
                                       gg, rg, pb ? "bf16" : "f32");
                        }
                        if (fabs(bb - rb) > 1e-6) bad_b++;
                        if (fabs(b16v - rb) > ldexp(fabs(rb), -8) + 1e-6) bad_b16++;
                    }
            }
            CHECK(bad_g == 0 && bad_b == 0 && bad_b16 == 0 && nonfin == 0 && pad == 0,
                  "tier %s HV %lu T %lu ld %lu: bad g %lu beta %lu beta16 %lu nonfinite %lu padding written %lu", amxk_tier_name(tier),
                  (unsigned long)hv, (unsigned long)nt, (unsigned long)ld, (unsigned long)bad_g, (unsigned long)bad_b, (unsigned long)bad_b16,
                  (unsigned long)nonfin, (unsigned long)pad);
        }
        test_free(a16), test_free(b16);
    }
    /* bad input: the status, and g / beta untouched (poisoned with a NaN pattern first) */
    memset(g, 0x7f, T * HV * 4), memset(be, 0x7f, T * HV * 4);
    {
        const struct {
            size_t n, lda;
            amxk_dtype abt, alt, dtt;
            int null_al, null_dt;
            float bsp;
            amxk_status want;
        } bad[7] = {
            {1, HV, AMXK_DTYPE_F32, AMXK_DTYPE_F32, AMXK_DTYPE_F32, 0, 0, 0.0f, AMXK_ERR_ARG},     /* softplus_beta 0 */
            {1, HV, AMXK_DTYPE_F32, AMXK_DTYPE_F32, AMXK_DTYPE_F32, 1, 0, 1.0f, AMXK_ERR_NULL},    /* A_log NULL */
            {1, HV, AMXK_DTYPE_F32, AMXK_DTYPE_F32, AMXK_DTYPE_BF16, 0, 1, 1.0f, AMXK_ERR_NULL},   /* dt_bias NULL */
            {2, HV - 1, AMXK_DTYPE_F32, AMXK_DTYPE_F32, AMXK_DTYPE_F32, 0, 0, 1.0f, AMXK_ERR_STRIDE},
            {2, HV, AMXK_DTYPE_F16, AMXK_DTYPE_F32, AMXK_DTYPE_F32, 0, 0, 1.0f, AMXK_ERR_DTYPE},   /* a / b f16 */
            {2, HV, AMXK_DTYPE_F32, AMXK_DTYPE_F16, AMXK_DTYPE_F32, 0, 0, 1.0f, AMXK_ERR_DTYPE},   /* A_log f16 */
            {2, HV, AMXK_DTYPE_F32, AMXK_DTYPE_F32, AMXK_DTYPE_I8, 0, 0, 1.0f, AMXK_ERR_DTYPE},    /* dt_bias int8 */
        };
        int i;
        for (i = 0; i < 7; i++) {
            amxk_status st = amxk_gdn_gating(NULL, bad[i].n, HV, a, bad[i].lda, b, HV, bad[i].abt, bad[i].null_al ? NULL : Al16, bad[i].alt,
                                             bad[i].null_dt ? NULL : dt16, bad[i].dtt, bad[i].bsp, 20.0f, g, HV, be, AMXK_DTYPE_F32, HV);
            CHECK(st == bad[i].want, "gating bad input %d: status %d, want %d", i, (int)st, (int)bad[i].want);
        }
    }
    for (t = 0, h = 0; t < T * HV * 4; t++) h += ((const uint8_t *)g)[t] != 0x7f || ((const uint8_t *)be)[t] != 0x7f;
    CHECK(h == 0, "gating errors wrote %lu bytes", (unsigned long)h);
    test_free(a), test_free(b), test_free(g), test_free(be), test_free(be16), test_free(Al16), test_free(dt16);
}

/* ================================================================================================ */
/* conv1d                                                                                           */

typedef struct conv_case {
    size_t dim, W, slen, n_slots;
    int bias, silu, ds; /* ds: state-contiguous layout */
    int wide;           /* output rows 32-byte aligned (the streaming-store path for outputs >= 8 MiB) */
    float xr;           /* x uniform in [-xr, xr]; 0: 3 */
    amxk_dtype xt, ot;
    size_t n_seqs;
    int lens[12];
    int32_t slots[12];
    uint8_t init[12];
} conv_case;

typedef struct conv_data {
    float *w, *bias, *x; /* values */
    void *xb;            /* x in xt */
    void *packed;
    size_t packed_bytes, T, ldx, ldo, esz;
    int32_t qsl[13];
    amxk_conv_state st;
    void *pool0; /* initial pool */
    size_t pool_elems;
} conv_data;

/* Called outside the tier loops, in a fixed order: case id = the call's number. */
static unsigned conv_gen_calls, gdn_gen_calls;
static void conv_gen(const conv_case *c, conv_data *d) {
    size_t i, n, slot_span;
    test_case_begin(test_case_id("gdn conv", conv_gen_calls++));
    memset(d, 0, sizeof *d);
    d->esz = c->xt == AMXK_DTYPE_F32 ? 4 : 2;
    d->qsl[0] = 0;
    for (n = 0; n < c->n_seqs; n++) d->qsl[n + 1] = d->qsl[n] + c->lens[n];
    d->T = (size_t)d->qsl[c->n_seqs];
    d->ldx = c->dim + 5, d->ldo = c->wide ? c->dim + 16 - c->dim % 16 : c->dim + 3;
    d->w = (float *)test_alloc(c->dim * c->W * 4);
    d->bias = (float *)test_alloc(c->dim * 4);
    d->x = (float *)test_alloc((d->T + 1) * d->ldx * 4);
    for (i = 0; i < c->dim * c->W; i++) d->w[i] = rbf((float)test_uniform(-1, 1));
    for (i = 0; i < c->dim; i++) d->bias[i] = rbf((float)test_uniform(-1, 1));
    for (i = 0; i < (d->T + 1) * d->ldx; i++) d->x[i] = rbf((float)test_uniform(c->xr > 0 ? -c->xr : -3, c->xr > 0 ? c->xr : 3));
    d->xb = to_dt(d->x, (d->T + 1) * d->ldx, c->xt);
    amxk_conv1d_pack_size(c->dim, c->W, &d->packed_bytes);
    d->packed = test_alloc(d->packed_bytes);
    CHECK(amxk_conv1d_pack(NULL, d->packed, d->packed_bytes, d->w, AMXK_DTYPE_F32, c->dim, c->W, c->W, c->bias ? d->bias : NULL) == AMXK_OK,
          "pack");
    d->st.dtype = c->xt;
    d->st.n_slots = c->n_slots;
    d->st.state_len = c->slen;
    if (c->ds) d->st.dim_stride = c->slen + 1, d->st.tok_stride = 1; /* padded rows */
    else d->st.dim_stride = 1, d->st.tok_stride = c->dim + 2;
    slot_span = c->ds ? c->dim * (c->slen + 1) : c->slen * (c->dim + 2);
    d->st.slot_stride = slot_span + 7;
    d->pool_elems = c->n_slots * d->st.slot_stride;
    d->pool0 = test_alloc(d->pool_elems * d->esz);
    for (i = 0; i < d->pool_elems; i++) {
        float v = rbf((float)test_uniform(-2, 2));
        if (c->xt == AMXK_DTYPE_F32) ((float *)d->pool0)[i] = v;
        else ((uint16_t *)d->pool0)[i] = enc_bf(v);
    }
}
static void conv_free(conv_data *d) {
    test_free(d->w), test_free(d->bias), test_free(d->x), test_free(d->xb), test_free(d->packed), test_free(d->pool0);
}

/* The oracle's outputs of one channel: win = W-1 history codes then the len x codes (raw codes of x's
   dtype); out / S rows t0.. (S: sum of |terms|). */
static void conv_win_out(const conv_case *c, const conv_data *d, size_t ch, const uint32_t *win, size_t len, size_t t0, double *out,
                         double *S) {
    size_t i, j;
    for (i = 0; i < len; i++) {
        double y = c->bias ? d->bias[ch] : 0.0, sabs = fabs(y);
        for (j = 0; j < c->W; j++) {
            float f;
            double v;
            if (c->xt == AMXK_DTYPE_F32) memcpy(&f, &win[i + j], 4);
            else f = (float)test_ref_decode(AMXK_DTYPE_BF16, win[i + j]);
            v = (double)f * (double)d->w[ch * c->W + j];
            y += v, sabs += fabs(v);
        }
        if (c->silu) y = y / (1.0 + exp(-y));
        out[(t0 + i) * c->dim + ch] = y;
        S[(t0 + i) * c->dim + ch] = sabs;
    }
}

/* Reference: shift mode (cache == NULL) or circular. pool: raw codes, updated in place. out: doubles
   (NAN where not written). */
static void conv_ref(const conv_case *c, const conv_data *d, const int32_t *qsl, size_t n_seqs, const int32_t *slots,
                     const uint8_t *init, const int32_t *cache, size_t row0, unsigned char *pool, double *out, double *S) {
    size_t n, ch, i, L = c->slen;
    for (n = 0; n < n_seqs; n++) {
        size_t t0 = (size_t)qsl[n], len = (size_t)(qsl[n + 1] - qsl[n]);
        int32_t s = slots[n];
        if (len == 0) { /* empty sequence: the slot is left alone, or zeroed when it has no initial state */
            if (s >= 0 && init && !init[n] && !cache)
                for (ch = 0; ch < c->dim; ch++)
                    for (i = 0; i < L; i++) memset(pool + ((size_t)s * d->st.slot_stride + ch * d->st.dim_stride + i * d->st.tok_stride) * d->esz, 0, d->esz);
            continue;
        }
        for (ch = 0; ch < c->dim; ch++) {
            /* window of raw codes (as uint32 for either size) and values */
            uint32_t win[600];
            unsigned char *sb = s >= 0 ? pool + (size_t)s * d->st.slot_stride * d->esz : NULL;
            if (s < 0) {
                for (i = 0; i < len; i++) out[(t0 + i) * c->dim + ch] = 0.0, S[(t0 + i) * c->dim + ch] = 0.0;
                continue;
            }
            if (!cache) {
                for (i = 0; i < L; i++) {
                    size_t e = ch * d->st.dim_stride + i * d->st.tok_stride;
                    uint32_t code = 0;
                    if (!init || init[n]) memcpy(&code, sb + e * d->esz, d->esz);
                    win[i] = code;
                }
            } else {
                for (i = 0; i < L; i++) { /* history position i of L: absolute c - L + i */
                    long pos = ((long)cache[n] - (long)L + (long)i) % (long)L;
                    size_t e;
                    uint32_t code = 0;
                    if (pos < 0) pos += (long)L;
                    e = ch * d->st.dim_stride + (size_t)pos * d->st.tok_stride;
                    memcpy(&code, sb + e * d->esz, d->esz);
                    win[i] = code;
                }
            }
            for (i = 0; i < len; i++) {
                uint32_t code = 0;
                memcpy(&code, (const unsigned char *)d->xb + ((row0 + t0 + i) * d->ldx + ch) * d->esz, d->esz);
                win[L + i] = code;
            }
            conv_win_out(c, d, ch, win + L - (c->W - 1), len, t0, out, S);
            if (!cache) {
                for (i = 0; i < L; i++) memcpy(sb + (ch * d->st.dim_stride + i * d->st.tok_stride) * d->esz, &win[len + i], d->esz);
            } else {
                for (i = 0; i < len; i++)
                    memcpy(sb + (ch * d->st.dim_stride + (((size_t)cache[n] + i) % L) * d->st.tok_stride) * d->esz, &win[L + i], d->esz);
            }
        }
    }
}

static size_t conv_cmp(const conv_case *c, const conv_data *d, const void *out, size_t ldo, const int32_t *qsl, size_t n_seqs,
                       const double *ref, const double *S, const char *what) {
    size_t n, i, ch, bad = 0;
    for (n = 0; n < n_seqs; n++)
        for (i = (size_t)qsl[n]; i < (size_t)qsl[n + 1]; i++)
            for (ch = 0; ch < c->dim; ch++) {
                double got = dec(out, c->ot, i * ldo + ch), want = ref[i * c->dim + ch], s = S[i * c->dim + ch];
                double tol = c->ot == AMXK_DTYPE_BF16 ? ldexp(fabs(want), -8) + 2e-6 * s + 1e-30 : 2e-6 * (fabs(want) + s) + 1e-30;
                if (!(fabs(got - want) <= tol)) {
                    if (!bad++) printf("  %s: out[%lu,%lu] got %.9g want %.9g\n", what, (unsigned long)i, (unsigned long)ch, got, want);
                }
            }
    (void)d;
    return bad;
}

static void conv_one(const conv_case *c) {
    conv_data d;
    amxk_tier tier;
    amxk_ctx ctx;
    size_t T, osz = c->ot == AMXK_DTYPE_F32 ? 4 : 2, n, i;
    unsigned char *pref, *pool;
    double *ref, *S;
    void *out, *out2;
    char what[160];
    conv_gen(c, &d);
    T = d.T;
    snprintf(what, sizeof what, "conv dim=%lu W=%lu slen=%lu %s->%s bias=%d silu=%d %s", (unsigned long)c->dim, (unsigned long)c->W,
             (unsigned long)c->slen, dtn(c->xt), dtn(c->ot), c->bias, c->silu, c->ds ? "DS" : "SD");
    pref = (unsigned char *)test_alloc(d.pool_elems * d.esz);
    pool = (unsigned char *)test_alloc(d.pool_elems * d.esz);
    ref = (double *)test_alloc((T + 1) * c->dim * 8);
    S = (double *)test_alloc((T + 1) * c->dim * 8);
    out = test_alloc((T + 1) * d.ldo * osz);
    out2 = test_alloc((T + 1) * d.ldo * osz);
    memcpy(pref, d.pool0, d.pool_elems * d.esz);
    conv_ref(c, &d, d.qsl, c->n_seqs, c->slots, c->init, NULL, 0, pref, ref, S);
    TEST_FOR_EACH_TIER(tier, ctx) {
        amxk_status st;
        size_t bad, wc;
        amxk_conv_state cs = d.st;
        memcpy(pool, d.pool0, d.pool_elems * d.esz);
        cs.data = pool;
        test_poison(out, (T + 1) * d.ldo * osz);
        st = amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes, c->silu, c->n_seqs, d.qsl, c->slots, c->init, d.xb, c->xt, d.ldx, out,
                                 c->ot, d.ldo, &cs);
        CHECK(st == AMXK_OK, "%s: status %d", what, (int)st);
        test_dump("conv.prefill", (int)tier, out, (T + 1) * d.ldo * osz), test_dump("conv.pool", (int)tier, pool, d.pool_elems * d.esz);
        bad = conv_cmp(c, &d, out, d.ldo, d.qsl, c->n_seqs, ref, S, what);
        CHECK(bad == 0, "%s tier %s: %lu outputs off", what, amxk_tier_name(tier), (unsigned long)bad);
        CHECK(memcmp(pool, pref, d.pool_elems * d.esz) == 0, "%s tier %s: state pool differs from the reference (bitwise)", what,
              amxk_tier_name(tier));
        CHECK(test_guard_ok(out) && test_guard_ok(pool), "%s: guards", what);
        /* thread counts: bitwise identical */
        for (wc = 1; wc < TEST_N_WORKER_COUNTS; wc++) {
            amxk_ctx c2;
            if (!test_ctx(&c2, tier, test_worker_counts[wc])) continue;
            memcpy(pool, d.pool0, d.pool_elems * d.esz);
            test_poison(out2, (T + 1) * d.ldo * osz);
            st = amxk_conv1d_prefill(&c2, d.packed, d.packed_bytes, c->silu, c->n_seqs, d.qsl, c->slots, c->init, d.xb, c->xt, d.ldx,
                                     out2, c->ot, d.ldo, &cs);
            CHECK(st == AMXK_OK && memcmp(pool, pref, d.pool_elems * d.esz) == 0, "%s: %d workers state", what, test_worker_counts[wc]);
            {
                size_t r, okr = 1;
                for (n = 0; n < c->n_seqs; n++)
                    for (r = (size_t)d.qsl[n]; r < (size_t)d.qsl[n + 1]; r++)
                        okr &= memcmp((char *)out + r * d.ldo * osz, (char *)out2 + r * d.ldo * osz, c->dim * osz) == 0;
                CHECK(okr, "%s: %d workers output differs", what, test_worker_counts[wc]);
            }
        }
        /* prefill == token-by-token updates (sequences with an initial state), bit for bit */
        {
            unsigned char *p2 = (unsigned char *)test_alloc(d.pool_elems * d.esz);
            size_t okb = 1;
            memcpy(p2, d.pool0, d.pool_elems * d.esz);
            cs.data = p2;
            test_poison(out2, (T + 1) * d.ldo * osz);
            for (n = 0; n < c->n_seqs; n++) {
                uint8_t one = 1;
                int32_t q2[2];
                if (!c->init[n] && c->slots[n] >= 0) { /* zero history first: an empty prefill cannot do it; use a 0-init prefill of 1 token */
                    q2[0] = d.qsl[n], q2[1] = d.qsl[n] + (c->lens[n] > 0 ? 1 : 0);
                    one = 0;
                    st = amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes, c->silu, 1, q2, &c->slots[n], &one, d.xb, c->xt, d.ldx, out2,
                                             c->ot, d.ldo, &cs);
                    okb &= st == AMXK_OK;
                    i = (size_t)q2[1];
                } else {
                    i = (size_t)d.qsl[n];
                }
                for (; i < (size_t)d.qsl[n + 1]; i++) {
                    st = amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, c->silu, 1, NULL, &c->slots[n], NULL,
                                            (const char *)d.xb + i * d.ldx * d.esz, c->xt, d.ldx, (char *)out2 + i * d.ldo * osz, c->ot,
                                            d.ldo, &cs);
                    okb &= st == AMXK_OK;
                }
            }
            for (n = 0; n < c->n_seqs; n++)
                for (i = (size_t)d.qsl[n]; i < (size_t)d.qsl[n + 1]; i++)
                    okb &= memcmp((char *)out + i * d.ldo * osz, (char *)out2 + i * d.ldo * osz, c->dim * osz) == 0;
            okb &= memcmp(p2, pref, d.pool_elems * d.esz) == 0;
            CHECK(okb, "%s tier %s: prefill != token-by-token updates (bitwise)", what, amxk_tier_name(tier));
            test_free(p2);
        }
    }
    test_free(pref), test_free(pool), test_free(ref), test_free(S), test_free(out), test_free(out2);
    conv_free(&d);
}

static void test_conv(void) {
    static const int lens[10] = {1, 2, 3, 4, 5, 63, 64, 65, 300, 0};
    static const int32_t slots[10] = {5, 2, 9, -1, 0, 31, 7, 12, 3, 20};
    size_t dims[4] = {96, 20, 1100, 49}, Ws[4] = {4, 1, 2, 5}; /* 49: the 32-channel rows of the AVX-512 kernels, then a 17-channel tail (16 lanes + 1) */
    int di, wi, v;
    TEST_SECTION("conv1d prefill / update vs fp64 oracle");
    for (di = 0; di < 4; di++)
        for (wi = 0; wi < 4; wi++)
            for (v = 0; v < 2; v++) {
                conv_case c;
                int n;
                memset(&c, 0, sizeof c);
                c.dim = dims[di], c.W = Ws[wi], c.slen = c.W - 1 + (size_t)(v && wi == 0 ? 2 : 0), c.n_slots = 32;
                if (c.slen == 0) c.slen = (size_t)v; /* W = 1: no state, or a 1-long one */
                c.bias = (di + wi + v) % 2, c.silu = (wi + v + 1) % 2 || wi == 0, c.ds = v;
                c.xt = (di + v) % 2 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16;
                c.ot = (wi + di) % 2 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16;
                c.n_seqs = 10;
                for (n = 0; n < 10; n++) c.lens[n] = lens[n], c.slots[n] = slots[n], c.init[n] = (uint8_t)((n + v) % 2);
                if (di == 2 && wi != 0) continue; /* the large dim once */
                if (di == 3 && wi != 0 && wi != 3) continue;
                conv_one(&c);
            }
    for (v = 0; v < 4; v++) { /* |y| up to ~400 (std 67): the silu's exp clamp (|y| > 79.5) on both sides, every level */
        conv_case c;
        int n;
        memset(&c, 0, sizeof c);
        c.dim = v < 2 ? 96 : 49, c.W = 4, c.slen = 3, c.n_slots = 32, c.bias = v % 2, c.silu = 1, c.ds = v % 2, c.xr = 100;
        c.xt = v % 2 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16, c.ot = (v == 1 || v == 2) ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
        c.n_seqs = 10;
        for (n = 0; n < 10; n++) c.lens[n] = lens[n], c.slots[n] = slots[n], c.init[n] = (uint8_t)((n + v) % 2);
        conv_one(&c);
    }
    if (!quick) { /* outputs over 8 MiB with aligned rows: the streaming-store path */
        for (v = 0; v < 2; v++) {
            conv_case c;
            int n;
            memset(&c, 0, sizeof c);
            c.dim = 1040 - (size_t)v * 512, c.W = 4, c.slen = 3, c.n_slots = 12, c.bias = 1, c.silu = 1, c.wide = 1;
            c.xt = v ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16, c.ot = c.xt, c.n_seqs = 9;
            for (n = 0; n < 9; n++) c.lens[n] = n == 4 ? 7 : 590, c.slots[n] = n, c.init[n] = (uint8_t)(n % 2);
            conv_one(&c);
        }
    }
}

/* circular-buffer update vs the oracle, pads, both layouts; bad arguments leave everything untouched */
static void test_conv_update(void) {
    amxk_tier tier;
    amxk_ctx ctx;
    int ds;
    TEST_SECTION("conv1d update: circular buffer, pads, errors");
    for (ds = 0; ds < 2; ds++) {
        conv_case c;
        conv_data d;
        int32_t cache[7] = {0, 2, 5, 13, 1, 3, 6}, slots[7] = {3, -1, 0, 6, 1, -1, 2}, q[8];
        size_t n, osz;
        memset(&c, 0, sizeof c);
        c.dim = 40, c.W = 4, c.slen = 6, c.n_slots = 8, c.bias = 1, c.silu = 1, c.ds = ds;
        c.xt = AMXK_DTYPE_BF16, c.ot = ds ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16, c.n_seqs = 7;
        for (n = 0; n < 7; n++) c.lens[n] = (int)(n % 3) + 1 + (n == 3 ? 5 : 0), c.slots[n] = slots[n], c.init[n] = 1;
        conv_gen(&c, &d);
        osz = c.ot == AMXK_DTYPE_F32 ? 4 : 2;
        for (n = 0; n < 8; n++) q[n] = d.qsl[n];
        TEST_FOR_EACH_TIER(tier, ctx) {
            int circ;
            for (circ = 0; circ < 2; circ++) {
                unsigned char *pref = (unsigned char *)test_alloc(d.pool_elems * d.esz), *pool = (unsigned char *)test_alloc(d.pool_elems * d.esz);
                double *ref = (double *)test_alloc(d.T * c.dim * 8), *S = (double *)test_alloc(d.T * c.dim * 8);
                void *out = test_alloc(d.T * d.ldo * osz);
                amxk_conv_state cs = d.st;
                amxk_status st;
                size_t bad;
                memcpy(pref, d.pool0, d.pool_elems * d.esz);
                memcpy(pool, d.pool0, d.pool_elems * d.esz);
                conv_ref(&c, &d, q, 7, slots, NULL, circ ? cache : NULL, 0, pref, ref, S);
                cs.data = pool;
                st = amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 7, q, slots, circ ? cache : NULL, d.xb, c.xt, d.ldx, out, c.ot,
                                        d.ldo, &cs);
                CHECK(st == AMXK_OK, "update status %d", (int)st);
                test_dump("conv.update", (int)tier, out, d.T * d.ldo * osz), test_dump("conv.upool", (int)tier, pool, d.pool_elems * d.esz);
                bad = conv_cmp(&c, &d, out, d.ldo, q, 7, ref, S, circ ? "circular" : "shift");
                CHECK(bad == 0 && memcmp(pool, pref, d.pool_elems * d.esz) == 0, "tier %s %s %s: %lu off / state", amxk_tier_name(tier),
                      ds ? "DS" : "SD", circ ? "circular" : "shift", (unsigned long)bad);
                /* bad input: nothing written */
                {
                    int32_t badslot[7] = {3, -1, 0, 8, 1, -1, 2}, dup[7] = {3, -1, 0, 3, 1, -1, 2}, neg[7] = {3, -2, 0, 6, 1, -1, 2};
                    int32_t q2[8];
                    unsigned char *snap = (unsigned char *)test_alloc(d.pool_elems * d.esz);
                    void *o2 = test_alloc(d.T * d.ldo * osz);
                    memcpy(q2, q, sizeof q2);
                    q2[3] = q2[2] - 1;
                    memcpy(snap, pool, d.pool_elems * d.esz);
                    memcpy(o2, out, d.T * d.ldo * osz);
                    CHECK(amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 7, q, badslot, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                              AMXK_ERR_ARG, "slot out of range");
                    CHECK(amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 7, q, dup, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                              AMXK_ERR_ARG, "duplicate slot");
                    CHECK(amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 7, q, neg, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                              AMXK_ERR_ARG, "slot -2");
                    CHECK(amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes, 1, 7, q2, slots, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                              AMXK_ERR_ARG, "non-monotonic qsl");
                    CHECK(amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes - 64, 1, 7, q, slots, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                              AMXK_ERR_FORMAT, "short packed");
                    CHECK(amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes, 1, 7, q, slots, NULL, d.xb, AMXK_DTYPE_F32, d.ldx, out, c.ot, d.ldo,
                                              &cs) == AMXK_ERR_DTYPE, "state dtype");
                    CHECK(amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes, 1, 7, q, slots, NULL, d.xb, c.xt, c.dim - 1, out, c.ot, d.ldo, &cs) ==
                              AMXK_ERR_STRIDE, "ldx");
                    CHECK(amxk_conv1d_prefill(&ctx, d.packed, d.packed_bytes, 1, 7, q, slots, NULL, d.xb, c.xt, d.ldx, (void *)d.xb, c.ot, d.ldo,
                                              &cs) == AMXK_ERR_ALIAS, "alias");
                    CHECK(memcmp(snap, pool, d.pool_elems * d.esz) == 0 && memcmp(o2, out, d.T * d.ldo * osz) == 0, "error paths wrote");
                    test_free(snap), test_free(o2);
                }
                test_free(pref), test_free(pool), test_free(ref), test_free(S), test_free(out);
            }
        }
        conv_free(&d);
    }
}

/* Speculative conv update (num_accepted_tokens a_n), oracle written two ways: sequences of
   state_len - W + 2 tokens (vLLM's spec decode: num_spec + 1 tokens) literally as vLLM's
   causal_conv1d_update does it (history = state[a-1 .. a-1+W-2], new state[i] = old[a + i] for
   i < state_len - len, then x); other lengths from the contract (history ends at he = a - 1 + W - 1,
   new state = the last state_len of zeros ++ state[0..he) ++ x). pool: raw codes, updated in place. */
static void conv_spec_ref(const conv_case *c, const conv_data *d, const int32_t *qsl, const int32_t *slots, const int32_t *acc,
                          unsigned char *pool, double *out, double *S) {
    size_t n, ch, i, L = c->slen, W = c->W;
    for (n = 0; n < c->n_seqs; n++) {
        size_t t0 = (size_t)qsl[n], len = (size_t)(qsl[n + 1] - qsl[n]), a = (size_t)acc[n], he = a - 1 + W - 1;
        for (ch = 0; ch < c->dim && slots[n] >= 0; ch++) {
            unsigned char *sb = pool + (size_t)slots[n] * d->st.slot_stride * d->esz;
            uint32_t old[64], xs[64], full[200], nw[64];
            size_t nf = 0;
            for (i = 0; i < L; i++) old[i] = 0, memcpy(&old[i], sb + (ch * d->st.dim_stride + i * d->st.tok_stride) * d->esz, d->esz);
            for (i = 0; i < len; i++) xs[i] = 0, memcpy(&xs[i], (const unsigned char *)d->xb + ((t0 + i) * d->ldx + ch) * d->esz, d->esz);
            for (i = 0; i < W - 1; i++) full[i] = old[a - 1 + i]; /* the history, then x */
            for (i = 0; i < len; i++) full[W - 1 + i] = xs[i];
            conv_win_out(c, d, ch, full, len, t0, out, S);
            if (len + W - 2 == L) { /* vLLM */
                for (i = 0; i < L; i++) nw[i] = i < L - len ? old[a + i] : xs[i - (L - len)];
            } else { /* zeros ++ old[0..he) ++ x, last L */
                for (i = 0; i < L; i++) full[nf++] = 0;
                for (i = 0; i < he; i++) full[nf++] = old[i];
                for (i = 0; i < len; i++) full[nf++] = xs[i];
                for (i = 0; i < L; i++) nw[i] = full[nf - L + i];
            }
            for (i = 0; i < L; i++) memcpy(sb + (ch * d->st.dim_stride + i * d->st.tok_stride) * d->esz, &nw[i], d->esz);
        }
        for (i = 0; i < len && slots[n] < 0; i++)
            for (ch = 0; ch < c->dim; ch++) out[(t0 + i) * c->dim + ch] = 0.0, S[(t0 + i) * c->dim + ch] = 0.0;
    }
}

static void test_conv_spec(void) {
    amxk_tier tier;
    amxk_ctx ctx;
    int v;
    TEST_SECTION("conv1d update: speculative decoding (num_accepted_tokens) vs vLLM's rule, both layouts");
    for (v = 0; v < 2; v++) {
        conv_case c;
        conv_data d;
        static const int32_t slots[5] = {2, -1, 0, 4, 1}, acc[5] = {1, 2, 4, 3, 2};
        size_t n, osz;
        memset(&c, 0, sizeof c);
        c.dim = 40, c.W = 4, c.slen = 6, c.n_slots = 6, c.bias = v, c.silu = 1, c.ds = v; /* num_spec = 3 */
        c.xt = v ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16, c.ot = AMXK_DTYPE_BF16, c.n_seqs = 5;
        for (n = 0; n < 5; n++) c.lens[n] = v && n == 3 ? 2 : 4, c.slots[n] = slots[n], c.init[n] = 1; /* v = 1: one short step */
        conv_gen(&c, &d);
        osz = 2;
        TEST_FOR_EACH_TIER(tier, ctx) {
            unsigned char *pref = (unsigned char *)test_alloc(d.pool_elems * d.esz), *pool = (unsigned char *)test_alloc(d.pool_elems * d.esz);
            double *ref = (double *)test_alloc(d.T * c.dim * 8), *S = (double *)test_alloc(d.T * c.dim * 8);
            void *out = test_alloc(d.T * d.ldo * osz);
            amxk_conv_state cs = d.st;
            int32_t bad_acc[5] = {1, 2, 5, 3, 2}, cache[5] = {0, 0, 0, 0, 0};
            amxk_status st;
            size_t bad;
            memcpy(pref, d.pool0, d.pool_elems * d.esz), memcpy(pool, d.pool0, d.pool_elems * d.esz);
            conv_spec_ref(&c, &d, d.qsl, slots, acc, pref, ref, S);
            cs.data = pool, cs.num_accepted_tokens = acc;
            st = amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 5, d.qsl, slots, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs);
            CHECK(st == AMXK_OK, "spec update status %d", (int)st);
            test_dump("conv.spec", (int)tier, out, d.T * d.ldo * osz), test_dump("conv.spool", (int)tier, pool, d.pool_elems * d.esz);
            bad = conv_cmp(&c, &d, out, d.ldo, d.qsl, 5, ref, S, "spec");
            CHECK(bad == 0 && memcmp(pool, pref, d.pool_elems * d.esz) == 0, "tier %s %s: %lu outputs off / state differs (bitwise)",
                  amxk_tier_name(tier), v ? "DS" : "SD", (unsigned long)bad);
            memcpy(pref, pool, d.pool_elems * d.esz);
            cs.num_accepted_tokens = bad_acc; /* 5 > state_len - W + 2 */
            CHECK(amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 5, d.qsl, slots, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                      AMXK_ERR_ARG, "acc out of range");
            bad_acc[2] = 0;
            CHECK(amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 5, d.qsl, slots, NULL, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                      AMXK_ERR_ARG, "acc 0");
            cs.num_accepted_tokens = acc;
            CHECK(amxk_conv1d_update(&ctx, d.packed, d.packed_bytes, 1, 5, d.qsl, slots, cache, d.xb, c.xt, d.ldx, out, c.ot, d.ldo, &cs) ==
                      AMXK_ERR_ARG, "acc with cache_seqlens");
            CHECK(memcmp(pool, pref, d.pool_elems * d.esz) == 0, "error paths wrote the state");
            test_free(pref), test_free(pool), test_free(ref), test_free(S), test_free(out);
        }
        conv_free(&d);
    }
}

/* ================================================================================================ */
/* gated delta rule                                                                                 */

typedef struct gcase {
    size_t H, HV, dk, dv;
    size_t n_seqs;
    int lens[12];
    int32_t slots[12];
    uint8_t init[12];
    int use_init;
    size_t n_slots, slot_pad, ld_pad;
    amxk_dtype dt, ot;
    int fused, vfirst, l2norm;
    int extreme; /* 0 none, 1 strong decay, 2 no decay, 3 beta 0, 4 beta 1, 5 zero k rows + |v| 1e3 */
    int pbf;     /* fused gating with bf16 A_log and dt_bias */
} gcase;

typedef struct gdata {
    size_t T, ldq, ldk, ldv, ldo, slot_stride, pool_floats;
    int32_t qsl[13];
    float *q, *k, *v, *g, *beta, *a, *b, *Al, *dt; /* values */
    void *qb, *kb, *vb, *ab, *bb, *Alb, *dtb;
    float *pool0;
    amxk_gdn_params p;
    amxk_gdn_inputs in;
} gdata;

static void gdn_gen(const gcase *c, gdata *d) {
    size_t i, t, n, HK = c->H * c->dk;
    test_case_begin(test_case_id("gdn gdn", gdn_gen_calls++));
    memset(d, 0, sizeof *d);
    d->qsl[0] = 0;
    for (n = 0; n < c->n_seqs; n++) d->qsl[n + 1] = d->qsl[n] + c->lens[n];
    d->T = (size_t)d->qsl[c->n_seqs];
    d->ldq = HK + c->ld_pad, d->ldk = HK + 2 * c->ld_pad, d->ldv = c->HV * c->dv + c->ld_pad, d->ldo = c->HV * c->dv + 3;
    d->q = (float *)test_alloc((d->T + 1) * d->ldq * 4);
    d->k = (float *)test_alloc((d->T + 1) * d->ldk * 4);
    d->v = (float *)test_alloc((d->T + 1) * d->ldv * 4);
    d->g = (float *)test_alloc((d->T + 1) * c->HV * 4);
    d->beta = (float *)test_alloc((d->T + 1) * c->HV * 4);
    d->a = (float *)test_alloc((d->T + 1) * c->HV * 4);
    d->b = (float *)test_alloc((d->T + 1) * c->HV * 4);
    d->Al = (float *)test_alloc(c->HV * 4);
    d->dt = (float *)test_alloc(c->HV * 4);
    for (i = 0; i < (d->T + 1) * d->ldq; i++) d->q[i] = rbf((float)test_uniform(-1, 1));
    for (i = 0; i < (d->T + 1) * d->ldk; i++) d->k[i] = rbf((float)test_uniform(-1, 1));
    for (i = 0; i < (d->T + 1) * d->ldv; i++) d->v[i] = rbf((float)test_uniform(-1, 1) * (c->extreme == 5 ? 1000.0f : 1.0f));
    if (c->extreme == 5)
        for (t = 0; t < d->T; t += 3) memset(d->k + t * d->ldk, 0, HK * 4); /* zero k rows (every head) */
    for (i = 0; i < c->HV; i++) d->Al[i] = c->extreme == 1 ? logf(16.0f) : logf((float)test_uniform(1, 16)), d->dt[i] = (float)test_uniform(-0.5, 0.5);
    if (c->pbf) /* bf16 parameters: the oracle uses the same (rounded) values */
        for (i = 0; i < c->HV; i++) d->Al[i] = rbf(d->Al[i]), d->dt[i] = rbf(d->dt[i]);
    for (i = 0; i < (d->T + 1) * c->HV; i++) {
        float x = (float)test_uniform(-3, 3);
        d->a[i] = rbf(c->extreme == 1 ? 40.0f : c->extreme == 2 ? -40.0f : x);
        d->b[i] = rbf(c->extreme == 3 ? -20.0f : c->extreme == 4 ? 20.0f : (float)test_uniform(-3, 3));
        {
            size_t h = i % c->HV;
            double xx = (double)d->a[i] + (double)d->dt[h];
            d->g[i] = c->extreme == 1 ? -640.0f : (float)(-exp((double)d->Al[h]) * ref_softplus(xx, 1.0, 20.0) * 0.05);
            d->beta[i] = c->extreme == 3 ? 0.0f : c->extreme == 4 ? 1.0f : (float)(1.0 / (1.0 + exp(-(double)d->b[i])));
        }
    }
    d->qb = to_dt(d->q, (d->T + 1) * d->ldq, c->dt);
    d->kb = to_dt(d->k, (d->T + 1) * d->ldk, c->dt);
    d->vb = to_dt(d->v, (d->T + 1) * d->ldv, c->dt);
    d->ab = to_dt(d->a, (d->T + 1) * c->HV, c->dt);
    d->bb = to_dt(d->b, (d->T + 1) * c->HV, c->dt);
    d->slot_stride = c->HV * c->dk * c->dv + c->slot_pad;
    d->pool_floats = c->n_slots * d->slot_stride;
    d->pool0 = (float *)test_alloc(d->pool_floats * 4);
    for (i = 0; i < d->pool_floats; i++) d->pool0[i] = (float)test_uniform(-0.1, 0.1);
    d->p = amxk_gdn_params_default(c->H, c->HV, c->dk, c->dv);
    d->p.l2norm = c->l2norm;
    d->p.state_v_first = c->vfirst;
    memset(&d->in, 0, sizeof d->in);
    d->in.dtype = c->dt;
    d->in.q = d->qb, d->in.k = d->kb, d->in.v = d->vb, d->in.ldq = d->ldq, d->in.ldk = d->ldk, d->in.ldv = d->ldv;
    if (c->fused) {
        d->in.ab_dtype = c->dt, d->in.a = d->ab, d->in.b = d->bb, d->in.lda = d->in.ldb = c->HV, d->in.A_log = d->Al, d->in.dt_bias = d->dt;
        if (c->pbf) {
            d->Alb = to_dt(d->Al, c->HV, AMXK_DTYPE_BF16), d->dtb = to_dt(d->dt, c->HV, AMXK_DTYPE_BF16);
            d->in.A_log = d->Alb, d->in.dt_bias = d->dtb, d->in.A_log_dtype = d->in.dt_bias_dtype = AMXK_DTYPE_BF16;
        }
    } else {
        d->in.g = d->g, d->in.beta = d->beta, d->in.ldg = d->in.ldbeta = c->HV;
    }
}
static void gdn_free(gdata *d) {
    test_free(d->q), test_free(d->k), test_free(d->v), test_free(d->g), test_free(d->beta), test_free(d->a), test_free(d->b);
    test_free(d->Al), test_free(d->dt), test_free(d->qb), test_free(d->kb), test_free(d->vb), test_free(d->ab), test_free(d->bb);
    test_free(d->pool0), test_free(d->Alb), test_free(d->dtb);
}

/* Oracle: tokens [qsl[n], qsl[n+1]) of sequences n < n_seqs, token row offset row0 into the inputs;
   pool (double, K-first per head, slot stride HV*Dk*Dv) updated in place; out[t][hv*Dv + j]. */
static void gdn_ref(const gcase *c, const gdata *d, size_t n_seqs, const int32_t *qsl, const int32_t *slots, const uint8_t *init,
                    double *pool, double *out) {
    size_t n, hv, t, i, j, dk = c->dk, dv = c->dv, hs = dk * dv, G = c->HV / c->H;
    double *S = (double *)malloc(hs * 8), qh[256], kh[256], u[256];
    for (n = 0; n < n_seqs; n++) {
        size_t t0 = (size_t)qsl[n], t1 = (size_t)qsl[n + 1];
        for (hv = 0; hv < c->HV; hv++) {
            size_t h = hv / G;
            double *P = slots[n] >= 0 ? pool + ((size_t)slots[n] * c->HV + hv) * hs : NULL;
            if (t1 == t0) { /* empty: the slot is left alone, or zeroed when it has no initial state */
                if (P && init && !init[n])
                    for (i = 0; i < hs; i++) P[i] = 0.0;
                continue;
            }
            if (!P) {
                for (t = t0; t < t1; t++)
                    for (j = 0; j < dv; j++) out[t * c->HV * dv + hv * dv + j] = 0.0;
                continue;
            }
            for (i = 0; i < hs; i++) S[i] = (init && !init[n]) ? 0.0 : P[i];
            for (t = t0; t < t1; t++) {
                double qs = 0, ks = 0, g, be, al;
                for (i = 0; i < dk; i++) {
                    qh[i] = d->q[t * d->ldq + h * dk + i], kh[i] = d->k[t * d->ldk + h * dk + i];
                    qs += qh[i] * qh[i], ks += kh[i] * kh[i];
                }
                for (i = 0; i < dk; i++) {
                    if (c->l2norm) qh[i] /= sqrt(qs + 1e-6), kh[i] /= sqrt(ks + 1e-6);
                    qh[i] *= 1.0 / sqrt((double)dk);
                }
                if (c->fused) {
                    double x = (double)d->a[t * c->HV + hv] + (double)d->dt[hv];
                    g = -exp((double)d->Al[hv]) * ref_softplus((double)(float)x, 1.0, 20.0);
                    be = 1.0 / (1.0 + exp(-(double)d->b[t * c->HV + hv]));
                } else {
                    g = d->g[t * c->HV + hv], be = d->beta[t * c->HV + hv];
                }
                al = exp(g);
                for (i = 0; i < hs; i++) S[i] *= al;                                    /* decay */
                for (j = 0; j < dv; j++) {                                              /* delta */
                    double p = 0;
                    for (i = 0; i < dk; i++) p += S[i * dv + j] * kh[i];
                    u[j] = be * ((double)d->v[t * d->ldv + hv * dv + j] - p);
                }
                for (i = 0; i < dk; i++)                                                /* write */
                    for (j = 0; j < dv; j++) S[i * dv + j] += kh[i] * u[j];
                for (j = 0; j < dv; j++) {                                              /* read */
                    double o = 0;
                    for (i = 0; i < dk; i++) o += S[i * dv + j] * qh[i];
                    out[t * c->HV * dv + hv * dv + j] = o;
                }
            }
            for (i = 0; i < hs; i++) P[i] = S[i];
        }
    }
    free(S);
}

/* library pool (float, orientation, slot stride) element (slot, hv, i, j) */
static float lib_state(const gcase *c, const gdata *d, const float *pool, size_t s, size_t hv, size_t i, size_t j) {
    const float *hd = pool + s * d->slot_stride + hv * c->dk * c->dv;
    return c->vfirst ? hd[j * c->dk + i] : hd[i * c->dv + j];
}

typedef struct gstats {
    double st_err, st_max, out_ratio;
    size_t nonfinite, out_bad;
} gstats;

static void gdn_compare(const gcase *c, const gdata *d, const float *pool, const double *rpool, const void *o, const double *ro,
                        size_t n_seqs, const int32_t *qsl, gstats *gs) {
    size_t s, hv, i, j, n, t, hs = c->dk * c->dv, W = c->HV * c->dv;
    double ss = 0;
    size_t cnt = 0;
    memset(gs, 0, sizeof *gs);
    for (s = 0; s < c->n_slots; s++)
        for (hv = 0; hv < c->HV; hv++)
            for (i = 0; i < c->dk; i++)
                for (j = 0; j < c->dv; j++) {
                    double want = rpool[(s * c->HV + hv) * hs + i * c->dv + j], got = lib_state(c, d, pool, s, hv, i, j);
                    if (!isfinite(got)) gs->nonfinite++;
                    gs->st_err = fmax(gs->st_err, fabs(got - want));
                    gs->st_max = fmax(gs->st_max, fabs(want));
                }
    for (n = 0; n < n_seqs; n++)
        for (t = (size_t)qsl[n]; t < (size_t)qsl[n + 1]; t++)
            for (i = 0; i < W; i++) ss += ro[t * W + i] * ro[t * W + i], cnt++;
    ss = cnt ? sqrt(ss / (double)cnt) : 0;
    for (n = 0; n < n_seqs; n++)
        for (t = (size_t)qsl[n]; t < (size_t)qsl[n + 1]; t++)
            for (i = 0; i < W; i++) {
                double got = dec(o, c->ot, t * d->ldo + i), want = ro[t * W + i], b = bound_out(want, ss, c->ot) + 1e-30;
                if (!isfinite(got)) gs->nonfinite++;
                if (!(fabs(got - want) <= b)) gs->out_bad++;
                if (fabs(got - want) / b > gs->out_ratio) gs->out_ratio = fabs(got - want) / b;
            }
}

static double worst_state_ratio = 0, worst_out_ratio = 0;

/* Runs one case on every tier in the given mode(s); checks vs the oracle, thread invariance and
   orientation equivalence (bitwise). */
static void gdn_case(const gcase *c, int modes, int threads) {
    gdata d;
    size_t hs = c->dk * c->dv, osz = c->ot == AMXK_DTYPE_F32 ? 4 : 2, W = c->HV * c->dv, i, obytes;
    double *rpool, *ro;
    float *pool, *pool2;
    void *o, *o2;
    amxk_tier tier;
    amxk_ctx ctx;
    char what[200];
    gdn_gen(c, &d);
    obytes = (d.T + 1) * d.ldo * osz;
    snprintf(what, sizeof what, "gdn H=%lu HV=%lu dk=%lu dv=%lu T=%lu seqs=%lu %s->%s fused=%d vfirst=%d l2=%d ext=%d", (unsigned long)c->H,
             (unsigned long)c->HV, (unsigned long)c->dk, (unsigned long)c->dv, (unsigned long)d.T, (unsigned long)c->n_seqs, dtn(c->dt),
             dtn(c->ot), c->fused, c->vfirst, c->l2norm, c->extreme);
    rpool = (double *)test_alloc(c->n_slots * c->HV * hs * 8);
    ro = (double *)test_alloc((d.T + 1) * W * 8);
    pool = (float *)test_alloc(d.pool_floats * 4);
    pool2 = (float *)test_alloc(d.pool_floats * 4);
    o = test_alloc(obytes);
    o2 = test_alloc(obytes);
    {
        size_t s, hv, j;
        for (s = 0; s < c->n_slots; s++)
            for (hv = 0; hv < c->HV; hv++)
                for (i = 0; i < c->dk; i++)
                    for (j = 0; j < c->dv; j++) rpool[(s * c->HV + hv) * hs + i * c->dv + j] = lib_state(c, &d, d.pool0, s, hv, i, j);
    }
    gdn_ref(c, &d, c->n_seqs, d.qsl, c->slots, c->use_init ? c->init : NULL, rpool, ro);
    TEST_FOR_EACH_TIER(tier, ctx) {
        int m;
        for (m = 1; m <= 2; m++) {
            amxk_gdn_mode mode = (amxk_gdn_mode)m;
            size_t wsb, wc;
            void *ws;
            amxk_gdn_state st;
            amxk_status s;
            gstats gs;
            if (!(modes & (1 << m))) continue;
            amxk_gdn_workspace_size(&ctx, &d.p, mode, &wsb);
            ws = test_alloc(wsb);
            memcpy(pool, d.pool0, d.pool_floats * 4);
            test_poison(o, obytes);
            st.data = pool, st.n_slots = c->n_slots, st.slot_stride = d.slot_stride;
            s = amxk_gdn(&ctx, &d.p, mode, &d.in, c->n_seqs, d.qsl, c->slots, c->use_init ? c->init : NULL, &st, o, c->ot, d.ldo, ws, wsb);
            CHECK(s == AMXK_OK, "%s: status %d", what, (int)s);
            test_dump("gdn.o", (int)tier, o, obytes), test_dump("gdn.pool", (int)tier, pool, d.pool_floats * 4);
            gdn_compare(c, &d, pool, rpool, o, ro, c->n_seqs, d.qsl, &gs);
            CHECK(gs.nonfinite == 0, "%s tier %s mode %d: %lu non-finite", what, amxk_tier_name(tier), m, (unsigned long)gs.nonfinite);
            CHECK(gs.st_err <= 1e-4 * gs.st_max + 1e-6, "%s tier %s mode %d: state err %.3g (max %.3g)", what, amxk_tier_name(tier), m, gs.st_err,
                  gs.st_max);
            CHECK(gs.out_bad == 0, "%s tier %s mode %d: %lu outputs off (worst %.3g of the bound)", what, amxk_tier_name(tier), m,
                  (unsigned long)gs.out_bad, gs.out_ratio);
            if (gs.st_max > 0 && gs.st_err / gs.st_max / 1e-4 > worst_state_ratio) worst_state_ratio = gs.st_err / gs.st_max / 1e-4;
            if (gs.out_ratio > worst_out_ratio) worst_out_ratio = gs.out_ratio;
            /* pad slots / unreferenced slots / empty sequences: bitwise untouched */
            {
                size_t sl, n, okp = 1;
                for (sl = 0; sl < c->n_slots; sl++) {
                    int used = 0;
                    for (n = 0; n < c->n_seqs; n++) used |= c->slots[n] == (int32_t)sl && (c->lens[n] > 0 || (c->use_init && !c->init[n]));
                    if (!used) okp &= memcmp(pool + sl * d.slot_stride, d.pool0 + sl * d.slot_stride, d.slot_stride * 4) == 0;
                    else if (c->slot_pad) okp &= memcmp(pool + sl * d.slot_stride + c->HV * hs, d.pool0 + sl * d.slot_stride + c->HV * hs, c->slot_pad * 4) == 0;
                }
                CHECK(okp, "%s tier %s mode %d: an unused slot (or slot padding) changed", what, amxk_tier_name(tier), m);
            }
            CHECK(test_guard_ok(o) && test_guard_ok(pool) && test_guard_ok(ws), "%s: guards", what);
            if (c->fused) { /* fused gating == amxk_gdn_gating's g / beta on the same level (bitwise state and outputs) */
                amxk_gdn_inputs in2 = d.in;
                const amxk_dtype pt = c->pbf ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
                size_t n, t, okf;
                s = amxk_gdn_gating(&ctx, d.T, c->HV, d.ab, c->HV, d.bb, c->HV, c->dt, d.in.A_log, pt, d.in.dt_bias, pt, d.p.softplus_beta,
                                    d.p.softplus_threshold, d.g, c->HV, d.beta, AMXK_DTYPE_F32, c->HV);
                in2.a = in2.b = in2.A_log = in2.dt_bias = NULL;
                in2.g = d.g, in2.beta = d.beta, in2.ldg = in2.ldbeta = c->HV;
                memcpy(pool2, d.pool0, d.pool_floats * 4);
                st.data = pool2;
                okf = s == AMXK_OK &&
                      amxk_gdn(&ctx, &d.p, mode, &in2, c->n_seqs, d.qsl, c->slots, c->use_init ? c->init : NULL, &st, o2, c->ot, d.ldo, ws, wsb) == AMXK_OK &&
                      memcmp(pool, pool2, d.pool_floats * 4) == 0;
                for (n = 0; n < c->n_seqs; n++)
                    for (t = (size_t)d.qsl[n]; t < (size_t)d.qsl[n + 1]; t++)
                        okf &= memcmp((char *)o + t * d.ldo * osz, (char *)o2 + t * d.ldo * osz, W * osz) == 0;
                CHECK(okf, "%s tier %s mode %d: fused gating != amxk_gdn_gating's values (bitwise)", what, amxk_tier_name(tier), m);
                st.data = pool;
            }
            /* thread-count invariance (bitwise) */
            for (wc = 1; threads && wc < TEST_N_WORKER_COUNTS; wc++) {
                amxk_ctx c2;
                size_t wsb2, n, t, okt = 1;
                void *ws2;
                if (!test_ctx(&c2, tier, test_worker_counts[wc])) continue;
                amxk_gdn_workspace_size(&c2, &d.p, mode, &wsb2);
                ws2 = test_alloc(wsb2);
                memcpy(pool2, d.pool0, d.pool_floats * 4);
                st.data = pool2;
                s = amxk_gdn(&c2, &d.p, mode, &d.in, c->n_seqs, d.qsl, c->slots, c->use_init ? c->init : NULL, &st, o2, c->ot, d.ldo, ws2, wsb2);
                okt &= s == AMXK_OK && memcmp(pool, pool2, d.pool_floats * 4) == 0;
                for (n = 0; n < c->n_seqs; n++)
                    for (t = (size_t)d.qsl[n]; t < (size_t)d.qsl[n + 1]; t++)
                        okt &= memcmp((char *)o + t * d.ldo * osz, (char *)o2 + t * d.ldo * osz, W * osz) == 0;
                CHECK(okt, "%s tier %s mode %d: %d workers differ", what, amxk_tier_name(tier), m, test_worker_counts[wc]);
                test_free(ws2);
                st.data = pool;
            }
            test_free(ws);
        }
    }
    test_free(rpool), test_free(ro), test_free(pool), test_free(pool2), test_free(o), test_free(o2);
    gdn_free(&d);
}

static gcase gc_single(size_t H, size_t HV, size_t dk, size_t dv, int T) {
    gcase c;
    memset(&c, 0, sizeof c);
    c.H = H, c.HV = HV, c.dk = dk, c.dv = dv, c.n_seqs = 1, c.lens[0] = T, c.slots[0] = 1, c.n_slots = 3, c.l2norm = 1;
    c.dt = AMXK_DTYPE_BF16, c.ot = AMXK_DTYPE_BF16;
    return c;
}

static void test_gdn_lengths(void) {
    static const int Ts[8] = {1, 63, 64, 65, 127, 128, 129, 1000};
    int i;
    TEST_SECTION("gdn: single sequence, T around the chunk size, both modes");
    for (i = 0; i < 8; i++) {
        gcase c = gc_single(2, 4, 32, 24, Ts[i]);
        if (quick && Ts[i] == 1000) continue;
        c.fused = i % 2, c.vfirst = (i / 2) % 2, c.dt = i % 3 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32, c.ot = i % 4 == 1 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16;
        gdn_case(&c, 6, Ts[i] == 129);
    }
}

static void test_gdn_varlen(void) {
    static const int lens[8] = {0, 5, 64, 0, 129, 1, 70, 17};
    static const int32_t slots[8] = {4, 9, 0, 2, 7, -1, 3, 11};
    int v;
    TEST_SECTION("gdn: varlen, pads, empty sequences, has_initial_state, padded pool, strided q/k/v");
    for (v = 0; v < 4; v++) {
        gcase c;
        int n;
        memset(&c, 0, sizeof c);
        c.H = 2, c.HV = 4, c.dk = 16 + (size_t)v * 8, c.dv = 40 - (size_t)v * 8, c.n_seqs = 8, c.n_slots = 12, c.slot_pad = (size_t)v * 5,
        c.ld_pad = (size_t)v * 3;
        for (n = 0; n < 8; n++) c.lens[n] = lens[n], c.slots[n] = slots[n], c.init[n] = (uint8_t)((n + v) % 2);
        c.use_init = 1, c.l2norm = v != 3, c.fused = v % 2, c.pbf = v == 3, c.vfirst = v >= 2, c.dt = AMXK_DTYPE_BF16, c.ot = v % 2 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16;
        gdn_case(&c, 6, v == 1);
    }
}

static void test_gdn_gva(void) {
    /* dims not multiples of 16 / 32 hit the vector kernels' masked tails: Dv 37 = 32 + 5 columns, Dv 49 =
       32 + 17 (a 16-lane vector + 1 lane), Dk 49, 20, 8: masked q/k rows and dot products */
    static const size_t hk[7][2] = {{2, 2}, {2, 4}, {2, 6}, {1, 4}, {3, 3}, {1, 2}, {2, 2}};
    static const size_t dims[7][2] = {{16, 16}, {32, 48}, {48, 32}, {20, 37}, {8, 9}, {49, 49}, {17, 1}};
    int i;
    TEST_SECTION("gdn: GVA 1..4, Dk != Dv, tails");
    for (i = 0; i < 7; i++) {
        gcase c = gc_single(hk[i][0], hk[i][1], dims[i][0], dims[i][1], 70);
        c.n_seqs = 2, c.lens[1] = 3, c.slots[1] = 0, c.vfirst = i % 2, c.fused = (i + 1) % 2;
        gdn_case(&c, 6, 0);
    }
}

static void test_gdn_extremes(void) {
    int e;
    TEST_SECTION("gdn: strong decay (g = -640), no decay, beta 0 and 1, zero k rows, |v| ~ 1e3");
    for (e = 1; e <= 5; e++) {
        gcase c = gc_single(2, 4, 24, 16, 130);
        c.fused = e == 2 || e == 4, c.ot = AMXK_DTYPE_F32, c.dt = AMXK_DTYPE_F32;
        c.extreme = e;
        gdn_case(&c, 6, 0);
    }
}

static void test_gdn_qwen(void) {
    gcase c;
    static const int32_t slots[5] = {3, 11, -1, 0, 7};
    int n;
    if (quick) return;
    TEST_SECTION("gdn: Qwen3-Next head shapes (H 16, HV 32, 128 x 128), decode batch with a pad, short prefill");
    memset(&c, 0, sizeof c);
    c.H = 16, c.HV = 32, c.dk = 128, c.dv = 128, c.n_seqs = 5, c.n_slots = 12, c.l2norm = 1, c.fused = 1, c.dt = AMXK_DTYPE_BF16, c.ot = AMXK_DTYPE_BF16;
    for (n = 0; n < 5; n++) c.lens[n] = 1, c.slots[n] = slots[n];
    gdn_case(&c, 6, 1);
    c.vfirst = 1;
    gdn_case(&c, 2, 0);
    c = gc_single(16, 32, 128, 128, 65);
    c.fused = 1;
    gdn_case(&c, 6, 0);
}

/* split prefill and prefill -> decode vs one call; K-first vs V-first bitwise transposes */
static void test_gdn_handoff(void) {
    static const int splits[5][2] = {{128, 64}, {145, 64}, {145, 73}, {273, 128}, {192, 65}};
    amxk_tier tier;
    amxk_ctx ctx;
    int k;
    TEST_SECTION("gdn: split prefill == one call, prefill then decode == one prefill, orientations");
    for (k = 0; k < 5; k++) {
        gcase c = gc_single(2, 4, 32, 16, splits[k][0]);
        gdata d;
        size_t hs = c.dk * c.dv, W = c.HV * c.dv;
        gdn_gen(&c, &d);
        TEST_FOR_EACH_TIER(tier, ctx) {
            int m;
            for (m = 1; m <= 2; m++) {
                amxk_gdn_mode mode = (amxk_gdn_mode)m;
                size_t wsb, i, s0 = (size_t)splits[k][1], T = (size_t)splits[k][0];
                float *p1 = (float *)test_alloc(d.pool_floats * 4), *p2 = (float *)test_alloc(d.pool_floats * 4);
                float *o1 = (float *)test_alloc(T * d.ldo * 4), *o2 = (float *)test_alloc(T * d.ldo * 4);
                void *ws;
                amxk_gdn_state st;
                int32_t q1[2], qa[2], qb[2], sl = 1;
                double e = 0, mx = 0, oe = 0, om = 0;
                amxk_gdn_workspace_size(&ctx, &d.p, mode, &wsb);
                ws = test_alloc(wsb);
                memcpy(p1, d.pool0, d.pool_floats * 4), memcpy(p2, d.pool0, d.pool_floats * 4);
                q1[0] = 0, q1[1] = (int32_t)T;
                st.n_slots = c.n_slots, st.slot_stride = d.slot_stride;
                st.data = p1;
                CHECK(amxk_gdn(&ctx, &d.p, mode, &d.in, 1, q1, &sl, NULL, &st, o1, AMXK_DTYPE_F32, d.ldo, ws, wsb) == AMXK_OK, "one call");
                st.data = p2;
                qa[0] = 0, qa[1] = (int32_t)s0, qb[0] = (int32_t)s0, qb[1] = (int32_t)T;
                CHECK(amxk_gdn(&ctx, &d.p, mode, &d.in, 1, qa, &sl, NULL, &st, o2, AMXK_DTYPE_F32, d.ldo, ws, wsb) == AMXK_OK, "first part");
                if (k == 4) { /* prefill then token-by-token decode (recurrent) */
                    for (i = s0; i < T; i++) {
                        int32_t qd[2];
                        qd[0] = (int32_t)i, qd[1] = (int32_t)i + 1;
                        CHECK(amxk_gdn(&ctx, &d.p, AMXK_GDN_RECURRENT, &d.in, 1, qd, &sl, NULL, &st, o2, AMXK_DTYPE_F32, d.ldo, ws, wsb) == AMXK_OK, "decode");
                    }
                } else {
                    CHECK(amxk_gdn(&ctx, &d.p, mode, &d.in, 1, qb, &sl, NULL, &st, o2, AMXK_DTYPE_F32, d.ldo, ws, wsb) == AMXK_OK, "second part");
                }
                for (i = 0; i < d.pool_floats; i++) e = fmax(e, fabs((double)p1[i] - p2[i])), mx = fmax(mx, fabs((double)p1[i]));
                for (i = 0; i < T; i++) {
                    size_t j;
                    for (j = 0; j < W; j++) oe += pow(o1[i * d.ldo + j] - o2[i * d.ldo + j], 2), om += pow(o1[i * d.ldo + j], 2);
                }
                CHECK(e <= 1e-5 * mx && sqrt(oe / (om + 1e-300)) <= 4e-3, "split (%d,%d) tier %s mode %d: state %.3g of %.3g, out relRMSE %.3g",
                      splits[k][0], splits[k][1], amxk_tier_name(tier), m, e, mx, sqrt(oe / (om + 1e-300)));
                /* orientation: V-first run on the transposed pool = transposed K-first result, bitwise */
                if (k == 1) {
                    amxk_gdn_params pv = d.p;
                    size_t s, hv, a2, b2;
                    int okv = 1;
                    float *o3 = (float *)test_alloc(T * d.ldo * 4);
                    pv.state_v_first = 1;
                    for (s = 0; s < c.n_slots; s++)
                        for (hv = 0; hv < c.HV; hv++)
                            for (a2 = 0; a2 < c.dk; a2++)
                                for (b2 = 0; b2 < c.dv; b2++)
                                    p2[s * d.slot_stride + hv * hs + b2 * c.dk + a2] = d.pool0[s * d.slot_stride + hv * hs + a2 * c.dv + b2];
                    st.data = p2;
                    CHECK(amxk_gdn(&ctx, &pv, mode, &d.in, 1, q1, &sl, NULL, &st, o3, AMXK_DTYPE_F32, d.ldo, ws, wsb) == AMXK_OK, "vfirst");
                    for (s = 0; s < c.n_slots; s++)
                        for (hv = 0; hv < c.HV; hv++)
                            for (a2 = 0; a2 < c.dk; a2++)
                                for (b2 = 0; b2 < c.dv; b2++)
                                    okv &= test_f32_bits(p2[s * d.slot_stride + hv * hs + b2 * c.dk + a2]) ==
                                           test_f32_bits(p1[s * d.slot_stride + hv * hs + a2 * c.dv + b2]);
                    for (i = 0; i < T; i++) okv &= memcmp(o1 + i * d.ldo, o3 + i * d.ldo, W * 4) == 0;
                    CHECK(okv, "tier %s mode %d: V-first != transposed K-first (bitwise)", amxk_tier_name(tier), m);
                    test_free(o3);
                }
                test_free(p1), test_free(p2), test_free(o1), test_free(o2), test_free(ws);
            }
        }
        gdn_free(&d);
    }
}

/* SPECULATIVE (num_accepted_tokens, 2-D slot table): the oracle applies the contract token by token
   (the state starts from r[a-1] or zeros, the state after token t goes to r[t]) with the fp64 delta rule. */
static void test_gdn_spec(void) {
    static const int32_t tab[4][4] = {{5, 1, 7, 3}, {-1, 9, 10, 11}, {0, 2, 4, -1}, {8, 12, 13, 6}}, acc[4] = {2, 1, 3, 4};
    static const int lens[4] = {4, 3, 2, 4};
    static const uint8_t init[4] = {1, 1, 1, 0};
    amxk_tier tier;
    amxk_ctx ctx;
    int v;
    TEST_SECTION("gdn: speculative decoding (num_accepted_tokens, a slot per token) vs fp64 oracle; bf16 A_log / dt_bias");
    for (v = 0; v < 2; v++) {
        gcase c;
        gdata d;
        size_t hs, n, t, i, W;
        double *rpool, *ro;
        int32_t slots[16];
        memset(&c, 0, sizeof c);
        c.H = 2, c.HV = 4, c.dk = 32, c.dv = 24, c.n_seqs = 4, c.n_slots = 14, c.l2norm = 1, c.fused = 1, c.pbf = v, c.vfirst = v;
        c.dt = AMXK_DTYPE_BF16, c.ot = v ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16, c.use_init = 1;
        for (n = 0; n < 4; n++) c.lens[n] = lens[n], c.slots[n] = -1, c.init[n] = init[n];
        for (n = 0; n < 16; n++) slots[n] = tab[n / 4][n % 4];
        gdn_gen(&c, &d);
        d.in.num_accepted_tokens = acc, d.in.spec_cols = 4;
        hs = c.dk * c.dv, W = c.HV * c.dv;
        rpool = (double *)test_alloc(c.n_slots * c.HV * hs * 8), ro = (double *)test_alloc((d.T + 1) * W * 8);
        {
            size_t sl, hv, j;
            for (sl = 0; sl < c.n_slots; sl++)
                for (hv = 0; hv < c.HV; hv++)
                    for (i = 0; i < c.dk; i++)
                        for (j = 0; j < c.dv; j++) rpool[(sl * c.HV + hv) * hs + i * c.dv + j] = lib_state(&c, &d, d.pool0, sl, hv, i, j);
        }
        for (n = 0; n < 4; n++) {
            int32_t start = tab[n][acc[n] - 1];
            for (t = 0; t < (size_t)lens[n]; t++) {
                int32_t q1[2], src = t ? tab[n][t - 1] : start, dst = start < 0 ? -1 : tab[n][t];
                q1[0] = d.qsl[n] + (int32_t)t, q1[1] = q1[0] + 1;
                if (dst >= 0)
                    for (i = 0; i < c.HV * hs; i++)
                        rpool[(size_t)dst * c.HV * hs + i] = t == 0 && !init[n] ? 0.0 : rpool[(size_t)src * c.HV * hs + i];
                gdn_ref(&c, &d, 1, q1, &dst, NULL, rpool, ro);
            }
        }
        TEST_FOR_EACH_TIER(tier, ctx) {
            int m;
            for (m = 1; m <= 2; m++) {
                size_t wsb;
                void *ws, *o = test_alloc((d.T + 1) * d.ldo * 4);
                float *pool = (float *)test_alloc(d.pool_floats * 4);
                amxk_gdn_state st;
                amxk_status s;
                gstats gs;
                amxk_gdn_workspace_size(&ctx, &d.p, (amxk_gdn_mode)m, &wsb);
                ws = test_alloc(wsb);
                memcpy(pool, d.pool0, d.pool_floats * 4);
                st.data = pool, st.n_slots = c.n_slots, st.slot_stride = d.slot_stride;
                s = amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &d.in, 4, d.qsl, slots, init, &st, o, c.ot, d.ldo, ws, wsb);
                CHECK(s == AMXK_OK, "spec status %d", (int)s);
                test_dump("gdn.spec", (int)tier, o, (d.T + 1) * d.ldo * 4), test_dump("gdn.spool", (int)tier, pool, d.pool_floats * 4);
                gdn_compare(&c, &d, pool, rpool, o, ro, 4, d.qsl, &gs);
                CHECK(gs.nonfinite == 0 && gs.st_err <= 1e-4 * gs.st_max + 1e-6 && gs.out_bad == 0,
                      "spec v=%d tier %s mode %d: state err %.3g (max %.3g), %lu outputs off", v, amxk_tier_name(tier), m, gs.st_err, gs.st_max,
                      (unsigned long)gs.out_bad);
                { /* 3 workers: bitwise the same state and outputs */
                    amxk_ctx c3;
                    if (test_ctx(&c3, tier, 3)) {
                        size_t wsb3;
                        void *ws3, *o3 = test_alloc((d.T + 1) * d.ldo * 4);
                        float *pool3 = (float *)test_alloc(d.pool_floats * 4);
                        amxk_gdn_state st3 = st;
                        amxk_gdn_workspace_size(&c3, &d.p, (amxk_gdn_mode)m, &wsb3);
                        ws3 = test_alloc(wsb3);
                        memcpy(pool3, d.pool0, d.pool_floats * 4), memcpy(o3, o, (d.T + 1) * d.ldo * 4);
                        st3.data = pool3;
                        s = amxk_gdn(&c3, &d.p, (amxk_gdn_mode)m, &d.in, 4, d.qsl, slots, init, &st3, o3, c.ot, d.ldo, ws3, wsb3);
                        CHECK(s == AMXK_OK && memcmp(pool3, pool, d.pool_floats * 4) == 0 && memcmp(o3, o, (d.T + 1) * d.ldo * 4) == 0,
                              "spec tier %s mode %d: 3 workers differ", amxk_tier_name(tier), m);
                        test_free(ws3), test_free(o3), test_free(pool3);
                    }
                }
                { /* bad tables: nothing written */
                    int32_t b1[16], b2[16], bacc[4] = {2, 1, 3, 5};
                    amxk_gdn_inputs in = d.in;
                    memcpy(pool, d.pool0, d.pool_floats * 4);
                    memcpy(b1, slots, sizeof b1), memcpy(b2, slots, sizeof b2);
                    b1[13] = 7; /* seq 3 writes slot 7, which seq 0 writes too */
                    b2[2] = 12; /* seq 0 writes slot 12 (t = 2), seq 3 writes it too (t = 1) */
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &d.in, 4, d.qsl, b1, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_ARG, "dup write");
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &d.in, 4, d.qsl, b2, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_ARG, "dup write 2");
                    b1[13] = 1; /* seq 3 writes slot 1, seq 0's start */
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &d.in, 4, d.qsl, b1, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_ARG, "start written");
                    in.num_accepted_tokens = bacc;
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &in, 4, d.qsl, slots, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_ARG, "acc > cols");
                    in.num_accepted_tokens = acc, in.spec_cols = 0;
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &in, 4, d.qsl, slots, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_ARG, "cols 0");
                    in.spec_cols = 4, in.A_log_dtype = AMXK_DTYPE_F16;
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &in, 4, d.qsl, slots, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_DTYPE, "A_log f16");
                    in.A_log_dtype = AMXK_DTYPE_INVALID;
                    CHECK(amxk_gdn(&ctx, &d.p, (amxk_gdn_mode)m, &in, 4, d.qsl, NULL, init, &st, o, c.ot, d.ldo, ws, wsb) == AMXK_ERR_NULL, "no table");
                    CHECK(memcmp(pool, d.pool0, d.pool_floats * 4) == 0, "spec error paths wrote the state");
                }
                test_free(ws), test_free(o), test_free(pool);
            }
        }
        test_free(rpool), test_free(ro);
        gdn_free(&d);
    }
}

static void test_gdn_errors(void) {
    gcase c = gc_single(2, 4, 16, 16, 10);
    gdata d;
    float *pool, *o;
    void *ws;
    size_t wsb, obytes;
    amxk_gdn_state st;
    int32_t q[3] = {0, 6, 10}, sl[2] = {0, 2};
    amxk_gdn_params p;
    amxk_gdn_inputs in;
    TEST_SECTION("gdn: bad arguments leave the state and output untouched");
    c.n_slots = 4;
    gdn_gen(&c, &d);
    amxk_gdn_workspace_size(NULL, &d.p, AMXK_GDN_AUTO, &wsb);
    ws = test_alloc(wsb);
    pool = (float *)test_alloc(d.pool_floats * 4);
    obytes = d.T * d.ldo * 2;
    o = (float *)test_alloc(obytes);
    memcpy(pool, d.pool0, d.pool_floats * 4);
    memset(o, 0x5a, obytes);
    st.data = pool, st.n_slots = 4, st.slot_stride = d.slot_stride;
#define GDN_BAD(expr, want, msg) CHECK((expr) == (want), "%s: got %d", msg, (int)(expr))
    GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_OK, "valid call");
    memcpy(pool, d.pool0, d.pool_floats * 4);
    memset(o, 0x5a, obytes);
    {
        int32_t bad1[2] = {0, 4}, bad2[2] = {-2, 1}, dup[2] = {2, 2}, q2[3] = {0, 6, 5};
        p = d.p;
        p.n_v_heads = 3;
        GDN_BAD(amxk_gdn(NULL, &p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_SHAPE, "HV % H");
        p = d.p;
        p.dk = 257;
        GDN_BAD(amxk_gdn(NULL, &p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_SHAPE, "dk 257");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, bad1, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_ARG, "slot range");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, bad2, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_ARG, "slot -2");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, dup, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_ARG, "dup slot");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q2, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_ARG, "qsl order");
        GDN_BAD(amxk_gdn(NULL, &d.p, (amxk_gdn_mode)7, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_ARG, "mode");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb - 64), AMXK_ERR_WORKSPACE, "ws");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_F16, d.ldo, ws, wsb), AMXK_ERR_DTYPE, "o dtype");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, 8, ws, wsb), AMXK_ERR_STRIDE, "ldo");
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, pool, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_ALIAS, "o=state");
        in = d.in;
        in.ldq = 31;
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_STRIDE, "ldq");
        in = d.in;
        in.beta = NULL;
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_NULL, "beta");
        st.slot_stride = 100;
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, ws, wsb), AMXK_ERR_STRIDE, "slot stride");
        st.slot_stride = d.slot_stride;
        GDN_BAD(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 2, q, sl, NULL, &st, o, AMXK_DTYPE_BF16, d.ldo, (char *)ws + 8, wsb), AMXK_ERR_ALIGN, "align");
    }
    {
        size_t i, oko = 1;
        for (i = 0; i < obytes; i++) oko &= ((unsigned char *)o)[i] == 0x5a;
        CHECK(memcmp(pool, d.pool0, d.pool_floats * 4) == 0 && oko, "error paths modified the state or the output");
    }
    CHECK(amxk_gdn_workspace_size(NULL, NULL, AMXK_GDN_AUTO, &wsb) == AMXK_ERR_NULL, "ws null");
    CHECK(amxk_gdn(NULL, &d.p, AMXK_GDN_AUTO, &d.in, 0, NULL, NULL, NULL, &st, NULL, AMXK_DTYPE_BF16, d.ldo, NULL, 0) == AMXK_OK, "n_seqs 0");
    test_free(ws), test_free(pool), test_free(o);
    gdn_free(&d);
}

int main(void) {
    const char *qs = getenv("AMXK_TEST_QUICK");
    quick = qs && *qs && *qs != '0';
    test_init();
    test_gating();
    test_conv();
    test_conv_update();
    test_conv_spec();
    test_gdn_errors();
    test_gdn_lengths();
    test_gdn_varlen();
    test_gdn_gva();
    test_gdn_extremes();
    test_gdn_handoff();
    test_gdn_spec();
    test_gdn_qwen();
    printf("delta rule: worst state error %.3f of its bound (1e-4 max|S|), worst output error %.3f of its bound\n", worst_state_ratio,
           worst_out_ratio);
    return test_finish();
}
