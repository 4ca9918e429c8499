// A scenario resolved and checked: the model, the cluster and the strategy as plain values with
// every default filled in (kv_heads, ffn_hidden, dp) and every enumerated choice parsed. This is
// what the schedule generators read; the protobuf text form (shared/proto/scenario.proto) is only
// the file format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

// kFp8 is a strategy choice, not an element type: Transformer Engine's hybrid recipe, FP8 GEMMs
// (inputs and weights e4m3 forward, gradients e5m2 backward) with bf16 everywhere else
// (shared/fp8_recipe.h). kFp8E4M3 and kFp8E5M2 are the element types of those GEMMs.
// New values are appended: the numbers are stored in traces and calibration profiles.
enum class DType : uint8_t { kFp32, kFp16, kBf16, kInt32, kUint8, kFp8, kFp8E4M3, kFp8E5M2 };
enum class Norm : uint8_t { kLayerNorm, kRmsNorm };
enum class Activation : uint8_t { kGelu, kSwiglu };
enum class TpMode : uint8_t { k1d, k2d, k2p5d, k3d };
enum class PpSchedule : uint8_t { kGpipe, k1f1b, kInterleaved };
enum class SpMode : uint8_t { kNone, kMegatron, kRing, kUlysses, kRingAttention };
enum class Recompute : uint8_t { kNone, kSelective, kFull };
enum class Offload : uint8_t { kNone, kOptimizer, kParams, kAuto };
enum class Topology : uint8_t { kFatTree, kRailOptimized };
enum class CollectiveAlgorithm : uint8_t { kAuto, kRing, kTree };
// cluster.host_cpu_vendor: the host CPUs as NCCL classes them (x86 Intel, x86 AMD, Arm).
enum class CpuVendor : uint8_t { kIntel, kAmd, kArm };
// software.grad_reduce_dtype: the training dtype, fp32, or fp32 for bf16 runs only (Megatron's
// --accumulate-allreduce-grads-in-fp32: off by default, forced on for bf16).
enum class GradDType : uint8_t { kParam, kFp32, kFp32IfBf16 };
// software.optimizer_state_dtype: Adam's moments in fp32 or in the parameters' dtype.
enum class OptimizerStateDType : uint8_t { kFp32, kParam };
// software.master_params: an fp32 master copy, the 16-bit remainder of one (beside bf16
// parameters), or none (the optimizer updates the training-dtype parameters).
enum class MasterParams : uint8_t { kFp32, kRemainder, kNone };

int dtype_bytes(DType t);
const char* to_string(DType t);
const char* to_string(Norm v);
const char* to_string(Activation v);
const char* to_string(TpMode v);
const char* to_string(PpSchedule v);
const char* to_string(SpMode v);
const char* to_string(Recompute v);
const char* to_string(Offload v);
const char* to_string(Topology v);
const char* to_string(CollectiveAlgorithm v);
const char* to_string(CpuVendor v);
const char* to_string(GradDType v);
const char* to_string(OptimizerStateDType v);
const char* to_string(MasterParams v);

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    // resolved: == heads unless grouped-query attention
  int ffn_hidden = 0;  // resolved: 4*hidden when the file says 0
  int vocab = 0;
  int seq_len = 0;
  Norm norm = Norm::kLayerNorm;
  Activation activation = Activation::kGelu;
  bool tied_embeddings = true;
  double dropout = 0.0;

  int head_dim() const { return hidden / heads; }
  // Parameters of the whole model (embedding, layers, final norm, untied head if any).
  int64_t parameters() const;
};

struct ClusterSpec {
  std::string preset;
  std::string gpu_name;
  std::string source;
  int gpus = 0;
  int gpus_per_node = 8;
  double peak_fp16_tflops = 0;
  double peak_bf16_tflops = 0;
  double peak_fp32_tflops = 0;
  double peak_fp8_tflops = 0;  // 0: no FP8 tensor cores (A100)
  double hbm_gib = 0;
  double hbm_bandwidth_gbps = 0;
  double nvlink_bandwidth_gbps = 0;
  double nvlink_latency_us = 0;
  int nics_per_node = 0;
  double nic_bandwidth_gbps = 0;
  double nic_latency_us = 0;
  double pcie_bandwidth_gbps = 0;
  double pcie_latency_us = 0;
  double host_memory_gib = 0;
  Topology inter_node_topology = Topology::kFatTree;
  double oversubscription = 1.0;
  double kernel_launch_us = 0;
  // Host side of offload (proto::Cluster fields 23-28; 0 = not modelled).
  int gpus_per_pcie_switch = 0;
  double pcie_switch_uplink_gbps = 0;
  double host_memory_bandwidth_gbps = 0;
  int host_cores = 0;
  double host_core_ghz = 0;
  int host_simd_fp32_lanes = 0;
  CpuVendor host_cpu_vendor = CpuVendor::kIntel;  // proto::Cluster field 29; NCCL's tuning reads it

  int nodes() const { return (gpus + gpus_per_node - 1) / gpus_per_node; }
  double peak_tflops(DType t) const;
  int64_t hbm_bytes() const;
};

