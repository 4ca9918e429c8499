#include "shared/cli_args.h"

#include <iostream>
#include <new>
#include <sstream>

#include "shared/error.h"

namespace tandem {

namespace po = boost::program_options;

std::optional<int> parse_command_line(const char* program, int argc, char** argv, const po::options_description& visible,
                                      std::initializer_list<Positional> positional, po::variables_map& vm,
                                      const po::options_description* hidden) {
  po::options_description all;
  all.add(visible);
  if (hidden) all.add(*hidden);
  po::positional_options_description pos;
  for (const Positional& p : positional) pos.add(p.name, p.max_count);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\n" << visible;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << visible;
    return 0;
  }
  return std::nullopt;
}

std::optional<int> parse_scenario_command_line(const char* program, int argc, char** argv,
                                               const po::options_description& opts, po::variables_map& vm) {
  if (auto stop = parse_command_line(program, argc, argv, opts, {{"scenario", 1}}, vm)) return stop;
  if (!vm.count("scenario")) {
    std::cerr << program << ": a scenario file is required\n" << opts;
    return 2;
  }
  return std::nullopt;
}

void throw_usage_error(const std::string& message, const po::options_description& opts) {
  std::ostringstream usage;
  usage << opts;
  std::string text = usage.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  throw Error(message + "\n" + text);
}

void reject_empty_paths(const po::variables_map& vm, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (!vm.count(name)) continue;
    const std::string* value = boost::any_cast<std::string>(&vm[name].value());
    if (value && value->empty()) throw Error(std::string("--") + name + ": an empty path; name the file");
  }
}

void print_scenario_notes(const char* program, const Scenario& scenario) {
  for (const std::string& note : scenario.notes) std::cerr << program << ": note: " << note << "\n";
}

int run_main(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::cerr << program << ": out of memory\n";
    return exit_code_of(ErrorKind::kOutOfMemory);
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return exit_code_of(ErrorKind::kInternal);
  } catch (...) {
    std::cerr << program << ": internal error: an unknown exception\n";
    return exit_code_of(ErrorKind::kInternal);
  }
}

void add_max_memory_option(po::options_description& opts) {
  opts.add_options()("max-memory", po::value<double>(),
                     "refuse a run whose estimated memory is above this many GiB (default: half of this machine's memory)");
}

ResourceLimit max_memory_limit(const po::variables_map& vm) {
  ResourceLimit limit;
  if (!vm.count("max-memory")) return limit;
  const double gib = vm["max-memory"].as<double>();
  // 2^33 GiB = 2^63 bytes, the most an int64 holds.
  if (!(gib > 0 && gib < 8589934592.0))
    throw Error("--max-memory " + std::to_string(gib) + ": must be a positive number of GiB below 2^33");
  limit.max_memory_bytes = static_cast<int64_t>(gib * 1073741824.0);
  return limit;
}

}  // namespace tandem
