#include "exec/synthetic_data.h"

#include <cmath>
#include <stdexcept>

namespace tandem::exec {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {
// A uniform double in [0, 1) from 53 bits of a hash.
double uniform(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }
constexpr uint64_t kChainSalt = 0x6d61726b6f76ULL;   // "markov"
constexpr uint64_t kSampleSalt = 0x73616d706c65ULL;  // "sample"
}  // namespace

MarkovChain::MarkovChain(int64_t vocab, uint64_t seed) : vocab_(vocab), seed_(seed) {
  if (vocab < kSuccessors) throw std::invalid_argument("MarkovChain: vocabulary smaller than the successor count");
  next_.resize(size_t(vocab) * kSuccessors);
  for (int64_t s = 0; s < vocab; ++s) {
    uint64_t h = splitmix64(seed ^ kChainSalt ^ splitmix64(uint64_t(s)));
    for (int j = 0; j < kSuccessors; ++j) {
      int32_t cand;
      bool dup;
      do {  // distinct successors, so each transition has exactly its probability
        h = splitmix64(h);
        cand = int32_t(h % uint64_t(vocab));
        dup = false;
        for (int i = 0; i < j; ++i) dup = dup || next_[size_t(s) * kSuccessors + i] == cand;
      } while (dup);
      next_[size_t(s) * kSuccessors + j] = cand;
    }
  }
}

void MarkovChain::sample(int64_t g, int64_t seq, int32_t* tokens, int32_t* targets) const {
  const uint64_t base = splitmix64(seed_ ^ kSampleSalt ^ splitmix64(uint64_t(g)));
  int32_t state = int32_t(base % uint64_t(vocab_));
  for (int64_t t = 0; t <= seq; ++t) {
    if (t < seq) tokens[t] = state;
    if (t > 0) targets[t - 1] = state;
    const double u = uniform(splitmix64(base + uint64_t(t) + 1));
    double acc = 0;
    int j = 0;
    for (; j < kSuccessors - 1; ++j) {
      acc += kProbabilities[j];
      if (u < acc) break;
    }
    state = successors(state)[j];
  }
}

double MarkovChain::entropy_nats() {
  double h = 0;
  for (double p : kProbabilities) h -= p * std::log(p);
  return h;
}

}  // namespace tandem::exec
