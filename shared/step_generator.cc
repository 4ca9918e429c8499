// One rank's training iteration: persistent state, then the pipeline schedule's forward and
// backward passes (each one micro-batch through one model chunk), then the optimizer.
#include "shared/step_generator.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "shared/auto_placement.h"
#include "shared/error.h"
#include "shared/pipeline_order.h"
#include "shared/process_groups.h"
#include "shared/program_size.h"
#include "shared/step_state.h"

namespace tandem {
namespace {

// Pipeline sends whose completion the compute stream has not waited for yet
// (software.pipeline_send_wait): the sent buffer and whether a forward pass sent it; under
// software.pipeline_partitioned_tensor the buffer is the meta message and `also` the send of the
// slice after it (the slice itself outlives the send).
struct PendingSend {
  BufferId buffer;
  bool forward;
  TaskId also = kNoId;
};
using PendingSends = std::vector<PendingSend>;

// A pipeline receive: the pass's input (or output gradient) buffer, and the part of it the
// receive writes (the buffer itself, or this rank's 1/tp slice under software.pipeline_scatter_gather,
// all-gathered into the buffer when the pass takes it).
struct Received {
  BufferId full = kNoId;
  BufferId part = kNoId;
  BufferId meta = kNoId;  // DeepSpeed's partition meta message (software.pipeline_partitioned_tensor)
};

// The pipeline messages of one rank's schedule: sends not waited for yet, and receives posted
// ahead of their pass (by (forward, chunk, micro-batch)), as the frameworks' batched exchanges post
// them.
struct PipeMessages {
  PendingSends sends;
  std::map<std::tuple<bool, int, int>, Received> posted;
  // software.pipeline_partitioned_tensor: the slice of each sent activation a stage keeps for its
  // backward, by (chunk, micro-batch).
  std::map<std::pair<int, int>, BufferId> kept;
};

// Megatron-LM's scatter/gather of pipeline messages (software.pipeline_scatter_gather; Megatron-LM
// v3.0 megatron/p2p_communication.py:63-73, :96-103, :142-157 at d898a899): a message that is the
// same on every rank of the tensor group (1-D tensor parallelism without Megatron-SP) goes as tp
// slices of its elements, one a rank, when they divide evenly (else whole, as the code's override).
// Returns the number of slices (1: sent whole).
// DeepSpeed's PartitionedTensor (software.pipeline_partitioned_tensor) slices the same messages
// (it splits uneven ones unevenly; tandem sends those whole, as for Megatron).
int64_t pipeline_slices(const StepState& st, const SoftwareSpec& sw) {
  const StepDims& d = st.dims;
  if (!(sw.pipeline_scatter_gather || sw.pipeline_partitioned_tensor) || d.tp == 1 || d.seq_parallel || d.tp2d_q > 1 || d.tp3d_q > 1) return 1;
  return (d.n_local * d.hidden) % d.tp == 0 ? d.tp : 1;
}

// This rank's slice of a pipeline message buffer: elements [rank * numel / tp, (rank + 1) * numel / tp)
// (split_tensor_into_1d_equal_chunks, megatron/mpu/random.py:72-85 at d898a899: a view, no copy).
BufferId pipeline_slice(StepState& st, BufferId b, int64_t slices) {
  const Buffer& buf = st.program.buffer_at(b);
  const int64_t part = buf.bytes / slices;
  return st.program.view(b, part * st.coord.tp, part, buf.dtype, buf.name + "/tp_slice");
}

// DeepSpeed's partition meta message (PartitionedTensor.to_meta, deepspeed/runtime/utils.py:723-738 at
// v0.5.4 bc7778ea): a long tensor [ndims, *size, num_parts, rank, *partition (num_parts + 1 offsets)],
// 8 bytes an element; the message is [s, b, h] (ndims 3): 8 x (tp + 7) bytes.
int64_t partition_meta_bytes(const StepState& st) { return 8 * (1 + 3 + 2 + st.dims.tp + 1); }

// Whether a pass (forward or backward) waits for a pending send before its first kernel, as the
// framework waits (docs/software.md, software.pipeline_send_wait):
//  - 1F1B (and GPipe): Megatron batches each send with the next pass's receive and waits for both
//    (p2p_communication.py _communicate: batch_isend_irecv, req.wait()): every pending send;
//  - interleaved, overlap_p2p_comm: a forward waits for the forward sends' handles, a backward for
//    the backward ones (Megatron-Core schedules.py fwd_wait_handles / bwd_wait_handles);
//  - interleaved without it: a forward and the backward after it end in one batched exchange,
//    waited before the next forward; in the cool-down, each backward's send before the next one.
bool waits_for(const SoftwareSpec& sw, PpSchedule schedule, bool forward_pass, const PendingSend& p) {
  if (schedule != PpSchedule::kInterleaved) return true;
  if (sw.overlap_p2p_comm) return p.forward == forward_pass;
  return forward_pass || !p.forward;
}

class StepGenerator : public ProgramGenerator {
 public:
  StepGenerator(const Scenario& sc, const RankGrid& grid) : sc_(sc), grid_(grid) {}
  Program generate(int rank) const override;
  // offload auto: where the chunks are (shared/auto_placement.h).
  void set_chunk_placement(ChunkPlacement placement) { placement_ = std::move(placement), auto_ = true; }
  // offload auto: the per-operator eviction (empty: none) and where to record it (planning only).
  void set_operator_plan(AutoOperatorPlan plan, AutoRecord* record = nullptr) {
    plan_ = std::move(plan), record_ = record;
  }

