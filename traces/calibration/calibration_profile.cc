#include "traces/calibration/calibration_profile.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "shared/error.h"
#include "shared/input_file.h"
#include "traces/atomic_file.h"
#include "traces/calibration/machine_state_probe.h"
#include "traces/calibration/machine_states.h"
#include "traces/calibration/shared_core_time.h"
#include "traces/scenario_digest.h"
#include "traces/task_label.h"
#include "traces/trace_io.h"

namespace tandem {
namespace {

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

using KernelKey = std::tuple<int, int, std::array<int64_t, 6>>;

// The number of values of DType and CollectiveOp (their last enumerators + 1).
constexpr uint32_t kDTypeValues = uint32_t(DType::kFp8E5M2) + 1;
constexpr uint32_t kCollectiveOpValues = uint32_t(CollectiveOp::kReduce) + 1;

// The string of field 1 when `bytes` start like a tandem protobuf file (tag 0x0a, a one-byte
// length, printable text beginning "tandem-"); "" otherwise (a text table, say).
std::string format_marker(std::string_view bytes) {
  if (bytes.size() < 2 || bytes[0] != 0x0a) return "";
  const size_t size = static_cast<unsigned char>(bytes[1]);
  if (size >= 0x80 || bytes.size() < 2 + size) return "";
  const std::string_view marker = bytes.substr(2, size);
  if (marker.substr(0, 7) != "tandem-") return "";
  for (char c : marker)
    if (c < 0x20 || c >= 0x7f) return "";
  return std::string(marker);
}
using CollectiveKey = std::tuple<int, int, int, int64_t>;

// The ranks' unequal speed in one run: (largest - smallest) / mean of the ranks' kernel time on the
// compute stream, when every rank ran the same kernels (shape by shape, as many of each) and each
// some; none otherwise (one rank, or ranks that do different work, as pipeline stages do: their times
// differ by their work, not by their cores' speed). Ranks at mean x (1 -+ s/2) give s.
// -1 when it measures none.
double rank_speed_spread(const std::vector<std::pair<double, std::map<KernelKey, int>>>& rank_work) {
  if (rank_work.size() < 2) return -1;
  double lo = HUGE_VAL, hi = 0, sum = 0;
  for (const auto& [busy, kernels_run] : rank_work) {
    if (kernels_run != rank_work.front().second || !(busy > 0)) return -1;
    lo = std::min(lo, busy), hi = std::max(hi, busy), sum += busy;
  }
  const double spread = (hi - lo) / (sum / double(rank_work.size()));
  return spread < 2 ? spread : -1;  // 2 and more: not a drift of speeds (the profile's bound)
}

// One rank's task times in a trace, by task id (-1: not in the trace), and for each kernel when it
// could start: its stream's previous kernel (in the trace) and its deps finished (-1: its stream's
// first kernel, with no dep: no reference point).
struct RankTimes {
  std::vector<double> start, end, ready;
};

RankTimes rank_times(const Program& p, const proto::Rank& r) {
  const proto::Events& e = r.events();
  RankTimes out;
  out.start.assign(p.tasks.size(), -1), out.end.assign(p.tasks.size(), -1), out.ready.assign(p.tasks.size(), -1);
  for (int i = 0; i < e.task_id_size(); ++i) {
    const TaskId id = e.task_id(i);
    if (id >= p.tasks.size())
      throw Error("calibrate: rank " + std::to_string(r.rank()) + " task " + std::to_string(id) +
                  " is not in the schedule");
    out.start[id] = e.start_s(i), out.end[id] = e.end_s(i);
  }
  std::vector<TaskId> previous(kStreamCount, kNoId);
  for (const Task& t : p.tasks) {
    if (!std::holds_alternative<Compute>(t.op) || out.start[t.id] < 0) continue;
    const int st = int(t.stream);
    double ready = previous[st] == kNoId ? -1 : out.end[previous[st]];
    for (TaskId d : t.deps) ready = std::max(ready, out.end[d]);
    previous[st] = t.id;
    out.ready[t.id] = ready;
  }
  return out;
}

// A host rank's busy spans (traces/calibration/shared_core_time.h): its kernels (of every stream:
// the host driver runs them all on the rank's one thread), its Allocs and Frees, and the time
// between kernels before each kernel of the compute stream (from when it could start to its start).
std::vector<TimeSpan> busy_spans_of(const Program& p, const RankTimes& times) {
  std::vector<TimeSpan> out;
  for (const Task& t : p.tasks) {
    if (times.start[t.id] < 0) continue;
    const bool kernel = std::holds_alternative<Compute>(t.op);
    if (kernel || std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op))
      out.push_back({times.start[t.id], times.end[t.id]});
    if (kernel && t.stream == Stream::kCompute && times.ready[t.id] >= 0)
      out.push_back({times.ready[t.id], times.start[t.id]});
  }
  return out;
}

// Whether the run's ranks shared the machine's cores: ranks x BLAS threads > cores, both known.
bool shares_cores_of(const proto::Trace& trace, const MeasuredMachine& machine) {
  return machine.cores > 0 && machine.blas_threads_per_rank > 0 &&
         int64_t(trace.world_size()) * machine.blas_threads_per_rank > machine.cores;
}

}  // namespace

