#include "traces/calibration/machine_state_probe.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "shared/error.h"
#include "shared/parse_whole.h"

namespace tandem {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

double min_of_round_medians(const std::vector<double>& times, int rounds) {
  if (rounds < 1 || times.empty() || times.size() % size_t(rounds) != 0)
    throw Error("machine state probe: " + std::to_string(times.size()) + " times do not split into " +
                std::to_string(rounds) + " rounds", ErrorKind::kInternal);
  const size_t n = times.size() / size_t(rounds);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < rounds; ++r) {
    best = std::min(best, median_of({times.begin() + long(size_t(r) * n), times.begin() + long(size_t(r + 1) * n)}));
  }
  return best;
}

StateRatios state_ratios(const MachineStateProbe& now, const MachineStateProbe& then) {
  if (!now.valid() || !then.valid()) throw Error("machine state probe: a probe without positive times");
  StateRatios r;
  r.memory = now.zero_fill_1mib_s / then.zero_fill_1mib_s;
  r.communication = r.memory;
  r.compute = now.compute_s / then.compute_s;
  return r;
}

void set_profile_state_probe(proto::CalibrationProfile& profile, const std::vector<MachineStateProbe>& probes,
                             bool taken_alone) {
  if (probes.empty()) throw Error("machine state probe: no probe to take the calibration's state from", ErrorKind::kBadInput);
  std::vector<double> ar256, ar16k, fill, compute;
  for (size_t i = 0; i < probes.size(); ++i) {
    const MachineStateProbe& p = probes[i];
    if (!p.valid())
      throw Error("machine state probe " + std::to_string(i + 1) + " of " + std::to_string(probes.size()) +
                  ": a field without a positive time", ErrorKind::kBadInput);
    ar256.push_back(p.allreduce_256b_s), ar16k.push_back(p.allreduce_16kib_s);
    fill.push_back(p.zero_fill_1mib_s), compute.push_back(p.compute_s);
  }
  proto::MachineState& ms = *profile.mutable_state_probe();
  ms.set_runs(uint32_t(probes.size()));
  ms.set_allreduce_256b_s(median_of(std::move(ar256)));
  ms.set_allreduce_16kib_s(median_of(std::move(ar16k)));
  ms.set_zero_fill_1mib_s(median_of(std::move(fill)));
  ms.set_compute_s(median_of(std::move(compute)));
  ms.set_taken_alone(taken_alone);
}

MachineStateProbe profile_state_probe(const proto::CalibrationProfile& profile) {
  MachineStateProbe p;
  if (!profile.has_state_probe()) return p;
  const proto::MachineState& s = profile.state_probe();
  p.allreduce_256b_s = s.allreduce_256b_s();
  p.allreduce_16kib_s = s.allreduce_16kib_s();
  p.zero_fill_1mib_s = s.zero_fill_1mib_s();
  p.compute_s = s.compute_s();
  return p;
}

void scale_to_state(proto::CalibrationProfile& profile, const StateRatios& r) {
  for (proto::CollectiveTime& c : *profile.mutable_collectives()) {
    c.set_mean_s(c.mean_s() * r.communication);
    c.set_median_s(c.median_s() * r.communication);
    c.set_mean_wait_s(c.mean_wait_s() * r.communication);
  }
  for (proto::CollectiveProbe& c : *profile.mutable_collective_probe()) c.set_time_s(c.time_s() * r.communication);
  for (proto::CollectiveProbe& c : *profile.mutable_shared_collective_probe()) c.set_time_s(c.time_s() * r.communication);
  for (proto::MemoryOpTime& m : *profile.mutable_memory_ops()) m.set_mean_s(m.mean_s() * r.memory);
  for (proto::KernelTime& k : *profile.mutable_kernels()) {
    k.set_mean_s(k.mean_s() * r.compute);
    k.set_median_s(k.median_s() * r.compute);
  }
  for (proto::GemmProbe& g : *profile.mutable_gemm_probe()) g.set_time_s(g.time_s() * r.compute);
  profile.set_task_overhead_s(profile.task_overhead_s() * r.compute);
}

std::string format_state_probe(const MachineStateProbe& p) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "allreduce_256b_s\t%.9e\nallreduce_16kib_s\t%.9e\nzero_fill_1mib_s\t%.9e\ncompute_s\t%.9e\nreps\t%d\n"
                "ranks\t%d\n",
                p.allreduce_256b_s, p.allreduce_16kib_s, p.zero_fill_1mib_s, p.compute_s, p.reps, p.ranks);
  return buf;
}

MachineStateProbe parse_state_probe(const std::string& text, const std::string& path) {
  MachineStateProbe p;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty()) continue;
    const auto bad = [&](const std::string& what) {
      return Error(path + ":" + std::to_string(no) + ": " + what + " (expected key<TAB>value)", ErrorKind::kBadInput);
    };
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw bad("no tab");
    const std::string key = line.substr(0, tab), value = line.substr(tab + 1);
    double v = 0;
    if (!parse_whole(value, &v)) throw bad("'" + value + "' is not a number");
    if (key == "allreduce_256b_s") p.allreduce_256b_s = v;
    else if (key == "allreduce_16kib_s") p.allreduce_16kib_s = v;
    else if (key == "zero_fill_1mib_s") p.zero_fill_1mib_s = v;
    else if (key == "compute_s") p.compute_s = v;
    else if (key == "reps") p.reps = int(v);
    else if (key == "ranks") p.ranks = int(v);
    else throw bad("unknown key '" + key + "'");
  }
  if (!p.valid()) throw Error(path + ": a machine state probe needs positive allreduce_256b_s, allreduce_16kib_s, "
                              "zero_fill_1mib_s and compute_s", ErrorKind::kBadInput);
  return p;
}

}  // namespace tandem
