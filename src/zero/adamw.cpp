// adam_update: AdamW's moments and step on flat tensors, whole or in chunks; and the
// float64 sum of squares of a flat fp32 gradient, which clipping scales the step by.
#include "zero/adamw.h"

#include <ATen/ATen.h>      // Tensor ops
#include <ATen/Parallel.h>  // at::parallel_for

#include <algorithm>  // std::min
#include <cmath>      // std::pow, std::sqrt
#include <vector>

namespace trident {

namespace {

/// The update's constants in the moments' dtype, as ATen rounds a double scalar.
template <typename T>
struct Coefficients {
  T scale, beta1, one_minus_beta1, beta2, one_minus_beta2, bias2_sqrt, eps, step;
};

template <typename T>
Coefficients<T> coefficients(double lr, int64_t step, double grad_scale, const AdamWOptions& o) {
  const double bias1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  return {static_cast<T>(grad_scale),    static_cast<T>(o.beta1),
          static_cast<T>(1.0 - o.beta1), static_cast<T>(o.beta2),
          static_cast<T>(1.0 - o.beta2), static_cast<T>(std::sqrt(bias2)),
          static_cast<T>(o.eps),         static_cast<T>(-lr / bias1)};
}

// One pass over [0, n) with each element's arithmetic written out: the same operations,
// in the same order, as adam_update's tensor ops on (grad * scale). This file is built
// without floating-point contraction, so the vectorised body and its scalar remainder
// round alike and an element's result does not depend on where a range or a thread's
// share begins. x86 builds carry an AVX2 clone, chosen at load time where the CPU has it.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TRIDENT_ADAMW_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TRIDENT_ADAMW_CLONES
#endif

template <typename T>
inline void update_elements(T* __restrict param, const T* __restrict grad, T* __restrict exp_avg,
                            T* __restrict exp_avg_sq, int64_t n, const Coefficients<T>& c) {
  for (int64_t i = 0; i < n; ++i) {
    const T g = grad[i] * c.scale;
    const T m = exp_avg[i] * c.beta1 + c.one_minus_beta1 * g;
    const T v = exp_avg_sq[i] * c.beta2 + c.one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = param[i] + c.step * (m / (std::sqrt(v) / c.bias2_sqrt + c.eps));
  }
}

TRIDENT_ADAMW_CLONES void update_float(float* param, const float* grad, float* exp_avg,
                                       float* exp_avg_sq, int64_t n, const Coefficients<float>& c) {
  update_elements(param, grad, exp_avg, exp_avg_sq, n, c);
}

TRIDENT_ADAMW_CLONES void update_double(double* param, const double* grad, double* exp_avg,
                                        double* exp_avg_sq, int64_t n,
                                        const Coefficients<double>& c) {
  update_elements(param, grad, exp_avg, exp_avg_sq, n, c);
}

void update_elements_of(float* p, const float* g, float* m, float* v, int64_t n,
                        const Coefficients<float>& c) {
  update_float(p, g, m, v, n, c);
}
void update_elements_of(double* p, const double* g, double* m, double* v, int64_t n,
                        const Coefficients<double>& c) {
  update_double(p, g, m, v, n, c);
}

/// The fused pass over n elements of contiguous tensors of one dtype, over the intra-op
/// threads (each takes a run of whole elements: no element depends on another).
template <typename T>
void fused_update(at::Tensor& master, const at::Tensor& grad, at::Tensor& exp_avg,
                  at::Tensor& exp_avg_sq, int64_t n, const Coefficients<T>& c) {
  T* p = master.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  T* m = exp_avg.data_ptr<T>();
  T* v = exp_avg_sq.data_ptr<T>();
  at::parallel_for(0, n, at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
    update_elements_of(p + begin, g + begin, m + begin, v + begin, end - begin, c);
  });
}

/// Σ x² over n floats in float64, eight running sums (so that the loop vectorises), added
/// pairwise at the end.
TRIDENT_ADAMW_CLONES double float_sum_of_squares(const float* x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      const double v = x[i + j];
      acc[j] += v * v;
    }
  for (int j = 0; i < n; ++i, ++j) {
    const double v = x[i];
    acc[j] += v * v;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

bool fusable(const at::Tensor& master, const at::Tensor& grad, const at::Tensor& exp_avg,
             const at::Tensor& exp_avg_sq) {
  const at::ScalarType t = exp_avg.scalar_type();
  return (t == at::kFloat || t == at::kDouble) && master.scalar_type() == t &&
         grad.scalar_type() == t && exp_avg_sq.scalar_type() == t && master.is_cpu() &&
         grad.is_cpu() && exp_avg.is_cpu() && exp_avg_sq.is_cpu() && master.is_contiguous() &&
         grad.is_contiguous() && exp_avg.is_contiguous() && exp_avg_sq.is_contiguous();
}

}  // namespace

double sum_of_squares(const at::Tensor& x) {
  TORCH_CHECK(x.scalar_type() == at::kFloat && x.is_cpu() && x.dim() == 1 && x.is_contiguous(),
              "sum_of_squares: a flat, contiguous fp32 host tensor expected, got ", x.sizes(), " ",
              x.scalar_type());
  const float* data = x.data_ptr<float>();
  const int64_t n = x.numel();
  const int64_t blocks = (n + kSquaresBlock - 1) / kSquaresBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  // Fixed blocks summed in order: the result does not depend on the number of threads.
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b * kSquaresBlock;
      partial[static_cast<size_t>(b)] =
          float_sum_of_squares(data + first, std::min(kSquaresBlock, n - first));
    }
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void adam_update(at::Tensor& master, const at::Tensor& grad, at::Tensor& exp_avg,
                 at::Tensor& exp_avg_sq, double lr, int64_t step, const AdamWOptions& o) {
  exp_avg.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
  exp_avg_sq.mul_(o.beta2).addcmul_(grad, grad, 1.0 - o.beta2);
  const double bias1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  at::Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bias2)).add_(o.eps);
  master.addcdiv_(exp_avg, denom, -lr / bias1);
}

void adam_update_chunks(at::Tensor master, const at::Tensor& grad, at::Tensor exp_avg,
                        at::Tensor exp_avg_sq, double lr, int64_t step, double grad_scale,
                        const AdamWOptions& o, int64_t chunk) {
  const int64_t n = master.numel();
  at::Tensor g = grad.narrow(0, 0, n), m1 = exp_avg.narrow(0, 0, n),
             m2 = exp_avg_sq.narrow(0, 0, n);
  // One pass that reads and writes each element once, instead of a dozen tensor ops and
  // their temporaries per chunk: the step is bound by memory, and on CPUs every op also
  // costs a dispatch and a fork of the intra-op threads.
  if (fusable(master, g, m1, m2)) {
    if (master.scalar_type() == at::kFloat)
      fused_update(master, g, m1, m2, n, coefficients<float>(lr, step, grad_scale, o));
    else
      fused_update(master, g, m1, m2, n, coefficients<double>(lr, step, grad_scale, o));
    return;
  }
  for (int64_t i = 0; i < n; i += chunk) {
    const int64_t c = std::min(chunk, n - i);
    at::Tensor m = master.narrow(0, i, c), a = m1.narrow(0, i, c), b = m2.narrow(0, i, c);
    const at::Tensor scaled = g.narrow(0, i, c).to(exp_avg.scalar_type()) * grad_scale;
    adam_update(m, scaled, a, b, lr, step, o);
  }
}

}  // namespace trident
