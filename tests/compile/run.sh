#!/usr/bin/env bash
# Compile tests: build the tests/compile/ programs with every compiler and language standard, link,
# run, and count each build+run as one test. Last line: `N passed, N failed`.
#
#   bash tests/compile/run.sh            (from anywhere; `make compile-tests` does this)
#
# Environment: CC_GCC, CC_CLANG, CXX_GCC, CXX_CLANG (default gcc clang g++ clang++; a compiler that is
# not installed is reported and its cases are skipped, not counted), AMXK_COMPILE_OUT (default
# build/compile), AMXK_COMPILE_JOBS (default: number of CPUs).
set -u
cd "$(dirname "$0")/../.." || exit 1

out=${AMXK_COMPILE_OUT:-build/compile}
jobs=${AMXK_COMPILE_JOBS:-$(nproc 2>/dev/null || echo 2)}
cc_gcc=${CC_GCC:-gcc}
cc_clang=${CC_CLANG:-clang}
cxx_gcc=${CXX_GCC:-g++}
cxx_clang=${CXX_CLANG:-clang++}
src=tests/compile
# The all.c builds at -O2, the optimisation users build with (some warnings, -Wmaybe-uninitialized
# say, only appear optimised), for C++17 (g++, clang++; with and without the AMX emulator); c99, c11
# and c++11, and the linkage cases (two translation units, AMXK_STATIC, emit-once), at -O0: they check
# what the standard accepts, declarations, symbols and emit-once, which do not depend on the
# optimisation level, in a fifth of the compile time. The optimised C99 builds are the unit tests':
# `make test` compiles every header's implementation with gcc -std=c99 -O2 -Wall -Wextra -Wpedantic
# -Werror, native and with the AMX emulator (tests/amxk_impl.c), and `make clang` the same with clang
# (each -O2 all.c build here took 2-3 minutes of one core on AMD Zen 3).
warn="-Wall -Wextra -Wpedantic -Werror -pthread -I. -I$src"
flags="-O2 $warn"
lflags="-O0 $warn"
if [ -f amxk_pack.h ]; then
    flags="$flags -DAMXK_TEST_HAVE_PACK"
    lflags="$lflags -DAMXK_TEST_HAVE_PACK"
else
    echo "note: amxk_pack.h not present; the compile tests cover amxk.h, amxk_moe.h and amxk_gdn.h"
