#!/usr/bin/env bash
# README.md and docs/*.md against the program: every help text they quote is the one
# `trident SUB --help` prints, every session they show (`$ trident ...` and its output)
# prints that now, and every subcommand has its row in README's table
# (tests/scripts/docs_match_program.py: the markers, and how a quote may leave lines out).
set -u
trident=$1 root=$2
/usr/bin/python3 "$root/tests/scripts/docs_match_program.py" "$trident" "$root"
