#include "traces/chrome_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "shared/schedule.h"
#include "traces/atomic_file.h"
#include "traces/task_label.h"

namespace tandem {
namespace {

class JsonOut {
 public:
  std::string& str() { return out_; }
  // Starts the next record of the traceEvents array.
  JsonOut& record() {
    out_ += first_record_ ? "{" : ",\n{";
    first_record_ = false;
    return *this;
  }
  JsonOut& raw(std::string_view s) {
    out_ += s;
    return *this;
  }
  JsonOut& string(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
        out_ += buf;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
    return *this;
  }
  // Shortest text that reads back as v; null for what JSON cannot hold.
  JsonOut& number(double v) {
    if (!std::isfinite(v)) return raw("null");
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
    return *this;
  }
  // Microseconds from seconds, to the nanosecond.
  JsonOut& micros(double seconds) {
    const double us = seconds * 1e6;
    if (!std::isfinite(us)) return raw("null");
    char buf[48];
    auto r = std::to_chars(buf, buf + sizeof buf, us, std::chars_format::fixed, 3);
    out_.append(buf, r.ptr);
    return *this;
  }
  template <class Int>
  JsonOut& integer(Int v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
    return *this;
  }

 private:
  std::string out_;
  bool first_record_ = true;
};

void metadata(JsonOut& j, const char* name, int pid, int tid, const char* key, std::string_view value) {
  j.record().raw("\"name\":\"").raw(name).raw("\",\"ph\":\"M\",\"pid\":").integer(pid).raw(",\"tid\":").integer(tid);
  j.raw(",\"args\":{\"").raw(key).raw("\":").string(value).raw("}}");
}

void sort_index(JsonOut& j, const char* name, int pid, int tid, int index) {
  j.record().raw("\"name\":\"").raw(name).raw("\",\"ph\":\"M\",\"pid\":").integer(pid).raw(",\"tid\":").integer(tid);
  j.raw(",\"args\":{\"sort_index\":").integer(index).raw("}}");
}

void counter(JsonOut& j, const char* name, int pid, double time_s, int64_t bytes) {
  j.record().raw("\"name\":\"").raw(name).raw("\",\"ph\":\"C\",\"pid\":").integer(pid).raw(",\"ts\":").micros(time_s);
  j.raw(",\"args\":{\"bytes\":").integer(bytes).raw("}}");
}

}  // namespace

std::string chrome_json(const proto::Trace& trace) {
  JsonOut j;
  int64_t events = 0;
  for (const proto::Rank& r : trace.ranks()) events += r.events().task_id_size() + r.memory().time_s_size();
  j.str().reserve(size_t(events) * 180 + 4096);

  j.raw("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"format\":").string(trace.format());
  j.raw(",\"scenario\":").string(trace.scenario_name());
  j.raw(",\"scenario_digest\":").string(trace.scenario_digest());
  j.raw(",\"backend\":").string(trace.backend());
  j.raw(",\"machine\":").string(trace.machine());
  j.raw("},\n\"traceEvents\":[\n");

  std::vector<std::string> kinds;
  kinds.reserve(trace.labels_size());
  for (const std::string& l : trace.labels()) kinds.emplace_back(label_kind(l));

  for (const proto::Rank& r : trace.ranks()) {
    // Perfetto treats pid and tid 0 as the kernel's idle task (google/perfetto#394): count from 1.
    const int pid = r.rank() + 1;
    metadata(j, "process_name", pid, 0, "name", "rank " + std::to_string(r.rank()));
    sort_index(j, "process_sort_index", pid, 0, r.rank());
    const proto::Events& e = r.events();
    bool used[kStreamCount] = {};
    for (uint32_t s : e.stream())
      if (s < uint32_t(kStreamCount)) used[s] = true;
    for (int s = 0; s < kStreamCount; ++s) {
      if (!used[s]) continue;
      metadata(j, "thread_name", pid, s + 1, "name", to_string(static_cast<Stream>(s)));
      sort_index(j, "thread_sort_index", pid, s + 1, s);
    }
    for (int i = 0; i < e.task_id_size(); ++i) {
      const uint32_t label = e.label(i);
      const bool known = label < uint32_t(trace.labels_size());
      j.record().raw("\"name\":").string(known ? std::string_view(trace.labels(int(label))) : "?");
      j.raw(",\"cat\":").string(known ? std::string_view(kinds[label]) : "?");
      j.raw(",\"ph\":\"X\",\"pid\":").integer(pid).raw(",\"tid\":").integer(e.stream(i) + 1);
      j.raw(",\"ts\":").micros(e.start_s(i)).raw(",\"dur\":").micros(e.end_s(i) - e.start_s(i));
      j.raw(",\"args\":{\"task_id\":").integer(e.task_id(i)).raw(",\"bytes\":").integer(e.bytes(i));
      j.raw(",\"flops\":").number(e.flops(i)).raw("}}");
    }
    const proto::MemorySamples& m = r.memory();
    bool host = false;
    for (int i = 0; i < m.time_s_size(); ++i) {
      counter(j, "device memory", pid, m.time_s(i), m.device_bytes(i));
      host = host || m.host_bytes(i) != 0;
    }
    if (host)
      for (int i = 0; i < m.time_s_size(); ++i) counter(j, "host memory", pid, m.time_s(i), m.host_bytes(i));
  }
  j.raw("\n]}\n");
  return std::move(j.str());
}

void write_chrome_json(const proto::Trace& trace, const std::string& path) {
  write_file_atomic(path, chrome_json(trace));
}

}  // namespace tandem
