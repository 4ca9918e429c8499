#include "exec/step_origin.h"

#include <algorithm>

namespace tandem::exec {

std::vector<double> origin_shifts(const std::vector<double>& origins) {
  if (origins.empty()) return {};
  const double earliest = *std::min_element(origins.begin(), origins.end());
  std::vector<double> out;
  out.reserve(origins.size());
  for (double o : origins) out.push_back(o - earliest);
  return out;
}

}  // namespace tandem::exec
