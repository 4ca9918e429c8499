// 2D tensor parallelism (tp_mode 2d; shared/tp2d.h, shared/tp2d_groups.h): the grid's groups,
// the validator's rules, schedules the schedule validator accepts, and the communication of a
// transformer layer against the closed form of SUMMA as the Optimus paper runs it.
#include <gtest/gtest.h>

#include <map>

#include "grid_test_util.h"
#include "shared/error.h"
#include "shared/schedule.h"
#include "shared/schedule_validator.h"

namespace tandem {
namespace {

using testing::layer_traffic;
using testing::rejection;
using testing::with;

const std::vector<std::string> kQ2 = {"cluster.gpus=4", "strategy.tp=4", "strategy.tp_mode=2d"};

TEST(Tp2dGroups, RowsAndColumnsOfEachGridAsColossalAiFormsThem) {
  // dp 2 x tp 4 (q = 2): ranks 0-3 and 4-7 are the two grids. Tensor index t = i*q + j; row
  // group of i: {i*q + k}; column group of j: {j + k*q} (Colossal-AI parallel_2d initializer).
  Schedule s(testing::tiny({"cluster.gpus=8", "strategy.tp=4", "strategy.tp_mode=2d", "strategy.dp=2"}));
  std::map<int, std::vector<std::vector<int>>> by_axis;
  for (const ProcessGroup& g : s.groups())
    if (g.kind == GroupKind::kTp) by_axis[g.axis].push_back(g.ranks);
  EXPECT_EQ(by_axis[0], (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(by_axis[1], (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(by_axis[2], (std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  // group_of finds them by axis: rank 6 is (dp 1, i 1, j 0).
  EXPECT_EQ(s.group(s.group_of(6, GroupKind::kTp, 1)).ranks, (std::vector<int>{6, 7}));
  EXPECT_EQ(s.group(s.group_of(6, GroupKind::kTp, 2)).ranks, (std::vector<int>{4, 6}));
}

TEST(Tp2dGroups, TwoAndAHalfDLayersAndTheirDepthGroups) {
  // tp 8 = d 2 x q 2 x q 2 (Tesseract): t = k*q*q + i*q + j. Layer k = 0 is ranks 0-3, k = 1
  // ranks 4-7, each a 2 x 2 grid as in 2D; the depth group of grid position t' is {t', t' + 4}.
  Schedule s(testing::tiny({"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2",
                            "strategy.micro_batch=4"}));
  std::map<int, std::vector<std::vector<int>>> by_axis;
  for (const ProcessGroup& g : s.groups())
    if (g.kind == GroupKind::kTp) by_axis[g.axis].push_back(g.ranks);
  EXPECT_EQ(by_axis[1], (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(by_axis[2], (std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(by_axis[3], (std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(s.group(s.group_of(6, GroupKind::kTp, 3)).ranks, (std::vector<int>{2, 6}));
}

TEST(Tp2dRules, GridsThatDoNotDivideAreRejectedNamingFieldAndRule) {
  // q = 2 must divide micro_batch (the grid rows split it), heads, hidden, ffn and vocab.
  std::string m = rejection(with(kQ2, {"strategy.micro_batch=1", "strategy.global_batch=4"}));
  EXPECT_NE(m.find("strategy.micro_batch"), std::string::npos) << m;
  EXPECT_NE(m.find("must be a multiple of 2"), std::string::npos) << m;
  m = rejection(with(kQ2, {"model.heads=1"}));
  EXPECT_NE(m.find("model.heads"), std::string::npos) << m;
  m = rejection(with(kQ2, {"model.vocab=255"}));
  EXPECT_NE(m.find("model.vocab"), std::string::npos) << m;
  m = rejection(with(kQ2, {"model.ffn_hidden=255"}));
  EXPECT_NE(m.find("model.ffn_hidden"), std::string::npos) << m;
  m = rejection({"cluster.gpus=2", "strategy.tp=2", "strategy.tp_mode=2d"});
  EXPECT_NE(m.find("perfect square"), std::string::npos) << m;
  m = rejection(with(kQ2, {"model.norm=rmsnorm"}));
  EXPECT_NE(m.find("model.norm"), std::string::npos) << m;
  m = rejection(with(kQ2, {"strategy.sp_mode=megatron"}));
  EXPECT_NE(m.find("strategy.sp_mode"), std::string::npos) << m;
  // 2.5D: the d*q rows of all depth layers split the micro-batch; q must be at least 2.
  m = rejection({"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2"});
  EXPECT_NE(m.find("strategy.micro_batch"), std::string::npos) << m;
  EXPECT_NE(m.find("must be a multiple of 4"), std::string::npos) << m;
  m = rejection({"cluster.gpus=2", "strategy.tp=2", "strategy.tp_mode=2.5d", "strategy.tp_depth=2"});
  EXPECT_NE(m.find("q >= 2"), std::string::npos) << m;
}

struct Case {
  const char* name;
  std::vector<std::string> sets;
};

class Tp2dValidity : public ::testing::TestWithParam<Case> {};

TEST_P(Tp2dValidity, ValidatorAcceptsTheSchedule) {
  Schedule s(testing::tiny(GetParam().sets));
  std::string all;
  for (const std::string& p : validate_schedule(s)) all += p + "\n";
  EXPECT_TRUE(all.empty()) << all;
}

const Case kCases[] = {
    {"q2", kQ2},
    {"q2_dp2_zero1", {"cluster.gpus=8", "strategy.tp=4", "strategy.tp_mode=2d", "strategy.zero_stage=1"}},
    {"q2_dp2_zero3", {"cluster.gpus=8", "strategy.tp=4", "strategy.tp_mode=2d", "strategy.zero_stage=3",
                      "strategy.bucket_mb=0.1"}},
    {"q2_pp2_interleaved", {"cluster.gpus=8", "strategy.tp=4", "strategy.tp_mode=2d", "strategy.pp=2",
                            "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"}},
    {"q2_untied_swiglu_gqa", with(kQ2, {"model.tied_embeddings=false", "model.activation=swiglu",
                                        "model.kv_heads=2", "model.ffn_hidden=96"})},
    {"q2_dropout_selective_bf16", with(kQ2, {"model.dropout=0.1", "strategy.recompute=selective",
                                             "strategy.dtype=bf16"})},
    {"q2_full_recompute_fp16", with(kQ2, {"strategy.recompute=full", "strategy.dtype=fp16"})},
    {"p5d_d2", {"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2",
                "strategy.micro_batch=4"}},
    {"p5d_d2_dp2_zero2_pp2",
     {"cluster.gpus=32", "strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2", "strategy.micro_batch=4",
      "strategy.global_batch=16", "strategy.pp=2", "strategy.zero_stage=2", "strategy.bucket_mb=0.1"}},
    {"q3", {"cluster.gpus=9", "strategy.tp=9", "strategy.tp_mode=2d", "model.hidden=96", "model.heads=6",
            "model.vocab=255", "strategy.micro_batch=3", "strategy.global_batch=12"}},
};

INSTANTIATE_TEST_SUITE_P(Generators, Tp2dValidity, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(Tp2dTraffic, ALayerMovesTheSummaClosedForm) {
  // SUMMA as Colossal-AI's parallel_2d/_operation.py codes it for Optimus (Xu et al. 2021, arXiv
  // 2104.05343; the paper's body not read here: tests/shared/tp_modes_traffic_test.cc), a linear
  // layer on a q x q grid: Y = X W^T with X [b s, h_in] and W [h_out, h_in] in q x q
  // blocks costs each rank q broadcasts of an X block (b s h_in / q^2) and q of a W block
  // (h_in h_out / q^2) forward; backward q broadcasts of W with q reduces of a dX block for dX,
  // q broadcasts of X with q reduces of a dW block for dW. Summed over a layer's four linears
  // (qkv: h -> 3h, o: h -> h, fc1: h -> 4h, fc2: 4h -> h) the blocks add up to
  //   X: b s (h + h + h + 4h) / q^2 = 7 b s h / q^2,   W: (3 + 1 + 4 + 4) h^2 / q^2 = 12 h^2 / q^2,
  // so per rank and micro-batch, forward broadcasts (7 b s h + 12 h^2) / q elements, backward the
  // same in broadcasts and the same in reduces. Tiny GPT: b 2, s 32, h 64, q 2, fp32:
  //   (7*2*32*64 + 12*64*64) / 2 = (28672 + 49152) / 2 = 38912 elements = 155648 bytes.
  // The two layer norms add their row statistics over the row group (Colossal-AI layernorm_2d):
  // forward 2 all-reduces of b s / q floats each (mean, variance), backward 1 of 2 b s / q floats:
  //   forward 2 * 2 * 32 * 4 = 512 bytes, backward 2 * 64 * 4 = 512 bytes.
  Schedule s(testing::tiny(kQ2));
  for (int rank = 0; rank < 4; ++rank) {
    auto t = layer_traffic(s, rank);
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kBroadcast}]), 155648) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kBroadcast}]), 155648) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kReduce}]), 155648) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllReduce}]), 512) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllReduce}]), 512) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kReduce}]), 0) << rank;
  }
}

