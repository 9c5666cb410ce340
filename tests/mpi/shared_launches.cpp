// The small multi-rank cases that share an mpirun, by rank count. Each is declared beside its
// tests (register_mpi_cases); here only which of them run in one launch. Alone, each of these
// took 1.3-2.8 s (2 ranks), 2.4-4.8 s (4) and 4.1-5.9 s (8) under ctest, most of it mpirun's
// start and libtorch's load on every rank; together, one launch of each rank count took 2.1,
// 5.3 and 6.5 s against the 6.9, 22.8 and 25.5 s of their separate entries. The parity and
// offload families and the 8-rank checkpoint tests of test_checkpoint.cpp and
// test_checkpoint_zero3.cpp keep their own entries (docs/testing.md), as does the timeout
// probe, which aborts its job.
#include "mpi_cases.h"  // share_launch

namespace trident::testing {
namespace {

const bool kShared2 = share_launch(
    "small_cases_np2", {"activation_memory_tp2", "moe_combine_order_and_all_to_all_time_ep2",
                        "plan_bucketed_parameters_tp2", "zero_dp2_stage0_1_2"});
const bool kShared4 = share_launch(
    "small_cases_np4", {"sequence_parallel_pp_traffic_pp2_tp2", "context_activation_memory_cp4",
                        "pipeline_activation_memory_pp4_m8", "zero3_dp4_memory_and_communication",
                        "zero_dp4_memory_and_communication", "tp_layers_tp4",
                        "zero_np4_dp4_dp2_tp2_dp2_pp2", "checkpoint_moe_ep4_resume_and_convert"});
const bool kShared8 = share_launch(
    "small_cases_np8", {"mpi_communicator_dp2_pp2_tp2", "skip_parity_dp2_pp2_tp2_zero2",
                        "trace_of_contexts_on_halves_of_8_ranks", "zero_dp2_pp2_tp2_stage1_2",
                        "checkpoint_hf_export_import_to_dp1_pp2_tp4_and_independent_files_eval"});

}  // namespace
}  // namespace trident::testing
