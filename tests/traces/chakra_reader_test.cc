// tandem sim --chakra: Chakra traces read back as a schedule (traces/chakra/chakra_reader.h).
#include "traces/chakra/chakra_reader.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/delimited_message_util.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "../sim/sim_test_util.h"
#include "chakra_test_util.h"
#include "et_def.pb.h"
#include "shared/error.h"
#include "sim/simulation.h"
#include "trace_test_util.h"
#include "traces/chakra/chakra_writer.h"

namespace tandem {
namespace {

using ChakraProtoMsg::Node;

// A node builder for hand-written traces.
struct N {
  Node n;
  N(uint64_t id, ChakraProtoMsg::NodeType type) {
    n.set_id(id);
    n.set_type(type);
  }
  N& deps(std::initializer_list<uint64_t> ids) {
    for (uint64_t d : ids) n.add_data_deps(d);
    return *this;
  }
  N& micros(uint64_t us) {
    n.set_duration_micros(us);
    return *this;
  }
  N& i64(const char* name, int64_t v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_int64_val(v);
    return *this;
  }
  N& f64(const char* name, double v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_double_val(v);
    return *this;
  }
  N& flag(const char* name, bool v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_bool_val(v);
    return *this;
  }
  N& str(const char* name, const std::string& v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_string_val(v);
    return *this;
  }
};

void write_et(const std::string& path, const std::vector<N>& nodes) {
  std::ofstream out(path, std::ios::binary);
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("1.0.0");
  ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(meta, &out));
  for (const N& n : nodes) ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(n.n, &out));
}

Scenario on_test_cluster() { return sim::testing::test_scenario(sim::testing::test_cluster(8)); }

double iteration(const Schedule& s) { return sim::simulate(s, sim::testing::ideal_options()).iteration_time_s; }

