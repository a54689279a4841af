/* tests/fuzz/gen_corpus.c - the seed corpus of tests/fuzz/fuzz.c: valid packs of every format (bf16,
   fp16; int8 / int4 / int2, symmetric and asymmetric, per group and per channel; fp8 e4m3 / e5m2 per
   channel, per tensor and in blocks; K with and without padding columns), conv packs, and parameter
   bytes for every target, in the framing fuzz.c reads (FUZZ_PARAMS parameter bytes, then the payload).
   Then the seeds of fuzz.c's issue-31 modes (see its header): FP8 (info / linear / linear_q8: the
   harness's own e4m3 pack, scales at FLT_MAX / 448), ARENA (conv1d, gdn, moe: every output against
   every input the call reads, touching and overlapping), SPEC (conv1d, gdn) and moe's NULL experts and
   misaligned pack, each a valid call but for what the mode tests.
   Usage: gen_corpus DIR  -> DIR/info, DIR/linear, DIR/linear_q8, DIR/moe, DIR/conv1d, DIR/gdn. */
#define _POSIX_C_SOURCE 200112L
#define AMXK_IMPLEMENTATION
#include "../../amxk.h"
#include "../../amxk_pack.h"
#include "../../amxk_gdn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PARAMS 16
static const char *dir;
static int n_files;

static void put(const char *target, int idx, const unsigned char *params, const void *a, size_t na, const void *b, size_t nb) {
    char path[512];
    FILE *f;
    sprintf(path, "%s/%s", dir, target);
    mkdir(path, 0777);
    sprintf(path, "%s/%s/seed_%03d", dir, target, idx);
    if (!(f = fopen(path, "wb"))) {
        perror(path);
        exit(1);
    }
    fwrite(params, 1, PARAMS, f);
    if (na) fwrite(a, 1, na, f);
    if (nb) fwrite(b, 1, nb, f);
    fclose(f);
    n_files++;
}

/* put() of a + b + tail (moe's modes read 4 parameter bytes from the payload's end). */
static void put3(const char *target, int idx, const unsigned char *params, const void *a, size_t na, const void *b, size_t nb,
                 const unsigned char *tail, size_t nt) {
    unsigned char *buf = (unsigned char *)malloc(na + nb + nt + 1);
    if (na) memcpy(buf, a, na);
    if (nb) memcpy(buf + na, b, nb);
    if (nt) memcpy(buf + na + nb, tail, nt);
    put(target, idx, params, buf, na + nb + nt, NULL, 0);
    free(buf);
}

static unsigned rng_state = 12345u;
static unsigned char rng_byte(void) {
    rng_state = rng_state * 1103515245u + 12345u;
    return (unsigned char)(rng_state >> 16);
}

/* A pack of W[n, k] (weights from a fixed pattern): q NULL for 16-bit packs of dtype dt. */
static void *pack(const amxk_quant *q, amxk_dtype dt, size_t n, size_t k, size_t *bytes) {
    float *w = (float *)malloc(n * k * 4);
    void *p = NULL;
    size_t i;
    for (i = 0; i < n * k; i++) w[i] = (float)((int)(i * 7919 % 41) - 20) * 0.05f;
    if (q ? amxk_pack_quant_size(q, n, k, bytes) : amxk_pack_linear_size(dt, n, k, bytes)) exit(2);
    if (posix_memalign(&p, 64, *bytes)) exit(2);
    if (q ? amxk_quantize_pack(NULL, p, *bytes, q, w, AMXK_DTYPE_F32, n, k, k) : amxk_pack_linear(NULL, p, *bytes, dt, w, AMXK_DTYPE_F32, n, k, k))
        exit(2);
    free(w);
    return p;
}

