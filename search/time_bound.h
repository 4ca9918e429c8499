// A lower bound on a point's simulated iteration time (issue #17: prune with bounds, not guesses),
// as against the estimate (search/estimate.h), which is no bound: its closed forms for the pipeline
// bubble, the data-parallel and ZeRO overlap and offload's copies can be above or below what the
// simulator replays (docs/search.md "The estimate"), so the search's cut at the K-th estimate is a
// ranking, not a proof.
//
// The bound: every rank's compute stream runs its kernels one after the other (shared/schedule.h:
// a task starts when the previous task of its stream has ended), each for at least its cost
// (sim::ComputeCostModel::time_s, the same model and curves the simulator replays; the simulator
// only adds to it: host dispatch, waits). A rank of a stage runs the forward, backward and
// recompute kernels of its layers for each of the m micro-batches, and the L layers are dealt to
// the pp stages, so the busiest stage holds at least L / pp of them and the iteration lasts at
// least
//     m x (L / pp) x the layer's kernels on the compute stream (one micro-batch)
// (the layer probe's own program, LayerCosts::compute_stream_s). Left out, each only adding to the
// simulated time: the kernels of the other streams (Transformer Engine's userbuffers chunk GEMMs,
// the host's Adam), the first and last stages' extra kernels, the optimizer, every wait for
// communication, the bubble. Checked against the simulator on every valid point of a small space
// (TimeBound.NeverAboveTheSimulatedIteration).
#pragma once

#include "search/layer_probe.h"
#include "shared/scenario.h"

namespace tandem::search {

double iteration_lower_bound_s(const Scenario& point, const LayerCosts& layer);

}  // namespace tandem::search
