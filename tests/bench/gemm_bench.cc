// cpu::gemm against a direct cblas_sgemm call on GPT-like shapes (GPT-2 small: hidden 768, MLP
// 3072, 512 tokens per micro-batch), to show the wrapper costs nothing over OpenBLAS.
// Arguments: m, n, k, trans_a, trans_b. Reports flops/s (2mnk per call) and items/s (calls/s).

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace {

struct Operands {
  std::int64_t m, n, k, lda, ldb, ldc;
  bool trans_a, trans_b;
  std::vector<float> a, b, c;

  explicit Operands(const benchmark::State& state)
      : m(state.range(0)),
        n(state.range(1)),
        k(state.range(2)),
        lda(state.range(3) ? m : k),
        ldb(state.range(4) ? k : n),
        ldc(n),
        trans_a(state.range(3) != 0),
        trans_b(state.range(4) != 0),
        a(static_cast<std::size_t>(m * k)),
        b(static_cast<std::size_t>(k * n)),
        c(static_cast<std::size_t>(m * n)) {
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& x : a) x = dist(gen);
    for (float& x : b) x = dist(gen);
  }
};

void report(benchmark::State& state, const Operands& op) {
  state.SetItemsProcessed(state.iterations());
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(op.m * op.n * op.k),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TandemGemm(benchmark::State& state) {
  Operands op(state);
  for (auto _ : state) {
    tandem::kernels::cpu::gemm(op.trans_a, op.trans_b, op.m, op.n, op.k, 1.0f, op.a.data(), op.lda,
                               op.b.data(), op.ldb, 0.0f, op.c.data(), op.ldc);
    benchmark::DoNotOptimize(op.c.data());
    benchmark::ClobberMemory();
  }
  report(state, op);
}

void BM_CblasSgemm(benchmark::State& state) {
  Operands op(state);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, op.trans_a ? CblasTrans : CblasNoTrans,
                op.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(op.m),
                static_cast<blasint>(op.n), static_cast<blasint>(op.k), 1.0f, op.a.data(),
                static_cast<blasint>(op.lda), op.b.data(), static_cast<blasint>(op.ldb), 0.0f,
                op.c.data(), static_cast<blasint>(op.ldc));
    benchmark::DoNotOptimize(op.c.data());
    benchmark::ClobberMemory();
  }
  report(state, op);
}

// {m, n, k, trans_a, trans_b}
void gpt_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "ta", "tb"});
  b->Args({512, 768, 768, 0, 0});   // attention output projection
  b->Args({512, 3072, 768, 0, 0});  // MLP up-projection
  b->Args({512, 768, 3072, 0, 0});  // MLP down-projection
  b->Args({512, 2304, 768, 0, 1});  // fused QKV with weights stored [out, in]
  b->Args({768, 3072, 512, 1, 0});  // weight gradient X^T dY
  b->Unit(benchmark::kMillisecond);
  b->UseRealTime();  // OpenBLAS runs its own threads: the calling thread's CPU time undercounts
}

BENCHMARK(BM_TandemGemm)->Apply(gpt_shapes);
BENCHMARK(BM_CblasSgemm)->Apply(gpt_shapes);

}  // namespace

BENCHMARK_MAIN();
