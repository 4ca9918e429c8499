// One rank of `tandem run` under mpirun: the runtime over the host driver (MPI and the CPU kernels)
// or the CUDA driver (NCCL and the CUDA kernels), the step barrier and its watchdog, and rank 0's
// gathering and report.
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <iostream>

#include "exec/host_driver.h"
#include "exec/mpi_comm.h"
#include "exec/run_args.h"
#include "exec/runtime.h"
#include "exec/stall_exchange.h"
#include "exec/step_origin.h"
#include "exec/state_probe.h"
#include "exec/step_stats.h"
#include "shared/error.h"
#include "shared/json_writer.h"
#include "shared/memory_timeline.h"
#include "shared/rank_grid.h"
#include "traces/trace_builder.h"
#include "traces/trace_io.h"
#ifdef TANDEM_HAVE_CUDA_DRIVER
#include "exec/cuda/cuda_driver.h"
#endif

namespace tandem::exec {
namespace {

[[noreturn]] void abort_job(int rank, const std::string& msg, int code) {
  std::fprintf(stderr, "tandem run: rank %d: %s\n", rank, msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// A test-only fault, TANDEM_EXEC_FAULT="KIND:RANK:STEP" (STEP 1-based): "kill" makes RANK raise
// SIGKILL before STEP's barrier, "hang" makes it stop making progress there (alive, waiting for a
// signal), "stop" makes it raise SIGSTOP once STEP has started, after the barrier (as a debugger
// or a wedged node would), so that the others wait on it inside the step.
void maybe_fault(int rank, int step, bool step_started) {
  const char* f = std::getenv("TANDEM_EXEC_FAULT");
  if (!f) return;
  char kind[8] = {0};
  int r = -1, s = -1;
  if (std::sscanf(f, "%7[a-z]:%d:%d", kind, &r, &s) != 3 || r != rank || s != step) return;
  const std::string k = kind;
  if (step_started) {
    if (k == "stop") raise(SIGSTOP);
    return;
  }
  if (k == "kill") raise(SIGKILL);
  if (k == "hang")
    for (;;) pause();
}

// A barrier that keeps the stall watchdog: MPI_Ibarrier polled until the timeout; a rank stalled
// here waits on every other rank.
void barrier(StallExchange& stalls, int rank, int world, double timeout_s, int step, bool yield) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  const auto t0 = std::chrono::steady_clock::now();
  int flag = 0;
  while (!flag) {
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      std::vector<int> others;
      for (int r = 0; r < world; ++r)
        if (r != rank) others.push_back(r);
      stalls.report_and_abort("no progress for " + std::to_string(timeout_s) +
                                  " s, waiting at the barrier before step " + std::to_string(step + 1) +
                                  " for the other ranks",
                              others);
    }
    if (yield) sched_yield();
  }
}

// Every rank's variable-length `mine` on rank 0, one after the other in rank order: the values and,
// per rank, its count and its offset in them (empty on the other ranks).
struct Gathered {
  std::vector<double> values;
  std::vector<int> counts, displs;
};

Gathered gather_to_rank0(const std::vector<double>& mine, int rank, int world) {
  Gathered g;
  const int n = int(mine.size());
  g.counts.resize(size_t(world));
  g.displs.resize(size_t(world));
  MPI_Gather(&n, 1, MPI_INT, g.counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < world; ++r) g.displs[size_t(r)] = total, total += g.counts[size_t(r)];
    g.values.resize(size_t(total));
  }
  MPI_Gatherv(mine.data(), n, MPI_DOUBLE, g.values.data(), g.counts.data(), g.displs.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  return g;
}

// The rank's driver: host (MPI + CPU kernels) or, where it is built, CUDA (exec/cuda/).
struct RankDriver {
  std::unique_ptr<MpiComm> comm;
  std::unique_ptr<Driver> driver;
};

RankDriver make_driver(const RunArgs& args, const Schedule& schedule, int rank) {
  RankDriver d;
  if (args.driver == "cuda") {
#ifdef TANDEM_HAVE_CUDA_DRIVER
    check_cuda_scenario(schedule.scenario());
    d.driver = std::make_unique<CudaDriver>(schedule, rank);
    return d;
#else
    throw Error("--driver cuda: the CUDA driver is not built in this version; use --driver host");
#endif
  }
  check_host_scenario(schedule.scenario());
  d.comm = std::make_unique<MpiComm>(schedule, rank);
  d.driver = make_host_driver(d.comm.get());
  return d;
}


}  // namespace

int run_rank_worker(const RunArgs& args) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // Freed before MPI_Finalize (it holds a communicator).
  auto stall_exchange = std::make_unique<StallExchange>(stall_grace_s(args.timeout_s));
  StallExchange& stalls = *stall_exchange;
  try {
    std::vector<std::string> sets = args.sets;
    sets.push_back("cluster.gpus=" + std::to_string(world));
    Schedule schedule(load_scenario(args.scenario, sets));
    const Scenario& sc = schedule.scenario();
    if (schedule.world_size() != world)
      throw Error(sc.origin + ": the strategy needs " + std::to_string(schedule.world_size()) + " ranks, mpirun started " +
                  std::to_string(world));
    ExecOptions opt;
    opt.steps = args.steps;
    opt.timeout_s = args.timeout_s;
    opt.yield_when_idle = yields_when_idle(world, args.cores, args.blas_threads);
    opt.host_adam_threads = std::max(1, std::min(online_cores(), args.cores / world));  // #16: host Adam threads
    RankDriver rd = make_driver(args, schedule, rank);
    Driver& driver = *rd.driver;
    Runtime rt(schedule, rank, driver, opt);

    const int steps = args.steps;
    std::vector<double> loss(steps, NAN), wall(steps, 0);
    std::vector<StepResult> results(static_cast<size_t>(steps));
    for (int s = 0; s < steps; ++s) {
      maybe_fault(rank, s + 1, false);
      barrier(stalls, rank, world, args.timeout_s, s, opt.yield_when_idle);
      maybe_fault(rank, s + 1, true);
      StepResult r = rt.run_step(s);
      if (r.loss_sum) loss[s] = *r.loss_sum;
      wall[s] = r.wall_s;
      if (!args.trace_path.empty()) results[size_t(s)] = std::move(r);
    }
    // The slowest rank's time of each step, on every rank: the traced step is the steady-state
    // step nearest the median (the one `iteration time` reports), not the last one, so that the
    // trace, the calibration and the report all describe the same, typical step.
    std::vector<double> step_s(wall);
    MPI_Allreduce(MPI_IN_PLACE, step_s.data(), steps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const StepSpread spread = step_spread(step_s);
    // The steady-state steps' Alloc and Free durations (Rank.memory_op_step_s), the first
    // kMemoryOpSteps of them (a bound on the trace's size): the calibration fits the host driver's
    // Alloc/Free costs over all of these, not over the traced step alone.
    constexpr int kMemoryOpSteps = 64;
    std::vector<double> memory_op_s;
    if (!args.trace_path.empty()) {
      const Program& mine = rt.program();
      for (int st = spread.first_step; st < std::min(steps, spread.first_step + kMemoryOpSteps); ++st)
        for (const Task& t : mine.tasks)
          if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) {
            const TaskTimes& tt = results[size_t(st)].tasks[t.id];
            memory_op_s.push_back(tt.end_s - tt.start_s);
          }
    }
    StepResult last = std::move(results[size_t(spread.representative)]);
    results.clear();
    // The machine's state as this run saw it (a few ms, after the steps so that it does not
    // disturb them): JSON state_probe, Trace.state_probe (docs/exec.md, "The machine's state").
    const MachineStateProbe state = probe_machine_state(opt.yield_when_idle);

    // Per rank: losses, step wall times, peaks; gathered to rank 0.
    std::vector<double> mine;
    for (double x : loss) mine.push_back(x);
    for (double x : wall) mine.push_back(x);
    mine.push_back(double(rt.peak_device_bytes()));
    mine.push_back(double(rt.peak_host_bytes()));
    // The planner's figure for this rank (pipeline-aware when pp > 1: shared/pipeline_memory.h).
    mine.push_back(double(memory_profile(schedule, rank).peak_device_bytes));
    const int per = int(mine.size());
    std::vector<double> all(rank == 0 ? size_t(per) * world : 0);
    MPI_Gather(mine.data(), per, MPI_DOUBLE, all.data(), per, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    if (!args.trace_path.empty()) {
      // The traced step's events and memory samples of every rank, on one time origin.
      std::vector<double> ev;
      ev.reserve(last.tasks.size() * 2 + last.memory.size() * 3);
      for (const TaskTimes& t : last.tasks) ev.push_back(t.start_s), ev.push_back(t.end_s);
      for (const MemorySample& m : last.memory)
        ev.push_back(m.time_s), ev.push_back(double(m.device_bytes)), ev.push_back(double(m.host_bytes));
      const Gathered events = gather_to_rank0(ev, rank, world);
      const Gathered mops = gather_to_rank0(memory_op_s, rank, world);
      // Every rank's start of the traced step, to put all ranks' times on one origin: the earliest
      // rank's start (exec/step_origin.h).
      std::vector<double> origins(rank == 0 ? size_t(world) : 0);
      MPI_Gather(&last.origin_s, 1, MPI_DOUBLE, origins.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        const std::vector<double> shift = origin_shifts(origins);
        TraceBuilder tb(schedule, driver.name(), driver.machine());
        for (int r = 0; r < world; ++r) {
          Program p = r == rank ? rt.program() : schedule.program(r);
          tb.begin_rank(p);
          const double* e = events.values.data() + events.displs[size_t(r)];
          const double d = shift[size_t(r)];
          const size_t nt = p.tasks.size();
          for (size_t i = 0; i < nt; ++i) tb.task(r, TaskId(i), e[2 * i] + d, e[2 * i + 1] + d);
          for (size_t j = 2 * nt; j + 3 <= size_t(events.counts[size_t(r)]); j += 3)
            tb.memory(r, e[j] + d, int64_t(e[j + 1]), int64_t(e[j + 2]));
        }
        proto::Trace trace = tb.finish();
        proto::StateProbe& sp = *trace.mutable_state_probe();
        sp.set_allreduce_256b_s(state.allreduce_256b_s);
        sp.set_allreduce_16kib_s(state.allreduce_16kib_s);
        sp.set_zero_fill_1mib_s(state.zero_fill_1mib_s);
        sp.set_compute_s(state.compute_s);
        sp.set_reps(uint32_t(state.reps));
        sp.set_ranks(uint32_t(state.ranks));
        for (proto::Rank& pr : *trace.mutable_ranks()) {
          for (int s = 0; s < steps; ++s) pr.add_step_times_s(all[size_t(pr.rank()) * per + steps + s]);
          pr.set_traced_step(spread.representative);
          const int r = pr.rank();
          for (int i = 0; i < mops.counts[size_t(r)]; ++i)
            pr.add_memory_op_step_s(mops.values[size_t(mops.displs[size_t(r)] + i)]);
          pr.set_memory_op_first_step(spread.first_step);
        }
        write_trace(trace, args.trace_path);
      }
    }

    if (rank == 0) {
      const RankGrid& g = schedule.grid();
      const int reporter = g.rank({0, g.pp() - 1, 0, 0});
      const double tokens = double(sc.strategy.global_batch) * sc.model.seq_len;
      std::vector<double> losses(steps);
      for (int s = 0; s < steps; ++s) losses[s] = all[size_t(reporter) * per + s] / tokens;
      const double median = spread.median_s;
      std::vector<int64_t> peak(world), host(world), planned(world);
      for (int r = 0; r < world; ++r) {
        peak[r] = int64_t(all[size_t(r) * per + 2 * steps]);
        host[r] = int64_t(all[size_t(r) * per + 2 * steps + 1]);
        planned[r] = int64_t(all[size_t(r) * per + 2 * steps + 2]);
      }
      const int64_t max_peak = *std::max_element(peak.begin(), peak.end());
      const double floor = MarkovChain::entropy_nats();
      if (args.json) {
        // Losses and times with 17 significant digits (%.17g: they read back exactly).
        JsonWriter j(JsonWriter::Spacing::kSpaced);
        j.begin_object().key("scenario").string(sc.name).key("driver").string(driver.name());
        j.key("ranks").integer(world).key("steps").integer(steps).key("losses").begin_array();
        for (int s = 0; s < steps; ++s) j.number(losses[s], 17);
        j.end_array().key("loss_floor").number(floor, 17).key("iteration_time_s").number(median, 17);
        j.key("step_times_s").begin_array();
        for (int s = 0; s < steps; ++s) j.number(step_s[s], 17);
        j.end_array().key("steady_state").begin_object().key("first_step").integer(spread.first_step + 1);
        j.key("steps").integer(spread.count).key("min_s").number(spread.min_s, 17).key("q1_s").number(spread.q1_s, 17);
        j.key("median_s").number(spread.median_s, 17).key("q3_s").number(spread.q3_s, 17);
        j.key("max_s").number(spread.max_s, 17).key("mean_s").number(spread.mean_s, 17);
        j.key("relative_iqr").number(spread.relative_iqr(), 6).key("traced_step").integer(spread.representative + 1);
        j.end_object().key("placement").begin_object().key("cores").integer(args.cores);
        j.key("ranks").integer(world).key("blas_threads_per_rank").integer(args.blas_threads);
        j.key("bind").string(args.cores > 0 && world <= args.cores ? "core" : "none");
        j.key("yield_when_idle").boolean(yields_when_idle(world, args.cores, args.blas_threads)).end_object();
        j.key("state_probe").begin_object().key("allreduce_256b_s").number(state.allreduce_256b_s, 6);
        j.key("allreduce_16kib_s").number(state.allreduce_16kib_s, 6);
        j.key("zero_fill_1mib_s").number(state.zero_fill_1mib_s, 6).key("compute_s").number(state.compute_s, 6);
        j.key("reps").integer(state.reps).end_object();
        j.key("peak_memory_bytes").integer(max_peak);
        j.key("peak_memory_bytes_per_rank").begin_array();
        for (int r = 0; r < world; ++r) j.integer(peak[r]);
        j.end_array().key("planned_peak_memory_bytes_per_rank").begin_array();
        for (int r = 0; r < world; ++r) j.integer(planned[r]);
        j.end_array().key("peak_host_bytes_per_rank").begin_array();
        for (int r = 0; r < world; ++r) j.integer(host[r]);
        j.end_array().end_object();
        std::cout << j.take() << "\n" << std::flush;
      } else {
        std::printf("tandem run: %s on %d rank%s (%s driver, %s), %d steps\n", sc.name.c_str(), world,
                    world == 1 ? "" : "s", driver.name(), to_string(sc.strategy.dtype), steps);
        for (int s = 0; s < steps; ++s) std::printf("step %d  loss %.6f  (%.4f s)\n", s + 1, losses[s], step_s[s]);
        std::printf("loss floor (entropy of the data's Markov chain): %.4f nats\n", floor);
        std::printf("placement: %d rank%s on %d core%s, %d BLAS thread%s per rank, %s, %s\n", world,
                    world == 1 ? "" : "s", args.cores, args.cores == 1 ? "" : "s", args.blas_threads,
                    args.blas_threads == 1 ? "" : "s",
                    args.cores > 0 && world <= args.cores ? "cores of its own per rank (bound)"
                                                          : "ranks share cores (unbound)",
                    yields_when_idle(world, args.cores, args.blas_threads) ? "yielding while waiting"
                                                                            : "polling while waiting");
        std::printf("iteration time: %.6f s (median of steps %d..%d, slowest rank)\n", median, spread.first_step + 1,
                    steps);
        std::printf("step spread: min %.6f  q1 %.6f  q3 %.6f  max %.6f s  (IQR %.1f %% of the median)\n",
                    spread.min_s, spread.q1_s, spread.q3_s, spread.max_s, 100 * spread.relative_iqr());
        if (!args.trace_path.empty()) std::printf("traced step: %d (nearest the median)\n", spread.representative + 1);
        std::printf("peak device memory per rank (measured / planned):\n");
        for (int r = 0; r < world; ++r)
          std::printf("  rank %d: %lld / %lld bytes\n", r, (long long)peak[r], (long long)planned[r]);
        if (!args.trace_path.empty()) std::printf("trace: %s\n", args.trace_path.c_str());
        std::fflush(stdout);
      }
    }
  } catch (const StallError& e) {
    stalls.report_and_abort(e.what(), e.waits_on());
  } catch (const Error& e) {
    abort_job(rank, e.what(), e.exit_code());
  } catch (const std::exception& e) {
    abort_job(rank, std::string("internal error: ") + e.what(), exit_code_of(ErrorKind::kInternal));
  }
  stall_exchange.reset();
  MPI_Finalize();
  return 0;
}

}  // namespace tandem::exec
