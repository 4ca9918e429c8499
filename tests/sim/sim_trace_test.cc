// The trace the simulation process streams (SimOptions::trace_path) against the one TraceBuilder
// builds from the same run's recorded times, field by field; with tensor-parallel folding, whose
// units' timings the stream keeps once.
#include "sim/sim_trace.h"

#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "shared/error.h"
#include "shared/resource_limit.h"
#include "sim/sim_memory_estimate.h"
#include "sim/simulation.h"
#include "traces/trace_builder.h"
#include "traces/trace_writer.h"

namespace tandem::sim {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What tandem sim built before traces were streamed (sim_main.cc's build_trace): every rank
// begun with its class program, then every recorded time and memory sample.
proto::Trace builder_trace(const Schedule& schedule, const SimResult& r) {
  TraceBuilder tb(schedule, "sim", schedule.scenario().cluster.gpu_name + " (SimGrid model)");
  for (const RankClass& c : schedule.rank_classes()) {
    Program p = schedule.program(c.representative);
    for (int rank = 0; rank < schedule.world_size(); ++rank) {
      if (schedule.representative_of(rank) != c.representative) continue;
      p.rank = rank;
      tb.begin_rank(p);
    }
  }
  for (const TaskTiming& t : r.tasks) tb.task(t.rank, t.task, t.start_s, t.end_s);
  for (const MemorySample& m : r.memory) tb.memory(m.rank, m.time_s, m.device_bytes, m.host_bytes);
  return tb.finish();
}

void expect_streamed_equals_built(const std::vector<std::string>& sets, int fold) {
  Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tandem-sim-trace-" + std::to_string(::getpid()) + ".trace")).string();
  SimOptions o;
  o.record_tasks = o.record_memory = true;
  o.trace_path = path;
  const SimResult r = simulate(s, o);
  EXPECT_EQ(r.fold, fold);
  const std::string bytes = slurp(path);
  std::filesystem::remove(path);
  proto::Trace streamed;
  ASSERT_TRUE(streamed.ParseFromString(bytes));
  ASSERT_TRUE(streamed.has_checksum());
  EXPECT_EQ(streamed.checksum(), fnv1a64(std::string_view(bytes).substr(0, bytes.size() - 10)));
  EXPECT_EQ(streamed.ranks_size(), s.world_size());

  // The prediction interval travels in the trace, after the ranks (tandem compare reads it).
  ASSERT_TRUE(streamed.has_iteration_time_low_s() && streamed.has_iteration_time_high_s());
  EXPECT_EQ(streamed.iteration_time_low_s(), r.iteration_time_low_s);
  EXPECT_EQ(streamed.iteration_time_high_s(), r.iteration_time_high_s);
  EXPECT_LE(r.iteration_time_low_s, r.iteration_time_s);
  EXPECT_LE(r.iteration_time_s, r.iteration_time_high_s);

  proto::Trace built = builder_trace(s, r);
  built.set_iteration_time_low_s(r.iteration_time_low_s);
  built.set_iteration_time_high_s(r.iteration_time_high_s);
  built.set_checksum(streamed.checksum());
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(built, streamed)) << diff.substr(0, 2000);
}

TEST(SimTrace, StreamedTraceEqualsTheBuilderTrace) {
  expect_streamed_equals_built({"cluster.gpus=4", "strategy.pp=2", "strategy.dp=2", "strategy.zero_stage=1"}, 1);
}

TEST(SimTrace, FoldedUnitsAreWrittenForEveryRank) {
  // Grid folding: a state per pipeline stage stands for its 2 replicas x 2 tp lanes, ranks that are
  // not consecutive (stage 0: ranks 0, 1, 4, 5).
  expect_streamed_equals_built({"cluster.gpus=8", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=2",
                                "strategy.global_batch=16"},
                               4);
  // Pure data parallelism: one state for the 16 replicas (consecutive ranks).
  expect_streamed_equals_built({"cluster.gpus=16", "strategy.global_batch=32"}, 16);
}

// The estimate's terms on a schedule whose counts are known: tiny-gpt on one GPU, one class.
TEST(SimMemoryEstimate, CountsProgramsStatesAndRecordings) {
  Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto"));
  const Program p = s.program(0);
  const int64_t tasks = int64_t(p.tasks.size()), buffers = int64_t(p.buffers.size());
  int64_t allocs = 0;
  for (const Task& t : p.tasks) allocs += std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op);
  SimOptions o;
  const int64_t plain = (int64_t(64) << 20) + tasks * 350 + (tasks / 8 + buffers) + 512;
  EXPECT_EQ(estimate_memory(s, o, false).bytes, plain);
  o.trace_path = "x.trace";
  EXPECT_EQ(estimate_memory(s, o, false).bytes, plain + (tasks + allocs) * 64 + tasks * 120);
  EXPECT_EQ(estimate_memory(s, o, true).bytes, plain + (tasks + allocs) * 64 + tasks * 120 + tasks * 205);
  ResourceLimit small;
  small.max_memory_bytes = int64_t(1) << 20;
  try {
    const MemoryEstimate e = estimate_memory(s, o, false);
    check_memory_estimate(e.bytes, "tandem sim", e.how, small);
    FAIL() << "not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::sim
