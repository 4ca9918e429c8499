#include "traces/trace_builder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shared/error.h"
#include "traces/scenario_digest.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

using testing::kMiB;

// Task t of rank r runs from r + t to r + t + 0.5 seconds.
void record_all(TraceBuilder& b, int rank, bool reverse = false) {
  for (int i = 0; i < testing::kSampleTasks; ++i) {
    int t = reverse ? testing::kSampleTasks - 1 - i : i;
    b.task(rank, TaskId(t), rank + t, rank + t + 0.5);
  }
}

TEST(TraceBuilder, FillsEveryFieldOfEveryEvent) {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "sim", "SimGrid 3.32");
  {
    Program p = s.program(0);
    b.begin_rank(p);
  }  // the builder keeps what it needs: the program may go
  record_all(b, 0, /*reverse=*/true);
  b.memory(0, 0.0, 48 * kMiB, 0);
  proto::Trace t = b.finish();

  EXPECT_EQ(t.format(), "tandem-trace-2");
  EXPECT_EQ(t.scenario_name(), "trace-test");
  EXPECT_EQ(t.scenario_digest(), scenario_digest(s.scenario()));
  EXPECT_EQ(t.backend(), "sim");
  EXPECT_EQ(t.machine(), "SimGrid 3.32");
  EXPECT_FALSE(t.has_created_unix_s());
  EXPECT_EQ(t.world_size(), 2);
  EXPECT_EQ(t.event_count(), uint64_t(testing::kSampleTasks));
  ASSERT_EQ(t.ranks_size(), 1);
  const proto::Rank& r = t.ranks(0);
  EXPECT_EQ(r.rank(), 0);
  const proto::Events& e = r.events();
  ASSERT_EQ(e.task_id_size(), testing::kSampleTasks);
  ASSERT_EQ(t.labels_size(), testing::kSampleTasks);  // every sample task has its own label

  Program p = testing::sample_program(0);
  for (int i = 0; i < testing::kSampleTasks; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(e.task_id(i), uint32_t(i));  // sorted by task id though recorded in reverse
    EXPECT_EQ(e.stream(i), uint32_t(p.tasks[i].stream));
    EXPECT_EQ(e.start_s(i), double(i));
    EXPECT_EQ(e.end_s(i), i + 0.5);
  }
  // Labels as traces/task_label.h specifies them, in order of first appearance.
  EXPECT_EQ(t.labels(e.label(1)), "gemm 2048x4608x12288 fp16");
  EXPECT_EQ(t.labels(e.label(2)), "all-reduce tp 48.0MiB");
  EXPECT_EQ(t.labels(e.label(3)), "send 24.0MiB");
  EXPECT_EQ(t.labels(e.label(4)), "recv 24.0MiB");
  EXPECT_EQ(t.labels(e.label(5)), "h2d 12.0MiB");
  EXPECT_EQ(t.labels(e.label(8)), "free");

  // GEMM: 2mnk = 2 * 2048 * 4608 * 12288 flops.
  EXPECT_EQ(e.flops(1), 231928233984.0);
  const auto& gemm = std::get<Compute>(p.tasks[1].op);
  EXPECT_EQ(e.bytes(1), std::llround(gemm.bytes_moved()));
  const auto& attn = std::get<Compute>(p.tasks[6].op);
  EXPECT_EQ(e.flops(6), attn.matmul_flops());
  EXPECT_GT(e.flops(6), 0);
  EXPECT_EQ(e.bytes(2), 48 * kMiB);
  EXPECT_EQ(e.bytes(3), 24 * kMiB);
  EXPECT_EQ(e.bytes(5), 12 * kMiB);
  EXPECT_EQ(e.flops(2), 0);
  EXPECT_EQ(e.bytes(0), 0);  // alloc
}

