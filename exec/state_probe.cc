#include "exec/state_probe.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "exec/run_args.h"
#include "shared/error.h"
#include "traces/atomic_file.h"

namespace tandem::exec {
namespace {

using Clock = std::chrono::steady_clock;
// Rounds of the whole probe, each field timed kRepsPerRound times a round; a field's value is the
// minimum over rounds of the round's median (min_of_round_medians: a preempted moment slows a round,
// not all five). 75 repetitions a field, a few ms in all.
constexpr int kRounds = 5;
constexpr int kRepsPerRound = 15;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("state probe: ") + what + " failed", ErrorKind::kFault);
}

// One round: the shortest member's time per repetition (the last arrival's, as tandem calibrate
// times a collective), polled as the host runtime polls (MPI_Test, sched_yield only when ranks share
// cores), appended to `out` on every rank.
void allreduce_round(int bytes, bool yield, std::vector<double>& out) {
  std::vector<float> a(size_t(bytes / 4), 0.5f);
  std::vector<double> t(kRepsPerRound);
  for (int r = -2; r < kRepsPerRound; ++r) {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    MPI_Request req;
    const Clock::time_point t0 = Clock::now();
    check(MPI_Iallreduce(MPI_IN_PLACE, a.data(), bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req), "MPI_Iallreduce");
    for (int flag = 0;;) {
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (flag) break;
      if (yield) sched_yield();
    }
    if (r >= 0) t[size_t(r)] = seconds_since(t0);
    std::fill(a.begin(), a.end(), 0.5f);
  }
  check(MPI_Allreduce(MPI_IN_PLACE, t.data(), kRepsPerRound, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  out.insert(out.end(), t.begin(), t.end());
}

// One round of this rank's memset of a mapped 1 MiB buffer (a steady-state Alloc's zero fill; the
// host driver keeps freed memory, so its blocks are mapped).
void zero_fill_round(std::vector<unsigned char>& buf, std::vector<double>& out) {
  for (int r = -2; r < kRepsPerRound; ++r) {
    const Clock::time_point t0 = Clock::now();
    std::memset(buf.data(), 0, buf.size());
    asm volatile("" : : "r"(buf.data()) : "memory");
    if (r >= 0) out.push_back(seconds_since(t0));
    buf[size_t(r + 2) * 4096 % buf.size()] = 1;
  }
}

// One round of a 32x32x32 fp32 product by three loops (the cores' own speed, no BLAS threads).
void compute_round(std::vector<double>& out) {
  constexpr int n = 32;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.f);
  for (int r = -2; r < kRepsPerRound; ++r) {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        const float x = a[size_t(i * n + k)];
        for (int j = 0; j < n; ++j) c[size_t(i * n + j)] += x * b[size_t(k * n + j)];
      }
    asm volatile("" : : "r"(c.data()) : "memory");
    if (r >= 0) out.push_back(seconds_since(t0));
  }
}

// The slowest rank's value, on every rank.
double slowest_rank(double v) {
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return v;
}

}  // namespace

MachineStateProbe probe_machine_state(bool yield) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<double> ar256, ar16k, fill, comp;
  std::vector<unsigned char> buf(size_t(1) << 20, 1);
  for (int round = 0; round < kRounds; ++round) {
    allreduce_round(256, yield, ar256);
    allreduce_round(16 << 10, yield, ar16k);
    zero_fill_round(buf, fill);
    compute_round(comp);
  }
  MachineStateProbe p;
  p.ranks = world;
  p.reps = kRounds * kRepsPerRound;
  p.allreduce_256b_s = min_of_round_medians(ar256, kRounds);
  p.allreduce_16kib_s = min_of_round_medians(ar16k, kRounds);
  p.zero_fill_1mib_s = slowest_rank(min_of_round_medians(fill, kRounds));
  p.compute_s = slowest_rank(min_of_round_medians(comp, kRounds));
  return p;
}

int run_state_probe_worker(const std::string& path, int cores, int blas_threads) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  try {
    const MachineStateProbe p = probe_machine_state(yields_when_idle(world, cores, blas_threads));
    if (rank == 0) write_file_atomic(path, format_state_probe(p));
  } catch (const Error& e) {
    std::fprintf(stderr, "tandem run: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, e.exit_code());
  }
  MPI_Finalize();
  return 0;
}

}  // namespace tandem::exec
