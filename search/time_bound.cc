#include "search/time_bound.h"

namespace tandem::search {

double iteration_lower_bound_s(const Scenario& point, const LayerCosts& layer) {
  const StrategySpec& s = point.strategy;
  return double(s.micro_batches()) * double(point.model.layers) / double(s.pp) * layer.compute_stream_s;
}

}  // namespace tandem::search
