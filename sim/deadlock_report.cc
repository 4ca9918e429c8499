#include "sim/deadlock_report.h"

#include <sstream>

namespace tandem::sim {

std::string deadlock_report(double now, const std::vector<RankState>& states) {
  std::ostringstream msg;
  msg << "schedule deadlocks: no task can run any more at t=" << now << " s;";
  int shown = 0;
  for (const RankState& r : states) {
    if (!r.remaining || shown >= 8) continue;
    ++shown;
    msg << "\n  rank " << r.rank << ":";
    for (int s = 0; s < kStreamCount; ++s) {
      const auto& list = r.info->streams[s];
      if (r.cursor[s] >= list.size() && !r.stream_busy(s)) continue;
      const TaskId head = r.stream_busy(s) ? list[r.cursor[s] - 1] : list[r.cursor[s]];
      const Task& t = r.info->program.tasks[head];
      msg << " " << to_string(Stream(s)) << " at task " << head;
      if (r.stream_busy(s)) {
        if (const auto* c = std::get_if<Collective>(&t.op))
          msg << " (" << to_string(c->op) << " waiting for the rest of its group)";
        else if (const auto* sr = std::get_if<SendRecv>(&t.op))
          msg << " (" << (sr->is_send ? "send to " : "recv from ") << sr->peer << " unmatched)";
      } else {
        msg << " (waiting for deps)";
      }
      msg << ";";
    }
  }
  return msg.str();
}

}  // namespace tandem::sim
