#include "traces/trace_io.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "shared/error.h"
#include "shared/input_file.h"
#include "traces/fnv1a.h"
#include "traces/trace_builder.h"
#include "trace_file_util.h"
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
  // The fields written after the ranks: a writer that dropped one fails the round trip below.
  t.set_iteration_time_low_s(0.0071);
  t.set_iteration_time_high_s(0.0093);
  t.mutable_state_probe()->set_allreduce_16kib_s(8.3e-6);
  t.mutable_state_probe()->set_reps(41);
  t.mutable_interval_evidence()->set_name("calibration-spread+host-bench-residuals");
  t.mutable_interval_evidence()->set_bench_rows(33);
  return t;
}

using testing::slurp;
using testing::spit;
using testing::with_checksum;

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
  EXPECT_EQ(proto::Trace::descriptor()->field_count(), 15)
      << "a field was added to Trace: copy it in write_trace's header, then update this count";
}

// The file is the standard encoding of a Trace followed by its checksum: any protobuf library
// reads it, and tandem reads what any protobuf library writes once the checksum is appended.
TEST(TraceIo, FileIsPlainProtobuf) {
  testing::TempDir dir;
  const proto::Trace t = sample_trace();
  write_trace(t, dir.file("run.trace"));
  const std::string bytes = slurp(dir.file("run.trace"));
  ASSERT_GT(bytes.size(), 10u);
  proto::Trace parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes.substr(0, bytes.size() - 10)));
  EXPECT_TRUE(MessageDifferencer::Equals(t, parsed));
  // The last 10 bytes: the checksum field as trace_io.h defines it, computed independently.
  EXPECT_EQ(bytes, with_checksum(bytes.substr(0, bytes.size() - 10)));

  spit(dir.file("plain.trace"), with_checksum(t.SerializeAsString()));
  EXPECT_TRUE(MessageDifferencer::Equals(t, read_trace(dir.file("plain.trace"))));
}

TEST(TraceIo, RejectsMissingFile) {
  testing::TempDir dir;
  const std::string err = read_error(dir.file("nope.trace"));
  EXPECT_CONTAINS(err, dir.file("nope.trace"));
  EXPECT_CONTAINS(err, "No such file");
  EXPECT_CONTAINS(read_error(dir.path().string()), "it is a directory");
}

// Paths that are not regular files are refused before a byte is read: /dev/zero would never
// end, and opening a FIFO that has no writer would wait for one forever.
TEST(TraceIo, RejectsWhatIsNotARegularFile) {
  testing::TempDir dir;
  EXPECT_CONTAINS(read_error("/dev/zero"), "/dev/zero: cannot read trace: not a regular file");
  ASSERT_EQ(::mkfifo(dir.file("fifo.trace").c_str(), 0600), 0);
  EXPECT_CONTAINS(read_error(dir.file("fifo.trace")), "not a regular file");
}

// A file larger than kMaxTraceBytes (64 GiB) is refused by its size, without reading it (a sparse
// file of 64 GiB + 1 byte takes no disk).
TEST(TraceIo, RejectsAFileOverTheSizeLimit) {
  testing::TempDir dir;
  const std::string path = dir.file("huge.trace");
  spit(path, "");
  ASSERT_EQ(::truncate(path.c_str(), kMaxTraceBytes + 1), 0);
  const std::string err = read_error(path);
  EXPECT_CONTAINS(err, path);
  EXPECT_CONTAINS(err, "68719476737 bytes, more than the 65536 MiB a trace may have");
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

  proto::Trace v3 = sample_trace();
  v3.set_format("tandem-trace-3");
  spit(dir.file("v3.trace"), with_checksum(v3.SerializeAsString()));
  EXPECT_CONTAINS(read_error(dir.file("v3.trace")), "format tandem-trace-3, but this build reads tandem-trace-2");
}

// Format 1 (before the checksum) is refused with a message saying what to do.
TEST(TraceIo, RejectsTheFormatBeforeChecksums) {
  testing::TempDir dir;
  proto::Trace v1 = sample_trace();
  v1.set_format("tandem-trace-1");
  spit(dir.file("v1.trace"), v1.SerializeAsString());
  const std::string err = read_error(dir.file("v1.trace"));
  EXPECT_CONTAINS(err, dir.file("v1.trace"));
  EXPECT_CONTAINS(err, "format tandem-trace-1, written by an older tandem");
  EXPECT_CONTAINS(err, "this build reads tandem-trace-2: write the trace again");
}

