#include "sim/simulation.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <utility>
#include <string>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "shared/error.h"
#include "shared/rank_grid.h"
#include "sim/forked_call.h"
#include "sim/nccl_tuner.h"
#include "sim/replay_engine.h"
#include "sim/sim_metrics.h"
#include "sim/sim_result_codec.h"
#include "sim/sim_trace.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

namespace {

SimResult simulate_isolated(const Schedule& schedule, const SimOptions& options);

// Folded units' recordings, one per unit under lane 0's rank, as one entry per rank: each entry
// of a unit copied for its `fold` lanes. Keeps the order (rank, then the unit's own order).
// Grid folding (`lane0` not empty): each rank gets the entries of its unit's lane 0, ranks in order.
template <class T>
void expand_lanes(std::vector<T>& v, int fold, const std::vector<int32_t>& lane0) {
  if (fold <= 1 || v.empty()) return;
  std::vector<T> out;
  if (!lane0.empty()) {
    std::unordered_map<int32_t, std::pair<size_t, size_t>> range;  // lane 0 rank -> its entries
    for (size_t begin = 0; begin < v.size();) {
      size_t end = begin;
      while (end < v.size() && v[end].rank == v[begin].rank) ++end;
      range[v[begin].rank] = {begin, end};
      begin = end;
    }
    out.reserve(v.size() * size_t(fold));
    for (int32_t rank = 0; rank < int32_t(lane0.size()); ++rank) {
      const auto it = range.find(lane0[rank]);
      if (it == range.end()) continue;
      for (size_t i = it->second.first; i < it->second.second; ++i) {
        out.push_back(v[i]);
        out.back().rank = rank;
      }
    }
    v = std::move(out);
    return;
  }
  out.reserve(v.size() * size_t(fold));
  for (size_t begin = 0; begin < v.size();) {
    size_t end = begin;
    while (end < v.size() && v[end].rank == v[begin].rank) ++end;
    for (int m = 0; m < fold; ++m)
      for (size_t i = begin; i < end; ++i) {
        out.push_back(v[i]);
        out.back().rank += m;
      }
    begin = end;
  }
  v = std::move(out);
}

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
  // CM02 without TCP corrections: a lone flow takes bytes / bandwidth (SimGrid 3.32 manual, "Configuring SimGrid").
  sg::Engine::set_config("network/model:CM02");
  sg::Engine::set_config("network/crosstraffic:0");
  sg::Engine::set_config("network/TCP-gamma:0");

  NetworkEfficiency eff = options.ideal_network ? NetworkEfficiency{1.0, 1.0, 1.0} : options.efficiency;
  const Platform platform(cl, schedule.world_size(), eff, options.fabric);
  const FabricModel fabric = fabric_model(cl, eff, platform.gpus_per_node(), platform.nics_per_node());
  ComputeCostModel costs(cl, options.kernels, sc.strategy.flash_attention, options.calibration.get());
  // The framework's per-kernel host dispatch, for a GPU cluster run from the model's costs: a
  // calibration profile's times come from a real run, and the host cluster runs tandem's own
  // driver (its overhead is the preset's kernel_launch_us), not the framework.
  if (!options.calibration && cl.preset != "host") costs.set_host_dispatch_us(sc.software.host_dispatch_us);
  NcclTuner tuner(fabric, options.ideal_network, options.algorithm, options.protocol);
  // A trace needs the tasks' times and the memory samples; the replay records them once per unit.
  SimOptions replay_options = options;
  const bool tracing = !options.trace_path.empty();
  replay_options.record_tasks |= tracing;
  replay_options.record_memory |= tracing;
  ReplayEngine replay(schedule, replay_options, platform, fabric, costs, tuner);
  sg::Actor::create("replay", platform.driver(), std::ref(replay));
  engine.run();
  if (replay.failed()) throw replay.error();
  SimResult r = replay.take_result();
  std::sort(r.tasks.begin(), r.tasks.end(), [](const TaskTiming& a, const TaskTiming& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.task < b.task;
  });
  std::stable_sort(r.memory.begin(), r.memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.rank < b.rank; });
  finalize_metrics(r, sc, options.calibration.get());  // before the trace, which carries the prediction interval
  // A folded run that was not exact is run again unfolded (simulate()), which writes the trace.
  // So is one the approximate tier keeps (SimOptions::approximate) with its trace.
  const bool kept = r.fold_exact || (options.approximate && !r.fold_broken && r.parted_meetings > 0);
  if (tracing && !r.oom && kept) write_sim_trace(schedule, r, options.trace_path);
  if (options.record_tasks) expand_lanes(r.tasks, r.fold, r.lane0);
  else std::vector<TaskTiming>().swap(r.tasks);
  if (options.record_memory) expand_lanes(r.memory, r.fold, r.lane0);
  else std::vector<MemorySample>().swap(r.memory);
  return r;
}

}  // namespace

