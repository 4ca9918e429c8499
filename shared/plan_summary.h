// What `tandem plan` reports about a schedule without running it: parameters, flops per
// iteration, per-rank memory from the Alloc/Free timeline (memory_profile(schedule, rank):
// pipeline-aware when pp > 1), communication volume per group kind. Ranks are visited one class at
// a time (Schedule::rank_classes), so a 4096-rank plan generates only one program per class, or
// with a pipeline the programs of the pipelines holding the classes' representatives (one
// pipeline when the classes are its stages), each once.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "shared/memory_timeline.h"
#include "shared/schedule.h"

namespace tandem {

struct RankPlan {
  int rank = 0;        // the class representative
  int count = 0;       // ranks in its class
  size_t tasks = 0;
  MemoryProfile memory;
  double model_flops = 0;     // forward + backward matrix flops of this rank
  double hardware_flops = 0;  // plus recompute
  std::array<int64_t, kGroupKindCount> collective_bytes{};  // by group kind, per iteration
  int64_t p2p_bytes = 0;      // sent
  int64_t offload_bytes = 0;  // host <-> device copies
  int64_t offload_h2d_bytes = 0;  // of which host to device
  // Sequence-parallel traffic this rank sends, per iteration: the sp group's collectives (Ulysses'
  // all-to-alls) and the messages to the other ranks of its sequence group (ring attention's K/V
  // blocks and dK/dV sums); under Megatron-SP (sp_mode megatron, over the tensor group) the tensor
  // group's all-gathers and reduce-scatters inside the layers and the ring messages to its tensor
  // peers that replace them with software.tp_comm_overlap.
  int64_t sp_bytes = 0;
  int layers = 0;                     // transformer layers this rank runs
  double sp_bytes_per_layer_mb = 0;   // sp_bytes / (layers * micro-batches): per layer and
                                      // micro-batch, forward and backward (and recompute)
};

struct PlanSummary {
  int64_t parameters = 0;
  double flops_per_iteration = 0;           // model flops, every rank
  double hardware_flops_per_iteration = 0;  // with recompute
  int64_t tokens_per_iteration = 0;
  std::vector<RankPlan> ranks;              // one per rank class
  int64_t peak_memory_bytes = 0;            // max over ranks
  MemoryBreakdown breakdown;                // of the rank with the peak
  int peak_rank = 0;
  int64_t peak_host_bytes = 0;              // max over ranks, offloaded state
  bool fits = true;                         // the peak fits in HBM
  // The host memory a node needs: the largest per-rank host peak times the GPUs of a node (an upper
  // bound: the ranks' peaks need not coincide; the simulator tracks the node's sum over time).
  int64_t host_bytes_per_node = 0;
  int64_t host_memory_bytes = 0;            // cluster.host_memory_gib (0: not given)
  int64_t hbm_bytes = 0;
};

PlanSummary summarize(const Schedule& schedule);
// Throws Error (kOutOfMemory), with the figures, when host_bytes_per_node exceeds the host memory.
void check_host_memory(const Scenario& scenario, const PlanSummary& summary);

}  // namespace tandem
