// Reads a scenario: protobuf text -> --set overrides -> Hugging Face model config -> cluster preset
// -> resolved, checked specs (scenario_text.cc, scenario_overrides.cc, hf_config.cc,
// scenario_presets.cc, then the resolver:
// scenario_resolver.cc, cluster_rules.cc, strategy_rules.cc).
//
// Every error names where the offending value came from, so the user can fix it:
//   gpt3.textproto:14: strategy.tp: tp = 6 must divide model.heads = 96 (gpt3.textproto:5)
//   --set strategy.tp=6 (over gpt3.textproto): strategy.tp: ...
//   scenarios/clusters/dgx-h100.textproto:20 (preset of gpt3.textproto): cluster.hbm_gib: ...
// A value that was never written (a default, or derived like dp) is blamed on the line of its
// enclosing block (`strategy {`), or on the file alone when there is no block.
#include <string>
#include <vector>

#include "shared/error.h"
#include "shared/hf_config.h"
#include "shared/input_file.h"
#include "shared/scenario.h"
#include "shared/scenario_resolver.h"
#include "shared/scenario_text.h"

namespace tandem {

Scenario parse_scenario(const std::string& text, const std::string& origin,
                        const std::vector<std::string>& overrides) {
  proto::Scenario scenario;
  Origins origins;
  origins.file = origin;
  parse_text(text, origin, &scenario, "", "", nullptr, "", &origins);
  for (const std::string& assignment : overrides) apply_override(scenario, assignment, origins);
  merge_hf_config(scenario, origins);
  merge_preset(scenario, origins);
  return Resolver(scenario, origins).run();
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_scenario(read_input_file(path, "scenario", kMaxScenarioBytes), path, overrides);
}

}  // namespace tandem
