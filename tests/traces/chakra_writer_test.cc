#include "traces/chakra/chakra_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "chakra_test_util.h"
#include "json_parser.h"
#include "shared/scenario.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

using ChakraProtoMsg::Node;
using testing::kMiB;

using testing::attr;
using testing::EtFile;

EtFile parse(const std::string& bytes) { return testing::parse_et(bytes); }
EtFile parse_file(const std::string& path) { return testing::parse_et_file(path); }

const Node& node(const EtFile& f, uint64_t id) {
  for (const Node& n : f.nodes)
    if (n.id() == id) return n;
  throw std::runtime_error("no node " + std::to_string(id));
}

std::vector<uint64_t> deps(const Node& n) { return {n.data_deps().begin(), n.data_deps().end()}; }

// The sample program (trace_test_util.h): alloc, gemm, all-reduce, send, recv, h2d, attention,
// layernorm, free; no explicit deps, so each node depends on the previous node of its stream.
TEST(ChakraWriter, SampleProgramNodesAndAttributes) {
  Schedule s = testing::sample_schedule_on_a100();
  ChakraExport counts;
  const EtFile f = parse(chakra_trace(s, s.program(0), chakra_cost_model(s.scenario()), &counts));
  EXPECT_EQ(f.meta.version(), "1.0.0");
  ASSERT_EQ(f.nodes.size(), 7u);  // alloc and free left out
  EXPECT_EQ(counts.dropped, 2);
  EXPECT_EQ(counts.nodes[ChakraProtoMsg::COMP_NODE], 3);
  EXPECT_EQ(counts.nodes[ChakraProtoMsg::COMM_COLL_NODE], 1);
  EXPECT_EQ(counts.nodes[ChakraProtoMsg::COMM_SEND_NODE], 1);
  EXPECT_EQ(counts.nodes[ChakraProtoMsg::COMM_RECV_NODE], 1);
  EXPECT_EQ(counts.nodes[ChakraProtoMsg::MEM_LOAD_NODE], 1);

  const Node& gemm = node(f, 1);
  EXPECT_EQ(gemm.type(), ChakraProtoMsg::COMP_NODE);
  EXPECT_EQ(gemm.name(), "gemm 2048x4608x12288 fp16");
  EXPECT_EQ(attr(gemm, "num_ops").int64_val(), int64_t(2) * 2048 * 4608 * 12288);  // 2mnk
  EXPECT_GT(attr(gemm, "tensor_size").uint64_val(), 0u);
  EXPECT_FALSE(attr(gemm, "is_cpu_op").bool_val());
  EXPECT_TRUE(deps(gemm).empty());  // its stream predecessor is the alloc, which had no deps

  const Node& ar = node(f, 2);
  EXPECT_EQ(ar.type(), ChakraProtoMsg::COMM_COLL_NODE);
  EXPECT_EQ(attr(ar, "comm_type").int64_val(), ChakraProtoMsg::ALL_REDUCE);
  EXPECT_EQ(attr(ar, "comm_type").int64_val(), 0);  // Chakra's value for ALL_REDUCE
  EXPECT_EQ(attr(ar, "comm_size").int64_val(), 48 * kMiB);
  EXPECT_EQ(attr(ar, "pg_name").string_val(), "1");  // group 0: ASTRA-sim ids start at 1

  const Node& send = node(f, 3);
  EXPECT_EQ(send.type(), ChakraProtoMsg::COMM_SEND_NODE);
  EXPECT_EQ(attr(send, "comm_src").int32_val(), 0);
  EXPECT_EQ(attr(send, "comm_dst").int32_val(), 1);
  EXPECT_EQ(attr(send, "comm_tag").int32_val(), 0);
  EXPECT_EQ(attr(send, "comm_size").int64_val(), 24 * kMiB);
  const Node& recv = node(f, 4);
  EXPECT_EQ(recv.type(), ChakraProtoMsg::COMM_RECV_NODE);
  EXPECT_EQ(attr(recv, "comm_src").int32_val(), 1);
  EXPECT_EQ(attr(recv, "comm_dst").int32_val(), 0);

  EXPECT_EQ(node(f, 5).type(), ChakraProtoMsg::MEM_LOAD_NODE);
  EXPECT_EQ(attr(node(f, 5), "tensor_size").uint64_val(), uint64_t(12 * kMiB));
  EXPECT_EQ(deps(node(f, 6)), std::vector<uint64_t>{1});  // attention after the gemm
  EXPECT_EQ(deps(node(f, 7)), std::vector<uint64_t>{6});
}

