// search/probe_replay.h on hand-written programs of two ranks, every time derived by hand: a
// collective starts when its last member posts it, a kernel on the compute stream runs under it,
// the kernel that reads its output waits for it; a send and its receive start when both are posted.
#include <gtest/gtest.h>

#include "search/probe_replay.h"
#include "shared/error.h"

namespace tandem::search {
namespace {

Task kernel(TaskId id, double seconds, std::vector<TaskId> deps = {}) {
  Compute c;
  c.dims[0] = int64_t(seconds * 10);  // tenths of a second (ReplayCosts::own below)
  return Task{id, Stream::kCompute, std::move(deps), c};
}

Task all_reduce(TaskId id, std::vector<TaskId> deps) {
  Collective c;
  c.group = 0;
  c.bytes = 1;
  return Task{id, Stream::kComm, std::move(deps), c};
}

Task message(TaskId id, bool send, int peer, std::vector<TaskId> deps) {
  SendRecv m;
  m.is_send = send;
  m.peer = peer;
  m.bytes = 1;
  return Task{id, send ? Stream::kTpSend : Stream::kTpRecv, std::move(deps), m};
}

// Rank r: A (1 s on rank 0, 4 s on rank 1); the all-reduce of A's output (2 s); B (3 s), which
// does not read it; C (1 s), which does; a send to the other rank after C; a receive from it,
// posted at once (0.5 s each).
Program program(int r) {
  Program p;
  p.rank = r;
  p.tasks = {kernel(0, r == 0 ? 1 : 4), all_reduce(1, {0}), kernel(2, 3), kernel(3, 1, {1}),
             message(4, true, 1 - r, {3}), message(5, false, 1 - r, {})};
  return p;
}

ReplayCosts costs() {
  ReplayCosts c;
  c.own = [](const Task& t) { return std::get<Compute>(t.op).dims[0] / 10.0; };
  c.collective = [](const Collective&, const std::vector<int>& members) {
    EXPECT_EQ(members, (std::vector<int>{0, 1}));
    return 2.0;
  };
  c.p2p = [](int, int, const SendRecv&) { return 0.5; };
  return c;
}

std::vector<ProcessGroup> groups() {
  ProcessGroup g;
  g.id = 0;
  g.ranks = {0, 1};
  return {g};
}

TEST(ProbeReplay, CollectivesAndMessagesByHand) {
  const std::vector<TaskTimes> t = replay_programs(groups(), {program(0), program(1)}, costs());
  // Rank 0: A [0, 1]; B [1, 4] under the all-reduce, which starts when rank 1 posts it, at 4, and
  // ends at 6; C waits for it: [6, 7]. Rank 1: A [0, 4], B [4, 7], all-reduce [4, 6], C [7, 8].
  EXPECT_DOUBLE_EQ(t[0].start_s[1], 4);
  EXPECT_DOUBLE_EQ(t[0].end_s[1], 6);
  EXPECT_DOUBLE_EQ(t[1].start_s[1], 4);
  EXPECT_DOUBLE_EQ(t[0].end_s[2], 4);
  EXPECT_DOUBLE_EQ(t[0].start_s[3], 6);
  EXPECT_DOUBLE_EQ(t[0].end_s[3], 7);
  EXPECT_DOUBLE_EQ(t[1].start_s[3], 7);
  EXPECT_DOUBLE_EQ(t[1].end_s[3], 8);
  // Rank 0's send is posted at 7, rank 1's receive at 0: [7, 7.5]; rank 1's send at 8: rank 0's
  // receive [8, 8.5].
  EXPECT_DOUBLE_EQ(t[0].start_s[4], 7);
  EXPECT_DOUBLE_EQ(t[0].end_s[4], 7.5);
  EXPECT_DOUBLE_EQ(t[1].end_s[5], 7.5);
  EXPECT_DOUBLE_EQ(t[0].start_s[5], 8);
  EXPECT_DOUBLE_EQ(t[0].end_s[5], 8.5);
}

TEST(ProbeReplay, AnUnmatchedCollectiveIsAnError) {
  Program lone = program(1);
  lone.tasks.resize(1);  // rank 1 never posts the all-reduce
  EXPECT_THROW(replay_programs(groups(), {program(0), lone}, costs()), Error);
}

}  // namespace
}  // namespace tandem::search
