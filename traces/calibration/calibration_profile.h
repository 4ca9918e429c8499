// Calibration profiles: the mean (and median) measured time of each kernel shape and each
// collective shape of a measured trace, and the runtime's mean time between kernels (dispatch,
// Allocs/Frees, MPI polling), which per-kernel times do not hold but a step's total does
// (docs/exec.md, "Where the time goes"). A collective instance counts with its shortest duration
// over the group's members (the last arrival's), since the others' extra time is waiting. The trace says when each task ran; the schedule it was measured on says
// what each task was (kernel, dtype, dims; collective op, group, bytes), so both are needed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "calibration.pb.h"
#include "shared/schedule.h"
#include "trace.pb.h"

namespace tandem {

inline constexpr const char* kCalibrationFormat = "tandem-calibration-1";

// One measured trace and the name errors and the profile give it (its file name).
struct NamedTrace {
  const proto::Trace* trace;
  std::string name;
};

// A measured run's steady-state steps (the slowest rank's time of each step, step 1 left out, as
// `tandem run` reports them): their count, median and interquartile range over the median (0
// with fewer than two steps).
struct RunSpread {
  int steps = 0;
  double median_s = 0, relative_iqr = 0;
};
RunSpread run_spread(const proto::Trace& trace);

// A calibration run whose steady-state steps spread more than this (IQR over the median) is noisy:
// `tandem calibrate` warns. On the 2-core development VM quiet runs of the tiny GPT spread 2-9 %
// and runs made while other jobs took the cores 12-57 % (docs/exec.md, "Host twin error"); a
// profile holds the run's times, so every prediction from a noisy run is off by that noise.
inline constexpr double kNoisyRunRelativeIqr = 0.10;

// The machine a host run was measured on, as `tandem run` placed its ranks there
// (exec/run_args.h, core_placement_for): the cores its ranks ran on and each rank's BLAS threads.
// When ranks x threads exceed the cores the ranks shared them, and make_calibration takes the
// sharing out of the kernel, time-between-kernel and Alloc/Free times
// (traces/calibration/shared_core_time.h). 0 (either): unknown, nothing taken out and the profile's
// cores and blas_threads_per_rank stay 0 (not recorded).
struct MeasuredMachine {
  int cores = 0;
  int blas_threads_per_rank = 0;
};

// Several runs of one schedule (`tandem calibrate TRACE [TRACE ...]`): a kernel or collective
// shape's time (mean_s, mean_wait_s) is the median over the runs of each run's mean (the step's
// total is made of means; the median over runs outvotes a run whose machine was slower: with two
// runs it is their average), its median_s and samples pooled over the runs; Allocs/Frees the
// median over every run's steady-state steps; the time between kernels the median over the runs
// of each run's mean; `runs` holds each run's iteration time and spread.
// Every trace must pass the checks below and come from one backend.
// A host run on `machine` whose ranks shared its cores: every kernel sample, the ranks' busy time
// (rank_speed_spread), the time between kernels and the traced step's Alloc/Free durations are
// their time alone; Rank.memory_op_step_s (not timed against the other ranks) is scaled by its
// rank's ratio of alone to measured over the traced step's Allocs/Frees; collectives stay as
// measured. CalibrationRun.core_share says what was taken out. A host profile records `machine`
// (cores, blas_threads_per_rank) when it is known.
proto::CalibrationProfile make_calibration(const Schedule& schedule, const std::vector<NamedTrace>& runs,
                                           const MeasuredMachine& machine = {});

// Throws Error (bad input) naming `trace_name` when the trace is predicted (backend sim: a
// simulator calibrated on its own output learns nothing), holds no event, was not measured on
// this schedule (digest, world size, task ids), or holds no kernel or collective to time.
proto::CalibrationProfile make_calibration(const Schedule& schedule, const proto::Trace& trace,
                                           const std::string& trace_name = "the trace",
                                           const MeasuredMachine& machine = {});

// Binary protobuf, written atomically.
void write_calibration(const proto::CalibrationProfile& profile, const std::string& path);

// What a calibration file holds, told from its bytes: a profile (protobuf, kCalibrationFormat)
// or a text table (sim/compute_cost_model.h). Error (bad input) naming the path for anything
// else: an empty file, a tandem trace or a profile of another format, other binary data, or a
// file named *.pb that is not a profile.
enum class CalibrationFileKind { kProfile, kTable };
CalibrationFileKind calibration_file_kind(std::string_view bytes, const std::string& path);

// The profile in `bytes`; Error naming the path when it is not a profile of this format, holds no
// entry (it would calibrate nothing), or an entry is out of range (kernel, dtype, op, group kind,
// six dims >= 0, group size >= 1, bytes >= 0, median time finite and >= 0; a GEMM probe entry:
// m, n, k >= 1 and a finite time > 0; a run's core_share, where present, finite in (0, 1]).
proto::CalibrationProfile parse_calibration(const std::string& bytes, const std::string& path);
// parse_calibration of the file, read through read_input_file (regular file, kMaxProfileBytes).
proto::CalibrationProfile read_calibration(const std::string& path);

}  // namespace tandem
