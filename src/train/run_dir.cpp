// Run directory defaults and the guard against mixing two runs in one directory.
#include "train/run_dir.h"

#include <algorithm>  // std::mismatch
#include <filesystem>
#include <system_error>

namespace trident {

namespace fs = std::filesystem;

namespace {

/// Whether `path` lies inside `dir` (both as the user wrote them, made absolute).
bool inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  const fs::path d = fs::weakly_canonical(fs::absolute(dir), ec);
  const auto mismatch = std::mismatch(d.begin(), d.end(), p.begin(), p.end());
  return mismatch.first == d.end();
}

bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  if (fs::exists(dir + "/latest", ec)) return true;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("step_", 0) == 0) return true;
  return false;
}

}  // namespace

void resolve_run_paths(TrainConfig& config) {
  std::string& dir = config.logging.run_dir;
  // A config read from a file names its run: configs/default.toml writes runs/default.
  if (dir.empty() && !config.source.empty() && config.source.front() != '<')
    dir = "runs/" + fs::path(config.source).stem().string();
  if (dir == kNoRunDir) dir.clear();  // outputs only where set one by one
  if (dir.empty()) return;
  fs::create_directories(dir);
  if (config.logging.metrics.empty()) config.logging.metrics = dir + "/metrics.jsonl";
  if (config.logging.trace.empty()) config.logging.trace = dir + "/trace.json";
  if (config.checkpoint.dir.empty()) config.checkpoint.dir = dir + "/checkpoints";
}

std::string earlier_run_outputs(const TrainConfig& config) {
  const std::string& dir = config.logging.run_dir;
  if (dir.empty()) return "";
  std::error_code ec;
  std::string found;
  const std::string& metrics = config.logging.metrics;
  if (!metrics.empty() && inside(metrics, dir) && fs::exists(metrics, ec) &&
      fs::file_size(metrics, ec) > 0)
    found = metrics;
  const std::string& ckpt = config.checkpoint.dir;
  if (!ckpt.empty() && inside(ckpt, dir) && has_checkpoint(ckpt))
    found += (found.empty() ? "" : " and checkpoints in ") + ckpt;
  return found;
}

void check_run_dir_is_free(const TrainConfig& config) {
  if (!config.checkpoint.load.empty()) return;  // resuming continues the run it finds
  const std::string found = earlier_run_outputs(config);
  if (found.empty()) return;
  throw ConfigError("logging.run_dir " + config.logging.run_dir + " already holds a run (" + found +
                    "); a fresh run would mix its outputs with that one. Resume it with "
                    "--set checkpoint.load=auto, write elsewhere with --set "
                    "logging.run_dir=DIR, or remove " +
                    config.logging.run_dir);
}

}  // namespace trident
