#include "sim/sweep/sweep_runner.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "scenario.pb.h"
#include "shared/error.h"
#include "shared/scenario.h"
#include "shared/schedule.h"

namespace tandem::sweep {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string gib(int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / 1073741824.0);
  return buf;
}

std::string oom_reason(const sim::OomReport& o) {
  return "out of memory: rank " + std::to_string(o.rank) + " allocating '" + o.buffer + "' (" + gib(o.requested_bytes) +
         ") with " + gib(o.in_use_bytes) + " in use of " + gib(o.capacity_bytes) +
         (o.host ? " of host memory on its node" : " of HBM");
}

// The child's result on the wire: fixed-size fields as raw bytes (same machine, same binary).
class Encoder {
 public:
  template <class T>
  void pod(const T& v) {
    data_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    data_ += s;
  }
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

class Decoder {
 public:
  explicit Decoder(const std::string& d) : d_(d) {}
  template <class T>
  void pod(T& v) {
    need(sizeof v);
    std::memcpy(&v, d_.data() + at_, sizeof v);
    at_ += sizeof v;
  }
  void str(std::string& s) {
    uint64_t n = 0;
    pod(n);
    need(n);
    s.assign(d_, at_, n);
    at_ += n;
  }

 private:
  void need(size_t n) {
    if (at_ + n > d_.size()) throw Error("sweep: truncated result from a point's process", ErrorKind::kInternal);
  }
  const std::string& d_;
  size_t at_ = 0;
};

std::string encode(const PointResult& r) {
  Encoder e;
  e.pod(uint8_t(r.status));
  e.str(r.reason);
  e.str(r.scenario_name);
  for (int v : {r.gpus, r.dp, r.tp, r.pp, r.sp}) e.pod(int32_t(v));
  for (double v : {r.iteration_time_s, r.tokens_per_s, r.model_tflops_per_gpu, r.hardware_tflops_per_gpu, r.mfu})
    e.pod(v);
  e.pod(r.peak_memory_bytes);
  return e.data();
}

PointResult decode(const std::string& data) {
  Decoder d(data);
  PointResult r;
  uint8_t status = 0;
  d.pod(status);
  r.status = PointStatus(status);
  d.str(r.reason);
  d.str(r.scenario_name);
  for (int* v : {&r.gpus, &r.dp, &r.tp, &r.pp, &r.sp}) {
    int32_t x = 0;
    d.pod(x);
    *v = x;
  }
  for (double* v : {&r.iteration_time_s, &r.tokens_per_s, &r.model_tflops_per_gpu, &r.hardware_tflops_per_gpu, &r.mfu})
    d.pod(*v);
  d.pod(r.peak_memory_bytes);
  return r;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t k = ::write(fd, data.data() + done, data.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += size_t(k);
  }
  return true;
}

class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

struct Running {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string data;
};

PointResult finish(Running& run) {
  int status = 0;
  while (::waitpid(run.pid, &status, 0) < 0 && errno == EINTR) {
  }
  PointResult r;
  if (run.data.empty()) {
    r.status = PointStatus::kError;
    r.reason = "sweep: the point's process died" +
               (WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")" : std::string());
    return r;
  }
  try {
    return decode(run.data);
  } catch (const Error& e) {
    r.status = PointStatus::kError;
    r.reason = e.what();
    return r;
  }
}

}  // namespace

