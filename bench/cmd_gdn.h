/* cmd_gdn.h - the `gdn-decode`, `gdn-prefill`, `gdn-gating` and `conv1d` subcommands of amxk_bench
   (amxk_gdn.h).

   amxk_bench gdn-decode  --batch B [--hk 16 --hv 32 --dk 128 --dv 128] [--vfirst 0|1] [--threads T]
       One token for each of B sequences (fused gating, in-kernel l2norm, bf16 q/k/v/o), fp32 state pool
       of B slots (B * HV * Dk * Dv * 4 bytes: 256 MiB at B = 128, far above L3).
       gflops = 6*Dk*Dv*HV*B / median; gbs = (state read + state write + q/k/v/a/b/o bytes) / median.
   amxk_bench gdn-prefill --t T [--hk 16 --hv 32 --dk 128 --dv 128] [--mode auto|chunk|recurrent]
       One sequence of T tokens from a zero state (has_initial_state 0), final state written back.
       gflops = 6*Dk*Dv*HV*T / median (the convention); tokens_per_s = T / median;
       gbs = (q/k/v/a/b/o + state write) / median.
   amxk_bench conv1d --t T --dim D [--width 4] [--form prefill|decode] [--batch B] [--dtype bf16|f32]
       prefill: one sequence of T tokens with an initial state (SD layout), silu, out in the x dtype;
       decode: B sequences x 1 token (amxk_conv1d_update). gbs = (x read + out write + state read/write)
       / median (weights excluded: they stay in cache). gflops = 2*W*dim*tokens / median.
   amxk_bench gdn-gating --t T [--hv 32]
       amxk_gdn_gating over T tokens x HV value heads: bf16 a / b, f32 A_log / dt_bias, f32 g, bf16 beta
       (serial: --threads does not apply). gbs = (a + b + g + beta bytes) / median; gflops 0. */

typedef struct gdn_job {
    const bench_env *env;
    amxk_gdn_params p;
    amxk_gdn_inputs in;
    amxk_gdn_mode mode;
    amxk_gdn_state st;
    size_t n_seqs, wsb;
    int32_t *qsl, *slots;
    uint8_t *init;
    void *o, *ws;
} gdn_job;

static void gdn_call(void *user, size_t rep) {
    gdn_job *j = (gdn_job *)user;
    amxk_status s = amxk_gdn(&j->env->ctx, &j->p, j->mode, &j->in, j->n_seqs, j->qsl, j->slots, j->init, &j->st, j->o,
                             AMXK_DTYPE_BF16, j->p.n_v_heads * j->p.dv, j->ws, j->wsb);
    (void)rep;
    if (s != AMXK_OK) bench_die("amxk_gdn: %s", amxk_status_string(s));
}

static void *gdn_bf16_buf(size_t n, uint32_t seed, float scale) {
    float *f = (float *)bench_alloc(n * 4, 64);
    void *b = bench_alloc(n * 2, 64);
    size_t i;
    bench_fill(f, n, seed);
    for (i = 0; i < n; i++) f[i] *= scale;
    amxk_convert(NULL, b, AMXK_DTYPE_BF16, f, AMXK_DTYPE_F32, n);
    free(f);
    return b;
}

