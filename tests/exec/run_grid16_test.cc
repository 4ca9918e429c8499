// `tandem run` of the multi-dimensional tensor-parallel modes with a data- or pipeline-parallel
// axis on 16 ranks (issue #14, docs/tp_modes.md): 2.5D (d 2 x q 2) and 3D (q 2 x q x q), each with
// DP 2 and with PP 2. Losses equal the single rank's to 1e-5 relative; measured peak memory
// equals the planned peak on every rank.
//
// Sixteen MPI processes on this machine's two cores spend their time in scheduling and
// message latency, not arithmetic, and the run's wall time grows with the number of collectives
// (layers x micro-batches). So the tiny GPT runs here with 2 layers instead of 4 (one per stage
// under PP 2) and one micro-batch of 4 per replica, and its single-rank reference with the same
// 2 layers and batch. Each strategy is one test (losses and peaks from the same run) and ctest
// runs them alone (RUN_SERIAL, tests/exec/CMakeLists.txt): about 10-20 s each on a quiet
// machine, minutes when other jobs hold the cores.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "shared/pipeline_memory.h"
#include "shared/memory_timeline.h"
#include "shared/schedule.h"
#include "tests/exec/run_test_util.h"

namespace tandem {
namespace {

const char kModel[] = "--set model.layers=2 --set strategy.micro_batch=4";

using testing::numbers;

// One run per argument list, shared by the tests of this process. The guard is long: 16 ranks
// on a loaded machine take minutes (the job's own --timeout still catches a hung rank).
const testing::Json& result(const std::string& args) {
  return testing::cached_run_json(args + " " + kModel, 540);
}

struct Strategy {
  const char* name;
  const char* args;
  const char* base = "-n 1";  // the single-rank run (with kModel) whose losses it must equal
};
const Strategy kStrategies[] = {
    // 3D: a 2 x 2 x 2 cube per replica. With ZeRO-1 over the two replicas (each rank's optimizer
    // state split with its peer in the other cube), and with two stages of one layer each (the
    // tied table's copy on the last stage, its gradient all-reduced between the stages).
    {"tp3d_q2_dp2_zero1", "-n 16 --set strategy.tp=8 --set strategy.tp_mode=3d --set strategy.zero_stage=1"},
    {"tp3d_q2_pp2", "-n 16 --set strategy.tp=8 --set strategy.tp_mode=3d --set strategy.pp=2"},
    // 2.5D: two depth layers of 2 x 2 per replica (each micro-batch of 4 over the 4 grid rows),
    // with plain data parallelism and with two stages.
    {"tp2p5d_q2_d2_dp2", "-n 16 --set strategy.tp=8 --set strategy.tp_mode=2.5d --set strategy.tp_depth=2"},
    {"tp2p5d_q2_d2_pp2",
     "-n 16 --set strategy.tp=8 --set strategy.tp_mode=2.5d --set strategy.tp_depth=2 --set strategy.pp=2"},
    // 3D with PP 2 and a 2304-token vocabulary (above Colossal-AI's vocab_parallel_limit of 2048):
    // the vocabulary-parallel head and loss on the last stage (shared/tp2d.h, grid_vocab_parallel).
    {"tp3d_q2_pp2_vocab_parallel",
     "-n 16 --set strategy.tp=8 --set strategy.tp_mode=3d --set strategy.pp=2 --set model.vocab=2304",
     "-n 1 --set model.vocab=2304"},
    // 2.5D d 2 x q 2 with DP 2 and the same vocabulary: the vocabulary-parallel embedding
    // (VocabParallelEmbedding2p5D: each depth layer looks up its share of the micro-batch, the
    // table's gradient summed over depth and replicas) and head.
    {"tp2p5d_q2_d2_dp2_vocab_parallel",
     "-n 16 --set strategy.tp=8 --set strategy.tp_mode=2.5d --set strategy.tp_depth=2 --set model.vocab=2304",
     "-n 1 --set model.vocab=2304"},
};

void PrintTo(const Strategy& s, std::ostream* os) { *os << s.name; }

class GridRun : public ::testing::TestWithParam<Strategy> {};

TEST_P(GridRun, LossesAndPeaksEqualTheSingleRanksAndThePlanners) {
  const Strategy& st = GetParam();
  // Global batch 8 (tiny-gpt.textproto): the single rank runs 2 micro-batches of 4.
  const std::vector<double> base = numbers(result(st.base).at("losses"));
  const testing::Json& got_run = result(st.args);
  const std::vector<double> got = numbers(got_run.at("losses"));
  ASSERT_EQ(base.size(), 5u);
  ASSERT_EQ(got.size(), base.size());
  // fp32: the same products summed in other orders (gathered blocks, reduce-scatters, SUMMA
  // accumulation, the data-parallel and depth all-reduces) agree to a few roundings.
  double worst = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    EXPECT_NEAR(got[i], base[i], 1e-5 * std::abs(base[i])) << "step " << i + 1;
    worst = std::max(worst, std::abs(got[i] - base[i]) / std::abs(base[i]));
  }
  std::cout << st.name << ": largest relative loss difference " << worst << "\n";

  // Peaks: the planner's program-order walk (pipeline-aware with pp > 1, as tests/exec/run_test.cc
  // checks the other strategies).
  std::vector<std::string> sets = {"model.layers=2", "strategy.micro_batch=4"};
  std::istringstream in(st.args);
  std::string w, n;
  while (in >> w) {
    if (w == "--set") in >> w, sets.push_back(w);
    else if (w == "-n") in >> n, sets.push_back("cluster.gpus=" + n);
  }
  Schedule s(load_scenario(testing::kTinyScenario, sets));
  ASSERT_EQ(s.world_size(), 16);
  const std::vector<double> measured = numbers(got_run.at("peak_memory_bytes_per_rank"));
  const std::vector<double> reported = numbers(got_run.at("planned_peak_memory_bytes_per_rank"));
  ASSERT_EQ(int(measured.size()), s.world_size());
  ASSERT_EQ(int(reported.size()), s.world_size());
  for (int r = 0; r < s.world_size(); ++r) {
    const double planned = double(memory_profile(s, r).peak_device_bytes);
    EXPECT_EQ(reported[r], planned) << "rank " << r;
    const PeakRange range = pipeline_peak_range(s, r);
    EXPECT_LE(double(range.least_bytes), planned) << "rank " << r;
    EXPECT_GE(double(range.most_bytes), planned) << "rank " << r;
    if (s.scenario().strategy.pp == 1) {
      EXPECT_EQ(measured[r], planned) << "rank " << r;
    }
    EXPECT_GE(measured[r], 0.99 * double(range.least_bytes)) << "rank " << r;
    EXPECT_LE(measured[r], 1.01 * double(range.most_bytes)) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, GridRun, ::testing::ValuesIn(kStrategies),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem
