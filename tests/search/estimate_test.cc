// The estimate's closed forms (search/estimate.h) on hand-made layer costs: the tiny GPT (4 layers,
// hidden 64, seq 32, fp32, tied embeddings, global batch 8) on 2 GPUs as dp 1 x pp 2 with
// micro_batch 1, so m = 8 micro-batches and 2 layers per stage; no data parallelism, so no
// gradient traffic. The only figure not written here is the p2p time, which comes from the
// simulator's own closed form (CommCost::p2p_s) for one activation of 1 x 32 x 64 x 4 bytes.
#include <gtest/gtest.h>

#include "search/estimate.h"
#include "shared/scenario.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

LayerCosts hand_costs() {
  LayerCosts c;
  c.forward_s = 1e-3;
  c.backward_s = 2e-3;
  c.first_s = 0.5e-3;
  c.last_s = 0.25e-3;
  c.optimizer_s_per_element = 1e-9;
  c.layer_params = 1000;
  c.embedding_params = 500;
  c.other_params = 100;
  return c;
}

TEST(Estimate, OneFOneBPipeline) {
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=2", "strategy.pp=2", "strategy.micro_batch=1"});
  CommCost comm(sc.cluster);
  const Estimate e = estimate(sc, hand_costs(), comm);
  // Layer 3 ms; stages 2 x 3 = 6 ms, + 0.5 ms (first) and + 0.25 ms (last): 6.5 and 6.25 ms.
  // Pipeline: 8 x 6.5 + (12.75 - 6.5) = 58.25 ms; p2p: 2 x (2 - 1) activations.
  const double p2p = 2.0 * comm.p2p_s(0, 1, 1.0 * 32 * 64 * 4);
  // Optimizer: the larger stage holds 2 layers (2000) + max(embedding 500, head 100 + the tied
  // embedding's copy 500) = 2600 elements, at 1 ns each.
  EXPECT_NEAR(e.optimizer_s, 2600e-9, 1e-15);
  EXPECT_NEAR(e.iteration_s, 58.25e-3 + p2p + 2600e-9, 1e-12);
  EXPECT_NEAR(e.bubble_s, 6.25e-3 + p2p, 1e-12);
  EXPECT_NEAR(e.compute_s, 8 * 6.5e-3, 1e-12);
  EXPECT_EQ(e.comm_s, 0.0);
  EXPECT_STREQ(e.limit(), "bubble");
}

TEST(Estimate, InterleavingDividesTheBubble) {
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=2", "strategy.pp=2", "strategy.micro_batch=1",
                                            "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"});
  CommCost comm(sc.cluster);
  const Estimate e = estimate(sc, hand_costs(), comm);
  const double p2p = 2.0 * comm.p2p_s(0, 1, 1.0 * 32 * 64 * 4);
  // 8 x 6.5 + 6.25 / 2 ms.
  EXPECT_NEAR(e.iteration_s, 52e-3 + 3.125e-3 + p2p + 2600e-9, 1e-12);
}

TEST(Estimate, RecomputeIsCountedAndNamed) {
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=1", "strategy.micro_batch=1"});
  CommCost comm(sc.cluster);
  LayerCosts c = hand_costs();
  c.recompute_s = 1e-3;
  const Estimate e = estimate(sc, c, comm);
  // One stage of 4 layers of 4 ms, + 0.75 ms of ends: 16.75 ms per micro-batch, 8 of them; no
  // bubble. Recompute: 8 x 4 x 1 ms. Optimizer: 4000 + 500 + 100 elements.
  EXPECT_NEAR(e.iteration_s, 8 * 16.75e-3 + 4600e-9, 1e-12);
  EXPECT_NEAR(e.recompute_s, 32e-3, 1e-12);
  EXPECT_EQ(e.bubble_s, 0.0);
  EXPECT_STREQ(e.limit(), "recompute");
}

}  // namespace
}  // namespace tandem::search
