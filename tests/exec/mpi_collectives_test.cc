// The host driver's broadcast and reduce (exec/mpi_comm.cc, what 2D tensor parallelism's SUMMA
// issues: shared/summa.cc) on 3 MPI processes, against float64 references: a broadcast copies
// the root's block exactly into every member's output; a reduce leaves on its root the sum (or the
// max) of every member's input, within fp32 rounding of the float64 sum, and an in-place reduce
// on the root does the same. Groups whose order is not rank order check that `root` is an index
// within the group. A reduce-scatter whose output is the rank's slot of its own input (ZeRO-1's
// gradient shard, a view of the bucket: exec/mpi_comm.cc reduces it through a scratch that is kept
// between calls and never zero-filled) leaves in that slot the sum over the members of their
// inputs' slot and the rest of the input as it was; issued four times in a row with other values
// and sizes (small, larger, small again, on the other group), so that a kept scratch is reused
// holding an earlier call's sums and a larger call needs a new one.
// Run as `mpirun -n 3 mpi_collectives_test`; exit 0 when every check holds.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "exec/mpi_comm.h"
#include "shared/scenario.h"

namespace tandem {
namespace {

constexpr int kCount = 1000;

class NoPrograms : public ProgramGenerator {
 public:
  Program generate(int rank) const override {
    Program p;
    p.rank = rank;
    return p;
  }
};

// Every rank's input: a value no two ranks or elements share.
float input(int rank, int i) { return float(std::sin(1.0 + rank * 977 + i * 0.37) * (1 + rank)); }

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

void wait(exec::MpiComm& comm, exec::Pending p) {
  while (!comm.test(p)) {
  }
}

Collective collective(CollectiveOp op, GroupId group, int root, ReduceOp reduce = ReduceOp::kSum) {
  Collective c;
  c.op = op;
  c.group = group;
  c.root = root;
  c.reduce = reduce;
  c.bytes = kCount * 4;
  c.dtype = DType::kFp32;
  return c;
}

int run(int rank) {
  std::vector<ProcessGroup> groups(2);
  groups[0].id = 0, groups[0].ranks = {0, 1, 2};
  groups[1].id = 1, groups[1].ranks = {2, 0};  // index 0 is rank 2, index 1 is rank 0
  Scenario sc = load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", {"cluster.gpus=3", "strategy.global_batch=6"});
  Schedule schedule(sc, 3, groups, std::make_unique<NoPrograms>());
  exec::MpiComm comm(schedule, rank);
  std::vector<float> in(kCount), out(kCount, -1.0f);
  for (int i = 0; i < kCount; ++i) in[i] = input(rank, i);

  // Broadcast from index 1 (rank 1) of group 0.
  wait(comm, comm.collective(collective(CollectiveOp::kBroadcast, 0, 1), in.data(), out.data()));
  for (int i = 0; i < kCount; ++i) check(out[i] == input(1, i), "broadcast element " + std::to_string(i));

  // Broadcast from index 0 of group 1 (rank 2), ranks 2 and 0 only.
  if (rank != 1) {
    std::fill(out.begin(), out.end(), -1.0f);
    wait(comm, comm.collective(collective(CollectiveOp::kBroadcast, 1, 0), in.data(), out.data()));
    for (int i = 0; i < kCount; ++i) check(out[i] == input(2, i), "group-1 broadcast element " + std::to_string(i));
  }

  // Sum to index 2 (rank 2) of group 0, against the float64 sum.
  std::fill(out.begin(), out.end(), -1.0f);
  wait(comm, comm.collective(collective(CollectiveOp::kReduce, 0, 2), in.data(), out.data()));
  for (int i = 0; i < kCount; ++i) {
    const double ref = double(input(0, i)) + double(input(1, i)) + double(input(2, i));
    if (rank == 2) check(std::abs(out[i] - ref) <= 1e-6 * (std::abs(ref) + 1), "reduce sum element " + std::to_string(i));
    else check(out[i] == -1.0f, "a reduce wrote a non-root's output");
  }

  // Max to index 1 of group 1 (rank 0), in place on the root.
  if (rank != 1) {
    std::vector<float> buf = in;
    wait(comm, comm.collective(collective(CollectiveOp::kReduce, 1, 1, ReduceOp::kMax), buf.data(), buf.data()));
    if (rank == 0)
      for (int i = 0; i < kCount; ++i)
        check(buf[i] == std::max(input(0, i), input(2, i)), "in-place reduce max element " + std::to_string(i));
  }
  // Reduce-scatter into the rank's slot of its input, as ZeRO-1 issues it.
  struct Case {
    GroupId group;
    int64_t count;  // elements of the whole input, a multiple of the group's size
    int salt;       // makes every case's values differ
  };
  for (const Case& k : {Case{0, 999, 1}, Case{0, 1500, 2}, Case{0, 999, 3}, Case{1, 1000, 4}}) {
    const std::vector<int>& members = schedule.group(k.group).ranks;
    int me = -1;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank) me = int(i);
    if (me < 0) continue;
    const int64_t chunk = k.count / int64_t(members.size());
    auto value = [&](int r, int64_t i) { return input(r, int(i) + 7919 * k.salt); };
    std::vector<float> buf(size_t(k.count));
    for (int64_t i = 0; i < k.count; ++i) buf[size_t(i)] = value(rank, i);
    Collective c = collective(CollectiveOp::kReduceScatter, k.group, 0);
    c.bytes = k.count * 4;
    float* slot = buf.data() + me * chunk;
    wait(comm, comm.collective(c, buf.data(), slot));
    const std::string name = "aliased reduce-scatter (group " + std::to_string(k.group) + ", " + std::to_string(k.count) +
                             " elements) element ";
    for (int64_t i = 0; i < k.count; ++i) {
      if (i / chunk == me) {
        double ref = 0;
        for (int r : members) ref += double(value(r, i));
        check(std::abs(buf[size_t(i)] - ref) <= 1e-6 * (std::abs(ref) + 1), name + std::to_string(i));
      } else {
        check(buf[size_t(i)] == value(rank, i), name + std::to_string(i) + " off the slot changed");
      }
    }
  }
  return failures;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = size == 3 ? 0 : 1;
  if (size != 3) std::fprintf(stderr, "run with mpirun -n 3\n");
  try {
    if (!bad) bad = tandem::run(rank);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    bad = 1;
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s\n", total == 0 ? "broadcast, reduce and aliased reduce-scatter: all checks hold" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
