// Trainer::validate and its pieces: the forward-only schedule, the eval set's slots in
// global batches, and the per-source loss sums agreed by every rank.
#include "train/validation.h"

#include <ATen/ATen.h>            // at::from_blob
#include <ATen/core/grad_mode.h>  // at::NoGradGuard

#include <chrono>
#include <map>

#include "data/eval_set.h"              // data::EvalSet
#include "data/tokenizer.h"             // data::ByteTokenizer
#include "models/model_stage.h"         // ModelStage, MoeLayerStats
#include "parallel/parallel_context.h"  // ParallelContext
#include "train/generate.h"             // generate
#include "train/trainer.h"
#include "zero/param_gatherer.h"  // ParamGatherer::release_all
#include "zero/zero_optimizer.h"

namespace trident {

pipeline::Schedule forward_only(const pipeline::Schedule& schedule) {
  using pipeline::Op;
  pipeline::Schedule out;
  for (const pipeline::Instruction& ins : schedule)
    if (ins.op == Op::kRecvActivation || ins.op == Op::kForward || ins.op == Op::kSendActivation ||
        ins.op == Op::kReduceGrads || ins.op == Op::kOptimizerStep)
      out.push_back(ins);  // the step's end waits for the sends; its hooks are left unset
  return out;
}

EvalSlots lay_out_eval_slots(const std::vector<int>& source_of_sequence, int sources,
                             int64_t micro_batch, int64_t global_batch) {
  EvalSlots slots;
  for (int s = 0; s < sources; ++s) {
    int64_t placed = 0;
    for (size_t i = 0; i < source_of_sequence.size(); ++i) {
      if (source_of_sequence[i] != s) continue;
      slots.sequence.push_back(static_cast<int64_t>(i));
      slots.source.push_back(s);
      ++placed;
    }
    for (; placed % micro_batch != 0; ++placed) {
      slots.sequence.push_back(-1);
      slots.source.push_back(s);
    }
  }
  while (static_cast<int64_t>(slots.sequence.size()) % global_batch != 0) {
    slots.sequence.push_back(-1);
    slots.source.push_back(0);
  }
  slots.batches = static_cast<int64_t>(slots.sequence.size()) / global_batch;
  return slots;
}

ValidationResult Trainer::validate() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  TORCH_CHECK(eval_set_ != nullptr, "validate: the run has no eval set ([eval])");
  const data::EvalSet& set = *eval_set_;
  const int sources = static_cast<int>(set.source_names().size());
  const int64_t B = config_.train.micro_batch_size, G = config_.train.global_batch_size;
  const int64_t T = config_.model.seq_len, m = config_.micro_batches();
  std::vector<int> source_of(static_cast<size_t>(set.size()));
  for (int64_t i = 0; i < set.size(); ++i) source_of[static_cast<size_t>(i)] = set.source_of(i);
  const EvalSlots slots = lay_out_eval_slots(source_of, sources, B, G);

  ValidationResult result;
  // The tokens each source counts, on every rank alike from the set itself (no collective).
  result.tokens_by_source.assign(static_cast<size_t>(sources), 0);
  std::vector<int32_t> row(static_cast<size_t>(T + 1));
  for (int64_t i = 0; i < set.size(); ++i) {
    set.sequence(i, T + 1, row.data());
    result.tokens_by_source[static_cast<size_t>(source_of[static_cast<size_t>(i)])] +=
        counted_targets(row.data(), T);
  }

  const pipeline::Schedule schedule = forward_only(schedule_);
  const int64_t data_rank = ctx_.grid().data_rank(ctx_.coord());
  std::vector<double> sums(static_cast<size_t>(sources), 0.0);
  {
    at::NoGradGuard no_grad;
    StepHooks hooks;  // nothing to reduce or update
    for (int64_t b = 0; b < slots.batches; ++b) {
      auto rows = [&](int k) {
        const int64_t first = b * G + (data_rank * m + k) * B;
        std::vector<int64_t> sequences(slots.sequence.begin() + first,
                                       slots.sequence.begin() + first + B);
        return eval_micro_batch(sequences);
      };
      const StepResult r = runtime_->run(schedule, rows, 1.0, hooks);
      for (const auto& [k, loss] : r.micro_batch_losses)
        sums[static_cast<size_t>(
            slots.source[static_cast<size_t>(b * G + (data_rank * m + k) * B)])] += loss;
    }
  }
  if (ParamGatherer* gatherer = optimizer_->layer_scope()) gatherer->release_all();
  if (config_.model.moe_experts > 0) {
    std::map<int64_t, MoeLayerStats> dropped;  // the evaluation's routing is not the step's
    model_->take_moe_statistics(dropped);
  }

  // Summed over dp on the last stage, then sent to every stage, as a step's loss is.
  at::Tensor total = at::from_blob(sums.data(), {sources}, at::kDouble).clone();
  ctx_.dp().all_reduce(total)->wait();
  ctx_.pp().broadcast(total, ctx_.grid().pp() - 1)->wait();
  double loss_sum = 0.0;
  for (int s = 0; s < sources; ++s) {
    const double sum = total[s].item<double>();
    const int64_t n = result.tokens_by_source[static_cast<size_t>(s)];
    result.loss_by_source.push_back(n > 0 ? sum / static_cast<double>(n) : 0.0);
    loss_sum += sum;
    result.tokens += n;
  }
  result.loss = loss_sum / static_cast<double>(std::max<int64_t>(result.tokens, 1));
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

std::string Trainer::sample(int64_t step) {
  const data::ByteTokenizer bytes;
  std::vector<int64_t> prompt;
  for (int32_t id : bytes.encode(config_.eval.sample_prompt)) prompt.push_back(id);
  GenerateOptions options;
  options.tokens = config_.eval.sample_tokens;
  options.sampling.temperature = 0.8;
  options.sampling.top_k = 40;
  options.sampling.seed =
      static_cast<uint64_t>(config_.train.seed) * 1000003u + static_cast<uint64_t>(step);
  const Generation g = generate(*model_, ctx_.tp(), prompt, options);
  return bytes.decode(std::vector<int32_t>(g.tokens.begin(), g.tokens.end()));
}

std::string Trainer::eval_description() const {
  return eval_set_ ? eval_set_->describe() : std::string("none");
}

std::vector<std::string> Trainer::eval_sources() const {
  return eval_set_ ? eval_set_->source_names() : std::vector<std::string>{};
}

}  // namespace trident
