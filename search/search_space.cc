#include "search/search_space.h"

#include <charconv>

#include "shared/error.h"

namespace tandem::search {

namespace {

int layout_value(const std::string& assignment, const std::string& key) {
  const std::string v = assignment.substr(key.size() + 1);
  int n = 0;
  for (char ch : v) {
    if (ch < '0' || ch > '9' || n > (1 << 24)) {
      n = -1;
      break;
    }
    n = n * 10 + (ch - '0');
  }
  if (v.empty() || n <= 0)
    throw Error("--set " + assignment + ": tandem search needs a positive whole number for " + key, ErrorKind::kBadInput);
  return n;
}

template <size_t N>
int table_size(const TableRow (&)[N]) {
  return int(N);
}

// The values of an axis: 0..n-1, or {-1} when the user fixed its key.
std::vector<int> axis(const SpaceShape& s, const std::string& key, int n) {
  if (s.fixed.count(key)) return {-1};
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

std::vector<int> divisors_or_fixed(int n, int fixed) {
  std::vector<int> v;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0 && (fixed == 0 || d == fixed)) v.push_back(d);
  return v;
}

}  // namespace

void fix_keys(SpaceShape& shape, const std::vector<std::string>& sets) {
  for (const std::string& a : sets) {
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq);
    shape.fixed.insert(key);
    if (eq == std::string::npos) continue;  // the loader names the problem
    if (key == "strategy.dp") shape.fixed_dp = layout_value(a, key);
    if (key == "strategy.tp") shape.fixed_tp = layout_value(a, key);
    if (key == "strategy.pp") shape.fixed_pp = layout_value(a, key);
    if (key == "strategy.sp") shape.fixed_sp = layout_value(a, key);
    if (key == "strategy.tp_mode") shape.fixed_tp_mode = a.substr(eq + 1);
    if (key == "strategy.sp_mode") shape.fixed_sp_mode = a.substr(eq + 1);
    if (key == "strategy.offload") shape.fixed_offload = a.substr(eq + 1);
  }
}

