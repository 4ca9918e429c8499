// Hand-written schedules for the traces/ tests: a program of one task of each payload kind, with
// the sizes the labels of traces/task_label.h are specified with (GPT-3 175B's hidden 12288, a
// 2048-token micro-batch, 8-way tensor parallelism: 12288 * 3 / 8 = 4608 QKV columns per rank).
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "shared/schedule.h"

namespace tandem::testing {

inline constexpr int64_t kMiB = int64_t(1) << 20;

inline Compute compute(Kernel k, DType dt, std::array<int64_t, 6> dims, uint8_t flags = 0) {
  Compute c;
  c.kernel = k;
  c.dtype = dt;
  c.dims = dims;
  c.flags = flags;
  return c;
}

// Task ids: 0 alloc, 1 gemm, 2 all-reduce (group 0, tp), 3 send, 4 recv, 5 h2d copy,
// 6 attention, 7 layernorm, 8 free.
inline Program sample_program(int rank) {
  Program p;
  p.rank = rank;
  Buffer b;
  b.id = 0;
  b.name = "x";
  b.bytes = 48 * kMiB;
  b.dtype = DType::kFp16;
  p.buffers.push_back(b);
  auto add = [&](Stream s, TaskOp op) {
    Task t;
    t.id = TaskId(p.tasks.size());
    t.stream = s;
    t.op = std::move(op);
    p.tasks.push_back(std::move(t));
  };
  add(Stream::kCompute, Alloc{0});
  add(Stream::kCompute, compute(Kernel::kGemm, DType::kFp16, {2048, 4608, 12288}));
  Collective ar;
  ar.op = CollectiveOp::kAllReduce;
  ar.group = 0;
  ar.bytes = 48 * kMiB;
  ar.dtype = DType::kFp16;
  ar.buffers = {0, 0};
  add(Stream::kComm, ar);
  add(Stream::kSendFwd, SendRecv{true, 1 - rank, 24 * kMiB, 0, 0, 0});
  add(Stream::kRecvBwd, SendRecv{false, 1 - rank, 24 * kMiB, 0, 0, 0});
  add(Stream::kH2D, Copy{CopyDirection::kH2D, 12 * kMiB, 0, 0});
  add(Stream::kCompute, compute(Kernel::kAttention, DType::kFp16, {1, 2048, 12, 12, 128}));
  add(Stream::kCompute, compute(Kernel::kLayerNorm, DType::kFp16, {2048, 12288}));
  add(Stream::kCompute, Free{0});
  return p;
}
inline constexpr int kSampleTasks = 9;

class FixedGenerator : public ProgramGenerator {
 public:
  explicit FixedGenerator(std::vector<Program> programs) : programs_(std::move(programs)) {}
  Program generate(int rank) const override { return programs_.at(rank); }

 private:
  std::vector<Program> programs_;
};

inline Scenario sample_scenario() {
  Scenario s;
  s.name = "trace-test";
  s.model.name = "gpt-test";
  s.model.layers = 2;
  s.model.hidden = 12288;
  s.model.heads = 96;
  s.model.kv_heads = 96;
  s.model.seq_len = 2048;
  s.cluster.gpus = 2;
  return s;
}

// Two ranks running sample_program, one tensor-parallel group {0, 1} (and a second group on
// sub-axis 1, for labels of multi-dimensional tensor parallelism).
inline Schedule sample_schedule() {
  std::vector<ProcessGroup> groups(2);
  groups[0] = ProcessGroup{0, GroupKind::kTp, 0, {0, 1}};
  groups[1] = ProcessGroup{1, GroupKind::kTp, 1, {0, 1}};
  std::vector<Program> programs{sample_program(0), sample_program(1)};
  return Schedule(sample_scenario(), 2, std::move(groups), std::make_unique<FixedGenerator>(std::move(programs)));
}

// A fresh directory under the system's temp dir, removed with its content at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-traces-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // Names of the entries directly in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tandem::testing
