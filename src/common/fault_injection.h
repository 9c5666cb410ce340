// Fault injection for the crash and loss-spike tests, in one place. A hook does nothing
// unless its environment variable is set (no ordinary run sets one); production code calls
// each through the one function below that names it.
//
//   function                   armed by                                  used by
//   kill_at_checkpoint_point   TRIDENT_CHECKPOINT_FAULT=<point>[@<step>]
//   tests/scripts/checkpoint_crash.sh,
//                                                                        tests/scripts/fault_injection.sh
//   corrupt_batch              TRIDENT_DATA_FAULT=FIRST-LAST[,...] tests/scripts/spike_guard.sh
//   preempt_after_step         TRIDENT_PREEMPT_AFTER=<step>         tests/scripts/spike_guard.sh
//
// The other fault tests need no hook here: fault_injection.sh and offload_kill_resume.sh
// signal ranks from outside, tier_full_disk.sh puts the nvme tier on a small tmpfs, and
// the AsyncIo unit tests fail an io_uring submit through UringSeams (common/async_io.h).
#pragma once
#include <cstdint>  // int64_t, int32_t

namespace trident::fault {

/// TRIDENT_CHECKPOINT_FAULT=<point>[@<step>]: kills this process (SIGKILL, after one line on
/// stderr) at `point` of the save of step `step`, or of every save without @<step>. The
/// points: mid_file (after the first tensor of a rank's file), before_index, before_rename,
/// before_latest. Throws std::invalid_argument, naming the variable, for a malformed value.
void kill_at_checkpoint_point(const char* point, int64_t step);

/// TRIDENT_DATA_FAULT=FIRST-LAST[,...] (batches from 1): when it names batch `batch`,
/// overwrites `count` sequences of `row` tokens at `tokens` (sequences first, first+1, ...
/// of the batch) by tokens drawn uniformly from [0, vocab), as a corrupted shard of a
/// corpus would look. The tokens are a function of (batch, sequence, position) alone, so
/// every layout sees the same corrupted batch. Throws std::invalid_argument, naming the
/// variable, for a malformed value.
void corrupt_batch(int64_t batch, int64_t first, int64_t count, int64_t row, int64_t vocab,
                   int32_t* tokens);

/// TRIDENT_PREEMPT_AFTER=<step>: raises SIGTERM in this process once `step` is trained, as
/// a scheduler's preemption at that step would (every rank that sees the variable raises
/// it). Throws std::invalid_argument, naming the variable, for a malformed value.
void preempt_after_step(int64_t step);

}  // namespace trident::fault
