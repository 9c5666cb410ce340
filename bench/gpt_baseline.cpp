// A plain libtorch training loop of the GPT that trident trains at one rank (tp 1, pp 1,
// dp 1), written as a user would write it without trident: torch::nn modules, autograd,
// torch::optim::AdamW, clip_grad_norm_. The shapes and ops follow src/models/gpt.cpp, so
// its tokens/s is the reference a 1-rank trident run is held against. No trident code.
//
//   gpt_baseline --hidden 768 --layers 4 --heads 12 --seq 256 --vocab 50257
//                --micro-batch 4 --micro-batches 1 --steps 6 --threads 1 [--dtype float32]
//
// Per-step lines go to stderr; one line of JSON goes to stdout at the end.
#include <ATen/Parallel.h>  // at::set_num_threads
#include <torch/torch.h>    // torch::nn, torch::optim, torch::nn::utils::clip_grad_norm_

#include <algorithm>  // std::sort
#include <chrono>     // std::chrono::steady_clock
#include <cmath>      // std::sqrt, std::cos
#include <iostream>   // std::cout, std::cerr
#include <limits>     // std::numeric_limits
#include <map>        // std::map
#include <stdexcept>  // std::invalid_argument
#include <string>
#include <vector>

namespace {

/// The command line; the optimizer's defaults are configs/gpt2-124m.toml's.
struct Options {
  int64_t hidden = 768, layers = 4, heads = 12, seq = 256, vocab = 50257;
  int64_t vocab_multiple = 128;  // trident's model.vocab_multiple: 50257 -> 50304 rows
  int64_t micro_batch = 4, micro_batches = 1, steps = 6;
  int threads = 1;
  std::string dtype = "float32";
  double lr = 6e-4, min_lr = 6e-5, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double grad_clip = 1.0;  // 0 disables
  int64_t warmup_steps = 2000;
  uint64_t seed = 1234;

  int64_t padded_vocab() const {
    return (vocab + vocab_multiple - 1) / vocab_multiple * vocab_multiple;
  }
};

const char* kUsage =
    "usage: gpt_baseline [--hidden C] [--layers L] [--heads H] [--seq T] [--vocab V]\n"
    "  [--vocab-multiple M (128)] [--micro-batch B] [--micro-batches M] [--steps N]\n"
    "  [--threads T] [--dtype float32|float64] [--lr X] [--min-lr X] [--warmup-steps N]\n"
    "  [--weight-decay X] [--beta1 X] [--beta2 X] [--eps X] [--grad-clip X] [--seed S]\n";

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, int64_t*> ints{{"--hidden", &o.hidden},
                                       {"--layers", &o.layers},
                                       {"--heads", &o.heads},
                                       {"--seq", &o.seq},
                                       {"--vocab", &o.vocab},
                                       {"--vocab-multiple", &o.vocab_multiple},
                                       {"--micro-batch", &o.micro_batch},
                                       {"--micro-batches", &o.micro_batches},
                                       {"--steps", &o.steps},
                                       {"--warmup-steps", &o.warmup_steps}};
  std::map<std::string, double*> reals{{"--lr", &o.lr},
                                       {"--min-lr", &o.min_lr},
                                       {"--weight-decay", &o.weight_decay},
                                       {"--beta1", &o.beta1},
                                       {"--beta2", &o.beta2},
                                       {"--eps", &o.eps},
                                       {"--grad-clip", &o.grad_clip}};
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--help" || key == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(key + " needs a value\n" + kUsage);
    const std::string value = argv[++i];
    if (ints.count(key)) {
      *ints[key] = std::stoll(value);
    } else if (reals.count(key)) {
      *reals[key] = std::stod(value);
    } else if (key == "--threads") {
      o.threads = std::stoi(value);
    } else if (key == "--dtype") {
      o.dtype = value;
    } else if (key == "--seed") {
      o.seed = std::stoull(value);
    } else {
      throw std::invalid_argument("unknown option " + key + "\n" + kUsage);
    }
  }
  for (const auto& [name, v] : ints)
    if (*v < 1 && name != "--warmup-steps")
      throw std::invalid_argument(name + " must be at least 1");
  if (o.threads < 1) throw std::invalid_argument("--threads must be at least 1");
  if (o.hidden % o.heads != 0)
    throw std::invalid_argument("--hidden must be a multiple of --heads");
  if (o.dtype != "float32" && o.dtype != "float64")
    throw std::invalid_argument("--dtype must be float32 or float64, got " + o.dtype);
  return o;
}

