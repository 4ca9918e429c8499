#include "traces/calibration/calibration_profile.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "shared/error.h"
#include "traces/atomic_file.h"
#include "traces/scenario_digest.h"
#include "traces/task_label.h"

namespace tandem {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using KernelKey = std::tuple<int, int, std::array<int64_t, 6>>;
using CollectiveKey = std::tuple<int, int, int, int64_t>;

}  // namespace

proto::CalibrationProfile make_calibration(const Schedule& s, const proto::Trace& trace) {
  if (trace.scenario_digest() != scenario_digest(s.scenario()))
    throw Error("calibrate: the trace was measured on another scenario (digest " + trace.scenario_digest() +
                ", this scenario " + scenario_digest(s.scenario()) + ")");
  std::map<KernelKey, std::vector<double>> kernels;
  std::map<KernelKey, std::string> kernel_labels;
  std::map<CollectiveKey, std::vector<double>> collectives;
  std::map<CollectiveKey, std::string> collective_labels;
  for (const proto::Rank& r : trace.ranks()) {
    if (r.rank() < 0 || r.rank() >= s.world_size())
      throw Error("calibrate: the trace has rank " + std::to_string(r.rank()) + ", the schedule " +
                  std::to_string(s.world_size()) + " ranks");
    const Program p = s.program(r.rank());
    const proto::Events& e = r.events();
    for (int i = 0; i < e.task_id_size(); ++i) {
      const TaskId id = e.task_id(i);
      if (id >= p.tasks.size())
        throw Error("calibrate: rank " + std::to_string(r.rank()) + " task " + std::to_string(id) +
                    " is not in the schedule");
      const Task& t = p.tasks[id];
      const double d = e.end_s(i) - e.start_s(i);
      if (const Compute* c = std::get_if<Compute>(&t.op)) {
        KernelKey k{int(c->kernel), int(c->dtype), c->shape_dims()};
        kernels[k].push_back(d);
        if (!kernel_labels.count(k)) kernel_labels[k] = task_label(s, p, t);
      } else if (const Collective* c = std::get_if<Collective>(&t.op)) {
        const ProcessGroup& g = s.group(c->group);
        CollectiveKey k{int(c->op), int(g.kind), int(g.ranks.size()), c->bytes};
        collectives[k].push_back(d);
        if (!collective_labels.count(k)) collective_labels[k] = task_label(s, p, t);
      }
    }
  }
  proto::CalibrationProfile prof;
  prof.set_format(kCalibrationFormat);
  prof.set_backend(trace.backend());
  prof.set_machine(trace.machine());
  prof.set_scenario_digest(trace.scenario_digest());
  for (auto& [k, v] : kernels) {
    proto::KernelTime* kt = prof.add_kernels();
    kt->set_kernel(std::get<0>(k));
    kt->set_dtype(std::get<1>(k));
    for (int64_t d : std::get<2>(k)) kt->add_dims(d);
    kt->set_samples(uint32_t(v.size()));
    kt->set_median_s(median(std::move(v)));
    kt->set_label(kernel_labels[k]);
  }
  for (auto& [k, v] : collectives) {
    proto::CollectiveTime* ct = prof.add_collectives();
    ct->set_op(std::get<0>(k));
    ct->set_group_kind(std::get<1>(k));
    ct->set_group_size(std::get<2>(k));
    ct->set_bytes(std::get<3>(k));
    ct->set_samples(uint32_t(v.size()));
    ct->set_median_s(median(std::move(v)));
    ct->set_label(collective_labels[k]);
  }
  return prof;
}

void write_calibration(const proto::CalibrationProfile& profile, const std::string& path) {
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) throw Error("cannot serialise calibration profile " + path);
  write_file_atomic(path, bytes);
}

proto::CalibrationProfile read_calibration(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("calibration profile " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  proto::CalibrationProfile prof;
  if (!prof.ParseFromString(ss.str()) || prof.format() != kCalibrationFormat)
    throw Error("calibration profile " + path + ": not a tandem calibration profile (expected format " +
                kCalibrationFormat + "; write one with `tandem calibrate`)");
  for (const proto::KernelTime& k : prof.kernels())
    if (k.dims_size() != 6 || !(k.median_s() >= 0))
      throw Error("calibration profile " + path + ": bad kernel entry \"" + k.label() + "\"");
  return prof;
}

}  // namespace tandem
