#include "search/search_mpi.h"

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdlib>

#include "shared/error.h"

namespace tandem::search {

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("tandem search: ") + what + " failed (MPI error " + std::to_string(rc) + ")", ErrorKind::kFault);
}

int int_size(size_t n) {
  if (n > size_t(INT_MAX))
    throw Error("tandem search: a rank's message of " + std::to_string(n) + " bytes is over MPI's int count",
                ErrorKind::kInternal);
  return int(n);
}

std::vector<std::string> gather_to_root(const std::string& bytes, int rank, int size) {
  const int64_t n = int64_t(bytes.size());
  std::vector<int64_t> sizes(rank == 0 ? size : 0);
  check(MPI_Gather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> counts, offsets;
  std::string all;
  if (rank == 0) {
    size_t total = 0;
    for (int64_t s : sizes) counts.push_back(int_size(size_t(s))), offsets.push_back(int_size(total)), total += size_t(s);
    int_size(total);
    all.resize(total);
  }
  check(MPI_Gatherv(bytes.data(), int_size(bytes.size()), MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> out;
  for (int k = 0; rank == 0 && k < size; ++k) out.push_back(all.substr(size_t(offsets[k]), size_t(counts[k])));
  return out;
}

std::string broadcast_from_root(const std::string& bytes, int rank) {
  int64_t n = rank == 0 ? int64_t(bytes.size()) : 0;
  check(MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = rank == 0 ? bytes : std::string(size_t(n), '\0');
  check(MPI_Bcast(out.data(), int_size(size_t(n)), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

}  // namespace

bool started_by_mpi_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}

MpiRanks::MpiRanks(int* argc, char*** argv) {
  check(MPI_Init(argc, argv), "MPI_Init");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &ranks_.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &ranks_.size), "MPI_Comm_size");
  const int rank = ranks_.rank, size = ranks_.size;
  ranks_.gather_to_root = [rank, size](const std::string& b) { return gather_to_root(b, rank, size); };
  ranks_.broadcast_from_root = [rank](const std::string& b) { return broadcast_from_root(b, rank); };
}

MpiRanks::~MpiRanks() { MPI_Finalize(); }

}  // namespace tandem::search