proto::CalibrationProfile make_calibration(const Schedule& s, const proto::Trace& trace,
                                           const std::string& trace_name, const MeasuredMachine& machine) {
  return make_calibration(s, std::vector<NamedTrace>{{&trace, trace_name}}, machine);
}

RunSpread run_spread(const proto::Trace& trace) {
  // The slowest rank's time of each step, as `tandem run` reports it (exec/step_stats.h).
  std::vector<double> slowest;
  for (const proto::Rank& r : trace.ranks()) {
    if (slowest.size() < size_t(r.step_times_s_size())) slowest.resize(size_t(r.step_times_s_size()), 0);
    for (int i = 0; i < r.step_times_s_size(); ++i) slowest[size_t(i)] = std::max(slowest[size_t(i)], r.step_times_s(i));
  }
  RunSpread out;
  if (slowest.size() > 1) slowest.erase(slowest.begin());  // step 1 is warm-up
  out.steps = int(slowest.size());
  if (slowest.empty()) return out;
  std::sort(slowest.begin(), slowest.end());
  auto quantile = [&](double p) {
    const double x = p * double(slowest.size() - 1);
    const size_t i = size_t(x);
    return i + 1 < slowest.size() ? slowest[i] + (x - double(i)) * (slowest[i + 1] - slowest[i]) : slowest[i];
  };
  out.median_s = quantile(0.5);
  out.relative_iqr = out.median_s > 0 && slowest.size() > 1 ? (quantile(0.75) - quantile(0.25)) / out.median_s : 0;
  return out;
}

