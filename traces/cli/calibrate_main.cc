// tandem calibrate TRACE SCENARIO [--set k=v ...] -o PROFILE: the median measured time of each
// kernel and collective shape of a measured trace (traces/calibration/calibration_profile.h), for
// `tandem sim --calibration PROFILE`. The scenario (with the same --set) names the schedule the
// trace was measured on; its digest must match the trace's.
#include <iostream>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "traces/calibration/calibration_profile.h"
#include "traces/calibration/gemm_probe.h"
#include "traces/trace_io.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  po::options_description opts("tandem calibrate TRACE SCENARIO [--set k=v ...] -o PROFILE");
  opts.add_options()("help,h", "show this help")("output,o", po::value<std::string>(), "the profile to write")(
      "set", po::value<std::vector<std::string>>()->composing(), "the overrides the trace was measured with")(
      "no-probe", "a host trace: leave out the probe of this CPU's GEMM rate (run it on the machine measured)")(
      "args", po::value<std::vector<std::string>>(), "TRACE SCENARIO");
  po::variables_map vm;
  if (auto stop = tandem::parse_command_line("tandem calibrate", argc, argv, opts, {{"args", 2}}, vm)) return *stop;
  return tandem::run_main("tandem calibrate", [&] {
    if (!vm.count("args") || vm["args"].as<std::vector<std::string>>().size() != 2 || !vm.count("output"))
      tandem::throw_usage_error("needs TRACE SCENARIO and -o PROFILE", opts);
    tandem::reject_empty_paths(vm, {"output"});
    const auto& args = vm["args"].as<std::vector<std::string>>();
    std::vector<std::string> sets;
    if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
    tandem::Schedule schedule(tandem::load_scenario(args[1], sets));
    tandem::print_scenario_notes("tandem calibrate", schedule.scenario());
    tandem::proto::CalibrationProfile prof = tandem::make_calibration(schedule, tandem::read_trace(args[0]), args[0]);
    // A host trace: this CPU's GEMM rate over a grid of shapes, for the shapes the run lacks
    // (traces/calibration/gemm_probe.h); it describes the machine the run was measured on.
    if (prof.backend() == "host" && !vm.count("no-probe")) {
      tandem::GemmProbeOptions probe;
      probe.threads = tandem::probe_threads_for(int(prof.ranks()));
      tandem::probe_gemm(prof, probe);
    }
    const std::string out = vm["output"].as<std::string>();
    tandem::write_calibration(prof, out);
    std::cout << "tandem calibrate: " << prof.kernels_size() << " kernel shapes and " << prof.collectives_size()
              << " collective shapes";
    if (prof.gemm_probe_size())
      std::cout << " and " << prof.gemm_probe_size() << " probed GEMM shapes (" << prof.probe_blas_threads()
                << " BLAS thread" << (prof.probe_blas_threads() == 1 ? "" : "s") << ")";
    std::cout << " from " << args[0] << " (" << prof.backend() << ", " << prof.machine()
              << ") -> " << out << "\n";
    return 0;
  });
}
