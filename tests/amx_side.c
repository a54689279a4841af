/* tests/amx_side.c - one "side" of tests/amx_silicon.c (issue 28 item 3): a private amxk (AMXK_STATIC)
   at the AMX level, with the wrappers declared in tests/amx_side.h, named after the side.

   Built twice (tests/amx_silicon.mk):
       -DSIDE=nat                      the native build: real tile instructions where the compiler can
                                       emit them (AMXK__HAS_AMX) and the CPU has AMX
       -DSIDE=emu -DAMXK_AMX_EMULATE   the software tile emulator
   both with -DAMXK_STATIC, so the two copies of the implementation (and the extern one the main program
   links, build/amxk_impl.o) do not clash. The raw-tile wrapper uses amxk.h's private tile macros
   (AMXK__TILE_*, AMXK__TDP*, AMXK__TARGET_AMX_BEGIN/END), so both sides run the same source: the
   hardware instructions in one, the emulator in the other.

   Local self-test builds only (make -f Makefile -f tests/amx_silicon.mk amx-silicon-selftest): -DSIDE=nat
   together with -DAMXK_AMX_EMULATE, an emulator posing as the native side (emulator vs emulator). */
#ifndef SIDE
#  error "compile with -DSIDE=nat or -DSIDE=emu (see tests/amx_silicon.mk)"
#endif
#ifndef AMXK_STATIC
#  error "compile with -DAMXK_STATIC (each side holds a private copy of amxk)"
#endif

#define AMXK_IMPLEMENTATION
#include "../amxk.h"
#include "../amxk_pack.h"
#include "../amxk_moe.h"
#include "amx_side.h"

#include <stdlib.h>
#include <string.h>

#define AMX_SIDE_CAT3_(a, b, c) a##b##_##c
#define AMX_SIDE_CAT3(a, b, c) AMX_SIDE_CAT3_(a, b, c)
#define SIDE_FN(name) AMX_SIDE_CAT3(amx_side_, SIDE, name)

#define AMX_SIDE_AMX_BITS (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16)

/* Compiler barrier that also lets p escape: every store to memory (the caller's tile config image
   included) is done before the tile instructions read it, and nothing is cached across the tile
   stores. gcc 12's _tile_loadconfig declares only the first 8 bytes of the 64-byte image as its
   memory input ("m"(*(const void **)cfg)), so stores to the rest of a local image that nothing else
   reads can be deleted as dead (seen with gcc 12.2 -O2: colsb / rows never written); _tile_loadd takes
   its address in a register with no memory operand or clobber. */
#if defined(__GNUC__) || defined(__clang__)
#  define AMX_SIDE_BARRIER(p) __asm__ __volatile__("" : : "r"(p) : "memory")
#else
#  define AMX_SIDE_BARRIER(p) ((void)(p))
#endif

/* A 64-byte aligned block of at least `bytes` (0: NULL), filled with 0xA5 (workspace contents on entry
   are irrelevant to amxk; a fixed fill keeps runs repeatable). *raw receives what to free. */
static void *amx_side__alloc(size_t bytes, void **raw) {
    unsigned char *p;
    *raw = NULL;
    if (bytes == 0) return NULL;
    *raw = malloc(bytes + AMXK_ALIGN);
    if (!*raw) return NULL;
    p = (unsigned char *)*raw + (AMXK_ALIGN - (uintptr_t)*raw % AMXK_ALIGN) % AMXK_ALIGN;
    memset(p, 0xa5, bytes);
    return p;
}

static uint32_t amx_side__deny; /* amx_side_*_set_cpu_deny */

/* A serial context at the AMX level only. */
static amxk_status amx_side__ctx(amxk_ctx *ctx, int *tier) {
    amxk_status s;
    memset(ctx, 0, sizeof *ctx);
    ctx->isa_allow = AMXK_TIER_BIT(AMXK_TIER_AMX);
    ctx->n_workers = 1;
    ctx->cpu_deny = amx_side__deny;
    s = amxk_ctx_init(ctx);
    if (tier) *tier = s == AMXK_OK ? (int)ctx->tier : (int)AMXK_TIER_NONE;
    return s;
}

void SIDE_FN(set_cpu_deny)(uint32_t deny) { amx_side__deny = deny; }

int SIDE_FN(amx_usable)(void) {
#if AMXK__HAS_AMX
    amxk_ctx ctx;
    return (amxk_cpu_init()->tiers & AMXK_TIER_BIT(AMXK_TIER_AMX)) != 0 && amx_side__ctx(&ctx, NULL) == AMXK_OK;
#else
    return 0;
#endif
}

