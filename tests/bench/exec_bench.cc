// The real backend's runtime cost (docs/exec.md):
//  - BM_RuntimeOverheadPerTask: a program of empty tasks (a driver that does nothing) on two
//    streams, every other task depending on the other stream; time per task = the runtime's
//    own overhead (event loop, dependency checks, timing, buffer resolution). Target <= 5 us.
//  - BM_TinyGptStep: one training step of scenarios/tiny-gpt.textproto on one rank, host driver.
#include <benchmark/benchmark.h>

#include "exec/host_driver.h"
#include "exec/runtime.h"

using namespace tandem;
using namespace tandem::exec;

namespace {

class NullDriver : public Driver {
 public:
  const char* name() const override { return "host"; }
  std::string machine() const override { return "null"; }
  void* allocate(int64_t, Placement) override { return &byte_; }
  void release(void*, int64_t, Placement) override {}
  void write(void*, DType, Placement, const float*, int64_t) override {}
  void read(float*, const void*, DType, Placement, int64_t) override {}
  Pending compute(const TaskRef&, const Compute&, const std::vector<void*>&, const std::vector<void*>&,
                  const StepContext&) override {
    return kFinished;
  }
  Pending collective(const TaskRef&, const Collective&, void*, void*) override { return kFinished; }
  Pending p2p(const TaskRef&, const SendRecv&, void*) override { return kFinished; }
  Pending copy(const TaskRef&, const Copy&, void*, void*) override { return kFinished; }
  bool test(Pending) override { return true; }

 private:
  char byte_ = 0;
};

class EmptyTasks : public ProgramGenerator {
 public:
  explicit EmptyTasks(int n) : n_(n) {}
  Program generate(int rank) const override {
    Program p;
    p.rank = rank;
    Buffer a;
    a.id = 0, a.name = "a", a.bytes = 4;
    Buffer b = a;
    b.id = 1, b.name = "b";
    p.buffers = {a, b};
    p.tasks.push_back({0, Stream::kCompute, {}, Alloc{0}});
    p.tasks.push_back({1, Stream::kCompute, {}, Alloc{1}});
    for (int i = 0; i < n_; ++i) {
      Compute c;
      c.kernel = Kernel::kAdd;
      c.dims = {0};
      c.inputs = {0, 1};
      c.outputs = {1};
      Task t;
      t.id = TaskId(p.tasks.size());
      t.stream = i % 2 ? Stream::kComm : Stream::kCompute;
      if (i > 0) t.deps = {t.id - 1};
      t.op = c;
      p.tasks.push_back(t);
    }
    return p;
  }

 private:
  int n_;
};

Scenario tiny() { return load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto"); }

void BM_RuntimeOverheadPerTask(benchmark::State& state) {
  const int n = int(state.range(0));
  Schedule s(tiny(), 1, {}, std::make_unique<EmptyTasks>(n));
  NullDriver d;
  Runtime rt(s, 0, d, ExecOptions());
  int step = 0;
  for (auto _ : state) benchmark::DoNotOptimize(rt.run_step(step++));
  state.SetItemsProcessed(state.iterations() * (n + 2));
  state.counters["us_per_task"] =
      benchmark::Counter(double(state.iterations()) * (n + 2) * 1e-6, benchmark::Counter::kIsRate |
                                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_RuntimeOverheadPerTask)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_TinyGptStep(benchmark::State& state) {
  Schedule s(tiny());
  auto d = make_host_driver(nullptr);
  Runtime rt(s, 0, *d, ExecOptions());
  int step = 0;
  for (auto _ : state) benchmark::DoNotOptimize(rt.run_step(step++));
  state.counters["tasks"] = double(rt.program().tasks.size());
}
BENCHMARK(BM_TinyGptStep)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
