#include "search/search_run.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <deque>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "search/layer_probe.h"
#include "search/layout_rules.h"
#include "search/memory_bound.h"
#include "search/overlapped_walk.h"
#include "search/point_check.h"
#include "search/split_rules.h"
#include "search/walk_point.h"
#include "search/rank_messages.h"
#include "shared/error.h"
#include "shared/number_format.h"
#include "shared/plan_summary.h"
#include "sim/forked_call.h"
#include "sim/sweep/sweep_runner.h"

namespace tandem::search {

namespace {

// One rank's share of the space: its counts and its valid points.
struct RankPart {
  uint64_t points = 0, valid = 0;
  std::map<std::string, RuleCount> invalid;
  std::map<std::string, uint64_t> example_order;  // by rule: the enumeration order of its example
  std::vector<LayerProbes::Key> probe_keys;
  bool has_cluster = false;  // a valid point was loaded (the next two are set)
  std::string scenario_name;
  int64_t hbm_bytes = 0;
  std::vector<Valid> valid_points;
  double wall_s = 0, cpu_s = 0;
  // An error this rank met (sent to rank 0, which throws it).
  int error_kind = 0;
  std::string error;
};

std::string join_sets(const std::vector<std::string>& sets) {
  std::string s;
  for (const std::string& a : sets) s += (s.empty() ? "" : " ") + a;
  return s;
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

// The points of `shape` dealt to this rank (the k-th pipeline group of the enumeration, from 1,
// goes to rank (k-1) mod size): checked and estimated.
RankPart rank_part(const SpaceShape& shape, PointChecker& checker, int rank, int size, bool shortcuts,
                   bool closed_form) {
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  RankPart part;
  std::optional<LayerProbes> probes;  // on the cluster of the first valid point (every point's)
  std::vector<Valid> valid;
  Scenario point;
  std::string message, last_message;
  // The rule of the last refused point and a message of it (rule_of(last_message) is last_rule): a
  // shortcut keeps the message when the rule is the same (no copy a point), so a loaded point with
  // another message of that rule only asks rule_of again.
  RuleCount* last_rule = nullptr;
  uint64_t order = 0;
  using PipelineGroup = std::tuple<int, int, int, int, int, int, int, int, int, int>;
  PipelineGroup group;
  uint64_t group_index = 0;
  // The layout rules, once per layout (search/layout_rules.h): the last layout seen, whether a
  // layout rule refuses it, and the rule and message of the first of its points the loader refused.
  LayoutKey layout;
  bool have_layout = false, layout_refused = false;
  RuleCount* layout_rule = nullptr;
  std::string layout_message;
  std::map<std::pair<std::tuple<int, int, int, int>, std::pair<int, int>>, std::pair<RuleCount*, std::string>> refused;
  // The software switches (kSoftwareSwitches), once per setting of the other axes. Only the
  // resolver's software part reads them (shared/software_rules.cc; the model, cluster and strategy
  // parts and the size checks read no software field), and with every switch off its two rules on
  // them (overlap_param_gather needs ZeRO 1 or 2, tp_comm_overlap megatron sp and tp > 1) pass. So
  // when the point with every switch off (the base) is refused with message X, X is either a rule
  // before those two, which every switch setting then meets first, or a size check after them
  // (shared/size_rules.cc), which a setting whose switch rule fails does not reach. The point with
  // every switch on fails every switch rule that any setting can fail: when it is refused with X
  // too, either X comes first or no switch rule fails at all, and every setting is refused with X.
  // Otherwise each setting goes to the loader.
  // The split rules (search/split_rules.h): per split of the current layout, whether a split rule
  // refuses it and the rule and message of the first of its points the loader refused.
  struct SplitVerdict {
    bool refused = false;
    RuleCount* rule = nullptr;
    std::string message;
  };
  std::map<SplitKey, SplitVerdict> splits;
  // Gemini's rules (search/split_rules.h, refused_by_gemini): per (split, offload, recompute and,
  // where the pipeline rule does not apply, zero_stage) of the current layout, the rule and message
  // of the first of its points the loader refused.
  std::map<GeminiKey, SplitVerdict> gemini;
  Candidate switch_base;
  bool have_switch_base = false, switch_base_refuses_all = false;
  std::string switch_base_message;
  Scenario scratch;
  std::string scratch_message;
  auto refused_with_every_switch = [&](const Candidate& c) {
    Candidate base = c, on = c;
    bool searched = false;
    for (int i = 0; i < kSwitchCount; ++i)
      if (c.switches[i] >= 0) base.switches[i] = 0, on.switches[i] = 1, searched = true;
    if (!searched) return false;
    if (!have_switch_base || candidate_sets(base) != candidate_sets(switch_base)) {
      switch_base = base, have_switch_base = true, switch_base_refuses_all = false;
      if (!checker.check(candidate_sets(base), &scratch, &switch_base_message) &&
          !checker.check(candidate_sets(on), &scratch, &scratch_message))
        switch_base_refuses_all = scratch_message == switch_base_message;
    }
    return switch_base_refuses_all;
  };
  // The layout of the points that follow: a new one clears the split and Gemini verdicts.
  auto enter_layout = [&](const LayoutKey& key) {
    if (have_layout && key == layout) return;
    layout = key, have_layout = true;
    layout_refused = shortcuts && refused_by_layout(key, checker.base());
    splits.clear();
    gemini.clear();
    layout_rule = nullptr;
    if (layout_refused) {
      auto it = refused.find({{key.dp, key.tp, key.pp, key.sp}, {key.tp_mode, key.tp_depth}});
      if (it != refused.end()) layout_rule = it->second.first, layout_message = it->second.second;
    }
  };
  // One point (order: its place in the enumeration, from 1), with the shortcuts above.
  auto visit_point = [&](const Candidate& c) {
    const LayoutKey key = layout_of(c);
    enter_layout(key);
    if (layout_refused && layout_rule && eligible(c, checker.base())) {
      // The loader's verdict on an earlier point of this layout is every eligible point's.
      ++layout_rule->count;
      if (last_rule != layout_rule) last_rule = layout_rule, last_message = layout_message;
      return;
    }
    // The split rules (search/split_rules.h), once per split of this layout.
    SplitVerdict* split = nullptr;
    if (shortcuts) {
      auto [at, fresh] = splits.try_emplace(split_of(c));
      if (fresh) at->second.refused = refused_by_split(c, checker.base());
      split = &at->second;
      if (split->refused && split->rule) {
        // The loader's verdict on an earlier point of this split is every one's.
        ++split->rule->count;
        if (last_rule != split->rule) last_rule = split->rule, last_message = split->message;
        return;
      }
    }
    // Gemini's rules, once per key of this layout.
    SplitVerdict* gem = nullptr;
    if (GeminiKey gkey; shortcuts && refused_by_gemini(c, checker.base(), &gkey)) {
      gem = &gemini[gkey];
      gem->refused = true;
      if (gem->rule) {
        // The loader's verdict on an earlier point of this key is every one's.
        ++gem->rule->count;
        if (last_rule != gem->rule) last_rule = gem->rule, last_message = gem->message;
        return;
      }
    }
    const std::vector<std::string> point_sets = candidate_sets(c);
    bool ok;
    // A point a layout, split or Gemini rule refuses is refused before the software part reads a
    // switch, so its message is every setting's: the switches' shortcut would load two points
    // (every switch off and on) where the loader on this one point gives the verdict that the
    // split's (layout's, Gemini key's) other points then take.
    const bool known_refused = layout_refused || (split && split->refused) || gem;
    if (shortcuts && !known_refused && refused_with_every_switch(c)) {
      ok = false, message = switch_base_message;
    } else {
      ok = checker.check(point_sets, &point, &message);
    }
    if (ok && layout_refused)
      throw Error("search: internal: the layout rules refuse a point the loader accepts: " + join_sets(point_sets),
                  ErrorKind::kInternal);
    if (ok && split && split->refused)
      throw Error("search: internal: the split rules refuse a point the loader accepts: " + join_sets(point_sets),
                  ErrorKind::kInternal);
    if (ok && gem)
      throw Error("search: internal: Gemini's rules refuse a point the loader accepts: " + join_sets(point_sets),
                  ErrorKind::kInternal);
    if (ok) {
      try {
        if (!probes) {
          probes.emplace(point.cluster);
          part.has_cluster = true;
          part.scenario_name = point.name.empty() ? point.model.name : point.name;
          part.hbm_bytes = point.cluster.hbm_bytes();
        }
        valid.push_back({c, estimate(point, probes->costs(point), probes->comm()), order});
      } catch (const Error& e) {  // a generator that refuses the point (bad input)
        if (e.kind() != ErrorKind::kBadInput) throw;
        message = e.what();
        ok = false;
      }
    }
    if (!ok) {
      // Consecutive points often break the same rule with the same values: one rule_of for them.
      if (message != last_message) {
        const std::string rule = rule_of(message);
        last_rule = &part.invalid[rule], last_message = message;
        if (last_rule->count == 0) part.example_order[rule] = order;
      }
      if (last_rule->count++ == 0) last_rule->example = message;
      if (layout_refused && eligible(c, checker.base())) {
        layout_rule = last_rule, layout_message = message;
        refused[{{key.dp, key.tp, key.pp, key.sp}, {key.tp_mode, key.tp_depth}}] = {layout_rule, message};
      }
      if (split && split->refused) split->rule = last_rule, split->message = message;
      if (gem) gem->rule = last_rule, gem->message = message;
    }
  };
  // `points` more points refused by `rule` with `message` (a message of it), counted at once.
  auto count_refused = [&](RuleCount* rule, const std::string& message_of_rule, uint64_t points) {
    rule->count += points;
    if (last_rule != rule) last_rule = rule, last_message = message_of_rule;
  };
  // The points of a group dealt here. A point whose layout or split a rule refuses, and whose
  // verdict an earlier point of the same layout or split (here, in enumeration order) took from the
  // loader, is counted under that verdict without a visit, as visit_point would count it: so
  // each block of switch settings (one row and micro-batch) whose micro-batch has such a verdict
  // is counted as a whole, and once every micro-batch of the group has one, the rest of the group.
  // The example of a rule and its order are set only by a loaded point, which comes before every
  // point counted this way under it (the verdict was taken from it), so every count and example is
  // the one point by point (SearchOptions::closed_form_counts false; the tests compare both).
  std::vector<SplitVerdict*> split_at;  // by micro-batch index
  std::vector<char> eligible_at;
  auto count_group = [&](const PointGroup& grp) {
    const size_t mbs = grp.micro_batches.size();
    const uint64_t settings = grp.switch_settings(), rows = grp.rows();
    enter_layout(layout_of(grp.head));
    eligible_at.assign(mbs, 0);
    bool all_eligible = true;
    for (size_t m = 0; m < mbs; ++m) {
      eligible_at[m] = eligible(grp.point(0, m, 0), checker.base());
      all_eligible = all_eligible && eligible_at[m];
    }
    if (layout_refused && layout_rule && all_eligible) {
      count_refused(layout_rule, layout_message, grp.size());
      order += grp.size();
      return;
    }
    split_at.assign(mbs, nullptr);
    for (size_t m = 0; m < mbs; ++m) {
      const Candidate c = grp.point(0, m, 0);
      auto [at, fresh] = splits.try_emplace(split_of(c));
      if (fresh) at->second.refused = refused_by_split(c, checker.base());
      split_at[m] = &at->second;
    }
    // The verdict that covers every point of micro-batch m from here on, if taken yet.
    auto cover = [&](size_t m) -> std::pair<RuleCount*, const std::string*> {
      if (layout_refused && layout_rule && eligible_at[m]) return {layout_rule, &layout_message};
      if (split_at[m]->refused && split_at[m]->rule) return {split_at[m]->rule, &split_at[m]->message};
      return {nullptr, nullptr};
    };
    for (uint64_t row = 0; row < rows; ++row) {
      bool all_covered = true;
      for (size_t m = 0; m < mbs && all_covered; ++m) all_covered = cover(m).first != nullptr;
      if (all_covered) {
        for (size_t m = 0; m < mbs; ++m) count_refused(cover(m).first, *cover(m).second, (rows - row) * settings);
        order += (rows - row) * mbs * settings;
        return;
      }
      for (size_t m = 0; m < mbs; ++m) {
        if (const auto [rule, rule_message] = cover(m); rule) {
          count_refused(rule, *rule_message, settings);
          order += settings;
          continue;
        }
        for (uint64_t s = 0; s < settings; ++s) {
          ++order;
          visit_point(grp.point(row, m, s));
          // The point took the verdict of its layout or split: the block's other settings have it.
          if (const auto [rule, rule_message] = cover(m); rule && s + 1 < settings) {
            count_refused(rule, *rule_message, settings - s - 1);
            order += settings - s - 1;
            break;
          }
        }
      }
    }
  };
  for_each_group(shape, [&](const PointGroup& grp) {
    // Dealt by pipeline group: the points of one (layout, sp_mode, global batch, schedule, virtual
    // stages) come one after the other and go to one rank, so that its split and switch verdicts
    // are taken once for them (the merge does not depend on the dealing).
    const Candidate& h = grp.head;
    const PipelineGroup g{h.dp, h.tp, h.pp, h.sp, h.tp_mode, h.tp_depth, h.sp_mode, h.global_batch, h.schedule, h.virtual_stages};
    if (group_index == 0 || g != group) group = g, ++group_index;
    if ((group_index - 1) % uint64_t(size) != uint64_t(rank)) {
      order += grp.size();
      return;
    }
    part.points += grp.size();
    if (shortcuts && closed_form) return count_group(grp);
    const uint64_t settings = grp.switch_settings();
    for (uint64_t row = 0; row < grp.rows(); ++row)
      for (size_t m = 0; m < grp.micro_batches.size(); ++m)
        for (uint64_t s = 0; s < settings; ++s) {
          ++order;
          visit_point(grp.point(row, m, s));
        }
  });
  part.valid = valid.size();
  if (probes) part.probe_keys = probes->keys();
  part.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  part.cpu_s = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;

  part.valid_points = std::move(valid);
  return part;
}

std::string to_bytes(const RankPart& p) {
  proto::SearchRankPart m;
  m.set_points(p.points);
  m.set_valid(p.valid);
  for (const auto& [rule, count] : p.invalid) {
    proto::SearchRuleCount* c = m.add_invalid();
    c->set_rule(rule), c->set_count(count.count), c->set_example(count.example);
    c->set_example_order(p.example_order.at(rule));
  }
  for (const LayerProbes::Key& k : p.probe_keys) std::apply([&m](const auto&... v) { (m.add_probe_keys(int(v)), ...); }, k);
  m.set_has_cluster(p.has_cluster);
  m.set_scenario_name(p.scenario_name);
  m.set_hbm_bytes(p.hbm_bytes);
  for (const Valid& q : p.valid_points) {
    proto::SearchValidPoint* v = m.add_valid_points();
    to_proto(q.candidate, v->mutable_candidate());
    to_proto(q.estimate, v->mutable_estimate());
    v->set_order(q.order);
  }
  m.set_wall_s(p.wall_s);
  m.set_cpu_s(p.cpu_s);
  m.mutable_error()->set_kind(p.error_kind);
  m.mutable_error()->set_message(p.error);
  return m.SerializeAsString();
}

RankPart part_of(const std::string& bytes) {
  const auto m = parse_rank_message<proto::SearchRankPart>(bytes, "share of the space");
  RankPart p;
  p.points = m.points();
  p.valid = m.valid();
  for (const proto::SearchRuleCount& c : m.invalid()) {
    RuleCount& r = p.invalid[c.rule()];
    r.count = c.count();
    r.example = c.example();
    p.example_order[c.rule()] = c.example_order();
  }
  constexpr int kKeySize = int(std::tuple_size_v<LayerProbes::Key>);
  if (m.probe_keys_size() % kKeySize != 0)
    throw Error("search: internal: a rank's probe settings are not whole keys", ErrorKind::kInternal);
  for (int at = 0; at < m.probe_keys_size(); at += kKeySize) {
    LayerProbes::Key k;
    int i = at;
    std::apply([&](auto&... v) { ((v = std::remove_reference_t<decltype(v)>(m.probe_keys(i++))), ...); }, k);
    p.probe_keys.push_back(k);
  }
  p.has_cluster = m.has_cluster();
  p.scenario_name = m.scenario_name();
  p.hbm_bytes = m.hbm_bytes();
  p.valid_points.reserve(size_t(m.valid_points_size()));
  for (const proto::SearchValidPoint& v : m.valid_points())
    p.valid_points.push_back({from_proto(v.candidate()), from_proto(v.estimate()), v.order()});
  p.wall_s = m.wall_s();
  p.cpu_s = m.cpu_s();
  p.error_kind = m.error().kind();
  p.error = m.error().message();
  return p;
}

// Rank 0: the ranks' counts as one process's, and every valid point in the one-process order
// (score, then enumeration order).
std::vector<Valid> merge_parts(std::vector<RankPart>& parts, const SearchOptions& options, SearchResult& r) {
  std::set<LayerProbes::Key> keys;
  std::map<std::string, uint64_t> example_order;
  std::vector<Valid> valid;
  for (RankPart& p : parts) {
    if (!p.error.empty()) throw Error(p.error, ErrorKind(p.error_kind));
    r.points += p.points;
    r.valid += p.valid;
    for (const auto& [rule, count] : p.invalid) {
      RuleCount& c = r.invalid[rule];
      auto [at, first] = example_order.emplace(rule, p.example_order.at(rule));
      if (first || p.example_order.at(rule) < at->second) at->second = p.example_order.at(rule), c.example = count.example;
      c.count += count.count;
    }
    keys.insert(p.probe_keys.begin(), p.probe_keys.end());
    if (p.has_cluster && r.scenario_name.empty()) r.scenario_name = p.scenario_name, r.hbm_bytes = p.hbm_bytes;
    if (valid.empty()) valid = std::move(p.valid_points);
    else valid.insert(valid.end(), p.valid_points.begin(), p.valid_points.end());
    r.estimate_wall_s = std::max(r.estimate_wall_s, p.wall_s);
    r.estimate_cpu_s += p.cpu_s;
  }
  r.probes = keys.size();
  if (r.valid == 0) {
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
  return valid;
}

// The lower bound of a valid point's planned peak (search/memory_bound.h): its model states and
// the stored activations of the layer forwards before its first backward.
int64_t bound_point(PointChecker& checker, const Valid& v) {
  Scenario point;
  std::string message;
  if (!checker.check(candidate_sets(v.candidate), &point, &message))
    throw Error("search: internal: a valid point no longer loads: " + message, ErrorKind::kInternal);
  return peak_memory_lower_bound(point, v.estimate.layer_stored_bytes);
}

using PlanBatch = std::function<std::vector<PlanVerdict>(const std::vector<Candidate>&)>;

// Rank 0: the valid points checked for memory in order until K fit, as one process walks them: a
// point whose lower bound (bound) is over HBM is out of memory without a plan; the others are
// planned up to `batch` at a time (plan_batch: the ranks' share, one point each).
void walk(const std::vector<Valid>& valid, const SearchOptions& options, size_t batch,
          const std::function<int64_t(const Valid&)>& bound, const PlanBatch& plan_batch, SearchResult& r) {
  const bool vary = options.vary_batch;
  int64_t smallest_peak = -1;
  size_t smallest_at = 0;
  std::vector<std::pair<int64_t, size_t>> bounded;  // (lower bound, index) of the points not planned
  size_t i = 0;
  while (i < valid.size() && r.best.size() < size_t(options.top)) {
    // The next points up to `batch` planned ones; a point over HBM by its bound needs no plan.
    std::vector<Candidate> next;
    std::vector<int64_t> bounds;
    for (size_t k = i; k < valid.size() && next.size() < batch; ++k) {
      bounds.push_back(bound(valid[k]));
      if (bounds.back() <= r.hbm_bytes) next.push_back(valid[k].candidate);
    }
    const std::vector<PlanVerdict> verdicts = next.empty() ? std::vector<PlanVerdict>{} : plan_batch(next);
    // Points of the batch past the K-th fit are not walked (one process would not plan them).
    for (size_t k = 0, planned = 0; k < bounds.size() && r.best.size() < size_t(options.top); ++k, ++i) {
      ++r.memory_planned;
      if (bounds[k] > r.hbm_bytes) {
        ++r.out_of_memory;
        ++r.out_of_memory_by_bound;
        bounded.push_back({bounds[k], i});
        continue;
      }
      const PlanVerdict& v = verdicts[planned++];
      if (smallest_peak < 0 || v.peak_bytes < smallest_peak || (v.peak_bytes == smallest_peak && i < smallest_at))
        smallest_peak = v.peak_bytes, smallest_at = i;
      if (!v.fits) {
        ++r.out_of_memory;
        continue;
      }
      RankedPoint p;
      p.candidate = valid[i].candidate;
      p.sets = candidate_sets(p.candidate);
      p.estimate = valid[i].estimate;
      p.planned_peak_bytes = v.peak_bytes;
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
  }
  if (i < valid.size()) r.pruned[kPrunedByEstimate] = valid.size() - i;
  if (!r.best.empty()) return;
  // Nothing fits: the message names the smallest planned peak of the walk. A point left unplanned
  // by its bound has a peak >= its bound, so only those with a bound up to the smallest peak so
  // far can hold it (or tie it at an earlier place): they are planned, smallest bound first.
  std::sort(bounded.begin(), bounded.end());
  for (size_t k = 0; k < bounded.size();) {
    if (smallest_peak >= 0 && bounded[k].first > smallest_peak) break;
    std::vector<Candidate> next;
    std::vector<size_t> at;
    for (; k < bounded.size() && next.size() < batch; ++k) {
      if (smallest_peak >= 0 && bounded[k].first > smallest_peak) break;
      next.push_back(valid[bounded[k].second].candidate), at.push_back(bounded[k].second);
    }
    const std::vector<PlanVerdict> verdicts = plan_batch(next);
    for (size_t j = 0; j < verdicts.size(); ++j)
      if (smallest_peak < 0 || verdicts[j].peak_bytes < smallest_peak ||
          (verdicts[j].peak_bytes == smallest_peak && at[j] < smallest_at))
        smallest_peak = verdicts[j].peak_bytes, smallest_at = at[j];
  }
  throw Error("tandem search: the model fits nowhere on " + std::to_string(r.gpus) + " GPUs: the smallest planned peak of the " +
                  std::to_string(r.valid) + " valid strategies is " + format_gib(smallest_peak) + " per GPU (" +
                  join_sets(candidate_sets(valid[smallest_at].candidate)) + "), over the " + format_gib(r.hbm_bytes) + " of HBM",
              ErrorKind::kBadInput);
}

// The planning rounds' messages from rank 0: a batch of points (rank k plans the k-th), or stop.
std::string batch_to_bytes(bool stop, const std::vector<Candidate>& batch) {
  proto::SearchPlanRound m;
  m.set_stop(stop);
  for (const Candidate& c : batch) to_proto(c, m.add_points());
  return m.SerializeAsString();
}

// Ranks other than 0: plan their share of each batch rank 0 sends, until it says stop.
void serve_plans(PointChecker& checker, const SearchRanks& ranks) {
  for (;;) {
    const auto m = parse_rank_message<proto::SearchPlanRound>(ranks.broadcast_from_root(std::string()), "planning round");
    if (m.stop()) return;
    std::vector<Candidate> batch;
    for (const proto::SearchCandidate& c : m.points()) batch.push_back(from_proto(c));
    ranks.gather_to_root(plan_share(checker, batch, ranks.rank));
  }
}

// Rank 0's side of a round: send the batch, plan its own point, gather the others'.
std::vector<PlanVerdict> plan_round(PointChecker& checker, const SearchRanks& ranks, const std::vector<Candidate>& batch) {
  ranks.broadcast_from_root(batch_to_bytes(false, batch));
  const std::vector<std::string> all = ranks.gather_to_root(plan_share(checker, batch, 0));
  std::vector<PlanVerdict> out;
  for (size_t k = 0; k < batch.size(); ++k) {
    const auto m = parse_rank_message<proto::SearchPlanVerdict>(all[k], "plan");
    const std::string& error = m.error().message();
    if (!m.has()) throw Error(error.empty() ? "search: internal: rank " + std::to_string(k) + " planned nothing" : error,
                              error.empty() ? ErrorKind::kInternal : ErrorKind(m.error().kind()));
    out.push_back({m.peak_bytes(), m.fits()});
  }
  return out;
}

// One process: the points of a planning round, the first here and each other in a forked child
// of its own (sim/forked_call.h; the search is single-threaded, and a plan needs a few hundred MB
// of a 105-layer program at most), at most `jobs` at a time. The walk takes the round as it takes
// an MPI round (walk: points past the K-th fit are left out), so the result is the one-at-a-time
// walk's (SearchShortcuts.PlanningRoundsChangeNothing). A fork costs milliseconds (GPT 1.3B's
// 3,905-point walk: 1.1 s planned here, 5.9 s forked), so the round is planned here, point by
// point, while the last plan took less than SearchOptions::fork_plans_from_s; the answer is the
// same either way.
class PlanRounds {
 public:
  PlanRounds(PointChecker& checker, double fork_from_s) : checker_(checker), fork_from_s_(fork_from_s) {}

  std::vector<PlanVerdict> operator()(const std::vector<Candidate>& batch) {
    std::vector<PlanVerdict> out;
    size_t k = 0;
    while (k < batch.size() && (last_plan_s_ < fork_from_s_ || k + 1 == batch.size())) out.push_back(timed(batch[k++]));
    if (k == batch.size()) return out;
    std::vector<sim::ForkedCall> children;
    for (size_t c = k + 1; c < batch.size(); ++c)
      children.emplace_back([this, &batch, c] { return plan_share(checker_, batch, int(c)); }, "search: a planning process");
    out.push_back(timed(batch[k]));
    for (sim::ForkedCall& child : children) {
      while (!child.read_some()) {
      }
      const auto m = parse_rank_message<proto::SearchPlanVerdict>(child.result(), "plan");
      if (!m.has())
        throw Error(m.error().message().empty() ? "search: internal: a planning process planned nothing" : m.error().message(),
                    m.error().message().empty() ? ErrorKind::kInternal : ErrorKind(m.error().kind()));
      out.push_back({m.peak_bytes(), m.fits()});
    }
    return out;
  }

 private:
  PlanVerdict timed(const Candidate& c) {
    const auto start = std::chrono::steady_clock::now();
    PlanVerdict v = plan_point(checker_, c);
    last_plan_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return v;
  }

  PointChecker& checker_;
  double fork_from_s_ = 0;
  // The last plan's wall time (here, or from a child's fork to its verdict); -1 before the first:
  // the first plans are forked, so that a slow first plan (seconds for a 105-layer model) does not
  // keep the other slots idle, and planning moves here once plans prove fast (fork_plans_from_s).
  double last_plan_s_ = -1;
};

// Processes that check and estimate the space in one process's search: SearchOptions::estimate_jobs,
// else the simulations'.
size_t estimate_jobs(const SearchOptions& options) {
  const int jobs = options.estimate_jobs > 0 ? options.estimate_jobs
                   : options.jobs > 0        ? options.jobs
                                             : int(std::thread::hardware_concurrency());
  return size_t(std::max(1, jobs));
}

std::string runs_to_bytes(bool go, const std::vector<std::vector<std::string>>& runs) {
  proto::SearchRuns m;
  m.set_go(go);
  for (const auto& run : runs) {
    proto::SearchRuns::Run* r = m.add_runs();
    for (const std::string& s : run) r->add_sets(s);
  }
  return m.SerializeAsString();
}

// Simulates runs[i] for the i dealt to this rank (i mod size); on rank 0, every result.
std::vector<sweep::PointResult> simulate_runs(const std::string& scenario_path,
                                              const std::vector<std::vector<std::string>>& runs,
                                              const SearchOptions& options, const SearchRanks* ranks) {
  sweep::RunOptions ro;
  ro.jobs = options.jobs;
  ro.limit = options.limit;
  ro.sim = options.sim;
  const int rank = ranks ? ranks->rank : 0, size = ranks ? ranks->size : 1;
  if (rank == 0) ro.on_progress = options.on_progress;
  std::vector<std::vector<std::string>> mine;
  for (size_t i = rank; i < runs.size(); i += size) mine.push_back(runs[i]);
  std::vector<sweep::PointResult> results = sweep::run_points(scenario_path, mine, ro);
  if (size == 1) return results;
  proto::SearchSimulated mine_done;
  for (const sweep::PointResult& p : results) mine_done.add_points(sweep::encode_point_result(p));
  const std::vector<std::string> all = ranks->gather_to_root(mine_done.SerializeAsString());
  if (rank != 0) return {};
  std::vector<sweep::PointResult> out(runs.size());
  for (int k = 0; k < size; ++k) {
    const auto m = parse_rank_message<proto::SearchSimulated>(all[k], "simulated points");
    const size_t dealt = k < int(runs.size()) ? (runs.size() - size_t(k) + size_t(size) - 1) / size_t(size) : 0;
    if (size_t(m.points_size()) != dealt)
      throw Error("search: internal: rank " + std::to_string(k) + " sent " + std::to_string(m.points_size()) +
                      " results for " + std::to_string(dealt) + " points",
                  ErrorKind::kInternal);
    size_t i = size_t(k);
    for (const std::string& bytes : m.points()) out[i] = sweep::decode_point_result(bytes), i += size_t(size);
  }
  return out;
}


SearchResult off_root() {
  SearchResult r;
  r.on_root = false;
  return r;
}

}  // namespace

SearchResult run_search(const std::string& scenario_path, const std::vector<std::string>& sets,
                        const SearchOptions& options) {
  if (options.top < 1) throw Error("--top: expected a positive number of points, got " + std::to_string(options.top));
  const SearchRanks* ranks = options.ranks && options.ranks->size > 1 ? options.ranks : nullptr;
  const int rank = ranks ? ranks->rank : 0, size = ranks ? ranks->size : 1;
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

  // Each rank's share; an error of a rank goes to rank 0 (the others would wait for it forever).
  std::vector<RankPart> parts;
  const auto estimate_start = std::chrono::steady_clock::now();
  const size_t shares = ranks ? 1 : estimate_jobs(options);
  if (shares > 1) {
    // One process over the cores: the space dealt as to MPI ranks, the shares beyond the first
    // in forked children (their counts and points come back as a rank's message), merged as rank 0
    // merges the ranks' (merge_parts: the one-process order), so the result is the one-share one.
    std::vector<sim::ForkedCall> children;
    for (size_t k = 1; k < shares; ++k)
      children.emplace_back(
          [&, k] { return to_bytes(rank_part(shape, checker, int(k), int(shares), options.rule_shortcuts,
                                                  options.closed_form_counts)); },
          "search: an estimate process");
    parts.push_back(rank_part(shape, checker, 0, int(shares), options.rule_shortcuts, options.closed_form_counts));
    for (sim::ForkedCall& child : children) {
      while (!child.read_some()) {
      }
      parts.push_back(part_of(child.result()));
    }
  } else {
    RankPart part;
    try {
      part = rank_part(shape, checker, rank, size, options.rule_shortcuts, options.closed_form_counts);
    } catch (const Error& e) {
      if (!ranks) throw;
      part = RankPart{}, part.error_kind = int(e.kind()), part.error = e.what();
    } catch (const std::exception& e) {
      if (!ranks) throw;
      part = RankPart{}, part.error_kind = int(ErrorKind::kInternal), part.error = e.what();
    }
    if (ranks) {
      const std::vector<std::string> all = ranks->gather_to_root(to_bytes(part));
      for (const std::string& bytes : all) parts.push_back(part_of(bytes));
    } else {
      parts.push_back(std::move(part));
    }
  }
  const double estimate_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - estimate_start).count();

  SearchResult r;
  std::vector<std::vector<std::string>> runs;
  bool overlapped = false;  // one process: the walk and the simulations ran together (OverlappedWalk)
  std::vector<sweep::PointResult> simulated;
  if (rank == 0) {
    bool planning = ranks != nullptr;  // the other ranks wait in serve_plans
    try {
      r.scenario_path = scenario_path;
      r.sets = checker.sets();
      r.gpus = shape.gpus;
      r.vary_batch = options.vary_batch;
      const std::vector<Valid> valid = merge_parts(parts, options, r);
      if (shares > 1) r.estimate_wall_s = estimate_wall_s;  // the phase's, forks and merge included
      parts.clear();
      const auto bound = [&](const Valid& v) { return options.memory_bound ? bound_point(checker, v) : int64_t{0}; };
      if (ranks)
        walk(valid, options, size_t(size), bound, [&](const std::vector<Candidate>& b) { return plan_round(checker, *ranks, b); }, r);
      else if (options.simulate && options.overlap) {
        overlapped = true;
        simulated = run_overlapped_walk(valid, options, checker, bound, scenario_path, r);
        if (r.best.empty()) {
          // Nothing fits: walk() again for its message (the smallest planned peak of the walk).
          r.memory_planned = r.out_of_memory = r.out_of_memory_by_bound = 0;
          r.pruned.clear();
          walk(valid, options, plan_jobs(options), bound, PlanRounds(checker, options.fork_plans_from_s), r);
        }
      } else {
        walk(valid, options, plan_jobs(options), bound, PlanRounds(checker, options.fork_plans_from_s), r);
      }
      if (planning) ranks->broadcast_from_root(batch_to_bytes(true, {})), planning = false;
    } catch (...) {
      if (planning) ranks->broadcast_from_root(batch_to_bytes(true, {}));
      if (ranks && options.simulate) ranks->broadcast_from_root(runs_to_bytes(false, {}));
      throw;
    }
    for (const RankedPoint& p : r.best) {
      runs.push_back(r.sets);
      runs.back().insert(runs.back().end(), p.sets.begin(), p.sets.end());
    }
  } else {
    serve_plans(checker, *ranks);
  }
  if (!options.simulate) {
    r.on_root = rank == 0;
    return r;
  }
  if (ranks) {
    const auto m = parse_rank_message<proto::SearchRuns>(
        ranks->broadcast_from_root(rank == 0 ? runs_to_bytes(true, runs) : std::string()), "points to simulate");
    if (!m.go()) return off_root();
    runs.clear();
    for (const proto::SearchRuns::Run& run : m.runs()) runs.emplace_back(run.sets().begin(), run.sets().end());
  }
  std::vector<sweep::PointResult> results =
      overlapped ? std::move(simulated) : simulate_runs(scenario_path, runs, options, ranks);
  if (rank != 0) return off_root();
  for (size_t i = 0; i < r.best.size(); ++i) r.best[i].simulated = std::move(results[i]);
  const bool vary = options.vary_batch;
  std::stable_sort(r.best.begin(), r.best.end(),
                   [vary](const RankedPoint& a, const RankedPoint& b) { return simulated_before(a, b, vary); });
  return r;
}

}  // namespace tandem::search