/* Sets up a GDN job over n_seqs sequences of len tokens each. */
static void gdn_setup(gdn_job *j, bench_env *env, const bench_args *a, size_t n_seqs, size_t len) {
    size_t H = (size_t)bench_int(a, "hk", 16), HV = (size_t)bench_int(a, "hv", 32), dk = (size_t)bench_int(a, "dk", 128),
           dv = (size_t)bench_int(a, "dv", 128), T = n_seqs * len, i;
    float *Al, *dt;
    amxk_status s;
    memset(j, 0, sizeof *j);
    j->env = env;
    j->p = amxk_gdn_params_default(H, HV, dk, dv);
    j->p.state_v_first = (int)bench_int(a, "vfirst", 0);
    j->n_seqs = n_seqs;
    j->in.dtype = AMXK_DTYPE_BF16;
    j->in.q = gdn_bf16_buf(T * H * dk, 11, 1.0f);
    j->in.k = gdn_bf16_buf(T * H * dk, 12, 1.0f);
    j->in.v = gdn_bf16_buf(T * HV * dv, 13, 1.0f);
    j->in.ldq = j->in.ldk = H * dk, j->in.ldv = HV * dv;
    j->in.ab_dtype = AMXK_DTYPE_BF16;
    j->in.a = gdn_bf16_buf(T * HV, 14, 2.0f);
    j->in.b = gdn_bf16_buf(T * HV, 15, 2.0f);
    j->in.lda = j->in.ldb = HV;
    Al = (float *)bench_alloc(HV * 4, 64);
    dt = (float *)bench_alloc(HV * 4, 64);
    for (i = 0; i < HV; i++) Al[i] = (float)(i % 16) * 0.15f, dt[i] = 0.1f;
    j->in.A_log = Al, j->in.dt_bias = dt;
    j->qsl = (int32_t *)bench_alloc((n_seqs + 1) * 4, 64);
    j->slots = (int32_t *)bench_alloc(n_seqs * 4, 64);
    j->init = (uint8_t *)bench_alloc(n_seqs, 64);
    for (i = 0; i <= n_seqs; i++) j->qsl[i] = (int32_t)(i * len);
    for (i = 0; i < n_seqs; i++) j->slots[i] = (int32_t)i, j->init[i] = 1;
    j->st.n_slots = n_seqs;
    j->st.slot_stride = HV * dk * dv;
    j->st.data = (float *)bench_alloc(n_seqs * HV * dk * dv * 4, 4096);
    for (i = 0; i < n_seqs * HV * dk * dv; i++) j->st.data[i] = 0.01f * (float)((i * 2654435761u) % 200) - 1.0f;
    j->o = bench_alloc(T * HV * dv * 2, 64);
    if ((s = amxk_gdn_workspace_size(&env->ctx, &j->p, AMXK_GDN_AUTO, &j->wsb)) != AMXK_OK) bench_die("gdn ws: %s", amxk_status_string(s));
    j->ws = bench_alloc(j->wsb ? j->wsb : 64, 64);
}

static void gdn_free_job(gdn_job *j) {
    free((void *)j->in.q), free((void *)j->in.k), free((void *)j->in.v), free((void *)j->in.a), free((void *)j->in.b);
    free((void *)j->in.A_log), free((void *)j->in.dt_bias), free(j->qsl), free(j->slots), free(j->init);
    free(j->st.data), free(j->o), free(j->ws);
}

static int cmd_gdn_decode(bench_env *env, const bench_args *a) {
    gdn_job j;
    long B = bench_int(a, "batch", 128);
    double med, sb, io;
    if (B < 1) bench_die("--batch must be >= 1");
    gdn_setup(&j, env, a, (size_t)B, 1);
    j.mode = AMXK_GDN_RECURRENT;
    med = bench_measure(gdn_call, &j, env->warmup, env->reps);
    sb = (double)B * (double)(j.p.n_v_heads * j.p.dk * j.p.dv) * 4.0;
    io = (double)B * (2.0 * (double)(j.p.n_k_heads * j.p.dk) * 2 + 2.0 * (double)(j.p.n_v_heads * j.p.dv) * 2 + 4.0 * (double)j.p.n_v_heads);
    bench_line(med, 6.0 * (double)(j.p.dk * j.p.dv * j.p.n_v_heads) * (double)B, 2.0 * sb + io,
               "op=gdn-decode batch=%ld hk=%zu hv=%zu dk=%zu dv=%zu vfirst=%d threads=%d isa=%s tier=%s state_mib=%.0f", B, j.p.n_k_heads,
               j.p.n_v_heads, j.p.dk, j.p.dv, j.p.state_v_first, env->threads, env->isa, amxk_tier_name(env->ctx.tier), sb / 1048576.0);
    gdn_free_job(&j);
    return 0;
}

