#include "exec/stall_exchange.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "exec/stall_verdict.h"
#include "shared/error.h"

namespace tandem::exec {
namespace {

constexpr int kReportTag = 7;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

double stall_grace_s(double timeout_s) { return std::clamp(timeout_s / 2, 1.0, 10.0); }

StallExchange::StallExchange(double grace_s) : grace_s_(grace_s) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
}

StallExchange::~StallExchange() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void StallExchange::report_and_abort(const std::string& wait, const std::vector<int>& waits_on) {
  const int code = exit_code_of(ErrorKind::kStalled);
  std::fprintf(stderr, "tandem run: rank %d: %s\n", rank_, wait.c_str());
  std::fflush(stderr);
  // The report: {rank, waited-on ranks...}, to every other rank; never waited for (a stopped
  // rank never receives it), the job ends below.
  std::vector<int> mine = {rank_};
  mine.insert(mine.end(), waits_on.begin(), waits_on.end());
  std::vector<MPI_Request> sent(size_t(world_), MPI_REQUEST_NULL);
  for (int r = 0; r < world_; ++r)
    if (r != rank_) MPI_Isend(mine.data(), int(mine.size()), MPI_INT, r, kReportTag, comm_, &sent[size_t(r)]);
  std::vector<StallReport> reports = {{rank_, waits_on}};
  const Clock::time_point t0 = Clock::now();
  while (seconds_since(t0) < grace_s_) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, comm_, &flag, &st);
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    int n = 0;
    MPI_Get_count(&st, MPI_INT, &n);
    std::vector<int> got(size_t(std::max(n, 1)));
    MPI_Recv(got.data(), n, MPI_INT, st.MPI_SOURCE, kReportTag, comm_, MPI_STATUS_IGNORE);
    if (n >= 1) reports.push_back({got[0], std::vector<int>(got.begin() + 1, got.begin() + n)});
  }
  int lowest = rank_;
  for (const StallReport& r : reports) lowest = std::min(lowest, r.rank);
  if (lowest != rank_) {
    // The lowest reporter prints the verdict and aborts the job; it reported within this rank's
    // grace period, so its own ends within one more. Wait for it, then end the job anyway.
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_s_ + 1));
  }
  std::fprintf(stderr, "tandem run: %s\n", stall_verdict(reports).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace tandem::exec
