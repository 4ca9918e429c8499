// One time origin for a measured step's ranks (exec/step_origin.h).
#include "exec/step_origin.h"

#include <gtest/gtest.h>

namespace tandem::exec {
namespace {

// Ranks that started their step at 100.5, 100.25 and 101 s of the machine's clock (binary
// fractions: exact): the earliest is rank 1, so rank 0's times move by 0.25 s, rank 1's by 0 and
// rank 2's by 0.75 s. One rank: no shift; none: nothing.
TEST(StepOrigin, EachRankMovesByItsStartLessTheEarliest) {
  EXPECT_EQ(origin_shifts({100.5, 100.25, 101}), (std::vector<double>{0.25, 0, 0.75}));
  EXPECT_EQ(origin_shifts({7}), (std::vector<double>{0}));
  EXPECT_TRUE(origin_shifts({}).empty());
}

}  // namespace
}  // namespace tandem::exec
