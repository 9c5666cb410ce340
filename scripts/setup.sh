#!/usr/bin/env bash
# Installs from Debian's packages everything trident's build and tests need. Idempotent:
# quick when all is present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake ccache
  ninja-build             # the build tool: parallel, and its [n/N] lines feed the progress line
  libtorch-dev            # tensors, autograd (CPU build of libtorch 1.13)
  libopenblas0-openmp     # without it libtorch uses the reference BLAS, ~30x slower
  libopenmpi-dev openmpi-bin
  libtomlplusplus-dev libgtest-dev nlohmann-json3-dev
  python3 python3-matplotlib   # scripts/plot.py
  python3-numpy           # tests/reference/llama_forward.py, the independent Llama reference
  python3-torch           # tests/reference/gpt_train.py, the independent PyTorch training loop
  clang-format            # scripts/format.sh --check, run by scripts/test.sh
  liburing-dev            # the nvme offload tier's asynchronous I/O (io_uring)
  slurmctld slurmd slurm-client munge  # scripts/slurm.sh: a Slurm cluster of emulated nodes
  fortunes debian-reference-en  # real text for configs/text-mix.toml (scripts/prepare-text-mix.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${#missing[@]} Debian packages (${missing[*]}); on a fresh machine" \
  "this takes 1-2 minutes"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
# A line every 15 s while apt works quietly, so that a long install is not taken for a hang.
started=$SECONDS
(while sleep 15; do echo "setup: still installing, $((SECONDS - started)) s so far"; done) &
heartbeat=$!
# The packages must start no service (slurmctld, slurmd, munge): scripts/slurm.sh starts
# its own daemons with their own configuration. Debian asks policy-rc.d before starting one.
policy=/usr/sbin/policy-rc.d
cleanup() { kill "$heartbeat" 2>/dev/null; }
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod +x "$policy"
  cleanup() { kill "$heartbeat" 2>/dev/null; $SUDO rm -f "$policy"; }
fi
trap cleanup EXIT
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done in $((SECONDS - started)) s"