void for_each_group(const SpaceShape& s, const std::function<void(const PointGroup&)>& visit) {
  PointGroup group;
  const std::vector<int> tp_modes = axis(s, "strategy.tp_mode", table_size(kTpModes));
  const std::vector<int> sp_modes = axis(s, "strategy.sp_mode", table_size(kSpModes));
  group.zeros = axis(s, "strategy.zero_stage", kZeroStages);
  group.recomputes = axis(s, "strategy.recompute", table_size(kRecomputes));
  const std::vector<int> offloads = axis(s, "strategy.offload", table_size(kOffloads));
  const bool fixed_depth = s.fixed.count("strategy.tp_depth") > 0;
  // A tp_mode fixed by the user with a depth of its own still searches tp_depth.
  bool fixed_mode_depth = false;
  for (const TableRow& row : kTpModes)
    if (row.tp_depth && s.fixed_tp_mode == row.value) fixed_mode_depth = true;
  // tp_depth is set by every point (1 for the modes without depth) when some mode of the space
  // has a depth and the user did not fix it; else by none.
  bool depth_axis = fixed_mode_depth;
  for (int m : tp_modes)
    if (m >= 0 && kTpModes[m].tp_depth) depth_axis = true;
  depth_axis = depth_axis && !fixed_depth;
  // (tp_mode index, tp_depth) of a layout with `tp` GPUs per tensor-parallel group (depth 0: not set).
  auto tp_grids = [&](int tp) {
    std::vector<std::pair<int, int>> grids;
    for (int m : tp_modes) {
      const bool depth = m >= 0 ? kTpModes[m].tp_depth : fixed_mode_depth;
      if (m >= 0 && kTpModes[m].needs_tp && tp == 1) continue;
      if (!depth_axis) grids.push_back({m, 0});
      else if (!depth) grids.push_back({m, 1});
      else
        for (int d = 2; d <= tp; ++d)
          if (tp % d == 0) grids.push_back({m, d});
    }
    return grids;
  };
  // (offload index, offload_fraction): each fraction for a mode that reads them, 0 for the others
  // when some mode of the axis reads them; -1 (not set) when none does or the user fixed it.
  const bool fixed_fraction = s.fixed.count("strategy.offload_fraction") > 0;
  auto reads_fraction = [&](int off) {
    if (off >= 0) return kOffloads[off].fractions;
    for (const TableRow& row : kOffloads)
      if (row.fractions && s.fixed_offload == row.value) return true;
    return false;
  };
  bool fraction_axis = false;
  for (int off : offloads) fraction_axis = fraction_axis || reads_fraction(off);
  fraction_axis = fraction_axis && !fixed_fraction;
  for (int off : offloads) {
    if (!fraction_axis) group.offloads.push_back({off, -1.0});
    else if (!reads_fraction(off)) group.offloads.push_back({off, 0.0});
    else
      for (double f : kOffloadFractions) group.offloads.push_back({off, f});
  }
  for (int i = 0; i < kSwitchCount; ++i) group.switches[i] = axis(s, kSoftwareSwitches[i], 2);
  const bool fixed_schedule = s.fixed.count("strategy.pp_schedule") || s.fixed.count("strategy.virtual_stages");
  const bool fixed_mb = s.fixed.count("strategy.micro_batch");
  // --vary-batch: the powers of two up to the scenario's global batch, and that batch itself.
  std::vector<int> batches = {0};
  if (s.vary_batch) {
    batches.clear();
    for (int g = 1; g <= s.global_batch; g *= 2) batches.push_back(g);
    if (batches.back() != s.global_batch) batches.push_back(s.global_batch);
  }
  Candidate& c = group.head;
  for (int tp : divisors_or_fixed(s.gpus, s.fixed_tp))
    for (int pp : divisors_or_fixed(s.gpus / tp, s.fixed_pp))
      for (int spm : sp_modes) {
        bool sp_axis = false;
        for (const TableRow& row : kSpModes)
          if (row.sp_degree && (spm >= 0 ? std::string(kSpModes[spm].value) == row.value : s.fixed_sp_mode == row.value))
            sp_axis = true;
        // Without an axis of its own a mode has sp = 1 (none when the user fixed sp > 1).
        const std::vector<int> sps = sp_axis ? divisors_or_fixed(s.gpus / (tp * pp), s.fixed_sp)
                                     : s.fixed_sp > 1 ? std::vector<int>{}
                                                      : std::vector<int>{1};
        for (int sp : sps) {
          if (sp_axis && sp < 2) continue;  // the mode needs its axis: sp = 1 is sp_mode none's point
          const int dp = s.gpus / (tp * pp * sp);
          if (s.fixed_dp && dp != s.fixed_dp) continue;
          // Pipelines: (schedule, virtual stages).
          std::vector<std::pair<int, int>> pipelines;
          if (fixed_schedule) {
            pipelines.push_back({-1, 0});
          } else {
            for (int k = 0; k < table_size(kPipelineSchedules); ++k) {
              if (std::string(kPipelineSchedules[k].value) != "interleaved") {
                pipelines.push_back({k, 1});
                continue;
              }
              for (int v = 2; v <= kMaxVirtualStages && int64_t{pp} * v <= s.layers; ++v)
                if (s.layers % (pp * v) == 0) pipelines.push_back({k, v});
            }
          }
          c.dp = dp, c.tp = tp, c.pp = pp, c.sp = sp, c.sp_mode = int8_t(spm);
          for (int g : batches) {
            const int batch = g > 0 ? g : s.global_batch;
            c.global_batch = g;
            std::vector<int>& mbs = group.micro_batches;
            mbs.clear();
            if (fixed_mb) mbs.push_back(0);
            else
              for (int mb = 1; mb == 1 || mb <= batch / dp; mb *= 2) mbs.push_back(mb);
            for (const auto& [tpm, depth] : tp_grids(tp))
              for (const auto& [schedule, v] : pipelines) {
                c.tp_mode = int8_t(tpm);
                c.tp_depth = depth;
                c.schedule = int8_t(schedule);
                c.virtual_stages = v;
                if (group.size() > 0) visit(group);
              }
          }
        }
      }
}

