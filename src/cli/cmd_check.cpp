// `trident check CONFIG`: validates a config without training and prints the resolved
// config and the rank layout.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "parallel/process_grid.h"

namespace trident::cli {

int cmd_check(const Args& args) {
  const int world = static_cast<int>(args.get_int("world", 0));
  if (world < 0) throw UsageError("--world must be at least 1");
  const TrainConfig config = load_config(args.positional[0], args.sets, world);
  const auto& p = config.parallel;
  const ProcessGrid grid(static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp));

  std::cout << "# " << config.source << ": valid\n" << to_toml(config) << "\n";
  std::cout << "# layout: " << grid.world_size() << " ranks = dp " << p.dp << " x pp " << p.pp
            << " x tp " << p.tp << " (rank = tp + tp*(dp + dp*pp))\n";
  std::cout << "#   ZeRO stage " << p.zero_stage << ", schedule " << p.schedule << " over "
            << config.micro_batches() << " micro-batches of " << config.train.micro_batch_size
            << " per dp rank, activation checkpointing " << p.activation_checkpointing
            << (p.sequence_parallel ? ", sequence parallel over tp" : "") << "\n";
  std::cout << "#   " << config.model.layers / p.pp << " layers per stage, "
            << config.model.heads / p.tp << " heads per tp rank, vocab padded to "
            << config.padded_vocab() << "\n";
  const int64_t per_stage = config.model.layers / p.pp;
  for (int r = 0; r < grid.world_size(); ++r) {
    const GridCoord c = grid.coord_of(r);
    std::cout << "#   rank " << r << ": dp " << c.dp << " pp " << c.pp << " tp " << c.tp
              << "  layers " << c.pp * per_stage << ".." << (c.pp + 1) * per_stage - 1;
    if (c.pp == 0) std::cout << " + embeddings";
    if (c.pp == p.pp - 1) std::cout << " + final norm, head, loss";
    std::cout << "\n";
  }
  return 0;
}

}  // namespace trident::cli
