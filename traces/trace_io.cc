#include "traces/trace_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/wire_format_lite.h>
#include <string_view>

#include "shared/error.h"
#include "shared/input_file.h"
#include "shared/schedule.h"
#include "traces/atomic_file.h"
#include "traces/fnv1a.h"
#include "traces/hashing_input_stream.h"
#include "traces/trace_builder.h"
#include "traces/trace_writer.h"

namespace tandem {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::FileInputStream;
using google::protobuf::io::LimitingInputStream;
using google::protobuf::io::StringOutputStream;
using google::protobuf::internal::WireFormatLite;

constexpr int kFormatField = proto::Trace::kFormatFieldNumber;
constexpr int kRanksField = proto::Trace::kRanksFieldNumber;
constexpr int kLabelsField = proto::Trace::kLabelsFieldNumber;
constexpr int kEventCountField = proto::Trace::kEventCountFieldNumber;
// The checksum that ends a trace file: `optional fixed64 checksum = 16`, the FNV-1a 64 hash of
// every byte before its tag.
constexpr int kChecksumField = proto::Trace::kChecksumFieldNumber;
constexpr unsigned char kChecksumTag[2] = {0x81, 0x01};  // (16 << 3) | fixed64, as a varint
constexpr size_t kMaxMarkerBytes = 64;
// The format before the checksum, refused with a message of its own.
constexpr const char* kOldTraceFormat = "tandem-trace-1";

std::string at_event(const proto::Rank& r, int i) {
  return "rank " + std::to_string(r.rank()) + " event " + std::to_string(i) + " (task " +
         std::to_string(r.events().task_id(i)) + ")";
}

void check(const proto::Trace& t, const std::string& what, bool check_event_count) {
  if (t.format() != kTraceFormat) {
    if (t.format().rfind("tandem-trace-", 0) == 0)
      throw Error(what + ": format " + t.format() + ", but this build reads " + kTraceFormat);
    throw Error(what + ": not a tandem trace (no " + kTraceFormat + " format marker)");
  }
  if (t.backend() != "sim" && t.backend() != "host" && t.backend() != "cuda")
    throw Error(what + ": backend '" + t.backend() + "' is not one of sim, host, cuda");
  if (t.world_size() < 0) throw Error(what + ": world_size " + std::to_string(t.world_size()) + " < 0");
  for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"scenario_name", &t.scenario_name()},
                                   {"scenario_digest", &t.scenario_digest()},
                                   {"machine", &t.machine()}})
    if (text->size() > kMaxTraceTextBytes)
      throw Error(what + ": field " + name + " is " + std::to_string(text->size()) + " bytes long, more than the " +
                  std::to_string(kMaxTraceTextBytes) + " bytes a text of a trace may have");
  for (int i = 0; i < t.labels_size(); ++i)
    if (t.labels(i).size() > kMaxTraceTextBytes)
      throw Error(what + ": label " + std::to_string(i) + " is " + std::to_string(t.labels(i).size()) +
                  " bytes long, more than the " + std::to_string(kMaxTraceTextBytes) +
                  " bytes a text of a trace may have");
  const uint64_t labels = uint64_t(t.labels_size());
  uint64_t events = 0;
  int previous_rank = -1;
  for (const proto::Rank& r : t.ranks()) {
    const std::string rank = "rank " + std::to_string(r.rank());
    if (r.rank() <= previous_rank)
      throw Error(what + ": " + rank + " follows rank " + std::to_string(previous_rank) +
                  " (ranks must be listed once each, in increasing order)");
    if (r.rank() >= t.world_size())
      throw Error(what + ": " + rank + " outside world of " + std::to_string(t.world_size()));
    previous_rank = r.rank();

    const proto::Events& e = r.events();
    const int n = e.task_id_size();
    if (e.stream_size() != n || e.start_s_size() != n || e.end_s_size() != n || e.bytes_size() != n ||
        e.flops_size() != n || e.label_size() != n)
      throw Error(what + ": " + rank + ": event columns differ in length (task_id " + std::to_string(n) +
                  ", stream " + std::to_string(e.stream_size()) + ", start_s " + std::to_string(e.start_s_size()) +
                  ", end_s " + std::to_string(e.end_s_size()) + ", bytes " + std::to_string(e.bytes_size()) +
                  ", flops " + std::to_string(e.flops_size()) + ", label " + std::to_string(e.label_size()) + ")");
    for (int i = 0; i < n; ++i) {
      if (i > 0 && e.task_id(i) <= e.task_id(i - 1))
        throw Error(what + ": " + at_event(r, i) + ": task ids must increase (previous " +
                    std::to_string(e.task_id(i - 1)) + ")");
      if (e.label(i) >= labels)
        throw Error(what + ": " + at_event(r, i) + ": label " + std::to_string(e.label(i)) + " out of range (" +
                    std::to_string(labels) + " labels)");
      if (e.stream(i) >= uint32_t(kStreamCount))
        throw Error(what + ": " + at_event(r, i) + ": stream " + std::to_string(e.stream(i)) + " out of range");
      if (!std::isfinite(e.start_s(i)) || !std::isfinite(e.end_s(i)))
        throw Error(what + ": " + at_event(r, i) + ": time is not finite");
      if (e.end_s(i) < e.start_s(i))
        throw Error(what + ": " + at_event(r, i) + ": end_s " + std::to_string(e.end_s(i)) + " < start_s " +
                    std::to_string(e.start_s(i)));
    }
    events += uint64_t(n);

    const proto::MemorySamples& m = r.memory();
    if (m.device_bytes_size() != m.time_s_size() || m.host_bytes_size() != m.time_s_size())
      throw Error(what + ": " + rank + ": memory columns differ in length");
    for (int i = 0; i < m.time_s_size(); ++i) {
      if (!std::isfinite(m.time_s(i)))
        throw Error(what + ": " + rank + " memory sample " + std::to_string(i) + ": time is not finite");
      if (i > 0 && m.time_s(i) < m.time_s(i - 1))
        throw Error(what + ": " + rank + " memory sample " + std::to_string(i) + ": earlier than the one before");
    }
  }
  if (check_event_count && t.has_event_count() && t.event_count() != events)
    throw Error(what + ": event_count says " + std::to_string(t.event_count()) + " events, the ranks hold " +
                std::to_string(events));
}

}  // namespace

