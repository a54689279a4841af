/* tests/test_moe.c - amxk_moe.h: routing (top-k), align, fused experts with a shared expert.

   References are written here, independently of amxk: routing in double precision (softmax /
   sigmoid scores, bias, groups, ties ordered by value then lower id); align as a plain loop per
   expert; fused experts as a dense loop over tokens and their top-k experts in double precision over
   the DEQUANTIZED weights (amxk_dequantize gives the f32 weights every path multiplies), activations
   in double, no intermediate rounding.

   ROUTING comparison: rows whose reference choices have a near-tie (two relevant values closer than
   1e-4 relative, where fp32 rounding may legitimately reorder them) are checked for validity only
   (every chosen expert's reference choice >= every eligible unchosen one's - 1e-4 relative); every
   other row must match ids exactly and weights within 1e-5 relative. Exact ties are constructed on
   purpose (integer logits, equal rows) and must match exactly: lower id first.

   FUSED EXPERTS TOLERANCE. amxk rounds the activation output to x's dtype (u = half an ulp: 2^-8
   for bf16, 2^-11 for fp16), rounds w * x to x's dtype with apply-on-input, and on the AMX path
   rounds dequantized weights of quantized packs to bf16/fp16 (u again); accumulations are fp32.
   Per output, summing over the token's contributing slots j (weight w_j, 1 with apply-on-input):
       |out - ref| <= eps_out * |ref| + ca * S + cg * B + 1e-30
   S = sum_j |w_j| (sum_n |W2[k,n] a_jn| + |b2_k|), B = sum_j |w_j| sum_n |W2[k,n]| Mag_jn (each
   plus the shared expert's), Mag = L |up'| G_gate + |act_g| G_up: first-order propagation of an
   error of G * rel in gate / up, G_* = sum_k |x_k w_k| of the row, L bounds the derivative of the
   gate nonlinearity (1.2 for silu and gelu, 1 + alpha |g| / 4 for the gpt-oss swiglu), up' = the
   (clamped, +1) up factor. ca = 2 (u + [quantized] u + 2^-16), cg = 2 ([apply-on-input] u +
   [quantized] u + 2^-16): the roundings listed, fp32 sums, and a factor 2 of margin. eps_out: half
   an ulp of the output dtype. Structural errors (a wrong expert, bias, clamp, slot or weight) are
   far above this (checked by mutating the implementation during development).

   Also: every usable tier (scalar, avx2, amx through the emulator in the _emu build), thread-count
   invariance (pools 1, 2, 3, 7: bitwise equal), pointer-array vs base+stride weights (bitwise
   equal), in place, shard ranges, all tokens to one expert, experts with no tokens, M = 1, ids -1,
   duplicate ids, strided x and out (gaps untouched), bad input -> status with out and workspace
   untouched. */
#ifndef AMXK_TEST_LINKED /* else the Makefile links the implementation: build/.../amxk_impl.o */
#define AMXK_IMPLEMENTATION
#endif
#include "test.h"
#include "../amxk_moe.h"

/* ============================== routing ============================== */

typedef struct rref {
    int sigmoid, renorm, top2;
    size_t G, tg;
    const float *bias;
    float rsf;
    double cap; /* softcap, 0: none */
} rref;

static double ref_choice(const double *sc, const float *bias, size_t e) { return sc[e] + (bias ? (double)bias[e] : 0.0); }

/* Reference routing of one row. Returns 1 if it has a near-tie (then ids/w are still filled). */
static int ref_route_row(const rref *r, const float *l, size_t E, size_t topk, int32_t *ids, double *w, double *sc, double *ch,
                         int *eligible) {
    size_t e, j, g, gs = r->G >= 2 ? E / r->G : E, ng = r->G >= 2 ? r->G : 1;
    double mx = l[0], sum = 0, tol, maxabs = 0;
    int near = 0;
    double gsc[1024];
    int gsel[1024];
    double lc[1024];
    for (e = 0; e < E; e++) lc[e] = r->cap > 0 ? r->cap * tanh((double)l[e] / r->cap) : (double)l[e];
    mx = lc[0];
    for (e = 0; e < E; e++) mx = lc[e] > mx ? lc[e] : mx;
    for (e = 0; e < E; e++) sum += exp(lc[e] - mx);
    for (e = 0; e < E; e++) sc[e] = r->sigmoid ? 1.0 / (1.0 + exp(-lc[e])) : exp(lc[e] - mx) / sum;
    for (e = 0; e < E; e++) ch[e] = ref_choice(sc, r->bias, e), maxabs = fabs(ch[e]) > maxabs ? fabs(ch[e]) : maxabs;
    tol = 1e-4 * (maxabs > 1e-30 ? maxabs : 1e-30);
    for (g = 0; g < ng; g++) {
        double b1 = -1e300, b2 = -1e300;
        for (e = g * gs; e < (g + 1) * gs; e++) {
            if (ch[e] > b1) b2 = b1, b1 = ch[e];
            else if (ch[e] > b2) b2 = ch[e];
        }
        gsc[g] = r->top2 ? b1 + b2 : b1;
        gsel[g] = ng == 1;
    }
    if (ng > 1) {
        for (j = 0; j < r->tg; j++) {
            size_t best = 0;
            int have = 0;
            for (g = 0; g < ng; g++)
                if (!gsel[g] && (!have || gsc[g] > gsc[best])) best = g, have = 1; /* strict >: lower id wins ties */
            gsel[best] = 1;
            /* near-tie between the last kept group and the best dropped one */
            if (j + 1 == r->tg)
                for (g = 0; g < ng; g++)
                    if (!gsel[g] && gsc[g] != gsc[best] && fabs(gsc[g] - gsc[best]) < 2 * tol) near = 1;
        }
    }
    for (e = 0; e < E; e++) eligible[e] = gsel[e / gs];
    {
        int taken[1024] = {0};
        for (j = 0; j < topk; j++) {
            size_t best = 0;
            int have = 0;
            for (e = 0; e < E; e++)
                if (eligible[e] && !taken[e] && (!have || ch[e] > ch[best])) best = e, have = 1;
            taken[best] = 1;
            ids[j] = (int32_t)best;
            w[j] = sc[best];
        }
        /* near-ties among the chosen and the next one */
        for (j = 0; j < topk; j++)
            for (e = 0; e < E; e++)
                if (eligible[e] && (size_t)ids[j] != e && ch[e] != ch[ids[j]] && fabs(ch[e] - ch[ids[j]]) < tol) {
                    /* only matters when e is chosen or is the first unchosen */
                    near = 1;
                }
    }
    if (r->renorm) {
        double s = 0;
        for (j = 0; j < topk; j++) s += w[j];
        if (s > 0)
            for (j = 0; j < topk; j++) w[j] /= s;
    }
    if (r->rsf != 0.0f)
        for (j = 0; j < topk; j++) w[j] *= r->rsf;
    return near;
}

static long route_near_rows;
static float route_softcap; /* softcap of the next route_case calls (0: none) */

/* Runs amxk_moe_topk and checks it against the reference. fill: 0 random, 1 small integers (ties),
   2 all equal. */
static void route_case(const amxk_ctx *ctx, int sigmoid, int renorm, size_t E, size_t topk, size_t G, size_t tg, int top2,
                       int with_bias, float rsf, size_t M, int fill) {
    /* the case's data depends on its parameters only: the same logits on every tier */
    size_t ld = (test_case_begin(test_case_mix(
                     test_case_mix(test_case_mix(test_case_id("moe route", (uint64_t)(sigmoid * 2 + renorm)), E), topk),
                     test_case_mix(test_case_mix(test_case_mix(G, tg), (uint64_t)(top2 * 2 + with_bias)),
                                   test_case_mix(test_case_mix(test_f32_bits(rsf), M), (uint64_t)fill + 16u * test_f32_bits(route_softcap))))),
                 E + (size_t)test_randint(0, 3)),
           t, e, j;
    float *l = (float *)test_alloc(M * ld * 4), *bias = with_bias ? (float *)test_alloc(E * 4) : NULL;
    float *w = (float *)test_alloc(M * topk * 4);
    int32_t *ids = (int32_t *)test_alloc(M * topk * 4), rid[1024];
    double rw[1024], *sc = (double *)malloc(E * sizeof(double)), *ch = (double *)malloc(E * sizeof(double));
    int *elig = (int *)malloc(E * sizeof(int));
    amxk_moe_router r;
    rref rr;
    amxk_status s;
    long bad_ids = 0, bad_w = 0, bad_valid = 0;
    for (t = 0; t < M; t++)
        for (e = 0; e < E; e++)
            l[t * ld + e] = fill == 0 ? test_randf(-4, 4) : fill == 1 ? (float)test_randint(0, 2) : fill == 3 ? test_randf(-40, 40) : 0.5f;
    if (bias)
        for (e = 0; e < E; e++) bias[e] = fill == 0 ? test_randf(-0.5f, 0.5f) : (float)test_randint(0, 1) * 0.25f;
    memset(&r, 0, sizeof r);
    r.score = sigmoid ? AMXK_MOE_SCORE_SIGMOID : AMXK_MOE_SCORE_SOFTMAX;
    r.renormalize = renorm, r.num_expert_group = G, r.topk_group = tg, r.group_score_top2 = top2, r.correction_bias = bias;
    r.routed_scaling_factor = rsf, r.softcap = route_softcap;
    rr.sigmoid = sigmoid, rr.renorm = renorm, rr.top2 = top2, rr.G = G, rr.tg = tg, rr.bias = bias, rr.rsf = rsf, rr.cap = route_softcap;
    s = amxk_moe_topk(ctx, &r, M, E, l, ld, topk, w, ids);
    CHECK(s == AMXK_OK, "topk E=%zu k=%zu: %s", E, topk, amxk_status_string(s));
    for (t = 0; t < M && s == AMXK_OK; t++) {
        int near = ref_route_row(&rr, l + t * ld, E, topk, rid, rw, sc, ch, elig);
        if (fill == 0 && near) {
            /* validity: distinct, eligible, chosen >= every unchosen eligible (within tolerance) */
            double minc = 1e300, maxun = -1e300, maxabs = 0;
            int chosen[1024] = {0};
            route_near_rows++;
            for (j = 0; j < topk; j++) {
                int32_t id = ids[t * topk + j];
                if (id < 0 || (size_t)id >= E || chosen[id]) {
                    bad_valid++;
                    break;
                }
                chosen[id] = 1;
                minc = ch[id] < minc ? ch[id] : minc;
            }
            for (e = 0; e < E; e++) {
                maxabs = fabs(ch[e]) > maxabs ? fabs(ch[e]) : maxabs;
                if (!chosen[e] && elig[e]) maxun = ch[e] > maxun ? ch[e] : maxun;
            }
            if (G < 2 && maxun > minc + 1e-4 * maxabs) bad_valid++;
            continue;
        }
        for (j = 0; j < topk; j++) {
            if (ids[t * topk + j] != rid[j]) bad_ids++;
            else if (fabs((double)w[t * topk + j] - rw[j]) > 1e-5 * fabs(rw[j]) + 1e-30) bad_w++;
        }
    }
    CHECK(bad_ids == 0, "topk %s E=%zu k=%zu G=%zu tg=%zu top2=%d bias=%d fill=%d: %ld wrong ids", sigmoid ? "sigmoid" : "softmax",
          E, topk, G, tg, top2, with_bias, fill, bad_ids);
    CHECK(bad_w == 0, "topk E=%zu k=%zu: %ld weights off", E, topk, bad_w);
    CHECK(bad_valid == 0, "topk E=%zu k=%zu: %ld invalid near-tie rows", E, topk, bad_valid);
    CHECK(test_guard_ok(w) && test_guard_ok(ids), "topk guards");
    test_free(l), test_free(bias), test_free(w), test_free(ids);
    free(sc), free(ch), free(elig);
}

