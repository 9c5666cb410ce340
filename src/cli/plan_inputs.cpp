// plan_inputs: the config, the cluster and the machine, as the planner sees them.
#include "cli/plan_inputs.h"

#include <sys/statvfs.h>  // statvfs
#include <unistd.h>       // readlink: where the program lives, to find the cluster presets

#include <algorithm>   // std::min
#include <cstdlib>     // std::getenv
#include <filesystem>  // std::filesystem::path
#include <fstream>     // std::ifstream
#include <limits>      // std::numeric_limits
#include <sstream>     // std::istringstream

namespace trident::cli {

namespace {

/// Where presets live: $TRIDENT_CLUSTERS, ./configs/clusters, and beside the program.
std::vector<std::string> preset_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TRIDENT_CLUSTERS")) dirs.push_back(env);
  dirs.push_back("configs/clusters");
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    dirs.push_back(dir + "/../configs/clusters");
    dirs.push_back(dir + "/configs/clusters");
  }
  return dirs;
}

}  // namespace

plan::Cluster load_plan_cluster(const Args& args, const plan::PlanModel& m,
                                const std::string& fallback) {
  plan::Cluster cluster;
  try {
    cluster = plan::load_cluster(args.get("cluster", fallback), preset_dirs());
    cluster.matmul_flops(m.precision, 1024);  // fails now, naming the key, if missing
    if (args.has("devices-per-node")) {
      cluster.devices_per_node = static_cast<int>(args.get_int("devices-per-node", 0));
      if (cluster.devices_per_node < 1) throw UsageError("--devices-per-node must be at least 1");
    }
    if (args.has("placement")) {
      cluster.placement = args.get("placement");
      if (cluster.placement != "block" && cluster.placement != "cyclic")
        throw UsageError("--placement must be block or cyclic, got '" + cluster.placement + "'");
    }
  } catch (const plan::ClusterError& e) {
    throw UsageError(std::string("--cluster: ") + e.what());
  }
  return cluster;
}

namespace {

/// The first number in `path`, or +inf when it is missing or says "max".
double read_limit(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::numeric_limits<double>::infinity();
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return std::numeric_limits<double>::infinity();
  }
}

/// The smallest limit in `file` of the cgroup at `path` under `mount` and of each of its
/// ancestors (a job's limit often sits above the process's own group, as under Slurm);
/// the mount's root file too, for a container that sees its own group as the root.
double limit_up_from(const std::string& mount, std::string path, const std::string& file) {
  double limit = read_limit(mount + "/" + file);
  while (!path.empty() && path != "/") {
    limit = std::min(limit, read_limit(mount + path + "/" + file));
    path = path.substr(0, path.rfind('/'));
  }
  return limit;
}

/// This process's memory cgroup limit, v1 or v2; +inf when it has none.
double cgroup_limit() {
  std::ifstream groups("/proc/self/cgroup");
  double limit = std::numeric_limits<double>::infinity();
  for (std::string line; std::getline(groups, line);) {
    // "4:memory:/path" (v1) or "0::/path" (v2).
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers == "memory")
      limit =
          std::min(limit, limit_up_from("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes"));
    else if (controllers.empty())
      limit = std::min(limit, limit_up_from("/sys/fs/cgroup", path, "memory.max"));
  }
  return limit;
}

double mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    double kib = 0;
    in >> kib;
    if (key == "MemAvailable:") return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace

double machine_memory_per_rank(int ranks_on_node) {
  return std::min(cgroup_limit(), mem_available()) / std::max(1, ranks_on_node);
}

double disk_per_rank(const std::string& dir, int ranks_on_node) {
  std::filesystem::path p = std::filesystem::absolute(dir);
  while (!p.empty() && !std::filesystem::exists(p) && p != p.parent_path()) p = p.parent_path();
  struct statvfs fs {};
  if (::statvfs(p.c_str(), &fs) != 0) return 0;
  return static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) /
         std::max(1, ranks_on_node);
}

plan::AutoBudget auto_budget(const Args& args, const TrainConfig& config, int ranks,
                             int ranks_on_node, double memory) {
  plan::AutoBudget b;
  b.ranks = ranks;
  b.ranks_per_node = ranks_on_node;
  b.memory_per_rank =
      args.has("memory-per-rank") ? args.get_positive_double("memory-per-rank", 1.0) * 1e9 : memory;
  // The nvme tier streams host tensors: a GPU run keeps its state on the device.
  b.tier_possible = config.train.device == Device::kCpu;
  if (!b.tier_possible) {
    if (args.has("disk-per-rank"))
      throw UsageError("--disk-per-rank: the nvme tier runs with train.device = \"cpu\" only");
    return b;
  }
  if (args.has("disk-per-rank") && config.parallel.nvme_path.empty())
    throw UsageError(
        "--disk-per-rank: set parallel.nvme_path too, the directory of the tier's files");
  if (args.has("disk-per-rank"))
    b.disk_per_rank = args.get_positive_double("disk-per-rank", 1.0) * 1e9;
  else if (!config.parallel.nvme_path.empty())
    b.disk_per_rank = disk_per_rank(config.parallel.nvme_path, ranks_on_node);
  return b;
}

plan::CandidateCheck config_accepts(const std::string& path, const std::vector<std::string>& sets,
                                    int world) {
  return [path, sets, world](const plan::AutoCandidate& c) -> std::string {
    std::vector<std::string> all = sets;
    for (const std::string& key : plan::overrides_of(c)) all.push_back(key);
    try {
      load_config(path, all, world);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
}

}  // namespace trident::cli
