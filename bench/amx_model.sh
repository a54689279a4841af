#!/bin/bash
# bench/amx_model.sh - the AMX tile-count model (issue 17): amxk_linear on the AMX level through the
# tile emulator built with counters (build/amxk_bench_amxcount, -DAMXK_AMX_EMULATE -DAMXK_AMX_EMU_COUNT),
# one call per case, printed as a Markdown section. Counts, not timings: the same on every CPU.
# AMX_MODEL_SHAPES: M:N:K list (default 256:4096:4096 32:4096:4096); AMX_MODEL_THREADS: workers of the
# linear calls (default 1; the L2 model is per worker thread, the counts are sums over the workers; with
# more than one, which thread runs which task varies, and so can the L2 counts).
# Needs make build/amxk_bench_amxcount.
set -euo pipefail
bin=${AMX_MODEL_BIN:-build/amxk_bench_amxcount}
shapes=${AMX_MODEL_SHAPES:-256:4096:4096 32:4096:4096}
threads=${AMX_MODEL_THREADS:-1}
[ -x "$bin" ] || { echo "$bin missing: make build/amxk_bench_amxcount" >&2; exit 1; }
echo
echo "## AMX tile-count model (emulator counters; counts per call, CPU-independent)"
echo
echo "\`$bin linear --m M --n N --k K <format> --isa amx --reps 1 --warmup 0 --rotate-mb 0 --threads $threads\`"
echo "(\`make amx-model\`). W loads / packed byte: bytes of tile loads from the packed weights per byte of"
echo "the pack; W beyond L2 / packed byte: bytes of the pack that came from beyond the worker's L2 (the"
echo "emulator's per-worker LRU model: 2 MiB (AMXK_AMX_EMU_L2_BYTES), 16 ways, 64-byte lines, fed by every tile load and"
echo "store and by the kernels' vector reads of x and of the pack; ideal 1: each weight byte once per call per"
echo "worker); dequant / block: 16-column blocks dequantized per block of the pack (ideal 1); x, ws, stack:"
echo "tile-load bytes from the caller's x, the workspace (x panels, dequantized blocks) and the stack"
echo "(int4 / int2 widened to int8); x / ws beyond L2: bytes of the caller's x and of the workspace that came"
echo "from beyond L2."
echo
echo "| M x N x K | format | TDPs | LDTILECFG | tile loads | W loads / packed byte | W beyond L2 / packed byte | dequant / block | bytes / TDP | tile stores | x / ws / stack load MiB | x / ws beyond L2 MiB |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
for s in $shapes; do
    IFS=: read -r m n k <<<"$s"
    for f in "bf16|--dtype bf16" "int4 g128 (w4a16)|--dtype int4 --group 128" "int8 g128 (w8a8)|--dtype int8 --group 128 --act int8" \
             "int4 g128 (w4a8)|--dtype int4 --group 128 --act int8"; do
        name=${f%%|*} args=${f#*|}
        # shellcheck disable=SC2086
        line=$("$bin" linear --m "$m" --n "$n" --k "$k" $args --isa amx --reps 1 --warmup 0 --rotate-mb 0 --threads "$threads" | grep '^amx_counts')
        get() { sed -E "s/.* $1=([0-9.]+).*/\1/" <<<"$line"; }
        mib() { awk "BEGIN{print $(get "$1")/1048576}"; }
        printf '| %s x %s x %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f / %.2f / %.2f | %.2f / %.2f |\n' "$m" "$n" "$k" "$name" \
            "$(get tdp)" "$(get ldtilecfg)" "$(get tileloadd)" "$(get weight_loads_per_packed_byte)" "$(get w_beyond_l2_per_packed_byte)" \
            "$(get dequant_per_block)" "$(get bytes_per_tdp)" "$(get tilestored)" "$(mib load_bytes_x)" "$(mib load_bytes_ws)" \
            "$(mib load_bytes_stack)" "$(mib l2_miss_bytes_x)" "$(mib l2_miss_bytes_ws)"
    done
done
# MoE prefill, Qwen3-30B-A3B layer (E=128, top-8, hidden 2048, inter 768); AMX_MODEL_MOE=0 skips it
if [ "${AMX_MODEL_MOE:-1}" != 0 ]; then
    m=${AMX_MODEL_MOE_M:-512}
    moe_threads=${AMX_MODEL_MOE_THREADS:-1 16}
    echo
    echo "MoE prefill M=$m (\`$bin moe --m $m --layers 1 <format> --isa amx --reps 1 --warmup 0 --threads T\`):"
    echo "useful TDP work = the routed rows' MACs (3 N K per pair) / the MACs of the TDPs' rows (a TDP of R rows"
    echo "counts R / 16 of a full one: padding rows and rows computed twice are the waste); per TDP: the same if"
    echo "every TDP cost a full one whatever its rows. min rows: the smallest expert's rows (all of them must run"
    echo "on AMX for the ratio to hold: >= 5 for bf16, the w8a8 rule of amxk_pack.h). T: workers (AMX_MODEL_MOE_THREADS,"
    echo "default 1 16; LDTILECFG / worker: the call's LDTILECFG over T, an average); TILERELEASE: one per"
    echo "task; x panel MiB: bytes copied into the bf16 kernel's tile-major x panels (gathered x and activation);"
    echo "W beyond L2: bytes of the active experts' packs that came from beyond the worker's L2 (the L2 model above), per packed byte."
    echo
    echo "| format | T | TDPs | LDTILECFG | LDTILECFG / worker | TILERELEASE | x panel MiB | tile loads | W loads / active packed byte | W beyond L2 / active packed byte | dequant blocks | tile stores | useful TDP work | per TDP | min rows |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for f in "bf16|--dtype bf16" "int8 g128 (w8a8)|--dtype int8 --act int8" "int4 g128 (w4a8)|--dtype int4 --act int8"; do
        name=${f%%|*} args=${f#*|}
        for t in $moe_threads; do
            # shellcheck disable=SC2086
            line=$("$bin" moe --m "$m" --layers 1 $args --isa amx --reps 1 --warmup 0 --threads "$t" | grep '^amx_counts_moe')
            get() { sed -E "s/.* $1=([0-9.]+).*/\1/" <<<"$line"; }
            printf '| %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$t" "$(get tdp)" "$(get ldtilecfg)" \
                "$(awk "BEGIN{print $(get ldtilecfg)/$t}")" "$(get release)" "$(awk "BEGIN{print $(get xpanel_bytes)/1048576}")" "$(get tileloadd)" \
                "$(get weight_loads_per_packed_byte)" "$(get w_beyond_l2_per_packed_byte)" "$(get dequant_blocks)" "$(get tilestored)" "$(get useful_tdp_work)" \
                "$(get useful_tdp_work_full)" "$(get min_expert_rows)"
        done
    done
fi
