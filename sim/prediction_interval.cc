#include "sim/prediction_interval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "shared/error.h"
#include "sim/tsv_fields.h"

namespace tandem::sim {

ResidualTable ResidualTable::parse(const std::string& text, const std::string& origin) {
  ResidualTable t;
  std::array<bool, kComponentCount> seen{};
  std::istringstream in(text);
  std::string line;
  bool header = true;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string at = origin + ":" + std::to_string(n);
    if (line.empty()) continue;
    if (line[0] == '#') {
      t.header.push_back(line);
      continue;
    }
    const std::vector<std::string> f = split_tabs(line);
    if (header) {
      if (f.size() != 7 || f[0] != "component")
        throw Error(at + ": the header must be component, group, rows, q10, q50, q90, source (tab-separated)");
      header = false;
      continue;
    }
    if (f.size() != 7) throw Error(at + ": " + std::to_string(f.size()) + " fields, 7 expected (tab-separated)");
    Component c;
    if (!component_from_name(f[0].c_str(), c)) {
      std::string names;
      for (int k = 0; k < kComponentCount; ++k) names += std::string(k ? ", " : "") + component_name(Component(k));
      throw Error(at + ": field component '" + f[0] + "' is none of " + names);
    }
    if (seen[static_cast<int>(c)]) throw Error(at + ": field component '" + f[0] + "' appears twice");
    seen[static_cast<int>(c)] = true;
    ComponentResidual& r = t.by_component[static_cast<int>(c)];
    if (f[1].empty()) throw Error(at + ": field group is empty");
    r.group = f[1];
    r.rows = int(parse_positive_field(f[2], at, "rows"));
    const QuantileFields q = parse_quantile_fields(f, 3, at);
    r.q10 = q.q10, r.q50 = q.q50, r.q90 = q.q90;
    r.source = f[6];
  }
  for (int i = 0; i < kComponentCount; ++i)
    if (!seen[i]) throw Error(origin + ": no line for component '" + component_name(Component(i)) + "'");
  return t;
}

const ResidualTable& ResidualTable::builtin() {
  static const ResidualTable table = parse_compiled_in(&ResidualTable::parse, component_residuals_tsv(), "sim/data/component_residuals.tsv (compiled in)");
  return table;
}

Interval prediction_interval(double t_s, const ComponentTimes& busy_s, const ResidualTable& table) {
  double total = 0;
  for (double b : busy_s) total += std::max(0.0, b);
  if (!(total > 0) || !(t_s > 0)) return {t_s, t_s};
  double centre = 0;
  std::map<std::string, std::pair<double, double>> groups;  // group: (low deviation, high deviation)
  for (int i = 0; i < kComponentCount; ++i) {
    const double s = std::max(0.0, busy_s[i]) / total;
    if (s == 0) continue;
    const ComponentResidual& r = table.by_component[i];
    centre += s * r.q50;
    auto& g = groups[r.group];
    g.first += s * (r.q50 - r.q10);
    g.second += s * (r.q90 - r.q50);
  }
  double lo2 = 0, hi2 = 0;
  for (const auto& [name, d] : groups) {
    lo2 += d.first * d.first;
    hi2 += d.second * d.second;
  }
  Interval iv{t_s * (centre - std::sqrt(lo2)), t_s * (centre + std::sqrt(hi2))};
  iv.low_s = std::max(0.0, std::min(iv.low_s, t_s));
  iv.high_s = std::max(iv.high_s, t_s);
  return iv;
}

}  // namespace tandem::sim
