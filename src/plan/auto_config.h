// Automatic configuration: of every layout, ZeRO stage, placement of the model state
// (memory or the nvme tier), micro-batch size and recomputation that runs a model on N
// ranks, the fastest predicted to fit a memory budget with a margin; the runner-up and
// what it loses on; and, when nothing fits, the smallest change that would.
#pragma once
#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

#include "plan/capacity.h"    // Placement
#include "plan/cluster.h"     // Cluster
#include "plan/plan_model.h"  // PlanModel, Layout
#include "plan/planner.h"     // Evaluation

namespace trident::plan {

/// What the choice must respect.
struct AutoBudget {
  int ranks = 1;
  int ranks_per_node = 1;
  double memory_per_rank = 0;  ///< bytes of peak memory a rank may use (process base included)
  double margin = 0.10;        ///< the predicted peak stays under (1 - margin) x the budget
  /// A CPU rank (a cluster with a process base) that keeps freed memory (train.allocator
  /// = "cache") holds more than its live memory: this fraction of it more (23% measured on
  /// the 160M GPT in memory, docs/offload.md; its blocks of 1 MiB or more are bounded by
  /// twice the most in use, common/host_memory.h). A releasing rank holds its live memory.
  double kept_heap_allowance = 0.25;
  /// Bytes of tier files a rank may write; < 0: no tier directory (no offload considered).
  double disk_per_rank = -1;
  /// The run could use the nvme tier if given a directory (a CPU run): what a suggestion
  /// may propose when nothing fits.
  bool tier_possible = true;
  /// Candidates predicted within this share of the choice's step are near ties: one
  /// calibration to the next moved such a gap from 1% to 8%, and in the held-out
  /// benchmark's eighteenth run every case's measured best was predicted within 5.1% of
  /// the choice (bench/results/autotune.md). The report counts them and names the --measure that
  /// settles them.
  double near_tie = 0.05;
};

/// A pipeline schedule as the config names it.
struct ScheduleChoice {
  std::string schedule = "1f1b";  ///< parallel.schedule
  int64_t virtual_stages = 1;     ///< parallel.virtual_stages (interleaved-1f1b)
};

/// One configuration: a layout, its pipeline schedule and where its model state lives.
struct AutoCandidate {
  Layout layout;
  ScheduleChoice schedule;
  Placement placement;
  Evaluation evaluation;
  /// Predicted peak RSS per rank: the evaluation's total (with the kept heap's allowance
  /// when the rank keeps its heap) and the process base.
  double peak = 0;
  bool releases_host_memory = false;  ///< train.allocator resolved for this placement
  double tier_bytes = 0;              ///< its tier files per rank
  /// "dp2 pp2 tp1 zero3 mb4 ckpt zb-h1, everything in the nvme tier" (the schedule only
  /// with pp > 1).
  std::string name() const;
};

struct AutoChoice {
  std::vector<AutoCandidate> ranked;  ///< those that fit, fastest first (then least memory)
  int considered = 0;
  int fitting = 0;  ///< candidates under the budget, before the config's check
  /// When nothing fits: the candidate needing least memory, and the smallest change that
  /// would make the job fit (more ranks, a tier directory, more memory per rank).
  AutoCandidate smallest;
  std::string suggestion;
  /// A sentence on why ranked[0] wins and what ranked[1] loses on.
  std::string why;
  /// Other candidates that fit and are predicted within AutoBudget::near_tie of the
  /// choice's step (the config's check is not run on those past the kept ones).
  int near_ties = 0;
  /// Candidates that fit but that the config refused (name: reason), dropped from `ranked`.
  std::vector<std::string> refused;
};

/// Why a candidate cannot run as the user's config stands ("" when it can): the config's
/// own validation of the candidate's keys (a schedule that refuses ZeRO 3, a key that
/// applies to ZeRO 3 only, ...).
using CandidateCheck = std::function<std::string(const AutoCandidate&)>;

/// Searches dp x pp x tp = budget.ranks (tp within a node), ZeRO stages 0-3, no, selective
/// or full recomputation, sequence parallelism with tp > 1 (when tp divides the sequence),
/// every micro-batch size that divides the global batch, with pp > 1 the schedules 1F1B,
/// interleaved 1F1B (the fewest chunks above one that divide a stage's layers, when the
/// micro-batches come in rounds of pp) and ZB-H1 (neither with ZeRO 3), and the
/// placements of the model state (in memory; the optimizer's states, and from ZeRO 2 its
/// gradients, in the nvme tier; with ZeRO 3 the parameters too) when a tier directory is
/// given. The model's precision and the rest stay as `m` has them. `check`
/// drops candidates, fastest first, until `keep` of them (the choice and its runner-up)
/// pass it; the rest are not checked and not kept. Deterministic: the same inputs give the
/// same choice on every rank.
AutoChoice choose_configuration(const PlanModel& m, const Cluster& cluster,
                                const AutoBudget& budget, const CandidateCheck& check = {},
                                size_t keep = 2);

/// The choice as config overrides ("parallel.dp=2", ...): what `trident train --auto`
/// applies and writes into the run directory.
std::vector<std::string> overrides_of(const AutoCandidate& c);

/// Whether `c` keeps its state in memory and is predicted with freed memory going back to
/// the system: the config's train.allocator = release, or under "auto" a configuration
/// that fits only with that tighter bound. Its overrides then set the allocator (the
/// tier's placements release under "auto" already).
bool switched_to_release(const AutoCandidate& c);

/// " with train.allocator = release" where switched_to_release(c), else empty: what follows
/// a candidate's predicted peak wherever it is printed.
std::string release_note(const AutoCandidate& c);

/// The report `--auto` prints: the choice, its predicted memory and step time, the
/// runner-up and why it lost, and how many near ties `--measure` could settle (unless
/// `measuring` already does); or, when nothing fits, the suggestion.
std::string auto_choice_text(const AutoChoice& choice, const AutoBudget& budget,
                             bool measuring = false);

}  // namespace trident::plan