int main(int argc, char **argv) {
    static const struct { amxk_qformat f; int asym; size_t bn, bk; } qs[] = {
        {AMXK_QFMT_NONE, 0, 0, 0},        {AMXK_QFMT_INT8, 0, 1, 0},        {AMXK_QFMT_INT8, 1, 1, 8},  {AMXK_QFMT_INT4, 0, 1, 8},
        {AMXK_QFMT_INT4, 1, 1, 0},        {AMXK_QFMT_INT2, 0, 1, 16},       {AMXK_QFMT_INT2, 1, 1, 0},  {AMXK_QFMT_FP8_E4M3, 0, 1, 0},
        {AMXK_QFMT_FP8_E4M3, 0, 128, 128}, {AMXK_QFMT_FP8_E4M3, 0, 16, 16}, {AMXK_QFMT_FP8_E5M2, 0, 1, 0}, {AMXK_QFMT_FP8_E5M2, 0, 0, 0},
        {AMXK_QFMT_MXFP4, 0, 1, 32}};
    static const size_t shapes[][2] = {{20, 40}, {32, 64}, {16, 96}};
    unsigned char prm[PARAMS];
    size_t i, s, bytes;
    int idx = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    mkdir(dir, 0777);
    /* packs: info, linear, linear_q8 (and the fp16 variant of the 16-bit pack) */
    for (s = 0; s < 3; s++)
        for (i = 0; i <= sizeof qs / sizeof qs[0]; i++) {
            const size_t n = shapes[s][0], k = shapes[s][1];
            amxk_quant q;
            void *p;
            if (i < sizeof qs / sizeof qs[0] && qs[i].f == AMXK_QFMT_MXFP4 && k % 32) continue; /* MXFP4: K a multiple of 32 */
            if (i < sizeof qs / sizeof qs[0] && qs[i].f != AMXK_QFMT_NONE) {
                q.format = qs[i].f, q.asym = qs[i].asym, q.block_n = qs[i].bn ? qs[i].bn : n, q.block_k = qs[i].bk ? qs[i].bk : k;
                if (k % q.block_k && q.format < AMXK_QFMT_FP8_E4M3) q.block_k = k;
                p = pack(&q, AMXK_DTYPE_INVALID, n, k, &bytes);
            } else {
                p = pack(NULL, i ? AMXK_DTYPE_F16 : AMXK_DTYPE_BF16, n, k, &bytes);
            }
            memset(prm, 0, sizeof prm);
            prm[0] = (unsigned char)(idx * 5), prm[1] = (unsigned char)(idx % 13), prm[2] = (unsigned char)(i == sizeof qs / sizeof qs[0]);
            prm[3] = (unsigned char)idx, prm[4] = (unsigned char)(idx & 1);
            put("info", idx, prm, p, bytes, NULL, 0);
            put("linear", idx, prm, p, bytes, NULL, 0);
            prm[2] = (unsigned char)(idx % 3 ? 1 : 0);
            put("linear_q8", idx, prm, p, bytes, NULL, 0);
            free(p);
            idx++;
        }
    /* MoE: a w13 pack [2N, K] and a w2 pack [K, N], 16-bit or quantized */
    for (i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        const size_t K = 64, N = 32;
        amxk_quant q;
        void *p13, *p2;
        size_t b13, b2;
        q.format = qs[i].f, q.asym = qs[i].asym, q.block_n = qs[i].bn ? qs[i].bn : 1, q.block_k = qs[i].bk ? qs[i].bk : 32;
        if (q.format >= AMXK_QFMT_FP8_E4M3 && !qs[i].bn) q.block_n = 128, q.block_k = 128;
        p13 = pack(qs[i].f == AMXK_QFMT_NONE ? NULL : &q, AMXK_DTYPE_BF16, 2 * N, K, &b13);
        p2 = pack(qs[i].f == AMXK_QFMT_NONE ? NULL : &q, AMXK_DTYPE_BF16, K, N, &b2);
        memset(prm, 0, sizeof prm);
        prm[0] = (unsigned char)(i * 3), prm[1] = (unsigned char)i, prm[2] = (unsigned char)(i + 1), prm[3] = (unsigned char)i;
        prm[5] = (unsigned char)(i % 3 | (qs[i].f >= AMXK_QFMT_INT8 && qs[i].f <= AMXK_QFMT_INT2 && i % 2 ? 4 : 0));
        prm[6] = (unsigned char)(b13 & 0xff), prm[7] = (unsigned char)(b13 >> 8);
        for (s = 8; s < PARAMS; s++) prm[s] = (unsigned char)(s * 7 + i);
        put("moe", (int)i, prm, p13, b13, p2, b2);
        free(p13), free(p2);
    }
    /* conv1d: packs of dim 16 / 20 / 40, widths 2 / 4, with and without bias; prefill and update */
    for (i = 0; i < 12; i++) {
        const size_t dim = i % 3 == 0 ? 16 : i % 3 == 1 ? 20 : 40, width = i % 2 ? 4 : 2;
        float w[40 * 4], bias[40];
        void *p = NULL;
        for (s = 0; s < dim * width; s++) w[s] = 0.1f * (float)(s % 5);
        for (s = 0; s < dim; s++) bias[s] = 0.01f * (float)s;
        if (amxk_conv1d_pack_size(dim, width, &bytes) || posix_memalign(&p, 64, bytes) ||
            amxk_conv1d_pack(NULL, p, bytes, w, AMXK_DTYPE_F32, dim, width, width, i % 4 < 2 ? bias : NULL))
            return 2;
        memset(prm, 0, sizeof prm);
        prm[0] = (unsigned char)i, prm[1] = (unsigned char)i, prm[2] = (unsigned char)(i + 1), prm[3] = (unsigned char)(3 + i % 5);
        prm[4] = (unsigned char)((i & 1) | (i & 2 ? 2 : 0) | (i & 4 ? 4 : 0) | (i & 8 ? 8 : 0));
        prm[5] = (unsigned char)(i & 4 ? 4 : 0);
        for (s = 0; s < 4; s++) prm[6 + s] = (unsigned char)((s + 1) | s << 3), prm[10 + s] = (unsigned char)(i * 3 + s);
        put("conv1d", (int)i, prm, p, bytes, NULL, 0);
        free(p);
    }
    /* gdn: parameters only */
    for (i = 0; i < 16; i++) {
        memset(prm, 0, sizeof prm);
        prm[0] = (unsigned char)i, prm[1] = (unsigned char)i, prm[2] = (unsigned char)(i * 5 + 15), prm[3] = (unsigned char)(i * 3 + 15);
        prm[4] = (unsigned char)i, prm[5] = (unsigned char)(i + 3), prm[6] = (unsigned char)((i & 7) | (i % 3) << 3);
        for (s = 0; s < 4; s++) prm[8 + s] = (unsigned char)((s * 3 + i) % 16 | s << 4), prm[12 + s] = (unsigned char)s;
        put("gdn", (int)i, prm, NULL, 0, NULL, 0);
    }
    /* ---- issue 31 modes ---- */
    /* FP8 (p[5] bit 0): N = 1 + p[6] % 40, K = 1 + p[7] % 130, blocks p[8] / p[9] (bit 7: beyond N / K),
       p[10] bit 0 scales near FLT_MAX / 448 (bit 1: up to FLT_MAX, small codes), p[11] x's exponent;
       M = 1 + p[1] % 24; payload: scales, codes, x */
    {
        static const unsigned char cf[][7] = {
            /* m-1, n-1, k-1, bn, bk, near max, x exp */
            {0, 39, 95, 0, 31, 1, 0},   {2, 39, 95, 15, 31, 1, 40}, {3, 15, 63, 0x80, 0x80, 1, 20}, {4, 39, 129, 0, 63, 1, 0},
            {11, 31, 31, 0, 31, 1, 40}, {16, 20, 99, 4, 9, 1, 10},  {23, 7, 127, 0x81, 0, 1, 30},   {5, 16, 16, 2, 3, 0, 5},
            /* p[10] bit 1: scales up to FLT_MAX, codes limited so that every weight stays finite */
            {0, 39, 95, 0, 31, 3, 0},   {11, 39, 95, 15, 31, 3, 40}, {16, 31, 63, 0x80, 0x80, 3, 20}, {4, 20, 99, 4, 9, 2, 10},
        };
        for (i = 0; i < sizeof cf / sizeof cf[0]; i++, idx++) {
            unsigned char body[768];
            for (s = 0; s < sizeof body; s++) body[s] = rng_byte();
            memset(prm, 0, sizeof prm);
            prm[0] = (unsigned char)(i * 37 | (i & 1 ? 0x80 : 0)), prm[1] = cf[i][0], prm[5] = 1, prm[6] = cf[i][1], prm[7] = cf[i][2];
            prm[8] = cf[i][3], prm[9] = cf[i][4], prm[10] = cf[i][5], prm[11] = cf[i][6];
            put("info", idx, prm, body, sizeof body, NULL, 0);
            put("linear", idx, prm, body, sizeof body, NULL, 0);
            put("linear_q8", idx, prm, body, sizeof body, NULL, 0);
        }
    }
    /* moe modes (p[4] bits 2-3; 4 tail bytes): E = 3, M = 4, topk = 2, ids 0 1 2 -1 ..., a bf16 and an
       int8 pair of packs [2N, K] / [K, N] */
    {
        int mi = (int)(sizeof qs / sizeof qs[0]);
        size_t pk;
        for (pk = 0; pk < 2; pk++) {
            const size_t K = 64, N = 32;
            amxk_quant q;
            void *p13, *p2;
            size_t b13, b2, kx, to_ws, sel, e;
            unsigned char tail[4];
            q.format = AMXK_QFMT_INT8, q.asym = 0, q.block_n = 1, q.block_k = 32;
            p13 = pack(pk ? &q : NULL, AMXK_DTYPE_BF16, 2 * N, K, &b13);
            p2 = pack(pk ? &q : NULL, AMXK_DTYPE_BF16, K, N, &b2);
            memset(prm, 0, sizeof prm);
            prm[0] = (unsigned char)(pk * 0x81), prm[1] = 2, prm[2] = 3, prm[3] = 1;
            prm[6] = (unsigned char)(b13 & 0xff), prm[7] = (unsigned char)(b13 >> 8);
            for (s = 8; s < PARAMS; s++) prm[s] = (unsigned char)((s + pk) % 4 + 4); /* % 4 - 1: 0 1 2 -1 */
            /* ARENA: out / workspace (tail 0 bit 0) x the 12 inputs (tail 0 >> 1), tail 1 the offset */
            for (to_ws = 0; to_ws < 2; to_ws++)
                for (kx = 0; kx < 12; kx++)
                    for (sel = 0; sel < 3; sel++) {
                        static const unsigned char sels[3] = {1, 255, 128};
                        prm[4] = 1 << 2;
                        tail[0] = (unsigned char)(to_ws | kx << 1), tail[1] = sels[(sel + kx + pk) % 3], tail[2] = tail[3] = 0;
                        put3("moe", mi++, prm, p13, b13, p2, b2, tail, 4);
                    }
            /* NULL experts: tail 0 the NULL mask (w13 bits 0-2, w2 bits 3-5), tail 1 the shard */
            for (e = 0; e < 6; e++) {
                static const unsigned char masks[6] = {0x01, 0x10, 0x24, 0x01, 0x04, 0x38};
                static const unsigned char shards[6] = {0, 0, 0, 1 | 1 << 1 | 1 << 3, 1 | 0 << 1 | 0 << 3, 1 | 0 << 1 | 1 << 3};
                prm[4] = 2 << 2;
                tail[0] = masks[e], tail[1] = shards[e], tail[2] = tail[3] = 0; /* e 3: NULL outside the shard [1, 3) */
                put3("moe", mi++, prm, p13, b13, p2, b2, tail, 4);
            }
            /* misaligned pack: tail 0 bit 0 w2, tail 1 the expert, tail 2 the shard */
            for (e = 0; e < 6; e++) {
                prm[4] = 3 << 2;
                tail[0] = (unsigned char)(e & 1), tail[1] = (unsigned char)(e % 3), tail[2] = e == 5 ? (unsigned char)(1 | 0 << 1 | 0 << 3) : 0,
                tail[3] = 0; /* e 5: expert 2 outside the shard [0, 1) */
                put3("moe", mi++, prm, p13, b13, p2, b2, tail, 4);
            }
            free(p13), free(p2);
        }
    }
    /* conv1d ARENA / SPEC: dim 16 (f32) or 20 (bf16), W 4, 3 sequences (lengths 2 3 1, slots 1 0 3),
       4 slots; configs: prefill, prefill + SPEC, update + cache_seqlens, update + SPEC; output out or the
       state (p[4] bit 6), the input p[14] % count, the offset p[15] */
    {
        int ci = 12;
        size_t cfg, to_state, kx;
        for (cfg = 0; cfg < 4; cfg++) {
            const size_t dim = cfg & 1 ? 20 : 16, width = 4;
            const int update = cfg >= 2, spec = cfg == 1 || cfg == 3;
            float w[20 * 4], bias[20];
            void *p = NULL;
            const size_t n_in = cfg == 1 ? 5 : 4; /* prefill: qsl slot init [nat] x; update: qsl slot cache|nat x */
            for (s = 0; s < dim * width; s++) w[s] = 0.1f * (float)(s % 5);
            for (s = 0; s < dim; s++) bias[s] = 0.01f * (float)s;
            if (amxk_conv1d_pack_size(dim, width, &bytes) || posix_memalign(&p, 64, bytes) ||
                amxk_conv1d_pack(NULL, p, bytes, w, AMXK_DTYPE_F32, dim, width, width, bias))
                return 2;
            for (to_state = 0; to_state < 2; to_state++)
                for (kx = 0; kx < n_in; kx++) {
                    static const unsigned char sels[5] = {1, 255, 254, 0, 128};
                    int r;
                    for (r = 0; r < 2; r++) {
                        memset(prm, 0, sizeof prm);
                        prm[0] = (unsigned char)(ci * 11), prm[1] = 2, prm[2] = 3, prm[3] = spec ? 5 : 3;
                        prm[4] = (unsigned char)((cfg & 1) | (update ? 2 : 0) | (cfg == 2 ? 4 : 0) | 0x20 | (to_state ? 0x40 : 0) |
                                                 (spec ? 0x80 : 0));
                        prm[5] = (unsigned char)(update ? 4 : 0); /* update: query_start_loc given */
                        prm[6] = 2 | 2 << 3, prm[7] = (unsigned char)(3 | 1 << 3 | (update ? 0 : 1 << 6)); /* update: cache_seqlens >= 0 */
                        prm[8] = (unsigned char)(1 | 4 << 3 | (update ? 0 : 1 << 6));
                        prm[10] = 0, prm[11] = 1, prm[12] = 2; /* cache_seqlens 0, 0x01010101, 0x02020202; SPEC a_n 1 2 3 */
                        prm[14] = (unsigned char)kx, prm[15] = sels[(kx + to_state * 2 + r * 3 + cfg) % 5];
                        put("conv1d", ci++, prm, p, bytes, NULL, 0);
                    }
                }
            free(p);
        }
        /* SPEC without the arena, prefill and update, a_n out of range too */
        for (cfg = 0; cfg < 4; cfg++) {
            void *p = NULL;
            float w[16 * 4];
            for (s = 0; s < 16 * 4; s++) w[s] = 0.05f * (float)(s % 7);
            if (amxk_conv1d_pack_size(16, 4, &bytes) || posix_memalign(&p, 64, bytes) ||
                amxk_conv1d_pack(NULL, p, bytes, w, AMXK_DTYPE_F32, 16, 4, 4, NULL))
                return 2;
            memset(prm, 0, sizeof prm);
            prm[0] = (unsigned char)cfg, prm[1] = 2, prm[2] = 3, prm[3] = (unsigned char)(cfg == 3 ? 4 : 5);
            prm[4] = (unsigned char)((cfg & 2) | 0x80), prm[5] = (unsigned char)(cfg & 2 ? 4 : 0);
            prm[6] = 2 | 2 << 3, prm[7] = (unsigned char)(3 | 1 << 3 | (cfg & 2 ? 0 : 1 << 6));
            prm[8] = (unsigned char)(1 | 4 << 3 | (cfg & 2 ? 0 : 1 << 6));
            prm[10] = (unsigned char)cfg, prm[11] = 1, prm[12] = 2;
            put("conv1d", ci++, prm, p, bytes, NULL, 0);
            free(p);
        }
    }
    /* gdn ARENA / SPEC: H 1 / HV 2, dk 16, dv 8 (or 32 / 17), 3 sequences (lengths 2 3 1, slots 1 0 3),
       4 slots; payload 0: the output (o, state, workspace), 1: the input, 2: the offset; SPEC: payload 3
       spec_cols - 1, 4 the slot rotation, 5 / 6 one changed entry */
    {
        int gi = 16;
        size_t fused, which, kx;
        for (fused = 0; fused < 2; fused++)
            for (which = 0; which < 3; which++)
                for (kx = 0; kx < (fused ? 12u : 10u); kx++) {
                    static const unsigned char sels[5] = {1, 255, 254, 0, 128};
                    unsigned char body[8];
                    memset(prm, 0, sizeof prm);
                    prm[0] = (unsigned char)(gi * 7), prm[1] = (unsigned char)(fused ? 2 : 0), prm[2] = (unsigned char)(fused ? 31 : 15),
                    prm[3] = (unsigned char)(fused ? 16 : 7), prm[4] = 2, prm[5] = 3;
                    /* bf16 q / k / v on odd inputs; mode recurrent with the workspace */
                    prm[6] = (unsigned char)(fused | (kx & 1) << 1 | (which == 2 ? 1u << 3 : 0u) | 0x20);
                    prm[7] = (unsigned char)(kx % 3 == 0 ? 1 : 0);
                    prm[8] = 2 | 2 << 4, prm[9] = 3 | 1 << 4, prm[10] = 1 | 4 << 4, prm[12] = 1, prm[13] = 0, prm[14] = 1;
                    memset(body, 0, sizeof body);
                    body[0] = (unsigned char)which, body[1] = (unsigned char)kx, body[2] = sels[(kx + which + fused) % 5];
                    put("gdn", gi++, prm, body, sizeof body, NULL, 0);
                }
        /* SPEC: spec_cols 2 / 3 / 4, lengths <= spec_cols, valid rows; arena over num_accepted_tokens and the slots too */
        for (kx = 0; kx < 8; kx++) {
            unsigned char body[8];
            memset(prm, 0, sizeof prm);
            prm[0] = (unsigned char)(kx * 29), prm[1] = (unsigned char)(kx & 2), prm[2] = 15, prm[3] = 15, prm[4] = 2, prm[5] = (unsigned char)kx;
            prm[6] = (unsigned char)((kx & 1) | 0x40 | (kx >= 4 ? 0x20 : 0));
            prm[8] = 2, prm[9] = 1, prm[10] = 3, prm[12] = 0, prm[13] = 2, prm[14] = 4; /* a_n 1, 2, 3 (mod spec_cols) */
            memset(body, 0, sizeof body);
            body[0] = (unsigned char)(kx % 3), body[1] = (unsigned char)(kx >= 4 ? 1 + (kx & 2) : 0), body[2] = kx & 1 ? 1 : 255;
            body[3] = (unsigned char)(1 + kx % 3), body[4] = (unsigned char)kx, body[5] = kx == 3 ? 0x81 : 0, body[6] = 0x80;
            put("gdn", gi++, prm, body, sizeof body, NULL, 0);
        }
    }
    printf("%d seed files in %s\n", n_files, dir);
    return 0;
}
