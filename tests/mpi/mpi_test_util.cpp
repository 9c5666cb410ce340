// The multi-rank tests' shared helpers.
#include "mpi_test_util.h"

#include <algorithm>   // std::max
#include <cmath>       // std::abs
#include <cstdlib>     // mkdtemp
#include <filesystem>  // std::filesystem::remove_all
#include <vector>

namespace trident::testing {

double relative_difference(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-300);
}

GptOptions tiny_gpt(at::ScalarType dtype) {
  GptOptions o;
  o.layers = 2;
  o.hidden = 16;
  o.heads = 2;
  o.vocab = 32;
  o.padded_vocab = 32;
  o.seq_len = 8;
  o.seed = 11;
  o.dtype = dtype;
  return o;
}

namespace {

int rank_in(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

}  // namespace

std::string shared_temp_dir(MPI_Comm comm, const std::string& prefix) {
  std::string dir;
  if (rank_in(comm) == 0) {
    std::string pattern = "/tmp/" + prefix + "XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    dir = mkdtemp(name.data());
  }
  int length = static_cast<int>(dir.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  dir.resize(length);
  MPI_Bcast(dir.data(), length, MPI_CHAR, 0, comm);
  return dir;
}

void remove_shared(MPI_Comm comm, const std::string& dir) {
  MPI_Barrier(comm);
  if (rank_in(comm) == 0) std::filesystem::remove_all(dir);
}

}  // namespace trident::testing
