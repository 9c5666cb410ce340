// evaluate_token_file: a forward-only pipeline loop (activations passed stage to stage over
// the pp group), the token losses summed on the last stage and agreed by every rank.
#include "train/evaluate.h"

#include <ATen/ATen.h>            // Tensor ops
#include <ATen/core/grad_mode.h>  // at::NoGradGuard

#include <vector>  // std::vector

#include "config/input_error.h"         // InputError
#include "data/data_error.h"            // data::DataError
#include "data/token_file.h"            // data::TokenFile
#include "parallel/agreement.h"         // run_agreed
#include "parallel/parallel_context.h"  // ParallelContext

namespace trident {

EvalResult evaluate_token_file(ModelStage& model, ParallelContext& ctx,
                               const std::string& data_path, int64_t sequences, int64_t seq_len,
                               int64_t micro_batch) {
  const int64_t K = sequences, T = seq_len;
  const int dp = ctx.grid().dp(), dp_rank = ctx.coord().dp;
  // This pipeline's windows, in micro-batches; read on the first and the last stage only.
  std::vector<int64_t> mine;
  for (int64_t i = dp_rank; i < K; i += dp) mine.push_back(i);
  const int64_t windows = static_cast<int64_t>(mine.size());
  // With expert parallelism the dp ranks of an ep group meet in every MoE layer's
  // all-to-all, so each runs as many micro-batches as dp rank 0, which has the most
  // windows: the extra ones are window 0 again, their loss dropped.
  const int64_t paced_by = ctx.grid().ep() > 1 ? (K + dp - 1) / dp : windows;
  const int64_t micro_batches = (paced_by + micro_batch - 1) / micro_batch;
  if (micro_batches * micro_batch - micro_batch >= windows) mine.push_back(0);  // pads
  std::vector<int32_t> tokens;
  run_agreed(ctx.world(), [&] {
    if (K < 1) throw InputError("eval: --sequences must be at least 1");
    if (T < 1 || T > model.dims().seq_len)
      throw InputError("eval: --seq-len " + std::to_string(T) + " must be in [1, model.seq_len = " +
                       std::to_string(model.dims().seq_len) + "]");
    const int64_t shards = model.dims().sequence_shards;
    if (T % shards != 0)
      throw InputError("eval: --seq-len " + std::to_string(T) +
                       " is not divisible by parallel.tp = " + std::to_string(shards) +
                       ", over which parallel.sequence_parallel splits the sequence; use a "
                       "multiple of " +
                       std::to_string(shards));
    const data::TokenFile file = data::TokenFile::open(data_path);
    if (file.size() < K * T + 1)
      throw data::DataError("eval: data file " + data_path + " has " + std::to_string(file.size()) +
                            " tokens; " + std::to_string(K) + " windows of " + std::to_string(T) +
                            " need " + std::to_string(K * T + 1));
    if (!model.is_first() && !model.is_last()) return;
    tokens.resize(mine.size() * static_cast<size_t>(T + 1));
    for (size_t w = 0; w < mine.size(); ++w) {
      int32_t* out = tokens.data() + w * (T + 1);
      file.read(mine[w] * T, T + 1, out);
      for (int64_t t = 0; t <= T; ++t)
        if (out[t] < 0 || out[t] >= model.dims().vocab)
          throw data::DataError(
              "eval: data file " + data_path + " has token " + std::to_string(out[t]) +
              " at position " + std::to_string(mine[w] * T + t) +
              ", outside the model's vocabulary of " + std::to_string(model.dims().vocab));
    }
  });

  at::NoGradGuard no_grad;
  Communicator& pp = ctx.pp();
  const int stage = pp.rank(), stages = pp.size();
  double loss_sum = 0.0;
  const int chunks = model.num_chunks();
  for (int64_t mb = 0; mb < micro_batches; ++mb) {
    const bool padding = mb * micro_batch >= windows;  // window 0 again, not counted
    const int64_t first = padding ? windows : mb * micro_batch;
    const int64_t B = padding ? 1 : std::min(micro_batch, windows - first);
    at::Tensor ids, targets;
    if (model.is_first() || model.is_last()) {
      at::Tensor block = at::from_blob(tokens.data() + first * (T + 1), {B, T + 1}, at::kInt)
                             .to(ctx.device(), at::kLong);
      ids = block.narrow(1, 0, T).contiguous();      // (B, T)
      targets = block.narrow(1, 1, T).contiguous();  // (B, T)
    }
    // Through the virtual pipeline: chunk c of stage s is virtual stage c * stages + s, so
    // each chunk takes its input from the previous rank (round the ring between chunks).
    for (int c = 0; c < chunks; ++c) {
      ModelStage& chunk = model.chunk(c);
      const int tag = static_cast<int>(mb * chunks + c);
      at::Tensor input;
      if (chunk.is_first()) {
        input = ids;
      } else {
        // With sequence parallelism each tp rank receives its slice of the sequence.
        input = at::empty({B, T / model.dims().sequence_shards, model.dims().hidden},
                          at::TensorOptions().dtype(model.dims().dtype).device(ctx.device()));
        pp.recv(input, (stage + stages - 1) % stages, stage > 0 ? tag : tag - 1)->wait();
      }
      at::Tensor out = chunk.forward(input, targets, 1.0);
      if (chunk.is_last()) {
        if (!padding) loss_sum += out.item<double>();  // the sum of its token losses
      } else {
        pp.send(out.contiguous(), (stage + 1) % stages, tag)->wait();
      }
    }
  }
  at::Tensor total = at::full({1}, loss_sum, at::kDouble);
  ctx.dp().all_reduce(total)->wait();
  pp.broadcast(total, stages - 1)->wait();
  return {total.item<double>() / static_cast<double>(K * T), K * T};
}

}  // namespace trident