static void test_routing(void) {
    amxk_ctx ctx;
    amxk_tier tier;
    static const size_t Es[] = {1, 3, 8, 64, 160, 512}, ks[] = {1, 2, 6, 10};
    size_t i, j;
    TEST_SECTION("routing: softmax / sigmoid / grouped top-k vs double reference");
    TEST_FOR_EACH_TIER(tier, ctx) {
        for (i = 0; i < sizeof Es / sizeof Es[0]; i++)
            for (j = 0; j < sizeof ks / sizeof ks[0]; j++) {
                if (ks[j] > Es[i]) continue;
                route_case(&ctx, 0, (int)((i + j) & 1), Es[i], ks[j], 0, 0, 0, 0, 0.0f, 37, 0);
                route_case(&ctx, 1, (int)((i + j + 1) & 1), Es[i], ks[j], 0, 0, 0, (int)(j & 1), 0.0f, 23, 0);
                route_case(&ctx, 0, 1, Es[i], ks[j], 0, 0, 0, 0, 0.0f, 11, 1);
            }
        route_case(&ctx, 0, 0, 7, 7, 0, 0, 0, 0, 0.0f, 9, 0); /* topk = E */
        route_case(&ctx, 0, 1, 5, 5, 0, 0, 0, 1, 0.0f, 9, 1);
        route_case(&ctx, 0, 0, 16, 4, 0, 0, 0, 0, 0.0f, 3, 2); /* all equal: ids 0..3 */
        route_case(&ctx, 1, 1, 16, 4, 4, 2, 1, 1, 0.0f, 3, 2);
        /* grouped (DeepSeek-V2 max, V3 top-2 sum with bias and scaling) */
        route_case(&ctx, 0, 0, 8, 2, 2, 1, 0, 0, 0.0f, 41, 0);
        route_case(&ctx, 0, 1, 16, 3, 4, 2, 0, 0, 0.0f, 41, 0);
        route_case(&ctx, 1, 1, 256, 8, 8, 4, 1, 1, 2.5f, 41, 0);
        route_case(&ctx, 1, 1, 256, 8, 8, 4, 1, 1, 2.5f, 41, 1);
        route_case(&ctx, 1, 0, 384, 10, 8, 3, 1, 1, 1.0f, 17, 0);
        route_case(&ctx, 0, 1, 64, 6, 16, 2, 0, 1, 0.5f, 29, 1);
        route_case(&ctx, 1, 1, 12, 6, 3, 3, 1, 0, 0.0f, 13, 1);  /* topk = topk_group * E/G - 2 */
        route_case(&ctx, 1, 1, 12, 12, 3, 3, 1, 0, 0.0f, 13, 0); /* every expert */
        /* router softcap c tanh(l / c) before scoring */
        route_softcap = 2.5f;
        route_case(&ctx, 0, 1, 64, 6, 0, 0, 0, 0, 0.0f, 19, 0);
        route_case(&ctx, 1, 0, 16, 3, 4, 2, 1, 1, 1.5f, 19, 0);
        route_softcap = 0.0f;
    }
    printf("  near-tie rows checked for validity only: %ld\n", route_near_rows);

    TEST_SECTION("routing: explicit ties (lower id wins)");
    {
        float l[8] = {1, 3, 3, 0, 3, 2, 2, 3};
        float w[4];
        int32_t ids[4];
        amxk_moe_router r;
        memset(&r, 0, sizeof r);
        CHECK(amxk_moe_topk(NULL, &r, 1, 8, l, 8, 4, w, ids) == AMXK_OK, "ties");
        CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 4 && ids[3] == 7, "ids %d %d %d %d", ids[0], ids[1], ids[2], ids[3]);
        CHECK(w[0] == w[1] && w[1] == w[2] && w[2] == w[3], "equal weights");
        /* groups {0,1},{2,3},{4,5},{6,7}: max 3,3,3,3 -> tg=2 keeps groups 0,1 */
        r.num_expert_group = 4, r.topk_group = 2;
        CHECK(amxk_moe_topk(NULL, &r, 1, 8, l, 8, 3, w, ids) == AMXK_OK, "grouped ties");
        CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 0, "grouped ids %d %d %d", ids[0], ids[1], ids[2]);
        /* bias changes the selection, not the weights */
        {
            float bias[8] = {0, 0, 0, 10, 0, 0, 0, 0};
            r.num_expert_group = 0, r.correction_bias = bias, r.score = AMXK_MOE_SCORE_SIGMOID;
            CHECK(amxk_moe_topk(NULL, &r, 1, 8, l, 8, 2, w, ids) == AMXK_OK, "bias");
            CHECK(ids[0] == 3 && ids[1] == 1 && fabs(w[0] - 0.5) < 1e-7 && fabs(w[1] - 1.0 / (1.0 + exp(-3.0))) < 1e-7,
                  "bias ids %d %d w %g %g", ids[0], ids[1], w[0], w[1]);
        }
    }

    TEST_SECTION("routing: saturated scores follow the logit order (issue 16 item 1), bias tie rule, softcap");
    {
        amxk_moe_router r;
        float w[4], l2[2] = {30.0f, 40.0f}, l3[3] = {-200.0f, -150.0f, 0.0f};
        int32_t ids[4];
        memset(&r, 0, sizeof r);
        r.score = AMXK_MOE_SCORE_SIGMOID; /* sigmoid(30) == sigmoid(40) == 1.0f in fp32 */
        CHECK(amxk_moe_topk(NULL, &r, 1, 2, l2, 2, 1, w, ids) == AMXK_OK && ids[0] == 1 && w[0] == 1.0f, "sigmoid {30, 40} top-1: id %d", ids[0]);
        r.score = AMXK_MOE_SCORE_SOFTMAX; /* exp(-150) and exp(-200) both underflow to 0 in fp32 */
        CHECK(amxk_moe_topk(NULL, &r, 1, 3, l3, 3, 3, w, ids) == AMXK_OK && ids[0] == 2 && ids[1] == 1 && ids[2] == 0,
              "softmax underflow order %d %d %d", ids[0], ids[1], ids[2]);
        /* with a bias: equal fp32 choices (1.0f + 0.25f) -> the larger logit; equal logits -> the lower id */
        {
            float b2[2] = {0.25f, 0.25f}, l4[4] = {40.0f, 40.0f, 30.0f, 35.0f}, b4[4] = {0.5f, 0.5f, 0.5f, 0.5f};
            r.score = AMXK_MOE_SCORE_SIGMOID, r.correction_bias = b2;
            CHECK(amxk_moe_topk(NULL, &r, 1, 2, l2, 2, 1, w, ids) == AMXK_OK && ids[0] == 1, "bias tie: id %d", ids[0]);
            b2[0] = 0.5f; /* a real bias difference wins */
            CHECK(amxk_moe_topk(NULL, &r, 1, 2, l2, 2, 1, w, ids) == AMXK_OK && ids[0] == 0 && w[0] == 1.0f, "bias: id %d", ids[0]);
            r.correction_bias = b4;
            CHECK(amxk_moe_topk(NULL, &r, 1, 4, l4, 4, 4, w, ids) == AMXK_OK && ids[0] == 0 && ids[1] == 1 && ids[2] == 3 && ids[3] == 2,
                  "bias ties %d %d %d %d", ids[0], ids[1], ids[2], ids[3]);
            /* grouped (V3 top-2 sum): groups {0,1} sum 3.0, {2,3} sum 3.0 -> lower group id; then logit order */
            r.num_expert_group = 2, r.topk_group = 1, r.group_score_top2 = 1;
            CHECK(amxk_moe_topk(NULL, &r, 1, 4, l4, 4, 2, w, ids) == AMXK_OK && ids[0] == 0 && ids[1] == 1, "grouped bias ties %d %d", ids[0], ids[1]);
            l4[3] = 45.0f, r.group_score_top2 = 0; /* max: group {2,3}'s best (45) ranks first */
            CHECK(amxk_moe_topk(NULL, &r, 1, 4, l4, 4, 2, w, ids) == AMXK_OK && ids[0] == 3 && ids[1] == 2, "grouped max ties %d %d", ids[0], ids[1]);
        }
        /* softcap: weights are the scores of the capped logits */
        memset(&r, 0, sizeof r);
        r.score = AMXK_MOE_SCORE_SIGMOID, r.softcap = 30.0f;
        CHECK(amxk_moe_topk(NULL, &r, 1, 2, l2, 2, 2, w, ids) == AMXK_OK && ids[0] == 1 && ids[1] == 0 &&
                  fabs(w[0] - 1.0 / (1.0 + exp(-30.0 * tanh(40.0 / 30.0)))) < 1e-7 && fabs(w[1] - 1.0 / (1.0 + exp(-30.0 * tanh(1.0)))) < 1e-7,
              "softcap ids %d %d w %.9g %.9g", ids[0], ids[1], w[0], w[1]);
    }
    TEST_SECTION("routing: sglang topk_sigmoid-like rows (|logits| up to 40, E 8 / 16 / 32, top-1 and top-4): the largest logits win");
    {
        static const size_t Es2[3] = {8, 16, 32};
        size_t i2, t, e;
        TEST_FOR_EACH_TIER(tier, ctx) {
            for (i2 = 0; i2 < 3; i2++) {
                size_t M = 123, E = Es2[i2], k = i2 == 2 ? 4 : 1;
                float *l = (float *)malloc(M * E * 4), *tw = (float *)malloc(M * k * 4);
                int32_t *ids = (int32_t *)malloc(M * k * 4);
                long bad = 0, sat = 0;
                amxk_moe_router r;
                memset(&r, 0, sizeof r);
                r.score = AMXK_MOE_SCORE_SIGMOID, r.renormalize = k > 1;
                test_case_begin(test_case_mix(test_case_id("moe route sglang sigmoid", 0), E));
                for (t = 0; t < M * E; t++) l[t] = test_randf(-40, 40);
                CHECK(amxk_moe_topk(&ctx, &r, M, E, l, E, k, tw, ids) == AMXK_OK, "topk");
                for (t = 0; t < M; t++) {
                    int taken[32] = {0};
                    size_t j;
                    for (j = 0; j < k; j++) { /* j-th largest logit, lower id on equal logits */
                        size_t b = 0;
                        int have = 0;
                        for (e = 0; e < E; e++)
                            if (!taken[e] && (!have || l[t * E + e] > l[t * E + b])) b = e, have = 1;
                        taken[b] = 1;
                        bad += ids[t * k + j] != (int32_t)b;
                        sat += j == 0 && l[t * E + b] > 17.0f;
                    }
                }
                CHECK(bad == 0 && sat > 0, "tier %s E=%zu top-%zu: %ld ids differ from the logit order (%ld rows saturated)", amxk_tier_name(tier), E, k,
                      bad, sat);
                free(l), free(tw), free(ids);
            }
        }
    }

    TEST_SECTION("routing: thread-count invariance");
    {
        size_t M = 300, E = 128, k = 8, i2;
        float *l = (float *)malloc(M * E * 4), *w0 = (float *)malloc(M * k * 4), *w1 = (float *)malloc(M * k * 4);
        int32_t *i0 = (int32_t *)malloc(M * k * 4), *i1 = (int32_t *)malloc(M * k * 4);
        amxk_moe_router r;
        int wi;
        memset(&r, 0, sizeof r);
        r.renormalize = 1, r.num_expert_group = 8, r.topk_group = 4, r.group_score_top2 = 1, r.score = AMXK_MOE_SCORE_SIGMOID;
        test_case_begin(test_case_id("moe route invariance", 0));
        for (i2 = 0; i2 < M * E; i2++) l[i2] = test_randf(-3, 3);
        CHECK(amxk_moe_topk(NULL, &r, M, E, l, E, k, w0, i0) == AMXK_OK, "serial");
        for (wi = 0; wi < TEST_N_WORKER_COUNTS; wi++) {
            if (!test_ctx(&ctx, amxk_cpu_init()->best_tier, test_worker_counts[wi])) continue;
            memset(w1, 0, M * k * 4), memset(i1, 0, M * k * 4);
            CHECK(amxk_moe_topk(&ctx, &r, M, E, l, E, k, w1, i1) == AMXK_OK, "pool");
            CHECK(memcmp(w0, w1, M * k * 4) == 0 && memcmp(i0, i1, M * k * 4) == 0, "workers=%d differ", test_worker_counts[wi]);
        }
        free(l), free(w0), free(w1), free(i0), free(i1);
    }

    TEST_SECTION("routing: bad input -> status, outputs untouched");
    {
        float l[64], w[64], bias[16];
        int32_t ids[64];
        unsigned char w_ref[sizeof w], i_ref[sizeof ids];
        amxk_moe_router r;
        size_t i2;
        for (i2 = 0; i2 < 64; i2++) l[i2] = (float)i2 * 0.1f;
        for (i2 = 0; i2 < 16; i2++) bias[i2] = 0;
        memset(w, 0x7f, sizeof w), memset(ids, 0x7f, sizeof ids);
        memcpy(w_ref, w, sizeof w), memcpy(i_ref, ids, sizeof ids);
#define BAD_TOPK(expect, M_, E_, ld_, k_, ...)                                                                 \
    do {                                                                                                       \
        amxk_status s_;                                                                                        \
        memset(&r, 0, sizeof r);                                                                               \
        __VA_ARGS__;                                                                                           \
        s_ = amxk_moe_topk(NULL, &r, M_, E_, l, ld_, k_, w, ids);                                              \
        CHECK(s_ == (expect), "line %d: got %s", __LINE__, amxk_status_string(s_));                            \
        CHECK(memcmp(w, w_ref, sizeof w) == 0 && memcmp(ids, i_ref, sizeof ids) == 0, "line %d: written", __LINE__); \
    } while (0)
        BAD_TOPK(AMXK_ERR_SHAPE, 2, 8, 8, 9, (void)0);        /* topk > E */
        BAD_TOPK(AMXK_ERR_SHAPE, 2, 8, 8, 0, (void)0);        /* topk 0 */
        BAD_TOPK(AMXK_ERR_SHAPE, 0, 8, 8, 2, (void)0);
        BAD_TOPK(AMXK_ERR_SHAPE, 2, 0, 8, 2, (void)0);
        BAD_TOPK(AMXK_ERR_STRIDE, 2, 8, 7, 2, (void)0);
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.num_expert_group = 3, r.topk_group = 1); /* G does not divide E */
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.num_expert_group = 4, r.topk_group = 5); /* topk_group > G */
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.num_expert_group = 4, r.topk_group = 0);
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 5, r.num_expert_group = 4, r.topk_group = 2); /* topk > 2 * 2 */
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.num_expert_group = 8, r.topk_group = 2, r.group_score_top2 = 1);
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.score = (amxk_moe_score)7);
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.renormalize = 2);
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.routed_scaling_factor = NAN);
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, r.correction_bias = bias, bias[3] = NAN);
        bias[3] = 0;
        l[9] = NAN;
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, (void)0);
        l[9] = -INFINITY;
        BAD_TOPK(AMXK_ERR_ARG, 2, 8, 8, 2, (void)0);
        l[9] = 0.9f;
        CHECK(amxk_moe_topk(NULL, NULL, 2, 8, l, 8, 2, w, ids) == AMXK_ERR_NULL, "NULL router");
        memset(&r, 0, sizeof r);
        CHECK(amxk_moe_topk(NULL, &r, 2, 8, l, 8, 2, NULL, ids) == AMXK_ERR_NULL, "NULL w");
        CHECK(amxk_moe_topk(NULL, &r, 2, 8, l, 8, 2, (float *)(void *)ids, ids) == AMXK_ERR_ALIAS, "alias");
        CHECK(amxk_moe_topk(NULL, &r, 2, 8, l, 8, 2, l + 4, ids) == AMXK_ERR_ALIAS, "alias logits");
        CHECK(memcmp(w, w_ref, sizeof w) == 0 && memcmp(ids, i_ref, sizeof ids) == 0, "written");
    }
}

/* ============================== align ============================== */

