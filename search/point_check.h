// Checks a point of the search space with the scenario loader's own rules, the way
// `tandem sim --set` would load it: the scenario file is read once, the user's --set list applied
// and the presets merged (shared/scenario_loader.cc's steps); each point then applies its own
// assignments (shared/scenario_overrides.cc, apply_override) and runs the resolver.
#pragma once

#include <string>
#include <vector>

#include "scenario.pb.h"
#include "shared/scenario.h"
#include "shared/scenario_text.h"

namespace tandem::search {

class PointChecker {
 public:
  // Throws Error (bad input) as load_scenario does: an unreadable file, a --set the loader refuses.
  // gpus > 0 sets cluster.gpus (--gpus), after the user's --set list.
  PointChecker(const std::string& scenario_path, const std::vector<std::string>& sets, int gpus);

  // The cluster's GPU count, the model's layers and the global batch before any point applies.
  int gpus() const { return base_.cluster().gpus(); }
  int layers() const { return base_.model().layers(); }
  int global_batch() const { return base_.strategy().global_batch(); }
  // The user's --set list with cluster.gpus=N appended when --gpus was given.
  const std::vector<std::string>& sets() const { return sets_; }
  // The scenario with the user's --set list applied and the presets merged, before any point.
  const proto::Scenario& base() const { return base_; }

  // Resolves the point. False, with the loader's message, when a rule refuses it.
  bool check(const std::vector<std::string>& point_sets, Scenario* out, std::string* message);

 private:
  proto::Scenario base_, work_;
  Origins base_origins_, origins_;
  std::vector<std::string> sets_;
  std::vector<std::string> applied_;  // the assignments in place in work_
  std::string path_;
};

// The rule a loader message states, without where the values came from and with its values as N, so that points refused by the same rule count together:
//   "--set strategy.tp=8 (over s.textproto): strategy.tp: tp = 8 must divide model.heads = 4 (s.textproto:13)"
//   -> "strategy.tp: tp = N must divide model.heads = N"
std::string rule_of(const std::string& message);

}  // namespace tandem::search
