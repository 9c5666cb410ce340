#!/usr/bin/env bash
# Turns a build's output (ninja's "[n/N] ..." or make's "[ nn%] ...") into one progress line
# every few seconds: files done of total, elapsed time and an estimate of what is left, and
# a line at least every 20 s while one long step (a heavy file, a link) runs. The build's
# full output goes to the log file given as $1; its last lines are shown if it fails.
#   cmake --build build | scripts/build_progress.sh build/build.log "trident"
set -uo pipefail
log=$1 what=${2:-build}
: >"$log"
start=$SECONDS done=0 total=0 last_print=-100

clock() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
report() {
  local elapsed=$((SECONDS - start)) line
  line="build ($what): $done/$total steps, $(clock $elapsed) elapsed"
  if [ "$done" -gt 0 ] && [ "$total" -gt 0 ] && [ "$done" -lt "$total" ]; then
    # Steps so far took elapsed/done each; the rest is assumed to take as long.
    line+=", about $(clock $((elapsed * (total - done) / done))) left"
  fi
  echo "$line"
  last_print=$SECONDS
}

while :; do
  if IFS= read -r -t 20 text; then
    printf '%s\n' "$text" >>"$log"
    if [[ $text =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      done=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    elif [[ $text =~ ^\[\ *([0-9]+)%\] ]]; then
      done=${BASH_REMATCH[1]} total=100
    fi
    [ $((SECONDS - last_print)) -ge 10 ] && report
  else
    [ $? -gt 128 ] || break  # end of the build's output (a timeout returns > 128)
    report                   # a long step: still alive
  fi
done
[ "$total" -gt 0 ] && report
exit 0
