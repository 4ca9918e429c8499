// The space `tandem search` explores: every strategy of a scenario's model on its cluster (or on
// --gpus N), as the --set assignments that `tandem sim --set` takes. A point is a choice of
//   layout      dp x tp x pp x sp = N, with tp_mode (tp_depth for 2.5d) and sp_mode (the tables
//               below; sp > 1 only for the modes with an axis of their own, ulysses and
//               ring_attention)
//   pipeline    pp_schedule with its virtual_stages (1 for gpipe and 1f1b; for interleaved each
//               v in 2..8 with pp*v dividing the layers)
//   zero_stage  0..3,  recompute  none | selective | full
//   micro_batch the powers of two up to global_batch / dp
//   global_batch the scenario's; with --vary-batch (SpaceShape::vary_batch) each power of two up
//               to it, and it
//   offload     none | optimizer | params (with each offload_fraction of kOffloadFractions) | auto
//               (gpu_margin_mem_ratio left at its default 0, Colossal-AI's)
//   software    grad_reduce_overlap, overlap_param_gather, tp_comm_overlap (on / off)
// A key the user fixes with --set is not searched (for strategy.dp/tp/pp/sp: only layouts with
// that value are). The space is a definition, not a filter: every point of it is checked by the
// scenario loader's own rules (search/point_check.h), and the ones it refuses are counted.
//
// New values are one line in a table: kTpModes, kSpModes, kPipelineSchedules, kRecomputes, kOffloads.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace tandem::search {

struct TableRow {
  const char* value;
  // sp_mode: the mode runs over a sequence-parallel axis of its own (each sp >= 2 dividing
  // N / (tp pp) in the layout; sp = 1 is sp_mode none's point).
  // tp_mode: the mode has a depth (tp = tp_depth q^2: each tp_depth >= 2 dividing tp; depth 1 is
  // 2d's point).
  bool sp_degree = false;
  bool tp_depth = false;
  // tp_mode: a grid over tp GPUs, so not searched at tp = 1 (a grid of one GPU is 1d's point).
  bool needs_tp = false;
  // offload: the mode reads strategy.offload_fraction (each value of kOffloadFractions).
  bool fractions = false;
};
// 3d: tp a cube q^3 (the loader refuses the other tp, and micro-batches not a multiple of q^2).
inline constexpr TableRow kTpModes[] = {
    {"1d"}, {"2d", false, false, true}, {"2.5d", false, true, true}, {"3d", false, false, true}};
// ring: Colossal-AI's ring self-attention, a sequence axis of its own as ulysses and ring_attention.
inline constexpr TableRow kSpModes[] = {
    {"none"}, {"megatron"}, {"ulysses", true}, {"ring_attention", true}, {"ring", true}};
inline constexpr TableRow kPipelineSchedules[] = {{"1f1b"}, {"gpipe"}, {"interleaved"}};
inline constexpr TableRow kRecomputes[] = {{"none"}, {"selective"}, {"full"}};
inline constexpr TableRow kOffloads[] = {
    {"none"}, {"optimizer"}, {"params", false, false, false, true}, {"auto"}};
// offload params' host share of the parameter chunks. Its iteration time grows linearly with the
// fraction (docs/offload.md, OPT-13B: 4.163 / 4.531 / 5.004 s at 0.1 / 0.5 / 1.0), so among
// fractions only memory decides: 1.0 is the one that fits wherever any does, 0.5 the seed
// scenarios' (scenarios/offload/opt-13b-params.textproto) and the half that static placement
// usually needs (docs/offload.md "Why auto is slower than params 0.5").
inline constexpr double kOffloadFractions[] = {0.5, 1.0};
inline constexpr int kZeroStages = 4;
inline constexpr int kMaxVirtualStages = 8;
// The software preset's overlap options, searched on and off.
inline constexpr const char* kSoftwareSwitches[] = {"software.grad_reduce_overlap", "software.overlap_param_gather",
                                                    "software.tp_comm_overlap"};
