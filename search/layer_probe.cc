#include "search/layer_probe.h"

#include <algorithm>
#include <limits>
#include <variant>

#include "search/probe_replay.h"
#include "shared/memory_timeline.h"
#include "shared/param_layout.h"
#include "shared/schedule.h"

namespace tandem::search {

LayerProbes::LayerProbes(const ClusterSpec& cluster)
    : compute_flash_(cluster, sim::KernelEfficiency{}, true),
      compute_plain_(cluster, sim::KernelEfficiency{}, false),
      comm_(cluster) {}

const LayerCosts& LayerProbes::costs(const Scenario& point) {
  const StrategySpec& s = point.strategy;
  const auto key = std::make_tuple(s.tp, s.sp, int(s.sp_mode), int(s.tp_mode), s.tp_depth, s.micro_batch,
                                   int(s.recompute), int(s.offload), point.software.tp_comm_overlap, s.flash_attention,
                                   int(s.offload_fraction * 1e6 + 0.5));
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, measure(point)).first;
  return it->second;
}

std::vector<LayerProbes::Key> LayerProbes::keys() const {
  std::vector<Key> k;
  for (const auto& [key, costs] : cache_) k.push_back(key);
  return k;
}

namespace {

// The forward-phase layer of a kernel or collective task (-1: another kind of task, or not a
// forward; -2: a forward task of no layer, the model's ends).
int forward_layer(const Task& t) {
  if (const auto* k = std::get_if<Compute>(&t.op)) return k->phase != Phase::kForward ? -1 : k->layer >= 0 ? k->layer : -2;
  if (const auto* c = std::get_if<Collective>(&t.op)) return c->phase != Phase::kForward ? -1 : c->layer >= 0 ? c->layer : -2;
  return -1;
}

bool is_work(const Task& t) { return std::holds_alternative<Compute>(t.op) || std::holds_alternative<Collective>(t.op); }

// LayerCosts::layer_stored_bytes of a one-layer probe's program (rank 0): the least live
// activation bytes between the layer's last forward task and the next work task (the layer's own
// temporaries freed, the next operation's not yet allocated: the state Q), less the least live
// bytes from the last work task before the layer's first forward task (the embedding's) to that
// first task (the state P). Any P there gives a lower bound: after - before = (bytes allocated
// after P and live at Q) - (bytes live at P and freed by Q), and what is allocated after P and
// live at Q is the layer's (nothing but Alloc and Free tasks lies between P and the layer's first
// task, and those Allocs are its inputs' and outputs'). The least P counts the most of the layer:
// it comes before the layer's own Allocs and after the embedding frees what it no longer needs
// (Megatron-SP's full embedding output once its reduce-scatter is done). Until Session 13 P was the
// most live bytes of that window, which took in the layer's Allocs and the embedding's full output:
// under full recompute, where the layer keeps only its output (the next layer's checkpointed
// input), the difference went negative and the figure was 0 (OPT-13B, micro-batch 4: 80 MiB;
// LayerProbe.FullRecomputeStoresTheLayersOutput).
int64_t stored_activation_bytes(const Program& program) {
  const size_t n = program.tasks.size();
  size_t first = n, last = n;
  for (size_t i = 0; i < n; ++i)
    if (forward_layer(program.tasks[i]) == 0) {
      if (first == n) first = i;
      last = i;
    }
  if (first == n) return 0;
  size_t before_at = n;  // the last work task before the layer's first (n: none: then the most before it)
  for (size_t i = first; i-- > 0;)
    if (is_work(program.tasks[i])) {
      before_at = i;
      break;
    }
  size_t after_last = n;
  for (size_t i = last + 1; i < n; ++i)
    if (is_work(program.tasks[i])) {
      after_last = i;
      break;
    }
  int64_t before = before_at == n ? 0 : std::numeric_limits<int64_t>::max();
  int64_t after = std::numeric_limits<int64_t>::max();
  size_t i = 0;
  walk_memory(program, [&](const Task&, const MemoryBreakdown& device, int64_t) {
    const int64_t a = device[BufferRole::kActivation];
    // The state after task i.
    if (before_at == n && i < first) before = std::max(before, a);
    if (before_at != n && i >= before_at && i < first) before = std::min(before, a);
    if (i >= last && i < after_last) after = std::min(after, a);
    ++i;
  });
  return after > before && after != std::numeric_limits<int64_t>::max() ? after - before : 0;
}

// LayerCosts::tp_comm_s of a one-layer probe: per phase (forward, backward, recompute) of the
// layer, the idle gaps of the compute stream from the moment it could start the layer (the end of
// its task before the layer's first kernel, or of a task of another layer or of no phase the first
// kernel waits for) to the end of its last kernel: what the compute stream waits for the layer's
// collectives and ring exchanges, given `times` (rank 0's).
double exposed_layer_comm_s(const Program& program, const TaskTimes& times) {
  std::vector<TaskId> compute;
  for (const Task& t : program.tasks)
    if (t.stream == Stream::kCompute) compute.push_back(t.id);
  const auto in_layer = [&](TaskId id, Phase ph) {
    const Task& t = program.tasks[id];
    if (const auto* k = std::get_if<Compute>(&t.op)) return k->layer == 0 && k->phase == ph;
    if (const auto* c = std::get_if<Collective>(&t.op)) return c->layer == 0 && c->phase == ph;
    return false;
  };
  double exposed = 0;
  for (const Phase ph : {Phase::kForward, Phase::kBackward, Phase::kRecompute}) {
    size_t first = compute.size(), last = 0;
    for (size_t i = 0; i < compute.size(); ++i)
      if (in_layer(compute[i], ph) && std::holds_alternative<Compute>(program.tasks[compute[i]].op)) {
        if (first == compute.size()) first = i;
        last = i;
      }
    if (first == compute.size()) continue;
    double from = first > 0 ? times.end_s[compute[first - 1]] : 0.0;
    for (TaskId d : program.tasks[compute[first]].deps)
      if (!in_layer(d, ph)) from = std::max(from, times.end_s[d]);
    // The stream's idle gaps, summed (not span - busy: back-to-back tasks leave exactly 0).
    for (size_t i = first; i <= last; ++i) {
      const double start = times.start_s[compute[i]];
      if (start > from) exposed += start - from;
      from = std::max(from, times.end_s[compute[i]]);
    }
  }
  return exposed;
}

}  // namespace

