// The resolver's cluster part: every figure finite, positive where the model needs it, and at most
// its physical bound; an unset oversubscription is 1 (non-blocking) and an unset topology a
// fat-tree.
#include "shared/error.h"
#include "shared/scenario_resolver.h"

namespace tandem {

namespace {

// A figure of the cluster (a double of proto::Cluster), where it goes in ClusterSpec, and its
// physical maximum (shared/scenario_limits.h) in words.
struct Figure {
  const char* field;
  double ClusterSpec::*member;
  double max;
  const char* bound;
};

constexpr const char* kTflopsBound = "TFLOP/s (an exaflop/s per GPU, beyond any device)";
constexpr const char* kBandwidthBound = "GB/s (a petabyte/s, beyond any link or memory)";
constexpr const char* kLatencyBound = "us (one second)";
constexpr const char* kMemoryBound = "GiB (about a pebibyte)";
constexpr const char* kClockBound = "GHz (a terahertz, beyond any CPU)";
constexpr double kMaxCoreGhz = 1000;
constexpr int kMaxHostCores = 1 << 16;  // cores of one node
constexpr int kMaxSimdLanes = 1 << 10;  // fp32 lanes of one SIMD vector

// Every model needs these, positive.
constexpr Figure kDeviceFigures[] = {
    {"peak_fp16_tflops", &ClusterSpec::peak_fp16_tflops, kMaxTflops, kTflopsBound},
    {"peak_bf16_tflops", &ClusterSpec::peak_bf16_tflops, kMaxTflops, kTflopsBound},
    {"peak_fp32_tflops", &ClusterSpec::peak_fp32_tflops, kMaxTflops, kTflopsBound},
    {"hbm_gib", &ClusterSpec::hbm_gib, kMaxMemoryGib, kMemoryBound},
    {"hbm_bandwidth_gbps", &ClusterSpec::hbm_bandwidth_gbps, kMaxBandwidthGbps, kBandwidthBound},
    {"nvlink_bandwidth_gbps", &ClusterSpec::nvlink_bandwidth_gbps, kMaxBandwidthGbps, kBandwidthBound},
    {"pcie_bandwidth_gbps", &ClusterSpec::pcie_bandwidth_gbps, kMaxBandwidthGbps, kBandwidthBound},
};

// These may be 0 (the NIC bandwidth only on one node; the FP8 peak on a GPU without FP8).
constexpr Figure kOptionalFigures[] = {
    {"peak_fp8_tflops", &ClusterSpec::peak_fp8_tflops, kMaxTflops, kTflopsBound},  // 0: no FP8 tensor cores
    {"nic_bandwidth_gbps", &ClusterSpec::nic_bandwidth_gbps, kMaxBandwidthGbps, kBandwidthBound},
    {"nvlink_latency_us", &ClusterSpec::nvlink_latency_us, kMaxLatencyUs, kLatencyBound},
    {"nic_latency_us", &ClusterSpec::nic_latency_us, kMaxLatencyUs, kLatencyBound},
    {"pcie_latency_us", &ClusterSpec::pcie_latency_us, kMaxLatencyUs, kLatencyBound},
    {"kernel_launch_us", &ClusterSpec::kernel_launch_us, kMaxLatencyUs, kLatencyBound},
    {"host_memory_gib", &ClusterSpec::host_memory_gib, kMaxMemoryGib, kMemoryBound},
    {"pcie_switch_uplink_gbps", &ClusterSpec::pcie_switch_uplink_gbps, kMaxBandwidthGbps, kBandwidthBound},
    {"host_memory_bandwidth_gbps", &ClusterSpec::host_memory_bandwidth_gbps, kMaxBandwidthGbps, kBandwidthBound},
    {"host_core_ghz", &ClusterSpec::host_core_ghz, kMaxCoreGhz, kClockBound},
};

double figure(const proto::Cluster& c, const char* field) {
  return c.GetReflection()->GetDouble(c, c.GetDescriptor()->FindFieldByName(field));
}

}  // namespace

ClusterSpec Resolver::cluster() const {
  if (!s_.has_cluster()) fail("cluster", "required: the scenario has no cluster { ... } block");
  const proto::Cluster& c = s_.cluster();
  ClusterSpec spec;
  spec.preset = c.preset();
  spec.gpu_name = c.gpu_name();
  spec.source = c.source();
  spec.gpus = required_positive("cluster.gpus", c.has_gpus(), c.gpus(), "GPUs used in total", kMaxGpus);
  if (c.gpus_per_node() <= 0) {
    fail("cluster.gpus_per_node", "must be positive, got " + num(c.gpus_per_node()) +
                                      (c.has_gpus_per_node() ? "" : " (not set: name a cluster.preset or give it)"));
  }
  at_most("cluster.gpus_per_node", c.gpus_per_node(), kMaxGpusPerNode);
  spec.gpus_per_node = c.gpus_per_node();
  for (const Figure& f : kDeviceFigures) {
    const double value = figure(c, f.field);
    positive_figure(std::string("cluster.") + f.field, value, f.max, f.bound);
    spec.*f.member = value;
  }

  // The network matters only when the GPUs span more than one node.
  at_least("cluster.nics_per_node", c.nics_per_node(), spec.nodes() > 1 ? 1 : 0);
  at_most("cluster.nics_per_node", c.nics_per_node(), kMaxGpusPerNode);
  spec.nics_per_node = c.nics_per_node();
  for (const Figure& f : kOptionalFigures) {
    const double value = figure(c, f.field);
    const std::string path = std::string("cluster.") + f.field;
    if (f.member == &ClusterSpec::nic_bandwidth_gbps && spec.nodes() > 1) positive_figure(path, value, f.max, f.bound);
    non_negative(path, value, f.max, f.bound);
    spec.*f.member = value;
  }

  // Host side of offload: counts, 0 = not modelled.
  at_least("cluster.gpus_per_pcie_switch", c.gpus_per_pcie_switch(), 0);
  // More than the node's GPUs (a preset's 2 with gpus_per_node overridden to 1): one switch for all.
  at_most("cluster.gpus_per_pcie_switch", c.gpus_per_pcie_switch(), kMaxGpusPerNode);
  spec.gpus_per_pcie_switch = c.gpus_per_pcie_switch();
  at_least("cluster.host_cores", c.host_cores(), 0);
  at_most("cluster.host_cores", c.host_cores(), kMaxHostCores);
  spec.host_cores = c.host_cores();
  at_least("cluster.host_simd_fp32_lanes", c.host_simd_fp32_lanes(), 0);
  at_most("cluster.host_simd_fp32_lanes", c.host_simd_fp32_lanes(), kMaxSimdLanes);
  spec.host_simd_fp32_lanes = c.host_simd_fp32_lanes();
  if (c.has_host_cpu_vendor())
    spec.host_cpu_vendor = choice("cluster.host_cpu_vendor", c.host_cpu_vendor(), kCpuVendorSpellings);

  if (c.has_inter_node_topology())
    spec.inter_node_topology = choice("cluster.inter_node_topology", c.inter_node_topology(), kTopologySpellings);
  spec.oversubscription = c.has_oversubscription() ? c.oversubscription() : 1.0;
  finite_at_most("cluster.oversubscription", spec.oversubscription, kMaxOversubscription, "(1 = non-blocking)");
  if (!(spec.oversubscription >= 1)) {
    fail("cluster.oversubscription", "must be >= 1 (1 = non-blocking), got " + num(spec.oversubscription));
  }
  return spec;
}

}  // namespace tandem
