// trident: the program. Dispatches to subcommands.
#include <malloc.h>  // mallopt

#include "cli/commands.h"

int main(int argc, char** argv) {
  // Training frees and reallocates the same large tensors every step. glibc serves blocks
  // above its mmap threshold with fresh mappings and returns freed memory to the system,
  // so each step would fault every large temporary in again: on the machines measured
  // (docs/performance.md) that made a step 3x slower. Keep freed memory for reuse, as
  // PyTorch's caching allocators do; tensors of 1 MiB or more are mapped and kept by
  // common/host_memory, whose bound the heap's holes would not keep.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);  // never trim the heap
  return trident::cli::run_main(argc, argv);
}
