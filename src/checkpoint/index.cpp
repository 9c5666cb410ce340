// index.json to and from JSON, and the resolution of a user's checkpoint path.
#include "checkpoint/index.h"

#include <fcntl.h>   // open
#include <unistd.h>  // write, fsync, close

#include <cerrno>      // errno
#include <cstring>     // std::strerror
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream

#include "checkpoint/checkpoint.h"   // CheckpointError
#include "checkpoint/hf.h"           // read_hf_index, is_hf_directory
#include "checkpoint/safetensors.h"  // fsync_directory

namespace trident::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOptimizerPrefix = "optimizer.";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

nlohmann::json box_json(const Box& b) { return {{"offsets", b.offsets}, {"shape", b.shape}}; }

}  // namespace

std::string exp_avg_name(const std::string& param) { return "optimizer.exp_avg/" + param; }
std::string exp_avg_sq_name(const std::string& param) { return "optimizer.exp_avg_sq/" + param; }
std::string master_name(const std::string& param) { return "optimizer.master/" + param; }
bool is_optimizer_state(const std::string& tensor) {
  return tensor.rfind(kOptimizerPrefix, 0) == 0;
}

nlohmann::json index_to_json(const CheckpointIndex& index) {
  nlohmann::json j;
  j["format"] = kFormatName;
  j["format_version"] = index.format_version;
  j["step"] = index.step;
  j["model"] = index.model;
  j["layout"] = index.layout;
  j["trainer"] = index.trainer;
  j["optimizer"] = index.optimizer;
  j["config"] = index.config_toml;
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [name, f] : index.files) files[name] = {{"bytes", f.bytes}, {"xxh64", f.xxh64}};
  j["files"] = files;
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, t] : index.tensors) {
    nlohmann::json slices = nlohmann::json::array();
    for (const SliceRef& s : t.slices) {
      nlohmann::json sj = box_json(s.box);
      sj["file"] = s.file;
      sj["key"] = s.key;
      slices.push_back(sj);
    }
    tensors[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"slices", slices}};
  }
  j["tensors"] = tensors;
  return j;
}

CheckpointIndex index_from_json(const nlohmann::json& j, const std::string& dir) {
  const std::string where = dir + "/" + kIndexFile;
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormatName)
    throw CheckpointError(where + " is not a trident checkpoint index (no \"format\": \"" +
                          kFormatName + "\")");
  // Any other type or an integer out of int's range reads as an unknown version.
  const nlohmann::json& v = j.contains("format_version") ? j["format_version"] : nlohmann::json();
  const int version = v.is_number_integer() && v >= 0 && v <= kFormatVersion ? v.get<int>() : -1;
  if (version != kFormatVersion)
    throw CheckpointError(where + " has format version " + (v.is_null() ? "(none)" : v.dump()) +
                          "; this trident reads format version " + std::to_string(kFormatVersion) +
                          " (load it with the trident that wrote it, or convert it there)");
  CheckpointIndex index;
  index.dir = dir;
  try {
    index.format_version = version;
    index.step = j.at("step").get<int64_t>();
    index.model = j.at("model");
    index.layout = j.at("layout");
    index.trainer = j.at("trainer");
    index.optimizer = j.at("optimizer");
    index.config_toml = j.value("config", "");
    for (const auto& [name, f] : j.at("files").items())
      index.files[name] = {f.at("bytes").get<int64_t>(), f.at("xxh64").get<std::string>()};
    for (const auto& [name, t] : j.at("tensors").items()) {
      TensorInfo info;
      info.dtype = t.at("dtype").get<std::string>();
      info.shape = t.at("shape").get<std::vector<int64_t>>();
      for (const auto& s : t.at("slices")) {
        SliceRef ref;
        ref.file = s.at("file").get<std::string>();
        ref.key = s.at("key").get<std::string>();
        ref.box.offsets = s.at("offsets").get<std::vector<int64_t>>();
        ref.box.shape = s.at("shape").get<std::vector<int64_t>>();
        if (ref.box.offsets.size() != info.shape.size() ||
            ref.box.shape.size() != info.shape.size())
          throw CheckpointError(where + ": a slice of " + name + " has the wrong rank");
        if (index.files.count(ref.file) == 0)
          throw CheckpointError(where + ": a slice of " + name + " is in " + ref.file +
                                ", which is not listed under \"files\"");
        info.slices.push_back(std::move(ref));
      }
      index.tensors[name] = std::move(info);
    }
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(where + " is malformed: " + e.what());
  }
  return index;
}

std::string resolve_checkpoint(const std::string& path, const std::string& checkpoint_dir) {
  auto follow_latest = [](const std::string& dir) {
    const std::string latest = dir + "/" + kLatestFile;
    std::string name = read_text(latest);
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (name.empty()) throw CheckpointError(latest + " is empty");
    return dir + "/" + name;
  };
  if (path == kLatestFile) {
    if (checkpoint_dir.empty())
      throw CheckpointError(
          "checkpoint.load = \"latest\" needs checkpoint.dir, the directory "
          "whose `latest` file names the checkpoint");
    if (!fs::exists(checkpoint_dir + "/" + kLatestFile))
      throw CheckpointError("checkpoint.load = \"latest\": " + checkpoint_dir +
                            "/latest does not exist (no checkpoint was saved in " + checkpoint_dir +
                            " yet)");
    return follow_latest(checkpoint_dir);
  }
  std::string dir = path;
  if (!fs::exists(dir) && !checkpoint_dir.empty() && fs::path(path).is_relative() &&
      fs::exists(checkpoint_dir + "/" + path))
    dir = checkpoint_dir + "/" + path;
  if (!fs::is_directory(dir))
    throw CheckpointError("checkpoint " + path + " does not exist (or is not a directory)");
  while (!dir.empty() && dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!fs::exists(dir + "/" + kIndexFile) && !is_hf_directory(dir) &&
      fs::exists(dir + "/" + kLatestFile))
    return follow_latest(dir);
  return dir;
}

CheckpointIndex read_index(const std::string& dir) {
  const std::string path = dir + "/" + kIndexFile;
  if (fs::exists(path)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text(path));
    } catch (const nlohmann::json::exception& e) {
      throw CheckpointError(path + " is not valid JSON (" + e.what() +
                            "); the checkpoint is damaged");
    }
    return index_from_json(j, dir);
  }
  if (is_hf_directory(dir)) return read_hf_index(dir);
  throw CheckpointError("checkpoint " + dir + " has no " + kIndexFile +
                        " (and is not a Hugging Face directory with model.safetensors and "
                        "config.json); a save that did not finish leaves no index");
}

CheckpointIndex open_checkpoint(const std::string& path, const std::string& checkpoint_dir) {
  return read_index(resolve_checkpoint(path, checkpoint_dir));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckpointError("cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw CheckpointError("cannot write " + tmp + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) throw CheckpointError("cannot fsync " + tmp + ": " + std::strerror(errno));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw CheckpointError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  fsync_directory(fs::path(path).parent_path().empty() ? "."
                                                       : fs::path(path).parent_path().string());
}

}  // namespace trident::checkpoint