static int cmd_gdn_prefill(bench_env *env, const bench_args *a) {
    gdn_job j;
    long T = bench_int(a, "t", 4096);
    const char *ms = bench_str(a, "mode", "auto");
    double med, flops;
    if (T < 1) bench_die("--t must be >= 1");
    gdn_setup(&j, env, a, 1, (size_t)T);
    j.init[0] = 0;
    if (strcmp(ms, "auto") == 0) j.mode = AMXK_GDN_AUTO;
    else if (strcmp(ms, "chunk") == 0 || strcmp(ms, "chunked") == 0) j.mode = AMXK_GDN_CHUNKED;
    else if (strcmp(ms, "recurrent") == 0) j.mode = AMXK_GDN_RECURRENT;
    else bench_die("--mode must be auto, chunk or recurrent");
    med = bench_measure(gdn_call, &j, env->warmup, env->reps);
    flops = 6.0 * (double)(j.p.dk * j.p.dv * j.p.n_v_heads) * (double)T;
    bench_line(med, flops,
               (double)T * (2.0 * (double)(j.p.n_k_heads * j.p.dk) * 2 + 2.0 * (double)(j.p.n_v_heads * j.p.dv) * 2) +
                   (double)(j.p.n_v_heads * j.p.dk * j.p.dv) * 4.0,
               "op=gdn-prefill t=%ld hk=%zu hv=%zu dk=%zu dv=%zu mode=%s threads=%d isa=%s tier=%s tokens_per_s=%.0f", T, j.p.n_k_heads,
               j.p.n_v_heads, j.p.dk, j.p.dv, ms, env->threads, env->isa, amxk_tier_name(env->ctx.tier), (double)T / med);
    gdn_free_job(&j);
    return 0;
}

typedef struct conv_job {
    const bench_env *env;
    void *packed, *x, *out;
    size_t packed_bytes, n, dim;
    int32_t *qsl, *slots;
    uint8_t *init;
    int decode;
    amxk_dtype dt;
    amxk_conv_state st;
} conv_job;

static void conv_call(void *user, size_t rep) {
    conv_job *j = (conv_job *)user;
    amxk_status s;
    (void)rep;
    if (j->decode)
        s = amxk_conv1d_update(&j->env->ctx, j->packed, j->packed_bytes, 1, j->n, NULL, j->slots, NULL, j->x, j->dt, j->dim, j->out, j->dt,
                               j->dim, &j->st);
    else
        s = amxk_conv1d_prefill(&j->env->ctx, j->packed, j->packed_bytes, 1, 1, j->qsl, j->slots, j->init, j->x, j->dt, j->dim, j->out,
                                j->dt, j->dim, &j->st);
    if (s != AMXK_OK) bench_die("conv1d: %s", amxk_status_string(s));
}