int SIDE_FN(amx_emulated)(void) {
#if defined(AMXK_AMX_EMULATE)
    return 1;
#else
    return 0;
#endif
}

uint32_t SIDE_FN(amx_features)(void) {
#if !AMXK__HAS_AMX
    return 0;
#else
    { /* what a context initialised now sees (natively the CPU's usable features; emulated: the set
         amxk_amx_emu_set_features last presented) */
        amxk_ctx ctx;
        if (amx_side__ctx(&ctx, NULL) != AMXK_OK) return 0;
        return ctx.features & AMX_SIDE_AMX_BITS;
    }
#endif
}

uint32_t SIDE_FN(set_amx_features)(uint32_t features) {
#if defined(AMXK_AMX_EMULATE)
    return amxk_amx_emu_set_features(features);
#else
    (void)features;
    return SIDE_FN(amx_features)();
#endif
}

#if AMXK__HAS_AMX
/* The tile part of amx_side_*_tdp: one function in the AMX target region (hardware) or plain C
   (emulator). Tile numbers must be literals (the hardware macros paste them into the mnemonic). */
AMXK__TARGET_AMX_BEGIN
static void amx_side__tdp_tiles(int op, int reps, const void *cfg, const void *a, size_t sa, const void *b, void *c, size_t sc) {
    int r;
    AMX_SIDE_BARRIER(cfg);
    AMX_SIDE_BARRIER(a);
    AMX_SIDE_BARRIER(b);
    AMX_SIDE_BARRIER(c);
    AMXK__TILE_LOADCONFIG(cfg);
    AMXK__TILE_LOADD(0, c, sc);
    AMXK__TILE_LOADD(1, a, sa);
    AMXK__TILE_LOADD(2, b, sc);
    for (r = 0; r < reps; r++) {
        switch (op) {
        case AMX_OP_BF16: AMXK__TDPBF16PS(0, 1, 2); break;
        case AMX_OP_FP16: AMXK__TDPFP16PS(0, 1, 2); break;
        case AMX_OP_BSSD: AMXK__TDPBSSD(0, 1, 2); break;
        case AMX_OP_BSUD: AMXK__TDPBSUD(0, 1, 2); break;
        case AMX_OP_BUSD: AMXK__TDPBUSD(0, 1, 2); break;
        default: AMXK__TDPBUUD(0, 1, 2); break;
        }
    }
    AMXK__TILE_STORED(0, c, sc);
    AMXK__TILE_RELEASE();
    AMX_SIDE_BARRIER(c);
}
AMXK__TARGET_AMX_END
#endif

int SIDE_FN(tdp)(int op, int reps, int rows, int c_colsb, int a_colsb, const void *a, const void *b, void *c) {
#if AMXK__HAS_AMX
    unsigned char cfg[64];
    uint32_t need;
    if (op < 0 || op >= AMX_OP_COUNT || reps < 0 || rows < 1 || rows > 16 || c_colsb < 4 || c_colsb > 64 || c_colsb % 4 ||
        a_colsb < 4 || a_colsb > 64 || a_colsb % 4 || !a || !b || !c)
        return -8;
    /* the CPU check also makes sure amxk_cpu_init has asked Linux for tile-data permission */
    need = op == AMX_OP_BF16 ? AMXK_CPU_AMX_BF16 : op == AMX_OP_FP16 ? AMXK_CPU_AMX_FP16 : AMXK_CPU_AMX_INT8;
    if (!SIDE_FN(amx_usable)() || !(SIDE_FN(amx_features)() & need) || !(SIDE_FN(amx_features)() & AMXK_CPU_AMX_TILE))
        return AMX_SIDE_UNSUPPORTED;
    memset(cfg, 0, sizeof cfg);
    cfg[0] = 1; /* palette 1 */
    /* colsb: 16-bit little-endian at 16 + 2t; rows at 48 + t */
    cfg[16 + 0] = (unsigned char)c_colsb, cfg[48 + 0] = (unsigned char)rows;       /* tmm0: C */
    cfg[16 + 2] = (unsigned char)a_colsb, cfg[48 + 1] = (unsigned char)rows;       /* tmm1: A */
    cfg[16 + 4] = (unsigned char)c_colsb, cfg[48 + 2] = (unsigned char)(a_colsb / 4); /* tmm2: B */
    amx_side__tdp_tiles(op, reps, cfg, a, (size_t)a_colsb, b, c, (size_t)c_colsb);
    return 0;
#else
    (void)op, (void)reps, (void)rows, (void)c_colsb, (void)a_colsb, (void)a, (void)b, (void)c;
    return AMX_SIDE_UNSUPPORTED;
#endif
}

