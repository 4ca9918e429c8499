// `tandem run --driver cuda` through the real launcher (mpirun, one process per GPU). Tests that
// need GPUs skip, saying so, where too few are visible.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "exec/cuda/cuda_driver.h"
#include "tests/exec/run_test_util.h"

namespace tandem {
namespace {

using testing::json_of;
using testing::RunOutput;

RunOutput run(const std::string& args) { return testing::run_tandem(args, "", 300); }

std::vector<double> losses(const RunOutput& r) {
  std::vector<double> v;
  for (const testing::Json& x : json_of(r).at("losses").array) v.push_back(x.number);
  return v;
}

TEST(TandemRunCuda, WithoutAGpuSaysSoBeforeLaunching) {
  if (exec::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const RunOutput r = run("-n 1 --driver cuda");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no CUDA device"), std::string::npos) << r.out;
}

TEST(TandemRunCuda, Fp16IsRejectedBeforeLaunching) {
  const RunOutput r = run("-n 1 --driver cuda --set strategy.dtype=fp16");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("fp32 and bf16"), std::string::npos) << r.out;
}

TEST(TandemRunCuda, TensorParallelTwoRanksMatchesOneRank) {
  if (exec::cuda_device_count() < 2)
    GTEST_SKIP() << "no CUDA device: a 2-rank TP=2 run needs 2 GPUs, " << exec::cuda_device_count() << " visible";
  const RunOutput one = run("-n 1 --driver cuda --steps 2 --json");
  const RunOutput tp = run("-n 2 --driver cuda --steps 2 --json --set strategy.tp=2");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(tp.exit_code, 0) << tp.out;
  EXPECT_EQ(json_of(tp).at("driver").string, "cuda");
  const std::vector<double> a = losses(one), b = losses(tp);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-4 * std::abs(a[i])) << "step " << i + 1;
}

// Heterogeneous memory on the GPU (docs/offload.md): host buffers pinned (cudaHostAlloc), every
// Copy task a cudaMemcpyAsync on its h2d/d2h stream, ordered by the events the runtime polls.
// One GPU, the tiny GPT (fp32), each policy of tests/exec/run_test.cc: the losses equal the run
// without offload to 1e-5 relative (the same sums; Adam on the host is the same AdamW in fp32),
// the measured device peak (the runtime's ledger of the planned buffers, which it allocates and
// frees in program order) equals the planned one, and under auto at 0.003 GiB stays under 0.9 x HBM
// (2 899 102 bytes); auto with gpu_margin_mem_ratio steps 2 chunks' Adam on the GPU.
TEST(TandemRunCuda, OffloadPoliciesMatchTheRunWithoutOffloadAndThePlannedPeak) {
  if (exec::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device visible";
  const std::string chunks = " --set strategy.chunk_min_m=0 --set strategy.chunk_search_range_m=0";
  const RunOutput base = run("-n 1 --driver cuda --steps 3 --json");
  ASSERT_EQ(base.exit_code, 0) << base.out;
  const std::vector<double> want = losses(base);
  ASSERT_EQ(want.size(), 3u);
  const int64_t cap = int64_t(0.9 * double(int64_t(0.003 * 1073741824.0)));
  for (const std::string& policy :
       {std::string(" --set strategy.offload=optimizer"),
        " --set strategy.offload=params --set strategy.offload_fraction=0.5" + chunks,
        " --set strategy.offload=auto --set cluster.hbm_gib=0.003" + chunks,
        // gpu_margin_mem_ratio: 2 of the 6 chunks step Adam on the GPU (run_test.cc's offload_auto_margin).
        " --set strategy.offload=auto --set strategy.gpu_margin_mem_ratio=2.5e-5" + chunks}) {
    const RunOutput r = run("-n 1 --driver cuda --steps 3 --json" + policy);
    ASSERT_EQ(r.exit_code, 0) << policy << "\n" << r.out;
    const std::vector<double> got = losses(r);
    ASSERT_EQ(got.size(), want.size()) << policy;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << policy << " step " << i + 1;
    const std::vector<double> measured = testing::numbers(json_of(r).at("peak_memory_bytes_per_rank"));
    const std::vector<double> planned = testing::numbers(json_of(r).at("planned_peak_memory_bytes_per_rank"));
    ASSERT_EQ(measured.size(), 1u) << policy;
    ASSERT_EQ(planned.size(), 1u) << policy;
    EXPECT_EQ(measured[0], planned[0]) << policy;
    if (policy.find("hbm_gib") != std::string::npos) {
      EXPECT_LE(measured[0], double(cap)) << policy;
    }
  }
}

}  // namespace
}  // namespace tandem
