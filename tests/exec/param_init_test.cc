// Initial values (exec/param_init.h): every strategy's shards hold the same global values.
#include "exec/param_init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "shared/schedule.h"

namespace tandem::exec {
namespace {

Schedule tiny(std::vector<std::string> sets) {
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

TEST(ParamInit, NormWeightsAreOneAndBiasesZero) {
  EXPECT_EQ(init_value(1, "layer0.ln1.weight", 64, 0, 5), 1.0f);
  EXPECT_EQ(init_value(1, "final_norm.weight", 64, 0, 0), 1.0f);
  EXPECT_EQ(init_value(1, "layer2.ln2.bias", 64, 0, 3), 0.0f);
}

TEST(ParamInit, WeightsHaveTheInitialiserSpread) {
  // 64x64 samples of N(0, 0.02): the sample standard deviation is within a few percent of 0.02
  // (its relative standard error is 1/sqrt(2*4096) ~ 1.1 %; 5 % is > 4 sigma).
  double s = 0, s2 = 0;
  const int n = 64;
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      const double x = init_value(1234, "layer0.attn.q.weight", n, r, c);
      s += x, s2 += x * x;
    }
  const double mean = s / (n * n), sd = std::sqrt(s2 / (n * n) - mean * mean);
  EXPECT_NEAR(sd, kInitStddev, 0.05 * kInitStddev);
  EXPECT_NEAR(mean, 0, 4 * kInitStddev / n);  // 4 standard errors of the mean
}

// The full tensors of the single-rank program, by name.
std::map<std::string, std::pair<GlobalSlice, std::vector<float>>> full_tensors() {
  Schedule s = tiny({});
  Program p = s.program(0);
  ParamInit init(p, s.scenario().seed);
  std::map<std::string, std::pair<GlobalSlice, std::vector<float>>> out;
  for (const Buffer& b : p.buffers)
    if (b.has_slice) out[b.name] = {b.slice, init.values_of(b.id)};
  return out;
}

TEST(ParamInit, TensorParallelShardsHoldSlicesOfTheFullTensors) {
  const auto full = full_tensors();
  Schedule s = tiny({"cluster.gpus=2", "strategy.tp=2"});
  int checked = 0;
  for (int rank = 0; rank < 2; ++rank) {
    Program p = s.program(rank);
    ParamInit init(p, s.scenario().seed);
    for (const Buffer& b : p.buffers) {
      if (!b.has_slice) continue;
      const auto& [fs, fv] = full.at(b.name);
      ASSERT_EQ(fs.rows, b.slice.global_rows) << b.name;
      ASSERT_EQ(fs.cols, b.slice.global_cols) << b.name;
      const std::vector<float> v = init.values_of(b.id);
      for (int64_t i = 0; i < b.slice.rows; ++i)
        for (int64_t j = 0; j < b.slice.cols; ++j)
          ASSERT_EQ(v[i * b.slice.cols + j], fv[(b.slice.row0 + i) * fs.cols + b.slice.col0 + j]) << b.name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(ParamInit, TwoDGridBlocksTileEveryTensor) {
  // 2D tensor parallelism, q = 2 (shared/tp2d_groups.h): rank (i, j) holds block (out j, in i) of
  // every weight and (vocabulary i, features j) of the table, each with the full tensor's values;
  // the 4 blocks cover each element once. The norms' feature block j is held by both ranks of
  // column j: each element twice.
  const auto full = full_tensors();
  Schedule s = tiny({"cluster.gpus=4", "strategy.tp=4", "strategy.tp_mode=2d"});
  std::map<std::string, std::vector<int>> cover;
  for (int rank = 0; rank < 4; ++rank) {
    Program p = s.program(rank);
    ParamInit init(p, s.scenario().seed);
    for (const Buffer& b : p.buffers) {
      if (!b.has_slice) continue;
      const auto& [fs, fv] = full.at(b.name);
      ASSERT_EQ(fs.rows, b.slice.global_rows) << b.name;
      ASSERT_EQ(fs.cols, b.slice.global_cols) << b.name;
      std::vector<int>& c = cover[b.name];
      c.resize(size_t(fs.rows * fs.cols));
      const std::vector<float> v = init.values_of(b.id);
      for (int64_t i = 0; i < b.slice.rows; ++i)
        for (int64_t j = 0; j < b.slice.cols; ++j) {
          const int64_t g = (b.slice.row0 + i) * fs.cols + b.slice.col0 + j;
          ASSERT_EQ(v[i * b.slice.cols + j], fv[g]) << b.name;
          ++c[g];
        }
    }
  }
  ASSERT_EQ(cover.size(), full.size());
  for (const auto& [name, c] : cover) {
    const bool norm = name.find("ln") != std::string::npos || name.find("norm") != std::string::npos;
    for (int n : c) ASSERT_EQ(n, norm ? 2 : 1) << name;
  }
}

TEST(ParamInit, ZeroThreeShardsHoldTheirRangeOfTheBucket) {
  Schedule s = tiny({"cluster.gpus=2", "strategy.zero_stage=3"});
  for (int rank = 0; rank < 2; ++rank) {
    Program p = s.program(rank);
    ParamInit init(p, s.scenario().seed);
    int shards = 0;
    for (const Buffer& b : p.buffers) {
      if (b.shard_of == kNoId) continue;
      const std::vector<float> whole = init.values_of(b.shard_of);
      const std::vector<float> shard = init.values_of(b.id);
      ASSERT_EQ(int64_t(shard.size()) * 4, b.bytes);
      for (size_t i = 0; i < shard.size(); ++i) {
        const size_t k = size_t(b.shard_offset_bytes / 4) + i;
        ASSERT_EQ(shard[i], k < whole.size() ? whole[k] : 0.0f) << b.name;
      }
      EXPECT_TRUE(init.holds_params(b.id));
      ++shards;
    }
    EXPECT_GT(shards, 0);
  }
}

}  // namespace
}  // namespace tandem::exec
