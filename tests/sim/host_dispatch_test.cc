// software.host_dispatch_us in the replay: a kernel starts no earlier than the host has issued it,
// and the host issues the compute stream's kernels one after another at that cost without waiting
// for the GPU (docs/accuracy.md, "Host dispatch"). Short kernels become host-bound; a long kernel
// lets the host run ahead and hides the dispatch of the short kernels after it.
#include <gtest/gtest.h>

#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

// Element-wise adds on the test cluster (2000 GB/s HBM, launch 0): an add of n bf16 elements
// moves 3 * 2 * n bytes at 2000 GB/s * 0.88 (the measured streaming fraction,
// sim/kernel_curves.cc memory_efficiency) = 1.76e12 B/s:
//   n = 176,000      -> 1.056e6 B  -> 0.6 us   (short: under the 8 us dispatch)
//   n = 176,000,000  -> 1.056e9 B  -> 600 us   (long)
constexpr int64_t kShort = 176000, kLong = 176000000;
constexpr double kShortS = 0.6e-6, kLongS = 600e-6, kDispatchS = 8e-6;

// One rank; `sizes` are the adds' element counts, each depending on the previous one.
Schedule chain(std::vector<int64_t> sizes, double dispatch_us) {
  ClusterSpec c = test_cluster(1);
  Scenario s = test_scenario(c);
  s.software.host_dispatch_us = dispatch_us;
  return Schedule(s, 1, {}, std::make_unique<LambdaGenerator>([sizes](int rank) {
                    ProgramWriter w(rank);
                    std::vector<TaskId> dep;
                    for (int64_t n : sizes) {
                      Compute k;
                      k.kernel = Kernel::kAdd;
                      k.dtype = DType::kBf16;
                      k.dims = {n, 0, 0, 0, 0, 0};
                      dep = {w.add(Stream::kCompute, k, dep)};
                    }
                    return w.p;
                  }));
}

double iteration(std::vector<int64_t> sizes, double dispatch_us, bool fuse) {
  SimOptions o = ideal_options();
  o.fuse_compute = fuse;
  return simulate(chain(std::move(sizes), dispatch_us), o).iteration_time_s;
}

TEST(HostDispatch, ShortKernelsWaitForTheHost) {
  // Ten 0.6 us kernels: the host issues the k-th at 8k us, so the last starts at 80 us and ends at
  // 80.6 us, against 10 * 0.6 = 6 us with no dispatch cost (a CUDA graph).
  const std::vector<int64_t> ten(10, kShort);
  for (bool fuse : {false, true}) {
    EXPECT_NEAR(iteration(ten, 8, fuse), 10 * kDispatchS + kShortS, 1e-9) << "fuse " << fuse;
    EXPECT_NEAR(iteration(ten, 0, fuse), 10 * kShortS, 1e-9) << "fuse " << fuse;
  }
}

TEST(HostDispatch, LongKernelsHideIt) {
  // Ten 600 us kernels: only the first waits for its issue (8 us); the host is ahead after that:
  // 8 + 10 * 600 = 6008 us.
  const std::vector<int64_t> ten(10, kLong);
  for (bool fuse : {false, true})
    EXPECT_NEAR(iteration(ten, 8, fuse), kDispatchS + 10 * kLongS, 1e-9) << "fuse " << fuse;
}

TEST(HostDispatch, TheHostRunsAheadDuringALongKernel) {
  // A 600 us kernel issued at 8 us, then ten 0.6 us kernels issued at 16 .. 88 us, all before the
  // long one ends at 608 us: they run back to back, 608 + 6 = 614 us. In the other order the
  // short ones are host-bound (80.6 us), then the long one, issued at 88 us, starts at 88 us:
  // 688 us.
  std::vector<int64_t> long_first(11, kShort), long_last(11, kShort);
  long_first.front() = kLong;
  long_last.back() = kLong;
  for (bool fuse : {false, true}) {
    EXPECT_NEAR(iteration(long_first, 8, fuse), kDispatchS + kLongS + 10 * kShortS, 1e-9) << "fuse " << fuse;
    EXPECT_NEAR(iteration(long_last, 8, fuse), 11 * kDispatchS + kLongS, 1e-9) << "fuse " << fuse;
  }
}

TEST(HostDispatch, RecordedTaskTimesFollowTheHost) {
  // The timeline of ten short kernels, fused into one timer: the k-th (from 0) starts at
  // 8 (k + 1) us and ends 0.6 us later.
  SimOptions o = ideal_options();
  o.record_tasks = true;
  const SimResult r = simulate(chain(std::vector<int64_t>(10, kShort), 8), o);
  ASSERT_EQ(r.tasks.size(), 10u);
  for (size_t k = 0; k < r.tasks.size(); ++k) {
    EXPECT_NEAR(r.tasks[k].start_s, (double(k) + 1) * kDispatchS, 1e-9) << k;
    EXPECT_NEAR(r.tasks[k].end_s, (double(k) + 1) * kDispatchS + kShortS, 1e-9) << k;
  }
}

}  // namespace
}  // namespace tandem::sim::testing