namespace nn = torch::nn;

/// Pre-LayerNorm block: x + attn(ln_1(x)), then + mlp(ln_2(x)); fused QKV, tanh GELU.
struct BlockImpl : nn::Module {
  BlockImpl(int64_t c, int64_t heads)
      : heads(heads),
        ln_1(register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c}).eps(1e-5)))),
        qkv(register_module("qkv", nn::Linear(c, 3 * c))),
        attn_proj(register_module("attn_proj", nn::Linear(c, c))),
        ln_2(register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c}).eps(1e-5)))),
        fc(register_module("fc", nn::Linear(c, 4 * c))),
        mlp_proj(register_module("mlp_proj", nn::Linear(4 * c, c))) {}

  torch::Tensor attention(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / heads;
    // (B, T, 3C) -> (3, B, nh, T, hd)
    torch::Tensor all = qkv(x).view({B, T, 3, heads, hd}).permute({2, 0, 3, 1, 4});
    torch::Tensor q = all[0], k = all[1], v = all[2];
    torch::Tensor att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
    // Causal: a query sees no key after it (the mask is rebuilt each call, as trident does).
    torch::Tensor future = torch::ones({T, T}, torch::kBool).triu(1);  // (T, T)
    att = att.masked_fill(future, -std::numeric_limits<double>::infinity());
    att = torch::softmax(att, -1);             // (B, nh, T, T)
    torch::Tensor y = torch::matmul(att, v);   // (B, nh, T, hd)
    y = y.transpose(1, 2).reshape({B, T, C});  // (B, T, C)
    return attn_proj(y);
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = x + attention(ln_1(x));
    return h + mlp_proj(torch::gelu(fc(ln_2(h)), "tanh"));
  }

  int64_t heads;
  nn::LayerNorm ln_1;
  nn::Linear qkv, attn_proj;
  nn::LayerNorm ln_2;
  nn::Linear fc, mlp_proj;
};
TORCH_MODULE(Block);

/// Token and position embeddings, blocks, final LayerNorm, head tied to the token embedding.
struct GptImpl : nn::Module {
  explicit GptImpl(const Options& o) : o(o) {
    const int64_t c = o.hidden;
    wte = register_module("wte", nn::Embedding(o.padded_vocab(), c));
    wpe = register_module("wpe", nn::Embedding(o.seq, c));
    for (int64_t i = 0; i < o.layers; ++i)
      blocks.push_back(register_module("h" + std::to_string(i), Block(c, o.heads)));
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c}).eps(1e-5)));
    init_weights();
  }

  /// GPT-2's init: N(0, 0.02) matrices, residual projections N(0, 0.02/sqrt(2L)), zero
  /// biases, unit LayerNorms; the padding rows of the embedding are zero.
  void init_weights() {
    torch::NoGradGuard no_grad;
    const double residual_std = 0.02 / std::sqrt(2.0 * double(o.layers));
    wte->weight.normal_(0.0, 0.02);
    wte->weight.narrow(0, o.vocab, o.padded_vocab() - o.vocab).zero_();
    wpe->weight.normal_(0.0, 0.02);
    for (auto& b : blocks) {
      for (nn::Linear* l : {&b->qkv, &b->attn_proj, &b->fc, &b->mlp_proj}) {
        const bool residual = l == &b->attn_proj || l == &b->mlp_proj;
        (*l)->weight.normal_(0.0, residual ? residual_std : 0.02);
        (*l)->bias.zero_();
      }
    }
  }

  /// ids, targets (B, T) int64 -> the mean cross-entropy over the B*T tokens.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& targets) {
    const int64_t B = ids.size(0), T = ids.size(1);
    torch::Tensor x = wte(ids) + wpe->weight.narrow(0, 0, T);  // (B, T, C)
    for (auto& b : blocks) x = b(x);
    x = ln_f(x);
    // Tied head: (B*T, C) x (Vp, C)^T -> (B*T, Vp).
    torch::Tensor logits = torch::matmul(x.reshape({B * T, o.hidden}), wte->weight.t());
    // The padding columns take no probability: the loss is over the real vocabulary.
    return torch::nn::functional::cross_entropy(logits.narrow(1, 0, o.vocab),
                                                targets.reshape({B * T}));
  }

  Options o;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<Block> blocks;
  nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt);