// With a calibration profile, a compute node whose shape the profile holds takes the measured
// time (tandem sim's price) and says so; the others keep the model's time.
TEST(ChakraWriter, CalibrationProfileGivesMeasuredDurations) {
  Schedule s = testing::sample_schedule_on_a100();
  const Program p = s.program(0);
  const Compute& gemm_task = std::get<Compute>(p.tasks[1].op);  // the sample's gemm (task 1)
  sim::CalibrationTable table;
  table.add(gemm_task.kernel, gemm_task.dtype, gemm_task.shape_dims(), 1234.4e-6);  // 1234.4 us
  ChakraExport counts;
  const EtFile f = parse(chakra_trace(s, p, chakra_cost_model(s.scenario(), &table), &counts, &table));
  const EtFile model = parse(chakra_trace(s, p, chakra_cost_model(s.scenario())));
  EXPECT_EQ(counts.measured, 1);
  const Node& gemm = node(f, 1);
  EXPECT_EQ(gemm.duration_micros(), 1234u);  // nearest microsecond
  EXPECT_DOUBLE_EQ(attr(gemm, "tandem_time_ns").double_val(), 1234.4e3);
  EXPECT_TRUE(attr(gemm, "tandem_measured").bool_val());
  for (uint64_t id : {6, 7}) {  // attention, layernorm: not in the profile
    EXPECT_FALSE(attr(node(f, id), "tandem_measured").bool_val());
    EXPECT_EQ(node(f, id).duration_micros(), node(model, id).duration_micros());
  }
  EXPECT_FALSE(testing::has_attr(node(model, 1), "tandem_measured"));  // no profile, no mark
}

