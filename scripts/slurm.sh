#!/usr/bin/env bash
# A real Slurm cluster of emulated nodes on one machine: munge with its own key and socket,
# slurmctld, and one slurmd per node, each node its own network namespace (the plumbing of
# scripts/cluster.sh: scripts/emulated_nodes.sh), host name, /etc/hosts, /dev/shm and
# Slurm temp directory. Jobs run through Slurm's own srun and sbatch; Open MPI starts under
# srun --mpi=pmix. Needs root (namespaces) and Debian's slurmctld, slurmd, slurm-client and
# munge (scripts/setup.sh installs them, starting no service).
#
#   scripts/slurm.sh up --nodes N [--cpus C] [--name NAME] [--link-rate RATE]
#                        [--cred-expire S] [--grace S]
#   scripts/slurm.sh run [--name NAME] CMD [ARGS...]   # srun, sbatch, squeue, scontrol, ...
#   scripts/slurm.sh env [--name NAME]                 # the SLURM_CONF line to export
#   scripts/slurm.sh down [--name NAME]                # removes everything `up` made
#
# Nodes are node0..node{N-1} with C CPUs each (default 4) at 10.77.0.{1..N}; the controller
# runs beside node0's slurmd. Two partitions over all nodes: `low` (the default) whose jobs
# a job of `high` preempts by requeueing them after the grace time (--grace, default 30 s:
# the job's tasks get SIGTERM first), and `high`. A requeued job starts again once its
# credential expired (--cred-expire, default 10 s; Slurm's own default is 120 s). `run`
# executes a client command inside node0's namespace with SLURM_CONF set, so nothing looks
# the controller up through DNS. `down` kills every process in the nodes' namespaces and
# the daemons, and removes the namespaces, links, mounts and state; it is idempotent.
set -euo pipefail

cmd=${1:-}
[ -n "$cmd" ] && shift
name=trslurm nodes=0 cpus=4 rate="" cred_expire=10 grace=30
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --link-rate) rate=$2; shift 2 ;;
    --cred-expire) cred_expire=$2; shift 2 ;;
    --grace) grace=$2; shift 2 ;;
    *) break ;;
  esac
done
state=/tmp/$name-slurm
conf=$state/slurm.conf
source "$(dirname "$0")/emulated_nodes.sh"

die() { echo "slurm.sh: $*" >&2; exit 2; }
fail_up() { echo "slurm.sh: $*" >&2; down; exit 2; }

# Runs "$@" in node I's namespaces: its network, its host name, and a mount namespace of
# its own with the cluster's /etc/hosts, a private /dev/shm and the node's Slurm temp
# directory. (`ip netns exec` would remount /sys and hide the cgroup filesystem slurmd
# reads, so the network namespace is entered with nsenter.)
on_node() {
  local i=$1
  shift
  nsenter --net="/run/netns/$(emulated_node_ns "$name" "$i")" unshare --uts --mount \
    /bin/sh -c 'state=$1 && shift && hostname "$0" && mount --bind "$state/hosts" /etc/hosts &&
      mount -t tmpfs -o size=256m tmpfs /dev/shm &&
      mkdir -p "$state/$0/tmp" && mount --bind "$state/$0/tmp" "$state/tmpfs" &&
      exec env SLURM_CONF="$state/slurm.conf" "$@"' "node$i" "$state" "$@"
}

