// The conventions of tandem's Chakra export that ASTRA-sim needs (traces/chakra/chakra_writer.h,
// issue 19), each checked without ASTRA-sim: group ids from 1, compute nodes with ops, a tensor
// size and tandem's duration, only collectives ASTRA-sim simulates, communication chained in
// program order, and a replay with ASTRA-sim's one-in-flight issue rules that completes for every
// strategy tandem generates.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chakra_one_in_flight.h"
#include "chakra_test_util.h"
#include "json_parser.h"
#include "shared/scenario.h"
#include "trace_test_util.h"
#include "traces/chakra/chakra_writer.h"

namespace tandem {
namespace {

using ChakraProtoMsg::Node;
using testing::attr;
using testing::EtFile;

// The tiny GPT in every layout tandem generates on 3 to 16 GPUs; Colossal-AI's ring self-attention
// (sp_mode ring) alone, with PP 2 and on an odd ring of 3. 2D/2.5D emit broadcasts and reduces,
// which the export writes as all-gathers and reduce-scatters; 3D (q = 2: 8 ranks, alone, with
// DP 2 and with PP 2) all-gathers and reduce-scatters over its three axes. Ring attention's ring steps
// post their send and receive in the order of the rank's parity (shared/ring_attention.cc: even
// ranks send first), so that a rank blocked in a receive always meets a send already issued; with
// every receive first, as before, each rank waited in its receive (issue 19). sp 2 and sp 4 (even
// rings), sp 3 (odd: ranks 2 and 0, both even, meet; rank 2 sends first), sp 2 with PP 2 and
// with TP 2, and the backward's dK/dV sums under full recompute.
const std::vector<std::vector<std::string>>& strategies() {
  static const std::vector<std::vector<std::string>> s{
      {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"},
      {"cluster.gpus=4", "strategy.pp=4", "strategy.pp_schedule=gpipe"},
      {"cluster.gpus=4", "strategy.pp=2", "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"},
      {"cluster.gpus=4", "strategy.tp=2", "strategy.zero_stage=3"},
      {"cluster.gpus=4", "strategy.zero_stage=1"},
      {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2", "strategy.sp_mode=megatron"},
      {"cluster.gpus=4", "strategy.pp=2", "strategy.offload=optimizer"},
      {"cluster.gpus=4", "strategy.pp=2", "strategy.recompute=full", "strategy.zero_stage=2"},
      {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2", "strategy.sp_mode=megatron",
       "software.tp_comm_overlap=true", "strategy.zero_stage=1"},
      {"cluster.gpus=4", "strategy.tp=4", "strategy.tp_mode=2d"},
      {"cluster.gpus=8", "strategy.tp=4", "strategy.tp_mode=2d", "strategy.pp=2"},
      {"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2", "strategy.micro_batch=4"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ulysses"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention"},
      {"cluster.gpus=4", "strategy.sp=4", "strategy.sp_mode=ring_attention"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention", "strategy.pp=2"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention", "strategy.tp=2"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention", "strategy.recompute=full"},
      {"cluster.gpus=3", "strategy.sp=3", "strategy.sp_mode=ring_attention", "model.seq_len=48"},
      {"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=3d", "strategy.micro_batch=4"},
      {"cluster.gpus=16", "strategy.tp=8", "strategy.tp_mode=3d", "strategy.micro_batch=4",
       "strategy.global_batch=16"},
      {"cluster.gpus=16", "strategy.tp=8", "strategy.tp_mode=3d", "strategy.micro_batch=4",
       "strategy.pp=2"},
      {"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ring"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring", "strategy.pp=2"},
      {"cluster.gpus=3", "strategy.sp=3", "strategy.sp_mode=ring", "model.seq_len=48"},
  };
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

struct Export {
  std::vector<EtFile> ranks;
  std::map<std::string, std::vector<int>> groups;
  ChakraExport counts;
};

Export export_tiny(const std::vector<std::string>& sets) {
  const Schedule s(load_scenario(TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto", sets));
  testing::TempDir dir;
  Export e;
  e.counts = write_chakra(s, dir.file("tiny"));
  for (int r = 0; r < s.world_size(); ++r) e.ranks.push_back(testing::parse_et_file(dir.file("tiny." + std::to_string(r) + ".et")));
  const testing::Json g = testing::JsonParser::parse(testing::read_bytes(dir.file("tiny.comm_groups.json")));
  for (const auto& [key, members] : g.object)
    for (const testing::Json& m : members.array) e.groups[key].push_back(int(m.number));
  return e;
}

const Node& node(const EtFile& f, uint64_t id) {
  for (const Node& n : f.nodes)
    if (n.id() == id) return n;
  throw std::runtime_error("no node " + std::to_string(id));
}

// ASTRA-sim asserts a group id > 0 and takes "0" for all ranks: the sample's groups 0 and 1 are
// written as 1 and 2, with their ranks.
TEST(ChakraAstraSim, GroupIdsStartAtOne) {
  const Schedule s = testing::sample_schedule_on_a100();
  EXPECT_EQ(chakra_comm_groups_json(s), "{\"1\":[0,1],\"2\":[0,1]}\n");
  const EtFile f = testing::parse_et(chakra_trace(s, s.program(0), chakra_cost_model(s.scenario())));
  EXPECT_EQ(attr(node(f, 2), "pg_name").string_val(), "1");  // the all-reduce on group 0

  for (const auto& sets : strategies()) {
    SCOPED_TRACE(joined(sets));
    const Export e = export_tiny(sets);
    EXPECT_FALSE(e.groups.count("0"));
    for (const auto& [key, members] : e.groups) EXPECT_GE(std::stoi(key), 1);
    for (size_t r = 0; r < e.ranks.size(); ++r)
      for (const Node& n : e.ranks[r].nodes)
        if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
          const std::string g = attr(n, "pg_name").string_val();
          ASSERT_TRUE(e.groups.count(g)) << "pg_name " << g << " not in comm_groups.json";
          EXPECT_GE(std::stoi(g), 1);
          const auto& m = e.groups.at(g);
          EXPECT_TRUE(std::count(m.begin(), m.end(), int(r))) << "rank " << r << " not in group " << g;
        }
  }
}

// Ops, tensor size and duration of the sample program's kernels, by hand where the formula is
// the writer's own convention: the GEMM 2048 x 4608 x 12288 fp16 has 2mnk ops and reads A and B
// and writes C (2 bytes each); the layernorm over 2048 x 12288 fp16 moves 2 x 2 x 2048 x 12288
// bytes plus 8 bytes of statistics per row (shared/schedule_types.cc) and, element-wise, carries
// one op per 2-byte element. Durations are tandem sim's compute cost model's, to the microsecond.
TEST(ChakraAstraSim, ComputeNodesCarryOpsSizeAndTandemDuration) {
  const Schedule s = testing::sample_schedule_on_a100();
  const sim::ComputeCostModel costs = chakra_cost_model(s.scenario());
  const Program p = s.program(0);
  const EtFile f = testing::parse_et(chakra_trace(s, p, costs));
  EXPECT_EQ(f.meta.version(), "1.0.0");

  const Node& gemm = node(f, 1);
  EXPECT_EQ(attr(gemm, "num_ops").int64_val(), int64_t(2) * 2048 * 4608 * 12288);
  EXPECT_EQ(attr(gemm, "tensor_size").uint64_val(), uint64_t(2) * (2048 * 12288 + 12288 * 4608 + 2048 * 4608));
  const Node& norm = node(f, 7);
  const uint64_t norm_bytes = uint64_t(2) * 2 * 2048 * 12288 + 8 * 2048;
  EXPECT_EQ(norm_bytes, 100679680u);
  EXPECT_EQ(attr(norm, "tensor_size").uint64_val(), norm_bytes);
  EXPECT_EQ(attr(norm, "num_ops").int64_val(), int64_t(norm_bytes / 2));
  for (uint64_t id : {1, 6, 7}) {
    const Compute& c = std::get<Compute>(p.tasks[id].op);
    const double t = costs.time_s(c);
    EXPECT_GT(t, 1e-6) << id;  // kernels of 100 MB and more: microseconds at least
    EXPECT_EQ(node(f, id).duration_micros(), uint64_t(std::max(1.0, std::round(t * 1e6)))) << id;
    EXPECT_NEAR(attr(node(f, id), "tandem_time_ns").double_val(), t * 1e9, 1e-6 * t * 1e9) << id;
  }

  for (const auto& sets : strategies()) {
    SCOPED_TRACE(joined(sets));
    const Export e = export_tiny(sets);
    int64_t compute = 0;
    for (const EtFile& r : e.ranks)
      for (const Node& n : r.nodes)
        if (n.type() == ChakraProtoMsg::COMP_NODE) {
          ++compute;
          EXPECT_GE(attr(n, "num_ops").int64_val(), 1) << n.name();
          EXPECT_GE(attr(n, "tensor_size").uint64_val(), 1u) << n.name();
          EXPECT_GE(n.duration_micros(), 1u) << n.name();
        }
    EXPECT_EQ(compute, e.counts.nodes[ChakraProtoMsg::COMP_NODE]);
    EXPECT_GT(compute, 0);
  }
}

// ASTRA-sim has no reduce and only replays a broadcast: they are written as reduce-scatter and
// all-gather of the same bytes, named in tandem_collective and counted.
TEST(ChakraAstraSim, ReduceAndBroadcastBecomeCollectivesAstraSimSimulates) {
  std::vector<Program> programs;
  for (int rank = 0; rank < 2; ++rank) {
    Program p;
    p.rank = rank;
    for (CollectiveOp op : {CollectiveOp::kReduce, CollectiveOp::kBroadcast}) {
      Collective c;
      c.op = op;
      c.group = 0;
      c.root = 0;
      c.bytes = 4096;
      Task t;
      t.id = TaskId(p.tasks.size());
      t.stream = Stream::kComm;
      t.op = c;
      p.tasks.push_back(t);
    }
    programs.push_back(std::move(p));
  }
  const Schedule s(testing::sample_scenario_on_a100(), 2, {ProcessGroup{0, GroupKind::kDp, 0, {0, 1}}},
                   std::make_unique<testing::FixedGenerator>(programs));
  ChakraExport counts;
  const EtFile f = testing::parse_et(chakra_trace(s, s.program(1), chakra_cost_model(s.scenario()), &counts));
  ASSERT_EQ(f.nodes.size(), 2u);
  EXPECT_EQ(attr(f.nodes[0], "comm_type").int64_val(), ChakraProtoMsg::REDUCE_SCATTER);
  EXPECT_EQ(attr(f.nodes[0], "tandem_collective").string_val(), "reduce");
  EXPECT_EQ(attr(f.nodes[1], "comm_type").int64_val(), ChakraProtoMsg::ALL_GATHER);
  EXPECT_EQ(attr(f.nodes[1], "tandem_collective").string_val(), "broadcast");
  EXPECT_EQ(attr(f.nodes[1], "comm_size").int64_val(), 4096);
  EXPECT_EQ(counts.reduce_as_reduce_scatter, 1);
  EXPECT_EQ(counts.broadcast_as_all_gather, 1);

  const std::set<int64_t> simulated{ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::ALL_GATHER,
                                    ChakraProtoMsg::REDUCE_SCATTER, ChakraProtoMsg::ALL_TO_ALL};
  for (const auto& sets : strategies()) {
    SCOPED_TRACE(joined(sets));
    for (const EtFile& r : export_tiny(sets).ranks)
      for (const Node& n : r.nodes)
        if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
          EXPECT_TRUE(simulated.count(attr(n, "comm_type").int64_val())) << n.name();
        }
  }
}

// Each communication node's ctrl_deps is the rank's previous communication node, in id order;
// other nodes have none. The sample: all-reduce 2, send 3, receive 4.
TEST(ChakraAstraSim, CommunicationChainedInProgramOrder) {
  const Schedule s = testing::sample_schedule_on_a100();
  const EtFile f = testing::parse_et(chakra_trace(s, s.program(0), chakra_cost_model(s.scenario())));
  EXPECT_TRUE(node(f, 2).ctrl_deps().empty());
  ASSERT_EQ(node(f, 3).ctrl_deps_size(), 1);
  EXPECT_EQ(node(f, 3).ctrl_deps(0), 2u);
  ASSERT_EQ(node(f, 4).ctrl_deps_size(), 1);
  EXPECT_EQ(node(f, 4).ctrl_deps(0), 3u);

  for (const auto& sets : strategies()) {
    SCOPED_TRACE(joined(sets));
    const Export e = export_tiny(sets);
    for (const EtFile& r : e.ranks) {
      long previous = -1;
      for (const Node& n : r.nodes) {
        if (!testing::is_comm_node(n)) {
          EXPECT_EQ(n.ctrl_deps_size(), 0) << n.name();
          continue;
        }
        if (previous < 0) {
          EXPECT_EQ(n.ctrl_deps_size(), 0) << n.name();
        } else {
          ASSERT_EQ(n.ctrl_deps_size(), 1) << n.name();
          EXPECT_EQ(n.ctrl_deps(0), uint64_t(previous)) << n.name();
        }
        EXPECT_GT(long(n.id()), previous);
        previous = long(n.id());
      }
    }
  }
}

// With ASTRA-sim's issue rules (one communication in flight per rank, ready nodes in id order),
// every strategy's export runs to the end: no deadlock, and the members of a group meet on
// collectives of the same type and size.
TEST(ChakraAstraSim, OneInFlightReplayCompletesEveryStrategy) {
  for (const auto& sets : strategies()) {
    SCOPED_TRACE(joined(sets));
    const Export e = export_tiny(sets);
    const testing::OneInFlightOutcome o = testing::replay_one_in_flight(e.ranks, e.groups);
    EXPECT_TRUE(o.completed) << o.problem;
  }
}

// The replay sees the deadlock issue 19 found in ASTRA-sim, on a hand-made pair of ranks: rank 1
// computes, sends to rank 0, then joins an all-reduce that needs nothing; rank 0 receives, then
// joins the all-reduce. Unchained, rank 1 issues the all-reduce (ready, lowest ready id) while its
// send waits for the kernel; rank 0 waits for the send: deadlock. Chained, the all-reduce waits
// for the send.
TEST(ChakraAstraSim, OneInFlightReplaySeesTheUnchainedDeadlock) {
  auto comm = [](uint64_t id, ChakraProtoMsg::NodeType type, std::vector<uint64_t> data, std::vector<uint64_t> ctrl) {
    Node n;
    n.set_id(id);
    n.set_name("n" + std::to_string(id));
    n.set_type(type);
    for (uint64_t d : data) n.add_data_deps(d);
    for (uint64_t d : ctrl) n.add_ctrl_deps(d);
    auto add = [&](const char* name) {
      auto* a = n.add_attr();
      a->set_name(name);
      return a;
    };
    if (type == ChakraProtoMsg::COMM_COLL_NODE) {
      add("pg_name")->set_string_val("1");
      add("comm_type")->set_int64_val(ChakraProtoMsg::ALL_REDUCE);
      add("comm_size")->set_int64_val(1024);
    } else if (type != ChakraProtoMsg::COMP_NODE) {
      add("comm_src")->set_int32_val(1);
      add("comm_dst")->set_int32_val(0);
      add("comm_tag")->set_int32_val(7);
      add("comm_size")->set_int64_val(1024);
    }
    return n;
  };
  const std::map<std::string, std::vector<int>> groups{{"1", {0, 1}}};
  for (bool chained : {false, true}) {
    SCOPED_TRACE(chained);
    std::vector<EtFile> ranks(2);
    ranks[0].nodes = {comm(0, ChakraProtoMsg::COMM_RECV_NODE, {}, {}),
                      comm(1, ChakraProtoMsg::COMM_COLL_NODE, {}, chained ? std::vector<uint64_t>{0} : std::vector<uint64_t>{})};
    ranks[1].nodes = {comm(0, ChakraProtoMsg::COMP_NODE, {}, {}), comm(1, ChakraProtoMsg::COMM_SEND_NODE, {0}, {}),
                      comm(2, ChakraProtoMsg::COMM_COLL_NODE, {}, chained ? std::vector<uint64_t>{1} : std::vector<uint64_t>{})};
    const testing::OneInFlightOutcome o = testing::replay_one_in_flight(ranks, groups);
    EXPECT_EQ(o.completed, chained) << o.problem;
  }
}

// Issue 19: ASTRA-sim deadlocked on the tiny GPT at tensor 2 x pipeline 2 before the chain. Since
// session 15 that export's one cross-stage collective, the tied table's all-reduce, waits for the
// compute stream's last backward task (shared/grad_sync.cc sync_bucket), which orders it after
// every pipeline message of the rank: the replay completes without the chain too. Ring attention
// under a pipeline (sequence 2 x pipeline 2) still needs the chain: the replay, told to ignore
// ctrl_deps, deadlocks on that export (in a pipeline send, its receive in flight); with them it
// completes.
TEST(ChakraAstraSim, TinyRingPp2DeadlocksOnlyWithoutTheChain) {
  const Export tp_pp = export_tiny({"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"});
  EXPECT_TRUE(testing::replay_one_in_flight(tp_pp.ranks, tp_pp.groups, false).completed);
  EXPECT_TRUE(testing::replay_one_in_flight(tp_pp.ranks, tp_pp.groups, true).completed);
  const Export e =
      export_tiny({"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention", "strategy.pp=2"});
  const testing::OneInFlightOutcome unchained = testing::replay_one_in_flight(e.ranks, e.groups, false);
  EXPECT_FALSE(unchained.completed);
  EXPECT_NE(unchained.problem.find("deadlock"), std::string::npos) << unchained.problem;
  EXPECT_TRUE(testing::replay_one_in_flight(e.ranks, e.groups, true).completed);
}

}  // namespace
}  // namespace tandem
