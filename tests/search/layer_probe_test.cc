// The layer probe's parameter counts on the tiny GPT (hidden 64, 4 heads, ffn 256, vocab 256,
// layernorm, tied embeddings), derived by hand from the Megatron layout (shared/param_layout.cc):
// a layer holds q, k, v, o (4 h^2, split over tp), fc1 and fc2 (2 x 4 h^2, split over tp) and two
// layernorms (4 h, replicated); the embedding table vocab x h is split over tp by rows; the rest
// is the final layernorm (2 h).
#include <gtest/gtest.h>

#include "search/layer_probe.h"
#include "shared/scenario.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

TEST(LayerProbe, ParametersPerTensorParallelRank) {
  for (int tp : {1, 2, 4}) {
    const Scenario sc =
        load_scenario(kTiny, {"cluster.gpus=" + std::to_string(tp), "strategy.tp=" + std::to_string(tp)});
    LayerProbes probes(sc.cluster);
    const LayerCosts& c = probes.costs(sc);
    EXPECT_EQ(c.layer_params, 12 * 64 * 64 / tp + 4 * 64) << "tp " << tp;
    EXPECT_EQ(c.embedding_params, 256 * 64 / tp) << "tp " << tp;
    EXPECT_EQ(c.other_params, 2 * 64) << "tp " << tp;
    // Every layer runs kernels forward and backward; tp > 1 adds its collectives.
    EXPECT_GT(c.forward_s, 0);
    EXPECT_GT(c.backward_s, 0);
    EXPECT_EQ(c.recompute_s, 0);
    EXPECT_EQ(c.tp_comm_s > 0, tp > 1) << "tp " << tp;
    EXPECT_GT(c.optimizer_s_per_element, 0);
  }
}

TEST(LayerProbe, OneProbePerLayerSetting) {
  const Scenario a = load_scenario(kTiny, {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2"});
  const Scenario b = load_scenario(kTiny, {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=4"});
  const Scenario c = load_scenario(kTiny, {"cluster.gpus=8", "strategy.tp=2", "strategy.recompute=full"});
  LayerProbes probes(a.cluster);
  probes.costs(a);
  probes.costs(b);  // the same layer: dp and pp do not change it
  EXPECT_EQ(probes.probes(), 1u);
  const LayerCosts& full = probes.costs(c);
  EXPECT_EQ(probes.probes(), 2u);
  EXPECT_GT(full.recompute_s, 0);
}

}  // namespace
}  // namespace tandem::search