static void align_case(size_t M, size_t topk, size_t E, size_t e0, size_t e1, size_t bm, int neg) {
    size_t R = M * topk, maxb, nb = 0, p, e, b, rb = 0, rows = 0, cap;
    int32_t *ids = (int32_t *)test_alloc(R * 4), *sorted, *bexp, *brow;
    int32_t *rs, *re, *rr;
    amxk_status s;
    long bad = 0;
    test_case_begin(test_case_mix(test_case_mix(test_case_mix(test_case_id("moe align", M), topk), test_case_mix(E, e0)),
                                  test_case_mix(test_case_mix(e1, bm), (uint64_t)neg)));
    for (p = 0; p < R; p++) ids[p] = (neg && test_randint(0, 5) == 0) ? -1 : test_randint(0, (int)E - 1);
    CHECK(amxk_moe_align_size(M, topk, E, bm, &maxb) == AMXK_OK, "align_size");
    cap = maxb * bm;
    sorted = (int32_t *)test_alloc(cap * 4), bexp = (int32_t *)test_alloc(maxb * 4), brow = (int32_t *)test_alloc((maxb + 1) * 4);
    rs = (int32_t *)malloc((cap + 1) * 4), re = (int32_t *)malloc((maxb + 1) * 4), rr = (int32_t *)malloc((maxb + 1) * 4);
    s = amxk_moe_align(NULL, M, topk, ids, E, e0, e1, bm, sorted, bexp, brow, maxb, &nb);
    CHECK(s == AMXK_OK, "align: %s", amxk_status_string(s));
    if (e0 == 0 && e1 == 0) e1 = E;
    for (e = e0; e < e1; e++) { /* reference */
        size_t c = 0;
        for (p = 0; p < R; p++)
            if (ids[p] == (int32_t)e) {
                if (c % bm == 0) re[rb] = (int32_t)e, rr[rb] = (int32_t)rows, rb++;
                rs[(rb - 1) * bm + c % bm] = (int32_t)p;
                c++, rows++;
            }
        if (c % bm)
            for (; c % bm; c++) rs[(rb - 1) * bm + c % bm] = (int32_t)R;
    }
    rr[rb] = (int32_t)rows;
    CHECK(nb == rb && nb <= maxb, "blocks %zu want %zu (max %zu)", nb, rb, maxb);
    for (b = 0; b < rb && b < nb; b++) {
        bad += bexp[b] != re[b];
        bad += brow[b] != rr[b];
        for (p = 0; p < bm; p++) bad += sorted[b * bm + p] != rs[b * bm + p];
    }
    if (nb == rb) bad += brow[nb] != rr[rb];
    for (p = nb * bm; p < cap; p++) bad += sorted[p] != -1; /* untouched (0xFF poison) */
    CHECK(bad == 0, "align M=%zu topk=%zu E=%zu [%zu,%zu) bm=%zu: %ld mismatches", M, topk, E, e0, e1, bm, bad);
    CHECK(test_guard_ok(sorted) && test_guard_ok(bexp) && test_guard_ok(brow), "align guards");
    test_free(ids), test_free(sorted), test_free(bexp), test_free(brow);
    free(rs), free(re), free(rr);
}

static void test_align(void) {
    TEST_SECTION("align: blocks, padding, stable order, shards");
    align_case(1, 1, 1, 0, 0, 1, 0);
    align_case(7, 2, 4, 0, 0, 4, 0);
    align_case(33, 8, 128, 0, 0, 32, 1);
    align_case(100, 10, 512, 0, 0, 16, 1);
    align_case(50, 4, 16, 4, 12, 8, 1);
    align_case(5, 3, 3, 0, 0, 1, 0);
    align_case(64, 1, 2, 1, 2, 32, 0);
    {
        int32_t ids[4] = {0, 1, -2, 2}, s[64], be[16], br[17];
        size_t nb = 99;
        memset(s, 0x55, sizeof s);
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 0, 0, 4, s, be, br, 16, &nb) == AMXK_ERR_ARG && nb == 99, "id -2");
        ids[2] = 3;
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 0, 0, 4, s, be, br, 16, &nb) == AMXK_ERR_ARG && nb == 99, "id E");
        ids[2] = 1;
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 2, 1, 4, s, be, br, 16, &nb) == AMXK_ERR_ARG, "bad shard");
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 0, 4, 4, s, be, br, 16, &nb) == AMXK_ERR_ARG, "shard > E");
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 0, 0, 4, s, be, br, 2, &nb) == AMXK_ERR_WORKSPACE, "capacity");
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 0, 0, 0, s, be, br, 16, &nb) == AMXK_ERR_SHAPE, "block_m 0");
        CHECK(s[0] == 0x55555555 && nb == 99, "untouched");
        CHECK(amxk_moe_align(NULL, 2, 2, ids, 3, 0, 0, 4, s, be, br, 3, &nb) == AMXK_OK && nb == 3, "exact capacity");
    }
}

/* ============================== fused experts ============================== */

typedef struct mformat {
    const char *name;
    int quant; /* 0: 16-bit pack of x dtype */
    amxk_quant q;
} mformat;

/* Weights of E experts + shared, packed in one format, with their dequantized f32 copies. */
typedef struct mset {
    size_t E, K, N, Ns;
    amxk_dtype xt;
    int quant;
    size_t b13, b2, sb13, sb2; /* bytes per pack */
    unsigned char *w13, *w2, *sw13, *sw2;
    float *d13, *d2, *sd13, *sd2; /* dequantized: [E][2N][K], [E][K][N], [2Ns][K], [K][Ns] */
    float *bias13, *bias2, *sbias13, *sbias2, *sgate; /* sgate: [K] shared-expert gate weights */
    const void **p13, **p2;
    size_t *pb13, *pb2;
} mset;

static size_t pack_bytes(const mformat *f, amxk_dtype xt, size_t n, size_t k) {
    size_t b = 0;
    amxk_status s = f->quant ? amxk_pack_quant_size(&f->q, n, k, &b) : amxk_pack_linear_size(xt, n, k, &b);
    if (s != AMXK_OK) {
        printf("pack size %s: %s\n", f->name, amxk_status_string(s));
        exit(2);
    }
    return b;
}
static void pack_one(const mformat *f, amxk_dtype xt, void *dst, size_t bytes, size_t n, size_t k, float *deq, double scale) {
    float *w = (float *)malloc(n * k * 4);
    size_t i;
    amxk_status s;
    for (i = 0; i < n * k; i++) w[i] = (float)(test_uniform(-1, 1) * scale);
    if (f->quant && f->q.format == AMXK_QFMT_MXFP4) /* rows of different magnitudes: scales that differ between columns */
        for (i = 0; i < n * k; i++) w[i] = (float)ldexp(w[i], (int)((i / k) * 7 % 5) - 2);
    s = f->quant ? amxk_quantize_pack(NULL, dst, bytes, &f->q, w, AMXK_DTYPE_F32, n, k, k)
                 : amxk_pack_linear(NULL, dst, bytes, xt, w, AMXK_DTYPE_F32, n, k, k);
    if (s == AMXK_OK) s = amxk_dequantize(dst, bytes, deq, k);
    if (s != AMXK_OK) {
        printf("pack %s: %s\n", f->name, amxk_status_string(s));
        exit(2);
    }
    free(w);
}
static void mset_make(mset *ms, const mformat *f, amxk_dtype xt, size_t E, size_t K, size_t N, size_t Ns) {
    size_t e, i;
    memset(ms, 0, sizeof *ms);
    ms->E = E, ms->K = K, ms->N = N, ms->Ns = Ns, ms->xt = xt, ms->quant = f->quant;
    ms->b13 = pack_bytes(f, xt, 2 * N, K), ms->b2 = pack_bytes(f, xt, K, N);
    ms->sb13 = pack_bytes(f, xt, 2 * Ns, K), ms->sb2 = pack_bytes(f, xt, K, Ns);
    ms->w13 = (unsigned char *)test_alloc(E * ms->b13), ms->w2 = (unsigned char *)test_alloc(E * ms->b2);
    ms->sw13 = (unsigned char *)test_alloc(ms->sb13), ms->sw2 = (unsigned char *)test_alloc(ms->sb2);
    ms->d13 = (float *)malloc(E * 2 * N * K * 4), ms->d2 = (float *)malloc(E * K * N * 4);
    ms->sd13 = (float *)malloc(2 * Ns * K * 4), ms->sd2 = (float *)malloc(K * Ns * 4);
    ms->bias13 = (float *)test_alloc(E * 2 * N * 4), ms->bias2 = (float *)test_alloc(E * K * 4);
    ms->sbias13 = (float *)test_alloc(2 * Ns * 4), ms->sbias2 = (float *)test_alloc(K * 4);
    ms->p13 = (const void **)malloc(E * sizeof(void *)), ms->p2 = (const void **)malloc(E * sizeof(void *));
    ms->pb13 = (size_t *)malloc(E * sizeof(size_t)), ms->pb2 = (size_t *)malloc(E * sizeof(size_t));
    for (e = 0; e < E; e++) {
        pack_one(f, xt, ms->w13 + e * ms->b13, ms->b13, 2 * N, K, ms->d13 + e * 2 * N * K, 0.25);
        pack_one(f, xt, ms->w2 + e * ms->b2, ms->b2, K, N, ms->d2 + e * K * N, 0.25);
        ms->p13[e] = ms->w13 + e * ms->b13, ms->p2[e] = ms->w2 + e * ms->b2, ms->pb13[e] = ms->b13, ms->pb2[e] = ms->b2;
    }
    pack_one(f, xt, ms->sw13, ms->sb13, 2 * Ns, K, ms->sd13, 0.25);
    pack_one(f, xt, ms->sw2, ms->sb2, K, Ns, ms->sd2, 0.25);
    for (i = 0; i < E * 2 * N; i++) ms->bias13[i] = test_randf(-0.5f, 0.5f);
    for (i = 0; i < E * K; i++) ms->bias2[i] = test_randf(-0.5f, 0.5f);
    for (i = 0; i < 2 * Ns; i++) ms->sbias13[i] = test_randf(-0.5f, 0.5f);
    for (i = 0; i < K; i++) ms->sbias2[i] = test_randf(-0.5f, 0.5f);
    ms->sgate = (float *)test_alloc(K * 4);
    for (i = 0; i < K; i++) ms->sgate[i] = test_randf(-0.25f, 0.25f);
}
static void mset_free(mset *ms) {
    test_free(ms->w13), test_free(ms->w2), test_free(ms->sw13), test_free(ms->sw2);
    free(ms->d13), free(ms->d2), free(ms->sd13), free(ms->sd2);
    test_free(ms->bias13), test_free(ms->bias2), test_free(ms->sbias13), test_free(ms->sbias2), test_free(ms->sgate);
    free(ms->p13), free(ms->p2), free(ms->pb13), free(ms->pb2);
}

typedef struct mcase {
    size_t M, topk, ldx, ldo;
    amxk_dtype ot;
    int act, bias, on_input, interleaved, shared, arrays, inplace;
    size_t e0, e1;
    float alpha, limit, rsf;
    int routing; /* 0 random distinct, 1 all to expert 1, 2 random with -1 and duplicates, 3 only even experts,
                    4 runs of tokens 0-32, 33-37, 38-44, 45-61, 62-66, 67-: experts 3, 0, 2, 1, 4, 3 (+ j, mod E),
                    6 runs of tokens 0, 1-7, 8-15, 16-24, 25-41, 42-: experts 0-5 (+ j, mod E) */
    int q8;      /* opts.act_int8 */
    int map;     /* opts.expert_map: global ids 0..2E, local expert E-1-(g-1)/2 at odd g, -1 at even g */
    int rin;     /* opts.routed_in: 0 none, 1 f32 [M, K+2], 2 bf16 [M, K], 3 out itself (pre-filled) */
    int sgate;   /* shared->gate (bias 0.3) */
    uint64_t id; /* the case id: moe_case draws x, ids and weights from test_case_begin(id) */
} mcase;

static double ref_sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* act value and its magnitude term for the tolerance */
static double ref_act(const mcase *c, double g, double u, double gg, double gu, double *mag) {
    double f, a, L, up;
    if (c->act == AMXK_MOE_ACT_SWIGLU_OAI) {
        double gc = g < c->limit ? g : c->limit, uc = u < -c->limit ? -c->limit : u > c->limit ? c->limit : u;
        f = gc * ref_sig(c->alpha * gc), up = uc + 1.0, L = 1.0 + fabs(c->alpha * gc) / 4.0;
    } else if (c->act == AMXK_MOE_ACT_GELU_ERF) {
        f = 0.5 * g * (1.0 + erf(g / sqrt(2.0))), up = u, L = 1.2;
    } else if (c->act == AMXK_MOE_ACT_GELU_TANH) {
        f = 0.5 * g * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (g + 0.044715 * g * g * g))), up = u, L = 1.2;
    } else {
        f = g * ref_sig(g), up = u, L = 1.2;
    }
    a = f * up;
    *mag = L * fabs(up) * gg + fabs(f) * gu;
    return a;
}

/* One MLP row in double: y[K] += wt * (W2 act(W13 x + b13) + b2); B, S accumulate the bound terms. */
static void ref_mlp(const mcase *c, const double *x, size_t K, size_t N, const float *w13, const float *w2, const float *b13,
                    const float *b2, int inter, double wt, double *y, double *B, double *S) {
    double *a = (double *)malloc(N * sizeof(double)), *mag = (double *)malloc(N * sizeof(double));
    size_t n, k;
    for (n = 0; n < N; n++) {
        size_t rg = inter ? 2 * n : n, ru = inter ? 2 * n + 1 : N + n;
        double g = b13 ? b13[rg] : 0, u = b13 ? b13[ru] : 0, gg = 0, gu = 0;
        for (k = 0; k < K; k++) {
            g += x[k] * w13[rg * K + k], gg += fabs(x[k] * w13[rg * K + k]);
            u += x[k] * w13[ru * K + k], gu += fabs(x[k] * w13[ru * K + k]);
        }
        a[n] = ref_act(c, g, u, gg, gu, &mag[n]);
    }
    for (k = 0; k < K; k++) {
        double s = b2 ? b2[k] : 0, bb = 0, ss = b2 ? fabs(b2[k]) : 0;
        for (n = 0; n < N; n++) s += w2[k * N + n] * a[n], bb += fabs(w2[k * N + n]) * mag[n], ss += fabs(w2[k * N + n] * a[n]);
        y[k] += wt * s, B[k] += fabs(wt) * bb, S[k] += fabs(wt) * ss; /* S: |terms| incl. sum |W2 a| */
    }
    free(a), free(mag);
}

