// The search's memory walk and its K simulations in one process, sharing the -j process slots
// (SearchOptions::overlap): the cores stay busy from the first plan to the last simulation, and
// the walk's decisions are those of the walk in search_run.cc, taken in the same order on the same
// verdicts (SearchShortcuts.OverlapChangesNothing). The protocol with the forked children is in
// overlapped_walk.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "search/point_check.h"
#include "search/search_run.h"
#include "search/walk_point.h"
#include "sim/sweep/sweep_table.h"

namespace tandem::search {

// The simulated results of the walk's K best, results[i] of r.best[i] (r's counts filled as the
// walk's); r.best empty: nothing fits (the caller walks again for the message that names the
// smallest planned peak). `bound`: a point's lower bound of its planned peak (0: none).
std::vector<sweep::PointResult> run_overlapped_walk(const std::vector<Valid>& valid, const SearchOptions& options,
                                                    PointChecker& checker,
                                                    const std::function<int64_t(const Valid&)>& bound,
                                                    const std::string& scenario_path, SearchResult& r);

}  // namespace tandem::search
