// The scenario loader's last step, private to its files: turning the merged protobuf into the
// specs of shared/scenario.h, checking every rule with the origin of the field at fault
// ("FILE:LINE: part.field: rule", or "--set part.field=value (over FILE): part.field: rule").
// The rules are in four files: scenario_resolver.cc (the model, and the checks every part uses),
// cluster_rules.cc, strategy_rules.cc and size_rules.cc; the bounds in shared/scenario_limits.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "scenario.pb.h"
#include "shared/scenario.h"
#include "shared/scenario_limits.h"
#include "shared/scenario_spellings.h"
#include "shared/scenario_text.h"

namespace tandem {

class Resolver {
 public:
  Resolver(const proto::Scenario& s, const Origins& origins) : s_(s), o_(origins) {}
  Scenario run() const;

 private:
  ModelSpec model() const;
  ClusterSpec cluster() const;
  StrategySpec strategy(const ModelSpec& model, const ClusterSpec& cluster) const;
  // software_rules.cc; checks the overlaps against the resolved strategy.
  // Deprecated spellings it reads are said in `notes`.
  SoftwareSpec software(const StrategySpec& strategy, std::vector<std::string>& notes) const;
  // software_rules.cc: optimizer_state_dtype and master_params against the dtype, the separate
  // master copy and offload.
  void optimizer_state_rules(const SoftwareSpec& spec, const StrategySpec& strategy) const;

  [[noreturn]] void fail(const std::string& path, const std::string& rule) const;
  // " (FILE:LINE)" for a field the message mentions besides the one at fault.
  std::string see(const std::string& path) const { return " (" + o_.at(path) + ")"; }

  // The value spelled `value` (case aside) among `table`'s.
  template <class E>
  E choice(const std::string& path, const std::string& value, const Spelling<E>* table, size_t n) const;
  template <class E, size_t N>
  E choice(const std::string& path, const std::string& value, const Spelling<E> (&table)[N]) const {
    return choice(path, value, table, N);
  }

  // A required count in [1, max].
  int required_positive(const std::string& path, bool has, int value, const std::string& what, int max) const;
  void at_least(const std::string& path, int64_t value, int64_t low) const;
  void at_most(const std::string& path, int64_t value, int64_t high) const;
  // A figure of the hardware: finite, positive (or >= 0), at most `max` (`bound` says it in words).
  void positive_figure(const std::string& path, double value, double max, const std::string& bound) const;
  void non_negative(const std::string& path, double value, double max, const std::string& bound) const;
  void finite_at_most(const std::string& path, double value, double max, const std::string& bound) const;
  // The product of `factors` in 64-bit arithmetic, refused at `path` when it overflows; `what`
  // names the product and its formula.
  int64_t product(const std::string& path, const std::string& what, std::initializer_list<int64_t> factors) const;
  // The sizes the model and strategy imply (size_rules.cc): every one must fit in int64.
  void check_sizes(const ModelSpec& model, const StrategySpec& strategy) const;
  // Divisibility of a model dimension by a tensor-parallel split.
  void split(const std::string& path, const std::string& by, int64_t parts, const std::string& field, int64_t value,
             const std::string& why) const;

  const proto::Scenario& s_;
  const Origins& o_;
};

bool same_spelling(const std::string& a, const char* b);

template <class E>
E Resolver::choice(const std::string& path, const std::string& value, const Spelling<E>* table, size_t n) const {
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    if (same_spelling(value, table[i].name)) return table[i].value;
    names.push_back(table[i].name);
  }
  fail(path, "unknown value \"" + value + "\"; expected one of: " + join(names, ", "));
}

}  // namespace tandem
