#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test through ctest.
# Extra arguments go to ctest (for example: scripts/test.sh -R parity).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/format.sh --check
scripts/build.sh --progress
# The build for one process without MPI, which two tests compare with this one: a build,
# so built here with the other; the tests rebuild it only if a source changed since.
scripts/build.sh --progress --single-process
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
cd build
# Two at a time: the multi-rank and script tests claim both cores (PROCESSORS 2, so they run
# alone), the unit tests and single-process scripts pair up. CTEST_JOBS=1 runs one by one.
ctest --output-on-failure -j"${CTEST_JOBS:-2}" "$@"