TEST(TraceBuilder, RanksInOrderLabelsSharedMemoryPeaks) {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "cuda", "H200");
  b.begin_rank(s.program(1));
  b.begin_rank(s.program(0));
  record_all(b, 1);
  record_all(b, 0);
  // Out of time order, with two samples at t=2 whose order must be kept.
  b.memory(1, 3.0, 10, 5);
  b.memory(1, 2.0, 70, 1);
  b.memory(1, 2.0, 40, 9);
  b.memory(1, 0.0, 0, 0);
  proto::Trace t = b.finish();

  ASSERT_EQ(t.ranks_size(), 2);
  EXPECT_EQ(t.ranks(0).rank(), 0);
  EXPECT_EQ(t.ranks(1).rank(), 1);
  EXPECT_EQ(t.event_count(), uint64_t(2 * testing::kSampleTasks));
  EXPECT_EQ(t.labels_size(), testing::kSampleTasks);  // interned once for both ranks
  for (int i = 0; i < testing::kSampleTasks; ++i)
    EXPECT_EQ(t.ranks(0).events().label(i), t.ranks(1).events().label(i));

  const proto::MemorySamples& m = t.ranks(1).memory();
  ASSERT_EQ(m.time_s_size(), 4);
  EXPECT_EQ(std::vector<double>(m.time_s().begin(), m.time_s().end()), (std::vector<double>{0, 2, 2, 3}));
  EXPECT_EQ(std::vector<int64_t>(m.device_bytes().begin(), m.device_bytes().end()),
            (std::vector<int64_t>{0, 70, 40, 10}));
  EXPECT_EQ(t.ranks(1).peak_device_bytes(), 70);
  EXPECT_EQ(t.ranks(1).peak_host_bytes(), 9);
  EXPECT_EQ(t.ranks(0).peak_device_bytes(), 0);
  EXPECT_EQ(t.ranks(0).memory().time_s_size(), 0);
}

TEST(TraceBuilder, OnlyRanksUsedAppear) {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "host", "");
  b.memory(1, 0.5, 100, 0);  // allowed before (and without) begin_rank
  proto::Trace t = b.finish();
  ASSERT_EQ(t.ranks_size(), 1);
  EXPECT_EQ(t.ranks(0).rank(), 1);
  EXPECT_EQ(t.ranks(0).events().task_id_size(), 0);
  EXPECT_EQ(t.ranks(0).peak_device_bytes(), 100);
  EXPECT_EQ(t.event_count(), 0u);
}

TEST(TraceBuilder, RejectsMisuse) {
  Schedule s = testing::sample_schedule();
  EXPECT_THROW(TraceBuilder(s, "gpu", ""), Error);
  TraceBuilder b(s, "sim", "");
  EXPECT_THROW(b.task(0, 1, 0, 1), Error);  // before begin_rank
  b.begin_rank(s.program(0));
  EXPECT_THROW(b.begin_rank(s.program(0)), Error);
  EXPECT_THROW(b.task(0, testing::kSampleTasks, 0, 1), Error);  // no such task
  EXPECT_THROW(b.task(0, 1, 2.0, 1.0), Error);                  // ends before it starts
  EXPECT_THROW(b.task(0, 1, NAN, 1.0), Error);
  EXPECT_THROW(b.task(2, 1, 0, 1), Error);  // outside the world
  EXPECT_THROW(b.memory(-1, 0, 0, 0), Error);
  EXPECT_THROW(b.memory(0, INFINITY, 0, 0), Error);
  b.task(0, 1, 0, 1);
  b.task(0, 1, 1, 2);
  try {
    b.finish();
    FAIL() << "a task recorded twice must be reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 task 1: recorded twice"), std::string::npos) << e.what();
  }
}

TEST(TraceBuilder, RejectsTaskIdsThatAreNotIndices) {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "sim", "");
  Program p = testing::sample_program(0);
  p.tasks[3].id = 7;
  EXPECT_THROW(b.begin_rank(p), Error);
}

TEST(TraceBuilder, FinishOnce) {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "sim", "");
  b.begin_rank(s.program(0));
  b.finish();
  EXPECT_THROW(b.finish(), Error);
  EXPECT_THROW(b.task(0, 0, 0, 1), Error);
}

}  // namespace
}  // namespace tandem