// A dependency on an Alloc stands for the Alloc's own dependencies.
TEST(ChakraWriter, DependenciesThroughAllocAndFreeAreForwarded) {
  Program p;
  p.rank = 0;
  Buffer b;
  b.id = 0;
  b.bytes = 1024;
  p.buffers.push_back(b);
  auto add = [&](Stream st, TaskOp op, std::vector<TaskId> d) {
    Task t;
    t.id = TaskId(p.tasks.size());
    t.stream = st;
    t.op = std::move(op);
    t.deps = std::move(d);
    p.tasks.push_back(std::move(t));
  };
  add(Stream::kCompute, testing::compute(Kernel::kGemm, DType::kFp32, {8, 8, 8}), {});  // 0
  add(Stream::kCompute, testing::compute(Kernel::kGelu, DType::kFp32, {64}), {});       // 1
  add(Stream::kComm, Alloc{0}, {0});                                                   // 2
  Collective c;
  c.op = CollectiveOp::kBroadcast;
  c.group = 0;
  c.root = 1;
  c.bytes = 1024;
  add(Stream::kComm, c, {1});                            // 3: after the alloc (-> 0) and 1
  add(Stream::kCompute, Free{0}, {3});                   // 4: after 1 and 3
  add(Stream::kCompute, testing::compute(Kernel::kAdd, DType::kFp32, {64}), {});  // 5: after the free
  std::vector<ProcessGroup> groups{ProcessGroup{0, GroupKind::kDp, 0, {0}}};
  Schedule s(testing::sample_scenario_on_a100(), 1, groups,
             std::make_unique<testing::FixedGenerator>(std::vector<Program>{p}));
  const EtFile f = parse(chakra_trace(s, s.program(0), chakra_cost_model(s.scenario())));
  ASSERT_EQ(f.nodes.size(), 4u);
  EXPECT_EQ(deps(node(f, 1)), std::vector<uint64_t>{0});
  EXPECT_EQ(deps(node(f, 3)), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(attr(node(f, 3), "comm_type").int64_val(), ChakraProtoMsg::ALL_GATHER);  // ASTRA-sim's
  EXPECT_EQ(attr(node(f, 3), "tandem_collective").string_val(), "broadcast");
  EXPECT_EQ(attr(node(f, 3), "comm_root").int32_val(), 1);
  EXPECT_EQ(deps(node(f, 5)), (std::vector<uint64_t>{1, 3}));
}

// The tiny GPT at tensor 2 x pipeline 2, written to files and read back: one file per rank, node
// counts by type equal to the program's tasks by payload, every dependency an earlier node of the
// same file, every group named by a collective listed with this rank in comm_groups.json, and
// every send matched by a receive on the peer.
TEST(ChakraWriter, GeneratedScheduleFilesReadBack) {
  Schedule s(load_scenario(TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto",
                           {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"}));
  testing::TempDir dir;
  const ChakraExport e = write_chakra(s, dir.file("et/tiny"));
  EXPECT_EQ(e.files, 4);
  std::ifstream groups_in(dir.file("et/tiny.comm_groups.json"));
  std::stringstream groups_text;
  groups_text << groups_in.rdbuf();
  const testing::Json groups = testing::JsonParser::parse(groups_text.str());
  ASSERT_EQ(groups.object.size(), s.groups().size());

  std::map<std::pair<int, int>, int> sends, recvs;  // (src, dst) -> count
  int64_t total_nodes = 0;
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE(rank);
    const EtFile f = parse_file(dir.file("et/tiny." + std::to_string(rank) + ".et"));
    EXPECT_EQ(f.meta.version(), "1.0.0");
    const Program p = s.program(rank);
    std::map<int, int64_t> expected, got;
    for (const Task& t : p.tasks) {
      if (std::holds_alternative<Compute>(t.op)) ++expected[ChakraProtoMsg::COMP_NODE];
      if (std::holds_alternative<Collective>(t.op)) ++expected[ChakraProtoMsg::COMM_COLL_NODE];
      if (const auto* r = std::get_if<SendRecv>(&t.op))
        ++expected[r->is_send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE];
      if (const auto* c = std::get_if<Copy>(&t.op))
        ++expected[c->direction == CopyDirection::kH2D   ? ChakraProtoMsg::MEM_LOAD_NODE
                   : c->direction == CopyDirection::kD2H ? ChakraProtoMsg::MEM_STORE_NODE
                                                         : ChakraProtoMsg::COMP_NODE];
    }
    std::set<uint64_t> ids;
    for (const Node& n : f.nodes) {
      ++got[n.type()];
      for (uint64_t d : n.data_deps()) {
        EXPECT_TRUE(ids.count(d)) << "node " << n.id() << " depends on " << d << ", not an earlier node";
      }
      for (uint64_t d : n.ctrl_deps()) EXPECT_TRUE(ids.count(d)) << "node " << n.id() << " ctrl-depends on " << d;
      EXPECT_TRUE(ids.insert(n.id()).second) << "id " << n.id() << " twice";
      if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        const testing::Json& members = groups.at(attr(n, "pg_name").string_val());
        bool in = false;
        for (const testing::Json& m : members.array) in = in || int(m.number) == rank;
        EXPECT_TRUE(in) << "rank " << rank << " not in group " << attr(n, "pg_name").string_val();
        EXPECT_GT(attr(n, "comm_size").int64_val(), 0);
      }
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE)
        ++sends[{attr(n, "comm_src").int32_val(), attr(n, "comm_dst").int32_val()}];
      if (n.type() == ChakraProtoMsg::COMM_RECV_NODE)
        ++recvs[{attr(n, "comm_src").int32_val(), attr(n, "comm_dst").int32_val()}];
    }
    EXPECT_EQ(got, expected);
    EXPECT_GT(got[ChakraProtoMsg::COMM_COLL_NODE], 0);
    total_nodes += int64_t(f.nodes.size());
  }
  EXPECT_FALSE(sends.empty());  // two pipeline stages exchange activations and gradients
  EXPECT_EQ(sends, recvs);
  int64_t counted = 0;
  for (int64_t n : e.nodes) counted += n;
  EXPECT_EQ(counted, total_nodes);
}

}  // namespace
}  // namespace tandem
