// What the 2D and 3D tensor-parallel tests (tp2d_test.cc, tp3d_test.cc) share: scenarios with more
// overrides, the message of a rejected scenario, a layer's collective bytes, a layer's kept
// activations.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "schedule_test_util.h"
#include "shared/error.h"
#include "shared/schedule.h"

namespace tandem::testing {

inline std::vector<std::string> with(std::vector<std::string> sets, const std::vector<std::string>& more) {
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

// The message of the tiny GPT with `sets` refused as bad input (exit 2), or "" if accepted.
inline std::string rejection(const std::vector<std::string>& sets) {
  try {
    Schedule s(tiny(sets));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  return "";
}

// Bytes of layer 0, micro-batch 0 that `rank` takes part in, by phase and collective.
inline std::map<std::pair<Phase, CollectiveOp>, int64_t> layer_traffic(const Schedule& s, int rank) {
  std::map<std::pair<Phase, CollectiveOp>, int64_t> bytes;
  for (const Task& t : s.program(rank).tasks)
    if (const auto* c = std::get_if<Collective>(&t.op))
      if (c->layer == 0 && c->microbatch == 0) bytes[{c->phase, c->op}] += c->bytes;
  return bytes;
}

// Bytes of layer 0's activations of micro-batch 0 still held on rank 0 when layer 0's forward is
// over (what the layer keeps for its backward).
inline int64_t layer0_kept_bytes(const Schedule& s) {
  int64_t bytes = 0;
  const Program p = s.program(0);
  std::map<BufferId, bool> live;
  for (const Task& t : p.tasks) {
    if (const auto* a = std::get_if<Alloc>(&t.op)) {
      const Buffer& b = p.buffers[a->buffer];
      if (b.role == BufferRole::kActivation && b.name.rfind("L0.m0.", 0) == 0) live[a->buffer] = true;
    } else if (const auto* f = std::get_if<Free>(&t.op)) {
      live.erase(f->buffer);
    } else if (const auto* c = std::get_if<Compute>(&t.op)) {
      if (c->layer == 1 && c->microbatch == 0) break;  // layer 0's forward is over
    }
  }
  for (const auto& [id, on] : live) bytes += p.buffers[id].bytes;
  return bytes;
}

}  // namespace tandem::testing
