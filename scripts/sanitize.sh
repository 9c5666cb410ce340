#!/usr/bin/env bash
# Builds trident and its test executables with AddressSanitizer and UndefinedBehaviorSanitizer
# into build-sanitize/ (-O1 -g, asserts on) and runs the test suite there through ctest, the
# multi-rank tests under mpirun as usual. Extra arguments go to ctest:
#   scripts/sanitize.sh                  # everything
#   scripts/sanitize.sh -R parity_dp2    # a subset (ctest's -R/-E/-L)
#   scripts/sanitize.sh --build-only     # configure and build, run nothing
# On a 2-core machine shared with other builds the first build took 30 min (ccache makes
# later ones quick) and the suite 7 min (4 of them the single-process tests). Any report stops
# the process that made it (halt_on_error), so its test fails.
#
# libtorch and Open MPI are not instrumented; ASan still sees their heap through its malloc.
# Leak detection is on for the single-process test executables (they link all of trident's
# code, and libtorch leaks nothing there) and off, by scripts/sanitize-<binary>.opts (ASan's
# own format, no comments), for the two programs that run under mpirun: Open MPI unloads
# its PMIx plugins at MPI_Finalize, before LeakSanitizer runs at exit, so their by-design
# leaks have stacks without module names that no suppression can match.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-2}

scripts/setup.sh
# libasan and libubsan come with gcc (libgcc-12-dev depends on them), so setup.sh has them.
for lib in libasan.so libubsan.so; do
  [ -e "$(g++ -print-file-name=$lib)" ] || { echo "sanitize: $lib is missing (reinstall g++)" >&2; exit 1; }
done

build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi

# The options reach every rank: ctest passes its environment to mpirun, and Open MPI passes
# mpirun's environment to the ranks it starts on this machine. They are set before the build
# too, because gtest_discover_tests runs the sanitized test executables to list their tests.
# detect_odr_violation stays at its default: the suite runs clean with it.
export ASAN_OPTIONS="halt_on_error=1:print_stacktrace=1:detect_leaks=1:\
check_initialization_order=1:strict_init_order=1:\
include_if_exists=$root/scripts/sanitize-%b.opts"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
if [ ! -f build-sanitize/CMakeCache.txt ]; then
  # RelWithDebInfo with its flags replaced: -O1 keeps ASan's stacks readable and the tests
  # fast enough, and leaving out -DNDEBUG keeps the asserts on.
  cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
else
  cmake build-sanitize >/dev/null  # refreshes test_executables.txt after a change of tests
fi

# The programs the tests run, as tests/CMakeLists.txt lists them; the benchmarks are left out.
mapfile -t targets < <(grep -v '^$' build-sanitize/test_executables.txt)
targets=(trident "${targets[@]}")
cmake --build build-sanitize -j"$jobs" --target "${targets[@]}"
[ "$build_only" = 1 ] && exit 0

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
cd build-sanitize
# default_run goes through scripts/train.sh, which builds and runs build/trident (the
# release tree), not this one: left out unless ctest arguments say otherwise.
if [ $# -eq 0 ]; then set -- -E '^default_run_'; fi
ctest --output-on-failure -j"${CTEST_JOBS:-1}" "$@"
