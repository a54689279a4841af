/* tests/fuzz/fuzz.c - libFuzzer targets for every amxk entry point that reads a packed buffer or a
   state pool. Targets:
     info        amxk_packed_linear_info / amxk_packed_quant_info / amxk_dequantize /
                 amxk_linear_workspace_size_for on the bytes
     linear    amxk_linear on the bytes as a pack (header shape, any tier, M, x / y dtypes)
     linear_q8 amxk_linear_q8 on the bytes as a pack
     moe       amxk_moe_experts: the bytes as a w13 pack and a w2 pack (every expert), routing from
                 the parameter bytes, w*a16 or act_int8
     conv1d    amxk_conv1d_prefill / amxk_conv1d_update: the bytes as a conv pack, sequences, slots,
                 cache_seqlens and the state pool's shape from the parameter bytes
     gdn       amxk_gdn: heads, dims, sequences, slots, initial-state flags, mode, gating form and the
                 state pool's shape from the bytes
   Input: FUZZ_PARAMS parameter bytes (missing ones read as 0), then the payload. The harness sizes
   every buffer it passes as the contracts say (x, y, workspace from the size queries); only the pack
   bytes and the integer arrays are hostile. Properties checked (abort() = a finding): no memory error
   (ASan / UBSan), and a call that returns an error writes nothing (outputs and state pools compared
   with copies taken before the call).
   One binary for every target (one compile of the library): the environment variable
   AMXK_FUZZ_TARGET names the target. Build: make build/fuzz/amxk_fuzz (clang -fsanitize=fuzzer,
   address,undefined); run: make fuzz (tests/fuzz/run.sh). Seeds: tests/fuzz/gen_corpus.c. A crash
   found later: add its input to tests/fuzz/crashes/TARGET/ (run.sh adds that directory to the
   seeds) and its case to tests/test_harden.c. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#define AMXK_IMPLEMENTATION
#include "../../amxk.h"
#include "../../amxk_pack.h"
#include "../../amxk_moe.h"
#include "../../amxk_gdn.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_PARAMS 16
#define FUZZ_MAX_ELEMS ((size_t)1 << 18) /* the largest n * k (and m * n) the harness computes on */

#define FZ_FN __attribute__((unused)) static /* each target uses some of the helpers */

typedef struct fz {
    uint8_t p[FUZZ_PARAMS];
    const uint8_t *body;
    size_t n;
} fz;

FZ_FN void fz_open(fz *f, const uint8_t *d, size_t n) {
    size_t h = n < FUZZ_PARAMS ? n : FUZZ_PARAMS;
    memset(f->p, 0, sizeof f->p);
    memcpy(f->p, d, h);
    f->body = d + h, f->n = n - h;
}

/* A 64-byte aligned copy of n bytes (exactly n long: ASan sees a read past it). */
FZ_FN void *fz_copy(const void *src, size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) abort();
    if (n) memcpy(p, src, n);
    return p;
}
FZ_FN void *fz_alloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) abort();
    memset(p, 0x5a, n ? n : 1);
    return p;
}

/* The context of the usable tier picked by sel, with 1 or 3 workers (serial: the harness owns no
   threads; the task split still depends on the worker count). */
FZ_FN void fz_ctx(amxk_ctx *c, uint8_t sel) {
    const amxk_cpu *cpu = amxk_cpu_init();
    int t, cnt = 0, pick;
    for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++) cnt += (cpu->tiers >> t) & 1;
    pick = (sel & 0x7f) % cnt;
    memset(c, 0, sizeof *c);
    for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++)
        if ((cpu->tiers >> t) & 1 && pick-- == 0) c->isa_allow = AMXK_TIER_BIT(t);
    c->n_workers = sel & 0x80 ? 3 : 1;
    if (amxk_ctx_init(c) != AMXK_OK) abort();
}

/* A status call must not have written: compare with the copy, abort on a difference. */
static int fz_verbose = -1; /* AMXK_FUZZ_VERBOSE set: every call's status to stderr */
FZ_FN void fz_same(const void *a, const void *copy, size_t n, amxk_status s, const char *what) {
    if (fz_verbose < 0) fz_verbose = getenv("AMXK_FUZZ_VERBOSE") != NULL;
    if (fz_verbose) fprintf(stderr, "%s: %d\n", what, (int)s);
    if (s != AMXK_OK && n && memcmp(a, copy, n) != 0) {
        fprintf(stderr, "%s: status %d but the output changed\n", what, (int)s);
        abort();
    }
}

