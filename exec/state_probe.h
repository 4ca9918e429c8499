// Takes the machine state probe (traces/calibration/machine_state_probe.h) on every rank of
// MPI_COMM_WORLD under the run's placement: with each `tandem run` after its steps, or alone
// (`tandem run --probe-state FILE -n RANKS`, what a prediction of a run about to be measured takes).
#pragma once

#include <string>

#include "traces/calibration/machine_state_probe.h"

namespace tandem::exec {

// Collective over MPI_COMM_WORLD (MPI initialised); every rank gets the same probe. `yield` as the
// run's ranks (exec/run_args.h, yields_when_idle).
MachineStateProbe probe_machine_state(bool yield);

// `tandem run --probe-state FILE` in worker mode: MPI_Init, the probe, rank 0 writes FILE.
int run_state_probe_worker(const std::string& path, int cores, int blas_threads);

}  // namespace tandem::exec
