#include "traces/trace_writer.h"

#include <climits>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include "shared/error.h"
#include "traces/trace_io.h"

namespace tandem {
namespace {

using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using google::protobuf::internal::WireFormatLite;

constexpr size_t kBufferBytes = size_t(4) << 20;

// Every field of the trace but the ranks and the trailer (the field-count test in tests/traces
// guards that this list is complete).
proto::Trace header_of(const proto::Trace& t) {
  proto::Trace h;
  h.set_format(t.format());
  h.set_scenario_name(t.scenario_name());
  h.set_scenario_digest(t.scenario_digest());
  h.set_backend(t.backend());
  h.set_machine(t.machine());
  if (t.has_created_unix_s()) h.set_created_unix_s(t.created_unix_s());
  h.set_world_size(t.world_size());
  *h.mutable_labels() = t.labels();
  return h;
}

// The fields written after the ranks (field-number order): the prediction interval, the state
// probe, the interval's evidence.
proto::Trace after_ranks_of(const proto::Trace& t) {
  proto::Trace a;
  if (t.has_iteration_time_low_s()) a.set_iteration_time_low_s(t.iteration_time_low_s());
  if (t.has_iteration_time_high_s()) a.set_iteration_time_high_s(t.iteration_time_high_s());
  if (t.has_state_probe()) *a.mutable_state_probe() = t.state_probe();
  if (t.has_interval_evidence()) *a.mutable_interval_evidence() = t.interval_evidence();
  return a;
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path, const proto::Trace& header)
    : file_(path), shell_(header_of(header)), after_ranks_(after_ranks_of(header).SerializeAsString()) {
  if (header.ranks_size() > 0)
    throw Error("cannot write trace " + path + ": the header holds ranks (give them to add_rank)", ErrorKind::kInternal);
  check_trace(shell_, "cannot write trace " + path);
  put(shell_.SerializeAsString());
}

TraceWriter::~TraceWriter() = default;

void TraceWriter::put(std::string_view bytes) {
  hash_ = fnv1a64(bytes, hash_);
  buffer_.append(bytes);
  if (buffer_.size() >= kBufferBytes) flush();
}

void TraceWriter::flush() {
  file_.append(buffer_);
  buffer_.clear();
}

void TraceWriter::add_rank(const proto::Rank& rank) {
  const std::string what = "cannot write trace " + file_.path();
  if (finished_) throw Error(what + ": rank added after finish", ErrorKind::kInternal);
  if (rank.rank() <= last_rank_)
    throw Error(what + ": rank " + std::to_string(rank.rank()) + " follows rank " + std::to_string(last_rank_) +
                " (ranks must be listed once each, in increasing order)");
  // The checks of read_trace, on the header plus this one rank, lent to the shell for the call.
  auto* ranks = shell_.mutable_ranks();
  ranks->AddAllocated(const_cast<proto::Rank*>(&rank));
  try {
    check_trace(shell_, what);
  } catch (...) {
    (void)ranks->ReleaseLast();  // the caller's, not ours to delete
    throw;
  }
  (void)ranks->ReleaseLast();
  const size_t size = rank.ByteSizeLong();
  if (size > size_t(INT_MAX))
    throw Error(what + ": rank " + std::to_string(rank.rank()) +
                " takes more than 2 GiB, the limit of one protobuf message");
  std::string record;
  {
    StringOutputStream stream(&record);
    CodedOutputStream out(&stream);
    out.WriteTag(WireFormatLite::MakeTag(proto::Trace::kRanksFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    out.WriteVarint32(uint32_t(size));
    rank.SerializeWithCachedSizes(&out);
  }
  put(record);
  events_ += uint64_t(rank.events().task_id_size());
  last_rank_ = rank.rank();
}

void TraceWriter::finish() {
  if (finished_) throw Error("cannot write trace " + file_.path() + ": finished twice", ErrorKind::kInternal);
  put(after_ranks_);
  std::string trailer;
  {
    StringOutputStream stream(&trailer);
    CodedOutputStream out(&stream);
    out.WriteTag(WireFormatLite::MakeTag(proto::Trace::kEventCountFieldNumber, WireFormatLite::WIRETYPE_VARINT));
    out.WriteVarint64(events_);
  }
  put(trailer);
  std::string checksum;
  {
    StringOutputStream stream(&checksum);
    CodedOutputStream out(&stream);
    out.WriteTag(WireFormatLite::MakeTag(proto::Trace::kChecksumFieldNumber, WireFormatLite::WIRETYPE_FIXED64));
    out.WriteLittleEndian64(hash_);  // the hash of every byte before this tag
  }
  buffer_.append(checksum);
  flush();
  file_.commit();
  finished_ = true;
}

void write_trace_streamed(const proto::Trace& trace, const std::string& path) {
  proto::Trace header = header_of(trace);
  header.MergeFrom(after_ranks_of(trace));
  TraceWriter w(path, header);
  for (const proto::Rank& r : trace.ranks()) w.add_rank(r);
  w.finish();
}

}  // namespace tandem
