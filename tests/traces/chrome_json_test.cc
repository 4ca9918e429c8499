#include "traces/chrome_json.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "json_parser.h"
#include "traces/trace_builder.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

using testing::Json;
using testing::JsonParser;

proto::Trace two_rank_trace() {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "sim", "model \"roofline\"\tv1\n");
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    // Rank 1 records only the first 4 tasks.
    for (int t = 0; t < (rank == 0 ? testing::kSampleTasks : 4); ++t)
      b.task(rank, TaskId(t), 0.25 * t, 0.25 * t + 0.125);
    b.memory(rank, 0.0, 1000, 0);
    b.memory(rank, 1.0, 500, rank == 1 ? 64 : 0);
  }
  return b.finish();
}

std::vector<const Json*> events_with(const Json& root, const std::string& ph) {
  std::vector<const Json*> out;
  for (const Json& e : root.at("traceEvents").array)
    if (e.at("ph").string == ph) out.push_back(&e);
  return out;
}

TEST(TraceChromeJson, ParsesWithProcessPerRankAndEventPerTask) {
  const proto::Trace t = two_rank_trace();
  const Json root = JsonParser::parse(chrome_json(t));
  EXPECT_EQ(root.at("otherData").at("backend").string, "sim");
  EXPECT_EQ(root.at("otherData").at("machine").string, "model \"roofline\"\tv1\n");

  std::map<int, std::string> processes;
  std::set<std::pair<int, std::string>> threads;
  for (const Json* m : events_with(root, "M")) {
    if (m->at("name").string == "process_name") processes[int(m->at("pid").number)] = m->at("args").at("name").string;
    if (m->at("name").string == "thread_name")
      threads.insert({int(m->at("pid").number), m->at("args").at("name").string});
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{1, "rank 0"}, {2, "rank 1"}}));  // pid = rank + 1
  // Rank 0 used compute, comm, send-fwd, recv-bwd and h2d; rank 1's first 4 tasks the first four.
  EXPECT_EQ(threads, (std::set<std::pair<int, std::string>>{{1, "compute"},
                                                             {1, "comm"},
                                                             {1, "send-fwd"},
                                                             {1, "recv-bwd"},
                                                             {1, "h2d"},
                                                             {2, "compute"},
                                                             {2, "comm"},
                                                             {2, "send-fwd"}}));

  const auto xs = events_with(root, "X");
  ASSERT_EQ(xs.size(), size_t(testing::kSampleTasks + 4));
  const Json* gemm = nullptr;
  for (const Json* x : xs)
    if (x->at("pid").number == 1 && x->at("args").at("task_id").number == 1) gemm = x;
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->at("name").string, "gemm 2048x4608x12288 fp16");
  EXPECT_EQ(gemm->at("cat").string, "gemm");
  EXPECT_EQ(gemm->at("tid").number, 1);          // the compute stream (0) + 1
  EXPECT_EQ(gemm->at("ts").number, 250000.0);    // 0.25 s in microseconds
  EXPECT_EQ(gemm->at("dur").number, 125000.0);
  EXPECT_EQ(gemm->at("args").at("flops").number, 231928233984.0);
  EXPECT_EQ(gemm->at("args").at("bytes").number, double(t.ranks(0).events().bytes(1)));

  // Device memory for both ranks, host memory only for rank 1 (the only one that used any).
  int device = 0, host = 0;
  for (const Json* c : events_with(root, "C")) {
    if (c->at("name").string == "device memory") ++device;
    if (c->at("name").string == "host memory") {
      ++host;
      EXPECT_EQ(c->at("pid").number, 2);
    }
  }
  EXPECT_EQ(device, 4);
  EXPECT_EQ(host, 2);
}

TEST(TraceChromeJson, EmptyTraceIsValid) {
  proto::Trace t;
  t.set_format("tandem-trace-2");
  const Json root = JsonParser::parse(chrome_json(t));
  EXPECT_TRUE(root.at("traceEvents").array.empty());
}

TEST(TraceChromeJson, WritesFileAtomically) {
  testing::TempDir dir;
  write_chrome_json(two_rank_trace(), dir.file("out/run.json"));
  std::ifstream in(dir.file("out/run.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(JsonParser::parse(ss.str()).at("traceEvents").array.size(),
            2u * 2 + 8 * 2 + testing::kSampleTasks + 4 + 4 + 2);  // process + thread metadata, X, C
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out"});
}

TEST(TraceChromeJson, ParserRejectsInvalidJson) {
  EXPECT_THROW(JsonParser::parse("{\"a\":1,}"), std::runtime_error);
  EXPECT_THROW(JsonParser::parse("[1 2]"), std::runtime_error);
  EXPECT_THROW(JsonParser::parse("{\"a\":\"x\ny\"}"), std::runtime_error);
  EXPECT_THROW(JsonParser::parse("[nan]"), std::runtime_error);
  EXPECT_EQ(JsonParser::parse("[1e+15, -0.5, \"\\u0009\"]").array[2].string, "\t");
}

}  // namespace
}  // namespace tandem
