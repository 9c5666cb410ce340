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
  // Without --world a dp of 0 reads as 1, which ep may not divide: the experts' line says so.
  const int ep = (p.dp * p.cp) % p.ep == 0 ? static_cast<int>(p.ep) : 1;
  const ProcessGrid grid(static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp), ep,
                         static_cast<int>(p.cp));
  const int64_t experts_per_rank = config.model.moe_experts / p.ep;

  std::cout << "# " << config.source << ": valid\n" << to_toml(config) << "\n";
  if (p.cp > 1)
    std::cout << "# layout: " << grid.world_size() << " ranks = dp " << p.dp << " x cp " << p.cp
              << " x pp " << p.pp << " x tp " << p.tp
              << " (rank = tp + tp*(cp + cp*(dp + dp*pp)))\n";
  else
    std::cout << "# layout: " << grid.world_size() << " ranks = dp " << p.dp << " x pp " << p.pp
              << " x tp " << p.tp << " (rank = tp + tp*(dp + dp*pp))\n";
  std::cout << "#   ZeRO stage " << p.zero_stage << ", schedule " << p.schedule << " over "
            << config.micro_batches() << " micro-batches of " << config.train.micro_batch_size
            << " per dp rank, activation checkpointing " << p.activation_checkpointing
            << (p.sequence_parallel ? ", sequence parallel over tp" : "") << "\n";
  std::cout << "#   " << config.model.layers / p.pp << " layers per stage, "
            << config.model.heads / p.tp << " heads per tp rank, vocab padded to "
            << config.padded_vocab() << "\n";
  if (p.ep > 1 && ep == p.ep)
    std::cout << "#   experts over ep " << p.ep << ": " << experts_per_rank
              << " of each MoE layer's " << config.model.moe_experts << " per rank; ep groups of "
              << p.ep << " consecutive dp ranks, expert-dp groups of " << p.dp / p.ep << "\n";
  else if (p.ep > 1)
    std::cout << "#   experts over ep " << p.ep << ": dp = " << p.dp
              << " is not divisible by it; give --world N to check the layout of N ranks\n";
  const int64_t per_stage = config.model.layers / p.pp;
  for (int r = 0; r < grid.world_size(); ++r) {
    const GridCoord c = grid.coord_of(r);
    std::cout << "#   rank " << r << ": dp " << grid.data_rank(c) << " pp " << c.pp << " tp "
              << c.tp;
    if (p.cp > 1) {
      const int64_t chunk = config.model.seq_len / (2 * p.cp), i = grid.cp_rank(c);
      const int64_t late = 2 * p.cp - 1 - i;
      std::cout << " cp " << i << " (tokens " << i * chunk << ".." << (i + 1) * chunk - 1 << ", "
                << late * chunk << ".." << (late + 1) * chunk - 1 << ")";
    }
    std::cout << "  layers " << c.pp * per_stage << ".." << (c.pp + 1) * per_stage - 1;
    if (c.pp == 0) std::cout << " + embeddings";
    if (c.pp == p.pp - 1) std::cout << " + final norm, head, loss";
    if (ep > 1) {
      const int64_t first = grid.ep_rank(c) * experts_per_rank;
      std::cout << ", experts " << first << ".." << first + experts_per_rank - 1;
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace trident::cli
