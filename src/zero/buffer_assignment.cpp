// The assignment of parameters to flat buffers.
#include "zero/buffer_assignment.h"

#include "zero/muon.h"  // is_muon_matrix

namespace trident {

namespace {
/// The token embedding, tied to the output head; it gets a flat buffer of its own.
constexpr const char* kTokenEmbedding = "wte.weight";
}  // namespace

size_t buffer_of(const ParamSpec& spec, int64_t numel, int stage, int64_t persist_below,
                 bool muon) {
  if (spec.tied_copy || spec.name == kTokenEmbedding) return kEmbeddingBuffer;
  const bool persistent = stage == 3 && numel < persist_below;
  const size_t base = spec.expert ? (persistent ? kExpertPersistentBuffer : kExpertBuffer)
                                  : (persistent ? kPersistentBuffer : kShardedBuffer);
  return muon && is_muon_matrix(spec) ? kMuonBuffers + base : base;
}

std::vector<std::vector<size_t>> assign_buffers(const std::vector<Parameter>& params,
                                                const std::vector<int64_t>& numels, int stage,
                                                int64_t persist_below, bool muon) {
  std::vector<std::vector<size_t>> out(kNumZeroBuffers);
  for (size_t i = 0; i < params.size(); ++i)
    out[buffer_of(params[i].spec, numels.at(i), stage, persist_below, muon)].push_back(i);
  return out;
}

}  // namespace trident
