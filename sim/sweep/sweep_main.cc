// tandem sweep SCENARIO --vary key=v1,v2,... [--vary ...] [--set k=v ...] [-o report.html] [--json] [-j N]
// Simulates every point of the cross product of the --vary lists, in parallel, and reports them
// (docs/sweep.md). Exit codes: 0 the sweep ran (whatever its points' outcomes), 2 bad input (flags,
// scenario file), 1 internal error.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "shared/error.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_progress.h"
#include "sim/sweep/sweep_report_html.h"
#include "sim/sim_time_estimate.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/sweep/sweep_table.h"

namespace po = boost::program_options;
using namespace tandem;

namespace {

void print_summary(const sweep::SweepTable& t) {
  size_t ok = 0;
  for (const sweep::SweepPoint& p : t.points) ok += p.result.status == sweep::PointStatus::kOk;
  std::printf("tandem sweep: %s, %zu points, %zu valid\n",
              (t.scenario_name.empty() ? t.scenario_path : t.scenario_name).c_str(), t.points.size(), ok);
  for (const sweep::BestAtSize& b : sweep::best_per_size(t)) {
    if (b.point < 0) {
      std::printf("  %6d GPUs: no valid point\n", b.gpus);
      continue;
    }
    const sweep::SweepPoint& p = t.points[size_t(b.point)];
    std::printf("  %6d GPUs: best %s  %.6g tokens/s  %.4g s/iteration  MFU %.1f %%\n", b.gpus, p.strategy.c_str(),
                p.result.tokens_per_s, p.result.iteration_time_s, 100.0 * p.result.mfu);
    if (!p.result.approximate.empty()) std::printf("    (approximate: %s)\n", p.result.approximate.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path, output;
  std::vector<std::string> sets, varies;
  int jobs = 0;
  double max_memory_gib = 0;
  std::string max_time = "1h";
  po::options_description opts("tandem sweep SCENARIO --vary key=v1,v2,... [options]");
  opts.add_options()
      ("help,h", "this help")
      ("vary", po::value(&varies)->composing(), "vary a scenario field over a list: --vary strategy.tp=1,2,4 (repeatable; the points are the cross product, the first --vary varying slowest)")
      ("set", po::value(&sets)->composing(), "override a scenario field at every point: --set strategy.pp=2 (repeatable)")
      ("output,o", po::value(&output), "write the HTML report to FILE (atomically)")
      ("json", "print the table of every point as one JSON object")
      ("jobs,j", po::value(&jobs), "simulations at a time (default: the number of hardware threads)")
      ("max-memory", po::value(&max_memory_gib), "memory budget in GiB for the points running at once (default: half the RAM); a point estimated over its share (budget / jobs) is not simulated")
      ("max-time", po::value(&max_time), "wall-time limit of one point: 90s, 30m, 2h; 0 for no limit (default 1h); a point estimated over it is not simulated")
      ("approximate", "simulate each point with tandem sim's --approximate (docs/sim.md \"Approximate tier\"): a point whose result is approximate says so in the table")
      ("scenario", po::value(&scenario_path), "scenario file");
  po::variables_map vm;
  if (auto stop = parse_scenario_command_line("tandem sweep", argc, argv, opts, vm)) return *stop;
  return run_main("tandem sweep", [&] {
    reject_empty_paths(vm, {"output"});
    if (vm.count("jobs") && jobs < 1) throw Error("--jobs: expected a positive number of simulations, got " + std::to_string(jobs));
    std::vector<sweep::VaryAxis> axes;
    for (const std::string& v : varies) axes.push_back(sweep::parse_vary(v));
    const sweep::SweepGrid grid(std::move(axes));
    sweep::check_flags(scenario_path, sets, grid);

    sweep::Progress progress(::isatty(STDERR_FILENO) != 0);
    sweep::RunOptions o;
    o.jobs = jobs;
    o.sim.approximate = vm.count("approximate") > 0;
    if (vm.count("max-memory")) {
      if (!(max_memory_gib > 0)) throw Error("--max-memory: expected a positive size in GiB");
      o.limit.max_memory_bytes = static_cast<int64_t>(max_memory_gib * 1073741824.0);
    }
    o.limit.max_time_s = sim::parse_duration(max_time, "--max-time");
    o.on_progress = [&](size_t done, size_t total) { progress.update(done, total); };
    const sweep::SweepTable table = sweep::run_sweep(scenario_path, sets, grid, o);
    progress.finish();

    if (!output.empty()) sweep::write_sweep_html(output, table);
    if (vm.count("json")) std::cout << sweep::sweep_json(table);
    else print_summary(table);
    if (!output.empty()) std::cerr << "tandem sweep: report written to " << output << "\n";
    return 0;
  });
}
