// Collectives and pipeline messages of the host driver through MPI (OpenMPI 4.1): one communicator
// per process group the rank is in (created in the schedule's group order with
// MPI_Comm_create_group, so only members take part), non-blocking calls polled with MPI_Test so
// that streams overlap, and a duplicate of MPI_COMM_WORLD for point-to-point messages (the n-th
// send on a pair matches the n-th receive: MPI's non-overtaking rule, same tag).
//
// Sizes follow the IR's nccl-tests convention (shared/schedule.h): all-gather's input is the own
// shard of `bytes` (in place when it is the rank's slot of the output), reduce-scatter's output
// the own shard. A reduce-scatter whose output is the rank's slot of its input (ZeRO-1's gradient
// shard is a view of the bucket) goes through a scratch buffer, as MPI forbids aliasing; scratch
// buffers are kept for the next call once their op completes and are never zero-filled (the
// reduce-scatter writes every byte of its output; the all-to-all's copy of its input likewise), so
// a call costs no fill the schedule does not describe (docs/exec.md, session 17).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "exec/host_driver.h"

namespace tandem::exec {

class MpiComm : public HostComm {
 public:
  // Collective over the members of each group of `schedule` that `rank` is in; MPI must be
  // initialised.
  MpiComm(const Schedule& schedule, int rank);
  ~MpiComm() override;
  Pending collective(const Collective& c, void* in, void* out) override;
  Pending p2p(const SendRecv& m, void* buffer) override;
  bool test(Pending p) override;

 private:
  // Uninitialised bytes owned by an op in flight, or kept in spare_ for a later one.
  struct Scratch {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  struct Op {
    MPI_Request request = MPI_REQUEST_NULL;
    std::function<void()> after;  // runs once the request completes
    Scratch scratch;
    bool used = false;
  };
  Pending push(Op op);
  // A kept scratch of at least `bytes` (the smallest that fits), else a new one; not filled.
  Scratch take_scratch(size_t bytes);

  const Schedule& schedule_;
  int rank_;
  std::vector<MPI_Comm> comms_;  // by group id; MPI_COMM_NULL when not a member
  std::vector<int> index_;       // by group id: this rank's index in the group
  MPI_Comm p2p_ = MPI_COMM_NULL;
  std::vector<Op> ops_;
  std::vector<Pending> free_;
  std::vector<Scratch> spare_;  // scratch buffers of completed ops
};

}  // namespace tandem::exec