 private:
  void forward(StepState& st, PipeMessages& msg, int chunk, int mb) const;
  void backward(StepState& st, PipeMessages& msg, int chunk, int mb) const;
  // Whether a pass of `chunk` receives its input (forward) or its output's gradient (backward)
  // from another virtual stage, and the posting of that receive (its Alloc waits for the compute
  // stream's last task: the receive is posted when compute gets there).
  bool receives(const StepState& st, bool forward_pass, int chunk) const;
  Received post_receive(StepState& st, bool forward_pass, int chunk, int mb) const;
  // The receive of a pass: the one posted ahead, else posted now.
  Received take_receive(StepState& st, PipeMessages& msg, bool forward_pass, int chunk, int mb) const;
  // The received buffer, whole: a sliced message is all-gathered over the tensor group after the
  // exchange, i.e. after the pass's send waits (Megatron gathers after req.wait() and
  // torch.cuda.synchronize(), p2p_communication.py:134-157 at d898a899).
  BufferId gather_received(StepState& st, const Received& r, bool forward_pass, int layer, int mb) const;
  // The compute stream waits for the pending sends a pass waits for: the sent buffer is freed on
  // the compute stream, after its send (shared/program_builder.h orders the Free after the send).
  void wait_sends(StepState& st, PendingSends& sends, bool forward_pass) const;
  // A pass's output handed to the next (forward) or previous (backward) virtual stage.
  void send(StepState& st, PipeMessages& msg, BufferId b, bool forward_pass, int chunk, int mb) const;
  // The same under software.pipeline_partitioned_tensor: `slice` is this rank's view of `b`.
  void send_partitioned(StepState& st, PipeMessages& msg, BufferId b, BufferId slice, bool forward_pass, int chunk,
                        int mb) const;
  // software.pipeline_partitioned_tensor: the forward output of (chunk, mb) all-gathered back from
  // its kept slice before the backward (kNoId when none was kept); the caller frees it.
  BufferId rebuild_output(StepState& st, PipeMessages& msg, int chunk, int layer, int mb) const;

