#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS TARGET... - runs build/fuzz/amxk_fuzz on each target for SECONDS seconds
# (libFuzzer -max_total_time), from the generated seeds (build/fuzz/seeds/TARGET), the kept crash
# inputs (tests/fuzz/crashes/TARGET, if any) and the working corpus of earlier runs
# (build/fuzz/corpus/TARGET). A target that crashes (ASan / UBSan report, abort, timeout, leak) fails;
# its input is left in build/fuzz/artifacts/. Ends with `N passed, N failed` (one test per target);
# exit status 1 if any target failed.
set -u
secs=$1
shift
bin=build/fuzz/amxk_fuzz
pass=0
fail=0
for t in "$@"; do
    corpus=build/fuzz/corpus/$t
    mkdir -p "$corpus" build/fuzz/artifacts
    seeds=(build/fuzz/seeds/$t)
    [ -d tests/fuzz/crashes/$t ] && seeds+=(tests/fuzz/crashes/$t)
    log=build/fuzz/$t.log
    echo "fuzz $t: ${secs}s"
    AMXK_FUZZ_TARGET=$t UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/$t- "$corpus" "${seeds[@]}" >"$log" 2>&1
    rc=$?
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1))
        echo "fuzz $t: ok, ${runs:-?} runs, corpus $(ls "$corpus" | wc -l) files"
    else
        fail=$((fail + 1))
        echo "fuzz $t: FAILED (exit status $rc, ${runs:-?} runs); the end of $log:"
        tail -n 40 "$log"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
