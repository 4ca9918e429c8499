// Prints the simulator's all-reduce times on one 8-GPU node against nccl-tests measurements
// (traces/reference/nccl_allreduce_8xa100.tsv, nccl_allreduce_8xh200.tsv; sources in their first
// lines) for docs/sim.md. Nothing is asserted about the errors: the efficiencies are fit on these
// curves as a whole (docs/sim.md), and a test asserting them back would be circular.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

std::vector<std::pair<double, double>> bytes_and_us(const std::string& file, bool has_time) {
  std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/traces/reference/" + file);
  std::vector<std::pair<double, double>> rows;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::istringstream ls(line);
    double bytes, a, b;
    ls >> bytes >> a >> b;
    // A100 file: bytes time_us algbw busbw; H200 file: bytes busbw algbw (time = bytes / algbw).
    rows.push_back({bytes, has_time ? a : bytes / (b * 1e9) * 1e6});
  }
  return rows;
}

void compare(const char* preset, const std::string& file, bool has_time) {
  const ClusterSpec cl = load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                                       {std::string("cluster.preset=") + preset, "cluster.gpus=8", "strategy.global_batch=16"})
                             .cluster;
  std::vector<double> errs;
  std::printf("%s all-reduce, 8 GPUs\n%14s %12s %12s %8s\n", preset, "bytes", "measured_us", "tandem_us", "error");
  for (auto [bytes, us] : bytes_and_us(file, has_time)) {
    const int64_t b = int64_t(bytes);
    Schedule s = make_schedule(cl, 8, {{0, 1, 2, 3, 4, 5, 6, 7}}, [b](int rank) {
      ProgramWriter w(rank);
      w.collective(CollectiveOp::kAllReduce, 0, b);
      return w.p;
    });
    const double t = simulate(s).iteration_time_s * 1e6;
    ASSERT_TRUE(std::isfinite(t) && t > 0);
    const double e = (t - us) / us;
    errs.push_back(std::fabs(e));
    std::printf("%14.0f %12.1f %12.1f %+7.1f%%\n", bytes, us, t, 100 * e);
  }
  std::sort(errs.begin(), errs.end());
  std::printf("median |error| %.1f %%, worst %.1f %%\n\n", 100 * errs[errs.size() / 2], 100 * errs.back());
}

TEST(NcclReference, AllReduceOnOneNodePrintsErrors) {
  compare("dgx-a100-80g", "nccl_allreduce_8xa100.tsv", true);
  compare("hgx-h200", "nccl_allreduce_8xh200.tsv", false);
}

}  // namespace
}  // namespace tandem::sim::testing
