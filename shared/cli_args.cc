#include "shared/cli_args.h"

#include <iostream>

namespace tandem {

namespace po = boost::program_options;

std::optional<int> parse_scenario_command_line(const char* program, int argc, char** argv,
                                               const po::options_description& opts, po::variables_map& vm) {
  po::positional_options_description pos;
  pos.add("scenario", 1);
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\n" << opts;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts;
    return 0;
  }
  if (!vm.count("scenario")) {
    std::cerr << program << ": a scenario file is required\n" << opts;
    return 2;
  }
  return std::nullopt;
}

}  // namespace tandem
