// The matmul ceiling: achieved FLOP/s of one square at::mm at a given intra-op thread
// count, the roof a CPU training step's model FLOP/s can be held against. Uses only
// libtorch, so it measures the BLAS libtorch was built with and nothing of trident.
//
//   matmul_ceiling [--size N] [--threads T] [--dtype float32|float64] [--seconds S]
//
// Prints one line of JSON on stdout: best and median GFLOP/s over the repetitions.
#include <ATen/ATen.h>      // at::mm_out, at::randn
#include <ATen/Parallel.h>  // at::set_num_threads

#include <algorithm>  // std::sort, std::max
#include <chrono>     // std::chrono::steady_clock
#include <cstdlib>    // std::strtoll, std::strtod
#include <iostream>   // std::cout, std::cerr
#include <stdexcept>  // std::invalid_argument
#include <string>
#include <vector>

namespace {

struct Options {
  int64_t size = 2048;  // 1024..4096 are within noise of each other; 2048 repeats often
  int threads = 1;
  std::string dtype = "float32";
  double seconds = 3.0;
};

const char* kUsage =
    "usage: matmul_ceiling [--size N (2048)] [--threads T (1)] "
    "[--dtype float32|float64] [--seconds S (3)]\n";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--help" || key == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(key + " needs a value\n" + kUsage);
    const std::string value = argv[++i];
    if (key == "--size") {
      o.size = std::stoll(value);
    } else if (key == "--threads") {
      o.threads = std::stoi(value);
    } else if (key == "--dtype") {
      o.dtype = value;
    } else if (key == "--seconds") {
      o.seconds = std::stod(value);
    } else {
      throw std::invalid_argument("unknown option " + key + "\n" + kUsage);
    }
  }
  if (o.size < 1) throw std::invalid_argument("--size must be at least 1");
  if (o.threads < 1) throw std::invalid_argument("--threads must be at least 1");
  if (o.dtype != "float32" && o.dtype != "float64")
    throw std::invalid_argument("--dtype must be float32 or float64, got " + o.dtype);
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    at::set_num_threads(o.threads);
    const at::ScalarType dtype = o.dtype == "float64" ? at::kDouble : at::kFloat;
    const int64_t n = o.size;
    at::manual_seed(0);
    at::Tensor a = at::randn({n, n}, at::TensorOptions().dtype(dtype));  // (N, N)
    at::Tensor b = at::randn({n, n}, at::TensorOptions().dtype(dtype));  // (N, N)
    // The output is reused so that a repetition times the kernel, not a fresh
    // allocation's page faults.
    at::Tensor c = at::empty({n, n}, a.options());
    const double flops =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);

    using Clock = std::chrono::steady_clock;
    auto time_one = [&] {
      const auto t0 = Clock::now();
      at::mm_out(c, a, b);
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    // Warm-up: at least two products and a tenth of the budget (thread pool, BLAS
    // buffers, caches, the CPU's clock).
    double warm = 0.0;
    for (int i = 0; i < 2 || warm < 0.1 * o.seconds; ++i) warm += time_one();

    std::vector<double> gflops;
    double spent = 0.0;
    while (gflops.size() < 3 || spent < o.seconds) {
      const double s = time_one();
      spent += s;
      gflops.push_back(flops / s / 1e9);
    }
    const double best = *std::max_element(gflops.begin(), gflops.end());
    std::cerr << "matmul_ceiling: " << gflops.size() << " repetitions of " << n << "^3 in " << spent
              << " s\n";
    std::cout << "{\"size\":" << n << ",\"threads\":" << o.threads << ",\"dtype\":\"" << o.dtype
              << "\",\"gflops_best\":" << best << ",\"gflops_median\":" << median(gflops)
              << ",\"repetitions\":" << gflops.size() << "}" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "matmul_ceiling: " << e.what() << "\n";
    return 1;
  }
}
