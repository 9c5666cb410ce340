#!/usr/bin/env bash
# Runs every libFuzzer harness of fuzz/ for a fixed time: `scripts/fuzz.sh [SECONDS]`
# (default 60 each). Builds them with clang-14, ASan and UBSan into build-fuzz/ (Debian:
# clang-14, libclang-rt-14-dev). Prints each harness's executions and findings; a finding
# is saved as build-fuzz/findings/<harness>/crash-* and the script exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
for pkg in clang-14 libclang-rt-14-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$pkg"; }
done
mkdir -p build-fuzz
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRIDENT_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  >build-fuzz/build.log 2>&1 || { cat build-fuzz/build.log; exit 1; }
harnesses=(fuzz_config fuzz_token_file fuzz_safetensors fuzz_checkpoint_index fuzz_hf)
cmake --build build-fuzz --target "${harnesses[@]}" -j2 >>build-fuzz/build.log 2>&1 ||
  { tail -30 build-fuzz/build.log; exit 1; }
status=0
for h in "${harnesses[@]}"; do
  corpus=build-fuzz/corpus/$h findings=build-fuzz/findings/$h
  mkdir -p "$corpus" "$findings"
  seeds=()
  [ -d "fuzz/seeds/$h" ] && seeds=("fuzz/seeds/$h")
  log=build-fuzz/$h.log
  if build-fuzz/fuzz/$h -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$findings/" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    found=0
  else
    found=1 status=1
  fi
  execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  echo "$h: ${execs:-?} executions in ${seconds} s, $( [ $found = 0 ] && echo "no findings" || echo "FINDING: $(ls "$findings")")"
done
exit $status
