# Shared by the script tests that signal one rank of a running job (fault_injection.sh,
# offload_kill_resume.sh). Sourced.

rank_pid() {  # the pid of world rank $2 among the children of mpirun $1
  local p
  for p in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$p"; return
    fi
  done
}
wait_for_rank() {  # $1: mpirun's pid, $2: rank; prints the rank's pid once mpirun has
  # started it (empty if mpirun ends first). Looked up before the step a test signals at,
  # so that the signal can follow that step at once.
  local pid=
  while [ -z "$pid" ] && kill -0 "$1" 2>/dev/null; do
    pid=$(rank_pid "$1" "$2")
    [ -n "$pid" ] || sleep 0.05
  done
  echo "$pid"
}
