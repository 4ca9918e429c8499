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

}  // namespace
}  // namespace tandem
