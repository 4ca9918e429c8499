// The host Adam kernel (kernels/cpu/adamw.h, issue #16: "a vectorised, multi-threaded CPU
// kernel"): the scalar loop it replaced (sqrt with errno, so GCC does not vectorise it), the
// vectorised loop on one thread, and on 2 and 4 threads. 4 Mi elements: 64 MiB of param, grad,
// m and v, beyond any last-level cache of the machines here, so the step is memory bound as the
// simulator's host Adam model says (docs/offload.md, "Host Adam"). Bytes counted: 28 an element
// (grad read; param, m, v read and written). Run: chrt -f 1 build/bin/tandem-bench-adam.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/adamw.h"
#include "tests/kernels/scalar_adamw.h"

namespace {

constexpr std::int64_t kN = std::int64_t(4) << 20;
constexpr float kLr = 1e-3f, kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kDecay = 0.1f;

struct State {
  std::vector<float> p, g, m, v;
  State() : p(kN, 0.5f), g(kN, 1e-3f), m(kN, 0.0f), v(kN, 0.0f) {
    for (std::int64_t i = 0; i < kN; ++i) g[size_t(i)] = float((i * 2654435761u) % 1000) * 1e-6f - 5e-4f;
  }
};

void BM_AdamScalarLoop(benchmark::State& st) {
  State s;
  std::int64_t step = 0;
  for (auto _ : st)
    tandem::kernels::test::scalar_adamw(s.p.data(), s.g.data(), s.m.data(), s.v.data(), kN, kLr, kBeta1, kBeta2, kEps,
                                        kDecay, ++step);
  st.SetBytesProcessed(st.iterations() * kN * 28);
}
BENCHMARK(BM_AdamScalarLoop)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AdamKernel(benchmark::State& st) {
  State s;
  std::int64_t step = 0;
  const int threads = int(st.range(0));
  for (auto _ : st)
    tandem::kernels::cpu::adamw_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), kN, kLr, kBeta1, kBeta2, kEps,
                                     kDecay, ++step, threads);
  st.SetBytesProcessed(st.iterations() * kN * 28);
}
BENCHMARK(BM_AdamKernel)->ArgName("threads")->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
