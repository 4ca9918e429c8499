// The synthetic dataset (exec/synthetic_data.h).
#include "exec/synthetic_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tandem::exec {
namespace {

TEST(MarkovChain, EntropyIsThatOfTheTransitionProbabilities) {
  // -(0.4 ln 0.4 + 0.3 ln 0.3 + 0.2 ln 0.2 + 0.1 ln 0.1), written out by hand.
  const double h = -(0.4 * std::log(0.4) + 0.3 * std::log(0.3) + 0.2 * std::log(0.2) + 0.1 * std::log(0.1));
  EXPECT_NEAR(MarkovChain::entropy_nats(), h, 1e-15);
  EXPECT_NEAR(h, 1.2798542258336676, 1e-12);  // the same sum evaluated by hand to 17 digits
}

TEST(MarkovChain, SuccessorsAreDistinctStates) {
  MarkovChain chain(256, 1234);
  for (int s = 0; s < 256; ++s) {
    const int32_t* n = chain.successors(s);
    for (int i = 0; i < MarkovChain::kSuccessors; ++i) {
      EXPECT_GE(n[i], 0);
      EXPECT_LT(n[i], 256);
      for (int j = 0; j < i; ++j) EXPECT_NE(n[i], n[j]);
    }
  }
}

TEST(MarkovChain, TargetsAreTheNextTokensAndFollowTheChain) {
  MarkovChain chain(256, 7);
  const int seq = 32;
  std::vector<int32_t> tokens(seq), targets(seq);
  for (int g = 0; g < 20; ++g) {
    chain.sample(g, seq, tokens.data(), targets.data());
    for (int t = 0; t + 1 < seq; ++t) EXPECT_EQ(targets[t], tokens[t + 1]);
    for (int t = 0; t < seq; ++t) {
      const int32_t* n = chain.successors(tokens[t]);
      bool ok = false;
      for (int i = 0; i < MarkovChain::kSuccessors; ++i) ok = ok || n[i] == targets[t];
      EXPECT_TRUE(ok) << "sample " << g << " position " << t;
    }
  }
}

TEST(MarkovChain, SampleDependsOnSeedAndIndexOnly) {
  MarkovChain a(256, 99), b(256, 99), c(256, 100);
  std::vector<int32_t> ta(16), ya(16), tb(16), yb(16), tc(16), yc(16);
  a.sample(5, 16, ta.data(), ya.data());
  b.sample(5, 16, tb.data(), yb.data());
  c.sample(5, 16, tc.data(), yc.data());
  EXPECT_EQ(ta, tb);
  EXPECT_EQ(ya, yb);
  EXPECT_NE(ta, tc);
}

}  // namespace
}  // namespace tandem::exec