fi
mkdir -p "$out"
rm -f "$out"/*.status "$out"/*.log

names=()
cmds=()
skipped=()
have() { command -v "$1" >/dev/null 2>&1; }
add() { # add NAME COMMAND...
    local name=$1
    shift
    names+=("$name")
    cmds+=("$*")
}
lang() { # the -std/-x flags for a standard name
    case $1 in
    c*+*) echo "-x c++ -std=$1" ;;
    *) echo "-x c -std=$1" ;;
    esac
}
compiler_for() { # gcc|clang, c99|c11|c++11|c++17 -> compiler command
    case $1:$2 in
    gcc:c*+*) echo "$cxx_gcc" ;;
    gcc:*) echo "$cc_gcc" ;;
    clang:c*+*) echo "$cxx_clang" ;;
    clang:*) echo "$cc_clang" ;;
    esac
}

# 1. all.c: every header, implementation in one file; 2 compilers x 4 standards, and with the AMX
#    emulator (AMXK_AMX_EMULATE) at the oldest and newest standard of each language (c99, c++17).
for fam in gcc clang; do
    for std in c99 c11 c++11 c++17; do
        cc=$(compiler_for $fam "$std")
        if ! have "$cc"; then
            skipped+=("all $cc -std=$std (no $cc)")
            continue
        fi
        emus=("")
        case $std in c99 | c++17) emus+=(-DAMXK_AMX_EMULATE) ;; esac
        for emu in "${emus[@]}"; do
            n="all_${fam}_${std}${emu:+_emu}"
            n=${n//+/p}
            case $std in c++17) f=$flags ;; *) f=$lflags ;; esac
            add "$n" "$cc $(lang "$std") $f $emu $src/all.c -x none -o $out/$n -lm && $out/$n"
        done
    done
done

# 2. Two translation units: declarations in one, implementation in the other, linked and run.
#    Also C++ calling a C implementation and C calling a C++ one (checks the extern "C" blocks).
two_tu() { # two_tu NAME MAIN_CC MAIN_STD IMPL_CC IMPL_STD LINKER EXTRA
    local n=$1 mcc=$2 mstd=$3 icc=$4 istd=$5 ld=$6 extra=${7:-}
    if ! have "$mcc" || ! have "$icc" || ! have "$ld"; then
        skipped+=("$n (compiler missing)")
        return
    fi
    add "$n" "$mcc $(lang "$mstd") $lflags $extra -c $src/two_tu_main.c -o $out/$n.main.o &&
              $icc $(lang "$istd") $lflags $extra -c $src/two_tu_impl.c -o $out/$n.impl.o &&
              $ld -pthread $out/$n.main.o $out/$n.impl.o -o $out/$n -lm && $out/$n"
}
two_tu two_tu_gcc_c99 "$cc_gcc" c99 "$cc_gcc" c99 "$cc_gcc"
two_tu two_tu_gcc_c99_emu "$cc_gcc" c99 "$cc_gcc" c99 "$cc_gcc" -DAMXK_AMX_EMULATE
two_tu two_tu_clang_c11 "$cc_clang" c11 "$cc_clang" c11 "$cc_clang"
two_tu two_tu_cxxmain_cimpl "$cxx_gcc" c++11 "$cc_gcc" c99 "$cxx_gcc"
two_tu two_tu_cmain_cxximpl "$cc_gcc" c99 "$cxx_clang" c++17 "$cxx_gcc" -DAMXK_AMX_EMULATE

# 3. AMXK_STATIC: two private copies linked together; no amxk_ symbol may be exported.
static_case() { # static_case NAME CC STD EXTRA
    local n=$1 cc=$2 std=$3 extra=${4:-}
    if ! have "$cc"; then
        skipped+=("$n (no $cc)")
        return
    fi
    add "$n" "$cc $(lang "$std") $lflags $extra -c $src/static_a.c -o $out/$n.a.o &&
              $cc $(lang "$std") $lflags $extra -c $src/static_b.c -o $out/$n.b.o &&
              $cc -pthread $out/$n.a.o $out/$n.b.o -o $out/$n -lm && $out/$n &&
              if nm -g --defined-only $out/$n.a.o $out/$n.b.o | grep -E ' (amxk_|AMXK_)'; then
                  echo 'exported amxk symbols in AMXK_STATIC objects (listed above)'; false; fi"
}
static_case static_gcc_c99 "$cc_gcc" c99
static_case static_gcc_c99_emu "$cc_gcc" c99 -DAMXK_AMX_EMULATE
static_case static_clang_c11_emu "$cc_clang" c11 -DAMXK_AMX_EMULATE
static_case static_gxx_cxx11 "$cxx_gcc" c++11

# 4. Emit-once: headers in different orders, amxk.h twice, AMXK_IMPLEMENTATION throughout.
for t in once_1 once_2 once_3; do
    for fam_std in gcc:c99 clang:c11 gcc:c++17; do
        fam=${fam_std%%:*}
        std=${fam_std#*:}
        cc=$(compiler_for "$fam" "$std")
        n="${t}_${fam}_${std//+/p}"
        if ! have "$cc"; then
            skipped+=("$n (no $cc)")
            continue
        fi
        add "$n" "$cc $(lang "$std") $lflags -DAMXK_AMX_EMULATE $src/$t.c -x none -o $out/$n -lm && $out/$n"
    done
done
modules="amxk_moe.h amxk_gdn.h"
[ -f amxk_pack.h ] && modules="amxk_pack.h $modules"
for m in $modules; do
    n="once_4_${m%.h}"
    add "$n" "$cc_gcc -std=c99 $lflags -DONCE_MODULE='\"$m\"' $src/once_4.c -o $out/$n -lm && $out/$n"
done

# Run the cases, $jobs at a time; each writes NAME.log and NAME.status.
for i in "${!names[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    (
        n=${names[$i]} t0=$(date +%s)
        { echo "+ ${cmds[$i]}"; bash -c "set -e; ${cmds[$i]}"; } >"$out/$n.log" 2>&1
        echo "$? $(($(date +%s) - t0))" >"$out/$n.status"
    ) &
done
wait

pass=0
fail=0
for n in "${names[@]}"; do
    read -r st secs 2>/dev/null <"$out/$n.status" || st=1 secs=?
    if [ "$st" = 0 ]; then
        pass=$((pass + 1))
        printf 'ok    %-28s %4ss\n' "$n" "$secs"
    else
        fail=$((fail + 1))
        printf 'FAIL  %-28s %4ss\n' "$n" "$secs"
        sed 's/^/      | /' "$out/$n.log" | head -n 60
    fi
done
for s in "${skipped[@]+"${skipped[@]}"}"; do printf 'skip  %s\n' "$s"; done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
