// The heaviest closed set (shared/max_closure.h) on graphs small enough to enumerate by hand.
#include <gtest/gtest.h>

#include "shared/error.h"
#include "shared/max_closure.h"

namespace tandem {
namespace {

TEST(MaxClosure, TakesWhatPaysForWhatItRequires) {
  // 0 (+5) requires 1 (-3): taking both gives 2, better than nothing. 2 (+1) requires 3 (-4):
  // taking both gives -3, so 2 is left out. Best: {0, 1} = 2.
  std::vector<char> closed;
  EXPECT_EQ(max_closure_weight({5, -3, 1, -4}, {{0, 1}, {2, 3}}, &closed), 2);
  EXPECT_EQ(closed, (std::vector<char>{1, 1, 0, 0}));
}

TEST(MaxClosure, ARequirementSharedByTwoGainsIsPaidOnce) {
  // 0 (+3) and 1 (+3) both require 2 (-5): each alone loses (-2), together they gain 1.
  EXPECT_EQ(max_closure_weight({3, 3, -5}, {{0, 2}, {1, 2}}), 1);
}

TEST(MaxClosure, RequirementsAreTransitive) {
  // A chain 0 -> 1 -> 2 -> 3 (each requires the next): +10, -2, -2, -2. Taking 0 takes the whole
  // chain: 4. Without 0, any closed set of the rest is a suffix of negative weight: the empty set.
  EXPECT_EQ(max_closure_weight({10, -2, -2, -2}, {{0, 1}, {1, 2}, {2, 3}}), 4);
  EXPECT_EQ(max_closure_weight({5, -2, -2, -2}, {{0, 1}, {1, 2}, {2, 3}}), 0);
}

TEST(MaxClosure, ALongChainNeedsNoRecursion) {
  // 200 000 nodes in a chain, node i requiring i + 1: node 0 is +2 and requires the whole chain,
  // whose last node is -1 and the rest 0. Best: the whole chain, 1.
  const size_t n = 200000;
  std::vector<int64_t> w(n, 0);
  w[0] = 2;
  w[n - 1] = -1;
  std::vector<std::pair<uint32_t, uint32_t>> needs;
  for (uint32_t i = 0; i + 1 < n; ++i) needs.push_back({i, i + 1});
  EXPECT_EQ(max_closure_weight(w, needs), 1);
}

TEST(MaxClosure, RefusesANodeOutOfRange) {
  EXPECT_THROW(max_closure_weight({1, 2}, {{0, 2}}), Error);
}

}  // namespace
}  // namespace tandem
