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
   Modes selected by parameter bits that the seeds of the plain modes leave 0 (issue 31):
     ARENA (conv1d: p[4] bit 5; gdn: p[6] bit 5; moe: p[4] bits 2-3 = 1): one output (conv1d: out or
       the state pool; gdn: o, the state pool or the workspace; moe: out or the workspace) and one
       array the call reads (conv1d: query_start_loc, slot_idx, has_initial_state, cache_seqlens,
       num_accepted_tokens, x; gdn: those, the gates g / beta or a / b / A_log / dt_bias, q, k, v,
       and the *in / *params structs; moe: the w13 / w2 pointer and size arrays, topk_weights,
       topk_ids, x, the *w / *opts / *ctx structs, the packs) in one allocation at a fuzzer-chosen offset
       (fz_arena_open: touching, overlapping by one element, or anywhere around), each by the exact
       byte extent its contract gives. Property (fz_arena_check): an error leaves every byte of the
       arena unchanged; success only where the extents do not overlap (or the contract lets them:
       moe's x and out, the structs gdn and moe copy at entry, or a call with no tokens, which
       writes nothing), and then nothing outside the output's extent changed.
     SPEC (conv1d: p[4] bit 7; gdn: p[6] bit 6): num_accepted_tokens given (gdn: slot_idx
       [n_seqs][spec_cols], spec_cols and the slot rows from payload bytes 3-6).
     moe NULL experts (p[4] bits 2-3 = 2): expert pointers set NULL (tail byte 0), a shard (tail
       byte 1): a NULL inside the shard must give AMXK_ERR_NULL (or an error that comes before any
       pack is read), never a pack / buffer status, in the workspace query and the call.
     moe misaligned pack (p[4] bits 2-3 = 3): one expert's w13 or w2 pack copied to an address 16
       bytes past a 64-byte boundary (byte-identical to the other experts' pack): inside the shard
       neither the workspace query nor the call may succeed.
       (moe's new modes take their 4 parameter bytes from the END of the payload: the packs are the
       payload without them.)
     FP8 (info / linear / linear_q8: p[5] bit 0): the harness builds a VALID e4m3 pack itself
       (amxk_pack_quant; N, K, block sizes from p[6..9]; codes from the payload, finite, |value| <=
       416; scales from the payload, finite, |s| <= FLT_MAX / 448, p[10] bit 0: exponents near the
       top; p[10] bit 1: |s| up to FLT_MAX with every code of the block limited to |s * code| <=
       416 / 448 * FLT_MAX, finite also as bf16 (s * 256 overflows there); bf16 x of magnitude
       2^-60 .. 2^-100, p[11]): amxk_dequantize must return s * code rounded once; amxk_linear on
       EVERY level this CPU has must return finite outputs within 2^-6 * sum |x w| (+1e-30) of the
       fp64 sum of x times the dequantized weights; amxk_linear_q8 must refuse the pack
       (AMXK_ERR_FORMAT: it takes no fp8 pack) and write nothing.
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
#include <float.h>
#include <math.h>
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

/* Byte i of the payload (0 past its end). */
FZ_FN uint8_t fz_at(const fz *f, size_t i) { return i < f->n ? f->body[i] : 0; }

/* The payload as a byte stream that wraps around (an empty payload reads as a fixed pattern). */
typedef struct fz_stream {
    const uint8_t *b;
    size_t n, i;
} fz_stream;
FZ_FN uint8_t fz_next(fz_stream *s) {
    const uint8_t v = s->n ? s->b[s->i % s->n] : (uint8_t)(s->i * 167u + 13u);
    s->i++;
    return v;
}

FZ_FN size_t fz_max(size_t a, size_t b) { return a > b ? a : b; }

/* ---- ARENA: one output and one input in one allocation ---------------------------------------- */

typedef struct fz_arena {
    uint8_t *base, *copy;
    size_t bytes;
    size_t oo, ob; /* the output: offset (64-byte aligned) and byte extent */
    size_t io, ib; /* the input */
} fz_arena;

/* Lays out an output of ob bytes and an input of ib bytes (ai: the input's alignment, a power of two
   <= 64) in one 64-byte aligned allocation filled with 0x5a. The input starts d bytes after the output
   (d a multiple of ai), sel picking d: 0 the input ends where the output starts, 1 they share the
   first ai bytes, 254 the input's first bytes are the output's last, 255 the input starts at the first
   ai boundary at or after the output's end, else spread over [-ib - 64, ob + 64]. The caller writes the
   output's initial content at base + oo, then the input's at base + io (the input wins where they
   overlap: the call sees valid indices), then calls fz_arena_seal. */
FZ_FN void fz_arena_open(fz_arena *a, size_t ob, size_t ib, size_t ai, uint8_t sel) {
    const long long aa = (long long)ai;
    long long lo, hi, obr, d;
    if (!ob) ob = 1;
    if (!ib) ib = 1;
    a->ob = ob, a->ib = ib;
    lo = -(long long)ib - 64, hi = (long long)ob + 64, obr = ((long long)ob + aa - 1) / aa * aa; /* ob rounded up to ai */
    if (sel == 0) d = -(long long)ib;
    else if (sel == 1) d = -(long long)ib + aa;
    else if (sel == 254) d = obr - aa;
    else if (sel == 255) d = obr;
    else d = lo + (long long)(sel - 2) * (hi - lo) / 251;
    d = (d >= 0 ? d / aa : -((-d + aa - 1) / aa)) * aa; /* floor to a multiple of ai */
    a->oo = ((ib + 64 + 2 * ai) + 63) / 64 * 64;
    a->io = (size_t)((long long)a->oo + d);
    a->bytes = fz_max(a->oo + ob, a->io + ib);
    a->base = (uint8_t *)fz_alloc(a->bytes);
    a->copy = NULL;
}
FZ_FN void fz_arena_seal(fz_arena *a) { a->copy = (uint8_t *)fz_copy(a->base, a->bytes); }
FZ_FN void fz_arena_free(fz_arena *a) { free(a->base), free(a->copy); }
FZ_FN int fz_arena_hit(const fz_arena *a, size_t ob_eff) {
    return ob_eff && a->io < a->oo + ob_eff && a->oo < a->io + a->ib;
}

/* The ARENA property. ob_eff: the bytes of the output the call may write (0 when it writes nothing,
   e.g. no tokens); may: the contract lets the two overlap. */
FZ_FN void fz_arena_check(const fz_arena *a, amxk_status s, size_t ob_eff, int may, const char *what) {
    if (fz_verbose < 0) fz_verbose = getenv("AMXK_FUZZ_VERBOSE") != NULL;
    if (fz_verbose)
        fprintf(stderr, "%s: %d (out [%zu, +%zu) in [%zu, +%zu)%s)\n", what, (int)s, a->oo, a->ob, a->io, a->ib,
                fz_arena_hit(a, a->ob) ? " overlapping" : "");
    if (s != AMXK_OK) {
        if (memcmp(a->base, a->copy, a->bytes) != 0) {
            fprintf(stderr, "%s: status %d but the arena changed\n", what, (int)s);
            abort();
        }
        return;
    }
    if (!may && fz_arena_hit(a, ob_eff)) {
        fprintf(stderr, "%s: AMXK_OK although the output [%zu, +%zu) overlaps the input [%zu, +%zu)\n", what, a->oo, ob_eff, a->io, a->ib);
        abort();
    }
    if (memcmp(a->base, a->copy, a->oo) != 0 ||
        memcmp(a->base + a->oo + ob_eff, a->copy + a->oo + ob_eff, a->bytes - a->oo - ob_eff) != 0) {
        fprintf(stderr, "%s: AMXK_OK but a byte outside the output's extent [%zu, +%zu) changed\n", what, a->oo, ob_eff);
        abort();
    }
}

/* The candidate inputs of an ARENA call: where the harness keeps the pointer it passes, the content,
   the extent, the alignment, and whether the contract lets the output overlap it. */
typedef struct fz_input {
    const void **slot;
    const void *src;
    size_t bytes, align;
    int may;
} fz_input;
FZ_FN void fz_add(fz_input *in, size_t *cnt, const void **slot, const void *src, size_t bytes, size_t align, int may) {
    in[*cnt].slot = slot, in[*cnt].src = src, in[*cnt].bytes = bytes ? bytes : 1, in[*cnt].align = align, in[*cnt].may = may;
    (*cnt)++;
}
/* Places input in[k] (its content copied into the arena, *slot pointed at the copy). */
FZ_FN void fz_place_input(fz_arena *a, const fz_input *in) {
    memcpy(a->base + a->io, in->src, in->bytes);
    *in->slot = a->base + a->io;
}

/* ---- FP8: a valid e4m3 pack with extreme scales (info / linear / linear_q8, p[5] bit 0) ------- */

#define FZ_SMAX (FLT_MAX / 448.0f)

/* e4m3 code -> value (bias 7, 3 mantissa bits, subnormals 2^-9 steps; 0x7f / 0xff NaN). */
FZ_FN double fz_e4m3(uint8_t c) {
    const int e = c >> 3 & 15, m = c & 7;
    double v;
    if ((c & 0x7f) == 0x7f) return NAN;
    v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    return c & 0x80 ? -v : v;
}

typedef struct fz_fp8 {
    void *p;
    size_t bytes, n, k;
    float *wd; /* amxk_dequantize's weights [n, k] */
} fz_fp8;

/* Builds the pack (aborts where a valid input is refused or dequantized wrongly). */
FZ_FN void fz_fp8_build(fz *f, fz_stream *st, fz_fp8 *r) {
    const size_t n = 1 + f->p[6] % 40, k = 1 + f->p[7] % 130;
    amxk_quant q, qi;
    size_t nbn, nbk, i, j, qn, qk;
    uint8_t *codes;
    float *sc;
    q.format = AMXK_QFMT_FP8_E4M3, q.asym = 0;
    q.block_n = f->p[8] & 0x80 ? n + (f->p[8] & 7) : 1 + (size_t)f->p[8] % 17; /* also a block beyond N or K */
    q.block_k = f->p[9] & 0x80 ? k + (f->p[9] & 7) : 1 + (size_t)f->p[9] % 64;
    nbn = (n + q.block_n - 1) / q.block_n, nbk = (k + q.block_k - 1) / q.block_k;
    codes = (uint8_t *)malloc(n * k), sc = (float *)malloc(nbn * nbk * 4);
    for (i = 0; i < nbn * nbk; i++) {
        uint32_t u = (uint32_t)fz_next(st) | (uint32_t)fz_next(st) << 8 | (uint32_t)fz_next(st) << 16 | (uint32_t)fz_next(st) << 24;
        uint32_t e = u >> 23 & 0xff;
        float s;
        if (f->p[10] & 1) e = 240 + e % 15; /* 2^113 .. 2^127: most clamp to FLT_MAX / 448 */
        if (e == 255) e = 254;
        u = (u & 0x807fffffu) | e << 23;
        memcpy(&s, &u, 4);
        if (!(f->p[10] & 2) && fabsf(s) > FZ_SMAX) s = copysignf(FZ_SMAX, s); /* bit 1: up to FLT_MAX (codes limited below) */
        sc[i] = s;
    }
    for (i = 0; i < n * k; i++) {
        const double s = fabs((double)sc[(i / k / q.block_n) * nbk + i % k / q.block_k]);
        const double lim = s > 0.0 ? 416.0 * (double)FZ_SMAX / s : 416.0; /* |s * code| <= 416 / 448 * FLT_MAX: finite, also as bf16 */
        uint8_t c = fz_next(st), mg;
        if ((c & 0x7f) > 0x7d) c = (uint8_t)((c & 0x80) | 0x7d); /* finite, |value| <= 416 */
        for (mg = (uint8_t)(c & 0x7f); mg > 0 && fz_e4m3(mg) > lim; mg--) continue;
        codes[i] = (uint8_t)((c & 0x80) | mg);
    }
    r->n = n, r->k = k;
    if (amxk_pack_quant_size(&q, n, k, &r->bytes) != AMXK_OK) abort();
    r->p = fz_alloc(r->bytes);
    if (amxk_pack_quant(NULL, r->p, r->bytes, &q, codes, k, sc, NULL, n, k) != AMXK_OK) {
        fprintf(stderr, "fp8: amxk_pack_quant refused a valid e4m3 pack\n");
        abort();
    }
    if (amxk_packed_quant_info(r->p, r->bytes, &qi, &qn, &qk) != AMXK_OK || qn != n || qk != k || qi.format != q.format ||
        qi.block_n != q.block_n || qi.block_k != q.block_k) {
        fprintf(stderr, "fp8: amxk_packed_quant_info does not read back the pack\n");
        abort();
    }
    r->wd = (float *)fz_alloc(n * k * 4);
    if (amxk_dequantize(r->p, r->bytes, r->wd, k) != AMXK_OK) {
        fprintf(stderr, "fp8: amxk_dequantize refused a valid e4m3 pack\n");
        abort();
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < k; j++) {
            const float want = (float)((double)sc[(i / q.block_n) * nbk + j / q.block_k] * fz_e4m3(codes[i * k + j]));
            const float got = r->wd[i * k + j];
            if (!isfinite(got) || !(got == want)) { /* s * code rounded once (+0 and -0 alike) */
                fprintf(stderr, "fp8: dequantized w[%zu, %zu] = %a, s * code = %a (s %a, code 0x%02x)\n", i, j, (double)got, (double)want,
                        (double)sc[(i / q.block_n) * nbk + j / q.block_k], codes[i * k + j]);
                abort();
            }
        }
    free(codes), free(sc);
}

/* bf16 x[m, k] of magnitude 2^-60 .. 2^-100 (some zeros), and its values as double. */
FZ_FN void fz_fp8_x(fz *f, fz_stream *st, size_t m, size_t k, uint16_t *x, double *xd) {
    size_t i;
    for (i = 0; i < m * k; i++) {
        const uint8_t b = fz_next(st), mb = fz_next(st);
        const unsigned e = 60 + (unsigned)(f->p[11] + (b >> 1 & 31)) % 41;
        float v;
        uint32_t u;
        x[i] = (b & 0x1f) == 0 ? 0 : (uint16_t)((unsigned)(b >> 7) << 15 | (127u - e) << 7 | (mb & 0x7fu));
        u = (uint32_t)x[i] << 16;
        memcpy(&v, &u, 4);
        xd[i] = v;
    }
}

/* The FP8 mode of linear (q8 0) and linear_q8 (q8 1). */
FZ_FN int fz_fp8_linear(fz *f, int q8) {
    const amxk_cpu *cpu = amxk_cpu_init();
    fz_stream st;
    fz_fp8 r;
    const size_t m = 1 + f->p[1] % 24;
    size_t n, k, i, j, kk;
    uint16_t *x;
    double *xd, *ref, *mag;
    float *y, *ycopy;
    int t;
    st.b = f->body, st.n = f->n, st.i = 0;
    fz_fp8_build(f, &st, &r);
    n = r.n, k = r.k;
    x = (uint16_t *)fz_alloc(m * k * 2), xd = (double *)fz_alloc(m * k * sizeof(double));
    ref = (double *)fz_alloc(m * n * sizeof(double)), mag = (double *)fz_alloc(m * n * sizeof(double));
    fz_fp8_x(f, &st, m, k, x, xd);
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            double s = 0.0, a = 0.0;
            for (kk = 0; kk < k; kk++) s += xd[i * k + kk] * r.wd[j * k + kk], a += fabs(xd[i * k + kk] * r.wd[j * k + kk]);
            ref[i * n + j] = s, mag[i * n + j] = a;
        }
    y = (float *)fz_alloc(m * n * 4), ycopy = (float *)fz_copy(y, m * n * 4);
    for (t = AMXK_TIER_SCALAR; t < AMXK_TIER_COUNT; t++) {
        amxk_ctx c;
        amxk_status s;
        if (!(cpu->tiers >> t & 1)) continue;
        memset(&c, 0, sizeof c);
        c.isa_allow = AMXK_TIER_BIT(t), c.n_workers = f->p[0] & 0x80 ? 3 : 1;
        if (amxk_ctx_init(&c) != AMXK_OK) abort();
        if (q8) { /* not a pack amxk_linear_q8 takes: refused, nothing written */
            int8_t *xq = (int8_t *)fz_alloc(m * k);
            float *xs = (float *)fz_alloc(m * 4);
            for (i = 0; i < m * k; i++) xq[i] = (int8_t)((int)(i % 255) - 127);
            for (i = 0; i < m; i++) xs[i] = 0x1p-80f;
            s = amxk_linear_q8(&c, m, n, k, xq, AMXK_DTYPE_I8, k, xs, AMXK_SCALES_ROW_MAJOR, 1, k, r.p, r.bytes, NULL, y, AMXK_DTYPE_F32, n);
            fz_same(y, ycopy, m * n * 4, s, "fp8 amxk_linear_q8");
            if (s != AMXK_ERR_FORMAT) {
                fprintf(stderr, "fp8 [%s]: amxk_linear_q8 on an e4m3 pack: status %d, not AMXK_ERR_FORMAT\n", amxk_tier_name((amxk_tier)t), (int)s);
                abort();
            }
            free(xq), free(xs);
        } else {
            size_t ws = 0, bad = 0, first = 0;
            void *wsb;
            if (amxk_linear_workspace_size_for(&c, m, r.p, r.bytes, &ws) != AMXK_OK) abort();
            wsb = ws ? fz_alloc(ws) : NULL;
            s = amxk_linear(&c, m, n, k, x, AMXK_DTYPE_BF16, k, r.p, r.bytes, NULL, y, AMXK_DTYPE_F32, n, wsb, ws);
            if (s != AMXK_OK) {
                fprintf(stderr, "fp8 [%s]: amxk_linear refused a valid call: %d\n", amxk_tier_name((amxk_tier)t), (int)s);
                abort();
            }
            for (i = 0; i < m * n; i++)
                if (!isfinite(y[i]) || !(fabs((double)y[i] - ref[i]) <= 0x1p-6 * mag[i] + 1e-30)) {
                    if (!bad) first = i;
                    bad++;
                }
            if (bad) {
                fprintf(stderr, "fp8 [%s] M=%zu N=%zu K=%zu: %zu outputs off or not finite, first y[%zu, %zu] = %g, fp64 %g (sum |x w| %g)\n",
                        amxk_tier_name((amxk_tier)t), m, n, k, bad, first / n, first % n, (double)y[first], ref[first], mag[first]);
                abort();
            }
            free(wsb);
        }
    }
    free(r.p), free(r.wd), free(x), free(xd), free(ref), free(mag), free(y), free(ycopy);
    return 0;
}

