// The synthetic, learnable dataset of the real backend: token sequences drawn from a fixed random
// Markov chain over the vocabulary, seeded by the scenario's seed. Each state has kSuccessors
// distinct successors with the fixed probabilities kProbabilities, so the best possible model
// predicts the next token with cross-entropy equal to the chain's entropy rate,
// H = -sum p ln p (identical for every state): the loss floor, ~1.2799 nats.
//
// Sample g (the g-th sample of the whole run: step * global_batch + index in the step) is a
// function of (seed, g) alone, so every strategy sees the same data whatever rank loads it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::exec {

class MarkovChain {
 public:
  static constexpr int kSuccessors = 4;
  static constexpr std::array<double, kSuccessors> kProbabilities = {0.4, 0.3, 0.2, 0.1};

  // vocab >= kSuccessors.
  MarkovChain(int64_t vocab, uint64_t seed);

  // seq + 1 tokens of sample g: tokens = the first seq, targets = the last seq.
  void sample(int64_t g, int64_t seq, int32_t* tokens, int32_t* targets) const;
  // The successors of a state (distinct), in the order of kProbabilities.
  const int32_t* successors(int32_t state) const { return &next_[std::size_t(state) * kSuccessors]; }
  // Entropy rate in nats: the expected loss of the perfect predictor.
  static double entropy_nats();
  int64_t vocab() const { return vocab_; }

 private:
  int64_t vocab_;
  uint64_t seed_;
  std::vector<int32_t> next_;
};

// splitmix64 (Steele, Lea & Flood 2014; the seeding generator of xoshiro): a counter-based hash.
uint64_t splitmix64(uint64_t x);

}  // namespace tandem::exec
