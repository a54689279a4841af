/* tests/fuzz/gen_corpus.c - the seed corpus of tests/fuzz/fuzz.c: valid packs of every format (bf16,
   fp16; int8 / int4 / int2, symmetric and asymmetric, per group and per channel; fp8 e4m3 / e5m2 per
   channel, per tensor and in blocks; K with and without padding columns), conv packs, and parameter
   bytes for every target, in the framing fuzz.c reads (FUZZ_PARAMS parameter bytes, then the payload).
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
    printf("%d seed files in %s\n", n_files, dir);
    return 0;
}
