#!/usr/bin/env bash
# Configures (once) and builds trident and its tests into build/.
#   scripts/build.sh [cmake --build args]        the CPU build (Debian's libtorch)
#   scripts/build.sh --cuda [cmake --build args] a GPU build into build-cuda/, against the
#       libtorch of the installed PyTorch (torch.utils.cmake_prefix_path) and the NCCL of
#       its nvidia wheels or of the CUDA toolkit; see docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
if [ "${1:-}" = "--cuda" ]; then
  shift
  prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
    echo "build.sh --cuda: no PyTorch for python3 (its libtorch is the CUDA one built against)" >&2
    exit 2
  }
  nccl_home=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' \
    2>/dev/null || true)
  if [ ! -f build-cuda/CMakeCache.txt ]; then
    cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      -DTRIDENT_CUDA=ON ${nccl_home:+-DNCCL_INCLUDE_DIR="$nccl_home/include"} \
      ${nccl_home:+-DNCCL_LIBRARY="$(ls "$nccl_home"/lib/libnccl.so* | head -1)"} >/dev/null
  fi
  cmake --build build-cuda -j"$jobs" "$@"
  exit 0
fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j"$jobs" "$@"
