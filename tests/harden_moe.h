/* tests/harden_moe.h - issue 31, classes 2 and 3: amxk_moe.h's overlap table (amxk.h's amxk__alias) and
   its per-element validation of the expert arrays. Included by tests/test_harden.c (after test.h,
   amxk_pack.h and amxk_moe.h); its main calls

       harden_moe_ws_arrays()        the workspace and out against w->w13 / w->w2 (pointer arrays), their
                                     size arrays, b13 / b2, the shared expert's b13 / b2 / gate: the first
                                     element over dst's last one, the last over its first, the array
                                     inside dst -> ALIAS, nothing written; adjacent either way -> the
                                     clean call's result. The structs (weights, shared, opts) and the
                                     context in the same places: copied at entry, so every placement
                                     gives the clean call's result
       harden_moe_same_pack_align()  an expert pack byte-identical to the previous expert's at a 16-, 32-
                                     or 48-byte (not 64-byte) aligned address -> ALIGN (size query and
                                     call), nothing written; at a 64-byte aligned address -> OK
       harden_moe_null_expert()      a NULL expert (w13 or w2) inside the shard plus a corrupt header of a
                                     later / earlier expert, a misaligned later pack, out or the
                                     workspace over another expert's pack, out over the w13 array ->
                                     AMXK_ERR_NULL, nothing written, no crash
       harden_moe_alias_routing()    amxk_moe_topk with its outputs over / next to *router and *ctx (copied:
                                     the clean result); amxk_moe_align's written elements against the ids
                                     (ALIAS), the capacity it does not write over them (OK)

   Every bad call must return a status and write nothing (test_watch over guarded, poisoned buffers),
   on every level this run has (TEST_FOR_EACH_TIER). */
#ifndef TESTS_HARDEN_MOE_H_INCLUDED
#define TESTS_HARDEN_MOE_H_INCLUDED
#include "test.h"
#include "../amxk_moe.h"

#define HM_E 3
#define HM_K 32
#define HM_N 16
#define HM_NS 16
#define HM_M 2
#define HM_TOPK 2

/* A u64 into a pack header at byte off (16: n, 24: k; amxk_pack.h's amxk__pack_hdr). */
static void hm_put_u64(void *p, size_t off, uint64_t v) { memcpy((char *)p + off, &v, 8); }

/* E experts, a shared expert, inputs: every pack in its own guarded buffer. */
typedef struct hm_set {
    size_t b13, b2, sb13, sb2; /* bytes per pack */
    void *w13[HM_E], *w2[HM_E], *sw13, *sw2;
    float *bias13, *bias2, *sbias13, *sbias2, *sgate;
    const void *p13[HM_E], *p2[HM_E]; /* the pointer arrays */
    size_t pb13[HM_E], pb2[HM_E];     /* the size arrays */
    uint16_t *x;
    float *tw;
    int32_t *ids;
} hm_set;

