// trident: the program. Dispatches to subcommands.
#include "cli/commands.h"

int main(int argc, char** argv) { return trident::cli::run_main(argc, argv); }