TEST(Tp2dTraffic, ATesseractLayerRunsSummaOnItsBatchBlock) {
  // 2.5D (Tesseract, Wang et al. 2021, arXiv 2105.14500): SUMMA inside each depth layer on a
  // batch block of b / (d q) samples, so the X blocks shrink by d and the W blocks do not:
  // (7 b s h / d + 12 h^2) / q per rank and micro-batch. b 4, s 32, h 64, q 2, d 2, fp32:
  //   (7*4*32*64/2 + 12*64*64) / 2 = (28672 + 49152) / 2 = 38912 elements = 155648 bytes,
  // and the layer norms' all-reduces of b s / (d q) = 32 rows: 512 bytes each way. The weight
  // gradients' all-reduce over the depth group is per bucket, after the backward (not in a layer).
  Schedule s(testing::tiny({"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2",
                            "strategy.micro_batch=4"}));
  for (int rank : {0, 5}) {
    auto t = layer_traffic(s, rank);
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kBroadcast}]), 155648) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kBroadcast}]), 155648) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kReduce}]), 155648) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllReduce}]), 512) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllReduce}]), 512) << rank;
  }
}

TEST(Tp2dMemory, ALayersKeptActivationsShrinkByTheWholeGrid) {
  // Forward keeps, per layer and micro-batch (layer_emitter.cc, no dropout, no flash):
  // x, y1, x2, y2 (b s h each), qkv (3 b s h), ctx (b s h), h1 and a1 (4 b s h each), the softmax
  // probabilities (b a s^2), lse (b a s) and the norms' mean and rstd (4 b s floats): under 2D
  // every [b s, features] tensor is /q^2 and the scores too (batch /q, heads /q). Tiny GPT, fp32:
  //   1D, tp 1:  (4+3+1+8) * 2*32*64 + 2*4*32*32 + 2*4*32 + 4*2*32 = 65536 + 8192 + 256 + 256
  //              = 74240 elements;
  //   2D, q 2:   (4+3+1+8) * 1*32*32 + 1*2*32*32 + 1*2*32 + 4*32  = 16384 + 2048 + 64 + 128
  //              = 18624 elements, i.e. the tensors of 1D over q^2 = 4 but for the per-row
  //              statistics, which only the batch split divides.
  auto kept = [](const Schedule& s) { return testing::layer0_kept_bytes(s); };
  EXPECT_EQ(kept(Schedule(testing::tiny({}))), 74240 * 4);
  EXPECT_EQ(kept(Schedule(testing::tiny(kQ2))), 18624 * 4);
}

}  // namespace
}  // namespace tandem
