// tandem compare A.trace B.trace [-o report.html] [--json] [--allow-different-scenarios]: sets a
// prediction (A) beside a reference (B) task by task (traces/report/compare.h). Prints a short
// summary, or with --json one JSON object, on stdout; -o writes the HTML report atomically.
#include <iostream>

#include <boost/program_options.hpp>

#include "shared/error.h"
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
  po::positional_options_description pos;
  pos.add("traces", 2);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts;
      return 0;
    }
    if (!vm.count("traces") || vm["traces"].as<std::vector<std::string>>().size() != 2) {
      std::cerr << "tandem compare: expected two trace files, A then B\n" << opts;
      return 2;
    }
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
  } catch (const po::error& e) {
    std::cerr << "tandem compare: " << e.what() << "\n";
    return 2;
  } catch (const tandem::Error& e) {
    std::cerr << e.what() << "\n";
    return e.exit_code();
  }
}