/* A bf16 pack of a random W[n, k] in a fresh guarded buffer (data stream: inside a case). */
static void *hm_pack(size_t n, size_t k, size_t *bytes) {
    float *w = (float *)malloc(n * k * 4);
    void *p;
    size_t i;
    for (i = 0; i < n * k; i++) w[i] = test_randf(-0.5f, 0.5f);
    CHECK(amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, bytes) == AMXK_OK, "hm pack size");
    p = test_alloc(*bytes);
    CHECK(amxk_pack_linear(NULL, p, *bytes, AMXK_DTYPE_BF16, w, AMXK_DTYPE_F32, n, k, k) == AMXK_OK, "hm pack");
    free(w);
    return p;
}
static float *hm_floats(size_t n) {
    float *f = (float *)test_alloc(n * 4);
    size_t i;
    for (i = 0; i < n; i++) f[i] = test_randf(-0.5f, 0.5f);
    return f;
}
/* Draws the set in case (section, k): every expert is routed (ids {0, 1, 2, 1}). */
static void hm_make(hm_set *s, const char *section, uint64_t k) {
    static const int32_t ids[HM_M * HM_TOPK] = {0, 1, 2, 1};
    size_t e, i;
    memset(s, 0, sizeof *s);
    test_case_begin(test_case_id(section, k));
    for (e = 0; e < HM_E; e++) {
        s->w13[e] = hm_pack(2 * HM_N, HM_K, &s->b13), s->w2[e] = hm_pack(HM_K, HM_N, &s->b2);
        s->p13[e] = s->w13[e], s->p2[e] = s->w2[e], s->pb13[e] = s->b13, s->pb2[e] = s->b2;
    }
    s->sw13 = hm_pack(2 * HM_NS, HM_K, &s->sb13), s->sw2 = hm_pack(HM_K, HM_NS, &s->sb2);
    s->bias13 = hm_floats(HM_E * 2 * HM_N), s->bias2 = hm_floats(HM_E * HM_K);
    s->sbias13 = hm_floats(2 * HM_NS), s->sbias2 = hm_floats(HM_K), s->sgate = hm_floats(HM_K);
    s->x = (uint16_t *)test_alloc(HM_M * HM_K * 2);
    for (i = 0; i < HM_M * HM_K; i++) s->x[i] = amxk_f32_to_bf16(test_randf(-1.0f, 1.0f));
    s->tw = hm_floats(HM_M * HM_TOPK);
    s->ids = (int32_t *)test_alloc(sizeof ids);
    memcpy(s->ids, ids, sizeof ids);
}
static void hm_free(hm_set *s) {
    size_t e;
    for (e = 0; e < HM_E; e++) test_free(s->w13[e]), test_free(s->w2[e]);
    test_free(s->sw13), test_free(s->sw2), test_free(s->bias13), test_free(s->bias2);
    test_free(s->sbias13), test_free(s->sbias2), test_free(s->sgate), test_free(s->x), test_free(s->tw), test_free(s->ids);
}
/* The weights by pointer arrays (with biases) and the shared expert (with biases and gate). */
static void hm_weights(const hm_set *s, amxk_moe_weights *w, amxk_moe_shared *sh) {
    memset(w, 0, sizeof *w);
    w->n_experts = HM_E, w->hidden = HM_K, w->inter = HM_N;
    w->w13 = s->p13, w->w13_bytes = s->pb13, w->w2 = s->p2, w->w2_bytes = s->pb2, w->b13 = s->bias13, w->b2 = s->bias2;
    memset(sh, 0, sizeof *sh);
    sh->inter = HM_NS, sh->w13 = s->sw13, sh->w13_bytes = s->sb13, sh->w2 = s->sw2, sh->w2_bytes = s->sb2;
    sh->b13 = s->sbias13, sh->b2 = s->sbias2, sh->gate = s->sgate, sh->gate_bias = 0.25f;
}
static amxk_status hm_call(const amxk_ctx *ctx, const amxk_moe_weights *w, const amxk_moe_shared *sh, const amxk_moe_opts *o,
                           const hm_set *s, void *out, void *ws, size_t wsb) {
    return amxk_moe_experts(ctx, w, sh, o, HM_M, s->x, AMXK_DTYPE_BF16, HM_K, HM_TOPK, s->tw, s->ids, out, AMXK_DTYPE_F32, HM_K, ws, wsb);
}

/* ---- class 2: the workspace (and out) against every array and struct the call reads ---------------- */

enum { HM_T_W13, HM_T_W13B, HM_T_W2, HM_T_W2B, HM_T_B13, HM_T_B2, HM_T_SB13, HM_T_SB2, HM_T_SGATE, HM_T_WSTRUCT, HM_T_SHSTRUCT,
       HM_T_OSTRUCT, HM_T_CTX, HM_T_COUNT };
static const char *const hm_target_name[HM_T_COUNT] = {"w13 pointers", "w13_bytes", "w2 pointers", "w2_bytes", "b13", "b2",
                                                       "shared b13", "shared b2", "shared gate", "weights struct",
                                                       "shared struct", "opts struct", "context"};

static const char *const hm_pos_name[5] = {"its first element over the last one", "its last element over the first one",
                                           "adjacent after", "adjacent before", "inside, from byte 64"};

