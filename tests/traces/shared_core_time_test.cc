// The time a span had alone in a run whose ranks shared the cores
// (traces/calibration/shared_core_time.h): the integral of min(1, C / (B x n(t))), n(t) the ranks
// busy at t. Every expected value is derived by hand in its comment.
#include "traces/calibration/shared_core_time.h"

#include <gtest/gtest.h>

namespace tandem {
namespace {

constexpr double us = 1e-6;

// 4 ranks on 2 cores, 1 BLAS thread each, each one 10 us kernel over [0, 10] us: n = 4, rate
// min(1, 2 / (1 x 4)) = 1/2, alone 5 us each; half of it, [0, 5], 2.5 us.
TEST(SharedCoreTime, FourRanksOnTwoCoresRunAtHalfACore) {
  const SharedCoreTime t({{{0, 10 * us}}, {{0, 10 * us}}, {{0, 10 * us}}, {{0, 10 * us}}}, 2, 1);
  EXPECT_TRUE(t.shared());
  EXPECT_NEAR(t.alone(0, 10 * us), 5 * us, 1e-18);
  EXPECT_NEAR(t.alone(0, 5 * us), 2.5 * us, 1e-18);
}

// 3 ranks on 2 cores, all busy over [0, 9] us: rate 2 / 3, alone 6 us.
TEST(SharedCoreTime, ThreeRanksOnTwoCoresRunAtTwoThirds) {
  const SharedCoreTime t({{{0, 9 * us}}, {{0, 9 * us}}, {{0, 9 * us}}}, 2, 1);
  EXPECT_NEAR(t.alone(0, 9 * us), 6 * us, 1e-18);
}

// Spans that overlap partly, 2 cores, 1 thread: ranks a [0, 10], b [0, 10], c [5, 15] us. n = 2 on
// [0, 5) (rate 1), 3 on [5, 10) (rate 2/3), 1 on [10, 15) (rate 1). a alone: 5 + 5 x 2/3 = 25/3 us;
// c: 5 x 2/3 + 5 = 25/3 us; a's part [2, 7]: 3 + 2 x 2/3 = 13/3 us; c's part [8, 12]: 2 x 2/3 + 2
// = 10/3 us.
TEST(SharedCoreTime, PartlyOverlappingSpansArePiecewise) {
  const SharedCoreTime t({{{0, 10 * us}}, {{0, 10 * us}}, {{5 * us, 15 * us}}}, 2, 1);
  EXPECT_NEAR(t.alone(0, 10 * us), 25.0 / 3 * us, 1e-18);
  EXPECT_NEAR(t.alone(5 * us, 15 * us), 25.0 / 3 * us, 1e-18);
  EXPECT_NEAR(t.alone(2 * us, 7 * us), 13.0 / 3 * us, 1e-18);
  EXPECT_NEAR(t.alone(8 * us, 12 * us), 10.0 / 3 * us, 1e-18);
}

// A rank counts once: rank 0's spans [0, 10] and [5, 8] us overlap (a kernel and the time before
// the next one, say), rank 1 is busy over [0, 10]; on 1 core n = 2, rate 1/2, alone(0, 10) = 5 us
// (counting rank 0 twice, n = 3 on [5, 8], would give 5 - 3 x (1/2 - 1/3) = 4.5 us).
TEST(SharedCoreTime, ARanksOwnSpansCountOnce) {
  const SharedCoreTime t({{{0, 10 * us}, {5 * us, 8 * us}}, {{0, 10 * us}}}, 1, 1);
  EXPECT_NEAR(t.alone(0, 10 * us), 5 * us, 1e-18);
}

// B BLAS threads per rank: 2 ranks of 2 threads on 2 cores, both busy on [0, 4] us: rate
// min(1, 2 / (2 x 2)) = 1/2, 2 us. One rank of 2 threads on 1 core, alone: rate 1/2 even with
// n = 1, also outside every span (the asking rank counts: n = 1): [20, 30] us -> 5 us.
TEST(SharedCoreTime, ThreadsPerRankCountAsCores) {
  EXPECT_NEAR(SharedCoreTime({{{0, 4 * us}}, {{0, 4 * us}}}, 2, 2).alone(0, 4 * us), 2 * us, 1e-18);
  const SharedCoreTime one({{{0, 4 * us}}}, 1, 2);
  EXPECT_NEAR(one.alone(0, 4 * us), 2 * us, 1e-18);
  EXPECT_NEAR(one.alone(20 * us, 30 * us), 5 * us, 1e-18);
}

// Ranks that never shared a core: alone is the span itself, to the bit (to - from, no integral):
// 2 ranks on 2 cores; spans that only touch on 1 core (n never exceeds 1: at 5 us one ends as the
// other starts); cores unknown (0). 0.3 - 0.1 is not 0.2 in binary: the exact difference is asked.
TEST(SharedCoreTime, RanksThatFitTheCoresKeepTheirTimeExactly) {
  const SharedCoreTime fit({{{0.1, 0.7}}, {{0.05, 0.6}}}, 2, 1);
  EXPECT_FALSE(fit.shared());
  EXPECT_EQ(fit.alone(0.1, 0.3), 0.3 - 0.1);
  const SharedCoreTime touching({{{0, 5 * us}}, {{5 * us, 10 * us}}}, 1, 1);
  EXPECT_FALSE(touching.shared());
  EXPECT_EQ(touching.alone(0.1 * us, 0.3 * us), 0.3 * us - 0.1 * us);
  const SharedCoreTime unknown({{{0, 1}}, {{0, 1}}, {{0, 1}}}, 0, 1);
  EXPECT_FALSE(unknown.shared());
  EXPECT_EQ(unknown.alone(0.1, 0.3), 0.3 - 0.1);
}

}  // namespace
}  // namespace tandem
