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
constexpr int kReps = 41;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("state probe: ") + what + " failed", ErrorKind::kFault);
}

// The shortest member's time per repetition (the last arrival's, as tandem calibrate times a
// collective), polled as the host runtime polls (MPI_Test, sched_yield only when ranks share cores);
// the median over repetitions, on every rank.
double allreduce_s(int bytes, bool yield) {
  std::vector<float> a(size_t(bytes / 4), 0.5f);
  std::vector<double> t(kReps);
  for (int r = -2; r < kReps; ++r) {
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
  check(MPI_Allreduce(MPI_IN_PLACE, t.data(), kReps, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return median(t);
}

// This rank's median memset of a mapped 1 MiB buffer (a steady-state Alloc's zero fill; the host
// driver keeps freed memory, so its blocks are mapped), the slowest rank's on every rank.
double zero_fill_s() {
  std::vector<unsigned char> buf(size_t(1) << 20, 1);
  std::vector<double> t(kReps);
  for (int r = -2; r < kReps; ++r) {
    const Clock::time_point t0 = Clock::now();
    std::memset(buf.data(), 0, buf.size());
    asm volatile("" : : "r"(buf.data()) : "memory");
    if (r >= 0) t[size_t(r)] = seconds_since(t0);
    buf[size_t(r + 2) * 4096 % buf.size()] = 1;
  }
  double m = median(t);
  check(MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return m;
}

// A 32x32x32 fp32 product by three loops (the cores' own speed, no BLAS threads), the slowest
// rank's median.
double compute_s() {
  constexpr int n = 32;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.f);
  std::vector<double> t(kReps);
  for (int r = -2; r < kReps; ++r) {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        const float x = a[size_t(i * n + k)];
        for (int j = 0; j < n; ++j) c[size_t(i * n + j)] += x * b[size_t(k * n + j)];
      }
    asm volatile("" : : "r"(c.data()) : "memory");
    if (r >= 0) t[size_t(r)] = seconds_since(t0);
  }
  double m = median(t);
  check(MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return m;
}

}  // namespace

MachineStateProbe probe_machine_state(bool yield) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MachineStateProbe p;
  p.ranks = world;
  p.reps = kReps;
  p.allreduce_256b_s = allreduce_s(256, yield);
  p.allreduce_16kib_s = allreduce_s(16 << 10, yield);
  p.zero_fill_1mib_s = zero_fill_s();
  p.compute_s = compute_s();
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