// The approximate tier (SimOptions::approximate, docs/sim.md "Approximate tier"): a folded run
// whose lanes parted only in time (an asymmetric op met other traffic; a lane's flow ended apart
// from lane 0's) is kept, marked approximate; one whose flows broke the fold's structure is not.
namespace {

bool keep_approximate(SimResult& r, const SimOptions& options) {
  if (!options.approximate || r.fold_exact || r.fold_broken || r.parted_meetings == 0) return false;
  r.approximate = true;
  return true;
}

}  // namespace

SimResult simulate(const Schedule& schedule, const SimOptions& options) {
  if (!options.isolate) {
    SimResult r = run_here(schedule, options);
    if (keep_approximate(r, options)) return r;
    // A folded replay that its own check found not provably exact is run again less folded
    // (below), which needs a fresh SimGrid: a second run in this process cannot be had.
    if (!r.fold_exact)
      throw Error("sim: the folded replay is not provably exact here (its lanes parted) and SimGrid runs once per "
                  "process: simulate with SimOptions::isolate, or without folding",
                  ErrorKind::kInternal);
    return r;
  }
  SimResult r = simulate_isolated(schedule, options);
  if (keep_approximate(r, options)) return r;
  SimOptions less = options;
  const RankGrid& grid = schedule.grid();
  const bool grid_fold = options.fold_data_parallel && grid.dp() > 1 && (grid.tp() > 1 || grid.pp() > 1) &&
                         r.fold > std::max(1, grid.tp());
  if (!r.fold_exact && grid_fold && options.fold_replica_classes) {
    // Grid folding's replicas parted (a collective not carried onto itself by a replica move met
    // other traffic: NCCL's double binary tree, docs/sim.md "Replica classes"): one state per stage
    // and class of replicas that see the same flows, every lane's flows in SimGrid, checked lane by
    // lane. Where the classes are one (the replicas' shares happen to be equal), this is grid
    // folding without the lane quotient.
    // The classes are the coarsest equitable partition (provably exact). Coarser classes, by the
    // flows on each replica's own links alone (the trees' roots, their one-child nodes, the rest),
    // part at 16,384 GPUs of GPT-3 t8 p16 and cost a run more: not tried (docs/sim.md).
    less.fold_lanes = false;
    less.replica_class_rounds = SimOptions::kEquitable;
    r = simulate_isolated(schedule, less);
  } else if (!r.fold_exact && r.lane_quotient_parted) {
    // Under the lane quotient, a collective that is not symmetric under a replica move met other
    // traffic (docs/sim.md "Lane quotient"): grid folding without it, every lane's flows in
    // SimGrid, checked lane by lane (where the replicas' shares happen to be equal, it is exact).
    less.fold_lanes = false;
    r = simulate_isolated(schedule, less);
  }
  if (!r.fold_exact && options.fold_tensor_parallel && r.fold > std::max(1, schedule.grid().tp())) {
    // A folded replay whose lanes' flows did not end together: not provably exact. Grid folding
    // assumes the replicas are alike, which a collective whose flows are not (NCCL's double
    // binary tree: docs/sim.md "Why lanes part") breaks where other flows meet it; run again with
    // the tp lanes alone folded (their own check applies), then, if need be, unfolded.
    SimOptions tp_only = less;
    tp_only.fold_data_parallel = false;
    r = simulate_isolated(schedule, tp_only);
  }
  if (!r.fold_exact) {
    // Still not provably exact: every rank replayed.
    SimOptions unfolded = less;
    unfolded.fold_tensor_parallel = unfolded.fold_data_parallel = false;
    r = simulate_isolated(schedule, unfolded);
  }
  return r;
}

namespace {

SimResult simulate_isolated(const Schedule& schedule, const SimOptions& options) {
  return decode_sim_result(forked_call(
      // The child's heap: sim/forked_call.cc (fresh_generation_heap).
      [&] { return encode_sim_result(run_here(schedule, options)); },
      "sim: the simulation process"));
}

}  // namespace

}  // namespace tandem::sim
