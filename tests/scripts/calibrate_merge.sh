#!/usr/bin/env bash
# `trident calibrate --merge`: three calibrations of one cluster (written by hand, as
# calibrate writes them) merge into the median of each figure, tables key by key, and the
# smallest process base (a later round measures it in a process the earlier rounds grew);
# files of different machines are refused with one message; nothing is measured.
set -u
trident=$1 root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
key() { sed -n "s/^$1 = //p" "$2" | head -1; }
# FILE SYNC_US LAYER_US CONTENTION_AT_4 INTER_64KIB_US INTER_ONE_WAY_64KIB_US SYNC_FRACTION
# PROCESS_BASE_GB
write() {
  cat > "$1" <<TOML
name = "emulated-n2"
devices_per_node = 2
machine_cores = 2
collectives = "mpi"
memory_per_device_gb = 6
sync_us = $2
sync_fraction = $7
layer_overhead_us = $3
process_base_gb = $8
[peak_tflops]
fp32 = 0.09
[matmul_tflops.fp32]
"256" = 0.09
[contention]
"2" = 1
"4" = $4
[inter_sendrecv_us]
"65536" = $5
[inter_send_us]
"65536" = $6
TOML
}
write "$tmp/a.toml" 500 300 1.10 1400 900 0.125 0.406
write "$tmp/b.toml" 900 250 1.02 2000 700 0.05 0.182
write "$tmp/c.toml" 600 420 1.30 1500 800 0.25 0.3
"$trident" calibrate --merge "$tmp/a.toml" "$tmp/b.toml" "$tmp/c.toml" --out "$tmp/m.toml" \
  > "$tmp/log" 2>&1 || fail "merge failed: $(cat "$tmp/log")"
[ "$(key sync_us "$tmp/m.toml")" = 600 ] || fail "sync_us is not the median 600: $(key sync_us "$tmp/m.toml")"
[ "$(key sync_fraction "$tmp/m.toml")" = 0.125 ] || fail "sync_fraction is not the median 0.125"
[ "$(key layer_overhead_us "$tmp/m.toml")" = 300 ] || fail "layer_overhead_us is not 300"
[ "$(key process_base_gb "$tmp/m.toml")" = 0.182 ] ||
  fail "process_base_gb is not the smallest, 0.182: $(key process_base_gb "$tmp/m.toml")"
write "$tmp/d.toml" 600 420 1.30 1500 800 0.25 0  # a file without a measured process base
"$trident" calibrate --merge "$tmp/b.toml" "$tmp/d.toml" --out "$tmp/m0.toml" > "$tmp/log" 2>&1 ||
  fail "merge with an unmeasured base failed: $(cat "$tmp/log")"
[ "$(key process_base_gb "$tmp/m0.toml")" = 0.182 ] ||
  fail "an unmeasured process base (0) was taken as the smallest: $(key process_base_gb "$tmp/m0.toml")"
[ "$(key '"4"' "$tmp/m.toml")" = 1.1 ] || fail "contention at 4 is not 1.1: $(key '"4"' "$tmp/m.toml")"
table_us() { sed -n "/^\[$1\]/,/^\[/s/^\"65536\" = //p" "$tmp/m.toml"; }
[ "$(table_us inter_sendrecv_us)" = 1500 ] || fail "the 64 KiB exchange is not 1500 us"
[ "$(table_us inter_send_us)" = 800 ] || fail "the 64 KiB message one way is not 800 us"
[ "$(key name "$tmp/m.toml")" = '"emulated-n2"' ] || fail "the name is not kept"
"$trident" plan "$root/configs/tiny.toml" --cluster "$tmp/m.toml" --layout 1,1,2 \
  > "$tmp/plan" 2>&1 || fail "trident plan cannot read the merged file: $(cat "$tmp/plan")"
sed -i 's/^devices_per_node = 2/devices_per_node = 4/' "$tmp/c.toml"
"$trident" calibrate --merge "$tmp/a.toml" "$tmp/c.toml" --out "$tmp/bad.toml" > "$tmp/log" 2>&1 &&
  fail "files of different machines were merged"
grep -q "different machines" "$tmp/log" || fail "no message naming the mismatch: $(cat "$tmp/log")"
[ ! -e "$tmp/bad.toml" ] || fail "a file was written for a refused merge"
echo PASS
