// `trident train`: not yet wired.
#include "cli/commands.h"
namespace trident::cli {
int cmd_train(const Argv&) { return 1; }
}
