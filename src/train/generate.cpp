// The decoding loop: prompt, then token by token, logits gathered over tp.
#include "train/generate.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>  // TORCH_CHECK

#include "models/kv_cache.h"        // KvCache
#include "parallel/communicator.h"  // Communicator::all_gather

namespace trident {

namespace {

/// The last position's logits over the whole vocabulary (vocab) in float64, from each tp
/// rank's slice (B = 1, n, V/tp): rank r's slice is rows [r V/tp, (r+1) V/tp).
at::Tensor full_logits(const at::Tensor& local, Communicator& tp, int64_t vocab) {
  const at::Tensor last = local.select(0, 0).select(0, local.size(1) - 1).contiguous();
  at::Tensor all = last;
  if (tp.size() > 1) {
    all = at::empty({last.size(0) * tp.size()}, last.options());
    tp.all_gather(all, last)->wait();
  }
  return all.narrow(0, 0, vocab).to(at::kCPU, at::kDouble);
}

std::vector<double> to_vector(const at::Tensor& t) {
  const double* p = t.data_ptr<double>();
  return std::vector<double>(p, p + t.numel());
}

}  // namespace

Generation generate(ModelStage& model, Communicator& tp, const std::vector<int64_t>& prompt,
                    const GenerateOptions& o) {
  TORCH_CHECK(!prompt.empty(), "generate: the prompt has no tokens");
  const int64_t positions = model.dims().seq_len;
  const int64_t length = static_cast<int64_t>(prompt.size()) + o.tokens;
  TORCH_CHECK(length <= positions, "generate: the prompt's ", prompt.size(), " tokens and ",
              o.tokens, " new ones make ", length, " positions, more than the model's ", positions,
              " (model.seq_len)");
  const auto ids_options = at::TensorOptions().dtype(at::kLong);
  std::vector<int64_t> sequence = prompt;
  Generation out;
  KvCache cache;
  for (int64_t i = 0; i < o.tokens; ++i) {
    at::Tensor ids;
    if (o.kv_cache) {
      // The tokens the cache has not seen: the prompt at first, then the newest token.
      const int64_t seen = cache.length;
      ids = at::tensor(std::vector<int64_t>(sequence.begin() + seen, sequence.end()), ids_options);
    } else {
      cache = KvCache{};
      ids = at::tensor(sequence, ids_options);
    }
    ids = ids.view({1, -1}).to(model.dims().device);
    const at::Tensor logits = full_logits(model.decode(ids, cache), tp, model.dims().vocab);
    const int64_t token =
        sample_token(to_vector(logits), o.sampling, static_cast<int64_t>(sequence.size()));
    sequence.push_back(token);
    out.tokens.push_back(token);
    if (o.keep_logits) out.logits.push_back(logits);
  }
  return out;
}

}  // namespace trident
