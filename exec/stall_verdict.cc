#include "exec/stall_verdict.h"

#include <algorithm>
#include <map>
#include <set>

namespace tandem::exec {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// By waited-on rank: the reporting ranks that wait on it.
std::map<int, std::vector<int>> waiters(const std::vector<StallReport>& reports) {
  std::map<int, std::vector<int>> w;
  for (const StallReport& r : reports)
    for (int peer : std::set<int>(r.waits_on.begin(), r.waits_on.end()))
      if (peer != r.rank) w[peer].push_back(r.rank);
  return w;
}

}  // namespace

std::vector<int> stopped_ranks(const std::vector<StallReport>& reports) {
  std::set<int> reported;
  for (const StallReport& r : reports) reported.insert(r.rank);
  std::vector<std::pair<int, int>> by_count;  // (-waiters, rank)
  for (const auto& [peer, who] : waiters(reports))
    if (!reported.count(peer)) by_count.push_back({-int(who.size()), peer});
  std::sort(by_count.begin(), by_count.end());
  std::vector<int> out;
  for (const auto& [count, rank] : by_count) out.push_back(rank);
  return out;
}

std::string stall_verdict(const std::vector<StallReport>& reports) {
  const std::vector<int> stopped = stopped_ranks(reports);
  std::vector<int> reporters;
  for (const StallReport& r : reports) reporters.push_back(r.rank);
  std::sort(reporters.begin(), reporters.end());
  if (stopped.empty())
    return "no rank singled out: every rank waited on has reported a stall itself (" + rank_list(reporters) +
           " stalled)";
  const std::map<int, std::vector<int>> w = waiters(reports);
  std::string s;
  for (int r : stopped) {
    std::vector<int> who = w.at(r);
    std::sort(who.begin(), who.end());
    s += (s.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " stopped making progress (" +
         rank_list(who) + (who.size() == 1 ? " waits" : " wait") + " on it and it did not report)";
  }
  return s;
}

}  // namespace tandem::exec
