#!/usr/bin/env bash
# tests/bitwise.sh - bit-for-bit comparison of two test-matrix runs (a change that must not change any
# output: same machine, same builds, before and after).
#
#   AMXK_TEST_DUMP=DIR make test          every checked output of every run of the matrix (each program,
#                                         build and feature variant) hashed into DIR/<build dir>.<program>[.variant].txt
#                                         (tests/test.h: test_dump)
#   bash tests/bitwise.sh BEFORE AFTER    compares the two directories line by line (sorted: the key is
#                                         what, case id, level, workers, ordinal; the value bytes + hash)
#
# Prints per file the outputs compared and those that differ or exist on one side only; ends with
# `N outputs compared, D differ, U on one side only`; exit status 1 when D > 0.
set -u
a=$1 b=$2
tot=0 dif=0 one=0
for fa in "$a"/*.txt; do
    f=$(basename "$fa")
    fb="$b/$f"
    if [ ! -f "$fb" ]; then echo "$f: only in $a"; continue; fi
    sa=$(mktemp) sb=$(mktemp)
    sort "$fa" >"$sa"; sort "$fb" >"$sb"
    # key = all fields but the hash (last); join on the key
    n=$(comm -12 "$sa" "$sb" | wc -l)
    ka=$(mktemp) kb=$(mktemp)
    awk '{ $NF=""; print }' "$sa" | sort >"$ka"; awk '{ $NF=""; print }' "$sb" | sort >"$kb"
    common_keys=$(comm -12 "$ka" "$kb" | wc -l)
    only=$(comm -3 "$ka" "$kb" | wc -l)
    d=$((common_keys - n))
    tot=$((tot + common_keys)) dif=$((dif + d)) one=$((one + only))
    printf '%-44s %9d compared %6d differ %6d one side only\n' "$f" "$common_keys" "$d" "$only"
    if [ "$d" -gt 0 ]; then comm -23 "$sa" "$sb" | head -n 3 | sed 's/^/    before: /'; comm -13 "$sa" "$sb" | head -n 3 | sed 's/^/    after:  /'; fi
    rm -f "$sa" "$sb" "$ka" "$kb"
done
for fb in "$b"/*.txt; do [ -f "$a/$(basename "$fb")" ] || echo "$(basename "$fb"): only in $b"; done
echo "$tot outputs compared, $dif differ, $one on one side only"
[ "$dif" -eq 0 ]
