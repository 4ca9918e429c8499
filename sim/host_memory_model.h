// How long the host driver's Allocs and Frees take (exec/host_driver.cc: aligned_alloc and a zero
// fill; free), fit on the steady-state Allocs and Frees of a calibration profile's measured step
// (CalibrationProfile.memory_ops). Each of the two is time = a + c * bytes, the non-negative
// least-squares fit over the measured sizes weighted by their samples (sim/host_compute_model.h,
// fit_host_kernels with no flops): a the call, c the inverse of the bandwidth at which the fill
// writes (first-touch page faults included). A rank of the host driver runs its Allocs and Frees on
// the one thread that runs its kernels, so the simulator runs their time on the compute stream
// right before the rank's next kernel (after the last kernel, for the Frees that follow it), and
// records it on the Alloc/Free task itself, so that `tandem compare` attributes it to alloc/free
// and not to the kernel (sim/program_info.h, ProgramInfo::memory_ops_of); a persistent buffer
// (never freed in the program) is allocated in the first step only and costs nothing in a
// steady-state step.
#pragma once

#include <cstdint>

#include "calibration.pb.h"
#include "sim/host_compute_model.h"

namespace tandem::sim {

class HostMemoryModel {
 public:
  HostMemoryModel() = default;
  explicit HostMemoryModel(const proto::CalibrationProfile& profile);
  // Seconds of one Alloc (alloc) or Free of `bytes`; 0 when the profile measured none.
  double time_s(bool alloc, int64_t bytes) const;
  const HostFit& fit(bool alloc) const { return alloc ? alloc_ : free_; }
  bool empty() const { return alloc_.shapes == 0 && free_.shapes == 0; }

 private:
  HostFit alloc_, free_;
};

}  // namespace tandem::sim
