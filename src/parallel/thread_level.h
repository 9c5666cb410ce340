// The thread support trident needs of the MPI library, and the message that stops a job
// whose library gives less. MPI-free, so that a build without MPI compiles and tests it.
#pragma once
#include <string>

namespace trident {

/// MPI's levels of thread support, in its order (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
enum class ThreadLevel { kSingle, kFunneled, kSerialized, kMultiple };

/// The level trident needs: MPI is called from more than one thread, never from two at once
/// (a CUDA build's autograd engine runs the gradient hooks, which post and poll reductions,
/// on its device thread while the main thread waits in backward).
constexpr ThreadLevel kThreadLevelNeeded = ThreadLevel::kSerialized;

/// "MPI_THREAD_SERIALIZED" for kSerialized, and so on.
const char* thread_level_name(ThreadLevel level);

/// Empty when `provided` is at least `needed`; else the message that stops the job, naming
/// both levels and the fix.
std::string thread_level_shortfall(ThreadLevel provided, ThreadLevel needed = kThreadLevelNeeded);

}  // namespace trident
