/* tests/amx_side.h - the interface of tests/amx_side.c, the two "sides" of tests/amx_silicon.c.

   tests/amx_side.c is compiled twice with AMXK_STATIC, each copy holding its own private amxk
   implementation: -DSIDE=nat (the build's native AMX: real tile instructions where the compiler and
   CPU have them) and -DSIDE=emu -DAMXK_AMX_EMULATE (the software tile emulator). Every function below
   exists once per side, named amx_side_<side>_<name>; tests/amx_silicon.c runs both on the same data
   and compares their outputs bit for bit. Plain C types only: dtypes are amxk_dtype values as int,
   statuses amxk_status values as int.

   Every op wrapper builds its own context at the AMX level only (isa_allow = AMXK_TIER_BIT(AMXK_TIER_AMX),
   one worker, serial), stores the tier the context got in *tier (AMXK_TIER_NONE when amxk_ctx_init
   refused) and returns the op's status; workspaces are allocated inside, AMXK_ALIGN aligned. */
#ifndef AMX_SIDE_H_INCLUDED
#define AMX_SIDE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* The raw tile ops of amx_side_*_tdp. */
enum { AMX_OP_BF16 = 0, AMX_OP_FP16, AMX_OP_BSSD, AMX_OP_BSUD, AMX_OP_BUSD, AMX_OP_BUUD, AMX_OP_COUNT };
#define AMX_SIDE_UNSUPPORTED (-9) /* AMXK_ERR_UNSUPPORTED */

#define AMX_SIDE_DECLARE(S)                                                                                              \
    /* contexts made afterwards deny these AMXK_CPU_* features (amxk_ctx.cpu_deny, where amxk.h has it) */             \
    void amx_side_##S##_set_cpu_deny(uint32_t deny);                                                                     \
    /* 1 when this side's AMX level is usable (native: the CPU has AMX-TILE/BF16/INT8 with OS permission and the       \
       build compiled hardware AMX; emulated: always; either: not denied); 0 otherwise */                               \
    int amx_side_##S##_amx_usable(void);                                                                                 \
    /* 1 when this side's AMX is the software emulator */                                                               \
    int amx_side_##S##_amx_emulated(void);                                                                               \
    /* the AMX features this side's contexts see: AMXK_CPU_AMX_TILE | _BF16 | _INT8 | _FP16 subset (native: the CPU's     \
       usable ones; emulated: what the emulated tile unit presents) */                                                  \
    uint32_t amx_side_##S##_amx_features(void);                                                                          \
    /* emulated side: amxk_amx_emu_set_features(features) (where amxk.h has it), returns the previous set; native: no-op, \
       returns amx_side_##S##_amx_features() */                                                                         \
    uint32_t amx_side_##S##_set_amx_features(uint32_t features);                                                         \
    /* One raw tile computation: palette-1 config with tmm0 = C (rows x c_colsb), tmm1 = A (rows x a_colsb), tmm2 = B   \
       (a_colsb / 4 x c_colsb); C, A, B loaded from contiguous rows (stride = colsb); `reps` times the op; C stored     \
       back into c; tiles released. rows 1..16, colsb multiples of 4 in 4..64. Returns 0, or AMX_SIDE_UNSUPPORTED      \
       when this side has no AMX (or, natively, op is FP16 and the CPU lacks AMX-FP16), or -8 for bad arguments. */   \
    int amx_side_##S##_tdp(int op, int reps, int rows, int c_colsb, int a_colsb, const void *a, const void *b, void *c);  \
    /* amxk_linear at the AMX level: y[m, n] (ldy = n) of y_dtype from x[m, k] (ldx = k) of x_dtype and a pack. */      \
    int amx_side_##S##_linear(size_t m, size_t n, size_t k, const void *x, int x_dtype, const void *packed,             \
                              size_t packed_bytes, const float *bias, void *y, int y_dtype, int *tier);                 \
    /* amxk_linear_q8 (use_ws: amxk_linear_q8_ws) at the AMX level: xq [m, ldq] of xq_dtype (I8 / U8), xscales         \
       row-major [m, k / act_group], y f32 [m, n]. */                                                                    \
    int amx_side_##S##_linear_q8(size_t m, size_t n, size_t k, const void *xq, int xq_dtype, size_t ldq,               \
                                 const float *xscales, size_t act_group, const void *packed, size_t packed_bytes,       \
                                 const float *bias, float *y, int use_ws, int *tier);                                   \
    /* amxk_moe_experts at the AMX level: E experts (w13[e]: [2N, K] pack, w2[e]: [K, N] pack), optional shared       \
       expert (shared_inter 0: none), activation act (amxk_moe_act), act_int8 (w8a8), x [m, K] of x_dtype, topk        \
       weights / ids [m, topk], out [m, K] of out_dtype. */                                                               \
    int amx_side_##S##_moe(size_t n_experts, size_t hidden, size_t inter, const void *const *w13, const size_t *w13_bytes, \
                           const void *const *w2, const size_t *w2_bytes, size_t shared_inter, const void *sw13,          \
                           size_t sw13_bytes, const void *sw2, size_t sw2_bytes, int act, int act_int8, size_t m,         \
                           const void *x, int x_dtype, size_t topk, const float *topk_weights, const int32_t *topk_ids,   \
                           void *out, int out_dtype, int *tier);

#ifdef __cplusplus
extern "C" {
#endif
AMX_SIDE_DECLARE(nat)
AMX_SIDE_DECLARE(emu)
#ifdef __cplusplus
}
#endif

#endif /* AMX_SIDE_H_INCLUDED */
