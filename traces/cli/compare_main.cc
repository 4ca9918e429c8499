// tandem compare A.trace B.trace [-o report.html] [--json] [--allow-different-scenarios]: sets a
// prediction (A) beside a reference (B) task by task (traces/report/compare.h). Prints a short
// summary, or with --json one JSON object, on stdout; -o writes the HTML report atomically.
#include <iostream>

#include <boost/program_options.hpp>

#include "shared/cli_args.h"
#include "traces/report/compare.h"
#include "traces/report/compare_report_html.h"
#include "traces/trace_io.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  po::options_description opts("tandem compare A.trace B.trace [options]\n  A: the prediction, B: the reference; error = (A-B)/B");
  opts.add_options()("help,h", "show this help")("output,o", po::value<std::string>(), "write the HTML report here")(
      "json", "print the numbers as one JSON object on stdout")(
      "allow-different-scenarios", "compare traces whose scenario digests differ")(
      "traces", po::value<std::vector<std::string>>(), "the two trace files");
  po::variables_map vm;
  if (auto stop = tandem::parse_command_line("tandem compare", argc, argv, opts, {{"traces", 2}}, vm)) return *stop;
  return tandem::run_main("tandem compare", [&] {
    if (!vm.count("traces") || vm["traces"].as<std::vector<std::string>>().size() != 2)
      tandem::throw_usage_error("expected two trace files, A then B", opts);
    tandem::reject_empty_paths(vm, {"output"});
    const auto files = vm["traces"].as<std::vector<std::string>>();
    const tandem::proto::Trace a = tandem::read_trace(files[0]);
    const tandem::proto::Trace b = tandem::read_trace(files[1]);
    tandem::CompareOptions options;
    options.allow_different_scenarios = vm.count("allow-different-scenarios") > 0;
    options.name_a = files[0];
    options.name_b = files[1];
    const tandem::Comparison c = tandem::compare_traces(a, b, options);
    if (vm.count("output")) tandem::write_comparison_html(vm["output"].as<std::string>(), c, a, b);
    if (vm.count("json")) std::cout << tandem::comparison_json(c);
    else std::cout << tandem::comparison_text(c);
    if (vm.count("output") && !vm.count("json")) std::cout << "report: " << vm["output"].as<std::string>() << "\n";
    return 0;
  });
}
