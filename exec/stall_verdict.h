// Which rank stopped, from what the stalled ranks report. When a rank stops making progress (a
// stopped or wedged process, a dead GPU), every other rank soon waits on it, directly (a message
// from it, a collective it belongs to) or through a rank that waits on it; each watchdog that fires
// reports what its rank waits on. A stopped rank cannot report, so the rank to name is one that
// reports point at and that did not report itself.
#pragma once

#include <string>
#include <vector>

namespace tandem::exec {

// One stalled rank's report: the ranks its waiting work needs (a message's peer, a collective's
// other members, every other rank at a barrier); empty when it waits on local work.
struct StallReport {
  int rank = -1;
  std::vector<int> waits_on;
};

// The ranks pointed at by some report that did not report themselves, the most waited-on first
// (then by rank). Empty when every rank pointed at has reported (a deadlock among live ranks).
std::vector<int> stopped_ranks(const std::vector<StallReport>& reports);

// The job's one line: "rank R stopped making progress (ranks A, B wait on it and it did not
// report)", or, when no rank is singled out, that every stalled rank reported.
std::string stall_verdict(const std::vector<StallReport>& reports);

}  // namespace tandem::exec
