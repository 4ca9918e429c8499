// Scenarios for the schedule tests: the shipped tiny GPT with --set overrides.
#pragma once

#include <string>
#include <vector>

#include "shared/scenario.h"

namespace tandem::testing {

inline std::string scenario_path(const std::string& name) {
  return std::string(TANDEM_SOURCE_DIR) + "/scenarios/" + name;
}

inline Scenario tiny(std::vector<std::string> sets) {
  return load_scenario(scenario_path("tiny-gpt.textproto"), sets);
}

}  // namespace tandem::testing