LayerCosts LayerProbes::measure(const Scenario& point) {
  Scenario probe = point;
  probe.model.layers = 1;
  StrategySpec& s = probe.strategy;
  s.dp = 1;
  s.pp = 1;
  s.virtual_stages = 1;
  s.pp_schedule = PpSchedule::k1f1b;
  s.zero_stage = 0;
  s.global_batch = s.micro_batch;
  probe.software.overlap_param_gather = false;
  probe.cluster.gpus = s.tp * s.sp;
  // offload auto places chunks for the HBM: the probe's one layer, without the point's data
  // parallelism to shard its chunks, may find no placement where the point does (the planner's
  // out of memory). Its costs are the layer's, with nothing evicted (the whole stage's evictions
  // are search/offload_estimate.h's), so it is planned on a device it fits.
  if (s.offload == Offload::kAuto) probe.cluster.hbm_gib = std::max(probe.cluster.hbm_gib, 1024.0);
  const Schedule schedule(std::move(probe));
  const Program program = schedule.program(0);
  const sim::ComputeCostModel& compute = point.strategy.flash_attention ? compute_flash_ : compute_plain_;
  // The probe's ranks (tp x sp of them) replayed as rank 0's translations: the layer's exposed
  // tensor-parallel time (ProbeReplay.ReplayOfRankZeroIsTheReplayOfEveryRank checks it against
  // replaying every rank's program).
  ReplayCosts costs;
  costs.own = [&](const Task& t) {
    if (const auto* k = std::get_if<Compute>(&t.op)) return compute.time_s(*k, t.stream == Stream::kHost);
    if (const auto* cp = std::get_if<Copy>(&t.op))
      return cp->direction == CopyDirection::kD2D ? compute.d2d_copy_s(cp->bytes) : comm_.copy_s(double(cp->bytes));
    return 0.0;
  };
  costs.collective = [&](const Collective& col, const std::vector<int>& members) {
    return comm_.collective_s(col.op, members, double(col.bytes));
  };
  costs.p2p = [&](int src, int dst, const SendRecv& m) { return comm_.p2p_s(src, dst, double(m.bytes)); };
  const TaskTimes times = replay_symmetric(schedule.groups(), program, costs);

  LayerCosts c;
  int64_t optimizer_elements = 0;
  double optimizer_kernels_s = 0, optimizer_copies_s = 0, grad_downloads_s = 0;
  // Parameters from the layout the generators allocate (its units: embedding, layer, head).
  for (const ParamUnit& u : make_param_layout(schedule.scenario(), 0, 0).units) {
    if (u.kind == ParamUnit::Kind::kLayer) c.layer_params += u.elements;
    else if (u.kind == ParamUnit::Kind::kEmbedding) c.embedding_params += u.elements;
    else c.other_params += u.elements;
  }
  for (const Task& t : program.tasks) {
    if (const auto* k = std::get_if<Compute>(&t.op)) {
      const double time = compute.time_s(*k, t.stream == Stream::kHost);
      if (k->phase == Phase::kOptimizer) {
        optimizer_kernels_s += time;
        if (k->kernel == Kernel::kAdam) optimizer_elements += k->dims[0];
      } else if (k->layer >= 0) {
        (k->phase == Phase::kForward ? c.forward_s : k->phase == Phase::kBackward ? c.backward_s : c.recompute_s) += time;
        if (t.stream == Stream::kCompute) c.compute_stream_s += time;
      } else if (k->kernel == Kernel::kData || k->kernel == Kernel::kEmbedding || k->kernel == Kernel::kEmbeddingBwd) {
        c.first_s += time;
      } else {
        c.last_s += time;
      }
    } else if (const auto* col = std::get_if<Collective>(&t.op)) {
      const double time = comm_.collective_s(col->op, schedule.group(col->group).ranks, double(col->bytes));
      if (col->phase == Phase::kOptimizer) c.optimizer_fixed_s += time;
      else if (col->layer < 0) c.last_s += time;
    } else if (const auto* copy = std::get_if<Copy>(&t.op); copy && copy->direction != CopyDirection::kD2D) {
      optimizer_copies_s += comm_.copy_s(double(copy->bytes));  // host copies: offload's, of the optimizer
      if (copy->direction == CopyDirection::kD2H) grad_downloads_s += comm_.copy_s(double(copy->bytes));
    }
  }
  c.tp_comm_s = exposed_layer_comm_s(program, times);
  c.layer_stored_bytes = stored_activation_bytes(program);
  if (optimizer_elements > 0) {
    c.optimizer_s_per_element = optimizer_kernels_s / double(optimizer_elements);
    c.optimizer_copy_s_per_element = optimizer_copies_s / double(optimizer_elements);
    if (point.strategy.offload == Offload::kAuto) c.auto_grad_down_s_per_element = grad_downloads_s / double(optimizer_elements);
  }
  return c;
}

}  // namespace tandem::search
