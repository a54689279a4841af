/* cmd_moe.h - the `moe` subcommand of amxk_bench (included by amxk_bench.c after bench_env).

   amxk_bench moe --m M --experts E --topk k --hidden K --inter N [--dtype bf16|fp16|int8|int4|int2|fp8e4m3|mxfp4]
                  [--act bf16|int8] [--fn silu|gelu_tanh|gelu_erf|swiglu_oai] [--layers L] [--seed S] [--routing-out FILE] [--threads T] [--isa ...]
                  [--reps N] [--warmup W]

   Builds L copies of one MoE layer's expert weights (E experts, w13 [2N, K] and w2 [K, N] each,
   packed in --dtype: int8/int4/int2 symmetric with group 128 (or K / N when smaller), fp8 e4m3 with
   128 x 128 blocks, mxfp4 (groups of 32; K and N multiples of 32)) and cycles through them call by call, so with L large enough the active experts come
   from DRAM as in a real multi-layer model. Routing: a seeded generator draws, per token, topk
   distinct experts (uniform) and weights; the same routing is used for every call. --routing-out
   writes those ids (one token per line, ids separated by spaces) so another program can replay it.
   Times amxk_moe_experts alone (bf16 activations, bf16 output, --fn activation (SiLU by default;
   swiglu_oai with gpt-oss's alpha 1.702 and limit 7), no shared expert). --act int8:
   opts.act_int8 = 1, the w8a8 / w4a8 / w2a8 form (activations quantized per token inside the call,
   both GEMMs on int8; int packs only).
   gflops = 2 * 3 * N * K * (routed pairs) / median;
   gbs    = bytes of the packed weights of the distinct active experts (w13 + w2) / median. */

typedef struct moe_job {
    const bench_env *env;
    size_t m, e, topk, k, n, layers, ws_bytes, b13, b2;
    unsigned char **w13, **w2; /* per layer: E packs back to back */
    amxk_moe_weights w;
    amxk_moe_opts o;
    void *x, *y, *ws;
    float *tw;
    int32_t *ids;
} moe_job;

static void moe_call(void *user, size_t rep) {
    moe_job *j = (moe_job *)user;
    size_t l = rep % j->layers;
    amxk_status st;
    j->w.w13_base = j->w13[l], j->w.w2_base = j->w2[l];
    st = amxk_moe_experts(&j->env->ctx, &j->w, NULL, &j->o, j->m, j->x, AMXK_DTYPE_BF16, j->k, j->topk, j->tw, j->ids, j->y,
                          AMXK_DTYPE_BF16, j->k, j->ws, j->ws_bytes);
    if (st != AMXK_OK) bench_die("amxk_moe_experts: %s", amxk_status_string(st));
}

