// shared/reference_executor.h's entry over given programs: the run of a schedule's programs handed
// over is the run of the schedule (every task's times), and translated peers (one rank run, its
// messages matched with its own opposite ones) by hand. The rules themselves are tested through
// the pipeline bubbles (pipeline_bubble_test.cc) and the layer probe's replay
// (tests/search/probe_replay_test.cc, which runs through this entry).
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "shared/error.h"
#include "shared/reference_executor.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

// A cost that depends on the rank, the task and its kind, so that a mix-up of programs shows.
double cost(int rank, const Program&, const Task& t) {
  if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) return 0;
  return 1e-3 * (1 + t.id % 7) + 1e-4 * rank + (std::holds_alternative<Compute>(t.op) ? 0 : 5e-3);
}

TEST(ReferenceExecutor, GivenProgramsRunAsTheSchedule) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2", "strategy.global_batch=8"},
        std::vector<std::string>{"cluster.gpus=4", "strategy.dp=2", "strategy.pp=2", "strategy.pp_schedule=interleaved",
                                 "strategy.virtual_stages=2", "strategy.global_batch=8"}}) {
    const Schedule s(testing::tiny(sets));
    const ReferenceRun whole = run_reference(s, cost);
    std::vector<Program> programs;
    for (int r = 0; r < s.world_size(); ++r) programs.push_back(s.program(r));
    const ReferenceRun given = run_reference(s.world_size(), s.groups(), programs, cost);
    EXPECT_EQ(given.makespan_s, whole.makespan_s);
    ASSERT_EQ(given.times.size(), whole.times.size());
    for (size_t r = 0; r < whole.times.size(); ++r) {
      ASSERT_EQ(given.times[r].size(), whole.times[r].size());
      for (size_t i = 0; i < whole.times[r].size(); ++i) {
        EXPECT_EQ(given.times[r][i].start_s, whole.times[r][i].start_s) << "rank " << r << " task " << i;
        EXPECT_EQ(given.times[r][i].end_s, whole.times[r][i].end_s) << "rank " << r << " task " << i;
      }
    }
    // Rank 1 alone, given or generated: the same run (its collectives wait for no one else).
    ReferenceOptions one;
    one.ranks = {1};
    const ReferenceRun alone = run_reference(s, cost, one);
    const ReferenceRun alone_given = run_reference(s.world_size(), s.groups(), {programs[1]}, cost);
    ASSERT_EQ(alone_given.times[1].size(), alone.times[1].size());
    for (size_t i = 0; i < alone.times[1].size(); ++i) EXPECT_EQ(alone_given.times[1][i].end_s, alone.times[1][i].end_s);
    EXPECT_THROW(run_reference(s.world_size(), s.groups(), programs, cost, one), Error);  // ranks are the programs'
  }
}

Task message(TaskId id, bool send, int peer, std::vector<TaskId> deps) {
  SendRecv m;
  m.is_send = send;
  m.peer = peer;
  m.bytes = 1;
  return Task{id, send ? Stream::kTpSend : Stream::kTpRecv, std::move(deps), m};
}

Task kernel(TaskId id, std::vector<TaskId> deps = {}) { return Task{id, Stream::kCompute, std::move(deps), Compute{}}; }

// Rank 1 of a ring of 3: a kernel (2 s), then a send to rank 2 (1 s); a receive from rank 0 posted
// at once (1 s); a kernel after the receive (2 s). Translated, rank 1's receive from the rank one
// place behind pairs with its own send to the rank one place ahead: both start at 2 (the send's
// post), end at 3; the last kernel runs [3, 5]. Without translation the receive is met on time:
// [0, 1], the send [2, 3], the kernel [2, 4] (the compute stream is free at 2).
TEST(ReferenceExecutor, TranslatedPeersPairARanksOwnMessages) {
  ProcessGroup ring;
  ring.id = 0;
  ring.ranks = {0, 1, 2};
  Program p;
  p.rank = 1;
  p.tasks = {kernel(0), message(1, true, 2, {0}), message(2, false, 0, {}), kernel(3, {2})};
  const TaskCost c = [](int, const Program&, const Task& t) { return std::holds_alternative<Compute>(t.op) ? 2.0 : 1.0; };
  ReferenceOptions o;
  o.translated_peers = true;
  const ReferenceRun tr = run_reference(3, {ring}, {p}, c, o);
  EXPECT_DOUBLE_EQ(tr.times[1][1].start_s, 2);
  EXPECT_DOUBLE_EQ(tr.times[1][2].start_s, 2);
  EXPECT_DOUBLE_EQ(tr.times[1][2].end_s, 3);
  EXPECT_DOUBLE_EQ(tr.times[1][3].start_s, 3);
  EXPECT_DOUBLE_EQ(tr.makespan_s, 5);
  const ReferenceRun plain = run_reference(3, {ring}, {p}, c);
  EXPECT_DOUBLE_EQ(plain.times[1][2].start_s, 0);
  EXPECT_DOUBLE_EQ(plain.times[1][3].start_s, 2);
  EXPECT_DOUBLE_EQ(plain.makespan_s, 4);
  // A message whose peer shares no group with the rank cannot be translated.
  ring.ranks = {1, 2};
  EXPECT_THROW(run_reference(3, {ring}, {p}, c, o), Error);
}

}  // namespace
}  // namespace tandem