static void harden_moe_ws_arrays(void) {
    hm_set s;
    amxk_ctx ctx;
    amxk_tier t;
    TEST_SECTION("MoE: workspace / out against the expert pointer, size and bias arrays and the structs (issue 31, class 2)");
    hm_make(&s, "moe31 ws arrays", 0);
    TEST_FOR_EACH_TIER(t, ctx) {
        amxk_moe_weights w0;
        amxk_moe_shared sh0;
        amxk_moe_opts o0;
        size_t total = 0, S, tg, pos;
        int dst;
        float *ref = (float *)test_alloc(HM_M * HM_K * 4);
        void *wsb;
        amxk_status st;
        hm_weights(&s, &w0, &sh0);
        memset(&o0, 0, sizeof o0);
        CHECK(amxk_moe_workspace_size(&ctx, &w0, &sh0, &o0, HM_M, HM_TOPK, &total) == AMXK_OK && total % 64 == 0, "tier %s: ws size",
              amxk_tier_name(t));
        wsb = test_alloc(total);
        st = hm_call(&ctx, &w0, &sh0, &o0, &s, ref, wsb, total);
        CHECK(st == AMXK_OK, "tier %s: clean call: %s", amxk_tier_name(t), amxk_status_string(st));
        /* room for the largest array either side of the destination */
        S = (HM_E * 2 * HM_N * 4 + sizeof(amxk_moe_weights) + sizeof(amxk_moe_opts) + sizeof(amxk_ctx) + 63) / 64 * 64 + 64;
        for (dst = 0; dst < 2; dst++) /* 0: the workspace, 1: out */
            for (tg = 0; tg < HM_T_COUNT; tg++)
                for (pos = 0; pos < 5; pos++) { /* first element over dst's last one, last over its first; adjacent after,
                                                   before; inside dst from byte 64 */
                    const size_t D = dst == 0 ? total : HM_M * HM_K * 4;
                    unsigned char *arena = (unsigned char *)test_alloc(S + D + S), *d = arena + S, *a;
                    void *other = test_alloc(dst == 0 ? HM_M * HM_K * 4 : total);
                    amxk_moe_weights w = w0, *wp = &w;
                    amxk_moe_shared sh = sh0, *shp = &sh;
                    amxk_moe_opts o = o0, *op = &o;
                    amxk_ctx c = ctx, *cp = &c;
                    const void *src;
                    size_t A, esz = 8;
                    test_watch wt;
                    switch (tg) {
                    case HM_T_W13: src = s.p13, A = sizeof s.p13; break;
                    case HM_T_W13B: src = s.pb13, A = sizeof s.pb13; break;
                    case HM_T_W2: src = s.p2, A = sizeof s.p2; break;
                    case HM_T_W2B: src = s.pb2, A = sizeof s.pb2; break;
                    case HM_T_B13: src = s.bias13, A = HM_E * 2 * HM_N * 4, esz = 4; break;
                    case HM_T_B2: src = s.bias2, A = HM_E * HM_K * 4, esz = 4; break;
                    case HM_T_SB13: src = s.sbias13, A = 2 * HM_NS * 4, esz = 4; break;
                    case HM_T_SB2: src = s.sbias2, A = HM_K * 4, esz = 4; break;
                    case HM_T_SGATE: src = s.sgate, A = HM_K * 4, esz = 4; break;
                    case HM_T_WSTRUCT: src = &w, A = sizeof w; break;
                    case HM_T_SHSTRUCT: src = &sh, A = sizeof sh; break;
                    case HM_T_OSTRUCT: src = &o, A = sizeof o; break;
                    default: src = &c, A = sizeof c; break;
                    }
                    const int over = pos < 2 || pos == 4, copied = tg >= HM_T_WSTRUCT; /* the structs: copied at entry */
                    a = pos == 0 ? d + D - esz : pos == 1 ? d + esz - A : pos == 2 ? d + D : pos == 3 ? d - A : d + 64;
                    memcpy(a, src, A); /* the array (struct) now lives at a */
                    switch (tg) {
                    case HM_T_W13: w.w13 = (const void *const *)(void *)a; break;
                    case HM_T_W13B: w.w13_bytes = (const size_t *)(void *)a; break;
                    case HM_T_W2: w.w2 = (const void *const *)(void *)a; break;
                    case HM_T_W2B: w.w2_bytes = (const size_t *)(void *)a; break;
                    case HM_T_B13: w.b13 = (const float *)(void *)a; break;
                    case HM_T_B2: w.b2 = (const float *)(void *)a; break;
                    case HM_T_SB13: sh.b13 = (const float *)(void *)a; break;
                    case HM_T_SB2: sh.b2 = (const float *)(void *)a; break;
                    case HM_T_SGATE: sh.gate = (const float *)(void *)a; break;
                    case HM_T_WSTRUCT: wp = (amxk_moe_weights *)(void *)a; break;
                    case HM_T_SHSTRUCT: shp = (amxk_moe_shared *)(void *)a; break;
                    case HM_T_OSTRUCT: op = (amxk_moe_opts *)(void *)a; break;
                    default: cp = (amxk_ctx *)(void *)a; break;
                    }
                    memset(&wt, 0, sizeof wt);
                    wt.p[0] = arena, wt.p[1] = other;
                    test_watch_take(&wt);
                    st = dst == 0 ? hm_call(cp, wp, shp, op, &s, other, d, total) : hm_call(cp, wp, shp, op, &s, d, other, total);
                    if (over && !copied) {
                        CHECK(st == AMXK_ERR_ALIAS, "tier %s: %s over %s (%s): %s", amxk_tier_name(t), hm_target_name[tg],
                              dst ? "out" : "the workspace", hm_pos_name[pos], amxk_status_string(st));
                        CHECK(test_watch_same(&wt), "tier %s: %s over %s (%s): something written", amxk_tier_name(t), hm_target_name[tg],
                              dst ? "out" : "the workspace", hm_pos_name[pos]);
                    } else { /* adjacent, or a struct the call copies: the clean call's result */
                        (void)test_watch_same(&wt); /* frees the snapshots */
                        CHECK(st == AMXK_OK && memcmp(dst ? (void *)d : other, ref, HM_M * HM_K * 4) == 0 && (over || memcmp(a, src, A) == 0) &&
                                  test_guard_ok(arena) && test_guard_ok(other),
                              "tier %s: %s and %s (%s): %s, or another result", amxk_tier_name(t), hm_target_name[tg],
                              dst ? "out" : "the workspace", hm_pos_name[pos], amxk_status_string(st));
                    }
                    test_free(arena), test_free(other);
                }
        test_free(ref), test_free(wsb);
    }
    hm_free(&s);
}

