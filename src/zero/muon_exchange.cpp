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
                           at::TensorOptions state_options)
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
      index[m.name] = matrices_.size();
      matrices_.push_back(m);
    }
  }
  for (size_t i : held) held_to_matrix_.push_back(index.at(params[i].spec.name));

  const int ranks = stage.size();
  std::vector<double> cost(matrices_.size());
  for (size_t m = 0; m < matrices_.size(); ++m) cost[m] = cost_of(matrices_[m].spec);
  const std::vector<int> owners = assign_owners(cost, ranks);
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  for (size_t m = 0; m < matrices_.size(); ++m) {
    matrices_[m].owner = owners[m];
    load[static_cast<size_t>(owners[m])] += cost[m];
  }
  std::vector<int64_t> filled(static_cast<size_t>(ranks), 0);
  for (Matrix& m : matrices_) {
    m.offset = filled[static_cast<size_t>(m.owner)];
    filled[static_cast<size_t>(m.owner)] += m.shape[0] * m.shape[1];
  }
  block_ = *std::max_element(filled.begin(), filled.end());
  double total = 0, most = 0;
  for (double l : load) {
    total += l;
    most = std::max(most, l);
  }
  imbalance_ = total > 0 ? most / (total / ranks) : 1.0;
  buffer_ = at::zeros({block_ * ranks}, state_options);
  owned_ = at::zeros({block_}, state_options);
}

void MuonExchange::begin() { buffer_.zero_(); }

at::Tensor MuonExchange::slot(size_t k) {
  const Matrix& m = matrices_[held_to_matrix_.at(k)];
  return buffer_.narrow(0, m.owner * block_ + m.offset, m.shape[0] * m.shape[1]).view(m.shape);
}

void MuonExchange::run() {
  stage_.reduce_scatter(owned_, buffer_)->wait();
  for (const Matrix& m : matrices_) {
    if (m.owner != stage_.rank()) continue;
    const at::Tensor whole = owned_.narrow(0, m.offset, m.shape[0] * m.shape[1]).view(m.shape);
    for (at::Tensor u : logical_matrices(m.spec, whole))
      u.copy_(newton_schulz(u, options_.ns_steps) *
              muon_scale(u.size(0), u.size(1), options_.spectral));
  }
  stage_.all_gather(buffer_, owned_)->wait();
}

int64_t MuonExchange::bytes() const {
  return (buffer_.numel() + owned_.numel()) * static_cast<int64_t>(buffer_.element_size());
}

}  // namespace trident
