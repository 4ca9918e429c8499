// tandem calibrate TRACE [TRACE ...] SCENARIO [--set k=v ...] -o PROFILE: the measured time of each
// kernel and collective shape of one or several measured runs of one schedule
// (traces/calibration/calibration_profile.h), for `tandem sim --calibration PROFILE`. The scenario
// (with the same --set) names the schedule the traces were measured on; its digest must match
// theirs. Prints each run's iteration time and step spread and the spread between the runs, and
// warns (exit 0) when a run's steps spread more than kNoisyRunRelativeIqr. With one state probe
// per run (--state-probe), groups the runs by machine state (traces/calibration/machine_states.h)
// and warns when they span more than one.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "exec/run_args.h"
#include "shared/cli_args.h"
#include "traces/calibration/calibration_profile.h"
#include "shared/error.h"
#include "shared/input_file.h"
#include "traces/calibration/collective_probe_table.h"
#include "traces/calibration/gemm_probe.h"
#include "traces/calibration/machine_state_probe.h"
#include "traces/calibration/machine_states.h"
#include "traces/trace_io.h"

extern char** environ;

namespace po = boost::program_options;

namespace {

// This machine's MPI collectives on `ranks` ranks placed as the host run placed them: `tandem run
// --probe-collectives FILE -n RANKS` (exec/collective_probe.h), the tandem-run next to this program.
std::vector<tandem::CollectiveProbePoint> probe_collectives(int ranks, const std::string& out) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw tandem::Error("calibrate: cannot find this program's directory", tandem::ErrorKind::kFault);
  std::string run(self, size_t(n));
  run = run.substr(0, run.rfind('/') + 1) + "tandem-run";
  const std::string file = out + ".collectives." + std::to_string(getpid()) + ".tsv";
  std::vector<std::string> args = {run, "--probe-collectives", file, "-n", std::to_string(ranks)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int status = 0;
  std::cout.flush();
  if (posix_spawn(&pid, run.c_str(), nullptr, nullptr, argv.data(), environ) != 0 || waitpid(pid, &status, 0) != pid)
    throw tandem::Error("calibrate: cannot start " + run + " for the collective probe (or pass --no-probe)",
                        tandem::ErrorKind::kFault);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(file.c_str());
    throw tandem::Error("calibrate: the collective probe (" + run + " --probe-collectives) failed (or pass --no-probe)",
                        tandem::ErrorKind::kFault);
  }
  const std::string text = tandem::read_input_file(file, "collective probe", 1 << 20);
  std::remove(file.c_str());
  return tandem::parse_probe(text, file);
}

// Each run's iteration time and step spread, the spread between the runs, and a warning for a
// noisy run: the profile holds its times, so a prediction from it is off by its noise.
void print_runs(const tandem::proto::CalibrationProfile& prof) {
  double lo = HUGE_VAL, hi = 0;
  std::vector<double> medians;
  // A host run whose ranks shared the cores: what make_calibration took out of its times.
  const bool shared = prof.cores() > 0 && uint64_t(prof.ranks()) * prof.blas_threads_per_rank() > prof.cores();
  for (const tandem::proto::CalibrationRun& r : prof.runs())
    if (shared && r.has_core_share())
      std::printf("  run %s: %u ranks x %u BLAS thread%s on %u cores: its kernels ran at %.0f %% of a core; the "
                  "profile holds their time alone\n",
                  r.name().c_str(), prof.ranks(), prof.blas_threads_per_rank(),
                  prof.blas_threads_per_rank() == 1 ? "" : "s", prof.cores(), 100 * r.core_share());
  for (const tandem::proto::CalibrationRun& r : prof.runs()) {
    if (r.steps() == 0) continue;
    std::printf("  run %s: iteration %.3f ms (median of %u steady-state steps), step spread IQR %.1f %% of it\n",
                r.name().c_str(), 1e3 * r.iteration_s(), r.steps(), 100 * r.relative_iqr());
    lo = std::min(lo, r.iteration_s()), hi = std::max(hi, r.iteration_s());
    medians.push_back(r.iteration_s());
  }
  if (medians.size() > 1) {
    std::sort(medians.begin(), medians.end());
    const size_t n = medians.size();
    const double median = n % 2 ? medians[n / 2] : 0.5 * (medians[n / 2 - 1] + medians[n / 2]);
    std::printf("  run-to-run spread: %.3f .. %.3f ms, (max - min) %.1f %% of the median %.3f ms\n", 1e3 * lo, 1e3 * hi,
                100 * (hi - lo) / median, 1e3 * median);
  }
  std::fflush(stdout);
  for (const tandem::proto::CalibrationRun& r : prof.runs())
    if (r.relative_iqr() > tandem::kNoisyRunRelativeIqr)
      std::fprintf(stderr,
                   "tandem calibrate: warning: %s is a noisy run: its steady-state steps spread %.1f %% of their "
                   "median (IQR; above %.0f %%); every prediction from this profile is off by as much. Calibrate on "
                   "a quieter machine or over several runs (tandem calibrate TRACE TRACE ... SCENARIO)\n",
                   r.name().c_str(), 100 * r.relative_iqr(), 100 * tandem::kNoisyRunRelativeIqr);
}

