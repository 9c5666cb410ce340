// The run directory: where a run's outputs go by default (runs/<config name>), and the
// guard that keeps a fresh run from writing into the outputs of an earlier one.
#pragma once
#include <cstdint>
#include <string>

#include "config/config.h"

namespace trident {

/// logging.run_dir = "none": no run directory; only the outputs set one by one are written.
constexpr const char* kNoRunDir = "none";

/// Fills logging.run_dir (runs/<config file's name without .toml> when empty and the config
/// came from a file; cleared when "none"), then logging.metrics, logging.trace and checkpoint.dir
/// from it where they are empty, and creates the run directory (on every rank; idempotent).
void resolve_run_paths(TrainConfig& config);

/// What of an earlier run the run directory holds: its metrics file (non-empty) or a
/// checkpoint in its checkpoints/ directory. Empty when nothing.
std::string earlier_run_outputs(const TrainConfig& config);

/// Throws ConfigError when the run directory holds an earlier run's metrics or checkpoints
/// and the config does not resume (checkpoint.load empty): the message names the run
/// directory and the fixes (checkpoint.load = "auto", another logging.run_dir, removing it).
void check_run_dir_is_free(const TrainConfig& config);

}  // namespace trident
