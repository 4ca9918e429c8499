// The Ulysses layout changes (kernels/cpu/all_to_all_layout.h) with an all-to-all written out by
// hand between them: from the sequence split (rank i holds tokens [i*T, (i+1)*T) of every column),
// pack + all-to-all + unpack must give rank j the whole sequence of part j of each of the Q, K, V
// column segments (DeepSpeed-Ulysses, arXiv 2309.14509, section 3.1); the reverse exchange must
// give the sequence split back.
#include "kernels/cpu/all_to_all_layout.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace tandem::kernels {
namespace {

using Ranks = std::vector<std::vector<float>>;

// Block j of every rank's send buffer goes to rank j's slot i.
Ranks all_to_all(const Ranks& send, int64_t P) {
  Ranks recv(send.size(), std::vector<float>(send[0].size()));
  const size_t block = send[0].size() / size_t(P);
  for (int64_t i = 0; i < P; ++i)
    for (int64_t j = 0; j < P; ++j)
      std::copy_n(send[i].begin() + j * block, block, recv[j].begin() + i * block);
  return recv;
}

TEST(AllToAllLayout, SequenceSplitToHeadSplitAndBack) {
  const int64_t B = 2, T = 3, P = 2, q = 4, kv = 2, C = q + 2 * kv, S = P * T, c = C / P;
  // X[b, s, col] = 1000 b + 10 s + col: every element names its place.
  auto X = [&](int64_t b, int64_t s, int64_t col) { return float(1000 * b + 10 * s + col); };
  Ranks seq(P);
  for (int64_t i = 0; i < P; ++i)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t col = 0; col < C; ++col) seq[i].push_back(X(b, i * T + t, col));
  const cpu::AllToAllShape shape{B, T, P, q, kv, 4};
  auto run = [&](const Ranks& in, bool pack, bool to_heads) {
    Ranks out(in.size(), std::vector<float>(in[0].size()));
    for (size_t r = 0; r < in.size(); ++r) cpu::run_copies(cpu::all_to_all_plan(shape, pack, to_heads), in[r].data(), out[r].data());
    return out;
  };
  const Ranks heads = run(all_to_all(run(seq, true, true), P), false, true);
  for (int64_t j = 0; j < P; ++j) {
    std::vector<float> want;  // [B, S, c]: Q part j, K part j, V part j
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        for (int64_t e = 0; e < q / P; ++e) want.push_back(X(b, s, j * (q / P) + e));
        for (int64_t e = 0; e < kv / P; ++e) want.push_back(X(b, s, q + j * (kv / P) + e));
        for (int64_t e = 0; e < kv / P; ++e) want.push_back(X(b, s, q + kv + j * (kv / P) + e));
      }
    ASSERT_EQ(int64_t(want.size()), B * S * c);
    EXPECT_EQ(heads[j], want) << "rank " << j;
  }
  EXPECT_EQ(run(all_to_all(run(heads, true, false), P), false, false), seq);
}

TEST(AllToAllLayout, RefusesSegmentsThatDoNotDivide) {
  EXPECT_THROW(cpu::all_to_all_plan({1, 2, 2, 3, 0, 4}, true, true), std::invalid_argument);
  EXPECT_THROW(cpu::all_to_all_plan({1, 2, 2, 4, 1, 4}, true, true), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels
