// tandem search SCENARIO [--gpus N] [--top K] [--set k=v ...] [--json] [-o report.html] [-j N] [--no-simulate]
//               [--vary-batch]
// Finds the fastest strategies of a scenario's model on its cluster (docs/search.md). Exit codes:
// 0 the search ran, 2 bad input (flags, scenario file, no valid strategy, no strategy that fits),
// 1 internal error. Under mpirun (`mpirun -n R tandem search ...`) the points and the simulations
// are dealt to the ranks (search/search_run.h) and rank 0 alone prints, the same output as one
// process.
#include <unistd.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "search/search_report.h"
#include "search/search_report_html.h"
#include "search/search_mpi.h"
#include "search/search_run.h"
#include "shared/cli_args.h"
#include "shared/error.h"
#include "shared/generation_heap.h"
#include "sim/sim_time_estimate.h"
#include "sim/sweep/sweep_progress.h"

namespace po = boost::program_options;
using namespace tandem;

int main(int argc, char** argv) {
  // The walk plans and the sweep's workers count (sim::count_sim_work) programs of up to millions
  // of tasks one after another, in this process and its forked children: keep freed memory in the
  // heap for the next one instead of returning it to the OS and faulting it in again (as tandem
  // plan and the simulation's child do). The 530B search's best point: its count 8.1 s wall (4.5 s
  // user + 3.1 s system) -> 1.6 s (1.3 + 0.3), docs/search.md "Session 12".
  keep_generation_heap();  // and on huge pages (shared/generation_heap.h)
  std::optional<search::MpiRanks> mpi;
  if (search::started_by_mpi_launcher()) {
    const int code = run_main("tandem search", [&] {
      mpi.emplace(&argc, &argv);
      return 0;
    });
    if (code != 0) return code;
  }
  const bool root = !mpi || mpi->ranks().rank == 0;
  // The other ranks print nothing: every rank parses the same flags (so meets the same errors,
  // printed by rank 0), and what fails on a rank during the search is sent to rank 0.
  if (!root) std::cout.rdbuf(nullptr), std::cerr.rdbuf(nullptr);
  std::string scenario_path, output;
  std::vector<std::string> sets;
  int jobs = 0, gpus = 0, top = 16;
  std::string max_time = "1h";
  po::options_description opts("tandem search SCENARIO [options]");
  opts.add_options()
      ("help,h", "this help")
      ("gpus", po::value(&gpus), "search strategies for N GPUs of the scenario's cluster (default: its cluster.gpus)")
      ("top", po::value(&top), "simulate the K best points of the estimate that fit in memory (default 16)")
      ("set", po::value(&sets)->composing(), "fix a scenario field: --set strategy.zero_stage=1 (repeatable; a fixed key is not searched)")
      ("json", "print the search as one JSON object")
      ("output,o", po::value(&output), "also write an HTML report (Pareto front, the K best, estimate against simulation) to FILE")
      ("jobs,j", po::value(&jobs), "simulations at a time (default: the number of hardware threads)")
      ("no-simulate", "rank by the estimate and the planner's memory only")
      ("vary-batch", "search strategy.global_batch too (the powers of two up to the scenario's, and it), ranked by tokens/s")
      ("approximate", "simulate the K best with tandem sim's --approximate (docs/sim.md \"Approximate tier\"): a point whose result is approximate says so")
      ("max-time", po::value(&max_time), "wall-time limit of one simulation: 90s, 30m, 2h; 0 for no limit (default 1h)")
      ("scenario", po::value(&scenario_path), "scenario file");
  add_max_memory_option(opts);
  po::variables_map vm;
  if (auto stop = parse_scenario_command_line("tandem search", argc, argv, opts, vm)) return *stop;
  return run_main("tandem search", [&] {
    if (vm.count("output") && output.empty()) throw Error("-o: expected a file name for the HTML report");
    if (vm.count("jobs") && jobs < 1) throw Error("--jobs: expected a positive number of simulations, got " + std::to_string(jobs));
    if (vm.count("gpus") && gpus < 1) throw Error("--gpus: expected a positive number of GPUs, got " + std::to_string(gpus));
    if (top < 1) throw Error("--top: expected a positive number of points, got " + std::to_string(top));
    // A progress line on a terminal only (the simulations of the K best).
    const bool tty = root && ::isatty(STDERR_FILENO) != 0;
    sweep::Progress progress(true);
    search::SearchOptions o;
    o.gpus = gpus;
    o.top = top;
    o.jobs = jobs;
    o.simulate = !vm.count("no-simulate");
    o.vary_batch = vm.count("vary-batch") > 0;
    o.sim.approximate = vm.count("approximate") > 0;
    if (mpi) o.ranks = &mpi->ranks();
    o.limit = max_memory_limit(vm);
    o.limit.max_time_s = sim::parse_duration(max_time, "--max-time");
    if (tty) o.on_progress = [&](size_t done, size_t total) { progress.update(done, total); };
    const search::SearchResult r = search::run_search(scenario_path, sets, o);
    if (!r.on_root) return 0;
    if (tty && o.simulate) progress.finish();
    if (!output.empty()) search::write_search_html(output, r);
    std::cout << (vm.count("json") ? search::search_json(r) : search::search_table(r));
    return 0;
  });
}
