// The tokens of one sample that a sequence-parallel rank holds (kData with dims[3] chunks > 1,
// shared/schedule.h): the whole sample is drawn (it is a function of the seed and the sample
// index alone, exec/synthetic_data.h) and the rank keeps its chunk, or its two zig-zag chunks
// c and chunks-1-c (flag kZigZag), in that order. Used by the host and the CUDA driver.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "exec/synthetic_data.h"
#include "shared/error.h"
#include "shared/schedule.h"

namespace tandem::exec {

// Writes the `held` tokens and targets of sample g (held = dims[2]) that c names.
inline void load_sample_chunks(const MarkovChain& data, const Compute& c, int64_t g, int32_t* tokens,
                               int32_t* targets) {
  const auto& d = c.dims;
  const int64_t held = d[2], chunks = d[3];
  if (chunks <= 1) {
    data.sample(g, held, tokens, targets);
    return;
  }
  const bool zigzag = (c.flags & kZigZag) != 0;
  const int64_t per = zigzag ? held / 2 : held;
  const int64_t seq = per * chunks;
  if (d[4] < 0 || d[4] >= chunks || (zigzag && held % 2 != 0))
    throw Error("exec: data task holds chunk " + std::to_string(d[4]) + " of " + std::to_string(chunks), ErrorKind::kInternal);
  std::vector<int32_t> tok(static_cast<size_t>(seq)), tgt(static_cast<size_t>(seq));
  data.sample(g, seq, tok.data(), tgt.data());
  std::vector<int64_t> parts = {d[4]};
  if (zigzag) parts.push_back(chunks - 1 - d[4]);
  int64_t at = 0;
  for (int64_t p : parts) {
    std::copy_n(tok.begin() + p * per, per, tokens + at);
    std::copy_n(tgt.begin() + p * per, per, targets + at);
    at += per;
  }
}

}  // namespace tandem::exec
