// 3D tensor parallelism (tp_mode 3d; shared/tp3d.h, shared/tp3d_groups.h): the cube's groups, the
// validator's rules, schedules the schedule validator accepts, and a transformer layer's
// communication and kept activations against figures derived by hand from the algorithm (Bian et
// al. 2021, arXiv 2105.14450, as Colossal-AI's legacy parallel_3d _Linear3D codes it; the paper's
// body not read here, its closed form from Colossal-AI's docs in tp_modes_traffic_test.cc).
#include <gtest/gtest.h>

#include <map>

#include "grid_test_util.h"
#include "shared/error.h"
#include "shared/param_layout.h"
#include "shared/schedule.h"
#include "shared/schedule_validator.h"

namespace tandem {
namespace {

using testing::layer_traffic;
using testing::rejection;
using testing::with;

// q = 2: 8 ranks, each micro-batch of 4 split into q^2 = 4 batch blocks of one sample.
const std::vector<std::string> kQ2 = {"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=3d",
                                      "strategy.micro_batch=4"};

TEST(Tp3dGroups, TheThreeAxesOfEachCube) {
  // t = a + b*q + c*q*q. A varies a (index b + c*q), B varies b (index a + c*q), C varies c
  // (index a + b*q); axis 0 is the whole tensor group.
  Schedule s(testing::tiny(kQ2));
  std::map<int, std::vector<std::vector<int>>> by_axis;
  for (const ProcessGroup& g : s.groups())
    if (g.kind == GroupKind::kTp) by_axis[g.axis].push_back(g.ranks);
  EXPECT_EQ(by_axis[0], (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(by_axis[1], (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(by_axis[2], (std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(by_axis[3], (std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Rank 6 is (a 0, b 1, c 1).
  EXPECT_EQ(s.group(s.group_of(6, GroupKind::kTp, 1)).ranks, (std::vector<int>{6, 7}));
  EXPECT_EQ(s.group(s.group_of(6, GroupKind::kTp, 2)).ranks, (std::vector<int>{4, 6}));
  EXPECT_EQ(s.group(s.group_of(6, GroupKind::kTp, 3)).ranks, (std::vector<int>{2, 6}));
}

TEST(Tp3dGroups, EveryDataParallelReplicaHasItsOwnCube) {
  // dp 2: ranks 8-15 are the second cube, its A groups {8, 9}, ...
  Schedule s(testing::tiny({"cluster.gpus=16", "strategy.tp=8", "strategy.tp_mode=3d", "strategy.micro_batch=4",
                            "strategy.global_batch=16"}));
  EXPECT_EQ(s.group(s.group_of(13, GroupKind::kTp, 1)).ranks, (std::vector<int>{12, 13}));
  EXPECT_EQ(s.group(s.group_of(13, GroupKind::kTp, 2)).ranks, (std::vector<int>{13, 15}));
  EXPECT_EQ(s.group(s.group_of(13, GroupKind::kTp, 3)).ranks, (std::vector<int>{9, 13}));
}

void expect_names(const std::string& m, const char* field, const char* rule) {
  EXPECT_NE(m.find(field), std::string::npos) << m;
  EXPECT_NE(m.find(rule), std::string::npos) << m;
}

TEST(Tp3dRules, CubesThatDoNotDivideAreRejectedNamingFieldAndRule) {
  expect_names(rejection({"cluster.gpus=4", "strategy.tp=4", "strategy.tp_mode=3d"}), "strategy.tp", "perfect cube");
  // micro_batch 2 is not a multiple of q^2 = 4.
  expect_names(rejection(with(kQ2, {"strategy.micro_batch=2"})), "strategy.micro_batch", "multiple of q*q = 4");
  expect_names(rejection(with(kQ2, {"model.heads=1"})), "model.heads", "side = 2 must divide");
  // hidden 66 = 2 * 33: q divides it, q^2 does not (the weights' rows are cut q^2 ways).
  expect_names(rejection(with(kQ2, {"model.hidden=66", "model.heads=2"})), "model.hidden", "multiple of q*q = 4");
  expect_names(rejection(with(kQ2, {"model.ffn_hidden=258"})), "model.ffn_hidden", "multiple of q*q = 4");
  expect_names(rejection(with(kQ2, {"model.vocab=258"})), "model.vocab", "multiple of q*q = 4");
  expect_names(rejection(with(kQ2, {"model.norm=rmsnorm"})), "model.norm", "layernorm only");
  expect_names(rejection(with(kQ2, {"strategy.sp_mode=megatron"})), "strategy.sp_mode", "1d only");
  expect_names(rejection({"cluster.gpus=16", "strategy.tp=8", "strategy.tp_mode=3d", "strategy.micro_batch=4",
                          "strategy.sp=2", "strategy.sp_mode=ring_attention"}),
               "strategy.sp_mode", "1d only");
}

struct Case {
  const char* name;
  std::vector<std::string> sets;
};

class Tp3dValidity : public ::testing::TestWithParam<Case> {};

TEST_P(Tp3dValidity, ValidatorAcceptsTheSchedule) {
  Schedule s(testing::tiny(GetParam().sets));
  std::string all;
  for (const std::string& p : validate_schedule(s)) all += p + "\n";
  EXPECT_TRUE(all.empty()) << all;
}

const Case kCases[] = {
    {"q2", kQ2},
    {"q2_dp2_zero1", with(kQ2, {"cluster.gpus=16", "strategy.global_batch=16", "strategy.zero_stage=1"})},
    {"q2_dp2_zero3", with(kQ2, {"cluster.gpus=16", "strategy.global_batch=16", "strategy.zero_stage=3",
                                "strategy.bucket_mb=0.1"})},
    {"q2_pp2", with(kQ2, {"cluster.gpus=16", "strategy.pp=2"})},
    {"q2_untied_swiglu_gqa", with(kQ2, {"model.tied_embeddings=false", "model.activation=swiglu",
                                        "model.kv_heads=2", "model.ffn_hidden=96"})},
    {"q2_dropout_selective_bf16", with(kQ2, {"model.dropout=0.1", "strategy.recompute=selective",
                                             "strategy.dtype=bf16"})},
    {"q2_full_recompute_fp16", with(kQ2, {"strategy.recompute=full", "strategy.dtype=fp16"})},
};

INSTANTIATE_TEST_SUITE_P(Generators, Tp3dValidity, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(Tp3dTraffic, ALayerMovesWhatTheCubeAlgorithmDerives) {
  // One linear Y = X W^T, X [b s, h_in], W [h_out, h_in], on a q x q x q cube (Bian et al. 2021
  // as Colossal-AI's _Linear3D codes it): a rank holds X's block [b s / q^2, h_in / q] and W's
  // [h_out / q^2, h_in / q]. Forward: all-gather X over the input axis (q blocks: b s h_in / q^2
  // elements gathered), all-gather W over B (h_in h_out / q^2), GEMM, reduce-scatter the
  // [b s / q, h_out / q] partial output over the output axis (b s h_out / q^2). Backward:
  // all-gather dY (b s h_out / q^2), W again (h_in h_out / q^2) and X again (b s h_in / q^2;
  // tandem gathers them anew, see shared/tp3d.h), reduce-scatter dX (b s h_in / q^2) and
  // dW (h_in h_out / q^2). The IR counts an all-gather by its output and a reduce-scatter by
  // its input, the figures above. Over a GPT layer's four linears (qkv h -> 3h, o h -> h,
  // fc1 h -> 4h, fc2 4h -> h): sum h_in = 7h, sum h_out = 9h, sum h_in h_out = 12 h^2, so per rank
  // and micro-batch
  //   forward   all-gather     (7 b s h + 12 h^2) / q^2,  reduce-scatter 9 b s h / q^2
  //   backward  all-gather     (16 b s h + 12 h^2) / q^2, reduce-scatter (7 b s h + 12 h^2) / q^2.
  // Tiny GPT, b 4, s 32, h 64, q 2, fp32 (b s h = 8192, h^2 = 4096):
  //   (57344 + 49152) / 4 = 26624 elements = 106496 bytes;  9 * 8192 / 4 = 18432 = 73728 bytes;
  //   (131072 + 49152) / 4 = 45056 elements = 180224 bytes.
  // The layer norms' row statistics over C, on b s / q^2 = 32 rows: forward 2 norms x 2
  // all-reduces x 32 floats = 512 bytes, backward 2 x 64 floats = 512 bytes. Against 2D's
  // (7 b s h + 12 h^2) / q broadcasts (tests/shared/tp2d_test.cc) the 3D volume falls as 1/q^2.
  Schedule s(testing::tiny(kQ2));
  for (int rank = 0; rank < 8; ++rank) {
    auto t = layer_traffic(s, rank);
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllGather}]), 106496) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kReduceScatter}]), 73728) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllGather}]), 180224) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kReduceScatter}]), 106496) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllReduce}]), 512) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllReduce}]), 512) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kBroadcast}]), 0) << rank;
  }
}