proto::CalibrationProfile make_calibration(const Schedule& s, const std::vector<NamedTrace>& runs,
                                           const MeasuredMachine& machine) {
  if (runs.empty()) throw Error("calibrate: no measured trace given");
  const proto::Trace& first = *runs[0].trace;
  for (const NamedTrace& run : runs) {
    const proto::Trace& trace = *run.trace;
    const std::string& trace_name = run.name;
    if (trace_kind(trace) == TraceKind::kPredicted)
      throw Error("calibrate: " + trace_name + " is " + describe_kind(trace) +
                  ", written by tandem sim: calibration needs a measured trace (tandem run --trace)");
    if (event_total(trace) == 0)
      throw Error("calibrate: " + trace_name + " holds no event (" + std::to_string(trace.ranks_size()) +
                  " rank records): nothing to calibrate");
    if (trace.scenario_digest() != scenario_digest(s.scenario()))
      throw Error("calibrate: " + trace_name + " was measured on another scenario (digest " + trace.scenario_digest() +
                  ", this scenario " + scenario_digest(s.scenario()) + ")");
    if (trace.backend() != first.backend())
      throw Error("calibrate: " + trace_name + " was measured by the " + trace.backend() + " backend, " + runs[0].name +
                  " by the " + first.backend() + " backend: one profile describes one backend");
  }
  // Kernel samples pooled (median_s, samples) and by run (mean_s: the median over the runs of each
  // run's mean, so that one run whose machine was slower does not set the profile).
  std::map<KernelKey, std::vector<double>> kernels;
  std::map<KernelKey, std::map<size_t, std::vector<double>>> kernel_runs;
  std::map<KernelKey, std::string> kernel_labels;
  // Collectives by instance: (group, n-th collective of the group on a rank) -> the members'
  // durations; an instance's time is the shortest (the last arrival's). On the host backend a
  // member's duration is counted less its own kernels' and Allocs'/Frees' time inside it: its one
  // thread polls MPI only between tasks, so the collective progresses only then, and the simulator
  // pauses a host collective while its ranks compute (sim/host_collective_progress.h).
  // Instances of several runs are apart: (run, group, n-th).
  using Instance = std::tuple<size_t, GroupId, int>;
  std::map<Instance, std::vector<double>> instances;
  std::map<Instance, CollectiveKey> instance_keys;
  std::map<CollectiveKey, std::string> collective_labels;
  // Steady-state Allocs and Frees by (alloc, bytes), then by step: the sum of their durations over
  // the ranks and their count. A trace with Rank.memory_op_step_s gives every steady-state step; an
  // older one the traced step alone (its events). Steps of several runs are apart: (run, step).
  std::map<std::pair<bool, int64_t>, std::map<std::pair<size_t, int>, std::pair<double, uint32_t>>> memory_ops;
  // The time between kernels by run: (sum, count); the profile's is the median over the runs of
  // each run's mean.
  std::map<size_t, std::pair<double, uint32_t>> overhead;
  uint32_t overhead_n = 0;
  const bool polled = first.backend() == "host";
  // The ranks' unequal speed by run (CalibrationRun.rank_speed_spread).
  std::vector<double> speed_spread(runs.size(), -1);  // -1: not measured
  // The run's kernels alone over measured (CalibrationRun.core_share).
  std::vector<double> kernel_share(runs.size(), 1);
  for (size_t run = 0; run < runs.size(); ++run) {
    const proto::Trace& trace = *runs[run].trace;
    const std::string& trace_name = runs[run].name;
    // Each rank's task times, then the time its spans had alone (traces/calibration/shared_core_time.h):
    // in a host run whose ranks x BLAS threads exceeded the cores, a rank's kernels, Allocs/Frees and
    // time between kernels count as the time they would have taken with a core to themselves. Not
    // its collectives: a collective's progress while the ranks yield is a cost of its own, which the
    // profile keeps as measured (less the rank's own work inside it, below).
    std::vector<Program> programs;
    std::vector<RankTimes> times;
    std::vector<std::vector<TimeSpan>> busy_of_rank;
    for (const proto::Rank& r : trace.ranks()) {
      if (r.rank() < 0 || r.rank() >= s.world_size())
        throw Error("calibrate: " + trace_name + " has rank " + std::to_string(r.rank()) + ", the schedule " +
                    std::to_string(s.world_size()) + " ranks");
      const Program& p = programs.emplace_back(s.program(r.rank()));
      times.push_back(rank_times(p, r));
      busy_of_rank.push_back(busy_spans_of(p, times.back()));
    }
    const bool shares_cores = polled && shares_cores_of(trace, machine);
    const SharedCoreTime share(busy_of_rank, shares_cores ? machine.cores : 0, machine.blas_threads_per_rank);
    auto alone = [&](double from, double to) { return share.alone(from, to); };
    double kernel_measured = 0, kernel_alone = 0;  // over the run's kernels: CalibrationRun.core_share
    // Per rank of the run: its kernels' time on the compute stream and which kernels it ran.
    std::vector<std::pair<double, std::map<KernelKey, int>>> rank_work;
    for (int ri = 0; ri < trace.ranks_size(); ++ri) {
      const proto::Rank& r = trace.ranks(ri);
      const Program& p = programs[size_t(ri)];
      const proto::Events& e = r.events();
      const std::vector<double>& start = times[size_t(ri)].start;
      std::map<GroupId, int> nth;
      // A buffer allocated and never freed in the program is persistent: allocated in the first step
      // only (exec/runtime.cc), its later Allocs take no time and are no sample of an allocation.
      std::map<BufferId, int64_t> bytes_of;
      std::set<BufferId> freed;
      for (const Buffer& b : p.buffers) bytes_of[b.id] = b.bytes;
      for (const Task& t : p.tasks)
        if (const Free* f = std::get_if<Free>(&t.op)) freed.insert(f->buffer);
      // The rank's Allocs and Frees as (start, end), to take them out of the time between kernels.
      std::vector<std::pair<double, double>> memory_spans;
      // Host backend: the rank's kernels, Allocs and Frees as (start, end), and its collectives as
      // (instance, start, end), to take the first out of the second.
      std::vector<std::pair<double, double>> busy_spans;
      std::vector<std::tuple<Instance, double, double>> polled_collectives;
      // The traced step's Allocs and Frees: measured and alone, to scale memory_op_step_s by.
      double memory_measured = 0, memory_alone = 0;
      auto& [busy, kernels_run] = rank_work.emplace_back();
      for (int i = 0; i < e.task_id_size(); ++i) {
        const Task& t = p.tasks[e.task_id(i)];
        const double d = alone(e.start_s(i), e.end_s(i));
        if (const Compute* c = std::get_if<Compute>(&t.op)) {
          KernelKey k{int(c->kernel), int(c->dtype), c->shape_dims()};
          kernels[k].push_back(d);
          kernel_runs[k][run].push_back(d);
          kernel_measured += e.end_s(i) - e.start_s(i), kernel_alone += d;
          if (!kernel_labels.count(k)) kernel_labels[k] = task_label(s, p, t);
          if (polled) busy_spans.push_back({e.start_s(i), e.end_s(i)});
          if (t.stream == Stream::kCompute) busy += d, ++kernels_run[k];
        } else if (const Collective* c = std::get_if<Collective>(&t.op)) {
          const ProcessGroup& g = s.group(c->group);
          CollectiveKey k{int(c->op), int(g.kind), int(g.ranks.size()), c->bytes};
          const Instance inst{run, c->group, nth[c->group]++};
          if (polled) polled_collectives.emplace_back(inst, e.start_s(i), e.end_s(i));
          else instances[inst].push_back(e.end_s(i) - e.start_s(i));
          instance_keys.emplace(inst, k);
          if (!collective_labels.count(k)) collective_labels[k] = task_label(s, p, t);
        } else if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) {
          const Alloc* a = std::get_if<Alloc>(&t.op);
          const BufferId b = a ? a->buffer : std::get<Free>(t.op).buffer;
          memory_spans.push_back({e.start_s(i), e.end_s(i)});
          memory_measured += e.end_s(i) - e.start_s(i), memory_alone += d;
          if (polled) busy_spans.push_back({e.start_s(i), e.end_s(i)});
          if (freed.count(b) && bytes_of.count(b) && r.memory_op_step_s_size() == 0) {
            auto& step = memory_ops[{a != nullptr, bytes_of[b]}][{run, r.traced_step()}];
            step.first += d, ++step.second;
          }
        }
      }
      // The steady steps' Alloc/Free durations were not timed against the other ranks' spans: each
      // is scaled by the traced step's ratio of this rank's Allocs/Frees alone to measured (1 when
      // the run fit its cores).
      const double memory_ratio = memory_measured > 0 ? memory_alone / memory_measured : 1;
      if (r.memory_op_step_s_size() > 0) {
        std::vector<const Task*> memory_tasks;
        for (const Task& t : p.tasks)
          if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) memory_tasks.push_back(&t);
        const size_t per_step = memory_tasks.size();
        if (per_step == 0 || size_t(r.memory_op_step_s_size()) % per_step != 0)
          throw Error("calibrate: " + trace_name + " rank " + std::to_string(r.rank()) + ": memory_op_step_s holds " +
                      std::to_string(r.memory_op_step_s_size()) + " durations, not a whole number of steps of the " +
                      std::to_string(per_step) + " Allocs and Frees of its program");
        for (size_t i = 0; i < size_t(r.memory_op_step_s_size()); ++i) {
          const Task& t = *memory_tasks[i % per_step];
          const Alloc* a = std::get_if<Alloc>(&t.op);
          const BufferId b = a ? a->buffer : std::get<Free>(t.op).buffer;
          const double d = r.memory_op_step_s(int(i));
          if (!std::isfinite(d) || d < 0)
            throw Error("calibrate: " + trace_name + " rank " + std::to_string(r.rank()) + ": memory_op_step_s entry " +
                        std::to_string(i) + " (" + std::to_string(d) + ") is not a duration");
          if (!freed.count(b) || !bytes_of.count(b)) continue;
          auto& step = memory_ops[{a != nullptr, bytes_of[b]}][{run, r.memory_op_first_step() + int(i / per_step)}];
          step.first += d * memory_ratio, ++step.second;
        }
      }
      std::sort(memory_spans.begin(), memory_spans.end());
      std::sort(busy_spans.begin(), busy_spans.end());
      // The time of `spans` (sorted, disjoint: one thread runs them) within [from, to], each part
      // [a, b] counted as measure(a, b).
      auto time_within = [](const std::vector<std::pair<double, double>>& spans, double from, double to,
                            auto measure) {
        auto lo = std::lower_bound(spans.begin(), spans.end(), std::make_pair(from, -HUGE_VAL));
        if (lo != spans.begin() && std::prev(lo)->second > from) --lo;  // one that began before `from`
        double sum = 0;
        for (auto it = lo; it != spans.end() && it->first < to; ++it) {
          const double a = std::max(it->first, from), b = std::min(it->second, to);
          if (b > a) sum += measure(a, b);
        }
        return sum;
      };
      auto measured = [](double a, double b) { return b - a; };
      // A collective as measured, less the rank's own work inside it as measured (its time alone
      // is not taken out: see above).
      for (const auto& [inst, from, to] : polled_collectives)
        instances[inst].push_back(std::max(0.0, to - from - time_within(busy_spans, from, to, measured)));
      // Time between kernels of a stream: from when a kernel could start (its stream's previous
      // kernel and its deps finished: RankTimes.ready) to its start, less the Allocs and Frees that
      // ran in between; both alone.
      const std::vector<double>& ready_at = times[size_t(ri)].ready;
      for (const Task& t : p.tasks) {
        const double ready = ready_at[t.id];
        if (!std::holds_alternative<Compute>(t.op) || start[t.id] < 0 || ready < 0) continue;
        auto& [sum, n] = overhead[run];
        sum += std::max(0.0, alone(ready, start[t.id]) - time_within(memory_spans, ready, start[t.id], alone));
        ++n, ++overhead_n;
      }
    }
    kernel_share[run] = kernel_measured > 0 ? kernel_alone / kernel_measured : 1;
    speed_spread[run] = rank_speed_spread(rank_work);
  }
  // Collective instances pooled (median_s, samples) and by run (mean_s, mean_wait_s: the median
  // over the runs of each run's mean, as for kernels).
  std::map<CollectiveKey, std::vector<double>> collectives;
  std::map<CollectiveKey, std::map<size_t, std::vector<double>>> collective_runs, wait_runs;
  for (const auto& [inst, durations] : instances) {
    const double shortest = *std::min_element(durations.begin(), durations.end());
    const CollectiveKey& key = instance_keys.at(inst);
    collectives[key].push_back(shortest);
    collective_runs[key][std::get<0>(inst)].push_back(shortest);
    wait_runs[key][std::get<0>(inst)].push_back(mean(durations) - shortest);
  }
  // The median over runs of each run's mean (one run: its mean).
  auto median_of_run_means = [](const std::map<size_t, std::vector<double>>& by_run) {
    std::vector<double> means;
    for (const auto& [run, v] : by_run) means.push_back(mean(v));
    return median_of(std::move(means));
  };
  if (kernels.empty() && collectives.empty())
    throw Error("calibrate: " + (runs.size() == 1 ? runs[0].name : std::string("the traces")) +
                (runs.size() == 1 ? " holds" : " hold") + " no kernel and no collective: nothing to calibrate");
  proto::CalibrationProfile prof;
  prof.set_format(kCalibrationFormat);
  prof.set_backend(first.backend());
  prof.set_machine(first.machine());
  prof.set_scenario_digest(first.scenario_digest());
  prof.set_ranks(uint32_t(first.world_size()));
  // The placement of a host run, as `tandem run` pinned and printed it (MeasuredMachine).
  if (polled && machine.cores > 0 && machine.blas_threads_per_rank > 0) {
    prof.set_blas_threads_per_rank(uint32_t(machine.blas_threads_per_rank));
    prof.set_cores(uint32_t(machine.cores));
  }
  std::vector<double> measured_spreads;
  for (size_t run = 0; run < runs.size(); ++run) {
    const RunSpread sp = run_spread(*runs[run].trace);
    proto::CalibrationRun* cr = prof.add_runs();
    cr->set_name(runs[run].name);
    cr->set_steps(uint32_t(sp.steps));
    cr->set_iteration_s(sp.median_s);
    cr->set_relative_iqr(sp.relative_iqr);
    cr->set_rank_speed_spread(std::max(0.0, speed_spread[run]));
    cr->set_core_share(kernel_share[run]);
    if (speed_spread[run] >= 0) measured_spreads.push_back(speed_spread[run]);
  }
  // Which core is slower changes from run to run: the spread is kept without its sign, the median
  // over the runs as for every other quantity of several runs.
  prof.set_rank_speed_spread(measured_spreads.empty() ? 0 : median_of(std::move(measured_spreads)));
  // The runs' machine state (Trace.state_probe): per field the median over the runs that took it
  // (`tandem calibrate --state-probe` replaces it with probes taken alone before the runs).
  {
    std::vector<MachineStateProbe> probes;
    for (const NamedTrace& run : runs)
      if (run.trace->has_state_probe()) {
        const proto::StateProbe& sp = run.trace->state_probe();
        MachineStateProbe p;
        p.allreduce_256b_s = sp.allreduce_256b_s(), p.allreduce_16kib_s = sp.allreduce_16kib_s();
        p.zero_fill_1mib_s = sp.zero_fill_1mib_s(), p.compute_s = sp.compute_s();
        if (p.valid()) probes.push_back(p);  // a field not timed (0) has no ratio to scale by
      }
    if (!probes.empty()) set_profile_state_probe(prof, probes, false);
  }
  prof.set_overhead_samples(overhead_n);
  std::vector<double> overhead_means;
  for (const auto& [run, sum_n] : overhead) overhead_means.push_back(sum_n.first / sum_n.second);
  prof.set_task_overhead_s(overhead_n ? median_of(std::move(overhead_means)) : 0);
  for (auto& [k, v] : kernels) {
    proto::KernelTime* kt = prof.add_kernels();
    kt->set_kernel(std::get<0>(k));
    kt->set_dtype(std::get<1>(k));
    for (int64_t d : std::get<2>(k)) kt->add_dims(d);
    kt->set_samples(uint32_t(v.size()));
    kt->set_mean_s(median_of_run_means(kernel_runs[k]));
    kt->set_median_s(median_of(std::move(v)));
    kt->set_label(kernel_labels[k]);
  }
  // An Alloc/Free size's time: the median over the steps of the step's mean, so that one step whose
  // zero fills page-faulted more than the others does not set it (docs/exec.md).
  for (auto& [k, by_step] : memory_ops) {
    std::vector<double> step_means;
    uint32_t samples = 0;
    for (const auto& [step, sum_n] : by_step) step_means.push_back(sum_n.first / sum_n.second), samples += sum_n.second;
    proto::MemoryOpTime* m = prof.add_memory_ops();
    m->set_alloc(k.first);
    m->set_bytes(k.second);
    m->set_mean_s(median_of(std::move(step_means)));
    m->set_samples(samples);
  }
  for (auto& [k, v] : collectives) {
    proto::CollectiveTime* ct = prof.add_collectives();
    ct->set_op(std::get<0>(k));
    ct->set_group_kind(std::get<1>(k));
    ct->set_group_size(std::get<2>(k));
    ct->set_bytes(std::get<3>(k));
    ct->set_samples(uint32_t(v.size()));
    ct->set_mean_s(median_of_run_means(collective_runs[k]));
    ct->set_mean_wait_s(median_of_run_means(wait_runs[k]));
    ct->set_median_s(median_of(std::move(v)));
    ct->set_label(collective_labels[k]);
  }
  return prof;
}