std::string bad_input(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// tandem's own export replays as the scenario does: every node keeps its stream (tandem_stream)
// and its time (tandem_time_ns, picoseconds after the import: at most 0.5 ps off per task); Alloc
// and Free, which take no time, are all that is dropped.
TEST(ChakraReader, TandemExportReplaysAsTheScenario) {
  const std::vector<std::vector<std::string>> layouts = {
      {},
      {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"},
      {"cluster.gpus=4", "strategy.zero_stage=1", "strategy.pp=2"},
  };
  for (const auto& sets : layouts) {
    std::vector<std::string> all = sets;
    all.push_back("software.host_dispatch_us=0");  // the import has no host model
    Scenario sc = load_scenario(TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto", all);
    testing::TempDir dir;
    const std::string prefix = dir.file("tiny");
    const Schedule native(sc);
    const ChakraExport e = write_chakra(native, prefix);
    ChakraImport r;
    const Schedule imported = import_chakra(sc, prefix, &r);
    EXPECT_EQ(r.ranks, native.world_size());
    EXPECT_EQ(r.nodes, e.nodes[4] + e.nodes[5] + e.nodes[6] + e.nodes[7] + e.nodes[2] + e.nodes[3]);
    EXPECT_EQ(r.tasks, r.nodes);
    EXPECT_EQ(r.timed, e.nodes[4]);
    EXPECT_TRUE(r.skipped.empty());
    const sim::SimOptions o;
    const double want = sim::simulate(native, o).iteration_time_s;
    const double got = sim::simulate(imported, o).iteration_time_s;
    EXPECT_NEAR(got, want, want * 1e-9 + double(r.tasks) * 0.5e-12) << ::testing::PrintToString(sets);
  }
}

// A hand-written trace: on rank 0 a host node A (100 us), a BARRIER B after it (not replayed),
// and a compute node C (50 us) after B, listed before A and B in the file. B's dependency is
// forwarded: C waits for A, on another stream, so the iteration takes 150 us, not 100.
TEST(ChakraReader, SkippedNodesForwardTheirDependencies) {
  testing::TempDir dir;
  const std::string prefix = dir.file("w");
  write_et(prefix + ".0.et", {N(3, ChakraProtoMsg::COMP_NODE).deps({2}).micros(50),
                              N(1, ChakraProtoMsg::COMP_NODE).micros(100).flag("is_cpu_op", true),
                              N(2, ChakraProtoMsg::COMM_COLL_NODE).deps({1}).i64("comm_type", ChakraProtoMsg::BARRIER),
                              N(4, ChakraProtoMsg::METADATA_NODE)});
  ChakraImport r;
  const Schedule s = import_chakra(on_test_cluster(), prefix, &r);
  EXPECT_EQ(r.ranks, 1);
  EXPECT_EQ(r.nodes, 4);
  EXPECT_EQ(r.tasks, 2);
  EXPECT_EQ(r.skipped.at("COMM_COLL_NODE BARRIER"), 1);
  EXPECT_EQ(r.skipped.at("METADATA_NODE"), 1);
  const Program p = s.program(0);
  ASSERT_EQ(p.tasks.size(), 2u);
  EXPECT_EQ(p.tasks[0].stream, Stream::kHost);     // A first: C depends on it
  EXPECT_EQ(p.tasks[1].stream, Stream::kCompute);
  EXPECT_EQ(p.tasks[1].deps, std::vector<TaskId>{0});
  EXPECT_NEAR(iteration(s), 150e-6, 1e-12);
}

// A compute node without a time is priced as ASTRA-sim's roofline prices it: 1.56e10 ops at the
// test GPU's 312 TFLOP/s bf16 peak = 50 us, its 1 MB at 2000 GB/s x 0.88 far less; launch 0.
TEST(ChakraReader, UntimedComputeIsPricedFromOpsAndBytes) {
  testing::TempDir dir;
  const std::string prefix = dir.file("w");
  write_et(prefix + ".0.et", {N(7, ChakraProtoMsg::COMP_NODE).i64("num_ops", 15600000000).i64("tensor_size", 1000000)});
  ChakraImport r;
  Scenario sc = on_test_cluster();
  sc.strategy.dtype = DType::kBf16;
  const Schedule s = import_chakra(sc, prefix, &r);
  EXPECT_EQ(r.priced, 1);
  EXPECT_EQ(r.timed, 0);
  EXPECT_NEAR(iteration(s), 50e-6, 1e-12);
}

// A node with both times, as tandem writes them (tandem_time_ns 400 ns, duration_micros rounded up
// to the 1 us minimum): replayed at 400 ns by default, at 1 us with ChakraDurations::kMicros (what
// ASTRA-sim replays); a node with duration_micros only takes it either way (2 us), after the first.
TEST(ChakraReader, DurationsExactOrWholeMicroseconds) {
  testing::TempDir dir;
  const std::string prefix = dir.file("w");
  write_et(prefix + ".0.et", {N(1, ChakraProtoMsg::COMP_NODE).micros(1).f64("tandem_time_ns", 400),
                              N(2, ChakraProtoMsg::COMP_NODE).deps({1}).micros(2)});
  EXPECT_NEAR(iteration(import_chakra(on_test_cluster(), prefix)), 2.4e-6, 1e-12);
  ChakraImportOptions micros;
  micros.durations = ChakraDurations::kMicros;
  ChakraImport r;
  EXPECT_NEAR(iteration(import_chakra(on_test_cluster(), prefix, &r, micros)), 3e-6, 1e-12);
  EXPECT_EQ(r.timed, 2);
  EXPECT_EQ(parse_chakra_durations("micros", "x"), ChakraDurations::kMicros);
  EXPECT_NE(bad_input([] { parse_chakra_durations("ns", "--chakra-durations"); }).find("--chakra-durations: 'ns'"),
            std::string::npos);
}

// Two ranks: collectives find their group in comm_groups.json ("" is every rank), messages
// their peer; the groups are the file's, then the whole world.
TEST(ChakraReader, GroupsAndPeers) {
  testing::TempDir dir;
  const std::string prefix = dir.file("w");
  std::ofstream(prefix + ".comm_groups.json") << "{\"5\": [1, 0]}";
  for (int r = 0; r < 2; ++r)
    write_et(prefix + "." + std::to_string(r) + ".et",
             {N(1, ChakraProtoMsg::COMM_COLL_NODE).i64("comm_type", ChakraProtoMsg::ALL_REDUCE).i64("comm_size", 1024).str("pg_name", "5"),
              N(2, ChakraProtoMsg::COMM_COLL_NODE).i64("comm_type", ChakraProtoMsg::ALL_GATHER).i64("comm_size", 2048),
              r == 0 ? N(3, ChakraProtoMsg::COMM_SEND_NODE).i64("comm_dst", 1).i64("comm_size", 64).i64("comm_tag", 9)
                     : N(3, ChakraProtoMsg::COMM_RECV_NODE).i64("comm_src", 0).i64("comm_size", 64).i64("comm_tag", 9)});
  const Schedule s = import_chakra(on_test_cluster(), prefix);
  ASSERT_EQ(s.groups().size(), 2u);
  EXPECT_EQ(s.groups()[0].ranks, (std::vector<int>{1, 0}));
  EXPECT_EQ(s.groups()[1].ranks, (std::vector<int>{0, 1}));
  const Program p = s.program(1);
  EXPECT_EQ(std::get<Collective>(p.tasks[0].op).group, 0u);
  EXPECT_EQ(std::get<Collective>(p.tasks[0].op).bytes, 1024);
  EXPECT_EQ(std::get<Collective>(p.tasks[1].op).group, 1u);
  EXPECT_EQ(std::get<Collective>(p.tasks[1].op).op, CollectiveOp::kAllGather);
  const auto& m = std::get<SendRecv>(p.tasks[2].op);
  EXPECT_FALSE(m.is_send);
  EXPECT_EQ(m.peer, 0);
  EXPECT_EQ(m.tag, 9);
  EXPECT_GT(iteration(s), 0.0);  // the replay matches every collective and message
}

TEST(ChakraReader, BadTracesNameFileNodeAndField) {
  testing::TempDir dir;
  const std::string p = dir.file("w");
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("w.0.et: no such file"), std::string::npos);
  write_et(p + ".0.et", {N(1, ChakraProtoMsg::COMP_NODE).deps({2}), N(2, ChakraProtoMsg::COMP_NODE).deps({1})});
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("w.0.et: node 1: its dependencies form a cycle"),
            std::string::npos);
  write_et(p + ".0.et", {N(1, ChakraProtoMsg::COMP_NODE), N(1, ChakraProtoMsg::COMP_NODE)});
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("node 1: id used twice"), std::string::npos);
  write_et(p + ".0.et", {N(1, ChakraProtoMsg::COMP_NODE).deps({8})});
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("node 1: data_deps names node 8, which the file lacks"),
            std::string::npos);
  write_et(p + ".0.et", {N(1, ChakraProtoMsg::COMM_SEND_NODE).i64("comm_dst", 3).i64("comm_size", 4)});
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("node 1: comm_dst 3 is not another of the 1 ranks"),
            std::string::npos);
  write_et(p + ".0.et", {N(1, ChakraProtoMsg::COMM_COLL_NODE).i64("comm_type", 0).i64("comm_size", 4).str("pg_name", "7")});
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("node 1: pg_name '7' is not a group"),
            std::string::npos);
  write_et(p + ".0.et", {N(1, ChakraProtoMsg::COMM_SEND_NODE).i64("comm_size", 4)});
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("node 1: attribute comm_dst is missing"),
            std::string::npos);
  std::ofstream(p + ".comm_groups.json") << "{\"1\": [0, 0]}";
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("group 1 lists rank 0 twice"), std::string::npos);
  std::ofstream(p + ".comm_groups.json") << "{\"1\": [0,\n";
  EXPECT_NE(bad_input([&] { import_chakra(on_test_cluster(), p); }).find("w.comm_groups.json:"), std::string::npos);
  std::ofstream(p + ".0.et", std::ios::binary) << "garbage that is no protobuf stream";
  std::remove((p + ".comm_groups.json").c_str());
  bad_input([&] { import_chakra(on_test_cluster(), p); });
}

}  // namespace
}  // namespace tandem