TEST(Tp3dMemory, ALayersKeptActivationsShrinkByTheWholeCube) {
  // Forward keeps, per layer and micro-batch (as tests/shared/tp2d_test.cc counts them): x, y1,
  // x2, y2, qkv (3), ctx, h1 and a1 (4 each): 16 [b s, h] tensors, the softmax probabilities
  // (b a s^2), lse (b a s) and the norms' mean and rstd (4 b s floats). Under 3D every
  // [b s, features] tensor is / q^3 (batch / q^2, features / q) and the scores too (batch / q^2,
  // heads / q). Tiny GPT, micro-batch 4, fp32:
  //   tp 1:  16 * 4*32*64 + 4*4*32*32 + 4*4*32 + 4*4*32 = 131072 + 16384 + 512 + 512 = 148480;
  //   3D q 2: 16 * 1*32*32 + 1*2*32*32 + 1*2*32 + 4*1*32 = 16384 + 2048 + 64 + 128 = 18624,
  // q^3 = 8 times less but for the per-row statistics (divided by the batch split q^2 alone).
  auto kept = [](const Schedule& s) { return testing::layer0_kept_bytes(s); };
  EXPECT_EQ(kept(Schedule(testing::tiny({"strategy.micro_batch=4"}))), 148480 * 4);
  EXPECT_EQ(kept(Schedule(testing::tiny(kQ2))), 18624 * 4);
}

TEST(Tp3dMemory, EachRankHoldsAnEighthOfTheWeights) {
  // Per rank: every layer weight and the table / q^3 (rows / q^2, columns / q); the norms'
  // feature block (h / q) replicated over A and B. Tiny GPT (tied table 256 x 64, 4 layers of
  // 12 h^2 = 49152 weights and 4 norm vectors of h = 64, final norm 2 x 64):
  //   (4 * 49152 + 256 * 64) / 8 + (4 * 4 + 2) * 64 / 2 = (196608 + 16384) / 8 + 576
  //   = 26624 + 576 = 27200 elements.
  const Scenario sc = testing::tiny(kQ2);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(make_param_layout(sc, 0, t).elements(), 27200) << t;
}

}  // namespace
}  // namespace tandem
