// search/walk_point.h: the plan's verdict counts the tasks a simulation of the point generates,
// which the overlapped walk uses to start the longest simulations first.
#include "search/walk_point.h"

#include <gtest/gtest.h>

#include <string>

#include "shared/schedule.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

// The tasks of the point's class programs, generated one by one (what the simulator's
// ReplayEngine::prepare generates with shared class programs).
uint64_t class_tasks(PointChecker& checker, const Candidate& c) {
  Scenario point;
  std::string message;
  EXPECT_TRUE(checker.check(candidate_sets(c), &point, &message)) << message;
  const Schedule s(std::move(point));
  uint64_t tasks = 0;
  for (const RankClass& k : s.rank_classes()) tasks += s.program(k.representative).tasks.size();
  return tasks;
}

TEST(WalkPoint, VerdictCountsTheClassProgramsTasks) {
  PointChecker checker(kTiny, {}, 8);
  Candidate a;  // dp 2 x tp 2 x pp 2: one class per stage
  a.dp = 2, a.tp = 2, a.pp = 2;
  Candidate b;  // dp 8: one class
  b.dp = 8;
  for (const Candidate& c : {a, b}) {
    const PlanVerdict v = plan_point(checker, c);
    EXPECT_GT(v.tasks, 0u);
    EXPECT_EQ(v.tasks, class_tasks(checker, c)) << "dp " << c.dp << " tp " << c.tp << " pp " << c.pp;
  }
}

}  // namespace
}  // namespace tandem::search
