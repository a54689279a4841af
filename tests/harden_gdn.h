/* tests/harden_gdn.h - issue 31 (class 1): aliasing of the conv1d / GDN entry points (amxk_gdn.h).
   Included by tests/test_harden.c (after test.h and amxk_gdn.h); main calls
       harden_gdn_alias_conv()    amxk_conv1d_prefill (speculative), amxk_conv1d_update (circular;
                                  speculative without query_start_loc), amxk_conv1d_pack
       harden_gdn_alias_gdn()     amxk_gdn (explicit gates; fused gates + speculative), amxk_gdn_gating
       harden_gdn_alias_repro()   the reproducers: valid calls but for an output (or a state pool)
                                  holding an index array inside the rows an earlier sequence writes
                                  (before the fix: an index read back as a float's bits, SEGV)
       harden_gdn_struct_copy()   amxk_gdn with the amxk_gdn_params / amxk_gdn_inputs structs inside o
                                  (the call copies them at entry: accepted, the same results)

   The rule under test (amxk_gdn.h, >>alias): every buffer a call writes (out / o, g / beta, the conv and
   recurrent state pools, the workspace, a packed weight) may overlap neither another one nor anything
   the call reads after its first write (data, weights, gates and their parameters, every index and
   length array), each taken by its exact byte extent; an overlap is AMXK_ERR_ALIAS with nothing written.

   How: each entry point has one valid call (hg_cfg: its buffers, "roles", with their exact extents,
   alignments and contents). For every pair (an output, any other role) the two are placed in one
   guarded arena, the others in buffers of their own, five ways: the output's last bytes on the other's
   first bytes; the other inside the output, one element in (an index array then lies in the first row,
   which the first sequence writes: the crash before the fix), or the output inside the other when that
   is the larger; the output's first bytes on the other's last bytes (the two end overlaps as small as
   the pointers' alignments allow: one byte for has_initial_state, else 2 or 4 bytes); and the two
   adjacent either way. The overlaps must give AMXK_ERR_ALIAS with every buffer (bodies and guards)
   unchanged; the adjacent placements must run and give the bytes of a reference call with separate
   buffers (so the checked extents are exact: one element short misses an end overlap, one element long
   refuses an adjacent pair). On every level (TEST_FOR_EACH_TIER). */
#ifndef TESTS_HARDEN_GDN_H
#define TESTS_HARDEN_GDN_H
#include "test.h"
#include "../amxk_gdn.h"

/* The roles: outputs first (HG_OUTS of them), then inputs. */
enum {
    HG_OUT, HG_STATE, HG_WS, HG_GOUT, HG_BOUT, HG_DST, HG_OUTS,
    HG_X = HG_OUTS, HG_PACKED, HG_QSL, HG_SLOT, HG_INIT, HG_ACC, HG_CSL,
    HG_Q, HG_K, HG_V, HG_G, HG_BETA, HG_A, HG_B, HG_ALOG, HG_DTB, HG_W, HG_BIAS, HG_NR
};
static const char *const hg_role_name[HG_NR] = {"out/o", "state pool", "workspace", "g (output)", "beta (output)", "packed dst",
                                                "x", "packed weight", "query_start_loc", "slot_idx", "has_initial_state",
                                                "num_accepted_tokens", "cache_seqlens", "q", "k", "v", "g", "beta", "a", "b",
                                                "A_log", "dt_bias", "w", "bias"};

enum { HG_HEAD, HG_MID, HG_TAIL, HG_ADJ_BEFORE, HG_ADJ_AFTER, HG_NPLACE };
static const char *const hg_place_name[HG_NPLACE] = {"the output's last bytes on its first", "it inside the output, one element in (or the output inside it)",
                                                     "the output's first bytes on its last", "the output just before it",
                                                     "the output just after it"};

enum { HG_PREFILL, HG_UPDATE, HG_GDN, HG_GATING, HG_PACK };
#define HG_NCFG 7

