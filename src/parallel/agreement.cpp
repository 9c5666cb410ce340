// run_agreed: one allreduce of the failing rank, one broadcast of its message.
#include "parallel/agreement.h"

#include <climits>

#include "config/input_error.h"  // InputError

namespace trident {

void run_agreed(MPI_Comm comm, const std::function<void()>& fn) {
  std::string message;
  bool failed = false;
  int input_error = 0;  // an int, to travel in the broadcast with the message's length
  try {
    fn();
  } catch (const InputError& e) {
    failed = true;
    input_error = 1;
    message = e.what();
  } catch (const JobError& e) {  // from a nested run_agreed: keep its kind
    failed = true;
    input_error = e.input_error() ? 1 : 0;
    message = e.what();
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
  int header[2] = {static_cast<int>(message.size()), input_error};  // length, kind
  MPI_Bcast(header, 2, MPI_INT, first, comm);
  message.resize(header[0]);
  MPI_Bcast(message.data(), header[0], MPI_CHAR, first, comm);
  if (count < size) message = "rank " + std::to_string(first) + ": " + message;
  throw JobError(message, header[1] != 0);
}

}  // namespace trident
