// The NCCL communicators of one rank of the CUDA driver.
//
// - One ncclComm per process group of the schedule that the rank is in and that has more than one
//   member (a one-member group's collectives are local copies, see CudaDriver). The group's first
//   rank creates the unique id (ncclGetUniqueId) and broadcasts it over an MPI communicator of the
//   group's members (MPI_Comm_create_group, as exec/mpi_comm.cc), then every member calls
//   ncclCommInitRank with its index in the group.
// - One two-rank ncclComm per p2p channel (sender, receiver, tag) the rank's program uses: the
//   IR's matching rule is MPI's (the n-th send from a to b with a tag matches the n-th receive at
//   b from a with that tag), and a communicator that carries exactly one channel, in one
//   direction, issued from one stream at each end, gives NCCL's send/recv that same order. The
//   sender creates the id and sends it to the receiver (MPI_Send/MPI_Recv on a dup of
//   MPI_COMM_WORLD).
// Initialisation is blocking and collective over each communicator's members; every rank walks
// the same global order (groups by id, then channels by (min rank, max rank, sender, tag)) and
// takes part in those that include it, so no two ranks wait on each other in opposite orders.
// MPI must be initialised when any of these exist; a one-rank program needs none.
#pragma once

#include <nccl.h>

#include <map>
#include <tuple>
#include <vector>

#include "shared/schedule.h"

namespace tandem::exec {

class NcclComms {
 public:
  // Call with the rank's device current.
  NcclComms(const Schedule& schedule, const Program& program, int rank);
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  // The group's communicator (Error when the rank is not a member or the group has one member).
  ncclComm_t group(GroupId id) const;
  int group_size(GroupId id) const { return int(schedule_.group(id).ranks.size()); }
  int index_in_group(GroupId id) const;  // -1 when not a member
  // The two-rank communicator of channel (from, to, tag); the peer is rank 1 - own index in it.
  ncclComm_t channel(int from, int to, int tag) const;
  // Every communicator, for asynchronous error checks.
  std::vector<ncclComm_t> all() const;

 private:
  const Schedule& schedule_;
  int rank_;
  std::vector<ncclComm_t> groups_;  // by group id; null when not a member or one member
  std::vector<int> index_;          // by group id
  std::map<std::tuple<int, int, int>, ncclComm_t> channels_;
};

}  // namespace tandem::exec
