// tandem run [-n RANKS] [--driver host|cuda] SCENARIO [--steps N] [--set k=v ...] [--trace FILE]
//            [--json] [--timeout S]
// Trains the scenario's schedule for real: the launcher checks the scenario, then re-executes
// itself under `mpirun -n RANKS` in worker mode (one process per rank; exec/rank_worker.cc).
// Exit codes: 0 ok, 2 bad input, other non-zero for a runtime failure (4: a rank stalled).
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "exec/collective_probe.h"
#include "exec/host_driver.h"
#include "exec/run_args.h"
#include "exec/state_probe.h"
#include "shared/cli_args.h"
#include "shared/error.h"
#include "shared/schedule.h"
#ifdef TANDEM_HAVE_CUDA_DRIVER
#include "exec/cuda/cuda_driver.h"
#endif

namespace po = boost::program_options;
using namespace tandem;

namespace {

std::string self_path(const char* argv0) {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) return std::string(buf, size_t(n));
  return argv0;
}

}  // namespace

int main(int argc, char** argv) {
  exec::RunArgs a;
  po::options_description opts("tandem run SCENARIO [options]");
  opts.add_options()
      ("help,h", "this help")
      ("ranks,n", po::value(&a.ranks), "number of ranks (processes); overrides cluster.gpus")
      ("driver", po::value(&a.driver), "host (MPI processes, CPU kernels) or cuda")
      ("steps", po::value(&a.steps), "training steps (default 5)")
      ("set", po::value(&a.sets)->composing(), "override a scenario field: --set strategy.tp=2 (repeatable)")
      ("trace", po::value(&a.trace_path), "write the measured trace of the last step to FILE")
      ("json", "print one JSON object instead of the summary")
      ("probe-state", po::value(&a.state_probe_path),
       "with -n RANKS, no scenario: take the machine state probe (all-reduces, zero fill, compute; a few ms) "
       "under a run's placement and write it to FILE, for tandem sim --state-probe")
      ("timeout", po::value(&a.timeout_s), "seconds without progress before a rank aborts the run (default 60)")
      ("scenario", po::value(&a.scenario), "scenario file");
  po::options_description hidden;
  hidden.add_options()("worker", "run as one rank under mpirun")
      ("cores", po::value(&a.cores), "the launcher's count of online cores")
      ("blas-threads", po::value(&a.blas_threads), "BLAS threads per rank the launcher set")
      // `tandem calibrate` on a host trace: time this machine's collectives over a range of sizes
      // on -n ranks placed as a run's, instead of training (exec/collective_probe.h).
      ("probe-collectives", po::value(&a.probe_path), "write a probe of the MPI collectives to FILE");
  po::variables_map vm;
  if (auto stop = parse_command_line("tandem run", argc, argv, opts, {{"scenario", 1}}, vm, &hidden)) return *stop;
  a.json = vm.count("json") > 0;
  a.worker = vm.count("worker") > 0;
  return run_main("tandem run", [&] {
    if (a.worker && !a.probe_path.empty()) return exec::run_collective_probe_worker(a.probe_path, a.cores, a.blas_threads);
    if (a.worker && !a.state_probe_path.empty())
      return exec::run_state_probe_worker(a.state_probe_path, a.cores, a.blas_threads);
    if (a.worker) return exec::run_rank_worker(a);
    reject_empty_paths(vm, {"trace", "probe-collectives", "probe-state"});
    if (!a.probe_path.empty() && a.ranks < 1) throw Error("--probe-collectives: needs -n RANKS");
    if (!a.state_probe_path.empty() && a.ranks < 1) throw Error("--probe-state: needs -n RANKS");
    if (!a.state_probe_path.empty() && !a.probe_path.empty())
      throw Error("--probe-state and --probe-collectives: one probe at a time");
    if (!a.state_probe_path.empty() && !a.scenario.empty())
      throw Error("--probe-state: takes no scenario (a run takes the probe after its steps itself)");
    if (!a.state_probe_path.empty()) a.probe_path.clear();
    const bool probing = !a.probe_path.empty() || !a.state_probe_path.empty();
    if (a.scenario.empty() && !probing) throw Error("a scenario file is required (tandem run --help)");
    if (a.steps < 1) throw Error("--steps: expected at least 1, got " + std::to_string(a.steps));
    if (!(a.timeout_s > 0)) throw Error("--timeout: expected a positive number of seconds");
    if (vm.count("ranks") && a.ranks < 1) throw Error("-n: expected at least 1 rank, got " + std::to_string(a.ranks));
#ifndef TANDEM_HAVE_CUDA_DRIVER
    if (a.driver == "cuda")
      throw Error("--driver cuda: the CUDA driver is not built in this version (no CUDA toolkit at configure "
                  "time); use --driver host");
#endif
    if (a.driver != "host" && a.driver != "cuda")
      throw Error("--driver: expected host or cuda, got '" + a.driver + "'");
    int ranks = a.ranks;
    if (!probing) {
      std::vector<std::string> sets = a.sets;
      if (a.ranks > 0) sets.push_back("cluster.gpus=" + std::to_string(a.ranks));
      if (a.driver == "host" && load_scenario(a.scenario, sets).strategy.dtype == DType::kFp8) {
        // The CPU has no FP8: every rank runs the same step in fp32 (strategy.dtype=fp32 is passed on).
        std::cerr << "tandem run: strategy.dtype fp8: the host driver computes this run in fp32 (no FP8 on the "
                     "CPU); the plan, memory and trace are those of strategy.dtype=fp32\n";
        sets.push_back("strategy.dtype=fp32");
        a.sets.push_back("strategy.dtype=fp32");
      }
      // Check everything a worker would, before starting any process.
      Schedule schedule(load_scenario(a.scenario, sets));
      print_scenario_notes("tandem run", schedule.scenario());
#ifdef TANDEM_HAVE_CUDA_DRIVER
      if (a.driver == "cuda") {
        exec::check_cuda_scenario(schedule.scenario());
        if (exec::cuda_device_count() == 0)
          throw Error("--driver cuda: no CUDA device is visible to this process; use --driver host");
      } else
#endif
        exec::check_host_scenario(schedule.scenario());
      ranks = schedule.world_size();
    }
    // Placement (docs/exec.md, "Where the time goes"): BLAS threads pinned so that ranks x threads
    // do not exceed the cores (OpenBLAS's default, one thread per core in every rank, made 2 ranks
    // on 2 cores run 4 spinning threads: GEMMs 200x slower); ranks bound to a core each when they
    // fit, left to the OS scheduler when they share cores.
    const exec::CorePlacement place = exec::core_placement_for(ranks, exec::online_cores());
    const std::string threads = std::to_string(place.blas_threads);
    setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 1);
    setenv("OMP_NUM_THREADS", threads.c_str(), 1);

    std::vector<std::string> cmd = {"mpirun", "-n", std::to_string(ranks), "--oversubscribe", "--allow-run-as-root"};
    if (place.cores_per_rank > 1)
      cmd.insert(cmd.end(), {"--map-by", "slot:PE=" + std::to_string(place.cores_per_rank)});
    cmd.insert(cmd.end(), {"--bind-to", place.bind,
                                    // Containers forbid the cross-memory-attach copy path; ranks that
                                    // share cores should yield while they wait, ranks on cores of
                                    // their own poll (exec/run_args.h).
                                    "--mca", "btl_vader_single_copy_mechanism", "none", "--mca",
                                    "mpi_yield_when_idle", place.yield_when_idle ? "1" : "0", self_path(argv[0]), "--worker",
                                    "--cores", std::to_string(place.cores), "--blas-threads", threads});
    if (!a.probe_path.empty())
      cmd.insert(cmd.end(), {"--probe-collectives", a.probe_path});
    else if (!a.state_probe_path.empty())
      cmd.insert(cmd.end(), {"--probe-state", a.state_probe_path});
    else
      cmd.insert(cmd.end(), {a.scenario, "--driver", a.driver, "--steps", std::to_string(a.steps), "--timeout",
                             std::to_string(a.timeout_s)});
    for (const std::string& s : a.sets) cmd.insert(cmd.end(), {"--set", s});
    if (!a.trace_path.empty()) cmd.insert(cmd.end(), {"--trace", a.trace_path});
    if (a.json) cmd.push_back("--json");
    std::vector<char*> cargv;
    for (std::string& s : cmd) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    std::cout.flush();
    execvp("mpirun", cargv.data());
    throw Error("cannot start mpirun (is openmpi-bin installed?)", ErrorKind::kFault);
  });
}
