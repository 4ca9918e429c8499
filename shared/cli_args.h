// The command line of every tandem program (plan, sim, sweep, run, compare, calibrate,
// export-chakra): Boost.Program_options with positional arguments, the same --help and bad-flag
// handling everywhere, and one wrapper around main's body that turns every exception into a
// message and an exit code.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "shared/resource_limit.h"
#include "shared/scenario.h"

namespace tandem {

// A positional argument: its option name and how many of it at most (-1: any number).
struct Positional {
  const char* name;
  int max_count = 1;
};

// Fills `vm` from argv: the options of `visible` (printed by --help and with errors) and of
// `hidden` (accepted, not printed), the positional arguments in order. Returns the exit code when
// the program should stop now — 0 after printing --help, 2 after a bad flag (printed with the
// usage) — else nullopt. Every program has "help,h" in `visible`.
std::optional<int> parse_command_line(const char* program, int argc, char** argv,
                                      const boost::program_options::options_description& visible,
                                      std::initializer_list<Positional> positional,
                                      boost::program_options::variables_map& vm,
                                      const boost::program_options::options_description* hidden = nullptr);

// For programs that take one scenario file (plan, sim, sweep): the scenario is the positional
// option "scenario", and a missing one stops the program with 2 and the usage.
std::optional<int> parse_scenario_command_line(const char* program, int argc, char** argv,
                                               const boost::program_options::options_description& opts,
                                               boost::program_options::variables_map& vm);

// Throws Error (bad input) with `message` followed by the usage.
[[noreturn]] void throw_usage_error(const std::string& message,
                                    const boost::program_options::options_description& opts);

// Throws Error (bad input) when one of the named string options was given an empty value
// (`--trace ""`, `-o ""`): an empty path names no file, and writing nothing would look like success.
void reject_empty_paths(const boost::program_options::variables_map& vm, std::initializer_list<const char*> names);

// The memory budget option of programs that allocate in proportion to their input (plan, sim,
// sweep, export-chakra): adds "--max-memory GIB" to `opts`, and reads it back as a ResourceLimit
// (default: default_max_memory_bytes()); a value that is not a positive size below 2^33 GiB is
// bad input.
void add_max_memory_option(boost::program_options::options_description& opts);
ResourceLimit max_memory_limit(const boost::program_options::variables_map& vm);

// Prints the scenario's notes (Scenario::notes) on stderr, "<program>: note: <line>" each.
void print_scenario_notes(const char* program, const Scenario& scenario);

// Runs main's body and returns its exit code, or the exit code of what it threw, after printing
// "<program>: <message>" on stderr: tandem::Error -> its kind's code; std::bad_alloc -> "out of
// memory", 3; any other exception -> "internal error: ...", 1.
int run_main(const char* program, const std::function<int()>& body);

}  // namespace tandem
