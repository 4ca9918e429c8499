// The runtime on one rank, in process (no MPI): stream and dependency order of the recorded
// times, every task once, memory against the planner, the loss falling.
#include "exec/runtime.h"

#include <gtest/gtest.h>

#include <cmath>

#include "exec/host_driver.h"
#include "shared/error.h"
#include "shared/memory_timeline.h"

namespace tandem::exec {
namespace {

Schedule tiny(std::vector<std::string> sets) {
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

void expect_schedule_order(const Program& p, const StepResult& r) {
  ASSERT_EQ(r.tasks.size(), p.tasks.size());
  std::vector<TaskId> last(kStreamCount, kNoId);
  for (const Task& t : p.tasks) {
    const TaskTimes& x = r.tasks[t.id];
    ASSERT_GE(x.start_s, 0) << "task " << t.id << " did not run";
    EXPECT_GE(x.end_s, x.start_s) << "task " << t.id;
    for (TaskId d : t.deps) EXPECT_LE(r.tasks[d].end_s, x.start_s) << "task " << t.id << " dep " << d;
    TaskId& prev = last[static_cast<int>(t.stream)];
    if (prev != kNoId) {
      EXPECT_LE(r.tasks[prev].end_s, x.start_s) << "task " << t.id << " after " << prev;
    }
    prev = t.id;
  }
}

TEST(Runtime, RunsEveryTaskInStreamAndDependencyOrder) {
  Schedule s = tiny({});
  auto driver = make_host_driver(nullptr);
  ExecOptions o;
  Runtime rt(s, 0, *driver, o);
  for (int step = 0; step < 2; ++step) expect_schedule_order(rt.program(), rt.run_step(step));
}

TEST(Runtime, LossFallsOverFiveSteps) {
  Schedule s = tiny({});
  auto driver = make_host_driver(nullptr);
  Runtime rt(s, 0, *driver, ExecOptions());
  const double tokens = double(s.scenario().strategy.global_batch) * s.scenario().model.seq_len;
  std::vector<double> loss;
  for (int step = 0; step < 5; ++step) {
    StepResult r = rt.run_step(step);
    ASSERT_TRUE(r.loss_sum.has_value());
    loss.push_back(*r.loss_sum / tokens);
  }
  // A freshly initialised model predicts nearly uniformly: the first loss is close to ln(vocab)
  // (ln 256 = 5.545); with N(0, 0.02) weights the logits are within a few hundredths of 0.
  EXPECT_NEAR(loss[0], std::log(256.0), 0.1);
  for (size_t i = 1; i < loss.size(); ++i) EXPECT_LT(loss[i], loss[i - 1]) << "step " << i + 1;
}

// The allocator's peak over steps equals the planner's (shared/memory_timeline.h): the runtime
// runs Alloc and Free tasks in program order, so live memory walks the planned timeline.
void expect_peak_as_planned(std::vector<std::string> sets) {
  Schedule s = tiny(sets);
  auto driver = make_host_driver(nullptr);
  Runtime rt(s, 0, *driver, ExecOptions());
  for (int step = 0; step < 2; ++step) rt.run_step(step);
  EXPECT_EQ(rt.peak_device_bytes(), memory_profile(rt.program()).peak_device_bytes);
}

TEST(Runtime, PeakMemoryIsThePlannersPlain) { expect_peak_as_planned({}); }
TEST(Runtime, PeakMemoryIsThePlannersFullRecompute) { expect_peak_as_planned({"strategy.recompute=full"}); }
TEST(Runtime, PeakMemoryIsThePlannersSelectiveRecompute) {
  expect_peak_as_planned({"strategy.recompute=selective"});
}

TEST(Runtime, PersistentStateKeepsItsMemoryBetweenSteps) {
  // After a step only persistent state is live: the planner's model states of the prologue minus
  // the gradients, which are freed at the end of the step and allocated again by the next one.
  Schedule s = tiny({});
  auto driver = make_host_driver(nullptr);
  Runtime rt(s, 0, *driver, ExecOptions());
  rt.run_step(0);
  const MemoryProfile prof = memory_profile(rt.program());
  EXPECT_EQ(rt.device_bytes(), prof.model_states.total() - prof.model_states[BufferRole::kGrad]);
}

TEST(HostDriver, RejectsWhatItCannotRun) {
  try {
    check_host_scenario(tiny({"strategy.dtype=bf16"}).scenario());
    FAIL() << "bf16 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("fp32"), std::string::npos) << e.what();
  }
  try {
    check_host_scenario(tiny({"model.dropout=0.1"}).scenario());
    FAIL() << "dropout accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("dropout"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::exec
