// Wall time and peak memory of simulating one full training iteration with every rank simulated
// (tensor-parallel groups folded into one replayed state where exact, docs/sim.md; every flow kept).
//   BM_Gpt3_175B_1024:  GPT-3 175B, t8 p16 d8, global batch 1536, 1024 A100 GPUs (issue target:
//                       <= 10 s wall on one core, <= 4 GiB peak memory)
//   BM_Gpt3_Scaling/N:  the same model and layout (t8, p16; p8 at 64 GPUs) with 192 micro-batches
//                       per pipeline, on N = 64 .. 16384 GPUs (weak scaling of the simulator;
//                       with the default preset one state per stage up to 16384; at 512 the lane
//                       quotient parts and the grid fold without it reruns: docs/sim.md
//                       "Speed at 64-16k GPUs")
//   BM_Gpt3_EveryStageBucketed/N: the same with every stage's buckets reduced in the backward;
//                       at 16384 the tree parts the replicas and the run ends tp-folded
//                       (ranks_per_state 8, docs/sim.md "Why lanes part")
//   BM_Gpt3_Approximate/N: the same with --approximate (SimOptions::approximate, docs/sim.md
//                       "Approximate tier") on N = 16384 .. 131072 GPUs: the grid-folded run is
//                       kept where the tree parts the lanes; "approximate" 1 and "parted_window_s"
//                       (the error's bound) say so
//   BM_Mlperf_10752:    GPT-3 175B t4 p8 d336 on 10,752 H100s (scenarios/gpt3-175b-mlperf-h100)
//   BM_TinyGpt_DataParallel/N: tiny-gpt, pure data parallelism over N = 128 .. 1024 GPUs (one
//                       replayed state; the gradient all-reduces' ~16 N flows all in SimGrid)
// Each simulation runs in a forked child (sim/simulation.h); "peak_rss_gib" is the largest
// resident set of any child so far (getrusage RUSAGE_CHILDREN), so run one benchmark at a time
// (--benchmark_filter) for a per-case figure.
#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "shared/schedule.h"
#include "sim/simulation.h"

namespace {

using tandem::Schedule;

double peak_child_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return double(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

void simulate_case(benchmark::State& state, const std::vector<std::string>& sets,
                   const std::string& scenario = "gpt3-175b-a100.textproto", bool approximate = false) {
  const std::string path = std::string(TANDEM_SOURCE_DIR) + "/scenarios/" + scenario;
  double t = 0;
  for (auto _ : state) {
    Schedule s(tandem::load_scenario(path, sets));
    tandem::sim::SimOptions o;
    o.approximate = approximate;
    const tandem::sim::SimResult r = tandem::sim::simulate(s, o);
    t = r.iteration_time_s;
    state.counters["events"] = double(r.events);
    state.counters["flows"] = double(r.flows);
    state.counters["simgrid_flows"] = double(r.simgrid_flows);
    state.counters["ranks_per_state"] = double(r.fold);
    if (approximate) {
      state.counters["approximate"] = r.approximate ? 1 : 0;
      state.counters["parted_window_s"] = r.parted_window_s;
    }
  }
  state.counters["simulated_iteration_s"] = t;
  state.counters["peak_rss_gib"] = peak_child_rss_gib();
}

void BM_Gpt3_175B_1024(benchmark::State& state) { simulate_case(state, {}); }
BENCHMARK(BM_Gpt3_175B_1024)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_Gpt3_Scaling(benchmark::State& state) {
  const int gpus = int(state.range(0));
  const int pp = gpus >= 128 ? 16 : 8;
  const int dp = gpus / (8 * pp);
  simulate_case(state, {"cluster.gpus=" + std::to_string(gpus), "strategy.pp=" + std::to_string(pp),
                        "strategy.global_batch=" + std::to_string(192 * dp)});
}
BENCHMARK(BM_Gpt3_Scaling)
    ->RangeMultiplier(2)
    ->Range(64, 16384)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

// The same with every stage's gradients bucketed and reduced during the backward
// (software.bucket_every_stage true, as the megatron-lm-2022 preset; the default megatron-core-0.8
// buckets the first stage only, and its later stages reduce after their last backward, where no
// pipeline message is in flight): from dp 80 the tuner's tree all-reduce meets pipeline messages,
// the replicas part, and the exact run ends tp-folded (docs/sim.md "Speed at 16k GPUs, session 11").
void BM_Gpt3_EveryStageBucketed(benchmark::State& state) {
  const int gpus = int(state.range(0));
  simulate_case(state, {"cluster.gpus=" + std::to_string(gpus), "strategy.global_batch=" + std::to_string(192 * gpus / 128),
                        "software.bucket_every_stage=true"});
}
BENCHMARK(BM_Gpt3_EveryStageBucketed)
    ->Arg(8192)
    ->Arg(16384)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_Gpt3_Approximate(benchmark::State& state) {
  const int gpus = int(state.range(0));
  simulate_case(state, {"cluster.gpus=" + std::to_string(gpus), "strategy.global_batch=" + std::to_string(192 * gpus / 128)},
                "gpt3-175b-a100.textproto", true);
}
BENCHMARK(BM_Gpt3_Approximate)
    ->Arg(16384)
    ->Arg(98304)
    ->Arg(131072)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_Mlperf_10752(benchmark::State& state) { simulate_case(state, {}, "gpt3-175b-mlperf-h100.textproto"); }
BENCHMARK(BM_Mlperf_10752)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_TinyGpt_DataParallel(benchmark::State& state) {
  const int gpus = int(state.range(0));
  simulate_case(state, {"cluster.gpus=" + std::to_string(gpus), "strategy.global_batch=" + std::to_string(2 * gpus)},
                "tiny-gpt.textproto");
}
BENCHMARK(BM_TinyGpt_DataParallel)
    ->RangeMultiplier(2)
    ->Range(128, 1024)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
