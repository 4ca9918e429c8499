// The replay state of one replayed rank (a "unit": with tensor-parallel folding, the tp lanes of
// one (dp, pp) coordinate; else one rank): where each stream is in the program, which tasks are
// done, what is running, and the time the rank spends computing, communicating, offloading or idle.
//
// Why separate: the event loop (ReplayEngine), the network-op matcher and the deadlock report
// all read it; memory lives in MemoryLedger.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "shared/schedule.h"
#include "sim/program_info.h"
#include "sim/simulation.h"

namespace tandem::sim {

struct RankState {
  int rank = 0;  // the rank replayed (folded: lane 0 of its unit)
  int unit = 0;  // index of this state
  const ProgramInfo* info = nullptr;
  bool translate = false;  // the program is its class representative's: translate groups and peers
  std::vector<uint64_t> done;                   // bit per task
  std::array<uint32_t, kStreamCount> cursor{};  // next task of each stream (index in info->streams)
  std::array<double, kStreamCount> busy_since{};
  uint32_t busy = 0;                               // bit per stream: its current task runs
  std::vector<std::pair<GroupId, uint32_t>> seq;  // collectives issued, per group
  std::vector<GroupId> group_map;                  // translated groups, by the program's group id
  size_t remaining = 0;                            // tasks not done
  double last_t = 0;                               // time accounted up to
  // The host's clock: when it issued the compute stream's latest kernel (software.host_dispatch_us),
  // and its value when the running compute group started (to time the group's tasks).
  double host_s = 0, host_at_group = 0;
  int computing = 0, communicating = 0, offloading = 0;
  // What is in flight off the compute stream, by component (sim/cost_component.h).
  std::array<uint32_t, kComponentCount> active{};
  RankStats stats;

  bool is_done(TaskId t) const { return (done[t >> 6] >> (t & 63)) & 1; }
  void mark_done(TaskId t) { done[t >> 6] |= uint64_t(1) << (t & 63); }
  bool stream_busy(int s) const { return (busy >> s) & 1; }
  // Exposed time dt shared equally among the components in flight of its category: communication
  // (nvlink, nic, p2p: contiguous in Component), or offload (host copies and host work: the rest).
  void share(double dt, bool comm) {
    constexpr int kFirstComm = int(Component::kNvlink), kEndComm = int(Component::kP2P) + 1;
    int on[kComponentCount];
    int n = 0;
    for (int c = comm ? kFirstComm : 0; c < (comm ? kEndComm : kComponentCount); ++c)
      if (active[c] && (comm || c < kFirstComm || c >= kEndComm)) on[n++] = c;
    for (int i = 0; i < n; ++i) stats.component_s[on[i]] += dt / n;
  }
  // Charge the time since the last call to what the rank was doing (compute first).
  void account(double t) {
    const double dt = t - last_t;
    if (dt > 0) {
      if (computing) stats.compute_s += dt;
      else if (communicating) {
        stats.exposed_comm_s += dt;
        share(dt, true);
      } else if (offloading) {
        stats.offload_s += dt;
        share(dt, false);
      } else {
        stats.idle_s += dt;
      }
      last_t = t;
    }
  }
};

}  // namespace tandem::sim
