#!/usr/bin/env bash
# Old-vs-new comparison of two amxk_bench binaries over the `make bench` cases (bench/run_bench.sh's
# amxk_bench lines), interleaved in one run so that both see the same machine state:
#
#   bench/compare.sh OLD_BIN NEW_BIN [ROUNDS] [FILTER]
#
# For every case, ROUNDS times (default 3): run OLD then NEW (then NEW then OLD on the next round, so
# neither always goes first). Prints per case and op line the median over rounds of each binary's
# median_us and the ratio new / old (< 1: new is faster). FILTER (an extended regex) keeps only the
# cases that match it. Environment as run_bench.sh (BENCH_THREADS, BENCH_ROTATE_MB).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-3} filter=${4:-.}
mapfile -t cases < <(BENCH_LIST=1 bash bench/run_bench.sh | grep -E -- "$filter")
med() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}'; }
printf '%-10s %-10s %7s  %s\n' old_us new_us new/old case
for c in "${cases[@]}"; do
    args=${c#build/amxk_bench }
    args=$(sed -E 's/ --routing-out [^ ]+//' <<<"$args") # the peer's routing files are run_bench.sh's
    declare -A times=()
    for ((r = 0; r < rounds; r++)); do
        if ((r % 2)); then order=("$new" "$old"); else order=("$old" "$new"); fi
        for b in "${order[@]}"; do
            i=0
            # shellcheck disable=SC2086 # args are words
            while IFS= read -r l; do
                case $l in op=*) ;; *) continue ;; esac
                times[$b.$i]="${times[$b.$i]:-} $(grep -oE 'median_us=[^ ]+' <<<"$l" | cut -d= -f2)"
                i=$((i + 1))
            done < <("$b" $args 2>/dev/null || true)
        done
    done
    i=0
    while [ -n "${times[$old.$i]:-}${times[$new.$i]:-}" ]; do
        o=$(med <<<"${times[$old.$i]:-}") n=$(med <<<"${times[$new.$i]:-}")
        ratio=$(awk -v o="$o" -v n="$n" 'BEGIN {if (o > 0 && n > 0) printf "%.3f", n / o; else print "-"}')
        printf '%-10s %-10s %7s  %s%s\n' "$o" "$n" "$ratio" "$args" "$([ "$i" -gt 0 ] && echo " [line $i]")"
        i=$((i + 1))
    done
    unset times
done