static int fz_info(fz *f) {
    void *p;
    size_t n, k, ws;
    amxk_ctx c;
    fz_ctx(&c, f->p[0]);
    if (f->p[5] & 1) { /* FP8: the valid pack the harness builds; every query takes it */
        fz_stream st;
        fz_fp8 r;
        amxk_dtype dt;
        st.b = f->body, st.n = f->n, st.i = 0;
        fz_fp8_build(f, &st, &r);
        if (amxk_packed_linear_info(r.p, r.bytes, &dt, &n, &k) != AMXK_OK || n != r.n || k != r.k ||
            amxk_linear_workspace_size_for(&c, 1 + f->p[1] % 64, r.p, r.bytes, &ws) != AMXK_OK) {
            fprintf(stderr, "fp8: a query refused a valid e4m3 pack\n");
            abort();
        }
        free(r.p), free(r.wd);
        return 0;
    }
    p = fz_copy(f->body, f->n);
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
    void *p;
    size_t n, k, m = 1 + f->p[1] % 24, i, ybytes;
    amxk_ctx c;
    amxk_status s;
    const amxk_dtype yts[3] = {AMXK_DTYPE_F32, AMXK_DTYPE_BF16, AMXK_DTYPE_F16};
    amxk_dtype yt = yts[f->p[3] % 3];
    void *y, *ycopy;
    if (f->p[5] & 1) return fz_fp8_linear(f, q8);
    p = fz_copy(f->body, f->n);
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

/* A status that comes from reading a pack or checking a buffer: with a NULL expert pack inside the shard
   the contract says AMXK_ERR_NULL comes first (before any pack byte is read). */
FZ_FN int fz_pack_status(amxk_status s) {
    return s == AMXK_OK || s == AMXK_ERR_FORMAT || s == AMXK_ERR_ALIGN || s == AMXK_ERR_UNSUPPORTED || s == AMXK_ERR_WORKSPACE ||
           s == AMXK_ERR_ALIAS;
}
static int fz_moe(fz *f) {
    const int mode = f->p[4] >> 2 & 3; /* 0 plain, 1 ARENA, 2 NULL experts, 3 misaligned pack */
    const size_t tail = mode ? (f->n < 4 ? f->n : 4) : 0, body_n = f->n - tail;
    const size_t split = ((size_t)f->p[6] | (size_t)f->p[7] << 8) % (body_n + 1);
    void *p13 = fz_copy(f->body, split), *p2 = fz_copy(f->body + split, body_n - split);
    const size_t E = 1 + f->p[1] % 3, m = 1 + f->p[2] % 6, topk = 1 + f->p[3] % E;
    size_t n13, k13, n2, k2, K, N, ws, i, ob, eb = 0, ee = 0;
    const void *w13[3], *w2[3];
    size_t b13[3], b2[3];
    amxk_moe_weights mw;
    amxk_moe_opts o;
    amxk_ctx c;
    amxk_status s, qs = AMXK_OK;
    amxk_dtype xt = f->p[4] & 1 ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16;
    float *tw;
    int32_t *ids;
    uint16_t *x;
    void *out, *copy, *wsb, *po, *pws;
    const void *pw, *po_, *ptw, *pids, *px, *pmw, *pw13, *pw2, *pb13, *pb2, *pctx;
    uint8_t t[4] = {0, 0, 0, 0}, *mis = NULL;
    fz_arena ar;
    int must_fail = 0, may = 0;
    size_t ob_eff = 0;
    if (tail) memcpy(t, f->body + body_n, tail);
    fz_ctx(&c, f->p[0]);
    fz_shape(p13, split, &n13, &k13);
    fz_shape(p2, body_n - split, &n2, &k2);
    K = k13 ? k13 : 32, N = n13 >= 2 ? n13 / 2 : 16;
    if (K * N > FUZZ_MAX_ELEMS / 8 || K > 4096) {
        free(p13), free(p2);
        return 0;
    }
    for (i = 0; i < E; i++) w13[i] = p13, b13[i] = split, w2[i] = p2, b2[i] = body_n - split;
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
    if (mode >= 2 && (t[mode == 2 ? 1 : 2] & 1)) { /* a shard [eb, ee) */
        const uint8_t sb = t[mode == 2 ? 1 : 2];
        eb = (size_t)(sb >> 1) % E, ee = eb + 1 + (size_t)(sb >> 3) % (E - eb);
        o.e_begin = eb, o.e_end = ee;
    } else {
        eb = 0, ee = E;
    }
    /* the workspace of the valid arrays (the call then differs from a valid one only where the mode says) */
    if (amxk_moe_workspace_size(&c, &mw, NULL, &o, m, topk, &ws) != AMXK_OK) ws = 64;
    wsb = fz_alloc(ws);
    po = out, pws = wsb, pmw = &mw, po_ = &o, pctx = &c, ptw = tw, pids = ids, px = x, pw13 = w13, pw2 = w2, pb13 = b13, pb2 = b2;
    pw = NULL;
    if (mode == 2) { /* NULL experts: tail byte 0 bits 0-2 w13, bits 3-5 w2 */
        for (i = 0; i < E; i++) {
            if (t[0] >> i & 1) w13[i] = NULL, must_fail |= i >= eb && i < ee;
            if (t[0] >> (3 + i) & 1) w2[i] = NULL, must_fail |= i >= eb && i < ee;
        }
        qs = amxk_moe_workspace_size(&c, &mw, NULL, &o, m, topk, &i);
    } else if (mode == 3) { /* expert j's w13 (or w2) pack at 16 bytes past a 64-byte boundary */
        const size_t j = t[1] % E, nb = t[0] & 1 ? b2[j] : b13[j];
        mis = (uint8_t *)fz_alloc(16 + nb);
        memcpy(mis + 16, t[0] & 1 ? p2 : p13, nb);
        if (t[0] & 1) w2[j] = mis + 16;
        else w13[j] = mis + 16;
        must_fail = j >= eb && j < ee;
        qs = amxk_moe_workspace_size(&c, &mw, NULL, &o, m, topk, &i);
    } else if (mode == 1) { /* ARENA: out or the workspace over an array the call reads */
        fz_input in[12];
        size_t cnt = 0, kx;
        const int to_ws = t[0] & 1;
        fz_add(in, &cnt, &pw13, w13, E * sizeof(void *), 8, 0);
        fz_add(in, &cnt, &pb13, b13, E * sizeof(size_t), 8, 0);
        fz_add(in, &cnt, &pw2, w2, E * sizeof(void *), 8, 0);
        fz_add(in, &cnt, &pb2, b2, E * sizeof(size_t), 8, 0);
        fz_add(in, &cnt, &ptw, tw, m * topk * 4, 4, 0);
        fz_add(in, &cnt, &pids, ids, m * topk * 4, 4, 0);
        fz_add(in, &cnt, &px, x, m * K * 2, 2, !to_ws); /* x may overlap out (read before out is written) */
        fz_add(in, &cnt, &pmw, &mw, sizeof mw, 8, 1); /* the structs are copied at entry: out and the workspace may overlap them */
        fz_add(in, &cnt, &po_, &o, sizeof o, 8, 1);
        fz_add(in, &cnt, &pctx, &c, sizeof c, 8, 1);
        if (split) fz_add(in, &cnt, &pw, p13, split, 64, 0);
        if (body_n - split) fz_add(in, &cnt, &pw, p2, body_n - split, 64, 0);
        kx = (size_t)(t[0] >> 1) % cnt;
        fz_arena_open(&ar, to_ws ? ws : ob, in[kx].bytes, in[kx].align, t[1]);
        if (to_ws) pws = ar.base + ar.oo;
        else po = ar.base + ar.oo;
        fz_place_input(&ar, &in[kx]);
        if (in[kx].src == p13 || in[kx].src == p2) /* a pack: every expert's pointer to the copy */
            for (i = 0; i < E; i++) *(in[kx].src == p13 ? &w13[i] : &w2[i]) = pw;
        mw.w13 = (const void *const *)pw13, mw.w13_bytes = (const size_t *)pb13;
        mw.w2 = (const void *const *)pw2, mw.w2_bytes = (const size_t *)pb2;
        if (in[kx].src == &mw) memcpy(ar.base + ar.io, &mw, sizeof mw); /* the struct with the final pointers */
        fz_arena_seal(&ar);
        ob_eff = to_ws ? ws : ob, may = in[kx].may;
    }
    s = amxk_moe_experts((const amxk_ctx *)pctx, (const amxk_moe_weights *)pmw, NULL, (const amxk_moe_opts *)po_, m, px, xt, K, topk,
                         (const float *)ptw, (const int32_t *)pids, po, AMXK_DTYPE_F32, K, pws, ws);
    fz_same(out, copy, ob, s, "amxk_moe_experts");
    if (mode == 2 && must_fail && (fz_pack_status(qs) || fz_pack_status(s))) {
        fprintf(stderr, "amxk_moe: a NULL expert pack inside the shard [%zu, %zu): workspace query %d, call %d (want AMXK_ERR_NULL)\n", eb, ee,
                (int)qs, (int)s);
        abort();
    }
    if (mode == 3 && must_fail && (qs == AMXK_OK || s == AMXK_OK)) {
        fprintf(stderr, "amxk_moe: a pack 16 bytes past a 64-byte boundary inside the shard [%zu, %zu): workspace query %d, call %d\n", eb, ee,
                (int)qs, (int)s);
        abort();
    }
    if (mode == 1) fz_arena_check(&ar, s, ob_eff, may, "amxk_moe_experts arena"), fz_arena_free(&ar);
    free(p13), free(p2), free(tw), free(ids), free(x), free(out), free(copy), free(wsb), free(mis);
    return 0;
}
static int fz_conv1d(fz *f) {
    void *p = fz_copy(f->body, f->n);
    size_t dim = 16, n_seqs = 1 + f->p[1] % 4, i, t_end = 0, sbytes, xbytes, obytes, T;
    const size_t n_slots = 1 + f->p[2] % 4, slen = f->p[3] % 9, es = f->p[4] & 1 ? 2 : 4;
    const int update = f->p[4] >> 1 & 1, circ = f->p[4] >> 2 & 1, ds = f->p[4] >> 3 & 1, nostate = f->p[4] >> 4 & 1;
    const int arena = f->p[4] >> 5 & 1, to_state = f->p[4] >> 6 & 1, spec = f->p[4] >> 7 & 1;
    int32_t qsl[5], slot[4], cache[4], nat[4];
    uint8_t init[4];
    amxk_conv_state st;
    amxk_ctx c;
    amxk_status s;
    void *x, *out, *ocopy, *state, *scopy, *po;
    const void *pq, *ps, *pi, *pc, *pn, *px;
    const amxk_conv_state *pst;
    fz_arena ar;
    size_t ob_eff = 0;
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
        nat[i] = 1 + (int32_t)(f->p[10 + i] & 3); /* SPEC: 1..4, valid while a_n + W <= state_len + 2 */
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
    /* what the call is given (ARENA moves one output and one input into the arena) */
    pq = update && !(f->p[5] & 4) ? NULL : qsl, ps = f->p[5] & 8 ? NULL : slot, pi = update ? NULL : init;
    pc = update && circ ? cache : NULL, pn = spec ? nat : NULL, px = x, po = out;
    pst = update || !nostate ? &st : NULL;
    T = pq ? (qsl[n_seqs] > 0 ? (size_t)qsl[n_seqs] : 0) : n_seqs; /* the call's token count (valid qsl) */
    if (arena) {
        fz_input in[6];
        size_t cnt = 0, k;
        const int use_state = to_state && pst && slen;
        const size_t sb =
            ((n_slots - 1) * (n_slots > 1 ? st.slot_stride : 0) + (dim - 1) * st.dim_stride + (slen ? slen - 1 : 0) * st.tok_stride + 1) * es;
        const size_t ob = use_state ? sb : (T ? T : 1) * dim * es; /* ldo = dim: ((T - 1) * ldo + dim) elements */
        if (pq) fz_add(in, &cnt, &pq, qsl, (n_seqs + 1) * 4, 4, 0);
        if (ps) fz_add(in, &cnt, &ps, slot, n_seqs * 4, 4, 0);
        if (pi) fz_add(in, &cnt, &pi, init, n_seqs, 1, 0);
        if (pc) fz_add(in, &cnt, &pc, cache, n_seqs * 4, 4, 0);
        if (pn && pst) fz_add(in, &cnt, &pn, nat, n_seqs * 4, 4, 0);
        fz_add(in, &cnt, &px, x, (T ? T : 1) * dim * es, es, 0);
        k = f->p[14] % cnt;
        fz_arena_open(&ar, ob, in[k].bytes, in[k].align, f->p[15]);
        fz_place_input(&ar, &in[k]);
        if (use_state) st.data = ar.base + ar.oo;
        else po = ar.base + ar.oo;
        fz_arena_seal(&ar);
        ob_eff = T ? ob : 0; /* no tokens: AMXK_OK before any check, nothing written */
    }
    st.num_accepted_tokens = (const int32_t *)pn;
    if (update)
        s = amxk_conv1d_update(&c, p, f->n, f->p[5] >> 3 & 1, n_seqs, (const int32_t *)pq, (const int32_t *)ps, (const int32_t *)pc, px, st.dtype,
                               dim, po, st.dtype, dim, &st);
    else
        s = amxk_conv1d_prefill(&c, p, f->n, f->p[5] >> 3 & 1, n_seqs, (const int32_t *)pq, (const int32_t *)ps, (const uint8_t *)pi, px, st.dtype,
                                dim, po, st.dtype, dim, pst);
    fz_same(out, ocopy, obytes, s, "amxk_conv1d out");
    fz_same(state, scopy, sbytes, s, "amxk_conv1d state");
    if (arena) fz_arena_check(&ar, s, ob_eff, 0, "amxk_conv1d arena"), fz_arena_free(&ar);
    free(p), free(x), free(out), free(ocopy), free(state), free(scopy);
    return 0;
}
static int fz_gdn(fz *f) {
    const size_t H = 1 + f->p[1] % 2, HV = H * (1 + f->p[1] / 2 % 2), dk = 1 + f->p[2] % 32, dv = 1 + f->p[3] % 32;
    const int fused = f->p[6] & 1, bf = f->p[6] >> 1 & 1, vfirst = f->p[6] >> 2 & 1, arena = f->p[6] >> 5 & 1, spec = f->p[6] >> 6 & 1;
    const size_t n_seqs = 1 + f->p[4] % 4, hsz = dk * dv, sc = spec ? 1 + (size_t)fz_at(f, 3) % 4 : 1;
    const size_t n_slots = spec ? n_seqs * sc + f->p[5] % 4 : 1 + f->p[5] % 4;
    const amxk_gdn_mode mode = (amxk_gdn_mode)(f->p[6] >> 3 & 3);
    amxk_gdn_params gp = amxk_gdn_params_default(H, HV, dk, dv);
    amxk_gdn_inputs in;
    amxk_gdn_state st;
    int32_t qsl[5], slot[16], nat[4];
    uint8_t init[4];
    size_t i, t_end = 0, es = bf ? 2 : 4, ws, sbytes, obytes, T, ob_eff = 0;
    amxk_ctx c;
    amxk_status s;
    void *q, *k, *v, *o, *ocopy, *wsb, *po, *pws;
    float *g, *beta, *a, *b, *alog, *dtb, *state, *scopy;
    const void *pq, *ps, *pi, *pin, *pgp;
    fz_arena ar;
    int may = 0;
    fz_ctx(&c, f->p[0]);
    gp.state_v_first = vfirst;
    qsl[0] = (int32_t)(f->p[7] & 3);
    for (i = 0; i < n_seqs; i++) {
        const uint8_t bb = f->p[8 + i];
        const int32_t len = spec ? (int32_t)((bb & 15) % (sc + 1)) : (int32_t)(bb & 15); /* SPEC: mostly <= spec_cols */
        qsl[i + 1] = bb & 0x80 ? qsl[i] - (int32_t)(bb & 3) : qsl[i] + len;
        slot[i] = (int32_t)(bb >> 4 & 7) - 1;
        init[i] = (uint8_t)(f->p[12 + i] & 1);
        nat[i] = 1 + (int32_t)((size_t)(f->p[12 + i] >> 1) % sc);
    }
    if (spec) { /* slot rows [n_seqs][sc]: distinct slots, then perhaps one entry changed (-1, a repeat, any) */
        const uint8_t rot = fz_at(f, 4), at = fz_at(f, 5), val = fz_at(f, 6);
        for (i = 0; i < n_seqs * sc; i++) slot[i] = (int32_t)((i + rot) % n_slots);
        if (at & 0x80) slot[at % (n_seqs * sc)] = val & 0x80 ? -1 : (int32_t)(val % (n_slots + 1));
    }
    for (i = 0; i <= n_seqs; i++) t_end = qsl[i] > 0 && (size_t)qsl[i] > t_end ? (size_t)qsl[i] : t_end;
    t_end += 1;
    T = qsl[n_seqs] > 0 ? (size_t)qsl[n_seqs] : 0; /* the call's token count (valid qsl) */
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
    if (spec) in.num_accepted_tokens = nat, in.spec_cols = sc;
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
    /* what the call is given (ARENA moves one output and one input into the arena) */
    pq = qsl, ps = f->p[7] & 4 ? NULL : slot, pi = f->p[7] & 8 ? NULL : init, pin = &in, pgp = &gp, po = o, pws = wsb;
    if (arena) {
        fz_input ins[14];
        size_t cnt = 0, kx;
        const size_t Tm = T ? T : 1, which = fz_at(f, 0) % 3;
        const size_t ob = which == 0 ? Tm * HV * dv * 4 /* ldo = HV * dv, f32 */
                          : which == 1 ? ((n_slots - 1) * (n_slots > 1 ? st.slot_stride : 0) + HV * hsz) * 4
                                       : ws;
        fz_add(ins, &cnt, &pq, qsl, (n_seqs + 1) * 4, 4, 0);
        if (ps) fz_add(ins, &cnt, &ps, slot, n_seqs * sc * 4, 4, 0);
        if (pi) fz_add(ins, &cnt, &pi, init, n_seqs, 1, 0);
        if (spec) fz_add(ins, &cnt, (const void **)&in.num_accepted_tokens, nat, n_seqs * 4, 4, 0);
        if (fused) {
            fz_add(ins, &cnt, &in.a, a, Tm * HV * 4, 4, 0);
            fz_add(ins, &cnt, &in.b, b, Tm * HV * 4, 4, 0);
            fz_add(ins, &cnt, &in.A_log, alog, HV * 4, 4, 0);
            fz_add(ins, &cnt, &in.dt_bias, dtb, HV * 4, 4, 0);
        } else {
            fz_add(ins, &cnt, (const void **)&in.g, g, Tm * HV * 4, 4, 0);
            fz_add(ins, &cnt, (const void **)&in.beta, beta, Tm * HV * 4, 4, 0);
        }
        fz_add(ins, &cnt, &in.q, q, Tm * H * dk * es, es, 0);
        fz_add(ins, &cnt, &in.k, k, Tm * H * dk * es, es, 0);
        fz_add(ins, &cnt, &in.v, v, Tm * HV * dv * es, es, 0);
        fz_add(ins, &cnt, &pin, &in, sizeof in, 8, 1); /* copied at entry: any output may overlap them */
        fz_add(ins, &cnt, &pgp, &gp, sizeof gp, 8, 1);
        kx = fz_at(f, 1) % cnt;
        fz_arena_open(&ar, ob, ins[kx].bytes, ins[kx].align, fz_at(f, 2));
        if (which == 1)
            for (i = 0; i < ob / 4; i++) ((float *)(ar.base + ar.oo))[i] = 0.01f;
        if (which == 0) po = ar.base + ar.oo;
        else if (which == 1) st.data = (float *)(ar.base + ar.oo);
        else pws = ar.base + ar.oo;
        if (ins[kx].slot != &pin) fz_place_input(&ar, &ins[kx]);
        else memcpy(ar.base + ar.io, &in, sizeof in), pin = ar.base + ar.io; /* the struct with the final pointers */
        fz_arena_seal(&ar);
        ob_eff = T ? ob : 0; /* no tokens: AMXK_OK before any check, nothing written */
        may = ins[kx].may;
    }
    s = amxk_gdn(&c, (const amxk_gdn_params *)pgp, mode, (const amxk_gdn_inputs *)pin, n_seqs, (const int32_t *)pq, (const int32_t *)ps,
                 (const uint8_t *)pi, &st, po, AMXK_DTYPE_F32, HV * dv, pws, ws);
    fz_same(o, ocopy, obytes, s, "amxk_gdn out");
    fz_same(state, scopy, sbytes, s, "amxk_gdn state");
    if (arena) fz_arena_check(&ar, s, ob_eff, may, "amxk_gdn arena"), fz_arena_free(&ar);
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
