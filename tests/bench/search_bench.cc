// The rate of `tandem search`'s analytical estimate (issue #17's target: 20,000 configurations per
// second per core): the whole space of GPT-3 175B on 1024 A100s (scenarios/gpt3-175b-a100.textproto)
// enumerated, checked by the loader and estimated, then the planner's memory until one point fits;
// no simulation. Prints the points, the CPU and wall time of the estimate phase and its rate per
// CPU second. Run by hand (docs/search.md); nothing here is asserted.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "search/search_run.h"
#include "shared/error.h"

int main(int argc, char** argv) {
  using namespace tandem;
  const std::string path = argc > 1 ? argv[1] : std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt3-175b-a100.textproto";
  search::SearchOptions o;
  o.top = 1;
  o.simulate = false;
  try {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu = std::clock();
    const search::SearchResult r = search::run_search(path, {}, o);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("search bench: %s on %d GPUs: %llu points, %llu valid, %zu layer probes\n", r.scenario_name.c_str(),
                r.gpus, static_cast<unsigned long long>(r.points), static_cast<unsigned long long>(r.valid), r.probes);
    std::printf("  estimate phase: %.3f s CPU, %.3f s wall: %.0f configurations per CPU second\n", r.estimate_cpu_s,
                r.estimate_wall_s, double(r.points) / r.estimate_cpu_s);
    std::printf("  whole search (memory planned for %llu points): %.3f s CPU, %.3f s wall\n",
                static_cast<unsigned long long>(r.memory_planned), double(std::clock() - cpu) / CLOCKS_PER_SEC, wall);
  } catch (const Error& e) {
    std::fprintf(stderr, "search bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
