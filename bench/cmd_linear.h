/* cmd_linear.h - the `linear` subcommand of amxk_bench (included by amxk_bench.c after bench_env).

   amxk_bench linear --m M --n N --k K [--dtype bf16|fp16|f32|int8|int4|int2|fp8e4m3|fp8e5m2|mxfp4]
                     [--group G] [--asym 0|1] [--act bf16|int8|uint8|f32|fp16] [--out f32|bf16|fp16] [--bias 0|1]
                     [--threads T] [--isa ...] [--rotate-mb R] [--reps N] [--warmup W]

   Packs W[N,K] once per rotation copy (the pack is not timed), then times amxk_linear alone.
   bf16 / fp16: amxk_pack_linear, x of the same dtype. f32 (router weights): amxk_pack_linear as F32,
   x of dtype --act (bf16 default, f32 or fp16), workspace from amxk_linear_workspace_size_for.
   Quantized dtypes: amxk_quantize_pack of the
   same f32 weights (int formats: one scale per group of G columns, G must divide K, default 128,
   --asym 1 for unsigned values + zero points; fp8: G x G scale blocks, default 128, partial edge
   blocks allowed; mxfp4: the OCP rule, groups of 32, --group / --asym do not apply), workspace from
   amxk_linear_workspace_size_for. Activations: --act bf16 runs
   amxk_linear on bf16 x; --act int8 (int8 symmetric, int4, int2 weights) times amxk_quantize_act
   (per token group of G columns, int8, row-major scales) followed by amxk_linear_q8: the w8a8 /
   w4a8 / w2a8 path, activation quantization included in the time; --act uint8 the same with
   AMXK_DTYPE_U8 activations (x + 128, SGLang's layout) in both calls. --q8ws 1 (default) calls
   amxk_linear_q8_ws with a workspace from amxk_linear_q8_workspace_size, --q8ws 0 amxk_linear_q8.
   gflops = 2*M*N*K / median; gbs = (packed weight bytes (the whole packed buffer: header, values,
   scales, zero points) + x bytes + y bytes) / median. Quantized cases add group=G asym=A act=bf16
   to the printed parameters, f32 packs act=X. */

typedef struct linear_job {
    const bench_env *env;
    size_t m, n, k, packed_bytes, ws_bytes;
    amxk_dtype dt, yt, pt; /* dt: x's dtype; pt: the packed dtype (unquantized packs) */
    bench_rot w; /* packed weights, one per rotation copy */
    void *x, *y, *ws;
    float *bias;
    int a8;         /* --act int8 or uint8 */
    amxk_dtype at;  /* a8: AMXK_DTYPE_I8 or AMXK_DTYPE_U8 */
    size_t group;   /* activation group (a8) */
    int8_t *xq;     /* a8: quantized x */
    int q8ws;       /* a8: amxk_linear_q8_ws (ws, ws_bytes) rather than amxk_linear_q8 */
    float *xs;      /* a8: its scales [M, K/group] */
} linear_job;

static void linear_call(void *user, size_t rep) {
    linear_job *j = (linear_job *)user;
    amxk_status st;
    if (j->a8) {
        st = amxk_quantize_act(&j->env->ctx, j->m, j->k, j->x, j->dt, j->k, j->group, j->at, j->xq, j->k, j->xs,
                               AMXK_SCALES_ROW_MAJOR, j->k / j->group);
        if (st == AMXK_OK && j->q8ws)
            st = amxk_linear_q8_ws(&j->env->ctx, j->m, j->n, j->k, j->xq, j->at, j->k, j->xs, AMXK_SCALES_ROW_MAJOR, j->k / j->group,
                                   j->group, bench_rot_get(&j->w, rep), j->packed_bytes, j->bias, j->y, j->yt, j->n, j->ws, j->ws_bytes);
        else if (st == AMXK_OK)
            st = amxk_linear_q8(&j->env->ctx, j->m, j->n, j->k, j->xq, j->at, j->k, j->xs, AMXK_SCALES_ROW_MAJOR, j->k / j->group, j->group,
                                bench_rot_get(&j->w, rep), j->packed_bytes, j->bias, j->y, j->yt, j->n);
        if (st != AMXK_OK) bench_die("w8a8: %s", amxk_status_string(st));
        return;
    }
    st = amxk_linear(&j->env->ctx, j->m, j->n, j->k, j->x, j->dt, j->k, bench_rot_get(&j->w, rep), j->packed_bytes,
                                 j->bias, j->y, j->yt, j->n, j->ws, j->ws_bytes);
    if (st != AMXK_OK) bench_die("amxk_linear: %s", amxk_status_string(st));
}