typedef struct hg_cfg {
    const char *name;
    int kind;
    size_t bytes[HG_NR], align[HG_NR]; /* exact extent (0: the call has no such buffer), pointer alignment */
    unsigned char *init[HG_NR];        /* contents */
    size_t n;                          /* n_seqs (gating: n_tokens) */
    /* conv */
    size_t dim, ldx, ldo;
    amxk_dtype xt, ot;
    amxk_conv_state cst;
    /* gdn */
    amxk_gdn_params gp;
    amxk_gdn_inputs gin;
    amxk_gdn_state gst;
    amxk_gdn_mode mode;
    /* gating */
    size_t hv, lda, ldb, ldg, ldbeta;
    amxk_dtype abt, alt, dtt, bt;
    /* pack */
    size_t width, ldw;
    amxk_dtype wt;
} hg_cfg;

static void hg_st(void *p, amxk_dtype t, size_t i, float v) {
    if (t == AMXK_DTYPE_F32) {
        memcpy((char *)p + 4 * i, &v, 4);
    } else {
        uint16_t h = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, v);
        memcpy((char *)p + 2 * i, &h, 2);
    }
}
/* A role of `bytes` with random bytes (outputs: what the call overwrites, or leaves). */
static void hg_role(hg_cfg *c, int r, size_t bytes, size_t align) {
    size_t i;
    c->bytes[r] = bytes, c->align[r] = align;
    c->init[r] = (unsigned char *)malloc(bytes);
    for (i = 0; i < bytes; i++) c->init[r][i] = (unsigned char)(test_rand() >> 56);
}
/* A role of `count` elements of dtype t, values uniform in [lo, hi). */
static void hg_vals(hg_cfg *c, int r, amxk_dtype t, size_t count, float lo, float hi) {
    size_t i, es = amxk_dtype_size(t);
    hg_role(c, r, count * es, es);
    for (i = 0; i < count; i++) hg_st(c->init[r], t, i, test_randf(lo, hi));
}
static void hg_i32(hg_cfg *c, int r, const int32_t *v, size_t count) {
    hg_role(c, r, count * 4, 4);
    memcpy(c->init[r], v, count * 4);
}
static void hg_free_cfg(hg_cfg *c) {
    int r;
    for (r = 0; r < HG_NR; r++) free(c->init[r]);
}

/* A packed conv weight of dim x W (bf16 taps, f32 bias) as the role HG_PACKED. */
static void hg_packed(hg_cfg *c, size_t dim, size_t W) {
    size_t bytes, i;
    uint16_t *w = (uint16_t *)malloc(dim * W * 2);
    float *bias = (float *)malloc(dim * 4);
    void *p;
    for (i = 0; i < dim * W; i++) w[i] = (uint16_t)test_ref_encode(AMXK_DTYPE_BF16, test_randf(-0.5f, 0.5f));
    for (i = 0; i < dim; i++) bias[i] = test_randf(-0.2f, 0.2f);
    CHECK(amxk_conv1d_pack_size(dim, W, &bytes) == AMXK_OK, "conv pack size");
    p = test_alloc(bytes);
    CHECK(amxk_conv1d_pack(NULL, p, bytes, w, AMXK_DTYPE_BF16, dim, W, W, bias) == AMXK_OK, "conv pack");
    hg_role(c, HG_PACKED, bytes, 4);
    memcpy(c->init[HG_PACKED], p, bytes);
    test_free(p), free(w), free(bias);
}