// With one state probe per run (taken alone right before it, in the order of the traces): the runs
// grouped by machine state (traces/calibration/machine_states.h); with more than one group, each
// group's own times go into prof.states (none with one group: the profile's own fields are that
// state). Returns the line that says the states, or why they were not told apart (the probes do
// not pair with the runs, one to one).
std::string group_runs_by_state(tandem::proto::CalibrationProfile& prof, const tandem::Schedule& schedule,
                                const std::vector<tandem::NamedTrace>& runs,
                                const std::vector<tandem::MachineStateProbe>& probes,
                                const tandem::MeasuredMachine& machine) {
  if (probes.size() != runs.size())
    return "machine states: not told apart (" + std::to_string(probes.size()) + " state probes for " +
           std::to_string(runs.size()) + " runs; one per run, in the order of the traces, tells them)";
  const std::vector<std::vector<size_t>> groups = tandem::group_by_state(probes);
  if (groups.size() > 1)
    for (const std::vector<size_t>& g : groups) {
      std::vector<tandem::NamedTrace> in;
      std::vector<tandem::MachineStateProbe> probed;
      for (size_t i : g) in.push_back(runs[i]), probed.push_back(probes[i]);
      tandem::proto::CalibrationProfile state = tandem::make_calibration(schedule, in, machine);
      tandem::set_profile_state_probe(state, probed, true);
      tandem::add_state(prof, state);
    }
  return tandem::describe_states(probes, groups);
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description opts("tandem calibrate TRACE [TRACE ...] SCENARIO [--set k=v ...] -o PROFILE");
  opts.add_options()("help,h", "show this help")("output,o", po::value<std::string>(), "the profile to write")(
      "set", po::value<std::vector<std::string>>()->composing(), "the overrides the trace was measured with")(
      "no-probe", "a host trace: leave out the probes of this CPU's GEMM rate and of its MPI collectives (run them on "
      "the machine measured)")(
      "no-shared-probe", "a host trace whose ranks fit the cores: leave out the second collective probe, with twice as "
      "many ranks as fit them (~25 s on 2 cores); predictions whose ranks share the cores then cost their collectives "
      "as if each rank had a core, too fast")(
      "state-probe", po::value<std::vector<std::string>>()->composing(),
      "FILE (repeatable): a machine state probe taken alone right before a calibration run (tandem run --probe-state "
      "FILE -n RANKS), as a prediction's is; the profile's state is their median instead of the runs' own probes "
      "(taken after their steps). One per run, in the order of the traces: the runs are grouped by machine state "
      "and each state keeps its own times (tandem sim --state-probe predicts from the state it falls in)")(
      "args", po::value<std::vector<std::string>>(), "TRACE [TRACE ...] SCENARIO");
  po::variables_map vm;
  if (auto stop = tandem::parse_command_line("tandem calibrate", argc, argv, opts, {{"args", -1}}, vm)) return *stop;
  return tandem::run_main("tandem calibrate", [&] {
    if (!vm.count("args") || vm["args"].as<std::vector<std::string>>().size() < 2 || !vm.count("output"))
      tandem::throw_usage_error("needs TRACE [TRACE ...] SCENARIO and -o PROFILE", opts);
    tandem::reject_empty_paths(vm, {"output"});
    const auto& args = vm["args"].as<std::vector<std::string>>();
    std::vector<std::string> sets;
    if (vm.count("set")) sets = vm["set"].as<std::vector<std::string>>();
    tandem::Schedule schedule(tandem::load_scenario(args.back(), sets));
    tandem::print_scenario_notes("tandem calibrate", schedule.scenario());
    std::vector<tandem::proto::Trace> traces;
    for (size_t i = 0; i + 1 < args.size(); ++i) traces.push_back(tandem::read_trace(args[i]));
    std::vector<tandem::NamedTrace> runs;
    for (size_t i = 0; i < traces.size(); ++i) runs.push_back({&traces[i], args[i]});
    // A host trace was measured on this machine (the probes below time it too): the placement
    // `tandem run` pinned and printed for its ranks is core_placement_for(ranks, this machine's
    // cores), its BLAS threads per rank what every kernel time of the profile ran with.
    const tandem::exec::CorePlacement placement =
        tandem::exec::core_placement_for(schedule.world_size(), tandem::exec::online_cores());
    const tandem::MeasuredMachine machine{placement.cores, placement.blas_threads};
    tandem::proto::CalibrationProfile prof = tandem::make_calibration(schedule, runs, machine);
    std::string states_line;
    if (vm.count("state-probe")) {
      std::vector<tandem::MachineStateProbe> probes;
      for (const std::string& f : vm["state-probe"].as<std::vector<std::string>>())
        probes.push_back(tandem::parse_state_probe(tandem::read_input_file(f, "machine state probe", 1 << 16), f));
      tandem::set_profile_state_probe(prof, probes, true);
      states_line = group_runs_by_state(prof, schedule, runs, probes, machine);
    }
    // A host trace: this CPU's GEMM rate over a grid of shapes, for the shapes the run lacks
    // (traces/calibration/gemm_probe.h), with the BLAS threads a rank of the run had.
    if (prof.backend() == "host" && !vm.count("no-probe")) {
      tandem::GemmProbeOptions probe;
      probe.threads = placement.blas_threads;
      tandem::probe_gemm(prof, probe);
    }
    const std::string out = vm["output"].as<std::string>();
    // And this machine's collectives over the sizes other configurations use.
    if (prof.backend() == "host" && !vm.count("no-probe") && prof.ranks() >= 2)
      tandem::add_collective_probe(prof, probe_collectives(int(prof.ranks()), out));
    // And in a placement whose ranks share the cores (twice as many ranks as fit them), for
    // predictions of such runs (CalibrationProfile.shared_collective_probe; ~25 s on 2 cores). A
    // calibration whose own ranks shared the cores probed that placement above; a machine with
    // more than kMaxSharedProbeRanks / 2 cores is not probed so (its predictions fit the cores).
    constexpr int kMaxSharedProbeRanks = 8;
    const int shared = 2 * int(prof.cores() / std::max(1u, prof.blas_threads_per_rank()));
    if (prof.backend() == "host" && !vm.count("no-probe") && !vm.count("no-shared-probe") && prof.cores() > 0 &&
        shared >= 2 && shared <= kMaxSharedProbeRanks &&
        uint64_t(prof.ranks()) * prof.blas_threads_per_rank() <= prof.cores())
      tandem::add_shared_collective_probe(prof, shared, probe_collectives(shared, out));
    tandem::write_calibration(prof, out);
    std::cout << "tandem calibrate: " << prof.kernels_size() << " kernel shapes and " << prof.collectives_size()
              << " collective shapes";
    if (prof.gemm_probe_size())
      std::cout << " and " << prof.gemm_probe_size() << " probed GEMM shapes (" << prof.probe_blas_threads()
                << " BLAS thread" << (prof.probe_blas_threads() == 1 ? "" : "s") << ")";
    if (prof.collective_probe_size()) std::cout << " and " << prof.collective_probe_size() << " probed collectives";
    if (prof.shared_collective_probe_size())
      std::cout << " (and " << prof.shared_collective_probe_size() << " with " << prof.shared_probe_ranks()
                << " ranks sharing the cores)";
    std::cout << " from " << (runs.size() == 1 ? args[0] : std::to_string(runs.size()) + " runs") << " ("
              << prof.backend() << ", " << prof.machine() << ") -> " << out << "\n";
    if (prof.backend() == "host")
      std::cout << "  placement: " << prof.ranks() << " ranks, " << prof.blas_threads_per_rank() << " BLAS thread"
                << (prof.blas_threads_per_rank() == 1 ? "" : "s") << " per rank, " << prof.cores()
                << " cores; time between kernels " << prof.task_overhead_s() * 1e6 << " us (mean of "
                << prof.overhead_samples() << ")\n";
    if (prof.backend() == "host" && prof.rank_speed_spread() > 0)  // sim/rank_speed_lag.h
      std::cout << "  ranks' speed spread: " << prof.rank_speed_spread() * 100
                << " % (median over the runs of the ranks' kernel-time (largest - smallest) / mean)\n";
    if (!states_line.empty()) std::cout << "  " << states_line << "\n";
    std::cout.flush();
    print_runs(prof);
    // docs/exec.md "Session 19": in an oversubscribed run the ranks took turns on the cores, and
    // the turns are in its collectives' times, which the profile keeps as measured.
    if (prof.cores() > 0 && uint64_t(prof.ranks()) * prof.blas_threads_per_rank() > prof.cores())
      std::fprintf(stderr,
                   "tandem calibrate: warning: the runs' %u ranks shared the %u cores: their kernels are kept as their "
                   "time alone, but their collectives hold the time a rank waited for a core, and a prediction whose "
                   "ranks share cores shares them again (sim/host_core_share.h): it is too slow by as much. To "
                   "predict runs of any rank count, calibrate on runs whose ranks fit the cores (tandem run -n %u or "
                   "fewer)\n",
                   prof.ranks(), prof.cores(), prof.cores() / std::max(1u, prof.blas_threads_per_rank()));
    if (prof.states_size() > 1)
      std::fprintf(stderr,
                   "tandem calibrate: warning: the runs were measured in %d machine states (their state probes' zero "
                   "fills, above); a prediction without --state-probe pools them and is off by the states' "
                   "difference. Predict with tandem sim --calibration %s --state-probe NOW (NOW: tandem run "
                   "--probe-state NOW -n %u, taken right before the run predicted)\n",
                   prof.states_size(), out.c_str(), prof.ranks());
    return 0;
  });
}
