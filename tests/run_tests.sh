#!/usr/bin/env bash
# Runs test programs one after another and sums their results.
#
#   tests/run_tests.sh PROGRAM...
#
# Each PROGRAM is a test binary or a shell script (*.sh, run with bash). A program reports its result
# with a last line `N passed, N failed` alone on the line. Its count is taken as reported; a program
# that exits non-zero without reporting a failure (a crash, an abort, a timeout, a missing binary or
# a missing summary line) adds one failure. The last line printed is the total, `N passed, N failed`,
# and the exit status is 1 if anything failed. Before it, one line names the ISA levels that ran
# natively and emulated over all programs (from each program's `levels native: ...; emulated: ...`
# line, tests/test.h).
#
# Environment:
#   AMXK_RUN_PREFIX   command put before each binary (e.g. qemu-aarch64-static); not before scripts
#   AMXK_TEST_TIMEOUT seconds one program may run (default 1200; 0 = no limit)
set -u

prefix=${AMXK_RUN_PREFIX:-}
limit=${AMXK_TEST_TIMEOUT:-1200}
total_pass=0
total_fail=0
summary=()
native=" "
emulated=" "

for prog in "$@"; do
    name=$(basename "$prog")
    echo "=== $name"
    log=$(mktemp)
    if [ "${prog%.sh}" != "$prog" ]; then
        cmd=(bash "$prog")
    elif [ -n "$prefix" ]; then
        # shellcheck disable=SC2206 # the prefix may be several words
        cmd=($prefix "$prog")
    else
        cmd=("$prog")
    fi
    if [ "$limit" != 0 ] && command -v timeout >/dev/null 2>&1; then
        cmd=(timeout "$limit" "${cmd[@]}")
    fi
    start=$(date +%s)
    "${cmd[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    secs=$(( $(date +%s) - start ))
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    lv=$(grep -E '^levels native:' "$log" | tail -n 1)
    if [ -n "$lv" ]; then
        for l in $(echo "$lv" | sed -E 's/^levels native:([^;]*);.*/\1/'); do
            case "$l" in none) continue ;; esac
            case "$native" in *" $l "*) ;; *) native="$native$l " ;; esac
        done
        for l in $(echo "$lv" | sed -E 's/.*; emulated:([^;]*).*/\1/'); do
            case "$l" in none) continue ;; esac
            case "$emulated" in *" $l "*) ;; *) emulated="$emulated$l " ;; esac
        done
    fi
    rm -f "$log"
    p=0
    f=0
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
        f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
    fi
    note=""
    if [ -z "$line" ]; then
        note=" (no summary line, exit status $rc)"
        [ "$f" -eq 0 ] && f=1
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        note=" (exit status $rc)"
        f=1
    fi
    [ "$rc" -eq 124 ] && note=" (timed out after ${limit}s)"
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    summary+=("$(printf '%-28s %6d passed %4d failed %5ss%s' "$name" "$p" "$f" "$secs" "$note")")
done

echo "=== summary"
for s in "${summary[@]}"; do echo "$s"; done
trim() { local v=$1; v=${v# }; v=${v% }; echo "${v:-none}"; }
echo "levels run natively: $(trim "$native"); emulated: $(trim "$emulated")"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
