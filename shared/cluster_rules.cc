// The resolver's cluster part: every figure positive where the model needs it; an unset
// oversubscription is 1 (non-blocking) and an unset topology a fat-tree.
#include "shared/error.h"
#include "shared/scenario_resolver.h"

namespace tandem {

namespace {

// A figure of the cluster (a double of proto::Cluster) and where it goes in ClusterSpec.
struct Figure {
  const char* field;
  double ClusterSpec::*member;
};

// Every model needs these, positive.
constexpr Figure kDeviceFigures[] = {
    {"peak_fp16_tflops", &ClusterSpec::peak_fp16_tflops},
    {"peak_bf16_tflops", &ClusterSpec::peak_bf16_tflops},
    {"peak_fp32_tflops", &ClusterSpec::peak_fp32_tflops},
    {"hbm_gib", &ClusterSpec::hbm_gib},
    {"hbm_bandwidth_gbps", &ClusterSpec::hbm_bandwidth_gbps},
    {"nvlink_bandwidth_gbps", &ClusterSpec::nvlink_bandwidth_gbps},
    {"pcie_bandwidth_gbps", &ClusterSpec::pcie_bandwidth_gbps},
};

// These may be 0 (the NIC bandwidth only on one node).
constexpr Figure kOptionalFigures[] = {
    {"nic_bandwidth_gbps", &ClusterSpec::nic_bandwidth_gbps},
    {"nvlink_latency_us", &ClusterSpec::nvlink_latency_us},
    {"nic_latency_us", &ClusterSpec::nic_latency_us},
    {"pcie_latency_us", &ClusterSpec::pcie_latency_us},
    {"kernel_launch_us", &ClusterSpec::kernel_launch_us},
    {"host_memory_gib", &ClusterSpec::host_memory_gib},
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
  spec.gpus = required_positive("cluster.gpus", c.has_gpus(), c.gpus(), "GPUs used in total");
  if (c.gpus_per_node() <= 0) {
    fail("cluster.gpus_per_node", "must be positive, got " + num(c.gpus_per_node()) +
                                      (c.has_gpus_per_node() ? "" : " (not set: name a cluster.preset or give it)"));
  }
  spec.gpus_per_node = c.gpus_per_node();
  for (const Figure& f : kDeviceFigures) {
    const double value = figure(c, f.field);
    positive_figure(std::string("cluster.") + f.field, value);
    spec.*f.member = value;
  }

  // The network matters only when the GPUs span more than one node.
  at_least("cluster.nics_per_node", c.nics_per_node(), spec.nodes() > 1 ? 1 : 0);
  spec.nics_per_node = c.nics_per_node();
  for (const Figure& f : kOptionalFigures) {
    const double value = figure(c, f.field);
    const std::string path = std::string("cluster.") + f.field;
    if (f.member == &ClusterSpec::nic_bandwidth_gbps && spec.nodes() > 1) positive_figure(path, value);
    non_negative(path, value);
    spec.*f.member = value;
  }

  if (c.has_inter_node_topology())
    spec.inter_node_topology = choice("cluster.inter_node_topology", c.inter_node_topology(), kTopologySpellings);
  spec.oversubscription = c.has_oversubscription() ? c.oversubscription() : 1.0;
  if (!(spec.oversubscription >= 1)) {
    fail("cluster.oversubscription", "must be >= 1 (1 = non-blocking), got " + num(spec.oversubscription));
  }
  return spec;
}

}  // namespace tandem
