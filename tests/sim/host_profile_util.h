// Host calibration profiles written by hand for the simulator's host-cost tests: one kernel shape
// at a given time and a time between kernels, loaded back as the table the simulator reads.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "shared/schedule.h"
#include "sim_test_util.h"
#include "traces/calibration/calibration_profile.h"

namespace tandem::sim::testing {

// A host profile holding `kernel`'s shape measured at `seconds` (mean = median, one sample) and
// `gap_s` between kernels.
inline proto::CalibrationProfile host_profile(const Compute& kernel, double seconds, double gap_s) {
  proto::CalibrationProfile p;
  p.set_format(kCalibrationFormat);
  p.set_backend("host");
  p.set_task_overhead_s(gap_s);
  proto::KernelTime* k = p.add_kernels();
  k->set_kernel(uint32_t(kernel.kernel));
  k->set_dtype(uint32_t(kernel.dtype));
  for (int64_t d : kernel.shape_dims()) k->add_dims(d);
  k->set_mean_s(seconds);
  k->set_median_s(seconds);
  k->set_samples(1);
  return p;
}

// `ranks` host ranks (cluster preset "host", no process group), rank r running make(r).
inline Schedule host_schedule(int ranks, std::function<Program(int)> make) {
  ClusterSpec cluster = test_cluster(ranks);
  cluster.preset = "host";
  return make_schedule(cluster, ranks, {}, std::move(make));
}

// `schedule` simulated with the calibration `table`, its tasks recorded, compute fused or not.
inline SimResult simulate_calibrated(const Schedule& schedule, std::shared_ptr<const CalibrationTable> table, bool fuse) {
  SimOptions o = ideal_options();
  o.calibration = std::move(table);
  o.record_tasks = true;
  o.fuse_compute = fuse;
  return simulate(schedule, o);
}

// The table the simulator reads from `p`, through a temporary file named after `test` and this
// process.
inline CalibrationTable load_profile(const proto::CalibrationProfile& p, const std::string& test) {
  const std::string path = "/tmp/tandem-" + test + "-" + std::to_string(getpid()) + ".pb";
  write_calibration(p, path);
  CalibrationTable table = CalibrationTable::load(path);
  std::remove(path.c_str());
  return table;
}

}  // namespace tandem::sim::testing