static amxk_dtype linear_dtype(const char *s, int allow_f32) {
    if (strcmp(s, "bf16") == 0) return AMXK_DTYPE_BF16;
    if (strcmp(s, "fp16") == 0 || strcmp(s, "f16") == 0) return AMXK_DTYPE_F16;
    if (allow_f32 && (strcmp(s, "f32") == 0 || strcmp(s, "fp32") == 0)) return AMXK_DTYPE_F32;
    bench_die("unsupported dtype '%s'", s);
    return AMXK_DTYPE_INVALID;
}

/* Quantized weight formats of --dtype; AMXK_QFMT_NONE for bf16 / fp16. */
static amxk_qformat linear_qformat(const char *s) {
    if (strcmp(s, "int8") == 0) return AMXK_QFMT_INT8;
    if (strcmp(s, "int4") == 0) return AMXK_QFMT_INT4;
    if (strcmp(s, "int2") == 0) return AMXK_QFMT_INT2;
    if (strcmp(s, "fp8e4m3") == 0 || strcmp(s, "e4m3") == 0) return AMXK_QFMT_FP8_E4M3;
    if (strcmp(s, "fp8e5m2") == 0 || strcmp(s, "e5m2") == 0) return AMXK_QFMT_FP8_E5M2;
    if (strcmp(s, "mxfp4") == 0) return AMXK_QFMT_MXFP4;
    return AMXK_QFMT_NONE;
}