void check_trace(const proto::Trace& trace, const std::string& what) { check(trace, what, true); }

TraceKind trace_kind(const proto::Trace& trace) {
  return trace.backend() == "sim" ? TraceKind::kPredicted : TraceKind::kMeasured;
}

std::string describe_kind(const proto::Trace& trace) {
  return std::string(trace_kind(trace) == TraceKind::kPredicted ? "predicted" : "measured") + " (backend " +
         trace.backend() + ")";
}

uint64_t event_total(const proto::Trace& trace) {
  uint64_t events = 0;
  for (const proto::Rank& r : trace.ranks()) events += uint64_t(r.events().task_id_size());
  return events;
}

void write_trace(const proto::Trace& trace, const std::string& path) {
  // The event count is the writer's to set: a trace edited since finish() may carry a stale one.
  check(trace, "cannot write trace " + path, false);
  write_trace_streamed(trace, path);  // the same bytes, rank by rank, checksum last
}

namespace {

// What the reader found before the checks of check_trace.
struct Parsed {
  proto::Trace trace;
  bool has_checksum = false;
  uint64_t stored_checksum = 0, computed_checksum = 0;
};

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string checksum_mismatch(uint64_t stored, uint64_t computed) {
  return "checksum mismatch (the file says " + hex(stored) + ", its bytes hash to " + hex(computed) +
         "): the file was damaged or altered after it was written";
}

// Reads the format marker that starts a trace; Error when it is missing or names another format.
void read_marker(CodedInputStream& in, uint32_t tag, const std::string& what, proto::Trace& trace) {
  uint32_t size = 0;
  std::string marker;
  if (WireFormatLite::GetTagFieldNumber(tag) != kFormatField ||
      WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || !in.ReadVarint32(&size) ||
      size > kMaxMarkerBytes)
    throw Error(what + ": not a tandem trace (it does not start with a format marker)");
  if (!in.ReadString(&marker, int(size))) {
    const std::string_view expected = kTraceFormat;
    if (size == expected.size() && expected.substr(0, marker.size()) == marker)
      throw Error(what + ": cut short inside its format marker");
    throw Error(what + ": not a tandem trace (it does not start with a format marker)");
  }
  if (marker == kOldTraceFormat)
    throw Error(what + ": format " + marker + ", written by an older tandem (before traces carried a checksum); " +
                "this build reads " + kTraceFormat + ": write the trace again (tandem sim --trace, tandem run --trace)");
  if (marker != kTraceFormat) {
    if (marker.rfind("tandem-trace-", 0) == 0)
      throw Error(what + ": format " + marker + ", but this build reads " + kTraceFormat);
    const bool printable = std::all_of(marker.begin(), marker.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
    throw Error(what + ": not a tandem trace (" + (printable ? "format marker '" + marker + "'" : "no format marker") + ")");
  }
  trace.set_format(marker);
}

// A header field (any field but ranks, the event count and the checksum), copied to `header`.
// Text is bounded: a length-delimited field longer than kMaxTraceTextBytes is refused before it
// is read, so that a hostile label cannot make the reader, or a report, allocate without bound.
void read_header_field(CodedInputStream& in, uint32_t tag, const std::string& at, int labels_before,
                       std::string& header) {
  const int field = WireFormatLite::GetTagFieldNumber(tag);
  const auto* descriptor = proto::Trace::descriptor()->FindFieldByNumber(field);
  const std::string name = descriptor ? descriptor->name() : "number " + std::to_string(field);
  const std::string subject = field == kLabelsField ? "label " + std::to_string(labels_before) : "field " + name;
  StringOutputStream stream(&header);
  CodedOutputStream out(&stream);
  if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
    uint32_t size = 0;
    std::string value;
    if (!in.ReadVarint32(&size)) throw Error(at + ": cut short or corrupt (field " + name + ")");
    if (size > kMaxTraceTextBytes) {
      throw Error(at + ": " + subject + " is " + std::to_string(size) + " bytes long, more than the " +
                  std::to_string(kMaxTraceTextBytes) + " bytes a text of a trace may have");
    }
    if (!in.ReadString(&value, int(size))) throw Error(at + ": cut short or corrupt (field " + name + ")");
    // Checked here, so that protobuf's parser does not log its own complaint before ours.
    if (descriptor && descriptor->type() == google::protobuf::FieldDescriptor::TYPE_STRING &&
        !google::protobuf::internal::IsStructurallyValidUTF8(value.data(), int(value.size())))
      throw Error(at + ": " + subject + " is not valid UTF-8");
    out.WriteTag(tag);
    out.WriteVarint32(size);
    out.WriteString(value);
    return;
  }
  if (!WireFormatLite::SkipField(&in, tag, &out)) throw Error(at + ": cut short or corrupt (field " + name + ")");
}

// The fields of a trace file in order, each read with its own CodedInputStream so that protobuf's
// 2 GiB limit applies to one rank record, not to the file; ranks are parsed as they come, the
// other fields collected as bytes and parsed at the end. Hashes the bytes as they pass.
Parsed parse_trace_file(const InputFile& file, const std::string& what) {
  Parsed p;
  proto::Trace& trace = p.trace;
  std::string header;
  FileInputStream file_stream(file.fd(), int(std::clamp<int64_t>(file.size(), 4096, 1 << 20)));
  // Bytes appended after the file was opened are not read: the trace is what fstat measured.
  LimitingInputStream limited(&file_stream, file.size());
  HashingInputStream input(&limited);
  int64_t offset = 0;
  int labels = 0;
  bool saw_end = false;
  for (bool first = true;; first = false) {
    const uint64_t hash_before = input.digest();
    CodedInputStream in(&input);
    const uint32_t tag = in.ReadTag();
    const std::string at = what + ": at byte " + std::to_string(offset);
    if (file_stream.GetErrno() != 0) throw Error("cannot read " + what + ": " + std::strerror(file_stream.GetErrno()));
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto wire = WireFormatLite::GetTagWireType(tag);
    if (first) {
      // A trace starts with its format marker: recognise foreign files before parsing further.
      read_marker(in, tag, what, trace);
    } else if (tag == 0) {
      if (in.ConsumedEntireMessage()) break;  // end of file
      throw Error(at + ": corrupt (not a protobuf field)");
    } else if (p.has_checksum) {
      throw Error(at + ": corrupt (data after the checksum, which ends a trace)");
    } else if (field == kChecksumField) {
      uint64_t stored = 0;
      if (wire != WireFormatLite::WIRETYPE_FIXED64 || !saw_end)
        throw Error(at + ": corrupt (a checksum field out of place: it comes last, after the event count)");
      if (!in.ReadLittleEndian64(&stored)) throw Error(at + ": cut short inside its checksum");
      p.has_checksum = true;
      p.stored_checksum = stored;
      p.computed_checksum = hash_before;
    } else if (field == kRanksField && wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t size = 0;
      const int index = trace.ranks_size();
      if (!in.ReadVarint32(&size) || size > uint32_t(INT_MAX))
        throw Error(at + ": cut short or corrupt (rank record " + std::to_string(index) + ")");
      const auto limit = in.PushLimit(int(size));
      if (!trace.add_ranks()->MergeFromCodedStream(&in) || in.BytesUntilLimit() != 0 || !in.ConsumedEntireMessage())
        throw Error(at + ": cut short or corrupt (rank record " + std::to_string(index) + " of " +
                    std::to_string(size) + " bytes does not parse)");
      in.PopLimit(limit);
    } else {
      if (field == kEventCountField) saw_end = true;
      read_header_field(in, tag, at, labels, header);
      if (field == kLabelsField) ++labels;
    }
    offset += in.CurrentPosition();
  }
  if (file_stream.GetErrno() != 0) throw Error("cannot read " + what + ": " + std::strerror(file_stream.GetErrno()));
  if (!trace.MergeFromString(header)) throw Error(what + ": corrupt header fields");
  if (!saw_end)
    throw Error(what + ": cut short: it ends after " + std::to_string(trace.ranks_size()) +
                " rank records, before the closing event count");
  return p;
}

// When a file that does not parse ends with a checksum field, whether its bytes still match it:
// the mismatch, if any, says why the file does not parse (it was damaged after it was written).
std::string checksum_mismatch_of(const InputFile& file) {
  constexpr int64_t kTrailer = 10;  // the checksum's tag (2 bytes) and value (8)
  if (file.size() <= kTrailer) return "";
  unsigned char trailer[kTrailer];
  if (::pread(file.fd(), trailer, kTrailer, file.size() - kTrailer) != kTrailer) return "";
  if (trailer[0] != kChecksumTag[0] || trailer[1] != kChecksumTag[1]) return "";
  uint64_t stored = 0;
  for (int i = 9; i >= 2; --i) stored = stored << 8 | trailer[i];
  uint64_t hash = kFnvOffsetBasis;
  std::vector<char> buffer(size_t(std::min<int64_t>(file.size(), 1 << 20)));
  for (int64_t at = 0, end = file.size() - kTrailer; at < end;) {
    const ssize_t n = ::pread(file.fd(), buffer.data(), size_t(std::min<int64_t>(end - at, int64_t(buffer.size()))), at);
    if (n <= 0) return "";
    hash = fnv1a64({buffer.data(), size_t(n)}, hash);
    at += n;
  }
  if (hash == stored) return "";
  return checksum_mismatch(stored, hash);
}

}  // namespace

proto::Trace read_trace(const std::string& path) {
  const std::string what = "trace " + path;
  const InputFile file(path, "trace", kMaxTraceBytes);
  if (file.size() == 0) throw Error(what + ": empty file (not a tandem trace, or cut to nothing)");
  Parsed p;
  try {
    p = parse_trace_file(file, what);
  } catch (const Error& e) {
    // A damaged file usually breaks the parse before its end: name the damage, not its symptom.
    const std::string mismatch = checksum_mismatch_of(file);
    if (!mismatch.empty())
      throw Error(what + ": " + mismatch + " (reading it: " + e.what() + ")");
    throw;
  }
  if (!p.has_checksum)
    throw Error(what + ": no checksum after the event count: written by an older tandem or cut short");
  if (p.stored_checksum != p.computed_checksum)
    throw Error(what + ": " + checksum_mismatch(p.stored_checksum, p.computed_checksum));
  check_trace(p.trace, what);
  return std::move(p.trace);
}

}  // namespace tandem
