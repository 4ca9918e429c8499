#include "traces/trace_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <string_view>

#include "shared/error.h"
#include "shared/schedule.h"
#include "traces/atomic_file.h"
#include "traces/trace_builder.h"

namespace tandem {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::FileInputStream;
using google::protobuf::io::StringOutputStream;
using google::protobuf::internal::WireFormatLite;

constexpr int kFormatField = proto::Trace::kFormatFieldNumber;
constexpr int kRanksField = proto::Trace::kRanksFieldNumber;
constexpr int kEventCountField = proto::Trace::kEventCountFieldNumber;
constexpr size_t kMaxMarkerBytes = 64;

std::string at_event(const proto::Rank& r, int i) {
  return "rank " + std::to_string(r.rank()) + " event " + std::to_string(i) + " (task " +
         std::to_string(r.events().task_id(i)) + ")";
}

// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void check(const proto::Trace& t, const std::string& what, bool check_event_count) {
  if (t.format() != kTraceFormat) {
    if (t.format().rfind("tandem-trace-", 0) == 0)
      throw Error(what + ": format " + t.format() + ", but this build reads " + kTraceFormat);
    throw Error(what + ": not a tandem trace (no " + kTraceFormat + " format marker)");
  }
  if (t.backend() != "sim" && t.backend() != "host" && t.backend() != "cuda")
    throw Error(what + ": backend '" + t.backend() + "' is not one of sim, host, cuda");
  if (t.world_size() < 0) throw Error(what + ": world_size " + std::to_string(t.world_size()) + " < 0");
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

void write_trace(const proto::Trace& trace, const std::string& path) {
  // The event count is the writer's to set: a trace edited since finish() may carry a stale one.
  check(trace, "cannot write trace " + path, false);
  // Every field but the ranks and the trailer; the field-count test in tests/traces guards this.
  proto::Trace header;
  header.set_format(trace.format());
  header.set_scenario_name(trace.scenario_name());
  header.set_scenario_digest(trace.scenario_digest());
  header.set_backend(trace.backend());
  header.set_machine(trace.machine());
  if (trace.has_created_unix_s()) header.set_created_unix_s(trace.created_unix_s());
  header.set_world_size(trace.world_size());
  *header.mutable_labels() = trace.labels();

  std::string bytes;
  uint64_t events = 0;
  {
    StringOutputStream stream(&bytes);
    CodedOutputStream out(&stream);
    header.SerializeToCodedStream(&out);
    for (const proto::Rank& r : trace.ranks()) {
      const size_t size = r.ByteSizeLong();
      if (size > size_t(INT_MAX))
        throw Error("cannot write trace " + path + ": rank " + std::to_string(r.rank()) +
                    " takes more than 2 GiB, the limit of one protobuf message");
      out.WriteTag(WireFormatLite::MakeTag(kRanksField, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
      out.WriteVarint32(uint32_t(size));
      r.SerializeWithCachedSizes(&out);
      events += uint64_t(r.events().task_id_size());
    }
    out.WriteTag(WireFormatLite::MakeTag(kEventCountField, WireFormatLite::WIRETYPE_VARINT));
    out.WriteVarint64(events);
  }
  write_file_atomic(path, bytes);
}

proto::Trace read_trace(const std::string& path) {
  const std::string what = "trace " + path;
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) throw Error("cannot read " + what + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(file.fd, &st) != 0) throw Error("cannot read " + what + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error("cannot read " + what + ": not a regular file");
  if (st.st_size == 0) throw Error(what + ": empty file (not a tandem trace, or cut to nothing)");

  // Top-level fields one at a time, each with its own CodedInputStream, so that protobuf's 2 GiB
  // limit applies to one rank record, not to the file. Fields other than ranks are collected as
  // bytes and parsed at the end.
  proto::Trace trace;
  std::string header;
  FileInputStream input(file.fd, 1 << 20);
  int64_t offset = 0;
  bool first = true, saw_end = false;
  for (;;) {
    CodedInputStream in(&input);
    const uint32_t tag = in.ReadTag();
    const std::string at = what + ": at byte " + std::to_string(offset);
    if (input.GetErrno() != 0) throw Error("cannot read " + what + ": " + std::strerror(input.GetErrno()));
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto wire = WireFormatLite::GetTagWireType(tag);
    if (first) {
      // A trace starts with its format marker: recognise foreign files before parsing further.
      uint32_t size = 0;
      std::string marker;
      if (field != kFormatField || wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || !in.ReadVarint32(&size) ||
          size > kMaxMarkerBytes)
        throw Error(what + ": not a tandem trace (it does not start with a format marker)");
      if (!in.ReadString(&marker, int(size))) {
        const std::string_view expected = kTraceFormat;
        if (size == expected.size() && expected.substr(0, marker.size()) == marker)
          throw Error(what + ": cut short inside its format marker");
        throw Error(what + ": not a tandem trace (it does not start with a format marker)");
      }
      if (marker != kTraceFormat) {
        if (marker.rfind("tandem-trace-", 0) == 0)
          throw Error(what + ": format " + marker + ", but this build reads " + kTraceFormat);
        const bool printable = std::all_of(marker.begin(), marker.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
        throw Error(what + ": not a tandem trace (" + (printable ? "format marker '" + marker + "'" : "no format marker") + ")");
      }
      trace.set_format(marker);
      first = false;
    } else if (tag == 0) {
      if (in.ConsumedEntireMessage()) break;  // end of file
      throw Error(at + ": corrupt (not a protobuf field)");
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
      StringOutputStream stream(&header);
      CodedOutputStream out(&stream);
      if (!WireFormatLite::SkipField(&in, tag, &out)) {
        const auto* f = proto::Trace::descriptor()->FindFieldByNumber(field);
        throw Error(at + ": cut short or corrupt (field " + (f ? f->name() : std::to_string(field)) + ")");
      }
    }
    offset += in.CurrentPosition();
  }
  if (input.GetErrno() != 0) throw Error("cannot read " + what + ": " + std::strerror(input.GetErrno()));
  if (!trace.MergeFromString(header)) throw Error(what + ": corrupt header fields");
  if (!saw_end)
    throw Error(what + ": cut short: it ends after " + std::to_string(trace.ranks_size()) +
                " rank records, before the closing event count");
  check_trace(trace, what);
  return trace;
}

}  // namespace tandem
