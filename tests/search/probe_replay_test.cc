// search/probe_replay.h on hand-written programs of two ranks, every time derived by hand: a
// collective starts when its last member posts it, a kernel on the compute stream runs under it,
// the kernel that reads its output waits for it; a send and its receive start when both are posted.
#include <gtest/gtest.h>

#include "search/probe_replay.h"
#include "shared/error.h"
#include "shared/scenario.h"

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

// A probe-like one-layer program of the tiny GPT on four ranks, replayed as rank 0's translations
// (replay_symmetric, what the layer probe uses) gives rank 0 the times of replaying all four
// ranks' programs with their collectives and messages matched (replay_programs), for any costs
// that depend on what a task does (not on where: a vocabulary shard's first row): tp 4 with the
// userbuffers ring exchange and without, ring attention's key/value exchange (even and odd ranks
// post their send and receive in opposite orders) over sp 4 and over sp 2 beside tp 2.
TEST(ProbeReplay, ReplayOfRankZeroIsTheReplayOfEveryRank) {
  const std::string tiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"strategy.tp=4", "strategy.sp_mode=megatron", "software.tp_comm_overlap=true"},
        std::vector<std::string>{"strategy.tp=4", "strategy.sp_mode=none", "software.tp_comm_overlap=false"},
        std::vector<std::string>{"strategy.tp=1", "strategy.sp=4", "strategy.sp_mode=ring_attention"},
        std::vector<std::string>{"strategy.tp=2", "strategy.sp=2", "strategy.sp_mode=ring_attention"}}) {
    std::vector<std::string> all = {"model.layers=1", "cluster.gpus=4", "strategy.global_batch=2"};
    all.insert(all.end(), sets.begin(), sets.end());
    const Schedule schedule(load_scenario(tiny, all));
    std::vector<Program> programs;
    for (int r = 0; r < 4; ++r) programs.push_back(schedule.program(r));
    ReplayCosts c;
    c.own = [](const Task& t) {
      if (const auto* k = std::get_if<Compute>(&t.op)) {  // its shape, not where (a vocabulary shard's row)
        const auto d = k->shape_dims();
        return 1e-6 * (1 + int(k->kernel)) + 1e-12 * double(d[0] + d[1] + d[2]);
      }
      if (const auto* cp = std::get_if<Copy>(&t.op)) return 1e-10 * double(cp->bytes);
      return 0.0;
    };
    c.collective = [](const Collective& col, const std::vector<int>& members) {
      return 5e-6 * (1 + int(col.op)) + 1e-10 * double(col.bytes) * double(members.size());
    };
    c.p2p = [](int, int, const SendRecv& m) { return 3e-6 + 2e-10 * double(m.bytes); };
    const std::vector<TaskTimes> every = replay_programs(schedule.groups(), programs, c);
    const TaskTimes zero = replay_symmetric(schedule.groups(), programs[0], c);
    size_t messages = 0;
    for (const Task& t : programs[0].tasks) messages += std::holds_alternative<SendRecv>(t.op);
    EXPECT_EQ(messages > 0, sets.back() != "software.tp_comm_overlap=false") << ::testing::PrintToString(sets);
    ASSERT_EQ(zero.end_s.size(), every[0].end_s.size());
    for (size_t i = 0; i < zero.end_s.size(); ++i) {
      ASSERT_DOUBLE_EQ(zero.start_s[i], every[0].start_s[i]) << "task " << i << " " << ::testing::PrintToString(sets);
      ASSERT_DOUBLE_EQ(zero.end_s[i], every[0].end_s[i]) << "task " << i << " " << ::testing::PrintToString(sets);
    }
  }
}

}  // namespace
}  // namespace tandem::search
