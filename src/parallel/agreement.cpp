// run_agreed: one allreduce of the failing rank, one broadcast of its message.
#include "parallel/agreement.h"

#include <climits>

namespace trident {

void run_agreed(MPI_Comm comm, const std::function<void()>& fn) {
  std::string message;
  bool failed = false;
  try {
    fn();
  } catch (const std::exception& e) {
    failed = true;
    message = e.what();
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine[2] = {failed ? rank : INT_MAX, failed ? 1 : 0};
  int first = INT_MAX, count = 0;
  MPI_Allreduce(&mine[0], &first, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&mine[1], &count, 1, MPI_INT, MPI_SUM, comm);
  if (first == INT_MAX) return;
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  message.resize(length);
  MPI_Bcast(message.data(), length, MPI_CHAR, first, comm);
  if (count < size) message = "rank " + std::to_string(first) + ": " + message;
  throw JobError(message);
}

}  // namespace trident
