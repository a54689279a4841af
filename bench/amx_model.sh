#!/bin/bash
# bench/amx_model.sh - the AMX tile-count model (issue 17): amxk_linear on the AMX level through the
# tile emulator built with counters (build/amxk_bench_amxcount, -DAMXK_AMX_EMULATE -DAMXK_AMX_EMU_COUNT),
# one call per case, printed as a Markdown section. Counts, not timings: the same on every CPU.
# AMX_MODEL_SHAPES: M:N:K list (default 256:4096:4096 32:4096:4096). Needs make build/amxk_bench_amxcount.
set -euo pipefail
bin=${AMX_MODEL_BIN:-build/amxk_bench_amxcount}
shapes=${AMX_MODEL_SHAPES:-256:4096:4096 32:4096:4096}
[ -x "$bin" ] || { echo "$bin missing: make build/amxk_bench_amxcount" >&2; exit 1; }
echo
echo "## AMX tile-count model (emulator counters; counts per call, CPU-independent)"
echo
echo "\`$bin linear --m M --n N --k K <format> --isa amx --reps 1 --warmup 0 --rotate-mb 0 --threads 1\`"
echo "(\`make amx-model\`). W loads / packed byte: bytes of tile loads from the packed weights per byte of"
echo "the pack (the ideal is 1: each weight byte loaded once per worker); dequant / block: 16-column blocks"
echo "dequantized per block of the pack (ideal 1); x, ws, stack: tile-load bytes from the caller's x, the"
echo "workspace (x panels, dequantized blocks) and the stack (int4 / int2 widened to int8)."
echo
echo "| M x N x K | format | TDPs | LDTILECFG | tile loads | W loads / packed byte | dequant / block | bytes / TDP | tile stores | x / ws / stack load MiB |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
for s in $shapes; do
    IFS=: read -r m n k <<<"$s"
    for f in "bf16|--dtype bf16" "int4 g128 (w4a16)|--dtype int4 --group 128" "int8 g128 (w8a8)|--dtype int8 --group 128 --act int8" \
             "int4 g128 (w4a8)|--dtype int4 --group 128 --act int8"; do
        name=${f%%|*} args=${f#*|}
        # shellcheck disable=SC2086
        line=$("$bin" linear --m "$m" --n "$n" --k "$k" $args --isa amx --reps 1 --warmup 0 --rotate-mb 0 --threads 1 | grep '^amx_counts')
        get() { sed -E "s/.* $1=([0-9.]+).*/\1/" <<<"$line"; }
        printf '| %s x %s x %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f / %.2f / %.2f |\n' "$m" "$n" "$k" "$name" "$(get tdp)" \
            "$(get ldtilecfg)" "$(get tileloadd)" "$(get weight_loads_per_packed_byte)" "$(get dequant_per_block)" "$(get bytes_per_tdp)" \
            "$(get tilestored)" "$(awk "BEGIN{print $(get load_bytes_x)/1048576}")" "$(awk "BEGIN{print $(get load_bytes_ws)/1048576}")" \
            "$(awk "BEGIN{print $(get load_bytes_stack)/1048576}")"
    done
done
# MoE prefill, Qwen3-30B-A3B layer (E=128, top-8, hidden 2048, inter 768); AMX_MODEL_MOE=0 skips it
if [ "${AMX_MODEL_MOE:-1}" != 0 ]; then
    m=${AMX_MODEL_MOE_M:-512}
    echo
    echo "MoE prefill M=$m (\`$bin moe --m $m --layers 1 <format> --isa amx --reps 1 --warmup 0 --threads 1\`):"
    echo "useful TDP work = the routed rows' MACs (3 N K per pair) / the MACs of the TDPs' rows (a TDP of R rows"
    echo "counts R / 16 of a full one: padding rows and rows computed twice are the waste); per TDP: the same if"
    echo "every TDP cost a full one whatever its rows. min rows: the smallest expert's rows (all of them must run"
    echo "on AMX for the ratio to hold: >= 5 for bf16, the w8a8 rule of amxk_pack.h)."
    echo
    echo "| format | TDPs | LDTILECFG | tile loads | W loads / active packed byte | dequant blocks | tile stores | useful TDP work | per TDP | min rows |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for f in "bf16|--dtype bf16" "int8 g128 (w8a8)|--dtype int8 --act int8" "int4 g128 (w4a8)|--dtype int4 --act int8"; do
        name=${f%%|*} args=${f#*|}
        # shellcheck disable=SC2086
        line=$("$bin" moe --m "$m" --layers 1 $args --isa amx --reps 1 --warmup 0 --threads 1 | grep '^amx_counts_moe')
        get() { sed -E "s/.* $1=([0-9.]+).*/\1/" <<<"$line"; }
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(get tdp)" "$(get ldtilecfg)" "$(get tileloadd)" \
            "$(get weight_loads_per_packed_byte)" "$(get dequant_blocks)" "$(get tilestored)" "$(get useful_tdp_work)" \
            "$(get useful_tdp_work_full)" "$(get min_expert_rows)"
    done
fi
