#!/usr/bin/env bash
# Runs trident's benchmarks and prints each figure as a ratio measured in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --target trident >/dev/null
echo "== ZeRO stages at dp 2 (bench/zero_stages.sh)"
bench/zero_stages.sh "${1:-configs/tiny.toml}" "${2:-30}"
echo "== pipeline bubble at pp 4, m 8 (bench/pipeline_bubble.sh)"
bench/pipeline_bubble.sh
