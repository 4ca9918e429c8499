// The CUDA driver under the unchanged runtime, in process on one GPU (no MPI: the tiny GPT on one
// rank has no collective over more than one rank and no message). Every test skips, saying so,
// where no CUDA device is visible (this repository's CI, build machines).
#include "exec/cuda/cuda_driver.h"

#include <gtest/gtest.h>

#include <cmath>

#include "exec/host_driver.h"
#include "exec/runtime.h"
#include "shared/error.h"
#include "shared/memory_timeline.h"

namespace tandem::exec {
namespace {

#define SKIP_WITHOUT_GPU()                                                                \
  do {                                                                                    \
    if (cuda_device_count() == 0) {                                                       \
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount found none";                    \
    }                                                                                     \
  } while (0)

Schedule tiny(std::vector<std::string> sets) {
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

// Losses per step (loss_sum / tokens) of `steps` steps; the driver's device times replace the
// runtime's host times (Driver::end_step, called by the runtime).
std::vector<double> cuda_losses(const Schedule& s, int steps, Runtime& rt, StepResult* last = nullptr) {
  const double tokens = double(s.scenario().strategy.global_batch) * s.scenario().model.seq_len;
  std::vector<double> loss;
  for (int step = 0; step < steps; ++step) {
    StepResult r = rt.run_step(step);
    EXPECT_TRUE(r.loss_sum.has_value());
    loss.push_back(r.loss_sum ? *r.loss_sum / tokens : NAN);
    if (last) *last = std::move(r);
  }
  return loss;
}

TEST(CudaDriver, SkipsCleanlyWithoutAGpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present: the other tests run";
  Schedule s = tiny({});
  try {
    CudaDriver driver(s, 0);
    FAIL() << "a CUDA driver without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

TEST(CudaDriver, Fp32LossesEqualTheHostDriversOverTwoSteps) {
  SKIP_WITHOUT_GPU();
  Schedule s = tiny({"strategy.dtype=fp32"});
  std::vector<double> host;
  {
    auto hd = make_host_driver(nullptr);
    Runtime rt(s, 0, *hd, ExecOptions());
    const double tokens = double(s.scenario().strategy.global_batch) * s.scenario().model.seq_len;
    for (int step = 0; step < 2; ++step) host.push_back(*rt.run_step(step).loss_sum / tokens);
  }
  CudaDriver driver(s, 0);
  Runtime rt(s, 0, driver, ExecOptions());
  const std::vector<double> gpu = cuda_losses(s, 2, rt);
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(gpu[i], host[i], 1e-4 * std::abs(host[i])) << "step " << i + 1;
}

TEST(CudaDriver, Bf16RunsAndItsLossFalls) {
  SKIP_WITHOUT_GPU();
  Schedule s = tiny({"strategy.dtype=bf16"});
  CudaDriver driver(s, 0);
  Runtime rt(s, 0, driver, ExecOptions());
  const std::vector<double> loss = cuda_losses(s, 5, rt);
  EXPECT_NEAR(loss[0], std::log(256.0), 0.1);  // a fresh model predicts nearly uniformly
  EXPECT_LT(loss.back(), loss.front() - 0.05);
}

// The optimizer states the driver's Adam runs (kernels/cuda/adamw.h): fp32 master and moments, or
// bf16 moments and no master; int16 remainders and bf16 moments beside a master are refused, naming
// the fields. A check of the scenario alone: no device needed.
TEST(CudaDriver, RunsBf16MomentsWithoutAMasterAndRefusesRemainders) {
  const std::vector<std::string> bf16 = {"strategy.dtype=bf16", "software.grad_reduce_dtype=param",
                                         "software.separate_master_copy=false"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), bf16.begin(), bf16.end());
    return tiny(more).scenario();
  };
  EXPECT_NO_THROW(check_cuda_scenario(with({})));
  EXPECT_NO_THROW(check_cuda_scenario(with({"software.optimizer_state_dtype=param", "software.master_params=none"})));
  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"software.master_params=remainder"},
        std::vector<std::string>{"software.optimizer_state_dtype=param"}}) {
    try {
      check_cuda_scenario(with(refused));
      ADD_FAILURE() << "accepted " << refused[0];
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("software.optimizer_state_dtype / master_params"), std::string::npos)
          << e.what();
    }
  }
}

TEST(CudaDriver, Bf16MomentsWithoutAMasterRunAndTheLossFalls) {
  SKIP_WITHOUT_GPU();
  Schedule s = tiny({"strategy.dtype=bf16", "software.grad_reduce_dtype=param", "software.separate_master_copy=false",
                     "software.optimizer_state_dtype=param", "software.master_params=none"});
  CudaDriver driver(s, 0);
  Runtime rt(s, 0, driver, ExecOptions());
  const std::vector<double> loss = cuda_losses(s, 5, rt);
  EXPECT_NEAR(loss[0], std::log(256.0), 0.1);
  EXPECT_LT(loss.back(), loss.front() - 0.05);
}

TEST(CudaDriver, AllocatorPeakIsThePlannersWithinOnePercent) {
  SKIP_WITHOUT_GPU();
  for (const char* recompute : {"none", "full"}) {
    Schedule s = tiny({std::string("strategy.recompute=") + recompute});
    CudaDriver driver(s, 0);
    Runtime rt(s, 0, driver, ExecOptions());
    cuda_losses(s, 2, rt);
    const double planned = double(memory_profile(rt.program()).peak_device_bytes);
    EXPECT_NEAR(double(driver.peak_device_bytes()), planned, 0.01 * planned) << recompute;
    EXPECT_EQ(driver.peak_device_bytes(), rt.peak_device_bytes()) << recompute;
  }
}

TEST(CudaDriver, DeviceTimesKeepStreamAndDependencyOrder) {
  SKIP_WITHOUT_GPU();
  Schedule s = tiny({});
  CudaDriver driver(s, 0);
  Runtime rt(s, 0, driver, ExecOptions());
  StepResult r;
  cuda_losses(s, 2, rt, &r);
  const Program& p = rt.program();
  ASSERT_EQ(r.tasks.size(), p.tasks.size());
  for (const Task& t : p.tasks) {
    EXPECT_GE(r.tasks[t.id].start_s, 0) << "task " << t.id;
    EXPECT_GE(r.tasks[t.id].end_s, r.tasks[t.id].start_s) << "task " << t.id;
    if (!std::holds_alternative<Compute>(t.op)) continue;
    // Compute tasks of one stream are enqueued after the previous one finished: device times
    // follow program order (event resolution is about half a microsecond).
    for (TaskId d : t.deps)
      if (std::holds_alternative<Compute>(p.tasks[d].op)) {
        EXPECT_LE(r.tasks[d].end_s, r.tasks[t.id].start_s + 1e-6) << "task " << t.id << " dep " << d;
      }
  }
}

}  // namespace
}  // namespace tandem::exec