void write_calibration(const proto::CalibrationProfile& profile, const std::string& path) {
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) throw Error("cannot serialise calibration profile " + path);
  write_file_atomic(path, bytes);
}

CalibrationFileKind calibration_file_kind(std::string_view bytes, const std::string& path) {
  const std::string head = "calibration file " + path + ": ";
  if (bytes.empty())
    throw Error(head + "empty file (expected a profile from `tandem calibrate TRACE SCENARIO -o PROFILE`, or a "
                "table of kernel<TAB>dtype<TAB>d0,d1,...<TAB>time_us lines)");
  const std::string marker = format_marker(bytes);
  if (marker == kCalibrationFormat) return CalibrationFileKind::kProfile;
  if (marker.rfind("tandem-trace-", 0) == 0)
    throw Error(head + "a tandem trace (" + marker + "), not a calibration profile: make a profile from it with " +
                "`tandem calibrate TRACE SCENARIO -o PROFILE`");
  if (marker.rfind("tandem-calibration-", 0) == 0)
    throw Error(head + "format " + marker + ", but this build reads " + kCalibrationFormat +
                ": write the profile again with `tandem calibrate`");
  if (!marker.empty() || bytes.find('\0') != std::string_view::npos ||
      (path.size() > 3 && path.compare(path.size() - 3, 3, ".pb") == 0))
    throw Error(head + "not a tandem calibration profile (no " + kCalibrationFormat +
                " format marker; write one with `tandem calibrate`)" +
                (marker.empty() ? std::string() : ": format marker '" + marker + "'"));
  return CalibrationFileKind::kTable;
}