static int cmd_linear(bench_env *env, const bench_args *a) {
    linear_job j;
    const char *dts = bench_str(a, "dtype", "bf16"), *outs = bench_str(a, "out", "bf16"), *acts = bench_str(a, "act", "bf16");
    long m = bench_int(a, "m", 1), n = bench_int(a, "n", 4096), k = bench_int(a, "k", 4096);
    long group = bench_int(a, "group", 128), asym = bench_int(a, "asym", 0);
    int with_bias = (int)bench_int(a, "bias", 0);
    const amxk_qformat qf = linear_qformat(dts);
    amxk_quant q;
    char qparams[96] = "";
    size_t i, ysz;
    float *wf, *xf;
    double med;
    amxk_status st;
    if (m < 1 || n < 1 || k < 1) bench_die("--m, --n, --k must be >= 1");
    memset(&j, 0, sizeof j);
    memset(&q, 0, sizeof q);
    j.env = env, j.m = (size_t)m, j.n = (size_t)n, j.k = (size_t)k;
    j.yt = linear_dtype(outs, 1);
    ysz = amxk_dtype_size(j.yt);
    if (qf == AMXK_QFMT_NONE) {
        j.pt = linear_dtype(dts, 1);
        if (bench_str(a, "group", NULL) || bench_str(a, "asym", NULL) || (j.pt != AMXK_DTYPE_F32 && bench_str(a, "act", NULL)))
            bench_die("--group, --asym and --act apply to the quantized dtypes (int8|int4|int2|fp8e4m3|fp8e5m2) and --act to f32, not --dtype %s",
                      dts);
        j.dt = j.pt == AMXK_DTYPE_F32 ? linear_dtype(acts, 1) : j.pt; /* f32 packs: x of dtype --act */
        if (j.pt == AMXK_DTYPE_F32) snprintf(qparams, sizeof qparams, " act=%s", acts);
        if ((st = amxk_pack_linear_size(j.pt, j.n, j.k, &j.packed_bytes)) != AMXK_OK) bench_die("pack size: %s", amxk_status_string(st));
    } else {
        const int fp8 = qf == AMXK_QFMT_FP8_E4M3 || qf == AMXK_QFMT_FP8_E5M2;
        if (qf == AMXK_QFMT_MXFP4) { /* fixed 32-column blocks, symmetric */
            if (bench_str(a, "group", NULL) || bench_str(a, "asym", NULL)) bench_die("--group and --asym do not apply to mxfp4 (groups of 32)");
            group = 32;
        }
        j.a8 = strcmp(acts, "int8") == 0 || strcmp(acts, "uint8") == 0;
        j.at = strcmp(acts, "uint8") == 0 ? AMXK_DTYPE_U8 : AMXK_DTYPE_I8;
        if (!j.a8 && strcmp(acts, "bf16") != 0) bench_die("--act must be bf16, int8 or uint8, not '%s'", acts);
        if (j.a8 && (fp8 || qf == AMXK_QFMT_MXFP4 || (qf == AMXK_QFMT_INT8 && asym))) bench_die("--act int8 / uint8 needs an int format (int8 symmetric, int4, int2)");
        j.group = (size_t)group;
        if (group < 1) bench_die("--group must be >= 1");
        if (asym != 0 && asym != 1) bench_die("--asym must be 0 or 1");
        if (fp8 && asym) bench_die("--asym 1 applies to the int formats; fp8 is symmetric");
        if (!fp8 && k % group != 0) bench_die("--group %ld must divide --k %ld for int formats", group, k);
        q.format = qf, q.asym = (int)asym;
        q.block_n = fp8 ? (size_t)group : 1; /* fp8: G x G blocks; ints: groups of G along K */
        q.block_k = (size_t)group;
        j.dt = AMXK_DTYPE_BF16;
        if ((st = amxk_pack_quant_size(&q, j.n, j.k, &j.packed_bytes)) != AMXK_OK) bench_die("quantized pack size: %s", amxk_status_string(st));
        snprintf(qparams, sizeof qparams, " group=%ld asym=%ld act=%s", group, asym, acts);
    }
    wf = (float *)bench_alloc(j.n * j.k * sizeof(float), 64);
    xf = (float *)bench_alloc(j.m * j.k * sizeof(float), 64);
    bench_fill(wf, j.n * j.k, 1);
    bench_fill(xf, j.m * j.k, 2);
    bench_rot_init(&j.w, j.packed_bytes, env->rotate_mb);
    if (qf == AMXK_QFMT_NONE) st = amxk_pack_linear(&env->ctx, j.w.copy[0], j.packed_bytes, j.pt, wf, AMXK_DTYPE_F32, j.n, j.k, j.k);
    else st = amxk_quantize_pack(&env->ctx, j.w.copy[0], j.packed_bytes, &q, wf, AMXK_DTYPE_F32, j.n, j.k, j.k);
    if (st != AMXK_OK) bench_die("pack: %s", amxk_status_string(st));
    for (i = 1; i < j.w.n; i++) memcpy(j.w.copy[i], j.w.copy[0], j.packed_bytes); /* the rotation copies */
    j.q8ws = (int)bench_int(a, "q8ws", 1);
    if (j.a8 && j.q8ws) st = amxk_linear_q8_workspace_size(&env->ctx, j.m, j.w.copy[0], j.packed_bytes, &j.ws_bytes);
    else st = amxk_linear_workspace_size_for(&env->ctx, j.m, j.w.copy[0], j.packed_bytes, &j.ws_bytes);
    if (st != AMXK_OK) bench_die("workspace size: %s", amxk_status_string(st));
    j.x = bench_alloc(j.m * j.k * amxk_dtype_size(j.dt), 64);
    if ((st = amxk_convert(NULL, j.x, j.dt, xf, AMXK_DTYPE_F32, j.m * j.k)) != AMXK_OK) bench_die("convert: %s", amxk_status_string(st));
    j.y = bench_alloc(j.m * j.n * ysz, 64);
    if (j.a8) {
        j.xq = (int8_t *)bench_alloc(j.m * j.k, 64);
        j.xs = (float *)bench_alloc(j.m * (j.k / j.group) * sizeof(float), 64);
    }
    j.ws = j.ws_bytes ? bench_alloc(j.ws_bytes, 64) : NULL;
    if (with_bias) {
        j.bias = (float *)bench_alloc(j.n * sizeof(float), 64);
        bench_fill(j.bias, j.n, 3);
    }
#if defined(AMXK_AMX_EMU_COUNT)
    amxk_amx_emu_count_range(1, j.a8 ? (const void *)j.xq : j.x, j.a8 ? j.m * j.k : j.m * j.k * amxk_dtype_size(j.dt));
    amxk_amx_emu_count_range(2, j.w.copy[0], j.packed_bytes);
    amxk_amx_emu_count_range(3, j.ws, j.ws_bytes);
    if (j.w.n > 1) bench_die("the tile counters attribute loads to the first weight copy: use --rotate-mb 0");
    amxk_amx_emu_counts_reset();
#endif
    med = bench_measure(linear_call, &j, env->warmup, env->reps);
#if defined(AMXK_AMX_EMU_COUNT)
    {
        amxk_amx_emu_counts c;
        const double calls = (double)(env->warmup + env->reps);
        amxk_amx_emu_counts_get(&c);
        printf("amx_counts m=%zu n=%zu k=%zu dtype=%s%s tier=%s per_call: tdp=%.0f ldtilecfg=%.0f tilerelease=%.0f tileloadd=%.0f "
               "load_bytes_x=%.0f load_bytes_w=%.0f load_bytes_ws=%.0f load_bytes_stack=%.0f tilestored=%.0f store_bytes=%.0f "
               "dequant_blocks=%.0f l2_miss_bytes_x=%.0f l2_miss_bytes_w=%.0f l2_miss_bytes_ws=%.0f | packed_bytes=%zu "
               "weight_loads_per_packed_byte=%.2f bytes_per_tdp=%.0f dequant_per_block=%.2f w_beyond_l2_per_packed_byte=%.3f\n",
               j.m, j.n, j.k, dts, qparams, amxk_tier_name(env->ctx.tier), (double)c.tdp / calls, (double)c.ldtilecfg / calls,
               (double)c.release / calls, (double)c.tileloadd / calls, (double)c.load_bytes[1] / calls, (double)c.load_bytes[2] / calls,
               (double)c.load_bytes[3] / calls, (double)c.load_bytes[0] / calls, (double)c.tilestored / calls, (double)c.store_bytes / calls,
               (double)c.dequant_blocks / calls, (double)c.l2_miss_bytes[1] / calls, (double)c.l2_miss_bytes[2] / calls,
               (double)c.l2_miss_bytes[3] / calls, j.packed_bytes, (double)c.load_bytes[2] / calls / (double)j.packed_bytes,
               c.tdp ? (double)(c.load_bytes[0] + c.load_bytes[1] + c.load_bytes[2] + c.load_bytes[3]) / (double)c.tdp : 0.0,
               (double)c.dequant_blocks / calls / (double)((j.n + 15) / 16), (double)c.l2_miss_bytes[2] / calls / (double)j.packed_bytes);
    }
#endif
    bench_line(med, 2.0 * (double)j.m * (double)j.n * (double)j.k,
               (double)j.packed_bytes + (double)(j.m * j.k * amxk_dtype_size(j.dt)) + (double)(j.m * j.n * ysz),
               "op=linear m=%zu n=%zu k=%zu dtype=%s%s out=%s bias=%d threads=%d isa=%s tier=%s rotate_mb=%g", j.m, j.n, j.k, dts,
               qparams, outs, with_bias, env->threads, env->isa, amxk_tier_name(env->ctx.tier), env->rotate_mb);
    bench_rot_free(&j.w);
    free(wf);
    free(xf);
    free(j.x);
    free(j.y);
    free(j.ws);
    free(j.bias);
    free(j.xq);
    free(j.xs);
    return 0;
}
