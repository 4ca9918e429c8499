#include "traces/trace_io.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "shared/error.h"
#include "traces/trace_builder.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

using google::protobuf::util::MessageDifferencer;

proto::Trace sample_trace() {
  Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "cuda", "NVIDIA H200, driver 550.54, \"quoted\"\n2nd line");
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    for (int t = 0; t < testing::kSampleTasks; ++t) b.task(rank, TaskId(t), 0.001 * t, 0.001 * t + 1e-7 * (rank + 1));
    b.memory(rank, 0.0, 48 << 20, 1 << 10);
    b.memory(rank, 0.008, 0, 0);
  }
  proto::Trace t = b.finish();
  t.set_created_unix_s(1.7e9);
  return t;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The message of the Error read_trace throws ("" if it throws none).
std::string read_error(const std::string& path) {
  try {
    read_trace(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

TEST(TraceIo, RoundTripsEveryField) {
  testing::TempDir dir;
  const proto::Trace t = sample_trace();
  write_trace(t, dir.file("a/b/run.trace"));  // parents are created
  const proto::Trace back = read_trace(dir.file("a/b/run.trace"));
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(t, back)) << diff;

  // Field by field, for the fields reports rely on.
  EXPECT_EQ(back.format(), "tandem-trace-2");
  EXPECT_EQ(back.backend(), "cuda");
  EXPECT_EQ(back.machine(), t.machine());
  EXPECT_EQ(back.created_unix_s(), 1.7e9);
  EXPECT_EQ(back.scenario_digest(), t.scenario_digest());
  ASSERT_EQ(back.ranks_size(), 2);
  EXPECT_EQ(back.ranks(1).events().end_s(3), 0.003 + 2e-7);  // doubles exactly
  EXPECT_EQ(back.ranks(1).peak_device_bytes(), 48 << 20);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"a"});
}

// write_trace copies the header fields one by one: a field added to Trace must be added there.
TEST(TraceIo, WriterKnowsEveryTraceField) {
  EXPECT_EQ(proto::Trace::descriptor()->field_count(), 11)  // with the trailer: event_count, checksum
      << "a field was added to Trace: copy it in write_trace's header, then update this count";
}

// The file is the standard encoding of a Trace: any protobuf library reads it, and tandem reads
// what any protobuf library writes.
TEST(TraceIo, FileIsPlainProtobuf) {
  testing::TempDir dir;
  const proto::Trace t = sample_trace();
  write_trace(t, dir.file("run.trace"));
  proto::Trace parsed;
  ASSERT_TRUE(parsed.ParseFromString(slurp(dir.file("run.trace"))));
  EXPECT_TRUE(MessageDifferencer::Equals(t, parsed));

  spit(dir.file("plain.trace"), t.SerializeAsString());
  EXPECT_TRUE(MessageDifferencer::Equals(t, read_trace(dir.file("plain.trace"))));
}

TEST(TraceIo, RejectsMissingFile) {
  testing::TempDir dir;
  const std::string err = read_error(dir.file("nope.trace"));
  EXPECT_CONTAINS(err, dir.file("nope.trace"));
  EXPECT_CONTAINS(err, "No such file");
  EXPECT_CONTAINS(read_error(dir.path().string()), "not a regular file");
}

TEST(TraceIo, RejectsTruncatedFile) {
  testing::TempDir dir;
  write_trace(sample_trace(), dir.file("run.trace"));
  const std::string bytes = slurp(dir.file("run.trace"));
  spit(dir.file("half.trace"), bytes.substr(0, bytes.size() / 2));
  const std::string err = read_error(dir.file("half.trace"));
  EXPECT_CONTAINS(err, dir.file("half.trace"));
  EXPECT_CONTAINS(err, "cut short");
  spit(dir.file("empty.trace"), "");
  EXPECT_CONTAINS(read_error(dir.file("empty.trace")), "empty file");
}