static uint32_t moe_rng(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* The quantized format of --dtype for a [*, k] weight. */
static void moe_quant(const char *dts, size_t k, amxk_quant *q) {
    memset(q, 0, sizeof *q);
    q->block_n = 1, q->block_k = k % 128 ? k : 128;
    if (strcmp(dts, "int8") == 0) q->format = AMXK_QFMT_INT8;
    else if (strcmp(dts, "int4") == 0) q->format = AMXK_QFMT_INT4;
    else if (strcmp(dts, "int2") == 0) q->format = AMXK_QFMT_INT2;
    else if (strcmp(dts, "fp8e4m3") == 0) q->format = AMXK_QFMT_FP8_E4M3, q->block_n = 128, q->block_k = 128;
    else if (strcmp(dts, "mxfp4") == 0) q->format = AMXK_QFMT_MXFP4, q->block_k = 32; /* K a multiple of 32 */
    else bench_die("unsupported --dtype '%s' (bf16, fp16, int8, int4, int2, fp8e4m3, mxfp4)", dts);
}

static void moe_pack(const char *dts, void *dst, size_t bytes, const float *w, size_t n, size_t k) {
    amxk_status st;
    amxk_quant q;
    memset(&q, 0, sizeof q);
    if (strcmp(dts, "bf16") == 0 || strcmp(dts, "fp16") == 0) {
        st = amxk_pack_linear(NULL, dst, bytes, strcmp(dts, "bf16") == 0 ? AMXK_DTYPE_BF16 : AMXK_DTYPE_F16, w, AMXK_DTYPE_F32, n, k, k);
    } else {
        moe_quant(dts, k, &q);
        st = amxk_quantize_pack(NULL, dst, bytes, &q, w, AMXK_DTYPE_F32, n, k, k);
    }
    if (st != AMXK_OK) bench_die("pack: %s", amxk_status_string(st));
}

static size_t moe_pack_size(const char *dts, size_t n, size_t k) {
    size_t bytes = 0;
    amxk_quant q;
    amxk_status st;
    memset(&q, 0, sizeof q);
    if (strcmp(dts, "bf16") == 0) st = amxk_pack_linear_size(AMXK_DTYPE_BF16, n, k, &bytes);
    else if (strcmp(dts, "fp16") == 0) st = amxk_pack_linear_size(AMXK_DTYPE_F16, n, k, &bytes);
    else {
        moe_quant(dts, k, &q);
        st = amxk_pack_quant_size(&q, n, k, &bytes);
    }
    if (st != AMXK_OK) bench_die("pack size: %s", amxk_status_string(st));
    return bytes;
}

static int cmd_moe(bench_env *env, const bench_args *a) {
    moe_job j;
    const char *dts = bench_str(a, "dtype", "bf16"), *rout = bench_str(a, "routing-out", ""), *acts = bench_str(a, "act", "bf16");
    long m = bench_int(a, "m", 1), e = bench_int(a, "experts", 128), topk = bench_int(a, "topk", 8);
    long k = bench_int(a, "hidden", 2048), n = bench_int(a, "inter", 768), layers = bench_int(a, "layers", 1);
    uint32_t seed = (uint32_t)bench_int(a, "seed", 1), rs;
    size_t i, l, ex, t, active = 0, routed = 0;
    unsigned char *used;
    float *wf;
    double med;
    amxk_status st;
    if (m < 1 || e < 1 || topk < 1 || topk > e || k < 1 || n < 1 || layers < 1)
        bench_die("need --m, --experts, --hidden, --inter, --layers >= 1 and 1 <= --topk <= --experts");
    if (strcmp(acts, "bf16") != 0 && strcmp(acts, "int8") != 0) bench_die("unsupported --act '%s' (bf16, int8)", acts);
    memset(&j, 0, sizeof j);
    j.o.act_int8 = strcmp(acts, "int8") == 0;
    {
        const char *fn = bench_str(a, "fn", "silu");
        if (strcmp(fn, "silu") == 0) j.o.act = AMXK_MOE_ACT_SILU;
        else if (strcmp(fn, "gelu_tanh") == 0) j.o.act = AMXK_MOE_ACT_GELU_TANH;
        else if (strcmp(fn, "gelu_erf") == 0) j.o.act = AMXK_MOE_ACT_GELU_ERF;
        else if (strcmp(fn, "swiglu_oai") == 0) j.o.act = AMXK_MOE_ACT_SWIGLU_OAI, j.o.alpha = 1.702f, j.o.limit = 7.0f;
        else bench_die("--fn must be silu, gelu_tanh, gelu_erf or swiglu_oai");
    }
    j.env = env, j.m = (size_t)m, j.e = (size_t)e, j.topk = (size_t)topk, j.k = (size_t)k, j.n = (size_t)n, j.layers = (size_t)layers;
    j.b13 = moe_pack_size(dts, 2 * j.n, j.k), j.b2 = moe_pack_size(dts, j.k, j.n);
    j.w13 = (unsigned char **)calloc(j.layers, sizeof(void *)), j.w2 = (unsigned char **)calloc(j.layers, sizeof(void *));
    if (!j.w13 || !j.w2) bench_die("out of memory");
    /* routing */
    j.ids = (int32_t *)bench_alloc(j.m * j.topk * 4, 64), j.tw = (float *)bench_alloc(j.m * j.topk * 4, 64);
    used = (unsigned char *)calloc(j.e, 1);
    rs = seed ? seed : 1u;
    for (t = 0; t < j.m; t++)
        for (i = 0; i < j.topk; i++) {
            int32_t id;
            size_t q;
            int dup;
            do {
                id = (int32_t)(moe_rng(&rs) % (uint32_t)j.e);
                for (dup = 0, q = 0; q < i; q++) dup |= j.ids[t * j.topk + q] == id;
            } while (dup);
            j.ids[t * j.topk + i] = id;
            j.tw[t * j.topk + i] = (float)(moe_rng(&rs) >> 8) * (1.0f / 16777216.0f) / (float)j.topk;
            if (!used[id]) used[id] = 1, active++;
            routed++;
        }
    /* the routing is fixed, so only the active experts' weights are generated and packed (once, then
       copied into every layer copy); the other experts get just a valid header (amxk_moe_experts
       validates every pack of the shard) and their pages are never touched */
    for (l = 0; l < j.layers; l++) {
        j.w13[l] = (unsigned char *)bench_alloc(j.e * j.b13, 4096);
        j.w2[l] = (unsigned char *)bench_alloc(j.e * j.b2, 4096);
    }
    wf = (float *)bench_alloc(2 * j.n * j.k * sizeof(float), 64);
    {
        size_t first = j.e;
        for (ex = 0; ex < j.e; ex++) {
            if (!used[ex]) continue;
            if (first == j.e) first = ex;
            bench_fill(wf, 2 * j.n * j.k, 1000u + (uint32_t)ex);
            moe_pack(dts, j.w13[0] + ex * j.b13, j.b13, wf, 2 * j.n, j.k);
            bench_fill(wf, j.k * j.n, 5000u + (uint32_t)ex);
            moe_pack(dts, j.w2[0] + ex * j.b2, j.b2, wf, j.k, j.n);
            for (l = 1; l < j.layers; l++) {
                memcpy(j.w13[l] + ex * j.b13, j.w13[0] + ex * j.b13, j.b13);
                memcpy(j.w2[l] + ex * j.b2, j.w2[0] + ex * j.b2, j.b2);
            }
        }
        for (ex = 0; ex < j.e; ex++)
            for (l = 0; l < j.layers && !used[ex]; l++) {
                memcpy(j.w13[l] + ex * j.b13, j.w13[0] + first * j.b13, 64);
                memcpy(j.w2[l] + ex * j.b2, j.w2[0] + first * j.b2, 64);
            }
    }
    free(wf);
    free(used);
    j.w.n_experts = j.e, j.w.hidden = j.k, j.w.inter = j.n, j.w.w13_stride = j.b13, j.w.w2_stride = j.b2;
    j.w.w13_base = j.w13[0], j.w.w2_base = j.w2[0];
    if (rout[0]) {
        FILE *f = fopen(rout, "w");
        if (!f) bench_die("cannot write %s", rout);
        for (t = 0; t < j.m; t++)
            for (i = 0; i < j.topk; i++) fprintf(f, "%d%s", (int)j.ids[t * j.topk + i], i + 1 == j.topk ? "\n" : " ");
        fclose(f);
    }
    /* activations */
    wf = (float *)bench_alloc(j.m * j.k * sizeof(float), 64);
    bench_fill(wf, j.m * j.k, seed + 7u);
    j.x = bench_alloc(j.m * j.k * 2, 64), j.y = bench_alloc(j.m * j.k * 2, 64);
    if ((st = amxk_convert(NULL, j.x, AMXK_DTYPE_BF16, wf, AMXK_DTYPE_F32, j.m * j.k)) != AMXK_OK) bench_die("convert: %s", amxk_status_string(st));
    free(wf);
    if ((st = amxk_moe_workspace_size(&env->ctx, &j.w, NULL, &j.o, j.m, j.topk, &j.ws_bytes)) != AMXK_OK)
        bench_die("workspace size: %s", amxk_status_string(st));
    j.ws = bench_alloc(j.ws_bytes ? j.ws_bytes : 64, 64);
#if defined(AMXK_AMX_EMU_COUNT)
    if (j.layers != 1) bench_die("the tile counters attribute loads to layer 0's weights: use --layers 1");
    amxk_amx_emu_count_range(1, j.x, j.m * j.k * 2);
    amxk_amx_emu_count_range(2, j.w13[0], j.e * j.b13);
    amxk_amx_emu_count_range(3, j.w2[0], j.e * j.b2);
    amxk_amx_emu_counts_reset();
#endif
    med = bench_measure(moe_call, &j, env->warmup, env->reps);
#if defined(AMXK_AMX_EMU_COUNT)
    { /* useful TDP work: the routed rows' MACs (3 N K per pair) over the MACs of the TDPs' rows (16 x 32
         MACs per bf16 TDP row, 16 x 64 per int8 TDP row: a TDP of R rows counts R / 16 of a full
         one; padding rows and rows computed twice are the waste); useful_tdp_work_full counts every
         TDP as 16 rows (if a short TDP cost a full one). min_expert_rows: experts with fewer rows than
         the AMX level takes (5 bf16; the w8a8 rule, amxk_pack.h) run on the vector level, and their
         rows would then count as useful without TDPs */
        amxk_amx_emu_counts c;
        const double calls = (double)(env->warmup + env->reps), macs = j.o.act_int8 ? 16384.0 : 8192.0;
        size_t *cnt = (size_t *)calloc(j.e, sizeof(size_t)), min_rows = (size_t)-1;
        if (!cnt) bench_die("out of memory");
        for (t = 0; t < j.m * j.topk; t++) cnt[j.ids[t]]++;
        for (ex = 0; ex < j.e; ex++)
            if (cnt[ex] && cnt[ex] < min_rows) min_rows = cnt[ex];
        free(cnt);
        amxk_amx_emu_counts_get(&c);
        printf("amx_counts_moe m=%zu experts=%zu topk=%zu hidden=%zu inter=%zu dtype=%s act=%s active=%zu tier=%s per_call: tdp=%.0f "
               "ldtilecfg=%.0f tileloadd=%.0f load_bytes_w13=%.0f load_bytes_w2=%.0f load_bytes_other=%.0f tilestored=%.0f dequant_blocks=%.0f | "
               "active_packed_bytes=%.0f weight_loads_per_packed_byte=%.2f useful_tdp_work=%.3f useful_tdp_work_full=%.3f tdp_rows=%.0f "
               "min_expert_rows=%zu release=%.0f xpanel_bytes=%.0f w_beyond_l2_per_packed_byte=%.3f\n",
               j.m, j.e, j.topk, j.k, j.n, dts, acts, active, amxk_tier_name(env->ctx.tier), (double)c.tdp / calls, (double)c.ldtilecfg / calls,
               (double)c.tileloadd / calls, (double)c.load_bytes[2] / calls, (double)c.load_bytes[3] / calls,
               (double)(c.load_bytes[0] + c.load_bytes[1]) / calls, (double)c.tilestored / calls, (double)c.dequant_blocks / calls,
               (double)active * (double)(j.b13 + j.b2), (double)(c.load_bytes[2] + c.load_bytes[3]) / calls / ((double)active * (double)(j.b13 + j.b2)),
               c.tdp_rows ? 3.0 * (double)j.n * (double)j.k * (double)routed * calls / ((double)c.tdp_rows * macs / 16.0) : 0.0,
               c.tdp ? 3.0 * (double)j.n * (double)j.k * (double)routed * calls / ((double)c.tdp * macs) : 0.0, (double)c.tdp_rows / calls,
               min_rows, (double)c.release / calls, (double)c.xpanel_bytes / calls,
               (double)(c.l2_miss_bytes[2] + c.l2_miss_bytes[3]) / calls / ((double)active * (double)(j.b13 + j.b2)));
    }
#endif
    bench_line(med, 6.0 * (double)j.n * (double)j.k * (double)routed, (double)active * (double)(j.b13 + j.b2),
               "op=moe m=%zu experts=%zu topk=%zu hidden=%zu inter=%zu dtype=%s act=%s fn=%s layers=%zu seed=%u active=%zu threads=%d isa=%s tier=%s",
               j.m, j.e, j.topk, j.k, j.n, dts, acts, bench_str(a, "fn", "silu"), j.layers, seed, active, env->threads, env->isa, amxk_tier_name(env->ctx.tier));
    for (l = 0; l < j.layers; l++) free(j.w13[l]), free(j.w2[l]);
    free(j.w13), free(j.w2), free(j.ids), free(j.tw), free(j.x), free(j.y), free(j.ws);
    return 0;
}
