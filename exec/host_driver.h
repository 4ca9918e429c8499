// The host driver: buffers in host memory, compute through the CPU kernels (kernels/cpu, fp32),
// communication through a HostComm (MPI in a real run: exec/mpi_comm.h; none for one rank).
#pragma once

#include <memory>

#include "exec/driver.h"
#include "shared/scenario.h"

namespace tandem::exec {

// Collectives and point-to-point messages of one rank, started non-blocking and polled.
class HostComm {
 public:
  virtual ~HostComm() = default;
  virtual Pending collective(const Collective& c, void* in, void* out) = 0;
  virtual Pending p2p(const SendRecv& m, void* buffer) = 0;
  virtual bool test(Pending p) = 0;
};

// Error (exit code 2) when the host driver cannot run the scenario: not fp32, or dropout > 0 (the
// CPU kernels are dropout-free).
void check_host_scenario(const Scenario& scenario);

// The host driver over `comm`, which may be null for a one-rank program (any collective or
// message is then an Error).
std::unique_ptr<Driver> make_host_driver(HostComm* comm);

}  // namespace tandem::exec
