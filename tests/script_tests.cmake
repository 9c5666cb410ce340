# Tests that run the program end to end (scripts in tests/scripts/).
trident_script_test(cli_check_layout_and_misspelt_key check_cli.sh)
