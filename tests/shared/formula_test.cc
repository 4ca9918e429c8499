// The planner's numbers against the published formulas. Every expected value is computed here
// from the paper's formula; nothing is pasted from tandem's output.
#include <gtest/gtest.h>

#include <cmath>

#include "schedule_test_util.h"
#include "shared/memory_timeline.h"
#include "shared/param_layout.h"
#include "shared/plan_summary.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

// A GPT with dimensions where the formulas' neglected terms (norm statistics, the loss) are small.
Scenario gpt(std::vector<std::string> sets) {
  std::vector<std::string> base = {"model.layers=4", "model.hidden=512", "model.heads=8", "model.vocab=4096",
                                   "model.seq_len=256", "strategy.micro_batch=2", "strategy.global_batch=4",
                                   "strategy.dtype=fp16"};
  base.insert(base.end(), sets.begin(), sets.end());
  return testing::tiny(base);
}

// Narayanan et al., SC21, eq. (3): model flops of one iteration of batch B,
//   72 B s l h^2 (1 + s/(6h) + V/(12 l h)),   and with full recompute
//   96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double narayanan(double B, double s, double l, double h, double V, bool recompute) {
  if (recompute) return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

TEST(Flops, ModelFlopsFollowNarayananEq3) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{}, {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"},
        {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2", "strategy.global_batch=8"},
        {"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"}}) {
    Scenario sc = gpt(sets);
    PlanSummary sum = summarize(Schedule(sc));
    const double expected = narayanan(sc.strategy.global_batch, 256, 4, 512, 4096, false);
    EXPECT_NEAR(sum.flops_per_iteration / expected, 1.0, 1e-9);
    EXPECT_NEAR(sum.hardware_flops_per_iteration / expected, 1.0, 1e-9);  // no recompute
  }
}

TEST(Flops, FullRecomputeFollowsNarayananEq3) {
  Scenario sc = gpt({"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2", "strategy.recompute=full"});
  PlanSummary sum = summarize(Schedule(sc));
  EXPECT_NEAR(sum.flops_per_iteration / narayanan(4, 256, 4, 512, 4096, false), 1.0, 1e-9);
  EXPECT_NEAR(sum.hardware_flops_per_iteration / narayanan(4, 256, 4, 512, 4096, true), 1.0, 1e-9);
}

TEST(Parameters, RanksHoldTheWholeModelOnce) {
  // Summed over one replica's ranks, the parameter tensors add up to ModelSpec::parameters(); with
  // pp > 1 and tied embeddings the last stage's copy of the table counts once more.
  for (int tp : {1, 2})
    for (int pp : {1, 2}) {
      Scenario sc = gpt({"cluster.gpus=" + std::to_string(tp * pp), "strategy.tp=" + std::to_string(tp),
                         "strategy.pp=" + std::to_string(pp)});
      int64_t held = 0, replicated = 0;
      for (int stage = 0; stage < pp; ++stage)
        for (int t = 0; t < tp; ++t) {
          ParamLayout lay = make_param_layout(sc, stage, t);
          held += lay.elements();
          for (const ParamUnit& u : lay.units) replicated += u.norm_elements;
        }
      // Norms are replicated on every tensor rank: count them once.
      const int64_t copy = pp > 1 ? int64_t(4096) * 512 : 0;
      EXPECT_EQ(held - replicated * (tp - 1) / tp - copy, sc.model.parameters()) << "tp " << tp << " pp " << pp;
    }
}

// Activations a layer keeps for its backward: the growth of live activation bytes from the start
// of one layer's forward to the start of the next (both right after the first norm's outputs are
// allocated), on one micro-batch of b = 2 sequences.
double activation_bytes_per_layer(const Scenario& sc) {
  Program p = Schedule(sc).program(0);
  std::vector<double> at_layer(sc.model.layers, -1);
  walk_memory(p, [&](const Task& t, const MemoryBreakdown& dev, int64_t) {
    const Compute* c = std::get_if<Compute>(&t.op);
    if (!c || c->phase != Phase::kForward || c->microbatch != 0) return;
    if ((c->kernel == Kernel::kLayerNorm) && c->layer >= 0 && at_layer[c->layer] < 0)
      at_layer[c->layer] = double(dev[BufferRole::kActivation] + dev[BufferRole::kComm]);
  });
  return at_layer[2] - at_layer[1];
}

// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Table 2: activation bytes per layer (16-bit activations, 1-byte dropout masks).
TEST(ActivationMemory, FollowsKorthikantiTable2) {
  const double s = 256, b = 2, h = 512, a = 8;
  for (int t : {1, 2, 4}) {
    const std::string gpus = "cluster.gpus=" + std::to_string(t), tp = "strategy.tp=" + std::to_string(t);
    const double tt = t;
    const double none = s * b * h * (10 + 24 / tt + 5 * a * s / (h * tt));
    EXPECT_NEAR(activation_bytes_per_layer(gpt({gpus, tp, "model.dropout=0.1"})) / none, 1.0, 0.02) << "t " << t;
    if (t > 1) {
      const double sp = s * b * h / tt * (34 + 5 * a * s / h);
      EXPECT_NEAR(activation_bytes_per_layer(gpt({gpus, tp, "model.dropout=0.1", "strategy.sp_mode=megatron"})) / sp,
                  1.0, 0.02) << "t " << t;
      const double sel = s * b * h * 34 / tt;
      EXPECT_NEAR(activation_bytes_per_layer(gpt({gpus, tp, "model.dropout=0.1", "strategy.sp_mode=megatron",
                                                  "strategy.recompute=selective"})) / sel,
                  1.0, 0.02) << "t " << t;
    }
    const double full = 2 * s * b * h;
    EXPECT_NEAR(activation_bytes_per_layer(gpt({gpus, tp, "model.dropout=0.1", "strategy.recompute=full"})) / full,
                1.0, 0.02) << "t " << t;
  }
}

// Rajbhandari et al. 2020 (ZeRO), section 5: mixed-precision Adam keeps 2 (fp16 params) + 2 (fp16
// grads) + 12 (fp32 master, momentum, variance) bytes per parameter; with N_d data-parallel ranks
// stage 1 keeps 4 + 12/N_d, stage 2 2 + 14/N_d, stage 3 16/N_d.
TEST(ZeroMemory, ModelStatesPerParameterFollowRajbhandari) {
  const double N = 4;
  const double expected[] = {16, 4 + 12 / N, 2 + 14 / N, 16 / N};
  for (int stage = 0; stage <= 3; ++stage) {
    Scenario sc = gpt({"cluster.gpus=4", "strategy.global_batch=8", "strategy.zero_stage=" + std::to_string(stage),
                       "strategy.bucket_mb=1"});
    Program p = Schedule(sc).program(0);
    const double params = double(make_param_layout(sc, 0, 0).elements());
    const double per_param = double(memory_profile(p).model_states.total()) / params;
    EXPECT_NEAR(per_param / expected[stage], 1.0, 0.005) << "stage " << stage;
  }
}

}  // namespace
}  // namespace tandem
