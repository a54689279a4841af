#!/usr/bin/env bash
# Runs test programs, AMXK_TEST_JOBS at a time, and sums their results.
#
#   tests/run_tests.sh PROGRAM...
#
# Each PROGRAM is a test binary or a shell script (*.sh, run with bash), a binary optionally followed by
# variant settings `@KEY=VALUE` (each becomes the environment variable AMXK_TEST_KEY=VALUE for that run:
# build/test_pack_emu512@DENY=amx-fp16 runs test_pack with AMXK_TEST_DENY=amx-fp16; tests/test.h says
# what DENY and ONLY do). A program reports its result
# with a last line `N passed, N failed` alone on the line. Its count is taken as reported; a program
# that exits non-zero without reporting a failure (a crash, an abort, a timeout, a missing binary or
# a missing summary line) adds one failure. Each program's output is printed whole when it ends
# (programs run concurrently, so in the order they end; the slowest start first: scripts (the compile
# tests), then the emulated-AVX-512 builds). The last line printed is the total, `N passed, N failed`, and the exit status is 1 if
# anything failed. Before it, a summary in argument order and one line naming the ISA levels that
# ran natively and emulated over all programs (from each program's `levels native: ...; emulated: ...`
# line, tests/test.h).
#
# Environment:
#   AMXK_RUN_PREFIX   command put before each binary (e.g. qemu-aarch64-static); not before scripts
#   AMXK_TEST_TIMEOUT seconds one program may run (default 1200; 0 = no limit)
#   AMXK_TEST_JOBS    programs run at once (default: the number of CPUs, `nproc`); 1 = one after another
set -u

prefix=${AMXK_RUN_PREFIX:-}
limit=${AMXK_TEST_TIMEOUT:-1200}
jobs=${AMXK_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$jobs" in '' | *[!0-9]* | 0) jobs=1 ;; esac
total_pass=0
total_fail=0
summary=()
native=" "
emulated=" "
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_one I PROG: runs program I, its output in $tmp/I.log, exit status and seconds in $tmp/I.rc
run_one() {
    local i=$1 prog=$2 cmd start rc kv
    local -a envs=(env)
    if [ "${prog#*@}" != "$prog" ]; then # variant settings
        IFS=@ read -r -a kv <<<"${prog#*@}"
        for s in "${kv[@]}"; do envs+=("AMXK_TEST_$s"); done
        prog=${prog%%@*}
    fi
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
    "${envs[@]}" "${cmd[@]}" >"$tmp/$i.log" 2>&1 </dev/null
    rc=$?
    echo "$rc $(($(date +%s) - start))" >"$tmp/$i.rc"
}

progs=("$@")
order=()
for i in "${!progs[@]}"; do case "${progs[$i]}" in *.sh) order+=("$i") ;; esac; done
for i in "${!progs[@]}"; do case "${progs[$i]}" in *_emu512 | *_emu512@*) order+=("$i") ;; esac; done
for i in "${!progs[@]}"; do case "${progs[$i]}" in *.sh | *_emu512 | *_emu512@*) ;; *) order+=("$i") ;; esac; done

declare -A pid_of=()
show() { # prints the output of the program whose job had pid $1
    local i=${pid_of[$1]}
    echo "=== $(basename "${progs[$i]}")"
    cat "$tmp/$i.log"
    unset "pid_of[$1]"
}
for i in "${order[@]}"; do
    while [ "${#pid_of[@]}" -ge "$jobs" ]; do
        wait -n -p done_pid
        show "$done_pid"
    done
    run_one "$i" "${progs[$i]}" &
    pid_of[$!]=$i
done
while [ "${#pid_of[@]}" -gt 0 ]; do
    wait -n -p done_pid
    show "$done_pid"
done

for i in "${!progs[@]}"; do
    name=$(basename "${progs[$i]%%@*}")
    if [ "${progs[$i]#*@}" != "${progs[$i]}" ]; then name="$name@${progs[$i]#*@}"; fi
    log=$tmp/$i.log
    read -r rc secs <"$tmp/$i.rc" 2>/dev/null || { rc=127; secs=0; }
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
    summary+=("$(printf '%-44s %6d passed %4d failed %5ss%s' "$name" "$p" "$f" "$secs" "$note")")
done

echo "=== summary"
for s in "${summary[@]}"; do echo "$s"; done
trim() { local v=$1; v=${v# }; v=${v% }; echo "${v:-none}"; }
echo "levels run natively: $(trim "$native"); emulated: $(trim "$emulated")"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