/// Linear warm-up, then cosine decay to min_lr at the last step (trident's LrSchedule).
double lr_at(const Options& o, int64_t step) {
  if (o.warmup_steps > 0 && step <= o.warmup_steps)
    return o.lr * double(step) / double(o.warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, o.steps - o.warmup_steps);
  const double progress = std::min(1.0, double(step - o.warmup_steps) / double(decay_steps));
  return o.min_lr + (o.lr - o.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Model FLOPs of one step, as trident's Trainer::flops_per_step counts them.
double flops_per_step(const Options& o) {
  const double h = double(o.hidden), L = double(o.layers), T = double(o.seq);
  const double V = double(o.padded_vocab());
  const double per_token = 6.0 * (12.0 * L * h * h + V * h) + 6.0 * 2.0 * L * T * h;
  return per_token * double(o.micro_batch * o.micro_batches) * T;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Options& o) {
  at::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  const auto dtype = o.dtype == "float64" ? torch::kDouble : torch::kFloat;
  Gpt model(o);
  model->to(dtype);

  // AdamW decays the matrices (embeddings, linear weights), not biases or LayerNorms.
  std::vector<torch::Tensor> decay, no_decay;
  int64_t params = 0;
  for (const auto& p : model->parameters()) {
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
    params += p.numel();
  }
  auto adamw = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, adamw(o.weight_decay));
  groups.emplace_back(no_decay, adamw(0.0));
  torch::optim::AdamW optimizer(groups, torch::optim::AdamWOptions(o.lr));

  const int64_t B = o.micro_batch, T = o.seq, M = o.micro_batches;
  const double tokens = double(B * M * T);
  std::vector<double> step_times;
  double first_loss = 0.0, last_loss = 0.0;
  using Clock = std::chrono::steady_clock;
  for (int64_t step = 1; step <= o.steps; ++step) {
    const auto t0 = Clock::now();
    const double lr = lr_at(o, step);
    for (auto& g : optimizer.param_groups())
      static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    optimizer.zero_grad();
    double loss_sum = 0.0;
    double forward_s = 0.0, backward_s = 0.0;  // summed over the micro-batches
    for (int64_t k = 0; k < M; ++k) {
      torch::Tensor ids = torch::randint(o.vocab, {B, T + 1}, torch::kLong);  // (B, T+1)
      torch::Tensor input = ids.narrow(1, 0, T).contiguous();
      torch::Tensor targets = ids.narrow(1, 1, T).contiguous();
      const auto f0 = Clock::now();
      torch::Tensor loss = model->forward(input, targets) / double(M);
      loss_sum += loss.item<double>();
      const auto b0 = Clock::now();
      loss.backward();
      forward_s += seconds_since(f0) - seconds_since(b0);
      backward_s += seconds_since(b0);
    }
    const auto u0 = Clock::now();
    double grad_norm = 0.0;
    if (o.grad_clip > 0)
      grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), o.grad_clip);
    optimizer.step();
    const double update_s = seconds_since(u0);
    const double seconds = seconds_since(t0);
    step_times.push_back(seconds);
    if (step == 1) first_loss = loss_sum;
    last_loss = loss_sum;
    std::cerr << "step " << step << "/" << o.steps << " loss " << loss_sum << " grad_norm "
              << grad_norm << " lr " << lr << " time " << seconds << " s (forward " << forward_s
              << ", backward " << backward_s << ", clip+AdamW " << update_s << ") tokens/s "
              << tokens / seconds << "\n";
  }

  // The first two steps allocate the optimizer state and warm the allocator up.
  std::vector<double> steady(step_times.begin() + (step_times.size() > 2 ? 2 : 0),
                             step_times.end());
  const double step_time = median(steady);
  std::cout << "{\"tokens_per_s\":" << tokens / step_time << ",\"step_time_s\":" << step_time
            << ",\"steps\":" << o.steps << ",\"timed_steps\":" << steady.size()
            << ",\"params\":" << params << ",\"tflops\":" << flops_per_step(o) / step_time / 1e12
            << ",\"hidden\":" << o.hidden << ",\"layers\":" << o.layers << ",\"heads\":" << o.heads
            << ",\"seq\":" << o.seq << ",\"vocab\":" << o.vocab
            << ",\"padded_vocab\":" << o.padded_vocab() << ",\"micro_batch\":" << B
            << ",\"micro_batches\":" << M << ",\"threads\":" << o.threads << ",\"dtype\":\""
            << o.dtype << "\",\"loss_first\":" << first_loss << ",\"loss_last\":" << last_loss
            << "}" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "gpt_baseline: " << e.what() << "\n";
    return 1;
  }
}
