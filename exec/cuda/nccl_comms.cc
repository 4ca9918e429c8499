#include "exec/cuda/nccl_comms.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "exec/cuda/cuda_check.h"

namespace tandem::exec {
namespace {

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string("exec: ") + call + " failed: " + std::string(msg, size_t(len)), ErrorKind::kFault);
  }
}

void require_mpi(int rank) {
  int up = 0;
  MPI_Initialized(&up);
  if (!up)
    throw Error("exec: rank " + std::to_string(rank) +
                    ": the CUDA driver needs MPI to set up NCCL for a program with collectives or messages "
                    "(run it through `tandem run`)",
                ErrorKind::kInternal);
}

}  // namespace

NcclComms::NcclComms(const Schedule& schedule, const Program& program, int rank)
    : schedule_(schedule), rank_(rank) {
  const auto& groups = schedule.groups();
  groups_.assign(groups.size(), nullptr);
  index_.assign(groups.size(), -1);
  for (const ProcessGroup& g : groups)
    for (size_t i = 0; i < g.ranks.size(); ++i)
      if (g.ranks[i] == rank) index_[g.id] = int(i);

  // Channels of this rank's messages, in the global order (min rank, max rank, sender, tag).
  std::set<std::tuple<int, int, int, int>> chans;
  for (const Task& t : program.tasks)
    if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
      const int from = m->is_send ? rank : m->peer, to = m->is_send ? m->peer : rank;
      chans.insert({std::min(from, to), std::max(from, to), from, m->tag});
    }
  bool any_group = false;
  for (const ProcessGroup& g : groups) any_group |= index_[g.id] >= 0 && g.ranks.size() > 1;
  if (!any_group && chans.empty()) return;
  require_mpi(rank);

  MPI_Group world;
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  for (const ProcessGroup& g : groups) {
    const int me = index_[g.id];
    if (me < 0 || g.ranks.size() < 2) continue;
    MPI_Group sub;
    MPI_Comm comm = MPI_COMM_NULL;
    check_mpi(MPI_Group_incl(world, int(g.ranks.size()), g.ranks.data(), &sub), "MPI_Group_incl");
    check_mpi(MPI_Comm_create_group(MPI_COMM_WORLD, sub, int(g.id % 32768), &comm), "MPI_Comm_create_group");
    MPI_Group_free(&sub);
    ncclUniqueId id{};
    if (me == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, comm), "MPI_Bcast (NCCL unique id)");
    MPI_Comm_free(&comm);
    check_nccl(ncclCommInitRank(&groups_[g.id], int(g.ranks.size()), id, me), "ncclCommInitRank (group)");
  }
  MPI_Group_free(&world);

  if (!chans.empty()) {
    MPI_Comm dup = MPI_COMM_NULL;
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
    for (const auto& [lo, hi, from, tag] : chans) {
      (void)lo;
      (void)hi;
      const int to = from == lo ? hi : lo;
      ncclUniqueId id{};
      if (rank == from) {
        check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        check_mpi(MPI_Send(&id, int(sizeof id), MPI_BYTE, to, 0, dup), "MPI_Send (NCCL unique id)");
      } else {
        check_mpi(MPI_Recv(&id, int(sizeof id), MPI_BYTE, from, 0, dup, MPI_STATUS_IGNORE),
                  "MPI_Recv (NCCL unique id)");
      }
      ncclComm_t c = nullptr;
      check_nccl(ncclCommInitRank(&c, 2, id, rank == from ? 0 : 1), "ncclCommInitRank (p2p channel)");
      channels_[{from, to, tag}] = c;
    }
    MPI_Comm_free(&dup);
  }
}

NcclComms::~NcclComms() {
  for (ncclComm_t c : all())
    if (ncclCommDestroy(c) != ncclSuccess) std::fprintf(stderr, "tandem: ncclCommDestroy failed\n");
}

ncclComm_t NcclComms::group(GroupId id) const {
  if (id >= groups_.size() || !groups_[id])
    throw Error("exec: rank " + std::to_string(rank_) + " has no NCCL communicator for group " + std::to_string(id),
                ErrorKind::kInternal);
  return groups_[id];
}

int NcclComms::index_in_group(GroupId id) const { return id < index_.size() ? index_[id] : -1; }

ncclComm_t NcclComms::channel(int from, int to, int tag) const {
  auto it = channels_.find({from, to, tag});
  if (it == channels_.end())
    throw Error("exec: rank " + std::to_string(rank_) + " has no NCCL channel for messages " + std::to_string(from) +
                    " -> " + std::to_string(to) + " tag " + std::to_string(tag),
                ErrorKind::kInternal);
  return it->second;
}

std::vector<ncclComm_t> NcclComms::all() const {
  std::vector<ncclComm_t> v;
  for (ncclComm_t c : groups_)
    if (c) v.push_back(c);
  for (const auto& [k, c] : channels_) v.push_back(c);
  return v;
}

}  // namespace tandem::exec
