// shared/inline_vector.h: a Task's lists keep up to two ids inside themselves and read, convert and
// compare as the std::vector they replaced (shared/schedule.h).
#include "shared/inline_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "shared/schedule.h"

namespace tandem {
namespace {

using Ids = InlineVector<uint32_t, 2>;

// Inside the object: the ids' address lies within its own bytes.
bool held_inline(const Ids& v) {
  const auto* p = reinterpret_cast<const char*>(v.data());
  const auto* self = reinterpret_cast<const char*>(&v);
  return p >= self && p < self + sizeof v;
}

TEST(InlineVector, TwoIdsInsideSixteenBytes) {
  // Two uint32 sizes (size, heap capacity) and a union of two ids with one 8-byte pointer (LP64).
  static_assert(sizeof(Ids) == 16);
  Ids v{7, 9};
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(v.capacity(), 2u);
  EXPECT_TRUE(held_inline(v));
  EXPECT_EQ(v[0], 7u);
  EXPECT_EQ(v.back(), 9u);
}

TEST(InlineVector, GrowsOntoTheHeapAndKeepsItsIds) {
  Ids v;
  EXPECT_TRUE(v.empty());
  for (uint32_t i = 0; i < 9; ++i) v.push_back(i * 3);
  EXPECT_FALSE(held_inline(v));
  ASSERT_EQ(v.size(), 9u);
  EXPECT_GE(v.capacity(), 9u);
  for (uint32_t i = 0; i < 9; ++i) EXPECT_EQ(v[i], i * 3);
  v.clear();
  EXPECT_TRUE(v.empty());
  v = {4};
  EXPECT_EQ(v, (std::vector<uint32_t>{4}));
}

TEST(InlineVector, CopiesAndMovesInlineAndOnTheHeap) {
  for (const std::vector<uint32_t>& ids : {std::vector<uint32_t>{}, {1}, {1, 2}, {1, 2, 3, 4, 5}}) {
    const Ids a(ids);
    Ids copy = a;
    EXPECT_EQ(copy, a);
    EXPECT_NE(copy.data(), a.data());
    Ids moved = std::move(copy);
    EXPECT_EQ(moved, ids);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    Ids assigned{8, 8, 8};
    assigned = a;
    EXPECT_EQ(assigned, a);
    assigned = std::move(moved);
    EXPECT_EQ(assigned, ids);
    const Ids& same = assigned;
    assigned = same;  // self-assignment keeps the ids
    EXPECT_EQ(assigned, ids);
  }
}

TEST(InlineVector, ConvertsAndComparesAsAStdVector) {
  const std::vector<uint32_t> three{5, 6, 7};
  Ids v = three;
  const std::vector<uint32_t> back = v;
  EXPECT_EQ(back, three);
  EXPECT_TRUE(v == three);
  EXPECT_TRUE(three == v);
  EXPECT_FALSE(v != three);
  EXPECT_TRUE(v != (std::vector<uint32_t>{5, 6}));
  v.assign(three.begin() + 1, three.end());
  EXPECT_EQ(v, (std::vector<uint32_t>{6, 7}));
  EXPECT_THROW(v.at(2), std::out_of_range);
}

TEST(InlineVector, ATaskHoldsItsCommonListsWithoutAHeapBlock) {
  // A kernel with two inputs and one output that waits for two tasks: the lists of 94 % of the
  // 530B search's compute tasks and 99.9 % of its dependency lists (docs/search.md Session 15).
  Compute c;
  c.inputs = {1, 2};
  c.outputs = {3};
  Task t{5, Stream::kCompute, std::vector<TaskId>{1, 4}, c};
  const Compute& held = std::get<Compute>(t.op);
  auto inside = [&](const void* p) {
    const auto* b = reinterpret_cast<const char*>(&t);
    return p >= b && p < b + sizeof t;
  };
  EXPECT_TRUE(inside(t.deps.data()));
  EXPECT_TRUE(inside(held.inputs.data()));
  EXPECT_TRUE(inside(held.outputs.data()));
  EXPECT_EQ(held.inputs, (std::vector<BufferId>{1, 2}));
  EXPECT_EQ(t.deps, (std::vector<TaskId>{1, 4}));
}

}  // namespace
}  // namespace tandem
