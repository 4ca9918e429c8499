// Fuzz targets of the scenario loader with --set overrides. The input is a scenario text whose
// lines starting with "--set " are taken out and applied, in order, as overrides
// ("--set strategy.tp=8" -> "strategy.tp=8"; at most 8). tandem::Error is the expected answer to
// bad input (fuzz_refusal.h: not an internal error); anything else (another exception, a crash, a
// sanitizer report, a timeout) is a finding.
//  - fuzz_scenario: load_scenario only (thousands of executions a second).
//  - fuzz_plan (TANDEM_FUZZ_PLAN): then, when the scenario is small enough to generate in a few
//    milliseconds (limits below), what `tandem plan` does: the Schedule, its summary, the text
//    and JSON reports; and for the smallest, validate_schedule: a scenario the loader accepts
//    must give a valid schedule.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_input_file.h"
#include "fuzz_refusal.h"
#include "shared/error.h"
#include "shared/scenario.h"
#ifdef TANDEM_FUZZ_PLAN
#include "shared/plan_report.h"
#include "shared/plan_summary.h"
#include "shared/schedule.h"
#include "shared/schedule_validator.h"
#endif

namespace {

constexpr size_t kMaxOverrides = 8;

#ifdef TANDEM_FUZZ_PLAN
// A rank program holds about (layers x micro-batches) layer passes, each some tens of tasks; the
// summary generates one program per rank class (one pipeline's worth with pp > 1). These limits
// keep an execution under ~20 ms with the sanitizers.
bool small_enough_to_plan(const tandem::Scenario& s) {
  const tandem::StrategySpec& st = s.strategy;
  const int64_t world = int64_t(st.dp) * st.tp * st.pp * st.sp;
  return world <= 64 && st.pp <= 8 && st.virtual_stages <= 4 && st.tp_depth <= 4 &&
         int64_t(s.model.layers) * st.micro_batches() <= 16;
}

// Validation generates every rank's program and runs them all: only the smallest.
bool small_enough_to_validate(const tandem::Scenario& s) {
  const tandem::StrategySpec& st = s.strategy;
  return st.world_size() <= 4 && int64_t(s.model.layers) * st.micro_batches() <= 8;
}

void plan(tandem::Scenario scenario) {
  if (!small_enough_to_plan(scenario)) return;
  const bool validate = small_enough_to_validate(scenario);
  tandem::Schedule schedule(std::move(scenario));
  const tandem::PlanSummary summary = tandem::summarize(schedule);
  std::ostringstream report;
  tandem::print_plan_text(report, schedule, summary);
  tandem::print_plan_json(report, schedule, summary);
  if (!validate) return;
  const std::vector<std::string> problems = tandem::validate_schedule(schedule, 5);
  if (problems.empty()) return;
  std::fprintf(stderr, "fuzz_plan: an accepted scenario gives an invalid schedule:\n");
  for (const std::string& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
  std::abort();
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text;
  std::vector<std::string> overrides;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("--set ", 0) == 0 && overrides.size() < kMaxOverrides) overrides.push_back(line.substr(6));
    else text += line + "\n";
  }
  const std::string path = tandem::fuzz::fuzz_input_file(reinterpret_cast<const uint8_t*>(text.data()),
                                                         text.size(), "scenario.textproto");
  try {
    tandem::Scenario scenario = tandem::load_scenario(path, overrides);
#ifdef TANDEM_FUZZ_PLAN
    plan(std::move(scenario));
#endif
  } catch (const tandem::Error& e) {
    tandem::fuzz::expect_refusal(e);
  }
  return 0;
}
