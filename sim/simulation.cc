#include "sim/simulation.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "shared/error.h"
#include "sim/nccl_tuner.h"
#include "sim/replay_engine.h"
#include "sim/sim_metrics.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

namespace {

SimResult simulate_isolated(const Schedule& schedule, const SimOptions& options);

SimResult run_here(const Schedule& schedule, const SimOptions& options) {
  static bool used = false;
  if (used) throw Error("sim: SimGrid runs once per process; use SimOptions::isolate", ErrorKind::kInternal);
  used = true;
  const Scenario& sc = schedule.scenario();
  const ClusterSpec& cl = sc.cluster;
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char name[] = "tandem-sim";
  char* argv[] = {name, nullptr};
  sg::Engine engine(&argc, argv);
  // CM02 without TCP corrections: a lone flow takes bytes / bandwidth (../shared/notes/simgrid-3.32.md).
  sg::Engine::set_config("network/model:CM02");
  sg::Engine::set_config("network/crosstraffic:0");
  sg::Engine::set_config("network/TCP-gamma:0");

  NetworkEfficiency eff = options.ideal_network ? NetworkEfficiency{1.0, 1.0, 1.0} : options.efficiency;
  const Platform platform(cl, schedule.world_size(), eff, options.fabric);
  FabricModel fabric;
  fabric.gpus_per_node = platform.gpus_per_node();
  fabric.nics_per_node = platform.nics_per_node();
  fabric.nvlink_bytes_s = cl.nvlink_bandwidth_gbps * 1e9 * eff.nvlink;
  fabric.nic_bytes_s = cl.nic_bandwidth_gbps * 1e9 * eff.nic;
  fabric.nvlink_latency_s = cl.nvlink_latency_us * 1e-6;
  fabric.nic_latency_s = cl.nic_latency_us * 1e-6;
  fabric.nvls = cl.gpu_name.find("H100") != std::string::npos || cl.gpu_name.find("H200") != std::string::npos ||
                cl.gpu_name.find("H800") != std::string::npos;
  const ComputeCostModel costs(cl, options.kernels, sc.strategy.flash_attention, options.calibration.get());
  NcclTuner tuner(fabric, options.ideal_network, options.algorithm, options.protocol);
  ReplayEngine replay(schedule, options, platform, fabric, costs, tuner);
  sg::Actor::create("replay", platform.driver(), std::ref(replay));
  engine.run();
  if (replay.failed()) throw replay.error();
  SimResult r = replay.take_result();
  std::sort(r.tasks.begin(), r.tasks.end(), [](const TaskTiming& a, const TaskTiming& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.task < b.task;
  });
  std::stable_sort(r.memory.begin(), r.memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.rank < b.rank; });
  finalize_metrics(r, sc);
  return r;
}

