#include "traces/chrome_json.h"

#include "shared/json_writer.h"
#include "shared/schedule.h"
#include "traces/atomic_file.h"
#include "traces/task_label.h"

namespace tandem {
namespace {

// One record per line in the traceEvents array, each after ",\n" (the first after "[\n").
class Records {
 public:
  explicit Records(JsonWriter& j) : j_(j) {}
  JsonWriter& next() {
    if (count_++) j_.line_break();
    return j_.begin_object();
  }

 private:
  JsonWriter& j_;
  int64_t count_ = 0;
};

// Microseconds from seconds, to the nanosecond.
void micros(JsonWriter& j, const char* key, double seconds) { j.key(key).fixed(seconds * 1e6, 3); }

void metadata(Records& rec, const char* name, int pid, int tid, const char* key, std::string_view value) {
  JsonWriter& j = rec.next();
  j.key("name").string(name).key("ph").string("M").key("pid").integer(pid).key("tid").integer(tid);
  j.key("args").begin_object().key(key).string(value).end_object().end_object();
}

void sort_index(Records& rec, const char* name, int pid, int tid, int index) {
  JsonWriter& j = rec.next();
  j.key("name").string(name).key("ph").string("M").key("pid").integer(pid).key("tid").integer(tid);
  j.key("args").begin_object().key("sort_index").integer(index).end_object().end_object();
}

void counter(Records& rec, const char* name, int pid, double time_s, int64_t bytes) {
  JsonWriter& j = rec.next();
  j.key("name").string(name).key("ph").string("C").key("pid").integer(pid);
  micros(j, "ts", time_s);
  j.key("args").begin_object().key("bytes").integer(bytes).end_object().end_object();
}

}  // namespace

std::string chrome_json(const proto::Trace& trace) {
  JsonWriter j;
  int64_t events = 0;
  for (const proto::Rank& r : trace.ranks()) events += r.events().task_id_size() + r.memory().time_s_size();
  j.reserve(size_t(events) * 180 + 4096);

  j.begin_object().key("displayTimeUnit").string("ms").key("otherData").begin_object();
  j.key("format").string(trace.format());
  j.key("scenario").string(trace.scenario_name());
  j.key("scenario_digest").string(trace.scenario_digest());
  j.key("backend").string(trace.backend());
  j.key("machine").string(trace.machine());
  j.end_object().line_break().key("traceEvents").begin_array().line_break();
  Records rec(j);

  std::vector<std::string> kinds;
  kinds.reserve(trace.labels_size());
  for (const std::string& l : trace.labels()) kinds.emplace_back(label_kind(l));

  for (const proto::Rank& r : trace.ranks()) {
    // Perfetto treats pid and tid 0 as the kernel's idle task (google/perfetto#394): count from 1.
    const int pid = r.rank() + 1;
    metadata(rec, "process_name", pid, 0, "name", "rank " + std::to_string(r.rank()));
    sort_index(rec, "process_sort_index", pid, 0, r.rank());
    const proto::Events& e = r.events();
    bool used[kStreamCount] = {};
    for (uint32_t s : e.stream())
      if (s < uint32_t(kStreamCount)) used[s] = true;
    for (int s = 0; s < kStreamCount; ++s) {
      if (!used[s]) continue;
      metadata(rec, "thread_name", pid, s + 1, "name", to_string(static_cast<Stream>(s)));
      sort_index(rec, "thread_sort_index", pid, s + 1, s);
    }
    for (int i = 0; i < e.task_id_size(); ++i) {
      const uint32_t label = e.label(i);
      const bool known = label < uint32_t(trace.labels_size());
      rec.next().key("name").string(known ? std::string_view(trace.labels(int(label))) : "?");
      j.key("cat").string(known ? std::string_view(kinds[label]) : "?");
      j.key("ph").string("X").key("pid").integer(pid).key("tid").integer(e.stream(i) + 1);
      micros(j, "ts", e.start_s(i));
      micros(j, "dur", e.end_s(i) - e.start_s(i));
      j.key("args").begin_object().key("task_id").integer(e.task_id(i)).key("bytes").integer(e.bytes(i));
      j.key("flops").number(e.flops(i)).end_object().end_object();
    }
    const proto::MemorySamples& m = r.memory();
    bool host = false;
    for (int i = 0; i < m.time_s_size(); ++i) {
      counter(rec, "device memory", pid, m.time_s(i), m.device_bytes(i));
      host = host || m.host_bytes(i) != 0;
    }
    if (host)
      for (int i = 0; i < m.time_s_size(); ++i) counter(rec, "host memory", pid, m.time_s(i), m.host_bytes(i));
  }
  j.line_break().end_array().end_object().line_break();
  return j.take();
}

void write_chrome_json(const proto::Trace& trace, const std::string& path) {
  write_file_atomic(path, chrome_json(trace));
}

}  // namespace tandem