/* n, k of a pack (0, 0 when its header is refused). */
FZ_FN void fz_shape(const void *p, size_t bytes, size_t *n, size_t *k) {
    amxk_dtype dt;
    amxk_quant q;
    *n = *k = 0;
    if (amxk_packed_quant_info(p, bytes, &q, n, k) != AMXK_OK && amxk_packed_linear_info(p, bytes, &dt, n, k) != AMXK_OK) *n = *k = 0;
}

FZ_FN uint16_t fz_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16);
}

static int fz_info(fz *f) {
    void *p = fz_copy(f->body, f->n);
    size_t n, k, ws;
    amxk_ctx c;
    fz_ctx(&c, f->p[0]);
    fz_shape(p, f->n, &n, &k);
    (void)amxk_linear_workspace_size_for(&c, 1 + f->p[1] % 64, p, f->n, &ws);
    if (n && n * k <= FUZZ_MAX_ELEMS) {
        float *w = (float *)fz_alloc(n * k * 4);
        if (amxk_dequantize(p, f->n, w, k) != AMXK_OK) abort(); /* the header was accepted */
        free(w);
    } else {
        float w[4];
        (void)amxk_dequantize(p, f->n, w, 1);
    }
    free(p);
    return 0;
}
static int fz_linear_any(fz *f, int q8) {
    void *p = fz_copy(f->body, f->n);
    size_t n, k, m = 1 + f->p[1] % 24, i, ybytes;
    amxk_ctx c;
    amxk_status s;
    const amxk_dtype yts[3] = {AMXK_DTYPE_F32, AMXK_DTYPE_BF16, AMXK_DTYPE_F16};
    amxk_dtype yt = yts[f->p[3] % 3];
    void *y, *ycopy;
    fz_ctx(&c, f->p[0]);
    fz_shape(p, f->n, &n, &k);
    if (!n) n = k = 16; /* a refused pack: the call must refuse it too */
    if (n * k > FUZZ_MAX_ELEMS || m * n > FUZZ_MAX_ELEMS) {
        free(p);
        return 0;
    }
    ybytes = m * n * amxk_dtype_size(yt);
    y = fz_alloc(ybytes), ycopy = fz_copy(y, ybytes);
    if (!q8) {
        amxk_dtype xt = f->p[2] & 1 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16;
        uint16_t *x = (uint16_t *)fz_alloc(m * k * 2);
        float *bias = f->p[4] & 1 ? (float *)fz_alloc(n * 4) : NULL;
        void *wsb;
        size_t ws = 0;
        for (i = 0; i < m * k; i++) x[i] = xt == AMXK_DTYPE_BF16 ? fz_bf16((float)((int)(i * 37 % 17) - 8) * 0.125f) : (uint16_t)(0x3c00 ^ (i % 7));
        for (i = 0; bias && i < n; i++) bias[i] = 0.5f;
        if (amxk_linear_workspace_size_for(&c, m, p, f->n, &ws) != AMXK_OK) ws = 64;
        wsb = fz_alloc(ws);
        s = amxk_linear(&c, m, n, k, x, xt, k, p, f->n, bias, y, yt, n, wsb, ws);
        fz_same(y, ycopy, ybytes, s, "amxk_linear");
        free(x), free(bias), free(wsb);
    } else {
        int8_t *xq = (int8_t *)fz_alloc(m * k);
        float *xs = (float *)fz_alloc(m * 4);
        size_t ag = f->p[2] & 1 ? k : (size_t)(f->p[2] >> 1) % 8 * 32 + 32; /* per token, or a group that may not divide K */
        const amxk_dtype xqt = f->p[4] & 1 ? AMXK_DTYPE_U8 : AMXK_DTYPE_I8; /* U8: the same values + 128 */
        for (i = 0; i < m * k; i++) xq[i] = (int8_t)(((int)(i * 29 % 255) - 127) ^ (xqt == AMXK_DTYPE_U8 ? 0x80 : 0));
        for (i = 0; i < m; i++) xs[i] = 0.01f;
        if (ag != k && k % ag) ag = k;
        {
            size_t ng = k / ag;
            float *xs2 = (float *)fz_alloc(m * ng * 4);
            for (i = 0; i < m * ng; i++) xs2[i] = 0.02f;
            s = amxk_linear_q8(&c, m, n, k, xq, xqt, k, xs2, AMXK_SCALES_ROW_MAJOR, ng, ag, p, f->n, NULL, y, yt, n);
            free(xs2);
        }
        fz_same(y, ycopy, ybytes, s, "amxk_linear_q8");
        free(xq), free(xs);
    }
    free(y), free(ycopy), free(p);
    return 0;
}
static int fz_linear(fz *f) { return fz_linear_any(f, 0); }
static int fz_linear_q8(fz *f) { return fz_linear_any(f, 1); }

