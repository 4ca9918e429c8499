// The machine states a calibration's runs were measured in (issue 13, docs/exec.md "Session 18").
// This VM runs for minutes at a time in one of a few speed states: the same run measures ~9.2 and
// ~11-12 ms (and, rarely, ~15 ms). The state probe's zero fill of 1 MiB, taken alone right before a
// run, tells them apart: of the 836 probes of sessions 16-17's twelve benches, 571 lay in 6.75-8.25
// us (the fast state), 226 in 9.25-11.75 us (the slow one), 18 in 12.25-19.75 us (a third) and 21
// between (docs/exec.md "Session 18"; in session 13 one state's probes lay within 2-4 % of each
// other and the two states 37 % apart). A
// profile pooled over runs in two states predicts neither (session 17: 3 of 5 calibration runs slow,
// the rows mostly fast, every row 13-20 % too slow). So `tandem calibrate` groups its runs by the
// zero fill of the probe taken before each, keeps each group's times (CalibrationProfile.states),
// and `tandem sim --state-probe NOW` predicts from the group NOW falls in, unscaled; a probe that
// falls in no calibrated state scales the nearest state's costs by the probe's ratios
// (machine_state_probe.h), as before.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "calibration.pb.h"
#include "traces/calibration/machine_state_probe.h"

namespace tandem {

// Two zero fills belong to one state when, sorted, no step between them exceeds this in ln (12 %):
// three to six times one state's width in session 13 (2-4 %), a third of the step between the
// states (ln 1.37 = 0.31). Not fitted: chosen from those two measurements before any bench ran
// with it (docs/exec.md "Session 18").
// A probe NOW falls in a calibrated state when its zero fill is within this of the state's median.
inline constexpr double kStateSplit = 0.12;

// The groups of `probes` by zero fill: sorted by it, a new group wherever the step to the next
// exceeds `split` (in ln). Each group lists the probes' indices in input order; the
// groups are ordered by zero fill, fastest first. Error (bad input) naming the probe's position
// for a probe without a positive zero fill; none for an empty list.
std::vector<std::vector<size_t>> group_by_state(const std::vector<MachineStateProbe>& probes,
                                                double split = kStateSplit);

// Appends `state` (a profile made of one group's runs, its state_probe the group's median) to
// profile.states: its kernels, collectives, Allocs/Frees, runs, time between kernels and speed
// spread. Error (internal) when `state` holds no state probe.
void add_state(proto::CalibrationProfile& profile, const proto::CalibrationProfile& state);

// The profile's states: its `states` entries, or, with none, the profile itself as its one state
// (when it holds a state probe). The state whose zero fill is nearest `now`'s (in ln), and whether
// `now` lies within `split` of it.
struct StateChoice {
  int state = -1;      // index into profile.states; -1: the profile itself (no states)
  int states = 0;      // how many the profile holds (1 without `states`; 0 without any probe)
  bool matched = false;
  double zero_fill_s = 0;  // the chosen state's
  int runs = 0;            // the chosen state's probes
};
StateChoice choose_state(const proto::CalibrationProfile& profile, const MachineStateProbe& now,
                         double split = kStateSplit);

// The profile as the runs of state `state` alone measured it: the profile with its kernels,
// collectives, Allocs/Frees, runs, time between kernels, speed spread and state probe replaced by
// the state's, and no states. `state` -1: the profile itself without its states. Error (internal)
// for an index out of range.
proto::CalibrationProfile profile_in_state(const proto::CalibrationProfile& profile, int state);

// "2 machine states: zero fill 7.42 us (runs 2, 3), 10.26 us (runs 1, 4, 5)" (runs numbered from 1
// in the order given), for `tandem calibrate`.
std::string describe_states(const std::vector<MachineStateProbe>& probes,
                            const std::vector<std::vector<size_t>>& groups);

}  // namespace tandem
