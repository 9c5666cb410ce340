#!/usr/bin/env bash
# Prepares the real-text recipe's two corpora (configs/text-mix.toml), both from Debian
# packages: the fortune cookies of `fortunes` (quotes, jokes, short verse; 2.6 MB) and the
# Debian Reference of `debian-reference-en` (a system administration guide; 0.9 MB). One
# token per byte. Writes data/text-mix/{fortunes,reference}.bin (OUT=DIR changes the folder).
#   scripts/prepare-text-mix.sh && scripts/train.sh configs/text-mix.toml
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-data/text-mix}
scripts/setup.sh
[ -x build/trident ] || scripts/build.sh --progress --target trident
mkdir -p "$out"
# Every fortune file, not the .dat indexes or the .u8 links to the same files.
find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' | sort | xargs cat >"$out/fortunes.txt"
zcat /usr/share/debian-reference/debian-reference.en.txt.gz >"$out/reference.txt"
for corpus in fortunes reference; do
  "$root/build/trident" prepare-data --in "$out/$corpus.txt" --out "$out/$corpus.bin" \
    --tokenizer byte 2>/dev/null | head -1
done
