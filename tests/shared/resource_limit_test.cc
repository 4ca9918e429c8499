// The memory budget's refusal and the checked size arithmetic.
#include "shared/resource_limit.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "shared/error.h"

namespace tandem {
namespace {

TEST(ResourceLimit, RefusesAnEstimateOverTheLimitWithBothFiguresAndTheFlag) {
  ResourceLimit limit;
  limit.max_memory_bytes = int64_t(2) << 30;
  EXPECT_NO_THROW(check_memory_estimate(int64_t(2) << 30, "tandem sim", "1 rank", limit));
  try {
    check_memory_estimate(int64_t(3) << 30, "tandem sim", "8 ranks x 100 tasks", limit);
    FAIL() << "no refusal";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(m.find("about 3.0 GiB"), std::string::npos) << m;
    EXPECT_NE(m.find("limit of 2.0 GiB"), std::string::npos) << m;
    EXPECT_NE(m.find("--max-memory"), std::string::npos) << m;
    EXPECT_NE(m.find("8 ranks x 100 tasks"), std::string::npos) << m;
  }
}

TEST(ResourceLimit, DefaultIsAtLeastOneGiB) { EXPECT_GE(default_max_memory_bytes(), int64_t(1) << 30); }

TEST(ResourceLimit, CheckedArithmeticRefusesOverflow) {
  const int64_t big = std::numeric_limits<int64_t>::max() / 2 + 1;
  EXPECT_EQ(checked_mul(int64_t(1) << 31, int64_t(1) << 31, "x"), int64_t(1) << 62);
  EXPECT_THROW(checked_mul(big, 2, "peak memory"), Error);
  EXPECT_EQ(checked_add(big - 1, big - 1, "x"), 2 * (big - 1));
  EXPECT_THROW(checked_add(big, big, "peak memory"), Error);
}

}  // namespace
}  // namespace tandem
