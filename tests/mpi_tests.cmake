# Registered multi-rank tests: name, ranks, gtest filter.
trident_mpi_test(mpi_communicator_dp2_pp2_tp2 8 "Groups.*:Comm/*:Overlap.*:Counters.*")
trident_mpi_test(mpi_timeout_message_dp2_pp2_tp2 8 "TimeoutProbe.*")
set_tests_properties(mpi_timeout_message_dp2_pp2_tp2 PROPERTIES
  PASS_REGULAR_EXPRESSION "rank [0-9]: all_reduce of 64 bytes on group 'tp' \\(ranks 2,3\\) did not complete within 2.0 s"
  TIMEOUT 120)
trident_mpi_test(tp_layers_tp4 4 "TpInit.*:TpLayers.*:TpModel.*")
# ZeroOptimizer (tests/mpi/test_zero*.cpp): parity with the single-process reference per
# layout and stage, and the bytes held and moved on dp = 4.
trident_mpi_test(zero_reference_dp1 1 "ZeroReference.*")
trident_mpi_test(zero_dp2_stage0 2 "ZeroParity.dp2_zero0")
trident_mpi_test(zero_dp2_stage1 2 "ZeroParity.dp2_zero1")
trident_mpi_test(zero_dp2_stage2 2 "ZeroParity.dp2_zero2")
trident_mpi_test(zero_dp4_stage0 4 "ZeroParity.dp4_zero0")
trident_mpi_test(zero_dp4_stage1 4 "ZeroParity.dp4_zero1")
trident_mpi_test(zero_dp4_stage2 4 "ZeroParity.dp4_zero2*")
trident_mpi_test(zero_dp2_tp2_stage2 4 "ZeroParity.dp2_tp2_zero2")
trident_mpi_test(zero_dp2_pp2_stage0 4 "ZeroParity.dp2_pp2_zero0")
trident_mpi_test(zero_dp2_pp2_stage2 4 "ZeroParity.dp2_pp2_zero2")
trident_mpi_test(zero_dp2_pp2_tp2_stage1 8 "ZeroParity.dp2_pp2_tp2_zero1")
trident_mpi_test(zero_dp2_pp2_tp2_stage2 8 "ZeroParity.dp2_pp2_tp2_zero2")
trident_mpi_test(zero_dp4_memory_and_communication 4 "ZeroMemory.*:ZeroComm.*")
