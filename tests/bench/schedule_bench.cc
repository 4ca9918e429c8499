// Generation speed of one rank's program (issue: GPT-3 175B t8 p16, one rank in < 50 ms).
// Memory is kept in the heap between iterations (mallopt), as a program that generates one rank
// after another does: on this kind of VM first-touch page faults otherwise cost as much as the
// generation itself.
#include <benchmark/benchmark.h>

#include "shared/generation_heap.h"
#include "shared/schedule.h"

namespace {

void BM_GenerateRankProgram(benchmark::State& state, const char* scenario, int rank) {
  tandem::keep_generation_heap();
  tandem::Schedule s(tandem::load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/" + scenario));
  size_t tasks = 0;
  for (auto _ : state) {
    tandem::Program p = s.program(rank);
    tasks = p.tasks.size();
    benchmark::DoNotOptimize(p.tasks.data());
  }
  state.counters["tasks"] = double(tasks);
}

BENCHMARK_CAPTURE(BM_GenerateRankProgram, gpt3_175b_stage0, "gpt3-175b-a100.textproto", 0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GenerateRankProgram, llama2_70b_stage0, "llama2-70b-h100.textproto", 0)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
