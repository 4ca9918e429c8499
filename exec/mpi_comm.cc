#include "exec/mpi_comm.h"

#include <cstring>

#include "shared/error.h"

namespace tandem::exec {
namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string("exec: ") + what + " failed: " + std::string(msg, size_t(len)), ErrorKind::kFault);
  }
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kFp32: return MPI_FLOAT;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kUint8: return MPI_UINT8_T;
    default: throw Error(std::string("exec: the host driver cannot reduce ") + to_string(t) + " data");
  }
}

bool overlaps(const void* a, int64_t an, const void* b, int64_t bn) {
  const char *x = static_cast<const char*>(a), *y = static_cast<const char*>(b);
  return x < y + bn && y < x + an;
}

}  // namespace

MpiComm::MpiComm(const Schedule& schedule, int rank) : schedule_(schedule), rank_(rank) {
  const auto& groups = schedule.groups();
  comms_.assign(groups.size(), MPI_COMM_NULL);
  index_.assign(groups.size(), -1);
  MPI_Group world;
  check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  for (const ProcessGroup& g : groups) {
    int idx = -1;
    for (size_t i = 0; i < g.ranks.size(); ++i)
      if (g.ranks[i] == rank) idx = int(i);
    if (idx < 0) continue;
    index_[g.id] = idx;
    MPI_Group sub;
    check(MPI_Group_incl(world, int(g.ranks.size()), g.ranks.data(), &sub), "MPI_Group_incl");
    check(MPI_Comm_create_group(MPI_COMM_WORLD, sub, int(g.id % 32768), &comms_[g.id]), "MPI_Comm_create_group");
    MPI_Group_free(&sub);
  }
  MPI_Group_free(&world);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_), "MPI_Comm_dup");
}

MpiComm::~MpiComm() {
  for (MPI_Comm& c : comms_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (p2p_ != MPI_COMM_NULL) MPI_Comm_free(&p2p_);
}

Pending MpiComm::push(Op op) {
  op.used = true;
  if (!free_.empty()) {
    const Pending p = free_.back();
    free_.pop_back();
    ops_[size_t(p)] = std::move(op);
    return p;
  }
  ops_.push_back(std::move(op));
  return Pending(ops_.size() - 1);
}

MpiComm::Scratch MpiComm::take_scratch(size_t bytes) {
  size_t best = spare_.size();
  for (size_t i = 0; i < spare_.size(); ++i)
    if (spare_[i].size >= bytes && (best == spare_.size() || spare_[i].size < spare_[best].size)) best = i;
  if (best == spare_.size()) return Scratch{std::make_unique_for_overwrite<char[]>(bytes), bytes};
  Scratch s = std::move(spare_[best]);
  spare_.erase(spare_.begin() + std::ptrdiff_t(best));
  return s;
}

bool MpiComm::test(Pending p) {
  if (p == kFinished) return true;
  Op& op = ops_.at(size_t(p));
  int flag = 0;
  check(MPI_Test(&op.request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  if (!flag) return false;
  if (op.after) op.after();
  if (op.scratch.data) spare_.push_back(std::move(op.scratch));
  op = Op();
  free_.push_back(p);
  return true;
}

Pending MpiComm::collective(const Collective& c, void* in, void* out) {
  if (c.group >= comms_.size() || comms_[c.group] == MPI_COMM_NULL)
    throw Error("exec: rank " + std::to_string(rank_) + " is not in group " + std::to_string(c.group), ErrorKind::kInternal);
  MPI_Comm comm = comms_[c.group];
  const int size = int(schedule_.group(c.group).ranks.size());
  const int me = index_[c.group];
  const int e = dtype_bytes(c.dtype);
  const MPI_Datatype type = mpi_type(c.dtype);
  const MPI_Op red = c.reduce == ReduceOp::kMax ? MPI_MAX : MPI_SUM;
  const int64_t count = c.bytes / e;
  Op op;
  switch (c.op) {
    case CollectiveOp::kAllReduce:
      check(MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, int(count), type, red, comm, &op.request),
            "MPI_Iallreduce");
      break;
    case CollectiveOp::kAllGather: {
      const int64_t chunk = count / size;
      char* slot = static_cast<char*>(out) + me * chunk * e;
      const void* send = in == slot ? MPI_IN_PLACE : in;
      if (send != MPI_IN_PLACE && overlaps(in, chunk * e, out, c.bytes))
        throw Error("exec: all-gather input overlaps its output off the rank's slot", ErrorKind::kInternal);
      check(MPI_Iallgather(send, int(chunk), type, out, int(chunk), type, comm, &op.request), "MPI_Iallgather");
      break;
    }
    case CollectiveOp::kReduceScatter: {
      const int64_t chunk = count / size;
      void* recv = out;
      if (overlaps(out, chunk * e, in, c.bytes)) {
        const int64_t n = chunk * e;
        op.scratch = take_scratch(size_t(n));
        recv = op.scratch.data.get();
        char* scratch = op.scratch.data.get();
        op.after = [scratch, out, n] { std::memcpy(out, scratch, size_t(n)); };
      }
      check(MPI_Ireduce_scatter_block(in, recv, int(chunk), type, red, comm, &op.request),
            "MPI_Ireduce_scatter_block");
      break;
    }
    case CollectiveOp::kAllToAll: {
      const int64_t chunk = count / size;
      const void* send = in;
      if (in == out) {
        op.scratch = take_scratch(size_t(c.bytes));
        std::memcpy(op.scratch.data.get(), in, size_t(c.bytes));
        send = op.scratch.data.get();
      }
      check(MPI_Ialltoall(send, int(chunk), type, out, int(chunk), type, comm, &op.request), "MPI_Ialltoall");
      break;
    }
    case CollectiveOp::kBroadcast:
      if (me == c.root && in != out) std::memmove(out, in, size_t(c.bytes));
      check(MPI_Ibcast(out, int(count), type, c.root, comm, &op.request), "MPI_Ibcast");
      break;
    case CollectiveOp::kReduce:
      check(MPI_Ireduce(me == c.root && in == out ? MPI_IN_PLACE : in, out, int(count), type, red, c.root, comm,
                        &op.request),
            "MPI_Ireduce");
      break;
  }
  return push(std::move(op));
}

Pending MpiComm::p2p(const SendRecv& m, void* buffer) {
  Op op;
  if (m.is_send)
    check(MPI_Isend(buffer, int(m.bytes), MPI_BYTE, m.peer, m.tag, p2p_, &op.request), "MPI_Isend");
  else
    check(MPI_Irecv(buffer, int(m.bytes), MPI_BYTE, m.peer, m.tag, p2p_, &op.request), "MPI_Irecv");
  return push(std::move(op));
}

}  // namespace tandem::exec
