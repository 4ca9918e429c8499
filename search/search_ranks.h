// The processes of one search (`mpirun -n R tandem search ...`, docs/search.md "MPI"): this
// process's rank and two collectives, as functions so that search/search_run.cc needs no MPI
// (search/search_mpi.h implements them with Open MPI; one process needs none of them).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tandem::search {

struct SearchRanks {
  int rank = 0, size = 1;
  // Every rank's bytes on rank 0, in rank order; the other ranks get an empty list.
  std::function<std::vector<std::string>(const std::string&)> gather_to_root;
  // Rank 0's bytes on every rank (the argument is ignored on the others).
  std::function<std::string(const std::string&)> broadcast_from_root;
};

}  // namespace tandem::search
