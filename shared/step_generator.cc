// One rank's training iteration: persistent state, then the pipeline schedule's forward and
// backward passes (each one micro-batch through one model chunk), then the optimizer.
#include "shared/step_generator.h"

#include <algorithm>

#include "shared/auto_placement.h"
#include "shared/error.h"
#include "shared/pipeline_order.h"
#include "shared/process_groups.h"
#include "shared/step_state.h"

namespace tandem {
namespace {

class StepGenerator : public ProgramGenerator {
 public:
  StepGenerator(const Scenario& sc, const RankGrid& grid) : sc_(sc), grid_(grid) {}
  Program generate(int rank) const override;
  // offload auto: the chunks on the host (shared/auto_placement.h).
  void set_host_chunks(std::vector<bool> host) { host_ = std::move(host), auto_ = true; }
  // offload auto: the per-operator eviction (empty: none) and where to record it (planning only).
  void set_operator_plan(AutoOperatorPlan plan, AutoRecord* record = nullptr) {
    plan_ = std::move(plan), record_ = record;
  }

 private:
  void forward(StepState& st, int chunk, int mb) const;
  void backward(StepState& st, int chunk, int mb) const;

  const Scenario& sc_;
  const RankGrid& grid_;
  std::vector<bool> host_;
  bool auto_ = false;
  AutoOperatorPlan plan_;
  AutoRecord* record_ = nullptr;
};

// Transformer Engine's fp8_autocast wraps a chunk's transformer layers (Megatron-Core's
// TransformerBlock), not its embedding or head: the forward amax reduction follows the chunk's
// last layer, the backward one the backward of its first layer (shared/fp8_state.cc).
bool is_last_layer_of_chunk(const StepState& st, int chunk, int unit) {
  const std::vector<int> units = st.chunk_units(chunk);
  for (auto it = units.rbegin(); it != units.rend(); ++it)
    if (st.layout.units[*it].kind == ParamUnit::Kind::kLayer) return *it == unit;
  return false;
}

bool is_first_layer_of_chunk(const StepState& st, int chunk, int unit) {
  for (int u : st.chunk_units(chunk))
    if (st.layout.units[u].kind == ParamUnit::Kind::kLayer) return u == unit;
  return false;
}

void StepGenerator::forward(StepState& st, int chunk, int mb) const {
  const StepDims& d = st.dims;
  BufferId x = kNoId;
  for (int u : st.chunk_units(chunk)) {
    const ParamUnit& pu = st.layout.units[u];
    ensure_params(st, u, true);
    if (pu.kind == ParamUnit::Kind::kEmbedding) {
      x = emit_embedding_forward(st, u, chunk, mb);
    } else if (pu.kind == ParamUnit::Kind::kLayer) {
      if (x == kNoId) {  // the chunk's input comes from the previous virtual stage
        x = st.program.buffer(st.buffer_name("x_recv", pu.layer, mb), d.n_local * d.hidden * dtype_bytes(d.dtype), d.dtype,
                        BufferRole::kActivation);
        const TaskId posted = st.program.last_on(Stream::kCompute);  // post the receive when compute gets here
        if (posted == kNoId) st.program.alloc(x, Stream::kRecvFwd);
        else st.program.alloc(x, Stream::kRecvFwd, {posted});
        st.program.recv(st.pipeline_peer(-1), x, 0, mb, Stream::kRecvFwd);
      }
      LayerActs a;
      a.layer = pu.layer;
      a.mb = mb;
      a.x = x;
      emit_layer_forward(st, u, a, Phase::kForward, &x);
      st.keep_layer(chunk, a);
      if (d.fp8 && is_last_layer_of_chunk(st, chunk, u)) emit_amax_reduction(st, true, mb);
    } else {
      emit_head_forward(st, u, chunk, mb, x);
      x = kNoId;
    }
    release_params_after(st, u, true);
  }
  if (x != kNoId) {  // not the last virtual stage: hand the activations on
    st.program.send(st.pipeline_peer(+1), x, 0, mb, Stream::kSendFwd);
    st.program.free(x, Stream::kSendFwd);
  }
}

void StepGenerator::backward(StepState& st, int chunk, int mb) const {
  const StepDims& d = st.dims;
  const std::vector<int> units = st.chunk_units(chunk);
  BufferId g = kNoId;
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    const int u = *it;
    const ParamUnit& pu = st.layout.units[u];
    ensure_params(st, u, false);
    ensure_grads(st, u);
    if (pu.kind == ParamUnit::Kind::kHead) {
      g = emit_head_backward(st, u, chunk, mb);
    } else if (pu.kind == ParamUnit::Kind::kLayer) {
      if (g == kNoId) {  // the gradient comes from the next virtual stage
        g = st.program.buffer(st.buffer_name("dx_recv", pu.layer, mb), d.n_local * d.hidden * dtype_bytes(d.dtype), d.dtype,
                        BufferRole::kActivation);
        const TaskId posted = st.program.last_on(Stream::kCompute);
        if (posted == kNoId) st.program.alloc(g, Stream::kRecvBwd);
        else st.program.alloc(g, Stream::kRecvBwd, {posted});
        st.program.recv(st.pipeline_peer(+1), g, 1, mb, Stream::kRecvBwd);
      }
      LayerActs a = st.take_layer(chunk, mb);
      g = emit_layer_backward(st, u, a, g);
      if (d.fp8 && is_first_layer_of_chunk(st, chunk, u)) emit_amax_reduction(st, false, mb);
    } else {
      emit_embedding_backward(st, u, chunk, mb, g);
      g = kNoId;
    }
    release_params_after(st, u, false);
    after_unit_backward(st, u, mb);
  }
  if (g != kNoId) {
    st.program.send(st.pipeline_peer(-1), g, 1, mb, Stream::kSendBwd);
    st.program.free(g, Stream::kSendBwd);
  }
}

Program StepGenerator::generate(int rank) const {
  StepState st(sc_, grid_, rank, auto_ ? &host_ : nullptr);
  AutoRecord record;
  if (auto_) {
    st.auto_record = record_ != nullptr ? record_ : &record;
    if (!plan_.uses.empty()) st.auto_plan = &plan_;
  }
  // About 90 tasks and 30 buffers per layer and micro-batch (measured on the GPT generators).
  const size_t work = size_t(st.micro_batches) * (st.layout.units.size() + 2);
  st.program.reserve(work * 100 + 1024, work * 40 + 1024);
  emit_persistent_state(st);
  if (st.dims.fp8) emit_fp8_state(st);
  emit_param_gathers(st);
  const StrategySpec& s = sc_.strategy;
  for (const PipeOp& op : pipeline_order(s.pp_schedule, s.pp, st.coord.pp, st.micro_batches, s.virtual_stages)) {
    if (op.forward) forward(st, op.chunk, op.microbatch);
    else backward(st, op.chunk, op.microbatch);
  }
  emit_optimizer(st);
  return std::move(st.program).finish();
}

}  // namespace

