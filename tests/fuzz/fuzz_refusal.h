// What a fuzz target does with a tandem::Error: bad input (or out of memory, a refused size) is
// the expected answer to hostile input, so the execution passes; an internal error means that an
// invariant of tandem broke on input it had accepted, a bug, so the execution aborts and libFuzzer
// records the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "shared/error.h"

namespace tandem::fuzz {

inline void expect_refusal(const Error& e) {
  if (e.kind() != ErrorKind::kInternal) return;
  std::fprintf(stderr, "internal error on fuzz input: %s\n", e.what());
  std::abort();
}

}  // namespace tandem::fuzz