namespace {

// The range checks of parse_calibration on `prof`'s entries; `head` names the file (and the state).
void check_entries(const proto::CalibrationProfile& prof, const std::string& head) {
  if (prof.kernels_size() == 0 && prof.collectives_size() == 0)
    throw Error(head + "holds no kernel or collective time: it would calibrate nothing");
  auto bad_time = [](double t) { return !std::isfinite(t) || t < 0; };
  for (int i = 0; i < prof.kernels_size(); ++i) {
    const proto::KernelTime& k = prof.kernels(i);
    const std::string at = head + "kernel entry " + std::to_string(i) + " (\"" + k.label() + "\"): ";
    if (k.kernel() >= uint32_t(kKernelCount)) throw Error(at + "kernel " + std::to_string(k.kernel()) + " out of range");
    if (k.dtype() >= kDTypeValues) throw Error(at + "dtype " + std::to_string(k.dtype()) + " out of range");
    if (k.dims_size() != 6) throw Error(at + std::to_string(k.dims_size()) + " dims, expected 6");
    for (int64_t d : k.dims())
      if (d < 0) throw Error(at + "dimension " + std::to_string(d) + " < 0");
    if (bad_time(k.median_s())) throw Error(at + "median_s " + std::to_string(k.median_s()) + " is not a time");
    if (bad_time(k.mean_s())) throw Error(at + "mean_s " + std::to_string(k.mean_s()) + " is not a time");
  }
  for (int i = 0; i < prof.collectives_size(); ++i) {
    const proto::CollectiveTime& c = prof.collectives(i);
    const std::string at = head + "collective entry " + std::to_string(i) + " (\"" + c.label() + "\"): ";
    if (c.op() >= kCollectiveOpValues) throw Error(at + "op " + std::to_string(c.op()) + " out of range");
    if (c.group_kind() >= uint32_t(kGroupKindCount))
      throw Error(at + "group kind " + std::to_string(c.group_kind()) + " out of range");
    if (c.group_size() < 1 || c.group_size() > uint32_t(INT32_MAX))
      throw Error(at + "group size " + std::to_string(c.group_size()) + " out of range");
    if (c.bytes() < 0) throw Error(at + "bytes " + std::to_string(c.bytes()) + " < 0");
    if (bad_time(c.median_s())) throw Error(at + "median_s " + std::to_string(c.median_s()) + " is not a time");
    if (bad_time(c.mean_s())) throw Error(at + "mean_s " + std::to_string(c.mean_s()) + " is not a time");
    if (bad_time(c.mean_wait_s())) throw Error(at + "mean_wait_s " + std::to_string(c.mean_wait_s()) + " is not a time");
  }
  for (int i = 0; i < prof.gemm_probe_size(); ++i) {
    const proto::GemmProbe& g = prof.gemm_probe(i);
    const std::string at = head + "gemm_probe entry " + std::to_string(i) + ": ";
    if (g.m() < 1 || g.n() < 1 || g.k() < 1)
      throw Error(at + "shape " + std::to_string(g.m()) + "x" + std::to_string(g.n()) + "x" + std::to_string(g.k()) +
                  " has a dimension < 1");
    if (bad_time(g.time_s()) || g.time_s() == 0)
      throw Error(at + "time_s " + std::to_string(g.time_s()) + " is not a positive time");
  }
  auto check_probe = [&](const google::protobuf::RepeatedPtrField<proto::CollectiveProbe>& probe, const char* field) {
    for (int i = 0; i < probe.size(); ++i) {
      const proto::CollectiveProbe& c = probe[i];
      const std::string at = head + field + " entry " + std::to_string(i) + ": ";
      if (c.op() >= kCollectiveOpValues) throw Error(at + "op " + std::to_string(c.op()) + " out of range");
      if (c.group_size() < 2 || c.group_size() > uint32_t(INT32_MAX))
        throw Error(at + "group size " + std::to_string(c.group_size()) + " out of range");
      if (c.bytes() < 1) throw Error(at + "bytes " + std::to_string(c.bytes()) + " < 1");
      if (bad_time(c.time_s()) || c.time_s() == 0)
        throw Error(at + "time_s " + std::to_string(c.time_s()) + " is not a positive time");
      if (bad_time(c.gap_s())) throw Error(at + "gap_s " + std::to_string(c.gap_s()) + " is not a time >= 0");
    }
  };
  check_probe(prof.collective_probe(), "collective_probe");
  check_probe(prof.shared_collective_probe(), "shared_collective_probe");
  if (prof.shared_collective_probe_size() > 0 && prof.shared_probe_ranks() < 2)
    throw Error(head + "shared_probe_ranks " + std::to_string(prof.shared_probe_ranks()) +
                " with a shared_collective_probe: a probe of fewer than 2 ranks");
  for (int i = 0; i < prof.memory_ops_size(); ++i) {
    const proto::MemoryOpTime& m = prof.memory_ops(i);
    const std::string at = head + "memory_ops entry " + std::to_string(i) + ": ";
    if (m.bytes() < 0) throw Error(at + "bytes " + std::to_string(m.bytes()) + " < 0");
    if (bad_time(m.mean_s())) throw Error(at + "mean_s " + std::to_string(m.mean_s()) + " is not a time");
  }
  if (bad_time(prof.task_overhead_s()))
    throw Error(head + "task_overhead_s " + std::to_string(prof.task_overhead_s()) + " is not a time");
  // (largest - smallest) / mean of non-negative times lies in [0, ranks); beyond 2 the slower rank's
  // drift (spread / 2 of the time) would exceed the time itself.
  auto bad_spread = [](double s) { return !std::isfinite(s) || s < 0 || s >= 2; };
  for (int i = 0; i < prof.runs_size(); ++i)
    if (bad_spread(prof.runs(i).rank_speed_spread()))
      throw Error(head + "runs entry " + std::to_string(i) + " (\"" + prof.runs(i).name() + "\"): rank_speed_spread " +
                  std::to_string(prof.runs(i).rank_speed_spread()) + " is not a spread in [0, 2)");
  // The kernels' time alone over measured in a run (make_calibration): a share of a core, in (0, 1];
  // absent in a profile written before the field.
  for (int i = 0; i < prof.runs_size(); ++i) {
    const proto::CalibrationRun& r = prof.runs(i);
    if (r.has_core_share() && !(std::isfinite(r.core_share()) && r.core_share() > 0 && r.core_share() <= 1))
      throw Error(head + "runs entry " + std::to_string(i) + " (\"" + r.name() + "\"): core_share " +
                  std::to_string(r.core_share()) + " is not a share of a core in (0, 1]");
  }
  if (bad_spread(prof.rank_speed_spread()))
    throw Error(head + "rank_speed_spread " + std::to_string(prof.rank_speed_spread()) + " is not a spread in [0, 2)");
}

}  // namespace

