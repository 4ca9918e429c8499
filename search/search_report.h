// What `tandem search` prints: a table of the K best points, or one JSON object.
#pragma once

#include <string>

#include "search/search_run.h"

namespace tandem::search {

// The summary (space, invalid points by rule, pruned, out of memory, estimate rate) and one row per
// point of the K best: rank, predicted iteration time [80 % interval], tokens/s, MFU, peak memory,
// what limits it, and the strategy as --set strings.
std::string search_table(const SearchResult& r);

// {"format":"tandem-search-1","scenario","scenario_name","gpus","sets":[...],
//  "points","valid","invalid":{rule:count},"invalid_examples":{rule:message},
//  "pruned":{rule:count},"out_of_memory","memory_planned","probes","estimate_wall_s","estimate_cpu_s",
//  "ranked_by":"iteration_time_s" | "tokens_per_s" (--vary-batch),
//  "results":[{"rank","sets":[...],"status","reason","iteration_time_s",
//              "iteration_time_interval_s":[low,high],"tokens_per_s","mfu","peak_memory_bytes",
//              "estimated_iteration_time_s","planned_peak_memory_bytes","limit"}]}
// results: best first; the simulated figures are null when not simulated (--no-simulate) or when
// the simulation failed (status and reason say why).
std::string search_json(const SearchResult& r);

}  // namespace tandem::search
