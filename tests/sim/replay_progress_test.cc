// The replay's progress line (sim/replay_progress.h): its text and its throttle, driven with a
// made-up wall clock (the terminal check and the real clock are not tested).
#include <gtest/gtest.h>

#include <string>

#include "sim/replay_progress.h"

namespace tandem::sim {
namespace {

// '\r' then the text: what every line written starts with.
std::string cr(const std::string& text) {
  std::string s(1, '\r');
  s += text;
  return s;
}

TEST(ReplayProgress, FormatsSimulatedTimeAndFractionOfTasks) {
  // 1 of 8 tasks = 12.5%, 2 of 3 = 66.666..% -> "66.7", none of none counts as done.
  EXPECT_EQ(ProgressLine::format(1.5, 1, 8), "simulating: t = 1.500000 s, 12.5% of tasks done");
  EXPECT_EQ(ProgressLine::format(0.0123456789, 2, 3), "simulating: t = 0.012346 s, 66.7% of tasks done");
  EXPECT_EQ(ProgressLine::format(0, 0, 0), "simulating: t = 0.000000 s, 100.0% of tasks done");
}

TEST(ReplayProgress, AtMostOneLinePerIntervalOfWallTime) {
  ProgressLine line(/*start_wall_s=*/100.0, /*interval_s=*/0.25);
  EXPECT_EQ(line.update(100.1, 1, 1, 4), "");  // 0.1 s after the start: not due
  EXPECT_EQ(line.update(100.25, 1, 1, 4), cr(ProgressLine::format(1, 1, 4)));
  EXPECT_EQ(line.update(100.4, 2, 2, 4), "");  // 0.15 s after the last line
  EXPECT_EQ(line.update(100.5, 2, 2, 4), cr(ProgressLine::format(2, 2, 4)));
}

// The platform's setup writes lines of its own through the same throttle.
TEST(ReplayProgress, CallersLineThroughTheSameThrottle) {
  ProgressLine line(/*start_wall_s=*/10.0, /*interval_s=*/0.25);
  EXPECT_EQ(line.update(10.1, "building the platform: node 256 of 125000"), "");
  EXPECT_EQ(line.update(10.3, "building the platform: node 512 of 125000"), "\rbuilding the platform: node 512 of 125000");
  // A shorter line is padded with spaces to the width of the longest so far (41 characters).
  EXPECT_EQ(line.update(10.6, "node 1"), "\rnode 1" + std::string(41 - 6, ' '));
  EXPECT_EQ(line.clear(), "\r" + std::string(41, ' ') + "\r");
}

TEST(ReplayProgress, ShorterLineOverwritesTheLongerOneAndClearErasesIt) {
  ProgressLine line(0.0, 0.25);
  const std::string longer = ProgressLine::format(12345.0, 1, 3);  // "t = 12345.000000 s"
  const std::string shorter = ProgressLine::format(1.0, 2, 3);     // "t = 1.000000 s": 4 characters fewer
  ASSERT_EQ(longer.size(), shorter.size() + 4);
  EXPECT_EQ(line.update(1.0, 12345.0, 1, 3), cr(longer));
  EXPECT_EQ(line.update(2.0, 1.0, 2, 3), cr(shorter + "    "));
  EXPECT_EQ(line.clear(), cr(std::string(longer.size(), ' ') + "\r"));
  EXPECT_EQ(line.clear(), "");  // nothing left to erase
}

TEST(ReplayProgress, NothingToClearWhenNoLineWasWritten) {
  ProgressLine line(0.0, 0.25);
  EXPECT_EQ(line.update(0.1, 1, 1, 2), "");
  EXPECT_EQ(line.clear(), "");
}

}  // namespace
}  // namespace tandem::sim