// A flat binary encoding of SimResult for the trip from the child process.
class Writer {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    buf_ += s;
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(uint64_t(v.size()));
    buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  const std::string& data() const { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <class T>
  void pod(T& v) {
    need(sizeof v);
    std::memcpy(&v, s_.data() + at_, sizeof v);
    at_ += sizeof v;
  }
  void str(std::string& s) {
    uint64_t n;
    pod(n);
    need(n);
    s.assign(s_.data() + at_, n);
    at_ += n;
  }
  template <class T>
  void vec(std::vector<T>& v) {
    uint64_t n;
    pod(n);
    need(n * sizeof(T));
    v.resize(n);
    std::memcpy(v.data(), s_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }

 private:
  void need(size_t n) {
    if (at_ + n > s_.size()) throw Error("sim: truncated result from the simulation process", ErrorKind::kInternal);
  }
  const std::string& s_;
  size_t at_ = 0;
};

void encode(Writer& w, const SimResult& r) {
  w.pod(r.iteration_time_s);
  w.pod(r.oom);
  w.pod(r.oom_report.rank);
  w.pod(r.oom_report.time_s);
  w.pod(r.oom_report.host);
  w.str(r.oom_report.buffer);
  w.pod(r.oom_report.requested_bytes);
  w.pod(r.oom_report.in_use_bytes);
  w.pod(r.oom_report.capacity_bytes);
  w.pod(uint64_t(r.oom_report.live.size()));
  for (const LiveBuffer& b : r.oom_report.live) {
    w.str(b.name);
    w.pod(b.role);
    w.pod(b.bytes);
  }
  w.vec(r.ranks);
  w.vec(r.tasks);
  w.vec(r.memory);
  for (double v : {r.tokens_per_s, r.model_tflops_per_gpu, r.hardware_tflops_per_gpu, r.mfu}) w.pod(v);
  w.pod(r.peak_memory_bytes);
  w.pod(r.slowest_rank);
  for (uint64_t v : {r.flows, r.collectives, r.closed_form_collectives, r.calibrated_collectives, r.events}) w.pod(v);
  w.pod(r.programs_generated);
  w.pod(r.fold);
  w.pod(r.fold_exact);
}

void decode(Reader& rd, SimResult& r) {
  rd.pod(r.iteration_time_s);
  rd.pod(r.oom);
  rd.pod(r.oom_report.rank);
  rd.pod(r.oom_report.time_s);
  rd.pod(r.oom_report.host);
  rd.str(r.oom_report.buffer);
  rd.pod(r.oom_report.requested_bytes);
  rd.pod(r.oom_report.in_use_bytes);
  rd.pod(r.oom_report.capacity_bytes);
  uint64_t n;
  rd.pod(n);
  r.oom_report.live.resize(n);
  for (LiveBuffer& b : r.oom_report.live) {
    rd.str(b.name);
    rd.pod(b.role);
    rd.pod(b.bytes);
  }
  rd.vec(r.ranks);
  rd.vec(r.tasks);
  rd.vec(r.memory);
  for (double* v : {&r.tokens_per_s, &r.model_tflops_per_gpu, &r.hardware_tflops_per_gpu, &r.mfu}) rd.pod(*v);
  rd.pod(r.peak_memory_bytes);
  rd.pod(r.slowest_rank);
  for (uint64_t* v : {&r.flows, &r.collectives, &r.closed_form_collectives, &r.calibrated_collectives, &r.events})
    rd.pod(*v);
  rd.pod(r.programs_generated);
  rd.pod(r.fold);
  rd.pod(r.fold_exact);
}

bool write_all(int fd, const char* p, size_t n) {
  while (n) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= size_t(k);
  }
  return true;
}

}  // namespace

SimResult simulate(const Schedule& schedule, const SimOptions& options) {
  if (!options.isolate) return run_here(schedule, options);
  SimResult r = simulate_isolated(schedule, options);
  if (!r.fold_exact) {
    // A folded replay whose tp lanes' flows did not end together: not provably exact, run again
    // with every rank replayed (docs/sim.md).
    SimOptions unfolded = options;
    unfolded.fold_tensor_parallel = false;
    r = simulate_isolated(schedule, unfolded);
  }
  return r;
}

namespace {

SimResult simulate_isolated(const Schedule& schedule, const SimOptions& options) {
  std::fflush(nullptr);  // or the child would write the parent's pending output a second time
  int fds[2];
  if (::pipe(fds) != 0) throw Error(std::string("sim: pipe: ") + std::strerror(errno), ErrorKind::kFault);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("sim: fork: ") + std::strerror(errno), ErrorKind::kFault);
  if (pid == 0) {
    // Child: simulate, send back status byte (0 result, 1 error) and payload, and leave without
    // running the parent's atexit handlers or destructors (_exit is the only exit a fork child may take).
    ::close(fds[0]);
    // Keep freed memory in the heap: program generation allocates and frees many small vectors,
    // and returning them to the kernel costs page faults when they are allocated again. The child
    // is short-lived, so nothing else pays for the larger heap.
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    Writer w;
    try {
      SimResult r = run_here(schedule, options);
      w.pod(uint8_t(0));
      encode(w, r);
    } catch (const Error& e) {
      w = Writer();
      w.pod(uint8_t(1));
      w.pod(int32_t(e.exit_code()));
      w.str(e.what());
    } catch (const std::exception& e) {
      w = Writer();
      w.pod(uint8_t(1));
      w.pod(int32_t(1));
      w.str(std::string("sim: internal error: ") + e.what());
    }
    const bool ok = write_all(fds[1], w.data().data(), w.data().size());
    ::close(fds[1]);
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::string data;
  char buf[1 << 16];
  while (true) {
    const ssize_t k = ::read(fds[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    data.append(buf, size_t(k));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (data.empty())
    throw Error("sim: the simulation process died" +
                    (WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")" : std::string()),
                ErrorKind::kInternal);
  Reader rd(data);
  uint8_t kind;
  rd.pod(kind);
  if (kind == 1) {
    int32_t code;
    std::string msg;
    rd.pod(code);
    rd.str(msg);
    throw Error(msg, ErrorKind(code));
  }
  SimResult r;
  decode(rd, r);
  return r;
}

}  // namespace

}  // namespace tandem::sim
