// Running `tandem run` from a test: the launcher's combined output and exit status, and the JSON
// object rank 0 prints. A coreutils timeout guards a test against a hung job (it is not a timing
// assertion). TANDEM_RUN_BIN and TANDEM_SOURCE_DIR come from tests/exec/CMakeLists.txt.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/traces/json_parser.h"

namespace tandem::testing {

inline const std::string kTinyScenario = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

struct RunOutput {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

// tandem-run with `args` after the tiny scenario; `env` is prefixed to the command line.
inline RunOutput run_tandem(const std::string& args, const std::string& env = "", int timeout_s = 120) {
  const std::string cmd = env + " timeout -k 5 " + std::to_string(timeout_s) + " " + TANDEM_RUN_BIN + " " +
                          kTinyScenario + " " + args + " 2>&1";
  RunOutput r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The JSON object: rank 0's one line starting with '{'.
inline Json json_of(const RunOutput& r) {
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') return JsonParser::parse(line);
  throw std::runtime_error("no JSON in the output:\n" + r.out);
}

// The numbers of a JSON array (losses, peaks per rank).
inline std::vector<double> numbers(const Json& a) {
  std::vector<double> v;
  for (const Json& x : a.array) v.push_back(x.number);
  return v;
}

// The JSON of `tandem run ARGS --json`, run once per argument list and kept for the other tests
// of the process; a failed run throws with its output.
inline const Json& cached_run_json(const std::string& args, int timeout_s = 120) {
  static std::map<std::string, Json> cache;
  auto it = cache.find(args);
  if (it != cache.end()) return it->second;
  const RunOutput r = run_tandem(args + " --json", "", timeout_s);
  if (r.exit_code != 0) throw std::runtime_error("tandem run " + args + " failed:\n" + r.out);
  return cache[args] = json_of(r);
}

}  // namespace tandem::testing
