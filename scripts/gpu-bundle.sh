#!/usr/bin/env bash
# Prepares gpu-bundle/ on a build machine for a GPU node that has PyTorch's wheels but not
# the rest of what trident's build reads: the CUDA runtime headers the wheels leave out
# (crt/, nv/; from /usr/local/cuda, without the 17 MB of CCCL that trident does not use),
# and the header-only toml++ and nlohmann/json. scripts/build.sh --cuda and
# --single-process pick the folder up; it is about 13 MB, to be carried to the node
# beside the checkout (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=${CUDA_HOME:-/usr/local/cuda}
for need in "$cuda/include/cuda_runtime_api.h" /usr/include/toml++/toml.h \
  /usr/include/nlohmann/json.hpp; do
  [ -f "$need" ] || { echo "gpu-bundle.sh: $need is missing (scripts/setup.sh installs it)" >&2; exit 2; }
done
rm -rf gpu-bundle.tmp && mkdir -p gpu-bundle.tmp/include/cuda
(cd "$cuda/include" && tar -cf - --exclude=./cccl .) | tar -xf - -C gpu-bundle.tmp/include/cuda
cp -r /usr/include/toml++ /usr/include/nlohmann gpu-bundle.tmp/include/
rm -rf gpu-bundle && mv gpu-bundle.tmp gpu-bundle
du -sh gpu-bundle | sed 's/^/gpu-bundle.sh: /'
