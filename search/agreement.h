// How well the analytical estimate agrees with the simulator on the simulated points of a search,
// and which of them are Pareto-optimal in throughput against peak memory (the HTML report).
#pragma once

#include <cstddef>
#include <vector>

#include "search/search_run.h"

namespace tandem::search {

struct Agreement {
  size_t points = 0;  // the simulated points (status ok)
  double median_error = 0;  // median of |estimate / simulated - 1| (the mean of the two middle ones for an even count)
  double worst_error = 0;   // its largest
  // Kendall's tau-a of the two orders: (concordant - discordant pairs) / (n (n - 1) / 2), a pair
  // tied in either time counting as neither; 0 with fewer than two points.
  double kendall_tau = 0;
};
Agreement agreement(const SearchResult& r);

// For each of r.best: simulated (status ok) and not dominated by another simulated point, i.e. no
// other point has tokens/s >= and peak memory <= with one of them strict.
std::vector<bool> pareto_front(const SearchResult& r);

}  // namespace tandem::search