struct StrategySpec {
  int dp = 1;  // resolved
  int tp = 1;
  int pp = 1;
  int sp = 1;
  TpMode tp_mode = TpMode::k1d;
  int tp_depth = 1;
  PpSchedule pp_schedule = PpSchedule::k1f1b;
  int virtual_stages = 1;
  SpMode sp_mode = SpMode::kNone;
  int zero_stage = 0;
  Recompute recompute = Recompute::kNone;
  Offload offload = Offload::kNone;
  int micro_batch = 1;
  int global_batch = 1;
  DType dtype = DType::kBf16;  // fp32 | fp16 | bf16 | fp8 (the hybrid recipe)
  double bucket_mb = 25;
  bool flash_attention = false;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::kAuto;
  double offload_fraction = 0;        // offload params: host share of the parameter chunks
  double chunk_search_range_m = 32;   // Gemini's chunk search range, 2^20 elements
  double chunk_min_m = 32;            // Gemini's minimum chunk, 2^20 elements
  double gpu_margin_mem_ratio = 0;    // offload auto: Gemini's share of the GPU margin for optimizer states

  int world_size() const { return dp * tp * pp * sp; }
  // Micro-batches each pipeline runs per iteration: global_batch / (dp * micro_batch).
  int micro_batches() const { return global_batch / (dp * micro_batch); }
};

// The training framework's behaviour (shared/proto/scenario.proto, message Software; presets in
// scenarios/software/, docs/software.md). The defaults here are the bare schedule with none of a
// framework's bookkeeping (what tandem generated before software profiles): a scenario file always
// resolves a preset, megatron-core-0.8 unless it names another.
struct SoftwareSpec {
  std::string preset;
  std::string framework;
  std::string source;
  bool grad_reduce_overlap = true;    // DP buckets reduced during the backward (else after it)
  GradDType grad_reduce_dtype = GradDType::kParam;  // the gradient buffers' dtype
  bool overlap_param_gather = false;  // ZeRO-1/2 parameter all-gather at the next forward
  bool tp_comm_overlap = false;       // ring-exchange tensor-parallel comm under the GEMMs
  bool loss_scale_check = false;      // fp16: unscale + inf/nan check and its model-parallel all-reduce
  double clip_grad = 0;               // > 0: gradient-norm pass and its all-reduce
  bool separate_master_copy = false;  // fp32 grad cast and master -> model copy as passes of their own
  double host_dispatch_us = 0;        // host time to issue one kernel (0: CUDA graphs)
  bool cross_entropy_fp32 = false;    // the loss's passes over the logits run on an fp32 copy
  bool bias_dropout_fusion = false;   // residual dropout + add as one fused kernel
  OptimizerStateDType optimizer_state_dtype = OptimizerStateDType::kFp32;  // Adam's m and v
  MasterParams master_params = MasterParams::kFp32;  // what is kept beside the training-dtype params
  bool bucket_every_stage = true;     // false: only stage 0's first chunk is split into buckets
  bool pipeline_send_wait = false;    // the compute stream waits for each pipeline send (Megatron, DeepSpeed)
  bool overlap_p2p_comm = false;      // interleaved: a pass waits only for the sends of its own direction
  bool pipeline_scatter_gather = false;  // a pipeline message sent as 1/tp slices, all-gathered on arrival
  bool pipeline_partitioned_tensor = false;  // DeepSpeed: meta + 1/tp slice, gathered; sender regathers its output
};

struct Scenario {
  std::string name;
  std::string description;
  std::string origin;  // the file it was read from ("<string>" when parsed from text)
  ModelSpec model;
  ClusterSpec cluster;
  StrategySpec strategy;
  SoftwareSpec software;
  uint64_t seed = 1234;
  // What the user should know that is not an error (a deprecated spelling was read), one line
  // each, "FILE:LINE: ...": the programs print them on stderr (print_scenario_notes,
  // shared/cli_args.h); library code prints nothing.
  std::vector<std::string> notes;

  // The dtype of the gradient buffers the backward accumulates into and the data-parallel
  // reduction moves (software.grad_reduce_dtype).
  // The dtype of the model's parameters: the strategy's, but bf16 for an fp8 strategy (only its
  // GEMMs run in fp8, shared/fp8_recipe.h).
  DType param_dtype() const { return strategy.dtype == DType::kFp8 ? DType::kBf16 : strategy.dtype; }

  DType grad_dtype() const {
    const DType param = param_dtype();
    const GradDType g = software.grad_reduce_dtype;
    const bool fp32 = g == GradDType::kFp32 || (g == GradDType::kFp32IfBf16 && param == DType::kBf16);
    return fp32 ? DType::kFp32 : param;
  }

  // The dtype of Adam's moments (software.optimizer_state_dtype): fp32, or the parameters' dtype.
  DType optimizer_state_dtype() const {
    return software.optimizer_state_dtype == OptimizerStateDType::kParam ? param_dtype() : DType::kFp32;
  }

  // What the optimizer keeps beside the training-dtype parameters (software.master_params); an fp32
  // run has no separate master (its parameters are the fp32 values).
  MasterParams master_params() const {
    return strategy.dtype == DType::kFp32 ? MasterParams::kNone : software.master_params;
  }
};

// Reads a scenario file (protobuf text format), applies the --set overrides in order
// ("strategy.tp=8", "cluster.gpus=512"), merges the cluster preset, resolves defaults and checks
// every rule. Throws Error naming file, line, field and rule on bad input.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from text in memory; `origin` names it in messages.
Scenario parse_scenario(const std::string& text, const std::string& origin,
                        const std::vector<std::string>& overrides = {});

}  // namespace tandem
