// Pipeline bubbles with uniform stage times (Narayanan et al., SC21, section 2.2): with p stages,
// m micro-batches, forward tf and backward tb per stage, GPipe and 1F1B take (m + p - 1)(tf + tb)
// and the bubble fraction of the iteration is (p-1)/(m+p-1); interleaved 1F1B with v chunks per
// stage (tf/v and tb/v each) has a bubble of (p-1)(tf+tb)/v, a fraction (p-1)/(v*m + p-1).
// The stage programs follow shared/pipeline_order.h, messages on the four p2p streams, sized 0
// so that the formulas' assumption of free communication holds.
#include <gtest/gtest.h>

#include "shared/pipeline_order.h"
#include "sim/sim_report.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

constexpr double kTf = 1e-3, kTb = 2e-3;

Schedule pipeline(PpSchedule kind, int p, int m, int v) {
  ClusterSpec c = test_cluster(p);
  return make_schedule(c, p, {}, [=](int s) {
    ProgramWriter w(s);
    const int prev = (s + p - 1) % p, next = (s + 1) % p;
    for (const PipeOp& op : pipeline_order(kind, p, s, m, v)) {
      const bool first = s == 0 && op.chunk == 0, last = s == p - 1 && op.chunk == v - 1;
      if (op.forward) {
        std::vector<TaskId> deps;
        if (!first) deps.push_back(w.recv(prev, 0, Stream::kRecvFwd));
        const TaskId f = w.gemm(1, 1, 1, deps);
        if (!last) w.send(next, 0, Stream::kSendFwd, {f});
      } else {
        std::vector<TaskId> deps;
        if (!last) deps.push_back(w.recv(next, 0, Stream::kRecvBwd));
        const TaskId b = w.gemm(2, 2, 2, deps, Phase::kBackward);
        if (!first) w.send(prev, 0, Stream::kSendBwd, {b});
      }
    }
    return w.p;
  });
}

SimOptions uniform_times(int v) {
  SimOptions o = ideal_options();
  auto t = std::make_shared<CalibrationTable>();
  t->add(Kernel::kGemm, DType::kBf16, {1, 1, 1, 0, 0, 0}, kTf / v);
  t->add(Kernel::kGemm, DType::kBf16, {2, 2, 2, 0, 0, 0}, kTb / v);
  o.calibration = t;
  return o;
}

void check(PpSchedule kind, int p, int m, int v) {
  const SimResult r = simulate(pipeline(kind, p, m, v), uniform_times(v));
  const double want_fraction = double(p - 1) / (v * m + p - 1);
  const Breakdown b = breakdown_of(r, 0);
  EXPECT_NEAR(b.compute_s, m * (kTf + kTb), 1e-9);
  EXPECT_NEAR(b.bubble_s / r.iteration_time_s, want_fraction, 0.01 * want_fraction)
      << to_string(kind) << " p=" << p << " m=" << m << " v=" << v;
  EXPECT_NEAR(r.iteration_time_s, (m + double(p - 1) / v) * (kTf + kTb), 0.01 * r.iteration_time_s);
}

TEST(PipelineBubble, GPipe) {
  check(PpSchedule::kGpipe, 4, 8, 1);
  check(PpSchedule::kGpipe, 8, 16, 1);
}

TEST(PipelineBubble, OneForwardOneBackward) {
  check(PpSchedule::k1f1b, 4, 8, 1);
  check(PpSchedule::k1f1b, 8, 32, 1);
}

TEST(PipelineBubble, Interleaved) {
  check(PpSchedule::kInterleaved, 4, 8, 2);
  check(PpSchedule::kInterleaved, 4, 16, 4);
}

}  // namespace
}  // namespace tandem::sim::testing
