// Cluster files: parsing (every key checked and named in errors), preset lookup,
// writing, and the matmul rate at a given size.
#include "plan/cluster.h"

#include <dirent.h>       // opendir, readdir: listing preset directories
#include <toml++/toml.h>  // toml::parse, toml::table

#include <algorithm>   // std::sort, std::unique, std::min
#include <cmath>       // std::log, std::exp, std::ceil
#include <cstdlib>     // std::atoi, std::atof
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <iomanip>     // std::setprecision
#include <iterator>    // std::prev
#include <optional>    // std::optional
#include <set>         // std::set
#include <sstream>     // std::ostringstream, std::istringstream
#include <tuple>       // std::tuple
#include <utility>     // std::pair

namespace trident::plan {

namespace {

const std::set<std::string> kPrecisions = {"bf16", "fp32", "fp64"};

std::string where(const std::string& source, const toml::node& node) {
  const auto& at = node.source();
  return source + ":" + std::to_string(at.begin.line);
}

double number(const std::string& source, const std::string& key, const toml::node& node,
              double min) {
  const std::optional<double> v = node.value<double>();
  if (!v) throw ClusterError(where(source, node) + ": " + key + " must be a number");
  if (!(*v >= min))
    throw ClusterError(where(source, node) + ": " + key + " must be at least " +
                       std::to_string(min) + ", got " + std::to_string(*v));
  return *v;
}

using PrecisionVisitor = std::function<void(const std::string&, const toml::node&)>;

void read_precision_table(const std::string& source, const std::string& key, const toml::node& node,
                          const PrecisionVisitor& f) {
  const toml::table* t = node.as_table();
  if (!t) throw ClusterError(where(source, node) + ": " + key + " must be a table");
  for (const auto& [k, v] : *t) {
    const std::string name(k.str());
    if (!kPrecisions.count(name))
      throw ClusterError(where(source, v) + ": " + key + "." + name +
                         ": unknown precision; use bf16, fp32 or fp64");
    f(name, v);
  }
}

/// A table keyed by a positive number written as a string ("1024" = 3.5): each entry
/// passed to `f` as (key, value), values at least `min`.
void read_size_table(const std::string& source, const std::string& key, const toml::node& node,
                     const std::string& what, double min,
                     const std::function<void(double, double)>& f) {
  const toml::table* t = node.as_table();
  if (!t) throw ClusterError(where(source, node) + ": " + key + " must be a table");
  for (const auto& [k, v] : *t) {
    const std::string text(k.str());
    const double size = std::atof(text.c_str());
    if (!(size > 0))
      throw ClusterError(where(source, v) + ": " + key + ": key '" + text + "' must be " + what);
    f(size, number(source, key + "." + text, v, min));
  }
}

/// log-log interpolation in `t` at x, clamped to its ends.
double interpolate(const std::map<double, double>& t, double x) {
  if (x <= t.begin()->first) return t.begin()->second;
  if (x >= t.rbegin()->first) return t.rbegin()->second;
  auto hi = t.lower_bound(x);
  auto lo = std::prev(hi);
  const double f =
      (std::log(x) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return std::exp(std::log(lo->second) + f * (std::log(hi->second) - std::log(lo->second)));
}

}  // namespace

double Cluster::contention_at(double ranks) const {
  if (contention.empty() || ranks < contention.begin()->first) return 1.0;
  return interpolate(contention, ranks);
}

double Cluster::matmul_flops(const std::string& precision, double n) const {
  auto measured = matmul_tflops.find(precision);
  if (measured != matmul_tflops.end() && !measured->second.empty()) {
    // Interpolate log(rate) in log(size); clamp outside the measured sizes.
    const auto& table = measured->second;
    if (n <= table.begin()->first) return table.begin()->second * 1e12;
    if (n >= table.rbegin()->first) return table.rbegin()->second * 1e12;
    auto hi = table.lower_bound(static_cast<int>(std::ceil(n)));
    auto lo = std::prev(hi);
    const double x =
        (std::log(n) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
    return std::exp(std::log(lo->second) + x * (std::log(hi->second) - std::log(lo->second))) *
           1e12;
  }
  auto peak = peak_tflops.find(precision);
  if (peak == peak_tflops.end())
    throw ClusterError("cluster '" + name + "' has no peak_tflops." + precision +
                       " (nor matmul_tflops." + precision + "); add it to the cluster file");
  return peak->second * 1e12 * efficiency;
}

double Cluster::layer_calls_us(bool llama, bool tensor_parallel) const {
  double us =
      tensor_parallel && layer_overhead_tp_us > 0 ? layer_overhead_tp_us : layer_overhead_us;
  if (llama && llama_layer_overhead_us > 0 && layer_overhead_us > 0)
    us *= llama_layer_overhead_us / layer_overhead_us;
  return us;
}

double Cluster::elementwise_bytes_per_s(double bytes, bool llama) const {
  if (llama && !llama_elementwise_gbps.empty())
    return interpolate(llama_elementwise_gbps, bytes) * 1e9;
  if (elementwise_gbps.empty()) return memory_gbps * 1e9;
  return interpolate(elementwise_gbps, bytes) * 1e9;
}

Cluster parse_cluster(const std::string& text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw ClusterError(source + ":" + std::to_string(e.source().begin.line) + ": " +
                       std::string(e.description()));
  }
  Cluster c;
  bool has_devices = false, has_memory = false;
  for (const auto& [k, node] : root) {
    const std::string key(k.str());
    if (key == "name" || key == "description") {
      const auto v = node.value<std::string>();
      if (!v) throw ClusterError(where(source, node) + ": " + key + " must be a string");
      (key == "name" ? c.name : c.description) = *v;
    } else if (key == "devices_per_node") {
      c.devices_per_node = static_cast<int>(number(source, key, node, 1));
      has_devices = true;
    } else if (key == "cores_per_node") {
      c.cores_per_node = static_cast<int>(number(source, key, node, 0));
    } else if (key == "memory_per_device_gb") {
      c.memory_per_device_gb = number(source, key, node, 0);
      has_memory = true;
    } else if (key == "usable_memory_fraction") {
      c.usable_memory_fraction = number(source, key, node, 0);
    } else if (key == "peak_tflops") {
      if (node.is_table()) {
        read_precision_table(source, key, node, [&](const std::string& p, const toml::node& v) {
          c.peak_tflops[p] = number(source, key + "." + p, v, 0);
        });
      } else {
        // One number: the rate of every precision.
        const double v = number(source, key, node, 0);
        for (const auto& p : kPrecisions) c.peak_tflops[p] = v;
      }
    } else if (key == "matmul_tflops") {
      read_precision_table(source, key, node, [&](const std::string& p, const toml::node& v) {
        const toml::table* sizes = v.as_table();
        if (!sizes)
          throw ClusterError(where(source, v) + ": " + key + "." + p + " must be a table");
        for (const auto& [size, rate] : *sizes) {
          const std::string s(size.str());
          const int n = std::atoi(s.c_str());
          if (n <= 0)
            throw ClusterError(where(source, rate) + ": " + key + "." + p + ": key '" + s +
                               "' must be a matmul size (a positive integer)");
          c.matmul_tflops[p][n] = number(source, key + "." + p + "." + s, rate, 1e-12);
        }
      });
    } else if (key == "sendrecv_us" || key == "inter_sendrecv_us" || key == "inter_send_us" ||
               key == "inter_ring_us") {
      auto& table = key == "sendrecv_us"         ? c.sendrecv_seconds
                    : key == "inter_sendrecv_us" ? c.inter_sendrecv_seconds
                    : key == "inter_send_us"     ? c.inter_send_seconds
                                                 : c.inter_ring_seconds;
      read_size_table(source, key, node, "a message size in bytes", 1e-9,
                      [&](double bytes, double us) { table[bytes] = us * 1e-6; });
    } else if (key == "contention") {
      read_size_table(source, key, node, "a number of ranks computing at once", 1e-3,
                      [&](double ranks, double factor) { c.contention[ranks] = factor; });
    } else if (key == "machine_cores") {
      c.machine_cores = static_cast<int>(number(source, key, node, 0));
    } else if (key == "placement") {
      const auto v = node.value<std::string>();
      if (!v || (*v != "block" && *v != "cyclic"))
        throw ClusterError(where(source, node) + ": placement must be \"block\" or \"cyclic\"");
      c.placement = *v;
    } else if (key == "collectives") {
      const auto v = node.value<std::string>();
      if (!v || (*v != "nccl" && *v != "mpi"))
        throw ClusterError(where(source, node) + ": collectives must be \"nccl\" or \"mpi\"");
      c.collectives = *v;
    } else if (key == "inter_node_latency_us") {
      c.inter_node_latency_us = number(source, key, node, 0);
    } else if (key == "elementwise_gbps") {
      read_size_table(source, key, node, "a layer's activation bytes", 1e-9,
                      [&](double bytes, double gbps) { c.elementwise_gbps[bytes] = gbps; });
    } else if (key == "llama_elementwise_gbps") {
      read_size_table(source, key, node, "a layer's activation bytes", 1e-9,
                      [&](double bytes, double gbps) { c.llama_elementwise_gbps[bytes] = gbps; });
    } else if (key == "efficiency") {
      c.efficiency = number(source, key, node, 1e-6);
    } else if (key == "intra_node_gbps") {
      c.intra_node_gbps = number(source, key, node, 1e-9);
    } else if (key == "inter_node_gbps") {
      c.inter_node_gbps = number(source, key, node, 1e-9);
    } else if (key == "latency_us") {
      c.latency_us = number(source, key, node, 0);
    } else if (key == "sync_us") {
      c.sync_us = number(source, key, node, 0);
    } else if (key == "sync_fraction") {
      c.sync_fraction = number(source, key, node, 0);
    } else if (key == "ring_sync_us") {
      c.ring_sync_us = number(source, key, node, 0);
    } else if (key == "memory_gbps") {
      c.memory_gbps = number(source, key, node, 0);
    } else if (key == "weight_gbps") {
      c.weight_gbps = number(source, key, node, 0);
    } else if (key == "adamw_ns_per_element") {
      c.adamw_ns_per_element = number(source, key, node, 0);
    } else if (key == "disk_gbps") {
      c.disk_gbps = number(source, key, node, 0);
    } else if (key == "disk_read_gbps") {
      c.disk_read_gbps = number(source, key, node, 0);
    } else if (key == "disk_write_gbps") {
      c.disk_write_gbps = number(source, key, node, 0);
    } else if (key == "disk_overlap") {
      c.disk_overlap = std::min(1.0, number(source, key, node, 0));
    } else if (key == "tier_stream_s_per_gb") {
      c.tier_stream_s_per_gb = number(source, key, node, 0);
    } else if (key == "process_base_gb") {
      c.process_base_gb = number(source, key, node, 0);
    } else if (key == "layer_overhead_us") {
      c.layer_overhead_us = number(source, key, node, 0);
    } else if (key == "llama_layer_overhead_us") {
      c.llama_layer_overhead_us = number(source, key, node, 0);
    } else if (key == "layer_overhead_tp_us") {
      c.layer_overhead_tp_us = number(source, key, node, 0);
    } else if (key == "ends_overhead_us") {
      c.ends_overhead_us = number(source, key, node, 0);
    } else if (key == "dp_overlap") {
      c.dp_overlap = std::min(1.0, number(source, key, node, 0));
    } else if (key == "all_reduce_overlap") {
      c.all_reduce_overlap = std::min(1.0, number(source, key, node, 0));
    } else {
      throw ClusterError(
          where(source, node) + ": unknown key '" + key +
          "'; valid keys: name description devices_per_node cores_per_node "
          "memory_per_device_gb "
          "usable_memory_fraction machine_cores placement collectives peak_tflops "
          "matmul_tflops "
          "sendrecv_us inter_sendrecv_us inter_send_us inter_ring_us contention efficiency "
          "intra_node_gbps "
          "inter_node_gbps latency_us inter_node_latency_us sync_us sync_fraction ring_sync_us "
          "memory_gbps "
          "weight_gbps adamw_ns_per_element "
          "disk_gbps disk_read_gbps disk_write_gbps disk_overlap tier_stream_s_per_gb "
          "process_base_gb "
          "elementwise_gbps llama_elementwise_gbps "
          "layer_overhead_us llama_layer_overhead_us layer_overhead_tp_us ends_overhead_us "
          "dp_overlap all_reduce_overlap");
    }
  }
  if (!has_devices) throw ClusterError(source + ": devices_per_node is missing");
  if (!has_memory) throw ClusterError(source + ": memory_per_device_gb is missing");
  if (c.peak_tflops.empty() && c.matmul_tflops.empty())
    throw ClusterError(source + ": peak_tflops is missing (a number or a table per precision)");
  return c;
}

Cluster load_cluster(const std::string& spec, const std::vector<std::string>& preset_dirs) {
  std::vector<std::string> tried;
  auto read = [](const std::string& path, std::string& text) {
    std::ifstream in(path);
    if (!in) return false;
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
    return true;
  };
  std::string text;
  const bool looks_like_path = spec.find('/') != std::string::npos ||
                               (spec.size() > 5 && spec.substr(spec.size() - 5) == ".toml");
  if (looks_like_path) {
    if (read(spec, text)) return parse_cluster(text, spec);
    throw ClusterError("cannot read the cluster file " + spec);
  }
  for (const auto& dir : preset_dirs) {
    const std::string path = dir + "/" + spec + ".toml";
    if (read(path, text)) return parse_cluster(text, path);
    tried.push_back(path);
  }
  std::string names;
  for (const auto& n : preset_names(preset_dirs)) names += " " + n;
  throw ClusterError(
      "no cluster preset '" + spec + "'" +
      (names.empty() ? std::string(" (no preset directory found)") : "; presets:" + names) +
      "; or give a path to a cluster TOML file");
}

std::vector<std::string> preset_names(const std::vector<std::string>& preset_dirs) {
  std::vector<std::string> names;
  for (const auto& dir : preset_dirs) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (const dirent* e = readdir(d)) {
      const std::string f = e->d_name;
      if (f.size() > 5 && f.substr(f.size() - 5) == ".toml")
        names.push_back(f.substr(0, f.size() - 5));
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string cluster_to_toml(const Cluster& c, const std::string& comment) {
  std::ostringstream out;
  out << std::setprecision(6);
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "name = \"" << c.name << "\"\n";
  if (!c.description.empty()) out << "description = \"" << c.description << "\"\n";
  out << "devices_per_node = " << c.devices_per_node << "\n"
      << "cores_per_node = " << c.cores_per_node << "\n"
      << "machine_cores = " << c.machine_cores << "\n"
      << "placement = \"" << c.placement << "\"\n"
      << "collectives = \"" << c.collectives << "\"\n"
      << "memory_per_device_gb = " << c.memory_per_device_gb << "\n"
      << "usable_memory_fraction = " << c.usable_memory_fraction << "\n"
      << "efficiency = " << c.efficiency << "\n"
      << "intra_node_gbps = " << c.intra_node_gbps << "\n"
      << "inter_node_gbps = " << c.inter_node_gbps << "\n"
      << "latency_us = " << c.latency_us << "\n"
      << "inter_node_latency_us = " << c.inter_node_latency_us << "\n"
      << "sync_us = " << c.sync_us << "\n"
      << "sync_fraction = " << c.sync_fraction << "\n"
      << "ring_sync_us = " << c.ring_sync_us << "\n"
      << "memory_gbps = " << c.memory_gbps << "\n"
      << "weight_gbps = " << c.weight_gbps << "\n"
      << "adamw_ns_per_element = " << c.adamw_ns_per_element << "\n"
      << "disk_gbps = " << c.disk_gbps << "\n"
      << "disk_read_gbps = " << c.disk_read_gbps << "\n"
      << "disk_write_gbps = " << c.disk_write_gbps << "\n"
      << "disk_overlap = " << c.disk_overlap << "\n";
  if (c.tier_stream_s_per_gb >= 0)
    out << "tier_stream_s_per_gb = " << c.tier_stream_s_per_gb << "\n";
  out << "process_base_gb = " << c.process_base_gb << "\n"
      << "layer_overhead_us = " << c.layer_overhead_us << "\n"
      << "llama_layer_overhead_us = " << c.llama_layer_overhead_us << "\n"
      << "layer_overhead_tp_us = " << c.layer_overhead_tp_us << "\n"
      << "ends_overhead_us = " << c.ends_overhead_us << "\n"
      << "dp_overlap = " << c.dp_overlap << "\n";
  if (c.all_reduce_overlap >= 0) out << "all_reduce_overlap = " << c.all_reduce_overlap << "\n";
  if (!c.peak_tflops.empty()) {
    out << "\n[peak_tflops]\n";
    for (const auto& [p, v] : c.peak_tflops) out << p << " = " << v << "\n";
  }
  for (const auto& [p, table] : c.matmul_tflops) {
    out << "\n[matmul_tflops." << p << "]  # measured, by matmul size n (n x n times n x n)\n";
    for (const auto& [n, v] : table) out << "\"" << n << "\" = " << v << "\n";
  }
  for (const auto& [name, table] :
       {std::pair{"elementwise_gbps", &c.elementwise_gbps},
        std::pair{"llama_elementwise_gbps", &c.llama_elementwise_gbps}}) {
    if (table->empty()) continue;
    out << "\n[" << name << "]  # measured, by a layer's activation bytes per micro-batch\n";
    for (const auto& [bytes, gbps] : *table)
      out << "\"" << static_cast<long long>(bytes) << "\" = " << gbps << "\n";
  }
  for (const auto& [name, table, what] :
       {std::tuple{"sendrecv_us", &c.sendrecv_seconds, "an exchange"},
        std::tuple{"inter_sendrecv_us", &c.inter_sendrecv_seconds, "an exchange"},
        std::tuple{"inter_send_us", &c.inter_send_seconds, "a message one way"},
        std::tuple{"inter_ring_us", &c.inter_ring_seconds, "a ring's step across nodes"}}) {
    if (table->empty()) continue;
    out << "\n[" << name << "]  # measured, " << what << " by its bytes\n";
    for (const auto& [bytes, s] : *table)
      out << "\"" << static_cast<long long>(bytes) << "\" = " << s * 1e6 << "\n";
  }
  if (!c.contention.empty()) {
    out << "\n[contention]  # measured, by ranks computing at once\n";
    for (const auto& [ranks, factor] : c.contention)
      out << "\"" << static_cast<long long>(ranks) << "\" = " << factor << "\n";
  }
  return out.str();
}

}  // namespace trident::plan
