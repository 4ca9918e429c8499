#include "traces/scenario_digest.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "trace_test_util.h"

namespace tandem {
namespace {

// The number of members of an aggregate: the most initialisers T{...} accepts.
struct AnyField {
  template <class T>
  operator T() const;
};
template <class T, class... A>
constexpr size_t field_count() {
  if constexpr (requires { T{A{}..., AnyField{}}; })
    return field_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}

using Mutation = std::pair<const char*, std::function<void(Scenario&)>>;

// One change per field of ModelSpec, ClusterSpec and StrategySpec, and the seed.
std::vector<Mutation> model_mutations() {
  return {
      {"model.name", [](Scenario& s) { s.model.name = "other"; }},
      {"model.layers", [](Scenario& s) { s.model.layers++; }},
      {"model.hidden", [](Scenario& s) { s.model.hidden++; }},
      {"model.heads", [](Scenario& s) { s.model.heads++; }},
      {"model.kv_heads", [](Scenario& s) { s.model.kv_heads++; }},
      {"model.ffn_hidden", [](Scenario& s) { s.model.ffn_hidden++; }},
      {"model.vocab", [](Scenario& s) { s.model.vocab++; }},
      {"model.seq_len", [](Scenario& s) { s.model.seq_len++; }},
      {"model.norm", [](Scenario& s) { s.model.norm = Norm::kRmsNorm; }},
      {"model.activation", [](Scenario& s) { s.model.activation = Activation::kSwiglu; }},
      {"model.tied_embeddings", [](Scenario& s) { s.model.tied_embeddings = !s.model.tied_embeddings; }},
      {"model.dropout", [](Scenario& s) { s.model.dropout = 0.1; }},
  };
}
std::vector<Mutation> cluster_mutations() {
  return {
      {"cluster.preset", [](Scenario& s) { s.cluster.preset = "dgx-h100"; }},
      {"cluster.gpu_name", [](Scenario& s) { s.cluster.gpu_name = "H100"; }},
      {"cluster.source", [](Scenario& s) { s.cluster.source = "datasheet"; }},
      {"cluster.gpus", [](Scenario& s) { s.cluster.gpus++; }},
      {"cluster.gpus_per_node", [](Scenario& s) { s.cluster.gpus_per_node++; }},
      {"cluster.peak_fp16_tflops", [](Scenario& s) { s.cluster.peak_fp16_tflops = 989.5; }},
      {"cluster.peak_bf16_tflops", [](Scenario& s) { s.cluster.peak_bf16_tflops = 989.5; }},
      {"cluster.peak_fp32_tflops", [](Scenario& s) { s.cluster.peak_fp32_tflops = 67; }},
      {"cluster.peak_fp8_tflops", [](Scenario& s) { s.cluster.peak_fp8_tflops = 1978.9; }},
      {"cluster.hbm_gib", [](Scenario& s) { s.cluster.hbm_gib = 80; }},
      {"cluster.hbm_bandwidth_gbps", [](Scenario& s) { s.cluster.hbm_bandwidth_gbps = 3350; }},
      {"cluster.nvlink_bandwidth_gbps", [](Scenario& s) { s.cluster.nvlink_bandwidth_gbps = 450; }},
      {"cluster.nvlink_latency_us", [](Scenario& s) { s.cluster.nvlink_latency_us = 2; }},
      {"cluster.nics_per_node", [](Scenario& s) { s.cluster.nics_per_node = 8; }},
      {"cluster.nic_bandwidth_gbps", [](Scenario& s) { s.cluster.nic_bandwidth_gbps = 50; }},
      {"cluster.nic_latency_us", [](Scenario& s) { s.cluster.nic_latency_us = 5; }},
      {"cluster.pcie_bandwidth_gbps", [](Scenario& s) { s.cluster.pcie_bandwidth_gbps = 64; }},
      {"cluster.pcie_latency_us", [](Scenario& s) { s.cluster.pcie_latency_us = 1; }},
      {"cluster.host_memory_gib", [](Scenario& s) { s.cluster.host_memory_gib = 2048; }},
      {"cluster.inter_node_topology", [](Scenario& s) { s.cluster.inter_node_topology = Topology::kRailOptimized; }},
      {"cluster.oversubscription", [](Scenario& s) { s.cluster.oversubscription = 2; }},
      {"cluster.kernel_launch_us", [](Scenario& s) { s.cluster.kernel_launch_us = 4; }},
      {"cluster.gpus_per_pcie_switch", [](Scenario& s) { s.cluster.gpus_per_pcie_switch = 2; }},
      {"cluster.pcie_switch_uplink_gbps", [](Scenario& s) { s.cluster.pcie_switch_uplink_gbps = 32; }},
      {"cluster.host_memory_bandwidth_gbps", [](Scenario& s) { s.cluster.host_memory_bandwidth_gbps = 409.6; }},
      {"cluster.host_cores", [](Scenario& s) { s.cluster.host_cores = 128; }},
      {"cluster.host_core_ghz", [](Scenario& s) { s.cluster.host_core_ghz = 2.25; }},
      {"cluster.host_simd_fp32_lanes", [](Scenario& s) { s.cluster.host_simd_fp32_lanes = 8; }},
      {"cluster.host_cpu_vendor", [](Scenario& s) { s.cluster.host_cpu_vendor = CpuVendor::kAmd; }},
  };
}
std::vector<Mutation> strategy_mutations() {
  return {
      {"strategy.dp", [](Scenario& s) { s.strategy.dp++; }},
      {"strategy.tp", [](Scenario& s) { s.strategy.tp++; }},
      {"strategy.pp", [](Scenario& s) { s.strategy.pp++; }},
      {"strategy.sp", [](Scenario& s) { s.strategy.sp++; }},
      {"strategy.tp_mode", [](Scenario& s) { s.strategy.tp_mode = TpMode::k2p5d; }},
      {"strategy.tp_depth", [](Scenario& s) { s.strategy.tp_depth++; }},
      {"strategy.pp_schedule", [](Scenario& s) { s.strategy.pp_schedule = PpSchedule::kGpipe; }},
      {"strategy.virtual_stages", [](Scenario& s) { s.strategy.virtual_stages++; }},
      {"strategy.sp_mode", [](Scenario& s) { s.strategy.sp_mode = SpMode::kUlysses; }},
      {"strategy.zero_stage", [](Scenario& s) { s.strategy.zero_stage++; }},
      {"strategy.recompute", [](Scenario& s) { s.strategy.recompute = Recompute::kSelective; }},
      {"strategy.offload", [](Scenario& s) { s.strategy.offload = Offload::kOptimizer; }},
      {"strategy.micro_batch", [](Scenario& s) { s.strategy.micro_batch++; }},
      {"strategy.global_batch", [](Scenario& s) { s.strategy.global_batch++; }},
      {"strategy.dtype", [](Scenario& s) { s.strategy.dtype = DType::kFp16; }},
      {"strategy.bucket_mb", [](Scenario& s) { s.strategy.bucket_mb = 25.000000000000004; }},  // next double
      {"strategy.flash_attention", [](Scenario& s) { s.strategy.flash_attention = !s.strategy.flash_attention; }},
      {"strategy.collective_algorithm",
       [](Scenario& s) { s.strategy.collective_algorithm = CollectiveAlgorithm::kTree; }},
      {"strategy.offload_fraction", [](Scenario& s) { s.strategy.offload_fraction = 0.5; }},
      {"strategy.chunk_search_range_m", [](Scenario& s) { s.strategy.chunk_search_range_m = 0; }},
      {"strategy.chunk_min_m", [](Scenario& s) { s.strategy.chunk_min_m = 0; }},
      {"strategy.gpu_margin_mem_ratio", [](Scenario& s) { s.strategy.gpu_margin_mem_ratio = 0.5; }},
  };
}

// preset, framework and source name the values; the values are what the digest covers.
std::vector<Mutation> software_mutations() {
  return {
      {"software.tp_comm_overlap", [](Scenario& s) { s.software.tp_comm_overlap = !s.software.tp_comm_overlap; }},
      {"software.overlap_param_gather",
       [](Scenario& s) { s.software.overlap_param_gather = !s.software.overlap_param_gather; }},
      {"software.grad_reduce_overlap",
       [](Scenario& s) { s.software.grad_reduce_overlap = !s.software.grad_reduce_overlap; }},
      {"software.grad_reduce_dtype", [](Scenario& s) { s.software.grad_reduce_dtype = GradDType::kFp32IfBf16; }},
      {"software.loss_scale_check", [](Scenario& s) { s.software.loss_scale_check = !s.software.loss_scale_check; }},
      {"software.clip_grad", [](Scenario& s) { s.software.clip_grad += 0.5; }},
      {"software.separate_master_copy",
       [](Scenario& s) { s.software.separate_master_copy = !s.software.separate_master_copy; }},
      {"software.host_dispatch_us", [](Scenario& s) { s.software.host_dispatch_us += 1; }},
      {"software.cross_entropy_fp32",
       [](Scenario& s) { s.software.cross_entropy_fp32 = !s.software.cross_entropy_fp32; }},
      {"software.bias_dropout_fusion",
       [](Scenario& s) { s.software.bias_dropout_fusion = !s.software.bias_dropout_fusion; }},
      {"software.optimizer_state_dtype",
       [](Scenario& s) { s.software.optimizer_state_dtype = OptimizerStateDType::kParam; }},
      {"software.master_params", [](Scenario& s) { s.software.master_params = MasterParams::kNone; }},
      {"software.bucket_every_stage", [](Scenario& s) { s.software.bucket_every_stage = !s.software.bucket_every_stage; }},
      {"software.pipeline_send_wait", [](Scenario& s) { s.software.pipeline_send_wait = !s.software.pipeline_send_wait; }},
      {"software.overlap_p2p_comm", [](Scenario& s) { s.software.overlap_p2p_comm = !s.software.overlap_p2p_comm; }},
      {"software.pipeline_scatter_gather",
       [](Scenario& s) { s.software.pipeline_scatter_gather = !s.software.pipeline_scatter_gather; }},
      {"software.pipeline_partitioned_tensor",
       [](Scenario& s) { s.software.pipeline_partitioned_tensor = !s.software.pipeline_partitioned_tensor; }},
  };
}

TEST(TraceScenarioDigest, SixteenHexDigitsStable) {
  const Scenario s = testing::sample_scenario();
  const std::string d = scenario_digest(s);
  ASSERT_EQ(d.size(), 16u);
  EXPECT_EQ(d.find_first_not_of("0123456789abcdef"), std::string::npos);
  Scenario copy = s;
  EXPECT_EQ(scenario_digest(copy), d);
}

// Adding a field to a spec fails this test until the digest and the mutations above cover it.
TEST(TraceScenarioDigest, MutationsCoverEveryField) {
  EXPECT_EQ(model_mutations().size(), field_count<ModelSpec>()) << "ModelSpec changed: update scenario_digest.cc";
  EXPECT_EQ(cluster_mutations().size(), field_count<ClusterSpec>()) << "ClusterSpec changed: update scenario_digest.cc";
  EXPECT_EQ(strategy_mutations().size(), field_count<StrategySpec>())
      << "StrategySpec changed: update scenario_digest.cc";
  EXPECT_EQ(software_mutations().size() + 3, field_count<SoftwareSpec>())
      << "SoftwareSpec changed: update scenario_digest.cc";
  // name, description, origin (left out on purpose), model, cluster, strategy, software, seed,
  // notes (left out on purpose: messages about the spelling, not what is planned or simulated).
  EXPECT_EQ(field_count<Scenario>(), 9u) << "Scenario changed: update scenario_digest.cc";
}

TEST(TraceScenarioDigest, ChangesWhenAnyFieldChanges) {
  const Scenario base = testing::sample_scenario();
  std::vector<Mutation> all = model_mutations();
  for (auto& m : cluster_mutations()) all.push_back(m);
  for (auto& m : strategy_mutations()) all.push_back(m);
  for (auto& m : software_mutations()) all.push_back(m);
  all.push_back({"seed", [](Scenario& s) { s.seed++; }});

  std::set<std::string> digests{scenario_digest(base)};
  for (const auto& [name, mutate] : all) {
    Scenario s = base;
    mutate(s);
    EXPECT_TRUE(digests.insert(scenario_digest(s)).second) << name << " does not change the digest";
    EXPECT_NE(scenario_canonical_text(s).find(std::string(name) + "="), std::string::npos) << name;
  }
}

// Where a scenario was read from and what it is called do not change what it computes.
TEST(TraceScenarioDigest, IgnoresNameDescriptionOrigin) {
  const Scenario base = testing::sample_scenario();
  Scenario s = base;
  s.name = "renamed";
  s.description = "another description";
  s.origin = "/elsewhere/scenario.textproto";
  EXPECT_EQ(scenario_digest(s), scenario_digest(base));
}

// Strings are quoted and escaped, so no value can imitate a line of the canonical text.
TEST(TraceScenarioDigest, StringsCannotForgeFields) {
  Scenario a = testing::sample_scenario(), b = a;
  a.model.name = "x\"\nmodel.layers=3";
  b.model.name = a.model.name.substr(0, 1);  // "x"
  b.model.layers = 3;
  EXPECT_NE(scenario_digest(a), scenario_digest(b));
  EXPECT_NE(scenario_canonical_text(a).find("model.name=\"x\\\"\\x0amodel.layers=3\"\n"), std::string::npos)
      << scenario_canonical_text(a);
}

}  // namespace
}  // namespace tandem