int SIDE_FN(linear)(size_t m, size_t n, size_t k, const void *x, int x_dtype, const void *packed, size_t packed_bytes,
                    const float *bias, void *y, int y_dtype, int *tier) {
    amxk_ctx ctx;
    size_t wsb = 0;
    void *raw, *ws;
    amxk_status s = amx_side__ctx(&ctx, tier);
    if (s != AMXK_OK) return (int)s;
    s = amxk_linear_workspace_size_for(&ctx, m, packed, packed_bytes, &wsb);
    if (s != AMXK_OK) return (int)s;
    ws = amx_side__alloc(wsb, &raw);
    if (wsb && !ws) return (int)AMXK_ERR_WORKSPACE;
    s = amxk_linear(&ctx, m, n, k, x, (amxk_dtype)x_dtype, k, packed, packed_bytes, bias, y, (amxk_dtype)y_dtype, n, ws, wsb);
    free(raw);
    return (int)s;
}

int SIDE_FN(linear_q8)(size_t m, size_t n, size_t k, const void *xq, int xq_dtype, size_t ldq, const float *xscales,
                       size_t act_group, const void *packed, size_t packed_bytes, const float *bias, float *y, int use_ws,
                       int *tier) {
    amxk_ctx ctx;
    amxk_status s = amx_side__ctx(&ctx, tier);
    if (s != AMXK_OK) return (int)s;
    if (!act_group || k % act_group) return (int)AMXK_ERR_ARG;
    if (use_ws) {
        size_t wsb = 0;
        void *raw, *ws;
        s = amxk_linear_q8_workspace_size(&ctx, m, packed, packed_bytes, &wsb);
        if (s != AMXK_OK) return (int)s;
        ws = amx_side__alloc(wsb, &raw);
        if (wsb && !ws) return (int)AMXK_ERR_WORKSPACE;
        s = amxk_linear_q8_ws(&ctx, m, n, k, xq, (amxk_dtype)xq_dtype, ldq, xscales, AMXK_SCALES_ROW_MAJOR, k / act_group,
                              act_group, packed, packed_bytes, bias, y, AMXK_DTYPE_F32, n, ws, wsb);
        free(raw);
        return (int)s;
    }
    return (int)amxk_linear_q8(&ctx, m, n, k, xq, (amxk_dtype)xq_dtype, ldq, xscales, AMXK_SCALES_ROW_MAJOR, k / act_group,
                               act_group, packed, packed_bytes, bias, y, AMXK_DTYPE_F32, n);
}

int SIDE_FN(moe)(size_t n_experts, size_t hidden, size_t inter, const void *const *w13, const size_t *w13_bytes,
                 const void *const *w2, const size_t *w2_bytes, size_t shared_inter, const void *sw13, size_t sw13_bytes,
                 const void *sw2, size_t sw2_bytes, int act, int act_int8, size_t m, const void *x, int x_dtype, size_t topk,
                 const float *topk_weights, const int32_t *topk_ids, void *out, int out_dtype, int *tier) {
    amxk_ctx ctx;
    amxk_moe_weights w;
    amxk_moe_shared sh;
    amxk_moe_opts o;
    size_t wsb = 0;
    void *raw, *ws;
    amxk_status s = amx_side__ctx(&ctx, tier);
    if (s != AMXK_OK) return (int)s;
    memset(&w, 0, sizeof w);
    w.n_experts = n_experts, w.hidden = hidden, w.inter = inter;
    w.w13 = w13, w.w13_bytes = w13_bytes, w.w2 = w2, w.w2_bytes = w2_bytes;
    memset(&sh, 0, sizeof sh);
    sh.inter = shared_inter, sh.w13 = sw13, sh.w13_bytes = sw13_bytes, sh.w2 = sw2, sh.w2_bytes = sw2_bytes;
    memset(&o, 0, sizeof o);
    o.act = (amxk_moe_act)act, o.act_int8 = act_int8;
    if (act == AMXK_MOE_ACT_SWIGLU_OAI) o.alpha = 1.702f, o.limit = 7.0f;
    s = amxk_moe_workspace_size(&ctx, &w, shared_inter ? &sh : NULL, &o, m, topk, &wsb);
    if (s != AMXK_OK) return (int)s;
    ws = amx_side__alloc(wsb, &raw);
    if (wsb && !ws) return (int)AMXK_ERR_WORKSPACE;
    s = amxk_moe_experts(&ctx, &w, shared_inter ? &sh : NULL, &o, m, x, (amxk_dtype)x_dtype, hidden, topk, topk_weights,
                         topk_ids, out, (amxk_dtype)out_dtype, hidden, ws, wsb);
    free(raw);
    return (int)s;
}
