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

}  // namespace
}  // namespace tandem
