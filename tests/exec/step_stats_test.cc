// exec/step_stats.h and exec/run_args.h's placement: hand-computed quartiles and placements.
#include "exec/step_stats.h"

#include <gtest/gtest.h>

#include "exec/run_args.h"

namespace tandem::exec {
namespace {

TEST(StepSpread, DropsTheWarmUpStepAndInterpolatesQuartiles) {
  // Steps 2..6: 4, 1, 3, 2, 5 -> sorted 1 2 3 4 5: q1 at position 1 = 2, median 3, q3 4, mean 3.
  const StepSpread s = step_spread({100, 4, 1, 3, 2, 5});
  EXPECT_EQ(s.first_step, 1);
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.q1_s, 2);
  EXPECT_DOUBLE_EQ(s.median_s, 3);
  EXPECT_DOUBLE_EQ(s.q3_s, 4);
  EXPECT_DOUBLE_EQ(s.max_s, 5);
  EXPECT_DOUBLE_EQ(s.mean_s, 3);
  EXPECT_DOUBLE_EQ(s.relative_iqr(), 2.0 / 3.0);
  EXPECT_EQ(s.representative, 3);  // the step that took 3
}

TEST(StepSpread, EvenCountMedianIsTheMiddleMean) {
  // Steps 2..5: 1 2 3 10 -> median (2 + 3) / 2 = 2.5; q1 at 0.75 -> 1.75; q3 at 2.25 -> 4.75.
  const StepSpread s = step_spread({0, 10, 2, 1, 3});
  EXPECT_DOUBLE_EQ(s.median_s, 2.5);
  EXPECT_DOUBLE_EQ(s.q1_s, 1.75);
  EXPECT_DOUBLE_EQ(s.q3_s, 4.75);
  EXPECT_EQ(s.representative, 2);  // 2 and 3 are equally near 2.5: the first one
}

TEST(StepSpread, OneStepIsItsOwnSteadyState) {
  const StepSpread s = step_spread({7});
  EXPECT_EQ(s.first_step, 0);
  EXPECT_DOUBLE_EQ(s.median_s, 7);
  EXPECT_EQ(s.representative, 0);
}

// One BLAS thread per rank whatever the spare cores (exec/run_args.h: a profile's kernel times are
// one thread's), bound to a core of its own only when the ranks fit.
TEST(Placement, OneBlasThreadPerRankAndBindingOnlyWhenRanksFit) {
  EXPECT_EQ(core_placement_for(2, 2).blas_threads, 1);
  EXPECT_STREQ(core_placement_for(2, 2).bind, "core");
  EXPECT_EQ(core_placement_for(2, 8).blas_threads, 1);
  EXPECT_EQ(core_placement_for(1, 2).blas_threads, 1);
  EXPECT_EQ(core_placement_for(4, 2).blas_threads, 1);
  EXPECT_STREQ(core_placement_for(4, 2).bind, "none");
  EXPECT_EQ(core_placement_for(1, 0).cores, 1);
}

// A rank is bound to one core (its one thread), and ranks poll without yielding exactly when
// ranks x threads (= ranks) fit the cores.
TEST(Placement, EachRankIsBoundToOneCoreAndPollsOnlyWhenTheyFit) {
  EXPECT_EQ(core_placement_for(1, 2).cores_per_rank, 1);   // 1 rank, 1 thread, 2 cores
  EXPECT_EQ(core_placement_for(2, 8).cores_per_rank, 1);
  EXPECT_EQ(core_placement_for(2, 2).cores_per_rank, 1);
  EXPECT_EQ(core_placement_for(3, 2).cores_per_rank, 1);   // unbound
  EXPECT_FALSE(core_placement_for(2, 2).yield_when_idle);  // 2 x 1 <= 2
  EXPECT_FALSE(core_placement_for(3, 8).yield_when_idle);  // 3 x 1 <= 8
  EXPECT_TRUE(core_placement_for(4, 2).yield_when_idle);   // 4 x 1 > 2
  EXPECT_TRUE(yields_when_idle(2, 2, 2));                   // 2 x 2 > 2
  EXPECT_TRUE(yields_when_idle(2, 0, 1));                   // cores not told: yield
}

}  // namespace
}  // namespace tandem::exec