/* ---- class 3: per-element validation of the expert arrays --------------------------------------- */

static void harden_moe_same_pack_align(void) {
    static const size_t offs[] = {16, 32, 48, 0};
    hm_set s;
    amxk_ctx ctx;
    amxk_tier t;
    TEST_SECTION("MoE: an expert pack byte-identical to the previous one at a 16-byte aligned address (issue 31, class 3)");
    hm_make(&s, "moe31 same pack", 0);
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t oi, e, total = 0;
        int down;
        amxk_moe_weights w0;
        amxk_moe_shared sh0;
        void *ws, *out;
        hm_weights(&s, &w0, &sh0);
        CHECK(amxk_moe_workspace_size(&ctx, &w0, NULL, NULL, HM_M, HM_TOPK, &total) == AMXK_OK, "ws size");
        ws = test_alloc(total + 64), out = test_alloc(HM_M * HM_K * 4);
        for (down = 0; down < 2; down++)
            for (e = 1; e < HM_E; e++)
                for (oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
                    const size_t pb = down ? s.b2 : s.b13;
                    unsigned char *buf = (unsigned char *)test_alloc(pb + 64);
                    const void *p13[HM_E], *p2[HM_E];
                    amxk_moe_weights w = w0;
                    size_t q = 7;
                    amxk_status st;
                    test_watch wt;
                    memcpy(p13, s.p13, sizeof p13), memcpy(p2, s.p2, sizeof p2);
                    memcpy(buf + offs[oi], down ? s.w2[e - 1] : s.w13[e - 1], pb); /* expert e = a copy of expert e - 1 */
                    if (down) p2[e] = buf + offs[oi];
                    else p13[e] = buf + offs[oi];
                    w.w13 = p13, w.w2 = p2;
                    st = amxk_moe_workspace_size(&ctx, &w, NULL, NULL, HM_M, HM_TOPK, &q);
                    CHECK(offs[oi] ? st == AMXK_ERR_ALIGN && q == 7 : st == AMXK_OK && q == total,
                          "tier %s: size query, %s of expert %lu a copy of expert %lu's at 64k+%lu: %s", amxk_tier_name(t), down ? "w2" : "w13",
                          (unsigned long)e, (unsigned long)e - 1, (unsigned long)offs[oi], amxk_status_string(st));
                    memset(&wt, 0, sizeof wt);
                    wt.p[0] = out, wt.p[1] = ws, wt.p[2] = buf;
                    if (offs[oi]) test_watch_take(&wt);
                    st = amxk_moe_experts(&ctx, &w, NULL, NULL, HM_M, s.x, AMXK_DTYPE_BF16, HM_K, HM_TOPK, s.tw, s.ids, out, AMXK_DTYPE_F32,
                                          HM_K, ws, total + 64);
                    CHECK(offs[oi] ? st == AMXK_ERR_ALIGN : st == AMXK_OK, "tier %s: call, %s of expert %lu a copy of expert %lu's at 64k+%lu: %s",
                          amxk_tier_name(t), down ? "w2" : "w13", (unsigned long)e, (unsigned long)e - 1, (unsigned long)offs[oi],
                          amxk_status_string(st));
                    if (offs[oi])
                        CHECK(test_watch_same(&wt), "tier %s: misaligned copy of expert %lu's %s: something written", amxk_tier_name(t),
                              (unsigned long)e - 1, down ? "w2" : "w13");
                    test_free(buf);
                }
        test_free(ws), test_free(out);
    }
    hm_free(&s);
}