static int cmd_conv1d(bench_env *env, const bench_args *a) {
    conv_job j;
    long T = bench_int(a, "t", 4096), D = bench_int(a, "dim", 8192), W = bench_int(a, "width", 4), B = bench_int(a, "batch", 128);
    const char *form = bench_str(a, "form", "prefill"), *dts = bench_str(a, "dtype", "bf16");
    size_t esz, tokens, i, slots;
    float *wf;
    double med, bytes;
    amxk_status s;
    if (T < 1 || D < 1 || W < 1 || B < 1) bench_die("--t, --dim, --width, --batch must be >= 1");
    memset(&j, 0, sizeof j);
    j.env = env, j.dim = (size_t)D;
    j.decode = strcmp(form, "decode") == 0;
    if (!j.decode && strcmp(form, "prefill") != 0) bench_die("--form must be prefill or decode");
    j.dt = strcmp(dts, "f32") == 0 ? AMXK_DTYPE_F32 : AMXK_DTYPE_BF16;
    esz = amxk_dtype_size(j.dt);
    tokens = j.decode ? (size_t)B : (size_t)T;
    slots = j.decode ? (size_t)B : 1;
    j.n = j.decode ? (size_t)B : 1;
    if ((s = amxk_conv1d_pack_size(j.dim, (size_t)W, &j.packed_bytes)) != AMXK_OK) bench_die("conv pack size: %s", amxk_status_string(s));
    j.packed = bench_alloc(j.packed_bytes, 64);
    wf = (float *)bench_alloc(j.dim * (size_t)W * 4, 64);
    bench_fill(wf, j.dim * (size_t)W, 21);
    if ((s = amxk_conv1d_pack(&env->ctx, j.packed, j.packed_bytes, wf, AMXK_DTYPE_F32, j.dim, (size_t)W, (size_t)W, NULL)) != AMXK_OK)
        bench_die("conv pack: %s", amxk_status_string(s));
    free(wf);
    wf = (float *)bench_alloc(tokens * j.dim * 4, 64);
    bench_fill(wf, tokens * j.dim, 22);
    j.x = bench_alloc(tokens * j.dim * esz, 64);
    amxk_convert(NULL, j.x, j.dt, wf, AMXK_DTYPE_F32, tokens * j.dim);
    free(wf);
    j.out = bench_alloc(tokens * j.dim * esz, 64);
    j.qsl = (int32_t *)bench_alloc(8, 64);
    j.qsl[0] = 0, j.qsl[1] = (int32_t)T;
    j.slots = (int32_t *)bench_alloc(slots * 4, 64);
    j.init = (uint8_t *)bench_alloc(slots, 64);
    for (i = 0; i < slots; i++) j.slots[i] = (int32_t)i, j.init[i] = 1;
    j.st.dtype = j.dt, j.st.n_slots = slots, j.st.state_len = (size_t)W - 1;
    j.st.dim_stride = 1, j.st.tok_stride = j.dim, j.st.slot_stride = j.dim * ((size_t)W - 1);
    j.st.data = bench_alloc(slots * j.dim * ((size_t)W > 1 ? (size_t)W - 1 : 1) * esz + 64, 64);
    memset(j.st.data, 0, slots * j.dim * ((size_t)W > 1 ? (size_t)W - 1 : 1) * esz);
    med = bench_measure(conv_call, &j, env->warmup, env->reps);
    bytes = 2.0 * (double)(tokens * j.dim * esz) + 2.0 * (double)(slots * j.dim * (size_t)(W - 1) * esz);
    bench_line(med, 2.0 * (double)W * (double)j.dim * (double)tokens, bytes,
               "op=conv1d form=%s t=%zu dim=%zu width=%ld dtype=%s threads=%d isa=%s tier=%s", j.decode ? "decode" : "prefill", tokens, j.dim,
               W, dts, env->threads, env->isa, amxk_tier_name(env->ctx.tier));
    free(j.packed), free(j.x), free(j.out), free(j.qsl), free(j.slots), free(j.init), free(j.st.data);
    return 0;
}

typedef struct gating_job {
    const bench_env *env;
    size_t t, hv;
    void *a, *b, *beta;
    float *Al, *dt, *g;
} gating_job;

static void gating_call(void *user, size_t rep) {
    gating_job *j = (gating_job *)user;
    amxk_status s = amxk_gdn_gating(&j->env->ctx, j->t, j->hv, j->a, j->hv, j->b, j->hv, AMXK_DTYPE_BF16, j->Al, AMXK_DTYPE_F32, j->dt,
                                    AMXK_DTYPE_F32, 1.0f, 20.0f, j->g, j->hv, j->beta, AMXK_DTYPE_BF16, j->hv);
    (void)rep;
    if (s != AMXK_OK) bench_die("gdn-gating: %s", amxk_status_string(s));
}

static int cmd_gdn_gating(bench_env *env, const bench_args *a) {
    gating_job j;
    long T = bench_int(a, "t", 4096), HV = bench_int(a, "hv", 32);
    size_t n;
    double med;
    if (T < 1 || HV < 1) bench_die("--t and --hv must be >= 1");
    memset(&j, 0, sizeof j);
    j.env = env, j.t = (size_t)T, j.hv = (size_t)HV, n = j.t * j.hv;
    j.a = gdn_bf16_buf(n, 31, 8.0f), j.b = gdn_bf16_buf(n, 32, 8.0f);
    j.Al = (float *)bench_alloc(j.hv * 4, 64), j.dt = (float *)bench_alloc(j.hv * 4, 64);
    bench_fill(j.Al, j.hv, 33), bench_fill(j.dt, j.hv, 34);
    j.g = (float *)bench_alloc(n * 4, 64), j.beta = bench_alloc(n * 2, 64);
    med = bench_measure(gating_call, &j, env->warmup, env->reps);
    bench_line(med, 0.0, (double)n * (2 + 2 + 4 + 2), "op=gdn-gating t=%zu hv=%zu isa=%s tier=%s", j.t, j.hv, env->isa,
               amxk_tier_name(env->ctx.tier));
    free(j.a), free(j.b), free(j.Al), free(j.dt), free(j.g), free(j.beta);
    return 0;
}
