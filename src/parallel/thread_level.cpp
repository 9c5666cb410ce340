// The check of the MPI library's thread support against what trident needs.
#include "parallel/thread_level.h"

namespace trident {

const char* thread_level_name(ThreadLevel level) {
  switch (level) {
    case ThreadLevel::kSingle:
      return "MPI_THREAD_SINGLE";
    case ThreadLevel::kFunneled:
      return "MPI_THREAD_FUNNELED";
    case ThreadLevel::kSerialized:
      return "MPI_THREAD_SERIALIZED";
    case ThreadLevel::kMultiple:
      break;
  }
  return "MPI_THREAD_MULTIPLE";
}

std::string thread_level_shortfall(ThreadLevel provided, ThreadLevel needed) {
  if (provided >= needed) return "";
  return std::string("the MPI library gives thread support ") + thread_level_name(provided) +
         ", but trident needs " + thread_level_name(needed) +
         " (its gradient hooks may call MPI from autograd's thread while the main thread "
         "waits); use an MPI library built with thread support, such as Open MPI 3 or later "
         "or MPICH configured with --enable-threads=multiple";
}

}  // namespace trident
