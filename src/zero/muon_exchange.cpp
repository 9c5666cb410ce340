// MuonExchange: the stage's list of matrices, their owners, and the step's exchange.
#include "zero/muon_exchange.h"

#include <ATen/ATen.h>           // Tensor ops
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::sort, std::min_element
#include <map>        // std::map
#include <numeric>    // std::iota
#include <sstream>    // std::istringstream, std::ostringstream

#include "parallel/communicator.h"  // Communicator

namespace trident {

namespace {

/// One line per parameter: name, rows, cols, fused chunks, split dimension.
std::string describe(const std::vector<Parameter>& params, const std::vector<size_t>& held) {
  std::ostringstream out;
  for (size_t i : held) {
    const ParamSpec& s = params[i].spec;
    out << s.name << ' ' << s.global_shape[0] << ' ' << s.global_shape[1] << ' '
        << s.shard.fused_chunks << ' ' << s.shard.dim << '\n';
  }
  return out.str();
}

/// Newton-Schulz's work on a matrix: each iteration's products cost rows * cols * min.
double cost_of(const ParamSpec& spec) {
  const at::Tensor shape_only = at::empty(spec.global_shape, at::TensorOptions().device(at::kMeta));
  double cost = 0;
  for (const at::Tensor& m : logical_matrices(spec, shape_only))
    cost += static_cast<double>(m.size(0)) * static_cast<double>(m.size(1)) *
            static_cast<double>(std::min(m.size(0), m.size(1)));
  return cost;
}

}  // namespace

std::vector<int> assign_owners(const std::vector<double>& cost, int ranks) {
  std::vector<size_t> order(cost.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  std::vector<int> owner(cost.size(), 0);
  for (size_t m : order) {
    const auto least = std::min_element(load.begin(), load.end());
    owner[m] = static_cast<int>(least - load.begin());
    *least += cost[m];
  }
  return owner;
}

MuonExchange::MuonExchange(const std::vector<Parameter>& params, std::vector<size_t> held,
                           Communicator& stage, const MuonOptions& options,
                           at::TensorOptions state_options, int64_t round_elements)
    : stage_(stage), options_(options) {
  // The stage's matrices: every rank's list, in rank order, each name once (a matrix held
  // by several ranks, as tp shards or dp replicas, is one matrix).
  std::map<std::string, size_t> index;
  for (const std::string& text : stage.all_gather_bytes(describe(params, held))) {
    std::istringstream in(text);
    Matrix m;
    int64_t rows = 0, cols = 0;
    while (in >> m.name >> rows >> cols >> m.spec.shard.fused_chunks >> m.spec.shard.dim) {
      if (index.count(m.name)) continue;
      m.shape = {rows, cols};
      m.spec.name = m.name;
      m.spec.global_shape = m.shape;
      m.cost = cost_of(m.spec);
      index[m.name] = matrices_.size();
      matrices_.push_back(m);
    }
  }
  for (size_t i : held) held_to_matrix_.push_back(index.at(params[i].spec.name));

  // Rounds: consecutive matrices while their exchange fits round_elements.
  const int ranks = stage.size();
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  int64_t largest = 0;
  size_t first = 0;
  for (size_t m = 0; m < matrices_.size(); ++m) {
    if (m > first) {
      std::vector<double> trial(static_cast<size_t>(ranks), 0.0);
      const int64_t block = place_round(first, m + 1, rounds(), trial);
      if (block * (ranks + 1) > round_elements) {  // the stage's blocks and this rank's
        const int64_t closed = place_round(first, m, rounds(), load);
        round_blocks_.push_back(closed);
        first = m;
      }
    }
  }
  if (first < matrices_.size() || matrices_.empty()) {
    const int64_t block = place_round(first, matrices_.size(), rounds(), load);
    round_blocks_.push_back(block);
  }
  for (int64_t b : round_blocks_) largest = std::max(largest, b);
  double total = 0, most = 0;
  for (double l : load) {
    total += l;
    most = std::max(most, l);
  }
  imbalance_ = total > 0 ? most / (total / ranks) : 1.0;
  buffer_ = at::zeros({largest * ranks}, state_options);
  owned_ = at::zeros({largest}, state_options);
}

int64_t MuonExchange::place_round(size_t first, size_t last, int round, std::vector<double>& load) {
  const int ranks = static_cast<int>(load.size());
  std::vector<double> cost;
  for (size_t m = first; m < last; ++m) cost.push_back(matrices_[m].cost);
  const std::vector<int> owners = assign_owners(cost, ranks);
  std::vector<int64_t> filled(static_cast<size_t>(ranks), 0);
  for (size_t m = first; m < last; ++m) {
    Matrix& x = matrices_[m];
    x.round = round;
    x.owner = owners[m - first];
    x.offset = filled[static_cast<size_t>(x.owner)];
    filled[static_cast<size_t>(x.owner)] += x.shape[0] * x.shape[1];
    load[static_cast<size_t>(x.owner)] += cost[m - first];
  }
  return *std::max_element(filled.begin(), filled.end());
}

int MuonExchange::round_of(size_t k) const { return matrices_[held_to_matrix_.at(k)].round; }

void MuonExchange::begin(int round) {
  buffer_.narrow(0, 0, round_blocks_.at(static_cast<size_t>(round)) * stage_.size()).zero_();
}

at::Tensor MuonExchange::slot(size_t k) {
  const Matrix& m = matrices_[held_to_matrix_.at(k)];
  const int64_t block = round_blocks_[static_cast<size_t>(m.round)];
  return buffer_.narrow(0, m.owner * block + m.offset, m.shape[0] * m.shape[1]).view(m.shape);
}

void MuonExchange::run(int round) {
  const int64_t block = round_blocks_.at(static_cast<size_t>(round));
  at::Tensor owned = owned_.narrow(0, 0, block), all = buffer_.narrow(0, 0, block * stage_.size());
  stage_.reduce_scatter(owned, all)->wait();
  for (const Matrix& m : matrices_) {
    if (m.round != round || m.owner != stage_.rank()) continue;
    const at::Tensor whole = owned.narrow(0, m.offset, m.shape[0] * m.shape[1]).view(m.shape);
    for (at::Tensor u : logical_matrices(m.spec, whole))
      u.copy_(newton_schulz(u, options_.ns_steps) *
              muon_scale(u.size(0), u.size(1), options_.spectral));
  }
  stage_.all_gather(all, owned)->wait();
}

std::string MuonExchange::description() const {
  size_t logical = 0;
  for (const Matrix& m : matrices_)
    logical += static_cast<size_t>(std::max(1, m.spec.shard.fused_chunks));
  std::ostringstream out;
  out.precision(3);
  out << matrices_.size() << " parameters (" << logical
      << " matrices) orthogonalised whole, each on "
      << "one of the stage's " << stage_.size() << " ranks, in " << rounds()
      << (rounds() == 1 ? " round" : " rounds") << " through a "
      << static_cast<double>(bytes()) / (1 << 20) << " MiB buffer; the busiest owner does "
      << imbalance_ << "x the mean work";
  return out.str();
}

int64_t MuonExchange::bytes() const {
  return (buffer_.numel() + owned_.numel()) * static_cast<int64_t>(buffer_.element_size());
}

}  // namespace trident
