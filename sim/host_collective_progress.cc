#include "sim/host_collective_progress.h"

#include <algorithm>

namespace tandem::sim {

bool HostCollectiveProgress::parties_poll(uint32_t op) const {
  for (const Party& p : ops_[op].parties)
    if (computing_(p.unit)) return false;
  return true;
}

void HostCollectiveProgress::run(uint32_t op, State& s, double now) {
  s.running = true;
  s.since_s = now;
  s.generation = ++generations_;  // unique over ops: an op id is reused after it ends
  timers_.polled_op_done(now + s.left_s, op, s.generation);
}

void HostCollectiveProgress::start(uint32_t op, double work_s, double now) {
  State& s = state_[op];
  s = State{};
  s.left_s = std::max(0.0, work_s);
  for (const Party& p : ops_[op].parties) {
    std::vector<uint32_t>& list = of_unit_[p.unit];
    if (std::find(list.begin(), list.end(), op) == list.end()) list.push_back(op);
  }
  if (parties_poll(op)) run(op, s, now);
}

void HostCollectiveProgress::compute_started(int unit, double now) {
  auto it = of_unit_.find(unit);
  if (it == of_unit_.end()) return;
  for (uint32_t op : it->second) {
    State& s = state_.at(op);
    if (!s.running) continue;
    s.left_s = std::max(0.0, s.left_s - (now - s.since_s));
    s.running = false;
    s.generation = ++generations_;  // its timer is stale
  }
}

void HostCollectiveProgress::compute_stopped(int unit, double now) {
  auto it = of_unit_.find(unit);
  if (it == of_unit_.end()) return;
  for (uint32_t op : it->second) {
    State& s = state_.at(op);
    if (!s.running && parties_poll(op)) run(op, s, now);
  }
}

bool HostCollectiveProgress::done(uint32_t op, uint32_t generation) {
  auto it = state_.find(op);
  if (it == state_.end() || !it->second.running || it->second.generation != generation) return false;
  state_.erase(it);
  for (const Party& p : ops_[op].parties) {
    auto u = of_unit_.find(p.unit);
    if (u == of_unit_.end()) continue;
    u->second.erase(std::remove(u->second.begin(), u->second.end(), op), u->second.end());
    if (u->second.empty()) of_unit_.erase(u);
  }
  return true;
}

}  // namespace tandem::sim