/* act_int8 reference, written from the documentation: per-token symmetric int8 of a row of floats,
   s = amax / 127 in fp32 (1 when amax is 0), q = clamp(round-half-even(x / s in fp32), -127, 127). */
static float ref_quant8(const float *x, size_t n, double *q) {
    float amax = 0.0f, s;
    size_t i;
    for (i = 0; i < n; i++) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    s = amax / 127.0f;
    if (!(s > 0.0f)) s = 1.0f;
    for (i = 0; i < n; i++) {
        double r = nearbyint((double)(x[i] / s)); /* the quotient in fp32, then ties to even */
        q[i] = r > 127 ? 127 : r < -127 ? -127 : r;
    }
    return s;
}

/* One MLP row with act_int8, in double: x (the exact 16-bit input values) quantized as above, h =
   sx * sum_k q_k W13[n,k] + b13 (exact up to amxk's fp32 group sums), activation in double, the
   intermediate quantized per row the same way, y[K] += wt * (sa * sum_n qa_n W2[k,n] + b2).
   The intermediate is only known to amxk in fp32, so an element of it whose a / sa lies within its
   error bound of a rounding boundary (k + 1/2) may round to the neighbouring integer: F[k] gets one
   step (sa |W2[k,n]|) for each such n. S[k] gets the fp32 sums (c32) and the error of sa (es) times
   sa sum_n |qa_n W2[k,n]|. Error bound of the activation: first-order propagation of h's c32 error
   (ref_act's mag) plus an absolute 2^-18 (|g| + 1)(|up| + 1) for expf / tanhf and the fp32 math. */
static void ref_mlp_q8(const mcase *c, const float *x, size_t K, size_t N, const float *w13, const float *w2, const float *b13,
                       const float *b2, int inter, double wt, double *y, double *F, double *S) {
    const double c32 = ldexp(1, -19);
    double *q = (double *)malloc(K * sizeof(double)), *a = (double *)malloc(N * sizeof(double));
    double *ea = (double *)malloc(N * sizeof(double)), *qa = (double *)malloc(N * sizeof(double));
    double amax = 0, sa, es = 0, sx = ref_quant8(x, K, q);
    size_t n, k;
    for (n = 0; n < N; n++) {
        size_t rg = inter ? 2 * n : n, ru = inter ? 2 * n + 1 : N + n;
        double g = 0, u = 0, gg = 0, gu = 0, mag;
        for (k = 0; k < K; k++) {
            g += q[k] * w13[rg * K + k], gg += fabs(q[k] * w13[rg * K + k]);
            u += q[k] * w13[ru * K + k], gu += fabs(q[k] * w13[ru * K + k]);
        }
        g = sx * g + (b13 ? b13[rg] : 0), u = sx * u + (b13 ? b13[ru] : 0);
        gg = c32 * (sx * gg + (b13 ? fabs(b13[rg]) : 0)), gu = c32 * (sx * gu + (b13 ? fabs(b13[ru]) : 0));
        a[n] = ref_act(c, g, u, gg, gu, &mag);
        ea[n] = mag + ldexp(1, -18) * (fabs(g) + 1) * (fabs(u) + 2);
        amax = fabs(a[n]) > amax ? fabs(a[n]) : amax;
    }
    sa = amax > 0 ? amax / 127 : 1;
    for (n = 0; n < N; n++) es = ea[n] > es ? ea[n] : es;
    es = (amax > 0 ? es / amax : 0) + ldexp(1, -22);
    for (n = 0; n < N; n++) {
        double v = a[n] / sa, r = nearbyint(v), band = ea[n] / sa + fabs(v) * es;
        qa[n] = r > 127 ? 127 : r < -127 ? -127 : r;
        ea[n] = fabs(v - floor(v) - 0.5) <= band; /* from here: 1 when the element may round the other way */
    }
    for (k = 0; k < K; k++) {
        double acc = 0, mag = 0, flips = 0;
        for (n = 0; n < N; n++) {
            acc += qa[n] * w2[k * N + n], mag += fabs(qa[n] * w2[k * N + n]);
            if (ea[n] != 0) flips += fabs(w2[k * N + n]);
        }
        y[k] += wt * (sa * acc + (b2 ? b2[k] : 0));
        S[k] += fabs(wt) * ((c32 + es) * sa * mag + c32 * (b2 ? fabs(b2[k]) : 0));
        F[k] += fabs(wt) * sa * flips;
    }
    free(q), free(a), free(ea), free(qa);
}

static double dec_out(const void *p, amxk_dtype t, size_t i) {
    return t == AMXK_DTYPE_F32 ? ((const float *)p)[i] : test_ref_decode(t, ((const uint16_t *)p)[i]);
}

static int32_t gmap(const mcase *c, size_t E, size_t g) { /* the test's expert map */
    (void)c;
    return g % 2 && (g - 1) / 2 < E ? (int32_t)(E - 1 - (g - 1) / 2) : -1;
}
static void fill_ids(const mcase *c, size_t E, int32_t *ids, float *tw) {
    size_t t, j;
    if (c->map) E = 2 * E + 1; /* global ids */
    for (t = 0; t < c->M; t++)
        for (j = 0; j < c->topk; j++) {
            int32_t id;
            if (c->routing == 1) id = 1;
            else if (c->routing == 4) id = (int32_t)((t < 33 ? 3 : t < 38 ? 0 : t < 45 ? 2 : t < 62 ? 1 : t < 67 ? 4 : 3) + j) % (int32_t)E;
            else if (c->routing == 5) id = (int32_t)((t < 1 ? 4 : t < 6 ? 0 : t < 23 ? 1 : t < 30 ? 2 : 3) + j) % (int32_t)E;
            else if (c->routing == 6) id = (int32_t)((t < 1 ? 0 : t < 8 ? 1 : t < 16 ? 2 : t < 25 ? 3 : t < 42 ? 4 : 5) + j) % (int32_t)E;
            else if (c->routing == 2) id = test_randint(0, 6) == 0 ? -1 : test_randint(0, (int)E - 1);
            else if (c->routing == 3) id = 2 * test_randint(0, (int)(E - 1) / 2);
            else {
                size_t jj;
                int dup;
                do {
                    id = test_randint(0, (int)E - 1);
                    for (dup = 0, jj = 0; jj < j; jj++) dup |= ids[t * c->topk + jj] == id;
                } while (dup && c->topk <= E);
            }
            ids[t * c->topk + j] = id;
            tw[t * c->topk + j] = test_randf(0.05f, 1.0f);
        }
}

static double q8_worst; /* act_int8 cases: the largest |out - ref| / tol seen */
static int ws_fill = -1;  /* >= 0: moe_case fills the workspace with this byte before the call (else test_alloc's 0xff) */

/* Runs one case on ctx; returns the output bytes in *out_copy (malloc'ed) when asked. */
static void moe_case(const amxk_ctx *ctx, const mset *ms, const mcase *c, const char *fname, unsigned char **out_copy) {
    size_t M = c->M, K = ms->K, N = ms->N, topk = c->topk, t, j, k, ws_bytes = 0, xbytes, obytes, ldo = c->inplace ? c->ldx : c->ldo;
    amxk_dtype ot = c->inplace ? ms->xt : c->ot;
    void *x = test_alloc((xbytes = ((M - 1) * c->ldx + K) * 2)), *out, *ws;
    float *tw = topk ? (float *)test_alloc(M * topk * 4) : NULL;
    int32_t *ids = topk ? (int32_t *)test_alloc(M * topk * 4) : NULL, *map = NULL;
    size_t ldr = c->rin == 1 ? K + 2 : c->rin == 3 ? (c->inplace ? c->ldx : c->ldo) : K;
    amxk_dtype rt = c->rin == 1 ? AMXK_DTYPE_F32 : c->rin == 2 ? AMXK_DTYPE_BF16 : c->inplace ? ms->xt : c->ot;
    double *rabs = (double *)malloc(K * sizeof(double)), *Rv = c->rin ? (double *)malloc(M * K * sizeof(double)) : NULL;
    void *rin = NULL;
    double *xd = (double *)malloc(K * sizeof(double)), *y = (double *)malloc(K * sizeof(double));
    double *B = (double *)malloc(K * sizeof(double)), *S = (double *)malloc(K * sizeof(double)), *ysh = (double *)malloc(K * sizeof(double));
    double *Bs = (double *)malloc(K * sizeof(double)), *Ss = (double *)malloc(K * sizeof(double)), *xw = (double *)malloc(K * sizeof(double));
    double *yabs = (double *)malloc(K * sizeof(double)), *ylast = (double *)malloc(K * sizeof(double));
    float *xf = (float *)malloc(K * sizeof(float));
    amxk_moe_weights w;
    amxk_moe_shared sh;
    amxk_moe_opts o;
    amxk_status s;
    long bad = 0, gaps_bad = 0;
    double eps_out = ot == AMXK_DTYPE_F32 ? 0 : ot == AMXK_DTYPE_BF16 ? ldexp(1, -8) : ldexp(1, -11), worst = 0;
    double u16 = ms->xt == AMXK_DTYPE_BF16 ? ldexp(1, -8) : ldexp(1, -11); /* half an ulp of x's dtype */
    /* ca: on sum |W2| |a|: the activation rounding (u16) + the AMX rounding of quantized W2 (u16)
       + fp32 sums, times 2 for margin; cg: on the propagated gate/up error: apply-on-input rounding
       of x (u16) + the AMX rounding of quantized W13 (u16) + fp32 sums */
    double ca = 2 * (u16 + (ms->quant ? u16 : 0) + ldexp(1, -16));
    double cg = 2 * ((c->on_input ? u16 : 0) + (ms->quant ? u16 : 0) + ldexp(1, -16));
    size_t e0 = c->e0, e1 = c->e1 ? c->e1 : ms->E;
    unsigned char *xcopy;
    test_case_begin(c->id); /* called inside tier loops: the same data on every tier */
    for (t = 0; t < M; t++)
        for (k = 0; k < K; k++) ((uint16_t *)x)[t * c->ldx + k] = (uint16_t)test_ref_encode(ms->xt, test_randf(-1, 1));
    xcopy = (unsigned char *)malloc(xbytes);
    memcpy(xcopy, x, xbytes);
    fill_ids(c, ms->E, ids, tw);
    if (c->map) {
        map = (int32_t *)test_alloc((2 * ms->E + 1) * 4);
        for (t = 0; t < 2 * ms->E + 1; t++) map[t] = gmap(c, ms->E, t);
    }
    if (c->rin) { /* R: values exact in its dtype */
        for (t = 0; t < M * K; t++) Rv[t] = rt == AMXK_DTYPE_F32 ? (double)test_randf(-1, 1) : test_ref_decode(rt, test_ref_encode(rt, test_randf(-1, 1)));
        if (c->rin != 3) {
            rin = test_alloc(((M - 1) * ldr + K) * amxk_dtype_size(rt));
            for (t = 0; t < M; t++)
                for (k = 0; k < K; k++) {
                    if (rt == AMXK_DTYPE_F32) ((float *)rin)[t * ldr + k] = (float)Rv[t * K + k];
                    else ((uint16_t *)rin)[t * ldr + k] = (uint16_t)test_ref_encode(rt, Rv[t * K + k]);
                }
        }
    }
    memset(&w, 0, sizeof w);
    w.n_experts = ms->E, w.hidden = K, w.inter = N, w.w13_interleaved = c->interleaved;
    if (c->arrays) w.w13 = ms->p13, w.w13_bytes = ms->pb13, w.w2 = ms->p2, w.w2_bytes = ms->pb2;
    else w.w13_base = ms->w13, w.w13_stride = ms->b13, w.w2_base = ms->w2, w.w2_stride = ms->b2;
    if (c->bias) w.b13 = ms->bias13, w.b2 = ms->bias2;
    memset(&sh, 0, sizeof sh);
    sh.inter = ms->Ns, sh.w13 = ms->sw13, sh.w13_bytes = ms->sb13, sh.w2 = ms->sw2, sh.w2_bytes = ms->sb2;
    sh.w13_interleaved = c->interleaved;
    if (c->bias) sh.b13 = ms->sbias13, sh.b2 = ms->sbias2;
    if (c->sgate) sh.gate = ms->sgate, sh.gate_bias = 0.3f;
    memset(&o, 0, sizeof o);
    o.act = (amxk_moe_act)c->act, o.alpha = c->alpha, o.limit = c->limit, o.apply_router_weight_on_input = c->on_input;
    o.e_begin = c->e0, o.e_end = c->e1, o.routed_scaling_factor = c->rsf, o.act_int8 = c->q8;
    o.expert_map = map, o.n_global_experts = c->map ? 2 * ms->E + 1 : 0;
    s = amxk_moe_workspace_size(ctx, &w, c->shared ? &sh : NULL, &o, M, topk, &ws_bytes);
    CHECK(s == AMXK_OK, "ws size: %s", amxk_status_string(s));
    ws = test_alloc(ws_bytes);
    if (ws_fill >= 0) memset(ws, ws_fill, ws_bytes);
    obytes = ((M - 1) * ldo + K) * amxk_dtype_size(ot);
    out = c->inplace ? x : test_alloc(obytes);
    if (c->rin == 3) { /* routed_in = out: R written into out first */
        for (t = 0; t < M; t++)
            for (k = 0; k < K; k++) {
                if (rt == AMXK_DTYPE_F32) ((float *)out)[t * ldo + k] = (float)Rv[t * K + k];
                else ((uint16_t *)out)[t * ldo + k] = (uint16_t)test_ref_encode(rt, Rv[t * K + k]);
            }
        rin = out;
    }
    o.routed_in = rin, o.routed_dtype = rin ? rt : AMXK_DTYPE_INVALID, o.ld_routed = rin ? ldr : 0;
    s = amxk_moe_experts(ctx, &w, c->shared ? &sh : NULL, &o, M, x, ms->xt, c->ldx, topk, tw, ids, out, ot, ldo, ws, ws_bytes);
    CHECK(s == AMXK_OK, "moe %s tier %s: %s", fname, amxk_tier_name(ctx ? ctx->tier : AMXK_TIER_NONE), amxk_status_string(s));
    if (!c->inplace) test_dump(fname, ctx ? (int)ctx->tier : -2, out, obytes);
    for (t = 0; t < M && s == AMXK_OK; t++) {
        for (k = 0; k < K; k++)
            xd[k] = test_ref_decode(ms->xt, ((const uint16_t *)xcopy)[t * c->ldx + k]), y[k] = B[k] = S[k] = yabs[k] = ylast[k] = 0;
        for (j = 0; j < topk; j++) {
            int32_t e = ids[t * topk + j];
            double wt = tw[t * topk + j];
            if (c->map && e >= 0) e = gmap(c, ms->E, (size_t)e);
            if (e < 0 || (size_t)e < e0 || (size_t)e >= e1) continue;
            if (c->q8) { /* x row, or round16(fp32(w x)) with apply-on-input */
                for (k = 0; k < K; k++)
                    xf[k] = c->on_input ? (float)test_ref_decode(ms->xt, test_ref_encode(ms->xt, tw[t * topk + j] * (float)xd[k])) : (float)xd[k];
                ref_mlp_q8(c, xf, K, N, ms->d13 + (size_t)e * 2 * N * K, ms->d2 + (size_t)e * K * N,
                           c->bias ? ms->bias13 + (size_t)e * 2 * N : NULL, c->bias ? ms->bias2 + (size_t)e * K : NULL, c->interleaved,
                           c->on_input ? 1.0 : wt, y, B, S);
                for (k = 0; k < K; k++) yabs[k] += fabs(y[k] - ylast[k]), ylast[k] = y[k]; /* |w_j y_j| */
                continue;
            }
            if (c->on_input) {
                for (k = 0; k < K; k++) xw[k] = wt * xd[k];
                wt = 1.0;
            } else {
                memcpy(xw, xd, K * sizeof(double));
            }
            ref_mlp(c, xw, K, N, ms->d13 + (size_t)e * 2 * N * K, ms->d2 + (size_t)e * K * N, c->bias ? ms->bias13 + (size_t)e * 2 * N : NULL,
                    c->bias ? ms->bias2 + (size_t)e * K : NULL, c->interleaved, wt, y, B, S);
        }
        for (k = 0; k < K; k++) {
            double r = c->rsf != 0 ? c->rsf : 1.0;
            rabs[k] = c->rin ? ldexp(1, -22) * fabs(r) * (fabs(Rv[t * K + k]) + yabs[k] + fabs(y[k])) : 0; /* fp32 adds to R */
            if (c->rin) y[k] += Rv[t * K + k];
            y[k] *= r, B[k] *= fabs(r), S[k] *= fabs(r), ysh[k] = Bs[k] = Ss[k] = 0;
        }
        if (c->shared && c->q8) {
            for (k = 0; k < K; k++) xf[k] = (float)xd[k];
            ref_mlp_q8(c, xf, K, ms->Ns, ms->sd13, ms->sd2, c->bias ? ms->sbias13 : NULL, c->bias ? ms->sbias2 : NULL, c->interleaved,
                       1.0, ysh, Bs, Ss);
        } else if (c->shared) {
            ref_mlp(c, xd, K, ms->Ns, ms->sd13, ms->sd2, c->bias ? ms->sbias13 : NULL, c->bias ? ms->sbias2 : NULL, c->interleaved, 1.0,
                    ysh, Bs, Ss);
        }
        if (c->sgate) { /* sigmoid(x . gate + 0.3) times the shared row; fp32 dot and expf: 2^-20 of sum |x g| + 1 */
            double dot = 0.3, mag = 1.3, gt;
            for (k = 0; k < K; k++) dot += xd[k] * ms->sgate[k], mag += fabs(xd[k] * ms->sgate[k]);
            gt = 1.0 / (1.0 + exp(-dot));
            for (k = 0; k < K; k++) rabs[k] += ldexp(1, -20) * mag * fabs(ysh[k]), ysh[k] *= gt, Bs[k] *= gt, Ss[k] *= gt;
        }
        for (k = 0; k < K; k++) {
            double ref = y[k] + ysh[k], got = dec_out(out, ot, t * ldo + k);
            /* act_int8: S (fp32 sums, scale error) and B (= F, possible flips of the intermediate's
               rounding) are absolute bounds; the slot sum and the shared add in fp32 (2^-22 of the
               |terms|) */
            double tol = c->q8 ? eps_out * fabs(ref) + S[k] + Ss[k] + B[k] + Bs[k] + ldexp(1, -22) * (yabs[k] * fabs(c->rsf != 0 ? c->rsf : 1.0) + fabs(ysh[k])) + 1e-30
                               : eps_out * fabs(ref) + ca * (S[k] + Ss[k]) + cg * (B[k] + Bs[k]) + 1e-30;
            tol += rabs[k];
            double err = fabs(got - ref);
            if (!(err <= tol)) {
                if (bad++ == 0)
                    printf("  %s: t=%zu k=%zu got %.9g want %.9g tol %.3g\n", fname, t, k, got, ref, tol);
            }
            if (tol > 0 && err / tol > worst) worst = err / tol;
        }
        if (!c->inplace) /* gaps between out rows untouched */
            for (k = K; k < ldo && t + 1 < M; k++)
                gaps_bad += ot == AMXK_DTYPE_F32 ? test_f32_bits(((float *)out)[t * ldo + k]) != 0xffffffffu
                                                 : ((uint16_t *)out)[t * ldo + k] != 0xffffu;
    }
    CHECK(bad == 0, "moe %s tier %s M=%zu topk=%zu act=%d bias=%d oninput=%d inter=%d shared=%d shard=[%zu,%zu) routing=%d inplace=%d out=%d q8=%d: %ld bad (worst ratio %.3g)",
          fname, amxk_tier_name(ctx ? ctx->tier : AMXK_TIER_NONE), M, topk, c->act, c->bias, c->on_input, c->interleaved, c->shared,
          e0, e1, c->routing, c->inplace, (int)ot, c->q8, bad, worst);
    if (c->q8 && worst > q8_worst) q8_worst = worst;
    CHECK(gaps_bad == 0, "out gaps written (%ld)", gaps_bad);
    CHECK(test_guard_ok(x) && test_guard_ok(ws) && (c->inplace || test_guard_ok(out)), "guards");
    if (out_copy) {
        *out_copy = (unsigned char *)malloc(obytes);
        memcpy(*out_copy, out, obytes);
    }
    if (!c->inplace) test_free(out);
    test_free(x), test_free(ws), test_free(tw), test_free(ids), test_free(map);
    if (c->rin != 3) test_free(rin);
    free(rabs), free(Rv);
    free(xd), free(y), free(B), free(S), free(ysh), free(Bs), free(Ss), free(xw), free(xcopy), free(yabs), free(ylast), free(xf);
}

