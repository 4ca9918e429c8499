// The resolver's software part (shared/proto/scenario.proto, message Software): every field of the
// merged preset is required (a preset file gives them all, docs/software.md), the dtype spelled
// param | fp32 | fp32-if-bf16, clip_grad finite and >= 0, the two overlaps checked against the strategy,
// and the optimizer's state (optimizer_state_dtype, master_params) checked against the dtype, the
// separate master copy and offload.
// strategy.tp_comm_overlap and strategy.overlap_param_gather, their deprecated spellings, are still
// read for one release: used when the software part does not set the field, with a note in
// Scenario::notes.
#include <utility>
#include <string>

#include "shared/error.h"
#include "shared/scenario_resolver.h"

namespace tandem {

namespace {

// The Software fields a preset must give (all but preset, framework and source).
std::string required_fields() {
  return "grad_reduce_overlap, grad_reduce_dtype, overlap_param_gather, tp_comm_overlap, loss_scale_check, "
         "clip_grad, separate_master_copy, host_dispatch_us, cross_entropy_fp32, "
         "bias_dropout_fusion, optimizer_state_dtype, master_params";
}

}  // namespace

// The optimizer's state against the rest (mixed precision only: an fp32 run keeps fp32 parameters,
// moments and no separate master whatever these say).
void Resolver::optimizer_state_rules(const SoftwareSpec& spec, const StrategySpec& strategy) const {
  if (strategy.dtype == DType::kFp32) return;
  const DType params = strategy.dtype == DType::kFp8 ? DType::kBf16 : strategy.dtype;
  if (spec.master_params == MasterParams::kRemainder) {
    // Apex DistributedFusedAdam: "if model is BF16 and optimizer is FP32, store bits required to
    // reconstruct FP32 params" (store_param_remainders; the low 16 bits of an fp32 are what bf16 drops).
    if (params != DType::kBf16)
      fail("software.master_params", "remainder keeps the 16 bits an fp32 value has beyond a bf16 one: it needs bf16 "
                                     "parameters (strategy.dtype bf16 or fp8), got " +
                                         std::string(to_string(strategy.dtype)) + see("strategy.dtype"));
    if (spec.optimizer_state_dtype != OptimizerStateDType::kFp32)
      fail("software.master_params", "remainder rebuilds fp32 parameters for an fp32 optimizer: it needs "
                                     "optimizer_state_dtype fp32, got param" + see("software.optimizer_state_dtype"));
  }
  if (spec.master_params != MasterParams::kFp32 && spec.separate_master_copy)
    fail("software.separate_master_copy", "the separate master copy casts an fp32 master back to the parameters; "
                                          "with master_params " + std::string(to_string(spec.master_params)) +
                                          " the optimizer writes the parameters itself: set separate_master_copy "
                                          "false" + see("software.master_params"));
  const bool fp32_state =
      spec.optimizer_state_dtype == OptimizerStateDType::kFp32 && spec.master_params == MasterParams::kFp32;
  if (!fp32_state && strategy.offload != Offload::kNone)
    fail("software.optimizer_state_dtype", "offload runs the host's Adam over an fp32 master and fp32 moments "
                                           "(Colossal-AI cpu_adam); it needs optimizer_state_dtype fp32 and "
                                           "master_params fp32" + see("strategy.offload"));
}

SoftwareSpec Resolver::software(const StrategySpec& strategy, std::vector<std::string>& notes) const {
  const proto::Software& p = s_.software();
  SoftwareSpec spec;
  spec.preset = p.preset();
  spec.framework = p.framework();
  spec.source = p.source();
  auto need = [&](bool has, const char* field) {
    if (!has)
      fail(std::string("software.") + field, "required field is missing: a software preset gives every one of " +
                                                 required_fields() + see("software.preset"));
  };
  need(p.has_grad_reduce_overlap(), "grad_reduce_overlap");
  need(p.has_grad_reduce_dtype(), "grad_reduce_dtype");
  need(p.has_overlap_param_gather(), "overlap_param_gather");
  need(p.has_tp_comm_overlap(), "tp_comm_overlap");
  need(p.has_loss_scale_check(), "loss_scale_check");
  need(p.has_clip_grad(), "clip_grad");
  need(p.has_separate_master_copy(), "separate_master_copy");
  need(p.has_host_dispatch_us(), "host_dispatch_us");
  need(p.has_cross_entropy_fp32(), "cross_entropy_fp32");
  need(p.has_bias_dropout_fusion(), "bias_dropout_fusion");
  need(p.has_optimizer_state_dtype(), "optimizer_state_dtype");
  need(p.has_master_params(), "master_params");

  spec.grad_reduce_overlap = p.grad_reduce_overlap();
  spec.grad_reduce_dtype = choice("software.grad_reduce_dtype", p.grad_reduce_dtype(), kGradDTypeSpellings);
  spec.loss_scale_check = p.loss_scale_check();
  finite_at_most("software.clip_grad", p.clip_grad(), 1e6, "(a gradient-norm threshold)");
  if (p.clip_grad() < 0) fail("software.clip_grad", "must be >= 0 (0: no clipping), got " + num(p.clip_grad()));
  spec.clip_grad = p.clip_grad();
  spec.separate_master_copy = p.separate_master_copy();
  finite_at_most("software.host_dispatch_us", p.host_dispatch_us(), 1e6, "(microseconds a kernel)");
  if (p.host_dispatch_us() < 0)
    fail("software.host_dispatch_us", "must be >= 0 (0: CUDA graphs), got " + num(p.host_dispatch_us()));
  spec.host_dispatch_us = p.host_dispatch_us();
  spec.cross_entropy_fp32 = p.cross_entropy_fp32();
  spec.bias_dropout_fusion = p.bias_dropout_fusion();
  spec.optimizer_state_dtype =
      choice("software.optimizer_state_dtype", p.optimizer_state_dtype(), kOptimizerStateDTypeSpellings);
  spec.master_params = choice("software.master_params", p.master_params(), kMasterParamsSpellings);
  optimizer_state_rules(spec, strategy);
  // Optional (added after user presets were written): absent, every stage is bucketed.
  spec.bucket_every_stage = !p.has_bucket_every_stage() || p.bucket_every_stage();
  spec.pipeline_send_wait = p.has_pipeline_send_wait() && p.pipeline_send_wait();
  spec.overlap_p2p_comm = p.has_overlap_p2p_comm() && p.overlap_p2p_comm();
  spec.pipeline_scatter_gather = p.has_pipeline_scatter_gather() && p.pipeline_scatter_gather();
  spec.pipeline_partitioned_tensor = p.has_pipeline_partitioned_tensor() && p.pipeline_partitioned_tensor();
  if (spec.pipeline_scatter_gather && spec.pipeline_partitioned_tensor)
    fail("software.pipeline_partitioned_tensor",
         "is DeepSpeed's partitioning of pipeline messages; software.pipeline_scatter_gather is Megatron-LM's: set one");

  // The two overlaps: the software field, else the deprecated strategy spelling when given.
  auto overlap = [&](const char* field, bool software_value) -> std::pair<bool, std::string> {
    const std::string old = std::string("strategy.") + field, now = std::string("software.") + field;
    const proto::Strategy& st = s_.strategy();
    const bool given = field == std::string("tp_comm_overlap") ? st.has_tp_comm_overlap() : st.has_overlap_param_gather();
    const bool value = field == std::string("tp_comm_overlap") ? st.tp_comm_overlap() : st.overlap_param_gather();
    // The old spelling overrides a preset's value, not a software field the user set.
    const bool user_set_software = o_.where.count(now) && o_.at(now).find("(preset of ") == std::string::npos;
    if (given && !user_set_software) {
      notes.push_back(o_.at(old) + ": " + old + " is deprecated and will be refused in the next release: write " +
                      now + " (docs/software.md)");
      return {value, old};
    }
    return {software_value, now};
  };
  const auto [tp_overlap, tp_path] = overlap("tp_comm_overlap", p.tp_comm_overlap());
  const auto [gather_overlap, gather_path] = overlap("overlap_param_gather", p.overlap_param_gather());
  spec.tp_comm_overlap = tp_overlap;
  spec.overlap_param_gather = gather_overlap;
  if (spec.overlap_param_gather && strategy.zero_stage != 1 && strategy.zero_stage != 2) {
    fail(gather_path, "overlap_param_gather moves the parameter all-gather of ZeRO stages 1 and 2; it needs "
                      "zero_stage 1 or 2, got " + num(strategy.zero_stage) + see("strategy.zero_stage") +
                          " (stage 3 gathers ahead of every use already)");
  }
  if (spec.tp_comm_overlap && (strategy.sp_mode != SpMode::kMegatron || strategy.tp < 2)) {
    fail(tp_path,
         "tp_comm_overlap overlaps the all-gathers and reduce-scatters of megatron sequence parallelism: it needs "
         "sp_mode megatron and tp > 1, got sp_mode " + std::string(to_string(strategy.sp_mode)) +
             ", tp = " + num(strategy.tp) + see("strategy.sp_mode") +
             " (Megatron-Core likewise requires --sequence-parallel)");
  }
  // Megatron refuses the interleaved schedule on two stages when each forward/backward pair ends in
  // one batched exchange ("to avoid having multiple p2p sends and recvs between same 2 ranks per
  // communication batch": megatron/training/arguments.py:259-263 at baf94af3, megatron/arguments.py:
  // 144-145 at d898a899); its waits deadlock there, in tandem's schedule too.
  if (spec.pipeline_send_wait && !spec.overlap_p2p_comm && strategy.pp_schedule == PpSchedule::kInterleaved &&
      strategy.pp == 2)
    fail("software.overlap_p2p_comm",
         "the interleaved schedule on 2 pipeline stages with pipeline_send_wait needs overlap_p2p_comm true (one "
         "batched exchange a forward/backward pair deadlocks between two ranks; Megatron refuses it too), got "
         "false" + see("strategy.pp"));
  return spec;
}

}  // namespace tandem
