#include "exec/collective_probe.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "exec/run_args.h"
#include "shared/error.h"
#include "traces/atomic_file.h"

namespace tandem::exec {
namespace {

// Polls `req` as the host runtime does (exec/runtime.cc: MPI_Test, sched_yield only when the
// ranks share cores).
void wait(MPI_Request& req, bool yield) {
  int flag = 0;
  for (;;) {
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) return;
    if (yield) sched_yield();
  }
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("collective probe: ") + what + " failed", ErrorKind::kFault);
}

}  // namespace

std::vector<CollectiveProbePoint> probe_collectives(bool yield) {
  using Clock = std::chrono::steady_clock;
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<CollectiveProbePoint> out;
  // Back to back about a second on two ranks; the gaps' passes (probe_reps(bytes, gap)) ~10 s more.
  constexpr double kBudgetS = 20;
  const Clock::time_point begin = Clock::now();
  for (int g : probe_group_sizes(world)) {
    // The first g ranks of the world (rank 0 is in every group and gathers the times).
    MPI_Comm comm;
    check(MPI_Comm_split(MPI_COMM_WORLD, rank < g ? 0 : MPI_UNDEFINED, rank, &comm), "MPI_Comm_split");
    if (comm == MPI_COMM_NULL) continue;
    const std::vector<int64_t> sizes = probe_bytes(g);
    const int64_t top = sizes.back();
    // Values that are no denormals; the buffers touched once, as a run's are by the kernels.
    std::vector<float> a(size_t(top / 4), 0.5f), b(size_t(top / 4), 0.25f);
    for (double gap_s : kProbedGapsS)
      for (CollectiveOp op : kProbedCollectives)
        for (int64_t bytes : sizes) {
          const int64_t count = bytes / 4, chunk = count / g;
          // Past the time budget (a loaded machine, where each barrier waits for the peers to be
          // scheduled) the fewest repetitions; the group's first rank decides for all.
          const double spent_s = std::chrono::duration<double>(Clock::now() - begin).count();
          int reps = spent_s > kBudgetS ? 3 : probe_reps(bytes, gap_s);
          check(MPI_Bcast(&reps, 1, MPI_INT, 0, comm), "MPI_Bcast");
          std::vector<double> t(static_cast<size_t>(reps)), fastest(static_cast<size_t>(reps));
          // Two calls to warm up (back to back); after a gap one, the gap being what cools it.
          for (int r = gap_s > 0 ? -1 : -2; r < reps; ++r) {
            // Every rank spins `gap_s` (reading the clock, touching no memory), as the ranks of a
            // step compute between two collectives, then the barrier (docs/exec.md, session 17, 2.).
            for (const Clock::time_point g0 = Clock::now();
                 std::chrono::duration<double>(Clock::now() - g0).count() < gap_s;) {
            }
            check(MPI_Barrier(comm), "MPI_Barrier");
            MPI_Request req;
            const Clock::time_point t0 = Clock::now();
            if (op == CollectiveOp::kAllReduce)
              check(MPI_Iallreduce(MPI_IN_PLACE, a.data(), int(count), MPI_FLOAT, MPI_SUM, comm, &req),
                    "MPI_Iallreduce");
            else if (op == CollectiveOp::kAllGather)
              check(MPI_Iallgather(MPI_IN_PLACE, int(chunk), MPI_FLOAT, a.data(), int(chunk), MPI_FLOAT, comm, &req),
                    "MPI_Iallgather");
            else
              check(MPI_Ireduce_scatter_block(a.data(), b.data(), int(chunk), MPI_FLOAT, MPI_SUM, comm, &req),
                    "MPI_Ireduce_scatter_block");
            wait(req, yield);
            if (r >= 0) t[size_t(r)] = std::chrono::duration<double>(Clock::now() - t0).count();
            // Sums of 0.5 grow by g per call: start every call from the same values.
            if (op != CollectiveOp::kAllGather) std::fill(a.begin(), a.begin() + count, 0.5f);
          }
          // Per repetition the shortest member's time (the last arrival's), then the median.
          check(MPI_Reduce(t.data(), fastest.data(), reps, MPI_DOUBLE, MPI_MIN, 0, comm), "MPI_Reduce");
          if (rank == 0) {
            std::nth_element(fastest.begin(), fastest.begin() + reps / 2, fastest.end());
            out.push_back({op, g, bytes, fastest[size_t(reps / 2)], reps, gap_s});
          }
        }
    MPI_Comm_free(&comm);
  }
  return out;
}

int run_collective_probe_worker(const std::string& path, int cores, int blas_threads) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  int code = 0;
  try {
    const std::vector<CollectiveProbePoint> points = probe_collectives(yields_when_idle(world, cores, blas_threads));
    if (rank == 0) write_file_atomic(path, format_probe(points));
  } catch (const Error& e) {
    std::fprintf(stderr, "tandem run: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, e.exit_code());
  }
  MPI_Finalize();
  return code;
}

}  // namespace tandem::exec
