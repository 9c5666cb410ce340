# Registered multi-rank tests: name, ranks, gtest filter.
trident_mpi_test(mpi_communicator_dp2_pp2_tp2 8 "Groups.*:Comm/*:Overlap.*:Counters.*")
trident_mpi_test(mpi_timeout_message_dp2_pp2_tp2 8 "TimeoutProbe.*")
set_tests_properties(mpi_timeout_message_dp2_pp2_tp2 PROPERTIES
  PASS_REGULAR_EXPRESSION "rank [0-9]: all_reduce of 64 bytes on group 'tp' \\(ranks 2,3\\) did not complete within 2.0 s"
  TIMEOUT 120)
trident_mpi_test(tp_layers_tp4 4 "TpInit.*:TpLayers.*:TpModel.*")
