#include "traces/scenario_digest.h"

#include <cstdint>
#include <cstdio>

#include "traces/fnv1a.h"

namespace tandem {
namespace {

// Appends "key=value\n" lines. Adding a field to ModelSpec, ClusterSpec or StrategySpec means
// adding a line below: tests/traces/scenario_digest_test.cc counts the fields and fails until then.
class CanonicalText {
 public:
  void add(const char* key, const std::string& v) {
    begin(key);
    out_ += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
        out_ += buf;
      } else {
        out_ += c;
      }
    }
    out_ += "\"\n";
  }
  void add(const char* key, const char* v) { add(key, std::string(v)); }
  void add(const char* key, double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    begin(key);
    out_ += buf;
    out_ += '\n';
  }
  void add(const char* key, int64_t v) { line(key, std::to_string(v)); }
  void add(const char* key, uint64_t v) { line(key, std::to_string(v)); }
  void add(const char* key, int v) { line(key, std::to_string(v)); }
  void add(const char* key, bool v) { line(key, v ? "true" : "false"); }

  std::string take() { return std::move(out_); }

 private:
  void begin(const char* key) {
    out_ += key;
    out_ += '=';
  }
  void line(const char* key, const std::string& v) {
    begin(key);
    out_ += v;
    out_ += '\n';
  }
  std::string out_;
};

}  // namespace