// Every proper prefix of a trace file is rejected, wherever the cut falls (inside a field, or
// between two rank records).
TEST(TraceIo, RejectsEveryPrefix) {
  testing::TempDir dir;
  write_trace(sample_trace(), dir.file("run.trace"));
  const std::string bytes = slurp(dir.file("run.trace"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    spit(dir.file("cut.trace"), bytes.substr(0, n));
    EXPECT_NE(read_error(dir.file("cut.trace")), "") << "a prefix of " << n << " of " << bytes.size() << " bytes was accepted";
  }
}

TEST(TraceIo, RejectsForeignFiles) {
  testing::TempDir dir;
  spit(dir.file("text.trace"), "This is a text file.\nIt is not a trace.\n");
  EXPECT_CONTAINS(read_error(dir.file("text.trace")), "not a tandem trace");

  std::mt19937 rng(42);
  for (int i = 0; i < 50; ++i) {
    std::string noise(1 + rng() % 4096, '\0');
    for (char& c : noise) c = char(rng());
    spit(dir.file("noise.trace"), noise);
    EXPECT_CONTAINS(read_error(dir.file("noise.trace")), "not a tandem trace");
  }

  // Another protobuf message altogether (field 1 holds something else).
  proto::Events other;
  other.add_task_id(3);
  spit(dir.file("other.trace"), other.SerializeAsString());
  EXPECT_CONTAINS(read_error(dir.file("other.trace")), "not a tandem trace");

  proto::Trace v2 = sample_trace();
  v2.set_format("tandem-trace-3");
  spit(dir.file("v2.trace"), v2.SerializeAsString());
  EXPECT_CONTAINS(read_error(dir.file("v2.trace")), "format tandem-trace-3, but this build reads tandem-trace-2");
}

// Traces written by something other than write_trace (SerializeAsString), broken on purpose.
TEST(TraceIo, RejectsInconsistentTraces) {
  testing::TempDir dir;
  auto error_of = [&](const proto::Trace& t) {
    spit(dir.file("bad.trace"), t.SerializeAsString());
    return read_error(dir.file("bad.trace"));
  };
  {
    proto::Trace t = sample_trace();
    t.mutable_ranks(1)->mutable_events()->set_label(2, uint32_t(t.labels_size()));
    const std::string err = error_of(t);
    EXPECT_CONTAINS(err, dir.file("bad.trace"));
    EXPECT_CONTAINS(err, "rank 1 event 2 (task 2): label 9 out of range (9 labels)");
  }
  {
    proto::Trace t = sample_trace();
    t.mutable_ranks(0)->mutable_events()->set_end_s(4, 0.0);
    EXPECT_CONTAINS(error_of(t), "rank 0 event 4 (task 4): end_s 0.000000 < start_s 0.004000");
  }
  {
    proto::Trace t = sample_trace();
    t.mutable_ranks(0)->mutable_events()->add_flops(1);
    EXPECT_CONTAINS(error_of(t), "rank 0: event columns differ in length");
  }
  {
    proto::Trace t = sample_trace();
    t.mutable_ranks(0)->mutable_events()->set_stream(0, kStreamCount);
    EXPECT_CONTAINS(error_of(t), "stream " + std::to_string(kStreamCount) + " out of range");
  }
  {
    proto::Trace t = sample_trace();
    t.mutable_ranks(0)->mutable_events()->set_task_id(1, 0);
    EXPECT_CONTAINS(error_of(t), "task ids must increase");
  }
  {
    proto::Trace t = sample_trace();
    t.mutable_ranks(1)->set_rank(0);
    EXPECT_CONTAINS(error_of(t), "rank 0 follows rank 0");
  }
  {
    proto::Trace t = sample_trace();
    t.set_event_count(17);
    EXPECT_CONTAINS(error_of(t), "event_count says 17 events, the ranks hold 18");
  }
  {
    proto::Trace t = sample_trace();
    t.clear_event_count();  // as if the file ended before its trailer
    EXPECT_CONTAINS(error_of(t), "cut short");
  }
  {
    proto::Trace t = sample_trace();
    t.set_backend("tpu");
    EXPECT_CONTAINS(error_of(t), "backend 'tpu'");
  }
}

// write_trace writes the count the ranks hold, whatever a trace edited since finish() says.
TEST(TraceIo, WriterSetsTheEventCount) {
  testing::TempDir dir;
  proto::Trace t = sample_trace();
  t.mutable_ranks()->RemoveLast();
  EXPECT_EQ(t.event_count(), 18u);  // stale
  write_trace(t, dir.file("run.trace"));
  EXPECT_EQ(read_trace(dir.file("run.trace")).event_count(), 9u);
}

TEST(TraceIo, WriterRefusesWhatTheReaderWouldReject) {
  testing::TempDir dir;
  proto::Trace t = sample_trace();
  t.mutable_ranks(0)->mutable_events()->set_label(0, 99);
  EXPECT_THROW(write_trace(t, dir.file("bad.trace")), Error);
  EXPECT_TRUE(dir.entries().empty());
}

// The layout's point: a large trace costs few bytes an event and reads back fast.
TEST(TraceIo, ColumnsKeepLargeTracesSmall) {
  testing::TempDir dir;
  std::vector<Program> programs(1);
  programs[0].rank = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    Task t;
    t.id = TaskId(i);
    t.op = testing::compute(Kernel::kGemm, DType::kBf16, {2048, 4608, 12288 + 128 * (i % 16)});
    programs[0].tasks.push_back(std::move(t));
  }
  Schedule s(testing::sample_scenario(), 1, {}, std::make_unique<testing::FixedGenerator>(std::move(programs)));
  TraceBuilder b(s, "sim", "");
  b.begin_rank(s.program(0));
  for (int i = 0; i < n; ++i) b.task(0, TaskId(i), 1e-4 * i, 1e-4 * i + 5e-5);
  write_trace(b.finish(), dir.file("big.trace"));
  const auto size = std::filesystem::file_size(dir.file("big.trace"));
  // Per event: task id 3 + stream 1 + start 8 + end 8 + bytes 4 + flops 8 + label 1 bytes.
  EXPECT_LT(double(size) / n, 34.0);
  const proto::Trace back = read_trace(dir.file("big.trace"));
  EXPECT_EQ(back.ranks(0).events().task_id_size(), n);
}

}  // namespace
}  // namespace tandem
