#!/usr/bin/env bash
# Configures (once) and builds trident.
#   scripts/build.sh [--progress] [cmake --build args]   the CPU build with MPI and the
#       tests, into build/ (Debian's libtorch); --progress: a progress line every few
#       seconds instead of the compiler's lines (kept in build/build.log)
#   scripts/build.sh --single-process [args]  the same sources without MPI (one process, no
#       tests), into build/single-process/, against the libtorch of TORCH_PACKAGE (a torch
#       package folder; default: Debian's libtorch seen as one), as a GPU node without MPI
#       builds it
#   scripts/build.sh --cuda [args]            the GPU build of trident into build-cuda/,
#       against the libtorch of python3's PyTorch, the CUDA runtime and NCCL of its nvidia
#       wheels (or /usr/local/cuda), with MPI where one is found; docs/gpu.md
# A folder gpu-bundle/ made by scripts/gpu-bundle.sh (CUDA and header-only library headers
# from a build machine) fills in what such a node lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

mode=cpu progress=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) mode=cuda; shift ;;
    --single-process) mode=single; shift ;;
    --progress) progress=1; shift ;;
    *) break ;;
  esac
done

# build DIR [cmake --build args]: the build itself; with --progress its output goes to
# DIR/build.log and one progress line every few seconds is printed instead, and the log's
# end if the build fails.
build() {
  local dir=$1; shift
  if [ $progress = 0 ]; then
    cmake --build "$dir" -j"$jobs" "$@"
    return
  fi
  local status
  cmake --build "$dir" -j"$jobs" "$@" 2>&1 | scripts/build_progress.sh "$dir/build.log" "$dir"
  status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    echo "build.sh: the build failed; the end of $dir/build.log:" >&2
    grep -E "error|Error" "$dir/build.log" | head -20 >&2
    tail -30 "$dir/build.log" >&2
  fi
  return "$status"
}

extra_include=()
[ -d gpu-bundle/include ] && extra_include=(-DTRIDENT_EXTRA_INCLUDE="$PWD/gpu-bundle/include")

if [ "$mode" = single ]; then
  dir=build/single-process
  package=${TORCH_PACKAGE:-}
  if [ -z "$package" ]; then
    # Debian's libtorch, laid out as a torch package folder (include/, lib/), so that this
    # build takes the path a PyTorch wheel takes.
    package=$dir/debian-torch
    mkdir -p "$package/lib"
    ln -sfn /usr/include "$package/include"
    for lib in torch torch_cpu c10; do
      ln -sf "/usr/lib/x86_64-linux-gnu/lib$lib.so" "$package/lib/lib$lib.so"
    done
    package=$PWD/$package
  fi
  if [ ! -f $dir/CMakeCache.txt ]; then
    cmake -S . -B $dir "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_MPI=OFF \
      -DTRIDENT_TORCH_PACKAGE="$package" "${extra_include[@]}" >/dev/null
  fi
  build $dir --target trident "$@"
  exit 0
fi

if [ "$mode" = cuda ]; then
  py=${PYTHON:-python3}
  read -r torch_dir abi site < <("$py" -c '
import os, torch
d = os.path.dirname(torch.__file__)
print(d, int(torch.compiled_with_cxx11_abi()), os.path.dirname(d))') || {
    echo "build.sh --cuda: no PyTorch for $py (its libtorch is the one trident builds against)" >&2
    exit 2
  }
  # The CUDA runtime: a toolkit if the node has one, else the wheel's headers and library
  # (with the bundle's headers for what the wheel leaves out: crt/, nv/), in one folder.
  cuda_root=/usr/local/cuda
  if [ ! -f $cuda_root/include/cuda_runtime_api.h ]; then
    cuda_root=$PWD/build-cuda/cuda-root
    wheel=$(ls -d "$site"/nvidia/cu1[0-9] 2>/dev/null | tail -1 || true)
    wheel=${wheel:-$site/nvidia/cuda_runtime}
    rm -rf "$cuda_root" && mkdir -p "$cuda_root/include" "$cuda_root/lib"
    for from in gpu-bundle/include/cuda "$wheel/include"; do
      [ -d "$from" ] && cp -rsf "$(cd "$from" && pwd)"/. "$cuda_root/include/"
    done
    cudart=$(ls "$wheel"/lib/libcudart.so* 2>/dev/null | head -1 || true)
    [ -n "$cudart" ] || { echo "build.sh --cuda: no libcudart in $wheel/lib" >&2; exit 2; }
    # The linker takes the unversioned name; the program then asks for the versioned one
    # (its soname), which must be found next to it at start-up.
    ln -sf "$cudart" "$cuda_root/lib/libcudart.so"
    ln -sf "$cudart" "$cuda_root/lib/$(basename "$cudart")"
  fi
  nccl=()
  if [ -f "$site/nvidia/nccl/include/nccl.h" ]; then
    nccl_lib=$(ls "$site"/nvidia/nccl/lib/libnccl.so* 2>/dev/null | head -1 || true)
    nccl=(-DNCCL_INCLUDE_DIR="$site/nvidia/nccl/include" -DNCCL_LIBRARY="$nccl_lib")
  fi
  if [ ! -f build-cuda/CMakeCache.txt ]; then
    cmake -S . -B build-cuda "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DTRIDENT_TORCH_PACKAGE="$torch_dir" -DTRIDENT_TORCH_CXX11_ABI="$abi" \
      -DTRIDENT_CUDA=ON -DCUDAToolkit_ROOT="$cuda_root" -DTRIDENT_TESTS=OFF \
      "${nccl[@]}" "${extra_include[@]}"
  fi
  build build-cuda --target trident "$@"
  exit 0
fi

if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
build build "$@"