uint64_t PointGroup::switch_settings() const {
  uint64_t n = 1;
  for (const std::vector<int>& v : switches) n *= v.size();
  return n;
}

Candidate PointGroup::point(uint64_t row, size_t m, uint64_t s) const {
  Candidate c = head;
  const uint64_t per_zero = uint64_t(recomputes.size()) * offloads.size();
  c.zero = int8_t(zeros[row / per_zero]);
  c.recompute = int8_t(recomputes[row % per_zero / offloads.size()]);
  c.offload = int8_t(offloads[row % offloads.size()].first);
  c.offload_fraction = offloads[row % offloads.size()].second;
  c.micro_batch = micro_batches[m];
  for (int i = kSwitchCount; i-- > 0;) {
    c.switches[i] = int8_t(switches[i][s % switches[i].size()]);
    s /= switches[i].size();
  }
  return c;
}

void for_each_candidate(const SpaceShape& shape, const std::function<void(const Candidate&)>& visit) {
  for_each_group(shape, [&](const PointGroup& g) {
    const uint64_t settings = g.switch_settings();
    for (uint64_t row = 0; row < g.rows(); ++row)
      for (size_t m = 0; m < g.micro_batches.size(); ++m)
        for (uint64_t s = 0; s < settings; ++s) visit(g.point(row, m, s));
  });
}

std::vector<std::string> candidate_sets(const Candidate& c) {
  std::vector<std::string> v;
  v.reserve(16);
  v.push_back("strategy.dp=" + std::to_string(c.dp));
  v.push_back("strategy.tp=" + std::to_string(c.tp));
  v.push_back("strategy.pp=" + std::to_string(c.pp));
  v.push_back("strategy.sp=" + std::to_string(c.sp));
  if (c.tp_mode >= 0) v.push_back(std::string("strategy.tp_mode=") + kTpModes[c.tp_mode].value);
  if (c.tp_depth > 0) v.push_back("strategy.tp_depth=" + std::to_string(c.tp_depth));
  if (c.sp_mode >= 0) v.push_back(std::string("strategy.sp_mode=") + kSpModes[c.sp_mode].value);
  if (c.schedule >= 0) {
    v.push_back(std::string("strategy.pp_schedule=") + kPipelineSchedules[c.schedule].value);
    v.push_back("strategy.virtual_stages=" + std::to_string(c.virtual_stages));
  }
  if (c.zero >= 0) v.push_back("strategy.zero_stage=" + std::to_string(c.zero));
  if (c.recompute >= 0) v.push_back(std::string("strategy.recompute=") + kRecomputes[c.recompute].value);
  if (c.offload >= 0) v.push_back(std::string("strategy.offload=") + kOffloads[c.offload].value);
  if (c.offload_fraction >= 0) {
    char f[32];
    const auto end = std::to_chars(f, f + sizeof f, c.offload_fraction).ptr;  // shortest: 0, 0.5, 1
    v.push_back("strategy.offload_fraction=" + std::string(f, end));
  }
  if (c.micro_batch > 0) v.push_back("strategy.micro_batch=" + std::to_string(c.micro_batch));
  if (c.global_batch > 0) v.push_back("strategy.global_batch=" + std::to_string(c.global_batch));
  for (int i = 0; i < kSwitchCount; ++i)
    if (c.switches[i] >= 0) v.push_back(std::string(kSoftwareSwitches[i]) + (c.switches[i] ? "=true" : "=false"));
  return v;
}

}  // namespace tandem::search