proto::CalibrationProfile parse_calibration(const std::string& bytes, const std::string& path) {
  const std::string head = "calibration profile " + path + ": ";
  proto::CalibrationProfile prof;
  if (!prof.ParseFromString(bytes) || prof.format() != kCalibrationFormat)
    throw Error(head + "not a tandem calibration profile (expected format " + kCalibrationFormat +
                "; write one with `tandem calibrate`)");
  check_entries(prof, head);
  // Each machine state's own times (traces/calibration/machine_states.h), checked as the profile's.
  for (int i = 0; i < prof.states_size(); ++i) {
    const std::string at = head + "states entry " + std::to_string(i) + ": ";
    const double fill = prof.states(i).state_probe().zero_fill_1mib_s();
    if (!std::isfinite(fill) || fill <= 0)
      throw Error(at + "state_probe zero_fill_1mib_s " + std::to_string(fill) + " is not a positive time");
    check_entries(profile_in_state(prof, i), at);
  }
  return prof;
}

proto::CalibrationProfile read_calibration(const std::string& path) {
  const std::string bytes = read_input_file(path, "calibration profile", kMaxProfileBytes);
  if (calibration_file_kind(bytes, path) != CalibrationFileKind::kProfile)
    throw Error("calibration profile " + path + ": not a tandem calibration profile (expected format " +
                kCalibrationFormat + "; write one with `tandem calibrate`)");
  return parse_calibration(bytes, path);
}

}  // namespace tandem
