// Hand-written schedules for the simulator's tests: a cluster with round figures, a generator
// that returns programs built by a lambda, and a small program writer.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim::testing {

// 8 GPUs per node, one 25 GB/s NIC per GPU, NVLink 300 GB/s, round latencies.
inline ClusterSpec test_cluster(int gpus) {
  ClusterSpec c;
  c.preset = "test";
  c.gpu_name = "test-gpu";
  c.gpus = gpus;
  c.gpus_per_node = 8;
  c.peak_fp16_tflops = c.peak_bf16_tflops = 312;
  c.peak_fp32_tflops = 156;
  c.hbm_gib = 80;
  c.hbm_bandwidth_gbps = 2000;
  c.nvlink_bandwidth_gbps = 300;
  c.nvlink_latency_us = 2;
  c.nics_per_node = 8;
  c.nic_bandwidth_gbps = 25;
  c.nic_latency_us = 5;
  c.pcie_bandwidth_gbps = 32;
  c.pcie_latency_us = 3;
  c.host_memory_gib = 1024;
  c.kernel_launch_us = 0;
  return c;
}

inline Scenario test_scenario(const ClusterSpec& c) {
  Scenario s;
  s.name = "test";
  s.cluster = c;
  s.model.seq_len = 1;
  s.strategy.global_batch = 1;
  return s;
}

class LambdaGenerator : public ProgramGenerator {
 public:
  explicit LambdaGenerator(std::function<Program(int)> f) : f_(std::move(f)) {}
  Program generate(int rank) const override { return f_(rank); }

 private:
  std::function<Program(int)> f_;
};

inline Schedule make_schedule(const ClusterSpec& c, int world, std::vector<std::vector<int>> groups,
                              std::function<Program(int)> f) {
  std::vector<ProcessGroup> pgs;
  for (size_t i = 0; i < groups.size(); ++i) {
    ProcessGroup g;
    g.id = GroupId(i);
    g.kind = GroupKind::kDp;
    g.ranks = groups[i];
    pgs.push_back(g);
  }
  return Schedule(test_scenario(c), world, std::move(pgs), std::make_unique<LambdaGenerator>(std::move(f)));
}

// Appends tasks to a program; each returns the task's id.
struct ProgramWriter {
  Program p;
  explicit ProgramWriter(int rank) { p.rank = rank; }

  TaskId add(Stream s, TaskOp op, std::vector<TaskId> deps = {}) {
    Task t;
    t.id = TaskId(p.tasks.size());
    t.stream = s;
    t.deps = std::move(deps);
    t.op = std::move(op);
    p.tasks.push_back(std::move(t));
    return p.tasks.back().id;
  }
  // A GEMM whose time the calibration table sets (m, n, k name it).
  TaskId gemm(int64_t m, int64_t n, int64_t k, std::vector<TaskId> deps = {}, Phase phase = Phase::kForward,
              Stream s = Stream::kCompute) {
    Compute c;
    c.kernel = Kernel::kGemm;
    c.dtype = DType::kBf16;
    c.phase = phase;
    c.dims = {m, n, k, 0, 0, 0};
    return add(s, c, std::move(deps));
  }
  TaskId collective(CollectiveOp op, GroupId g, int64_t bytes, std::vector<TaskId> deps = {},
                    Stream s = Stream::kComm, int root = -1) {
    Collective c;
    c.op = op;
    c.group = g;
    c.bytes = bytes;
    c.root = root;
    return add(s, c, std::move(deps));
  }
  TaskId send(int peer, int64_t bytes, Stream s, std::vector<TaskId> deps = {}) {
    SendRecv x;
    x.is_send = true;
    x.peer = peer;
    x.bytes = bytes;
    return add(s, x, std::move(deps));
  }
  TaskId recv(int peer, int64_t bytes, Stream s, std::vector<TaskId> deps = {}) {
    SendRecv x;
    x.is_send = false;
    x.peer = peer;
    x.bytes = bytes;
    return add(s, x, std::move(deps));
  }
  BufferId buffer(const std::string& name, int64_t bytes, Placement where = Placement::kDevice) {
    Buffer b;
    b.id = BufferId(p.buffers.size());
    b.name = name;
    b.bytes = bytes;
    b.placement = where;
    p.buffers.push_back(b);
    return b.id;
  }
  TaskId alloc(BufferId b, std::vector<TaskId> deps = {}, Stream s = Stream::kCompute) {
    return add(s, Alloc{b}, std::move(deps));
  }
  TaskId free(BufferId b, std::vector<TaskId> deps = {}, Stream s = Stream::kCompute) {
    return add(s, Free{b}, std::move(deps));
  }
};

// Options for checking closed forms: plain alpha-beta links.
inline SimOptions ideal_options() {
  SimOptions o;
  o.ideal_network = true;
  return o;
}

}  // namespace tandem::sim::testing