std::string scenario_canonical_text(const Scenario& s) {
  CanonicalText t;
  const ModelSpec& m = s.model;
  t.add("model.name", m.name);
  t.add("model.layers", m.layers);
  t.add("model.hidden", m.hidden);
  t.add("model.heads", m.heads);
  t.add("model.kv_heads", m.kv_heads);
  t.add("model.ffn_hidden", m.ffn_hidden);
  t.add("model.vocab", m.vocab);
  t.add("model.seq_len", m.seq_len);
  t.add("model.norm", to_string(m.norm));
  t.add("model.activation", to_string(m.activation));
  t.add("model.tied_embeddings", m.tied_embeddings);
  t.add("model.dropout", m.dropout);

  const ClusterSpec& c = s.cluster;
  t.add("cluster.preset", c.preset);
  t.add("cluster.gpu_name", c.gpu_name);
  t.add("cluster.source", c.source);
  t.add("cluster.gpus", c.gpus);
  t.add("cluster.gpus_per_node", c.gpus_per_node);
  t.add("cluster.peak_fp16_tflops", c.peak_fp16_tflops);
  t.add("cluster.peak_bf16_tflops", c.peak_bf16_tflops);
  t.add("cluster.peak_fp32_tflops", c.peak_fp32_tflops);
  t.add("cluster.peak_fp8_tflops", c.peak_fp8_tflops);
  t.add("cluster.hbm_gib", c.hbm_gib);
  t.add("cluster.hbm_bandwidth_gbps", c.hbm_bandwidth_gbps);
  t.add("cluster.nvlink_bandwidth_gbps", c.nvlink_bandwidth_gbps);
  t.add("cluster.nvlink_latency_us", c.nvlink_latency_us);
  t.add("cluster.nics_per_node", c.nics_per_node);
  t.add("cluster.nic_bandwidth_gbps", c.nic_bandwidth_gbps);
  t.add("cluster.nic_latency_us", c.nic_latency_us);
  t.add("cluster.pcie_bandwidth_gbps", c.pcie_bandwidth_gbps);
  t.add("cluster.pcie_latency_us", c.pcie_latency_us);
  t.add("cluster.host_memory_gib", c.host_memory_gib);
  t.add("cluster.inter_node_topology", to_string(c.inter_node_topology));
  t.add("cluster.oversubscription", c.oversubscription);
  t.add("cluster.kernel_launch_us", c.kernel_launch_us);
  t.add("cluster.gpus_per_pcie_switch", c.gpus_per_pcie_switch);
  t.add("cluster.pcie_switch_uplink_gbps", c.pcie_switch_uplink_gbps);
  t.add("cluster.host_memory_bandwidth_gbps", c.host_memory_bandwidth_gbps);
  t.add("cluster.host_cores", c.host_cores);
  t.add("cluster.host_core_ghz", c.host_core_ghz);
  t.add("cluster.host_simd_fp32_lanes", c.host_simd_fp32_lanes);
  // Added after digests were recorded: a line only when not the default (intel).
  if (c.host_cpu_vendor != CpuVendor::kIntel) t.add("cluster.host_cpu_vendor", to_string(c.host_cpu_vendor));

  const StrategySpec& st = s.strategy;
  t.add("strategy.dp", st.dp);
  t.add("strategy.tp", st.tp);
  t.add("strategy.pp", st.pp);
  t.add("strategy.sp", st.sp);
  t.add("strategy.tp_mode", to_string(st.tp_mode));
  t.add("strategy.tp_depth", st.tp_depth);
  t.add("strategy.pp_schedule", to_string(st.pp_schedule));
  t.add("strategy.virtual_stages", st.virtual_stages);
  t.add("strategy.sp_mode", to_string(st.sp_mode));
  t.add("strategy.zero_stage", st.zero_stage);
  t.add("strategy.recompute", to_string(st.recompute));
  t.add("strategy.offload", to_string(st.offload));
  t.add("strategy.micro_batch", st.micro_batch);
  t.add("strategy.global_batch", st.global_batch);
  t.add("strategy.dtype", to_string(st.dtype));
  t.add("strategy.bucket_mb", st.bucket_mb);
  t.add("strategy.flash_attention", st.flash_attention);
  t.add("strategy.collective_algorithm", to_string(st.collective_algorithm));
  // Fields added after digests were recorded: a line only when not the default, so that the
  // digests of scenarios that do not use them stay the same.
  if (st.offload_fraction != 0) t.add("strategy.offload_fraction", st.offload_fraction);
  if (st.chunk_search_range_m != 32) t.add("strategy.chunk_search_range_m", st.chunk_search_range_m);
  if (st.chunk_min_m != 32) t.add("strategy.chunk_min_m", st.chunk_min_m);
  if (st.gpu_margin_mem_ratio != 0) t.add("strategy.gpu_margin_mem_ratio", st.gpu_margin_mem_ratio);

  const SoftwareSpec& sw = s.software;
  t.add("software.grad_reduce_overlap", sw.grad_reduce_overlap);
  t.add("software.grad_reduce_dtype", to_string(sw.grad_reduce_dtype));
  t.add("software.overlap_param_gather", sw.overlap_param_gather);
  t.add("software.tp_comm_overlap", sw.tp_comm_overlap);
  t.add("software.loss_scale_check", sw.loss_scale_check);
  t.add("software.clip_grad", sw.clip_grad);
  t.add("software.separate_master_copy", sw.separate_master_copy);
  t.add("software.host_dispatch_us", sw.host_dispatch_us);
  t.add("software.cross_entropy_fp32", sw.cross_entropy_fp32);
  t.add("software.bias_dropout_fusion", sw.bias_dropout_fusion);
  // Added after digests were recorded: a line only when not the default (fp32 moments and master).
  if (sw.optimizer_state_dtype != OptimizerStateDType::kFp32)
    t.add("software.optimizer_state_dtype", to_string(sw.optimizer_state_dtype));
  if (sw.master_params != MasterParams::kFp32) t.add("software.master_params", to_string(sw.master_params));
  if (!sw.bucket_every_stage) t.add("software.bucket_every_stage", sw.bucket_every_stage);
  if (sw.pipeline_send_wait) t.add("software.pipeline_send_wait", sw.pipeline_send_wait);
  if (sw.overlap_p2p_comm) t.add("software.overlap_p2p_comm", sw.overlap_p2p_comm);
  if (sw.pipeline_scatter_gather) t.add("software.pipeline_scatter_gather", sw.pipeline_scatter_gather);
  if (sw.pipeline_partitioned_tensor) t.add("software.pipeline_partitioned_tensor", sw.pipeline_partitioned_tensor);

  t.add("seed", uint64_t{s.seed});
  return t.take();
}

std::string scenario_digest(const Scenario& scenario) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(scenario_canonical_text(scenario))));
  return buf;
}

}  // namespace tandem
