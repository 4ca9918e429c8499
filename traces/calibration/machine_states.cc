#include "traces/calibration/machine_states.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "shared/error.h"

namespace tandem {

std::vector<std::vector<size_t>> group_by_state(const std::vector<MachineStateProbe>& probes, double split) {
  std::vector<size_t> order(probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    const double z = probes[i].zero_fill_1mib_s;
    if (!std::isfinite(z) || z <= 0)
      throw Error("machine state probe " + std::to_string(i + 1) + " of " + std::to_string(probes.size()) +
                  ": no positive zero fill to tell its state by", ErrorKind::kBadInput);
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return probes[a].zero_fill_1mib_s < probes[b].zero_fill_1mib_s; });
  std::vector<std::vector<size_t>> groups;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || std::log(probes[order[k]].zero_fill_1mib_s / probes[order[k - 1]].zero_fill_1mib_s) > split)
      groups.emplace_back();
    groups.back().push_back(order[k]);
  }
  for (std::vector<size_t>& g : groups) std::sort(g.begin(), g.end());
  return groups;
}

void add_state(proto::CalibrationProfile& profile, const proto::CalibrationProfile& state) {
  if (!state.has_state_probe()) throw Error("add_state: a state without its probe", ErrorKind::kInternal);
  proto::CalibrationState& s = *profile.add_states();
  *s.mutable_state_probe() = state.state_probe();
  *s.mutable_kernels() = state.kernels();
  *s.mutable_collectives() = state.collectives();
  *s.mutable_memory_ops() = state.memory_ops();
  *s.mutable_runs() = state.runs();
  s.set_task_overhead_s(state.task_overhead_s());
  s.set_overhead_samples(state.overhead_samples());
  s.set_rank_speed_spread(state.rank_speed_spread());
}

StateChoice choose_state(const proto::CalibrationProfile& profile, const MachineStateProbe& now, double split) {
  StateChoice c;
  if (!(now.zero_fill_1mib_s > 0)) return c;
  double nearest = HUGE_VAL;  // |ln(now / state)| of the chosen state
  auto consider = [&](int index, const proto::MachineState& p) {
    if (!(p.zero_fill_1mib_s() > 0)) return;
    ++c.states;
    const double d = std::fabs(std::log(now.zero_fill_1mib_s / p.zero_fill_1mib_s()));
    if (d < nearest)
      nearest = d, c.state = index, c.zero_fill_s = p.zero_fill_1mib_s(), c.runs = int(std::max(1u, p.runs()));
  };
  if (profile.states_size() == 0) {
    if (profile.has_state_probe()) consider(-1, profile.state_probe());
  } else {
    for (int i = 0; i < profile.states_size(); ++i) consider(i, profile.states(i).state_probe());
  }
  c.matched = c.states > 0 && nearest <= split;
  return c;
}

proto::CalibrationProfile profile_in_state(const proto::CalibrationProfile& profile, int state) {
  if (state < -1 || state >= profile.states_size())
    throw Error("profile_in_state: state " + std::to_string(state) + " of " + std::to_string(profile.states_size()),
                ErrorKind::kInternal);
  proto::CalibrationProfile p = profile;
  p.clear_states();
  if (state < 0) return p;
  const proto::CalibrationState& s = profile.states(state);
  *p.mutable_state_probe() = s.state_probe();
  *p.mutable_kernels() = s.kernels();
  *p.mutable_collectives() = s.collectives();
  *p.mutable_memory_ops() = s.memory_ops();
  *p.mutable_runs() = s.runs();
  p.set_task_overhead_s(s.task_overhead_s());
  p.set_overhead_samples(s.overhead_samples());
  p.set_rank_speed_spread(s.rank_speed_spread());
  return p;
}

std::string describe_states(const std::vector<MachineStateProbe>& probes,
                            const std::vector<std::vector<size_t>>& groups) {
  std::string s = std::to_string(groups.size()) + " machine state" + (groups.size() == 1 ? "" : "s") + ":";
  char buf[64];
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> fill;
    for (size_t i : groups[g]) fill.push_back(probes[i].zero_fill_1mib_s);
    std::snprintf(buf, sizeof buf, "%s zero fill %.2f us (run%s", g ? "," : "", 1e6 * median_of(fill),
                  groups[g].size() == 1 ? "" : "s");
    s += buf;
    for (size_t k = 0; k < groups[g].size(); ++k) s += (k ? ", " : " ") + std::to_string(groups[g][k] + 1);
    s += ")";
  }
  return s;
}

}  // namespace tandem
