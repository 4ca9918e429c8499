// The collective probe's plan and its file (exec/collective_probe.h runs it under mpirun; `tandem
// calibrate` reads the file into the profile's collective_probe entries): which group sizes and
// message sizes are timed, after which gaps, and one line per point,
// "op<TAB>group_size<TAB>bytes<TAB>time_s<TAB>reps<TAB>gap_s" (a file without the gap column, written
// before it, reads as gap 0: back to back).
// No MPI here, so the calibration library and its tests do not need it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration.pb.h"
#include "shared/schedule.h"

namespace tandem {

struct CollectiveProbePoint {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int group_size = 0;
  int64_t bytes = 0;  // nccl-tests convention (shared/schedule.h): all-gather's output, reduce-scatter's input
  double time_s = 0;
  int reps = 0;
  double gap_s = 0;  // seconds the ranks spun before each call (0: back to back)
};

// The ops probed: those of the host driver's data, tensor and sequence parallelism.
inline constexpr CollectiveOp kProbedCollectives[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                                                      CollectiveOp::kReduceScatter};
// Group sizes probed on `world` ranks: 2, 4, 8, ... below world, and world (none for one rank).
std::vector<int> probe_group_sizes(int world);
// Message sizes probed for a group of `group_size`: 2^i bytes from 8 B to 4 MiB, rounded down to a
// multiple of 4 * group_size (one fp32 element per member at least), without repeats.
std::vector<int64_t> probe_bytes(int group_size);
// Repetitions of one size: enough calls for a stable median, fewer for the large sizes (on a quiet
// machine the whole probe takes about a second; past 10 s each size gets 3, exec/collective_probe.cc).
int probe_reps(int64_t bytes);
// The gaps probed: a collective's time grows with the time since the ranks' previous collective
// (docs/exec.md, session 17: the 836.5 KiB reduce-scatter 103-107 us back to back, 126-127 after
// 2 ms, 155-167 after 8 ms), and a step's collectives come from ~70 us (tensor parallelism) to
// ~8 ms (a data-parallel gradient collective) apart: 0, 0.5, 2, 4 and 8 ms.
inline constexpr double kProbedGapsS[] = {0, 0.5e-3, 2e-3, 4e-3, 8e-3};
// Repetitions of one size after `gap_s`: probe_reps at 0, fewer as the gap grows (a call after
// 8 ms costs 8 ms): at most 15 at 0.5 ms, 9 at 2 ms and for every size up to 64 KiB, 7 at 4 ms and
// 5 at 8 ms above it, so that the whole probe takes ~10 s on two ranks (exec/collective_probe.cc).
int probe_reps(int64_t bytes, double gap_s);

std::string format_probe(const std::vector<CollectiveProbePoint>& points);
// The points of `text`; Error (bad input) naming `path` and the line for anything else, or for a
// file with no point.
std::vector<CollectiveProbePoint> parse_probe(const std::string& text, const std::string& path);
// Appends the points to the profile's collective_probe entries.
void add_collective_probe(proto::CalibrationProfile& profile, const std::vector<CollectiveProbePoint>& points);
// The same points as the probe of a placement whose `ranks` ranks share the cores
// (CalibrationProfile.shared_collective_probe, shared_probe_ranks).
void add_shared_collective_probe(proto::CalibrationProfile& profile, int ranks,
                                 const std::vector<CollectiveProbePoint>& points);

}  // namespace tandem
