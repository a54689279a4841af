#!/usr/bin/env bash
# Builds bench/moe_ab.c (one process alternating amxk_moe_experts calls of several builds):
#
#   bench/moe_ab.sh OUT NAME:SRC[:CFLAGS] ...     e.g. bench/moe_ab.sh build/moe_ab old:88ea987 new:.
#   OUT M EXPERTS TOPK HIDDEN INTER CALLS         e.g. build/moe_ab 16 128 8 2048 768 20
#   MOE_AB_DTYPE=int8|int4|fp8e4m3 (default bf16) and MOE_AB_ACT=int8 pick the weights / the w8a8 form.
#
# SRC: a directory holding amxk.h / amxk_pack.h / amxk_moe.h, or a git revision (its headers exported
# to build/moe_ab.d/REV). CFLAGS (optional): e.g. -DAMXK__LIN_DPF_ROWS=256. One object per variant, -j1.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
mkdir -p build/moe_ab.d
decl="" names="" calls="" init="" objs="" first=""
for spec in "$@"; do
    IFS=: read -r nm src fl <<<"$spec"
    if [ ! -d "$src" ]; then
        d=build/moe_ab.d/$src
        mkdir -p "$d"
        for f in amxk.h amxk_pack.h amxk_moe.h; do git show "$src:$f" >"$d/$f"; done
        src=$d
    fi
    # shellcheck disable=SC2086 # fl: words
    gcc -std=gnu11 -O2 -Wall -pthread -I"$src" -DVAR="$nm" $fl -c bench/moe_ab.c -o "build/moe_ab.d/$nm.o"
    decl="$decl DECL($nm)" names="$names\"$nm\"," calls="$calls${nm}_call," objs="$objs build/moe_ab.d/$nm.o"
    init="$init ${nm}_init(m, e, topk, k, n, ids, tw, w13, w2, b13, b2, x, y);"
    first=${first:-$nm}
done
# shellcheck disable=SC2086 # objs: words
gcc -std=gnu11 -O2 -Wall -pthread -D"VARS_DECL=$decl" -D"VAR_NAMES={$names}" -D"VAR_CALLS={$calls}" -D"VARS_INIT=$init" \
    -DFIRST_packsize="${first}_packsize" -DFIRST_pack="${first}_pack" -DFIRST_tobf16="${first}_tobf16" bench/moe_ab.c $objs -o "$out" -lm