void check_flags(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid) {
  std::ifstream in(scenario_path, std::ios::binary);
  if (!in) throw Error(scenario_path + ": cannot read scenario file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  proto::Scenario parsed;
  google::protobuf::TextFormat::Parser parser;
  SilentErrors silent;
  parser.RecordErrorsTo(&silent);
  if (!parser.ParseFromString(text.str(), &parsed)) {
    load_scenario(scenario_path);  // throws with the parser's file:line:column message
    throw Error(scenario_path + ": not a scenario file (protobuf text format)");
  }
  std::set<std::string> set_keys;
  for (const std::string& s : sets) set_keys.insert(s.substr(0, s.find('=')));
  for (const VaryAxis& a : grid.axes())
    if (set_keys.count(a.key))
      throw Error("--vary " + a.key + "=...: " + a.key + " is also given with --set; vary it or set it, not both");
  // Every assignment is applied by the loader's own field check; only errors about the flag itself
  // ("--set key=value: unknown field ...", "... takes an int32, not ...") stop the sweep.
  auto try_load = [&](const std::vector<std::string>& overrides) -> std::string {
    try {
      load_scenario(scenario_path, overrides);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string set_message = try_load(sets);
  for (const std::string& s : sets)
    if (starts_with(set_message, "--set " + s + ":")) throw Error(set_message);
  for (const VaryAxis& a : grid.axes()) {
    std::string list;
    for (const std::string& v : a.values) list += (list.empty() ? "" : ",") + v;
    for (const std::string& v : a.values) {
      std::vector<std::string> overrides = sets;
      overrides.push_back(a.key + "=" + v);
      const std::string message = try_load(overrides);
      const std::string prefix = "--set " + a.key + "=" + v + ":";
      if (!starts_with(message, prefix)) continue;
      // The loader quotes a value it rejects; a message without it is about the key.
      const std::string rest = message.substr(prefix.size());
      const bool about_value = rest.find("\"" + v + "\"") != std::string::npos;
      throw Error("--vary " + a.key + "=" + list + ":" + (about_value ? " value " + v + ":" : "") + rest);
    }
  }
}

PointResult evaluate_point(const std::string& scenario_path, const std::vector<std::string>& overrides,
                           const sim::SimOptions& options) {
  PointResult r;
  try {
    Scenario sc = load_scenario(scenario_path, overrides);
    r.scenario_name = sc.name.empty() ? sc.model.name : sc.name;
    r.gpus = sc.cluster.gpus;
    r.dp = sc.strategy.dp;
    r.tp = sc.strategy.tp;
    r.pp = sc.strategy.pp;
    r.sp = sc.strategy.sp;
    Schedule schedule(std::move(sc));
    const sim::SimResult s = sim::simulate(schedule, options);
    if (s.oom) {
      r.status = PointStatus::kOom;
      r.reason = oom_reason(s.oom_report);
      return r;
    }
    r.status = PointStatus::kOk;
    r.iteration_time_s = s.iteration_time_s;
    r.tokens_per_s = s.tokens_per_s;
    r.model_tflops_per_gpu = s.model_tflops_per_gpu;
    r.hardware_tflops_per_gpu = s.hardware_tflops_per_gpu;
    r.mfu = s.mfu;
    r.peak_memory_bytes = s.peak_memory_bytes;
  } catch (const Error& e) {
    r.status = e.kind() == ErrorKind::kBadInput ? PointStatus::kInvalid : PointStatus::kError;
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = PointStatus::kError;
    r.reason = std::string("internal error: ") + e.what();
  }
  return r;
}

SweepTable run_sweep(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid,
                     const RunOptions& options) {
  const size_t total = grid.size();
  size_t jobs = options.jobs > 0 ? size_t(options.jobs) : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min(jobs, total);
  std::vector<PointResult> results(total);
  std::vector<Running> running;
  size_t next = 0, done = 0;
  auto progress = [&] {
    if (options.on_progress) options.on_progress(done, total);
  };
  progress();
  while (done < total) {
    while (running.size() < jobs && next < total) {
      std::vector<std::string> overrides = sets;
      for (const std::string& a : grid.assignments(next)) overrides.push_back(a);
      std::fflush(nullptr);  // or the child would write the parent's pending output again
      int fds[2];
      if (::pipe(fds) != 0) throw Error(std::string("sweep: pipe: ") + std::strerror(errno), ErrorKind::kFault);
      const pid_t pid = ::fork();
      if (pid < 0) throw Error(std::string("sweep: fork: ") + std::strerror(errno), ErrorKind::kFault);
      if (pid == 0) {
        ::close(fds[0]);
        for (const Running& r : running) ::close(r.fd);
        const bool ok = write_all(fds[1], encode(evaluate_point(scenario_path, overrides, options.sim)));
        ::close(fds[1]);
        ::_exit(ok ? 0 : 1);
      }
      ::close(fds[1]);
      running.push_back({pid, fds[0], next, {}});
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.fd, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), 500);
    if (n < 0 && errno != EINTR) throw Error(std::string("sweep: poll: ") + std::strerror(errno), ErrorKind::kFault);
    if (n <= 0) {
      progress();
      continue;
    }
    for (size_t i = running.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Running& r = running[i];
      char buf[1 << 14];
      const ssize_t k = ::read(r.fd, buf, sizeof buf);
      if (k < 0 && errno == EINTR) continue;
      if (k > 0) {
        r.data.append(buf, size_t(k));
        continue;
      }
      ::close(r.fd);
      results[r.index] = finish(r);
      running.erase(running.begin() + std::ptrdiff_t(i));
      ++done;
      progress();
    }
  }
  return make_table(scenario_path, sets, grid, std::move(results));
}

}  // namespace tandem::sweep
