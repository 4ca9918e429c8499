// Naming the rank that stopped from the stalled ranks' reports (exec/stall_verdict.h). Each case's
// reports are what the ranks of a real stall print (tests/exec/run_test.cc runs them for real).
#include "exec/stall_verdict.h"

#include <gtest/gtest.h>

namespace tandem::exec {
namespace {

TEST(StallVerdict, TwoRanksTheSilentPeerIsNamed) {
  // Rank 1 stopped: rank 0 waits in an all-reduce of group {0, 1}.
  const std::vector<StallReport> reports = {{0, {1}}};
  EXPECT_EQ(stopped_ranks(reports), std::vector<int>{1});
  EXPECT_EQ(stall_verdict(reports), "rank 1 stopped making progress (rank 0 waits on it and it did not report)");
}

TEST(StallVerdict, WaitersOfWaitersDoNotHideTheStoppedRank) {
  // tp 2 x pp 2, rank 3 stopped: rank 2 waits in its tp all-reduce with 3, rank 1 sends to 3,
  // rank 0 sends to 2 (which reported: it is alive, waiting itself).
  const std::vector<StallReport> reports = {{2, {3}}, {0, {2}}, {1, {3}}};
  EXPECT_EQ(stopped_ranks(reports), std::vector<int>{3});
  EXPECT_EQ(stall_verdict(reports),
            "rank 3 stopped making progress (ranks 1, 2 wait on it and it did not report)");
}

TEST(StallVerdict, BarrierWaitersPointAtEveryOtherRank) {
  // Rank 2 stopped before a step barrier of 3 ranks: 0 and 1 each wait on both others.
  const std::vector<StallReport> reports = {{0, {1, 2}}, {1, {0, 2}}};
  EXPECT_EQ(stopped_ranks(reports), std::vector<int>{2});
}

TEST(StallVerdict, MostWaitedOnFirst) {
  // Two silent ranks: 3 is waited on by ranks 0 and 1, 2 by rank 0 only.
  const std::vector<StallReport> reports = {{0, {2, 3}}, {1, {3, 3}}};
  EXPECT_EQ(stopped_ranks(reports), (std::vector<int>{3, 2}));
  EXPECT_EQ(stall_verdict(reports),
            "rank 3 stopped making progress (ranks 0, 1 wait on it and it did not report); "
            "rank 2 stopped making progress (rank 0 waits on it and it did not report)");
}

TEST(StallVerdict, EveryWaitedOnRankReportedIsADeadlockAmongLiveRanks) {
  const std::vector<StallReport> reports = {{1, {0}}, {0, {1}}, {2, {}}};
  EXPECT_TRUE(stopped_ranks(reports).empty());
  EXPECT_EQ(stall_verdict(reports),
            "no rank singled out: every rank waited on has reported a stall itself (ranks 0, 1, 2 stalled)");
}

}  // namespace
}  // namespace tandem::exec
