#include "search/agreement.h"

#include <algorithm>
#include <cmath>

namespace tandem::search {

namespace {

bool ok(const RankedPoint& p) { return p.simulated.status == sweep::PointStatus::kOk; }

}  // namespace

Agreement agreement(const SearchResult& r) {
  std::vector<double> estimated, simulated, errors;
  for (const RankedPoint& p : r.best)
    if (ok(p)) {
      estimated.push_back(p.estimate.iteration_s);
      simulated.push_back(p.simulated.iteration_time_s);
      errors.push_back(std::fabs(p.estimate.iteration_s / p.simulated.iteration_time_s - 1));
    }
  Agreement a;
  a.points = errors.size();
  if (errors.empty()) return a;
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  a.median_error = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  a.worst_error = errors.back();
  if (n < 2) return a;
  double score = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const double s = (estimated[i] - estimated[j]) * (simulated[i] - simulated[j]);
      score += s > 0 ? 1 : s < 0 ? -1 : 0;
    }
  a.kendall_tau = score / (double(n) * double(n - 1) / 2);
  return a;
}

std::vector<bool> pareto_front(const SearchResult& r) {
  std::vector<bool> front(r.best.size(), false);
  for (size_t i = 0; i < r.best.size(); ++i) {
    if (!ok(r.best[i])) continue;
    const sweep::PointResult& a = r.best[i].simulated;
    bool dominated = false;
    for (size_t j = 0; j < r.best.size() && !dominated; ++j) {
      if (j == i || !ok(r.best[j])) continue;
      const sweep::PointResult& b = r.best[j].simulated;
      dominated = b.tokens_per_s >= a.tokens_per_s && b.peak_memory_bytes <= a.peak_memory_bytes &&
                  (b.tokens_per_s > a.tokens_per_s || b.peak_memory_bytes < a.peak_memory_bytes);
    }
    front[i] = !dominated;
  }
  return front;
}

}  // namespace tandem::search
