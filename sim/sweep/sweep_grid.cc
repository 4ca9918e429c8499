#include "sim/sweep/sweep_grid.h"

#include <set>

#include "shared/error.h"

namespace tandem::sweep {

VaryAxis parse_vary(const std::string& argument) {
  const std::string where = "--vary " + argument;
  const size_t eq = argument.find('=');
  if (eq == std::string::npos)
    throw Error(where + ": expected key=v1,v2,..., e.g. --vary strategy.tp=1,2,4");
  VaryAxis axis;
  axis.key = argument.substr(0, eq);
  if (axis.key.empty()) throw Error(where + ": the key before '=' is empty; expected e.g. strategy.tp");
  const size_t dot = axis.key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == axis.key.size() ||
      axis.key.find_first_of(" \t,") != std::string::npos)
    throw Error(where + ": \"" + axis.key + "\" is not a scenario field; expected part.field, e.g. cluster.gpus");
  const std::string list = argument.substr(eq + 1);
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string value = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (value.empty())
      throw Error(where + ": empty value in the list" + (list.empty() ? "" : " \"" + list + "\"") +
                  "; expected comma-separated values, e.g. " + axis.key + "=1,2,4");
    if (!seen.insert(value).second) throw Error(where + ": value \"" + value + "\" is listed twice");
    axis.values.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return axis;
}

SweepGrid::SweepGrid(std::vector<VaryAxis> axes) : axes_(std::move(axes)) {
  if (axes_.empty()) throw Error("--vary: at least one is required, e.g. --vary cluster.gpus=64,128,256");
  std::set<std::string> keys;
  for (const VaryAxis& a : axes_) {
    if (!keys.insert(a.key).second) throw Error("--vary " + a.key + "=...: the key is varied twice; list all its values in one --vary");
    if (a.values.empty()) throw Error("--vary " + a.key + "=: no values");
    size_ *= a.values.size();
  }
}

std::vector<size_t> SweepGrid::coordinates(size_t i) const {
  std::vector<size_t> c(axes_.size());
  for (size_t k = axes_.size(); k-- > 0;) {
    c[k] = i % axes_[k].values.size();
    i /= axes_[k].values.size();
  }
  return c;
}

std::vector<std::string> SweepGrid::values(size_t i) const {
  const std::vector<size_t> c = coordinates(i);
  std::vector<std::string> v;
  for (size_t k = 0; k < axes_.size(); ++k) v.push_back(axes_[k].values[c[k]]);
  return v;
}

std::vector<std::string> SweepGrid::assignments(size_t i) const {
  const std::vector<std::string> v = values(i);
  std::vector<std::string> a;
  for (size_t k = 0; k < axes_.size(); ++k) a.push_back(axes_[k].key + "=" + v[k]);
  return a;
}

int SweepGrid::gpus_axis() const {
  for (size_t k = 0; k < axes_.size(); ++k)
    if (axes_[k].key == "cluster.gpus") return int(k);
  return -1;
}

}  // namespace tandem::sweep
