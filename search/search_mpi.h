// `mpirun -n R tandem search ...`: the ranks of search/search_ranks.h over Open MPI (the MPI the
// host driver already links, exec/mpi_comm.h). A process that mpirun did not start does not touch
// MPI at all, so one `tandem search` needs no MPI runtime.
#pragma once

#include <optional>

#include "search/search_ranks.h"

namespace tandem::search {

// True when this process was started by an MPI launcher (Open MPI's OMPI_COMM_WORLD_SIZE, or the
// PMI/PMIx rank variables other launchers set).
bool started_by_mpi_launcher();

// MPI_Init on construction, MPI_Finalize on destruction (one per process).
class MpiRanks {
 public:
  MpiRanks(int* argc, char*** argv);
  ~MpiRanks();
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;
  const SearchRanks& ranks() const { return ranks_; }

 private:
  SearchRanks ranks_;
};

}  // namespace tandem::search