/* Configuration k's valid call for ctx (the workspace extent depends on the level). */
static void hg_make(hg_cfg *c, int k, const amxk_ctx *ctx) {
    memset(c, 0, sizeof *c);
    test_case_begin(test_case_id("harden gdn alias", (uint64_t)k));
    if (k <= 2) { /* conv */
        static const int32_t qsl[4] = {0, 3, 4, 6}, qsl1[4] = {0, 2, 3, 5};
        static const int32_t slot0[3] = {2, 0, 3}, slot1[3] = {3, -1, 0}, slot2[3] = {0, 2, 1};
        static const int32_t acc0[3] = {1, 3, 2}, acc2[3] = {2, 1, 3}, csl[3] = {1, 7, 4};
        static const uint8_t init0[3] = {1, 0, 1};
        const size_t W = 4, t_end = k == 2 ? 3 : k == 1 ? 5 : 6;
        size_t span;
        amxk_conv_state *s = &c->cst;
        c->kind = k == 0 ? HG_PREFILL : HG_UPDATE;
        c->name = k == 0 ? "conv1d_prefill (speculative, bf16)" : k == 1 ? "conv1d_update (circular, f32)" : "conv1d_update (speculative, no query_start_loc)";
        c->n = 3;
        c->dim = k == 2 ? 33 : 40;
        c->xt = k == 1 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16;
        c->ot = k == 0 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
        c->ldx = c->dim + (k == 0 ? 3 : 0), c->ldo = c->dim + (k == 2 ? 0 : k == 1 ? 1 : 6);
        s->dtype = c->xt, s->n_slots = k == 2 ? 3 : 4, s->state_len = k == 1 ? W - 1 : W + 1;
        if (k == 1) s->tok_stride = 1, s->dim_stride = s->state_len, s->slot_stride = c->dim * s->state_len + 5; /* DS */
        else s->dim_stride = 1, s->tok_stride = c->dim, s->slot_stride = c->dim * s->state_len + (k == 0 ? 3 : 0); /* SD */
        span = (s->n_slots - 1) * s->slot_stride + (c->dim - 1) * s->dim_stride + (s->state_len - 1) * s->tok_stride + 1;
        hg_packed(c, c->dim, W);
        hg_vals(c, HG_X, c->xt, (t_end - 1) * c->ldx + c->dim, -1.0f, 1.0f);
        hg_vals(c, HG_STATE, c->xt, span, -1.0f, 1.0f);
        hg_role(c, HG_OUT, ((t_end - 1) * c->ldo + c->dim) * amxk_dtype_size(c->ot), amxk_dtype_size(c->ot));
        if (k != 2) hg_i32(c, HG_QSL, k == 0 ? qsl : qsl1, 4);
        hg_i32(c, HG_SLOT, k == 0 ? slot0 : k == 1 ? slot1 : slot2, 3);
        if (k == 0) hg_role(c, HG_INIT, 3, 1), memcpy(c->init[HG_INIT], init0, 3);
        if (k != 1) hg_i32(c, HG_ACC, k == 0 ? acc0 : acc2, 3);
        if (k == 1) hg_i32(c, HG_CSL, csl, 3);
    } else if (k <= 4) { /* gdn */
        static const int32_t qsl[4] = {0, 3, 4, 6}, slot3[3] = {2, 0, 3}, slot4[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, acc4[3] = {1, 2, 3};
        static const uint8_t init[3] = {1, 0, 1};
        const size_t t_end = 6, H = k == 3 ? 1 : 2, HV = k == 3 ? 2 : 4, dk = k == 3 ? 16 : 8, dv = k == 3 ? 8 : 16;
        const amxk_dtype dt = k == 3 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32;
        amxk_gdn_inputs *in = &c->gin;
        size_t ws = 0, es = amxk_dtype_size(dt);
        c->kind = HG_GDN;
        c->name = k == 3 ? "gdn (gates given, bf16)" : "gdn (fused gating, speculative, chunked, f32)";
        c->n = 3;
        c->gp = amxk_gdn_params_default(H, HV, dk, dv);
        c->mode = k == 3 ? AMXK_GDN_AUTO : AMXK_GDN_CHUNKED;
        c->ot = dt, c->ldo = HV * dv + (k == 3 ? 2 : 3);
        in->dtype = dt, in->ldq = H * dk + 3, in->ldk = H * dk + 1, in->ldv = HV * dv + 1;
        c->gst.n_slots = k == 3 ? 4 : 9, c->gst.slot_stride = HV * dk * dv + (k == 3 ? 4 : 0);
        hg_vals(c, HG_Q, dt, (t_end - 1) * in->ldq + H * dk, -1.0f, 1.0f);
        hg_vals(c, HG_K, dt, (t_end - 1) * in->ldk + H * dk, -1.0f, 1.0f);
        hg_vals(c, HG_V, dt, (t_end - 1) * in->ldv + HV * dv, -1.0f, 1.0f);
        if (k == 3) {
            in->ldg = HV + 1, in->ldbeta = HV;
            hg_vals(c, HG_G, AMXK_DTYPE_F32, (t_end - 1) * in->ldg + HV, -0.5f, 0.0f);
            hg_vals(c, HG_BETA, AMXK_DTYPE_F32, (t_end - 1) * in->ldbeta + HV, 0.0f, 1.0f);
        } else {
            in->ab_dtype = AMXK_DTYPE_BF16, in->lda = HV + 1, in->ldb = HV, in->A_log_dtype = AMXK_DTYPE_BF16, in->dt_bias_dtype = AMXK_DTYPE_F32;
            in->spec_cols = 3;
            hg_vals(c, HG_A, AMXK_DTYPE_BF16, (t_end - 1) * in->lda + HV, -2.0f, 2.0f);
            hg_vals(c, HG_B, AMXK_DTYPE_BF16, (t_end - 1) * in->ldb + HV, -2.0f, 2.0f);
            hg_vals(c, HG_ALOG, AMXK_DTYPE_BF16, HV, -1.0f, 1.0f);
            hg_vals(c, HG_DTB, AMXK_DTYPE_F32, HV, -1.0f, 1.0f);
            hg_i32(c, HG_ACC, acc4, 3);
        }
        hg_vals(c, HG_STATE, AMXK_DTYPE_F32, (c->gst.n_slots - 1) * c->gst.slot_stride + HV * dk * dv, -1.0f, 1.0f);
        hg_role(c, HG_OUT, ((t_end - 1) * c->ldo + HV * dv) * es, es);
        hg_i32(c, HG_QSL, qsl, 4);
        if (k == 3) hg_i32(c, HG_SLOT, slot3, 3);
        else hg_i32(c, HG_SLOT, slot4, 9);
        hg_role(c, HG_INIT, 3, 1), memcpy(c->init[HG_INIT], init, 3);
        CHECK(amxk_gdn_workspace_size(ctx, &c->gp, c->mode, &ws) == AMXK_OK, "gdn workspace size");
        hg_role(c, HG_WS, ws, AMXK_ALIGN);
    } else if (k == 5) { /* gating */
        c->kind = HG_GATING, c->name = "gdn_gating";
        c->n = 5, c->hv = 6, c->lda = 7, c->ldb = 6, c->ldg = 6, c->ldbeta = 9;
        c->abt = AMXK_DTYPE_BF16, c->alt = AMXK_DTYPE_F32, c->dtt = AMXK_DTYPE_BF16, c->bt = AMXK_DTYPE_BF16;
        hg_vals(c, HG_A, c->abt, (c->n - 1) * c->lda + c->hv, -2.0f, 2.0f);
        hg_vals(c, HG_B, c->abt, (c->n - 1) * c->ldb + c->hv, -2.0f, 2.0f);
        hg_vals(c, HG_ALOG, c->alt, c->hv, -1.0f, 1.0f);
        hg_vals(c, HG_DTB, c->dtt, c->hv, -1.0f, 1.0f);
        hg_role(c, HG_GOUT, ((c->n - 1) * c->ldg + c->hv) * 4, 4);
        hg_role(c, HG_BOUT, ((c->n - 1) * c->ldbeta + c->hv) * 2, 2);
    } else { /* pack */
        size_t need;
        c->kind = HG_PACK, c->name = "conv1d_pack";
        c->dim = 20, c->width = 4, c->ldw = 5, c->wt = AMXK_DTYPE_BF16;
        hg_vals(c, HG_W, c->wt, (c->dim - 1) * c->ldw + c->width, -1.0f, 1.0f);
        hg_vals(c, HG_BIAS, AMXK_DTYPE_F32, c->dim, -1.0f, 1.0f);
        CHECK(amxk_conv1d_pack_size(c->dim, c->width, &need) == AMXK_OK, "pack size");
        hg_role(c, HG_DST, need, AMXK_ALIGN);
    }
}

/* amxk_gdn on the roles p, with the given params / inputs structs as templates (the struct test puts
   them elsewhere). */
static amxk_status hg_gdn_call(const hg_cfg *c, const amxk_ctx *ctx, void *const *p, amxk_gdn_params *gp, amxk_gdn_inputs *in) {
    amxk_gdn_state st = c->gst;
    in->q = p[HG_Q], in->k = p[HG_K], in->v = p[HG_V], in->g = (const float *)p[HG_G], in->beta = (const float *)p[HG_BETA];
    in->a = p[HG_A], in->b = p[HG_B], in->A_log = p[HG_ALOG], in->dt_bias = p[HG_DTB];
    in->num_accepted_tokens = (const int32_t *)p[HG_ACC];
    st.data = (float *)p[HG_STATE];
    return amxk_gdn(ctx, gp, c->mode, in, c->n, (const int32_t *)p[HG_QSL], (const int32_t *)p[HG_SLOT], (const uint8_t *)p[HG_INIT], &st,
                    p[HG_OUT], c->ot, c->ldo, p[HG_WS], c->bytes[HG_WS]);
}

static amxk_status hg_call(const hg_cfg *c, const amxk_ctx *ctx, void *const *p) {
    if (c->kind == HG_PREFILL || c->kind == HG_UPDATE) {
        amxk_conv_state st = c->cst;
        st.data = p[HG_STATE];
        st.num_accepted_tokens = (const int32_t *)p[HG_ACC];
        if (c->kind == HG_PREFILL)
            return amxk_conv1d_prefill(ctx, p[HG_PACKED], c->bytes[HG_PACKED], 1, c->n, (const int32_t *)p[HG_QSL], (const int32_t *)p[HG_SLOT],
                                       (const uint8_t *)p[HG_INIT], p[HG_X], c->xt, c->ldx, p[HG_OUT], c->ot, c->ldo, &st);
        return amxk_conv1d_update(ctx, p[HG_PACKED], c->bytes[HG_PACKED], 1, c->n, (const int32_t *)p[HG_QSL], (const int32_t *)p[HG_SLOT],
                                  (const int32_t *)p[HG_CSL], p[HG_X], c->xt, c->ldx, p[HG_OUT], c->ot, c->ldo, &st);
    }
    if (c->kind == HG_GDN) {
        amxk_gdn_params gp = c->gp;
        amxk_gdn_inputs in = c->gin;
        return hg_gdn_call(c, ctx, p, &gp, &in);
    }
    if (c->kind == HG_GATING)
        return amxk_gdn_gating(ctx, c->n, c->hv, p[HG_A], c->lda, p[HG_B], c->ldb, c->abt, p[HG_ALOG], c->alt, p[HG_DTB], c->dtt, 1.0f, 20.0f,
                               (float *)p[HG_GOUT], c->ldg, p[HG_BOUT], c->bt, c->ldbeta);
    return amxk_conv1d_pack(ctx, p[HG_DST], c->bytes[HG_DST], p[HG_W], c->wt, c->dim, c->width, c->ldw, (const float *)p[HG_BIAS]);
}

/* The buffers of one call: every role in a guarded buffer of its own, except the pair (ro, rj), which
   share an arena in placement `place` (ro < 0: no pair). */
typedef struct hg_lay {
    void *p[HG_NR];
    void *alloc[HG_NR];
    int n_alloc;
    test_watch w[3];
} hg_lay;

static size_t hg_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
static size_t hg_down(size_t x, size_t a) { return x / a * a; }

static void hg_build(const hg_cfg *c, int ro, int rj, int place, hg_lay *L) {
    int r, i;
    memset(L, 0, sizeof *L);
    for (r = 0; r < HG_NR; r++) {
        if (!c->bytes[r] || r == ro || r == rj) continue;
        L->p[r] = L->alloc[L->n_alloc++] = test_alloc(c->bytes[r]);
        memcpy(L->p[r], c->init[r], c->bytes[r]);
    }
    if (ro >= 0) {
        const size_t Bo = c->bytes[ro], Bi = c->bytes[rj], a = c->align[ro], b = c->align[rj];
        const size_t far = hg_up(Bi, 64) + 64; /* an output offset with room for the other before it */
        unsigned char *base = (unsigned char *)test_alloc(far + Bo + Bi + 256) + 64, *po = base, *pi = base;
        L->alloc[L->n_alloc++] = base - 64;
        switch (place) { /* base is 64-aligned; a and b divide 64 */
        case HG_HEAD: pi = base + hg_down(Bo - 1, b); break;
        case HG_MID:
            if (Bi + 2 * b <= Bo) pi = base + b; /* inside the output, one element in (an index array: in the first row) */
            else po = base + (Bi > Bo ? hg_down((Bi - Bo) / 2, a) : 0); /* the output inside it */
            break;
        case HG_TAIL: po = base + far, pi = base + far - Bi + b; break;
        case HG_ADJ_BEFORE: pi = base + hg_up(Bo, b); break;
        default: po = base + far, pi = base + far - Bi; break;
        }
        L->p[ro] = po, L->p[rj] = pi;
        memcpy(po, c->init[ro], Bo);
        memcpy(pi, c->init[rj], Bi); /* the other's contents win (an index array stays valid) */
    }
    for (i = 0; i < L->n_alloc; i++) L->w[i / TEST_N_WATCH].p[i % TEST_N_WATCH] = L->alloc[i];
}
static void hg_take(hg_lay *L) {
    int k;
    for (k = 0; k < 3; k++) test_watch_take(&L->w[k]);
}
static int hg_same(hg_lay *L) {
    int k, ok = 1;
    for (k = 0; k < 3; k++) ok &= test_watch_same(&L->w[k]);
    return ok;
}
static int hg_guards(const hg_lay *L) {
    int i, ok = 1;
    for (i = 0; i < L->n_alloc; i++) ok &= test_guard_ok(L->alloc[i]);
    return ok;
}
static void hg_release(hg_lay *L) {
    int i;
    for (i = 0; i < L->n_alloc; i++) test_free(L->alloc[i]);
}

/* One placement of (ro, rj): the overlaps refused with nothing written, the adjacent ones run and
   give ref's outputs (ref[r]: the reference call's bytes of output r; the workspace is not compared)
   with every input unchanged. */
static void hg_case(const hg_cfg *c, const amxk_ctx *ctx, amxk_tier t, int ro, int rj, int place, unsigned char *const *ref) {
    hg_lay L;
    amxk_status s;
    hg_build(c, ro, rj, place, &L);
    hg_take(&L);
    s = hg_call(c, ctx, L.p);
    if (place <= HG_TAIL) {
        CHECK(s == AMXK_ERR_ALIAS, "%s, tier %s: %s vs %s, %s: status %d, want ALIAS", c->name, amxk_tier_name(t), hg_role_name[ro], hg_role_name[rj],
              hg_place_name[place], (int)s);
        CHECK(hg_same(&L), "%s, tier %s: %s vs %s, %s: a buffer changed", c->name, amxk_tier_name(t), hg_role_name[ro], hg_role_name[rj],
              hg_place_name[place]);
    } else {
        int r, same = 1;
        hg_same(&L); /* frees the snapshots */
        for (r = 0; r < HG_NR; r++) {
            if (!c->bytes[r] || r == HG_WS) continue;
            same &= memcmp(L.p[r], r < HG_OUTS ? ref[r] : c->init[r], c->bytes[r]) == 0;
        }
        CHECK(s == AMXK_OK && same && hg_guards(&L), "%s, tier %s: %s vs %s, %s (no overlap): status %d, results %s", c->name, amxk_tier_name(t),
              hg_role_name[ro], hg_role_name[rj], hg_place_name[place], (int)s, same ? "same" : "differ");
    }
    hg_release(&L);
}

/* The reference call of c (separate buffers): *ref[r] = its output bytes (the caller frees them). */
static int hg_reference(const hg_cfg *c, const amxk_ctx *ctx, amxk_tier t, unsigned char **ref) {
    hg_lay L;
    amxk_status s;
    int r;
    hg_build(c, -1, -1, 0, &L);
    s = hg_call(c, ctx, L.p);
    CHECK(s == AMXK_OK && hg_guards(&L), "%s, tier %s: the valid call: status %d", c->name, amxk_tier_name(t), (int)s);
    for (r = 0; r < HG_NR; r++) {
        ref[r] = NULL;
        if (r < HG_OUTS && c->bytes[r]) ref[r] = (unsigned char *)malloc(c->bytes[r]), memcpy(ref[r], L.p[r], c->bytes[r]);
    }
    hg_release(&L);
    return s == AMXK_OK;
}

/* Configurations k0..k1: every output against every other role, every placement, every level. */
static void hg_matrix(int k0, int k1) {
    amxk_ctx ctx;
    amxk_tier t;
    int k;
    for (k = k0; k <= k1; k++) {
        TEST_FOR_EACH_TIER(t, ctx) {
            hg_cfg c;
            unsigned char *ref[HG_NR];
            int ro, rj, place;
            hg_make(&c, k, &ctx);
            if (hg_reference(&c, &ctx, t, ref))
                for (ro = 0; ro < HG_OUTS; ro++)
                    for (rj = 0; c.bytes[ro] && rj < HG_NR; rj++)
                        if (rj != ro && c.bytes[rj] && (rj >= HG_OUTS || rj > ro))
                            for (place = 0; place < HG_NPLACE; place++) hg_case(&c, &ctx, t, ro, rj, place, ref);
            for (ro = 0; ro < HG_NR; ro++) free(ref[ro]);
            hg_free_cfg(&c);
        }
    }
}

TEST_FN void harden_gdn_alias_conv(void) {
    TEST_SECTION("conv1d prefill / update / pack: outputs and state pools overlapping an index array or an input (issue 31)");
    hg_matrix(0, 2);
    hg_matrix(6, 6);
}

TEST_FN void harden_gdn_alias_gdn(void) {
    TEST_SECTION("gdn / gdn_gating: o, state pool, workspace, g / beta overlapping an index array or an input (issue 31)");
    hg_matrix(3, 5);
}

/* The cases: an otherwise valid call whose output (or state pool) holds an index array inside
   the first rows it writes; before the fix a later task read a float's bits as a slot or a length. */
TEST_FN void harden_gdn_alias_repro(void) {
    static const struct { int k, ro, rj; } cs[] = {
        {1, HG_OUT, HG_SLOT},   {1, HG_OUT, HG_CSL},   {1, HG_STATE, HG_SLOT}, {0, HG_OUT, HG_QSL},   {0, HG_OUT, HG_ACC},
        {0, HG_STATE, HG_INIT}, {2, HG_OUT, HG_ACC},   {3, HG_OUT, HG_QSL},    {3, HG_OUT, HG_SLOT},  {3, HG_STATE, HG_SLOT},
        {3, HG_WS, HG_QSL},     {4, HG_OUT, HG_SLOT},  {4, HG_STATE, HG_ACC},  {4, HG_OUT, HG_ALOG},  {5, HG_GOUT, HG_ALOG}};
    amxk_ctx ctx;
    amxk_tier t;
    size_t i;
    TEST_SECTION("issue 31 reproducers: index arrays inside an output's first rows");
    for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        TEST_FOR_EACH_TIER(t, ctx) {
            hg_cfg c;
            hg_make(&c, cs[i].k, &ctx);
            hg_case(&c, &ctx, t, cs[i].ro, cs[i].rj, HG_MID, NULL);
            hg_free_cfg(&c);
        }
    }
}

