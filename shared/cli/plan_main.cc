// tandem plan SCENARIO [--set k=v ...] [--json] [--max-memory GIB]: the strategy's rank grid and groups, flops,
// parameters, per-rank memory and communication volume, without running anything.
#include <iostream>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "shared/generation_heap.h"
#include "shared/plan_report.h"
#include "shared/plan_summary.h"
#include "shared/program_size.h"
#include "shared/resource_limit.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  // Rank programs are generated one after another: keep freed memory in the heap for the next
  // one instead of returning it to the OS and faulting it in again.
  tandem::keep_generation_heap();  // on huge pages too (shared/generation_heap.h)
  po::options_description opts("tandem plan SCENARIO [options]");
  opts.add_options()("help,h", "show this help")(
      "set", po::value<std::vector<std::string>>()->composing(), "override a scenario field: part.field=value")(
      "json", "print one JSON object")(
      "scenario", po::value<std::string>(), "scenario file (.textproto)");
  tandem::add_max_memory_option(opts);
  po::variables_map vm;
  if (auto stop = tandem::parse_scenario_command_line("tandem plan", argc, argv, opts, vm)) return *stop;
  return tandem::run_main("tandem plan", [&] {
    std::vector<std::string> sets;
    if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
    const tandem::ResourceLimit limit = tandem::max_memory_limit(vm);
    tandem::Scenario scenario = tandem::load_scenario(vm["scenario"].as<std::string>(), sets);
    tandem::print_scenario_notes("tandem plan", scenario);
    // Refuse before generating: a scenario may ask for more programs than memory holds.
    tandem::check_program_memory(scenario, tandem::plan_bytes_per_task(scenario), "tandem plan", limit);
    tandem::Schedule schedule(std::move(scenario));
    tandem::PlanSummary summary = tandem::summarize(schedule);
    tandem::check_host_memory(schedule.scenario(), summary);
    if (vm.count("json")) tandem::print_plan_json(std::cout, schedule, summary);
    else tandem::print_plan_text(std::cout, schedule, summary);
    return 0;
  });
}