static int fz_moe(fz *f) {
    const size_t split = ((size_t)f->p[6] | (size_t)f->p[7] << 8) % (f->n + 1);
    void *p13 = fz_copy(f->body, split), *p2 = fz_copy(f->body + split, f->n - split);
    const size_t E = 1 + f->p[1] % 3, m = 1 + f->p[2] % 6, topk = 1 + f->p[3] % E;
    size_t n13, k13, n2, k2, K, N, ws, i, ob;
    const void *w13[3], *w2[3];
    size_t b13[3], b2[3];
    amxk_moe_weights mw;
    amxk_moe_opts o;
    amxk_ctx c;
    amxk_status s;
    amxk_dtype xt = f->p[4] & 1 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16;
    float *tw;
    int32_t *ids;
    uint16_t *x;
    void *out, *copy, *wsb;
    fz_ctx(&c, f->p[0]);
    fz_shape(p13, split, &n13, &k13);
    fz_shape(p2, f->n - split, &n2, &k2);
    K = k13 ? k13 : 32, N = n13 >= 2 ? n13 / 2 : 16;
    if (K * N > FUZZ_MAX_ELEMS / 8 || K > 4096) {
        free(p13), free(p2);
        return 0;
    }
    for (i = 0; i < E; i++) w13[i] = p13, b13[i] = split, w2[i] = p2, b2[i] = f->n - split;
    memset(&mw, 0, sizeof mw);
    mw.n_experts = E, mw.hidden = K, mw.inter = N, mw.w13 = w13, mw.w13_bytes = b13, mw.w2 = w2, mw.w2_bytes = b2;
    mw.w13_interleaved = f->p[4] >> 1 & 1;
    memset(&o, 0, sizeof o);
    o.act = (amxk_moe_act)(f->p[5] % 3), o.alpha = 1.702f, o.limit = 7.0f, o.act_int8 = f->p[5] >> 2 & 1;
    o.apply_router_weight_on_input = f->p[5] >> 3 & 1;
    tw = (float *)fz_alloc(m * topk * 4), ids = (int32_t *)fz_alloc(m * topk * 4), x = (uint16_t *)fz_alloc(m * K * 2);
    for (i = 0; i < m * topk; i++) tw[i] = 0.25f, ids[i] = (int32_t)((f->p[8 + i % 8] % (E + 1))) - 1; /* -1 .. E-1 */
    for (i = 0; i < m * K; i++) x[i] = fz_bf16((float)((int)(i % 9) - 4) * 0.25f);
    ob = m * K * 4;
    out = fz_alloc(ob), copy = fz_copy(out, ob);
    if (amxk_moe_workspace_size(&c, &mw, NULL, &o, m, topk, &ws) != AMXK_OK) ws = 64;
    wsb = fz_alloc(ws);
    s = amxk_moe_experts(&c, &mw, NULL, &o, m, x, xt, K, topk, tw, ids, out, AMXK_DTYPE_F32, K, wsb, ws);
    fz_same(out, copy, ob, s, "amxk_moe_experts");
    free(p13), free(p2), free(tw), free(ids), free(x), free(out), free(copy), free(wsb);
    return 0;
}
static int fz_conv1d(fz *f) {
    void *p = fz_copy(f->body, f->n);
    size_t dim = 16, n_seqs = 1 + f->p[1] % 4, i, t_end = 0, sbytes, xbytes, obytes;
    const size_t n_slots = 1 + f->p[2] % 4, slen = f->p[3] % 9, es = f->p[4] & 1 ? 2 : 4;
    const int update = f->p[4] >> 1 & 1, circ = f->p[4] >> 2 & 1, ds = f->p[4] >> 3 & 1, nostate = f->p[4] >> 4 & 1;
    int32_t qsl[5], slot[4], cache[4];
    uint8_t init[4];
    amxk_conv_state st;
    amxk_ctx c;
    amxk_status s;
    void *x, *out, *ocopy, *state, *scopy;
    fz_ctx(&c, f->p[0]);
    if (f->n >= 32) { /* the header's dim (bounded: the harness sizes x and out from them) */
        uint64_t d;
        memcpy(&d, f->body + 16, 8);
        if (d >= 1 && d <= 512) dim = (size_t)d;
    }
    qsl[0] = (int32_t)(f->p[5] & 3);
    for (i = 0; i < n_seqs; i++) {
        const uint8_t b = f->p[6 + i];
        qsl[i + 1] = b & 0x80 ? qsl[i] - (int32_t)(b & 3) : qsl[i] + (int32_t)(b & 7); /* sometimes decreasing */
        slot[i] = (int32_t)(b >> 3 & 7) - 1;                                             /* -1 .. 6: some out of range */
        init[i] = (uint8_t)(b >> 6 & 1);
        cache[i] = (int32_t)((uint32_t)f->p[10 + i] * 0x01010101u) ^ (int32_t)(b & 0x40 ? 0x80000000u : 0); /* any int32 */
    }
    for (i = 0; i <= n_seqs; i++) t_end = qsl[i] > 0 && (size_t)qsl[i] > t_end ? (size_t)qsl[i] : t_end;
    if (update && !(f->p[5] & 4)) t_end = t_end > n_seqs ? t_end : n_seqs; /* qsl NULL: one token per sequence */
    t_end += 1;
    memset(&st, 0, sizeof st);
    st.dtype = es == 2 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32, st.n_slots = n_slots, st.state_len = slen;
    st.dim_stride = ds ? slen : 1, st.tok_stride = ds ? 1 : dim;
    st.slot_stride = dim * (slen ? slen : 1) + (f->p[5] >> 4);
    sbytes = n_slots * st.slot_stride * es;
    state = fz_alloc(sbytes), scopy = fz_copy(state, sbytes);
    st.data = slen ? state : NULL;
    xbytes = t_end * dim * es, obytes = t_end * dim * es;
    x = fz_alloc(xbytes), out = fz_alloc(obytes), ocopy = fz_copy(out, obytes);
    if (es == 2)
        for (i = 0; i < t_end * dim; i++) ((uint16_t *)x)[i] = fz_bf16(0.5f);
    else
        for (i = 0; i < t_end * dim; i++) ((float *)x)[i] = 0.5f;
    if (update)
        s = amxk_conv1d_update(&c, p, f->n, f->p[5] >> 3 & 1, n_seqs, f->p[5] & 4 ? qsl : NULL, f->p[5] & 8 ? NULL : slot, circ ? cache : NULL, x,
                               st.dtype, dim, out, st.dtype, dim, &st);
    else
        s = amxk_conv1d_prefill(&c, p, f->n, f->p[5] >> 3 & 1, n_seqs, qsl, f->p[5] & 8 ? NULL : slot, init, x, st.dtype, dim, out, st.dtype,
                                dim, nostate ? NULL : &st);
    fz_same(out, ocopy, obytes, s, "amxk_conv1d out");
    fz_same(state, scopy, sbytes, s, "amxk_conv1d state");
    free(p), free(x), free(out), free(ocopy), free(state), free(scopy);
    return 0;
}
static int fz_gdn(fz *f) {
    const size_t H = 1 + f->p[1] % 2, HV = H * (1 + f->p[1] / 2 % 2), dk = 1 + f->p[2] % 32, dv = 1 + f->p[3] % 32;
    const size_t n_seqs = 1 + f->p[4] % 4, n_slots = 1 + f->p[5] % 4, hsz = dk * dv;
    const int fused = f->p[6] & 1, bf = f->p[6] >> 1 & 1, vfirst = f->p[6] >> 2 & 1;
    const amxk_gdn_mode mode = (amxk_gdn_mode)(f->p[6] >> 3 & 3);
    amxk_gdn_params gp = amxk_gdn_params_default(H, HV, dk, dv);
    amxk_gdn_inputs in;
    amxk_gdn_state st;
    int32_t qsl[5], slot[4];
    uint8_t init[4];
    size_t i, t_end = 0, es = bf ? 2 : 4, ws, sbytes, obytes;
    amxk_ctx c;
    amxk_status s;
    void *q, *k, *v, *o, *ocopy, *wsb;
    float *g, *beta, *a, *b, *alog, *dtb, *state, *scopy;
    fz_ctx(&c, f->p[0]);
    gp.state_v_first = vfirst;
    qsl[0] = (int32_t)(f->p[7] & 3);
    for (i = 0; i < n_seqs; i++) {
        const uint8_t bb = f->p[8 + i];
        qsl[i + 1] = bb & 0x80 ? qsl[i] - (int32_t)(bb & 3) : qsl[i] + (int32_t)(bb & 15);
        slot[i] = (int32_t)(bb >> 4 & 7) - 1;
        init[i] = (uint8_t)(f->p[12 + i] & 1);
    }
    for (i = 0; i <= n_seqs; i++) t_end = qsl[i] > 0 && (size_t)qsl[i] > t_end ? (size_t)qsl[i] : t_end;
    t_end += 1;
    memset(&in, 0, sizeof in);
    q = fz_alloc(t_end * H * dk * es), k = fz_alloc(t_end * H * dk * es), v = fz_alloc(t_end * HV * dv * es);
    for (i = 0; i < t_end * H * dk; i++) {
        if (bf) ((uint16_t *)q)[i] = fz_bf16(0.3f), ((uint16_t *)k)[i] = fz_bf16(-0.2f);
        else ((float *)q)[i] = 0.3f, ((float *)k)[i] = -0.2f;
    }
    for (i = 0; i < t_end * HV * dv; i++) {
        if (bf) ((uint16_t *)v)[i] = fz_bf16(0.1f);
        else ((float *)v)[i] = 0.1f;
    }
    g = (float *)fz_alloc(t_end * HV * 4), beta = (float *)fz_alloc(t_end * HV * 4), a = (float *)fz_alloc(t_end * HV * 4),
    b = (float *)fz_alloc(t_end * HV * 4), alog = (float *)fz_alloc(HV * 4), dtb = (float *)fz_alloc(HV * 4);
    for (i = 0; i < t_end * HV; i++) g[i] = -0.05f, beta[i] = 0.5f, a[i] = 0.1f, b[i] = 0.2f;
    for (i = 0; i < HV; i++) alog[i] = -1.0f, dtb[i] = 0.0f;
    in.dtype = bf ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F32, in.q = q, in.k = k, in.v = v, in.ldq = in.ldk = H * dk, in.ldv = HV * dv;
    if (fused) in.a = a, in.b = b, in.lda = in.ldb = HV, in.ab_dtype = AMXK_DTYPE_F32, in.A_log = alog, in.dt_bias = dtb;
    else in.g = g, in.beta = beta, in.ldg = in.ldbeta = HV;
    memset(&st, 0, sizeof st);
    st.n_slots = n_slots, st.slot_stride = HV * hsz + (f->p[7] >> 4);
    sbytes = n_slots * st.slot_stride * 4;
    state = (float *)fz_alloc(sbytes);
    for (i = 0; i < sbytes / 4; i++) state[i] = 0.01f;
    scopy = (float *)fz_copy(state, sbytes);
    st.data = state;
    obytes = t_end * HV * dv * 4;
    o = fz_alloc(obytes), ocopy = fz_copy(o, obytes);
    if (amxk_gdn_workspace_size(&c, &gp, mode, &ws) != AMXK_OK) ws = 64;
    wsb = fz_alloc(ws);
    s = amxk_gdn(&c, &gp, mode, &in, n_seqs, qsl, f->p[7] & 4 ? NULL : slot, f->p[7] & 8 ? NULL : init, &st, o, AMXK_DTYPE_F32, HV * dv, wsb, ws);
    fz_same(o, ocopy, obytes, s, "amxk_gdn out");
    fz_same(state, scopy, sbytes, s, "amxk_gdn state");
    free(q), free(k), free(v), free(g), free(beta), free(a), free(b), free(alog), free(dtb), free(state), free(scopy), free(o), free(ocopy),
        free(wsb);
    return 0;
}
static const struct {
    const char *name;
    int (*run)(fz *f);
} fz_targets[] = {{"info", fz_info}, {"linear", fz_linear}, {"linear_q8", fz_linear_q8}, {"moe", fz_moe}, {"conv1d", fz_conv1d}, {"gdn", fz_gdn}};
static int (*fz_run)(fz *f);

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *t = getenv("AMXK_FUZZ_TARGET");
    size_t i;
    (void)argc, (void)argv;
    for (i = 0; t && i < sizeof fz_targets / sizeof fz_targets[0]; i++)
        if (strcmp(t, fz_targets[i].name) == 0) fz_run = fz_targets[i].run;
    if (!fz_run) {
        fprintf(stderr, "set AMXK_FUZZ_TARGET to one of: info linear linear_q8 moe conv1d gdn\n");
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz f;
    fz_open(&f, data, size);
    return fz_run(&f);
}