/* amxk_gdn with its params and inputs structs inside o's first rows (64-aligned): the call copies both
   at entry, so it runs and gives the reference's outputs and states (configuration 4: f32 o, room for
   both structs in its first rows). */
TEST_FN void harden_gdn_struct_copy(void) {
    amxk_ctx ctx;
    amxk_tier t;
    TEST_SECTION("gdn: the params / inputs structs inside o (copied at entry)");
    TEST_FOR_EACH_TIER(t, ctx) {
        hg_cfg c;
        unsigned char *ref[HG_NR];
        hg_lay L;
        amxk_gdn_params *gp;
        amxk_gdn_inputs *in;
        size_t es, cols, r, j, bad = 0;
        amxk_status s;
        int i;
        hg_make(&c, 4, &ctx);
        es = amxk_dtype_size(c.ot), cols = c.gp.n_v_heads * c.gp.dv;
        hg_reference(&c, &ctx, t, ref);
        hg_build(&c, -1, -1, 0, &L); /* o: a guarded buffer of its own, 64-aligned */
        CHECK(c.bytes[HG_OUT] >= hg_up(sizeof *gp, 64) + sizeof *in, "o too small for the structs");
        gp = (amxk_gdn_params *)L.p[HG_OUT];
        in = (amxk_gdn_inputs *)((char *)L.p[HG_OUT] + hg_up(sizeof *gp, 64));
        *gp = c.gp, *in = c.gin;
        s = hg_gdn_call(&c, &ctx, L.p, gp, in);
        for (r = 0; r < 6; r++) /* the rows' written elements (the padding columns keep what the structs left there) */
            for (j = 0; j < cols * es; j++) bad += ((unsigned char *)L.p[HG_OUT])[r * c.ldo * es + j] != ref[HG_OUT][r * c.ldo * es + j];
        CHECK(s == AMXK_OK && bad == 0 && memcmp(L.p[HG_STATE], ref[HG_STATE], c.bytes[HG_STATE]) == 0 && hg_guards(&L),
              "%s, tier %s: structs inside o: status %d, %lu output bytes differ", c.name, amxk_tier_name(t), (int)s, (unsigned long)bad);
        hg_release(&L);
        for (i = 0; i < HG_NR; i++) free(ref[i]);
        hg_free_cfg(&c);
    }
}

#endif /* TESTS_HARDEN_GDN_H */
