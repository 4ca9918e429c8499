#include "traces/trace_writer.h"

#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <fstream>
#include <sstream>

#include "shared/error.h"
#include "traces/trace_builder.h"
#include "traces/trace_columns.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sample schedule's two ranks through TraceBuilder: task t of rank r from r + t to r + t + 0.5 s.
proto::Trace built_trace(const Schedule& s) {
  TraceBuilder b(s, "sim", "SimGrid 3.32");
  for (int r = 0; r < 2; ++r) {
    b.begin_rank(s.program(r));
    for (int t = 0; t < testing::kSampleTasks; ++t) b.task(r, TaskId(t), r + t, r + t + 0.5);
    b.memory(r, 0.5, 48 * testing::kMiB, 0);
    b.memory(r, 8.5, 0, 0);
  }
  return b.finish();
}

// FNV-1a 64, spelled out from its definition (http://www.isthe.com/chongo/tech/comp/fnv/):
// for each byte, xor it into the hash, then multiply by the prime, modulo 2^64.
uint64_t fnv_by_hand(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;  // 0xcbf29ce484222325
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;  // 0x100000001b3
  return h;
}

TEST(TraceWriter, FnvMatchesPublishedVectors) {
  // The reference's test vectors (FNV-1a 64): "" and "a".
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(fnv1a64("bar", fnv1a64("foo")), fnv1a64("foobar"));  // continues a running hash
}

TEST(TraceWriter, StreamedTraceEqualsTheBuilderTrace) {
  testing::TempDir dir;
  const Schedule s = testing::sample_schedule();
  const proto::Trace whole = built_trace(s);

  proto::Trace header = whole;
  header.clear_ranks();
  header.clear_event_count();
  {
    TraceWriter w(dir.file("t.trace"), header);
    for (const proto::Rank& r : whole.ranks()) w.add_rank(r);
    EXPECT_EQ(w.event_count(), uint64_t(2 * testing::kSampleTasks));
    w.finish();
  }
  const std::string bytes = slurp(dir.file("t.trace"));
  proto::Trace back;
  ASSERT_TRUE(back.ParseFromString(bytes));  // plain protobuf
  EXPECT_EQ(back.format(), "tandem-trace-2");
  EXPECT_EQ(back.event_count(), uint64_t(2 * testing::kSampleTasks));
  ASSERT_TRUE(back.has_checksum());
  proto::Trace expected = whole;
  expected.set_checksum(back.checksum());
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(expected, back)) << diff;

  // The last 10 bytes: the tag of field 16 as a fixed64 ((16 << 3) | 1 = 129, varint 0x81 0x01),
  // then the hash of every byte before the tag, little-endian.
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(uint8_t(bytes[bytes.size() - 10]), 0x81);
  EXPECT_EQ(uint8_t(bytes[bytes.size() - 9]), 0x01);
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored |= uint64_t(uint8_t(bytes[bytes.size() - 8 + i])) << (8 * i);
  EXPECT_EQ(stored, fnv_by_hand(bytes.substr(0, bytes.size() - 10)));
  EXPECT_EQ(back.checksum(), stored);

  // Whole-trace helper: the same bytes.
  write_trace_streamed(whole, dir.file("u.trace"));
  EXPECT_EQ(slurp(dir.file("u.trace")), bytes);
}

TEST(TraceWriter, RefusesRanksOutOfOrderAndBrokenRanks) {
  testing::TempDir dir;
  const Schedule s = testing::sample_schedule();
  const proto::Trace whole = built_trace(s);
  proto::Trace header = whole;
  header.clear_ranks();
  TraceWriter w(dir.file("t.trace"), header);
  w.add_rank(whole.ranks(1));
  try {
    w.add_rank(whole.ranks(0));
    FAIL() << "rank 0 after rank 1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 follows rank 1"), std::string::npos) << e.what();
  }
  proto::Rank broken = whole.ranks(1);
  broken.set_rank(3);  // outside a world of 2
  EXPECT_THROW(w.add_rank(broken), Error);
  // Not finished: no file, no temporary left behind.
}

TEST(TraceWriter, UnfinishedWriterLeavesNoFile) {
  testing::TempDir dir;
  const Schedule s = testing::sample_schedule();
  proto::Trace header = built_trace(s);
  header.clear_ranks();
  { TraceWriter w(dir.file("t.trace"), header); }
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace tandem
