// tandem export-chakra SCENARIO [--set part.field=value ...] -o PREFIX: the scenario's schedule as
// MLCommons Chakra execution traces, PREFIX.<rank>.et per rank and PREFIX.comm_groups.json
// (traces/chakra/chakra_writer.h says what each task becomes, and the conventions ASTRA-sim needs).
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "shared/program_size.h"
#include "shared/scenario.h"
#include "shared/schedule.h"
#include "traces/chakra/chakra_writer.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  po::options_description opts("tandem export-chakra SCENARIO [options] -o PREFIX");
  opts.add_options()("help,h", "show this help")(
      "set", po::value<std::vector<std::string>>()->composing(), "override a scenario field: part.field=value")(
      "output,o", po::value<std::string>(), "file prefix: writes PREFIX.<rank>.et and PREFIX.comm_groups.json")(
      "calibration", po::value<std::string>(),
      "measured kernel times for duration_micros: a profile from tandem calibrate (.pb) or a TSV, as tandem sim takes")(
      "scenario", po::value<std::string>(), "scenario file (.textproto)");
  tandem::add_max_memory_option(opts);
  po::variables_map vm;
  if (auto stop = tandem::parse_scenario_command_line("tandem export-chakra", argc, argv, opts, vm)) return *stop;
  return tandem::run_main("tandem export-chakra", [&] {
    if (!vm.count("output")) tandem::throw_usage_error("-o PREFIX is required", opts);
    tandem::reject_empty_paths(vm, {"output", "calibration"});
    std::vector<std::string> sets;
    if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
    tandem::Scenario scenario = tandem::load_scenario(vm["scenario"].as<std::string>(), sets);
    tandem::print_scenario_notes("tandem export-chakra", scenario);
    // One rank's program is generated and written at a time: refuse before generating one that
    // memory cannot hold.
    tandem::check_program_memory(scenario, tandem::kProgramBytesPerTask, "tandem export-chakra",
                                 tandem::max_memory_limit(vm));
    const tandem::Schedule schedule(std::move(scenario));
    const std::string prefix = vm["output"].as<std::string>();
    std::optional<tandem::sim::CalibrationTable> calibration;
    if (vm.count("calibration"))
      calibration = tandem::sim::CalibrationTable::load(vm["calibration"].as<std::string>());
    const tandem::ChakraExport e =
        tandem::write_chakra(schedule, prefix, calibration ? &*calibration : nullptr);
    std::cout << "wrote " << e.files << " Chakra traces " << prefix << ".<rank>.et and " << prefix
              << ".comm_groups.json: " << e.nodes[4] << " compute, " << e.nodes[7] << " collective, " << e.nodes[5]
              << " send, " << e.nodes[6] << " recv, " << e.nodes[2] + e.nodes[3] << " memory nodes (" << e.dropped
              << " alloc/free tasks left out)\n";
    if (calibration)
      std::cout << "durations: " << e.measured << " of " << e.nodes[4] << " compute nodes measured ("
                << vm["calibration"].as<std::string>() << "), the rest from tandem's cost model\n";
    // ASTRA-sim has no reduce and replays broadcasts: they are written as the collectives of the
    // same traffic it simulates (traces/chakra/chakra_writer.h).
    if (e.reduce_as_reduce_scatter > 0 || e.broadcast_as_all_gather > 0)
      std::cout << "for ASTRA-sim: " << e.reduce_as_reduce_scatter << " reduce written as reduce-scatter, "
                << e.broadcast_as_all_gather << " broadcast written as all-gather\n";
    return 0;
  });
}