  const Scenario& sc_;
  const RankGrid& grid_;
  ChunkPlacement placement_;
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

bool StepGenerator::receives(const StepState& st, bool forward_pass, int chunk) const {
  const std::vector<int> units = st.chunk_units(chunk);
  return st.layout.units[forward_pass ? units.front() : units.back()].kind == ParamUnit::Kind::kLayer;
}

Received StepGenerator::post_receive(StepState& st, bool forward_pass, int chunk, int mb) const {
  const StepDims& d = st.dims;
  const std::vector<int> units = st.chunk_units(chunk);
  const ParamUnit& pu = st.layout.units[forward_pass ? units.front() : units.back()];
  const Stream s = forward_pass ? Stream::kRecvFwd : Stream::kRecvBwd;
  const BufferId b = st.program.buffer(st.buffer_name(forward_pass ? "x_recv" : "dx_recv", pu.layer, mb),
                                       d.n_local * d.hidden * dtype_bytes(d.dtype), d.dtype, BufferRole::kActivation);
  const TaskId posted = st.program.last_on(Stream::kCompute);  // post the receive when compute gets here
  if (posted == kNoId) st.program.alloc(b, s);
  else st.program.alloc(b, s, {posted});
  const int64_t slices = pipeline_slices(st, sc_.software);
  Received r{b, slices > 1 ? pipeline_slice(st, b, slices) : b};
  const int peer = st.pipeline_peer(forward_pass ? -1 : +1);
  if (slices > 1 && sc_.software.pipeline_partitioned_tensor) {  // the meta message comes first
    r.meta = st.program.buffer(st.buffer_name(forward_pass ? "x_meta" : "dx_meta", pu.layer, mb),
                               partition_meta_bytes(st), DType::kUint8, BufferRole::kComm);
    st.program.alloc(r.meta, s);
    st.program.recv(peer, r.meta, forward_pass ? 0 : 1, mb, s);
  }
  st.program.recv(peer, r.part, forward_pass ? 0 : 1, mb, s);
  return r;
}

Received StepGenerator::take_receive(StepState& st, PipeMessages& msg, bool forward_pass, int chunk, int mb) const {
  const auto it = msg.posted.find({forward_pass, chunk, mb});
  if (it == msg.posted.end()) return post_receive(st, forward_pass, chunk, mb);
  const Received r = it->second;
  msg.posted.erase(it);
  return r;
}

BufferId StepGenerator::gather_received(StepState& st, const Received& r, bool forward_pass, int layer, int mb) const {
  if (r.part == r.full) return r.full;
  const Buffer& full = st.program.buffer_at(r.full);
  st.tp_collective(CollectiveOp::kAllGather, r.part, r.full, full.bytes, forward_pass ? Phase::kForward : Phase::kBackward,
                   layer, mb, ReduceOp::kSum, full.dtype, {st.program.last_on(Stream::kCompute)});
  st.release(r.meta);
  return r.full;
}

void StepGenerator::wait_sends(StepState& st, PendingSends& sends, bool forward_pass) const {
  size_t kept = 0;
  for (const PendingSend& p : sends) {
    if (waits_for(sc_.software, sc_.strategy.pp_schedule, forward_pass, p))
      st.program.free(p.buffer, Stream::kCompute, {p.also});
    else sends[kept++] = p;
  }
  sends.resize(kept);
}

void StepGenerator::send(StepState& st, PipeMessages& msg, BufferId b, bool forward_pass, int chunk, int mb) const {
  const Stream s = forward_pass ? Stream::kSendFwd : Stream::kSendBwd;
  const int64_t slices = pipeline_slices(st, sc_.software);
  const BufferId sent = slices > 1 ? pipeline_slice(st, b, slices) : b;
  if (slices > 1 && sc_.software.pipeline_partitioned_tensor) {
    send_partitioned(st, msg, b, sent, forward_pass, chunk, mb);
    return;
  }
  st.program.send(st.pipeline_peer(forward_pass ? +1 : -1), sent, forward_pass ? 0 : 1, mb, s);
  if (sc_.software.pipeline_send_wait) msg.sends.push_back({b, forward_pass});
  else st.program.free(b, s);
}

// DeepSpeed's PipelineEngine at v0.5.4 (bc7778ea5b6018c4982816a1bf4d11fb46eb111f):
// PartitionedTensor(tensor) clones this rank's 1/tp of the elements (deepspeed/runtime/utils.py:
// 682-692: narrow(...).clone()); the forward then drops the full output (`outputs.data =
// torch.zeros(1)`, pipe/engine.py:591-600) and keeps the slice for its backward, the backward's
// gradient is dropped after its sends (:885-930); the meta message and the slice go as two
// synchronous sends (p2p.send, :867-871 and :913-916).
void StepGenerator::send_partitioned(StepState& st, PipeMessages& msg, BufferId b, BufferId slice, bool forward_pass,
                                     int chunk, int mb) const {
  const Stream s = forward_pass ? Stream::kSendFwd : Stream::kSendBwd;
  const int peer = st.pipeline_peer(forward_pass ? +1 : -1);
  const int64_t bytes = st.program.buffer_at(b).bytes / st.dims.tp;
  const DType dtype = st.program.buffer_at(b).dtype;
  const std::vector<int> units = st.chunk_units(chunk);
  const int layer = st.layout.units[forward_pass ? units.back() : units.front()].layer;
  const BufferId part = st.program.buffer(st.buffer_name(forward_pass ? "y_part" : "dx_part", layer, mb), bytes,
                                          dtype, BufferRole::kActivation);
  st.program.alloc(part, Stream::kCompute);
  st.program.copy(CopyDirection::kD2D, slice, part, Stream::kCompute);
  st.program.free(b, Stream::kCompute);
  const BufferId meta = st.program.buffer(st.buffer_name(forward_pass ? "y_meta" : "dx_meta_send", layer, mb),
                                          partition_meta_bytes(st), DType::kUint8, BufferRole::kComm);
  st.program.alloc(meta, Stream::kCompute);
  st.program.send(peer, meta, forward_pass ? 0 : 1, mb, s);
  const TaskId sent = st.program.send(peer, part, forward_pass ? 0 : 1, mb, s);
  if (forward_pass) msg.kept[{chunk, mb}] = part;
  else st.program.free(part, s);
  if (sc_.software.pipeline_send_wait) msg.sends.push_back({meta, forward_pass, sent});
  else st.program.free(meta, s);
}

// The forward output a stage partitioned, rebuilt before the micro-batch's backward
// (pipe/engine.py:650-657 at v0.5.4: PartitionedTensor.from_meta, whose meta.tolist() waits for the
// GPU, then full(): this rank's slice copied into its place of a new full buffer and an all-gather
// over the tensor group, deepspeed/runtime/utils.py:693-721). tandem's backward does not read it:
// it is freed after the pass, as the engine frees it (engine.py:682-685).
BufferId StepGenerator::rebuild_output(StepState& st, PipeMessages& msg, int chunk, int layer, int mb) const {
  const auto it = msg.kept.find({chunk, mb});
  if (it == msg.kept.end()) return kNoId;
  const BufferId part = it->second;
  msg.kept.erase(it);
  const int64_t bytes = st.program.buffer_at(part).bytes;  // (a reference would not outlive new buffers)
  const DType dtype = st.program.buffer_at(part).dtype;
  const BufferId full = st.program.buffer(st.buffer_name("y_full", layer, mb), bytes * st.dims.tp, dtype,
                                          BufferRole::kActivation);
  st.program.alloc(full, Stream::kCompute);
  const BufferId mine = st.program.view(full, bytes * st.coord.tp, bytes, dtype, "y_full/tp_slice");
  st.program.copy(CopyDirection::kD2D, part, mine, Stream::kCompute);
  st.program.free(part, Stream::kCompute);
  st.tp_collective(CollectiveOp::kAllGather, mine, full, bytes * st.dims.tp, Phase::kBackward, layer, mb,
                   ReduceOp::kSum, dtype, {st.program.last_on(Stream::kCompute)});
  return full;
}

void StepGenerator::forward(StepState& st, PipeMessages& msg, int chunk, int mb) const {
  const StepDims& d = st.dims;
  BufferId x = kNoId;
  // A chunk that starts with the embedding receives nothing: its pass waits at once. Otherwise the
  // wait follows the posting of the receive, which the framework batches with the sends.
  if (!receives(st, true, chunk)) wait_sends(st, msg.sends, true);
  for (int u : st.chunk_units(chunk)) {
    const ParamUnit& pu = st.layout.units[u];
    ensure_params(st, u, true);
    if (pu.kind == ParamUnit::Kind::kEmbedding) {
      x = emit_embedding_forward(st, u, chunk, mb);
    } else if (pu.kind == ParamUnit::Kind::kLayer) {
      if (x == kNoId) {  // the chunk's input comes from the previous virtual stage
        const Received r = take_receive(st, msg, true, chunk, mb);
        wait_sends(st, msg.sends, true);
        x = gather_received(st, r, true, pu.layer, mb);
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
  if (x != kNoId) send(st, msg, x, true, chunk, mb);  // not the last virtual stage: hand the activations on
}

void StepGenerator::backward(StepState& st, PipeMessages& msg, int chunk, int mb) const {
  const StepDims& d = st.dims;
  const std::vector<int> units = st.chunk_units(chunk);
  BufferId g = kNoId;
  BufferId rebuilt = kNoId;  // software.pipeline_partitioned_tensor: the forward output, gathered back
  if (!receives(st, false, chunk)) wait_sends(st, msg.sends, false);
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    const int u = *it;
    const ParamUnit& pu = st.layout.units[u];
    ensure_params(st, u, false);
    ensure_grads(st, u);
    if (pu.kind == ParamUnit::Kind::kHead) {
      g = emit_head_backward(st, u, chunk, mb);
    } else if (pu.kind == ParamUnit::Kind::kLayer) {
      if (g == kNoId) {  // the gradient comes from the next virtual stage
        const Received r = take_receive(st, msg, false, chunk, mb);
        wait_sends(st, msg.sends, false);
        rebuilt = rebuild_output(st, msg, chunk, pu.layer, mb);
        g = gather_received(st, r, false, pu.layer, mb);
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
  st.release(rebuilt);  // freed after the pass (engine.py:682-685), before the gradient's send
  if (g != kNoId) send(st, msg, g, false, chunk, mb);
}

Program StepGenerator::generate(int rank) const {
  StepState st(sc_, grid_, rank, auto_ ? &placement_ : nullptr);
  AutoRecord record;
  if (auto_) {
    st.auto_record = record_ != nullptr ? record_ : &record;
    if (!plan_.uses.empty()) st.auto_plan = &plan_;
  }
  // About 90 tasks and 30 buffers per layer and micro-batch (measured on the GPT generators), or
  // shared/program_size.h's upper estimate where it is larger (tp_comm_overlap's ring exchanges,
  // recompute, sequence parallelism: the 530B search's best point has 206,497 tasks a stage
  // against 90k reserved here, and regrowing the vectors twice moved every task twice). Reserved
  // memory is only address space until written.
  const size_t work = size_t(st.micro_batches) * (st.layout.units.size() + 2);
  const size_t tasks = std::max(work * 100 + 1024, size_t(std::max<int64_t>(0, estimate_program_tasks(sc_))));
  st.program.reserve(tasks, std::max(work * 40 + 1024, tasks * 2 / 5));
  emit_persistent_state(st);
  if (st.dims.fp8) emit_fp8_state(st);
  emit_param_gathers(st);
  const StrategySpec& s = sc_.strategy;
  PipeMessages msg;
  const std::vector<PipeOp> order = pipeline_order(s.pp_schedule, s.pp, st.coord.pp, st.micro_batches, s.virtual_stages);
  // The interleaved schedule's exchanges post receives ahead of their pass (Megatron's batches):
  //  - without overlap_p2p_comm, the exchange before a forward that a backward follows also posts
  //    that backward's receive (send_forward_backward_recv_forward_backward,
  //    megatron/schedules.py:473 at d898a899; megatron/core/pipeline_parallel/schedules.py:1076 at
  //    baf94af3), so that two neighbours each wait for a send the other has a receive posted for;
  //  - with it, each pass's exchange posts the receive of the next pass of its direction
  //    (send_forward_recv_forward, send_backward_recv_backward: schedules.py:972, :1009 there).
  const bool ahead = sc_.software.pipeline_send_wait && s.pp_schedule == PpSchedule::kInterleaved;
  auto post_ahead = [&](size_t i) {
    if (i >= order.size() || !receives(st, order[i].forward, order[i].chunk)) return;
    const auto key = std::make_tuple(order[i].forward, order[i].chunk, order[i].microbatch);
    if (!msg.posted.count(key)) msg.posted[key] = post_receive(st, order[i].forward, order[i].chunk, order[i].microbatch);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    const PipeOp& op = order[i];
    if (ahead && !sc_.software.overlap_p2p_comm && op.forward && i + 1 < order.size() && !order[i + 1].forward) {
      if (receives(st, true, op.chunk)) post_ahead(i);  // the forward's own receive first, in stream order
      post_ahead(i + 1);
    }
    if (op.forward) forward(st, msg, op.chunk, op.microbatch);
    else backward(st, msg, op.chunk, op.microbatch);
    if (ahead && sc_.software.overlap_p2p_comm)
      for (size_t j = i + 1; j < order.size(); ++j)
        if (order[j].forward == op.forward) {
          post_ahead(j);
          break;
        }
  }
  // Sends still pending (the last exchange, or an interleaved schedule's last forward send with
  // overlap_p2p_comm, whose handle Megatron-Core never waits) are waited for before the optimizer.
  for (const PendingSend& p : msg.sends) st.program.free(p.buffer, Stream::kCompute, {p.also});
  emit_optimizer(st);
  return std::move(st.program).finish();
}

}  // namespace

AutoPlacement plan_offload_auto(const Scenario& sc, const RankGrid& grid) {
  const ParamLayout layout = make_param_layout(sc, 0, 0);
  int64_t largest = 0;  // a chunk's parameters gathered; chunks kept gathered are never evicted
  std::vector<int64_t> fp32_shard;  // per chunk in execution order (buckets are in backward order)
  for (auto b = layout.buckets.rbegin(); b != layout.buckets.rend(); ++b) {
    if (b->host_optimizer) largest = std::max(largest, b->elements * dtype_bytes(sc.strategy.dtype));
    fp32_shard.push_back(b->host_optimizer ? b->shard_elements * 4 : 0);
  }
  return plan_auto_placement(sc, fp32_shard, largest,
                             [&](const ChunkPlacement& placement, const AutoOperatorPlan* plan, AutoRecord* record) {
                               StepGenerator g(sc, grid);
                               g.set_chunk_placement(placement);
                               g.set_operator_plan(plan != nullptr ? *plan : AutoOperatorPlan{}, record);
                               return g.generate(0);
                             });
}

std::unique_ptr<ProgramGenerator> make_step_generator(const Scenario& sc, const RankGrid& grid,
                                                      const std::vector<ProcessGroup>&) {
  auto gen = std::make_unique<StepGenerator>(sc, grid);
  if (sc.strategy.offload == Offload::kAuto) {
    AutoPlacement placement = plan_offload_auto(sc, grid);
    gen->set_chunk_placement(std::move(placement.chunks));
    gen->set_operator_plan(std::move(placement.plan));
  }
  return gen;
}

}  // namespace tandem
