#include "sim/net_op_matcher.h"

#include <algorithm>
#include <string>

#include "shared/error.h"

namespace tandem::sim {

NetOpMatcher::NetOpMatcher(const Schedule& schedule, const FoldPlanner& layout, NetOpPool& ops)
    : schedule_(schedule), layout_(layout), ops_(ops) {}

uint32_t NetOpMatcher::post_collective(RankState& r, TaskId id, const Collective& c, double now) {
  GroupId g = c.group;
  if (r.translate) {
    if (r.group_map.size() <= c.group) r.group_map.resize(c.group + 1, kNoId);
    if (r.group_map[c.group] == kNoId) r.group_map[c.group] = schedule_.group_for(r.rank, c.group);
    g = r.group_map[c.group];
  }
  if (g >= schedule_.groups().size())
    throw Error("schedule: " + rank_task(r.rank, id) + " names group " + std::to_string(c.group) + " that does not exist");
  uint32_t seq = 0;
  auto it = std::find_if(r.seq.begin(), r.seq.end(), [&](const auto& p) { return p.first == g; });
  if (it == r.seq.end()) r.seq.emplace_back(g, 1);
  else seq = it->second++;
  if (layout_.parties(g) == 1) {  // the whole group is this state (a folded tp group): no matching
    const uint32_t op = ops_.create();
    NetOp& o = ops_[op];
    o.kind = NetOp::kCollective;
    o.group = g;
    o.collective = &c;
    o.expected = 1;
    o.bytes = c.bytes;
    o.parties.push_back({r.unit, id, now});
    return op;
  }
  const uint64_t key = (uint64_t(g) << 32) | seq;
  uint32_t op;
  auto pit = pending_collectives_.find(key);
  if (pit == pending_collectives_.end()) {
    op = ops_.create();
    NetOp& o = ops_[op];
    o.kind = NetOp::kCollective;
    o.group = g;
    o.collective = &c;
    o.expected = layout_.parties(g);
    o.bytes = c.bytes;
    pending_collectives_.emplace(key, op);
  } else {
    op = pit->second;
    const Collective& first = *ops_[op].collective;
    if (first.op != c.op || first.bytes != c.bytes || first.root != c.root)
      throw Error("schedule: collective #" + std::to_string(seq) + " of group " + std::to_string(g) + " is " +
                  to_string(c.op) + " of " + std::to_string(c.bytes) + " bytes at " + rank_task(r.rank, id) +
                  " but " + to_string(first.op) + " of " + std::to_string(first.bytes) + " bytes at rank " +
                  std::to_string(rank_of_unit(ops_[op].parties.front().unit)));
  }
  ops_[op].parties.push_back({r.unit, id, now});
  if (ops_[op].parties.size() < ops_[op].expected) return kWaiting;
  pending_collectives_.erase(key);
  return op;
}

uint32_t NetOpMatcher::post_p2p(RankState& r, TaskId id, const SendRecv& s, double now) {
  const int peer = r.translate ? schedule_.peer_for(r.rank, s.peer) : s.peer;
  if (peer < 0 || peer >= schedule_.world_size() || peer == r.rank)
    throw Error("schedule: " + rank_task(r.rank, id) + " sends to or receives from invalid peer " + std::to_string(peer));
  int src = s.is_send ? r.rank : peer, dst = s.is_send ? peer : r.rank;
  if (layout_.fold() > 1 && layout_.same_unit(peer, r.rank) && !s.is_send) {
    // Folded, inside the unit (r.rank is lane 0): this state's receive from lane e stands for
    // the receive from lane 0 of lane e's inverse (T - e on a tp block), so it meets this state's
    // own sends to that lane.
    src = r.rank;
    dst = layout_.lane_image(r.rank, layout_.lane_inverse(uint32_t(layout_.lane_of(peer))));
  }
  auto& q = pairs_[(uint64_t(src) << 32) | uint32_t(dst)];
  if (!q) q = std::make_unique<PairQueue>();
  auto& mine = s.is_send ? q->sends : q->recvs;
  auto& theirs = s.is_send ? q->recvs : q->sends;
  if (theirs.empty()) {
    const uint32_t op = ops_.create();
    NetOp& o = ops_[op];
    o.kind = NetOp::kP2P;
    o.src = src, o.dst = dst, o.bytes = s.bytes, o.tag = s.tag;
    o.expected = 2;
    o.parties.push_back({r.unit, id, now});
    mine.push_back(op);
    return kWaiting;
  }
  const uint32_t op = theirs.front();
  theirs.pop_front();
  NetOp& o = ops_[op];
  if (o.bytes != s.bytes || o.tag != s.tag)
    throw Error("schedule: " + rank_task(r.rank, id) + " (" + std::to_string(s.bytes) + " bytes, tag " +
                std::to_string(s.tag) + ") matches a post of " + std::to_string(o.bytes) + " bytes, tag " +
                std::to_string(o.tag) + " at rank " + std::to_string(rank_of_unit(o.parties.front().unit)) +
                " task " + std::to_string(o.parties.front().task) + " between ranks " + std::to_string(src) + " -> " +
                std::to_string(dst));
  o.parties.push_back({r.unit, id, now});
  return op;
}

uint32_t NetOpMatcher::post_copy(RankState& r, TaskId id, const Copy& c, double now) {
  const uint32_t op = ops_.create();
  NetOp& o = ops_[op];
  o.kind = NetOp::kCopy;
  o.src = r.rank;
  o.bytes = c.bytes;
  o.direction = c.direction;
  o.expected = 1;
  o.parties.push_back({r.unit, id, now});
  return op;
}

uint32_t NetOpMatcher::post_host_memory(RankState& r, TaskId id, int64_t bytes, double compute_s, uint8_t component,
                                        double now) {
  const uint32_t op = ops_.create();
  NetOp& o = ops_[op];
  o.kind = NetOp::kHostMemory;
  o.src = r.rank;
  o.bytes = bytes;
  o.not_before_s = now + compute_s;
  o.component = component;
  o.expected = 1;
  o.parties.push_back({r.unit, id, now});
  return op;
}

}  // namespace tandem::sim
