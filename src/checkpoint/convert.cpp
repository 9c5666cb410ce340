// convert_checkpoint: per target rank, the model's parameter specs (one ModelStage per
// pipeline stage, built over a tp group that only knows its shape), the ZeRO ranges that
// rank owns, and a read of exactly those boxes from the source.
#include "checkpoint/convert.h"

#include <ATen/ATen.h>  // at::empty

#include <filesystem>  // std::filesystem
#include <map>         // std::map
#include <memory>      // std::unique_ptr
#include <random>      // std::random_device
#include <stdexcept>   // std::logic_error

#include "checkpoint/checkpoint.h"   // CheckpointError
#include "checkpoint/checksum.h"     // to_hex
#include "checkpoint/index.h"        // open_checkpoint, check_model, check_shape
#include "checkpoint/ownership.h"    // stores_param, zero_owned_ranges
#include "checkpoint/reader.h"       // SliceReader
#include "checkpoint/safetensors.h"  // dtype_from_name, fsync_directory
#include "checkpoint/writer.h"       // write_pieces, add_records, slice_file_name
#include "config/config.h"           // TrainConfig, to_toml
#include "models/model_config.h"     // make_model_stage
#include "models/model_stage.h"      // ModelStage
#include "parallel/agreement.h"      // run_agreed
#include "parallel/communicator.h"   // Communicator
#include "parallel/process_grid.h"   // ProcessGrid

namespace trident::checkpoint {

namespace fs = std::filesystem;

namespace {

/// A tp group that has a rank and a size and nothing else: building a ModelStage over it
/// gives the parameters' specs and shard shapes of any layout in one process.
class ShapeOnlyGroup : public Communicator {
 public:
  ShapeOnlyGroup(int rank, int size) : rank_(rank), size_(size), ranks_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  const std::vector<int>& world_ranks() const override { return ranks_; }
  WorkHandle all_reduce(at::Tensor, ReduceOp) override { return refuse(); }
  WorkHandle reduce_scatter(at::Tensor, at::Tensor, ReduceOp) override { return refuse(); }
  WorkHandle all_gather(at::Tensor, at::Tensor) override { return refuse(); }
  WorkHandle broadcast(at::Tensor, int) override { return refuse(); }
  WorkHandle send(at::Tensor, int, int) override { return refuse(); }
  WorkHandle recv(at::Tensor, int, int) override { return refuse(); }
  WorkHandle barrier() override { return refuse(); }
  WorkHandle all_to_all(at::Tensor, at::Tensor, const std::vector<int64_t>&,
                        const std::vector<int64_t>&) override {
    return refuse();
  }
  std::string broadcast_bytes(std::string, int) override { refuse(); }
  std::vector<std::string> gather_bytes(const std::string&, int) override { refuse(); }
  std::vector<std::string> all_gather_bytes(const std::string&) override { refuse(); }
  std::unique_ptr<Communicator> split(int, int, const std::string&, double) override { refuse(); }

 private:
  [[noreturn]] static WorkHandle refuse() {
    throw std::logic_error("a shape-only tp group cannot communicate");
  }
  int rank_, size_;
  std::vector<int> ranks_;
  std::string name_ = "tp (shapes only)";
};

/// The pieces target rank `c` stores, read from the source.
std::vector<StoredPiece> plan_rank(SliceReader& reader, const CheckpointIndex& source,
                                   const std::vector<Parameter>& params, const GridCoord& c,
                                   const TrainConfig& target) {
  const auto& p = target.parallel;
  const int tp = static_cast<int>(p.tp), zero = static_cast<int>(p.zero_stage);
  const std::vector<OwnedRange> ranges =
      zero_owned_ranges(params, p, c.dp, target.optimizer.name == OptimizerName::kMuon);
  std::vector<StoredPiece> pieces;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& spec = params[i].spec;
    if (!stores_param(spec, c.tp, c.dp, zero, static_cast<int>(p.ep)) || ranges[i].length == 0)
      continue;
    check_shape(source, spec, target.model.vocab);
    const std::string names[] = {spec.name, exp_avg_name(spec.name), exp_avg_sq_name(spec.name),
                                 master_name(spec.name)};
    for (const std::string& name : names) {
      const auto it = source.tensors.find(name);
      if (it == source.tensors.end()) continue;  // no master (or no optimizer state at all)
      const auto options = at::TensorOptions().dtype(dtype_from_name(it->second.dtype));
      for (const FlatPiece& fp :
           flat_range_boxes(local_shape(spec, tp), ranges[i].start, ranges[i].length)) {
        for (const ShardPiece& sp : shard_pieces(spec, c.tp, tp, fp.box)) {
          at::Tensor data = at::empty(sp.global.shape, options);
          reader.add(name, sp.global, data, /*zero_outside=*/spec.valid_rows >= 0);
          pieces.push_back({name, data, sp.global, spec.global_shape});
        }
      }
    }
  }
  return pieces;
}

}  // namespace