inline constexpr int kSwitchCount = 3;

// One point, as indices into the tables (-1: the axis is fixed by the user, not set).
struct Candidate {
  int dp = 1, tp = 1, pp = 1, sp = 1;
  int virtual_stages = 1;
  int micro_batch = 1;
  int tp_depth = 0;      // 0: fixed by the user, not set
  int global_batch = 0;  // 0: the scenario's, not set (set with --vary-batch)
  int8_t tp_mode = -1, sp_mode = -1, schedule = -1, zero = -1, recompute = -1, offload = -1;
  // strategy.offload_fraction: a value of kOffloadFractions for params, 0 for the other modes
  // (set by every point when params is searched and the user did not fix the fraction, so that a
  // point never inherits the one before's); < 0: not set.
  double offload_fraction = -1;
  int8_t switches[kSwitchCount] = {-1, -1, -1};  // 0 off, 1 on, -1 fixed
};

struct SpaceShape {
  int gpus = 1;
  int layers = 1;
  int global_batch = 1;
  // Keys the user fixed with --set ("strategy.zero_stage"), and for the layout keys their values.
  std::set<std::string> fixed;
  int fixed_dp = 0, fixed_tp = 0, fixed_pp = 0, fixed_sp = 0;  // 0: searched
  std::string fixed_tp_mode, fixed_sp_mode, fixed_offload;       // "": searched
  bool vary_batch = false;  // search global_batch too (not with strategy.global_batch fixed)
};

// The shape from the user's --set list: records the fixed keys (and layout values; Error, bad
// input, when such a value is not a positive integer).
void fix_keys(SpaceShape& shape, const std::vector<std::string>& sets);

// The points of one pipeline group: one (layout, sp_mode, global batch, schedule, virtual stages),
// consecutive in the enumeration, over the inner axes in this order (outermost first): zero_stage,
// recompute, offload (with its fraction), micro_batch, then the switches (kSoftwareSwitches' order,
// the last innermost). A row is one (zero_stage, recompute, offload); the points of a row and
// micro-batch are a block of switch settings. So the group's points number
// rows() x micro_batches.size() x switch_settings(), the point (row, m, s) is the
// ((row x micro_batches.size() + m) x switch_settings() + s)-th of the group, and a count over
// whole blocks, rows or the group is that product (search_run.cc counts refused keys so).
struct PointGroup {
  Candidate head;  // dp, tp, pp, sp, tp_mode, tp_depth, sp_mode, global_batch, schedule, virtual_stages
  std::vector<int> zeros, recomputes;                // table values (-1: fixed by the user)
  std::vector<std::pair<int, double>> offloads;      // (kOffloads index or -1, offload_fraction or -1)
  std::vector<int> micro_batches;                    // 0: fixed by the user
  std::vector<int> switches[kSwitchCount];           // 0 off, 1 on; {-1}: fixed
  uint64_t rows() const { return uint64_t(zeros.size()) * recomputes.size() * offloads.size(); }
  uint64_t switch_settings() const;
  uint64_t size() const { return rows() * micro_batches.size() * switch_settings(); }
  // The point (row, micro-batch index m, switch setting s).
  Candidate point(uint64_t row, size_t m, uint64_t s) const;
};

// Calls visit for every pipeline group in enumeration order: layouts in increasing tp, then pp,
// then sp_mode and sp, then global batch, tp_mode / tp_depth and the pipeline. A group with no
// point is not visited.
void for_each_group(const SpaceShape& shape, const std::function<void(const PointGroup&)>& visit);

// Calls visit for every point, layouts in increasing tp, then pp, then sp: every point of every
// group (for_each_group) in its order.
void for_each_candidate(const SpaceShape& shape, const std::function<void(const Candidate&)>& visit);

// The point's assignments, "strategy.tp=2" ... (cluster.gpus not included).
std::vector<std::string> candidate_sets(const Candidate& c);

}  // namespace tandem::search
