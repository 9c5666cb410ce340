#!/usr/bin/env bash
# Scaling experiments: trains CONFIG at each rank count and layout under mpirun, asks
# `trident plan` for the same layout's prediction, collects everything into one CSV and
# draws the plots (scripts/plot_scaling.py). See docs/scaling.md.
#
#   scripts/scale.sh CONFIG --ranks 1,2,4,8 [--layouts "dp,pp,tp[,zero[,micro[,ckpt]]];..."]
#                    [--strong] [--steps N] [--out DIR] [--cluster FILE|NAME] [--calibrate]
#                    [--mpirun-args "..."] [--wait-load L] [--repeat K] [--set section.key=value ...]
#   scripts/scale.sh CONFIG --nodes 1,2,4 --ranks-per-node R [--link-rate RATE] [--link-burst SIZE]
#                    [--tp-across] [same options]          (an entry NxS: N nodes of S ranks)
#   scripts/scale.sh CONFIG --slurm --nodes 1,2,4 --ranks-per-node R [--tp-across] [same options]
#   scripts/scale.sh --replan DIR     # predictions again, same runs and cluster files
#
# --nodes runs on emulated nodes (scripts/cluster.sh, as root): for each node count N a
# cluster of N nodes x R ranks (or S ranks, for an entry written NxS) comes up (links shaped to RATE, tc's notation, e.g. 1gbit,
# with a token bucket of SIZE, default 16kb: scripts/cluster.sh),
# the layouts of N*R ranks run across it (ranks on one node over shared memory, between
# nodes over TCP), and it goes down again, also when a run fails. --tp-across also runs
# every layout with tp > 1 on more than one node with the ranks dealt round robin over
# the nodes (mpirun --map-by node), so that its tp groups cross nodes, and predicts it with
# the same placement. --calibrate then calibrates each cluster with its N*R ranks.
#
# --slurm submits one sbatch job per node count (and round) to the Slurm cluster that
# SLURM_CONF names, instead of emulating nodes: each job (--nodes N --exclusive) runs this
# script inside its allocation, every layout of N*R ranks started by `srun --mpi=pmix`
# (--distribution=cyclic for --tp-across), calibrating there with --calibrate. The jobs of
# a round are submitted together and waited for; predictions and plots come after the
# last. SLURM_CLIENT prefixes the Slurm commands, e.g. "scripts/slurm.sh run --name NAME"
# for a cluster of emulated nodes (docs/slurm.md). Slurm must see this directory.
#
# A layout's dp may be '*': dp = ranks / (pp * tp). A layout with a fixed dp runs only at the
# rank count it multiplies to. Default layouts: '*,1,1' (pure dp). zero, micro and ckpt
# default to the config's. Weak scaling (default) keeps the micro-batch size and the
# micro-batches per dp rank of the config, so the global batch grows with dp; --strong
# keeps the config's global batch. --calibrate first runs `trident calibrate` with one rank
# per core and predicts with that file (a node of `ranks` devices sharing the cores, which
# the planner time-shares when there are more ranks than cores). --wait-load L
# waits (up to 10 minutes) before each run for the 1-minute load average to fall below L,
# for machines shared with other work; runs.tsv records the load each run started at.
# --repeat K runs the whole experiment K times, round after round: each round calibrates
# (with --calibrate) and runs every layout once, so that a slow or fast spell of a machine
# shared with other work falls on calibrations and runs alike. Each layout is measured over
# the steps of all its runs (metrics.jsonl, then metrics.2.jsonl, ... in its folder), and
# predicted from the median of its cluster's calibrations (trident calibrate --merge); a
# calibration takes 3 rounds of its own when K < 3, one otherwise. Predictions are made
# after the last run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trident=${TRIDENT:-$root/build/trident}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 2; }  # the header
[ $# -ge 1 ] && [ "$1" != -h ] && [ "$1" != --help ] || usage
python_for_plots() {
  # Debian's python3-matplotlib lives with /usr/bin/python3; prefer an interpreter with it.
  local candidate
  for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
    "$candidate" -c 'import matplotlib' 2>/dev/null && { echo "$candidate"; return; }
  done
  echo python3
}
if [ "$1" = --replan ]; then
  # The measured runs stay; each prediction is made again from its saved arguments (for
  # a planner changed since, or cluster files edited), then the table and plots.
  dir=${2:?--replan needs the output directory of an earlier run}
  for args in "$dir"/runs/*/plan.args; do
    eval "set -- $(cat "$args")"
    "$trident" plan "$@" > "$(dirname "$args")/plan.json" 2> "$(dirname "$args")/plan.err" ||
      echo "replan failed: $(dirname "$args")"
  done
  exec "$(python_for_plots)" "$root/scripts/plot_scaling.py" "$dir"
fi
args=("$@")
config=$1; shift
ranks_list="1,2,4,8" layouts="*,1,1" strong=0 steps=6 out="" cluster="h100" calibrate=0 wait_load=""
nodes_list="" per_node="" link_rate="" link_burst="" tp_across=0 repeat=1 slurm=0
# Inside a --slurm job: "ROUND RANKS NODES SLOTS", the one node count it runs.
job_spec=${TRIDENT_SCALE_JOB:-}
mpirun_args=${MPIRUN_ARGS:---oversubscribe --bind-to none}
sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) ranks_list=$2; shift 2 ;;
    --nodes) nodes_list=$2; shift 2 ;;
    --ranks-per-node) per_node=$2; shift 2 ;;
    --link-rate) link_rate=$2; shift 2 ;;
    --link-burst) link_burst=$2; shift 2 ;;
    --tp-across) tp_across=1; shift ;;
    --slurm) slurm=1; shift ;;
    --layouts) layouts=$2; shift 2 ;;
    --strong) strong=1; shift ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cluster) cluster=$2; shift 2 ;;
    --calibrate) calibrate=1; shift ;;
    --mpirun-args) mpirun_args=$2; shift 2 ;;
    --wait-load) wait_load=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "scale.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -f "$config" ] || { echo "scale.sh: no config file '$config'" >&2; exit 2; }
[ "$repeat" -ge 1 ] 2>/dev/null || { echo "scale.sh: --repeat needs a count of at least 1" >&2; exit 2; }
[ -x "$trident" ] || { echo "scale.sh: $trident is not built (scripts/build.sh --target trident)" >&2; exit 2; }
if [ -n "$nodes_list" ]; then
  [ -n "$per_node" ] && [ "$per_node" -ge 1 ] 2>/dev/null ||
    { echo "scale.sh: --nodes needs --ranks-per-node R (R >= 1)" >&2; exit 2; }
  [ "$slurm" = 1 ] || [ "$(id -u)" = 0 ] ||
    { echo "scale.sh: --nodes makes network namespaces: run as root" >&2; exit 2; }
fi
[ "$slurm" = 0 ] || [ -n "$nodes_list" ] ||
  { echo "scale.sh: --slurm needs --nodes N,... and --ranks-per-node R" >&2; exit 2; }
out=${out:-scaling-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/runs"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMP_NUM_THREADS=1

# The config's own micro-batch size, global batch, ZeRO stage and checkpointing.
resolved=$("$trident" check "$config" "${sets[@]}" --world 0 2>/dev/null || "$trident" check "$config" "${sets[@]}")
value() { echo "$resolved" | sed -n "/^\[$1\]/,/^\[/s/^$2 = \(.*\)/\1/p" | head -1 | tr -d '"'; }
base_micro=$(value train micro_batch_size)
base_global=$(value train global_batch_size)
base_zero=$(value parallel zero_stage)
base_ckpt=$(value parallel activation_checkpointing)
per_dp=$((base_global / base_micro))  # micro-batches per dp rank at dp = 1 (weak scaling)

load() { cut -d' ' -f1 /proc/loadavg; }
wait_for_quiet() {
  [ -n "$wait_load" ] || return 0
  for _ in $(seq 120); do
    awk -v l="$(load)" -v max="$wait_load" 'BEGIN { exit !(l < max) }' && return 0
    sleep 5
  done
  echo "   (load still $(load) after 10 minutes; running anyway)"
}

index=$out/runs.tsv
[ -n "$job_spec" ] ||
  printf 'ranks\tdp\tpp\ttp\tzero\tmicro\tckpt\tglobal\tlayout\tdir\tstatus\tload\tnodes\tplacement\tround\n' > "$index"
IFS=';' read -r -a layout_specs <<< "$layouts"
cluster_name=tscale
cluster_sh=$root/scripts/cluster.sh
# Each configuration: "ranks nodes" (nodes 0: this machine, no emulated cluster).
configs=()
if [ -n "$nodes_list" ]; then
  IFS=',' read -r -a node_counts <<< "$nodes_list"
  for n in "${node_counts[@]}"; do
    slots=$per_node
    if [[ $n == *x* ]]; then slots=${n#*x} n=${n%x*}; fi
    [ "$n" -ge 1 ] 2>/dev/null && [ "$slots" -ge 1 ] 2>/dev/null ||
      { echo "scale.sh: --nodes entry '$n' is not N or NxS (N nodes of S ranks)" >&2; exit 2; }
    configs+=("$((n * slots)) $n $slots")
  done
  [ "$slurm" = 1 ] || trap '"$cluster_sh" down --name $cluster_name >/dev/null 2>&1 || true' EXIT
else
  IFS=',' read -r -a rank_counts <<< "$ranks_list"
  for r in "${rank_counts[@]}"; do configs+=("$r 0 0"); done
fi

# --slurm: one job per node count and round, each running this script in its allocation.
if [ "$slurm" = 1 ] && [ -z "$job_spec" ]; then
  read -r -a client <<< "${SLURM_CLIENT:-}"
  for round in $(seq "$repeat"); do
    jobs_of_round=()
    for config_spec in "${configs[@]}"; do
      read -r ranks nodes slots <<< "$config_spec"
      echo "== sbatch: $nodes nodes x $slots ranks$([ "$repeat" = 1 ] || echo ", round $round of $repeat")"
      "${client[@]}" sbatch --wait --parsable --nodes "$nodes" --exclusive --job-name "scale-n$nodes" \
        --chdir "$PWD" --output "$out/slurm-n${nodes}x$slots.r$round.log" \
        --export "ALL,TRIDENT_SCALE_JOB=$round $ranks $nodes $slots,TRIDENT=$trident" \
        --wrap "$(printf '%q ' "$0" "${args[@]}" --out "$out")" > /dev/null &
      jobs_of_round+=($!)
    done
    for job in "${jobs_of_round[@]}"; do
      wait "$job" || echo "   a job of round $round failed: see $out/slurm-*.r$round.log"
    done
    cat "$out"/slurm-*.r"$round".log 2>/dev/null | grep '^\(==\|   \)' || true
  done
elif [ -n "$job_spec" ]; then
  read -r job_round ranks nodes slots <<< "$job_spec"
  configs=("$ranks $nodes $slots")
fi

# launch NP PLACEMENT PROGRAM ARGS...: under mpirun on this machine, on the emulated
# cluster (node 0 starts mpirun; cyclic placement deals the ranks round robin), or with
# srun inside a --slurm job's allocation.
nodes=0
launch() {
  local np=$1 placement=$2; shift 2
  if [ -n "$job_spec" ]; then
    srun --mpi=pmix --nodes "$nodes" --ntasks "$np" --ntasks-per-node $((np / nodes)) \
      --distribution "$placement" --kill-on-bad-exit=1 "$@"
  elif [ "$nodes" = 0 ]; then
    mpirun -np "$np" $mpirun_args "$@"
  elif [ "$placement" = cyclic ]; then
    "$cluster_sh" run --name $cluster_name -np "$np" --map-by node "$@"
  else
    "$cluster_sh" run --name $cluster_name -np "$np" "$@"
  fi
}

# calibrate_round ROUND [NODES RANKS SLOTS LABEL]: measures the machine (or the emulated
# cluster of NODES x SLOTS that is up) into DIR/cluster[-LABEL].rROUND.toml; merged into
# DIR/cluster[-LABEL].toml at the end.
calibration_rounds=$([ "$repeat" -lt 3 ] && echo 3 || echo 1)
calibrate_round() {
  local round=$1 nodes=${2:-0} ranks=${3:-} slots=${4:-} label=${5:-} base=$out/cluster np
  [ "$nodes" = 0 ] || base=$out/cluster-$label
  wait_for_quiet
  if [ "$nodes" = 0 ]; then
    # One rank per core; the planner time-shares the cores when a run has more ranks.
    np=$(nproc); [ "$np" -ge 2 ] || np=2
    echo "== calibrate: $np ranks (load $(load))$([ "$repeat" = 1 ] || echo ", round $round of $repeat")"
    mpirun -np "$np" $mpirun_args "$trident" calibrate --threads 1 --rounds "$calibration_rounds" \
      --out "$base.r$round.toml" > "$base.r$round.log" 2>&1 || { cat "$base.r$round.log"; exit 1; }
  else
    echo "== calibrate: $nodes nodes x $slots ranks (load $(load))$([ "$repeat" = 1 ] || echo ", round $round of $repeat")"
    launch "$ranks" block "$trident" calibrate --threads 1 --rounds "$calibration_rounds" --disk-dir none \
        --name "emulated-$label" --out "$base.r$round.toml" > "$base.r$round.log" 2>&1 ||
      { cat "$base.r$round.log"; exit 1; }
  fi
}

# Rounds outermost: each round calibrates (with --calibrate) and runs every layout of every
# rank or node count once, so that calibrations and runs spread alike over the time the
# experiment takes. Predictions come at the end, from the median of the calibrations.
rounds=$(seq "$repeat")
if [ -n "$job_spec" ]; then rounds=$job_round; elif [ "$slurm" = 1 ]; then rounds=""; fi
for round in $rounds; do
  if [ "$calibrate" = 1 ] && [ -z "$nodes_list" ]; then calibrate_round "$round"; fi
  for config_spec in "${configs[@]}"; do
    read -r ranks nodes slots <<< "$config_spec"
    # Files of a node count; NxS entries that differ from --ranks-per-node say their S.
    cluster_label=n$nodes
    [ "$slots" = "${per_node:-0}" ] || cluster_label=n${nodes}x$slots
    plan_node=()
    cluster_file=$cluster
    if [ -n "$job_spec" ]; then
      if [ "$calibrate" = 1 ]; then
        calibrate_round "$round" "$nodes" "$ranks" "$slots" "$cluster_label"
        cluster_file=$out/cluster-$cluster_label.toml
      fi
    elif [ "$nodes" != 0 ]; then
      "$cluster_sh" down --name $cluster_name >/dev/null 2>&1 || true
      "$cluster_sh" up --name $cluster_name --nodes "$nodes" --slots "$slots" \
        ${link_rate:+--link-rate "$link_rate"} ${link_burst:+--link-burst "$link_burst"} \
        > "$out/cluster-$cluster_label.log"
      if [ "$calibrate" = 1 ]; then
        calibrate_round "$round" "$nodes" "$ranks" "$slots" "$cluster_label"
        cluster_file=$out/cluster-$cluster_label.toml
      fi
    elif [ "$calibrate" = 1 ]; then
      # All ranks run on this machine: one node of `ranks` devices sharing its cores.
      cluster_file=$out/cluster.toml
      plan_node=(--devices-per-node "$ranks")
    fi
    for spec in "${layout_specs[@]}"; do
      IFS=',' read -r dp pp tp zero micro ckpt <<< "$spec"
      pp=${pp:-1} tp=${tp:-1} zero=${zero:-$base_zero} micro=${micro:-$base_micro} ckpt=${ckpt:-$base_ckpt}
      if [ "$dp" = "*" ]; then
        [ $((ranks % (pp * tp))) -eq 0 ] || continue
        dp=$((ranks / (pp * tp)))
        # ZeRO stages differ only by sharding over dp: at dp 1 the stage-0 run stands for them.
        if [ "$dp" = 1 ] && [ "$zero" != 0 ] && [ "$zero" != "$base_zero" ]; then continue; fi
      fi
      [ $((dp * pp * tp)) -eq "$ranks" ] || continue
      if [ "$strong" = 1 ]; then global=$base_global; else global=$((per_dp * micro * dp)); fi
      if [ $((global % (micro * dp))) -ne 0 ]; then
        [ "$round" != 1 ] ||
          echo "skip $spec at $ranks ranks: global batch $global is not a multiple of $micro x dp $dp"
        continue
      fi
      placements=(block)
      if [ "$tp_across" = 1 ] && [ "$nodes" -gt 1 ] && [ "$tp" -gt 1 ]; then placements+=(cyclic); fi
      for placement in "${placements[@]}"; do
        name=r${ranks}_dp${dp}_pp${pp}_tp${tp}_z${zero}_mb${micro}_${ckpt}
        if [ "$nodes" != 0 ]; then name=n${nodes}_${name}; fi
        if [ "$placement" = cyclic ]; then name=${name}_cyclic; fi
        dir=$out/runs/$name
        mkdir -p "$dir"
        run_sets=("${sets[@]}" --set parallel.dp="$dp" --set parallel.pp="$pp" --set parallel.tp="$tp"
                  --set parallel.zero_stage="$zero" --set parallel.activation_checkpointing="$ckpt"
                  --set train.micro_batch_size="$micro" --set train.global_batch_size="$global")
        wait_for_quiet
        started_at=$(load)
        where=""
        if [ "$nodes" != 0 ]; then where=" on $nodes nodes, $placement"; fi
        echo "== $ranks ranks$where: dp $dp pp $pp tp $tp zero $zero micro $micro ckpt $ckpt global $global" \
          "(load $started_at$([ "$repeat" = 1 ] || echo ", round $round of $repeat"))"
        status=ok
        suffix=""  # the first run's files keep their plain names
        if [ "$round" != 1 ]; then suffix=.$round; fi
        # The prediction's arguments, asked at the end (and again by --replan).
        printf '%q ' "$config" "${run_sets[@]}" --cluster "$cluster_file" "${plan_node[@]}" --json \
          --placement "$placement" --layout "$dp,$pp,$tp,$zero,$micro,$ckpt" > "$dir/plan.args"
        launch "$ranks" "$placement" "$trident" train "$config" "${run_sets[@]}" \
          --set train.steps="$steps" --set train.stop_at=0 --set train.threads=1 --set train.log_every=1 \
          --set logging.metrics="$dir/metrics$suffix.jsonl" --set checkpoint.dir='""' \
          --set checkpoint.load='""' --set logging.run_dir=none > "$dir/train$suffix.log" 2>&1 ||
          status=train-failed
        [ "$status" = ok ] || { echo "   $status (see $dir)"; tail -3 "$dir/train$suffix.log" 2>/dev/null || true; }
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ranks" "$dp" "$pp" "$tp" \
          "$zero" "$micro" "$ckpt" "$global" "$spec" "runs/$name" "$status" "$started_at" \
          "$([ "$nodes" = 0 ] && echo 1 || echo "$nodes")" "$placement" "$round" >> "$index"
      done
    done
    if [ "$nodes" != 0 ] && [ -z "$job_spec" ]; then "$cluster_sh" down --name $cluster_name; fi
  done
done
[ -z "$job_spec" ] || exit 0  # the submitting script predicts and plots, after every job

# Each cluster's calibrations, one per round: the median of each figure.
for first in "$out"/cluster*.r1.toml; do
  [ -f "$first" ] || continue
  base=${first%.r1.toml}
  "$trident" calibrate --merge "$base".r*.toml --out "$base.toml" > /dev/null ||
    { echo "scale.sh: merging the calibrations $base.r*.toml failed" >&2; exit 1; }
done
echo "== predictions"
for args in "$out"/runs/*/plan.args; do
  [ -f "$args" ] || continue  # no run at all
  eval "set -- $(cat "$args")"
  "$trident" plan "$@" > "$(dirname "$args")/plan.json" 2> "$(dirname "$args")/plan.err" ||
    echo "   prediction failed: $(dirname "$args") ($(tail -1 "$(dirname "$args")/plan.err"))"
done

"$(python_for_plots)" "$root/scripts/plot_scaling.py" "$out" $([ "$strong" = 1 ] && echo --strong)
