// The command line of a program that takes one scenario file (tandem plan, sim, sweep): parses it
// with Boost.Program_options, the scenario as the one positional argument (option "scenario").
#pragma once

#include <optional>

#include <boost/program_options.hpp>

namespace tandem {

// Fills `vm`. Returns the exit code when the program should stop now — 0 after printing --help,
// 2 after a bad flag or a missing scenario (both printed with the usage) — else nullopt.
std::optional<int> parse_scenario_command_line(const char* program, int argc, char** argv,
                                               const boost::program_options::options_description& opts,
                                               boost::program_options::variables_map& vm);

}  // namespace tandem
