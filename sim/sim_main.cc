// tandem sim SCENARIO [--set k=v ...] [--json] [--trace FILE] [--timeline FILE] [options]
// Replays the scenario's schedule on its modeled cluster (SimGrid) and reports what one training
// iteration costs. Exit codes: 0 ok, 2 bad input, 3 out of memory, 1 internal error.
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "shared/error.h"
#include "shared/schedule.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"
#include "traces/chrome_json.h"
#include "traces/trace_builder.h"
#include "traces/trace_io.h"

namespace po = boost::program_options;
using namespace tandem;

namespace {

proto::Trace build_trace(const Schedule& schedule, const sim::SimResult& r) {
  TraceBuilder tb(schedule, "sim", schedule.scenario().cluster.gpu_name + " (SimGrid model)");
  // One program per class, relabelled for each rank of the class (the trace needs only the
  // tasks' kinds and sizes, which ranks of a class share).
  std::vector<int> reps(schedule.world_size());
  for (int r = 0; r < schedule.world_size(); ++r) reps[r] = schedule.representative_of(r);
  for (const RankClass& c : schedule.rank_classes()) {
    Program p = schedule.program(c.representative);
    for (int r = 0; r < schedule.world_size(); ++r) {
      if (reps[r] != c.representative) continue;
      p.rank = r;
      tb.begin_rank(p);
    }
  }
  for (const sim::TaskTiming& t : r.tasks) tb.task(t.rank, t.task, t.start_s, t.end_s);
  for (const sim::MemorySample& m : r.memory) tb.memory(m.rank, m.time_s, m.device_bytes, m.host_bytes);
  return tb.finish();
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path, trace_path, timeline_path, calibration_path;
  std::string granularity = "phase", algorithm = "auto", protocol = "auto";
  std::vector<std::string> sets;
  double reserved_gib = 0;
  po::options_description opts("tandem sim SCENARIO [options]");
  opts.add_options()
      ("help,h", "this help")
      ("set", po::value(&sets)->composing(), "override a scenario field: --set strategy.tp=8 (repeatable)")
      ("json", "print one JSON object instead of the summary")
      ("trace", po::value(&trace_path), "write the predicted trace (tandem trace format) to FILE")
      ("timeline", po::value(&timeline_path), "write a Chrome/Perfetto JSON timeline to FILE")
      ("granularity", po::value(&granularity), "collective flows: phase (default) or step (one flow per ring step)")
      ("algorithm", po::value(&algorithm), "collective algorithm: auto (NCCL-like tuning, or the scenario's strategy.collective_algorithm), ring or tree")
      ("protocol", po::value(&protocol), "NCCL protocol: auto, LL, LL128 or Simple")
      ("ideal-network", "links at datasheet bandwidth, no protocol costs (alpha-beta closed forms)")
      ("calibration", po::value(&calibration_path), "measured kernel times: a profile from tandem calibrate (.pb) or a TSV (kernel, dtype, dims, time_us)")
      ("reserved-gib", po::value(&reserved_gib), "device memory held before the first allocation (CUDA context, NCCL)")
      ("no-shortcuts", "simulate without closed forms, compute fusion, shared class programs or tensor-parallel folding")
      ("scenario", po::value(&scenario_path), "scenario file");
  po::variables_map vm;
  if (auto stop = parse_scenario_command_line("tandem sim", argc, argv, opts, vm)) return *stop;
  return run_main("tandem sim", [&] {
    reject_empty_paths(vm, {"trace", "timeline", "calibration"});
    sim::SimOptions o;
    if (granularity == "step") o.granularity = sim::Granularity::kStep;
    else if (granularity != "phase") throw Error("--granularity: expected phase or step, got '" + granularity + "'");
    if (algorithm == "ring") o.algorithm = sim::Algorithm::kRing;
    else if (algorithm == "tree") o.algorithm = sim::Algorithm::kTree;
    else if (algorithm != "auto") throw Error("--algorithm: expected auto, ring or tree, got '" + algorithm + "'");
    if (protocol == "LL") o.protocol = sim::Protocol::kLL;
    else if (protocol == "LL128") o.protocol = sim::Protocol::kLL128;
    else if (protocol == "Simple") o.protocol = sim::Protocol::kSimple;
    else if (protocol != "auto") throw Error("--protocol: expected auto, LL, LL128 or Simple, got '" + protocol + "'");
    o.ideal_network = vm.count("ideal-network") > 0;
    if (!calibration_path.empty())
      o.calibration = std::make_shared<sim::CalibrationTable>(sim::CalibrationTable::load(calibration_path));
    if (reserved_gib < 0) throw Error("--reserved-gib: expected a non-negative size");
    o.reserved_device_bytes = static_cast<int64_t>(reserved_gib * 1073741824.0);
    if (vm.count("no-shortcuts"))
      o.closed_form_uncontended = o.fuse_compute = o.share_class_programs = o.fold_tensor_parallel = false;
    o.record_tasks = o.record_memory = !trace_path.empty() || !timeline_path.empty();

    Schedule schedule(load_scenario(scenario_path, sets));
    // The scenario may force an algorithm (strategy.collective_algorithm); --algorithm wins.
    if (!o.algorithm) {
      const CollectiveAlgorithm a = schedule.scenario().strategy.collective_algorithm;
      if (a == CollectiveAlgorithm::kRing) o.algorithm = sim::Algorithm::kRing;
      if (a == CollectiveAlgorithm::kTree) o.algorithm = sim::Algorithm::kTree;
    }
    const sim::SimResult r = sim::simulate(schedule, o);
    if (vm.count("json")) sim::write_json(std::cout, schedule, r);
    else sim::write_summary(std::cout, schedule, r);
    if (!r.oom && (!trace_path.empty() || !timeline_path.empty())) {
      const proto::Trace trace = build_trace(schedule, r);
      if (!trace_path.empty()) write_trace(trace, trace_path);
      if (!timeline_path.empty()) write_chrome_json(trace, timeline_path);
    }
    return r.oom ? 3 : 0;
  });
}
