/* Shared body of the compile tests: calls a little of the public API and checks the answers, so a
   test fails if the implementation is missing, duplicated or miscompiled. Valid C99 and C++11. Needs
   the amxk declarations included first. */
#ifndef AMXK_COMPILE_CHECK_H
#define AMXK_COMPILE_CHECK_H
#include <stdio.h>
#include <string.h>

static int amxk_compile_check(const char *who) {
    amxk_ctx ctx;
    const amxk_cpu *cpu = amxk_cpu_init();
    float x[9] = {1.0f, -2.5f, 3.140625f, 0.0f, -0.0f, 65504.0f, 1e-3f, 448.0f, -7.0f}, y[9];
    amxk_bf16 b[9];
    int i, bad = 0;
    memset(&ctx, 0, sizeof ctx);
    if (amxk_ctx_init(&ctx) != AMXK_OK) bad |= 1;
    if (strcmp(amxk_version(), AMXK_VERSION_STRING) != 0) bad |= 2;
    if (amxk_convert(&ctx, b, AMXK_DTYPE_BF16, x, AMXK_DTYPE_F32, 9) != AMXK_OK) bad |= 4;
    if (amxk_convert(&ctx, y, AMXK_DTYPE_F32, b, AMXK_DTYPE_BF16, 9) != AMXK_OK) bad |= 4;
    for (i = 0; i < 9; i++)
        if (y[i] != amxk_bf16_to_f32(amxk_f32_to_bf16(x[i]))) bad |= 8;
    if (amxk_f16_to_f32(amxk_f32_to_f16(65504.0f)) != 65504.0f) bad |= 16;
    if (amxk_e4m3_to_f32(amxk_f32_to_e4m3(1000.0f)) != 448.0f) bad |= 16;
    if (amxk_e5m2_to_f32(amxk_f32_to_e5m2(-3.0f)) != -3.0f) bad |= 16;
    if (amxk_dtype_size(AMXK_DTYPE_BF16) != 2 || amxk_status_string(AMXK_ERR_NULL) == NULL) bad |= 32;
    if (amxk_convert(&ctx, NULL, AMXK_DTYPE_BF16, x, AMXK_DTYPE_F32, 1) != AMXK_ERR_NULL) bad |= 32;
#if defined(AMXK_AMX_EMULATE)
    {
        /* one TDPBF16PS through the emulator API: C[0][0] = 1.5*4 + 2*(-0.25) = 5.5 */
        unsigned char cfg[64];
        amxk_bf16 a[2], w[2];
        float c = 0.0f;
        memset(cfg, 0, sizeof cfg);
        cfg[0] = 1;                                       /* palette */
        for (i = 0; i < 3; i++) cfg[16 + 2 * i] = 4, cfg[48 + i] = 1; /* tiles 0..2: 1 row, 4 bytes */
        a[0] = amxk_f32_to_bf16(1.5f), a[1] = amxk_f32_to_bf16(2.0f);
        w[0] = amxk_f32_to_bf16(4.0f), w[1] = amxk_f32_to_bf16(-0.25f);
        amxk_amx_emu_loadconfig(cfg);
        amxk_amx_emu_zero(0);
        amxk_amx_emu_loadd(1, a, 4);
        amxk_amx_emu_loadd(2, w, 4);
        amxk_amx_emu_dpbf16ps(0, 1, 2);
        amxk_amx_emu_stored(0, &c, 4);
        amxk_amx_emu_release();
        if (c != 5.5f || !cpu->amx_emulated) bad |= 64;
    }
#endif
    printf("%s: amxk %s, tier %s%s: %s\n", who, amxk_version(), amxk_tier_name(ctx.tier),
           cpu->amx_emulated ? " (AMX emulated)" : "", bad ? "FAILED" : "ok");
    if (bad) printf("%s: failure mask 0x%x\n", who, (unsigned)bad);
    return bad;
}
#endif
