#include "search/grad_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tandem::search {

std::vector<StageBucket> stage_buckets(const Scenario& sc, const LayerCosts& c, int stage, double layer_backward_s) {
  const StrategySpec& s = sc.strategy;
  const int p = s.pp, v = s.virtual_stages;
  const int per_chunk = sc.model.layers / (p * v);
  const bool tied = sc.model.tied_embeddings;
  // The stage's units in forward order: elements, chunk, tied copy, backward time.
  struct Unit {
    double elements;
    int chunk;
    bool tied_copy;
    double backward_s;
  };
  std::vector<Unit> units;
  for (int ch = 0; ch < v; ++ch) {
    const int vs = ch * p + stage;
    if (vs == 0) units.push_back({double(c.embedding_params), ch, tied && p > 1, 0.0});
    for (int l = 0; l < per_chunk; ++l) units.push_back({double(c.layer_params), ch, false, layer_backward_s});
    if (vs == p * v - 1)
      units.push_back({double(c.other_params) + (tied && p > 1 ? double(c.embedding_params) : 0.0), ch, tied && p > 1, 0.0});
  }
  const double limit_elements = std::max<double>(1, double(int64_t(s.bucket_mb * 1048576.0) / dtype_bytes(s.dtype)));
  const bool every = sc.software.bucket_every_stage || s.zero_stage >= 2;
  auto limit = [&](int chunk) {
    return every || (stage == 0 && chunk == 0) ? limit_elements : std::numeric_limits<double>::infinity();
  };
  const double group = double(s.dp) * s.sp;
  // The backward of the units before unit i in forward order: they run after it in the backward.
  std::vector<double> before(units.size() + 1, 0.0);
  for (size_t i = 0; i < units.size(); ++i) before[i + 1] = before[i] + units[i].backward_s;
  std::vector<StageBucket> out;
  StageBucket open;
  int open_chunk = -1;
  bool open_empty = true;
  auto close = [&] {
    if (open_empty) return;
    open.elements = std::ceil(open.elements / group) * group;
    out.push_back(open);
    open = StageBucket{};
    open_empty = true;
  };
  for (int i = int(units.size()) - 1; i >= 0; --i) {
    const Unit& u = units[size_t(i)];
    if (!open_empty && (open_chunk != u.chunk || u.tied_copy)) close();
    if (open_empty) open_chunk = u.chunk;
    open_empty = false;
    open.deferred = open.deferred || u.tied_copy;
    open.elements += u.elements;
    open.ready_before_end_s = before[size_t(i)];  // its last unit in the backward so far
    if (open.elements >= limit(u.chunk) || u.tied_copy) close();
  }
  close();
  return out;
}

bool reductions_wait_for_the_backward(const Scenario& sc) {
  const StrategySpec& s = sc.strategy;
  return !sc.software.grad_reduce_overlap && s.zero_stage < 2;
}

double exposed_after_backward(const Scenario& sc, const std::vector<StageBucket>& buckets,
                              const std::function<double(const StageBucket&)>& reduce_s) {
  double end = -std::numeric_limits<double>::infinity();  // the stream's, the backward's end at 0
  const bool after = reductions_wait_for_the_backward(sc);
  auto run = [&](const StageBucket& b) {
    end = std::max(end, after || b.deferred ? 0.0 : -b.ready_before_end_s) + reduce_s(b);
  };
  const bool deferred_last = sc.software.grad_reduce_overlap;
  for (const StageBucket& b : buckets)
    if (!(deferred_last && b.deferred)) run(b);
  if (deferred_last)
    for (const StageBucket& b : buckets)
      if (b.deferred) run(b);
  return std::max(0.0, end);
}

}  // namespace tandem::search
