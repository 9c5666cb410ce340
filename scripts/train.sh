#!/usr/bin/env bash
# Sets up, builds, and trains: `scripts/train.sh [CONFIG.toml] [--set section.key=value ...]`.
# Without a config it trains configs/default.toml (dp2 x pp2 x tp2 on 8 ranks). NP sets the
# rank count (default: dp*pp*tp of the config, as `trident check` resolves it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --progress --target trident

config=configs/default.toml
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then config=$1; shift; fi

if [ -z "${NP:-}" ]; then
  NP=$(build/trident check "$config" "$@" | sed -n 's/^# layout: \([0-9]*\) ranks.*/\1/p')
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
exec mpirun -np "$NP" --oversubscribe --bind-to none build/trident train "$config" "$@"