/* A NULL expert (w13 or w2 entry) inside the shard together with one other fault: 0 a corrupt header
   (n) of the expert after it, 1 of the expert before it, 2 the next expert's w13 pack misaligned, 3 out
   overlapping another expert's w13 pack, 4 the workspace overlapping one, 5 out overlapping the w13
   pointer array. Every one: AMXK_ERR_NULL from the call (and from the size query for the faults of
   the packs alone), nothing written. */
static void harden_moe_null_expert(void) {
    static const char *const fault[] = {"corrupt later header", "corrupt earlier header", "misaligned later pack",
                                        "out over a pack", "workspace over a pack", "out over the w13 array"};
    hm_set s;
    amxk_ctx ctx;
    amxk_tier t;
    TEST_SECTION("MoE: a NULL expert inside the shard plus another fault -> AMXK_ERR_NULL (issue 31, class 3)");
    hm_make(&s, "moe31 null expert", 0);
    TEST_FOR_EACH_TIER(t, ctx) {
        size_t total = 0, f, nul, arr;
        amxk_moe_weights w0;
        amxk_moe_shared sh0;
        hm_weights(&s, &w0, &sh0);
        CHECK(amxk_moe_workspace_size(&ctx, &w0, NULL, NULL, HM_M, HM_TOPK, &total) == AMXK_OK, "ws size");
        for (arr = 0; arr < 2; arr++) /* the NULL in w13 / in w2 */
            for (nul = 0; nul < HM_E; nul++)
                for (f = 0; f < sizeof fault / sizeof fault[0]; f++) {
                    const size_t other = f == 1 ? nul - 1 : (nul + 1) % HM_E;
                    unsigned char *pk, *wsb;
                    void *out;
                    const void *p13[HM_E], *p2[HM_E];
                    const void **arr13 = p13;
                    amxk_moe_weights w = w0;
                    size_t q = 7;
                    amxk_status st;
                    test_watch wt;
                    if ((f == 0 || f == 2) && nul + 1 == HM_E) continue; /* no later expert */
                    if (f == 1 && nul == 0) continue;                    /* no earlier expert */
                    pk = (unsigned char *)test_alloc(s.b13 + 64), wsb = (unsigned char *)test_alloc(total + s.b13 + 64);
                    out = test_alloc(HM_M * HM_K * 4);
                    memcpy(p13, s.p13, sizeof p13), memcpy(p2, s.p2, sizeof p2);
                    if (f == 4) { /* the other expert's w13 pack moved into the workspace */
                        memcpy(wsb + 64, s.w13[other], s.b13);
                        p13[other] = wsb + 64;
                    } else if (f < 4) { /* moved to pk (64-aligned; 16 bytes off for fault 2) */
                        memcpy(pk + (f == 2 ? 16 : 0), s.w13[other], s.b13);
                        p13[other] = pk + (f == 2 ? 16 : 0);
                        if (f < 2) hm_put_u64(pk, 16, 2 * HM_N + 16); /* header n: not [2N, K] */
                    } else { /* the w13 pointer array itself at pk, where out will be */
                        arr13 = (const void **)(void *)pk;
                        memcpy(arr13, p13, sizeof p13);
                    }
                    if (arr == 0) arr13[nul] = NULL;
                    else p2[nul] = NULL;
                    w.w13 = arr13, w.w2 = p2;
                    if (f < 3) {
                        st = amxk_moe_workspace_size(&ctx, &w, NULL, NULL, HM_M, HM_TOPK, &q);
                        CHECK(st == AMXK_ERR_NULL && q == 7, "tier %s: size query, NULL %s of expert %lu + %s (expert %lu): %s", amxk_tier_name(t),
                              arr ? "w2" : "w13", (unsigned long)nul, fault[f], (unsigned long)other, amxk_status_string(st));
                    }
                    memset(&wt, 0, sizeof wt);
                    wt.p[0] = out, wt.p[1] = wsb, wt.p[2] = pk;
                    test_watch_take(&wt);
                    st = amxk_moe_experts(&ctx, &w, NULL, NULL, HM_M, s.x, AMXK_DTYPE_BF16, HM_K, HM_TOPK, s.tw, s.ids,
                                          f == 3 ? (void *)(pk + 64) : f == 5 ? (void *)pk : out, AMXK_DTYPE_F32, HM_K, wsb, total);
                    CHECK(st == AMXK_ERR_NULL, "tier %s: call, NULL %s of expert %lu + %s (expert %lu): %s", amxk_tier_name(t), arr ? "w2" : "w13",
                          (unsigned long)nul, fault[f], (unsigned long)other, amxk_status_string(st));
                    CHECK(test_watch_same(&wt), "tier %s: NULL %s of expert %lu + %s: something written", amxk_tier_name(t), arr ? "w2" : "w13",
                          (unsigned long)nul, fault[f]);
                    test_free(pk), test_free(wsb), test_free(out);
                }
    }
    hm_free(&s);
}

