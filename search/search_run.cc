#include "search/search_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>

#include "search/layer_probe.h"
#include "search/point_check.h"
#include "shared/error.h"
#include "shared/number_format.h"
#include "shared/plan_summary.h"
#include "sim/sweep/sweep_runner.h"

namespace tandem::search {

namespace {

struct Valid {
  Candidate candidate;
  Estimate estimate;
  uint64_t order = 0;  // enumeration order: ties keep it
};

std::string join_sets(const std::vector<std::string>& sets) {
  std::string s;
  for (const std::string& a : sets) s += (s.empty() ? "" : " ") + a;
  return s;
}

// What the search minimizes: the iteration time, or with --vary-batch the time per sample.
double score(const Candidate& c, const Estimate& e, bool vary_batch) {
  return vary_batch && c.global_batch > 0 ? e.iteration_s / c.global_batch : e.iteration_s;
}

bool simulated_before(const RankedPoint& a, const RankedPoint& b, bool vary_batch) {
  const bool ok_a = a.simulated.status == sweep::PointStatus::kOk, ok_b = b.simulated.status == sweep::PointStatus::kOk;
  if (ok_a != ok_b) return ok_a;
  if (ok_a && vary_batch && a.simulated.tokens_per_s != b.simulated.tokens_per_s)
    return a.simulated.tokens_per_s > b.simulated.tokens_per_s;
  if (ok_a && !vary_batch && a.simulated.iteration_time_s != b.simulated.iteration_time_s)
    return a.simulated.iteration_time_s < b.simulated.iteration_time_s;
  return score(a.candidate, a.estimate, vary_batch) < score(b.candidate, b.estimate, vary_batch);
}

}  // namespace

SearchResult run_search(const std::string& scenario_path, const std::vector<std::string>& sets,
                        const SearchOptions& options) {
  if (options.top < 1) throw Error("--top: expected a positive number of points, got " + std::to_string(options.top));
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  SpaceShape shape;
  fix_keys(shape, sets);
  if (options.vary_batch && shape.fixed.count("strategy.global_batch"))
    throw Error("--vary-batch searches strategy.global_batch, which --set fixes; drop one of them", ErrorKind::kBadInput);
  shape.vary_batch = options.vary_batch;
  PointChecker checker(scenario_path, sets, options.gpus);
  // The scenario's own strategy need not be valid on these GPUs: the space replaces it.
  shape.gpus = checker.gpus();
  shape.layers = checker.layers();
  shape.global_batch = checker.global_batch();

  SearchResult r;
  r.scenario_path = scenario_path;
  r.sets = checker.sets();
  r.gpus = shape.gpus;
  r.vary_batch = options.vary_batch;

  std::optional<LayerProbes> probes;  // on the cluster of the first valid point (every point's)
  std::vector<Valid> valid;
  Scenario point;
  std::string message, last_message;
  RuleCount* last_rule = nullptr;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++r.points;
    const std::vector<std::string> point_sets = candidate_sets(c);
    bool ok = checker.check(point_sets, &point, &message);
    if (ok) {
      try {
        if (!probes) {
          probes.emplace(point.cluster);
          r.scenario_name = point.name.empty() ? point.model.name : point.name;
          r.hbm_bytes = point.cluster.hbm_bytes();
        }
        valid.push_back({c, estimate(point, probes->costs(point), probes->comm()), r.points});
      } catch (const Error& e) {  // a generator that refuses the point (bad input)
        if (e.kind() != ErrorKind::kBadInput) throw;
        message = e.what();
        ok = false;
      }
    }
    if (!ok) {
      // Consecutive points often break the same rule with the same values: one rule_of for them.
      if (message != last_message) last_rule = &r.invalid[rule_of(message)], last_message = message;
      if (last_rule->count++ == 0) last_rule->example = message;
    }
  });
  r.valid = valid.size();
  r.probes = probes ? probes->probes() : 0;
  r.estimate_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.estimate_cpu_s = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  if (valid.empty()) {
    std::string rule;
    uint64_t most = 0;
    for (const auto& [k, v] : r.invalid)
      if (v.count > most) most = v.count, rule = k;
    throw Error("tandem search: no valid strategy for " + std::to_string(r.gpus) + " GPUs: the loader refuses all " +
                    std::to_string(r.points) + " points of the space; the rule refusing the most (" +
                    std::to_string(most) + " points): " + rule + "; e.g. " + r.invalid[rule].example,
                ErrorKind::kBadInput);
  }

  const bool vary = options.vary_batch;
  std::sort(valid.begin(), valid.end(), [vary](const Valid& a, const Valid& b) {
    const double sa = score(a.candidate, a.estimate, vary), sb = score(b.candidate, b.estimate, vary);
    return sa != sb ? sa < sb : a.order < b.order;
  });
  int64_t smallest_peak = -1;
  std::string smallest_sets;
  for (size_t i = 0; i < valid.size(); ++i) {
    if (r.best.size() == size_t(options.top)) {
      r.pruned[kPrunedByEstimate] = valid.size() - i;
      break;
    }
    RankedPoint p;
    p.candidate = valid[i].candidate;
    p.sets = candidate_sets(p.candidate);
    p.estimate = valid[i].estimate;
    if (!checker.check(p.sets, &point, &message)) throw Error("search: internal: a valid point no longer loads: " + message, ErrorKind::kInternal);
    const PlanSummary plan = summarize(Schedule(std::move(point)));
    ++r.memory_planned;
    p.planned_peak_bytes = plan.peak_memory_bytes;
    if (smallest_peak < 0 || plan.peak_memory_bytes < smallest_peak) {
      smallest_peak = plan.peak_memory_bytes;
      smallest_sets = join_sets(p.sets);
    }
    if (!plan.fits) {
      ++r.out_of_memory;
      continue;
    }
    auto tie = std::find_if(r.best.begin(), r.best.end(), [&](const RankedPoint& b) {
      return score(b.candidate, b.estimate, vary) == score(p.candidate, p.estimate, vary) &&
             b.planned_peak_bytes == p.planned_peak_bytes;
    });
    if (tie != r.best.end()) {
      ++tie->ties;
      ++r.pruned[kPrunedAsTie];
      continue;
    }
    r.best.push_back(std::move(p));
  }
  if (r.best.empty())
    throw Error("tandem search: the model fits nowhere on " + std::to_string(r.gpus) + " GPUs: the smallest planned peak of the " +
                    std::to_string(r.valid) + " valid strategies is " + format_gib(smallest_peak) + " per GPU (" + smallest_sets +
                    "), over the " + format_gib(r.hbm_bytes) + " of HBM",
                ErrorKind::kBadInput);

  if (options.simulate) {
    std::vector<std::vector<std::string>> runs;
    for (const RankedPoint& p : r.best) {
      runs.push_back(r.sets);
      runs.back().insert(runs.back().end(), p.sets.begin(), p.sets.end());
    }
    sweep::RunOptions ro;
    ro.jobs = options.jobs;
    ro.limit = options.limit;
    ro.sim = options.sim;
    ro.on_progress = options.on_progress;
    std::vector<sweep::PointResult> results = sweep::run_points(scenario_path, runs, ro);
    for (size_t i = 0; i < r.best.size(); ++i) r.best[i].simulated = std::move(results[i]);
    std::stable_sort(r.best.begin(), r.best.end(),
                     [vary](const RankedPoint& a, const RankedPoint& b) { return simulated_before(a, b, vary); });
  }
  return r;
}

}  // namespace tandem::search
