# Tests that run the program end to end (scripts in tests/scripts/).
trident_script_test(cli_check_layout_and_misspelt_key check_cli.sh)
trident_script_test(cli_train_bad_input_stops_every_rank train_errors.sh)
trident_script_test(cli_train_tp2_metrics_file train_smoke.sh)
