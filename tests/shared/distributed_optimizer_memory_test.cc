// The planned memory of the distributed optimizer (strategy.zero_stage=1, Megatron-Core's
// --use-distributed-optimizer) against Megatron-Core's own accounting, bytes derived by hand.
// Megatron-LM core_r0.8.0 (baf94af3c667248865f23df73b9fb8e2395e6fd0):
//  - core/distributed/param_and_grad_buffer.py:358-371: with the distributed optimizer the buffer
//    holds every parameter in the param dtype (param_data) and every gradient in the grad dtype
//    (grad_data), unsharded;
//  - core/distributed/distributed_data_parallel.py:108: grad dtype fp32 when grad_reduce_in_fp32,
//    else the param dtype;
//  - docs/source/distrib_optimizer.md:9-15: bytes per parameter 6 + 12/d for 16-bit params with
//    fp32 grads (the fp32 main params and the two Adam moments sharded over the d data-parallel
//    ranks), 8 + 8/d for fp32 params and grads.
// With 16-bit grad buffers (NeMo's grad_sync_dtype bf16, software.grad_reduce_dtype=param) the
// same layout holds 4 + 12/d.
// NeMo's Apex DistributedFusedAdam (NVIDIA/apex@23c1f86520e22b505e8fdfcf6298273dff2d93d8,
// apex/contrib/optimizers/distributed_fused_adam.py:450-476, StateBucket) keeps per shard element:
// params_shard in the optimizer dtype if store_params, an int16 param_remainders_shard if
// store_param_remainders, exp_avg and exp_avg_sq in the optimizer dtype. NeMo (NVIDIA/NeMo@
// 8e3d65dcfe3504689bfc5b6e67d502780aacad41, nemo/collections/nlp/models/language_modeling/
// megatron_base_model.py:803-812) sets store_params False when the optimizer dtype is the model's
// (software.optimizer_state_dtype=param, master_params=none: 2 + 2 bytes over d, 4 + 4/d in all
// with bf16 grads) and store_param_remainders for an fp32 optimizer over bf16 params
// (master_params=remainder: 2 + 4 + 4 over d, 4 + 10/d).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "shared/plan_summary.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

using testing::tiny;

// tiny-gpt's parameters per rank with dp only (tests/shared/software_test.cc derives them):
// 16384 + 4 * 49408 + 128. Divisible by 4, so the one bucket needs no padding at dp = 4.
constexpr int64_t kParams = 214144;

MemoryBreakdown model_state(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"cluster.gpus=4", "strategy.zero_stage=1"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  const PlanSummary s = summarize(Schedule(tiny(sets)));
  EXPECT_EQ(s.ranks.size(), 1u);  // the four data-parallel ranks are one class
  return s.breakdown;
}

TEST(DistributedOptimizerMemory, Bf16ParamsFp32GradsIsSixPlusTwelveOverD) {
  const MemoryBreakdown b = model_state({"strategy.dtype=bf16"});  // megatron-core-0.8: fp32 grads
  EXPECT_EQ(b[BufferRole::kParam], kParams * 2);
  EXPECT_EQ(b[BufferRole::kGrad], kParams * 4);
  EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 12);  // master, m, v: 4 bytes each, 1/4
  EXPECT_EQ(b[BufferRole::kParam] + b[BufferRole::kGrad] + b[BufferRole::kOptimizer], kParams * 6 + kParams * 12 / 4);
}

TEST(DistributedOptimizerMemory, Bf16GradBuffersIsFourPlusTwelveOverD) {
  const MemoryBreakdown b = model_state({"strategy.dtype=bf16", "software.grad_reduce_dtype=param"});
  EXPECT_EQ(b[BufferRole::kParam], kParams * 2);
  EXPECT_EQ(b[BufferRole::kGrad], kParams * 2);
  EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 12);
}

TEST(DistributedOptimizerMemory, Fp32IsEightPlusEightOverD) {
  // No separate master copy: the fp32 params are the optimizer's (m and v sharded).
  const MemoryBreakdown b = model_state({});
  EXPECT_EQ(b[BufferRole::kParam], kParams * 4);
  EXPECT_EQ(b[BufferRole::kGrad], kParams * 4);
  EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 8);
}

TEST(DistributedOptimizerMemory, Fp8TrainsOnBf16ParamsWithTheSameState) {
  // An fp8 strategy keeps bf16 parameters (shared/fp8_recipe.h): the model state is the bf16
  // one; Transformer Engine's fp8 weight copies are workspace, not model state.
  const MemoryBreakdown b = model_state({"cluster.preset=dgx-h100", "cluster.gpus=4", "strategy.dtype=fp8"});
  EXPECT_EQ(b[BufferRole::kParam], kParams * 2);
  EXPECT_EQ(b[BufferRole::kGrad], kParams * 4);
  EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 12);
}

TEST(DistributedOptimizerMemory, ApexBf16StateWithoutMasterIsFourPlusFourOverD) {
  // Nemotron-4 340B's optim block: dtype bf16, grad_sync_dtype bf16 (NeMo-Framework-Launcher 24.07,
  // nemotron_340b.yaml:158-163): bf16 m and v, no master.
  const MemoryBreakdown b =
      model_state({"strategy.dtype=bf16", "software.grad_reduce_dtype=param", "software.optimizer_state_dtype=param",
                   "software.master_params=none", "software.separate_master_copy=false"});
  EXPECT_EQ(b[BufferRole::kParam], kParams * 2);
  EXPECT_EQ(b[BufferRole::kGrad], kParams * 2);
  EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 4);  // m, v: 2 bytes each, 1/4
  EXPECT_EQ(b[BufferRole::kParam] + b[BufferRole::kGrad] + b[BufferRole::kOptimizer], kParams * 4 + kParams * 4 / 4);
}

TEST(DistributedOptimizerMemory, ApexParamRemaindersIsFourPlusTenOverD) {
  // NeMo's default optimizer dtype (fp32) over bf16 params (fp8 runs included): int16 remainders
  // beside the bf16 params, fp32 m and v.
  for (const char* dtype : {"strategy.dtype=bf16", "strategy.dtype=fp8"}) {
    const MemoryBreakdown b =
        model_state({"cluster.preset=dgx-h100", "cluster.gpus=4", dtype, "software.grad_reduce_dtype=param",
                     "software.master_params=remainder", "software.separate_master_copy=false"});
    EXPECT_EQ(b[BufferRole::kParam], kParams * 2) << dtype;
    EXPECT_EQ(b[BufferRole::kGrad], kParams * 2) << dtype;
    EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 10) << dtype;  // 2 + 4 + 4 bytes, 1/4
  }
}

TEST(DistributedOptimizerMemory, Fp32RunsIgnoreTheStateFields) {
  // fp32 training: the parameters are the fp32 values, m and v fp32 whatever the fields say.
  const MemoryBreakdown b = model_state({"software.optimizer_state_dtype=param", "software.master_params=none",
                                         "software.separate_master_copy=false"});
  EXPECT_EQ(b[BufferRole::kOptimizer], kParams / 4 * 8);
}

}  // namespace
}  // namespace tandem