/* ---- the routing entry points' tables ------------------------------------------------------------- */

static void harden_moe_alias_routing(void) {
    const size_t M = 3, E = 8, TK = 2, R = M * TK;
    amxk_ctx ctx;
    amxk_tier t;
    float logits[3 * 8];
    size_t i;
    TEST_SECTION("MoE: topk outputs vs *router and *ctx, align's written elements vs the ids (issue 31)");
    test_case_begin(test_case_id("moe31 routing", 0));
    for (i = 0; i < M * E; i++) logits[i] = test_randf(-2.0f, 2.0f);
    TEST_FOR_EACH_TIER(t, ctx) {
        int what, pos;
        float wref[6];
        int32_t iref[6];
        amxk_moe_router r0;
        memset(&r0, 0, sizeof r0);
        r0.renormalize = 1;
        CHECK(amxk_moe_topk(&ctx, &r0, M, E, logits, E, TK, wref, iref) == AMXK_OK, "clean topk");
        for (what = 0; what < 2; what++)       /* the router struct, the context */
            for (pos = 0; pos < 4; pos++) {      /* weights over its last 4 bytes, ids over its first; adjacent after / before */
                const size_t A = what ? sizeof(amxk_ctx) : sizeof(amxk_moe_router), S = 256;
                unsigned char *buf = (unsigned char *)test_alloc(S + A + S), *a = buf + S;
                float *tw = (float *)(void *)(a + A - 4), *tw2 = (float *)test_alloc(R * 4);
                int32_t *ids = (int32_t *)(void *)(a - R * 4 + 4), *ids2 = (int32_t *)test_alloc(R * 4);
                amxk_status st;
                test_watch wt;
                if (what) memcpy(a, &ctx, A);
                else memcpy(a, &r0, A);
                if (pos == 1) tw = tw2;
                else ids = ids2;
                if (pos == 2) tw = (float *)(void *)(a + A);
                if (pos == 3) tw = (float *)(void *)(a - R * 4);
                memset(&wt, 0, sizeof wt);
                wt.p[0] = buf, wt.p[1] = tw2, wt.p[2] = ids2;
                test_watch_take(&wt);
                st = amxk_moe_topk(what ? (const amxk_ctx *)(void *)a : &ctx, what ? &r0 : (const amxk_moe_router *)(void *)a, M, E, logits, E, TK,
                                   tw, ids);
                (void)test_watch_same(&wt); /* frees the snapshots: the structs are copied at entry, every placement runs */
                CHECK(st == AMXK_OK && memcmp(tw, wref, sizeof wref) == 0 && memcmp(ids, iref, sizeof iref) == 0 && test_guard_ok(buf),
                      "tier %s: topk %s %s %s: %s, or another result", amxk_tier_name(t), pos == 1 ? "ids" : "weights",
                      pos < 2 ? "over" : "adjacent to", what ? "*ctx" : "*router", amxk_status_string(st));
                test_free(buf), test_free(tw2), test_free(ids2);
            }
        { /* align: ids {0, 1, 2, 1, -1, 0}, block 4: 3 blocks written (12 sorted entries) of a capacity of 8 */
            static const int32_t ids0[6] = {0, 1, 2, 1, -1, 0};
            const size_t cap = 8, bm = 4;
            int32_t *arena = (int32_t *)test_alloc((cap * bm + 64) * 4), *bexp = (int32_t *)test_alloc(cap * 4),
                    *brow = (int32_t *)test_alloc((cap + 1) * 4);
            size_t nb = 99, *nbp;
            amxk_status st;
            test_watch wt;
            for (pos = 0; pos < 4; pos++) {
                int32_t *ids = pos == 0 ? arena + 11 : pos == 1 ? arena + 12 : arena + 40, *sorted = arena;
                nbp = &nb;
                if (pos == 2) nbp = (size_t *)(void *)(arena + 40 + 4); /* *n_blocks over ids[4..5] */
                if (pos == 3) sorted = arena + 42, ids = arena + 40;     /* sorted over ids[2..5] */
                test_poison(arena, (cap * bm + 64) * 4);
                memcpy(ids, ids0, sizeof ids0);
                memset(&wt, 0, sizeof wt);
                wt.p[0] = arena, wt.p[1] = bexp, wt.p[2] = brow;
                test_watch_take(&wt);
                nb = 99;
                st = amxk_moe_align(&ctx, 3, 2, ids, 3, 0, 0, bm, sorted, bexp, brow, cap, nbp);
                if (pos == 1) { /* sorted's capacity beyond the 12 entries written holds the ids: allowed */
                    (void)test_watch_same(&wt);
                    CHECK(st == AMXK_OK && nb == 3 && memcmp(ids, ids0, sizeof ids0) == 0 && sorted[0] == 0 && sorted[1] == 5 && sorted[4] == 1 &&
                              sorted[8] == 2 && sorted[9] == 6,
                          "tier %s: align, ids right after the written entries: %s nb %lu", amxk_tier_name(t), amxk_status_string(st),
                          (unsigned long)nb);
                } else {
                    CHECK(st == AMXK_ERR_ALIAS && nb == 99, "tier %s: align case %d: %s", amxk_tier_name(t), pos, amxk_status_string(st));
                    CHECK(test_watch_same(&wt), "tier %s: align case %d: something written", amxk_tier_name(t), pos);
                }
            }
            test_free(arena), test_free(bexp), test_free(brow);
        }
    }
}

#endif /* TESTS_HARDEN_MOE_H_INCLUDED */