ConvertSummary convert_checkpoint(const std::string& in, const std::string& checkpoint_dir,
                                  const TrainConfig& target, const std::string& out,
                                  Communicator& comm) {
  const int me = comm.rank(), procs = comm.size();
  const auto& p = target.parallel;
  const ProcessGrid grid(static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp),
                         static_cast<int>(p.ep), static_cast<int>(p.cp));
  CheckpointIndex source;
  std::string tmp;
  run_agreed(comm, [&] {
    source = open_checkpoint(in, checkpoint_dir);
    check_model(source, target);
    if (me == 0) {
      if (fs::exists(out))
        throw CheckpointError("convert: " + out +
                              " exists; choose a new directory (nothing is "
                              "overwritten)");
      tmp = out + ".tmp_" + to_hex(std::random_device{}()).substr(8);
      fs::create_directories(tmp);
    }
  });
  tmp = comm.broadcast_bytes(tmp, 0);

  nlohmann::json records = nlohmann::json::array();
  run_agreed(comm, [&] {
    // (pipeline stage, ep rank) -> its specs: an ep rank holds its share of the experts.
    std::map<std::pair<int, int>, std::unique_ptr<ModelStage>> stages;
    std::map<int, std::unique_ptr<ShapeOnlyGroup>> ep_groups;  // outlive the stages above
    ShapeOnlyGroup group(0, grid.tp());
    for (int r = me; r < grid.world_size(); r += procs) {
      const GridCoord c = grid.coord_of(r);
      auto& ep = ep_groups[grid.ep_rank(c)];
      if (!ep) ep = std::make_unique<ShapeOnlyGroup>(grid.ep_rank(c), grid.ep());
      auto& stage = stages[{c.pp, grid.ep_rank(c)}];
      if (!stage)
        stage = make_model_stage(target, group, c.pp, grid.pp(), at::kCPU, false, ep.get());
      SliceReader reader(source);
      const std::vector<StoredPiece> pieces =
          plan_rank(reader, source, stage->params().params(), c, target);
      reader.verify();
      reader.execute();
      records.push_back(write_pieces(tmp, slice_file_name(c.dp, c.pp, c.tp), pieces));
    }
  });
  std::vector<std::string> mine;
  for (const auto& r : records) mine.push_back(r.dump());
  // One string per process: its records, one per line.
  std::string joined;
  for (const auto& m : mine) joined += m + "\n";
  const std::vector<std::string> gathered = comm.gather_bytes(joined, 0);

  ConvertSummary summary;
  summary.out = out;
  run_agreed(comm, [&] {
    if (me != 0) return;
    std::vector<std::string> all;
    for (const std::string& text : gathered) {
      size_t start = 0, end;
      while ((end = text.find('\n', start)) != std::string::npos) {
        all.push_back(text.substr(start, end - start));
        start = end + 1;
      }
    }
    CheckpointIndex index;
    index.step = source.step;
    index.model = model_json(target);
    index.model["dtype"] = source.model.value("dtype", index.model["dtype"].get<std::string>());
    index.layout = layout_json(target);
    index.trainer = source.trainer;
    index.optimizer = source.optimizer;
    if (weights_only(source)) {
      index.step = source.hugging_face ? 0 : source.step;
      index.trainer = {{"step", index.step},
                       {"data_position", index.step},
                       {"rng", "none"},
                       {"loss_scale", nullptr}};
      index.optimizer = {{"kind", "none"}};
    }
    index.optimizer["zero_stage"] = p.zero_stage;
    index.config_toml = to_toml(target);
    add_records(index, all);
    write_file_atomically(tmp + "/" + kIndexFile, index_to_json(index).dump(1));
    fs::rename(tmp, out);
    const fs::path parent = fs::absolute(out).parent_path();
    fsync_directory(parent.string());
    for (const auto& [file, info] : index.files) {
      ++summary.files;
      summary.bytes += info.bytes;
    }
  });
  const nlohmann::json counts = nlohmann::json::parse(
      comm.broadcast_bytes(nlohmann::json{summary.files, summary.bytes}.dump(), 0));
  summary.files = counts[0].get<int>();
  summary.bytes = counts[1].get<int64_t>();
  return summary;
}

}  // namespace trident::checkpoint