static const mformat formats[] = {
    {"bf16", 0, {AMXK_QFMT_NONE, 0, 0, 0}},
    {"int4-sym-g16", 1, {AMXK_QFMT_INT4, 0, 1, 16}},
    {"int8-asym-g16", 1, {AMXK_QFMT_INT8, 1, 1, 16}},
    {"fp8e4m3-16x32", 1, {AMXK_QFMT_FP8_E4M3, 0, 16, 32}},
    {"int2-asym-g16", 1, {AMXK_QFMT_INT2, 1, 1, 16}},
    {"fp8e5m2-1xK", 1, {AMXK_QFMT_FP8_E5M2, 0, 1, 48}},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* act_int8 formats (the ones amxk_linear_q8 takes) and their N, Ns (groups divide K = 64, N and Ns;
   N % 16 != 0: the activation in its own pass). */
typedef struct q8format {
    mformat f;
    size_t N, Ns;
} q8format;
static const q8format q8_formats[] = {
    {{"int8-sym-g16", 1, {AMXK_QFMT_INT8, 0, 1, 16}}, 48, 32},
    {{"int8-sym-g8", 1, {AMXK_QFMT_INT8, 0, 1, 8}}, 40, 24},
    {{"int4-asym-g8", 1, {AMXK_QFMT_INT4, 1, 1, 8}}, 40, 24},
    {{"int4-sym-g32", 1, {AMXK_QFMT_INT4, 0, 1, 32}}, 64, 32},
    {{"int2-sym-g16", 1, {AMXK_QFMT_INT2, 0, 1, 16}}, 48, 16},
    {{"int2-asym-g32", 1, {AMXK_QFMT_INT2, 1, 1, 32}}, 64, 32},
};
#define N_Q8_FORMATS (sizeof q8_formats / sizeof q8_formats[0])

static void test_experts(void) {
    amxk_ctx ctx;
    amxk_tier tier;
    size_t fi;
    const size_t E = 6, K = 64;
    TEST_SECTION("fused experts vs fp64 reference: formats x activations x bias x apply-on-input, every tier");
    for (fi = 0; fi < N_FORMATS; fi++) {
        mset ms;
        /* N, Ns multiples of 16 (activation fused into the gate+up items) or not (separate pass; int
           groups of 16 must divide N, fp8 blocks may be partial) */
        size_t N = fi == 0 || fi == 3 ? 40 : 48, Ns = fi == 5 ? 24 : 32;
        test_case_begin(test_case_id("moe experts weights", fi));
        mset_make(&ms, &formats[fi], AMXK_DTYPE_BF16, E, K, N, Ns);
        TEST_FOR_EACH_TIER(tier, ctx) {
            int act, bias, oni, ci = 0;
            for (act = 0; act < 4; act++) /* act 3 (erf gelu, last: the earlier cases keep their ids) on every other format */
                for (bias = 0; bias < 2; bias++)
                    for (oni = 0; oni < 2; oni++, ci++) {
                        mcase c;
                        if (act == 3 && (fi % 2 || bias == oni)) continue;
                        memset(&c, 0, sizeof c);
                        c.M = ci % 3 == 0 ? 1 : ci % 3 == 1 ? 13 : 7;
                        c.topk = ci % 2 ? 2 : 3;
                        c.ldx = K + (size_t)(ci % 2) * 5, c.ldo = K + (size_t)(ci % 3) * 3;
                        c.ot = ci % 3 == 0 ? AMXK_DTYPE_F32 : ci % 3 == 1 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F16;
                        c.act = act, c.bias = bias, c.on_input = oni, c.interleaved = (ci / 2) % 2, c.shared = ci % 4 == 1;
                        c.arrays = ci % 2, c.alpha = 1.702f, c.limit = ci % 2 ? 7.0f : 0.25f, c.rsf = ci % 5 == 2 ? 2.5f : 0.0f;
                        c.routing = ci % 4;
                        if (ci % 6 == 5) c.e0 = 2, c.e1 = 5;
                        c.inplace = ci % 7 == 3;
                        if (c.inplace) c.ldo = c.ldx;
                        c.id = test_case_mix(test_case_id("moe experts", fi), (uint64_t)ci);
                        moe_case(&ctx, &ms, &c, formats[fi].name, NULL);
                    }
        }
        mset_free(&ms);
    }

    TEST_SECTION("fused experts, act_int8 (w8a8 / w4a8 / w2a8) vs fp64 reference of the documented quantization, every tier");
    for (fi = 0; fi < N_Q8_FORMATS; fi++) {
        mset ms;
        test_case_begin(test_case_id("moe experts q8 weights", fi));
        mset_make(&ms, &q8_formats[fi].f, AMXK_DTYPE_BF16, E, K, q8_formats[fi].N, q8_formats[fi].Ns);
        TEST_FOR_EACH_TIER(tier, ctx) {
            int act, bias, oni, ci = 0;
            mcase c;
            for (act = 0; act < 4; act++) /* act 3: erf gelu, two cases on every other format */
                for (bias = 0; bias < 2; bias++)
                    for (oni = 0; oni < 2; oni++, ci++) {
                        if (act == 3 && (fi % 2 || bias == oni)) continue;
                        memset(&c, 0, sizeof c);
                        c.q8 = 1;
                        c.M = ci % 3 == 0 ? 1 : ci % 3 == 1 ? 13 : 7;
                        c.topk = ci % 2 ? 2 : 3;
                        c.ldx = K + (size_t)(ci % 2) * 5, c.ldo = K + (size_t)(ci % 3) * 3;
                        c.ot = ci % 3 == 0 ? AMXK_DTYPE_F32 : ci % 3 == 1 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F16;
                        c.act = act, c.bias = bias, c.on_input = oni, c.interleaved = (ci / 2) % 2, c.shared = ci % 4 == 1 || ci % 4 == 2;
                        c.arrays = ci % 2, c.alpha = 1.702f, c.limit = ci % 2 ? 7.0f : 0.25f, c.rsf = ci % 5 == 2 ? 2.5f : 0.0f;
                        c.routing = ci % 4;
                        if (ci % 6 == 5) c.e0 = 2, c.e1 = 5;
                        c.inplace = ci % 7 == 3;
                        if (c.inplace) c.ldo = c.ldx;
                        c.id = test_case_mix(test_case_id("moe experts q8", fi), (uint64_t)ci);
                        moe_case(&ctx, &ms, &c, q8_formats[fi].f.name, NULL);
                    }
            /* every token to one expert (M >= 5 rows: the AMX tile kernel), with the shared expert */
            memset(&c, 0, sizeof c);
            c.q8 = 1, c.M = 21, c.topk = 2, c.ldx = K, c.ldo = K, c.ot = AMXK_DTYPE_F32, c.bias = 1, c.shared = 1, c.routing = 1;
            c.id = test_case_mix(test_case_id("moe experts q8", fi), 100);
            moe_case(&ctx, &ms, &c, q8_formats[fi].f.name, NULL);
            c.routing = 0, c.on_input = 1, c.shared = 0, c.M = 30, c.topk = 3; /* about 15 rows per expert */
            c.id = test_case_mix(test_case_id("moe experts q8", fi), 101);
            moe_case(&ctx, &ms, &c, q8_formats[fi].f.name, NULL);
        }
        mset_free(&ms);
    }

    printf("  act_int8: largest |out - ref| / tolerance: %.3g\n", q8_worst);

    TEST_SECTION("fused experts: fp16 activations and packs, big expert groups (AMX path), M = 1");
    {
        mformat f16 = {"fp16", 0, {AMXK_QFMT_NONE, 0, 0, 0}};
        mset ms;
        test_case_begin(test_case_id("moe fp16 weights", 0));
        mset_make(&ms, &f16, AMXK_DTYPE_F16, 4, 64, 32, 16);
        TEST_FOR_EACH_TIER(tier, ctx) {
            mcase c;
            memset(&c, 0, sizeof c);
            c.M = 20, c.topk = 2, c.ldx = 64, c.ldo = 64, c.ot = AMXK_DTYPE_F16, c.bias = 1, c.shared = 1, c.routing = 0;
            c.id = test_case_id("moe fp16", 0);
            moe_case(&ctx, &ms, &c, "fp16", NULL);
            c.routing = 1, c.act = AMXK_MOE_ACT_GELU_TANH, c.ot = AMXK_DTYPE_F32; /* all tokens to one expert */
            c.id = test_case_id("moe fp16", 1);
            moe_case(&ctx, &ms, &c, "fp16 one expert", NULL);
            c.M = 1, c.topk = 4, c.routing = 0;
            c.id = test_case_id("moe fp16", 2);
            moe_case(&ctx, &ms, &c, "fp16 M=1 topk=E", NULL);
        }
        mset_free(&ms);
    }
    {
        mset ms;
        test_case_begin(test_case_id("moe fp16 q8 weights", 0));
        mset_make(&ms, &q8_formats[2].f, AMXK_DTYPE_F16, 4, 64, 40, 16); /* int4 asym packs, fp16 x, act_int8 */
        TEST_FOR_EACH_TIER(tier, ctx) {
            mcase c;
            memset(&c, 0, sizeof c);
            c.q8 = 1, c.M = 20, c.topk = 2, c.ldx = 64, c.ldo = 64, c.ot = AMXK_DTYPE_F16, c.bias = 1, c.shared = 1, c.routing = 0;
            c.id = test_case_id("moe fp16 q8", 0);
            moe_case(&ctx, &ms, &c, "fp16 x, int4 act_int8", NULL);
            c.M = 1, c.topk = 4, c.on_input = 1, c.act = AMXK_MOE_ACT_GELU_TANH;
            c.id = test_case_id("moe fp16 q8", 1);
            moe_case(&ctx, &ms, &c, "fp16 x, int4 act_int8 M=1", NULL);
        }
        mset_free(&ms);
    }

    TEST_SECTION("fused experts: expert map (global -> local), routed input (+ shared expert: sglang shared_expert_cpu), topk = 0");
    for (fi = 0; fi < 3; fi++) { /* bf16, int4 (w*a16) and int4-sym-g32 with act_int8 */
        mset ms;
        test_case_begin(test_case_id("moe map weights", fi));
        if (fi < 2) mset_make(&ms, &formats[fi], AMXK_DTYPE_BF16, E, K, fi ? 48 : 40, 32);
        else mset_make(&ms, &q8_formats[3].f, AMXK_DTYPE_BF16, E, K, 64, 32);
        TEST_FOR_EACH_TIER(tier, ctx) {
            int ci;
            for (ci = 0; ci < 8; ci++) { /* 6, 7: shared gate (7: topk = 0 with routed input) */
                mcase c;
                memset(&c, 0, sizeof c);
                c.q8 = fi == 2, c.M = ci % 2 ? 9 : 1, c.topk = ci < 3 ? 3 : ci == 5 ? 2 : 0, c.ldx = K, c.ldo = K + 3, c.bias = ci % 2;
                c.ot = ci % 3 == 0 ? AMXK_DTYPE_F32 : ci % 3 == 1 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F16;
                c.map = ci < 3 || ci == 5, c.routing = ci == 1 ? 2 : 0, c.shared = ci >= 2, c.rsf = ci >= 3 ? 16.0f : ci == 2 ? 2.5f : 0.0f;
                c.rin = ci == 2 ? 1 : ci == 3 ? 2 : ci >= 4 ? 3 : 0, c.act = ci == 4 ? AMXK_MOE_ACT_GELU_ERF : AMXK_MOE_ACT_SILU;
                if (ci == 1) c.e0 = 1, c.e1 = 5; /* a shard of the local experts */
                if (ci >= 6) c.sgate = 1, c.shared = 1, c.map = 0, c.topk = ci == 6 ? 2 : 0, c.rin = ci == 7 ? 2 : 0, c.M = 13;
                c.id = test_case_mix(test_case_id("moe map", fi), (uint64_t)ci);
                moe_case(&ctx, &ms, &c, fi == 2 ? "map/routed_in q8" : "map/routed_in", NULL);
            }
        }
        mset_free(&ms);
    }

    TEST_SECTION("fused experts: thread-count invariance, arrays vs base+stride (w*a16 and act_int8)");
    for (fi = 0; fi < 4; fi++) { /* N = 64 (fused activation) and 40 (separate activation pass); fi >= 2: act_int8 */
        mset ms;
        test_case_begin(test_case_id("moe invariance weights", fi));
        if (fi < 2) mset_make(&ms, &formats[fi ? 0 : 1], AMXK_DTYPE_BF16, 8, 96, fi ? 40 : 64, 32);
        else mset_make(&ms, &q8_formats[fi == 2 ? 0 : 1].f, AMXK_DTYPE_BF16, 8, 96, fi == 2 ? 64 : 40, 32);
        TEST_FOR_EACH_TIER(tier, ctx) {
            unsigned char *ref = NULL, *got = NULL;
            mcase c;
            int wi, arrays;
            memset(&c, 0, sizeof c);
            c.id = test_case_id("moe invariance", fi); /* the same data every run */
            c.q8 = fi >= 2;
            c.M = 40, c.topk = 4, c.ldx = 96, c.ldo = 96, c.ot = AMXK_DTYPE_BF16, c.bias = 1, c.shared = 1, c.act = 2;
            c.alpha = 1.702f, c.limit = 7.0f, c.interleaved = 1, c.routing = 2;
            for (arrays = 0; arrays < 2; arrays++)
                for (wi = 0; wi < TEST_N_WORKER_COUNTS; wi++) {
                    amxk_ctx pc;
                    if (!test_ctx(&pc, tier, test_worker_counts[wi])) continue;
                    c.arrays = arrays;
                    moe_case(&pc, &ms, &c, "invariance", ref ? &got : &ref);
                    if (got) {
                        CHECK(memcmp(ref, got, ((c.M - 1) * c.ldo + 96) * 2) == 0, "tier %s workers %d arrays %d: not bitwise equal",
                              amxk_tier_name(tier), test_worker_counts[wi], arrays);
                        free(got), got = NULL;
                    }
                }
            free(ref);
        }
        mset_free(&ms);
    }
}

/* Case c (f32 out) on tier at every worker count (1 first), then with `more`: reversed task order on
   3 workers and workspaces filled with 0x5a and 0x80 bytes before the call (2 workers), each against
   the fp64 reference (moe_case) and bit for bit against the 1-worker output. */
static void moe_sweep(amxk_tier tier, const mset *ms, const mcase *c, const char *name, int more) {
    static const int fills[2] = {0x5a, 0x80};
    unsigned char *ref = NULL, *got = NULL;
    int wi;
    for (wi = 0; wi < TEST_N_WORKER_COUNTS + (more ? 3 : 0); wi++) {
        amxk_ctx pc;
        const int rev = wi == TEST_N_WORKER_COUNTS, fill = wi > TEST_N_WORKER_COUNTS;
        const int nw = wi < TEST_N_WORKER_COUNTS ? test_worker_counts[wi] : rev ? 3 : 2;
        if (!test_ctx(&pc, tier, rev ? 1 : nw)) continue;
        if (rev) pc.n_workers = 3, pc.parallel_for = test_reverse_for, pc.parallel_user = NULL;
        ws_fill = fill ? fills[wi - TEST_N_WORKER_COUNTS - 1] : -1;
        moe_case(&pc, ms, c, name, ref ? &got : &ref);
        ws_fill = -1;
        if (got) {
            CHECK(memcmp(ref, got, ((c->M - 1) * c->ldo + ms->K) * 4) == 0, "tier %s %s M=%zu topk=%zu workers %d%s: not bitwise equal to 1 worker",
                  amxk_tier_name(tier), name, c->M, c->topk, nw, rev ? " reversed" : fill ? " filled ws" : "");
            free(got), got = NULL;
        }
    }
    free(ref);
}

/* act_int8 units on the AMX w8a8 kernel (groups of 40: K = 160, N = 40, so w13 has 5 blocks and the
   fused path is off: odd block counts, slices of block pairs on several workers), unit rows around
   16-row tiles (17, 33, ~20): against the fp64 reference, and bit for bit across worker counts. */
static void test_experts_amx_tiles(void) {
    static const mformat f40[2] = {{"int8-sym-g40", 1, {AMXK_QFMT_INT8, 0, 1, 40}}, {"int4-asym-g40", 1, {AMXK_QFMT_INT4, 1, 1, 40}}};
    amxk_ctx ctx;
    amxk_tier tier;
    size_t fi;
    TEST_SECTION("fused experts, act_int8 on AMX tiles: unit rows around 16-row tiles, odd block counts, worker counts");
    for (fi = 0; fi < 2; fi++) {
        mset ms;
        test_case_begin(test_case_id("moe amx tiles weights", fi));
        mset_make(&ms, &f40[fi], AMXK_DTYPE_BF16, 4, 160, 40, 40);
        TEST_FOR_EACH_TIER(tier, ctx) {
            int ri;
            for (ri = 0; ri < 3; ri++) {
                mcase c;
                memset(&c, 0, sizeof c);
                c.q8 = 1, c.M = ri == 0 ? 40 : ri == 1 ? 17 : 33, c.topk = ri == 0 ? 2 : 1, c.ldx = 160, c.ldo = 163, c.ot = AMXK_DTYPE_F32;
                c.bias = 1, c.shared = ri == 2, c.routing = ri == 0 ? 0 : 1;
                c.id = test_case_mix(test_case_id("moe amx tiles", fi), (uint64_t)ri);
                moe_sweep(tier, &ms, &c, f40[fi].name, 0);
            }
        }
        mset_free(&ms);
    }
}

/* Tile sessions (amxk_pack.h's amxk__tiles): one task runs the AMX kernel calls of several units and
   keeps the tile configuration while it fits, the gate and up calls of a unit one x panel. M = 528,
   top-1: experts of 5, 17, 7, 494 and 5 rows (ids 0-4: tiles of R = 5, 9, 7, 16, 5 rows; units
   ordered by R, so experts 0 and 4 (same R, other x rows) follow each other), or (second routing) of
   5, 17, 7, 498 and 1 rows (the 1-row unit on the vector kernels, without x panels), and the shared
   expert (528 rows: bf16 row chunks of 512 and 16, both R 16, after expert 3's R 16; the down calls'
   x panels of both chunks built once per call, amxk__linop_xpanel_*), bf16 (N = 32: gate and up calls
   per item; 48: one call over both, not fused) and w8a8 int8 g64: against the fp64 reference (a
   configuration kept for a unit of another R, a panel kept for other rows, or a down panel at another
   unit's or chunk's offset, reads the wrong rows), bit for bit across worker counts and reversed task
   order on 3 workers, and (emulator builds: with one worker or reversed order the calls run on this
   thread) the tiles released after the call and no emulator fault. */
#if defined(AMXK_AMX_EMULATE)
static int session_faults;
static void session_fault(const char *msg) {
    if (session_faults++ < 3) printf("    emulator fault: %s\n", msg);
}
#endif
static void test_experts_amx_sessions(void) {
    static const mformat fs[3] = {{"bf16", 0, {AMXK_QFMT_NONE, 0, 0, 0}}, {"bf16", 0, {AMXK_QFMT_NONE, 0, 0, 0}},
                                  {"int8-sym-g64", 1, {AMXK_QFMT_INT8, 0, 1, 64}}};
    amxk_ctx ctx;
    amxk_tier tier;
    size_t fi;
    TEST_SECTION("fused experts on AMX tile sessions: units of different tile rows on one worker, worker counts");
    for (fi = 0; fi < 3; fi++) {
        mset ms;
        test_case_begin(test_case_id("moe amx sessions weights", fi));
        mset_make(&ms, &fs[fi], AMXK_DTYPE_BF16, 5, 128, fi == 1 ? 48 : fi == 2 ? 64 : 32, fi == 2 ? 64 : 16);
        TEST_FOR_EACH_TIER(tier, ctx) {
            int ri;
            for (ri = 4; ri <= 5; ri++) {
                unsigned char *ref = NULL, *got = NULL;
                mcase c;
                int wi;
                memset(&c, 0, sizeof c);
                c.q8 = fi == 2, c.M = 528, c.topk = 1, c.ldx = 128, c.ldo = 131, c.ot = AMXK_DTYPE_F32, c.bias = 1, c.shared = 1, c.routing = ri;
                c.id = test_case_mix(test_case_id("moe amx sessions", fi), (uint64_t)ri);
                for (wi = 0; wi <= TEST_N_WORKER_COUNTS; wi++) { /* the worker counts, then reversed order on 3 */
                    amxk_ctx pc;
                    const int nw = wi < TEST_N_WORKER_COUNTS ? test_worker_counts[wi] : 3, rev = wi == TEST_N_WORKER_COUNTS;
#if defined(AMXK_AMX_EMULATE)
                    amxk_amx_fault_fn old;
                    unsigned char cfg[64];
                    size_t z;
                    int loaded = 0;
#endif
                    if (!test_ctx(&pc, tier, rev ? 1 : nw)) continue;
                    if (rev) pc.n_workers = 3, pc.parallel_for = test_reverse_for, pc.parallel_user = NULL;
#if defined(AMXK_AMX_EMULATE)
                    session_faults = 0;
                    old = amxk_amx_emu_set_fault_handler(session_fault);
#endif
                    moe_case(&pc, &ms, &c, "amx sessions", ref ? &got : &ref);
#if defined(AMXK_AMX_EMULATE)
                    amxk_amx_emu_set_fault_handler(old);
                    amxk_amx_emu_storeconfig(cfg);
                    for (z = 0; z < 64; z++) loaded |= cfg[z] != 0;
                    CHECK(session_faults == 0, "tier %s %s routing %d workers %d%s: %d emulator faults", amxk_tier_name(tier), fs[fi].name, ri,
                          nw, rev ? " reversed" : "", session_faults);
                    CHECK(!loaded, "tier %s %s routing %d workers %d%s: tiles still configured after the call", amxk_tier_name(tier),
                          fs[fi].name, ri, nw, rev ? " reversed" : "");
#endif
                    if (got) {
                        CHECK(memcmp(ref, got, ((c.M - 1) * c.ldo + 128) * 4) == 0, "tier %s %s routing %d workers %d%s: not bitwise equal",
                              amxk_tier_name(tier), fs[fi].name, ri, nw, rev ? " reversed" : "");
                        free(got), got = NULL;
                    }
                }
                free(ref);
            }
        }
        mset_free(&ms);
    }
}

/* act_int8 x panels (amxk_pack.h's q8_xpan: each unit's int8 rows as the AVX512-VNNI tiles' 8-row
   panels, built once per call for the gate+up and the down calls): K = 1088 (two k steps of the
   tiles), units of 1, 7, 8, 9, 17 and 26 rows (top-1; top-2 with apply-on-input: 27, 8, 15, 17, 26,
   43) and the shared expert (68 rows: row chunks of 48 and 20, a 4-row tail); formats int8 g32 (N =
   64: activation fused), int4 asym g8 (N = 40: own pass) and (mixed) int8 g32 / g4 gate+up packs
   on alternate experts (272 groups: the VNNI kernel hands those units to the AVX2 kernel, no gate+up
   panels), every tier: against the fp64 reference, and bit for bit across worker counts, reversed
   task order on 3 workers and workspaces filled with other bytes before the call (a panel read
   before it is built, or at another unit's offset, reads other values). */
static void test_experts_q8_panels(void) {
    static const mformat fq[3] = {{"int8-sym-g32", 1, {AMXK_QFMT_INT8, 0, 1, 32}}, {"int4-asym-g8", 1, {AMXK_QFMT_INT4, 1, 1, 8}},
                                  {"int8-sym-g4", 1, {AMXK_QFMT_INT8, 0, 1, 4}}};
    const size_t E = 6, K = 1088;
    amxk_ctx ctx;
    amxk_tier tier;
    size_t fi, e;
    TEST_SECTION("fused experts, act_int8 x panels built once per call: unit rows 1-43, K = 1088, worker counts, poisoned workspace");
    for (fi = 0; fi < 3; fi++) {
        mset ms, mg;
        const size_t N = fi == 1 ? 40 : 64, Ns = fi == 1 ? 24 : 32;
        test_case_begin(test_case_id("moe q8 panels weights", fi));
        mset_make(&ms, &fq[fi < 2 ? fi : 0], AMXK_DTYPE_BF16, E, K, N, Ns);
        if (fi == 2) { /* odd experts' gate+up packs: int8 g4 */
            mset_make(&mg, &fq[2], AMXK_DTYPE_BF16, E, K, N, Ns);
            for (e = 1; e < E; e += 2) {
                ms.p13[e] = mg.p13[e], ms.pb13[e] = mg.pb13[e];
                memcpy(ms.d13 + e * 2 * N * K, mg.d13 + e * 2 * N * K, 2 * N * K * sizeof(float));
            }
        }
        TEST_FOR_EACH_TIER(tier, ctx) {
            int ri;
            for (ri = 0; ri < 2; ri++) {
                mcase c;
                memset(&c, 0, sizeof c);
                c.q8 = 1, c.M = 68, c.topk = (size_t)ri + 1, c.ldx = K + 3, c.ldo = K, c.ot = AMXK_DTYPE_F32, c.bias = 1, c.shared = ri == 1;
                c.on_input = ri == 1, c.routing = 6, c.arrays = 1, c.act = ri ? AMXK_MOE_ACT_GELU_TANH : AMXK_MOE_ACT_SILU;
                c.id = test_case_mix(test_case_id("moe q8 panels", fi), (uint64_t)ri);
                moe_sweep(tier, &ms, &c, fi == 2 ? "q8 panels, mixed int8 g32 / g4" : fq[fi].name, 1);
            }
        }
        if (fi == 2) mset_free(&mg);
        mset_free(&ms);
    }
}

/* ============================== bad input ============================== */

/* act_int8 with packs amxk_linear_q8 does not take (each alone among int4 packs, routed or shared):
   AMXK_ERR_UNSUPPORTED from the size query and the call, out and workspace untouched. */
static void test_bad_q8(void) {
    static const mformat bad[] = {
        {"int8-asym-g16", 1, {AMXK_QFMT_INT8, 1, 1, 16}}, {"fp8e4m3-16x32", 1, {AMXK_QFMT_FP8_E4M3, 0, 16, 32}},
        {"int4-sym-g4", 1, {AMXK_QFMT_INT4, 0, 1, 4}}, /* groups of less than a 64-byte row */
        {"int2-sym-g8", 1, {AMXK_QFMT_INT2, 0, 1, 8}}, {"fp16", 0, {AMXK_QFMT_NONE, 0, 0, 0}},
        {"mxfp4", 1, {AMXK_QFMT_MXFP4, 0, 1, 32}}, /* no w*a8 path: refused */
    };
    const size_t M = 5, topk = 2, K = 64, N = 32, E = 4;
    mset good, ms;
    size_t bi, wsb = 0, where;
    float tw[10];
    int32_t ids[10] = {0, 1, 2, 3, 1, 0, 3, 2, 2, 1};
    void *x, *out, *ws, *out_ref;
    amxk_moe_opts o;
    TEST_SECTION("fused experts, act_int8: packs amxk_linear_q8 does not take -> UNSUPPORTED, nothing written");
    for (bi = 0; bi < 10; bi++) tw[bi] = 0.5f;
    test_case_begin(test_case_id("moe bad q8", 0));
    mset_make(&good, &q8_formats[3].f, AMXK_DTYPE_F16, E, K, N, 32);
    x = test_alloc(M * K * 2), out = test_alloc(M * K * 4), out_ref = malloc(M * K * 4);
    for (bi = 0; bi < M * K; bi++) ((uint16_t *)x)[bi] = amxk_f32_to_f16(test_randf(-1, 1));
    memset(out, 0x3c, M * K * 4), memcpy(out_ref, out, M * K * 4);
    memset(&o, 0, sizeof o);
    o.act_int8 = 1;
    {
        amxk_moe_weights w;
        amxk_moe_shared sh;
        memset(&w, 0, sizeof w), memset(&sh, 0, sizeof sh);
        w.n_experts = E, w.hidden = K, w.inter = N, w.w13 = good.p13, w.w13_bytes = good.pb13, w.w2 = good.p2, w.w2_bytes = good.pb2;
        sh.inter = 32, sh.w13 = good.sw13, sh.w13_bytes = good.sb13, sh.w2 = good.sw2, sh.w2_bytes = good.sb2;
        CHECK(amxk_moe_workspace_size(NULL, &w, &sh, &o, M, topk, &wsb) == AMXK_OK, "int4 act_int8 workspace");
        ws = test_alloc(wsb * 2);
    }
    for (bi = 0; bi < sizeof bad / sizeof bad[0]; bi++) {
        mset_make(&ms, &bad[bi], AMXK_DTYPE_F16, 1, K, N, 32);
        for (where = 0; where < 4; where++) { /* w13 of expert 2, w2 of expert 0, shared w13, shared w2 */
            amxk_moe_weights w;
            amxk_moe_shared sh;
            const void *p13[4], *p2[4];
            size_t b13[4], b2[4], i, s0 = 0;
            amxk_status s;
            for (i = 0; i < E; i++) p13[i] = good.p13[i], p2[i] = good.p2[i], b13[i] = good.pb13[i], b2[i] = good.pb2[i];
            memset(&w, 0, sizeof w), memset(&sh, 0, sizeof sh);
            w.n_experts = E, w.hidden = K, w.inter = N, w.w13 = p13, w.w13_bytes = b13, w.w2 = p2, w.w2_bytes = b2;
            sh.inter = 32, sh.w13 = good.sw13, sh.w13_bytes = good.sb13, sh.w2 = good.sw2, sh.w2_bytes = good.sb2;
            if (where == 0) p13[2] = ms.w13, b13[2] = ms.b13;
            if (where == 1) p2[0] = ms.w2, b2[0] = ms.b2;
            if (where == 2) sh.w13 = ms.sw13, sh.w13_bytes = ms.sb13;
            if (where == 3) sh.w2 = ms.sw2, sh.w2_bytes = ms.sb2;
            memset(ws, 0x5a, wsb * 2);
            s = amxk_moe_workspace_size(NULL, &w, &sh, &o, M, topk, &s0);
            CHECK(s == AMXK_ERR_UNSUPPORTED, "%s at %zu: size query %s", bad[bi].name, where, amxk_status_string(s));
            s = amxk_moe_experts(NULL, &w, &sh, &o, M, x, AMXK_DTYPE_F16, K, topk, tw, ids, out, AMXK_DTYPE_F32, K, ws, wsb * 2);
            CHECK(s == AMXK_ERR_UNSUPPORTED, "%s at %zu: %s", bad[bi].name, where, amxk_status_string(s));
            CHECK(memcmp(out, out_ref, M * K * 4) == 0, "%s at %zu: out written", bad[bi].name, where);
            for (i = 0; i < wsb * 2; i++)
                if (((unsigned char *)ws)[i] != 0x5a) break;
            CHECK(i == wsb * 2, "%s at %zu: workspace written", bad[bi].name, where);
            /* the same packs without act_int8 run (w*a16) */
            o.act_int8 = 0;
            CHECK(amxk_moe_workspace_size(NULL, &w, &sh, &o, M, topk, &s0) == AMXK_OK, "%s at %zu: w*a16 size", bad[bi].name, where);
            o.act_int8 = 1;
        }
        mset_free(&ms);
    }
    test_free(x), test_free(out), test_free(ws), free(out_ref);
    mset_free(&good);
}

static void test_bad(void) {
    mset ms;
    amxk_moe_weights w;
    amxk_moe_shared sh;
    amxk_moe_opts o;
    size_t M = 3, topk = 2, K = 32, N = 16, E = 4, ws_bytes = 0, i;
    void *x, *out, *ws, *out_ref, *ws_ref;
    float tw[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    int32_t ids[6] = {0, 1, 2, 3, 1, -1};
    TEST_SECTION("fused experts: bad input -> status, out and workspace untouched");
    test_case_begin(test_case_id("moe bad", 0));
    mset_make(&ms, &formats[0], AMXK_DTYPE_BF16, E, K, N, 16);
    memset(&w, 0, sizeof w);
    w.n_experts = E, w.hidden = K, w.inter = N, w.w13_base = ms.w13, w.w13_stride = ms.b13, w.w2_base = ms.w2, w.w2_stride = ms.b2;
    memset(&sh, 0, sizeof sh);
    sh.inter = 16, sh.w13 = ms.sw13, sh.w13_bytes = ms.sb13, sh.w2 = ms.sw2, sh.w2_bytes = ms.sb2;
    memset(&o, 0, sizeof o);
    CHECK(amxk_moe_workspace_size(NULL, &w, &sh, &o, M, topk, &ws_bytes) == AMXK_OK, "ws");
    x = test_alloc(M * K * 2), out = test_alloc(M * K * 4), ws = test_alloc(ws_bytes + 64);
    out_ref = malloc(M * K * 4), ws_ref = malloc(ws_bytes + 64);
    for (i = 0; i < M * K; i++) ((uint16_t *)x)[i] = amxk_f32_to_bf16(test_randf(-1, 1));
    memset(out, 0x3c, M * K * 4), memset(ws, 0x5a, ws_bytes + 64);
    memcpy(out_ref, out, M * K * 4), memcpy(ws_ref, ws, ws_bytes + 64);
#define BAD_MOE(expect, ...)                                                                                         \
    do {                                                                                                             \
        amxk_moe_weights w2_ = w;                                                                                    \
        amxk_moe_opts o2_ = o;                                                                                       \
        amxk_moe_shared sh2_ = sh;                                                                                   \
        amxk_moe_weights *W_ = &w2_;                                                                                 \
        amxk_moe_shared *SH_ = &sh2_;                                                                                \
        size_t m_ = M, tk_ = topk, ldx_ = K, ldo_ = K, wsb_ = ws_bytes;                                              \
        amxk_dtype xt_ = AMXK_DTYPE_BF16, ot_ = AMXK_DTYPE_F32;                                                      \
        const void *x_ = x;                                                                                          \
        void *out_ = out, *ws_ = ws;                                                                                 \
        const float *tw_ = tw;                                                                                       \
        const int32_t *ids_ = ids;                                                                                   \
        amxk_status s_;                                                                                              \
        __VA_ARGS__;                                                                                                 \
        s_ = amxk_moe_experts(NULL, W_, SH_, &o2_, m_, x_, xt_, ldx_, tk_, tw_, ids_, out_, ot_, ldo_, ws_, wsb_);   \
        CHECK(s_ == (expect), "line %d: got %s", __LINE__, amxk_status_string(s_));                                  \
        CHECK(memcmp(out, out_ref, M * K * 4) == 0 && memcmp(ws, ws_ref, ws_bytes + 64) == 0, "line %d: written", __LINE__); \
    } while (0)
    BAD_MOE(AMXK_ERR_NULL, W_ = NULL);
    BAD_MOE(AMXK_ERR_NULL, x_ = NULL);
    BAD_MOE(AMXK_ERR_NULL, tw_ = NULL);
    BAD_MOE(AMXK_ERR_NULL, ids_ = NULL);
    BAD_MOE(AMXK_ERR_NULL, out_ = NULL);
    BAD_MOE(AMXK_ERR_NULL, w2_.w2_base = NULL);
    BAD_MOE(AMXK_ERR_SHAPE, m_ = 0);
    BAD_MOE(AMXK_ERR_SHAPE, w2_.hidden = 0);
    {
        int32_t map_[9] = {3, -1, 2, 1, 0, -1, -1, -1, -1}, bmap[9] = {3, -1, 2, 4, 0, -1, -1, -1, -1};
        float rin_[3 * 32];
        BAD_MOE(AMXK_ERR_ARG, o2_.expert_map = bmap, o2_.n_global_experts = 9);           /* entry >= E */
        BAD_MOE(AMXK_ERR_ARG, o2_.expert_map = map_, o2_.n_global_experts = 0);
        BAD_MOE(AMXK_ERR_ARG, o2_.expert_map = map_, o2_.n_global_experts = 3);           /* id 3 >= 3 */
        BAD_MOE(AMXK_ERR_ALIAS, o2_.expert_map = map_, o2_.n_global_experts = 9, out_ = (void *)map_);
        BAD_MOE(AMXK_ERR_DTYPE, o2_.routed_in = rin_, o2_.routed_dtype = AMXK_DTYPE_I8, o2_.ld_routed = K);
        BAD_MOE(AMXK_ERR_STRIDE, o2_.routed_in = rin_, o2_.routed_dtype = AMXK_DTYPE_F32, o2_.ld_routed = K - 1);
        BAD_MOE(AMXK_ERR_ALIAS, o2_.routed_in = (const char *)out + 4, o2_.routed_dtype = AMXK_DTYPE_F32, o2_.ld_routed = K);
        BAD_MOE(AMXK_ERR_ALIAS, o2_.routed_in = out, o2_.routed_dtype = AMXK_DTYPE_BF16, o2_.ld_routed = K); /* out is f32 */
        BAD_MOE(AMXK_ERR_ALIAS, o2_.routed_in = ws, o2_.routed_dtype = AMXK_DTYPE_F32, o2_.ld_routed = K);
        BAD_MOE(AMXK_ERR_NULL, tw_ = NULL, tk_ = 2);
        BAD_MOE(AMXK_ERR_ARG, sh2_.gate = ms.sgate, sh2_.gate_bias = NAN);
        BAD_MOE(AMXK_ERR_ALIAS, sh2_.gate = ms.sgate, out_ = ms.sgate, wsb_ = ws_bytes + 64);
        (void)rin_;
    }
    BAD_MOE(AMXK_ERR_SHAPE, w2_.inter = 0);
    { /* fewer pairs than shard experts: only the routed experts' packs are read and validated (the size
         query reads all): a non-pack at an unrouted expert -> OK, the clean result; at a routed one -> FORMAT */
        const void *p13[4], *p2[4];
        size_t b13[4], b2[4], e, q = 0;
        const int32_t ids1[2] = {2, 0};
        void *junk = test_alloc(ms.b2), *o1 = test_alloc(K * 4), *o2 = test_alloc(K * 4), *ws1 = test_alloc(ws_bytes);
        amxk_moe_weights wa = w;
        memset(junk, 0, ms.b2);
        for (e = 0; e < 4; e++)
            p13[e] = (const char *)ms.w13 + e * ms.b13, p2[e] = (const char *)ms.w2 + e * ms.b2, b13[e] = ms.b13, b2[e] = ms.b2;
        wa.w13 = p13, wa.w13_bytes = b13, wa.w2 = p2, wa.w2_bytes = b2;
        CHECK(amxk_moe_experts(NULL, &wa, &sh, &o, 1, x, AMXK_DTYPE_BF16, K, 2, tw, ids1, o1, AMXK_DTYPE_F32, K, ws1, ws_bytes) == AMXK_OK, "clean");
        p2[3] = junk;
        CHECK(amxk_moe_workspace_size(NULL, &wa, &sh, &o, 1, 2, &q) == AMXK_ERR_FORMAT, "size query: a non-pack at expert 3");
        CHECK(amxk_moe_experts(NULL, &wa, &sh, &o, 1, x, AMXK_DTYPE_BF16, K, 2, tw, ids1, o2, AMXK_DTYPE_F32, K, ws1, ws_bytes) == AMXK_OK &&
                  memcmp(o1, o2, K * 4) == 0, "a non-pack at unrouted expert 3: the clean result");
        p2[3] = p2[1], p2[2] = junk;
        memset(o2, 0x3c, K * 4);
        CHECK(amxk_moe_experts(NULL, &wa, &sh, &o, 1, x, AMXK_DTYPE_BF16, K, 2, tw, ids1, o2, AMXK_DTYPE_F32, K, ws1, ws_bytes) == AMXK_ERR_FORMAT &&
                  ((unsigned char *)o2)[0] == 0x3c, "a non-pack at routed expert 2: FORMAT, nothing written");
        test_free(junk), test_free(o1), test_free(o2), test_free(ws1);
    }
    BAD_MOE(AMXK_ERR_FORMAT, w2_.inter = 8);   /* packs are [32, 32] / [32, 16] */
    BAD_MOE(AMXK_ERR_FORMAT, w2_.hidden = 16); /* K mismatch */
    BAD_MOE(AMXK_ERR_FORMAT, sh2_.inter = 8);
    BAD_MOE(AMXK_ERR_FORMAT, xt_ = AMXK_DTYPE_F16); /* bf16 packs, fp16 x */
    BAD_MOE(AMXK_ERR_FORMAT, w2_.w13_stride = 64); /* expert 1 at a non-pack */
    BAD_MOE(AMXK_ERR_DTYPE, xt_ = AMXK_DTYPE_F32);
    BAD_MOE(AMXK_ERR_DTYPE, ot_ = AMXK_DTYPE_I8);
    BAD_MOE(AMXK_ERR_STRIDE, ldx_ = K - 1);
    BAD_MOE(AMXK_ERR_STRIDE, ldo_ = K - 1);
    BAD_MOE(AMXK_ERR_ARG, ids[5] = -2);
    ids[5] = -1;
    BAD_MOE(AMXK_ERR_ARG, ids[2] = 4);
    ids[2] = 2;
    BAD_MOE(AMXK_ERR_ARG, o2_.e_begin = 3, o2_.e_end = 2);
    BAD_MOE(AMXK_ERR_ARG, o2_.e_begin = 0, o2_.e_end = 5);
    BAD_MOE(AMXK_ERR_ARG, o2_.act = (amxk_moe_act)4);
    BAD_MOE(AMXK_ERR_ARG, o2_.act = AMXK_MOE_ACT_SWIGLU_OAI, o2_.alpha = NAN, o2_.limit = 7);
    BAD_MOE(AMXK_ERR_ARG, o2_.act = AMXK_MOE_ACT_SWIGLU_OAI, o2_.alpha = 1.7f, o2_.limit = 0);
    BAD_MOE(AMXK_ERR_ARG, o2_.apply_router_weight_on_input = 2);
    BAD_MOE(AMXK_ERR_ARG, w2_.w13_interleaved = 3);
    BAD_MOE(AMXK_ERR_ARG, o2_.act_int8 = 2);
    BAD_MOE(AMXK_ERR_UNSUPPORTED, o2_.act_int8 = 1); /* bf16 packs: no w8a8 form */
    BAD_MOE(AMXK_ERR_UNSUPPORTED, o2_.act_int8 = 1, o2_.e_begin = 1, o2_.e_end = 2, SH_ = NULL);
    BAD_MOE(AMXK_ERR_FORMAT, o2_.act_int8 = 1, w2_.inter = 8); /* a shape error stays a shape error */
    {   /* an fp32 pack (amxk_pack_linear F32: router weights) as the shared down projection: not taken */
        size_t fb = 0, wsq = 7;
        void *f32p;
        float wsrc[32 * 16];
        amxk_moe_shared shf = sh;
        for (i = 0; i < 32 * 16; i++) wsrc[i] = test_randf(-1, 1);
        CHECK(amxk_pack_linear_size(AMXK_DTYPE_F32, K, 16, &fb) == AMXK_OK, "f32 pack size");
        f32p = test_alloc(fb);
        CHECK(amxk_pack_linear(NULL, f32p, fb, AMXK_DTYPE_F32, wsrc, AMXK_DTYPE_F32, K, 16, 16) == AMXK_OK, "f32 pack");
        shf.w2 = f32p, shf.w2_bytes = fb;
        CHECK(amxk_moe_workspace_size(NULL, &w, &shf, &o, M, topk, &wsq) == AMXK_ERR_UNSUPPORTED && wsq == 7, "f32 pack: size query");
        BAD_MOE(AMXK_ERR_UNSUPPORTED, sh2_.w2 = f32p, sh2_.w2_bytes = fb);
        BAD_MOE(AMXK_ERR_UNSUPPORTED, sh2_.w2 = f32p, sh2_.w2_bytes = fb, o2_.act_int8 = 1);
        test_free(f32p);
    }
    BAD_MOE(AMXK_ERR_WORKSPACE, wsb_ = ws_bytes - 1);
    BAD_MOE(AMXK_ERR_WORKSPACE, ws_ = NULL);
    BAD_MOE(AMXK_ERR_ALIGN, ws_ = (char *)ws + 32, wsb_ = ws_bytes);
    BAD_MOE(AMXK_ERR_ALIAS, out_ = ws);
    BAD_MOE(AMXK_ERR_ALIAS, x_ = (char *)ws + 128);
    BAD_MOE(AMXK_ERR_ALIAS, out_ = (void *)tw);
    {
        amxk_ctx bad;
        memset(&bad, 0, sizeof bad);
        CHECK(amxk_moe_experts(&bad, &w, &sh, &o, M, x, AMXK_DTYPE_BF16, K, topk, tw, ids, out, AMXK_DTYPE_F32, K, ws, ws_bytes) ==
                  AMXK_ERR_CONTEXT, "uninitialised ctx");
        CHECK(memcmp(out, out_ref, M * K * 4) == 0, "ctx: written");
    }
    /* shard: experts outside may be absent in the pointer arrays */
    {
        const void *p13[4], *p2[4];
        size_t b13[4] = {0, 0, 0, 0}, b2[4] = {0, 0, 0, 0};
        amxk_moe_weights wa = w;
        size_t wsb = 0;
        amxk_status s;
        for (i = 0; i < 4; i++) p13[i] = p2[i] = NULL;
        p13[1] = ms.w13 + ms.b13, p2[1] = ms.w2 + ms.b2, b13[1] = ms.b13, b2[1] = ms.b2;
        wa.w13 = p13, wa.w2 = p2, wa.w13_bytes = b13, wa.w2_bytes = b2;
        o.e_begin = 1, o.e_end = 2;
        CHECK(amxk_moe_workspace_size(NULL, &wa, NULL, &o, M, topk, &wsb) == AMXK_OK && wsb <= ws_bytes, "shard ws");
        s = amxk_moe_experts(NULL, &wa, NULL, &o, M, x, AMXK_DTYPE_BF16, K, topk, tw, ids, out, AMXK_DTYPE_F32, K, ws, wsb);
        CHECK(s == AMXK_OK, "shard with NULL outside: %s", amxk_status_string(s));
        /* token 2 has ids {1, -1}: only row 2 and row 0 (slot 1) contribute; token 1 ({2,3}) gets 0 */
        for (i = 0; i < K; i++) CHECK(((float *)out)[1 * K + i] == 0.0f, "token without experts in the shard is 0");
        o.e_begin = 0, o.e_end = 2;
        CHECK(amxk_moe_workspace_size(NULL, &wa, NULL, &o, M, topk, &wsb) == AMXK_ERR_NULL, "NULL pack inside the shard");
        o.e_begin = o.e_end = 0;
    }
    /* in place with the same buffer is allowed; out overlapping x partially too */
    {
        amxk_status s = amxk_moe_experts(NULL, &w, &sh, &o, M, x, AMXK_DTYPE_BF16, K, topk, tw, ids, x, AMXK_DTYPE_BF16, K, ws, ws_bytes);
        CHECK(s == AMXK_OK, "in place: %s", amxk_status_string(s));
    }
    test_free(x), test_free(out), test_free(ws), free(out_ref), free(ws_ref);
    mset_free(&ms);
    test_bad_q8();
}

/* MXFP4 experts (gpt-oss style: w13 interleaved gate/up rows, biases, SWIGLU_OAI alpha 1.702 limit 7,
   top-4 of E = 8), K = 96 and N = 64 (multiples of 32, as MXFP4 needs), every tier, decode and
   prefill row counts, with and without a shared expert; the reference multiplies amxk_dequantize's
   weights (checked against the documented layout in test_quant). */
static void test_mxfp4_experts(void) {
    static const mformat mx = {"mxfp4", 1, {AMXK_QFMT_MXFP4, 0, 1, 32}};
    const size_t E = 8, K = 96, N = 64, Ns = 32, ms_[] = {1, 2, 4, 13, 40};
    amxk_ctx ctx;
    amxk_tier tier;
    mset ms;
    TEST_SECTION("fused experts, MXFP4 packs (gpt-oss: interleaved w13, biases, SWIGLU_OAI, top-4 of 8) vs fp64, every tier");
    test_case_begin(test_case_id("moe mxfp4 weights", 0));
    mset_make(&ms, &mx, AMXK_DTYPE_BF16, E, K, N, Ns);
    TEST_FOR_EACH_TIER(tier, ctx) {
        size_t mi;
        int ci;
        for (mi = 0; mi < sizeof ms_ / sizeof ms_[0]; mi++)
            for (ci = 0; ci < 3; ci++) {
                mcase c;
                memset(&c, 0, sizeof c);
                c.M = ms_[mi], c.topk = 4, c.ldx = K, c.ldo = K + 3, c.bias = 1, c.interleaved = 1;
                c.act = AMXK_MOE_ACT_SWIGLU_OAI, c.alpha = 1.702f, c.limit = 7.0f;
                c.ot = ci == 0 ? AMXK_DTYPE_F32 : ci == 1 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F16;
                c.shared = ci == 2, c.on_input = ci == 1, c.routing = ci == 1 ? 2 : 0, c.arrays = ci % 2;
                c.id = test_case_mix(test_case_id("moe mxfp4", mi), (uint64_t)ci);
                moe_case(&ctx, &ms, &c, "mxfp4", NULL);
            }
    }
    mset_free(&ms);
}

int main(void) {
    test_init();
    test_routing();
    test_align();
    test_experts();
    test_experts_amx_tiles();
    test_experts_amx_sessions();
    test_experts_q8_panels();
    test_mxfp4_experts();
    test_bad();
    return test_finish();
}
