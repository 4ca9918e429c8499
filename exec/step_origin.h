// One time origin for the ranks of a measured step. The trace's times of all ranks share one origin
// (traces/proto/trace.proto), so that what ran at once on different ranks can be read from it (the
// calibration takes out the cores ranks shared: traces/calibration/shared_core_time.h). Each rank
// times its step from its own start (Runtime::run_step, StepResult.origin_s: seconds of
// steady_clock, which is CLOCK_MONOTONIC, one clock for every process of a machine), and the ranks
// leave the step barrier at different moments (an oversubscribed rank can leave it a scheduler
// slice late); rank 0 moves every rank's times onto the earliest rank's start.
#pragma once

#include <vector>

namespace tandem::exec {

// The shift to add to each rank's times: its origin less the smallest origin (0 for the earliest,
// > 0 for the others). Empty for no rank. The origins must be of one machine's clock.
std::vector<double> origin_shifts(const std::vector<double>& origins);

}  // namespace tandem::exec
