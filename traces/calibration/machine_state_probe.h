// A short probe of this machine's current speed state (issue 13, docs/exec.md "The machine's state,
// probed"): on this VM the same run measures two levels ~18 % apart that last minutes, seen in the
// TP all-reduces (+58..+108 %) and the Allocs' zero fills far more than in the kernels (+4..+13 %).
// The probe times, under a run's own placement, what those costs are made of: an in-place fp32
// all-reduce of 256 B (latency) and of 16 KiB (the tiny GPT's TP activations), the zero fill of a
// 1 MiB buffer already mapped (what a steady-state Alloc of the host driver does), and a small
// single-thread compute loop (a 32x32x32 fp32 matrix product: the cores' own speed). A few ms.
// `tandem run` takes it after its steps (JSON `state_probe`, trace Trace.state_probe), `tandem run
// --probe-state FILE -n RANKS` alone (exec/state_probe.h); this file is its text form, one
// "key<TAB>value" line per field. No MPI here.
#pragma once

#include <string>
#include <vector>

#include "calibration.pb.h"

namespace tandem {

// Each field is min_of_round_medians over the probe's rounds (below).
struct MachineStateProbe {
  double allreduce_256b_s = 0;   // of the shortest member's time per repetition after a barrier
  double allreduce_16kib_s = 0;  // the same, 16 KiB
  double zero_fill_1mib_s = 0;   // the slowest rank's, memset of 1 MiB (mapped, warm)
  double compute_s = 0;          // the slowest rank's, a 32x32x32 fp32 product
  int reps = 0;                  // repetitions per field, all rounds together
  int ranks = 0;
  bool valid() const { return allreduce_256b_s > 0 && allreduce_16kib_s > 0 && zero_fill_1mib_s > 0 && compute_s > 0; }
};

// The median of `v` (the mean of the two middle values for an even size; 0 for none): the probe's
// round statistic and the calibration's per-field and per-shape statistic.
double median_of(std::vector<double> v);

// The probe's statistic: `times` holds `rounds` consecutive groups of equal size, one per round of
// the probe (the rounds of all four fields interleave in time); the minimum over rounds of each
// round's median (the mean of the two middle values for an even size). A rank preempted for a few ms
// slows one or two rounds, not all: a 41-repetition median over ~0.1 ms of compute loops took such a
// moment whole (docs/exec.md "Session 14", a probe 1.6x in every field). A level that lasts minutes
// (the all-reduce's third mode) moves every round and stays. Error (internal) if `times` does not
// split into `rounds` non-empty groups.
double min_of_round_medians(const std::vector<double>& times, int rounds);

// The ratios of `now` to `then` (the calibration's): what a prediction scales each cost by.
// Allocs/Frees and communication from the zero fill (the host all-reduce moves its data through
// shared memory by copies, single-copy off: memory traffic as the memset's), kernels and the time
// between them from the compute loop. Not communication from the all-reduce probe: its level has a
// third mode (2.2-2.6x, every repetition, lasting tens of minutes) that the iteration does not
// follow, and the zero fill follows the iteration's states without it (docs/exec.md "Session 14").
struct StateRatios {
  double communication = 1, memory = 1, compute = 1;
};
StateRatios state_ratios(const MachineStateProbe& now, const MachineStateProbe& then);

// Sets profile.state_probe to, per field, the median of `probes` (the mean of the two middle values
// for an even count), runs = their count and taken_alone as given: the calibration's state, from
// the runs' own probes (after their steps) or from probes taken alone right before each run. Error
// (bad input) naming the probe's position for an empty list or a probe without positive times.
void set_profile_state_probe(proto::CalibrationProfile& profile, const std::vector<MachineStateProbe>& probes,
                             bool taken_alone);

// The profile's probe (CalibrationProfile.state_probe: the median over its runs); invalid when the
// profile holds none.
MachineStateProbe profile_state_probe(const proto::CalibrationProfile& profile);

// Scales, in place, the costs of `profile` to the machine's state now, each kind by its own ratio:
// every measured collective's time (mean_s, median_s) and wait (mean_wait_s) and every probed
// collective (collective_probe time_s) by r.communication; every Alloc/Free (memory_ops mean_s)
// by r.memory; every kernel (mean_s, median_s), the GEMM probe's times and the time between
// kernels (task_overhead_s) by r.compute. The runs' spread (runs) is left as measured.
void scale_to_state(proto::CalibrationProfile& profile, const StateRatios& r);

std::string format_state_probe(const MachineStateProbe& p);
// Error (bad input) naming `path` and the line for anything but the format_state_probe lines, or a
// probe with a missing or non-positive field.
MachineStateProbe parse_state_probe(const std::string& text, const std::string& path);

}  // namespace tandem
