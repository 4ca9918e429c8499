// A probe of this machine's MPI collectives over the sizes a run of another configuration uses
// (`tandem run --probe-collectives FILE -n RANKS`, started by `tandem calibrate` on a host trace):
// the calibration run times only its own collectives (a TP=2 run of the tiny GPT: all-reduces of
// 4 B..16 KiB), so a data-parallel run's 836 KiB gradient all-reduce, or Megatron-SP's all-gathers
// and reduce-scatters, were costed from a law fit over those few small sizes (measured 0.40-0.59
// ms, modelled 0.15 ms; docs/exec.md, "Host twin error"). The probe runs under the same mpirun
// placement as the host run (exec/run_args.h), issues the host driver's own calls (exec/mpi_comm.cc:
// MPI_Iallreduce in place, MPI_Iallgather in place, MPI_Ireduce_scatter_block, fp32, polled with
// MPI_Test) and times each one as tandem calibrate times a measured collective: the shortest
// member's duration (the last arrival's), here after a barrier, the median over repetitions.
#pragma once

#include <string>
#include <vector>

#include "traces/calibration/collective_probe_table.h"

namespace tandem::exec {

// Runs the probe on every rank of MPI_COMM_WORLD (MPI initialised); rank 0 returns the points,
// the others an empty list. `yield` as the run's ranks (exec/run_args.h, yields_when_idle).
std::vector<CollectiveProbePoint> probe_collectives(bool yield);

// `tandem run --probe-collectives FILE` in worker mode: MPI_Init, the probe (yielding while it
// waits as a run's ranks would with `cores` and `blas_threads`), rank 0 writes FILE.
int run_collective_probe_worker(const std::string& path, int cores, int blas_threads);

}  // namespace tandem::exec
