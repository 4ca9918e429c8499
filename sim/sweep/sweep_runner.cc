#include "sim/sweep/sweep_runner.h"

#include <poll.h>

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
#include "shared/number_format.h"
#include "shared/scenario.h"
#include "shared/schedule.h"
#include "sim/forked_call.h"
#include "sim/sim_report.h"
#include "sim/sim_memory_estimate.h"
#include "sim/sim_time_estimate.h"
#include "sim/sweep/override_check.h"
#include "sim_result.pb.h"

namespace tandem::sweep {

std::string encode_point_result(const PointResult& r) {
  proto::SweepPoint p;
  p.set_status(uint32_t(r.status));
  p.set_reason(r.reason);
  p.set_scenario_name(r.scenario_name);
  p.set_gpus(r.gpus);
  p.set_dp(r.dp);
  p.set_tp(r.tp);
  p.set_pp(r.pp);
  p.set_sp(r.sp);
  p.set_iteration_time_s(r.iteration_time_s);
  p.set_iteration_time_low_s(r.iteration_time_low_s);
  p.set_iteration_time_high_s(r.iteration_time_high_s);
  p.set_tokens_per_s(r.tokens_per_s);
  p.set_model_tflops_per_gpu(r.model_tflops_per_gpu);
  p.set_hardware_tflops_per_gpu(r.hardware_tflops_per_gpu);
  p.set_mfu(r.mfu);
  p.set_peak_memory_bytes(r.peak_memory_bytes);
  p.set_approximate(r.approximate);
  return p.SerializeAsString();
}

PointResult decode_point_result(const std::string& bytes) {
  proto::SweepPoint p;
  if (!p.ParseFromString(bytes)) throw Error("sweep: corrupt result from a point's process", ErrorKind::kInternal);
  PointResult r;
  r.status = PointStatus(p.status());
  r.reason = p.reason();
  r.scenario_name = p.scenario_name();
  r.gpus = p.gpus();
  r.dp = p.dp();
  r.tp = p.tp();
  r.pp = p.pp();
  r.sp = p.sp();
  r.iteration_time_s = p.iteration_time_s();
  r.iteration_time_low_s = p.iteration_time_low_s();
  r.iteration_time_high_s = p.iteration_time_high_s();
  r.tokens_per_s = p.tokens_per_s();
  r.model_tflops_per_gpu = p.model_tflops_per_gpu();
  r.hardware_tflops_per_gpu = p.hardware_tflops_per_gpu();
  r.mfu = p.mfu();
  r.peak_memory_bytes = p.peak_memory_bytes();
  r.approximate = p.approximate();
  return r;
}

namespace {

std::string oom_reason(const sim::OomReport& o) {
  return "out of memory: rank " + std::to_string(o.rank) + " allocating '" + o.buffer + "' (" + format_gib(o.requested_bytes) +
         ") with " + format_gib(o.in_use_bytes) + " in use of " + format_gib(o.capacity_bytes) +
         (o.host ? " of host memory on its node" : " of HBM");
}

class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

struct Running {
  sim::ForkedCall call;
  size_t index = 0;
};

// The point's result, or the failure of its process as the result.
PointResult finish(Running& run) {
  try {
    return decode_point_result(run.call.result());
  } catch (const Error& e) {
    PointResult r;
    r.status = PointStatus::kError;
    r.reason = e.what();
    return r;
  }
}

// The loader's message for one assignment alone (it names the assignment: "--set k=v: rule").
std::string loader_message(const std::string& scenario_path, const std::string& assignment) {
  try {
    load_scenario(scenario_path, {assignment});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
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
  // Only assignments wrong in themselves (an unknown or unsettable field, a value not of the
  // field's type: override_problem) stop the sweep, with the loader's message about them; the
  // loader's rules on the whole scenario make invalid points instead.
  for (const std::string& s : sets)
    if (override_problem(parsed, s) != OverrideProblem::kNone) {
      const std::string message = loader_message(scenario_path, s);
      throw Error(message.empty() ? "--set " + s + ": not applicable to " + scenario_path : message);
    }
  for (const VaryAxis& a : grid.axes()) {
    std::string list;
    for (const std::string& v : a.values) list += (list.empty() ? "" : ",") + v;
    for (const std::string& v : a.values) {
      const std::string assignment = a.key + "=" + v;
      const OverrideProblem problem = override_problem(parsed, assignment);
      if (problem == OverrideProblem::kNone) continue;
      // The loader's rule, without its "--set key=value:" lead, under the --vary flag.
      const std::string lead = "--set " + assignment + ":";
      std::string rule = loader_message(scenario_path, assignment);
      if (rule.compare(0, lead.size(), lead) == 0) rule.erase(0, lead.size());
      throw Error("--vary " + a.key + "=" + list + ":" + (problem == OverrideProblem::kValue ? " value " + v + ":" : "") +
                  rule);
    }
  }
}

PointResult evaluate_point(const std::string& scenario_path, const std::vector<std::string>& overrides,
                           const sim::SimOptions& options, const ResourceLimit& limit) {
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
    const sim::SimWork work = sim::count_sim_work(schedule, options);
    const sim::MemoryEstimate need = sim::estimate_memory(work, !options.trace_path.empty(), false);
    check_memory_estimate(need.bytes, "the point", need.how, limit);
    sim::check_time_estimate(sim::estimate_time(work, options), "the point", limit);
    const sim::SimResult s = sim::simulate(schedule, options);
    if (s.oom) {
      r.status = PointStatus::kOom;
      r.reason = oom_reason(s.oom_report);
      return r;
    }
    r.status = PointStatus::kOk;
    r.iteration_time_s = s.iteration_time_s;
    r.iteration_time_low_s = s.iteration_time_low_s;
    r.iteration_time_high_s = s.iteration_time_high_s;
    r.tokens_per_s = s.tokens_per_s;
    r.model_tflops_per_gpu = s.model_tflops_per_gpu;
    r.hardware_tflops_per_gpu = s.hardware_tflops_per_gpu;
    r.mfu = s.mfu;
    r.peak_memory_bytes = s.peak_memory_bytes;
    if (s.approximate) r.approximate = sim::approximation_note(s);
  } catch (const Error& e) {
    r.status = e.kind() == ErrorKind::kBadInput ? PointStatus::kInvalid : PointStatus::kError;
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = PointStatus::kError;
    r.reason = std::string("internal error: ") + e.what();
  }
  return r;
}

std::vector<PointResult> run_points(const std::string& scenario_path,
                                   const std::vector<std::vector<std::string>>& points, const RunOptions& options) {
  const size_t total = points.size();
  size_t jobs = options.jobs > 0 ? size_t(options.jobs) : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::max<size_t>(1, std::min(jobs, total));
  ResourceLimit point_limit = options.limit;
  point_limit.max_memory_bytes /= int64_t(jobs);
  std::vector<PointResult> results(total);
  std::vector<Running> running;
  size_t next = 0, done = 0;
  auto progress = [&] {
    if (options.on_progress) options.on_progress(done, total);
  };
  progress();
  while (done < total) {
    while (running.size() < jobs && next < total) {
      const std::vector<std::string>& overrides = points[next];
      running.push_back(
          {sim::ForkedCall([&] { return encode_point_result(evaluate_point(scenario_path, overrides, options.sim, point_limit)); },
                           "sweep: the point's process"),
           next});
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.call.fd(), POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), 500);
    if (n < 0 && errno != EINTR) throw Error(std::string("sweep: poll: ") + std::strerror(errno), ErrorKind::kFault);
    if (n <= 0) {
      progress();
      continue;
    }
    for (size_t i = running.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!running[i].call.read_some()) continue;
      results[running[i].index] = finish(running[i]);
      running.erase(running.begin() + std::ptrdiff_t(i));
      ++done;
      progress();
    }
  }
  return results;
}

SweepTable run_sweep(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid,
                     const RunOptions& options) {
  std::vector<std::vector<std::string>> points(grid.size());
  for (size_t i = 0; i < grid.size(); ++i) {
    points[i] = sets;
    for (const std::string& a : grid.assignments(i)) points[i].push_back(a);
  }
  return make_table(scenario_path, sets, grid, run_points(scenario_path, points, options));
}

}  // namespace tandem::sweep
