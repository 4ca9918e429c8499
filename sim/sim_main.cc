// tandem sim SCENARIO [--set k=v ...] [--json] [--trace FILE] [--timeline FILE] [options]
// Replays the scenario's schedule on its modeled cluster (SimGrid) and reports what one training
// iteration costs. Exit codes: 0 ok, 2 bad input, 3 out of memory, 1 internal error.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "shared/error.h"
#include "shared/generation_heap.h"
#include "shared/input_file.h"
#include "shared/schedule.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"
#include "shared/resource_limit.h"
#include "sim/sim_memory_estimate.h"
#include "sim/sim_time_estimate.h"
#include "traces/chakra/chakra_reader.h"
#include "traces/chrome_json.h"
#include "traces/trace_io.h"
#include "traces/calibration/machine_state_probe.h"

namespace po = boost::program_options;
using namespace tandem;

namespace {

// import_chakra, saying on stderr what it made of the traces (the nodes it could not replay by kind).
Schedule import_chakra_verbose(Scenario scenario, const std::string& prefix, const ChakraImportOptions& options) {
  ChakraImport r;
  Schedule s = import_chakra(std::move(scenario), prefix, &r, options);
  std::cerr << "tandem sim: " << prefix << ": " << r.ranks << " ranks, " << r.nodes << " nodes, " << r.tasks
            << " replayed (compute: " << r.timed << " with their own time, " << r.priced
            << " priced from num_ops and tensor_size)";
  int64_t skipped = 0;
  for (const auto& [kind, n] : r.skipped) skipped += n;
  if (skipped > 0) {
    std::cerr << "; " << skipped << " not replayed:";
    for (const auto& [kind, n] : r.skipped) std::cerr << " " << kind << " x" << n;
  }
  std::cerr << "\n";
  return s;
}

// A trace file that exists only for the timeline (no --trace): removed when main is done.
struct TemporaryFile {
  std::string path;
  ~TemporaryFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

}  // namespace

int main(int argc, char** argv) {
  // The count (sim::count_sim_work) generates the class programs one after another.
  tandem::keep_generation_heap();
  std::string scenario_path, trace_path, timeline_path, calibration_path, chakra_prefix, state_probe_path;
  std::string chakra_durations = "exact";
  std::string granularity = "phase", algorithm = "auto", protocol = "auto";
  std::vector<std::string> sets;
  std::string max_time = "1h";
  double reserved_gib = 0, max_memory_gib = 0;
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
      ("state-probe", po::value(&state_probe_path), "with a host --calibration profile: a machine state probe taken now (tandem run --probe-state FILE -n RANKS), right before the run predicted. When it falls in a machine state the calibration runs were measured in (its zero fill within 12 % of that state's), the prediction takes that state's runs' costs as measured; otherwise the nearest state's collectives and Allocs/Frees are scaled by the zero-fill ratio, kernels and the time between them by the compute ratio (traces/calibration/machine_states.h, docs/exec.md sessions 14 and 18)")
      ("reserved-gib", po::value(&reserved_gib), "device memory held before the first allocation (CUDA context, NCCL)")
      ("max-memory", po::value(&max_memory_gib), "refuse a run estimated to need more than GIB of memory (default: half the RAM)")
      ("max-time", po::value(&max_time), "refuse a run estimated to take longer than DURATION of wall time: 90s, 30m, 2h; 0 for no limit (default 1h)")
      ("chakra", po::value(&chakra_prefix), "replay the Chakra traces PREFIX.<rank>.et (and PREFIX.comm_groups.json) on the scenario's cluster instead of its model and strategy")
      ("chakra-durations", po::value(&chakra_durations), "with --chakra, how compute nodes are timed: exact (tandem_time_ns where present, the default) or micros (duration_micros only, as ASTRA-sim replays them)")
      ("no-shortcuts", "simulate without closed forms, compute fusion, shared class programs, tensor-parallel or replica folding")
      ("no-flow-quotient", "put every lane's flows in SimGrid (the flow and lane quotients off; outputs are the same, docs/sim.md)")
      ("no-lane-quotient", "with grid folding, keep the tp-only flow quotient but not the lane quotient (outputs are the same, docs/sim.md)")
      ("approximate", "keep a folded run whose lanes part (NCCL's tree over the replicas meeting other traffic) instead of rerunning it less folded: for 100k GPUs; the output says when it is approximate (docs/sim.md \"Approximate tier\")")
      ("scenario", po::value(&scenario_path), "scenario file");
  po::variables_map vm;
  if (auto stop = parse_scenario_command_line("tandem sim", argc, argv, opts, vm)) return *stop;
  return run_main("tandem sim", [&] {
    reject_empty_paths(vm, {"trace", "timeline", "calibration", "chakra", "state-probe"});
    if (!state_probe_path.empty() && calibration_path.empty())
      throw Error("--state-probe: only with --calibration PROFILE", ErrorKind::kBadInput);
    if (vm.count("chakra-durations") && chakra_prefix.empty())
      throw Error("--chakra-durations: only with --chakra PREFIX", ErrorKind::kBadInput);
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
    if (!calibration_path.empty() && !state_probe_path.empty())
      o.calibration = std::make_shared<sim::CalibrationTable>(sim::CalibrationTable::load(
          calibration_path,
          parse_state_probe(read_input_file(state_probe_path, "state probe", 1 << 16), state_probe_path)));
    else if (!calibration_path.empty())
      o.calibration = std::make_shared<sim::CalibrationTable>(sim::CalibrationTable::load(calibration_path));
    if (reserved_gib < 0) throw Error("--reserved-gib: expected a non-negative size");
    o.reserved_device_bytes = static_cast<int64_t>(reserved_gib * 1073741824.0);
    if (vm.count("no-shortcuts"))
      o.closed_form_uncontended = o.fuse_compute = o.share_class_programs = o.fold_tensor_parallel =
          o.fold_data_parallel = o.fold_flows = false;
    if (vm.count("no-flow-quotient")) o.fold_flows = false;
    if (vm.count("no-lane-quotient")) o.fold_lanes = false;
    o.approximate = vm.count("approximate") > 0;
    ResourceLimit limit;
    if (vm.count("max-memory")) {
      if (!(max_memory_gib > 0)) throw Error("--max-memory: expected a positive size in GiB");
      limit.max_memory_bytes = static_cast<int64_t>(max_memory_gib * 1073741824.0);
    }
    limit.max_time_s = sim::parse_duration(max_time, "--max-time");
    // The simulation's process writes the trace; a timeline is made from it (a temporary trace
    // beside the timeline when there is no --trace).
    TemporaryFile temporary;
    o.trace_path = trace_path;
    if (o.trace_path.empty() && !timeline_path.empty()) o.trace_path = temporary.path = timeline_path + ".trace.tmp";

    Schedule schedule = chakra_prefix.empty() ? Schedule(load_scenario(scenario_path, sets))
                                              : import_chakra_verbose(load_scenario(scenario_path, sets), chakra_prefix,
                                                                      {parse_chakra_durations(chakra_durations, "--chakra-durations")});
    print_scenario_notes("tandem sim", schedule.scenario());
    if (o.calibration && o.calibration->host_profile())  // a host profile's placement
      if (const std::string note = o.calibration->shared_cores_note(schedule.world_size()); !note.empty())
        std::cerr << "tandem sim: note: " << note << "\n";
    const sim::SimWork work = sim::count_sim_work(schedule, o);
    const sim::MemoryEstimate need = sim::estimate_memory(work, !o.trace_path.empty(), !timeline_path.empty());
    check_memory_estimate(need.bytes, "tandem sim", need.how, limit);
    const sim::TimeEstimate time = sim::estimate_time(work, o);
    check_time_estimate(time, "tandem sim", limit);
    if (time.seconds > 10)
      std::cerr << "tandem sim: this run will take about " << sim::format_duration(time.seconds)
                << " of wall time (" << time.how << ")\n";
    // The scenario may force an algorithm (strategy.collective_algorithm); --algorithm wins.
    if (!o.algorithm) {
      const CollectiveAlgorithm a = schedule.scenario().strategy.collective_algorithm;
      if (a == CollectiveAlgorithm::kRing) o.algorithm = sim::Algorithm::kRing;
      if (a == CollectiveAlgorithm::kTree) o.algorithm = sim::Algorithm::kTree;
    }
    const sim::SimResult r = sim::simulate(schedule, o);
    if (vm.count("json")) sim::write_json(std::cout, schedule, r);
    else sim::write_summary(std::cout, schedule, r);
    if (!r.oom && !timeline_path.empty()) write_chrome_json(read_trace(o.trace_path), timeline_path);
    return r.oom ? 3 : 0;
  });
}