AutoPlacement plan_offload_auto(const Scenario& sc, const RankGrid& grid) {
  const ParamLayout layout = make_param_layout(sc, 0, 0);
  int64_t largest = 0;  // a chunk's parameters gathered; chunks kept gathered are never evicted
  for (const GradBucket& b : layout.buckets)
    if (b.host_optimizer) largest = std::max(largest, b.elements * dtype_bytes(sc.strategy.dtype));
  return plan_auto_placement(sc, int(layout.buckets.size()), largest,
                             [&](const std::vector<bool>& host, const AutoOperatorPlan* plan, AutoRecord* record) {
                               StepGenerator g(sc, grid);
                               g.set_host_chunks(host);
                               g.set_operator_plan(plan != nullptr ? *plan : AutoOperatorPlan{}, record);
                               return g.generate(0);
                             });
}

std::unique_ptr<ProgramGenerator> make_step_generator(const Scenario& sc, const RankGrid& grid,
                                                      const std::vector<ProcessGroup>&) {
  auto gen = std::make_unique<StepGenerator>(sc, grid);
  if (sc.strategy.offload == Offload::kAuto) {
    AutoPlacement placement = plan_offload_auto(sc, grid);
    gen->set_host_chunks(std::move(placement.host));
    gen->set_operator_plan(std::move(placement.plan));
  }
  return gen;
}

}  // namespace tandem
