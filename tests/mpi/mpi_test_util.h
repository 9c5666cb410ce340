// What the multi-rank tests share: the layout a test runs, the tiny model, relative
// differences, and scratch directories that every rank of the job sees.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>

#include "models/gpt.h"  // GptOptions

namespace trident::testing {

/// One layout a test runs, named as its test and ctest entry name it (dp2_pp2_tp2_zero2_...).
struct Layout {
  std::string name;
  int dp = 1, pp = 1, tp = 1;
  int zero = 0;
  std::string schedule = "1f1b";
  bool checkpointing = false;
  int micro_batch_size = 2;
  std::string precision = "fp64";
  int64_t bucket_size = 2000;  // elements; small, so that gradients are reduced in several buckets
  std::vector<std::string> sets = {};  // further config overrides, "section.key=value"
  std::string model = "gpt2";          // the parity model: "gpt2", "llama" (untied), "llama_tied"
  int ep = 1;                          // expert parallelism, carved out of dp
  int cp = 1;                          // context parallelism: ranks splitting each sequence
  int world() const { return dp * cp * pp * tp; }
};

/// |a - b| / |b|, with b = 0 counting as the smallest double rather than dividing by zero.
double relative_difference(double a, double b);

/// The tiny GPT the ZeRO tests train (2 layers, hidden 16, 2 heads, vocabulary 32, 8 tokens).
GptOptions tiny_gpt(at::ScalarType dtype = at::kDouble);

/// A fresh directory, made by rank 0 of `comm` under /tmp as `prefix`XXXXXX, known to every
/// rank of `comm`.
std::string shared_temp_dir(MPI_Comm comm, const std::string& prefix);

/// Removes `dir` once every rank of `comm` is done with it.
void remove_shared(MPI_Comm comm, const std::string& dir);

}  // namespace trident::testing