// A flipped bit in any byte before the checksum's tag, or in the checksum itself, is caught and
// named a checksum mismatch, whether or not the damaged file still parses (the lowest bit of even
// bytes, the highest of odd ones: varint continuation bits and string contents alike).
TEST(TraceIo, RejectsEveryDamagedByte) {
  testing::TempDir dir;
  write_trace(sample_trace(), dir.file("run.trace"));
  const std::string bytes = slurp(dir.file("run.trace"));
  const std::string path = dir.file("flip.trace");
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int mask = i % 2 ? 0x80 : 0x01;
    std::string damaged = bytes;
    damaged[i] = char(damaged[i] ^ mask);
    spit(path, damaged);
    const std::string err = read_error(path);
    if (i + 10 == bytes.size() || i + 9 == bytes.size()) {  // the checksum's tag itself
      EXPECT_NE(err, "") << "byte " << i << " ^ " << mask << " accepted";
      continue;
    }
    EXPECT_CONTAINS(err, path + ": checksum mismatch") << "byte " << i << " ^ " << mask;
  }
}

TEST(TraceIo, RejectsAFileWithoutItsChecksum) {
  testing::TempDir dir;
  write_trace(sample_trace(), dir.file("run.trace"));
  const std::string bytes = slurp(dir.file("run.trace"));
  spit(dir.file("old.trace"), bytes.substr(0, bytes.size() - 10));
  const std::string err = read_error(dir.file("old.trace"));
  EXPECT_CONTAINS(err, dir.file("old.trace"));
  EXPECT_CONTAINS(err, "no checksum after the event count: written by an older tandem or cut short");

  spit(dir.file("more.trace"), bytes + with_checksum(""));  // a second checksum after the first
  EXPECT_CONTAINS(read_error(dir.file("more.trace")), "data after the checksum");
}

// Text is bounded: 4096 bytes a label (or name) is read, 4097 refused, with the path and the
// label's index, before the label is read (a 10 MB label is never allocated).
TEST(TraceIo, RejectsALabelOverTheLimit) {
  testing::TempDir dir;
  proto::Trace t = sample_trace();
  t.set_labels(3, std::string(kMaxTraceTextBytes, 'x'));
  spit(dir.file("max.trace"), with_checksum(t.SerializeAsString()));
  EXPECT_EQ(read_trace(dir.file("max.trace")).labels(3).size(), 4096u);

  t.set_labels(3, std::string(kMaxTraceTextBytes + 1, 'x'));
  spit(dir.file("long.trace"), with_checksum(t.SerializeAsString()));
  std::string err = read_error(dir.file("long.trace"));
  EXPECT_CONTAINS(err, dir.file("long.trace"));
  EXPECT_CONTAINS(err, "label 3 is 4097 bytes long, more than the 4096 bytes a text of a trace may have");
  EXPECT_THROW(write_trace(t, dir.file("written.trace")), Error);

  t.set_labels(3, std::string(10 << 20, 'x'));
  spit(dir.file("huge.trace"), with_checksum(t.SerializeAsString()));
  EXPECT_CONTAINS(read_error(dir.file("huge.trace")), "label 3 is 10485760 bytes long");

  t = sample_trace();
  t.set_machine(std::string(kMaxTraceTextBytes + 1, 'm'));
  spit(dir.file("machine.trace"), with_checksum(t.SerializeAsString()));
  EXPECT_CONTAINS(read_error(dir.file("machine.trace")), "field machine is 4097 bytes long");
}

// Traces written by something other than write_trace (SerializeAsString), broken on purpose, with
// a checksum that matches.
TEST(TraceIo, RejectsInconsistentTraces) {
  testing::TempDir dir;
  auto error_of = [&](const proto::Trace& t) {
    spit(dir.file("bad.trace"), with_checksum(t.SerializeAsString()));
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
    spit(dir.file("cut.trace"), t.SerializeAsString());
    EXPECT_CONTAINS(read_error(dir.file("cut.trace")), "cut short");
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
