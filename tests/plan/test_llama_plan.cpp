// The planner's arithmetic for the Llama family: parameter counts against a published
// model (SmolLM-135M), SwiGLU and grouped-query attention in the FLOPs, kv heads over tp.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include "plan/plan_model.h"  // PlanModel, total_parameters, stage_parameters
#include "plan/planner.h"     // layout_problem

namespace trident::plan {
namespace {

/// SmolLM-135M: 30 layers, hidden 576, 9 heads over 3 kv heads, SwiGLU 1536, 49152 tokens,
/// tied embeddings.
PlanModel smollm_135m() {
  PlanModel m;
  m.layers = 30, m.hidden = 576, m.heads = 9, m.vocab = 49152, m.seq_len = 2048;
  m.llama = true, m.kv_heads = 3, m.ffn_hidden = 1536, m.tied = true;
  return m;
}

TEST(LlamaPlan, smollm_135m_has_its_published_parameter_count) {
  // HF's model.num_parameters() for HuggingFaceTB/SmolLM-135M.
  EXPECT_EQ(total_parameters(smollm_135m()), 134515008);
}

TEST(LlamaPlan, layer_matrices_count_gqa_and_swiglu) {
  const PlanModel m = smollm_135m();
  // q and o 576^2 each, k and v 576 x (3 x 64) each, gate/up/down 576 x 1536 each.
  EXPECT_EQ(m.layer_matrix_params(), 2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536);
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m), 2.0 * 3538944.0 + 2.0 * 2.0 * 2048.0 * 576.0);
}

TEST(LlamaPlan, untied_head_and_replicated_kv_heads_per_stage) {
  PlanModel m = smollm_135m();
  m.tied = false;
  EXPECT_EQ(total_parameters(m), 134515008 + 49152 * 576);
  // tp 9 > 3 kv heads: k and v are split 3 ways (each shard on 3 ranks), the rest 9 ways.
  // The vocabulary is padded to 49158 rows, 5462 per rank; embedding and head, final norm.
  const int64_t kv = 2 * 576 * 192, rest = 3538944 - kv, rows = 5462;
  EXPECT_EQ(stage_parameters(m, 1, 9, 0),
            30 * (rest / 9 + kv / 3 + 2 * 576) + rows * 576 + 576 + rows * 576);
}

TEST(LlamaPlan, tp_must_divide_the_kv_heads_or_be_a_multiple) {
  PlanModel m = smollm_135m();
  m.heads = 12, m.kv_heads = 4, m.hidden = 768;
  EXPECT_EQ(layout_problem(m, Layout{1, 1, 2}, 2, 8), "");
  EXPECT_EQ(layout_problem(m, Layout{1, 1, 12}, 12, 16), "");
  EXPECT_NE(layout_problem(m, Layout{1, 1, 6}, 6, 8).find("kv heads"), std::string::npos);
}

}  // namespace
}  // namespace trident::plan
