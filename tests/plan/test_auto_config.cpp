// trident train --auto's choice: the fastest configuration under the budget and its margin,
// the same on every call, the nvme tier only when memory forces it, and a job that fits
// nowhere told the smallest change that would make it fit.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::min
#include <string>

#include "plan/auto_config.h"  // choose_configuration, overrides_of

namespace trident::plan {
namespace {

/// The offload benchmark's 160M GPT: 12 layers of width 1024, vocabulary 8192, fp32.
PlanModel gpt160m() {
  PlanModel m;
  m.layers = 12, m.hidden = 1024, m.heads = 16, m.vocab = 8192, m.seq_len = 64;
  m.global_batch = 8;
  m.releases_host_memory = true;
  return m;
}

Cluster machine() {
  Cluster c;
  c.devices_per_node = 8;
  c.peak_tflops["fp32"] = 0.15;
  c.memory_gbps = 20;
  c.disk_gbps = 1;
  c.process_base_gb = 0.2;
  return c;
}

AutoBudget budget(int ranks, double memory_gb, double disk_gb = -1) {
  AutoBudget b;
  b.ranks = ranks;
  b.ranks_per_node = ranks;
  b.memory_per_rank = memory_gb * 1e9;
  b.disk_per_rank = disk_gb < 0 ? -1 : disk_gb * 1e9;
  return b;
}

TEST(AutoConfig, chooses_the_fastest_under_the_budget_less_its_margin_and_always_the_same) {
  const PlanModel m = gpt160m();
  const Cluster c = machine();
  const AutoBudget roomy = budget(4, 16);
  const AutoChoice a = choose_configuration(m, c, roomy);
  ASSERT_FALSE(a.ranked.empty()) << a.suggestion;
  EXPECT_EQ(choose_configuration(m, c, roomy).ranked.front().name(), a.ranked.front().name());
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    EXPECT_LE(a.ranked[i].peak, 0.9 * roomy.memory_per_rank) << a.ranked[i].name();
    if (i > 0)
      EXPECT_LE(a.ranked[i - 1].evaluation.time.total(), a.ranked[i].evaluation.time.total());
  }
  EXPECT_NE(a.why.find("runner-up"), std::string::npos) << a.why;
  // A budget the choice no longer fits (its peak is just over 90% of it): the same
  // configuration, its rank keeping freed blocks only within the most ever in use (its live
  // memory fits)...
  ASSERT_FALSE(a.ranked.front().releases_host_memory);
  const AutoBudget tight = budget(4, a.ranked.front().peak / 0.9 / 1e9 * 0.99);
  const AutoChoice b = choose_configuration(m, c, tight);
  ASSERT_FALSE(b.ranked.empty()) << b.suggestion;
  EXPECT_EQ(b.ranked.front().name(), a.ranked.front().name());
  EXPECT_TRUE(b.ranked.front().releases_host_memory);
  EXPECT_DOUBLE_EQ(b.ranked.front().peak * (1 + tight.kept_heap_allowance) -
                       tight.kept_heap_allowance * c.process_base_gb * 1e9,
                   a.ranked.front().peak);
  EXPECT_EQ(overrides_of(b.ranked.front()).back(), "train.allocator=release");
  EXPECT_TRUE(switched_to_release(b.ranked.front()));  // what `plan --auto --top` marks
  EXPECT_FALSE(switched_to_release(a.ranked.front()));
  // The report says so after the choice's peak.
  EXPECT_NE(auto_choice_text(b, tight).find("per rank with train.allocator = release"),
            std::string::npos)
      << auto_choice_text(b, tight);
  EXPECT_EQ(auto_choice_text(a, roomy).find("train.allocator"), std::string::npos);
  // ...or, where the config keeps its heap, another configuration, with less memory and no
  // faster.
  PlanModel keeps = m;
  keeps.allocator = "cache";
  const AutoChoice k = choose_configuration(keeps, c, tight);
  ASSERT_FALSE(k.ranked.empty()) << k.suggestion;
  EXPECT_NE(k.ranked.front().name(), a.ranked.front().name());
  EXPECT_FALSE(k.ranked.front().releases_host_memory);
  EXPECT_LT(k.ranked.front().peak, a.ranked.front().peak);
  EXPECT_GE(k.ranked.front().evaluation.time.total(), a.ranked.front().evaluation.time.total());
}

TEST(AutoConfig, uses_the_nvme_tier_only_when_memory_forces_it) {
  const PlanModel m = gpt160m();  // 2.55 GB of training state in fp32
  const Cluster c = machine();
  const AutoChoice roomy = choose_configuration(m, c, budget(1, 16, 100));
  ASSERT_FALSE(roomy.ranked.empty());
  EXPECT_FALSE(roomy.ranked.front().placement.optimizer) << roomy.ranked.front().name();

  const AutoChoice capped = choose_configuration(m, c, budget(1, 1.5, 100));
  ASSERT_FALSE(capped.ranked.empty()) << capped.suggestion;
  EXPECT_TRUE(capped.ranked.front().placement.optimizer) << capped.ranked.front().name();
  EXPECT_GT(capped.ranked.front().tier_bytes, 1e9);

  // Without a tier directory the same cap fits nothing, and the message says what would.
  const AutoChoice no_tier = choose_configuration(m, c, budget(1, 1.5));
  EXPECT_TRUE(no_tier.ranked.empty());
  EXPECT_NE(no_tier.suggestion.find("parallel.nvme_path"), std::string::npos) << no_tier.suggestion;
  // Nor with too little disk for the tier's files.
  EXPECT_TRUE(choose_configuration(m, c, budget(1, 1.5, 0.5)).ranked.empty());
}

TEST(AutoConfig, a_rank_that_keeps_its_heap_is_allowed_its_fragmentation) {
  // train.allocator = "auto": a CPU rank keeps its heap in memory and releases it with
  // state in the tier; the kept heap's peak carries the allowance, on a GPU none.
  const PlanModel m = gpt160m();
  Cluster c = machine();
  const AutoChoice all = choose_configuration(m, c, budget(1, 64, 100));
  bool kept = false, released = false;
  for (const AutoCandidate& x : all.ranked) {
    const double total = x.evaluation.memory.total();
    EXPECT_EQ(x.releases_host_memory, x.placement.optimizer) << x.name();
    EXPECT_FALSE(switched_to_release(x)) << x.name();  // the tier's release needs no key
    EXPECT_NEAR(x.peak, (x.placement.optimizer ? 1.0 : 1.25) * total + 0.2e9, 1.0) << x.name();
    kept |= !x.releases_host_memory;
    released |= x.releases_host_memory;
  }
  EXPECT_TRUE(kept && released);
  c.process_base_gb = 0;  // a device: its memory is the memory model's total
  for (const AutoCandidate& x : choose_configuration(m, c, budget(1, 64, 100)).ranked)
    EXPECT_DOUBLE_EQ(x.peak, x.evaluation.memory.total()) << x.name();
}

TEST(AutoConfig, a_job_that_fits_nowhere_is_told_the_smallest_change) {
  const PlanModel m = gpt160m();
  const Cluster c = machine();
  // 2 ranks of 1.6 GB cannot hold 2.55 GB of state with their activations, nor write it
  // to a tier of 10 MB each; more ranks can.
  const AutoChoice few = choose_configuration(m, c, budget(2, 1.6, 0.01));
  ASSERT_TRUE(few.ranked.empty());
  EXPECT_NE(few.suggestion.find("run on "), std::string::npos) << few.suggestion;
  // Under the process's own base nothing fits on any number of ranks.
  const AutoChoice none = choose_configuration(m, c, budget(2, 0.15));
  ASSERT_TRUE(none.ranked.empty());
  EXPECT_NE(none.suggestion.find("give each rank"), std::string::npos) << none.suggestion;
  EXPECT_GT(none.considered, 0);
}

TEST(AutoConfig, candidates_the_config_refuses_are_dropped_and_named) {
  const PlanModel m = gpt160m();
  const Cluster c = machine();
  // As a config with a key of ZeRO 3 only would: every other stage is refused.
  const CandidateCheck zero3_only = [](const AutoCandidate& x) {
    return x.layout.zero == 3 ? std::string() : std::string("applies only to ZeRO 3");
  };
  const AutoChoice free = choose_configuration(m, c, budget(4, 16));
  const AutoChoice checked = choose_configuration(m, c, budget(4, 16), zero3_only);
  ASSERT_NE(free.ranked.front().layout.zero, 3) << free.ranked.front().name();
  ASSERT_EQ(checked.ranked.size(), 2u);
  EXPECT_EQ(checked.ranked[0].layout.zero, 3);
  EXPECT_EQ(checked.ranked[1].layout.zero, 3);
  ASSERT_FALSE(checked.refused.empty());
  EXPECT_NE(checked.refused.front().find(free.ranked.front().name()), std::string::npos);
  EXPECT_NE(auto_choice_text(checked, budget(4, 16)).find("the config refuses"), std::string::npos);
}

TEST(AutoConfig, counts_the_near_ties_and_says_how_to_measure_them) {
  const PlanModel m = gpt160m();
  const Cluster c = machine();
  const AutoBudget b = budget(4, 16);
  const AutoChoice all = choose_configuration(m, c, b);  // no check: every fitting one kept
  ASSERT_GT(all.ranked.size(), 2u);
  auto within = [&](double of_s) {
    int n = 0;
    for (const AutoCandidate& x : all.ranked)
      n += x.evaluation.time.total() <= (1 + b.near_tie) * of_s ? 1 : 0;
    return n;
  };
  const double t0 = all.ranked[0].evaluation.time.total();
  ASSERT_GT(within(t0), 1) << "no near tie to count on this model";
  EXPECT_EQ(all.near_ties, within(t0) - 1);
  const std::string text = auto_choice_text(all, b);
  const int k = std::min(all.near_ties + 1, 4);
  EXPECT_NE(text.find("auto: " + std::to_string(all.near_ties) + " others are predicted within " +
                      "5.0% of the choice"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("--measure " + std::to_string(k) + "` trains the best " + std::to_string(k) + " "),
      std::string::npos)
      << text;
  // Measuring already: no advice to.
  EXPECT_EQ(auto_choice_text(all, b, true).find("--measure"), std::string::npos);
  // The config refusing the fastest: the ties are counted around the next, without it.
  const std::string first = all.ranked[0].name();
  const CandidateCheck not_first = [&](const AutoCandidate& x) {
    return x.name() == first ? std::string("refused") : std::string();
  };
  const AutoChoice checked = choose_configuration(m, c, b, not_first);
  ASSERT_EQ(checked.ranked.front().name(), all.ranked[1].name());
  EXPECT_EQ(checked.near_ties, within(all.ranked[1].evaluation.time.total()) - 2);
  // No band: only exact ties count.
  AutoBudget exact = b;
  exact.near_tie = 0;
  int equal = 0;
  for (size_t i = 1; i < all.ranked.size(); ++i)
    equal += all.ranked[i].evaluation.time.total() == t0 ? 1 : 0;
  EXPECT_EQ(choose_configuration(m, c, exact).near_ties, equal);
}

TEST(AutoConfig, the_choice_becomes_the_config_keys_of_its_layout_and_placement) {
  AutoCandidate c;
  c.layout = {2, 1, 1, 3, 4, true};
  c.placement = {"everything in the nvme tier", 3, true, true};
  const std::vector<std::string> keys = overrides_of(c);
  const std::vector<std::string> want = {"parallel.dp=2",
                                         "parallel.pp=1",
                                         "parallel.tp=1",
                                         "parallel.zero_stage=3",
                                         "train.micro_batch_size=4",
                                         "parallel.activation_checkpointing=full",
                                         "parallel.sequence_parallel=false",
                                         "parallel.schedule=1f1b",
                                         "parallel.virtual_stages=1",
                                         "parallel.offload_optimizer=nvme",
                                         "parallel.offload_params=nvme",
                                         "parallel.cp=1",
                                         "parallel.ep=1"};
  EXPECT_EQ(keys, want);
  c.layout = {1, 2, 2, 1, 2, false};
  c.layout.selective = true;
  c.layout.sequence_parallel = true;
  c.schedule = {"interleaved-1f1b", 3};
  const std::vector<std::string> more = overrides_of(c);
  EXPECT_EQ(more[5], "parallel.activation_checkpointing=selective");
  EXPECT_EQ(more[6], "parallel.sequence_parallel=true");
  EXPECT_EQ(more[7], "parallel.schedule=interleaved-1f1b");
  EXPECT_EQ(more[8], "parallel.virtual_stages=3");
  EXPECT_EQ(c.name(),
            "dp1 pp2 tp2 zero1 mb2 selective sp interleaved-1f1b v3, everything in the "
            "nvme tier");
  c.layout = {4, 1, 1, 2, 1, false};
  c.layout.ep = 2;
  c.schedule = {"1f1b", 1};
  EXPECT_EQ(overrides_of(c).back(), "parallel.ep=2");
  EXPECT_EQ(c.name(), "dp4 ep2 pp1 tp1 zero2 mb1, everything in the nvme tier");
}

TEST(AutoConfig, searches_recomputation_sequence_parallelism_and_schedules) {
  const PlanModel m = gpt160m();
  const Cluster c = machine();
  const AutoChoice all = choose_configuration(m, c, budget(4, 64, 100));
  bool selective = false, sp = false, interleaved = false, zb = false;
  for (const AutoCandidate& x : all.ranked) {
    const Layout& l = x.layout;
    selective |= l.selective;
    sp |= l.sequence_parallel;
    interleaved |= x.schedule.schedule == "interleaved-1f1b";
    zb |= x.schedule.schedule == "zb-h1";
    EXPECT_FALSE(l.selective && l.checkpointing) << x.name();
    EXPECT_TRUE(!l.sequence_parallel || (l.tp > 1 && m.seq_len % l.tp == 0)) << x.name();
    if (x.schedule.schedule != "1f1b") {
      EXPECT_GT(l.pp, 1) << x.name();
      EXPECT_NE(l.zero, 3) << x.name();  // trident runs ZeRO 3 with 1F1B only
    }
    if (x.schedule.schedule == "interleaved-1f1b") {
      EXPECT_EQ(l.micro_batches(m) % l.pp, 0) << x.name();
      EXPECT_EQ(m.layers % (l.pp * x.schedule.virtual_stages), 0) << x.name();
    }
  }
  EXPECT_TRUE(selective && sp && interleaved && zb);
  // Selective recomputation keeps more than full recomputation and takes less time: the
  // search weighs the two against the budget.
  Layout full{4, 1, 1, 1, 2, true}, sel{4, 1, 1, 1, 2, false};
  sel.selective = true;
  const double full_peak = evaluate(m, full, c).memory.total() + 0.2e9;
  const double sel_peak = evaluate(m, sel, c).memory.total() + 0.2e9;
  ASSERT_LT(full_peak, sel_peak);
  EXPECT_LT(step_time(m, sel, c).total(), step_time(m, full, c).total());
}

}  // namespace
}  // namespace trident::plan