write_config() {
  local i
  {
    echo "127.0.0.1 localhost"
    for ((i = 0; i < nodes; i++)); do echo "10.77.0.$((i + 1)) node$i"; done
  } >"$state/hosts"
  cat >"$conf" <<CONF
# Written by scripts/slurm.sh for the emulated cluster '$name'.
ClusterName=$name
SlurmctldHost=node0(10.77.0.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge.socket,cred_expire=$cred_expire
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/%n/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/%n/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/%n/slurmd.log
TmpFS=$state/tmpfs
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
# Emulated nodes share the machine's cores: each declares its own CPU count.
SlurmdParameters=config_overrides
JobRequeue=1
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=20
KillWait=5
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
# A requeued job waits for its begin time, which no event announces: the schedulers look
# every second (Slurm's defaults, 60 s and 30 s, would idle a test for half a minute).
SchedulerParameters=sched_interval=1,bf_interval=1
CONF
  for ((i = 0; i < nodes; i++)); do
    echo "NodeName=node$i NodeAddr=10.77.0.$((i + 1)) CPUs=$cpus State=UNKNOWN" >>"$conf"
  done
  cat >>"$conf" <<CONF
PartitionName=low Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=$grace
PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
CONF
  # Slurm's default PMIx fence crashed about 4% of launches inside MPI_Init here; the ring
  # fence none in 180.
  echo "PMIxCollFence=ring" >"$state/mpi.conf"
}

wait_idle() {
  local tries=0 states
  while :; do
    states=$(on_node 0 sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$states" = "idle " ] && return 0
    tries=$((tries + 1))
    if [ $tries -ge 100 ]; then
      grep -h error "$state"/slurmctld.log "$state"/node*/slurmd.log 2>/dev/null | tail -5 >&2
      fail_up "the nodes did not come up (sinfo: ${states:-nothing})"
    fi
    sleep 0.2
  done
}

up() {
  [ "$nodes" -ge 1 ] 2>/dev/null || die "up needs --nodes N (N >= 1)"
  [ ${#name} -le 10 ] || die "--name is at most 10 characters (link names are short)"
  [ ! -d "$state" ] || die "a Slurm cluster '$name' is up already (scripts/slurm.sh down --name $name)"
  local tool
  for tool in slurmctld slurmd srun sbatch munged nsenter; do
    command -v "$tool" >/dev/null ||
      die "$tool is missing: scripts/setup.sh (apt-get install slurmctld slurmd slurm-client munge)"
  done
  trap 'down' ERR
  mkdir -p "$state/ctld" "$state/tmpfs"
  emulated_nodes_up "$name" "$nodes" "$rate"
  write_config
  dd if=/dev/urandom of="$state/munge.key" bs=1024 count=1 status=none
  chmod 400 "$state/munge.key"
  munged --force --key-file="$state/munge.key" --socket="$state/munge.socket" \
    --pid-file="$state/munged.pid" --log-file="$state/munged.log" --seed-file="$state/munged.seed"
  on_node 0 slurmctld -c -f "$conf"
  local i
  for ((i = 0; i < nodes; i++)); do
    mkdir -p "$state/node$i/spool"
    on_node "$i" slurmd -f "$conf" -N "node$i"
  done
  wait_idle
  trap - ERR
  echo "slurm '$name': $nodes nodes x $cpus CPUs, link ${rate:-unshaped}; export SLURM_CONF=$conf"
}

run() {
  [ -f "$conf" ] || die "no Slurm cluster '$name' is up (scripts/slurm.sh up --nodes N)"
  [ $# -gt 0 ] || die "run needs a command (srun, sbatch, squeue, ...)"
  on_node 0 "$@"
}

kill_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
}

down() {
  local ns pid f tries
  # Every process inside a node: the daemons, slurmstepd, the jobs' tasks.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$name-node" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
  done
  kill_pidfile "$state/munged.pid"
  for tries in $(seq 50); do
    local left=0
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$name-node" || true); do
      [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && left=1
    done
    [ -f "$state/munged.pid" ] && kill -0 "$(cat "$state/munged.pid")" 2>/dev/null && left=1
    [ $left = 0 ] && break
    sleep 0.1
  done
  local killed=""
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$name-node" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null && killed="$killed $pid"
    done
  done
  if [ -f "$state/munged.pid" ]; then
    kill -KILL "$(cat "$state/munged.pid")" 2>/dev/null && killed="$killed $(cat "$state/munged.pid")"
  fi
  # SIGKILL is delivered, not awaited: on a loaded machine a task was still running when
  # `down` returned. Return once each has exited (a zombie has; its parent reaps it).
  for tries in $(seq 100); do
    local running=0
    for pid in $killed; do
      local st
      st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
      [ -n "$st" ] && [ "$st" != Z ] && running=1
    done
    [ $running = 0 ] && break
    sleep 0.05
  done
  emulated_nodes_down "$name"
  rm -rf "$state"
}

case "$cmd" in
  up) up ;;
  run) run "$@" ;;
  env) echo "SLURM_CONF=$conf" ;;
  down) down ;;
  *) die "usage: scripts/slurm.sh up|run|env|down [options] (see the header of this file)" ;;
esac
